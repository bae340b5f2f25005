"""The questions about gradients and training: unstable gradients, skipping the scaling,
why the square root, model quality. Each question's numbers come first, then its
steps.

A function of numbers reads only the results it is given; a claim that depends on
the numbers is a condition it computes."""

import numpy as np

from app import theory
from app.captions import settling
from app.questions import reading as read
from app.questions.reading import LEARNS_BELOW, STALLED_ABOVE, TRAINING_D_KS
from app.questions.steps import Question, Step, TrainingPending
from app.rates import LEARNING_RATES, MUP_BASE_D_K, mup_base, written
from app.simulation import SATURATION
from app.style import fraction

# 4. Why does scaling prevent unstable gradients in training?

UNIFORM_CONTRAST = 5


def _gradient_spread(r):
    """The query gradient's median and 10th-90th percentiles, none against sqrt; whether
    the unscaled median is the larger."""
    none = r.curves["none"]["query_grad_norm"]
    sqrt = r.curves["sqrt"]["query_grad_norm"]
    peak = int(np.argmax(none))
    numbers = (
        read.setting(r)
        | read.curve(r, ["none", "sqrt"], ["grad", "grad_p10", "grad_p90"])
        | read.curve(r, ["none"], ["saturated"])
        | {
            "none_decades": read.decades(r, "none"),
            "sqrt_grad_min": float(sqrt.min()),
            "sqrt_grad_max": float(sqrt.max()),
            "none_grad_peak": float(none[peak]),
            "none_grad_peak_d_k": int(r.curves["none"]["d_k"][peak]),
            "none_grad_1024": float(none[-1]),
            "uniform_jacobian": theory.uniform_jacobian_norm(r.settings.n_keys),
        }
    )
    # a uniform row's ‖J‖_F reads as a contrast to a saturated row's only when it is
    # UNIFORM_CONTRAST times the saturated bound or more: n ≤ 98 keys
    uniform_large = numbers["uniform_jacobian"] >= UNIFORM_CONTRAST * theory.SATURATED_JACOBIAN_NORM
    return numbers | {
        "none_grad_larger": numbers["none_grad"] > numbers["sqrt_grad"],
        "uniform_jacobian_large": uniform_large,
    }


def _learning(r):
    """Loss and accuracy before and after training, none against sqrt, at the current d_k;
    whether a run is chaotic; if not, whether the unscaled run stalls while the scaled
    one learns, or ends lower."""
    runs = read.trained(r, ["none", "sqrt"])
    return (
        read.setting(r)
        | runs
        | {
            "tokens": r.runs[r.settings.d_k]["sqrt"].x.shape[0],
            "none_start_weight": float(r.runs[r.settings.d_k]["none"].max_weight[0]),
            "none_stalls_sqrt_learns": runs["none_kept"] > STALLED_ABOVE
            and runs["sqrt_kept"] < LEARNS_BELOW,
            "none_ahead": runs["none_loss"] < runs["sqrt_loss"],
        }
    )


GRADIENTS = Question(
    "unstable-gradients",
    (
        Step({"d_k": 512, "scaling": "none"}, "query_grad", _gradient_spread),
        Step({"d_k": 512, "scaling": "none"}, "training_loss", _learning),
    ),
)


# 5. What would happen if we skipped the scaling step?


def _one_hot_rows(r):
    """Spread, max weight, saturated share and entropy of none and sqrt at the current d_k."""
    numbers = read.setting(r) | read.curve(
        r, ["none", "sqrt"], ["spread", "max_weight", "saturated", "entropy"]
    )
    return numbers | {"none_most_saturated": numbers["none_saturated"] > 0.5}


def _learning_sweep(r):
    """Final losses of none and sqrt at TRAINING_D_KS, the share of its initial loss each
    keeps at the current d_k, which runs are chaotic, and where the theory puts the
    unscaled model's collapse."""
    runs = read.trained_sweep(r, ["none", "sqrt"]) | read.trained(r, ["none", "sqrt"])
    return (
        read.setting(r)
        | runs
        | read.collapse(r)
        | read.none_against_sqrt(runs, [f"_{d}" for d in TRAINING_D_KS])
        | {
            "none_start_weight": float(r.runs[r.settings.d_k]["none"].max_weight[0]),
            "none_stalls": runs["none_kept"] > STALLED_ABOVE,
            "none_stalls_sqrt_learns": runs["none_kept"] > STALLED_ABOVE
            and runs["sqrt_kept"] < LEARNS_BELOW,
        }
    )


SKIP = Question(
    "skip-scaling",
    (
        Step({"d_k": 512, "scaling": "none"}, "heatmap", _one_hot_rows),
        Step({"d_k": 512, "scaling": "none"}, "training_sweep", _learning_sweep),
    ),
)


# 7. Why √d_k and not another constant, a cube root, or d_k itself?


def _power_trend(r):
    """The power rule's spread d_k^(1/2 - alpha) v / T at d_k = 16 and 1024, theory and
    measured, and which way it goes."""
    s = r.settings
    exponent = 0.5 - s.alpha  # s = d_k^(1/2 - alpha) v / T
    theory_spread = {
        f"power_theory_{d}": d**exponent * s.variance / s.temperature for d in (16, 1024)
    }
    return (
        read.setting(r)
        | read.curve(r, ["power"], ["spread"], 16)
        | read.curve(r, ["power"], ["spread"], 1024)
        | theory_spread
        | {
            "exponent": fraction(exponent),
            "power_grows": exponent > 1e-12,
            "power_shrinks": exponent < -1e-12,
        }
    )


def _over_correct(r):
    """The spread and entropy of ÷ d_k at d_k = 16 and 1024."""
    numbers = (
        read.setting(r)
        | read.curve(r, ["linear"], ["spread", "entropy"], 16)
        | read.curve(r, ["linear"], ["spread", "entropy"], 1024)
    )
    return numbers | {"linear_fades": numbers["linear_entropy_1024"] > numbers["linear_entropy_16"]}


def _every_rule_spread(r):
    """The median spread of none, power, sqrt and linear at d_k = 16 and 1024."""
    rules = ["none", "power", "sqrt", "linear"]
    return (
        read.setting(r)
        | read.curve(r, rules, ["spread"], 16)
        | read.curve(r, rules, ["spread"], 1024)
    )


def _sqrt_settling(r):
    """Where the theory puts ÷ √d_k's edge settling (``captions.settling``), each name
    prefixed ``sqrt_``."""
    return {f"sqrt_{name}": value for name, value in settling("sqrt", r.settings).items()}


def _every_rule_training(r):
    """Final losses of sqrt, power, linear and none at TRAINING_D_KS (chaotic runs
    marked); once computed, the edges of sqrt, power and linear far past the slider."""
    rules = ["sqrt", "power", "linear", "none"]
    return (
        read.setting(r)
        | read.trained_sweep(r, rules)
        | read.rates(r, rules[:3], need=False)
        | _sqrt_settling(r)
    )


WHY_SQUARE_ROOT = Question(
    "why-square-root",
    (
        Step({"d_k": 512, "scaling": "power", "alpha": 1 / 3}, "spread", _power_trend),
        Step({"d_k": 512, "scaling": "linear"}, "entropy", _over_correct),
        Step({"d_k": 512, "scaling": "sqrt"}, "spread", _every_rule_spread),
        Step({"d_k": 512, "scaling": "sqrt"}, "training_sweep", _every_rule_training),
    ),
)


# 13. How does the scaling affect model quality?


def _quality(r):
    """The lowest losses over η of none and sqrt at the curves' d_k, as shares of their
    starts; where the theory puts the unscaled model's collapse; whether its rows start
    saturated at d_k = 1024."""
    start_weight = float(r.runs[1024]["none"].max_weight[0]) if 1024 in r.runs else None
    if start_weight is None:
        raise TrainingPending(1024)
    return (
        read.setting(r)
        | read.rates(r, ["none", "sqrt"])
        | read.collapse(r)
        | {
            "eta_low": LEARNING_RATES[0],
            "eta_high": LEARNING_RATES[-1],
            "none_start_weight_1024": start_weight,
            "none_starts_saturated_at_1024": start_weight > SATURATION,
        }
    )


QUALITY = Question(
    "model-quality",
    (Step({"d_k": 1024, "scaling": "none"}, "training_sweep", _quality),),
)


# 15. Does ÷ √d_k let one learning rate serve every d_k?


def _one_rate(r):
    """The edges of sqrt, power and linear at the curves' d_k; where the theory puts
    sqrt's edge settling (from v and T alone: no measured digit chooses the words), and
    whether it trains anywhere."""
    numbers = read.setting(r) | read.rates(r, ["sqrt", "power", "linear"])
    s = r.settings
    return (
        numbers
        | _sqrt_settling(r)
        | {
            "v_t": s.variance / s.temperature,
            "sqrt_trains": bool((~np.isnan(r.rates.edge["sqrt"])).any()),
        }
    )


def _one_rate_mup(r):
    """The edges of sqrt and linear at the curves' d_k, and linear's in μP's units: the
    base η0 = η MUP_BASE_D_K / d_k whose width-scaled η is the edge."""
    numbers = read.setting(r) | read.rates(r, ["sqrt", "linear"])
    d_ks = r.rates.edge_d_ks
    base = dict(zip(d_ks, mup_base(r.rates.edge["linear"], d_ks), strict=True))
    moved = dict(zip(d_ks, r.rates.chaotic["linear"], strict=True))
    return numbers | {
        "mup_base_d_k": MUP_BASE_D_K,
        **{f"linear_mup_{d}": written(base[d], moved[d]) for d in r.rates.d_ks},
    }


ONE_RATE = Question(
    "one-learning-rate",
    (
        Step({"d_k": 64, "scaling": "sqrt"}, "best_lr", _one_rate),
        Step({"d_k": 64, "scaling": "linear"}, "best_lr", _one_rate_mup),
    ),
)
