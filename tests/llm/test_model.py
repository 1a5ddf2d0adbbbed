"""The decoder against a plain numpy forward pass (tests/llm/_reference.py), from random
parameters and from a tiny GGUF file; both rotary layouts; partial rotary; bad input."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.llm import gguf
from fgrad.llm.config import ModelConfig
from fgrad.llm.loading import model_from_gguf
from fgrad.llm.model import Model, Transformer

from _reference import forward

TOKENS = np.array([3, 7, 1, 9, 22, 5, 5, 0])


def _config(arch="llama", **kw):
    base = dict(vocab_size=40, d_model=24, n_layers=2, n_heads=6, n_kv_heads=2, d_head=4, d_ff=48,
                rope_base=50.0, rope_interleaved=arch == "llama", qkv_bias=arch == "qwen2")
    base.update(kw)
    return ModelConfig(arch, **base)


@pytest.mark.parametrize(
    "cfg",
    [
        _config("llama"),
        _config("qwen2", tied_embeddings=True),
        _config("llama", rope_interleaved=False, d_head=8, rope_dim=4),  # partial rotary
        _config("llama", n_kv_heads=6),  # plain multi-head
    ],
    ids=["llama-adjacent-pairs", "qwen2-halves-bias-tied", "partial-rotary", "mha"],
)
def test_random_model_matches_numpy_forward(cfg):
    module = Transformer(cfg)
    params = module.init(fgrad.random.key(0), scale=0.3, dtype=np.float64)
    if cfg.qkv_bias:
        params["layers"][0]["bq"] = fnp.full((cfg.n_heads * cfg.d_head,), 0.3)
        params["layers"][1]["bk"] = fnp.full((cfg.n_kv_heads * cfg.d_head,), -0.2)
    ref = forward(cfg, params, TOKENS)
    logits, cache = module.apply(params, fnp.asarray(TOKENS[None]))
    assert logits.shape == (1, len(TOKENS), cfg.vocab_size) and cache is None
    np.testing.assert_allclose(np.asarray(logits[0]), ref, atol=1e-12)


def test_rotary_layouts_differ():
    """The two layouts are not interchangeable: a model run with the other one differs."""
    cfg = _config("llama")
    params = Transformer(cfg).init(fgrad.random.key(1), scale=0.3, dtype=np.float64)
    a = np.asarray(Transformer(cfg).apply(params, fnp.asarray(TOKENS[None]))[0])
    b = np.asarray(Transformer(cfg.replace(rope_interleaved=False)).apply(params, fnp.asarray(TOKENS[None]))[0])
    assert np.abs(a - b).max() > 1e-3


def test_cache_in_pieces_equals_one_pass():
    cfg = _config("qwen2")
    model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(2), scale=0.3, dtype=np.float64))
    ref = forward(cfg, model.params, TOKENS)
    cache = model.new_cache(1, 16)
    pieces = []
    for a, b in ((0, 5), (5, 6), (6, 8)):
        logits, cache = model(fnp.asarray(TOKENS[None, a:b]), cache)
        pieces.append(np.asarray(logits[0]))
    assert int(cache.offset) == 8
    np.testing.assert_allclose(np.concatenate(pieces), ref, atol=1e-12)
    last, _ = model(fnp.asarray(TOKENS[None]), model.new_cache(1, 8), last_only=True)
    np.testing.assert_allclose(np.asarray(last[0, 0]), ref[-1], atol=1e-12)


def test_tiny_gguf_float32_and_quantized(tiny_llama_gguf):
    file = gguf.read(tiny_llama_gguf)
    model = model_from_gguf(file)
    assert isinstance(model, Model) and model.config.tied_embeddings and model.config.rope_interleaved
    tokens = np.array([5, 100, 200, 17, 3, 250])
    ref = forward(model.config, model.params, tokens)
    logits, _ = model(fnp.asarray(tokens[None]))
    np.testing.assert_allclose(np.asarray(logits[0]), ref, atol=2e-5)
    quantized = model_from_gguf(gguf.read(tiny_llama_gguf, dtype=None))
    assert quantized.nbytes < model.nbytes / 2  # F16/BF16 layers keep 2 bytes a value
    q_logits, _ = quantized(fnp.asarray(tokens[None]))
    np.testing.assert_allclose(np.asarray(q_logits), np.asarray(logits), atol=2e-5)


def test_bad_input():
    cfg = _config("llama", context_length=8)
    model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
    with pytest.raises(ShapeError, match=r"tokens must be \(batch, seq\)"):
        model(fnp.asarray([1, 2]))
    with pytest.raises(ShapeError, match="exceed the context of 8"):
        model(fnp.zeros((1, 9), dtype="int64"))
    with pytest.raises(ShapeError, match="do not fit in the cache of 4"):
        model(fnp.zeros((1, 5), dtype="int64"), model.new_cache(1, 4))
    with pytest.raises(ValueError, match="exactly one of tokens and embeddings"):
        model()
