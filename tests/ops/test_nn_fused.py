"""The fused transformer ops of fgrad/ops/nn.py against the composites they replace.

Each fused op (gelu_tanh_gate, standardize with standardize_grad, scale_shift, bias_add
with sum_rows, softmax's shift-free fast path and softmax_jvp) must give the values and
gradients of the plain composition of ops it stands for. The reference composites below
are the code fgrad.nn ran before the fused ops existed; expected values come from them
(or, where stated, from numpy). The registry sweep (test_registry.py) checks each op's own
derivatives against finite differences.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random, tree
from fgrad.ops import nn as ops_nn
from fgrad.test_util import check_grads

C = math.sqrt(2.0 / math.pi)
RNG = np.random.default_rng(0)


def _np(x):
    return np.asarray(x)


def _arr(shape, dtype=np.float64, scale=1.0, seed=0):
    return fnp.asarray((np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype))


# ------------------------------------------------------------------ reference composites


def gelu_tanh_composite(x):
    cube = x * x * x
    return (x * 0.5) * (fnp.tanh(C * (x + cube * 0.044715)) + 1.0)


def layer_norm_composite(x, scale, bias, eps=1e-5):
    mean = fnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    var = fnp.mean(centred * centred, axis=-1, keepdims=True)
    y = centred / fnp.sqrt(var + eps)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y


def softmax_composite(x):
    e = fnp.exp(x - fnp.max(x, axis=-1, keepdims=True))
    return e / fnp.sum(e, axis=-1, keepdims=True)


def _grads(f, args):
    """Gradients of sum(sin(f(*args))) for every argument (sin: a non-trivial cotangent)."""
    return fgrad.grad(lambda *a: fnp.sum(fnp.sin(f(*a))), argnums=tuple(range(len(args))))(*args)


def _close(got, want, rtol):
    got, want = _np(got), _np(want)
    scale = np.max(np.abs(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


# ------------------------------------------------------------------ gelu (tanh form)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_tanh_equals_composite_bit_for_bit(dtype):
    x = _arr((64, 100), dtype, scale=3.0)
    got = nn.gelu(x, approximate="tanh")
    assert got.dtype == dtype
    np.testing.assert_array_equal(_np(got), _np(gelu_tanh_composite(x)))


def test_gelu_tanh_gradients_match_composite():
    # float64: the two derivative formulas agree to rounding.
    x = _arr((50,), scale=3.0)
    (g,) = _grads(lambda x: nn.gelu(x, approximate=True), [x])
    (want,) = _grads(gelu_tanh_composite, [x])
    np.testing.assert_allclose(_np(g), _np(want), rtol=1e-12, atol=1e-15)
    h = fgrad.hessian(lambda x: fnp.sum(nn.gelu(x, approximate=True)))(x)
    hw = fgrad.hessian(lambda x: fnp.sum(gelu_tanh_composite(x)))(x)
    np.testing.assert_allclose(_np(h), _np(hw), rtol=1e-10, atol=1e-13)
    # float32: both formulas round differently; within a few float32 ulps of the largest.
    x32 = _arr((4000,), np.float32, scale=3.0)
    (g32,) = _grads(lambda x: nn.gelu(x, approximate=True), [x32])
    (w32,) = _grads(gelu_tanh_composite, [x32])
    assert g32.dtype == np.float32
    _close(g32, w32, 1e-6)


def test_gelu_tanh_gate_saturates_and_grad_of_grad():
    x = fnp.array([-30.0, -10.0, 0.0, 10.0, 30.0])
    np.testing.assert_allclose(_np(ops_nn.gelu_tanh_gate(x)), [0.0, 0.0, 0.5, 1.0, 1.0], atol=1e-15)
    check_grads(
        lambda x: nn.gelu(x, approximate=True), [_arr((3, 4))], order=3, modes=("rev", "fwd")
    )


def test_gelu_tanh_non_floating_inputs_keep_the_composite():
    # Python scalars and integers take the composite path (as numpy promotes them).
    np.testing.assert_allclose(_np(nn.gelu(1.0, approximate=True)), 0.8411919906082768, rtol=1e-15)
    got = nn.gelu(fnp.array([1, 2]), approximate=True)
    assert got.dtype == np.float64
    with pytest.raises(fgrad.DTypeError, match="cast"):
        ops_nn.gelu_tanh_gate(fnp.array([1, 2]))


# ------------------------------------------------------------------ layer norm


@pytest.mark.parametrize(
    "dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-6)]
)  # float32: different summation orders (BLAS vs pairwise) differ by a few ulps
def test_layer_norm_equals_composite(dtype, rtol):
    x = _arr((4, 16, 32), dtype, scale=2.0)
    x = x + fnp.asarray(np.linspace(-1, 1, 32).astype(dtype))  # rows with non-zero means
    scale = _arr((32,), dtype, seed=1)
    bias = _arr((32,), dtype, seed=2)
    for s, b in ((scale, bias), (None, None), (scale, None), (None, bias)):
        got = nn.layer_norm(x, s, b)
        assert got.dtype == dtype
        _close(got, layer_norm_composite(x, s, b), rtol)
    got = _grads(lambda x, s, b: nn.layer_norm(x, s, b), [x, scale, bias])
    want = _grads(layer_norm_composite, [x, scale, bias])
    for g, w in zip(got, want):
        assert g.dtype == dtype and g.shape == w.shape
        _close(g, w, 10 * rtol)  # a sum over 64 rows: a few roundings more


def test_layer_norm_second_order_matches_composite():
    x, scale, bias = _arr((3, 5)), _arr((5,), seed=1), _arr((5,), seed=2)
    for k in range(3):
        h = fgrad.hessian(lambda *a: fnp.sum(fnp.sin(nn.layer_norm(*a))), argnums=k)(x, scale, bias)
        hw = fgrad.hessian(lambda *a: fnp.sum(fnp.sin(layer_norm_composite(*a))), argnums=k)(
            x, scale, bias
        )
        np.testing.assert_allclose(_np(h), _np(hw), rtol=1e-10, atol=1e-12)
    check_grads(nn.layer_norm, [x, scale, bias], order=3, modes=("rev", "fwd"))


def test_layer_norm_other_axes_and_dtypes_keep_the_composite():
    x = _arr((3, 4, 5))
    # axis 1, a (4, 1) scale, and float32 parameters with float64 input: composite path.
    np.testing.assert_allclose(
        _np(nn.layer_norm(x, axis=1)),
        _np(layer_norm_composite(fnp.moveaxis(x, 1, -1), None, None)).transpose(0, 2, 1),
        rtol=1e-12,
    )
    s41 = _arr((4, 1), seed=1)
    want = _np(layer_norm_composite(fnp.moveaxis(x, 1, -1), None, None)).transpose(0, 2, 1)
    np.testing.assert_allclose(_np(nn.layer_norm(x, s41, axis=1)), want * _np(s41), rtol=1e-12)
    s32 = fnp.astype(_arr((5,), seed=1), "float32")
    got = nn.layer_norm(x, s32)
    assert got.dtype == np.float64
    np.testing.assert_allclose(_np(got), _np(layer_norm_composite(x, s32, None)), rtol=1e-12)


def test_layer_norm_constant_rows():
    # var = 0: the output is the bias, and the gradient finite (eps keeps s > 0).
    x = fnp.ones((2, 4), dtype="float32")
    bias = fnp.asarray(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(
        _np(nn.layer_norm(x, None, bias)), np.tile(np.arange(4.0), (2, 1))
    )
    g = fgrad.grad(lambda x: fnp.sum(nn.layer_norm(x) * bias))(x)
    assert np.all(np.isfinite(_np(g)))


def test_standardize_outputs_and_errors():
    x = _arr((2, 3, 4))
    xhat, rstd = ops_nn.standardize(x, eps=1e-5)
    xn = _np(x)
    var = xn.var(-1, keepdims=True)
    np.testing.assert_allclose(
        _np(xhat), (xn - xn.mean(-1, keepdims=True)) / np.sqrt(var + 1e-5), rtol=1e-12
    )
    np.testing.assert_allclose(_np(rstd), 1 / np.sqrt(var + 1e-5), rtol=1e-12)  # numpy
    with pytest.raises(fgrad.ShapeError, match="last axis"):
        ops_nn.standardize(fnp.array(1.0), eps=1e-5)
    with pytest.raises(fgrad.ShapeError, match="shape"):
        ops_nn.scale_shift(x, fnp.ones(3), 0.0)


# ------------------------------------------------------------------ softmax


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-14), (np.float32, 2e-6)])
def test_softmax_fast_path_equals_max_shift(dtype, rtol):
    # (8, 64, 64) scores take the shift-free path; the reference shifts by each row's max.
    # float32: the reference rounds x - max (|x - max| up to ~20, half an ulp is 1e-6), the
    # fast path does not; both are within 2e-6 of the float64 values.
    x = _arr((8, 64, 64), dtype, scale=4.0)
    got = nn.softmax(x)
    want = _np(softmax_composite(x))
    assert got.dtype == dtype
    np.testing.assert_allclose(_np(got), want, rtol=rtol, atol=0)
    exact = _np(softmax_composite(fnp.astype(x, "float64")))
    np.testing.assert_allclose(_np(got), exact, rtol=rtol, atol=0)
    # entries far above 60: one common shift (the largest entry)
    big = x + 500.0
    np.testing.assert_allclose(_np(nn.softmax(big)), _np(softmax_composite(big)), rtol=rtol, atol=0)
    # a masked row (the attention mask's finfo.min) and rows far apart: per-row maxima
    m = np.array(_np(x))
    m[0, 0, 1:] = np.finfo(dtype).min
    m[1] += 10_000.0
    want = _np(softmax_composite(fnp.asarray(m)))
    np.testing.assert_allclose(_np(nn.softmax(fnp.asarray(m))), want, rtol=rtol, atol=0)
    assert _np(nn.softmax(fnp.asarray(m)))[0, 0, 0] == 1.0


def test_softmax_fast_path_specials():
    x = np.array(_np(_arr((4, 32, 64))))
    x[0, 0, 3] = np.nan
    x[1, 0, :] = -np.inf
    x[2, 0, 5] = np.inf
    x[3, 0, :10] = -np.inf
    with np.errstate(invalid="ignore"):
        got = _np(nn.softmax(fnp.asarray(x)))
        want = _np(softmax_composite(fnp.asarray(x)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))  # NaN rows stay NaN
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-14, atol=0)
    assert np.all(got[3, 0, :10] == 0.0)


def test_softmax_gradients_match_composite():
    x = _arr((2, 48, 64), scale=3.0)
    (g,) = _grads(nn.softmax, [x])
    (w,) = _grads(softmax_composite, [x])
    np.testing.assert_allclose(_np(g), _np(w), rtol=1e-11, atol=1e-14)
    t, s = _arr((3, 5)), nn.softmax(_arr((3, 5), seed=1))
    for axes in ((1,), (0,), (0, 1)):
        inner = _np(t) - (_np(t) * _np(s)).sum(axis=axes, keepdims=True)
        np.testing.assert_allclose(
            _np(ops_nn.softmax_jvp(t, s, axes=axes)), _np(s) * inner, rtol=1e-14
        )
    check_grads(nn.softmax, [_arr((2, 40, 64))], order=2, modes=("rev", "fwd"))


# ------------------------------------------------------------------ bias_add and sum_rows


def test_linear_bias_gradient_matches_add():
    layer = nn.Linear(6, 5, param_dtype=np.float64)
    params = nn.LinearParams(bias=_arr((5,), seed=1), weight=_arr((6, 5)))
    for shape in ((6,), (4, 6), (2, 3, 6)):
        x = _arr(shape, seed=2)

        def composite(p, x):
            return fnp.sum(fnp.sin(fnp.matmul(x, p.weight) + p.bias))

        got = fgrad.grad(lambda p, x: fnp.sum(fnp.sin(layer.apply(p, x))), argnums=(0, 1))(
            params, x
        )
        want = fgrad.grad(composite, argnums=(0, 1))(params, x)
        for g, w in zip(tree.leaves(got), tree.leaves(want)):
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-12)
    x = _arr((2, 3, 4))
    np.testing.assert_allclose(_np(ops_nn.sum_rows(x)), _np(x).sum((0, 1)), rtol=1e-14)  # numpy
    check_grads(
        lambda x, b: ops_nn.bias_add(x, b), [x, _arr((4,), seed=1)], order=2, modes=("rev", "fwd")
    )


# ------------------------------------------------------------------ under jit


def test_transformer_block_under_jit_uses_the_fused_ops():
    block = nn.TransformerBlock(32, 4, mlp_ratio=4)
    params = block.init(random.key(0))
    x = _arr((2, 64, 32), np.float32)

    def loss(p, x):
        y = block.apply(p, x)
        return fnp.mean(y * y)

    f = fgrad.value_and_grad(loss)
    jf = fgrad.jit(f)
    want, got = f(params, x), jf(params, x)
    for g, w in zip(tree.leaves(got), tree.leaves(want)):
        np.testing.assert_allclose(_np(g), _np(w), rtol=2e-5, atol=1e-7)
    names = {node.op.name for node in jf.graph(params, x).nodes}
    assert {
        "gelu_tanh_gate",
        "standardize",
        "standardize_grad",
        "scale_shift",
        "softmax_jvp",
    } <= names
    assert {"bias_add", "sum_rows"} <= names
    # The block's first norm: only its parameters need gradients, so no standardize_grad
    # for it (one for the second norm).
    assert sum(node.op.name == "standardize_grad" for node in jf.graph(params, x).nodes) == 1
