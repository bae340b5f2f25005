"""The numbers and conditions that each view's caption and summary read.

The words are in ``app/content/views.md``; here every view has a function
of the ``Results`` on screen that returns its numbers (``{name}`` in the
words) and its conditions (``::: if name``): ``caption(view, results)`` and
``summary(view, results)`` fill them in. A function reads only what its view
shows, so only that is computed (``sweep.Sweep`` computes a group of
metrics when first read).
"""

import math

import numpy as np

from app import theory
from app.results import Results
from app.simulation import SATURATION, SCALING_RULES
from app.softmax import softmax_rows
from app.style import RULE_NAMES, fraction
from app.training import DEFAULT_STEPS, PAGE_TOKENS, SWEEP_D_KS, SWEEP_LEARNING_RATES
from app.words import Said, content, text

# Training: the d_k the summaries list, and the d_k from which the captions judge.
TRAINING_SHOWN_D_KS = (16, 64, 256, 1024)
TRAINED_BELOW = 0.01  # "trains": ends below this share of its starting loss
STALLED_ABOVE = 0.4  # "stalls": keeps more than this share of its starting loss
FOUND_BELOW = 0.5  # "most tokens do not find themselves": accuracy below this
TINY_D_KS = (1, 2)
TINY_ACCURACY = 0.2  # "no rule gets far": every rule's accuracy below this
PEAK_DROP = 0.1  # "collapses": its last value below this share of its peak
WIDE_DECADES = 2.0  # "unstable": rows span more than this many orders of magnitude


def section_title(name: str) -> str:
    """Section ``name``'s title: "Saturation"."""
    return text("sections", name, "title")


def section_label(name: str) -> str:
    """The label of section ``name``'s button: its number and title, "2. Saturation"."""
    return f"{list(content('sections')).index(name) + 1}. {section_title(name)}"


def caption(view: str, results: Results) -> Said:
    """View ``view``'s caption for ``results``."""
    return content("views")[view]["caption"].render(view_numbers(view, results))


def summary(view: str, results: Results) -> Said:
    """View ``view``'s summary for ``results``: one line of its numbers."""
    return content("views")[view]["summary"].render(view_numbers(view, results))


def view_numbers(view: str, results: Results) -> dict:
    """Every number and condition of view ``view``'s words."""
    return _setting(results) | _NUMBERS[view](results)


def _setting(r: Results) -> dict:
    s = r.settings
    return {
        "d_k": s.d_k,
        "rule": RULE_NAMES[s.scaling],
        "n": s.n_keys,
        "queries": s.n_queries,
        "lr": r.learning_rate,
        "steps": DEFAULT_STEPS,
        "page_tokens": PAGE_TOKENS,
        "tokens": min(s.n_keys, PAGE_TOKENS),
    }


def _theory_std(r: Results, rule: str) -> float:
    s = r.settings
    return float(theory.logit_std(rule, s.d_k, s.variance, s.temperature, s.alpha))


def _rule_kind(r: Results) -> dict:
    """What the rule does to the spread: ``c = d_k^(-alpha)`` keeps it (alpha = 1/2),
    shrinks it (alpha > 1/2) or lets it grow (alpha < 1/2)."""
    rule, s = r.settings.scaling, r.settings
    exponent = {"sqrt": 0.5, "linear": 1.0, "power": s.alpha}.get(rule)
    return {
        "rule_scales_nothing": rule == "none" or (rule == "power" and s.alpha == 0),
        "rule_is_qk_norm": rule == "qk_norm",
        "rule_keeps_spread": exponent == 0.5,
        "rule_shrinks_spread": exponent is not None and exponent > 0.5,
    }


def _at_1024(r: Results, column: str, percent: bool = False) -> str:
    """Every rule's ``column`` at the last d_k, as "none 1, ÷ √d_k 0.3, ...".
    (A list of numbers, named by the rules' labels: no prose.)"""
    shown = []
    for rule in SCALING_RULES:
        value = float(r.curves[rule][column][-1])
        shown.append(
            f"{RULE_NAMES[rule]} {value:.0%}" if percent else f"{RULE_NAMES[rule]} {value:.3g}"
        )
    return ", ".join(shown)


def _histogram(r: Results) -> dict:
    return _rule_kind(r) | {
        "logits_std": float(r.snap.logits.std()),
        "theory_std": _theory_std(r, r.settings.scaling),
        "scores_std": float(r.unscaled.std()),
        "scores_theory": _theory_std(r, "none"),
    }


def _spread(r: Results) -> dict:
    c = r.curves[r.settings.scaling]
    spread, threshold = r.medians["logit_std"], theory.collapse_threshold(r.settings.n_keys)
    return {
        "spread": spread,
        "theory_std": _theory_std(r, r.settings.scaling),
        "threshold": threshold,
        "above_threshold": spread > threshold,
        "max_weight": r.medians["max_weight"],
        "spread_first": float(c["logit_std"][0]),
        "spread_last": float(c["logit_std"][-1]),
    }


def _max_weight(r: Results) -> dict:
    return {"max_weight": r.medians["max_weight"], "at_1024": _at_1024(r, "max_weight")}


def _entropy(r: Results) -> dict:
    return {"entropy": r.medians["normalized_entropy"]}


def _saturated(r: Results) -> dict:
    s = r.settings
    bound = float(
        theory.saturated_share(
            s.scaling, np.array([s.d_k]), s.variance, s.temperature, s.n_keys, s.alpha
        )[0]
    )
    return _rule_kind(r) | {
        "share": r.share,
        "has_bound": bool(np.isfinite(bound)),
        "share_bound": bound,
        "at_1024": _at_1024(r, "saturated_share", percent=True),
        "qk_norm_floor": theory.qk_norm_gaussian_from(s.n_keys),
    }


def _heatmap(r: Results) -> dict:
    return {"max_weight": r.medians["max_weight"], "uniform": 1 / r.settings.n_keys}


def _row(r: Results) -> dict:
    """The row up close, under the rule and unscaled: spread, top gap, largest weight."""
    row = r.shown_row
    z, raw = r.snap.logits[row], r.unscaled[row]
    top_two = {name: np.sort(v)[-2:] for name, v in (("rule", z), ("raw", raw))}
    raw_weight = float(softmax_rows(raw[None]).weights[0].max()) if raw.size > 1 else 1.0
    return _rule_kind(r) | {
        "row": row + 1,
        "row_std": float(z.std()),
        "row_gap": float(np.diff(top_two["rule"])[0]) if z.size > 1 else 0.0,
        "raw_std": float(raw.std()),
        "raw_gap": float(np.diff(top_two["raw"])[0]) if raw.size > 1 else 0.0,
        "row_weight": float(r.snap.max_weight[row]),
        "raw_weight": raw_weight,
        "raw_one_hot": raw_weight > SATURATION,
        "uniform": 1 / r.settings.n_keys,
    }


def _jacobian(r: Results) -> dict:
    return {
        "jacobian": r.medians["jacobian_norm"],
        "uniform_jacobian": theory.uniform_jacobian_norm(r.settings.n_keys),
    }


def _query_grad(r: Results) -> dict:
    """The current rule's query gradient, and the shape of the unscaled one against d_k:
    where it peaks, how far it falls after, and how widely its rows spread at the last."""
    s, c = r.settings, r.curves[r.settings.scaling]
    i = int(np.searchsorted(c["d_k"], s.d_k))
    none, grad = r.curves["none"], r.curves["none"]["query_grad_norm"]
    sqrt = r.curves["sqrt"]["query_grad_norm"]
    peak = int(np.argmax(grad))
    drop = float(grad[-1] / grad[peak]) if grad[peak] > 0 else 1.0
    decades = math.log10(
        max(float(none["query_grad_norm_p90"][-1]), 1e-300)
        / max(float(none["query_grad_norm_p10"][-1]), 1e-300)
    )
    return {
        "grad": r.medians["query_grad_norm"],
        "grad_p10": float(c["query_grad_norm_p10"][i]),
        "grad_p90": float(c["query_grad_norm_p90"][i]),
        "none_peak_d_k": int(none["d_k"][peak]),
        "none_peak": float(grad[peak]),
        "none_last": float(grad[-1]),
        "none_drop": drop,
        "none_rises_then_collapses": 0 < peak < len(grad) - 1 and drop < PEAK_DROP,
        "none_rises": peak == len(grad) - 1,
        "none_decades": decades,
        "none_spreads_widely": decades > WIDE_DECADES,
        "sqrt_min": float(sqrt.min()),
        "sqrt_max": float(sqrt.max()),
    }


def _each_rule(runs, value) -> str:
    """``value(run)`` of every rule, as "none 0.1, ÷ √d_k 0.02, ..." (numbers only)."""
    return ", ".join(f"{RULE_NAMES[rule]} {value(runs[rule])}" for rule in SCALING_RULES)


def _training_here(r: Results) -> dict:
    """The runs at the current d_k (once trained)."""
    runs = r.runs.get(r.settings.d_k)
    if runs is None:
        return {"trained": False}
    return {
        "trained": True,
        "losses": _each_rule(runs, lambda run: f"{run.loss[-1]:.3g} (from {run.loss[0]:.3g})"),
        "accuracies": _each_rule(runs, lambda run: f"{run.accuracy[-1]:.0%}"),
    }


def _kept(r: Results, rule: str, d_k: int) -> float:
    """The share of its starting loss the run of ``rule`` at ``d_k`` ends with."""
    return r.runs[d_k][rule].kept


def _training_sweep(r: Results) -> dict:
    """What the final losses against d_k show at this η, once every d_k is trained."""
    if not r.complete:
        return {"complete": False}
    judged = [d for d in sorted(r.runs) if d >= TRAINING_SHOWN_D_KS[0]]
    none_kept = {d: _kept(r, "none", d) for d in judged}
    sqrt_kept = [_kept(r, "sqrt", d) for d in judged]
    # the first d_k from which the unscaled run keeps most of its loss at every larger d_k
    stalled = [d for d in judged if all(none_kept[e] > STALLED_ABOVE for e in judged if e >= d)]
    tiny = [r.runs[d][rule].accuracy[-1] for d in TINY_D_KS for rule in SCALING_RULES]
    stuck = [r.runs[d]["none"] for d in judged if stalled and d >= stalled[0]]
    shown = [d for d in TRAINING_SHOWN_D_KS if d in r.runs]
    by_d_k = "; ".join(
        f"{RULE_NAMES[rule]} " + ", ".join(f"{r.runs[d][rule].loss[-1]:.3g}" for d in shown)
        for rule in SCALING_RULES
    )
    return {
        "complete": True,
        "none_stalls_at_large_d_k": bool(stalled),
        "none_stall_d_k": stalled[0] if stalled else judged[-1],
        "none_ends_one_hot_wrong": bool(stuck)
        and all(
            run.max_weight[-1] > SATURATION and run.accuracy[-1] < FOUND_BELOW for run in stuck
        ),
        "none_trains_everywhere": all(k < TRAINED_BELOW for k in none_kept.values()),
        "none_kept_1024": none_kept[judged[-1]],
        "sqrt_trains_everywhere": all(k < TRAINED_BELOW for k in sqrt_kept),
        "sqrt_kept_min": min(sqrt_kept),
        "sqrt_kept_max": max(sqrt_kept),
        "tiny_d_k_fails": max(tiny) < TINY_ACCURACY,
        "tiny_accuracy": float(max(tiny)),
        "shown_d_k": ", ".join(map(str, shown)),
        "losses_by_d_k": by_d_k,
    }


SWEEP_RUNS = len(SWEEP_D_KS) * len(SCALING_RULES) * len(SWEEP_LEARNING_RATES)
MOVES_BY = 4  # "moves with d_k": its best η from d_k = 16 to 1024 changes this many times
HOLDS_WITHIN = 2  # "stays put": its best η from d_k = 16 to 1024 within this factor


def _listed(values, fmt="{:.3g}") -> str:
    """Numbers as "1, 2, 5" (a list of numbers: no prose)."""
    return ", ".join(fmt.format(float(v)) for v in values)


def _rates(r: Results) -> dict:
    """Whether the learning-rate sweep is done, and how far it has got."""
    return {"swept": r.rates is not None, "done": r.rates_done, "runs": SWEEP_RUNS}


def _from_16(r: Results) -> np.ndarray:
    """Which d_k of the sweep count from 16 on."""
    return np.asarray(r.rates.d_ks) >= 16


def _stalled(r: Results, rule: str) -> list[int]:
    """The d_k at which every η leaves ``rule`` above STALLED_ABOVE of its starting loss."""
    lowest, _ = r.rates.best(rule)
    kept = lowest / np.where(r.rates.start[rule] > 0, r.rates.start[rule], 1.0)
    return [int(d) for d, k in zip(r.rates.d_ks, kept, strict=True) if k > STALLED_ABOVE]


def _lr_sweep(r: Results) -> dict:
    """The current rule's best η at each d_k: how it moves, where no η trains it, and
    where the best is at the grid's end."""
    numbers = _rates(r)
    if r.rates is None:
        return numbers
    rule, d_ks = r.settings.scaling, list(r.rates.d_ks)
    lowest, best = r.rates.best(rule)
    judged = best[_from_16(r)]
    growth = best[d_ks.index(1024)] / best[d_ks.index(16)]
    stalled = _stalled(r, rule)
    grid = r.rates.learning_rates
    edge = [int(d) for d, eta in zip(d_ks, best, strict=True) if eta in (grid[0], grid[-1])]
    return numbers | {
        "eta_16": float(best[d_ks.index(16)]),
        "eta_1024": float(best[d_ks.index(1024)]),
        "eta_low": float(judged.min()),
        "eta_high": float(judged.max()),
        "best_eta_moves": bool(growth >= MOVES_BY or growth <= 1 / MOVES_BY),
        "best_eta_holds": bool(judged.max() / judged.min() <= HOLDS_WITHIN),
        "stalls_at_every_eta": bool(stalled),
        "stall_d_ks": ", ".join(map(str, stalled)),
        "best_at_edge": bool(edge),
        "edge_d_ks": ", ".join(map(str, edge)),
        "sweep_d_ks": ", ".join(map(str, d_ks)),
        "best_etas": _listed(best, "{:g}"),
        "best_losses": _listed(lowest),
    }


def _best_loss(r: Results) -> dict:
    """Every rule's lowest loss over η: where no η trains the unscaled model, and how low
    ÷ √d_k gets at its best."""
    numbers = _rates(r)
    if r.rates is None:
        return numbers
    lowest, _ = r.rates.best("sqrt")
    kept = (lowest / r.rates.start["sqrt"])[_from_16(r)]
    stalled = _stalled(r, "none")
    by_rule = "; ".join(
        f"{RULE_NAMES[rule]} {_listed(r.rates.best(rule)[0])}" for rule in SCALING_RULES
    )
    return numbers | {
        "none_stalls_at_every_eta": bool(stalled),
        "none_stall_d_ks": ", ".join(map(str, stalled)),
        "sqrt_trains_at_best": bool(np.all(kept < TRAINED_BELOW)),
        "sqrt_kept_max": float(kept.max()),
        "sweep_d_ks": ", ".join(map(str, r.rates.d_ks)),
        "losses_by_rule": by_rule,
    }


def _best_lr(r: Results) -> dict:
    """Every rule's best η against d_k: how much ÷ √d_k's grows, whether the power
    rule's stays put."""
    numbers = _rates(r) | {"alpha": fraction(r.settings.alpha)}
    if r.rates is None:
        return numbers
    d_ks = list(r.rates.d_ks)
    sqrt = r.rates.best("sqrt")[1]
    power = r.rates.best("power")[1][_from_16(r)]
    growth = float(sqrt[d_ks.index(1024)] / sqrt[d_ks.index(16)])
    by_rule = "; ".join(
        f"{RULE_NAMES[rule]} {_listed(r.rates.best(rule)[1], '{:g}')}" for rule in SCALING_RULES
    )
    return numbers | {
        "sqrt_growth": growth,
        "sqrt_eta_grows": growth >= MOVES_BY,
        "power_eta_holds": bool(power.max() / power.min() <= HOLDS_WITHIN),
        "power_low": float(power.min()),
        "power_high": float(power.max()),
        "sweep_d_ks": ", ".join(map(str, d_ks)),
        "etas_by_rule": by_rule,
    }


_NUMBERS = {
    "histogram": _histogram,
    "spread": _spread,
    "max_weight": _max_weight,
    "entropy": _entropy,
    "saturated": _saturated,
    "heatmap": _heatmap,
    "row_logits": _row,
    "row_weights": _row,
    "jacobian": _jacobian,
    "query_grad": _query_grad,
    "training_loss": _training_here,
    "training_accuracy": _training_here,
    "training_sweep": _training_sweep,
    "lr_sweep": _lr_sweep,
    "best_loss": _best_loss,
    "best_lr": _best_lr,
}
