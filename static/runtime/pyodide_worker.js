{% include "shared_worker.js" %}
{% include "worker_errors.js" %}
self.addEventListener('message', function startWhenAsked(event) {
  if (event.data?.type !== 'start') return;
  self.removeEventListener('message', startWhenAsked);
  self.pageTouchPoints = event.data.touchPoints ?? 0;
  const pageLocation = event.data.location ?? null;
  let appliedLocation = null;  // the location applied before the page asked
importScripts("{{ PYODIDE_URL }}");

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
  self.pyodide = await loadPyodide();
  self.pyodide.globals.set("sendPatch", sendPatch);
  console.log("Loaded pyodide!");
  const data_archives = [{{ data_archives }}];
  for (const archive of data_archives) {
    let zipResponse = await fetch(archive);
    let zipBinary = await zipResponse.arrayBuffer();
    self.postMessage({type: 'status', msg: `Unpacking ${archive}`})
    self.pyodide.unpackArchive(zipBinary, "zip");
  }
  await self.pyodide.loadPackage("micropip");
  self.postMessage({type: 'status', msg: `Installing environment`})
  try {
    await self.pyodide.runPythonAsync(`
      import micropip
      await micropip.install([{{ env_spec }}]);
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
    const [docs_json, render_items, root_ids] = await self.pyodide.runPythonAsync(`{{ code }}`)
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
  if (msg.type === 'rendered') {
    self.pyodide.runPython(`
    from panel.io.state import state
    from app.worker import link_document

    link_document(state.curdoc, sendPatch, setter='js', post=globals().get('postToPage'))
    `)
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
