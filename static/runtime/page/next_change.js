// A drag's next change goes to the worker with Python's answer to the last one.
//
// Panel's page posts a change, holds back (and merges) what comes meanwhile, and
// posts that when the worker says it is idle. The worker says so right after its
// answer, but the page reads it only once it has applied the answer (a task of
// 20-40 ms), and the worker waits all that while. Here the held-back change goes as
// the answer arrives, before the page applies it: the worker computes the next
// update while the page draws the last one. At most two changes are in flight, the
// second posted only as the first is answered, so a drag never piles up behind
// Python. `pyodideWorker.busy` still says whether any change is unanswered.
//
// The page says so on `document`: 'lab:waiting' when a change goes to Python with
// none unanswered, 'lab:answered' once every change is answered and its answer
// applied (its plots, words and address all on the page). The status bar shows a
// wait that lasts (static/status.html); the tests and the benchmark watch both.
import {postChange, postedCount} from './ahead.js';
import {pyodideWorker} from './worker.js';

let answered = 0;  // changes the worker has answered "idle" to

// Changes posted (./ahead.js counts them), not yet answered.
const inFlight = () => postedCount() - answered;

function postQueued() {
  const patch = pyodideWorker.jsdoc.create_json_patch(pyodideWorker.queue);
  pyodideWorker.busy = true;
  pyodideWorker.queue = [];
  postChange(patch, null);
}

// A patch from the worker: Python's answer to the change in flight, or a
// background task's (the training's) while none is.
export function postWithAnswer() {
  if (inFlight() === 1 && pyodideWorker.queue.length) postQueued();
}

// A change goes to Python with none unanswered (Panel's send_change, PAGE_POST).
export function waitForAnswer() {
  document.dispatchEvent(new CustomEvent('lab:waiting'));
}

// The worker is done with a change: post what waits unless another is in flight.
export function changeDone() {
  answered += 1;
  if (inFlight() > 0) return;
  if (pyodideWorker.queue.length) {
    postQueued();
  } else {
    pyodideWorker.busy = false;
    document.dispatchEvent(new CustomEvent('lab:answered'));
  }
}
