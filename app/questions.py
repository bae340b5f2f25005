"""Learners' questions about the scaling, each answered by the simulation on screen.

A question is one or more steps. A step sets a scenario (control values), names
the view that shows it, and answers with numbers read from what the page has
on screen, the ``Evidence``::

    step.answer(evidence) == step.template.format(**step.numbers(evidence))

so every number in an answer is computed, never typed in, and a test can check
each one on its own. Answers speak of the evidence's own settings ("at d_k =
512 with rule none"), so they stay true after the learner moves a slider.
Numpy and the app's pure-Python modules only: no Panel, no Bokeh.

>>> question("purpose").steps[0].scenario
{'d_k': 512, 'scaling': 'none'}
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from app import softmax, theory
from app.precision import EXP_LIMITS, naive_overflow_shares
from app.simulation import SATURATION, Settings, Snapshot, layer_norm, simulate
from app.style import MODEL_HEADS, RULE_NAMES
from app.training import DEFAULT_STEPS

# What an answer that needs training runs says until the page has them.
TRAINING_PENDING = (
    "The training runs for this setting are still computing; the answer appears when they finish."
)
OTHER_VIEWS = ("stability",)  # where an answer may point besides app.scenario.VIEWS
TRAINING_D_KS = (16, 64, 256, 1024)  # the d_k of answers that read the training sweep
BFLOAT16_BITS = 8  # significant bits of bfloat16 (7 stored, 1 implicit)


@dataclass(frozen=True)
class Evidence:
    """What the page has on screen, for the answers to read.

    Attributes
    ----------
    settings : Settings
        The current scenario.
    learning_rate : float
        The training runs' learning rate.
    snap : Snapshot
        ``simulate(settings)``.
    curves : dict
        ``sweep(settings, D_K_OPTIONS)``: ``{rule: columns}``.
    runs : dict
        ``training_sweep(training settings, D_K_OPTIONS, learning_rate=...)``:
        ``{d_k: {rule: TrainingRun}}``, partial or empty while training runs.
    row : int
        The query row the page shows up close (``simulation.median_row`` by default).
    """

    settings: Settings
    learning_rate: float
    snap: Snapshot
    curves: dict
    runs: dict
    row: int


class TrainingPending(LookupError):
    """The evidence has no training runs yet at a d_k that an answer needs."""


@dataclass(frozen=True)
class Step:
    """One scenario of a question, where to look, and its answer.

    Attributes
    ----------
    scenario : dict
        Control values to apply (names of ``app.scenario.FIELDS``); every field
        not given takes its value from ``app.scenario.DEFAULTS``.
    view : str
        Where to scroll: a key of ``app.scenario.VIEWS`` or of ``OTHER_VIEWS``.
    numbers : callable
        ``numbers(evidence) -> {name: float | int | str}``, every number of the
        answer; raises ``TrainingPending`` while the runs it reads are missing.
    template : str
        ``str.format`` template of the answer over those names (plain text).
    """

    scenario: dict
    view: str
    numbers: Callable[[Evidence], dict]
    template: str

    def answer(self, evidence: Evidence) -> str:
        """The answer for ``evidence``, or ``TRAINING_PENDING`` while it lacks the runs."""
        try:
            return self.template.format(**self.numbers(evidence))
        except TrainingPending:
            return TRAINING_PENDING


@dataclass(frozen=True)
class Question:
    """A learner's question: ``?question=<slug>`` opens it at its first step.

    Attributes
    ----------
    slug : str
        Lowercase and hyphenated.
    text : str
        The learner's wording.
    predict : str
        One line asking the learner to predict the answer before revealing it.
    steps : tuple of Step
    """

    slug: str
    text: str
    predict: str
    steps: tuple[Step, ...]


# --- Reading the evidence ----------------------------------------------------------------

# Short names of the sweep's columns, as the answers' numbers are named.
CURVE_COLUMNS = {
    "spread": "logit_std",  # median over rows of each row's logit std
    "max_weight": "max_weight",
    "entropy": "normalized_entropy",  # H / ln n
    "saturated": "saturated_share",  # share of rows with max weight > 0.99
    "grad": "query_grad_norm",  # ||J (c/T) K||_F
    "grad_p10": "query_grad_norm_p10",
    "grad_p90": "query_grad_norm_p90",
}


def _fraction(x: float) -> str:
    """``x`` as a fraction with denominator at most 24 (alpha's steps), else 3 digits."""
    near = Fraction(x).limit_denominator(24)
    text = str(near) if abs(float(near) - x) < 1e-12 else f"{x:.3g}"
    return text.replace("-", "−")


def _rule_name(settings: Settings) -> str:
    """The rule's name on the page, with alpha under the power rule."""
    name = RULE_NAMES[settings.scaling]
    return f"{name} (α = {_fraction(settings.alpha)})" if settings.scaling == "power" else name


def _setting(e: Evidence) -> dict:
    """The scenario's values: d_k, v, T, n (keys), queries, lr, c, rule, alpha."""
    s = e.settings
    return {
        "d_k": s.d_k,
        "v": s.variance,
        "T": s.temperature,
        "n": s.n_keys,
        "queries": s.n_queries,
        "lr": e.learning_rate,
        "c": s.scale,
        "rule": _rule_name(s),
        "alpha": _fraction(s.alpha),
    }


def _curve(e: Evidence, rules, names, d_k=None) -> dict:
    """``{rule}_{name}`` read off the curves at the current d_k, or ``{rule}_{name}_{d_k}``."""
    at = e.settings.d_k if d_k is None else d_k
    i = list(e.curves[rules[0]]["d_k"]).index(at)
    suffix = "" if d_k is None else f"_{d_k}"
    return {
        f"{rule}_{name}{suffix}": float(e.curves[rule][CURVE_COLUMNS[name]][i])
        for rule in rules
        for name in names
    }


def _on_screen(e: Evidence, names) -> dict:
    """``{name}`` of the current rule at the current d_k (the curves' medians)."""
    rule = e.settings.scaling
    return {name: _curve(e, [rule], [name])[f"{rule}_{name}"] for name in names}


def _decades(e: Evidence, rule: str) -> float:
    """Orders of magnitude between the 10th and 90th percentile of the query gradient,
    ``log10(p90 / p10)``; a p10 that underflowed to 0 counts as 1e-300."""
    g = _curve(e, [rule], ["grad_p10", "grad_p90"])
    return math.log10(g[f"{rule}_grad_p90"]) - math.log10(max(g[f"{rule}_grad_p10"], 1e-300))


def _trained(e: Evidence, rules, d_k=None) -> dict:
    """``{rule}_loss``, ``_loss0`` and ``_accuracy`` after and before training at the
    current d_k, or ``..._{d_k}`` at ``d_k``; ``TrainingPending`` if not yet run."""
    at = e.settings.d_k if d_k is None else d_k
    if at not in e.runs:
        raise TrainingPending(at)
    suffix = "" if d_k is None else f"_{d_k}"
    numbers = {}
    for rule in rules:
        run = e.runs[at][rule]
        numbers |= {
            f"{rule}_loss{suffix}": float(run.loss[-1]),
            f"{rule}_loss0{suffix}": float(run.loss[0]),
            f"{rule}_accuracy{suffix}": float(run.accuracy[-1]),
        }
    return numbers


def _trained_sweep(e: Evidence, rules) -> dict:
    """``trained`` at every d_k of ``TRAINING_D_KS``."""
    numbers = {}
    for d_k in TRAINING_D_KS:
        numbers |= _trained(e, rules, d_k)
    return numbers


def _spread_theory(e: Evidence, c: float) -> float:
    """The theory's spread ``s = c sqrt(d_k) v / T`` (Vaswani et al. 2017, footnote 4)."""
    s = e.settings
    return c * math.sqrt(s.d_k) * s.variance / s.temperature


def _threshold(e: Evidence) -> float:
    """The collapse threshold ``s_c = sqrt(2 ln n)``."""
    return math.sqrt(2 * math.log(e.settings.n_keys))


def _scores_std(e: Evidence) -> float:
    """Standard deviation of the unscaled scores q . k of the current draw."""
    return float(np.std(e.snap.q @ e.snap.k.T))


def _weights_of(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``logits``, the page's stable one."""
    return softmax.softmax_rows(logits).weights


# --- The questions -----------------------------------------------------------------------
#
# Each question's numbers come first, then its steps. A function of numbers reads only the
# evidence it is given; a claim that depends on the numbers is either a number itself or a
# phrase the function chooses from them.

# 1. What is the purpose of scaling the dot product in self-attention?


def _purpose_scores(e):
    """The unscaled scores' spread (theory sqrt(d_k) v) and what the rule on screen makes of it."""
    return _setting(e) | {
        "scores_std": _scores_std(e),
        "raw_theory": math.sqrt(e.settings.d_k) * e.settings.variance,
        "logits_std": float(np.std(e.snap.logits)),
        "saturated": float(np.mean(e.snap.max_weight > SATURATION)),
    }


def _purpose_flat(e):
    """The median row spread of none and sqrt at d_k = 1, 1024 and the current d_k."""
    rules = ["none", "sqrt"]
    return (
        _setting(e)
        | _curve(e, rules, ["spread"], 1)
        | _curve(e, rules, ["spread"], 1024)
        | _curve(e, rules, ["spread", "saturated"])
        | {"sqrt_theory": _spread_theory(e, 1 / math.sqrt(e.settings.d_k))}
    )


PURPOSE = Question(
    slug="purpose",
    text="What is the purpose of scaling the dot product in self-attention?",
    predict="Predict: at d_k = 512 with no scaling, how widely do the scores q·k spread, "
    "and how many attention rows go one-hot?",
    steps=(
        Step(
            {"d_k": 512, "scaling": "none"},
            "histogram",
            _purpose_scores,
            "A score q·k adds up d_k products of variance v² each, so its spread (standard "
            "deviation) is √d_k·v: {raw_theory:.3g} at d_k = {d_k} and v = {v:g}, and "
            "{scores_std:.3g} in this draw. With rule {rule} (c = {c:.3g}, T = {T:g}) the "
            "softmax sees logits of spread {logits_std:.3g}, and in {saturated:.0%} of the rows "
            "it puts more than 0.99 of the weight on a single key.",
        ),
        Step(
            {"d_k": 512, "scaling": "sqrt"},
            "spread",
            _purpose_flat,
            "That is what the scaling is for: dividing by √d_k cancels the √d_k, so the "
            "logits' spread is v/T = {sqrt_theory:.3g} at every d_k and the softmax behaves "
            "the same however wide the heads are. Median row spread from d_k = 1 to 1024: "
            "÷ √d_k {sqrt_spread_1:.3g} to {sqrt_spread_1024:.3g}, none {none_spread_1:.3g} to "
            "{none_spread_1024:.3g}. At d_k = {d_k}: ÷ √d_k {sqrt_spread:.3g} with "
            "{sqrt_saturated:.0%} of rows saturated, none {none_spread:.3g} with "
            "{none_saturated:.0%}.",
        ),
    ),
)

# 2. How is the scaling factor calculated in the Transformer architecture?


def _factor(e):
    """c = 1/sqrt(d_k), and the spread of the scores before and after it."""
    d_k = e.settings.d_k
    return _setting(e) | {
        "root": math.sqrt(d_k),
        "sqrt_c": 1 / math.sqrt(d_k),
        "raw_theory": math.sqrt(d_k) * e.settings.variance,
        "scores_std": _scores_std(e),
        "scaled_std": _scores_std(e) / math.sqrt(d_k),
    }


FACTOR = Question(
    slug="scaling-factor",
    text="How is the scaling factor calculated in the Transformer architecture?",
    predict="Predict: at d_k = 64, what number multiplies every score q·k?",
    steps=(
        Step(
            {"d_k": 64, "scaling": "sqrt"},
            "histogram",
            _factor,
            "softmax(Q Kᵀ / √d_k) V: every score q·k is multiplied by c = 1/√d_k, where d_k is "
            "the length of the query and key vectors. It is fixed by the architecture, not "
            "learned (Vaswani et al. 2017, §3.2.1). At d_k = {d_k}, c = 1/{root:.3g} = "
            "{sqrt_c:.3g}. Why that value: for independent components of variance v, "
            "Var(q·k) = d_k·v², so the scores spread as √d_k·v ({raw_theory:.3g} here; "
            "{scores_std:.3g} in this draw), and multiplying by 1/√d_k brings the spread back "
            "to v ({v:g}; this draw: {scaled_std:.3g}).",
        ),
    ),
)

# 3. What is the typical value of the key dimension d_k in Transformers?


def _typical(e):
    """d_k = d_model / heads of MODEL_HEADS, and none against sqrt at the current d_k."""
    sizes = sorted({d_model // heads for _, d_model, heads in MODEL_HEADS})
    models = ", ".join(f"{m} {d} / {h} = {d // h}" for m, d, h in MODEL_HEADS)
    return (
        _setting(e)
        | _curve(e, ["none", "sqrt"], ["spread", "max_weight", "saturated"])
        | {
            "models": models,
            "typical": " or ".join(map(str, sizes)),
            "none_theory": _spread_theory(e, 1.0),
        }
    )


TYPICAL = Question(
    slug="typical-d-k",
    text="What is the typical value of the key dimension d_k in Transformers?",
    predict="Predict: what is d_k in BERT-base, which has d_model = 768 and 12 heads?",
    steps=(
        Step(
            {"d_k": 64, "scaling": "none"},
            "saturated",
            _typical,
            "d_k = d_model / heads: {models}. So the typical d_k is {typical} (the grey "
            "dash-dotted lines). At d_k = {d_k}, unscaled logits would spread {none_spread:.3g} "
            "(theory √d_k·v/T = {none_theory:.3g}): the median row puts {none_max_weight:.3g} "
            "of its weight on its top key and {none_saturated:.0%} of rows are saturated. With "
            "÷ √d_k: spread {sqrt_spread:.3g}, {sqrt_max_weight:.3g} and {sqrt_saturated:.0%}.",
        ),
    ),
)

# 4. Why does scaling prevent unstable gradients in training?


def _gradient_spread(e):
    """The query gradient's median and 10th-90th percentiles, none against sqrt."""
    none = e.curves["none"]["query_grad_norm"]
    sqrt = e.curves["sqrt"]["query_grad_norm"]
    peak = int(np.argmax(none))
    return (
        _setting(e)
        | _curve(e, ["none", "sqrt"], ["grad", "grad_p10", "grad_p90"])
        | _curve(e, ["none"], ["saturated"])
        | {
            "none_decades": _decades(e, "none"),
            "sqrt_decades": _decades(e, "sqrt"),
            "sqrt_grad_min": float(sqrt.min()),
            "sqrt_grad_max": float(sqrt.max()),
            "none_grad_peak": float(none[peak]),
            "none_grad_peak_d_k": int(e.curves["none"]["d_k"][peak]),
            "none_grad_1024": float(none[-1]),
            "uniform_jacobian": theory.uniform_jacobian_norm(e.settings.n_keys),
            "sqrt_theory": _spread_theory(e, 1 / math.sqrt(e.settings.d_k)),
        }
    )


def _learning(e):
    """Loss and accuracy before and after training, none against sqrt, at the current d_k."""
    runs = _trained(e, ["none", "sqrt"])
    return _setting(e) | runs | {"tokens": e.runs[e.settings.d_k]["sqrt"].x.shape[0]}


GRADIENTS = Question(
    slug="unstable-gradients",
    text="Why does scaling prevent unstable gradients in training?",
    predict="Predict: without scaling at d_k = 512, is the gradient that reaches a query "
    "larger or smaller than with ÷ √d_k?",
    steps=(
        Step(
            {"d_k": 512, "scaling": "none"},
            "query_grad",
            _gradient_spread,
            "The gradient that reaches a query, and so W_Q, is J (c/T) K, where "
            "J = diag(p) − p pᵀ is the softmax's Jacobian. At d_k = {d_k} without scaling, its "
            "median over rows is {none_grad:.3g}, and 80% of rows lie between "
            "{none_grad_p10:.3g} and {none_grad_p90:.3g}: {none_decades:.1f} orders of "
            "magnitude. {none_saturated:.0%} of the rows are saturated, and there J has all but "
            "vanished (‖J‖_F < 0.02 once the largest weight passes 0.99, against "
            "{uniform_jacobian:.3g} for a uniform row); the few near-ties keep a large J, "
            "multiplied by keys of length about √(d_k·v). With ÷ √d_k: median {sqrt_grad:.3g}, 80% "
            "between {sqrt_grad_p10:.3g} and "
            "{sqrt_grad_p90:.3g} ({sqrt_decades:.1f} orders of magnitude). The scaling holds the "
            "typical spread at v/T = {sqrt_theory:.3g} and c·|k| at about √v for every d_k, so "
            "neither factor drifts with d_k: from d_k = 1 to 1024 the ÷ √d_k median goes "
            "between {sqrt_grad_min:.3g} and {sqrt_grad_max:.3g}, while "
            "the unscaled one peaks at {none_grad_peak:.3g} (d_k = {none_grad_peak_d_k}) and "
            "is {none_grad_1024:.3g} at d_k = 1024.",
        ),
        Step(
            {"d_k": 512, "scaling": "none"},
            "training_loss",
            _learning,
            "What that does to learning: the same model of {tokens} tokens, trained from the "
            "same start with one learning rate η = {lr:g}, at d_k = {d_k}. After "
            f"{DEFAULT_STEPS} steps, ÷ √d_k has brought its loss from {{sqrt_loss0:.3g}} to "
            "{sqrt_loss:.3g}, and {sqrt_accuracy:.0%} of the tokens put their largest weight on "
            "themselves; "
            "without scaling the loss went from {none_loss0:.3g} to {none_loss:.3g}, with "
            "{none_accuracy:.0%}.",
        ),
    ),
)

# 5. What would happen if we skipped the scaling step?


def _one_hot_rows(e):
    """Spread, max weight, saturated share and entropy of none and sqrt at the current d_k."""
    return _setting(e) | _curve(
        e, ["none", "sqrt"], ["spread", "max_weight", "saturated", "entropy"]
    )


def _learning_sweep(e):
    """Final losses of none and sqrt at TRAINING_D_KS, and the share of its initial loss
    each keeps at the current d_k."""
    runs = _trained_sweep(e, ["none", "sqrt"]) | _trained(e, ["none", "sqrt"])
    kept = {f"{r}_kept": runs[f"{r}_loss"] / runs[f"{r}_loss0"] for r in ("none", "sqrt")}
    return _setting(e) | runs | kept


SKIP = Question(
    slug="skip-scaling",
    text="What would happen if we skipped the scaling step?",
    predict="Predict: without scaling at d_k = 512, what do the attention rows look like, "
    "and does the model still learn?",
    steps=(
        Step(
            {"d_k": 512, "scaling": "none"},
            "heatmap",
            _one_hot_rows,
            "At d_k = {d_k} the unscaled logits spread {none_spread:.3g} instead of "
            "{sqrt_spread:.3g}, and the softmax turns wide spreads into near one-hot rows: here "
            "the "
            "median row puts {none_max_weight:.3g} of its weight on one key (÷ √d_k: "
            "{sqrt_max_weight:.3g}), {none_saturated:.0%} of the rows give more than 99% to one "
            "key (÷ √d_k: {sqrt_saturated:.0%}), and the median entropy H/ln n is "
            "{none_entropy:.3g} (÷ √d_k: {sqrt_entropy:.3g}; 1 is uniform).",
        ),
        Step(
            {"d_k": 512, "scaling": "none"},
            "training_sweep",
            _learning_sweep,
            f"What it does to learning: loss after {DEFAULT_STEPS} steps with one learning rate "
            "η = {lr:g}, at d_k = 16, 64, 256 and 1024: none {none_loss_16:.3g}, "
            "{none_loss_64:.3g}, {none_loss_256:.3g}, {none_loss_1024:.3g}; ÷ √d_k "
            "{sqrt_loss_16:.3g}, {sqrt_loss_64:.3g}, {sqrt_loss_256:.3g}, "
            "{sqrt_loss_1024:.3g}. At d_k = {d_k} the unscaled model ends at {none_kept:.0%} "
            "of its starting loss ({none_loss0:.3g}), the ÷ √d_k one at {sqrt_kept:.0%} "
            "({sqrt_loss0:.3g}).",
        ),
    ),
)

# 6. How does scaling affect the softmax output?


def _query_row(e):
    """One query's logits (spread, range, top gap) and its weights, beside all rows' medians."""
    z = e.snap.logits[e.row]
    runner_up, top = np.sort(z)[-2:]
    return (
        _setting(e)
        | _on_screen(e, ["max_weight", "saturated"])
        | {
            "row": e.row + 1,
            "row_std": float(z.std()),
            "row_min": float(z.min()),
            "row_max": float(top),
            "row_gap": float(top - runner_up),
            "row_decades": float(top - runner_up) / math.log(10),
            "row_max_weight": float(e.snap.max_weight[e.row]),
            "row_entropy": float(e.snap.entropy[e.row] / math.log(e.settings.n_keys)),
            "uniform": 1 / e.settings.n_keys,
        }
    )


QUERY_ROW_ANSWER = (
    "At d_k = {d_k} with rule {rule}, query {row}'s {n} logits spread {row_std:.3g}, from "
    "{row_min:.3g} to {row_max:.3g}, and the top one beats the runner-up by {row_gap:.3g}. "
    "The softmax exponentiates: the weights go as e^z, so that gap becomes a factor "
    "e^{row_gap:.3g}, about 10^{row_decades:.1f}, between the two largest weights. The "
    "largest weight is {row_max_weight:.3g} (uniform: 1/n = {uniform:.3g}), and the row's "
    "entropy H/ln n is {row_entropy:.3g} (1 for a uniform row). Over all {queries} queries the "
    "median largest "
    "weight is {max_weight:.3g}, and {saturated:.0%} of the rows are saturated."
)

SOFTMAX_OUTPUT = Question(
    slug="softmax-output",
    text="How does scaling affect the softmax output?",
    predict="Predict: at d_k = 512, how much of its attention does one query give its top "
    "key, unscaled and scaled?",
    steps=(
        Step({"d_k": 512, "scaling": "none"}, "row_weights", _query_row, QUERY_ROW_ANSWER),
        Step({"d_k": 512, "scaling": "sqrt"}, "row_weights", _query_row, QUERY_ROW_ANSWER),
    ),
)

# 7. Why √d_k and not another constant, a cube root, or d_k itself?


def _power_trend(e):
    """The power rule's spread d_k^(1/2 - alpha) v / T from d_k = 1 to 1024, theory and measured."""
    s = e.settings
    exponent = 0.5 - s.alpha  # s = d_k^(1/2 - alpha) v / T
    trend = (
        "still grows: α < 1/2 under-corrects"
        if exponent > 1e-12
        else "shrinks: α > 1/2 over-corrects"
        if exponent < -1e-12
        else "stays flat"
    )
    theory = {f"power_theory_{d}": d**exponent * s.variance / s.temperature for d in (1, 1024)}
    return (
        _setting(e)
        | _curve(e, ["power"], ["spread"], 1)
        | _curve(e, ["power"], ["spread"], 1024)
        | theory
        | {"exponent": _fraction(exponent), "trend": trend}
    )


def _over_correct(e):
    """The spread and entropy of ÷ d_k at d_k = 1 and 1024."""
    return (
        _setting(e)
        | _curve(e, ["linear"], ["spread", "entropy"], 1)
        | _curve(e, ["linear"], ["spread", "entropy"], 1024)
    )


def _every_rule_spread(e):
    """The median spread of none, power, sqrt and linear at d_k = 16 and 1024."""
    rules = ["none", "power", "sqrt", "linear"]
    return _setting(e) | _curve(e, rules, ["spread"], 16) | _curve(e, rules, ["spread"], 1024)


def _every_rule_training(e):
    """Final losses of sqrt, power, linear and none at TRAINING_D_KS; is power's below
    sqrt's at d_k = 1024?"""
    runs = _trained_sweep(e, ["sqrt", "power", "linear", "none"])
    below = runs["power_loss_1024"] < runs["sqrt_loss_1024"]
    return _setting(e) | runs | {"power_vs_sqrt": "below" if below else "at or above"}


WHY_SQUARE_ROOT = Question(
    slug="why-square-root",
    text="Why √d_k and not another constant, a cube root, or d_k itself?",
    predict="Predict: dividing by the cube root of d_k instead, does the spread still grow "
    "with d_k? And dividing by d_k itself?",
    steps=(
        Step(
            {"d_k": 512, "scaling": "power", "alpha": 1 / 3},
            "spread",
            _power_trend,
            "q·k spreads as √d_k·v, so a scale c = d_k^(−α) leaves a spread of "
            "d_k^(1/2 − α)·v/T. At α = {alpha} that is d_k^({exponent})·v/T: from d_k = 1 to "
            "1024 the theory goes from {power_theory_1:.3g} to {power_theory_1024:.3g}, and the "
            "median row spread on screen from {power_spread_1:.3g} to {power_spread_1024:.3g}. "
            "It {trend}. Only α = 1/2, the square root, cancels the √d_k exactly.",
        ),
        Step(
            {"d_k": 512, "scaling": "linear"},
            "entropy",
            _over_correct,
            "÷ d_k (α = 1, the rule of μP) over-corrects: the spread shrinks as 1/√d_k, from "
            "{linear_spread_1:.3g} at d_k = 1 to {linear_spread_1024:.3g} at 1024, and the rows "
            "fade towards uniform attention: the median H/ln n goes from {linear_entropy_1:.3g} "
            "to {linear_entropy_1024:.3g} (1 is uniform). μP's case for 1/d_k is about training, "
            "not the start: once q and k are correlated, q·k grows like d_k, not √d_k.",
        ),
        Step(
            {"d_k": 512, "scaling": "sqrt"},
            "spread",
            _every_rule_spread,
            "Median row spread at d_k = 16 and 1024: none {none_spread_16:.3g} and "
            "{none_spread_1024:.3g}; ÷ d_k^α (α = {alpha}) {power_spread_16:.3g} and "
            "{power_spread_1024:.3g}; ÷ √d_k {sqrt_spread_16:.3g} and {sqrt_spread_1024:.3g}; "
            "÷ d_k {linear_spread_16:.3g} and {linear_spread_1024:.3g}. Of these, only the "
            "square root makes the theory's spread, c·√d_k·v/T, the same at every d_k, so "
            "only with it does a temperature that suits one d_k suit every other.",
        ),
        Step(
            {"d_k": 512, "scaling": "sqrt"},
            "training_sweep",
            _every_rule_training,
            f"Training, {DEFAULT_STEPS} steps with one learning rate η = {{lr:g}} for every "
            "rule; loss at d_k = 16, 64, 256 and 1024: ÷ √d_k {sqrt_loss_16:.3g}, "
            "{sqrt_loss_64:.3g}, {sqrt_loss_256:.3g}, {sqrt_loss_1024:.3g}; ÷ d_k^α "
            "(α = {alpha}) {power_loss_16:.3g}, {power_loss_64:.3g}, {power_loss_256:.3g}, "
            "{power_loss_1024:.3g}; ÷ d_k {linear_loss_16:.3g}, {linear_loss_64:.3g}, "
            "{linear_loss_256:.3g}, {linear_loss_1024:.3g}; none {none_loss_16:.3g}, "
            "{none_loss_64:.3g}, {none_loss_256:.3g}, {none_loss_1024:.3g}. At d_k = 1024, "
            "÷ d_k^α ends {power_vs_sqrt} ÷ √d_k. What sets the square root apart is not that "
            "it trains best on every task, but that its logits start with the same spread at "
            "every d_k, so a temperature that suits one d_k suits all.",
        ),
    ),
)

# 8. How does scaling help numerical stability in large models?


def _stability(e):
    """The largest logit against exp's limits, the naive softmax's overflowing rows, and
    bfloat16's rounding of that logit: |z| = m 2^x (1/2 <= m < 1) is stored to within
    2^(x - 8) / 2, which changes a ratio of two weights by up to e^(2 * that)."""
    largest = float(e.snap.logits.max())
    half_step = math.ldexp(1.0, math.frexp(abs(largest))[1] - BFLOAT16_BITS - 1) if largest else 0.0
    return (
        _setting(e)
        | {"largest": largest, "half_step": half_step, "ratio_error": math.exp(2 * half_step)}
        | {f"limit_{name}": limit for name, limit in EXP_LIMITS.items()}
        | {
            f"overflow_{name}": share
            for name, share in naive_overflow_shares(e.snap.logits).items()
        }
    )


STABILITY_ANSWER = (
    "At d_k = {d_k} with rule {rule}, the largest logit is {largest:.3g}. exp(z) overflows "
    "once z passes the log of the format's largest number: {limit_float16:.4g} in float16, "
    "{limit_bfloat16:.4g} in bfloat16, {limit_float32:.4g} in float32. A naive softmax, "
    "exp(z_j) / Σ exp(z_l), would overflow in {overflow_float16:.0%} of the rows in float16, "
    "{overflow_bfloat16:.0%} in bfloat16 and {overflow_float32:.0%} in float32. Frameworks "
    "subtract each row's largest logit first, so nothing overflows in any format, scaled or "
    "not. What the scaling still buys is precision: if the logits are stored in bfloat16 (8 "
    "significant bits), a logit of {largest:.3g} is rounded by up to {half_step:.2g}, which "
    "can change the ratio of two weights by a factor of up to {ratio_error:.3g}."
)

STABILITY = Question(
    slug="numerical-stability",
    text="How does scaling help numerical stability in large models?",
    predict="Predict: at d_k = 1024 without scaling, would a naive softmax overflow in "
    "float16? In float32?",
    steps=(
        Step({"d_k": 1024, "scaling": "none"}, "stability", _stability, STABILITY_ANSWER),
        Step({"d_k": 1024, "scaling": "sqrt"}, "stability", _stability, STABILITY_ANSWER),
    ),
)

# 9. How does scaling interact with the softmax step that follows?


def _one_knob(e):
    """c/T; the temperatures T / c and T' = T / (c sqrt(d_k)) at which none and sqrt have
    the same c/T; the largest difference between the weights on screen and
    softmax(q . k / (sqrt(d_k) T'))."""
    s = e.settings
    t_sqrt = s.temperature / (s.scale * math.sqrt(s.d_k))
    sqrt_weights = _weights_of(e.snap.q @ e.snap.k.T / (math.sqrt(s.d_k) * t_sqrt))
    note = (
        " (QK-norm also layer-normalises q and k, so its weights are not ÷ √d_k's.)"
        if s.scaling == "qk_norm"
        else ""
    )
    return (
        _setting(e)
        | _on_screen(e, ["spread"])
        | {
            "c_over_t": s.scale / s.temperature,
            "t_none": s.temperature / s.scale,
            "t_sqrt": t_sqrt,
            "difference": float(np.abs(e.snap.weights - sqrt_weights).max()),
            "qk_note": note,
            "spread_theory": float(
                theory.logit_std(s.scaling, s.d_k, s.variance, s.temperature, s.alpha)
            ),
            "threshold": _threshold(e),
        }
    )


ONE_KNOB_ANSWER = (
    "The softmax sees z = c·q·k/T, so the scale c and the temperature T are one knob: only "
    "c/T matters. At d_k = {d_k}, rule {rule} with T = {T:g} gives c/T = {c_over_t:.3g}, the "
    "same as none with T = {t_none:.3g} and as ÷ √d_k with T = {t_sqrt:.3g}; computed the "
    "÷ √d_k way, the weights differ from those on screen by at most {difference:.2g}."
    "{qk_note} How peaked the rows come out depends on the logits' spread, "
    "{spread_theory:.3g} in theory (median row here: {spread:.3g}), against "
    "√(2 ln n) = {threshold:.3g}, beyond which a few keys take most of each row's weight."
)

INTERACTION = Question(
    slug="softmax-interaction",
    text="How does scaling interact with the softmax step that follows?",
    predict="Predict: at d_k = 16, which temperature makes the unscaled softmax the same "
    "as the ÷ √d_k one at T = 1?",
    steps=(
        Step(
            {"d_k": 16, "scaling": "none", "temperature": 4.0},
            "heatmap",
            _one_knob,
            ONE_KNOB_ANSWER,
        ),
        Step(
            {"d_k": 16, "scaling": "sqrt", "temperature": 1.0},
            "heatmap",
            _one_knob,
            ONE_KNOB_ANSWER,
        ),
    ),
)

# 10. In (Q Kᵀ)/√d_k, what does each component represent?


def _components(e):
    """The shapes, and q_1 . k_1 through the scaling to its weight."""
    s, snap = e.settings, e.snap
    score = float(snap.q[0] @ snap.k[0])
    return _setting(e) | {
        "scores_std": _scores_std(e),
        "raw_theory": math.sqrt(s.d_k) * s.variance,
        "score": score,
        "root": math.sqrt(s.d_k),
        "scaled_score": score / math.sqrt(s.d_k),
        "scaled_std": _scores_std(e) / math.sqrt(s.d_k),
        "logit": float(snap.logits[0, 0]),
        "weight": float(snap.weights[0, 0]),
    }


COMPONENTS = Question(
    slug="components",
    text="In (Q Kᵀ)/√d_k, what does each component represent?",
    predict="Predict: with 64 queries, 32 keys and d_k = 16, what is the shape of Q Kᵀ?",
    steps=(
        Step(
            {"d_k": 16, "n_keys": 32, "scaling": "sqrt"},
            "heatmap",
            _components,
            "Q is {queries} × {d_k}: one row q_i per query, what a token is looking for. K is "
            "{n} × {d_k}: one row k_j per key, what a token offers to be found by. Here every "
            "component is drawn from N(0, v = {v:g}). Q Kᵀ is {queries} × {n}: entry (i, j) "
            "is the score q_i·k_j, a sum of d_k = {d_k} products; for example "
            "q_1·k_1 = {score:.3g}. The scores spread {scores_std:.3g} (theory √d_k·v = "
            "{raw_theory:.3g}). d_k is the length of each query and key vector, √d_k = "
            "{root:.3g}; dividing by it gives q_1·k_1/√d_k = {scaled_score:.3g} and a spread of "
            "{scaled_std:.3g} (theory v = {v:g}). On screen, rule {rule} (c = {c:.3g}) and "
            "temperature T = {T:g} make the logit z_11 = {logit:.3g}; the softmax of each row "
            "of logits gives the attention weights (query 1's weight on key 1: {weight:.3g}), "
            "which then average the value vectors V.",
        ),
    ),
)

# 11. Can the √d_k be adjusted for different tasks?


def _temperature(e):
    """The median spread and max weight on screen, and the same draw's at T = 1."""
    at_one = simulate(replace(e.settings, temperature=1.0))
    return (
        _setting(e)
        | _on_screen(e, ["spread", "max_weight"])
        | {
            "spread_t1": float(np.median(at_one.logits.std(axis=-1))),
            "max_weight_t1": float(np.median(at_one.max_weight)),
        }
    )


def _mu_p(e):
    """÷ d_k against ÷ √d_k: spread, entropy and training at the current d_k."""
    return (
        _setting(e)
        | _curve(e, ["linear", "sqrt"], ["spread", "entropy"])
        | _trained(e, ["linear", "sqrt"])
        | {"root": math.sqrt(e.settings.d_k)}
    )


def _qk_norm(e):
    """Median spread of qk_norm, sqrt and none; qk_norm's without its 1/sqrt(d_k); the
    median length of the layer-normalised queries."""
    d_k = e.settings.d_k
    numbers = _setting(e) | _curve(e, ["qk_norm", "sqrt", "none"], ["spread"])
    return numbers | {
        "qk_norm_unscaled": numbers["qk_norm_spread"] * math.sqrt(d_k),
        "qk_length": float(np.median(np.linalg.norm(layer_norm(e.snap.q)[0], axis=1))),
        "root": math.sqrt(d_k),
    }


MU_P_ANSWER = (
    "μP (Yang et al. 2022) divides by d_k instead, √d_k = {root:.3g} times more than ÷ √d_k. "
    "At the start that makes the median spread {linear_spread:.3g} at d_k = {d_k} (÷ √d_k: "
    "{sqrt_spread:.3g}) and the median H/ln n {linear_entropy:.3g} (÷ √d_k: "
    "{sqrt_entropy:.3g}; 1 is uniform). μP pairs it with zero-initialised queries and learning "
    "rates set per width. "
    f"With η = {{lr:g}} for every rule, after {DEFAULT_STEPS} steps ÷ d_k's loss is "
    "{linear_loss:.3g} (from {linear_loss0:.3g}) and ÷ √d_k's {sqrt_loss:.3g} (from "
    "{sqrt_loss0:.3g})."
)

ADJUST = Question(
    slug="adjust",
    text="Can the √d_k be adjusted for different tasks?",
    predict="Predict: what does lowering the temperature from 1 to 0.25 do to the attention rows?",
    steps=(
        Step(
            {"d_k": 64, "scaling": "sqrt", "temperature": 0.25},
            "max_weight",
            _temperature,
            "Yes. The usual knob is a temperature T (or a learned scale) on top of the scaling: "
            "z = c·q·k/T. At d_k = {d_k} with rule {rule} and T = {T:g}, the median row spread "
            "is {spread:.3g} and the median largest weight {max_weight:.3g}; the same draw at "
            "T = 1 gives {spread_t1:.3g} and {max_weight_t1:.3g}. A lower T sharpens every "
            "row, a higher one flattens it.",
        ),
        Step(
            {"d_k": 256, "scaling": "linear", "learning_rate": 2.0},
            "training_loss",
            _mu_p,
            MU_P_ANSWER,
        ),
        Step(
            {"d_k": 256, "scaling": "linear", "learning_rate": 100.0},
            "training_loss",
            _mu_p,
            MU_P_ANSWER,
        ),
        Step(
            {"d_k": 64, "scaling": "qk_norm", "variance": 4.0},
            "spread",
            _qk_norm,
            "QK-norm (Dehghani et al. 2023) layer-normalises q and k before the dot product, "
            "so the spread no longer depends on their variance: at v = {v:g} and d_k = {d_k} "
            "QK-norm's median spread is {qk_norm_spread:.3g}, against {sqrt_spread:.3g} for "
            "÷ √d_k alone and {none_spread:.3g} with none. It keeps the 1/√d_k: without it the "
            "normalised scores would spread {qk_norm_unscaled:.3g}.",
        ),
    ),
)

# 12. Is the scaling always necessary?


def _small_d_k(e):
    """Unscaled spread and saturation against the collapse threshold; training, none
    against sqrt, at the current d_k."""
    return (
        _setting(e)
        | _curve(e, ["none"], ["spread", "saturated"])
        | _trained(e, ["none", "sqrt"])
        | {"threshold": _threshold(e)}
    )


def _small_variance(e):
    """Spread and saturation of none and sqrt; their final losses at TRAINING_D_KS."""
    return (
        _setting(e)
        | _curve(e, ["none", "sqrt"], ["spread", "saturated"])
        | _trained_sweep(e, ["none", "sqrt"])
        | {"none_theory": _spread_theory(e, 1.0), "threshold": _threshold(e)}
    )


def _temperature_instead(e):
    """c/T on screen against ÷ √d_k at T = 1, and the largest difference of their weights."""
    s = e.settings
    scaled = simulate(replace(s, scaling="sqrt", temperature=1.0))
    return (
        _setting(e)
        | _on_screen(e, ["spread", "saturated"])
        | {
            "c_over_t": s.scale / s.temperature,
            "sqrt_c": 1 / math.sqrt(s.d_k),
            "sqrt_t1_difference": float(np.abs(e.snap.weights - scaled.weights).max()),
            "sqrt_t1_spread": float(np.median(scaled.logits.std(axis=-1))),
            "sqrt_t1_saturated": float(np.mean(scaled.max_weight > SATURATION)),
        }
    )


ALWAYS = Question(
    slug="always-necessary",
    text="Is the scaling always necessary?",
    predict="Predict: is there a setting where the unscaled model learns as well as the "
    "scaled one?",
    steps=(
        Step(
            {"d_k": 16, "scaling": "none"},
            "training_loss",
            _small_d_k,
            "Not always: what matters is the spread c·√d_k·v/T, not d_k itself. At d_k = "
            "{d_k}, v = {v:g} and T = {T:g}, the unscaled logits spread {none_spread:.3g} "
            "(collapse threshold √(2 ln n) = {threshold:.3g}) and {none_saturated:.0%} of the "
            f"rows are saturated. After {DEFAULT_STEPS} steps with η = {{lr:g}}, the unscaled "
            "model's loss is {none_loss:.3g} and the ÷ √d_k one's {sqrt_loss:.3g}.",
        ),
        Step(
            {"d_k": 512, "scaling": "none", "variance": 0.1},
            "training_sweep",
            _small_variance,
            "The variance counts too: unscaled, the spread is √d_k·v/T. At v = {v:g} the "
            "unscaled spread at d_k = {d_k} is {none_spread:.3g} (theory √d_k·v/T = "
            "{none_theory:.3g}; collapse threshold "
            "{threshold:.3g}), with {none_saturated:.0%} of rows saturated; ÷ √d_k makes it "
            "{sqrt_spread:.3g}. Loss after "
            f"{DEFAULT_STEPS} steps (η = {{lr:g}}) at d_k = 16, 64, 256 and 1024: none "
            "{none_loss_16:.3g}, {none_loss_64:.3g}, {none_loss_256:.3g}, "
            "{none_loss_1024:.3g}; ÷ √d_k {sqrt_loss_16:.3g}, {sqrt_loss_64:.3g}, "
            "{sqrt_loss_256:.3g}, {sqrt_loss_1024:.3g}.",
        ),
        Step(
            {"d_k": 512, "scaling": "qk_norm", "variance": 4.0},
            "spread",
            _qk_norm,
            "Under QK-norm the scale no longer has to track the variance: the layer norm fixes "
            "the length of q and k, so at v = {v:g} and d_k = {d_k} the median spread is "
            "{qk_norm_spread:.3g}, against {sqrt_spread:.3g} for ÷ √d_k alone and "
            "{none_spread:.3g} with none. But it does not make a scale unnecessary: the layer "
            "norm leaves vectors of length {qk_length:.3g} (√d_k = {root:.3g}), and without its "
            "1/√d_k the scores "
            "would spread {qk_norm_unscaled:.3g}. Models with QK-norm keep a fixed 1/√d_k, as "
            "here, or learn the scale (Henry et al. 2020).",
        ),
        Step(
            {"d_k": 16, "scaling": "none", "temperature": 4.0},
            "saturated",
            _temperature_instead,
            "And a temperature can take its place. With rule {rule} at d_k = {d_k}, T = {T:g} "
            "gives c/T = {c_over_t:.3g}; ÷ √d_k at T = 1 gives {sqrt_c:.3g}, and the two sets "
            "of weights differ by at most {sqrt_t1_difference:.2g}. Here the median row spread is "
            "{spread:.3g} with {saturated:.0%} of the rows saturated; ÷ √d_k at T = 1: "
            "{sqrt_t1_spread:.3g} and {sqrt_t1_saturated:.0%}.",
        ),
    ),
)

QUESTIONS = (
    PURPOSE,
    FACTOR,
    TYPICAL,
    GRADIENTS,
    SKIP,
    SOFTMAX_OUTPUT,
    WHY_SQUARE_ROOT,
    STABILITY,
    INTERACTION,
    COMPONENTS,
    ADJUST,
    ALWAYS,
)


def question(slug: str) -> Question:
    """The question of ``slug``; a KeyError naming the known slugs if there is none."""
    for q in QUESTIONS:
        if q.slug == slug:
            return q
    known = ", ".join(q.slug for q in QUESTIONS)
    raise KeyError(f"no question {slug!r}; the questions are: {known}")
