"""Time the learning-rate sweep of this checkout against another's, paired, in Pyodide.

The site's worker runs ``app.rates`` in the Pyodide the site ships (wasm numpy, no
BLAS), where a step of the descent costs 3 to 6 times what it does in CPython.
This loads that Pyodide in Node (no browser, no page: the worker's Python alone),
imports both checkouts' ``app`` side by side (as ``app_before`` and ``app_now``)
and times, for each of RATE_SCENARIOS, the time to "swept" (``rates_steps``)
twice for each, in the order before, now, now, before: a drift of the machine's
speed falls on both. The ratio of the best times is reported; the check after
(``check_steps``, where there is one) is timed once.

Run: python tests/benchmarks/rates_pyodide.py --before DIR
     (DIR: a checkout of another commit, e.g. ``git worktree add /tmp/before main``;
     the site of this checkout is built first if it is stale, for its Pyodide)
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import build

# The scenarios of training.py's (c): the defaults, a small v (edges still rising),
# nothing training (v/T = 40) and the power rule at α = 3/2 (its windows above the guess).
RATE_SCENARIOS = {
    "defaults": {},
    "v = 0.1": {"variance": 0.1},
    "v = 4, T = 0.1": {"variance": 4.0, "temperature": 0.1},
    "α = 3/2": {"scaling": "power", "alpha": 1.5},
}

NUMPY = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"

RUNNER = """
const { loadPyodide } = require(process.argv[2] + "/pyodide.js");
(async () => {
  const py = await loadPyodide({ indexURL: process.argv[2] + "/", stdLibURL: process.argv[3] });
  await py.loadPackage(process.argv[2] + "/" + process.argv[4]);
  py.FS.mkdirTree("/src");
  py.FS.mount(py.FS.filesystems.NODEFS, { root: process.argv[5] }, "/src");
  py.runPython("import sys; sys.path.insert(0, '/src')");
  py.runPython(require("fs").readFileSync(process.argv[5] + "/timing.py", "utf8"));
})();
"""

TIMING = """
import importlib, time
SCENARIOS = {scenarios!r}
apps = {{}}
for version in ("before", "now"):
    apps[version] = [importlib.import_module(f"app_{{version}}.{{name}}")
                     for name in ("simulation", "rates", "training")]
print(f"{{'':<18}}{{'before (s)':>12}}{{'now (s)':>12}}{{'now/before':>12}}{{'check (s)':>12}}")
for name, changes in SCENARIOS.items():
    best, check = {{}}, None
    for version in ("before", "now", "now", "before"):
        simulation, rates, training = apps[version]
        s = simulation.Settings(**{{"d_k": 1024, "variance": 1.0, "scaling": "sqrt", **changes}})
        start = time.perf_counter()
        swept = training.to_end(rates.rates_steps(s))
        took = time.perf_counter() - start
        best[version] = min(best.get(version, took), took)
        if version == "now" and check is None and hasattr(rates, "check_steps"):
            start = time.perf_counter()
            training.to_end(rates.check_steps(s, swept))
            check = time.perf_counter() - start
    ratio = best["now"] / best["before"]
    print(f"{{name:<18}}{{best['before']:>12.2f}}{{best['now']:>12.2f}}{{ratio:>12.3f}}"
          f"{{check or float('nan'):>12.2f}}", flush=True)
"""


def renamed_app(source: Path, target: Path, name: str):
    """A copy of the package ``source`` as ``target``, its ``app`` imports as ``name``."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    for path in target.rglob("*.py"):
        text = re.sub(r"\b(from|import) app\b", rf"\1 {name}", path.read_text())
        path.write_text(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of another commit")
    args = parser.parse_args(argv)
    if build.is_stale(build.SITE):
        build.build()
    pyodide = build.SITE / "pyodide"
    stdlib = next(pyodide.glob("python_stdlib.*.zip"))
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        renamed_app(args.before.resolve() / "app", work / "app_before", "app_before")
        renamed_app(build.REPO / "app", work / "app_now", "app_now")
        (work / "timing.py").write_text(TIMING.format(scenarios=RATE_SCENARIOS))
        (work / "runner.js").write_text(RUNNER)
        command = ["node", str(work / "runner.js"), str(pyodide), str(stdlib), NUMPY, str(work)]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
