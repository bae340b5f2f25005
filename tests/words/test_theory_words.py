"""The words of the theory page (docs/theory.md) against the page and its numbers.

Each test is one finding of the page's two readings (issue 19's careful reader, whose
sixteen defects quote the old words as ``old`` and show the check failing on them;
issue 39's outside review, each at the scenario it was found in), checking the new
words, computed where they depend on the numbers.
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from claims import results_of
from reading import (
    flat,
    said,
)

from app import softmax
from app.captions import caption
from app.options import DEFAULTS
from app.precision import EXP_LIMITS
from app.simulation import Settings, simulate
from app.sweep import sweep
from app.training import TrainingConfig, training_sweep
from app.words import glossary

THEORY = (Path(__file__).resolve().parents[2] / "docs" / "theory.md").read_text()
SEEDS = range(5)


def section_of_theory(heading: str) -> str:
    """The text of the docs/theory.md section under ``## heading`` (up to the next)."""
    start = THEORY.index(f"## {heading}")
    end = THEORY.find("\n## ", start + 1)
    return " ".join(THEORY[start : end if end > 0 else None].split())  # lines joined


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


def test_the_theory_says_how_many_rows_saturate_at_the_typical_d_k():
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


def test_the_theory_prints_exps_limits_to_their_digits():
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


def test_the_theory_counts_five_models_and_tabulates_each_rules_losses(default_runs):
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


def test_the_theory_says_how_far_each_rule_gets_at_small_d_k():
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


def test_the_ln_99_gap_is_said_to_be_necessary_and_the_curve_an_upper_bound():
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


def test_the_jacobians_norm_is_largest_at_a_two_way_tie():
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


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_sources_are_cited_as_they_wrote():
    additive = flat(said("additive", 1))
    assert "Citing Britz et al. (2017), Vaswani et al. note" in additive
    assert "they suspect" in additive and "one weakness" not in additive
    assert "Yang & Hu 2021" in glossary()["μP"]
    assert "Yang & Hu 2021" in (DOCS / "theory.md").read_text()


def test_the_theory_page_is_true_to_the_page():
    """docs/theory.md: v = 1e-3 is off the variance slider (0.1 to 4); "most get almost
    none"; and the logit growth in training that QK-norm answers."""
    doc = (DOCS / "theory.md").read_text()
    assert "v = 1e-3" not in doc and "most get almost none" not in doc
    assert "logit growth in training" in doc and "Dehghani et al. (2023)" in doc
    for seed in range(5):
        grads = simulate(Settings(d_k=512, variance=1.0, scaling="none", seed=seed))
        share = np.mean(grads.query_grad_norm < 0.01)
        assert 34 <= round(100 * share) <= 42  # "34-42% of the unscaled rows get under 0.01"
