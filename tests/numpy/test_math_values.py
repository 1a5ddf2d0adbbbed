"""fgrad.numpy's math names of issue 14 against numpy on random inputs and special values.

Each row calls the fgrad function and numpy's namesake on the same inputs (float64 and
float32, a few shapes and axes) and compares values, shapes and dtypes; the documented
differences from numpy (``roots`` always complex, ``i0`` keeping float32, ``nanargmax``
giving -1 for an all-NaN slice) have their own tests.
"""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError, DTypeError, ShapeError

RNG = np.random.default_rng(0)


def _arr(shape, dtype=np.float64, lo=-3.0, hi=3.0):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def _with_nans(shape, dtype=np.float64):
    a = _arr(shape, dtype)
    a[RNG.uniform(size=shape) < 0.3] = np.nan
    return a


def _check(got, want, dtype=None, rtol=None):
    got_t = got if isinstance(got, (tuple, list)) else (got,)
    want_t = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got_t) == len(want_t)
    for g, w in zip(got_t, want_t):
        w = np.asarray(w)
        g = np.asarray(g)
        assert g.shape == w.shape, (g.shape, w.shape)
        tol = rtol or (2e-5 if w.dtype in (np.float32, np.complex64) else 1e-12)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
        if dtype != "skip":
            assert g.dtype == w.dtype, (g.dtype, w.dtype)


ELEMENTWISE_UNARY = [
    "fabs", "deg2rad", "radians", "rad2deg", "degrees", "rint", "spacing", "signbit",
    "sinc", "isneginf", "isposinf", "iscomplex", "isreal", "around",
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ELEMENTWISE_UNARY)
def test_unary_elementwise_matches_numpy(name, dtype):
    x = _arr((2, 5), dtype)
    x[0, :4] = [0.0, -0.0, 2.5, -1.5]  # halves (rint), signed zeros (signbit), sinc at 0
    x[1, :3] = [np.inf, -np.inf, np.nan]
    with np.errstate(all="ignore"):
        _check(getattr(fnp, name)(x), getattr(np, name)(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["copysign", "fmax", "fmin", "fmod", "nextafter", "logaddexp2",
                                  "heaviside", "float_power", "divmod"])
def test_binary_elementwise_matches_numpy_with_broadcasting(name, dtype):
    x, y = _arr((2, 3), dtype), _arr((3,), dtype, 0.5, 2.0) * np.array([1, -1, 1], dtype)
    x[0, 0], x[1, 1], y[2] = np.nan, 0.0, np.nan
    if name == "float_power":
        x = np.abs(x)
    with np.errstate(all="ignore"):
        _check(getattr(fnp, name)(x, y), getattr(np, name)(x, y))


def test_ldexp_frexp_modf_round_trip_and_match_numpy():
    x = np.array([8.0, -0.3, 0.0, 1e-310, np.inf, -np.inf, np.nan, 3.75])
    m, e = fnp.frexp(x)
    _check((m, e), np.frexp(x))
    _check(fnp.ldexp(m, e), np.ldexp(*np.frexp(x)))
    _check(fnp.ldexp(np.float32(1.5), np.array([2, -1])), np.ldexp(np.float32(1.5), np.array([2, -1])))
    _check(fnp.modf(x), np.modf(x))
    _check(fnp.frexp(x.astype(np.float32)), np.frexp(x.astype(np.float32)))


def test_integer_ufuncs_match_numpy():
    a, b = RNG.integers(-50, 50, (3, 4)), RNG.integers(-20, 20, (4,))
    for name in ("gcd", "lcm"):
        _check(getattr(fnp, name)(a, b), getattr(np, name)(a, b))
    s = RNG.integers(0, 6, (4,))
    for name in ("left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift"):
        _check(getattr(fnp, name)(a, s), getattr(np, name)(a, s))
    for dt in (np.int8, np.uint16, np.int64):
        v = RNG.integers(-100, 100, (5,)).astype(dt)
        _check(fnp.bitwise_count(v), np.bitwise_count(v))
    _check(fnp.left_shift(np.array([True, False]), True), np.left_shift(np.array([True, False]), True))
    _check(fnp.gcd(np.array([True, False]), np.array([2])), np.gcd(np.array([True, False]), np.array([2])))
    for bad in (np.array([True, False]), np.array([2.0])):  # numpy has no bool or float loop
        with pytest.raises(DTypeError, match="gcd"):
            fnp.gcd(bad, bad)
        with pytest.raises(DTypeError, match="gcd"):
            fgrad.jit(fnp.gcd)(bad, bad)


def test_angle_and_i0():
    z = np.array([1j, -1.0, 1 + 1j, -2 - 0.5j, 0.0])
    _check(fnp.angle(z), np.angle(z))
    _check(fnp.angle(z, deg=True), np.angle(z, deg=True))
    _check(fnp.angle(np.array([-2.0, 3.0])), np.angle(np.array([-2.0, 3.0])))
    x = np.array([0.0, 0.5, -3.0, 20.0, 700.0])
    _check(fnp.i0(x), np.i0(x), rtol=1e-13)
    got = fnp.i0(x[:3].astype(np.float32))  # float32 stays float32 (numpy: float64)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.i0(x[:3]), rtol=1e-6)


def test_packbits_unpackbits_match_numpy():
    a = RNG.integers(0, 2, (3, 11)).astype(bool)
    for axis in (None, 0, 1, -1):
        for order in ("big", "little"):
            _check(fnp.packbits(a, axis=axis, bitorder=order), np.packbits(a, axis=axis, bitorder=order))
    p = np.packbits(a, axis=1)
    for axis, count in ((None, None), (1, None), (1, 9), (1, -3), (0, 30), (1, 20)):
        _check(fnp.unpackbits(p, axis=axis, count=count), np.unpackbits(p, axis=axis, count=count))
    _check(fnp.unpackbits(p, axis=1, bitorder="little"), np.unpackbits(p, axis=1, bitorder="little"))


NAN_REDUCTIONS = ["nanmax", "nanmin", "nanprod", "nanvar", "nanstd", "nanmedian", "nanargmax",
                  "nanargmin"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)])
@pytest.mark.parametrize("name", NAN_REDUCTIONS)
def test_nan_reductions_match_numpy(name, axis, dtype):
    if name.startswith("nanarg") and isinstance(axis, tuple):
        return
    a = _with_nans((3, 4, 5), dtype)
    if name.startswith("nanarg"):  # numpy raises on an all-NaN slice (see below)
        a[0], a[:, 0] = _arr((4, 5), dtype), _arr((3, 5), dtype)
    a[0, 0, :] = a[0, 1, 1]  # ties
    with np.errstate(all="ignore"):
        _check(getattr(fnp, name)(a, axis=axis), getattr(np, name)(a, axis=axis))
        if not name.startswith("nanarg"):
            _check(getattr(fnp, name)(a, axis=axis, keepdims=True),
                   getattr(np, name)(a, axis=axis, keepdims=True))


def test_nan_reductions_of_all_nan_slices_and_options():
    a = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 3.0]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for name in ("nanmax", "nanmin", "nanmedian", "nanvar", "nanstd"):
            _check(getattr(fnp, name)(a, axis=1), getattr(np, name)(a, axis=1))
    _check(fnp.nanargmax(a, axis=1), np.array([-1, 2]))  # JAX's -1; numpy raises
    _check(fnp.nanvar(a, axis=1, ddof=1), np.array([np.nan, 2.0]))
    b = _with_nans((4, 6))
    _check(fnp.nanvar(b, 1, ddof=1), np.nanvar(b, 1, ddof=1))
    _check(fnp.nanstd(b, 0, correction=1), np.nanstd(b, 0, correction=1))
    w = RNG.uniform(size=(4, 6)) < 0.7
    with np.errstate(all="ignore"):
        _check(fnp.nanvar(b, 1, where=w), np.nanvar(b, 1, where=w))
        _check(fnp.nanmax(b, 1, initial=-0.5, where=w), np.nanmax(b, 1, initial=-0.5, where=w))
        _check(fnp.nanprod(b, 1, where=w), np.nanprod(b, 1, where=w))
    for name in ("nancumsum", "nancumprod"):
        for axis in (None, 0, 1):
            _check(getattr(fnp, name)(b, axis=axis), getattr(np, name)(b, axis=axis))
    _check(fnp.nanmax(np.arange(5)), np.nanmax(np.arange(5)))  # integers have no NaN
    with pytest.raises(TypeError, match="out="):
        fnp.nanmax(b, out=b)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_nanquantile_nanpercentile_match_numpy(method):
    a = _with_nans((4, 7))
    a[0] = np.nan
    q = np.array([0.0, 0.3, 0.5, 1.0])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _check(fnp.nanquantile(a, q, axis=1, method=method), np.nanquantile(a, q, axis=1, method=method))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _check(fnp.nanpercentile(a, 40, axis=(0, 1), method=method, keepdims=True),
               np.nanpercentile(a, 40, axis=(0, 1), method=method, keepdims=True))
    with pytest.raises(ValueError, match="nanquantile"):
        fnp.nanquantile(a, 1.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_statistics_match_numpy(dtype):
    a = _arr((3, 5), dtype)
    a[1, 2] = a[1, 4]
    w = _arr((5,), dtype, 0.1, 2.0)
    for axis in (None, 0, 1, -1):
        _check(fnp.ptp(a, axis=axis), np.ptp(a, axis=axis))
    _check(fnp.average(a), np.average(a))
    _check(fnp.average(a, axis=1, weights=w, returned=True), np.average(a, axis=1, weights=w, returned=True))
    _check(fnp.average(a, weights=np.abs(a)), np.average(a, weights=np.abs(a)))
    _check(fnp.average(a, axis=1, weights=w, keepdims=True), np.average(a, axis=1, weights=w, keepdims=True))
    fw = RNG.integers(1, 4, (5,))
    for kw in ({}, {"bias": True}, {"ddof": 2}, {"aweights": w}, {"fweights": fw},
               {"fweights": fw, "aweights": w, "ddof": 1}, {"rowvar": False}):
        m = a if not kw.get("rowvar", True) is False else a.T
        _check(fnp.cov(m, **kw), np.cov(m, **kw), rtol=1e-4 if dtype == np.float32 else None)
    _check(fnp.cov(a[0], a[1]), np.cov(a[0], a[1]))
    _check(fnp.cov(a[0]), np.cov(a[0]))
    _check(fnp.corrcoef(a), np.corrcoef(a), rtol=1e-4 if dtype == np.float32 else None)
    _check(fnp.corrcoef(a[0], a[2]), np.corrcoef(a[0], a[2]))
    with pytest.raises(ZeroDivisionError):
        fnp.average(a, axis=1, weights=np.zeros(5))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(5, 3), (3, 5), (4, 4), (1, 6), (6, 2)])
def test_convolve_correlate_match_numpy(mode, n, m):
    a, v = _arr((n,)), _arr((m,))
    _check(fnp.convolve(a, v, mode), np.convolve(a, v, mode))
    _check(fnp.correlate(a, v, mode), np.correlate(a, v, mode))
    ac, vc = a + 1j * _arr((n,)), v - 0.5j * _arr((m,))
    _check(fnp.correlate(ac, vc, mode), np.correlate(ac, vc, mode))
    ai, vi = RNG.integers(-5, 5, n), RNG.integers(-5, 5, m)
    _check(fnp.convolve(ai, vi, mode), np.convolve(ai, vi, mode))


def test_cumulative_and_calculus_match_numpy():
    x = _arr((3, 4))
    for name in ("cumulative_sum", "cumulative_prod"):
        for axis in (0, 1, -1):
            for init in (False, True):
                _check(getattr(fnp, name)(x, axis=axis, include_initial=init),
                       getattr(np, name)(x, axis=axis, include_initial=init))
        _check(getattr(fnp, name)(np.array([1, 2, 3], np.int32)), getattr(np, name)(np.array([1, 2, 3], np.int32)))
        with pytest.raises(ShapeError, match=name):
            getattr(fnp, name)(x)
    f = _arr((5, 6))
    xs = np.cumsum(RNG.uniform(0.5, 1.5, 6))
    for edge in (1, 2):
        _check(fnp.gradient(f, edge_order=edge), np.gradient(f, edge_order=edge))
        _check(fnp.gradient(f, 0.5, xs, edge_order=edge), np.gradient(f, 0.5, xs, edge_order=edge))
        _check(fnp.gradient(f, xs, axis=1, edge_order=edge), np.gradient(f, xs, axis=1, edge_order=edge))
        _check(fnp.gradient(f[0], 2.0, edge_order=edge), np.gradient(f[0], 2.0, edge_order=edge))
    _check(fnp.gradient(np.arange(5)), np.gradient(np.arange(5)))
    for kw in ({}, {"dx": 0.3}, {"x": xs}, {"x": np.broadcast_to(xs, (5, 6))}):
        _check(fnp.trapezoid(f, **kw), np.trapezoid(f, **kw))
    _check(fnp.trapezoid(f, axis=0, dx=2.0), np.trapezoid(f, axis=0, dx=2.0))
    p = np.cumsum(_arr((2, 9)), axis=1)
    for kw in ({}, {"axis": 0}, {"discont": 4.0}, {"period": 3.0}, {"period": 360.0}):
        _check(fnp.unwrap(p * (50 if kw.get("period") == 360.0 else 1), **kw),
               np.unwrap(p * (50 if kw.get("period") == 360.0 else 1), **kw))
    _check(fnp.ediff1d(f), np.ediff1d(f))
    _check(fnp.ediff1d(f[0], to_end=[1.0, 2.0], to_begin=-3.0), np.ediff1d(f[0], to_end=[1.0, 2.0], to_begin=-3.0))


def test_polynomials_match_numpy():
    p, q = _arr((4,)), _arr((2,))
    _check(fnp.polyadd(p, q), np.polyadd(p, q))
    _check(fnp.polysub(q, p), np.polysub(q, p))
    _check(fnp.polymul(p, q), np.polymul(p, q))
    _check(fnp.polydiv(p, q), np.polydiv(p, q))
    _check(fnp.polydiv(np.array([1.0, -3.0, 2.0]), np.array([1.0, -1.0])),
           np.polydiv(np.array([1.0, -3.0, 2.0]), np.array([1.0, -1.0])))
    for m in (0, 1, 2, 5):
        _check(fnp.polyder(p, m), np.polyder(p, m))
        _check(fnp.polyint(p, m), np.polyint(p, m))
    _check(fnp.polyint(p, 2, k=[1.0, 2.0]), np.polyint(p, 2, k=[1.0, 2.0]))
    x = _arr((3, 2))
    _check(fnp.polyval(p, x), np.polyval(p, x))
    _check(fnp.polyval(np.array([1, 2, 3]), 2), np.polyval(np.array([1, 2, 3]), 2))
    r = _arr((4,))
    _check(fnp.poly(r), np.poly(r))
    mat = _arr((3, 3))
    _check(fnp.poly(mat), np.poly(mat), rtol=1e-10)
    _check(fnp.vander(r), np.vander(r))
    _check(fnp.vander(r, 3, increasing=True), np.vander(r, 3, increasing=True))
    _check(fnp.vander(np.array([1, 2, 3])), np.vander(np.array([1, 2, 3])))


def test_polyfit_and_roots_match_numpy():
    x = np.linspace(-1, 1, 12)
    y = np.stack([np.cos(3 * x), x**3], axis=1)
    w = RNG.uniform(0.5, 1.5, 12)
    for deg in (0, 1, 3):
        _check(fnp.polyfit(x, y[:, 0], deg), np.polyfit(x, y[:, 0], deg), rtol=1e-10)
        _check(fnp.polyfit(x, y, deg, w=w), np.polyfit(x, y, deg, w=w), rtol=1e-10)
    got = fnp.polyfit(x, y[:, 0], 2, full=True)
    want = np.polyfit(x, y[:, 0], 2, full=True)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), v, rtol=1e-9, atol=1e-14)
    for c in (True, "unscaled"):
        for g, v in zip(fnp.polyfit(x, y, 2, cov=c), np.polyfit(x, y, 2, cov=c)):
            np.testing.assert_allclose(np.asarray(g), v, rtol=1e-9, atol=1e-14)
    for p in ([1.0, -3.0, 2.0], [2.0, 0.0, 5.0], [0.0, 0.0, 1.0, -6.0, 11.0, -6.0, 0.0, 0.0], [3.0]):
        got, want = fnp.roots(np.array(p)), np.roots(np.array(p))
        assert got.dtype == np.complex128  # always complex, as JAX
        np.testing.assert_allclose(np.sort_complex(np.asarray(got)), np.sort_complex(want.astype(complex)), atol=1e-12)
    assert fnp.roots(np.array([1.0, 2.0], np.float32)).dtype == np.complex64


def test_windows_match_numpy():
    for m in (-1, 0, 1, 2, 7, 8):
        for name in ("bartlett", "blackman", "hamming", "hanning"):
            _check(getattr(fnp, name)(m), getattr(np, name)(m))
        _check(fnp.kaiser(m, 5.0), np.kaiser(m, 5.0), rtol=1e-13)
    with pytest.raises(TypeError, match="hamming"):
        fnp.hamming(2.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_histograms_match_numpy(dtype):
    a = _arr((40,), dtype)
    a[:3] = [a[5], a.min(), a.max()]  # values on edges
    w = _arr((40,), dtype, 0.0, 2.0)
    for kw in ({}, {"bins": 7}, {"bins": 5, "range": (-1.0, 2.0)}, {"bins": np.array([-3.0, -1.0, 0.0, 2.5])},
               {"bins": 6, "density": True}, {"bins": 4, "weights": w}, {"bins": "auto"},
               {"bins": 4, "weights": w, "density": True}):
        _check(fnp.histogram(a, **kw), np.histogram(a, **kw), dtype="skip", rtol=1e-5 if dtype == np.float32 else None)
        if "density" not in kw:
            _check(fnp.histogram_bin_edges(a, **kw), np.histogram_bin_edges(a, **kw), rtol=1e-5 if dtype == np.float32 else None)
    h, e = fnp.histogram(a, 4)
    assert h.dtype == np.int64 and e.dtype == np.histogram(a, 4)[1].dtype
    _check(fnp.histogram(np.full(5, 2.0), 3), np.histogram(np.full(5, 2.0), 3))
    pts = _arr((30, 3), dtype)
    for kw in ({}, {"bins": (2, 3, 4)}, {"bins": 3, "density": True}, {"weights": w[:30], "bins": 2},
               {"bins": 2, "range": [(-1, 1), None, (0, 3)]}):
        got, want = fnp.histogramdd(pts, **kw), np.histogramdd(pts, **kw)
        _check(got[0], want[0], dtype="skip", rtol=1e-5)
        _check(tuple(got[1]), tuple(want[1]), dtype="skip", rtol=1e-5)
    got, want = fnp.histogram2d(pts[:, 0], pts[:, 1], bins=(3, 5)), np.histogram2d(pts[:, 0], pts[:, 1], bins=(3, 5))
    _check(got, want, dtype="skip", rtol=1e-5)


def test_bincount_and_digitize_match_numpy():
    x = RNG.integers(0, 9, 30)
    w = _arr((30,))
    _check(fnp.bincount(x), np.bincount(x))
    _check(fnp.bincount(x, w), np.bincount(x, w))
    _check(fnp.bincount(x, minlength=15), np.bincount(x, minlength=15))
    _check(fnp.bincount(x.astype(np.int32), w.astype(np.float32)), np.bincount(x.astype(np.int32), w.astype(np.float32)))
    _check(fnp.bincount(np.array([], np.int64)), np.bincount(np.array([], np.int64)))
    _check(fnp.bincount(x, length=5), np.bincount(x[x < 5], minlength=5))  # JAX drops the rest
    _check(fnp.bincount(np.array([0, 1, 5]), minlength=4, length=3), np.array([1, 1, 0]))  # JAX's
    with pytest.raises(ValueError, match="bincount"):
        fnp.bincount(np.array([1, -1]))
    with pytest.raises(DTypeError, match="bincount"):
        fnp.bincount(np.array([1.0]))
    v = _arr((3, 4))
    v[0, 0] = 1.0
    for bins in (np.array([-2.0, 0.0, 1.0, 2.5]), np.array([2.5, 1.0, 0.0, -2.0]), np.array([1.0])):
        for right in (False, True):
            _check(fnp.digitize(v, bins, right), np.digitize(v, bins, right))
    with pytest.raises(ValueError, match="digitize"):
        fnp.digitize(v, np.array([0.0, 2.0, 1.0]))


def test_matvec_vecmat_einsum_path_match_numpy():
    a, b = _arr((2, 3, 4)) + 1j * _arr((2, 3, 4)), _arr((4,)) - 1j * _arr((4,))
    c = _arr((3,)) + 0.5j
    _check(fnp.matvec(a, b), np.matvec(a, b))
    _check(fnp.vecmat(c, a), np.vecmat(c, a))
    ops = (np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
    for opt in ("greedy", "optimal"):
        got, want = fnp.einsum_path("ij,jk,kl->il", *ops, optimize=opt), np.einsum_path("ij,jk,kl->il", *ops, optimize=opt)
        assert got[0] == want[0] and got[1] == want[1]
    with pytest.raises(ValueError, match="einsum_path"):
        fnp.einsum_path("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))


def test_values_under_jit_and_vmap_equal_eager():
    x = _with_nans((3, 6))
    y = _arr((3, 6))
    cases = [
        (lambda a: fnp.nanmax(a, axis=1), (x,)),
        (lambda a: fnp.nanstd(a, axis=0), (x,)),
        (lambda a: fnp.nanmedian(a, axis=1), (x,)),
        (lambda a: fnp.sinc(a), (y,)),
        (lambda a: fnp.histogram(a, bins=4), (y,)),
        (lambda a: fnp.bincount(fnp.astype(fnp.abs(a), "int64")[0], length=5), (y,)),
        (lambda a: fnp.digitize(a, fnp.array([-1.0, 0.0, 1.0])), (y,)),
        (lambda a: fnp.convolve(a[0], a[1, :3]), (y,)),
        (lambda a: fnp.polyval(a[0], a[1]), (y,)),
        (lambda a: fnp.gradient(a, axis=1), (y,)),
        (lambda a: fnp.unwrap(a * 3), (y,)),
        (lambda a: fnp.cov(a), (y,)),
        (lambda a: fnp.roots(a[0, :4], strip_zeros=False), (y,)),
        (lambda a: fnp.polydiv(a[0], a[1, :3], trim_leading_zeros=False), (y,)),
        (lambda a: fnp.packbits(a > 0, axis=1), (y,)),
    ]
    with np.errstate(all="ignore"):
        for f, args in cases:
            _check(fgrad.jit(f)(*args), f(*args), dtype=None)
    for f in (lambda r: fnp.nanmax(r), lambda r: fnp.nanvar(r), lambda r: fnp.sinc(r),
              lambda r: fnp.trapezoid(r), lambda r: fnp.polyval(r, 0.5), lambda r: fnp.nanquantile(r, 0.3),
              lambda r: fnp.fmax(r, 0.1)):
        with np.errstate(all="ignore"):
            _check(fgrad.vmap(f)(x), np.stack([np.asarray(f(row)) for row in x]))
    roots = lambda r: fnp.roots(r[:3], strip_zeros=False)  # noqa: E731
    _check(fgrad.vmap(roots)(y), np.stack([np.asarray(roots(row)) for row in y]))


def test_data_dependent_shapes_need_static_arguments_under_jit():
    x = fnp.array([1, 2, 2])
    with pytest.raises(ConcretizationError, match="length="):
        fgrad.jit(lambda v: fnp.bincount(v))(x)
    with pytest.raises(ConcretizationError, match="strip_zeros=False"):
        fgrad.jit(fnp.roots)(fnp.array([1.0, -1.0]))
    with pytest.raises(ConcretizationError, match="trim_leading_zeros=False"):
        fgrad.jit(fnp.polydiv)(fnp.array([1.0, -1.0]), fnp.array([1.0]))
    with pytest.raises(ConcretizationError, match="number of bins"):
        fgrad.jit(lambda v: fnp.histogram(v, bins="auto"))(fnp.array([1.0, 2.0]))
    np.testing.assert_array_equal(fgrad.jit(lambda v: fnp.bincount(v, length=4))(x), [0, 1, 2, 0])
