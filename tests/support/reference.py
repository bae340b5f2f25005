"""Independent evaluations of the definitions, for the tests to compare against.

Nothing here imports ``app``: each quantity is computed the plain way, from
its definition, in float64 (finite differences) or in mpmath at high precision.
"""

import math

import mpmath
import numpy as np

EPS = 1e-5  # torch.nn.functional.layer_norm's default


POWER_ALPHA = 1 / 3  # the power rule's exponent in the tests: a cube root


def scale(scaling, d):
    if scaling == "power":
        return d**-POWER_ALPHA
    return 1.0 if scaling == "none" else 1.0 / d if scaling == "linear" else 1.0 / math.sqrt(d)


def float_weights(q_row, keys, scaling, temperature):
    """Softmax weights of one query row, plainly, in float64."""
    if scaling == "qk_norm":
        q_row = (q_row - q_row.mean()) / np.sqrt(q_row.var() + EPS)
        keys = (keys - keys.mean(1, keepdims=True)) / np.sqrt(keys.var(1, keepdims=True) + EPS)
    z = scale(scaling, len(q_row)) * (keys @ q_row) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def finite_difference_grad_norm(q_row, keys, scaling, temperature, h=1e-5):
    """``||dp/dq||_F`` by central differences, one query component at a time."""
    columns = []
    for i in range(len(q_row)):
        step = np.zeros_like(q_row)
        step[i] = h
        plus = float_weights(q_row + step, keys, scaling, temperature)
        minus = float_weights(q_row - step, keys, scaling, temperature)
        columns.append((plus - minus) / (2 * h))
    return float(np.linalg.norm(np.array(columns)))


def _mp_layer_norm(x):
    d = len(x)
    mean = mpmath.fsum(x) / d
    centred = [xi - mean for xi in x]
    sigma = mpmath.sqrt(mpmath.fsum(c * c for c in centred) / d + mpmath.mpf(EPS))
    return [c / sigma for c in centred], sigma


def mp_row_metrics(q_row, keys, scaling, temperature, dps):
    """Max weight, entropy, ``||J||_F`` and ``||dp/dq||_F`` of one row in mpmath.

    Builds ``J = diag(p) - p p^T`` and ``dp/dq = J (c/T) K_hat (dq_hat/dq)``
    as explicit matrices, with the layer norm's Jacobian
    ``(I - 1 1^T/d - y y^T/d) / sigma`` under qk_norm.
    """
    with mpmath.workdps(dps):
        d = len(q_row)
        q = [mpmath.mpf(float(x)) for x in q_row]
        ks = [[mpmath.mpf(float(x)) for x in row] for row in keys]
        c = {
            "none": mpmath.mpf(1),
            "linear": 1 / mpmath.mpf(d),
            "power": mpmath.mpf(d) ** -mpmath.mpf(POWER_ALPHA),
        }.get(scaling, 1 / mpmath.sqrt(d))
        if scaling == "qk_norm":
            q_hat, sigma = _mp_layer_norm(q)
            ks = [_mp_layer_norm(k)[0] for k in ks]
            dq_hat = mpmath.matrix(d, d)
            for i in range(d):
                for j in range(d):
                    dq_hat[i, j] = ((i == j) - mpmath.mpf(1) / d - q_hat[i] * q_hat[j] / d) / sigma
        else:
            q_hat = q
            dq_hat = mpmath.eye(d)
        z = [
            c * mpmath.fsum(a * b for a, b in zip(q_hat, k, strict=True)) / temperature for k in ks
        ]
        top = max(z)
        e = [mpmath.exp(zi - top) for zi in z]
        total = mpmath.fsum(e)
        p = [ei / total for ei in e]
        n = len(p)
        jac = mpmath.matrix(n, n)
        for i in range(n):
            for j in range(n):
                jac[i, j] = (p[i] if i == j else 0) - p[i] * p[j]
        k_mat = mpmath.matrix(ks) * (c / temperature)
        grad = jac * k_mat * dq_hat
        entropy = -mpmath.fsum(pi * mpmath.log(pi) for pi in p if pi > 0)
        return {
            "max_weight": max(p),
            "one_minus_max": mpmath.fsum(pi for pi in p if pi != max(p)),
            "entropy": entropy,
            "jacobian_norm": mpmath.mnorm(jac, "f"),
            "query_grad_norm": mpmath.mnorm(grad, "f"),
        }
