// Keep the site for the next visit once the learner has paused: when the simulation is
// live (the status bar says ready, static/status.html) and no change has been in flight
// for KEEP_AFTER_IDLE ms, the page asks its worker to hand the snapshot it downloaded to
// the service worker's cache ("keep"), and once it has ("kept"), registers the service
// worker (static/runtime/service_worker.js), which caches the rest. So neither the first visit's
// downloads nor the learner's first moves wait for it, and it fetches nothing the page
// has already. Where the browser keeps no storage for the site (a page opened from a
// file, some embeds), the page works as before, unkept.
(() => {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  const KEEP_AFTER_IDLE = 2000;
  const bar = document.getElementById('lab-status');
  let idle = null;
  const keepWhenIdle = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      document.removeEventListener('lab:waiting', notIdle);
      document.removeEventListener('lab:answered', keepWhenIdle);
      pyodideWorker.postMessage({type: 'keep'});
    }, KEEP_AFTER_IDLE);
  };
  const notIdle = () => clearTimeout(idle);
  const becameLive = new MutationObserver(() => {
    if (bar.dataset.state !== 'ready') return;
    becameLive.disconnect();
    document.addEventListener('lab:waiting', notIdle);
    document.addEventListener('lab:answered', keepWhenIdle);
    keepWhenIdle();
  });
  becameLive.observe(bar, {attributes: true, attributeFilter: ['data-state']});
  pyodideWorker.addEventListener('message', function whenKept(event) {
    if (event.data?.type !== 'kept') return;
    pyodideWorker.removeEventListener('message', whenKept);
    navigator.serviceWorker.register('./service_worker.js').catch((error) => {
      console.info('The site is not kept for the next visit:', error.message);
    });
  });
})();
