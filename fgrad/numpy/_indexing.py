"""Indexing under numpy's names: ``x[idx]``, ``x.at[idx]``, take, dynamic slices.

A Python index is parsed here into the static structure the indexing ops take as a param
and the integer index arrays they take as inputs (see :mod:`fgrad.ops.indexing`).
Boolean masks become integer arrays (``nonzero``) while parsing, so they must be concrete:
eager code and ``grad`` are fine, abstract tracing (``make_graph``, ``jit``) is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args, backend, dtypes
from fgrad.core.trace import concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.ops import indexing as _ix
from fgrad.ops.elementwise import add, divide, full_like, multiply, power, subtract
from fgrad.ops.shape import reshape as _reshape
from fgrad.tensor import Tensor, _wrap, as_tensor, asarray

__all__ = [
    "dynamic_slice",
    "dynamic_update_slice",
    "take",
    "take_along_axis",
]

_ARRAY = _ix.ARRAY
_INT_TYPES = (int, np.integer)


# ------------------------------------------------------------------------ parsing


def _mask_error(where: str) -> ConcretizationError:
    return ConcretizationError(
        f"{where}: a boolean mask index gives a result whose shape depends on the mask's "
        "values, so the mask must be concrete; here it is traced (under jit or make_graph it has "
        "no value yet; under vmap each example has its own). Use fnp.where(mask, x, 0) to keep the shape, or index with integer arrays "
        "computed outside the traced function"
    )


def _traced_slice_error(where: str, e: slice, dim: int, shape: tuple) -> ConcretizationError:
    """A slice bound traced by jit: the slice's length would depend on values."""

    def tup(items: list) -> str:
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    starts = tup(["0"] * dim + ["i"] + ["0"] * (len(shape) - dim - 1))
    sizes = tup([str(n) for n in shape[:dim]] + ["size"] + [str(n) for n in shape[dim + 1 :]])
    return ConcretizationError(
        f"{where}: the slice {e} on axis {dim} of a Tensor of shape {shape} has a traced "
        "bound (computed inside jit or make_graph), so the result's length is unknown when "
        "tracing. For a window of static length use "
        f"fnp.dynamic_slice(x, {starts}, {sizes}); "
        "e.g. x[i:i+2] on a 1-D x is fnp.dynamic_slice(x, (i,), (2,)). Or make the bound "
        "static (static_argnums)"
    )


def _index_array(e: Any, x: Any) -> Any:
    """``e`` as an index array on ``x``'s device (Tensors and tracers pass through)."""
    if isinstance(e, Tensor):
        return e
    device = x.device
    if device == backend.CPU:
        return e if type(e) is np.ndarray else np.asarray(e)
    return asarray(e, device=device)


def _mask_arrays(mask: Any, x: Any, where: str) -> tuple:
    """The integer index arrays ``nonzero(mask)`` of a concrete boolean mask."""
    try:
        data = concrete_value(mask) if isinstance(mask, Tensor) else mask
    except ConcretizationError:
        raise _mask_error(where) from None
    if not hasattr(data, "shape"):
        data = np.asarray(data)
    nonzero = backend.namespace_of(data).nonzero(data)
    return tuple(_index_array(a, x) if type(a) is np.ndarray else _wrap(a) for a in nonzero)


def _parse(x: Any, idx: Any, where: str = "x[idx]") -> tuple[tuple, tuple]:
    """Split a Python index into the static ``index`` param and the index arrays."""
    shape = tuple(x.shape)
    if type(idx) is int:  # the common x[i]: skip the general walk
        n = shape[0] if shape else None
        if n is None:
            raise IndexError(f"{where}: too many indices for a 0-d Tensor")
        if not -n <= idx < n:
            raise IndexError(f"{where}: index {idx} is out of bounds for axis 0 with size {n}")
        return (idx % n,), ()
    items = idx if type(idx) is tuple else (idx,)
    # First pass: classify entries and count the axes they consume.
    entries: list = []
    consumed = 0
    ellipsis = False
    for e in items:
        if e is None:
            entries.append(("new", None))
        elif e is Ellipsis:
            if ellipsis:
                raise IndexError(f"{where}: an index can only have a single ellipsis ('...')")
            ellipsis = True
            entries.append(("...", None))
        elif isinstance(e, slice):
            entries.append(("slice", e))
            consumed += 1
        elif isinstance(e, (bool, np.bool_)):
            raise IndexError(
                f"{where}: a Python bool index ({e}) is not supported; use None to add an axis "
                "or a boolean Tensor mask"
            )
        elif isinstance(e, _INT_TYPES):
            entries.append(("int", int(e)))
            consumed += 1
        else:
            if not isinstance(e, Tensor) and not hasattr(e, "dtype"):
                if isinstance(e, (list, tuple)):
                    e = np.asarray(e)
                    if e.size == 0:
                        e = e.astype(np.int64)  # numpy reads [] as an empty integer index
                else:
                    raise IndexError(
                        f"{where}: only integers, slices (':'), ellipsis ('...'), None, and "
                        f"integer or boolean arrays are valid indices, got {type(e).__name__}"
                    )
            kind = np.dtype(e.dtype).kind
            if kind == "b":
                ndim = len(e.shape)
                if ndim == 0:
                    raise IndexError(f"{where}: 0-d boolean indices are not supported")
                entries.append(("mask", e))
                consumed += ndim
            elif kind in "iu":
                entries.append(("array", e))
                consumed += 1
            else:
                raise IndexError(
                    f"{where}: index arrays must be integer or boolean, got dtype {e.dtype}"
                )
    if consumed > len(shape):
        raise IndexError(
            f"{where}: too many indices for a Tensor of shape {shape}: {consumed} indexed "
            f"axes but only {len(shape)} dimensions"
        )
    # Second pass: canonical entries, axis by axis.
    index: list = []
    arrays: list = []
    dim = 0
    for kind, e in entries:
        if kind == "new":
            index.append(None)
        elif kind == "...":
            for _ in range(len(shape) - consumed):
                index.append((0, shape[dim], 1))
                dim += 1
        elif kind == "slice":
            try:
                r = e.indices(shape[dim])
            except ConcretizationError:
                raise _traced_slice_error(where, e, dim, shape) from None
            index.append(r if len(range(*r)) else (0, 0, 1))  # one spelling of "empty"
            dim += 1
        elif kind == "int":
            n = shape[dim]
            if not -n <= e < n:
                raise IndexError(
                    f"{where}: index {e} is out of bounds for axis {dim} with size {n} "
                    f"(Tensor of shape {shape})"
                )
            index.append(e % n)
            dim += 1
        elif kind == "array":
            index.append(_ARRAY)
            arrays.append(_index_array(e, x))
            dim += 1
        else:  # a boolean mask: one integer array per axis it covers
            mshape = tuple(e.shape)
            if mshape != shape[dim : dim + len(mshape)]:
                raise IndexError(
                    f"{where}: boolean index of shape {mshape} does not match the indexed "
                    f"axes {shape[dim : dim + len(mshape)]} of a Tensor of shape {shape}"
                )
            for a in _mask_arrays(e, x, where):
                index.append(_ARRAY)
                arrays.append(a)
                dim += 1
    # Trailing whole slices change nothing: drop them so equal indexes share one param.
    while index and type(index[-1]) is tuple and index[-1] == (0, shape[dim - 1], 1):
        index.pop()
        dim -= 1
    return tuple(index), tuple(arrays)


def _layout(x: Any, index: tuple, arrays: tuple, where: str) -> tuple:
    return _ix.index_layout(where, tuple(x.shape), index, arrays)


def _getitem(x: Any, idx: Any) -> Any:
    """``x[idx]``: numpy's basic and advanced indexing, differentiable in ``x``.

    Ints, slices (negative steps too), None, ``...``, integer arrays (repeated indices
    accumulate in the derivative) and boolean masks (when concrete) are supported.

    Raises:
        IndexError: an index is out of bounds or malformed.
        ConcretizationError: a boolean mask is traced abstractly.

    Example:
        >>> x = fnp.arange(6.0).reshape(2, 3)
        >>> x[:, ::-2]
        Tensor([[2., 0.],
                [5., 3.]], dtype=float64)
        >>> x[x > 2.0]
        Tensor([3., 4., 5.], dtype=float64)
    """
    index, arrays = _parse(x, idx)
    if not index:
        return x
    try:
        return _ix.getitem(x, *arrays, index=index)
    except IndexError as err:
        raise IndexError(f"x[idx] with x of shape {tuple(x.shape)}: {err}") from None


# ------------------------------------------------------------------------ functional updates


class _IndexUpdateHelper:
    """``x.at``: indexing it gives an :class:`_IndexUpdateRef` (JAX's ``x.at[idx]``)."""

    __slots__ = ("x",)

    def __init__(self, x: Any):
        self.x = x

    def __getitem__(self, idx: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.x, idx)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.x!r})"


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates of ``x`` at ``idx``; each returns a new Tensor.

    Every method is differentiable in ``x`` and in ``values``. ``idx`` is any index that
    ``x[idx]`` accepts; ``values`` broadcast to the shape of ``x[idx]`` and are cast to
    ``x.dtype``.
    """

    __slots__ = ("idx", "x")

    def __init__(self, x: Any, idx: Any):
        self.x = x
        self.idx = idx

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.x!r}, {self.idx!r})"

    def _prepare(self, values: Any, where: str) -> tuple:
        index, arrays = _parse(self.x, self.idx, where)
        if not isinstance(values, (Tensor, int, float, complex, bool)):
            values = asarray(values, device=self.x.device)
        vshape = tuple(getattr(values, "shape", ()))
        target = _layout(self.x, index, arrays, where)[0]
        if len(vshape) > len(target) and all(d == 1 for d in vshape[: len(vshape) - len(target)]):
            values = _reshape(values, shape=vshape[len(vshape) - len(target) :])  # as numpy
        return index, arrays, values

    def get(self) -> Any:
        """``x[idx]``.

        Example:
            >>> fnp.arange(4.0).at[1:3].get()
            Tensor([1., 2.], dtype=float64)
        """
        return _getitem(self.x, self.idx)

    def set(self, values: Any) -> Any:
        """``x`` with ``x[idx]`` replaced by ``values``.

        With repeated indices the last value wins (numpy's order) and only it gets a
        derivative; the derivative in ``x`` is zero at the written positions.

        Example:
            >>> fnp.zeros(3).at[fnp.array([0, 2])].set(fnp.array([1.0, 2.0]))
            Tensor([1., 0., 2.], dtype=float64)
        """
        index, arrays, values = self._prepare(values, "x.at[idx].set")
        return _ix.scatter_set(self.x, values, *arrays, index=index)

    def add(self, values: Any) -> Any:
        """``x`` with ``values`` added at ``idx``; repeated indices accumulate.

        Example:
            >>> fnp.zeros(3).at[fnp.array([0, 0, 1])].add(fnp.array([1.0, 2.0, 3.0]))
            Tensor([3., 3., 0.], dtype=float64)
        """
        index, arrays, values = self._prepare(values, "x.at[idx].add")
        return _ix.scatter_add(self.x, values, *arrays, index=index)

    def subtract(self, values: Any) -> Any:
        """``x`` with ``values`` subtracted at ``idx``; repeated indices accumulate.

        Example:
            >>> fnp.ones(2).at[1].subtract(3.0)
            Tensor([ 1., -2.], dtype=float64)
        """
        if not isinstance(values, (Tensor, int, float, complex)):
            values = asarray(values, device=self.x.device)
        return self.add(multiply(-1, values))

    def multiply(self, values: Any, *, unique_indices: bool = False) -> Any:
        """``x`` with ``x[idx]`` multiplied by ``values``; repeated indices multiply in turn.

        Repeated concrete indices are applied in rounds, one write per position each, so
        the derivative in ``values`` is exact (the product rule over every factor).

        Args:
            values: factors, broadcastable to the shape of ``x[idx]``.
            unique_indices: promise that no position is indexed twice. Needed only for
                index arrays that are traced abstractly (``make_graph``, ``jit``), whose
                repeats cannot be checked.

        Raises:
            ConcretizationError: abstractly traced index arrays without ``unique_indices``.

        Example:
            >>> x = fnp.array([1.0, 2.0])
            >>> x.at[fnp.array([0, 0])].multiply(fnp.array([3.0, 4.0]))
            Tensor([12.,  2.], dtype=float64)
        """
        where = "x.at[idx].multiply"
        index, arrays, values = self._prepare(values, where)
        if unique_indices or not _may_repeat(arrays):
            return _ix.scatter_multiply(self.x, values, *arrays, index=index)
        rounds = _rounds(self.x, index, _host_arrays(arrays, where))
        if rounds is None:
            return _ix.scatter_multiply(self.x, values, *arrays, index=index)
        out = self.x
        target, start, ndim = _layout(self.x, index, arrays, where)
        dtype = self.x.dtype if np.dtype(self.x.dtype).kind in "fc" else np.float64
        for mask in rounds:
            m = mask.reshape((1,) * start + mask.shape + (1,) * (len(target) - start - ndim))
            m = asarray(m.astype(dtype), device=self.x.device)
            factor = add(multiply(values, m), subtract(1, m))  # values here, 1 elsewhere
            out = _ix.scatter_multiply(out, factor, *arrays, index=index)
        return out

    mul = multiply  # JAX's alias

    def divide(self, values: Any, *, unique_indices: bool = False) -> Any:
        """``x`` with ``x[idx]`` divided by ``values``; repeated indices divide in turn.

        Example:
            >>> fnp.ones(2).at[0].divide(4.0)
            Tensor([0.25, 1.  ], dtype=float64)
        """
        return self.multiply(divide(1.0, values), unique_indices=unique_indices)

    def power(self, values: Any, *, unique_indices: bool = False) -> Any:
        """``x`` with ``x[idx]`` raised to the power ``values`` (``x[idx] **= values``).

        As in JAX, the exponents written to one position multiply, and the result is
        ``x ** e`` with ``e`` those products at ``idx`` and 1 elsewhere: repeated indices
        raise in turn, ``(x ** a) ** b == x ** (a * b)``. Differentiable in ``x`` and
        ``values`` as :func:`fgrad.numpy.power` (real ``x < 0`` needs integer exponents).

        Args:
            values: exponents, broadcastable to the shape of ``x[idx]``.
            unique_indices: as in :meth:`multiply` (needed only for abstractly traced index
                arrays).

        Raises:
            ConcretizationError: abstractly traced index arrays without ``unique_indices``.

        Example:
            >>> x = fnp.array([2.0, 3.0, 4.0])
            >>> x.at[fnp.array([0, 0, 2])].power(fnp.array([2.0, 3.0, 0.5]))
            Tensor([64.,  3.,  2.], dtype=float64)
        """
        where = "x.at[idx].power"
        ones = _IndexUpdateRef(
            full_like(self.x, fill_value=1, dtype=np.dtype(self.x.dtype)), self.idx
        )
        return power(self.x, ones._multiply(values, unique_indices, where))

    def min(self, values: Any) -> Any:
        """``x`` with ``x[idx]`` replaced by ``minimum(x[idx], values)``.

        Repeated indices combine every value written there (``jax.lax.scatter_min``,
        ``numpy.minimum.at``). The derivative goes to the selected contender (``x``'s
        element or a value); ties split it evenly (JAX's convention).

        Args:
            values: broadcastable to the shape of ``x[idx]``; cast to ``x.dtype``.

        Raises:
            ShapeError: ``values`` does not broadcast to the indexed shape.

        Example:
            >>> x = fnp.array([1.0, 5.0, 3.0])
            >>> x.at[fnp.array([0, 1, 1])].min(fnp.array([2.0, 4.0, 0.0]))
            Tensor([1., 0., 3.], dtype=float64)
        """
        index, arrays, values = self._prepare(values, "x.at[idx].min")
        return _ix.scatter_min(self.x, values, *arrays, index=index)

    def max(self, values: Any) -> Any:
        """``x`` with ``x[idx]`` replaced by ``maximum(x[idx], values)``.

        Repeated indices combine every value written there (``jax.lax.scatter_max``,
        ``numpy.maximum.at``). The derivative goes to the selected contender (``x``'s
        element or a value); ties split it evenly (JAX's convention).

        Args:
            values: broadcastable to the shape of ``x[idx]``; cast to ``x.dtype``.

        Raises:
            ShapeError: ``values`` does not broadcast to the indexed shape.

        Example:
            >>> x = fnp.array([1.0, 5.0, 3.0])
            >>> x.at[fnp.array([0, 1, 1])].max(fnp.array([2.0, 4.0, 6.0]))
            Tensor([2., 6., 3.], dtype=float64)
        """
        index, arrays, values = self._prepare(values, "x.at[idx].max")
        return _ix.scatter_max(self.x, values, *arrays, index=index)

    def apply(self, func: Any, *, unique_indices: bool = False) -> Any:
        """``x`` with the elementwise function ``func`` applied at ``idx`` (``func.at(x, idx)``).

        As in JAX (and numpy's ``ufunc.at``), a position indexed ``k`` times gets ``func``
        applied ``k`` times. ``func`` maps a Tensor to a Tensor of the same shape
        elementwise (a unary ufunc such as ``fnp.sin``, or a lambda); its result is cast to
        ``x.dtype``. Unlike JAX's ``scatter_apply``, the result is differentiable in ``x``
        (through ``func``).

        Args:
            func: unary elementwise function of Tensors.
            unique_indices: promise that no position is indexed twice (needed only for
                index arrays traced abstractly by ``jit``/``make_graph``).

        Raises:
            ConcretizationError: abstractly traced index arrays without ``unique_indices``.
            ShapeError: ``func`` changed the shape of its argument.

        Example:
            >>> x = fnp.array([1.0, 2.0, 3.0])
            >>> x.at[fnp.array([0, 0, 2])].apply(lambda v: v * 10.0)
            Tensor([100.,   2.,  30.], dtype=float64)
        """
        where = "x.at[idx].apply"
        index, arrays = _parse(self.x, self.idx, where)
        if not index:
            index = ((0, self.x.shape[0], 1),) if self.x.ndim else (None,)
        if unique_indices or not _may_repeat(arrays):
            return _apply_once(self.x, func, index, arrays, where)
        datas = _host_arrays(arrays, where)
        rounds = _rounds(self.x, index, datas)
        if rounds is None:
            return _apply_once(self.x, func, index, arrays, where)
        out = self.x
        bcast = np.broadcast_arrays(*datas)
        for mask in rounds:  # round r applies func once more where r + 1 writes land
            picked = tuple(_index_array(b[mask], self.x) for b in bcast)
            out = _apply_once(out, func, index, picked, where)
        return out

    def _multiply(self, values: Any, unique_indices: bool, where: str) -> Any:
        try:
            return self.multiply(values, unique_indices=unique_indices)
        except ConcretizationError as err:
            raise ConcretizationError(str(err).replace("x.at[idx].multiply", where)) from None


def _may_repeat(arrays: tuple) -> bool:
    """Whether index arrays could write a position twice: they pick more than one
    position (their broadcast shape, known while tracing, has more than one element)."""
    if not arrays:
        return False  # basic indices never repeat a position
    try:
        shape = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    except ValueError:
        return True  # the op raises its own IndexError
    return int(np.prod(shape)) > 1


def _host_arrays(arrays: tuple, where: str) -> list:
    """The concrete index arrays as numpy arrays, or a ConcretizationError naming the fix."""
    try:
        return [np.asarray(_wrap(concrete_value(a))) for a in arrays]  # to the host
    except ConcretizationError:
        raise ConcretizationError(
            f"{where}: the index arrays are traced abstractly (jit, make_graph) or mapped "
            "by vmap, so repeated indices cannot be detected; pass unique_indices=True if "
            "no position is indexed twice, or compute the indices outside the traced function"
        ) from None


def _apply_once(x: Any, func: Any, index: tuple, arrays: tuple, where: str) -> Any:
    """``x.at[index].set(func(x[index]))`` for indices that write each position once."""
    picked = _ix.getitem(x, *arrays, index=index)
    result = func(picked)
    if tuple(getattr(result, "shape", ())) != tuple(picked.shape):
        raise ShapeError(
            f"{where}: func must be elementwise, keeping the shape {tuple(picked.shape)} of "
            f"x[idx]; it returned shape {tuple(getattr(result, 'shape', ()))}"
        )
    return _ix.scatter_set(x, result, *arrays, index=index)


def _rounds(x: Any, index: tuple, datas: list) -> list | None:
    """Masks over the broadcast index shape that split repeated targets into rounds.

    Round ``r`` holds the ``r``-th write to each position (in C order), so within a round
    every position is written at most once. None when no position repeats.
    """
    shape = tuple(x.shape)
    d = 0
    arrs = iter(datas)
    adv = []
    for e in index:
        if e is None:
            continue
        if isinstance(e, str):
            adv.append((next(arrs), shape[d]))
        d += 1
    dims = tuple(n for _, n in adv)
    bcast = np.broadcast_arrays(*[a for a, _ in adv])
    if 0 in dims or bcast[0].size == 0:
        return None  # nothing is written (or the kernel raises IndexError)
    ids = np.ravel_multi_index(tuple(b.reshape(-1) % n for b, n in zip(bcast, dims)), dims)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_ids)) + 1]
    counts = np.diff(np.r_[starts, sorted_ids.size])
    if counts.max() == 1:
        return None
    rank_sorted = np.arange(sorted_ids.size) - np.repeat(starts, counts)
    rank = np.empty_like(rank_sorted)
    rank[order] = rank_sorted
    bshape = bcast[0].shape
    return [(rank == r).reshape(bshape) for r in range(int(counts.max()))]


def _at(x: Any) -> _IndexUpdateHelper:
    """``x.at[idx]``: functional updates ``set``, ``add``, ``subtract``, ``multiply``
    (alias ``mul``), ``divide``, ``power``, ``min``, ``max``, ``apply`` and ``get``, each
    returning a new Tensor (Tensors are immutable), as JAX's ``x.at``.

    Example:
        >>> x = fnp.zeros(3)
        >>> x.at[1].set(5.0)
        Tensor([0., 5., 0.], dtype=float64)
        >>> fgrad.grad(lambda v: fnp.sum(x.at[0].add(v) ** 2))(2.0)
        Tensor(4., dtype=float64)
    """
    return _IndexUpdateHelper(x)


# ------------------------------------------------------------------------ take


def _norm_axis(axis: int, ndim: int, where: str) -> int:
    axis = _args.index(axis, where, "axis")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{where}: axis {axis} is out of range for a Tensor of {ndim} dimensions")
    return axis % ndim


def _as_tensor(x: Any, fn: str = "asarray", arg: str = "x") -> Any:
    return as_tensor(x, fn, arg)


def take(
    a: Any, indices: Any, axis: int | None = None, out: Any = None, mode: str | None = None
) -> Any:
    """Elements of ``a`` at integer ``indices`` along ``axis`` (numpy's ``take``).

    Args:
        a: Tensor of any shape.
        indices: integer Tensor or array of any shape; repeats are allowed (their
            derivatives accumulate).
        axis: the axis to index; None indexes the flattened ``a``.
        out: must be None (Tensors are immutable).
        mode: None or ``"raise"`` (out-of-range indices raise IndexError), ``"wrap"``
            (indices wrap around) or ``"clip"`` (clipped to the valid range); the last two
            need concrete indices.

    Returns:
        Tensor of shape ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``.

    Raises:
        IndexError: an index is out of range (mode ``"raise"``).
        ShapeError: ``axis`` is out of range.
        DTypeError: ``a`` is not numeric, ``indices`` not integers (as numpy's ``take``,
            which refuses to cast floats), or ``axis`` not an int.
        ValueError: an unknown ``mode``.

    Example:
        >>> fnp.take(fnp.array([[1.0, 2.0], [3.0, 4.0]]), fnp.array([1, 1]), axis=1)
        Tensor([[2., 2.],
                [4., 4.]], dtype=float64)
    """
    if out is not None:
        raise TypeError(
            "take: out= is not supported: Tensors are immutable; use the returned Tensor "
            "(functional style)"
        )
    a = _as_tensor(a, "take")
    if axis is None:
        a = _reshape(a, shape=(a.size,))
        axis = 0
    axis = _norm_axis(axis, a.ndim, "take")
    _args.choice(mode, "take", "mode", ("raise", "wrap", "clip"), none_ok=True)
    indices = _index_array_arg(indices, "take")
    if mode in ("wrap", "clip"):
        n = a.shape[axis]
        data = np.asarray(indices)
        indices = data % n if mode == "wrap" else np.clip(data, 0, n - 1)
    return _named_getitem(a, (slice(None),) * axis + (indices,), "take")


def _named_getitem(x: Any, index: tuple, where: str) -> Any:
    """``x[index]``, its IndexError (an index out of range, as numpy's) naming ``where``."""
    try:
        return _getitem(x, index)
    except IndexError as err:
        message = str(err)
        if message.startswith("x[idx]"):
            message = message.split(": ", 1)[-1]
        raise IndexError(f"{where}: {message}") from None


def _index_array_arg(indices: Any, where: str = "take") -> Any:
    if isinstance(indices, (Tensor, np.ndarray)) or hasattr(indices, "dtype"):
        if np.dtype(indices.dtype).kind not in "iu":
            raise DTypeError(
                f"{where}: indices must be integers, got dtype {indices.dtype}; cast them "
                "(indices.astype(int)) if the values are whole numbers"
            )
        return indices
    if isinstance(indices, (bool, np.bool_)):
        raise DTypeError(f"{where}: indices must be integers, got {indices!r}")
    try:
        data = np.asarray(indices)
    except (TypeError, ValueError):
        data = np.asarray(None)
    if data.dtype.kind not in "iu":
        raise DTypeError(f"{where}: indices must be integers, got {_args.describe(indices)}")
    return data


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1) -> Any:
    """Pick ``arr``'s elements at ``indices`` along ``axis`` (numpy's ``take_along_axis``).

    Args:
        arr: Tensor of ``n`` dimensions.
        indices: integer Tensor of ``n`` dimensions (1 when ``axis`` is None), broadcasting
            against ``arr`` on the other axes; typically from ``argsort`` or ``argmax`` with
            ``keepdims``.
        axis: the axis to pick along (the last by default, as numpy 2's); None works on
            the flattened ``arr``.

    Returns:
        Tensor of the broadcast shape of ``arr`` and ``indices`` with ``axis`` sized as in
        ``indices``.

    Raises:
        ShapeError: ``indices`` has another number of dimensions, or ``axis`` is out of range.
        DTypeError: ``arr`` is not numeric, ``indices`` not integers, or ``axis`` not an int.

    Example:
        >>> arr = fnp.array([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
        >>> fnp.take_along_axis(arr, fnp.array([[1], [0]]), axis=1)
        Tensor([[30.],
                [60.]], dtype=float64)
    """
    arr = _as_tensor(arr, "take_along_axis")
    indices = _index_array_arg(indices, "take_along_axis")
    if axis is None:
        arr = _reshape(arr, shape=(arr.size,))
        axis = 0
    if len(indices.shape) != arr.ndim:
        raise ShapeError(
            f"take_along_axis: indices of shape {tuple(indices.shape)} must have as many "
            f"dimensions as arr of shape {tuple(arr.shape)}"
        )
    axis = _norm_axis(axis, arr.ndim, "take_along_axis")
    idx = []
    for d, n in enumerate(arr.shape):
        if d == axis:
            idx.append(indices)
        else:
            shape = (1,) * d + (n,) + (1,) * (arr.ndim - d - 1)
            idx.append(np.arange(n).reshape(shape))
    return _named_getitem(arr, tuple(idx), "take_along_axis")


# ------------------------------------------------------------------------ dynamic slices


def _starts(start_indices: Any, where: str) -> tuple:
    if isinstance(start_indices, Tensor) or hasattr(start_indices, "shape"):
        if len(start_indices.shape) != 1:
            raise ShapeError(f"{where}: start_indices must be a sequence or a 1-D integer Tensor")
        if np.dtype(start_indices.dtype).kind not in "iu":
            raise DTypeError(
                f"{where}: start_indices must be integers, got dtype {start_indices.dtype}"
            )
        return tuple(start_indices[i] for i in range(start_indices.shape[0]))
    if isinstance(start_indices, (str, bytes, dict)) or not hasattr(start_indices, "__iter__"):
        raise DTypeError(
            f"{where}: start_indices must be a sequence of integer scalars or a 1-D integer "
            f"Tensor, got {_args.describe(start_indices)}"
        )
    out = []
    for s in start_indices:
        if isinstance(s, Tensor):  # maybe traced: an integer scalar
            if tuple(s.shape) != () or not dtypes.is_integer(s.dtype):
                raise DTypeError(f"{where}: start_indices must be integer scalars, got {s.aval}")
            out.append(s)
        else:
            out.append(_args.index(s, where, "start_indices", what="integer scalars"))
    return tuple(out)


def dynamic_slice(x: Any, start_indices: Any, slice_sizes: Any) -> Any:
    """The block of ``x`` of size ``slice_sizes`` at ``start_indices`` (``lax.dynamic_slice``).

    Start indices may be traced integer scalars (computed inside ``jit``); each is clamped
    to ``[0, x.shape[d] - slice_sizes[d]]`` so the block lies inside ``x``.

    Args:
        x: Tensor of ``n`` dimensions.
        start_indices: ``n`` integer scalars (ints or 0-d integer Tensors), or a 1-D integer
            Tensor.
        slice_sizes: ``n`` static ints.

    Returns:
        Tensor of shape ``slice_sizes`` and ``x.dtype``.

    Raises:
        ShapeError: wrong number of start indices or sizes, or a size larger than ``x``.
        DTypeError: ``x`` is not numeric, or a start index or size is not an int.

    Example:
        >>> x = fnp.arange(12.0).reshape(3, 4)
        >>> fnp.dynamic_slice(x, (1, 2), (2, 2))
        Tensor([[ 6.,  7.],
                [10., 11.]], dtype=float64)
    """
    x = _as_tensor(x, "dynamic_slice")
    if _args._int_or_none(slice_sizes) is not None:
        raise DTypeError(
            f"dynamic_slice: slice_sizes must be a sequence of ints, one per axis, got "
            f"{_args.describe(slice_sizes)}"
        )
    sizes = _args.shape(slice_sizes, "dynamic_slice", "slice_sizes")
    starts = _starts(start_indices, "dynamic_slice")
    _ix.dynamic_slice.abstract_eval(x, *starts, slice_sizes=sizes)  # the kernel would not check
    return _ix.dynamic_slice(x, *starts, slice_sizes=sizes)


def dynamic_update_slice(x: Any, update: Any, start_indices: Any) -> Any:
    """``x`` with the block at ``start_indices`` replaced by ``update`` (``lax.dynamic_update_slice``).

    Start indices may be traced integer scalars; they are clamped as in
    :func:`dynamic_slice` so the block lies inside ``x``. Differentiable in ``x`` and
    ``update``.

    Args:
        x: Tensor of ``n`` dimensions.
        update: Tensor of ``n`` dimensions that fits inside ``x``; cast to ``x.dtype``.
        start_indices: ``n`` integer scalars, or a 1-D integer Tensor.

    Returns:
        A new Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ShapeError: ``update`` has another number of dimensions or does not fit.
        DTypeError: an input is not numeric, or a start index is not an int.

    Example:
        >>> fnp.dynamic_update_slice(fnp.zeros((2, 3)), fnp.ones((1, 2)), (1, 1))
        Tensor([[0., 0., 0.],
                [0., 1., 1.]], dtype=float64)
    """
    x = _as_tensor(x, "dynamic_update_slice")
    update = _as_tensor(update, "dynamic_update_slice", "update")
    starts = _starts(start_indices, "dynamic_update_slice")
    _ix.dynamic_update_slice.abstract_eval(x, update, *starts)  # raises on a bad fit
    return _ix.dynamic_update_slice(x, update, *starts)
