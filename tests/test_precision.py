"""The naive-softmax overflow figures against numpy's own float16 and float32."""

import math

import numpy as np
import pytest

from app.precision import EXP_LIMITS, FORMAT_MAX, naive_overflow_shares
from app.simulation import Settings, simulate


def test_the_limits_are_the_logs_of_the_largest_finite_numbers():
    assert EXP_LIMITS["float16"] == pytest.approx(math.log(65504.0), rel=1e-15)
    assert EXP_LIMITS["float32"] == pytest.approx(88.7228, abs=1e-4)
    # bfloat16: 8 exponent bits, 7 stored mantissa bits; just below float32's maximum
    assert FORMAT_MAX["bfloat16"] == float.fromhex("0x1.fep127")
    assert EXP_LIMITS["bfloat16"] < EXP_LIMITS["float32"]
    for name in ("float16", "float32"):  # exp overflows just above the limit, not below
        dtype = np.dtype(name)
        limit = EXP_LIMITS[name]
        with np.errstate(over="ignore"):
            assert np.isfinite(np.exp(np.array(limit * (1 - 1e-3), dtype=dtype)))
            assert np.isinf(np.exp(np.array(limit * (1 + 1e-3), dtype=dtype)))


@pytest.mark.parametrize("name", ["float16", "float32"])
@pytest.mark.parametrize(
    ("d_k", "scaling", "variance"),
    [  # shares from 0 to 1: in float16, 5% to 100%; in float32, 0%, 19% and 81%
        (64, "sqrt", 1.0),
        (64, "sqrt", 4.0),
        (8, "none", 1.0),
        (16, "none", 1.0),
        (1024, "none", 1.0),
        (2048, "none", 1.0),
    ],
)
def test_the_share_is_that_of_rows_a_naive_softmax_in_that_format_overflows_in(
    name, d_k, scaling, variance
):
    """Overflowed rows come out as NaN (inf / inf) or as all zeros (finite / inf)."""
    logits = simulate(Settings(d_k=d_k, variance=variance, scaling=scaling)).logits
    with np.errstate(over="ignore", invalid="ignore"):
        z = logits.astype(name)
        total = np.sum(np.exp(z), axis=-1, keepdims=True, dtype=name)
        naive = np.exp(z) / total
    overflowed = np.isinf(total[:, 0])
    wrong = ~np.all(np.isfinite(naive), axis=-1) | (np.sum(naive, axis=-1) == 0)
    np.testing.assert_array_equal(wrong, overflowed)
    assert naive_overflow_shares(logits)[name] == np.mean(overflowed)
