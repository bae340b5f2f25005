"""Serving the built site over HTTP (``python build.py --serve``)."""

import contextlib
import functools
import http.server
from pathlib import Path
from typing import ClassVar

from sitebuild.common import BuildError, say


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the MIME types Pyodide needs (application/wasm)."""

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".json": "application/json",
        ".whl": "application/zip",
        ".zip": "application/zip",
    }

    def log_message(self, format, *args):  # quieter: only errors
        if args and str(args[1])[0] in "45":
            super().log_message(format, *args)


def serve(site: Path, host: str, port: int):
    handler = functools.partial(SiteHandler, directory=str(site))
    try:
        server = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as error:
        raise BuildError(
            f"cannot serve on {host}:{port} ({error.strerror}): is another server using it? "
            f"Choose another port with --port, for example --port {port + 1}"
        ) from None
    with server:
        say(f"serving {site}/ at http://{host}:{port}/ (Ctrl+C to stop)")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
