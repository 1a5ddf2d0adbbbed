"""Shared fixtures: array namespaces, seeds and hypothesis profiles."""

import os

import numpy as np
import pytest
from hypothesis import settings

from fgrad import backend
import fgrad.llm.quantized  # noqa: F401,E402  (its ops join the registry-wide sweeps, whatever runs)

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def _namespaces():
    yield pytest.param(np, id="numpy")
    if backend.cupy_available():
        import cupy

        yield pytest.param(cupy, id="cupy", marks=pytest.mark.gpu)
    else:
        yield pytest.param(None, id="cupy", marks=pytest.mark.skip(reason="cupy or a GPU missing"))


@pytest.fixture(params=list(_namespaces()))
def xp(request):
    """The array namespace under test: numpy, and cupy where a GPU exists."""
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(0)
