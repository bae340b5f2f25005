"""The views' words and formulas against the code: every formula and claim must be true."""

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from app import theory
from app.captions import caption, summary
from app.formulas import FORMULAS, formula_clauses
from app.options import VIEWS
from app.results import Results
from app.simulation import SCALING_RULES, Settings, simulate
from app.sweep import sweep
from app.training import TrainingConfig, training_sweep
from app.words import content, text

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
    assert theory.UNIFORM_JACOBIAN_TEX in FORMULAS["jacobian"]
    assert evaluate_tex(theory.UNIFORM_JACOBIAN_TEX, n=n) == pytest.approx(
        theory.uniform_jacobian_norm(n), rel=1e-15
    )
    assert evaluate_tex(theory.UNIFORM_JACOBIAN_TEX, n=64) == pytest.approx(0.124, abs=5e-4)


def test_the_spread_formulas_are_what_the_code_computes():
    assert theory.LOGIT_STD_TEX in FORMULAS["spread"]
    for rule in ("none", "sqrt", "linear"):
        for d_k in (1, 64, 1000):
            c = 1.0 if rule == "none" else d_k**-0.5 if rule == "sqrt" else 1 / d_k
            shown = evaluate_tex(theory.LOGIT_STD_TEX, c=c, d_k=d_k, v=1.5, T=0.5)
            assert shown == pytest.approx(float(theory.logit_std(rule, d_k, 1.5, 0.5)))
    assert theory.COLLAPSE_THRESHOLD_TEX in FORMULAS["spread"]
    assert evaluate_tex(theory.COLLAPSE_THRESHOLD_TEX, n=64) == pytest.approx(
        theory.collapse_threshold(64)
    )


@pytest.mark.parametrize(("variance", "temperature"), [(1.0, 1.0), (0.1, 4.0), (4.0, 0.1)])
def test_the_spread_caption_names_exactly_the_rules_that_stay_flat(variance, temperature):
    """'dividing by √d_k holds it at v/T, and QK-norm at √(d_k/(d_k − 1))/T': the simulated spreads
    from d_k = 4 on, at the slider's extremes of v and T too."""
    settings = Settings(d_k=1, variance=variance, scaling="sqrt", temperature=temperature)
    curves = sweep(settings, POWERS)
    flat = {
        rule
        for rule in SCALING_RULES
        if np.ptp(np.log(curves[rule]["logit_std"][2:])) < np.log(1.5)  # d_k >= 4
    }
    assert flat == {"sqrt", "qk_norm"}
    assert np.allclose(curves["sqrt"]["logit_std"][4:], variance / temperature, rtol=0.1)
    assert np.allclose(curves["qk_norm"]["logit_std"][4:], 1 / temperature, rtol=0.1)
    results = Results(settings, 2.0, simulate(settings), curves, {})
    shown = caption("spread", results).text
    said = "dividing by √d_k holds it at v/T, and QK-norm at √(d_k/(d_k − 1))/T, within 4% of 1/T"
    assert said in " ".join(shown.split())
    assert "Only" not in shown


@pytest.fixture(scope="module")
def results_512():
    """The page's results at d_k = 512 without scaling (its training runs at η = 2)."""
    settings = Settings(d_k=512, variance=1.0, scaling="none")
    runs = training_sweep(settings, POWERS, TrainingConfig(twins=True))
    return Results(settings, 2.0, simulate(settings), sweep(settings, POWERS), runs)


def test_every_view_has_a_caption_a_summary_a_formula_and_no_internal_numbering(results_512):
    assert set(FORMULAS) == set(VIEWS) == set(content("views"))
    words = [text("page", "explainer", "text")]
    for view in VIEWS:
        words += [caption(view, results_512).text, summary(view, results_512).text]
    for said in words:
        assert said and not re.search(r"\bF\d\b|DESIGN|\{|\}", said), said
    assert "theory: spread = c √d_k v / T" in summary("histogram", results_512).text


def test_the_gradient_summary_reports_the_rise_the_collapse_and_the_spread():
    settings = Settings(d_k=64, variance=1.0, scaling="none")
    results = Results(settings, 2.0, simulate(settings), sweep(settings, POWERS), {})
    line = summary("query_grad", results).text
    grad = results.curves["none"]["query_grad_norm"]
    peak = POWERS[int(np.argmax(grad))]
    assert f"peaks at d_k = {peak}" in line
    assert f"is {grad[-1]:.3g} at d_k = 1024" in line
    assert "orders of magnitude" in line


def test_the_training_sweep_caption_says_what_the_runs_at_the_defaults_do(results_512):
    """At v = 1 and η = 2: the unscaled rows start one-hot from d_k = 512 on (at 256 the
    median row's largest weight starts at 0.95), its runs from d_k = 32 on are chaotic
    (their ends are never read: they are marked), ÷ √d_k's only at d_k = 1 to 4. The
    table marks each chaotic run with a †."""
    said = caption("training_sweep", results_512)
    claims = dict(said.claims)
    assert claims["none_starts_one_hot"] and claims["none_chaotic_somewhere"]
    assert "rows start one-hot from d_k = 512 on" in said.text
    runs = results_512.runs
    assert runs[256]["none"].max_weight[0] < 0.99 < runs[512]["none"].max_weight[0]
    assert {d for d in POWERS if runs[d]["none"].chaotic} >= {64, 128, 256, 512, 1024}
    assert not any(runs[d]["sqrt"].chaotic for d in POWERS if d >= 16)
    table = summary("training_sweep", results_512).text
    assert f"| none | {runs[16]['none'].loss[-1]:.3g} | {runs[64]['none'].loss[-1]:.3g} †" in table
    while_training = replace(results_512, runs={512: runs[512]})
    assert dict(caption("training_sweep", while_training).claims) == {"complete": False}


def test_the_row_summaries_are_the_numbers_of_that_row():
    settings = Settings(d_k=512, variance=1.0, scaling="sqrt")
    draw = simulate(settings)
    unscaled = draw.q @ draw.k.T
    row = 17
    results = Results(settings, 2.0, draw, sweep(settings, POWERS), {}, row=row)
    z, raw = np.sort(draw.logits[row]), np.sort(unscaled[row])
    e = np.exp(raw - raw[-1])
    assert summary("row_logits", results).text == (
        f"Query 18 with rule ÷ √d_k: logits std {draw.logits[row].std():.3g}, the top one "
        f"ahead of the next by {z[-1] - z[-2]:.3g}; unscaled std {unscaled[row].std():.3g}, "
        f"ahead by {raw[-1] - raw[-2]:.3g}."
    )
    assert summary("row_weights", results).text == (
        f"Query 18 with rule ÷ √d_k: largest weight {draw.weights[row].max():.3g}; unscaled "
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
    for tex in FORMULAS.values():  # every formula on the page, whole, in order
        pieces = "".join("".join(clause) for clause in formula_clauses(tex))
        spaceless = re.sub(r"\s", "", re.sub(r"([,;])(?:\\q?quad|\\ \\ )", r"\1", tex))
        assert pieces.replace(" ", "") == spaceless
