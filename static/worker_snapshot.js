// The worker boots Python from the build's memory snapshot (snapshot/, made by
// static/make_snapshot.js): the interpreter with Panel, Bokeh, numpy and the app
// imported and the page's document already built. build.py puts this at the top
// of the worker, so the downloads start as soon as the worker exists; restoring
// waits for the page's word to start, after the prerendered plots are drawn.
// If the snapshot cannot be used, restoreSnapshot says why in the status and
// returns null, and the worker boots Python the slow way.
const SNAPSHOT = './snapshot/';
// The first word of a Pyodide 0.27 snapshot. Restoring anything else would not
// fail but hang (Pyodide sizes the wasm memory from it), so it is checked first;
// Pyodide itself checks the build id that follows.
const SNAPSHOT_MAGIC = 1886286592;

// The snapshot's files download as soon as the worker exists (the network is
// idle while the page draws its prerendered plots); they are decompressed only
// once the page says start, so that the CPU goes to drawing first.
async function download(name) {
  const response = await fetchFromSite(SNAPSHOT + name, {signal: snapshotAborted.signal});
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// A host that serves .gz files with Content-Encoding: gzip has the browser
// decompress them already; then the bytes are used as they are. Otherwise they are
// decompressed chunk by chunk into one array of the size gzip's trailer gives
// (its last four bytes), so that the chunks and their concatenation (the snapshot
// twice over, 180 MB) are never held at once.
async function gunzip(bytes) {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const size = new DataView(bytes.buffer, bytes.byteLength - 4).getUint32(0, true);
  const out = new Uint8Array(size);
  const source = new ReadableStream({ start(c) { c.enqueue(bytes); c.close(); } });  // no copy
  const stream = source.pipeThrough(new DecompressionStream('gzip'));
  const reader = stream.getReader();
  let filled = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    if (filled + chunk.value.length > size) throw new Error('a download is longer than its gzip trailer says');
    out.set(chunk.value, filled);
    filled += chunk.value.length;
  }
  if (filled !== size) throw new Error('a download is shorter than its gzip trailer says');
  return out;
}

const snapshotAborted = new AbortController();
let snapshotDownloads = Promise.all([download('snapshot.bin.gz'), download('site-packages.pack.gz')]);
// One failed download makes the other useless; restoreSnapshot reports the failure.
snapshotDownloads.catch(() => snapshotAborted.abort());

// The snapshot and the pack, decompressed one after the other, each let go of in
// its compressed form as soon as it is decompressed (a promise keeps its value:
// 30 MB of bytes no use once decompressed).
async function decompressedDownloads() {
  const downloads = snapshotDownloads;
  snapshotDownloads = null;
  const files = await downloads;
  for (let i = 0; i < files.length; i++) files[i] = await gunzip(files[i]);
  return files;
}

// What the snapshot froze and a visitor expects fresh: the random generators'
// state ("New draw" would give every visitor the same seed). Clocks and the
// time zone are read from JS at each call, so they are live. (The hash seed
// stays fixed: hash randomisation guards servers from crafted keys, and this
// interpreter serves one page.)
const RESEED = `
import random
import numpy
random.seed()
numpy.random.seed()
`;

async function restoreSnapshot() {
  let hook = null;
  try {
    if (typeof DecompressionStream !== 'function') throw new Error('no DecompressionStream');
    self.postMessage({type: 'status', msg: 'Restoring the saved Python session'});
    const [snapshot, packBytes] = await decompressedDownloads();
    if (snapshot.length < 64 || new DataView(snapshot.buffer).getUint32(0, true) !== SNAPSHOT_MAGIC) {
      throw new Error('snapshot.bin.gz is not a Pyodide memory snapshot');
    }
    importScripts('./pyodide/pyodide.asm.js', SNAPSHOT + 'snapshot.js');
    const pack = PyodideSnapshot.parsePack(packBytes);
    hook = PyodideSnapshot.install(pack, pack.preload);
    const pyodide = await loadPyodide({
      _loadSnapshot: snapshot, _snapshotDeserializer: PyodideSnapshot.deserializer,
    });
    // Pyodide keeps its options for good, and the snapshot (90 MB) is in the wasm
    // memory now: drop the options' reference to it.
    delete pyodide._api.config._loadSnapshot;
    pyodide.runPython(RESEED);
    return pyodide;
  } catch (error) {
    hook?.uninstall();
    const reason = String(error?.message ?? error).split('\n')[0];
    console.warn('The saved Python session could not be used:', error);
    self.postMessage({type: 'status', msg: `Starting Python from scratch (${reason})`});
    return null;
  }
}

// The document the snapshot holds, sent as the converter's worker sends it.
function postSnapshotDocument(pyodide) {
  const [docs_json, render_items, root_ids] = pyodide.globals.get('_SNAPSHOT_DOC').toJs();
  self.postMessage({type: 'render', docs_json, render_items, root_ids});
}
