// The names of the caches the site keeps itself in for the next visit: the service
// worker's (./service_worker.js), and the one of files named by their content, which
// the page's worker writes too (./worker/snapshot.js).
export const PREFIX = 'attention-scaling-lab-';
export const NAMED_BY_CONTENT = PREFIX + 'named-by-content';
