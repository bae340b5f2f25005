"""What every step of the build shares: the repository's folders, the build's
messages and its error, running a command, and editing a file that is not ours."""

import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "static"  # the HTML, JS and CSS the build fills in and ships
CACHE = REPO / "static" / "cache"


START = time.monotonic()  # the build's steps are timed from its process's start


def say(message: str):
    """Print the build's next step, after the seconds since it started."""
    print(f"[build {time.monotonic() - START:4.0f} s] {message}", flush=True)


class BuildError(RuntimeError):
    """A build input is missing, tampered with or inconsistent."""


def run(command: list[str], expected=(0,), **kwargs) -> int:
    """Run ``command``; its exit code, which must be one of ``expected``."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode not in expected:
        raise BuildError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    return result.returncode


def replace_once(text: str, old: str, new: str, where: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced by ``new``.

    Raises BuildError naming ``where`` when ``old`` is missing or repeated: the
    build edits Panel's generated page and worker and a few lines of Pyodide, and
    must notice when a release changes them.
    """
    if text.count(old) != 1:
        raise BuildError(f"{where} no longer reads as build.py expects: {old!r}")
    return text.replace(old, new)
