"""The questions about the scores and the softmax they feed: what the scaling is for,
how it is computed, the d_k of real models, the softmax's output, what each symbol
stands for. Each question's numbers come first, then its steps.

A function of numbers reads only the results it is given; a claim that depends on
the numbers is a condition it computes."""

import math

import numpy as np

from app.questions import reading as read
from app.questions.steps import Question, Step
from app.simulation import SATURATION, median_row
from app.style import MODEL_HEADS

# 1. What is the purpose of scaling the dot product in self-attention?


def _purpose_scores(r):
    """The unscaled scores' spread (theory sqrt(d_k) v) and what the rule on screen makes of it."""
    return read.setting(r) | {
        "scores_std": read.scores_std(r),
        "raw_theory": math.sqrt(r.settings.d_k) * r.settings.variance,
        "logits_std": float(np.std(r.draw.logits)),
        "saturated": float(np.mean(r.draw.max_weight > SATURATION)),
    }


def _purpose_flat(r):
    """The median row spread of none and sqrt at d_k = 16, 1024 and their saturated shares
    at the current d_k."""
    rules = ["none", "sqrt"]
    return (
        read.setting(r)
        | read.curve(r, rules, ["spread"], 16)
        | read.curve(r, rules, ["spread"], 1024)
        | read.curve(r, rules, ["saturated"])
        | {"sqrt_theory": read.spread_theory(r, 1 / math.sqrt(r.settings.d_k))}
    )


PURPOSE = Question(
    "purpose",
    (
        Step({"d_k": 512, "scaling": "none"}, "histogram", _purpose_scores),
        Step({"d_k": 512, "scaling": "sqrt"}, "spread", _purpose_flat),
    ),
)


# 2. How is the scaling factor calculated in the Transformer architecture?


def _factor(r):
    """c = 1/sqrt(d_k), and the spread of the scores before and after it."""
    d_k = r.settings.d_k
    return read.setting(r) | {
        "root": math.sqrt(d_k),
        "sqrt_c": 1 / math.sqrt(d_k),
        "raw_theory": math.sqrt(d_k) * r.settings.variance,
        "scores_std": read.scores_std(r),
        "scaled_std": read.scores_std(r) / math.sqrt(d_k),
    }


FACTOR = Question("scaling-factor", (Step({"d_k": 64, "scaling": "sqrt"}, "histogram", _factor),))


# 3. What is the typical value of the key dimension d_k in Transformers?


def _models_table() -> str:
    """MODEL_HEADS as a Markdown table (names and numbers only)."""
    rows = [f"| {m} | {d} / {h} | {d // h} |" for m, d, h in MODEL_HEADS]
    return "\n".join(["| model | d_model / heads | d_k |", "|---|---|---|", *rows])


def _typical(r):
    """d_k = d_model / heads of MODEL_HEADS, and none against sqrt at the current d_k."""
    sizes = sorted({d_model // heads for _, d_model, heads in MODEL_HEADS})
    return (
        read.setting(r)
        | read.curve(r, ["none", "sqrt"], ["spread", "max_weight", "saturated"])
        | {
            "models_table": _models_table(),
            "typical": " or ".join(map(str, sizes)),
            "none_theory": read.spread_theory(r, 1.0),
        }
    )


TYPICAL = Question("typical-d-k", (Step({"d_k": 64, "scaling": "none"}, "saturated", _typical),))


# 6. How does scaling affect the softmax output?


def _query_row(r):
    """One query's logits (spread, top gap) and its weights, beside all rows' medians."""
    row = r.shown_row
    z = r.draw.logits[row]
    gap = float(np.diff(np.sort(z)[-2:])[0]) if z.size > 1 else 0.0
    n = r.settings.n_keys
    return (
        read.setting(r)
        | read.on_screen(r, ["spread", "max_weight", "entropy", "saturated"])
        | {
            "row": row + 1,
            "row_is_median": row == median_row(r.draw),
            "row_std": float(z.std()),
            "row_gap": gap,
            "row_decades": gap / math.log(10),
            "row_max_weight": float(r.draw.max_weight[row]),
            "row_entropy": float(r.draw.entropy[row] / math.log(n)) if n > 1 else 0.0,
            "uniform": 1 / n,
        }
    )


SOFTMAX_OUTPUT = Question(
    "softmax-output",
    (
        Step({"d_k": 512, "scaling": "none"}, "row_weights", _query_row, "answer"),
        Step({"d_k": 512, "scaling": "sqrt"}, "row_weights", _query_row, "answer"),
    ),
)


# 10. In (Q Kᵀ)/√d_k, what does each component represent?


def _components(r):
    """The shapes, and q_1 . k_1 through the scaling to its weight."""
    s, draw = r.settings, r.draw
    score = float(draw.q[0] @ draw.k[0])
    return read.setting(r) | {
        "scores_std": read.scores_std(r),
        "raw_theory": math.sqrt(s.d_k) * s.variance,
        "score": score,
        "root": math.sqrt(s.d_k),
        "scaled_score": score / math.sqrt(s.d_k),
        "logit": float(draw.logits[0, 0]),
        "weight": float(draw.weights[0, 0]),
    }


COMPONENTS = Question(
    "components", (Step({"d_k": 16, "n_keys": 32, "scaling": "sqrt"}, "heatmap", _components),)
)
