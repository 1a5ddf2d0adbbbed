"""Derivatives of fgrad.numpy's composed math names of issue 14, and their edge conventions.

The compositions get their derivatives from the registry ops; these tests check them
against float64 central finite differences (``check_grads``, both modes, second order
where smooth) and pin the conventions at edge points against JAX's values (quoted from
jax 0.10.2 with x64 enabled) or closed forms.
"""

import math

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

RNG = np.random.default_rng(1)


def _a(*shape, lo=-2.0, hi=2.0):
    return fnp.array(RNG.uniform(lo, hi, shape))


def _nans(*shape):
    a = RNG.uniform(-2, 2, shape)
    a[RNG.uniform(size=shape) < 0.25] = np.nan
    a[0], a[:, 0] = 0.7 + np.arange(shape[1]) * 0.3, 0.4 - np.arange(shape[0]) * 0.2  # no all-NaN slice
    return fnp.array(a)


X = _a(3, 4)
XN = _nans(3, 5)
P = fnp.array([1.5, -0.7, 0.3, 2.0])

CASES = [
    ("angle", lambda z: fnp.angle(z[0] + 1j * z[1]), (X,), 2),
    ("float_power", lambda x, y: fnp.float_power(fnp.abs(x) + 0.5, y), (X, _a(4)), 2),
    ("frexp", lambda x: fnp.frexp(x)[0], (_a(5, lo=0.55, hi=0.95) * 3.0,), 2),
    ("modf", lambda x: fnp.modf(x)[0], (_a(5, lo=0.1, hi=0.9) + 2.0,), 2),
    ("heaviside", lambda h: fnp.heaviside(fnp.array([-1.0, 0.0, 2.0]), h), (_a(3),), 2),
    ("i0", fnp.i0, (X,), 2),
    ("sinc", fnp.sinc, (X,), 2),
    ("sinc_small", fnp.sinc, (_a(6, lo=-0.05, hi=0.05),), 2),
    ("logaddexp2", fnp.logaddexp2, (X, _a(4)), 2),
    ("nanmax", lambda a: fnp.nanmax(a, axis=1), (XN,), 1),
    ("nanmin", lambda a: fnp.nanmin(a, axis=0), (XN,), 1),
    ("nanprod", lambda a: fnp.nanprod(a, axis=1), (XN,), 2),
    ("nancumsum", lambda a: fnp.nancumsum(a, axis=1), (XN,), 2),
    ("nancumprod", lambda a: fnp.nancumprod(a), (XN,), 2),
    ("nanvar", lambda a: fnp.nanvar(a, axis=1, ddof=1), (XN,), 2),
    ("nanstd", lambda a: fnp.nanstd(a, axis=0), (XN,), 2),
    ("nanmedian", lambda a: fnp.nanmedian(a, axis=1), (XN,), 1),
    ("nanquantile", lambda a, q: fnp.nanquantile(a, q, axis=1), (XN, fnp.array([0.3, 0.8])), 1),
    ("nanpercentile", lambda a: fnp.nanpercentile(a, 30.0), (XN,), 1),
    ("ptp", lambda a: fnp.ptp(a, axis=1), (X,), 1),
    ("average", lambda a, w: fnp.average(a, axis=1, weights=w), (X, _a(4, lo=0.5, hi=1.5)), 2),
    ("cov", lambda m, w: fnp.cov(m, aweights=w), (X, _a(4, lo=0.5, hi=1.5)), 2),
    ("corrcoef", fnp.corrcoef, (X,), 2),
    ("convolve", lambda a, v: fnp.convolve(a, v, "same"), (_a(5), _a(3)), 2),
    ("correlate", lambda a, v: fnp.correlate(a, v, "full"), (_a(3), _a(5)), 2),
    ("cumulative_sum", lambda x: fnp.cumulative_sum(x, axis=1, include_initial=True), (X,), 2),
    ("cumulative_prod", lambda x: fnp.cumulative_prod(x, axis=0), (X,), 2),
    ("gradient", lambda f, x: fnp.gradient(f, x, edge_order=2), (_a(6), fnp.array(np.cumsum(RNG.uniform(0.5, 1.5, 6)))), 2),
    ("gradient_axes", lambda f: fnp.gradient(f, 0.5), (X,), 2),
    ("trapezoid", lambda y, x: fnp.trapezoid(y, x), (X, fnp.array([0.0, 0.5, 1.5, 2.0])), 2),
    ("unwrap", lambda p: fnp.unwrap(p * 3.0), (_a(6),), 2),
    ("ediff1d", lambda a: fnp.ediff1d(a, to_begin=1.0), (X,), 2),
    ("poly", fnp.poly, (_a(4),), 2),
    ("poly_matrix", fnp.poly, (_a(3, 3),), 2),
    ("polyadd", fnp.polyadd, (P, _a(2)), 2),
    ("polysub", fnp.polysub, (_a(2), P), 2),
    ("polymul", fnp.polymul, (P, _a(3)), 2),
    ("polydiv", lambda u, v: fnp.polydiv(u, v, trim_leading_zeros=False), (P, fnp.array([1.2, -0.4])), 2),
    ("polyder", lambda p: fnp.polyder(p, 2), (P,), 2),
    ("polyint", lambda p, k: fnp.polyint(p, 2, k), (P, _a(2)), 2),
    ("polyval", fnp.polyval, (P, _a(3)), 2),
    ("polyfit", lambda x, y: fnp.polyfit(x, y, 2), (fnp.linspace(-1.0, 1.0, 7), _a(7)), 1),
    ("roots", lambda p: fnp.real(fnp.roots(p, strip_zeros=False)), (fnp.array([1.0, -0.5, -2.0, 1.0]),), 2),
    ("roots_complex", lambda p: fnp.imag(fnp.roots(p, strip_zeros=False)), (fnp.array([1.0, 0.4, 2.0]),), 2),
    ("vander", lambda x: fnp.vander(x, 4), (_a(3),), 2),
    ("kaiser", lambda b: fnp.kaiser(6, b), (fnp.array(3.0),), 2),
    ("bincount", lambda w: fnp.bincount(fnp.array([0, 2, 2, 4]), w, length=6), (_a(4),), 2),
    ("histogram", lambda w: fnp.histogram(fnp.array([0.1, 0.5, 0.5, 0.9]), 3, weights=w)[0], (_a(4),), 2),
    ("histogramdd", lambda w: fnp.histogramdd(fnp.array([[0.1, 0.2], [0.9, 0.7], [0.5, 0.4]]), 2, weights=w)[0], (_a(3),), 2),
    ("matvec", fnp.matvec, (_a(2, 3, 4), _a(4)), 2),
    ("vecmat", fnp.vecmat, (_a(3), _a(2, 3, 4)), 2),
]


@pytest.mark.parametrize("name,f,args,order", CASES, ids=[c[0] for c in CASES])
def test_composed_derivatives_match_finite_differences(name, f, args, order):
    check_grads(f, args, order=order, modes=("rev", "fwd"))


def test_nan_entries_get_zero_cotangent_as_jax():
    x = fnp.array([1.0, fnp.nan, 3.0, 3.0])
    # jax: grad(nanmax) [0, 0, .5, .5]; nanstd of [1, nan, 3]: [-.5, 0, .5];
    # nanprod of [2, nan, 3]: [3, 0, 2]; nanmedian of [2, nan, 3, 5]: [0, 0, 1, 0]
    np.testing.assert_allclose(fgrad.grad(fnp.nanmax)(x), [0, 0, 0.5, 0.5])
    np.testing.assert_allclose(fgrad.grad(fnp.nanstd)(fnp.array([1.0, fnp.nan, 3.0])), [-0.5, 0, 0.5])
    np.testing.assert_allclose(fgrad.grad(fnp.nanprod)(fnp.array([2.0, fnp.nan, 3.0])), [3, 0, 2])
    np.testing.assert_allclose(fgrad.grad(fnp.nanmedian)(fnp.array([2.0, fnp.nan, 3.0, 5.0])), [0, 0, 1, 0])
    np.testing.assert_allclose(fgrad.grad(lambda a: fnp.sum(fnp.nancumsum(a)))(fnp.array([2.0, fnp.nan, 3.0])), [3, 0, 1])
    all_nan = fgrad.grad(lambda a: fnp.nansum(fnp.nanmax(a, axis=1)))(fnp.array([[fnp.nan, fnp.nan], [1.0, 2.0]]))
    np.testing.assert_array_equal(all_nan, [[0, 0], [0, 1]])


def test_edge_conventions_match_jax():
    g2 = lambda f, x, y: fgrad.grad(f, argnums=(0, 1))(x, y)  # noqa: E731
    assert [float(v) for v in g2(fnp.fmax, 1.0, 1.0)] == [0.0, 1.0]  # ties go to x2
    assert [float(v) for v in g2(fnp.fmax, fnp.nan, 1.0)] == [0.0, 1.0]
    assert [float(v) for v in g2(fnp.fmin, 1.0, 1.0)] == [0.0, 1.0]
    assert [float(v) for v in g2(fnp.fmod, 5.5, 2.0)] == [1.0, -2.0]
    assert [float(v) for v in g2(fnp.fmod, -5.5, 2.0)] == [1.0, 2.0]
    assert [float(v) for v in g2(fnp.copysign, -2.0, 3.0)] == [-1.0, 0.0]
    assert [float(v) for v in g2(fnp.copysign, 0.0, -3.0)] == [-1.0, 0.0]
    assert [float(v) for v in g2(fnp.heaviside, 0.0, 0.5)] == [0.0, 1.0]
    assert [float(v) for v in g2(fnp.logaddexp2, 1.0, 1.0)] == [0.5, 0.5]
    assert float(fgrad.grad(lambda x: fnp.ldexp(x, 2))(3.0)) == 4.0
    assert float(fgrad.grad(lambda x: fnp.frexp(x)[0])(3.0)) == 0.25
    assert float(fgrad.grad(lambda x: fnp.modf(x)[1])(3.3)) == 0.0
    sinc = fnp.sinc
    assert float(fgrad.grad(sinc)(0.0)) == 0.0
    np.testing.assert_allclose(fgrad.grad(fgrad.grad(sinc))(0.0), -math.pi**2 / 3, rtol=1e-14)
    assert float(fgrad.grad(fgrad.grad(fgrad.grad(sinc)))(0.0)) == 0.0
    # i0' = i1 (scipy.special.i1(1.0) = 0.5651591039924851)
    np.testing.assert_allclose(fgrad.grad(fnp.i0)(1.0), 0.5651591039924851, rtol=1e-14)
    np.testing.assert_allclose(fgrad.grad(fnp.ptp)(fnp.array([2.0, 3.0, 5.0, 5.0])), [-1, 0, 0.5, 0.5])
    np.testing.assert_allclose(
        fgrad.grad(lambda p: fnp.real(fnp.roots(p)[0]))(fnp.array([1.0, -3.0, 2.0])), [-4, -2, -1])
    np.testing.assert_allclose(
        fgrad.grad(lambda y: fnp.polyfit(fnp.arange(4.0), y, 1)[0])(fnp.array([1.0, 2.0, 4.0, 3.0])),
        [-0.3, -0.1, 0.1, 0.3])
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(fnp.unwrap(x)))(fnp.array([0.0, 3.0, 6.0])), [1, 1, 1])


def test_counts_are_not_differentiable_in_the_data():
    data = fnp.array([0.1, 0.5, 0.9])
    for f in (lambda x: fnp.sum(fnp.astype(fnp.histogram(x, 3)[0], "float64")),
              lambda x: fnp.sum(fnp.astype(fnp.digitize(x, fnp.array([0.0, 0.5, 1.0])), "float64")),
              lambda x: fnp.sum(fnp.astype(fnp.signbit(x), "float64") + fnp.rint(x) + fnp.spacing(x))):
        np.testing.assert_array_equal(fgrad.grad(f)(data), [0, 0, 0])
    w = fgrad.grad(lambda w: fnp.histogram(fnp.array([1.0, 2.0, 3.0]), bins=3, weights=w)[0][0])(fnp.ones(3))
    np.testing.assert_array_equal(w, [1, 0, 0])  # jax: [1, 0, 0]


def test_transform_compositions():
    x = _nans(4, 5)
    f = lambda a: fnp.sum(fnp.nanvar(a, axis=1) + fnp.sinc(fnp.nan_to_num(a)).sum(axis=1))  # noqa: E731
    eager = fgrad.grad(f)(x)
    np.testing.assert_allclose(fgrad.grad(fgrad.jit(f))(x), eager, rtol=1e-13)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(f))(x), eager, rtol=1e-13)
    per_row = fgrad.vmap(fgrad.grad(lambda r: fnp.nanstd(r) + fnp.sum(fnp.convolve(fnp.nan_to_num(r), fnp.array([1.0, -1.0])) ** 2)))(x)
    loop = np.stack([np.asarray(fgrad.grad(lambda r: fnp.nanstd(r) + fnp.sum(fnp.convolve(fnp.nan_to_num(r), fnp.array([1.0, -1.0])) ** 2))(row)) for row in x])
    np.testing.assert_allclose(per_row, loop, rtol=1e-13)
    batched = fgrad.jit(fgrad.vmap(lambda r: fnp.polyval(r, 0.3) + fnp.trapezoid(r)))(fnp.nan_to_num(x))
    np.testing.assert_allclose(batched, [float(fnp.polyval(r, 0.3) + fnp.trapezoid(r)) for r in fnp.nan_to_num(x)], rtol=1e-13)
    w_grad = fgrad.jit(fgrad.grad(lambda w: fnp.sum(fnp.bincount(fnp.array([0, 1, 1]), w, length=3) ** 2)))(fnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(w_grad, [2.0, 10.0, 10.0])
