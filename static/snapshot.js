// Booting Pyodide from a memory snapshot of the app's worker: shared by the build
// (node, static/make_snapshot.js) and the page's worker (static/runtime/worker/snapshot.js).
//
// A Pyodide 0.27 memory snapshot holds the wasm heap but not the files, the
// extension modules' code or the live JS objects that Python refers to. So:
//  - `install` wraps Pyodide's module factory; its last preRun hook (after the
//    standard library is in place, before the interpreter starts) writes the
//    site-packages files from a pack, lists those the pack keeps elsewhere (fetched
//    when first read), and loads the extension modules (.so) listed in `preload`,
//    in that order. Before the runtime starts their memory comes
//    from a deterministic bump of __heap_base, so their addresses and function
//    table slots are the same when the snapshot is made and when it is restored.
//  - given the snapshot opened by the worker (static/runtime/worker/snapshot.js), it sizes
//    the wasm memory as Pyodide would from the whole snapshot and writes the
//    memory image into it once the module is made, before Pyodide restores the
//    header it was given (restoring an empty image then copies nothing).
//  - `serializer` stores the self-contained JS functions Python holds (Panel's
//    worker code makes one with run_js at import) as source; `deserializer`
//    evaluates it again.
// These are Pyodide and Emscripten internals: the snapshot is only valid for the
// exact pyodide.asm.js/.wasm it was made with (Pyodide checks the build id).
(function (root) {
  // Pack: 4-byte little-endian length N, N bytes of JSON
  // {"files": [[path, offset, size], ...], "preload": [path, ...],
  //  "elsewhere": [[path, size], ...]}, then the data. The files "elsewhere" are
  // not in the pack: each is fetched when Python first reads it.
  function parsePack(buffer) {
    const bytes = new Uint8Array(buffer);
    const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
    const index = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length)));
    return { elsewhere: [], ...index, data: bytes.subarray(4 + length) };
  }

  // A file of `size` bytes whose contents `fetch()` gives when first read. Listing
  // and stat (Python's import system does both) see it whole without fetching it.
  // MEMFS keeps a file's bytes in node.contents and its length in node.usedBytes.
  function fetchedOnRead(FS, target, size, fetch) {
    FS.writeFile(target, new Uint8Array(0));
    const node = FS.lookupPath(target).node;
    let contents = null;
    let usedBytes = size;
    Object.defineProperties(node, {
      contents: {
        get() {
          if (contents === null) {
            contents = fetch();
            usedBytes = contents.length;
          }
          return contents;
        },
        set(value) { contents = value; },
      },
      usedBytes: { get: () => usedBytes, set(value) { usedBytes = value; } },
    });
  }

  // `fetchFile(path)` gives the bytes of a file the pack keeps elsewhere (a path
  // relative to site-packages), or throws.
  function install(pack, preload, snapshot = null, fetchFile = null) {
    const create = root._createPyodideModule;
    if (typeof create !== 'function') throw new Error('load pyodide.asm.js first');
    let module = null;
    root._createPyodideModule = (settings) => {
      settings.preRun.unshift((Module) => {  // preRun hooks run last-first: this runs last
        const sitePackages = Module.API.sitePackages;
        const made = new Set();
        for (const [path, offset, size] of pack.files) {
          const target = `${sitePackages}/${path}`;
          const folder = target.slice(0, target.lastIndexOf('/'));
          if (!made.has(folder)) Module.FS.mkdirTree(folder);
          made.add(folder);
          // canOwn: the file is a view of the pack's bytes, not a copy (31 MB less)
          Module.FS.writeFile(target, pack.data.subarray(offset, offset + size), { canOwn: true });
        }
        for (const [path, size] of pack.elsewhere) {
          const target = `${sitePackages}/${path}`;
          const folder = target.slice(0, target.lastIndexOf('/'));
          if (!made.has(folder)) Module.FS.mkdirTree(folder);
          made.add(folder);
          fetchedOnRead(Module.FS, target, size, () => {
            try {
              return fetchFile(path);
            } catch (error) {
              console.warn(`${path} could not be fetched:`, error);
              throw new Module.FS.ErrnoError(29);  // EIO: Python raises OSError
            }
          });
        }
        for (const path of preload) {
          Module.loadDynamicLibrary(`${sitePackages}/${path}`, {
            loadAsync: false, nodelete: true, allowUndefined: true, global: false, fs: Module.FS,
          }, {});
        }
        Module.reportUndefinedSymbols();
        module = Module;
      });
      if (snapshot === null) return create(settings);
      settings.INITIAL_MEMORY = snapshot.size;  // as Pyodide sets it from a whole snapshot
      return create(settings).then(async (made) => {
        await snapshot.writeImage(made.HEAPU8);
        return made;
      });
    };
    return {
      // The extension modules loaded so far, in load order, relative to site-packages.
      loadedLibraries() {
        const prefix = `${module.API.sitePackages}/`;
        return Object.keys(module.LDSO.loadedLibsByName)
          .filter((name) => name.startsWith(prefix) && name.endsWith('.so'))
          .map((name) => name.slice(prefix.length));
      },
      uninstall() { root._createPyodideModule = create; },
    };
  }

  function serializer(object) {
    if (typeof object === 'function') {
      const source = Function.prototype.toString.call(object);
      if (!source.includes('[native code]')) return { source };
    }
    throw new Error(`cannot put ${Object.prototype.toString.call(object)} in a snapshot`);
  }

  function deserializer(data) {
    if (typeof data?.source === 'string') return (0, eval)(`(${data.source})`);
    throw new Error(`cannot restore ${JSON.stringify(data)} from a snapshot`);
  }

  root.PyodideSnapshot = { parsePack, install, serializer, deserializer };
})(typeof self !== 'undefined' ? self : globalThis);
