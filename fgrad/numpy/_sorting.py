"""Sorting, searching and counting under numpy's names.

``sort``, ``argsort`` and ``searchsorted`` are ops (:mod:`fgrad.ops.sorting`); ``median``,
``quantile``, ``percentile`` and ``top_k`` are compositions of ``sort``/``argsort`` with
gathers, so their derivatives come free (each value's derivative follows the element it
was sorted from). ``nonzero``, ``argwhere``, ``flatnonzero`` and ``unique`` return shapes
that depend on values: they need concrete inputs (eager code, ``grad``), unless a static
``size=`` is given, as in JAX, which makes them traceable by ``jit``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from fgrad import _args, backend, dtypes
from fgrad.core.trace import concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.numpy._indexing import take, take_along_axis
from fgrad.numpy._shape import _tensor, concatenate, moveaxis, ravel, reshape, stack
from fgrad.ops import elementwise as _e
from fgrad.ops import reduction as _r
from fgrad.ops import sorting as _so
from fgrad.ops._rules import norm_axes
from fgrad.tensor import Tensor, _wrap, asarray

__all__ = [
    "argsort",
    "argwhere",
    "flatnonzero",
    "median",
    "nonzero",
    "percentile",
    "quantile",
    "searchsorted",
    "sort",
    "top_k",
    "unique",
]


def _prepare(name: str, a: Any, axis: Any, kind: Any, order: Any) -> tuple:
    """``a`` as a Tensor and ``axis`` as a non-negative int (``None`` flattens ``a``)."""
    if order is not None:
        raise ValueError(f"{name}: order= (sorting structured arrays by field) is not supported")
    _args.choice(kind, name, "kind", ("stable", "mergesort", "quicksort", "heapsort"), none_ok=True)
    a = _real(a, name, "a")
    if axis is None:
        return ravel(a), 0
    if a.ndim == 0:
        _args.index(axis, name, "axis")
        raise ShapeError(f"{name}: a 0-d Tensor has no axis {axis}; pass axis=None to flatten it")
    return a, _args.axis(axis, name, a.ndim)


def _real(a: Any, name: str, arg: str) -> Any:
    """``a`` as a Tensor of real numbers: complex values have no order."""
    a = _tensor(a, name, arg)
    if dtypes.is_complex(a.dtype):
        raise DTypeError(
            f"{name}: complex values have no order, got dtype {a.dtype}; sort by fnp.real, "
            "fnp.abs or a key of your choice"
        )
    return a


# ------------------------------------------------------------------------ sort, argsort


def sort(
    a: Any,
    axis: int | None = -1,
    kind: str | None = None,
    order: Any = None,
    *,
    stable: bool | None = True,
    descending: bool = False,
) -> Any:
    """``a`` sorted along ``axis`` (``jax.numpy.sort``'s signature).

    The sort is always stable (``kind`` and ``stable`` are accepted for numpy/JAX
    compatibility; an unstable sort may be stable). Differentiable: each value's derivative
    goes to the element it was sorted from. Among equal elements the derivative follows the
    stable order (the first of them in ``a`` gets the first output position's cotangent),
    as in JAX; ties are not averaged. NaNs sort last (first when ``descending``).

    Args:
        a: real Tensor, array or list.
        axis: int, the axis to sort along; None sorts the flattened ``a``.
        kind: ignored (numpy's algorithm choice).
        order: must be None (structured arrays are not supported).
        stable: a bool or None (numpy's default), ignored; the sort is always stable.
        descending: sort from largest to smallest (ties keep their original order).

    Returns:
        Tensor of ``a``'s shape (1-D when ``axis`` is None) and dtype.

    Raises:
        ShapeError: ``axis`` is out of range.
        DTypeError: ``a`` is not real numbers, ``axis`` is not an int, or a flag not a
            bool.
        ValueError: an unknown ``kind`` or an ``order``.

    Example:
        >>> fnp.sort(fnp.array([[3.0, 1.0], [0.0, 2.0]]), axis=0)
        Tensor([[0., 1.],
                [3., 2.]], dtype=float64)
        >>> fnp.sort(fnp.array([1.0, 3.0, 2.0]), descending=True)
        Tensor([3., 2., 1.], dtype=float64)
        >>> fgrad.grad(lambda x: fnp.sort(x)[-1])(fnp.array([1.0, 5.0, 2.0]))  # the max
        Tensor([0., 1., 0.], dtype=float64)
    """
    a, axis = _prepare("sort", a, axis, kind, order)
    if stable is not None:
        _args.flag(stable, "sort", "stable")
    return _so.sort(a, axis=axis, descending=_args.flag(descending, "sort", "descending"))


def argsort(
    a: Any,
    axis: int | None = -1,
    kind: str | None = None,
    order: Any = None,
    *,
    stable: bool | None = True,
    descending: bool = False,
) -> Any:
    """Indices that sort ``a`` along ``axis``, stably (``jax.numpy.argsort``'s signature).

    Equal elements keep their order, also when ``descending`` (as the Array API's
    ``argsort``, not ``argsort(-a)`` reversed). ``take_along_axis(a, argsort(a, axis),
    axis)`` is ``sort(a, axis)``.

    Args:
        a: real Tensor, array or list.
        axis: int, the axis to sort along; None sorts the flattened ``a``.
        kind: ignored (numpy's algorithm choice).
        order: must be None.
        stable: a bool or None (numpy's default), ignored; the sort is always stable.
        descending: from largest to smallest.

    Returns:
        int64 Tensor of ``a``'s shape (1-D when ``axis`` is None). Carries no derivative.

    Raises:
        ShapeError: ``axis`` is out of range.
        DTypeError: ``a`` is not real numbers, ``axis`` is not an int, or a flag not a
            bool.
        ValueError: an unknown ``kind`` or an ``order``.

    Example:
        >>> fnp.argsort(fnp.array([2.0, 1.0, 2.0, 0.0]))
        Tensor([3, 1, 0, 2], dtype=int64)
        >>> fnp.argsort(fnp.array([2.0, 1.0, 2.0, 0.0]), descending=True)
        Tensor([0, 2, 1, 3], dtype=int64)
    """
    a, axis = _prepare("argsort", a, axis, kind, order)
    if stable is not None:
        _args.flag(stable, "argsort", "stable")
    return _so.argsort(a, axis=axis, descending=_args.flag(descending, "argsort", "descending"))


def top_k(x: Any, k: int) -> tuple:
    """The ``k`` largest entries along the last axis and their indices (``jax.lax.top_k``).

    Not a numpy function: JAX has it as ``jax.lax.top_k``; fgrad keeps it here for users
    of ``torch.topk`` and ``jax.lax.top_k``. Values come largest first; among equal values
    the lower index comes first. Differentiable in ``x``: the derivative of each value
    goes to the element it was taken from.

    Args:
        x: real Tensor of at least one dimension, ``(..., n)``.
        k: static int, ``0 <= k <= n``.

    Returns:
        ``(values, indices)``: ``(..., k)`` Tensors, ``x.dtype`` and int64.

    Raises:
        ShapeError: ``x`` is 0-d or ``k`` is out of range.
        DTypeError: ``x`` is not real numbers, or ``k`` is not an int.

    Example:
        >>> values, indices = fnp.top_k(fnp.array([1.0, 4.0, 2.0, 4.0]), 3)
        >>> values, indices
        (Tensor([4., 4., 2.], dtype=float64), Tensor([1, 3, 2], dtype=int64))
        >>> fgrad.grad(lambda x: fnp.sum(fnp.top_k(x, 2)[0]))(fnp.array([1.0, 3.0, 2.0]))
        Tensor([0., 1., 1.], dtype=float64)
    """
    x = _real(x, "top_k", "x")
    if x.ndim == 0:
        raise ShapeError("top_k: needs a Tensor of at least one dimension, got a 0-d one")
    n = x.shape[-1]
    k = _args.index(k, "top_k", "k", what="a static int")
    if not 0 <= k <= n:
        raise ShapeError(f"top_k: k={k} is out of range for a last axis of size {n}")
    indices = _so.argsort(x, axis=x.ndim - 1, descending=True)[..., : int(k)]
    return take_along_axis(x, indices, axis=-1), indices


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """Where ``v`` would be inserted into the sorted 1-D ``a`` to keep it sorted.

    Args:
        a: 1-D real Tensor, sorted ascending (or put in order by ``sorter``).
        v: real Tensor or scalar of any shape.
        side: ``"left"``: the first suitable position (``a[i-1] < v <= a[i]``);
            ``"right"``: the last one (``a[i-1] <= v < a[i]``).
        sorter: optional integer indices that sort ``a`` (``argsort(a)``).

    Returns:
        int64 Tensor of ``v``'s shape, values in ``[0, len(a)]``. Carries no derivative.

    Raises:
        ShapeError: ``a`` is not 1-D, or ``sorter`` does not index it.
        ValueError: ``side`` is not ``"left"`` or ``"right"``.
        DTypeError: ``a`` or ``v`` is not real numbers, or ``sorter`` not integers.

    Example:
        >>> fnp.searchsorted(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.5, 2.0, 9.0]))
        Tensor([0, 1, 3], dtype=int64)
    """
    _args.choice(side, "searchsorted", "side", ("left", "right"))
    a = _real(a, "searchsorted", "a")
    if a.ndim != 1:
        raise ShapeError(f"searchsorted: a must be 1-D, got shape {tuple(a.shape)}")
    if sorter is not None:
        sorter = _tensor(sorter, "searchsorted", "sorter")
        if not dtypes.is_integer(sorter.dtype) or tuple(sorter.shape) != tuple(a.shape):
            raise DTypeError(
                f"searchsorted: sorter must be integer indices of a's shape {tuple(a.shape)} "
                f"(fnp.argsort(a)), got {sorter.aval}"
            )
        a = take(a, sorter)
    if not isinstance(v, (Tensor, int, float)):
        v = _real(v, "searchsorted", "v")
    elif isinstance(v, Tensor) and dtypes.is_complex(v.dtype):
        v = _real(v, "searchsorted", "v")
    return _so.searchsorted(a, v, side=side)


# ------------------------------------------------------------------------ order statistics


_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _last_axis(name: str, a: Any, axis: Any) -> tuple:
    """``a`` with the reduced ``axis`` (int, tuple or None) merged into one last axis,
    and the shape the result takes with ``keepdims``."""
    axes = norm_axes(name, axis, a.ndim)
    kept = tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    rest = [d for d in range(a.ndim) if d not in axes]
    moved = moveaxis(a, axes, tuple(range(len(rest), a.ndim))) if axes else a
    n = math.prod(a.shape[d] for d in axes)
    return reshape(moved, tuple(a.shape[d] for d in rest) + (n,)), kept


def quantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Any:
    """The ``q``-th quantiles of ``a`` over ``axis`` (numpy's ``quantile``).

    Built on ``sort``: differentiable in ``a`` (the interpolation weights go to the two
    elements each quantile lies between; with ties the stable order picks them) and, for
    ``method="linear"``, in ``q``. A NaN in a reduced slice makes its quantiles NaN, as
    in numpy.

    Args:
        a: real Tensor.
        q: quantiles in ``[0, 1]``: a Python float or a Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        method: ``"linear"`` (numpy's default), ``"lower"``, ``"higher"``, ``"nearest"`` or
            ``"midpoint"``, numpy's meanings.
        keepdims: keep the reduced axes with size 1.
        out: must be None (Tensors are immutable).
        overwrite_input: a bool, ignored (numpy's permission to sort ``a`` in place).

    Returns:
        Tensor of shape ``q.shape + reduced shape``, floating dtype of ``a`` (ints give
        float64).

    Raises:
        ShapeError: ``a`` is empty along ``axis``, or an axis is out of range.
        ValueError: an unknown ``method``, or a concrete ``q`` outside ``[0, 1]`` (or NaN).
        DTypeError: ``a`` or ``q`` is not real numbers, or ``keepdims`` not a bool.

    Example:
        >>> a = fnp.array([[1.0, 2.0, 4.0], [3.0, 0.0, 5.0]])
        >>> fnp.quantile(a, 0.25, axis=1)
        Tensor([1.5, 1.5], dtype=float64)
        >>> fnp.quantile(a, fnp.array([0.0, 1.0]))
        Tensor([0., 5.], dtype=float64)
    """
    _numpy_extras("quantile", out, overwrite_input, weights)
    return _quantile(a, q, axis, method, keepdims, "quantile", 1)


def _numpy_extras(name: str, out: Any, overwrite_input: Any, weights: Any) -> None:
    """numpy's ``out`` (refused: Tensors are immutable), ``overwrite_input`` (a hint,
    checked) and ``weights`` (numpy's weighted quantiles: not supported)."""
    if out is not None:
        raise TypeError(
            f"{name}: out= is not supported: Tensors are immutable; use the returned Tensor "
            "(functional style)"
        )
    _args.flag(overwrite_input, name, "overwrite_input")
    if weights is not None:
        raise ValueError(
            f"{name}: weights= (numpy's weighted inverted_cdf quantiles) is not supported"
        )


def _quantile(a: Any, q: Any, axis: Any, method: Any, keepdims: Any, name: str, scale: int):
    """quantile (``scale`` 1), percentile (100) and median, their errors naming ``name``."""
    _args.choice(method, name, "method", _METHODS)
    keepdims = _args.flag(keepdims, name, "keepdims")
    a = _tensor(a, name, "a")
    dtype = np.dtype(a.dtype)
    if dtypes.is_complex(dtype):
        raise DTypeError(f"{name}: complex values have no order, got dtype {dtype}")
    if not dtypes.is_floating(dtype):
        a = _e.astype(a, dtype=dtypes.float64)
        dtype = dtypes.float64
    flat, kept = _last_axis(name, a, axis)
    n = flat.shape[-1]
    if n == 0:
        raise ShapeError(f"{name}: cannot take quantiles of an empty slice (shape {a.shape})")
    what = "percentiles" if scale == 100 else "quantiles"
    if not isinstance(q, Tensor):
        q = _tensor(q, name, "q")
    if dtypes.is_complex(q.dtype) or dtypes.is_bool(q.dtype):
        raise DTypeError(f"{name}: q must be real numbers, got dtype {q.dtype}")
    try:
        qdata = np.asarray(_wrap(concrete_value(q)))
        if np.any(~((qdata >= 0) & (qdata <= scale))):  # NaN too
            raise ValueError(f"{name}: {what} must be in [0, {scale}], got {qdata}")
    except ConcretizationError:
        pass  # traced q: unchecked, as in jax.numpy
    q = _e.astype(q, dtype=dtype) if scale == 1 else _e.divide(_e.astype(q, dtype=dtype), scale)
    s = _so.sort(flat, axis=flat.ndim - 1, descending=False)
    # Positions in float64 whatever a's dtype, so floor() is exact for long slices.
    pos = _e.multiply(_e.astype(q, dtype=dtypes.float64), n - 1)
    lo = _e.floor(pos)
    if method == "lower":
        result = _gather(s, lo)
    elif method == "higher":
        result = _gather(s, _e.ceil(pos))
    elif method == "nearest":
        result = _gather(s, _e.round(pos))  # halves to even, as numpy
    elif method == "midpoint":
        result = _e.multiply(_e.add(_gather(s, lo), _gather(s, _e.ceil(pos))), 0.5)
    else:
        w = _e.astype(_e.subtract(pos, _e.stop_gradient(lo)), dtype=dtype)
        w = reshape(w, tuple(w.shape) + (1,) * (s.ndim - 1))  # q's axes lead the result
        below = _gather(s, lo)
        above = _gather(s, _e.minimum(_e.add(lo, 1), n - 1))
        result = _e.add(below, _e.multiply(w, _e.subtract(above, below)))
        # w == 0 picks ``below`` exactly (inf - inf would give NaN).
        result = _e.where(_e.equal(w, 0), below, result)
    nan = _r.any(_e.isnan(s), axes=(s.ndim - 1,), keepdims=False)
    result = _e.where(nan, np.nan, result)
    if keepdims:
        result = reshape(result, tuple(q.shape) + kept)
    return _e.astype(result, dtype=dtype)


def _gather(s: Any, pos: Any) -> Any:
    """``s[..., pos]`` for float positions ``pos`` of shape ``Q``: shape ``Q + s.shape[:-1]``."""
    idx = _e.astype(_e.stop_gradient(pos), dtype=dtypes.int64)
    q_nd = idx.ndim
    out = take(s, idx, axis=-1)  # s.shape[:-1] + Q
    if q_nd == 0:
        return out
    batch = s.ndim - 1
    return moveaxis(out, tuple(range(batch, batch + q_nd)), tuple(range(q_nd)))


def percentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Any:
    """The ``q``-th percentiles of ``a`` over ``axis``: :func:`quantile` at ``q / 100``.

    Args:
        a: real Tensor.
        q: percentiles in ``[0, 100]``, a Python float or Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        method: as in :func:`quantile`.
        keepdims: keep the reduced axes with size 1.
        out: must be None (Tensors are immutable).
        overwrite_input: a bool, ignored (numpy's permission to sort ``a`` in place).

    Returns:
        Tensor of shape ``q.shape + reduced shape``, floating dtype of ``a``.

    Raises:
        ShapeError: as :func:`quantile`.
        ValueError: as :func:`quantile`; a concrete ``q`` outside ``[0, 100]`` or NaN.
        DTypeError: as :func:`quantile`.

    Example:
        >>> fnp.percentile(fnp.array([1.0, 2.0, 3.0, 4.0]), 50)
        Tensor(2.5, dtype=float64)
    """
    _numpy_extras("percentile", out, overwrite_input, weights)
    return _quantile(a, q, axis, method, keepdims, "percentile", 100)


def median(
    a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
    keepdims: bool = False,
) -> Any:
    """The median of ``a`` over ``axis`` (numpy's ``median``).

    The middle element of the sorted slice, or the mean of the two middle ones for an even
    length. Differentiable: the derivative goes to the middle element(s), half each for an
    even length. A NaN in a slice gives NaN, as in numpy.

    Args:
        a: real Tensor.
        axis: int, tuple of ints, or None (all axes).
        keepdims: keep the reduced axes with size 1.
        out: must be None (Tensors are immutable).
        overwrite_input: a bool, ignored (numpy's permission to sort ``a`` in place).

    Returns:
        Tensor of the reduced shape, floating dtype of ``a`` (ints give float64).

    Raises:
        ShapeError: ``a`` is empty along ``axis``, or an axis is out of range.
        DTypeError: ``a`` is not real numbers, ``axis`` not an int or a tuple of ints, or
            ``keepdims`` not a bool.

    Example:
        >>> fnp.median(fnp.array([[3.0, 1.0, 2.0], [4.0, 0.0, 9.0]]), axis=1)
        Tensor([2., 4.], dtype=float64)
        >>> fgrad.grad(fnp.median)(fnp.array([4.0, 1.0, 3.0, 2.0]))
        Tensor([0. , 0. , 0.5, 0.5], dtype=float64)
    """
    _numpy_extras("median", out, overwrite_input, None)
    return _quantile(a, 0.5, axis, "linear", keepdims, "median", 1)


# ------------------------------------------------------------------------ data-dependent shapes


def _concrete(name: str, x: Any, hint: str) -> Any:
    """The backend array of ``x``; ConcretizationError with a fix when it is traced abstractly."""
    try:
        return concrete_value(x) if isinstance(x, Tensor) else np.asarray(x)
    except ConcretizationError:
        raise ConcretizationError(
            f"{name}: the result's shape depends on the values of its input "
            f"{x.aval}, which is traced here (no values yet under jit or make_graph; one set "
            f"per example under vmap), so one result shape cannot be chosen. {hint}"
        ) from None


_SIZE_HINT = (
    "Pass a static size=N (and fill_value) for a fixed-size result, as in JAX, or call it "
    "outside the traced function."
)


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """Indices of the nonzero (True) elements of ``a``, one integer Tensor per axis.

    Without ``size`` the number of indices depends on the values, so ``a`` must be
    concrete (eager code or ``grad``); under ``jit`` or ``make_graph`` pass a static
    ``size``, as in JAX: the first ``size`` indices are returned (in row-major order),
    padded with ``fill_value`` when there are fewer.

    Args:
        a: Tensor of at least one dimension; NaN counts as nonzero.
        size: optional static int, the length of each returned index Tensor.
        fill_value: padding for ``size`` (default 0): an int, or a tuple with one per axis.

    Returns:
        Tuple of ``a.ndim`` int64 Tensors of one length.

    Raises:
        ConcretizationError: ``a`` is traced abstractly and ``size`` is None.
        ShapeError: ``a`` is 0-d, or ``fill_value`` has the wrong length.
        DTypeError: ``a`` is not numeric, ``size`` is not an int or ``fill_value`` not
            ints.
        ValueError: ``size`` is negative.

    Example:
        >>> fnp.nonzero(fnp.array([[0.0, 1.0], [2.0, 0.0]]))
        (Tensor([0, 1], dtype=int64), Tensor([1, 0], dtype=int64))
        >>> fnp.nonzero(fnp.array([0, 3, 0, 4]), size=3, fill_value=-1)
        (Tensor([ 1,  3, -1], dtype=int64),)
    """
    return _nonzero("nonzero", a, size, fill_value)


def _nonzero(name: str, a: Any, size: Any, fill_value: Any) -> tuple:
    a = _tensor(a, name, "a")
    size = _args.size(size, name, "size", none_ok=True)
    if a.ndim == 0:
        raise ShapeError(
            f"{name}: a 0-d Tensor has no axes to index (numpy 2 refuses it too); use "
            "fnp.atleast_1d(a) first"
        )
    if size is None:
        data = _concrete(name, a, _SIZE_HINT)
        return tuple(_wrap(i) for i in backend.namespace_of(data).nonzero(data))
    return _nonzero_sized(a, size, fill_value, name)


def _nonzero_sized(a: Any, size: int, fill_value: Any, name: str = "nonzero") -> tuple:
    """``nonzero`` with a static ``size``, from ops only (traceable): a stable argsort of
    ``a == 0`` puts the nonzero positions first, in order."""
    shape = tuple(a.shape)
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ShapeError(f"{name}: fill_value {fill_value} needs one entry per axis of {shape}")
    fills = tuple(_args.index(f, name, "fill_value", none_ok=True) for f in fills)
    flat = ravel(_e.not_equal(a, 0))
    n = flat.shape[0]
    perm = _so.argsort(
        _e.astype(_e.logical_not(flat), dtype=np.dtype(np.int8)), axis=0, descending=False
    )
    if size > n:
        perm = concatenate([perm, asarray(np.zeros(size - n, np.int64), device=a.device)])
    perm = perm[:size]
    count = _r.sum(_e.astype(flat, dtype=dtypes.int64), axes=(0,), keepdims=False)
    valid = _e.less(asarray(np.arange(size), device=a.device), count)
    out = []
    stride = n
    for d, m in enumerate(shape):
        stride //= builtins.max(m, 1)
        coord = _e.remainder(_e.floor_divide(perm, builtins.max(stride, 1)), builtins.max(m, 1))
        out.append(_e.where(valid, coord, 0 if fills[d] is None else int(fills[d])))
    return tuple(out)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Indices of the nonzero elements of the flattened ``a`` (numpy's ``flatnonzero``).

    Needs a concrete ``a`` unless a static ``size`` is given (see :func:`nonzero`).

    Raises:
        As :func:`nonzero` (a 0-d ``a`` is fine: it is flattened first).

    Example:
        >>> fnp.flatnonzero(fnp.array([[0, 5], [7, 0]]))
        Tensor([1, 2], dtype=int64)
    """
    return _nonzero("flatnonzero", ravel(_tensor(a, "flatnonzero", "a")), size, fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Indices of the nonzero elements of ``a``, one row per element: ``(N, a.ndim)``.

    Needs a concrete ``a`` unless a static ``size`` is given (see :func:`nonzero`).

    Raises:
        As :func:`nonzero` (a 0-d ``a`` gives ``(N, 0)``).

    Example:
        >>> fnp.argwhere(fnp.array([[0.0, 1.0], [2.0, 0.0]]))
        Tensor([[0, 1],
                [1, 0]], dtype=int64)
    """
    a = _tensor(a, "argwhere", "a")
    if a.ndim == 0:
        idx = _nonzero("argwhere", reshape(a, (1,)), size, fill_value)
        return reshape(idx[0], (-1, 1))[:, :0]
    return stack(_nonzero("argwhere", a, size, fill_value), axis=1)


def unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """The sorted unique elements of ``ar`` (numpy's ``unique``).

    The number of unique elements depends on the values, so ``ar`` must be concrete (eager
    code or ``grad``) unless a static ``size`` is given (``axis=None`` only), as in JAX:
    then the first ``size`` unique values are returned, padded with ``fill_value``
    (default: the smallest value). The values are differentiable in ``ar``: each one's
    derivative goes to its first occurrence.

    Args:
        ar: Tensor of any shape.
        return_index: also return the index of each value's first occurrence.
        return_inverse: also return the indices that rebuild ``ar`` from the values.
        return_counts: also return how often each value occurs.
        axis: None (flatten) or an int: unique slices along that axis (needs concrete
            ``ar``).
        equal_nan: collapse NaNs into one value (numpy's default).
        sorted: a bool; the values always come sorted (numpy allows any order with False).
        size: optional static int, the number of values returned.
        fill_value: padding value when ``size`` exceeds the number of unique values.

    Returns:
        The values Tensor, or a tuple of it and the requested int64 index Tensors, in
        numpy's order (values, index, inverse, counts).

    Raises:
        ConcretizationError: ``ar`` is traced abstractly and ``size`` is None.
        ShapeError: ``axis`` is out of range.
        ValueError: ``size`` is given together with ``axis``, or is negative.
        DTypeError: ``ar`` is not numeric, ``size`` or ``axis`` not an int, or a flag not
            a bool.

    Example:
        >>> fnp.unique(fnp.array([3, 1, 3, 2, 1]))
        Tensor([1, 2, 3], dtype=int64)
        >>> values, counts = fnp.unique(fnp.array([3.0, 1.0, 3.0]), return_counts=True)
        >>> values, counts
        (Tensor([1., 3.], dtype=float64), Tensor([1, 2], dtype=int64))
        >>> fnp.unique(fnp.array([2, 2, 5]), size=3, fill_value=0)
        Tensor([2, 5, 0], dtype=int64)
    """
    ar = _tensor(ar, "unique", "ar")
    flags = {
        name: _args.flag(value, "unique", name)
        for name, value in (
            ("return_index", return_index),
            ("return_inverse", return_inverse),
            ("return_counts", return_counts),
            ("equal_nan", equal_nan),
            ("sorted", sorted),
        )
    }
    equal_nan = flags["equal_nan"]
    size = _args.size(size, "unique", "size", none_ok=True)
    if axis is not None:
        _args.index(axis, "unique", "axis")
    if size is not None:
        if axis is not None:
            raise ValueError("unique: size= works with axis=None only")
        out = _unique_sized(ar, size, fill_value, equal_nan)
    else:
        out = _unique_eager(ar, axis, equal_nan)
    want = (True, flags["return_index"], flags["return_inverse"], flags["return_counts"])
    picked = tuple(o for o, w in zip(out, want) if w)
    return picked[0] if len(picked) == 1 else picked


def _unique_eager(ar: Any, axis: Any, equal_nan: bool) -> tuple:
    data = _concrete("unique", ar, _SIZE_HINT)
    host = np.asarray(_wrap(data))  # one copy to the host; unique is a host-side decision
    if axis is not None:
        if ar.ndim == 0:
            raise ShapeError("unique: a 0-d Tensor has no axis; pass axis=None")
        axis = _args.axis(axis, "unique", ar.ndim)
    _, index, inverse, counts = np.unique(
        host,
        return_index=True,
        return_inverse=True,
        return_counts=True,
        axis=axis,
        equal_nan=equal_nan,
    )
    device = ar.device
    index = asarray(index.astype(np.int64), device=device)
    values = take(ar, index, axis=axis)  # differentiable: the first occurrences
    return (
        values,
        index,
        asarray(inverse.astype(np.int64), device=device),
        asarray(counts.astype(np.int64), device=device),
    )


def _unique_sized(ar: Any, size: int, fill_value: Any, equal_nan: bool) -> tuple:
    """``unique`` with a static ``size`` from ops only (traceable): sort, mark the first of
    each run of equal values, and pick the marks with a sized ``nonzero``."""
    flat = ravel(ar)
    n = flat.shape[0]
    if n == 0:
        raise ShapeError("unique: size= needs a non-empty input")
    perm = _so.argsort(flat, axis=0, descending=False)
    s = take(flat, perm)
    first = _run_starts(s, equal_nan)
    starts = _nonzero_sized(first, size + 1, n, "unique")[0]
    count = _r.sum(_e.astype(first, dtype=dtypes.int64), axes=(0,), keepdims=False)
    valid = _e.less(asarray(np.arange(size), device=ar.device), count)
    pos = _e.minimum(starts[:size], n - 1)
    if fill_value is not None and not isinstance(fill_value, Tensor):
        fill_value = _tensor(fill_value, "unique", "fill_value")
    fill = _r.min(flat, axes=(0,), keepdims=False) if fill_value is None else fill_value
    values = _e.where(valid, take(s, pos), fill)
    index = _e.where(valid, take(perm, pos), 0)
    counts = _e.where(valid, _e.subtract(starts[1:], starts[:size]), 0)
    rank = _e.subtract(_r.cumsum(_e.astype(first, dtype=dtypes.int64), axis=0, reverse=False), 1)
    inverse = take(rank, _so.argsort(perm, axis=0, descending=False))
    return values, index, reshape(inverse, tuple(ar.shape)), counts


def _run_starts(s: Any, equal_nan: bool) -> Any:
    """Boolean Tensor marking the first element of each run of equal values in the sorted
    1-D ``s`` (NaNs make one run with ``equal_nan``, else each NaN its own)."""
    if s.shape[0] == 0:
        return _e.not_equal(s, s)  # empty, boolean
    differs = _e.not_equal(s[1:], s[:-1])
    if equal_nan and dtypes.is_inexact(s.dtype):
        differs = _e.logical_and(
            differs, _e.logical_not(_e.logical_and(_e.isnan(s[1:]), _e.isnan(s[:-1])))
        )
    return concatenate([asarray(np.ones(1, bool), device=s.device), differs])
