"""Share or embed the scenario on screen, or take it away.

The address bar holds the scenario; a teacher picks views, a theme and the language
of their course page and copies the snippet of them, which the code box keeps up to
date with the scenario (``course_snippet``; ``copy.js`` copies it and says so), and
saves a poster of the views for what cannot run the embed (a PDF); anyone downloads
the data (CSV) or the figures (PNG), or starts lecture mode.
"""

import html

import panel as pn

from app.asset import asset
from app.controls import FOCUS_CSS
from app.options import SECTIONS, THEMES, VIEWS
from app.panes import SMALL
from app.sections import VIEW_TITLES
from app.theme import DARK_INK, DARK_PAPER
from app.words import text

SAVE_FIGURES_JS = asset("save_figures.js")
COPY_JS = asset("copy.js")
CSV_FILENAME = "attention-scaling-lab.csv"
FIGURES_FILENAME = "attention-scaling-lab.png"
# The poster: the picked views' figures on screen in one PNG, the snippets' still.
POSTER_FILENAME = "attention-scaling-lab-poster.png"
# The figures' PNG's paper and ink in each theme (app/theme.py's dark page).
# The take-away buttons' width: two side by side, each with Panel's 10 px margins,
# within the controls' column (319 px on a desktop; at 150 px they ran 11 px past it).
TAKE_AWAY_WIDTH = 135
PNG_COLORS = {"light": ["#ffffff", "#1f1f1f"], "dark": [DARK_PAPER, DARK_INK]}

# The embed layout's height at an iframe width of 480 to 960 px (one column of
# views): the controls and the link back, then one card per view. Measured on
# the built site; the browser test checks the frame neither scrolls nor gapes.
# Narrower, on a phone, the layout is taller: about phone_base + phone_per_view
# px per view at a viewport 360 px wide (a frame of 320 to 344 px), and
# slope_base + slope_per_view px per view more for each px narrower (measured on
# the iPhone 13's descriptor, frames 320 to 480 px wide, 1 to 4 views), so the
# snippet's style asks for that height where the viewport is narrow, and a course
# page with no script has no scroll trap on a phone (tests/site/test_embeds.py).
EMBED_HEIGHT = {
    "base": 680,
    "per_view": 440,
    "phone_base": 1440,
    "phone_per_view": 520,
    "slope_base": 2.5,
    "slope_per_view": 0.3,
}

# The themes an embed may ask for (app/theme.py), as the share box names them.
EMBED_THEMES = {text("page", "share", f"theme {theme}"): theme for theme in THEMES}
# The languages of course pages a snippet is written in (``course_snippet``).
SNIPPET_FORMS = {text("page", "share", f"form {form}"): form for form in ("html", "myst", "quarto")}


def embed_snippet(src: str, views, title: str) -> str:
    """The ``<iframe>`` of the page at ``src`` showing ``views``, titled with them.

    Its height fits the views at an iframe width of 480 to 960 px, and grows on a
    narrow viewport as the embed layout does (``EMBED_HEIGHT``).
    """
    n, h = len(views), EMBED_HEIGHT
    height = h["base"] + h["per_view"] * n
    phone = h["phone_base"] + h["phone_per_view"] * n
    slope = f"{h['slope_base'] + h['slope_per_view'] * n:.1f}"
    narrow = f"calc({phone}px + {slope} * (360px - 100vw))"
    style = f"border:0; max-width:100%; height:max({height}px, {narrow})"
    # Its title names the views, so that a screen reader tells a page's embeds apart.
    named = html.escape(f"{title}: {', '.join(VIEW_TITLES[view] for view in views)}")
    return (
        f'<iframe src="{html.escape(src)}" title="{named}" width="100%" height="{height}" '
        f'style="{style}" loading="lazy"></iframe>'
    )


def course_snippet(form: str, src: str, views, title: str) -> str:
    """The embed of the page at ``src`` showing ``views`` for a course page in ``form``.

    - ``html``: the ``<iframe>`` (``embed_snippet``), which HTML, Markdown for MkDocs
      and Sphinx's MyST take as it is.
    - ``myst``: MyST's ``iframe`` directive (Jupyter Book 2, mystmd), with the poster
      (POSTER_FILENAME, beside the page) as its placeholder in static exports (PDF)
      and the views' names as its caption. MyST draws the frame in its own
      proportions: the embed scrolls inside it.
    - ``quarto``: the ``<iframe>`` as raw HTML in HTML output, and the poster in the
      others (PDF, Word).
    """
    iframe = embed_snippet(src, views, title)
    named = f"{title}: {', '.join(VIEW_TITLES[view] for view in views)}"
    if form == "myst":
        return f":::{{iframe}} {src}\n:width: 100%\n:placeholder: {POSTER_FILENAME}\n{named}\n:::"
    if form == "quarto":
        return (
            f'::: {{.content-visible when-format="html"}}\n```{{=html}}\n{iframe}\n```\n:::\n'
            f'::: {{.content-hidden when-format="html"}}\n![{named}]({POSTER_FILENAME})\n:::'
        )
    return iframe


def save_png_on_click(button, picked, file: str, title: str):
    """On a click of ``button``, save the figures on screen as one PNG named ``file``,
    under a line naming ``title`` and the scenario: drawn in the browser
    (``save_figures.js``), each as its save tool draws it, in the page's theme.
    ``picked``, the share box's views, keeps those ticked (the poster); None, all."""
    button.js_on_click(
        args={
            "names": list(VIEWS),
            "picked": picked,
            "title": title,
            "file": file,
            "colors": PNG_COLORS,
        },
        code=SAVE_FIGURES_JS,
    )


class ShareBox(pn.viewable.Viewer):
    """The share box. ``query(**changes)`` writes the scenario's query with ``changes``
    (``Address.query``); ``csv_file()`` gives the CSV; ``start_lecture()`` starts
    lecture mode; ``title`` names the lab in the snippet and the figures' file."""

    def __init__(self, scenario, query, csv_file, start_lecture, title: str, **params):
        super().__init__(**params)
        self._query, self._title = query, title
        self.embed_views = pn.widgets.CheckBoxGroup(
            name="Views to embed",
            options={VIEW_TITLES[key]: key for key in VIEWS},
            value=list(SECTIONS[scenario.section]),
            inline=False,
        )
        scenario.param.watch(self._follow_section, "section")
        # The embed's colour theme: its course page's, or the reader's (app/theme.py).
        self.embed_theme = pn.widgets.Select(
            name=text("page", "share", "theme"),
            options=EMBED_THEMES,
            value="auto",
            sizing_mode="stretch_width",
        )
        self.snippet_form = pn.widgets.Select(
            name=text("page", "share", "form"),
            options=SNIPPET_FORMS,
            value="html",
            sizing_mode="stretch_width",
        )
        self.embed_code = pn.widgets.TextAreaInput(
            name=text("page", "share", "embed code"),
            placeholder=text("page", "share", "placeholder"),
            height=90,
            sizing_mode="stretch_width",
        )
        copy = pn.widgets.Button(name="Copy embed code", width=160, stylesheets=[FOCUS_CSS])
        copy.js_on_click(args={"code": self.embed_code, "button": copy}, code=COPY_JS)
        # The snippet follows every setting: the scenario's, and the views and theme
        # (while the box is shown: an embed, which hides it, skips it on every move).
        scenario.param.watch(lambda *_: self.show_snippet(), list(scenario.param))
        self.embed_views.param.watch(lambda _: self.show_snippet(), "value")
        self.embed_theme.param.watch(lambda _: self.show_snippet(), "value")
        self.snippet_form.param.watch(lambda _: self.show_snippet(), "value")
        poster = pn.widgets.Button(name=text("page", "share", "poster"), width=150)
        save_png_on_click(poster, self.embed_views, POSTER_FILENAME, title)
        csv_download = pn.widgets.FileDownload(
            callback=csv_file,
            filename=CSV_FILENAME,
            label="Data (CSV)",
            button_type="default",
            embed=False,
            width=TAKE_AWAY_WIDTH,
        )
        save_figures = pn.widgets.Button(name="Figures (PNG)", width=TAKE_AWAY_WIDTH)
        save_png_on_click(save_figures, None, FIGURES_FILENAME, title)
        lecture = pn.widgets.Button(name="Lecture mode (projector)", width=200)
        lecture.on_click(lambda _: start_lecture())
        self.layout = pn.Column(
            pn.pane.Markdown(f"**{text('page', 'headings', 'share')}**", margin=(10, 10, 0, 10)),
            pn.pane.Markdown(text("page", "share", "note"), margin=(0, 10), styles=SMALL),
            self.embed_views,
            self.embed_theme,
            self.snippet_form,
            copy,
            self.embed_code,
            poster,
            pn.pane.Markdown(
                f"**{text('page', 'headings', 'take away')}**", margin=(10, 10, 0, 10)
            ),
            pn.Row(csv_download, save_figures, margin=0),
            pn.Row(lecture, margin=0),
            sizing_mode="stretch_width",
        )
        self.layout.param.watch(lambda _: self.show_snippet(), "visible")

    def show_snippet(self):
        """Put the snippet of the scenario, views, theme and form picked in the code box, once
        the page's address is known (its own, without query: the embed's base)."""
        location = pn.state.location
        if location is None or not location.href or not self.layout.visible:
            return
        views = [view for view in VIEWS if view in self.embed_views.value] or list(VIEWS)
        theme = self.embed_theme.value
        query = self._query(
            views=",".join(views), section=None, theme=None if theme == "auto" else theme
        )
        base = location.href.split("#")[0].split("?")[0]
        self.embed_code.value = course_snippet(
            self.snippet_form.value, base + query, views, self._title
        )

    def _follow_section(self, event):
        """A teacher embeds what is on screen: the section's views (until they pick)."""
        if SECTIONS[event.new]:
            self.embed_views.value = list(SECTIONS[event.new])

    def __panel__(self):
        return self.layout
