"""Dequantization of ggml's tensor types, written once against ``xp`` (numpy or cupy).

A ggml tensor row of ``n`` values is stored as ``n / block_size`` blocks of
``bytes_per_block`` bytes each; a block holds float16 scales (and minimums) and packed
integer quants. The layouts follow ggml's reference (``ggml-common.h``, the ``block_q*``
structs, and ``dequantize_row_q*`` in ``ggml-quants.c``; the GGUF format is specified in
``docs/gguf.md`` of the ggml repository). All values are little-endian.

=========  ==========  =====  =================================================================
type       block size  bytes  block layout (in byte order)
=========  ==========  =====  =================================================================
F32        1           4      float32
F16        1           2      float16
BF16       1           2      bfloat16 (the top half of a float32)
Q4_0       32          18     d f16, 16 bytes of 4-bit q (low nibbles: values 0-15, high: 16-31);
                              x = d * (q - 8)
Q4_1       32          20     d f16, m f16, 16 bytes of 4-bit q; x = d * q + m
Q5_0       32          22     d f16, qh u32 (bit j: 5th bit of value j), 16 bytes of low nibbles;
                              x = d * (q - 16)
Q5_1       32          24     d f16, m f16, qh u32, 16 bytes of low nibbles; x = d * q + m
Q8_0       32          34     d f16, 32 int8 q; x = d * q
Q2_K       256         84     16 bytes of 4-bit (scale, min) pairs, 64 bytes of 2-bit q, d, dmin;
                              x = d * scale * q - dmin * min, per 16 values
Q3_K       256         110    32 bytes high-bit mask, 64 bytes of 2-bit q, 12 bytes of 6-bit
                              scales, d; x = d * (scale - 32) * (q - 4 * (1 - hbit))
Q4_K       256         144    d, dmin, 12 bytes of 6-bit (scale, min) pairs, 128 bytes of 4-bit
                              q; x = d * scale * q - dmin * min, per 32 values
Q5_K       256         176    d, dmin, 12 bytes of 6-bit (scale, min), 32 bytes of 5th bits,
                              128 bytes of low nibbles
Q6_K       256         210    128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8
                              scales, d; x = d * scale * (q - 32), per 16 values
=========  ==========  =====  =================================================================

Every kernel computes in float32 with the same operations, in the same order, as
``gguf.quants.dequantize`` (the gguf package's numpy reference), so the results are equal
bit for bit; ``tests/llm/test_quants.py`` checks each type on random blocks.

Example:
    >>> import numpy as np
    >>> from fgrad.llm import quants
    >>> block = np.zeros(34, np.uint8)                 # one Q8_0 block: d, then 32 int8
    >>> block[:2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
    >>> block[2:] = np.arange(32, dtype=np.int8).view(np.uint8)
    >>> quants.dequantize(block, "Q8_0")[:4]
    array([0. , 0.5, 1. , 1.5], dtype=float32)
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from fgrad import backend

__all__ = [
    "QuantType",
    "QUANT_TYPES",
    "GGML_TYPE_NAMES",
    "dequantize",
    "dequantize_blocks",
    "q8_roundtrip",
    "random_blocks",
]

QK_K = 256  # values per super-block of the k-quants


class QuantType(NamedTuple):
    """A ggml tensor type: ``block_size`` values are stored in ``bytes_per_block`` bytes."""

    name: str
    type_id: int  # ggml_type's value, as GGUF stores it
    block_size: int
    bytes_per_block: int
    kernel: Callable  # (xp, blocks uint8 (n, bytes_per_block)) -> float32 (n, block_size)


# Every ggml_type id a GGUF file may name (ggml.h), so that an unsupported one names itself.
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_2", 5: "Q4_3", 6: "Q5_0", 7: "Q5_1",
    8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K",
    15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL",
    21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64",
    28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}  # fmt: skip


# ------------------------------------------------------------------------------ helpers


def _f16(xp: Any, b: Any) -> Any:
    """Two bytes per row (``(n, 2)`` uint8) as float32 ``(n, 1)``: a float16 scale widened."""
    return xp.ascontiguousarray(b).view(xp.float16).astype(xp.float32)


def _shifted(xp: Any, q: Any, shifts: tuple[int, ...], axis_shape: tuple[int, ...]) -> Any:
    """``q >> s`` for each ``s`` in ``shifts``, the shifts along a new axis of ``axis_shape``."""
    return q >> xp.asarray(shifts, dtype=q.dtype).reshape(axis_shape)


def _nibbles(xp: Any, qs: Any) -> Any:
    """``(n, k)`` bytes -> ``(n, 2k)``: every low nibble, then every high one."""
    return xp.concatenate([qs & 0x0F, qs >> 4], axis=1)


def _fifth_bits(xp: Any, qh: Any) -> Any:
    """``(n, 4)`` bytes of a little-endian uint32 -> ``(n, 32)`` bits as uint8 (bit j at j)."""
    word = xp.ascontiguousarray(qh).view(xp.uint32)  # (n, 1)
    bits = word >> xp.arange(32, dtype=xp.uint32).reshape(1, 32)
    return (bits & 1).astype(xp.uint8)


# ---------------------------------------------------------------------- the kernels


def _f32(xp, b):
    return xp.ascontiguousarray(b).view(xp.float32)


def _f16_values(xp, b):
    return xp.ascontiguousarray(b).view(xp.float16).astype(xp.float32)


def _bf16(xp, b):
    # bfloat16 is the upper 16 bits of a float32
    return (xp.ascontiguousarray(b).view(xp.uint16).astype(xp.uint32) << 16).view(xp.float32)


def _q4_0(xp, b):
    d = _f16(xp, b[:, :2])
    q = _nibbles(xp, b[:, 2:]).astype(xp.float32) - 8.0
    return d * q


def _q4_1(xp, b):
    d, m = _f16(xp, b[:, :2]), _f16(xp, b[:, 2:4])
    return d * _nibbles(xp, b[:, 4:]).astype(xp.float32) + m


def _q5(xp, qh, qs):
    """The 5-bit quants of a Q5_0/Q5_1 block: low nibbles ``qs``, fifth bits ``qh``."""
    return _nibbles(xp, qs) | (_fifth_bits(xp, qh) << 4)


def _q5_0(xp, b):
    d = _f16(xp, b[:, :2])
    q = _q5(xp, b[:, 2:6], b[:, 6:]).astype(xp.float32) - 16.0
    return d * q


def _q5_1(xp, b):
    d, m = _f16(xp, b[:, :2]), _f16(xp, b[:, 2:4])
    return d * _q5(xp, b[:, 4:8], b[:, 8:]).astype(xp.float32) + m


def _q8_0(xp, b):
    d = _f16(xp, b[:, :2])
    return xp.ascontiguousarray(b[:, 2:]).view(xp.int8).astype(xp.float32) * d


def _q2_k(xp, b):
    n = b.shape[0]
    scales = b[:, :16]
    d, dmin = _f16(xp, b[:, 80:82]), _f16(xp, b[:, 82:84])
    dl = (d * (scales & 0x0F).astype(xp.float32)).reshape(n, 16, 1)
    ml = (dmin * (scales >> 4).astype(xp.float32)).reshape(n, 16, 1)
    # Two halves of 128 values; each is 32 bytes read four times, 2 bits at a time.
    q = _shifted(xp, b[:, 16:80].reshape(n, 2, 1, 32), (0, 2, 4, 6), (1, 1, 4, 1)) & 3
    q = q.reshape(n, 16, 16).astype(xp.float32)
    return (dl * q - ml).reshape(n, QK_K)


def _q3_k(xp, b):
    n = b.shape[0]
    hmask, qs, packed = b[:, :32], b[:, 32:96], b[:, 96:108]
    d = _f16(xp, b[:, 108:110])
    # 16 six-bit scales: low 4 bits from bytes 0-7 (low nibbles, then high nibbles),
    # high 2 bits from bytes 8-11 (2 bits at a time).
    low = _shifted(xp, packed[:, :8].reshape(n, 1, 8), (0, 4), (1, 2, 1)).reshape(n, 16)
    high = _shifted(xp, packed[:, 8:].reshape(n, 1, 4), (0, 2, 4, 6), (1, 4, 1)).reshape(n, 16)
    scales = ((low & 0x0F) | ((high & 3) << 4)).astype(xp.int8) - 32
    dl = (d * scales.astype(xp.float32)).reshape(n, 16, 1)
    ql = _shifted(xp, qs.reshape(n, 2, 1, 32), (0, 2, 4, 6), (1, 1, 4, 1)).reshape(n, 16, 16) & 3
    hbit = _shifted(xp, hmask.reshape(n, 1, 1, 32), tuple(range(8)), (1, 1, 8, 1))
    hbit = hbit.reshape(n, 16, 16) & 1
    # A clear high bit means "subtract 4" (ggml stores the bit inverted).
    q = (ql.astype(xp.int8) - ((hbit ^ 1) << 2).astype(xp.int8)).astype(xp.float32)
    return (dl * q).reshape(n, QK_K)


def _k_scales(xp, packed):
    """The 8 six-bit (scale, min) pairs of a Q4_K/Q5_K block, ``(n, 12)`` -> two ``(n, 8)``.

    Bytes 0-3 hold scales 0-3 (low 6 bits), bytes 4-7 mins 0-3; scales and mins 4-7 have
    their low 4 bits in bytes 8-11 (scale: low nibble, min: high nibble) and their top 2
    bits in the top 2 bits of bytes 0-3 (scales) and 4-7 (mins).
    """
    a, m, c = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    scale = xp.concatenate([a & 0x3F, (c & 0x0F) | ((a >> 2) & 0x30)], axis=1)
    low = xp.concatenate([m & 0x3F, (c >> 4) | ((m >> 2) & 0x30)], axis=1)
    return scale, low


def _k_affine(xp, b, q):
    """``d * scale * q - dmin * min`` of a Q4_K/Q5_K block, 8 groups of 32 values."""
    n = b.shape[0]
    d, dmin = _f16(xp, b[:, :2]), _f16(xp, b[:, 2:4])
    scale, low = _k_scales(xp, b[:, 4:16])
    ds = (d * scale.astype(xp.float32)).reshape(n, 8, 1)
    dm = (dmin * low.astype(xp.float32)).reshape(n, 8, 1)
    return (ds * q.astype(xp.float32) - dm).reshape(n, QK_K)


def _q4_k(xp, b):
    n = b.shape[0]
    # Four chunks of 32 bytes; each gives 32 values from its low nibbles, then 32 from its high.
    q = _shifted(xp, b[:, 16:].reshape(n, 4, 1, 32), (0, 4), (1, 1, 2, 1)) & 0x0F
    return _k_affine(xp, b, q.reshape(n, 8, 32))


def _q5_k(xp, b):
    n = b.shape[0]
    ql = _shifted(xp, b[:, 48:].reshape(n, 4, 1, 32), (0, 4), (1, 1, 2, 1)) & 0x0F
    qh = _shifted(xp, b[:, 16:48].reshape(n, 1, 1, 32), tuple(range(8)), (1, 1, 8, 1)) & 1
    q = ql.reshape(n, 8, 32) | (qh.reshape(n, 8, 32) << 4)
    return _k_affine(xp, b, q)


def _q6_k(xp, b):
    n = b.shape[0]
    scales = xp.ascontiguousarray(b[:, 192:208]).view(xp.int8).astype(xp.float32)
    d = _f16(xp, b[:, 208:210])
    ds = (d * scales).reshape(n, 16, 1)
    # Two halves of 128 values: 64 bytes of low nibbles (read twice) and 32 bytes of high
    # 2-bit pairs (read four times).
    ql = _shifted(xp, b[:, :128].reshape(n, 2, 1, 64), (0, 4), (1, 1, 2, 1)) & 0x0F
    qh = _shifted(xp, b[:, 128:192].reshape(n, 2, 1, 32), (0, 2, 4, 6), (1, 1, 4, 1)) & 3
    q = (ql.reshape(n, 8, 32) | (qh.reshape(n, 8, 32) << 4)).astype(xp.int8) - 32
    return (ds * q.reshape(n, 16, 16).astype(xp.float32)).reshape(n, QK_K)


QUANT_TYPES: dict[str, QuantType] = {
    t.name: t
    for t in (
        QuantType("F32", 0, 1, 4, _f32),
        QuantType("F16", 1, 1, 2, _f16_values),
        QuantType("BF16", 30, 1, 2, _bf16),
        QuantType("Q4_0", 2, 32, 18, _q4_0),
        QuantType("Q4_1", 3, 32, 20, _q4_1),
        QuantType("Q5_0", 6, 32, 22, _q5_0),
        QuantType("Q5_1", 7, 32, 24, _q5_1),
        QuantType("Q8_0", 8, 32, 34, _q8_0),
        QuantType("Q2_K", 10, QK_K, 84, _q2_k),
        QuantType("Q3_K", 11, QK_K, 110, _q3_k),
        QuantType("Q4_K", 12, QK_K, 144, _q4_k),
        QuantType("Q5_K", 13, QK_K, 176, _q5_k),
        QuantType("Q6_K", 14, QK_K, 210, _q6_k),
    )
}
"""The supported types by name: block size, bytes per block and dequantization kernel."""

# Where each block type keeps its float16 scales and minimums (byte offsets in a block).
_HALF_OFFSETS = {
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
    "Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
}  # fmt: skip


def random_blocks(rng: np.random.Generator, qtype: str, n_blocks: int, scale: float = 1.0) -> np.ndarray:
    """``(n_blocks, bytes_per_block)`` uint8 blocks of random quants with finite scales.

    Random bytes everywhere, except the float16 scales and minimums, which are uniform in
    ``[-scale, scale]`` (random bits there would make NaN and inf), and F32/F16/BF16
    values, which are standard normal. For tests and benchmarks.

    Example:
        >>> blocks = random_blocks(np.random.default_rng(0), "Q4_K", 3)
        >>> blocks.shape, bool(np.isfinite(dequantize(blocks.reshape(-1), "Q4_K")).all())
        ((3, 144), True)
    """
    t = quant_type(qtype, "random_blocks")
    if t.block_size == 1:  # plain floats
        values = rng.standard_normal(n_blocks).astype(np.float32)
        if qtype == "F16":
            values = values.astype(np.float16)
        elif qtype == "BF16":
            values = (values.view(np.uint32) >> 16).astype(np.uint16)
        return values.view(np.uint8).reshape(n_blocks, t.bytes_per_block)
    blocks = rng.integers(0, 256, (n_blocks, t.bytes_per_block), dtype=np.uint8)
    for at in _HALF_OFFSETS[qtype]:
        half = rng.uniform(-scale, scale, n_blocks).astype(np.float16)
        blocks[:, at : at + 2] = half.view(np.uint8).reshape(n_blocks, 2)
    return blocks


# Values dequantized per kernel call: bounds the float32 temporaries (a few per value)
# to a few MB whatever the tensor's size.
_CHUNK_VALUES = 1 << 18


def quant_type(qtype: str, where: str = "fgrad.llm.quants") -> QuantType:
    """The :class:`QuantType` named ``qtype``; ValueError listing the supported ones."""
    t = QUANT_TYPES.get(qtype) if isinstance(qtype, str) else None
    if t is None:
        raise ValueError(
            f"{where}: tensor type {qtype!r} is not supported (supported: "
            f"{', '.join(QUANT_TYPES)})"
        )
    return t


def dequantize_blocks(blocks: Any, qtype: str) -> Any:
    """Dequantize ``(n, bytes_per_block)`` uint8 blocks to ``(n, block_size)`` float32.

    The array namespace (numpy or cupy) is ``blocks``'s own; the result lives beside it.

    Raises:
        ValueError: ``qtype`` is not a supported type, or ``blocks`` is not a uint8 array
            of shape ``(n, bytes_per_block)``.

    Example:
        >>> import numpy as np
        >>> blocks = np.zeros((2, 20), np.uint8)      # two Q4_1 blocks of zeros
        >>> dequantize_blocks(blocks, "Q4_1").shape
        (2, 32)
    """
    t = quant_type(qtype, "dequantize_blocks")
    if getattr(blocks, "dtype", None) != np.uint8 or blocks.ndim != 2 or blocks.shape[1] != t.bytes_per_block:
        raise ValueError(
            f"dequantize_blocks: {qtype} blocks must be a uint8 array of shape (n, "
            f"{t.bytes_per_block}); got {getattr(blocks, 'dtype', type(blocks).__name__)} of "
            f"shape {getattr(blocks, 'shape', None)}"
        )
    return t.kernel(backend.namespace_of(blocks), blocks)


def dequantize(data: Any, qtype: str, *, dtype: Any = np.float32) -> Any:
    """Dequantize a ggml tensor's bytes to floats, block by block, in bounded memory.

    Args:
        data: the tensor's bytes as a uint8 numpy or cupy array of shape
            ``(*rows, row_bytes)`` (the layout gguf's reader gives: rows in C order, the
            last axis one row of ``row_bytes = n / block_size * bytes_per_block`` bytes), or
            an F32/F16 array of the values themselves.
        qtype: the ggml type name (a key of :data:`QUANT_TYPES`: ``"Q4_1"``, ``"F16"``, ...).
        dtype: ``float32`` (exact: what ggml computes) or ``float16`` (rounded from it).

    Returns:
        ``(*rows, n)`` array of ``dtype`` in ``data``'s namespace, equal bit for bit (in
        float32) to ``gguf.quants.dequantize(data, qtype)``.

    Raises:
        ValueError: an unsupported ``qtype`` (the message lists the supported ones), a row
            that is no whole number of blocks, or a ``dtype`` other than float32/float16.

    Example:
        >>> import numpy as np
        >>> dequantize(np.float16([1.5, -2.0]).view(np.uint8), "F16")
        array([ 1.5, -2. ], dtype=float32)
    """
    t = quant_type(qtype, "dequantize")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float16):
        raise ValueError(f"dequantize: dtype must be float32 or float16, got {dtype}")
    xp = backend.namespace_of(data)
    if data.dtype != np.uint8:
        data = xp.ascontiguousarray(data).view(xp.uint8)
    if data.ndim == 0 or data.shape[-1] % t.bytes_per_block:
        raise ValueError(
            f"dequantize: a {qtype} row must be a whole number of {t.bytes_per_block}-byte "
            f"blocks; got a uint8 array of shape {tuple(data.shape)}"
        )
    rows = tuple(data.shape[:-1])
    n_blocks = data.size // t.bytes_per_block
    blocks = data.reshape(n_blocks, t.bytes_per_block)
    out = xp.empty((n_blocks, t.block_size), dtype=dtype)
    step = max(1, _CHUNK_VALUES // t.block_size)
    for start in range(0, n_blocks, step):  # chunks of many blocks: bounded temporaries
        out[start : start + step] = t.kernel(xp, blocks[start : start + step])
    return out.reshape(*rows, data.shape[-1] // t.bytes_per_block * t.block_size)


def q8_roundtrip(xp: Any, x: Any) -> Any:
    """``x`` rounded to int8 blocks of 32 along its last axis and back: the activations
    that products with ``act_quant`` weights multiply (llama.cpp's ``block_q8_1``, with a
    float32 scale).

    Each block gets ``d = max|x| / 127`` and ``q = rint(x * (127 / max|x|))`` in
    ``[-127, 127]`` (ties to even; zeros for a block of zeros), all in float32; the result
    is ``q * d``. A block holding NaN or an infinity becomes NaN. The compiled integer
    products (:mod:`fgrad.llm._q8_dot`) round every value the same way.

    Args:
        xp: the array namespace (numpy or cupy).
        x: ``(..., n)`` float32 array, ``n`` a multiple of 32.

    Returns:
        A float32 array of ``x``'s shape.

    Raises:
        ValueError: ``n`` is not a multiple of 32.

    Example:
        >>> import numpy as np
        >>> x = np.linspace(-1.0, 1.0, 32, dtype=np.float32)
        >>> y = q8_roundtrip(np, x)
        >>> float(np.abs(y - x).max()) <= 0.5 / 127, float(y[-1])
        (True, 1.0)
    """
    x = xp.asarray(x, dtype=xp.float32)
    n = x.shape[-1] if x.ndim else 0
    if n % 32:
        raise ValueError(
            f"q8_roundtrip: the last axis must be whole blocks of 32 values; got shape {tuple(x.shape)}"
        )
    blocks = x.reshape(*x.shape[:-1], n // 32, 32)
    amax = xp.max(xp.abs(blocks), axis=-1, keepdims=True)  # NaN where a value is NaN
    ok = xp.isfinite(amax)
    live = ok & (amax > 0)
    safe = xp.where(live, amax, xp.float32(1.0))
    q = xp.where(live, xp.rint(blocks * (xp.float32(127.0) / safe)), xp.float32(0.0))
    d = xp.where(ok, amax / xp.float32(127.0), xp.float32(xp.nan))
    return (q * d).astype(xp.float32, copy=False).reshape(x.shape)
