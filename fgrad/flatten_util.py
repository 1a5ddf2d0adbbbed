"""Pytrees as one flat vector and back, as ``jax.flatten_util``.

Reference: ``jax.flatten_util.ravel_pytree``
(https://docs.jax.dev/en/latest/_autosummary/jax.flatten_util.ravel_pytree.html).
"""

from __future__ import annotations

import math as _math
import warnings as _warnings
from collections.abc import Callable as _Callable
from typing import Any as _Any

import numpy as _np

from fgrad import numpy as _fnp
from fgrad import tree as _tree
from fgrad.dtypes import result_type as _result_type

__all__ = ["ravel_pytree"]


def __dir__() -> list[str]:
    return sorted(__all__)


def ravel_pytree(tree: _Any) -> tuple[_Any, _Callable[[_Any], _Any]]:
    """Flatten a pytree of arrays into one 1-d Tensor, and the function that undoes it.

    The leaves are raveled in flatten order (dict keys sorted) and concatenated in the
    dtype they promote to (fgrad's rule, numpy 2's with weak Python scalars: ``float32``
    with a Python float stays ``float32``; ``int32`` with ``float32`` gives ``float64``,
    where JAX's lattice gives ``float32``). ``unravel`` casts each piece back to its leaf's
    dtype. Both are made of fgrad ops, so they are differentiable and work under ``jit``
    and ``vmap`` (an integer leaf's piece has no derivative, as in JAX).

    Args:
        tree: a pytree whose leaves are Tensors, arrays or Python numbers.

    Returns:
        ``(flat, unravel)``: ``flat`` a ``(n,)`` Tensor, ``n`` the leaves' total size
        (``float64`` and empty for a tree without leaves); ``unravel(flat)`` the pytree of
        ``tree``'s structure, each leaf of its original shape and dtype (Python numbers
        come back as 0-d Tensors).

    Raises:
        ValueError: ``unravel`` is given an array whose shape is not ``(n,)``.
        DTypeError: a leaf is not an array or a number.

    Warns:
        UserWarning: ``unravel`` is given an array of another dtype than ``flat``'s (it is
            cast, as JAX does).

    Example:
        >>> params = {"w": fnp.ones((2, 2)), "b": fnp.array([0.5, -1.0])}
        >>> flat, unravel = fgrad.flatten_util.ravel_pytree(params)
        >>> flat
        Tensor([ 0.5, -1. ,  1. ,  1. ,  1. ,  1. ], dtype=float64)
        >>> unravel(2.0 * flat)["w"]
        Tensor([[2., 2.],
                [2., 2.]], dtype=float64)
    """
    leaves, treedef = _tree.flatten(tree)
    arrays = [_fnp.asarray(x) for x in leaves]
    shapes = [tuple(a.shape) for a in arrays]
    dtypes = [_np.dtype(a.dtype) for a in arrays]
    sizes = [_math.prod(s) for s in shapes]
    dtype = _np.dtype(_result_type(*leaves)) if leaves else _np.dtype(_np.float64)
    if arrays:
        flat = _fnp.concatenate([_fnp.ravel(a.astype(dtype)) for a in arrays])
    else:
        flat = _fnp.zeros((0,), dtype)
    total = sum(sizes)
    bounds = list(_np.cumsum(sizes[:-1]).tolist()) if sizes else []

    def unravel(flat_values: _Any) -> _Any:
        flat_values = _fnp.asarray(flat_values)
        if tuple(flat_values.shape) != (total,):
            raise ValueError(
                f"ravel_pytree's unravel: expected a 1-d array of shape ({total},), the size "
                f"of the raveled tree {treedef}, got shape {tuple(flat_values.shape)}"
            )
        if _np.dtype(flat_values.dtype) != dtype:
            _warnings.warn(
                f"ravel_pytree's unravel: given an array of dtype {flat_values.dtype}, "
                f"expected {dtype}; casting",
                stacklevel=2,
            )
        pieces = _fnp.split(flat_values, bounds) if arrays else []
        return _tree.unflatten(
            treedef,
            [
                _fnp.reshape(p, s).astype(d)
                for p, s, d in zip(pieces, shapes, dtypes)
            ],
        )

    return flat, unravel
