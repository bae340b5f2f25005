"""Section 6, Numerical stability: what overflows without the maximum subtracted.

A table, not a figure: the largest logit of the current draw beside each
floating-point format's largest argument of exp, and the share of rows whose
naive softmax would overflow (docs/theory.md, "Numerical stability").
"""

from typing import ClassVar

import panel as pn

from app.precision import EXP_LIMITS, naive_overflow_shares
from app.words import text, to_html


class Stability:
    """The table, in ``pane``."""

    READS = frozenset({"draw"})
    TITLES: ClassVar[dict] = {}
    figures: ClassVar[dict] = {}

    def __init__(self, pane: pn.pane.HTML):
        self.pane = pane

    def show(self, results, parts):
        if "draw" in parts:
            self.pane.object = precision_html(results.draw.logits)

    def show_lecture(self, on: bool):
        """A table's type follows the page's (lecture mode sets it)."""

    def show_rules(self, rules):
        """A table has no curves to hide."""


def precision_html(logits) -> str:
    """The largest logit beside each format's largest argument of exp, and the share
    of rows whose naive softmax (no subtraction of the row maximum) would overflow."""
    largest = float(logits.max())
    shares = naive_overflow_shares(logits)
    rows = "".join(
        f"<tr><td>{name}</td><td>{limit:.3f}</td><td>{shares[name]:.0%}</td></tr>"
        for name, limit in EXP_LIMITS.items()
    )
    largest_now = to_html(text("page", "stability", "largest", {"largest": largest}))
    return (
        f"{largest_now}<table><thead><tr><th>format</th><th>largest argument of exp</th>"
        "<th>rows whose naive softmax overflows</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{to_html(text('page', 'stability', 'note'))}"
    )
