"""``vmap``: vectorise a function over a mapped axis of its arguments.

Inside ``vmap(f)``, ``f`` sees BatchTracers that look like one example (their ``shape``
leaves out the mapped axis). Each op applied to them is handed to its ``batch`` rule
(``defop(batch=...)``, shared rules in ``fgrad/ops/_batch.py``), which runs the op once on
the whole batch; nothing loops over examples. Because a rule only calls registry ops, the
batched computation is itself traced by any transform around ``vmap``, and transforms
inside ``f`` see batched values: ``vmap(grad(f))``, ``grad(vmap(f))``, ``jit(vmap(f))`` and
``vmap(vmap(f))`` all compose.

Named axes: ``vmap(f, axis_name="batch")`` also binds the name ``"batch"`` while ``f``
runs (a per-thread stack of :class:`AxisFrame`, JAX's axis environment), so the
collectives of ``fgrad.lax`` (``psum(x, "batch")``...) reduce over the mapped axis. Those
ops register a rule in :data:`COLLECTIVE_RULES`; only a named vmap looks it up (its trace
is a :class:`NamedBatchTrace`), so an unnamed vmap runs exactly as before. The same stack
holds the frames of ``fgrad.distributed.spmd``, whose axes are processes.

Reference: JAX's ``vmap`` and batching interpreter (``jax/_src/interpreters/batching.py``;
the plain form in ``docs/autodidax.py``), whose ``in_axes``/``out_axes``/``axis_size``
conventions this follows; its ``axis_name`` and axis environment (``core.extend_axis_env``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from fgrad import backend, tree
from fgrad.core.trace import Trace, Tracer, new_trace
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.ops._batch import moved_to_front, with_batch
from fgrad.ops._rules import shape_of
from fgrad.ops.shape import permute_dims
from fgrad.tensor import ShapeDtype, Tensor, asarray
from fgrad.transforms.argnums import check_function

__all__ = ["vmap", "AxisFrame", "UnboundAxisError", "axis_frame", "named_axis", "COLLECTIVE_RULES"]

_SCALARS = (bool, int, float, complex)


class BatchTracer(Tracer):
    """A batched value seen as one example: ``val`` carries the mapped axis in front."""

    __slots__ = ("val",)

    def __init__(self, trace: Trace, val: Any):
        self._trace = trace
        self.val = val

    @property
    def aval(self) -> ShapeDtype:
        aval = self.val.aval
        return ShapeDtype(tuple(aval.shape[1:]), aval.dtype)

    @property
    def device(self):
        # The examples share one device, the batch's: no concrete value needed.
        val = self.val
        return val.device if isinstance(val, Tensor) else backend.device_of(val)

    def _concrete(self) -> Any:
        raise ConcretizationError(
            f"a value {self.aval} mapped by vmap has one value per example, so Python control "
            "flow (if/while/bool/float) cannot branch on it. Use fgrad.numpy.where or "
            "fgrad.lax.cond / while_loop so the choice is made per example"
        )


class BatchTrace(Trace):
    __slots__ = ()

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        vals, dims = [], []
        for a in args:
            if type(a) is BatchTracer and a._trace is self:
                vals.append(a.val)
                dims.append(0)
            else:
                vals.append(a)
                dims.append(None)
        if op.batch is None:
            raise NotImplementedError(
                f"vmap: op {op.name!r} has no batching rule yet (defop(batch=...)); apply the "
                "function to each example and stack the results (fgrad.numpy.stack) instead"
            )
        try:
            out, out_dims = op.batch(op, tuple(vals), tuple(dims), **params)
        except (ShapeError, DTypeError) as err:
            examples = ", ".join(str(a.aval) if isinstance(a, Tensor) else repr(a) for a in args)
            raise type(err)(
                f"{err}\n(under vmap: the shapes above include the mapped axis in front and "
                f"axis parameters shifted past it; per example, op {op.name!r} got {examples})"
            ) from err
        if op.multiple_results:
            return tuple(self._wrap(o, d) for o, d in zip(out, out_dims))
        return self._wrap(out, out_dims)

    def _wrap(self, out: Any, dim: Any) -> Any:
        return out if dim is None else BatchTracer(self, out)


# ------------------------------------------------------------------------ named axes

# Rules of the ops that name an axis (fgrad.lax's collectives), used by the vmap whose
# axis they name: ``rule(value, axis_size, **params) -> (out, out_dim)``, ``value`` with
# the mapped axis in front. Written only at import time, by the modules declaring them.
COLLECTIVE_RULES: dict[Any, Callable] = {}


class UnboundAxisError(NameError, ValueError):
    """A collective named an axis that no running vmap or spmd binds (a NameError, as in
    JAX, and a ValueError, as fgrad's other argument errors)."""


class AxisFrame:
    """A bound axis name: a vmap's mapped axis (``trace`` set) or a group of processes
    (``group`` set, from ``fgrad.distributed.spmd``), with the axis' size."""

    __slots__ = ("name", "size", "trace", "group")

    def __init__(self, name: Any, size: int, trace: Any = None, group: Any = None):
        self.name, self.size, self.trace, self.group = name, size, trace, group

    def __repr__(self) -> str:
        kind = "vmap" if self.group is None else f"processes of {self.group!r}"
        return f"AxisFrame({self.name!r}, size={self.size}, {kind})"


class _ThreadAxes(threading.local):
    def __init__(self) -> None:
        self.stack: list[AxisFrame] = []


_AXES = _ThreadAxes()


class named_axis:
    """Bind ``frame.name`` (innermost first) while the body runs."""

    __slots__ = ("frame",)

    def __init__(self, frame: AxisFrame):
        self.frame = frame

    def __enter__(self) -> AxisFrame:
        _AXES.stack.append(self.frame)
        return self.frame

    def __exit__(self, *exc: object) -> None:
        stack = _AXES.stack
        if stack and stack[-1] is self.frame:
            stack.pop()
        else:  # exited out of order (a generator left suspended inside the transform)
            stack.remove(self.frame)


def axis_frame(name: Any, what: str) -> AxisFrame:
    """The innermost frame binding ``name``.

    Raises:
        UnboundAxisError: no running ``vmap(..., axis_name=name)`` or ``spmd`` binds
            ``name``; the message names ``what`` (the collective) and the bound names.
    """
    try:
        hash(name)
    except TypeError:
        raise TypeError(
            f"{what}: axis_name must be hashable (a string), got {type(name).__name__}"
        ) from None
    for frame in reversed(_AXES.stack):
        if frame.name == name:
            return frame
    bound = [f.name for f in reversed(_AXES.stack)]
    raise UnboundAxisError(
        f"{what}: unbound axis name {name!r} (bound here: {bound or 'none'}); call it inside "
        f"fgrad.vmap(f, axis_name={name!r}) or fgrad.distributed.spmd(f, axis_name={name!r})"
    )


class NamedBatchTrace(BatchTrace):
    """The trace of ``vmap(f, axis_name=...)``: a collective naming its axis reduces over
    the mapped axis (:data:`COLLECTIVE_RULES`); every other op is batched as by vmap."""

    __slots__ = ("axis_name", "axis_size")

    def __init__(self, axis_name: Any, axis_size: int):
        super().__init__()
        self.axis_name, self.axis_size = axis_name, axis_size

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        rule = COLLECTIVE_RULES.get(op)
        if rule is not None and params.get("axis_name") == self.axis_name and params.get("group") is None:
            x = args[0]
            if type(x) is BatchTracer and x._trace is self:
                out, dim = rule(x.val, self.axis_size, **params)
                return self._wrap(out, dim)
        return BatchTrace.process(self, op, args, params)


def _axes_for(spec: Any, tree_: Any, what: str) -> list:
    """One axis (int or None) per leaf of ``tree_`` from ``spec``: an int or None stands
    for every leaf below it, and containers must match ``tree_``'s (a pytree prefix)."""
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return [spec] * len(tree.leaves(tree_))
    spec_children, spec_def = _one_level(spec)
    children, tree_def = _one_level(tree_)
    if spec_def != tree_def or spec_children == [spec]:
        raise ValueError(
            f"vmap: {what} {spec!r} does not match its argument's structure "
            f"{tree.structure(tree_)}; give an int, None, or a pytree of them shaped like it"
        )
    return [a for s, c in zip(spec_children, children) for a in _axes_for(s, c, what)]


def _one_level(x: Any) -> tuple[list, Any]:
    """The children of a pytree node and the node's structure over them."""
    return tree.flatten(x, is_leaf=lambda c: c is not x)


def vmap(
    f: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: Any = None,
) -> Callable:
    """Vectorise ``f`` over a mapped axis of its arguments.

    ``vmap(f)(xs)`` equals stacking ``f(x)`` over the slices ``x`` of ``xs`` along its
    first axis, computed by running each op once on the whole batch.

    Args:
        f: a function of pytrees of Tensors.
        in_axes: where the mapped axis is in each positional argument: an int (every
            argument, every leaf), or a tuple with one entry per argument, each an int,
            None (the argument is shared by all examples) or a pytree of them shaped like
            the argument. Negative axes count from the end. Keyword arguments are always
            mapped over their first axis, as in JAX (pass shared values positionally with
            None, or close over them).
        out_axes: where the mapped axis goes in the outputs: an int, None (the output is
            the same for every example), or a pytree of them shaped like the output.
        axis_size: the mapped axis' size, needed only when no argument is mapped.
        axis_name: a hashable name (a string) for the mapped axis: inside ``f``,
            ``fgrad.lax.psum(x, axis_name)``, ``pmean``, ``pmax``, ``all_gather`` and
            ``axis_index`` act over the examples, as they act over processes under
            ``fgrad.distributed.spmd``. None (the default) binds no name.

    Returns:
        A function with ``f``'s signature whose outputs carry the mapped axis.

    Raises:
        ValueError: the mapped axes of the arguments differ in size, ``in_axes`` does not
            match the arguments, an in or out axis is out of range, nothing is mapped and
            ``axis_size`` is not given, or an output given ``out_axes=None`` differs
            between examples.
        NotImplementedError: ``f`` uses an op that has no batching rule.
        ConcretizationError: ``f`` branches in Python on a mapped value.

    Example:
        >>> xs = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> fgrad.vmap(lambda x: fnp.dot(x, x))(xs)
        Tensor([ 5., 25.], dtype=float64)
        >>> fgrad.vmap(fgrad.grad(lambda x: fnp.sum(x ** 3)))(xs)
        Tensor([[ 3., 12.],
                [27., 48.]], dtype=float64)
        >>> fgrad.vmap(fnp.add, in_axes=(0, None))(xs, fnp.array([10.0, 20.0]))
        Tensor([[11., 22.],
                [13., 24.]], dtype=float64)
        >>> fgrad.vmap(lambda x: x / fgrad.lax.psum(x, "i"), axis_name="i")(fnp.array([1.0, 3.0]))
        Tensor([0.25, 0.75], dtype=float64)
    """
    check_function(f, "vmap")
    if axis_name is not None:
        try:
            hash(axis_name)
        except TypeError:
            raise TypeError(
                f"vmap: axis_name must be hashable (a string), got {type(axis_name).__name__}"
            ) from None

    @functools.wraps(f)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, (list, tuple)):
            if len(in_axes) != len(args):
                raise ValueError(
                    f"vmap: in_axes has {len(in_axes)} entries but the function got "
                    f"{len(args)} positional arguments; give one entry per argument"
                )
            specs = list(in_axes)
        else:
            specs = [in_axes] * len(args)
        flat_axes, where = [], []
        for n, (arg, spec) in enumerate(zip(args, specs)):
            axes = _axes_for(spec, arg, f"in_axes[{n}]" if isinstance(in_axes, (list, tuple)) else "in_axes")
            flat_axes += axes
            where += [f"argument {n}"] * len(axes)
        for name in sorted(kwargs):  # keyword arguments are mapped over their first axis (JAX)
            axes = _axes_for(0, kwargs[name], "keyword arguments")
            flat_axes += axes
            where += [f"keyword argument {name!r}"] * len(axes)
        leaves, in_tree = tree.flatten((args, kwargs))
        size = _mapped_size(leaves, flat_axes, where, axis_size)
        if axis_name is None:
            trace_ = BatchTrace()
        else:
            trace_ = NamedBatchTrace(axis_name, size)
        with new_trace(trace_) as trace:
            inputs = [
                leaf if axis is None else BatchTracer(trace, _front(leaf, axis))
                for leaf, axis in zip(leaves, flat_axes)
            ]
            batched_args, batched_kwargs = tree.unflatten(in_tree, inputs)
            if axis_name is None:
                out = f(*batched_args, **batched_kwargs)
            else:
                with named_axis(AxisFrame(axis_name, size, trace=trace)):
                    out = f(*batched_args, **batched_kwargs)
            out_leaves, out_tree = tree.flatten(out)
            out_specs = _axes_for(out_axes, out, "out_axes")
            results = [_place(o, trace, axis, size) for o, axis in zip(out_leaves, out_specs)]
        return tree.unflatten(out_tree, results)

    return vmapped


def _mapped_size(leaves: list, axes: list, where: list, axis_size: int | None) -> int:
    sizes: dict[int, list[str]] = {}
    for leaf, axis, arg in zip(leaves, axes, where):
        if axis is None:
            continue
        shape = shape_of(leaf)
        if not shape or not -len(shape) <= axis < len(shape):
            raise ValueError(
                f"vmap: in_axes {axis} is out of range for {arg}, of shape {shape}; map an "
                "axis the argument has, or give None to share it"
            )
        sizes.setdefault(shape[axis], []).append(f"axis {axis} of {arg} (shape {shape})")
    if axis_size is not None:
        sizes.setdefault(axis_size, []).append("axis_size")
    if len(sizes) > 1:
        listed = "; ".join(f"{n}: {', '.join(parts)}" for n, parts in sorted(sizes.items()))
        raise ValueError(
            f"vmap: the mapped axes have different sizes ({listed}); every mapped axis must "
            "have the same length"
        )
    if not sizes:
        raise ValueError(
            "vmap: no argument is mapped (all in_axes are None); pass axis_size to say how "
            "many examples there are"
        )
    return next(iter(sizes))


def _front(leaf: Any, axis: int) -> Any:
    x = leaf if isinstance(leaf, Tensor) else asarray(leaf)
    return moved_to_front(x, axis)


def _place(out: Any, trace: Trace, axis: Any, size: int) -> Any:
    """An output of the batched function, its mapped axis at ``axis``."""
    batched = isinstance(out, BatchTracer) and out._trace is trace
    if axis is None:
        if batched:
            raise ValueError(
                f"vmap: an output given out_axes=None differs between examples ({out.aval}); "
                "map it (an int) or return a value that does not depend on the mapped inputs"
            )
        return out
    val = out.val if batched else with_batch(asarray(out) if type(out) in _SCALARS else out, None, size)
    nd = len(shape_of(val))
    if not -nd <= axis < nd:
        raise ValueError(
            f"vmap: out_axes {axis} is out of range for an output of {nd - 1} dimensions per "
            f"example ({val.aval}, the mapped axis included); give an axis from {-nd} to {nd - 1}"
        )
    axis %= nd
    if axis == 0:
        return val
    order = (*range(1, axis + 1), 0, *range(axis + 1, nd))
    return permute_dims(val, axes=order)
