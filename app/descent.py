"""Full-batch gradient descent on W_Q and W_K, exact and cheap in any d_k.

The model is ``app.training``'s: tokens X (n x m, m = d_model), W_Q and W_K
(m x d_k), logits Z = a X W_Q W_K^T X^T with a = c / T (c the rule's scale
factor; under QK-norm the rows of X W are layer-normalised first), P =
softmax(Z) row-wise and L = 1/(2n) sum_i ||P_i - e_i||^2. Two exact ways to
carry a run, whatever d_k is:

- **On the Gram matrices** (every rule but QK-norm, from d_k = 2 d_model on, where
  [W_Q; W_K] has full rank: ``GramRuns``). The logits
  need W_Q and W_K only through C = W_Q W_K^T. With S = a X^T (dL/dZ) X
  (m x m), dL/dW_Q = S W_K and dL/dW_K = S^T W_Q, so a step of descent maps
  G_Q = W_Q W_Q^T, G_K = W_K W_K^T and C to (expand (W_Q - η S W_K)(W_K -
  η S^T W_Q)^T and its likes)::

      C'   = C   - η (G_Q S + S G_K) + η² S C^T S
      G_Q' = G_Q - η (C S^T + S C^T) + η² S G_K S^T
      G_K' = G_K - η (C^T S + S^T C) + η² S^T G_Q S

  Nothing is of size d_k once the three Grams are formed.
- **In a basis of the rows' span** (every rule, ``BasisRuns``). Every step
  adds to W_Q and W_K rows in the span of their initial rows (and, under the
  layer norm, of the all-ones vector), so W = A B with B an orthonormal basis of
  that span (at most 2m + 1 rows) and the run is carried on the coordinates A.
  The layer norm's mean and variance are inner products with the coordinates of
  the all-ones vector. This is the reference the Gram form is tested against,
  and the way QK-norm runs.

Both are batched over runs (a leading axis). Numpy only.
"""

import functools

import numpy as np

from app.draws import LAYER_NORM_EPS
from app.simulation import scale_factor

# Logits more than UNDERFLOW under their row's largest are raised to that: their weights,
# e^-500 = 7e-218 and less, vanish in every sum the descent takes, and the browser's
# exp takes a slow path past 512 (3 times the time; a saturated run has many such).
UNDERFLOW = 500.0


def finds_itself(z: np.ndarray) -> np.ndarray:
    """Whether each row of logits ``z`` (runs, n, n) puts its largest logit on its own
    token, and on no other: a tie (a row of equal logits, as QK-norm gives at d_k = 1)
    does not count."""
    n = z.shape[-1]
    top = z.max(axis=-1)
    own = z[:, np.arange(n), np.arange(n)]
    return (own == top) & (np.sum(z == top[..., None], axis=-1) == 1)


def softmax_terms(z: np.ndarray) -> tuple:
    """From logits ``z`` (runs, n, n), overwritten: the loss of every run, each row's
    largest weight, and ``n dL/dZ``.

    n dL/dZ = J^T (P - I) row by row, J = diag(p) - p p^T, that is
    p_j (p_j - 1[j=i]) - p_j r_i with r_i = sum_j p_j (p_j - 1[j=i]); and
    L = 1/(2n) sum_i (sum_{j != i} p_ij^2 + (1 - p_ii)^2).
    """
    n = z.shape[-1]
    diagonal = np.arange(n)
    z -= z.max(axis=-1, keepdims=True)
    np.maximum(z, -UNDERFLOW, out=z)
    p = np.exp(z, out=z)
    total = p.sum(axis=-1, keepdims=True)
    inverse = 1.0 / total
    p *= inverse  # P = softmax(Z); the largest weight of a row is 1 / total
    p_ii = p[:, diagonal, diagonal]
    p_sq = np.einsum("bij,bij->bi", p, p)
    loss = np.sum(p_sq - p_ii**2 + (1.0 - p_ii) ** 2, axis=-1) / (2 * n)
    g = p - (p_sq - p_ii)[..., None]
    g *= p
    g[:, diagonal, diagonal] -= p_ii
    return loss, inverse[..., 0], g


class GramRuns:
    """Runs carried on G_Q, G_K and C (see the module): every rule but QK-norm.

    Parameters
    ----------
    x : ndarray, shape (n, m)
    grams : tuple of ndarray, each (runs, m, m)
        G_Q, G_K and C at the start of every run.
    a, eta : ndarray, shape (runs,)
        Each run's c / T and learning rate.
    """

    def __init__(self, x, grams, a, eta):
        self.x, self.x_t = x, np.ascontiguousarray(x.T)
        self.g_q, self.g_k, self.c = (np.array(g, dtype=float) for g in grams)
        self.a, self.eta = a[:, None, None], eta[:, None, None]
        self._s = None

    def keep(self, runs):
        """Only the runs at indices ``runs`` go on."""
        self.g_q, self.g_k, self.c = self.g_q[runs], self.g_k[runs], self.c[runs]
        self.a, self.eta = self.a[runs], self.eta[runs]

    def logits(self) -> np.ndarray:
        return (self.x @ (self.c * self.a)) @ self.x_t  # Z = a X C X^T

    def gradient(self, g: np.ndarray):
        """Take ``g`` = n dL/dZ."""
        n = self.x.shape[0]
        self._s = (self.x_t @ (g @ self.x)) * (self.a / n)  # S = a X^T (dL/dZ) X

    def gradient_norm(self) -> np.ndarray:
        """||dL/dW_Q||_F of every run, at the gradient taken."""
        s_k = self._s @ self.g_k
        # ||S W_K||_F^2 = tr(S G_K S^T)
        return np.sqrt(np.maximum(np.einsum("bij,bij->b", s_k, self._s), 0.0))

    def step(self):
        s, eta = self._s, self.eta
        s_t, c_t = s.transpose(0, 2, 1), self.c.transpose(0, 2, 1)
        q_s, s_k, s_ct = self.g_q @ s, s @ self.g_k, s @ c_t
        c = self.c - eta * (q_s + s_k) + eta**2 * (s_ct @ s)
        g_q = self.g_q - eta * (s_ct + s_ct.transpose(0, 2, 1)) + eta**2 * (s_k @ s_t)
        ct_s, st_q_s = c_t @ s, q_s.transpose(0, 2, 1) @ s  # C^T S, S^T G_Q S
        g_k = self.g_k - eta * (ct_s + ct_s.transpose(0, 2, 1)) + eta**2 * st_q_s
        self.c = c
        self.g_q = 0.5 * (g_q + g_q.transpose(0, 2, 1))  # symmetric but for rounding
        self.g_k = 0.5 * (g_k + g_k.transpose(0, 2, 1))


def grams(w_q: np.ndarray, w_k: np.ndarray) -> tuple:
    """G_Q, G_K and C of one draw."""
    return w_q @ w_q.T, w_k @ w_k.T, w_q @ w_k.T


def coordinates(w_q, w_k):
    """``A_Q``, ``A_K`` and the all-ones vector's coordinates in an orthonormal basis of
    the rows of ``W_Q``, ``W_K`` and the all-ones vector, padded to ``2 d_model + 1``."""
    d_model, d_k = w_q.shape
    ones = np.ones((1, d_k))
    basis = np.linalg.qr(np.vstack([w_q, w_k, ones]).T)[0]  # (d_k, r), r = min(d_k, 2m+1)
    width = 2 * d_model + 1
    pad = ((0, 0), (0, width - basis.shape[1]))
    return np.pad(w_q @ basis, pad), np.pad(w_k @ basis, pad), np.pad(ones @ basis, pad)[0]


class Start:
    """Where runs start: a draw's W_Q and W_K, or only the Gram matrix of its rows.

    Parameters
    ----------
    w_q, w_k : ndarray, shape (m, d_k), optional
    gram : ndarray, shape (2m + 1, 2m + 1), optional
        The Gram matrix of the rows of [W_Q; W_K; 1] (``app.rates`` draws W far past
        the slider a row at a time and keeps only this); then ``d_k`` is needed too,
        and d_k >= 2m + 1 (the rows are independent).
    d_k : int, optional
    """

    def __init__(self, w_q=None, w_k=None, gram=None, d_k=None):
        self.w_q, self.w_k, self._gram = w_q, w_k, gram
        self.d_k = w_q.shape[1] if d_k is None else int(d_k)
        self.d_model = w_q.shape[0] if gram is None else (gram.shape[0] - 1) // 2

    @functools.cached_property
    def grams(self) -> tuple:
        """G_Q = W_Q W_Q^T, G_K = W_K W_K^T and C = W_Q W_K^T."""
        if self._gram is None:
            return grams(self.w_q, self.w_k)
        m = (self._gram.shape[0] - 1) // 2
        g = self._gram
        return g[:m, :m], g[m : 2 * m, m : 2 * m], g[:m, m : 2 * m]

    @functools.cached_property
    def coordinates(self) -> tuple:
        """``coordinates(w_q, w_k)``; from the Gram matrix alone, those in the basis
        L^-1 [W_Q; W_K; 1] (L L^T the Gram's Cholesky factorisation): the rows of L."""
        if self._gram is None:
            return coordinates(self.w_q, self.w_k)
        m = (self._gram.shape[0] - 1) // 2
        low = np.linalg.cholesky(self._gram)
        return low[:m], low[m : 2 * m], low[2 * m]


class BasisRuns:
    """Runs carried on the coordinates of W_Q and W_K in a basis of their rows' span (see
    the module); with ``layer_norm``, QK-norm's.

    Under the layer norm the coordinates carried are those of W's centred part,
    B = A P with P = I - o o^T / d_k the projection off the all-ones vector's
    coordinates o (the steps keep B in P's range). With C = B_Q B_K^T the logits are
    Z = a X C X^T without the layer norm, and Z_ij = a x_i C x_j / (s_i t_j) with it,
    s_i^2 = x_i B_Q B_Q^T x_i / d_k + eps (and t for the keys) the layer norm's
    variances.

    Parameters
    ----------
    x : ndarray, shape (n, m)
    coords : tuple of ndarray
        ``coordinates(w_q, w_k)`` of every run, stacked: (runs, m, r) twice, (runs, r).
    a, eta, d_k : ndarray, shape (runs,)
    layer_norm : bool
    """

    def __init__(self, x, coords, a, eta, d_k, layer_norm):
        b_q, b_k, ones = coords
        self.x, self.x_t, self.layer_norm = x, np.ascontiguousarray(x.T), layer_norm
        self.a, self.eta = a[:, None, None], eta[:, None, None]
        self.d_k = np.asarray(d_k, dtype=float)[:, None, None]
        self.projection = None
        if layer_norm:  # P = I - o o^T / d_k, the layer norm's centring in coordinates
            o = ones[:, :, None]
            self.projection = np.eye(o.shape[1]) - o @ o.transpose(0, 2, 1) / self.d_k
            b_q, b_k = b_q @ self.projection, b_k @ self.projection
        self.b_q, self.b_k = b_q, b_k
        self._grads = None

    def keep(self, runs):
        """Only the runs at indices ``runs`` go on."""
        self.b_q, self.b_k = self.b_q[runs], self.b_k[runs]
        self.a, self.eta, self.d_k = self.a[runs], self.eta[runs], self.d_k[runs]
        if self.layer_norm:  # with what the logits computed for the gradient
            self.projection = self.projection[runs]
            self._x_q, self._x_k, self._y_q = self._x_q[runs], self._x_k[runs], self._y_q[runs]

    def logits(self) -> np.ndarray:
        x, b_q, b_k = self.x, self.b_q, self.b_k
        if not self.layer_norm:
            return (x @ ((b_q * self.a) @ b_k.transpose(0, 2, 1))) @ self.x_t  # Z = a X C X^T
        # the rows of X over the layer norm's sigma of each query and key row
        self._x_q, self._x_k = x / _row_sigmas(x, b_q, self.d_k), x / _row_sigmas(x, b_k, self.d_k)
        self._y_q = self._x_q @ ((b_q * self.a) @ b_k.transpose(0, 2, 1))
        return self._y_q @ self._x_k.transpose(0, 2, 1)  # Z = a Q K^T

    def gradient(self, g: np.ndarray):
        """Take ``g`` = n dL/dZ."""
        if not self.layer_norm:
            x, n = self.x, self.x.shape[0]
            s = (self.x_t @ (g @ x)) * (self.a / n)  # dL/dA_Q = S A_K, dL/dA_K = S^T A_Q
            grad_q, grad_k = s @ self.b_k, s.transpose(0, 2, 1) @ self.b_q
        else:
            grad_q, grad_k = _layer_norm_gradients(
                self._x_q, self._x_k, self._y_q, g, self.b_q, self.b_k, self.a, self.d_k
            )
            grad_q, grad_k = grad_q @ self.projection, grad_k @ self.projection  # dL/dB P
        self._grads = grad_q, grad_k

    def gradient_norm(self) -> np.ndarray:
        """||dL/dW_Q||_F of every run, at the gradient taken (the basis is orthonormal)."""
        return np.sqrt(np.sum(self._grads[0] ** 2, axis=(1, 2)))

    def step(self):
        grad_q, grad_k = self._grads  # B - eta dL/dA stays in P's range: P^2 = P
        self.b_q, self.b_k = self.b_q - self.eta * grad_q, self.b_k - self.eta * grad_k


def _row_sigmas(x, b, d_k):
    """The layer norm's sigma of every row of X W, (b, n, 1), from the coordinates B of
    W's centred part: ``|x_i B|^2 / d_k + eps = x_i (B B^T) x_i / d_k + eps``."""
    squares = np.sum((x @ (b @ b.transpose(0, 2, 1))) * x, axis=-1, keepdims=True)
    return np.sqrt(squares / d_k + LAYER_NORM_EPS)


def _layer_norm_gradients(x_q, x_k, y_q, g, b_q, b_k, c, d_k):
    """dL/dB_Q and dL/dB_K under the layer norm, from ``g`` = n dL/dZ.

    With the rows of X scaled by the layer norm's 1/s (queries: ``x_q``, keys:
    ``x_k``), Z = c X_q C X_k^T (c holding 1/T) and ``y_q`` = c X_q C. The layer
    norm's backward pass, dL/du_i = (h_i - q_i (q_i . h_i) / d_k) / s_i for u_i =
    x_i B_Q and h_i = dL/dq_i, sums to

        dL/dB_Q = c X_q^T G X_k B_K - X^T diag(w / (d_k s^2)) X B_Q,

    with G = dL/dZ and w_i = q_i . h_i = sum_j G_ij Z_ij = y_q,i . (G X_k)_i; the
    keys' likewise with G^T. All of it d_model x d_model but three n x n products.
    """
    n = x_q.shape[1]
    g = g / n  # dL/dZ
    g_x = g @ x_k  # G X_k
    g_y = g.transpose(0, 2, 1) @ y_q  # G^T Y_q
    s = x_q.transpose(0, 2, 1) @ g_x  # X_q^T G X_k
    w_q = np.sum(y_q * g_x, axis=-1, keepdims=True)  # sum_j G_ij Z_ij
    w_k = np.sum(x_k * g_y, axis=-1, keepdims=True)  # sum_i G_ij Z_ij
    r_q = (x_q * (w_q / d_k)).transpose(0, 2, 1) @ x_q  # X^T diag(w / (d_k s^2)) X
    r_k = (x_k * (w_k / d_k)).transpose(0, 2, 1) @ x_k
    grad_q = c * (s @ b_k) - r_q @ b_q
    grad_k = c * (s.transpose(0, 2, 1) @ b_q) - r_k @ b_k
    return grad_q, grad_k


def run_groups(settings, x, starts, rules, learning_rates, gram=True) -> list:
    """The runs from ``starts`` under ``rules`` at ``learning_rates`` (one of each per run;
    the runs of one draw share its ``Start``) in groups of one kind, each with the
    indices of its runs: on the Gram matrices for every rule but QK-norm at d_k from
    2 d_model on (``gram``; else, as QK-norm, at small d_k and as the reference, in a
    basis of the rows' span). ``settings``: the power rule's alpha and the temperature."""
    d_k = np.array([start.d_k for start in starts])
    c = [scale_factor(rule, d, settings.alpha) for rule, d in zip(rules, d_k, strict=True)]
    a = np.array(c) / settings.temperature  # dz/d(q . k) = c / T
    normed = np.array([rule == "qk_norm" for rule in rules])
    # The Grams of W_Q and W_K are exact only while [W_Q; W_K] has full rank 2m: with
    # fewer columns the rounding of their updates leaves them a little weight off the
    # rows' span, which the descent can grow (measured at d_k = 2: a run parts from
    # the basis form by 1 within 120 steps where a nudged start parts by 1e-9 only).
    wide = np.array([start.d_k >= 2 * start.d_model for start in starts])
    on_grams = ~normed & wide if gram else np.zeros_like(normed)
    eta = np.asarray(learning_rates, dtype=float)
    groups = []
    for kind, chosen in (
        ("gram", on_grams),
        ("basis", ~normed & ~on_grams),
        ("layer norm", normed),
    ):
        runs = np.flatnonzero(chosen)
        if not runs.size:
            continue
        made = [starts[i].grams if kind == "gram" else starts[i].coordinates for i in runs]
        stacked = [np.stack(c) for c in zip(*made, strict=True)]
        if kind == "gram":
            group = GramRuns(x, stacked, a[runs], eta[runs])
        else:
            group = BasisRuns(x, stacked, a[runs], eta[runs], d_k[runs], kind == "layer norm")
        groups.append((runs, group))
    return groups


def descend(settings, x, starts, rules, steps, learning_rates, every_step=True, gram=True):
    """Gradient descent for every (start, rule, learning rate) run, batched (``run_groups``);
    the recorded curves.

    A generator: yields after each step, then returns ``{name: (runs, steps + 1)}``
    (loss, accuracy, max_weight, grad_norm); with ``every_step`` false, only the loss
    and the accuracy before the first step and after the last, ``{name: (runs, 2)}``.
    """
    groups = run_groups(settings, x, starts, rules, learning_rates, gram)
    n = x.shape[0]
    kept = steps + 1 if every_step else 2  # the steps recorded: every one, or the ends
    loss, grad_norm = np.empty((2, kept, len(starts)))
    row_max = np.empty((kept, len(starts), n))
    found = np.empty((kept, len(starts), n), dtype=bool)
    for step in range(steps + 1):
        at = step if every_step else min(step, 1)  # the last step overwrites the second
        recorded = every_step or step in (0, steps)
        for runs, group in groups:
            z = group.logits()
            if recorded:
                found[at, runs] = finds_itself(z)
            losses, largest, g = softmax_terms(z)
            group.gradient(g)
            if recorded:
                loss[at, runs], row_max[at, runs] = losses, largest
                grad_norm[at, runs] = group.gradient_norm()
            if step < steps:
                group.step()
        yield
    curves = {
        "loss": loss,
        "accuracy": np.mean(found, axis=-1),
        "max_weight": np.median(row_max, axis=-1),
        "grad_norm": grad_norm,
    }
    return {name: values.T for name, values in curves.items()}
