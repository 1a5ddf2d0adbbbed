"""float16 reductions accumulate in float32 and round once (issue 12).

Each case was a silent wrong answer when float16 was summed in float16: the mean of
100,000 ones was NaN (the sum overflows past 65504, then inf / 100000 rounded to inf),
``mean``/``var``/``std`` of values near 1000 were inf, ``grad(mean)`` over 100,000 entries
was 0. The expected numbers are closed forms, or the float32 computation rounded to
float16 once (numpy's own rule for ``mean``); each case runs eagerly, under ``jit`` and
under ``vmap``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fgrad
import fgrad.numpy as fnp

F16 = np.float16
N = 100_000
# 1 / 100000 in float32, rounded to float16: a subnormal (the smallest normal is 6.1e-5).
INV_N = F16(np.float32(1) / np.float32(N))


def _run(mode, f, x):
    """``f(x)`` eagerly, under jit, or under vmap over a batch of two copies of ``x``
    (the result of the first copy)."""
    if mode == "eager":
        return np.asarray(f(x))
    if mode == "jit":
        return np.asarray(fgrad.jit(f)(x))
    out = np.asarray(fgrad.vmap(f)(fnp.stack([x, x])))
    assert_array_equal(out[0], out[1])
    return out[0]


MODES = ("eager", "jit", "vmap")


def _near_1000():
    # 999.5 and 1000.5 alternate, 100,000 of them: mean 1000, var 0.25, std 0.5 exactly,
    # and the float16 sum of the values (1e8) or of the squares overflows.
    return fnp.array(np.tile(np.array([999.5, 1000.5], F16), N // 2))


def test_issue_12_inv_n_is_the_float16_subnormal():
    assert float(INV_N) == 1.0013580322265625e-05
    assert INV_N < np.finfo(F16).smallest_normal


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_mean_of_100000_float16_ones(mode):
    out = _run(mode, fnp.mean, fnp.ones(N, dtype=F16))
    assert out.dtype == F16 == np.mean(np.ones(N, F16)).dtype
    assert out == 1.0  # was NaN


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "name, f, want",
    [
        ("mean", fnp.mean, 1000.0),
        ("var", fnp.var, 0.25),
        ("std", fnp.std, 0.5),
        ("var_ddof1", lambda x: fnp.var(x, ddof=1), F16(np.float32(25000) / np.float32(99999))),
    ],
)
def test_issue_12_mean_var_std_near_1000(mode, name, f, want):
    # numpy's var/std sum the float16 squares in float16 and give inf here; JAX computes
    # in float32, as fgrad now does. All were inf before.
    out = _run(mode, f, _near_1000())
    assert out.dtype == F16
    assert out == want


def test_issue_12_std_whose_variance_overflows_float16():
    # var = 1e6 does not fit in float16 (inf, as it should), its square root 1000 does.
    x = fnp.array([-1000.0, 1000.0], dtype=F16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the overflowing cast of var
        assert np.isinf(np.asarray(fnp.var(x)))
    assert np.asarray(fnp.std(x)) == 1000.0


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_grad_mean_over_100000_float16_entries(mode):
    g = _run(mode, fgrad.grad(fnp.mean), fnp.ones(N, dtype=F16))
    assert g.dtype == F16
    assert_array_equal(g, np.full(N, INV_N))  # was 0


def test_issue_12_grad_mean_under_jit_of_grad_and_vmap_of_grad():
    x = fnp.ones((2, N // 2), dtype=F16)
    want = F16(np.float32(1) / np.float32(N // 2))
    assert_array_equal(np.asarray(fgrad.jit(fgrad.grad(fnp.mean))(x)), np.full((2, N // 2), INV_N))
    assert_array_equal(np.asarray(fgrad.vmap(fgrad.grad(fnp.mean))(x)), np.full(x.shape, want))


def test_issue_12_jvp_of_mean_over_float16():
    x = fnp.ones(N, dtype=F16)
    out, tangent = fgrad.jvp(fnp.mean, (x,), (fnp.ones_like(x),))
    assert np.asarray(out) == 1.0 and np.asarray(tangent) == 1.0
    assert tangent.dtype == F16


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_grad_var_and_std_near_1000(mode):
    # d var / dx = 2 (x - mean) / n = +-1e-5; d std / dx = that / (2 std) = +-1e-5.
    want = np.tile(np.array([-INV_N, INV_N]), N // 2)
    for f in (fnp.var, fnp.std):
        g = _run(mode, fgrad.grad(f), _near_1000())
        assert g.dtype == F16
        assert_array_equal(g, want)


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_nanmean_of_float16(mode):
    x = np.ones(N, F16)
    x[::10] = np.nan
    out = _run(mode, fnp.nanmean, fnp.array(x))
    assert out.dtype == F16 and out == 1.0


# ---------------------------------------------------------------- sum


def test_issue_12_sum_of_float16_along_the_last_axis_is_numpys():
    # numpy widens float16 to float32 inside its pairwise-summing inner loop: along a
    # contiguous axis its sum is the float32 sum rounded once, bit for bit.
    x = np.random.default_rng(0).standard_normal((7, 10007)).astype(F16)
    out = np.asarray(fnp.sum(fnp.array(x), axis=1))
    assert_array_equal(out, np.sum(x, axis=1))
    assert_array_equal(out, np.sum(x.astype(np.float32), axis=1).astype(F16))
    assert np.asarray(fnp.sum(fnp.array(x[0]))) == np.sum(x[0])


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_sum_of_float16_down_columns_accumulates_in_float32(mode):
    # numpy adds rows in float16 here and stops at 2048 (2048 + 1 rounds to 2048).
    x = fnp.ones((4096, 3), dtype=F16)
    assert_array_equal(np.sum(np.ones((4096, 3), F16), axis=0), [2048.0] * 3)
    out = _run(mode, lambda v: fnp.sum(v, axis=0), x)
    assert out.dtype == F16
    assert_array_equal(out, [4096.0] * 3)


def test_issue_12_sum_of_float16_that_does_not_fit_is_inf_as_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isinf(np.asarray(fnp.sum(fnp.ones(N, dtype=F16))))
        assert np.isinf(np.sum(np.ones(N, F16)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_issue_12_float32_and_float64_reductions_unchanged(dtype):
    # The same numpy calls as before, bit for bit.
    x = np.random.default_rng(1).standard_normal((300, 257)).astype(dtype)
    t = fnp.array(x)
    for axis in (None, 0, 1):
        assert_array_equal(np.asarray(fnp.sum(t, axis=axis)), np.add.reduce(x, axis=axis))
        assert_array_equal(np.asarray(fnp.mean(t, axis=axis)), np.mean(x, axis=axis))
        assert fnp.var(t, axis=axis).dtype == dtype


def test_issue_12_result_dtypes_are_numpys():
    x16 = np.ones((3, 4), F16)
    t = fnp.array(x16)
    for f, g in ((fnp.sum, np.sum), (fnp.mean, np.mean), (fnp.var, np.var), (fnp.std, np.std)):
        assert f(t).dtype == g(x16).dtype == F16
        assert f(t, axis=0).dtype == g(x16, axis=0).dtype
    assert fnp.mean(fnp.ones(3, dtype=np.int8)).dtype == np.mean(np.ones(3, np.int8)).dtype


def test_issue_12_mean_with_dtype_float16_also_accumulates_in_float32():
    # numpy accumulates in float16 when dtype=float16 is asked for explicitly; JAX does
    # not, nor does fgrad.
    out = fnp.mean(fnp.ones(N, dtype=np.float32), dtype=F16)
    assert out.dtype == F16 and np.asarray(out) == 1.0


# ---------------------------------------------------------------- logsumexp


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_logsumexp_of_float16(mode):
    # log(100000 * e^0) = 11.5129...: the float16 sum of the exponentials overflowed (inf).
    out = _run(mode, fnp.logsumexp, fnp.zeros(N, dtype=F16))
    assert out.dtype == F16 and out == F16(np.log(np.float32(N)))


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_grad_logsumexp_of_float16(mode):
    # The weights softmax(0) = 1 / n, normalised in float32.
    g = _run(mode, fgrad.grad(fnp.logsumexp), fnp.zeros(N, dtype=F16))
    assert g.dtype == F16
    assert_array_equal(g, np.full(N, INV_N))


def test_issue_12_weighted_logsumexp_of_float16():
    # sum(2 * e^0) = 200000 overflowed float16.
    x = fnp.zeros(N, dtype=F16)
    out, sign = fnp.logsumexp(x, b=2.0, return_sign=True)
    assert out.dtype == sign.dtype == F16
    assert np.asarray(out) == F16(np.log(np.float32(2 * N))) and np.asarray(sign) == 1.0
    assert np.asarray(fnp.logsumexp(x, b=2.0)) == F16(np.log(np.float32(2 * N)))
