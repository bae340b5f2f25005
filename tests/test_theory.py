"""The saturated-share curve against mpmath, against the simulation, and at its edges.

``theory.saturated_share`` is an upper bound U on the expected share of rows
whose largest weight exceeds 0.99: a row needs its top logit to beat the
runner-up by ln 99. Here it is checked three ways: against mpmath (the same
integral, computed independently), against the simulation (which must lie
below U, and above a lower bound L derived below, within Monte Carlo error),
and at the edges of its domain.

The lower bound L, for n i.i.d. N(0, s^2) logits in units of s: given the
runner-up at y, the top logit and the n - 2 others are independent (top:
N(0, 1) above y; others: below y). The row is saturated when
``e^-gap (1 + W) < 1/99``, gap = s (top - y), ``W = sum_others e^{s (x_j - y)}``,
so ``P(sat | y) = E_W[Q(y + ln(99 (1 + W)) / s)] / Q(y)``, Q = 1 - Phi. That
is convex in W where ``y >= -s``, so by Jensen it is at least its value at
``E[W | y] = (n - 2) phi(y) M(s - y) / Phi(y)`` (M the Mills ratio), and
``U`` is its value at W = 0. Integrating over the runner-up's density
``n (n - 1) phi(y) Phi(y)^(n-2) Q(y)`` gives L <= P(saturated) <= U.
"""

import math
from dataclasses import replace
from functools import cache, lru_cache

import mpmath
import numpy as np
import pytest

from app import simulation, softmax, theory
from app.simulation import SCALING_RULES, Settings, simulate

RAISE = {"over": "raise", "divide": "raise", "invalid": "raise"}  # underflow to 0 is exact
POWERS = [2**i for i in range(11)]
LN99 = math.log(99)

# The documented accuracy of saturated_share: cubic interpolation of its table
# (1.25e-7 measured) dominates; the erfc nodes (2e-14 relative), the quadrature
# over the maximum (1e-12) and the chi average (1e-9) add far less.
ACCURACY = 2e-7


# --- Against an independent computation ---------------------------------------------


def mp_gap_exceedance(n, s):
    """``n Int phi(x) Phi(x - a)^(n-1) dx``, a = ln 99 / s, by mpmath quadrature."""
    with mpmath.workdps(20):
        a = mpmath.log(99) / s
        cuts = sorted({-6, -2, 0, 2, 4, 6} | {float(a), float(a) + 3, float(a) + 6})
        integrand = lambda x: mpmath.npdf(x) * mpmath.ncdf(x - a) ** (n - 1)  # noqa: E731
        return float(n * mpmath.quad(integrand, [-mpmath.inf, *cuts, mpmath.inf]))


@pytest.mark.parametrize("n", [2, 3, 64, 1024])
def test_gap_exceedance_matches_mpmath(n):
    """Fixed spread, from 1e-10 to 1e-35 (s = 0.5) up to deep saturation, to ACCURACY."""
    spreads = [0.5, 1.5, 4.0, 15.0, 100.0, 1e5]
    got = theory.top_gap_exceedance(spreads, n)
    for s, value in zip(spreads, got, strict=True):
        assert abs(value - mp_gap_exceedance(n, s)) <= ACCURACY, (n, s)


def test_log_normal_cdf_nodes_match_mpmath():
    """``math.erfc`` gives log Phi at the quadrature nodes to 2e-14 relative."""
    with mpmath.workdps(30):
        for y, value in zip(theory._Y.tolist(), theory._LOG_NCDF_Y.tolist(), strict=True):
            # log1p(-Q) keeps the digits of Phi(y) near 1
            exact = mpmath.log(mpmath.ncdf(y)) if y < 0 else mpmath.log1p(-mpmath.ncdf(-y))
            assert abs(value - exact) <= 2e-14 * abs(exact), y


def test_two_keys_gap_is_a_difference_of_normals():
    """For n = 2 the gap is |x1 - x2| ~ |N(0, 2)|, so G = erfc(a / 2) exactly."""
    spreads = np.geomspace(0.2, 1e6, 400)
    exact = [math.erfc(LN99 / s / 2) for s in spreads]
    np.testing.assert_allclose(theory.top_gap_exceedance(spreads, 2), exact, rtol=0, atol=ACCURACY)


CHI_POINTS = [  # (rule, d_k, variance, temperature): from a broad chi_1 to a narrow chi_1024
    ("none", 1, 1.0, 1.0),
    ("none", 3, 1.0, 0.3),
    ("sqrt", 2, 1.0, 0.3),
    ("linear", 5, 4.0, 0.1),
    ("none", 64, 1.0, 1.0),
    ("sqrt", 1024, 1.0, 0.3),
    ("linear", 1024, 4.0, 0.1),
]


@pytest.mark.parametrize(("scaling", "d_k", "variance", "temperature"), CHI_POINTS)
def test_average_over_queries_matches_mpmath(scaling, d_k, variance, temperature):
    """The average over ``||q||^2 / v ~ chi^2_d`` against mpmath, for two keys.

    With n = 2 the inner integral is ``erfc(a / 2)`` in closed form, so mpmath
    integrates over ``t = chi^2 / 2 ~ Gamma(d/2)`` alone. The chi average is
    the same code for every n, and G is checked for every n above, so this
    covers the composition; tolerance ACCURACY (table) plus 1e-9 (chi nodes).
    """
    s = float(theory.logit_std(scaling, d_k, variance, temperature))
    with mpmath.workdps(20):
        k = mpmath.mpf(d_k) / 2

        def integrand(t):  # Gamma(k) density times G at row spread s sqrt(2t / d)
            a = mpmath.log(99) / (s * mpmath.sqrt(2 * t / d_k))
            return mpmath.exp((k - 1) * mpmath.log(t) - t - mpmath.loggamma(k)) * mpmath.erfc(a / 2)

        cuts = [k * f for f in (1e-4, 1e-2, 0.3, 1, 3)]
        exact = float(mpmath.quad(integrand, [0, *cuts, mpmath.inf]))
    got = float(theory.saturated_share(scaling, d_k, variance, temperature, n_keys=2))
    assert abs(got - exact) <= ACCURACY + 1e-9


# A float64 reference, sharing no code with app.theory: the same probability written
# by the runner-up instead of the top (see the module docstring), and the lower bound.

Y_STEP = 0.05
Y = np.arange(-240, 241) * Y_STEP  # the runner-up y, in units of s
SPREADS = np.geomspace(0.1, 1e5, 468)  # ratio 1.03
_erfc = np.frompyfunc(math.erfc, 1, 1)


def upper_tail(x):
    """Q(x) = 1 - Phi(x), without cancellation."""
    return _erfc(np.asarray(x) / math.sqrt(2)).astype(float) / 2


def mills_ratio(x):
    """``M(x) = Q(x) / phi(x)``; the asymptotic series beyond 25 (error < 1e-9)."""
    x = np.asarray(x, dtype=float)
    near = np.minimum(x, 25.0)
    far = np.maximum(x, 25.0)
    series = (1 - 1 / far**2 + 3 / far**4 - 15 / far**6) / far
    return np.where(x < 25, upper_tail(near) * math.sqrt(2 * math.pi) * np.exp(near**2 / 2), series)


@lru_cache(maxsize=8)
def fixed_spread_bounds(n):
    """``(L, U)`` at every spread of ``SPREADS`` for n i.i.d. Gaussian logits.

    Trapezoid over the runner-up y (step 0.05 on [-12, 12]). Halving the step
    moves U by 2e-15 and L by 4e-5 (from the cut at y = -s, for n = 3).
    """
    phi = np.exp(-(Y**2) / 2) / math.sqrt(2 * math.pi)
    below = upper_tail(-Y)  # Phi(y)
    runner_up = Y_STEP * n * (n - 1) * phi * below ** (n - 2)  # density / Q(y)
    s = SPREADS[:, None]
    upper = np.sum(runner_up * upper_tail(Y + LN99 / s), axis=1)
    mean_w = (n - 2) * phi * mills_ratio(s - Y) / below
    convex = (Y >= -s) | (n == 2)  # with two keys W = 0: no Jensen step, L = U
    lower = np.sum(runner_up * convex * upper_tail(Y + np.log(99 * (1 + mean_w)) / s), axis=1)
    return lower, upper


@pytest.mark.parametrize("n", [3, 8, 64, 200, 1024])
def test_float_reference_matches_gap_exceedance(n):
    """The runner-up form of U against the product's top form; and the slack U - L.

    The slack bounds stated in ``saturated_share``'s docstring: U - L is at
    most 0.04 (near U = 0.17) and below 0.001 where U >= 0.9.
    """
    lower, upper = fixed_spread_bounds(n)
    np.testing.assert_allclose(
        theory.top_gap_exceedance(SPREADS, n), upper, rtol=0, atol=ACCURACY + 1e-9
    )
    assert np.all(lower <= upper + 1e-12)
    assert np.max(upper - lower) < 0.04
    assert np.max((upper - lower)[upper >= 0.9]) < 0.001


def row_average(values, spread, d_k):
    """E over queries of ``values`` (a function of the row spread, on ``SPREADS``).

    Row spread ``spread * r``, ``r^2 = chi^2_d / d``; z = log(r^2) has density
    ``k^k / Gamma(k) exp(k (z - e^z))``, k = d/2, integrated by the trapezoid
    rule with step 0.01 over a range holding all but e^-40 of it. ``values``
    are interpolated linearly in log spread (ratio 1.03: error below
    ``0.03^2 / 8`` times the second derivative, under 4e-5); 0 below the grid
    (valid for a lower bound), the last value above it (valid too: the
    saturated share grows with the spread).
    """
    k = d_k / 2
    z = np.arange(-(1 + 40 / k + math.sqrt(80 / k)), math.sqrt(80 / k) + math.log1p(80 / k), 0.01)
    w = 0.01 * np.exp(k * math.log(k) - math.lgamma(k) + k * (z - np.exp(z)))
    assert abs(w.sum() - 1) < 1e-9  # the range holds the mass
    log_row_spread = math.log(spread) + z / 2
    return np.sum(w * np.interp(log_row_spread, np.log(SPREADS), values, left=0.0))


def lower_bound(scaling, d_k, variance, temperature, n):
    """L averaged over the queries (fixed spread under qk_norm)."""
    if n == 1:
        return 1.0
    s = float(theory.logit_std(scaling, d_k, variance, temperature))
    if s == 0:
        return 0.0
    lower = fixed_spread_bounds(n)[0]
    if scaling == "qk_norm":
        return float(np.interp(math.log(s), np.log(SPREADS), lower, left=0.0))
    return row_average(lower, s, d_k)


# --- Against the simulation ------------------------------------------------------------

SEEDS = 24
K = 5  # standard errors; P(t_23 > 5) = 2.4e-5, about 5e-3 over the ~200 checks below
REFERENCE_ERROR = 1e-4  # of lower_bound: the cut at y = -s (4e-5), interpolation (4e-5)
QK_NORM_MODEL = 0.05  # max error of the Gaussian law under qk_norm at d_k >= its floor

SCENARIOS = {  # name: (n_keys, variance, temperature, n_queries, rules)
    "defaults": (64, 1.0, 1.0, 64, SCALING_RULES),
    "many keys, cold": (1024, 1.0, 0.1, 32, ("none",)),
    "wide, cold": (16, 4.0, 0.1, 64, SCALING_RULES),
}


def max_weights(settings, rules):
    """``{rule: simulate(replace(settings, scaling=rule)).max_weight}``, 10x cheaper.

    The steps of ``simulate`` without its gradient metrics, and with one draw
    and one product per family of rules (as ``sweep`` shares them): ``draw``,
    the layer norm under qk_norm, logits ``(c / T) (q_hat . k_hat)``,
    ``softmax_rows``. The test below holds the two equal to rounding: simulate
    forms the products from the standard draw, in another order, so a logit
    differs by a few of its ulps (|z| reaches about 100 in those draws), and
    a weight as much relative: 1e-11 leaves a margin of 10 or more.
    """
    q, k = simulation.queries_and_keys(settings)
    dots = {"raw": q @ k.T}
    if "qk_norm" in rules:
        dots["qk_norm"] = simulation.layer_norm(q)[0] @ simulation.layer_norm(k)[0].T
    weights = {}
    for rule in rules:
        if settings.n_keys == 1:
            weights[rule] = np.ones(settings.n_queries)
            continue
        rule_settings = replace(settings, scaling=rule)
        logits = (rule_settings.scale / settings.temperature) * dots.get(rule, dots["raw"])
        weights[rule] = softmax.softmax_rows(logits).max_weight
    return weights


def test_max_weights_are_those_of_simulate():
    for d_k, n_keys, temperature in [(1, 16, 0.1), (7, 64, 1.0), (256, 1024, 0.1), (3, 1, 1.0)]:
        settings = Settings(
            d_k=d_k,
            variance=2.0,
            scaling="none",
            n_queries=8,
            n_keys=n_keys,
            temperature=temperature,
            seed=d_k,
        )
        for rule, weights in max_weights(settings, SCALING_RULES).items():
            expected = simulate(replace(settings, scaling=rule)).max_weight
            np.testing.assert_allclose(weights, expected, rtol=1e-11)


@cache
def measured(name):
    """Per-seed saturated share, ``{rule: array (SEEDS, len(POWERS))}``."""
    n_keys, variance, temperature, n_queries, rules = SCENARIOS[name]
    shares = np.zeros((len(rules), SEEDS, len(POWERS)))
    for seed in range(SEEDS):
        for j, d_k in enumerate(POWERS):
            settings = Settings(
                d_k=d_k,
                variance=variance,
                scaling="none",
                n_queries=n_queries,
                n_keys=n_keys,
                temperature=temperature,
                seed=seed,
            )
            for i, weights in enumerate(max_weights(settings, rules).values()):
                shares[i, seed, j] = simulation.saturated_share(weights)
    return dict(zip(rules, shares, strict=True))


def comparisons(name):
    """Per rule and d_k: (rule, d_k, mean, standard error, U, L, model error); NaN U skipped."""
    n_keys, variance, temperature, n_queries, _ = SCENARIOS[name]
    for rule, per_seed in measured(name).items():
        bound = theory.saturated_share(rule, POWERS, variance, temperature, n_keys)
        for j, d_k in enumerate(POWERS):
            upper = float(bound[j])
            if math.isnan(upper):
                continue
            mean = per_seed[:, j].mean()
            # seed-to-seed variance of one draw's share; floored at the variance of a
            # share of independent rows at the bound, p (1 - p) / rows, so that seeds
            # which all agree (every row saturated, or none) still leave an error
            p = min(max(upper, 0.0), 1.0)
            variance_one = max(per_seed[:, j].var(ddof=1), p * (1 - p) / n_queries)
            standard_error = math.sqrt(variance_one / SEEDS)
            lower = lower_bound(rule, d_k, variance, temperature, n_keys)
            model = QK_NORM_MODEL if rule == "qk_norm" and d_k > 1 else 0.0
            yield rule, d_k, mean, standard_error, upper, lower, model


@pytest.mark.parametrize("name", SCENARIOS)
def test_simulated_share_lies_between_the_bounds(name):
    """(a) measured <= U + K SE everywhere, and measured >= L - K SE, d_k = 1 .. 1024.

    Rows within one draw share the keys, so the standard error comes from
    the spread of the per-seed shares over 24 independent seeds (t with 23
    degrees of freedom; K = 5 standard errors, see K). For none, sqrt and
    linear L <= E[share] <= U holds exactly (module docstring); L carries a
    reference error below REFERENCE_ERROR. Under qk_norm the logits are only
    approximately Gaussian: at d_k >= ``theory.qk_norm_gaussian_from(n)``
    sampling their exact law puts the share within 0.05 (0.04 measured) of
    [L, U], so both sides widen by QK_NORM_MODEL there; below it U is NaN.
    """
    for rule, d_k, mean, se, upper, lower, model in comparisons(name):
        assert mean <= upper + model + K * se, (rule, d_k, mean, upper, se)
        assert mean >= lower - model - K * se - REFERENCE_ERROR, (rule, d_k, mean, lower, se)


@pytest.mark.parametrize("name", ["many keys, cold", "wide, cold"])  # defaults stop at U = 0.71
def test_where_rows_saturate_the_bound_is_close(name):
    """(b) Where U >= 0.9, |measured - U| <= K SE + (U - L) (+ the qk_norm model error).

    U - L, the bound's known slack, is what separates the two bounds of the
    test above (below 0.001 at a fixed spread where U >= 0.9; averaged over
    queries it grows with the share of rows still in the transition). The
    standard error is the one of the test above.
    """
    saturated = [c for c in comparisons(name) if c[4] >= 0.9]
    assert len(saturated) >= 3
    for rule, d_k, mean, se, upper, lower, model in saturated:
        slack = upper - lower + REFERENCE_ERROR
        assert abs(mean - upper) <= K * se + slack + model, (rule, d_k, mean, upper, se)


# --- Edges ------------------------------------------------------------------------------


def test_one_key_is_always_saturated():
    """With one key its weight is 1 > 0.99, as the simulation has it."""
    for rule in SCALING_RULES:
        np.testing.assert_array_equal(
            theory.saturated_share(rule, [1, 2, 64, 4096], 1.0, 1.0, n_keys=1), 1.0
        )
    draw = simulate(Settings(d_k=4, variance=1.0, scaling="linear", n_keys=1))
    assert simulation.saturated_share(draw.max_weight) == 1.0
    np.testing.assert_array_equal(theory.top_gap_exceedance([0.0, 1.0, 1e6], 1), 1.0)


def test_zero_spread_gives_uniform_rows():
    """d_k = 1 under qk_norm: every logit is 0, so no row is saturated."""
    np.testing.assert_array_equal(theory.top_gap_exceedance([0.0], 64), 0.0)
    for n in [2, 64, 1024]:
        assert theory.saturated_share("qk_norm", 1, 1.0, 0.01, n_keys=n) == 0.0
    draw = simulate(Settings(d_k=1, variance=1.0, scaling="qk_norm", temperature=0.01))
    assert simulation.saturated_share(draw.max_weight) == 0.0


def test_qk_norm_is_left_out_where_the_gaussian_model_fails():
    assert [theory.qk_norm_gaussian_from(n) for n in (2, 4, 64, 1024)] == [4, 4, 35, 97]
    d_ks = np.arange(1, 200)
    share = theory.saturated_share("qk_norm", d_ks, 1.0, 0.1, n_keys=64)
    np.testing.assert_array_equal(np.isnan(share), (d_ks >= 2) & (d_ks < 35))


@pytest.mark.parametrize("n_keys", [1, 2, 64, 1024])
def test_extreme_settings_stay_finite_and_in_the_unit_interval(n_keys):
    """Spreads from 1e-8 (linear, v = 1e-3, T = 100) to 6e6 (none, v = 1e3, T = 0.01)."""
    d_ks = [*POWERS, 4096]
    for rule in SCALING_RULES:
        for variance in (1e-3, 1.0, 4.0, 1e3):
            for temperature in (1e-2, 0.1, 1.0, 1e2):
                with np.errstate(**RAISE):
                    share = theory.saturated_share(rule, d_ks, variance, temperature, n_keys)
                kept = share[~np.isnan(share)] if rule == "qk_norm" else share
                assert np.all(np.isfinite(kept)), (rule, variance, temperature)
                assert np.all((kept >= 0) & (kept <= 1)), (rule, variance, temperature)
    # Jensen: G(a) = E[exp(-a M - a^2/2)] >= exp(-a E[M] - a^2/2), E[M] <= sqrt(2 ln n);
    # a = ln 99 / s over the queries grows by at most 1 % at these d_k (E[1/chi]).
    for d_k, variance, temperature in [(1024, 4.0, 0.1), (4096, 1e3, 1e-2)]:
        with np.errstate(**RAISE):
            share = theory.saturated_share("none", d_k, variance, temperature, n_keys)
        a = 1.01 * LN99 / float(theory.logit_std("none", d_k, variance, temperature))
        assert 1 - share <= a * math.sqrt(2 * math.log(n_keys)) + a * a / 2 + ACCURACY


def test_share_grows_with_the_spread_and_keeps_the_input_shape():
    none = theory.saturated_share("none", POWERS, 1.0)
    assert np.all(np.diff(none) > 0)
    colder = theory.saturated_share("sqrt", 64, 1.0, temperature=0.1)
    assert colder > theory.saturated_share("sqrt", 64, 1.0, temperature=0.3) > 0
    assert theory.saturated_share("none", 8, 1.0).shape == ()
    assert theory.saturated_share("linear", [[1, 2], [4, 8]], 1.0).shape == (2, 2)
