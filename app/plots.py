"""Bokeh figures of the simulation, fed by ColumnDataSources updated in place.

``Plots`` builds every figure once; ``show_curves`` (the sweep against d_k)
and ``show_snapshot`` (the current draw) only assign new ``.data`` to named
sources, so a slider move ships a few arrays, never a rebuilt figure. The
source names (``Plots.SOURCES``) are stable: the browser tests read them.
"""

import numpy as np
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    HoverTool,
    LinearColorMapper,
    Range1d,
)
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from app import theory
from app.simulation import SCALING_RULES, Snapshot

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
RULE_COLORS = {"none": "#D55E00", "sqrt": "#0072B2", "linear": "#009E73", "qk_norm": "#CC79A7"}
RULE_LABELS = {
    "none": "none (c = 1)",
    "sqrt": "sqrt (c = 1/√d_k)",
    "linear": "linear (c = 1/d_k)",
    "qk_norm": "QK-norm (c = 1/√d_k)",
}
RULE_MARKERS = {"none": "square", "sqrt": "circle", "linear": "triangle", "qk_norm": "diamond"}
RAW_COLOR = "#999999"
LOG_FLOOR = 1e-300  # log axes draw smaller (underflowed) norms at this floor
HEIGHT = 300
BOTTOM_LEGENDS = ("entropy", "jacobian", "query_grad")

# Figures against d_k and the metric each plots: (metric, title, y label, log y).
CURVE_FIGURES = {
    "spread": ("logit_std", "Logit spread against d_k", "std of the logits", True),
    "max_weight": ("max_weight", "Largest attention weight", "max weight", False),
    "entropy": ("normalized_entropy", "Entropy of the weights", "H / ln n", False),
    "jacobian": ("jacobian_norm", "Softmax Jacobian", "‖J‖_F", True),
    "query_grad": ("query_grad_norm", "Gradient reaching the query", "‖dp/dq‖_F", True),
}


class Plots:
    """Every figure of the page and the sources that feed them.

    Attributes
    ----------
    figures : dict of str to bokeh Figure
        ``histogram``, ``spread``, ``max_weight``, ``entropy``, ``saturated``,
        ``heatmap``, ``jacobian``, ``query_grad``.
    sources : dict of str to ColumnDataSource
        Named ``"<figure>:<rule>"`` for the curves against d_k (columns
        ``d_k``, ``y``, ``lo``, ``hi``), ``"<figure>:marker"`` for the current
        setting, ``"<figure>:theory:<rule>"`` for theory lines, and
        ``histogram:raw``, ``histogram:scaled``, ``heatmap:weights``.
    """

    def __init__(self):
        self.figures, self.sources = {}, {}
        self._histogram()
        for key, (_, title, y_label, log_y) in CURVE_FIGURES.items():
            self._curve_figure(key, title, y_label, log_y)
        self._saturated()
        self._heatmap()

    # --- building ------------------------------------------------------------------------

    def _source(self, name, **columns):
        self.sources[name] = ColumnDataSource(data=columns, name=name)
        return self.sources[name]

    def _figure(self, key, title, x_label, y_label, **kwargs):
        fig = figure(
            title=title,
            height=HEIGHT,
            sizing_mode="stretch_width",
            min_width=280,
            x_axis_label=x_label,
            y_axis_label=y_label,
            tools="pan,wheel_zoom,box_zoom,reset,save",
            toolbar_location="above",
            name=key,
            **kwargs,
        )
        fig.toolbar.logo = None
        self.figures[key] = fig
        return fig

    def _rule_curves(self, fig, key, band):
        """Median line and markers per rule (and its interquartile band)."""
        for rule in SCALING_RULES:
            color, label = RULE_COLORS[rule], RULE_LABELS[rule]
            columns = {"d_k": [], "y": [], "lo": [], "hi": []} if band else {"d_k": [], "y": []}
            src = self._source(f"{key}:{rule}", **columns)
            if band:
                fig.varea(
                    "d_k",
                    "lo",
                    "hi",
                    source=src,
                    fill_color=color,
                    fill_alpha=0.18,
                    legend_label=label,
                )
            fig.line("d_k", "y", source=src, line_color=color, line_width=2, legend_label=label)
            fig.scatter(
                "d_k",
                "y",
                source=src,
                marker=RULE_MARKERS[rule],
                size=6,
                color=color,
                legend_label=label,
            )
        fig.legend.location = "bottom_left" if key in BOTTOM_LEGENDS else "top_left"
        fig.legend.click_policy = "hide"
        fig.legend.label_text_font_size = "8pt"
        fig.legend.spacing = 0
        fig.legend.padding = 4
        fig.legend.background_fill_alpha = 0.7

    def _marker(self, fig, key):
        """A star at the current setting, in the current rule's colour."""
        src = self._source(f"{key}:marker", d_k=[], y=[], color=[])
        fig.scatter(
            "d_k", "y", source=src, size=16, marker="star", fill_color="color", line_color="black"
        )

    def _histogram(self):
        fig = self._figure("histogram", "Scores at the current setting", "logit", "density")
        for kind, color, label in (
            ("raw", RAW_COLOR, "unscaled q·k / T"),
            ("scaled", RULE_COLORS["sqrt"], "scaled logits"),
        ):
            bars = self._source(f"histogram:{kind}", left=[], right=[], top=[])
            renderer = fig.quad(
                left="left",
                right="right",
                bottom=0,
                top="top",
                source=bars,
                fill_color=color,
                fill_alpha=0.45,
                line_color=color,
                legend_label=label,
                name=f"histogram:{kind}:bars",
            )
            if kind == "scaled":  # recoloured with the current rule
                self._scaled_bars = renderer
            curve = self._source(f"histogram:theory:{kind}", x=[], y=[])
            fig.line(
                "x",
                "y",
                source=curve,
                line_color=color,
                line_width=2,
                line_dash="dashed",
                name=f"histogram:{kind}:theory",
            )
        fig.legend.location = "top_right"
        fig.legend.label_text_font_size = "8pt"

    def _curve_figure(self, key, title, y_label, log_y):
        fig = self._figure(
            key,
            title,
            "d_k (key dimension)",
            y_label,
            x_axis_type="log",
            y_axis_type="log" if log_y else "linear",
        )
        if not log_y:
            fig.y_range = Range1d(0, 1.02)
        self._rule_curves(fig, key, band=True)
        if key in ("spread", "entropy"):  # theory lines: F1, F4
            for rule in SCALING_RULES:
                src = self._source(f"{key}:theory:{rule}", d_k=[], y=[])
                fig.line(
                    "d_k",
                    "y",
                    source=src,
                    line_color=RULE_COLORS[rule],
                    line_width=1.5,
                    line_dash="dashed",
                )
        threshold = {"spread": "spread:collapse", "jacobian": "jacobian:uniform"}.get(key)
        if threshold:  # F5 collapse threshold; F7 uniform-weights norm
            src = self._source(threshold, d_k=[], y=[])
            fig.line("d_k", "y", source=src, line_color="black", line_dash="dotted", line_width=2)
        self._marker(fig, key)
        fig.add_tools(HoverTool(tooltips=[("d_k", "@d_k"), ("median", "@y{0.000e}")]))

    def _saturated(self):
        fig = self._figure(
            "saturated",
            "Saturated rows (max weight > 0.99)",
            "d_k (key dimension)",
            "share of query rows",
            x_axis_type="log",
            y_range=Range1d(0, 1.02),
        )
        self._rule_curves(fig, "saturated", band=False)
        src = self._source("saturated:collapse", x=[], y0=[], y1=[], color=[])
        fig.segment(
            "x", "y0", "x", "y1", source=src, line_color="color", line_dash="dotted", line_width=2
        )
        self._marker(fig, "saturated")

    def _heatmap(self):
        fig = self._figure(
            "heatmap",
            "Attention weights of the current draw",
            "key",
            "query",
            x_range=Range1d(0, 64),
            y_range=Range1d(64, 0),
        )
        mapper = LinearColorMapper(palette=Cividis256, low=0.0, high=1.0)
        src = self._source("heatmap:weights", image=[], dw=[], dh=[])
        fig.image(
            image="image",
            x=0,
            y=0,
            dw="dw",
            dh="dh",
            source=src,
            color_mapper=mapper,
            origin="top_left",
        )
        fig.add_layout(ColorBar(color_mapper=mapper, title="weight", width=10), "right")
        fig.add_tools(HoverTool(tooltips=[("weight", "@image{0.0000}")]))

    # --- updating ------------------------------------------------------------------------

    def show_curves(self, curves: dict, n_keys: int, variance: float, temperature: float):
        """Plot a ``sweep`` result and its theory lines."""
        for key, (metric, *_, log_y) in CURVE_FIGURES.items():
            for rule, columns in curves.items():
                data = {
                    "d_k": columns["d_k"],
                    "y": columns[metric],
                    "lo": columns[metric + "_lo"],
                    "hi": columns[metric + "_hi"],
                }
                self.sources[f"{key}:{rule}"].data = _for_log_axis(data) if log_y else data
        d_k = np.geomspace(1, curves["sqrt"]["d_k"][-1], 60)
        spreads = {
            rule: theory.logit_std(rule, d_k, variance, temperature) for rule in SCALING_RULES
        }
        for rule, s in spreads.items():
            self.sources[f"spread:theory:{rule}"].data = _for_log_axis({"d_k": d_k, "y": s})
            small = s <= 1.0  # F4 holds for spreads below about 1
            self.sources[f"entropy:theory:{rule}"].data = {
                "d_k": d_k[small],
                "y": theory.small_spread_entropy(s[small], n_keys) / np.log(n_keys),
            }
            self.sources[f"saturated:{rule}"].data = {
                "d_k": curves[rule]["d_k"],
                "y": curves[rule]["saturated_share"],
            }
        threshold = theory.collapse_threshold(n_keys)
        ends = [d_k[0], d_k[-1]]
        self.sources["spread:collapse"].data = {"d_k": ends, "y": [threshold] * 2}
        self.sources["jacobian:uniform"].data = {
            "d_k": ends,
            "y": [theory.uniform_jacobian_norm(n_keys)] * 2,
        }
        crossings = {rule: _crossing(d_k, s, threshold) for rule, s in spreads.items()}
        crossings = {rule: x for rule, x in crossings.items() if x is not None}
        self.sources["saturated:collapse"].data = {
            "x": list(crossings.values()),
            "y0": [0.0] * len(crossings),
            "y1": [1.0] * len(crossings),
            "color": [RULE_COLORS[r] for r in crossings],
        }

    def show_snapshot(self, snap: Snapshot, unscaled: np.ndarray, medians: dict, share: float):
        """Plot the current draw: histogram, heatmap and the current-setting markers.

        ``unscaled`` are the scores ``q . k / T``; ``medians`` maps each metric
        of ``row_metrics`` to its median over rows; ``share`` is the saturated share.
        """
        s = snap.settings
        for kind, logits, rule in (("raw", unscaled, "none"), ("scaled", snap.logits, s.scaling)):
            spread = float(theory.logit_std(rule, s.d_k, s.variance, s.temperature))
            self.sources[f"histogram:{kind}"].data = _histogram(logits, spread)
            x = np.linspace(-4, 4, 121) * max(spread, 1e-12)
            self.sources[f"histogram:theory:{kind}"].data = {"x": x, "y": _gaussian(x, spread)}
        self._scaled_bars.glyph.fill_color = RULE_COLORS[s.scaling]
        self._scaled_bars.glyph.line_color = RULE_COLORS[s.scaling]
        n_q, n_k = snap.weights.shape
        self.sources["heatmap:weights"].data = {"image": [snap.weights], "dw": [n_k], "dh": [n_q]}
        heatmap = self.figures["heatmap"]
        heatmap.x_range.end, heatmap.y_range.start = n_k, n_q
        color = [RULE_COLORS[s.scaling]]
        for key, (metric, *_, log_y) in CURVE_FIGURES.items():
            y = medians[metric]
            if log_y and not y > 0:
                self.sources[f"{key}:marker"].data = {"d_k": [], "y": [], "color": []}
                continue
            self.sources[f"{key}:marker"].data = {
                "d_k": [s.d_k],
                "y": [max(y, LOG_FLOOR) if log_y else y],
                "color": color,
            }
        self.sources["saturated:marker"].data = {"d_k": [s.d_k], "y": [share], "color": color}


def _for_log_axis(data: dict) -> dict:
    """Drop rows a log axis cannot show (a zero spread) and floor underflowed norms."""
    keep = np.asarray(data["y"]) > 0
    return {
        name: np.maximum(np.asarray(v)[keep], LOG_FLOOR) if name != "d_k" else np.asarray(v)[keep]
        for name, v in data.items()
    }


def _histogram(logits: np.ndarray, spread: float, bins: int = 40) -> dict:
    """Density histogram over ``mean +- 4 * max(spread, measured std)``."""
    values = logits.ravel()
    width = 4 * max(spread, float(values.std()), 1e-12)
    top, edges = np.histogram(values, bins=bins, range=(-width, width), density=True)
    return {"left": edges[:-1], "right": edges[1:], "top": top}


def _gaussian(x: np.ndarray, spread: float) -> np.ndarray:
    """The N(0, spread^2) density (F1: scores are Gaussian for a fixed query)."""
    if spread == 0:
        return np.zeros_like(x)
    return np.exp(-0.5 * (x / spread) ** 2) / (spread * np.sqrt(2 * np.pi))


def _crossing(d_k: np.ndarray, spread: np.ndarray, threshold: float):
    """The d_k where an increasing theory spread first reaches the threshold, if any."""
    above = np.nonzero(spread >= threshold)[0]
    if len(above) == 0 or above[0] == 0 or spread[-1] < spread[0]:
        return None
    i = above[0]
    t = (np.log(threshold) - np.log(spread[i - 1])) / (np.log(spread[i]) - np.log(spread[i - 1]))
    return float(np.exp(np.log(d_k[i - 1]) + t * (np.log(d_k[i]) - np.log(d_k[i - 1]))))
