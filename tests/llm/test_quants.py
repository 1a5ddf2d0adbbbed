"""Dequantization of every supported ggml type, bit for bit against gguf's numpy reference
(``gguf.quants.dequantize``) on random blocks."""

import numpy as np
import pytest

from fgrad.llm import quants

gguf = pytest.importorskip("gguf")

TYPES = sorted(quants.QUANT_TYPES)


def _blocks(qtype, rows, blocks_per_row, seed):
    t = quants.QUANT_TYPES[qtype]
    rng = np.random.default_rng(seed)
    raw = quants.random_blocks(rng, qtype, rows * blocks_per_row)
    return raw.reshape(rows, blocks_per_row * t.bytes_per_block)


def _reference(data, qtype):
    return gguf.quants.dequantize(data, gguf.GGMLQuantizationType[qtype])


@pytest.mark.parametrize("qtype", TYPES)
@pytest.mark.parametrize("rows, blocks_per_row", [(1, 1), (3, 2), (7, 5), (64, 3)])
def test_bit_exact_with_gguf(qtype, rows, blocks_per_row):
    data = _blocks(qtype, rows, blocks_per_row, seed=rows * 100 + blocks_per_row)
    want = _reference(data, qtype)
    got = quants.dequantize(data, qtype)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("qtype", TYPES)
def test_bit_exact_on_a_three_dimensional_tensor(qtype):
    t = quants.QUANT_TYPES[qtype]
    data = _blocks(qtype, 6, 2, seed=7).reshape(2, 3, 2 * t.bytes_per_block)
    want = _reference(data, qtype)
    got = quants.dequantize(data, qtype)
    assert got.shape == (2, 3, 2 * t.block_size)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("qtype", ["Q4_1", "Q6_K"])
def test_chunked_dequantization_equals_one_pass(qtype, monkeypatch):
    data = _blocks(qtype, 9, 4, seed=3)
    whole = quants.dequantize(data, qtype)
    monkeypatch.setattr(quants, "_CHUNK_VALUES", 1)  # one block per kernel call
    np.testing.assert_array_equal(quants.dequantize(data, qtype), whole)


def test_float16_is_the_rounded_float32():
    data = _blocks("Q4_K", 4, 2, seed=1)
    half = quants.dequantize(data, "Q4_K", dtype="float16")
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, quants.dequantize(data, "Q4_K").astype(np.float16))


def test_dequantize_blocks_matches_dequantize():
    data = _blocks("Q5_K", 3, 1, seed=2)
    np.testing.assert_array_equal(quants.dequantize_blocks(data, "Q5_K"), quants.dequantize(data, "Q5_K"))


def test_known_values():
    """A Q4_0 block by hand: d = 0.5, quants 0..15 in the low nibbles, 15 in the high ones:
    values d * (q - 8) (ggml-quants.c, dequantize_row_q4_0)."""
    block = np.zeros(18, np.uint8)
    block[:2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
    block[2:] = np.arange(16, dtype=np.uint8) | 0xF0
    out = quants.dequantize(block, "Q4_0")
    np.testing.assert_array_equal(out[:16], 0.5 * (np.arange(16) - 8))
    np.testing.assert_array_equal(out[16:], np.full(16, 0.5 * 7))


def test_unsupported_type_names_itself_and_lists_the_supported():
    with pytest.raises(ValueError, match=r"'IQ2_XXS' is not supported \(supported: F32, F16, BF16, Q4_0"):
        quants.dequantize(np.zeros(66, np.uint8), "IQ2_XXS")


def test_partial_block_is_refused():
    with pytest.raises(ValueError, match="whole number of 20-byte blocks"):
        quants.dequantize(np.zeros((2, 30), np.uint8), "Q4_1")
    with pytest.raises(ValueError, match=r"shape \(n, 20\)"):
        quants.dequantize_blocks(np.zeros((2, 21), np.uint8), "Q4_1")
    with pytest.raises(ValueError, match="float32 or float16"):
        quants.dequantize(np.zeros(20, np.uint8), "Q4_1", dtype="float64")


@pytest.mark.parametrize("qtype", TYPES)
def test_same_bits_on_every_namespace(xp, qtype):
    """The kernels use only ``xp``: cupy gives numpy's values (skipped without a GPU)."""
    data = _blocks(qtype, 5, 2, seed=11)
    got = quants.dequantize(xp.asarray(data), qtype)
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    np.testing.assert_array_equal(got.view(np.uint32), quants.dequantize(data, qtype).view(np.uint32))
