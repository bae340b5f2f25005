"""Watch the built site from outside: what the page says of its own accord, never asked.

A learner clicks and then only watches; a test that evaluates JavaScript in the
page while it waits gives the page a task to run, and can hide an answer that
only comes when something pokes the page. So the tests that time or check an
answer wait on what the page sends out by itself.

``ObservedSite`` serves the site with ``OBSERVE_JS`` in its page: it sends the
test's server a beacon for every key press, click and pointer release, and for
every ``lab:answered`` the page announces (``static/runtime/page/next_change.js``: every change
answered by Python and applied), with the page's clock and address, and for the
last animation frame after it (the answer painted). Each beacon carries the number of
the action under way (``window.__labAction``, which the test sets before it acts)
and, on an answer, how many inputs of each kind that action had made by then. So
a test knows an answer is its action's without asking the page anything:

    site.start(page_or_engine)   # before the action: the one evaluate it makes
    <key press or click>
    answer = site.answer(trigger="click", count=1)   # no evaluate while it waits

Works in every engine (``tests/support/engines.py``): the beacons go over HTTP.
"""

import json
import threading
import time
from pathlib import Path

from browser import http_server

from sitebuild.serve import SiteHandler

# In the page's <head>: beacons to the test's server (POST /__observed). The end of
# every animation frame is kept (BokehJS paints its canvases in them); once an answer
# has come and no frame has run for QUIET_MS, the last one is the answer painted.
QUIET_MS = 150
OBSERVE_JS = """(() => {
  const send = (event) => navigator.sendBeacon('/__observed',
    JSON.stringify({...event, action: window.__labAction ?? null}));
  const raf = window.requestAnimationFrame.bind(window);
  let lastFrame = 0;
  window.requestAnimationFrame = (callback) => raf((time) => {
    try { callback(time); } finally { lastFrame = performance.now(); }
  });
  let counts = {}, action = null;
  for (const type of ['keydown', 'click', 'pointerup']) {
    document.addEventListener(type, () => {
      if (window.__labAction !== action) { action = window.__labAction; counts = {}; }
      counts[type] = (counts[type] ?? 0) + 1;
      send({kind: 'input', type, t: performance.now()});
      // A drag whose last value Python answered before the pointer rose may give Python
      // nothing new at the release: then, once the page has handled it and nothing
      // waits for Python, it is answered. (Under load, test_answers waited for an answer
      // that had come, at one of its drags, in 1 run of 2 to 4.)
      if (type === 'pointerup') setTimeout(() => {
        if (typeof pyodideWorker === 'object' && !pyodideWorker.busy) answered(true);
      });
    }, {capture: true});
  }
  const answered = (already) => {
    const t = performance.now();
    send({kind: 'answered', t, url: location.href, already,
      counts: window.__labAction === action ? counts : {}});
    const quiet = () => (performance.now() - Math.max(lastFrame, t) > QUIET_MS
      ? send({kind: 'painted', answered: t, t: Math.max(lastFrame, t)})
      : setTimeout(quiet, 10));
    setTimeout(quiet, 10);
  };
  document.addEventListener('lab:answered', () => answered(false));
})();""".replace("QUIET_MS", str(QUIET_MS))
OBSERVE_TAG = f"<head>\n<script>{OBSERVE_JS}</script>"
ANSWER_TIMEOUT = 20.0  # s: an answer later than this was lost (they come in 0.02-2 s)


class ObservedSite:
    """The built site served with ``OBSERVE_JS``; the beacons it gets, in order.

    Use as a context manager; ``url`` is the site's root while it is open.
    """

    def __init__(self, site: Path):
        self.site, self.url = site, None
        self.events: list[dict] = []
        self._changed = threading.Condition()
        self._action = 0
        self._server = None

    def __enter__(self):
        observed = self

        class Handler(SiteHandler):
            def do_GET(self):
                if self.path.split("?")[0] not in ("/", "/index.html"):
                    return super().do_GET()
                page = (observed.site / "index.html").read_text()
                body = page.replace("<head>", OBSERVE_TAG, 1).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                event = json.loads(self.rfile.read(length))
                event["received"] = time.monotonic()
                self.send_response(204)
                self.end_headers()
                with observed._changed:
                    observed.events.append(event)
                    observed._changed.notify_all()

        self._server = http_server(self.site, Handler)
        self.url = self._server.__enter__()
        return self

    def __exit__(self, *exc):
        return self._server.__exit__(*exc)

    def start(self, page) -> int:
        """Number the next action (``page``: a Playwright page or an ``engines.Engine``)."""
        self._action += 1
        page.evaluate(f"window.__labAction = {self._action}")
        return self._action

    def answer(self, trigger: str, count: int = 1, timeout: float = ANSWER_TIMEOUT) -> dict:
        """Wait, asking the page nothing, for the answer to the current action: the first
        ``lab:answered`` after its ``count``-th ``trigger`` input ('keydown', 'click' or
        'pointerup'). Returns it with ``input`` (that input's time on the page's clock)
        and ``took`` (ms from the input to the answer)."""
        action = self._action

        def answered():
            return next(
                (
                    e
                    for e in self.events
                    if e["kind"] == "answered"
                    and e["action"] == action
                    and e["counts"].get(trigger, 0) >= count
                ),
                None,
            )

        def inputs():  # its input's beacon may come after the answer's
            times = [
                e["t"]
                for e in self.events
                if e["kind"] == "input" and e["action"] == action and e["type"] == trigger
            ]
            return sorted(times) if len(times) >= count else None

        answer = self._wait(answered, timeout, f"an answer after {count} {trigger}")
        t_input = self._wait(inputs, timeout, f"{count} {trigger} beacons")[count - 1]
        return {**answer, "input": t_input, "took": answer["t"] - t_input}

    def painted(self, answer: dict, timeout: float = 10.0) -> float:
        """The page's time of the last animation frame after ``answer``, once no frame has
        run for QUIET_MS (the answer's own time if none ran)."""

        def found():
            return next(
                (
                    e["t"]
                    for e in self.events
                    if e["kind"] == "painted" and e["answered"] == answer["t"]
                ),
                None,
            )

        return self._wait(found, timeout, "the answer painted")

    def _wait(self, found, timeout: float, what: str):
        """``found()``'s first value that is not None, waiting for beacons meanwhile."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (value := found()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    beacons = [e for e in self.events if e["action"] == self._action]
                    raise AssertionError(
                        f"action {self._action}: no {what} in {timeout} s (its beacons: {beacons})"
                    )
                self._changed.wait(left)
            return value
