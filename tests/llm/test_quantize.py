"""int8 weights and SmoothQuant W8A8 (fgrad.llm.int8): quantization error bounds, exact int32
products, every variant's logits against float32 on a tiny model within stated tolerances,
SmoothQuant beating plain W8A8 when there are outlier channels, and grad, vmap and jit over
quantized params (and QLoRA over an int8 base)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, tree
from fgrad.errors import DTypeError, ShapeError
from fgrad.llm import gguf, int8, lora
from fgrad.llm.int8 import Int8Weight, int8_matmul, int8_product, quantize_weight
from fgrad.llm.loading import model_from_gguf
from fgrad.llm.quantized import linear

RNG = np.random.default_rng(0)
TOKENS = fnp.asarray(RNG.integers(0, 272, (2, 24)))
SAMPLES = [RNG.integers(0, 272, 32) for _ in range(4)]


# ----------------------------------------------------------------- the weights and ops


@pytest.mark.parametrize("group_size", [None, 16, 64])
def test_quantize_weight_error_is_at_most_half_a_step(group_size):
    w = RNG.standard_normal((12, 64)).astype(np.float32)
    w[3] = 0.0  # an all-zero channel: scale 1, q 0
    q = quantize_weight(w, group_size)
    n_groups = 1 if group_size is None else 64 // group_size
    assert q.q.dtype == np.int8 and q.scale.shape == (12, n_groups) and q.scale.dtype == np.float32
    assert np.abs(np.asarray(q.q)).max() == 127
    step = np.repeat(np.asarray(q.scale), 64 // n_groups, axis=1)
    assert (np.abs(q.dequantize() - w) <= step / 2 + 1e-7).all()
    assert not q.dequantize()[3].any()
    assert q.nbytes == 12 * 64 + 4 * 12 * n_groups


def test_bad_weights_are_refused():
    with pytest.raises(ShapeError, match="does not divide in = 64"):
        quantize_weight(np.ones((2, 64), np.float32), 48)
    with pytest.raises(ShapeError, match=r"must be \(out, in\)"):
        quantize_weight(np.ones(4, np.float32))
    with pytest.raises(ShapeError, match="q must be"):
        Int8Weight(np.ones((2, 4), np.int16), np.ones((2, 1), np.float32))
    with pytest.raises(ShapeError, match="one scale per output channel"):
        Int8Weight(np.ones((2, 4), np.int8), np.ones((2, 2), np.float32), act_quant=True)
    w = quantize_weight(np.ones((3, 8), np.float32))
    with pytest.raises(ShapeError, match="last axis must have 8"):
        linear(fnp.ones((2, 5)), w)
    with pytest.raises(DTypeError, match="x must be real floating"):
        int8_matmul(fnp.ones((2, 8), dtype="int32"), w.q, w.scale)
    with pytest.raises(DTypeError, match="both operands must be int8"):
        int8_product(fnp.ones((2, 8), dtype="int16"), w.q)


@pytest.mark.parametrize("group_size", [None, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_int8_matmul_equals_dequantize_then_matmul(group_size, dtype):
    w = quantize_weight(RNG.standard_normal((40, 32)).astype(np.float32), group_size)
    x = RNG.standard_normal((3, 5, 32)).astype(dtype)
    dense = w.dequantize(dtype)
    got = linear(fnp.asarray(x), w)
    assert got.dtype == dtype and got.shape == (3, 5, 40)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(np.asarray(got), x @ dense.T, rtol=tol, atol=tol)
    ct = RNG.standard_normal((3, 5, 40)).astype(dtype)
    back = int8_matmul(fnp.asarray(ct), w.q, w.scale, transpose=True)
    np.testing.assert_allclose(np.asarray(back), ct @ dense, rtol=tol, atol=tol)


def test_int8_matmul_dequantizes_a_chunk_at_a_time(monkeypatch):
    from fgrad.llm import quantized

    widest = []
    real = quantized.chunked_matmul

    def spy(xp, x, rows_of, shape, **kw):
        def rows(r0, r1):
            widest.append(r1 - r0)
            return rows_of(r0, r1)

        return real(xp, x, rows, shape, **kw)

    monkeypatch.setattr(quantized, "CHUNK_BYTES", 64 * 4 * 10)  # 10 rows of 64 floats
    monkeypatch.setattr(quantized, "chunked_matmul", spy)
    w = quantize_weight(RNG.standard_normal((95, 64)).astype(np.float32))
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(linear(fnp.asarray(x), w)), x @ w.dequantize().T, rtol=1e-5, atol=1e-5)
    assert max(widest) == 10 and sum(widest) == 95


def test_int8_product_is_exact_int32_accumulation():
    for shape, (lo, hi) in (((4, 3000), (-127, 128)), ((2, 4096), (127, 128))):
        a = RNG.integers(lo, hi, size=shape).astype(np.int8)
        q = RNG.integers(lo, hi, size=(50, shape[1])).astype(np.int8)
        got = np.asarray(int8_product(fnp.asarray(a), fnp.asarray(q)))
        want = a.astype(np.int64) @ q.astype(np.int64).T
        assert got.dtype == np.int32 and np.array_equal(got, want)
    assert got.max() == 127 * 127 * 4096  # 66 million: past float32's exact integers


def test_w8a8_linear_quantizes_activations_per_token():
    w = RNG.standard_normal((24, 32)).astype(np.float32)
    x = RNG.standard_normal((6, 32)).astype(np.float32)
    x[2] *= 100  # a token far larger than the others keeps its own scale
    qw = quantize_weight(w, act_quant=True)
    got = np.asarray(linear(fnp.asarray(x), qw))
    sx = np.abs(x).max(axis=1, keepdims=True) / 127
    xq = np.clip(np.rint(x / sx), -127, 127)
    want = (xq @ np.asarray(qw.q, np.float64).T) * sx * np.asarray(qw.scale).T
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    exact = x @ w.T
    rel = np.abs(got - exact).max(axis=1) / np.abs(exact).max(axis=1)
    assert rel.max() < 0.03


# ----------------------------------------------------------------- on a tiny model


@pytest.fixture(scope="module")
def dense(tiny_llama_gguf):
    return model_from_gguf(gguf.read(tiny_llama_gguf))


@pytest.fixture(scope="module")
def outlier_model(dense):
    """The tiny model with three outlier channels in every norm (as LLMs have)."""
    layers = []
    for layer in dense.params["layers"]:
        layer = dict(layer)
        for name in ("attn_norm", "ffn_norm"):
            g = np.asarray(layer[name]).copy()
            g[[3, 17, 40]] *= 40
            layer[name] = fnp.asarray(g)
        layers.append(layer)
    return dense.module.bind(dict(dense.params, layers=layers))


def _max_err(model, ref, tokens=TOKENS):
    return float(np.abs(np.asarray(model(tokens)[0]) - ref).max())


def test_every_variant_is_close_to_float32(dense, tiny_llama_gguf):
    """Max abs logit error against the float32 model (logits of the tiny model: |l| <= 0.73).

    Tolerances: Q4_1 kept quantized 1e-5 (the same values), smoothing alone 1e-5 (exact in
    real arithmetic), int8 weight-only 0.025 (3% of the largest logit), W8A8 0.035.
    """
    ref = np.asarray(dense(TOKENS)[0])
    assert np.abs(ref).max() > 0.5
    kept = model_from_gguf(gguf.read(tiny_llama_gguf, dtype=None))
    stats = int8.calibrate(dense, SAMPLES)
    variants = {
        "kept": (kept, 1e-5),
        "int8": (int8.quantize(dense), 0.025),
        "int8-g32": (int8.quantize(dense, 32), 0.025),
        "int8-layers-only": (int8.quantize(dense, embed=False), 0.025),
        "w8a8": (int8.w8a8(dense), 0.035),
        "smoothquant-0.5": (int8.smoothquant(dense, stats, 0.5), 0.035),
        "smoothquant-0.85": (int8.smoothquant(dense, stats, 0.85), 0.035),
        "smooth-only": (int8.smooth(dense, stats, 0.85), 1e-5),
    }
    errors = {}
    for name, (model, tol) in variants.items():
        errors[name] = _max_err(model, ref)
        assert errors[name] < tol, (name, errors[name])
    assert errors["int8"] > 1e-4  # it did quantize
    w = variants["int8"][0].params
    assert isinstance(w["embed"], Int8Weight) and isinstance(w["layers"][1]["w_down"], Int8Weight)
    assert variants["w8a8"][0].params["layers"][0]["wq"].act_quant
    # Memory: int8 is about a quarter of float32 (1 byte a value and a scale per row).
    assert variants["int8"][0].nbytes < 0.27 * dense.nbytes


def test_smoothquant_beats_plain_w8a8_with_outlier_channels(outlier_model):
    ref = np.asarray(outlier_model(TOKENS)[0])
    stats = int8.calibrate(outlier_model, SAMPLES)
    plain = _max_err(int8.w8a8(outlier_model), ref)
    smoothed = {a: _max_err(int8.smoothquant(outlier_model, stats, a), ref) for a in (0.5, 0.85)}
    # Measured: plain 0.146; alpha 0.5: 0.053; 0.85: 0.129 (logits up to 0.74). The random
    # weights have no structure, so a high alpha moves the difficulty into them.
    assert smoothed[0.5] < plain / 2 and smoothed[0.85] < plain
    assert _max_err(int8.smooth(outlier_model, stats, 0.5), ref) < 1e-5


def test_calibrate_records_the_absmax_of_each_linear_input(dense):
    stats = int8.calibrate(dense, SAMPLES[:2])
    layer = dense.params["layers"][0]
    cfg = dense.config
    want = 0
    for seq in SAMPLES[:2]:
        x = fnp.take(dense.params["embed"], fnp.asarray(seq)[None], axis=0)
        h = nn.rms_norm(x, layer["attn_norm"], eps=cfg.norm_eps)
        want = np.maximum(want, np.abs(np.asarray(h)).max(axis=(0, 1)))
    np.testing.assert_allclose(stats[0]["wq"], want, rtol=1e-6)
    assert stats[1]["w_down"].shape == (cfg.d_ff,) and (stats[1]["w_down"] > 0).all()
    with pytest.raises(ValueError, match="no sample"):
        int8.calibrate(dense, [])
    with pytest.raises(ValueError, match="alpha must be in"):
        int8.smooth(dense, stats, 1.5)


def test_smooth_migrates_the_outliers_into_the_weights(outlier_model):
    stats = int8.calibrate(outlier_model, SAMPLES)
    smoothed = int8.smooth(outlier_model, stats, 0.5)
    before = stats[0]["wq"]
    after = int8.calibrate(smoothed, SAMPLES)[0]["wq"]
    # alpha 0.5: activations and weights end with the same per-channel maxima.
    w_max = np.abs(np.asarray(smoothed.params["layers"][0]["wq"])).max(axis=0)
    for name in ("wk", "wv"):
        w_max = np.maximum(w_max, np.abs(np.asarray(smoothed.params["layers"][0][name])).max(axis=0))
    np.testing.assert_allclose(after, w_max, rtol=1e-4)
    assert before.max() / np.median(before) > 20 > after.max() / np.median(after)


# ----------------------------------------------------------------- under transforms


def _loss(model, embeddings):
    logits, _ = model(embeddings=embeddings)
    return fnp.mean(nn.softmax_cross_entropy(logits[:, :-1], TOKENS[:1, 1:]))


def test_grad_through_int8_weights_and_wrt_scales(dense):
    q = int8.quantize(dense)
    deq = dense.module.bind(tree.map(lambda v: fnp.asarray(v.dequantize()) if isinstance(v, Int8Weight) else v,
                                     q.params, is_leaf=lambda v: isinstance(v, Int8Weight)))
    x = fnp.take(dense.params["embed"], TOKENS[:1], axis=0)
    g_q = np.asarray(fgrad.grad(lambda e: _loss(q, e))(x))
    g_d = np.asarray(fgrad.grad(lambda e: _loss(deq, e))(x))
    np.testing.assert_allclose(g_q, g_d, rtol=1e-4, atol=1e-7)
    # The scales are differentiable (the product is bilinear in them): against differences.
    x64 = fnp.astype(x, np.float64)
    w = q.params["layers"][1]["w_up"]

    def loss_of_scale(s):
        layers = list(q.params["layers"])
        layers[1] = dict(layers[1], w_up=Int8Weight(w.q, s))
        return _loss(q.module.bind(dict(q.params, layers=layers)), x64)

    s64 = fnp.astype(w.scale, np.float64)
    g = np.asarray(fgrad.grad(loss_of_scale)(s64))
    s = np.asarray(s64)
    for index in ((0, 0), (100, 0), (255, 0)):
        e = np.zeros_like(s)
        e[index] = 1e-7
        fd = (float(loss_of_scale(fnp.asarray(s + e))) - float(loss_of_scale(fnp.asarray(s - e)))) / 2e-7
        np.testing.assert_allclose(g[index], fd, rtol=1e-4, atol=1e-8)


def test_w8a8_gradient_is_straight_through(dense):
    a8 = int8.w8a8(dense)
    w8 = dense.module.bind(dict(a8.params, layers=[
        {k: Int8Weight(v.q, v.scale) if isinstance(v, Int8Weight) else v for k, v in layer.items()}
        for layer in a8.params["layers"]]))
    x = fnp.take(dense.params["embed"], TOKENS[:1], axis=0)
    g_a8 = np.asarray(fgrad.grad(lambda e: _loss(a8, e))(x))
    g_w8 = np.asarray(fgrad.grad(lambda e: _loss(w8, e))(x))
    # The same backward products; only the forward activations differ (by quantization).
    assert np.abs(g_a8).max() > 0
    np.testing.assert_allclose(g_a8, g_w8, rtol=0.1, atol=0.05 * np.abs(g_w8).max())


@pytest.mark.parametrize("variant", ["int8", "int8-g32", "w8a8"])
def test_jit_and_vmap_over_quantized_params(variant, dense):
    model = {"int8": lambda: int8.quantize(dense), "int8-g32": lambda: int8.quantize(dense, 32),
             "w8a8": lambda: int8.w8a8(dense)}[variant]()
    eager = np.asarray(model(TOKENS)[0])
    jitted = fgrad.jit(lambda m, t: m(t)[0])
    np.testing.assert_allclose(np.asarray(jitted(model, TOKENS)), eager, rtol=1e-5, atol=1e-6)
    per = fgrad.vmap(lambda t: model(t[None])[0][0])(TOKENS)
    np.testing.assert_allclose(np.asarray(per), eager, rtol=1e-5, atol=1e-6)
    # jit of the gradient with respect to the input embeddings equals the eager one.
    x = fnp.take(dense.params["embed"], TOKENS[:1], axis=0)
    g = fgrad.grad(lambda e: _loss(model, e))
    np.testing.assert_allclose(np.asarray(fgrad.jit(g)(x)), np.asarray(g(x)), rtol=1e-4, atol=1e-7)


def test_cached_decoding_with_int8_weights_matches_the_full_pass(dense):
    from fgrad.llm.generation import decode_fns  # noqa: F401  (the decode path is jitted)

    model = int8.quantize(dense)
    tokens = TOKENS[:1, :10]
    cache = model.new_cache(1, 16)
    _, cache = model(tokens[:, :6], cache)
    step, _ = model(tokens[:, 6:7], cache)
    full = np.asarray(model(tokens[:, :7])[0][:, -1])
    np.testing.assert_allclose(np.asarray(step)[:, -1], full, rtol=1e-5, atol=1e-6)


def test_qlora_over_an_int8_base(dense):
    base = int8.quantize(dense)
    ad = lora.init(fgrad.random.key(0), base, 4, 8.0, targets=("q_proj", "v_proj", "down_proj"))
    assert np.array_equal(np.asarray(lora.apply(base, ad)(TOKENS)[0]), np.asarray(base(TOKENS)[0]))

    def loss(adapters):
        logits, _ = lora.apply(base, adapters)(TOKENS[:, :-1])
        return fnp.mean(nn.softmax_cross_entropy(logits, TOKENS[:, 1:]))

    g = fgrad.grad(loss)(ad)
    assert type(g) is lora.LoraAdapters
    assert np.abs(np.asarray(g.layers[0]["wq"].b)).max() > 0
    merged = lora.merge(base, ad)
    assert not isinstance(merged.params["layers"][0]["wq"], Int8Weight)
