"""What is on screen beside the controls: one section at a time, or lecture mode.

``Stage`` lays out the views that the scenario asks for: the section's (with
its introduction and a button to the next), the embed layout's (``views=``),
or in lecture mode one of those at a time, with buttons to step through them.
Each view is a card: its figure, its caption and its formula. A card is built
the first time its view comes on screen, and only the views on screen are in
the grid: a figure out of it is out of the browser's document, so a move
neither sends nor draws its data. The captions depend on the numbers on
screen: the page writes them (``show_captions``).
"""

import html
import itertools
from collections.abc import Callable

import panel as pn
from bokeh.models import Model

from app.asset import asset
from app.captions import section_label, section_title
from app.controls import FOCUS_CSS, QUIET_CSS, TEXT_CSS, WRAP_CSS, Scenario
from app.formulas import FORMULAS, formula_html
from app.options import SECTIONS, VIEWS, section_of
from app.panes import GLOSSARY_CSS, SCREEN_ONLY_CSS, SMALL
from app.words import explain_terms, text

GRID_CSS = asset("grid.css")
MATH_CSS = asset("formulas.css")
SECTIONS_CSS = asset("sections.css")


class Stage:
    """The views on screen, the section's words around them, and lecture mode.

    Parameters
    ----------
    scenario : Scenario
        Says which section, which views (``views``) and whether lecture mode.
    figure : callable
        ``figure(key)``: view ``key``'s Bokeh figure, up to date.
    titles : callable
        ``titles()``: every view's title as on screen.
    row_pick : pn.widgets.Widget
        Shown above the view of one query's logits: which row it shows.
    full_lab : str
        The title the embed layout's link to the full page names.
    relayout : callable
        ``relayout()``: the page lays out anew (bringing the views' figures up to
        date, then calling ``lay_out``) when a button here changes what is shown.
    """

    def __init__(
        self,
        scenario: Scenario,
        figure: Callable[[str], Model],
        titles: Callable[[], dict[str, str]],
        row_pick: pn.widgets.Widget,
        full_lab: str,
        relayout: Callable[[], None],
    ):
        self.scenario, self._figure, self._titles = scenario, figure, titles
        self._row_pick, self._full_lab, self._relayout = row_pick, full_lab, relayout
        self.cards = {}  # by view, built when first on screen (_card)
        self.captions = {}  # each card's caption pane, by view
        self.lecture_view = 0  # the view lecture mode shows, an index into lecture_views()
        s = scenario
        self.section_pick = pn.widgets.RadioButtonGroup(
            name="Section",
            options={section_label(name): name for name in SECTIONS},
            value=s.section,
            button_type="primary",
            button_style="outline",
            sizing_mode="stretch_width",
            stylesheets=[FOCUS_CSS, WRAP_CSS, SECTIONS_CSS, SCREEN_ONLY_CSS],
        )
        self.section_pick.param.watch(lambda e: setattr(s, "section", e.new), "value")
        s.param.watch(lambda e: setattr(self.section_pick, "value", e.new), "section")
        self.next_section = pn.widgets.Button(name="Next section →", width=260)
        self.next_section.on_click(lambda _: self.open_section(self._following_section()))
        self.grid = pn.Column(
            sizing_mode="stretch_width", styles=_grid(420), stylesheets=[GRID_CSS]
        )
        self.section_intro = pn.pane.Markdown(
            "",
            sizing_mode="stretch_width",
            margin=(0, 10),
            name="section-intro",
            stylesheets=[TEXT_CSS, GLOSSARY_CSS, QUIET_CSS],
        )
        self.previous_view = pn.widgets.Button(name="← Previous view", width=150)
        self.previous_view.on_click(lambda _: self.turn(-1))
        self.next_view = pn.widgets.Button(name="Next view →", width=150)
        self.next_view.on_click(lambda _: self.turn(1))
        self.lecture_where = pn.pane.HTML("", disable_math=True, margin=(12, 10))
        leave = pn.widgets.Button(name="Leave lecture mode", width=170)
        leave.on_click(lambda _: setattr(s, "lecture", False))
        self.lecture_nav = pn.Row(  # wraps on a phone, whose width lecture type overruns
            self.previous_view,
            self.lecture_where,
            self.next_view,
            leave,
            visible=False,
            styles={"flex-wrap": "wrap"},
            stylesheets=[SCREEN_ONLY_CSS],
        )
        self.full_lab_link = pn.pane.HTML(
            "", visible=False, margin=(0, 10), styles=SMALL, name="full-lab", stylesheets=[TEXT_CSS]
        )
        self.key_note = pn.pane.Markdown(
            explain_terms(text("page", "key note")),
            sizing_mode="stretch_width",
            styles=SMALL,
            stylesheets=[GLOSSARY_CSS],
        )
        self.summary_title = pn.pane.Markdown(
            f"## {text('page', 'headings', 'summary')}", margin=(0, 10), stylesheets=[TEXT_CSS]
        )

    @property
    def widgets(self) -> list[pn.widgets.Widget]:
        """The controls of what is on screen (disabled until the page is live)."""
        return [self.section_pick, self.next_section]

    def lecture_views(self) -> list[str]:
        """The views lecture mode steps through: the embed layout's, or every view."""
        return list(self.scenario.views or VIEWS)

    def shown_views(self) -> list[str]:
        """The views on screen: the section's (the full page), the embed layout's (no
        explainer, no sharing), or in lecture mode one of those at a time."""
        s = self.scenario
        if s.lecture:
            if s.views is None and not SECTIONS[s.section]:
                return []  # the stability section: its table only
            return [self.lecture_views()[self.lecture_view]]
        return list(s.views or SECTIONS[s.section])

    def start_lecture(self):
        """Lecture mode from the first view of the section on screen."""
        views, section = self.lecture_views(), SECTIONS[self.scenario.section]
        self.lecture_view = views.index(section[0]) if section and section[0] in views else 0
        self.scenario.lecture = True

    def lecture_to(self, view: str):
        """In lecture mode, show ``view`` next (if lecture mode steps through it)."""
        views = self.lecture_views()
        if self.scenario.lecture and view in views:
            self.lecture_view = views.index(view)

    def open_section(self, section: str):
        """Put ``section`` on screen (the page's watcher then lays it out), or lay out
        again the one that is there."""
        if section != self.scenario.section:
            self.scenario.section = section
        else:
            self._relayout()

    def turn(self, by: int):
        """Show the next (``by`` = 1) or previous (-1) view in lecture mode, and open its
        section."""
        self.lecture_view += by
        if self.scenario.views is None:
            self.open_section(section_of(self.lecture_views()[self.lecture_view]))
        else:
            self._relayout()

    def lay_out(self):
        """Lay out what ``shown_views`` says, and the section's words around it.

        The views' figures are asked for (``figure``) as they are laid out, so
        the caller brings them up to date first.
        """
        s = self.scenario
        embed = s.views is not None
        views = self.lecture_views()
        self.lecture_view = min(self.lecture_view, len(views) - 1)
        if s.lecture and not embed:  # the section follows the view (and a view its section)
            section = SECTIONS[s.section]
            if section and views[self.lecture_view] not in section:
                self.lecture_view = views.index(section[0])
        shown = self.shown_views()
        self.grid.objects = [self._card(key) for key in shown]
        # One column of views when embedded or in lecture mode: the frame's height then
        # hardly depends on its width, so the embed code's height fits (EMBED_HEIGHT).
        self.grid.styles = _grid(10_000 if embed or s.lecture else 420)
        self.section_intro.object = section_intro_markdown(s.section)
        # On a phone its title is left to screen readers, when its button says it.
        quiet = [] if s.lecture else [QUIET_CSS]
        self.section_intro.stylesheets = [TEXT_CSS, GLOSSARY_CSS, *quiet]
        self.section_intro.visible = not embed
        self.section_pick.visible = not (embed or s.lecture)
        following = self._following_section()
        self.next_section.visible = following is not None and not (embed or s.lecture)
        if following:
            self.next_section.name = f"Next: {section_title(following)} →"
        self.key_note.visible = self.summary_title.visible = bool(shown)
        self.lecture_nav.visible = s.lecture
        self.lecture_where.object = text(
            "page",
            "lecture where",
            numbers={
                "number": self.lecture_view + 1,
                "count": len(views),
                "title": html.escape(self._titles()[views[self.lecture_view]]),
            },
        )
        self.previous_view.disabled = self.lecture_view == 0
        self.next_view.disabled = self.lecture_view == len(views) - 1
        self.full_lab_link.visible = embed

    def build_cards(self):
        """Build every view's card now (for the memory snapshot: a section's first visit
        then lays out its cards, and costs about what a later visit does)."""
        for key in VIEWS:
            self._card(key)

    def link_full_lab(self, query: str):
        """The embed layout's link to the full page at ``query``."""
        self.full_lab_link.object = text(
            "page", "full lab link", numbers={"href": html.escape(query), "title": self._full_lab}
        )

    def show_captions(self, captions: dict[str, str]):
        """Each view's caption (Markdown) in its card, where it changed (a card not built
        yet gets its caption once it is laid out)."""
        for key, caption in captions.items():
            pane = self.captions.get(key)
            caption = explain_terms(caption)
            if pane is not None and pane.object != caption:
                pane.object = caption

    def _following_section(self) -> str | None:
        """The section after the one on screen (None after the last)."""
        return dict(itertools.pairwise(SECTIONS)).get(self.scenario.section)

    def _card(self, key: str) -> pn.Column:
        """View ``key``'s figure with its caption and formula (built once, when first
        on screen)."""
        if key not in self.cards:
            above = [self._row_pick] if key == "row_logits" else []
            self.captions[key] = pn.pane.Markdown(
                "",
                sizing_mode="stretch_width",
                margin=(0, 10),
                stylesheets=[GLOSSARY_CSS],
                name=f"caption:{key}",
            )
            self.cards[key] = pn.Column(
                *above,
                pn.pane.Bokeh(self._figure(key), sizing_mode="stretch_width"),
                self.captions[key],
                pn.pane.LaTeX(
                    formula_html(FORMULAS[key]),
                    sizing_mode="stretch_width",
                    margin=(0, 10),
                    stylesheets=[MATH_CSS],
                    name=f"formula:{key}",
                ),
                sizing_mode="stretch_width",
                name=f"view:{key}",
            )
        return self.cards[key]


def _grid(min_width: int) -> dict:
    """CSS for as many columns of at least ``min_width`` px as fit (down to one).

    A CSS grid on a Column instead of a FlexBox: FlexBox sanitises its HTML
    with nh3, which the browser build leaves out.
    """
    return {
        "display": "grid",
        "grid-template-columns": f"repeat(auto-fill, minmax(min(100%, {min_width}px), 1fr))",
        "column-gap": "12px",
    }


def section_intro_markdown(section: str) -> str:
    """A section's title and what it shows (sitebuild.first_text paints the first
    section's first too)."""
    return f"## {section_title(section)}\n{explain_terms(text('sections', section, 'intro'))}"
