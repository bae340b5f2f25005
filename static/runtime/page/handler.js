// The page's side of the lab's worker: Panel 1.9.4's pyodide_handler.js (pinned by its
// sha256 in tests/test_build.py), the project's own, bundled by the build with the
// modules it imports (sitebuild/bundle.py) into a script of the page, filled with
// Panel's variables where Panel's converter renders its template
// (sitebuild/runtime.py). Its changes to Panel's:
// - the worker is the shared one of a course page's embeds where the browser allows
//   it, else the page's own (./worker.js, ./lab_worker.js);
// - the page applies the changes the worker sent ahead of a move as it posts the
//   move (./ahead.js), and posts the change it held back while Python worked as
//   Python's answer comes (./next_change.js): two changes in flight at most;
// - while the worker is busy, every change waits, and repeats merge: the latest value
//   of a property wins, and repeated clicks of a button tagged "merged-clicks"
//   (sitebuild.runtime.MERGED_CLICKS: "New draw", where ten new draws show what one
//   does) are one; any other button's clicks all go (three quick clicks on "Next"
//   are three sections on). Panel's queued only property changes, so ten quick
//   clicks on "New draw" queued ten full updates in the worker.
// The messages are in static/PROTOCOL.md.
import {keepAhead, postChange} from './ahead.js';
import {changeDone, postWithAnswer, waitForAnswer} from './next_change.js';
import {applyingPatch, patching, pyodideWorker} from './worker.js';

// Panel's loading spinner, the class its page's body has until the document is drawn
// (filled in by the build: sitebuild/runtime.py).
const LOADING_SPINNER = __LAB_LOADING_SPINNER__;

function send_change(jsdoc, event) {
  if ((event.setter_id != null && event.setter_id == 'py') || patching()) {
    return
  } else if (pyodideWorker.busy) {
    const merged = (id) => jsdoc.get_model_by_id(id)?.tags.includes("merged-clicks")
    const key = (e) => e.model ? `${e.model.id}.${e.attr}`
      : merged(e.msg_data?.origin?.id) ? `${e.msg_data.origin.id}:${e.msg_data.event_name}` : null
    const same = (a, b) => key(a) !== null && key(a) === key(b)
    let events = []
    for (const old_event of pyodideWorker.queue) {
      if (!same(old_event, event)) {
        events.push(old_event)
      }
    }
    events.push(event)
    pyodideWorker.queue = events
    return
  }
  const patch = jsdoc.create_json_patch([event])
  pyodideWorker.busy = true
  waitForAnswer()
  postChange(patch, event)
}

pyodideWorker.onmessage = async (event) => {
  const msg = event.data
  if (keepAhead(msg)) return

  const body = document.getElementsByTagName('body')[0]
  const loading_msgs = document.getElementsByClassName('pn-loading-msg')
  if (msg.type === 'idle') {
    changeDone()
  } else if (msg.type === 'status') {
    let loading_msg
    if (loading_msgs.length) {
      loading_msg = loading_msgs[0]
    } else if (body.classList.contains('pn-loading')) {
      loading_msg = document.createElement('div')
      loading_msg.classList.add('pn-loading-msg')
      body.appendChild(loading_msg)
    }
    if (loading_msg != null) {
      loading_msg.innerHTML = msg.msg
    }
  } else if (msg.type === 'render') {
    const docs_json = JSON.parse(msg.docs_json)
    const render_items = JSON.parse(msg.render_items)
    const root_ids = JSON.parse(msg.root_ids)

    // Remap roots in message to element IDs
    const root_els = document.querySelectorAll('[data-root-id]')
    const data_roots = []
    for (const el of root_els) {
       el.innerHTML = ''
       data_roots.push([el.getAttribute('data-root-id'), el.id])
    }
    data_roots.sort((a, b) => a[0]<b[0] ? -1: 1)
    const roots = {}
    for (let i=0; i<data_roots.length; i++) {
      roots[root_ids[i]] = data_roots[i][1]
    }
    render_items[0]['roots'] = roots
    render_items[0]['root_ids'] = root_ids

    // Clear pre-rendered contents
    Bokeh.index.roots.map((v) => v.remove())

    // Embed content
    const [views] = await Bokeh.embed.embed_items(docs_json, render_items)

    // Remove loading spinner and message
    body.classList.remove("pn-loading", LOADING_SPINNER)
    for (const loading_msg of loading_msgs) {
      loading_msg.remove()
    }

    // Setup bi-directional syncing
    const jsdoc = pyodideWorker.jsdoc = [...views.roots.values()][0].model.document
    jsdoc.on_change(send_change.bind(null, jsdoc), false)
    pyodideWorker.postMessage({'type': 'rendered'})
    pyodideWorker.postMessage({'type': 'location', location: JSON.stringify(window.location)})
  } else if (msg.type === 'patch') {
    postWithAnswer()
    applyingPatch(() => pyodideWorker.jsdoc.apply_json_patch(msg.patch, msg.buffers))
  }
};
