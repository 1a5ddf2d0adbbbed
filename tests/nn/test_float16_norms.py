"""float16 normalisation and softmax compute in float32 and round once (issue 12).

Before, ``layer_norm`` of width-512 rows of float16 values of size ~200 was all zeros
(the row sum of squares overflowed, so every row was divided by inf), rows near 200 lost
their mean to float16 rounding (errors up to 0.06 after normalising), and a softmax
down 4096 rows was off by a factor of 2 (the float16 sum stopped at 2048). References are
float64 computations from the same float16 inputs; results must be within one float16
unit in the last place of them. Each case runs eagerly, under ``jit`` and under ``vmap``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.ops import nn as nn_ops

F16 = np.float16
MODES = ("eager", "jit", "vmap")
RNG = np.random.default_rng(0)
WIDE = (200.0 * RNG.standard_normal((4, 512))).astype(F16)  # squares ~40000, sums past 65504
NEAR_200 = (200.0 + RNG.standard_normal((4, 512))).astype(F16)  # mean lost to rounding


def _run(mode, f, *args):
    if mode == "eager":
        return np.asarray(f(*args))
    if mode == "jit":
        return np.asarray(fgrad.jit(f)(*args))
    # vmap over a batch of two copies of every argument; both results must be equal.
    out = np.asarray(fgrad.vmap(f)(*(fnp.stack([a, a]) for a in args)))
    assert_array_equal(out[0], out[1])
    return out[0]


def _assert_within_an_ulp(y, ref):
    y = np.asarray(y)
    assert y.dtype == F16
    ulp = np.spacing(np.abs(ref).astype(F16)).astype(np.float64)
    err = np.abs(y.astype(np.float64) - ref)
    assert np.all(err <= ulp), f"max error {err.max()} (in ulps: {np.max(err / ulp)})"


def _layer_norm_ref(x, axis=-1, eps=1e-5):
    x = np.asarray(x, np.float64)
    centred = x - x.mean(axis, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis, keepdims=True) + eps)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x", [WIDE, NEAR_200], ids=["wide", "near_200"])
def test_issue_12_layer_norm_of_float16_fused(mode, x):
    _assert_within_an_ulp(_run(mode, nn.layer_norm, fnp.array(x)), _layer_norm_ref(x))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x", [WIDE, NEAR_200], ids=["wide", "near_200"])
def test_issue_12_layer_norm_of_float16_composite(mode, x):
    # Over axis 0 the fused ops do not apply: fnp.mean and the arithmetic run in float32.
    y = _run(mode, lambda v: nn.layer_norm(v, axis=0), fnp.array(x.T.copy()))
    _assert_within_an_ulp(y, _layer_norm_ref(x.T, axis=0))


def test_issue_12_layer_norm_of_float16_with_float16_parameters():
    scale = (1.0 + 0.1 * RNG.standard_normal(512)).astype(F16)
    bias = (0.1 * RNG.standard_normal(512)).astype(F16)
    y = nn.layer_norm(fnp.array(WIDE), fnp.array(scale), fnp.array(bias))
    # scale_shift runs in float16: xhat rounds once, then the product and the sum do.
    xhat = _layer_norm_ref(WIDE).astype(F16)
    assert_array_equal(np.asarray(y), xhat * scale + bias)
    # Float32 parameters promote, as before: the result is float32, computed in float32.
    y32 = nn.layer_norm(fnp.array(WIDE), fnp.array(scale.astype(np.float32)))
    assert y32.dtype == np.float32
    want = _layer_norm_ref(WIDE) * scale
    np.testing.assert_allclose(np.asarray(y32), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_standardize_of_float16_returns_float16_rstd(mode):
    def rstd(v):
        return nn_ops.standardize(v, eps=1e-5)[1]

    want = 1 / np.sqrt(WIDE.astype(np.float64).var(-1, keepdims=True) + 1e-5)
    _assert_within_an_ulp(_run(mode, rstd, fnp.array(WIDE)), want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("axis", [-1, 0])
def test_issue_12_grad_layer_norm_of_float16(mode, axis):
    # d/dx sum(w * layer_norm(x)) = rstd (w - mean(w) - xhat mean(w xhat)) per row.
    x = WIDE if axis == -1 else WIDE.T.copy()
    w = RNG.uniform(-1.0, 1.0, x.shape).astype(F16)
    g = _run(
        mode,
        fgrad.grad(lambda v, w: fnp.sum(nn.layer_norm(v, axis=axis) * w)),
        fnp.array(x),
        fnp.array(w),
    )
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    xhat = _layer_norm_ref(x64, axis)
    rstd = 1 / np.sqrt(x64.var(axis, keepdims=True) + 1e-5)
    mean_wx = (w64 * xhat).mean(axis, keepdims=True)
    ref = rstd * (w64 - w64.mean(axis, keepdims=True) - xhat * mean_wx)
    assert g.dtype == F16
    # The float16 products w * layer_norm(x) and the rounded xhat that the backward pass
    # reads cost a few units of 2^-11 of rstd * |w|; before, the gradient was 0 or NaN.
    np.testing.assert_allclose(g, ref, rtol=0, atol=4 * 2.0**-11 * rstd.max())


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_rms_norm_of_float16(mode):
    # x * x overflowed past 256: rms_norm of 300 was 0.
    x = (300.0 + RNG.standard_normal((3, 64))).astype(F16)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-6)
    _assert_within_an_ulp(_run(mode, nn.rms_norm, fnp.array(x)), ref)


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_softmax_of_float16_down_4096_rows(mode):
    out = _run(mode, lambda v: nn.softmax(v, axis=0), fnp.zeros((4096, 3), dtype=F16))
    assert out.dtype == F16
    assert_array_equal(out, np.full((4096, 3), 2.0**-12))  # was 2^-11


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_log_softmax_of_float16_down_4096_rows(mode):
    out = _run(mode, lambda v: nn.log_softmax(v, axis=0), fnp.zeros((4096, 3), dtype=F16))
    assert out.dtype == F16
    assert_array_equal(out, np.full((4096, 3), F16(-np.log(4096.0))))  # was -log(2048)


@pytest.mark.parametrize("mode", MODES)
def test_issue_12_grad_softmax_of_float16_down_4096_rows(mode):
    # d/dx sum(w * softmax(x)) = s (w - sum(s w)) with s = 2^-12 down every column.
    w = RNG.uniform(-1.0, 1.0, (4096, 3)).astype(F16)
    g = _run(
        mode,
        fgrad.grad(lambda v, w: fnp.sum(nn.softmax(v, axis=0) * w)),
        fnp.zeros((4096, 3), dtype=F16),
        fnp.array(w),
    )
    w64 = w.astype(np.float64)
    _assert_within_an_ulp(g, 2.0**-12 * (w64 - w64.mean(0)))


def test_issue_12_softmax_of_float16_under_jit_writes_its_buffer():
    # jit hands the softmax kernel an out= buffer of the float16 result (large arrays).
    x = RNG.standard_normal((256, 64)).astype(F16)
    out = np.asarray(fgrad.jit(lambda v: nn.softmax(v * 1.0, axis=-1))(fnp.array(x)))
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    _assert_within_an_ulp(out, e / e.sum(-1, keepdims=True))


def test_issue_12_float32_layer_norm_and_softmax_unchanged():
    # float32 runs the kernels as before: the same numbers as the float32 formulas.
    x = RNG.standard_normal((8, 512)).astype(np.float32)
    y = np.asarray(nn.layer_norm(fnp.array(x)))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, _layer_norm_ref(x), rtol=1e-5, atol=1e-5)
    s = np.asarray(nn.softmax(fnp.array(x)))
    assert s.dtype == np.float32
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-6)
