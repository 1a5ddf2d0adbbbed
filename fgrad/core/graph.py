"""Node graphs, fgrad's IR: what a function does, as a list of op applications.

A :class:`Graph` holds input Vars, Nodes in topological order and output Vars; it can be
printed, evaluated on new inputs, costed, and optimised and compiled by
``jit``. :mod:`fgrad.core.staging` makes graphs from functions.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad import tree
from fgrad.core.trace import Tracer
from fgrad.tensor import ShapeDtype, Tensor

__all__ = ["Var", "Node", "Graph", "source_stack"]

_FGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Var:
    """A value in a graph: produced by one Node (or a graph input), with its aval."""

    __slots__ = ("aval", "name")

    def __init__(self, aval: ShapeDtype, name: str = ""):
        self.aval = aval
        self.name = name

    def __repr__(self) -> str:
        return self.name or f"Var<{self.aval}>"


class Node:
    """One op application: ``outputs = op(*inputs, **params)``.

    ``inputs`` holds Vars and constants (Tensors, arrays, Python scalars).
    """

    __slots__ = ("op", "inputs", "params", "outputs", "source")

    def __init__(self, op, inputs, params, outputs, source=""):
        self.op = op
        self.inputs = inputs
        self.params = params
        self.outputs = outputs
        self.source = source


class Graph:
    """A topologically ordered list of Nodes with input and output Vars.

    ``str(graph)`` lists one Node a line: output name and aval, op, inputs, static params,
    and the user's source line.
    """

    def __init__(self, invars, nodes, outvars, in_tree, out_tree):
        self.invars = invars
        self.nodes = nodes
        self.outvars = outvars
        self.in_tree = in_tree
        self.out_tree = out_tree
        _name_vars(self)

    def __str__(self) -> str:
        def show(v):
            if isinstance(v, Var):
                return v.name
            if isinstance(v, Tensor) and not isinstance(v, Tracer):
                return f"const:{v.aval}" if v.size != 1 else repr(v.item())
            return repr(v) if not hasattr(v, "shape") else f"const:{ShapeDtype(tuple(v.shape), v.dtype)}"

        head = ", ".join(f"{v.name}:{v.aval}" for v in self.invars)
        lines = [f"graph({head}) {{"]
        for node in self.nodes:
            outs = ", ".join(f"{v.name}:{v.aval}" for v in node.outputs)
            args = " ".join(show(v) for v in node.inputs)
            params = " ".join(f"{k}={v}" for k, v in node.params.items())
            line = f"  {outs} = {node.op.name} {args}" + (f" [{params}]" if params else "")
            lines.append(line + (f"  # {node.source}" if node.source else ""))
        lines.append(f"  return {', '.join(show(v) for v in self.outvars)}")
        lines.append("}")
        return "\n".join(lines)

    __repr__ = __str__

    def to_dot(self) -> str:
        """The graph as Graphviz DOT text (``dot -Tpng``): inputs, one box per Node, outputs.

        Example:
            >>> g = fgrad.make_graph(lambda x: fnp.exp(x) * 2.0)(fnp.ones(2))
            >>> print(g.to_dot().splitlines()[0])
            digraph fgrad {
        """
        from fgrad.core.report import to_dot

        return to_dot(self)

    def cost(self) -> Any:
        """A static cost report (a ``GraphCost``), from shapes alone before anything runs.

        FLOPs count one per output element for elementwise and shape ops, one per input
        element for reductions, ``2 m n k`` per matrix product (times the batch); peak bytes
        are the most bytes of values the graph computes (intermediates and outputs, not
        inputs) alive at once when each is freed after its last use, as ``jit`` runs it.

        Example:
            >>> g = fgrad.make_graph(lambda a, b: fnp.sum(a @ b))(fnp.ones((4, 3)), fnp.ones((3, 5)))
            >>> c = g.cost()
            >>> c.flops, c.peak_bytes, dict(c.op_counts)
            (140, 168, {'matmul': 1, 'sum': 1})
        """
        from fgrad.core.report import cost

        return cost(self)

    def evaluate(self, *args: Any) -> Any:
        """Run the graph op by op on ``args`` (pytrees like the traced ones).

        Ops run through the normal dispatch, so a running transform records them.
        """
        leaves, in_tree = tree.flatten(args)
        if in_tree != self.in_tree:
            raise ValueError(f"Graph.evaluate: arguments {in_tree} differ from {self.in_tree}")
        return tree.unflatten(self.out_tree, self.evaluate_flat(leaves))

    def evaluate_flat(self, leaves: list, before: Callable | None = None) -> list:
        """Run the graph on one value per input Var; returns one value per output.

        ``before(node)``, when given, is called before each node runs (jit uses it to say
        which op failed)."""
        env = {id(v): x for v, x in zip(self.invars, leaves)}

        def read(v):
            return env[id(v)] if isinstance(v, Var) else v

        sources = _SOURCES.stack
        for node in self.nodes:
            if before is not None:
                before(node)
            if node.source:  # ops replayed under another transform keep their traced line
                sources.append(node.source)
            try:
                out = node.op(*[read(v) for v in node.inputs], **node.params)
            finally:
                if node.source:
                    sources.pop()
            outs = out if node.op.multiple_results else (out,)
            for v, o in zip(node.outputs, outs):
                env[id(v)] = o
        return [read(v) for v in self.outvars]


def _name_vars(graph: Graph) -> None:
    names = _names()
    for v in graph.invars:
        v.name = next(names)
    for node in graph.nodes:
        for v in node.outputs:
            v.name = next(names)


def _names():
    letters = "abcdefghijklmnopqrstuvwxyz"
    for n in itertools.count(1):
        for combo in itertools.product(letters, repeat=n):
            yield "".join(combo)


# While reverse mode applies a VJP rule, the line of the forward op it differentiates
# (with a note saying so), and while a graph is replayed, each node's traced line: the ops
# run then name that line, not the line that called grad or the jitted function.
class _ThreadSources(threading.local):
    def __init__(self) -> None:
        self.stack: list[str] = []


_SOURCES = _ThreadSources()  # per thread, as the trace stack


def source_stack() -> list[str]:
    """This thread's stack of source lines that ops run now should name."""
    return _SOURCES.stack


def _user_source() -> str:
    """``file:line`` of the innermost frame outside fgrad: where the user called the op."""
    stack = _SOURCES.stack
    if stack:
        return stack[-1]
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_FGRAD_DIR):
        frame = frame.f_back
    if frame is None:
        return ""
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _aval_of(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.aval
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapeDtype(tuple(x.shape), np.dtype(x.dtype))
    return x  # a Python scalar stays weakly typed
