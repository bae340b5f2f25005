"""Shared fixtures; makes ``tests/`` importable for the helper modules beside the tests;
runs the tests that drive a browser or build the site one after another on one worker
(they time and measure the page), the CPython ones beside them on the others."""

import subprocess
import sys
from pathlib import Path

import pytest

import build

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))

# The modules whose tests build the site or drive a browser or a server.
ON_THE_SITE = {"test_answers", "test_build", "test_engines", "test_page", "test_site"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """The site's tests in one xdist group, scheduled first: it takes longest."""
    for item in items:
        if item.module.__name__ in ON_THE_SITE:
            item.add_marker(pytest.mark.xdist_group("site"))
    items.sort(key=lambda item: item.module.__name__ not in ON_THE_SITE)


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """``test-output/`` at the repo root: logs and screenshots the tests leave behind."""
    path = REPO / "test-output"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def site(output_dir) -> Path:
    """The self-contained site, built with the real build script unless it is up to date
    with every file it is built from (``build.is_stale``; a fresh clone has none)."""
    if not build.is_stale(build.SITE):
        return build.SITE
    with open(output_dir / "build.log", "w") as log:
        subprocess.run(
            [sys.executable, "build.py"],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=1800,
        )
    return REPO / "static" / "site"
