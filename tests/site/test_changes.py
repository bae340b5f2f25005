"""A learner's changes on the built site: each key press, click and drag answered as
Python computes it, at once, in order, merged when quick, said while it waits; and a
thousand fast moves leave the page correct.
"""

import json
import statistics
from urllib.parse import parse_qsl

import numpy as np
import pytest
from browser import (
    AHEAD_READY_JS,
    READ_SOURCES_JS,
    SLIDER_TITLES,
    Console,
    open_section,
    read_sources,
    slider,
    slider_handle,
    unhashed,
)
from engines import DEEP_JS
from playwright.sync_api import expect
from site_pages import (
    ALL_SOURCES_FINITE_JS,
    BOOT_TIMEOUT,
    CHECKED_JS,
    COUNT_WORKER_MESSAGES_JS,
    LIVE_JS,
    SETTLED_JS,
    STATUS,
    TRAINED_JS,
    SessionHandler,
    wait_until_ready,
)

from app.background import TRAINING_SLICE
from app.captions import section_title
from app.options import (
    DEFAULTS,
)
from app.scenario import read_query
from app.style import RULE_NAMES

SWEEPING_JS = CHECKED_JS.replace("'checked'", "'sweeping'")


# True while the page trains (its hidden lab-training marker says so), and once it is done.
TRAINING_JS = (
    "() => [...Bokeh.documents].at(-1).get_model_by_name('lab-training').text === 'training'"
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


def test_a_key_press_while_training_runs_takes_effect_at_once(open_lab):
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
    page = open_lab("?d_k=256&scaling=none&seed=3")
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


def test_a_d_k_move_is_drawn_with_its_key_press_as_python_computes_it(open_lab):
    """The worker sends the figures at d_k's neighbours ahead (app/look_ahead.py), and the
    page draws a move with its key press instead of waiting for Python's answer (the
    benchmark: 46-64 ms to the last canvas painted, 116-140 ms before). The answer then
    brings the words and the address only, and every figure shows what Python holds:
    moving on, and back where it came from, in two sections."""
    page = open_lab("?section=spread")
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


def test_two_quick_presses_on_a_slider_s_track_both_count(open_lab):
    """Two clicks on the d_k slider's track, one right after the other: the second
    counts (noUiSlider ignored a press for 300 ms after a tap on its track or after
    Python's answer set its value, so a quick second press was lost)."""
    page = open_lab()
    box = slider(page, "d_k").locator(".noUi-target").bounding_box()
    for at in (0.9, 0.1):  # d_k = 2 ** 9, then 2 ** 1
        page.mouse.click(box["x"] + at * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_function("() => new URLSearchParams(location.search).get('d_k') === '2'")


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
    three. Only "New draw" merges its clicks (sitebuild.runtime.MERGED_CLICKS)."""
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
    answer comes (static/runtime/page/next_change.js): every answer that finds a change waiting
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
