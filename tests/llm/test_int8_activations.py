"""Kept-quantized products with int8-rounded activations (``act_quant``, issue 13): the
rounding (numba's and numpy's alike, ties, zeros, NaN), the compiled integer products
against the float product of the rounded activations, serial and parallel the same bits,
the ops' straight-through derivatives under grad, jvp, vmap and jit, the fallback without
the compiled path, bad input, and a model under :func:`int8_activations`."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.llm import _q8_dot, quants
from fgrad.llm.quantized import (
    QuantizedWeight,
    int8_activations,
    linear,
    linear_many,
    quantized_matmul,
    quantized_matmul_many,
)

needs_avx2 = pytest.mark.skipif(not _q8_dot.available(), reason="needs numba and AVX2")


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    monkeypatch.setattr(fgrad.config, "cpu_compile", True)


def _weight(rng, qtype, out_f, in_f, scale=1.0):
    blocks = quants.random_blocks(rng, qtype, out_f * in_f // 32, scale).reshape(out_f, in_f // 32, -1)
    dense = quants.dequantize(blocks.reshape(out_f * in_f // 32, -1), qtype).reshape(out_f, in_f)
    return blocks, dense


def _reference(x, dense):
    """The product of the rounded activations, in float64."""
    return quants.q8_roundtrip(np, x).astype(np.float64) @ dense.T.astype(np.float64)


def _close(got, want, rtol=2e-6):
    scale = np.nanmax(np.abs(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def test_rounding_is_blockwise_absmax_with_ties_to_even_zeros_and_nan():
    x = np.zeros((2, 96), np.float32)
    x[0, :32] = np.arange(32) - 15.5  # max 15.5: the scale 15.5 / 127
    x[0, 32:64] = (np.arange(32) - 16) * (127 / 16)  # steps of exactly 8 quanta
    x[0, 32] = -127.0
    x[0, 33] = 0.5  # 0.5 quanta: ties to even, 0
    x[0, 34] = 1.5  # 1.5 quanta: 2
    x[1, 5] = np.nan  # its block is NaN, the others not
    y = quants.q8_roundtrip(np, x)
    d = np.float32(15.5) / np.float32(127)
    np.testing.assert_array_equal(y[0, :32], np.rint(x[0, :32] * (np.float32(127) / np.float32(15.5))) * d)
    assert y[0, 33] == 0.0 and y[0, 34] == 2.0 and y[0, 32] == -127.0
    assert (y[0, 64:] == 0).all() and np.isnan(y[1, :32]).all() and (y[1, 32:] == 0).all()
    assert np.abs(y[0, :32] - x[0, :32]).max() <= 0.5 * d * (1 + 1e-6)
    with pytest.raises(ValueError, match="blocks of 32"):
        quants.q8_roundtrip(np, np.ones(40, np.float32))


@needs_avx2
def test_the_compiled_rounding_is_numpys_to_the_bit():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 128)) * rng.uniform(0.01, 100, (5, 1))).astype(np.float32)
    x[1, :32] = (np.arange(32) - 15.5).astype(np.float32)  # ties
    x[2, 40] = np.inf
    x[3, :32] = 0.0
    qa = np.empty(x.shape, np.int8)
    da = np.empty((5, 4), np.float32)
    sa = np.empty_like(da)
    from fgrad.llm import _q8_kernels

    _q8_kernels.quantize(x, qa, da, sa)
    again = (qa.astype(np.float32).reshape(5, 4, 32) * da[..., None]).reshape(5, 128)
    np.testing.assert_array_equal(again, quants.q8_roundtrip(np, x))
    np.testing.assert_array_equal(sa, da * qa.reshape(5, 4, 32).sum(-1).astype(np.float32))
    np.testing.assert_array_equal(_q8_dot.roundtrip()(x), quants.q8_roundtrip(np, x))


@needs_avx2
@pytest.mark.parametrize("qtype", _q8_dot.QTYPES)
@pytest.mark.parametrize("rows", [1, 3])
def test_integer_products_equal_the_float_product_of_the_rounded_activations(qtype, rows):
    rng = np.random.default_rng(1)
    (b1, w1), (b2, w2) = _weight(rng, qtype, 300, 256), _weight(rng, qtype, 17, 256)
    x = rng.standard_normal((rows, 256)).astype(np.float32)
    if rows == 3:
        x[1, 32:64] = 0.0
        x[2, 100] = np.nan
    got = _q8_dot.matvec(qtype)(x, (b1, b2))
    want = np.concatenate([_reference(x, w1), _reference(x, w2)], axis=-1)
    assert got.shape == (rows, 317) and got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    _close(got, want)


@needs_avx2
def test_serial_and_parallel_loops_give_the_same_bits():
    rng = np.random.default_rng(2)
    blocks = (_weight(rng, "Q4_1", 700, 576)[0], _weight(rng, "Q4_1", 90, 576)[0])
    x = rng.standard_normal((2, 576)).astype(np.float32)
    from fgrad.llm import _q8_kernels

    serial, parallel = _q8_kernels.serial, _q8_kernels.parallel
    offsets = np.array([0, 700], np.int64)
    want = np.empty((2, 790), np.float32)
    serial(x, blocks, 0, 20, want, offsets, 1)
    for n_chunks in (2, 3, 7):
        got = np.full_like(want, 7.0)
        parallel(x, blocks, 0, 20, got, offsets, n_chunks)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("compiled_path", [True, False], ids=["compiled", "fallback"])
def test_the_ops_multiply_the_rounded_activations_on_every_path(compiled_path, monkeypatch):
    if not compiled_path:
        monkeypatch.setattr(fgrad.config, "cpu_compile", False)
    rng = np.random.default_rng(3)
    (bq, wq), (bk, wk) = _weight(rng, "Q4_1", 64, 128), _weight(rng, "Q4_1", 32, 128)
    for x in (rng.standard_normal((1, 128)).astype(np.float32),
              rng.standard_normal((2, 40, 128)).astype(np.float32),  # past MAX_ROWS: BLAS
              rng.standard_normal((3, 128))):  # float64
        got = quantized_matmul(x, bq, qtype="Q4_1", shape=(64, 128), act_quant=True)
        assert got.dtype == x.dtype
        _close(np.asarray(got), _reference(x, wq), rtol=2e-6 if x.dtype == np.float32 else 1e-12)
        q, k = quantized_matmul_many(x, bq, bk, qtype="Q4_1", shapes=((64, 128), (32, 128)), act_quant=True)
        _close(np.asarray(q), _reference(x, wq), rtol=2e-6 if x.dtype == np.float32 else 1e-12)
        _close(np.asarray(k), _reference(x, wk), rtol=2e-6 if x.dtype == np.float32 else 1e-12)


def test_derivatives_are_the_straight_through_ones_under_every_transform():
    rng = np.random.default_rng(4)
    (bq, _), (bk, _) = _weight(rng, "Q4_1", 64, 128), _weight(rng, "Q4_1", 32, 128)
    plain = QuantizedWeight(bq, "Q4_1", (64, 128)), QuantizedWeight(bk, "Q4_1", (32, 128))
    rounded = tuple(int8_activations(list(plain)))
    assert all(w.act_quant for w in rounded) and not any(w.act_quant for w in plain)
    x = rng.standard_normal((2, 128)).astype(np.float32)
    t = rng.standard_normal((2, 128)).astype(np.float32)

    cq, ck = rng.standard_normal((2, 64)), rng.standard_normal((2, 32))

    def loss(ws):  # linear in the products: the straight-through gradient is exact
        def f(x):
            q, k = linear_many(x, ws)
            return fnp.sum(q * cq) + fnp.sum(linear(x, ws[1]) * ck) + fnp.sum(k * ck)

        return f

    want = fgrad.grad(loss(plain))(x)
    for transform in (fgrad.grad, lambda f: fgrad.jit(fgrad.grad(f))):
        got = transform(loss(rounded))(x)
        _close(np.asarray(got), np.asarray(want), rtol=1e-5)
    for ws in (rounded, plain):
        (_, tangent) = fgrad.jvp(lambda x, ws=ws: linear_many(x, ws)[0], (x,), (t,))
        np.testing.assert_allclose(np.asarray(tangent), np.asarray(linear(t, plain[0])), rtol=2e-6, atol=1e-5)
    (_, tangent) = fgrad.jvp(fgrad.jit(lambda x: linear_many(x, rounded)[0]), (x,), (t,))
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(linear(t, plain[0])), rtol=2e-6, atol=1e-5)
    per_row = fgrad.vmap(fgrad.grad(lambda x: fnp.sum(linear(x, rounded[0]) * cq[0])))(x)
    _close(np.asarray(per_row), np.asarray(fgrad.grad(lambda x: fnp.sum(linear(x, plain[0]) * cq[0]))(x)), rtol=1e-5)
    of_vmap = fgrad.grad(lambda x: fnp.sum(fgrad.vmap(lambda r: linear(r, rounded[0]))(x) * cq))(x)
    _close(np.asarray(of_vmap), np.asarray(fgrad.grad(lambda x: fnp.sum(linear(x, plain[0]) * cq))(x)), rtol=1e-5)
    batched = fgrad.vmap(lambda x: linear(x, rounded[0]))(x[:, None, :])
    _close(np.asarray(batched)[:, 0], np.asarray(linear(x, rounded[0])))
    jitted = fgrad.jit(lambda x: linear_many(x, rounded))(x)
    for a, b in zip(jitted, linear_many(x, rounded)):
        _close(np.asarray(a), np.asarray(b))


def test_bad_act_quant_is_a_clear_error():
    blocks = np.zeros((3, 2, 20), np.uint8)
    x = np.ones((1, 64), np.float32)
    with pytest.raises(ValueError, match="transpose=False"):
        quantized_matmul(np.ones((1, 3), np.float32), blocks, qtype="Q4_1", shape=(3, 64),
                         transpose=True, act_quant=True)
    with pytest.raises(TypeError, match="act_quant must be a bool"):
        quantized_matmul(x, blocks, qtype="Q4_1", shape=(3, 64), act_quant=1)
    with pytest.raises(ValueError, match="transpose=False"):  # the same under jit
        fgrad.jit(lambda y: quantized_matmul(y, blocks, qtype="Q4_1", shape=(3, 64), transpose=True,
                                             act_quant=True))(np.ones((1, 3), np.float32))
    with pytest.raises(TypeError, match="act_quant must be a bool"):
        QuantizedWeight(blocks, "Q4_1", (3, 64), act_quant="yes")
    with pytest.raises(ValueError, match="blocks of 32"):
        QuantizedWeight(np.zeros((3, 48, 2), np.uint8), "F16", (3, 48), act_quant=True)
    with pytest.raises(ShapeError, match="quantized_matmul_many"):
        quantized_matmul_many(np.ones((1, 32), np.float32), blocks, qtype="Q4_1",
                              shapes=((3, 64),), act_quant=True)


def test_a_model_under_int8_activations_stays_close_to_its_float_products():
    from fgrad.llm.config import ModelConfig
    from fgrad.llm.model import Transformer

    cfg = ModelConfig("llama", vocab_size=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                      d_head=16, d_ff=128)
    module = Transformer(cfg)
    params = module.init(fgrad.random.key(0))
    rng = np.random.default_rng(5)

    def keep(w):  # every weight as Q8_0 blocks, rounded from the float one
        if getattr(w, "ndim", 0) != 2 or w.shape[-1] % 32:
            return w
        dense = np.asarray(w, np.float32)
        d = np.abs(dense).reshape(-1, 32).max(-1) / 127
        q = np.rint(dense.reshape(-1, 32) / np.where(d > 0, d, 1)[:, None]).astype(np.int8)
        blocks = np.concatenate([d.astype(np.float16)[:, None].view(np.uint8), q.view(np.uint8)], axis=1)
        return QuantizedWeight(blocks.reshape(w.shape[0], -1, 34), "Q8_0", tuple(w.shape))

    model = module.bind(fgrad.tree.map(keep, params))
    assert int8_activations(int8_activations(model), on=False).params["layers"][0]["wq"].act_quant is False
    tokens = fnp.asarray(rng.integers(0, 64, (1, 12)))
    want = np.asarray(model(tokens)[0])
    got = np.asarray(int8_activations(model)(tokens)[0])
    assert np.abs(got - want).max() < 0.02 * np.abs(want).max()
    del rng


def test_the_cli_flag_needs_kept_quantized_weights(capsys):
    from fgrad.llm.__main__ import main

    assert main(["generate", "--prompt", "Hi", "--int8-activations", "--max-tokens", "1"]) == 2
    assert "--int8-activations needs --dtype quantized" in capsys.readouterr().err


def test_int8_activations_of_a_model_without_kept_quantized_weights_is_an_error():
    with pytest.raises(ValueError, match="dtype=None"):
        int8_activations({"w": np.ones((4, 64), np.float32)})
