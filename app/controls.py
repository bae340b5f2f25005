"""The scenario the controls set, and the controls that set it.

``Scenario`` holds the value of every control: everything a shared link pins
down. ``scenario_widgets`` builds a widget for each of its settings and keeps
the two in step, through the throttled value of a slider under a server, so a
fast drag never queues stale work.
"""

import json
import math
from dataclasses import replace

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter
from panel.custom import JSComponent

from app.asset import asset
from app.environment import in_browser_build
from app.options import (
    ALPHA_LABELS,
    ALPHA_OPTIONS,
    D_K_OPTIONS,
    DEFAULTS,
    FIRST_SECTION,
    LEARNING_RATE_OPTIONS,
    N_KEYS_OPTIONS,
    SECTIONS,
    SEED_RANGE,
    SETTINGS_FIELDS,
    TEMPERATURE_RANGE,
    THEMES,
    VARIANCE_RANGE,
)
from app.questions import QUESTIONS
from app.simulation import SCALING_RULES, Settings
from app.style import RULE_NAMES
from app.training import PAGE_TOKENS
from app.words import text

# The CSS the controls send to the browser (each file says what it does).
WRAP_CSS = asset("wrap.css")
FOCUS_CSS = asset("focus.css")
TARGETS_CSS = asset("targets.css")  # every widget's (the page adds it)
TEXT_CSS = asset("text.css")
QUIET_CSS = asset("quiet.css")  # words a phone leaves to screen readers
SLIDER_CSS = asset("slider.css")  # every slider's


class ControlNames(JSComponent):
    """Invisible: names every slider handle and spinner button, with slider values as
    text, and makes a download button answer on its whole face and to the keyboard."""

    _esm = asset("control_names.js")


class Scenario(param.Parameterized):
    """The value of every control: everything a shared link pins down."""

    d_k = param.Selector(default=DEFAULTS["d_k"], objects=D_K_OPTIONS, doc="Key dimension.")
    variance = param.Number(DEFAULTS["variance"], bounds=VARIANCE_RANGE, doc="Component variance.")
    scaling = param.Selector(default=DEFAULTS["scaling"], objects=list(SCALING_RULES))
    alpha = param.Selector(
        default=DEFAULTS["alpha"], objects=ALPHA_OPTIONS, doc="The power rule's exponent."
    )
    n_keys = param.Selector(default=DEFAULTS["n_keys"], objects=N_KEYS_OPTIONS)
    temperature = param.Number(DEFAULTS["temperature"], bounds=TEMPERATURE_RANGE)
    seed = param.Integer(DEFAULTS["seed"], bounds=SEED_RANGE)
    learning_rate = param.Selector(
        default=DEFAULTS["learning_rate"], objects=LEARNING_RATE_OPTIONS, doc="Of the training run."
    )
    section = param.Selector(
        default=FIRST_SECTION, objects=list(SECTIONS), doc="The section on screen."
    )
    views = param.List(
        default=None, allow_None=True, doc="The views of the embed layout; None: the full page."
    )
    question = param.Selector(
        default=None, objects=[None, *(q.slug for q in QUESTIONS)], doc="The open question."
    )
    lecture = param.Boolean(default=False, doc="Lecture mode: large type, one view at a time.")
    theme = param.Selector(
        default="auto", objects=list(THEMES), doc="Light, dark, or the reader's (auto)."
    )
    step = param.Integer(default=0, bounds=(0, None), doc="Its step, from 0.")

    def settings(self) -> Settings:
        return Settings(**{name: getattr(self, name) for name in SETTINGS_FIELDS})

    def training(self) -> tuple[Settings, float]:
        """What the training runs at every d_k depend on: the settings but d_k and the
        rule (given fixed values), with at most PAGE_TOKENS tokens; the learning rate."""
        s = self.settings()
        n = min(s.n_keys, PAGE_TOKENS)
        return replace(s, d_k=1, scaling=SCALING_RULES[0], n_keys=n), self.learning_rate


def scenario_widgets(s: Scenario) -> dict:
    """A widget for each setting of ``s`` (and the learning rate), kept in step with it."""
    widgets = {
        "d_k": _power_of_two_slider("d_k (key dimension)", D_K_OPTIONS, s.d_k),
        "scaling": pn.widgets.RadioButtonGroup(
            name="Scaling rule",
            options={RULE_NAMES[r]: r for r in SCALING_RULES},
            value=s.scaling,
            button_type="primary",
            button_style="outline",
            stylesheets=[FOCUS_CSS, WRAP_CSS],
        ),
        "alpha": _options_slider(
            "α of the ÷ d_k^α rule (1/2: √d_k)", ALPHA_OPTIONS, s.alpha, ALPHA_LABELS
        ),
        "variance": _float_slider("variance v of q and k components", VARIANCE_RANGE, s.variance),
        "n_keys": _power_of_two_slider("n (number of keys)", N_KEYS_OPTIONS, s.n_keys),
        "temperature": _float_slider("temperature T", TEMPERATURE_RANGE, s.temperature),
        "learning_rate": _options_slider(
            "learning rate η of the training run", LEARNING_RATE_OPTIONS, s.learning_rate
        ),
        "seed": pn.widgets.IntInput(
            name="seed", start=SEED_RANGE[0], end=SEED_RANGE[1], value=s.seed, width=140
        ),
    }
    for name, widget in widgets.items():
        widget.sizing_mode = widget.sizing_mode or "stretch_width"
        # In the browser build a slider acts while it is dragged: the worker takes
        # the next value only when it is done with the last (its 'idle', in
        # static/runtime/worker/main.js).
        # A server would queue every value of a drag, so there it acts on release.
        live = in_browser_build() or "value_throttled" not in widget.param
        throttled = "value" if live else "value_throttled"
        # Panel counts every widget change in state.busy (for a busy indicator this
        # page does not use), editing every parameter of pn.state four times per
        # change: about a quarter of the Python time of a slider move in Pyodide.
        widget._busy__ignore = list(widget.param)
        to_value, from_value = _SLIDER_SCALES.get(name, (_same, _same))
        widget.param.watch(
            lambda e, name=name, to_value=to_value: setattr(s, name, to_value(e.new)), throttled
        )
        s.param.watch(
            lambda e, w=widget, from_value=from_value: setattr(w, "value", from_value(e.new)),
            name,
        )
    _show_with_its_rule(widgets["alpha"], s, "power")
    return widgets


def _show_with_its_rule(widget: pn.widgets.Widget, s: Scenario, rule: str):
    """Show ``widget`` only while ``rule`` is the scaling rule: under any other it does
    nothing, and on a phone's first screen it would stand where the d_k slider should."""
    widget.visible = s.scaling == rule
    s.param.watch(lambda e: setattr(widget, "visible", e.new == rule), "scaling")


def _float_slider(name: str, bounds: tuple[float, float], value: float) -> pn.widgets.FloatSlider:
    return pn.widgets.FloatSlider(
        name=name,
        start=bounds[0],
        end=bounds[1],
        step=0.05,
        value=value,
        stylesheets=[SLIDER_CSS],
    )


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
        stylesheets=[SLIDER_CSS],
    )


def _options_slider(
    name: str, options: list[float], value: float, labels: list[str] | None = None
) -> pn.widgets.IntSlider:
    """A slider over the indices of ``options`` that shows the option (or its label)."""
    labels = labels or [f"{option:g}" for option in options]
    return pn.widgets.IntSlider(
        name=name,
        start=0,
        end=len(options) - 1,
        value=options.index(value),
        format=CustomJSTickFormatter(code=f"return {json.dumps(labels)}[tick]"),
        stylesheets=[SLIDER_CSS],
    )


def _same(value):
    return value


# Sliders that move over another scale than their value: (to value, from value).
_SLIDER_SCALES = {
    "d_k": (lambda exponent: 2**exponent, lambda value: int(math.log2(value))),
    "n_keys": (lambda exponent: 2**exponent, lambda value: int(math.log2(value))),
    "learning_rate": (LEARNING_RATE_OPTIONS.__getitem__, LEARNING_RATE_OPTIONS.index),
    "alpha": (ALPHA_OPTIONS.__getitem__, ALPHA_OPTIONS.index),
}


TRAINING_CONTROLS = "lab-training-run"  # the name of the training run's group


def controls_column(
    widgets: dict[str, pn.widgets.Widget],
    questions: pn.viewable.Viewable,
    new_draw: pn.widgets.Button,
    shown_rules: pn.widgets.Widget,
    share: pn.viewable.Viewable,
) -> pn.Column:
    """The controls beside the views, in groups: the questions, the scaling rule, the
    sizes, the spread of the vectors, the training run, the draw and the curves shown,
    and the share box. The training run's group is named ``TRAINING_CONTROLS``."""
    w = widgets
    group = {"sizing_mode": "stretch_width", "margin": 0}
    return pn.Column(
        questions,
        pn.Column(
            pn.pane.Markdown(
                text("page", "headings", "rule"), margin=(0, 10), stylesheets=[TEXT_CSS]
            ),
            w["scaling"],
            w["alpha"],
            **group,
        ),
        pn.Column(w["d_k"], w["n_keys"], **group),
        pn.Column(w["variance"], w["temperature"], **group),
        pn.Column(
            pn.pane.Markdown(text("page", "headings", "training run"), margin=(5, 10, 0, 10)),
            w["learning_rate"],
            name=TRAINING_CONTROLS,
            **group,
        ),
        pn.Column(
            pn.Row(w["seed"], new_draw, **group),
            pn.pane.Markdown(text("page", "headings", "curves shown"), margin=(5, 10, 0, 10)),
            shown_rules,
            **group,
        ),
        share,
        ControlNames(width=0, height=0, margin=0),
        sizing_mode="stretch_width",
        css_classes=["lab-controls"],
        name="lab-controls",
    )
