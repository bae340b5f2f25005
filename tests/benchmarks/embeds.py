"""A course page with the site's embeds, in headless Chromium, offline (issue 38).

The course page (tests/fixtures/course_page.html, served from another port: another
origin) holds one embed, then three (the embed code's lazy frames, three scenarios,
one below the other). Each load, in a fresh context, scrolls to each embed in turn
and waits until its status bar says ready (polled by time: a frame off the screen
runs no animation frames). Reported: when the last embed was ready (from the start
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


def load_course(browser, course_url: str, site_url: str, embeds: int, renderers, peaks) -> dict:
    """One cold load of the course page: each embed scrolled to and ready."""
    before = renderers()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(course_url)
    scrolled = 0.0  # the first embed is scrolled to as the page opens
    waits = []  # each embed's wait, from its scroll to ready
    for index in range(embeds):
        iframe = page.locator("iframe").nth(index)
        if index:
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


def measure(browser, sites: dict, renderers, peaks) -> dict:
    """EMBED_RUNS cold loads of the course page with one embed and with three, for each
    of ``sites`` ({name: URL}), alternating: {name: {embeds: [load_course's results]}}."""
    runs = {name: {1: [], 3: []} for name in sites}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(EMBED_RUNS):
            for embeds in (1, 3):
                for name, site_url in sites.items():
                    links = EMBED_LINKS[:embeds]
                    write_course_page(Path(tmp), site_url, links, [GAP] * embeds)
                    with http_server(Path(tmp)) as course_url:
                        runs[name][embeds].append(
                            load_course(browser, course_url, site_url, embeds, renderers, peaks)
                        )
    return runs


ROWS = (
    ("last embed ready, each scrolled to (ms)", "ready", "{:12.0f}"),
    ("slowest embed, from its scroll to ready (ms)", "slowest", "{:12.0f}"),
    ("renderers' peak memory, summed (MB)", "memory", "{:12.0f}"),
)


def medians(runs: dict) -> dict:
    return {
        n: {key: statistics.median(r[key] for r in runs[n]) for _, key, _ in ROWS} for n in runs
    }


def report(runs: dict):
    """Each site's medians, one embed against three; with a site "before", each figure
    of the site as built against it."""
    for name, site_runs in runs.items():
        median = medians(site_runs)
        print(
            f"\nA course page with the {name} site's embeds (Chromium; medians of "
            f"{EMBED_RUNS} cold loads)"
        )
        print(f"{'':<44}{'one embed':>12}{'three':>12}{'ratio':>8}")
        for label, key, fmt in ROWS:
            one, three = median[1][key], median[3][key]
            print(f"{label:<44}" + fmt.format(one) + fmt.format(three) + f"{three / one:8.2f}")
        waits = [statistics.median(r["waits"][i] for r in site_runs[3]) for i in range(3)]
        print(
            "each of the three, from its scroll to ready (ms):",
            ", ".join(f"{w:.0f}" for w in waits),
        )
    if "before" in runs:
        now, before = medians(runs["site"]), medians(runs["before"])
        print(f"\nThe site as built against before{'':<13}{'one embed':>12}{'three':>12}")
        for label, key, _ in ROWS:
            ratios = [now[n][key] / before[n][key] for n in (1, 3)]
            print(f"{label:<44}" + "".join(f"{r:12.2f}" for r in ratios))
