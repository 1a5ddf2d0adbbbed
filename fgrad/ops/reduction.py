"""Reductions over ``axes`` (canonical: a sorted tuple of non-negative ints) with ``keepdims``."""

from __future__ import annotations

import numpy as np

from fgrad.core.op import LINEAR, Check, defop
from fgrad.ops._rules import floating, same, shape_of
from fgrad.tensor import ShapeDtype

_AXES_PARAMS = (
    {"axes": (), "keepdims": False},
    {"axes": (0,), "keepdims": False},
    {"axes": (0,), "keepdims": True},
)


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    """The shape left after reducing ``axes`` of ``shape``."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduction_aval(dtype_rule=same):
    """aval rule of a reduction."""

    def rule(x, *, axes, keepdims):
        return ShapeDtype(reduced_shape(shape_of(x), axes, keepdims), np.dtype(dtype_rule(x.dtype)))

    return rule


def expand_reduced(ct, x_shape: tuple, axes: tuple, keepdims: bool):
    """Broadcast a reduction's cotangent back to the input shape."""
    if not keepdims:
        ct = reshape(ct, shape=reduced_shape(x_shape, axes, True))
    return broadcast_to(ct, shape=tuple(x_shape))


def _sum_dtype(dtype):
    # numpy sums bools and small ints into the default int; keep that rule visible here.
    return np.sum(np.zeros((), dtype)).dtype


sum = defop(  # noqa: A001 - numpy's name
    "sum",
    kernel=lambda xp, x, *, axes, keepdims: xp.sum(x, axis=axes, keepdims=keepdims),
    aval=reduction_aval(_sum_dtype),
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, axes, keepdims: expand_reduced(ct, x.shape, axes, keepdims),),
    check=Check(
        shapes=(((2, 3),),),
        params=_AXES_PARAMS + ({"axes": (0, 1), "keepdims": False}, {"axes": (1,), "keepdims": False}),
    ),
    doc="""Sum of elements over ``axes``.

    Args:
        x: Tensor of shape ``(d_0, ..., d_{n-1})``.
        axes: sorted tuple of axes to reduce (``fnp.sum`` accepts numpy's ``axis``).
        keepdims: keep reduced axes with size 1.

    Returns:
        Tensor of the reduced shape; bools and small ints sum into the default int.

    Raises:
        ShapeError: an axis is out of range (raised by ``fnp.sum``).

    Example:
        >>> fnp.sum(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)
        Tensor([4., 6.], dtype=float64)
    """,
)

from fgrad.ops.shape import broadcast_to, reshape  # noqa: E402  (shape ops use reductions too)

_ = floating
