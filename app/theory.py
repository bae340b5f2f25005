"""The closed forms that the plots overlay (numpy only).

Each result is derived, with where it stops holding and its source, in
docs/theory.md. Beside each function sits the TeX of the formula it computes,
which the page shows in its caption.
"""

import math
from functools import lru_cache

import numpy as np

from app.simulation import DEFAULT_ALPHA, LAYER_NORM_EPS, SATURATION, scale_factor

DOT_VARIANCE_TEX = r"\mathrm{Var}(q\cdot k) = d_k v^2"
LOGIT_STD_TEX = r"s = c\,\sqrt{d_k}\,v\,/\,T"
POWER_SPREAD_TEX = r"c = d_k^{-\alpha}\Rightarrow s = d_k^{1/2-\alpha}\,v\,/\,T"


def logit_std(
    scaling: str, d_k, variance: float, temperature: float = 1.0, alpha: float = DEFAULT_ALPHA
):
    """The standard deviation s of the logits (the spread).

    ``Var(q . k) = d_k * variance^2`` for independent zero-mean components
    (Vaswani et al. 2017, footnote 4), so ``s = c * sqrt(d_k) * variance / T``;
    under the power rule (``c = d_k^(-alpha)``) that is ``d_k^(1/2 - alpha) v / T``.

    Under qk_norm the layer-normalised vectors are zero-mean with
    ``|x_hat|^2 = d_k * rho``, ``rho = var / (var + eps)``, and isotropic in
    the (d_k - 1)-dimensional zero-mean subspace, so
    ``E[(q_hat . k_hat)^2] = (d_k rho)^2 / (d_k - 1)`` and
    ``s = c * d_k * rho / sqrt(d_k - 1) / T`` (0 at d_k = 1): ``variance``
    only enters through ``rho``, approximated at the mean sample variance
    ``variance * (d_k - 1) / d_k``.
    """
    d_k = np.asarray(d_k, dtype=float)
    c = np.vectorize(scale_factor, otypes=[float])(scaling, d_k, alpha)
    if scaling != "qk_norm":
        return c * np.sqrt(d_k) * variance / temperature
    sample_var = variance * (d_k - 1) / d_k
    rho = sample_var / (sample_var + LAYER_NORM_EPS)
    safe = np.maximum(d_k - 1, 1)
    return np.where(d_k > 1, c * d_k * rho / np.sqrt(safe) / temperature, 0.0)


def spread_said(scaling: str, d_k: int, spread: float) -> str:
    """The theory's ``spread`` (``logit_std``) with its formula, as a summary says it:
    "spread = c √d_k v / T = 2.83"; under qk_norm "spread = c d_k / (√(d_k − 1) T)"
    (``rho`` is 1 to four digits at the page's variances, 0.1 and up), and at d_k = 1,
    where every logit is 0, just that."""
    if scaling != "qk_norm":
        return f"spread = c √d_k v / T = {spread:.3g}"
    if d_k == 1:
        return "spread 0, every logit being 0"
    return f"spread = c d_k / (√(d_k − 1) T) = {spread:.3g}"


def pooled_excess_kurtosis(d_k):
    """Excess kurtosis of ``q . k`` pooled over queries, ``6 / d_k``."""
    return 6.0 / np.asarray(d_k, dtype=float)


SMALL_SPREAD_ENTROPY_TEX = r"\mathbb{E}[H] \approx \ln\ n - s^2/2\ \ (s \lesssim 1)"


def small_spread_entropy(spread, n_keys: int):
    """Small-spread entropy ``E[H] ~ ln(n) - s^2 / 2`` in nats, valid for spread s below about 1."""
    return np.log(n_keys) - np.asarray(spread, dtype=float) ** 2 / 2


COLLAPSE_THRESHOLD_TEX = r"s_c = \sqrt{2\ln\ n}"


def collapse_threshold(n_keys: int) -> float:
    """The random-energy-model threshold, spread ``s_c = sqrt(2 ln n)``.

    Above it (as n grows) the largest few logits take most of each row's weight.
    """
    return float(np.sqrt(2 * np.log(n_keys)))


UNIFORM_JACOBIAN_TEX = r"\sqrt{n-1}/n"


def uniform_jacobian_norm(n_keys: int) -> float:
    """``||J||_F = sqrt(n - 1) / n`` for uniform weights (``(n-1)/n^2`` squared)."""
    return float(np.sqrt(n_keys - 1) / n_keys)


ONE_HOT_JACOBIAN_NORM = 0.0  # ||J||_F for one-hot weights
# ||J||_F of a row whose largest weight passes SATURATION = 0.99, at most: the rest, ε,
# on one key gives 2 ε (1 − ε) = 0.0198 at ε = 0.01, and spread over more keys, less.
SATURATED_JACOBIAN_NORM = 0.02


# --- Saturated rows: the share of rows whose largest weight exceeds SATURATION --------
#
# p_max = 1 / (1 + sum_{j != m} e^(z_j - z_m)) > 0.99 needs e^(-gap) < 1/99, where gap is
# the top logit minus the runner-up: gap > ln(0.99 / 0.01) = ln 99.
SATURATION_GAP = math.log(SATURATION) - math.log1p(-SATURATION)

# Quadrature nodes y (step 0.1 on [-12, 9.5]) for the maximum M of n standard normals,
# and log Phi(y) there from the standard library's erfc.
_Y_STEP = 0.1
_Y = _Y_STEP * np.arange(-120, 96)
_LOG_NCDF_Y = np.array(
    [
        math.log(0.5 * math.erfc(-y / math.sqrt(2)))
        if y < 0
        else math.log1p(-0.5 * math.erfc(y / math.sqrt(2)))
        for y in _Y.tolist()
    ]
)
# The table of F(u) = log(-log G(e^u)) over u = log a, step 0.1, a from 1e-4 to 12, with
# one extra node at either end for the four-point stencil.
_A_MIN, _A_MAX = 1e-4, 12.0
_U_STEP = 0.1
_U0 = math.log(_A_MIN)
_U = _U0 + _U_STEP * np.arange(-1, math.ceil((math.log(_A_MAX) - _U0) / _U_STEP) + 2)


@lru_cache(maxsize=16)
def _gap_table(n_keys: int) -> np.ndarray:
    """``F(u) = log(-log G(e^u))`` on ``_U``; G as in ``top_gap_exceedance``."""
    # h * n phi(y) Phi(y)^(n-1): the density of the maximum M of n standard normals
    log_w = (
        math.log(n_keys * _Y_STEP / math.sqrt(2 * math.pi)) - _Y**2 / 2 + (n_keys - 1) * _LOG_NCDF_Y
    )
    a = np.exp(_U)[:, None]
    tilt = -a * (_Y + a / 2)  # G(a) = E[exp(-a M - a^2/2)]
    g = np.exp(tilt + log_w).sum(axis=1)
    not_g = -(np.expm1(tilt) * np.exp(log_w)).sum(axis=1)  # 1 - G, without cancellation
    minus_log_g = np.where(
        not_g < 0.5, -np.log1p(-np.minimum(not_g, 0.5)), -np.log(np.maximum(g, 1e-300))
    )
    return np.log(minus_log_g)


def _gap_exceedance_at(log_a: np.ndarray, n_keys: int) -> np.ndarray:
    """G(a) for ``n_keys >= 2`` at ``log_a`` (any shape, +inf allowed): cubic in ``_U``."""
    table = _gap_table(n_keys)
    t = (np.clip(log_a, _U0, _U[-2]) - _U[0]) / _U_STEP
    i = np.clip(np.floor(t).astype(int), 1, len(_U) - 3)
    f = t - i
    f_u = (
        -f * (f - 1) * (f - 2) / 6 * table[i - 1]
        + (f + 1) * (f - 1) * (f - 2) / 2 * table[i]
        - (f + 1) * f * (f - 2) / 2 * table[i + 1]
        + (f + 1) * f * (f - 1) / 6 * table[i + 2]
    )
    # below a = 1e-4, -log G = a E[M] + O(a^2): F continues with slope 1
    f_u = f_u + np.minimum(log_a - _U0, 0.0)
    return np.where(log_a > math.log(_A_MAX), 0.0, np.exp(-np.exp(f_u)))


def top_gap_exceedance(spread, n_keys: int) -> np.ndarray:
    """``G = P(top logit - runner-up > ln 99)`` for n i.i.d. N(0, spread^2) logits.

    Parameters
    ----------
    spread : array_like
        Standard deviation s >= 0 of the logits (0 gives 0: all logits tie).
    n_keys : int
        Number n of logits; one logit has no runner-up and gives 1.

    Returns
    -------
    ndarray, shape of ``spread``
        ``G(a) = n Int phi(x) Phi(x - a)^(n-1) dx`` with ``a = ln 99 / s``: the
        top logit, at x in units of s, beats all n - 1 others by a. Its
        absolute error is below 2e-7 (see ``saturated_share``).
    """
    spread = np.asarray(spread, dtype=float)
    if n_keys == 1:
        return np.ones_like(spread)
    positive = spread > 0
    log_a = np.where(
        positive, math.log(SATURATION_GAP) - np.log(np.where(positive, spread, 1.0)), np.inf
    )
    return _gap_exceedance_at(log_a, n_keys)


_CHI_TAIL = 36.0  # the nodes cover the density of log chi^2 down to e^-36 of its peak
_CHI_STEP = 0.35  # node step in z = log(chi^2 / d), ...
_CHI_STD_STEP = 0.6  # ... or in standard deviations of z (1/sqrt(d/2)) if smaller


def _chi_nodes(d_k: np.ndarray):
    """Trapezoid nodes for ``E[f(z)]``, ``z = log(chi^2_d / d)``, for each d of ``d_k``.

    With ``k = d/2`` the density of z is proportional to ``exp(-k g(z))``,
    ``g = e^z - 1 - z``, which peaks at z = 0. The nodes stop where it has
    fallen to ``e^-36``, or a little beyond: on the left ``g >= y^2 / (2 + y)``
    for ``y = -z > 0``; on the right ``g >= z^2 / 2``, and ``g(ln(1 + 2r)) >= r``
    when ``r = 36 / k >= 1.26``. Returns the segment (index into ``d_k``) of each
    node, the nodes z, and their weights, which sum to 1 within each segment.
    """
    k = d_k / 2
    r = _CHI_TAIL / k
    z_lo = -(r + np.sqrt(r * r + 8 * r)) / 2
    z_hi = np.where(r >= 1.26, np.minimum(np.sqrt(2 * r), np.log1p(2 * r)), np.sqrt(2 * r))
    step = np.minimum(_CHI_STEP, _CHI_STD_STEP / np.sqrt(k))
    count = np.ceil((z_hi - z_lo) / step).astype(int) + 1
    segment = np.repeat(np.arange(len(d_k)), count)
    z = z_lo[segment] + step[segment] * (
        np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    )
    w = np.exp(k[segment] * (z - np.exp(z) + 1))
    return segment, z, w / np.bincount(segment, w)[segment]


def qk_norm_gaussian_from(n_keys: int) -> int:
    """Smallest d_k at which ``saturated_share`` trusts the Gaussian model under qk_norm.

    ``max(4, ceil(2 (ln n)^2))``: 4 for n <= 4, 35 for n = 64, 97 for n = 1024.
    """
    return max(4, math.ceil(2 * math.log(n_keys) ** 2))


SATURATED_SHARE_TEX = (
    r"\Pr[\max_j p_j > 0.99] \le \mathbb{E}_q\,n\!\int\!\varphi(x)\,"
    r"\Phi(x - \ln\ 99/s_q)^{n-1}dx,\ \ s_q = c\,\lVert q\rVert\sqrt{v}/T"
)


def saturated_share(
    scaling: str,
    d_k,
    variance: float,
    temperature: float = 1.0,
    n_keys: int = 64,
    alpha: float = DEFAULT_ALPHA,
) -> np.ndarray:
    """Gaussian-model bound on the share of rows whose largest weight exceeds 0.99.

    The theory curve of the "saturated rows" plot: an upper bound on the
    expected ``app.simulation.saturated_share`` of ``simulate``'s rows,
    computed by quadrature (no Monte Carlo), so it is smooth. Four rules at 60
    d_k values take 0.55 ms in CPython, plus 0.3 ms for a new ``n_keys`` (its
    table is cached).

    Parameters
    ----------
    scaling : {"none", "sqrt", "linear", "qk_norm", "power"}
    d_k : array_like of int
        Dimensions, 1 to 4096; the result has this shape.
    variance, temperature, alpha : float
        As in ``Settings``.
    n_keys : int
        Number of keys n per row.

    Returns
    -------
    ndarray
        The share in [0, 1]: 1 for one key (its weight is 1), and 0 at
        d_k = 1 under qk_norm (every logit is 0, so rows are uniform). NaN under
        qk_norm where ``2 <= d_k < qk_norm_gaussian_from(n_keys)`` (see below):
        the page leaves those points out.

    Notes
    -----
    A row is saturated only if its top logit beats the runner-up by more than
    ``ln 99``, because ``p_max = 1 / (1 + sum_{j != m} e^(z_j - z_m))``. For n
    i.i.d. ``N(0, s^2)`` logits, with the top one at x (units of s),

        P(gap > ln 99) = n Int phi(x) Phi(x - a)^(n-1) dx,  a = ln 99 / s,
                       = E[exp(-a M - a^2/2)],   M = max of n standard normals

    (substitute ``x = y + a``). This bounds ``P(saturated)`` from above; the
    slack is the rows whose gap clears ln 99 while their lower keys together
    still hold 1% of the weight. A lower bound L (Jensen's inequality over
    those keys, in ``tests/test_theory.py``) puts the slack below 0.04 for
    every n <= 1024 and spread (largest where the bound is near 0.17), and
    below 0.001 where the bound exceeds 0.9: tight once rows saturate.

    For a fixed query the logits ``c q . k_j / T`` are exactly i.i.d. Gaussian
    over the keys, with row spread ``s_q = c ||q|| sqrt(v) / T``, and
    ``||q||^2 / v ~ chi^2_{d_k}``; so for none, sqrt, linear and power the bound is
    averaged over ``s_q = s sqrt(chi^2_d / d)``, s from ``logit_std``. That
    average is exact, not an approximation, and matters at small d_k.

    Under qk_norm the logits of a row are ``s sqrt(d_k - 1) cos(theta_j)``,
    cosines of uniform directions in the (d_k - 1)-dimensional zero-mean
    subspace: bounded, so only approximately Gaussian; the bound uses the
    fixed spread ``s = logit_std("qk_norm", ...)``. Sampling that law directly
    (2e6 to 4e6 logits per n, n = 2 to 1024, spreads 1 to 1000) puts its
    ``P(gap > ln 99)`` 0.3 to 0.99 away from the Gaussian one at d_k = 3 (n >= 8),
    and within 0.041 once ``d_k >= qk_norm_gaussian_from(n) = max(4, 2 (ln n)^2)``,
    shrinking like 1/d_k beyond; there its saturated share lies within 0.04 of
    the Gaussian [L, U] (for n <= 3 above U, by up to 0.033 at d_k = 4). The
    top two of n logits sit near ``sqrt(2 ln n)`` standard deviations, where
    the bounded law's log-density is off by about ``(ln n)^2 / d_k``; hence the
    floor. Below it this returns NaN; at d_k = 1 the exact 0.

    Accuracy: ``log Phi`` at the 216 nodes y of the maximum M comes from
    ``math.erfc`` (C libm; relative error below 2e-14 there, argument rounding
    included); the trapezoid rule over M (step 0.1 on [-12, 9.5]) is accurate to
    1e-12 relative; G is tabulated once per n as ``log(-log G)`` against
    ``log a`` (step 0.1, a from 1e-4 to 12; beyond 12, G < 3e-17 is taken as 0)
    and interpolated by cubic Lagrange, which dominates: absolute error below
    2e-7 (1.25e-7 measured over n = 2 to 1024). The chi average is a trapezoid
    rule in ``log chi^2`` with error below 1e-9.

    Source: derived here from the definition of a saturated row (see
    docs/theory.md); the integral is the joint law of the top two order
    statistics (David and Nagaraja, *Order Statistics*, 2003), the second form
    a change of variables; ``||q||^2 / v ~ chi^2_d`` is textbook.
    """
    d_k = np.asarray(d_k, dtype=float)
    if n_keys == 1:  # one weight, always 1
        return np.ones_like(d_k)
    dims, inverse = np.unique(d_k, return_inverse=True)
    spread = logit_std(scaling, dims, variance, temperature, alpha)
    if scaling == "qk_norm":
        share = np.full(len(dims), np.nan)  # below the floor: the page skips NaN
        share[dims == 1] = 0.0  # every logit is 0: uniform rows
        trusted = dims >= qk_norm_gaussian_from(n_keys)
        share[trusted] = top_gap_exceedance(spread[trusted], n_keys)
    else:
        segment, z, w = _chi_nodes(dims)
        # a = ln 99 / s_q, s_q = s e^(z/2): the row spread at chi^2_d = d e^z
        log_a = math.log(SATURATION_GAP) - np.log(spread)[segment] - z / 2
        share = np.bincount(segment, w * _gap_exceedance_at(log_a, n_keys), len(dims))
    return np.clip(share, 0.0, 1.0)[inverse].reshape(d_k.shape)
