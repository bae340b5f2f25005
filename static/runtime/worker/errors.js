// A file that fails to load (Pyodide's wasm hangs on one instead of failing) or an
// error in an async step is said as a status, which the page shows as failed, rather
// than left loading for good.
export const reportFailure = (what) => self.postMessage({type: 'status', msg: `Error: ${what}`});

// The worker's own fetch, before anything wraps it.
export const fetchFromSite = self.fetch.bind(self);

// Say every failed fetch and every unhandled rejection as a status, from now on.
export function reportFailures() {
  self.fetch = async (resource, ...rest) => {
    const name = String(resource.url ?? resource).split('/').pop().split('?')[0];
    try {
      const response = await fetchFromSite(resource, ...rest);
      if (!response.ok) reportFailure(`could not fetch ${name} (HTTP ${response.status})`);
      return response;
    } catch (error) {
      reportFailure(`could not fetch ${name} (${error.message})`);
      throw error;
    }
  };
  self.addEventListener('unhandledrejection', (event) => {
    reportFailure(String(event.reason).split('\n')[0]);
  });
}
