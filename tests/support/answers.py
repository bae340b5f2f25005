"""What the page should show after a learner's action, and the check that it does.

``Expected`` is what a learner has set: the scenario, the section, the curves
shown, the open question, lecture mode and the query row. An action (in the
tests) says how it changes that; ``read_page`` reads, in one evaluate, what the
live page shows (its address, its controls, its views and their data); and
``disagreements`` lists every way the reading differs from ``Expected`` and
from what CPython computes for that scenario with the app's own sections
(``expected_sources``): the page's plots, words and address must all follow.
Engine-independent: ``read_page`` takes a Playwright page or an ``engines.Engine``.
"""

import functools
import html
import json
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl

import numpy as np
from browser import READ_SOURCES_JS

from app.background import rates_checked, rates_swept, swept, trained
from app.captions import summary
from app.controls import _SLIDER_SCALES, Scenario
from app.descent import descend
from app.options import D_K_OPTIONS, DEFAULTS, FIELDS, SECTIONS, VIEWS, section_of
from app.questions import question
from app.rates import CURVE_D_KS, LEARNING_RATES, drawn_rows, learning_rates, rates_steps
from app.results import Results
from app.scenario import read_query, write_query
from app.sections import SECTION_FIGURES, VIEW_TITLES
from app.sections.figures import model_heads_source
from app.sections.learning import rates_title, training_title
from app.sections.stability import precision_html
from app.simulation import SCALING_RULES, median_row, simulate
from app.style import RULE_NAMES, rule_key_label
from app.training import DEFAULT_STEPS, to_end
from app.words import plain_html

# The sliders by the title the page gives them (app.controls), and the keys of
# their scenario values.
SLIDER_TITLES = {
    "d_k (key dimension)": "d_k",
    "α of the ÷ d_k^α rule (1/2: √d_k)": "alpha",
    "variance v of q and k components": "variance",
    "n (number of keys)": "n_keys",
    "temperature T": "temperature",
    "learning rate η of the training run": "learning_rate",
}
DATA_RTOL = 1e-9  # numpy in the worker and here may round a last bit differently
# A run is smooth while its twin, nudged by 1e-12, stays within DATA_RTOL of it; the
# worker's rounding is another such nudge, and moves a smooth run about as far (seen:
# 1.0e-9, ÷ d_k^(1/3) at d_k = 2, η = 2): a smooth run's points agree to 10 times that.
SMOOTH_RTOL = 10 * DATA_RTOL


@dataclass(frozen=True)
class Expected:
    """What the learner has set, as the page should show it."""

    scenario: dict = field(default_factory=lambda: dict(DEFAULTS))
    section: str = "spread"
    shown: frozenset = frozenset(SCALING_RULES)  # the curves shown ("Curves shown")
    question: str | None = None
    step: int = 0
    revealed: bool = False
    lecture: bool = False
    lecture_view: int = 0  # an index into VIEWS, in lecture mode
    row: int = -1  # the query row up close (-1: the median row)
    unknown: frozenset = frozenset()  # scenario values the action chose (a drag, New draw)

    def query(self) -> dict:
        values = {
            **self.scenario,
            "section": self.section,
            "lecture": self.lecture,
            "question": self.question,
            "step": self.step,
        }
        return write_query(values)

    def views(self) -> list[str]:
        """The views on screen."""
        if self.lecture:
            return [VIEWS[self.lecture_view]] if SECTIONS[self.section] else []
        return list(SECTIONS[self.section])

    def sections(self) -> list[str]:
        names = {section_of(v) for v in self.views()}
        if not self.lecture and self.section == "stability":
            names.add("stability")
        return [name for name in SECTIONS if name in names]

    def with_scenario(self, **values) -> "Expected":
        return replace(self, scenario={**self.scenario, **values})

    def open_step(self, slug: str | None, step: int, new: bool) -> "Expected":
        """The question ``slug`` at ``step`` opened (``new``: picked, so not revealed)."""
        if slug is None:
            return replace(self, question=None, step=0, revealed=False)
        view = question(slug).steps[step].view
        lecture_view = VIEWS.index(view) if self.lecture and view in VIEWS else self.lecture_view
        return replace(
            self,
            question=slug,
            step=step,
            revealed=self.revealed and not new,
            scenario=DEFAULTS | question(slug).steps[step].scenario,
            section=section_of(view),
            lecture_view=lecture_view,
        )


# Everything read_page needs from the live document, in one evaluate: the address,
# the controls, the views on screen, each figure's renderers' visibility, the
# page's text panes and markers, and the sources named.
READ_PAGE_JS = f"""(names) => {{
  const doc = [...Bokeh.documents].at(-1);
  const models = [...doc.all_models];
  const onScreen = (m) => {{
    const el = Bokeh.index.find_one(m)?.el;
    return el?.isConnected === true && el.getClientRects().length > 0;
  }};
  const of = (type) => models.filter((m) => m.constructor.__name__ === type);
  const where = (m) => Bokeh.index.find_one(m).el.getBoundingClientRect();
  const shown = of('Column').filter((m) => m.name?.startsWith('view:') && m.visible
    && onScreen(m)).sort((a, b) => where(a).top - where(b).top || where(a).left - where(b).left)
    .map((m) => m.name.slice(5));
  const figures = {{}};
  for (const m of of('Figure')) {{
    if (shown.includes(m.name) && onScreen(m)) {{
      figures[m.name] = {{title: m.title.text, visible: m.renderers.map((r) => r.visible)}};
    }}
  }}
  const pane = (cls) => {{
    const m = of('HTML').find((m) => m.css_classes.includes(cls));
    return m ? {{text: m.text, visible: m.visible && onScreen(m)}} : null;
  }};
  const button = (label) => of('Button').find((m) => m.label === label && onScreen(m));
  return {{
    search: location.search,
    sliders: of('Slider').filter(onScreen).map((m) => [m.title, m.value]),
    radios: of('RadioButtonGroup').filter(onScreen).map((m) => [m.labels, m.active]),
    checks: of('CheckboxButtonGroup').filter(onScreen).map((m) => [m.labels, m.active]),
    selects: of('Select').filter(onScreen).map((m) => [m.title, m.value]),
    spinners: of('Spinner').filter(onScreen).map((m) => [m.title, m.value]),
    shown,
    figures,
    summary: pane('lab-summary'),
    precision: pane('lab-precision'),
    question: pane('lab-question'),
    answer: pane('lab-answer'),
    reveal: button('Reveal the answer') !== undefined,
    training: doc.get_model_by_name('lab-training')?.text,
    rates: doc.get_model_by_name('lab-rates')?.text,
    sources: ({READ_SOURCES_JS})(names),
  }};
}}"""


def read_page(page, expected: Expected) -> dict:
    """What the live page shows, read in one evaluate (after its answer: never while
    waiting for it)."""
    names = [name for view in expected.views() for name in source_names(view)]
    script = f"({READ_PAGE_JS})({json.dumps(names)})"
    return page.evaluate(script)


def summary_text(page) -> str:
    """The text of the page's summary pane, as read_page reads it."""
    return page.evaluate(f"({READ_PAGE_JS})([])")["summary"]["text"]


def source_names(view: str) -> list[str]:
    """The sources of ``view``'s figure: named ``<view>:...`` (``app.sections.figures``)."""
    return [name for name in _built(section_of(view)).sources if name.split(":")[0] == view]


_BUILT = {}


def _built(section: str):
    """One CPython copy of each section's figures, reused (``expected_sources``)."""
    if section not in _BUILT:
        _BUILT[section] = SECTION_FIGURES[section](model_heads_source())
    return _BUILT[section]


def results_of(expected: Expected, runs_done: bool, rates_done: str | bool, twin: bool = False):
    """The page's ``Results`` for ``expected``, computed here: the training runs and the
    learning-rate sweep as the page has them (done, or not yet; the sweep "swept" or
    "checked" for chaos, True for checked); ``twin``: those of the
    twin runs from the nudged start (``training.nudged``), each training run keeping
    the step from which it is chaotic."""
    s = Scenario(**{name: expected.scenario[name] for name in FIELDS})
    settings = s.settings()
    draw = simulate(settings)
    training, learning_rate = s.training()
    runs = trained(training, learning_rate) if runs_done else {}
    rates = None
    if rates_done:
        rates = rates_swept(training) if rates_done == "swept" else rates_checked(training)
    if twin:
        runs = {
            d_k: {rule: replace(r.twin, chaotic_from=r.chaotic_from) for rule, r in rules.items()}
            for d_k, rules in runs.items()
        }
        if rates_done == "swept":
            rates = to_end(rates_steps(training, nudge=True))
        elif rates_done:
            rates = learning_rates(training, nudge=True)
    return Results(
        settings,
        learning_rate,
        draw,
        swept(settings),
        runs,
        median_row(draw) if expected.row < 0 else expected.row,
        rates,
        1.0 if rates_done else 0.0,
    )


def expected_sources(section: str, results: Results, shown: frozenset, views) -> tuple:
    """CPython's sources of ``section``'s figures among ``views`` (the views on screen: a
    figure off screen is out of the page's document, and keeps what it last showed)
    for ``results``, by name, and those figures' renderers' visibility with the curves
    ``shown``."""
    built = _built(section)
    built.show(results, built.READS)
    built.show_rules(list(shown))
    data = {
        name: dict(source.data)
        for name, source in built.sources.items()
        if name.split(":")[0] in views
    }
    figures = {key: fig for key, fig in built.figures.items() if key in views}
    visible = {key: [r.visible for r in fig.renderers] for key, fig in figures.items()}
    return data, visible


def slider_values(reading: dict) -> dict:
    """The scenario values the sliders on the page show."""
    values = {}
    for title, value in reading["sliders"]:
        name = SLIDER_TITLES.get(title.strip())
        if name is not None:
            to_value = _SLIDER_SCALES.get(name, (lambda v: v, None))[0]
            values[name] = to_value(value)
    return values


def resolve(expected: Expected, reading: dict) -> Expected:
    """``expected`` with the values its action chose (``unknown``: a drag's, New draw's) as
    the address shows them; ``disagreements`` then checks the controls and plots agree."""
    if not expected.unknown:
        return expected
    values, _ = read_query(dict(parse_qsl(reading["search"].lstrip("?"))))
    chosen = {name: values.get(name, DEFAULTS[name]) for name in expected.unknown}
    return replace(expected.with_scenario(**chosen), unknown=frozenset())


def disagreements(reading: dict, expected: Expected) -> list[str]:
    """Every way ``reading`` (``read_page``) differs from ``expected`` and from CPython's
    figures for it; empty when the page follows."""
    problems = []
    query = dict(parse_qsl(reading["search"].lstrip("?")))
    if query != expected.query():
        problems.append(f"address {query} != {expected.query()}")
    scenario = expected.scenario
    sliders = slider_values(reading)
    for name, value in sliders.items():
        if not np.isclose(value, scenario[name], rtol=1e-9):
            problems.append(f"slider {name} shows {value}, expected {scenario[name]}")
    # Every slider, alpha's under the power rule only (where it acts).
    shown = {n for n in SLIDER_TITLES.values() if n != "alpha" or scenario["scaling"] == "power"}
    if set(sliders) != shown:
        problems.append(f"sliders on screen: {sorted(sliders)}, not {sorted(shown)}")
    rule_labels = [RULE_NAMES[r] for r in SCALING_RULES]
    key_labels = [rule_key_label(r) for r in SCALING_RULES]
    for labels, active in reading["radios"]:
        if labels == rule_labels and labels[active] != RULE_NAMES[scenario["scaling"]]:
            problems.append(f"rule button {labels[active]!r} pressed, not {scenario['scaling']}")
    for labels, active in reading["checks"]:
        if labels == key_labels:
            on = {SCALING_RULES[i] for i in active}
            if on != set(expected.shown):
                problems.append(f"curves shown {sorted(on)}, expected {sorted(expected.shown)}")
    seeds = [value for title, value in reading["spinners"] if title == "seed"]
    if seeds != [scenario["seed"]]:
        problems.append(f"seed box {seeds}, expected {scenario['seed']}")
    if reading["shown"] != expected.views():
        problems.append(f"views on screen {reading['shown']}, expected {expected.views()}")
    problems += _question_box(reading, expected)
    problems += _figures(reading, expected)
    return problems


def _question_box(reading: dict, expected: Expected) -> list[str]:
    problems = []
    box = reading["question"]
    if expected.question is None:
        if box is not None and box["visible"]:
            problems.append("a question box is on screen, none is open")
        return problems
    q = question(expected.question)
    if box is None or not box["visible"] or html.escape(q.text) not in html.unescape(box["text"]):
        problems.append(f"the question box does not show {q.text!r}")
    answer = reading["answer"]
    if bool(answer and answer["visible"]) != expected.revealed:
        problems.append(f"answer shown: {bool(answer and answer['visible'])}")
    if reading["reveal"] == expected.revealed:
        problems.append(f"reveal button on screen: {reading['reveal']}")
    return problems


# Until the runs at every d_k are trained the training views keep what they showed (or
# show the current d_k's runs, once trained), and until the learning rates are swept
# their views keep theirs: what the page's history left, which no expected state holds.
KEPT_TILL_TRAINED = ("training_loss:", "training_accuracy:", "training_sweep:")
KEPT_TILL_SWEPT = ("lr_sweep:", "best_loss:", "best_lr:")


def _figures(reading: dict, expected: Expected) -> list[str]:
    """The data, renderers and words of the sections on screen, against CPython's."""
    problems = []
    runs_done = reading["training"] == "trained"
    rates_done = reading["rates"] if reading["rates"] in ("swept", "checked") else False
    results = results_of(expected, runs_done, rates_done)
    shown = reading["sources"]
    for section in expected.sections():
        if section == "stability":
            precision = reading["precision"]
            if html.unescape(precision["text"]) != precision_html(results.draw.logits):
                problems.append("the stability table is not the draw's")
            continue
        data, visible = expected_sources(section, results, expected.shown, expected.views())
        smooth, twin = {}, {}
        if section == "learning":
            smooth = learning_smooth(expected, results)
            nudged = results_of(expected, runs_done, rates_done, twin=True)
            twin = expected_sources(section, nudged, expected.shown, expected.views())[0]
        kept = KEPT_TILL_TRAINED * (not runs_done) + KEPT_TILL_SWEPT * (not rates_done)
        for name, columns in data.items():
            if name not in shown:
                problems.append(f"source {name} missing")
            elif name.startswith(kept):
                continue  # what the page's history left there (its titles say so)
            elif name.startswith(EDGES):
                rule = name.split(":")[-1]
                rule = expected.scenario["scaling"] if rule in ("marker", "edge") else rule
                chaotic = chaotic_edges(results.rates)
                windows = window_etas(results.rates, rule) if name != "lr_sweep:edge" else None
                problems += compare_edges(name, shown[name], columns, twin[name], chaotic, windows)
            elif name == "best_lr:chaotic":
                continue  # where the worker's twin parts: test_training_views.py (on an edge)
            elif name.startswith(WINDOWS):
                edge = "best_lr:" + name.split(":")[-1]  # the rule's edges, page and here
                problems += compare_windows(
                    name, shown[name], columns, twin[name], shown[edge], data[edge]
                )
            else:
                problems += _compare_source(name, shown[name], columns, smooth.get(name))
        for key, flags in visible.items():
            if key in reading["figures"] and reading["figures"][key]["visible"] != flags:
                problems.append(f"figure {key}: renderers shown {reading['figures'][key]}")
    for key, figure in reading["figures"].items():
        title = VIEW_TITLES[key]
        if key in ("training_loss", "training_accuracy", "training_sweep"):
            title = training_title(key, runs_done)
        elif key in ("lr_sweep", "best_loss", "best_lr") and not rates_done:
            if not figure["title"].startswith(rates_title(key, False, 0).split("…")[0]):
                problems.append(f"figure {key} titled {figure['title']!r}")
            continue
        if figure["title"] != title:
            problems.append(f"figure {key} titled {figure['title']!r}, expected {title!r}")
    if not any(section_of(view) == "learning" for view in expected.views()):
        titles = VIEW_TITLES
        items = "".join(
            f"<li><b>{html.escape(titles[view])}:</b> "
            f"{plain_html(summary(view, results).text)}</li>"
            for view in expected.views()
        )
        if html.unescape(reading["summary"]["text"]) != f"<ul>{items}</ul>":
            problems.append("the summary is not the scenario's")
    return problems


# The learning section's sources are compared where the descent they draw is smooth:
# where it is chaotic the last bits of the worker's numpy and this machine's make the
# runs part (tests/test_training.py). A run is smooth up to the step at which its twin,
# trained from a start nudged by training.NUDGE (1e-12), parts from it by DATA_RTOL (an
# amplification under 1e3: the worker's last-bit differences, 1e-16, then move it by
# under 1e-13). Whole curves are compared, not final losses: a saturated run ends on a
# loss of k/n whatever its path. The edges, found by bisection through runs that are
# chaotic near the edge, are compared within EDGE_FACTOR.
EDGES = ("best_lr:none", "best_lr:sqrt", "best_lr:linear", "best_lr:power", "best_lr:marker")
EDGES += ("lr_sweep:edge",)
# The windows' points (the grid η near each edge that train, the holes, the × of a
# chaotic edge), compared where a twin agrees (``compare_windows``).
WINDOWS = ("best_lr:window:", "best_lr:holes:", "best_lr:chaotic")
EDGE_FACTOR = 1.5


def smooth_steps(run) -> np.ndarray:
    """Each step of ``run``'s loss: whether it is smooth (its twin has not parted)."""
    close = np.isclose(run.loss, run.twin.loss, rtol=DATA_RTOL, atol=0)
    return np.cumprod(close).astype(bool)


@functools.cache
def smooth_curves(training) -> dict:
    """``{rule: (CURVE_D_KS, LEARNING_RATES) bool}``: the learning-rate curves' runs that
    are smooth at every step, from their twins' whole curves (``rates.curve_steps``)."""
    rules = [rule for rule in SCALING_RULES for _ in LEARNING_RATES]
    etas = np.tile(LEARNING_RATES, len(SCALING_RULES))
    smooth = []
    for d_k in CURVE_D_KS:
        losses = []
        for nudge in (False, True):
            x, start = to_end(drawn_rows(training, d_k, nudge=nudge))
            runs = descend(training, x, [start] * len(rules), rules, DEFAULT_STEPS, etas)
            losses.append(to_end(runs)["loss"])
        close = np.isclose(*losses, rtol=DATA_RTOL, atol=0).all(axis=1)
        smooth.append(close.reshape(len(SCALING_RULES), len(LEARNING_RATES)))
    return {rule: np.array([each[j] for each in smooth]) for j, rule in enumerate(SCALING_RULES)}


def learning_smooth(expected: Expected, results: Results) -> dict:
    """Where each of the learning section's sources (but the edges) is smooth: ``{name:
    bool array over its points}``; a source not named is compared whole."""
    d_k, rule = expected.scenario["d_k"], expected.scenario["scaling"]
    smooth = {}
    if results.runs:
        for each in SCALING_RULES:
            steps = smooth_steps(results.runs[d_k][each])
            smooth[f"training_loss:{each}"] = smooth[f"training_accuracy:{each}"] = steps
            ends = [smooth_steps(results.runs[d][each])[-1] for d in D_K_OPTIONS]
            smooth[f"training_sweep:{each}"] = np.array(ends)
        smooth["training_sweep:marker"] = smooth_steps(results.runs[d_k][rule])[-1:]
        smooth["training_sweep:chaotic"] = np.bool_(False)  # chaotic, all of them
    if results.rates is not None:
        curves = smooth_curves(Scenario(**{n: expected.scenario[n] for n in FIELDS}).training()[0])
        for i, at in enumerate(CURVE_D_KS):
            smooth[f"lr_sweep:{at}"] = curves[rule][i]
        for each in SCALING_RULES:
            smooth[f"best_loss:{each}"] = curves[each].all(axis=1)  # a minimum over η
        marker = [curves[rule][i].all() for i, at in enumerate(CURVE_D_KS) if at == d_k]
        smooth["best_loss:marker"] = np.array(marker, dtype=bool)
    return smooth


def _compare_source(name, page: dict, here: dict, smooth: np.ndarray | None) -> list[str]:
    """Source ``name`` on the page against CPython's (``here``): the same columns and
    lengths, and the same values to DATA_RTOL; its ``y`` only where ``smooth`` (a mask of
    its points, or one flag for them all), if given, and to SMOOTH_RTOL."""
    if set(page) != set(here):
        return [f"source {name}: columns {sorted(page)} != {sorted(here)}"]
    problems = []
    for column, values in here.items():
        if smooth is None or column != "y":
            problems += _compare_column(name, column, page[column], values)
            continue
        a, b = (np.asarray(v, dtype=float) for v in (page[column], values))
        if a.shape != b.shape:
            problems.append(f"source {name}.{column}: shape {a.shape} != {b.shape}")
            continue
        smooth = np.broadcast_to(smooth, b.shape)
        apart = smooth & ~np.isclose(a, b, rtol=SMOOTH_RTOL, atol=0)
        if apart.any():
            i = int(np.argmax(apart))
            problems.append(f"source {name}.{column}: at {i} of {len(b)}, {a[i]!r} != {b[i]!r}")
    return problems


def chaotic_edges(rates) -> list[float]:
    """The edges of every rule a nudge of 1e-12 moves (the page's ×), once checked."""
    if rates is None:
        return []
    return [float(e) for rule in rates.edge for e in rates.edge[rule][rates.moved(rule)]]


def compare_edges(name, page: dict, here: dict, twin: dict, chaotic=(), windows=None) -> list[str]:
    """The edges of source ``name`` (d_k or curve: the edge) on the page, against those
    computed here and from the nudged start: where those two agree to EDGE_FACTOR and
    the edge is not among ``chaotic`` (the values here marks ×), the page's agrees with
    them to EDGE_FACTOR, or is one of the η of here's window there (``windows``, {d_k:
    its η}, where given). A nudge, and the worker's rounding is one, can flip a run in
    the window above the edge, which then jumps to it: seen at the cube root, d_k =
    16384, v = 1.05, 10 in the worker where here and a whole twin search find 5.6, and
    2 of 12 nudges of W_Q train at 10."""
    x, y = ("eta", "color") if name == "lr_sweep:edge" else ("y", "d_k")
    shown, ours, other = (dict(zip(s[y], s[x], strict=True)) for s in (page, here, twin))
    problems = []
    for at, edge in ours.items():
        if edge in chaotic:
            continue
        if at in other and max(edge, other[at]) < EDGE_FACTOR * min(edge, other[at]):
            page_edge = shown.get(at)
            near = page_edge is not None and edge / EDGE_FACTOR < page_edge < edge * EDGE_FACTOR
            if not near and page_edge not in (windows or {}).get(at, ()):
                problems.append(f"source {name}: edge at {at} {page_edge}, here {edge}")
    return problems


def window_etas(rates, rule: str) -> dict:
    """{d_k: the η of ``rule``'s window there} (none for a rule without edges)."""
    if rates is None or rule not in rates.window:
        return {}
    return {
        int(d_k): {float(eta) for eta in window.learning_rates}
        for d_k, window in zip(rates.edge_d_ks, rates.window[rule], strict=True)
    }


def compare_windows(name, page, here, twin, page_edges, edges) -> list[str]:
    """The points of window source ``name`` on the page against those computed here, at
    each d_k where here's and the nudged start's are the same and the page's edge is
    here's (``page_edges``, ``edges``: the rule's edge sources). Elsewhere which η train
    hangs on rounding, and the worker's own rounding may put them elsewhere too (seen:
    the cube root at d_k = 16384, ticks to 8.2 in the worker, to 5.6 here and in the
    twin). Where ×, the chaotic edges, go is left to test_training_views.py: on an edge each."""

    def by_d_k(source):
        points = {}
        for d_k, y in zip(source["d_k"], source["y"], strict=True):
            points.setdefault(d_k, set()).add(float(y))
        return points

    shown, ours, other = by_d_k(page), by_d_k(here), by_d_k(twin)
    return [
        f"source {name}: at d_k = {d_k} {sorted(shown.get(d_k, ()))}, here {sorted(points)}"
        for d_k in set(ours) | set(other)
        if (points := ours.get(d_k, set())) == other.get(d_k, set())
        and by_d_k(page_edges).get(d_k) == by_d_k(edges).get(d_k)
        and shown.get(d_k, set()) != points
    ]


def _compare_column(name, column, page_values, values) -> list[str]:
    try:
        a, b = np.asarray(page_values, dtype=float), np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        a, b = [str(v) for v in np.ravel(page_values)], [str(v) for v in np.ravel(values)]
        return [] if a == b else [f"source {name}.{column}: {a[:6]} != {b[:6]}"]
    if a.size != b.size:  # an image's rows come flattened from the page
        return [f"source {name}.{column}: shape {a.shape} != {b.shape}"]
    a, b = a.ravel(), b.ravel()
    # and to 1e-12 of the column's largest value: a value computed from larger ones is
    # rounded on their scale (a histogram's bin edge at 0 is -3.6e-15 here, 0.0 in the
    # worker); on a log axis such a value is 12 decades below the top
    scale = np.max(np.abs(b[np.isfinite(b)]), initial=0.0)
    close = np.isclose(a, b, rtol=DATA_RTOL, atol=1e-12 * scale, equal_nan=True)
    if not close.all():
        where = np.flatnonzero(~close)
        return [
            f"source {name}.{column}: {where.size} of {close.size} differ, first at "
            f"{where[0]}: {a[where[:4]]} != {b[where[:4]]}"
        ]
    return []
