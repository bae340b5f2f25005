"""The edits to the worker and the page that Panel's converter writes, with the
status bar: how the page and the worker exchange the document's changes, and when
the worker starts."""

import hashlib
import json
from pathlib import Path

from sitebuild.common import STATIC, replace_once

STATUS_HTML = STATIC / "status.html"  # the status bar, inserted before </body>
PLACEHOLDER_HTML = STATIC / "placeholder.html"  # an embed's placeholder, first in <head>
EMBED_HOST_JS = STATIC / "embed_host.js"  # what an embed tells its course page, before it
KEEP_SCENARIO_JS = STATIC / "keep_scenario.js"  # an embed rebuilt at the reader's scenario
# Prepended to the worker: a file that fails to load (Pyodide's wasm hangs on it
# instead of failing) or an error in an async step would otherwise leave the page
# loading forever; report either as a status, which the page shows as failed.
WORKER_ERRORS_JS = STATIC / "worker_errors.js"
# Prepended before them: the worker as a SharedWorker, one Python for a course page's
# embeds; the page makes its worker with LAB_WORKER_JS's labWorker.
SHARED_WORKER_JS = STATIC / "shared_worker.js"
LAB_WORKER_JS = STATIC / "lab_worker.js"
PANEL_WORKER = '      const pyodideWorker = new Worker("./main.js");\n'
PAGE_WORKER = '      const pyodideWorker = labWorker("./main.js");\n'
LAB_BUILD = "LAB_BUILD"  # in LAB_WORKER_JS: the build, which names its shared worker
AHEAD_JS = STATIC / "ahead.js"  # the page's side of the changes sent ahead
NEXT_CHANGE_JS = STATIC / "next_change.js"  # a drag's next change posted with the answer

# Panel's worker links the document with one message per Bokeh event; app.worker
# sends one per Python task (see its docstring).
PANEL_LINK = (
    "    from panel.io.pyodide import _link_docs_worker\n\n"
    "    _link_docs_worker(state.curdoc, sendPatch, setter='js')"
)
BATCHED_LINK = (
    "    from app.worker import link_document\n\n"
    "    link_document(state.curdoc, sendPatch, setter='js', post=globals().get('postToPage'))"
)
# The page's first two messages, "rendered" (link the document) and its URL, run at
# once as its changes do (PAGE_APPLY): the worker handles all three in the order the
# page sent them. While those two were queued (runPythonAsync) and a change was not,
# a change right behind them (a layout change the page makes as it draws) ran before
# the document was linked, and the page said it failed: 3 loads in 45 in WebKit.
PANEL_RENDERED = "  if (msg.type === 'rendered') {\n    self.pyodide.runPythonAsync(`"
PAGE_RENDERED = PANEL_RENDERED.replace("runPythonAsync", "runPython")
PANEL_LOCATION = (
    "    self.pyodide.globals.set('location', msg.location)\n    self.pyodide.runPythonAsync(`"
)
# A location the worker applied as Python started (snapshot.SNAPSHOT_BOOT) is not
# applied again when the page sends it once it has rendered.
PAGE_LOCATION = "    if (msg.location === appliedLocation) return;\n" + PANEL_LOCATION.replace(
    "runPythonAsync", "runPython"
)
# The page's changes, applied through app.worker's link: after Python's pending
# changes are sent (else the models they add are counted as synced unsent), and
# without those to models that left the document (a closed section's figures),
# which made Bokeh drop the whole merged patch. See app/patches.py. Applied at once
# (runPython, not runPythonAsync, which queued the change behind the event loop's
# tasks: a slice of the background training), and Python's answer sent with it.
# Panel's worker says it is idle as soon as it has started on a change from the
# page, so the page sends the next one at once and a drag's changes pile up
# behind Python. Said once Python is done (and its reply sent), the page holds
# back and merges what comes meanwhile: a drag updates as fast as Python and
# the browser can follow.
PANEL_APPLY = """\
    self.pyodide.runPythonAsync(`
    from panel.io.pyodide import _convert_json_patch
    state.curdoc.apply_json_patch(_convert_json_patch(patch), setter='js')
    `)
    self.postMessage({type: 'idle'})
"""
PAGE_APPLY = """\
    self.pyodide.globals.set('ahead', msg.ahead ?? null)
    try {
      self.pyodide.runPython(`
    from panel.io.pyodide import _convert_json_patch
    from app.worker import apply_page_patch
    apply_page_patch(state.curdoc, _convert_json_patch(patch), ahead)
    `)
    } finally {
      self.postMessage({type: 'idle'})
    }
"""
# While the worker is busy the page holds back property changes, keeping the
# latest per property, but sends other events (a button's click) at once: ten
# quick clicks on "New draw" queued ten full updates in the worker. Every event
# waits, and repeats of the same property merge (the latest value wins), as do repeated
# clicks of a button tagged MERGED_CLICKS (app.page: "New draw", where ten new draws
# show what one does). Any other button's clicks all go: three quick clicks on "Next"
# are three sections on, not two.
MERGED_CLICKS = "merged-clicks"  # a button's tag: its quick clicks do what one does
PANEL_QUEUE = (
    "        } else if (pyodideWorker.busy && event.model && event.attr) {\n"
    "          let events = []\n"
    "          for (const old_event of pyodideWorker.queue) {\n"
    "            if (!(old_event.model === event.model && old_event.attr === event.attr)) {"
)
PAGE_QUEUE = (
    "        } else if (pyodideWorker.busy) {\n"
    "          const merged = (id) => jsdoc.get_model_by_id(id)?.tags.includes("
    f"{json.dumps(MERGED_CLICKS)})\n"
    "          const key = (e) => e.model ? `${e.model.id}.${e.attr}`\n"
    "            : merged(e.msg_data?.origin?.id)"
    " ? `${e.msg_data.origin.id}:${e.msg_data.event_name}` : null\n"
    "          const same = (a, b) => key(a) !== null && key(a) === key(b)\n"
    "          let events = []\n"
    "          for (const old_event of pyodideWorker.queue) {\n"
    "            if (!same(old_event, event)) {"
)


# The page posts its changes through AHEAD_JS, which applies what the worker sent
# ahead for a change (app/look_ahead.py) as it posts the change, and keeps the
# worker's 'ahead' messages; a change posted with none unanswered says the page now
# waits for Python (NEXT_CHANGE_JS, waitForAnswer).
PANEL_PATCHING = "      let patching = 0\n"
PANEL_POST = (
    "        const patch = jsdoc.create_json_patch([event])\n"
    "        pyodideWorker.busy = true\n"
    "        pyodideWorker.postMessage({type: 'patch', patch: patch})\n"
)
PAGE_POST = PANEL_POST.replace(
    "pyodideWorker.postMessage({type: 'patch', patch: patch})",
    "waitForAnswer()\n        postChange(patch, event)",
)
# The worker's answers and its "idle" go through NEXT_CHANGE_JS, which posts the
# change held back meanwhile with the answer (two in flight at most).
PANEL_IDLE = """\
        if (msg.type === 'idle') {
          if (pyodideWorker.queue.length) {
            const patch = pyodideWorker.jsdoc.create_json_patch(pyodideWorker.queue)
            pyodideWorker.busy = true
            pyodideWorker.queue = []
            pyodideWorker.postMessage({type: 'patch', patch: patch})
          } else {
            pyodideWorker.busy = false
          }
"""
PAGE_IDLE = """\
        if (msg.type === 'idle') {
          changeDone()
"""
PANEL_ANSWER = "        } else if (msg.type === 'patch') {\n"
PAGE_ANSWER = PANEL_ANSWER + "          postWithAnswer()\n"
PANEL_MESSAGE = "        const msg = event.data\n"
PAGE_MESSAGE = PANEL_MESSAGE + "        if (keepAhead(msg)) return\n"


# The worker waits for the page's word before it starts Python; the word carries the
# page's location and its touch points (static/status.html), which a worker's navigator
# lacks and the runtime reads to tell an iPad from a Mac (sitebuild.wheels).
START_GATE = (
    "self.addEventListener('message', function startWhenAsked(event) {\n"
    "  if (event.data?.type !== 'start') return;\n"
    "  self.removeEventListener('message', startWhenAsked);\n"
    "  self.pageTouchPoints = event.data.touchPoints ?? 0;\n"
    "  const pageLocation = event.data.location ?? null;\n"
    "  let appliedLocation = null;  // the location applied before the page asked\n"
)


def add_status(site: Path):
    """A visible loading / ready / failed status, fed by the worker's messages.

    The worker also waits for the page's word before it loads Pyodide, so that
    compiling 10 MB of wasm does not compete with drawing the prerendered plots,
    sends the document's changes one message per Python task (``app.worker``),
    handles the page's messages in the order they come, and says it is idle only
    when Python is done with a change. The page applies the changes the worker
    sends ahead of a move as it posts the move (``static/ahead.js``), and posts the
    change it held back while Python worked as Python's answer comes
    (``static/next_change.js``).
    """
    worker = site / "main.js"
    body = replace_once(worker.read_text(), PANEL_LINK, BATCHED_LINK, "Panel's worker")
    body = replace_once(body, PANEL_APPLY, PAGE_APPLY, "Panel's worker")
    body = replace_once(body, PANEL_RENDERED, PAGE_RENDERED, "Panel's worker")
    body = replace_once(body, PANEL_LOCATION, PAGE_LOCATION, "Panel's worker")
    prelude = SHARED_WORKER_JS.read_text() + WORKER_ERRORS_JS.read_text()
    worker.write_text(prelude + START_GATE + body + "\n});\n")
    from app.options import DEFAULTS

    status = STATUS_HTML.read_text().replace("PRERENDERED_SCENARIO", json.dumps(DEFAULTS))
    html_path = site / "index.html"
    page = replace_once(html_path.read_text(), PANEL_QUEUE, PAGE_QUEUE, "Panel's page")
    page = replace_once(page, PANEL_WORKER, LAB_WORKER_JS.read_text() + PAGE_WORKER, "Panel's page")
    scripts = AHEAD_JS.read_text() + NEXT_CHANGE_JS.read_text()
    page = replace_once(page, PANEL_PATCHING, PANEL_PATCHING + scripts, "Panel's page")
    page = replace_once(page, PANEL_POST, PAGE_POST, "Panel's page")
    page = replace_once(page, PANEL_IDLE, PAGE_IDLE, "Panel's page")
    page = replace_once(page, PANEL_ANSWER, PAGE_ANSWER, "Panel's page")
    page = replace_once(page, PANEL_MESSAGE, PAGE_MESSAGE, "Panel's page")
    host = "".join(
        f"<script>\n{script.read_text()}</script>\n" for script in (KEEP_SCENARIO_JS, EMBED_HOST_JS)
    )
    # First in the head: before the page's scripts, which hold every inline script
    # after them (sitebuild/page.py), and before anything of the page is drawn.
    charset = '<meta charset="utf-8">\n'
    page = replace_once(page, charset, charset + PLACEHOLDER_HTML.read_text(), "Panel's page")
    html_path.write_text(page.replace("</body>", host + status + "</body>"))


def name_shared_worker(site: Path):
    """Name the shared worker of ``site``'s embeds after the build (a hash of the
    worker's code, which holds the names of the snapshot's files): the embeds of a
    build share one Python, and never one of another build."""
    digest = hashlib.sha256((site / "main.js").read_bytes()).hexdigest()[:16]
    html_path = site / "index.html"
    page = replace_once(html_path.read_text(), LAB_BUILD, json.dumps(digest), "the page")
    html_path.write_text(page)
