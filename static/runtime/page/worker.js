// The page's worker (./lab_worker.js: the shared one of a course page's embeds, or the
// page's own), made as the page's script runs; `window.pyodideWorker` to the page's
// other scripts (static/status.html, static/register_service_worker.js), as Panel's
// page has it. Its `queue` holds the changes made while it is busy; its `jsdoc` is the
// page's document once drawn.
import {labWorker} from './lab_worker.js';

// The worker's script, as Panel's converter names it (filled in by the build:
// sitebuild/runtime.py).
export const pyodideWorker = labWorker(__LAB_WORKER_URL__);
pyodideWorker.busy = false;
pyodideWorker.queue = [];
window.pyodideWorker = pyodideWorker;

// Apply a patch of the worker's (`apply`): the changes the page's document makes
// meanwhile are the worker's, and are not sent back to it (patching()).
let applying = 0;
export const patching = () => applying > 0;
export function applyingPatch(apply) {
  applying += 1;
  try {
    return apply();
  } finally {
    applying -= 1;
  }
}
