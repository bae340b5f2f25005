// The worker boots Python from the build's memory snapshot (snapshot/, made by
// static/make_snapshot.js): the interpreter with Panel, Bokeh, numpy and the app
// imported and the page's document already built. build.py puts this at the top
// of the worker, so the downloads start as soon as the worker exists; restoring
// waits for the page's word to start, after the prerendered plots are drawn.
// If the snapshot cannot be used, restoreSnapshot says why in the status and
// returns null, and the worker boots Python the slow way.
const SNAPSHOT = './snapshot/';
const STDLIB = './pyodide/python_stdlib.zip';
// The first word of a Pyodide 0.27 snapshot. Restoring anything else would not
// fail but hang (Pyodide sizes the wasm memory from it), so it is checked first;
// Pyodide itself checks the build id that follows.
const SNAPSHOT_MAGIC = 1886286592;

// The snapshot's files download as soon as the worker exists (the network is
// idle while the page draws its prerendered plots); they are decompressed only
// once the page says start, so that the CPU goes to drawing first.
async function download(name) {
  const response = await fetchFromSite(named(SNAPSHOT + name), {signal: snapshotAborted.signal});
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// A host that serves .gz files with Content-Encoding: gzip has the browser
// decompress them already; then the bytes are used as they are. Otherwise they are
// decompressed chunk by chunk, and their length is what gzip's trailer says (its
// last four bytes).
const isGzip = (bytes) => bytes[0] === 0x1f && bytes[1] === 0x8b;

function decompressedSize(bytes) {
  if (!isGzip(bytes)) return bytes.length;
  return new DataView(bytes.buffer, bytes.byteOffset + bytes.byteLength - 4).getUint32(0, true);
}

async function* decompressedChunks(bytes) {
  if (!isGzip(bytes)) {
    yield bytes;
    return;
  }
  const source = new ReadableStream({ start(c) { c.enqueue(bytes); c.close(); } });  // no copy
  const reader = source.pipeThrough(new DecompressionStream('gzip')).getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) yield chunk.value;
}

// A download decompressed into one array of its size, so that the chunks and
// their concatenation are never held at once.
async function gunzip(bytes) {
  const out = new Uint8Array(decompressedSize(bytes));
  let filled = 0;
  for await (const chunk of decompressedChunks(bytes)) {
    if (filled + chunk.length > out.length) throw new Error('a download is longer than its gzip trailer says');
    out.set(chunk, filled);
    filled += chunk.length;
  }
  if (filled !== out.length) throw new Error('a download is shorter than its gzip trailer says');
  return out;
}

// A Pyodide 0.27 snapshot is a header (the magic, then the offset of the memory
// image, then the build id and JSON) and the image of the wasm memory. The image
// goes from the decompressor straight into the new wasm memory: it is never whole
// in a JS array beside that memory (90 MB less at the peak), and its pages of
// zeros are not written where the memory already reads zeros, so they take no
// resident memory (29 MB). Pyodide is given the header alone and told the
// memory's size (PyodideSnapshot.install).
const PAGE = 4096;

function isZero(bytes) {
  const aligned = bytes.byteOffset % 4 === 0 && bytes.length % 4 === 0;
  const words = aligned ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) : bytes;
  for (let i = 0; i < words.length; i++) if (words[i] !== 0) return false;
  return true;
}

async function openSnapshot(bytes) {
  const size = decompressedSize(bytes);
  const chunks = decompressedChunks(bytes);
  let header = new Uint8Array(0);
  for (;;) {
    const next = await chunks.next();
    if (next.done) throw new Error('snapshot.bin.gz ends inside its header');
    const longer = new Uint8Array(header.length + next.value.length);
    longer.set(header);
    longer.set(next.value, header.length);
    header = longer;
    if (header.length < 8) continue;
    const view = new DataView(header.buffer);
    if (view.getUint32(0, true) !== SNAPSHOT_MAGIC) {
      throw new Error('snapshot.bin.gz is not a Pyodide memory snapshot');
    }
    const imageStart = view.getUint32(4, true);
    if (header.length < imageStart) continue;
    const first = header.subarray(imageStart);
    return {
      size,
      header: header.slice(0, imageStart),
      // Write the memory image into `heap` (the module's HEAPU8), page by page.
      async writeImage(heap) {
        let at = 0;
        const write = (piece) => {
          if (at + piece.length > heap.length) throw new Error('the snapshot is larger than its memory');
          for (let start = 0; start < piece.length;) {
            const end = Math.min(piece.length, start + PAGE - ((at + start) % PAGE));
            const source = piece.subarray(start, end);
            const target = heap.subarray(at + start, at + end);
            if (!isZero(source)) target.set(source);
            else if (!isZero(target)) target.fill(0);  // the runtime's start-up wrote here
            start = end;
          }
          at += piece.length;
        };
        write(first);
        for await (const chunk of chunks) write(chunk);
        if (at !== size - imageStart) throw new Error('snapshot.bin.gz is shorter than its gzip trailer says');
      },
    };
  }
}

// The files the pack keeps elsewhere (sitebuild/snapshot.py's SESSION_FILES says
// which it holds): each is fetched, whole and synchronously, the first time Python
// reads it, as Python's file reads are synchronous. A worker may make such a request.
function fetchElsewhere(path) {
  const request = new XMLHttpRequest();
  const url = SNAPSHOT + 'site-packages/' + path.split('/').map(encodeURIComponent).join('/');
  request.open('GET', url, false);
  request.responseType = 'arraybuffer';
  request.send();
  if (request.status !== 200) throw new Error(`HTTP ${request.status}`);
  return new Uint8Array(request.response);
}

// The site's service worker keeps the site for the next visit (static/service_worker.js).
// The snapshot is larger than some browsers' HTTP caches keep, where the service worker
// would look for it, so this worker hands its two downloads to the service worker's
// cache of files named by their content itself, when the page asks ("keep", once the
// learner has paused), and then says so ("kept"); the page then registers the service
// worker (static/register_service_worker.js). Until then it holds them (23 MB).
const NAMED_BY_CONTENT = 'attention-scaling-lab-named-by-content';
let downloadsToKeep = null;  // [name, bytes] of each, once Python is restored

async function keepForNextVisit(downloads) {
  try {
    const cache = self.caches ? await caches.open(NAMED_BY_CONTENT) : null;
    for (const [name, bytes] of cache ? downloads : []) {
      const url = new URL(named(SNAPSHOT + name), self.location.href).href;
      if (!(await cache.match(url))) await cache.put(url, new Response(bytes));
    }
  } catch (error) {
    console.info('The snapshot is not kept for the next visit:', error.message);
  } finally {
    self.postMessage({type: 'kept'});
  }
}

self.addEventListener('message', (event) => {
  if (event.data?.type !== 'keep') return;
  keepForNextVisit(downloadsToKeep ?? []);
  downloadsToKeep = null;
});

const snapshotAborted = new AbortController();
let snapshotDownloads = Promise.all([download('snapshot.bin.gz'), download('site-packages.pack.gz')]);
// One failed download makes the other useless; restoreSnapshot reports the failure.
snapshotDownloads.catch(() => snapshotAborted.abort());

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
    const downloads = snapshotDownloads;
    snapshotDownloads = null;  // a promise keeps its value: 30 MB of bytes no use once read
    const [snapshotBytes, packBytes] = await downloads;
    importScripts(await runtimeScript('pyodide.asm.js'), named(SNAPSHOT + 'snapshot.js'));
    const pack = PyodideSnapshot.parsePack(await gunzip(packBytes));
    const snapshot = await openSnapshot(snapshotBytes);
    hook = PyodideSnapshot.install(pack, pack.preload, snapshot, fetchElsewhere);
    const pyodide = await loadPyodide({
      stdLibURL: named(STDLIB),
      _loadSnapshot: snapshot.header, _snapshotDeserializer: PyodideSnapshot.deserializer,
    });
    pyodide.runPython(RESEED);
    downloadsToKeep = [['snapshot.bin.gz', snapshotBytes], ['site-packages.pack.gz', packBytes]];
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
