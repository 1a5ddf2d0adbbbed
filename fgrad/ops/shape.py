"""Shape ops: reshape, broadcasting, axis permutation, joining and splitting."""

from __future__ import annotations

import functools
import itertools

import numpy as np

from fgrad import dtypes
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import ShapeError
from fgrad.ops._batch import axes_batch
from fgrad.ops._rules import PerInput, shape_of
from fgrad.tensor import ShapeDtype


def _reshape_aval(x, *, shape):
    size = int(np.prod(shape_of(x), dtype=np.int64))
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ShapeError(
            f"reshape: cannot reshape {ShapeDtype(shape_of(x), x.dtype)} ({size} elements) "
            f"into shape {shape}"
        )
    return ShapeDtype(tuple(shape), x.dtype)


def _reshape_batch(op, args, dims, *, shape):
    (x,) = args
    return reshape(x, shape=(shape_of(x)[0], *shape)), 0


reshape = defop(
    "reshape",
    kernel=lambda xp, x, *, shape: xp.reshape(x, shape),
    aval=_reshape_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, shape: reshape(ct, shape=x.shape),),
    batch=_reshape_batch,
    check=Check(
        shapes=(((2, 3),),), params=({"shape": (3, 2)}, {"shape": (6,)}, {"shape": (1, 6, 1)})
    ),
    doc="""Give ``x`` a new shape with the same number of elements (row-major order).

    Args:
        x: Tensor of any shape.
        shape: tuple of non-negative ints (``fnp.reshape`` also resolves one ``-1``).

    Returns:
        Tensor of ``shape`` and ``x.dtype``.

    Raises:
        ShapeError: the element counts differ.

    Example:
        >>> fnp.reshape(fnp.arange(6), (2, 3))
        Tensor([[0, 1, 2],
                [3, 4, 5]], dtype=int64)
    """,
)


def _broadcast_to_aval(x, *, shape):
    xs = shape_of(x)
    ok = len(shape) >= len(xs) and all(
        d == s or d == 1 for d, s in zip(reversed(xs), reversed(shape))
    )
    if not ok:
        raise ShapeError(
            f"broadcast_to: cannot broadcast {ShapeDtype(xs, x.dtype)} to shape {shape}; each "
            "trailing dimension must equal the target or be 1"
        )
    return ShapeDtype(tuple(shape), x.dtype)


def sum_to_shape(ct, shape: tuple):
    """Sum ``ct`` over the axes that broadcasting added or stretched, to get ``shape``."""
    ct_shape = tuple(ct.shape)
    if ct_shape == tuple(shape):
        return ct
    lead = len(ct_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and ct_shape[lead + i] != 1
    )
    out = _sum(ct, axes=axes, keepdims=False) if axes else ct
    return reshape(out, shape=tuple(shape)) if tuple(out.shape) != tuple(shape) else out


def _broadcast_kernel(xp, x, *, shape):
    if xp is np:
        view = _np_broadcast_view(x, tuple(shape))
        if view is not None:
            return view
    return xp.broadcast_to(x, shape)


def _np_broadcast_view(x, shape: tuple):
    """``np.broadcast_to(x, shape)`` built directly as a strided view, or None to fall back.

    numpy's own function goes through ``nditer`` in Python (~2.4 us); this is ~0.7 us, and
    every reduction's gradient broadcasts its cotangent. Only for a contiguous ``x`` (the
    buffer protocol refuses others) and shapes that broadcast; the view is read-only, as
    numpy's.
    """
    if not isinstance(x, (np.ndarray, np.generic)):
        return None
    lead = len(shape) - x.ndim
    if lead < 0:
        return None
    strides = [0] * lead
    for d, s, t in zip(x.shape, x.strides, shape[lead:]):
        if d == t:
            strides.append(s)
        elif d == 1:
            strides.append(0)
        else:
            return None
    try:
        view = np.ndarray(shape, x.dtype, x, 0, tuple(strides))
    except (TypeError, ValueError, BufferError):
        return None
    view.flags.writeable = False
    return view


def _broadcast_to_batch(op, args, dims, *, shape):
    # The example axes align with ``shape`` from the right: unit axes go between the
    # mapped axis and them, so that the mapped axis lines up with the new leading one.
    (x,) = args
    size, *xs = shape_of(x)
    missing = len(shape) - len(xs)
    if missing > 0:
        x = reshape(x, shape=(size, *(1,) * missing, *xs))
    return broadcast_to(x, shape=(size, *shape)), 0


broadcast_to = defop(
    "broadcast_to",
    kernel=_broadcast_kernel,
    aval=_broadcast_to_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, shape: sum_to_shape(ct, x.shape),),
    batch=_broadcast_to_batch,
    check=Check(shapes=(((3,),), ((2, 1),)), params=({"shape": (4, 2, 3)},)),
    doc="""Broadcast ``x`` to ``shape`` following numpy's rules (a view; no copy).

    Args:
        x: Tensor whose trailing dimensions equal those of ``shape`` or are 1.
        shape: target shape, tuple of ints.

    Returns:
        Tensor of ``shape`` and ``x.dtype``.

    Raises:
        ShapeError: ``x`` does not broadcast to ``shape``.

    Example:
        >>> fnp.broadcast_to(fnp.array([1.0, 2.0]), (2, 2))
        Tensor([[1., 2.],
                [1., 2.]], dtype=float64)
    """,
)


def _permute_aval(x, *, axes):
    xs = shape_of(x)
    if sorted(axes) != list(range(len(xs))):
        raise ShapeError(
            f"permute_dims: axes {axes} are not a permutation of the {len(xs)} axes of "
            f"{ShapeDtype(xs, x.dtype)}"
        )
    return ShapeDtype(tuple(xs[a] for a in axes), x.dtype)


def _permute_batch(op, args, dims, *, axes):
    return permute_dims(args[0], axes=(0, *(a + 1 for a in axes))), 0


permute_dims = defop(
    "permute_dims",
    kernel=lambda xp, x, *, axes: xp.permute_dims(x, axes),
    aval=_permute_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, axes: permute_dims(ct, axes=tuple(np.argsort(axes).tolist())),),
    batch=_permute_batch,
    check=Check(shapes=(((2, 3, 4),),), params=({"axes": (2, 0, 1)}, {"axes": (1, 0, 2)})),
    doc="""Permute the axes of ``x``: output axis ``i`` is input axis ``axes[i]``.

    Args:
        x: Tensor of ``n`` dimensions.
        axes: a permutation of ``range(n)``.

    Returns:
        Tensor of shape ``tuple(x.shape[a] for a in axes)``.

    Raises:
        ShapeError: ``axes`` is not a permutation of ``x``'s axes.

    Example:
        >>> fnp.permute_dims(fnp.ones((2, 3)), (1, 0)).shape
        (3, 2)
    """,
)


# ------------------------------------------------------------------------ joining, splitting


def _concatenate_aval(*xs, axis):
    if not xs:
        raise ShapeError("concatenate: needs at least one array")
    shapes = [shape_of(x) for x in xs]
    first = shapes[0]
    described = ", ".join(
        str(ShapeDtype(s, np.dtype(dtypes.result_type(x)))) for s, x in zip(shapes, xs)
    )
    if not first:
        raise ShapeError(
            f"concatenate: zero-dimensional inputs ({described}) cannot be concatenated; use "
            "stack, or reshape them to 1-D"
        )
    if not 0 <= axis < len(first):
        raise ShapeError(f"concatenate: axis {axis} is out of range for inputs {described}")
    for s in shapes:
        if len(s) != len(first) or any(
            a != b for i, (a, b) in enumerate(zip(s, first)) if i != axis
        ):
            raise ShapeError(
                f"concatenate: inputs {described} must have the same number of dimensions and "
                f"equal sizes on every axis except axis {axis}; reshape or pad them to match"
            )
    shape = first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1 :]
    return ShapeDtype(shape, np.dtype(dtypes.result_type(*xs)))


def _concatenate_vjp(ct, out, *xs, axis):
    bounds = tuple(np.cumsum([x.shape[axis] for x in xs[:-1]], dtype=np.int64).tolist())
    return split(ct, axis=axis, bounds=bounds)


def _concatenate_jvp(i, t, out, *xs, axis):
    # The tangent of input i, placed in zeros where the other inputs sit.
    before = int(sum(x.shape[axis] for x in xs[:i]))
    after = int(sum(x.shape[axis] for x in xs[i + 1 :]))
    widths = tuple((before, after) if d == axis else (0, 0) for d in range(len(t.shape)))
    return pad(t, pad_width=widths, constant=0)


concatenate = defop(
    "concatenate",
    # Array API name; cupy before v14 only has ``concatenate``.
    kernel=lambda xp, *xs, axis: (getattr(xp, "concat", None) or xp.concatenate)(xs, axis=axis),
    aval=_concatenate_aval,
    jvp=PerInput(lambda i: functools.partial(_concatenate_jvp, i)),
    vjp=_concatenate_vjp,
    batch=axes_batch,  # shared inputs are broadcast to the batch; ``axis`` moves right
    check=Check(
        shapes=(((2, 3), (2, 3)), ((3, 2), (3, 2), (3, 2))),
        params=({"axis": 0}, {"axis": 1}),
    ),
    doc="""Join Tensors along an existing axis (numpy's ``concatenate``, Array API ``concat``).

    Args:
        *xs: Tensors of equal ``ndim >= 1`` and equal sizes except along ``axis``; their
            dtypes are promoted together.
        axis: non-negative int (``fnp.concatenate`` also takes negative axes and None).

    Returns:
        Tensor whose ``axis`` is the sum of the inputs' sizes there.

    Raises:
        ShapeError: zero-dimensional inputs, or sizes that differ off ``axis``.

    Example:
        >>> fnp.concatenate([fnp.array([1.0, 2.0]), fnp.array([3.0])])
        Tensor([1., 2., 3.], dtype=float64)
    """,
)


def _split_aval(x, *, axis, bounds):
    xs = shape_of(x)
    if not 0 <= axis < len(xs):
        raise ShapeError(f"split: axis {axis} is out of range for {ShapeDtype(xs, x.dtype)}")
    if any(not 0 <= b <= xs[axis] for b in bounds):
        raise ShapeError(
            f"split: split points {bounds} must lie in [0, {xs[axis]}] for axis {axis} of "
            f"{ShapeDtype(xs, x.dtype)}"
        )
    edges = (0, *bounds, xs[axis])
    return tuple(
        ShapeDtype(xs[:axis] + (max(b - a, 0),) + xs[axis + 1 :], np.dtype(x.dtype))
        for a, b in itertools.pairwise(edges)
    )


def _split_vjp(cts, outs, x, *, axis, bounds):
    if all(a <= b for a, b in itertools.pairwise(bounds)):
        return (concatenate(*cts, axis=axis),)
    # Decreasing split points (numpy allows them) make pieces overlap or vanish: place each
    # piece's cotangent at its own positions and add.
    n = x.shape[axis]
    edges = (0, *bounds, n)
    total = None
    for ct, (a, b) in zip(cts, itertools.pairwise(edges)):
        if b <= a:
            continue
        widths = tuple((a, n - b) if d == axis else (0, 0) for d in range(len(x.shape)))
        placed = pad(ct, pad_width=widths, constant=0)
        total = placed if total is None else _add(total, placed)
    return (total,)


def _split_kernel(xp, x, *, axis, bounds):
    edges = (0, *bounds, x.shape[axis])
    head = (slice(None),) * axis
    return tuple(x[head + (slice(a, b), ...)] for a, b in itertools.pairwise(edges))


split = defop(
    "split",
    kernel=_split_kernel,
    aval=_split_aval,
    jvp=LINEAR,
    vjp=_split_vjp,
    batch=axes_batch,
    multiple_results=True,
    check=Check(
        shapes=(((5, 3),),),
        params=(
            {"axis": 0, "bounds": (2,)},
            {"axis": 0, "bounds": (1, 3)},
            {"axis": 1, "bounds": (1,)},
            {"axis": 0, "bounds": (2, 2)},
            {"axis": 0, "bounds": (3, 1, 4)},
        ),
    ),
    doc="""Split ``x`` along ``axis`` at the positions ``bounds`` into ``len(bounds) + 1`` pieces.

    Args:
        x: Tensor of at least one dimension.
        axis: non-negative int.
        bounds: split positions in ``[0, x.shape[axis]]``, usually non-decreasing
            (``fnp.split`` also takes a number of equal sections).

    Returns:
        Tuple of Tensors; piece ``k`` holds positions ``bounds[k-1]:bounds[k]`` (empty
        when that range is), as numpy's ``split``.

    Raises:
        ShapeError: ``axis`` or a split position out of range.

    Example:
        >>> fnp.split(fnp.arange(5.0), [2])
        [Tensor([0., 1.], dtype=float64), Tensor([2., 3., 4.], dtype=float64)]
    """,
)


def _axes_aval(name):
    def rule(x, **params):
        xs = shape_of(x)
        for a in params["axes"]:
            if not 0 <= a < len(xs):
                raise ShapeError(f"{name}: axis {a} is out of range for {ShapeDtype(xs, x.dtype)}")
        return ShapeDtype(xs, np.dtype(x.dtype))

    return rule


flip = defop(
    "flip",
    kernel=lambda xp, x, *, axes: xp.flip(x, axis=axes),
    aval=_axes_aval("flip"),
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, axes: flip(ct, axes=axes),),
    batch=axes_batch,
    check=Check(shapes=(((2, 3),),), params=({"axes": (0,)}, {"axes": (1,)}, {"axes": (0, 1)})),
    doc="""Reverse the order of elements along ``axes``.

    Args:
        x: Tensor of any shape.
        axes: sorted tuple of non-negative axes (``fnp.flip`` takes numpy's ``axis``).

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ShapeError: an axis is out of range.

    Example:
        >>> fnp.flip(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        Tensor([[2., 1.],
                [4., 3.]], dtype=float64)
    """,
)


roll = defop(
    "roll",
    kernel=lambda xp, x, *, shifts, axes: xp.roll(x, shift=shifts, axis=axes),
    aval=_axes_aval("roll"),
    jvp=LINEAR,
    vjp=(
        lambda ct, out, x, *, shifts, axes: roll(ct, shifts=tuple(-s for s in shifts), axes=axes),
    ),
    batch=axes_batch,
    check=Check(
        shapes=(((2, 3),),),
        params=({"shifts": (1,), "axes": (1,)}, {"shifts": (1, 2), "axes": (0, 1)}),
    ),
    doc="""Shift elements cyclically by ``shifts[k]`` positions along ``axes[k]``.

    Args:
        x: Tensor of any shape.
        shifts: tuple of ints, one per axis (positive shifts move elements to higher
            positions).
        axes: tuple of distinct non-negative axes (``fnp.roll`` also rolls the flattened
            Tensor when ``axis`` is None).

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ShapeError: an axis is out of range.

    Example:
        >>> fnp.roll(fnp.array([1.0, 2.0, 3.0]), 1)
        Tensor([3., 1., 2.], dtype=float64)
    """,
)


def _pad_aval(x, *, pad_width, constant):
    xs = shape_of(x)
    if len(pad_width) != len(xs) or any(b < 0 or a < 0 for b, a in pad_width):
        raise ShapeError(
            f"pad: pad_width {pad_width} must hold one non-negative (before, after) pair per "
            f"axis of {ShapeDtype(xs, x.dtype)}"
        )
    return ShapeDtype(tuple(b + n + a for (b, a), n in zip(pad_width, xs)), np.dtype(x.dtype))


def _pad_kernel(xp, x, *, pad_width, constant):
    shape = tuple(b + n + a for (b, a), n in zip(pad_width, x.shape))
    out = xp.full(shape, constant, dtype=x.dtype)
    out[tuple(slice(b, b + n) for (b, _), n in zip(pad_width, x.shape))] = x
    return out


def _unpad(ct, x, pad_width):
    index = tuple((b, b + n, 1) for (b, _), n in zip(pad_width, x.shape))
    return getitem(ct, index=index)


def _pad_batch(op, args, dims, *, pad_width, constant):
    return pad(args[0], pad_width=((0, 0), *pad_width), constant=constant), 0


pad = defop(
    "pad",
    kernel=_pad_kernel,
    aval=_pad_aval,
    jvp=(lambda t, out, x, *, pad_width, constant: pad(t, pad_width=pad_width, constant=0),),
    vjp=(lambda ct, out, x, *, pad_width, constant: _unpad(ct, x, pad_width),),
    batch=_pad_batch,
    check=Check(
        shapes=(((2, 3),),),
        params=(
            {"pad_width": ((1, 2), (0, 1)), "constant": 0},
            {"pad_width": ((0, 0), (2, 0)), "constant": 1.5},
        ),
    ),
    doc="""Surround ``x`` with ``constant``: ``pad_width[d]`` positions before and after axis ``d``.

    Args:
        x: Tensor of ``n`` dimensions.
        pad_width: tuple of ``n`` pairs ``(before, after)`` of non-negative ints.
        constant: Python scalar written into the new positions (no derivative).

    Returns:
        Tensor of ``x.dtype``, axis ``d`` longer by ``sum(pad_width[d])``. ``fnp.pad``
        also offers the ``edge``, ``reflect``, ``symmetric`` and ``wrap`` modes.

    Raises:
        ShapeError: ``pad_width`` does not match ``x``'s dimensions or is negative.

    Example:
        >>> fnp.pad(fnp.array([1.0, 2.0]), (1, 2))
        Tensor([0., 1., 2., 0., 0.], dtype=float64)
    """,
)

from fgrad.ops.elementwise import add as _add
from fgrad.ops.indexing import getitem
from fgrad.ops.reduction import sum as _sum
