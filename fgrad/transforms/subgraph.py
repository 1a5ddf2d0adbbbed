"""Sub-graphs: functions traced for the ops that hold them (control flow, custom rules).

:func:`trace_function` traces a branch, loop body or rule on avals (through
:func:`fgrad.core.staging.stage`); the values it closes over that are tracers of an outer
transform become explicit inputs (``consts``), never constants, so every transform sees
them. :func:`close` makes the closed :class:`SubGraph` a node holds in its params: it runs
kernel by kernel on arrays (``run``) or op by op under a transform (``call``), and keeps
the graphs derived from it (JVP, VJP, batched) memoised. The derivative helpers here call
:func:`fgrad.transforms.autodiff.jvp` and ``vjp`` directly, so an op holding a sub-graph is
declared above ``transforms/`` (``fgrad.lax``) or beside it (``_rule_ops``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree
from fgrad._config import config
from fgrad.core.debug import check_step
from fgrad.core.graph import Graph, Node, Var
from fgrad.core.op import REGISTRY
from fgrad.core.staging import stage
from fgrad.core.trace import Tracer
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import with_batch
from fgrad.ops._rules import shape_of
from fgrad.ops.elementwise import full_like, where
from fgrad.tensor import ShapeDtype, Tensor, _wrap
from fgrad.transforms import passes
from fgrad.transforms.autodiff import jvp, vjp

__all__ = ["SubGraph", "Traced", "close", "trace_function"]

# The rules differentiate sub-graphs, which takes ``fgrad.transforms.ad`` (a later layer).

_SCALARS = (bool, int, float, complex)


def _aval(x: Any) -> ShapeDtype:
    if isinstance(x, (Var, Tensor)):
        return x.aval
    if isinstance(x, ShapeDtype):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapeDtype(tuple(x.shape), np.dtype(x.dtype))
    return ShapeDtype((), np.result_type(x))  # a Python scalar


def _inexact(aval: ShapeDtype) -> bool:
    return np.dtype(aval.dtype).kind in "fc"


def _show(avals: Sequence[ShapeDtype]) -> str:
    return "(" + ", ".join(str(a) for a in avals) + ")"


# ------------------------------------------------------------------------ sub-graphs


class Traced:
    """A function traced on avals, before its closed-over tracers become inputs.

    ``consts`` are the tracers of outer transforms the function read (in order of first
    use), ``const_vars`` the Vars standing for them in ``nodes``; ``outvars`` are Vars or
    constants (Tensors, Python scalars); ``out_tree`` the structure of the function's output.
    """

    __slots__ = ("const_vars", "consts", "invars", "nodes", "out_tree", "outvars")

    def __init__(self, invars, nodes, outvars, consts, const_vars, out_tree):
        self.invars = invars
        self.nodes = nodes
        self.outvars = outvars
        self.consts = consts
        self.const_vars = const_vars
        self.out_tree = out_tree

    def out_aval(self, k: int) -> tuple[ShapeDtype, bool]:
        """The aval of output ``k`` and whether it is weak (a Python scalar, or a value
        jit traces weakly)."""
        o = self.outvars[k]
        aval = _aval(o)
        return aval, type(o) in _SCALARS or aval.weak

    def cast_output(self, k: int, aval: ShapeDtype) -> None:
        """Make output ``k`` (weak) the array of ``aval``: a Python number becomes a
        constant, a weakly typed Var gets an ``astype`` node."""
        o = self.outvars[k]
        if not isinstance(o, Var):
            self.outvars[k] = _wrap(np.asarray(o, dtype=aval.dtype))
            return
        out = Var(ShapeDtype(tuple(aval.shape), np.dtype(aval.dtype), aval.weak))
        astype = REGISTRY["astype"]
        self.nodes.append(Node(astype, [o], {"dtype": np.dtype(aval.dtype)}, [out], ""))
        self.outvars[k] = out


def trace_function(fun: Callable, in_avals: Sequence[ShapeDtype]) -> Traced:
    """Trace ``fun(list_of_tracers) -> pytree`` on ``in_avals``; no kernel runs.

    Tracers of outer transforms that ``fun`` reads (its closure) are collected in
    ``consts``: the caller passes them to the node as inputs.
    """
    graph = stage(lambda *ts: fun(list(ts)), list(in_avals), None, "control flow")
    invars = graph.invars
    consts: list[Tracer] = []
    const_vars: dict[int, Var] = {}

    def sub(x: Any) -> Any:
        if isinstance(x, Tracer):  # an outer transform's value: becomes an input
            v = const_vars.get(id(x))
            if v is None:
                v = const_vars[id(x)] = Var(x.aval)
                consts.append(x)
            return v
        return x

    nodes = [
        Node(n.op, [sub(v) for v in n.inputs], n.params, n.outputs, n.source) for n in graph.nodes
    ]
    outvars = [sub(o) for o in graph.outvars]
    return Traced(invars, nodes, outvars, consts, [const_vars[id(c)] for c in consts], graph.out_tree)


class SubGraph:
    """A closed Graph held in a control-flow node's params; hashed by identity.

    ``run`` evaluates it on backend arrays (kernels only, for the op's kernel); ``call``
    replays it op by op through the normal dispatch (for derivative rules, so running
    transforms record it). ``derived`` memoises the graphs the rules derive from it.
    """

    __slots__ = ("_outs", "_slots", "_steps", "derived", "graph", "in_avals", "name", "out_avals")

    def __init__(self, graph: Graph, name: str):
        self.graph = graph
        self.name = name
        self.in_avals = tuple(v.aval for v in graph.invars)
        self.out_avals = tuple(_aval(o) for o in graph.outvars)
        self.derived: dict[Any, SubGraph] = {}
        slot = {id(v): k for k, v in enumerate(graph.invars)}

        def ref(v: Any) -> tuple:  # (True, slot) of a Var, (False, value) of a constant
            if isinstance(v, Var):
                return True, slot[id(v)]
            return False, v._data if isinstance(v, Tensor) else v

        steps = []
        for node in graph.nodes:
            ins = tuple(ref(v) for v in node.inputs)
            outs = []
            for v in node.outputs:
                slot[id(v)] = len(slot)
                outs.append(slot[id(v)])
            steps.append((node.op.kernel, ins, node.params, tuple(outs), node.op.multiple_results))
        self._steps = steps
        self._outs = tuple(ref(o) for o in graph.outvars)
        self._slots = len(slot)

    def run(self, xp: Any, args: Sequence[Any]) -> list:
        """The outputs (backend arrays) for input arrays ``args``.

        With ``config.debug_nans`` each step is checked, so a NaN made inside a loop or
        branch body names the op and the line that traced it, not just the loop.
        """
        if xp is np and not config.debug_nans:  # a loop body's steps as one generated function
            program = self.derived.get("program")
            if program is None:
                from fgrad.transforms.program import Program  # (it imports the ops)

                program = self.derived["program"] = Program(self.graph, np)
            return [o if hasattr(o, "shape") else np.asarray(o) for o in program.run(list(args))]
        env = list(args) + [None] * (self._slots - len(args))
        check = config.debug_nans
        for step, (kernel, ins, params, outs, multi) in enumerate(self._steps):
            inputs = [env[k] if var else k for var, k in ins]
            out = kernel(xp, *inputs, **params)
            if check:
                node = self.graph.nodes[step]
                where = f"in the body {self.name!r}, traced at {node.source or 'an unknown line'}"
                check_step(node.op.name, inputs, out if multi else (out,), where)
            if multi:
                for k, o in zip(outs, out):
                    env[k] = o
            else:
                env[outs[0]] = out
        # A constant output joins the inputs' namespace (cupy, a strict Array API one).
        return [env[k] if var else xp.asarray(k) for var, k in self._outs]

    def call(self, args: Sequence[Any]) -> list:
        """The outputs for Tensors or tracers ``args``, op by op through the dispatch."""
        return self.graph.evaluate_flat(list(args))

    def __repr__(self) -> str:
        return (
            f"{{{self.name}: {_show(self.in_avals)} -> {_show(self.out_avals)}, "
            f"{len(self.graph.nodes)} nodes}}"
        )


def close(traced: Traced, consts: Sequence[Tracer], name: str) -> SubGraph:
    """A SubGraph taking ``consts`` (a superset of ``traced.consts``) then the inputs.

    Several branches of one ``cond`` share the union of their closures, so each branch's
    graph takes every branch's consts and ignores the ones it does not read.
    """
    own = {id(c): v for c, v in zip(traced.consts, traced.const_vars)}
    const_vars = [own.get(id(c)) or Var(c.aval) for c in consts]
    outvars = [
        _wrap(np.asarray(o)) if type(o) in _SCALARS else o for o in traced.outvars
    ]  # a Python number the caller did not cast: numpy's default dtype
    graph = Graph(
        const_vars + list(traced.invars),
        traced.nodes,
        outvars,
        tree.structure([0] * (len(const_vars) + len(traced.invars))),
        tree.structure([0] * len(outvars)),
    )
    # Dead code (the forward half of a derived VJP that the backward does not read),
    # shared subexpressions and plumbing. Not constant folding: it makes numpy constants,
    # which a sub-graph run on another array namespace could not mix with its inputs.
    return SubGraph(passes.dce(passes.cse(passes.simplify(graph))), name)


def _derive(sub: SubGraph, key: Any, in_avals: Sequence[ShapeDtype], fun: Callable) -> SubGraph:
    """The graph of ``fun`` (a function of ``sub`` only) on ``in_avals``, memoised on ``sub``."""
    derived = sub.derived.get(key)
    if derived is None:
        traced = trace_function(fun, in_avals)
        assert not traced.consts, "a derived graph closed over a tracer"
        name = f"{key[0]}({sub.name})"
        derived = sub.derived[key] = close(traced, [], name)
    return derived


def _call_at(sub: SubGraph, primals: list, pos: list) -> Callable:
    """``sub.call`` as a function of its inputs at ``pos``, the others fixed to ``primals``."""

    def f(*diff):
        full = list(primals)
        for k, x in zip(pos, diff):
            full[k] = x
        return sub.call(full)

    return f


def _jvp_call(sub: SubGraph, primals: list, tangents: list) -> tuple[list, list]:
    """``sub``'s outputs and their tangents; ``tangents[k]`` None: input ``k`` held fixed."""
    pos = [k for k, t in enumerate(tangents) if t is not None]
    f = _call_at(sub, primals, pos)
    outs, t_outs = jvp(f, [primals[k] for k in pos], [tangents[k] for k in pos])
    return list(outs), list(t_outs)


def _vjp_call(sub: SubGraph, primals: list, pos: list, cts: list) -> list:
    """Cotangents of ``sub``'s inputs at ``pos`` for output cotangents ``cts`` (None: zero)."""
    outs, f_vjp = vjp(_call_at(sub, primals, pos), *[primals[k] for k in pos])
    cts = [full_like(o, fill_value=0, dtype=None) if c is None else c for c, o in zip(cts, outs)]
    return list(f_vjp(cts))


def _check_arrays(name: str, args: Sequence[Any]) -> None:
    # jit asks each kernel whether it is one ufunc call by running it on placeholders;
    # a loop kernel must refuse those at once rather than iterate on them.
    for a in args:
        if not (type(a) in _SCALARS or hasattr(a, "shape")):
            raise TypeError(f"{name}: kernel inputs must be arrays, got {type(a).__name__}")


def _match(name: str, what: str, got: Sequence[ShapeDtype], want: Sequence[ShapeDtype]) -> None:
    """Raise naming ``name`` and both avals when ``got`` differs from ``want``."""
    got, want = [_aval(a) for a in got], list(want)
    if len(got) != len(want):
        raise TypeError(
            f"{name}: {what} has {len(got)} values {_show(got)}, expected {_show(want)}"
        )
    for k, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(w.shape):
            raise ShapeError(f"{name}: {what} {k} has aval {g}, expected {w}: shapes differ")
        if np.dtype(g.dtype) != np.dtype(w.dtype):
            raise DTypeError(f"{name}: {what} {k} has aval {g}, expected {w}: dtypes differ")


def _chunks(values: Sequence[Any], *sizes: int) -> list[list]:
    """``values`` cut into consecutive lists of the given ``sizes``."""
    out, start = [], 0
    for n in sizes:
        out.append(list(values[start : start + n]))
        start += n
    return out


def _split(args: Sequence[Any], n_first: int, n_second: int) -> list[list]:
    """``args`` as three lists: the first ``n_first``, the next ``n_second``, the rest."""
    return _chunks(args, n_first, n_second, len(args) - n_first - n_second)


def _xp_dtype(xp: Any, dtype: Any) -> Any:
    return getattr(xp, np.dtype(dtype).name)


# ------------------------------------------------------------------------ vmap
#
# A sub-graph is batched the way vmap batches a function: each node's op runs through its
# own batching rule (``op.batch``) on the values with the mapped axis in front, and an op
# whose inputs are all shared runs as it is. Traced on batched avals, that gives the
# batched sub-graph a new node holds; evaluated directly, it runs every branch of a
# ``cond`` whose predicate is mapped. As in JAX (``jax/_src/lax/control_flow``), a loop's
# carry is batched when its initial value or the body's output for it is (a fixpoint over
# the body), so a shared counter stays shared.


def _batch_eval(graph: Graph, vals: Sequence[Any], dims: Sequence[Any]) -> list[tuple]:
    """``graph``'s outputs for inputs ``vals`` whose mapped axes are ``dims`` (0 or None),
    each as ``(value, dim)``."""
    env = {id(v): (x, d) for v, x, d in zip(graph.invars, vals, dims)}

    def read(v: Any) -> tuple:
        return env[id(v)] if isinstance(v, Var) else (v, None)

    for node in graph.nodes:
        op = node.op
        ins = [read(v) for v in node.inputs]
        args = tuple(x for x, _ in ins)
        in_dims = tuple(d for _, d in ins)
        if all(d is None for d in in_dims):
            out = op(*args, **node.params)
            out_dims = (None,) * len(node.outputs) if op.multiple_results else None
        elif op.batch is None:
            raise NotImplementedError(
                f"vmap: op {op.name!r} (inside a cond, while_loop or scan) has no batching "
                "rule yet (defop(batch=...)); apply the function to each example and stack "
                "the results (fgrad.numpy.stack) instead"
            )
        else:
            out, out_dims = op.batch(op, args, in_dims, **node.params)
        if not op.multiple_results:
            out, out_dims = (out,), (out_dims,)
        for v, o, d in zip(node.outputs, out, out_dims):
            env[id(v)] = (o, d)
    return [read(v) for v in graph.outvars]


def _batched_avals(avals: Sequence[ShapeDtype], dims: Sequence[Any], size: int) -> list:
    return [a if d is None else ShapeDtype((size, *a.shape), a.dtype) for a, d in zip(avals, dims)]


def _graph_of(fun: Callable, in_avals: Sequence[ShapeDtype], name: str) -> SubGraph:
    traced = trace_function(fun, in_avals)
    assert not traced.consts, "a batched graph closed over a tracer"
    return close(traced, [], name)


def _vmapped(
    sub: SubGraph, dims: tuple, size: int, force: tuple | None = None
) -> tuple[SubGraph, tuple]:
    """``sub`` on inputs with mapped axes ``dims`` (``size`` examples), and the mapped axes
    of its outputs; the outputs where ``force`` is True are made mapped. Memoised."""
    force = force or (False,) * len(sub.out_avals)
    key = ("vmap", dims, size, force)
    hit = sub.derived.get(key)
    if hit is None:
        out_dims: list = []

        def fun(leaves: list) -> list:
            outs = []
            for (o, d), f in zip(_batch_eval(sub.graph, leaves, dims), force):
                if f and d is None:
                    o, d = with_batch(o, None, size), 0
                outs.append(o)
                out_dims.append(d)
            return outs

        graph = _graph_of(fun, _batched_avals(sub.in_avals, dims, size), f"vmap({sub.name})")
        hit = sub.derived[key] = (graph, tuple(out_dims))
    return hit


def _mapped_carry(body: SubGraph, lead: tuple, carry: list, tail: tuple, size: int) -> list:
    """Which carries a loop must map: those mapped initially, and (to a fixpoint) those the
    body maps from the mapped ones. ``body`` takes ``(*lead, *carry, *tail)`` and returns
    the carry first."""
    while True:
        dims = (*lead, *(0 if b else None for b in carry), *tail)
        out_dims = _vmapped(body, dims, size)[1]
        new = [b or out_dims[k] is not None for k, b in enumerate(carry)]
        if new == carry:
            return carry
        carry = new


def _swap01(x: Any) -> Any:
    """``x`` with its first two axes exchanged (a scan's steps and the mapped axis)."""
    nd = len(shape_of(x))
    return REGISTRY["permute_dims"](x, axes=(1, 0, *range(2, nd)))


def _per_example(mask: Any, rank: int) -> Any:
    """A mapped ``(B,)`` mask as ``(B, 1, ..., 1)``, to select ``rank``-d examples."""
    if rank == 0:
        return mask
    return REGISTRY["reshape"](mask, shape=(shape_of(mask)[0], *([1] * rank)))


def _example_graph(fun: Callable, avals: Sequence[ShapeDtype], name: str) -> SubGraph:
    """A small fixed SubGraph for the registry sweep's Checks (made when a test first asks
    for the Check's params, never at import)."""
    return close(trace_function(lambda leaves: fun(*leaves), avals), [], name)
