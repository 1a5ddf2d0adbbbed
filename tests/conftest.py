"""Shared fixtures: array namespaces, seeds and hypothesis profiles."""

import logging
import os

import numpy as np
import pytest
from hypothesis import settings

import fgrad
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


# The numba backend's tests (tests/transforms: fused kernels, compiled loops).


@pytest.fixture(scope="module")
def numba_backend(tmp_path_factory):
    """numba on (the root conftest turns it off), kernels cached in a private folder;
    a module takes it with ``pytestmark = pytest.mark.usefixtures("numba_backend")``."""
    old = os.environ.get("FGRAD_CACHE_DIR")
    os.environ["FGRAD_CACHE_DIR"] = str(tmp_path_factory.mktemp("numba_cache"))
    before = fgrad.config.cpu_compile
    fgrad.config.cpu_compile = True
    yield
    fgrad.config.cpu_compile = before
    if old is None:
        del os.environ["FGRAD_CACHE_DIR"]
    else:
        os.environ["FGRAD_CACHE_DIR"] = old


@pytest.fixture
def log(caplog, monkeypatch):
    """What ``config.log_compiles`` writes (compiled, loaded, fell back and why)."""
    monkeypatch.setattr(fgrad.config, "log_compiles", True)
    caplog.set_level(logging.WARNING, logger="fgrad")
    return caplog
