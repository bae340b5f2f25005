// The lab's worker (main.js): Panel 1.9.4's pyodide_worker.js (pinned by its sha256 in
// tests/test_build.py), the project's own, bundled by the build with the modules it
// imports (sitebuild/bundle.py) and filled with Panel's variables where Panel's
// converter renders its template (sitebuild/runtime.py). Its changes to Panel's:
// - it runs as a SharedWorker too, one Python for a course page's embeds (./shared.js);
// - a file that fails to load (Pyodide's wasm hangs on it instead of failing) or an
//   error in an async step is said as a status, which the page shows as failed,
//   rather than left loading for good (./errors.js);
// - the self-contained site's worker boots Python from the build's memory snapshot
//   (./snapshot.js; the runtime fetched compressed, ./runtime.js), its downloads
//   started as the worker starts; the CDN variant's boots as Panel's does;
// - it waits for the page's word ('start') before it starts Python, so that compiling
//   10 MB of wasm does not compete with drawing the prerendered plots; the word
//   carries the page's location and touch points, which a worker's navigator lacks
//   and the runtime reads to tell an iPad from a Mac (sitebuild/wheels.py);
// - the page's messages are handled in the order they come, and at once
//   (runPython, not runPythonAsync), the document's changes go one message per
//   Python task (app/worker.py), and it says it is idle only once Python is done
//   with a change.
// The messages are in static/PROTOCOL.md.
import {reportFailures} from './errors.js';
import {fetchRuntimeCompressed, named} from './runtime.js';
import {shareAmongPages} from './shared.js';
import {
  JSPI,
  STDLIB,
  hasSnapshot,
  postSnapshotDocument,
  restoreSnapshot,
  startSnapshotDownloads,
} from './snapshot.js';

// Panel's converter's variables (filled in by the build: sitebuild/runtime.py): where
// Pyodide is, the archives and requirements to install, and the app's Python.
const PANEL = __LAB_PANEL__;

shareAmongPages();
reportFailures();
if (hasSnapshot) {
  fetchRuntimeCompressed();
  startSnapshotDownloads();
}

self.addEventListener('message', function startWhenAsked(event) {
  if (event.data?.type !== 'start') return;
  self.removeEventListener('message', startWhenAsked);
  self.pageTouchPoints = event.data.touchPoints ?? 0;
  const pageLocation = event.data.location ?? null;
  let appliedLocation = null;  // the location applied before the page asked
  importScripts(PANEL.pyodideUrl);

  function sendPatch(patch, buffers, msg_id) {
    self.postMessage({
      type: 'patch',
      patch: patch,
      buffers: buffers
    })
  }

  async function startApplication() {
    console.log("Loading pyodide...");
    self.postMessage({type: 'status', msg: 'Loading pyodide'})
    // From the snapshot when it can. Then, while the page draws the document it sent,
    // Python applies the page's location to it (a link's scenario): the changes wait
    // in the held document and go to the page as one patch once it has rendered, and
    // the page's own location message, the same, is not applied again
    // (appliedLocation). Before, the worker computed a link's scenario only after the
    // page had drawn the default one.
    if (hasSnapshot) {
      self.pyodide = await restoreSnapshot();
      if (self.pyodide) {
        self.pyodide.globals.set("sendPatch", sendPatch);
        postSnapshotDocument(self.pyodide);
        // (the page that gets it: the one that asked, or another on the screen, which
        // ./shared.js says)
        const startLocation = self.startingPage?.location ?? pageLocation;
        if (startLocation) {
          self.onmessage({data: {type: 'location', location: startLocation}});
          appliedLocation = startLocation;
        }
        return;
      }
      self.pyodide = await loadPyodide({stdLibURL: named(STDLIB), enableRunUntilComplete: JSPI});
    } else {
      self.pyodide = await loadPyodide();
    }
    self.pyodide.globals.set("sendPatch", sendPatch);
    console.log("Loaded pyodide!");
    for (const archive of PANEL.dataArchives) {
      let zipResponse = await fetch(archive);
      let zipBinary = await zipResponse.arrayBuffer();
      self.postMessage({type: 'status', msg: `Unpacking ${archive}`})
      self.pyodide.unpackArchive(zipBinary, "zip");
    }
    await self.pyodide.loadPackage("micropip");
    self.postMessage({type: 'status', msg: `Installing environment`})
    try {
      // (a JSON list of strings is a Python list)
      await self.pyodide.runPythonAsync(`
        import micropip
        await micropip.install(${JSON.stringify(PANEL.requirements)});
      `);
    } catch(e) {
      console.log(e)
      self.postMessage({
        type: 'status',
        msg: `Error while installing packages`
      });
    }
    console.log("Environment loaded!");
    self.postMessage({type: 'status', msg: 'Executing code'})
    try {
      const [docs_json, render_items, root_ids] = await self.pyodide.runPythonAsync(PANEL.code)
      self.postMessage({
        type: 'render',
        docs_json: docs_json,
        render_items: render_items,
        root_ids: root_ids
      })
    } catch(e) {
      const traceback = `${e}`
      const tblines = traceback.split('\n')
      self.postMessage({
        type: 'status',
        msg: tblines[tblines.length-2]
      });
      throw e
    }
  }

  self.onmessage = async (event) => {
    const msg = event.data
    // "rendered" (link the document) and the page's URL run at once, as its changes
    // do: while those two were queued (runPythonAsync) and a change was not, a change
    // right behind them (a layout change the page makes as it draws) ran before the
    // document was linked, and the page said it failed (3 loads in 45 in WebKit).
    // Panel's link sends one message per Bokeh event; app.worker's, one per Python task.
    if (msg.type === 'rendered') {
      self.pyodide.runPython(`
      from panel.io.state import state
      from app.worker import link_document

      link_document(state.curdoc, sendPatch, setter='js', post=globals().get('postToPage'))
      `)
    // The page's change, applied through app.worker's link: after Python's pending
    // changes are sent (else the models they add are counted as synced unsent), and
    // without those to models that left the document (a closed section's figures),
    // which made Bokeh drop the whole merged patch (app/patches.py). Applied at once,
    // not queued behind the event loop's tasks (a slice of the background training),
    // with what the page applied ahead for it (app/look_ahead.py). Panel's worker said
    // it was idle as soon as it had started on a change, so the page sent the next at
    // once and a drag's changes piled up behind Python; said once Python is done (and
    // its reply sent), the page holds back and merges what comes meanwhile.
    } else if (msg.type === 'patch') {
      self.pyodide.globals.set('patch', msg.patch)
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
    } else if (msg.type === 'location') {
      // A location the worker applied as Python started (the snapshot's boot, which
      // applies the page's location before the page has drawn) is not applied again.
      if (msg.location === appliedLocation) return;
      self.pyodide.globals.set('location', msg.location)
      self.pyodide.runPython(`
      import json
      from panel.io.state import state
      from panel.util import edit_readonly
      if state.location:
          loc_data = json.loads(location)
          with edit_readonly(state.location):
              state.location.param.update({
                  k: v for k, v in loc_data.items() if k in state.location.param
              })
      `)
    }
  }

  startApplication()
});
