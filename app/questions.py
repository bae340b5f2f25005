"""Learners' questions about the scaling, each answered by the simulation on screen.

A question is one or more steps. A step sets a scenario (control values), names
the view that shows it, and answers with words from its content file
(``app/content/questions/<slug>.md``) filled in with numbers and conditions read
from the ``Results`` on screen::

    step.said(results) == step.template.render(step.numbers(results))

so every number in an answer is computed, never typed in, and every claim that
depends on the numbers is worded by a condition computed from them; a test
checks each on its own. Answers speak of the results' own settings ("at d_k =
512 with rule none"), so they stay true after the learner moves a slider.
Numpy and the app's pure-Python modules only: no Panel, no Bokeh.

>>> question("purpose").steps[0].scenario
{'d_k': 512, 'scaling': 'none'}
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from app import softmax, theory
from app.precision import EXP_LIMITS, naive_overflow_shares
from app.results import Results
from app.simulation import SATURATION, layer_norm, simulate
from app.style import MODEL_HEADS, RULE_NAMES, fraction, rule_name
from app.training import DEFAULT_STEPS
from app.words import Said, Template, content, text

OTHER_VIEWS = ("stability",)  # where an answer may point besides app.scenario.VIEWS
TRAINING_D_KS = (16, 64, 256, 1024)  # the d_k of answers that read the training sweep
BFLOAT16_BITS = 8  # significant bits of bfloat16 (7 stored, 1 implicit)
STALLED_ABOVE = 0.4  # a run "stalls" that keeps more than this share of its starting loss
LEARNS_BELOW = 0.1  # a run "learns" that ends below this share of its starting loss
SAME_WEIGHTS = 1e-9  # two softmaxes of one knob c/T differ by rounding only


class TrainingPending(LookupError):
    """The results have no training runs yet at a d_k that an answer needs."""


class RatesPending(LookupError):
    """The results have no learning-rate sweep yet, and an answer needs it."""


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
        ``numbers(results) -> {name: float | int | str | bool}``, every number and
        condition of the answer; raises ``TrainingPending`` while the runs it
        reads are missing.
    entry : str
        The answer's entry in the question's content file: by default
        ``"step <n>"``, counted from 1.
    template : Template
        That entry (set by ``Question``).
    """

    scenario: dict
    view: str
    numbers: Callable[[Results], dict]
    entry: str = ""
    template: Template | None = field(default=None, compare=False, repr=False)

    def said(self, results: Results) -> Said:
        """The answer for ``results`` and the conditions that worded it, or the notice
        that it waits for the training runs."""
        try:
            numbers = self.numbers(results)
        except TrainingPending:
            return Said(text("notices", "training pending"))
        except RatesPending:
            return Said(text("notices", "rates pending"))
        return self.template.render(numbers)

    def answer(self, results: Results) -> str:
        """The answer's words (Markdown)."""
        return self.said(results).text


@dataclass(frozen=True)
class Question:
    """A learner's question: ``?question=<slug>`` opens it at its first step.

    Attributes
    ----------
    slug : str
        Lowercase and hyphenated; its words are ``app/content/questions/<slug>.md``.
    steps : tuple of Step
    """

    slug: str
    steps: tuple[Step, ...]

    def __post_init__(self):
        words = content(f"questions/{self.slug}")
        steps = tuple(
            replace(step, template=words[step.entry or f"step {i + 1}"][""])
            for i, step in enumerate(self.steps)
        )
        object.__setattr__(self, "steps", steps)

    @property
    def text(self) -> str:
        """The learner's wording."""
        return text(f"questions/{self.slug}", "question")

    @property
    def predict(self) -> str:
        """One line asking the learner to predict the answer before revealing it."""
        return text(f"questions/{self.slug}", "predict")


# --- Reading the results -----------------------------------------------------------------

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


def _setting(r: Results) -> dict:
    """The scenario's values: d_k, v, T, n (keys), queries, lr, c, rule, alpha, steps."""
    s = r.settings
    return {
        "d_k": s.d_k,
        "v": s.variance,
        "T": s.temperature,
        "n": s.n_keys,
        "queries": s.n_queries,
        "lr": r.learning_rate,
        "c": s.scale,
        "rule": rule_name(s.scaling, s.alpha),
        "alpha": fraction(s.alpha),
        "steps": DEFAULT_STEPS,
    }


def _curve(r: Results, rules, names, d_k=None) -> dict:
    """``{rule}_{name}`` read off the curves at the current d_k, or ``{rule}_{name}_{d_k}``."""
    at = r.settings.d_k if d_k is None else d_k
    i = list(r.curves[rules[0]]["d_k"]).index(at)
    suffix = "" if d_k is None else f"_{d_k}"
    return {
        f"{rule}_{name}{suffix}": float(r.curves[rule][CURVE_COLUMNS[name]][i])
        for rule in rules
        for name in names
    }


def _on_screen(r: Results, names) -> dict:
    """``{name}`` of the current rule at the current d_k (the curves' medians)."""
    rule = r.settings.scaling
    return {name: _curve(r, [rule], [name])[f"{rule}_{name}"] for name in names}


def _decades(r: Results, rule: str) -> float:
    """Orders of magnitude between the 10th and 90th percentile of the query gradient,
    ``log10(p90 / p10)``; a p10 that underflowed to 0 counts as 1e-300."""
    g = _curve(r, [rule], ["grad_p10", "grad_p90"])
    return math.log10(g[f"{rule}_grad_p90"]) - math.log10(max(g[f"{rule}_grad_p10"], 1e-300))


def _trained(r: Results, rules, d_k=None) -> dict:
    """``{rule}_loss``, ``_loss0``, ``_kept`` (their ratio) and ``_accuracy`` after and
    before training at the current d_k, or ``..._{d_k}`` at ``d_k``;
    ``TrainingPending`` if not yet run."""
    at = r.settings.d_k if d_k is None else d_k
    if at not in r.runs:
        raise TrainingPending(at)
    suffix = "" if d_k is None else f"_{d_k}"
    numbers = {}
    for rule in rules:
        run = r.runs[at][rule]
        numbers |= {
            f"{rule}_loss{suffix}": float(run.loss[-1]),
            f"{rule}_loss0{suffix}": float(run.loss[0]),
            f"{rule}_kept{suffix}": run.kept,
            f"{rule}_accuracy{suffix}": float(run.accuracy[-1]),
        }
    return numbers


def _trained_sweep(r: Results, rules) -> dict:
    """``trained`` at every d_k of ``TRAINING_D_KS``."""
    numbers = {}
    for d_k in TRAINING_D_KS:
        numbers |= _trained(r, rules, d_k)
    return numbers


def _rates(r: Results, rules, need: bool = True) -> dict:
    """``{rule}_best_{d_k}``, each rule's lowest loss over the learning-rate sweep at each
    of its d_k; ``swept``; and whether every η leaves the unscaled run above
    STALLED_ABOVE of its starting loss at d_k = 1024. ``RatesPending`` while the sweep
    computes, unless not ``need``ed (then only ``swept``, false)."""
    if r.rates is None:
        if need:
            raise RatesPending
        return {"swept": False, "none_stalls_at_every_eta_at_1024": False}
    numbers = {"swept": True}
    for rule in rules:
        lowest = r.rates.best(rule)[0]
        numbers |= {f"{rule}_best_{d}": float(x) for d, x in zip(r.rates.d_ks, lowest, strict=True)}
    at = list(r.rates.d_ks).index(1024)
    kept = r.rates.best("none")[0][at] / r.rates.start["none"][at]
    return numbers | {"none_stalls_at_every_eta_at_1024": bool(kept > STALLED_ABOVE)}


def _none_against_sqrt(numbers: dict, suffixes) -> dict:
    """Where the unscaled run ends lower than the ÷ √d_k one, at the d_k of ``suffixes``."""
    ahead = [numbers[f"none_loss{x}"] < numbers[f"sqrt_loss{x}"] for x in suffixes]
    return {"none_ahead_somewhere": any(ahead), "none_ahead_everywhere": all(ahead)}


def _spread_theory(r: Results, c: float) -> float:
    """The theory's spread ``s = c sqrt(d_k) v / T`` (Vaswani et al. 2017, footnote 4)."""
    s = r.settings
    return c * math.sqrt(s.d_k) * s.variance / s.temperature


def _threshold(r: Results) -> float:
    """The collapse threshold ``s_c = sqrt(2 ln n)``."""
    return theory.collapse_threshold(r.settings.n_keys)


def _scores_std(r: Results) -> float:
    """Standard deviation of the unscaled scores q . k of the current draw."""
    return float(np.std(r.snap.q @ r.snap.k.T))


def _weights_of(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``logits``, the page's stable one."""
    return softmax.softmax_rows(logits).weights


# --- The questions -----------------------------------------------------------------------
#
# Each question's numbers come first, then its steps. A function of numbers reads only the
# results it is given; a claim that depends on the numbers is a condition it computes.

# 1. What is the purpose of scaling the dot product in self-attention?


def _purpose_scores(r):
    """The unscaled scores' spread (theory sqrt(d_k) v) and what the rule on screen makes of it."""
    return _setting(r) | {
        "scores_std": _scores_std(r),
        "raw_theory": math.sqrt(r.settings.d_k) * r.settings.variance,
        "logits_std": float(np.std(r.snap.logits)),
        "saturated": float(np.mean(r.snap.max_weight > SATURATION)),
    }


def _purpose_flat(r):
    """The median row spread of none and sqrt at d_k = 16, 1024 and their saturated shares
    at the current d_k."""
    rules = ["none", "sqrt"]
    return (
        _setting(r)
        | _curve(r, rules, ["spread"], 16)
        | _curve(r, rules, ["spread"], 1024)
        | _curve(r, rules, ["saturated"])
        | {"sqrt_theory": _spread_theory(r, 1 / math.sqrt(r.settings.d_k))}
    )


PURPOSE = Question(
    "purpose",
    (
        Step({"d_k": 512, "scaling": "none"}, "histogram", _purpose_scores),
        Step({"d_k": 512, "scaling": "sqrt"}, "spread", _purpose_flat),
    ),
)

# 2. How is the scaling factor calculated in the Transformer architecture?


def _factor(r):
    """c = 1/sqrt(d_k), and the spread of the scores before and after it."""
    d_k = r.settings.d_k
    return _setting(r) | {
        "root": math.sqrt(d_k),
        "sqrt_c": 1 / math.sqrt(d_k),
        "raw_theory": math.sqrt(d_k) * r.settings.variance,
        "scores_std": _scores_std(r),
        "scaled_std": _scores_std(r) / math.sqrt(d_k),
    }


FACTOR = Question("scaling-factor", (Step({"d_k": 64, "scaling": "sqrt"}, "histogram", _factor),))

# 3. What is the typical value of the key dimension d_k in Transformers?


def _models_table() -> str:
    """MODEL_HEADS as a Markdown table (names and numbers only)."""
    rows = [f"| {m} | {d} / {h} | {d // h} |" for m, d, h in MODEL_HEADS]
    return "\n".join(["| model | d_model / heads | d_k |", "|---|---|---|", *rows])


def _typical(r):
    """d_k = d_model / heads of MODEL_HEADS, and none against sqrt at the current d_k."""
    sizes = sorted({d_model // heads for _, d_model, heads in MODEL_HEADS})
    return (
        _setting(r)
        | _curve(r, ["none", "sqrt"], ["spread", "max_weight", "saturated"])
        | {
            "models_table": _models_table(),
            "typical": " or ".join(map(str, sizes)),
            "none_theory": _spread_theory(r, 1.0),
        }
    )


TYPICAL = Question("typical-d-k", (Step({"d_k": 64, "scaling": "none"}, "saturated", _typical),))

# 4. Why does scaling prevent unstable gradients in training?


def _gradient_spread(r):
    """The query gradient's median and 10th-90th percentiles, none against sqrt."""
    none = r.curves["none"]["query_grad_norm"]
    sqrt = r.curves["sqrt"]["query_grad_norm"]
    peak = int(np.argmax(none))
    return (
        _setting(r)
        | _curve(r, ["none", "sqrt"], ["grad", "grad_p10", "grad_p90"])
        | _curve(r, ["none"], ["saturated"])
        | {
            "none_decades": _decades(r, "none"),
            "sqrt_grad_min": float(sqrt.min()),
            "sqrt_grad_max": float(sqrt.max()),
            "none_grad_peak": float(none[peak]),
            "none_grad_peak_d_k": int(r.curves["none"]["d_k"][peak]),
            "none_grad_1024": float(none[-1]),
            "uniform_jacobian": theory.uniform_jacobian_norm(r.settings.n_keys),
        }
    )


def _learning(r):
    """Loss and accuracy before and after training, none against sqrt, at the current d_k;
    whether the unscaled run stalls while the scaled one learns, or ends lower."""
    runs = _trained(r, ["none", "sqrt"])
    return (
        _setting(r)
        | runs
        | {
            "tokens": r.runs[r.settings.d_k]["sqrt"].x.shape[0],
            "none_stalls_sqrt_learns": runs["none_kept"] > STALLED_ABOVE
            and runs["sqrt_kept"] < LEARNS_BELOW,
            "none_ahead": runs["none_loss"] < runs["sqrt_loss"],
        }
    )


GRADIENTS = Question(
    "unstable-gradients",
    (
        Step({"d_k": 512, "scaling": "none"}, "query_grad", _gradient_spread),
        Step({"d_k": 512, "scaling": "none"}, "training_loss", _learning),
    ),
)

# 5. What would happen if we skipped the scaling step?


def _one_hot_rows(r):
    """Spread, max weight, saturated share and entropy of none and sqrt at the current d_k."""
    numbers = _setting(r) | _curve(
        r, ["none", "sqrt"], ["spread", "max_weight", "saturated", "entropy"]
    )
    return numbers | {"none_most_saturated": numbers["none_saturated"] > 0.5}


def _learning_sweep(r):
    """Final losses of none and sqrt at TRAINING_D_KS, and the share of its initial loss
    each keeps at the current d_k."""
    runs = _trained_sweep(r, ["none", "sqrt"]) | _trained(r, ["none", "sqrt"])
    return (
        _setting(r)
        | runs
        | _rates(r, [], need=False)
        | _none_against_sqrt(runs, [f"_{d}" for d in TRAINING_D_KS])
        | {
            "none_stalls": runs["none_kept"] > STALLED_ABOVE,
            "none_stalls_sqrt_learns": runs["none_kept"] > STALLED_ABOVE
            and runs["sqrt_kept"] < LEARNS_BELOW,
        }
    )


SKIP = Question(
    "skip-scaling",
    (
        Step({"d_k": 512, "scaling": "none"}, "heatmap", _one_hot_rows),
        Step({"d_k": 512, "scaling": "none"}, "training_sweep", _learning_sweep),
    ),
)

# 6. How does scaling affect the softmax output?


def _query_row(r):
    """One query's logits (spread, top gap) and its weights, beside all rows' medians."""
    row = r.shown_row
    z = r.snap.logits[row]
    gap = float(np.diff(np.sort(z)[-2:])[0]) if z.size > 1 else 0.0
    n = r.settings.n_keys
    return (
        _setting(r)
        | _on_screen(r, ["spread", "max_weight", "entropy", "saturated"])
        | {
            "row": row + 1,
            "row_std": float(z.std()),
            "row_gap": gap,
            "row_decades": gap / math.log(10),
            "row_max_weight": float(r.snap.max_weight[row]),
            "row_entropy": float(r.snap.entropy[row] / math.log(n)) if n > 1 else 0.0,
            "uniform": 1 / n,
        }
    )


SOFTMAX_OUTPUT = Question(
    "softmax-output",
    (
        Step({"d_k": 512, "scaling": "none"}, "row_weights", _query_row, "answer"),
        Step({"d_k": 512, "scaling": "sqrt"}, "row_weights", _query_row, "answer"),
    ),
)

# 7. Why √d_k and not another constant, a cube root, or d_k itself?


def _power_trend(r):
    """The power rule's spread d_k^(1/2 - alpha) v / T at d_k = 16 and 1024, theory and
    measured, and which way it goes."""
    s = r.settings
    exponent = 0.5 - s.alpha  # s = d_k^(1/2 - alpha) v / T
    theory_spread = {
        f"power_theory_{d}": d**exponent * s.variance / s.temperature for d in (16, 1024)
    }
    return (
        _setting(r)
        | _curve(r, ["power"], ["spread"], 16)
        | _curve(r, ["power"], ["spread"], 1024)
        | theory_spread
        | {
            "exponent": fraction(exponent),
            "power_grows": exponent > 1e-12,
            "power_shrinks": exponent < -1e-12,
        }
    )


def _over_correct(r):
    """The spread and entropy of ÷ d_k at d_k = 16 and 1024."""
    numbers = (
        _setting(r)
        | _curve(r, ["linear"], ["spread", "entropy"], 16)
        | _curve(r, ["linear"], ["spread", "entropy"], 1024)
    )
    return numbers | {"linear_fades": numbers["linear_entropy_1024"] > numbers["linear_entropy_16"]}


def _every_rule_spread(r):
    """The median spread of none, power, sqrt and linear at d_k = 16 and 1024."""
    rules = ["none", "power", "sqrt", "linear"]
    return _setting(r) | _curve(r, rules, ["spread"], 16) | _curve(r, rules, ["spread"], 1024)


def _every_rule_training(r):
    """Final losses of sqrt, power, linear and none at TRAINING_D_KS; which ends lowest at
    d_k = 1024."""
    rules = ["sqrt", "power", "linear", "none"]
    runs = _trained_sweep(r, rules)
    lowest = min(rules, key=lambda rule: runs[f"{rule}_loss_1024"])
    return (
        _setting(r)
        | runs
        | (_rates(r, ["sqrt", "power"]) if r.rates is not None else {"swept": False})
        | {
            "sqrt_lowest_at_1024": runs["sqrt_loss_1024"] <= runs[f"{lowest}_loss_1024"],
            "lowest_at_1024": RULE_NAMES[lowest],
        }
    )


WHY_SQUARE_ROOT = Question(
    "why-square-root",
    (
        Step({"d_k": 512, "scaling": "power", "alpha": 1 / 3}, "spread", _power_trend),
        Step({"d_k": 512, "scaling": "linear"}, "entropy", _over_correct),
        Step({"d_k": 512, "scaling": "sqrt"}, "spread", _every_rule_spread),
        Step({"d_k": 512, "scaling": "sqrt"}, "training_sweep", _every_rule_training),
    ),
)

# 8. How does scaling help numerical stability in large models?


def _stability(r):
    """The largest logit against exp's limits, the naive softmax's overflowing rows, and
    bfloat16's rounding of that logit: |z| = m 2^x (1/2 <= m < 1) is stored to within
    2^(x - 8) / 2, which changes a ratio of two weights by up to e^(2 * that)."""
    largest = float(r.snap.logits.max())
    half_step = math.ldexp(1.0, math.frexp(abs(largest))[1] - BFLOAT16_BITS - 1) if largest else 0.0
    return (
        _setting(r)
        | {"largest": largest, "half_step": half_step, "ratio_error": math.exp(2 * half_step)}
        | {f"limit_{name}": limit for name, limit in EXP_LIMITS.items()}
        | {
            f"overflow_{name}": share
            for name, share in naive_overflow_shares(r.snap.logits).items()
        }
    )


STABILITY = Question(
    "numerical-stability",
    (
        Step({"d_k": 1024, "scaling": "none"}, "stability", _stability, "answer"),
        Step({"d_k": 1024, "scaling": "sqrt"}, "stability", _stability, "answer"),
    ),
)

# 9. How does scaling interact with the softmax step that follows?


def _one_knob(r):
    """c/T; the temperatures at which none (T / c) or sqrt (T / (c sqrt(d_k))) have the
    same c/T; the largest difference between the weights on screen and those of the
    other rule at its temperature (none against sqrt, every other rule against none)."""
    s = r.settings
    t_none, t_sqrt = s.temperature / s.scale, s.temperature / (s.scale * math.sqrt(s.d_k))
    if s.scaling == "none":
        other = r.snap.q @ r.snap.k.T / (math.sqrt(s.d_k) * t_sqrt)
    else:
        other = r.snap.q @ r.snap.k.T / t_none
    return (
        _setting(r)
        | _on_screen(r, ["spread", "max_weight"])
        | {
            "c_over_t": s.scale / s.temperature,
            "t_none": t_none,
            "t_sqrt": t_sqrt,
            "difference": float(np.abs(r.snap.weights - _weights_of(other)).max()),
            "rule_is_none": s.scaling == "none",
            "rule_is_qk_norm": s.scaling == "qk_norm",
            "spread_theory": float(
                theory.logit_std(s.scaling, s.d_k, s.variance, s.temperature, s.alpha)
            ),
            "threshold": _threshold(r),
        }
        | {"above_threshold": _on_screen(r, ["spread"])["spread"] > _threshold(r)}
    )


INTERACTION = Question(
    "softmax-interaction",
    (
        Step({"d_k": 16, "scaling": "none", "temperature": 4.0}, "heatmap", _one_knob, "answer"),
        Step({"d_k": 16, "scaling": "sqrt", "temperature": 1.0}, "heatmap", _one_knob, "answer"),
    ),
)

# 10. In (Q Kᵀ)/√d_k, what does each component represent?


def _components(r):
    """The shapes, and q_1 . k_1 through the scaling to its weight."""
    s, snap = r.settings, r.snap
    score = float(snap.q[0] @ snap.k[0])
    return _setting(r) | {
        "scores_std": _scores_std(r),
        "raw_theory": math.sqrt(s.d_k) * s.variance,
        "score": score,
        "root": math.sqrt(s.d_k),
        "scaled_score": score / math.sqrt(s.d_k),
        "logit": float(snap.logits[0, 0]),
        "weight": float(snap.weights[0, 0]),
    }


COMPONENTS = Question(
    "components", (Step({"d_k": 16, "n_keys": 32, "scaling": "sqrt"}, "heatmap", _components),)
)

# 11. Can the √d_k be adjusted for different tasks?


def _temperature(r):
    """The median spread and max weight on screen, and the same draw's at T = 1."""
    at_one = simulate(replace(r.settings, temperature=1.0))
    return (
        _setting(r)
        | _on_screen(r, ["spread", "max_weight"])
        | {
            "spread_t1": float(np.median(at_one.logits.std(axis=-1))),
            "max_weight_t1": float(np.median(at_one.max_weight)),
        }
    )


def _mu_p(r):
    """÷ d_k against ÷ √d_k: spread, entropy and training at the current d_k."""
    runs = _trained(r, ["linear", "sqrt"])
    return (
        _setting(r)
        | _curve(r, ["linear", "sqrt"], ["spread", "entropy"])
        | runs
        | {"root": math.sqrt(r.settings.d_k), "linear_learns": runs["linear_kept"] < LEARNS_BELOW}
    )


def _qk_norm(r):
    """Median spread of qk_norm, sqrt and none; qk_norm's without its 1/sqrt(d_k); the
    median length of the layer-normalised queries."""
    d_k = r.settings.d_k
    numbers = _setting(r) | _curve(r, ["qk_norm", "sqrt", "none"], ["spread"])
    return numbers | {
        "qk_norm_unscaled": numbers["qk_norm_spread"] * math.sqrt(d_k),
        "qk_length": float(np.median(np.linalg.norm(layer_norm(r.snap.q)[0], axis=1))),
        "root": math.sqrt(d_k),
    }


ADJUST = Question(
    "adjust",
    (
        Step({"d_k": 64, "scaling": "sqrt", "temperature": 0.25}, "max_weight", _temperature),
        Step(
            {"d_k": 256, "scaling": "linear", "learning_rate": 2.0}, "training_loss", _mu_p, "mu-p"
        ),
        Step(
            {"d_k": 256, "scaling": "linear", "learning_rate": 100.0},
            "training_loss",
            _mu_p,
            "mu-p",
        ),
        Step({"d_k": 64, "scaling": "qk_norm", "variance": 4.0}, "spread", _qk_norm, "qk-norm"),
    ),
)

# 12. Is the scaling always necessary?


def _small_d_k(r):
    """Unscaled spread and saturation against the collapse threshold; training, none
    against sqrt, at the current d_k."""
    numbers = (
        _setting(r)
        | _curve(r, ["none"], ["spread", "max_weight", "saturated"])
        | _trained(r, ["none", "sqrt"])
        | {"threshold": _threshold(r)}
    )
    return numbers | {
        "none_above_threshold": numbers["none_spread"] > numbers["threshold"],
        "none_ahead": numbers["none_loss"] < numbers["sqrt_loss"],
    }


def _small_variance(r):
    """Spread and saturation of none and sqrt; their final losses at TRAINING_D_KS."""
    runs = _trained_sweep(r, ["none", "sqrt"])
    return (
        _setting(r)
        | _curve(r, ["none", "sqrt"], ["spread", "saturated"])
        | runs
        | _none_against_sqrt(runs, [f"_{d}" for d in TRAINING_D_KS])
        | {"none_theory": _spread_theory(r, 1.0), "threshold": _threshold(r)}
    )


def _temperature_instead(r):
    """c/T on screen against ÷ √d_k at T = 1, and the largest difference of their weights."""
    s = r.settings
    scaled = simulate(replace(s, scaling="sqrt", temperature=1.0))
    difference = float(np.abs(r.snap.weights - scaled.weights).max())
    return (
        _setting(r)
        | _on_screen(r, ["spread", "saturated"])
        | {
            "c_over_t": s.scale / s.temperature,
            "sqrt_c": 1 / math.sqrt(s.d_k),
            "sqrt_t1_difference": difference,
            "same_as_sqrt": s.scaling != "qk_norm" and difference < SAME_WEIGHTS,
            "sqrt_t1_spread": float(np.median(scaled.logits.std(axis=-1))),
            "sqrt_t1_saturated": float(np.mean(scaled.max_weight > SATURATION)),
        }
    )


ALWAYS = Question(
    "always-necessary",
    (
        Step({"d_k": 16, "scaling": "none"}, "training_loss", _small_d_k),
        Step({"d_k": 512, "scaling": "none", "variance": 0.1}, "training_sweep", _small_variance),
        Step({"d_k": 512, "scaling": "qk_norm", "variance": 4.0}, "spread", _qk_norm),
        Step({"d_k": 16, "scaling": "none", "temperature": 4.0}, "saturated", _temperature_instead),
    ),
)

# 13. How does the scaling affect model quality?


def _quality(r):
    """The lowest losses over the learning-rate sweep of none and sqrt at d_k = 64, 256
    and 1024; whether no η trains the unscaled model at 1024, and if its rows start
    saturated there."""
    runs = _trained_sweep(r, ["none", "sqrt"])
    start_weight = float(r.runs[1024]["none"].max_weight[0])  # median over rows, step 0
    grid = r.rates.learning_rates if r.rates is not None else ()
    return (
        _setting(r)
        | runs
        | _rates(r, ["none", "sqrt"])
        | {
            "eta_low": float(grid[0]),
            "eta_high": float(grid[-1]),
            "start_loss": float(np.median([runs[f"sqrt_loss0_{d}"] for d in TRAINING_D_KS])),
            "none_start_weight_1024": start_weight,
            "none_starts_saturated_at_1024": start_weight > SATURATION,
        }
    )


QUALITY = Question(
    "model-quality",
    (Step({"d_k": 1024, "scaling": "none"}, "training_sweep", _quality),),
)

# 14. Why dot-product attention with scaling rather than additive attention?


def _additive(r):
    """Spread and saturated rows of none and sqrt at the current d_k."""
    return _setting(r) | _curve(r, ["none", "sqrt"], ["spread", "saturated"])


ADDITIVE = Question("additive", (Step({"d_k": 512, "scaling": "none"}, "saturated", _additive),))

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
    QUALITY,
    ADDITIVE,
)


def question(slug: str) -> Question:
    """The question of ``slug``; a KeyError naming the known slugs if there is none."""
    for q in QUESTIONS:
        if q.slug == slug:
            return q
    known = ", ".join(q.slug for q in QUESTIONS)
    raise KeyError(f"no question {slug!r}; the questions are: {known}")
