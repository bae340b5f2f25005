"""Time app.training in CPython and in the built site's Pyodide, against a bare floor.

(a) ``train``: the five rules, 200 steps, d_k = 1024, n = 64, d_model = 16;
(b) ``training_sweep``: the same for d_k = 1, 2, 4, ..., 1024;
(c) ``rates.rates_steps``: the learning-rate views' runs (every rule at 13
    learning rates at 4 d_k, and the edge of stability searched at 8 d_k), the time
    to "swept", and with ``rates.check_steps`` (the windows' holes and chaos) the
    time to "checked", at RATE_SCENARIOS: the defaults, a small v (edges still rising), nothing
    training (v/T = 40) and the power rule at α = 3/2 (its windows above the guess).
The floor is the naive forward pass per step at the same sizes: Q = X W_Q,
K = X W_K, Q K^T and a softmax, for each rule (and each d_k), with no backward
pass at all (app.descent's Gram form, for d_k >= 2 d_model, needs less).
Medians of REPEATS runs, measured in
the same process; the browser figures come from the site's own worker (headless
Chromium, offline), timed there with time.perf_counter.

Aims (reported, not asserted): (a) under 30 ms in CPython and 150 ms in the
browser; (b) under 300 ms and 1.5 s; (c) under 10 s in the browser (issue 20).

Run: python tests/benchmarks/training.py   (builds the site first if it is stale)
     python tests/benchmarks/training.py --before DIR   (also a checkout of another
     commit, its site built: both timed in one run, CPython in a process each)
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from browser import OFFLINE_ARGS, http_server, launch

import build
from app.simulation import SCALING_RULES
from sitebuild.serve import SiteHandler

REPEATS = 5

# Runs in CPython here and in the worker there; prints a JSON dict of medians in ms.
TIMING = """
import json, statistics, time
import numpy as np
from app.simulation import SCALING_RULES, Settings
import app.rates as rates
from app.training import DEFAULT_STEPS, initial_draw, to_end, train, training_sweep

D_KS = [2**i for i in range(11)]
settings = Settings(d_k=1024, variance=1.0, scaling="sqrt", n_keys=64)


def floor(d_ks):
    for d_k in d_ks:
        x, w_q, w_k = initial_draw(Settings(d_k=d_k, variance=1.0, scaling="sqrt"))
        for _ in range(len(SCALING_RULES) * (DEFAULT_STEPS + 1)):
            z = (x @ w_q) @ (x @ w_k).T
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)


def ms(fn):
    fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


RATE_SCENARIOS = {
    "defaults": {},
    "v = 0.1": {"variance": 0.1},
    "v = 4, T = 0.1": {"variance": 4.0, "temperature": 0.1},
    "α = 3/2": {"scaling": "power", "alpha": 1.5},
}


# The time to "swept" (rates_steps) and, where the app checks the windows after
# (check_steps), to "checked"; once each: they take seconds.
def rates_ms(name, changes):
    s = Settings(**{"d_k": 1024, "variance": 1.0, "scaling": "sqrt", **changes})
    start = time.perf_counter()
    swept = to_end(rates.rates_steps(s))
    times = {f"rates, {name}": 1e3 * (time.perf_counter() - start)}
    if hasattr(rates, "check_steps"):
        to_end(rates.check_steps(s, swept))
        times[f"rates checked, {name}"] = 1e3 * (time.perf_counter() - start)
    return times


json.dumps({
    "train": ms(lambda: train(settings)),
    "train floor": ms(lambda: floor([1024])),
    "sweep": ms(lambda: training_sweep(settings, D_KS)),
    "sweep floor": ms(lambda: floor(D_KS)),
    **{k: v for name, change in RATE_SCENARIOS.items() for k, v in rates_ms(name, change).items()},
})
"""


def cpython(repo: Path) -> dict:
    """TIMING in a CPython process of its own, importing the app of ``repo``."""
    body, last = TIMING.rsplit("\n\n", 1)
    code = f"REPEATS = {REPEATS}\n{body}\nprint({last})"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def browser(site: Path) -> dict:
    with http_server(site, SiteHandler) as url, sync_playwright() as p:
        chromium = launch(p, OFFLINE_ARGS)
        page = chromium.new_page()
        page.goto(url)
        page.wait_for_function(
            "document.getElementById('lab-status').dataset.state === 'ready'", timeout=300_000
        )
        (worker,) = page.workers
        code = f"REPEATS = {REPEATS}\n" + TIMING
        result = worker.evaluate("(code) => self.pyodide.runPython(code)", code)
        chromium.close()
    return json.loads(result)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of another commit, site built")
    args = parser.parse_args(argv)
    if build.is_stale(build.SITE):
        build.build()
    repos = {"": build.REPO} | ({"before ": args.before.resolve()} if args.before else {})
    results = {}
    for name, repo in repos.items():
        results[f"{name}CPython"] = cpython(repo)
        results[f"{name}browser"] = browser(repo / build.SITE.relative_to(build.REPO))
    print(
        f"Medians of {REPEATS} runs, ms ({len(SCALING_RULES)} rules, 200 steps, n = 64, "
        "d_model = 16); (c) once each"
    )
    print(f"{'':<34}" + "".join(f"{name:>18}" for name in results))
    rows = [
        ("train", "(a) train, d_k = 1024"),
        ("train floor", "    floor: forward passes only"),
        ("sweep", "(b) sweep, d_k = 1 .. 1024"),
        ("sweep floor", "    floor: forward passes only"),
    ] + [(key, f"(c) learning {key}") for key in results["CPython"] if key.startswith("rates")]
    for key, label in rows:
        cells = (r.get(key, float("nan")) for r in results.values())  # nan: not measured
        print(f"{label:<34}" + "".join(f"{cell:>18.1f}" for cell in cells))


if __name__ == "__main__":
    main()
