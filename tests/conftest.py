"""Shared fixtures (the built site, served and opened offline); runs the tests of the
built site in Chromium one after another on one worker (they open pages of one
Chromium), those in every engine (``test_engines``) as another group, and those of
the build and of ``panel serve`` each as a group, beside them with the CPython ones on
the other worker; a test of the site that takes minutes alone (``ALONE``) too."""

import os

# numpy's OpenBLAS runs one thread per core in every process: with two workers on two
# cores, four threads fight for them, and the CPython tests' small products took 40 %
# longer side by side (docs/benchmarks.md, "CI's time"). One each, set before numpy
# loads it (nothing has imported numpy yet: test_the_tests_run_numpy_on_one_thread).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest
from browser import OFFLINE_ARGS, http_server, launch
from playwright.sync_api import sync_playwright
from site_pages import SessionHandler, offline_context

import build

REPO = Path(__file__).resolve().parent.parent

# The xdist group of the tests that must run in order on one worker, by module or by
# folder: the built site's in Chromium (tests/site/), each module on a Chromium of its
# own; the site's in every engine, one browser at a time; the build's; panel serve's.
GROUPS = {"site": "site", "test_engines": "engines", "test_build": "build", "test_page": "serve"}


# A test of the site that times nothing and takes minutes: alone, on whichever worker
# is free, beside the site's group rather than in it.
ALONE = {"test_every_question_answers_with_the_numbers_of_its_scenario": "questions"}


def group_of(item) -> str | None:
    return (
        ALONE.get(item.originalname)
        or GROUPS.get(item.path.stem)
        or GROUPS.get(item.path.parent.name)
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """The groups' tests marked, and put in the order xdist hands them out in (kept:
    pyproject.toml's --no-loadscope-reorder): the site's group first, whose first test
    builds the site; beside it, while it builds, what needs no built site (panel
    serve's group, the CPython tests); then what needs the site, the largest groups
    first. (By the groups' sizes, the other worker waited minutes for the build.)"""
    for item in items:
        if group_of(item):
            item.add_marker(pytest.mark.xdist_group(group_of(item)))
    rank = {"site": 0, "serve": 1, "engines": 3, "build": 4, "questions": 5}

    def order(item) -> int:
        group = group_of(item)
        if group in rank:
            return rank[group]
        return 6 if "site" in item.fixturenames else 2

    items.sort(key=order)


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


@pytest.fixture(scope="module")
def site_url(site):
    """The built site, served by the build's handler, recording what a session reads
    (``site_pages.SessionHandler``)."""
    with http_server(site, SessionHandler) as url:
        yield url


@pytest.fixture(scope="module")
def offline():
    """An offline Chromium context (``offline_context``) at 1280 by 900; ``offline.phone``
    makes another, emulating an iPhone 13 (its keywords override the descriptor's), or
    another of ``offline.phones``: Playwright's descriptors, by name; ``offline.desktop``
    another like it, with other keywords; ``offline.launch``
    launches another Chromium, with other arguments."""
    with sync_playwright() as p:
        browser = launch(p, OFFLINE_ARGS)
        context = offline_context(browser, viewport={"width": 1280, "height": 900})
        context.phones = {
            name: {k: v for k, v in p.devices[name].items() if k != "default_browser_type"}
            for name in ("iPhone 13", "Pixel 5")
        }
        iphone = context.phones["iPhone 13"]
        context.phone = lambda **options: offline_context(browser, **(iphone | options))
        desktop = {"viewport": {"width": 1280, "height": 900}}
        context.desktop = lambda **options: offline_context(browser, **(desktop | options))
        context.launch = lambda args: launch(p, args)
        yield context
        browser.close()
