// The page's Python: the worker `url`. A page in a frame (an embed in a course page)
// shares one with the other embeds of the site on the page, as a SharedWorker
// (static/shared_worker.js): three embeds hold one Python, not three. A page of its
// own, or a browser without SharedWorker (or that refuses one here), gets a worker of
// its own. Either way the page talks to it as to a worker: postMessage, onmessage and
// 'message' listeners. The build puts this in Panel's page script, before the worker
// is made, and fills in the build's name of the shared worker: the embeds of two builds
// never share one.
function labWorker(url) {
  if (window.self !== window.top && typeof SharedWorker === 'function') {
    try {
      const shared = new SharedWorker(url, {name: `attention-scaling-lab ${LAB_BUILD}`});
      const {port} = shared;
      port.start();
      shared.addEventListener('error', () => port.dispatchEvent(new Event('error')));
      // Python keeps the page's document while the page is there; a page back from the
      // browser's cache asks anew for one.
      addEventListener('pagehide', () => port.postMessage({type: 'bye'}));
      addEventListener('pageshow', (event) => { if (event.persisted) location.reload(); });
      return port;
    } catch (error) {
      console.info('This embed runs its own Python:', error.message);
    }
  }
  return new Worker(url);
}
