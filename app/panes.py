"""Small building blocks the page's parts share."""

import panel as pn

from app.captions import EXPLAINER
from app.controls import FOCUS_CSS, TEXT_CSS
from app.environment import theory_link

SMALL = {"font-size": "0.9em"}


def text_pane(css_class: str) -> pn.pane.HTML:
    """An HTML pane of small text whose content a move replaces.

    Panel's HTML view only swaps its inner HTML; a Bokeh Div re-laid out the
    whole page on every text change (about 40 ms of each move in a browser).
    """
    return pn.pane.HTML(
        "",
        css_classes=[css_class],
        disable_math=True,
        sizing_mode="stretch_width",
        margin=(0, 10),
        styles=SMALL,
    )


def page_header(title: str) -> pn.Column:
    """The page's title, what it is for, and the explainer (folded: the first screen
    shows the controls and the first plots)."""
    return pn.Column(
        pn.pane.Markdown(
            f"# {title}\nWhy attention divides Q Kᵀ by √d_k: move the sliders and watch "
            f"the softmax saturate. {theory_link()}",
            sizing_mode="stretch_width",
            stylesheets=[TEXT_CSS],
        ),
        pn.Card(
            pn.pane.Markdown(EXPLAINER, sizing_mode="stretch_width"),
            title="Why scale at all? Why √d_k?",
            collapsed=True,
            sizing_mode="stretch_width",
            stylesheets=[FOCUS_CSS],
        ),
        sizing_mode="stretch_width",
    )
