"""Encodings of integer labels (``jax.nn.one_hot``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args
from fgrad import numpy as fnp
from fgrad.core.trace import Tracer, concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.tensor import Tensor, as_tensor

__all__ = ["one_hot"]


def _num_classes(num_classes: Any) -> int:
    """``num_classes`` as a static non-negative int."""
    if isinstance(num_classes, Tracer):
        try:
            num_classes = concrete_value(num_classes)
        except ConcretizationError:
            raise ConcretizationError(
                "one_hot: num_classes is traced abstractly (jit or make_graph), but it fixes "
                "the output shape, so it must be static: pass a Python int (or mark the "
                "argument static in jit)"
            ) from None
    if isinstance(num_classes, Tensor):
        num_classes = concrete_value(num_classes)
    return _args.size(num_classes, "one_hot", "num_classes")


def one_hot(x: Any, num_classes: int, *, dtype: Any = np.float64, axis: int = -1) -> Any:
    """One-hot encode integer labels ``x`` into ``num_classes`` classes (``jax.nn.one_hot``).

    ``out[..., c, ...] = (x[...] == c)`` with the class axis inserted at ``axis``. As in
    JAX, a label outside ``[0, num_classes)`` (negative ones included) gives a row of
    zeros, not an error and not wrap-around. Labels carry no derivative.

    Args:
        x: integer Tensor, array or int of any shape (traced values are fine).
        num_classes: static int, the length of the class axis.
        dtype: the output dtype (default float64, JAX's ``jnp.float_``); any numeric or
            bool dtype.
        axis: where the class axis goes in the result, in ``[-x.ndim - 1, x.ndim]``.

    Returns:
        Tensor of shape ``x.shape`` with ``num_classes`` inserted at ``axis``, of
        ``dtype``.

    Raises:
        DTypeError: ``x`` is not an integer array (floats and bools are refused: cast
            labels with ``x.astype(int)``).
        TypeError: ``num_classes`` or ``axis`` is not an int, or ``dtype`` is not a numeric
            dtype (a ``DTypeError``).
        ValueError: ``num_classes`` is negative.
        ConcretizationError: ``num_classes`` is traced abstractly.
        ShapeError: ``axis`` is out of range.

    Example:
        >>> import fgrad.nn as nn
        >>> nn.one_hot(fnp.array([0, 2, -1, 3]), 3)
        Tensor([[1., 0., 0.],
                [0., 0., 1.],
                [0., 0., 0.],
                [0., 0., 0.]], dtype=float64)
        >>> nn.one_hot(fnp.array([1, 0]), 2, dtype=fnp.int32, axis=0)
        Tensor([[0, 1],
                [1, 0]], dtype=int32)
    """
    n = _num_classes(num_classes)
    dtype = _args.dtype(dtype, "one_hot", none_ok=False)
    if not isinstance(x, (Tensor, Tracer)):
        x = as_tensor(x, "one_hot", "x")
    kind = np.dtype(x.dtype).kind
    if kind not in "iu":
        raise DTypeError(
            f"one_hot: x must hold integer class labels, got dtype {x.dtype}; cast them "
            "first (x.astype(int)) if the values are whole numbers"
        )
    ndim = len(x.shape)
    axis = _args.index(axis, "one_hot", "axis")
    if not -ndim - 1 <= axis <= ndim:
        raise ShapeError(
            f"one_hot: axis {axis} is out of range for labels of shape {tuple(x.shape)}: "
            f"the result has {ndim + 1} dimensions"
        )
    axis = int(axis) % (ndim + 1)
    shape = [1] * ndim
    shape.insert(axis, n)
    classes = fnp.reshape(fnp.arange(n, dtype=x.dtype, device=x.device), tuple(shape))
    return fnp.astype(fnp.expand_dims(x, axis) == classes, dtype)
