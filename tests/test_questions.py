"""The questions' answers against the simulation: every number they show, computed here
again from its definition, and the claims their numbers make. (Every condition that
words an answer is checked over the whole control space in test_claims.py.)"""

import math
import re
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from question_reference import (
    draw,
    evidence,
    initial_loss,
    layer_norm,
    metric,
    rows,
    rows_of_run,
    scale,
    settings_of,
    softmax,
    unscaled_scores,
)

from app import rates
from app.options import (
    ALPHA_LABELS,
    ALPHA_OPTIONS,
    D_K_OPTIONS,
    DEFAULTS,
    FIELDS,
    VIEWS,
)
from app.questions import OTHER_VIEWS, QUESTIONS, question
from app.rates import COLLAPSE_SPREAD
from app.results import Results
from app.scenario import read_query, write_query
from app.simulation import Settings, simulate
from app.training import PAGE_TOKENS
from app.words import text

TRAINING_PENDING = text("notices", "training pending")

STEPS = [(q.slug, i, step) for q in QUESTIONS for i, step in enumerate(q.steps)]
STEP_IDS = [f"{slug}-{i + 1}" for slug, i, _ in STEPS]
# Sliders moved after a question set its scenario: the answers must hold for these too.
MOVED = [
    {"d_k": 1, "scaling": "qk_norm", "n_keys": 2, "temperature": 0.1},
    {"d_k": 1024, "scaling": "power", "alpha": 1.5, "variance": 4.0, "temperature": 0.1},
    {"d_k": 2, "scaling": "linear", "variance": 0.1, "temperature": 4.0, "n_keys": 256},
    {"d_k": 32, "scaling": "power", "alpha": 0.5, "seed": 7, "learning_rate": 0.01},
]
NAMES = {"none": "none", "sqrt": "÷ √d_k", "linear": "÷ d_k", "qk_norm": "QK-norm"}
MODELS = """| model | d_model / heads | d_k |
|---|---|---|
| Transformer base | 512 / 8 | 64 |
| BERT-base | 768 / 12 | 64 |
| GPT-2 small | 768 / 12 | 64 |
| GPT-3 175B | 12288 / 96 | 128 |
| LLaMA 7B | 4096 / 32 | 128 |"""
FORMAT_MAX = {  # the largest finite number of each format
    "float16": 65504.0,
    "bfloat16": (2 - 2**-7) * 2.0**127,
    "float32": float(np.finfo(np.float32).max),
}


def jacobian_norms(p):
    """``||diag(p) - p p^T||_F`` of each row of ``p``, from the matrix itself."""
    eye = np.eye(p.shape[1])
    return np.sqrt(np.sum((eye * p[:, None, :] - p[:, :, None] * p[:, None, :]) ** 2, axis=(1, 2)))


def spread_theory(s: Settings) -> float:
    """``c sqrt(d_k) v / T``; under qk_norm ``c d_k rho / sqrt(d_k - 1) / T`` (0 at d_k = 1),
    ``rho = var / (var + eps)`` at the mean sample variance (docs/theory.md)."""
    c, d = scale(s, s.scaling, s.d_k), s.d_k
    if s.scaling != "qk_norm":
        return c * math.sqrt(d) * s.variance / s.temperature
    sample_var = s.variance * (d - 1) / d
    rho = sample_var / (sample_var + 1e-5)
    return c * d * rho / math.sqrt(d - 1) / s.temperature if d > 1 else 0.0


TRAINING_METRICS = ("loss", "loss0", "kept", "accuracy", "mark", "start_weight")
CURVE_KEY = re.compile(
    r"^(none|sqrt|linear|qk_norm|power)_(spread|max_weight|entropy|saturated|grad_p10|grad_p90"
    r"|grad|loss0|loss|kept|accuracy|best|edge|mark|start_weight)(?:_(\d+))?$"
)


def expected(name: str, e: Results):
    """What number ``name`` of an answer must be, computed from the definitions."""
    s = e.settings
    d, v, t, n, rule = s.d_k, s.variance, s.temperature, s.n_keys, s.scaling
    c = scale(s, rule, d)
    label = ALPHA_LABELS[ALPHA_OPTIONS.index(s.alpha)]
    if match := CURVE_KEY.match(name):
        r, kind, at = match[1], match[2], int(match[3] or d)
        if kind == "best":  # the lowest final loss over the learning rates there, in % of start
            i = list(e.rates.d_ks).index(at)
            return 100 * e.rates.loss[r][i].min() / e.rates.start[r][i]
        if kind == "edge":  # the edge found there, written out; † where a nudge moves it
            j = list(e.rates.edge_d_ks).index(at)
            edge = e.rates.edge[r][j]
            if math.isnan(edge):
                return "–"
            value = f"> {rates.LARGEST_RATE:g}" if math.isinf(edge) else f"{edge:.3g}"
            return f"{value} †" if e.rates.chaotic[r][j] else value
        run = e.runs.get(at, {}).get(r)
        if kind == "mark":  # a chaotic run's numbers are marked
            return " †" if run.chaotic else ""
        if kind == "start_weight":  # the median row's largest weight before the first step
            return np.median(rows_of_run(run, r, s, at).max(axis=1))
        if kind == "loss0":
            return initial_loss(run, r, s, at)
        if kind == "kept":
            start = initial_loss(run, r, s, at)
            return run.loss[-1] / start if start > 0 else 0.0
        if kind in ("loss", "accuracy"):
            return run.loss[-1] if kind == "loss" else run.accuracy[-1]
        return metric(s, r, kind, at)
    if name in ("spread", "max_weight", "saturated", "entropy"):
        return metric(s, rule, name, d)
    mine = rows(s, rule, d)
    scores = unscaled_scores(s, d)
    # the page's row up close: the lower median of the rows' largest weights
    row = int(
        np.argsort(mine["weights"].max(axis=1), kind="stable")[(len(mine["weights"]) - 1) // 2]
    )
    top_two = np.sort(mine["logits"][row])[-2:]
    largest = mine["largest"]
    half_step = 2.0 ** (math.floor(math.log2(abs(largest))) - 8) if largest else 0.0

    def medians(rule):
        return [metric(s, rule, "grad", d_k) for d_k in D_K_OPTIONS]

    def decades(rule):  # an underflowed 10th percentile counts as 1e-300, as on the page
        low = max(metric(s, rule, "grad_p10", d), 1e-300)
        return math.log10(metric(s, rule, "grad_p90", d)) - math.log10(low)

    sqrt_t1 = replace(s, scaling="sqrt", temperature=1.0)
    runs = e.runs.get(d, {})

    def naive_sums():
        with np.errstate(over="ignore"):  # inf beyond z = 709: more than any format holds
            return np.sum(np.exp(mine["logits"]), axis=1)

    lazy = {
        "d_k": lambda: d,
        "v": lambda: v,
        "T": lambda: t,
        "n": lambda: n,
        "queries": lambda: s.n_queries,
        "lr": lambda: e.learning_rate,
        "c": lambda: c,
        "rule": lambda: NAMES.get(rule, f"÷ d_k^α (α = {label})"),
        "alpha": lambda: label,
        "exponent": lambda: str(Fraction(1, 2) - Fraction(label)).replace("-", "−"),
        "steps": lambda: 200,
        "eta_low": lambda: 0.05,
        "eta_high": lambda: 500.0,
        "scores_std": lambda: scores.std(),
        "raw_theory": lambda: math.sqrt(d) * v,
        "none_theory": lambda: math.sqrt(d) * v / t,
        "sqrt_theory": lambda: v / t,
        "power_theory_16": lambda: 16 ** (0.5 - s.alpha) * v / t,
        "power_theory_1024": lambda: 1024 ** (0.5 - s.alpha) * v / t,
        "spread_theory": lambda: spread_theory(s),
        "threshold": lambda: math.sqrt(2 * math.log(n)),
        "logits_std": lambda: mine["logits"].std(),
        "root": lambda: math.sqrt(d),
        "sqrt_c": lambda: 1 / math.sqrt(d),
        "scaled_std": lambda: scores.std() / math.sqrt(d),
        "models_table": lambda: MODELS,
        "typical": lambda: "64 or 128",
        "none_decades": lambda: decades("none"),
        "sqrt_decades": lambda: decades("sqrt"),
        "sqrt_grad_min": lambda: min(medians("sqrt")),
        "sqrt_grad_max": lambda: max(medians("sqrt")),
        "none_grad_peak": lambda: max(medians("none")),
        "none_grad_peak_d_k": lambda: D_K_OPTIONS[int(np.argmax(medians("none")))],
        "none_grad_1024": lambda: medians("none")[-1],
        "uniform_jacobian": lambda: math.sqrt(n - 1) / n,
        "tokens": lambda: min(n, PAGE_TOKENS),
        "none_kept": lambda: runs["none"].loss[-1] / runs["none"].loss[0],
        "sqrt_kept": lambda: runs["sqrt"].loss[-1] / runs["sqrt"].loss[0],
        "none_collapse_d_k": lambda: (COLLAPSE_SPREAD * t / v) ** 2,  # s = sqrt(d_k) v / T
        "collapse_spread": lambda: COLLAPSE_SPREAD,
        "v_t": lambda: v / t,
        # where ÷ √d_k's edge settles (docs/theory.md): R = 7.59, to within 20%
        "sqrt_crossover": lambda: two_digits((7.59 * t / v) ** 2),
        "sqrt_settled": lambda: two_digits((7.59 * t / ((0.8**-0.5 - 1) * v)) ** 2),
        "sqrt_settled_within": lambda: 0.2,
        "mup_base_d_k": lambda: 16,
        **{
            f"linear_mup_{at}": lambda at=at: rates.written(
                e.rates.edge["linear"][list(e.rates.edge_d_ks).index(at)] * 16 / at,
                e.rates.chaotic["linear"][list(e.rates.edge_d_ks).index(at)],
            )
            for at in (16, 256, 4096, 65536)
        },
        "d_model": lambda: 16,
        "row": lambda: row + 1,
        "row_std": lambda: mine["logits"][row].std(),
        "row_min": lambda: mine["logits"][row].min(),
        "row_max": lambda: top_two[1],
        "row_gap": lambda: top_two[1] - top_two[0],
        "row_decades": lambda: (top_two[1] - top_two[0]) / math.log(10),
        "row_max_weight": lambda: mine["weights"][row].max(),
        "row_entropy": lambda: mine["entropy"][row],
        "uniform": lambda: 1 / n,
        "largest": lambda: largest,
        "half_step": lambda: half_step,
        "ratio_error": lambda: math.exp(2 * half_step),
        "c_over_t": lambda: c / t,
        "t_other": lambda: t / (c * math.sqrt(d)) if rule == "none" else t / c,
        "t_low": lambda: 0.1,
        "t_high": lambda: 4.0,
        # none at T' = T/c, or sqrt at T' = T/(c sqrt(d_k)): the same c/T
        "difference": lambda: np.abs(mine["weights"] - softmax(scores * c / t)).max(),
        "score": lambda: scores[0, 0],
        "scaled_score": lambda: scores[0, 0] / math.sqrt(d),
        "logit": lambda: mine["logits"][0, 0],
        "weight": lambda: mine["weights"][0, 0],
        "spread_t1": lambda: metric(replace(s, temperature=1.0), rule, "spread", d),
        "max_weight_t1": lambda: metric(replace(s, temperature=1.0), rule, "max_weight", d),
        "qk_length": lambda: np.median(np.linalg.norm(layer_norm(draw(s, d)[0]), axis=1)),
        "qk_norm_unscaled": lambda: metric(s, "qk_norm", "spread", d) * math.sqrt(d),
        "sqrt_t1_spread": lambda: metric(sqrt_t1, "sqrt", "spread", d),
        "sqrt_t1_saturated": lambda: metric(sqrt_t1, "sqrt", "saturated", d),
        "sqrt_t1_difference": lambda: np.abs(
            mine["weights"] - rows(sqrt_t1, "sqrt", d)["weights"]
        ).max(),
    }
    for f, largest_finite in FORMAT_MAX.items():
        lazy[f"limit_{f}"] = lambda x=largest_finite: math.log(x)
        # a naive softmax overflows once sum_j exp(z_j) does (float64 holds it below z = 709)
        lazy[f"overflow_{f}"] = lambda x=largest_finite: np.mean(naive_sums() > x)
    return lazy[name]()


def two_digits(x: float) -> str:
    """``x`` to two significant digits, written out as the page writes a d_k: 58, 4,100."""
    rounded = float(f"{x:.2g}")
    return f"{rounded:,.0f}" if rounded >= 10 else f"{rounded:g}"


def check_numbers(step, e: Results):
    """Every number of ``step``'s answer for ``e`` against ``expected`` (its conditions
    are test_claims.py's)."""
    numbers = step.numbers(e)
    for name, value in numbers.items():
        if isinstance(value, bool):
            continue
        want = expected(name, e)
        if isinstance(want, str) or isinstance(value, str):
            assert value == want, (name, value, want)
        elif name in ("difference", "sqrt_t1_difference") and want < 1e-12:
            assert value < 1e-12, (name, value)  # the same weights, both computed in float64
        else:
            assert value == pytest.approx(float(want), rel=1e-6, abs=1e-300), (name, value, want)
    return numbers


# --- The catalogue ------------------------------------------------------------------------


def test_slugs_are_unique_short_and_url_safe():
    slugs = [q.slug for q in QUESTIONS]
    assert len(set(slugs)) == len(slugs) == 15
    for slug in slugs:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug) and len(slug) <= 24
        assert question(slug).slug == slug


def test_an_unknown_slug_names_the_known_ones():
    with pytest.raises(KeyError, match="purpose"):
        question("no-such-question")


def test_every_question_asks_for_a_prediction_in_one_line():
    for q in QUESTIONS:
        assert q.text.endswith("?") and q.steps
        assert q.predict.startswith("Predict") and q.predict.endswith("?")
        assert "\n" not in q.predict


@pytest.mark.parametrize(("slug", "i", "step"), STEPS, ids=STEP_IDS)
def test_every_scenario_is_one_the_page_can_show(slug, i, step):
    assert step.view in VIEWS + OTHER_VIEWS
    assert set(step.scenario) <= set(FIELDS)
    values = DEFAULTS | step.scenario
    assert read_query(write_query(values)) == (values, [])
    settings_of(step.scenario)  # a valid Settings


# --- Every number, and every claim, of every answer ---------------------------------------


@pytest.mark.parametrize(("slug", "i", "step"), STEPS, ids=STEP_IDS)
def test_every_number_is_the_simulations(slug, i, step):
    e = evidence(step.scenario)
    check_numbers(step, e)
    answer = step.answer(e)
    assert answer == step.template.render(step.numbers(e)).text != TRAINING_PENDING
    assert not re.search(r"\b(nan|inf)\b|<[a-z/]", answer, re.IGNORECASE)


@pytest.mark.parametrize("moved", MOVED, ids=lambda m: "-".join(map(str, m.values())))
def test_the_answers_stay_true_after_the_sliders_move(moved):
    e = evidence(moved)
    for _, _, step in STEPS:
        check_numbers(step, e)
        assert not re.search(r"\b(nan|inf)\b", step.answer(e), re.IGNORECASE)


def test_an_answer_waits_for_the_training_runs_it_reads():
    for _, _, step in STEPS:
        e = evidence(step.scenario)
        keys = [CURVE_KEY.match(name) for name in step.numbers(e)]
        needs = {int(m[3] or e.settings.d_k) for m in keys if m and m[2] in TRAINING_METRICS}
        assert (step.answer(replace(e, runs={})) == TRAINING_PENDING) == bool(needs)
        partial = replace(e, runs={e.settings.d_k: e.runs[e.settings.d_k]})
        assert (step.answer(partial) == TRAINING_PENDING) == bool(needs - {e.settings.d_k})


def numbers_of(slug, i):
    step = question(slug).steps[i]
    e = evidence(step.scenario)
    return step.numbers(e), e


def test_the_purpose_saturates_unscaled_rows_and_not_scaled_ones():
    numbers, _ = numbers_of("purpose", 1)
    assert numbers["none_saturated"] > 0.5 and numbers["sqrt_saturated"] == 0
    assert numbers["none_spread_1024"] / numbers["none_spread_16"] > 7
    assert 0.9 < numbers["sqrt_spread_1024"] / numbers["sqrt_theory"] < 1.1
    assert 0.9 < numbers["sqrt_spread_16"] / numbers["sqrt_theory"] < 1.1


def test_saturated_rows_have_a_vanished_jacobian_and_the_gradient_spreads():
    """'||J||_F < 0.02 once the largest weight passes 0.99': ||J||_F <= 2 (1 - p_max)."""
    numbers, e = numbers_of("unstable-gradients", 0)
    for d_k in D_K_OPTIONS:
        unscaled = rows(e.settings, "none", d_k)
        saturated = unscaled["weights"][unscaled["max_weight"] > 0.99]
        assert np.all(jacobian_norms(saturated) < 0.02)
    assert numbers["none_decades"] > 5
    assert numbers["sqrt_grad_p90"] / numbers["sqrt_grad_p10"] < 10
    assert numbers["none_grad"] < numbers["sqrt_grad"] < numbers["none_grad_p90"]


def test_without_scaling_the_model_stops_learning_at_large_d_k():
    numbers, _ = numbers_of("skip-scaling", 1)
    assert numbers["none_kept"] > 0.9 and numbers["sqrt_kept"] < 0.1
    assert numbers["none_loss_1024"] > 0.5 > 0.05 > numbers["sqrt_loss_1024"]


def test_the_gap_between_the_top_two_logits_is_the_ratio_of_their_weights():
    for i in (0, 1):
        numbers, e = numbers_of("softmax-output", i)
        weights = rows(e.settings, e.settings.scaling, 512)["weights"][e.shown_row]
        runner_up, top = np.sort(weights)[-2:]
        assert top / runner_up == pytest.approx(math.exp(numbers["row_gap"]), rel=1e-9)


def test_only_the_square_root_keeps_the_spread_and_the_power_rule_trends_as_it_says():
    numbers, _ = numbers_of("why-square-root", 2)
    rules = ("none", "power", "sqrt", "linear")
    ratios = {r: numbers[f"{r}_spread_1024"] / numbers[f"{r}_spread_16"] for r in rules}
    assert {r for r, ratio in ratios.items() if 0.9 < ratio < 1.1} == {"sqrt"}
    numbers, _ = numbers_of("why-square-root", 0)
    assert numbers["power_grows"] and not numbers["power_shrinks"]
    assert numbers["power_spread_1024"] > 1.8 * numbers["power_spread_16"]
    numbers, _ = numbers_of("why-square-root", 1)  # ÷ d_k: shrinks, and fades to uniform
    assert numbers["linear_spread_1024"] < numbers["linear_spread_16"] / 7
    assert numbers["linear_entropy_1024"] > numbers["linear_entropy_16"]


def test_a_max_subtracted_softmax_overflows_in_no_format():
    for i in (0, 1):
        _, e = numbers_of("numerical-stability", i)
        z = e.draw.logits.astype(np.float16)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        assert np.all(np.isfinite(p / p.sum(axis=1, keepdims=True)))
    unscaled, _ = numbers_of("numerical-stability", 0)
    scaled, _ = numbers_of("numerical-stability", 1)
    assert unscaled["overflow_float16"] == 1 and scaled["overflow_float16"] == 0


def test_the_temperature_and_the_scale_are_one_knob():
    """The two steps show the same weights; and each the same as the rules it names."""
    first, second = (numbers_of("softmax-interaction", i)[1] for i in (0, 1))
    np.testing.assert_allclose(first.draw.weights, second.draw.weights, rtol=1e-12)
    for e in (first, second):
        t = question("softmax-interaction").steps[0].numbers(e)["t_other"]
        rule = "sqrt" if e.settings.scaling == "none" else "none"
        other = simulate(replace(e.settings, scaling=rule, temperature=t))
        np.testing.assert_allclose(other.weights, e.draw.weights, rtol=1e-12)


def test_the_temperature_question_does_not_set_its_answer_before_it_is_revealed():
    """The first step (its prediction asked before the answer) keeps T at 1 on the slider:
    the temperature it asks for, 4 for the unscaled model at d_k = 16, was set there
    (issue 48, point 8)."""
    first = question("softmax-interaction").steps[0]
    _, e = numbers_of("softmax-interaction", 0)
    assert first.scenario["temperature"] == 1.0
    assert first.numbers(e)["t_other"] == 4.0 != first.scenario["temperature"]


def test_lower_temperature_sharpens_every_row():
    _, e = numbers_of("adjust", 0)
    cold = rows(e.settings, "sqrt", e.settings.d_k)["max_weight"]
    warm = rows(replace(e.settings, temperature=1.0), "sqrt", e.settings.d_k)["max_weight"]
    assert e.settings.temperature < 1 and np.all(cold >= warm)


def test_mu_p_starts_closer_to_uniform_and_learns_with_a_larger_learning_rate():
    slow, _ = numbers_of("adjust", 1)
    fast, _ = numbers_of("adjust", 2)
    assert slow["linear_entropy"] > slow["sqrt_entropy"]
    assert slow["linear_loss"] > 0.9 * slow["linear_loss0"]
    assert fast["linear_loss"] < 0.1 * fast["linear_loss0"]


def test_qk_norm_does_not_depend_on_the_variance_but_keeps_its_scale():
    for slug, i in (("adjust", 3), ("always-necessary", 2)):
        numbers, e = numbers_of(slug, i)
        at_one = metric(replace(e.settings, variance=1.0), "qk_norm", "spread", e.settings.d_k)
        assert numbers["qk_norm_spread"] == pytest.approx(at_one, rel=0.01)
        assert numbers["sqrt_spread"] > 3 * numbers["qk_norm_spread"]
        q_hat = layer_norm(draw(e.settings, e.settings.d_k)[0])
        lengths = np.linalg.norm(q_hat, axis=1)
        np.testing.assert_allclose(lengths, math.sqrt(e.settings.d_k), rtol=1e-3)


def test_the_unscaled_model_learns_when_the_spread_is_small():
    numbers, _ = numbers_of("always-necessary", 0)
    assert numbers["none_saturated"] == 0 and numbers["none_loss"] < numbers["sqrt_loss"]
    numbers, _ = numbers_of("always-necessary", 1)
    assert numbers["none_spread"] < numbers["threshold"]
    assert all(numbers[f"none_loss_{d}"] < numbers[f"sqrt_loss_{d}"] for d in (16, 64, 256, 1024))
    numbers, _ = numbers_of("always-necessary", 3)
    assert numbers["sqrt_t1_difference"] < 1e-12
