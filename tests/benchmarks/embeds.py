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

Run: python tests/benchmarks/site.py --embeds
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


def measure(browser, site_url: str, renderers, peaks) -> dict:
    """EMBED_RUNS cold loads of the course page with one embed and with three, alternating."""
    runs = {1: [], 3: []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(EMBED_RUNS):
            for embeds in runs:
                write_course_page(Path(tmp), site_url, EMBED_LINKS[:embeds], [GAP] * embeds)
                with http_server(Path(tmp)) as course_url:
                    runs[embeds].append(
                        load_course(browser, course_url, site_url, embeds, renderers, peaks)
                    )
    return runs


def report(runs: dict):
    median = {
        n: {k: statistics.median(r[k] for r in runs[n]) for k in ("ready", "slowest", "memory")}
        for n in runs
    }
    print(f"\nA course page with the site's embeds (Chromium; medians of {EMBED_RUNS} cold loads)")
    print(f"{'':<44}{'one embed':>12}{'three':>12}{'ratio':>8}")
    for label, key, fmt in (
        ("last embed ready, each scrolled to (ms)", "ready", "{:12.0f}"),
        ("slowest embed, from its scroll to ready (ms)", "slowest", "{:12.0f}"),
        ("renderers' peak memory, summed (MB)", "memory", "{:12.0f}"),
    ):
        one, three = median[1][key], median[3][key]
        print(f"{label:<44}" + fmt.format(one) + fmt.format(three) + f"{three / one:8.2f}")
    waits = [statistics.median(r["waits"][i] for r in runs[3]) for i in range(3)]
    print("each of the three, from its scroll to ready (ms):", ", ".join(f"{w:.0f}" for w in waits))
