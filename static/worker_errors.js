const reportFailure = (what) => self.postMessage({type: 'status', msg: `Error: ${what}`});
const fetchFromSite = self.fetch.bind(self);
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
