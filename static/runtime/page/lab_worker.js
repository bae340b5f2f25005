// The page's Python: the worker `url`. A page in a frame (an embed in a course page)
// shares one with the other embeds of the site on the page, as a SharedWorker
// (static/shared_worker.js): three embeds hold one Python, not three. A page of its
// own, or a browser without SharedWorker, gets a worker of its own; so does an embed
// whose browser refuses the shared one in any way it does: a throw, an `error` event
// (Chromium with storage partitioning off, the course page on another site), or no
// word from it within SHARED_ANSWER_MS. Either way the page talks to a LabWorker as
// to a worker: postMessage, onmessage and 'message' and 'error' listeners; its
// `python` says which it has ('shared' or 'own'). The build fills in its own name
// (sitebuild/runtime.py: a hash of the worker), which names the shared worker: the
// embeds of two builds never share one.
const BUILD = __LAB_BUILD__;
const SHARED_ANSWER_MS = 8000;  // the shared worker's first word (it says 'connected')

class LabWorker extends EventTarget {
  constructor() {
    super();
    this.onmessage = null;
    this.python = null;
  }

  // Talk to `worker` (a Worker, or a SharedWorker's port): its messages are this one's.
  use(worker, python) {
    this.worker = worker;
    this.python = python;
    worker.onmessage = (event) => this.receive(event.data);
  }

  receive(data) {
    const event = new MessageEvent('message', {data});
    this.onmessage?.(event);
    this.dispatchEvent(event);
  }

  postMessage(message, transfer = []) {
    this.worker.postMessage(message, transfer);
  }
}

export function labWorker(url) {
  const lab = new LabWorker();
  const own = () => {
    const worker = new Worker(url);
    worker.addEventListener('error', (event) => {
      event.preventDefault();
      lab.dispatchEvent(new Event('error', {cancelable: true}));
    });
    lab.use(worker, 'own');
  };
  if (window.self === window.top || typeof SharedWorker !== 'function') {
    own();
    return lab;
  }
  let shared;
  try {
    shared = new SharedWorker(url, {name: `attention-scaling-lab ${BUILD}`});
  } catch (error) {
    console.info('This embed runs its own Python:', error.message);
    own();
    return lab;
  }
  const {port} = shared;
  lab.worker = port;
  lab.python = 'shared';
  // Until the shared worker says it is there, what the page posts is kept: a refusal
  // sends it to a worker of the page's own.
  let sent = [];
  lab.postMessage = (message, transfer = []) => {
    sent?.push(message);
    port.postMessage(message, transfer);
  };
  const refused = (why) => {
    if (sent === null || lab.python === 'own') return;
    console.info(`This embed runs its own Python: the browser ${why} the shared one.`);
    port.close();
    own();
    delete lab.postMessage;  // LabWorker's own, to the worker
    for (const message of sent) lab.postMessage(message);
  };
  port.onmessage = (event) => {
    if (lab.python !== 'shared') return;
    sent = null;  // it answered: it is there
    if (event.data?.type !== 'connected') lab.receive(event.data);
  };
  shared.addEventListener('error', (event) => {
    if (sent !== null) return refused('refused');
    event.preventDefault();
    lab.dispatchEvent(new Event('error', {cancelable: true}));
  });
  setTimeout(() => refused(`did not start within ${SHARED_ANSWER_MS / 1000} s`), SHARED_ANSWER_MS);
  // Python keeps the page's document while the page is there; a page back from the
  // browser's cache asks anew for one.
  addEventListener('pagehide', () => lab.python === 'shared' && port.postMessage({type: 'bye'}));
  addEventListener('pageshow', (event) => { if (event.persisted) location.reload(); });
  return lab;
}
