"""The words of the questions' answers.

Each test is one finding of the page's two readings (issue 19's careful reader, whose
sixteen defects quote the old words as ``old`` and show the check failing on them;
issue 39's outside review, each at the scenario it was found in), checking the new
words, computed where they depend on the numbers.
"""

import math
import re

import numpy as np
import pytest
from claims import results_of
from reading import (
    flat,
    said,
)

from app.options import DEFAULTS
from app.questions import question
from app.simulation import Settings
from app.sweep import sweep
from app.training import TrainingConfig, train
from app.words import content, text


def answer(slug: str, step: int, **moved) -> str:
    """Step ``step`` (from 0) of question ``slug`` at its scenario, sliders ``moved``."""
    s = question(slug).steps[step]
    return s.answer(results_of(DEFAULTS | s.scenario | moved))


def every_word() -> str:
    """Every content file, as written."""
    names = ["views", "sections", "page", "glossary", "notices"]
    names += [f"questions/{q}" for q in ("adjust", "components", "scaling-factor")]
    return "\n".join(t.source for n in names for p in content(n).values() for t in p.values())


@pytest.mark.parametrize(
    ("slug", "step", "d_k"), [("skip-scaling", 1, 64), ("always-necessary", 0, 16)]
)
def test_a_comparison_at_one_learning_rate_names_the_confound(slug, step, d_k):
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


def test_the_flat_spread_is_shown_where_it_holds_not_at_d_k_1():
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


def test_above_the_collapse_threshold_is_not_saturated():
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


def test_mu_p_divides_by_d_k_times_a_tuned_constant():
    old = "μP (Yang et al. 2022) divides by d_k instead, √d_k = 16 times more than ÷ √d_k."

    def holds(words: str) -> bool:
        return "8/d_k" in words and "divides by d_k instead" not in words

    assert not holds(old)
    assert holds(answer("adjust", 1)) and holds(answer("why-square-root", 1))
    assert holds(text("page", "explainer", "text"))


@pytest.mark.parametrize("step", [0, 1])
def test_the_one_knob_answer_compares_the_rule_on_screen_with_another(step):
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


def test_length_means_a_norm_and_dimension_means_d_k():
    old = "where d_k is the length of the query and key vectors"

    def holds(words: str) -> bool:
        return not re.search(r"length of (the|each) (query|queries)", words)

    assert not holds(old)
    assert holds(every_word())
    assert "dimension of the queries and keys" in answer("scaling-factor", 0)


def test_standard_models_keep_the_factor_fixed():
    old = "Yes. The usual knob is a temperature T (or a learned scale) on top of the scaling"

    def holds(words: str) -> bool:
        return "keep 1/√d_k fixed" in words and "T5" in words and "usual knob" not in words

    assert not holds(old)
    assert holds(answer("adjust", 0))


def test_the_cancellation_is_said_to_promise_the_start_not_the_training():
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


def test_the_mu_p_step_says_how_far_the_linear_run_gets():
    """v = 0.5, d_k = 16, η = 5: the ÷ d_k run goes from 0.493 to 0.0797, yet the answer
    said it "barely moves"."""
    words = flat(said("adjust", 2, variance=0.5, d_k=16, learning_rate=5.0))
    assert "barely moves" not in words
    assert re.search(r"÷ d_k \| [\d.]+ \| [\d.]+ \| 0\.493 → 0\.0797", words), words
    assert "learns, but slowly: it ends at 16% of its starting loss" in words


@pytest.mark.parametrize("slug", ["skip-scaling", "model-quality"])
def test_with_two_keys_no_answer_says_the_unscaled_model_stops_learning(slug):
    """n = 2: the unscaled model reaches 1e-20 at d_k = 1024, yet the answers said no η
    trains it there. The collapse they cite was found at 64 tokens only."""
    step = 2 if slug == "skip-scaling" else 1
    words = flat(said(slug, step, n_keys=2))
    assert "no η rescues it" not in words and "stop learning" not in words, words
    assert "no η trains it" not in words


def test_a_tie_is_not_a_token_that_finds_itself():
    """QK-norm at d_k = 1: every logit is 0, every row uniform; a tie-break counted the
    first token of each row as found."""
    runs = train(Settings(d_k=1, variance=1.0, scaling="qk_norm"), TrainingConfig(steps=5))
    assert np.all(runs["qk_norm"].accuracy == 0)


def test_the_gradient_spread_says_over_which_rows():
    words = flat(said("unstable-gradients", 1))
    assert "all its rows' gradients span" in words
    assert "orders of magnitude (10th to 90th percentile)" in words
