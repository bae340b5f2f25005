"""The build's checks on its inputs and outputs (``build.py``, ``sitebuild/``), and its
CDN variant."""

import base64
import csv
import gzip
import hashlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import panel
import pytest
from browser import REPO, site_file, unhashed
from pyodide_lock import PyodideLockSpec
from site_pages import filled, unpack

import build
from sitebuild import runtime
from sitebuild.bundle import ENTRIES, RUNTIME
from sitebuild.common import BuildError
from sitebuild.fills import FILL, check_filled, fill
from sitebuild.inputs import check_sha256
from sitebuild.page import UNUSED_BOKEH_BUNDLES, check_no_cdn
from sitebuild.runtime import MERGED_CLICKS
from sitebuild.serve import serve
from sitebuild.snapshot import (
    SESSION_STDLIB,
    SNAPSHOT_PRELOAD,
    listed,
    listed_in_order,
)
from sitebuild.wheels import PYODIDE_PATCHES, close_lock, rewrite_wheel


def make_wheel(path, files):
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path


def test_rewrite_wheel_strips_the_compiled_module_and_retags(tmp_path):
    source = make_wheel(
        tmp_path / "fast-1.0-cp312-cp312-manylinux2014_x86_64.whl",
        {
            "fast/__init__.py": "from ._speedups import *  # optional\n",
            "fast/_speedups.cpython-312-x86_64-linux-gnu.so": b"\x7fELF",
            "fast-1.0.dist-info/METADATA": "Name: fast\nVersion: 1.0\n",
            "fast-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
            "Tag: cp312-cp312-manylinux2014_x86_64\n",
            "fast-1.0.dist-info/RECORD": "stale",
        },
    )
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = rewrite_wheel(source, out_dir, drop=("fast/_speedups",), retag=True)
    assert result.name == "fast-1.0-py3-none-any.whl"
    with zipfile.ZipFile(result) as wheel:
        names = wheel.namelist()
        assert not any(n.endswith(".so") for n in names)
        tags = wheel.read("fast-1.0.dist-info/WHEEL").decode()
        assert "Tag: py3-none-any" in tags and "cp312" not in tags
        assert "Root-Is-Purelib: true" in tags
        record = list(csv.reader(wheel.read("fast-1.0.dist-info/RECORD").decode().splitlines()))
        assert {row[0] for row in record} == set(names)
        for name, digest, size in record:
            if digest:
                data = wheel.read(name)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                assert digest == f"sha256={expected.decode()}" and int(size) == len(data)


def test_a_tampered_input_fails_naming_the_file(tmp_path):
    path = tmp_path / "numpy.whl"
    path.write_bytes(b"not numpy")
    with pytest.raises(BuildError, match=r"sha256 mismatch for numpy \(numpy.whl\)"):
        check_sha256(path, "0" * 64, "numpy")


def lock_with(packages):
    info = {
        "arch": "wasm32",
        "platform": "emscripten_3_1_58",
        "version": "0.27.7",
        "python": "3.12.7",
    }
    return PyodideLockSpec(
        info=info,
        packages={
            name: {
                "name": name,
                "version": "1",
                "file_name": f"{name}.whl",
                "install_dir": "site",
                "depends": depends,
            }
            for name, depends in packages.items()
        },
    )


def test_the_lock_must_hold_every_dependency():
    lock = lock_with({"panel": ["param", "nh3"], "param": []})
    close_lock(lock)  # nh3 is a known, documented drop
    assert lock.packages["panel"].depends == ["param"]
    with pytest.raises(BuildError, match="dependency missing from the lock: app needs scipy"):
        close_lock(lock_with({"app": ["scipy"]}))


def test_cdn_addresses_fail_the_build(tmp_path):
    (tmp_path / "index.html").write_text('<script src="https://cdn.holoviz.org/panel.js">')
    with pytest.raises(BuildError, match=r"index.html: https://cdn.holoviz.org"):
        check_no_cdn(tmp_path)
    (tmp_path / "index.html").write_text('<a href="https://example.org/">a link</a>')
    check_no_cdn(tmp_path)


def test_the_cdn_variant_references_the_cdns_and_ships_the_app(site, output_dir):
    """(After the site's build, ``site``: the two share the download cache.)"""
    with open(output_dir / "build-cdn.log", "w") as log:
        subprocess.run(
            [sys.executable, "build.py", "--cdn"],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=900,
        )
    html = (build.CDN_SITE / "index.html").read_text()
    worker = (build.CDN_SITE / "main.js").read_text()
    assert "https://cdn.bokeh.org/bokeh/release/bokeh-3.9.2.min.js" in html
    assert "https://cdn.jsdelivr.net/pyodide/" in worker
    assert 'id="lab-status"' in html and "reportFailure" in worker
    assert "bokeh-gl" not in html  # UNUSED_BOKEH_BUNDLES
    with zipfile.ZipFile(build.CDN_SITE / "main.resources.zip") as resources:
        assert any("attention_scaling_lab" in n for n in resources.namelist())


def test_the_page_loads_no_bokeh_bundle_it_does_not_use(site):
    html = (site / "index.html").read_text()
    for bundle in UNUSED_BOKEH_BUNDLES:
        assert bundle not in html and not list((site / "bokeh").glob(f"{bundle}*")), bundle
    assert "bokeh/bokeh-widgets.min.js" in html  # the bundles it uses stay


def test_an_embed_s_placeholder_is_on_before_anything_of_the_page_is_drawn(site):
    """The placeholder (and the link's dark theme) is set by a script of the head that
    runs as it is parsed, before the page's scripts: not among the inline scripts they
    hold and run one task apart, after the one that draws the prerendered page (the
    status bar's, where it was: a loaded machine painted that page uncovered first)."""
    html = (site / "index.html").read_text()
    sets = html.index("root.classList.add('lab-placeholder')")
    assert sets < html.index("</head>") and sets < html.index("SCRIPTS = [")
    assert html.rfind("<script>", 0, sets) > html.rfind("text/after-page-scripts", 0, sets)


def test_the_shipped_pyodide_carries_each_patch_once(site):
    runtime = (site / "pyodide" / "pyodide.asm.js").read_text()
    for old, new in PYODIDE_PATCHES:
        assert old not in runtime and runtime.count(new) == 1, new


def test_serving_on_a_taken_port_says_so_in_one_line(site, tmp_path):
    """``build.py --serve`` on a busy port names the port and --port; no traceback."""
    site = tmp_path / "site"
    site.mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BuildError) as raised:
            serve(site, "127.0.0.1", port)
        result = subprocess.run(
            [sys.executable, "build.py", "--serve", "--port", str(port)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    message = str(raised.value)
    assert f"127.0.0.1:{port}" in message and "--port" in message and "\n" not in message
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f"[build] FAILED: {message}"
    assert "Traceback" not in result.stderr


def test_a_second_build_is_the_same_bytes(site, tmp_path, output_dir):
    """Same inputs, same site: the snapshot's entropy and clocks are fixed while it is
    made, and every wheel the build writes has fixed file times (so the lock is the same)."""
    again = tmp_path / "site"
    with open(output_dir / "build-again.log", "w") as log:
        subprocess.run(
            [sys.executable, "build.py", "--out", str(again)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=1800,
        )
    named_by_content = sorted(
        p.relative_to(site).as_posix() for p in site.rglob("*") if p.name != unhashed(p.name)
    )
    assert site_file(site, "snapshot/snapshot.bin.gz").name in " ".join(named_by_content)
    names = {*named_by_content, *(p.relative_to(site).as_posix() for p in site.glob("pyodide/*"))}
    assert "pyodide/pyodide-lock.json" in names
    for name in sorted(names):
        assert sha256_of(again / name) == sha256_of(site / name), name


def sha256_of(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Imports the worker's snapshot module (static/runtime/worker/snapshot.js) in node, its
# fills and the worker's fetch set first, with the site's snapshot (either compression)
# for its download, and writes the snapshot's memory image into a fresh memory whose
# first page of zeros in the image and first non-zero page were written by the
# runtime's start-up.
RESTORE_JS = r"""
const fs = require('fs');
const zlib = require('zlib');
const {pathToFileURL} = require('url');
const [snapshotFile, served, sizes, fzstdFile, out] = process.argv.slice(1);
globalThis.self = globalThis;
globalThis.__LAB_SNAPSHOT__ = {sizes: JSON.parse(sizes), holes: []};
globalThis.__LAB_SITE_NAMES__ = {};
globalThis.fzstd = require(fzstdFile);
globalThis.fetch = async () => {  // the worker's own fetch (./errors.js's fetchFromSite)
  let bytes = fs.readFileSync(snapshotFile);
  if (served === 'decompressed by the browser') bytes = zlib.gunzipSync(bytes);
  if (served === 'cut short') bytes = bytes.subarray(0, bytes.length >> 1);
  // in pieces, as a network gives them (the first byte alone, as one may)
  const pieces = served === 'its first byte alone' ? [bytes.subarray(0, 1)] : [];
  for (let at = pieces.length; at < bytes.length; at += 65536) {
    pieces.push(bytes.subarray(at, at + 65536));
  }
  return new Response(new ReadableStream({
    pull(controller) {
      if (pieces.length) controller.enqueue(pieces.shift());
      else controller.close();
    },
  }));
};
(async () => {
  const {PAGE, isZero, openSnapshot, streamedDownload} = await import(
    pathToFileURL(process.env.SNAPSHOT_MODULE));
  const opened = async () => openSnapshot(streamedDownload('snapshot'));
  let snapshot = await opened();
  const heap = new Uint8Array(Math.ceil(snapshot.size / 65536) * 65536);
  try {
    await snapshot.writeImage(heap);
  } catch (error) {
    fs.writeFileSync(out, 'refused');
    return;
  }
  const pages = [];
  for (let at = 0; at < heap.length; at += PAGE) pages.push(isZero(heap.subarray(at, at + PAGE)));
  heap.fill(0);
  for (const zero of [true, false]) {
    const at = pages.indexOf(zero) * PAGE;
    heap.fill(0xab, at, at + PAGE);
  }
  snapshot = await opened();
  await snapshot.writeImage(heap);
  fs.writeFileSync(out, Buffer.concat([Buffer.from(snapshot.header), heap]));
})();
"""


@pytest.mark.parametrize(
    "served", ["gzip", "zstd", "its first byte alone", "decompressed by the browser", "cut short"]
)
def test_the_worker_writes_the_snapshot_into_the_memory_as_it_is(site, tmp_path, served):
    """The worker decompresses the snapshot's memory image (gzip or zstd) straight into
    the wasm memory as it downloads, skipping its pages of zeros where the memory reads
    zeros: the memory then holds the image byte for byte, with the header apart; a
    short download is refused."""
    compressed = "zst" if served == "zstd" else "gz"
    snapshot_file = site_file(site, f"snapshot/snapshot.bin.{compressed}")
    snapshot = gzip.decompress(site_file(site, "snapshot/snapshot.bin.gz").read_bytes())
    sizes = json.dumps({"snapshot.bin": len(snapshot)})
    fzstd = site_file(site, "snapshot/fzstd.js")
    out = tmp_path / "restored"
    env = {"SNAPSHOT_MODULE": str(RUNTIME / "worker" / "snapshot.js"), "PATH": os.environ["PATH"]}
    command = ["node", "-e", RESTORE_JS, snapshot_file, served, sizes, fzstd, out]
    subprocess.run(command, env=env, check=True)
    restored = out.read_bytes()
    if served == "cut short":
        assert restored == b"refused"
        return
    image_start = int.from_bytes(snapshot[4:8], "little")
    assert restored[: len(snapshot)] == snapshot
    assert restored[len(snapshot) :] == bytes(len(restored) - len(snapshot))
    # The case tested: the image starts inside a page of the download (its pages
    # straddle the decompressor's chunks), and it has pages of zeros to skip.
    assert image_start % 4096 != 0 and snapshot.count(bytes(4096)) > 1000


def test_the_restored_standard_library_holds_only_what_a_session_reads(site):
    """The standard library the worker restores with is Pyodide's zip, byte for byte,
    with zeros where the worker's table says: over every member but those a session
    reads (SESSION_STDLIB); its central directory is whole; the zeros cost next to
    nothing shipped."""
    whole = site_file(site, "pyodide/python_stdlib.zip").read_bytes()
    shipped = site_file(site, "pyodide/python_stdlib.sparse.zip.gz").read_bytes()
    sparse = gzip.decompress(shipped)
    zeros = filled(site / "main.js", "BUILT")["holes"]
    assert len(sparse) == len(whole)
    at = 0
    for start, end in zeros:
        assert sparse[at:start] == whole[at:start] and sparse[start:end] == bytes(end - start)
        at = end
    assert sparse[at:] == whole[at:]
    with zipfile.ZipFile(io.BytesIO(sparse)) as restored, zipfile.ZipFile(io.BytesIO(whole)) as z:
        assert restored.namelist() == z.namelist()
        kept = listed(SESSION_STDLIB)
        for info in z.infolist():
            lacking = any(start <= info.header_offset < end for start, end in zeros)
            assert lacking == (info.filename not in kept), info.filename
        # what the zip holds but for its members' data (names, headers, the directory)
        skeleton = len(whole) - sum(i.compress_size for i in z.infolist() if i.filename not in kept)
    assert len(shipped) < skeleton  # the zeros cost nearly nothing shipped


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # Panel 1.9 on Panel 2
def test_new_draw_is_the_button_whose_quick_clicks_merge():
    """The page merges quick clicks only of buttons tagged MERGED_CLICKS."""
    from app.page import AttentionLab

    lab = AttentionLab()
    assert MERGED_CLICKS in lab.new_draw.tags
    assert MERGED_CLICKS not in lab.stage.next_section.tags


# Panel 1.9.4's templates that the runtime's own modules (static/runtime/) were derived
# from, by their sha256: a Panel whose templates differ fails here, naming the module
# to compare it with.
PANEL_TEMPLATES = {
    "pyodide_worker.js": (
        ENTRIES["worker"],
        "9ff7af85f24059b3c1f557891500acf63dff129dc8441156915980e5fe45161b",
    ),
    "pyodide_handler.js": (
        ENTRIES["handler"],
        "05130a390232504267e3121cd27ddaa0520494fef34aedf031f21b289d842d56",
    ),
}


def test_the_runtime_is_derived_from_panel_s_templates_as_they_are():
    """Each of Panel's templates the runtime's were derived from is as it was then."""
    panel_templates = Path(panel.__file__).parent / "_templates"
    for name, (own, digest) in PANEL_TEMPLATES.items():
        theirs = panel_templates / name
        assert sha256_of(theirs) == digest, f"{theirs} changed: compare it with {own}"


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # Panel 1.9 on Panel 2
def test_panel_s_converter_writes_the_runtime_s_own_worker_and_handler():
    """Panel's converter renders the project's worker and handler where it takes its own
    templates: each bundled from its modules (one script, no module syntax left), with
    Panel's variables filled in and the build's fills still open; the handler merges by
    MERGED_CLICKS."""
    from panel.io import convert as panel_convert

    runtime.use_own_runtime(panel_convert)
    code = "print('`1`')\n".encode("unicode_escape").decode().replace("`", r"\`")  # as Panel's
    panel_variables = {"PYODIDE_URL": "p.js", "data_archives": "", "env_spec": "'a'", "code": code}
    worker = panel_convert.WEB_WORKER_TEMPLATE.render(panel_variables)  # as Panel renders
    handler = panel_convert.WORKER_HANDLER_TEMPLATE.render({"name": "main", "loading_spinner": ""})
    panel = {"pyodideUrl": "p.js", "dataArchives": [], "requirements": ["a"]}
    assert json.dumps(panel | {"code": "print('`1`')\n"}) in worker
    assert sorted(set(FILL.findall(worker))) == ["SITE_NAMES", "SNAPSHOT"]
    assert sorted(set(FILL.findall(handler))) == ["BUILD"]
    for function in ("shareAmongPages", "reportFailures", "restoreSnapshot", "startWhenAsked"):
        assert f"function {function}(" in worker, function
    for function in ("labWorker", "postChange", "changeDone", "send_change"):
        assert f"function {function}(" in handler, function
    for script in (worker, handler):
        assert not re.search(r"^\s*(import\s*\{|export\s+(function|const|\{))", script, re.M)
    assert f"includes({json.dumps(MERGED_CLICKS)})" in handler
    assert 'labWorker("./main.js")' in handler


def test_a_fill_is_there_once_and_none_is_left():
    """The build's one way to put a value in what it ships: each fill is named once, and
    is replaced by its value as JSON; a missing, repeated or unfilled one stops it."""
    assert fill("a = __LAB_X__;", "x.js", X={"b": [1]}) == 'a = {"b": [1]};'
    with pytest.raises(BuildError, match=r"x\.js has 0 fills __LAB_Y__, not one"):
        fill("a = __LAB_X__;", "x.js", Y=1)
    with pytest.raises(BuildError, match=r"x\.js has 2 fills __LAB_X__, not one"):
        fill("__LAB_X__ + __LAB_X__", "x.js", X=1)


def test_the_built_site_has_every_fill_filled(site, tmp_path):
    """No file the build fills holds a fill left unfilled; one that did stops the build."""
    check_filled(site, build.FILLED)
    assert not FILL.search((site / "service_worker.js").read_text())
    (tmp_path / "main.js").write_text("const x = __LAB_SNAPSHOT__;")
    left = r"main\.js has fills the build did not fill: \['SNAPSHOT'\]"
    with pytest.raises(BuildError, match=left):
        check_filled(tmp_path, ("main.js",))


def test_the_worker_gives_back_the_python_panel_escaped():
    """The app's Python that the snapshot is made from is the worker's, as it runs it:
    Panel's converter escapes it for a JavaScript template literal (panel.io.convert,
    script_to_html), and ``runtime.Worker.python`` undoes that."""
    python = 'print("`é` \\n", r"\\`", "\\u00e9")\nwrite_doc()\n'
    worker = runtime.Worker()
    worker.panel_variables = {
        "code": python.encode("unicode_escape").decode("utf-8").replace("`", r"\`")
    }
    assert worker.python() == python


def test_the_snapshot_holds_nothing_of_where_it_was_built(site):
    """The snapshot's memory holds no path of the machine that built it: Python's
    argv[0] was the snapshot script's path, so the checkout's folder went to every
    visitor, and a build in another folder gave other bytes."""
    memory = gzip.decompress(site_file(site, "snapshot/snapshot.bin.gz").read_bytes())
    assert str(REPO).encode() not in memory


def test_the_snapshot_loads_the_extension_modules_in_the_order_recorded(site):
    """The worker loads, before restoring, the extension modules that the snapshot's
    Python loaded, in their order: those SNAPSHOT_PRELOAD lists, as it lists them (the
    build found it current; a stale list costs every build a second run of node)."""
    packed = gzip.decompress(site_file(site, "snapshot/site-packages.pack.gz").read_bytes())
    _, preload, _ = unpack(packed)
    assert preload == listed_in_order(SNAPSHOT_PRELOAD)
    assert preload and all(path.endswith(".so") for path in preload)
