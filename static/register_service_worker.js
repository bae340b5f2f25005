// Register the site's service worker (static/service_worker.js) once the simulation is
// live (the status bar says ready, static/status.html) and the page's worker has handed
// it the snapshot it downloaded (its message "kept"): the first visit's downloads never
// wait for it, and it fetches nothing the page has already. Where the browser keeps no
// storage for the site (a page opened from a file, some embeds), the page works as
// before, unkept.
(() => {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  const bar = document.getElementById('lab-status');
  let live = false;
  let kept = false;
  const register = () => {
    if (!live || !kept) return;
    navigator.serviceWorker.register('./service_worker.js').catch((error) => {
      console.info('The site is not kept for the next visit:', error.message);
    });
  };
  const becameLive = new MutationObserver(() => {
    if (bar.dataset.state !== 'ready') return;
    becameLive.disconnect();
    live = true;
    register();
  });
  becameLive.observe(bar, {attributes: true, attributeFilter: ['data-state']});
  pyodideWorker.addEventListener('message', function whenKept(event) {
    if (event.data?.type !== 'kept') return;
    pyodideWorker.removeEventListener('message', whenKept);
    kept = true;
    register();
  });
})();
