// One Python for the embeds of a course page. An embed (a page in a frame) runs this
// worker as a SharedWorker (static/lab_worker.js), so the embeds of the site on one
// page share it: one download, one restore, one wasm heap. Python holds a document
// for each page, as `panel serve` holds one per session (app/worker.py): the page on
// the screen (else the first to ask) gets the document the worker started with; each
// other page gets a new one, built at its own address.
//
// The rest of the worker is written for one page (`self.postMessage`, `self.onmessage`,
// the message listeners). Here each page is a port, and the worker handles one page's
// message at a time: while it does, that page is `current`, its document is Python's
// current one, and what the worker posts goes to it. What it posts meanwhile (the
// statuses of the start) goes to every page, but for the started document, which goes
// to the page chosen for it. A page says 'bye' as it goes; then its document
// goes too, and when no page is left the browser ends the worker.

// Make the worker a shared one, if it runs as a SharedWorker: first in the worker
// (./main.js), before anything posts or listens.
export function shareAmongPages() {
  if (typeof SharedWorkerGlobalScope !== 'function' || !(self instanceof SharedWorkerGlobalScope)) {
    return;
  }
  const pages = new Set();  // {port, number, location, inView, hasDocument, ...}
  let pageCount = 0;
  let current = null;  // the page whose message the worker handles
  let starter = null;  // the page that gets the document Python starts with
  let started = false;  // Python has sent the starter its document
  let building = null;  // the page whose document Python sent last, until it is live
  const STARTER_WAIT_MS = 10000;  // the most the other pages wait for the starter
  // What the worker said to every page as Python started ('Restoring the saved Python
  // session', or why it could not): said again to each page that comes later.
  const startStatuses = [];
  const listeners = [];  // the worker's 'message' listeners
  let onmessage = null;  // and its onmessage handler

  self.postMessage = (message, transfer = []) => {
    if (!started && message?.type === 'status') {
      startStatuses.push(message);
      for (const page of pages) page.port.postMessage(message);
    } else if (current) {
      current.port.postMessage(message, transfer);
    } else if (message?.type === 'render') {
      starter = chooseStarter();
      self.startingPage = starter;
      starter.port.postMessage(message, transfer);
      pythonStarted();
    } else {
      for (const page of pages) page.port.postMessage(message);
    }
  };

  // The page that gets the document Python started with: the one that asked first,
  // unless it is off the screen and another that has asked is on it.
  function chooseStarter() {
    if (starter.inView && pages.has(starter)) return starter;
    const asked = [...pages].filter((page) => page.location !== undefined);
    return asked.find((page) => page.inView) ?? (pages.has(starter) ? starter : asked[0] ?? starter);
  }
  Object.defineProperty(self, 'onmessage', {get: () => onmessage, set: (h) => { onmessage = h; }});
  const addListener = self.addEventListener.bind(self);
  const removeListener = self.removeEventListener.bind(self);
  self.addEventListener = (type, listener, ...rest) => {
    if (type === 'message') listeners.push(listener);
    else addListener(type, listener, ...rest);
  };
  self.removeEventListener = (type, listener, ...rest) => {
    if (type !== 'message') return removeListener(type, listener, ...rest);
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  };

  const python = (code) => self.pyodide.runPython(`from app import worker\n${code}`);

  // Handle `page`'s message with its document as Python's current one; false if it
  // failed (the page is told why: its status bar says it failed).
  function asPage(page, handle) {
    current = page;
    try {
      if (page.hasDocument) {
        python(`worker.use_document(${page.number})`);
        self.pyodide.globals.set('sendPatch', page.sendPatch);
        self.pyodide.globals.set('postToPage', page.post);
      }
      handle();
      return true;
    } catch (error) {
      console.error(error);
      page.port.postMessage({type: 'status', msg: `Error: ${String(error).split('\n')[0]}`});
      return false;
    } finally {
      current = null;
    }
  }

  // The starter's document is Python's current one as it is sent: it is the
  // starter's. The pages that asked meanwhile get theirs one at a time, each once
  // the page before is live: its page says it is ready (it shows its link's
  // scenario, drawn in its theme), or has gone, or has not said so in
  // STARTER_WAIT_MS. Building a document takes Python 0.5 to 1 s, which the page
  // before's last steps would otherwise wait for; a page on the screen (as it
  // said when it asked) goes first, then first come, first live.
  function pythonStarted() {
    started = true;
    python(`worker.adopt_document(${starter.number})`);
    starter.hasDocument = true;
    building = starter;
    if (!pages.has(starter)) python(`worker.close_document(${starter.number})`);
    whenLiveOrSilent(starter);
  }

  // Build the next page's document once the page before is live.
  function whenLiveOrSilent(page) {
    if (!pages.has(page)) return pageLive(page);  // gone meanwhile
    setTimeout(() => pageLive(page), STARTER_WAIT_MS);  // a page that never says
  }

  function pageLive(page) {
    if (page.live) return;
    page.live = true;
    if (page !== building) return;
    building = null;
    setTimeout(buildNext);
  }

  function buildNext() {
    if (building !== null) return;
    const waiting = [...pages].filter(
      (page) => page.location !== undefined && !page.hasDocument && !page.failed);
    const next = waiting.find((page) => page.inView) ?? waiting[0];
    if (next === undefined) return;
    building = next;
    if (sendNewDocument(next)) return whenLiveOrSilent(next);
    next.failed = true;  // tried once: it says so, and the next page's turn comes
    pageLive(next);
  }

  function sendNewDocument(page) {
    return asPage(page, () => {
      self.pyodide.globals.set('pageLocation', page.location);
      const [docs_json, render_items, root_ids] =
        python(`worker.new_document(${page.number}, pageLocation)`).toJs();
      page.hasDocument = true;
      self.postMessage({type: 'render', docs_json, render_items, root_ids});
    });
  }

  function receive(page, event) {
    const type = event.data?.type;
    if (type === 'bye') {
      pages.delete(page);
      if (page.hasDocument) python(`worker.close_document(${page.number})`);
      if (started) pageLive(page);
      return;
    }
    if (type === 'start') {
      page.location = event.data.location ?? null;
      page.inView = event.data.inView ?? true;
    }
    if (type === 'start' && starter === null) {
      starter = page;  // Python starts
    } else if (type === 'start') {
      for (const message of startStatuses) page.port.postMessage(message);
      if (started) buildNext();
      return;
    }
    if (page !== starter && !page.hasDocument) return;  // nothing of its own yet
    asPage(page, () => {
      for (const listener of [...listeners]) listener(event);
      onmessage?.(event);
    });
    if (type === 'ready') pageLive(page);
  }

  self.onconnect = (event) => {
    const port = event.ports[0];
    const page = {port, number: pageCount++, location: undefined, hasDocument: false};
    // What Python sends the page: its document's changes (app.worker.link_document's
    // dispatch) and the changes sent ahead (its post).
    page.sendPatch = (patch, buffers) => port.postMessage({type: 'patch', patch, buffers});
    page.post = (message) => port.postMessage(message);
    pages.add(page);
    page.port.onmessage = (message) => receive(page, message);
    port.postMessage({type: 'connected'});  // the page's word that it is not refused
  };
}
