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

Exact and cheap in any d_k (``app.descent``): every rule but QK-norm is carried
on the d_model-sized Gram matrices W_Q W_Q^T, W_K W_K^T and W_Q W_K^T, QK-norm
on the coordinates of W_Q and W_K in a basis of their rows' span. Runs are
batched over rules (and over d_k in ``training_sweep``).

Chaos: at large η, or without scaling at large d_k, the descent is chaotic: a
change of the start in its twelfth digit changes the loss within a few steps,
so its later digits depend on rounding (numpy's, the browser's). With
``twins``, every run is trained again from a start nudged by NUDGE
(``nudged``), and ``TrainingRun.chaotic_from`` says from which step on the two
differ by more than CHAOS_RTOL: from there the run's numbers are not to be
read to their last digits.
"""

import math
from dataclasses import dataclass

import numpy as np

from app.descent import Start, descend
from app.simulation import SCALING_RULES, Settings

DEFAULT_STEPS = 200
DEFAULT_LEARNING_RATE = 2.0
DEFAULT_D_MODEL = 16
# The page trains on at most this many tokens: each step costs n^2 per rule and d_k,
# and at 64 the runs at every d_k take about 2.2 s in a browser.
PAGE_TOKENS = 64
# Inclusive bounds of a TrainingConfig's numbers (÷ d_k's largest stable η grows as d_k: 5e5 at
# d_k = 2^16, app.rates).
BOUNDS = {"steps": (1, 5000), "learning_rate": (1e-4, 1e7), "d_model": (1, 256)}
# A twin run starts from W_Q nudged by this much (W_Q -> (I + NUDGE E) W_Q, E a fixed
# random m x m matrix of norm about 1); a run is chaotic from the step at which its
# loss and its twin's differ by more than CHAOS_RTOL, in the fourth digit (an
# amplification over 1e8). Short of that, the worker's and this machine's rounding
# (1e-16) move the loss by under 1e-8: the three digits the page prints hold.
NUDGE = 1e-12
CHAOS_RTOL = 1e-4

# The experiment, as the page shows it.
TRAINING_LOSS_TEX = r"L = \tfrac{1}{2n}\textstyle\sum_i \|p_i - e_i\|^2"
GRADIENT_STEP_TEX = r"W \leftarrow W - \eta\, \partial L/\partial W"
ACCURACY_TEX = r"\tfrac{1}{n}\,\#\{i : \arg\max_j p_{ij} = i\}"


def checked(steps, learning_rate, d_model):
    """A ``TrainingConfig``'s numbers, checked against BOUNDS (a ValueError names the one out
    of them)."""
    for name, value in (("steps", steps), ("learning_rate", learning_rate), ("d_model", d_model)):
        low, high = BOUNDS[name]
        integer = name != "learning_rate"
        kind = "an integer" if integer else "a finite number"
        numeric = int | np.integer if integer else int | float | np.integer | np.floating
        ok = isinstance(value, numeric) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{name} must be {kind} from {low:g} to {high:g}; got {value!r}")
    return int(steps), float(learning_rate), int(d_model)


@dataclass(frozen=True)
class TrainingConfig:
    """How the model is trained: the same for every rule, and every d_k of a sweep.

    Parameters
    ----------
    steps : int
        Gradient steps, 1 to 5000.
    learning_rate : float
        The step size η, shared by every rule, 1e-4 to 1e7.
    d_model : int
        Width of the tokens, 1 to 256.
    twins : bool
        Also train every run from a nudged start, to tell which are chaotic
        (``TrainingRun.chaotic_from``); twice the work.

    Raises
    ------
    ValueError
        Naming the field, the value received and what is allowed (BOUNDS).
    """

    steps: int = DEFAULT_STEPS
    learning_rate: float = DEFAULT_LEARNING_RATE
    d_model: int = DEFAULT_D_MODEL
    twins: bool = False

    def __post_init__(self):
        steps, learning_rate, d_model = checked(self.steps, self.learning_rate, self.d_model)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "learning_rate", learning_rate)
        object.__setattr__(self, "d_model", d_model)


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
    chaotic_from : int or None
        The first step at which a twin run from a nudged start (``twins``) ends
        at a loss more than CHAOS_RTOL away; None if it never does, or if no twin
        was run.
    twin : TrainingRun or None
        That twin run (``twins``), from W_Q nudged by ``nudged``.
    """

    loss: np.ndarray
    accuracy: np.ndarray
    max_weight: np.ndarray
    grad_norm: np.ndarray
    x: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray
    chaotic_from: int | None = None
    twin: "TrainingRun | None" = None

    @property
    def kept(self) -> float:
        """The share of its starting loss the run ends with (0 for a run that starts at
        0: a few tokens, each already all its own weight)."""
        start = float(self.loss[0])
        return float(self.loss[-1]) / start if start > 0 else 0.0

    @property
    def chaotic(self) -> bool:
        """Whether its end depends on rounding (``chaotic_from`` is a step)."""
        return self.chaotic_from is not None


def initial_draw(settings: Settings, d_model: int = DEFAULT_D_MODEL, d_k: int | None = None):
    """``X``, ``W_Q``, ``W_K`` from ``default_rng(settings.seed)``, in that order, at
    ``settings.d_k`` or at ``d_k`` (any d_k: ``app.rates`` draws far past the slider)."""
    d_k = settings.d_k if d_k is None else int(d_k)
    rng = np.random.default_rng(settings.seed)
    x = rng.standard_normal((settings.n_keys, d_model))
    sd = math.sqrt(settings.variance / d_model)
    w_q = sd * rng.standard_normal((d_model, d_k))
    w_k = sd * rng.standard_normal((d_model, d_k))
    return x, w_q, w_k


def nudged(w_q: np.ndarray) -> np.ndarray:
    """``W_Q`` nudged by NUDGE in a fixed random direction of the rows' space: (I + NUDGE
    E) W_Q, E ~ N(0, 1/m)^(m x m) from a fixed seed (not a scaling of W_Q)."""
    m = w_q.shape[0]
    e = np.random.default_rng(1729).standard_normal((m, m)) / math.sqrt(m)
    return (np.eye(m) + NUDGE * e) @ w_q


def train(
    settings: Settings, training: TrainingConfig = TrainingConfig()
) -> dict[str, TrainingRun]:
    """Train the same initial model under every scaling rule.

    Parameters
    ----------
    settings : Settings
        d_k, variance, n_keys (the number of tokens n), temperature and seed;
        its scaling rule only says which run the page highlights.
    training : TrainingConfig
        Steps, learning rate, d_model and whether to run twins.

    Returns
    -------
    dict of str to TrainingRun
        Keyed by every rule in ``SCALING_RULES``.
    """
    return training_sweep(settings, [settings.d_k], training)[settings.d_k]


def training_sweep(
    settings: Settings, d_ks, training: TrainingConfig = TrainingConfig()
) -> dict[int, dict[str, TrainingRun]]:
    """``train`` at every d_k of ``d_ks``, all in one batch.

    Each d_k trains from its own draw with ``settings.seed``, the one ``train``
    makes at that d_k, so ``training_sweep(s, d_ks)[d] == train(s with d_k=d)``.
    Returns ``{d_k: {rule: TrainingRun}}``.
    """
    return to_end(training_steps(settings, d_ks, training))


def training_steps(settings: Settings, d_ks, training: TrainingConfig = TrainingConfig()):
    """``training_sweep`` one step at a time: a generator that yields after each step
    of descent and returns ``training_sweep``'s result (as ``StopIteration.value``).

    A caller that cannot use a thread (the page in the browser) lets other work
    run between steps, and stops a sweep it no longer needs by dropping it.
    """
    twins = training.twins
    starts, rules, x = [], [], None
    for d_k in d_ks:
        x, w_q, w_k = initial_draw(settings, training.d_model, d_k)
        for start in [Start(w_q, w_k)] + [Start(nudged(w_q), w_k)] * twins:
            starts += [start] * len(SCALING_RULES)  # one start, shared by its rules
            rules += list(SCALING_RULES)
    learning_rates = np.full(len(starts), training.learning_rate)
    curves = yield from descend(settings, x, starts, rules, training.steps, learning_rates)
    width = len(SCALING_RULES) * (1 + twins)
    result = {}
    for j, d_k in enumerate(d_ks):
        result[int(d_k)] = {}
        for k, rule in enumerate(SCALING_RULES):
            i = j * width + k
            w_q, w_k = starts[i].w_q, starts[i].w_k
            run = {name: values[i] for name, values in curves.items()}
            twin = None
            if twins:
                t = i + len(SCALING_RULES)  # its twin, from the nudged start
                twin = {name: values[t] for name, values in curves.items()}
                twin = TrainingRun(**twin, x=x, w_q=starts[t].w_q, w_k=w_k)
            result[int(d_k)][rule] = TrainingRun(
                **run, x=x, w_q=w_q, w_k=w_k, chaotic_from=parting(run, twin), twin=twin
            )
    return result


def parting(run: dict, twin: "TrainingRun | None") -> int | None:
    """The first step at which ``twin``'s loss is more than CHAOS_RTOL from ``run``'s
    (None: never, or no twin)."""
    if twin is None:
        return None
    loss = run["loss"]
    apart = np.abs(twin.loss - loss) > CHAOS_RTOL * np.abs(loss)
    return int(np.argmax(apart)) if apart.any() else None


def to_end(steps):
    """Run the generator ``steps`` to its end; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
