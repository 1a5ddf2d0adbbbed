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

    Fuses ``permute_dims`` of ``permute_dims`` and ``reshape`` of ``reshape`` into one node,
    then removes ``reshape``/``broadcast_to`` to the same shape, ``astype`` to the same
    dtype and ``permute_dims`` by the identity.
    """
    env: dict[int, Any] = {}
    producer: dict[int, Node] = {}
    nodes = []
    for node in graph.nodes:
        node = Node(node.op, [_sub(v, env) for v in node.inputs], node.params, node.outputs, node.source)
        node = _fuse(node, producer)
        if _is_identity(node):
            env[id(node.outputs[0])] = node.inputs[0]
            continue
        for v in node.outputs:
            producer[id(v)] = node
        nodes.append(node)
    return dce(_rebuild(graph, nodes, [_sub(v, env) for v in graph.outvars]))


def _fuse(node: Node, producer: dict) -> Node:
    name = node.op.name
    if name not in ("permute_dims", "reshape") or len(node.inputs) != 1:
        return node
    prev = producer.get(id(node.inputs[0]))
    if prev is None or prev.op.name != name:
        return node
    params = node.params
    if name == "permute_dims":
        inner, outer = prev.params["axes"], node.params["axes"]
        params = {"axes": tuple(inner[a] for a in outer)}
    return Node(node.op, [prev.inputs[0]], params, node.outputs, node.source)


def _is_identity(node: Node) -> bool:
    if len(node.inputs) != 1 or not isinstance(node.inputs[0], Var):
        return False
    name, x, out = node.op.name, node.inputs[0], node.outputs[0]
    if name in ("reshape", "broadcast_to", "astype"):
        return x.aval == out.aval
    if name == "permute_dims":
        axes = tuple(node.params["axes"])
        return axes == tuple(range(len(axes)))
    return False


def optimize(graph: Graph) -> Graph:
    """The passes ``jit`` runs, in order."""
    return dce(cse(simplify(graph)))

