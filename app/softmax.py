"""Row-wise softmax and its Jacobian norms, accurate down to deep saturation.

Every quantity here is built from sums of non-negative terms, so it keeps its
relative accuracy when one weight is within far less than float64's epsilon of
1. The trick is to factor each row around its top logit ``z_m`` and the
runner-up ``z_r``::

    gap = z_m - z_r >= 0,   eps = exp(-gap),   v_j = exp(z_j - z_r) (j != m, v_m = 0)
    V = sum_j v_j,          S = 1 + eps * V
    p_m = 1 / S,            p_j = eps * v_j / S  (j != m)

so ``1 - p_m = eps * V / S`` is never formed as a difference, and the norms are
returned as logarithms ``-gap - log S + log(...)`` that stay finite even when
``eps`` underflows.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SoftmaxRows:
    """A row-wise softmax, factored around each row's top and runner-up logit.

    All arrays have the leading shape of the logits; per-row quantities keep a
    trailing axis of length 1 so they broadcast against the weights.

    Attributes
    ----------
    weights : ndarray, shape (..., n)
        ``p = softmax(z)`` along the last axis; rows sum to 1.
    is_top : ndarray of bool, shape (..., n)
        True at the (first) largest logit of each row.
    gap : ndarray, shape (..., 1)
        Top logit minus runner-up logit, ``>= 0``.
    relative : ndarray, shape (..., n)
        ``v_j = exp(z_j - z_runner_up)`` off the top, 0 at the top.
    log_partition : ndarray, shape (..., 1)
        ``log S = log1p(exp(-gap) * sum_j v_j)``.
    """

    weights: np.ndarray
    is_top: np.ndarray
    gap: np.ndarray
    relative: np.ndarray
    log_partition: np.ndarray

    @property
    def max_weight(self) -> np.ndarray:
        """Largest weight of each row, ``p_m = 1 / S``; shape (...)."""
        return np.exp(-self.log_partition[..., 0])


def softmax_rows(logits: np.ndarray) -> SoftmaxRows:
    """Factor a stable softmax over the last axis of ``logits``.

    Parameters
    ----------
    logits : ndarray, shape (..., n), finite, n >= 2

    Returns
    -------
    SoftmaxRows
    """
    n = logits.shape[-1]
    top = logits.argmax(axis=-1)[..., None]
    is_top = np.arange(n) == top
    z_top = np.take_along_axis(logits, top, axis=-1)
    others = np.where(is_top, -np.inf, logits)
    z_runner_up = others.max(axis=-1, keepdims=True)
    relative = np.exp(others - z_runner_up)  # in [0, 1]; exp(-inf) = 0 at the top
    gap = z_top - z_runner_up
    eps = np.exp(-gap)
    log_partition = np.log1p(eps * relative.sum(axis=-1, keepdims=True))
    partition = np.exp(log_partition)
    weights = np.where(is_top, 1.0 / partition, eps * relative / partition)
    return SoftmaxRows(weights, is_top, gap, relative, log_partition)


def entropy(rows: SoftmaxRows, logits: np.ndarray) -> np.ndarray:
    """Shannon entropy of each row in nats, shape (...).

    ``H = -sum_j p_j log p_j = log S + sum_j p_j (z_m - z_j)``: two non-negative
    parts, so no cancellation and no ``0 * log 0``.
    """
    z_top = np.max(logits, axis=-1, keepdims=True)
    return (rows.log_partition + np.sum(rows.weights * (z_top - logits), axis=-1, keepdims=True))[
        ..., 0
    ]


JACOBIAN_TEX = r"\|J\|_F,\ \ J = \mathrm{diag}(p) - p\,p^\top"  # what log_jacobian_norm computes


def log_jacobian_norm(rows: SoftmaxRows) -> np.ndarray:
    """``log ||diag(p) - p p^T||_F`` of each row, shape (...).

    docs/theory.md gives ``||J||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2``, which
    cancels catastrophically near one-hot rows. Row by row,
    ``||J||_F^2 = sum_i p_i^2 c_i^2 + sum_i p_i^2 d_i`` with the complements
    ``c_i = sum_{j != i} p_j`` (diagonal ``p_i c_i``) and
    ``d_i = sum_{j != i} p_j^2`` (off-diagonal ``-p_i p_j``). Factoring out
    ``eps^2 / S^2`` (see the module docstring) leaves

        B = (V^2 + V_2) / S^2 + sum_{i != m} v_i^2 (c_i^2 + d_i),
        c_i = 1 - p_i,  d_i = (1 + eps^2 (V_2 - v_i^2)) / S^2,

    with ``V_2 = sum v^2``; ``p_i <= 1/2`` off the top, so ``1 - p_i`` is exact
    enough, and ``B >= 1/4`` because the runner-up has ``v = 1``.
    """
    v = rows.relative
    eps = np.exp(-rows.gap)
    partition = np.exp(rows.log_partition)
    total = v.sum(axis=-1, keepdims=True)
    total_sq = (v**2).sum(axis=-1, keepdims=True)
    complement = 1.0 - rows.weights
    others_sq = (1.0 + eps**2 * (total_sq - v**2)) / partition**2
    b = (total**2 + total_sq) / partition**2 + np.sum(
        v**2 * (complement**2 + others_sq), axis=-1, keepdims=True
    )
    return (-rows.gap - rows.log_partition + 0.5 * np.log(b))[..., 0]


def log_key_spread(
    rows: SoftmaxRows, keys: np.ndarray, layer_norm: tuple | None = None
) -> np.ndarray:
    """``log sqrt(sum_j p_j^2 ||P (k_j - kbar)||^2)`` of each row, shape (...).

    With ``A`` the matrix whose rows are ``a_j = P k_j``, this is
    ``log ||J A||_F``: row j of ``J A`` is ``p_j (a_j - sum_i p_i a_i)``. It is
    the gradient of the weights with respect to the query, up to the scalar
    factor of ``dz/dq`` that the caller adds (see ``app.simulation``).

    Parameters
    ----------
    rows : SoftmaxRows
        Weights of shape (..., n_queries, n_keys): the rows of several scale
        factors of the same dot products may be stacked on leading axes.
    keys : ndarray, shape (n_keys, r)
        The key vectors the logits were made from, or any rows with the same
        inner products (``app.simulation.span_coordinates``): nothing else of
        the keys counts.
    layer_norm : (y_keys, deficit, d, y_sq), optional
        For qk_norm, where ``y`` are the layer-normalised queries: ``y_keys``
        (n_queries, n_keys), their inner products ``y . k_j`` with the keys;
        ``deficit`` (n_queries, 1), ``1 - rho`` with ``rho = |y|^2 / d``,
        computed without cancellation by the caller; ``d``, the vectors'
        dimension; ``y_sq`` (n_queries, 1), ``|y|^2``. ``P`` is then the layer
        norm's projection ``I - 1 1^T/d - y y^T/d`` (its Jacobian times sigma),
        applied to zero-mean keys: ``||P x||^2 = ||x||^2 - (2 - rho) (y.x)^2/d``.
        For ``d = 2`` every zero-mean ``x`` is parallel to ``y``, and this
        difference is formed exactly as ``(1 - rho)^2 (y.x)^2 / |y|^2``.
        Without it, ``P = I``.

    Notes
    -----
    Off the top, ``u_j = k_j - kbar`` is as long as a key, so expanding
    ``||u_j||^2 = |k_j|^2 - 2 k_j.kbar + |kbar|^2`` loses nothing. At the top,
    ``k_m - kbar = (eps / S) w`` with ``w = sum_i v_i (k_m - k_i)`` formed
    directly, so the result is ``-gap - log S + log sqrt(|P w|^2 / S^2 +
    sum_{j != m} v_j^2 |P u_j|^2)``.
    """
    v = rows.relative
    eps = np.exp(-rows.gap)
    partition = np.exp(rows.log_partition)
    top = np.argmax(rows.is_top, axis=-1)[..., None]
    k_top = keys[top[..., 0]]
    v_keys = v @ keys  # sum_i v_i k_i
    w = v.sum(axis=-1, keepdims=True) * k_top - v_keys
    k_bar = (k_top + eps * v_keys) / partition  # sum_i p_i k_i
    w_sq = np.sum(w**2, axis=-1, keepdims=True)
    u_sq = (
        np.sum(keys**2, axis=-1) - 2.0 * (k_bar @ keys.T) + np.sum(k_bar**2, axis=-1, keepdims=True)
    )
    if layer_norm is not None:
        y_keys, deficit, d, y_sq = layer_norm
        y_keys = np.broadcast_to(y_keys, v.shape)
        y_top = np.take_along_axis(y_keys, top, axis=-1)
        y_w = np.sum(v * (y_top - y_keys), axis=-1, keepdims=True)  # non-negative terms
        y_bar = (y_top + eps * np.sum(v * y_keys, axis=-1, keepdims=True)) / partition  # y.kbar
        w_sq = _layer_norm_projection(w_sq, y_w, deficit, d, y_sq)
        u_sq = _layer_norm_projection(u_sq, y_keys - y_bar, deficit, d, y_sq)
    spread = w_sq / partition**2 + np.sum(v**2 * np.maximum(u_sq, 0.0), axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):  # identical keys: the spread is exactly 0
        return (-rows.gap - rows.log_partition + 0.5 * np.log(spread))[..., 0]


def _layer_norm_projection(x_sq, y_x, deficit, d, y_sq):
    """``||P x||^2`` from ``||x||^2`` and ``y.x`` for zero-mean ``x`` (see above)."""
    if d == 2 and np.all(y_sq > 0):
        return deficit**2 * y_x**2 / y_sq
    return np.maximum(x_sq - (1.0 + deficit) * y_x**2 / d, 0.0)
