// The worker boots Python from the build's memory snapshot (snapshot/, made by
// static/make_snapshot.js): the interpreter with Panel, Bokeh, numpy and the app
// imported and the page's document already built. The worker starts the downloads
// as soon as it exists (startSnapshotDownloads); restoring waits for the page's word
// to start, after the prerendered plots are drawn. If the snapshot cannot be used,
// restoreSnapshot says why in the status and returns null, and the worker boots
// Python the slow way.
import {NAMED_BY_CONTENT} from '../caches.js';
import {fetchFromSite} from './errors.js';
import {RUNTIME, named, runtimeDownloads, runtimeScript} from './runtime.js';

// The build's snapshot (sitebuild/snapshot.py, filled in as sitebuild/fills.py says):
// the bytes of each of its files and of what each holds, {'snapshot.bin.gz': bytes,
// ..., 'snapshot.bin': bytes}, and where the restored standard library's zeros are,
// [[start, end], ...]; null in a site without one (the CDN variant).
const BUILT = __LAB_SNAPSHOT__;
export const hasSnapshot = BUILT !== null;
const SNAPSHOT = './snapshot/';
export const STDLIB = './pyodide/python_stdlib.zip';
// The standard library restored with: STDLIB with zeros but for the members a session
// reads (sitebuild/snapshot.py's sparse_stdlib); where Python reads there after all (a
// traceback's source lines, a module no session imports), the whole of STDLIB is
// fetched first.
const SPARSE_STDLIB = './pyodide/python_stdlib.sparse.zip';
// The first word of a Pyodide 0.27 snapshot. Restoring anything else would not
// fail but hang (Pyodide sizes the wasm memory from it), so it is checked first;
// Pyodide itself checks the build id that follows.
const SNAPSHOT_MAGIC = 1886286592;
// Pyodide 0.27 runs asyncio's run_until_complete by stack switching (JSPI) unless told
// not to, and a call of it crashes a browser without JSPI (Firefox, Safari): there it
// only schedules the coroutine, as before 0.27 (pyodide.webloop reads this at each call,
// so it holds for a restored snapshot too).
export const JSPI = 'Suspending' in WebAssembly || 'Suspender' in WebAssembly;

// The snapshot comes compressed twice (sitebuild/snapshot.py): with gzip, which the
// browser decompresses natively, and with zstd, fewer bytes that fzstd, in JS,
// decompresses as they arrive. Over a fast link gzip is sooner; over a slow one zstd:
// its fewer bytes take longer to come than its decoding, which runs while they do. The
// worker starts the gzip download and measures it for MEASURE_MS from its first byte:
// where the rest of it would take longer than the zstd file plus ZSTD_EXTRA_S, it
// fetches the zstd file instead. (Why these two, and not starting with zstd: the
// measurements in docs/benchmarks.md, "Behind the code's constants".)
const ZSTD_EXTRA_S = 0.6;  // fzstd's time beyond the browser's gzip
const MEASURE_MS = 100;

// A download of a file of the site (a path in it) kept chunk by chunk as it comes: the
// restore decompresses it while it goes on (`chunks`), and the service worker's cache
// gets it whole afterwards (`blob`).
export function streamedDownload(path) {
  const name = path.split('/').pop();
  const received = [];
  let ended = false;
  let failure = null;
  let wake = () => {};
  const aborted = new AbortController();
  const download = {
    path, name, length: 0, firstByteAt: null,
    abort: () => aborted.abort(),
    blob: () => new Blob(received),
    async *chunks() {
      if (ended && !failure && received.length > 1) {
        // come whole already (as on localhost): one piece decompresses 150 ms sooner
        const whole = new Uint8Array(download.length);
        received.reduce((at, chunk) => (whole.set(chunk, at), at + chunk.length), 0);
        received.splice(0, received.length, whole);  // the pieces go
      }
      for (let i = 0; ; i++) {
        while (i === received.length && !ended) await new Promise((resolve) => { wake = resolve; });
        if (i < received.length) yield received[i];
        else if (failure) throw failure;
        else return;
      }
    },
  };
  let firstByte;
  download.firstByte = new Promise((resolve) => { firstByte = resolve; });
  download.done = (async () => {
    try {
      const response = await fetchFromSite(named(path), {signal: aborted.signal});
      if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
      const reader = response.body.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        download.firstByteAt ??= performance.now();
        received.push(chunk.value);
        download.length += chunk.value.length;
        firstByte();
        wake();
      }
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      ended = true;
      firstByte();
      wake();
    }
  })();
  download.done.catch(() => {});  // restoreSnapshot reports a failure
  download.ended = () => ended;
  download.failed = () => failure !== null;
  return download;
}

// The snapshot's download: the one this browser kept from an earlier visit, else gzip,
// or zstd over a slow link.
async function snapshotDownload() {
  const kept = await keptSnapshot();
  if (kept) return streamedDownload(SNAPSHOT + kept);
  const gzip = streamedDownload(SNAPSHOT + 'snapshot.bin.gz');
  await gzip.firstByte;
  await Promise.race([gzip.done.catch(() => {}), new Promise((r) => setTimeout(r, MEASURE_MS))]);
  if (gzip.ended()) return gzip;
  const rate = gzip.length / ((performance.now() - gzip.firstByteAt) / 1e3);  // bytes a second
  const rest = BUILT.sizes['snapshot.bin.gz'] - gzip.length;
  if (rest / rate <= BUILT.sizes['snapshot.bin.zst'] / rate + ZSTD_EXTRA_S) return gzip;
  gzip.abort();
  return streamedDownload(SNAPSHOT + 'snapshot.bin.zst');
}

// The chunks of an async iterator as a stream.
function streamOf(chunks) {
  return new ReadableStream({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
}

// A download's decompressed chunks, by its first bytes: gzip, zstd, or (where the host
// sent it with Content-Encoding and the browser decompressed it) as it comes.
async function* decompressedChunks(download) {
  const compressed = download.chunks();
  const heads = [];  // the first four bytes tell; a first chunk may be shorter
  for (let length = 0; length < 4;) {
    const next = await compressed.next();
    if (next.done) break;
    heads.push(next.value);
    length += next.value.length;
  }
  if (heads.length === 0) return;
  const head = heads.length === 1 ? heads[0] : new Uint8Array(await new Blob(heads).arrayBuffer());
  async function* all() {
    yield head;
    yield* compressed;
  }
  if (head[0] === 0x1f && head[1] === 0x8b) {
    const reader = streamOf(all()).pipeThrough(new DecompressionStream('gzip')).getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) yield chunk.value;
  } else if (head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) {
    if (typeof fzstd === 'undefined') importScripts(named(SNAPSHOT + 'fzstd.js'));
    let decoded = [];
    const decoder = new fzstd.Decompress((chunk) => decoded.push(chunk));
    for await (const chunk of all()) {
      decoder.push(chunk);
      yield* decoded;
      decoded = [];
    }
    decoder.push(new Uint8Array(0), true);  // throws if the data ended inside a frame
    yield* decoded;
  } else {
    yield* all();
  }
}

// A download decompressed, in one array (the pack, the standard library: a few MB).
async function decompressed(download) {
  const chunks = [];
  for await (const chunk of decompressedChunks(download)) chunks.push(chunk);
  return new Uint8Array(await new Blob(chunks).arrayBuffer());
}

// A Pyodide 0.27 snapshot is a header (the magic, then the offset of the memory
// image, then the build id and JSON) and the image of the wasm memory. The image
// goes from the decompressor straight into the new wasm memory as the download comes:
// it is never whole in a JS array beside that memory (90 MB less at the peak), and its
// pages of zeros are not written where the memory already reads zeros, so they take no
// resident memory (29 MB). Pyodide is given the header alone and told the
// memory's size (PyodideSnapshot.install).
export const PAGE = 4096;

export function isZero(bytes) {
  const aligned = bytes.byteOffset % 4 === 0 && bytes.length % 4 === 0;
  const words = aligned ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) : bytes;
  for (let i = 0; i < words.length; i++) if (words[i] !== 0) return false;
  return true;
}

export async function openSnapshot(download) {
  const size = BUILT.sizes['snapshot.bin'];
  const chunks = decompressedChunks(download);
  let header = new Uint8Array(0);
  for (;;) {
    const next = await chunks.next();
    if (next.done) throw new Error(`${download.name} ends inside its header`);
    const longer = new Uint8Array(header.length + next.value.length);
    longer.set(header);
    longer.set(next.value, header.length);
    header = longer;
    if (header.length < 8) continue;
    const view = new DataView(header.buffer);
    if (view.getUint32(0, true) !== SNAPSHOT_MAGIC) {
      throw new Error(`${download.name} is not a Pyodide memory snapshot`);
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
        if (at !== size - imageStart) throw new Error(`${download.name} is shorter than it should be`);
      },
    };
  }
}

// A file of the site, whole and synchronously, as Python's file reads are (a worker
// may make such a request); ``headers`` say why, to the server's log.
function fetchWhole(path, headers = {}) {
  const request = new XMLHttpRequest();
  request.open('GET', named(path), false);
  for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value);
  request.responseType = 'arraybuffer';
  request.send();
  if (request.status !== 200) throw new Error(`HTTP ${request.status}`);
  return new Uint8Array(request.response);
}

// The files the pack keeps elsewhere (sitebuild/snapshot.py's SESSION_FILES says
// which it holds): each is fetched the first time Python reads it.
const fetchElsewhere = (path) =>
  fetchWhole(SNAPSHOT + 'site-packages/' + path.split('/').map(encodeURIComponent).join('/'));

// Python's standard library zip, as restored, has zeros where `zeros` says: the first
// read that touches them has the whole zip fetched (`fetch(position)`) and read instead.
// Emscripten's MEMFS reads a file's bytes through its node's stream_ops, which every
// file opened after this gets (Python opens the zip anew for each read).
function wholeWhereZeros(pyodide, zeros, fetch) {
  const zip = pyodide.runPython('import sys; next(p for p in sys.path if p.endswith(".zip"))');
  const node = pyodide.FS.lookupPath(zip).node;
  const ops = node.stream_ops;
  node.stream_ops = {
    ...ops,
    read(stream, buffer, offset, length, position) {
      if (zeros.some(([start, end]) => position < end && position + length > start)) {
        console.info(`${STDLIB}: Python reads a part the restored copy lacks; fetching it whole`);
        try {
          node.contents = fetch(position);
        } catch (error) {
          console.warn(error);
          throw new pyodide.FS.ErrnoError(29);  // EIO: Python raises OSError
        }
        node.usedBytes = node.contents.length;
        zeros = [];
      }
      return ops.read(stream, buffer, offset, length, position);
    },
  };
}

// The site's service worker keeps the site for the next visit (static/service_worker.js).
// The snapshot is larger than some browsers' HTTP caches keep, where the service worker
// would look for it, and only the page's worker knows which of its two compressions
// it fetched, so it hands its downloads (the snapshot, the pack, the wasm) to the
// service worker's cache of files named by their content itself, when the page asks
// ("keep", once the learner has paused), and then says so ("kept"); the page then
// registers the service worker (static/register_service_worker.js). Until then it
// holds them (19 to 26 MB).
const cachedUrl = (path) => new URL(named(path), self.location.href).href;
let downloadsToKeep = null;  // the downloads, once Python is restored

async function keepForNextVisit(downloads) {
  try {
    const cache = self.caches ? await caches.open(NAMED_BY_CONTENT) : null;
    for (const download of cache ? downloads : []) {
      const url = cachedUrl(download.path);
      if (!(await cache.match(url))) await cache.put(url, new Response(download.blob()));
    }
  } catch (error) {
    console.info('The snapshot is not kept for the next visit:', error.message);
  } finally {
    self.postMessage({type: 'kept'});
  }
}

// The compression of the snapshot an earlier visit kept, if one did.
async function keptSnapshot() {
  try {
    if (!(await caches.has(NAMED_BY_CONTENT))) return null;
    const cache = await caches.open(NAMED_BY_CONTENT);
    for (const name of ['snapshot.bin.zst', 'snapshot.bin.gz']) {
      if (await cache.match(cachedUrl(SNAPSHOT + name))) return name;
    }
  } catch {
    // no caches here: plain HTTP, or a frame whose storage the browser blocks
  }
  return null;
}

// The downloads the restore takes, started by startSnapshotDownloads.
let stdlibDownload, chosenSnapshot, chosenPack, chosenWasm;

// Start the snapshot's downloads and the rest the restore takes (the standard library,
// the pack, Pyodide's wasm), and hand them to the service worker's cache when the page
// asks ('keep').
export function startSnapshotDownloads() {
  stdlibDownload = streamedDownload(SPARSE_STDLIB + '.gz');
  chosenSnapshot = snapshotDownload();
  // The pack and Pyodide's wasm come compressed as the snapshot does (zstd: 1.2 and 2.4
  // MB against gzip's 1.7 and 3.1).
  const compressedAsTheSnapshot = (path) => chosenSnapshot.then(
    (snapshot) => streamedDownload(`${path}.${snapshot.name.split('.').pop()}`));
  chosenPack = compressedAsTheSnapshot(SNAPSHOT + 'site-packages.pack');
  chosenWasm = compressedAsTheSnapshot(RUNTIME + 'pyodide.asm.wasm');
  runtimeDownloads.set('pyodide.asm.wasm', chosenWasm.then(async (download) => {
    await download.firstByte;  // a site without it (an older build) gets the original
    return download.failed() ? null : new Response(streamOf(decompressedChunks(download)));
  }));
  self.addEventListener('message', (event) => {
    if (event.data?.type !== 'keep') return;
    keepForNextVisit(downloadsToKeep ?? []);
    downloadsToKeep = null;
  });
}

// What the snapshot froze and a visitor expects fresh: the random generators'
// state ("New draw" would give every visitor the same seed), and the flag that says
// the snapshot is being made (app.environment.SNAPSHOT_ENV: a document built for a
// second page would do the snapshot's work, 20 s of training). Clocks and the
// time zone are read from JS at each call, so they are live. (The hash seed
// stays fixed: hash randomisation guards servers from crafted keys, and this
// interpreter serves one page, or a course page's embeds.)
const RESEED = `
import os
import random
import numpy
random.seed()
numpy.random.seed()
os.environ.pop("ATTENTION_LAB_SNAPSHOT", None)
`;

export async function restoreSnapshot() {
  let hook = null;
  let snapshotFile = null;
  try {
    if (typeof DecompressionStream !== 'function') throw new Error('no DecompressionStream');
    self.postMessage({type: 'status', msg: 'Restoring the saved Python session'});
    snapshotFile = await chosenSnapshot;
    importScripts(await runtimeScript('pyodide.asm.js'), named(SNAPSHOT + 'snapshot.js'));
    const pack = PyodideSnapshot.parsePack(
      await decompressed(await chosenPack));
    const stdlib = new Blob([await decompressed(stdlibDownload)]);
    const stdLibURL = URL.createObjectURL(stdlib);
    const snapshot = await openSnapshot(snapshotFile);
    hook = PyodideSnapshot.install(pack, pack.preload, snapshot, fetchElsewhere);
    const pyodide = await loadPyodide({
      stdLibURL, enableRunUntilComplete: JSPI,
      _loadSnapshot: snapshot.header, _snapshotDeserializer: PyodideSnapshot.deserializer,
    });
    URL.revokeObjectURL(stdLibURL);
    wholeWhereZeros(pyodide, BUILT.holes,
      (position) => fetchWhole(STDLIB, {'X-Read-At': String(position)}));
    pyodide.runPython(RESEED);
    downloadsToKeep = [snapshotFile, await chosenPack, await chosenWasm];
    return pyodide;
  } catch (error) {
    hook?.uninstall();
    snapshotFile?.abort();
    chosenPack.then((pack) => pack.abort());
    stdlibDownload.abort();
    const reason = String(error?.message ?? error).split('\n')[0];
    console.warn('The saved Python session could not be used:', error);
    self.postMessage({type: 'status', msg: `Starting Python from scratch (${reason})`});
    return null;
  }
}

// The document the snapshot holds, sent as the converter's worker sends it.
export function postSnapshotDocument(pyodide) {
  const [docs_json, render_items, root_ids] = pyodide.globals.get('_SNAPSHOT_DOC').toJs();
  self.postMessage({type: 'render', docs_json, render_items, root_ids});
}
