"""Staging: tracing a function on avals into a :class:`~fgrad.core.graph.Graph`.

A :class:`GraphTracer` stands for a value by its aval alone; each op applied to one
computes its output aval with its shape rule and appends a Node to the running
:class:`GraphTrace` (no kernel runs). ``jit``, ``make_graph``, ``eval_shape`` and the bodies
of control flow are traced here. Python floats that ``jit`` traces are weakly typed
(``ShapeDtype.weak``; :func:`stage` says which arguments are): Python's operators on them give weak results (:func:`weak`), and an
op whose inputs promote together casts a weak input to the dtype of the others.
Reference: JAX's weak types (https://docs.jax.dev/en/latest/type_promotion.html).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree
from fgrad.core.graph import Graph, Node, Var, _aval_of, _user_source
from fgrad.core.trace import Trace, Tracer, new_trace
from fgrad.tensor import ShapeDtype, Tensor, _wrap

__all__ = ["GraphTrace", "GraphTracer", "stage", "weak"]


class GraphTracer(Tracer):
    __slots__ = ("var",)

    def __init__(self, trace, var):
        self._trace = trace
        self.var = var

    @property
    def aval(self) -> ShapeDtype:
        return self.var.aval

    @property
    def device(self):
        from fgrad.backend import CPU

        return CPU

    def _concrete(self):
        from fgrad.errors import ConcretizationError

        where = _user_source()
        origin = (
            " (it comes from a Python float or complex argument, which jit traces as JAX "
            "does so that a new value does not compile again, or from a Python number "
            "carried through a loop)"
            if self.aval.weak
            else ""
        )
        raise ConcretizationError(
            f"a traced value {self.aval} has no concrete value while tracing"
            + (f" (at {where})" if where else "")
            + origin
            + ": Python control flow (if/while/bool/float) on it cannot be recorded in a "
            "graph. Mark the argument static (jit's static_argnums / static_argnames), or "
            "use fgrad.numpy.where or fgrad.lax.cond / while_loop / fori_loop / scan so the "
            "choice is part of the graph"
        )


def _traced_param(op: Any, name: str, value: Tracer) -> Exception:
    from fgrad.errors import ConcretizationError

    where = _user_source()
    hint = (
        "jit traces Python float arguments (as JAX does), so a float that an op needs as a "
        "constant must be marked static (static_argnums / static_argnames)"
        if value.weak
        else "mark the argument it comes from static (jit's static_argnums / static_argnames)"
    )
    return ConcretizationError(
        f"op {op.name!r} takes {name!r} as a compile-time constant, but got a traced value "
        f"{value.aval}" + (f" (at {where})" if where else "") + f": {hint}"
    )


class GraphTrace(Trace):
    """Records Nodes from avals alone: no kernel runs."""

    __slots__ = ("nodes",)

    def __init__(self):
        super().__init__()
        self.nodes: list[Node] = []

    def process(self, op, args, params):
        for name, value in params.items():
            if isinstance(value, Tracer):
                raise _traced_param(op, name, value)
        inputs = [a.var if type(a) is GraphTracer and a._trace is self else a for a in args]
        if op.promotes:
            inputs = self._promote_weak(op, inputs)
        avals = [v.aval if isinstance(v, Var) else _aval_of(v) for v in inputs]
        out_avals = op.abstract_eval(*avals, **params)
        if op.multiple_results:
            outputs = [Var(_strong(a)) for a in out_avals]
        else:
            outputs = [Var(_strong(out_avals))]
        self.nodes.append(Node(op, inputs, params, outputs, _user_source()))
        tracers = tuple(GraphTracer(self, v) for v in outputs)
        return tracers if op.multiple_results else tracers[0]

    def _promote_weak(self, op, inputs: list) -> list:
        """A weakly typed input of an op whose inputs promote together takes their dtype,
        by an ``astype`` node, so the program (which runs it as a 0-d array, strongly typed
        in numpy) computes in the dtype promotion gave: ``float32 x * lr`` stays float32."""
        positions = [k for k in op.promotes if k < len(inputs)]
        weak = [k for k in positions if _weak_input(inputs[k])]
        if not weak or all(k in weak or type(inputs[k]) in _NUMBERS for k in positions):
            return inputs  # nothing weak, or all weak: 0-d arrays promote as the numbers do
        from fgrad.core.op import REGISTRY  # (it imports this module)
        from fgrad.dtypes import result_type

        target = np.dtype(result_type(*[getattr(inputs[k], "aval", inputs[k]) for k in positions]))
        inputs = list(inputs)
        for k in weak:
            if inputs[k].aval.dtype != target:
                x = GraphTracer(self, inputs[k]) if isinstance(inputs[k], Var) else inputs[k]
                inputs[k] = self.process(REGISTRY["astype"], [x], {"dtype": target}).var
        return inputs


_NUMBERS = (bool, int, float, complex)


def _weak_input(v: Any) -> bool:
    """A weakly typed Var of this trace, or an outer trace's tracer read as a constant."""
    aval = getattr(v, "aval", None)
    return aval is not None and isinstance(v, (Var, Tracer)) and aval.weak


def _strong(aval: Any) -> Any:
    # An op's result is strongly typed; Python's operators on weak values mark theirs weak
    # (``weak``), and a shape rule that hands back an input's aval must not keep its bit.
    return ShapeDtype(aval.shape, aval.dtype) if getattr(aval, "weak", False) else aval


def weak(x: Any) -> Any:
    """``x`` (the result of the op just traced) marked weakly typed, as the Python number
    eager code has there: what Python's operators give on weak values, a loop's carry that
    stays a Python number. Other values come back as they are.

    Example:
        >>> g = fgrad.make_graph(lambda x, lr: x * -lr)(fnp.ones(2, dtype="float32"), 0.5)
        >>> [str(v.aval) for node in g.nodes for v in node.outputs]
        ['weak f64[]', 'f32[]', 'f32[2]']
    """
    if type(x) is not GraphTracer or x.aval.weak:
        return x
    nodes = x._trace.nodes
    if not (nodes and any(v is x.var for v in nodes[-1].outputs)):  # read already: a copy
        from fgrad.core.op import REGISTRY  # (it imports this module)

        x = x._trace.process(REGISTRY["astype"], [x], {"dtype": x.aval.dtype})
    x.var.aval = ShapeDtype(x.aval.shape, x.aval.dtype, True)  # fresh: no reader yet
    return x


def stage(flat_f: Callable, leaves: Sequence[Any], in_tree: Any, name: str = "jit") -> Graph:
    """Trace ``flat_f(*leaves)`` into a Graph: the one policy for what becomes an input.

    Tensors, arrays and ShapeDtypes become input Vars of their avals; Python floats and
    complex numbers become weakly typed inputs (a new value needs no new trace, as in JAX);
    Python ints and bools stay constants (they are shapes, axes and flags far more often
    than data). ``jit``, ``make_graph`` and ``eval_shape`` trace through here.

    Raises:
        TypeError: an output leaf is not an array or a number.
        TracerLeakError: an output leaf is a tracer of a transform that has returned.
    """
    with new_trace(GraphTrace()) as trace:
        invars, inputs = [], []
        for x in leaves:
            if type(x) in STATIC_SCALARS:
                inputs.append(x)
                continue
            v = Var(_input_aval(x))
            invars.append(v)
            inputs.append(GraphTracer(trace, v))
        out_leaves, out_tree = tree.flatten(flat_f(*inputs))
    outvars = [o.var if type(o) is GraphTracer and o._trace is trace else o for o in out_leaves]
    for k, o in enumerate(outvars):
        if not isinstance(o, (Var, Tensor)) and type(o) not in _NUMBERS and not hasattr(o, "dtype"):
            raise TypeError(
                f"{name}: the function's output leaf {k} is a {type(o).__name__} ({o!r:.40}), "
                "not an array or a Python number; a traced function returns pytrees of arrays "
                "and numbers (return other values from a wrapper around the traced part)"
            )
        if isinstance(o, Tracer) and not o._trace.alive:
            from fgrad.errors import TracerLeakError

            raise TracerLeakError(
                f"{name}: the function's output leaf {k} is a tracer {o.aval} of a transform "
                "that has already returned; return values out of the transformed function "
                "instead of storing tracers in outer variables"
            )
    # An output that is a live outer transform's tracer (f returned a value it closed
    # over) is kept: such a graph is replayed under that transform, not cached.
    return Graph(invars, trace.nodes, outvars, in_tree, out_tree)


# The one policy for Python scalar arguments (jit, make_graph, eval_shape read it here):
# floats and complex numbers are traced, weakly typed, so a new value needs no new trace;
# ints and bools stay constants (shapes, axes, counts and flags far more often than data).
TRACED_SCALARS = (float, complex)
STATIC_SCALARS = (bool, int)


def _input_aval(x: Any) -> ShapeDtype:
    if type(x) in TRACED_SCALARS:
        return ShapeDtype((), np.dtype(type(x)), True)
    if isinstance(x, ShapeDtype):
        return ShapeDtype(tuple(x.shape), np.dtype(x.dtype), x.weak)
    if isinstance(x, Tensor):
        return x.aval
    return _aval_of(x if hasattr(x, "shape") else _wrap(np.asarray(x)))
