"""The learning rate each rule can take, far past the slider: its edge of stability.

``app.training`` trains every rule at the slider's one η. Here every rule is
trained from the scenario's draw at many η, at d_k up to 2^16: the runs need
d_model-sized Gram matrices only (``app.descent``), so a large d_k costs no
more than a small one.

- **The curves**: the loss after DEFAULT_STEPS steps against η on a 1-2-5 grid
  (LEARNING_RATES) at CURVE_D_KS, one curve per d_k: the learning-rate transfer
  figure of Yang et al. (2022).
- **The edges**: at EDGE_D_KS, the largest η of a fixed grid (E12) at which a
  rule's descent still trains (ends below TRAINED of its starting loss), and
  the window of grid η around it, which train and which not (``edge_steps``);
  then, after the rest is shown, the holes under it and whether a nudge of 1e-12
  moves it (``check_steps``). Up to it the loss falls
  the further the larger η is; just above it the first steps overshoot, some
  rows saturate on a wrong key and stay there: the best η on any grid sits at
  the edge. Near it the descent is chaotic, and the η that train are not an
  interval: the window's holes.
- **The theory** of the edge, a smooth curve in d_k (``edge_theory``).

What sets the edge, and how the theory was found and checked: docs/theory.md,
"The learning rate a rule can take". Numpy only.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from app.descent import Start, descend, run_groups, softmax_terms
from app.simulation import SCALING_RULES, Settings, rule_exponent, scale_factor
from app.theory import logit_std
from app.training import DEFAULT_D_MODEL, DEFAULT_STEPS, initial_draw, nudged, to_end

# The edge, as the page writes it: its definition, and the theory's laws in d_k (lazy, rich).
EDGE_TEX = (
    r"\eta_{\mathrm{edge}} = \max\{\eta : L_{200} < 0.01\,L_0\},\qquad "
    r"\eta_{\mathrm{edge}} \approx h\,\frac{d_{\mathrm{model}}\,T^2}{c^2\,d_k\,v}"
    r"\ (\alpha \le \tfrac12),\qquad "
    r"\eta_{\mathrm{edge}} \approx k\,\frac{T\,d_k^{\alpha}}{\sigma^*}\ (\alpha > \tfrac12)"
)
LEARNING_RATES = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0)
CURVE_D_KS = (16, 256, 4096, 65536)
EDGE_D_KS = (8, 16, 64, 256, 1024, 4096, 16384, 65536)
# The rules whose edge is sought. Not QK-norm: the layer norm makes the logits blind to
# the scale of W, so a step too large grows the weights and so shrinks the steps after
# it; which η train under it is not an interval below an edge (docs/theory.md).
EDGE_RULES = tuple(rule for rule in SCALING_RULES if rule != "qk_norm")
# A run trains when it ends below this share of its starting loss: every row then
# retrieves its own token (one row lost costs 1/n of the loss, 3% of a 0.5 start at
# 64 tokens).
TRAINED = 0.01
# The search decides a run early (about 50 steps instead of 200): trained once its
# loss is below SURELY_TRAINED of the start; failed once, after PLATEAU_FROM steps,
# it is above TRAINED and has moved by less than PLATEAU of itself in PLATEAU_STEPS
# steps (rows stuck on a wrong key); or once it overshoots past OVERSHOOT of its start;
# or once, after HOPELESS_FROM steps, it is still above HOPELESS of its start (rows
# wandering between keys). Of the 1897 runs that trained among 7754 probes of five
# scenarios (seeds 0-2), none was ever above 1.46 of its start, nor above 0.51 at step
# 60. Against full runs it misjudges 1 of the 1296 runs of the windows of seeds 0-2
# (a row that leaves its plateau late; 17 with a plateau of 1e-3 instead of 1e-5):
# tests/test_rates.py.
SURELY_TRAINED = 0.005
PLATEAU_FROM, PLATEAU_STEPS, PLATEAU = 20, 10, 1e-5
OVERSHOOT = 1.75
HOPELESS_FROM, HOPELESS = 60, 0.8
# Every η the search runs lies on one fixed grid: the E12 series of preferred numbers
# (IEC 60063), twelve to a decade (steps of about 1.2), η_i = E12[i mod 12] 10^(i div 12),
# from SMALLEST_RATE (below it: the rule does not train at that d_k) to LARGEST_RATE
# (every η up to it trains: the edge is beyond, infinite here; a few tokens can take
# any step). An η's outcome is a fact of the grid, whichever search asked for it.
E12 = (1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2)
SMALLEST_RATE, LARGEST_RATE = 1e-3, 1e9
PROBES = (-4, -1, 1, 4)  # the first probes, in grid steps around a guess (4: about 2x)
# The window: near the edge the η that train are not an interval (isolated runs train
# up to 6.8 times above a failure, docs/theory.md), so once bracketed every grid η up
# to WINDOW_ABOVE steps over the largest that trains is run (11 steps, 8.2 times), and
# the window moves up while one there trains. The edge is the largest η of the grid
# that trains with none in the 8.2 times above it. The check after (``check_steps``)
# runs the WINDOW_BELOW steps under it too: the holes there.
WINDOW_BELOW, WINDOW_ABOVE = 4, 11
WINDOW_PROBES = 20  # probes a window takes, about: the search's and the window's own
# Probes run in batches of at most this many runs: a step of one (some 10 ms in a
# browser) is how long the page's next change may wait behind them.
EDGE_BATCH = 40

# μP scales a learning rate with width: ÷ d_k's η as η0 d_k / MUP_BASE_D_K (``mup_base``).
MUP_BASE_D_K = 16

# The theory (``edge_theory``): its constants, fitted to edges measured by bisection
# at d_model = 16, 64 tokens, v/T from 0.5 to 2, seeds 0-4 and d_k 8 to 2^24
# (docs/theory.md); it is drawn only where it was checked (THEORY_TOKENS, THEORY_V_T).
LAZY_H, LAZY_R, LAZY_S0 = 9.98, 7.59, 10.6
COLLAPSE_SPREAD = 11.5  # no η trains past this initial logit spread (n = 64, d_model = 16)
LINEAR_K = 1.06
THEORY_D_MODEL, THEORY_TOKENS, THEORY_V_T = 16, 64, (0.5, 2.0)
THEORY_D_KS = np.geomspace(EDGE_D_KS[0], EDGE_D_KS[-1], 64)
# kappa_1(X) is the logit-space curvature at these fixed starting kernels M = Xi / m
# (logits of spread about 1), averaged.
CURVATURE_SEEDS = ((0, 7), (0, 8), (0, 9))


@dataclass(frozen=True)
class LearningRates:
    """Every rule at every learning rate, far past the slider.

    Attributes
    ----------
    learning_rates : ndarray, shape (etas,)
    d_ks : ndarray, shape (curves,)
        CURVE_D_KS.
    start : dict of str to ndarray, shape (curves,)
        Each rule's loss before the first step (the same at every η).
    loss, accuracy : dict of str to ndarray, shape (curves, etas)
        Each rule's loss and share of tokens that find themselves after training.
    edge_d_ks : ndarray, shape (edges,)
        EDGE_D_KS.
    edge : dict of str to ndarray, shape (edges,)
        Each rule of EDGE_RULES: its largest η of the fixed grid that trains (with none
        in the 8.2 times above it); NaN where none does, infinite where every η up to
        LARGEST_RATE does.
    window : dict of str to tuple of Window, (edges,)
        Each rule's window at each d_k: the grid η run near the edge, and which train.
    chaotic : dict of str to ndarray of bool, shape (edges,), or None
        Whether a nudge of 1e-12 (W_Q as ``training.nudged``) moves the edge; None
        until checked (``check_steps``, after the rest is shown).
    theory : dict of str to ndarray, shape (THEORY_D_KS,)
        The theory of the edge (``edge_theory``); NaN where it predicts no training,
        and for QK-norm and scenarios it was not checked for (all NaN).
    """

    learning_rates: np.ndarray
    d_ks: np.ndarray
    start: dict
    loss: dict
    accuracy: dict
    edge_d_ks: np.ndarray
    edge: dict
    window: dict
    chaotic: dict | None
    theory: dict

    @property
    def checked(self) -> bool:
        """Whether the windows are checked (``check_steps``): their holes, their chaos."""
        return self.chaotic is not None

    def moved(self, rule: str) -> np.ndarray:
        """Whether a nudge of 1e-12 moves each of ``rule``'s edges: ``chaotic``, all
        false until checked and for a rule whose edge is not sought."""
        unknown = np.zeros(len(self.edge_d_ks), dtype=bool)
        return unknown if self.chaotic is None else self.chaotic.get(rule, unknown)

    def best(self, rule: str) -> tuple[np.ndarray, np.ndarray]:
        """``rule``'s lowest loss over the learning rates at each d_k of the curves, and
        where it is (the smallest such learning rate in a tie)."""
        at = np.argmin(self.loss[rule], axis=-1)
        return self.loss[rule][np.arange(len(self.d_ks)), at], self.learning_rates[at]


# --- the draws --------------------------------------------------------------------------


def drawn_rows(settings: Settings, d_k: int, d_model: int = DEFAULT_D_MODEL, nudge=False):
    """``initial_draw`` at ``d_k``, kept as the Gram matrix of the rows [W_Q; W_K; 1]: a
    generator that draws W a row at a time (the same numbers as ``initial_draw``: the
    generator fills W row after row), yielding between rows, and returns X and the
    ``Start`` of the runs. Small d_k are drawn whole. ``nudge``: from W_Q nudged as
    ``training.nudged`` does (a twin)."""
    if d_k < 2 * d_model + 1:  # the rows are dependent: the runs need W itself
        x, w_q, w_k = initial_draw(settings, d_model, d_k)
        return x, Start(nudged(w_q) if nudge else w_q, w_k)
    rng = np.random.default_rng(settings.seed)
    x = rng.standard_normal((settings.n_keys, d_model))
    sd = math.sqrt(settings.variance / d_model)
    rows = []
    for _ in range(2 * d_model):
        rows.append(sd * rng.standard_normal(d_k))
        yield
    rows.append(np.ones(d_k))
    if nudge:
        rows[:d_model] = list(nudged(np.array(rows[:d_model])))
    gram = np.empty((len(rows), len(rows)))
    for i, row in enumerate(rows):
        gram[i, : i + 1] = [row @ other for other in rows[: i + 1]]
        gram[: i + 1, i] = gram[i, : i + 1]
        yield
    return x, Start(gram=gram, d_k=d_k)


# --- the curves -------------------------------------------------------------------------


def curve_steps(settings, x, start, steps=DEFAULT_STEPS):
    """Every rule at every η of LEARNING_RATES from ``start``, one batch: a generator
    yielding after each step; returns (loss, accuracy), each {rule: (etas, 2)} (before
    the first step, after the last)."""
    rules = [rule for rule in SCALING_RULES for _ in LEARNING_RATES]
    etas = np.tile(LEARNING_RATES, len(SCALING_RULES))
    ends = yield from descend(
        settings, x, [start] * len(rules), rules, steps, etas, every_step=False
    )
    width = len(LEARNING_RATES)
    return tuple(
        {rule: ends[name][j * width : (j + 1) * width] for j, rule in enumerate(SCALING_RULES)}
        for name in ("loss", "accuracy")
    )


# --- the edges --------------------------------------------------------------------------


def trained_steps(settings, x, starts, rules, etas, steps=DEFAULT_STEPS):
    """Whether each run (one start, rule and η each) trains, decided as early as the
    module's constants allow: a generator yielding, after each step of the batch, how
    many runs are decided; returns a bool array."""
    groups = run_groups(settings, x, starts, rules, etas)
    count = len(starts)
    start_loss = np.full(count, np.nan)
    history = np.full((PLATEAU_STEPS, count), np.nan)  # the last steps' losses
    trained = np.zeros(count, dtype=bool)
    decided = 0
    for step in range(steps + 1):
        going_on = []
        for runs, group in groups:
            losses, _, g = softmax_terms(group.logits())
            if step == 0:
                start_loss[runs] = losses
            start = start_loss[runs]
            sure = losses < SURELY_TRAINED * start
            stuck = (
                (step >= PLATEAU_FROM)
                & (losses >= TRAINED * start)
                & (np.abs(losses - history[step % PLATEAU_STEPS, runs]) < PLATEAU * losses)
            )
            hopeless = (step >= HOPELESS_FROM) & (losses >= HOPELESS * start)
            failed = stuck | hopeless | (losses >= OVERSHOOT * start)
            history[step % PLATEAU_STEPS, runs] = losses
            last = step == steps
            trained[runs] = sure | (last & (losses < TRAINED * start))
            done = sure | failed | last
            decided += int(done.sum())
            keep = np.flatnonzero(~done)
            if keep.size:
                group.keep(keep)
                group.gradient(g[keep])
                group.step()
                going_on.append((runs[keep], group))
        groups = going_on
        yield decided
        if not groups:
            break
    return trained


def grid_rate(i: int) -> float:
    """The ``i``-th η of the fixed grid: E12[i mod 12] 10^(i div 12)."""
    return float(f"{E12[i % 12]}e{i // 12}")


def grid_index(eta: float) -> int:
    """The index of the grid η nearest ``eta`` (in log η)."""
    near = round(12 * math.log10(eta))
    return min((near - 1, near, near + 1), key=lambda i: abs(math.log(grid_rate(i) / eta)))


SMALLEST, LARGEST = grid_index(SMALLEST_RATE), grid_index(LARGEST_RATE)


@dataclass(frozen=True)
class Window:
    """The η of the fixed grid run near one edge, and whether each trains.

    Attributes
    ----------
    learning_rates : ndarray, shape (etas,)
        The grid η from WINDOW_BELOW steps under the edge to WINDOW_ABOVE over it
        (clipped to SMALLEST_RATE, LARGEST_RATE); empty where no η trains.
    trained : ndarray of bool, shape (etas,)
        Whether each trains: those below the edge that fail are the window's holes.
    edge : float
        The largest of them that trains (NaN where none does, infinite where every η
        up to LARGEST_RATE does).
    """

    learning_rates: np.ndarray
    trained: np.ndarray
    edge: float

    @classmethod
    def of(cls, tried: dict) -> "Window":
        """The window of the outcomes ``tried`` ({grid index: trained}) of one edge."""
        top = _top(tried)
        if top is None:
            return cls(np.zeros(0), np.zeros(0, dtype=bool), math.nan)
        band = [i for i in _band(top) if i in tried]
        return cls(
            np.array([grid_rate(i) for i in band]),
            np.array([tried[i] for i in band]),
            math.inf if top >= LARGEST else grid_rate(top),
        )

    @property
    def holes(self) -> np.ndarray:
        """The η under the edge that fail."""
        return self.learning_rates[~self.trained & (self.learning_rates < self.edge)]

    @property
    def tried(self) -> dict:
        """{grid index: whether it trains}, as ``of`` takes them."""
        indices = (grid_index(eta) for eta in self.learning_rates)
        return dict(zip(indices, map(bool, self.trained), strict=True))


def edge_steps(settings, x, starts: dict, guesses: dict, steps=DEFAULT_STEPS, collapsed=()):
    """The window of every (rule, d_k) of ``guesses`` ({(rule, d_k): a guess of its edge})
    from ``starts`` ({d_k: Start}), in lock-step rounds of a search on the fixed grid: a
    generator yielding the number of probes decided so far; returns {(rule, d_k):
    Window} (from the edge up, and the η under it the search ran).

    A first round probes each guess's grid η at PROBES steps around it; while nothing
    trains, rounds go 4 steps further down and 4 further up (a window above the guess
    is found too), but for the targets ``collapsed`` (their starting logits spread
    past COLLAPSE_SPREAD: no η above trains them, rates_steps), only down; while
    everything trains, 8 steps up; once a trained η lies below an untrained one,
    rounds halve that bracket until the two are neighbours. Then every grid η up to
    WINDOW_ABOVE steps over the largest that trains is run. The window does not depend
    on the guess as long as no η trains more than 8.2 times above every failure over
    the edge (tests/test_rates.py).
    """
    tried = {target: {} for target in guesses}  # grid index -> whether it trains
    pending = {
        target: sorted({min(max(grid_index(g) + o, SMALLEST), LARGEST) for o in PROBES})
        for target, g in guesses.items()
    }
    done = 0
    while pending:
        probes = [(target, i) for target, indices in pending.items() for i in indices]
        outcome = yield from probe_steps(settings, x, starts, probes, steps, done)
        done += len(probes)
        for (target, i), ok in outcome.items():
            tried[target][i] = ok
        pending = {t: ii for t in tried if (ii := _next_probes(tried[t], t not in collapsed))}
    return {target: Window.of(tried[target]) for target in tried}


def probe_steps(settings, x, starts: dict, probes: list, steps=DEFAULT_STEPS, before=0):
    """Whether each of ``probes`` ((rule, d_k), grid index) trains from ``starts`` ({d_k:
    Start}), in batches of EDGE_BATCH runs: a generator yielding ``before`` plus the
    number of probes decided so far; returns {probe: bool}."""
    outcome = {}
    for b in range(0, len(probes), EDGE_BATCH):  # a step of a batch stays short
        batch = probes[b : b + EDGE_BATCH]
        trained = yield from _telling(
            trained_steps(
                settings,
                x,
                [starts[d_k] for (_, d_k), _ in batch],
                [rule for (rule, _), _ in batch],
                np.array([grid_rate(i) for _, i in batch]),
                steps,
            ),
            before + b,
        )
        outcome |= {probe: bool(ok) for probe, ok in zip(batch, trained, strict=True)}
    return outcome


def _band(top: int) -> range:
    """The grid indices of the window around the largest η that trains."""
    return range(max(top - WINDOW_BELOW, SMALLEST), min(top + WINDOW_ABOVE, LARGEST) + 1)


def _above(top: int) -> range:
    """The grid indices of the window from the largest η that trains up."""
    return range(top, min(top + WINDOW_ABOVE, LARGEST) + 1)


def _bracket(tried: dict) -> tuple:
    """(largest trained index below the first untrained one above the smallest trained
    one, that untrained one); None for either that is not there yet."""
    indices = sorted(tried)
    first = next((i for i in indices if tried[i]), None)
    if first is None:
        return None, min(indices)
    above = next((i for i in indices if i > first and not tried[i]), None)
    if above is None:
        return max(indices), None
    return max(i for i in indices if i < above and tried[i]), above


def _next_probes(tried: dict, upward: bool = True) -> list:
    """The grid indices to try next for one edge (none: its window is run, or nothing
    trains); ``upward``: while nothing trains, search above the η tried as well as
    below them."""
    low, high = _bracket(tried)
    if low is None:  # nothing trains yet: 4 steps further down and 4 further up (the
        # window of η that train can lie above a guess), within the grid
        below = [max(high - 4, SMALLEST)] if high > SMALLEST else []
        top = max(tried)
        return below + ([min(top + 4, LARGEST)] if upward and top < LARGEST else [])
    if high is None:  # everything trains: 8 steps further up, unless at the ceiling
        return [] if low >= LARGEST else [min(low + 8, LARGEST)]
    if high - low > 1:
        return [(low + high) // 2]
    top = max(i for i, ok in tried.items() if ok)
    return [i for i in _above(top) if i not in tried]


def _top(tried: dict) -> int | None:
    """The largest grid index of ``tried`` that trains; None for none."""
    return max((i for i, ok in tried.items() if ok), default=None)


def _telling(steps, before):
    """The generator ``steps``, yielding ``before`` plus what it yields; its result."""
    while True:
        try:
            told = next(steps)
        except StopIteration as done:
            return done.value
        yield before + told


# --- the theory ------------------------------------------------------------------------


def curvature(x: np.ndarray, iterations: int = 80) -> float:
    """kappa_1(X): the largest eigenvalue of d²L/dM² (M = a W_Q W_K^T, the logit kernel:
    Z = X M X^T) at the fixed kernels of CURVATURE_SEEDS, averaged. It depends on the
    tokens X alone."""
    m = x.shape[1]
    kernels = [np.random.default_rng(seed).standard_normal((m, m)) / m for seed in CURVATURE_SEEDS]
    return float(np.mean([_largest_eigenvalue(x, k, iterations) for k in kernels]))


def _largest_eigenvalue(x, kernel, iterations):
    """The largest eigenvalue of d²L/dM² at M = ``kernel``, by power iteration: first for
    the largest in size, then on the Hessian shifted by that size (so that the largest,
    not the most negative, wins)."""
    rng = np.random.default_rng(0)

    def power(shift, count):
        v = rng.standard_normal(kernel.shape)
        v /= np.linalg.norm(v)
        for _ in range(count):
            w = _hessian_times(x, kernel, v) + shift * v
            size = np.linalg.norm(w)
            v = w / size
        return v, size

    _, size = power(0.0, iterations // 2)
    v, _ = power(size, iterations)
    return float(np.sum(v * _hessian_times(x, kernel, v)))


def _hessian_times(x, kernel, delta):
    """d²L/dM² applied to ``delta`` at M = ``kernel`` (L = 1/(2n) sum_i |p_i - e_i|², P =
    softmax(X M X^T)): with u = X delta X^T (the logits' change), r = P - I, w = r * p,
    J = diag(p) - p p^T row by row, the logits' second-order term is
    J(J u) + w u - w (p.u) - p (w.u) + (sum w) p (p.u) - (r.p) J u, mapped back by
    X^T (.) X / n."""
    n = x.shape[0]
    z = x @ kernel @ x.T
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    r = p - np.eye(n)
    w = r * p
    u = x @ delta @ x.T
    pu = np.sum(p * u, axis=1, keepdims=True)
    ju = p * u - p * pu
    jju = p * ju - p * np.sum(p * ju, axis=1, keepdims=True)
    rp = np.sum(r * p, axis=1, keepdims=True)
    hu = (
        jju
        + w * u
        - w * pu
        - p * np.sum(w * u, axis=1, keepdims=True)
        + w.sum(axis=1, keepdims=True) * p * pu
        - rp * ju
    )
    return x.T @ (hu / n) @ x


def peak_gradient(x: np.ndarray, step: float = 0.25, steps: int = 400) -> float:
    """sigma*(X): the largest singular value of D = dL/dM along gradient descent in M from
    M = 0 (M <- M - step D), at its peak (it grows, then falls as the rows saturate:
    the descent stops once it is below a fifth of its peak). It depends on the tokens
    X alone."""
    n, m = x.shape
    kernel, peak = np.zeros((m, m)), 0.0
    for _ in range(steps):
        g = softmax_terms((x @ kernel @ x.T)[None])[2][0]
        d = x.T @ g @ x / n  # dL/dM = X^T (dL/dZ) X
        size = float(np.linalg.norm(d, 2))
        peak = max(peak, size)
        if size < 0.2 * peak:
            break
        kernel -= step * d
    return peak


def edge_theory(rule: str, d_ks, settings: Settings, kappa: float, sigma: float, d_model: int):
    """The theory of ``rule``'s edge at ``d_ks`` (NaN where it predicts no training; all
    NaN for QK-norm, and where the theory was not checked: other than THEORY_D_MODEL,
    THEORY_TOKENS tokens, v/T in THEORY_V_T).

    With a = c/T, g = d_k v / m (the Gram's mean eigenvalue) and M = a W_Q W_K^T, one
    step moves M by about h = η a² g times a d_k-free term, so the edge is a d_k-free
    step h_edge times m T² / (c² d_k v). Lazy rules (none, ÷ √d_k, ÷ d_k^α: the
    weights hardly move once d_k >> d_model)::

        η_edge = H / kappa_1 (1 + R T / (c d_k v))^-2 / (1 + (s / S0)^2) m T² / (c² d_k v)

    with s = c √d_k v / T the initial logit spread (none trains past COLLAPSE_SPREAD);
    ÷ d_k and ÷ d_k^α with α above 1/2 (rich rules: their weights move as much at
    every d_k; α = 1 is ÷ d_k)::

        η_edge = K T d_k^α / sigma*

    ``kappa``, ``sigma``: ``curvature(X)`` and ``peak_gradient(X)``.
    """
    d_ks = np.asarray(d_ks, dtype=float)
    v, t = settings.variance, settings.temperature
    if not theory_checked(settings, d_model) or rule == "qk_norm":
        return np.full(d_ks.shape, np.nan)
    if not is_lazy(rule, settings.alpha):  # the rich law: ÷ d_k, and α above 1/2
        return LINEAR_K * t * d_ks ** rule_exponent(rule, settings.alpha) / sigma
    c = np.array([scale_factor(rule, d, settings.alpha) for d in d_ks])
    spread = logit_std(rule, d_ks, v, t, settings.alpha)  # s = c √d_k v / T
    eta = (
        LAZY_H
        / kappa
        * (1 + LAZY_R * t / (c * d_ks * v)) ** -2
        / (1 + (spread / LAZY_S0) ** 2)
        * d_model
        * t**2
        / (c**2 * d_ks * v)
    )
    return np.where(spread < COLLAPSE_SPREAD, eta, np.nan)


# The lazy law's edge approaches its far-out law as (1 + R T / (c d_k v))^-2: the words
# call it settled once that factor is within SETTLED_WITHIN of 1.
SETTLED_WITHIN = 0.2


def is_lazy(rule: str, alpha: float) -> bool:
    """Whether the rule's edge follows the lazy law far out (e <= 1/2: its weights move
    little, against their size, once d_k is large); else the rich law, the edge growing
    as d_k^e (docs/theory.md)."""
    return rule != "qk_norm" and rule_exponent(rule, alpha) <= 0.5


def crossover_d_k(rule: str, settings: Settings) -> float:
    """The d_k at which a lazy rule's weights move by about their own size in the steps a
    run needs: the relative motion R T / (c d_k v) of the lazy law is 1, so with c =
    d_k^(-e), d_k = (R T / v)^(1 / (1 - e)); ÷ √d_k: R^2 (T/v)^2, about 60 (T/v)^2. Only
    well past it (d_k >> crossover) does the edge follow its far-out law."""
    e = rule_exponent(rule, settings.alpha)
    return (LAZY_R * settings.temperature / settings.variance) ** (1 / (1 - e))


def settled_d_k(rule: str, settings: Settings) -> float:
    """The d_k from which a lazy rule's edge is within SETTLED_WITHIN of its far-out law:
    (1 + R T / (c d_k v))^-2 = 1 - SETTLED_WITHIN, so R T / (c d_k v) = q with q =
    (1 - SETTLED_WITHIN)^(-1/2) - 1, and d_k = crossover_d_k / q^(1 / (1 - e)) (÷ √d_k:
    about 72 times the crossover)."""
    e = rule_exponent(rule, settings.alpha)
    q = (1 - SETTLED_WITHIN) ** -0.5 - 1
    return crossover_d_k(rule, settings) / q ** (1 / (1 - e))


def written(edge: float, chaotic: bool = False) -> str:
    """An edge as the page's tables write it: 3 digits, – where no η trains, "> 1e+09"
    where every η up to LARGEST_RATE does; marked † where ``chaotic`` (a nudge of 1e-12
    moves it)."""
    if math.isnan(edge):
        return "–"
    value = f"> {LARGEST_RATE:g}" if math.isinf(edge) else f"{edge:.3g}"
    return f"{value} †" if chaotic else value


def mup_base(eta, d_k):
    """The base rate η0 of a learning rate η scaled with d_k as μP scales it with width,
    η = η0 d_k / MUP_BASE_D_K: under ÷ d_k the rich law's edge K T d_k / sigma* has a
    base rate free of d_k."""
    return np.asarray(eta) * MUP_BASE_D_K / np.asarray(d_k)


def theory_checked(settings: Settings, d_model: int = DEFAULT_D_MODEL) -> bool:
    """Whether the theory of the edge was checked for ``settings``' scenario: d_model,
    tokens (the runs train on at most THEORY_TOKENS) and v/T as it was fitted at."""
    v_t = settings.variance / settings.temperature
    return (
        d_model == THEORY_D_MODEL
        and settings.n_keys >= THEORY_TOKENS
        and THEORY_V_T[0] <= v_t <= THEORY_V_T[1]
    )


def collapsed(targets, settings: Settings) -> set:
    """The (rule, d_k) of ``targets`` whose logits start spread past COLLAPSE_SPREAD, s =
    c √d_k v / T, under a lazy rule: no η trains them (none was found up to LARGEST_RATE
    on seeds 0-4, tests/test_rates.py), so their search goes down only."""
    s = settings
    return {
        (rule, d_k)
        for rule, d_k in targets
        if is_lazy(rule, s.alpha)
        and logit_std(rule, d_k, s.variance, s.temperature, s.alpha) >= COLLAPSE_SPREAD
    }


def _guess(rule: str, d_k: int, settings: Settings, d_model: int) -> float:
    """A first guess of an edge where the theory has none: the step at which one
    step of size η a² (λ_max(G_Q) + λ_max(G_K)) in the logit kernel is about 20, the
    Gram's largest eigenvalue by Marchenko-Pastur, (v / m)(√d_k + √m)²."""
    a = scale_factor(rule, d_k, settings.alpha) / settings.temperature
    top = settings.variance / d_model * (math.sqrt(d_k) + math.sqrt(d_model)) ** 2
    return 10.0 / (a**2 * top)


# --- the sweep -------------------------------------------------------------------------


def rates_steps(
    settings: Settings, steps: int = DEFAULT_STEPS, d_model: int = DEFAULT_D_MODEL, nudge=False
):
    """The ``LearningRates`` of ``settings`` (its d_k and rule aside) one step at a time,
    not yet checked (their holes and chaos: ``check_steps``): a generator that
    yields how far it has got (a share of its work, 0 to 1) and returns them. The
    edges first (about a third of the work), then the curves. ``nudge``: every run
    from W_Q nudged as ``training.nudged`` does (a twin)."""
    starts = {}
    for d_k in sorted(set(CURVE_D_KS) | set(EDGE_D_KS)):
        draw = drawn_rows(settings, d_k, d_model, nudge)
        x, starts[d_k] = yield from _shares(draw, _none)
    kappa, sigma = curvature(x), peak_gradient(x)
    theory = {
        rule: edge_theory(rule, THEORY_D_KS, settings, kappa, sigma, d_model)
        for rule in SCALING_RULES
    }
    guesses = {}
    for rule in EDGE_RULES:
        at = edge_theory(rule, EDGE_D_KS, settings, kappa, sigma, d_model)
        for d_k, eta in zip(EDGE_D_KS, at, strict=True):
            guesses[rule, d_k] = eta if np.isfinite(eta) else _guess(rule, d_k, settings, d_model)
    batch = len(SCALING_RULES) * len(LEARNING_RATES)  # the runs of one curve's batch
    edge_work = WINDOW_PROBES * len(guesses)  # probes, about
    total = edge_work + batch * len(CURVE_D_KS)
    work = edge_steps(settings, x, starts, guesses, steps, collapsed(guesses, settings))
    found = yield from _shares(work, lambda probes: min(probes, edge_work) / total)
    ends = []
    for i, d_k in enumerate(CURVE_D_KS):
        work = curve_steps(settings, x, starts[d_k], steps)
        before = edge_work + i * batch
        share = lambda step, before=before: (before + batch * step / (steps + 1)) / total  # noqa: E731
        ends.append((yield from _shares(work, share)))
    return LearningRates(
        learning_rates=np.array(LEARNING_RATES),
        d_ks=np.array(CURVE_D_KS),
        start={rule: np.array([e[0][rule][0, 0] for e in ends]) for rule in SCALING_RULES},
        loss={rule: np.array([e[0][rule][:, 1] for e in ends]) for rule in SCALING_RULES},
        accuracy={rule: np.array([e[1][rule][:, 1] for e in ends]) for rule in SCALING_RULES},
        edge_d_ks=np.array(EDGE_D_KS),
        edge={rule: np.array([found[rule, d].edge for d in EDGE_D_KS]) for rule in EDGE_RULES},
        window={rule: tuple(found[rule, d] for d in EDGE_D_KS) for rule in EDGE_RULES},
        chaotic=None,
        theory=theory,
    )


def check_steps(
    settings: Settings,
    rates: LearningRates,
    steps: int = DEFAULT_STEPS,
    d_model: int = DEFAULT_D_MODEL,
    nudge=False,
):
    """``rates`` (of ``settings``, from ``rates_steps``) checked (``window_check_steps``),
    from the draws (nudged where ``rates`` are a twin's, ``nudge``) and their twins. A
    generator yielding a share of its work; returns ``rates`` with their whole windows
    and ``chaotic``."""
    starts, twins = {}, {}
    for d_k in EDGE_D_KS:
        x, starts[d_k] = yield from _shares(drawn_rows(settings, d_k, d_model, nudge), _none)
        _, twins[d_k] = yield from _shares(drawn_rows(settings, d_k, d_model, not nudge), _none)
    windows = {
        (rule, d_k): window
        for rule in EDGE_RULES
        for d_k, window in zip(EDGE_D_KS, rates.window[rule], strict=True)
    }
    checked, moved = yield from window_check_steps(settings, x, starts, twins, windows, steps)
    return replace(
        rates,
        window={rule: tuple(checked[rule, d_k] for d_k in EDGE_D_KS) for rule in EDGE_RULES},
        chaotic={rule: np.array([moved[rule, d_k] for d_k in EDGE_D_KS]) for rule in EDGE_RULES},
    )


def window_check_steps(settings, x, starts: dict, twins: dict, windows: dict, steps=DEFAULT_STEPS):
    """Each of ``windows`` ({(rule, d_k): Window}, from ``edge_steps``) checked: its holes,
    every grid η of its band under the edge the search did not run, from ``starts``
    ({d_k: Start}); and its chaos, every η from the edge up run again from ``twins``
    (W_Q nudged by 1e-12): a nudge moves the edge where the twin fails at it or trains
    above it. A generator yielding a share of its work; returns ({(rule, d_k): Window},
    {(rule, d_k): whether a nudge moves the edge})."""
    tried = {target: window.tried for target, window in windows.items()}
    tops = {target: _top(t) for target, t in tried.items()}
    under = [
        (target, i)
        for target, top in tops.items()
        if top is not None
        for i in _band(top)
        if i < top and i not in tried[target]
    ]
    over = [(target, i) for target, top in tops.items() if top is not None for i in _above(top)]
    share = lambda probes: min(probes / max(len(under) + len(over), 1), 1.0)  # noqa: E731
    holes = yield from _shares(probe_steps(settings, x, starts, under, steps), share)
    twin = yield from _shares(probe_steps(settings, x, twins, over, steps, len(under)), share)
    for (target, i), ok in holes.items():
        tried[target][i] = ok
    twin_tried = {target: {} for target in tops}
    for (target, i), ok in twin.items():
        twin_tried[target][i] = ok
    return (
        {target: Window.of(t) for target, t in tried.items()},
        {target: _top(twin_tried[target]) != top for target, top in tops.items()},
    )


def learning_rates(
    settings: Settings, steps: int = DEFAULT_STEPS, d_model: int = DEFAULT_D_MODEL, nudge=False
) -> LearningRates:
    """``rates_steps``, then ``check_steps``, to their end: every rule at every learning
    rate, far past the slider, checked."""
    rates = to_end(rates_steps(settings, steps, d_model, nudge))
    return to_end(check_steps(settings, rates, steps, d_model, nudge))


def _none(_):
    """No share of the work: the draws are quick."""
    return 0.0


def _shares(steps, share):
    """The generator ``steps``, yielding ``share(what it yields)`` (what it yields counts
    its work, or its steps); its result."""
    count = 0
    while True:
        try:
            told = next(steps)
        except StopIteration as done:
            return done.value
        count += 1
        yield share(count if told is None else told)
