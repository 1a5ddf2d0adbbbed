"""Products with kept-quantized weights read straight from their blocks, compiled by numba.

Decoding a token multiplies one activation row by every weight matrix. ``quantized_matmul``
dequantizes each chunk of rows to float32 first, so every step writes and reads the whole
float32 matrix again; here, for Q4_1 and Q8_0 (the types of the bundled SmolLM2 file), each
output is accumulated from the packed bytes directly, using the block identity

    sum_j x_j (d q_j + m) = d * sum_j q_j x_j + m * sum_j x_j

so a step reads 20 (Q4_1) or 34 (Q8_0) bytes per 32 weights and nothing else. One thread:
on the shared 2-core machine numba's parallel loops fought the other processes and were
slower than one thread. Sums within a block are float32 (reassociated, so they vectorise)
and across blocks float64, so results agree with dequantize-then-matmul to float32
rounding (the tests compare them). Used for up to
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

    @numba.njit(inline="always")
    def half(lo, hi):  # IEEE binary16 from its two little-endian bytes
        bits = np.int64(lo) | (np.int64(hi) << 8)
        exponent = (bits >> 10) & 0x1F
        mantissa = bits & 0x3FF
        if exponent == 0:
            value = mantissa * 2.0**-24
        elif exponent == 31:
            value = np.inf if mantissa == 0 else np.nan
        else:
            value = (1.0 + mantissa / 1024.0) * 2.0 ** (exponent - 15)
        return -value if bits >> 15 else value

    if qtype == "Q4_1":

        @numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
        def kernel(x, blocks, out):
            rows = x.shape[0]
            for o in range(blocks.shape[0]):
                for r in range(rows):
                    acc = 0.0
                    for b in range(blocks.shape[1]):
                        blk = blocks[o, b]
                        d, m = half(blk[0], blk[1]), half(blk[2], blk[3])
                        base = 32 * b
                        sq = np.float32(0.0)
                        sx = np.float32(0.0)
                        for j in range(16):
                            q = blk[4 + j]
                            lo, hi = x[r, base + j], x[r, base + 16 + j]
                            sq += np.float32(q & 15) * lo + np.float32(q >> 4) * hi
                            sx += lo + hi
                        acc += d * sq + m * sx
                    out[r, o] = acc

    else:

        @numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
        def kernel(x, blocks, out):
            rows = x.shape[0]
            for o in range(blocks.shape[0]):
                for r in range(rows):
                    acc = 0.0
                    for b in range(blocks.shape[1]):
                        blk = blocks[o, b]
                        d = half(blk[0], blk[1])
                        base = 32 * b
                        sq = np.float32(0.0)
                        for j in range(32):
                            q = np.int32(blk[2 + j])
                            sq += np.float32(q - ((q >> 7) << 8)) * x[r, base + j]  # int8
                        acc += d * sq
                    out[r, o] = acc

    def run(x: Any, blocks: Any) -> Any:
        out = np.empty((x.shape[0], blocks.shape[0]), np.float32)
        kernel(np.ascontiguousarray(x), np.ascontiguousarray(blocks), out)
        return out

    return run
