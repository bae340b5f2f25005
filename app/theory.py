"""The closed forms of DESIGN.md that the plots overlay (numpy only).

Numbering follows DESIGN.md: F1 logit spread, F3 tails, F4 small-spread
entropy, F5 collapse threshold, F7 softmax Jacobian norms.
"""

import numpy as np

from app.simulation import LAYER_NORM_EPS, scale_factor


def logit_std(scaling: str, d_k, variance: float, temperature: float = 1.0):
    """F1: the standard deviation s of the logits.

    ``Var(q . k) = d_k * variance^2`` for independent zero-mean components
    (Vaswani et al. 2017, footnote 4), so ``s = c * sqrt(d_k) * variance / T``.

    Under qk_norm the layer-normalised vectors are zero-mean with
    ``|x_hat|^2 = d_k * rho``, ``rho = var / (var + eps)``, and isotropic in
    the (d_k - 1)-dimensional zero-mean subspace, so
    ``E[(q_hat . k_hat)^2] = (d_k rho)^2 / (d_k - 1)`` and
    ``s = c * d_k * rho / sqrt(d_k - 1) / T`` (0 at d_k = 1): ``variance``
    only enters through ``rho``, approximated at the mean sample variance
    ``variance * (d_k - 1) / d_k``.
    """
    d_k = np.asarray(d_k, dtype=float)
    c = np.vectorize(scale_factor, otypes=[float])(scaling, d_k)
    if scaling != "qk_norm":
        return c * np.sqrt(d_k) * variance / temperature
    sample_var = variance * (d_k - 1) / d_k
    rho = sample_var / (sample_var + LAYER_NORM_EPS)
    safe = np.maximum(d_k - 1, 1)
    return np.where(d_k > 1, c * d_k * rho / np.sqrt(safe) / temperature, 0.0)


def pooled_excess_kurtosis(d_k):
    """F3: excess kurtosis of ``q . k`` pooled over queries, ``6 / d_k``."""
    return 6.0 / np.asarray(d_k, dtype=float)


def small_spread_entropy(spread, n_keys: int):
    """F4: ``E[H] ~ ln(n) - s^2 / 2`` in nats, valid for spread s below about 1."""
    return np.log(n_keys) - np.asarray(spread, dtype=float) ** 2 / 2


def collapse_threshold(n_keys: int) -> float:
    """F5: spread ``s_c = sqrt(2 ln n)`` above which the weights collapse."""
    return float(np.sqrt(2 * np.log(n_keys)))


def uniform_jacobian_norm(n_keys: int) -> float:
    """F7: ``||J||_F = sqrt(n - 1) / n`` for uniform weights (``(n-1)/n^2`` squared)."""
    return float(np.sqrt(n_keys - 1) / n_keys)


ONE_HOT_JACOBIAN_NORM = 0.0  # F7: ||J||_F for one-hot weights
