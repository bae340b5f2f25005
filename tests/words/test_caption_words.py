"""The words of the views' captions, summaries, notes, formulas and glossary.

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
)

from app import theory
from app.captions import caption, summary
from app.formulas import FORMULAS
from app.options import DEFAULTS
from app.sections.figures import model_heads_source
from app.sections.spread import Spread
from app.simulation import Settings, simulate
from app.training import TrainingConfig, train
from app.words import content, glossary, text


def test_the_training_caption_claims_no_more_than_the_runs_at_this_scenario_show():
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


def test_no_claim_that_most_rows_get_no_gradient():
    old = "it spreads over orders of magnitude across rows (some huge, most near zero)"
    results = results_of(DEFAULTS | {"d_k": 512, "scaling": "none"})
    grads = results.draw.query_grad_norm
    assert np.mean(grads < 0.01) < 0.5  # the 41% of rows below 0.01

    def holds(words: str) -> bool:
        return "most near zero" not in words and "most rows almost none" not in words

    assert not holds(old)
    assert holds(caption("query_grad", results).text)
    assert holds(text("page", "explainer", "text"))


def test_the_qk_norm_summaries_give_its_own_theory():
    """v = 4, T = 4, d_k = 8: the summaries said "theory: spread = c √d_k v / T = 0.267",
    a formula that gives 1 there."""
    scenario = DEFAULTS | {"scaling": "qk_norm", "variance": 4.0, "temperature": 4.0, "d_k": 8}
    results = results_of(scenario, swept=False)
    d_k, t = 8, 4.0
    shown = (1 / math.sqrt(d_k)) * d_k / (math.sqrt(d_k - 1) * t)  # c d_k / (√(d_k − 1) T)
    assert shown == pytest.approx(0.267, abs=5e-4)
    for view in ("histogram", "spread"):
        words = flat(summary(view, results).text)
        assert f"spread = c d_k / (√(d_k − 1) T) = {shown:.3g}" in words, words
        assert "c √d_k v / T" not in words


@pytest.mark.parametrize("d_k", [1, 2, 4, 16, 1024])
def test_the_qk_norm_caption_says_its_spread_at_every_d_k(d_k):
    """ "About 1/T at every d_k" was false at d_k <= 4 (at 1 every logit is 0): the caption
    now gives √(d_k/(d_k − 1))/T, within 4% of 1/T from d_k = 16 on, which is the theory
    and what a draw shows."""
    temperature = 2.0
    settings = Settings(d_k=d_k, variance=1.0, scaling="qk_norm", temperature=temperature)
    words = flat(caption("histogram", results_of(_scenario(settings), swept=False)).text)
    assert "about 1/T at every d_k" not in words
    assert "√(d_k/(d_k − 1))/T" in words and "within 4% of 1/T from d_k = 16 on" in words
    logits = simulate(settings).logits
    if d_k == 1:
        assert "at d_k = 1 every logit is 0" in words and not logits.any()
        return
    expected = math.sqrt(d_k / (d_k - 1)) / temperature
    assert theory.logit_std("qk_norm", d_k, 1.0, temperature) == pytest.approx(expected, 1e-4)
    # 64 x 64 logits: the pooled std of that many is within a few percent of the theory
    assert logits.std() == pytest.approx(expected, rel=0.05)
    if d_k >= 16:
        assert abs(expected * temperature - 1) < 0.04


def test_the_histogram_note_says_every_logit_is_zero_where_it_is():
    """QK-norm at d_k = 1: the note said the unscaled scores were "1000000000000× wider"
    (a clamp of the scaled spread, 0)."""
    figures = Spread(model_heads_source())
    scenario = DEFAULTS | {"scaling": "qk_norm", "d_k": 1}
    figures.show(results_of(scenario, swept=False), figures.READS)
    note = figures._off_axis_note.text
    assert "every logit after the rule is 0" in note and "×" not in note, note


def test_the_query_gradient_formula_is_the_one_plotted_under_qk_norm():
    """The formula shown, ‖J (c/T) K‖_F, left out the layer norm's Jacobian P/sigma that the
    QK-norm curve includes. Computed here from the formula shown, row by row."""
    tex = FORMULAS["query_grad"]
    assert r"\hat K\,P/\sigma_q" in tex and r"\hat q\hat q^\top/d_k" in tex
    d_k, c = 8, 1 / math.sqrt(8)
    settings = Settings(d_k=d_k, variance=2.0, scaling="qk_norm", n_queries=16, n_keys=16)
    draw = simulate(settings)
    rng = np.random.default_rng(settings.seed)
    q, k = rng.standard_normal((16, d_k)), rng.standard_normal((16, d_k))
    q, k = q * math.sqrt(2.0), k * math.sqrt(2.0)  # the draw: N(0, v) components

    def normalised(x):
        centred = x - x.mean(axis=1, keepdims=True)
        sigma = np.sqrt(centred.var(axis=1, keepdims=True) + 1e-5)
        return centred / sigma, sigma

    q_hat, sigma = normalised(q)
    k_hat, _ = normalised(k)
    for i in range(16):
        z = c * k_hat @ q_hat[i]
        p = np.exp(z - z.max())
        p /= p.sum()
        jacobian = np.diag(p) - np.outer(p, p)
        projection = np.eye(d_k) - 1 / d_k - np.outer(q_hat[i], q_hat[i]) / d_k
        grad = jacobian @ (c * k_hat) @ projection / sigma[i]
        assert np.linalg.norm(grad) == pytest.approx(draw.query_grad_norm[i], rel=1e-9)


def test_the_saturation_bound_is_said_to_bound_the_expected_share():
    """n = 1024, d_k = 1024, none, seed 0: 69% of the draw's rows are saturated, over the
    Gaussian bound's 62%: it bounds the expected share, not one draw's."""
    settings = Settings(d_k=1024, variance=1.0, scaling="none", n_keys=1024, seed=0)
    share = float(np.mean(simulate(settings).max_weight > 0.99))
    bound = float(theory.saturated_share("none", 1024, 1.0, 1.0, 1024))
    assert share > bound
    scenario = DEFAULTS | {"scaling": "none", "d_k": 1024, "n_keys": 1024}
    words = flat(caption("saturated", results_of(scenario, swept=False)).text)
    assert "an upper bound on the expected share (one draw may exceed it)" in words


def test_a_row_std_is_named_as_such_and_follows_the_spread_below_it_at_few_keys():
    """ "Median row spread" named the median of each row's std, which at n = 2 is half the
    gap between the two logits, not the theory's spread: one word per quantity."""
    for name in ["views", "sections", "page", *[f"questions/{q.slug}" for q in _questions()]]:
        for parts in content(name).values():
            for template in parts.values():
                words = flat(template.source)
                assert not re.search(r"\brow spread\b|median spread", words), name
    assert "half the gap between the two logits" in glossary()["row std"]
    # n = 2: a row's std is |z_1 - z_2| / 2; its median over 4096 rows, against the spread
    # s: the median of |N(0, 2 s^2)| / 2 is 0.674 s / √2 = 0.477 s (± 2% at 4096 rows)
    settings = Settings(d_k=256, variance=1.0, scaling="sqrt", n_queries=1024, n_keys=2)
    row_std = np.median(simulate(settings).logits.std(axis=-1))
    assert row_std == pytest.approx(0.4769, rel=0.03)


def _questions():
    from app.questions import QUESTIONS

    return QUESTIONS


def _scenario(settings: Settings) -> dict:
    return DEFAULTS | {
        "d_k": settings.d_k,
        "variance": settings.variance,
        "scaling": settings.scaling,
        "temperature": settings.temperature,
        "n_keys": settings.n_keys,
    }


def test_the_learning_intro_says_what_is_shared_across_d_k():
    """ "From the same draw at every d_k": the tokens are; the weights are drawn anew."""
    words = flat(text("sections", "learning", "intro"))
    assert "the same tokens at every d_k (its weights drawn anew for each)" in words
    small, large = (
        train(Settings(d_k=d, variance=1.0, scaling="sqrt"), TrainingConfig(steps=1))["sqrt"]
        for d in (16, 32)
    )
    assert np.array_equal(small.x, large.x)
    assert not np.array_equal(small.w_q, large.w_q[:, :16])


def test_the_training_caption_says_when_cross_entropy_hides_the_collapse():
    words = flat(caption("training_loss", results_of(DEFAULTS, swept=False)).text)
    assert "vanishes when the softmax saturates on the right key but not on a wrong one" in words
    # -log p_y: its gradient in the logits is p - y, ~0 on the right key, ~2 on a wrong one
    for top, expected in ((0, 0.0), (1, math.sqrt(2))):
        z = np.zeros(4)
        z[top] = 30.0
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        assert np.linalg.norm(p - np.eye(4)[0]) == pytest.approx(expected, abs=1e-9)


def test_the_power_rule_at_alpha_zero_is_not_called_none():
    scenario = DEFAULTS | {"scaling": "power", "alpha": 0.0}
    results = results_of(scenario, swept=False)
    words = flat(caption("histogram", results).text)
    assert "Rule none" not in words and "This rule leaves them as they are (c = 1)" in words
    assert "with rule ÷ d_k^α (α = 0)" in flat(summary("histogram", results).text)


@pytest.mark.parametrize("term", ["copy head", "‖dp/dq‖_F", "row std"])
def test_every_term_is_explained_where_it_is_shown(term):
    """Undefined where shown: "copy head" (the training caption) and ‖dp/dq‖_F (the query
    gradient's caption and axis)."""
    assert term in glossary()
    results = results_of(DEFAULTS, swept=False)
    shown = " ".join(
        flat(caption(view, results).text) for view in ("training_loss", "query_grad", "spread")
    )
    assert term in shown


def test_the_explainer_promises_the_same_spread_not_the_same_softmax():
    """ "The same softmax at every d_k when training starts" is false at small d_k: the
    median largest weight under ÷ √d_k is 0.051 at d_k = 1 and 0.099 at 1024."""
    words = flat(" ".join(part.source for part in content("page")["explainer"].values()))
    assert "the same softmax at every d_k when training starts" not in words
    assert "the same spread at every d_k" in words
    weights = [
        np.median(simulate(Settings(d_k=d, variance=1.0, scaling="sqrt")).max_weight)
        for d in (1, 1024)
    ]
    assert weights[1] > 1.5 * weights[0]
