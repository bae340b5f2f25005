"""Scaled dot-product attention on random vectors, with numpy only.

The model of docs/theory.md: ``n_queries`` queries and ``n_keys`` keys in R^{d_k},
components i.i.d. N(0, variance) from ``numpy.random.default_rng(seed)``;
logits ``z = c * (q_hat . k_hat) / temperature`` with ``c`` set by the scaling
rule; attention weights ``p = softmax(z)`` row by row; and, per query row, the
numbers the page plots: the largest weight, the entropy, the norm of the
softmax Jacobian and the norm of the gradient of the weights with respect to
the query.

The draws and their products are in ``app.draws``; the metrics against d_k,
for every rule at once, in ``app.sweep``.

>>> from app.simulation import Settings, simulate
>>> draw = simulate(Settings(d_k=512, variance=1.0, scaling="none"))
>>> bool(draw.max_weight.mean() > 0.5)   # unscaled logits saturate the softmax
True
"""

import math
from dataclasses import dataclass, fields

import numpy as np

from app.draws import LAYER_NORM_EPS, Products, Rows, products

SCALING_RULES = ("none", "sqrt", "linear", "qk_norm", "power")
DEFAULT_ALPHA = 1 / 3  # the power rule's exponent: c = d_k^(-alpha), a cube root by default
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


def rule_exponent(scaling: str, alpha: float = DEFAULT_ALPHA) -> float:
    """e in a scaling rule's c = d_k^(-e) (QK-norm's 1/2, after its layer norm)."""
    return {"none": 0.0, "sqrt": 0.5, "linear": 1.0, "qk_norm": 0.5, "power": alpha}[scaling]


def scale_factor(scaling: str, d_k: int, alpha: float = DEFAULT_ALPHA) -> float:
    """Scale factor ``c`` of a scaling rule at dimension ``d_k`` (``alpha``: the power rule's)."""
    return d_k ** -rule_exponent(scaling, alpha)  # c = d_k^(-e)


@dataclass(frozen=True)
class Draw:
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


def queries_and_keys(settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys with i.i.d. N(0, variance) components, from the seed."""
    s = settings
    standard = products(s.seed, s.n_queries, s.n_keys, s.d_k)
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


def simulate(settings: Settings) -> Draw:
    """Draw queries and keys for ``settings`` and compute the attention metrics."""
    s = settings
    standard = products(s.seed, s.n_queries, s.n_keys, s.d_k)
    return _attended(s, *queries_and_keys(s), standard, s.variance)


def attend(settings: Settings, q: np.ndarray, k: np.ndarray) -> Draw:
    """The attention metrics of given queries and keys under ``settings``' rule
    (its variance is not used: ``q`` and ``k`` are the vectors)."""
    return _attended(settings, q, k, Products(q, k), 1.0)


def _attended(settings: Settings, q, k, standard: "Products", variance: float) -> Draw:
    """``settings``' rule applied to ``standard`` (a draw's ``Products``) at ``variance``."""
    s = settings
    rows = Rows(np.array([s.scale / s.temperature]), standard.at(variance, s.scaling))
    return Draw(
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


# What a draw computes, as the page shows it.
SOFTMAX_TEX = r"p_{ij} = e^{z_{ij}} / \textstyle\sum_l e^{z_{il}},\quad z_{ij} = c\,q_i\cdot k_j/T"
MAX_WEIGHT_TEX = r"\max_j p_{ij},\quad p = \mathrm{softmax}(z)"
QUERY_GRAD_TEX = (
    r"\|\partial p/\partial q\|_F = \|J\,(c/T)\,K\|_F;\quad \text{QK-norm:}\ "
    r"\|J\,(c/T)\,\hat K\,P/\sigma_q\|_F,\ \ P = I - \mathbf{1}\mathbf{1}^\top/d_k"
    r" - \hat q\hat q^\top/d_k"
)


SWEEP_METRICS = (
    "logit_std",
    "max_weight",
    "normalized_entropy",
    "jacobian_norm",
    "query_grad_norm",
)


def row_metrics(draw: Draw) -> dict[str, np.ndarray]:
    """The per-row numbers the sweep summarises, keyed by ``SWEEP_METRICS``.

    ``normalized_entropy`` is ``entropy / ln(n_keys)``, and 0 for one key.
    """
    n = draw.settings.n_keys
    return {
        "logit_std": draw.logits.std(axis=-1),
        "max_weight": draw.max_weight,
        "normalized_entropy": draw.entropy / math.log(n) if n > 1 else draw.entropy,
        "jacobian_norm": draw.jacobian_norm,
        "query_grad_norm": draw.query_grad_norm,
    }


def median_row(draw: Draw) -> int:
    """The query row whose largest weight is the median of the rows' (the lower one
    for an even count): the typical row, as the page shows it up close."""
    return int(np.argsort(draw.max_weight, kind="stable")[(len(draw.max_weight) - 1) // 2])


def saturated_share(max_weight: np.ndarray, axis=None):
    """Share of rows whose largest weight exceeds ``SATURATION`` (0.99)."""
    return np.mean(max_weight > SATURATION, axis=axis)
