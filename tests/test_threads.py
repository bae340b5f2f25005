"""The test run's numpy: one OpenBLAS thread a process (tests/conftest.py), so that the
two workers' CPython tests and browsers do not fight over the two cores."""

import ctypes
from pathlib import Path

import numpy as np


def openblas_threads() -> int:
    """The threads numpy's own OpenBLAS (the wheel's ``numpy.libs``) runs a product on."""
    (library,) = (Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*")
    return ctypes.CDLL(str(library)).scipy_openblas_get_num_threads64_()


def test_the_tests_run_numpy_on_one_thread():
    assert openblas_threads() == 1
