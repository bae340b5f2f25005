"""The second visit: the built site kept by the learner's own browser.

The large files carry a hash of their content in their names, and the site's service
worker keeps what the page loads once the simulation is live (sitebuild/offline.py,
static/runtime/service_worker.js). These tests drive Chromium against the real build, in
contexts of their own and without request routes (Playwright's routes switch the
browser's HTTP cache off, and the service worker's first install reads from it).
"""

import os
import shutil
from collections import Counter
from typing import ClassVar
from urllib.parse import unquote

import pytest
from browser import OFFLINE_ARGS, Console, free_port, http_server, launch, site_file, unhashed
from playwright.sync_api import sync_playwright
from site_pages import SLOW_BYTES_PER_S, SNAPSHOT_BIN, filled, open_the_link, send_slowly

from sitebuild.offline import write_service_worker
from sitebuild.serve import SiteHandler

SECOND_VISIT_BYTES = 100_000  # the aim for a returning learner
PREFIX = "attention-scaling-lab-"  # of the service worker's caches
# Once the page's service worker is active: the names of its caches.
CACHES_JS = """async () => {
  await navigator.serviceWorker.ready;
  return (await caches.keys()).sort();
}"""
# Has the service worker look for a new version, and resolves once that is active.
UPDATED_JS = """async () => {
  const registration = await navigator.serviceWorker.ready;
  await registration.update();
  const update = registration.installing ?? registration.waiting;
  if (!update) throw new Error('no new version of the service worker');
  await new Promise((resolve) => update.addEventListener('statechange', () => {
    if (update.state === 'activated') resolve();
  }));
}"""
DROP_CACHES_JS = "async () => Promise.all((await caches.keys()).map((n) => caches.delete(n)))"


class CountingHandler(SiteHandler):
    """The site's own handler, recording the path and body length of every response it
    sends (``sent``, a list per subclass)."""

    sent: ClassVar[list] = None

    def copyfile(self, source, outputfile):
        data = source.read()
        type(self).sent.append((unquote(self.path.split("?")[0]), len(data)))  # before sending
        outputfile.write(data)


def counting_handler():
    return type("Handler", (CountingHandler,), {"sent": []})


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        browser = launch(p, OFFLINE_ARGS)
        yield browser
        browser.close()


def visit(context, url):
    """A new tab of ``context`` on a link, once it is live with the link's numbers, and
    its console."""
    page = context.new_page()
    console = Console(page)
    open_the_link(page, url)
    return page, console


def caches_of(site) -> list[str]:
    """The caches a page of ``site`` has once its service worker is active."""
    version = filled(site / "service_worker.js", "VERSION")
    return [f"{PREFIX}{version}", f"{PREFIX}named-by-content"]


def test_a_second_visit_comes_from_the_browser_even_offline(browser, site):
    """After one visit the site is kept. The first visit fetched each large file once
    (the service worker took what the page had downloaded), a second fetches under 0.1 MB,
    a third with the server gone goes live all the same, and once the browser has
    dropped the caches (as Safari does after seven days) the page simply loads again."""
    context = browser.new_context()
    handler = counting_handler()
    port = free_port()
    with http_server(site, handler, port=port) as url:
        page, _ = visit(context, url)
        assert page.evaluate(CACHES_JS) == caches_of(site)
        page.close()
        # The service worker asked the browser's HTTP cache, or had the worker's snapshot:
        # of the large files, named by content, none came twice. (A small file the page
        # asked for with a query, katex.min.css?v=1.9.4, may.)
        twice = [path for path, count in Counter(p for p, _ in handler.sent).items() if count > 1]
        assert [path for path in twice if unhashed(path) != path] == []
        assert sum(size for path, size in handler.sent if path in twice) < SECOND_VISIT_BYTES
        first = sum(size for _, size in handler.sent)
        handler.sent.clear()
        page, console = visit(context, url)
        assert sum(size for _, size in handler.sent) < SECOND_VISIT_BYTES, handler.sent
        assert console.errors == []
        page.close()
    page, console = visit(context, url)  # nothing listens on the port now
    assert console.errors == []
    page.evaluate(DROP_CACHES_JS)
    page.close()
    handler.sent.clear()
    with http_server(site, handler, port=port) as url:
        page, console = visit(context, url)
        assert sum(size for _, size in handler.sent) > first / 2
        assert console.errors == []
    context.close()


class SlowSnapshotHandler(CountingHandler):
    """Sends the snapshot over a slow link (``send_slowly``), the rest at once, and
    records how much of each file it sent before the browser hung up."""

    def copyfile(self, source, outputfile):
        path = unquote(self.path.split("?")[0])
        if not unhashed(path).startswith(SNAPSHOT_BIN):
            return super().copyfile(source, outputfile)
        type(self).sent.append((path, send_slowly(source.read(), outputfile)))


def test_over_a_slow_link_the_worker_fetches_the_smaller_snapshot_and_keeps_it(browser, site):
    """Where the snapshot comes slowly, the worker stops the gzip one within its first
    0.1 s and fetches the zstd one (30% fewer bytes), and the pack and Pyodide's wasm in
    zstd too, boots from them with the link's numbers, and keeps them: the next visit
    fetches no snapshot."""
    context = browser.new_context()
    handler = type("Handler", (SlowSnapshotHandler,), {"sent": []})
    with http_server(site, handler) as url:
        page, console = visit(context, url)
        sent = {unhashed(path): size for path, size in handler.sent}
        zstd = next(site.glob("snapshot/snapshot.*.bin.zst")).stat().st_size
        assert sent["/snapshot/snapshot.bin.zst"] == zstd
        assert sent["/snapshot/snapshot.bin.gz"] < 0.5 * SLOW_BYTES_PER_S  # stopped early
        for zstd in ("snapshot/site-packages.pack.zst", "pyodide/pyodide.asm.wasm.zst"):
            assert sent["/" + zstd] == site_file(site, zstd).stat().st_size
            assert "/" + zstd.replace(".zst", ".gz") not in sent
        assert console.errors == []
        assert page.evaluate(CACHES_JS) == caches_of(site)
        page.close()
        handler.sent.clear()
        page, console = visit(context, url)
        assert [path for path, _ in handler.sent if "snapshot.bin" in path] == []
        assert sum(size for _, size in handler.sent) < SECOND_VISIT_BYTES, handler.sent
        assert console.errors == []
    context.close()


KEPT_JS = f"""async () => {{
  await navigator.serviceWorker.ready;
  const kept = await caches.open('{PREFIX}named-by-content');
  return (await kept.keys()).map((request) => new URL(request.url).pathname);
}}"""


def test_over_a_fast_link_the_worker_keeps_to_the_gzip_snapshot(browser, site):
    """Over localhost the worker keeps to the gzip snapshot, which the browser
    decompresses sooner than fzstd would the zstd one: that is the one it keeps, with
    the pack and the wasm in gzip."""
    context = browser.new_context()
    handler = counting_handler()
    with http_server(site, handler) as url:
        page, console = visit(context, url)
        kept = {unhashed(path) for path in page.evaluate(KEPT_JS)}
        assert {"/snapshot/snapshot.bin.gz", "/snapshot/site-packages.pack.gz"} <= kept
        assert "/pyodide/pyodide.asm.wasm.gz" in kept
        assert not any(path.endswith(".zst") for path in kept), kept
        assert console.errors == []
    context.close()


def site_names(site) -> dict[str, str]:
    """The table of the names the build gave the large files, as the worker has it."""
    return filled(site / "main.js", "CONTENT_NAMES")


def test_after_a_rebuild_a_returning_browser_fetches_only_what_changed(browser, site, tmp_path):
    """A rebuild that changed one file (the theory page) costs a returning learner that
    file and the service worker's script, and the next visit shows the new file."""
    before, after = tmp_path / "before", tmp_path / "after"
    for copy in (before, after):
        shutil.copytree(site, copy, copy_function=os.symlink)
    for changed in ("theory.html", "service_worker.js"):  # linked to the site's: unlinked
        (after / changed).unlink()
    theory = (site / "theory.html").read_text()
    (after / "theory.html").write_text(theory.replace("</body>", "<p>Rebuilt.</p></body>"))
    write_service_worker(after, site_names(site))
    live = tmp_path / "live"  # what the server serves: the site, then its rebuild
    live.symlink_to(before)
    context = browser.new_context()
    handler = counting_handler()
    with http_server(live, handler) as url:
        page, _ = visit(context, url)
        assert page.evaluate(CACHES_JS) == caches_of(before)
        handler.sent.clear()
        live.unlink()
        live.symlink_to(after)
        page.evaluate(UPDATED_JS)
        assert page.evaluate(CACHES_JS) == caches_of(after)
        page.close()
        assert sorted(path for path, _ in handler.sent) == ["/service_worker.js", "/theory.html"]
        handler.sent.clear()
        page, console = visit(context, url)
        assert "Rebuilt." in page.evaluate("fetch('./theory.html').then((r) => r.text())")
        assert {path for path, _ in handler.sent} <= {"/service_worker.js"}
        assert console.errors == []
    context.close()
