"""Fixtures of the numba backend's tests (fused kernels, compiled loops)."""

import logging
import os

import pytest

import fgrad


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
