// Pyodide's runtime, shipped compressed: the build writes pyodide.asm.wasm (10 MB)
// and pyodide.asm.js (1.3 MB) gzip-compressed beside the originals
// (sitebuild/snapshot.py's RUNTIME_GZ), a third of their bytes on a host that
// compresses nothing. Pyodide asks for the originals; the worker fetches the .gz
// files instead, as soon as it exists (beside the snapshot's downloads), and
// decompresses them as they arrive. A host that serves a .gz with Content-Encoding:
// gzip has the browser decompress it already: its bytes are then used as they come.
// A site without the .gz files (an older build) gets the originals.
import {ungzipped} from '../ungzipped.js';
import {fetchFromSite} from './errors.js';

const RUNTIME_GZ = {
  'pyodide.asm.wasm': 'application/wasm',
  'pyodide.asm.js': 'text/javascript',
};
export const RUNTIME = './pyodide/';

// The large files the page loads carry a hash of their content in their names
// (sitebuild/offline.py), so that no cache pairs them with another build's page: a
// path in the site ('./pyodide/python_stdlib.zip') to the name the build gave it
// (filled in by the build: sitebuild/fills.py).
const CONTENT_NAMES = __LAB_SITE_NAMES__;
export const named = (path) => {
  const relative = path.replace(/^\.\//, '');
  return './' + (CONTENT_NAMES[relative] ?? relative);
};

// The runtime's downloads, by name: pyodide.asm.js's starts with fetchRuntimeCompressed;
// the wasm's is added by ./snapshot.js, whose compression follows the link (zstd over a
// slow one).
export const runtimeDownloads = new Map();

// Start the runtime's downloads, and answer Pyodide's fetches of RUNTIME_GZ with them.
export function fetchRuntimeCompressed() {
  runtimeDownloads.set(
    'pyodide.asm.js', fetchFromSite(named(`${RUNTIME}pyodide.asm.js.gz`)).catch(() => null));
  const fetchReporting = self.fetch;
  self.fetch = async (resource, ...rest) => {
    const url = String(resource.url ?? resource).split('?')[0];
    const name = Object.keys(RUNTIME_GZ).find((each) => url.endsWith(`/pyodide/${each}`));
    const download = name && runtimeDownloads.get(name);
    if (!download || typeof DecompressionStream !== 'function') {
      return fetchReporting(resource, ...rest);
    }
    runtimeDownloads.delete(name);  // fetched once; a second ask fetches anew
    const compressed = await download;
    if (!compressed?.ok) return fetchReporting(resource, ...rest);
    const headers = {'Content-Type': RUNTIME_GZ[name]};
    return new Response(await ungzipped(compressed.body), {headers});
  };
}

// A script of the runtime, decompressed, as a URL that importScripts can load.
export async function runtimeScript(name) {
  const response = await self.fetch(RUNTIME + name);
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return URL.createObjectURL(await response.blob());
}
