"""Reports on a Graph that read it without running it: Graphviz DOT text and a static cost
(FLOPs, peak bytes, op counts), behind ``Graph.to_dot`` and ``Graph.cost``."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from fgrad.core.graph import Graph, Node, Var, _aval_of

__all__ = ["GraphCost", "cost", "to_dot"]


def to_dot(graph: Graph) -> str:
    """``graph`` as Graphviz DOT text: inputs, one box per Node, outputs."""
    lines = ["digraph fgrad {", "  rankdir=TB;", '  node [fontname="monospace"];']
    for v in graph.invars:
        lines.append(f'  {v.name} [shape=ellipse, label="{v.name}: {v.aval}"];')
    for k, node in enumerate(graph.nodes):
        outs = ", ".join(f"{v.name}: {v.aval}" for v in node.outputs)
        lines.append(f'  n{k} [shape=box, label="{node.op.name}\\n{outs}"];')
        for v in node.outputs:
            lines.append(f'  {v.name} [shape=point, label=""];')
            lines.append(f"  n{k} -> {v.name};")
        for v in node.inputs:
            if isinstance(v, Var):
                lines.append(f"  {v.name} -> n{k};")
    for i, v in enumerate(graph.outvars):
        lines.append(f'  out{i} [shape=doubleoctagon, label="out {i}"];')
        if isinstance(v, Var):
            lines.append(f"  {v.name} -> out{i};")
    lines.append("}")
    return "\n".join(lines)


def cost(graph: Graph) -> GraphCost:
    """The static cost of ``graph`` (see ``Graph.cost``)."""
    flops = 0
    counts: dict[str, int] = {}
    for node in graph.nodes:
        counts[node.op.name] = counts.get(node.op.name, 0) + 1
        flops += _node_flops(node)
    return GraphCost(flops, _peak_bytes(graph), counts)


class GraphCost(NamedTuple):
    """What :meth:`Graph.cost` reports."""

    flops: int
    peak_bytes: int
    op_counts: dict[str, int]


def _size(aval: Any) -> int:
    return int(np.prod(getattr(aval, "shape", ()), dtype=np.int64))


def _nbytes(aval: Any) -> int:
    return _size(aval) * np.dtype(aval.dtype).itemsize


# Reductions read every input element once; the names are checked against the registry
# by tests/test_op_names.py.
_REDUCING = frozenset(("sum", "prod", "max", "min", "logsumexp", "argmax", "argmin", "all", "any"))


def _node_flops(node: Node) -> int:
    name = node.op.name
    in_avals = [v.aval if isinstance(v, Var) else _aval_of(v) for v in node.inputs]
    out = node.outputs[0].aval
    if node.op.name == "matmul" and len(in_avals) == 2:
        a = tuple(getattr(in_avals[0], "shape", ()))
        k = a[-1] if a else 1  # the contracted dimension
        return 2 * _size(out) * k
    if name in _REDUCING:
        return _size(in_avals[0]) if in_avals else 0
    return sum(_size(v.aval) for v in node.outputs)


def _peak_bytes(graph: Graph) -> int:
    """Peak bytes of live intermediates when each is freed after its last reader."""
    last_use: dict[int, int] = {}
    for k, node in enumerate(graph.nodes):
        for v in node.inputs:
            if isinstance(v, Var):
                last_use[id(v)] = k
    outputs = {id(v) for v in graph.outvars if isinstance(v, Var)}
    live = peak = 0
    for k, node in enumerate(graph.nodes):
        for v in node.outputs:
            live += _nbytes(v.aval)
        peak = max(peak, live)
        for v in node.outputs:
            if id(v) not in last_use and id(v) not in outputs:
                live -= _nbytes(v.aval)  # never read: dropped at once
        for v in node.inputs:
            if isinstance(v, Var) and last_use.get(id(v)) == k and id(v) not in outputs:
                if any(v is w for w in graph.invars):
                    continue
                live -= _nbytes(v.aval)
    return peak
