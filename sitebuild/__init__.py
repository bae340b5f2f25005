"""The steps of ``build.py``, one module each: ``common`` holds what they share (the
repository's folders, the build's messages and error, running a command, editing a
file that is not ours); ``inputs`` fetches the pinned inputs and checks their sha256;
``wheels`` assembles the site's Pyodide distribution (core files, wasm wheels, pure
wheels rewritten and precompiled, this project's wheel, the lock); ``snapshot``
makes the worker's memory snapshot and the pack of the files it lacks, and ships
the runtime compressed; ``page`` converts the app with Panel, then localises, edits,
checks and compresses the page, with the theory page beside it; ``runtime`` makes
Panel's converter write the lab's own worker and page handler (``static/runtime/``),
and adds the status bar; ``offline`` names the large files by their
content and adds the service worker that keeps the site for the next visit;
``serve`` serves the built site."""
