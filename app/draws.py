"""One seeded draw of queries and keys, and what every variance and rule makes of it.

``simulate`` and ``sweep`` share this machinery: the products of a draw that
cost d_k per entry are computed once (``Products``) and kept per seed and shape
(``products``), a variance and a family of rules make a ``Draw`` of them, and
``Rows`` applies several scale factors at once and computes the softmax's
metrics when asked for.
"""

import functools
import math
from collections.abc import Callable

import numpy as np

from app import softmax

LAYER_NORM_EPS = 1e-5  # what torch.nn.functional.layer_norm adds to the variance


class Products:
    """What every variance makes of one draw, from its standard form ``q``, ``k``.

    A draw at variance ``v`` is ``sqrt(v)`` times the standard one, so its dot
    products are ``v`` times the standard ones and its keys' span coordinates
    (``span_coordinates``) ``sqrt(v)`` times theirs. Under the layer norm, the
    centred components ``c`` scale the same way and only its ``eps`` does not:
    ``y = c / sqrt(var_c + eps / v)``. So everything that costs d_k per entry is
    computed once, for every variance (each part when first asked for), and a
    new variance costs no more than the softmax.
    """

    def __init__(self, q: np.ndarray, k: np.ndarray):
        self.q, self.k = q, k  # never changed: shared by every variance
        self.d_k = q.shape[-1]

    @functools.cached_property
    def dots(self) -> np.ndarray:
        return self.q @ self.k.T

    @functools.cached_property
    def coordinates(self) -> np.ndarray:
        return span_coordinates(self.k)

    @functools.cached_property
    def centred(self) -> dict:
        """The layer norm's centred rows: their products, variances and lengths."""
        cq, ck = (x - x.mean(axis=-1, keepdims=True) for x in (self.q, self.k))
        return {
            "dots": cq @ ck.T,
            "coordinates": span_coordinates(ck),
            "var_q": np.mean(cq**2, axis=-1, keepdims=True),
            "var_k": np.mean(ck**2, axis=-1, keepdims=True),
            "length_sq_q": np.sum(cq**2, axis=-1, keepdims=True),
        }

    def at(self, variance: float, scaling: str) -> "Draw":
        """The draw at ``variance``, for ``scaling``'s family (layer norm or none)."""
        if scaling != "qk_norm":
            return Draw(
                variance * self.dots,
                1.0,
                lambda: (math.sqrt(variance) * self.coordinates, None),
            )
        c, eps = self.centred, LAYER_NORM_EPS / variance
        # q_hat = c / s, sigma = sqrt(v var_c + eps) = sqrt(v) s (layer_norm's, per row)
        s_q, s_k = np.sqrt(c["var_q"] + eps), np.sqrt(c["var_k"] + eps)
        dots = c["dots"] / (s_q * s_k.T)
        deficit = eps / (c["var_q"] + eps)  # 1 - |q_hat|^2 / d = eps / (var + eps)
        length_sq = c["length_sq_q"] / s_q**2  # |q_hat|^2

        def gradient():
            return c["coordinates"] / s_k, (dots, deficit, self.d_k, length_sq)

        return Draw(dots, math.sqrt(variance) * s_q, gradient)


@functools.lru_cache(maxsize=2 * 11)  # two draws' worth at the page's 11 d_k
def products(seed: int, n_queries: int, n_keys: int, d_k: int) -> Products:
    """``Products`` of the seeded standard draw, kept so that a new variance reuses them."""
    rng = np.random.default_rng(seed)
    return Products(rng.standard_normal((n_queries, d_k)), rng.standard_normal((n_keys, d_k)))


def forget_draws():
    """Let go of the draws kept for new variances (before a memory snapshot is made)."""
    products.cache_clear()


class Draw:
    """One draw prepared for the rules of one family (without layer norm, or qk_norm).

    Attributes
    ----------
    dots : ndarray, shape (n_queries, n_keys)
        ``q_hat . k_hat``.
    query_sigma : float or ndarray of shape (n_queries, 1)
        The layer norm's ``sigma`` of each query (1 without it).
    gradient : tuple
        ``(keys, layer_norm)`` for ``softmax.log_key_spread``: the keys' span
        coordinates and, under qk_norm, what it needs of the normalised queries;
        computed when first read.
    """

    def __init__(self, dots, query_sigma, gradient: Callable[[], tuple]):
        self.dots, self.query_sigma, self._gradient = dots, query_sigma, gradient

    @functools.cached_property
    def gradient(self) -> tuple:
        return self._gradient()


def span_coordinates(keys: np.ndarray) -> np.ndarray:
    """Rows ``C`` with the keys' inner products, ``C C^T = K K^T``, shape
    (n_keys, min(n_keys, d)): the keys' coordinates in an orthonormal basis of
    their span, up to rounding.

    Every length and inner product of combinations of keys is the same in ``C``,
    and that is all the query gradient needs of them (``softmax.log_key_spread``).
    With d components above n_keys it then works on n_keys of them: at d_k = 1024
    and 64 keys, a sixteenth. ``C`` is the Cholesky factor of the Gram matrix
    ``K K^T`` (n_keys^3 / 3 steps after the n_keys^2 d of the Gram matrix, about
    a quarter of a QR's time in Pyodide's numpy); keys that are not linearly
    independent, which the Cholesky factorisation refuses, take a QR.
    """
    n_keys, d = keys.shape
    if d <= n_keys:
        return keys
    try:
        return np.linalg.cholesky(keys @ keys.T)
    except np.linalg.LinAlgError:
        return np.linalg.qr(keys.T, mode="r").T


class Rows:
    """The softmax rows of one draw (``Draw``) under several scale factors
    ``dz_scale`` (``c / temperature`` of some rules; shape (rules,)), and their
    metrics, each of shape (rules, n_queries), computed when asked for.

    ``dz_j/dq = (c / temperature) * (dq_hat/dq) k_hat_j``, where ``dq_hat/dq`` is
    the identity, or ``P / sigma`` under qk_norm (see ``softmax.log_key_spread``).
    """

    def __init__(self, dz_scale: np.ndarray, draw: Draw):
        self._dz_scale, self._draw = dz_scale, draw
        self.logits = dz_scale[:, None, None] * draw.dots  # (rules, n_queries, n_keys)
        self._one_key = draw.dots.shape[-1] == 1  # softmax of one logit is the constant 1

    @functools.cached_property
    def _softmax(self) -> softmax.SoftmaxRows:
        return softmax.softmax_rows(self.logits)

    @property
    def weights(self) -> np.ndarray:
        return np.ones_like(self.logits) if self._one_key else self._softmax.weights

    def logit_std(self) -> np.ndarray:
        return self.logits.std(axis=-1)

    def max_weight(self) -> np.ndarray:
        return self._zeros() + 1.0 if self._one_key else self._softmax.max_weight

    def entropy(self) -> np.ndarray:
        return self._zeros() if self._one_key else softmax.entropy(self._softmax, self.logits)

    def jacobian_norm(self) -> np.ndarray:
        if self._one_key:
            return self._zeros()
        return np.exp(softmax.log_jacobian_norm(self._softmax))

    def query_grad_norm(self) -> np.ndarray:
        if self._one_key:
            return self._zeros()
        log_grad = softmax.log_key_spread(self._softmax, *self._draw.gradient)
        sigma = np.reshape(self._draw.query_sigma, -1)
        return np.exp(log_grad + np.log(self._dz_scale[:, None] / sigma))

    def _zeros(self) -> np.ndarray:
        return np.zeros(self.logits.shape[:-1])
