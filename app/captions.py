"""The numbers and conditions that each view's caption and summary read.

The words are in ``app/content/views.md``; here every view has a function
of the ``Results`` on screen that returns its numbers (``{name}`` in the
words) and its conditions (``::: if name``): ``caption(view, results)`` and
``summary(view, results)`` fill them in. A function reads only what its view
shows, so only that is computed (``sweep.Sweep`` computes a group of
metrics when first read).
"""

import math
from fractions import Fraction

import numpy as np

from app import theory
from app.rates import (
    COLLAPSE_SPREAD,
    CURVE_D_KS,
    EDGE_D_KS,
    EDGE_RULES,
    LEARNING_RATES,
    MUP_BASE_D_K,
    SETTLED_WITHIN,
    crossover_d_k,
    is_lazy,
    settled_d_k,
    theory_checked,
    written,
)
from app.results import Results
from app.simulation import SATURATION, SCALING_RULES, rule_exponent
from app.softmax import softmax_rows
from app.style import fraction, percent, rounded, rule_name
from app.training import DEFAULT_D_MODEL, DEFAULT_STEPS, PAGE_TOKENS
from app.words import Said, content, text

# Training: the d_k the summaries list.
TRAINING_SHOWN_D_KS = (16, 64, 256, 1024)
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
        "rule": rule_name(s.scaling, s.alpha),
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
        name = rule_name(rule, r.settings.alpha)  # ÷ d_k^α (α = 1/3): with its α
        shown.append(f"{name} {value:.0%}" if percent else f"{name} {value:.3g}")
    return ", ".join(shown)


def _spread_said(r: Results) -> str:
    s = r.settings
    return theory.spread_said(s.scaling, s.d_k, _theory_std(r, s.scaling))


def _histogram(r: Results) -> dict:
    return _rule_kind(r) | {
        "logits_std": float(r.draw.logits.std()),
        "theory_said": _spread_said(r),
        "scores_std": float(r.unscaled.std()),
        "scores_theory": _theory_std(r, "none"),
    }


def _spread(r: Results) -> dict:
    c = r.curves[r.settings.scaling]
    spread, threshold = r.medians["logit_std"], theory.collapse_threshold(r.settings.n_keys)
    return {
        "spread": spread,
        "theory_said": _spread_said(r),
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
        "every_logit_zero": s.scaling == "qk_norm" and s.d_k == 1,
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
    z, raw = r.draw.logits[row], r.unscaled[row]
    top_two = {name: np.sort(v)[-2:] for name, v in (("rule", z), ("raw", raw))}
    raw_weight = float(softmax_rows(raw[None]).weights[0].max()) if raw.size > 1 else 1.0
    return _rule_kind(r) | {
        "row": row + 1,
        "row_std": float(z.std()),
        "row_gap": float(np.diff(top_two["rule"])[0]) if z.size > 1 else 0.0,
        "raw_std": float(raw.std()),
        "raw_gap": float(np.diff(top_two["raw"])[0]) if raw.size > 1 else 0.0,
        "row_weight": float(r.draw.max_weight[row]),
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


def _rows(r: Results, cells: dict[str, list[str]]) -> str:
    """Table rows, one per rule of ``cells`` (its name on the page first, then its cells):
    numbers and names only, under a header the content writes."""
    return "\n".join(
        f"| {rule_name(rule, r.settings.alpha)} | " + " | ".join(row) + " |"
        for rule, row in cells.items()
    )


def _marked(value: str, run) -> str:
    """A run's number, marked † when the run is chaotic (its digits depend on rounding)."""
    return f"{value} †" if run.chaotic else value


def _training_here(r: Results) -> dict:
    """The runs at the current d_k (once trained), as tables."""
    runs = r.runs.get(r.settings.d_k)
    if runs is None:
        return {"trained": False}
    loss = {
        rule: [f"{run.loss[0]:.3g}", _marked(f"{run.loss[-1]:.3g}", run)]
        for rule, run in runs.items()
    }
    found = {rule: [_marked(f"{run.accuracy[-1]:.0%}", run)] for rule, run in runs.items()}
    return {
        "trained": True,
        "loss_rows": _rows(r, loss),
        "accuracy_rows": _rows(r, found),
    }


def _training_sweep(r: Results) -> dict:
    """What the final losses against d_k show at this η, once every d_k is trained: where
    the unscaled rows start one-hot (before the first step: no run's chaos changes it),
    and which runs are chaotic."""
    if not r.complete:
        return {"complete": False}
    d_ks = sorted(r.runs)
    one_hot = [
        d for d in d_ks if all(r.runs[e]["none"].max_weight[0] > SATURATION for e in d_ks if e >= d)
    ]
    chaotic = {rule: [d for d in d_ks if r.runs[d][rule].chaotic] for rule in ("none", "sqrt")}
    shown = [d for d in TRAINING_SHOWN_D_KS if d in r.runs]
    losses = {
        rule: [_marked(f"{r.runs[d][rule].loss[-1]:.3g}", r.runs[d][rule]) for d in shown]
        for rule in SCALING_RULES
    }
    return {
        "complete": True,
        "none_starts_one_hot": bool(one_hot),
        "none_one_hot_d_k": one_hot[0] if one_hot else d_ks[-1],
        "none_chaotic_somewhere": bool(chaotic["none"]),
        "none_chaotic_d_ks": ", ".join(map(str, chaotic["none"])),
        "sqrt_chaotic_somewhere": bool(chaotic["sqrt"]),
        "sqrt_chaotic_d_ks": ", ".join(map(str, chaotic["sqrt"])),
        "loss_rows": _rows(r, losses),
    }


def _listed(values, fmt="{:.3g}") -> str:
    """Numbers as "1, 2, 5" (a list of numbers: no prose)."""
    return ", ".join(fmt.format(float(v)) for v in values)


def _rates(r: Results) -> dict:
    """Whether the learning rates are done, and how far they have got; ``checking``,
    whether their edges are still being checked for chaos."""
    return {
        "swept": r.rates is not None,
        "checking": r.rates is not None and not r.rates.checked,
        "progress": r.rates_progress,
        "d_model": DEFAULT_D_MODEL,
    }


def settling(rule: str, settings) -> dict:
    """Where the theory puts ``rule``'s edge settling into its far-out law, from v and T
    alone (no measured digit chooses the words): its crossover d_k (the weights move by
    their own size: about 60 (T/v)^2 under ÷ √d_k), the d_k from which it is within
    SETTLED_WITHIN of that law, and whether that d_k is on the edges' axis."""
    settled = settled_d_k(rule, settings)
    return {
        "crossover": rounded(crossover_d_k(rule, settings)),
        "settled": rounded(settled),
        "settled_within": SETTLED_WITHIN,
        "settles_on_axis": bool(settled <= EDGE_D_KS[-1]),
    }


def _lr_sweep(r: Results) -> dict:
    """The current rule's curves: how its edge moves with d_k, by the theory's laws (the
    lazy law d_k^(2e - 1) far past its crossover for e <= 1/2, the rich law d_k^e above;
    no measured digit chooses the words: the measured edges are in the summary)."""
    numbers = _rates(r)
    rule = r.settings.scaling
    e = Fraction(rule_exponent(rule, r.settings.alpha)).limit_denominator(24)
    lazy = is_lazy(rule, r.settings.alpha)
    numbers |= {
        "rule_has_edge": rule in EDGE_RULES,
        "edge_settles": lazy and e == Fraction(1, 2),
        "edge_grows": rule in EDGE_RULES and not lazy,
        "edge_power": fraction(float(2 * e - 1 if lazy else e)),
    }
    if lazy:
        numbers |= settling(rule, r.settings)
    if r.rates is None:
        return numbers
    lowest = r.rates.best(rule)[0]
    edges = r.rates.edge.get(rule, np.full(len(EDGE_D_KS), np.nan))
    chaotic = r.rates.moved(rule)
    at = [EDGE_D_KS.index(d) for d in CURVE_D_KS]
    return numbers | {
        "curve_d_ks": ", ".join(map(str, CURVE_D_KS)),
        "lowest": _listed(lowest),
        "edges": ", ".join(written(e, c) for e, c in zip(edges[at], chaotic[at], strict=True)),
    }


def _collapse_d_k(r: Results) -> float:
    """The d_k past which the unscaled model's starting logits spread beyond
    COLLAPSE_SPREAD: s = sqrt(d_k) v / T."""
    s = r.settings
    return (COLLAPSE_SPREAD * s.temperature / s.variance) ** 2


def _best_loss(r: Results) -> dict:
    """Every rule's lowest loss over η against d_k, as a share of its start; where the
    unscaled model stops training, by the theory's collapse of the starting spread."""
    numbers = _rates(r) | {
        "collapse_spread": COLLAPSE_SPREAD,
        "eta_low": LEARNING_RATES[0],
        "eta_high": LEARNING_RATES[-1],
    }
    collapse = _collapse_d_k(r)
    numbers |= {
        "none_collapses": bool(
            theory_checked(r.settings) and CURVE_D_KS[0] < collapse < CURVE_D_KS[-1]
        ),
        "none_collapse_d_k": collapse,
    }
    if r.rates is None:
        return numbers
    shares = {
        rule: [percent(k) for k in r.rates.best(rule)[0] / r.rates.start[rule]]
        for rule in SCALING_RULES
    }
    return numbers | {
        "lowest_rows": _rows(r, shares),
    }


def _best_lr(r: Results) -> dict:
    """Every rule's edge against d_k, as a table; whether the theory is drawn."""
    numbers = _rates(r) | {
        "theory_shown": theory_checked(r.settings),
        "mup_base_d_k": MUP_BASE_D_K,
    }
    if r.rates is None:
        return numbers
    rates = r.rates
    edges = {
        rule: [written(e, c) for e, c in zip(rates.edge[rule], rates.moved(rule), strict=True)]
        for rule in EDGE_RULES
    }
    holes = [
        f"{rule_name(rule, r.settings.alpha)} at d_k = {d_k}: {_listed(window.holes)}"
        for rule in EDGE_RULES
        for d_k, window in zip(EDGE_D_KS, rates.window[rule], strict=True)
        if window.holes.size
    ]
    return numbers | {
        "edge_rows": _rows(r, edges),
        "holes": "; ".join(holes) or "none",
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
