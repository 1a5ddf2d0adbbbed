"""Products with kept-quantized weights read straight from their blocks, compiled by numba.

Decoding a token multiplies one activation row by every weight matrix. ``quantized_matmul``
dequantizes each chunk of rows to float32 first, so every step writes and reads the whole
float32 matrix again; here, for Q4_1 and Q8_0 (the types of the bundled SmolLM2 file), each
output is accumulated from the packed bytes directly, so a step reads 20 (Q4_1) or 34
(Q8_0) bytes per 32 weights and nothing else.

* Each output accumulates in float32 lanes, one per byte position of a block (16 for
  Q4_1, whose byte ``j`` holds weights ``j`` and ``j + 16``; 32 for Q8_0), summed once at
  the end: the lanes vectorise across the block (a reduction per block, as a first version
  did, cost 7-10x more), and float32 accumulation is what BLAS's float32 matrix-vector
  product does too. Results agree with dequantize-then-matmul to float32 rounding (the
  tests compare them).
* Q4_1's offset ``m`` enters once per block through the identity
  ``sum_j x_j (d q_j + m) = d sum_j q_j x_j + m sum_j x_j`` (the block sums of ``x``
  are formed once per call), and the Q4_1 loop computes two output rows at a time, so
  each activation lane is loaded once for both: 1.35x faster than one row at a time
  (0.48 against 0.65 ms for the seven matrices of a SmolLM2 layer, one thread). For Q8_0
  two rows at a time measured slower, so its loop takes one.
* Block scales are binary16, converted by one ``vcvtph2ps`` each (``half`` in
  :mod:`fgrad.llm._qmv_kernels`, where the loops are, so that numba's disk cache finds
  them in the next process).
* Threads: a matrix of at least :data:`PARALLEL_MIN` weights also has a loop that splits
  its rows in one chunk per numba thread (``prange``), each running the same compiled
  loop as one thread does, so the values do not depend on the thread count;
  :mod:`fgrad.transforms.numba_threads` picks the serial or the parallel loop at each
  call (whichever has been faster lately, one parallel kernel at a time).

Used for up to :data:`MAX_ROWS` activation rows when numba is installed and
``fgrad.config.cpu_compile`` is on; anything else takes the chunked path.

Reference: the block layouts of ggml's ``block_q4_1`` and ``block_q8_0``
(``ggml/src/ggml-common.h``), the same as :mod:`fgrad.llm.quants` dequantizes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fgrad.transforms import cpu_compile, numba_threads

__all__ = ["MAX_ROWS", "PARALLEL_MIN", "dequantize", "matvec", "side_by_side"]

MAX_ROWS = 16  # beyond a few rows the chunked float32 matmul (BLAS) wins
PARALLEL_MIN = 1 << 17  # weights: below this a parallel region's start costs more than it saves


@functools.cache
def dequantize(qtype: str) -> Callable | None:
    """``f(blocks) -> (rows, in)`` float32 from the ``(rows, in // 32, bytes)`` uint8 blocks of
    a Q4_1 or Q8_0 weight, equal to :func:`fgrad.llm.quants.dequantize` to the bit and 10x
    faster (0.45-0.62 against 5-6 ns a weight, one thread); None without numba or for another type.

    Example:
        >>> import numpy as np, pytest
        >>> _ = pytest.importorskip("numba")
        >>> from fgrad.llm import quants
        >>> blocks = quants.random_blocks(np.random.default_rng(0), "Q8_0", 4).reshape(2, 2, 34)
        >>> want = quants.dequantize(blocks.reshape(4, 34), "Q8_0").reshape(2, 64)
        >>> bool(np.array_equal(dequantize("Q8_0")(blocks), want))
        True
    """
    if qtype not in ("Q4_1", "Q8_0") or not cpu_compile.available():
        return None
    import numpy as np

    from fgrad.llm import _qmv_kernels as k

    kernel = k.dequantize_q4_1 if qtype == "Q4_1" else k.dequantize_q8_0

    def run(blocks: Any) -> Any:
        blocks = np.ascontiguousarray(blocks)
        out = np.empty((blocks.shape[0], blocks.shape[1] * 32), np.float32)
        kernel(blocks, blocks.view(np.uint16), out)
        return out

    return run


@functools.cache
def matvec(qtype: str) -> Callable | None:
    """``f(x, blocks) -> (rows, out)`` float32 for ``x`` ``(rows, in)`` float32 and a tuple
    of the ``(out_i, in // 32, bytes)`` uint8 blocks of ``qtype`` weights: the products
    with every weight side by side (``out`` is the sum of the ``out_i``), in one loop and
    one parallel region; None without numba or for another type.

    Example:
        >>> import numpy as np, pytest
        >>> _ = pytest.importorskip("numba")
        >>> from fgrad.llm import quants
        >>> blocks = quants.random_blocks(np.random.default_rng(0), "Q4_1", 4).reshape(2, 2, 20)
        >>> w = quants.dequantize(blocks.reshape(4, 20), "Q4_1").reshape(2, 64)
        >>> x = np.ones((1, 64), np.float32)
        >>> bool(np.allclose(matvec("Q4_1")(x, (blocks,)), x @ w.T, rtol=1e-5))
        True
        >>> matvec("Q4_1")(x, (blocks, blocks[:1])).shape
        (1, 3)
    """
    if qtype not in ("Q4_1", "Q8_0") or not cpu_compile.available():
        return None
    import numpy as np

    from fgrad.llm import _qmv_kernels as k

    loops = (k.q4_1_serial, k.q4_1_parallel) if qtype == "Q4_1" else (k.q8_0_serial, k.q8_0_parallel)
    return side_by_side(*loops, lambda blocks: (tuple(b.view(np.uint16) for b in blocks),))


def side_by_side(serial: Callable, parallel: Callable, views: Callable | None = None) -> Callable:
    """``run(x, blocks) -> (rows, out_1 + out_2 + ...)`` float32 over a product's two
    compiled loops ``f(x, blocks, *views(blocks), out, offsets, n_chunks)``: contiguous
    operands, the output offsets and :class:`~fgrad.transforms.numba_threads.LoopChoice`
    kept per shape, the parallel loop offered from :data:`PARALLEL_MIN` weights on (this
    module's products and :mod:`fgrad.llm._q8_dot`'s)."""
    import numpy as np

    shapes: dict = {}  # (LoopChoice, output offsets) per shape of (x, *blocks)

    def run(x: Any, blocks: tuple) -> Any:
        x = np.ascontiguousarray(x, np.float32)
        blocks = tuple(np.ascontiguousarray(b) for b in blocks)
        sizes = [b.shape[0] for b in blocks]
        out = np.empty((x.shape[0], sum(sizes)), np.float32)
        key = (x.shape, *(b.shape for b in blocks))
        known = shapes.get(key)
        if known is None:
            offsets = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
            known = shapes[key] = (numba_threads.LoopChoice(), offsets)
        choice, offsets = known
        big = sum(sizes) * blocks[0].shape[1] * 32 >= PARALLEL_MIN
        args = (x, blocks, *(views(blocks) if views else ()), out, offsets)
        numba_threads.run(serial, parallel if big else None, args, choice)
        return out

    return run


def __dir__() -> list[str]:
    return list(__all__)
