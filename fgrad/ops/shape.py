"""Shape ops: reshape, broadcasting, axis permutation, joining and splitting."""

from __future__ import annotations

import numpy as np

from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import ShapeError
from fgrad.ops._rules import shape_of
from fgrad.tensor import ShapeDtype


def _reshape_aval(x, *, shape):
    size = int(np.prod(shape_of(x), dtype=np.int64))
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ShapeError(
            f"reshape: cannot reshape {ShapeDtype(shape_of(x), x.dtype)} ({size} elements) "
            f"into shape {shape}"
        )
    return ShapeDtype(tuple(shape), x.dtype)


reshape = defop(
    "reshape",
    kernel=lambda xp, x, *, shape: xp.reshape(x, shape),
    aval=_reshape_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, shape: reshape(ct, shape=x.shape),),
    check=Check(shapes=(((2, 3),),), params=({"shape": (3, 2)}, {"shape": (6,)}, {"shape": (1, 6, 1)})),
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


broadcast_to = defop(
    "broadcast_to",
    kernel=lambda xp, x, *, shape: xp.broadcast_to(x, shape),
    aval=_broadcast_to_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, shape: sum_to_shape(ct, x.shape),),
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


permute_dims = defop(
    "permute_dims",
    kernel=lambda xp, x, *, axes: xp.permute_dims(x, axes),
    aval=_permute_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, axes: permute_dims(ct, axes=tuple(np.argsort(axes).tolist())),),
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

from fgrad.ops.reduction import sum as _sum  # noqa: E402
