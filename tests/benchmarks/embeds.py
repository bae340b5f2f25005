"""A course page with the site's embeds, in headless Chromium, offline (issue 38).

The course page (tests/support/fixtures/course_page.html, served from another port: another
origin) holds one embed, then three (the embed code's lazy frames, three scenarios,
one below the other). Each load, in a fresh context, scrolls to each embed in turn
and waits until its status bar says ready (polled by time: a frame off the screen
runs no animation frames). The three are read two ways: each scrolled to the moment
the one before is ready (the worst case for the later ones, whose Python documents are
built one at a time after the one before is live), and after READING_MS spent on the
one before, as a reader would. Reported: when the last embed was ready (from the start
of navigation), the longest an embed took from its scroll to ready (the first's from
the start of navigation) and each one's, and the peak memory of the browser's
renderers, summed over the renderer processes the load started (VmHWM from /proc:
the embeds' shared worker, or each embed's own, runs in a renderer).

Run: python tests/benchmarks/site.py --embeds [--before DIR]
"""

import re
import statistics
import tempfile
from pathlib import Path

from browser import STATUS_READY_JS, http_server, write_course_page

EMBED_RUNS = 3
EMBED_LINKS = [
    "?d_k=512&views=spread%2Cheatmap",
    "?scaling=none&views=max_weight%2Centropy",
    "?seed=3&views=training_sweep",
]
GAP = 600  # px of the lesson before each embed
READING_MS = 3000  # how long a reader spends on an embed before scrolling to the next
# The loads measured: (label, embeds, ms spent reading each embed before the next).
LOADS = (("one embed", 1, 0), ("three", 3, 0), ("three, read", 3, READING_MS))


def load_course(
    browser, course_url: str, site_url: str, embeds: int, reading_ms: int, renderers, peaks
) -> dict:
    """One cold load of the course page: each embed scrolled to and ready, the next
    scrolled to ``reading_ms`` after."""
    before = renderers()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(course_url)
    scrolled = 0.0  # the first embed is scrolled to as the page opens
    waits = []  # each embed's wait, from its scroll to ready
    for index in range(embeds):
        iframe = page.locator("iframe").nth(index)
        if index:
            page.wait_for_timeout(reading_ms)  # the reader, reading
            scrolled = page.evaluate("performance.now()")
        iframe.scroll_into_view_if_needed()
        frame = iframe.element_handle().content_frame()
        frame.wait_for_url(re.compile(re.escape(site_url) + r"\?"))
        frame.wait_for_function(STATUS_READY_JS, polling=100, timeout=300_000)
        waits.append(page.evaluate("performance.now()") - scrolled)
    result = {
        "ready": page.evaluate("performance.now()"),
        "slowest": max(waits),
        "waits": waits,
        "memory": sum(peaks(renderers() - before)),
    }
    context.close()
    return result


def measure(browser, sites: dict, renderers, peaks, runs: int = EMBED_RUNS) -> dict:
    """``runs`` cold loads of the course page in each of LOADS, for each of ``sites``
    ({name: URL}), alternating: {name: {load's label: [load_course's results]}}."""
    found = {name: {label: [] for label, _, _ in LOADS} for name in sites}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for label, embeds, reading_ms in LOADS:
                for name, site_url in sites.items():
                    links = EMBED_LINKS[:embeds]
                    write_course_page(Path(tmp), site_url, links, [GAP] * embeds)
                    with http_server(Path(tmp)) as course_url:
                        found[name][label].append(
                            load_course(
                                browser, course_url, site_url, embeds, reading_ms, renderers, peaks
                            )
                        )
    return found


ROWS = (
    ("last embed ready, each scrolled to (ms)", "ready", "{:14.0f}"),
    ("slowest embed, from its scroll to ready (ms)", "slowest", "{:14.0f}"),
    ("renderers' peak memory, summed (MB)", "memory", "{:14.0f}"),
)


def medians(site_runs: dict) -> dict:
    """{load's label: {figure: median}}, with each embed's wait as "wait i"."""
    found = {}
    for label, runs in site_runs.items():
        found[label] = {key: statistics.median(r[key] for r in runs) for _, key, _ in ROWS}
        for i in range(len(runs[0]["waits"])):
            found[label][f"wait {i}"] = statistics.median(r["waits"][i] for r in runs)
    return found


def report(runs: dict):
    """Each site's medians in each load; with a site "before", each figure of the site
    as built against it."""
    labels = [label for label, _, _ in LOADS]
    header = f"{'':<46}" + "".join(f"{label:>14}" for label in labels)
    for name, site_runs in runs.items():
        median = medians(site_runs)
        print(
            f"\nA course page with the {name} site's embeds (Chromium; medians of "
            f"{len(site_runs['one embed'])} cold loads; 'three, read': {READING_MS} ms on each"
            " before the next)"
        )
        print(header)
        for row, key, fmt in ROWS:
            print(f"{row:<46}" + "".join(fmt.format(median[label][key]) for label in labels))
        for label in labels[1:]:
            waits = [median[label][f"wait {i}"] for i in range(3)]
            print(
                f"each of the {label}, from its scroll to ready (ms):",
                ", ".join(f"{w:.0f}" for w in waits),
            )
    if "before" in runs:
        now, before = medians(runs["site"]), medians(runs["before"])
        print(f"\nThe site as built against before\n{header}")
        keys = [(row, key) for row, key, _ in ROWS] + [
            (f"embed {i + 1}, from its scroll to ready (ms)", f"wait {i}") for i in range(3)
        ]
        for row, key in keys:
            ratios = [
                f"{now[label][key] / before[label][key]:14.2f}"
                if key in now[label]
                else f"{'':>14}"
                for label in labels
            ]
            print(f"{row:<46}" + "".join(ratios))
