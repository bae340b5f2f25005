"""Slider move to every plot updated, under ``panel serve``, in headless Chromium.

For each kind of move (d_k, which only redraws the current draw; variance,
which also re-runs the sweep against d_k) it presses an arrow key on the
slider 40 times, alternating direction, and times from just before the key
press to the first animation frame after the update reached the browser (the
server sends all of one update in one message, so that is "every plot").
In the same run it times the bare ``simulate`` (and ``sweep``) for the same
settings, and prints the ratio.

Then a class: the time ``GET /main`` takes to answer (the server builds the
visitor's session, the whole document, before its first byte): SEQUENTIAL
visitors one after another, then VISITORS (1, 6, 30) at once from threads on
loopback (p50, p95 and the last, from the first request sent), with one
visitor's d_k key press timed while the others load; for one server process
and for ``--num-procs 2``. ``--before REF`` runs the same class first against
another commit (checked out in a temporary git worktree), one server process,
for figures before and after in one run. Every request is bounded
(PAGE_TIMEOUT); the run stops by itself.

Run: python tests/benchmarks/page.py [--no-moves] [--no-class] [--before REF]
"""

import argparse
import contextlib
import math
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # sitebuild, for browser
from browser import PAGE_TIMEOUT, REPO, launch, panel_server, slider_handle, wait_for_source

from app.options import D_K_OPTIONS
from app.simulation import Settings, simulate
from app.sweep import sweep

MOVES = 40

# Time of the first frame after the plots' data (the first section's histogram; a move
# sends all its data in one message) and after the text summary (sent after) change.
HOOK_JS = """() => {
  window.__lab = {plots: 0, text: 0};
  const stamp = (key) => requestAnimationFrame(() => { window.__lab[key] = performance.now(); });
  Bokeh.documents[Bokeh.documents.length - 1].on_change((event) => {
    const name = event.model && event.model.name;
    if (name === 'histogram:scaled') stamp('plots');
    if (event.model && (event.model.css_classes || []).includes('lab-summary')) stamp('text');
  });
}"""


def move_latencies(page, slider_name, moves=MOVES):
    """Key press to plots updated, and to plots and text updated, in ms, per move."""
    handle = slider_handle(page, slider_name)
    handle.focus()
    plots, everything = [], []
    for i in range(moves):
        start = page.evaluate("() => (window.__lab = {plots: 0, text: 0}, performance.now())")
        page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        done = page.evaluate(
            "() => new Promise((resolve, reject) => { const t0 = performance.now();"
            " const poll = () => window.__lab.plots && window.__lab.text ? resolve(window.__lab)"
            f" : performance.now() - t0 > {PAGE_TIMEOUT * 1000}"
            " ? reject(new Error('no update'))"
            " : setTimeout(poll, 1); poll(); })"
        )
        plots.append(done["plots"] - start)
        everything.append(max(done["plots"], done["text"]) - start)
    return plots, everything


def bare_seconds(fn, repeats=MOVES):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def report(label, latencies_ms, bare_ms):
    median, p95 = statistics.median(latencies_ms), float(np.percentile(latencies_ms, 95))
    bare = statistics.median(bare_ms)
    print(f"{label:<34}{median:>9.1f}{p95:>9.1f}{bare:>11.1f}{median / bare:>8.1f}")


SEQUENTIAL = 3
VISITORS = (1, 6, 30)


def get_seconds(url: str) -> float:
    """Seconds until ``GET url`` has answered in full (inf: not within PAGE_TIMEOUT)."""
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=PAGE_TIMEOUT) as response:
            response.read()
    except TimeoutError:
        return float("inf")
    return time.perf_counter() - start


def visitors_at_once(url: str, n: int, page) -> tuple[list[float], float]:
    """``n`` visitors' GETs sent at once: each one's seconds to its page; and the open
    ``page``'s d_k key press to plots updated (ms; inf: none within PAGE_TIMEOUT)
    while they load."""
    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(get_seconds, url) for _ in range(n)]
        try:
            move = move_latencies(page, "d_k", moves=1)[0][0]
        except PlaywrightError:  # no update within PAGE_TIMEOUT
            move = float("inf")
        return [f.result() for f in futures], move


@contextlib.contextmanager
def checkout(ref: str):
    """Commit ``ref`` of this repository, checked out in a temporary git worktree."""
    with tempfile.TemporaryDirectory() as tmp:
        add = ["git", "-C", REPO, "worktree", "add", "-q", "--detach", tmp, ref]
        subprocess.run(add, check=True)
        try:
            yield Path(tmp)
        finally:
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", tmp], check=True)


def class_run(label: str, args: tuple = (), repo: Path = REPO):
    """A class of visitors against one ``panel serve`` of ``repo``, started with ``args``."""
    print(f"\n{label}: seconds to GET /main answered")
    with (
        tempfile.TemporaryDirectory() as tmp,
        panel_server(Path(tmp) / "serve.log", args=args, repo=repo) as url,
    ):
        one_by_one = [get_seconds(url) for _ in range(SEQUENTIAL)]  # the fixture's came first
        print(f"  {SEQUENTIAL} one after another: " + ", ".join(f"{t:.2f}" for t in one_by_one))
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url, timeout=PAGE_TIMEOUT * 1000)
            wait_for_source(page, "histogram:raw", "(d) => d.left.length > 0")
            page.evaluate(HOOK_JS)
            for n in VISITORS:
                times, move = visitors_at_once(url, n, page)
                print(
                    f"  {n:>2} at once: p50 {statistics.median(times):6.2f}"
                    f"  p95 {sorted(times)[math.ceil(0.95 * n) - 1]:6.2f}  last {max(times):6.2f};"
                    f" a d_k move meanwhile {move:7.0f} ms"
                )
            browser.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-moves", action="store_true", help="skip the slider moves")
    parser.add_argument("--no-class", action="store_true", help="skip the class of visitors")
    parser.add_argument("--before", metavar="REF", help="the class against commit REF first")
    args = parser.parse_args(argv)
    if not args.no_moves:
        slider_moves()
    if args.before and not args.no_class:
        with checkout(args.before) as before:
            class_run(f"Before ({args.before}), one server process", repo=before)
    if not args.no_class:
        class_run("One server process")
        class_run("Two server processes (--num-procs 2)", ("--num-procs", "2"))


def slider_moves():
    with tempfile.TemporaryDirectory() as tmp, panel_server(Path(tmp) / "serve.log") as url:
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            wait_for_source(page, "histogram:raw", "(d) => d.left.length > 0")
            page.evaluate(HOOK_JS)
            d_k_moves, d_k_all = move_latencies(page, "d_k")  # d_k 64 <-> 128
            variance_moves, variance_all = move_latencies(page, "variance")  # variance 1 <-> 1.05
            browser.close()
    base = Settings(d_k=64, variance=1.0, scaling="sqrt")
    snap_ms = [1e3 * t for t in bare_seconds(lambda: simulate(base))]
    full_ms = [1e3 * t for t in bare_seconds(lambda: (simulate(base), sweep(base, D_K_OPTIONS)))]
    print(f"{MOVES} moves each; times in ms")
    print(f"{'move':<34}{'median':>9}{'p95':>9}{'bare sim':>11}{'ratio':>8}")
    report("d_k: plots updated", d_k_moves, snap_ms)
    report("d_k: plots and text updated", d_k_all, snap_ms)
    report("variance: plots updated", variance_moves, full_ms)
    report("variance: plots and text updated", variance_all, full_ms)


if __name__ == "__main__":
    main()
