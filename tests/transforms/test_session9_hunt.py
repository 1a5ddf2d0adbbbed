"""Reproducers found by reviewing commits ba0d7e0..819a6f5 (jit vs eager vs JAX).

Each xfail is a bug in library code, left for its owner to fix (then drop the mark).
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax


def _scale(x, n=2):
    return x * n


@pytest.mark.xfail(
    strict=True,
    reason="jit._typed_tuple refuses numpy integers (isinstance(x, int)); JAX takes them "
    "(operator.index), and a list of them worked before f23b4b3",
)
@pytest.mark.parametrize("nums", [np.int64(1), [np.int64(1)], (np.int32(1),)])
def test_static_argnums_take_numpy_integers(nums):
    f = fgrad.jit(_scale, static_argnums=nums)
    np.testing.assert_array_equal(np.asarray(f(fnp.ones(2), 3)), [3.0, 3.0])


@pytest.mark.xfail(
    strict=True,
    reason="_fori_body's _check_carry refuses a weak (traced Python float) output that "
    "scan's _coerce casts; worked before b8abb93",
)
def test_fori_loop_body_may_return_a_traced_python_float():
    # Under jit a Python float argument is a weak scalar: a body returning it must act as
    # a body returning the literal (as scan and while_loop do).
    x = fnp.asarray(np.float32(1.0))
    want = fgrad.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: 0.5, x))(x)
    got = fgrad.jit(lambda x, s: lax.fori_loop(0, 3, lambda i, c: s, x))(x, 0.5)
    assert got.dtype == want.dtype == np.float32 and float(got) == float(want) == 0.5


@pytest.mark.xfail(
    strict=True,
    reason="lax._settle_weak promotes only Python-number carries, not weak tracers; "
    "_coerce then casts the float carry back to int (silently)",
)
def test_inner_loop_promotes_a_weak_int_carry_as_eagerly():
    # The outer carry c stays a weak int; the inner loop makes it a float (JAX: [1, 2, 3]).
    def f():
        return lax.scan(
            lambda c, _: (c + 1, lax.fori_loop(0, 2, lambda j, d: d + 0.5, c)), 0, None, length=3
        )[1]

    want = f()
    got = fgrad.jit(f)()
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(got), [1.0, 2.0, 3.0])


@pytest.mark.xfail(
    strict=True,
    reason="lax._settle_weak promotes only Python-number carries: a traced Python float "
    "carry made complex by the body is cast back to float (TypeError)",
)
def test_traced_float_carry_made_complex_as_eagerly():
    def f(c):
        return lax.fori_loop(0, 3, lambda i, c: c * 1j + 1, c)

    assert f(0.5) == fgrad.jit(f)(0.5) == 0.5j
