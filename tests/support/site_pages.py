"""The built site's pages in Chromium, for the tests of the site: the server that
records what a session reads (``SessionHandler``), a context with no network but
127.0.0.1, a page opened and waited for until it is live, a host that leaves a file
out, and the checks of what a page shows that more than one test makes.
"""

import bisect
import csv
import json
import re
import struct
import time
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote

import numpy as np
from answers import SMOOTH_RTOL, compare_edges, smooth_curves, window_etas
from browser import (
    read_heatmap,
    read_sources,
    site_file,
    unhashed,
)
from engines import BOOT_SECONDS, DEEP_JS

from app.options import (
    D_K_OPTIONS,
)
from app.rates import CURVE_D_KS, EDGE_D_KS, EDGE_RULES, learning_rates
from app.simulation import SCALING_RULES, Settings, simulate
from app.sweep import sweep
from app.training import train
from sitebuild.offline import KEPT_ONCE_FETCHED, matches, site_files
from sitebuild.serve import SiteHandler

BOOT_TIMEOUT = BOOT_SECONDS * 1000  # ms, as Playwright counts (about 20 s here)
DEFAULT = {"variance": 1.0, "n_keys": 64, "temperature": 1.0, "n_queries": 64}
STATUS = "document.getElementById('lab-status')?.dataset.state"
# numpy in the worker and natively may round the last bit of a dot product
# differently; weights then differ by a few ulps of their logits (|z| < 40 here).
WEIGHT_RTOL = 1e-9


ELSEWHERE = "/snapshot/site-packages/"  # where the files the pack lacks are (sitebuild.snapshot)


class SessionHandler(SiteHandler):
    """The site's own handler, recording each file of site-packages that the worker
    fetched alone (``read_elsewhere``, relative to site-packages): one that Python read
    and the pack lacks; and where in the standard library Python read what the restored
    copy lacks (``read_stdlib_at``, the worker's X-Read-At)."""

    read_elsewhere: ClassVar[list[str]] = []
    read_stdlib_at: ClassVar[list[int]] = []
    requested: ClassVar[list[str]] = []  # every path asked for

    def do_GET(self):
        path = unquote(self.path.split("?")[0])
        if path.startswith(ELSEWHERE):
            type(self).read_elsewhere.append(path.removeprefix(ELSEWHERE))
        if self.headers["X-Read-At"]:
            type(self).read_stdlib_at.append(int(self.headers["X-Read-At"]))
        type(self).requested.append(path.removeprefix("/") or "index.html")
        super().do_GET()


def filled(script: Path, name: str):
    """The value the build filled in (sitebuild/fills.py) for the variable ``name`` of the
    built ``script`` (the bundle declares it, its value JSON on one line)."""
    found = re.search(rf"^\s*(?:var|const|let) {name} = (.*);$", script.read_text(), re.M)
    return json.loads(found.group(1))


def kept_files(site: Path) -> set[str]:
    """The files the site's service worker keeps (sitebuild.offline.write_service_worker),
    and those it keeps once the page has fetched them."""
    files = filled(site / "service_worker.js", "FILES")
    once_fetched = {path for path in site_files(site) if matches(path, KEPT_ONCE_FETCHED)}
    return set(files) | once_fetched


def stdlib_members(site: Path, positions: list[int]) -> list[str]:
    """The members of the site's standard library zip at ``positions`` (in the zip)."""
    with zipfile.ZipFile(site_file(site, "pyodide/python_stdlib.zip")) as stdlib:
        starts = sorted((info.header_offset, info.filename) for info in stdlib.infolist())
    at = [bisect.bisect_right(starts, (position, "\uffff")) - 1 for position in positions]
    return sorted({starts[i][1] for i in at})


def offline_context(browser, **options):
    """A context that can reach 127.0.0.1 only; ``context.outside`` lists the rest."""
    context = browser.new_context(**options)
    context.outside = []

    def route(r):
        if r.request.url.startswith(("http://127.0.0.1:", "data:", "blob:")):
            r.continue_()
        else:
            context.outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context


def assert_shows_weights_of(page_or_frame, settings: Settings):
    """The heatmap holds the weights ``simulate`` computes here, to WEIGHT_RTOL."""
    expected = simulate(settings).weights
    np.testing.assert_allclose(read_heatmap(page_or_frame), expected, rtol=WEIGHT_RTOL, atol=1e-300)


BOOT = "document.getElementById('lab-status')?.dataset.boot"


def wait_until_ready(page_or_frame, boot="snapshot"):
    """Wait for the status bar to leave "loading"; it must say ready, not failed.

    ``boot`` is how Python must have started: from the build's memory snapshot,
    or (when it cannot be used) from ``scratch``.
    """
    page_or_frame.wait_for_function(
        f"() => ['ready', 'busy', 'failed'].includes({STATUS})", timeout=BOOT_TIMEOUT
    )
    state = page_or_frame.evaluate(STATUS)  # busy: ready, and computing a change
    assert state in ("ready", "busy"), page_or_frame.locator("#lab-status").inner_text()
    assert page_or_frame.evaluate(BOOT) == boot, page_or_frame.locator("#lab-status").inner_text()


# Every model of the newest (live) Bokeh document of a given type name (BokehJS keeps
# a model that has left the page in the document: select those on screen, ON_SCREEN_JS).
MODELS_JS = """(type) => [...[...Bokeh.documents].at(-1).all_models].filter(
  (m) => m.constructor.__name__ === type)"""
ON_SCREEN_JS = "(m) => Bokeh.index.find_one(m)?.el.isConnected === true"
# The views on screen, by the name of their card.
SHOWN_VIEWS_JS = f"""() => ({MODELS_JS})('Column')
  .filter((m) => m.name.startsWith('view:') && m.visible && ({ON_SCREEN_JS})(m))
  .map((m) => m.name)"""
PRERENDERED_SLIDERS_DISABLED = """() => {
  const sliders = [...Bokeh.documents[0].all_models].filter(
    (m) => m.constructor.__name__ === 'Slider');
  return sliders.length > 0 && sliders.every((m) => m.disabled);
}"""


# The training runs in the worker and here agree to this relative tolerance, except
# the unscaled rule's: at η = 2 its descent is chaotic (a 1e-13 change of W_Q moves
# its loss by 1e-6 within 8 steps, tests/test_training.py), so it is compared over
# its first CHAOS_FREE_STEPS steps and by where it ends.
TRAINING_RTOL = 1e-6
CHAOS_FREE_STEPS = 6


def assert_trained_as_here(page, runs):
    """The training views show ``runs`` (``training.train``'s, at the current d_k)."""
    shown = read_sources(
        page, [f"{view}:{rule}" for view in ("training_loss", "training_accuracy") for rule in runs]
    )
    for rule, run in runs.items():
        loss, accuracy = (
            shown[f"training_loss:{rule}"]["y"],
            shown[f"training_accuracy:{rule}"]["y"],
        )
        steps = CHAOS_FREE_STEPS if rule == "none" else len(run.loss)
        np.testing.assert_allclose(loss[:steps], run.loss[:steps], rtol=TRAINING_RTOL)
        np.testing.assert_allclose(accuracy[:steps], run.accuracy[:steps], rtol=TRAINING_RTOL)


# True once the page's learning-rate sweep is done (its hidden lab-rates marker says so).
CHECKED_JS = "() => [...Bokeh.documents].at(-1).get_model_by_name('lab-rates')?.text === 'checked'"
# The learning-rate views' sources: one curve per d_k and the curves' edges; each rule's
# lowest losses, and its edges with their theory.
RATE_SOURCES = (
    [f"lr_sweep:{d}" for d in CURVE_D_KS]
    + ["lr_sweep:edge"]
    + [f"{view}:{rule}" for view in ("best_loss", "best_lr") for rule in SCALING_RULES]
    + [f"best_lr:theory:{rule}" for rule in SCALING_RULES]
    + ["best_lr:mup", "best_lr:chaotic"]
    + [f"best_lr:{part}:{rule}" for part in ("window", "holes") for rule in EDGE_RULES]
)


def assert_swept_as_here(shown: dict, settings: Settings):
    """The learning-rate views' sources (``shown``, RATE_SOURCES read from the page) show
    ``rates.learning_rates`` of ``settings``' training, computed here: the curves wherever
    their runs are smooth (``answers.smooth_curves``: a twin from a start nudged by 1e-12
    follows them at every step, and so would the worker's rounding; towards the edge the
    descent is chaotic); the edges within ``answers.EDGE_FACTOR`` wherever the twin's agree
    as closely; the theory exactly; and the story of docs/theory.md."""
    training = replace(settings, d_k=1, scaling="none")
    here, twin = learning_rates(training), learning_rates(training, nudge=True)
    rule = settings.scaling
    curves = np.array([shown[f"lr_sweep:{d_k}"]["y"] for d_k in CURVE_D_KS])
    smooth = smooth_curves(training)[rule]
    np.testing.assert_allclose(curves[smooth], here.loss[rule][smooth], rtol=SMOOTH_RTOL)
    assert smooth.mean() > 0.5  # most of each curve is smooth: the chaos is near the edge
    for each in EDGE_RULES:
        ours, other = ({"d_k": list(EDGE_D_KS), "y": list(r.edge[each])} for r in (here, twin))
        chaotic = here.edge[each][here.chaotic[each]]  # × here: rounding moves them
        shown_edges = shown[f"best_lr:{each}"]
        windows = window_etas(here, each)
        assert compare_edges(f"best_lr:{each}", shown_edges, ours, other, chaotic, windows) == []
        drawn = np.isfinite(here.theory[each])
        np.testing.assert_allclose(shown[f"best_lr:theory:{each}"]["y"], here.theory[each][drawn])
    start = here.start
    none = np.array(shown["best_loss:none"]["y"])
    assert none[-1] > 0.8 * start["none"][-1]  # no η trains the unscaled model far out
    sqrt = np.array(shown["best_loss:sqrt"]["y"])
    assert np.all(sqrt < 0.01 * start["sqrt"])  # ÷ √d_k trains every d_k of the curves
    marked = shown["best_lr:chaotic"]
    chaotic_points = set(zip(marked["d_k"], marked["y"], strict=True))
    chaotic = set(chaotic_points)
    for each in EDGE_RULES:  # each window's ticks reach its edge; its holes lie under it
        edges = dict(
            zip(shown[f"best_lr:{each}"]["d_k"], shown[f"best_lr:{each}"]["y"], strict=True)
        )
        ticks, holes = shown[f"best_lr:window:{each}"], shown[f"best_lr:holes:{each}"]
        for d_k, edge in edges.items():
            if np.isfinite(edge):
                assert (
                    max(y for d, y in zip(ticks["d_k"], ticks["y"], strict=True) if d == d_k)
                    == edge
                )
        assert all(y < edges.get(d, np.inf) for d, y in zip(holes["d_k"], holes["y"], strict=True))
        chaotic -= set(edges.items())
    assert chaotic == set()  # every × sits on an edge
    sqrt = shown["best_lr:sqrt"]
    far = [
        e
        for d, e in zip(sqrt["d_k"], sqrt["y"], strict=True)
        if d >= 1024 and (d, e) not in chaotic_points
    ]
    assert max(far) / min(far) < 3  # ... at an edge that settles far out (× aside)
    # ÷ d_k's edges as μP's base rate η0 = η 16 / d_k: those points, and flat from 16 on
    linear, mup = shown["best_lr:linear"], shown["best_lr:mup"]
    assert list(mup["d_k"]) == list(linear["d_k"])
    np.testing.assert_allclose(mup["y"], np.array(linear["y"]) * 16 / np.array(linear["d_k"]))
    base = [y for d, y in zip(mup["d_k"], mup["y"], strict=True) if d >= 16]
    assert max(base) / min(base) < 1.6, base


TRAINED_JS = (
    "() => [...Bokeh.documents].at(-1).get_model_by_name('lab-training').text === 'trained'"
)


# What static/status.html's whenLive waits for before it says ready: the document is
# live and no view is still hidden.
LIVE_JS = """() => typeof pyodideWorker === 'object'
  && pyodideWorker.jsdoc?.get_model_by_name('lab-state')?.text === 'live'"""


def png_rows(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the pixel rows of a PNG (each after its filter's byte)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, at = [], 8
    while at < len(data):
        (length,), kind = struct.unpack(">I", data[at : at + 4]), data[at + 4 : at + 8]
        if kind == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + length])
        at += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))


def png_size_and_colours(data: bytes) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values of a PNG's pixel rows."""
    width, height, rows = png_rows(data)
    return width, height, len(set(rows))


# The scenario the export tests take away: its CSV is checked against this one.
EXPORTED = "?d_k=128&scaling=none&section=saturation"


def assert_csv_is_the_scenario(text: str, search: str):
    """The page's CSV (``EXPORTED``, its URL query ``search`` decoded): the curves, the
    draw and the training runs equal to what sweep, simulate and train give here."""
    first, *lines = text.splitlines()
    assert first.endswith(search)
    rows = list(csv.DictReader(lines))
    settings = Settings(d_k=128, scaling="none", seed=0, **DEFAULT)
    curves = sweep(settings, D_K_OPTIONS)
    got = {
        (r["rule"], r["quantity"], int(r["d_k"])): float(r["value"])
        for r in rows
        if r["section"] == "sweep"
    }
    assert len(got) == sum(len(c) - 1 for c in curves.values()) * len(D_K_OPTIONS)
    for rule, columns in curves.items():
        for name in ("logit_std", "max_weight_p10", "query_grad_norm", "saturated_share"):
            shown = [got[(rule, name, d)] for d in D_K_OPTIONS]
            np.testing.assert_allclose(shown, columns[name], rtol=1e-9, atol=1e-300)
    weights = [float(r["value"]) for r in rows if r["quantity"] == "weight"]
    np.testing.assert_allclose(weights, simulate(settings).weights.ravel(), rtol=WEIGHT_RTOL)
    runs = train(settings)
    for rule in ("sqrt", "power"):
        loss = [
            float(r["value"])
            for r in rows
            if r["section"] == "training" and r["rule"] == rule and r["quantity"] == "loss"
        ]
        np.testing.assert_allclose(loss, runs[rule].loss, rtol=TRAINING_RTOL)
    assert sum(r["section"] == "training_sweep" for r in rows) == 11 * len(SCALING_RULES)


def assert_png_is_the_section(data: bytes, figure_height: float):
    """The page's PNG of the saturation section: its 4 figures, two to a row (and not
    the 9 of the other sections), drawn; ``figure_height`` in the PNG's pixels."""
    width, height, colours = png_size_and_colours(data)
    assert width > 2 * 400 and 2 * figure_height < height < 3 * figure_height
    assert colours > 100  # drawn figures, not a blank canvas


# The embed picker's first five views, by their figures' titles.
EMBED_TITLES = [
    "Logit spread against d_k",
    "Largest attention weight",
    "Entropy of the weights",
    "Saturated rows (max weight > 0.99)",
    "Attention weights of the current draw",
]


# Three embeds of a course page: each link, and the views it shows.
COURSE_EMBEDS = {
    "?d_k=512&views=spread%2Cheatmap": ["spread", "heatmap"],
    "?scaling=none&views=max_weight%2Centropy": ["max_weight", "entropy"],
    "?seed=3&views=training_sweep": ["training_sweep"],
}
# Whether the browser counts the frame's page on the screen (an IntersectionObserver's
# first report; a frame off the screen still gets it, and draws nothing).
IN_VIEW_JS = """() => new Promise((answer) => new IntersectionObserver(
  ([entry], observer) => { observer.disconnect(); answer(entry.isIntersecting); })
  .observe(document.documentElement))"""


def active_element_js(body: str) -> str:
    """JS that finds the focused element through shadow roots and returns ``body``."""
    return (
        "() => { let a = document.activeElement;"
        " while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;"
        f" return {body}; }}"
    )


# Every text element on screen with its font size as laid out (CSS px).
TEXT_SIZES_JS = f"""{DEEP_JS}('p, li, td, th, label, button, .bk-slider-title')
  .filter((e) => e.getClientRects().length && e.textContent.trim())
  .map((e) => [e.textContent.trim().slice(0, 40), parseFloat(getComputedStyle(e).fontSize)])"""


# A slow link for the snapshot (either compression): 1 MB/s, 64 KB at a time. Over it
# the worker takes the zstd files (static/runtime/worker/snapshot.js).
SLOW_CHUNK, SLOW_BYTES_PER_S = 64 * 1024, 1e6
SNAPSHOT_BIN = "/snapshot/snapshot.bin."


def send_slowly(data: bytes, outputfile) -> int:
    """Write ``data`` at SLOW_BYTES_PER_S; the bytes sent before the browser hung up."""
    sent = 0
    try:
        for at in range(0, len(data), SLOW_CHUNK):
            outputfile.write(data[at : at + SLOW_CHUNK])
            sent += len(data[at : at + SLOW_CHUNK])
            time.sleep(SLOW_CHUNK / SLOW_BYTES_PER_S)  # the link's pace, not a wait
    except (BrokenPipeError, ConnectionResetError):
        pass  # the browser stopped the download
    return sent


class MissingFileHandler(SiteHandler):
    """Serves the site but answers 404 for the files whose paths end as one of
    ``missing`` says (without the hash in their names), as a broken host would; with
    ``slow_snapshot``, sends the snapshot slowly (``send_slowly``)."""

    missing = ()
    slow_snapshot = False

    def do_GET(self):
        if unhashed(self.path.split("?")[0]).endswith(self.missing):
            self.send_error(404)
        else:
            super().do_GET()

    def copyfile(self, source, outputfile):
        path = unhashed(unquote(self.path.split("?")[0]))
        if self.slow_snapshot and path.startswith(SNAPSHOT_BIN):
            send_slowly(source.read(), outputfile)
        else:
            super().copyfile(source, outputfile)


def unpack(blob: bytes) -> tuple[dict[str, bytes], list[str], dict[str, int]]:
    """The files, preload and elsewhere of a ``sitebuild.snapshot.pack``."""
    (length,) = struct.unpack_from("<I", blob)
    index = json.loads(blob[4 : 4 + length])
    data = blob[4 + length :]
    files = {path: data[offset : offset + size] for path, offset, size in index["files"]}
    return files, index["preload"], dict(index["elsewhere"])


def open_the_link(page, url, boot="snapshot"):
    """Open a link at ``url`` (a host of the site, as served), wait until it is ready
    with Python started as ``boot`` says, and check that it shows the link's weights."""
    page.goto(url + "?d_k=128&scaling=none&section=saturation")
    wait_until_ready(page, boot=boot)
    assert_shows_weights_of(page, Settings(d_k=128, scaling="none", seed=0, **DEFAULT))


# Every number in every data source of the live document is finite.
ALL_SOURCES_FINITE_JS = """() => {
  const bad = [];
  for (const m of [...Bokeh.documents].at(-1).all_models) {
    if (m.constructor.__name__ !== 'ColumnDataSource') continue;
    const data = m.data instanceof Map ? [...m.data.entries()] : Object.entries(m.data);
    for (const [column, values] of data) {
      const flat = (v) => (v !== null && typeof v === 'object' && typeof v.length === 'number')
        ? Array.from(v).flatMap(flat) : [v];
      if (flat(values).some((v) => typeof v === 'number' && !Number.isFinite(v))) {
        bad.push(`${m.name}.${column}`);
      }
    }
  }
  return bad;
}"""
# Before the page loads: count the changes the page sends the worker and the worker's
# "idle" replies (one per change, sent once Python is done with it and has replied).
COUNT_WORKER_MESSAGES_JS = """(() => {
  window.__sent = 0;
  window.__done = 0;
  window.__clicks = [];  // per change sent: how many button clicks it carries
  window.__unanswered = [];  // per change sent: how many sent before it were not yet done
  window.__waited = 0;  // answers that came while a change waited to be sent
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message?.type === 'patch') {
      window.__unanswered.push(window.__sent - window.__done);
      window.__sent++;
      window.__clicks.push(message.patch.events.filter(
        (e) => e.msg_data?.name === 'button_click').length);
    }
    return post.call(this, message, ...rest);
  };
  const Original = window.Worker;
  window.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {  // before the page's own handler
        if (e.data?.type === 'idle') window.__done++;
        const answer = e.data?.type === 'patch' && window.__sent - window.__done === 1;
        if (answer && pyodideWorker.queue.length) window.__waited++;  // Panel's global
      });
    }
  };
})();"""
# The worker has answered every change and the page holds none back.
# (A move the page drew ahead is posted once drawn: busy, not yet sent, until then.)
SETTLED_JS = (
    "() => window.__sent === window.__done && pyodideWorker.queue.length === 0"
    " && !pyodideWorker.busy"
)
