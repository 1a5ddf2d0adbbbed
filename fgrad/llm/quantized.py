"""Quantized weights kept quantized: the ``QuantizedWeight`` pytree leaf and ``linear``.

A :class:`QuantizedWeight` holds a ggml tensor's packed blocks (uint8) with its type and
logical shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import tree
from fgrad.llm import quants

__all__ = ["QuantizedWeight"]


class QuantizedWeight:
    """A weight matrix kept in a ggml block format: packed blocks, type and logical shape.

    A pytree node with one leaf, its uint8 ``blocks`` (so ``jit`` traces them as an input
    and ``grad`` treats them as the integer data they are: never differentiated).

    Args:
        blocks: uint8 array (numpy, cupy or Tensor) of shape
            ``(*rows, in_features / block_size, bytes_per_block)``.
        qtype: the ggml type name (``"Q4_1"``, ``"Q8_0"``, ...; see
            :data:`fgrad.llm.quants.QUANT_TYPES`).
        shape: the logical shape ``(*rows, in_features)`` (``(out, in)`` for a linear
            weight).

    Raises:
        ValueError: an unsupported ``qtype``, or ``blocks`` whose shape or dtype does not
            match ``qtype`` and ``shape``.

    Example:
        >>> w = QuantizedWeight(np.zeros((3, 2, 20), np.uint8), "Q4_1", (3, 64))
        >>> w.shape, w.dtype, w.nbytes, w.dequantize().shape
        ((3, 64), dtype('float32'), 120, (3, 64))
    """

    __slots__ = ("blocks", "qtype", "shape")

    def __init__(self, blocks: Any, qtype: str, shape: tuple[int, ...]):
        t = quants.quant_type(qtype, "QuantizedWeight")
        shape = tuple(int(d) for d in shape)
        if not shape or shape[-1] % t.block_size:
            raise ValueError(
                f"QuantizedWeight: a {qtype} row holds whole blocks of {t.block_size} values; "
                f"shape {shape} does not"
            )
        want = (*shape[:-1], shape[-1] // t.block_size, t.bytes_per_block)
        got = tuple(getattr(blocks, "shape", ()))
        dtype = getattr(blocks, "dtype", None)
        if got != want or dtype != np.uint8:
            raise ValueError(
                f"QuantizedWeight: {qtype} blocks of a {shape} weight must be uint8 of shape "
                f"{want}; got {dtype} of shape {got}"
            )
        self.blocks = blocks
        self.qtype = qtype
        self.shape = shape

    @property
    def dtype(self) -> np.dtype:
        """The logical dtype, float32 (what :meth:`dequantize` gives)."""
        return np.dtype(np.float32)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the packed blocks."""
        return int(np.prod(self.blocks.shape)) if hasattr(self.blocks, "shape") else 0

    def dequantize(self, dtype: Any = np.float32) -> Any:
        """The whole weight as a float32 (or float16) array of :attr:`shape`."""
        blocks = getattr(self.blocks, "_data", self.blocks)
        row = blocks.reshape(*self.shape[:-1], -1)
        return quants.dequantize(row, self.qtype, dtype=dtype)

    def __repr__(self) -> str:
        return f"QuantizedWeight({self.qtype}, shape={self.shape}, {self.nbytes} bytes)"


tree.register(
    QuantizedWeight,
    lambda w: ((w.blocks,), (w.qtype, w.shape)),
    lambda aux, children: _unflatten(aux, children),
)


def _unflatten(aux: tuple, children: Any) -> QuantizedWeight:
    # Transforms rebuild the node with tracers or other leaves (None, ShapeDtype) in place
    # of the blocks: no checks then.
    w = object.__new__(QuantizedWeight)
    (w.blocks,) = children
    w.qtype, w.shape = aux
    return w
