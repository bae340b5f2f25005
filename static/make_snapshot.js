// Make the memory snapshot that the site's worker boots from (run by build.py):
//
//   node make_snapshot.js SITE FOLDER    # writes FOLDER/snapshot.bin and imported.json
//
// SITE is the built site (its pyodide/); FOLDER holds site-packages.pack
// (static/snapshot.js describes the format), worker.py, the worker's own Python, and
// preload.json, the extension modules to load before the interpreter starts, in order
// (sitebuild/snapshot.py writes the three). It runs the worker's Python in Pyodide
// under node, up to and including building the app's document, kept as
// _SNAPSHOT_DOC, then snapshots the memory. A restore needs the extension modules
// loaded in the order the snapshot's Python loaded them: when the run loads others,
// or in another order, than preload.json says, it writes the order it found there
// and exits with STALE_PRELOAD, snapshotting nothing (the build runs it again).
//
// The snapshot must be the same bytes for the same inputs. What would make it
// differ is entropy and clocks: node's crypto is replaced by a fixed stream here
// (the worker reseeds Python's random generators after restoring) and the
// hash seed is fixed.
const fs = require('fs');
const path = require('path');
const [site, folder] = process.argv.slice(2);
const STALE_PRELOAD = 3;  // the exit code: preload.json was not the order found
// Python's argv[0] (and the folder it takes for its own) is the program's name, which
// Emscripten takes from node's: this script's path, so that the snapshot held the
// folder the project was checked out in, shipped it to every visitor, and differed
// from a build made elsewhere. A fixed name instead.
process.argv[1] = 'make_snapshot.js';
const pyodideDir = path.resolve(site, 'pyodide') + '/';

// A fixed entropy stream (xorshift32): the same Python state on every build.
let entropy = 0x9e3779b9;
globalThis.crypto.getRandomValues = (array) => {
  const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  for (let i = 0; i < bytes.length; i++) {
    entropy ^= entropy << 13; entropy ^= entropy >>> 17; entropy ^= entropy << 5;
    bytes[i] = entropy & 0xff;
  }
  return array;
};
// A fixed clock that ticks 1 µs per reading: file times and Python's clocks.
let clock = Date.UTC(2025, 0, 1);
Date.now = () => (clock += 0.001);
performance.now = () => clock - Date.UTC(2025, 0, 1);

// A worker has it and node does not; Panel's panel.io.pyodide imports it.
globalThis.XMLHttpRequest ??= class XMLHttpRequest {};

// The worker's Python, which ends by building the app's document (write_doc()).
const workerCode = () => fs.readFileSync(path.join(folder, 'worker.py'), 'utf8');

// The source and bytecode files of every module imported now, relative to
// site-packages: the snapshot holds those modules, so the worker needs no copy.
// (Run in a namespace of its own: nothing of it stays in the snapshot's.)
const IMPORTED_FILES = `
import json, site, sys
root = site.getsitepackages()[0] + "/"
files = {getattr(m, a, None) for m in list(sys.modules.values()) for a in ("__file__", "__cached__")}
json.dumps(sorted(f[len(root):] for f in files if isinstance(f, str) and f.startswith(root)
                  and not f.endswith(".so")), indent=1)
`;

// Docstrings are for people reading the code; the page never shows them, and they
// are 0.4 MB of the compressed snapshot. Drop every function's and module's: a
// function's is its code's first constant (3.12: None where it has none; a lambda's
// is None too), unless its bytecode loads that constant (a string the body also
// uses); nested code is its constants'. (Classes keep theirs: 0.02 MB, and
// metaclasses may read them.) The restore and a full session still work: the site's
// tests, whose console must stay free of errors.
const DROP_DOCSTRINGS = `
import dis, gc, types

def _without_docstrings(code):
    consts = list(code.co_consts)
    if consts and isinstance(consts[0], str) and not any(
        op.opcode in dis.hasconst and op.arg == 0 for op in dis.get_instructions(code)
    ):
        consts[0] = None
    consts = [_without_docstrings(c) if isinstance(c, types.CodeType) else c for c in consts]
    return code.replace(co_consts=tuple(consts))

for _o in gc.get_objects():
    if isinstance(_o, types.FunctionType):
        _o.__code__ = _without_docstrings(_o.__code__)
        _o.__doc__ = None
    elif isinstance(_o, types.ModuleType):
        _o.__doc__ = None
del _o, _without_docstrings
`;

// A snapshot holds all of the wasm memory, and freed blocks keep their old
// bytes, which compress far worse than zeros. Allocate every free block (and
// the free top of the heap, but never so much that the memory grows), zero it
// and free it again. The room a block may take without growing the memory is
// malloc's free top chunk (mallinfo's keepcost, its 10th size_t) and what lies
// between the break and the memory's end, less a margin for sbrk's rounding.
// (Counting the break alone, a heap whose break was near the memory's end had
// no room at all: 22 MB of old bytes, 14 MB more in the compressed snapshot.)
// mallinfo walks the whole heap (7 ms here), so the room is read again only when a
// block might not fit: a block from the free lists, below the top chunk, leaves the
// room as it was; one that may come from the top chunk is counted CHUNK_OVERHEAD more
// than asked. The blocks, and so the snapshot's bytes, are those of a reading before
// each block, which took 10,000 readings: 77 to 188 s of every build here, now 0.1.
const CHUNK_OVERHEAD = 16;  // bytes of a chunk beyond what was asked, at most
function zeroFreeMemory(module) {
  const blocks = [];
  const info = module._emscripten_builtin_malloc(40);  // struct mallinfo: 10 size_t
  let topStart = 0;  // where the top chunk began, at the last reading
  const room = () => {
    module._mallinfo(info);
    const topChunk = module.HEAPU32[(info >> 2) + 9];
    topStart = module._sbrk(0) - topChunk;
    return topChunk + module.HEAPU8.length - module._sbrk(0) - (1 << 20);
  };
  let atLeast = room();  // the room, or less
  for (let size = 1 << 26; size >= 64; size >>= 1) {
    for (;;) {
      if (size > atLeast && size > (atLeast = room())) break;
      const block = module._emscripten_builtin_malloc(size);
      if (block === 0) break;
      module.HEAPU8.fill(0, block, block + size);
      blocks.push(block);
      if (block + size + CHUNK_OVERHEAD > topStart) atLeast -= size + CHUNK_OVERHEAD;
    }
  }
  blocks.forEach((block) => module._emscripten_builtin_free(block));
  module._emscripten_builtin_free(info);
}

(async () => {
  require(pyodideDir + 'pyodide.asm.js');
  require(path.resolve(__dirname, 'snapshot.js'));
  const { loadPyodide } = require(pyodideDir + 'pyodide.js');
  const pack = PyodideSnapshot.parsePack(fs.readFileSync(path.join(folder, 'site-packages.pack')));
  const preloadFile = path.join(folder, 'preload.json');
  const preload = JSON.parse(fs.readFileSync(preloadFile, 'utf8'));
  const hook = PyodideSnapshot.install(pack, preload);
  const pyodide = await loadPyodide({
    indexURL: pyodideDir,
    env: { PYTHONHASHSEED: '0', ATTENTION_LAB_SNAPSHOT: '1' },  // app.environment.SNAPSHOT_ENV
    _makeSnapshot: true,
  });
  const doc = await pyodide.runPythonAsync(workerCode());
  pyodide.globals.set('_SNAPSHOT_DOC', doc);
  doc.destroy();
  const loaded = hook.loadedLibraries();
  if (JSON.stringify(loaded) !== JSON.stringify(preload)) {
    fs.writeFileSync(preloadFile, JSON.stringify(loaded, null, 1) + '\n');
    process.exit(STALE_PRELOAD);
  }
  const namespace = pyodide.globals.get('dict')();
  const imported = pyodide.runPython(IMPORTED_FILES, { globals: namespace });
  fs.writeFileSync(path.join(folder, 'imported.json'), imported);
  namespace.destroy();
  for (const name of Object.keys(pyodide.loadedPackages)) delete pyodide.loadedPackages[name];
  pyodide.runPython(DROP_DOCSTRINGS);
  pyodide.runPython('import gc; gc.collect()');
  zeroFreeMemory(pyodide._module);
  const snapshot = pyodide.makeMemorySnapshot({ serializer: PyodideSnapshot.serializer });
  fs.writeFileSync(path.join(folder, 'snapshot.bin'), snapshot);
})().catch((error) => {
  console.error(String(error.stack || error));
  process.exit(1);
});
