"""jit argument handling: static names by position, bad static positions, non-array leaves."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def _scale(x, mode="plain"):
    return x * 2.0 if mode == "double" else x


def test_static_argnames_passed_positionally():
    """JAX maps a static name to its position: jit(f, static_argnames='mode')(x, 'double')."""
    f = fgrad.jit(_scale, static_argnames="mode")
    x = fnp.array([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(f(x, "double")), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(x, mode="double")), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(x)), [1.0, 2.0])


def test_static_argnums_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="static_argnums 3 is out of range"):
        fgrad.jit(_scale, static_argnums=3)


def test_non_array_arguments_need_static():
    with pytest.raises(TypeError, match="static_argnums / static_argnames"):
        fgrad.jit(lambda x, s: x)(fnp.ones(2), "a")
    f = fgrad.jit(lambda x, fn: fn(x), static_argnums=1)
    np.testing.assert_allclose(np.asarray(f(fnp.array([0.0]), fnp.cos)), [1.0])


def test_issue_5_signed_zero_scalars_compile_separately():
    """0.0 == -0.0 in Python, but x / -0.0 is -inf: the cache key and CSE use the bits."""
    x = fnp.array([1.0, 2.0])
    f = fgrad.jit(lambda x, s: x / s)
    with np.errstate(divide="ignore"):
        assert np.all(np.asarray(f(x, 0.0)) == np.inf)
        assert np.all(np.asarray(f(x, -0.0)) == -np.inf)
    g = fgrad.jit(lambda x, s: x * s, static_argnums=1)
    g(x, 0.0)
    assert np.signbit(np.asarray(g(x, -0.0))).all()
    plus, minus = fgrad.jit(lambda x: (x * 0.0, x * -0.0))(x)
    assert not np.signbit(np.asarray(plus)).any() and np.signbit(np.asarray(minus)).all()


def test_issue_5_batched_matmul_with_empty_inner_dimension():
    out = fgrad.jit(lambda a, b: a @ b)(fnp.ones((2, 3, 0)), fnp.ones((0, 4)))
    assert out.shape == (2, 3, 4) and not np.asarray(out).any()
