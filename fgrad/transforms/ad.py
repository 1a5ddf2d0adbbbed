"""Automatic differentiation's two modes: reverse (under vjp, grad) and forward (jvp).

Reverse mode records, for every op applied to this transform's tracers, a node holding
the op, its primal inputs and output. The backward pass walks the nodes in reverse
topological order and applies each op's VJP rule, accumulating cotangents where a value
is used more than once. The rules run on the primal values one level down, so when those
are tracers of an outer transform the backward pass is itself recorded: that is how
``grad(grad(f))`` works with no extra code (autograd's design; Maclaurin, Duvenaud and
Adams, "Autograd: effortless gradients in numpy", ICML AutoML workshop 2015).

Forward mode carries a tangent with every primal and applies each op's JVP rule as the
op runs (JAX's ``JVPTrace``). The user API over both is :mod:`fgrad.transforms.autodiff`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import dtypes, tree
from fgrad._config import config
from fgrad.core.graph import _user_source, source_stack
from fgrad.core.op import LINEAR
from fgrad.core.trace import Trace, Tracer, new_trace
from fgrad.ops.elementwise import add, astype, full_like, real
from fgrad.ops.shape import broadcast_to, sum_to_shape
from fgrad.tensor import ShapeDtype, Tensor, asarray
from fgrad.transforms.argnums import split_aux

__all__ = ["JVPTrace", "JVPTracer", "ReverseTrace", "ReverseTracer"]


def _aval(x: Any) -> ShapeDtype:
    if isinstance(x, Tensor):
        return x.aval
    if type(x) is ShapeDtype:
        return x
    return ShapeDtype(tuple(np.shape(x)), np.result_type(x))


def _is_inexact(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)  # once per traced op: keep it to an attribute read
    if dtype is None:
        return type(x) in (float, complex)
    return dtype.kind in "fc"


def _fit(value: Any, aval: Any) -> Any:
    """Bring a cotangent to ``aval`` (anything with shape and dtype: an aval, a Tensor):
    undo broadcasting, match the dtype."""
    shape = tuple(aval.shape)
    if tuple(value.shape) != shape:
        value = sum_to_shape(value, shape)
    if value.dtype != aval.dtype:
        if dtypes.is_complex(value.dtype) and not dtypes.is_complex(aval.dtype):
            value = real(value)  # a real primal's derivative is real (JAX's convention)
        if value.dtype != aval.dtype:
            value = astype(value, dtype=aval.dtype)
    return value


# ------------------------------------------------------------------------ reverse mode


class _Node:
    """One recorded op application: what the backward pass needs to apply its VJP."""

    __slots__ = ("op", "primals", "params", "out", "parents", "source")

    def __init__(self, op, primals, params, out, parents, source=""):
        self.op = op
        self.primals = primals
        self.params = params
        self.out = out
        self.parents = parents  # tuple of (input position, parent node, parent output index)
        self.source = source  # the user's line, kept where something may report it


class ReverseTracer(Tracer):
    __slots__ = ("primal", "node", "index")
    differentiated = True

    def __init__(self, trace, primal, node, index):
        self._trace = trace
        self.primal = primal
        self.node = node
        self.index = index

    @property
    def aval(self) -> ShapeDtype:
        return _aval(self.primal)

    def _concrete(self):
        return self.primal


class ReverseTrace(Trace):
    __slots__ = ()

    def process(self, op, args, params):
        primals = []
        parents = []
        for i, a in enumerate(args):
            if type(a) is ReverseTracer and a._trace is self:
                primals.append(a.primal)
                parents.append((i, a.node, a.index))
            else:
                primals.append(a)
        forward = op.reverse_forward
        if forward is None:
            out = op(*primals, **params)
            if op.nondiff:
                return out
            kept_out = out if "out" in op.vjp_reads or op.multiple_results else _aval(out)
        else:  # outputs, then values only the VJP reads (custom_vjp's residuals)
            out, extra = forward(*primals, **params)
            kept_out = (*out, *extra)
        # Keep only shapes of what the rules never read, so the tape holds no dead arrays.
        kept_primals = primals if "inputs" in op.vjp_reads else [
            _aval(p) if isinstance(p, Tensor) else p for p in primals
        ]
        # The user's line costs a frame walk: kept only where it may be reported (debug_nans,
        # or a trace below this one, such as jit's graph, that records the backward pass).
        source = _user_source() if self.level > 1 or config.debug_nans else ""
        node = _Node(op, kept_primals, params, kept_out, tuple(parents), source)
        if op.multiple_results:
            return tuple(
                ReverseTracer(self, o, node, k) if _is_inexact(o) else o for k, o in enumerate(out)
            )
        return ReverseTracer(self, out, node, None) if _is_inexact(out) else out


def _toposort(roots: Sequence[_Node]) -> list[_Node]:
    """Nodes reachable from ``roots``, each after every node that consumes it."""
    order: list[_Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root.parents))]
        while stack:
            node, parents = stack[-1]
            for _, parent, _ in parents:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append((parent, iter(parent.parents)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def _accumulate(cts: dict, node: _Node, index: Any, value: Any) -> None:
    if node.op is not None and node.op.multiple_results:
        slots = cts.setdefault(node, [None] * len(node.out))
        slots[index] = value if slots[index] is None else add(slots[index], value)
    else:
        prev = cts.get(node)
        cts[node] = value if prev is None else add(prev, value)


def _backward(seeds: list[tuple[_Node, Any, Any]]) -> dict:
    """Propagate cotangents from ``seeds`` (node, output index, cotangent) to every leaf."""
    cts: dict = {}
    for node, index, ct in seeds:
        _accumulate(cts, node, index, ct)
    leaf_cts = {}
    for node in _toposort([n for n, _, _ in seeds]):
        ct = cts.pop(node, None)
        if ct is None:
            continue
        op = node.op
        if op is None:
            leaf_cts[node] = ct
            continue
        if op.multiple_results:
            ct = tuple(
                full_like(o, fill_value=0, dtype=None) if c is None else c
                for c, o in zip(ct, node.out)
            )
        if node.source:
            source_stack().append(f"{node.source} (in the gradient of {op.name!r})")
        try:
            if callable(op.vjp):
                all_cts = op.vjp(ct, node.out, *node.primals, **node.params)
                in_cts = [(i, parent, k, all_cts[i]) for i, parent, k in node.parents]
            else:
                in_cts = [
                    (i, parent, k, op.vjp[i](ct, node.out, *node.primals, **node.params))
                    for i, parent, k in node.parents
                    if op.vjp[i] is not None
                ]
        finally:
            if node.source:
                source_stack().pop()
        for i, parent, k, value in in_cts:
            if value is None:
                continue
            if isinstance(value, Exception):  # the rule refuses this input (see defop)
                raise value
            _accumulate(cts, parent, k, _fit(value, node.primals[i]))
    return leaf_cts


_LEAF_TREE = tree.structure(0)


@functools.cache
def _tuple_tree(n: int) -> tree.TreeDef:
    return tree.structure((0,) * n)


class _Recording:
    """``f`` run once under a fresh reverse trace: its inputs, outputs and tape."""

    __slots__ = ("trace", "leaves", "in_tree", "inputs", "out_leaves", "out_tree", "aux")

    def __init__(
        self, f: Callable, primals: tuple, has_aux: bool, name: str, on_int: Callable | None = None
    ):
        if all(type(p) is Tensor for p in primals):  # the common call: skip the pytree walk
            leaves, self.in_tree = list(primals), _tuple_tree(len(primals))
        else:
            leaves, self.in_tree = tree.flatten(primals)
            leaves = [_as_input(x, name) for x in leaves]
        self.leaves = leaves
        if on_int is not None and not all(_is_inexact(x) for x in leaves):
            on_int()  # raises the error that names the integer argument
        with new_trace(ReverseTrace()) as trace:
            self.inputs = inputs = [
                ReverseTracer(trace, x, _Node(None, (), {}, x, ()), None) if _is_inexact(x) else x
                for x in leaves
            ]
            result = f(*tree.unflatten(self.in_tree, inputs))
            if has_aux:
                result, aux = split_aux(result)
            if isinstance(result, Tensor):
                self.out_leaves, self.out_tree = [result], _LEAF_TREE
            else:
                self.out_leaves, self.out_tree = tree.flatten(result)
        self.trace = trace
        self.aux = _lower_tree(aux, trace) if has_aux else None

    def pull(self, seeds: list) -> Any:
        """Cotangents of the inputs (in their structure) from (node, index, ct) seeds."""
        leaf_cts = _backward(seeds)
        out = []
        for x, inp in zip(self.leaves, self.inputs):
            ct = leaf_cts.get(inp.node) if type(inp) is ReverseTracer else None
            out.append(full_like(x, fill_value=0, dtype=None) if ct is None else ct)
        return tree.unflatten(self.in_tree, out)


def _as_input(x: Any, name: str) -> Any:
    """A pytree leaf as a Tensor, or a TypeError that says how to pass a container."""
    if isinstance(x, Tensor):
        # jit's traced Python float is differentiated as the float64 Tensor that the float
        # itself becomes eagerly (Python arithmetic on it would record no derivative).
        return asarray(x) if x.weak else x
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)) or hasattr(x, "__array_namespace__"):
        return asarray(x)
    raise TypeError(
        f"{name}: an argument leaf of type {type(x).__qualname__} is not an array. Pass Tensors, "
        "arrays or Python scalars, in tuples/lists/dicts; register other containers with "
        "fgrad.tree.register or fgrad.tree.register_dataclass"
    )


def _lower(x: Any, trace: Trace) -> Any:
    """The value of ``x`` one level below ``trace`` (unwraps this trace's tracers)."""
    while isinstance(x, Tracer) and x._trace is trace:
        x = x.primal
    return x


def _lower_tree(x: Any, trace: Trace) -> Any:
    return tree.map(lambda leaf: _lower(leaf, trace), x)


# ------------------------------------------------------------------------ forward mode


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")
    differentiated = True

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapeDtype:
        return _aval(self.primal)

    def _concrete(self):
        return self.primal


class JVPTrace(Trace):
    __slots__ = ()

    def process(self, op, args, params):
        primals = []
        tangents = []
        for a in args:
            if type(a) is JVPTracer and a._trace is self:
                primals.append(a.primal)
                tangents.append(a.tangent)
            else:
                primals.append(a)
                tangents.append(None)
        out = op(*primals, **params)
        if op.nondiff:
            return out
        t_out = None
        if callable(op.jvp):  # one rule for every input's tangent (None: zero)
            if any(t is not None for t in tangents):
                t_out = op.jvp(tangents, out, *primals, **params)
            tangents = ()
        for i, t in enumerate(tangents):
            if t is None:
                continue
            if op.jvp == LINEAR:
                contrib = op(*primals[:i], t, *primals[i + 1 :], **params)
            elif op.jvp[i] is None:
                continue
            else:
                contrib = op.jvp[i](t, out, *primals, **params)
            t_out = contrib if t_out is None else _add_tangents(t_out, contrib, op)
        if t_out is None:
            return out
        if op.multiple_results:
            return tuple(
                JVPTracer(self, o, _fit_tangent(t, o)) if _is_inexact(o) else o
                for o, t in zip(out, t_out)
            )
        return JVPTracer(self, out, _fit_tangent(t_out, out)) if _is_inexact(out) else out


def _add_tangents(a, b, op):
    if op.multiple_results:
        return tuple(x if y is None else y if x is None else add(x, y) for x, y in zip(a, b))
    return add(a, b)


def _fit_tangent(t: Any, out: Any) -> Any:
    if t is None:
        return full_like(out, fill_value=0, dtype=None)
    aval = _aval(out)
    if tuple(t.shape) != aval.shape:
        t = broadcast_to(t, shape=aval.shape)
    if t.dtype != aval.dtype:
        t = real(t) if dtypes.is_complex(t.dtype) and not dtypes.is_complex(aval.dtype) else t
        t = astype(t, dtype=aval.dtype) if t.dtype != aval.dtype else t
    return t


