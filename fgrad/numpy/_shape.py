"""Shape functions under numpy's names and signatures."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad.errors import ShapeError
from fgrad.ops import shape as _s


def _shape(x: Any) -> tuple:
    return tuple(getattr(x, "shape", ()))


def reshape(x: Any, shape: Any, /) -> Any:
    """Give ``x`` a new shape; one dimension may be ``-1`` (inferred).

    Raises:
        ShapeError: the element counts differ.

    Example:
        >>> fnp.reshape(fnp.arange(6), (3, -1)).shape
        (3, 2)
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if -1 in shape:
        size = int(np.prod(_shape(x), dtype=np.int64))
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if shape.count(-1) > 1 or rest == 0 or size % rest:
            raise ShapeError(f"reshape: cannot reshape shape {_shape(x)} into {shape}")
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
    n = len(_shape(x))
    return _s.permute_dims(x, axes=tuple(int(a) % n if n else 0 for a in axes))


def transpose(x: Any, axes: Any = None) -> Any:
    """Reverse (or permute by ``axes``) the axes of ``x``.

    Example:
        >>> fnp.transpose(fnp.ones((2, 3))).shape
        (3, 2)
    """
    n = len(_shape(x))
    return permute_dims(x, tuple(reversed(range(n))) if axes is None else axes)
