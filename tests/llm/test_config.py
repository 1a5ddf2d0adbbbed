"""ModelConfig from GGUF metadata and config.json; rope scaling; unsupported architectures."""

import math

import numpy as np
import pytest

from fgrad.llm.config import ModelConfig, RopeScaling, UnsupportedModelError

META = {
    "general.architecture": "llama",
    "llama.embedding_length": 576,
    "llama.block_count": 30,
    "llama.attention.head_count": 9,
    "llama.attention.head_count_kv": 3,
    "llama.feed_forward_length": 1536,
    "llama.attention.layer_norm_rms_epsilon": 1e-5,
    "llama.rope.freq_base": 100000.0,
    "llama.rope.dimension_count": 64,
    "llama.context_length": 8192,
    "llama.vocab_size": 49152,
}


def test_gguf_metadata_of_smollm2_shape():
    cfg = ModelConfig.from_gguf(META, ["token_embd.weight", "blk.0.attn_q.weight"])
    assert (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.d_head) == (576, 30, 9, 3, 64)
    assert (cfg.d_ff, cfg.vocab_size, cfg.context_length, cfg.group) == (1536, 49152, 8192, 3)
    assert cfg.rope_base == 100000.0 and cfg.rope_dim == 64 and cfg.norm_eps == 1e-5
    assert cfg.tied_embeddings and not cfg.qkv_bias
    assert cfg.rope_interleaved  # llama GGUF: q/k permuted for adjacent pairs


def test_gguf_separate_head_vocab_from_tokens_and_qwen2_layout():
    meta = {k.replace("llama", "qwen2"): v for k, v in META.items() if k != "llama.vocab_size"}
    meta["general.architecture"] = "qwen2"
    meta["tokenizer.ggml.tokens"] = ["a"] * 100
    cfg = ModelConfig.from_gguf(meta, ["output.weight", "blk.0.attn_q.bias"])
    assert cfg.arch == "qwen2" and cfg.vocab_size == 100
    assert not cfg.tied_embeddings and cfg.qkv_bias and not cfg.rope_interleaved


def test_gguf_linear_rope_scaling_and_missing_key():
    cfg = ModelConfig.from_gguf({**META, "llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 4.0})
    assert cfg.rope_scaling == RopeScaling("linear", 4.0)
    with pytest.raises(UnsupportedModelError, match="yarn"):
        ModelConfig.from_gguf({**META, "llama.rope.scaling.type": "yarn"})
    meta = dict(META)
    del meta["llama.block_count"]
    with pytest.raises(KeyError, match="llama.block_count"):
        ModelConfig.from_gguf(meta)


def test_unsupported_architecture_names_it_and_lists_supported():
    with pytest.raises(UnsupportedModelError, match=r"'mamba' is not supported.*llama, qwen2"):
        ModelConfig.from_gguf({"general.architecture": "mamba"})
    with pytest.raises(UnsupportedModelError, match="'gpt_neox'"):
        ModelConfig.from_hf({"model_type": "gpt_neox"})


def test_hf_config_llama3_scaling():
    hf = {
        "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 10, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0},
        "tie_word_embeddings": True,
    }
    cfg = ModelConfig.from_hf(hf)
    assert cfg.rope_base == 500000.0 and not cfg.rope_interleaved and cfg.tied_embeddings
    inv = 500000.0 ** (-np.arange(0, 16, 2) / 16)
    scaled = cfg.rope_scaling.apply(inv)
    wavelen = 2 * math.pi / inv
    # Meta's rule: short wavelengths (< 8192 / 4) kept, long ones (> 8192) divided by 8.
    np.testing.assert_allclose(scaled[wavelen < 2048], inv[wavelen < 2048])
    np.testing.assert_allclose(scaled[wavelen > 8192], inv[wavelen > 8192] / 8)


def test_bad_sizes():
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        ModelConfig("llama", 10, 8, 1, 3, 2, 4, 16)
    with pytest.raises(ValueError, match="rope_dim"):
        ModelConfig("llama", 10, 8, 1, 2, 1, 4, 16, rope_dim=6)
