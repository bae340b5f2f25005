"""Scaled dot-product attention on random vectors, with numpy only.

The model of docs/theory.md: ``n_queries`` queries and ``n_keys`` keys in R^{d_k},
components i.i.d. N(0, variance) from ``numpy.random.default_rng(seed)``;
logits ``z = c * (q_hat . k_hat) / temperature`` with ``c`` set by the scaling
rule; attention weights ``p = softmax(z)`` row by row; and, per query row, the
numbers the page plots: the largest weight, the entropy, the norm of the
softmax Jacobian and the norm of the gradient of the weights with respect to
the query.

>>> from app.simulation import Settings, simulate, sweep
>>> snap = simulate(Settings(d_k=512, variance=1.0, scaling="none"))
>>> bool(snap.max_weight.mean() > 0.5)   # unscaled logits saturate the softmax
True
>>> curves = sweep(Settings(d_k=1, variance=1.0, scaling="sqrt"), [1, 16, 256])
>>> curves["sqrt"]["logit_std"].shape
(3,)
"""

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

import numpy as np

from app import softmax

SCALING_RULES = ("none", "sqrt", "linear", "qk_norm", "power")
DEFAULT_ALPHA = 1 / 3  # the power rule's exponent: c = d_k^(-alpha), a cube root by default
LAYER_NORM_EPS = 1e-5  # what torch.nn.functional.layer_norm adds to the variance
SATURATION = 0.99  # a row is saturated when its largest weight exceeds this

# Inclusive bounds of every numeric field. Variance and temperature are also
# bounded below: with them, every logit stays below 1e8 in magnitude, far from
# float64's range, while the most saturated corner (spread 6.4e6) is already
# deeper than any plot can show.
BOUNDS = {
    "d_k": (1, 4096),
    "variance": (1e-3, 1e3),
    "n_queries": (1, 1024),
    "n_keys": (1, 1024),
    "temperature": (1e-2, 1e2),
    "seed": (0, 2**32 - 1),
    "alpha": (0.0, 1.5),
}


@dataclass(frozen=True)
class Settings:
    """One scenario of the simulation; validated on construction.

    Parameters
    ----------
    d_k : int
        Dimension of queries and keys, 1 to 4096.
    variance : float
        Variance of every query and key component, 1e-3 to 1e3.
    scaling : {"none", "sqrt", "linear", "qk_norm", "power"}
        Scale factor ``c`` of the dot products: 1, ``1/sqrt(d_k)``, ``1/d_k``,
        ``1/sqrt(d_k)`` after layer-normalising each q and k, or ``d_k^(-alpha)``.
    n_queries, n_keys : int
        Number of query and key vectors, 1 to 1024 each.
    temperature : float
        Softmax temperature dividing the logits, 1e-2 to 1e2.
    seed : int
        Seed of ``numpy.random.default_rng``, 0 to 2**32 - 1.
    alpha : float
        Exponent of the power rule, 0 to 1.5 (0, 1/2 and 1 give none, sqrt and
        linear); the other rules ignore it.

    Raises
    ------
    ValueError
        Naming the field, the value received and what is allowed.
    """

    d_k: int
    variance: float
    scaling: str
    n_queries: int = 64
    n_keys: int = 64
    temperature: float = 1.0
    seed: int = 0
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self):
        if not isinstance(self.scaling, str) or self.scaling not in SCALING_RULES:
            raise ValueError(
                f"scaling must be one of {', '.join(SCALING_RULES)}; got {self.scaling!r}"
            )
        for field in fields(self):
            if field.name in BOUNDS:
                object.__setattr__(self, field.name, _checked(field, getattr(self, field.name)))

    @property
    def scale(self) -> float:
        """The scale factor ``c`` of the scaling rule."""
        return scale_factor(self.scaling, self.d_k, self.alpha)


def _checked(field, value):
    low, high = BOUNDS[field.name]
    if field.type is int:
        kind = "an integer"
        ok = isinstance(value, int | np.integer) and not isinstance(value, bool)
    else:
        kind = "a finite number"
        ok = (
            isinstance(value, int | float | np.integer | np.floating)
            and not isinstance(value, bool)
            and math.isfinite(value)
        )
    if not ok or not low <= value <= high:
        raise ValueError(f"{field.name} must be {kind} from {low:g} to {high:g}; got {value!r}")
    return field.type(value)


def scale_factor(scaling: str, d_k: int, alpha: float = DEFAULT_ALPHA) -> float:
    """Scale factor ``c`` of a scaling rule at dimension ``d_k`` (``alpha``: the power rule's)."""
    exponent = {"none": 0.0, "sqrt": 0.5, "linear": 1.0, "qk_norm": 0.5, "power": alpha}[scaling]
    return d_k**-exponent  # c = d_k^(-exponent)


@dataclass(frozen=True)
class Snapshot:
    """One draw of the simulation and its per-row metrics.

    Attributes
    ----------
    settings : Settings
    q : ndarray, shape (n_queries, d_k)
    k : ndarray, shape (n_keys, d_k)
    logits : ndarray, shape (n_queries, n_keys)
        ``c * (q_hat . k_hat) / temperature``.
    weights : ndarray, shape (n_queries, n_keys)
        Row-wise softmax of the logits.
    max_weight, entropy : ndarray, shape (n_queries,)
        Largest weight and Shannon entropy (nats) of each row.
    jacobian_norm : ndarray, shape (n_queries,)
        ``||diag(p) - p p^T||_F``, the softmax Jacobian with respect to the logits.
    query_grad_norm : ndarray, shape (n_queries,)
        ``||dp/dq||_F``, the Jacobian of the row's weights with respect to its
        raw query vector (includes ``c``, the temperature and the layer norm).
    """

    settings: Settings
    q: np.ndarray
    k: np.ndarray
    logits: np.ndarray
    weights: np.ndarray
    max_weight: np.ndarray
    entropy: np.ndarray
    jacobian_norm: np.ndarray
    query_grad_norm: np.ndarray


def draw(settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys with i.i.d. N(0, variance) components, from the seed."""
    s = settings
    standard = _products(s.seed, s.n_queries, s.n_keys, s.d_k)
    sd = math.sqrt(s.variance)
    return sd * standard.q, sd * standard.k


def layer_norm(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer-normalise each row of ``x`` as torch's ``layer_norm`` does (no gain).

    Returns
    -------
    y : ndarray
        ``(x - mean) / sigma`` with ``sigma = sqrt(var + LAYER_NORM_EPS)``.
    sigma : ndarray, shape (rows, 1)
    deficit : ndarray, shape (rows, 1)
        ``1 - |y|^2 / d = eps / (var + eps)``, formed without cancellation.
    """
    centred = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(centred**2, axis=-1, keepdims=True)
    sigma = np.sqrt(var + LAYER_NORM_EPS)
    return centred / sigma, sigma, LAYER_NORM_EPS / (var + LAYER_NORM_EPS)


def simulate(settings: Settings) -> Snapshot:
    """Draw queries and keys for ``settings`` and compute the attention metrics."""
    s = settings
    return _snapshot(s, *draw(s), _products(s.seed, s.n_queries, s.n_keys, s.d_k), s.variance)


def attend(settings: Settings, q: np.ndarray, k: np.ndarray) -> Snapshot:
    """The attention metrics of given queries and keys under ``settings``' rule
    (its variance is not used: ``q`` and ``k`` are the vectors)."""
    return _snapshot(settings, q, k, _Products(q, k), 1.0)


def _snapshot(settings: Settings, q, k, standard: "_Products", variance: float) -> Snapshot:
    """``settings``' rule applied to ``standard`` (a draw's ``_Products``) at ``variance``."""
    s = settings
    rows = _Rows(np.array([s.scale / s.temperature]), standard.at(variance, s.scaling))
    return Snapshot(
        s,
        q,
        k,
        rows.logits[0],
        rows.weights[0],
        rows.max_weight()[0],
        rows.entropy()[0],
        rows.jacobian_norm()[0],
        rows.query_grad_norm()[0],
    )


# What the snapshot computes, as the page shows it.
SOFTMAX_TEX = r"p_{ij} = e^{z_{ij}} / \textstyle\sum_l e^{z_{il}},\quad z_{ij} = c\,q_i\cdot k_j/T"
MAX_WEIGHT_TEX = r"\max_j p_{ij},\quad p = \mathrm{softmax}(z)"
QUERY_GRAD_TEX = r"\|\partial p/\partial q\|_F = \|J\,(c/T)\,K\|_F"


class _Products:
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

    def at(self, variance: float, scaling: str) -> "_Draw":
        """The draw at ``variance``, for ``scaling``'s family (layer norm or none)."""
        if scaling != "qk_norm":
            return _Draw(
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

        return _Draw(dots, math.sqrt(variance) * s_q, gradient)


@functools.lru_cache(maxsize=2 * 11)  # two draws' worth at the page's 11 d_k
def _products(seed: int, n_queries: int, n_keys: int, d_k: int) -> _Products:
    """``_Products`` of the seeded standard draw, kept so that a new variance reuses them."""
    rng = np.random.default_rng(seed)
    return _Products(rng.standard_normal((n_queries, d_k)), rng.standard_normal((n_keys, d_k)))


def forget_draws():
    """Let go of the draws kept for new variances (before a memory snapshot is made)."""
    _products.cache_clear()


class _Draw:
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


class _Rows:
    """The softmax rows of one draw (``_Draw``) under several scale factors
    ``dz_scale`` (``c / temperature`` of some rules; shape (rules,)), and their
    metrics, each of shape (rules, n_queries), computed when asked for.

    ``dz_j/dq = (c / temperature) * (dq_hat/dq) k_hat_j``, where ``dq_hat/dq`` is
    the identity, or ``P / sigma`` under qk_norm (see ``softmax.log_key_spread``).
    """

    def __init__(self, dz_scale: np.ndarray, draw: _Draw):
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


SWEEP_METRICS = (
    "logit_std",
    "max_weight",
    "normalized_entropy",
    "jacobian_norm",
    "query_grad_norm",
)


def row_metrics(snap: Snapshot) -> dict[str, np.ndarray]:
    """The per-row numbers the sweep summarises, keyed by ``SWEEP_METRICS``.

    ``normalized_entropy`` is ``entropy / ln(n_keys)``, and 0 for one key.
    """
    n = snap.settings.n_keys
    return {
        "logit_std": snap.logits.std(axis=-1),
        "max_weight": snap.max_weight,
        "normalized_entropy": snap.entropy / math.log(n) if n > 1 else snap.entropy,
        "jacobian_norm": snap.jacobian_norm,
        "query_grad_norm": snap.query_grad_norm,
    }


def median_row(snap: Snapshot) -> int:
    """The query row whose largest weight is the median of the rows' (the lower one
    for an even count): the typical row, as the page shows it up close."""
    return int(np.argsort(snap.max_weight, kind="stable")[(len(snap.max_weight) - 1) // 2])


def saturated_share(max_weight: np.ndarray, axis=None):
    """Share of rows whose largest weight exceeds ``SATURATION`` (0.99)."""
    return np.mean(max_weight > SATURATION, axis=axis)


# The sweep's metrics in the groups it computes together, each group when first read:
# the logits' spread needs the dot products only, the softmax's metrics its rows too,
# the query gradient the keys' span as well.
SWEEP_GROUPS = {
    "spread": ("logit_std",),
    "softmax": ("max_weight", "normalized_entropy", "jacobian_norm"),
    "gradient": ("query_grad_norm",),
}
assert [m for group in SWEEP_GROUPS.values() for m in group] == list(SWEEP_METRICS)
QUANTILES = {"_p10": 0.1, "_lo": 0.25, "": 0.5, "_hi": 0.75, "_p90": 0.9}


def sweep(settings: Settings, d_ks) -> "Sweep":
    """Median and interquartile band over rows of every metric, per rule and d_k.

    Parameters
    ----------
    settings : Settings
        Everything but ``d_k`` and ``scaling``, which the sweep varies.
    d_ks : sequence of int
        The dimensions to simulate. At each, every rule sees the same draw,
        the very one ``simulate`` makes for that ``d_k``.

    Returns
    -------
    Sweep
        A mapping ``{rule: columns}`` for every rule of ``SCALING_RULES``, where
        ``columns`` maps ``"d_k"`` and, for every metric ``m`` of
        ``SWEEP_METRICS``, ``m`` (median), ``m + "_lo"`` (25th percentile) and
        ``m + "_hi"`` (75th percentile), ``m + "_p10"`` and ``m + "_p90"``
        (10th and 90th percentiles) to arrays of ``len(d_ks)``, plus
        ``"saturated_share"``, the share of rows with max weight above 0.99.
        Each ``columns`` can feed a Bokeh ``ColumnDataSource`` as it is. The
        columns of a group of ``SWEEP_GROUPS`` are computed when one of them is
        first read, for every rule at once.
    """
    return Sweep(settings, d_ks)


class Sweep(Mapping):
    """``sweep``'s result: ``{rule: columns}``, a group of metrics computed when first read."""

    def __init__(self, settings: Settings, d_ks):
        self.settings, self.d_ks = settings, np.asarray(d_ks, dtype=int)
        self._columns = {rule: {"d_k": self.d_ks} for rule in SCALING_RULES}
        self._pending = dict.fromkeys(SWEEP_GROUPS)  # the groups not yet computed

    def __getitem__(self, rule: str) -> Mapping:
        if rule not in self._columns:
            raise KeyError(rule)
        return _RuleColumns(self, rule)

    def __iter__(self):
        return iter(SCALING_RULES)

    def __len__(self) -> int:
        return len(SCALING_RULES)

    def complete(self):
        """Compute every group not computed yet."""
        for group in list(self._pending):
            self._compute(group)

    def column(self, rule: str, name: str) -> np.ndarray:
        """Column ``name`` of ``rule``, computing its group if it is the first read."""
        if name not in COLUMN_GROUPS:
            raise KeyError(name)
        group = COLUMN_GROUPS[name]
        if group in self._pending:
            self._compute(group)
        return self._columns[rule][name]

    def _compute(self, group: str):
        """Every rule's columns of ``group``: the rules without layer norm in one batch
        of scale factors over the same dot products, qk_norm apart."""
        s, metrics = self.settings, SWEEP_GROUPS[group]
        values = {rule: [] for rule in SCALING_RULES}  # per rule: (d_ks, metrics, n_queries)
        for d_k in self.d_ks:
            for rules in (PLAIN_RULES, ("qk_norm",)):
                scale = [scale_factor(rule, int(d_k), s.alpha) / s.temperature for rule in rules]
                rows = _Rows(np.array(scale), self._draw(int(d_k), rules[0]))
                found = [_row_metric(rows, name, s.n_keys) for name in metrics]
                for i, rule in enumerate(rules):
                    values[rule].append([metric[i] for metric in found])
        for rule, rule_values in values.items():
            rule_values = np.array(rule_values)
            quantiles = np.quantile(rule_values, list(QUANTILES.values()), axis=-1)
            columns = self._columns[rule]
            for suffix, values_at in zip(QUANTILES, quantiles, strict=True):
                columns |= {name + suffix: values_at[:, j] for j, name in enumerate(metrics)}
            if group == "softmax":
                max_weight = rule_values[:, metrics.index("max_weight")]
                columns["saturated_share"] = saturated_share(max_weight, axis=-1)
        del self._pending[group]

    def _draw(self, d_k: int, rule: str) -> _Draw:
        """The draw ``simulate`` makes at ``d_k``, prepared for ``rule``'s family."""
        s = self.settings
        return _products(s.seed, s.n_queries, s.n_keys, d_k).at(s.variance, rule)


class _RuleColumns(Mapping):
    """One rule's columns of a ``Sweep``."""

    def __init__(self, curves: Sweep, rule: str):
        self._curves, self._rule = curves, rule

    def __getitem__(self, name: str) -> np.ndarray:
        return self._curves.column(self._rule, name)

    def __iter__(self):
        return iter(COLUMN_GROUPS)

    def __len__(self) -> int:
        return len(COLUMN_GROUPS)


PLAIN_RULES = tuple(rule for rule in SCALING_RULES if rule != "qk_norm")
# Every column of a sweep and the group it belongs to (None: known from the start).
COLUMN_GROUPS = {"d_k": None} | {
    metric + suffix: group
    for group, metrics in SWEEP_GROUPS.items()
    for metric in metrics
    for suffix in QUANTILES
}
COLUMN_GROUPS["saturated_share"] = "softmax"


def _row_metric(rows: _Rows, name: str, n_keys: int) -> np.ndarray:
    """Metric ``name`` of ``SWEEP_METRICS`` of every row, as ``row_metrics`` gives it."""
    if name == "normalized_entropy":
        return rows.entropy() / math.log(n_keys) if n_keys > 1 else rows.entropy()
    return getattr(rows, name)()
