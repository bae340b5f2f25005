"""Small building blocks the page's parts share."""

import panel as pn

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
