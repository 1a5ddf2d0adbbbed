"""Graph passes used by ``jit``: each a small function from a Graph to a Graph.

Every pass keeps the graph's inputs, outputs and results; tests in
``tests/transforms/test_passes.py`` run them on small graphs.
"""

from __future__ import annotations

from typing import Any

from fgrad.core.graph import Graph, Node, Var

__all__ = ["dce", "cse", "simplify", "optimize"]


def _rebuild(graph: Graph, nodes: list[Node], outvars: list[Any]) -> Graph:
    return Graph(graph.invars, nodes, outvars, graph.in_tree, graph.out_tree)


def _sub(x: Any, env: dict) -> Any:
    return env.get(id(x), x) if isinstance(x, Var) else x


def dce(graph: Graph) -> Graph:
    """Dead-code elimination: drop nodes none of whose outputs reach the graph's outputs."""
    live = {id(v) for v in graph.outvars if isinstance(v, Var)}
    kept = []
    for node in reversed(graph.nodes):
        if any(id(v) in live for v in node.outputs):
            kept.append(node)
            live.update(id(v) for v in node.inputs if isinstance(v, Var))
    kept.reverse()
    return _rebuild(graph, kept, graph.outvars)


def _const_key(x: Any) -> Any:
    if isinstance(x, Var):
        return ("var", id(x))
    if isinstance(x, (bool, int, float, complex)):
        return ("py", type(x), x)
    # Large constants are compared by identity: equal-valued copies are rare and costly to hash.
    return ("obj", id(x))


def cse(graph: Graph) -> Graph:
    """Common-subexpression elimination: one node for each (op, inputs, params)."""
    env: dict[int, Var] = {}
    seen: dict[Any, Node] = {}
    nodes = []
    for node in graph.nodes:
        inputs = [_sub(v, env) for v in node.inputs]
        try:
            key = (node.op.name, tuple(_const_key(v) for v in inputs), tuple(sorted(node.params.items())))
            hash(key)
        except TypeError:  # unhashable params: keep the node as it is
            key = None
        prev = seen.get(key) if key is not None else None
        if prev is not None:
            for old, new in zip(node.outputs, prev.outputs):
                env[id(old)] = new
            continue
        new_node = Node(node.op, inputs, node.params, node.outputs, node.source)
        if key is not None:
            seen[key] = new_node
        nodes.append(new_node)
    return _rebuild(graph, nodes, [_sub(v, env) for v in graph.outvars])


def simplify(graph: Graph) -> Graph:
    """Algebraic simplification of shape plumbing, common in backward graphs.

    Removes ``reshape``/``broadcast_to`` to the same shape, ``astype`` to the same dtype and
    ``permute_dims`` by the identity; fuses ``permute_dims`` of ``permute_dims`` and
    ``reshape`` of ``reshape`` into one node.
    """
    env: dict[int, Any] = {}
    producer: dict[int, Node] = {}
    nodes = []
    for node in graph.nodes:
        inputs = [_sub(v, env) for v in node.inputs]
        name, params = node.op.name, node.params
        node = Node(node.op, inputs, params, node.outputs, node.source)
        x = inputs[0] if inputs else None
        out = node.outputs[0]
        if isinstance(x, Var) and len(inputs) == 1:
            same_aval = x.aval == out.aval
            if name in ("reshape", "broadcast_to", "astype") and same_aval:
                env[id(out)] = x
                continue
            if name == "permute_dims" and tuple(params["axes"]) == tuple(range(len(params["axes"]))):
                env[id(out)] = x
                continue
            prev = producer.get(id(x))
            if prev is not None and prev.op.name == name and name == "permute_dims":
                inner, outer = prev.params["axes"], params["axes"]
                node = Node(node.op, [prev.inputs[0]], {"axes": tuple(inner[a] for a in outer)}, node.outputs, node.source)
            elif prev is not None and prev.op.name == name and name == "reshape":
                node = Node(node.op, [prev.inputs[0]], params, node.outputs, node.source)
        for v in node.outputs:
            producer[id(v)] = node
        nodes.append(node)
    return dce(_rebuild(graph, nodes, [_sub(v, env) for v in graph.outvars]))


def optimize(graph: Graph) -> Graph:
    """The passes ``jit`` runs, in order."""
    return dce(cse(simplify(graph)))

