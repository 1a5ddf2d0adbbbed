"""Reductions and scans: values against numpy, and the derivative conventions.

Conventions checked here (each names its source): prod exact with zeros (closed form
``prod of the others``), max/min ties split evenly (JAX's ``_reduce_chooser_jvp_rule``),
logsumexp stable and ``-inf`` safe (value as ``scipy.special.logsumexp``, derivative
softmax, 0 for ``-inf`` entries), var/std closed forms, std at zero variance NaN (JAX,
jax-ml/jax#11716), cumprod exact with zeros.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.ops import reduction as R
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)


def _np(x):
    return np.asarray(x)


def _prod_others(x):
    """Closed form: d prod(x) / d x_i = product of all x_j with j != i (by a plain loop)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    return np.array([np.prod(np.delete(x, i)) for i in range(x.size)])


def _hessian(f, x):
    """Full Hessian of a scalar function of a 1-d Tensor: forward over reverse."""
    n = x.shape[0]
    rows = [fgrad.jvp(fgrad.grad(f), (x,), (fnp.asarray(np.eye(n)[i]),))[1] for i in range(n)]
    return np.stack([_np(r) for r in rows])


# ---------------------------------------------------------------- values against numpy

_AXES = [None, 0, 1, -1, (0, 2), (2, 0), (0, 1, 2)]


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "var", "std"])
@pytest.mark.parametrize("axis", _AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_values_match_numpy(name, axis, keepdims):
    x = RNG.uniform(-2, 2, (2, 3, 4))
    got = getattr(fnp, name)(fnp.asarray(x), axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want)
    assert got.dtype == np.asarray(want).dtype
    assert_allclose(_np(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_naive_formula(axis, keepdims):
    x = RNG.uniform(-2, 2, (3, 4))
    want = np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
    got = fnp.logsumexp(fnp.asarray(x), axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    assert_allclose(_np(got), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin_match_numpy(name, axis, keepdims):
    x = RNG.uniform(-2, 2, (3, 4))
    got = getattr(fnp, name)(fnp.asarray(x), axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.dtype == want.dtype
    assert_array_equal(_np(got), want)


def test_argmax_first_among_ties():
    # numpy's rule: the first occurrence wins.
    assert int(fnp.argmax(fnp.array([1.0, 3.0, 3.0]))) == 1
    assert int(fnp.argmin(fnp.array([2.0, 1.0, 1.0]))) == 1


@pytest.mark.parametrize("name", ["all", "any", "count_nonzero"])
@pytest.mark.parametrize("axis", [None, 0, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logical_reductions_match_numpy(name, axis, keepdims):
    x = (RNG.uniform(-1, 1, (2, 3, 4)) > 0.3).astype(np.float64)
    got = getattr(fnp, name)(fnp.asarray(x), axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert_array_equal(_np(got), want)
    assert got.dtype == np.asarray(want).dtype


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_scans_match_numpy(name, axis):
    x = RNG.uniform(-2, 2, (2, 3, 4))
    got = getattr(fnp, name)(fnp.asarray(x), axis=axis)
    want = getattr(np, name)(x, axis=axis)
    assert got.shape == want.shape
    assert_allclose(_np(got), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_of_ints_and_reverse(name):
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    got = getattr(fnp, name)(fnp.asarray(x), axis=1)
    want = getattr(np, name)(x, axis=1)
    assert got.dtype == want.dtype  # small ints scan into the default int, as numpy
    assert_array_equal(_np(got), want)
    op = getattr(R, name)
    rev = op(fnp.asarray(x), axis=1, reverse=True)
    assert_array_equal(_np(rev), np.flip(getattr(np, name)(np.flip(x, 1), axis=1), 1))


def test_integer_and_bool_reductions_follow_numpy_dtypes():
    xi = np.array([[1, 2], [3, 4]], dtype=np.int32)
    xb = np.array([True, False, True])
    for name in ("sum", "prod", "mean", "var", "std", "max", "min"):
        got = getattr(fnp, name)(fnp.asarray(xi), axis=0)
        want = getattr(np, name)(xi, axis=0)
        assert got.dtype == want.dtype, name
        assert_allclose(_np(got), want)
    assert fnp.sum(fnp.asarray(xb)).dtype == np.sum(xb).dtype
    assert fnp.logsumexp(fnp.asarray(xi)).dtype == np.float64


def test_dtype_argument_casts_first():
    x = fnp.array([1, 2, 3])
    assert fnp.sum(x, dtype="float32").dtype == np.float32
    assert fnp.mean(x, dtype="float32").dtype == np.float32
    assert fnp.cumsum(x, dtype="float64").dtype == np.float64


def test_var_ddof_and_correction():
    x = RNG.uniform(-2, 2, (3, 5))
    assert_allclose(_np(fnp.var(fnp.asarray(x), axis=1, ddof=1)), np.var(x, axis=1, ddof=1))
    assert_allclose(_np(fnp.std(fnp.asarray(x), axis=0, ddof=1)), np.std(x, axis=0, ddof=1))
    assert_allclose(_np(fnp.var(fnp.asarray(x), correction=1)), np.var(x, ddof=1))
    with pytest.raises(ValueError):
        fnp.var(fnp.asarray(x), ddof=1, correction=1)


def test_var_of_complex_is_real():
    x = RNG.uniform(-1, 1, 4) + 1j * RNG.uniform(-1, 1, 4)
    got = fnp.var(fnp.asarray(x))
    assert got.dtype == np.float64
    assert_allclose(_np(got), np.var(x))


def test_tensor_methods():
    x = fnp.asarray(RNG.uniform(-2, 2, (2, 3)))
    a = _np(x)
    assert_allclose(_np(x.sum()), a.sum())
    assert_allclose(_np(x.mean(axis=0)), a.mean(axis=0))
    assert_allclose(_np(x.max(1, keepdims=True)), a.max(1, keepdims=True))
    assert_allclose(_np(x.min()), a.min())
    assert_allclose(_np(x.prod(axis=(0, 1))), a.prod(axis=(0, 1)))
    assert_allclose(_np(x.std(ddof=1)), a.std(ddof=1))
    assert_allclose(_np(x.var(0)), a.var(0))
    assert_allclose(_np(x.cumsum(1)), a.cumsum(1))
    assert_allclose(_np(x.cumprod()), a.cumprod())
    assert int(x.argmax()) == a.argmax()
    assert_array_equal(_np(x.argmin(axis=1)), a.argmin(axis=1))
    assert bool(x.any()) and bool(x.all())


def test_errors_name_the_op():
    x = fnp.ones((2, 3))
    with pytest.raises(ShapeError, match="sum"):
        fnp.sum(x, axis=2)
    with pytest.raises(ShapeError, match="repeated"):
        fnp.mean(x, axis=(1, -1))
    with pytest.raises(ShapeError, match="max"):
        fnp.max(fnp.ones((0, 3)), axis=0)
    with pytest.raises(ShapeError, match="argmax"):
        fnp.argmax(fnp.ones((0,)))
    with pytest.raises(TypeError, match="argmin"):
        fnp.argmin(x, axis=(0, 1))
    with pytest.raises(TypeError, match="cumsum"):
        fnp.cumsum(x, axis=(0, 1))
    with pytest.raises(ShapeError, match="cumprod"):
        fnp.cumprod(x, axis=2)


def test_empty_reductions():
    e = fnp.ones((0, 3))
    assert_array_equal(_np(fnp.sum(e, axis=0)), np.zeros(3))
    assert_array_equal(_np(fnp.prod(e, axis=0)), np.ones(3))
    assert np.isnan(_np(fnp.mean(e))).all()
    assert _np(fnp.logsumexp(e, axis=0)).tolist() == [-np.inf] * 3
    assert bool(fnp.all(e)) and not bool(fnp.any(e))


# ---------------------------------------------------------------- prod with zeros


@pytest.mark.parametrize(
    "x",
    [
        [2.0, -3.0, 0.5, 4.0],  # no zero: the usual out / x
        [2.0, 0.0, 0.5, 4.0],  # one zero: only its own derivative is nonzero
        [2.0, 0.0, 0.5, 0.0],  # two zeros: the whole gradient is zero
        [0.0, 0.0, 0.0, 0.0],
        [0.0],
    ],
)
def test_prod_gradient_with_zeros_matches_closed_form(x):
    x = fnp.array(x)
    assert_allclose(_np(fgrad.grad(fnp.prod)(x)), _prod_others(x), rtol=1e-14, atol=0)
    # forward mode: the JVP along each basis vector is one entry of the gradient
    for i in range(x.shape[0]):
        e = fnp.asarray(np.eye(x.shape[0])[i])
        assert_allclose(_np(fgrad.jvp(fnp.prod, (x,), (e,))[1]), _prod_others(x)[i])


@pytest.mark.parametrize("x", [[2.0, 0.0, 0.5, 4.0], [2.0, 0.0, 0.5, 0.0], [3.0, -1.0, 0.5]])
def test_prod_hessian_with_zeros_matches_closed_form(x):
    # d^2 prod / dx_a dx_b = product of the x_j with j not in {a, b} (a != b); 0 on the diagonal.
    x = fnp.array(x)
    a = _np(x)
    n = a.size
    want = np.array(
        [[0.0 if i == j else np.prod(np.delete(a, [i, j])) for j in range(n)] for i in range(n)]
    )
    assert_allclose(_hessian(fnp.prod, x), want, rtol=1e-14, atol=0)


def test_prod_third_order_with_zeros():
    # prod is a polynomial, so finite differences are exact enough at any point, zeros included.
    x = fnp.array([[0.0, 2.0, 0.0], [1.5, 0.0, -1.0]])
    for axis in (None, 0, 1, (0, 1)):
        check_grads(
            lambda x, axis=axis: fnp.prod(x, axis=axis), (x,), order=3, modes=("rev", "fwd")
        )


def test_prod_gradient_over_tuple_axes_with_zeros():
    x = RNG.uniform(0.5, 1.5, (2, 3, 4))
    x[0, 1, 2] = x[1, 1, 0] = x[1, 2, 3] = 0.0
    for axis in [(0, 2), (2, 0), (1, 2), (0, 1), (0, 1, 2)]:
        g = fgrad.grad(lambda t, axis=axis: fnp.sum(fnp.prod(t, axis=axis)))(fnp.asarray(x))
        # Closed form: each element's derivative is the product of the rest of its slice.
        want = np.empty_like(x)
        for idx in np.ndindex(x.shape):
            y = x.copy()
            y[idx] = 1.0
            slice_idx = tuple(0 if d in axis else i for d, i in enumerate(idx))
            want[idx] = np.prod(y, axis=axis, keepdims=True)[slice_idx]
        assert_allclose(_np(g), want, rtol=1e-14, atol=0)


def test_prod_float32_gradient_stays_float32():
    x = fnp.array([1.0, 0.0, 2.0], dtype="float32")
    g = fgrad.grad(fnp.prod)(x)
    assert g.dtype == np.float32
    assert_allclose(_np(g), [0.0, 2.0, 0.0])


# ---------------------------------------------------------------- max / min ties


def test_max_ties_split_evenly():
    # JAX: jax.grad(jnp.max)(jnp.array([1., 3., 3.])) == [0., .5, .5]
    g = fgrad.grad(fnp.max)(fnp.array([1.0, 3.0, 3.0]))
    assert_array_equal(_np(g), [0.0, 0.5, 0.5])
    g = fgrad.grad(fnp.amin)(fnp.array([2.0, 2.0, 2.0, 5.0]))
    assert_allclose(_np(g), [1 / 3, 1 / 3, 1 / 3, 0.0])


def test_max_ties_split_per_slice_forward_and_reverse():
    x = fnp.array([[1.0, 4.0, 4.0], [2.0, 2.0, 0.0]])
    want = np.array([[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    for keepdims in (False, True):
        f = lambda t, keepdims=keepdims: fnp.sum(fnp.max(t, axis=1, keepdims=keepdims))
        assert_allclose(_np(fgrad.grad(f)(x)), want)
        g_max = lambda t, keepdims=keepdims: fnp.max(t, axis=1, keepdims=keepdims)
        _, t_out = fgrad.jvp(g_max, (x,), (fnp.ones((2, 3)),))
        assert_allclose(_np(t_out).ravel(), [1.0, 1.0])  # sum of weights is 1 per slice
    # min over axis 0: column 0 ties between rows? no; column 1 no; column 2 min is 0 (row 1).
    g = fgrad.grad(lambda t: fnp.sum(fnp.min(t, axis=(0, 1))))(fnp.array([[1.0, 1.0], [3.0, 1.0]]))
    assert_allclose(_np(g), [[1 / 3, 1 / 3], [0.0, 1 / 3]])


def test_max_second_order_with_ties_is_zero_and_finite():
    f = lambda x: fnp.max(x) * fnp.max(x)
    x = fnp.array([1.0, 3.0, 3.0])
    assert_allclose(_np(fgrad.grad(f)(x)), [0.0, 3.0, 3.0])
    # Hessian of max^2 with ties split evenly: 2 * w w^T with w = [0, .5, .5].
    w = np.array([0.0, 0.5, 0.5])
    assert_allclose(_hessian(f, x), 2 * np.outer(w, w))
    assert_allclose(_hessian(fnp.max, x), np.zeros((3, 3)))


def test_max_min_gradients_without_ties():
    x = fnp.asarray(RNG.uniform(-2, 2, (3, 4, 2)))
    for name, axis, keepdims in itertools.product(
        ("max", "min"), (None, 1, (0, 2), -1), (False, True)
    ):
        f = lambda t, n=name, a=axis, k=keepdims: getattr(fnp, n)(t, axis=a, keepdims=k)
        check_grads(f, (x,), order=2, modes=("rev", "fwd"))


def test_max_nan_propagates():
    assert np.isnan(_np(fnp.max(fnp.array([1.0, np.nan]))))


# ---------------------------------------------------------------- logsumexp


def test_logsumexp_large_inputs():
    x = fnp.array([1000.0, 1000.0, 999.0])
    want = 1000.0 + np.log(2 + np.exp(-1.0))
    assert_allclose(_np(fnp.logsumexp(x)), want, rtol=1e-15)
    p = np.exp(np.array([0.0, 0.0, -1.0])) / (2 + np.exp(-1.0))  # softmax
    assert_allclose(_np(fgrad.grad(fnp.logsumexp)(x)), p, rtol=1e-15)
    x = fnp.array([-1000.0, -1001.0])
    assert_allclose(_np(fnp.logsumexp(x)), -1000.0 + np.log1p(np.exp(-1.0)), rtol=1e-15)


def test_logsumexp_with_minus_inf_entries():
    x = fnp.array([0.0, -np.inf, np.log(3.0)])
    assert_allclose(_np(fnp.logsumexp(x)), np.log(4.0), rtol=1e-15)
    g = _np(fgrad.grad(fnp.logsumexp)(x))
    assert not np.isnan(g).any()
    assert_allclose(g, [0.25, 0.0, 0.75], rtol=1e-14)
    _, t = fgrad.jvp(fnp.logsumexp, (x,), (fnp.array([1.0, 5.0, 1.0]),))
    assert_allclose(_np(t), 1.0)
    h = _hessian(fnp.logsumexp, x)  # diag(p) - p p^T, with zeros for the -inf entry
    p = np.array([0.25, 0.0, 0.75])
    assert_allclose(h, np.diag(p) - np.outer(p, p), atol=1e-15)


def test_logsumexp_all_minus_inf_slice():
    x = fnp.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    out = _np(fnp.logsumexp(x, axis=1))
    assert out[0] == -np.inf and out[1] == 0.0
    g = _np(fgrad.grad(lambda t: fnp.sum(fnp.logsumexp(t, axis=1)))(x))
    assert_array_equal(g, [[0.0, 0.0], [1.0, 0.0]])
    g = _np(fgrad.grad(fnp.logsumexp)(fnp.array([-np.inf, -np.inf])))
    assert_array_equal(g, [0.0, 0.0])
    _, t = fgrad.jvp(fnp.logsumexp, (fnp.array([-np.inf, -np.inf]),), (fnp.ones(2),))
    assert _np(t) == 0.0
    h = _hessian(fnp.logsumexp, fnp.array([-np.inf, -np.inf]))
    assert_array_equal(h, np.zeros((2, 2)))


def test_logsumexp_plus_inf():
    assert _np(fnp.logsumexp(fnp.array([np.inf, 0.0]))) == np.inf  # as numpy / scipy


def test_logsumexp_float32_and_gradients():
    x = fnp.asarray(np.array([[100.0, 100.0], [0.0, 1.0]], dtype=np.float32))
    out = fnp.logsumexp(x, axis=1)
    assert out.dtype == np.float32
    g = fgrad.grad(lambda t: fnp.sum(fnp.logsumexp(t, axis=1)))(x)
    assert g.dtype == np.float32
    assert_array_equal(_np(g)[0], [0.5, 0.5])  # no rounding error from |logsumexp| ~ 100
    xs = fnp.asarray(RNG.uniform(-2, 2, (2, 3, 4)))
    for axis, keepdims in itertools.product((None, 0, (0, 2), -1), (False, True)):
        check_grads(
            lambda t, a=axis, k=keepdims: fnp.logsumexp(t, axis=a, keepdims=k),
            (xs,),
            order=2,
            modes=("rev", "fwd"),
        )


# ---------------------------------------------------------------- mean, var, std


def test_mean_var_std_gradients_closed_form():
    x = RNG.uniform(-2, 2, 5)
    n, m = x.size, x.mean()
    X = fnp.asarray(x)
    assert_allclose(_np(fgrad.grad(fnp.mean)(X)), np.full(n, 1 / n))
    for ddof in (0, 1):
        # d var / dx = 2 (x - mean) / (n - ddof);  d std / dx = (x - mean) / ((n - ddof) std)
        assert_allclose(
            _np(fgrad.grad(lambda t, d=ddof: fnp.var(t, ddof=d))(X)), 2 * (x - m) / (n - ddof)
        )
        s = np.std(x, ddof=ddof)
        assert_allclose(
            _np(fgrad.grad(lambda t, d=ddof: fnp.std(t, ddof=d))(X)), (x - m) / ((n - ddof) * s)
        )


def test_var_std_gradients_over_axes():
    x = fnp.asarray(RNG.uniform(-2, 2, (3, 4, 2)))
    for name, axis, keepdims, ddof in itertools.product(
        ("var", "std"), (None, 1, (0, 2)), (False, True), (0, 1)
    ):
        f = lambda t, n=name, a=axis, k=keepdims, d=ddof: getattr(fnp, n)(
            t, axis=a, keepdims=k, ddof=d
        )
        check_grads(f, (x,), order=2, modes=("rev", "fwd"))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_std_at_zero_variance_follows_jax():
    # JAX (jax-ml/jax#11716): grad(jnp.std)(ones) is NaN, since sqrt'(0) = inf and the
    # variance's derivative there is 0. var itself has the zero gradient.
    x = fnp.array([2.0, 2.0, 2.0])
    assert_array_equal(_np(fgrad.grad(fnp.var)(x)), np.zeros(3))
    assert np.isnan(_np(fgrad.grad(fnp.std)(x))).all()


def test_mean_and_var_float32():
    x = fnp.asarray(RNG.uniform(-2, 2, (3, 4)).astype(np.float32))
    for name in ("mean", "var", "std", "sum", "max", "prod", "logsumexp"):
        f = getattr(fnp, name)
        assert f(x, axis=0).dtype == np.float32, name
        assert fgrad.grad(lambda t, f=f: fnp.sum(f(t, axis=0)))(x).dtype == np.float32, name


# ---------------------------------------------------------------- keepdims, tuple axes


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "logsumexp", "var"])
@pytest.mark.parametrize("axis", [(0, 2), (-1, 0), (1,), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_tuple_axes_and_keepdims_gradients(name, axis, keepdims):
    x = fnp.asarray(RNG.uniform(0.5, 1.5, (2, 3, 2)) * RNG.choice([-1, 1], (2, 3, 2)))
    f = lambda t: getattr(fnp, name)(t, axis=axis, keepdims=keepdims)
    check_grads(f, (x,), order=2, modes=("rev", "fwd"))


def test_keepdims_gradient_shape():
    x = fnp.ones((2, 3, 4))
    m = lambda t: fnp.mean(t, axis=(0, 2), keepdims=True)
    assert m(x).shape == (1, 3, 1)
    g = fgrad.grad(lambda t: fnp.sum(m(t) * m(t)))(x)
    assert g.shape == (2, 3, 4)
    assert_allclose(_np(g), np.full((2, 3, 4), 2 / 8))


# ---------------------------------------------------------------- scans


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_scan_gradients(name, axis):
    x = fnp.asarray(RNG.uniform(0.5, 1.5, (2, 3, 4)) * RNG.choice([-1, 1], (2, 3, 4)))
    check_grads(lambda t: getattr(fnp, name)(t, axis=axis), (x,), order=2, modes=("rev", "fwd"))


@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_gradient_with_zeros_closed_form(reverse):
    # Jacobian of y_i = prod_{j <= i} x_j: J[i, k] = prod_{j <= i, j != k} x_j for k <= i.
    a = np.array([2.0, 0.0, 3.0, 0.0, -1.5, 0.5])
    n = a.size
    idx = range(n)
    window = (
        (lambda i: [j for j in idx if j >= i])
        if reverse
        else (lambda i: [j for j in idx if j <= i])
    )
    J = np.array(
        [
            [np.prod([a[j] for j in window(i) if j != k]) if k in window(i) else 0.0 for k in idx]
            for i in idx
        ]
    )
    f = lambda t: R.cumprod(t, axis=0, reverse=reverse)
    x = fnp.asarray(a)
    for k in idx:
        e = np.eye(n)[k]
        _, f_vjp = fgrad.vjp(f, x)
        assert_allclose(_np(f_vjp(fnp.asarray(e))[0]), J[k], rtol=1e-14, atol=0)  # row k
        assert_allclose(_np(fgrad.jvp(f, (x,), (fnp.asarray(e),))[1]), J[:, k], rtol=1e-14, atol=0)
    check_grads(f, (x,), order=3, modes=("rev", "fwd"))


def test_cumprod_with_zeros_in_2d():
    x = np.array([[0.0, 2.0, 0.0, 1.5], [1.0, -1.0, 0.0, 2.0], [0.5, 0.0, 3.0, 0.0]])
    for axis in (None, 0, 1):
        check_grads(
            lambda t, a=axis: fnp.cumprod(t, axis=a),
            (fnp.asarray(x),),
            order=2,
            modes=("rev", "fwd"),
        )


def test_cumsum_reverse_is_transpose():
    x = fnp.asarray(RNG.uniform(-1, 1, 5))
    g = fgrad.grad(lambda t: fnp.sum(fnp.cumsum(t) * fnp.arange(5.0)))(x)
    assert_allclose(_np(g), np.cumsum(np.arange(5.0)[::-1])[::-1])


def _linear_recurrence_loop(a, b, reverse):
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    h = np.zeros_like(b)
    order = range(a.shape[0] - 1, -1, -1) if reverse else range(a.shape[0])
    prev = 0.0
    for i in order:
        prev = a[i] * prev + b[i]
        h[i] = prev
    return h


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence_matches_loop(n, reverse):
    a = RNG.uniform(-1.5, 1.5, (n, 3))
    a[n // 2] = 0.0
    b = RNG.uniform(-1, 1, (n, 3))
    got = R.linear_recurrence(fnp.asarray(a), fnp.asarray(b), axis=0, reverse=reverse)
    assert_allclose(_np(got), _linear_recurrence_loop(a, b, reverse), rtol=1e-12, atol=1e-14)
    got = R.linear_recurrence(fnp.asarray(a.T), fnp.asarray(b.T), axis=1, reverse=reverse)
    assert_allclose(_np(got), _linear_recurrence_loop(a, b, reverse).T, rtol=1e-12, atol=1e-14)
    check_grads(
        lambda a, b: R.linear_recurrence(a, b, axis=0, reverse=reverse),
        (fnp.asarray(a), fnp.asarray(b)),
        order=2,
        modes=("rev", "fwd"),
    )


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_linear_recurrence_overflowing_product_times_zero():
    # The scan multiplies coefficients pairwise; 0 * (overflowed product) must stay 0, as in
    # the sequential recurrence h[i] = a[i] h[i-1] + b[i].
    a = np.full(4, 1e200)
    b = np.array([0.0, 1.0, 0.0, 0.0])
    got = _np(R.linear_recurrence(fnp.asarray(a), fnp.asarray(b), axis=0, reverse=False))
    assert_allclose(got[:3], [0.0, 1.0, 1e200])
    assert got[3] == np.inf


def test_shift():
    x = fnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert_array_equal(_np(R.shift(x, axis=1, offset=1, fill=0.0)), [[0, 1, 2], [0, 4, 5]])
    assert_array_equal(_np(R.shift(x, axis=1, offset=-2, fill=9.0)), [[3, 9, 9], [6, 9, 9]])
    assert_array_equal(_np(R.shift(x, axis=0, offset=5, fill=1.0)), np.ones((2, 3)))
    assert_array_equal(_np(R.shift(x, axis=0, offset=0, fill=1.0)), _np(x))


# ---------------------------------------------------------------- nondiff reductions


def test_argmax_and_logical_reductions_are_nondiff_under_grad():
    def f(x):
        i = fnp.argmax(x)  # an int Tensor, constant to grad
        k = fnp.argmin(x, axis=0, keepdims=True)
        flag = fnp.astype(fnp.all(x), "float64") + fnp.astype(fnp.any(x), "float64")
        scale = fnp.astype(i, "float64") + fnp.astype(fnp.sum(k), "float64") + flag
        return fnp.sum(x) * scale

    x = fnp.array([1.0, 3.0, 2.0])
    # argmax = 1, argmin = 0, all = True, any = True: scale = 1 + 0 + 2 = 3.
    assert_allclose(_np(fgrad.grad(f)(x)), [3.0, 3.0, 3.0])
    _, t = fgrad.jvp(f, (x,), (fnp.ones(3),))
    assert_allclose(_np(t), 9.0)
    assert fgrad.grad(lambda x: fnp.sum(x) * fnp.astype(fnp.count_nonzero(x), "float64"))(
        x
    ).shape == (3,)


def test_reductions_under_make_graph():
    # The shape rules run when tracing abstractly; they must agree with the kernels.
    make_graph = getattr(fgrad, "make_graph", None)
    if make_graph is None:
        pytest.skip("fgrad.make_graph not exported")
    x = fnp.ones((2, 3, 4))

    def f(x):
        return (
            fnp.prod(x, axis=(0, 2)),
            fnp.max(x, axis=1, keepdims=True),
            fnp.logsumexp(x, axis=-1),
            fnp.argmax(x, axis=1),
            fnp.cumprod(x, axis=2),
            fnp.all(x, axis=0),
        )

    graph = make_graph(f)(x)
    assert "prod" in str(graph) and "cumprod" in str(graph)


# ---------------------------------------------------------------- nan-ignoring reductions


def test_nansum_nanmean_values_and_gradients():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [2.0, 4.0, 6.0]])
    for axis in (None, 0, 1):
        assert_allclose(_np(fnp.nansum(fnp.asarray(x), axis=axis)), np.nansum(x, axis=axis))
        with warnings.catch_warnings():  # numpy warns about the all-NaN row
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nanmean(x, axis=axis)
        assert_allclose(_np(fnp.nanmean(fnp.asarray(x), axis=axis)), want)
    g = _np(fgrad.grad(fnp.nanmean)(fnp.asarray(x)))
    assert_allclose(g, np.where(np.isnan(x), 0.0, 1 / 5))
    g = _np(fgrad.grad(fnp.nansum)(fnp.asarray(x)))
    assert_array_equal(g, np.where(np.isnan(x), 0.0, 1.0))
    x32 = fnp.asarray(x.astype(np.float32))
    assert fnp.nanmean(x32, axis=0).dtype == np.float32
    assert_array_equal(_np(fnp.nansum(fnp.array([1, 2]))), 3)
