"""Tensors next to numpy: list operands, numpy's functions on Tensors, no aliasing of inputs."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def test_issue_2_lists_are_arrays_in_operators():
    """numpy treats a list operand as an array; Python's list repetition must not happen."""
    x = fnp.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(x == [1.0, -2.0, 3.0]), [True, True, True])
    np.testing.assert_array_equal(np.asarray(fnp.array(2) * [1.0, 2.0]), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray([1.0, 2.0, 3.0] * x), [1.0, -4.0, 9.0])
    assert (x == None) is False  # noqa: E711  (JAX: comparing with None is False)
    g = fgrad.grad(lambda v: fnp.sum(v * [1.0, 2.0, 3.0]))(x)
    np.testing.assert_array_equal(np.asarray(g), [1.0, 2.0, 3.0])


def test_issue_2_numpy_reductions_accept_tensors():
    t = fnp.array([[1.0, 2.0], [3.0, 5.0]])
    assert np.sum(t) == 11.0 and np.mean(t) == 2.75 and np.max(t) == 5.0
    np.testing.assert_allclose(np.std(t), np.std(np.asarray(t)))
    np.testing.assert_array_equal(np.asarray(np.sum(t, axis=0)), [4.0, 7.0])
    with pytest.raises(TypeError, match="immutable"):
        np.sum(t, out=np.zeros(()))


def test_issue_2_tensors_do_not_alias_a_callers_numpy_buffer():
    """A loader that reuses one buffer must not see earlier Tensors change (JAX copies too)."""
    buf = np.zeros((2, 3), np.float32)
    jitted = fgrad.jit(lambda b: b.reshape(6))
    eager, compiled, transposed, ident = [], [], [], []
    for i in range(3):
        buf[:] = i
        eager.append(fnp.reshape(buf, (6,)))
        compiled.append(jitted(buf))
        transposed.append(fnp.transpose(buf))
        ident.append(fgrad.stop_gradient(buf))
    for seq in (eager, compiled, transposed, ident):
        assert [float(np.asarray(t).ravel()[0]) for t in seq] == [0.0, 1.0, 2.0]


def test_take_along_axis_picks_along_the_last_axis_by_default_as_numpy_2():
    x = np.array([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    idx = np.argsort(x, axis=-1)
    np.testing.assert_array_equal(
        np.asarray(fgrad.numpy.take_along_axis(fgrad.numpy.asarray(x), fgrad.numpy.asarray(idx))),
        np.take_along_axis(x, idx),
    )
