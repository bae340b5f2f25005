"""The embed in its course page, on the built site: the course page on another origin
fits each frame to the embed's content from the embed's own messages, in each way
course pages listen: the README's three lines on a plain page, Canvas's
``lti.frameResize``, H5P's resizer (Moodle's); on a desktop and on phones. On another
site, each embed goes live whether the browser lets it share one Python or not.
"""

import json
import re
from pathlib import Path

import pytest
from browser import (
    CROSS_SITE_ARGS,
    OTHER_SITE,
    PARTITIONED_ARGS,
    STATUS_READY_JS,
    Console,
    http_server,
    slider_handle,
    wait_for_source,
    write_course_page,
)
from engines import accessibility_violations
from test_site import (  # noqa: F401 (fixtures)
    BOOT_TIMEOUT,
    COURSE_EMBEDS,
    active_element_js,
    offline,
    site_url,
)

from sitebuild.serve import SiteHandler

README = Path(__file__).resolve().parent.parent / "README.md"
FIXTURES = Path(__file__).parent / "fixtures"
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
    ``site_url``), or a Canvas-style or H5P-style parent's (tests/fixtures)."""
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


@pytest.mark.parametrize("kind", ["readme", "canvas", "h5p"])
def test_the_course_page_fits_each_embed_to_its_content(offline, site_url, tmp_path, kind):
    """Two embeds, each fitted to its content (no inner scrollbar, at most FIT_SLACK px
    below it) by the README's listener, a Canvas-style or an H5P-style parent; and
    fitted again, taller, when the course page narrows to a phone's width. The embed's
    own message says the height it asked for. (Before the embed told its height, each
    frame kept the snippet's 1200 px, scrolling inside or blank below.)"""
    links = list(COURSE_EMBEDS)[:2]
    with http_server(course_page(tmp_path, site_url, kind, links).parent) as course_url:
        page = offline.new_page()
        console = Console(page)
        page.goto(course_url)
        frames = live_frames(page, 2)
        wide = [wait_fitted(frame) for frame in frames]  # the second off the screen
        if kind == "readme":
            told = page.evaluate("embedStates().map((s) => s.height)")
            assert told == [fit["height"] for fit in wide]
        # Narrowed, a frame lays itself out anew once it is drawn: when scrolled to.
        page.set_viewport_size({"width": 390, "height": 844})
        for index, (frame, before) in enumerate(zip(frames, wide, strict=True)):
            page.locator("iframe").nth(index).scroll_into_view_if_needed()
            frame.wait_for_function(f"() => ({FIT_JS})().height > {before['height']}")
            wait_fitted(frame)
        page.close()
    assert console.errors == []


@pytest.mark.parametrize("phone", ["iPhone 13", "Pixel 5"])
def test_a_phone_gets_no_scroll_trap(offline, site_url, tmp_path, phone):
    """On a phone (its descriptor: touch, mobile viewport, scale factor) the README's
    listener fits the embed to its content: the reader's swipe moves the course page,
    not a frame 1200 px high that scrolls inside."""
    links = list(COURSE_EMBEDS)[:1]
    with http_server(course_page(tmp_path, site_url, "readme", links).parent) as course_url:
        context = offline.phone(**offline.phones[phone])
        page = context.new_page()
        console = Console(page)
        page.goto(course_url)
        (frame,) = live_frames(page, 1)
        fit = wait_fitted(frame)
        assert fit["height"] > 1200  # taller than the snippet's frame: it scrolled inside
        context.close()
    assert console.errors == []


def copied_snippet(offline, site_url, link: str, theme: str | None = None) -> str:
    """The share box's embed code for the page at ``link`` (its section's views), with
    the theme labelled ``theme`` picked (None: as it comes)."""
    page = offline.new_page()
    page.goto(site_url + link)
    page.wait_for_function(STATUS_READY_JS, timeout=BOOT_TIMEOUT, polling=100)
    if theme is not None:
        page.get_by_label("Theme of the embed").select_option(label=theme)
    page.get_by_role("button", name="Copy embed code").click()
    snippet = page.locator("textarea").input_value()
    page.close()
    return snippet


@pytest.mark.parametrize("phone", ["iPhone 13", "Pixel 5"])
def test_the_snippet_alone_has_no_scroll_trap_on_a_phone(offline, site_url, tmp_path, phone):
    """The share box's snippet on a course page with no script at all: on a phone the
    frame is tall enough for its content (no inner scrollbar: the reader's swipe moves
    the page) and not far taller (at most 15% blank); its title names its views. (The
    snippet's fixed 2440 px for four views left 800 px to scroll inside on an iPhone 13.)"""
    snippet = copied_snippet(offline, site_url, "?section=saturation")
    assert 'title="Attention Scaling Lab: Largest attention weight, ' in snippet
    fixture = (FIXTURES / "course_page.html").read_text()
    (tmp_path / "index.html").write_text(fixture.replace("{{ SNIPPET }}", snippet))
    with http_server(tmp_path) as course_url:
        context = offline.phone(**offline.phones[phone])
        page = context.new_page()
        console = Console(page)
        page.goto(course_url)
        (frame,) = live_frames(page, 1)
        page.locator("iframe").scroll_into_view_if_needed()
        frame.wait_for_function(f"() => {STATUS_BAR}.hidden")
        fit = frame.evaluate(FIT_JS)
        assert fit["overflow"] == 0 and 0 <= fit["slack"] <= 0.15 * fit["height"], fit
        context.close()
    assert console.errors == []


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


def test_an_embed_paints_no_other_scenario_before_it_is_live(offline, site_url, tmp_path):
    """Until it is live, an embed shows a neutral placeholder over the prerendered page
    (the default scenario, laid out as the whole lab), in every frame it draws; then
    its own views, and the course page gets its height only then. (Before, it showed
    d_k = 64 and every section, greyed, for 2-3 s; and until the placeholder was put in
    the page's head, BokehJS drew the prerendered page before it was on.)"""
    links = list(COURSE_EMBEDS)[:1]  # d_k = 512: spread and heatmap
    with http_server(course_page(tmp_path, site_url, "readme", links).parent) as course_url:
        page = offline.new_page()
        console = Console(page)
        page.add_init_script(FIRST_PAINT_JS)
        page.goto(course_url)
        (frame,) = live_frames(page, 1)
        paints = frame.evaluate("paints")
        assert paints["loading"] > 0 and paints["uncovered"] == 0, paints
        assert paints["drawnUncovered"] is False, paints
        assert not frame.evaluate("document.documentElement.classList.contains('lab-placeholder')")
        wait_fitted(frame)
        page.close()
    assert console.errors == []


# A course page that rebuilds its frame in place, as navigation.instant does.
REBUILD_JS = """() => { const frame = document.querySelector('iframe');
  frame.replaceWith(frame.cloneNode()); }"""


def test_an_embed_rebuilt_by_its_course_page_keeps_the_reader_s_scenario(
    offline, site_url, tmp_path
):
    """The reader moves d_k in an embed; the course page is reloaded, then rebuilds the
    frame in place (as MkDocs Material's navigation.instant does): each time the embed
    comes back at the reader's d_k, not at its snippet's link. A new tab starts at the
    link. (Before, both came back at the link's d_k = 512.)"""
    links = list(COURSE_EMBEDS)[:1]  # d_k = 512
    with http_server(course_page(tmp_path, site_url, "readme", links).parent) as course_url:
        page = offline.new_page()
        console = Console(page)
        page.goto(course_url)
        (frame,) = live_frames(page, 1)
        slider_handle(frame, "d_k").press("ArrowLeft")  # 512 -> 256
        frame.wait_for_url(re.compile(r"d_k=256&"))
        wait_for_source(frame, "spread:marker", "(d) => d.d_k[0] === 256")
        for rebuild in (page.reload, lambda: page.evaluate(REBUILD_JS)):
            rebuild()
            (frame,) = live_frames(page, 1)
            wait_for_source(frame, "spread:marker", "(d) => d.d_k[0] === 256")
            assert "d_k=256&" in frame.url
        other = offline.new_page()
        other.goto(course_url)
        (frame,) = live_frames(other, 1)
        wait_for_source(frame, "spread:marker", "(d) => d.d_k[0] === 512")
        other.close()
        page.close()
    assert console.errors == []


# A SharedWorker that is there and never says a word (a hung or blocked worker): a
# real one, running an empty script.
SILENT_SHARED_WORKER_JS = """(() => {
  const Real = window.SharedWorker;
  const silent = URL.createObjectURL(new Blob([''], {type: 'text/javascript'}));
  window.SharedWorker = function (url, options) { return new Real(silent, options); };
})()"""
# Where a course page on another site gets which Python: with Chromium's storage
# partitioning on (Chrome's default) the embeds share one; off (Playwright's default),
# the browser refuses the shared worker with an `error` event; and where the
# shared worker never answers.
REFUSALS = {
    "partitioned": (PARTITIONED_ARGS, None, "shared"),
    "unpartitioned": ([], None, "own"),
    "silent": (PARTITIONED_ARGS, SILENT_SHARED_WORKER_JS, "own"),
}


@pytest.mark.parametrize("refusal", REFUSALS)
def test_an_embed_on_another_site_goes_live_whatever_becomes_of_its_shared_worker(
    offline, site_url, tmp_path, refusal
):
    """Two embeds on a course page on another site go live, sharing one Python where the
    browser lets them, else each with its own, and tell the course page which. (With
    partitioning off, Chromium refused the shared worker by a later `error` event: the
    first embed said "failed" and the second "loading" for good; a shared worker that
    never answered left both loading.)"""
    args, init_script, python = REFUSALS[refusal]
    links = list(COURSE_EMBEDS)[:2]
    folder = course_page(tmp_path, site_url, "readme", links).parent
    with http_server(folder, host=OTHER_SITE) as course_url:
        browser = offline.launch([*CROSS_SITE_ARGS, *args])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        console = Console(page)
        if init_script:
            page.add_init_script(init_script)
        page.goto(course_url)
        frames = live_frames(page, 2)
        assert [frame.evaluate("pyodideWorker.python") for frame in frames] == [python] * 2
        told = page.evaluate("embedStates().map((s) => [s.state, s.python])")
        assert told == [["ready", python]] * 2
        browser.close()
    assert console.errors == []


# In a course page's frames: the second embed asks its shared Python for a document
# at an address Python cannot read ('{"broken': a document that fails to build), once
# the first is ready; the third asks once the second has failed. (In this order a
# worker that tries the failed document again before the third's has no other.)
BROKEN_SECOND_EMBED_JS = """(() => {
  if (window.top === window) return;
  const me = ['d_k=512', 'scaling=none', 'seed=3'].findIndex((k) => location.search.includes(k));
  const after = {1: [0, 'ready'], 2: [1, 'failed']}[me];
  if (after === undefined) return;
  const [sibling, state] = after;
  const said = () => window.top.frames[sibling].document.getElementById('lab-status')
    ?.dataset.state === state;
  const Real = window.SharedWorker;
  window.SharedWorker = function (url, options) {
    const worker = new Real(url, options);
    const post = worker.port.postMessage.bind(worker.port);
    worker.port.postMessage = (message, ...rest) => {
      if (message?.type !== 'start') return post(message, ...rest);
      if (me === 1) message = {...message, location: '{"broken', inView: true};
      const when = () => (said() ? post(message, ...rest) : setTimeout(when, 50));
      when();
    };
    return worker;
  };
})()"""


def shared_python(browser, expression: str):
    """The value of the JavaScript ``expression`` in the browser's one shared worker
    (the embeds' shared Python, ``self.pyodide``), read through Chromium's DevTools
    protocol: nothing the pages can reach."""
    cdp = browser.new_browser_cdp_session()
    targets = cdp.send("Target.getTargets")["targetInfos"]
    (worker,) = [target for target in targets if target["type"] == "shared_worker"]
    attached = cdp.send("Target.attachToTarget", {"targetId": worker["targetId"]})
    answers = []
    cdp.on("Target.receivedMessageFromTarget", lambda e: answers.append(json.loads(e["message"])))
    asked = {"expression": expression, "returnByValue": True}
    message = json.dumps({"id": 1, "method": "Runtime.evaluate", "params": asked})
    cdp.send("Target.sendMessageToTarget", {"sessionId": attached["sessionId"], "message": message})
    while not any(answer.get("id") == 1 for answer in answers):
        cdp.send("Target.getTargets")  # a round trip, in which the answer's event comes
    (answer,) = [answer for answer in answers if answer.get("id") == 1]
    cdp.detach()
    return answer["result"]["result"]["value"]


def test_an_embed_whose_document_fails_does_not_hold_up_the_next(offline, site, tmp_path):
    """Three embeds share one Python on a course page on another site; the second's
    document fails to build in Python. That embed says it failed, and the third goes
    live after it. (The worker tried the failed document again every 10 s, before any
    page waiting after it: the third embed said "loading" for good.) The lab has a
    server of its own here: the failure's traceback reads source files that no working
    session reads, which site_url's server would count against the session's pack
    (test_site.reads_only_its_pack) in the next test of the site. And the shared Python
    keeps no document of the failed page (it kept its half-built one)."""
    links = list(COURSE_EMBEDS)
    with http_server(site, SiteHandler) as lab_url:
        folder = course_page(tmp_path, lab_url, "readme", links).parent
        with http_server(folder, host=OTHER_SITE) as course_url:
            browser = offline.launch([*CROSS_SITE_ARGS, *PARTITIONED_ARGS])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.add_init_script(BROKEN_SECOND_EMBED_JS)
            page.goto(course_url)
            first, broken, third = [
                f.content_frame() for f in page.locator("iframe").element_handles()
            ]
            wait_live(first)
            broken.wait_for_function(
                f"() => {STATUS} === 'failed'", timeout=BOOT_TIMEOUT, polling=100
            )
            assert "Error: " in broken.evaluate(f"{STATUS_BAR}.textContent")
            # Every embed says it is ready or failed within 30 s (the bound).
            third.wait_for_function(f"() => {STATUS} !== 'loading'", timeout=30_000, polling=100)
            assert third.evaluate(STATUS_READY_JS), third.evaluate(f"{STATUS_BAR}.textContent")
            told = page.evaluate("embedStates().map((s) => [s.state, s.python])")
            assert told == [["ready", "shared"], ["failed", "shared"], ["ready", "shared"]]
            # The shared Python holds the documents of the two pages that have one: the
            # failed page's half-built one is let go.
            held = "self.pyodide.runPython('from app import worker; len(worker._documents)')"
            assert shared_python(browser, held) == 2
            browser.close()


def test_a_reader_who_asks_for_dark_gets_dark_embeds_unless_the_snippet_says_light(
    offline, site_url, tmp_path
):
    """On a course page on another site, for a reader whose system asks for dark: the
    share box's snippet as it comes (the reader's theme) draws dark, from its first
    frame (a dark placeholder, never the light prerendered page) to live, and axe-core
    finds nothing in it; the one the teacher set to "Light" stays light."""
    snippets = [
        copied_snippet(offline, site_url, "?section=spread"),
        copied_snippet(offline, site_url, "?section=spread", theme="Light"),
    ]
    assert "theme=" not in snippets[0] and "theme=light" in snippets[1]
    fixture = (FIXTURES / "course_page.html").read_text()
    (tmp_path / "index.html").write_text(fixture.replace("{{ SNIPPET }}", "\n".join(snippets)))
    with http_server(tmp_path, host=OTHER_SITE) as course_url:
        browser = offline.launch(CROSS_SITE_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme="dark")
        console = Console(page)
        page.add_init_script(FIRST_PAINT_JS)
        page.goto(course_url)
        dark, light = live_frames(page, 2)
        assert dark.evaluate("document.documentElement.dataset.labTheme") == "dark"
        assert dark.evaluate("paints.uncovered") == 0
        dark.wait_for_function(f"() => {STATUS_BAR}.hidden")
        assert accessibility_violations(dark) == []
        assert light.evaluate("document.documentElement.dataset.labTheme") == "light"
        assert light.evaluate("getComputedStyle(document.documentElement).backgroundColor") in (
            "rgba(0, 0, 0, 0)",
            "rgb(255, 255, 255)",
        )
        browser.close()
    assert console.errors == []


# The name of the view whose card has the keyboard's focus (null: none has).
FOCUSED_VIEW_JS = """() => { let a = document.activeElement;
  while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
  const view = [...[...Bokeh.documents].at(-1).all_models].find((m) => typeof m.name === 'string'
    && m.name.startsWith('view:') && Bokeh.index.find_one(m)?.el === a);
  return view?.name ?? null; }"""


def test_the_keyboard_skips_an_embed_s_controls_with_one_key(offline, site_url, tmp_path):
    """On a course page, the first Tab into an embed reaches its skip link, shown then;
    Enter on it takes the focus to the first view, and from there the Tab key meets the
    views' own stops only and leaves the embed: in half the presses passing one embed
    took before (31 Tab presses, with no skip link)."""
    snippet = copied_snippet(offline, site_url, "?section=spread")
    fixture = (FIXTURES / "course_page.html").read_text()
    (tmp_path / "index.html").write_text(fixture.replace("{{ SNIPPET }}", snippet))
    with http_server(tmp_path) as course_url:
        page = offline.new_page()
        console = Console(page)
        page.goto(course_url)
        (frame,) = live_frames(page, 1)
        page.get_by_role("heading", name="Week 5").click()
        page.keyboard.press("Tab")
        skip = frame.get_by_role("button", name="Skip the controls, to the views")
        assert frame.evaluate(active_element_js("a.textContent.trim()")) == skip.inner_text()
        box = skip.bounding_box()
        assert box["width"] > 100 and box["height"] > 20  # in sight while focused
        page.keyboard.press("Enter")
        frame.wait_for_function(f"() => ({FOCUSED_VIEW_JS})() === 'view:histogram'")
        stops = []  # what the Tab key reaches from the first view until it leaves the embed
        while frame.evaluate("document.hasFocus()") and len(stops) < 40:
            page.keyboard.press("Tab")
            stops.append(
                frame.evaluate(
                    active_element_js(
                        "(a.getAttribute('aria-label') ?? a.textContent).trim().slice(0, 40)"
                    )
                )
            )
        # The views' own stops only (their tools, terms and the link back), no control:
        # half the presses the whole embed took before.
        assert not {"d_k (key dimension)", "New draw", "none"} & set(stops), stops
        assert 2 + len(stops) <= 31 // 2, stops
        page.close()
    assert console.errors == []
