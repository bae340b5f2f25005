"""Share or embed the scenario on screen, or take it away.

The address bar holds the scenario; a teacher picks views and copies an
``<iframe>`` snippet of them (built in the browser from the page's URL,
``embed.js``); anyone downloads the data (CSV) or the figures (PNG), or
starts lecture mode.
"""

import panel as pn

from app.asset import asset
from app.controls import FOCUS_CSS
from app.panes import SMALL
from app.scenario import SECTIONS, VIEWS
from app.sections import VIEW_TITLES
from app.words import text

SAVE_FIGURES_JS = asset("save_figures.js")
EMBED_JS = asset("embed.js")
CSV_FILENAME = "attention-scaling-lab.csv"

# The embed layout's height at an iframe width of 480 to 960 px (one column of
# views): the controls and the link back, then one card per view. Measured on
# the built site; the browser test checks the frame neither scrolls nor gapes.
# Narrower, on a phone, the layout is taller: about phone_base + phone_per_view
# px per view at a viewport 360 px wide (a frame of 320 to 344 px), and
# slope_base + slope_per_view px per view more for each px narrower (measured on
# the iPhone 13's descriptor, frames 320 to 480 px wide, 1 to 4 views), so the
# snippet's style asks for that height where the viewport is narrow, and a course
# page with no script has no scroll trap on a phone (tests/test_embed.py).
EMBED_HEIGHT = {
    "base": 680,
    "per_view": 440,
    "phone_base": 1440,
    "phone_per_view": 520,
    "slope_base": 2.5,
    "slope_per_view": 0.3,
}


class ShareBox(pn.viewable.Viewer):
    """The share box. ``csv_file()`` gives the CSV; ``start_lecture()`` starts lecture
    mode; ``title`` names the lab in the snippet and the figures' file."""

    def __init__(self, scenario, csv_file, start_lecture, title: str, **params):
        super().__init__(**params)
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
            options={
                "The reader's (light or dark, as their system asks)": "auto",
                "Light": "light",
                "Dark": "dark",
            },
            value="auto",
            sizing_mode="stretch_width",
        )
        self.embed_code = pn.widgets.TextAreaInput(
            name=text("page", "share", "embed code"),
            placeholder=text("page", "share", "placeholder"),
            height=90,
            sizing_mode="stretch_width",
        )
        copy = pn.widgets.Button(name="Copy embed code", width=160, stylesheets=[FOCUS_CSS])
        # Built in the browser from the page's own URL, which holds the scenario.
        copy.js_on_click(
            args={
                "code": self.embed_code,
                "views": self.embed_views,
                "theme": self.embed_theme,
                "all_views": list(VIEWS),
                "sizes": EMBED_HEIGHT,
                "title": title,
            },
            code=EMBED_JS,
        )
        csv_download = pn.widgets.FileDownload(
            callback=csv_file,
            filename=CSV_FILENAME,
            label="Data (CSV)",
            button_type="default",
            embed=False,
            width=150,
        )
        save_figures = pn.widgets.Button(name="Figures (PNG)", width=150)
        # Drawn in the browser from the figures on screen, each as its save tool draws it.
        save_figures.js_on_click(args={"names": list(VIEWS), "title": title}, code=SAVE_FIGURES_JS)
        lecture = pn.widgets.Button(name="Lecture mode (projector)", width=200)
        lecture.on_click(lambda _: start_lecture())
        self.layout = pn.Column(
            pn.pane.Markdown(f"**{text('page', 'headings', 'share')}**", margin=(10, 10, 0, 10)),
            pn.pane.Markdown(text("page", "share", "note"), margin=(0, 10), styles=SMALL),
            self.embed_views,
            self.embed_theme,
            copy,
            self.embed_code,
            pn.pane.Markdown(
                f"**{text('page', 'headings', 'take away')}**", margin=(10, 10, 0, 10)
            ),
            pn.Row(csv_download, save_figures, margin=0),
            pn.Row(lecture, margin=0),
            sizing_mode="stretch_width",
        )

    def _follow_section(self, event):
        """A teacher embeds what is on screen: the section's views (until they pick)."""
        if SECTIONS[event.new]:
            self.embed_views.value = list(SECTIONS[event.new])

    def __panel__(self):
        return self.layout
