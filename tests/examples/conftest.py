"""Loading the examples: they are scripts (``python examples/digits.py``), not a package."""

import importlib.util
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="session")
def load_example():
    """``load_example("digits")``: a freshly executed module of ``examples/digits.py``."""

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"{name}_example", EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while being created
        spec.loader.exec_module(module)
        return module

    return load
