"""Type promotion: numpy 2 rules with weak Python scalars (NEP 50), in values and gradients.

Expected dtypes come from numpy itself (``np.result_type`` and the dtype numpy's own op
gives), which implements NEP 50: a Python scalar takes the array's dtype when its kind
fits (float32 * 2.0 -> float32, int32 + 1 -> int32), as JAX does.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad import dtypes
from fgrad.tensor import ShapeDtype

DTYPES = [
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint32,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
]
FLOATS = [np.dtype(t) for t in (np.float16, np.float32, np.float64)]
SCALARS = [True, 2, 2.0, 1.5j]  # non-negative, small: valid for every dtype under NEP 50
BINARY = [
    name
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum")
    if hasattr(fnp, name)
]


def _numpy_dtype(name, *args):
    """The dtype numpy's op gives, or None when numpy refuses the combination."""
    try:
        with np.errstate(all="ignore"):
            return np.result_type(getattr(np, name)(*args))
    except (TypeError, OverflowError):  # numpy has no loop, or the scalar does not fit
        return None


def _array(dtype):
    return np.ones(3, dtype=dtype)


@pytest.mark.parametrize("name", BINARY)
@given(d1=st.sampled_from(DTYPES), d2=st.sampled_from(DTYPES))
def test_binary_ops_promote_arrays_like_numpy(name, d1, d2):
    want = _numpy_dtype(name, _array(d1), _array(d2))
    x, y = fgrad.asarray(_array(d1)), fgrad.asarray(_array(d2))
    if want is None:
        with pytest.raises(TypeError):
            getattr(fnp, name)(x, y)
        return
    assert getattr(fnp, name)(x, y).dtype == want
    assert dtypes.result_type(x, y) == np.result_type(d1, d2)
    if name != "divide":  # divide's true-division rule differs from result_type on ints
        assert want == np.result_type(d1, d2)
    op = fgrad.core.op.REGISTRY[name]
    assert op.abstract_eval(x.aval, y.aval).dtype == want  # the rule make_graph uses


@pytest.mark.parametrize("name", BINARY)
@given(d=st.sampled_from(DTYPES), scalar=st.sampled_from(SCALARS), scalar_first=st.booleans())
def test_python_scalars_are_weak(name, d, scalar, scalar_first):
    args = (scalar, _array(d)) if scalar_first else (_array(d), scalar)
    want = _numpy_dtype(name, *args)
    targs = (
        (scalar, fgrad.asarray(_array(d))) if scalar_first else (fgrad.asarray(_array(d)), scalar)
    )
    if want is None:
        with pytest.raises(TypeError):
            getattr(fnp, name)(*targs)
        return
    assert getattr(fnp, name)(*targs).dtype == want
    assert dtypes.result_type(*[getattr(a, "dtype", a) for a in args]) == np.result_type(
        *[getattr(a, "dtype", a) for a in args]
    )
    op = fgrad.core.op.REGISTRY[name]
    avals = [a.aval if isinstance(a, fgrad.Tensor) else a for a in targs]
    assert op.abstract_eval(*avals).dtype == want


def test_weak_scalar_table():
    # The JAX / NEP 50 cases spelt out (source: NEP 50's table).
    f32 = fgrad.asarray(np.ones(2, np.float32))
    i32 = fgrad.asarray(np.ones(2, np.int32))
    assert (f32 * 2.0).dtype == np.float32
    assert (2.0 * f32).dtype == np.float32
    assert (f32 + 1).dtype == np.float32
    assert (i32 + 1).dtype == np.int32
    assert (1 + i32).dtype == np.int32
    assert (i32 * 2.0).dtype == np.float64  # an int array meets a float: default float
    assert (f32 + 1j).dtype == np.complex64
    assert (f32 + fgrad.asarray(np.ones(2, np.float64))).dtype == np.float64
    assert (f32 + np.ones(2, np.float64)).dtype == np.float64
    assert (f32 + np.float64(2.0)).dtype == np.float64  # numpy scalars are not weak
    assert dtypes.result_type(np.float32, 2.0) == np.float32
    assert dtypes.result_type(np.int32, 1) == np.int32
    assert dtypes.result_type(np.float32, np.float64) == np.float64


@given(d=st.sampled_from(DTYPES))
def test_unary_float_ops_keep_inexact_dtypes_and_promote_ints(d):
    x = _array(d)
    want = _numpy_dtype("exp", x)
    if want is None:
        return
    assert fnp.exp(fgrad.asarray(x)).dtype == want


@pytest.mark.parametrize("dtype", FLOATS)
def test_gradients_keep_the_primal_dtype(dtype):
    x = fgrad.asarray(np.array([0.5, 1.0, 1.5], dtype=dtype))

    def f(x):
        return fnp.sum(fnp.exp(x) * 2.0 + x / 3 - fnp.sin(x) * x)

    value, g = fgrad.value_and_grad(f)(x)
    assert value.dtype == dtype
    assert g.dtype == dtype and g.shape == x.shape
    gg = fgrad.grad(lambda x: fnp.sum(fgrad.grad(f)(x)))(x)
    assert gg.dtype == dtype


def test_gradient_dtype_per_argument_when_dtypes_mix():
    x32 = fgrad.asarray(np.array([1.0, 2.0], np.float32))
    x64 = fgrad.asarray(np.array([3.0, 4.0], np.float64))
    f = lambda a, b: fnp.sum(a * b)
    g32, g64 = fgrad.grad(f, argnums=(0, 1))(x32, x64)
    assert g32.dtype == np.float32 and g64.dtype == np.float64
    np.testing.assert_allclose(np.asarray(g32), [3.0, 4.0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_vjp_and_jvp_keep_dtypes(dtype):
    x = fgrad.asarray(np.array([0.25, 0.5], dtype=dtype))
    out, f_vjp = fgrad.vjp(lambda x: fnp.tanh(x) * 2.0, x)
    assert out.dtype == dtype
    (ct,) = f_vjp(fnp.ones(2, dtype=dtype))
    assert ct.dtype == dtype
    out, t = fgrad.jvp(lambda x: fnp.tanh(x) * 2.0, (x,), (fnp.ones(2, dtype=dtype),))
    assert out.dtype == dtype and t.dtype == dtype


@given(d=st.sampled_from(FLOATS), shape=st.sampled_from([(), (3,), (2, 3)]))
def test_aval_of_results_matches_data(d, shape):
    x = fgrad.asarray(np.ones(shape, dtype=d))
    y = x * 2.0 + 1
    assert y.aval == ShapeDtype(shape, d)
