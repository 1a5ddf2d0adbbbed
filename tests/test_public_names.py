"""Public modules list only their public API: every name ``dir()`` shows without a leading
underscore is in ``__all__``, and every name in ``__all__`` exists (so ``help()``, tab
completion and ``from m import *`` agree)."""

import importlib

import pytest

MODULES = [
    "fgrad",
    "fgrad.tree",
    "fgrad.lax",
    "fgrad.io",
    "fgrad.distributed",
    "fgrad.debug",
    "fgrad.flatten_util",
]


@pytest.mark.parametrize("name", MODULES)
def test_dir_shows_only_names_in_all(name):
    module = importlib.import_module(name)
    public = {n for n in dir(module) if not n.startswith("_")}
    assert public - set(module.__all__) == set(), f"{name} lists non-public names"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what does not exist: {missing}"
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"


def test_star_import_gives_all():
    namespace: dict = {}
    exec("from fgrad.tree import *", namespace)  # noqa: S102
    assert {n for n in namespace if not n.startswith("_")} == set(
        importlib.import_module("fgrad.tree").__all__
    )


def test_hidden_imports_stay_reachable():
    """Hiding a module's imports from dir() must not remove them (code that imported them
    from there keeps working)."""
    io = importlib.import_module("fgrad.io")
    distributed = importlib.import_module("fgrad.distributed")
    assert "np" not in dir(io) and io.np.__name__ == "numpy"
    assert "os" not in dir(distributed) and distributed.os.__name__ == "os"
