"""What the answers read of the ``Results`` on screen: the scenario's values, the curves
at a d_k, the training runs and the learning-rate sweep, each as named numbers."""

import math

import numpy as np

from app import softmax, theory
from app.questions.steps import RatesPending, TrainingPending
from app.rates import COLLAPSE_SPREAD, theory_checked, written
from app.results import Results
from app.style import fraction, rule_name
from app.training import DEFAULT_STEPS

TRAINING_D_KS = (16, 64, 256, 1024)  # the d_k of answers that read the training sweep
BFLOAT16_BITS = 8  # significant bits of bfloat16 (7 stored, 1 implicit)
STALLED_ABOVE = 0.4  # a run "stalls" that keeps more than this share of its starting loss
LEARNS_BELOW = 0.1  # a run "learns" that ends below this share of its starting loss
BARELY_MOVES_ABOVE = 0.9  # a run "barely moves" that keeps more than this share of it
SAME_WEIGHTS = 1e-9  # two softmaxes of one knob c/T differ by rounding only


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


def setting(r: Results) -> dict:
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


def curve(r: Results, rules, names, d_k=None) -> dict:
    """``{rule}_{name}`` read off the curves at the current d_k, or ``{rule}_{name}_{d_k}``."""
    at = r.settings.d_k if d_k is None else d_k
    i = list(r.curves[rules[0]]["d_k"]).index(at)
    suffix = "" if d_k is None else f"_{d_k}"
    return {
        f"{rule}_{name}{suffix}": float(r.curves[rule][CURVE_COLUMNS[name]][i])
        for rule in rules
        for name in names
    }


def on_screen(r: Results, names) -> dict:
    """``{name}`` of the current rule at the current d_k (the curves' medians)."""
    rule = r.settings.scaling
    return {name: curve(r, [rule], [name])[f"{rule}_{name}"] for name in names}


def decades(r: Results, rule: str) -> float:
    """Orders of magnitude between the 10th and 90th percentile of the query gradient,
    ``log10(p90 / p10)``; a p10 that underflowed to 0 counts as 1e-300."""
    g = curve(r, [rule], ["grad_p10", "grad_p90"])
    return math.log10(g[f"{rule}_grad_p90"]) - math.log10(max(g[f"{rule}_grad_p10"], 1e-300))


def trained(r: Results, rules, d_k=None) -> dict:
    """``{rule}_loss``, ``_loss0``, ``_kept`` (their ratio), ``_accuracy`` after and before
    training at the current d_k, or ``..._{d_k}`` at ``d_k``; ``_chaotic``, whether the run
    is (its end then depends on rounding: no condition may read it), and ``_mark``, a †
    on a chaotic run's numbers; ``TrainingPending`` if not yet run."""
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
            f"{rule}_chaotic{suffix}": run.chaotic,
            f"{rule}_mark{suffix}": " †" if run.chaotic else "",
        }
    return numbers


def trained_sweep(r: Results, rules) -> dict:
    """``trained`` at every d_k of ``TRAINING_D_KS``, and ``any_chaotic``: whether any of
    those runs is."""
    numbers = {}
    for d_k in TRAINING_D_KS:
        numbers |= trained(r, rules, d_k)
    chaotic = [numbers[f"{rule}_chaotic_{d}"] for rule in rules for d in TRAINING_D_KS]
    return numbers | {"any_chaotic": any(chaotic)}


def rates(r: Results, rules, need: bool = True) -> dict:
    """``{rule}_best_{d_k}``, each rule's lowest loss over η at each d_k of the curves, as
    a percentage of its start, and ``{rule}_edge_{d_k}``, its edge of stability there, written
    out (– where none, † where a nudge of 1e-12 moves it); ``swept``.
    ``RatesPending`` while they
    compute and until checked for chaos (a question's words do not change once shown),
    unless not ``need``ed (then only ``swept``, false)."""
    if r.rates is None or not r.rates.checked:
        if need:
            raise RatesPending
        return {"swept": False}
    numbers = {"swept": True}
    for rule in rules:
        lowest = 100 * r.rates.best(rule)[0] / r.rates.start[rule]
        numbers |= {f"{rule}_best_{d}": float(x) for d, x in zip(r.rates.d_ks, lowest, strict=True)}
        edges = r.rates.edge.get(rule)
        if edges is not None:
            numbers |= {
                f"{rule}_edge_{d}": written(x, c)
                for d, x, c in zip(r.rates.edge_d_ks, edges, r.rates.chaotic[rule], strict=True)
            }
    return numbers


def collapse(r: Results) -> dict:
    """Where the theory puts the unscaled model's collapse: ``none_collapse_d_k``, the d_k
    past which its starting logits spread beyond the COLLAPSE_SPREAD where no η trains
    it, and ``none_collapses``, whether the theory was checked here and that d_k is on
    the learning-rate views' axis."""
    s = r.settings
    at = (COLLAPSE_SPREAD * s.temperature / s.variance) ** 2  # s = sqrt(d_k) v / T
    axis = (r.rates.d_ks[0], r.rates.d_ks[-1]) if r.rates is not None else (16, 65536)
    return {
        "none_collapse_d_k": at,
        "collapse_spread": COLLAPSE_SPREAD,
        "none_collapses": bool(theory_checked(s) and axis[0] < at < axis[-1]),
    }


def none_against_sqrt(numbers: dict, suffixes) -> dict:
    """Where the unscaled run ends lower than the ÷ √d_k one, at the d_k of ``suffixes``
    where neither run is chaotic (``none_ahead_somewhere``, ``_everywhere``)."""
    smooth = [
        x for x in suffixes if not (numbers[f"none_chaotic{x}"] or numbers[f"sqrt_chaotic{x}"])
    ]
    ahead = [numbers[f"none_loss{x}"] < numbers[f"sqrt_loss{x}"] for x in smooth]
    return {
        "none_ahead_somewhere": any(ahead),
        "none_ahead_everywhere": len(smooth) == len(suffixes) and all(ahead),
    }


def spread_theory(r: Results, c: float) -> float:
    """The theory's spread ``s = c sqrt(d_k) v / T`` (Vaswani et al. 2017, footnote 4)."""
    s = r.settings
    return c * math.sqrt(s.d_k) * s.variance / s.temperature


def threshold(r: Results) -> float:
    """The collapse threshold ``s_c = sqrt(2 ln n)``."""
    return theory.collapse_threshold(r.settings.n_keys)


def scores_std(r: Results) -> float:
    """Standard deviation of the unscaled scores q . k of the current draw."""
    return float(np.std(r.draw.q @ r.draw.k.T))


def weights_of(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``logits``, the page's stable one."""
    return softmax.softmax_rows(logits).weights
