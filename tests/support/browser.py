"""Drive Debian's Chromium with Playwright, and read what the page plots.

Used by the browser tests and the benchmarks. Chromium is the real binary
(``/usr/bin/chromium`` is a shell wrapper); as root it needs ``--no-sandbox``.
"""

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from app.captions import section_label, section_title
from sitebuild.serve import SiteHandler

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Chromium resolves no host but 127.0.0.1: nothing can leave the machine.
LOCAL = "127.0.0.1"
OFFLINE_ARGS = [f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {LOCAL}"]
# Another site than LOCAL's on the same machine (a site is a host; a port is not), for
# a course page on another site than the lab: OFFLINE_ARGS that resolve it too.
OTHER_SITE = "127.0.0.2"
CROSS_SITE_ARGS = [f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {LOCAL}, EXCLUDE {OTHER_SITE}"]
# Chromium partitioning a frame's storage by its top site, as Chrome does: Playwright
# turns partitioning off among the features it disables; this switch, the last, replaces
# its list with the one of them that matters here (no paint held back between pages).
PARTITIONED_ARGS = ["--disable-features=PaintHolding"]
REPO = Path(__file__).resolve().parents[2]

# Every ColumnDataSource of a Bokeh document, by name, as plain JS arrays.
READ_SOURCES_JS = """(names) => {
  const plain = (v) => (v !== null && typeof v === 'object' && typeof v.length === 'number')
    ? Array.from(v, plain) : v;
  const out = {};
  // Newest document first: a converted page keeps its prerendered one in the list.
  for (const doc of (window.Bokeh ? [...window.Bokeh.documents].reverse() : [])) {
    for (const name of names) {
      const model = doc.get_model_by_name(name);
      if (model === null || out[name]) continue;
      const entries = model.data instanceof Map ? [...model.data.entries()]
        : Object.entries(model.data);
      out[name] = Object.fromEntries(entries.map(([k, v]) => [k, plain(v)]));
    }
  }
  return out;
}"""


# The page holds the figures of both of d_k's neighbours, sent ahead for its state now
# (static/runtime/page/ahead.js).
AHEAD_READY_JS = "() => pyodideWorker.aheadForNow?.() === 2"


def launch(playwright, args=()):
    """A headless Chromium from Debian's package."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *args])


# The ports free_port has handed out in this process. A site is served on a port no
# other site was: a browser kept across tests (an engine's session, a module's context)
# keeps what one site's origin gave it (its HTTP cache, its service worker), and would
# answer another site's requests on that port with it. (The system picks a free port at
# random and, now and then, one an earlier test's server had: WebKit then went live on
# the earlier site's Pyodide in the test of a missing Pyodide.)
HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A free port of this machine that no site of this process was served on."""
    with contextlib.ExitStack() as held:  # the ports seen before, held until one is new
        while True:
            probe = held.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
            if port not in HANDED_OUT:
                HANDED_OUT.add(port)
                return port


def wait_for_http(url: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


class QuietServer(ThreadingHTTPServer):
    """Says nothing when the browser drops a connection (it cancels downloads it no
    longer needs: the worker aborts the snapshot's when the pack's fails)."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def http_server(folder: Path, handler=SimpleHTTPRequestHandler, port: int = 0, host=LOCAL):
    """Serve ``folder`` on ``port`` (by default a free one no other site was served on:
    free_port) of ``host`` from a thread; yields the root URL."""
    server = QuietServer((host, port or free_port()), partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def watched_site_handler(script: str) -> type[SiteHandler]:
    """The site's handler, serving the lab's page with ``script`` as the first thing in
    its head: an observer in the page from its start, put in by the server, which every
    engine's driver allows (WebKitGTK's WebDriver runs no script of its own before the
    page's). Reloads and the service worker's copy get it too."""

    class WatchedSiteHandler(SiteHandler):
        def send_head(self):
            if urlsplit(self.path).path not in ("/", "/index.html"):
                return super().send_head()
            page = (Path(self.directory) / "index.html").read_text()
            charset = '<meta charset="utf-8">\n'
            assert charset in page, "the lab's page has no charset where the build put it"
            watched = page.replace(charset, f"{charset}<script>{script}</script>\n", 1).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(watched)))
            self.end_headers()
            return BytesIO(watched)

    return WatchedSiteHandler


FIXTURES = Path(__file__).parent / "fixtures"  # course pages and their parents' scripts
COURSE_PAGE = FIXTURES / "course_page.html"
# Ready: the status bar says so (busy: ready, and computing a change).
STATUS_READY_JS = (
    "() => ['ready', 'busy'].includes(document.getElementById('lab-status')?.dataset.state)"
)


def write_course_page(folder: Path, site_url: str, links, gaps) -> Path:
    """A course page (``fixtures/course_page.html``) in ``folder`` that embeds the site
    at ``site_url`` once per link: lazy frames as the embed code writes them, each after
    ``gaps[i]`` px of the lesson. Returns its ``index.html``."""
    snippet = "".join(
        f'<p style="height: {gap}px">The lesson goes on.</p>\n<iframe src="{site_url}{link}"'
        ' title="Attention Scaling Lab" width="100%" height="1200"'
        ' style="border:0; max-width:100%" loading="lazy"></iframe>\n'
        for gap, link in zip(gaps, links, strict=True)
    )
    index = folder / "index.html"
    index.write_text(COURSE_PAGE.read_text().replace("{{ SNIPPET }}", snippet))
    return index


# The hash of its content that the build puts in the name of each large file of the
# site (sitebuild.offline.hashed_name).
CONTENT_HASH = re.compile(r"\.[0-9a-f]{16}(?=\.)")


def unhashed(path: str) -> str:
    """A path of the site without the hash in its name, as the build's earlier steps
    wrote it: ``snapshot/snapshot.<hash>.bin.gz`` -> ``snapshot/snapshot.bin.gz``."""
    return CONTENT_HASH.sub("", path, count=1)


def site_file(site: Path, path: str) -> Path:
    """The file of ``site`` that the build wrote at ``path`` and then named by its content."""
    (file,) = [p for p in site.rglob("*") if unhashed(p.relative_to(site).as_posix()) == path]
    return file


# Seconds a request for the page may take: a session is built before its first byte
# (about 5 s here, twice that on a slower machine, and the tests slow it to 10 s).
PAGE_TIMEOUT = 120


@contextlib.contextmanager
def panel_server(log_path: Path, env: dict | None = None, args: tuple = (), repo: Path = REPO):
    """``panel serve app/main.py`` of ``repo`` (this one, or another checkout of it) on a
    free local port; yields the app's URL once the server answers and has served the
    page once.

    It waits for the server, not for a page: Panel's liveness endpoint answers as soon
    as the server listens, without building a session; then one request for the page,
    with a timeout longer than any session's build. (Polling the page itself with short
    timeouts started a new session per try, faster than the server finished them.)
    """
    port = free_port()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "panel",
                "serve",
                "app/main.py",
                "--port",
                str(port),
                "--address",
                "127.0.0.1",
                "--allow-websocket-origin",
                f"127.0.0.1:{port}",
                "--liveness",
                *args,
            ],
            cwd=repo,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(repo), **(env or {})},
        )
        try:
            wait_for_http(f"http://127.0.0.1:{port}/liveness")
            url = f"http://127.0.0.1:{port}/main"
            with urllib.request.urlopen(url, timeout=PAGE_TIMEOUT) as response:
                assert response.status == 200, response.status
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:  # still building sessions: it cannot answer
                process.kill()
                process.wait(timeout=20)


class Console:
    """Collects a page's console errors, uncaught exceptions and failed requests."""

    def __init__(self, page):
        self.errors = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


# The sliders by name: the start of each one's title on the page.
SLIDER_TITLES = {
    "alpha": "α of",
    "d_k": "d_k (key dimension)",
    "n_keys": "n (number of keys)",
    "variance": "variance v",
    "temperature": "temperature T",
    "learning_rate": "learning rate",
}


def slider(page, name):
    """The slider of control ``name`` (its ``.noUi-handle`` and ``.noUi-target`` inside)."""
    title = page.locator(".bk-slider-title", has_text=SLIDER_TITLES[name])
    return page.locator(".bk-input-group", has=title)


def slider_handle(page, name):
    return slider(page, name).locator(".noUi-handle")


def read_sources(page, names) -> dict:
    return page.evaluate(READ_SOURCES_JS, list(names))


def read_heatmap(page_or_frame) -> np.ndarray:
    """The attention weights the heatmap shows, as a (queries, keys) array."""
    data = read_sources(page_or_frame, ["heatmap:weights"])["heatmap:weights"]
    return np.array(data["image"][0]).reshape(data["dh"][0], -1)


def wait_for_source(page, name, predicate_js="(d) => true", timeout=30_000):
    """Wait until source ``name`` exists and ``predicate_js(data)`` holds; return its data."""
    page.wait_for_function(
        f"() => {{ const d = ({READ_SOURCES_JS})([{name!r}])[{name!r}];"
        f" return d !== undefined && ({predicate_js})(d); }}",
        timeout=timeout,
    )
    return read_sources(page, [name])[name]


# A source each section's views fill (the stability section has none).
SECTION_SOURCES = {
    "spread": "histogram:raw",
    "saturation": "heatmap:weights",
    "query": "row_logits:scaled",
    "gradients": "jacobian:sqrt",
    "learning": "training_loss:sqrt",
    "stability": None,
}


def section_button(page, name):
    """The section picker's button for section ``name``: "2. Saturation"."""
    return page.get_by_role("button", name=section_label(name), exact=True)


def open_section(page, name, key=None):
    """Open section ``name`` with a click (or, given ``key``, by pressing it on the
    section's button), and wait for its heading and its views' data."""
    button = section_button(page, name)
    if key is None:
        button.click()
    else:
        button.press(key)
    page.get_by_role("heading", name=section_title(name), exact=True).wait_for()
    if SECTION_SOURCES[name]:
        wait_for_source(page, SECTION_SOURCES[name], "(d) => Object.values(d)[0].length > 0")


# The stylesheets Panel's components link from their shadow roots (Panel's own, its
# theme's, KaTeX's katex.css), under ``panel serve`` and on the built site; not
# loading.css, which the page's head links too (and a stylesheet of the head holds
# the scripts after it).
COMPONENT_STYLESHEETS = re.compile(r"/(css|theme)/(?!loading\.css)[^/]+\.css")
WIDEST_FRAME_JS = """window.widestFrame = 0;
const measure = () => {
  widestFrame = Math.max(widestFrame, document.documentElement.scrollWidth);
  requestAnimationFrame(measure);
};
requestAnimationFrame(measure);"""
STYLESHEETS_LOADED_JS = """() => {
  const links = [];
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.matches('link[rel=stylesheet]')) links.push(el);
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return links.every((link) => link.sheet);
}"""
TWO_FRAMES_JS = "new Promise((drawn) => requestAnimationFrame(() => requestAnimationFrame(drawn)))"
# A component's view has been drawn and linked a stylesheet that has not come.
STYLESHEET_PENDING_JS = """() => {
  const walk = (root) => [...root.querySelectorAll('*')].some((el) =>
    (el.matches('link[rel=stylesheet]') && !el.sheet && /\\/(css|theme)\\//.test(el.href))
    || (el.shadowRoot && walk(el.shadowRoot)));
  return walk(document);
}"""


def widest_frames_with_stylesheets_late(page, url, wait_until_drawn) -> tuple[int, int]:
    """Open ``url`` with the components' stylesheets held until ``wait_until_drawn(page)``
    returns (as on a loaded machine or a slow link): the page's widest frame (its
    ``scrollWidth``) until then, and from then until they have loaded and been drawn."""
    held = []

    def hold(route):
        if held is None:
            route.fallback()  # to the context's routes, if any
        else:
            held.append(route)

    page.route(COMPONENT_STYLESHEETS, hold)
    page.add_init_script(WIDEST_FRAME_JS)
    page.goto(url)
    wait_until_drawn(page)
    # A source can be filled before any view is drawn (under ``panel serve`` the data
    # comes with the document): wait for a view to have asked for its stylesheet, and
    # for Playwright to have handed that request to ``hold``.
    page.wait_for_function(STYLESHEET_PENDING_JS)
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(20)  # Playwright dispatches route handlers while it waits
    assert held, "no stylesheet was held"
    page.evaluate(TWO_FRAMES_JS)
    before = page.evaluate("widestFrame")
    routes, held = held, None
    for route in routes:
        route.fallback()
    page.wait_for_function(STYLESHEETS_LOADED_JS)
    page.evaluate(TWO_FRAMES_JS)
    return before, page.evaluate("widestFrame")
