"""Would a naive softmax overflow? The logits on screen against each format's range.

``exp(z)`` overflows once ``z`` exceeds the natural log of the format's largest
finite number. A naive softmax ``exp(z_j) / sum_l exp(z_l)`` (no subtraction
of the row's maximum) overflows once its sum does, that is once
``log sum_l exp(z_l)`` exceeds that limit: the row comes out as NaN (inf / inf)
or as all zeros (finite / inf).

>>> round(EXP_LIMITS["float16"], 2), round(EXP_LIMITS["float32"], 2)
(11.09, 88.72)
"""

import math

import numpy as np

# Largest finite numbers: IEEE half and single precision, and bfloat16 (8 exponent
# bits like float32, 7 stored mantissa bits: (2 - 2^-7) * 2^127).
FORMAT_MAX = {
    "float16": float(np.finfo(np.float16).max),
    "bfloat16": (2 - 2**-7) * 2.0**127,
    "float32": float(np.finfo(np.float32).max),
}
EXP_LIMITS = {name: math.log(largest) for name, largest in FORMAT_MAX.items()}


def naive_overflow_shares(logits: np.ndarray) -> dict[str, float]:
    """Per format of EXP_LIMITS, the share of rows whose naive softmax overflows:
    ``log sum_j exp(z_j) > ln x_max``."""
    top = logits.max(axis=-1, keepdims=True)
    log_sum = top[..., 0] + np.log(np.sum(np.exp(logits - top), axis=-1))
    return {name: float(np.mean(log_sum > limit)) for name, limit in EXP_LIMITS.items()}
