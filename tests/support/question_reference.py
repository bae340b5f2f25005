"""The questions' numbers computed here, independently of the page's: each scenario's
draw, its scores, softmax rows and query gradients with numpy, and its training runs
and learning-rate sweep (cached: a scenario's are read by many checks), for
test_questions.py, test_claims.py and the answers on the built site.
"""

import math
from dataclasses import replace
from functools import cache

import numpy as np

from app.background import page_training
from app.options import (
    D_K_OPTIONS,
    DEFAULTS,
    SETTINGS_FIELDS,
)
from app.rates import learning_rates
from app.results import Results
from app.simulation import Settings, simulate
from app.sweep import sweep
from app.training import PAGE_TOKENS, training_sweep

EXPONENTS = {"none": 0.0, "sqrt": 0.5, "linear": 1.0, "qk_norm": 0.5}  # c = d_k^(-exponent)


# --- The results the page would show, built here ------------------------------------------


def settings_of(values: dict) -> tuple[Settings, float]:
    v = DEFAULTS | values
    return Settings(**{name: v[name] for name in SETTINGS_FIELDS}), v["learning_rate"]


@cache
def training_runs(training: Settings, learning_rate: float) -> dict:
    """As the page trains them: with twins, so that each run knows if it is chaotic."""
    return training_sweep(training, D_K_OPTIONS, page_training(learning_rate))


def training_settings(settings: Settings) -> Settings:
    """What the page trains: the settings' rule and d_k aside, at most 64 tokens."""
    n = min(settings.n_keys, PAGE_TOKENS)
    return replace(settings, d_k=1, scaling="none", n_keys=n)


def runs_for(settings: Settings, learning_rate: float) -> dict:
    """The page's training runs: every d_k."""
    return training_runs(training_settings(settings), learning_rate)


@cache
def rates_for(training: Settings):
    """The page's learning rates, far past the slider."""
    return learning_rates(training)


@cache
def evidence_of(items: tuple) -> Results:
    s, learning_rate = settings_of(dict(items))
    runs, rates = runs_for(s, learning_rate), rates_for(training_settings(s))
    return Results(s, learning_rate, simulate(s), sweep(s, D_K_OPTIONS), runs, None, rates, 1.0)


def evidence(values: dict) -> Results:
    return evidence_of(tuple(sorted(values.items())))


# --- Independent computations, from the definitions ---------------------------------------


def layer_norm(x):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def scale(settings: Settings, rule: str, d_k: int) -> float:
    return d_k ** -(settings.alpha if rule == "power" else EXPONENTS[rule])


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cache
def draw(settings: Settings, d_k: int):
    rng = np.random.default_rng(settings.seed)
    sd = math.sqrt(settings.variance)
    q = sd * rng.standard_normal((settings.n_queries, d_k))
    return q, sd * rng.standard_normal((settings.n_keys, d_k))


@cache
def unscaled_scores(settings: Settings, d_k: int) -> np.ndarray:
    q, k = draw(settings, d_k)
    return q @ k.T


@cache
def rows(settings: Settings, rule: str, d_k: int) -> dict:
    """Per row: the logits' std, the largest weight and the entropy / ln n; and the
    logits and weights, the plain way: draw, dot, exp, sum."""
    q, k = draw(settings, d_k)
    if rule == "qk_norm":
        q, k = layer_norm(q), layer_norm(k)
    z = scale(settings, rule, d_k) * (q @ k.T) / settings.temperature
    shifted = z - z.max(axis=1, keepdims=True)
    is_top = np.arange(len(k)) == shifted.argmax(axis=1)[:, None]
    others = np.sum(np.where(is_top, 0.0, np.exp(shifted)), axis=1, keepdims=True)
    log_p = shifted - np.log1p(others)  # log p_j = z_j - log sum_l e^z_l, exact at the top too
    p = np.exp(log_p)
    return {
        "spread": z.std(axis=1),
        "max_weight": p.max(axis=1),
        "entropy": -np.sum(p * log_p, axis=1) / math.log(len(k)),
        "logits": z,
        "largest": z.max(),
        "weights": p,
    }


@cache
def query_grads(settings: Settings, rule: str, d_k: int) -> np.ndarray:
    """``||dp/dq||_F = ||J (c/T) K||_F`` per row (no layer norm: not for qk_norm). Row j
    of ``J K`` is ``p_j (k_j - k_bar)``, ``k_bar = sum_l p_l k_l`` (docs/theory.md)."""
    assert rule != "qk_norm"
    k = draw(settings, d_k)[1]
    p = rows(settings, rule, d_k)["weights"]
    terms = []  # p_j |k_j - k_bar|, measured from the top key m so that nothing cancels:
    for chunk in np.array_split(p, 8):  # k_j - k_bar = (k_j - k_m) - sum_l p_l (k_l - k_m)
        offsets = k[None] - k[chunk.argmax(axis=1)][:, None, :]
        mean_offset = np.einsum("rj,rjd->rd", chunk, offsets)
        terms.append(chunk * np.linalg.norm(offsets - mean_offset[:, None, :], axis=-1))
    terms = np.concatenate(terms)
    top = terms.max(axis=1, keepdims=True)  # the norm, scaled so that nothing underflows
    norms = top[:, 0] * np.sqrt(np.sum((terms / np.where(top > 0, top, 1)) ** 2, axis=1))
    return scale(settings, rule, d_k) / settings.temperature * norms


def metric(settings: Settings, rule: str, name: str, d_k: int) -> float:
    """A curve's value: the median over rows, a percentile, or the saturated share."""
    if name.startswith("grad"):
        grads = query_grads(settings, rule, d_k)
        return (
            np.percentile(grads, int(name.removeprefix("grad_p")))
            if "_p" in name
            else np.median(grads)
        )
    values = rows(settings, rule, d_k)
    if name == "saturated":
        return np.mean(values["max_weight"] > 0.99)
    return np.median(values[name])


def rows_of_run(run, rule, settings, d_k):
    """The attention weights before the first step, from the run's initial arrays."""
    q, k = run.x @ run.w_q, run.x @ run.w_k
    if rule == "qk_norm":
        q, k = layer_norm(q), layer_norm(k)
    return softmax(scale(settings, rule, d_k) * q @ k.T / settings.temperature)


def initial_loss(run, rule, settings, d_k):
    """The training loss before the first step, from the run's initial arrays."""
    p = rows_of_run(run, rule, settings, d_k)
    return np.sum((p - np.eye(len(p))) ** 2) / (2 * len(p))
