"""Where the page runs: a browser build (Pyodide, or its prerendering), or a server.

The environment variables here are set by the build and the tests only; a
visitor never needs them.
"""

import os
import platform
import sys

import numpy as np

from app.words import text

PRERENDER_ENV = "ATTENTION_LAB_PRERENDER"  # set by sitebuild.page.convert
SNAPSHOT_ENV = "ATTENTION_LAB_SNAPSHOT"  # set by static/make_snapshot.js while it builds the page
# Seconds app/main.py waits before it builds a session's page: set by the tests only, to
# check they wait for a server as slow as a slower machine's (tests/support/browser.py).
SESSION_DELAY_ENV = "ATTENTION_LAB_SESSION_DELAY"
THEORY_PAGE = "theory.html"  # docs/theory.md, rendered beside the built site's index.html


def in_browser() -> bool:
    """Python runs in the visitor's browser (Pyodide)."""
    return sys.platform == "emscripten"


def in_browser_build() -> bool:
    """The page is the static site's: in the browser, or prerendered for it."""
    return in_browser() or bool(os.environ.get(PRERENDER_ENV))


def making_snapshot() -> bool:
    """The page is being built into the browser build's memory snapshot."""
    return bool(os.environ.get(SNAPSHOT_ENV))


def prerendering() -> bool:
    """The page is being prerendered into the static site's HTML."""
    return bool(os.environ.get(PRERENDER_ENV))


def theory_link() -> str:
    """Where the theory behind the plots is: beside the built site, or in the repository."""
    if in_browser_build():
        return text("page", "header", "theory link, site", {"theory_page": THEORY_PAGE})
    return text("page", "header", "theory link, server")


def runtime() -> str:
    """Where the numbers come from: in the browser build, the worker's numpy."""
    where = "browser" if in_browser() else "prerendered" if prerendering() else "server"
    numbers = {
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": sys.platform,
    }
    return text("page", "runtime", where, numbers)
