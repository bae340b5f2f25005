// The page's JavaScript (BokehJS, Panel, KaTeX: 3 MB), shipped gzip-compressed beside
// the originals (sitebuild/page.py's compress_page_scripts: 0.8 MB) and run in the
// order the page had it. The build puts this loader where the page's script tags were
// and turns every inline script after it into type="text/after-page-scripts", which the
// browser does not run: this runs them, in order, once the page's JavaScript has run
// and the document is parsed. So the page is parsed and painted while its scripts
// download. A host that sends a .gz with Content-Encoding: gzip has the browser
// decompress it already; where a .gz is missing or the browser cannot decompress, the
// original is loaded instead.
import {ungzipped} from '../ungzipped.js';

// The page's scripts, in order, and (each .gz carries a hash of its content in its
// name: sitebuild/offline.py) a path in the site to the name the build gave it; both
// filled in by the build (sitebuild/page.py, sitebuild/offline.py).
const SCRIPTS = __LAB_PAGE_SCRIPTS__;
const CONTENT_NAMES = __LAB_SITE_NAMES__;

// The source of script `src`, decompressed; null to load the original instead.
async function source(src) {
  if (typeof DecompressionStream !== 'function') return null;
  try {
    const compressed = `${src}.gz`.replace(/^\.\//, '');
    const response = await fetch(`./${CONTENT_NAMES[compressed] ?? compressed}`);
    return response.ok ? await new Response(await ungzipped(response.body)).text() : null;
  } catch {
    return null;
  }
}

// Run a script (its source, or its address when `code` is null); resolves once run.
function run(code, src) {
  const script = document.createElement('script');
  if (code === null) {
    script.src = src;
    const loaded = new Promise((resolve) => { script.onload = script.onerror = resolve; });
    document.head.appendChild(script);
    return loaded;
  }
  script.textContent = `${code}\n//# sourceURL=${new URL(src, location.href)}`;
  document.head.appendChild(script);  // a script inserted with its text runs at once
  return Promise.resolve();
}

// An embed off the screen (a course page's lazy frame, loaded before the learner
// scrolls to it) runs each script when the main thread is idle: the embeds of a site
// share one, and the one on the screen goes first. (Where the browser has no
// requestIdleCallback, or says nothing of the screen within a second: at once.)
const offScreenEmbed = window.self === window.top ? Promise.resolve(false)
  : new Promise((resolve) => {
    new IntersectionObserver(([entry], observer) => {
      observer.disconnect();
      resolve(!entry.isIntersecting);
    }).observe(document.documentElement);
    setTimeout(() => resolve(false), 1000);
  });
const IDLE_WAIT_MS = 1000;  // the longest a script waits for the main thread to be idle
async function turn() {
  if (typeof requestIdleCallback === 'function' && await offScreenEmbed) {
    await new Promise((resolve) => requestIdleCallback(resolve, {timeout: IDLE_WAIT_MS}));
  }
}

const parsed = new Promise((resolve) => {
  if (document.readyState !== 'loading') resolve();
  else document.addEventListener('DOMContentLoaded', resolve, {once: true});
});
const sources = SCRIPTS.map(source);  // all downloads at once
(async () => {
  for (const [i, src] of SCRIPTS.entries()) {
    const code = await sources[i];
    await turn();
    await run(code, src);
  }
  await parsed;
  for (const held of document.querySelectorAll('script[type="text/after-page-scripts"]')) {
    await turn();
    const script = document.createElement('script');
    script.textContent = held.textContent;
    held.replaceWith(script);
  }
})();
