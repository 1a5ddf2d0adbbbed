"""The model under transforms: grad wrt weights and input embeddings, vmap over
sequences, jit of prefill and of the decode step."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.llm import gguf
from fgrad.llm.config import ModelConfig
from fgrad.llm.loading import model_from_gguf
from fgrad.llm.model import Transformer

CFG = ModelConfig("llama", vocab_size=30, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2,
                  d_head=4, d_ff=32, rope_interleaved=True)
TOKENS = fnp.asarray([[1, 5, 9, 2, 7, 3]])


@pytest.fixture(scope="module")
def model():
    module = Transformer(CFG)
    return module.bind(module.init(fgrad.random.key(0), scale=0.3, dtype=np.float64))


def _loss(model, tokens=TOKENS, embeddings=None):
    if embeddings is None:
        logits, _ = model(tokens[:, :-1])
    else:
        logits, _ = model(embeddings=embeddings)
    return fnp.mean(nn.softmax_cross_entropy(logits, tokens[:, 1:]))


def _fd(f, x, index, eps=1e-6):
    e = np.zeros(x.shape)
    e[index] = eps
    return (float(f(x + e)) - float(f(x - e))) / (2 * eps)


def test_grad_wrt_weights(model):
    grads = fgrad.grad(_loss)(model)
    assert type(grads) is type(model)
    wq = np.asarray(model.params["layers"][0]["wq"])
    g = np.asarray(grads.params["layers"][0]["wq"])

    def with_wq(w):
        params = dict(model.params, layers=[dict(model.params["layers"][0], wq=fnp.asarray(w)),
                                            model.params["layers"][1]])
        return _loss(model.module.bind(params))

    for index in ((0, 0), (5, 3), (15, 15)):
        np.testing.assert_allclose(g[index], _fd(with_wq, wq, index), rtol=1e-5, atol=1e-9)
    emb = np.asarray(grads.params["embed"])
    assert np.abs(emb).max() > 0


def test_grad_wrt_input_embeddings(model):
    x = np.asarray(fnp.take(model.params["embed"], TOKENS[:, :-1], axis=0))
    g = np.asarray(fgrad.grad(lambda e: _loss(model, embeddings=e))(fnp.asarray(x)))
    for index in ((0, 0, 0), (0, 3, 7), (0, 4, 15)):
        fd = _fd(lambda e: _loss(model, embeddings=fnp.asarray(e)), x, index)
        np.testing.assert_allclose(g[index], fd, rtol=1e-5, atol=1e-9)


def test_grad_through_dequantized_and_kept_quantized_weights(tiny_llama_gguf):
    dense = model_from_gguf(gguf.read(tiny_llama_gguf))
    quantized = model_from_gguf(gguf.read(tiny_llama_gguf, dtype=None))
    tokens = fnp.asarray([[5, 100, 200, 17, 3]])
    grads = fgrad.grad(lambda m: _loss(m, tokens))(dense)
    assert np.isfinite(np.asarray(grads.params["layers"][1]["w_down"])).all()
    x = fnp.take(dense.params["embed"], tokens[:, :-1], axis=0)
    g_dense = fgrad.grad(lambda e: _loss(dense, tokens, e))(x)
    g_quant = fgrad.grad(lambda e: _loss(quantized, tokens, e))(x)
    np.testing.assert_allclose(np.asarray(g_quant), np.asarray(g_dense), atol=1e-6)


def test_vmap_over_sequences(model):
    seqs = fnp.asarray([[1, 5, 9, 2], [3, 3, 8, 0], [7, 1, 1, 4]])
    per = fgrad.vmap(lambda t: model(t[None])[0][0])(seqs)
    batched, _ = model(seqs)
    np.testing.assert_allclose(np.asarray(per), np.asarray(batched), atol=1e-12)


def test_jit_prefill_and_decode_step(model):
    module, params = model.module, model.params

    def prefill(params, cache, tokens):
        return module.apply(params, tokens, cache)

    jitted = fgrad.jit(prefill, donate_argnums=(1,))
    eager_logits, eager_cache = prefill(params, model.new_cache(1, 8), TOKENS[:, :5])
    logits, cache = jitted(params, model.new_cache(1, 8), TOKENS[:, :5])
    np.testing.assert_allclose(np.asarray(logits), np.asarray(eager_logits), atol=1e-12)
    for _ in range(3):  # decode steps: the position is traced, one trace
        step_logits, cache = jitted(params, cache, TOKENS[:, 5:6])
    assert int(cache.offset) == 8
    assert jitted.cache_info().misses == 2  # one for the 5-token prefill, one for the steps
    full, _ = model(fnp.asarray([[1, 5, 9, 2, 7, 3, 3, 3]]))
    np.testing.assert_allclose(np.asarray(step_logits[0, 0]), np.asarray(full[0, -1]), atol=1e-12)
