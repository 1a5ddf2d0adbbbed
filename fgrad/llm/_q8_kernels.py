"""The numba side of :mod:`fgrad.llm._q8_dot` (its docstring says what these compute),
imported only where numba is installed: module-level functions, so that numba's disk cache
finds them in the next process (see :mod:`fgrad.llm._qmv_kernels`).

``kind`` selects the weights' type at run time, once a row: 0 for Q4_1, 1 for Q8_0, with
``nbytes`` the bytes of one of its blocks (20, 34).
"""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from fgrad.llm._q8_dot import _row_function


@intrinsic
def row(typingctx, kind, blocks, w_off, qa, a_off, da, sa, s_off, n_blocks):  # noqa: ARG001
    """``row(kind, blocks, w_offset, qa, a_offset, da, sa, s_offset, n_blocks) -> float32``:
    ``_row_function`` of the weights' type on the arrays' data at those element offsets."""

    def codegen(context, builder, signature, args):
        tys = signature.args

        def data(i):
            return context.make_array(tys[i])(context, builder, args[i]).data

        i8p = ir.IntType(8).as_pointer()
        w = builder.gep(builder.bitcast(data(1), i8p), [args[2]])
        a = builder.gep(builder.bitcast(data(3), i8p), [args[4]])
        d = builder.gep(data(5), [args[7]])
        s = builder.gep(data(6), [args[7]])
        operands = [w, a, d, s, args[8]]
        result = cgutils.alloca_once(builder, ir.FloatType())
        is_q4_1 = builder.icmp_signed("==", args[0], ir.Constant(args[0].type, 0))
        with builder.if_else(is_q4_1) as (q4_1, q8_0):
            with q4_1:
                builder.store(builder.call(_row_function(builder.module, "Q4_1"), operands), result)
            with q8_0:
                builder.store(builder.call(_row_function(builder.module, "Q8_0"), operands), result)
        return builder.load(result)

    sig = types.float32(types.int64, blocks, types.int64, qa, types.int64, da, sa, types.int64, types.int64)
    return sig, codegen


@numba.njit(cache=True, nogil=True)
def quantize(x, qa, da, sa):
    # The rows of float32 x as int8 blocks, in plain IEEE arithmetic (no fastmath) as
    # fgrad.llm.quants.q8_roundtrip rounds them.
    for r in range(x.shape[0]):
        for b in range(x.shape[1] // 32):
            amax = np.float32(0.0)
            bad = False
            for j in range(32):
                v = abs(x[r, 32 * b + j])
                bad = bad or not v < np.inf  # NaN or infinite
                amax = max(amax, v)
            total = 0
            if bad or amax == 0:
                for j in range(32):
                    qa[r, 32 * b + j] = 0
            else:
                inv = np.float32(127.0) / amax
                for j in range(32):
                    q = np.int8(np.rint(x[r, 32 * b + j] * inv))
                    qa[r, 32 * b + j] = q
                    total += q
            d = np.float32(np.nan) if bad else amax / np.float32(127.0)
            da[r, b] = d
            sa[r, b] = d * np.float32(total)


@numba.njit(cache=True, nogil=True)
def activations(x):
    n_blocks = x.shape[1] // 32
    qa = np.empty(x.shape, np.int8)
    da = np.empty((x.shape[0], n_blocks), np.float32)
    sa = np.empty((x.shape[0], n_blocks), np.float32)
    quantize(x, qa, da, sa)
    return qa, da, sa


@numba.njit(cache=True, nogil=True)
def rounded(x):
    qa, da, _ = activations(x)
    out = np.empty(x.shape, np.float32)
    for r in range(x.shape[0]):
        for b in range(x.shape[1] // 32):
            for j in range(32):
                out[r, 32 * b + j] = np.float32(qa[r, 32 * b + j]) * da[r, b]
    return out


@numba.njit(cache=True, nogil=True)
def rows_of(qa, da, sa, blocks, kind, nbytes, out, off, start, stop):  # rows off + start .. stop
    n_blocks = blocks.shape[1]
    for o in range(start, stop):
        for r in range(qa.shape[0]):
            out[r, off + o] = row(kind, blocks, o * n_blocks * nbytes, qa, r * n_blocks * 32,
                                  da, sa, r * n_blocks, n_blocks)


@numba.njit(cache=True, nogil=True)
def chunk(qa, da, sa, blocks, kind, nbytes, out, offsets, c, n_chunks):  # piece c of each matrix
    for m in range(len(blocks)):
        n = blocks[m].shape[0]
        rows_of(qa, da, sa, blocks[m], kind, nbytes, out, offsets[m], c * n // n_chunks,
                (c + 1) * n // n_chunks)


@numba.njit(cache=True, nogil=True)
def serial(x, blocks, kind, nbytes, out, offsets, n_chunks):
    qa, da, sa = activations(x)
    chunk(qa, da, sa, blocks, kind, nbytes, out, offsets, 0, 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def parallel(x, blocks, kind, nbytes, out, offsets, n_chunks):
    qa, da, sa = activations(x)
    for c in numba.prange(n_chunks):
        chunk(qa, da, sa, blocks, kind, nbytes, out, offsets, c, n_chunks)
