"""Regressions found by differential fuzzing of jit's weakly typed Python float arguments.

Each case: ``fgrad.jit(f)(x, s)`` must give what ``f(x, s)`` gives eagerly (values,
dtypes, Python types), with one trace for all values of ``s``.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax


def _same(eager, jitted):
    e_leaves, e_tree = fgrad.tree.flatten(eager)
    j_leaves, j_tree = fgrad.tree.flatten(jitted)
    assert e_tree == j_tree
    for e, j in zip(e_leaves, j_leaves):
        if isinstance(e, fgrad.Tensor):
            assert type(j) is fgrad.Tensor
            assert j.dtype == e.dtype and j.shape == e.shape
            np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-12)
        else:
            assert type(j) is type(e) and j == pytest.approx(e)


def _check(f, *args, values=(0.7, -1.3, 0.0)):
    jf = fgrad.jit(f)
    for s in values:
        _same(f(*args, s), jf(*args, s))
    assert jf.cache_info().misses == 1


X = fnp.asarray([1.0, 2.0], dtype="float64")


def test_grad_and_jvp_with_respect_to_a_traced_float():
    # The traced float was differentiated as a weak scalar, whose Python arithmetic
    # records no derivative: the gradient came out 0.
    _check(lambda x, s: fgrad.grad(lambda c: c * c * 3.0)(s), X)
    _check(lambda x, s: fgrad.grad(lambda c: c * fnp.sum(x))(s), X)
    _check(lambda x, s: fgrad.jvp(lambda c: c * s, (s,), (s,)), X)
    _check(lambda x, s: fgrad.jvp(lambda c: c * 2.0, (s,), (1.0,)), X)
    _check(lambda x, s: fgrad.value_and_grad(lambda w, c: fnp.sum(w) * c, argnums=(0, 1))(x, s), X)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_through_a_loop_with_a_traced_float_initial_carry(dtype):
    # A float64 body output left the float64 weak carry weak, so `c * 0.5` in the body was
    # Python arithmetic without derivative: jit(grad) lost all but the last iteration.
    x = fnp.asarray([1.0, 2.0], dtype=dtype)

    def loss(x, s):
        return lax.fori_loop(0, 3, lambda i, c: c * 0.5 + fnp.sum(x), s)

    def scan_loss(x, s):
        return lax.scan(lambda c, v: (c * 0.5 + v, c), s, x)[0]

    for f in (loss, scan_loss):
        _check(lambda x, s: fgrad.grad(f)(x, s), x)
        _check(f, x)


def test_asarray_of_a_list_holding_a_traced_value():
    _check(lambda x, s: fnp.asarray([s, 2.0]), X)
    _check(lambda x, s: fnp.asarray((s,)), X)
    _check(lambda x, s: fnp.asarray([s, 1.0], dtype="float32"), X)
    _check(lambda x, s: fnp.asarray([x[0], s]), X)
    _check(lambda x, s: fnp.interp(x, fnp.asarray([0.0, 3.0]), fnp.asarray([s, 2.0])), X)
    x32 = fnp.asarray([1.0, 2.0], dtype="float32")
    _check(lambda x, s: fnp.asarray([[x[0], s], [1, 2]]), x32)


def test_real_and_imag_of_a_traced_float_are_python_numbers():
    x32 = fnp.asarray([1.0, 2.0], dtype="float32")
    _check(lambda x, s: (s.real, s.imag, x * s.imag, x * s.real), x32)
    _check(lambda x, s: (s.real, s.imag, x * s.imag, x * s.real), x32, values=(0.5 + 1j, -2j))
    # Of a Tensor they stay ops.
    assert isinstance(fgrad.jit(lambda x: x.imag)(x32), fgrad.Tensor)
