"""Indexing ops: gather (``x[idx]``), the scatters behind ``x.at[idx]``, dynamic slices.

An index is split in two, so that op params stay hashable and integer index arrays stay
data: the *static structure* is the ``index`` param, a tuple with one entry per indexed
axis (or new axis), and the integer arrays are positional inputs after the data. Entries:

* ``int`` ``i``: a non-negative position (``fnp`` wraps negative ones and checks bounds);
* ``(start, stop, step)``: a slice as ``slice(...).indices(n)`` gives it; a negative step
  may have ``stop == -1``, meaning "through position 0";
* ``None``: a new axis of length 1;
* ``"array"``: the next integer index array among the positional inputs.

Axes after the last entry are taken whole. The meaning is exactly numpy's: basic indexing
when no arrays are present; otherwise advanced indexing, where ints count as advanced
indices, the arrays broadcast together, and their dimensions replace the advanced entries
in place when those are adjacent (a ``None`` between them separates them) or go first
otherwise. Boolean masks never reach these ops: ``fnp`` turns a concrete mask into integer
arrays with ``nonzero``.

The scatter kernels copy ``x`` and write into the copy (Tensors are never mutated).
Repeated indices accumulate in ``scatter_add`` through ``xp.add.at`` (and multiply in
``scatter_multiply`` through ``xp.multiply.at``): numpy's names, since the Array API has no
scatter. cupy offers ``ufunc.at`` only for selected ufuncs in recent versions
(``cupyx.scatter_add`` substitutes ``add.at``), so these two kernels may need a
``kernels={"cupy": ...}`` override; this was not tested on a GPU.
"""

from __future__ import annotations

import functools

import numpy as np

from fgrad import backend, dtypes
from fgrad.core.op import LINEAR, REGISTRY, Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import batch_size, moved_to_front, with_batch
from fgrad.ops._rules import broadcasts_to, shape_of
from fgrad.ops.elementwise import (
    add,
    astype,
    divide,
    equal,
    full_like,
    maximum,
    minimum,
    multiply,
)
from fgrad.tensor import ShapeDtype, Tensor, asarray

__all__ = [
    "ARRAY",
    "dynamic_slice",
    "dynamic_update_slice",
    "getitem",
    "index_key",
    "index_layout",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_multiply",
    "scatter_set",
    "scatter_winners",
]

ARRAY = "array"


# ------------------------------------------------------------------------ index structure


def index_layout(name: str, x_shape: tuple, index: tuple, array_avals: tuple) -> tuple:
    """Shape of ``x[index]`` by numpy's rules, without touching data.

    Returns:
        ``(shape, adv_start, adv_ndim)``: the result shape, and where the broadcast
        dimensions of the advanced indices sit in it (``adv_ndim == 0`` when none).

    Raises:
        IndexError: too many indices, an int out of bounds, a non-integer index array, or
            index arrays that do not broadcast together.
    """
    has_arrays = bool(array_avals)
    parts: list = []
    adv_shapes: list = []
    adv_pos = None
    last_adv = None
    contiguous = True
    arrays = iter(array_avals)
    dim = 0
    for k, e in enumerate(index):
        if e is None:
            parts.append(1)
            continue
        if dim >= len(x_shape):
            used = sum(1 for e in index if e is not None)
            raise IndexError(
                f"{name}: too many indices for an array of shape {tuple(x_shape)}: {used} "
                f"indexed axes but only {len(x_shape)} dimensions"
            )
        n = x_shape[dim]
        dim += 1
        if type(e) is tuple:
            parts.append(len(range(*e)))
            continue
        if isinstance(e, str):
            aval = next(arrays)
            kind = np.dtype(getattr(aval, "dtype", np.int64)).kind
            if kind not in "iu":
                raise IndexError(
                    f"{name}: index arrays must have an integer dtype, got {aval}; boolean masks "
                    "are turned into integer indices by fnp (x[mask]) when concrete"
                )
            adv_shapes.append(shape_of(aval))
        else:
            if not 0 <= e < n:
                raise IndexError(
                    f"{name}: index {e} is out of bounds for axis {dim - 1} with size {n}"
                )
            if not has_arrays:
                continue
            adv_shapes.append(())
        if adv_pos is None:
            adv_pos = len(parts)
            parts.append(None)
        elif k != last_adv + 1:  # anything between, even None, separates them (numpy)
            contiguous = False
        last_adv = k
    rest = tuple(x_shape[dim:])
    if adv_pos is None:
        return tuple(parts) + rest, 0, 0
    try:
        bshape = tuple(np.broadcast_shapes(*adv_shapes))
    except ValueError:
        raise IndexError(
            f"{name}: shape mismatch: index arrays of shapes {adv_shapes} do not broadcast together"
        ) from None
    basic = [p for p in parts if p is not None]
    if contiguous:
        shape = tuple(parts[:adv_pos]) + bshape + tuple(parts[adv_pos + 1 :]) + rest
        return shape, adv_pos, len(bshape)
    return bshape + tuple(basic) + rest, 0, len(bshape)


def _slice(e: tuple) -> slice:
    start, stop, step = e
    if start < 0:  # slice.indices gives start -1 only for an empty slice
        return slice(0, 0)
    return slice(start, None if stop < 0 else stop, step)


@functools.lru_cache(maxsize=1024)
def _template(index: tuple) -> tuple:
    """The Python index for ``index`` with array placeholders left in (cached: hot path).

    The trailing ``...`` takes the remaining axes whole, which the Array API requires to be
    explicit; it also makes numpy return 0-d arrays rather than numpy scalars.
    """
    return tuple(_slice(e) if type(e) is tuple else e for e in index) + (Ellipsis,)


def index_key(index: tuple, arrays: tuple) -> tuple:
    """The Python index ``x[key]`` that the static ``index`` and the ``arrays`` describe."""
    key = _template(index)
    if not arrays:
        return key
    it = iter(arrays)
    return tuple(next(it) if isinstance(e, str) else e for e in key)


def _copy(xp, x):
    return xp.asarray(x, copy=True)


def _zeros(x, dtype=None):
    return full_like(x, fill_value=0, dtype=dtype)


def _check_index(name: str, x, arrays: tuple, index: tuple) -> tuple:
    n_arrays = sum(1 for e in index if isinstance(e, str))
    if n_arrays != len(arrays):
        raise ShapeError(
            f"{name}: the index {index} has {n_arrays} array placeholders but {len(arrays)} "
            "index arrays were passed"
        )
    return index_layout(name, shape_of(x), index, arrays)


def _int_index_args(rng, shapes, high=2):
    """Check helper: float data, then index arrays with repeated entries in ``[0, high)``."""
    x = rng.uniform(-2.0, 2.0, shapes[0])
    out = [x]
    for s in shapes[1:]:
        out.append((np.arange(int(np.prod(s))) % high).reshape(s).astype(np.int64))
    return out


def _scatter_args(rng, shapes):
    """Check helper: data ``x``, values ``v``, then index arrays with repeated entries."""
    v = rng.uniform(-2.0, 2.0, shapes[1])
    return [rng.uniform(-2.0, 2.0, shapes[0]), v] + _int_index_args(rng, (shapes[0],) + shapes[2:])[
        1:
    ]


# ------------------------------------------------------------------------ vmap rules
#
# Under ``vmap`` the mapped axis is in front of every batched input. Three cases:
#
# * only ``x`` is batched: a whole slice ``(0, B, 1)`` is put in front of ``index``. The
#   mapped axis stays in front of the result, except when the advanced indices are not
#   adjacent: numpy then puts their broadcast dimensions first, and the mapped axis follows
#   them (``_batch_position``).
# * some index arrays are batched and ``x`` is shared: the mapped axis becomes one more
#   dimension of the broadcast index shape (batched arrays get unit axes after it so they
#   line up), and lands where numpy puts the advanced dimensions.
# * ``x`` and some index arrays are batched: as JAX does, an iota over the batch
#   (``arange(B)`` shaped ``(B, 1, ..., 1)``) indexes the mapped axis of ``x`` as one more
#   advanced index, so example ``b`` reads only its own slice. The result has the advanced
#   dimensions first; when the example's result has basic dimensions before them, those
#   are permuted back into place (``_advanced_order``).
#
# Dynamic slices with batched start indices are the same gather (scatter) with an index
# array per axis: the clamped start plus ``arange(size)``.


def _constant(values, like):
    """``values`` (a numpy array) as a Tensor on the device of ``like``."""
    device = like.device if isinstance(like, Tensor) else backend.device_of(like)
    return asarray(values, device=device)


def _iota(size: int, ndim: int, like):
    """``arange(size)`` shaped ``(size, 1, ..., 1)`` with ``ndim`` dimensions."""
    return _constant(np.arange(size, dtype=np.int64).reshape((size,) + (1,) * (ndim - 1)), like)


def _example_avals(arrays: tuple, dims: tuple) -> tuple:
    """The index arrays as one example sees them (the mapped axis left out)."""
    return tuple(
        a if d is None else ShapeDtype(shape_of(a)[1:], np.dtype(a.dtype))
        for a, d in zip(arrays, dims)
    )


def _lifted(arrays: tuple, dims: tuple, rank: int) -> tuple:
    """Batched index arrays ``(B, *s)`` as ``(B, 1, ..., 1, *s)`` of ``rank + 1``
    dimensions, so that their mapped axes line up in front of the broadcast index shape
    (``rank`` is the examples' broadcast rank); shared arrays broadcast as they are."""
    out = []
    for a, d in zip(arrays, dims):
        if d is not None:
            size, *s = shape_of(a)
            if len(s) < rank:
                a = REGISTRY["reshape"](a, shape=(size, *(1,) * (rank - len(s)), *s))
        out.append(a)
    return tuple(out)


def _batch_position(name: str, x_shape: tuple, index: tuple, arrays: tuple) -> int:
    """Where ``x[index]`` puts the axis that the leading entry of ``index`` indexes."""
    _, start, ndim = index_layout(name, x_shape, index, arrays)
    return ndim if start == 0 else 0


def _advanced_order(before: int, adv: int, rank: int) -> tuple:
    """The permutation taking ``(B, *adv_dims, *before_dims, *rest)`` (the iota's layout)
    to ``(B, *before_dims, *adv_dims, *rest)`` (the example's layout)."""
    return (
        0,
        *range(1 + adv, 1 + adv + before),
        *range(1, 1 + adv),
        *range(1 + adv + before, rank),
    )


def _inverse(order: tuple) -> tuple:
    return tuple(np.argsort(order).tolist())


def _permuted(x, order: tuple):
    if order == tuple(range(len(order))):
        return x
    return REGISTRY["permute_dims"](x, axes=order)


def _getitem_batch(op, args, dims, *, index):
    x, arrays = args[0], args[1:]
    xd, adims = dims[0], dims[1:]
    size = batch_size(args, dims)
    if all(d is None for d in adims):
        full = ((0, size, 1), *index)
        out = op(x, *arrays, index=full)
        return moved_to_front(out, _batch_position("getitem", shape_of(x), full, arrays)), 0
    avals = _example_avals(arrays, adims)
    x_shape = shape_of(x)[1:] if xd is not None else shape_of(x)
    _, start, rank = index_layout("getitem", x_shape, index, avals)
    lifted = _lifted(arrays, adims, rank)
    if xd is None:
        out = op(x, *lifted, index=index)
        return moved_to_front(out, start), 0
    out = op(x, _iota(size, rank + 1, x), *lifted, index=(ARRAY, *index))
    return _permuted(out, _advanced_order(start, rank, len(shape_of(out)))), 0


def _values_for(v, vd, size: int, n: int, order: tuple):
    """Scatter values ``v`` (for each example, broadcastable to an ``n``-d target) made to
    broadcast against the batched target whose axes are the example's ``(B, *target)``
    taken in ``order``."""
    if type(v) in (bool, int, float, complex):
        return v
    reshape = REGISTRY["reshape"]
    vs = shape_of(v)[1:] if vd is not None else shape_of(v)
    full = (1,) * (n - len(vs)) + tuple(vs)
    lead = (size,) if vd is not None else (1,)
    identity = order == tuple(range(n + 1))
    if vd is None and identity:
        return v  # broadcasts from the right as it is
    if vs != full or vd is None:
        v = reshape(v, shape=lead + full)
    return _permuted(v, order)


def _scatter_batch(op, args, dims, *, index):
    x, v, arrays = args[0], args[1], args[2:]
    xd, vd, adims = dims[0], dims[1], dims[2:]
    size = batch_size(args, dims)
    x = with_batch(x, xd, size)  # each example writes into its own copy
    if all(d is None for d in adims):
        full = ((0, size, 1), *index)
        target, start, ndim = index_layout(op.name, shape_of(x), full, arrays)
        pos = ndim if start == 0 else 0
        n = len(target) - 1
        order = (*range(1, pos + 1), 0, *range(pos + 1, n + 1))  # the mapped axis to pos
        return op(x, _values_for(v, vd, size, n, order), *arrays, index=full), 0
    avals = _example_avals(arrays, adims)
    target, start, rank = index_layout(op.name, shape_of(x)[1:], index, avals)
    order = _inverse(_advanced_order(start, rank, len(target) + 1))
    values = _values_for(v, vd, size, len(target), order)
    lifted = _lifted(arrays, adims, rank)
    return op(x, values, _iota(size, rank + 1, x), *lifted, index=(ARRAY, *index)), 0


def _winners_batch(op, args, dims, *, index, shape):
    # Only reached with a batched index array: the iota keeps the examples apart, and the
    # writes of each example keep their order, so the same writes win.
    size = batch_size(args, dims)
    avals = _example_avals(args, dims)
    _, start, rank = index_layout("scatter_winners", shape, index, avals)
    lifted = _lifted(args, dims, rank)
    out = op(_iota(size, rank + 1, lifted[0]), *lifted, index=(ARRAY, *index), shape=(size, *shape))
    return _permuted(out, _advanced_order(start, rank, len(shape_of(out)))), 0


def _windows(starts, sdims, x_shape, sizes, like) -> tuple:
    """Index arrays of the clamped blocks ``start + arange(size)``, one per axis, each
    shaped to broadcast against ``(B, *sizes)``."""
    nd = len(x_shape)
    out = []
    for k, (s, sd, n, m) in enumerate(zip(starts, sdims, x_shape, sizes)):
        place = (1,) * (k + 1) + (m,) + (1,) * (nd - k - 1)
        if sd is None and not isinstance(s, Tensor):
            first = min(max(int(s), 0), n - m)
            out.append(_constant(np.arange(first, first + m, dtype=np.int64).reshape(place), like))
            continue
        clamped = minimum(maximum(s, 0), n - m)
        if sd is not None:
            clamped = REGISTRY["reshape"](clamped, shape=(shape_of(clamped)[0],) + (1,) * nd)
        out.append(add(clamped, _constant(np.arange(m, dtype=np.int64).reshape(place), like)))
    return tuple(out)


def _dynamic_slice_batch(op, args, dims, *, slice_sizes):
    x, starts = args[0], args[1:]
    size = batch_size(args, dims)
    x = with_batch(x, dims[0], size)
    if all(d is None for d in dims[1:]):
        return op(x, 0, *starts, slice_sizes=(size, *slice_sizes)), 0
    windows = _windows(starts, dims[1:], shape_of(x)[1:], slice_sizes, x)
    iota = _iota(size, len(slice_sizes) + 1, x)
    return getitem(x, iota, *windows, index=(ARRAY,) * (len(windows) + 1)), 0


def _dus_batch(op, args, dims):
    x, update, starts = args[0], args[1], args[2:]
    size = batch_size(args, dims)
    x = with_batch(x, dims[0], size)
    update = with_batch(update, dims[1], size)
    if all(d is None for d in dims[2:]):
        return op(x, update, 0, *starts), 0
    sizes = shape_of(update)[1:]
    windows = _windows(starts, dims[2:], shape_of(x)[1:], sizes, x)
    iota = _iota(size, len(sizes) + 1, x)
    # The clamped block of one example never repeats a position: a plain scatter.
    return scatter_set(x, update, iota, *windows, index=(ARRAY,) * (len(windows) + 1)), 0


# ------------------------------------------------------------------------ gather


def _getitem_aval(x, *arrays, index):
    shape = _check_index("getitem", x, arrays, index)[0]
    return ShapeDtype(shape, np.dtype(x.dtype))


def unindex(ct, x, arrays: tuple, index: tuple):
    """The transpose of ``x[index]``: ``ct`` added into zeros of ``x``'s shape."""
    zeros = _zeros(x, ct.dtype)
    if arrays:
        return scatter_add(zeros, ct, *arrays, index=index)
    return scatter_set(zeros, ct, index=index)  # basic indices never repeat a position


getitem = defop(
    "getitem",
    kernel=lambda xp, x, *arrays, index: x[index_key(index, arrays)],
    aval=_getitem_aval,
    jvp=LINEAR,
    vjp=lambda ct, out, x, *arrays, index: (unindex(ct, x, arrays, index),),
    batch=_getitem_batch,
    # General numpy indexing (arrays mixed with slices and new axes) is beyond the Array
    # API's integer-array indexing, which array_api_strict enforces: strict=False.
    check=Check(
        shapes=(((4, 3), (3,)),),
        params=(
            {"index": (ARRAY,)},
            {"index": ((3, -1, -2), ARRAY)},
            {"index": (None, ARRAY, 1)},
            {"index": ((0, 4, 2), None, ARRAY)},
        ),
        make_args=_int_index_args,
        strict=False,
    ),
    doc="""Gather ``x[index]`` with numpy's basic and advanced indexing (``x[idx]``).

    ``fnp`` builds the static ``index`` from a Python index (see :mod:`fgrad.ops.indexing`
    for the encoding); integer index arrays are the positional inputs after ``x``. The
    derivative adds the cotangent back at the indexed positions, so repeated indices
    accumulate.

    Args:
        x: Tensor of any shape and dtype.
        *arrays: integer index arrays, one per ``"array"`` entry of ``index``.
        index: the static index structure (tuple).

    Returns:
        Tensor of ``x.dtype``, shaped by numpy's indexing rules.

    Raises:
        IndexError: too many indices, an index out of bounds, or index arrays that do not
            broadcast together.

    Example:
        >>> x = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> x[1]
        Tensor([3., 4.], dtype=float64)
        >>> x[::-1, 0]
        Tensor([3., 1.], dtype=float64)
        >>> x[fnp.array([1, 1, 0])]
        Tensor([[3., 4.],
                [3., 4.],
                [1., 2.]], dtype=float64)
        >>> fgrad.grad(lambda x: fnp.sum(x[fnp.array([0, 0, 1])]))(fnp.array([1.0, 2.0]))
        Tensor([2., 1.], dtype=float64)
    """,
)


# ------------------------------------------------------------------------ scatters


def _scatter_aval(name):
    def rule(x, v, *arrays, index):
        target = _check_index(name, x, arrays, index)[0]
        vs = shape_of(v)
        if not broadcasts_to(vs, target):
            raise ShapeError(
                f"{name}: values of shape {vs} do not broadcast to the indexed shape {target} "
                f"of x{list(shape_of(x))}; give values that shape (or one that broadcasts to it)"
            )
        if dtypes.is_complex(dtypes.result_type(v)) and not dtypes.is_complex(x.dtype):
            raise DTypeError(
                f"{name}: complex values cannot be written into {ShapeDtype(shape_of(x), x.dtype)}; "
                "cast x to a complex dtype first"
            )
        return ShapeDtype(shape_of(x), np.dtype(x.dtype))

    return rule


def _scatter_ufunc_kernel(ufunc: str):
    """The kernel of ``scatter_<ufunc>``: ``x`` with ``x[index]`` combined with ``v``."""

    def kernel(xp, x, v, *arrays, index):
        out = _copy(xp, x)
        key = index_key(index, arrays)
        if arrays:
            # numpy's name (not the Array API's); repeated indices apply in turn, so
            # add accumulates and multiply multiplies every value written there
            getattr(xp, ufunc).at(out, key, v)
        else:
            out[key] = getattr(xp, ufunc)(out[key], v)  # basic indices never repeat
        return out

    return kernel


# The end of the Args section and the Returns and Raises sections of every scatter op.
_SCATTER_DOC = """*arrays: integer index arrays, one per ``"array"`` entry of ``index``.
        index: the static index structure (see :func:`getitem`).

    Returns:
        A new Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ShapeError: ``v`` does not broadcast to the indexed shape.
        IndexError: as :func:`getitem`."""


scatter_add = defop(
    "scatter_add",
    kernel=_scatter_ufunc_kernel("add"),
    aval=_scatter_aval("scatter_add"),
    jvp=(
        lambda t, out, x, v, *arrays, index: t,
        lambda t, out, x, v, *arrays, index: unindex(t, x, arrays, index),
    ),
    vjp=lambda ct, out, x, v, *arrays, index: (ct, getitem(ct, *arrays, index=index)),
    batch=_scatter_batch,
    check=Check(
        shapes=(((4, 3), (3, 3), (3,)),),
        params=({"index": (ARRAY,)}, {"index": (ARRAY, (0, 3, 1))}, {"index": ((1, 4, 1), ARRAY)}),
        make_args=_scatter_args,
        strict=False,  # xp.add.at is numpy's, not the Array API's
    ),
    doc=f"""``x`` with ``v`` added at ``x[index]`` (``x.at[idx].add(v)``); repeats accumulate.

    Args:
        x: Tensor of any shape.
        v: values, broadcastable to the shape of ``x[index]``.
        {_SCATTER_DOC}

    Example:
        >>> fnp.zeros(3).at[fnp.array([0, 0, 2])].add(1.0)
        Tensor([2., 0., 1.], dtype=float64)
    """,
)


def _scatter_set_kernel(xp, x, v, *arrays, index):
    out = _copy(xp, x)
    out[index_key(index, arrays)] = v
    return out


def _set_ct_v(ct, x, arrays, index):
    g = getitem(ct, *arrays, index=index)
    if arrays:  # with repeated indices only the last write lands: only it gets a derivative
        mask = scatter_winners(*arrays, index=index, shape=tuple(x.shape))
        g = multiply(g, astype(mask, dtype=np.dtype(g.dtype)))
    return g


scatter_set = defop(
    "scatter_set",
    kernel=_scatter_set_kernel,
    aval=_scatter_aval("scatter_set"),
    jvp=(
        lambda t, out, x, v, *arrays, index: scatter_set(t, 0, *arrays, index=index),
        lambda t, out, x, v, *arrays, index: scatter_set(
            _zeros(out, t.dtype), t, *arrays, index=index
        ),
    ),
    vjp=lambda ct, out, x, v, *arrays, index: (
        scatter_set(ct, 0, *arrays, index=index),
        _set_ct_v(ct, x, arrays, index),
    ),
    batch=_scatter_batch,
    check=Check(
        shapes=(((4, 3), (3, 3), (3,)),),
        params=(
            {"index": (ARRAY,)},
            {"index": (ARRAY, (2, -1, -1))},
            {"index": ((1, 4, 1), ARRAY)},
        ),
        make_args=_scatter_args,
        strict=False,  # integer arrays mixed with slices: beyond the Array API's indexing
    ),
    doc=f"""``x`` with ``x[index]`` replaced by ``v`` (``x.at[idx].set(v)``).

    When an index repeats, the last write wins (numpy's order) and only that value gets a
    derivative; the derivative in ``x`` is zero at every written position.

    Args:
        x: Tensor of any shape.
        v: values, broadcastable to the shape of ``x[index]``; cast to ``x.dtype``.
        {_SCATTER_DOC}

    Example:
        >>> fnp.zeros(4).at[1:3].set(fnp.array([5.0, 6.0]))
        Tensor([0., 5., 6., 0.], dtype=float64)
    """,
)


scatter_multiply = defop(
    "scatter_multiply",
    kernel=_scatter_ufunc_kernel("multiply"),
    aval=_scatter_aval("scatter_multiply"),
    jvp=(
        lambda t, out, x, v, *arrays, index: scatter_multiply(t, v, *arrays, index=index),
        lambda t, out, x, v, *arrays, index: unindex(
            multiply(getitem(x, *arrays, index=index), t), x, arrays, index
        ),
    ),
    vjp=lambda ct, out, x, v, *arrays, index: (
        scatter_multiply(ct, v, *arrays, index=index),
        getitem(multiply(ct, x), *arrays, index=index),
    ),
    batch=_scatter_batch,
    check=Check(
        shapes=(((4, 3), (3, 3), (3,)),),
        params=({"index": (ARRAY,)}, {"index": ((1, 4, 1), ARRAY)}),
        make_args=lambda rng, shapes: [
            rng.uniform(-2.0, 2.0, shapes[0]),
            rng.uniform(-2.0, 2.0, shapes[1]),
            np.array([2, 0, 1]),
        ],
        strict=False,  # xp.multiply.at is numpy's, not the Array API's
    ),
    doc=f"""``x`` with ``x[index]`` multiplied by ``v`` (``x.at[idx].multiply(v)``).

    The derivative in ``x`` is exact for any index. The derivative in ``v`` assumes that
    each position of ``x`` is written at most once, or that all but one of the values
    written there are constants equal to 1: ``x.at[idx].multiply`` arranges this for
    repeated concrete indices by multiplying in rounds.

    Args:
        x: Tensor of any shape.
        v: values, broadcastable to the shape of ``x[index]``.
        {_SCATTER_DOC}

    Example:
        >>> fnp.ones(3).at[fnp.array([0, 2, 2])].multiply(fnp.array([2.0, 3.0, 4.0]))
        Tensor([ 2.,  1., 12.], dtype=float64)
    """,
)


def _extremal_coefficients(out, x, v, arrays, index):
    """The share of the derivative that ``x`` and each value of ``v`` get in
    ``scatter_min`` / ``scatter_max`` (JAX's ``_scatter_extremal_jvp``).

    At a written position every contender equal to the result (``x``'s element and each
    value written there) gets ``1 / count`` of the derivative, ``count`` being how many
    tie; a position that is not written passes ``x``'s derivative through; a NaN result
    (no contender equals it) passes none.

    Returns:
        ``(cx, cv)``: shares of ``x`` (its shape) and of the values (the indexed shape).
    """
    dtype = np.dtype(out.dtype)
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    one = full_like(x, fill_value=1, dtype=dtype)
    untouched = scatter_set(one, 0, *arrays, index=index)
    wins_x = maximum(astype(equal(x, out), dtype=dtype), untouched)
    wins_v = astype(equal(v, getitem(out, *arrays, index=index)), dtype=dtype)
    count = add(wins_x, unindex(wins_v, x, arrays, index))
    count = maximum(count, 1)  # 0 only at a NaN result, where both shares are 0
    return divide(wins_x, count), divide(wins_v, getitem(count, *arrays, index=index))


def _extremal_jvp_x(t, out, x, v, *arrays, index):
    return multiply(t, _extremal_coefficients(out, x, v, arrays, index)[0])


def _extremal_jvp_v(t, out, x, v, *arrays, index):
    cv = _extremal_coefficients(out, x, v, arrays, index)[1]
    return unindex(multiply(t, cv), out, arrays, index)


def _extremal_vjp(ct, out, x, v, *arrays, index):
    cx, cv = _extremal_coefficients(out, x, v, arrays, index)
    return multiply(ct, cx), multiply(getitem(ct, *arrays, index=index), cv)


def _extremal_args(rng, shapes):
    """Check helper: ``x`` and values drawn apart (no ties: the op has a kink there),
    index arrays with repeated entries."""
    x = rng.permutation(int(np.prod(shapes[0]))).reshape(shapes[0]) * 0.5 - 3.0
    v = rng.permutation(int(np.prod(shapes[1]))).reshape(shapes[1]) * 0.5 - 2.75
    return [x, v] + _int_index_args(rng, (shapes[0],) + shapes[2:])[1:]


def _quiet_nan_kernel(ufunc: str):
    """``_scatter_ufunc_kernel(ufunc)`` without numpy's warning for a NaN compared at a
    repeated index (NaN propagates as in ``xp.minimum``, which does not warn)."""
    kernel = _scatter_ufunc_kernel(ufunc)

    def quiet(xp, x, v, *arrays, index):
        with np.errstate(invalid="ignore"):
            return kernel(xp, x, v, *arrays, index=index)

    return quiet


def _extremal_op(name: str, ufunc: str, word: str, example: str):
    return defop(
        name,
        kernel=_quiet_nan_kernel(ufunc),
        aval=_scatter_aval(name),
        jvp=(_extremal_jvp_x, _extremal_jvp_v),
        vjp=_extremal_vjp,
        batch=_scatter_batch,
        check=Check(
            shapes=(((4, 3), (3, 3), (3,)), ((4, 3), (1,), (5,))),
            params=(
                {"index": (ARRAY,)},
                {"index": (ARRAY, (0, 3, 1))},
                {"index": ((1, 4, 1), ARRAY)},
            ),
            make_args=_extremal_args,
            strict=False,  # xp.<ufunc>.at is numpy's, not the Array API's
        ),
        doc=f"""``x`` with ``x[index]`` replaced by the {word} of it and ``v`` (``x.at[idx].{word[:3]}(v)``).

    Every value written to a position takes part (repeated indices combine, as
    ``jax.lax.scatter_{word[:3]}`` and ``numpy.{ufunc}.at``); NaN propagates.

    The derivative goes to whichever contender is selected: ``x``'s element or the value
    written there. Ties split it evenly among all tied contenders (JAX's convention for
    scatter min/max, as for ``fnp.{ufunc}``); positions not written pass ``x``'s derivative
    through.

    Args:
        x: real Tensor of any shape.
        v: values, broadcastable to the shape of ``x[index]``; cast to ``x.dtype``.
        {_SCATTER_DOC}

    Example:
        {example}
    """,
    )


scatter_min = _extremal_op(
    "scatter_min",
    "minimum",
    "minimum",
    """>>> fnp.zeros(3).at[fnp.array([0, 0, 2])].min(fnp.array([-1.0, -3.0, 2.0]))
        Tensor([-3.,  0.,  0.], dtype=float64)""",
)

scatter_max = _extremal_op(
    "scatter_max",
    "maximum",
    "maximum",
    """>>> fnp.zeros(3).at[fnp.array([0, 0, 2])].max(fnp.array([1.0, 3.0, -2.0]))
        Tensor([3., 0., 0.], dtype=float64)""",
)


def _winners_kernel(xp, *arrays, index, shape):
    target = index_layout("scatter_winners", shape, index, arrays)[0]
    ids = xp.reshape(xp.arange(int(np.prod(target, dtype=np.int64)), dtype=xp.int64), target)
    pos = xp.full(shape, -1, dtype=xp.int64)
    key = index_key(index, arrays)
    pos[key] = ids  # the same write order as scatter_set's kernel: the last write wins
    return pos[key] == ids


def _winners_aval(*arrays, index, shape):
    return ShapeDtype(index_layout("scatter_winners", shape, index, arrays)[0], dtypes.bool_)


scatter_winners = defop(
    "scatter_winners",
    kernel=_winners_kernel,
    aval=_winners_aval,
    batch=_winners_batch,
    nondiff=True,
    check=Check(
        shapes=(((3,),), ((2, 2),)),
        params=(
            {"index": (ARRAY,), "shape": (4, 2)},
            {"index": ((0, 2, 1), ARRAY), "shape": (2, 3)},
        ),
        make_args=lambda rng, shapes: [(np.arange(int(np.prod(s))) % 2).reshape(s) for s in shapes],
        strict=False,  # integer-array assignment with slices: beyond the Array API
    ),
    doc="""Which writes of ``x.at[index].set(v)`` land, for an ``x`` of ``shape``.

    The derivative of :func:`scatter_set` in ``v`` uses it: a value overwritten by a later
    one at the same position (numpy's order) does not reach the output. On cupy, where the
    order of repeated writes is unspecified, this records the order the kernel used.

    Args:
        *arrays: integer index arrays, one per ``"array"`` entry of ``index``.
        index: the static index structure (see :func:`getitem`).
        shape: the shape of the indexed array.

    Returns:
        bool Tensor of the indexed shape: True where the write is the last to its position.

    Example:
        >>> from fgrad.ops.indexing import scatter_winners
        >>> scatter_winners(fnp.array([0, 1, 0]), index=("array",), shape=(2,))
        Tensor([False,  True,  True], dtype=bool)
    """,
)


# ------------------------------------------------------------------------ dynamic slices


def _check_starts(name, x, starts, sizes):
    """ShapeError/DTypeError unless ``starts`` and ``sizes`` describe a block of ``x``."""
    xs = shape_of(x)
    if len(starts) != len(xs) or len(sizes) != len(xs):
        raise ShapeError(
            f"{name}: {ShapeDtype(xs, x.dtype)} needs {len(xs)} start indices and slice sizes, "
            f"got {len(starts)} and {len(sizes)}"
        )
    for s in starts:
        kind = np.dtype(dtypes.result_type(s)).kind
        if shape_of(s) != () or kind not in "iu":
            raise DTypeError(
                f"{name}: start indices must be integer scalars, got {s!r}; pass Python ints "
                "or 0-d integer Tensors"
            )
    for n, k in zip(xs, sizes):
        if not 0 <= k <= n:
            raise ShapeError(f"{name}: slice sizes {tuple(sizes)} do not fit in shape {xs}")


def _dynamic_key(starts, shape, sizes):
    # Clamped like lax.dynamic_slice so the slice stays inside x. int() of a device scalar
    # synchronises (cupy); start indices are scalars, so the copy is tiny.
    return tuple(
        slice(s, s + k)
        for s, k in ((min(max(int(s), 0), n - k), k) for s, n, k in zip(starts, shape, sizes))
    )


def _dynamic_slice_aval(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts, slice_sizes)
    return ShapeDtype(tuple(slice_sizes), np.dtype(x.dtype))


def _dynamic_args(rng, shapes):
    return [rng.uniform(-2.0, 2.0, shapes[0])] + [np.int64(3), -1][: len(shapes) - 1]


dynamic_slice = defop(
    "dynamic_slice",
    kernel=lambda xp, x, *starts, slice_sizes: x[_dynamic_key(starts, x.shape, slice_sizes)],
    aval=_dynamic_slice_aval,
    jvp=LINEAR,
    vjp=lambda ct, out, x, *starts, slice_sizes: (
        dynamic_update_slice(_zeros(x, ct.dtype), ct, *starts),
    ),
    batch=_dynamic_slice_batch,
    check=Check(
        shapes=(((5, 4), (), ()),),
        params=({"slice_sizes": (2, 3)}, {"slice_sizes": (5, 1)}),
        make_args=_dynamic_args,
    ),
    doc="""The block of ``x`` of size ``slice_sizes`` starting at ``start_indices``.

    ``start_indices`` may be traced integer scalars; each is clamped to
    ``[0, x.shape[d] - slice_sizes[d]]`` so the block lies inside ``x``, as in
    ``jax.lax.dynamic_slice``.

    Args:
        x: Tensor of ``n`` dimensions.
        *start_indices: ``n`` integer scalars (Python ints or 0-d integer Tensors).
        slice_sizes: tuple of ``n`` static ints, ``0 <= slice_sizes[d] <= x.shape[d]``.

    Returns:
        Tensor of shape ``slice_sizes`` and ``x.dtype``.

    Raises:
        ShapeError: wrong number of start indices or sizes, or a size larger than ``x``.
        DTypeError: a start index is not an integer scalar.

    Example:
        >>> x = fnp.arange(6.0)
        >>> fnp.dynamic_slice(x, (4,), (3,))  # start clamped to 3
        Tensor([3., 4., 5.], dtype=float64)
    """,
)


def _dus_kernel(xp, x, update, *starts):
    out = _copy(xp, x)
    out[_dynamic_key(starts, x.shape, update.shape)] = update
    return out


def _dus_aval(x, update, *starts):
    us = shape_of(update)
    if len(us) != len(shape_of(x)):
        raise ShapeError(
            f"dynamic_update_slice: update {ShapeDtype(us, update.dtype)} must have as many "
            f"dimensions as x {ShapeDtype(shape_of(x), x.dtype)}"
        )
    _check_starts("dynamic_update_slice", x, starts, us)
    return ShapeDtype(shape_of(x), np.dtype(x.dtype))


dynamic_update_slice = defop(
    "dynamic_update_slice",
    kernel=_dus_kernel,
    aval=_dus_aval,
    jvp=(
        lambda t, out, x, u, *starts: dynamic_update_slice(t, _zeros(u, t.dtype), *starts),
        lambda t, out, x, u, *starts: dynamic_update_slice(_zeros(out, t.dtype), t, *starts),
    ),
    vjp=lambda ct, out, x, u, *starts: (
        dynamic_update_slice(ct, _zeros(u, ct.dtype), *starts),
        dynamic_slice(ct, *starts, slice_sizes=tuple(u.shape)),
    ),
    batch=_dus_batch,
    check=Check(
        shapes=(((5, 4), (2, 3), (), ()), ((5, 4), (5, 1), (), ())),
        make_args=lambda rng, shapes: [
            rng.uniform(-2.0, 2.0, shapes[0]),
            rng.uniform(-2.0, 2.0, shapes[1]),
            np.int64(4),
            1,
        ],
    ),
    doc="""``x`` with the block at ``start_indices`` replaced by ``update``.

    Start indices are clamped as in :func:`dynamic_slice`, so the block lies inside ``x``
    (``jax.lax.dynamic_update_slice``).

    Args:
        x: Tensor of ``n`` dimensions.
        update: Tensor of ``n`` dimensions, each no larger than ``x``'s; cast to ``x.dtype``.
        *start_indices: ``n`` integer scalars (Python ints or 0-d integer Tensors).

    Returns:
        A new Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ShapeError: ``update`` has another number of dimensions or does not fit.
        DTypeError: a start index is not an integer scalar.

    Example:
        >>> fnp.dynamic_update_slice(fnp.zeros(5), fnp.ones(2), (1,))
        Tensor([0., 1., 1., 0., 0.], dtype=float64)
    """,
)
