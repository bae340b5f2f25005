"""The self-contained site in headless Chromium, offline, against its floors.

Start-up, per page variant (each loaded RUNS times, alternating, in a fresh
browser context with an empty cache; medians):

- first paint, prerendered plots on screen (the first section's figures'
  canvases), interactive (the status bar says ready: the link's scenario is
  live), bytes served (what the browser receives: this server does not
  compress) and peak memory (the highest resident set of the page's renderer
  process, which runs the worker; VmHWM from /proc).
- first press answered: LINK opened, d_k's ArrowLeft pressed as soon as the
  status says ready, timed to the address bar and the plots showing the move
  (from the start of navigation, polled every 10 ms).
- presses while training (the site as built, first run): LINK opened, as soon
  as it is ready (its training runs, then its learning-rate sweep),
  TRAINING_MOVES d_k presses, then as many once all is done; each timed from the
  key down to the plots showing the move and the next animation frame run (the
  page's frames never stop while it trains: its progress), and to Python's
  answer with the address bar. The aim: the first section's rendering floor plus
  50 ms (issue 18).
- clicks (the site as built, every run): CLICK_LINK opened, then a rule button
  and a section button clicked right after ready (while the link trains) and,
  once all is done, CLICKS more of each; each timed from the click to Python's
  answer applied and to the last canvas painted (no animation frame for
  observer.QUIET_MS), waiting on the page's own beacons (``observer.ObservedSite``:
  nothing is asked of the page meanwhile); and its rendering floor, the worker's
  patches of that click re-applied from JS in one task. The aim: the floor plus
  50 ms (issue 40).
- scripts run: DOMContentLoaded, when the page's scripts (BokehJS, Panel,
  KaTeX) have run and Bokeh starts to build the prerendered document: no plot
  drawn by Bokeh can come before it.
- Variants: the site as built (Python restored from its memory snapshot); the
  same site with the snapshot missing (Python started from scratch); the page
  alone, the same site with its worker script missing (no Python: the
  prerendered page's own time to plots and memory, a floor for both); and the
  floor, a bare page whose worker boots the same Pyodide and imports numpy.
  ``--before DIR`` adds another built site (for example an older commit's).

Slider moves, on the first load of the site as built, in each of MOVE_SECTIONS:

- keyboard: MOVES presses of an arrow key on d_k (64 <-> 128), each timed
  from the key press to the last animation frame (BokehJS paints its canvases
  in animation frames; the move is painted when they stop); and to the arrival
  of the worker's last patch (what the page's and the worker's Python take
  before the browser applies the answer);
- rendering floor: the same recorded patches from the worker (with the one
  the page applied ahead of the move, if it did: ``static/runtime/page/ahead.js``)
  re-applied from JS in one task through the page's own message handler,
  timed the same way; how many moves the page drew ahead;
- drag: the variance slider dragged back and forth by the mouse at the
  display's frame rate for DRAG_SECONDS; updates per second are the worker's
  patches that reached the page during the drag.

MOVE_SECTIONS are Spread, Saturation and Gradients: a variance change costs the
most in Gradients (the query gradient at every d_k).

A link in every engine (Chromium, Firefox ESR, WebKitGTK: ``tests/support/engines.py``),
ENGINE_RUNS cold loads each of ``/?d_k=256&scaling=none&seed=3`` in a fresh
browser, engines alternating: ready (the status bar says so) and the first key
press, pressed as soon as it is ready, answered (the address bar and the plots
show d_k = 128), both from the start of navigation, and how Python started.
Times are read in the page after polling every 0.1 s: up to about 0.1 s late.

Aims (reported, not asserted; issue 18): prerendered plots under 1 s; the first
press answered within 1.0x the floor's interactive; a d_k move under 150 ms and
within 1.2x the rendering floor in the Spread and Saturation sections; a drag at
8 updates per second or more; peak memory within 1.6x the floor's.

Run: python tests/benchmarks/site.py [--before DIR] [--engines chromium,firefox,webkit]
(builds the site if stale). ``--wire [--wire-runs N]`` measures over throttled links
instead: a home link and a slow 4G link (tests/benchmarks/wire.py); ``--embeds`` a
course page with one embed and with three (tests/benchmarks/embeds.py), and with
``--before DIR`` the same for that site too, alternating.
"""

import argparse
import contextlib
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import embeds
import wire
from browser import (
    OFFLINE_ARGS,
    READ_SOURCES_JS,
    http_server,
    launch,
    open_section,
    slider,
    slider_handle,
    unhashed,
)
from engines import D_K_HANDLE_JS, ENGINES, open_engine
from observer import ObservedSite

import build
from app.captions import section_label
from app.options import FIRST_SECTION, SECTIONS
from app.style import RULE_NAMES
from sitebuild.serve import SiteHandler

# The page holds the figures of d_k's two neighbours, sent ahead for its state now
# (browser.AHEAD_READY_JS), on this site or one built before the runtime was bundled
# (``--before``: its page's globals `ahead` and `posted`).
AHEAD_READY_ANY_JS = """() => (pyodideWorker.aheadForNow
  ? pyodideWorker.aheadForNow() : [...ahead.values()].filter((m) => m.applied === posted).length
) === 2"""
RUNS = 3
MOVES = 40
DRAG_SECONDS = 3.0
QUIET_MS = 150  # a move is painted once no animation frame has run for this long
MOVE_SECTIONS = ("spread", "saturation", "gradients")

# True once the first section's plot canvases are in the page (in shadow roots).
PLOTS_JS = f"""() => {{
  let canvases = 0;
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {{
    if (el.tagName === 'CANVAS') canvases++;
    if (el.shadowRoot) walk(el.shadowRoot);
  }});
  walk(document);
  return canvases >= {len(SECTIONS[FIRST_SECTION])};
}}"""

# Before the page loads: the end of every animation-frame callback.
FRAMES_JS = """(() => {
  const raf = window.requestAnimationFrame.bind(window);
  window.__lastFrame = 0;
  window.requestAnimationFrame = (callback) => raf((time) => {
    try { callback(time); } finally { window.__lastFrame = performance.now(); }
  });
})();"""

# Once live: keep the worker's patch messages while window.__patches is an array, and
# when each arrived (window.__arrivals).
RECORD_JS = """() => {
  window.__patches = null;
  pyodideWorker.addEventListener('message', (event) => {
    if (event.data.type === 'patch' && window.__patches) {
      window.__patches.push(event.data);
      window.__arrivals.push(performance.now());
    }
  });
}"""

# Resolves with the end of the last animation frame once `changed()` holds and no
# frame has run for QUIET_MS.
PAINTED_JS = f"""(changed) => new Promise((resolve, reject) => {{
  const t0 = performance.now();
  const poll = () => {{
    const now = performance.now();
    if (changed() && now - Math.max(window.__lastFrame, t0) > {QUIET_MS}) {{
      resolve(window.__lastFrame);
    }} else if (now - t0 > 30000) reject(new Error('not painted in 30 s'));
    else setTimeout(poll, 2);
  }};
  poll();
}})"""

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


def floor_site(folder: Path) -> Path:
    """The floor, a bare page whose worker boots the site's Pyodide and imports numpy, in
    ``folder``."""
    (folder / "floor.html").write_text(FLOOR_HTML)
    (folder / "floor.js").write_text(FLOOR_WORKER)
    (folder / "pyodide").mkdir()
    for file in (build.SITE / "pyodide").iterdir():  # by the names Pyodide asks for
        (folder / "pyodide" / unhashed(file.name)).symlink_to(file)
    return folder


class CountingHandler(SiteHandler):
    """The site's handler, recording the bytes of every file it serves: those it sent
    before the browser had them all or stopped the download."""

    served: list
    missing: tuple = ()

    def do_GET(self):
        if unhashed(self.path.split("?")[0]).endswith(self.missing):
            self.send_error(404)
        else:
            super().do_GET()

    def copyfile(self, source, outputfile):
        counted = _Counted(outputfile)
        try:
            super().copyfile(source, counted)
        finally:
            name = Path(self.translate_path(self.path)).name
            self.served.append((unhashed(name), counted.bytes))


class _Counted:
    """An output stream that counts the bytes written through it."""

    def __init__(self, stream):
        self.stream, self.bytes = stream, 0

    def write(self, data: bytes):
        self.stream.write(data)
        self.bytes += len(data)


def handler(missing=()) -> type:
    return type("Handler", (CountingHandler,), {"served": [], "missing": missing})


def renderers() -> set[int]:
    """Process ids of Chromium's renderer processes."""
    pids = set()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"--type=renderer" in (proc / "cmdline").read_bytes():
                pids.add(int(proc.name))
        except OSError:
            pass
    return pids


def peaks_mb(pids) -> list[float]:
    """The highest resident set (VmHWM) of each process in ``pids`` still running, in MB."""
    peaks = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        kb = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
        peaks.append(int(kb) / 1e3)
    return peaks


def peak_mb(pids) -> float:
    """The highest resident set (VmHWM) of any process in ``pids``, in MB."""
    return max(peaks_mb(pids), default=float("nan"))


def painted_after(page, action_js, changed_js) -> float:
    """Run ``action_js`` (JS statement) and time it to the last frame painted after it."""
    return page.evaluate(
        f"""async () => {{
          const t0 = performance.now();
          {action_js}
          return (await ({PAINTED_JS})({changed_js})) - t0;
        }}"""
    )


def keyboard_moves(page) -> tuple[list, list, list, int]:
    """MOVES arrow-key presses on d_k: ms to painted, the worker's patches per move, ms
    to the worker's last patch arriving (the page's and the worker's part of a move: the
    key handled, the change sent, Python's answer back), and how many moves the page
    drew ahead of Python's answer."""
    slider_handle(page, "d_k").focus()
    painted, patches, answered, ahead = [], [], [], 0
    for i in range(MOVES):
        page.evaluate(
            "window.__patches = []; window.__arrivals = []; pyodideWorker.appliedAhead = null"
        )
        start = page.evaluate("performance.now()")
        page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        end = page.evaluate(
            f"({PAINTED_JS})(() => window.__patches.length > 0 && !pyodideWorker.busy)"
        )
        painted.append(end - start)
        patches.append(page.evaluate("window.__patches.length"))
        answered.append(page.evaluate("Math.max(...window.__arrivals)") - start)
        ahead += page.evaluate("pyodideWorker.appliedAhead !== null")
    return painted, patches, answered, ahead


# A move's patches as the page applied them: the one sent ahead (if it was), then the
# worker's answer.
RECORDED_MOVE_JS = """() => {
  const ahead = pyodideWorker.appliedAhead;
  const first = ahead ? [{type: 'patch', patch: ahead.patch, buffers: ahead.buffers}] : [];
  window.__recorded.push([...first, ...window.__patches]);
}"""


def rendering_floor(page) -> list:
    """The recorded patches of alternate moves re-applied from JS, all of a move in one task."""
    slider_handle(page, "d_k").focus()
    page.evaluate("window.__recorded = []")
    for key in ("ArrowRight", "ArrowLeft"):
        page.wait_for_function(AHEAD_READY_ANY_JS)  # the neighbours' figures, sent ahead
        page.evaluate(
            "window.__patches = []; window.__arrivals = []; pyodideWorker.appliedAhead = null"
        )
        page.keyboard.press(key)
        page.evaluate(f"({PAINTED_JS})(() => window.__patches.length > 0 && !pyodideWorker.busy)")
        page.evaluate(RECORDED_MOVE_JS)
    page.evaluate("window.__patches = null")
    return [
        painted_after(
            page,
            f"for (const data of window.__recorded[{i % 2}]) pyodideWorker.onmessage({{data}});",
            "() => true",
        )
        for i in range(MOVES)
    ]


def drag_updates_per_second(page) -> float:
    """Drag the variance slider back and forth at the frame rate; worker updates per s."""
    handle = slider_handle(page, "variance")
    track = slider(page, "variance").locator(".noUi-target").bounding_box()
    box = handle.bounding_box()
    y = box["y"] + box["height"] / 2
    left, right = track["x"] + 4, track["x"] + track["width"] - 4
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.mouse.down()
    page.evaluate("window.__patches = []")
    start = page.evaluate("performance.now()")
    frame = 0
    while page.evaluate("performance.now()") - start < DRAG_SECONDS * 1e3:
        phase = (frame % 120) / 60  # 0..2: one sweep right, one back, at 60 frames each
        x = left + (right - left) * (phase if phase <= 1 else 2 - phase)
        page.mouse.move(x, y)
        page.evaluate("new Promise((resolve) => requestAnimationFrame(resolve))")
        frame += 1
    elapsed = page.evaluate("performance.now()") - start
    updates = page.evaluate("window.__patches.length")
    page.mouse.up()
    page.evaluate(f"({PAINTED_JS})(() => !pyodideWorker.busy)")
    return updates / (elapsed / 1e3)


FIRST_PAINT_JS = (
    "performance.getEntriesByType('paint').find((e) => e.name === 'first-paint').startTime"
)
SCRIPTS_RUN_JS = "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"


def load_app(browser, url, sections: tuple, alone: bool = False) -> dict:
    """A cold load of the site at ``url``; slider moves timed in each of ``sections``.
    ``alone``: the site's worker is missing, so only the prerendered page is measured."""
    before = renderers()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(FRAMES_JS)
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(PLOTS_JS, polling="raf", timeout=60_000)
    result = {"plots": page.evaluate("performance.now()")}
    result["scripts"] = page.evaluate(SCRIPTS_RUN_JS)
    page.wait_for_function(
        "() => document.getElementById('lab-status').dataset.state !== 'loading'",
        polling=10,
        timeout=300_000,
    )
    result["paint"] = page.evaluate(FIRST_PAINT_JS)
    if alone:  # no worker: the page says Python failed to start
        result["memory"] = peak_mb(renderers() - before)
        context.close()
        return result
    if page.evaluate("document.getElementById('lab-status').dataset.state") == "failed":
        raise RuntimeError(page.locator("#lab-status").inner_text())
    result["interactive"] = page.evaluate("performance.now()")
    result["boot"] = page.evaluate("document.getElementById('lab-status').dataset.boot")
    if sections:
        page.evaluate(RECORD_JS)
        for section in sections:
            if section != FIRST_SECTION:
                open_section(page, section)
            (
                result[f"moves {section}"],
                result[f"patches {section}"],
                result[f"answered {section}"],
                result[f"ahead {section}"],
            ) = keyboard_moves(page)
            result[f"floor moves {section}"] = rendering_floor(page)
            result[f"drag {section}"] = drag_updates_per_second(page)
    result["memory"] = peak_mb(renderers() - before)
    context.close()
    return result


def first_press(browser, url) -> dict:
    """LINK opened; d_k's ArrowLeft pressed as soon as the status says ready: ms from the
    start of navigation to ready and to the press answered."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url + LINK)
    page.wait_for_function(
        "() => document.getElementById('lab-status').dataset.state !== 'loading'",
        polling=10,
        timeout=300_000,
    )
    result = {"ready": page.evaluate("performance.now()")}
    slider_handle(page, "d_k").press("ArrowLeft")  # d_k 256 -> 128
    page.wait_for_function(f"() => {MOVED_JS}", polling=10, timeout=300_000)
    result["answered"] = page.evaluate("performance.now()")
    context.close()
    return result


# Resolves with [plots, answered]: the ms from the last key down on the page until the
# plots show d_k and the next animation frame (where BokehJS paints) has run; and until
# Python has answered and the address bar shows it.
SHOWN_JS = f"""(d_k) => new Promise((resolve, reject) => {{
  let plots = null;
  const poll = () => {{
    const since = performance.now() - window.__keyDown;
    if (plots === null
        && ({READ_SOURCES_JS})(['spread:marker'])['spread:marker']?.d_k[0] === d_k) {{
      plots = false;
      requestAnimationFrame(() => setTimeout(() => {{
        plots = performance.now() - window.__keyDown;
      }}));
    }}
    if (plots && location.search.includes(`d_k=${{d_k}}&`) && !pyodideWorker.busy) {{
      resolve([plots, since]);
    }} else if (since > 30000) reject(new Error('not shown in 30 s'));
    else setTimeout(poll, 2);
  }};
  poll();
}})"""


def presses_shown(page, moves: int) -> list:
    """``moves`` arrow-key presses on d_k, alternating: for each, [plots, answered] ms
    (SHOWN_JS). Unlike ``keyboard_moves`` it does not wait for the page's frames to
    stop: while the page trains, its progress keeps them running."""
    page.evaluate(
        "document.addEventListener('keydown', () => { window.__keyDown = performance.now(); },"
        " {capture: true})"
    )
    slider_handle(page, "d_k").focus()
    times = []
    for i in range(moves):
        d_k = int(page.evaluate("new URLSearchParams(location.search).get('d_k')"))
        key, d_k = ("ArrowRight", d_k * 2) if i % 2 == 0 else ("ArrowLeft", d_k // 2)
        page.wait_for_function(AHEAD_READY_ANY_JS)  # as a learner's next press would find it
        page.keyboard.press(key)
        times.append(page.evaluate(SHOWN_JS, d_k))
    return times


def presses_while_training(browser, url) -> dict:
    """LINK opened: TRAINING_MOVES d_k moves (``presses_shown``) while its learning-rate
    sweep runs, then as many once it is done, in the same page; and whether the sweep
    still ran after the first ones."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url + LINK)
    page.wait_for_function(
        f"() => {READY_JS} && {RATES_JS} === 'sweeping'",
        polling=10,
        timeout=300_000,
    )
    result = {"moves sweeping": presses_shown(page, TRAINING_MOVES)}
    result["still sweeping"] = page.evaluate(RATES_JS) == "sweeping"
    page.wait_for_function(f"() => {RATES_JS} === 'swept'", polling=100, timeout=300_000)
    result["moves swept"] = presses_shown(page, TRAINING_MOVES)
    context.close()
    return result


CLICK_LINK = "?d_k=512&scaling=none&seed=3"  # trains and sweeps its learning rates at ready
CLICKS = 6  # of each kind once the link is done training
# Each kind of click, between two states: the buttons pressed in turn.
CLICK_BUTTONS = {
    "rule": [RULE_NAMES["sqrt"], RULE_NAMES["none"]],
    "section": [section_label("saturation"), section_label("spread")],
}


def timed_click(page, observed, label) -> dict:
    """Click the button ``label``: ms from the click to Python's answer applied and to the
    last canvas painted (beacons only while waiting), and the worker's patches of it."""
    button = page.get_by_role("button", name=label, exact=True)
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    page.evaluate("window.__patches = []; window.__arrivals = []")
    observed.start(page)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    answer = observed.answer("click")
    painted = observed.painted(answer)
    page.evaluate("window.__recorded.push(window.__patches); window.__patches = null")
    return {"answered": answer["took"], "painted": painted - answer["input"]}


def click_floor(page, first: int, count: int) -> list:
    """The recorded patches of clicks ``first`` .. ``first + count - 1`` (one click each way
    in turn) re-applied from JS, each in one task: ms to the last frame painted."""
    return [
        painted_after(
            page,
            f"for (const data of window.__recorded[{first + i}])"
            " pyodideWorker.onmessage({data});",
            "() => true",
        )
        for i in range(count)
    ]


def clicks(browser, site_folder) -> dict:
    """CLICK_LINK opened: a rule click and a section click right after ready, then CLICKS
    of each once its training and learning-rate sweep are done; and their floors."""
    result = {}
    with ObservedSite(site_folder) as observed:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_init_script(FRAMES_JS)  # for the floors (painted_after)
        page = context.new_page()
        page.goto(observed.url + CLICK_LINK)
        page.wait_for_function(f"() => {READY_JS}", polling=10, timeout=300_000)
        page.evaluate(RECORD_JS)
        page.evaluate("window.__recorded = []")
        for kind, labels in CLICK_BUTTONS.items():
            result[f"{kind} at ready"] = [timed_click(page, observed, labels[0])]
        page.wait_for_function(f"() => {RATES_JS} === 'swept'", polling=100, timeout=300_000)
        for kind, labels in CLICK_BUTTONS.items():
            page.wait_for_timeout(500)  # at rest: the look-ahead done
            result[f"{kind} once idle"] = [
                timed_click(page, observed, labels[(i + 1) % 2]) for i in range(CLICKS)
            ]
        recorded = page.evaluate("window.__recorded.length")
        assert recorded == 2 + 2 * CLICKS, recorded
        result["rule floor"] = click_floor(page, 2, CLICKS)
        result["section floor"] = click_floor(page, 2 + CLICKS, CLICKS)
        context.close()
    return result


def load_floor(browser, url) -> dict:
    before = renderers()
    context = browser.new_context()
    page = context.new_page()
    page.goto(url + "floor.html")
    page.wait_for_function("() => window.ready !== undefined", polling=10, timeout=300_000)
    result = {"interactive": page.evaluate("window.ready"), "memory": peak_mb(renderers() - before)}
    context.close()
    return result


ENGINE_RUNS = 3
LINK = "?d_k=256&scaling=none&seed=3"
STATUS_JS = "document.getElementById('lab-status')"
# Ready: live (busy: live, and computing a change for more than 300 ms).
READY_JS = f"['ready', 'busy'].includes({STATUS_JS}.dataset.state)"
# The learning-rate sweep's state ('sweeping', 'swept'), from the page's hidden marker.
RATES_JS = "[...Bokeh.documents].at(-1).get_model_by_name('lab-rates')?.text"
TRAINING_MOVES = 8
MOVED_JS = (
    "location.search.includes('d_k=128')"
    f" && ({READ_SOURCES_JS})(['spread:marker'])['spread:marker']?.d_k[0] === 128"
)


def load_in_engine(name: str, url: str) -> dict:
    """A cold load of LINK in a fresh browser of engine ``name``: ready, then the first
    key press answered (ms from the start of navigation), and how Python started."""
    with open_engine(name) as engine:
        engine.goto(url + LINK)
        state = engine.wait_for(
            f"['ready', 'busy', 'failed'].includes({STATUS_JS}.dataset.state)"
            f" && {STATUS_JS}.dataset.state",
            timeout=300,
        )
        ready = engine.evaluate("performance.now()")
        engine.press(D_K_HANDLE_JS, "ArrowLeft")  # d_k 256 -> 128
        engine.wait_for(MOVED_JS, timeout=300)
        return {
            "ready": ready,
            "answered": engine.evaluate("performance.now()"),
            "boot": f"{state}, {engine.evaluate(f'{STATUS_JS}.dataset.boot')}",
        }


def report_engines(loads: dict):
    print(f"\nA link ({LINK}) in every engine; medians of {ENGINE_RUNS} cold loads (s)")
    print(f"{'':<16}{'ready':>10}{'first press answered':>24}{'  press to answer':>20}  boot")
    for name, runs in loads.items():
        ready = statistics.median(r["ready"] for r in runs) / 1e3
        answered = statistics.median(r["answered"] for r in runs) / 1e3
        gap = statistics.median(r["answered"] - r["ready"] for r in runs) / 1e3
        spread = (
            f"({min(r['ready'] for r in runs) / 1e3:.1f}-{max(r['ready'] for r in runs) / 1e3:.1f})"
        )
        print(
            f"{name:<16}{ready:>6.1f} {spread:<12}{answered:>10.1f}{gap:>20.1f}    "
            + ", ".join(sorted({r["boot"] for r in runs}))
        )


def report_clicks(site_runs: list):
    """The clicks (``clicks``) of every run: medians, and the aim beside them."""
    print(
        f"\nClicks on {CLICK_LINK}: ms from the click to Python's answer applied and to the"
        f" last canvas painted (medians; at ready: {len(site_runs)} loads, once idle:"
        f" {CLICKS} per load), against the rendering floor (the click's patches replayed)"
    )
    print(f"{'':<28}{'answered':>10}{'painted':>10}{'floor':>10}{'floor + 50':>12}")
    for kind in CLICK_BUTTONS:
        floor = statistics.median(v for r in site_runs for v in r[f"{kind} floor"])
        for when in ("at ready", "once idle"):
            times = [t for r in site_runs for t in r[f"{kind} {when}"]]
            answered = statistics.median(t["answered"] for t in times)
            painted = statistics.median(t["painted"] for t in times)
            print(
                f"  {kind + ' click ' + when:<26}{answered:>10.0f}{painted:>10.0f}"
                f"{floor:>10.0f}{floor + 50:>12.0f}"
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another built site to measure alongside")
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help="engines to time a link in ('' for none)"
    )
    parser.add_argument(
        "--wire",
        action="store_true",
        help="measure over throttled links instead (tests/benchmarks/wire.py)",
    )
    parser.add_argument("--wire-runs", type=int, default=wire.WIRE_RUNS, help="cold loads each")
    parser.add_argument(
        "--embed-runs", type=int, default=embeds.EMBED_RUNS, help="cold loads of each course page"
    )
    parser.add_argument(
        "--embeds",
        action="store_true",
        help="measure a course page with one embed and three instead (tests/benchmarks/embeds.py)",
    )
    args = parser.parse_args(argv)
    engines = [name for name in args.engines.split(",") if name]
    if build.is_stale(build.SITE):
        build.build()
    if args.wire:
        with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
            floor_dir = floor_site(Path(tmp))
            args_js = (OFFLINE_ARGS, LINK, PLOTS_JS, MOVED_JS)
            measured = wire.measure(p, build.SITE, floor_dir, handler, args_js, args.wire_runs)
        wire.report(measured)
        return
    if args.embeds:
        with contextlib.ExitStack() as stack:
            sites = {"site": stack.enter_context(http_server(build.SITE, handler()))}
            if args.before:
                before = stack.enter_context(http_server(args.before.resolve(), handler()))
                sites["before"] = before
            p = stack.enter_context(sync_playwright())
            browser = launch(p, OFFLINE_ARGS)
            embeds.report(embeds.measure(browser, sites, renderers, peaks_mb, args.embed_runs))
            browser.close()
        return
    variants = {  # name -> (site folder, handler, sections to time moves in)
        "site": (build.SITE, handler(), MOVE_SECTIONS),
        "no snapshot": (build.SITE, handler(missing=("snapshot.bin.gz",)), ()),
        "page alone": (build.SITE, handler(missing=("main.js",)), ()),
    }
    if args.before:  # (a site before sections shows every view at once)
        variants["before"] = (args.before.resolve(), handler(), (FIRST_SECTION,))
    runs = {name: [] for name in [*variants, "floor"]}
    served = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        floor_dir = floor_site(Path(tmp))
        floor_handler = handler()
        browser = launch(p, OFFLINE_ARGS)
        for run in range(RUNS):
            for name, (folder, site_handler, moves) in variants.items():
                site_handler.served.clear()
                with http_server(folder, site_handler) as url:
                    sections = moves if run == 0 else ()
                    runs[name].append(load_app(browser, url, sections, name == "page alone"))
                    served.setdefault(name, list(site_handler.served))
                    if moves:
                        runs[name][-1] |= first_press(browser, url)
                    if moves and run == 0 and name == "site":
                        runs[name][-1] |= presses_while_training(browser, url)
                if name == "site":
                    runs[name][-1] |= clicks(browser, folder)
            floor_handler.served.clear()
            with http_server(floor_dir, floor_handler) as url:
                runs["floor"].append(load_floor(browser, url))
            served.setdefault("floor", list(floor_handler.served))
        browser.close()
    report(runs, served)
    loads = {name: [] for name in engines}
    with http_server(build.SITE, handler()) as url:
        for _ in range(ENGINE_RUNS):
            for name in engines:
                loads[name].append(load_in_engine(name, url))
    report_engines(loads)


def report(runs, served):
    def median(name, key):
        values = [r[key] for r in runs[name] if key in r]
        return statistics.median(values) if values else float("nan")

    floor = median("floor", "interactive")
    names = list(runs)
    print(f"Offline site in Chromium, 2 cores; medians of {RUNS} cold loads; ms unless noted")
    print(f"{'':<30}" + "".join(f"{n:>14}" for n in names))

    def row(label, values, fmt="{:14.0f}"):
        print(f"{label:<30}" + "".join(fmt.format(v) for v in values))

    row("first paint", [median(n, "paint") for n in names])
    row("scripts run (DOMContentLoaded)", [median(n, "scripts") for n in names])
    row("prerendered plots on screen", [median(n, "plots") for n in names])
    row("interactive", [median(n, "interactive") for n in names])
    row("  / floor", [median(n, "interactive") / floor for n in names], "{:14.2f}")
    row(f"a link ({LINK}): ready", [median(n, "ready") for n in names])
    row("  first press answered", [median(n, "answered") for n in names])
    row("  / floor", [median(n, "answered") / floor for n in names], "{:14.2f}")
    row(
        "bytes served (MB)",
        [sum(size for _, size in served[n]) / 1e6 for n in names],
        "{:14.1f}",
    )
    row("peak memory (MB, renderer)", [median(n, "memory") for n in names])
    # One page's memory against the page alone plus a bare Pyodide with numpy: each a
    # whole renderer, so the sum counts a renderer's own memory twice.
    page_plus_pyodide = median("page alone", "memory") + median("floor", "memory")
    row(
        "  / (page alone + floor)",
        [median(n, "memory") / page_plus_pyodide for n in names],
        "{:14.2f}",
    )
    print("Python started from:", {n: runs[n][0].get("boot") for n in names if n != "floor"})
    for name in names:
        first = runs[name][0]
        for section in MOVE_SECTIONS:
            if f"moves {section}" not in first:
                continue
            moves, floor_moves = first[f"moves {section}"], first[f"floor moves {section}"]
            print(
                f"\nSlider, {name}, {section} section: {MOVES} d_k moves, key press to last "
                "canvas painted (ms)"
            )
            for label, values in (("live", moves), ("rendering floor (replayed)", floor_moves)):
                print(
                    f"  {label:<28} median {statistics.median(values):6.1f}"
                    f"   p95 {np.percentile(values, 95):6.1f}"
                )
            ratio = statistics.median(moves) / statistics.median(floor_moves)
            messages = statistics.median(first[f"patches {section}"])
            print(f"  live / floor (medians)       {ratio:6.2f}   messages per move {messages:.0f}")
            answered = statistics.median(first[f"answered {section}"])
            print(f"  of which until the worker's last patch arrived: median {answered:6.1f}")
            print(f"  drawn ahead of Python's answer: {first[f'ahead {section}']} of {MOVES}")
            print(f"  drag (variance slider): {first[f'drag {section}']:.1f} updates per second")
    trained = runs["site"][0]
    floor_moves = statistics.median(trained[f"floor moves {FIRST_SECTION}"])
    print(
        f"\nA link ({LINK}): {TRAINING_MOVES} d_k presses while it trains (it still swept"
        f" after them: {trained['still sweeping']}) and once it is done (ms, medians)"
    )
    print(f"{'':<22}{'plots painted':>16}{'Python answered':>18}")
    for label, key in (("while it trains", "sweeping"), ("once done", "swept")):
        plots, answered = np.median(trained[f"moves {key}"], axis=0)
        print(f"  {label:<20}{plots:>16.1f}{answered:>18.1f}")
    print(f"  aim: {FIRST_SECTION}'s rendering floor + 50 = {floor_moves + 50:.1f}")
    report_clicks(runs["site"])
    for name in names:
        largest = sorted(set(served[name]), key=lambda f: -f[1])[:5]
        print(f"\nLargest files, {name}: " + ", ".join(f"{n} {s / 1e6:.1f} MB" for n, s in largest))


if __name__ == "__main__":
    main()
