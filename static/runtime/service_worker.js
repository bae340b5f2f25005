// The site's service worker: a returning learner (the course page next week, a train
// with no signal) gets the whole site from their own browser.
//
// The page registers it once the simulation is live and the learner has paused
// (static/register_service_worker.js), so that neither the first visit's downloads nor
// the learner's first moves wait for it. Installing, it caches every file
// the page loads (FILES, with a hash of each one's content):
// - a file whose name carries its hash (HASHED: the large ones) is kept in one
//   cache for every version of the site, as its name never changes content. The page's
//   worker has put the snapshot there already (too large for some browsers' HTTP
//   caches); the others are asked of the browser's HTTP cache first, which holds them
//   since the page downloaded them;
// - any other file is kept in this version's cache: copied from an older version's
//   cache where its hash is the same, fetched where it is not.
// So a rebuild costs a returning learner only the files whose content changed.
//
// Once active, it answers every request under its scope from its caches, and what is
// not cached (a file Python reads that the pack left out) from the network, keeping
// a copy. A link (./?d_k=... or index.html?d_k=...) is index.html. The version of a
// rebuilt site takes over when no page of the old one is open, so that a page never
// mixes two builds. Where the browser has dropped the caches (Safari does after seven
// days without a visit), every request simply goes to the network again.
import {NAMED_BY_CONTENT, PREFIX} from './caches.js';

// Filled in by the build (sitebuild/offline.py):
const VERSION = __LAB_SITE_VERSION__;  // a hash of every file of the site
const FILES = __LAB_SITE_FILES__;  // {path in the site: hash of its content}
const HASHED = new Set(__LAB_SITE_HASHED__);  // the paths whose names carry their hash
const CACHE = PREFIX + VERSION;
const LIST = '.files.json';  // a version's cache's own copy of FILES

// A file's path in the site, from any URL the browser asks for it by (however it
// percent-encodes the name), and the one URL the caches keep it under.
const root = new URL('./', self.location.href);
const pathOf = (url) => {
  const path = new URL(url).pathname.slice(root.pathname.length);
  return path === '' ? 'index.html' : path.split('/').map(decodeURIComponent).join('/');
};
const urlOf = (path) => new URL(path, root).href;
const cacheOf = (path) => caches.open(HASHED.has(path) ? NAMED_BY_CONTENT : CACHE);

// Older versions' cached files whose content is the same in this one.
async function unchanged() {
  const found = new Map();
  for (const name of await caches.keys()) {
    if (!name.startsWith(PREFIX) || name === CACHE || name === NAMED_BY_CONTENT) continue;
    const cache = await caches.open(name);
    const listed = await cache.match(urlOf(LIST));
    const files = listed ? await listed.json() : {};
    for (const [path, hash] of Object.entries(files)) {
      if (FILES[path] !== hash || HASHED.has(path) || found.has(path)) continue;
      const response = await cache.match(urlOf(path));
      if (response) found.set(path, response);
    }
  }
  return found;
}

async function install() {
  const cache = await caches.open(CACHE);
  const kept = await unchanged();
  const missing = [];
  for (const path of Object.keys(FILES)) {
    if (kept.has(path)) await cache.put(urlOf(path), kept.get(path));
    else if (!(await (await cacheOf(path)).match(urlOf(path)))) missing.push(path);
  }
  // Four at a time; one failure (the network gone) fails the install, and the version
  // before stays in charge.
  const fetchInto = async (path) => {
    const hashed = HASHED.has(path);
    const response = await fetch(urlOf(path), {cache: hashed ? 'force-cache' : 'no-cache'});
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    await (await cacheOf(path)).put(urlOf(path), response);
  };
  for (let i = 0; i < missing.length; i += 4) await Promise.all(missing.slice(i, i + 4).map(fetchInto));
  await cache.put(urlOf(LIST), new Response(JSON.stringify(FILES)));
}

// The caches of older versions go, and the files named by content that no page of this
// version loads.
async function activate() {
  for (const name of await caches.keys()) {
    if (name.startsWith(PREFIX) && name !== CACHE && name !== NAMED_BY_CONTENT) await caches.delete(name);
  }
  const named = await caches.open(NAMED_BY_CONTENT);
  for (const request of await named.keys()) {
    if (!HASHED.has(pathOf(request.url))) await named.delete(request);
  }
}

self.addEventListener('install', (event) => event.waitUntil(install()));
self.addEventListener('activate', (event) => event.waitUntil(activate()));

// A file of FILES missing from the caches (the browser dropped it) comes from the
// network as it is; any other file is kept once fetched.
async function answer(request) {
  const path = pathOf(request.url);
  const cache = await cacheOf(path);
  const cached = await cache.match(urlOf(path));
  if (cached) return cached;
  const response = await fetch(request);
  if (response.status === 200 && !(path in FILES)) await cache.put(urlOf(path), response.clone());
  return response;
}

self.addEventListener('fetch', (event) => {
  const {request} = event;
  if (request.method !== 'GET' || !request.url.startsWith(root.href)) return;
  if (request.headers.has('range')) return;
  event.respondWith(answer(request));
});
