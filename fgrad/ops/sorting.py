"""Sorting ops: ``sort``, ``argsort`` and ``searchsorted`` along one axis.

``sort`` is a primitive (not ``take_along_axis(x, argsort(x))``) because ``xp.sort`` is one
pass over the data where the composition is a sort plus a gather. Its derivative is the
permutation that sorts ``x``: the JVP gathers the tangent through ``argsort(x)`` and the VJP
gathers the cotangent through the inverse permutation (``argsort(argsort(x))``), which is the
transpose of that gather without a scatter. Both are gathers written with ``getitem``, so
they are differentiable again. With ties, the permutation is the *stable* one (equal values
keep their order), so each tied input gets the cotangent of the output position it was
sorted to, as in JAX.

Every sort here is stable. numpy sorts stably only when asked (``stable=True``), cupy always
does and has no ``stable=`` keyword, and the Array API's default is stable: see
:func:`_argsort`. A descending sort is the Array API's stable descending order (ties keep
their original order), built as the Array API reference implementation builds it, by
reversing an ascending sort of the reversed input; NaNs, which sort last ascending, come
first descending.
"""

from __future__ import annotations

import numpy as np

from fgrad import backend, dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import axes_batch
from fgrad.ops._rules import shape_of
from fgrad.ops.elementwise import (
    astype,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
)
from fgrad.ops.indexing import ARRAY, getitem
from fgrad.ops.reduction import sum as reduce_sum
from fgrad.ops.shape import reshape
from fgrad.tensor import ShapeDtype, asarray

__all__ = ["argsort", "searchsorted", "sort", "take_along"]


# ------------------------------------------------------------------------ helpers


def _argsort(xp, x, axis):
    """Stable ascending argsort through any namespace."""
    try:
        return xp.argsort(x, axis=axis, stable=True)  # numpy 2 and the Array API
    except TypeError:  # cupy has no stable= keyword; its argsort is always stable
        return xp.argsort(x, axis=axis)


def _argsort_kernel(xp, x, *, axis, descending):
    if not descending:
        return _argsort(xp, x, axis)
    # Stable descending: reverse an ascending stable sort of the reversed input, then map
    # positions back (ties end up in their original order).
    idx = xp.flip(_argsort(xp, xp.flip(x, axis=axis), axis), axis=axis)
    return (x.shape[axis] - 1) - idx


def _sort_kernel(xp, x, *, axis, descending):
    out = xp.sort(x, axis=axis)  # values do not depend on stability
    return xp.flip(out, axis=axis) if descending else out


def _iota(n: int, d: int, ndim: int, like):
    """``arange(n)`` shaped to broadcast along axis ``d`` of ``ndim``, on ``like``'s device."""
    data = np.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))
    device = like.device
    return data if device == backend.CPU else asarray(data, device=device)


def take_along(v, idx, axis: int):
    """``v`` gathered at integer ``idx`` along ``axis`` (``idx`` of ``v``'s shape).

    ``take_along_axis`` in the ops layer, for derivative rules; differentiable in ``v``.
    """
    shape = shape_of(idx)
    arrays = [idx if d == axis else _iota(n, d, len(shape), v) for d, n in enumerate(shape)]
    return getitem(v, *arrays, index=(ARRAY,) * len(shape))


def _sort_aval(name):
    def rule(x, *, axis, descending):
        shape = shape_of(x)
        if not 0 <= axis < len(shape):
            raise ShapeError(
                f"{name}: axis {axis} is out of range for {ShapeDtype(shape, x.dtype)}"
                + (
                    "; a 0-d value has nothing to sort along (fnp's axis=None flattens)"
                    if not shape
                    else ""
                )
            )
        dtype = np.dtype(x.dtype)
        if dtype.kind not in "biufc":
            raise DTypeError(f"{name}: cannot sort {ShapeDtype(shape, dtype)}")
        return ShapeDtype(shape, np.dtype(np.int64) if name == "argsort" else dtype)

    return rule


_SORT_CHECK = Check(
    shapes=(((4, 3),), ((2, 5, 3),)),
    params=(
        {"axis": 0, "descending": False},
        {"axis": 0, "descending": True},
        {"axis": 1, "descending": False},
        {"axis": 1, "descending": True},
    ),
)


def _sort_check_args(rng, shapes):
    # Distinct values spaced well beyond the finite-difference step: no ties to straddle.
    n = int(np.prod(shapes[0]))
    return [(rng.permutation(n) * 0.5 + rng.uniform(-0.1, 0.1, n)).reshape(shapes[0])]


# ------------------------------------------------------------------------ argsort


argsort = defop(
    "argsort",
    kernel=_argsort_kernel,
    aval=_sort_aval("argsort"),
    batch=axes_batch,
    nondiff=True,
    check=Check(
        shapes=_SORT_CHECK.shapes,
        params=_SORT_CHECK.params,
        # Ties, so that the stable order is what the kernels are compared on.
        make_args=lambda rng, shapes: [rng.integers(0, 3, shapes[0]).astype(np.float64)],
    ),
    doc="""Indices that sort ``x`` along ``axis``, stably (ties keep their order).

    The op behind ``fnp.argsort``; ``descending=True`` gives the stable descending order
    (among equal values the earlier one comes first), as the Array API's ``argsort``.

    Args:
        x: real Tensor of at least one dimension.
        axis: non-negative int, the axis to sort along.
        descending: sort from largest to smallest.

    Returns:
        int64 Tensor of ``x.shape``. Carries no derivative.

    Raises:
        ShapeError: ``axis`` is out of range.

    Example:
        >>> from fgrad.ops.sorting import argsort
        >>> argsort(fnp.array([2.0, 1.0, 2.0, 0.0]), axis=0, descending=True)
        Tensor([0, 2, 1, 3], dtype=int64)
    """,
)


# ------------------------------------------------------------------------ sort


def _sort_jvp(t, out, x, *, axis, descending):
    return take_along(t, argsort(x, axis=axis, descending=descending), axis)


def _sort_vjp(ct, out, x, *, axis, descending):
    perm = argsort(x, axis=axis, descending=descending)
    inverse = argsort(perm, axis=axis, descending=False)  # where each input was sent
    return take_along(ct, inverse, axis)


sort = defop(
    "sort",
    kernel=_sort_kernel,
    aval=_sort_aval("sort"),
    batch=axes_batch,
    jvp=(_sort_jvp,),
    vjp=(_sort_vjp,),
    check=Check(
        shapes=_SORT_CHECK.shapes,
        params=_SORT_CHECK.params,
        make_args=_sort_check_args,
    ),
    doc="""``x`` sorted along ``axis`` (ascending, or descending).

    The op behind ``fnp.sort``. Piecewise linear: the derivative moves each tangent or
    cotangent with its element, through the stable sorting permutation. Among tied inputs
    each one receives the cotangent of the output position the stable order sends it to
    (JAX's convention; the ties are not averaged).

    Args:
        x: real Tensor of at least one dimension.
        axis: non-negative int, the axis to sort along.
        descending: sort from largest to smallest (NaNs first).

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ShapeError: ``axis`` is out of range.

    Example:
        >>> from fgrad.ops.sorting import sort
        >>> sort(fnp.array([[3.0, 1.0, 2.0]]), axis=1, descending=False)
        Tensor([[1., 2., 3.]], dtype=float64)
        >>> fgrad.grad(lambda x: sort(x, axis=0, descending=False)[0])(fnp.array([3.0, 1.0]))
        Tensor([0., 1.], dtype=float64)
    """,
)


# ------------------------------------------------------------------------ searchsorted


def _searchsorted_aval(a, v, *, side):
    sa = shape_of(a)
    if len(sa) != 1:
        raise ShapeError(
            f"searchsorted: the sorted sequence must be 1-D, got {ShapeDtype(sa, a.dtype)}"
        )
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    for x in (a, v):
        if dtypes.is_complex(dtypes.result_type(x)):
            raise DTypeError("searchsorted: complex values have no order; pass real inputs")
    return ShapeDtype(shape_of(v), np.dtype(np.int64))


def _searchsorted_batch(op, args, dims, *, side):
    # vmap rule. A shared sequence: one search of every example's values. A sequence per
    # example: xp.searchsorted takes one 1-D sequence, so count instead, per value, the
    # entries of its own sequence that sort before it (numpy's order, NaN last): for
    # "left" a < v, for "right" a <= v. O(n) comparisons per value instead of O(log n).
    a, v = args
    if dims[0] is None:
        return op(a, v, side=side), 0
    _searchsorted_aval(
        ShapeDtype(shape_of(a)[1:], a.dtype),
        v if dims[1] is None else ShapeDtype(shape_of(v)[1:], v.dtype),
        side=side,
    )
    size, n = shape_of(a)
    v_shape = shape_of(v)[1:] if dims[1] is not None else shape_of(v)
    # a as (B, 1, ..., 1, n) against v as (B, *v_shape, 1) (a shared v broadcasts as is).
    a = reshape(a, shape=(size,) + (1,) * len(v_shape) + (n,))
    v = reshape(asarray(v) if type(v) in (bool, int, float) else v, shape=(*shape_of(v), 1))
    v_nan = isnan(v)
    if side == "left":
        before = logical_or(less(a, v), logical_and(v_nan, logical_not(isnan(a))))
    else:
        before = logical_or(less_equal(a, v), v_nan)
    count = reduce_sum(before, axes=(len(v_shape) + 1,), keepdims=False)
    return astype(count, dtype=np.dtype(np.int64)), 0


searchsorted = defop(
    "searchsorted",
    kernel=lambda xp, a, v, *, side: xp.searchsorted(a, v, side=side),
    aval=_searchsorted_aval,
    batch=_searchsorted_batch,
    nondiff=True,
    check=Check(
        shapes=(((5,), ()), ((5,), (2, 3))),
        params=({"side": "left"}, {"side": "right"}),
        make_args=lambda rng, shapes: [
            np.array([-1.0, 0.0, 0.0, 0.5, 1.5]),
            np.round(rng.uniform(-2.0, 2.0, shapes[1]) * 2) / 2,  # hits the ties
        ],
    ),
    doc="""Positions at which ``v`` would be inserted into sorted ``a`` to keep it sorted.

    The op behind ``fnp.searchsorted``: ``side="left"`` gives the first such position
    (``a[i-1] < v <= a[i]``), ``"right"`` the last (``a[i-1] <= v < a[i]``).

    Args:
        a: 1-D real Tensor sorted ascending.
        v: real Tensor or Python scalar of any shape.
        side: ``"left"`` or ``"right"``.

    Returns:
        int64 Tensor of ``v``'s shape, values in ``[0, len(a)]``. Carries no derivative.

    Raises:
        ShapeError: ``a`` is not 1-D.

    Example:
        >>> from fgrad.ops.sorting import searchsorted
        >>> searchsorted(fnp.array([1.0, 2.0, 2.0, 3.0]), fnp.array([2.0, 5.0]), side="right")
        Tensor([3, 4], dtype=int64)
    """,
)
