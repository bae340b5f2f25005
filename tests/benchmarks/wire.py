"""The site over a learner's network: one server whose responses share a link.

``python tests/benchmarks/site.py --wire`` runs this (``site.py`` measures on
localhost). Every response of the server, over every connection, shares one
bandwidth budget (a first-come first-served link: each 16 KB chunk waits for the
link to be free, then holds it for its length at the link's rate), and waits a
round trip before its first byte, as a home link or one seat of a classroom's
Wi-Fi does. The server compresses nothing, as Python's http.server,
``build.py --serve`` and many university servers do.

For each LINKS entry (name: Mbit/s, round trip in ms), cold loads in a fresh
browser context (WIRE_RUNS, alternating), medians:

- the site, opening ``site.LINK``: the page's text painted (first contentful
  paint), the first plot drawn (the first section's canvases in the page), ready
  (the status bar says so), and the link's first key press (d_k's ArrowLeft,
  pressed once ready) answered: the address bar and the plots show it;
- the site's second visit, in a new tab of the same browser once its service worker
  keeps the site: ready, first press answered, and the bytes it fetched;
- the floor, a bare page whose worker boots the same Pyodide and imports numpy:
  when numpy is imported;
- bytes fetched per file and in total, for both.

The ratio reported is the site's first press answered over the floor's ready,
both timed from the start of navigation.
"""

import statistics
import threading
import time
from pathlib import Path

from browser import http_server, launch, slider_handle

CHUNK = 16 * 1024
# name -> (Mbit/s, round trip in ms)
LINKS = {"home link": (10.0, 40.0), "slow 4G": (1.6, 150.0)}
WIRE_RUNS = 2

FIRST_CONTENTFUL_PAINT_JS = (
    "performance.getEntriesByType('paint')"
    ".find((e) => e.name === 'first-contentful-paint')?.startTime ?? null"
)


class Link:
    """A first-come first-served link of ``mbit`` Mbit/s shared by every response."""

    def __init__(self, mbit: float, rtt_ms: float):
        self.rate, self.rtt = mbit * 1e6 / 8, rtt_ms / 1e3
        self._free_at = 0.0
        self._lock = threading.Lock()

    def send(self, write, data: bytes):
        """Write ``data`` once the link has carried it (at its rate, after what came
        before it), CHUNK bytes at a time."""
        for at in range(0, len(data), CHUNK):
            chunk = data[at : at + CHUNK]
            with self._lock:
                start = max(time.monotonic(), self._free_at)
                self._free_at = done = start + len(chunk) / self.rate
            time.sleep(max(0.0, done - time.monotonic()))
            write(chunk)


class _OverLink:
    """A response's output stream whose writes go over ``link``."""

    def __init__(self, stream, link: Link):
        self.stream, self.link = stream, link

    def write(self, data: bytes):
        self.link.send(self.stream.write, data)


def throttled(handler: type, link: Link) -> type:
    """``handler`` (a ``site.CountingHandler``, which records what it serves) with every
    response sent over ``link``: a round trip before it, then its body."""

    class Throttled(handler):
        def do_GET(self):
            time.sleep(link.rtt)
            super().do_GET()

        def copyfile(self, source, outputfile):
            super().copyfile(source, _OverLink(outputfile, link))

    return Throttled


def visit(page, url: str, link_query: str, plots_js: str, moved_js: str) -> dict:
    """Open the site at ``url + link_query`` in ``page``: ms from the start of navigation
    to its text painted, its first plot, ready and its first press answered."""
    page.goto(url + link_query, wait_until="commit", timeout=600_000)
    page.wait_for_function(plots_js, polling="raf", timeout=600_000)
    result = {"plot": page.evaluate("performance.now()")}
    page.wait_for_function(
        "() => document.getElementById('lab-status').dataset.state !== 'loading'",
        polling=10,
        timeout=900_000,
    )
    result["ready"] = page.evaluate("performance.now()")
    result["text"] = page.evaluate(FIRST_CONTENTFUL_PAINT_JS)
    slider_handle(page, "d_k").press("ArrowLeft")
    page.wait_for_function(f"() => {moved_js}", polling=10, timeout=300_000)
    result["answered"] = page.evaluate("performance.now()")
    return result


def load_site(browser, url: str, served: list, args: tuple) -> dict:
    """A cold load of the site (``visit``), then, once its service worker keeps the site,
    a second visit in a new tab (``second``: its ``visit`` and the bytes it fetched).
    ``served``: the server's list of what it sent; ``args``: ``visit``'s after ``url``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    result = visit(page, url, *args)
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    page.close()
    first_visit = len(served)
    page = context.new_page()
    result["second"] = visit(page, url, *args)
    result["second"]["bytes"] = sum(size for _, size in served[first_visit:])
    del served[first_visit:]
    context.close()
    return result


def load_floor(browser, url: str) -> dict:
    context = browser.new_context()
    page = context.new_page()
    page.goto(url + "floor.html", wait_until="commit", timeout=600_000)
    page.wait_for_function("() => window.ready !== undefined", polling=10, timeout=900_000)
    result = {"ready": page.evaluate("window.ready")}
    context.close()
    return result


def measure(p, site: Path, floor_dir: Path, handler, args, cold_loads: int = WIRE_RUNS) -> dict:
    """Every LINKS entry: ``cold_loads`` of the site and of the floor, and what each
    fetched. ``args``: (launch args, link query, plots JS, moved JS)."""
    launch_args, link_query, plots_js, moved_js = args
    results = {}
    browser = launch(p, launch_args)
    for name, (mbit, rtt) in LINKS.items():
        runs = {"site": [], "floor": []}
        served = {}
        for _ in range(cold_loads):
            for variant, folder in (("site", site), ("floor", floor_dir)):
                counting = handler()
                with http_server(folder, throttled(counting, Link(mbit, rtt))) as url:
                    if variant == "site":
                        visit_args = (link_query, plots_js, moved_js)
                        runs[variant].append(load_site(browser, url, counting.served, visit_args))
                    else:
                        runs[variant].append(load_floor(browser, url))
                served.setdefault(variant, list(counting.served))
        results[name] = (runs, served)  # runs: {variant: [a dict per cold load]}
    browser.close()
    return results


def report(results: dict):
    for name, (runs, served) in results.items():
        mbit, rtt = LINKS[name]

        def median(variant, key, runs=runs):
            return statistics.median(r[key] for r in runs[variant]) / 1e3

        floor = median("floor", "ready")
        site_bytes = sum(size for _, size in served["site"]) / 1e6
        floor_bytes = sum(size for _, size in served["floor"]) / 1e6
        print(
            f"\nOver a {name} ({mbit:g} Mbit/s shared, {rtt:g} ms a request), medians of "
            f"{len(runs['site'])} cold loads; s from the start of navigation"
        )
        print(f"  site: text painted {median('site', 'text'):6.1f}")
        print(f"        first plot   {median('site', 'plot'):6.1f}")
        print(f"        ready        {median('site', 'ready'):6.1f}")
        answered = median("site", "answered")
        print(f"        first press answered {answered:6.1f}")
        second = [r["second"] for r in runs["site"]]
        print(
            f"  second visit (kept by the service worker): ready "
            f"{statistics.median(r['ready'] for r in second) / 1e3:6.1f}, first press answered "
            f"{statistics.median(r['answered'] for r in second) / 1e3:6.1f}, fetched "
            f"{max(r['bytes'] for r in second) / 1e6:.3f} MB"
        )
        print(f"  floor (bare Pyodide + numpy): ready {floor:6.1f}")
        print(f"  site answered / floor ready: {answered / floor:5.2f}")
        print(f"  bytes fetched: site {site_bytes:.1f} MB, floor {floor_bytes:.1f} MB")
        for variant in ("site", "floor"):
            files = sorted(served[variant], key=lambda f: -f[1])
            rest = sum(size for _, size in files if size < 10_000) / 1e6
            print(
                f"  files, {variant}: "
                + ", ".join(f"{n} {s / 1e6:.2f}" for n, s in files if s >= 10_000)
                + f", {sum(s < 10_000 for _, s in files)} others {rest:.2f} MB"
            )
