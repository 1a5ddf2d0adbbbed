"""int8 weights and SmoothQuant W8A8, as transformations of the parameter pytree.

**Weight-only int8** (:func:`quantize`): each linear weight ``W`` (``(out, in)``) becomes an
:class:`Int8Weight`: int8 values ``q = round(W / s)`` in ``[-127, 127]`` with symmetric
absmax scales ``s = max |W| / 127`` per output channel (``scale`` of shape ``(out, 1)``)
or per group of ``group_size`` consecutive inputs (``(out, in / group_size)``). Its
product, the ``int8_matmul`` op, dequantizes a chunk of rows at a time inside the product
(the loop of :func:`fgrad.llm.quantized.chunked_matmul`), is differentiable in the
activations and in the scales (it is bilinear in them; ``q`` is integer data), batches
under ``vmap`` and traces under ``jit``. An int8 embedding table dequantizes only the rows
it looks up.

**W8A8** (:func:`w8a8`, :func:`smoothquant`): weights int8 per output channel and
activations int8 per token (``s_x = max_j |x_j| / 127`` over the token's features,
computed at run time), the product of the int8 values accumulated exactly in int32 (the
``int8_product`` op) and dequantized with ``s_x * s_w``. Per-token scales suffer from
outlier channels (a few features far larger than the rest, in every token), which
SmoothQuant moves into the weights: calibrated on sample sequences (:func:`calibrate`:
the absmax ``max |X_j|`` of each input channel ``j`` at each linear's input), each channel
is divided by

    ``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)``

(``max|W_j|`` over the rows of every weight reading that input), ``1/s`` folded into the
RMSNorm weight before and ``s`` into the columns of the linear weights after: q/k/v after
the attention norm, gate/up after the MLP norm. The product is unchanged in real arithmetic
and the activations are easier to quantize. ``o_proj`` and ``down_proj`` have no norm
before them and are quantized unsmoothed; the embedding and the head stay float (as in
SmoothQuant's own quantized models). W8A8 products give the straight-through gradient
(that of the dequantized weight's product) to the activations, so a W8A8 model still runs
under ``grad``.

On numpy the int8 products are exact: integers of at most ``127 * 127 * in`` are summed in
float64 BLAS (exact below ``2**53``) and converted to int32, which is what an int32
accumulator gives, at BLAS speed; other namespaces (cupy) multiply int32 arrays.

Example:
    >>> w = fnp.asarray(np.array([[0.5, -1.0, 0.25, 0.0], [2.0, 1.0, -0.5, 0.1]], np.float32))
    >>> q = quantize_weight(w)
    >>> q.q.dtype, q.scale.shape, q.nbytes
    (dtype('int8'), (2, 1), 16)
    >>> bool(np.abs(q.dequantize() - np.asarray(w)).max() <= np.asarray(q.scale).max() / 2)
    True
    >>> x = fnp.ones((1, 4), dtype="float32")
    >>> np.allclose(np.asarray(linear(x, q)), np.asarray(x @ w.T), atol=0.01)
    True

References:
    Dettmers et al., "LLM.int8(): 8-bit Matrix Multiplication for Transformers at Scale",
    2022, arXiv:2208.07339 (absmax int8, outlier features); Xiao et al., "SmoothQuant:
    Accurate and Efficient Post-Training Quantization for Large Language Models", 2023,
    arXiv:2211.10438 (smoothing factors, W8A8 with per-token activation scales; its
    ``smooth.py`` folds into LayerNorm/RMSNorm and clamps the scales at 1e-5); Bengio et
    al., 2013, arXiv:1308.3432 (the straight-through estimator).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import ShapeDtype

__all__ = [
    "Int8Weight",
    "calibrate",
    "int8_matmul",
    "int8_product",
    "linear",
    "quantize",
    "quantize_weight",
    "smooth",
    "smoothquant",
    "w8a8",
]

LINEAR_NAMES = ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")
_EPS = 1e-5  # SmoothQuant's clamp of the scales


class Int8Weight:
    """An int8 weight with symmetric absmax scales per output channel or per group.

    A pytree node with two leaves, ``q`` and ``scale``; ``act_quant`` is static.
    ``linear(x, w)`` (:func:`fgrad.llm.quantized.linear`, the model's) calls
    :meth:`__fgrad_linear__`: the ``int8_matmul`` op, or with ``act_quant`` the W8A8
    product. Build one with :func:`quantize_weight`.

    Args:
        q: ``(out, in)`` int8 Tensor or array, values in ``[-127, 127]``.
        scale: ``(out, n_groups)`` floating Tensor; ``in`` is a multiple of ``n_groups``,
            and the weight is ``q * scale`` repeated over each group of ``in / n_groups``.
        act_quant: quantize the activations per token too (W8A8; needs ``n_groups == 1``).

    Raises:
        ShapeError: shapes or dtypes that do not fit.

    Example:
        >>> w = Int8Weight(np.array([[1, -2, 3, 4]], np.int8), np.array([[0.5, 0.25]], np.float32))
        >>> w.group_size, w.dequantize()
        (2, array([[ 0.5 , -1.  ,  0.75,  1.  ]], dtype=float32))
    """

    __slots__ = ("q", "scale", "act_quant")

    def __init__(self, q: Any, scale: Any, act_quant: bool = False):
        q_shape, s_shape = tuple(q.shape), tuple(scale.shape)
        if len(q_shape) != 2 or np.dtype(q.dtype) != np.int8:
            raise ShapeError(f"Int8Weight: q must be (out, in) int8, got {np.dtype(q.dtype)} of shape {q_shape}")
        if (
            len(s_shape) != 2
            or s_shape[0] != q_shape[0]
            or s_shape[1] < 1
            or q_shape[1] % s_shape[1]
            or np.dtype(scale.dtype).kind != "f"
        ):
            raise ShapeError(
                f"Int8Weight: scale must be floating (out={q_shape[0]}, n_groups) with n_groups "
                f"dividing in={q_shape[1]}; got {np.dtype(scale.dtype)} of shape {s_shape}"
            )
        if act_quant and s_shape[1] != 1:
            raise ShapeError("Int8Weight: W8A8 (act_quant) needs one scale per output channel")
        self.q = fnp.asarray(q)
        self.scale = fnp.asarray(scale)
        self.act_quant = bool(act_quant)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.q.shape)

    @property
    def dtype(self) -> np.dtype:
        """The logical dtype: the scales' (float32)."""
        return np.dtype(self.scale.dtype)

    @property
    def group_size(self) -> int:
        return int(self.q.shape[1]) // int(self.scale.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes of ``q`` and ``scale``."""
        return int(np.prod(self.q.shape)) + int(np.prod(self.scale.shape)) * np.dtype(self.scale.dtype).itemsize

    def dequantize(self, dtype: Any = np.float32) -> np.ndarray:
        """The whole weight as a float array: ``q * scale`` per group."""
        q, s = np.asarray(self.q), np.asarray(self.scale)
        out_f, in_f = q.shape
        w = q.astype(dtype).reshape(out_f, s.shape[1], -1) * s.astype(dtype)[:, :, None]
        return w.reshape(out_f, in_f)

    def __fgrad_linear__(self, x: Any) -> Any:
        return linear(x, self)

    def __fgrad_take__(self, ids: Any) -> Any:
        """Rows ``ids`` dequantized (an int8 embedding table): ``(*ids.shape, in)``."""
        rows = fnp.take(self.q, ids, axis=0)
        scales = fnp.take(self.scale, ids, axis=0)
        lead = tuple(rows.shape[:-1])
        g = self.group_size
        w = fnp.astype(rows, scales.dtype)
        w = fnp.reshape(w, (*lead, -1, g)) * scales[..., None]
        return fnp.reshape(w, (*lead, g * int(self.scale.shape[1])))

    def __repr__(self) -> str:
        kind = "W8A8" if self.act_quant else ("per channel" if self.scale.shape[1] == 1 else f"groups of {self.group_size}")
        return f"Int8Weight(shape={self.shape}, {kind}, {self.nbytes} bytes)"


def _int8_unflatten(aux: bool, children: Any) -> Int8Weight:
    w = object.__new__(Int8Weight)  # transforms put tracers in place of the leaves: no checks
    w.q, w.scale = children
    w.act_quant = aux
    return w


tree.register(Int8Weight, lambda w: ((w.q, w.scale), w.act_quant), _int8_unflatten)


def quantize_weight(w: Any, group_size: int | None = None, *, act_quant: bool = False) -> Int8Weight:
    """Symmetric absmax int8 quantization of an ``(out, in)`` weight.

    ``scale = max |W| / 127`` over each output channel (``group_size=None``) or each group
    of ``group_size`` consecutive inputs of a channel; ``q = round(W / scale)``, so the
    error is at most ``scale / 2`` per value. An all-zero group gets scale 1 (and q 0).

    Args:
        w: ``(out, in)`` floating Tensor or array, or anything with ``dequantize()`` (a
            :class:`~fgrad.llm.quantized.QuantizedWeight`).
        group_size: inputs per scale; must divide ``in``. None: one scale per channel.
        act_quant: make a W8A8 weight (activations quantized per token at run time).

    Returns:
        An :class:`Int8Weight` with float32 scales.

    Raises:
        ShapeError: ``w`` is not 2-D or ``group_size`` does not divide ``in``.

    Example:
        >>> quantize_weight(np.ones((4, 64), np.float32), group_size=32)
        Int8Weight(shape=(4, 64), groups of 32, 288 bytes)
    """
    arr = w.dequantize() if hasattr(w, "dequantize") else np.asarray(w)
    arr = np.asarray(arr, dtype=np.float32)
    if arr.ndim != 2:
        raise ShapeError(f"quantize_weight: w must be (out, in), got shape {arr.shape}")
    out_f, in_f = arr.shape
    g = in_f if group_size is None else int(group_size)
    if g <= 0 or in_f % g:
        raise ShapeError(f"quantize_weight: group_size {group_size} does not divide in = {in_f}")
    groups = arr.reshape(out_f, in_f // g, g)
    amax = np.abs(groups).max(axis=-1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(groups / scale[:, :, None]), -127, 127).astype(np.int8).reshape(out_f, in_f)
    return Int8Weight(q, scale, act_quant=act_quant)


# ------------------------------------------------------------------------ the ops


def _check(x_shape, x_dtype, q_shape, q_dtype, s_shape, s_dtype, transpose, name="int8_matmul"):
    if len(q_shape) != 2 or np.dtype(q_dtype) != np.int8:
        raise ShapeError(f"{name}: q must be (out, in) int8, got {np.dtype(q_dtype)} of shape {tuple(q_shape)}")
    out_f, in_f = q_shape
    if len(s_shape) != 2 or s_shape[0] != out_f or s_shape[1] < 1 or in_f % s_shape[1]:
        raise ShapeError(
            f"{name}: scale must be (out={out_f}, n_groups) with n_groups dividing in={in_f}, "
            f"got {tuple(s_shape)}"
        )
    for what, dt in (("x", x_dtype), ("scale", s_dtype)):
        if np.dtype(dt).kind != "f":
            raise DTypeError(f"{name}: {what} must be real floating (float16/32/64), got {np.dtype(dt)}")
    k, n = (out_f, in_f) if transpose else (in_f, out_f)
    if len(x_shape) == 0 or x_shape[-1] != k:
        raise ShapeError(
            f"{name}: x of shape {tuple(x_shape)} cannot multiply an ({out_f}, {in_f}) weight"
            f"{' (transposed)' if transpose else ''}: its last axis must have {k} values"
        )
    return (*x_shape[:-1], n)


def _mm_kernel(xp, x, q, scale, *, transpose=False):
    from fgrad.llm.quantized import chunked_matmul

    _check(x.shape, x.dtype, q.shape, q.dtype, scale.shape, scale.dtype, transpose)
    out_f, in_f = q.shape
    n_groups = scale.shape[1]

    def rows_of(r0, r1):
        s = scale[r0:r1].astype(x.dtype)
        w = q[r0:r1].astype(x.dtype).reshape(r1 - r0, n_groups, in_f // n_groups) * s[:, :, None]
        return w.reshape(r1 - r0, in_f)

    return chunked_matmul(xp, x, rows_of, (out_f, in_f), transpose=transpose)


def _mm_aval(x, q, scale, *, transpose=False):
    out = _check(x.shape, x.dtype, q.shape, q.dtype, scale.shape, scale.dtype, transpose)
    return ShapeDtype(out, np.dtype(x.dtype))


def _mm_vjp_x(ct, out, x, q, scale, *, transpose=False):
    return int8_matmul(ct, q, scale, transpose=not transpose)


def _mm_vjp_scale(ct, out, x, q, scale, *, transpose=False):
    # y = x @ W.T with W = q * S (per group): dL/dW = ct^T x (x^T ct when transposed), and
    # dL/dS[o, g] sums dL/dW * q over the group's inputs.
    x2 = fnp.reshape(x, (-1, x.shape[-1]))
    c2 = fnp.reshape(ct, (-1, ct.shape[-1]))
    dw = fnp.matmul(fnp.matrix_transpose(x2), c2) if transpose else fnp.matmul(fnp.matrix_transpose(c2), x2)
    out_f, in_f = q.shape
    n_groups = scale.shape[1]
    ds = fnp.sum(fnp.reshape(dw * fnp.astype(q, dw.dtype), (out_f, n_groups, in_f // n_groups)), axis=-1)
    return fnp.astype(ds, scale.dtype)


def _per_example(op, args, dims, **params):
    """A batched weight (rare): one product per example, stacked."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [a if d is None else fnp.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    return fnp.stack([op(*[a if d is None else a[i] for a, d in zip(moved, dims)], **params) for i in range(size)]), 0


def _mm_batch(op, args, dims, **params):
    x, *weights = args
    dx, *dws = dims
    if all(d is None for d in dws):  # shared weights: the mapped axis is one more axis of x
        if dx == len(x.shape) - 1:
            x, dx = fnp.moveaxis(x, dx, 0), 0
        return op(x, *weights, **params), dx
    return _per_example(op, args, dims, **params)


def _mm_check_args(rng, shapes):
    x_shape, q_shape, s_shape = shapes
    q = rng.integers(-127, 128, size=q_shape).astype(np.int8)
    return [rng.standard_normal(x_shape), q, rng.uniform(0.005, 0.05, size=s_shape)]


int8_matmul = defop(
    "int8_matmul",
    kernel=_mm_kernel,
    aval=_mm_aval,
    jvp=LINEAR,  # bilinear in (x, scale): each tangent's term is the op itself
    vjp=(_mm_vjp_x, None, _mm_vjp_scale),
    batch=_mm_batch,
    vjp_reads=("inputs",),
    check=Check(
        # Square weights, so that both orientations take each x; per channel and groups of 4.
        shapes=(((8,), (8, 8), (8, 1)), ((3, 8), (8, 8), (8, 2)), ((2, 3, 8), (8, 8), (8, 1))),
        params=({"transpose": False}, {"transpose": True}),
        make_args=_mm_check_args,
        strict=False,  # ndarray.astype, outside the Array API
    ),
    doc="""Product of activations with an int8 weight: ``x @ (q * scale).T``.

    The weight ``W = q * scale`` (``scale`` repeated over each group of ``in / n_groups``
    inputs) is dequantized a chunk of rows at a time inside the product (about 2 MB of
    float32 each), in ``x``'s dtype. Differentiable in ``x`` and in ``scale`` (bilinear in
    them); ``q`` is integer data. Use :func:`fgrad.llm.int8.linear` with an
    :class:`~fgrad.llm.int8.Int8Weight`.

    Args:
        x: ``(..., in)`` real floating Tensor (``(..., out)`` when ``transpose``).
        q: ``(out, in)`` int8 Tensor.
        scale: ``(out, n_groups)`` real floating Tensor, ``n_groups`` dividing ``in``.
        transpose: compute ``x @ W`` instead (the derivative's product).

    Returns:
        ``(..., out)`` Tensor (``(..., in)`` when ``transpose``) of ``x``'s dtype.

    Raises:
        ShapeError: shapes that do not fit, or ``q`` not int8.
        DTypeError: ``x`` or ``scale`` not real floating.

    Example:
        >>> from fgrad.llm.int8 import int8_matmul
        >>> q = fnp.asarray(np.array([[1, 2], [-3, 4]], np.int8))
        >>> int8_matmul(fnp.ones((1, 2)), q, fnp.asarray([[0.5], [0.25]]))
        Tensor([[1.5 , 0.25]], dtype=float64)
    """,
)


def _int_check(a_shape, a_dtype, q_shape, q_dtype):
    if np.dtype(a_dtype) != np.int8 or np.dtype(q_dtype) != np.int8:
        raise DTypeError(f"int8_product: both operands must be int8, got {np.dtype(a_dtype)} and {np.dtype(q_dtype)}")
    if len(q_shape) != 2 or len(a_shape) == 0 or a_shape[-1] != q_shape[1]:
        raise ShapeError(
            f"int8_product: a of shape {tuple(a_shape)} cannot multiply a q of shape {tuple(q_shape)} "
            "((out, in), with in equal to a's last axis)"
        )
    return (*a_shape[:-1], q_shape[0])


def _int_kernel(xp, a, q):
    from fgrad.llm.quantized import chunked_matmul

    _int_check(a.shape, a.dtype, q.shape, q.dtype)
    out_f, in_f = q.shape
    if xp is np:
        # Exact: every product is at most 127^2 and every sum at most 127^2 * in < 2^53, so
        # float64 BLAS gives the int32 accumulator's integers, at BLAS speed.
        wide = a.astype(np.float64)
        step = max(1, (2 << 20) // (8 * max(in_f, 1)))
        acc = chunked_matmul(xp, wide, lambda r0, r1: q[r0:r1].astype(np.float64), (out_f, in_f), step=step)
        return acc.astype(np.int32)
    wide = a.astype(xp.int32)
    step = max(1, (2 << 20) // (4 * max(in_f, 1)))
    return chunked_matmul(xp, wide, lambda r0, r1: q[r0:r1].astype(xp.int32), (out_f, in_f), step=step)


def _int_aval(a, q):
    return ShapeDtype(_int_check(a.shape, a.dtype, q.shape, q.dtype), np.dtype(np.int32))


def _int_batch(op, args, dims):
    a, q = args
    da, dq = dims
    if dq is None:
        if da == len(a.shape) - 1:
            a, da = fnp.moveaxis(a, da, 0), 0
        return op(a, q), da
    return _per_example(op, args, dims)


def _int_check_args(rng, shapes):
    return [rng.integers(-127, 128, size=s).astype(np.int8) for s in shapes]


int8_product = defop(
    "int8_product",
    kernel=_int_kernel,
    aval=_int_aval,
    nondiff=True,  # integers in, integers out
    batch=_int_batch,
    check=Check(
        shapes=(((8,), (5, 8)), ((3, 8), (5, 8)), ((2, 3, 8), (5, 8))),
        make_args=_int_check_args,
        strict=False,
    ),
    doc="""Exact int32 product of int8 activations and an int8 weight: ``a @ q.T``.

    Every product of two int8 values and every sum is exact, as with an int32
    accumulator (the sums stay below ``127 * 127 * in``). On numpy the integers are
    multiplied by float64 BLAS (exact below ``2**53``) a chunk of weight rows at a time
    and converted to int32; other namespaces (cupy) multiply int32 arrays. The W8A8
    product of :func:`fgrad.llm.int8.linear` is this, scaled. No derivative (integers).

    Args:
        a: ``(..., in)`` int8 Tensor (activations quantized per token).
        q: ``(out, in)`` int8 Tensor.

    Returns:
        ``(..., out)`` int32 Tensor.

    Raises:
        DTypeError: an operand is not int8.
        ShapeError: ``a``'s last axis is not ``q``'s ``in``.

    Example:
        >>> from fgrad.llm.int8 import int8_product
        >>> a = fnp.asarray(np.array([[127, -128 + 1]], np.int8))
        >>> int8_product(a, fnp.asarray(np.array([[127, 127], [1, 2]], np.int8)))
        Tensor([[   0, -127]], dtype=int32)
    """,
)


# ------------------------------------------------------------------------ linear


def _quantize_tokens(x: Any) -> tuple[Any, Any]:
    """``(int8 values, scales)``: symmetric absmax per token (over the last axis)."""
    amax = fnp.max(fnp.abs(x), axis=-1, keepdims=True)
    s = fnp.where(amax > 0, amax / 127.0, 1.0)
    q = fnp.astype(fnp.clip(fnp.round(x / s), -127, 127), np.int8)
    return q, s


def _w8a8_forward(x: Any, q: Any, scale: Any) -> Any:
    xq, sx = _quantize_tokens(x)
    acc = int8_product(xq, q)
    return fnp.astype(acc, x.dtype) * sx * fnp.astype(fnp.reshape(scale, (-1,)), x.dtype)


def _make_w8a8():
    from fgrad.transforms.custom import custom_vjp

    @custom_vjp
    def w8a8_linear(x, q, scale):
        return _w8a8_forward(x, q, scale)

    def fwd(x, q, scale):
        return _w8a8_forward(x, q, scale), (x, q, scale)

    def bwd(res, ct):
        # Straight through the quantizers: the derivatives of x @ (q * scale).T.
        x, q, scale = res
        return (int8_matmul(ct, q, scale, transpose=True), None, _mm_vjp_scale(ct, None, x, q, scale))

    w8a8_linear.defvjp(fwd, bwd)
    return w8a8_linear


_w8a8_linear = _make_w8a8()


def linear(x: Any, w: Int8Weight) -> Any:
    """``x @ W.T`` for an :class:`Int8Weight`: weight-only, or W8A8 when ``w.act_quant``.

    Weight-only: the ``int8_matmul`` op (float activations, the weight dequantized per
    chunk). W8A8: ``x`` quantized to int8 per token (absmax over its last axis), the
    ``int8_product`` in int32, times both scales; its gradient is the straight-through
    one (the weight-only product's).

    Args:
        x: ``(..., in)`` real floating Tensor.
        w: an ``(out, in)`` :class:`Int8Weight`.

    Returns:
        ``(..., out)`` Tensor of ``x``'s dtype.

    Raises:
        ShapeError, DTypeError: as the ops.

    Example:
        >>> w = quantize_weight(np.array([[1.0, -2.0], [0.5, 4.0]], np.float32), act_quant=True)
        >>> linear(fnp.asarray([[1.0, 1.0]], dtype="float32"), w)   # exactly: -1, 4.5
        Tensor([[-0.992126,  4.503937]], dtype=float32)
    """
    x = fnp.asarray(x)
    if w.act_quant:
        _check(x.shape, x.dtype, w.q.shape, w.q.dtype, w.scale.shape, w.scale.dtype, False, "int8.linear")
        return _w8a8_linear(x, w.q, w.scale)
    return int8_matmul(x, w.q, w.scale)


# ------------------------------------------------------------------------ transforms


def _params_of(params: Any) -> tuple[dict, Any]:
    p = getattr(params, "params", params)
    if not isinstance(p, dict) or "layers" not in p:
        raise TypeError(f"int8: expected a model's parameter dict or a Model, got {type(params).__name__}")
    module = getattr(params, "module", None) if hasattr(params, "params") else None
    return p, module


def _rebind(module: Any, p: dict) -> Any:
    return module.bind(p) if module is not None else p


def quantize(params: Any, group_size: int | None = None, *, embed: bool = True) -> Any:
    """Weight-only int8: every linear weight of the layers, the head and (by default) the
    embedding table become :class:`Int8Weight` (per output channel, or per group).

    Args:
        params: the parameter pytree or a :class:`~fgrad.llm.model.Model` (dense or kept
            quantized: those are dequantized first).
        group_size: inputs per scale (must divide each weight's ``in``); None: per channel.
        embed: quantize the embedding table (with a tied head, that is the head too) and
            a separate head.

    Returns:
        The same kind of pytree; norms and biases stay float.

    Raises:
        ShapeError: ``group_size`` does not divide a weight's ``in``.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
        >>> small = quantize(model)
        >>> small.params["layers"][0]["wq"], model.nbytes, small.nbytes
        (Int8Weight(shape=(16, 16), per channel, 320 bytes), 13504, 4288)
    """
    p, module = _params_of(params)
    new = dict(p)
    new["layers"] = [
        {k: quantize_weight(v, group_size) if k in LINEAR_NAMES else v for k, v in layer.items()}
        for layer in p["layers"]
    ]
    if embed:
        for k in ("embed", "head"):
            if k in p:
                new[k] = quantize_weight(p[k], group_size)
    return _rebind(module, new)


class _Recorder:
    """A weight that records ``max |x_j|`` of its inputs per channel, then multiplies."""

    __slots__ = ("base", "store", "key")

    def __init__(self, base, store, key):
        self.base, self.store, self.key = base, store, key

    @property
    def shape(self):
        return tuple(self.base.shape)

    @property
    def dtype(self):
        return np.dtype(self.base.dtype)

    def __fgrad_linear__(self, x):
        from fgrad.llm.quantized import linear as base_linear

        a = np.abs(np.asarray(x, dtype=np.float64)).reshape(-1, x.shape[-1]).max(axis=0)
        old = self.store.get(self.key)
        self.store[self.key] = a if old is None else np.maximum(old, a)
        return base_linear(x, self.base)


def calibrate(model: Any, samples: Any) -> list[dict]:
    """Per-input-channel activation absmax at each linear's input, over sample sequences.

    Runs the model eagerly on each sequence with recording weights in place.

    Args:
        model: a :class:`~fgrad.llm.model.Model` (dense or kept-quantized weights).
        samples: an iterable of token sequences (each ``(seq,)`` or ``(1, seq)`` ids, or
            ``(batch, seq)``).

    Returns:
        One dict per layer: ``{"wq": (d_model,), "wo": (n_heads * d_head,), "w_gate":
        (d_model,), "w_down": (d_ff,)}`` float64 arrays of ``max |X_j|`` (the input of
        wq is also that of wk and wv, that of w_gate that of w_up).

    Raises:
        ValueError: no samples.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
        >>> stats = calibrate(model, [[1, 2, 3], [4, 5]])
        >>> sorted(stats[0]), stats[0]["w_down"].shape
        (['w_down', 'w_gate', 'wo', 'wq'], (32,))
    """
    p, module = _params_of(model)
    stores: list[dict] = [{} for _ in p["layers"]]
    layers = []
    for layer, store in zip(p["layers"], stores):
        layer = dict(layer)
        for k in ("wq", "wo", "w_gate", "w_down"):
            layer[k] = _Recorder(layer[k], store, k)
        layers.append(layer)
    recording = dict(p, layers=layers)
    count = 0
    for seq in samples:
        tokens = np.asarray(seq)
        tokens = tokens[None] if tokens.ndim == 1 else tokens
        module.apply(recording, fnp.asarray(tokens))
        count += 1
    if not count:
        raise ValueError("int8.calibrate: no sample sequences")
    return stores


def _dense(w: Any) -> np.ndarray:
    return np.asarray(w.dequantize() if hasattr(w, "dequantize") else w, dtype=np.float32)


def smooth(params: Any, stats: list[dict], alpha: float = 0.5) -> Any:
    """SmoothQuant's smoothing: ``1/s`` folded into each RMSNorm weight, ``s`` into the
    columns of the linear weights it feeds (q/k/v; gate/up); the float model is unchanged
    up to rounding.

    ``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)``, ``max|W_j|`` over the rows of the
    weights that read channel ``j``, clamped at 1e-5 as SmoothQuant does.

    Args:
        params: the parameter pytree or Model (quantized weights are dequantized).
        stats: :func:`calibrate`'s result for this model.
        alpha: the migration strength in ``[0, 1]`` (0.5 in the paper; about 0.85 for its
            Llama results).

    Returns:
        The same kind of pytree with dense float32 smoothed norms and weights.

    Raises:
        ValueError: ``alpha`` outside ``[0, 1]`` or ``stats`` of the wrong length.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
        >>> smoothed = smooth(model, calibrate(model, [[1, 2, 3]]), alpha=0.5)
        >>> tokens = fnp.array([[3, 1, 2]])
        >>> bool(np.allclose(smoothed(tokens)[0], model(tokens)[0], atol=1e-5))
        True
    """
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"int8.smooth: alpha must be in [0, 1], got {alpha!r}")
    p, module = _params_of(params)
    if len(stats) != len(p["layers"]):
        raise ValueError(f"int8.smooth: stats for {len(stats)} layers, the model has {len(p['layers'])}")
    layers = []
    for layer, st in zip(p["layers"], stats):
        layer = dict(layer)
        for norm, names, key in (("attn_norm", ("wq", "wk", "wv"), "wq"), ("ffn_norm", ("w_gate", "w_up"), "w_gate")):
            ws = [_dense(layer[n]) for n in names]
            w_max = np.max([np.abs(w).max(axis=0) for w in ws], axis=0).astype(np.float64)
            x_max = np.asarray(st[key], dtype=np.float64)
            s = np.maximum(x_max, _EPS) ** alpha / np.maximum(w_max, _EPS) ** (1 - alpha)
            s = np.maximum(s, _EPS)
            g = np.asarray(layer[norm], dtype=np.float64)
            layer[norm] = fnp.asarray((g / s).astype(np.asarray(layer[norm]).dtype))
            for n, w in zip(names, ws):
                layer[n] = fnp.asarray((w * s[None, :]).astype(np.float32))
        layers.append(layer)
    return _rebind(module, dict(p, layers=layers))


def w8a8(params: Any) -> Any:
    """W8A8 without smoothing: every linear weight of the layers int8 per output channel,
    activations int8 per token at run time; embedding and head stay float.

    Args:
        params: the parameter pytree or Model.

    Returns:
        The same kind of pytree, its layers' linear weights :class:`Int8Weight` with
        ``act_quant``.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
        >>> w8a8(model).params["layers"][0]["w_up"]
        Int8Weight(shape=(32, 16), W8A8, 640 bytes)
    """
    p, module = _params_of(params)
    layers = [
        {k: quantize_weight(v, act_quant=True) if k in LINEAR_NAMES else v for k, v in layer.items()}
        for layer in p["layers"]
    ]
    return _rebind(module, dict(p, layers=layers))


def smoothquant(params: Any, stats: list[dict], alpha: float = 0.85) -> Any:
    """SmoothQuant W8A8: :func:`smooth` with ``alpha``, then :func:`w8a8`.

    Args:
        params: the parameter pytree or Model.
        stats: :func:`calibrate`'s result for it (on the float model).
        alpha: the migration strength (0.5 in the paper's OPT results, 0.85 for Llama).

    Returns:
        The W8A8 pytree of the smoothed model.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
        >>> sq = smoothquant(model, calibrate(model, [[1, 2, 3]]), alpha=0.85)
        >>> sq(fnp.array([[3, 1, 2]]))[0].shape
        (1, 3, 32)
    """
    return w8a8(smooth(params, stats, alpha))
