"""Shape functions under numpy's names and signatures.

Only reshape, broadcast_to, permute_dims, concatenate, split, flip, roll and constant pad
are primitives; the rest are compositions of them (and of indexing), so their derivatives
come free.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops import shape as _s
from fgrad.ops._rules import norm_axes, shape_of
from fgrad.tensor import Tensor, as_tensor, asarray

__all__ = [
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "concatenate",
    "expand_dims",
    "flatten",
    "flip",
    "fliplr",
    "flipud",
    "hstack",
    "matrix_transpose",
    "moveaxis",
    "pad",
    "permute_dims",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "transpose",
    "unstack",
    "vstack",
]


def _tensor(x: Any, fn: str = "asarray", arg: str = "x") -> Any:
    """``x`` as a Tensor; an input that is not numeric raises a DTypeError naming ``fn``."""
    return as_tensor(x, fn, arg)


def _sequence(arrays: Any, fn: str, arg: str = "arrays") -> tuple:
    """The Tensors of a sequence of arrays (a Tensor counts as the sequence of its rows)."""
    if isinstance(arrays, (str, bytes, dict)) or not hasattr(arrays, "__iter__"):
        raise DTypeError(
            f"{fn}: {arg} must be a sequence of arrays, got {_args.describe(arrays)}"
        )
    return tuple(_tensor(x, fn, arg) for x in arrays)


def _no_out(fn: str, out: Any) -> None:
    if out is not None:
        raise TypeError(
            f"{fn}: out= is not supported: Tensors are immutable; use the returned Tensor "
            "(functional style)"
        )


def _subok(fn: str, subok: Any) -> None:
    _args.flag(subok, fn, "subok")  # Tensors have no subclasses to keep


def _order(fn: str, order: Any, options: tuple = ("C", "F", "A", "K")) -> str:
    """numpy's memory ``order``; Tensors are row-major, so "A" and "K" mean "C"."""
    order = _args.choice(order, fn, "order", options)
    return "F" if order == "F" else "C"


def _cast_joined(fn: str, xs: tuple, dtype: Any, casting: Any) -> tuple:
    """``xs`` cast to ``dtype`` as numpy's joining functions do, under ``casting`` rules."""
    casting = _args.choice(casting, fn, "casting", ("no", "equiv", "safe", "same_kind", "unsafe"))
    dtype = _args.dtype(dtype, fn)
    if dtype is None:
        return xs
    for x in xs:
        if not np.can_cast(x.dtype, dtype, casting=casting):
            raise DTypeError(
                f"{fn}: cannot cast {x.dtype} to {dtype} under casting={casting!r}; pass "
                "casting='unsafe' or cast the inputs first"
            )
    return tuple(x.astype(dtype) for x in xs)


def reshape(a: Any, /, shape: Any = None, *more: Any, order: str = "C", copy: Any = None) -> Any:
    """Give ``a`` a new shape; one dimension may be ``-1`` (inferred).

    As a method, the sizes may also be given one by one: ``x.reshape(3, 2)``. ``order="F"``
    reads and writes the elements in column-major order, as numpy; ``copy`` is accepted
    (Tensors are immutable: a reshape never aliases a mutable array).

    Raises:
        DTypeError: ``shape`` holds something other than ints (floats, even ``2.0``, are
            not truncated).
        ShapeError: the element counts differ, or a size is negative other than one -1.

    Example:
        >>> fnp.reshape(fnp.arange(6), (3, -1)).shape
        (3, 2)
        >>> fnp.arange(6).reshape(2, 3).shape
        (2, 3)
    """
    a = _tensor(a, "reshape")
    if more and isinstance(more[-1], str):  # numpy's reshape(a, shape, order)
        order, more = more[-1], more[:-1]
    if shape is None:
        raise TypeError("reshape: missing the new shape")
    if copy is not None:
        _args.flag(copy, "reshape", "copy")
    if more:
        shape = (shape, *more)
    if _order("reshape", order, ("C", "F", "A")) == "F":
        a = transpose(a)
        shape = _args.shape(shape, "reshape", minus_one=True)
        return transpose(reshape(a, tuple(reversed(shape))))
    shape = _args.shape(shape, "reshape", minus_one=True)
    if -1 in shape:
        size = int(np.prod(shape_of(a), dtype=np.int64))
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if shape.count(-1) > 1 or rest == 0 or size % rest:
            raise ShapeError(f"reshape: cannot reshape shape {shape_of(a)} into {shape}")
        shape = tuple(size // rest if d == -1 else d for d in shape)
    return _s.reshape(a, shape=shape)


def broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    """Broadcast ``array`` to ``shape`` (numpy's rules).

    Raises:
        DTypeError: ``shape`` holds something other than ints.
        ShapeError: ``array`` does not broadcast to ``shape``, or a size is negative.

    Example:
        >>> fnp.broadcast_to(fnp.array(1.0), (2,))
        Tensor([1., 1.], dtype=float64)
    """
    _subok("broadcast_to", subok)
    array = array if isinstance(array, Tensor) else _tensor(array, "broadcast_to")
    return _s.broadcast_to(array, shape=_args.shape(shape, "broadcast_to"))


def permute_dims(a: Any, axes: Any = None) -> Any:
    """Permute the axes of ``a`` (Array API name of ``transpose``; None reverses them).

    Raises:
        DTypeError: ``axes`` holds something other than ints.
        ShapeError: ``axes`` is not a permutation of ``a``'s axes.

    Example:
        >>> fnp.permute_dims(fnp.ones((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    a = _tensor(a, "permute_dims")
    axes = tuple(reversed(range(a.ndim))) if axes is None else axes
    return _permute(a, axes, "permute_dims")


def _permute(x: Any, axes: Any, fn: str) -> Any:
    n = len(shape_of(x))
    if _args._int_or_none(axes) is not None:
        axes = (axes,)
    order = _args.axes(axes, fn, max(n, 1), "axes")
    if sorted(order) != list(range(n)):
        raise ShapeError(
            f"{fn}: axes {tuple(axes)} is not a permutation of the {n} axes of shape "
            f"{shape_of(x)}"
        )
    return _s.permute_dims(x, axes=order)


def transpose(a: Any, axes: Any = None, *more: int) -> Any:
    """Reverse (or permute by ``axes``) the axes of ``a``.

    As a method, the axes may also be given one by one: ``a.transpose(1, 0)``.

    Raises:
        ShapeError: ``axes`` is not a permutation of ``a``'s axes.

    Example:
        >>> fnp.transpose(fnp.ones((2, 3))).shape
        (3, 2)
        >>> fnp.ones((2, 3, 4)).transpose(2, 0, 1).shape
        (4, 2, 3)
    """
    a = _tensor(a, "transpose")
    if more:
        axes = (axes, *more)
    n = len(shape_of(a))
    return _permute(a, tuple(reversed(range(n))) if axes is None else axes, "transpose")


def _T(x: Any) -> Any:
    """``x.T``: ``x`` with its axes reversed (numpy's ``ndarray.T``).

    Example:
        >>> fnp.ones((2, 3)).T.shape
        (3, 2)
    """
    return transpose(x)


def matrix_transpose(x: Any) -> Any:
    """Swap the last two axes of ``x`` (Array API ``matrix_transpose``; ``x.mT``).

    Raises:
        ShapeError: ``x`` has fewer than two dimensions.

    Example:
        >>> fnp.ones((5, 2, 3)).mT.shape
        (5, 3, 2)
    """
    x = _tensor(x, "matrix_transpose")
    n = len(shape_of(x))
    if n < 2:
        raise ShapeError(
            f"matrix_transpose: needs at least 2 dimensions, got shape {shape_of(x)}; use x.T "
            "or reshape for vectors"
        )
    return _s.permute_dims(x, axes=tuple(range(n - 2)) + (n - 1, n - 2))


_mT = matrix_transpose


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """Move axes ``source`` of ``a`` to positions ``destination``; others keep their order.

    Raises:
        ShapeError: an axis is out of range or repeated, or the two lengths differ.

    Example:
        >>> fnp.moveaxis(fnp.ones((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    a = _tensor(a, "moveaxis")
    n = len(shape_of(a))
    src = _args.axes(source, "moveaxis", n, "source")
    dst = _args.axes(destination, "moveaxis", n, "destination")
    if len(src) != len(dst):
        raise ShapeError(
            f"moveaxis: source {source} and destination {destination} must have the same length"
        )
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _s.permute_dims(a, axes=tuple(order))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """Exchange two axes of ``a``.

    Raises:
        DTypeError: an axis is not an int.
        ShapeError: an axis is out of range.

    Example:
        >>> fnp.swapaxes(fnp.ones((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    a = _tensor(a, "swapaxes")
    n = len(shape_of(a))
    i = _args.axis(axis1, "swapaxes", n, "axis1")
    j = _args.axis(axis2, "swapaxes", n, "axis2")
    order = list(range(n))
    order[i], order[j] = order[j], order[i]
    return _s.permute_dims(a, axes=tuple(order))


def expand_dims(a: Any, axis: Any) -> Any:
    """Insert axes of length 1 at positions ``axis`` (int or tuple) of the result.

    Raises:
        DTypeError: ``axis`` is not an int or a tuple of ints.
        ShapeError: an axis is out of range for the result or repeated.

    Example:
        >>> fnp.expand_dims(fnp.ones((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    a = _tensor(a, "expand_dims")
    shape = shape_of(a)
    if _args._int_or_none(axis) is not None:
        n_new = 1
    elif isinstance(axis, (tuple, list)):
        n_new = len(axis)
    else:
        raise DTypeError(
            f"expand_dims: axis must be an int or a tuple of ints, got {_args.describe(axis)}"
        )
    axes = norm_axes("expand_dims", axis, len(shape) + n_new)
    it = iter(shape)
    return _s.reshape(
        a, shape=tuple(1 if d in axes else next(it) for d in range(len(shape) + n_new))
    )


def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove axes of length 1 (all of them, or those in ``axis``).

    Raises:
        ShapeError: a selected axis does not have length 1.

    Example:
        >>> fnp.squeeze(fnp.ones((1, 2, 1))).shape
        (2,)
    """
    a = _tensor(a, "squeeze")
    shape = shape_of(a)
    if axis is None:
        axes = tuple(d for d, n in enumerate(shape) if n == 1)
    else:
        axes = norm_axes("squeeze", axis, len(shape))
        bad = [d for d in axes if shape[d] != 1]
        if bad:
            raise ShapeError(
                f"squeeze: cannot remove axis {bad[0]} of shape {shape}: its length is "
                f"{shape[bad[0]]}, not 1"
            )
    return _s.reshape(a, shape=tuple(n for d, n in enumerate(shape) if d not in axes))


def ravel(a: Any, order: str = "C") -> Any:
    """``a`` flattened to one dimension, in row-major order (column-major with ``order="F"``).

    Example:
        >>> fnp.ravel(fnp.ones((2, 3))).shape
        (6,)
    """
    a = _tensor(a, "ravel")
    if _order("ravel", order) == "F":
        a = transpose(a)
    return _s.reshape(a, shape=(int(np.prod(shape_of(a), dtype=np.int64)),))


def flatten(x: Any) -> Any:
    """``x`` flattened to one dimension (``ndarray.flatten``; the same as :func:`ravel`).

    Example:
        >>> fnp.ones((2, 2)).flatten()
        Tensor([1., 1., 1., 1.], dtype=float64)
    """
    return ravel(_tensor(x, "flatten"))


def broadcast_arrays(*args: Any, subok: bool = False) -> tuple:
    """Broadcast Tensors against each other (numpy's rules).

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> a, b = fnp.broadcast_arrays(fnp.ones((2, 1)), fnp.ones(3))
        >>> a.shape, b.shape
        ((2, 3), (2, 3))
    """
    from fgrad.ops._rules import broadcast_shapes

    _subok("broadcast_arrays", subok)
    args = tuple(_tensor(x, "broadcast_arrays", "args") for x in args)
    shape = broadcast_shapes("broadcast_arrays", *args)
    return tuple(x if x.shape == shape else _s.broadcast_to(x, shape=shape) for x in args)


# ------------------------------------------------------------------------ joining, splitting


def concatenate(
    arrays: Any, /, axis: int | None = 0, out: Any = None, *, dtype: Any = None,
    casting: str = "same_kind",
) -> Any:
    """Join a sequence of Tensors along an existing axis.

    Args:
        arrays: sequence of Tensors (or arrays) of equal shapes except along ``axis``.
        axis: the axis to join along (negative counts from the end); None flattens each
            input first.

    Returns:
        Tensor of the promoted dtype.

    Raises:
        DTypeError: ``arrays`` is not a sequence of arrays, or ``axis`` is not an int.
        ShapeError: the shapes differ off ``axis``, ``axis`` is out of range, or the
            inputs are 0-d.

    Example:
        >>> fnp.concatenate([fnp.ones((1, 2)), fnp.zeros((1, 2))], axis=0)
        Tensor([[1., 1.],
                [0., 0.]], dtype=float64)
    """
    _no_out("concatenate", out)
    return _concatenate(arrays, axis, "concatenate", dtype, casting)


def _concatenate(arrays: Any, axis: Any, fn: str, dtype: Any = None, casting: Any = "same_kind"):
    xs = _cast_joined(fn, _sequence(arrays, fn), dtype, casting)
    if not xs:
        raise ShapeError(f"{fn}: needs at least one array")
    if axis is None:
        xs = tuple(ravel(x) for x in xs)
        axis = 0
    ndim = len(xs[0].shape)
    if not ndim:
        raise ShapeError(
            f"{fn}: zero-dimensional inputs cannot be concatenated; use fnp.stack to join "
            "them along a new axis"
        )
    return _s.concatenate(*xs, axis=_args.axis(axis, fn, ndim))


def concat(
    arrays: Any, /, axis: int | None = 0, out: Any = None, *, dtype: Any = None,
    casting: str = "same_kind",
) -> Any:
    """Join Tensors along an existing axis (the Array API's name for :func:`concatenate`).

    Example:
        >>> fnp.concat([fnp.ones(2), fnp.zeros(1)])
        Tensor([1., 1., 0.], dtype=float64)
    """
    _no_out("concat", out)
    return _concatenate(arrays, axis, "concat", dtype, casting)


def stack(
    arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None, casting: str = "same_kind"
) -> Any:
    """Join Tensors of one shape along a new axis ``axis`` of the result.

    Raises:
        DTypeError: ``arrays`` is not a sequence of arrays, or ``axis`` is not an int.
        ShapeError: the shapes differ, or ``axis`` is out of range.

    Example:
        >>> fnp.stack([fnp.ones(2), fnp.zeros(2)], axis=1)
        Tensor([[1., 0.],
                [1., 0.]], dtype=float64)
    """
    _no_out("stack", out)
    xs = _cast_joined("stack", _sequence(arrays, "stack"), dtype, casting)
    if not xs:
        raise ShapeError("stack: needs at least one array")
    shapes = {tuple(x.shape) for x in xs}
    if len(shapes) > 1:
        raise ShapeError(f"stack: all inputs must have the same shape, got {sorted(shapes)}")
    ndim = len(xs[0].shape) + 1
    axis = _args.axis(axis, "stack", ndim)
    return _s.concatenate(*(expand_dims(x, axis) for x in xs), axis=axis)


def hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Join Tensors column-wise: along axis 1, or axis 0 for 1-D inputs.

    Example:
        >>> fnp.hstack([fnp.ones(2), fnp.zeros(1)])
        Tensor([1., 1., 0.], dtype=float64)
    """
    xs = _at_least(1, _sequence(tup, "hstack"))
    if not xs:
        raise ShapeError("hstack: needs at least one array")
    return _concatenate(xs, 0 if len(xs[0].shape) == 1 else 1, "hstack", dtype, casting)


def vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Join Tensors row-wise, after making 1-D inputs ``(1, n)``.

    Example:
        >>> fnp.vstack([fnp.ones(2), fnp.zeros(2)]).shape
        (2, 2)
    """
    return _concatenate(_at_least(2, _sequence(tup, "vstack")), 0, "vstack", dtype, casting)


def _split_axis(x: Any, axis: int, name: str) -> tuple:
    shape = shape_of(x)
    if not shape:
        raise ShapeError(f"{name}: cannot split a 0-d Tensor")
    return _args.axis(axis, name, len(shape)), shape


def _split_bounds(x: Any, indices_or_sections: Any, axis: Any, name: str) -> tuple:
    """(axis, shape, sections or None, positions or None) of a split, checked."""
    axis, shape = _split_axis(x, axis, name)
    k = _args._int_or_none(indices_or_sections)
    if k is not None:
        k = _args.index(k, name, "indices_or_sections")
        if k <= 0:
            raise ShapeError(f"{name}: the number of sections must be positive, got {k}")
        return axis, shape, k, None
    ios = indices_or_sections
    if isinstance(ios, (str, bytes)) or not hasattr(ios, "__iter__") or (
        getattr(ios, "dtype", None) is not None and np.dtype(ios.dtype).kind not in "iu"
    ):
        raise DTypeError(
            f"{name}: indices_or_sections must be an int (the number of sections) or a "
            f"sequence of int positions, got {_args.describe(ios)}"
        )
    positions = tuple(
        _args.index(b, name, "indices_or_sections", what="a sequence of int positions")
        for b in ios
    )
    return axis, shape, None, positions


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split ``ary`` along ``axis`` into equal sections or at the given positions.

    Args:
        ary: Tensor of at least one dimension.
        indices_or_sections: an int ``k`` (``k`` equal pieces; the length of ``axis`` must
            divide by ``k``) or a sequence of split positions (negative ones count from the
            end; all are clipped to the axis, as in numpy).
        axis: the axis to split.

    Returns:
        A list of Tensors.

    Raises:
        DTypeError: ``indices_or_sections`` is neither an int nor a sequence of ints, or
            ``axis`` is not an int.
        ShapeError: ``k`` is not positive or does not divide the axis.

    Example:
        >>> [p.shape for p in fnp.split(fnp.ones((4, 2)), 2)]
        [(2, 2), (2, 2)]
    """
    ary = _tensor(ary, "split")
    return _split(ary, *_split_bounds(ary, indices_or_sections, axis, "split"), "split")


def _split(x: Any, axis: int, shape: tuple, k: int | None, positions: tuple | None, name: str):
    n = shape[axis]
    if k is not None:
        if n % k:
            raise ShapeError(
                f"{name}: an axis of length {n} does not split into {k} equal sections; use "
                "fnp.array_split for unequal ones"
            )
        bounds = tuple(range(n // k, n, n // k)) if n else (0,) * (k - 1)
    else:
        bounds = tuple(min(max(b + (n if b < 0 else 0), 0), n) for b in positions)
    return list(_s.split(x, axis=axis, bounds=bounds))


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Like :func:`split`, but ``k`` sections need not be equal: the first ``n % k`` get one
    element more.

    Example:
        >>> [p.shape for p in fnp.array_split(fnp.ones(5), 3)]
        [(2,), (2,), (1,)]
    """
    ary = _tensor(ary, "array_split")
    axis, shape, k, positions = _split_bounds(ary, indices_or_sections, axis, "array_split")
    if k is None:
        return _split(ary, axis, shape, None, positions, "array_split")
    n = shape[axis]
    sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    return list(_s.split(ary, axis=axis, bounds=tuple(np.cumsum(sizes[:-1]).tolist())))


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple (Array API ``unstack``).

    Example:
        >>> fnp.unstack(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        (Tensor([1., 3.], dtype=float64), Tensor([2., 4.], dtype=float64))
    """
    x = _tensor(x, "unstack")
    axis, shape = _split_axis(x, axis, "unstack")
    pieces = _s.split(x, axis=axis, bounds=tuple(range(1, shape[axis])))
    return tuple(squeeze(p, axis) for p in pieces) if shape[axis] else ()


# ------------------------------------------------------------------------ rearranging


def flip(m: Any, axis: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (int, tuple, or None for all axes).

    Example:
        >>> fnp.flip(fnp.array([1.0, 2.0, 3.0]))
        Tensor([3., 2., 1.], dtype=float64)
    """
    m = _tensor(m, "flip")
    axes = norm_axes("flip", axis, len(shape_of(m)))
    return _s.flip(m, axes=axes) if axes else m


def fliplr(m: Any) -> Any:
    """Reverse the order along axis 1.

    Example:
        >>> fnp.fliplr(fnp.array([[1.0, 2.0]]))
        Tensor([[2., 1.]], dtype=float64)
    """
    m = _tensor(m, "fliplr")
    if m.ndim < 2:
        raise ShapeError(f"fliplr: needs at least 2 dimensions, got shape {shape_of(m)}")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    """Reverse the order along axis 0.

    Example:
        >>> fnp.flipud(fnp.array([[1.0], [2.0]]))
        Tensor([[2.],
                [1.]], dtype=float64)
    """
    m = _tensor(m, "flipud")
    if m.ndim < 1:
        raise ShapeError("flipud: needs at least 1 dimension, got a 0-d Tensor")
    return flip(m, 0)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Shift elements cyclically along ``axis``; with ``axis=None`` along the flattened ``a``.

    Args:
        a: Tensor of any shape.
        shift: int, or a tuple of ints with one per axis (or broadcast against ``axis``).
        axis: int, tuple of ints, or None.

    Raises:
        DTypeError: ``shift`` or ``axis`` holds something other than ints.
        ShapeError: an axis is out of range, or ``shift`` and ``axis`` do not broadcast.

    Example:
        >>> fnp.roll(fnp.array([[1.0, 2.0], [3.0, 4.0]]), 1, axis=0)
        Tensor([[3., 4.],
                [1., 2.]], dtype=float64)
    """
    a = _tensor(a, "roll")
    shape = shape_of(a)
    shifts = _int_tuple(shift, "roll", "shift")
    if axis is None:
        flat = ravel(a)
        total = sum(shifts)
        return (
            _s.reshape(_s.roll(flat, shifts=(total,), axes=(0,)), shape=shape)
            if flat.shape[0]
            else a
        )
    axes = _args.axes(axis, "roll", len(shape), unique=False)
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ShapeError(
            f"roll: shift {shift} and axis {axis} must have the same length (or one of them "
            "one entry)"
        )
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    total: dict[int, int] = {}
    for s, d in zip(shifts, axes):
        total[d] = total.get(d, 0) + s  # numpy sums shifts given for the same axis
    keep = sorted(d for d in total if shape[d] and total[d] % shape[d])
    if not keep:
        return a
    return _s.roll(a, shifts=tuple(total[d] % shape[d] for d in keep), axes=tuple(keep))


def _int_tuple(value: Any, fn: str, arg: str) -> tuple[int, ...]:
    """An int or a sequence of ints, as a tuple of Python ints."""
    if _args._int_or_none(value) is not None:
        return (_args.index(value, fn, arg),)
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise DTypeError(
            f"{fn}: {arg} must be an int or a tuple of ints, got {_args.describe(value)}"
        )
    return tuple(_args.index(v, fn, arg, what="an int or a tuple of ints") for v in value)


def _pad_widths(pad_width: Any, ndim: int, arg: str = "pad_width") -> tuple:
    try:
        widths = np.asarray(pad_width)
    except (TypeError, ValueError):
        widths = np.asarray(None)
    if widths.dtype.kind not in "iu":
        raise DTypeError(
            f"pad: {arg} must be an int, a (before, after) pair or one pair per axis, of "
            f"ints, got {_args.describe(pad_width)}"
        )
    try:
        widths = np.broadcast_to(widths, (ndim, 2))
    except ValueError:
        raise ShapeError(
            f"pad: {arg} {pad_width!r} does not give a (before, after) pair for each of the "
            f"{ndim} axes"
        ) from None
    if (widths < 0).any():
        raise ShapeError(f"pad: {arg} {pad_width!r} must be non-negative")
    return tuple((int(b), int(a)) for b, a in widths)


def _pad_positions(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source position of each padded position along one axis, for the non-constant modes."""
    i = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return i % n
    if mode == "symmetric":
        m = i % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if n == 1:  # reflect about a single element repeats it
        return np.zeros_like(i)
    m = i % (2 * n - 2)
    return np.where(m < n, m, 2 * n - 2 - m)


def pad(
    array: Any, pad_width: Any, mode: str = "constant", *, constant_values: Any = 0,
    reflect_type: str = "even", **kwargs: Any,
) -> Any:
    """Pad ``array`` on each axis (numpy's ``pad``).

    Args:
        array: Tensor of ``n`` dimensions.
        pad_width: ``((before, after),) * n``, one ``(before, after)`` for all axes, or one
            int for all sides.
        mode: ``"constant"`` (``constant_values``), ``"edge"`` (repeat the border),
            ``"reflect"`` (mirror without the border), ``"symmetric"`` (mirror with it),
            ``"wrap"`` (periodic), ``"maximum"``/``"minimum"``/``"mean"``/``"median"``
            (that statistic of ``stat_length`` entries at each side; integer arrays round
            it half to even, as numpy) or ``"linear_ramp"`` (from ``end_values`` to the
            border, ``linspace(end, border, width, endpoint=False)``, floored for integers).
        constant_values: for ``"constant"`` mode, a Python scalar or a 0-d Tensor (also a
            traced one), or concrete numbers per side, as ``pad_width``
            (``((before, after),) * n``, one pair, or one number).
        reflect_type: for ``"reflect"`` and ``"symmetric"``: ``"even"`` (numpy's default,
            a mirror) or ``"odd"`` (``2 * edge - mirror``, numpy's odd extension).
        kwargs: numpy's ``stat_length`` (the statistic modes: ints as ``pad_width``;
            default the whole axis) and ``end_values`` (``"linear_ramp"``: concrete real
            scalars, as ``pad_width``; default 0).

    Returns:
        Tensor of ``array.dtype``, axis ``d`` longer by ``sum(pad_width[d])``.

    Raises:
        DTypeError: ``pad_width`` holds something other than ints.
        ShapeError: a malformed ``pad_width``, or padding an empty axis in a non-constant mode.
        ValueError: an unknown mode, ``constant_values`` a Tensor that is not 0-d, or a
            zero ``stat_length``.
        TypeError: an unknown keyword argument.

    Example:
        >>> fnp.pad(fnp.array([1.0, 2.0, 3.0]), 2, mode="reflect")
        Tensor([3., 2., 1., 2., 3., 2., 1.], dtype=float64)
        >>> fnp.pad(fnp.array([1.0, 2.0, 6.0]), (1, 2), mode="mean", stat_length=2)
        Tensor([1.5, 1. , 2. , 6. , 4. , 4. ], dtype=float64)
        >>> fnp.pad(fnp.array([4.0, 2.0]), 2, mode="linear_ramp", end_values=(0.0, 6.0))
        Tensor([0., 2., 4., 2., 4., 6.], dtype=float64)
    """
    stat_length, end_values = kwargs.pop("stat_length", None), kwargs.pop("end_values", None)
    if kwargs:
        raise TypeError(f"pad: unexpected keyword arguments {sorted(kwargs)}")
    for name, given, modes in (("stat_length", stat_length is not None, _PAD_STATS),
                               ("end_values", end_values is not None, ("linear_ramp",))):
        if given and mode not in modes:  # numpy refuses them too
            raise TypeError(f"pad: {name} is an option of mode {' / '.join(modes)}, not {mode!r}")
    odd = _args.choice(reflect_type, "pad", "reflect_type", ("even", "odd")) == "odd"
    array = _tensor(array, "pad")
    shape = shape_of(array)
    widths = _pad_widths(pad_width, len(shape))
    if not isinstance(mode, str):
        raise DTypeError(
            f"pad: mode must be a string such as 'constant' or 'edge', got {_args.describe(mode)}"
        )
    if mode == "constant":
        array_value = isinstance(constant_values, Tensor) and constant_values.ndim == 0
        scalar = isinstance(constant_values, (int, float, complex, bool, np.number, np.bool_))
        if isinstance(constant_values, Tensor) and not array_value:
            raise ValueError(
                "pad: constant_values must be a scalar, a 0-d Tensor or concrete per-side "
                "numbers; for traced per-side constants pad with 0 and add a padded mask "
                "times the values"
            )
        if not any(b or a for b, a in widths):
            return array
        if not array_value and not scalar:  # per side: axis by axis, later axes own corners
            sides = _pad_ends(constant_values, len(shape), "constant_values")
            for d, ((b, a), values) in enumerate(zip(widths, sides)):
                for width, value, pair in ((b, values[0], (b, 0)), (a, values[1], (0, a))):
                    if width:
                        one = tuple(pair if i == d else (0, 0) for i in range(len(shape)))
                        array = _s.pad(array, pad_width=one, constant=value.item())
            return array
        if array_value:  # maybe traced: select it on the border
            from fgrad.numpy._elementwise import where  # a sibling module of this layer

            border = np.pad(np.zeros(shape, dtype=bool), widths, constant_values=True)
            padded = _s.pad(array, pad_width=widths, constant=0)
            return where(asarray(border), constant_values.astype(array.dtype), padded)
        value = (
            constant_values.item() if isinstance(constant_values, np.generic) else constant_values
        )
        return _s.pad(array, pad_width=widths, constant=value)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported; use one of {_PAD_MODES}")
    from fgrad.numpy._indexing import take

    stats = ends = None
    if mode in _PAD_STATS:
        stats = (tuple((n, n) for n in shape) if stat_length is None  # the whole axis
                 else _pad_widths(stat_length, len(shape), "stat_length"))
        if any(0 in pair and (b or a) for pair, (b, a) in zip(stats, widths)):
            raise ValueError(f"pad: stat_length must be positive, got {stat_length!r}")
    elif mode == "linear_ramp":
        ends = _pad_ends(0 if end_values is None else end_values, len(shape))
    for d, (b, a) in enumerate(widths):
        if not (b or a):
            continue
        if shape[d] == 0:
            raise ShapeError(
                f"pad: cannot pad the empty axis {d} of shape {shape} in mode {mode!r}"
            )
        if stats is not None:
            array = _pad_stat(array, d, b, a, stats[d], mode)
        elif ends is not None:
            array = _pad_ramp(array, d, b, a, ends[d])
        elif odd and mode in ("reflect", "symmetric") and shape[d] > 1:
            array = _pad_odd(array, d, b, a, mode == "symmetric")
        else:
            array = take(array, _pad_positions(shape[d], b, a, mode), axis=d)
    return array


_PAD_STATS = ("maximum", "mean", "median", "minimum")
_PAD_MODES = ("constant", "edge", "linear_ramp", *_PAD_STATS, "reflect", "symmetric", "wrap")


def _pad_ends(values: Any, ndim: int, arg: str = "end_values") -> np.ndarray:
    """Concrete numbers per side (``end_values``, ``constant_values``), broadcast to
    ``(ndim, 2)`` as ``pad_width`` is."""
    try:
        ends = np.broadcast_to(np.asarray(values), (ndim, 2))
    except (ValueError, TypeError):
        raise ShapeError(
            f"pad: {arg} {values!r} does not give a (before, after) pair for each of the "
            f"{ndim} axes"
        ) from None
    if ends.dtype.kind not in "biufc":
        raise DTypeError(f"pad: {arg} must be numbers, got {_args.describe(values)}")
    return ends


def _as_pad_dtype(value: Any, dtype: np.dtype, rounding: str) -> Any:
    """numpy casts a padded statistic back to the array's dtype, rounding (mean, median:
    half to even) or flooring (linear_ramp, as ``linspace`` into integers) first."""
    from fgrad.ops import elementwise as _e

    if np.dtype(dtype).kind in "iub" and np.dtype(value.dtype).kind in "fc":
        value = _e.round(value) if rounding == "round" else _e.floor(value)
    return value if value.dtype == dtype else _e.astype(value, dtype=np.dtype(dtype))


def _pad_stat(array: Any, d: int, before: int, after: int, lengths: tuple, mode: str) -> Any:
    """Axis ``d`` padded with a statistic of its first ``lengths[0]`` (before) and last
    ``lengths[1]`` (after) entries, numpy's ``maximum``/``minimum``/``mean``/``median``."""
    from fgrad.numpy import _reductions as _red
    from fgrad.numpy import _sorting as _so

    reduce = {"maximum": _red.max, "minimum": _red.min, "mean": _red.mean,
              "median": _so.median}[mode]
    n = shape_of(array)[d]
    parts = []
    for width, lo, hi in ((before, 0, min(lengths[0], n)), (after, n - min(lengths[1], n), n)):
        if width == 0:
            parts.append(None)
            continue
        region = array[(slice(None),) * d + (slice(lo, hi),)]
        value = _as_pad_dtype(reduce(region, axis=d, keepdims=True), array.dtype, "round")
        shape = list(shape_of(array))
        shape[d] = width
        parts.append(_s.broadcast_to(value, shape=tuple(shape)))
    return concatenate([p for p in (parts[0], array, parts[1]) if p is not None], axis=d)


def _pad_odd(array: Any, d: int, before: int, after: int, include_edge: bool) -> Any:
    """Axis ``d`` padded with the odd reflection ``2 * edge - mirror`` (numpy's
    ``reflect_type="odd"``), in chunks of at most one period, each mirrored about the edge
    the last chunk made, as numpy's loop (so a wide pad continues the trend)."""
    from fgrad.ops import elementwise as _e

    n = shape_of(array)[d]
    period = n if include_edge else n - 1
    cut = lambda x, lo, hi: x[(slice(None),) * d + (slice(lo, hi),)]  # noqa: E731
    for side, width in ((0, before), (1, after)):
        while width:
            k = min(width, period)
            m = shape_of(array)[d]
            if side == 0:
                edge, src = cut(array, 0, 1), cut(array, 1 - include_edge, k + 1 - include_edge)
            else:
                edge = cut(array, m - 1, m)
                src = cut(array, m - k - 1 + include_edge, m - 1 + include_edge)
            chunk = _e.subtract(_e.multiply(edge, 2), flip(src, d))
            array = concatenate([chunk, array] if side == 0 else [array, chunk], axis=d)
            width -= k
    return array


def _pad_ramp(array: Any, d: int, before: int, after: int, ends: np.ndarray) -> Any:
    """Axis ``d`` padded with linear ramps from ``ends`` to the edge values, the edge
    excluded (numpy's ``linear_ramp``: ``linspace(end, edge, width, endpoint=False)``)."""
    from fgrad.ops import elementwise as _e

    n, ndim = shape_of(array)[d], len(shape_of(array))
    parts = []
    for width, edge_at, end, flip in ((before, 0, ends[0], False), (after, n - 1, ends[1], True)):
        if width == 0:
            parts.append(None)
            continue
        edge = array[(slice(None),) * d + (slice(edge_at, edge_at + 1),)]
        frac = np.arange(width, dtype=np.float64) / width  # 0 at the end value, -> 1 at the edge
        frac = (frac[::-1] if flip else frac).reshape((1,) * d + (width,) + (1,) * (ndim - d - 1))
        if np.dtype(array.dtype).kind not in "fc":  # integers: the ramp in float64, floored
            edge = _e.astype(edge, dtype=np.dtype(np.float64))
        # in float64 (end and frac are), cast back to the array's dtype as numpy's linspace
        ramp = _e.add(end, _e.multiply(_e.subtract(edge, end), asarray(frac)))
        parts.append(_as_pad_dtype(ramp, array.dtype, "floor"))
    return concatenate([p for p in (parts[0], array, parts[1]) if p is not None], axis=d)


def tile(A: Any, reps: Any) -> Any:
    """Repeat the whole of ``A`` ``reps[d]`` times along each axis (numpy's ``tile``).

    Raises:
        DTypeError: ``reps`` holds something other than ints.
        ShapeError: a negative repetition.

    Example:
        >>> fnp.tile(fnp.array([1.0, 2.0]), (2, 2))
        Tensor([[1., 2., 1., 2.],
                [1., 2., 1., 2.]], dtype=float64)
    """
    A = _tensor(A, "tile")
    reps = _args.shape(reps, "tile", "reps")
    shape = shape_of(A)
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    inter = tuple(v for pair in zip((1,) * n, shape) for v in pair)
    big = tuple(v for pair in zip(reps, shape) for v in pair)
    y = _s.broadcast_to(_s.reshape(A, shape=inter), shape=big)
    return _s.reshape(y, shape=tuple(r * d for r, d in zip(reps, shape)))


def repeat(a: Any, repeats: Any, axis: int | None = None) -> Any:
    """Repeat each element of ``a`` ``repeats`` times along ``axis`` (None: flattened).

    Args:
        a: Tensor of any shape.
        repeats: an int, or concrete non-negative ints with one per element along ``axis``.
        axis: the axis to repeat along; None flattens ``a`` first.

    Raises:
        DTypeError: ``repeats`` holds something other than ints (2.5 is not truncated), or
            ``axis`` is not an int.
        ShapeError: ``repeats`` has the wrong length or negative entries.

    Example:
        >>> fnp.repeat(fnp.array([1.0, 2.0]), 2)
        Tensor([1., 1., 2., 2.], dtype=float64)
        >>> fnp.repeat(fnp.array([1.0, 2.0]), [1, 3])
        Tensor([1., 2., 2., 2.], dtype=float64)
    """
    a = _tensor(a, "repeat")
    if axis is None:
        a = ravel(a)
        axis = 0
    shape = shape_of(a)
    axis = _args.axis(axis, "repeat", len(shape))
    counts = _counts(repeats)
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(()) if counts.ndim else counts)
        if r < 0:
            raise ShapeError(f"repeat: repeats must be non-negative, got {r}")
        y = _s.reshape(a, shape=shape[: axis + 1] + (1,) + shape[axis + 1 :])
        y = _s.broadcast_to(y, shape=shape[: axis + 1] + (r,) + shape[axis + 1 :])
        return _s.reshape(y, shape=shape[:axis] + (shape[axis] * r,) + shape[axis + 1 :])
    if counts.shape != (shape[axis],) or (counts < 0).any():
        raise ShapeError(
            f"repeat: repeats must hold one non-negative count per element of axis {axis} "
            f"(length {shape[axis]}), got {counts.tolist()}"
        )
    from fgrad.numpy._indexing import take

    return take(a, np.repeat(np.arange(shape[axis]), counts), axis=axis)


def _counts(repeats: Any) -> np.ndarray:
    """``repeats`` of :func:`repeat` as an integer array (bools count, as numpy's)."""
    if isinstance(repeats, (bool, np.bool_)):
        return np.asarray(int(repeats))
    try:
        counts = np.asarray(repeats.tolist() if isinstance(repeats, Tensor) else repeats)
    except (TypeError, ValueError):
        counts = np.asarray(None)
    if counts.dtype.kind not in "iub" or (counts.ndim and counts.dtype.kind == "b"):
        raise DTypeError(
            f"repeat: repeats must be an int or a sequence of ints, got "
            f"{_args.describe(repeats)}; pass ints, e.g. int(n) where n is integral"
        )
    return counts.astype(np.int64)


def atleast_1d(*xs: Any) -> Any:
    """Inputs with at least one dimension (0-d become ``(1,)``); a tuple for several inputs.

    Example:
        >>> fnp.atleast_1d(1.0)
        Tensor([1.], dtype=float64)
    """
    out = _at_least(1, tuple(_tensor(x, "atleast_1d", "xs") for x in xs))
    return out[0] if len(out) == 1 else out


def _at_least(ndim: int, xs: tuple) -> tuple:
    """Each of the Tensors ``xs`` with at least ``ndim`` (1, 2 or 3) dimensions, as numpy."""
    if ndim == 1:
        return tuple(_s.reshape(x, shape=(1,)) if not shape_of(x) else x for x in xs)
    if ndim == 2:
        return tuple(
            _s.reshape(x, shape=(1,) * (2 - x.ndim) + shape_of(x)) if x.ndim < 2 else x
            for x in xs
        )

    def lift(x):
        s = shape_of(x)
        new = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s))
        return x if new is None else _s.reshape(x, shape=new)

    return tuple(lift(x) for x in xs)


def atleast_2d(*xs: Any) -> Any:
    """Inputs with at least two dimensions: ``()`` becomes ``(1, 1)`` and ``(n,)`` ``(1, n)``.

    Example:
        >>> fnp.atleast_2d(fnp.ones(3)).shape
        (1, 3)
    """
    out = _at_least(2, tuple(_tensor(x, "atleast_2d", "xs") for x in xs))
    return out[0] if len(out) == 1 else out


def atleast_3d(*xs: Any) -> Any:
    """Inputs with at least three dimensions: ``(n,)`` becomes ``(1, n, 1)`` and ``(m, n)``
    ``(m, n, 1)``, as numpy.

    Example:
        >>> fnp.atleast_3d(fnp.ones((2, 3))).shape
        (2, 3, 1)
    """
    out = _at_least(3, tuple(_tensor(x, "atleast_3d", "xs") for x in xs))
    return out[0] if len(out) == 1 else out
