"""Section 1, Spread: the scores of the current draw, and their spread against d_k.

The logits c q . k / T of d_k-dimensional vectors spread as s = c √d_k v / T
(docs/theory.md, "Logit spread"); the histogram shows
one draw's scores beside the N(0, s²) they follow, the curve shows the
median row's spread at every d_k beside ``theory.logit_std``.
"""

from typing import ClassVar

import numpy as np
from bokeh.models import Label, Range1d

from app import theory
from app.sections.figures import CURVE_FIGURES, SectionFigures, for_log_axis, theory_d_k
from app.simulation import SCALING_RULES
from app.style import RAW_COLOR, RULE_COLORS
from app.words import text

# The histogram shows the unscaled scores on the same axis while they are at most
# this many times wider than the scaled ones; beyond, the axis follows the scaled
# logits (whose shape the softmax sees) and a note gives the unscaled spread.
SHARED_AXIS_RATIO = 16
HISTOGRAM_BINS = 40


class Spread(SectionFigures):
    """``histogram`` and ``spread``."""

    READS = frozenset({"curves", "draw"})
    TITLES: ClassVar[dict] = {
        "histogram": "Scores at the current setting",
        "spread": CURVE_FIGURES["spread"][1],
    }

    def __init__(self, models):
        super().__init__(models)
        self._histogram()
        fig = self._curve_figure("spread")
        self._theory_lines(fig, "spread")
        self._threshold_line(fig, "spread:collapse")  # sqrt(2 ln n)
        self._finish_curve_figure(fig, "spread")

    def _histogram(self):
        fig = self._figure(
            "histogram",
            "logit",
            "density",
            x_range=Range1d(-4, 4),
        )
        self._histogram_parts = {}
        for kind, color in (("raw", RAW_COLOR), ("scaled", RULE_COLORS["sqrt"])):
            bars = self._source(f"histogram:{kind}", left=[], right=[], top=[])
            quads = fig.quad(
                left="left",
                right="right",
                bottom=0,
                top="top",
                source=bars,
                fill_color=color,
                fill_alpha=0.45,
                line_color=color,
                name=f"histogram:{kind}:bars",
            )
            curve = self._source(f"histogram:theory:{kind}", x=[], y=[])
            line = fig.line(
                "x",
                "y",
                source=curve,
                line_color=color,
                line_width=2,
                line_dash="dashed",
                name=f"histogram:{kind}:theory",
            )
            self._histogram_parts[kind] = (quads, line)
        self._off_axis_note = Label(
            x=8,
            y=8,
            x_units="screen",
            y_units="screen",
            anchor="bottom_left",
            text="",
            text_font_size="9pt",
            text_color="#555555",
            background_fill_color="white",
            background_fill_alpha=0.8,
        )
        fig.add_layout(self._off_axis_note)

    def show_curves(self, results):
        """The median spread at every d_k, its theory and the collapse threshold."""
        s, curves = results.settings, results.curves
        self._show_curve_medians("spread", curves)
        d_k = theory_d_k(curves)
        for rule in SCALING_RULES:
            spread = theory.logit_std(rule, d_k, s.variance, s.temperature, s.alpha)
            self.sources[f"spread:theory:{rule}"].data = for_log_axis({"d_k": d_k, "y": spread})
        self._show_threshold("spread:collapse", curves, theory.collapse_threshold(s.n_keys))

    def show_draw(self, results):
        """Both histograms on one axis that shows the scaled logits' shape; the star."""
        self._show_marker("spread", results)
        s, draw = results.settings, results.draw
        kinds = {"raw": (results.unscaled, "none"), "scaled": (draw.logits, s.scaling)}
        theory_spreads = {
            kind: float(theory.logit_std(rule, s.d_k, s.variance, s.temperature, s.alpha))
            for kind, (_, rule) in kinds.items()
        }
        spreads = {
            kind: max(theory_spreads[kind], float(logits.std()), 1e-12)
            for kind, (logits, _) in kinds.items()
        }
        ratio = spreads["raw"] / spreads["scaled"]
        shared = ratio <= SHARED_AXIS_RATIO
        half_width = 4 * (max(spreads.values()) if shared else spreads["scaled"])
        x = np.linspace(-half_width, half_width, 121)
        for kind, (logits, _) in kinds.items():
            self.sources[f"histogram:{kind}"].data = _histogram(logits, half_width)
            self.sources[f"histogram:theory:{kind}"].data = {
                "x": x,
                "y": _gaussian(x, theory_spreads[kind]),
            }
        quads, line = self._histogram_parts["scaled"]
        color = RULE_COLORS[s.scaling]
        quads.glyph.fill_color = quads.glyph.line_color = line.glyph.line_color = color
        x_range = self.figures["histogram"].x_range
        x_range.start, x_range.end = -half_width, half_width
        # the note quotes the draw's own spreads (the axis above takes the wider of the
        # draw's and the theory's)
        measured = {kind: float(logits.std()) for kind, (logits, _) in kinds.items()}
        note = {
            "std": measured["raw"],
            "ratio": measured["raw"] / max(measured["scaled"], 1e-12),
            "every_logit_zero": not draw.logits.any(),
        }
        self._off_axis_note.text = "" if shared else text("page", "histogram note", numbers=note)


def _histogram(logits: np.ndarray, half_width: float) -> dict:
    """Density histogram over ``[-half_width, half_width]``; mass outside is left out.

    The density is per unit logit over all values (not renormalised to the
    range), so a histogram clipped by the axis keeps its true height.
    """
    values = logits.ravel()
    counts, edges = np.histogram(values, bins=HISTOGRAM_BINS, range=(-half_width, half_width))
    return {
        "left": edges[:-1],
        "right": edges[1:],
        "top": counts / (values.size * np.diff(edges)),
    }


def _gaussian(x: np.ndarray, spread: float) -> np.ndarray:
    """The N(0, spread^2) density: the scores of a fixed query are exactly Gaussian."""
    if spread == 0:
        return np.zeros_like(x)
    return np.exp(-0.5 * (x / spread) ** 2) / (spread * np.sqrt(2 * np.pi))
