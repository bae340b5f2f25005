"""The page's words painted first: its title, what it is for and the first section's
introduction, as plain HTML at the top of the page's body (``static/first_text.html``).

Panel's page holds its words in the prerendered document, which BokehJS draws once the
page's scripts (0.8 MB) have come: 6 s on a slow 4G link. These come with the page's
first bytes. The page removes them when BokehJS has drawn the prerendered document.
"""

import os
from pathlib import Path

from markdown_it import MarkdownIt

from sitebuild.common import STATIC, replace_once

FIRST_TEXT_HTML = STATIC / "first_text.html"
FIRST_TEXT_ID = "lab-first-text"
# Panel's prerendered embed (its converter's page), which resolves once drawn.
PANEL_EMBED = "root.Bokeh.embed.embed_items(docs_json, render_items);"
PAGE_EMBED = (
    "root.Bokeh.embed.embed_items(docs_json, render_items)"
    f".then(() => document.getElementById('{FIRST_TEXT_ID}')?.remove());"
)


def first_text_html() -> str:
    """The words of the page as the converter prerendered it (the default scenario), as
    Panel's Markdown panes render them (markdown-it, ``gfm-like``)."""
    from app.environment import PRERENDER_ENV

    os.environ[PRERENDER_ENV] = "1"  # the theory link of the built site
    from app.options import FIRST_SECTION
    from app.page import TITLE
    from app.panes import header_markdown
    from app.stage import section_intro_markdown

    render = MarkdownIt("gfm-like", {"html": True}).render
    return (
        FIRST_TEXT_HTML.read_text()
        .replace("HEADER", render(header_markdown(TITLE)))
        .replace("SECTION_INTRO", render(section_intro_markdown(FIRST_SECTION)))
    )


def add_first_text(site: Path):
    """Put the page's words first in its body, and have the page remove them once the
    prerendered document is drawn."""
    index = site / "index.html"
    page = index.read_text()
    body_tag = page[page.index("<body") : page.index(">", page.index("<body")) + 1]
    page = replace_once(page, body_tag, body_tag + "\n" + first_text_html(), "Panel's page")
    index.write_text(replace_once(page, PANEL_EMBED, PAGE_EMBED, "Panel's page"))
