"""The numba loops of :mod:`fgrad.llm._qmv_numba` (the module docstring there says what
they compute and why), imported only where numba is installed.

They are module-level functions so that numba's disk cache (``cache=True``) finds them in
the next process: made inside a function, as they first were, each kept the compiled
functions it calls in its closure, which numba's cache keys by value and never matched
again, so every process compiled them anew (15-20 s before a kept-quantized model's first
token).
"""

import numba
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

fast = numba.njit(cache=True, nogil=True, fastmath=True)
# Plain IEEE arithmetic (no fastmath: no fused multiply-add), so the dequantized values
# are those of fgrad.llm.quants' numpy kernels to the bit.
plain = numba.njit(cache=True, nogil=True)


@intrinsic
def half(typingctx, bits):  # noqa: ARG001 (numba's signature)
    # ``half(bits)``: the float32 value of a binary16 given as its uint16 bits.
    # Kernels read a block's scales through a uint16 view of the blocks (``blocks.view(
    # np.uint16)``, every layout here puts them at even offsets). The conversion is LLVM's
    # ``fpext`` from ``half``, one ``vcvtph2ps`` and exact for every binary16. An earlier
    # version looked the bits up in a 65,536-entry float32 table; once the weights stream
    # from memory, the table competes with them for the cache, and the Q4_1 product ran
    # 1.9x slower.
    def codegen(context, builder, signature, args):  # noqa: ARG001
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return numba.types.float32(numba.types.uint16), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def nibble(q):
    # A 4-bit value (held in any integer type) as float32, converted from int32. numba
    # types ``int32 & 15`` as int64, and an int64 conversion vectorises to 8 lanes a
    # register instead of 16: the Q4_1 product ran 1.4x slower.
    return np.float32(np.int32(q))


@fast
def q4_1_pairs(x, sums, blocks, h16, out, off, start, stop):  # rows off + 2 start .. 2 stop
    rows, n_out, n_blocks = x.shape[0], blocks.shape[0], blocks.shape[1]
    acc0 = np.zeros(16, np.float32)
    acc1 = np.zeros(16, np.float32)
    for p in range(start, stop):
        o0 = 2 * p
        o1 = min(o0 + 1, n_out - 1)  # an odd last row is computed twice
        for r in range(rows):
            acc0[:] = 0.0
            acc1[:] = 0.0
            m0 = np.float32(0.0)
            m1 = np.float32(0.0)
            for b in range(n_blocks):
                b0 = blocks[o0, b]
                b1 = blocks[o1, b]
                d0 = half(h16[o0, b, 0])
                d1 = half(h16[o1, b, 0])
                base = 32 * b
                for j in range(16):
                    lo = x[r, base + j]
                    hi = x[r, base + 16 + j]
                    q0 = np.int32(b0[4 + j])
                    q1 = np.int32(b1[4 + j])
                    acc0[j] += d0 * (nibble(q0 & 15) * lo + nibble(q0 >> 4) * hi)
                    acc1[j] += d1 * (nibble(q1 & 15) * lo + nibble(q1 >> 4) * hi)
                m0 += half(h16[o0, b, 1]) * sums[r, b]
                m1 += half(h16[o1, b, 1]) * sums[r, b]
            out[r, off + o0] = acc0.sum() + m0
            out[r, off + o1] = acc1.sum() + m1


@fast
def q4_1_block_sums(x, n_blocks):
    sums = np.zeros((x.shape[0], n_blocks), np.float32)
    for r in range(x.shape[0]):
        for b in range(n_blocks):
            s = np.float32(0.0)
            for j in range(32):
                s += x[r, 32 * b + j]
            sums[r, b] = s
    return sums


@fast
def q4_1_chunk(x, sums, blocks, h16, out, offsets, c, n_chunks):  # piece c of every matrix
    for m in range(len(blocks)):
        n = (blocks[m].shape[0] + 1) // 2
        q4_1_pairs(x, sums, blocks[m], h16[m], out, offsets[m], c * n // n_chunks, (c + 1) * n // n_chunks)


@fast
def q4_1_serial(x, blocks, h16, out, offsets, n_chunks):
    sums = q4_1_block_sums(x, blocks[0].shape[1])
    q4_1_chunk(x, sums, blocks, h16, out, offsets, 0, 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def q4_1_parallel(x, blocks, h16, out, offsets, n_chunks):
    sums = q4_1_block_sums(x, blocks[0].shape[1])
    for c in numba.prange(n_chunks):
        q4_1_chunk(x, sums, blocks, h16, out, offsets, c, n_chunks)


@fast
def q8_0_rows(x, blocks, h16, out, off, start, stop):  # output rows off + start .. stop
    n_blocks = blocks.shape[1]
    acc = np.zeros(32, np.float32)
    for o in range(start, stop):
        for r in range(x.shape[0]):
            acc[:] = 0.0
            for b in range(n_blocks):
                blk = blocks[o, b]
                d = half(h16[o, b, 0])
                base = 32 * b
                for j in range(32):
                    acc[j] += d * (np.float32(np.int8(blk[2 + j])) * x[r, base + j])
            out[r, off + o] = acc.sum()


@fast
def q8_0_chunk(x, blocks, h16, out, offsets, c, n_chunks):  # piece c of every matrix
    for m in range(len(blocks)):
        n = blocks[m].shape[0]
        q8_0_rows(x, blocks[m], h16[m], out, offsets[m], c * n // n_chunks, (c + 1) * n // n_chunks)


@fast
def q8_0_serial(x, blocks, h16, out, offsets, n_chunks):
    q8_0_chunk(x, blocks, h16, out, offsets, 0, 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def q8_0_parallel(x, blocks, h16, out, offsets, n_chunks):
    for c in numba.prange(n_chunks):
        q8_0_chunk(x, blocks, h16, out, offsets, c, n_chunks)


@plain
def dequantize_q4_1(blocks, h16, out):
    for o in range(blocks.shape[0]):
        for b in range(blocks.shape[1]):
            blk = blocks[o, b]
            d = half(h16[o, b, 0])
            m = half(h16[o, b, 1])
            base = 32 * b
            for j in range(16):
                q = np.int32(blk[4 + j])
                out[o, base + j] = d * nibble(q & 15) + m
                out[o, base + 16 + j] = d * nibble(q >> 4) + m


@plain
def dequantize_q8_0(blocks, h16, out):
    for o in range(blocks.shape[0]):
        for b in range(blocks.shape[1]):
            blk = blocks[o, b]
            d = half(h16[o, b, 0])
            base = 32 * b
            for j in range(32):
                out[o, base + j] = np.float32(np.int8(blk[2 + j])) * d
