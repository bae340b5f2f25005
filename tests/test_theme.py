"""The colour theme, in CPython: what a link asks for, and what the dark theme paints in
the page's real Bokeh document (the browser tests check it on the built site)."""

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import ImportedStyleSheet, Plot

from app.page import AttentionLab
from app.scenario import read_query, write_query
from app.style import RULE_COLORS, RULE_TEXT_COLORS_DARK
from app.theme import (
    DARK_GLYPH_COLORS,
    DARK_PAPER,
    DESIGN_SHEETS,
    GLYPH_COLOR_PROPERTIES,
)

pytestmark = pytest.mark.filterwarnings(  # the page's widgets are named as in Panel 1.x
    r"ignore:.* is deprecated and will be removed in version 2\.0:PendingDeprecationWarning"
)


def test_a_link_asks_for_a_theme_and_a_bad_one_is_named():
    assert read_query({"theme": "dark"}) == ({"theme": "dark"}, [])
    values, (notice,) = read_query({"theme": "pink"})
    assert values == {} and "auto, light, dark" in notice
    values = AttentionLab().scenario.param.values()
    assert "theme" not in write_query(values)  # auto, the default, is left out
    assert write_query(values | {"theme": "light"})["theme"] == "light"


def test_a_link_s_theme_applies_with_its_other_page_settings():
    """A link that sets the theme and lecture mode at once (one update, two events: it
    raised a TypeError in the browser build, and the page never went live)."""
    lab = AttentionLab()
    lab.scenario.param.update(theme="dark", lecture=True, section="saturation")
    assert (lab.scenario.theme, lab.scenario.lecture) == ("dark", True)


def design_sheets(doc) -> set[str]:
    """Which of Panel's design stylesheets the document's components carry."""
    return {
        name
        for model in doc.models
        for sheet in getattr(model, "stylesheets", None) or ()
        if isinstance(sheet, ImportedStyleSheet)
        for name, part in DESIGN_SHEETS.items()
        if part in sheet.url
    }


def glyph_colors(doc) -> dict:
    """Every colour a model of ``doc`` sets itself, by model and property."""
    return {
        (model.id, name): getattr(model, name)
        for model in doc.models
        for name in GLYPH_COLOR_PROPERTIES
        if name in model.properties() and isinstance(getattr(model, name), str)
    }


@pytest.fixture
def page():
    """The page's real document, as ``panel serve`` makes it for a session, followed
    as the page's load does; the reader's preference is not told yet."""
    lab, doc = AttentionLab(), Document()
    pn.panel(lab).server_doc(doc)
    lab.theme.follow()
    return lab, doc


def tell(lab, preference: str):
    """What the page does when asked (``assets/theme.js``): the reader's preference in
    the theme marker's tags (a change of the Bokeh property, as a page's patch makes)."""
    assert lab.theme.marker.text in ("ask", "light", "dark")
    lab.theme.marker.tags = [preference]


def test_the_dark_theme_paints_every_model_and_the_light_one_undoes_it(page):
    lab, doc = page
    light = glyph_colors(doc)
    assert lab.theme.marker.text == "ask"  # auto: the page is asked the preference
    tell(lab, "light")
    assert design_sheets(doc) == {"light"} and lab.theme.marker.text == "light"
    assert any(color in DARK_GLYPH_COLORS for color in light.values())  # something to paint

    lab.scenario.theme = "dark"
    assert design_sheets(doc) == {"dark"} and lab.theme.marker.text == "dark"
    plots = list(doc.select({"type": Plot}))
    assert plots and all(p.background_fill_color == DARK_PAPER for p in plots)
    assert not set(glyph_colors(doc).values()) & set(DARK_GLYPH_COLORS)
    # A section built now, after the theme was drawn, is drawn in it too.
    lab.scenario.section = "saturation"
    assert len(list(doc.select({"type": Plot}))) > len(plots)
    assert design_sheets(doc) == {"dark"}
    assert all(p.background_fill_color == DARK_PAPER for p in doc.select({"type": Plot}))
    assert not set(glyph_colors(doc).values()) & set(DARK_GLYPH_COLORS)

    lab.scenario.theme = "light"
    assert design_sheets(doc) == {"light"} and lab.theme.marker.text == "light"
    assert all(p.background_fill_color == "#ffffff" for p in doc.select({"type": Plot}))
    lab.scenario.section = "spread"  # its figures back in the document, as they were
    assert glyph_colors(doc) == light


def test_auto_follows_the_reader_s_preference_as_the_page_tells_it(page):
    lab, doc = page
    assert lab.theme.marker.text == "ask" and design_sheets(doc) == {"light"}  # not drawn
    tell(lab, "dark")
    assert lab.theme.marker.text == "dark" and design_sheets(doc) == {"dark"}
    tell(lab, "light")
    assert lab.theme.marker.text == "light" and design_sheets(doc) == {"light"}
    lab.scenario.theme = "dark"
    tell(lab, "light")
    assert lab.theme.marker.text == "dark"  # a link's own theme wins over the reader's


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two sRGB colours, #rrggbb."""

    def luminance(color):
        r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def over(color: str, alpha: float, background: str) -> str:
    """``color`` at opacity ``alpha`` over ``background``, as the browser blends it."""
    mixed = (
        round(int(color[i : i + 2], 16) * alpha + int(background[i : i + 2], 16) * (1 - alpha))
        for i in (1, 3, 5)
    )
    return "#" + "".join(f"{c:02x}" for c in mixed)


@pytest.mark.parametrize("rule", RULE_COLORS)
def test_the_colour_key_reads_on_the_dark_background(rule):
    """The key's words under the dark theme: 4.5:1 or more (WCAG 1.4.3) on the page's
    background and on the rule's own tint (``style.key_css``: its colour at 0x22)."""
    ink, tint = RULE_TEXT_COLORS_DARK[rule], over(RULE_COLORS[rule], 0x22 / 255, DARK_PAPER)
    assert contrast(ink, DARK_PAPER) >= 4.5 and contrast(ink, tint) >= 4.5
