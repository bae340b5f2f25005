"""Shared fixtures; makes ``tests/`` importable for the helper modules beside the tests."""

import subprocess
import sys
from pathlib import Path

import pytest

import build

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))


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
