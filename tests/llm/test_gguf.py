"""Reading GGUF files: metadata and tensors as gguf's own reader gives them, every mode of
``dtype``, the real SmolLM2 file, and truncated or corrupt files refused clearly."""

import os
import shutil
import struct
import tracemalloc

import numpy as np
import pytest

from fgrad.llm import gguf as fgguf
from fgrad.llm.quantized import QuantizedWeight

gguf = pytest.importorskip("gguf")


def _reference(path):
    """(metadata, {name: (type name, dequantized float32, data offset)}) from gguf's reader."""
    reader = gguf.GGUFReader(path)
    metadata = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    tensors = {
        t.name: (t.tensor_type.name, gguf.quants.dequantize(t.data, t.tensor_type), t.data_offset)
        for t in reader.tensors
    }
    return metadata, tensors


def _same_bits(got, want):
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tiny_file_matches_ggufs_reader(tiny_llama_gguf):
    f = fgguf.read(tiny_llama_gguf)
    metadata, tensors = _reference(tiny_llama_gguf)
    assert f.metadata == metadata and list(f.metadata) == list(metadata)
    assert f.arch == "llama" and f.version == 3 and f.alignment == 32
    assert f.metadata["llama.attention.head_count_kv"] == 2
    assert f.metadata["tokenizer.ggml.tokens"][:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert isinstance(f.metadata["tokenizer.ggml.add_bos_token"], bool)
    assert list(f.tensors) == list(tensors)
    for name, (qtype, want, offset) in tensors.items():
        assert f.tensor_types[name] == qtype
        assert f.infos[name].offset == offset
        _same_bits(f.tensors[name], want)
    assert f.tensors["blk.0.attn_k.weight"].shape == (32, 64)  # (out, in): GGUF dims reversed
    assert f.tensors["blk.0.ffn_down.weight"].shape == (64, 256)
    assert "output.weight" not in f.tensors  # tied to token_embd


def test_modes_float16_and_kept_quantized(tiny_llama_gguf):
    f32 = fgguf.read(tiny_llama_gguf)
    f16 = fgguf.read(tiny_llama_gguf, dtype="float16")
    kept = fgguf.read(tiny_llama_gguf, dtype=None)
    for name, want in f32.tensors.items():
        assert f16.tensors[name].dtype == np.float16
        np.testing.assert_array_equal(f16.tensors[name], want.astype(np.float16))
        k = kept.tensors[name]
        if f32.tensor_types[name] in ("F32", "F16", "BF16"):
            assert type(k) is np.ndarray and k.dtype == np.float32
            np.testing.assert_array_equal(k, want)
        else:
            assert isinstance(k, QuantizedWeight) and k.qtype == f32.tensor_types[name]
            assert k.shape == want.shape
            _same_bits(k.dequantize(), want)
    report = f32.memory_report()
    assert report == kept.memory_report()
    assert (f32.nbytes, f16.nbytes, kept.nbytes) == (report["float32"], report["float16"], report["quantized"])
    assert report["quantized"] < report["float16"] < report["float32"]


def test_real_smollm2_file(smollm2_gguf):
    """The SmolLM2-135M-Instruct Q4_1 file: metadata as published (llama, 30 layers, d_model
    576, 9 query / 3 KV heads, vocabulary 49,152, tied embeddings), and every tensor
    dequantized bit for bit as gguf does."""
    f = fgguf.read(smollm2_gguf)
    m = f.metadata
    assert f.arch == "llama"
    assert (m["llama.block_count"], m["llama.embedding_length"], m["llama.feed_forward_length"]) == (30, 576, 1536)
    assert (m["llama.attention.head_count"], m["llama.attention.head_count_kv"]) == (9, 3)
    assert m["llama.rope.freq_base"] == 100000.0 and m["llama.context_length"] == 8192
    assert m["llama.attention.layer_norm_rms_epsilon"] == pytest.approx(1e-5)
    assert len(m["tokenizer.ggml.tokens"]) == 49152 and m["tokenizer.ggml.pre"] == "smollm"
    assert m["tokenizer.ggml.bos_token_id"] == 1 and m["tokenizer.ggml.eos_token_id"] == 2
    types = list(f.tensor_types.values())
    assert (types.count("Q4_1"), types.count("F32"), types.count("Q8_0"), len(types)) == (210, 61, 1, 272)
    assert f.tensor_types["token_embd.weight"] == "Q8_0" and "output.weight" not in f.tensors
    assert f.tensors["token_embd.weight"].shape == (49152, 576)
    assert f.tensors["blk.0.attn_k.weight"].shape == (192, 576)
    metadata, tensors = _reference(smollm2_gguf)
    assert m == metadata
    for name, (qtype, want, offset) in tensors.items():
        assert f.infos[name].offset == offset
        _same_bits(f.tensors[name], want)
    report = f.memory_report()
    assert report == {"float32": 538060032, "float16": 269030016, "quantized": 96576768}


# ------------------------------------------------------------------ bad input


def _copy(src, tmp_path, name="bad.gguf"):
    dst = str(tmp_path / name)
    shutil.copyfile(src, dst)
    return dst


def _patch(path, offset, fmt, value):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, value))


def _find(path, text):
    data = open(path, "rb").read()
    at = data.find(text.encode())
    assert at > 0
    return at


def _refused(path, match):
    """Read ``path`` expecting a ValueError that names it and matches ``match``, and check
    the attempt allocated little (under 1 MB beyond the file's size)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match) as info:
            fgguf.read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert path in str(info.value)
    assert peak < os.path.getsize(path) + (1 << 20), f"{peak} bytes allocated"
    return str(info.value)


def test_wrong_magic(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    _patch(path, 0, "4s", b"GGML")
    _refused(path, "not a GGUF file: it starts with b'GGML'")


def test_empty_and_tiny_files(tmp_path):
    empty = str(tmp_path / "empty.gguf")
    open(empty, "wb").close()
    _refused(empty, "the file is empty")
    short = str(tmp_path / "short.gguf")
    open(short, "wb").write(b"GGUF\x03\x00")
    _refused(short, "truncated or corrupt: the version needs 4 bytes")


def test_unsupported_version(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    _patch(path, 4, "<I", 1)
    _refused(path, r"GGUF version 1 is not supported \(supported: 2, 3\)")


@pytest.mark.parametrize("fraction", [0.01, 0.05, 0.2, 0.5, 0.9, 0.999])
def test_truncated_anywhere(tiny_llama_gguf, tmp_path, fraction):
    data = open(tiny_llama_gguf, "rb").read()
    path = str(tmp_path / "cut.gguf")
    open(path, "wb").write(data[: int(len(data) * fraction)])
    _refused(path, "truncated")


def test_header_claims_too_many_entries(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    _patch(path, 16, "<Q", 2**60)  # kv_count
    _refused(path, "1152921504606846976 metadata entries")
    path = _copy(tiny_llama_gguf, tmp_path, "tensors.gguf")
    _patch(path, 8, "<Q", 10**12)  # tensor_count
    _refused(path, "1000000000000 tensor infos")


def test_array_and_string_lengths_that_lie(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    key = "tokenizer.ggml.token_type"  # an int32 array: its count at key + type + item type
    _patch(path, _find(path, key) + len(key) + 8, "<Q", 2**50)
    _refused(path, r"metadata 'tokenizer.ggml.token_type' \(an array of 1125899906842624 items\)")
    path = _copy(tiny_llama_gguf, tmp_path, "string.gguf")
    key = "general.name"  # a string: its length after key + type
    _patch(path, _find(path, key) + len(key) + 4, "<Q", 2**40)
    _refused(path, "metadata 'general.name' \\(1099511627776 bytes\\)")


def _tensor_field(path, name):
    """Offsets of a tensor info's rank, type and data offset fields (one row of dims)."""
    at = _find(path, name) + len(name)
    (n_dims,) = struct.unpack_from("<I", open(path, "rb").read(), at)
    return at, at + 4 + 8 * n_dims, at + 4 + 8 * n_dims + 4


def test_tensor_past_the_end_and_misaligned(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    _, _, offset_at = _tensor_field(path, "output_norm.weight")
    _patch(path, offset_at, "<Q", 2**40)
    _refused(path, "tensor 'output_norm.weight'.*end past the end of the file")
    path = _copy(tiny_llama_gguf, tmp_path, "misaligned.gguf")
    _patch(path, offset_at, "<Q", 33)
    _refused(path, "data offset 33 is not a multiple of 32")


def test_too_many_dimensions(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    rank_at, _, _ = _tensor_field(path, "output_norm.weight")
    _patch(path, rank_at, "<I", 9)
    _refused(path, "has 9 dimensions")


@pytest.mark.parametrize("type_id, named", [(16, "IQ2_XXS"), (77, "unknown ggml type id 77")])
def test_unsupported_tensor_type_names_itself(tiny_llama_gguf, tmp_path, type_id, named):
    path = _copy(tiny_llama_gguf, tmp_path)
    _, type_at, _ = _tensor_field(path, "blk.0.attn_q.weight")
    _patch(path, type_at, "<I", type_id)
    msg = _refused(path, named)
    assert "supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K" in msg


def test_unknown_metadata_value_type(tiny_llama_gguf, tmp_path):
    path = _copy(tiny_llama_gguf, tmp_path)
    key = "general.name"
    _patch(path, _find(path, key) + len(key), "<I", 42)
    _refused(path, "'general.name' has value type 42")


def test_bad_dtype_argument(tiny_llama_gguf):
    with pytest.raises(ValueError, match="dtype must be 'float32', 'float16' or None"):
        fgguf.read(tiny_llama_gguf, dtype="bfloat16")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        fgguf.read(str(tmp_path / "absent.gguf"))


def test_other_architectures_and_untied_heads(make_tiny_gguf):
    path = make_tiny_gguf("qwen.gguf", arch="qwen2", tied=False)
    f = fgguf.read(path)
    assert f.arch == "qwen2" and f.metadata["qwen2.attention.head_count"] == 4
    assert f.tensors["output.weight"].shape == f.tensors["token_embd.weight"].shape
