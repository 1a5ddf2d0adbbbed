"""Reductions and scans under numpy's names and signatures (``axis``, ``keepdims``).

``axis`` is an int, a tuple of ints or None (all axes); the wrappers turn it into the ops'
canonical ``axes`` (sorted non-negative ints). ``mean``, ``var``, ``std`` and
``count_nonzero`` are compositions of ops, so their derivatives come for free.

float16 input is computed in float32 and the result rounded to float16 once (``mean``,
``var``, ``std``, ``nanmean``, weighted ``logsumexp``; the ``sum`` op accumulates in
float32 itself). In float16 the sum of 100,000 ones overflows (65504 is the largest
float16), squares of values past 256 do too, and ``1 / 100000`` is a subnormal whose
rounding is then amplified: numpy's ``mean`` accumulates float16 in float32 for the same
reason, JAX and PyTorch do so for every reduction. The gradients go through the same
float32 computation (the casts' derivatives are casts), so ``grad(mean)`` over 100,000
float16 entries is ``float16(1e-5)``, not 0.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad.errors import DTypeError, ShapeError
from fgrad._args import names_errors as _named
from fgrad.numpy._elementwise import _no_out
from fgrad.numpy._linalg_top import _arr
from fgrad.ops import elementwise as _e
from fgrad.ops import reduction as _r
from fgrad.ops import shape as _s
from fgrad.ops._rules import ndim_of, norm_axes, shape_of
from fgrad.tensor import as_tensor


__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "logsumexp",
    "max",
    "mean",
    "min",
    "nanmean",
    "nansum",
    "prod",
    "std",
    "sum",
    "var",
]


def _input(x: Any, fn: str) -> Any:
    """``x`` checked to be numeric (a Tensor, an array, a number or nested lists)."""
    x = _arr(x, fn, "x")
    return as_tensor(x) if isinstance(x, complex) else x


def _keepdims(keepdims: Any, fn: str) -> bool:
    return _args.flag(keepdims, fn, "keepdims")


def _ddof(value: Any, fn: str, arg: str, *, none_ok: bool = True) -> Any:
    """A real ``ddof`` or ``correction`` within the int64 range (ints stay ints)."""
    if _args.real(value, fn, arg, none_ok=none_ok) is None:
        return None
    if abs(value) > 2**63 - 1:
        raise ValueError(f"{fn}: {arg}={value} is beyond the int64 range")
    return value


def _cast(x: Any, dtype: Any, fn: str) -> Any:
    x = _input(x, fn)
    """``x`` in the requested accumulation ``dtype`` (None: as it is); a dtype that is not
    a numeric one raises a DTypeError naming ``fn``."""
    return x if dtype is None else _e.astype(x, dtype=_args.dtype(dtype, fn))


def _widened(x: Any) -> tuple[Any, Any]:
    """``(x as float32, float16)`` for float16 ``x``, else ``(x, None)``: the value to compute
    with and the dtype to round the result to."""
    if getattr(x, "dtype", None) == dtypes.float16:
        return _e.astype(x, dtype=dtypes.float32), dtypes.float16
    return x, None


def _rounded(y: Any, dtype: Any) -> Any:
    return y if dtype is None else _e.astype(y, dtype=dtype)


def _count(x: Any, axes: tuple) -> int:
    shape = shape_of(x)
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def _where_mask(where: Any, x: Any, fn: str) -> Any:
    """numpy's ``where=`` of a reduction as a bool Tensor that broadcasts to ``x`` (None
    for None or True: every element)."""
    if where is None or where is True:
        return None
    where = _arr(where, fn, "where")
    if np.dtype(dtypes.result_type(where)) != np.bool_:
        raise DTypeError(f"{fn}: where must be a bool array or Python bool, got {_args.describe(where)}")
    try:
        np.broadcast_shapes(shape_of(where), shape_of(x))
    except ValueError:
        raise ShapeError(
            f"{fn}: where of shape {shape_of(where)} does not broadcast to a's shape {shape_of(x)}"
        ) from None
    return where


def _initial(initial: Any, fn: str) -> Any:
    return None if initial is None else _args.real(initial, fn, "initial")


@_named("sum")
def sum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Sum of elements over ``axis``.

    Args:
        a: Tensor, array or Python scalar of any shape.
        axis: int, tuple of ints, or None (all axes); negative axes count from the end.
        dtype: optional dtype to cast ``a`` to before summing.
        out: not supported (Tensors are immutable): a TypeError says to use the result.
        keepdims: keep reduced axes with size 1.
        initial: a number added to the sum.
        where: optional bool Tensor broadcastable to ``a``: only elements where it is True
            are summed; the others get a zero cotangent (as with ``fnp.where``), so NaN or
            inf entries of ``a`` left out do not reach the sum or its gradient.

    Returns:
        Tensor of the reduced shape; bools and small ints sum into the default int.
        float16 accumulates in float32 and is rounded to float16 once, as in JAX and
        PyTorch (numpy widens only along a contiguous last axis: its float16 sum down
        columns stops growing at 2048).

    Raises:
        ShapeError: an axis is out of range or repeated.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.sum(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        Tensor([3., 7.], dtype=float64)
        >>> x = fnp.array([1.0, fnp.nan, 3.0])
        >>> fnp.sum(x, where=~fnp.isnan(x))
        Tensor(4., dtype=float64)
    """
    _no_out(out, "sum")
    keepdims = _keepdims(keepdims, "sum")
    x = _cast(a, dtype, "sum")
    initial = _initial(initial, "sum")
    mask = _where_mask(where, x, "sum")
    if mask is not None:
        x = _e.where(mask, x, 0)
    res = _r.sum(x, axes=norm_axes("sum", axis, ndim_of(x)), keepdims=keepdims)
    return res if initial is None else _e.add(res, initial)


@_named("prod")
def prod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Product of elements over ``axis``; its derivative is exact with zeros in ``a``.

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        initial: a number the product is multiplied by.
        where: optional bool Tensor broadcastable to ``a``: the elements to multiply.

    Returns:
        Tensor of the reduced shape; bools and small ints multiply into the default int.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.prod(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)
        Tensor([3., 8.], dtype=float64)
        >>> fgrad.grad(fnp.prod)(fnp.array([2.0, 0.0, 0.0]))
        Tensor([0., 0., 0.], dtype=float64)
    """
    _no_out(out, "prod")
    keepdims = _keepdims(keepdims, "prod")
    x = _cast(a, dtype, "prod")
    initial = _initial(initial, "prod")
    mask = _where_mask(where, x, "prod")
    if mask is not None:
        x = _e.where(mask, x, 1)
    res = _r.prod(x, axes=norm_axes("prod", axis, ndim_of(x)), keepdims=keepdims)
    return res if initial is None else _e.multiply(res, initial)


@_named("mean")
def mean(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    *,
    where: Any = None,
) -> Any:
    """Arithmetic mean over ``axis``: ``sum / count``.

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        where: optional bool Tensor broadcastable to ``a``: the elements to average.

    Returns:
        Tensor of the reduced shape; floating dtype of ``a`` (ints and bools give float64).
        The mean of zero elements is NaN, as numpy. float16 is summed and divided in
        float32 and rounded once, as numpy does (JAX too, also for ``dtype=float16``,
        where numpy accumulates in float16); so is its derivative.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.mean(fnp.array([[1.0, 2.0], [3.0, 5.0]]), axis=0)
        Tensor([2. , 3.5], dtype=float64)
        >>> fnp.mean(fnp.ones(100_000, dtype=fnp.float16))
        Tensor(1., dtype=float16)
    """
    _no_out(out, "mean")
    keepdims = _keepdims(keepdims, "mean")
    x, rounded = _widened(_cast(a, dtype, "mean"))
    axes = norm_axes("mean", axis, ndim_of(x))
    mask = _where_mask(where, x, "mean")
    if mask is not None:
        if not dtypes.is_inexact(dtypes.result_type(x)):
            x = _e.astype(x, dtype=dtypes.float64)
        total = _r.sum(_e.where(mask, x, 0), axes=axes, keepdims=keepdims)
        count = _r.sum(_s.broadcast_to(mask, shape=shape_of(x)), axes=axes, keepdims=keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):  # no elements: NaN, as numpy
            return _rounded(_e.divide(total, _e.astype(count, dtype=total.dtype)), rounded)
    total = _r.sum(x, axes=axes, keepdims=keepdims)
    n = _count(x, axes)
    if n == 0:
        return _rounded(_e.divide(total, float("nan")), rounded)
    return _rounded(_e.divide(total, n), rounded)


def _extremum(
    name: str, op: Any, x: Any, axis: Any, out: Any, keepdims: bool, initial: Any, where: Any
) -> Any:
    _no_out(out, name)
    keepdims = _keepdims(keepdims, name)
    x = _input(x, name)
    initial = _initial(initial, name)
    mask = _where_mask(where, x, name)
    if mask is not None and initial is None:
        raise ValueError(
            f"{name}: a where mask needs initial= (the value of a slice with no element "
            "selected), as numpy's"
        )
    axes = norm_axes(name, axis, ndim_of(x))
    shape = shape_of(x)
    if builtins.any(shape[a] == 0 for a in axes):
        if initial is None:
            raise ShapeError(
                f"{name}: cannot reduce a zero-size axis of shape {shape} (axes {axes}); "
                "there is no identity for this reduction (pass initial=)"
            )
        dtype = np.dtype(dtypes.result_type(x, initial))
        # The reduced shape, filled with initial (a sum of no elements has that shape).
        empty = _r.sum(_e.astype(x, dtype=dtype), axes=axes, keepdims=keepdims)
        return _e.full_like(empty, fill_value=initial, dtype=None)
    if mask is not None:
        x = _e.where(mask, x, initial)
    res = op(x, axes=axes, keepdims=keepdims)
    if initial is not None:
        res = (_e.maximum if name in ("max", "amax") else _e.minimum)(res, initial)
    return res


@_named("max")
def max(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Largest element over ``axis`` (numpy's ``max``/``amax``); NaN propagates.

    Ties split the derivative evenly among the tied elements, as JAX does.

    Args:
        a: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        initial: a bound taken into the reduction (the result of an empty slice).
        where: optional bool Tensor broadcastable to ``a``: the elements to compare (needs
            ``initial``).

    Returns:
        Tensor of the reduced shape and ``a.dtype``.

    Raises:
        ShapeError: an axis is out of range or repeated, or has size 0 without ``initial``.
        ValueError: ``where`` without ``initial``.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.max(fnp.array([[1.0, 5.0], [3.0, 2.0]]), axis=0)
        Tensor([3., 5.], dtype=float64)
        >>> fgrad.grad(fnp.max)(fnp.array([1.0, 3.0, 3.0]))
        Tensor([0. , 0.5, 0.5], dtype=float64)
    """
    return _extremum("max", _r.max, a, axis, out, keepdims, initial, where)


@_named("min")
def min(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Smallest element over ``axis`` (numpy's ``min``/``amin``); NaN propagates.

    Ties split the derivative evenly among the tied elements, as JAX does.

    Args:
        a: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        initial: a bound taken into the reduction (the result of an empty slice).
        where: optional bool Tensor broadcastable to ``a``: the elements to compare (needs
            ``initial``).

    Returns:
        Tensor of the reduced shape and ``a.dtype``.

    Raises:
        ShapeError: an axis is out of range or repeated, or has size 0 without ``initial``.
        ValueError: ``where`` without ``initial``.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.min(fnp.array([[1.0, 5.0], [3.0, 2.0]]), axis=1, keepdims=True)
        Tensor([[1.],
                [2.]], dtype=float64)
    """
    return _extremum("min", _r.min, a, axis, out, keepdims, initial, where)


amax = max
amin = min


@_named("var")
def var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: float | None = None,
) -> Any:
    """Variance over ``axis``: ``sum(|x - mean|**2) / (count - ddof)``.

    Args:
        a: Tensor of any shape; complex input gives a real variance, as numpy.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).
        ddof: "delta degrees of freedom": ``ddof=1`` gives the unbiased sample variance.
        keepdims: keep reduced axes with size 1.
        where: optional bool Tensor broadcastable to ``a``: the elements to include.
        mean: a precomputed mean (the ``keepdims=True`` shape), numpy 2's argument.
        correction: the Array API name of ``ddof``; give one or the other.

    Returns:
        Tensor of the reduced shape; real floating dtype of ``a`` (ints give float64).
        When ``count - ddof <= 0`` the result is inf or NaN, as numpy. float16 is computed
        in float32 and rounded once, as in JAX (numpy sums float16 squares in float16, so
        its variance of values near 1000 is inf).

    Raises:
        ShapeError: an axis is out of range or repeated.
        ValueError: both ``ddof`` and ``correction`` are given.

    Example:
        >>> fnp.var(fnp.array([1.0, 2.0, 3.0, 4.0]))
        Tensor(1.25, dtype=float64)
        >>> fnp.var(fnp.array([1.0, 2.0, 3.0, 4.0]), ddof=1)
        Tensor(1.66666667, dtype=float64)
    """
    _no_out(out, "var")
    value, rounded = _variance("var", a, axis, dtype, ddof, keepdims, correction, where, mean)
    return _rounded(value, rounded)


def _variance(
    name: str,
    x: Any,
    axis: Any,
    dtype: Any,
    ddof: float,
    keepdims: bool,
    correction: Any,
    where: Any = None,
    given_mean: Any = None,
) -> tuple[Any, Any]:
    """``var`` before its last rounding: ``(value, dtype to round it to or None)``, so that
    ``std`` of float16 takes the square root in float32 (a variance past 65504 is inf in
    float16, its square root is not)."""
    ddof = _ddof(ddof, name, "ddof", none_ok=False)
    correction = _ddof(correction, name, "correction")
    keepdims = _keepdims(keepdims, name)
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"{name}: give ddof or correction, not both")
        ddof = correction
    x, rounded = _widened(_cast(x, dtype, name))
    axes = norm_axes(name, axis, ndim_of(x))
    if not dtypes.is_inexact(dtypes.result_type(x)):
        x = _e.astype(x, dtype=dtypes.float64)
    mask = _where_mask(where, x, name)
    if given_mean is not None:  # numpy 2's mean=: the mean with keepdims=True
        mu = _input(given_mean, name)
        kept = tuple(1 if d in axes else n for d, n in enumerate(shape_of(x)))
        if shape_of(mu) != kept:
            mu = _s.reshape(mu, shape=kept)
    else:
        mu = mean(x, axes, keepdims=True, where=mask)
    centred = _e.subtract(x, mu)
    if dtypes.is_complex(dtypes.result_type(x)):
        squares = _e.real(_e.multiply(centred, _e.conj(centred)))
    else:
        squares = _e.multiply(centred, centred)
    if mask is not None:
        squares = _e.where(mask, squares, 0)
        count = _r.sum(_s.broadcast_to(mask, shape=shape_of(x)), axes=axes, keepdims=keepdims)
        total = _r.sum(squares, axes=axes, keepdims=keepdims)
        dof = _e.subtract(_e.astype(count, dtype=total.dtype), ddof)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _e.divide(total, dof), rounded
    total = _r.sum(squares, axes=axes, keepdims=keepdims)
    dof = _count(x, axes) - ddof
    if dof <= 0:  # numpy warns and returns inf (or NaN for 0/0); so does the division here
        with np.errstate(divide="ignore", invalid="ignore"):
            return _e.divide(total, float(dof)), rounded
    return _e.divide(total, dof), rounded


@_named("std")
def std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: float | None = None,
) -> Any:
    """Standard deviation over ``axis``: ``sqrt(var(x, axis, ddof=ddof))``.

    The derivative at zero variance (all elements of a slice equal) is NaN, as in JAX
    (``sqrt'(0) = inf`` times a zero derivative of the variance): the standard deviation
    has no derivative there. Differentiate ``var``, or use ``sqrt(var + eps)``, where
    that point can occur. (PyTorch returns 0 there instead.)

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).
        ddof: delta degrees of freedom, as in :func:`var`.
        keepdims: keep reduced axes with size 1.
        where: optional bool Tensor broadcastable to ``a``: the elements to include.
        mean: a precomputed mean (the ``keepdims=True`` shape).
        correction: the Array API name of ``ddof``.

    Returns:
        Tensor of the reduced shape; real floating dtype of ``a`` (ints give float64).
        float16 is computed in float32, square root included, and rounded once.

    Raises:
        ShapeError: an axis is out of range or repeated.
        ValueError: both ``ddof`` and ``correction`` are given.

    Example:
        >>> fnp.std(fnp.array([[1.0, 3.0], [2.0, 2.0]]), axis=1)
        Tensor([1., 0.], dtype=float64)
        >>> fnp.std(fnp.array([-1000.0, 1000.0], dtype=fnp.float16))
        Tensor(1.e+03, dtype=float16)
    """
    _no_out(out, "std")
    value, rounded = _variance("std", a, axis, dtype, ddof, keepdims, correction, where, mean)
    return _rounded(_e.sqrt(value), rounded)


@_named("logsumexp")
def logsumexp(
    a: Any,
    axis: Any = None,
    b: Any = None,
    keepdims: bool = False,
    return_sign: bool = False,
) -> Any:
    """``log(sum(b * exp(x)))`` over ``axis``, stable for large inputs and ``-inf`` safe.

    As ``scipy.special.logsumexp`` and ``jax.nn.logsumexp``. Its derivative is
    ``softmax(x)`` along ``axis`` (``b * exp(x - out)`` with weights); a slice that is all
    ``-inf`` gives ``-inf`` and a zero derivative.

    Args:
        a: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        b: optional weights broadcastable to ``a`` (may be negative or zero; a zero weight
            drops its element, even an infinite one). Differentiable.
        keepdims: keep reduced axes with size 1.
        return_sign: also return the sign of the sum; the result is then
            ``log|sum(b * exp(x))|``. Without it, a negative sum gives NaN.

    Returns:
        Tensor of the reduced shape; floating dtype of ``a`` (ints give float64; float16
        is computed in float32 and rounded once); with ``return_sign``, a pair
        ``(result, sign)``.

    Raises:
        ShapeError: an axis is out of range or repeated, or ``b`` does not broadcast.

    Example:
        >>> fnp.logsumexp(fnp.array([[0.0, 0.0], [100.0, -fnp.inf]]), axis=1)
        Tensor([  0.69314718, 100.        ], dtype=float64)
        >>> fgrad.grad(fnp.logsumexp)(fnp.array([-fnp.inf, -fnp.inf]))
        Tensor([0., 0.], dtype=float64)
        >>> fnp.logsumexp(fnp.array([1000.0, 1000.0]), b=fnp.array([0.5, 1.5]))
        Tensor(1000.69314718, dtype=float64)
        >>> fnp.logsumexp(fnp.array([0.0, 0.0]), b=fnp.array([1.0, -3.0]), return_sign=True)
        (Tensor(0.69314718, dtype=float64), Tensor(-1., dtype=float64))
    """
    keepdims = _keepdims(keepdims, "logsumexp")
    return_sign = _args.flag(return_sign, "logsumexp", "return_sign")
    x = _input(a, "logsumexp")
    if b is not None:
        b = _arr(b, "logsumexp", "b")
        b = as_tensor(b) if isinstance(b, complex) else b
        try:
            np.broadcast_shapes(shape_of(x), shape_of(b))
        except ValueError:
            raise ShapeError(
                f"logsumexp: b of shape {shape_of(b)} does not broadcast with a's shape "
                f"{shape_of(x)}"
            ) from None
    if b is None and not return_sign:
        return _r.logsumexp(x, axes=norm_axes("logsumexp", axis, ndim_of(x)), keepdims=keepdims)
    if b is None:
        b = 1.0
    x = as_tensor(x)
    shape = tuple(np.broadcast_shapes(shape_of(x), shape_of(b)))
    if shape != shape_of(x):
        x = _s.broadcast_to(x, shape=shape)
    dtype = np.dtype(dtypes.result_type(x, b))
    rounded = None
    if dtype == dtypes.float16:  # the weighted sum in float32, rounded once
        x, rounded = _e.astype(x, dtype=dtypes.float32), dtype
    elif not dtypes.is_inexact(dtype):
        x = _e.astype(x, dtype=dtypes.float64)
    axes = norm_axes("logsumexp", axis, ndim_of(x))
    # Shift by the largest x with a non-zero weight (a constant: the result does not
    # depend on the shift); an all -inf (or all zero-weight) slice is shifted by 0.
    live = _e.where(_e.not_equal(b, 0), x, -np.inf)
    shift = _e.stop_gradient(_r.max(live, axes=axes, keepdims=True))
    shift = _e.where(_e.isfinite(shift), shift, 0)
    terms = _e.multiply(b, _e.exp(_e.subtract(live, shift)))
    total = _r.sum(terms, axes=axes, keepdims=keepdims)
    shift = shift if keepdims else _s.reshape(shift, shape=shape_of(total))
    # A sum of zero (all -inf, or weights cancelling) gives -inf with a zero derivative,
    # not 0 * inf = NaN: log a safe stand-in and select -inf.
    empty = _e.equal(total, 0)
    magnitude = _e.where(empty, 1.0, total if not return_sign else _e.abs(total))
    out = _rounded(_e.where(empty, -np.inf, _e.add(_e.log(magnitude), shift)), rounded)
    return (out, _rounded(_e.sign(total), rounded)) if return_sign else out


def _one_axis(name: str, axis: Any, ndim: int) -> int | None:
    if axis is None:
        return None
    return norm_axes(name, _args.index(axis, name, "axis"), ndim)[0]


def _arg(name: str, op: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    keepdims = _keepdims(keepdims, name)
    x = _input(x, name)
    shape = shape_of(x)
    ax = _one_axis(name, axis, len(shape))
    if (ax is None and 0 in shape) or (ax is not None and shape[ax] == 0):
        raise ShapeError(f"{name}: attempt to get {name} of an empty sequence (shape {shape})")
    return op(x, axis=ax, keepdims=keepdims)


@_named("argmax")
def argmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """Index of the largest element along ``axis`` (the first among ties).

    Args:
        a: real Tensor of any shape.
        axis: an int, or None for the index into the flattened ``a``.
        out: not supported (Tensors are immutable).
        keepdims: keep the reduced axis (all axes when ``axis`` is None) with size 1.

    Returns:
        int64 Tensor of the reduced shape. Carries no derivative.

    Raises:
        TypeError: ``axis`` is a tuple.
        ShapeError: ``axis`` is out of range, or the reduced axis has size 0.

    Example:
        >>> fnp.argmax(fnp.array([[1.0, 5.0], [3.0, 2.0]]), axis=0)
        Tensor([1, 0], dtype=int64)
    """
    _no_out(out, "argmax")
    return _arg("argmax", _r.argmax, a, axis, keepdims)


@_named("argmin")
def argmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """Index of the smallest element along ``axis`` (the first among ties).

    Args:
        a: real Tensor of any shape.
        axis: an int, or None for the index into the flattened ``a``.
        out: not supported (Tensors are immutable).
        keepdims: keep the reduced axis (all axes when ``axis`` is None) with size 1.

    Returns:
        int64 Tensor of the reduced shape. Carries no derivative.

    Raises:
        TypeError: ``axis`` is a tuple.
        ShapeError: ``axis`` is out of range, or the reduced axis has size 0.

    Example:
        >>> fnp.argmin(fnp.array([[1.0, 5.0], [3.0, 2.0]]), axis=1, keepdims=True)
        Tensor([[0],
                [1]], dtype=int64)
    """
    _no_out(out, "argmin")
    return _arg("argmin", _r.argmin, a, axis, keepdims)


@_named("all")
def all(
    a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = None
) -> Any:
    """Whether every element over ``axis`` is true (nonzero).

    Args:
        a: Tensor of any shape and dtype.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        where: optional bool Tensor broadcastable to ``a``: the elements to test.

    Returns:
        bool Tensor of the reduced shape (True over zero elements). Carries no derivative.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.all(fnp.array([1.0, 0.0]))
        Tensor(False, dtype=bool)
    """
    _no_out(out, "all")
    keepdims = _keepdims(keepdims, "all")
    x = _input(a, "all")
    mask = _where_mask(where, x, "all")
    if mask is not None:
        x = _e.where(mask, _e.astype(x, dtype=dtypes.bool_), True)
    return _r.all(x, axes=norm_axes("all", axis, ndim_of(x)), keepdims=keepdims)


@_named("any")
def any(
    a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = None
) -> Any:
    """Whether some element over ``axis`` is true (nonzero).

    Args:
        a: Tensor of any shape and dtype.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        where: optional bool Tensor broadcastable to ``a``: the elements to test.

    Returns:
        bool Tensor of the reduced shape (False over zero elements). Carries no derivative.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.any(fnp.array([[0.0, 0.0], [0.0, 2.0]]), axis=1)
        Tensor([False,  True], dtype=bool)
    """
    _no_out(out, "any")
    keepdims = _keepdims(keepdims, "any")
    x = _input(a, "any")
    mask = _where_mask(where, x, "any")
    if mask is not None:
        x = _e.where(mask, _e.astype(x, dtype=dtypes.bool_), False)
    return _r.any(x, axes=norm_axes("any", axis, ndim_of(x)), keepdims=keepdims)


@_named("count_nonzero")
def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """The number of nonzero elements over ``axis``.

    Args:
        a: Tensor of any shape and dtype.
        axis: int, tuple of ints, or None (all axes).
        keepdims: keep reduced axes with size 1.

    Returns:
        int64 Tensor of the reduced shape. Carries no derivative.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.count_nonzero(fnp.array([[0.0, 1.0], [2.0, 3.0]]), axis=1)
        Tensor([1, 2], dtype=int64)
    """
    keepdims = _keepdims(keepdims, "count_nonzero")
    x = _input(a, "count_nonzero")
    nonzero = _e.not_equal(x, 0)  # any dtype, complex included (x != 0 is numpy's test)
    return _r.sum(nonzero, axes=norm_axes("count_nonzero", axis, ndim_of(x)), keepdims=keepdims)


def _without_nans(x: Any) -> tuple[Any, Any]:
    # NaNs replaced by 0 through where, so their cotangent is 0 (JAX's masked branch).
    if not dtypes.is_inexact(dtypes.result_type(x)):
        return x, None
    nan = _e.isnan(x)
    return _e.where(nan, 0, x), nan


@_named("nansum")
def nansum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Sum over ``axis`` treating NaNs as zero; NaN entries get a zero derivative.

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        initial: a number added to the sum.
        where: optional bool Tensor broadcastable to ``a``: the elements to sum.

    Returns:
        Tensor of the reduced shape, as :func:`sum`.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.nansum(fnp.array([1.0, fnp.nan, 2.0]))
        Tensor(3., dtype=float64)
        >>> fgrad.grad(fnp.nansum)(fnp.array([1.0, fnp.nan]))
        Tensor([1., 0.], dtype=float64)
    """
    _no_out(out, "nansum")
    x, _ = _without_nans(_cast(a, dtype, "nansum"))
    return sum(x, axis, None, None, keepdims, initial, where)


@_named("nanmean")
def nanmean(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    *,
    where: Any = None,
) -> Any:
    """Mean over ``axis`` of the entries that are not NaN; NaN entries get a zero derivative.

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        where: optional bool Tensor broadcastable to ``a``: the elements to average.

    Returns:
        Tensor of the reduced shape, as :func:`mean` (float16 computed in float32); NaN
        for a slice that is all NaN.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.nanmean(fnp.array([[1.0, fnp.nan], [2.0, 4.0]]), axis=1)
        Tensor([1., 3.], dtype=float64)
    """
    _no_out(out, "nanmean")
    keepdims = _keepdims(keepdims, "nanmean")
    x, rounded = _widened(_cast(a, dtype, "nanmean"))  # float16: counts past 2048 are not exact
    mask = _where_mask(where, x, "nanmean")
    if mask is not None:  # excluded elements count as NaNs
        x = _e.where(mask, x if dtypes.is_inexact(dtypes.result_type(x)) else _e.astype(x, dtype=dtypes.float64), np.nan)
    clean, nan = _without_nans(x)
    if nan is None:
        return _rounded(mean(x, axis, keepdims=keepdims), rounded)
    axes = norm_axes("nanmean", axis, ndim_of(x))
    total = _r.sum(clean, axes=axes, keepdims=keepdims)
    count = _r.sum(_e.logical_not(nan), axes=axes, keepdims=keepdims)
    with np.errstate(invalid="ignore"):  # an all-NaN slice: 0 / 0 = NaN, as numpy
        return _rounded(_e.divide(total, _e.astype(count, dtype=total.dtype)), rounded)


def _scan(name: str, op: Any, x: Any, axis: Any, dtype: Any) -> Any:
    x = _cast(x, dtype, name)
    if axis is None:  # numpy scans the flattened array
        x = _s.reshape(x, shape=(int(np.prod(shape_of(x), dtype=np.int64)),))
        axis = 0
    return op(x, axis=_one_axis(name, axis, ndim_of(x)), reverse=False)


@_named("cumsum")
def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum along ``axis``: ``out[i] = x[0] + ... + x[i]``.

    Args:
        a: Tensor of any shape.
        axis: an int, or None to scan the flattened ``a`` (the numpy default).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).

    Returns:
        Tensor of ``a.shape`` (flattened when ``axis`` is None); bools and small ints sum
        into the default int.

    Raises:
        TypeError: ``axis`` is a tuple.
        ShapeError: ``axis`` is out of range.

    Example:
        >>> fnp.cumsum(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        Tensor([[1., 3.],
                [3., 7.]], dtype=float64)
        >>> fnp.cumsum(fnp.array([[1, 2], [3, 4]]))
        Tensor([ 1,  3,  6, 10], dtype=int64)
    """
    _no_out(out, "cumsum")
    return _scan("cumsum", _r.cumsum, a, axis, dtype)


@_named("cumprod")
def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product along ``axis``: ``out[i] = x[0] * ... * x[i]``.

    Its derivative is exact with zeros in ``a``, at every order.

    Args:
        a: Tensor of any shape.
        axis: an int, or None to scan the flattened ``a`` (the numpy default).
        dtype: optional dtype to cast ``a`` to first.
        out: not supported (Tensors are immutable).

    Returns:
        Tensor of ``a.shape`` (flattened when ``axis`` is None); bools and small ints
        multiply into the default int.

    Raises:
        TypeError: ``axis`` is a tuple.
        ShapeError: ``axis`` is out of range.

    Example:
        >>> fnp.cumprod(fnp.array([1.0, 2.0, 3.0, 4.0]))
        Tensor([ 1.,  2.,  6., 24.], dtype=float64)
    """
    _no_out(out, "cumprod")
    return _scan("cumprod", _r.cumprod, a, axis, dtype)
