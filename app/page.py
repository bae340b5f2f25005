"""The Panel page: controls, plots with captions, explainer, URL sync, embed code.

``Scenario`` holds the value of every control; ``AttentionLab`` wires the
widgets to it (through their throttled values, so a fast drag never queues
stale work), recomputes with ``app.simulation`` and pushes new data into the
figures of ``app.plots``. The same object runs under ``panel serve``, in a
notebook and in Pyodide.
"""

import html
import math
import os
import platform
import random
import sys
from urllib.parse import parse_qsl, urlencode

import numpy as np
import panel as pn
import param
from bokeh.models import CustomJSTickFormatter, Div
from panel.io import hold

from app import theory
from app.plots import RULE_COLORS, RULE_LABELS, Plots
from app.scenario import (
    D_K_OPTIONS,
    DEFAULTS,
    FIELDS,
    N_KEYS_OPTIONS,
    SEED_RANGE,
    TEMPERATURE_RANGE,
    VARIANCE_RANGE,
    read_query,
    write_query,
)
from app.simulation import (
    SCALING_RULES,
    Settings,
    row_metrics,
    saturated_share,
    simulate,
    sweep,
)

TITLE = "Attention Scaling Lab"
PRERENDER_ENV = "ATTENTION_LAB_PRERENDER"  # set by build.py while it prerenders the page

BUTTON_LABELS = {"none": "none", "sqrt": "÷ √d_k", "linear": "÷ d_k", "qk_norm": "QK-norm"}
SMALL = {"font-size": "0.9em"}


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


EMBED_JS = """
const src = window.location.href.split('#')[0];
code.value = `<iframe src="${src}" title="${title}" width="100%" height="1400" `
  + 'style="border:0; max-width:100%" loading="lazy"></iframe>';
try { navigator.clipboard.writeText(code.value).catch(() => {}); } catch (error) {}
"""


class Scenario(param.Parameterized):
    """The value of every control: everything a shared link pins down."""

    d_k = param.Selector(default=DEFAULTS["d_k"], objects=D_K_OPTIONS, doc="Key dimension.")
    variance = param.Number(DEFAULTS["variance"], bounds=VARIANCE_RANGE, doc="Component variance.")
    scaling = param.Selector(default=DEFAULTS["scaling"], objects=list(SCALING_RULES))
    n_keys = param.Selector(default=DEFAULTS["n_keys"], objects=N_KEYS_OPTIONS)
    temperature = param.Number(DEFAULTS["temperature"], bounds=TEMPERATURE_RANGE)
    seed = param.Integer(DEFAULTS["seed"], bounds=SEED_RANGE)

    def settings(self) -> Settings:
        return Settings(**{name: getattr(self, name) for name in FIELDS})


CAPTIONS = {
    "histogram": (
        "Every score q·k of the current draw. Unscaled, the scores spread as √d_k; "
        "the scaling rule brings them back.",
        r"$\mathrm{Var}(q\cdot k) = d_k v^2,\quad s = c\,\sqrt{d_k}\,v\,/\,T$",
    ),
    "spread": (
        "Spread of the logits against d_k. Only dividing by √d_k keeps it flat; above the "
        "dotted line the softmax collapses.",
        r"$s = c\,\sqrt{d_k}\,v\,/\,T,\qquad s_c = \sqrt{2\ln n}$",
    ),
    "max_weight": (
        "The largest weight in each query's row: near 1 means attention looks at one key only.",
        r"$\max_j p_j,\quad p = \mathrm{softmax}(z)$",
    ),
    "entropy": (
        "How spread out each row is: 1 is uniform, 0 is one-hot. Dashed: small-spread theory.",
        r"$H/\ln n,\qquad \mathbb{E}[H] \approx \ln n - s^2/2 \;(s \lesssim 1)$",
    ),
    "saturated": (
        "Share of rows whose largest weight exceeds 0.99. Dotted: where F1's spread crosses "
        "the collapse threshold.",
        r"$\Pr[\max_j p_j > 0.99],\qquad s(d_k) = \sqrt{2\ln n}$",
    ),
    "heatmap": (
        "The attention weights, one row per query: bright single cells are one-hot rows.",
        r"$p_{ij} = e^{z_{ij}} / \sum_l e^{z_{il}}$",
    ),
    "jacobian": (
        "How much the weights can still move when the logits do: it vanishes as rows saturate.",
        r"$\|J\|_F,\quad J = \mathrm{diag}(p) - p\,p^\top;\ \ \tfrac{n-1}{n^2}$ when uniform",
    ),
    "query_grad": (
        "The gradient that reaches the query (and so W_Q), including the scale c.",
        r"$\|\partial p/\partial q\|_F = \|J\,(c/T)\,K\|_F$",
    ),
}

EXPLAINER = """
**Why scale at all?** A logit is a dot product q·k = Σ q_i k_i of d_k terms. With
independent components of variance v, the variances add: Var(q·k) = d_k v². At
d_k = 512 and v = 1 the logits have a standard deviation of about 23, and a softmax of
numbers that far apart puts almost all its weight on the largest one.

**What happens without it?** The rows go one-hot (the heatmap turns into single bright
cells), their entropy drops to 0, and the softmax Jacobian diag(p) - p pᵀ goes to 0
with them, so almost no gradient reaches W_Q and W_K: the model stops learning where
to attend. Switch the rule to *none* and drag d_k up to watch it happen.

**Why the square root and not another power?** Dividing by √d_k is exactly what keeps
the spread at v, whatever d_k is (Vaswani et al. 2017, footnote 4). Dividing by d_k
(*linear*, as in μP) over-corrects: the spread shrinks as 1/√d_k and every row fades to
uniform. *QK-norm* layer-normalises q and k first, which fixes the spread at 1 whatever
the variance.
"""


class AttentionLab(pn.viewable.Viewer):
    """The whole page. ``AttentionLab().servable()`` publishes it."""

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = Scenario()
        self.plots = Plots()
        self._applied_search = None
        self._build_widgets()
        self._build_layout()
        self.scenario.param.watch(self._on_change, list(FIELDS))
        self._update(curves=True)
        if pn.state.location is not None:
            self._read_url()  # under panel serve the request's query is known now;
            # in the browser build it arrives later, when the page tells the worker
            pn.state.location.param.watch(lambda _: self._read_url(), "search")

    # --- widgets -------------------------------------------------------------------------

    def _build_widgets(self):
        s = self.scenario
        self.widgets = {
            "d_k": _power_of_two_slider("d_k (key dimension)", D_K_OPTIONS, s.d_k),
            "scaling": pn.widgets.RadioButtonGroup(
                name="Scaling rule",
                options={BUTTON_LABELS[r]: r for r in SCALING_RULES},
                value=s.scaling,
                button_type="primary",
                button_style="outline",
            ),
            "variance": _float_slider(
                "variance v of q and k components", VARIANCE_RANGE, s.variance
            ),
            "n_keys": _power_of_two_slider("n (number of keys)", N_KEYS_OPTIONS, s.n_keys),
            "temperature": _float_slider("temperature T", TEMPERATURE_RANGE, s.temperature),
            "seed": pn.widgets.IntInput(
                name="seed", start=SEED_RANGE[0], end=SEED_RANGE[1], value=s.seed, width=140
            ),
        }
        for name, widget in self.widgets.items():
            widget.sizing_mode = widget.sizing_mode or "stretch_width"
            throttled = "value_throttled" if "value_throttled" in widget.param else "value"
            exponent = name in ("d_k", "n_keys")  # these sliders move over log2 of the value
            widget.param.watch(
                lambda e, name=name, exponent=exponent: setattr(
                    self.scenario, name, 2**e.new if exponent else e.new
                ),
                throttled,
            )
            s.param.watch(
                lambda e, w=widget, exponent=exponent: setattr(
                    w, "value", int(math.log2(e.new)) if exponent else e.new
                ),
                name,
            )
        self.new_draw = pn.widgets.Button(name="New draw", button_type="primary", width=110)
        self.new_draw.on_click(lambda _: setattr(s, "seed", random.randrange(SEED_RANGE[1] + 1)))

    def _on_change(self, *events):
        self._update(curves=bool({e.name for e in events} - {"d_k", "scaling"}))
        self._write_url()

    # --- computing -----------------------------------------------------------------------

    def _update(self, curves: bool):
        settings = self.scenario.settings()
        with hold():
            if curves:
                self.curves = sweep(settings, D_K_OPTIONS)
                self.plots.show_curves(
                    self.curves, settings.n_keys, settings.variance, settings.temperature
                )
            snap = simulate(settings)
            unscaled = snap.q @ snap.k.T / settings.temperature
            medians = {name: float(np.median(v)) for name, v in row_metrics(snap).items()}
            share = float(saturated_share(snap.max_weight))
            self.plots.show_snapshot(snap, unscaled, medians, share)
            lines = _summaries(settings, snap, unscaled, medians, share, self.curves)
            items = "".join(
                f"<li><b>{html.escape(self.plots.figures[key].title.text)}:</b> "
                f"{html.escape(text)}</li>"
                for key, text in lines.items()
            )
            self.summary.text = f"<ul>{items}</ul>"

    # --- URL -----------------------------------------------------------------------------

    def _read_url(self):
        location = pn.state.location
        if location.search == self._applied_search:
            return
        values, notices = read_query(dict(parse_qsl(location.search.lstrip("?"))))
        self._applied_search = location.search
        self.notice.object = "\n".join(f"- {html.escape(n)}" for n in notices)
        self.notice.visible = bool(notices)
        self.scenario.param.update(**values)

    def _write_url(self):
        location = pn.state.location
        if location is None:
            return
        # Exactly the scenario: parameters that were ignored or corrected are not carried on.
        location.search = "?" + urlencode(write_query(self.scenario.param.values()))
        self._applied_search = location.search

    # --- layout --------------------------------------------------------------------------

    def _build_layout(self):
        self.notice = pn.pane.Alert(
            "", alert_type="warning", visible=False, name="url-notice", sizing_mode="stretch_width"
        )
        # One plain Bokeh Div for the text summary of every plot: each text change
        # re-lays out the page (~30 ms in a browser), so one change per move, not eight.
        self.summary = Div(
            text="",
            name="summary",
            disable_math=True,
            sizing_mode="stretch_width",
            margin=(0, 10),
            styles=SMALL,
        )
        self.embed_code = pn.widgets.TextAreaInput(
            name="Embed this scenario in a course page",
            placeholder="Press the button for an <iframe> snippet of the current scenario.",
            height=90,
            sizing_mode="stretch_width",
        )
        copy = pn.widgets.Button(name="Copy embed code", width=160)
        # Built in the browser from the page's own URL, which holds the scenario.
        copy.js_on_click(args={"code": self.embed_code, "title": TITLE}, code=EMBED_JS)
        w = self.widgets
        controls = pn.Column(
            pn.Column(
                pn.pane.Markdown("**Scaling rule** (c in softmax(c Q Kᵀ / T))", margin=(0, 10)),
                w["scaling"],
                sizing_mode="stretch_width",
            ),
            pn.Column(w["d_k"], w["n_keys"], sizing_mode="stretch_width"),
            pn.Column(w["variance"], w["temperature"], sizing_mode="stretch_width"),
            pn.Row(w["seed"], self.new_draw, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
            styles=_grid(300),
        )
        self.layout = pn.Column(
            pn.pane.Markdown(
                f"# {TITLE}\nWhy attention divides Q Kᵀ by √d_k: move the sliders and watch "
                "the softmax saturate.",
                sizing_mode="stretch_width",
            ),
            pn.Card(
                pn.pane.Markdown(EXPLAINER, sizing_mode="stretch_width"),
                title="Why scale at all? Why the square root?",
                sizing_mode="stretch_width",
            ),
            controls,
            self.notice,
            pn.pane.HTML(_key(), sizing_mode="stretch_width", styles=SMALL),
            pn.Column(
                *(self._card(key) for key in CAPTIONS),
                sizing_mode="stretch_width",
                styles=_grid(480),
            ),
            pn.pane.Markdown("### The plots in numbers", margin=(0, 10)),
            pn.pane.Bokeh(self.summary, sizing_mode="stretch_width"),
            pn.Column(self.embed_code, copy, sizing_mode="stretch_width"),
            pn.pane.Markdown(_runtime(), name="runtime", styles=SMALL),
            sizing_mode="stretch_width",
            styles={"max-width": "1400px", "margin": "0 auto"},
        )

    def _card(self, key):
        caption, formula = CAPTIONS[key]
        return pn.Column(
            pn.pane.Bokeh(self.plots.figures[key], sizing_mode="stretch_width"),
            pn.pane.Markdown(caption, sizing_mode="stretch_width", margin=(0, 10)),
            pn.pane.LaTeX(formula, sizing_mode="stretch_width", margin=(0, 10)),
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return self.layout


def _float_slider(name: str, bounds: tuple[float, float], value: float) -> pn.widgets.FloatSlider:
    return pn.widgets.FloatSlider(name=name, start=bounds[0], end=bounds[1], step=0.05, value=value)


def _power_of_two_slider(name: str, options: list[int], value: int) -> pn.widgets.IntSlider:
    """A slider over the exponents of ``options`` that shows 2 ** exponent.

    A plain IntSlider rather than a DiscreteSlider: each move then costs one
    model change, not a composite widget's round of label updates.
    """
    return pn.widgets.IntSlider(
        name=name,
        start=int(math.log2(options[0])),
        end=int(math.log2(options[-1])),
        value=int(math.log2(value)),
        format=CustomJSTickFormatter(code="return (2 ** tick).toString()"),
    )


def _runtime() -> str:
    """Where the numbers come from: in the browser build, the worker's numpy."""
    if sys.platform == "emscripten":
        where = "Computed in your browser"
    elif os.environ.get(PRERENDER_ENV):
        where = "Precomputed when this site was built (the live simulation takes over once loaded)"
    else:
        where = "Computed on the server"
    return (
        f"{where} with numpy {np.__version__} on Python "
        f"{platform.python_version()} ({sys.platform})."
    )


def _key() -> str:
    """The legend shared by every plot against d_k."""
    swatches = " ".join(
        f'<span style="color:{RULE_COLORS[r]}">■</span> {html.escape(RULE_LABELS[r])}'
        for r in SCALING_RULES
    )
    return (
        f"<b>Colour = scaling rule, the same in every plot:</b> {swatches}. Solid line: median "
        "over the query rows of one draw; shaded band: their interquartile range; dashed: "
        "theory; dotted: thresholds; ★: the current setting."
    )


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _summaries(settings: Settings, snap, unscaled, med, share, curves) -> dict[str, str]:
    """One plain-text sentence of current numbers per view, for screen readers."""
    s = settings
    rule = s.scaling
    predicted = float(theory.logit_std(rule, s.d_k, s.variance, s.temperature))
    raw = float(theory.logit_std("none", s.d_k, s.variance, s.temperature))
    c = curves[rule]
    at = f"At d_k = {s.d_k} with rule {rule}"
    return {
        "histogram": f"{at}: logits std {_fmt(float(snap.logits.std()))} (F1 predicts "
        f"{_fmt(predicted)}); unscaled scores std {_fmt(float(unscaled.std()))} "
        f"(F1 predicts {_fmt(raw)}).",
        "spread": f"{at}: median row std {_fmt(med['logit_std'])}. Collapse threshold "
        f"√(2 ln n) = {_fmt(theory.collapse_threshold(s.n_keys))}. Over d_k = 1 to 1024 the "
        f"median spread under {rule} goes from {_fmt(c['logit_std'][0])} "
        f"to {_fmt(c['logit_std'][-1])}.",
        "max_weight": f"{at}: median max weight {_fmt(med['max_weight'])}; at d_k = 1024 it is "
        + ", ".join(f"{r} {_fmt(curves[r]['max_weight'][-1])}" for r in SCALING_RULES)
        + ".",
        "entropy": f"{at}: median H / ln n = {_fmt(med['normalized_entropy'])}.",
        "saturated": f"{at}: {share:.0%} of rows are saturated; at d_k = 1024, "
        + ", ".join(f"{r} {curves[r]['saturated_share'][-1]:.0%}" for r in SCALING_RULES)
        + ".",
        "heatmap": f"{snap.weights.shape[0]} queries by {snap.weights.shape[1]} keys; the "
        f"median row puts {_fmt(med['max_weight'])} of its weight on one key.",
        "jacobian": f"{at}: median ‖J‖_F = {_fmt(med['jacobian_norm'])} (uniform weights give "
        f"{_fmt(theory.uniform_jacobian_norm(s.n_keys))}).",
        "query_grad": f"{at}: median ‖dp/dq‖_F = {_fmt(med['query_grad_norm'])}.",
    }
