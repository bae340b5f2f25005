"""The simulation against theory (docs/theory.md) and against independent computations."""

import math
from dataclasses import replace

import mpmath
import numpy as np
import pytest
from reference import finite_difference_grad_norm, float_weights, mp_row_metrics

from app import softmax, theory
from app.simulation import (
    BOUNDS,
    SCALING_RULES,
    SWEEP_METRICS,
    Settings,
    row_metrics,
    simulate,
)
from app.sweep import sweep

RAISE = {"over": "raise", "divide": "raise", "invalid": "raise"}  # underflow to 0 is exact
POWERS = [2**i for i in range(11)]


def small_draw(scaling, d_k, variance, temperature, n_queries, n_keys, seed):
    """A few queries and keys, small enough for reference computations row by row."""
    return simulate(
        Settings(
            d_k=d_k,
            variance=variance,
            scaling=scaling,
            n_queries=n_queries,
            n_keys=n_keys,
            temperature=temperature,
            seed=seed,
        )
    )


# --- The logit spread: s = c sqrt(d_k) v / T ------------------------------------------------


def mean_square_logits(seeds: int, **settings) -> list[float]:
    """The mean of z^2 over the 32 x 32 logits of each of ``seeds`` independent draws."""
    return [
        np.mean(simulate(Settings(n_queries=32, n_keys=32, seed=seed, **settings)).logits ** 2)
        for seed in range(seeds)
    ]


@pytest.mark.parametrize("scaling", SCALING_RULES)
@pytest.mark.parametrize(("variance", "temperature"), [(1.0, 1.0), (2.5, 0.5)])
def test_logit_variance_matches_f1_within_monte_carlo_error(scaling, variance, temperature):
    """Pooled mean of z^2 over 24 seeds against s^2 from the theory, for every d_k.

    The logits of one draw share queries and keys, so their squares are
    correlated: the standard error is estimated from the spread of the
    per-seed means (independent draws), not from the pooled count. Failing
    beyond 5 standard errors has probability below 1e-5 per check under the
    t-distribution with 23 degrees of freedom, so a failure means the theory or the
    model is wrong, not bad luck.
    """
    for d_k in [1, 2, 3, 8, 64, 512, 2048]:
        per_seed = mean_square_logits(
            24, d_k=d_k, variance=variance, scaling=scaling, temperature=temperature
        )
        expected = theory.logit_std(scaling, d_k, variance, temperature) ** 2
        if expected == 0:  # qk_norm at d_k = 1: a normalised scalar is exactly 0
            assert max(per_seed) == 0
            continue
        mean, standard_error = np.mean(per_seed), np.std(per_seed, ddof=1) / math.sqrt(24)
        assert abs(mean - expected) < 5 * standard_error, (d_k, mean, expected, standard_error)


def test_f1_spread_grows_as_sqrt_dk_only_without_scaling():
    spreads = {rule: theory.logit_std(rule, [16, 1024], 1.0) for rule in SCALING_RULES}
    assert spreads["none"][1] / spreads["none"][0] == pytest.approx(8.0)
    assert spreads["sqrt"][1] / spreads["sqrt"][0] == pytest.approx(1.0)
    assert spreads["linear"][1] / spreads["linear"][0] == pytest.approx(1 / 8)
    assert spreads["qk_norm"][1] / spreads["qk_norm"][0] == pytest.approx(1.0, rel=0.05)
    assert spreads["power"][1] / spreads["power"][0] == pytest.approx(64 ** (1 / 2 - 1 / 3))


@pytest.mark.parametrize(("alpha", "rule"), [(0.0, "none"), (0.5, "sqrt"), (1.0, "linear")])
def test_the_power_rule_at_0_one_half_and_1_is_none_sqrt_and_linear(alpha, rule):
    for d_k in (1, 7, 64, 1024):
        power = simulate(Settings(d_k=d_k, variance=1.3, scaling="power", alpha=alpha, seed=5))
        named = simulate(Settings(d_k=d_k, variance=1.3, scaling=rule, seed=5))
        for field in ("logits", "weights", "jacobian_norm", "query_grad_norm"):
            np.testing.assert_allclose(getattr(power, field), getattr(named, field), rtol=1e-12)
        spread = theory.logit_std("power", d_k, 1.3, alpha=alpha)
        assert spread == pytest.approx(theory.logit_std(rule, d_k, 1.3), rel=1e-12)


@pytest.mark.parametrize("alpha", [0.25, 1 / 3, 0.75, 1.5])
def test_the_power_rules_spread_scales_as_d_k_to_one_half_minus_alpha(alpha):
    """d_k^(1/2 - alpha) * v / T, exactly in the theory and in expectation in the draw.

    The squared logits of 16 seeds at d_k = 256 (32 x 32 each): their pooled mean
    estimates s^2 with a standard error taken from the per-seed means, and 5
    standard errors bound a chance failure below 1e-4 (t with 15 degrees of freedom).
    """
    d_k, variance, temperature = 256, 0.7, 1.3
    spread = theory.logit_std("power", d_k, variance, temperature, alpha=alpha)
    assert spread == pytest.approx(d_k ** (0.5 - alpha) * variance / temperature, rel=1e-12)
    per_seed = mean_square_logits(
        16, d_k=d_k, variance=variance, scaling="power", alpha=alpha, temperature=temperature
    )
    standard_error = np.std(per_seed, ddof=1) / 4
    assert abs(np.mean(per_seed) - spread**2) < 5 * standard_error


# --- Against an independent computation ----------------------------------------------------

MODERATE = [(6, 1.0, 1.0), (3, 0.5, 1.0), (32, 1.0, 0.7), (2, 1.0, 0.7)]


@pytest.mark.parametrize("scaling", SCALING_RULES)
@pytest.mark.parametrize(("d_k", "variance", "temperature"), MODERATE)
def test_metrics_match_first_principles(scaling, d_k, variance, temperature):
    """Weights, maxima, entropies and ||J||_F from their plain float64 definitions.

    No Monte Carlo here: both sides compute the same quantity, so the
    tolerance is float64 rounding amplified by at most the logits' size.
    """
    draw = small_draw(scaling, d_k, variance, temperature, 5, 7, seed=11)
    for i in range(5):
        p = float_weights(draw.q[i], draw.k, scaling, temperature)
        jacobian = np.diag(p) - np.outer(p, p)
        f7 = (
            np.sum(p**2) - 2 * np.sum(p**3) + np.sum(p**2) ** 2
        )  # docs/theory.md: the Jacobian's norm
        np.testing.assert_allclose(draw.weights[i], p, rtol=1e-12, atol=1e-15)
        assert draw.max_weight[i] == pytest.approx(p.max(), rel=1e-12)
        assert draw.entropy[i] == pytest.approx(-np.sum(p * np.log(p)), rel=1e-10)
        assert draw.jacobian_norm[i] == pytest.approx(np.linalg.norm(jacobian), rel=1e-10)
        assert draw.jacobian_norm[i] ** 2 == pytest.approx(f7, rel=1e-9)


@pytest.mark.parametrize("scaling", SCALING_RULES)
@pytest.mark.parametrize(("d_k", "variance", "temperature"), MODERATE[:3])
def test_query_gradient_matches_finite_differences(scaling, d_k, variance, temperature):
    """||dp/dq||_F against central differences with step 1e-5.

    The truncation error is O(h^2) ~ 1e-10 and the rounding error
    O(1e-16 / h) ~ 1e-11 relative, so 1e-6 leaves a wide margin. (At d_k = 2
    under qk_norm the gradient is ~1e-5 of the weights' scale and differences
    lose that much; the mpmath test below covers it.)
    """
    draw = small_draw(scaling, d_k, variance, temperature, 4, 6, seed=5)
    for i in range(4):
        expected = finite_difference_grad_norm(draw.q[i], draw.k, scaling, temperature)
        assert draw.query_grad_norm[i] == pytest.approx(expected, rel=1e-6)


DEEP = [  # (d_k, variance, temperature): from moderate to 1 - max weight far below 1e-16
    (6, 1.0, 1.0),
    (2, 1.0, 0.7),
    (64, 3.0, 0.05),
    (16, 10.0, 0.1),
]


@pytest.mark.parametrize("scaling", SCALING_RULES)
@pytest.mark.parametrize(("d_k", "variance", "temperature"), DEEP)
def test_norms_keep_relative_accuracy_in_deep_saturation(scaling, d_k, variance, temperature):
    """||J||_F, ||dp/dq||_F and H against mpmath at 700 digits, to 1e-6 relative.

    700 digits resolve 1 - max weight down to 1e-650; the test checks that
    the draws reach beyond float64's epsilon, where the norm formula in
    float64 returns noise.
    """
    draw = small_draw(scaling, d_k, variance, temperature, 4, 6, seed=3)
    deepest = mpmath.mpf(1)
    for i in range(4):
        ref = mp_row_metrics(draw.q[i], draw.k, scaling, temperature, dps=700)
        assert ref["one_minus_max"] > mpmath.mpf("1e-600")  # within the reference's reach
        deepest = min(deepest, ref["one_minus_max"])
        for name in ("jacobian_norm", "query_grad_norm", "entropy"):
            assert getattr(draw, name)[i] == pytest.approx(float(ref[name]), rel=1e-6), name
    if scaling in {"none", "sqrt"} and d_k >= 16:
        assert deepest < 1e-20  # these cases really test the saturated regime


def test_jacobian_norm_edge_values_f7():
    """Uniform rows give sqrt(n - 1) / n; one-hot rows give 0."""
    n = 64
    uniform = softmax.softmax_rows(np.zeros((3, n)))
    assert np.exp(softmax.log_jacobian_norm(uniform)) == pytest.approx(
        theory.uniform_jacobian_norm(n), rel=1e-14
    )
    assert theory.uniform_jacobian_norm(n) ** 2 == pytest.approx((n - 1) / n**2)
    one_hot = softmax.softmax_rows(np.array([[0.0] + [-1e4] * (n - 1)]))
    assert np.exp(softmax.log_jacobian_norm(one_hot))[0] == theory.ONE_HOT_JACOBIAN_NORM
    assert one_hot.max_weight[0] == 1.0


def test_qk_norm_at_dimension_one_is_uniform_and_has_no_gradient():
    """A layer-normalised scalar is 0: logits vanish, weights are uniform."""
    draw = simulate(Settings(d_k=1, variance=1.0, scaling="qk_norm", n_keys=16))
    np.testing.assert_array_equal(draw.logits, 0.0)
    np.testing.assert_allclose(draw.jacobian_norm, theory.uniform_jacobian_norm(16), rtol=1e-14)
    np.testing.assert_array_equal(draw.query_grad_norm, 0.0)


def test_a_single_key_gets_all_the_weight():
    draw = simulate(Settings(d_k=8, variance=1.0, scaling="none", n_keys=1))
    np.testing.assert_array_equal(draw.weights, 1.0)
    np.testing.assert_array_equal(draw.jacobian_norm, 0.0)
    np.testing.assert_array_equal(draw.entropy, 0.0)


def test_collapse_threshold_f5():
    assert theory.collapse_threshold(64) == pytest.approx(math.sqrt(2 * math.log(64)))


# --- The sweep --------------------------------------------------------------------------


def test_sweep_summarises_exactly_what_simulate_computes():
    settings = Settings(d_k=1, variance=1.3, scaling="sqrt", n_queries=40, n_keys=30, seed=4)
    d_ks = [1, 7, 128]
    curves = sweep(settings, d_ks)
    assert set(curves) == set(SCALING_RULES)
    for rule, columns in curves.items():
        np.testing.assert_array_equal(columns["d_k"], d_ks)
        for j, d_k in enumerate(d_ks):
            draw = simulate(replace(settings, d_k=d_k, scaling=rule))
            for name, values in row_metrics(draw).items():
                p10, lo, mid, hi, p90 = np.quantile(values, [0.1, 0.25, 0.5, 0.75, 0.9])
                assert columns[name][j] == mid
                assert columns[name + "_lo"][j] == lo <= mid <= hi == columns[name + "_hi"][j]
                assert columns[name + "_p10"][j] == p10 <= lo
                assert columns[name + "_p90"][j] == p90 >= hi
            assert columns["saturated_share"][j] == np.mean(draw.max_weight > 0.99)


def test_a_sweep_factors_each_softmax_once(monkeypatch):
    """The saturation group and the gradient group read the same rows: each d_k's
    softmax is factored once per family of rules (those without layer norm, and
    qk_norm), not once per group (a learner who opens Saturation, then Gradients,
    reads both of the same sweep)."""
    calls = []
    factor = softmax.softmax_rows
    monkeypatch.setattr(softmax, "softmax_rows", lambda z: calls.append(z.shape) or factor(z))
    d_ks = [1, 7, 128]
    curves = sweep(Settings(d_k=1, variance=1.7, scaling="sqrt", seed=5), d_ks)
    curves["sqrt"]["max_weight"], curves["none"]["query_grad_norm"]
    assert len(calls) == 2 * len(d_ks)
    curves["qk_norm"]["logit_std"]  # the last group: the rows are let go
    assert curves._rows == {}


def test_sweep_tells_the_story():
    """Unscaled attention saturates and loses its gradient as d_k grows; sqrt does not."""
    curves = sweep(Settings(d_k=1, variance=1.0, scaling="sqrt"), POWERS)
    none, sqrt = curves["none"], curves["sqrt"]
    assert none["saturated_share"][-1] > 0.5 > sqrt["saturated_share"].max()
    assert none["jacobian_norm"][-1] < 0.05 * sqrt["jacobian_norm"][-1]
    assert np.all(np.diff(theory.logit_std("none", POWERS, 1.0)) > 0)
    for rule in SCALING_RULES:
        for name in SWEEP_METRICS:
            assert np.all(np.isfinite(curves[rule][name]))


@pytest.mark.parametrize("seed", range(5))
def test_the_query_gradient_grows_then_collapses_and_spreads_without_scaling(seed):
    """What the gradient view's caption says, at the page's default variance, n and T.

    ``dp/dq = J (c/T) K``: unscaled, ``||K||`` grows as sqrt(d_k) while J
    collapses, so the median query gradient first rises far above the sqrt
    rule's (about 9x at d_k = 64), then falls far below its peak, while its
    10th-90th percentile range over rows widens to many orders of magnitude.
    The margins (3x, 10x, 1e6) are a fraction of what every seed shows.
    """
    curves = sweep(Settings(d_k=1, variance=1.0, scaling="sqrt", seed=seed), POWERS)
    none, sqrt = curves["none"], curves["sqrt"]
    at = {d_k: i for i, d_k in enumerate(POWERS)}
    grad = none["query_grad_norm"]
    assert grad[at[64]] > 3 * sqrt["query_grad_norm"][at[64]]  # grows
    assert grad[at[1024]] < grad.max() / 10  # then collapses
    assert np.argmax(grad) not in (0, len(POWERS) - 1)
    spread = none["query_grad_norm_p90"] / none["query_grad_norm_p10"]
    assert spread[at[1]] < 100 and spread[at[1024]] > 1e6  # rows from huge to almost none
    jacobian = none["jacobian_norm"]
    assert jacobian[at[1024]] < jacobian[at[64]] / 10  # the Jacobian collapses
    sqrt_grad = sqrt["query_grad_norm"]
    assert sqrt_grad.max() / sqrt_grad.min() < 2  # with scaling, the same at every d_k


# --- Validation, extremes, determinism -------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("d_k", 0),
        ("d_k", 4097),
        ("d_k", 1.5),
        ("d_k", True),
        ("d_k", "64"),
        ("d_k", None),
        ("variance", 0.0),
        ("variance", -1.0),
        ("variance", math.nan),
        ("variance", math.inf),
        ("variance", 1e4),
        ("variance", "1"),
        ("variance", False),
        ("n_queries", 0),
        ("n_queries", 1025),
        ("n_keys", 0),
        ("n_keys", 2000),
        ("n_keys", 3.0),
        ("temperature", 0.0),
        ("temperature", 1e-3),
        ("temperature", 1e3),
        ("temperature", math.nan),
        ("seed", -1),
        ("seed", 2**32),
        ("seed", 0.5),
        ("alpha", -0.1),
        ("alpha", 1.6),
        ("alpha", math.nan),
        ("scaling", "cube"),
        ("scaling", None),
        ("scaling", "SQRT"),
    ],
)
def test_invalid_settings_name_the_field_and_the_allowed_range(field, value):
    fields = {"d_k": 64, "variance": 1.0, "scaling": "sqrt", field: value}
    with pytest.raises(ValueError, match=field) as error:
        Settings(**fields)
    message = str(error.value)
    assert repr(value) in message
    if field in BOUNDS:
        low, high = BOUNDS[field]
        assert f"from {low:g} to {high:g}" in message
    else:
        assert "none, sqrt, linear, qk_norm" in message


def test_valid_settings_are_normalised_to_python_types():
    s = Settings(d_k=np.int64(8), variance=2, scaling="linear", seed=np.uint32(3))
    assert (type(s.d_k), type(s.variance), type(s.seed)) == (int, float, int)


EXTREMES = [
    dict(d_k=4096, variance=1e3, temperature=1e-2, n_queries=8, n_keys=1024),
    dict(d_k=4096, variance=1e-3, temperature=1e2, n_queries=8, n_keys=2),
    dict(d_k=1, variance=1e3, temperature=1e-2, n_queries=1024, n_keys=1024),
    dict(d_k=1, variance=1e-3, temperature=1e2, n_queries=1, n_keys=1),
    dict(d_k=2, variance=1e3, temperature=1e-2, n_queries=16, n_keys=16),
]


@pytest.mark.parametrize("scaling", SCALING_RULES)
@pytest.mark.parametrize("extreme", EXTREMES)
def test_extreme_settings_stay_finite_and_normalised(scaling, extreme):
    with np.errstate(**RAISE):
        draw = simulate(Settings(scaling=scaling, **extreme))
    for name in ("logits", "weights", "max_weight", "entropy", "jacobian_norm", "query_grad_norm"):
        values = getattr(draw, name)
        assert np.all(np.isfinite(values)), name
        assert np.all(values >= 0) or name == "logits", name
    np.testing.assert_allclose(draw.weights.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(draw.max_weight <= 1.0)


def test_sweep_at_the_extremes_stays_finite():
    with np.errstate(**RAISE):
        curves = sweep(
            Settings(
                d_k=1, variance=1e3, scaling="none", temperature=1e-2, n_queries=4, n_keys=256
            ),
            [1, 2, 4096],
        )
    for columns in curves.values():
        for values in columns.values():
            assert np.all(np.isfinite(values))


def test_a_seed_determines_the_draw():
    settings = Settings(d_k=32, variance=1.0, scaling="qk_norm", seed=7)
    a, b = simulate(settings), simulate(settings)
    for name in ("q", "k", "logits", "weights", "query_grad_norm"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    other = simulate(replace(settings, seed=8))
    assert not np.array_equal(a.q, other.q)
