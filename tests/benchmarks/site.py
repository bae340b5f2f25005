"""The self-contained site in headless Chromium, offline, against a bare Pyodide floor.

For the app: time to first paint, to prerendered plots on screen, to
interactive (the live page embedded and linked); slider-move latency (key
press on d_k to the first frame after the heatmap's data changed) over 40
moves; bytes transferred and the ten largest files. In the same run, the
floor: a bare page whose worker boots the same Pyodide from the same folder
and imports numpy. Each page is loaded 3 times, alternating, in a fresh
browser context (empty cache); medians are reported with the ratios app/floor.

Aims (reported, not asserted): plots visible under 1 s, p95 slider latency
under 100 ms, interactive within 2x the floor.

Run: python tests/benchmarks/site.py   (builds the site first if it is stale)
"""

import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from browser import OFFLINE_ARGS, http_server, launch

import build
from benchmarks.page import HOOK_JS, move_latencies

RUNS = 3
# True once 8 plot canvases are in the page (they live in shadow roots).
EIGHT_CANVASES_JS = """() => {
  let canvases = 0;
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.tagName === 'CANVAS') canvases++;
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return canvases >= 8;
}"""

FLOOR_HTML = """<!DOCTYPE html><html><body><p id="state">loading</p><script>
const worker = new Worker('./floor.js');
worker.onmessage = (e) => { window.ready = performance.now();
  document.getElementById('state').textContent = e.data; };
</script></body></html>"""
FLOOR_WORKER = """importScripts('./pyodide/pyodide.js');
(async () => {
  const pyodide = await loadPyodide();
  await pyodide.loadPackage('numpy');
  self.postMessage(pyodide.runPython('import numpy; numpy.__version__'));
})();"""


class CountingHandler(build.SiteHandler):
    """The site's handler, recording the bytes of every file it serves."""

    served: list

    def copyfile(self, source, outputfile):
        path = self.translate_path(self.path)
        self.served.append((Path(path).name, Path(path).stat().st_size))
        super().copyfile(source, outputfile)


def counting_handler() -> tuple[type, list]:
    """A site handler class and the list of ``(file, bytes)`` it records."""
    served = []
    return type("Handler", (CountingHandler,), {"served": served}), served


def load_app(browser, url, moves: bool):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(EIGHT_CANVASES_JS, polling="raf", timeout=60_000)
    plots = page.evaluate("performance.now()")
    page.wait_for_function(
        "() => document.getElementById('lab-status').dataset.state !== 'loading'",
        polling=10,
        timeout=300_000,
    )
    state = page.evaluate("document.getElementById('lab-status').dataset.state")
    if state != "ready":
        raise RuntimeError(page.locator("#lab-status").inner_text())
    interactive = page.evaluate("performance.now()")
    paint = page.evaluate(
        "performance.getEntriesByType('paint').find((e) => e.name === 'first-paint').startTime"
    )
    latencies = ([], [])
    if moves:
        page.evaluate(HOOK_JS)
        latencies = move_latencies(page, 0)
    context.close()
    return {"paint": paint, "plots": plots, "interactive": interactive}, latencies


def load_floor(browser, url):
    context = browser.new_context()
    page = context.new_page()
    page.goto(url + "floor.html")
    page.wait_for_function("() => window.ready !== undefined", polling=10, timeout=300_000)
    ready = page.evaluate("window.ready")
    context.close()
    return ready


def main():
    if build.is_stale(build.SITE):
        build.build()
    with tempfile.TemporaryDirectory() as tmp:
        floor_dir = Path(tmp)
        (floor_dir / "floor.html").write_text(FLOOR_HTML)
        (floor_dir / "floor.js").write_text(FLOOR_WORKER)
        (floor_dir / "pyodide").symlink_to(build.SITE / "pyodide")
        app_handler, app_served = counting_handler()
        floor_handler, floor_served = counting_handler()
        app_runs, floor_runs, latencies = [], [], None
        with (
            http_server(build.SITE, app_handler) as app_url,
            http_server(floor_dir, floor_handler) as floor_url,
            sync_playwright() as p,
        ):
            browser = launch(p, OFFLINE_ARGS)
            for run in range(RUNS):
                if run == 0:
                    app_served.clear()
                times, moves = load_app(browser, app_url, moves=run == 0)
                app_runs.append(times)
                latencies = latencies or moves
                if run == 0:
                    first_load = list(app_served)
                floor_runs.append(load_floor(browser, floor_url))
                if run == 0:
                    floor_bytes = sum(size for _, size in floor_served)
            browser.close()

    def median(key):
        return statistics.median(r[key] for r in app_runs)

    floor = statistics.median(floor_runs)
    app_bytes = sum(size for _, size in first_load)
    print(f"Offline site in Chromium; medians of {RUNS} cold loads (ms)")
    print(f"  first paint                {median('paint'):8.0f}")
    print(f"  prerendered plots visible  {median('plots'):8.0f}")
    print(f"  interactive                {median('interactive'):8.0f}")
    print(f"  floor (Pyodide + numpy)    {floor:8.0f}")
    print(f"  ratio interactive / floor  {median('interactive') / floor:8.2f}")
    print(f"Slider move (d_k, keyboard), {len(latencies[0])} moves (ms)")
    for label, values in zip(("plots updated", "plots and text updated"), latencies, strict=True):
        print(
            f"  {label:<24} median {statistics.median(values):6.1f}"
            f"   p95 {np.percentile(values, 95):6.1f}"
        )
    print(
        f"Transferred: app {app_bytes / 1e6:.1f} MB in {len(first_load)} requests; "
        f"floor {floor_bytes / 1e6:.1f} MB; ratio {app_bytes / floor_bytes:.2f}"
    )
    print("Ten largest files:")
    for name, size in sorted(set(first_load), key=lambda f: -f[1])[:10]:
        print(f"  {size / 1e6:7.2f} MB  {name}")


if __name__ == "__main__":
    main()
