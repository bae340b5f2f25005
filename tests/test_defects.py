"""The sixteen defects a careful reader found in the page's words (issue 19, part 3).

Each test quotes the old words (OLD), states what is true as a check of the text,
and shows the check failing on the old words and holding on the new ones, computed
where the words depend on the numbers.
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from claims import results_of

from app import softmax
from app.captions import caption
from app.options import DEFAULTS
from app.precision import EXP_LIMITS
from app.questions import question
from app.simulation import Settings
from app.sweep import sweep
from app.training import TrainingConfig, training_sweep
from app.words import content, text

THEORY = (Path(__file__).resolve().parent.parent / "docs" / "theory.md").read_text()
SEEDS = range(5)


def answer(slug: str, step: int, **moved) -> str:
    """Step ``step`` (from 0) of question ``slug`` at its scenario, sliders ``moved``."""
    s = question(slug).steps[step]
    return s.answer(results_of(DEFAULTS | s.scenario | moved))


def section_of_theory(heading: str) -> str:
    """The text of the docs/theory.md section under ``## heading`` (up to the next)."""
    start = THEORY.index(f"## {heading}")
    end = THEORY.find("\n## ", start + 1)
    return " ".join(THEORY[start : end if end > 0 else None].split())  # lines joined


def every_word() -> str:
    """Every content file, as written."""
    names = ["views", "sections", "page", "glossary", "notices"]
    names += [f"questions/{q}" for q in ("adjust", "components", "scaling-factor")]
    return "\n".join(t.source for n in names for p in content(n).values() for t in p.values())


# 1 -----------------------------------------------------------------------------------------


def test_1_the_training_caption_claims_no_more_than_the_runs_at_this_scenario_show():
    old = (
        "With ÷ √d_k, and with QK-norm once d_k is moderate, it stays low however large d_k "
        "gets: one η serves every d_k."
    )

    def holds(words: str, results) -> bool:
        """Any claim that √d_k stays low (ends below 1% of its start) is true here, and no
        claim that one η serves every d_k is made."""
        if "one η serves every d_k" in words or "however large d_k gets" in words:
            return False
        if "ends below 1% of its starting loss at every d_k" in words:
            return all(results.runs[d]["sqrt"].kept < 0.01 for d in results.runs if d >= 16)
        return True

    small_variance = results_of(DEFAULTS | {"variance": 0.1})
    runs = small_variance.runs  # the numbers: ÷ √d_k rises from 16 to 1024
    assert runs[1024]["sqrt"].loss[-1] > 3 * runs[16]["sqrt"].loss[-1]
    assert max(runs[d]["none"].loss[-1] for d in (16, 64, 256, 1024)) < 0.05
    assert not holds(old, small_variance)
    for results in (small_variance, results_of(DEFAULTS)):
        assert holds(caption("training_sweep", results).text, results)


# 2, 3, 13, 14: docs/theory.md ----------------------------------------------------------------


def unscaled_saturated_shares(d_k: int) -> list[float]:
    """The share of saturated rows without scaling at v = 1, 64 keys, seeds 0-4."""
    return [
        float(
            sweep(Settings(d_k=d_k, variance=1.0, scaling="none", seed=seed), [d_k])["none"][
                "saturated_share"
            ][0]
        )
        for seed in SEEDS
    ]


def percent_range(values) -> str:
    """ "9-27%", or "3%" when the lowest and the highest are the same."""
    low, high = (round(100 * x) for x in (min(values), max(values)))
    return f"{low}%" if low == high else f"{low}-{high}%"


def test_2_the_theory_says_how_many_rows_saturate_at_the_typical_d_k():
    old = (
        "would spread by 8 to 11 times the component variance (√d_k v), and the softmax of "
        "most rows would be saturated."
    )
    words = section_of_theory("Real models on the d_k axis")

    def holds(words: str) -> bool:
        """No claim of most rows; the quoted ranges are the measured ones."""
        if "most rows" in words:
            return False
        for d_k in (64, 128):
            if f"{percent_range(unscaled_saturated_shares(d_k))} at d_k = {d_k}" not in words:
                return False
        return True

    assert not holds(old)
    assert holds(words), words


def test_3_the_theory_prints_exps_limits_to_their_digits():
    old = "ln 65504 ≈ 11.09 in float16, ln((2 − 2⁻⁷) 2¹²⁷) ≈ 88.716 in bfloat16"

    def holds(words: str) -> bool:
        printed = {
            "float16": re.search(r"ln 65504 ≈ ([\d.]+)", words),
            "bfloat16": re.search(r"ln\(\(2 − 2⁻⁷\) 2¹²⁷\) ≈ ([\d.]+)", words),
        }
        for name, match in printed.items():
            if match is None:
                return False
            digits = len(match[1].split(".")[1])
            if match[1] != f"{EXP_LIMITS[name]:.{digits}f}":
                return False
        return True

    # ln((2 - 2^-7) 2^127) = 128 ln 2 + ln(1 - 2^-8): 88.7189, below float32's 88.7228
    assert EXP_LIMITS["bfloat16"] == pytest.approx(88.7189, abs=1e-4)
    assert not holds(old)
    assert holds(section_of_theory("Numerical stability"))


@pytest.fixture(scope="module")
def default_runs():
    """The training runs at the page's defaults (v = 1, n = 64, T = 1, η = 2), seed 0."""
    return training_sweep(
        Settings(d_k=1, variance=1.0, scaling="sqrt"),
        [1, 2, 4, 16, 64, 256, 1024],
        TrainingConfig(twins=True),
    )


def _cell(run) -> str:
    """A run's final loss as docs/theory.md tabulates it: two digits, or, for a chaotic
    run (its last digits differ between numpy builds), a bound and a †."""
    loss = run.loss[-1]
    if not run.chaotic:
        return f"{loss:.2g}"
    return f"{'under 0.0001' if loss < 1e-4 else 'over 0.9' if loss > 0.9 else '?'} †"


def test_13_the_theory_counts_five_models_and_tabulates_each_rules_losses(default_runs):
    old = "The training views (`app/training.py`) train four identical models, one per rule"
    old_row = "| none | 0.0003 | 0.00007 | 0.91 | 0.97 |"
    words = section_of_theory("Why the training view uses squared error")

    def holds(words: str) -> bool:
        if "four identical models" in words or "five identical models" not in words:
            return False
        names = {"none": "none", "sqrt": "÷ √d_k", "linear": "÷ d_k", "qk_norm": "QK-norm"}
        names["power"] = "÷ d_k^α (α = 1/3)"
        for rule, name in names.items():
            cells = [_cell(default_runs[d][rule]) for d in (16, 64, 256, 1024)]
            if f"| {name} | {' | '.join(cells)} |" not in words:
                return False
        return True

    assert not holds(old + "\n" + old_row)
    assert holds(words), words


def test_14_the_theory_says_how_far_each_rule_gets_at_small_d_k():
    old = (
        "Below d_k ≈ 8 no rule learns: a score matrix of rank d_k cannot single out each of "
        "64 tokens."
    )
    words = section_of_theory("Why the training view uses squared error")
    accuracy = {
        d_k: [
            max(
                run.accuracy[-1]
                for run in training_sweep(
                    Settings(d_k=1, variance=1.0, scaling="sqrt", seed=seed), [d_k]
                )[d_k].values()
            )
            for seed in SEEDS
        ]
        for d_k in (1, 2, 4)
    }

    def holds(words: str) -> bool:
        if "no rule learns" in words:
            return False
        for d_k, best in accuracy.items():
            if f"{percent_range(best)} at" not in words or f"d_k = {d_k}" not in words:
                return False
        return True

    assert min(accuracy[4]) > 0.5  # a rank-4 score matrix goes far
    assert not holds(old)
    assert holds(words), words


# 4, 5: saturation and the Jacobian ------------------------------------------------------------


def test_4_the_ln_99_gap_is_said_to_be_necessary_and_the_curve_an_upper_bound():
    old = (
        "Dashed: the Gaussian model's share, computed exactly (rows saturate once their top "
        "logit beats the runner-up by ln 99)."
    )
    rows = softmax.softmax_rows(np.array([[0.0, -4.7, -4.7]]))  # gap 4.7 > ln 99 = 4.595
    assert rows.gap[0, 0] > math.log(99) and rows.max_weight[0] < 0.99  # 0.982: not saturated

    def holds(words: str) -> bool:
        return "upper bound" in words and "can be saturated only if" in words

    assert not holds(old)
    assert holds(caption("saturated", results_of(DEFAULTS)).text)
    assert "upper bound" in section_of_theory("Saturated rows")


def test_5_the_jacobians_norm_is_largest_at_a_two_way_tie():
    old = "## Softmax Jacobian: ‖J‖_F goes from √(n − 1)/n down to 0"
    rng = np.random.default_rng(5)
    logits = np.vstack([rng.normal(0, s, (2000, 8)) for s in (0.1, 1, 3, 10)])
    norms = np.exp(softmax.log_jacobian_norm(softmax.softmax_rows(logits)))
    tie = np.exp(softmax.log_jacobian_norm(softmax.softmax_rows(np.array([[0.0, 0.0, -800]]))))
    assert norms.max() < 0.5 and tie[0] == pytest.approx(0.5, rel=1e-12)
    unscaled = sweep(Settings(d_k=1, variance=1.0, scaling="none"), [1, 16])["none"]
    assert unscaled["jacobian_norm"][1] > 2 * unscaled["jacobian_norm"][0]  # rises first

    def holds(words: str) -> bool:
        return "down to 0" not in words and "1/2" in words and "tie" in words

    assert not holds(old)
    assert holds(caption("jacobian", results_of(DEFAULTS)).text)
    assert holds(section_of_theory("Softmax Jacobian"))


# 6: one learning rate --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "step", "d_k"), [("skip-scaling", 1, 64), ("always-necessary", 0, 16)]
)
def test_6_a_comparison_at_one_learning_rate_names_the_confound(slug, step, d_k):
    old = (
        "After 200 steps with η = 2, the unscaled model's loss is 0.000266 and the ÷ √d_k "
        "one's 0.0059."
    )
    results = results_of(DEFAULTS | question(slug).steps[step].scenario | {"d_k": d_k})
    runs = results.runs[d_k]
    assert runs["none"].loss[-1] < runs["sqrt"].loss[-1]  # the unscaled model ahead at one η

    def holds(words: str) -> bool:
        return "one η" in words and "learning rate" in words

    assert not holds(old)
    assert holds(question(slug).steps[step].answer(results))


# 7, 8: spreads and the collapse threshold ------------------------------------------------------


def test_7_the_flat_spread_is_shown_where_it_holds_not_at_d_k_1():
    old = (
        "so the logits' spread is v/T = 1 at every d_k ... Median row spread from d_k = 1 to "
        "1024: ÷ √d_k 0.648 to 1.01"
    )

    def holds(words: str) -> bool:
        return "d_k = 1 to 1024" not in words and "d_k = 16" in words and "|q|" in words

    assert not holds(old)
    assert holds(answer("purpose", 1))
    curve = sweep(Settings(d_k=1, variance=1.0, scaling="sqrt"), [1, 16, 1024])["sqrt"]
    assert curve["logit_std"][0] < 0.7 < 0.9 < curve["logit_std"][1]  # d_k = 1 is the outlier


def test_8_above_the_collapse_threshold_is_not_saturated():
    old = (
        "the unscaled logits spread 3.92 (collapse threshold √(2 ln n) = 2.88) and 0% of the "
        "rows are saturated"
    )
    results = results_of(DEFAULTS | {"d_k": 16, "scaling": "none"})
    spread = float(np.median(results.draw.logits.std(axis=-1)))
    assert spread > math.sqrt(2 * math.log(64)) and results.share < 0.05

    def holds(words: str) -> bool:
        return "saturates only once its top logit leads by ln 99" in words and "top key" in words

    assert not holds(old)
    assert holds(answer("always-necessary", 0))


# 9-12: μP, self-comparison, "length", the usual knob ---------------------------------------------


def test_9_mu_p_divides_by_d_k_times_a_tuned_constant():
    old = "μP (Yang et al. 2022) divides by d_k instead, √d_k = 16 times more than ÷ √d_k."

    def holds(words: str) -> bool:
        return "8/d_k" in words and "divides by d_k instead" not in words

    assert not holds(old)
    assert holds(answer("adjust", 1)) and holds(answer("why-square-root", 1))
    assert holds(text("page", "explainer", "text"))


@pytest.mark.parametrize("step", [0, 1])
def test_10_the_one_knob_answer_compares_the_rule_on_screen_with_another(step):
    old = (
        "At d_k = 16, rule none with T = 4 gives c/T = 0.25, the same as none with T = 4 and "
        "as ÷ √d_k with T = 1; computed the ÷ √d_k way, the weights differ from those on "
        "screen by at most 0."
    )
    rule = question("softmax-interaction").steps[step].scenario["scaling"]
    name = {"none": "none", "sqrt": "÷ √d_k"}[rule]

    def holds(words: str) -> bool:
        """The rule on screen is compared with the other of the two, not with itself."""
        other = {"none": "÷ √d_k", "sqrt": "rule none"}[rule]
        itself = (f"the same as {name} with", f"as {name} does with", f"as rule {name} does")
        return f"as {other} does with" in words and not any(x in words for x in itself)

    assert not holds(old.replace("none with T = 4 and", f"{name} with T = 4 and"))
    assert holds(answer("softmax-interaction", step))


def test_11_length_means_a_norm_and_dimension_means_d_k():
    old = "where d_k is the length of the query and key vectors"

    def holds(words: str) -> bool:
        return not re.search(r"length of (the|each) (query|queries)", words)

    assert not holds(old)
    assert holds(every_word())
    assert "dimension of the queries and keys" in answer("scaling-factor", 0)


def test_12_standard_models_keep_the_factor_fixed():
    old = "Yes. The usual knob is a temperature T (or a learned scale) on top of the scaling"

    def holds(words: str) -> bool:
        return "keep 1/√d_k fixed" in words and "T5" in words and "usual knob" not in words

    assert not holds(old)
    assert holds(answer("adjust", 0))


# 15, 16: the gradient's spread; what the square root promises -----------------------------------


def test_15_no_claim_that_most_rows_get_no_gradient():
    old = "it spreads over orders of magnitude across rows (some huge, most near zero)"
    results = results_of(DEFAULTS | {"d_k": 512, "scaling": "none"})
    grads = results.draw.query_grad_norm
    assert np.mean(grads < 0.01) < 0.5  # the 41% of rows below 0.01

    def holds(words: str) -> bool:
        return "most near zero" not in words and "most rows almost none" not in words

    assert not holds(old)
    assert holds(caption("query_grad", results).text)
    assert holds(text("page", "explainer", "text"))


def test_16_the_cancellation_is_said_to_promise_the_start_not_the_training():
    old = (
        "It still grows: α < 1/2 under-corrects. Only α = 1/2, the square root, cancels the "
        "√d_k exactly."
    )
    results = results_of(DEFAULTS | {"d_k": 512, "scaling": "sqrt"})
    runs = results.runs
    assert all(runs[d]["power"].loss[-1] < runs[d]["sqrt"].loss[-1] for d in (64, 256, 1024))

    def holds(words: str) -> bool:
        return "all the cancellation promises" in words and "not the best training" in words

    assert not holds(old)
    assert holds(answer("why-square-root", 0))
