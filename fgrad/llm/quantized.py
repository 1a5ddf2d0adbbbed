"""Quantized weights kept quantized: ``QuantizedWeight``, the ``quantized_matmul`` op, ``linear``.

A :class:`QuantizedWeight` holds a ggml tensor's packed blocks (uint8, about ``bits / 32``
of the float32 memory) with its type and logical shape. :func:`linear` multiplies
activations by a dense or a quantized weight; for a quantized one it calls the registry op
``quantized_matmul``, which dequantizes the weight a chunk of rows at a time inside the
product (about 2 MB of float32 at once), so the whole float matrix never exists. The op is
differentiable in the activations (reverse and forward mode, to any order: its derivative
is the same op with the weight transposed), batches under ``vmap`` and traces under ``jit``;
the weight is integer data and gets no derivative. :func:`linear_many` multiplies one
activation by several weights of one type in one op, ``quantized_matmul_many`` (a block's
query, key and value projections: one compiled loop when decoding).

The block formats are ggml's (see :mod:`fgrad.llm.quants`).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np

from fgrad import tree
from fgrad._config import config
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.llm import _q8_dot, _qmv_numba, quants
from fgrad.tensor import ShapeDtype

__all__ = [
    "QuantizedWeight",
    "embedding",
    "int8_activations",
    "linear",
    "linear_many",
    "quantized_matmul",
    "quantized_matmul_many",
    "quantized_take",
]

# Bytes of float32 weights dequantized at once by quantized_matmul (a chunk of rows).
CHUNK_BYTES = 2 << 20


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

    # qtype and shape live in one tuple, the pytree node's static data: flattening hands
    # out the same object every time, which jit's argument walk keys by identity.
    __slots__ = ("_aux", "blocks")

    def __init__(self, blocks: Any, qtype: str, shape: tuple[int, ...], act_quant: bool = False):
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
        if type(act_quant) is not bool:
            raise TypeError(f"QuantizedWeight: act_quant must be a bool, got {act_quant!r}")
        if act_quant and shape[-1] % 32:
            raise ValueError(
                f"QuantizedWeight: act_quant rounds activations in blocks of 32; a weight of "
                f"shape {shape} has {shape[-1]} inputs"
            )
        self.blocks = blocks
        self._aux = (qtype, shape, act_quant)

    @property
    def qtype(self) -> str:
        """The ggml type name."""
        return self._aux[0]

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape ``(*rows, in_features)``."""
        return self._aux[1]

    @property
    def act_quant(self) -> bool:
        """Whether products round the activations to int8 blocks first (see
        :func:`int8_activations`)."""
        return self._aux[2]

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
        act = ", int8 activations" if self.act_quant else ""
        return f"QuantizedWeight({self.qtype}, shape={self.shape}, {self.nbytes} bytes{act})"


tree.register(
    QuantizedWeight,
    lambda w: ((w.blocks,), w._aux),
    lambda aux, children: _unflatten(aux, children),
)


def _unflatten(aux: tuple, children: Any) -> QuantizedWeight:
    # Transforms rebuild the node with tracers or other leaves (None, ShapeDtype) in place
    # of the blocks: no checks then.
    w = object.__new__(QuantizedWeight)
    (w.blocks,) = children
    w._aux = aux
    return w


# -------------------------------------------------------------------- quantized_matmul


def _dequantize_chunk(xp: Any, blocks: Any, t: quants.QuantType) -> Any:
    """``(rows, n_blocks, bytes_per_block)`` uint8 -> ``(rows, n_blocks * block_size)`` float32.

    The one place quantized_matmul dequantizes (tests wrap it to see the chunk sizes).
    """
    rows, n_blocks = blocks.shape[0], blocks.shape[1]
    flat = t.kernel(xp, blocks.reshape(rows * n_blocks, t.bytes_per_block))
    return flat.reshape(rows, n_blocks * t.block_size)


def _chunk_rows(in_features: int) -> int:
    return max(1, CHUNK_BYTES // (4 * max(in_features, 1)))


def _check(x_shape, x_dtype, b_shape, b_dtype, qtype, shape, transpose, name="quantized_matmul") -> tuple:
    """The output shape; ShapeError/DTypeError naming quantized_matmul for bad input.

    Well-typed parameters go through a cache: a decode step checks the same few hundred
    products every token, and checking one again cost 1.4 us. (Only those: a cache
    would take ``(576.0, 576)`` for the ``(576, 576)`` it has seen.)"""
    typed = type(qtype) is str and type(transpose) is bool and type(shape) is tuple
    if typed and len(shape) == 2 and all(type(d) is int for d in shape):
        return _checked(tuple(x_shape), x_dtype, tuple(b_shape), b_dtype, qtype, shape, transpose, name)
    return _check_params(x_shape, x_dtype, b_shape, b_dtype, qtype, shape, transpose, name)


@functools.lru_cache(maxsize=1024)
def _checked(*args) -> tuple:
    return _check_params(*args)


def _check_params(x_shape, x_dtype, b_shape, b_dtype, qtype, shape, transpose, name) -> tuple:
    t = quants.QUANT_TYPES.get(qtype) if isinstance(qtype, str) else None
    if t is None:
        raise ShapeError(
            f"{name}: qtype {qtype!r} is not supported (supported: "
            f"{', '.join(quants.QUANT_TYPES)})"
        )
    if not (isinstance(shape, tuple) and len(shape) == 2 and all(type(d) is int for d in shape)):
        raise ShapeError(f"{name}: shape must be a tuple (out, in) of ints, got {shape!r}")
    out_f, in_f = shape
    want = (out_f, in_f // t.block_size, t.bytes_per_block)
    if in_f % t.block_size or tuple(b_shape) != want or np.dtype(b_dtype) != np.uint8:
        raise ShapeError(
            f"{name}: the {qtype} blocks of a {shape} weight must be uint8 of shape "
            f"{want}; got {np.dtype(b_dtype)} of shape {tuple(b_shape)}"
        )
    x_dtype = np.dtype(x_dtype)
    if x_dtype.kind != "f":
        raise DTypeError(
            f"{name}: x must be real floating (float16/32/64), got {x_dtype}; cast "
            "it, e.g. x.astype('float32')"
        )
    k, n = (out_f, in_f) if transpose else (in_f, out_f)
    if len(x_shape) == 0 or x_shape[-1] != k:
        raise ShapeError(
            f"{name}: x of shape {tuple(x_shape)} cannot multiply a {shape} weight"
            f"{' (transposed)' if transpose else ''}: its last axis must have {k} values"
        )
    return (*x_shape[:-1], n)


def chunked_matmul(xp, x, rows_of, shape, *, transpose=False, step=None, dtype=None):
    """``x @ W.T`` (or ``x @ W``) for a weight produced a chunk of rows at a time.

    The shared loop of the kernels that keep weights compressed (``quantized_matmul``
    here, the int8 products of :mod:`fgrad.llm.int8`): ``rows_of(r0, r1)`` returns rows
    ``r0:r1`` of the ``(out, in)`` weight ``W`` as an array (dequantized, or widened for an
    exact integer product), and only one chunk exists at a time.

    Args:
        xp: the array namespace.
        x: ``(..., in)`` array (``(..., out)`` with ``transpose``).
        rows_of: ``(r0, r1) -> (r1 - r0, in)`` array of ``x``'s kind.
        shape: ``(out, in)``.
        transpose: compute ``x @ W`` instead.
        step: rows per chunk (default: about 2 MB of float32).
        dtype: of the result (default ``x``'s).

    Returns:
        ``(..., out)`` array (``(..., in)`` with ``transpose``).
    """
    out_f, in_f = shape
    dtype = x.dtype if dtype is None else dtype
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    step = _chunk_rows(in_f) if step is None else step
    if not transpose:  # y[:, rows] = x @ W[rows].T
        y = xp.empty((x2.shape[0], out_f), dtype=dtype)
        for r in range(0, out_f, step):
            y[:, r : r + step] = x2 @ rows_of(r, min(r + step, out_f)).T
    else:  # y = sum over row chunks of x[:, rows] @ W[rows]
        y = xp.zeros((x2.shape[0], in_f), dtype=dtype)
        for r in range(0, out_f, step):
            y += x2[:, r : r + step] @ rows_of(r, min(r + step, out_f))
    return y.reshape(*lead, y.shape[-1])


def _block_matvec(xp, x, qtype) -> Any:
    """The compiled product straight from the packed blocks (:func:`_qmv_numba.matvec`)
    where it applies: numpy, float32 ``x`` of a decode step's few rows, numba on."""
    if xp is np and x.dtype == np.float32 and math.prod(x.shape[:-1]) <= _qmv_numba.MAX_ROWS:
        return _qmv_numba.matvec(qtype) if config.cpu_compile else None
    return None


def _check_act(act_quant, transpose, shape, name) -> None:
    """TypeError/ValueError for an ``act_quant`` the product cannot honour."""
    if type(act_quant) is not bool:
        raise TypeError(f"{name}: act_quant must be a bool, got {act_quant!r}")
    if act_quant and (transpose or shape[1] % 32):
        raise ValueError(
            f"{name}: act_quant rounds x in blocks of 32 along the weight's inputs; it needs "
            f"transpose=False and inputs a multiple of 32 (weight shape {shape}, transpose="
            f"{transpose})"
        )


def _q8_matvec(xp, x, qtype) -> Any:
    """The compiled int8-activation product (:func:`_q8_dot.matvec`) where it applies, as
    :func:`_block_matvec`: numpy, float32 ``x`` of a few rows, numba on, AVX2."""
    if xp is np and x.dtype == np.float32 and math.prod(x.shape[:-1]) <= _qmv_numba.MAX_ROWS:
        return _q8_dot.matvec(qtype) if config.cpu_compile else None
    return None


def _rounded(xp, x) -> Any:
    """``quants.q8_roundtrip(xp, x)`` in ``x``'s dtype; one compiled pass on numpy."""
    fast = _q8_dot.roundtrip() if xp is np and x.dtype == np.float32 and config.cpu_compile else None
    if fast is not None:
        return fast(x.reshape(-1, x.shape[-1])).reshape(x.shape)
    return quants.q8_roundtrip(xp, x).astype(x.dtype, copy=False)


def _qmm_kernel(xp, x, blocks, *, qtype, shape, transpose=False, act_quant=False):
    _check(x.shape, x.dtype, blocks.shape, blocks.dtype, qtype, shape, transpose)
    _check_act(act_quant, transpose, shape, "quantized_matmul")
    t = quants.QUANT_TYPES[qtype]
    if act_quant:
        fast = _q8_matvec(xp, x, qtype)
        if fast is not None:  # a decode step: integer products of the rounded x
            y = fast(x.reshape(-1, x.shape[-1]), (blocks,))
            return y.reshape(*x.shape[:-1], shape[0])
        x = _rounded(xp, x)
    fast = None if transpose else _block_matvec(xp, x, qtype)
    if fast is not None:  # a decode step: read the packed blocks directly
        y = fast(x.reshape(-1, x.shape[-1]), (blocks,))
        return y.reshape(*x.shape[:-1], shape[0])

    fast = _qmv_numba.dequantize(qtype) if xp is np and config.cpu_compile else None
    if fast is not None:  # the same values as the numpy kernel, 10x faster (prefill)

        def rows_of(r0, r1):
            return fast(blocks[r0:r1]).astype(x.dtype, copy=False)

    else:

        def rows_of(r0, r1):
            return _dequantize_chunk(xp, blocks[r0:r1], t).astype(x.dtype, copy=False)

    return chunked_matmul(xp, x, rows_of, shape, transpose=transpose)


def _qmm_aval(x, blocks, *, qtype, shape, transpose=False, act_quant=False):
    out = _check(x.shape, x.dtype, blocks.shape, blocks.dtype, qtype, shape, transpose)
    return ShapeDtype(out, np.dtype(x.dtype))


def _qmm_vjp_x(ct, out, x, blocks, *, qtype, shape, transpose=False, act_quant=False):
    # d(x @ W.T) = ct @ W, and d(x @ W) = ct @ W.T: the same op, transposed; through the
    # rounding of act_quant straight (its derivative is 0 almost everywhere).
    return quantized_matmul(ct, blocks, qtype=qtype, shape=shape, transpose=not transpose)


def _qmm_jvp_x(t, out, x, blocks, *, qtype, shape, transpose=False, act_quant=False):
    # Linear in x: the op on the tangent, without act_quant's rounding (straight through).
    return quantized_matmul(t, blocks, qtype=qtype, shape=shape, transpose=transpose)


def _qmm_batch(op, args, dims, **params):
    x, blocks = args
    dx, db = dims
    if db is None:  # shared weights: the mapped axis is one more leading axis of x
        return op(x, blocks, **params), 0
    # A weight per example (rare): one product per example, stacked.
    from fgrad import numpy as fnp

    size = blocks.shape[0]
    return fnp.stack([op(x if dx is None else x[i], blocks[i], **params) for i in range(size)]), 0


def _check_args(rng, shapes):
    x_shape, b_shape = shapes
    out_f, n_blocks, nbytes = b_shape
    qtype = next(t.name for t in quants.QUANT_TYPES.values() if t.bytes_per_block == nbytes and t.block_size > 1)
    blocks = quants.random_blocks(rng, qtype, out_f * n_blocks).reshape(b_shape)
    return [rng.standard_normal(x_shape), blocks]


quantized_matmul = defop(
    "quantized_matmul",
    kernel=_qmm_kernel,
    aval=_qmm_aval,
    jvp=(_qmm_jvp_x, None),  # the blocks are integer data without tangents
    vjp=(_qmm_vjp_x, None),
    batch=_qmm_batch,
    vjp_reads=("inputs",),
    check=Check(
        # Q4_1 (20 bytes per 32 values), square so that both orientations take each x.
        shapes=(((64,), (64, 2, 20)), ((2, 64), (64, 2, 20)), ((2, 3, 64), (64, 2, 20))),
        params=(
            {"qtype": "Q4_1", "shape": (64, 64), "transpose": False},
            {"qtype": "Q4_1", "shape": (64, 64), "transpose": True},
        ),
        make_args=_check_args,
        strict=False,  # views bytes as float16 (ndarray.view), outside the Array API
    ),
    doc="""Product of activations with a weight kept in a ggml block format: ``x @ W.T``.

    ``W`` (``shape = (out, in)``) is dequantized a chunk of rows at a time (about 2 MB of
    float32 each) inside the product, so the whole float matrix never exists; the result
    equals ``x @ dequantize(W).T`` up to float rounding of the sums. Differentiable in
    ``x`` only (the derivative is this op with ``transpose`` flipped); the blocks are
    integer data and get no derivative. Use :func:`fgrad.llm.quantized.linear`, which
    takes a :class:`~fgrad.llm.quantized.QuantizedWeight`.

    Args:
        x: ``(..., in)`` real floating Tensor (``(..., out)`` when ``transpose``).
        blocks: ``(out, in / block_size, bytes_per_block)`` uint8 Tensor: the packed
            blocks of ``W``, row by row.
        qtype: the ggml type name (``"Q4_1"``, ``"Q8_0"``, ``"Q4_K"``, ...).
        shape: ``(out, in)``, the logical shape of ``W``.
        transpose: compute ``x @ W`` instead (the derivative's product).
        act_quant: round ``x`` to int8 blocks of 32 first
            (:func:`fgrad.llm.quants.q8_roundtrip`, llama.cpp's arithmetic): on the CPU a
            decode step's products then run in integer arithmetic (``_q8_dot``), 2-3x
            faster. An approximation: the derivatives are the straight-through ones (those
            of the product without the rounding).

    Returns:
        ``(..., out)`` Tensor (``(..., in)`` when ``transpose``) of ``x``'s dtype.

    Raises:
        ShapeError: an unsupported ``qtype``, blocks that do not match ``qtype`` and
            ``shape``, or ``x`` whose last axis does not match the weight.
        DTypeError: ``x`` is not real floating.
        TypeError, ValueError: ``act_quant`` is not a bool, or is True with ``transpose``
            or inputs that are not a multiple of 32.

    Example:
        >>> from fgrad.llm.quantized import QuantizedWeight, linear
        >>> blocks = np.zeros((2, 1, 34), np.uint8)      # two Q8_0 rows of 32 values
        >>> blocks[:, 0, :2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
        >>> blocks[:, 0, 2:] = 2                          # every quant 2: every value 1.0
        >>> w = QuantizedWeight(blocks, "Q8_0", (2, 32))
        >>> linear(fnp.ones((1, 32), dtype="float32"), w)
        Tensor([[32., 32.]], dtype=float32)
        >>> fgrad.grad(lambda x: linear(x, w).sum())(fnp.ones(32))[:3]
        Tensor([2., 2., 2.], dtype=float64)
    """,
)


def linear(x: Any, w: Any) -> Any:
    """``x @ w.T`` for a dense or a kept-quantized weight ``w`` of shape ``(out, in)``.

    Dense ``w``: an ordinary fgrad matmul, differentiable in both. A
    :class:`QuantizedWeight`: the ``quantized_matmul`` op (dequantizing a chunk of rows at
    a time), differentiable in ``x`` only. Any other weight type that defines
    ``__fgrad_linear__(self, x)`` computes its own product (the LoRA-wrapped weights of
    :mod:`fgrad.llm.lora` and the int8 weights of :mod:`fgrad.llm.int8`), so the model's
    parameter pytree can hold them wherever it holds a weight.

    Args:
        x: ``(..., in)`` real floating Tensor or array.
        w: ``(out, in)`` Tensor or array, a :class:`QuantizedWeight` of that shape, or an
            object with a ``__fgrad_linear__`` method.

    Returns:
        ``(..., out)`` Tensor.

    Raises:
        ShapeError: ``w`` is not 2-D, or ``x``'s last axis is not ``w``'s ``in``.
        DTypeError: ``x`` is not real floating (quantized ``w``).

    Example:
        >>> linear(fnp.ones((2, 3)), fnp.array([[1.0, 2.0, 3.0]]))
        Tensor([[6.],
                [6.]], dtype=float64)
    """
    from fgrad import numpy as fnp

    if isinstance(w, QuantizedWeight):
        if len(w.shape) != 2:
            raise ShapeError(f"linear: a quantized weight must be 2-D (out, in), got shape {w.shape}")
        return quantized_matmul(x, w.blocks, qtype=w.qtype, shape=w.shape, transpose=False,
                                act_quant=w.act_quant)
    own = getattr(type(w), "__fgrad_linear__", None)
    if own is not None:
        return own(w, x)
    w_shape = tuple(getattr(w, "shape", np.shape(w)))
    x_shape = tuple(getattr(x, "shape", np.shape(x)))
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ShapeError(
            f"linear: x of shape {x_shape} and w of shape {w_shape}: w must be (out, in) with "
            "in equal to x's last axis"
        )
    return fnp.matmul(x, fnp.matrix_transpose(w))


def int8_activations(params: Any, on: bool = True) -> Any:
    """A model (or parameter pytree) whose kept-quantized weights round the activations to
    int8 blocks in their products: llama.cpp's arithmetic, and on the CPU 2-3x faster
    decode products (integer dot products, :mod:`fgrad.llm._q8_dot`; decoding 1.3-1.7x
    faster).

    Each :class:`QuantizedWeight` (inside LoRA wrappers too) with a multiple of 32 inputs
    becomes one with ``act_quant=on``; its products multiply
    :func:`fgrad.llm.quants.q8_roundtrip` of the activations (32 values per block, one
    float32 scale each, values in ``[-127, 127]``). An approximation, as llama.cpp's: on
    held-out text SmolLM2's perplexity goes from 35.72 to 36.30 and its logits move by 0.17
    on average (``docs/llm.md``). Gradients are the straight-through ones (those of the
    unrounded product). The embedding lookup is exact either way.

    Args:
        params: a :class:`~fgrad.llm.model.Model` or its parameter pytree.
        on: True to round, False to undo.

    The rounding is discontinuous, so activations that differ in their last bits (``jit``'s
    fused kernels against eager numpy calls, or ``config.cpu_compile`` off) can round one
    quantum apart: logits then differ between those paths by as much as the approximation
    itself (about 1 on SmolLM2), each path deterministic. Compare int8-activation results
    along one path.

    Args:
        params: a :class:`~fgrad.llm.model.Model` or its parameter pytree.
        on: True to round, False to undo.

    Returns:
        The same kind of pytree, sharing the blocks.

    Raises:
        ValueError: ``params`` holds no kept-quantized weight with a multiple of 32
            inputs (a model loaded with ``dtype="float32"``: load it with ``dtype=None``).

    Example:
        >>> import numpy as np
        >>> from fgrad.llm.quantized import QuantizedWeight, int8_activations
        >>> blocks = np.zeros((3, 2, 20), np.uint8)  # 3 rows of 64 values: 2 Q4_1 blocks each
        >>> int8_activations({"w": QuantizedWeight(blocks, "Q4_1", (3, 64))})["w"]
        QuantizedWeight(Q4_1, shape=(3, 64), 120 bytes, int8 activations)
    """
    on = bool(on)
    found = []

    def switch(w: Any) -> Any:
        if type(w) is QuantizedWeight and w.shape[-1] % 32 == 0:
            found.append(w)
            if w.act_quant != on:
                return QuantizedWeight(w.blocks, w.qtype, w.shape, act_quant=on)
        return w

    out = tree.map(switch, params, is_leaf=lambda w: type(w) is QuantizedWeight)
    if not found:
        raise ValueError(
            "int8_activations: no kept-quantized weight to round the activations of (a "
            "model dequantized at load has none); load it with fgrad.llm.load(path, dtype=None)"
        )
    return out


# --------------------------------------------------------------- quantized_matmul_many


def _many_check(x, blocks, qtype, shapes) -> tuple:
    """The output shapes; ShapeError/DTypeError naming quantized_matmul_many."""
    if not (type(shapes) is tuple and len(shapes) == len(blocks) >= 1):
        raise ShapeError(
            f"quantized_matmul_many: shapes must be a tuple of one (out, in) per blocks "
            f"argument; got {shapes!r} for {len(blocks)} blocks"
        )
    return tuple(
        _check(x.shape, x.dtype, b.shape, b.dtype, qtype, s, False, "quantized_matmul_many")
        for b, s in zip(blocks, shapes)
    )


def _many_kernel(xp, x, *blocks, qtype, shapes, act_quant=False):
    _many_check(x, blocks, qtype, shapes)
    _check_act(act_quant, False, shapes[0], "quantized_matmul_many")
    fast = _q8_matvec(xp, x, qtype) if act_quant else None
    if fast is None and act_quant:
        x = _rounded(xp, x)
    fast = fast or _block_matvec(xp, x, qtype)
    if fast is not None:  # one loop over every weight, one parallel region
        y = fast(x.reshape(-1, x.shape[-1]), blocks)
        edges = (0, *itertools.accumulate(s[0] for s in shapes))
        return tuple(y[:, a:b].reshape(*x.shape[:-1], b - a) for a, b in itertools.pairwise(edges))
    return tuple(_qmm_kernel(xp, x, b, qtype=qtype, shape=s) for b, s in zip(blocks, shapes))


def _many_aval(x, *blocks, qtype, shapes, act_quant=False):
    return tuple(ShapeDtype(o, np.dtype(x.dtype)) for o in _many_check(x, blocks, qtype, shapes))


def _many_vjp(cts, outs, x, *blocks, qtype, shapes, act_quant=False):
    # Each output's cotangent goes back through its own weight; x receives their sum
    # (straight through act_quant's rounding, as quantized_matmul).
    from fgrad.ops.elementwise import add

    dx = None
    for ct, b, s in zip(cts, blocks, shapes):
        d = quantized_matmul(ct, b, qtype=qtype, shape=s, transpose=True)
        dx = d if dx is None else add(dx, d)
    return (dx, *(None for _ in blocks))


def _many_jvp(tangents, outs, x, *blocks, qtype, shapes, act_quant=False):
    # Linear in x (the blocks have no tangents): the op on x's tangent, unrounded.
    t = tangents[0]
    if t is None:
        from fgrad import numpy as fnp

        return tuple(fnp.zeros(o.shape, dtype=o.dtype) for o in outs)
    return quantized_matmul_many(t, *blocks, qtype=qtype, shapes=shapes)


def _many_batch(op, args, dims, **params):
    x, *blocks = args
    dx, *dbs = dims
    n = len(blocks)
    if all(d is None for d in dbs):  # shared weights: one more leading axis of x
        return op(x, *blocks, **params), (0,) * n
    from fgrad import numpy as fnp

    size = next(b.shape[0] for b, d in zip(blocks, dbs) if d is not None)
    per = [
        op(x if dx is None else x[i], *(b if d is None else b[i] for b, d in zip(blocks, dbs)), **params)
        for i in range(size)
    ]
    return tuple(fnp.stack([p[k] for p in per]) for k in range(n)), (0,) * n


def _many_check_args(rng, shapes):
    x_shape, *b_shapes = shapes
    blocks = [quants.random_blocks(rng, "Q4_1", s[0] * s[1]).reshape(s) for s in b_shapes]
    return [rng.standard_normal(x_shape), *blocks]


quantized_matmul_many = defop(
    "quantized_matmul_many",
    kernel=_many_kernel,
    aval=_many_aval,
    jvp=_many_jvp,
    vjp=_many_vjp,
    batch=_many_batch,
    multiple_results=True,
    vjp_reads=("inputs",),
    check=Check(
        shapes=(((64,), (64, 2, 20), (32, 2, 20)), ((2, 3, 64), (64, 2, 20), (32, 2, 20))),
        params=({"qtype": "Q4_1", "shapes": ((64, 64), (32, 64))},),
        make_args=_many_check_args,
        strict=False,  # views bytes as float16 (ndarray.view), outside the Array API
    ),
    doc="""Products of one activation with several weights of one ggml block type: ``x @ W_i.T``.

    The same values as one :func:`quantized_matmul` per weight; on the CPU, for the few
    activation rows of a decode step, the products run as one compiled loop over every
    weight in one parallel region (a llama block's query, key and value projections, or
    its gate and up projections: four products a block instead of seven). Use
    :func:`fgrad.llm.quantized.linear_many`.

    Args:
        x: ``(..., in)`` real floating Tensor.
        *blocks: for each weight ``W_i``, its ``(out_i, in / block_size, bytes_per_block)``
            uint8 blocks.
        qtype: the ggml type name shared by every weight.
        shapes: ``((out_1, in), (out_2, in), ...)``, one per weight.
        act_quant: round ``x`` to int8 blocks first, as :func:`quantized_matmul`'s.

    Returns:
        Tuple of ``(..., out_i)`` Tensors of ``x``'s dtype.

    Raises:
        ShapeError: ``shapes`` is not one shape per weight, an unsupported ``qtype``,
            blocks that do not match it, or ``x`` whose last axis is not ``in``.
        DTypeError: ``x`` is not real floating.
        TypeError, ValueError: as :func:`quantized_matmul`'s ``act_quant``.

    Example:
        >>> from fgrad.llm.quantized import QuantizedWeight, linear_many
        >>> blocks = np.zeros((2, 1, 34), np.uint8)      # two Q8_0 rows, every value 1.0
        >>> blocks[:, 0, :2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
        >>> blocks[:, 0, 2:] = 2
        >>> a, b = QuantizedWeight(blocks, "Q8_0", (2, 32)), QuantizedWeight(blocks[:1], "Q8_0", (1, 32))
        >>> linear_many(fnp.ones((1, 32), dtype="float32"), (a, b))
        (Tensor([[32., 32.]], dtype=float32), Tensor([[32.]], dtype=float32))
    """,
)


def linear_many(x: Any, ws: Any) -> tuple:
    """``tuple(linear(x, w) for w in ws)``; kept-quantized weights of one type in one op.

    Where every weight is a :class:`QuantizedWeight` of the same type (and
    ``act_quant``), the products are
    one ``quantized_matmul_many`` (one compiled loop when decoding); otherwise (dense,
    LoRA-wrapped or int8 weights, mixed types) one :func:`linear` each.

    Args:
        x: ``(..., in)`` real floating Tensor or array.
        ws: a sequence of ``(out_i, in)`` weights, each of a kind :func:`linear` takes.

    Returns:
        Tuple of ``(..., out_i)`` Tensors.

    Raises:
        ShapeError, DTypeError: as :func:`linear`.

    Example:
        >>> q, k = linear_many(fnp.ones((1, 2)), (fnp.eye(2), fnp.ones((1, 2))))
        >>> q, k
        (Tensor([[1., 1.]], dtype=float64), Tensor([[2.]], dtype=float64))
    """
    ws = tuple(ws)
    if (
        len(ws) > 1
        and all(type(w) is QuantizedWeight and len(w.shape) == 2 for w in ws)
        and len({(w.qtype, w.act_quant) for w in ws}) == 1
    ):
        return quantized_matmul_many(
            x, *(w.blocks for w in ws), qtype=ws[0].qtype, shapes=tuple(w.shape for w in ws),
            act_quant=ws[0].act_quant,
        )
    return tuple(linear(x, w) for w in ws)


# ---------------------------------------------------------------------- quantized_take


def _take_check(b_shape, b_dtype, ids_dtype, qtype, shape) -> quants.QuantType:
    t = quants.QUANT_TYPES.get(qtype) if isinstance(qtype, str) else None
    if t is None or not (isinstance(shape, tuple) and len(shape) == 2):
        raise ShapeError(
            f"quantized_take: qtype must be one of {', '.join(quants.QUANT_TYPES)} and shape a "
            f"tuple (rows, in); got {qtype!r}, {shape!r}"
        )
    want = (shape[0], shape[1] // t.block_size, t.bytes_per_block)
    if tuple(b_shape) != want or np.dtype(b_dtype) != np.uint8:
        raise ShapeError(
            f"quantized_take: the {qtype} blocks of a {shape} table must be uint8 of shape "
            f"{want}; got {np.dtype(b_dtype)} of shape {tuple(b_shape)}"
        )
    if np.dtype(ids_dtype).kind not in "iu":
        raise DTypeError(f"quantized_take: ids must be integers, got {np.dtype(ids_dtype)}")
    return t


def _take_kernel(xp, blocks, ids, *, qtype, shape):
    t = _take_check(blocks.shape, blocks.dtype, ids.dtype, qtype, shape)
    rows = blocks[ids.reshape(-1)]  # only the rows asked for are dequantized
    return _dequantize_chunk(xp, rows, t).reshape(*ids.shape, shape[1])


def _take_aval(blocks, ids, *, qtype, shape):
    _take_check(blocks.shape, blocks.dtype, ids.dtype, qtype, shape)
    return ShapeDtype((*ids.shape, shape[1]), np.dtype(np.float32))


def _take_batch(op, args, dims, **params):
    blocks, ids = args
    db, di = dims
    if db is None:  # a shared table: the mapped axis is one more axis of ids
        return op(blocks, ids, **params), 0
    from fgrad import numpy as fnp

    size = blocks.shape[0]
    return fnp.stack([op(blocks[i], ids if di is None else ids[i], **params) for i in range(size)]), 0


def _take_check_args(rng, shapes):
    b_shape, ids_shape = shapes
    blocks = quants.random_blocks(rng, "Q8_0", b_shape[0] * b_shape[1]).reshape(b_shape)
    return [blocks, rng.integers(0, b_shape[0], ids_shape)]


quantized_take = defop(
    "quantized_take",
    kernel=_take_kernel,
    aval=_take_aval,
    nondiff=True,  # integer ids, integer blocks: nothing to differentiate
    batch=_take_batch,
    check=Check(
        shapes=(((5, 2, 34), (3,)), ((5, 2, 34), (2, 3))),
        params=({"qtype": "Q8_0", "shape": (5, 64)},),
        make_args=_take_check_args,
        strict=False,  # views bytes as float16 (ndarray.view), outside the Array API
    ),
    doc="""Rows ``ids`` of a table kept in a ggml block format, dequantized: ``W[ids]``.

    Only the rows asked for are dequantized (an embedding lookup of a kept-quantized
    ``token_embd.weight``). Use :func:`fgrad.llm.quantized.embedding`.

    Args:
        blocks: ``(rows, in / block_size, bytes_per_block)`` uint8 Tensor.
        ids: integer Tensor of any shape, values in ``[0, rows)``.
        qtype: the ggml type name.
        shape: ``(rows, in)``, the table's logical shape.

    Returns:
        ``(*ids.shape, in)`` float32 Tensor.

    Raises:
        ShapeError: an unsupported ``qtype`` or blocks that do not match it and ``shape``.
        DTypeError: ``ids`` are not integers.

    Example:
        >>> from fgrad.llm.quantized import QuantizedWeight, embedding
        >>> blocks = np.zeros((3, 1, 34), np.uint8)       # three Q8_0 rows of 32 values
        >>> blocks[:, 0, :2] = np.frombuffer(np.float16(1.0).tobytes(), np.uint8)
        >>> blocks[:, 0, 2:] = np.arange(3, dtype=np.uint8)[:, None]   # row r is all r
        >>> embedding(QuantizedWeight(blocks, "Q8_0", (3, 32)), fnp.array([2, 0]))[:, :3]
        Tensor([[2., 2., 2.],
                [0., 0., 0.]], dtype=float32)
    """,
)


def embedding(w: Any, ids: Any) -> Any:
    """Rows ``ids`` of a dense or kept-quantized ``(vocab, d_model)`` table: ``w[ids]``.

    Args:
        w: ``(vocab, d_model)`` Tensor or array, or a :class:`QuantizedWeight` (only the
            rows looked up are dequantized).
        ids: integer Tensor or array of any shape.

    Returns:
        ``(*ids.shape, d_model)`` Tensor (float32 for a quantized table); differentiable in
        a dense ``w``.

    Raises:
        ShapeError: ``w`` is not 2-D.
        DTypeError: ``ids`` are not integers.

    Example:
        >>> embedding(fnp.array([[0.0, 1.0], [2.0, 3.0]]), fnp.array([1, 1]))
        Tensor([[2., 3.],
                [2., 3.]], dtype=float64)
    """
    from fgrad import numpy as fnp

    if isinstance(w, QuantizedWeight):
        if len(w.shape) != 2:
            raise ShapeError(f"embedding: a quantized table must be 2-D (vocab, d_model), got {w.shape}")
        return quantized_take(w.blocks, fnp.asarray(ids), qtype=w.qtype, shape=w.shape)
    if len(tuple(getattr(w, "shape", np.shape(w)))) != 2:
        raise ShapeError(f"embedding: w must be 2-D (vocab, d_model), got shape {np.shape(w)}")
    ids = fnp.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise DTypeError(f"embedding: ids must be integers, got {ids.dtype}")
    return fnp.take(w, ids, axis=0)
