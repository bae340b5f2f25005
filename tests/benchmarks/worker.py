"""Where a d_k move's time goes in the site's worker, offline Chromium.

Opens the built site at ``?section=SECTION``, waits for ready, wraps the page's
steps in the worker's Python with timers (``AttentionLab``'s methods, the
address, the captions, and the link's patch to the page), presses d_k's arrow
keys MOVES times (64 <-> 128, each press PAUSE_MS after the last and once the
worker is idle) and prints each step's median per call. ``apply_page_patch`` is
every patch from the page (a move's, and the layout's small ones); a move's own
steps are the rest.

Run: python tests/benchmarks/worker.py [--section spread]   (builds the site if stale)
"""

import argparse
import json
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from browser import OFFLINE_ARGS, http_server, launch, slider_handle

import build
from app.options import SECTIONS

MOVES = 20
PAUSE_MS = 300  # between presses: each finds the page and the worker at rest

# Run in the worker once the page is live: every step's durations (ms) in _TIMES.
TIMERS_PY = """
import collections, functools, gc, json, statistics, time
from app import page, patches, worker

_TIMES = collections.defaultdict(list)

def _timed(owner, name, label):
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _TIMES[label].append((time.perf_counter() - start) * 1e3)

    setattr(owner, name, timed)

lab = next(o for o in gc.get_objects() if isinstance(o, page.AttentionLab))
_timed(worker, "apply_page_patch", "apply_page_patch (every patch from the page)")
_timed(page, "simulate", "  simulate (the draw at the new d_k)")
_timed(lab, "_update", "  _update (simulate, the figures' new data)")
_timed(lab.training, "later", "  training.later (nothing to train: the words)")
_timed(lab, "_show_words", "    _show_words (captions and summary)")
_timed(lab.stage, "show_captions", "      show_captions (Panel renders their Markdown)")
_timed(lab.address, "write", "  address.write")
_timed(next(iter(patches._LINKS.values())), "_send", "  the patch to the page (made, posted)")
"""
REPORT_PY = "json.dumps({k: [len(v), statistics.median(v)] for k, v in _TIMES.items()})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", default="spread", choices=list(SECTIONS))
    parser.add_argument("--slider", default="d_k", choices=["d_k", "variance"])
    args = parser.parse_args(argv)
    if build.is_stale(build.SITE):
        build.build()
    with sync_playwright() as p, http_server(build.SITE) as url:
        browser = launch(p, OFFLINE_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}?section={args.section}")
        page.wait_for_function(
            "() => document.getElementById('lab-status').dataset.state === 'ready'",
            timeout=300_000,
        )
        worker = page.workers[0]
        worker.evaluate(f"self.pyodide.runPython({TIMERS_PY!r})")
        slider_handle(page, args.slider).focus()
        for i in range(MOVES):
            page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            page.wait_for_timeout(PAUSE_MS)
            page.wait_for_function("() => !pyodideWorker.busy")
        times = json.loads(worker.evaluate(f"self.pyodide.runPython({REPORT_PY!r})"))
        browser.close()
    print(
        f"A {args.slider} move in the worker, {args.section} section, {MOVES} moves (ms per call)"
    )
    for label, (calls, median) in times.items():
        print(f"{label:<52} {calls:4d} calls   median {median:6.2f}")


if __name__ == "__main__":
    main()
