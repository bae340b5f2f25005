"""The Panel page: the sections on screen, the controls beside them, URL sync, sharing.

``AttentionLab`` wires the controls (``app.controls``) to its ``Scenario``,
recomputes with ``app.simulation`` and pushes new data into the figures of the
sections on screen (``app.sections``): a section is built when it first comes
on screen, and brought up to date whenever it does. The training runs are
computed in the background (``app.background``); the questions and the share
box have their own modules (``app.question_box``, ``app.share_box``). The same
object runs under ``panel serve``, in a notebook and in Pyodide.

The page is *live* once the scenario of its link is applied: at once under
``panel serve``; in the browser build when the page has told the worker its
URL. Until then the controls are disabled (a move could not take effect) and
the hidden ``lab-state`` marker says ``loading``; the page's status bar waits
for ``live`` before it says ready.
"""

import html
import io
import itertools
import random
from functools import partial
from urllib.parse import parse_qsl, urlencode

import numpy as np
import panel as pn
from bokeh.models import CustomJS, Div
from panel.io import hold

from app.asset import asset
from app.background import swept, train_in_groups, trained
from app.captions import (
    CAPTIONS,
    EXPLAINER,
    KEY_NOTE,
    SECTION_INTROS,
    formula_clauses,
    key_css,
    row_summaries,
    rule_key_label,
    section_label,
    summaries,
    summary_html,
    training_summaries,
)
from app.controls import FOCUS_CSS, WRAP_CSS, ControlNames, Scenario, scenario_widgets
from app.environment import in_browser, making_snapshot, prerendering, runtime, theory_link
from app.export import scenario_csv
from app.panes import SMALL, text_pane
from app.question_box import QuestionBox
from app.questions import Evidence, question
from app.scenario import (
    D_K_OPTIONS,
    DEFAULTS,
    FIELDS,
    SECTIONS,
    SEED_RANGE,
    VIEWS,
    read_query,
    section_of,
    write_query,
)
from app.sections import SECTION_FIGURES, VIEW_TITLES, Results
from app.sections.figures import model_heads_source
from app.sections.stability import Stability
from app.share_box import ShareBox
from app.simulation import (
    SCALING_RULES,
    Settings,
    median_row,
    row_metrics,
    saturated_share,
    simulate,
)

TITLE = "Attention Scaling Lab"
LAYOUT_STYLES = {"max-width": "1400px", "margin": "0 auto"}
# Lecture mode, for a projector: every widget's and pane's type larger (Bokeh's widgets
# read --bokeh-font-size; the figures' own text is set by SectionFigures.show_lecture).
LECTURE_STYLES = {"font-size": "20px", "--bokeh-font-size": "18px"}
assert set(CAPTIONS) == set(VIEWS)


# The CSS and JavaScript the page sends to the browser (each file says what it does).
BODY_CSS = asset("layout.css")
MATH_CSS = asset("formulas.css")
PHONE_CSS = asset("phone.css")
SECTIONS_CSS = asset("sections.css")
TEXT_CSS = asset("text.css")
SCROLL_JS = asset("scroll.js")


class AttentionLab(pn.viewable.Viewer):
    """The whole page. ``AttentionLab().servable()`` publishes it."""

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = Scenario()
        # Built when first on screen (_section); what each has not yet shown (_refresh).
        self.sections, self.cards = {}, {}
        self._stale = {name: set(kind.READS) for name, kind in SECTION_FIGURES.items()}
        self._models = model_heads_source()  # shared by every figure against d_k
        self._applied_search = None
        self._runs, self._runs_for = {}, None  # {d_k: {rule: TrainingRun}}, and for what
        self._scrolls = 0  # how often an answer's view was brought into sight
        self._lecture_view = 0  # the view lecture mode shows, an index into the shown views
        self._build_widgets()
        self._build_layout()
        self.scenario.param.watch(self._on_change, list(FIELDS))
        self.scenario.param.watch(self._show_views, ["views", "lecture", "section"])
        self.scenario.param.watch(lambda _: self._write_url(), ["lecture", "section"])
        self.scenario.param.watch(self._open_question, ["question", "step"])
        self._update(curves=True)
        if in_browser() and not making_snapshot():
            # Python started from scratch in a browser (no snapshot): the page goes live
            # first, and trains in the background then (see _go_live).
            self._show_training()
        else:
            self._train_now()
        self._show_views()
        if making_snapshot():  # built in the snapshot, not when first opened
            for name in SECTIONS:
                self._section(name)
        location = pn.state.location
        if prerendering():
            return  # the prerendered page stays "loading": its controls cannot act
        if in_browser() and location is not None:
            # The worker learns the page's URL after it has rendered: the location
            # message sets href (and search, if any), then the link's scenario applies.
            location.param.watch(lambda *_: self._go_live(), ["href", "search"])
            return
        if location is not None:
            location.param.watch(lambda _: self._read_url(), "search")
        self._go_live()  # panel serve (the request's query is known now) or a notebook
        pn.state.onload(self._scroll_to_step)  # a link's question: once the page is shown

    # --- widgets -------------------------------------------------------------------------

    def _build_widgets(self):
        s = self.scenario
        self.widgets = scenario_widgets(s)
        self.section_pick = pn.widgets.RadioButtonGroup(
            name="Section",
            options={section_label(name): name for name in SECTIONS},
            value=s.section,
            button_type="primary",
            button_style="outline",
            sizing_mode="stretch_width",
            stylesheets=[FOCUS_CSS, WRAP_CSS, SECTIONS_CSS],
        )
        self.section_pick.param.watch(lambda e: setattr(s, "section", e.new), "value")
        s.param.watch(lambda e: setattr(self.section_pick, "value", e.new), "section")
        self.next_section = pn.widgets.Button(name="Next section →", width=260)
        self.next_section.on_click(lambda _: self._open_section(self._next_section()))
        self.new_draw = pn.widgets.Button(name="New draw", button_type="primary", width=110)
        self.new_draw.on_click(lambda _: setattr(s, "seed", random.randrange(SEED_RANGE[1] + 1)))
        self.shown_rules = pn.widgets.CheckButtonGroup(
            name="Curves shown",
            options={rule_key_label(r): r for r in SCALING_RULES},
            value=list(SCALING_RULES),
            button_type="default",
            sizing_mode="stretch_width",
            stylesheets=[key_css(), FOCUS_CSS],
        )
        self.shown_rules.param.watch(self._show_rules, "value")
        self.row_pick = pn.widgets.Select(
            name="Query row",
            options={"the median row": -1, **{str(i + 1): i for i in range(Settings.n_queries)}},
            value=-1,
            width=160,
        )
        self.row_pick.param.watch(lambda _: self._pick_row(), "value")

    def _go_live(self):
        """Apply the link's scenario, then enable the controls and mark the page live."""
        self._read_url()
        if self.state.text == "live":
            return
        self._train_later()  # done already, unless Python started from scratch
        for widget in self._until_live:
            widget.disabled = False
        self.state.text = "live"

    def _on_change(self, *events):
        changed = {e.name for e in events}
        with hold():
            if changed - {"learning_rate"}:
                self._update(curves=bool(changed - {"d_k", "scaling", "learning_rate"}))
            self._train_later()
        self._write_url()

    # --- computing -----------------------------------------------------------------------

    def _update(self, curves: bool):
        settings = self.scenario.settings()
        with hold():
            if curves:
                self.curves = swept(settings)
            snap = self._snap = simulate(settings)
            unscaled = self._unscaled = snap.q @ snap.k.T / settings.temperature
            self._medians = {name: float(np.median(v)) for name, v in row_metrics(snap).items()}
            self._share = float(saturated_share(snap.max_weight))
            self._lines = summaries(
                settings, snap, unscaled, self._medians, self._share, self.curves
            )
            self._choose_row()
            self._refresh(*(["curves"] * curves), "snapshot", "row")

    def _choose_row(self):
        """The query row up close (the picked one, or the median row) and its words."""
        snap = self._snap
        self._row = self.row_pick.value if self.row_pick.value >= 0 else median_row(snap)
        self._lines |= row_summaries(snap, self._unscaled, self._row)

    def _pick_row(self):
        """Another row picked: its views, their words, and an answer that reads the row.
        (A move shows the summary and the answer once, after the training views.)"""
        with hold():
            self._choose_row()
            self._refresh("row")
            self._show_summary()
            self._show_answer()

    def _results(self) -> Results:
        return Results(
            settings=self.scenario.settings(),
            curves=self.curves,
            snap=self._snap,
            unscaled=self._unscaled,
            medians=self._medians,
            share=self._share,
            row=self._row,
            runs=self._runs,
            complete=len(self._runs) == len(D_K_OPTIONS),
        )

    # --- sections ------------------------------------------------------------------------

    def _section(self, name: str):
        """Section ``name``'s figures (or table), built the first time it is asked for."""
        if name not in self.sections:
            kind = SECTION_FIGURES[name]
            built = kind(self.precision) if kind is Stability else kind(self._models)
            built.show_rules(self.shown_rules.value)
            built.show_lecture(self.scenario.lecture)
            self.sections[name] = built
        return self.sections[name]

    def _sections_on_screen(self) -> list[str]:
        s = self.scenario
        names = {section_of(view) for view in self._shown_views()}
        if s.views is None and s.section == "stability":
            names.add("stability")
        return [name for name in SECTIONS if name in names]

    def _refresh(self, *parts: str):
        """``parts`` of the results changed: show them in the sections on screen; the
        others show them when they come on screen."""
        for name, kind in SECTION_FIGURES.items():
            self._stale[name] |= kind.READS & set(parts)
        self._show_stale()

    def _show_stale(self):
        """Bring the sections on screen up to date (building any never shown)."""
        results = None
        for name in self._sections_on_screen():
            section = self._section(name)
            if self._stale[name]:
                results = results or self._results()
                section.show(results, self._stale[name])
                self._stale[name] = set()

    def _show_rules(self, event):
        for section in self.sections.values():
            section.show_rules(event.new)

    def _titles(self) -> dict[str, str]:
        """Every view's title as on screen."""
        shown = self.sections.values()
        return VIEW_TITLES | {key: f.title.text for s in shown for key, f in s.figures.items()}

    # --- training ------------------------------------------------------------------------

    def _train_now(self):
        """Train at every d_k for the current scenario, all at once (a new page)."""
        self._runs_for = self.scenario.training()
        settings, learning_rate = self._runs_for
        self._runs = dict(trained(settings, learning_rate))  # a copy: more runs join it
        self._show_training()

    def _train_later(self):
        """Train for the current scenario unless that is done or under way; until then
        the training views say so. Runs in the background, a group of d_k at a time."""
        wanted = self.scenario.training()
        if wanted == self._runs_for:
            self._show_training()
            return
        self._runs_for, self._runs = wanted, {}
        self._show_training()
        runs_for = self._runs_for
        pn.state.execute(
            partial(
                train_in_groups,
                *runs_for,
                first_d_k=self.scenario.d_k,
                wanted=lambda: runs_for == self._runs_for,
                add=self._add_runs,
            )
        )

    def _add_runs(self, runs: dict, group: list[int]):
        """A group of d_k trained (``background.train_in_groups``): show the current
        d_k's runs, or the sweep once complete (else nothing new shows)."""
        self._runs |= runs
        if self.scenario.d_k in group or len(self._runs) == len(D_K_OPTIONS):
            with hold():
                self._show_training()

    def _show_training(self):
        """The runs at the current d_k (once computed) and the sweep (once complete)."""
        s = self.scenario
        runs = self._runs.get(s.d_k)
        complete = len(self._runs) == len(D_K_OPTIONS)
        self._refresh("training")
        self.training_state.text = "trained" if complete else "training"
        self._lines |= training_summaries(
            s.settings(), s.learning_rate, s.training()[0].n_keys, runs, self._runs, complete
        )
        self._show_summary()
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
        self._write_url()

    def _scroll_to_step(self):
        """Open the section of the open step's view and bring the view into sight
        (SCROLL_JS, in the browser); in lecture mode, show that view."""
        s = self.scenario
        if s.question is not None:
            view = question(s.question).steps[s.step].view
            views = self._lecture_views()
            if s.lecture and view in views:
                self._lecture_view = views.index(view)
            if s.views is None:
                self._open_section(section_of(view))
            else:
                self._show_views()
            self._scrolls += 1
            self.scroll.text = f"{view} {self._scrolls}"

    def _csv_file(self) -> io.StringIO:
        """The scenario on screen as CSV (app.export), for the download button."""
        return io.StringIO(scenario_csv(self._query(), self.curves, self._snap, self._runs))

    def _show_answer(self):
        """The open question's box, read from what is on screen now."""
        s = self.scenario
        self.questions.show(
            Evidence(s.settings(), s.learning_rate, self._snap, self.curves, self._runs, self._row)
        )

    def _show_summary(self):
        self.summary.object = summary_html(self._titles(), self._lines, self._shown_views())

    # --- URL -----------------------------------------------------------------------------

    def _read_url(self):
        """Apply the URL's query; show what had to change; put the fixed query in the URL."""
        location = pn.state.location
        if location is None or location.search == self._applied_search:
            return
        values, notices = read_query(dict(parse_qsl(location.search.lstrip("?"))))
        self._applied_search = location.search
        self.notice.object = "\n".join(f"- {html.escape(n)}" for n in notices)
        self.notice.visible = bool(notices)
        if "views" in values:
            values["views"] = list(values["views"])
        # An open question sets its step's scenario; the link's own values then win.
        self.scenario.param.update(
            **{name: values.pop(name) for name in ("question", "step") if name in values}
        )
        self.scenario.param.update(**values)
        if location.search and location.search != self._query():
            self._write_url()

    def _query(self) -> str:
        return "?" + urlencode(write_query(self.scenario.param.values()), safe="/")

    def _write_url(self):
        location = pn.state.location
        if location is None or self._applied_search is None:
            return  # before the URL was read, there is nothing to keep in sync
        # Exactly the scenario: parameters that were ignored or corrected are not carried
        # on. Recorded as applied first: setting the search calls _read_url back.
        self._applied_search = self._query()
        location.search = self._applied_search

    # --- layout --------------------------------------------------------------------------

    def _build_layout(self):
        self.notice = pn.pane.Alert(
            "", alert_type="warning", visible=False, name="url-notice", sizing_mode="stretch_width"
        )
        # One HTML pane for the text summary of every plot, one change per move. Panel's
        # HTML view only swaps its inner HTML; a Bokeh Div re-laid out the whole page on
        # every text change (about 40 ms of each move in a browser).
        self.summary = text_pane("lab-summary")
        self.precision = text_pane("lab-precision")
        self.state = Div(text="loading", name="lab-state", visible=False)
        # Hidden too: "training" until the runs at every d_k are done, then "trained" (the
        # training views, which say so in their titles, may be off screen).
        self.training_state = Div(text="training", name="lab-training", visible=False)
        self.scroll = Div(text="", name="lab-scroll", visible=False)
        self.scroll.js_on_change("text", CustomJS(code=SCROLL_JS))
        self.questions = QuestionBox(self.scenario)
        self.share = ShareBox(self.scenario, self._csv_file, self._start_lecture, TITLE)
        # Disabled until the link's scenario is applied (see _go_live).
        self._until_live = [
            *self.widgets.values(),
            self.section_pick,
            self.next_section,
            self.new_draw,
            self.shown_rules,
            self.share.embed_views,
            self.row_pick,
            *self.questions.widgets,
        ]
        for widget in self._until_live:
            widget.disabled = True
        w = self.widgets
        group = {"sizing_mode": "stretch_width", "margin": 0}
        self.controls = pn.Column(
            self.questions,
            pn.Column(
                pn.pane.Markdown(
                    "**Scaling rule** (c in softmax(c Q Kᵀ / T))",
                    margin=(0, 10),
                    stylesheets=[TEXT_CSS],
                ),
                w["scaling"],
                w["alpha"],
                **group,
            ),
            pn.Column(w["d_k"], w["n_keys"], **group),
            pn.Column(w["variance"], w["temperature"], **group),
            pn.Column(
                pn.pane.Markdown("**Training run** (the last three views)", margin=(5, 10, 0, 10)),
                w["learning_rate"],
                **group,
            ),
            pn.Column(
                pn.Row(w["seed"], self.new_draw, **group),
                pn.pane.Markdown("**Curves shown** (press to hide a rule)", margin=(5, 10, 0, 10)),
                self.shown_rules,
                **group,
            ),
            self.share,
            ControlNames(width=0, height=0, margin=0),
            sizing_mode="stretch_width",
            css_classes=["lab-controls"],
            name="lab-controls",
        )
        # Only the views on screen are in the grid (_show_views): a figure out of it is
        # out of the browser's document, so a move neither sends nor draws its data; it
        # comes back with the data of the scenario on screen then.
        self.grid = pn.Column(sizing_mode="stretch_width", styles=_grid(420))
        self.section_intro = pn.pane.Markdown(
            "",
            sizing_mode="stretch_width",
            margin=(0, 10),
            name="section-intro",
            stylesheets=[TEXT_CSS],
        )
        self.previous_view = pn.widgets.Button(name="← Previous view", width=150)
        self.previous_view.on_click(lambda _: self._turn_lecture(-1))
        self.next_view = pn.widgets.Button(name="Next view →", width=150)
        self.next_view.on_click(lambda _: self._turn_lecture(1))
        self.lecture_where = pn.pane.HTML("", disable_math=True, margin=(12, 10))
        leave = pn.widgets.Button(name="Leave lecture mode", width=170)
        leave.on_click(lambda _: setattr(self.scenario, "lecture", False))
        self.lecture_nav = pn.Row(
            self.previous_view, self.lecture_where, self.next_view, leave, visible=False
        )
        self.stability = pn.Column(  # not in the embed layout: it shows the views only
            pn.pane.Markdown("### Numerical stability, concretely", margin=(0, 10)),
            self.precision,
            sizing_mode="stretch_width",
            name="lab-stability",
        )
        self.full_lab_link = pn.pane.HTML(
            "", visible=False, margin=(0, 10), styles=SMALL, name="full-lab"
        )
        self.key_note = pn.pane.Markdown(KEY_NOTE, sizing_mode="stretch_width", styles=SMALL)
        self.summary_title = pn.pane.Markdown("### The plots in numbers", margin=(0, 10))
        views = pn.Column(
            self.section_pick,
            self.section_intro,
            self.lecture_nav,
            self.grid,
            self.full_lab_link,
            self.stability,
            pn.Row(self.next_section, margin=0),
            self.key_note,
            self.summary_title,
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
        self.header = pn.Column(
            pn.pane.Markdown(
                f"# {TITLE}\nWhy attention divides Q Kᵀ by √d_k: move the sliders and watch "
                f"the softmax saturate. {theory_link()}",
                sizing_mode="stretch_width",
                stylesheets=[TEXT_CSS],
            ),
            pn.Card(
                pn.pane.Markdown(EXPLAINER, sizing_mode="stretch_width"),
                title="Why scale at all? Why √d_k?",
                collapsed=True,  # the first screen: the controls and the first plots
                sizing_mode="stretch_width",
                stylesheets=[FOCUS_CSS],
            ),
            sizing_mode="stretch_width",
        )
        self.layout = pn.Column(
            self.header,
            self.notice,
            self.body,
            pn.pane.Markdown(runtime(), name="runtime", styles=SMALL),
            pn.pane.Bokeh(self.state),
            pn.pane.Bokeh(self.training_state),
            pn.pane.Bokeh(self.scroll),
            sizing_mode="stretch_width",
            styles=LAYOUT_STYLES,
            stylesheets=[PHONE_CSS],
        )

    def _card(self, key):
        """View ``key``'s figure with its caption and formula (built once, when first
        on screen)."""
        if key in self.cards:
            return self.cards[key]
        caption, formula = CAPTIONS[key]
        above = [self.row_pick] if key == "row_logits" else []
        figure = self._section(section_of(key)).figures[key]
        self.cards[key] = pn.Column(
            *above,
            pn.pane.Bokeh(figure, sizing_mode="stretch_width"),
            pn.pane.Markdown(caption, sizing_mode="stretch_width", margin=(0, 10)),
            pn.pane.LaTeX(
                formula_html(formula),
                sizing_mode="stretch_width",
                margin=(0, 10),
                stylesheets=[MATH_CSS],
                name=f"formula:{key}",
            ),
            sizing_mode="stretch_width",
            name=f"view:{key}",
        )
        return self.cards[key]

    def _lecture_views(self) -> list[str]:
        """The views lecture mode steps through: the embed layout's, or every view."""
        return list(self.scenario.views or VIEWS)

    def _shown_views(self) -> list[str]:
        """The views on screen: the section's (the full page), the embed layout's (no
        explainer, no sharing), or in lecture mode one of those at a time."""
        s = self.scenario
        if s.lecture:
            section = SECTIONS[s.section]
            if s.views is None and not section:
                return []  # the stability section: its table only
            return [self._lecture_views()[self._lecture_view]]
        return list(s.views or SECTIONS[s.section])

    def _start_lecture(self):
        """Lecture mode from the first view of the section on screen."""
        views, section = self._lecture_views(), SECTIONS[self.scenario.section]
        self._lecture_view = views.index(section[0]) if section and section[0] in views else 0
        self.scenario.lecture = True

    def _next_section(self) -> str | None:
        """The section after the one on screen (None after the last)."""
        names = list(SECTIONS)
        return dict(itertools.pairwise(names)).get(self.scenario.section)

    def _open_section(self, section: str):
        """Put ``section`` on screen (its watcher lays it out), or lay out again the one
        that is there."""
        if section != self.scenario.section:
            self.scenario.section = section
        else:
            self._show_views()

    def _show_views(self, *_):
        """Lay out what ``_shown_views`` says, and the section's words around it."""
        s = self.scenario
        embed = s.views is not None
        views = self._lecture_views()
        self._lecture_view = min(self._lecture_view, len(views) - 1)
        if s.lecture and not embed:  # the section follows the view (and a view its section)
            section = SECTIONS[s.section]
            if section and views[self._lecture_view] not in section:
                self._lecture_view = views.index(section[0])
        shown = self._shown_views()
        self._show_stale()  # their data first: a view comes on screen with it
        self.grid.objects = [self._card(key) for key in shown]
        title, intro = SECTION_INTROS[s.section]
        self.section_intro.object = f"### {title}\n{intro}"
        self.section_intro.visible = not embed
        self.section_pick.visible = not (embed or s.lecture)
        following = self._next_section()
        self.next_section.visible = following is not None and not (embed or s.lecture)
        if following:
            self.next_section.name = f"Next: {SECTION_INTROS[following][0]} →"
        self.key_note.visible = self.summary_title.visible = bool(shown)
        self.stability.visible = not embed and s.section == "stability"
        self.header.visible = self.share.layout.visible = not embed
        self.questions.pick.visible = not embed  # an embed shows its link's question only
        self.body.css_classes = ["lab-body"] + ["lab-embed"] * embed + ["lab-lecture"] * s.lecture
        # One column of views when embedded or in lecture mode: the frame's height then
        # hardly depends on its width, so the embed code's height fits (EMBED_HEIGHT).
        self.grid.styles = _grid(10_000 if embed or s.lecture else 420)
        self.layout.styles = {**LAYOUT_STYLES, **(LECTURE_STYLES if s.lecture else {})}
        for section in self.sections.values():
            section.show_lecture(s.lecture)
        self.lecture_nav.visible = s.lecture
        self.lecture_where.object = (
            f"View {self._lecture_view + 1} of {len(views)}: "
            f"<b>{html.escape(self._titles()[views[self._lecture_view]])}</b>"
        )
        self.previous_view.disabled = self._lecture_view == 0
        self.next_view.disabled = self._lecture_view == len(views) - 1
        full = "?" + urlencode(
            {k: v for k, v in write_query(s.param.values()).items() if k != "views"},
            safe="/",
        )
        self.full_lab_link.object = (
            f'<a href="{html.escape(full)}" target="_blank" rel="noopener">'
            f"Open the full {TITLE} ↗</a> (explainer, every section, sharing)"
        )
        self.full_lab_link.visible = embed
        self._show_summary()

    def _turn_lecture(self, by: int):
        """Show the next (``by`` = 1) or previous (-1) view in lecture mode, and open its
        section."""
        self._lecture_view += by
        if self.scenario.views is None:
            self._open_section(section_of(self._lecture_views()[self._lecture_view]))
        else:
            self._show_views()

    def __panel__(self):
        return self.layout


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


def formula_html(tex: str) -> str:
    """``tex`` as inline formulas that wrap to the pane's width (``formula_clauses``)."""
    clauses = (
        " ".join(f"${html.escape(piece, quote=False)}$" for piece in pieces)
        for pieces in formula_clauses(tex)
    )
    return " ".join(f'<span class="formula-clause">{clause}</span>' for clause in clauses)
