"""Section 3, One query up close: one row's logits and weights.

Bars per key, sorted by the current rule's logit: the unscaled scores (grey)
beside the current rule's (its colour), so the learner sees one softmax
turn a spread of logits into a spread (or a spike) of weights.
"""

from typing import ClassVar

import numpy as np
from bokeh.models import HoverTool, Range1d
from bokeh.transform import dodge

from app import softmax
from app.sections.figures import SectionFigures
from app.style import RAW_COLOR, RULE_COLORS

# (title, y label) of each view.
ROW_FIGURES = {
    "row_logits": ("One query up close: its logits", "logit z"),
    "row_weights": ("One query up close: its weights", "attention weight p"),
}
ROW_BAR_OFFSET = 0.2  # each key's two bars sit this far either side of its rank


class QueryRow(SectionFigures):
    """``row_logits`` and ``row_weights``."""

    READS = frozenset({"row"})
    TITLES: ClassVar[dict] = {key: title for key, (title, _) in ROW_FIGURES.items()}

    def __init__(self, models):
        super().__init__(models)
        self._row_bars = []
        for key, (_, y_label) in ROW_FIGURES.items():
            fig = self._figure(
                key,
                "key, by the current rule's logit (largest first)",
                y_label,
                x_range=Range1d(0.5, 64.5),
            )
            if key == "row_weights":
                fig.y_range = Range1d(0, 1.02)
            for kind, offset in (("raw", -ROW_BAR_OFFSET), ("scaled", ROW_BAR_OFFSET)):
                src = self._source(f"{key}:{kind}", rank=[], y=[], key=[])
                bars = fig.vbar(
                    x=dodge("rank", offset),
                    top="y",
                    width=2 * ROW_BAR_OFFSET,
                    source=src,
                    fill_color=RAW_COLOR,
                    line_color=None,
                )
                if kind == "scaled":
                    self._row_bars.append(bars)
            fig.add_tools(
                HoverTool(tooltips=[("key", "@key"), (y_label, "@y{0.000e}")], visible=False)
            )

    def show_row(self, results):
        """Query ``results.shown_row`` of the current draw, under the current rule and unscaled."""
        draw, row = results.draw, results.shown_row
        order = np.argsort(-draw.logits[row], kind="stable")
        rank = np.arange(1, len(order) + 1)
        unscaled = results.unscaled[row]
        shown = {
            "row_logits": {"raw": unscaled, "scaled": draw.logits[row]},
            "row_weights": {
                "raw": softmax.softmax_rows(unscaled[None]).weights[0],
                "scaled": draw.weights[row],
            },
        }
        for key, kinds in shown.items():
            self.figures[key].x_range.end = len(order) + 0.5
            for kind, values in kinds.items():
                self.sources[f"{key}:{kind}"].data = {
                    "rank": rank,
                    "y": values[order],
                    "key": order + 1,
                }
        for bars in self._row_bars:
            bars.glyph.fill_color = RULE_COLORS[draw.settings.scaling]
