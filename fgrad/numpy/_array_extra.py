"""numpy's shape, indexing, set, creation, printing and file functions beyond the op exports.

Every function here is a composition of fgrad's ops, so its derivatives come free: shape,
indexing and selection functions pass each cotangent to the value they moved; index, set
membership and sort-order results are integers or booleans with no derivative, as in JAX.

Tensors are immutable: the functions numpy defines in place (``fill_diagonal``, ``place``,
``put``, ``put_along_axis``) return a new Tensor and need ``inplace=False``, as JAX's.
Functions whose result size depends on the values (``unique_*``, the set operations,
``compress``, ``extract``, ``trim_zeros``, ``delete`` of traced indices) run on concrete
values (eager code, ``grad``); under ``jit``, ``make_graph`` or ``vmap`` they take JAX's
static ``size=`` (and ``fill_value=``), or raise a ConcretizationError that says so.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import math
import os
import tempfile
from collections import namedtuple
from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad.core.trace import concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.numpy._creation import (
    _matrix_args,
    _numpy_layout,
    _static,
    linspace,
    ones,
    zeros,
)
from fgrad.numpy._elementwise import astype, clip, where
from fgrad.numpy._extras import diag
from fgrad.numpy._indexing import take, take_along_axis
from fgrad.numpy._reductions import all as _all
from fgrad.numpy._reductions import any as _any
from fgrad.numpy._reductions import cumsum
from fgrad.numpy._reductions import sum as _sum
from fgrad.numpy._shape import (
    _tensor,
    atleast_3d,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    ravel,
    reshape,
    split,
    stack,
    swapaxes,
)
from fgrad.numpy._sorting import (
    _SIZE_HINT,
    _concrete,
    _nonzero_sized,
    _real,
    _run_starts,
    argsort,
    searchsorted,
    sort,
)
from fgrad.ops import elementwise as _e
from fgrad.tensor import Tensor, _wrap, asarray
from fgrad.transforms.batching import vmap

__all__ = [
    "append",
    "apply_along_axis",
    "apply_over_axes",
    "argpartition",
    "array_equal",
    "array_equiv",
    "array_repr",
    "array_str",
    "block",
    "choose",
    "column_stack",
    "compress",
    "copy",
    "delete",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "dsplit",
    "dstack",
    "extract",
    "fill_diagonal",
    "frombuffer",
    "fromfile",
    "fromfunction",
    "fromiter",
    "frompyfunc",
    "fromstring",
    "geomspace",
    "get_printoptions",
    "hsplit",
    "indices",
    "insert",
    "intersect1d",
    "isin",
    "ix_",
    "lexsort",
    "load",
    "logspace",
    "mask_indices",
    "partition",
    "piecewise",
    "place",
    "printoptions",
    "put",
    "put_along_axis",
    "ravel_multi_index",
    "resize",
    "rollaxis",
    "rot90",
    "save",
    "savez",
    "select",
    "set_printoptions",
    "setdiff1d",
    "setxor1d",
    "sort_complex",
    "tri",
    "tril_indices",
    "tril_indices_from",
    "trim_zeros",
    "triu_indices",
    "triu_indices_from",
    "union1d",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unravel_index",
    "vsplit",
]

_INT64 = np.dtype(np.int64)


def _ints(values: Any) -> Tensor:
    """A host int64 array as a Tensor (index results of static computations)."""
    return asarray(np.asarray(values, dtype=np.int64))


def _on(data: Any, like: Tensor) -> Tensor:
    """Host ``data`` as a Tensor on ``like``'s device (constants that meet its values)."""
    return asarray(np.asarray(data), device=like.device)


def _no_inplace(name: str, inplace: Any) -> None:
    if inplace is not False:
        raise ValueError(
            f"{name}: fgrad Tensors are immutable, so {name} cannot modify its input in "
            f"place; pass inplace=False to get a new Tensor (or use x.at[idx].set(values))"
        )


def _cast(value: Any, dtype: Any, name: str, arg: str) -> Tensor:
    """``value`` as a Tensor of ``dtype``, written into an array of that dtype: complex
    values into a real array are refused, as numpy (the imaginary parts would be lost)."""
    t = _tensor(value, name, arg)
    if dtypes.is_complex(t.dtype) and not dtypes.is_complex(dtype):
        raise DTypeError(
            f"{name}: cannot write complex {arg} into an array of dtype {np.dtype(dtype)}; "
            "cast the array to a complex dtype first, or pass fnp.real of the values"
        )
    return astype(t, dtype)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise TypeError(
            f"{name}: out= is not supported: fgrad Tensors are immutable; use the returned "
            "Tensor (functional style)"
        )


def _seq(value: Any, name: str, arg: str, what: str = "arrays") -> list:
    """``value`` as a list: a list, tuple or Tensor/array (its rows), else a DTypeError."""
    if isinstance(value, (Tensor, np.ndarray)) and value.ndim:
        return [value[i] for i in range(value.shape[0])]
    if not isinstance(value, (list, tuple)):
        raise DTypeError(
            f"{name}: {arg} must be a list or tuple of {what}, got {_args.describe(value)}"
        )
    return list(value)


def _numpy_call(name: str, f: Any, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` (a numpy function), its TypeError/ValueError naming ``name``."""
    try:
        return f(*args, **kwargs)
    except (TypeError, OverflowError) as err:
        raise DTypeError(f"{name}: {err}") from None
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


def _count(name: str, count: Any, offset: Any = 0) -> tuple:
    count = _args.index(count, name, "count", minimum=-1)
    return count, _args.index(offset, name, "offset", minimum=0)


def _host(name: str, x: Any) -> np.ndarray:
    """The concrete values of ``x`` on the host, or a ConcretizationError naming ``size=``."""
    return np.asarray(_wrap(_concrete(name, x, _SIZE_HINT)))


def _host_static(name: str, x: Any, what: str) -> np.ndarray:
    """Concrete values of an argument that fixes the result's structure (no ``size=`` fix)."""
    try:
        return np.asarray(_wrap(concrete_value(x))) if isinstance(x, Tensor) else np.asarray(x)
    except ConcretizationError:
        raise ConcretizationError(
            f"{name}: {what} must be concrete (it decides the result's shape), but it is "
            f"traced here ({x.aval}); compute it outside the traced function or pass it as "
            "a static argument"
        ) from None


# ------------------------------------------------------------------------ joining and splitting


@_args.names_errors("append")
def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` appended to the end of ``arr`` (numpy's ``append``).

    Differentiable in both inputs.

    Args:
        arr: Tensor of any shape.
        values: Tensor; with ``axis`` it must match ``arr`` except along ``axis``.
        axis: None flattens both first; an int joins along that axis.

    Returns:
        Tensor of the promoted dtype.

    Raises:
        ShapeError: the shapes do not match along the other axes, or ``axis`` is out of
            range.

    Example:
        >>> fnp.append(fnp.array([1.0, 2.0]), fnp.array([[3.0], [4.0]]))
        Tensor([1., 2., 3., 4.], dtype=float64)
    """
    arr, values = _tensor(arr, "append", "arr"), _tensor(values, "append", "values")
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def _axis_or_flat(arr: Tensor, axis: Any, name: str) -> tuple[Tensor, int]:
    if axis is None:
        return ravel(arr), 0
    return arr, _args.axis(axis, name, arr.ndim)


@_args.names_errors("insert")
def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` inserted into ``arr`` before positions ``obj`` along ``axis`` (``insert``).

    ``obj`` must be static (Python ints, a slice, or a concrete integer array or 1-d
    boolean mask, whose True positions are the indices as numpy 2's), as in JAX: it
    decides the result's shape. Differentiable in ``arr`` and ``values``;
    ``values`` is cast to ``arr.dtype`` as in numpy.

    Args:
        arr: Tensor of any shape.
        obj: int, slice, sequence of ints (the positions, in ``[-n, n]``) or 1-d boolean
            mask (``flatnonzero(obj)``).
        values: Tensor broadcast to the inserted block.
        axis: None inserts into the flattened ``arr``.

    Returns:
        Tensor of ``arr.dtype``.

    Raises:
        ConcretizationError: ``obj`` is traced.
        IndexError: an index in ``obj`` is out of range.
        ShapeError: ``values`` does not broadcast to the inserted block, or a boolean
            ``obj`` is not 1-d.
        DTypeError: ``obj`` is neither integer nor boolean.

    Example:
        >>> fnp.insert(fnp.array([1.0, 2.0, 3.0]), 1, 9.0)
        Tensor([1., 9., 2., 3.], dtype=float64)
        >>> fnp.insert(fnp.array([[1, 2], [3, 4]]), [0, 2], [7, 8], axis=1)
        Tensor([[7, 1, 2, 8],
                [7, 3, 4, 8]], dtype=int64)
    """
    arr = _tensor(arr, "insert", "arr")
    arr, axis = _axis_or_flat(arr, axis, "insert")
    n = arr.shape[axis]
    if isinstance(obj, slice):
        idx = np.arange(*obj.indices(n))
    else:
        idx = _host_static("insert", obj, "obj")
        if idx.dtype.kind == "b":  # numpy 2: a 1-d mask means its True positions
            if idx.ndim != 1:
                raise ShapeError(
                    f"insert: a boolean obj must be 1-d, got shape {idx.shape}; pass integer "
                    "positions for a single insertion"
                )
            idx = np.flatnonzero(idx)
        if idx.size and idx.dtype.kind not in "iu":
            raise DTypeError(
                f"insert: obj must be integer indices, a boolean mask or a slice, got dtype "
                f"{idx.dtype}"
            )
        idx = idx.astype(np.int64)
    values = _cast(values, arr.dtype, "insert", "values")
    if idx.size == 1:
        values = reshape(values, (1,) * (arr.ndim - values.ndim) + tuple(values.shape))
        if idx.ndim == 0:
            values = moveaxis(values, 0, axis)
        k = values.shape[axis]
        idx = np.full(k, int(idx.reshape(-1)[0]))
    else:
        idx = idx.reshape(-1)
        k = idx.size
    if np.any((idx < -n) | (idx > n)):
        raise IndexError(
            f"insert: index {idx.tolist()} is out of bounds for axis {axis} with size {n}"
        )
    shape = tuple(arr.shape[:axis]) + (k,) + tuple(arr.shape[axis + 1 :])
    try:
        values = broadcast_to(values, shape) if tuple(values.shape) != shape else values
    except ValueError as err:
        raise ShapeError(
            f"insert: values of shape {tuple(values.shape)} do not broadcast to the inserted "
            f"block {shape}"
        ) from err
    # numpy's order: new values go before the given positions, stably.
    source = np.insert(np.arange(n), np.where(idx < 0, idx + n, idx), np.arange(n, n + k))
    return take(concatenate([arr, values], axis=axis), source, axis=axis)


@_args.names_errors("delete")
def delete(
    arr: Any, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False,
) -> Any:
    """``arr`` without the entries ``obj`` along ``axis`` (numpy's ``delete``).

    ``obj`` is static (ints, a slice, a concrete integer array or boolean mask). Traced
    integer indices work under ``jit`` with ``assume_unique_indices=True``, as in JAX (the
    result then has ``n - len(obj)`` entries). Differentiable in ``arr``.

    Args:
        arr: Tensor of any shape.
        obj: int, slice, sequence of ints, or a boolean mask of length ``n``.
        axis: None deletes from the flattened ``arr``.
        assume_unique_indices: promise that integer ``obj`` has no repeats (needed for
            traced ``obj``).

    Returns:
        Tensor of ``arr.dtype``.

    Raises:
        ConcretizationError: ``obj`` is traced and ``assume_unique_indices`` is False.
        IndexError: an index is out of range.
        ShapeError: a boolean ``obj`` has the wrong length.

    Example:
        >>> fnp.delete(fnp.array([1.0, 2.0, 3.0, 4.0]), [0, 2])
        Tensor([2., 4.], dtype=float64)
        >>> fnp.delete(fnp.arange(6).reshape(2, 3), 1, axis=1)
        Tensor([[0, 2],
                [3, 5]], dtype=int64)
    """
    arr = _tensor(arr, "delete", "arr")
    arr, axis = _axis_or_flat(arr, axis, "delete")
    n = arr.shape[axis]
    if isinstance(obj, slice):
        keep = np.ones(n, bool)
        keep[obj] = False
        return take(arr, np.flatnonzero(keep), axis=axis)
    unique = _args.flag(assume_unique_indices, "delete", "assume_unique_indices")
    if isinstance(obj, Tensor) and dtypes.is_bool(obj.dtype):
        try:
            concrete_value(obj)
        except ConcretizationError:
            raise ConcretizationError(
                f"delete: a traced boolean obj {obj.aval} leaves a number of entries that "
                "depends on its values; use fnp.compress(~obj, arr, axis, size=N) for a "
                "static size, as in JAX"
            ) from None
    if isinstance(obj, Tensor) and unique:
        try:
            concrete_value(obj)
        except ConcretizationError:
            if not dtypes.is_integer(obj.dtype):
                raise DTypeError(
                    f"delete: traced obj must be integer indices, got {obj.aval}"
                ) from None
            idx = _e.remainder(ravel(obj), builtins.max(n, 1))
            hit = _e.equal(expand_dims(idx, 0), expand_dims(_on(np.arange(n), arr), 1))
            keep = _e.logical_not(_any(hit, axis=1))
            pos = _nonzero_sized(keep, n - int(idx.shape[0]), 0, "delete")[0]
            return take(arr, pos, axis=axis)
    mask = _host_static("delete", obj, "obj (without assume_unique_indices=True)")
    if mask.dtype.kind == "b" and mask.ndim == 1:
        if mask.shape[0] != n:
            raise ShapeError(
                f"delete: a boolean obj needs length {n} (axis {axis}), got {mask.shape[0]}"
            )
        return take(arr, np.flatnonzero(~mask), axis=axis)
    if mask.size and mask.dtype.kind not in "iu":
        raise DTypeError(
            f"delete: obj must be integer indices, a slice or a mask, got dtype {mask.dtype}"
        )
    idx = mask.astype(np.int64).reshape(-1)
    if np.any((idx < -n) | (idx >= n)):
        raise IndexError(
            f"delete: index {idx.tolist()} is out of bounds for axis {axis} with size {n}"
        )
    keep = np.ones(n, bool)
    keep[idx] = False
    return take(arr, np.flatnonzero(keep), axis=axis)


def _nested_depth(arrays: Any, name: str) -> int:
    if isinstance(arrays, tuple):
        raise TypeError(f"{name}: nested sequences must be lists, not tuples (as numpy)")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError(f"{name}: lists cannot be empty")
    depths = {_nested_depth(a, name) for a in arrays}
    if len(depths) > 1:
        raise ValueError(f"{name}: list depths are mismatched ({sorted(depths)})")
    return depths.pop() + 1


@_args.names_errors("block")
def block(arrays: Any) -> Any:
    """Assemble a Tensor from nested lists of blocks (numpy's ``block``).

    The innermost lists are joined along the last axis, the next ones along the axis
    before, and so on; blocks of fewer dimensions get leading ones. Differentiable in
    every block.

    Args:
        arrays: nested lists (of equal depth) of Tensors or scalars.

    Returns:
        Tensor of ``max(depth, block ndims)`` dimensions.

    Raises:
        TypeError: a level is a tuple.
        ValueError: empty lists or mismatched depths.
        ShapeError: blocks do not line up.

    Example:
        >>> a = fnp.eye(2)
        >>> fnp.block([[a, fnp.zeros((2, 1))], [fnp.ones((1, 2)), fnp.array([[5.0]])]])
        Tensor([[1., 0., 0.],
                [0., 1., 0.],
                [1., 1., 5.]], dtype=float64)
    """
    depth = _nested_depth(arrays, "block")

    def leaves(a: Any) -> list:
        return [x for item in a for x in leaves(item)] if isinstance(a, list) else [a]

    ndim = builtins.max([depth] + [_tensor(x, "block", "arrays").ndim for x in leaves(arrays)])

    def assemble(a: Any, level: int) -> Tensor:
        if level == depth:
            x = _tensor(a, "block", "arrays")
            return reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape))
        parts = [assemble(item, level + 1) for item in a]
        return concatenate(parts, axis=ndim - depth + level)

    return assemble(arrays, 0)


@_args.names_errors("column_stack")
def column_stack(tup: Any) -> Any:
    """1-D Tensors as columns, 2-D ones as they are, joined along axis 1 (numpy's ``column_stack``).

    Example:
        >>> fnp.column_stack([fnp.array([1, 2]), fnp.array([3, 4])])
        Tensor([[1, 3],
                [2, 4]], dtype=int64)
    """
    parts = [_tensor(x, "column_stack", "tup") for x in _seq(tup, "column_stack", "tup")]
    parts = [reshape(x, (-1, 1)) if x.ndim < 2 else x for x in parts]
    return concatenate(parts, axis=1)


@_args.names_errors("dstack")
def dstack(tup: Any) -> Any:
    """Tensors joined along the third axis, after ``atleast_3d`` (numpy's ``dstack``).

    Example:
        >>> fnp.dstack([fnp.array([1, 2]), fnp.array([3, 4])]).shape
        (1, 2, 2)
    """
    parts = [atleast_3d(_tensor(x, "dstack", "tup")) for x in _seq(tup, "dstack", "tup")]
    return concatenate(parts, axis=2)


def _split_at(name: str, ary: Any, indices_or_sections: Any, axis: int, min_ndim: int) -> list:
    ary = _tensor(ary, name, "ary")
    if ary.ndim < min_ndim:
        raise ShapeError(
            f"{name}: needs a Tensor of at least {min_ndim} dimensions, got shape "
            f"{tuple(ary.shape)}"
        )
    return split(ary, indices_or_sections, axis=axis)


@_args.names_errors("hsplit")
def hsplit(ary: Any, indices_or_sections: Any) -> list:
    """``split`` along axis 1 (axis 0 for 1-D Tensors), numpy's ``hsplit``.

    Example:
        >>> fnp.hsplit(fnp.arange(4.0).reshape(1, 4), 2)
        [Tensor([[0., 1.]], dtype=float64), Tensor([[2., 3.]], dtype=float64)]
    """
    ary = _tensor(ary, "hsplit", "ary")
    axis = 0 if ary.ndim == 1 else 1
    return _split_at("hsplit", ary, indices_or_sections, axis, 1)


@_args.names_errors("vsplit")
def vsplit(ary: Any, indices_or_sections: Any) -> list:
    """``split`` along axis 0 of a Tensor of at least 2 dimensions (numpy's ``vsplit``).

    Example:
        >>> [p.shape for p in fnp.vsplit(fnp.zeros((4, 2)), [1])]
        [(1, 2), (3, 2)]
    """
    return _split_at("vsplit", ary, indices_or_sections, 0, 2)


@_args.names_errors("dsplit")
def dsplit(ary: Any, indices_or_sections: Any) -> list:
    """``split`` along axis 2 of a Tensor of at least 3 dimensions (numpy's ``dsplit``).

    Example:
        >>> [p.shape for p in fnp.dsplit(fnp.zeros((1, 2, 4)), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    return _split_at("dsplit", ary, indices_or_sections, 2, 3)


# ------------------------------------------------------------------------ rearranging


@_args.names_errors("rot90")
def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (numpy's ``rot90``).

    Args:
        m: Tensor of at least 2 dimensions.
        k: number of quarter turns, counterclockwise from the first axis to the second.
        axes: two distinct axes.

    Raises:
        ShapeError: ``axes`` are not two distinct axes of ``m``.

    Example:
        >>> fnp.rot90(fnp.array([[1, 2], [3, 4]]))
        Tensor([[2, 4],
                [1, 3]], dtype=int64)
    """
    m = _tensor(m, "rot90", "m")
    axes = tuple(_seq(axes, "rot90", "axes", "two ints"))
    if len(axes) != 2:
        raise ShapeError(f"rot90: axes must be two axes, got {axes}")
    a0, a1 = _args.axes(axes, "rot90", m.ndim, "axes")
    k = _args.index(k, "rot90", "k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    if k == 1:
        return swapaxes(flip(m, a1), a0, a1)
    return flip(swapaxes(m, a0, a1), a1)


@_args.names_errors("rollaxis")
def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Move ``axis`` to sit before position ``start`` (numpy's ``rollaxis``; prefer ``moveaxis``).

    Example:
        >>> fnp.rollaxis(fnp.zeros((3, 4, 5)), 2).shape
        (5, 3, 4)
    """
    a = _tensor(a, "rollaxis", "a")
    n = a.ndim
    axis = _args.axis(axis, "rollaxis", n)
    start = _args.index(start, "rollaxis", "start")
    if start < 0:
        start += n
    if not 0 <= start <= n:
        raise ShapeError(
            f"rollaxis: start {start} is out of range for {n} dimensions ([-{n}, {n}])"
        )
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


@_args.names_errors("resize")
def resize(a: Any, new_shape: Any) -> Any:
    """``a`` repeated cyclically (or cut) to ``new_shape`` (numpy's ``resize``).

    Differentiable in ``a`` (repeated elements accumulate their cotangents).

    Example:
        >>> fnp.resize(fnp.array([1.0, 2.0, 3.0]), (2, 2))
        Tensor([[1., 2.],
                [3., 1.]], dtype=float64)
    """
    a = _tensor(a, "resize", "a")
    shape = _args.shape(_static(new_shape, "resize", "new_shape"), "resize", "new_shape")
    total = math.prod(shape)
    flat = ravel(a)
    if a.size == 0 or total == 0:
        return zeros(shape, dtype=a.dtype, device=a.device)
    return reshape(take(flat, np.arange(total) % a.size), shape)


@_args.names_errors("trim_zeros")
def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros (``trim_zeros``).

    The result's size depends on the values, so ``filt`` must be concrete (eager code,
    ``grad``). Differentiable in the kept values.

    Args:
        filt: Tensor; with ``axis=None`` (all axes) a N-d Tensor is trimmed to the
            bounding box of its nonzero entries, as numpy 2.
        trim: ``"f"``, ``"b"`` or ``"fb"``.
        axis: None or the axes to trim.

    Raises:
        ConcretizationError: ``filt`` is traced abstractly.
        ValueError: ``trim`` holds other letters.

    Example:
        >>> fnp.trim_zeros(fnp.array([0.0, 1.0, 0.0, 2.0, 0.0]))
        Tensor([1., 0., 2.], dtype=float64)
    """
    if not isinstance(filt, (Tensor, np.ndarray)):
        raise DTypeError(
            f"trim_zeros: filt must be a Tensor or array (as JAX's; numpy would return a "
            f"slice of a list or tuple as one), got {_args.describe(filt)}; pass fnp.asarray(filt)"
        )
    filt = _tensor(filt, "trim_zeros", "filt")
    if not isinstance(trim, str):
        raise DTypeError(f"trim_zeros: trim must be 'f', 'b' or 'fb', got {_args.describe(trim)}")
    trim = trim.lower()
    if not trim or set(trim) - {"f", "b"}:
        raise ValueError(f"trim_zeros: trim must be 'f', 'b' or 'fb', got {trim!r}")
    nz = _host_static("trim_zeros", filt, "filt") != 0
    axes = range(filt.ndim) if axis is None else _args.axes(axis, "trim_zeros", filt.ndim)
    index = [slice(None)] * filt.ndim
    for d in axes:
        other = tuple(i for i in range(filt.ndim) if i != d)
        hit = np.flatnonzero(nz.any(axis=other)) if other else np.flatnonzero(nz)
        if hit.size == 0:
            index[d] = slice(0, 0)
            continue
        lo = int(hit[0]) if "f" in trim else 0
        hi = int(hit[-1]) + 1 if "b" in trim else filt.shape[d]
        index[d] = slice(lo, hi)
    return filt[tuple(index)]


# ------------------------------------------------------------------------ triangles, grids


@_args.names_errors("tri")
def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, like: Any = None) -> Tensor:
    """The ``(N, M)`` matrix of ones at and below diagonal ``k`` (numpy's ``tri``; float64).

    Example:
        >>> fnp.tri(3, 2, k=-1)
        Tensor([[0., 0.],
                [1., 0.],
                [1., 1.]], dtype=float64)
    """
    _numpy_layout("tri", None, like)
    return asarray(np.tri(*_matrix_args("tri", N, M, k, dtype)))


def _tri_indices(name: str, n: Any, k: Any, m: Any, upper: bool) -> tuple:
    n = _args.size(_static(n, name, "n"), name, "n")
    m = _args.size(_static(m, name, "m"), name, "m", none_ok=True)
    k = _args.index(_static(k, name, "k"), name, "k")
    rows, cols = (np.triu_indices if upper else np.tril_indices)(n, k, m)
    return _ints(rows), _ints(cols)


@_args.names_errors("tril_indices")
def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the lower triangle of an ``(n, m)`` matrix (``tril_indices``).

    Returns:
        Two int64 Tensors (no derivative).

    Example:
        >>> fnp.tril_indices(2)
        (Tensor([0, 1, 1], dtype=int64), Tensor([0, 0, 1], dtype=int64))
    """
    return _tri_indices("tril_indices", n, k, m, upper=False)


@_args.names_errors("triu_indices")
def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the upper triangle of an ``(n, m)`` matrix (``triu_indices``).

    Example:
        >>> fnp.triu_indices(2)
        (Tensor([0, 0, 1], dtype=int64), Tensor([0, 1, 1], dtype=int64))
    """
    return _tri_indices("triu_indices", n, k, m, upper=True)


def _matrix_shape(name: str, arr: Any) -> tuple:
    shape = tuple(_tensor(arr, name, "arr").shape)
    if len(shape) != 2:
        raise ShapeError(f"{name}: arr must be 2-D, got shape {shape}")
    return shape


@_args.names_errors("tril_indices_from")
def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    """:func:`tril_indices` for the shape of the 2-D ``arr``.

    Example:
        >>> fnp.tril_indices_from(fnp.zeros((2, 3)), k=1)[1]
        Tensor([0, 1, 0, 1, 2], dtype=int64)
    """
    n, m = _matrix_shape("tril_indices_from", arr)
    return _tri_indices("tril_indices_from", n, k, m, upper=False)


@_args.names_errors("triu_indices_from")
def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    """:func:`triu_indices` for the shape of the 2-D ``arr``.

    Example:
        >>> fnp.triu_indices_from(fnp.zeros((3, 2)))[0]
        Tensor([0, 0, 1], dtype=int64)
    """
    n, m = _matrix_shape("triu_indices_from", arr)
    return _tri_indices("triu_indices_from", n, k, m, upper=True)


@_args.names_errors("diag_indices")
def diag_indices(n: int, ndim: int = 2) -> tuple:
    """Indices of the main diagonal of an ``(n,) * ndim`` array: ``ndim`` copies of ``arange(n)``.

    Example:
        >>> fnp.diag_indices(2)
        (Tensor([0, 1], dtype=int64), Tensor([0, 1], dtype=int64))
    """
    n = _args.size(_static(n, "diag_indices", "n"), "diag_indices", "n")
    ndim = _args.size(ndim, "diag_indices", "ndim")
    return tuple(_ints(np.arange(n)) for _ in range(ndim))


@_args.names_errors("diag_indices_from")
def diag_indices_from(arr: Any) -> tuple:
    """:func:`diag_indices` for ``arr``, which needs at least 2 dimensions, all of one length.

    Example:
        >>> fnp.diag_indices_from(fnp.zeros((2, 2)))[0]
        Tensor([0, 1], dtype=int64)
    """
    shape = tuple(_tensor(arr, "diag_indices_from", "arr").shape)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ShapeError(
            f"diag_indices_from: arr needs at least 2 dimensions of one length, got shape {shape}"
        )
    return diag_indices(shape[0], len(shape))


@_args.names_errors("mask_indices")
def mask_indices(n: int, mask_func: Any, k: int = 0, *, size: int | None = None) -> tuple:
    """Indices where ``mask_func(ones((n, n)), k)`` is nonzero (numpy's ``mask_indices``).

    Example:
        >>> fnp.mask_indices(2, fnp.triu)
        (Tensor([0, 0, 1], dtype=int64), Tensor([0, 1, 1], dtype=int64))
    """
    from fgrad.numpy._sorting import nonzero

    _args.function(mask_func, "mask_indices", "mask_func")
    n = _args.size(_static(n, "mask_indices", "n"), "mask_indices", "n")
    return nonzero(mask_func(ones((n, n), dtype=np.int64), k), size=size)


@_args.names_errors("diagflat")
def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D Tensor with the flattened ``v`` on diagonal ``k`` (numpy's ``diagflat``).

    Example:
        >>> fnp.diagflat(fnp.array([[1, 2]]))
        Tensor([[1, 0],
                [0, 2]], dtype=int64)
    """
    return diag(ravel(_tensor(v, "diagflat", "v")), k)


@_args.names_errors("fill_diagonal")
def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """``a`` with its main diagonal set to ``val``, as a new Tensor (numpy's ``fill_diagonal``).

    Needs ``inplace=False``, as JAX: Tensors are immutable. ``val`` is flattened and
    repeated cyclically along the diagonal, as numpy. Differentiable in ``a`` (off the
    diagonal) and ``val``.

    Args:
        a: Tensor of at least 2 dimensions, all of one length unless 2-D.
        val: scalar or Tensor, cast to ``a.dtype``.
        wrap: for tall 2-D matrices, restart the diagonal every ``m + 1`` rows.
        inplace: must be False.

    Raises:
        ValueError: ``inplace`` is not False.
        ShapeError: ``a`` has fewer than 2 dimensions or unequal ones (N-d).

    Example:
        >>> fnp.fill_diagonal(fnp.zeros((2, 3)), 5.0, inplace=False)
        Tensor([[5., 0., 0.],
                [0., 5., 0.]], dtype=float64)
    """
    _no_inplace("fill_diagonal", inplace)
    a = _tensor(a, "fill_diagonal", "a")
    shape = tuple(a.shape)
    if a.ndim < 2:
        raise ShapeError(f"fill_diagonal: a needs at least 2 dimensions, got shape {shape}")
    if a.ndim == 2:
        step = shape[1] + 1
        wrap = _args.flag(wrap, "fill_diagonal", "wrap")
        end = a.size if wrap else builtins.min(a.size, shape[1] * shape[1])
    else:
        if len(set(shape)) != 1:
            raise ShapeError(
                f"fill_diagonal: an N-d a needs all dimensions equal, got shape {shape}"
            )
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = a.size
    pos = np.arange(0, end, step)
    val = ravel(_cast(val, a.dtype, "fill_diagonal", "val"))
    if pos.size == 0:
        return a
    if val.size == 0:
        return a
    vals = take(val, np.arange(pos.size) % val.size)
    return reshape(ravel(a).at[pos].set(vals), shape)


@_args.names_errors("indices")
def indices(dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    """The index grid of an array of shape ``dimensions`` (numpy's ``indices``).

    Returns:
        ``(len(dimensions), *dimensions)`` Tensor, or with ``sparse`` a tuple of Tensors
        shaped to broadcast; int64 by default.

    Example:
        >>> fnp.indices((2, 2))[1]
        Tensor([[0, 1],
                [0, 1]], dtype=int64)
    """
    if not isinstance(dimensions, (list, tuple)):
        raise DTypeError(
            f"indices: dimensions must be a sequence of ints, got {_args.describe(dimensions)}"
        )
    dims = _args.shape(_static(dimensions, "indices", "dimensions"), "indices", "dimensions")
    dtype = _args.dtype(dtype, "indices")
    sparse = _args.flag(sparse, "indices", "sparse")
    out = np.indices(dims, dtype=dtype, sparse=sparse)
    return tuple(asarray(o) for o in out) if sparse else asarray(out)


@_args.names_errors("ix_")
def ix_(*args: Any) -> tuple:
    """Open-mesh index arrays from 1-D sequences (numpy's ``ix_``): ``x[ix_(rows, cols)]``.

    Integer sequences may be traced; boolean ones become their ``nonzero`` indices and so
    must be concrete.

    Raises:
        ShapeError: an argument is not 1-D.
        ConcretizationError: a boolean argument is traced abstractly.

    Example:
        >>> x = fnp.arange(9).reshape(3, 3)
        >>> x[fnp.ix_([0, 2], [1])]
        Tensor([[1],
                [7]], dtype=int64)
    """
    out = []
    n = len(args)
    for d, seq in enumerate(args):
        t = _tensor(seq, "ix_", "args")
        if t.ndim != 1:
            raise ShapeError(
                f"ix_: every argument must be 1-D, argument {d} has shape {tuple(t.shape)}"
            )
        if dtypes.is_bool(t.dtype):
            t = _ints(np.flatnonzero(_host("ix_", t)))
        elif t.size == 0:
            t = astype(t, _INT64)
        out.append(reshape(t, (1,) * d + (-1,) + (1,) * (n - d - 1)))
    return tuple(out)


@_args.names_errors("fromfunction")
def fromfunction(
    function: Any, shape: Any, *, dtype: Any = float, like: Any = None, **kwargs: Any,
) -> Any:
    """``function(*indices(shape))``: a Tensor made from its coordinates (``fromfunction``).

    ``function`` receives one Tensor of coordinates per axis (``dtype``, float64 by
    default) and is called once, so it must work on whole arrays.

    Example:
        >>> fnp.fromfunction(lambda i, j: i + 10 * j, (2, 2), dtype=int)
        Tensor([[ 0, 10],
                [ 1, 11]], dtype=int64)
    """
    _args.function(function, "fromfunction", "function")
    _numpy_layout("fromfunction", None, like)
    grid = indices(shape, dtype=dtype)
    return function(*[grid[d] for d in range(grid.shape[0])], **kwargs)


def _is_real_scalar(value: Any) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and not (isinstance(value, int) and builtins.abs(value) >= 2**63)
    )


def _end(name: str, value: Any, arg: str) -> Any:
    """A real end of logspace/geomspace: a Python number kept as it is, else a real Tensor."""
    return value if _is_real_scalar(value) else _real(value, name, arg)


def _spaced(name: str, out: Tensor, dtype: Any, axis: Any) -> Tensor:
    """The common end of logspace and geomspace: ``out`` (values along axis 0) in
    ``dtype`` (floored first for integers, as numpy), with that axis moved to ``axis``."""
    if dtype is not None:
        out = _e.floor(out) if dtypes.is_integer(dtype) else out
        out = astype(out, dtype)
    if out.ndim > 1 and axis != 0:
        out = moveaxis(out, 0, _args.axis(axis, name, out.ndim))
    return out


@_args.names_errors("logspace")
def logspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
    dtype: Any = None, axis: int = 0,
):
    """``base ** linspace(start, stop, num)`` (numpy's ``logspace``).

    Differentiable in ``start``, ``stop`` and ``base`` (Tensor arguments may be traced).

    Args:
        start, stop: real numbers or Tensors: the exponents of the ends.
        num: number of values, a static int ``>= 0``.
        endpoint: include ``base ** stop``.
        base: real number or Tensor.
        dtype: result dtype (default float64, or the ends' float dtype).
        axis: where the new axis goes when the ends are arrays.

    Raises:
        DTypeError: an argument is not real numbers, ``num``/``axis`` not an int.
        ValueError: ``num`` is negative.

    Example:
        >>> fnp.logspace(0.0, 2.0, 3)
        Tensor([  1.,  10., 100.], dtype=float64)
    """
    dtype = _args.dtype(dtype, "logspace")
    axis = _args.index(axis, "logspace", "axis")
    start, stop = _end("logspace", start, "start"), _end("logspace", stop, "stop")
    base = _end("logspace", base, "base")
    if isinstance(base, Tensor) and base.ndim:  # numpy broadcasts the ends with the base
        shape = np.broadcast_shapes(*(tuple(np.shape(v)) for v in (start, stop, base)))
        start, stop = (broadcast_to(_tensor(v), shape) for v in (start, stop))
        base = expand_dims(broadcast_to(base, shape), 0)
    y = linspace(start, stop, num, endpoint=_args.flag(endpoint, "logspace", "endpoint"))
    return _spaced("logspace", _e.power(base, y), dtype, axis)


@_args.names_errors("geomspace")
def geomspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0,
):
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (numpy's ``geomspace``).

    The ends are exact, as numpy's; negative ends of one sign are mirrored. Differentiable
    in Tensor ends (also traced ones).

    Args:
        start, stop: nonzero real numbers or Tensors.
        num: number of values, a static int ``>= 0``.
        endpoint: include ``stop``.
        dtype: result dtype (default float64, or the ends' float dtype).
        axis: where the new axis goes when the ends are arrays.

    Raises:
        ValueError: a concrete end is zero, or ``num`` is negative.
        DTypeError: an end is not real (complex ends are not supported), or ``num``/
            ``axis`` is not an int.

    Example:
        >>> fnp.geomspace(1.0, 1000.0, 4)
        Tensor([   1.,   10.,  100., 1000.], dtype=float64)
    """
    dtype = _args.dtype(dtype, "geomspace")
    axis = _args.index(axis, "geomspace", "axis")
    endpoint = _args.flag(endpoint, "geomspace", "endpoint")
    start, stop = _end("geomspace", start, "start"), _end("geomspace", stop, "stop")
    for end in (start, stop):
        try:
            value = np.asarray(_wrap(concrete_value(end))) if isinstance(end, Tensor) else end
            zero = np.any(value == 0)
        except ConcretizationError:
            zero = False
        if zero:
            raise ValueError("geomspace: geometric sequence cannot include zero")
    if not isinstance(start, Tensor) and not isinstance(stop, Tensor):
        num = _args.size(_static(num, "geomspace", "num"), "geomspace", "num")
        return asarray(np.geomspace(start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis))
    dt = np.dtype(dtypes.result_type(start, stop, 1.0))
    start_t, stop_t = astype(_tensor(start), dt), astype(_tensor(stop), dt)
    sign = _e.sign(start_t)
    lo, hi = _e.log10(_e.multiply(start_t, sign)), _e.log10(_e.multiply(stop_t, sign))
    y = _e.multiply(_e.power(10.0, linspace(lo, hi, num, endpoint=endpoint)), sign)
    n = y.shape[0]
    if n > 0:
        y = y.at[0].set(start_t)
        if endpoint and n > 1:
            y = y.at[-1].set(stop_t)
    return _spaced("geomspace", y, dtype, axis)


# ------------------------------------------------------------------------ flat indices


def _int_tensor(x: Any, name: str, arg: str) -> Tensor:
    t = _tensor(x, name, arg)
    if not dtypes.is_integer(t.dtype):
        raise DTypeError(f"{name}: {arg} must be integers, got dtype {t.dtype}")
    return t


def _in_bounds(name: str, idx: Tensor, n: int, what: str, traced_ok: bool = False) -> None:
    """ValueError when a concrete index is out of ``[0, n)``. Traced indices cannot be
    checked: a ConcretizationError naming ``mode="clip"``/``"wrap"`` (as JAX), unless
    ``traced_ok``."""
    try:
        data = np.asarray(_wrap(concrete_value(idx)))
    except ConcretizationError:
        if traced_ok:
            return
        raise ConcretizationError(
            f"{name}: mode='raise' checks the indices, which are traced here ({idx.aval}) "
            "and have no values yet; pass mode='clip' or mode='wrap' under jit or vmap"
        ) from None
    if data.size and (data.min() < 0 or data.max() >= n):
        raise ValueError(f"{name}: {what} out of bounds (must be in [0, {n})), got {data.tolist()}")


@_args.names_errors("ravel_multi_index")
def ravel_multi_index(multi_index: Any, dims: Any, mode: str = "raise", order: str = "C") -> Any:
    """Flat indices of the coordinate arrays ``multi_index`` into an array of shape ``dims``.

    ``mode="raise"`` checks the indices, so they must be concrete (as JAX); ``"wrap"`` and
    ``"clip"`` are traceable.

    Args:
        multi_index: one integer Tensor per dimension, broadcasting together.
        dims: the array's shape.
        mode: ``"raise"``, ``"wrap"`` or ``"clip"`` (one for all, or a tuple per dim).
        order: ``"C"`` (row-major) or ``"F"``.

    Raises:
        ValueError: a concrete index is out of bounds with ``mode="raise"``, or a bad
            ``mode``/``order``.
        ConcretizationError: ``mode="raise"`` with traced indices.
        ShapeError: ``multi_index`` has another length than ``dims``.

    Example:
        >>> fnp.ravel_multi_index((fnp.array([0, 1]), fnp.array([2, 0])), (2, 3))
        Tensor([2, 3], dtype=int64)
    """
    dims = _args.shape(dims, "ravel_multi_index", "dims")
    _args.choice(order, "ravel_multi_index", "order", ("C", "F"))
    seq = _seq(multi_index, "ravel_multi_index", "multi_index", "integer arrays")
    coords = [_int_tensor(c, "ravel_multi_index", "multi_index") for c in seq]
    if len(coords) != len(dims):
        raise ShapeError(
            f"ravel_multi_index: multi_index has {len(coords)} arrays for {len(dims)} dims"
        )
    if isinstance(mode, str):
        modes = (mode,) * len(dims)
    else:
        modes = tuple(_seq(mode, "ravel_multi_index", "mode", "strings"))
    if len(modes) != len(dims):
        raise ValueError(
            f"ravel_multi_index: mode needs one entry per dimension ({len(dims)}), got "
            f"{len(modes)}"
        )
    strides = np.ones(len(dims), np.int64)
    seq = range(len(dims) - 2, -1, -1) if order == "C" else range(1, len(dims))
    for d in seq:
        prev = d + 1 if order == "C" else d - 1
        strides[d] = strides[prev] * dims[prev]
    total = None
    for c, n, m, s in zip(coords, dims, modes, strides):
        _args.choice(m, "ravel_multi_index", "mode", ("raise", "wrap", "clip"))
        if m == "raise":
            _in_bounds("ravel_multi_index", c, n, "invalid entry in coordinates array")
        c = _e.remainder(c, n) if m == "wrap" else clip(c, 0, n - 1)
        term = _e.multiply(astype(c, _INT64), int(s))
        total = term if total is None else _e.add(total, term)
    return total if total is not None else _ints(0)


@_args.names_errors("unravel_index")
def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple:
    """The coordinates of flat ``indices`` in an array of ``shape`` (numpy's ``unravel_index``).

    Traceable. Concrete indices out of ``[0, prod(shape))`` raise as numpy; traced ones
    count from the end when negative and are clipped into range, as JAX.

    Example:
        >>> fnp.unravel_index(fnp.array([5, 1]), (2, 3))
        (Tensor([1, 0], dtype=int64), Tensor([2, 1], dtype=int64))
    """
    shape = _args.shape(shape, "unravel_index", "shape")
    _args.choice(order, "unravel_index", "order", ("C", "F"))
    idx = astype(_int_tensor(indices, "unravel_index", "indices"), _INT64)
    total = math.prod(shape)
    _in_bounds("unravel_index", idx, total, "index", traced_ok=True)
    # traced: negative indices count from the end, then clipped into range, as JAX
    idx = clip(where(_e.less(idx, 0), _e.add(idx, total), idx), 0, builtins.max(total - 1, 0))
    out = [None] * len(shape)
    seq = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for d in seq:
        n = builtins.max(shape[d], 1)
        out[d] = _e.remainder(idx, n)
        idx = _e.floor_divide(idx, n)
    return tuple(out)


# ------------------------------------------------------------------------ selection


@_args.names_errors("select")
def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """The entries of the first ``choicelist[i]`` whose ``condlist[i]`` holds (numpy's ``select``).

    Differentiable in the choices and ``default``.

    Raises:
        ValueError: the lists differ in length or are empty.
        DTypeError: a condition is not boolean.

    Example:
        >>> x = fnp.arange(5.0)
        >>> fnp.select([x < 2, x > 3], [x, x ** 2], default=-1.0)
        Tensor([ 0.,  1., -1., -1., 16.], dtype=float64)
    """
    condlist = _seq(condlist, "select", "condlist", "boolean arrays")
    choicelist = _seq(choicelist, "select", "choicelist")
    default_t = _tensor(default, "select", "default")
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select: select with an empty condition list is not possible")
    conds = [_tensor(c, "select", "condlist") for c in condlist]
    for c in conds:
        if not dtypes.is_bool(c.dtype):
            raise DTypeError(f"select: conditions must be boolean, got dtype {c.dtype}")
    choices = [_tensor(c, "select", "choicelist") for c in choicelist]
    weak = isinstance(default, (int, float, complex)) and not isinstance(default, Tensor)
    dt = dtypes.result_type(*choices, default if weak else default_t)  # numbers: weakly
    out = astype(default_t if isinstance(default, Tensor) else _on(default_t._data, choices[0]), dt)
    for c, v in zip(reversed(conds), reversed(choices)):
        out = where(c, astype(v, dt), out)
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in conds + choices), tuple(out.shape))
    return broadcast_to(out, tuple(shape)) if tuple(out.shape) != tuple(shape) else out


@_args.names_errors("piecewise")
def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """A piecewise function of ``x``: ``funclist[i]`` where ``condlist[i]`` holds (``piecewise``).

    As numpy, a later condition wins where several hold, an extra last function is the
    "otherwise" case, places no condition covers are 0, and a scalar in ``funclist`` is
    a constant. Each function is evaluated on all of ``x`` (as JAX's) and the results are
    selected, so it must work on whole arrays; the result keeps ``x``'s dtype.
    Differentiable wherever the chosen piece is.

    Raises:
        ValueError: ``funclist`` has neither ``len(condlist)`` nor one more entries.

    Example:
        >>> x = fnp.array([-2.0, 0.5, 3.0])
        >>> fnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])
        Tensor([2.  , 0.25, 9.  ], dtype=float64)
    """
    x = _tensor(x, "piecewise", "x")
    if isinstance(condlist, (Tensor, np.ndarray)) and dtypes.is_bool(condlist.dtype) and (
        condlist.ndim == 0 or tuple(condlist.shape) == tuple(x.shape)
    ):
        condlist = [condlist]
    seq = _seq(condlist, "piecewise", "condlist", "boolean arrays")
    conds = [_tensor(c, "piecewise", "condlist") for c in seq]
    for c in conds:
        if not dtypes.is_bool(c.dtype):
            raise DTypeError(f"piecewise: conditions must be boolean, got dtype {c.dtype}")
    if callable(funclist):
        funclist = [funclist]
    funcs = _seq(funclist, "piecewise", "funclist", "functions or scalars")
    if len(funcs) not in (len(conds), len(conds) + 1):
        raise ValueError(
            f"piecewise: with {len(conds)} condition(s), funclist needs {len(conds)} or "
            f"{len(conds) + 1} entries, got {len(funcs)}"
        )

    def piece(f: Any) -> Any:
        if callable(f):
            v = _tensor(f(x, *args, **kw), "piecewise", "funclist")
        else:  # a constant, on x's device
            v = _tensor(f, "piecewise", "funclist")
            v = v if isinstance(f, Tensor) else _on(v._data, x)
        return astype(v, x.dtype)

    out = _e.full_like(x, fill_value=0, dtype=np.dtype(x.dtype))
    if len(funcs) == len(conds) + 1:
        covered = _e.full_like(x, fill_value=False, dtype=np.dtype(bool))
        for c in conds:
            covered = _e.logical_or(covered, c)
        out = where(covered, out, piece(funcs[-1]))
    for c, f in zip(conds, funcs):
        out = where(c, piece(f), out)
    return broadcast_to(out, tuple(x.shape)) if tuple(out.shape) != tuple(x.shape) else out


@_args.names_errors("choose")
def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """``choices[a[i]][i]`` for every position ``i`` (numpy's ``choose``).

    Differentiable in ``choices``. ``mode="raise"`` checks the indices, so they must be
    concrete (as JAX); ``"wrap"`` and ``"clip"`` are traceable.

    Args:
        a: integer Tensor of indices into ``choices``.
        choices: sequence of Tensors (or one Tensor, indexed along axis 0), broadcasting
            with ``a``.
        out: must be None.
        mode: ``"raise"``, ``"wrap"`` or ``"clip"``.

    Raises:
        ValueError: a concrete index is out of range (``"raise"``).
        ConcretizationError: ``mode="raise"`` with traced indices.
        TypeError: ``out`` is given.

    Example:
        >>> choices = [fnp.array([1.0, 2.0, 3.0]), fnp.array([9.0, 8.0, 7.0])]
        >>> fnp.choose(fnp.array([0, 1, 0]), choices)
        Tensor([1., 8., 3.], dtype=float64)
    """
    _no_out("choose", out)
    _args.choice(mode, "choose", "mode", ("raise", "wrap", "clip"))
    a = _int_tensor(a, "choose", "a")
    parts = [_tensor(c, "choose", "choices") for c in _seq(choices, "choose", "choices")]
    if not parts:
        raise ValueError("choose: choices must hold at least one array")
    n = len(parts)
    if mode == "raise":
        _in_bounds("choose", a, n, "invalid entry in choice array")
    a = _e.remainder(a, n) if mode == "wrap" else clip(a, 0, n - 1)
    dt = dtypes.result_type(*parts)
    parts = broadcast_arrays(a, *[astype(p, dt) for p in parts])
    idx, parts = parts[0], parts[1:]
    stacked = stack(list(parts), axis=0)
    return take_along_axis(stacked, expand_dims(idx, 0), axis=0)[0]


def _kept(name: str, mask: Any, values: Tensor, axis: int, size: Any, fill_value: Any) -> Tensor:
    """``values`` where the 1-D ``mask`` holds, along ``axis``; with a static ``size`` the
    first ``size`` of them, padded with ``fill_value`` (traceable)."""
    size = _args.size(size, name, "size", none_ok=True)
    if size is None:
        return take(values, np.flatnonzero(_host(name, mask)), axis=axis)
    mask = _tensor(mask, name, "condition")
    pos = _nonzero_sized(mask, size, 0, name)[0]
    picked = take(values, pos, axis=axis)
    count = _sum(astype(mask, _INT64))
    valid = _e.less(_on(np.arange(size), values), count)
    valid = reshape(valid, (1,) * axis + (size,) + (1,) * (values.ndim - axis - 1))
    if fill_value is None:
        fill_value = 0
    fill = _tensor(fill_value, name, "fill_value")
    if not isinstance(fill_value, Tensor):
        fill = _on(fill._data, values)
    return where(valid, picked, astype(fill, values.dtype))


@_args.names_errors("compress")
def compress(
    condition: Any, a: Any, axis: int | None = None, out: Any = None, *, size: int | None = None,
    fill_value: Any = 0,
) -> Any:
    """The slices of ``a`` along ``axis`` where the 1-D ``condition`` holds (numpy's ``compress``).

    The result's length depends on ``condition``'s values: it must be concrete, or pass a
    static ``size`` (and ``fill_value``), as JAX. Differentiable in ``a``.

    Args:
        condition: 1-D boolean (or numeric: nonzero) Tensor, at most as long as the axis.
        a: Tensor.
        axis: None works on the flattened ``a``.
        size: static length of the result along ``axis``.
        fill_value: padding when fewer than ``size`` slices are kept.
        out: must be None.

    Raises:
        ConcretizationError: ``condition`` is traced and ``size`` is None.
        ShapeError: ``condition`` is not 1-D or is longer than the axis.

    Example:
        >>> fnp.compress([True, False, True], fnp.array([[1, 2, 3], [4, 5, 6]]), axis=1)
        Tensor([[1, 3],
                [4, 6]], dtype=int64)
        >>> sized = fgrad.jit(lambda c, x: fnp.compress(c, x, size=2))
        >>> sized(fnp.array([0, 1, 0]), fnp.arange(3.0))
        Tensor([1., 0.], dtype=float64)
    """
    _no_out("compress", out)
    cond = _tensor(condition, "compress", "condition")
    a = _tensor(a, "compress", "a")
    a, axis = _axis_or_flat(a, axis, "compress")
    if cond.ndim != 1:
        raise ShapeError(f"compress: condition must be 1-D, got shape {tuple(cond.shape)}")
    n = a.shape[axis]
    if cond.shape[0] > n:
        raise ShapeError(
            f"compress: condition of length {cond.shape[0]} is longer than axis {axis} of size {n}"
        )
    if cond.shape[0] < n:  # numpy drops the slices past the condition's end
        a = take(a, np.arange(cond.shape[0]), axis=axis)
    return _kept("compress", _e.not_equal(cond, 0), a, axis, size, fill_value)


@_args.names_errors("extract")
def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of ``arr`` where ``condition`` is nonzero, flattened (numpy's ``extract``).

    Needs a concrete ``condition`` or a static ``size``, as :func:`compress`.

    Example:
        >>> x = fnp.arange(6.0).reshape(2, 3)
        >>> fnp.extract(x % 2 == 0, x)
        Tensor([0., 2., 4.], dtype=float64)
    """
    cond = ravel(_tensor(condition, "extract", "condition"))
    arr = ravel(_tensor(arr, "extract", "arr"))
    if cond.shape[0] != arr.shape[0]:
        raise ShapeError(f"extract: condition has {cond.shape[0]} elements, arr {arr.shape[0]}")
    return _kept("extract", _e.not_equal(cond, 0), arr, 0, size, fill_value)


@_args.names_errors("place")
def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """``arr`` with the places where ``mask`` holds filled by ``vals`` in turn, as a new Tensor.

    numpy's ``place`` (``vals`` repeat cyclically); needs ``inplace=False``, as JAX.
    Traceable (the mask may be traced) and differentiable in ``arr`` and ``vals``.

    Raises:
        ValueError: ``inplace`` is not False, or ``vals`` is empty.
        ShapeError: ``mask`` has another size than ``arr``.

    Example:
        >>> x = fnp.arange(5.0)
        >>> fnp.place(x, x > 1, fnp.array([10.0, 20.0]), inplace=False)
        Tensor([ 0.,  1., 10., 20., 10.], dtype=float64)
    """
    _no_inplace("place", inplace)
    arr = _tensor(arr, "place", "arr")
    mask = ravel(_tensor(mask, "place", "mask"))
    if mask.shape[0] != arr.size:
        raise ShapeError(f"place: mask has {mask.shape[0]} elements, arr {arr.size}")
    vals = ravel(_cast(vals, arr.dtype, "place", "vals"))
    if vals.size == 0:
        raise ValueError("place: cannot place from an empty vals")
    mask = _e.not_equal(mask, 0)
    pos = _e.remainder(_e.subtract(cumsum(astype(mask, _INT64)), 1), vals.size)
    out = where(mask, take(vals, _e.maximum(pos, 0)), ravel(arr))
    return reshape(out, tuple(arr.shape))


def _flat_index(name: str, ind: Any, n: int, mode: Any) -> Any:
    _args.choice(mode, name, "mode", ("raise", "wrap", "clip"), none_ok=True)
    ind = _int_tensor(ind, name, "ind")
    if mode == "wrap":
        return _e.remainder(ind, builtins.max(n, 1))
    if mode == "clip":
        return clip(ind, 0, n - 1)
    try:
        data = np.asarray(_wrap(concrete_value(ind)))
    except ConcretizationError:
        return ind
    if data.size and (data.min() < -n or data.max() >= n):
        raise IndexError(f"{name}: index {data.tolist()} is out of bounds for size {n}")
    return ind


@_args.names_errors("put")
def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """``a`` with the flat positions ``ind`` set to ``v`` (repeated cyclically), as a new Tensor.

    numpy's ``put``; needs ``inplace=False``, as JAX. Differentiable in ``a`` and ``v``.
    With repeated indices the last write wins (concrete indices), as numpy.

    Args:
        a: Tensor.
        ind: integer indices into the flattened ``a``.
        v: values, cast to ``a.dtype``.
        mode: None or ``"raise"`` (out of range raises), ``"wrap"``, ``"clip"``.
        inplace: must be False.

    Raises:
        ValueError: ``inplace`` is not False.
        IndexError: a concrete index is out of range (``mode`` None or ``"raise"``).

    Example:
        >>> fnp.put(fnp.zeros(4), [0, 2], [5.0, 6.0], inplace=False)
        Tensor([5., 0., 6., 0.], dtype=float64)
    """
    _no_inplace("put", inplace)
    if not isinstance(a, (Tensor, np.ndarray)):
        raise DTypeError(
            "put: a must be a Tensor or array (numpy's put writes into one), got "
            f"{_args.describe(a)}"
        )
    a = _tensor(a, "put", "a")
    ind = ravel(_flat_index("put", ind, a.size, mode))
    v = ravel(_cast(v, a.dtype, "put", "v"))
    if ind.size == 0 or v.size == 0:
        return a
    vals = take(v, np.arange(ind.size) % v.size)
    return reshape(ravel(a).at[ind].set(vals), tuple(a.shape))


@_args.names_errors("put_along_axis")
def put_along_axis(
    arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True, *,
    mode: str | None = None,
) -> Any:
    """``arr`` with ``values`` written at ``indices`` along ``axis``, as a new Tensor.

    numpy's ``put_along_axis`` (the inverse of :func:`take_along_axis`); needs
    ``inplace=False``, as JAX. Differentiable in ``arr`` and ``values``.

    Args:
        arr: Tensor of ``n`` dimensions.
        indices: integer Tensor of ``n`` dimensions (1 when ``axis`` is None).
        values: broadcast to ``indices``' shape.
        axis: the axis, or None for the flattened ``arr``.
        inplace: must be False.
        mode: None or ``"promise_in_bounds"`` (indices must be valid), or ``"clip"``
            (indices clipped into range), as JAX.

    Raises:
        ValueError: ``inplace`` is not False.
        ShapeError: ``indices`` has another number of dimensions.

    Example:
        >>> x = fnp.array([[10.0, 30.0], [60.0, 40.0]])
        >>> fnp.put_along_axis(x, fnp.array([[1], [0]]), 0.0, axis=1, inplace=False)
        Tensor([[10.,  0.],
                [ 0., 40.]], dtype=float64)
    """
    _no_inplace("put_along_axis", inplace)
    arr = _tensor(arr, "put_along_axis", "arr")
    shape = tuple(arr.shape)
    idx = _int_tensor(indices, "put_along_axis", "indices")
    flat = axis is None
    x = ravel(arr) if flat else arr
    axis = 0 if flat else _args.axis(axis, "put_along_axis", arr.ndim)
    if idx.ndim != x.ndim:
        raise ShapeError(
            f"put_along_axis: indices of shape {tuple(idx.shape)} need {x.ndim} dimensions"
        )
    values = _cast(values, arr.dtype, "put_along_axis", "values")
    _args.choice(mode, "put_along_axis", "mode", ("clip", "promise_in_bounds"), none_ok=True)
    if mode == "clip":
        idx = clip(idx, 0, builtins.max(x.shape[axis] - 1, 0))
    full_idx = []
    for d, n in enumerate(x.shape):
        if d == axis:
            full_idx.append(idx)
        else:
            full_idx.append(np.arange(n).reshape((1,) * d + (n,) + (1,) * (x.ndim - d - 1)))
    try:
        target = np.broadcast_shapes(tuple(values.shape), *(tuple(np.shape(i)) for i in full_idx))
    except ValueError:
        raise ShapeError(
            f"put_along_axis: indices {tuple(idx.shape)} and values {tuple(values.shape)} do "
            f"not broadcast against arr {tuple(x.shape)} off axis {axis}"
        ) from None
    values = broadcast_to(values, tuple(target)) if tuple(values.shape) != tuple(target) else values
    out = x.at[tuple(full_idx)].set(values)
    return reshape(out, shape) if flat else out


# ------------------------------------------------------------------------ sorting


def _partition_length(name: str, a: Tensor, axis: Any) -> int:
    """The length of the axis ``kth`` indexes: the flattened size when ``axis`` is None."""
    if axis is None:
        return a.size
    return a.shape[_args.axis(axis, name, a.ndim)] if a.ndim else 0


def _kth(name: str, kth: Any, n: int) -> None:
    ks = np.atleast_1d(np.asarray(_static(kth, name, "kth"), dtype=object)).reshape(-1)
    if ks.size == 0:
        raise ValueError(f"{name}: kth must be an int or a non-empty sequence of ints")
    for k in ks:
        k = _args.index(k, name, "kth")
        if not -n <= k < n:
            raise ValueError(f"{name}: kth(={k}) out of bounds ({n})")


@_args.names_errors("partition")
def partition(
    a: Any, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None,
) -> Any:
    """``a`` rearranged so that the ``kth`` element is where sorting puts it (``partition``).

    fgrad returns the fully sorted ``a``, which satisfies numpy's contract (smaller
    elements before, larger after; their order within each side is unspecified in numpy).
    Differentiable as :func:`sort`.

    Raises:
        ValueError: ``kth`` is out of range, or an ``order``.

    Example:
        >>> fnp.partition(fnp.array([3.0, 1.0, 2.0, 0.0]), 1)[1]
        Tensor(1., dtype=float64)
    """
    _args.choice(kind, "partition", "kind", ("introselect",))
    a = _real(a, "partition", "a")
    n = _partition_length("partition", a, axis)
    _kth("partition", kth, n)
    return sort(a, axis=axis, order=order)


@_args.names_errors("argpartition")
def argpartition(
    a: Any, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None,
) -> Any:
    """Indices that partition ``a`` at ``kth`` (numpy's ``argpartition``): here a stable argsort.

    Example:
        >>> fnp.argpartition(fnp.array([3.0, 1.0, 2.0]), 0)
        Tensor([1, 2, 0], dtype=int64)
    """
    _args.choice(kind, "argpartition", "kind", ("introselect",))
    a = _real(a, "argpartition", "a")
    n = _partition_length("argpartition", a, axis)
    _kth("argpartition", kth, n)
    return argsort(a, axis=axis, order=order)


@_args.names_errors("lexsort")
def lexsort(keys: Any, axis: int = -1) -> Any:
    """Indices that sort by several keys, the last key first (numpy's ``lexsort``).

    One stable argsort per key, from the first (least significant) key to the last, as a
    least-significant-digit radix sort (Knuth, TAOCP vol. 3, 5.2.5): stability keeps the
    order of the earlier keys among equal later ones.

    Args:
        keys: sequence of Tensors of one shape (or a 2-D+ Tensor, one key per row).
        axis: the axis to sort along.

    Returns:
        int64 Tensor of the keys' shape (no derivative).

    Raises:
        ShapeError: the keys differ in shape, or there are none.

    Example:
        >>> fnp.lexsort([fnp.array([1, 0, 2]), fnp.array([0, 0, 1])])
        Tensor([1, 0, 2], dtype=int64)
    """
    keys = [_real(k, "lexsort", "keys") for k in _seq(keys, "lexsort", "keys")]
    if not keys:
        raise ShapeError("lexsort: needs at least one key")
    shapes = {tuple(k.shape) for k in keys}
    if len(shapes) != 1:
        raise ShapeError(f"lexsort: all keys need one shape, got {sorted(shapes)}")
    if keys[0].ndim == 0:
        return _ints(0)
    axis = _args.axis(axis, "lexsort", keys[0].ndim)
    order = argsort(keys[0], axis=axis, stable=True)
    for k in keys[1:]:
        step = argsort(take_along_axis(k, order, axis=axis), axis=axis, stable=True)
        order = take_along_axis(order, step, axis=axis)
    return order


@_args.names_errors("sort_complex")
def sort_complex(a: Any) -> Any:
    """``a`` sorted along its last axis by real part, then imaginary part; complex dtype.

    numpy's ``sort_complex``; differentiable as a gather.

    Example:
        >>> fnp.sort_complex(fnp.array([1 + 2j, 1 - 1j, 0 + 5j]))
        Tensor([0.+5.j, 1.-1.j, 1.+2.j], dtype=complex128)
    """
    a = _tensor(a, "sort_complex", "a")
    dt = np.dtype(a.dtype)
    if not dtypes.is_complex(dt):
        dt = np.result_type(dt, np.complex64)
        a = astype(a, dt)
    if a.ndim == 0:
        raise ShapeError("sort_complex: a 0-d Tensor has no axis to sort; use fnp.atleast_1d(a)")
    order = lexsort([_e.imag(a), _e.real(a)], axis=-1)
    return take_along_axis(a, order, axis=-1)


# ------------------------------------------------------------------------ sets


@_args.names_errors("isin")
def isin(
    element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
    kind: str | None = None,
) -> Any:
    """Whether each entry of ``element`` is in ``test_elements`` (numpy's ``isin``).

    Traceable (no data-dependent shapes). NaN is in nothing, as numpy.

    Returns:
        Boolean Tensor of ``element``'s shape (no derivative).

    Example:
        >>> fnp.isin(fnp.array([1, 2, 3]), [2, 5])
        Tensor([False,  True, False], dtype=bool)
    """
    _args.choice(kind, "isin", "kind", ("sort", "table"), none_ok=True)
    invert = _args.flag(invert, "isin", "invert")
    e = _tensor(element, "isin", "element")
    t = ravel(_tensor(test_elements, "isin", "test_elements"))
    if t.size == 0:
        out = _e.full_like(e, fill_value=False, dtype=np.dtype(bool))
    elif e.size * t.size <= 1 << 16:
        out = _any(_e.equal(expand_dims(e, -1), t), axis=-1)
    else:
        s = sort(t)
        pos = _e.minimum(searchsorted(s, e), t.size - 1)
        out = _e.equal(take(s, pos), e)
    return _e.logical_not(out) if invert else out


def _holds(s: Tensor, ar: Any, name: str) -> Tensor:
    """Whether each of ``s`` is in ``ar``, a NaN counting as in ``ar`` when ``ar`` has one
    (numpy's set operations collapse NaNs into one value)."""
    ar = _real(ar, name, "ar")
    inside = isin(s, ar)
    if dtypes.is_inexact(s.dtype) and dtypes.is_inexact(ar.dtype):
        inside = _e.logical_or(inside, _e.logical_and(_e.isnan(s), _any(_e.isnan(ar))))
    return inside


def _set_result(name: str, s: Tensor, keep: Tensor, size: Any, fill_value: Any) -> Tensor:
    """The entries of the 1-D ``s`` where ``keep`` holds (sized: padded with ``fill_value``,
    default the smallest kept value).

    The set operations sort their inputs and keep the first element of each run of equal
    values that passes a membership test, as numpy's ``lib/_arraysetops_impl.py`` does;
    with a static ``size`` the kept positions come from a stable argsort of the mask
    (``nonzero`` with ``size``), so the shapes are static."""
    if size is not None and fill_value is None:
        first = _kept(name, keep, s, 0, 1, 0)
        fill_value = first[0]
    return _kept(name, keep, s, 0, size, fill_value)


def _sorted_flat(name: str, *arrays: Any) -> Tensor:
    parts = [ravel(_real(a, name, "ar")) for a in arrays]
    return sort(concatenate(parts, axis=0) if len(parts) > 1 else parts[0])


@_args.names_errors("union1d")
def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values of both inputs (numpy's ``union1d``).

    Data-dependent size: concrete inputs, or a static ``size`` (padded with ``fill_value``,
    default the smallest value), as JAX. Differentiable in the values.

    Example:
        >>> fnp.union1d(fnp.array([3, 1]), fnp.array([2, 3]))
        Tensor([1, 2, 3], dtype=int64)
    """
    s = _sorted_flat("union1d", ar1, ar2)
    return _set_result("union1d", s, _run_starts(s, True), size, fill_value)


@_args.names_errors("intersect1d")
def intersect1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False, *,
    size: int | None = None, fill_value: Any = None,
) -> Any:
    """The sorted unique values in both inputs (numpy's ``intersect1d``).

    Data-dependent size: concrete inputs, or a static ``size``, as JAX. The values are
    differentiable in ``ar1``.

    Args:
        ar1, ar2: Tensors (flattened).
        assume_unique: accepted; the result is the same either way.
        return_indices: also return the first index of each value in ``ar1`` and ``ar2``.
        size, fill_value: static result length and padding (indices pad with 0).

    Example:
        >>> fnp.intersect1d(fnp.array([1, 3, 4, 3]), fnp.array([3, 1, 2, 1]))
        Tensor([1, 3], dtype=int64)
        >>> fnp.intersect1d(fnp.array([5, 1]), fnp.array([1, 9, 5]), return_indices=True)[2]
        Tensor([0, 2], dtype=int64)
    """
    _args.flag(assume_unique, "intersect1d", "assume_unique")
    a = ravel(_real(ar1, "intersect1d", "ar1"))
    b = ravel(_real(ar2, "intersect1d", "ar2"))
    perm = argsort(a, stable=True)
    s = take(a, perm)
    keep = _e.logical_and(_run_starts(s, True), isin(s, b))
    values = _set_result("intersect1d", s, keep, size, fill_value)
    if not _args.flag(return_indices, "intersect1d", "return_indices"):
        return values
    i1 = _kept("intersect1d", keep, perm, 0, size, 0)
    perm2 = argsort(b, stable=True)
    sb = take(b, perm2)
    last = builtins.max(b.size - 1, 0)
    i2 = take(perm2, _e.minimum(searchsorted(sb, values), last)) if b.size else i1
    if size is not None:
        valid = _e.less(_on(np.arange(size), a), _sum(astype(keep, _INT64)))
        i2 = where(valid, i2, 0)
    return values, i1, i2


@_args.names_errors("setdiff1d")
def setdiff1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """The unique values of ``ar1`` not in ``ar2``, sorted (numpy's ``setdiff1d``).

    With ``assume_unique`` the values keep ``ar1``'s order, as numpy. Data-dependent size:
    concrete inputs, or a static ``size`` (padded with ``fill_value``, default 0), as JAX.
    Differentiable in ``ar1``'s values.

    Example:
        >>> fnp.setdiff1d(fnp.array([5, 1, 3, 1]), fnp.array([3]))
        Tensor([1, 5], dtype=int64)
    """
    if _args.flag(assume_unique, "setdiff1d", "assume_unique"):
        s = ravel(_real(ar1, "setdiff1d", "ar1"))
        keep = isin(s, ar2, invert=True)
    else:
        s = _sorted_flat("setdiff1d", ar1)
        keep = _e.logical_and(_run_starts(s, True), isin(s, ar2, invert=True))
    return _kept("setdiff1d", keep, s, 0, size, 0 if fill_value is None else fill_value)


@_args.names_errors("setxor1d")
def setxor1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """The sorted unique values in exactly one of the inputs (numpy's ``setxor1d``).

    Data-dependent size: concrete inputs, or a static ``size``, as JAX.

    Example:
        >>> fnp.setxor1d(fnp.array([1, 2, 3]), fnp.array([2, 3, 4]))
        Tensor([1, 4], dtype=int64)
    """
    _args.flag(assume_unique, "setxor1d", "assume_unique")
    s = _sorted_flat("setxor1d", ar1, ar2)
    in1, in2 = _holds(s, ar1, "setxor1d"), _holds(s, ar2, "setxor1d")
    keep = _e.logical_and(_run_starts(s, True), _e.logical_xor(in1, in2))
    return _set_result("setxor1d", s, keep, size, fill_value)


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(name: str, x: Any, size: Any, fill_value: Any) -> tuple:
    from fgrad.numpy._sorting import unique

    x = _tensor(x, name, "x")
    try:
        return unique(x, True, True, True, equal_nan=False, size=size, fill_value=fill_value)
    except ConcretizationError as err:
        raise ConcretizationError(str(err).replace("unique:", f"{name}:", 1)) from None


@_args.names_errors("unique_all")
def unique_all(x: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The Array API's ``unique_all``: values, first indices, inverse indices and counts.

    NaNs are not collapsed (``equal_nan=False``, as numpy's ``unique_all``); the inverse
    has ``x``'s shape. Data-dependent size: concrete ``x`` or a static ``size``, as JAX.

    Example:
        >>> r = fnp.unique_all(fnp.array([2, 1, 2]))
        >>> r.values, r.indices, r.inverse_indices, r.counts
        (Tensor([1, 2], dtype=int64), Tensor([1, 0], dtype=int64),
         Tensor([1, 0, 1], dtype=int64), Tensor([1, 2], dtype=int64))
    """
    return UniqueAllResult(*_unique("unique_all", x, size, fill_value))


@_args.names_errors("unique_counts")
def unique_counts(x: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The Array API's ``unique_counts``: ``(values, counts)``.

    Example:
        >>> fnp.unique_counts(fnp.array([2, 1, 2])).counts
        Tensor([1, 2], dtype=int64)
    """
    values, _, _, counts = _unique("unique_counts", x, size, fill_value)
    return UniqueCountsResult(values, counts)


@_args.names_errors("unique_inverse")
def unique_inverse(x: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The Array API's ``unique_inverse``: ``(values, inverse_indices)``, the inverse as ``x``.

    Example:
        >>> fnp.unique_inverse(fnp.array([[2, 1], [2, 2]])).inverse_indices
        Tensor([[1, 0],
                [1, 1]], dtype=int64)
    """
    values, _, inverse, _ = _unique("unique_inverse", x, size, fill_value)
    return UniqueInverseResult(values, inverse)


@_args.names_errors("unique_values")
def unique_values(x: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The Array API's ``unique_values``: the sorted unique values of ``x``; differentiable.

    Example:
        >>> fnp.unique_values(fnp.array([3.0, 1.0, 3.0]))
        Tensor([1., 3.], dtype=float64)
    """
    return _unique("unique_values", x, size, fill_value)[0]


# ------------------------------------------------------------------------ comparisons, copies


@_args.names_errors("array_equal")
def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Whether ``a1`` and ``a2`` have one shape and equal elements (numpy's ``array_equal``).

    Returns:
        0-d boolean Tensor (traceable; shapes are compared statically).

    Example:
        >>> fnp.array_equal(fnp.array([1.0, fnp.nan]), fnp.array([1.0, fnp.nan]), equal_nan=True)
        Tensor(True, dtype=bool)
    """
    a1, a2 = _tensor(a1, "array_equal", "a1"), _tensor(a2, "array_equal", "a2")
    if tuple(a1.shape) != tuple(a2.shape):
        return _on(False, a1)
    eq = _e.equal(a1, a2)
    if _args.flag(equal_nan, "array_equal", "equal_nan"):
        both = [dtypes.is_inexact(t.dtype) for t in (a1, a2)]
        if all(both):
            eq = _e.logical_or(eq, _e.logical_and(_e.isnan(a1), _e.isnan(a2)))
    return _all(eq)


@_args.names_errors("array_equiv")
def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere (``array_equiv``).

    Example:
        >>> fnp.array_equiv(fnp.array([1, 2]), fnp.array([[1, 2], [1, 2]]))
        Tensor(True, dtype=bool)
    """
    a1, a2 = _tensor(a1, "array_equiv", "a1"), _tensor(a2, "array_equiv", "a2")
    try:
        np.broadcast_shapes(tuple(a1.shape), tuple(a2.shape))
    except ValueError:
        return _on(False, a1)
    return _all(_e.equal(a1, a2))


@_args.names_errors("copy")
def copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    """A copy of ``a`` (numpy's ``copy``): Tensors are immutable, so ``a`` itself (or as a Tensor).

    Example:
        >>> fnp.copy([1, 2])
        Tensor([1, 2], dtype=int64)
    """
    _args.choice(order, "copy", "order", ("K", "A", "C", "F"), none_ok=True)
    _args.flag(subok, "copy", "subok")
    if isinstance(a, Tensor):
        return a
    return _tensor(a, "copy", "a")


# ------------------------------------------------------------------------ functions over axes


@_args.names_errors("apply_along_axis")
def apply_along_axis(func1d: Any, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``func1d`` applied to the 1-D slices of ``arr`` along ``axis`` (``apply_along_axis``).

    Built on :func:`fgrad.vmap` (``func1d`` is traced once for all slices), so it is
    differentiable through ``func1d`` and works under ``jit``. The slice axis of the
    result is replaced by the dimensions of ``func1d``'s result.

    Example:
        >>> x = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> fnp.apply_along_axis(lambda v: v[0] * v[1], 1, x)
        Tensor([ 2., 12.], dtype=float64)
    """
    _args.function(func1d, "apply_along_axis", "func1d")
    arr = _tensor(arr, "apply_along_axis", "arr")
    axis = _args.axis(axis, "apply_along_axis", arr.ndim)
    moved = moveaxis(arr, axis, -1)
    batch = tuple(moved.shape[:-1])
    flat = reshape(moved, (-1, moved.shape[-1]))
    out = vmap(lambda v: _tensor(func1d(v, *args, **kwargs), "apply_along_axis", "func1d"))(flat)
    out = reshape(out, batch + tuple(out.shape[1:]))
    k = out.ndim - len(batch)
    if k == 0:
        return out
    return moveaxis(out, tuple(range(len(batch), out.ndim)), tuple(range(axis, axis + k)))


@_args.names_errors("apply_over_axes")
def apply_over_axes(func: Any, a: Any, axes: Any) -> Any:
    """``func(a, axis)`` applied over ``axes`` in turn, keeping dimensions (``apply_over_axes``).

    Raises:
        ValueError: ``func`` returns a result of a number of dimensions other than
            ``a.ndim`` or ``a.ndim - 1``.

    Example:
        >>> fnp.apply_over_axes(fnp.sum, fnp.ones((2, 3, 4)), [0, 2])
        Tensor([[[8.],
                 [8.],
                 [8.]]], dtype=float64)
    """
    _args.function(func, "apply_over_axes", "func")
    val = _tensor(a, "apply_over_axes", "a")
    n = val.ndim
    axes = _args.axes(axes, "apply_over_axes", n, "axes", unique=False)
    for axis in axes:
        res = _tensor(func(val, axis), "apply_over_axes", "func")
        if res.ndim == n:
            val = res
        elif res.ndim == n - 1:
            val = expand_dims(res, axis)
        else:
            raise ValueError(
                "apply_over_axes: function is not returning an array of the correct shape"
            )
    return val


# ------------------------------------------------------------------------ printing


def _printed(name: str, arr: Any, width: Any, precision: Any, small: Any) -> tuple:
    """array_repr's and array_str's values on the host and print options, checked."""
    width = _args.index(width, name, "max_line_width", minimum=1, none_ok=True)
    precision = _args.index(precision, name, "precision", minimum=0, none_ok=True)
    small = None if small is None else _args.flag(small, name, "suppress_small")
    return _host_array(name, arr, arrays_only=True), (width, precision, small)


def _host_array(name: str, arr: Any, arrays_only: bool = False) -> np.ndarray:
    if arrays_only and not isinstance(arr, (Tensor, np.ndarray)):
        raise DTypeError(f"{name}: needs a Tensor or array, got {_args.describe(arr)}")
    t = _tensor(arr, name, "arr")
    try:
        return np.asarray(_wrap(concrete_value(t)))
    except ConcretizationError:
        raise ConcretizationError(
            f"{name}: a traced Tensor {t.aval} has no values to print; print outside the "
            "traced function"
        ) from None


@_args.names_errors("array_repr")
def array_repr(
    arr: Any, max_line_width: int | None = None, precision: int | None = None,
    suppress_small: bool | None = None,
) -> str:
    """The repr of a Tensor, with numpy's print options (numpy's ``array_repr``).

    Example:
        >>> fnp.array_repr(fnp.array([1.0, 2.0]))
        'Tensor([1., 2.], dtype=float64)'
    """
    data, opts = _printed("array_repr", arr, max_line_width, precision, suppress_small)
    body = np.array2string(data, *opts, separator=", ", prefix="Tensor(")
    return f"Tensor({body}, dtype={data.dtype.name})"


@_args.names_errors("array_str")
def array_str(
    a: Any, max_line_width: int | None = None, precision: int | None = None,
    suppress_small: bool | None = None,
) -> str:
    """The str of a Tensor's values (numpy's ``array_str``).

    Example:
        >>> fnp.array_str(fnp.array([1.0, 2.0]))
        '[1. 2.]'
    """
    data, opts = _printed("array_str", a, max_line_width, precision, suppress_small)
    return np.array_str(data, *opts)


def get_printoptions() -> dict:
    """numpy's print options, which Tensors' repr and str follow (numpy's ``get_printoptions``).

    Example:
        >>> fnp.get_printoptions()["precision"]
        8
    """
    return np.get_printoptions()


def set_printoptions(
    precision: Any = None, threshold: Any = None, edgeitems: Any = None, linewidth: Any = None,
    suppress: Any = None, nanstr: Any = None, infstr: Any = None, formatter: Any = None,
    sign: Any = None, floatmode: Any = None, *, legacy: Any = None, override_repr: Any = None,
) -> None:
    """Set numpy's print options, which Tensors' repr and str follow (numpy's ``set_printoptions``).

    Example:
        >>> fnp.set_printoptions(precision=3)
        >>> fnp.array([1 / 3])
        Tensor([0.333], dtype=float64)
        >>> fnp.set_printoptions(precision=8)
    """
    _numpy_call(
        "set_printoptions", np.set_printoptions, precision, threshold, edgeitems, linewidth,
        suppress, nanstr, infstr, formatter, sign, floatmode, legacy=legacy,
        override_repr=override_repr,
    )


def printoptions(*args: Any, **kwargs: Any) -> Any:
    """A context manager that sets numpy's print options for its block (numpy's ``printoptions``).

    Example:
        >>> with fnp.printoptions(precision=2):
        ...     print(fnp.array([1 / 3]))
        [0.33]
    """
    saved = np.get_printoptions()
    try:  # numpy checks the options only when the block starts; check them now
        _numpy_call("printoptions", np.set_printoptions, *args, **kwargs)
    finally:
        np.set_printoptions(**saved)
    return np.printoptions(*args, **kwargs)


# ------------------------------------------------------------------------ files and buffers


def _write_atomic(path: str, write: Any) -> None:
    """Write through ``write(file_object)`` into a fsynced temporary renamed over ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@functools.cache
def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _host_arrays_for(name: str, arrays: dict) -> dict:
    return {k: _host_array(name, v) for k, v in arrays.items()}


def _target(name: str, file: Any, suffix: str) -> Any:
    """The path to write (``suffix`` added as numpy does), or None for a file object."""
    if isinstance(file, (str, os.PathLike)):
        path = os.fspath(file)
        return path if path.endswith(suffix) else path + suffix
    if not callable(getattr(file, "write", None)):
        raise DTypeError(
            f"{name}: file must be a path or a binary file object, got {_args.describe(file)}"
        )
    return None


def _readable(name: str, file: Any) -> Any:
    if isinstance(file, (str, os.PathLike)) or callable(getattr(file, "read", None)):
        return file
    raise DTypeError(
        f"{name}: file must be a path or a binary file object, got {_args.describe(file)}"
    )


@_args.names_errors("save")
def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """Write ``arr`` to a numpy ``.npy`` file (numpy's ``save``), atomically.

    A path gets ``.npy`` appended if it lacks it and is written through a temporary file
    renamed over it, so readers see the old file or the whole new one. Tensors hold
    numbers only, so nothing is ever pickled (``allow_pickle`` is accepted and ignored).

    Args:
        file: path or a binary file object.
        arr: Tensor or array-like (concrete).

    Raises:
        ConcretizationError: ``arr`` is traced.
        OSError: the file cannot be written.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "x")
        >>> fnp.save(path, fnp.array([1.0, 2.0]))
        >>> fnp.load(path + ".npy")
        Tensor([1., 2.], dtype=float64)
    """
    data = _host_array("save", arr)
    path = _target("save", file, ".npy")
    if path is None:
        np.save(file, data, allow_pickle=False)
    else:
        _write_atomic(path, lambda f: np.save(f, data, allow_pickle=False))


@_args.names_errors("savez")
def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """Write several arrays to an uncompressed ``.npz`` archive (numpy's ``savez``), atomically.

    Positional arrays are named ``arr_0``, ``arr_1``, ...; keyword arrays by their
    keywords. Nothing is pickled.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
        >>> fnp.savez(path, fnp.ones(2), b=fnp.arange(3))
        >>> sorted(fnp.load(path).items())
        [('arr_0', Tensor([1., 1.], dtype=float64)), ('b', Tensor([0, 1, 2], dtype=int64))]
    """
    named = {f"arr_{i}": a for i, a in enumerate(args)}
    for k, v in kwds.items():
        if k in named:
            raise ValueError(f"savez: cannot use un-named variables and keyword {k}")
        named[k] = v
    data = _host_arrays_for("savez", named)
    path = _target("savez", file, ".npz")
    if path is None:
        np.savez(file, allow_pickle=False, **data)
    else:
        _write_atomic(path, lambda f: np.savez(f, allow_pickle=False, **data))


@_args.names_errors("load")
def load(
    file: Any, mmap_mode: Any = None, allow_pickle: bool = False, fix_imports: bool = True,
    encoding: str = "ASCII", *, max_header_size: int = 10000,
) -> Any:
    """Read a numpy ``.npy`` file as a Tensor, or a ``.npz`` archive as a dict of Tensors.

    Never unpickles (object arrays are refused), whatever ``allow_pickle`` says of
    numpy's default. ``mmap_mode`` is accepted (the data is copied into the Tensor).

    Args:
        file: path or binary file object.

    Raises:
        ValueError: ``allow_pickle=True`` is asked for, or the file holds objects (pickles).
        DTypeError: the array is not numeric (strings, records).
        OSError: the file cannot be read or is not a numpy file.

    Example:
        >>> import io
        >>> buffer = io.BytesIO()
        >>> fnp.save(buffer, fnp.eye(2))
        >>> _ = buffer.seek(0)
        >>> fnp.load(buffer)
        Tensor([[1., 0.],
                [0., 1.]], dtype=float64)
    """
    if _args.flag(allow_pickle, "load", "allow_pickle"):
        raise ValueError(
            "load: fgrad never unpickles files (allow_pickle=True is refused); load numeric "
            ".npy/.npz data only"
        )
    modes = ("r", "r+", "c", "readonly", "readwrite", "copyonwrite")
    _args.choice(mmap_mode, "load", "mmap_mode", modes, none_ok=True)
    _args.choice(encoding, "load", "encoding", ("ASCII", "latin1", "bytes"))
    _args.flag(fix_imports, "load", "fix_imports")
    limit = _args.index(max_header_size, "load", "max_header_size", minimum=1)
    loaded = _numpy_call(
        "load", np.load, _readable("load", file), mmap_mode=mmap_mode, allow_pickle=False,
        encoding=encoding, max_header_size=limit,
    )
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            return {k: asarray(np.array(loaded[k])) for k in loaded.files}
    return asarray(np.array(loaded))


@_args.names_errors("frombuffer")
def frombuffer(
    buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0, *, like: Any = None,
) -> Tensor:
    """A 1-D Tensor of the bytes in ``buffer`` read as ``dtype`` (numpy's ``frombuffer``), copied.

    Example:
        >>> fnp.frombuffer(b"\\x01\\x02", dtype="uint8")
        Tensor([1, 2], dtype=uint8)
    """
    _numpy_layout("frombuffer", None, like)
    count, offset = _count("frombuffer", count, offset)
    dtype = _args.dtype(dtype, "frombuffer", none_ok=False)
    bytes_like = isinstance(buffer, (bytes, bytearray, memoryview)) or hasattr(buffer, "__buffer__")
    if isinstance(buffer, (Tensor, str)) or not bytes_like:
        raise DTypeError(
            f"frombuffer: buffer must be a bytes-like object, got {_args.describe(buffer)}"
        )
    data = _numpy_call("frombuffer", np.frombuffer, buffer, dtype=dtype, count=count, offset=offset)
    return asarray(data.copy())


@_args.names_errors("fromfile")
def fromfile(
    file: Any, dtype: Any = float, count: int = -1, sep: str = "", offset: int = 0, *,
    like: Any = None,
) -> Tensor:
    """A 1-D Tensor of the data in a binary (or, with ``sep``, text) file (numpy's ``fromfile``).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "v.txt")
        >>> _ = open(path, "w").write("1 2 3")
        >>> fnp.fromfile(path, sep=" ")
        Tensor([1., 2., 3.], dtype=float64)
    """
    _numpy_layout("fromfile", None, like)
    count, offset = _count("fromfile", count, offset)
    if not isinstance(file, (str, os.PathLike)) and not callable(getattr(file, "fileno", None)):
        raise DTypeError(
            f"fromfile: file must be a path or an open file, got {_args.describe(file)}"
        )
    _args.choice(type(sep), "fromfile", "sep (its type)", (str,))
    dtype = _args.dtype(dtype, "fromfile", none_ok=False)
    kwargs = {"dtype": dtype, "count": count, "sep": sep, "offset": offset}
    return asarray(_numpy_call("fromfile", np.fromfile, file, **kwargs))


@_args.names_errors("fromiter")
def fromiter(iter: Any, dtype: Any, count: int = -1, *, like: Any = None) -> Tensor:
    """A 1-D Tensor of the values of an iterable (numpy's ``fromiter``).

    Example:
        >>> fnp.fromiter((i * i for i in range(4)), dtype=int)
        Tensor([0, 1, 4, 9], dtype=int64)
    """
    _numpy_layout("fromiter", None, like)
    count, _ = _count("fromiter", count)
    dtype = _args.dtype(dtype, "fromiter", none_ok=False)
    if isinstance(iter, (str, bytes, Tensor)) or not hasattr(iter, "__iter__"):
        raise DTypeError(
            f"fromiter: iter must be an iterable of numbers, got {_args.describe(iter)}"
        )
    return asarray(_numpy_call("fromiter", np.fromiter, iter, dtype=dtype, count=count))


@_args.names_errors("fromstring")
def fromstring(
    string: Any, dtype: Any = float, count: int = -1, *, sep: str, like: Any = None,
) -> Tensor:
    """A 1-D Tensor of the numbers in a text ``string`` separated by ``sep`` (``fromstring``).

    Example:
        >>> fnp.fromstring("1, 2.5", sep=",")
        Tensor([1. , 2.5], dtype=float64)
    """
    _numpy_layout("fromstring", None, like)
    count, _ = _count("fromstring", count)
    dtype = _args.dtype(dtype, "fromstring", none_ok=False)
    if not isinstance(string, (str, bytes)):
        raise DTypeError(f"fromstring: string must be a str, got {_args.describe(string)}")
    if not isinstance(sep, str) or not sep:
        raise ValueError(
            f"fromstring: sep must be a non-empty separator string (binary mode is gone from "
            f"numpy; use fnp.frombuffer for bytes), got {sep!r}"
        )
    kwargs = {"dtype": dtype, "count": count, "sep": sep}
    return asarray(_numpy_call("fromstring", np.fromstring, string, **kwargs))


class _PyFunc:
    """A function of scalars applied to each element of broadcast Tensors (:func:`frompyfunc`)."""

    def __init__(self, func: Any, nin: int, nout: int, identity: Any) -> None:
        self.func, self.nin, self.nout, self.identity = func, nin, nout, identity
        self.__name__ = getattr(func, "__name__", "pyfunc")
        self.__doc__ = getattr(func, "__doc__", None) or _PyFunc.__doc__

    def __call__(self, *args: Any) -> Any:
        if len(args) != self.nin:
            raise TypeError(
                f"frompyfunc: {self.__name__} takes {self.nin} arguments, got {len(args)}"
            )
        xs = broadcast_arrays(*[_tensor(a, "frompyfunc", "args") for a in args])
        shape = tuple(xs[0].shape) if xs else ()
        flat = [ravel(x) for x in xs]
        outs = vmap(self.func)(*flat)
        if self.nout == 1:
            return reshape(_tensor(outs, "frompyfunc", "func"), shape)
        return tuple(reshape(_tensor(o, "frompyfunc", "func"), shape) for o in outs)

    def __repr__(self) -> str:
        return f"<fgrad pyfunc {self.__name__} (nin={self.nin}, nout={self.nout})>"


@_args.names_errors("frompyfunc")
def frompyfunc(func: Any, /, nin: int, nout: int, *, identity: Any = None) -> Any:
    """A numpy-ufunc-like function that applies ``func`` to each element (numpy's ``frompyfunc``).

    ``func`` gets 0-d Tensors (one per input, broadcast together) and is vectorised with
    :func:`fgrad.vmap`, so it is traced once and is differentiable; it must be written
    with fgrad operations (no Python branches on the values). Results are numeric
    Tensors, not numpy's object arrays.

    Example:
        >>> f = fnp.frompyfunc(lambda a, b: a * b + 1.0, 2, 1)
        >>> f(fnp.array([1.0, 2.0]), 3.0)
        Tensor([4., 7.], dtype=float64)
    """
    _args.function(func, "frompyfunc", "func")
    nin = _args.size(nin, "frompyfunc", "nin", minimum=1)
    nout = _args.size(nout, "frompyfunc", "nout", minimum=1)
    return _PyFunc(func, nin, nout, identity)


def __dir__() -> list[str]:
    return list(__all__)
