"""Collectives over a named axis, JAX-style: psum, pmean, pmax, pmin, all_gather, axis_index.

An axis name is bound by ``fgrad.vmap(f, axis_name="batch")`` (the axis is the mapped
examples) or by ``fgrad.distributed.spmd(f, axis_name="data")`` (the axis is the processes
of an MPI group). ``psum(x, name)`` is the sum of ``x`` over every member of that axis,
given to every member; the same function runs under either binding, so a data-parallel
step can be checked under ``vmap`` on one process and run under ``spmd`` on many.

How it works: the public functions look the name up (``transforms/batching.py``'s axis
stack) once, when they are called, and bind an op whose params say the axis: its name,
size and, for processes, the group. So an op recorded by ``jit`` keeps its axis when the
program runs later, outside the binding.

* The vmap that binds the name reduces over its mapped axis (``COLLECTIVE_RULES``).
* Any other vmap maps the op over its own axis, as an elementwise op.
* The kernel runs the MPI (or NCCL) collective for a process axis. For a vmap axis the
  kernel only ever sees values that every example shares (a value that depends on the
  mapped inputs reaches the vmap's rule first): ``psum`` of a shared ``x`` is
  ``axis_size * x``, ``pmax`` is ``x``, ``all_gather`` stacks ``axis_size`` copies.

Derivatives, and the transpose convention: a collective is a function of the values of
*all* members, ``y_i = sum_j x_j``. Its transpose is taken with the inner product summed
over members too, which makes ``psum``'s transpose ``psum`` (JAX's convention under
``pmap``): ``grad`` of a function that calls a collective gives, on each member, the
derivative of the *sum over members* of that function's outputs. That is the only choice
under which ``vmap(grad(f), axis_name=n)`` equals ``grad`` of the sum of
``vmap(f, axis_name=n)``, and under which ``spmd`` and ``vmap`` give the same gradients, as
the checks against finite differences in ``tests/distributed`` show. A consequence: for a
replicated loss ``pmean(local_loss)``, ``grad`` gives each rank its local gradient (the
sum over ranks counts the replicated loss ``size`` times); average it with ``pmean`` (or
``fgrad.distributed.average_gradients``), as one does under JAX's pmap.
``all_gather`` transposes to a reduce-scatter (``all_gather_transpose``); ``pmax``'s
derivative goes to the members holding the maximum, shared equally on ties.

References: JAX's ``jax.lax.psum``/``pmean``/``pmax``/``all_gather``/``axis_index`` and
their batching and transpose rules (``jax/_src/lax/parallel.py``); MPI 4.0 standard,
section 6.9 (``MPI_Allreduce``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import numpy as fnp
from fgrad import tree
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import ShapeDtype, Tensor, asarray
from fgrad.transforms import batching

__all__ = ["all_gather", "axis_index", "pmax", "pmean", "pmin", "psum"]

_NUMBERS = (bool, int, float, complex)


# ------------------------------------------------------------------------ kernels


def _scaled(xp, x, n):
    return xp.asarray(x * n)


def _psum_kernel(xp, x, *, axis_name, axis_size, group):
    if group is None:  # a value every example of a vmap shares: the sum of size copies
        return _scaled(xp, x, axis_size)
    return group.all_sum(x)


def _pmax_kernel(xp, x, *, axis_name, axis_size, group):
    if group is None:
        return xp.asarray(x, copy=True)
    return group.all_max(x)


def _gather_kernel(xp, x, *, axis_name, axis_size, group, axis, tiled):
    parts = [x] * axis_size if group is None else list(group.all_gather(x))
    if tiled:
        concat = getattr(xp, "concat", None) or xp.concatenate  # the Array API's name, numpy's
        return concat(parts, axis=axis)
    return xp.stack(parts, axis=axis)


def _gather_transpose_kernel(xp, ct, *, axis_name, axis_size, group, axis, tiled):
    if group is None:  # all_gather of a shared value stacks copies: sum them back
        if tiled:
            shape = ct.shape
            ct = xp.reshape(ct, (*shape[:axis], axis_size, shape[axis] // axis_size, *shape[axis + 1 :]))
        return xp.asarray(xp.sum(ct, axis=axis), dtype=ct.dtype)
    total = group.all_sum(ct)
    if not tiled:
        index = (slice(None),) * axis + (group.rank,)
    else:
        m = ct.shape[axis] // axis_size
        index = (slice(None),) * axis + (slice(group.rank * m, (group.rank + 1) * m),)
    return xp.asarray(total[index], copy=True)


# ------------------------------------------------------------------------ shape rules


def _numeric(name: str, x: ShapeDtype, kinds: str) -> None:
    if np.dtype(x.dtype).kind not in kinds:
        raise DTypeError(f"{name}: needs a numeric array ({kinds!r} kinds), got {x}")


def _same_aval(name: str, kinds: str):
    def rule(x, *, axis_name, axis_size, group):
        x = x if isinstance(x, ShapeDtype) else ShapeDtype((), np.result_type(x))
        _numeric(name, x, kinds)
        return ShapeDtype(tuple(x.shape), x.dtype)

    return rule


def _gather_aval(x, *, axis_name, axis_size, group, axis, tiled):
    _numeric("all_gather", x, "iufc")
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return ShapeDtype(tuple(shape), x.dtype)


def _gather_transpose_aval(ct, *, axis_name, axis_size, group, axis, tiled):
    shape = list(ct.shape)
    if axis >= len(shape) or (shape[axis] % axis_size if tiled else shape[axis] != axis_size):
        raise ShapeError(
            f"all_gather_transpose: axis {axis} of {ct} must be "
            f"{'a multiple of ' if tiled else ''}the axis size {axis_size}"
        )
    if tiled:
        shape[axis] //= axis_size
    else:
        del shape[axis]
    return ShapeDtype(tuple(shape), ct.dtype)


# ------------------------------------------------------------------------ vmap rules


def _mapped(op, args, dims, **params):
    """Under a vmap whose axis the op does not name: the op per example, elementwise."""
    return op(args[0], **params), 0


def _mapped_shifted(op, args, dims, *, axis, **params):
    return op(args[0], axis=axis + 1, **params), 0


def _psum_over(val, size, *, axis_name, axis_size, group):
    return fnp.sum(val, axis=0).astype(val.dtype), None


def _pmax_over(val, size, *, axis_name, axis_size, group):
    return fnp.max(val, axis=0), None


def _gather_over(val, size, *, axis_name, axis_size, group, axis, tiled):
    out = fnp.moveaxis(val, 0, axis)  # the members' axis becomes the gathered one
    if tiled:
        shape = tuple(out.shape)
        out = fnp.reshape(out, (*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2 :]))
    return out, None


def _gather_transpose_over(val, size, *, axis_name, axis_size, group, axis, tiled):
    total = fnp.sum(val, axis=0).astype(val.dtype)  # one value for every member
    if tiled:
        shape = tuple(total.shape)
        total = fnp.reshape(total, (*shape[:axis], size, shape[axis] // size, *shape[axis + 1 :]))
    return fnp.moveaxis(total, axis, 0), 0  # member i gets slice i


# ------------------------------------------------------------------------ derivatives


def _pmax_share(x, out, params):
    """Where ``x`` holds the maximum over members, as a float 0/1 mask, and the count."""
    mask = fnp.equal(x, out).astype(out.dtype)
    return mask, psum_op(mask, **params)


def _pmax_jvp(t, out, x, **params):
    mask, count = _pmax_share(x, out, params)
    return psum_op(t * mask, **params) / count


def _pmax_vjp(ct, out, x, **params):
    mask, count = _pmax_share(x, out, params)
    return psum_op(ct, **params) * mask / count


def _params() -> Any:
    return ({"axis_name": "i", "axis_size": 3, "group": None},)


def _gather_params() -> Any:
    return tuple(
        {"axis_name": "i", "axis_size": 3, "group": None, "axis": a, "tiled": t}
        for a, t in ((0, False), (1, False), (0, True))
    )


_AXIS_DOC = """

    Args:
        x: Tensor.
        axis_name: the axis, bound by ``fgrad.vmap(..., axis_name=)`` or
            ``fgrad.distributed.spmd``.
        axis_size: the number of members of the axis.
        group: the process group of an ``spmd`` axis, None for a vmap's.

    The public function is ``fgrad.lax.{name}``, which looks the axis up by name.

    Example:
        >>> {example}
        {result}
"""

psum_op = defop(
    "psum",
    kernel=_psum_kernel,
    aval=_same_aval("psum", "iufc"),
    jvp=LINEAR,
    vjp=(lambda ct, out, x, **params: psum_op(ct, **params),),
    batch=_mapped,
    check=Check(params=_params),
    doc="Sum of ``x`` over the members of a named axis (the op of ``fgrad.lax.psum``)."
    + _AXIS_DOC.format(
        name="psum",
        example='fgrad.vmap(lambda x: fgrad.lax.psum(x, "i"), axis_name="i")(fnp.array([1.0, 2.0]))',
        result="Tensor([3., 3.], dtype=float64)",
    ),
    vjp_reads=(),
)

pmax_op = defop(
    "pmax",
    kernel=_pmax_kernel,
    aval=_same_aval("pmax", "iuf"),
    jvp=(_pmax_jvp,),
    vjp=(_pmax_vjp,),
    batch=_mapped,
    check=Check(params=_params),
    doc="Maximum of ``x`` over the members of a named axis (the op of ``fgrad.lax.pmax``)."
    + _AXIS_DOC.format(
        name="pmax",
        example='fgrad.vmap(lambda x: fgrad.lax.pmax(x, "i"), axis_name="i")(fnp.array([1.0, 2.0]))',
        result="Tensor([2., 2.], dtype=float64)",
    ),
)

all_gather_op = defop(
    "all_gather",
    kernel=_gather_kernel,
    aval=_gather_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, **params: all_gather_transpose_op(ct, **params),),
    batch=_mapped_shifted,
    check=Check(shapes=(((2,),), ((2, 3),)), params=_gather_params),
    doc="Every member's ``x``, stacked (or, tiled, concatenated) along ``axis`` (the op of "
    "``fgrad.lax.all_gather``)."
    + _AXIS_DOC.format(
        name="all_gather",
        example='fgrad.vmap(lambda x: fgrad.lax.all_gather(x, "i"), axis_name="i")(fnp.array([1.0, 2.0]))',
        result="Tensor([[1., 2.], [1., 2.]], dtype=float64)",
    ),
    vjp_reads=(),
)

all_gather_transpose_op = defop(
    "all_gather_transpose",
    kernel=_gather_transpose_kernel,
    aval=_gather_transpose_aval,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, **params: all_gather_op(ct, **params),),
    batch=_mapped_shifted,
    check=Check(shapes=(((3, 6),),), params=lambda: tuple(
        {"axis_name": "i", "axis_size": 3, "group": None, "axis": a, "tiled": t}
        for a, t in ((0, False), (1, True), (0, True))
    )),
    doc="The transpose of ``all_gather`` (a reduce-scatter): member ``i`` gets slice ``i`` "
    "along ``axis`` of the sum over members of ``ct``; ``all_gather``'s VJP."
    + _AXIS_DOC.format(
        name="all_gather's VJP",
        example='fgrad.grad(lambda x: fnp.sum(fgrad.vmap(lambda v: fgrad.lax.all_gather(v, "i")[0] * v, axis_name="i")(x)))(fnp.array([1.0, 2.0]))',
        result="Tensor([4., 1.], dtype=float64)",
    ),
    vjp_reads=(),
)

for _op, _rule in (
    (psum_op, _psum_over),
    (pmax_op, _pmax_over),
    (all_gather_op, _gather_over),
    (all_gather_transpose_op, _gather_transpose_over),
):
    batching.COLLECTIVE_RULES[_op] = _rule


# ------------------------------------------------------------------------ public functions


def _names(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _axis_params(frame: batching.AxisFrame) -> dict:
    return {"axis_name": frame.name, "axis_size": frame.size, "group": frame.group}


def _leaf(name: str, x: Any, kinds: str) -> Any:
    if not isinstance(x, Tensor):
        try:
            x = asarray(x)
        except (TypeError, ValueError) as err:
            raise DTypeError(
                f"{name}: cannot reduce a {type(x).__name__} ({x!r:.40}); pass Tensors, arrays "
                "or numbers (a pytree of them)"
            ) from err
    if np.dtype(x.dtype).kind not in kinds:
        what = {"b": "bool", "c": "complex"}.get(np.dtype(x.dtype).kind, str(x.dtype))
        raise DTypeError(f"{name}: {what} input {x.aval} is not supported; cast it (x.astype(...))")
    return x


def _not_none(name: str, x: Any) -> None:
    if x is None:
        raise DTypeError(f"{name}: x is None; pass a Tensor or a pytree of them")


def _reduce(name: str, op: Any, x: Any, axis_name: Any, kinds: str) -> Any:
    _not_none(name, x)
    frames = [batching.axis_frame(n, name) for n in _names(axis_name)]

    def one(leaf):
        leaf = _leaf(name, leaf, kinds)
        for frame in frames:
            leaf = op(leaf, **_axis_params(frame))
        return leaf

    return tree.map(one, x)


def psum(x: Any, axis_name: Any) -> Any:
    """Sum of ``x`` over every member of the named axis, given to every member.

    Under ``vmap(f, axis_name=n)`` the members are the examples; under
    ``fgrad.distributed.spmd(f, axis_name=n)`` they are the processes (an MPI allreduce).

    Args:
        x: a pytree of numeric Tensors (or numbers), the same shapes on every member.
        axis_name: the name, or a tuple of names (the sum over all of them).

    Returns:
        A pytree like ``x``: each leaf the sum over members, same shape and dtype.
        ``psum(1, n)`` is the axis' size.

    Raises:
        NameError: no running ``vmap``/``spmd`` binds ``axis_name``.
        DTypeError: a leaf is bool or not numeric.
        ShapeError, DTypeError: (processes) ranks passed different shapes or dtypes.

    Derivative: linear; its transpose is ``psum`` (see this module's docstring for why).

    Example:
        >>> f = lambda x: x / fgrad.lax.psum(x, "batch")
        >>> fgrad.vmap(f, axis_name="batch")(fnp.array([1.0, 3.0]))
        Tensor([0.25, 0.75], dtype=float64)
        >>> fgrad.distributed.spmd(f, axis_name="batch")(fnp.array([1.0, 3.0]))  # 1 process
        Tensor([1., 1.], dtype=float64)

    References:
        ``jax.lax.psum``; MPI 4.0, ``MPI_Allreduce`` with ``MPI_SUM``.
    """
    return _reduce("psum", psum_op, x, axis_name, "iufc")


def pmean(x: Any, axis_name: Any) -> Any:
    """Mean of ``x`` over every member of the named axis: ``psum(x, n) / size``.

    Args:
        x: a pytree of numeric Tensors, the same shapes on every member.
        axis_name: the name, or a tuple of names.

    Returns:
        A pytree like ``x``; integer leaves give floats (true division).

    Raises:
        NameError: no running ``vmap``/``spmd`` binds ``axis_name``.
        DTypeError: a leaf is bool or not numeric.

    Example:
        >>> fgrad.vmap(lambda x: fgrad.lax.pmean(x, "i"), axis_name="i")(fnp.array([1.0, 3.0]))
        Tensor([2., 2.], dtype=float64)

    References:
        ``jax.lax.pmean``; MPI 4.0, ``MPI_Allreduce`` with ``MPI_SUM``.
    """
    size = 1
    for n in _names(axis_name):
        size *= batching.axis_frame(n, "pmean").size
    return tree.map(lambda s: s / size, _reduce("pmean", psum_op, x, axis_name, "iufc"))


def pmax(x: Any, axis_name: Any) -> Any:
    """Elementwise maximum of ``x`` over every member of the named axis.

    Args:
        x: a pytree of real Tensors (integer or floating), the same shapes everywhere.
        axis_name: the name, or a tuple of names.

    Returns:
        A pytree like ``x``, same shapes and dtypes.

    Raises:
        NameError: no running ``vmap``/``spmd`` binds ``axis_name``.
        DTypeError: a leaf is bool or complex.

    Derivative: the tangent of the members holding the maximum, averaged over ties.

    Example:
        >>> fgrad.vmap(lambda x: fgrad.lax.pmax(x, "i"), axis_name="i")(fnp.array([1.0, 3.0]))
        Tensor([3., 3.], dtype=float64)

    References:
        ``jax.lax.pmax``; MPI 4.0, ``MPI_Allreduce`` with ``MPI_MAX``.
    """
    return _reduce("pmax", pmax_op, x, axis_name, "iuf")


def pmin(x: Any, axis_name: Any) -> Any:
    """Elementwise minimum of ``x`` over every member of the named axis: ``-pmax(-x)``.

    Args:
        x: a pytree of real Tensors, the same shapes everywhere.
        axis_name: the name, or a tuple of names.

    Returns:
        A pytree like ``x``.

    Raises:
        NameError: no running ``vmap``/``spmd`` binds ``axis_name``.
        DTypeError: a leaf is bool, complex or unsigned.

    Example:
        >>> fgrad.vmap(lambda x: fgrad.lax.pmin(x, "i"), axis_name="i")(fnp.array([1.0, 3.0]))
        Tensor([1., 1.], dtype=float64)

    References:
        ``jax.lax.pmin``.
    """
    _not_none("pmin", x)
    neg = tree.map(lambda leaf: -_leaf("pmin", leaf, "if"), x)
    return tree.map(lambda leaf: -leaf, _reduce("pmin", pmax_op, neg, axis_name, "if"))


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every member's ``x``, stacked along a new axis ``axis`` in member order.

    Args:
        x: a pytree of numeric Tensors, the same shapes on every member.
        axis_name: the name (one name).
        axis: where the members' axis goes in the result.
        tiled: concatenate along the existing axis ``axis`` instead of stacking.

    Returns:
        A pytree like ``x``: each leaf ``(..., size, ...)`` with ``size`` at ``axis``
        (tiled: that axis ``size`` times longer).

    Raises:
        NameError: no running ``vmap``/``spmd`` binds ``axis_name``.
        ValueError: ``axis`` is out of range.
        DTypeError: a leaf is bool or not numeric.

    Derivative: linear; its transpose is a reduce-scatter (member ``i`` gets slice ``i`` of
    the cotangents' sum over members).

    Example:
        >>> g = fgrad.vmap(lambda x: fgrad.lax.all_gather(x, "i"), axis_name="i")
        >>> g(fnp.array([1.0, 2.0]))
        Tensor([[1., 2.],
                [1., 2.]], dtype=float64)

    References:
        ``jax.lax.all_gather``; MPI 4.0, ``MPI_Allgather``.
    """
    if isinstance(axis_name, (tuple, list)):
        raise TypeError("all_gather: give one axis name, not a tuple of them")
    frame = batching.axis_frame(axis_name, "all_gather")
    _not_none("all_gather", x)
    if type(tiled) is not bool:
        raise TypeError(f"all_gather: tiled must be a bool, got {tiled!r}")

    def one(leaf):
        leaf = _leaf("all_gather", leaf, "iufc")
        nd = leaf.ndim if tiled else leaf.ndim + 1
        if not (type(axis) is int and -nd <= axis < nd):
            raise ValueError(
                f"all_gather: axis {axis!r} is out of range for a result of {nd} dimensions "
                f"(input {leaf.aval}, tiled={tiled}); give an int from {-nd} to {nd - 1}"
            )
        return all_gather_op(leaf, axis=axis % nd, tiled=tiled, **_axis_params(frame))

    return tree.map(one, x)


def axis_index(axis_name: Any) -> Any:
    """This member's index along the named axis: the example's under ``vmap``, the rank
    under ``spmd``.

    Args:
        axis_name: the name (one name).

    Returns:
        An int32 scalar Tensor in ``[0, size)``.

    Raises:
        NameError: no running ``vmap``/``spmd`` binds ``axis_name``.

    Example:
        >>> fgrad.vmap(lambda x: x * fgrad.lax.axis_index("i"), axis_name="i")(fnp.ones(3))
        Tensor([0., 1., 2.], dtype=float64)

    References:
        ``jax.lax.axis_index``; MPI 4.0, ``MPI_Comm_rank``.
    """
    frame = batching.axis_frame(axis_name, "axis_index")
    if frame.group is not None:
        return asarray(np.int32(frame.group.rank))
    return batching.BatchTracer(frame.trace, fnp.arange(frame.size, dtype=np.int32))
