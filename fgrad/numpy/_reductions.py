"""Reductions under numpy's names and signatures (``axis``, ``keepdims``)."""

from __future__ import annotations

from typing import Any

from fgrad.ops import reduction as _r
from fgrad.ops._rules import norm_axes


def _ndim(x: Any) -> int:
    return len(getattr(x, "shape", ()))


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Sum of elements over ``axis`` (int, tuple or None for all).

    Args:
        x: Tensor of any shape.
        axis: axis or axes to reduce; None reduces all.
        keepdims: keep reduced axes with size 1.

    Returns:
        Tensor of the reduced shape.

    Raises:
        ShapeError: an axis is out of range or repeated.

    Example:
        >>> fnp.sum(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        Tensor([3., 7.], dtype=float64)
    """
    return _r.sum(x, axes=norm_axes("sum", axis, _ndim(x)), keepdims=keepdims)
