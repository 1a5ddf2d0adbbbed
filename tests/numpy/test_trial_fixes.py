"""Regression tests for the problems a user porting numpy scripts found (issue 14).

Every expected value is numpy 2's own result on the same input (or, where fgrad keeps a
documented difference, the dtype JAX gives).
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp

_RNG = np.random.default_rng(14)

# ------------------------------------------------------------------ convolve / correlate


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("fn", ["convolve", "correlate"])
def test_issue_14_conv_modes_match_numpy_for_all_lengths(fn, complex_):
    # numpy centres "same" on the longer input; correlate with a shorter a was shifted
    for n in range(1, 8):
        for m in range(1, 8):
            a, v = _RNG.normal(size=n), _RNG.normal(size=m)
            if complex_:  # numpy's correlate conjugates v
                a, v = a + 1j * _RNG.normal(size=n), v + 1j * _RNG.normal(size=m)
            for mode in ("full", "same", "valid"):
                want = getattr(np, fn)(a, v, mode)
                got = np.asarray(getattr(fnp, fn)(a, v, mode))
                assert got.shape == want.shape, (fn, n, m, mode)
                assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{fn} {n} {m} {mode}")


def test_issue_14_correlate_same_short_a_reported_case():
    a, v = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    assert_allclose(np.asarray(fnp.correlate(a, v, "same")), np.correlate(a, v, "same"))


@pytest.mark.parametrize("fn", ["convolve", "correlate"])
def test_issue_14_conv_same_under_vmap_and_jit(fn):
    a, v = _RNG.normal(size=(3, 4)), _RNG.normal(size=(3, 5))
    f = lambda x, y: getattr(fnp, fn)(x, y, "same")  # noqa: E731
    want = np.stack([getattr(np, fn)(x, y, "same") for x, y in zip(a, v)])
    assert_allclose(np.asarray(fgrad.vmap(f)(a, v)), want, rtol=1e-12)
    assert_allclose(np.asarray(fgrad.jit(fgrad.vmap(f))(a, v)), want, rtol=1e-12)


def test_issue_14_conv_same_gradient():
    a, v = _RNG.normal(size=4), _RNG.normal(size=6)
    fgrad.test_util.check_grads(lambda x, y: fnp.correlate(x, y, "same"), (a, v), order=1)


def test_issue_14_conv_bool_stays_bool():
    a, v = np.array([True, False, True]), np.array([True, True])
    for fn in ("convolve", "correlate"):
        got, want = getattr(fnp, fn)(a, v, "full"), getattr(np, fn)(a, v, "full")
        assert got.dtype == want.dtype and (np.asarray(got) == want).all()
    assert fnp.polymul(a, v).dtype == np.polymul(a, v).dtype


# ------------------------------------------------------------------ integer and bool dtypes

_X = np.array([3, 1, 4, 1, 5, 9, 2, 6])
_INTS = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]

# Every function of fgrad/numpy/_math_extra.py and the nan reductions that take numeric
# data, as (name, call); call(module, x) runs the same code on numpy and fgrad.numpy.
_FUNCS = {
    "angle": lambda m, x: m.angle(x),
    "around": lambda m, x: m.around(x),
    "average": lambda m, x: m.average(x),
    "average_weights": lambda m, x: m.average(x, weights=x),
    "corrcoef": lambda m, x: m.corrcoef(x.reshape(2, 4)),
    "cov": lambda m, x: m.cov(x.reshape(2, 4)),
    "convolve": lambda m, x: m.convolve(x, x[:3]),
    "correlate": lambda m, x: m.correlate(x, x[:3]),
    "cumulative_prod": lambda m, x: m.cumulative_prod(x),
    "cumulative_sum": lambda m, x: m.cumulative_sum(x),
    "degrees": lambda m, x: m.degrees(x),
    "radians": lambda m, x: m.radians(x),
    "ediff1d": lambda m, x: m.ediff1d(x),
    "float_power": lambda m, x: m.float_power(x, x),
    "frexp": lambda m, x: m.frexp(x)[0],
    "gradient": lambda m, x: m.gradient(x),
    "heaviside": lambda m, x: m.heaviside(x, x),
    "histogram_weights": lambda m, x: m.histogram(x, weights=x)[0],
    "i0": lambda m, x: m.i0(x),
    "logaddexp2": lambda m, x: m.logaddexp2(x, x),
    "modf": lambda m, x: m.modf(x)[0],
    "nancumprod": lambda m, x: m.nancumprod(x),
    "nancumsum": lambda m, x: m.nancumsum(x),
    "nanmax": lambda m, x: m.nanmax(x),
    "nanmin": lambda m, x: m.nanmin(x),
    "nanprod": lambda m, x: m.nanprod(x),
    "nansum": lambda m, x: m.nansum(x),
    "nanmean": lambda m, x: m.nanmean(x),
    "nanstd": lambda m, x: m.nanstd(x),
    "nanvar": lambda m, x: m.nanvar(x),
    "nanmedian": lambda m, x: m.nanmedian(x),
    "nanpercentile": lambda m, x: m.nanpercentile(x, 30),
    "nanquantile": lambda m, x: m.nanquantile(x, 0.3),
    "poly": lambda m, x: m.poly(x[:3]),
    "polyadd": lambda m, x: m.polyadd(x, x[:3]),
    "polyder": lambda m, x: m.polyder(x),
    "polyint": lambda m, x: m.polyint(x),
    "polymul": lambda m, x: m.polymul(x, x[:3]),
    "polysub": lambda m, x: m.polysub(x, x[:3]),
    "polyval": lambda m, x: m.polyval(x, x),
    "polyfit": lambda m, x: m.polyfit(np.arange(8.0), x, 2),
    "polydiv": lambda m, x: m.polydiv(x, x[:3] + 1)[0],
    "ptp": lambda m, x: m.ptp(x),
    "sinc": lambda m, x: m.sinc(x),
    "trapezoid": lambda m, x: m.trapezoid(x),
    "unwrap": lambda m, x: m.unwrap(x),
    "vander": lambda m, x: m.vander(x[:3]),
    "matvec": lambda m, x: m.matvec(x.reshape(2, 4), x[:4]),
    "vecmat": lambda m, x: m.vecmat(x[:2], x.reshape(2, 4)),
    "vecdot": lambda m, x: m.vecdot(x, x),
    "reciprocal": lambda m, x: m.reciprocal(x),
    "square": lambda m, x: m.square(x),
}


@pytest.mark.parametrize("name", sorted(_FUNCS))
def test_issue_14_integer_and_bool_inputs_take_numpys_result_dtype(name):
    call = _FUNCS[name]
    for dt in _INTS:
        x = _X.astype(dt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = np.asarray(call(np, x))
            except TypeError:  # numpy has no loop for this dtype (bool subtract, ...)
                continue
            got = call(fnp, x)
        assert got.dtype == want.dtype, f"{name}({dt}): fgrad {got.dtype}, numpy {want.dtype}"
        if want.dtype.kind in "fc":
            if name == "unwrap" and dt.startswith("u"):  # numpy's uint differences wrap
                want = np.unwrap(x.astype(np.float64))
            rtol = 4e-3 if want.dtype == np.float16 else 1e-6  # float16's eps is 1e-3
            assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-9, err_msg=f"{name}({dt})")
        elif name != "reciprocal" or dt == "bool":  # numpy's 1 // 0 is platform-defined
            assert (np.asarray(got) == want).all(), f"{name}({dt})"


def test_issue_14_reported_uint8_values():
    img = _RNG.integers(0, 256, size=(16, 16)).astype(np.uint8)
    for fn in ("nanvar", "nanstd", "nanmedian", "i0", "sinc", "unwrap"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = getattr(fnp, fn)(img)
            # numpy's unwrap takes uint8 differences, which wrap around: compare with floats
            want = getattr(np, fn)(img.astype(np.float64) if fn == "unwrap" else img)
        assert got.dtype == np.float64
        assert_allclose(np.asarray(got), want, rtol=1e-12)
    for fn, q in (("nanpercentile", 30.0), ("nanquantile", 0.3)):
        assert_allclose(np.asarray(getattr(fnp, fn)(img, q)), getattr(np, fn)(img, q))


def test_issue_14_reciprocal_integer_values():
    x = np.array([1, -1, 2, -3, 7], dtype=np.int32)
    assert_allclose(np.asarray(fnp.reciprocal(x)), np.reciprocal(x))
    assert fnp.reciprocal(x).dtype == np.int32
    assert np.asarray(fgrad.jit(fnp.reciprocal)(x)).tolist() == np.reciprocal(x).tolist()


# ------------------------------------------------------------------ gradient keeps float32


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64])
def test_issue_14_gradient_keeps_floating_dtype(dtype):
    f = np.array([1.0, 4.0, 9.0, 16.0, 30.0], dtype=dtype)
    x = np.array([0.0, 1.0, 3.0, 4.0, 7.0])
    for args in ((), (0.5,), (x,)):
        got, want = fnp.gradient(f, *args), np.gradient(f, *args)
        assert got.dtype == want.dtype == dtype
        assert_allclose(np.asarray(got), want, rtol=1e-3)
    f2 = _RNG.normal(size=(3, 4)).astype(np.float32)
    assert all(g.dtype == np.float32 for g in fnp.gradient(f2))
    assert fgrad.jit(fnp.gradient)(f).dtype == dtype


# ------------------------------------------------------------------ crashes


def test_issue_14_count_nonzero_of_complex_numpy_array():
    for x in (np.array([1j, 0]), np.array([[1 + 0j, 0], [0, 2j]]), np.array([np.nan, 0.0, 1.0])):
        assert int(fnp.count_nonzero(x)) == np.count_nonzero(x)
        assert_allclose(np.asarray(fnp.count_nonzero(x, axis=0)), np.count_nonzero(x, axis=0))
    assert int(fgrad.jit(fnp.count_nonzero)(np.array([1j, 0, 2]))) == 2


def test_issue_14_average_weights_shaped_as_the_reduced_axes():
    x3d, w = _RNG.normal(size=(3, 4, 5)), _RNG.uniform(0.5, 1.5, size=(3, 5))
    for axis, weights in (((0, 2), w), ((2, 0), w.T), (-1, w[0]), (1, w[:, :4].T[:, 0])):
        want = np.average(x3d, axis=axis, weights=weights, returned=True)
        got = fnp.average(x3d, axis=axis, weights=weights, returned=True)
        for g, e in zip(got, want):
            assert_allclose(np.asarray(g), e, rtol=1e-12)
    f = lambda x, w: fnp.average(x, axis=(0, 2), weights=w)  # noqa: E731
    fgrad.test_util.check_grads(f, (x3d, w), order=1)
    assert_allclose(np.asarray(fgrad.jit(f)(x3d, w)), np.average(x3d, axis=(0, 2), weights=w))
    with pytest.raises(ValueError, match="reduced axes"):
        fnp.average(x3d, axis=(0, 2), weights=w.T)


def test_issue_14_insert_with_boolean_mask():
    a, mask = np.arange(5.0), np.array([True, False, True, False, False])
    assert_allclose(np.asarray(fnp.insert(a, mask, 9.0)), np.insert(a, mask, 9.0))
    a2 = _RNG.normal(size=(5, 2))
    assert_allclose(np.asarray(fnp.insert(a2, mask, [7.0, 8.0], axis=0)),
                    np.insert(a2, mask, [7.0, 8.0], axis=0))
    short = np.array([True, False])  # numpy 2 takes the True positions, whatever the length
    assert_allclose(np.asarray(fnp.insert(a, short, 9.0)), np.insert(a, short, 9.0))
    ct = fgrad.grad(lambda v: fnp.sum(fnp.insert(a, mask, v) ** 2))(np.array([1.0, 2.0]))
    assert_allclose(np.asarray(ct), [2.0, 4.0])  # d/dv sum(v^2) = 2 v
    with pytest.raises(ValueError, match="1-d"):
        fnp.insert(a, np.array([[True, False]]), 9.0)


# ------------------------------------------------------------------ pad's statistic and ramp modes

_PAD_CASES = [
    ("maximum", {}), ("minimum", {}), ("mean", {}), ("median", {}),
    ("mean", {"stat_length": 2}), ("median", {"stat_length": ((1, 2), (3, 1))}),
    ("maximum", {"stat_length": (1, 3)}), ("minimum", {"stat_length": 1}),
    ("linear_ramp", {}), ("linear_ramp", {"end_values": (5, -3)}),
    ("linear_ramp", {"end_values": ((1, 2), (3, 4))}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("mode,kwargs", _PAD_CASES)
def test_issue_14_pad_statistic_and_ramp_modes_match_numpy(mode, kwargs, dtype):
    x = (_RNG.normal(size=(3, 4)) * 10).astype(dtype) if dtype != "uint8" else (
        _RNG.integers(0, 255, (3, 4)).astype(dtype))
    for pad_width in (2, ((1, 0), (0, 3)), ((0, 0), (2, 1))):
        want = np.pad(x, pad_width, mode, **kwargs)
        got = fnp.pad(x, pad_width, mode, **kwargs)
        assert got.dtype == want.dtype
        assert_allclose(np.asarray(got), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["maximum", "mean", "median", "linear_ramp"])
def test_issue_14_pad_modes_differentiate_and_batch(mode):
    x = _RNG.normal(size=(2, 5))
    f = lambda v: fnp.pad(v, (2, 1), mode)  # noqa: E731
    fgrad.test_util.check_grads(f, (x[0],), order=1)
    want = np.stack([np.pad(v, (2, 1), mode) for v in x])
    assert_allclose(np.asarray(fgrad.vmap(f)(x)), want, rtol=1e-12)
    assert_allclose(np.asarray(fgrad.jit(f)(x[0])), want[0], rtol=1e-12)
    g = fgrad.jit(fgrad.grad(lambda v: fnp.sum(f(v) ** 2)))(x[0])
    assert_allclose(np.asarray(g), np.asarray(fgrad.grad(lambda v: fnp.sum(f(v) ** 2))(x[0])))


def test_issue_14_pad_refuses_options_of_other_modes():
    with pytest.raises(TypeError, match="stat_length"):
        fnp.pad(np.ones(3), 1, "edge", stat_length=2)
    with pytest.raises(TypeError, match="end_values"):
        fnp.pad(np.ones(3), 1, "mean", end_values=2)
    with pytest.raises(ValueError, match="stat_length"):
        fnp.pad(np.ones(3), 1, "mean", stat_length=0)


# ------------------------------------------------------------------ ufunc methods


def test_issue_14_ufunc_methods_point_to_functional_updates():
    for op, method, hint in ((fnp.add, "at", r"x\.at\[idx\]\.add\(v\)"),
                             (fnp.maximum, "at", r"x\.at\[idx\]\.max\(v\)"),
                             (fnp.multiply, "reduce", r"fnp\.sum")):
        with pytest.raises(AttributeError, match=hint):
            getattr(op, method)
    assert not hasattr(fnp.add, "no_such_attribute")
    x = fnp.zeros(3)
    assert_allclose(np.asarray(x.at[np.array([0, 0, 2])].add(1.0)), [2.0, 0.0, 1.0])


@pytest.mark.parametrize("constant_values", [((1, 2), (3, 4)), (7, 8), [5], ((1.5, 2), (3, 4))])
def test_issue_14_pad_per_side_constant_values(constant_values):
    x = _RNG.normal(size=(2, 3))
    for dtype in (np.float64, np.int32):
        for pad_width in (1, ((1, 0), (2, 1)), ((0, 0), (1, 1))):
            want = np.pad(x.astype(dtype), pad_width, constant_values=constant_values)
            got = fnp.pad(x.astype(dtype), pad_width, constant_values=constant_values)
            assert got.dtype == want.dtype and (np.asarray(got) == want).all()
    f = lambda v: fnp.pad(v, 1, constant_values=constant_values)  # noqa: E731
    stack = _RNG.normal(size=(4, 2, 3))
    want = np.stack([np.pad(v, 1, constant_values=constant_values) for v in stack])
    assert_allclose(np.asarray(fgrad.jit(fgrad.vmap(f))(stack)), want)
    # d/dx sum(pad(x)^2) = 2 x: the constants carry no derivative
    assert_allclose(np.asarray(fgrad.grad(lambda v: fnp.sum(f(v) ** 2))(x)), 2 * x)


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_issue_14_pad_odd_reflection(mode):
    for n in range(1, 6):
        for dtype in (np.float64, np.int64):
            x = (_RNG.normal(size=(n, 3)) * 5).astype(dtype)
            for pad_width in (1, 3, 9, ((0, 7), (4, 0)), ((6, 1), (2, 2))):
                want = np.pad(x, pad_width, mode, reflect_type="odd")
                got = fnp.pad(x, pad_width, mode, reflect_type="odd")
                assert got.dtype == want.dtype
                assert_allclose(np.asarray(got), want, rtol=1e-12, err_msg=f"{n} {pad_width}")
    f = lambda v: fnp.pad(v, (4, 2), mode, reflect_type="odd")  # noqa: E731
    x = _RNG.normal(size=(3, 3))
    fgrad.test_util.check_grads(f, (x[0],), order=1)
    want = np.stack([np.pad(v, (4, 2), mode, reflect_type="odd") for v in x])
    assert_allclose(np.asarray(fgrad.jit(fgrad.vmap(f))(x)), want, rtol=1e-12)
