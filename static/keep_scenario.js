// An embed keeps the reader's scenario when its course page rebuilds it: a reload, or
// a page that swaps its content in place (MkDocs Material's navigation.instant) loads
// the frame at the snippet's link again, not at the address the reader's changes
// moved it to. So the embed keeps that address in the frame's sessionStorage, under
// the link it was loaded at, as each change is answered and as it goes; loaded at that
// link again, it goes back to it before anything reads the address. Where the browser
// grants a frame no storage, the embed starts at its link, as before.
// sitebuild.runtime.add_status puts this before the status bar.
(() => {
  if (window.parent === window) return;  // a page of its own keeps its address itself
  let storage;
  try {
    storage = window.sessionStorage;  // a frame refused storage throws here
  } catch {
    return;
  }
  const key = `attention-scaling-lab ${location.pathname}${location.search}`;
  const kept = storage.getItem(key);
  if (kept && kept !== location.search) history.replaceState(history.state, '', kept + location.hash);
  const keep = () => {
    try {
      storage.setItem(key, location.search);
    } catch {}  // full, or taken away: the next load starts at its link
  };
  document.addEventListener('lab:answered', keep);
  addEventListener('pagehide', keep);
})();
