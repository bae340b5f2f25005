"""Time ``simulate`` and ``sweep`` against the bare floor they cannot avoid.

The floor for one setting is what any implementation must do: draw the
Gaussian queries and keys, multiply ``Q K^T`` and take a stable softmax. For
a sweep it is that, per d_k, with one product and one softmax per scaling rule
(four of each). Everything is timed in the same run and reported as a ratio,
since absolute times on a shared machine are noise.

Run: python tests/benchmarks/simulation.py
"""

import statistics
import time
from dataclasses import replace

import numpy as np

from app.simulation import SCALING_RULES, Settings, queries_and_keys, simulate
from app.sweep import sweep

D_KS = [2**i for i in range(11)]  # 1 .. 1024, what the page sweeps


def seconds(fn, repeats):
    """Median wall time of ``fn()`` over ``repeats`` calls, after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bare_softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def floor_one(settings, rules=("sqrt",)):
    q, k = queries_and_keys(settings)
    for rule in rules:
        bare_softmax((q @ k.T) * replace(settings, scaling=rule).scale)


def floor_sweep(settings):
    for d_k in D_KS:
        floor_one(replace(settings, d_k=d_k), SCALING_RULES)


def main():
    cases = {
        "default (64 x 64, d_k 1024)": Settings(d_k=1024, variance=1.0, scaling="sqrt"),
        "maximal (1024 x 1024, d_k 4096)": Settings(
            d_k=4096, variance=1.0, scaling="sqrt", n_queries=1024, n_keys=1024
        ),
    }
    print(f"{'what':<44}{'time':>12}{'floor':>12}{'ratio':>8}")
    for label, settings in cases.items():
        big = settings.n_keys > 64
        repeats = 3 if big else 30
        t = seconds(lambda s=settings: simulate(s), repeats)
        f = seconds(lambda s=settings: floor_one(s), repeats)
        print(f"{'simulate ' + label:<44}{t * 1e3:>10.2f}ms{f * 1e3:>10.2f}ms{t / f:>8.2f}")
        sweep_settings = settings if not big else replace(settings, d_k=1024)
        t = seconds(lambda s=sweep_settings: sweep(s, D_KS), 1 if big else 10)
        f = seconds(lambda s=sweep_settings: floor_sweep(s), 1 if big else 10)
        name = "sweep d_k=1..1024 " + label.split(",")[0] + ")"
        print(f"{name:<44}{t * 1e3:>10.2f}ms{f * 1e3:>10.2f}ms{t / f:>8.2f}")


if __name__ == "__main__":
    main()
