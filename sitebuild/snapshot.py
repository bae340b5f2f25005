"""The worker's memory snapshot (``snapshot/``): made in node, shipped compressed with
the files of site-packages it lacks, and booted from by the worker; and Pyodide's
runtime, shipped compressed beside the originals."""

import gzip
import io
import json
import shutil
import struct
import tarfile
import tempfile
import zipfile
from pathlib import Path

import zstandard

from sitebuild.common import STATIC, BuildError, run, say
from sitebuild.fills import fill_file
from sitebuild.inputs import fetch_fzstd_npm
from sitebuild.page import WORKER_REQUIREMENTS
from sitebuild.runtime import Worker

# The worker's memory snapshot: made in node by MAKE_SNAPSHOT_JS, restored by the
# worker (static/runtime/worker/snapshot.js), both with the helpers in SNAPSHOT_JS.
SNAPSHOT_JS = STATIC / "snapshot.js"
MAKE_SNAPSHOT_JS = STATIC / "make_snapshot.js"
# Pyodide's files that the worker fetches gzip-compressed (static/runtime/worker/runtime.js).
# python_stdlib.zip is a zip of compressed files already: not worth a second copy (the
# sizes: docs/benchmarks.md, "Behind the code's constants").
RUNTIME_GZ = ("pyodide.asm.wasm", "pyodide.asm.js")
# The files of site-packages that the worker reads after restoring the snapshot, in a
# full session, besides the extension modules: they ride in the pack, and every other
# file is fetched alone if Python ever reads it (static/runtime/worker/snapshot.js).
# tests/site/conftest.py records what a full session reads and fails when this is stale.
SESSION_FILES = STATIC / "session_files.txt"
# The same for the standard library's zip: the members a full session reads after the
# restore (tests/site/conftest.py records them too).
SESSION_STDLIB = STATIC / "session_stdlib.txt"
# The extension modules the worker's Python loads, in the order it loads them: the
# worker loads them so before restoring. make_snapshot.js checks the order and says
# when it is stale (then the build makes the snapshot again with the order found);
# test_build checks the site's.
SNAPSHOT_PRELOAD = STATIC / "snapshot_preload.txt"
STALE_PRELOAD = 3  # make_snapshot.js's exit code when SNAPSHOT_PRELOAD is not the order
# The snapshot and its pack ship compressed twice: gzip (level 6) and zstd (level 19,
# two threads), the levels weighed in docs/benchmarks.md ("Behind the code's
# constants"). The worker fetches one of each (static/runtime/worker/snapshot.js), and is
# told the size of the snapshot's files, and of what they hold (``add_snapshot``).
ZSTD_LEVEL = 19
ZSTD_THREADS = 2  # fixed: the same bytes on every machine
# The standard library the worker restores with: Pyodide's zip with zeros but for the
# members a session reads (SESSION_STDLIB) and its central directory, gzip-compressed
# (its size against the alternatives: docs/benchmarks.md). Where Python reads there
# after all (a traceback's source lines, a module no session
# imports), the worker fetches the whole zip.
SPARSE_STDLIB = "python_stdlib.sparse.zip"
FZSTD_JS = "package/umd/index.js"  # in fzstd's npm package; shipped as snapshot/fzstd.js


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


def listed(path: Path) -> set[str]:
    """The paths ``path`` lists (SESSION_FILES, SESSION_STDLIB): one per line; # starts a
    comment."""
    return set(listed_in_order(path))


def listed_in_order(path: Path) -> list[str]:
    """The paths ``path`` lists, in its order (SNAPSHOT_PRELOAD)."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def make_snapshot(site: Path, python: str) -> tuple[dict[str, bytes], dict[str, int]]:
    """The worker's memory snapshot and its files, by file name, ready to ship; and the
    size of the snapshot's files and of what they hold (``snapshot.bin``).

    ``snapshot.bin.gz`` and ``snapshot.bin.zst`` are Pyodide's wasm memory after the
    worker's own code (``python``) has run in node (``static/make_snapshot.js``): packages
    imported, the app's document built. ``site-packages.pack.gz`` (and ``.zst``) holds what the
    snapshot does not and the worker needs: the extension modules to load before
    restoring, in order, and the files a session reads (SESSION_FILES). gzip's have a
    fixed time stamp: the same inputs give the same bytes. The worker decompresses
    them itself, so any static host serves them small. Every other file Python could
    still read (a module nobody imports yet) is shipped alone under
    ``site-packages/``, fetched only if it is read.
    """
    files = site_packages(site / "pyodide")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "site-packages.pack").write_bytes(pack(files, [], {}))
        (work / "worker.py").write_text(python)
        preload = make_memory_snapshot(site, work, listed_in_order(SNAPSHOT_PRELOAD))
        imported = set(json.loads((work / "imported.json").read_text()))
        snapshot = (work / "snapshot.bin").read_bytes()
    kept = {path: data for path, data in files.items() if path not in imported}
    wanted = listed(SESSION_FILES)
    if unknown := wanted - files.keys():
        raise BuildError(f"{SESSION_FILES.name} lists files the worker lacks: {unknown}")
    packed = {path: data for path, data in kept.items() if path in {*preload, *wanted}}
    elsewhere = {path: data for path, data in kept.items() if path not in packed}
    sizes = {path: len(data) for path, data in elsewhere.items()}
    held = {"snapshot.bin": snapshot, "site-packages.pack": pack(packed, preload, sizes)}
    megabytes = sum(len(data) for data in held.values()) / 1e6
    say(f"compressing the snapshot and its pack ({megabytes:.0f} MB: gzip, zstd {ZSTD_LEVEL})")
    shipped = {
        f"{name}.gz": gzip.compress(data, compresslevel=6, mtime=0) for name, data in held.items()
    }
    zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL, threads=ZSTD_THREADS)
    shipped |= {f"{name}.zst": zstd.compress(data) for name, data in held.items()}
    snapshot_files = (held | shipped).items()
    lengths = {name: len(data) for name, data in snapshot_files if name.startswith("snapshot.bin")}
    ready = shipped | {f"site-packages/{path}": data for path, data in elsewhere.items()}
    return ready, lengths


def make_memory_snapshot(site: Path, work: Path, preload: list[str]) -> list[str]:
    """Run make_snapshot.js in ``work`` (its pack and worker.py written), loading the
    extension modules ``preload`` first; if the worker's Python loads others or in
    another order, once more with the order it found. The order the snapshot holds."""
    for _ in range(2):
        (work / "preload.json").write_text(json.dumps(preload))
        command = ["node", str(MAKE_SNAPSHOT_JS), str(site), str(work)]
        if run(command, expected=(0, STALE_PRELOAD)) == 0:
            return preload
        preload = json.loads((work / "preload.json").read_text())
        say(
            f"{SNAPSHOT_PRELOAD.name} is not the order the worker loads its extension "
            f"modules in: making the snapshot again, loading them as found ({preload})"
        )
    raise BuildError("the extension modules loaded differ from run to run")


def add_snapshot(site: Path, worker: Worker):
    """Ship the snapshot in ``site/snapshot/`` and fill the worker (``main.js``) to boot
    from it: the sizes of its files, and where the standard library's zeros are."""
    say("making the worker's memory snapshot (node)")
    folder = site / "snapshot"
    folder.mkdir()
    shipped, lengths = make_snapshot(site, worker.python())
    for name, data in shipped.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    stdlib = site / "pyodide" / "python_stdlib.zip"
    sparse, holes = sparse_stdlib(stdlib.read_bytes(), listed(SESSION_STDLIB))
    compressed = gzip.compress(sparse, compresslevel=9, mtime=0)
    stdlib.with_name(f"{SPARSE_STDLIB}.gz").write_bytes(compressed)
    shutil.copy2(SNAPSHOT_JS, folder / SNAPSHOT_JS.name)
    with tarfile.open(fetch_fzstd_npm()) as npm:
        (folder / "fzstd.js").write_bytes(npm.extractfile(FZSTD_JS).read())
    fill_file(site / "main.js", SNAPSHOT={"sizes": lengths, "holes": holes})


def sparse_stdlib(archive: bytes, kept: set[str]) -> tuple[bytes, list[list[int]]]:
    """``archive`` (the standard library's zip) with zeros over each file but those
    ``kept`` (its local header and its data), its central directory kept, so that every
    offset Python cached when it imported them stays true; and where the zeros are,
    merged: ``[[start, end], ...]``."""
    sparse, holes = bytearray(archive), []
    with zipfile.ZipFile(io.BytesIO(archive)) as stdlib:
        if unknown := kept - set(stdlib.namelist()):
            raise BuildError(f"{SESSION_STDLIB.name} lists files the zip lacks: {unknown}")
        for info in stdlib.infolist():
            if info.filename in kept:
                continue
            start = info.header_offset
            name_length, extra_length = struct.unpack("<HH", archive[start + 26 : start + 30])
            end = start + 30 + name_length + extra_length + info.compress_size
            sparse[start:end] = bytes(end - start)
            holes.append([start, end])
    merged = []
    for start, end in sorted(holes):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return bytes(sparse), merged


def compress_runtime(pyodide_dir: Path):
    """Write each of RUNTIME_GZ gzip-compressed beside it (fixed time stamp: the same
    bytes on every build), and the wasm zstd-compressed too (for a slow link: 2.4 MB
    against 3.1). The originals stay for what asks for them by name: the worker when the
    site lacks a .gz, the bare Pyodide page of the benchmark."""
    for name in RUNTIME_GZ:
        data = (pyodide_dir / name).read_bytes()
        (pyodide_dir / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    wasm = (pyodide_dir / "pyodide.asm.wasm").read_bytes()
    zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL, threads=ZSTD_THREADS)
    (pyodide_dir / "pyodide.asm.wasm.zst").write_bytes(zstd.compress(wasm))
