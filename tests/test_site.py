"""The built static site, run by Pyodide in Chromium with no network but 127.0.0.1.

The site is built once per session (``python build.py``, the real build) and
served by the build's own handler (``sitebuild.serve``). Chromium resolves no
other host, and a request route records and aborts anything not local, so the
tests prove the page needs nothing from outside the machine.
"""

import bisect
import csv
import gzip
import json
import os
import random
import re
import shutil
import statistics
import struct
import time
import zipfile
import zlib
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qsl, unquote

import numpy as np
import pytest
from answers import SMOOTH_RTOL, compare_edges, smooth_curves, summary_text, window_etas
from browser import (
    AHEAD_READY_JS,
    OFFLINE_ARGS,
    READ_SOURCES_JS,
    SECTION_SOURCES,
    SLIDER_TITLES,
    STATUS_READY_JS,
    Console,
    http_server,
    launch,
    open_section,
    read_heatmap,
    read_sources,
    section_button,
    site_file,
    slider,
    slider_handle,
    unhashed,
    wait_for_source,
    widest_frames_with_stylesheets_late,
    write_course_page,
)
from engines import DEEP_JS
from playwright.sync_api import expect, sync_playwright
from test_questions import evidence

import build
from app import theory
from app.background import TRAINING_SLICE
from app.captions import section_title
from app.options import (
    D_K_OPTIONS,
    DEFAULTS,
    FIRST_SECTION,
    SECTIONS,
    SETTINGS_FIELDS,
    VIEWS,
    section_of,
)
from app.page import TITLE
from app.precision import EXP_LIMITS, naive_overflow_shares
from app.questions import QUESTIONS, question
from app.rates import CURVE_D_KS, EDGE_D_KS, EDGE_RULES, learning_rates
from app.scenario import read_query, write_query
from app.sections.query import ROW_FIGURES
from app.share_box import POSTER_FILENAME
from app.simulation import SCALING_RULES, Settings, simulate
from app.style import RULE_COLORS, RULE_NAMES, RULE_TEXT_COLORS, rule_key_label
from app.sweep import sweep
from app.theme import DARK_PAPER
from app.training import TrainingConfig, train, training_sweep
from app.words import glossary, text, to_html
from sitebuild.offline import KEPT_ONCE_FETCHED, matches, site_files
from sitebuild.serve import SiteHandler
from sitebuild.snapshot import RUNTIME_GZ, SESSION_FILES, SESSION_STDLIB, pack

BOOT_TIMEOUT = 240_000  # ms; Pyodide and the environment boot in about 20 s here
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


@pytest.fixture(scope="module")
def site_url(site):
    with http_server(site, SessionHandler) as url:
        yield url


@pytest.fixture(autouse=True)
def reads_only_its_pack(request, output_dir):
    """Every test of the site on ``site_url`` (together, a full session: every section,
    control, question, training, the sweep and export) records the files of
    site-packages Python read that the pack lacks; there must be none. A file read on
    every visit costs a round trip each: SESSION_FILES must list it."""
    yield
    if "site_url" not in request.fixturenames:
        return
    read = sorted(set(SessionHandler.read_elsewhere))
    SessionHandler.read_elsewhere.clear()
    if read:
        with open(output_dir / "session_files.missing.txt", "a") as missing:
            missing.write("".join(f"{path}\n" for path in read))
        pytest.fail(f"{request.node.name} read files {SESSION_FILES.name} lacks: {read}")


def kept_files(site: Path) -> set[str]:
    """The files the site's service worker keeps (sitebuild.offline.write_service_worker),
    and those it keeps once the page has fetched them."""
    script = (site / "service_worker.js").read_text()
    files = json.loads(re.search(r"^const FILES = (\{.*?^\});", script, re.M | re.S).group(1))
    once_fetched = {path for path in site_files(site) if matches(path, KEPT_ONCE_FETCHED)}
    return set(files) | once_fetched


@pytest.fixture(autouse=True)
def loads_only_what_is_kept(request, site, output_dir):
    """Every file the page loads in the tests of the site on ``site_url`` is one its
    service worker keeps for the next visit (or offline), but for the service worker
    itself and the files of site-packages the pack left out (kept once fetched); and
    none of them is the whole standard library: Python read no member of it that the
    restored copy lacks (SESSION_STDLIB lists what a session reads)."""
    yield
    if "site_url" not in request.fixturenames:
        return
    requested = set(SessionHandler.requested)
    SessionHandler.requested.clear()
    # Python read a part of the standard library that the restored copy lacks
    # (sitebuild.snapshot.sparse_stdlib): SESSION_STDLIB must list its member.
    read = stdlib_members(site, SessionHandler.read_stdlib_at)
    SessionHandler.read_stdlib_at.clear()
    if read:
        with open(output_dir / "session_stdlib.missing.txt", "a") as missing:
            missing.write("".join(f"{name}\n" for name in read))
    assert read == [], f"{request.node.name} read files {SESSION_STDLIB.name} lacks"
    whole_stdlib = [path for path in requested if unhashed(path) == "pyodide/python_stdlib.zip"]
    assert whole_stdlib == [], f"{request.node.name} fetched the whole standard library"
    unkept = sorted(
        path
        for path in requested - kept_files(site) - {"service_worker.js"}
        if not ("/" + path).startswith(ELSEWHERE)
    )
    assert unkept == [], f"{request.node.name} loaded files the service worker does not keep"


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


@pytest.fixture(scope="module")
def offline():
    """An offline Chromium context (``offline_context``) at 1280 by 900; ``offline.phone``
    makes another, emulating an iPhone 13 (its keywords override the descriptor's), or
    another of ``offline.phones``: Playwright's descriptors, by name; ``offline.desktop``
    another like it, with other keywords; ``offline.launch``
    launches another Chromium, with other arguments."""
    with sync_playwright() as p:
        browser = launch(p, OFFLINE_ARGS)
        context = offline_context(browser, viewport={"width": 1280, "height": 900})
        context.phones = {
            name: {k: v for k, v in p.devices[name].items() if k != "default_browser_type"}
            for name in ("iPhone 13", "Pixel 5")
        }
        iphone = context.phones["iPhone 13"]
        context.phone = lambda **options: offline_context(browser, **(iphone | options))
        desktop = {"viewport": {"width": 1280, "height": 900}}
        context.desktop = lambda **options: offline_context(browser, **(desktop | options))
        context.launch = lambda args: launch(p, args)
        yield context
        browser.close()


def assert_shows_weights_of(page_or_frame, settings: Settings):
    """The heatmap holds the weights ``simulate`` computes here, to WEIGHT_RTOL."""
    expected = simulate(settings).weights
    np.testing.assert_allclose(read_heatmap(page_or_frame), expected, rtol=WEIGHT_RTOL, atol=1e-300)


def http_errors(page) -> list:
    errors = []
    page.on("response", lambda r: r.status >= 400 and errors.append(f"{r.status} {r.url}"))
    return errors


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


def test_the_site_runs_numpy_in_the_browser_offline(offline, site_url, output_dir):
    page = offline.new_page()
    console, failed = Console(page), http_errors(page)
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    already_outside = len(offline.outside)
    page.goto(site_url)

    # Prerendered: the first section's plots and data while Python is still loading, and
    # no overlay.
    wait_for_source(page, "histogram:raw", "(d) => d.left.length > 0", timeout=10_000)
    assert page.evaluate(STATUS) == "loading"
    assert page.locator(".bk-Figure").count() == len(SECTIONS["spread"])
    assert page.locator("p", has_text="Precomputed when this site was built").count() == 1
    assert page.locator(".pn-loading-msg:visible").count() == 0
    assert not page.evaluate("document.body.classList.contains('pn-loading')")
    assert page.evaluate(PRERENDERED_SLIDERS_DISABLED)  # a move could not take effect yet
    page.screenshot(path=output_dir / "site-prerendered.png")

    wait_until_ready(page)
    # Ready means the live page is drawn: its runtime line is there at once, no waiting.
    runtime = page.locator("p", has_text="Computed in your browser").inner_text()
    lock = json.loads((build.SITE / "pyodide" / "pyodide-lock.json").read_text())
    assert f"numpy {lock['packages']['numpy']['version']}" in runtime  # the worker's numpy
    assert "(emscripten)" in runtime

    # One slider move, one message from the worker: plots, summary and URL together.
    page.evaluate(
        "window.__patches = 0; pyodideWorker.addEventListener('message',"
        " (e) => { if (e.data.type === 'patch') window.__patches += 1; })"
    )
    slider_handle(page, "d_k").press("ArrowRight")  # d_k 64 -> 128, keyboard
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 128")
    page.wait_for_url("**d_k=128**")
    assert page.evaluate("window.__patches") == 1
    open_section(page, "saturation")
    assert_shows_weights_of(page, Settings(d_k=128, scaling="sqrt", seed=0, **DEFAULT))

    page.get_by_role("button", name="none", exact=True).click()
    wait_for_source(page, "max_weight:marker", "(d) => d.color[0] === '#D55E00'")
    assert_shows_weights_of(page, Settings(d_k=128, scaling="none", seed=0, **DEFAULT))
    assert "d_k=128" in page.url and "scaling=none" in page.url
    page.screenshot(path=output_dir / "site-interactive.png")

    # Nothing from pandas or requests: not fetched, not imported (the worker's prelude
    # gives Panel an empty pyodide_http).
    assert not [url for url in requested if "pandas" in url]
    (worker,) = page.workers
    loaded = worker.evaluate("self.pyodide.runPython('import sys; sorted(sys.modules)').toJs()")
    assert {"pandas", "requests", "urllib3"}.isdisjoint(loaded) and "app.page" in loaded

    theory = page.request.get(site_url + "theory.html")
    assert theory.ok and "Logit spread" in theory.text()
    assert (
        page.get_by_role("link", name="The theory behind the plots").get_attribute("href")
        == "theory.html"
    )

    assert offline.outside[already_outside:] == []
    assert failed == []
    assert console.errors == []


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


def test_training_follows_d_k_and_the_learning_rate_as_the_simulation_says(offline, site_url):
    """d_k 64 -> 512 under none and sqrt: the runs shown are those trained here, and the
    story holds (none learns at 64 and stalls at 512; sqrt learns at both); a ten times
    larger learning rate, set by its slider, lands in the URL and retrains."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?scaling=none&section=learning")
    wait_until_ready(page)
    here = training_sweep(Settings(d_k=1, scaling="sqrt", **DEFAULT), D_K_OPTIONS)
    sweep = wait_for_source(page, "training_sweep:sqrt", "(d) => d.y.length === 11")
    final = [here[d]["sqrt"].loss[-1] for d in D_K_OPTIONS]
    np.testing.assert_allclose(sweep["y"], final, rtol=TRAINING_RTOL)
    assert_trained_as_here(page, here[64])
    none_at_64 = read_sources(page, ["training_loss:none"])["training_loss:none"]["y"]
    assert none_at_64[-1] < 0.01 < here[64]["sqrt"].loss[-1] < 0.05  # both learn at 64

    slider_handle(page, "d_k").focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")  # d_k 64 -> 512
    wait_for_source(page, "training_sweep:marker", "(d) => d.d_k[0] === 512")
    assert_trained_as_here(page, here[512])
    none_at_512 = read_sources(page, ["training_loss:none"])["training_loss:none"]["y"]
    assert none_at_512[-1] > 0.5 * none_at_512[0]  # stalls near its starting loss
    assert here[512]["sqrt"].loss[-1] < 0.05  # sqrt learns as well as at 64

    slider_handle(page, "learning_rate").focus()
    for _ in range(2):
        page.keyboard.press("ArrowRight")  # learning rate 2 -> 5 -> 10 -> ... 2 steps: 10
    page.wait_for_url("**learning_rate=10**")
    faster = training_sweep(
        Settings(d_k=1, scaling="sqrt", **DEFAULT), D_K_OPTIONS, TrainingConfig(learning_rate=10.0)
    )
    final = [float(faster[d]["sqrt"].loss[-1]) for d in D_K_OPTIONS]
    wait_for_source(
        page, "training_sweep:sqrt", f"(d) => Math.abs(d.y[9] - {final[9]!r}) < 1e-6 * {final[9]!r}"
    )
    assert_trained_as_here(page, faster[512])
    assert console.errors == []


# True once the page's learning-rate sweep is done (its hidden lab-rates marker says so).
CHECKED_JS = "() => [...Bokeh.documents].at(-1).get_model_by_name('lab-rates')?.text === 'checked'"
SWEEPING_JS = CHECKED_JS.replace("'checked'", "'sweeping'")
SWEPT_JS = CHECKED_JS.replace("'checked'", "'swept'")  # shown, not yet checked
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


def test_the_learning_rate_views_show_the_sweep_of_their_scenario(offline, site_url):
    """At the defaults the sweep is in the snapshot: on screen as soon as the page is
    ready, equal to the one computed here. A new variance sweeps again in the
    background: the views count the runs done, a key press meanwhile takes effect, and
    the sweep ends as computed here."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?section=learning")
    wait_until_ready(page)
    assert page.evaluate(CHECKED_JS)
    defaults = Settings(d_k=64, scaling="sqrt", **DEFAULT)
    assert_swept_as_here(read_sources(page, RATE_SOURCES), defaults)
    slider_handle(page, "variance").press("ArrowRight")  # v 1 -> 1.05
    counting = "/training… \\d+%/.test(f.title.text)"
    page.wait_for_function(f"() => ({MODELS_JS})('Figure').some((f) => {counting})")
    slider_handle(page, "d_k").press("ArrowRight")  # while it sweeps: d_k 64 -> 128
    wait_for_source(page, "training_sweep:marker", "(d) => d.d_k[0] === 128", timeout=30_000)
    # Shown first, its windows' holes and chaos checked after: no × until then.
    page.wait_for_function(SWEPT_JS, timeout=300_000, polling=100)
    assert "Checking the η under each edge" in summary_text(page)
    assert read_sources(page, ["best_lr:chaotic"])["best_lr:chaotic"]["d_k"] == []
    page.wait_for_function(CHECKED_JS, timeout=300_000, polling=100)
    assert "Checking the η" not in summary_text(page)
    new = Settings(d_k=128, scaling="sqrt", **(DEFAULT | {"variance": 1.05}))
    assert_swept_as_here(read_sources(page, RATE_SOURCES), new)
    titles = page.evaluate(f"({MODELS_JS})('Figure').map((f) => f.title.text)")
    assert not any("training…" in title for title in titles)
    assert console.errors == []


# True while the page trains (its hidden lab-training marker says so), and once it is done.
TRAINING_JS = (
    "() => [...Bokeh.documents].at(-1).get_model_by_name('lab-training').text === 'training'"
)
TRAINED_JS = (
    "() => [...Bokeh.documents].at(-1).get_model_by_name('lab-training').text === 'trained'"
)


# Whether the address bar and the plots show d_k; TOOK_EFFECT_JS: once they do, the ms
# since the last key down on the page (polled every 2 ms, so up to about 2 ms late).
SHOWS_D_K_JS = f"""(d_k) => location.search.includes(`d_k=${{d_k}}&`)
  && ({READ_SOURCES_JS})(['spread:marker'])['spread:marker'].d_k[0] === d_k"""
TOOK_EFFECT_JS = f"(d_k) => ({SHOWS_D_K_JS})(d_k) && performance.now() - window.__keyDown"


def timed_presses(page, keys: list[str]) -> list[float]:
    """Seconds from each key press on d_k (its keydown, in the page) to the address bar
    and the plots showing the d_k it moved to (timed in the page: Playwright's own
    round trips are not in it)."""
    page.evaluate(
        "document.addEventListener('keydown', () => { window.__keyDown = performance.now(); },"
        " {capture: true})"
    )
    slider_handle(page, "d_k").focus()
    times = []
    for key in keys:
        d_k = int(dict(parse_qsl(page.url.split("?")[1]))["d_k"])
        d_k = d_k // 2 if key == "ArrowLeft" else d_k * 2
        page.keyboard.press(key)
        took = page.wait_for_function(TOOK_EFFECT_JS, arg=d_k, polling=2)
        times.append(took.json_value() / 1e3)
    return times


# In the task that tells the worker the page has rendered and its URL, the page moves
# the d_k slider one step left: its patch reaches the worker right behind the two. The
# page's slider shows the prerendered d_k then (64), so the move is to 32.
MOVE_AT_RENDER_JS = f"""(() => {{
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {{
    const sent = post.call(this, message, ...rest);
    if (message?.type === 'location') {{
      const title = {json.dumps(SLIDER_TITLES["d_k"])};
      [...pyodideWorker.jsdoc.all_models].find((m) => m.title === title).value -= 1;
    }}
    return sent;
  }};
}})()"""


def test_a_change_right_behind_the_render_message_is_applied_after_it(offline, site_url):
    """The page sends "rendered" (link the document), then its URL, then its changes;
    the worker must handle them in that order. It applied a change at once but the two
    before it a task later: a change right behind them (a layout change the page makes
    as it draws) ran before the document was linked, and the page said it failed (in
    CI: 3 loads in 45 in WebKit). Here the change is a d_k move in the same task: it
    comes after the link's d_k=256, so it wins."""
    page = offline.new_page()
    console = Console(page)
    page.add_init_script(MOVE_AT_RENDER_JS)
    page.goto(site_url + "?d_k=256")
    wait_until_ready(page)
    page.wait_for_function(SHOWS_D_K_JS, arg=32)
    assert console.errors == []
    page.close()


# What static/status.html's whenLive waits for before it says ready: the document is
# live and no view is still hidden.
LIVE_JS = """() => typeof pyodideWorker === 'object'
  && pyodideWorker.jsdoc?.get_model_by_name('lab-state')?.text === 'live'"""
LIVE_AND_REVEALED_JS = f"""{LIVE_JS}
  && [...Bokeh.index.all_views()].every((view) => !(view.container instanceof HTMLElement)
    || !view.model.visible || view.container.style.visibility !== 'hidden')"""

# Between the page's "rendered" and its URL, a change Python cannot apply.
BAD_CHANGE_AT_RENDER_JS = """(() => {
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message?.type === 'location') post.call(this, {type: 'patch', patch: null});
    return post.call(this, message, ...rest);
  };
})()"""


def test_a_failure_after_the_render_stays_on_the_status_bar(offline, site_url):
    """The status bar said "failed" and then, once the document went live, "Ready"
    over it (its state stayed failed): a learner was told all was well. And a failure
    that came after "Ready" was dropped: the worker reports the bad change as an
    unhandled rejection, a task that can run after the one that makes the document
    live, so the bar said "Ready" in 3 loads of 20 (and this test failed CI once)."""
    page = offline.new_page()
    page.add_init_script(BAD_CHANGE_AT_RENDER_JS)
    page.goto(site_url)
    page.wait_for_function(f"() => {STATUS} !== 'loading'", timeout=BOOT_TIMEOUT)
    page.wait_for_function(f"() => {STATUS} === 'failed'")  # sent with the document's live
    page.wait_for_function(LIVE_AND_REVEALED_JS)
    # The status bar's whenLive checks these same conditions in a 20 ms timer; a timer
    # of 20 ms set now fires after the one it set before (timers of equal or shorter
    # delay run in the order they were set), so by then it has seen the page live.
    page.evaluate("new Promise((done) => setTimeout(done, 20))")
    assert page.evaluate(STATUS) == "failed"
    bar = page.locator("#lab-status")
    assert bar.is_visible()
    assert "The simulation failed" in bar.inner_text()
    page.close()
    # The bad change's traceback read source lines of modules the snapshot holds, which
    # the restored standard library lacks: the whole library came, once (and no session
    # needs to read them).
    whole = [p for p in SessionHandler.requested if unhashed(p) == "pyodide/python_stdlib.zip"]
    assert len(whole) == 1
    SessionHandler.requested[:] = [p for p in SessionHandler.requested if p not in whole]
    SessionHandler.read_stdlib_at.clear()


# In the worker: when the background gives way and resumes (``asyncio.sleep(0)`` in
# app.background: a slice of training ends, then the next begins), and when Python
# starts and ends on each change from the page (its answer is sent before the end),
# on the clock that the page's performance.timeOrigin + now() reads too. And the
# longest step of descent the training and the learning-rate sweep take here (ms):
# the first of each group included, which also draws its weights.
WATCH_SLICES_PY = """
import asyncio, time, js
import app.worker
from app.background import TRAINING_GROUPS, page_training
from app.rates import rates_steps
from app.training import training_steps
import gc

def _now():
    return js.performance.timeOrigin + js.performance.now()

slices = {"gave_way": [], "resumed": [], "changes": []}
_sleep, _apply = asyncio.sleep, app.worker.apply_page_patch

async def _watched_sleep(delay, *args, **kwargs):
    if delay == 0:
        slices["gave_way"].append(_now())
    result = await _sleep(delay, *args, **kwargs)
    if delay == 0:
        slices["resumed"].append(_now())
    return result

def _watched_apply(*args, **kwargs):
    start = _now()
    try:
        return _apply(*args, **kwargs)
    finally:
        slices["changes"].append([start, _now()])

def _longest_step(steps, count=2):
    longest = 0.0
    for _ in range(count):
        start = time.perf_counter()
        next(steps)
        longest = max(longest, time.perf_counter() - start)
    return longest * 1e3

lab = next(o for o in gc.get_objects() if isinstance(o, AttentionLab))
settings, learning_rate = lab.scenario.training()
longest_step = max(
    _longest_step(rates_steps(settings), 800),  # the draws far out, then edges' batches
    *(_longest_step(training_steps(settings, g, page_training(learning_rate)))
      for g in TRAINING_GROUPS),
)
asyncio.sleep, app.worker.apply_page_patch = _watched_sleep, _watched_apply
longest_step
"""
# The page: when it posts each change to the worker (the clock of WATCH_SLICES_PY).
WATCH_POSTS_JS = """() => {
  window.__posted = [];
  const post = pyodideWorker.postMessage.bind(pyodideWorker);
  pyodideWorker.postMessage = (message, ...rest) => {
    if (message?.type === 'patch') window.__posted.push(performance.timeOrigin + performance.now());
    return post(message, ...rest);
  };
}"""


def waits_behind_training(page, worker, keys: list[str]) -> tuple[list[int], list[float]]:
    """Press ``keys`` on d_k (``timed_presses``) and say, for every change the page posted
    meanwhile, how many slices of the background's work began between its post and
    Python's answer; and how long (ms) each slice ran that ended meanwhile."""
    page.wait_for_function("() => !pyodideWorker.busy")
    page.evaluate("window.__posted.length = 0")
    worker.evaluate("self.pyodide.runPython('for v in slices.values(): v.clear()')")
    timed_presses(page, keys)
    page.wait_for_function("() => !pyodideWorker.busy")
    posted = page.evaluate("window.__posted")
    watched = worker.evaluate("self.pyodide.runPython('import json; json.dumps(slices)')")
    watched = json.loads(watched)
    assert len(posted) == len(watched["changes"]) >= len(keys), (posted, watched["changes"])
    waits = [  # the worker handles the page's changes in the order posted
        sum(post < resumed < answered for resumed in watched["resumed"])
        for post, (_, answered) in zip(posted, watched["changes"], strict=True)
    ]
    gave_way = watched["gave_way"]
    ran = [
        next(end for end in gave_way if end > start) - start
        for start in watched["resumed"]
        if any(end > start for end in gave_way)
    ]
    return waits, ran


def test_a_key_press_while_training_runs_takes_effect_at_once(offline, site_url):
    """A link's training starts at ready (its seed is not the snapshot's), then its
    learning-rate sweep (some 20 s); a key press meanwhile must not wait for them: it
    waits at most for the slice of training in progress, which gives way after
    TRAINING_SLICE and a step (within the issue's "rendering floor plus 50 ms"; the
    benchmark, tests/benchmarks/site.py, times it). Checked as conditions, not clocks:

    - Between the page posting each change and Python's answer, at most one slice of
      the background's work began (the one in progress, or queued, when it came). The
      press waited 4-6 s behind the training before it gave way between steps, and
      its answer then waited behind the next slices of the sweep (2.6 rendering
      floors instead of 1.6; ``test_patches.py`` tests that fix).
    - The slices that ran meanwhile were short: their median at most TRAINING_SLICE
      plus twice the longest step measured in the same worker just before (a step
      beside the page's drawing, on 2 cores, took up to twice as long).

    This replaced a comparison of wall-clock times against presses at rest, which
    failed 1 run in 3 on a slow machine (the rest's presses themselves 65 to 180 ms)."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none&seed=3")
    wait_until_ready(page)
    (worker,) = page.workers
    page.evaluate(WATCH_POSTS_JS)
    longest_step = worker.evaluate(f"self.pyodide.runPython({WATCH_SLICES_PY!r})")
    assert page.evaluate(TRAINING_JS)
    training = waits_behind_training(page, worker, ["ArrowLeft", "ArrowRight", "ArrowLeft"])
    assert page.evaluate(TRAINING_JS)  # every press landed while it trained
    page.wait_for_function(TRAINED_JS, timeout=120_000)
    assert page.evaluate(SWEEPING_JS)
    sweeping = waits_behind_training(page, worker, ["ArrowRight", "ArrowLeft"] * 4)
    assert page.evaluate(SWEEPING_JS)  # and these while it swept
    for waits, ran in (training, sweeping):
        assert ran and max(waits) <= 1, (waits, ran)
        bound = TRAINING_SLICE * 1e3 + 2 * longest_step
        assert statistics.median(ran) <= bound, (ran, longest_step)
    assert console.errors == []


# Every patch from the worker: the kinds of its events, by the model's name if it has one.
RECORD_ANSWERS_JS = """() => {
  window.__answers = [];
  pyodideWorker.addEventListener('message', (e) => {
    if (e.data.type !== 'patch') return;
    window.__answers.push(e.data.patch.events.map((event) => {
      const model = pyodideWorker.jsdoc.get_model_by_id(event.model?.id);
      return `${event.kind} ${model?.name ?? model?.type} ${event.attr}`;
    }));
  });
}"""
# Python's sources in the worker, by name, as JSON: the section's on screen.
PYTHON_SOURCES_PY = """
import gc, json
lab = next(o for o in gc.get_objects() if isinstance(o, AttentionLab))
json.dumps({
    name: {column: [value.tolist() if hasattr(value, "tolist") else value for value in values]
           for column, values in source.data.items()}
    for section in lab.sections_on_screen()
    for name, source in lab.sections[section].sources.items()
})
"""


def test_a_d_k_move_is_drawn_with_its_key_press_as_python_computes_it(offline, site_url):
    """The worker sends the figures at d_k's neighbours ahead (app/look_ahead.py), and the
    page draws a move with its key press instead of waiting for Python's answer (the
    benchmark: 46-64 ms to the last canvas painted, 116-140 ms before). The answer then
    brings the words and the address only, and every figure shows what Python holds:
    moving on, and back where it came from, in two sections."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?section=spread")
    wait_until_ready(page)
    page.evaluate(RECORD_ANSWERS_JS)
    (worker,) = page.workers
    slider_handle(page, "d_k").focus()
    for section, key, d_k in [
        ("spread", "ArrowRight", 128),
        ("spread", "ArrowLeft", 64),
        ("saturation", "ArrowLeft", 32),
        ("saturation", "ArrowRight", 64),
    ]:
        if section != page.evaluate("new URLSearchParams(location.search).get('section')"):
            open_section(page, section)
            slider_handle(page, "d_k").focus()
        page.wait_for_function(AHEAD_READY_JS)
        page.evaluate("window.__answers.length = 0; pyodideWorker.appliedAhead = null")
        page.keyboard.press(key)
        page.wait_for_url(f"**d_k={d_k}**")
        page.wait_for_function("() => !pyodideWorker.busy")
        exponent = int(np.log2(d_k))
        assert page.evaluate("pyodideWorker.appliedAhead?.key").endswith(f".value={exponent}")
        [answer] = page.evaluate("window.__answers")
        assert answer and not [event for event in answer if "ColumnDataChanged" in event], answer
        python = json.loads(worker.evaluate(f"self.pyodide.runPython({PYTHON_SOURCES_PY!r})"))
        shown = read_sources(page, list(python))
        for name, columns in python.items():  # exactly, NaN as NaN
            assert shown[name].keys() == columns.keys(), name
            for column, values in columns.items():
                np.testing.assert_array_equal(
                    np.ravel(shown[name][column]), np.ravel(values), f"{name}.{column}"
                )
        marker = "spread:marker" if section == "spread" else "max_weight:marker"
        assert shown[marker]["d_k"] == [d_k]
    assert console.errors == []


def test_the_power_rule_follows_its_alpha_slider_as_the_simulation_and_theory_say(
    offline, site_url
):
    """A link to ÷ d_k^α at α = 1/4 shows sweep's and train's numbers and the theory line
    d_k^(1/2 - α) v / T; one key on the α slider puts alpha=7/24 in the URL and the page
    recomputes every view for it."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?scaling=power&alpha=1/4&d_k=256")
    wait_until_ready(page)
    page.wait_for_function(TRAINED_JS)
    assert "alpha=1/4" in page.url  # a fraction, as a teacher would write it
    for alpha, label in ((0.25, "1/4"), (7 / 24, "7/24")):
        settings = Settings(d_k=256, scaling="power", alpha=alpha, seed=0, **DEFAULT)
        theory_line = wait_for_source(
            page,
            "spread:theory:power",
            f"(d) => Math.abs(d.y[0] - 1) < 1e-12 && Math.abs(d.y.at(-1) / d.d_k.at(-1) "
            f"** {0.5 - alpha} - 1) < 1e-9",
        )
        np.testing.assert_allclose(
            theory_line["y"],
            np.array(theory_line["d_k"]) ** (0.5 - alpha),  # d_k^(1/2 - alpha) v / T
            rtol=1e-12,
        )
        curves = sweep(settings, D_K_OPTIONS)["power"]
        shown = read_sources(page, ["spread:power", "spread:marker"])
        np.testing.assert_allclose(shown["spread:power"]["y"], curves["logit_std"], rtol=1e-9)
        assert shown["spread:marker"]["color"] == [RULE_COLORS["power"]]
        assert slider_handle(page, "alpha").get_attribute("aria-valuetext") == label
        open_section(page, "saturation")
        assert_shows_weights_of(page, settings)
        page.wait_for_function(TRAINED_JS)
        open_section(page, "learning")
        assert_trained_as_here(page, {"power": train(settings)["power"]})
        open_section(page, "spread")
        if label == "1/4":
            slider_handle(page, "alpha").press("ArrowRight")
            page.wait_for_url("**alpha=7/24**")
    key = page.get_by_role("button", name=rule_key_label("power"), exact=True)
    # The key's words in the rule's colour, darkened to read (RULE_TEXT_COLORS).
    key_color = "rgb({}, {}, {})".format(*bytes.fromhex(RULE_TEXT_COLORS["power"][1:]))
    assert key.evaluate("(b) => getComputedStyle(b).color") == key_color
    assert console.errors == []


NUMBER = re.compile(r"−?\d+(?:\.\d+)?(?:e[+−-]?\d+)?")
# The words of the answer on screen: its paragraphs' and table cells' text, in order.
ANSWER_JS = f"""() => [...({DEEP_JS}('.lab-answer')[0]?.shadowRoot?.querySelectorAll(
  'p, th, td, li') ?? [])].map((e) => e.textContent).join(' ').replace(/\\s+/g, ' ').trim()"""


class _Words(HTMLParser):
    """The text of an HTML fragment's paragraphs, table cells and list items, in order."""

    def __init__(self):
        super().__init__()
        self.words, self._depth = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("p", "th", "td", "li"):
            self._depth += 1
            self.words.append(" ")

    def handle_endtag(self, tag):
        if tag in ("p", "th", "td", "li"):
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.words.append(data)


def answer_words(markdown: str) -> str:
    """What ANSWER_JS reads of an answer, from its Markdown."""
    parser = _Words()
    parser.feed(to_html(markdown))
    return re.sub(r"\s+", " ", "".join(parser.words)).strip()


# An answer's numbers as printed: 3 significant digits, one unit of the last at most 1%.
ANSWER_RTOL = 0.01

# The page's training runs and learning-rate sweep, read from its worker's Python.
PAGE_TRAINING_PY = """
import gc, json
r = next(o for o in gc.get_objects() if isinstance(o, AttentionLab)).results
json.dumps({
    "runs": {
        d: {rule: {"loss": run.loss.tolist(), "accuracy": run.accuracy.tolist(),
                   "chaotic_from": run.chaotic_from}
            for rule, run in runs.items()}
        for d, runs in r.runs.items()
    },
    "rates": None if r.rates is None else {
        part: {rule: a.tolist() for rule, a in getattr(r.rates, part).items()}
        for part in ("start", "loss", "accuracy", "edge", "chaotic")
        if getattr(r.rates, part) is not None
    },
})
"""


def trained_as_on_page(page, here):
    """``here`` (``Results`` computed on this machine) with the page's own training runs
    (and which are chaotic) and learning rates (once done; and which of their edges are
    chaotic, once checked) in place of this machine's
    (until then, ``here``'s, for an answer that does not read them).
    Where the descent is chaotic (the unscaled rule after a few steps; at some scenarios
    and d_k other rules too; near every edge of stability) wasm's last bits give other
    final losses and accuracies than this machine's (a 6% loss; 4 against 6 tokens of
    64; in saturated scenarios the unscaled loss moves by 1e-6 within 5 steps), so an
    answer is checked against the runs the page shows. They are the same runs as here
    (checked: the same starting loss and first update, the sweep's same starting
    losses); test_training_follows_... and test_the_learning_rate_views_... check that
    they agree throughout where the descent is smooth."""
    (worker,) = page.workers
    shown = json.loads(worker.evaluate(f"self.pyodide.runPython({PAGE_TRAINING_PY!r})"))
    runs = {}
    for d_k, by_rule in here.runs.items():
        runs[d_k] = {}
        for rule, run in by_rule.items():
            page_run = shown["runs"][str(d_k)][rule]
            loss, accuracy = np.array(page_run["loss"]), np.array(page_run["accuracy"])
            np.testing.assert_allclose(loss[:2], run.loss[:2], rtol=TRAINING_RTOL)
            chaotic_from = page_run["chaotic_from"]
            runs[d_k][rule] = replace(run, loss=loss, accuracy=accuracy, chaotic_from=chaotic_from)
    if shown["rates"] is None:  # still sweeping: an answer that does not read them
        return replace(here, runs=runs)
    parts = {k: {rule: np.array(a) for rule, a in v.items()} for k, v in shown["rates"].items()}
    parts.setdefault("chaotic", None)  # not yet checked
    for rule, start in parts["start"].items():
        np.testing.assert_allclose(start, here.rates.start[rule], rtol=TRAINING_RTOL)
    return replace(here, runs=runs, rates=replace(here.rates, **parts))


def assert_answer_reads(text: str, expected: str, rtol: float):
    """``text`` is ``expected`` word for word, and number for number within ``rtol``."""
    assert NUMBER.sub("#", text) == NUMBER.sub("#", expected), (text, expected)
    shown, wanted = NUMBER.findall(text), NUMBER.findall(expected)
    for a, b in zip(shown, wanted, strict=True):
        a, b = (float(x.replace("−", "-")) for x in (a, b))
        assert a == pytest.approx(b, rel=rtol, abs=1e-12), (text, expected)


def test_every_question_answers_with_the_numbers_of_its_scenario(offline, site_url):
    """Each question, picked from the list, applies its steps' scenarios (the URL says
    so), asks for a prediction before it shows anything, and answers with the numbers
    that simulate, sweep and training_sweep give here for that scenario."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url)
    wait_until_ready(page)
    picker = page.get_by_role("combobox", name="Questions learners ask")
    for q in QUESTIONS:
        picker.select_option(label=q.text)
        page.wait_for_url(f"**question={q.slug}&step=1")
        answer = page.locator(".lab-answer")
        asked = page.locator(".lab-question p").all_text_contents()
        assert answer.is_hidden() and q.predict in asked
        page.get_by_role("button", name="Reveal the answer").click()
        for i, step in enumerate(q.steps):
            if i:
                page.get_by_role("button", name="Next →").click()
                page.wait_for_url(f"**question={q.slug}&step={i + 1}")
            values = DEFAULTS | step.scenario
            section = section_of(step.view)  # the section of its view opened
            assert read_query(dict(parse_qsl(page.evaluate("location.search")[1:])))[0] == {
                **values,
                "question": q.slug,
                "step": i,
                **({"section": section} if section != FIRST_SECTION else {}),
            }
            here = evidence(step.scenario)
            page.wait_for_function(TRAINED_JS)
            if step.answer(replace(here, rates=None, rates_progress=0.0)) != step.answer(here):
                page.wait_for_function(CHECKED_JS, timeout=300_000, polling=100)
            here = trained_as_on_page(page, here)
            expected = answer_words(step.answer(here))
            assert expected != answer_words(text("notices", "training pending"))
            page.wait_for_function(
                f"() => !({ANSWER_JS})().includes('still computing')"
                f" && ({ANSWER_JS})().includes({expected[:40]!r})",
                polling=100,
            )
            assert_answer_reads(page.evaluate(ANSWER_JS), expected, ANSWER_RTOL)
        if len(q.steps) > 1:  # at the last step
            assert page.get_by_role("button", name="Next →").is_disabled()
    assert console.errors == []


def test_one_section_at_a_time_from_the_link_the_keyboard_and_the_next_button(offline, site_url):
    """?section=gradients shows its views only; a move updates them and leaves the other
    sections' figures as they were (they are out of the page); a section opened later
    shows the current scenario; the section buttons and "Next" work from the keyboard."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?section=gradients")
    wait_until_ready(page)
    page.get_by_role("heading", name="Gradients", exact=True).wait_for()
    assert page.evaluate(SHOWN_VIEWS_JS) == ["view:jacobian", "view:query_grad"]
    slider_handle(page, "d_k").press("ArrowRight")  # d_k 64 -> 128
    wait_for_source(page, "jacobian:marker", "(d) => d.d_k[0] === 128")
    page.wait_for_url("**d_k=128**")
    # The spread section was on screen when the page was built (the snapshot's, at the
    # defaults): BokehJS may still hold its figure, but nothing updated it.
    before = read_sources(page, ["spread:marker"]).get("spread:marker", {"d_k": [64]})
    assert before["d_k"] == [64]
    open_section(page, "spread", key="Enter")
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 128")
    assert "section=" not in page.url  # the first section is the page's own
    assert page.evaluate(SHOWN_VIEWS_JS) == ["view:histogram", "view:spread"]
    page.get_by_role("button", name="Next: Saturation →").press("Enter")
    page.wait_for_url("**section=saturation**")
    assert_shows_weights_of(page, Settings(d_k=128, scaling="sqrt", seed=0, **DEFAULT))
    open_section(page, "stability", key="Space")
    assert page.evaluate(SHOWN_VIEWS_JS) == []
    assert page.get_by_text("The largest logit now").is_visible()
    assert page.get_by_role("button", name="Next: ", exact=False).count() == 0  # the last
    assert console.errors == []


# The top of the first figure on screen, in CSS px from the top of the page.
FIRST_FIGURE_TOP_JS = f"""() => {{
  const [first] = ({MODELS_JS})('Figure').filter({ON_SCREEN_JS});
  return Bokeh.index.find_one(first).el.getBoundingClientRect().top + scrollY;
}}"""
FIRST_SCREEN_PLOT = 150  # px of the first plot the first screen shows, at least


# Whether the element the expression yields is what the screen shows at its centre
# (not scrolled out of a scrolling panel, nor covered), through shadow roots.
SHOWN_AT_ITS_CENTRE_JS = """(el) => {
  const box = el.getBoundingClientRect();
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
  let hit = document.elementFromPoint(x, y);
  while (hit?.shadowRoot) {
    const inner = hit.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  return y >= 0 && y <= innerHeight && (hit === el || el.contains(hit));
}"""


@pytest.mark.parametrize("device", ["desktop", "iPhone 13", "Pixel 5"])
def test_the_first_screen_shows_the_controls_and_the_first_plot(offline, site_url, device):
    """At 1280 by 800, and on an iPhone 13 and a Pixel 5 (Playwright's descriptors: their
    screens, touch and pixel ratios), the first screen shows the d_k slider and 150 px of
    the first section's first plot, unscrolled. Before the plot come only the title, one
    short paragraph, the explainer and the question picker (closed), the rule and d_k,
    the section buttons and the section's introduction; alpha's slider only under the
    power rule, where it acts."""
    phone = device != "desktop"
    context = offline.phone(**offline.phones[device]) if phone else offline
    page = context.new_page()
    if not phone:
        page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(site_url)
    wait_until_ready(page)
    height = page.evaluate("innerHeight")
    assert page.evaluate(FIRST_FIGURE_TOP_JS) <= height - FIRST_SCREEN_PLOT, height
    d_k = slider_handle(page, "d_k")
    assert d_k.evaluate(SHOWN_AT_ITS_CENTRE_JS)
    assert slider_handle(page, "alpha").is_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("innerWidth")
    page.goto(site_url + "?scaling=power")
    wait_until_ready(page)
    expect(slider_handle(page, "alpha")).to_be_visible()
    page.get_by_role("button", name=RULE_NAMES["sqrt"], exact=True).click()
    expect(slider_handle(page, "alpha")).to_be_hidden()
    page.close()
    if phone:
        context.close()


# From now on, record every movement that starts in the page (a CSS transition of a
# position, or a CSS animation), in the document and every shadow root.
RECORD_MOVEMENT_JS = """() => {
  window.__moved = [];
  const MOVES = ['transform', 'translate', 'left', 'right', 'top', 'bottom'];
  const record = (e) => (e.animationName || MOVES.includes(e.propertyName))
    && window.__moved.push(`${e.type} ${e.propertyName ?? e.animationName}`);
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    roots[i].addEventListener('transitionrun', record);
    roots[i].addEventListener('animationstart', record);
    roots[i].querySelectorAll('*').forEach((el) => el.shadowRoot && roots.push(el.shadowRoot));
  }
}"""


def test_a_click_on_a_slider_s_track_moves_nothing_for_those_who_ask_for_less_motion(
    offline, site_url
):
    """A click on the d_k slider's track glides its handle there (noUiSlider's 0.3 s
    transition); with the system's prefers-reduced-motion, the handle jumps (WCAG
    2.3.3)."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url)
    wait_until_ready(page)
    track = slider(page, "d_k").locator(".noUi-target")
    for motion, at, moves in (("no-preference", 0.9, True), ("reduce", 0.1, False)):
        page.emulate_media(reduced_motion=motion)
        page.evaluate(RECORD_MOVEMENT_JS)
        before = page.evaluate("new URLSearchParams(location.search).get('d_k')")
        box = track.bounding_box()
        page.mouse.click(box["x"] + at * box["width"], box["y"] + box["height"] / 2)
        page.wait_for_function(
            f"() => new URLSearchParams(location.search).get('d_k') !== {json.dumps(before)}"
        )
        moved = page.evaluate("window.__moved")
        assert bool(moved) == moves, (motion, moved)
    assert console.errors == []
    page.close()


def test_two_quick_presses_on_a_slider_s_track_both_count(offline, site_url):
    """Two clicks on the d_k slider's track, one right after the other: the second
    counts (noUiSlider ignored a press for 300 ms after a tap on its track or after
    Python's answer set its value, so a quick second press was lost)."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url)
    wait_until_ready(page)
    box = slider(page, "d_k").locator(".noUi-target").bounding_box()
    for at in (0.9, 0.1):  # d_k = 2 ** 9, then 2 ** 1
        page.mouse.click(box["x"] + at * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_function("() => new URLSearchParams(location.search).get('d_k') === '2'")
    assert console.errors == []
    page.close()


def test_a_link_to_a_question_opens_its_step_with_its_view_in_sight(offline, site_url):
    """?question=skip-scaling&step=2: that step's scenario, its view scrolled into sight,
    the answer hidden, and no prediction prompt (step 1's, which later steps repeated);
    a step past the last shows the last."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?question=skip-scaling&step=2")
    wait_until_ready(page)
    step = question("skip-scaling").steps[1]
    page.wait_for_function(
        f"() => {{ const [m] = ({MODELS_JS})('Column').filter((m) => m.name"
        f" === 'view:training_sweep' && ({ON_SCREEN_JS})(m));"
        " const box = m && Bokeh.index.find_one(m).el.getBoundingClientRect();"
        " return box && box.top >= -1 && box.top < innerHeight / 2; }"
    )
    assert "d_k=512" in page.url and "scaling=none" in page.url
    assert "section=learning" in page.url  # the section of its view opened
    assert page.locator(".lab-answer").is_hidden()
    asked = " ".join(page.locator(".lab-question p").all_text_contents())
    assert "(step 2 of 2)" in asked
    assert question("skip-scaling").predict not in asked  # asked at step 1 only
    assert step.view == "training_sweep"
    page.goto(site_url + "?question=skip-scaling&step=9")
    wait_until_ready(page)
    page.wait_for_url("**question=skip-scaling&step=2")
    assert console.errors == []


def test_back_to_the_lab_from_the_theory_page_keeps_the_scenario_and_step(offline, site_url):
    """The theory page's "Back to the lab" returns to the lab's link, its scenario, open
    question and step (it went to ./, the default scenario, with no question)."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=256&variance=0.5&question=one-learning-rate&step=2")
    wait_until_ready(page)
    page.wait_for_url("**step=2**")
    lab = page.url
    page.get_by_role("link", name="The theory behind the plots").click()
    page.wait_for_url("**/theory.html")
    page.get_by_role("link", name="Back to the lab").click()
    page.wait_for_url(lab)
    wait_until_ready(page)
    assert "question=one-learning-rate" in page.url and "step=2" in page.url
    assert "variance=0.5" in page.url
    assert console.errors == []


def test_one_query_up_close_shows_the_median_row_then_the_picked_one(offline, site_url):
    """The row views hold one query's logits and weights, unscaled and under the rule,
    keys sorted by the rule's logit: the median row of simulate's draw, then row 5."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=512&scaling=sqrt&section=query")
    wait_until_ready(page)
    draw = simulate(Settings(d_k=512, scaling="sqrt", seed=0, **DEFAULT))
    unscaled = draw.q @ draw.k.T
    rows = np.argsort(draw.weights.max(axis=1), kind="stable")  # by their largest weight
    for row, label in ((int(rows[31]), None), (4, "5")):  # the lower median of 64, row 5
        if label:
            page.get_by_role("combobox", name="Query row").select_option(label=label)
        top = float(draw.logits[row].max())
        wait_for_source(page, "row_logits:scaled", f"(d) => Math.abs(d.y[0] / {top!r} - 1) < 1e-9")
        names = [f"{key}:{kind}" for key in ROW_FIGURES for kind in ("raw", "scaled")]
        shown = read_sources(page, names)
        order = np.argsort(-draw.logits[row])
        e = np.exp(unscaled[row] - unscaled[row].max())
        expected = {
            "row_logits:scaled": draw.logits[row][order],
            "row_logits:raw": unscaled[row][order],
            "row_weights:scaled": draw.weights[row][order],
            "row_weights:raw": (e / e.sum())[order],
        }
        for name, values in expected.items():
            np.testing.assert_allclose(shown[name]["y"], values, rtol=1e-9, atol=1e-300)
            assert shown[name]["key"] == list(order + 1)
        # The text summary follows the row on screen (for screen readers).
        row_lines = page.locator(".lab-summary li", has_text="One query up close")
        expect(row_lines.filter(has_text=f"Query {row + 1} with rule ÷ √d_k")).to_have_count(2)
    assert console.errors == []


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


def first_pixel(data: bytes) -> tuple[int, ...]:
    """The top left pixel of an 8-bit RGBA PNG: every filter of a first row leaves its
    first pixel's bytes as they are (its neighbours above and left count as zero)."""
    assert data[24:26] == bytes([8, 6])  # bit depth 8, colour type 6 (RGBA)
    return tuple(png_rows(data)[2][1:5])


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


def test_the_data_and_every_figure_can_be_taken_away(offline, site_url, tmp_path):
    """One click: the scenario's curves, draw and training runs as CSV, equal to what
    sweep, simulate and training_sweep give here. Another: every figure in one PNG."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + EXPORTED)
    wait_until_ready(page)
    page.wait_for_function(TRAINED_JS)
    with page.expect_download() as download:
        page.get_by_role("button", name="Data (CSV)").click()
    assert download.value.suggested_filename == "attention-scaling-lab.csv"
    search = page.evaluate("decodeURIComponent(location.search)")
    assert_csv_is_the_scenario(Path(download.value.path()).read_text(), search)

    with page.expect_download() as download:
        page.get_by_role("button", name="Figures (PNG)").click()
    assert download.value.suggested_filename == "attention-scaling-lab.png"
    figure = page.evaluate(
        "() => Bokeh.index.find_one([...Bokeh.documents].at(-1).get_model_by_name('heatmap'))"
        ".canvas_view.el.getBoundingClientRect().height * devicePixelRatio"
    )
    assert_png_is_the_section(Path(download.value.path()).read_bytes(), figure)

    # The poster: the picked views (two of the four on screen), in one row.
    for title in EMBED_TITLES[1:3]:
        page.get_by_role("checkbox", name=title, exact=True).click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Poster (PNG)").click()
    assert download.value.suggested_filename == POSTER_FILENAME
    # The buttons fit the controls' column: reaching them scrolled nothing sideways
    # (the poster's beside "Copy embed code", and "Data (CSV)" with "Figures (PNG)",
    # ran 10 to 11 px past the column's edge).
    assert page.evaluate(f"{DEEP_JS}('*').filter((el) => el.scrollLeft > 0).length") == 0
    poster = Path(download.value.path()).read_bytes()
    width, height, colours = png_size_and_colours(poster)
    assert width > 2 * 400 and figure < height < 2 * figure and colours > 100
    assert first_pixel(poster) == (255, 255, 255, 255)  # the light page's paper
    page.goto(site_url + EXPORTED + "&theme=dark")
    wait_until_ready(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="Poster (PNG)").click()
    paper = bytes.fromhex(DARK_PAPER[1:])
    assert first_pixel(Path(download.value.path()).read_bytes()) == (*paper, 255)
    assert console.errors == []


def test_lecture_mode_shows_one_view_at_a_time_in_large_type(offline, site_url):
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?lecture=1&d_k=512")
    wait_until_ready(page)
    shown_views = SHOWN_VIEWS_JS
    title_size = (  # of the first figure on screen
        f"() => ({MODELS_JS})('Figure').filter({ON_SCREEN_JS})[0].title.text_font_size"
    )
    assert page.evaluate(shown_views) == ["view:histogram"]
    assert page.evaluate(title_size) == "22px"
    page.get_by_role("button", name="Next view →").click()
    page.wait_for_function(f"() => ({shown_views})()[0] === 'view:spread'")
    assert page.evaluate(shown_views) == ["view:spread"]
    assert "lecture=1" in page.url and "d_k=512" in page.url
    page.get_by_role("button", name="Next view →").click()  # into the next section
    page.wait_for_function(f"() => ({shown_views})()[0] === 'view:max_weight'")
    page.wait_for_url("**section=saturation**")
    page.get_by_role("button", name="Leave lecture mode").click()
    views = [f"view:{key}" for key in SECTIONS["saturation"]]
    page.wait_for_function(f"() => ({shown_views})().join() === {','.join(views)!r}")
    page.wait_for_function("() => !location.search.includes('lecture')")
    assert page.evaluate(title_size) == "13px"
    assert console.errors == []


def test_the_numerical_stability_figures_are_those_of_the_logits_on_screen(offline, site_url):
    """Without scaling at d_k = 1024: the largest logit, and the share of rows whose
    naive softmax overflows in each format, as computed here for the same draw."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=1024&scaling=none&section=stability")
    wait_until_ready(page)
    logits = simulate(Settings(d_k=1024, scaling="none", seed=0, **DEFAULT)).logits
    pane = page.locator(".lab-precision")
    assert pane.locator("strong").inner_text() == f"{logits.max():.4g}"
    shares, expected = naive_overflow_shares(logits), []
    for name, limit in EXP_LIMITS.items():
        expected += [name, f"{limit:.3f}", f"{shares[name]:.0%}"]
    assert pane.locator("td").all_inner_texts() == expected
    assert expected[-1] not in ("0%", "100%")  # float32: some rows, not all
    assert "softmax(z − max z)" in " ".join(pane.locator("p").all_inner_texts())
    assert console.errors == []


# Where d_k = x is drawn in figure `name` of the live document (scrolled into view),
# in page pixels.
D_K_PIXEL_JS = """([name, x]) => {
  const figure = Bokeh.documents[Bokeh.documents.length - 1].get_model_by_name(name);
  const view = Bokeh.index.find_one(figure);
  view.el.scrollIntoView({block: 'center'});
  const box = view.canvas_view.el.getBoundingClientRect();
  return [box.left + view.frame.x_scale.compute(x), box.top + view.frame.bbox.vcenter];
}"""


def test_real_models_head_dimensions_are_marked_on_every_plot_against_d_k(offline, site_url):
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url)
    wait_until_ready(page)
    models = read_sources(page, ["models"])["models"]
    assert models["d_k"] == [64, 128]
    against_d_k = {"spread", "max_weight", "entropy", "jacobian", "query_grad", "saturated"}
    counts = {}
    for section in SECTIONS:
        open_section(page, section)
        counts |= page.evaluate(MODEL_LINES_JS)
    assert set(counts) == set(VIEWS)
    trained_against_d_k = {"training_sweep", "best_loss", "best_lr"}
    assert {name for name, count in counts.items() if count == 1} == (
        against_d_k | trained_against_d_k
    )
    assert set(counts.values()) == {0, 1}
    open_section(page, "spread")
    # Hovering the line at d_k = 128 names the models and their d_model / heads.
    x, y = page.evaluate(D_K_PIXEL_JS, ["spread", 128])
    page.mouse.move(x, y)
    page.get_by_text("GPT-3 175B (12288 / 96), LLaMA 7B (4096 / 32)").wait_for(timeout=10_000)
    # ... and only them: the curves' own hover has no median to show there ("???").
    assert page.get_by_text("???").count() == 0
    assert console.errors == []


def test_a_link_says_what_is_on_screen_until_its_scenario_is_live(offline, site_url):
    """While loading, the status names the prerendered and the asked-for scenario;
    the controls are disabled; "ready" comes only once the link's scenario is plotted."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none&section=saturation")
    wait_for_source(page, "histogram:raw", "(d) => d.left.length > 0", timeout=10_000)
    status = page.locator("#lab-status").inner_text()
    assert "default scenario" in status and "d_k=256, scaling=none" in status, status
    assert page.evaluate(PRERENDERED_SLIDERS_DISABLED)
    wait_until_ready(page)
    # At the moment it says ready, the plots already show the link's scenario and section.
    assert_shows_weights_of(page, Settings(d_k=256, scaling="none", seed=0, **DEFAULT))
    assert "link's scenario" in page.locator("#lab-status").inner_text()
    assert console.errors == []


def test_the_page_s_words_need_no_script_and_give_way_to_the_drawn_page(
    offline, site_url, tmp_path
):
    """The title, what the page is for and the first section's introduction are in the
    page's HTML, so they are painted before any script has run (on a slow link, before
    the 0.8 MB of BokehJS and Panel arrive). Without JavaScript they are what shows, with
    a notice on why nothing moves that fills the frame (an embed's too: not 1,300 px of
    white), and not the first section's introduction, which an embed of other views does
    not show; with it, they give way to the drawn page, which says the same once (one
    title, one introduction)."""
    from app.options import FIRST_SECTION

    intro = section_title(FIRST_SECTION)
    still = offline.browser.new_context(java_script_enabled=False)
    page = still.new_page()
    page.goto(site_url + "?d_k=256&scaling=none")
    expect(page.locator("#lab-first-text h1")).to_have_text(TITLE)
    expect(page.locator("#lab-first-text h2")).to_have_text(intro)
    expect(page.locator("#lab-first-text h2")).to_be_hidden()
    expect(page.locator("#lab-first-text .lab-no-script")).to_be_visible()
    expect(page.locator("#lab-first-text .lab-no-script")).to_contain_text("needs JavaScript")
    assert page.locator("#lab-first-text a[href='theory.html']").count() == 2
    # An embed on a course page, scripts off there too: the notice fills its frame.
    write_course_page(tmp_path, site_url, ["?views=heatmap"], [100])
    with http_server(tmp_path) as course_url:
        page.goto(course_url)
        frame = page.frame_locator("iframe")
        expect(frame.locator(".lab-no-script")).to_be_visible()
        filled = frame.locator("#lab-first-text").bounding_box()["height"]
        assert filled >= page.locator("iframe").bounding_box()["height"] - 1
    still.close()

    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none")
    wait_for_source(page, SECTION_SOURCES[FIRST_SECTION], "(d) => d.left.length > 0")
    expect(page.locator("#lab-first-text")).to_have_count(0)
    expect(page.locator("h1 >> visible=true")).to_have_count(1)
    expect(page.locator("h2", has_text=intro)).to_have_count(1)
    wait_until_ready(page)
    assert console.errors == []


# Drops the page's own location message to the worker (Panel's, posted once the page has
# drawn the document), and counts it.
DROP_LOCATION_JS = """
window.__droppedLocations = 0;
const post = Worker.prototype.postMessage;
Worker.prototype.postMessage = function (message, ...rest) {
  if (message?.type === 'location') { window.__droppedLocations += 1; return; }
  return post.call(this, message, ...rest);
};
"""


def test_a_link_is_computed_while_the_page_draws_the_document(offline, site_url):
    """Restored from its snapshot, the worker has the page's location from the word that
    starts it, and applies the link's scenario while the page draws the document: the
    page's own location message, dropped here, is not needed, and the moves after it are
    drawn ahead and answered."""
    page = offline.new_page()
    page.add_init_script(DROP_LOCATION_JS)
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none&section=saturation")
    wait_until_ready(page)
    assert page.evaluate("window.__droppedLocations") == 1
    assert_shows_weights_of(page, Settings(d_k=256, scaling="none", seed=0, **DEFAULT))
    page.wait_for_function(AHEAD_READY_JS, timeout=30_000)  # the look-ahead runs
    slider_handle(page, "d_k").press("ArrowLeft")
    page.wait_for_url("**d_k=128**", timeout=30_000)
    assert_shows_weights_of(page, Settings(d_k=128, scaling="none", seed=0, **DEFAULT))
    assert console.errors == []


def test_a_bad_link_shows_its_notice_on_the_site(offline, site_url):
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=300&seed=abc")
    wait_until_ready(page)
    notice = page.locator("text=d_k=300 is not on the slider")
    notice.wait_for(timeout=10_000)
    assert "showing d_k=256" in notice.inner_text()
    assert page.locator("text=seed='abc' was ignored").is_visible()
    page.wait_for_url("**d_k=256**", timeout=10_000)  # the URL holds the corrected scenario
    assert "abc" not in page.url
    open_section(page, "saturation")
    assert_shows_weights_of(page, Settings(d_k=256, scaling="sqrt", seed=0, **DEFAULT))
    assert page.locator("text=d_k=300 is not on the slider").is_visible()  # it stays
    assert console.errors == []


# The embed picker's first five views, by their figures' titles.
EMBED_TITLES = [
    "Logit spread against d_k",
    "Largest attention weight",
    "Entropy of the weights",
    "Saturated rows (max weight > 0.99)",
    "Attention weights of the current draw",
]


def test_a_course_page_embeds_the_views_a_teacher_picked(offline, site_url, tmp_path):
    """The page's embed code: the views of the section on screen, or those picked (from
    any section), in a frame that fits them."""
    page = offline.new_page()
    page.goto(site_url + "?d_k=512&scaling=none&seed=3&section=saturation")
    wait_until_ready(page)
    picked = [page.get_by_role("checkbox", name=title, exact=True) for title in EMBED_TITLES]
    assert [box.is_checked() for box in picked] == [False, True, True, True, True]
    for box in picked[:4]:  # the spread, and not the saturation section's curves
        box.click()
    page.get_by_role("button", name="Copy embed code").click()
    snippet = page.locator("textarea").input_value()
    assert "views=spread%2Cheatmap" in snippet and "d_k=512" in snippet
    assert "section=" not in snippet
    height = int(snippet.split('height="')[1].split('"')[0])
    page.close()

    fixture = (Path(__file__).parent / "fixtures" / "course_page.html").read_text()
    (tmp_path / "index.html").write_text(fixture.replace("{{ SNIPPET }}", snippet))
    already_outside = len(offline.outside)
    with http_server(tmp_path) as course_url:
        page = offline.new_page()
        console = Console(page)
        page.goto(course_url)
        frame = page.locator("iframe").element_handle().content_frame()
        wait_until_ready(frame)
        wait_for_source(frame, "spread:marker", "(d) => d.d_k[0] === 512")
        assert_shows_weights_of(frame, Settings(d_k=512, scaling="none", seed=3, **DEFAULT))
        assert frame.evaluate("document.documentElement.scrollWidth") <= 640  # the frame's width
        # The frame fits its content: no inner scrolling, and not much empty space.
        content = frame.evaluate("document.documentElement.scrollHeight")
        assert content <= height, (content, height)
        assert content >= 0.85 * height, (content, height)
        shown = frame.evaluate(SHOWN_VIEWS_JS)
        assert shown == ["view:spread", "view:heatmap"]  # from two sections
        assert frame.get_by_role("link", name="Open the full Attention Scaling Lab").count() == 1
    assert offline.outside[already_outside:] == []
    assert console.errors == []


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
# The titles laid out (the embed layout's, for screen readers): the size of the pane
# that clips each, and its text.
EMBED_TITLE_JS = f"""() => {DEEP_JS}('h1').filter((h) => h.getClientRects().length)
  .map((h) => {{ const box = h.getRootNode().host.getBoundingClientRect();
    return [box.width, box.height, h.textContent]; }})"""


# The colour of each slider's filled track, and the page's primary colour it takes (an
# embed drawn live off the screen had Panel's grey, the others noUiSlider's teal).
SLIDER_FILLS_JS = f"""() => {DEEP_JS}('.noUi-connect').filter((c) => c.offsetParent)
  .map((c) => getComputedStyle(c).backgroundColor)"""
PRIMARY = "rgb(0, 114, 181)"  # Panel's --panel-primary-color, #0072b5


def test_a_course_page_s_three_embeds_go_live_and_say_so_on_or_off_the_screen(
    offline, site_url, tmp_path
):
    """Three embeds on a course page of another origin (lazy frames as the embed code
    writes them, three scenarios), the second below the fold and the third far below:
    each goes live, and its status bar says ready as soon as its Python is, drawn or
    not. (Off the screen the browser draws no frame; the status waited for one, said
    "loading" and then "Still loading after 90 s" of a page that was live.) Scrolled
    to, each shows its views, under a title only screen readers read.

    The three share one Python (a SharedWorker), each with a document of its own: a
    move in one changes nothing in the others, and an embed that goes (here the first,
    whose document Python started with) and comes back gets a new one, while the others
    go on answering. Each tells the course page its state. Each one's sliders fill in
    the page's primary colour, whether the embed was drawn on the screen or off it."""
    # Chromium loads a lazy frame within 1250 to 8000 px of the screen, by the network
    # it estimates: the third, 12000 px below, waits to be scrolled to.
    write_course_page(tmp_path, site_url, COURSE_EMBEDS, gaps=[0, 200, 12_000])
    with http_server(tmp_path) as course_url:  # another port: another origin
        page = offline.new_page()
        console = Console(page)
        page.goto(course_url)
        frames = [f.content_frame() for f in page.locator("iframe").element_handles()]
        for frame in frames[:2]:
            frame.wait_for_url(re.compile(re.escape(site_url) + r"\?"))
            # Polled by time: a frame off the screen runs no animation frames.
            frame.wait_for_function(STATUS_READY_JS, timeout=BOOT_TIMEOUT, polling=100)
        assert [frame.evaluate(IN_VIEW_JS) for frame in frames[:2]] == [True, False]
        assert frames[2].url in ("", "about:blank")  # far below: not loaded yet
        for index, (frame, views) in enumerate(zip(frames, COURSE_EMBEDS.values(), strict=True)):
            page.locator("iframe").nth(index).scroll_into_view_if_needed()
            wait_until_ready(frame)
            assert frame.evaluate(IN_VIEW_JS)
            frame.wait_for_function(
                f"() => ({SHOWN_VIEWS_JS})().join() === "
                f"{json.dumps(','.join(f'view:{v}' for v in views))}"
            )
            assert frame.evaluate(EMBED_TITLE_JS) == [[1, 1, TITLE]]  # 1 px, clipped
            assert set(frame.evaluate(SLIDER_FILLS_JS)) == {PRIMARY}, index
        assert [f.evaluate("pyodideWorker.python") for f in frames] == ["shared"] * 3
        told = page.evaluate("embedStates().map((s) => [s.state, s.python])")
        assert told == [["ready", "shared"]] * 3

        # A move in the first embed is its own: the others keep their scenarios.
        slider_handle(frames[0], "d_k").press("ArrowLeft")
        wait_for_source(frames[0], "spread:marker", "(d) => d.d_k[0] === 256")
        frames[0].wait_for_url(re.compile(r"d_k=256&"))
        assert [dict(parse_qsl(f.url.split("?")[1]))["d_k"] for f in frames] == ["256", "64", "64"]
        # The first embed goes and comes back at another link: a new document of its own.
        page.locator("iframe").nth(0).evaluate("(f) => { f.src = f.src + '&seed=5'; }")
        frames[0].wait_for_url(re.compile(r"seed=5"))
        wait_until_ready(frames[0])
        assert dict(parse_qsl(frames[0].url.split("?")[1]))["d_k"] == "512"
        wait_for_source(frames[0], "spread:marker", "(d) => d.d_k[0] === 512")
        # and the second still answers its moves.
        page.locator("iframe").nth(1).scroll_into_view_if_needed()
        slider_handle(frames[1], "d_k").press("ArrowRight")
        frames[1].wait_for_url(re.compile(r"d_k=128&"))
        wait_until_ready(frames[1])
    assert console.errors == []


def test_each_embed_runs_a_python_of_its_own_where_the_browser_shares_none(
    offline, site_url, tmp_path
):
    """Where the browser has no SharedWorker (some phones' browsers), each embed of a
    course page starts a worker of its own, goes live and tells the course page so."""
    links = list(COURSE_EMBEDS)[:2]
    write_course_page(tmp_path, site_url, links, gaps=[0, 200])
    with http_server(tmp_path) as course_url:
        page = offline.new_page()
        console = Console(page)
        page.add_init_script("delete window.SharedWorker")  # in every frame
        page.goto(course_url)
        frames = [f.content_frame() for f in page.locator("iframe").element_handles()]
        for frame in frames:
            frame.wait_for_url(re.compile(re.escape(site_url) + r"\?"))
            frame.wait_for_function(STATUS_READY_JS, timeout=BOOT_TIMEOUT, polling=100)
        assert [f.evaluate("pyodideWorker.python") for f in frames] == ["own", "own"]
        told = page.evaluate("embedStates().map((s) => [s.state, s.python])")
        assert told == [["ready", "own"]] * 2
    assert console.errors == []


# Per figure: how many VSpan glyphs draw the source named "models".
MODEL_LINES_JS = f"""() => Object.fromEntries(({MODELS_JS})('Figure')
  .filter({ON_SCREEN_JS}).map((f) => [f.name,
  f.renderers.filter((r) => r.glyph?.constructor.__name__ === 'VSpan'
    && r.data_source.name === 'models').length]))"""


def active_element_js(body: str) -> str:
    """JS that finds the focused element through shadow roots and returns ``body``."""
    return (
        "() => { let a = document.activeElement;"
        " while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;"
        f" return {body}; }}"
    )


def in_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


# What follows each "ln" in the formulas on screen (MathML), through shadow roots.
LN_SPACING_JS = """() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.tagName.toLowerCase() === 'mi' && el.textContent === 'ln') {
        let next = el.nextElementSibling;
        if (next?.textContent === '\u2061') next = next.nextElementSibling;
        found.push(next?.tagName.toLowerCase());
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return found;
}"""


# The explanation a glossary term shows beside it (its ::after), or "none" while hidden.
TIP_JS = "(el) => getComputedStyle(el, '::after').content"


def test_a_glossary_term_explains_itself_on_hover_focus_and_tap(offline, site_url, output_dir):
    """A term's first use in a caption (the spread's "collapse threshold") shows its
    explanation on hover, on focus from the keyboard, and on a tap on a phone; a screen
    reader reads it as the term's description; elsewhere it is hidden."""
    explanation = glossary()["collapse threshold"]
    for context in (offline, offline.phone()):
        page = context.new_page()
        console = Console(page)
        page.goto(site_url)
        wait_until_ready(page)
        term = page.locator(".term", has_text="collapse threshold").first
        term.scroll_into_view_if_needed()
        assert term.get_attribute("aria-description") == explanation
        assert term.get_attribute("role") == "term" and term.get_attribute("tabindex") == "0"
        assert term.evaluate(TIP_JS) == "none"
        if context is offline:
            term.hover()
            assert term.evaluate(TIP_JS) == json.dumps(explanation, ensure_ascii=False)
            page.mouse.move(0, 0)
            assert term.evaluate(TIP_JS) == "none"
            term.focus()  # as Tab reaches it: focusable, with a focus ring
            assert term.evaluate("(el) => getComputedStyle(el).outlineStyle") == "solid"
        else:
            # A tap where the term is once it holds still and nothing covers it (the
            # formulas typeset late on a slow machine, and move the text beneath)
            term.tap()
            page.wait_for_function("() => document.activeElement !== document.body")
        assert term.evaluate(TIP_JS) == json.dumps(explanation, ensure_ascii=False)
        page.screenshot(
            path=output_dir / f"site-term-{'desktop' if context is offline else 'phone'}.png"
        )
        assert console.errors == []
        page.close()


def test_reading_the_page_on_a_desktop(offline, site_url, output_dir):
    """No legend over the data, one key that hides a rule everywhere, controls always in
    view, formulas with spaced operators, readable tick labels."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url)
    wait_until_ready(page)
    assert page.evaluate(f"({MODELS_JS})('Legend').length") == 0
    toolbars = page.evaluate(
        f"({MODELS_JS})('Figure').filter({ON_SCREEN_JS}).map((f) => f.toolbar_location)"
    )  # beside the plot: never over its title at phone width
    assert len(toolbars) == len(SECTIONS["spread"]) and set(toolbars) == {"right"}

    hidden_js = f"""() => ({MODELS_JS})('GlyphRenderer')
      .filter((r) => r.data_source.name === 'spread:none').map((r) => r.visible)"""
    assert page.evaluate(hidden_js) == [True, True, True]  # band, line, markers
    page.get_by_role("button", name="■ none").click()
    page.wait_for_function(f"() => ({hidden_js})().every((v) => !v)")
    page.get_by_role("button", name="■ none").click()
    page.wait_for_function(f"() => ({hidden_js})().every((v) => v)")

    # Reading a section's last plot, the controls are still on screen.
    open_section(page, "gradients")
    page.get_by_text(
        "The gradient that reaches the query (and so W_Q)"
    ).scroll_into_view_if_needed()
    assert in_viewport(page, page.get_by_role("slider", name="d_k (key dimension)"))
    page.screenshot(path=output_dir / "site-desktop-scrolled.png")

    # "ln n" keeps a space between the function and its argument (MathML drops \,).
    spacing = []
    for section in ("spread", "saturation"):
        open_section(page, section)
        spacing += page.evaluate(LN_SPACING_JS)
    assert len(spacing) >= 4 and set(spacing) <= {"mtext", "mspace"}, spacing

    formatters = f"({MODELS_JS})('CustomJSTickFormatter')"
    labels = page.evaluate(
        f"() => {formatters}.filter((f) => f.code.includes('toPrecision(3)'))"
        ".map((f) => f.compute(0.0012) + ' ' + f.compute(25) + ' ' + f.compute(3.5e-6))"
    )
    assert labels and set(labels) == {"0.0012 25 3.5e-6"}
    assert console.errors == []


# Every text element on screen with its font size as laid out (CSS px).
TEXT_SIZES_JS = f"""{DEEP_JS}('p, li, td, th, label, button, .bk-slider-title')
  .filter((e) => e.getClientRects().length && e.textContent.trim())
  .map((e) => [e.textContent.trim().slice(0, 40), parseFloat(getComputedStyle(e).fontSize)])"""


def wait_until_live(page):
    """Wait for Python to have drawn the live document (not yet ready: its views may
    wait for their stylesheets)."""
    page.wait_for_function(LIVE_JS, timeout=BOOT_TIMEOUT)


def test_a_phone_lays_the_page_out_at_its_own_width(offline, site_url, output_dir):
    """An emulated iPhone 13 (is_mobile, touch, 3 device pixels per CSS pixel): the page is
    laid out at the phone's 390 px (not 980 px zoomed out), with readable text, sliders
    big enough to touch, a tap that moves one, and the controls in reach."""
    phone = offline.phone()
    page = phone.new_page()
    console = Console(page)
    # Not one frame wider than the phone, its stylesheets late (as over a slow link) or
    # not. (Until they come, Panel keeps its text panes hidden, and the page not ready.)
    assert max(widest_frames_with_stylesheets_late(page, site_url, wait_until_live)) <= 390
    wait_until_ready(page)
    assert page.evaluate("[innerWidth, devicePixelRatio]") == [390, 3]
    small = [(text, size) for text, size in page.evaluate(TEXT_SIZES_JS) if size < 14]
    assert small == []

    # Every slider's handle is a 44 px target; its track takes a tap 15 px off its line.
    handles = page.locator(".noUi-handle >> visible=true")
    assert handles.count() == len(SLIDER_TITLES) - 1  # all but alpha's (the power rule's)
    for box in (handles.nth(i).bounding_box() for i in range(handles.count())):
        assert box["width"] >= 44 and box["height"] >= 44, box
    track = slider(page, "d_k").locator(".noUi-target")
    track.scroll_into_view_if_needed()
    box = track.bounding_box()
    page.touchscreen.tap(box["x"] + 0.9 * box["width"], box["y"] + box["height"] / 2 - 15)
    page.wait_for_function("new URLSearchParams(location.search).get('d_k') === '512'")
    page.screenshot(path=output_dir / "site-phone.png")
    section = page.get_by_role("button", name="2. Saturation", exact=True)
    section.scroll_into_view_if_needed()
    box = section.bounding_box()
    assert box["width"] >= 44 and box["height"] >= 30, box  # a section button takes a tap
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url("**section=saturation**")
    wait_for_source(page, "heatmap:weights", "(d) => d.image.length > 0")
    assert_shows_weights_of(page, Settings(d_k=512, scaling="sqrt", seed=0, **DEFAULT))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    # The sticky controls stay in reach further down, and leave most of the screen to plots.
    open_section(page, "gradients")
    page.get_by_text(
        "The gradient that reaches the query (and so W_Q)"
    ).scroll_into_view_if_needed()
    d_k = page.get_by_role("slider", name="d_k (key dimension)")
    assert in_viewport(page, d_k)
    controls = page.evaluate(
        "Bokeh.index.find_one([...Bokeh.documents].at(-1).get_model_by_name('lab-controls'))"
        ".el.getBoundingClientRect().height"
    )
    assert controls <= 0.35 * page.viewport_size["height"]
    page.screenshot(path=output_dir / "site-phone-scrolled.png")
    assert console.errors == []
    phone.close()


def test_everyone_can_use_it_from_the_keyboard_and_a_screen_reader(offline, site_url):
    page = offline.new_page()
    page.goto(site_url + "?d_k=256&scaling=power")  # the power rule: alpha's slider too
    wait_until_ready(page)
    d_k = page.get_by_role("slider", name="d_k (key dimension)")
    assert d_k.get_attribute("aria-valuetext") == "256"  # the value, not its exponent
    names = [line.strip() for line in page.locator("body").aria_snapshot().splitlines()]
    for name in (
        'slider "α of the ÷ d_k^α rule (1/2: √d_k)"',
        'slider "d_k (key dimension)"',
        'slider "n (number of keys)"',
        'slider "variance v of q and k components"',
        'slider "temperature T"',
        'button "Why scale at all? Why √d_k?"',
        'button "increase seed"',
        'button "decrease seed"',
        'button "1. Spread"',
        'button "6. Numerical stability"',
    ):
        assert any(line.lstrip("-' ").startswith(name) for line in names), name
    d_k.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('d_k=512')")
    assert d_k.get_attribute("aria-valuetext") == "512"

    # A clear focus ring on the explainer's header and on the rule buttons.
    outline = active_element_js(
        "[getComputedStyle(a).outlineStyle, parseFloat(getComputedStyle(a).outlineWidth)]"
    )
    for control in (
        page.get_by_role("button", name="Why scale at all? Why √d_k?"),
        page.get_by_role("button", name="none", exact=True),
    ):
        control.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # keyboard focus, so :focus-visible applies
        style, width = page.evaluate(outline)
        assert style == "solid" and width >= 2

    # From the top, the controls and the embed code come before any plot's toolbar: the
    # controls' stops, the embed's views, its theme and the course page's language (42
    # stops), and no figure's tool.
    page.get_by_role("heading", name="Attention Scaling Lab").click()
    stops = []
    while len(stops) < 60 and "Copy embed code" not in (stops or [""])[-1]:
        page.keyboard.press("Tab")
        stops.append(page.evaluate(active_element_js("a.textContent.trim()")))
    assert "Copy embed code" in stops[-1] and len(stops) <= 42, stops


def test_per_view_scales_show_the_shape_of_extreme_scenarios(offline, site_url):
    """÷ d_k at d_k = 1024: logits 1024 times narrower than unscaled, rows nearly uniform."""
    page = offline.new_page()
    page.goto(site_url + "?d_k=1024&scaling=linear")
    wait_until_ready(page)
    x_range = page.evaluate(
        f"({MODELS_JS})('Figure').filter((f) => f.name === 'histogram')"
        ".map((f) => [f.x_range.start, f.x_range.end])[0]"
    )
    spread = float(theory.logit_std("linear", 1024, 1.0))
    measured = simulate(Settings(d_k=1024, scaling="linear", **DEFAULT)).logits.std()
    assert x_range == [
        pytest.approx(-4 * max(spread, measured)),
        pytest.approx(4 * max(spread, measured)),
    ]
    notes = page.evaluate(f"({MODELS_JS})('Label').map((m) => m.text)")
    assert any("1024× wider" in note or "wider" in note for note in notes), notes
    open_section(page, "saturation")
    colours = page.evaluate(f"({MODELS_JS})('LogColorMapper').map((m) => [m.low, m.high])")
    assert colours == [[pytest.approx(0.1 / 64), 1.0]]  # uniform 1/n sits mid-scale


class SlowStylesheetHandler(SiteHandler):
    """Serves stylesheets late and uncached, as a busy host does."""

    def do_GET(self):
        if self.path.split("?")[0].endswith(".css"):
            time.sleep(0.5)  # the server's latency, not a wait in the test
        super().do_GET()

    def end_headers(self):
        if self.path.split("?")[0].endswith(".css"):
            self.send_header("Cache-Control", "no-store")
        super().end_headers()


def test_ready_waits_for_the_live_text_to_be_shown(offline, site):
    """Panel hides each live text pane until its stylesheets load: with slow stylesheets
    the old status said ready while the runtime line was still hidden (innerText '')."""
    with http_server(site, SlowStylesheetHandler) as url:
        page = offline.new_page()
        page.goto(url + "?d_k=256&scaling=none&section=saturation")
        wait_until_ready(page)
        runtime = page.locator("p", has_text="Computed in your browser").inner_text()
        assert "numpy" in runtime
        assert_shows_weights_of(page, Settings(d_k=256, scaling="none", seed=0, **DEFAULT))
        page.close()


class MissingFileHandler(SiteHandler):
    """Serves the site but answers 404 for the files whose paths end as one of
    ``missing`` says (without the hash in their names), as a broken host would."""

    missing = ()

    def do_GET(self):
        if unhashed(self.path.split("?")[0]).endswith(self.missing):
            self.send_error(404)
        else:
            super().do_GET()


class AlteredSnapshotHandler(SiteHandler):
    """Serves ``alter(snapshot)`` for the snapshot, as a stale or broken deploy would."""

    alter = None

    def do_GET(self):
        if unhashed(self.path).endswith("snapshot.bin.gz"):
            snapshot = gzip.decompress(Path(self.translate_path(self.path)).read_bytes())
            body = gzip.compress(type(self).alter(snapshot))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()


class RecordingHandler(SiteHandler):
    """Serves the site as a host that compresses nothing; records the paths asked for
    (``served``: a list per subclass), without the hashes in their names."""

    served = None

    def do_GET(self):
        type(self).served.append(unhashed(self.path.split("?")[0]))
        super().do_GET()


class GzipEncodingHandler(RecordingHandler):
    """Serves every .gz file as its content with Content-Encoding: gzip, as hosts that
    ship precompressed files do: the browser decompresses it before the page sees it."""

    def guess_type(self, path):
        path = str(path)
        return super().guess_type(path.removesuffix(".gz"))

    def end_headers(self):
        if self.path.split("?")[0].endswith(".gz"):
            self.send_header("Content-Encoding", "gzip")
        super().end_headers()


class DribblingHandler(RecordingHandler):
    """Sends the first byte of every .gz file alone, then the rest a moment later, as a
    slow or congested link may: the browser reads the body in two chunks, and whatever
    tells gzip must look past the first."""

    def copyfile(self, source, outputfile):
        if not self.path.split("?")[0].endswith(".gz"):
            return super().copyfile(source, outputfile)
        outputfile.write(source.read(1))
        outputfile.flush()
        time.sleep(0.05)
        return super().copyfile(source, outputfile)


def open_the_link(page, url, boot="snapshot"):
    """Open a link at ``url`` (a host of the site, as served), wait until it is ready
    with Python started as ``boot`` says, and check that it shows the link's weights."""
    page.goto(url + "?d_k=128&scaling=none&section=saturation")
    wait_until_ready(page, boot=boot)
    assert_shows_weights_of(page, Settings(d_k=128, scaling="none", seed=0, **DEFAULT))


def page_script_files(site: Path) -> list[Path]:
    """The .gz files of the page's scripts (sitebuild.page.compress_page_scripts)."""
    return [p for p in site.rglob("*.js.gz") if p.relative_to(site).parts[0] != "pyodide"]


@pytest.mark.parametrize(
    "host",
    [RecordingHandler, GzipEncodingHandler, DribblingHandler],
    ids=["plain", "encoded", "first byte alone"],
)
def test_the_runtime_comes_compressed_from_any_host(offline, site, host):
    """Pyodide's wasm and JS, and the page's scripts, come as their .gz files (a third
    and a quarter of the bytes): from a host that compresses nothing the worker and the
    page decompress them, even when a file's first byte comes alone; from one that sends
    them with Content-Encoding: gzip the browser has. Either way Python starts from the
    snapshot, the formulas are typeset and the link's numbers are shown."""
    handler = type("Handler", (host,), {"served": []})
    with http_server(site, handler) as url:
        page = offline.new_page()
        console = Console(page)
        open_the_link(page, url)
        fetched = {path.rsplit("/", 1)[-1] for path in handler.served}
        page_scripts = [unhashed(p.name).removesuffix(".gz") for p in page_script_files(site)]
        assert {"bokeh.min.js", "panel.min.js", "katex.min.js"} <= set(page_scripts)
        for name in [*RUNTIME_GZ, *page_scripts]:
            # (the wasm comes compressed as the snapshot does: zstd where the worker measured
            # a slow link, as a loaded machine's localhost can be; CI's did, 1 run in 3)
            forms = {f"{name}.gz", f"{name}.zst"} if name == "pyodide.asm.wasm" else {f"{name}.gz"}
            assert forms & fetched and name not in fetched, (name, sorted(fetched))
        assert page.locator(".katex").count() > 0
        assert console.errors == []
        page.close()


def test_a_page_script_without_its_gz_is_loaded_as_it_is(offline, site):
    """A host that lacks BokehJS's .gz (an older deploy, a partial copy) still serves a
    working page: the original is loaded in its place, in its turn."""
    missing = ("bokeh.min.js.gz",)
    handler = type("Handler", (MissingFileHandler, RecordingHandler), {"missing": missing})
    handler.served = []
    with http_server(site, handler) as url:
        page = offline.new_page()
        open_the_link(page, url)
        assert "/bokeh/bokeh.min.js" in handler.served
        assert "/bokeh/bokeh-widgets.min.js.gz" in handler.served
        page.close()


def unpack(blob: bytes) -> tuple[dict[str, bytes], list[str], dict[str, int]]:
    """The files, preload and elsewhere of a ``sitebuild.snapshot.pack``."""
    (length,) = struct.unpack_from("<I", blob)
    index = json.loads(blob[4 : 4 + length])
    data = blob[4 + length :]
    files = {path: data[offset : offset + size] for path, offset, size in index["files"]}
    return files, index["preload"], dict(index["elsewhere"])


def test_a_file_the_pack_left_out_is_fetched_when_python_reads_it(offline, site, tmp_path):
    """The site with a file that every visit reads (app.worker's bytecode) taken out of
    its pack and shipped alone, as a file no recording predicted: the worker fetches it
    as Python imports it, and the link goes live with its numbers."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy, copy_function=os.symlink)  # the same files, linked
    moved = "app/__pycache__/worker.cpython-312.pyc"
    pack_file = site_file(copy, "snapshot/site-packages.pack.gz")
    files, preload, elsewhere = unpack(gzip.decompress(pack_file.read_bytes()))
    data = files.pop(moved)
    pack_file.unlink()
    pack_file.write_bytes(gzip.compress(pack(files, preload, elsewhere | {moved: len(data)})))
    (copy / "snapshot/site-packages" / moved).parent.mkdir(parents=True, exist_ok=True)
    (copy / "snapshot/site-packages" / moved).write_bytes(data)
    handler = type("Handler", (RecordingHandler,), {"served": []})
    with http_server(copy, handler) as url:
        page = offline.new_page()
        console = Console(page)
        open_the_link(page, url)
        assert ELSEWHERE + moved in handler.served
        assert "without the saved Python session" not in page.locator("#lab-status").inner_text()
        assert console.errors == []
        page.close()


# Reads the source of a function of a module the snapshot holds imported (json), as a
# traceback or inspect does: a part of the standard library its restored copy lacks.
READ_STDLIB_SOURCE_PY = "import inspect, json; inspect.getsource(json.dumps)"


def test_a_part_of_the_standard_library_the_restored_copy_lacks_is_fetched_when_read(offline, site):
    """The worker restores with a standard library that lacks the modules the snapshot
    holds; where Python reads one after all (a traceback's source lines, inspect), the
    worker fetches the whole library once and Python reads it, on a live page."""
    handler = type("Handler", (RecordingHandler,), {"served": []})
    with http_server(site, handler) as url:
        page = offline.new_page()
        console = Console(page)
        open_the_link(page, url)
        assert "/pyodide/python_stdlib.zip" not in handler.served
        (worker,) = page.workers
        source = worker.evaluate(f"self.pyodide.runPython({READ_STDLIB_SOURCE_PY!r})")
        assert source.startswith("def dumps(obj,")
        assert handler.served.count("/pyodide/python_stdlib.zip") == 1
        slider_handle(page, "d_k").press("ArrowLeft")  # still live
        page.wait_for_url("**d_k=64**")
        assert_shows_weights_of(page, Settings(d_k=64, scaling="none", seed=0, **DEFAULT))
        assert console.errors == []
        page.close()


BAD_SNAPSHOTS = {
    "404": type("Handler", (MissingFileHandler,), {"missing": ("snapshot.bin.gz",)}),
    # Pyodide's header: magic, two offsets, a reserved word, then the build id.
    "other Pyodide build": type(
        "Handler",
        (AlteredSnapshotHandler,),
        {"alter": lambda b: b[:16] + bytes([b[16] ^ 1]) + b[17:]},
    ),
    "not a snapshot": type(
        "Handler", (AlteredSnapshotHandler,), {"alter": lambda b: b[:4096][::-1]}
    ),
}


@pytest.mark.parametrize("handler", BAD_SNAPSHOTS.values(), ids=BAD_SNAPSHOTS.keys())
def test_without_its_snapshot_the_page_starts_python_from_scratch(offline, site, handler):
    """The worker falls back to installing the packages and building the page, and says so."""
    with http_server(site, handler) as url:
        page = offline.new_page()
        console = Console(page)
        open_the_link(page, url, boot="scratch")
        assert "without the saved Python session" in page.locator("#lab-status").inner_text()
        # Live first, then trained in the background: the runs are those trained here.
        page.wait_for_function(TRAINED_JS, timeout=60_000)
        open_section(page, "learning")
        assert_trained_as_here(page, train(Settings(d_k=128, scaling="none", **DEFAULT)))
        assert [e for e in console.errors if "404 (File not found)" not in e] == []
        page.close()


def test_every_visitor_gets_a_fresh_new_draw(offline, site_url):
    """The snapshot froze Python's random state: without reseeding, "New draw" gave every
    visitor the same seed. Two visitors' first draws differ (equal with chance 2^-32)."""
    seeds = []
    for _ in range(2):
        page = offline.new_page()
        page.goto(site_url)
        wait_until_ready(page)
        page.get_by_role("button", name="New draw").click()
        page.wait_for_function("new URLSearchParams(location.search).has('seed')")
        seeds.append(page.evaluate("new URLSearchParams(location.search).get('seed')"))
        page.close()
    assert seeds[0] != seeds[1]


@pytest.mark.parametrize(
    "missing",
    [
        ("pyodide/pyodide.js",),
        ("pyodide/pyodide.asm.wasm.gz", "pyodide/pyodide.asm.wasm"),
        ("snapshot.bin.gz", "pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"),
    ],
)
def test_a_failed_load_says_so_instead_of_spinning(offline, site, missing):
    """When Pyodide or a wheel cannot be fetched the status says so; the plots stay."""
    handler = type("Handler", (MissingFileHandler,), {"missing": missing})
    with http_server(site, handler) as url:
        page = offline.new_page()
        page.goto(url)
        page.wait_for_function(f"() => {STATUS} === 'failed'", timeout=BOOT_TIMEOUT)
        assert "reload the page" in page.locator("#lab-status").inner_text()
        assert not page.evaluate("document.body.classList.contains('pn-loading')")
        assert page.locator(".bk-Figure").count() == len(SECTIONS["spread"])
        page.close()


SLIDERS = list(SLIDER_TITLES)
SLIDER_KEYS = ["ArrowRight", "ArrowLeft", "PageUp", "PageDown", "Home", "End"]
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
# The worker's memory after a full collection: bytes malloc has handed out and not had back
# (mallinfo's uordblks, the 8th size_t of struct mallinfo), Python objects the collector
# tracks, and the wasm heap's size. The heap only grows, to the most ever in use at once,
# which depends on how moves interleave with the training (a leak test cannot use it).
# Pyodide's CPython has no pymalloc, so sys.getallocatedblocks() is 0 there.
WORKER_MEMORY_JS = """() => {
  const objects = self.pyodide.runPython('import gc; gc.collect(); len(gc.get_objects())');
  const module = self.pyodide._module;
  const info = module._calloc(10, 4);  // struct mallinfo: 10 size_t of 4 bytes (wasm32)
  module._mallinfo(info);
  const inUse = module.HEAPU32[(info >> 2) + 7];
  module._free(info);
  return [inUse, objects, module.HEAPU8.length];
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


def test_quick_clicks_while_python_works_merge_into_one_update(offline, site_url):
    """Ten clicks on "New draw" in one go: the page sent each to the worker at once, and
    the worker ran ten full updates one after the other. Now the first goes and the
    other nine, which arrive while Python works on it, wait and merge into one."""
    page = offline.new_page()
    page.add_init_script(COUNT_WORKER_MESSAGES_JS)
    page.goto(site_url)
    wait_until_ready(page)
    page.wait_for_function(SETTLED_JS)
    page.evaluate(
        f"{DEEP_JS}('button').filter((b) => b.textContent.trim() === 'New draw')"
        ".forEach((b) => { for (let i = 0; i < 10; i++) b.click(); })"
    )
    page.wait_for_function(SETTLED_JS)
    clicks = [n for n in page.evaluate("window.__clicks") if n]
    assert clicks == [1, 1]  # the first click, then the nine merged into one
    page.close()


def test_quick_clicks_on_next_each_go_a_section_on(offline, site_url):
    """Three clicks on "Next" in one go, while Python works on the first: the page
    merged the two that waited into one, and the learner went two sections on, not
    three. Only "New draw" merges its clicks (sitebuild.panel_patches.MERGED_CLICKS)."""
    page = offline.new_page()
    page.add_init_script(COUNT_WORKER_MESSAGES_JS)
    page.goto(site_url)
    wait_until_ready(page)
    page.wait_for_function(SETTLED_JS)
    label = f"Next: {section_title('saturation')} →"
    page.evaluate(
        f"{DEEP_JS}('button').filter((b) => b.textContent.trim() === {label!r})"
        ".forEach((b) => { for (let i = 0; i < 3; i++) b.click(); })"
    )
    page.wait_for_function(SETTLED_JS)
    assert [n for n in page.evaluate("window.__clicks") if n] == [1, 2]
    page.wait_for_url("**section=gradients**")
    page.get_by_role("heading", name=section_title("gradients"), exact=True).wait_for()
    page.close()


def test_a_change_that_waits_for_python_says_so_until_it_is_answered(offline, site_url):
    """While Python is held up (here: 1.5 s of work in the worker), a click's change
    waits: after 300 ms the status bar says the page is computing it, and once the
    answer is on the page it is gone and the click has taken effect."""
    page = offline.new_page()
    page.goto(site_url)
    wait_until_ready(page)
    page.wait_for_function("() => !pyodideWorker.busy")
    (worker,) = page.workers
    worker.evaluate(
        "setTimeout(() => self.pyodide.runPython('import time; time.sleep(1.5)'), 0); 0"
    )
    page.get_by_role("button", name=RULE_NAMES["none"], exact=True).click()
    busy = page.locator("#lab-status[data-state='busy']")
    expect(busy).to_be_visible(timeout=5_000)
    assert "Computing your change" in busy.inner_text()
    page.wait_for_url("**scaling=none**", timeout=30_000)
    expect(page.locator("#lab-status")).to_be_hidden(timeout=5_000)
    assert page.evaluate(STATUS) == "ready"
    page.close()


def test_a_drag_sends_its_next_change_with_pythons_answer(offline, site_url):
    """A drag of the variance slider, one mouse move per frame: the change held back
    while Python worked went to the worker only once the page had applied Python's
    answer and read its "idle", and the worker waited meanwhile. Now it goes as the
    answer comes (static/next_change.js): every answer that finds a change waiting
    takes it along, one change in flight beside the one being answered, never more,
    and the page ends on the drag's last value."""
    page = offline.new_page()
    page.add_init_script(COUNT_WORKER_MESSAGES_JS)
    console = Console(page)
    page.goto(f"{site_url}?section=gradients")
    wait_until_ready(page)
    page.wait_for_function(SETTLED_JS)
    track = slider(page, "variance").locator(".noUi-target").bounding_box()
    handle = slider_handle(page, "variance").bounding_box()
    y = handle["y"] + handle["height"] / 2
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    page.evaluate("window.__unanswered = []; window.__waited = 0")
    for frame in range(90):  # 1.5 s at 60 frames a second: right, then back
        share = frame / 45 if frame <= 45 else (90 - frame) / 45
        page.mouse.move(track["x"] + 4 + share * (track["width"] - 8), y)
        page.evaluate("new Promise((resolve) => requestAnimationFrame(resolve))")
    page.mouse.up()
    page.wait_for_function(SETTLED_JS)
    unanswered = page.evaluate("window.__unanswered")
    waited = page.evaluate("window.__waited")
    assert waited > 0  # a frame (16 ms) is shorter than Python's update: changes wait
    assert unanswered.count(1) == waited, (waited, unanswered)  # each sent with its answer
    assert max(unanswered) == 1, unanswered  # and never a third in flight
    shown = float(slider_handle(page, "variance").get_attribute("aria-valuetext"))
    query = dict(parse_qsl(page.evaluate("location.search").lstrip("?")))
    variance = {**DEFAULTS, **read_query(query)[0]}["variance"]
    assert variance == pytest.approx(shown)  # Python has the drag's last value
    assert page.evaluate(ALL_SOURCES_FINITE_JS) == []
    assert console.errors == []
    page.close()


def soak_actions(page, rng):
    """One random move: a key on a slider, a fast drag, a rule, a rule toggle or the seed."""
    kind = rng.choice(["key", "key", "key", "drag", "rule", "toggle", "seed", "section"])
    if kind == "key":
        slider_handle(page, rng.choice(SLIDERS)).press(rng.choice(SLIDER_KEYS))
    elif kind == "drag":  # (alpha's slider is hidden but under the power rule: keys only)
        name = rng.choice([name for name in SLIDERS if name != "alpha"])
        track = slider(page, name).locator(".noUi-target").bounding_box()
        handle = slider_handle(page, name).bounding_box()
        y = handle["y"] + handle["height"] / 2
        page.mouse.move(handle["x"] + handle["width"] / 2, y)
        page.mouse.down()
        for _ in range(rng.randrange(2, 6)):  # no waiting: faster than the worker
            page.mouse.move(track["x"] + rng.random() * track["width"], y, steps=3)
        page.mouse.up()
    elif kind == "rule":
        name = RULE_NAMES[rng.choice(list(SCALING_RULES))]
        page.get_by_role("button", name=name, exact=True).click()
    elif kind == "toggle":
        name = rule_key_label(rng.choice(list(SCALING_RULES)))
        page.get_by_role("button", name=name, exact=True).click()
    elif kind == "section":
        section_button(page, rng.choice(list(SECTIONS))).click()
    else:
        page.get_by_role("button", name=rng.choice(["New draw", "increase seed"])).click()


def test_a_thousand_fast_moves_leave_the_page_correct_and_its_memory_flat(
    offline, site_url, output_dir
):
    """Soak: keyboard and fast drags on every control, extremes included, faster than the
    worker can follow. Then: no console errors, finite data, the numbers `simulate` gives
    for the scenario in the URL, and the worker's memory in use (WORKER_MEMORY_JS) as it was
    after the first moves, which reach every extreme."""
    page = offline.new_page()
    page.add_init_script(COUNT_WORKER_MESSAGES_JS)
    console = Console(page)
    page.goto(site_url + "?scaling=power")  # the power rule: alpha's slider shown
    wait_until_ready(page)
    (worker,) = page.workers
    for name in SLIDERS:  # every slider to both ends
        for key in ("End", "Home"):
            slider_handle(page, name).press(key)
            page.wait_for_function(SETTLED_JS)
    for name in ("d_k", "n_keys", "variance"):  # the largest arrays: these at their ends
        slider_handle(page, name).press("End")
        page.wait_for_function(SETTLED_JS)
    page.wait_for_function(TRAINED_JS)  # the training runs' arrays are in the heap too
    first = worker.evaluate(WORKER_MEMORY_JS)

    rng = random.Random(8)
    for _ in range(1000):
        soak_actions(page, rng)
    page.wait_for_function(SETTLED_JS, timeout=60_000)
    page.wait_for_function(TRAINED_JS, timeout=60_000)

    query = dict(parse_qsl(page.evaluate("location.search").lstrip("?")))
    values, notices = read_query(query)
    assert notices == []
    scenario = {**DEFAULTS, **values}
    settings = Settings(**{name: scenario[name] for name in SETTINGS_FIELDS}, n_queries=64)
    open_section(page, "saturation")
    assert_shows_weights_of(page, settings)
    shown = {name: slider_handle(page, name).get_attribute("aria-valuetext") for name in SLIDERS}
    assert shown.pop("alpha") == write_query(scenario)["alpha"]  # the sliders agree
    assert {name: float(v) for name, v in shown.items()} == pytest.approx(
        {name: scenario[name] for name in shown}
    )
    assert page.evaluate(ALL_SOURCES_FINITE_JS) == []
    assert console.errors == []
    after = worker.evaluate(WORKER_MEMORY_JS)
    (output_dir / "soak-memory.json").write_text(
        json.dumps(
            {
                "after first moves": first,
                "after 1000 moves": after,
                "as": ["bytes malloc has out", "Python objects tracked by gc", "wasm heap bytes"],
            }
        )
    )
    assert 0 < after[0] <= 1.1 * first[0], (first, after)
    assert 0 < after[1] <= 1.1 * first[1], (first, after)
    page.close()


# An iPad's Safari says it is a Mac (pyodide#5670): a Mac's user agent and, in the
# worker, platform (put first in the site's own worker script: Chromium's override does
# not reach a worker), on a screen with touch points.
MAC_USER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15"
    " (KHTML, like Gecko) Version/18.5 Safari/605.1.15"
)
A_MAC_S_PLATFORM_JS = (
    "Object.defineProperty(WorkerNavigator.prototype, 'platform', {get: () => 'MacIntel'});\n"
)
# A browser without stack switching (JSPI), as Firefox and Safari are: the worker's
# WebAssembly without it, put first in the site's worker script.
NO_JSPI_JS = "delete WebAssembly.Suspending; delete WebAssembly.Suspender;\n"


def worker_script_with(page, first: str):
    """Serve ``page`` the site's worker script with ``first`` put before it."""

    def prepend(route):
        response = route.fetch()
        route.fulfill(response=response, body=first + response.text())

    page.route("**/main.js", prepend)


@pytest.mark.parametrize("device", ["iPad as a Mac", "iPhone 13"])
def test_an_ipad_or_iphone_restores_python_without_the_trampoline_ios_crashes_on(
    offline, site_url, device
):
    """Pyodide 0.27.7 skipped CPython's wasm-gc trampoline, which crashes Safari on iOS
    18, by navigator.platform alone, so an iPad (a "MacIntel" with touch points) ran it
    and crashed; the build applies upstream's fix (sitebuild.wheels), with the page's
    touch points for the worker's. Where it is skipped, the snapshot's table slots and
    its trampoline pointer must still hold: the page restores Python from the
    snapshot, goes live and answers a move. (Chromium emulating each device; before the
    fix the worker ran the trampoline on both.)"""
    if device == "iPhone 13":
        context = offline.phone(service_workers="block")
        page = context.new_page()
    else:
        context = offline.phone(user_agent=MAC_USER_AGENT, service_workers="block")
        page = context.new_page()
        worker_script_with(page, A_MAC_S_PLATFORM_JS)
        context.new_cdp_session(page).send(  # an iPad's five, not Playwright's one
            "Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5}
        )
    console = Console(page)
    page.goto(site_url + "?d_k=128")
    wait_until_ready(page)
    (worker,) = page.workers
    assert worker.evaluate("self.pyodide._module._PyEM_CountArgsPtr") == 0
    slider_handle(page, "d_k").press("ArrowRight")
    wait_for_source(page, "spread:marker", "(d) => d.d_k[0] === 256")
    context.close()
    assert console.errors == []


def test_run_until_complete_does_not_crash_a_browser_without_stack_switching(offline, site_url):
    """Pyodide 0.27 runs asyncio's run_until_complete by stack switching (JSPI) unless
    told not to, which crashes a browser without JSPI (Firefox, Safari): the worker
    turns it off there, and the call schedules the coroutine as a task; with JSPI it
    stays on, as Pyodide has it."""
    call = (
        "self.pyodide.runPythonAsync(`import asyncio\n"
        "async def two():\n    return 2\n"
        "result = asyncio.get_event_loop().run_until_complete(two())\n"
        "type(result).__name__`)"
    )
    for first, jspi in [(NO_JSPI_JS, False), ("", True)]:
        # A context of its own, with no service worker: one kept from an earlier test
        # would serve the worker script, and the route would never see it.
        context = offline.desktop(service_workers="block")
        page = context.new_page()
        console = Console(page)
        worker_script_with(page, first)
        page.goto(site_url)
        wait_until_ready(page)
        (worker,) = page.workers
        assert worker.evaluate("'Suspending' in WebAssembly") == jspi
        assert worker.evaluate("self.pyodide._api.config.enableRunUntilComplete") == jspi
        if not jspi:
            assert worker.evaluate(call) == "PyodideTask"
            assert page.evaluate(STATUS) in ("ready", "busy")  # the worker lives on
        context.close()
        assert console.errors == []
