"""The tests of the built site: the page they open (``open_lab``), and what they check
after each test, together a full session (every section, control, question, training,
the sweep and export): the page loaded only the files the service worker keeps, and
none that the pack or the restored standard library lacks (``site_pages.SessionHandler``
records them)."""

import pytest
from browser import Console, unhashed
from site_pages import (
    ELSEWHERE,
    SessionHandler,
    kept_files,
    stdlib_members,
    wait_until_ready,
)

from sitebuild.snapshot import SESSION_FILES, SESSION_STDLIB


@pytest.fixture
def open_lab(offline, site_url):
    """Opens the lab at a link of the built site (``open_lab("?d_k=512")``): a new page
    of the offline context, its console watched (``page.console.errors``), returned once
    the status bar says it is live, from the snapshot (waiting on the page's own state,
    touching nothing). After the test, no page it opened said an error; each is closed."""
    opened = []

    def open_at(link: str = ""):
        page = offline.new_page()
        page.console = Console(page)
        opened.append(page)
        page.goto(site_url + link)
        wait_until_ready(page)
        return page

    yield open_at
    for page in opened:
        page.close()
    assert {page.url: page.console.errors for page in opened if page.console.errors} == {}


@pytest.fixture(autouse=True)
def reads_only_its_pack(request, output_dir):
    """Every test of the site on ``site_url`` (together, a full session: every section,
    control, question, training, the sweep and export) records the files of
    site-packages Python read that the pack lacks; there must be none. A file read on
    every visit costs a round trip each: SESSION_FILES must list it."""
    yield
    if "site_url" not in request.fixturenames:
        return
    read = sorted(set(SessionHandler.read_elsewhere))
    SessionHandler.read_elsewhere.clear()
    if read:
        with open(output_dir / "session_files.missing.txt", "a") as missing:
            missing.write("".join(f"{path}\n" for path in read))
        pytest.fail(f"{request.node.name} read files {SESSION_FILES.name} lacks: {read}")


@pytest.fixture(autouse=True)
def loads_only_what_is_kept(request, site, output_dir):
    """Every file the page loads in the tests of the site on ``site_url`` is one its
    service worker keeps for the next visit (or offline), but for the service worker
    itself and the files of site-packages the pack left out (kept once fetched); and
    none of them is the whole standard library: Python read no member of it that the
    restored copy lacks (SESSION_STDLIB lists what a session reads)."""
    yield
    if "site_url" not in request.fixturenames:
        return
    requested = set(SessionHandler.requested)
    SessionHandler.requested.clear()
    # Python read a part of the standard library that the restored copy lacks
    # (sitebuild.snapshot.sparse_stdlib): SESSION_STDLIB must list its member.
    read = stdlib_members(site, SessionHandler.read_stdlib_at)
    SessionHandler.read_stdlib_at.clear()
    if read:
        with open(output_dir / "session_stdlib.missing.txt", "a") as missing:
            missing.write("".join(f"{name}\n" for name in read))
    assert read == [], f"{request.node.name} read files {SESSION_STDLIB.name} lacks"
    whole_stdlib = [path for path in requested if unhashed(path) == "pyodide/python_stdlib.zip"]
    assert whole_stdlib == [], f"{request.node.name} fetched the whole standard library"
    unkept = sorted(
        path
        for path in requested - kept_files(site) - {"service_worker.js"}
        if not ("/" + path).startswith(ELSEWHERE)
    )
    assert unkept == [], f"{request.node.name} loaded files the service worker does not keep"
