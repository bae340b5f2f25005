"""The second visit: large files named by their content, and the service worker.

A returning learner gets the site from their own browser. Each large file that the
page or its worker loads carries a hash of its content in its name
(`name_by_content`), so that no cache, the browser's or the service worker's, pairs a
page with another build's file of the same name. The service worker
(``static/runtime/service_worker.js``, filled in by `add_service_worker`) keeps every file the
page loads once the simulation is live, and after a rebuild fetches only those whose
content changed.
"""

import fnmatch
import hashlib
import json
from pathlib import Path

from sitebuild.bundle import bundles
from sitebuild.common import STATIC, replace_once
from sitebuild.fills import fill, fill_file
from sitebuild.page import HELD_SCRIPT_TAG

SERVICE_WORKER = "service_worker.js"  # beside the page
REGISTER_SERVICE_WORKER_JS = STATIC / "register_service_worker.js"
# The files named by their content: every .gz and .zst the build writes (the runtime's,
# the page's scripts', the snapshot's), the standard library and the snapshot's helpers. The
# names of the others stay: the page's address, the files that Panel's page and
# Pyodide ask for by name, and the files of site-packages that the pack left out.
NAMED_BY_CONTENT = (
    "*.gz",
    "*.zst",
    "pyodide/python_stdlib.zip",
    "snapshot/snapshot.js",
    "snapshot/fzstd.js",
)
# Files of the site that the page does not load: the wheels that only a start without
# the snapshot installs, the files of site-packages the pack left out (fetched alone
# if Python reads one, and then kept), and the images of Panel's own templates.
NOT_KEPT = (
    "*.whl",
    "snapshot/site-packages/*",
    "panel/*/dist/images/*",
    "panel/*/dist/assets/logo/*",
)
# Files the service worker does not fetch itself, but keeps once the page has: the
# snapshot, its pack and Pyodide's wasm, in whichever of their two compressions the
# page's worker fetched (the worker hands its downloads to the service worker's cache),
# and the whole standard library, which the worker fetches only where Python reads
# what its restored copy lacks (static/runtime/worker/snapshot.js).
KEPT_ONCE_FETCHED = (
    "snapshot/snapshot.*bin.*",
    "snapshot/site-packages.*pack.*",
    "pyodide/pyodide.*asm.wasm.*",
    "pyodide/python_stdlib.*zip",
)


def content_hash(data: bytes) -> str:
    """The first 16 hex digits of the sha256 of ``data`` (64 bits: no two files of a
    site, or of its builds, share one)."""
    return hashlib.sha256(data).hexdigest()[:16]


def hashed_name(path: str, data: bytes) -> str:
    """``path`` with the hash of its content ``data`` after the first part of its name:
    ``snapshot/snapshot.bin.gz`` -> ``snapshot/snapshot.<hash>.bin.gz``."""
    folder, slash, name = path.rpartition("/")
    stem, dot, suffixes = name.partition(".")
    return f"{folder}{slash}{stem}.{content_hash(data)}{dot}{suffixes}"


def site_files(site: Path) -> list[str]:
    """Every file of ``site``, as a path relative to it."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())


def matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def name_by_content(site: Path) -> dict[str, str]:
    """Rename the files of ``site`` that NAMED_BY_CONTENT says to their hashed names, fill
    the table of names into the page's script loader and the worker, and return it (path
    -> hashed)."""
    names = {}
    for path in site_files(site):
        if matches(path, NAMED_BY_CONTENT) and not matches(path, NOT_KEPT):
            names[path] = hashed_name(path, (site / path).read_bytes())
            (site / path).rename(site / names[path])
    for page in ("index.html", "main.js"):
        fill_file(site / page, SITE_NAMES=dict(sorted(names.items())))
    return names


def add_service_worker(site: Path, names: dict[str, str]):
    """Have the page register the service worker, and write it beside the page."""
    page = site / "index.html"
    register = f"{HELD_SCRIPT_TAG}\n{REGISTER_SERVICE_WORKER_JS.read_text()}</script>\n"
    page.write_text(replace_once(page.read_text(), "</body>", register + "</body>", "the page"))
    write_service_worker(site, names)


def write_service_worker(site: Path, names: dict[str, str]):
    """Write the service worker beside the page, with the files it keeps and the version
    of the site (a hash of every file's).

    It keeps every file but NOT_KEPT, KEPT_ONCE_FETCHED and the originals of the files
    that the page loads compressed (``names`` has their ``.gz``).
    """
    compressed = {path.removesuffix(".gz") for path in names if path.endswith(".gz")}
    hashes = {path: content_hash((site / path).read_bytes()) for path in site_files(site)}
    hashes.pop(SERVICE_WORKER, None)  # a rebuild's, before it is written anew
    kept = {
        path: digest
        for path, digest in hashes.items()
        if path not in compressed and not matches(path, NOT_KEPT + KEPT_ONCE_FETCHED)
    }
    script = fill(
        bundles()["service_worker"],
        "the service worker",
        SITE_VERSION=content_hash(json.dumps(hashes, sort_keys=True).encode()),
        SITE_FILES=dict(sorted(kept.items())),
        SITE_HASHED=sorted(names.values()),
    )
    (site / SERVICE_WORKER).write_text(script)
