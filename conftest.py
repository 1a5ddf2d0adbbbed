"""Names every doctest can use, so examples read as a user would write them."""

import os

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

# The suite runs jit's scans as numpy loops (compiling each test's scan with numba would
# cost seconds apiece); tests/transforms/test_cpu_compile.py turns the backend on, and
# FGRAD_TEST_CPU_COMPILE=1 runs the whole suite with it.
fgrad.config.cpu_compile = os.environ.get("FGRAD_TEST_CPU_COMPILE") == "1"


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace.update(np=np, fgrad=fgrad, fnp=fnp)
