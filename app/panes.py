"""Small building blocks the page's parts share."""

import panel as pn

from app.asset import asset
from app.controls import FOCUS_CSS, TARGETS_CSS, TEXT_CSS
from app.environment import theory_link
from app.words import explain_terms, text

SMALL = {"font-size": "0.9em"}
GLOSSARY_CSS = asset("glossary.css")  # a glossary term explains itself (app.words)
EXPLAINER_CSS = asset("explainer.css")
SCREEN_ONLY_CSS = asset("screen_only.css")  # not printed
PRINT_ONLY_CSS = asset("print_only.css")  # printed only


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
        stylesheets=[GLOSSARY_CSS],
    )


def header_markdown(title: str) -> str:
    """The page's title and what it is for (sitebuild.first_text paints it first too)."""
    return f"# {title}\n{text('page', 'header', 'tagline')} {theory_link()}"


def page_header(title: str) -> pn.Column:
    """The page's title, what it is for, and the explainer (folded: the first screen
    shows the controls and the first plots)."""
    return pn.Column(
        pn.pane.Markdown(
            header_markdown(title),
            sizing_mode="stretch_width",
            stylesheets=[TEXT_CSS],
        ),
        pn.Card(
            pn.pane.Markdown(
                explain_terms(text("page", "explainer", "text")),
                sizing_mode="stretch_width",
                stylesheets=[GLOSSARY_CSS],
            ),
            # Its title in a span: a heading (Panel's h3) inside the header's button is
            # none to a screen reader, and broke the page's heading order for axe.
            header=pn.pane.HTML(
                f"<span>{text('page', 'explainer', 'title')}</span>",
                css_classes=["card-title"],
                stylesheets=[EXPLAINER_CSS],
            ),
            collapsed=True,
            sizing_mode="stretch_width",
            stylesheets=[FOCUS_CSS, TARGETS_CSS],
        ),
        sizing_mode="stretch_width",
    )
