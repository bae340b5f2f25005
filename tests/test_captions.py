"""The page's words against the code: every formula and claim must be true."""

import math
import re

import numpy as np
import pytest

from app import theory
from app.captions import (
    CAPTIONS,
    EXPLAINER,
    formula_clauses,
    row_summaries,
    summaries,
    training_summaries,
)
from app.scenario import VIEWS
from app.simulation import (
    SCALING_RULES,
    Settings,
    median_row,
    row_metrics,
    saturated_share,
    simulate,
    sweep,
)
from app.training import training_sweep

POWERS = [2**i for i in range(11)]


def evaluate_tex(tex: str, **names) -> float:
    """The value of a simple TeX formula (sqrt, ln, fractions with /, thin-space products)."""
    python = tex.split("=")[-1]
    for pattern, replacement in [
        (r"\\sqrt\{", "sqrt("),
        (r"(\w)\\ln\\ ", r"\1*log "),
        (r"\\ln\\ ", "log "),
        (r"\\,/\\,", "/"),
        (r"\\,", "*"),
        (r"\}", ")"),
    ]:
        python = re.sub(pattern, replacement, python)
    python = re.sub(r"log (\w+)", r"log(\1)", python)
    return eval(python, {"sqrt": math.sqrt, "log": math.log}, names)


@pytest.mark.parametrize("n", [2, 64, 1024])
def test_the_jacobian_caption_gives_the_uniform_norm_the_code_computes(n):
    assert theory.UNIFORM_JACOBIAN_TEX in CAPTIONS["jacobian"][1]
    assert evaluate_tex(theory.UNIFORM_JACOBIAN_TEX, n=n) == pytest.approx(
        theory.uniform_jacobian_norm(n), rel=1e-15
    )
    assert evaluate_tex(theory.UNIFORM_JACOBIAN_TEX, n=64) == pytest.approx(0.124, abs=5e-4)


def test_the_spread_formulas_are_what_the_code_computes():
    assert theory.LOGIT_STD_TEX in CAPTIONS["spread"][1]
    for rule in ("none", "sqrt", "linear"):
        for d_k in (1, 64, 1000):
            c = 1.0 if rule == "none" else d_k**-0.5 if rule == "sqrt" else 1 / d_k
            shown = evaluate_tex(theory.LOGIT_STD_TEX, c=c, d_k=d_k, v=1.5, T=0.5)
            assert shown == pytest.approx(float(theory.logit_std(rule, d_k, 1.5, 0.5)))
    assert theory.COLLAPSE_THRESHOLD_TEX in CAPTIONS["spread"][1]
    assert evaluate_tex(theory.COLLAPSE_THRESHOLD_TEX, n=64) == pytest.approx(
        theory.collapse_threshold(64)
    )


def test_the_spread_caption_names_exactly_the_rules_that_stay_flat():
    """'Dividing by √d_k and QK-norm keep it flat' against the simulated spreads."""
    curves = sweep(Settings(d_k=1, variance=1.0, scaling="sqrt"), POWERS)
    flat = {
        rule
        for rule in SCALING_RULES
        if np.ptp(np.log(curves[rule]["logit_std"][2:])) < np.log(1.5)  # d_k >= 4
    }
    assert flat == {"sqrt", "qk_norm"}
    caption = CAPTIONS["spread"][0]
    assert "Dividing by √d_k and QK-norm keep it flat" in caption
    assert "Only" not in caption


def test_every_view_has_a_caption_and_no_internal_numbering():
    assert set(CAPTIONS) == set(VIEWS)
    settings = Settings(d_k=512, variance=1.0, scaling="none")
    snap = simulate(settings)
    unscaled = snap.q @ snap.k.T
    medians = {name: float(np.median(v)) for name, v in row_metrics(snap).items()}
    lines = summaries(
        settings,
        snap,
        unscaled,
        medians,
        float(saturated_share(snap.max_weight)),
        sweep(settings, POWERS),
        VIEWS,
    )
    runs = training_sweep(settings, POWERS)
    lines |= training_summaries(settings, 2.0, 64, runs[512], runs, complete=True)
    lines |= row_summaries(snap, unscaled, median_row(snap))
    assert set(lines) == set(VIEWS)
    words = [EXPLAINER, *lines.values(), *(c for pair in CAPTIONS.values() for c in pair)]
    for text in words:
        assert not re.search(r"\bF\d\b|DESIGN", text), text
    assert "theory: spread = c √d_k v / T" in lines["histogram"]


def test_the_gradient_summary_reports_the_rise_the_collapse_and_the_spread():
    settings = Settings(d_k=64, variance=1.0, scaling="none")
    curves = sweep(settings, POWERS)
    snap = simulate(settings)
    medians = {name: float(np.median(v)) for name, v in row_metrics(snap).items()}
    line = summaries(settings, snap, snap.q @ snap.k.T, medians, 0.0, curves, ["query_grad"])[
        "query_grad"
    ]
    grad = curves["none"]["query_grad_norm"]
    peak = POWERS[int(np.argmax(grad))]
    assert f"peaks at d_k = {peak}" in line
    assert f"is {grad[-1]:.3g} at d_k = 1024" in line
    assert "orders of magnitude" in line


@pytest.fixture(scope="module")
def trained():
    """The page's default training runs at every d_k, at η = 2 and at η = 20 and 50."""
    settings = Settings(d_k=1, variance=1.0, scaling="sqrt")
    return {lr: training_sweep(settings, POWERS, learning_rate=lr) for lr in (2.0, 20.0, 50.0)}


def test_the_training_sweep_caption_is_what_the_runs_do(trained):
    caption = CAPTIONS["training_sweep"][0]
    runs = trained[2.0]

    def ratio(rule, d_k, lr=2.0):  # final over starting loss
        run = trained[lr][d_k][rule]
        return run.loss[-1] / run.loss[0]

    assert "With ÷ √d_k, and with QK-norm once d_k is moderate, it stays low" in caption
    assert all(runs[d]["sqrt"].loss[-1] < 0.05 for d in POWERS if d >= 8)
    assert all(runs[d]["qk_norm"].loss[-1] < 0.05 for d in POWERS if d >= 64)
    assert "learns at moderate d_k but stalls near its starting loss once d_k is large" in caption
    assert max(ratio("none", d) for d in (8, 16, 32, 64)) < 0.01
    assert min(ratio("none", d) for d in POWERS if d >= 256) > 0.9
    assert "a ten times larger η breaks it sooner" in caption
    assert ratio("none", 64) < 0.01 and ratio("none", 64, lr=20.0) > 1
    assert "with ÷ d_k it barely moves at large d_k unless η grows with d_k" in caption
    assert min(ratio("linear", d) for d in POWERS if d >= 64) > 0.9
    assert ratio("linear", 64, lr=50.0) < 0.1
    assert "too slowly to stall training over this range at v = 1" in caption
    assert all(ratio("power", d) < 0.05 for d in POWERS if d >= 8)
    assert "at v = 4 it starts to fail at d_k = 1024" in caption
    wide = training_sweep(Settings(d_k=1, variance=4.0, scaling="sqrt"), [512, 1024])
    assert wide[512]["power"].loss[-1] / wide[512]["power"].loss[0] < 0.05
    assert wide[1024]["power"].loss[-1] / wide[1024]["power"].loss[0] > 0.2
    assert wide[1024]["sqrt"].loss[-1] / wide[1024]["sqrt"].loss[0] < 0.05
    assert "At d_k = 1 or 2 no rule gets far" in caption
    assert max(runs[d][rule].accuracy[-1] for d in (1, 2) for rule in SCALING_RULES) < 0.2


def test_the_row_summaries_are_the_numbers_of_that_row():
    settings = Settings(d_k=512, variance=1.0, scaling="sqrt")
    snap = simulate(settings)
    unscaled = snap.q @ snap.k.T
    row = 17
    lines = row_summaries(snap, unscaled, row)
    z, raw = np.sort(snap.logits[row]), np.sort(unscaled[row])
    e = np.exp(raw - raw[-1])
    assert lines["row_logits"] == (
        f"Query 18 with rule ÷ √d_k: logits std {snap.logits[row].std():.3g}, the top one "
        f"ahead of the next by {z[-1] - z[-2]:.3g}; unscaled std {unscaled[row].std():.3g}, "
        f"ahead by {raw[-1] - raw[-2]:.3g}."
    )
    assert lines["row_weights"] == (
        f"Query 18 with rule ÷ √d_k: largest weight {snap.weights[row].max():.3g}; unscaled "
        f"{1 / e.sum():.3g} (uniform: 0.0156)."
    )


def test_a_formula_breaks_between_clauses_and_before_relations_only():
    """Outside brackets and norms only; a separator keeps its comma and loses its space."""
    assert formula_clauses(r"\|x = y\|_F = f(a = b),\quad c \le d;\quad e") == [
        [r"\|x = y\|_F", "= f(a = b),"],
        ["c", r"\le d;"],
        ["e"],
    ]
    assert formula_clauses(r"\Pr[p \lesssim 1] \leq 2") == [[r"\Pr[p \lesssim 1] \leq 2"]]
    for _, tex in CAPTIONS.values():  # every formula on the page, whole, in order
        pieces = "".join("".join(clause) for clause in formula_clauses(tex))
        spaceless = re.sub(r"\s", "", re.sub(r"([,;])(?:\\q?quad|\\ \\ )", r"\1", tex))
        assert pieces.replace(" ", "") == spaceless
