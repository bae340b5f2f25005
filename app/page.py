"""The Panel page: the controls, the section on screen beside them, and what links them.

``AttentionLab`` wires the controls (``app.controls``) to its ``Scenario``,
recomputes with ``app.simulation`` and pushes new data into the figures of the
sections on screen (``app.sections``): a section is built when it first comes
on screen, and brought up to date whenever it does. Its parts have their own
modules: what is on screen and lecture mode (``app.stage``), the scenario in
the URL (``app.address``), the training runs (``app.background``), the
questions (``app.question_box``) and the share box (``app.share_box``). The
same object runs under ``panel serve``, in a notebook and in Pyodide.

The page is *live* once the scenario of its link is applied: at once under
``panel serve``; in the browser build when the page has told the worker its
URL. Until then the controls are disabled (a move could not take effect) and
the hidden ``lab-state`` marker says ``loading``; the page's status bar waits
for ``live`` before it says ready.
"""

import html
import io
import random

import panel as pn
from bokeh.models import CustomJS, Div
from panel.io import hold

from app.address import Address, link_scenario
from app.asset import asset
from app.background import Training, rates_state, swept
from app.captions import caption, summary
from app.controls import (
    FOCUS_CSS,
    TARGETS_CSS,
    TEXT_CSS,
    TRAINING_CONTROLS,
    Scenario,
    controls_column,
    scenario_widgets,
)
from app.draws import forget_draws
from app.environment import in_browser, making_snapshot, prerendering, runtime
from app.export import scenario_csv
from app.look_ahead import LookAhead
from app.options import DEFAULTS, FIELDS, SECTIONS, SEED_RANGE, section_of
from app.panes import PRINT_ONLY_CSS, SCREEN_ONLY_CSS, SMALL, page_header, text_pane
from app.patches import DocumentLink
from app.question_box import QuestionBox
from app.questions import question
from app.results import Results
from app.sections import SECTION_FIGURES, VIEW_TITLES
from app.sections.figures import drop_unused_glyphs, model_heads_source
from app.sections.stability import Stability
from app.share_box import ShareBox
from app.simulation import SCALING_RULES, Settings, median_row, simulate
from app.stage import Stage
from app.style import key_css, rule_key_label, rule_name
from app.theme import PageTheme
from app.words import plain_html, text

TITLE = "Attention Scaling Lab"
LAYOUT_STYLES = {"max-width": "1400px", "margin": "0 auto"}
# Lecture mode, for a projector: every widget's and pane's type larger (Bokeh's widgets
# read --bokeh-font-size; the figures' own text is set by SectionFigures.show_lecture).
LECTURE_STYLES = {"font-size": "20px", "--bokeh-font-size": "18px"}
TRAINED_VIEWS = set(SECTIONS["learning"])  # the views that read the training run


# The CSS and JavaScript the page sends to the browser (each file says what it does).
BODY_CSS = asset("layout.css")
UNSEEN_CSS = asset("unseen.css")
PHONE_CSS = asset("phone.css")
SCROLL_JS = asset("scroll.js")
SKIP_JS, SKIP_CSS = asset("skip.js"), asset("skip.css")
PRINT_FIGURES_JS = asset("print_figures.js")


def printed_scenario(s, trained: bool) -> str:
    """The scenario ``s`` in words, as a printed page shows it in place of the controls;
    with the training run's learning rate when a view of the training is ``trained``."""
    numbers = {
        **s.param.values(),
        "title": TITLE,
        "rule": rule_name(s.scaling, s.alpha),
    }
    words = text("page", "printed scenario", "settings", numbers)
    if trained:
        words += " " + text("page", "printed scenario", "learning rate", numbers)
    return words


class AttentionLab(pn.viewable.Viewer):
    """The whole page. ``AttentionLab().servable()`` publishes it."""

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = Scenario(**link_scenario())
        # Built when first on screen (_section); what each has not yet shown (_refresh).
        self.sections = {}
        self._stale = {name: set(kind.READS) for name, kind in SECTION_FIGURES.items()}
        self._models = model_heads_source()  # shared by every figure against d_k
        self.training = Training(self.scenario, self._show_training)
        self._scrolls = 0  # how often an answer's view was brought into sight
        self._build_widgets()
        self._build_layout()
        self.scenario.param.watch(self._on_change, list(FIELDS))
        self.scenario.param.watch(self._show_views, ["views", "lecture", "section"])
        self.scenario.param.watch(lambda *_: self.address.write(), ["lecture", "section", "theme"])
        self.scenario.param.watch(self._open_question, ["question", "step"])
        self._update(curves=True)
        if in_browser() and not making_snapshot():
            # Python started from scratch in a browser (no snapshot): the page goes live
            # first, and trains in the background then (see go_live).
            self._show_training("training")
        else:
            self.training.now()
        self._show_views()
        if making_snapshot():  # built in the snapshot, not when first opened
            for name in SECTIONS:
                self._section(name)
            self.stage.build_cards()  # a section's first visit then only lays them out
            self.curves.complete()  # every section opens at once
            forget_draws()  # random numbers: 3.5 MB more to download, and quick to draw again
        location = pn.state.location
        if prerendering():
            return  # the prerendered page stays "loading": its controls cannot act
        if in_browser() and location is not None:
            # The worker learns the page's URL from its location message, which sets
            # href (and search, if any); then the link's scenario applies. Restored from
            # the snapshot, it learns it as it sends the document, and applies the
            # link's scenario while the page draws the document (the snapshot boot
            # of static/runtime/worker/main.js). A shared Python's later page
            # comes with its URL: its page is built at its link's scenario, and
            # app.worker makes it live once the page is in its document.
            location.param.watch(lambda *_: self.go_live(), ["href", "search"])
            return
        if location is not None:
            location.param.watch(lambda _: self.address.read(), "search")
        self.go_live()  # panel serve (the request's query is known now) or a notebook
        pn.state.onload(self._scroll_to_step)  # a link's question: once the page is shown
        pn.state.onload(self.theme.follow)  # the theme too: its marker acts in the page

    # --- widgets -------------------------------------------------------------------------

    def _build_widgets(self):
        s = self.scenario
        self.widgets = scenario_widgets(s)
        # Quick clicks while Python works merge into one: each would show a new draw
        # (sitebuild.runtime.MERGED_CLICKS; any other button's clicks all count).
        self.new_draw = pn.widgets.Button(
            name="New draw", button_type="primary", width=110, tags=["merged-clicks"]
        )
        self.new_draw.on_click(lambda _: setattr(s, "seed", random.randrange(SEED_RANGE[1] + 1)))
        self.shown_rules = pn.widgets.CheckButtonGroup(
            name="Curves shown",
            options={rule_key_label(r): r for r in SCALING_RULES},
            value=list(SCALING_RULES),
            button_type="default",
            sizing_mode="stretch_width",
            stylesheets=[key_css(SCALING_RULES), FOCUS_CSS],
        )
        self.shown_rules.param.watch(self._show_rules, "value")
        self.theme = PageTheme(s, self.shown_rules)
        # The theme marker changes once the page is drawn, in every document (status.html
        # sees to it on the built site): the figures' print hook is installed then.
        self.theme.marker.js_on_change("text", CustomJS(code=PRINT_FIGURES_JS))
        self.row_pick = pn.widgets.Select(
            name="Query row",
            options={"the median row": -1, **{str(i + 1): i for i in range(Settings.n_queries)}},
            value=-1,
            width=160,
        )
        self.row_pick.param.watch(lambda _: self._pick_row(), "value")
        self.stage = Stage(
            self.scenario,
            lambda key: self._section(section_of(key)).figures[key],
            self._titles,
            self.row_pick,
            TITLE,
            relayout=self._show_views,
        )

    def go_live(self):
        """Apply the link's scenario, then enable the controls and mark the page live
        (once the page's address is known and the page is in its document)."""
        self.address.read()
        if self.state.text == "live":
            return
        self._train_later()  # trained already, unless Python started from scratch
        for widget in self._until_live:
            widget.disabled = False
        if self.theme.marker.document is not None:  # the page has it (not yet under serve)
            self.theme.follow()
        self.share.show_snippet()  # the page's address is known now
        self.state.text = "live"
        if in_browser():  # its next d_k moves drawn ahead, once the page has the document
            DocumentLink.when_linked(self.state.document, lambda link: LookAhead(self, link))

    def _on_change(self, *events):
        changed = {e.name for e in events}
        with hold():
            if changed - {"learning_rate"}:
                self._update(curves=bool(changed - {"d_k", "scaling", "learning_rate"}))
            self._train_later()
        self.address.write()

    # --- computing -----------------------------------------------------------------------

    def _update(self, curves: bool):
        settings = self.scenario.settings()
        with hold():
            if curves:
                self.curves = swept(settings)
            self._draw = simulate(settings)
            self._choose_row()
            self._refresh(*(["curves"] * curves), "draw", "row")

    def _choose_row(self):
        """The query row up close (the picked one, or the median row), and the results
        that the views and the words read."""
        draw = self._draw
        self._row = self.row_pick.value if self.row_pick.value >= 0 else median_row(draw)
        self._new_results()

    def _new_results(self):
        s, t = self.scenario, self.training
        self.results = Results(
            s.settings(),
            s.learning_rate,
            self._draw,
            self.curves,
            t.runs,
            self._row,
            t.rates,
            t.rates_progress,
        )

    def _pick_row(self):
        """Another row picked: its views, their words, and an answer that reads the row.
        (A move shows the words and the answer once, after the training views.)"""
        with hold():
            self._choose_row()
            self._refresh("row")
            self._show_words()
            self._show_answer()

    # --- sections ------------------------------------------------------------------------

    def _section(self, name: str):
        """Section ``name``'s figures (or table), built the first time it is asked for."""
        if name not in self.sections:
            kind = SECTION_FIGURES[name]
            built = kind(self.precision) if kind is Stability else kind(self._models)
            drop_unused_glyphs(built.figures.values())
            built.show_rules(self.shown_rules.value)
            built.show_lecture(self.scenario.lecture)
            self.sections[name] = built
        return self.sections[name]

    def sections_on_screen(self) -> list[str]:
        s = self.scenario
        names = {section_of(view) for view in self.stage.shown_views()}
        if s.views is None and s.section == "stability":
            names.add("stability")
        return [name for name in SECTIONS if name in names]

    def _refresh(self, *parts: str):
        """``parts`` of the results changed: show them in the sections on screen; the
        others show them when they come on screen."""
        for name, kind in SECTION_FIGURES.items():
            self._stale[name] |= kind.READS & set(parts)
        self._show_stale()

    def show_figures(self, results):
        """Show the draw and row of ``results`` in the figures on screen, and nothing else
        (``app.look_ahead``: a move to another d_k, made and undone)."""
        for name in self.sections_on_screen():
            if name in self.sections and self.sections[name].figures:
                self.sections[name].show(results, {"draw", "row"})

    def _show_stale(self):
        """Bring the sections on screen up to date (building any never shown)."""
        for name in self.sections_on_screen():
            section = self._section(name)
            if self._stale[name]:
                section.show(self.results, self._stale[name])
                self._stale[name] = set()

    def _show_rules(self, event):
        for section in self.sections.values():
            section.show_rules(event.new)

    def _titles(self) -> dict[str, str]:
        """Every view's title as on screen."""
        shown = self.sections.values()
        return VIEW_TITLES | {key: f.title.text for s in shown for key, f in s.figures.items()}

    # --- training ------------------------------------------------------------------------

    def _train_later(self):
        """Train the scenario in the background (``Training.later``), and show at once the
        training's views at the current rule and d_k, whatever the training has done;
        then the words and the answer, once (a drag shows them once a move)."""
        self.training.later()
        self._show_training("training", "rates")

    def _show_training(self, *parts: str):
        """What of the training changed (``app.background.Training``, or a move), then
        the words and the answer once: ``"training"``, the runs at the current d_k
        (once computed) and the sweep (once complete); ``"rates"``, the learning-rate
        sweep (once done) or how far it has got."""
        self._new_results()  # the runs (or the learning rate) changed
        self._refresh(*parts)
        self.training_state.text = "trained" if self.training.complete else "training"
        self.rates_state.text = rates_state(self.training.rates)
        self._show_words()
        self._show_answer()

    # --- questions -----------------------------------------------------------------------

    def _open_question(self, *events):
        """Apply the open question's step: its scenario, its view in sight, its answer."""
        s = self.scenario
        if s.question is not None:
            steps = question(s.question).steps
            if s.step >= len(steps):
                s.step = len(steps) - 1  # a link past the last step: the last (re-enters)
                return
            if any(e.name == "question" for e in events):
                self.questions.revealed = False  # a new question: predict first
            s.param.update(**(DEFAULTS | steps[s.step].scenario))
            self._scroll_to_step()
        self._show_answer()
        self.address.write()

    def _scroll_to_step(self):
        """Open the section of the open step's view and bring the view into sight
        (SCROLL_JS, in the browser); in lecture mode, show that view."""
        s = self.scenario
        if s.question is not None:
            view = question(s.question).steps[s.step].view
            self.stage.lecture_to(view)
            if s.views is None:
                self.stage.open_section(section_of(view))
            else:
                self._show_views()
            self._scrolls += 1
            self.scroll.text = f"{view} {self._scrolls}"

    def _csv_file(self) -> io.StringIO:
        """The scenario on screen as CSV (app.export), for the download button."""
        t = self.training
        return io.StringIO(
            scenario_csv(self.address.query(), self.curves, self._draw, t.runs, t.rates)
        )

    def _show_answer(self):
        """The open question's box, read from what is on screen now."""
        self.questions.show(self.results)

    def _show_words(self):
        """The captions and the text summary of the views on screen (only what they read
        of the results is computed)."""
        views, titles = self.stage.shown_views(), self._titles()
        self.stage.show_captions({view: caption(view, self.results).text for view in views})
        items = "".join(
            f"<li><b>{html.escape(titles[view])}:</b> "
            f"{plain_html(summary(view, self.results).text)}</li>"
            for view in views
        )
        self.summary.object = f"<ul>{items}</ul>"
        trained = bool(set(views) & TRAINED_VIEWS)
        self.printed_scenario.object = printed_scenario(self.scenario, trained)

    # --- layout --------------------------------------------------------------------------

    def _build_layout(self):
        self.notice = pn.pane.Alert(
            "", alert_type="warning", visible=False, name="url-notice", sizing_mode="stretch_width"
        )
        self.address = Address(self.scenario, self.notice)
        # One HTML pane for the text summary of every plot, one change per move. Panel's
        # HTML view only swaps its inner HTML; a Bokeh Div re-laid out the whole page on
        # every text change (about 40 ms of each move in a browser).
        self.summary = text_pane("lab-summary")
        # On paper, the controls' values in words (the controls are not printed).
        self.printed_scenario = pn.pane.Markdown(
            "",
            css_classes=["lab-printed-scenario"],
            margin=(0, 10),
            stylesheets=[PRINT_ONLY_CSS],
        )
        self.precision = text_pane("lab-precision")
        self.state = Div(text="loading", name="lab-state", visible=False)
        # Hidden too: "training" until the runs at every d_k are done, then "trained" (the
        # training views, which say so in their titles, may be off screen).
        self.training_state = Div(text="training", name="lab-training", visible=False)
        # And "sweeping" until the learning-rate sweep is done, then "swept" until it is
        # checked for chaos, then "checked".
        self.rates_state = Div(text="sweeping", name="lab-rates", visible=False)
        self.scroll = Div(text="", name="lab-scroll", visible=False)
        self.scroll.js_on_change("text", CustomJS(code=SCROLL_JS))
        self.questions = QuestionBox(self.scenario)
        self.share = ShareBox(
            self.scenario, self.address.query, self._csv_file, self.stage.start_lecture, TITLE
        )
        # Disabled until the link's scenario is applied (see go_live).
        self._until_live = [
            *self.widgets.values(),
            *self.stage.widgets,
            self.new_draw,
            self.shown_rules,
            self.share.embed_views,
            self.row_pick,
            *self.questions.widgets,
        ]
        for widget in self._until_live:
            widget.disabled = True
        self.controls = controls_column(
            self.widgets, self.questions, self.new_draw, self.shown_rules, self.share
        )
        (self.training_controls,) = [c for c in self.controls if c.name == TRAINING_CONTROLS]
        self.stability = pn.Column(  # not in the embed layout: it shows the views only
            pn.pane.Markdown(
                f"## {text('page', 'headings', 'stability')}",
                margin=(0, 10),
                stylesheets=[TEXT_CSS],
            ),
            self.precision,
            sizing_mode="stretch_width",
            name="lab-stability",
        )
        stage = self.stage
        views = pn.Column(
            self.printed_scenario,
            stage.section_pick,
            stage.section_intro,
            stage.lecture_nav,
            stage.grid,
            stage.full_lab_link,
            self.stability,
            pn.Row(stage.next_section, margin=0, stylesheets=[SCREEN_ONLY_CSS]),
            stage.key_note,
            stage.summary_title,
            self.summary,
            sizing_mode="stretch_width",
        )
        self.body = pn.Column(
            self.controls,
            views,
            sizing_mode="stretch_width",
            css_classes=["lab-body"],
            stylesheets=[BODY_CSS],
        )
        self.header = page_header(TITLE)
        # The embed layout has no header: its title is left to screen readers.
        self.embed_title = pn.pane.HTML(
            f"<h1>{TITLE}</h1>", visible=False, stylesheets=[UNSEEN_CSS]
        )
        # A skip link past the controls, for the keyboard: out of sight until focused.
        skip = pn.widgets.Button(
            name=text("page", "skip"), stylesheets=[SKIP_CSS, FOCUS_CSS, SCREEN_ONLY_CSS]
        )
        skip.js_on_click(code=SKIP_JS)
        self.layout = pn.Column(
            skip,
            self.embed_title,
            self.header,
            self.notice,
            self.body,
            pn.pane.Markdown(runtime(), name="runtime", styles=SMALL),
            pn.pane.Bokeh(self.state),
            pn.pane.Bokeh(self.training_state),
            pn.pane.Bokeh(self.rates_state),
            pn.pane.Bokeh(self.scroll),
            pn.pane.Bokeh(self.theme.marker),
            sizing_mode="stretch_width",
            styles=LAYOUT_STYLES,
            stylesheets=[PHONE_CSS],
        )
        # (The row picker is laid out with its section's views, later.)
        for widget in [*self.layout.select(pn.widgets.Widget), self.row_pick]:
            widget.stylesheets = [*widget.stylesheets, TARGETS_CSS]

    def _show_views(self, *_):
        """Lay out what the stage shows (its views up to date first), and the page around."""
        s = self.scenario
        embed = s.views is not None
        self._show_stale()  # their data first: a view comes on screen with it
        self.stage.lay_out()
        self.stability.visible = not embed and s.section == "stability"
        self.header.visible = self.share.layout.visible = not embed
        self.embed_title.visible = embed
        # An embed shows the training run's controls only beside a view of the training.
        self.training_controls.visible = not embed or bool(set(s.views) & TRAINED_VIEWS)
        self.questions.pick.visible = not embed  # an embed shows its link's question only
        self.body.css_classes = ["lab-body"] + ["lab-embed"] * embed + ["lab-lecture"] * s.lecture
        self.layout.styles = {**LAYOUT_STYLES, **(LECTURE_STYLES if s.lecture else {})}
        for section in self.sections.values():
            section.show_lecture(s.lecture)
        self.stage.link_full_lab(self.address.query(views=None))
        self._show_words()
        self.theme.paint()  # what was laid out now, in the theme

    def __panel__(self):
        return self.layout
