"""The numba loop of :mod:`fgrad.transforms.fusion_attention` (its docstring says what it
computes), imported only where numba is installed: a module-level function, so that
numba's disk cache finds it in the next process.

Reassociation only (vectorised dot products and sums); no finite-math assumptions, so NaN
and infinity propagate as in the separate ops.
"""

import numba
import numpy as np
from numba.extending import overload

from fgrad.transforms.fusion_numba import _math_functions

_math = _math_functions()
_exp32, _exp64 = _math[("exp", np.dtype(np.float32))], _math[("exp", np.dtype(np.float64))]


def exp_of(x):  # the vectorisable exp of x's float type (fusion_numba's)
    raise NotImplementedError("compiled code only")


@overload(exp_of)
def _exp_of(x):
    fn = _exp32 if x == numba.types.float32 else _exp64
    return lambda x: fn(x)


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def attend(q, k, v, mask, scale, fill, zero, lowest, out):
    # q (B, m, d), k (B, n, d), v (B, n, dv), out (B, m, dv); mask (1 or B, 1 or m,
    # n) bool, its axes of length 1 broadcast. Each head's keys and values are read
    # once for all m query rows (they come from memory: a step reads every layer's
    # cache), and each loop is simple enough for LLVM to vectorise.
    n, m, d, dv = k.shape[1], q.shape[1], q.shape[2], v.shape[2]
    e = np.empty((m, n), q.dtype)
    acc = np.empty((m, dv), q.dtype)
    total = np.empty(m, q.dtype)
    for b in range(q.shape[0]):
        mb = b if mask.shape[0] > 1 else 0
        for j in range(n):
            for i in range(m):
                s = zero
                for t in range(d):
                    s += q[b, i, t] * k[b, j, t]
                e[i, j] = s
        for i in range(m):
            mi = i if mask.shape[1] > 1 else 0
            top = lowest
            for j in range(n):
                s = e[i, j] * scale if mask[mb, mi, j] else fill
                e[i, j] = s
                top = s if s > top else top  # a NaN score makes the row NaN below
            tot = zero
            for j in range(n):
                w = exp_of(e[i, j] - top)
                e[i, j] = w
                tot += w
            total[i] = tot
        acc[:] = zero
        for j in range(n):
            for i in range(m):
                w = e[i, j]
                for t in range(dv):
                    acc[i, t] += w * v[b, j, t]
        for i in range(m):
            for t in range(dv):  # the softmax's division, once per value instead
                out[b, i, t] = acc[i, t] / total[i]
