"""Every op's docstring example runs, collected from the registry (doctest's own finder
sees only functions and classes, so op docstrings need this one test)."""

import doctest

import numpy as np
import pytest
from _pytest.doctest import _get_checker  # pytest's checker: knows the NUMBER flag

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import REGISTRY

# The flags pyproject.toml gives pytest's own doctests.
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS | doctest.register_optionflag("NUMBER")


def _ops_with_examples():
    return sorted(name for name, op in REGISTRY.items() if op.doc and ">>>" in op.doc)


def test_every_op_has_an_example():
    assert not [n for n in sorted(REGISTRY) if n not in _ops_with_examples()]


@pytest.mark.parametrize("name", _ops_with_examples())
def test_op_docstring_example(name):
    op = REGISTRY[name]
    test = doctest.DocTestParser().get_doctest(
        op.doc, {"np": np, "fgrad": fgrad, "fnp": fnp}, f"op {name}", None, 0
    )
    runner = doctest.DocTestRunner(checker=_get_checker(), optionflags=FLAGS)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
