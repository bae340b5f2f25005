// A response's body (a stream) as it reads uncompressed: its first two bytes tell
// gzip. A host that sends a .gz with Content-Encoding: gzip has had the browser
// decompress it already; then the body is used as it comes. The page's script loader
// (./page/scripts.js) and the worker, for its runtime (./worker/runtime.js), use it.
export async function ungzipped(body) {
  const reader = body.getReader();
  const head = [];
  let length = 0;
  let ended = false;
  while (length < 2 && !ended) {
    const {done, value} = await reader.read();
    if (done) ended = true;
    else {
      head.push(value);
      length += value.length;
    }
  }
  const stream = new ReadableStream({
    start(controller) {
      head.forEach((chunk) => controller.enqueue(chunk));
      if (ended) controller.close();
    },
    async pull(controller) {
      const {done, value} = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  const first = head[0] ?? new Uint8Array(0);
  const second = first.length > 1 ? first[1] : head[1]?.[0];
  const isGzip = first[0] === 0x1f && second === 0x8b;
  return isGzip ? stream.pipeThrough(new DecompressionStream('gzip')) : stream;
}
