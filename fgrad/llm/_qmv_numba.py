"""Products with kept-quantized weights read straight from their blocks, compiled by numba.

Decoding a token multiplies one activation row by every weight matrix. ``quantized_matmul``
dequantizes each chunk of rows to float32 first, so every step writes and reads the whole
float32 matrix again; here, for Q4_1 and Q8_0 (the types of the bundled SmolLM2 file), each
output is accumulated from the packed bytes directly, using the block identity

    sum_j x_j (d q_j + m) = d * sum_j q_j x_j + m * sum_j x_j

so a step reads 20 (Q4_1) or 34 (Q8_0) bytes per 32 weights and nothing else. Each output
accumulates in 16 (Q4_1) or 32 (Q8_0) float32 lanes, one per byte position of a block,
summed once at the end: the lanes vectorise across the block (a reduction per block,
as a first version did, cost 7-10x more) and float32 accumulation is what BLAS's float32
matrix-vector product does too; results agree with dequantize-then-matmul to float32
rounding (the tests compare them). Block scales are binary16: a 65,536-entry table gives
their float32 values. One thread: on the shared 2-core machine numba's parallel loops
fought the other processes and were slower than one thread. Used for up to
:data:`MAX_ROWS` activation rows when numba is installed and ``fgrad.config.cpu_compile``
is on; anything else takes the chunked path.

Reference: the block layouts of ggml's ``block_q4_1`` and ``block_q8_0``
(``ggml/src/ggml-common.h``), the same as :mod:`fgrad.llm.quants` dequantizes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fgrad.transforms import cpu_compile

__all__ = ["MAX_ROWS", "matvec"]

MAX_ROWS = 16  # beyond a few rows the chunked float32 matmul (BLAS) wins


@functools.cache
def matvec(qtype: str) -> Callable | None:
    """``f(x, blocks) -> (rows, out)`` float32 for ``x`` ``(rows, in)`` float32 and the
    ``(out, in // 32, bytes)`` uint8 blocks of a ``qtype`` weight; None without numba or
    for another type."""
    if qtype not in ("Q4_1", "Q8_0") or not cpu_compile.available():
        return None
    import numba
    import numpy as np

    if qtype == "Q4_1":

        @numba.njit(cache=True, nogil=True, fastmath=True)
        def kernel(x, blocks, halves, out):
            rows, n_blocks = x.shape[0], blocks.shape[1]
            acc = np.zeros(16, np.float32)
            for o in range(blocks.shape[0]):
                for r in range(rows):
                    acc[:] = 0.0
                    for b in range(n_blocks):
                        blk = blocks[o, b]
                        d = halves[np.int32(blk[0]) | (np.int32(blk[1]) << 8)]
                        m = halves[np.int32(blk[2]) | (np.int32(blk[3]) << 8)]
                        base = 32 * b
                        for j in range(16):  # byte j holds weights j (low) and j + 16 (high)
                            q = np.int32(blk[4 + j])
                            acc[j] += (d * np.float32(q & 15) + m) * x[r, base + j] + (
                                d * np.float32(q >> 4) + m
                            ) * x[r, base + 16 + j]
                    out[r, o] = acc.sum()

    else:

        @numba.njit(cache=True, nogil=True, fastmath=True)
        def kernel(x, blocks, halves, out):
            rows, n_blocks = x.shape[0], blocks.shape[1]
            acc = np.zeros(32, np.float32)
            for o in range(blocks.shape[0]):
                for r in range(rows):
                    acc[:] = 0.0
                    for b in range(n_blocks):
                        blk = blocks[o, b]
                        d = halves[np.int32(blk[0]) | (np.int32(blk[1]) << 8)]
                        base = 32 * b
                        for j in range(32):
                            acc[j] += d * np.float32(np.int8(blk[2 + j])) * x[r, base + j]
                    out[r, o] = acc.sum()

    # Every binary16 bit pattern's value, so a block's scale is one table read (numpy's
    # float16 conversion is IEEE's; the 256 KB table stays in cache).
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)

    def run(x: Any, blocks: Any) -> Any:
        out = np.empty((x.shape[0], blocks.shape[0]), np.float32)
        kernel(np.ascontiguousarray(x), np.ascontiguousarray(blocks), halves, out)
        return out

    return run
