"""Shared fixtures; makes ``tests/`` importable for the helper modules beside the tests;
runs the tests of the built site one after another on one worker (they time and measure
the page), but for one that times nothing and takes minutes (``ALONE``), and those of
the build and of ``panel serve`` each as a group, beside them with the CPython ones on
the others."""

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

import build

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))

# The xdist group of each module whose tests must run in order on one worker: the built
# site's, in a browser; the build's; panel serve's.
GROUPS = {
    "test_answers": "site",
    "test_embed": "site",
    "test_engines": "site",
    "test_offline": "site",
    "test_site": "site",
    "test_build": "build",
    "test_page": "serve",
}


# A test of the site that times nothing and takes minutes: alone, on whichever worker
# is free, beside the site's group rather than in it.
ALONE = {"test_every_question_answers_with_the_numbers_of_its_scenario": "questions"}


def group_of(item) -> str | None:
    return ALONE.get(item.originalname) or GROUPS.get(item.module.__name__)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """The groups' tests marked, and scheduled first: the site's group takes longest."""
    for item in items:
        if group_of(item):
            item.add_marker(pytest.mark.xdist_group(group_of(item)))
    rank = {"site": 0, "questions": 1, "build": 2, "serve": 3}
    items.sort(key=lambda item: rank.get(group_of(item), len(rank)))


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """``test-output/`` at the repo root: logs and screenshots the tests leave behind."""
    path = REPO / "test-output"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def site(output_dir) -> Path:
    """The self-contained site, built with the real build script unless it is up to date
    with every file it is built from (``build.is_stale``; a fresh clone has none), by
    one xdist worker at a time."""
    with open(output_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds; the others wait for it
        if build.is_stale(build.SITE):
            with open(output_dir / "build.log", "w") as log:
                subprocess.run(
                    [sys.executable, "build.py"],
                    cwd=REPO,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    check=True,
                    timeout=1800,
                )
    return build.SITE
