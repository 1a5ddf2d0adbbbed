"""Shape functions under numpy's names and signatures.

Only reshape, broadcast_to, permute_dims, concatenate, split, flip, roll and constant pad
are primitives; the rest are compositions of them (and of indexing), so their derivatives
come free.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad.errors import ShapeError
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


def _tensor(x: Any) -> Any:
    return as_tensor(x)


def reshape(x: Any, shape: Any, /, *more: int) -> Any:
    """Give ``x`` a new shape; one dimension may be ``-1`` (inferred).

    As a method, the sizes may also be given one by one: ``x.reshape(3, 2)``.

    Raises:
        ShapeError: the element counts differ.

    Example:
        >>> fnp.reshape(fnp.arange(6), (3, -1)).shape
        (3, 2)
        >>> fnp.arange(6).reshape(2, 3).shape
        (2, 3)
    """
    if more:
        shape = (shape, *more)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if -1 in shape:
        size = int(np.prod(shape_of(x), dtype=np.int64))
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if shape.count(-1) > 1 or rest == 0 or size % rest:
            raise ShapeError(f"reshape: cannot reshape shape {shape_of(x)} into {shape}")
        shape = tuple(size // rest if d == -1 else d for d in shape)
    return _s.reshape(x, shape=shape)


def broadcast_to(x: Any, shape: Any) -> Any:
    """Broadcast ``x`` to ``shape`` (numpy's rules).

    Raises:
        ShapeError: ``x`` does not broadcast to ``shape``.

    Example:
        >>> fnp.broadcast_to(fnp.array(1.0), (2,))
        Tensor([1., 1.], dtype=float64)
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    return _s.broadcast_to(x, shape=shape)


def permute_dims(x: Any, axes: Any) -> Any:
    """Permute the axes of ``x`` (Array API name of ``transpose``).

    Example:
        >>> fnp.permute_dims(fnp.ones((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    n = len(shape_of(x))
    return _s.permute_dims(x, axes=tuple(int(a) % n if n else 0 for a in axes))


def transpose(x: Any, axes: Any = None, *more: int) -> Any:
    """Reverse (or permute by ``axes``) the axes of ``x``.

    As a method, the axes may also be given one by one: ``x.transpose(1, 0)``.

    Raises:
        ShapeError: ``axes`` is not a permutation of ``x``'s axes.

    Example:
        >>> fnp.transpose(fnp.ones((2, 3))).shape
        (3, 2)
        >>> fnp.ones((2, 3, 4)).transpose(2, 0, 1).shape
        (4, 2, 3)
    """
    if more:
        axes = (axes, *more)
    n = len(shape_of(x))
    return permute_dims(x, tuple(reversed(range(n))) if axes is None else axes)


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
    n = len(shape_of(x))
    if n < 2:
        raise ShapeError(
            f"matrix_transpose: needs at least 2 dimensions, got shape {shape_of(x)}; use x.T "
            "or reshape for vectors"
        )
    return _s.permute_dims(x, axes=tuple(range(n - 2)) + (n - 1, n - 2))


_mT = matrix_transpose


def moveaxis(x: Any, source: Any, destination: Any) -> Any:
    """Move axes ``source`` of ``x`` to positions ``destination``; others keep their order.

    Raises:
        ShapeError: an axis is out of range or repeated, or the two lengths differ.

    Example:
        >>> fnp.moveaxis(fnp.ones((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    n = len(shape_of(x))
    src = _axes_in_order("moveaxis", source, n)
    dst = _axes_in_order("moveaxis", destination, n)
    if len(src) != len(dst):
        raise ShapeError(
            f"moveaxis: source {source} and destination {destination} must have the same length"
        )
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _s.permute_dims(x, axes=tuple(order))


def _axes_in_order(name: str, axis: Any, ndim: int) -> tuple:
    """Axes as given (not sorted), each made non-negative; ShapeError on range or repeats."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    norm_axes(name, axes, ndim)  # raises on an axis out of range or repeated
    return tuple(int(a) % ndim for a in axes)


def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    """Exchange two axes of ``x``.

    Example:
        >>> fnp.swapaxes(fnp.ones((2, 3, 4)), 0, 2).shape
        (4, 3, 2)
    """
    n = len(shape_of(x))
    a, b = (_axes_in_order("swapaxes", ax, n)[0] for ax in (axis1, axis2))
    order = list(range(n))
    order[a], order[b] = order[b], order[a]
    return _s.permute_dims(x, axes=tuple(order))


def expand_dims(x: Any, axis: Any) -> Any:
    """Insert axes of length 1 at positions ``axis`` (int or tuple) of the result.

    Raises:
        ShapeError: an axis is out of range for the result or repeated.

    Example:
        >>> fnp.expand_dims(fnp.ones((2, 3)), (0, -1)).shape
        (1, 2, 3, 1)
    """
    shape = shape_of(x)
    n_new = 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))
    axes = norm_axes("expand_dims", axis, len(shape) + n_new)
    it = iter(shape)
    return _s.reshape(
        x, shape=tuple(1 if d in axes else next(it) for d in range(len(shape) + n_new))
    )


def squeeze(x: Any, axis: Any = None) -> Any:
    """Remove axes of length 1 (all of them, or those in ``axis``).

    Raises:
        ShapeError: a selected axis does not have length 1.

    Example:
        >>> fnp.squeeze(fnp.ones((1, 2, 1))).shape
        (2,)
    """
    shape = shape_of(x)
    if axis is None:
        axes = tuple(d for d, n in enumerate(shape) if n == 1)
    else:
        axes = norm_axes("squeeze", axis, len(shape))
        bad = [a for a in axes if shape[a] != 1]
        if bad:
            raise ShapeError(
                f"squeeze: cannot remove axis {bad[0]} of shape {shape}: its length is "
                f"{shape[bad[0]]}, not 1"
            )
    return _s.reshape(x, shape=tuple(n for d, n in enumerate(shape) if d not in axes))


def ravel(x: Any) -> Any:
    """``x`` flattened to one dimension (row-major order).

    Example:
        >>> fnp.ravel(fnp.ones((2, 3))).shape
        (6,)
    """
    return _s.reshape(x, shape=(int(np.prod(shape_of(x), dtype=np.int64)),))


def flatten(x: Any) -> Any:
    """``x`` flattened to one dimension (``ndarray.flatten``; the same as :func:`ravel`).

    Example:
        >>> fnp.ones((2, 2)).flatten()
        Tensor([1., 1., 1., 1.], dtype=float64)
    """
    return ravel(x)


def broadcast_arrays(*xs: Any) -> tuple:
    """Broadcast Tensors against each other (numpy's rules).

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> a, b = fnp.broadcast_arrays(fnp.ones((2, 1)), fnp.ones(3))
        >>> a.shape, b.shape
        ((2, 3), (2, 3))
    """
    from fgrad.ops._rules import broadcast_shapes

    xs = tuple(_tensor(x) for x in xs)
    shape = broadcast_shapes("broadcast_arrays", *xs)
    return tuple(x if x.shape == shape else _s.broadcast_to(x, shape=shape) for x in xs)


# ------------------------------------------------------------------------ joining, splitting


def concatenate(arrays: Any, axis: int | None = 0) -> Any:
    """Join a sequence of Tensors along an existing axis.

    Args:
        arrays: sequence of Tensors (or arrays) of equal shapes except along ``axis``.
        axis: the axis to join along (negative counts from the end); None flattens each
            input first.

    Returns:
        Tensor of the promoted dtype.

    Raises:
        ShapeError: the shapes differ off ``axis``, or the inputs are 0-d.

    Example:
        >>> fnp.concatenate([fnp.ones((1, 2)), fnp.zeros((1, 2))], axis=0)
        Tensor([[1., 1.],
                [0., 0.]], dtype=float64)
    """
    xs = tuple(_tensor(x) for x in arrays)
    if not xs:
        raise ShapeError("concatenate: needs at least one array")
    if axis is None:
        xs = tuple(ravel(x) for x in xs)
        axis = 0
    ndim = len(xs[0].shape)
    if ndim and -ndim <= axis < ndim:
        axis %= ndim
    return _s.concatenate(*xs, axis=int(axis))


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
    """Join Tensors along an existing axis (the Array API's name for :func:`concatenate`).

    Example:
        >>> fnp.concat([fnp.ones(2), fnp.zeros(1)])
        Tensor([1., 1., 0.], dtype=float64)
    """
    return concatenate(arrays, axis=axis)


def stack(arrays: Any, axis: int = 0) -> Any:
    """Join Tensors of one shape along a new axis ``axis`` of the result.

    Raises:
        ShapeError: the shapes differ, or ``axis`` is out of range.

    Example:
        >>> fnp.stack([fnp.ones(2), fnp.zeros(2)], axis=1)
        Tensor([[1., 0.],
                [1., 0.]], dtype=float64)
    """
    xs = tuple(_tensor(x) for x in arrays)
    if not xs:
        raise ShapeError("stack: needs at least one array")
    shapes = {tuple(x.shape) for x in xs}
    if len(shapes) > 1:
        raise ShapeError(f"stack: all inputs must have the same shape, got {sorted(shapes)}")
    ndim = len(xs[0].shape) + 1
    axis = norm_axes("stack", axis, ndim)[0]
    return _s.concatenate(*(expand_dims(x, axis) for x in xs), axis=axis)


def hstack(arrays: Any) -> Any:
    """Join Tensors column-wise: along axis 1, or axis 0 for 1-D inputs.

    Example:
        >>> fnp.hstack([fnp.ones(2), fnp.zeros(1)])
        Tensor([1., 1., 0.], dtype=float64)
    """
    xs = atleast_1d(*arrays)
    xs = xs if isinstance(xs, tuple) else (xs,)
    return concatenate(xs, axis=0 if len(xs[0].shape) == 1 else 1)


def vstack(arrays: Any) -> Any:
    """Join Tensors row-wise, after making 1-D inputs ``(1, n)``.

    Example:
        >>> fnp.vstack([fnp.ones(2), fnp.zeros(2)]).shape
        (2, 2)
    """
    xs = atleast_2d(*arrays)
    return concatenate(xs if isinstance(xs, tuple) else (xs,), axis=0)


def _split_axis(x: Any, axis: int, name: str) -> tuple:
    shape = shape_of(x)
    if not shape:
        raise ShapeError(f"{name}: cannot split a 0-d Tensor")
    return norm_axes(name, axis, len(shape))[0], shape


def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split ``x`` along ``axis`` into equal sections or at the given positions.

    Args:
        x: Tensor of at least one dimension.
        indices_or_sections: an int ``k`` (``k`` equal pieces; the length of ``axis`` must
            divide by ``k``) or a sequence of split positions (negative ones count from the
            end; all are clipped to the axis, as in numpy).
        axis: the axis to split.

    Returns:
        A list of Tensors.

    Raises:
        ShapeError: ``k`` does not divide the axis.

    Example:
        >>> [p.shape for p in fnp.split(fnp.ones((4, 2)), 2)]
        [(2, 2), (2, 2)]
    """
    x = _tensor(x)
    axis, shape = _split_axis(x, axis, "split")
    n = shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ShapeError(
                f"split: an axis of length {n} does not split into {k} equal sections; use "
                "fnp.array_split for unequal ones"
            )
        bounds = tuple(range(n // k, n, n // k)) if n else (0,) * (k - 1)
    else:
        bounds = tuple(
            min(max(int(b) + (n if int(b) < 0 else 0), 0), n) for b in indices_or_sections
        )
    return list(_s.split(x, axis=axis, bounds=bounds))


def array_split(x: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Like :func:`split`, but ``k`` sections need not be equal: the first ``n % k`` get one
    element more.

    Example:
        >>> [p.shape for p in fnp.array_split(fnp.ones(5), 3)]
        [(2,), (2,), (1,)]
    """
    if not isinstance(indices_or_sections, (int, np.integer)):
        return split(x, indices_or_sections, axis)
    x = _tensor(x)
    axis, shape = _split_axis(x, axis, "array_split")
    n, k = shape[axis], int(indices_or_sections)
    if k <= 0:
        raise ShapeError(f"array_split: the number of sections must be positive, got {k}")
    sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    return list(_s.split(x, axis=axis, bounds=tuple(np.cumsum(sizes[:-1]).tolist())))


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple (Array API ``unstack``).

    Example:
        >>> fnp.unstack(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        (Tensor([1., 3.], dtype=float64), Tensor([2., 4.], dtype=float64))
    """
    x = _tensor(x)
    axis, shape = _split_axis(x, axis, "unstack")
    pieces = _s.split(x, axis=axis, bounds=tuple(range(1, shape[axis])))
    return tuple(squeeze(p, axis) for p in pieces) if shape[axis] else ()


# ------------------------------------------------------------------------ rearranging


def flip(x: Any, axis: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (int, tuple, or None for all axes).

    Example:
        >>> fnp.flip(fnp.array([1.0, 2.0, 3.0]))
        Tensor([3., 2., 1.], dtype=float64)
    """
    x = _tensor(x)
    axes = norm_axes("flip", axis, len(shape_of(x)))
    return _s.flip(x, axes=axes) if axes else x


def fliplr(x: Any) -> Any:
    """Reverse the order along axis 1.

    Example:
        >>> fnp.fliplr(fnp.array([[1.0, 2.0]]))
        Tensor([[2., 1.]], dtype=float64)
    """
    return flip(x, 1)


def flipud(x: Any) -> Any:
    """Reverse the order along axis 0.

    Example:
        >>> fnp.flipud(fnp.array([[1.0], [2.0]]))
        Tensor([[2.],
                [1.]], dtype=float64)
    """
    return flip(x, 0)


def roll(x: Any, shift: Any, axis: Any = None) -> Any:
    """Shift elements cyclically along ``axis``; with ``axis=None`` along the flattened ``x``.

    Args:
        x: Tensor of any shape.
        shift: int, or a tuple of ints with one per axis (or broadcast against ``axis``).
        axis: int, tuple of ints, or None.

    Example:
        >>> fnp.roll(fnp.array([[1.0, 2.0], [3.0, 4.0]]), 1, axis=0)
        Tensor([[3., 4.],
                [1., 2.]], dtype=float64)
    """
    x = _tensor(x)
    shape = shape_of(x)
    if axis is None:
        flat = ravel(x)
        total = int(np.sum(shift))
        return (
            _s.reshape(_s.roll(flat, shifts=(total,), axes=(0,)), shape=shape)
            if flat.shape[0]
            else x
        )
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) if isinstance(shift, (int, np.integer)) else tuple(shift)
    shifts, axes = np.broadcast_arrays(np.asarray(shifts, np.int64), np.asarray(axes, np.int64))
    total: dict[int, int] = {}
    for s, a in zip(shifts.tolist(), axes.tolist()):
        if not -len(shape) <= a < len(shape):
            raise ShapeError(f"roll: axis {a} is out of range for a Tensor of shape {shape}")
        a %= len(shape)
        total[a] = total.get(a, 0) + s  # numpy sums shifts given for the same axis
    keep = sorted(a for a in total if shape[a] and total[a] % shape[a])
    if not keep:
        return x
    return _s.roll(x, shifts=tuple(total[a] % shape[a] for a in keep), axes=tuple(keep))


def _pad_widths(pad_width: Any, ndim: int) -> tuple:
    widths = np.asarray(pad_width, dtype=np.int64)
    try:
        widths = np.broadcast_to(widths, (ndim, 2))
    except ValueError:
        raise ShapeError(
            f"pad: pad_width {pad_width!r} does not give a (before, after) pair for each of the "
            f"{ndim} axes"
        ) from None
    if (widths < 0).any():
        raise ShapeError(f"pad: pad_width {pad_width!r} must be non-negative")
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


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    """Pad ``x`` on each axis (numpy's ``pad``).

    Args:
        x: Tensor of ``n`` dimensions.
        pad_width: ``((before, after),) * n``, one ``(before, after)`` for all axes, or one
            int for all sides.
        mode: ``"constant"`` (``constant_values``), ``"edge"`` (repeat the border),
            ``"reflect"`` (mirror without the border), ``"symmetric"`` (mirror with it) or
            ``"wrap"`` (periodic).
        constant_values: a Python scalar or a 0-d Tensor (also a traced one) for
            ``"constant"`` mode.

    Returns:
        Tensor of ``x.dtype``, axis ``d`` longer by ``sum(pad_width[d])``.

    Raises:
        ShapeError: a malformed ``pad_width``, or padding an empty axis in a non-constant mode.
        ValueError: an unknown mode.

    Example:
        >>> fnp.pad(fnp.array([1.0, 2.0, 3.0]), 2, mode="reflect")
        Tensor([3., 2., 1., 2., 3., 2., 1.], dtype=float64)
    """
    x = _tensor(x)
    shape = shape_of(x)
    widths = _pad_widths(pad_width, len(shape))
    if mode == "constant":
        array_value = isinstance(constant_values, Tensor) and constant_values.ndim == 0
        if not array_value and not isinstance(constant_values, (int, float, complex, bool, np.generic)):
            raise ValueError(
                "pad: constant_values must be a scalar (a Python number or a 0-d Tensor); "
                "for per-side constants pad with 0 and add a padded mask times the values"
            )
        if not any(b or a for b, a in widths):
            return x
        if array_value:  # maybe traced: select it on the border
            from fgrad.numpy._elementwise import where  # a sibling module of this layer

            border = np.pad(np.zeros(shape, dtype=bool), widths, constant_values=True)
            padded = _s.pad(x, pad_width=widths, constant=0)
            return where(asarray(border), constant_values.astype(x.dtype), padded)
        value = (
            constant_values.item() if isinstance(constant_values, np.generic) else constant_values
        )
        return _s.pad(x, pad_width=widths, constant=value)
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise ValueError(
            f"pad: mode {mode!r} is not supported; use 'constant', 'edge', 'reflect', "
            "'symmetric' or 'wrap'"
        )
    from fgrad.numpy._indexing import take

    for d, (b, a) in enumerate(widths):
        if not (b or a):
            continue
        if shape[d] == 0:
            raise ShapeError(
                f"pad: cannot pad the empty axis {d} of shape {shape} in mode {mode!r}"
            )
        x = take(x, _pad_positions(shape[d], b, a, mode), axis=d)
    return x


def tile(x: Any, reps: Any) -> Any:
    """Repeat the whole of ``x`` ``reps[d]`` times along each axis (numpy's ``tile``).

    Example:
        >>> fnp.tile(fnp.array([1.0, 2.0]), (2, 2))
        Tensor([[1., 2., 1., 2.],
                [1., 2., 1., 2.]], dtype=float64)
    """
    x = _tensor(x)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    shape = shape_of(x)
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    if any(r < 0 for r in reps):
        raise ShapeError(f"tile: repetitions {reps} must be non-negative")
    inter = tuple(v for pair in zip((1,) * n, shape) for v in pair)
    big = tuple(v for pair in zip(reps, shape) for v in pair)
    y = _s.broadcast_to(_s.reshape(x, shape=inter), shape=big)
    return _s.reshape(y, shape=tuple(r * d for r, d in zip(reps, shape)))


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Any:
    """Repeat each element of ``x`` ``repeats`` times along ``axis`` (None: flattened).

    Args:
        x: Tensor of any shape.
        repeats: an int, or concrete non-negative ints with one per element along ``axis``.
        axis: the axis to repeat along; None flattens ``x`` first.

    Raises:
        ShapeError: ``repeats`` has the wrong length or negative entries.

    Example:
        >>> fnp.repeat(fnp.array([1.0, 2.0]), 2)
        Tensor([1., 1., 2., 2.], dtype=float64)
        >>> fnp.repeat(fnp.array([1.0, 2.0]), [1, 3])
        Tensor([1., 2., 2., 2.], dtype=float64)
    """
    x = _tensor(x)
    if axis is None:
        x = ravel(x)
        axis = 0
    shape = shape_of(x)
    axis = norm_axes("repeat", axis, len(shape))[0]
    counts = np.asarray(repeats)
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(()) if counts.ndim else counts)
        if r < 0:
            raise ShapeError(f"repeat: repeats must be non-negative, got {r}")
        y = _s.reshape(x, shape=shape[: axis + 1] + (1,) + shape[axis + 1 :])
        y = _s.broadcast_to(y, shape=shape[: axis + 1] + (r,) + shape[axis + 1 :])
        return _s.reshape(y, shape=shape[:axis] + (shape[axis] * r,) + shape[axis + 1 :])
    if counts.shape != (shape[axis],) or (counts < 0).any():
        raise ShapeError(
            f"repeat: repeats must hold one non-negative count per element of axis {axis} "
            f"(length {shape[axis]}), got {counts.tolist()}"
        )
    from fgrad.numpy._indexing import take

    return take(x, np.repeat(np.arange(shape[axis]), counts), axis=axis)


def atleast_1d(*xs: Any) -> Any:
    """Inputs with at least one dimension (0-d become ``(1,)``); a tuple for several inputs.

    Example:
        >>> fnp.atleast_1d(1.0)
        Tensor([1.], dtype=float64)
    """
    out = tuple(_s.reshape(x, shape=(1,)) if not shape_of(x) else x for x in map(_tensor, xs))
    return out[0] if len(out) == 1 else out


def atleast_2d(*xs: Any) -> Any:
    """Inputs with at least two dimensions: ``()`` becomes ``(1, 1)`` and ``(n,)`` ``(1, n)``.

    Example:
        >>> fnp.atleast_2d(fnp.ones(3)).shape
        (1, 3)
    """
    out = tuple(
        _s.reshape(x, shape=(1,) * (2 - x.ndim) + shape_of(x)) if x.ndim < 2 else x
        for x in map(_tensor, xs)
    )
    return out[0] if len(out) == 1 else out


def atleast_3d(*xs: Any) -> Any:
    """Inputs with at least three dimensions: ``(n,)`` becomes ``(1, n, 1)`` and ``(m, n)``
    ``(m, n, 1)``, as numpy.

    Example:
        >>> fnp.atleast_3d(fnp.ones((2, 3))).shape
        (2, 3, 1)
    """

    def lift(x):
        s = shape_of(x)
        new = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s))
        return x if new is None else _s.reshape(x, shape=new)

    out = tuple(lift(x) for x in map(_tensor, xs))
    return out[0] if len(out) == 1 else out
