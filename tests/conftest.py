"""Shared fixtures; makes ``tests/`` importable for the helper modules beside the tests."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """``test-output/`` at the repo root: logs and screenshots the tests leave behind."""
    path = Path(__file__).resolve().parent.parent / "test-output"
    path.mkdir(exist_ok=True)
    return path
