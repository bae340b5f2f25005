"""The browser runtime's scripts, each bundled from its ES modules by esbuild.

The runtime is written as ES modules by job (``static/runtime/``: the worker, the
page's handler of it, the page's script loader, the service worker). esbuild (npm's
``esbuild-wasm``, pinned by its sha256, run in node) bundles each entry with what it
imports into one classic script (an IIFE: a worker started from a file, a page's
inline script and a service worker all run one); the build then fills in its values
(``sitebuild.fills``).
"""

import functools
import tarfile
import tempfile
from pathlib import Path

from sitebuild.common import CACHE, REPO, STATIC, run, say
from sitebuild.inputs import fetch_npm

ESBUILD_VERSION = "0.28.2"
ESBUILD_NPM_SHA256 = "61594de12ce998652be2aa0ab72dda54bfa49407fb37ee3464468a2aac306baa"
RUNTIME = STATIC / "runtime"
# Each script the build ships, by name, and the module it is bundled from.
ENTRIES = {
    "worker": RUNTIME / "worker" / "main.js",  # the worker (main.js)
    "handler": RUNTIME / "page" / "handler.js",  # the page's handler of it
    "page_scripts": RUNTIME / "page" / "scripts.js",  # the page's script loader
    "service_worker": RUNTIME / "service_worker.js",
}


def esbuild() -> Path:
    """esbuild's command-line script (its wasm build), unpacked into the cache once."""
    folder = CACHE / f"esbuild-wasm-{ESBUILD_VERSION}"
    tarball = fetch_npm("esbuild-wasm", ESBUILD_VERSION, ESBUILD_NPM_SHA256)
    if not (folder / "package" / "bin" / "esbuild").exists():
        with tarfile.open(tarball) as npm:
            npm.extractall(folder, filter="data")
    return folder / "package" / "bin" / "esbuild"


@functools.cache
def bundles() -> dict[str, str]:
    """Every entry of ENTRIES bundled, by name: its fills unfilled."""
    say("bundling the runtime's scripts (esbuild)")
    with tempfile.TemporaryDirectory() as tmp:
        entries = [f"{name}={path}" for name, path in ENTRIES.items()]
        options = ["--bundle", "--format=iife", "--charset=utf8", "--log-level=warning"]
        # (from the repo: each module is named in the bundle by its path from there)
        run(["node", str(esbuild()), *entries, *options, f"--outdir={tmp}"], cwd=REPO)
        return {name: (Path(tmp) / f"{name}.js").read_text() for name in ENTRIES}


def runtime_sources() -> list[Path]:
    """Every module of the runtime (the site is stale when one changes)."""
    return sorted(p for p in RUNTIME.rglob("*") if p.is_file())
