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
