"""Does the scaling rule change learning? A small, exact training run.

Self-retrieval, the matching step of an induction or copy head: each of n
tokens must attend to itself among all n. From one seeded draw,

    X ~ N(0, 1)^(n x d_model),  W_Q, W_K ~ N(0, variance / d_model)^(d_model x d_k)

(so every query and key component has variance ``variance``, as in the rest
of the simulation), the forward pass is

    Q = X W_Q,  K = X W_K         (layer-normalised rows, no gain, under qk_norm)
    Z = c Q K^T / T,  P = softmax(Z) row-wise,
    L = 1/(2n) sum_i ||P_i - e_i||^2,

the squared error of the attention output when the values are the tokens'
one-hot indices. Full-batch gradient descent on W_Q and W_K, one learning
rate for every rule, from the same draw.

Why squared error on the output and not cross-entropy on the weights: the
gradient of -log p_target with respect to the logits is p - y, which does not
vanish when the softmax saturates (the log undoes the exp); the squared error
passes through the softmax Jacobian, as any loss downstream of attention does.

Exact and cheap in any d_k: every gradient step adds to W_Q and W_K rows in
the span of their initial rows (and, under the layer norm, of the all-ones
vector). With B an orthonormal basis of that span (r <= 2 d_model + 1 rows),
W = A B and everything is computed on the d_model x r coordinates A: Q K^T =
X A_Q A_K^T X^T, the layer norm's mean and variance are inner products with
the coordinates of the all-ones vector, and ||dL/dW_Q||_F = ||dL/dA_Q||_F.
Runs are batched over rules (and over d_k in ``training_sweep``).
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from app.simulation import LAYER_NORM_EPS, SCALING_RULES, Settings, scale_factor

DEFAULT_STEPS = 200
DEFAULT_LEARNING_RATE = 2.0
DEFAULT_D_MODEL = 16
# The page trains on at most this many tokens: each step costs n^2 per rule and d_k,
# and at 64 the runs at every d_k take about 2.2 s in a browser.
PAGE_TOKENS = 64
# Inclusive bounds of train's arguments.
BOUNDS = {"steps": (1, 5000), "learning_rate": (1e-4, 1e4), "d_model": (1, 256)}

# The experiment, as the page shows it.
TRAINING_LOSS_TEX = r"L = \tfrac{1}{2n}\textstyle\sum_i \|p_i - e_i\|^2"
GRADIENT_STEP_TEX = r"W \leftarrow W - \eta\, \partial L/\partial W"
ACCURACY_TEX = r"\tfrac{1}{n}\,\#\{i : \arg\max_j p_{ij} = i\}"


@dataclass(frozen=True)
class TrainingRun:
    """One rule's training curves and the initial draw they start from.

    Attributes
    ----------
    loss, accuracy, max_weight, grad_norm : ndarray, shape (steps + 1,)
        At index s, after s updates: the loss, the share of rows whose largest
        weight is on their own token, the median over rows of the largest
        weight, and ``||dL/dW_Q||_F``.
    x : ndarray, shape (n, d_model)
    w_q, w_k : ndarray, shape (d_model, d_k)
        The initial arrays (the same for every rule), to replay the run elsewhere.
    """

    loss: np.ndarray
    accuracy: np.ndarray
    max_weight: np.ndarray
    grad_norm: np.ndarray
    x: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray

    @property
    def kept(self) -> float:
        """The share of its starting loss the run ends with (0 for a run that starts at
        0: a few tokens, each already all its own weight)."""
        start = float(self.loss[0])
        return float(self.loss[-1]) / start if start > 0 else 0.0


def initial_draw(settings: Settings, d_model: int = DEFAULT_D_MODEL):
    """``X``, ``W_Q``, ``W_K`` from ``default_rng(settings.seed)``, in that order."""
    rng = np.random.default_rng(settings.seed)
    x = rng.standard_normal((settings.n_keys, d_model))
    sd = math.sqrt(settings.variance / d_model)
    w_q = sd * rng.standard_normal((d_model, settings.d_k))
    w_k = sd * rng.standard_normal((d_model, settings.d_k))
    return x, w_q, w_k


def train(
    settings: Settings,
    steps: int = DEFAULT_STEPS,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    d_model: int = DEFAULT_D_MODEL,
) -> dict[str, TrainingRun]:
    """Train the same initial model under every scaling rule.

    Parameters
    ----------
    settings : Settings
        d_k, variance, n_keys (the number of tokens n), temperature and seed;
        its scaling rule only says which run the page highlights.
    steps : int
        Gradient steps, 1 to 5000.
    learning_rate : float
        The step size, shared by every rule, 1e-4 to 1e4.
    d_model : int
        Width of the tokens, 1 to 256.

    Returns
    -------
    dict of str to TrainingRun
        Keyed by every rule in ``SCALING_RULES``.

    Raises
    ------
    ValueError
        Naming the argument, the value received and what is allowed.
    """
    return training_sweep(settings, [settings.d_k], steps, learning_rate, d_model)[settings.d_k]


def training_sweep(
    settings: Settings,
    d_ks,
    steps: int = DEFAULT_STEPS,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    d_model: int = DEFAULT_D_MODEL,
) -> dict[int, dict[str, TrainingRun]]:
    """``train`` at every d_k of ``d_ks``, all in one batch.

    Each d_k trains from its own draw with ``settings.seed``, the one ``train``
    makes at that d_k, so ``training_sweep(s, d_ks)[d] == train(s with d_k=d)``.
    Arguments as for ``train``; returns ``{d_k: {rule: TrainingRun}}``.
    """
    steps_left = training_steps(settings, d_ks, steps, learning_rate, d_model)
    while True:
        try:
            next(steps_left)
        except StopIteration as done:
            return done.value


def training_steps(
    settings: Settings,
    d_ks,
    steps: int = DEFAULT_STEPS,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    d_model: int = DEFAULT_D_MODEL,
):
    """``training_sweep`` one step at a time: a generator that yields after each step
    of descent and returns ``training_sweep``'s result (as ``StopIteration.value``).

    A caller that cannot use a thread (the page in the browser) lets other work
    run between steps, and stops a sweep it no longer needs by dropping it.
    """
    steps, learning_rate, d_model = _checked(steps, learning_rate, d_model)
    draws, rules, x = [], [], None
    for d_k in d_ks:
        x, w_q, w_k = initial_draw(replace(settings, d_k=int(d_k)), d_model)
        draws += [(w_q, w_k)] * len(SCALING_RULES)  # one tuple, shared by the rules
        rules += list(SCALING_RULES)
    curves = yield from _descend(settings, x, draws, rules, steps, learning_rate)
    runs = [
        TrainingRun(**{name: values[i] for name, values in curves.items()}, x=x, w_q=w_q, w_k=w_k)
        for i, (w_q, w_k) in enumerate(draws)
    ]
    width = len(SCALING_RULES)
    return {
        int(d_k): dict(zip(SCALING_RULES, runs[j * width : (j + 1) * width], strict=True))
        for j, d_k in enumerate(d_ks)
    }


def _checked(steps, learning_rate, d_model):
    for name, value in (("steps", steps), ("learning_rate", learning_rate), ("d_model", d_model)):
        low, high = BOUNDS[name]
        integer = name != "learning_rate"
        kind = "an integer" if integer else "a finite number"
        numeric = int | np.integer if integer else int | float | np.integer | np.floating
        ok = isinstance(value, numeric) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{name} must be {kind} from {low:g} to {high:g}; got {value!r}")
    return int(steps), float(learning_rate), int(d_model)


def _coordinates(w_q, w_k):
    """``A_Q``, ``A_K`` and the all-ones vector's coordinates in an orthonormal basis of
    the rows of ``W_Q``, ``W_K`` and the all-ones vector, padded to ``2 d_model + 1``."""
    d_model, d_k = w_q.shape
    ones = np.ones((1, d_k))
    basis = np.linalg.qr(np.vstack([w_q, w_k, ones]).T)[0]  # (d_k, r), r = min(d_k, 2m+1)
    width = 2 * d_model + 1
    pad = ((0, 0), (0, width - basis.shape[1]))
    return np.pad(w_q @ basis, pad), np.pad(w_k @ basis, pad), np.pad(ones @ basis, pad)[0]


def _layer_norm(v, ones, d_k):
    """Rows of ``v`` (coordinates) layer-normalised over the d_k full components."""
    mean = (v @ ones) / d_k  # (b, n, 1): v . 1 / d_k
    centred = v - mean * ones.transpose(0, 2, 1)
    sigma = np.sqrt(np.sum(centred**2, axis=-1, keepdims=True) / d_k + LAYER_NORM_EPS)
    return centred / sigma, sigma


def _layer_norm_backward(grad, normed, sigma, ones, d_k):
    """dL/dv from dL/dy for y = layer_norm(v): (dy - mean(dy) - y mean(dy y)) / sigma."""
    mean_grad = (grad @ ones) / d_k
    mean_grad_y = np.sum(grad * normed, axis=-1, keepdims=True) / d_k
    return (grad - mean_grad * ones.transpose(0, 2, 1) - normed * mean_grad_y) / sigma


def _descend(settings, x, draws, rules, steps, learning_rate):
    """Gradient descent for every (draw, rule) pair, batched; the recorded curves.

    The runs without a layer norm carry only M = c A_Q A_K^T / T between X and X^T
    (d_model x d_model); those with it carry Q and K in coordinates (n x r). Each
    group is one batch. A generator: yields after each step, then returns
    ``{name: (runs, steps + 1)}``.
    """
    bases = {}  # the rules of one d_k share its draw (one tuple): one basis per draw
    for draw in draws:
        if id(draw) not in bases:
            bases[id(draw)] = _coordinates(*draw)
    a_q, a_k, ones = (np.stack(c) for c in zip(*(bases[id(d)] for d in draws), strict=True))
    ones = ones[:, :, None]  # (b, r, 1)
    d_k = np.array([w_q.shape[1] for w_q, _ in draws], dtype=float)[:, None, None]
    scale = [
        scale_factor(rule, w_q.shape[1], settings.alpha)
        for rule, (w_q, _) in zip(rules, draws, strict=True)
    ]
    c = np.array(scale)[:, None, None] / settings.temperature  # dz/d(q . k) = c / T
    normed = np.array([rule == "qk_norm" for rule in rules])
    groups = [
        [runs, layer_norm, a_q[runs], a_k[runs], c[runs], ones[runs], d_k[runs]]
        for layer_norm, runs in ((False, np.flatnonzero(~normed)), (True, np.flatnonzero(normed)))
        if runs.size
    ]
    n = x.shape[0]
    x_t, diagonal = x.T, np.arange(n)
    loss, grad_norm = np.empty((2, steps + 1, len(draws)))
    row_max = np.empty((steps + 1, len(draws), n))
    row_top = np.empty((steps + 1, len(draws), n), dtype=int)
    for step in range(steps + 1):
        for group in groups:
            runs, layer_norm, a_q, a_k, c, ones, d_k = group
            if layer_norm:
                q, q_sigma = _layer_norm(x @ a_q, ones, d_k)  # Q = LN(X W_Q), in coordinates
                k, k_sigma = _layer_norm(x @ a_k, ones, d_k)
                z = (q * c) @ k.transpose(0, 2, 1)  # Z = c Q K^T / T
            else:
                z = x @ ((a_q * c) @ a_k.transpose(0, 2, 1)) @ x_t  # Z = X (c W_Q W_K^T / T) X^T
            top = z.argmax(axis=-1)[..., None]
            z -= np.take_along_axis(z, top, axis=-1)
            p = np.exp(z, out=z)
            total = p.sum(axis=-1, keepdims=True)
            p /= total  # P = softmax(Z); the largest weight of a row is 1 / total
            # n dL/dZ = J^T (P - I) row by row, J = diag(p) - p p^T:
            # p_j (p_j - 1[j=i]) - p_j r_i with r_i = sum_j p_j (p_j - 1[j=i]).
            p_ii = p[:, diagonal, diagonal]
            p_sq = np.sum(p * p, axis=-1)
            g = p * (p - (p_sq - p_ii)[..., None])
            g[:, diagonal, diagonal] -= p_ii
            if layer_norm:
                grad_q = _layer_norm_backward((g @ k) * (c / n), q, q_sigma, ones, d_k)
                grad_k = _layer_norm_backward(
                    (g.transpose(0, 2, 1) @ q) * (c / n), k, k_sigma, ones, d_k
                )
                grad_a_q, grad_a_k = x_t @ grad_q, x_t @ grad_k
            else:
                s = (x_t @ g @ x) * (c / n)  # dL/dA_Q = S A_K, dL/dA_K = S^T A_Q
                grad_a_q, grad_a_k = s @ a_k, s.transpose(0, 2, 1) @ a_q
            # L = 1/(2n) sum_i (sum_{j != i} p_ij^2 + (1 - p_ii)^2)
            loss[step, runs] = np.sum(p_sq - p_ii**2 + (1.0 - p_ii) ** 2, axis=-1) / (2 * n)
            row_max[step, runs], row_top[step, runs] = 1.0 / total[..., 0], top[..., 0]
            # ||dL/dW_Q||_F = ||dL/dA_Q||_F: the basis is orthonormal
            grad_norm[step, runs] = np.sqrt(np.sum(grad_a_q**2, axis=(1, 2)))
            if step < steps:
                group[2] = a_q - learning_rate * grad_a_q
                group[3] = a_k - learning_rate * grad_a_k
        yield
    curves = {
        "loss": loss,
        "accuracy": np.mean(row_top == diagonal, axis=-1),
        "max_weight": np.median(row_max, axis=-1),
        "grad_norm": grad_norm,
    }
    return {name: values.T for name, values in curves.items()}
