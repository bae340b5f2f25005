// Changes sent ahead (app/look_ahead.py): the worker sends what the page's next
// d_k move would change in the figures before the learner makes it, so the page
// draws the move in the task of the key press instead of waiting for Python's
// answer. The page's handler (./handler.js) posts its changes with postChange and
// keeps the worker's 'ahead' messages with keepAhead.
//
// A message sent ahead was made after `applied` patches from the page; it is
// applied only while the page has posted exactly that many (else it was made for
// another state of the document). {type: 'ahead', key: null, applied: N} says
// that the ones made after N - 1 patches still hold after N. The worker is told
// which key the page applied: its answer then leaves out what the page shows.
import {applyingPatch, pyodideWorker} from './worker.js';

const ahead = new Map();  // key -> the worker's message
let posted = 0;  // patches posted to the worker
export const postedCount = () => posted;
// How many of the messages kept were sent ahead for the page's state now (the tests
// and the site benchmark wait for d_k's two neighbours).
pyodideWorker.aheadForNow = () => [...ahead.values()].filter((m) => m.applied === posted).length;

// The key of a change, as app.patches.change_key writes it.
function changeKey(event) {
  return event?.model && event.attr
    ? `${event.model.id}.${event.attr}=${JSON.stringify(event.value)}` : null;
}

export function postChange(patch, event) {
  const key = changeKey(event);
  const found = key === null ? undefined : ahead.get(key);
  const drawn = found !== undefined && found.applied === posted && applyAhead(found);
  posted += 1;
  const post = () => pyodideWorker.postMessage({type: 'patch', patch, ahead: drawn ? key : null});
  if (!drawn) return post();
  ahead.clear();
  // Python's answer once this is drawn: on two cores, a worker at work beside the
  // drawing slows it (the figures came 20-30 ms later). A hidden page draws no
  // frames: then after 100 ms.
  let sent = false;
  const once = () => { if (!sent) { sent = true; post(); } };
  requestAnimationFrame(() => setTimeout(once));
  setTimeout(once, 100);
}

// Apply what the worker sent ahead; whether it could (if not, Python's answer is whole).
function applyAhead(found) {
  try {
    applyingPatch(() => pyodideWorker.jsdoc.apply_json_patch(found.patch, found.buffers));
    pyodideWorker.appliedAhead = found;  // the last one applied (the site benchmark reads it)
    return true;
  } catch (error) {
    console.warn('A change sent ahead could not be applied:', error);
    return false;
  }
}

// Whether `msg` from the worker was about changes sent ahead (and is dealt with).
export function keepAhead(msg) {
  if (msg.type !== 'ahead') return false;
  if (typeof msg.key === 'string') {
    ahead.set(msg.key, msg);
  } else {
    for (const [key, kept] of ahead) {
      if (kept.applied === msg.applied - 1) kept.applied = msg.applied;
      else ahead.delete(key);
    }
  }
  return true;
}
