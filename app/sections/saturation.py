"""Section 2, Saturation: how peaked the softmax of each query row gets.

The largest weight, the entropy H / ln n and the share of saturated rows
(max weight > 0.99) against d_k, each at the median row with its 10th-90th
percentile band, and the current draw's weights as a heatmap.
"""

from typing import ClassVar

import numpy as np
from bokeh.models import (
    ColorBar,
    CustomJSTickFormatter,
    FixedTicker,
    HoverTool,
    LogColorMapper,
    Range1d,
)
from bokeh.palettes import Cividis256

from app import theory
from app.asset import asset
from app.sections.figures import CURVE_FIGURES, SectionFigures, theory_d_k
from app.simulation import SCALING_RULES
from app.style import RULE_COLORS

HEATMAP_DECADES_BELOW_UNIFORM = 1  # the heatmap's colours span 0.1/n .. 1
HEATMAP_TICKS_JS = asset("heatmap_ticks.js")  # the uniform weight 1/n labelled so


class Saturation(SectionFigures):
    """``max_weight``, ``entropy``, ``saturated`` and ``heatmap``."""

    READS = frozenset({"curves", "draw"})
    TITLES: ClassVar[dict] = {
        "max_weight": CURVE_FIGURES["max_weight"][1],
        "entropy": CURVE_FIGURES["entropy"][1],
        "saturated": "Saturated rows (max weight > 0.99)",
        "heatmap": "Attention weights of the current draw",
    }

    def __init__(self, models):
        super().__init__(models)
        self._finish_curve_figure(self._curve_figure("max_weight"), "max_weight")
        entropy = self._curve_figure("entropy")
        self._theory_lines(entropy, "entropy")
        self._finish_curve_figure(entropy, "entropy")
        self._saturated()
        self._heatmap()

    def _saturated(self):
        fig = self._figure(
            "saturated",
            "d_k (key dimension)",
            "share of query rows",
            x_axis_type="log",
            y_range=Range1d(0, 1.02),
        )
        self._rule_curves(fig, "saturated", band=False)
        self._theory_lines(fig, "saturated")
        self._model_heads(fig)
        self._marker(fig, "saturated")

    def _heatmap(self):
        fig = self._figure(
            "heatmap",
            "key",
            "query",
            x_range=Range1d(0, 64),
            y_range=Range1d(64, 0),
        )
        # Log colours from a tenth of the uniform weight 1/n to 1: uniform rows read
        # as an even mid-tone, one-hot rows as a single bright cell on black.
        self._heatmap_colors = LogColorMapper(palette=Cividis256, low=_heatmap_floor(64), high=1.0)
        self._heatmap_colors.low_color = Cividis256[0]
        src = self._source("heatmap:weights", image=[], dw=[], dh=[])
        fig.image(
            image="image",
            x=0,
            y=0,
            dw="dw",
            dh="dh",
            source=src,
            color_mapper=self._heatmap_colors,
            origin="top_left",
        )
        self._heatmap_ticks = FixedTicker(ticks=_heatmap_ticks(64))
        self._heatmap_labels = CustomJSTickFormatter(args={"n": 64}, code=HEATMAP_TICKS_JS)
        fig.add_layout(
            ColorBar(
                color_mapper=self._heatmap_colors,
                ticker=self._heatmap_ticks,
                formatter=self._heatmap_labels,
                title="weight (log)",
                width=10,
            ),
            "right",
        )
        fig.add_tools(HoverTool(tooltips=[("weight", "@image{0.0000}")], visible=False))

    def show_curves(self, results):
        """Every rule's median largest weight, entropy and saturated share against d_k,
        with the entropy's small-spread theory and the Gaussian model's share."""
        s, curves = results.settings, results.curves
        self._show_curve_medians("max_weight", curves)
        self._show_curve_medians("entropy", curves)
        d_k = theory_d_k(curves)
        for rule in SCALING_RULES:
            spread = theory.logit_std(rule, d_k, s.variance, s.temperature, s.alpha)
            small = spread <= 1.0  # the small-spread entropy holds for spreads below about 1
            self.sources[f"entropy:theory:{rule}"].data = {
                "d_k": d_k[small],
                "y": theory.small_spread_entropy(spread[small], s.n_keys) / np.log(s.n_keys),
            }
            self.sources[f"saturated:{rule}"].data = {
                "d_k": curves[rule]["d_k"],
                "y": curves[rule]["saturated_share"],
            }
            share = theory.saturated_share(rule, d_k, s.variance, s.temperature, s.n_keys, s.alpha)
            drawn = np.isfinite(share)  # not drawn where the Gaussian model does not hold
            self.sources[f"saturated:theory:{rule}"].data = {"d_k": d_k[drawn], "y": share[drawn]}

    def show_draw(self, results):
        """The current draw: its weights as a heatmap and the stars at its medians."""
        self._show_marker("max_weight", results)
        self._show_marker("entropy", results)
        s, draw = results.settings, results.draw
        self.sources["saturated:marker"].data = {
            "d_k": [s.d_k],
            "y": [results.share],
            "color": [RULE_COLORS[s.scaling]],
        }
        n_q, n_k = draw.weights.shape
        self.sources["heatmap:weights"].data = {"image": [draw.weights], "dw": [n_k], "dh": [n_q]}
        heatmap = self.figures["heatmap"]
        heatmap.x_range.end, heatmap.y_range.start = n_k, n_q
        if self._heatmap_labels.args["n"] != n_k:
            self._heatmap_colors.low = _heatmap_floor(n_k)
            self._heatmap_ticks.ticks = _heatmap_ticks(n_k)
            self._heatmap_labels.args = {"n": n_k}


def _heatmap_floor(n_keys: int) -> float:
    """The heatmap's lowest colour: HEATMAP_DECADES_BELOW_UNIFORM below the uniform 1/n."""
    return 10.0**-HEATMAP_DECADES_BELOW_UNIFORM / n_keys


def _heatmap_ticks(n_keys: int) -> list[float]:
    """Colour-bar ticks: the floor, the uniform weight 1/n, and the powers of ten above."""
    uniform = 1.0 / n_keys
    decades = [10.0**-i for i in range(4) if 10.0**-i > 2 * uniform]
    return sorted([_heatmap_floor(n_keys), uniform, *decades])
