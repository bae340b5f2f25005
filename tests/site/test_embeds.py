"""The built site in a course page: the views a teacher picked; three embeds that go
live on or off the screen, on one shared Python where the browser allows it, else a
Python each; and the course page on another origin fitting each frame to the embed's
content from the embed's own messages, in each way course pages listen (the README's
three lines on a plain page, Canvas's ``lti.frameResize``, H5P's resizer, Moodle's),
on a desktop and on phones.
"""

import json
import re
from urllib.parse import parse_qsl

import pytest
from browser import (
    COURSE_PAGE,
    CROSS_SITE_ARGS,
    FIXTURES,
    OTHER_SITE,
    PARTITIONED_ARGS,
    STATUS_READY_JS,
    Console,
    http_server,
    slider_handle,
    wait_for_source,
    write_course_page,
)
from embedding import (
    FIRST_PAINT_JS,
    FIT_JS,
    STATUS,
    STATUS_BAR,
    course_page,
    live_frames,
    wait_fitted,
    wait_live,
)
from engines import DEEP_JS, accessibility_violations
from site_pages import (
    BOOT_TIMEOUT,
    COURSE_EMBEDS,
    DEFAULT,
    EMBED_TITLES,
    IN_VIEW_JS,
    SHOWN_VIEWS_JS,
    active_element_js,
    assert_shows_weights_of,
    wait_until_ready,
)

from app.page import TITLE
from app.simulation import Settings
from sitebuild.serve import SiteHandler


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

    fixture = COURSE_PAGE.read_text()
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
    (tests/site/conftest.py, reads_only_its_pack) in the next test of the site. And the
    shared Python keeps no document of the failed page (it kept its half-built one)."""
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
