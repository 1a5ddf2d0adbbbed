"""What users see of an op: its signature, its type, and what its docstring promises."""

import inspect

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad.ops import REGISTRY


def test_issue_11_op_signatures_are_the_kernels():
    assert str(inspect.signature(fnp.tanh)) == "(x)"
    assert str(inspect.signature(fnp.add)) == "(x, y)"
    assert str(inspect.signature(fnp.arctan2)) == "(x, y)"


@pytest.mark.parametrize("name", ["negative", "real", "conj"])
def test_dtype_keeping_ops_say_so(name):
    op = REGISTRY[name]
    assert PROMISE not in op.doc
    assert op(fnp.asarray(np.ones(3, dtype=np.int16))).dtype == np.int16


def test_issue_11_an_op_type_names_the_op():
    assert type(fnp.tanh).__name__ == "Op[tanh]"
    assert [c.__name__ for c in type(fnp.tanh).__mro__] == ["Op[tanh]", "Op", "object"]


PROMISE = "promoted to the smallest float that holds them"
# numpy's rule for transcendental functions, which the shared docstring states.
WANT = {"bool": np.float16, "int8": np.float16, "int16": np.float32, "int32": np.float64, "int64": np.float64}


@pytest.mark.parametrize("name", sorted(n for n, op in REGISTRY.items() if op.doc and PROMISE in op.doc))
def test_issue_11_integer_promotion_is_as_documented(name):
    op = REGISTRY[name]
    for dtype, want in WANT.items():
        with np.errstate(all="ignore"):
            out = op(fnp.asarray(np.ones(3, dtype=dtype)))
        assert out.dtype == want, f"{name}({dtype}) gave {out.dtype}, the docstring says {want}"
