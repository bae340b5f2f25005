"""An embed of the built site in a course page, for the tests of embeds: the course
page's listener (the README's, Canvas's or H5P's), a course page of embeds, and
waiting for an embed to be live and its frame to fit it; the observer of an embed's
first paints.
"""

import re
from pathlib import Path

from browser import (
    FIXTURES,
    REPO,
    STATUS_READY_JS,
    write_course_page,
)
from site_pages import (
    BOOT_TIMEOUT,
)

README = REPO / "README.md"
# The README's listener for a plain course page: the script of its "Embed" section.
README_LISTENER = re.compile(
    r"```html\n<script>\n(addEventListener\('message'.*?)</script>\n```", re.S
)
STATUS_BAR = "document.getElementById('lab-status')"
STATUS = f"{STATUS_BAR}?.dataset.state"
# How far the frame's height may lie above its content's (the "within 20 px").
FIT_SLACK = 20

# The fit of a frame's page: its height less its content's (the bottom of Panel's main,
# read here), and how far it scrolls inside (0: no inner scrollbar).
FIT_JS = """() => { const d = document.documentElement;
  const content = document.querySelector('main').getBoundingClientRect().bottom + scrollY;
  return {slack: d.clientHeight - content, overflow: d.scrollHeight - d.clientHeight,
    height: d.clientHeight}; }"""
# Whether the frame is fitted: the status bar has gone (it shows 4 s after ready, and
# is counted while it shows), and the fit is within FIT_SLACK.
FITTED_JS = f"""() => {{ if (!document.getElementById('lab-status').hidden) return false;
  const fit = ({FIT_JS})(); return fit.overflow === 0 && fit.slack >= 0
    && fit.slack <= {FIT_SLACK}; }}"""


def listener(kind: str, site_url: str) -> str:
    """The course page's script that fits its frames: the README's (for the lab at
    ``site_url``), or a Canvas-style or H5P-style parent's (tests/support/fixtures)."""
    if kind == "readme":
        script = README_LISTENER.search(README.read_text()).group(1)
        assert "'https://your.host'" in script
        return script.replace("https://your.host", site_url.rstrip("/"))
    return (FIXTURES / f"{kind}_parent.js").read_text()


def course_page(folder: Path, site_url: str, kind: str, links) -> Path:
    """A course page in ``folder`` with an embed per link (the snippet's frames, 1200 px
    high) and ``kind``'s listener after them."""
    index = write_course_page(folder, site_url, links, gaps=[0] * len(links))
    script = f"<script>\n{listener(kind, site_url)}</script>\n</body>"
    index.write_text(index.read_text().replace("</body>", script))
    return index


def wait_fitted(frame):
    """Wait until ``frame``'s height fits its content; fail saying how it does not."""
    try:
        frame.wait_for_function(FITTED_JS, timeout=30_000, polling=100)
    except Exception as error:
        raise AssertionError(f"not fitted: {frame.evaluate(FIT_JS)}") from error
    return frame.evaluate(FIT_JS)


def wait_live(frame):
    """Wait until ``frame``'s status bar leaves "loading": it must say ready (or busy),
    not failed."""
    frame.wait_for_url(re.compile(r"\?"))
    frame.wait_for_function(f"() => {STATUS} !== 'loading'", timeout=BOOT_TIMEOUT, polling=100)
    assert frame.evaluate(STATUS_READY_JS), frame.evaluate(f"{STATUS_BAR}.textContent")


def live_frames(page, count: int) -> list:
    """The page's frames, the first ``count`` waited for until they are live
    (``wait_live``)."""
    frames = [f.content_frame() for f in page.locator("iframe").element_handles()]
    for frame in frames[:count]:
        wait_live(frame)
    return frames


# Counts, in each frame, the frames drawn while the embed loads with Bokeh's prerendered
# page laid out, and those of them not under the placeholder.
FIRST_PAINT_JS = """(() => {
  window.paints = {loading: 0, uncovered: 0, drawnUncovered: null};
  // Whether the placeholder was on when BokehJS first put a view of the page in it
  // (before any frame can be painted: a MutationObserver's answer is a microtask).
  new MutationObserver((records, observer) => {
    if (!window.Bokeh?.index || [...Bokeh.index.all_views()].length === 0) return;
    observer.disconnect();
    paints.drawnUncovered = !document.documentElement.classList.contains('lab-placeholder');
  }).observe(document, {childList: true, subtree: true});
  const watch = () => {
    const bar = document.getElementById('lab-status');
    if (bar && bar.dataset.state !== 'loading') return;
    if (window.Bokeh?.index && [...Bokeh.index.all_views()].length) {
      paints.loading += 1;
      if (!document.documentElement.classList.contains('lab-placeholder')) paints.uncovered += 1;
    }
    requestAnimationFrame(watch);
  };
  requestAnimationFrame(watch);
})()"""
