"""The questions about the choices around the scaling: numerical stability, the softmax
that follows, adjusting it, whether it is always needed, additive attention. Each
question's numbers come first, then its steps.

A function of numbers reads only the results it is given; a claim that depends on
the numbers is a condition it computes."""

import math
from dataclasses import replace

import numpy as np

from app import theory
from app.options import TEMPERATURE_RANGE
from app.precision import EXP_LIMITS, naive_overflow_shares
from app.questions import reading as read
from app.questions.reading import (
    BARELY_MOVES_ABOVE,
    BFLOAT16_BITS,
    LEARNS_BELOW,
    SAME_WEIGHTS,
    TRAINING_D_KS,
)
from app.questions.steps import Question, Step
from app.simulation import SATURATION, layer_norm, simulate

# 8. How does scaling help numerical stability in large models?


def _stability(r):
    """The largest logit against exp's limits, the naive softmax's overflowing rows, and
    bfloat16's rounding of that logit: |z| = m 2^x (1/2 <= m < 1) is stored to within
    2^(x - 8) / 2, which changes a ratio of two weights by up to e^(2 * that)."""
    largest = float(r.draw.logits.max())
    half_step = math.ldexp(1.0, math.frexp(abs(largest))[1] - BFLOAT16_BITS - 1) if largest else 0.0
    return (
        read.setting(r)
        | {"largest": largest, "half_step": half_step, "ratio_error": math.exp(2 * half_step)}
        | {f"limit_{name}": limit for name, limit in EXP_LIMITS.items()}
        | {
            f"overflow_{name}": share
            for name, share in naive_overflow_shares(r.draw.logits).items()
        }
    )


STABILITY = Question(
    "numerical-stability",
    (
        Step({"d_k": 1024, "scaling": "none"}, "stability", _stability, "answer"),
        Step({"d_k": 1024, "scaling": "sqrt"}, "stability", _stability, "answer"),
    ),
)


# 9. How does scaling interact with the softmax step that follows?


def _one_knob(r):
    """c/T; the temperatures at which none (T / c) or sqrt (T / (c sqrt(d_k))) have the
    same c/T; the largest difference between the weights on screen and those of the
    other rule at its temperature (none against sqrt, every other rule against none)."""
    s = r.settings
    t_none, t_sqrt = s.temperature / s.scale, s.temperature / (s.scale * math.sqrt(s.d_k))
    if s.scaling == "none":
        other = r.draw.q @ r.draw.k.T / (math.sqrt(s.d_k) * t_sqrt)
    else:
        other = r.draw.q @ r.draw.k.T / t_none
    t_other = t_sqrt if s.scaling == "none" else t_none
    difference = float(np.abs(r.draw.weights - read.weights_of(other)).max())
    low, high = TEMPERATURE_RANGE
    return (
        read.setting(r)
        | read.on_screen(r, ["spread", "max_weight"])
        | {
            "c_over_t": s.scale / s.temperature,
            "t_other": t_other,
            "t_on_slider": low <= round(t_other, 12) <= high,
            "t_low": low,
            "t_high": high,
            "difference": difference,
            "same_weights": difference < SAME_WEIGHTS,
            "rule_is_none": s.scaling == "none",
            "rule_is_qk_norm": s.scaling == "qk_norm",
            "spread_theory": float(
                theory.logit_std(s.scaling, s.d_k, s.variance, s.temperature, s.alpha)
            ),
            "threshold": read.threshold(r),
        }
        | {"above_threshold": read.on_screen(r, ["spread"])["spread"] > read.threshold(r)}
    )


INTERACTION = Question(
    "softmax-interaction",
    (
        # ÷ √d_k at T = 1 first: the temperature asked for is not on the slider before
        # the answer is revealed.
        Step({"d_k": 16, "scaling": "sqrt", "temperature": 1.0}, "heatmap", _one_knob, "answer"),
        Step({"d_k": 16, "scaling": "none", "temperature": 4.0}, "heatmap", _one_knob, "answer"),
    ),
)


# 11. Can the √d_k be adjusted for different tasks?


def _temperature(r):
    """The median spread and max weight on screen, and the same draw's at T = 1."""
    at_one = simulate(replace(r.settings, temperature=1.0))
    return (
        read.setting(r)
        | read.on_screen(r, ["spread", "max_weight"])
        | {
            "spread_t1": float(np.median(at_one.logits.std(axis=-1))),
            "max_weight_t1": float(np.median(at_one.max_weight)),
        }
    )


def _mu_p(r):
    """÷ d_k against ÷ √d_k: spread, entropy and training at the current d_k."""
    runs = read.trained(r, ["linear", "sqrt"])
    return (
        read.setting(r)
        | read.curve(r, ["linear", "sqrt"], ["spread", "entropy"])
        | runs
        | {
            "root": math.sqrt(r.settings.d_k),
            "linear_learns": runs["linear_kept"] < LEARNS_BELOW,
            "linear_barely_moves": runs["linear_kept"] > BARELY_MOVES_ABOVE,
        }
    )


def _qk_norm(r):
    """Median spread of qk_norm, sqrt and none; qk_norm's without its 1/sqrt(d_k); the
    median length of the layer-normalised queries."""
    d_k = r.settings.d_k
    numbers = read.setting(r) | read.curve(r, ["qk_norm", "sqrt", "none"], ["spread"])
    return numbers | {
        "qk_norm_unscaled": numbers["qk_norm_spread"] * math.sqrt(d_k),
        "qk_length": float(np.median(np.linalg.norm(layer_norm(r.draw.q)[0], axis=1))),
        "root": math.sqrt(d_k),
    }


ADJUST = Question(
    "adjust",
    (
        Step({"d_k": 64, "scaling": "sqrt", "temperature": 0.25}, "max_weight", _temperature),
        Step(
            {"d_k": 256, "scaling": "linear", "learning_rate": 2.0}, "training_loss", _mu_p, "mu-p"
        ),
        Step(
            {"d_k": 256, "scaling": "linear", "learning_rate": 100.0},
            "training_loss",
            _mu_p,
            "mu-p",
        ),
        Step({"d_k": 64, "scaling": "qk_norm", "variance": 4.0}, "spread", _qk_norm, "qk-norm"),
    ),
)


# 12. Is the scaling always necessary?


def _small_d_k(r):
    """Unscaled spread and saturation against the collapse threshold; training, none
    against sqrt, at the current d_k."""
    numbers = (
        read.setting(r)
        | read.curve(r, ["none"], ["spread", "max_weight", "saturated"])
        | read.trained(r, ["none", "sqrt"])
        | {"threshold": read.threshold(r)}
    )
    return numbers | {
        "none_above_threshold": numbers["none_spread"] > numbers["threshold"],
        "any_chaotic": numbers["none_chaotic"] or numbers["sqrt_chaotic"],
        "none_ahead": numbers["none_loss"] < numbers["sqrt_loss"],
    }


def _small_variance(r):
    """Spread and saturation of none and sqrt; their final losses at TRAINING_D_KS."""
    runs = read.trained_sweep(r, ["none", "sqrt"])
    return (
        read.setting(r)
        | read.curve(r, ["none", "sqrt"], ["spread", "saturated"])
        | runs
        | read.none_against_sqrt(runs, [f"_{d}" for d in TRAINING_D_KS])
        | {"none_theory": read.spread_theory(r, 1.0), "threshold": read.threshold(r)}
    )


def _temperature_instead(r):
    """c/T on screen against ÷ √d_k at T = 1, and the largest difference of their weights."""
    s = r.settings
    scaled = simulate(replace(s, scaling="sqrt", temperature=1.0))
    difference = float(np.abs(r.draw.weights - scaled.weights).max())
    return (
        read.setting(r)
        | read.on_screen(r, ["spread", "saturated"])
        | {
            "c_over_t": s.scale / s.temperature,
            "sqrt_c": 1 / math.sqrt(s.d_k),
            "sqrt_t1_difference": difference,
            "same_as_sqrt": s.scaling != "qk_norm" and difference < SAME_WEIGHTS,
            "sqrt_t1_spread": float(np.median(scaled.logits.std(axis=-1))),
            "sqrt_t1_saturated": float(np.mean(scaled.max_weight > SATURATION)),
        }
    )


ALWAYS = Question(
    "always-necessary",
    (
        Step({"d_k": 16, "scaling": "none"}, "training_loss", _small_d_k),
        Step({"d_k": 512, "scaling": "none", "variance": 0.1}, "training_sweep", _small_variance),
        Step({"d_k": 512, "scaling": "qk_norm", "variance": 4.0}, "spread", _qk_norm),
        Step({"d_k": 16, "scaling": "none", "temperature": 4.0}, "saturated", _temperature_instead),
    ),
)


# 14. Why dot-product attention with scaling rather than additive attention?


def _additive(r):
    """Spread and saturated rows of none and sqrt at the current d_k."""
    return read.setting(r) | read.curve(r, ["none", "sqrt"], ["spread", "saturated"])


ADDITIVE = Question("additive", (Step({"d_k": 512, "scaling": "none"}, "saturated", _additive),))
