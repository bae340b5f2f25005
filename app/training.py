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
# The learning-rate sweep (learning_rate_sweep): a 1-2-5 grid over four decades, and the
# d_k of its curves.
SWEEP_LEARNING_RATES = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0)
SWEEP_D_KS = (4, 16, 64, 256, 1024)

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
    return _to_end(training_steps(settings, d_ks, steps, learning_rate, d_model))


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
    learning_rates = np.full(len(draws), learning_rate)
    curves = yield from _descend(settings, x, draws, rules, steps, learning_rates)
    runs = [
        TrainingRun(**{name: values[i] for name, values in curves.items()}, x=x, w_q=w_q, w_k=w_k)
        for i, (w_q, w_k) in enumerate(draws)
    ]
    width = len(SCALING_RULES)
    return {
        int(d_k): dict(zip(SCALING_RULES, runs[j * width : (j + 1) * width], strict=True))
        for j, d_k in enumerate(d_ks)
    }


@dataclass(frozen=True)
class LearningRateSweep:
    """Every rule trained at every learning rate at every d_k, each from the draw ``train``
    makes at that d_k: its loss before and after, and its accuracy after.

    Attributes
    ----------
    learning_rates : ndarray, shape (etas,)
    d_ks : ndarray, shape (d_ks,)
    start : dict of str to ndarray, shape (d_ks,)
        Each rule's loss before the first step (the same at every learning rate).
    loss, accuracy : dict of str to ndarray, shape (d_ks, etas)
        Each rule's loss and share of tokens that find themselves after training.
    """

    learning_rates: np.ndarray
    d_ks: np.ndarray
    start: dict
    loss: dict
    accuracy: dict

    def best(self, rule: str) -> tuple[np.ndarray, np.ndarray]:
        """``rule``'s lowest loss over the learning rates at each d_k, and where it is
        (the smallest such learning rate in a tie), each of shape (d_ks,)."""
        at = np.argmin(self.loss[rule], axis=-1)
        return self.loss[rule][np.arange(len(self.d_ks)), at], self.learning_rates[at]


def learning_rate_sweep(
    settings: Settings,
    d_ks=SWEEP_D_KS,
    learning_rates=SWEEP_LEARNING_RATES,
    steps: int = DEFAULT_STEPS,
    d_model: int = DEFAULT_D_MODEL,
) -> LearningRateSweep:
    """``train`` at every d_k of ``d_ks`` and learning rate of ``learning_rates``, for
    every rule: what the learning rate does, and where each rule's best one sits.

    ``learning_rate_sweep(s, ...).loss[rule][i, j]`` is ``train(s with d_k = d_ks[i],
    steps, learning_rates[j]))[rule].loss[-1]``. The runs of one d_k are one batch.
    """
    return _to_end(learning_rate_steps(settings, d_ks, learning_rates, steps, d_model))


def learning_rate_steps(
    settings: Settings,
    d_ks=SWEEP_D_KS,
    learning_rates=SWEEP_LEARNING_RATES,
    steps: int = DEFAULT_STEPS,
    d_model: int = DEFAULT_D_MODEL,
):
    """``learning_rate_sweep`` one step at a time: a generator that yields, after each
    step of descent, how many runs are done, and returns the sweep (as
    ``StopIteration.value``). One d_k at a time: its rules times learning rates."""
    etas = np.array([_checked(steps, eta, d_model)[1] for eta in learning_rates])
    steps, _, d_model = _checked(steps, float(etas[0]), d_model)
    rules = [rule for rule in SCALING_RULES for _ in etas]
    start, loss, accuracy = ({rule: [] for rule in SCALING_RULES} for _ in range(3))
    for i, d_k in enumerate(d_ks):
        x, w_q, w_k = initial_draw(replace(settings, d_k=int(d_k)), d_model)
        draws = [(w_q, w_k)] * len(rules)  # one tuple, shared: one basis
        ends = _descend(settings, x, draws, rules, steps, np.tile(etas, len(SCALING_RULES)), False)
        curves = yield from _telling(ends, i * len(rules))
        for j, rule in enumerate(SCALING_RULES):
            runs = slice(j * len(etas), (j + 1) * len(etas))
            start[rule].append(curves["loss"][runs][0, 0])
            loss[rule].append(curves["loss"][runs][:, -1])
            accuracy[rule].append(curves["accuracy"][runs][:, -1])
    return LearningRateSweep(
        etas,
        np.array(d_ks, dtype=int),
        {rule: np.array(v) for rule, v in start.items()},
        {rule: np.array(v) for rule, v in loss.items()},
        {rule: np.array(v) for rule, v in accuracy.items()},
    )


def _to_end(steps):
    """Run the generator ``steps`` to its end; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _telling(steps, told):
    """The generator ``steps``, yielding ``told`` wherever it yields; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        yield told


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


def _descend(settings, x, draws, rules, steps, learning_rates, every_step=True):
    """Gradient descent for every (draw, rule, learning rate) run, batched; the recorded
    curves.

    Every run carries the coordinates B_Q, B_K (d_model x r) of W_Q, W_K; under the
    layer norm their centred parts, B = A P with P = I - o o^T / d_k the projection
    off the all-ones vector's coordinates o (the gradient steps keep B in P's range).
    Everything else is d_model x d_model: with C = B_Q B_K^T, the logits are
    Z = c X C X^T / T without the layer norm, and Z_ij = c x_i C x_j / (T s_i t_j)
    with it, s_i^2 = x_i B_Q B_Q^T x_i / d_k + eps (and t for the keys) the layer
    norm's variances. Each group of runs (with or without the layer norm) is one
    batch. A generator: yields after each step, then returns ``{name: (runs, steps +
    1)}``; with ``every_step`` false, only the loss and the accuracy before the first
    step and after the last, ``{name: (runs, 2)}``.
    """
    bases = {}  # the rules of one d_k share its draw (one tuple): one basis per draw
    for draw in draws:
        if id(draw) not in bases:
            bases[id(draw)] = _coordinates(*draw)
    b_q, b_k, ones = (np.stack(c) for c in zip(*(bases[id(d)] for d in draws), strict=True))
    d_k = np.array([w_q.shape[1] for w_q, _ in draws], dtype=float)[:, None, None]
    scale = [
        scale_factor(rule, w_q.shape[1], settings.alpha)
        for rule, (w_q, _) in zip(rules, draws, strict=True)
    ]
    c = np.array(scale)[:, None, None] / settings.temperature  # dz/d(q . k) = c / T
    normed = np.array([rule == "qk_norm" for rule in rules])
    groups = []
    for layer_norm, runs in ((False, np.flatnonzero(~normed)), (True, np.flatnonzero(normed))):
        if not runs.size:
            continue
        if layer_norm:  # P = I - o o^T / d_k, the layer norm's centring in coordinates
            o = ones[runs][:, :, None]
            projection = np.eye(o.shape[1]) - o @ o.transpose(0, 2, 1) / d_k[runs]
            b = b_q[runs] @ projection, b_k[runs] @ projection
        else:
            projection, b = None, (b_q[runs], b_k[runs])
        groups.append([runs, projection, *b, c[runs], d_k[runs]])
    n = x.shape[0]
    x_t, diagonal = x.T, np.arange(n)
    kept = steps + 1 if every_step else 2  # the steps recorded: every one, or the ends
    loss, grad_norm = np.empty((2, kept, len(draws)))
    row_max = np.empty((kept, len(draws), n))
    row_top = np.empty((kept, len(draws), n), dtype=int)
    eta = learning_rates[:, None, None]
    for step in range(steps + 1):
        at = step if every_step else min(step, 1)  # the last step overwrites the second
        recorded = every_step or step in (0, steps)
        for group in groups:
            runs, projection, b_q, b_k, c, d_k = group
            if projection is None:
                z = x @ ((b_q * c) @ b_k.transpose(0, 2, 1)) @ x_t  # Z = X (c W_Q W_K^T / T) X^T
            else:  # the rows of X over the layer norm's sigma of each query and key row
                x_q, x_k = x / _row_sigmas(x, b_q, d_k), x / _row_sigmas(x, b_k, d_k)
                y_q = x_q @ ((b_q * c) @ b_k.transpose(0, 2, 1))
                z = y_q @ x_k.transpose(0, 2, 1)  # Z = c Q K^T / T
            if recorded:
                top = z.argmax(axis=-1)  # each row's top key, for the accuracy
            z -= z.max(axis=-1, keepdims=True)
            p = np.exp(z, out=z)
            total = p.sum(axis=-1, keepdims=True)
            p /= total  # P = softmax(Z); the largest weight of a row is 1 / total
            # n dL/dZ = J^T (P - I) row by row, J = diag(p) - p p^T:
            # p_j (p_j - 1[j=i]) - p_j r_i with r_i = sum_j p_j (p_j - 1[j=i]).
            p_ii = p[:, diagonal, diagonal]
            p_sq = np.einsum("bij,bij->bi", p, p)
            g = p - (p_sq - p_ii)[..., None]
            g *= p
            g[:, diagonal, diagonal] -= p_ii
            if projection is None:
                s = (x_t @ g @ x) * (c / n)  # dL/dA_Q = S A_K, dL/dA_K = S^T A_Q
                grad_q, grad_k = s @ b_k, s.transpose(0, 2, 1) @ b_q
            else:
                grad_q, grad_k = _layer_norm_gradients(x_q, x_k, y_q, g, b_q, b_k, c, d_k)
                grad_q, grad_k = grad_q @ projection, grad_k @ projection  # dL/dA = dL/dB P
            if recorded:
                # L = 1/(2n) sum_i (sum_{j != i} p_ij^2 + (1 - p_ii)^2)
                loss[at, runs] = np.sum(p_sq - p_ii**2 + (1.0 - p_ii) ** 2, axis=-1) / (2 * n)
                row_max[at, runs], row_top[at, runs] = 1.0 / total[..., 0], top
                # ||dL/dW_Q||_F = ||dL/dA_Q||_F: the basis is orthonormal
                grad_norm[at, runs] = np.sqrt(np.sum(grad_q**2, axis=(1, 2)))
            if step < steps:  # B - eta dL/dA stays in P's range: dL/dA = dL/dB P, P^2 = P
                group[2] = b_q - eta[runs] * grad_q
                group[3] = b_k - eta[runs] * grad_k
        yield
    curves = {
        "loss": loss,
        "accuracy": np.mean(row_top == diagonal, axis=-1),
        "max_weight": np.median(row_max, axis=-1),
        "grad_norm": grad_norm,
    }
    return {name: values.T for name, values in curves.items()}
