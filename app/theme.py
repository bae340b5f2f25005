"""The page's colour theme: light, dark, or the reader's own (``?theme=auto``).

A theme covers everything the page draws. Panel's native design takes its widgets'
colours from one stylesheet in every component, ``default.css`` or ``dark.css``;
the figures take theirs from a Bokeh theme, plus the few glyph colours they set
themselves (black marks, white fills); the colour key's words are re-inked so
they read on either background; and the page around the components (the
``<html>`` element) follows the hidden ``lab-theme`` marker, through
``assets/theme.js``. Under ``auto`` the theme follows the reader's
``prefers-color-scheme``, which the page tells in the marker's tags when asked,
and again whenever it changes. (Not Panel's ``BrowserInfo``: in the browser
build it reports the preference before the page's document is linked to
Python's, and the report is lost.)
"""

import panel as pn
from bokeh.models import CustomJS, Div, ImportedStyleSheet
from bokeh.themes import Theme
from bokeh.themes import default as default_theme

from app.asset import asset
from app.simulation import SCALING_RULES
from app.style import key_css

# Panel's dark theme's colours (panel/theme/css/dark.css): background, surface, text.
DARK_PAPER, DARK_SURFACE, DARK_INK = "#212529", "#2b3035", "#f8f9fa"
DARK_MUTED, DARK_RULE = "#ced4da", "#495057"  # axis words, grid lines

# The figures under the dark theme (under the light one, Bokeh's defaults).
DARK_FIGURES = Theme(
    json={
        "attrs": {
            "Plot": {
                "background_fill_color": DARK_PAPER,
                "border_fill_color": DARK_PAPER,
                "outline_line_color": DARK_RULE,
            },
            "Axis": {
                "axis_line_color": DARK_MUTED,
                "major_tick_line_color": DARK_MUTED,
                "minor_tick_line_color": DARK_MUTED,
                "major_label_text_color": DARK_MUTED,
                "axis_label_text_color": DARK_INK,
            },
            "Grid": {"grid_line_color": DARK_RULE},
            "Title": {"text_color": DARK_INK},
            "Legend": {
                "background_fill_color": DARK_SURFACE,
                "border_line_color": DARK_RULE,
                "label_text_color": DARK_INK,
                "title_text_color": DARK_INK,
            },
            "ColorBar": {
                "background_fill_color": DARK_PAPER,
                "major_label_text_color": DARK_MUTED,
                "title_text_color": DARK_INK,
            },
        }
    }
)
LIGHT_FIGURES = default_theme  # Bokeh's own

# The colours the figures set themselves (app/sections), and what each becomes on the
# dark background: black marks turn light, white (hollow) fills take the background.
DARK_GLYPH_COLORS = {"black": DARK_INK, "white": DARK_PAPER, "#555555": DARK_MUTED}
GLYPH_COLOR_PROPERTIES = (
    "line_color",
    "fill_color",
    "hatch_color",
    "text_color",
    "background_fill_color",
    "border_line_color",
)

# Panel's design stylesheet of each theme (the same folder, the same query).
DESIGN_SHEETS = {"light": "/theme/default.css", "dark": "/theme/dark.css"}

THEME_JS = asset("theme.js")


def is_dark(theme: str, prefers_dark: bool | None) -> bool:
    """Whether ``theme`` draws dark for a reader who ``prefers_dark`` (None: unknown).

    >>> is_dark("auto", True), is_dark("auto", None), is_dark("light", True)
    (True, False, False)
    """
    return theme == "dark" or (theme == "auto" and bool(prefers_dark))


class PageTheme:
    """Keeps a page's document in the theme its scenario asks for.

    Parameters
    ----------
    scenario : Scenario
        Its ``theme`` is the one asked for: ``auto``, ``light`` or ``dark``.
    key : pn.widgets.CheckButtonGroup
        The colour key, whose words are inked for the theme.

    ``marker`` is the hidden ``lab-theme`` marker, in the page's layout: its text says
    which theme is drawn, ``light`` or ``dark`` (empty until the page is followed;
    ``ask`` while Python waits for the reader's preference, which the page then puts
    in its tags: ``["dark"]`` or ``["light"]``).
    """

    def __init__(self, scenario, key):
        self.scenario, self.key = scenario, key
        self.marker = Div(text="", name="lab-theme", visible=False)
        self.marker.js_on_change("text", CustomJS(args={"paper": DARK_PAPER}, code=THEME_JS))
        self.marker.on_change("tags", self._preference_told)
        self._prefers_dark = None  # the reader's preference, once the page told it
        self._ever_dark = False  # a light page that never was dark has nothing to repaint
        self._followed = False
        scenario.param.watch(lambda _: self.paint(), "theme")

    def follow(self):
        """Ask the page for the reader's preference, once it has the document (the
        marker's), and draw the theme: at once if the link pins it, else when told."""
        if self.marker.document is None:
            return  # not in a page (a notebook's cell before display): drawn light
        self._followed = True
        self.marker.text = "ask"
        if self.scenario.theme != "auto":
            self.paint()

    def paint(self):
        """Draw the document in its theme (again, after new models joined it)."""
        doc = self.marker.document
        if doc is None or not self._followed:
            return  # drawn light, as built, until the page is followed
        if self.scenario.theme == "auto" and self._prefers_dark is None:
            return  # drawn once the page tells the reader's preference
        dark = is_dark(self.scenario.theme, self._prefers_dark)
        self._ever_dark |= dark
        if self._ever_dark:
            paint_document(doc, dark, self.key)
        self.marker.text = "dark" if dark else "light"

    def _preference_told(self, attr, old, new):
        self._prefers_dark = "dark" in new
        self.paint()


def paint_document(doc, dark: bool, key):
    """Put every model of ``doc`` in the dark (or light) theme; ``key`` is the colour key
    (a Panel widget). Idempotent: run it again once new models joined the document."""
    inked = key_css(SCALING_RULES, dark=dark)
    if key.stylesheets[0] != inked:
        key.stylesheets = [inked, *key.stylesheets[1:]]
    doc.theme = DARK_FIGURES if dark else LIGHT_FIGURES
    colors = DARK_GLYPH_COLORS if dark else {v: k for k, v in DARK_GLYPH_COLORS.items()}
    sheet = None  # the design's stylesheet in the theme, once one is seen
    for model in list(doc.models):
        sheets = list(getattr(model, "stylesheets", None) or ())
        for i, old in enumerate(sheets):
            if not _is_design_sheet(old):
                continue
            sheet = sheet or _design_sheet(doc, old.url, dark)
            if old is not sheet:
                sheets[i] = sheet
                model.stylesheets = sheets
        for name in GLYPH_COLOR_PROPERTIES:
            value = getattr(model, name) if name in model.properties() else None
            if isinstance(value, str) and value in colors:
                setattr(model, name, colors[value])


def _design_sheet(doc, url: str, dark: bool) -> ImportedStyleSheet:
    """The stylesheet of Panel's design in the theme, one model for the document, from
    the ``url`` of one in either theme.

    Panel gives every component it renders in ``doc`` the stylesheet models it keeps
    for the document, by URL (``pn.state._stylesheets``): the light one's entry is
    pointed at the theme's, so that what Panel renders later is in the theme too."""
    light = url.replace(DESIGN_SHEETS["dark"], DESIGN_SHEETS["light"])
    wanted = light.replace(DESIGN_SHEETS["light"], DESIGN_SHEETS["dark"]) if dark else light
    cache = pn.state._stylesheets.setdefault(doc, {})
    if light not in cache or cache[light].url != wanted:
        cache[light] = ImportedStyleSheet(url=wanted)
    return cache[light]


def _is_design_sheet(sheet) -> bool:
    return isinstance(sheet, ImportedStyleSheet) and any(
        part in sheet.url for part in DESIGN_SHEETS.values()
    )
