"""The check of every claim the page words by a condition: each condition computed again
here, independently, from its definition (``Here``, ``INDEPENDENT``), for a
scenario's results (``results_of``), and the claims whose condition reads otherwise
(``wrong_claims``); and the readability check of an answer (``unreadable``). Used by
test_claims.py, the findings' tests and the learning-rate grid.
"""

import functools
import math
import re
from dataclasses import replace
from fractions import Fraction

import numpy as np
import question_reference
from question_reference import (
    draw,
    initial_loss,
    layer_norm,
    metric,
    query_grads,
    rows,
    scale,
    settings_of,
    softmax,
    training_settings,
    unscaled_scores,
)

from app.options import (
    D_K_OPTIONS,
)
from app.rates import learning_rates
from app.results import Results
from app.simulation import simulate
from app.sweep import sweep
from app.words import Said


def results_of(scenario: dict, swept: bool = True, checked: bool = True) -> Results:
    """The page's results for ``scenario``: its training runs as the page trains them,
    and (if ``swept``) its learning-rate sweep, else a third of it done; (unless
    ``checked``) its edges not yet checked for chaos."""
    values = dict(scenario)
    row = values.pop("row", None)
    s, learning_rate = settings_of(values)
    training = training_settings(s)
    runs = question_reference.training_runs(training, learning_rate)
    rates = question_reference.rates_for(training) if swept else None
    if rates is not None and not checked:
        rates = replace(rates, chaotic=None)
    done = 1.0 if swept else 1 / 3
    return Results(s, learning_rate, simulate(s), sweep(s, D_K_OPTIONS), runs, row, rates, done)


def forget():
    """Let go of question_reference's draws of the scenarios done (they grow to GBs)."""
    for name in ("draw", "unscaled_scores", "rows", "query_grads"):
        getattr(question_reference, name).cache_clear()


# --- Each condition, computed here ----------------------------------------------------------


class Here:
    """What the conditions read, computed here for one scenario's results."""

    def __init__(self, results: Results):
        self.r, self.s = results, results.settings

    @property
    def d_k(self):
        return self.s.d_k

    def exponent(self, rule=None) -> Fraction | None:
        """``c = d_k^(-exponent)``; None under qk_norm."""
        rule = rule or self.s.scaling
        if rule == "qk_norm":
            return None
        alpha = Fraction(self.s.alpha).limit_denominator(24)
        return {"none": Fraction(0), "sqrt": Fraction(1, 2), "linear": Fraction(1)}.get(rule, alpha)

    def median(self, rule, name, d_k=None):
        return float(metric(self.s, rule, name, d_k or self.d_k))

    def shown_row(self) -> int:
        """The row up close: the pick, or the median row."""
        return self.median_row() if self.r.row is None else self.r.row

    def median_row(self) -> int:
        """The lower median of the rows' largest weights, from the draw computed here."""
        weights = rows(self.s, self.s.scaling, self.d_k)["weights"].max(axis=1)
        return int(np.argsort(weights, kind="stable")[(len(weights) - 1) // 2])

    def threshold(self) -> float:
        return math.sqrt(2 * math.log(self.s.n_keys))

    def kept(self, rule, d_k) -> float:
        run = self.r.runs[d_k][rule]
        start = initial_loss(run, rule, self.s, d_k)
        return run.loss[-1] / start if start > 0 else 0.0

    def none_grads(self) -> list[np.ndarray]:
        return [query_grads(self.s, "none", d) for d in D_K_OPTIONS]


def _none_gradient_shape(h: Here) -> dict:
    medians = [float(np.median(g)) for g in h.none_grads()]
    peak = int(np.argmax(medians))
    drop = medians[-1] / medians[peak] if medians[peak] > 0 else 1.0
    last = h.none_grads()[-1]
    p10, p90 = np.percentile(last, 10), np.percentile(last, 90)
    decades = math.log10(max(p90, 1e-300)) - math.log10(max(p10, 1e-300))
    return {
        "rises_then_collapses": 0 < peak < len(medians) - 1 and drop < 0.1,
        "rises": peak == len(medians) - 1,
        "widely": decades > 2,
    }


def _loss(h: Here, rule, d_k=None):
    return h.r.runs[d_k or h.d_k][rule].loss[-1]


def _same_as_sqrt(h: Here) -> bool:
    if h.s.scaling == "qk_norm":
        return False
    sqrt_t1 = replace(h.s, scaling="sqrt", temperature=1.0)
    mine = rows(h.s, h.s.scaling, h.d_k)["weights"]
    return float(np.abs(mine - rows(sqrt_t1, "sqrt", h.d_k)["weights"]).max()) < 1e-9


def _raw_one_hot(h: Here) -> bool:
    raw = unscaled_scores(h.s, h.d_k)[h.shown_row()] / h.s.temperature
    return raw.size == 1 or float(softmax(raw).max()) > 0.99


def _has_bound(h: Here) -> bool:
    """The Gaussian bound is drawn except under qk_norm from d_k = 2 to below
    max(4, 2 (ln n)^2) (at d_k = 1 every logit is 0: the exact share, 0, is shown)."""
    n = h.s.n_keys
    return not (h.s.scaling == "qk_norm" and 2 <= h.d_k < max(4, 2 * math.log(n) ** 2))


INDEPENDENT = {
    # the rule
    "rule_scales_nothing": lambda h: h.exponent() == 0,
    "rule_is_none": lambda h: h.s.scaling == "none",
    "rule_is_qk_norm": lambda h: h.s.scaling == "qk_norm",
    # a layer-normalised vector of one component is 0: so is every logit, and only then
    "every_logit_zero": lambda h: h.s.scaling == "qk_norm" and h.d_k == 1,
    "rule_keeps_spread": lambda h: h.exponent() == Fraction(1, 2),
    "rule_shrinks_spread": lambda h: h.exponent() is not None and h.exponent() > Fraction(1, 2),
    "power_grows": lambda h: h.exponent("power") < Fraction(1, 2),
    "power_shrinks": lambda h: h.exponent("power") > Fraction(1, 2),
    # the draw
    "above_threshold": lambda h: h.median(h.s.scaling, "spread") > h.threshold(),
    "none_above_threshold": lambda h: h.median("none", "spread") > h.threshold(),
    "has_bound": _has_bound,
    "raw_one_hot": _raw_one_hot,
    "none_most_saturated": lambda h: h.median("none", "saturated") > 0.5,
    "linear_fades": lambda h: (
        h.median("linear", "entropy", 1024) > h.median("linear", "entropy", 16)
    ),
    "same_as_sqrt": _same_as_sqrt,
    "none_rises_then_collapses": lambda h: _none_gradient_shape(h)["rises_then_collapses"],
    "none_rises": lambda h: _none_gradient_shape(h)["rises"],
    "none_spreads_widely": lambda h: _none_gradient_shape(h)["widely"],
    # the training runs (a chaotic run's end is never read: test_no_wording_hangs_on_a_nudge)
    "trained": lambda h: h.d_k in h.r.runs,
    "complete": lambda h: set(h.r.runs) == set(D_K_OPTIONS),
    "none_starts_one_hot": lambda h: bool(_one_hot_from(h)),
    "none_chaotic_somewhere": lambda h: any(h.r.runs[d]["none"].chaotic for d in h.r.runs),
    "sqrt_chaotic_somewhere": lambda h: any(h.r.runs[d]["sqrt"].chaotic for d in h.r.runs),
    "none_chaotic": lambda h: h.r.runs[h.d_k]["none"].chaotic,
    "sqrt_chaotic": lambda h: h.r.runs[h.d_k]["sqrt"].chaotic,
    "linear_chaotic": lambda h: h.r.runs[h.d_k]["linear"].chaotic,
    "none_stalls": lambda h: h.kept("none", h.d_k) > 0.4,
    "none_stalls_sqrt_learns": lambda h: (
        h.kept("none", h.d_k) > 0.4 and h.kept("sqrt", h.d_k) < 0.1
    ),
    "none_ahead": lambda h: _loss(h, "none") < _loss(h, "sqrt"),
    "none_ahead_somewhere": lambda h: any(
        _loss(h, "none", d) < _loss(h, "sqrt", d) for d in _smooth_pairs(h)
    ),
    "none_ahead_everywhere": lambda h: (
        len(_smooth_pairs(h)) == 4
        and all(_loss(h, "none", d) < _loss(h, "sqrt", d) for d in _smooth_pairs(h))
    ),
    "row_is_median": lambda h: h.shown_row() == h.median_row(),
    "none_grad_larger": lambda h: h.median("none", "grad") > h.median("sqrt", "grad"),
    # a uniform row's ‖J‖_F, √(n − 1)/n, against the saturated bound 0.02 the words give
    "uniform_jacobian_large": lambda h: math.sqrt(h.s.n_keys - 1) / h.s.n_keys >= 5 * 0.02,
    "linear_learns": lambda h: h.kept("linear", h.d_k) < 0.1,
    "linear_barely_moves": lambda h: h.kept("linear", h.d_k) > 0.9,
    # the learning rates, far past the slider
    "swept": lambda h: h.r.rates is not None,
    "checking": lambda h: h.r.rates is not None and h.r.rates.chaotic is None,
    "rule_has_edge": lambda h: h.s.scaling != "qk_norm",
    "edge_settles": lambda h: h.exponent() == Fraction(1, 2),
    "edge_grows": lambda h: h.exponent() is not None and h.exponent() > Fraction(1, 2),
    "settles_on_axis": lambda h: _settled_d_k(h, h.exponent()) <= 65536,
    "sqrt_settles_on_axis": lambda h: _settled_d_k(h, Fraction(1, 2)) <= 65536,
    "theory_shown": lambda h: _theory_checked(h),
    "none_collapses": lambda h: _theory_checked(h) and 16 < _collapse_d_k(h) < 65536,
    "sqrt_trains": lambda h: not np.isnan(h.r.rates.edge["sqrt"]).all(),
    # the temperature question: the other rule's temperature, and its weights
    "t_on_slider": lambda h: 0.1 <= round(_one_knob_other(h)[1], 12) <= 4.0,
    "same_weights": lambda h: _same_weights(h),
    "none_starts_saturated_at_1024": lambda h: (
        float(np.median(np.max(_initial_weights(h, "none", 1024), axis=1))) > 0.99
    ),
}


def _one_hot_from(h: Here) -> list[int]:
    """The d_k from which the unscaled rows start one-hot at every larger d_k: the median
    row's largest weight over 0.99 before the first step, from the runs' initial arrays."""
    d_ks = sorted(h.r.runs)

    def one_hot(d):
        return float(np.median(np.max(_initial_weights(h, "none", d), axis=1))) > 0.99

    starts = {d: one_hot(d) for d in d_ks}
    return [d for d in d_ks if all(starts[e] for e in d_ks if e >= d)]


def _smooth_pairs(h: Here) -> list[int]:
    """The d_k of 16, 64, 256, 1024 where neither the unscaled nor the ÷ √d_k run is."""
    runs = h.r.runs
    return [
        d for d in (16, 64, 256, 1024) if not (runs[d]["none"].chaotic or runs[d]["sqrt"].chaotic)
    ]


def _settled_d_k(h: Here, e: Fraction) -> float:
    """The d_k from which the lazy law's edge is within 20% of its far-out law, c =
    d_k^(-e): (1 + R T / (c d_k v))^-2 = 0.8, R = 7.59 (docs/theory.md), solved for d_k."""
    q = 0.8**-0.5 - 1
    return (7.59 * h.s.temperature / (q * h.s.variance)) ** (1 / (1 - float(e)))


def _theory_checked(h: Here) -> bool:
    v_t = h.s.variance / h.s.temperature
    return h.s.n_keys >= 64 and 0.5 <= v_t <= 2.0


def _collapse_d_k(h: Here) -> float:
    return (11.5 * h.s.temperature / h.s.variance) ** 2


def _one_knob_other(h: Here) -> tuple[str, float]:
    """The rule the temperature question sets beside the one on screen (÷ √d_k beside
    none, none beside the others), and the temperature that gives it the same c/T."""
    other = "sqrt" if h.s.scaling == "none" else "none"
    c_over_t = scale(h.s, h.s.scaling, h.d_k) / h.s.temperature
    return other, scale(h.s, other, h.d_k) / c_over_t


def _same_weights(h: Here) -> bool:
    """The other rule at its temperature gives the very weights on screen (to 1e-12)."""
    other, t = _one_knob_other(h)
    q, k = draw(h.s, h.d_k)
    theirs = softmax(scale(h.s, other, h.d_k) * (q @ k.T) / t)  # T off the slider too
    mine = rows(h.s, h.s.scaling, h.d_k)["weights"]
    return bool(np.abs(theirs - mine).max() < 1e-12)


def _initial_weights(h: Here, rule: str, d_k: int) -> np.ndarray:
    run = h.r.runs[d_k][rule]
    q, k = run.x @ run.w_q, run.x @ run.w_k
    if rule == "qk_norm":
        q, k = layer_norm(q), layer_norm(k)
    return softmax(scale(h.s, rule, d_k) * q @ k.T / h.s.temperature)


def marked(text: str, edges: bool) -> bool:
    """Whether the words mark a number † ("0.5 †", "27 †"): among the edges of stability
    (``edges``: a line, or a table row with its caption, that names the largest η or the
    edge of stability) or among the training runs (the others)."""
    caption = ""
    for line in text.splitlines():
        row = line.lstrip().startswith("|")
        context = caption + line if row else line
        if not row and line.strip():
            caption = line
        about_edges = "largest η" in context or "dge of stability" in context
        if re.search(r"\d †", line) and about_edges == edges:
            return True
    return False


# Conditions on what the words themselves show: "any_chaotic" (a note on the numbers
# marked †) holds when a training run of the words is marked. (The note on edges marked †
# is always there: which edges a nudge moves can differ between a run and its twin.)
OF_THE_WORDS = {"any_chaotic": lambda text: marked(text, edges=False)}


def wrong_claims(said: Said, here: Here) -> list[tuple[str, bool, bool]]:
    """The conditions of ``said`` that the independent computation (or, for those of
    OF_THE_WORDS, its own tables) contradicts: (name, the page's value, the value here)."""
    wrong = []
    for name, value in said.claims:
        truth = OF_THE_WORDS[name](said.text) if name in OF_THE_WORDS else INDEPENDENT[name](here)
        if bool(truth) != value:
            wrong.append((name, value, bool(truth)))
    return wrong


# An answer reads as issue 19 asks: one plain opening sentence that answers the question,
# under about 100 words in all, lists of numbers in a table (not a sentence).
FIRST_SENTENCE_WORDS, ANSWER_WORDS, NUMBERS_IN_A_SENTENCE = 25, 100, 6
# a number, its thousands separated by commas ("6,600,000" is one)
NUMBER = re.compile(
    r"(?<![\w^])−?\d{1,3}(?:,\d{3})+(?!\d)"  # 6,600,000
    r"|(?<![\w^,])−?\d+(?:\.\d+)?(?:e[+−-]?\d+)?%?"  # 0.5, 1e-12, 20%
)


def sentences(markdown: str) -> list[str]:
    """The prose of an answer (its table rows left out), sentence by sentence: a
    paragraph's end, or a full stop, question or exclamation mark and a space, end one
    ("et al." does not)."""
    merged = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        lines = [line for line in paragraph.splitlines() if not line.lstrip().startswith("|")]
        prose = " ".join(" ".join(lines).split())
        if not prose:
            continue
        for i, part in enumerate(re.split(r"(?<=[.?!])\s+(?=[A-Z(÷√]|\d)", prose)):
            if i and merged[-1].endswith(("et al.", "e.g.", "i.e.")):
                merged[-1] += " " + part
            else:
                merged.append(part)
    return merged


def unreadable(answer: str) -> list[str]:
    """What keeps ``answer`` from reading as it should; [] when nothing does."""
    found = []
    said = sentences(answer)
    if len(said[0].split()) > FIRST_SENTENCE_WORDS:
        found.append(f"a first sentence of {len(said[0].split())} words")
    words = sum(len(sentence.split()) for sentence in said)
    if words > ANSWER_WORDS:
        found.append(f"{words} words")
    found += [f"a list: {x}" for x in said if len(numbers_in(x)) > NUMBERS_IN_A_SENTENCE]
    return found


def numbers_in(sentence: str) -> list[str]:
    """The numbers a sentence quotes (not the α of a rule's name, "÷ d_k^α (α = 1/3)")."""
    return NUMBER.findall(re.sub(r"\(α = [^)]*\)", "", sentence))


def nudged_results(results: Results) -> Results:
    """``results`` with every training run replaced by its twin from the nudged start (the
    pair's chaos flag kept: it is a property of the pair), and the learning rates from
    the nudged starts: what another machine's rounding could have given."""
    runs = {
        d_k: {rule: replace(run.twin, chaotic_from=run.chaotic_from) for rule, run in by.items()}
        for d_k, by in results.runs.items()
    }
    rates = None
    if results.rates is not None:
        rates = nudged_rates(training_settings(results.settings))
    return replace(results, runs=runs, rates=rates)


@functools.cache
def nudged_rates(training):
    return learning_rates(training, nudge=True)
