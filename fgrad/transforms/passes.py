"""Graph passes used by ``jit``: each a small function from a Graph to a Graph.

Every pass keeps the graph's inputs, outputs and results; tests in
``tests/transforms/test_passes.py`` run them on small graphs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fgrad._keys import exact_key
from fgrad.core.graph import Graph, Node, Var
from fgrad.ops.elementwise import add, astype, divide, full_like, multiply, subtract
from fgrad.ops.indexing import scatter_set
from fgrad.ops.shape import broadcast_to, concatenate, permute_dims, reshape
from fgrad.ops.traits import BROADCASTING, COMMUTATIVE, VIEWS
from fgrad.core.trace import Tracer
from fgrad.tensor import ShapeDtype, Tensor, _wrap

__all__ = [
    "concat_scatters",
    "cse",
    "dce",
    "fold_constants",
    "has_effects",
    "inline_rules",
    "optimize",
    "simplify",
]

_SCALAR_TYPES = (bool, int, float, complex)


def _rebuild(graph: Graph, nodes: list[Node], env: dict | None = None) -> Graph:
    """``graph`` with ``nodes``, its outputs renamed by ``env`` (a pass's replacements)."""
    outvars = graph.outvars if env is None else [_sub(v, env) for v in graph.outvars]
    return Graph(graph.invars, nodes, outvars, graph.in_tree, graph.out_tree)


def _sub(x: Any, env: dict) -> Any:
    return env.get(id(x), x) if isinstance(x, Var) else x


def _renamed(node: Node, env: dict) -> Node:
    """``node`` reading the replacements in ``env`` for its inputs."""
    inputs = [_sub(v, env) for v in node.inputs]
    return Node(node.op, inputs, node.params, node.outputs, node.source)


def has_effects(node: Node) -> bool:
    """Whether running ``node`` does something besides computing its outputs: its op is
    effectful (a host callback), or a sub-graph in its params (a loop body, a branch, a
    custom rule's function) holds such a node. Passes keep these nodes, in order."""
    if node.op.effectful:
        return True
    for value in node.params.values():
        if type(value) is tuple:
            if not value or type(value[0]) in _PLAIN:  # shapes, axes: the common case
                continue
        elif type(value) in _PLAIN:
            continue
        for sub in value if type(value) is tuple else (value,):
            graph = getattr(sub, "graph", None)
            if isinstance(graph, Graph) and any(has_effects(n) for n in graph.nodes):
                return True
    return False


# Param types that never hold a sub-graph (checked first: jit runs has_effects per node
# in every pass).
_PLAIN = frozenset((int, float, bool, str, complex, type(None), np.dtype, slice))


def dce(graph: Graph) -> Graph:
    """Dead-code elimination: drop nodes none of whose outputs reach the graph's outputs
    (never a node with effects, :func:`has_effects`)."""
    live = {id(v) for v in graph.outvars if isinstance(v, Var)}
    kept = []
    for node in reversed(graph.nodes):
        if any(id(v) in live for v in node.outputs) or has_effects(node):
            kept.append(node)
            live.update(id(v) for v in node.inputs if isinstance(v, Var))
    kept.reverse()
    return _rebuild(graph, kept)


def _const_key(x: Any) -> Any:
    if isinstance(x, Var):
        return ("var", id(x))
    if isinstance(x, (bool, int, float, complex)):
        return ("py", type(x), exact_key(x))
    # Large constants are compared by identity: equal-valued copies are rare and costly to hash.
    return ("obj", id(x))


def cse(graph: Graph) -> Graph:
    """Common-subexpression elimination: one node for each (op, inputs, params).

    The inputs of commutative ops (``add``, ``multiply``, comparisons for equality, logical
    and bitwise ops) count in either order: ``x * y`` and ``y * x`` are one node. Nodes with
    effects (:func:`has_effects`) are never merged: two prints print twice.
    """
    env: dict[int, Var] = {}
    seen: dict[Any, Node] = {}
    nodes = []
    for node in graph.nodes:
        inputs = [_sub(v, env) for v in node.inputs]
        try:
            in_keys = tuple(_const_key(v) for v in inputs)
            if node.op in COMMUTATIVE and len(in_keys) == 2:
                in_keys = tuple(sorted(in_keys, key=repr))
            params = tuple(sorted((k, exact_key(v)) for k, v in node.params.items()))
            key = (node.op.name, in_keys, params)
            hash(key)
        except TypeError:  # unhashable params: keep the node as it is
            key = None
        if key is not None and has_effects(node):
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
    return _rebuild(graph, nodes, env)


def simplify(graph: Graph) -> Graph:
    """Algebraic simplification, mostly of the plumbing that backward graphs are full of.

    * ``permute_dims`` of ``permute_dims`` and ``reshape`` of ``reshape`` become one node
      (the latter when the inner reshape has no other reader); two reshapes of one value
      become a reshape of the other (a reshape of a non-contiguous array copies);
    * ``reshape``/``broadcast_to`` to the same shape, ``astype`` to the same dtype and
      ``permute_dims`` by the identity are dropped;
    * ``x * 1``, ``1 * x``, ``x / 1``, ``x - 0`` and ``x + (-0.0)`` (constants of any
      shape whose every element is that value) are dropped when the result has ``x``'s
      shape and dtype: each is exact in IEEE arithmetic, NaN, infinities and signed zeros
      included. (``x + 0`` is not: it turns ``-0.0`` into ``+0.0``.)
    * an input of a broadcasting elementwise op that is ``broadcast_to(y)`` reads ``y``
      itself when numpy's broadcasting gives the same output shape: the op broadcasts
      anyway, and the broadcast node usually dies.
    """
    env: dict[int, Any] = {}
    producer: dict[int, Node] = {}
    readers: dict[int, int] = {}
    for node in graph.nodes:
        for v in node.inputs:
            if isinstance(v, Var):
                readers[id(v)] = readers.get(id(v), 0) + 1
    for v in graph.outvars:
        if isinstance(v, Var):
            readers[id(v)] = readers.get(id(v), 0) + 1
    reshaped: dict[int, Var] = {}  # input -> the first reshape of it
    nodes = []
    for node in graph.nodes:
        node = _renamed(node, env)
        fused = _fuse(node, producer, readers)
        node = _share_reshape(node, reshaped) if fused is node else fused
        node = _skip_broadcasts(node, producer)
        same = _identity_input(node)
        if same is not None:
            env[id(node.outputs[0])] = same
            continue
        for v in node.outputs:
            producer[id(v)] = node
        if node.op is reshape and isinstance(node.inputs[0], Var):
            reshaped.setdefault(id(node.inputs[0]), node.outputs[0])
        nodes.append(node)
    return dce(_rebuild(graph, nodes, env))


def _fuse(node: Node, producer: dict, readers: dict) -> Node:
    op = node.op
    if op not in (permute_dims, reshape) or len(node.inputs) != 1:
        return node
    prev = producer.get(id(node.inputs[0]))
    if prev is None or prev.op is not op:
        return node
    if op is reshape and readers.get(id(node.inputs[0]), 0) > 1:
        return node  # the inner reshape stays (it may copy): read it rather than copy twice
    params = node.params
    if op is permute_dims:
        inner, outer = prev.params["axes"], node.params["axes"]
        params = {"axes": tuple(inner[a] for a in outer)}
    return Node(node.op, [prev.inputs[0]], params, node.outputs, node.source)


def _share_reshape(node: Node, reshaped: dict) -> Node:
    """A second reshape of the same value reads the first reshape's result: reshaping a
    non-contiguous array copies it, and the copy can then be reshaped for free."""
    if node.op is not reshape or len(node.inputs) != 1 or not isinstance(node.inputs[0], Var):
        return node
    first = reshaped.get(id(node.inputs[0]))
    if first is None:
        return node
    return Node(node.op, [first], node.params, node.outputs, node.source)


def _skip_broadcasts(node: Node, producer: dict) -> Node:
    if node.op not in BROADCASTING or node.op.multiple_results:
        return node
    inputs = list(node.inputs)
    changed = False
    for i, v in enumerate(inputs):
        prev = producer.get(id(v)) if isinstance(v, Var) else None
        if prev is None or prev.op is not broadcast_to or len(prev.inputs) != 1:
            continue
        trial = inputs[:i] + [prev.inputs[0]] + inputs[i + 1 :]
        try:
            shape = np.broadcast_shapes(*(_shape(x) for x in trial))
        except ValueError:
            continue
        if shape == tuple(node.outputs[0].aval.shape):
            inputs, changed = trial, True
    return Node(node.op, inputs, node.params, node.outputs, node.source) if changed else node


def _shape(x: Any) -> tuple:
    if isinstance(x, Var):
        return tuple(x.aval.shape)
    return tuple(getattr(x, "shape", ()))


def _const_data(x: Any) -> Any:
    """The array or scalar of a constant graph input (None for a Var, and for a tracer of
    an outer transform that the traced function closed over: its value is not known)."""
    if isinstance(x, (Var, Tracer)):
        return None
    return x._data if isinstance(x, Tensor) else x


def _all_equal(x: Any, value: float, negative_zero: bool = False) -> bool:
    """``x`` is a real constant whose every element equals ``value``; for a zero, also of
    the given sign (an integer zero counts as ``+0.0``)."""
    data = _const_data(x)
    if data is None:
        return False
    arr = np.asarray(data)
    if arr.dtype.kind not in "biuf" or arr.size == 0:
        return False
    # A broadcast constant (zero strides) is checked on one copy of its values.
    core = arr[tuple(0 if st == 0 else slice(None) for st in arr.strides)]
    if not np.all(core == value):
        return False
    if value == 0:
        signs = np.signbit(core) if arr.dtype.kind == "f" else np.zeros(1, bool)
        return bool(np.all(signs == negative_zero))
    return True


def _identity_input(node: Node) -> Any:
    """The input ``node`` passes through unchanged, or None."""
    op, out = node.op, node.outputs[0]
    if node.op.multiple_results:
        return None
    if len(node.inputs) == 1 and isinstance(node.inputs[0], Var):
        x = node.inputs[0]
        if op in (reshape, broadcast_to, astype) and x.aval == out.aval:
            return x
        if op is permute_dims and tuple(node.params["axes"]) == tuple(
            range(len(node.params["axes"]))
        ) and x.aval == out.aval:  # not a weak scalar for the array made of it
            return x
        return None
    if len(node.inputs) != 2 or node.params:
        return None
    a, b = node.inputs
    candidates = []
    if op is multiply:
        candidates = [(a, b, 1.0, False), (b, a, 1.0, False)]
    elif op is divide:
        candidates = [(a, b, 1.0, False)]
    elif op is subtract:
        candidates = [(a, b, 0.0, False)]
    elif op is add:
        candidates = [(a, b, 0.0, True), (b, a, 0.0, True)]
    for x, c, value, neg in candidates:
        if isinstance(x, Var) and x.aval == out.aval and _all_equal(c, value, neg):
            return x
    return None


# ------------------------------------------------------------------------ constant folding

_FOLD_LIMIT = 1 << 16  # elements: larger results stay nodes (memory held by the graph)


def fold_constants(graph: Graph) -> Graph:
    """Evaluate nodes whose inputs are all constants, once, at compile time.

    ``full_like`` of a traced value depends only on its shape and dtype, so it counts as a
    constant too: it becomes a read-only broadcast of one scalar (no memory). Results of
    more than 65,536 elements stay nodes, unless the op returns a view (reshape,
    broadcast_to ...) of a constant that is already held. Nodes that give the graph's
    outputs are kept, so that every call returns fresh arrays, and effectful ones (a
    callback on constants runs at every call).
    """
    env: dict[int, Any] = {}
    outputs = {id(v) for v in graph.outvars if isinstance(v, Var)}
    nodes = []
    for node in graph.nodes:
        node = _renamed(node, env)
        folded = None
        if (
            not node.op.multiple_results
            and id(node.outputs[0]) not in outputs
            and not has_effects(node)  # a callback runs when the program runs, not now
        ):
            folded = _fold(node)
        if folded is not None:
            env[id(node.outputs[0])] = folded
            continue
        nodes.append(node)
    return _rebuild(graph, nodes, env)


def _fold(node: Node) -> Any:
    out = node.outputs[0].aval
    op = node.op
    if op is full_like and isinstance(out, ShapeDtype):
        fill = np.asarray(node.params["fill_value"], dtype=out.dtype)
        view = np.broadcast_to(fill, out.shape)
        return _wrap(view)
    if any(isinstance(v, Var) for v in node.inputs):
        return None
    size = math.prod(out.shape)
    if size > _FOLD_LIMIT and node.op not in VIEWS:
        return None
    try:
        with np.errstate(all="ignore"):
            result = node.op.eval_arrays(*[_const_data(v) for v in node.inputs], **node.params)
    except Exception:  # noqa: BLE001  (leave the node to run, and raise, as it would have)
        return None
    if not hasattr(result, "shape") or tuple(result.shape) != tuple(out.shape):
        return None
    if np.dtype(result.dtype) != np.dtype(out.dtype):
        return None
    return _wrap(result)


# ------------------------------------------------------------------------ scatters


def concat_scatters(graph: Graph) -> Graph:
    """A sum of ``scatter_set`` into zeros at distinct leading indices, covering every
    index, becomes one ``concatenate`` (of each piece reshaped to ``(1, ...)``).

    This is the backward pass of unpacking an array along its first axis (``q, k, v =
    qkv[0], qkv[1], qkv[2]``): instead of a zero array, a copy per piece and a sum per
    pair, one pass writes the result. Exact up to the sign of zero (``-0.0 + 0`` is
    ``+0.0``, and a concatenation keeps ``-0.0``).
    """
    pieces: dict[int, tuple] = {}  # var -> (aval, {index: value})
    env: dict[int, Any] = {}
    nodes = []
    for node in graph.nodes:
        node = _renamed(node, env)
        nodes.append(node)
        op, out = node.op, node.outputs[0]
        if op is scatter_set and len(node.inputs) == 2 and _all_equal(node.inputs[0], 0.0):
            index = node.params.get("index")
            v = node.inputs[1]
            if (
                isinstance(index, tuple)
                and len(index) == 1
                and type(index[0]) is int
                and 0 <= index[0] < (out.aval.shape or (0,))[0]
                and isinstance(v, Var)
                and v.aval == ShapeDtype(tuple(out.aval.shape[1:]), out.aval.dtype)
            ):
                pieces[id(out)] = (out.aval, {index[0]: v})
        elif op is add and len(node.inputs) == 2:
            a, b = (pieces.get(id(x)) if isinstance(x, Var) else None for x in node.inputs)
            if a and b and a[0] == b[0] == out.aval and not (a[1].keys() & b[1].keys()):
                merged = {**a[1], **b[1]}
                pieces[id(out)] = (out.aval, merged)
                if len(merged) == out.aval.shape[0]:
                    nodes.pop()
                    rows = []
                    for i in range(out.aval.shape[0]):
                        v = merged[i]
                        row = Var(ShapeDtype((1, *v.aval.shape), v.aval.dtype))
                        nodes.append(
                            Node(
                                reshape,
                                [v],
                                {"shape": row.aval.shape},
                                [row],
                                node.source,
                            )
                        )
                        rows.append(row)
                    nodes.append(
                        Node(concatenate, rows, {"axis": 0}, [out], node.source)
                    )
    return dce(_rebuild(graph, nodes, env))


def inline_rules(graph: Graph) -> Graph:
    """Replace each node of a custom rule (custom_vjp, custom_jvp, checkpoint) by the nodes
    of the function it calls, and optimise the result.

    For the program ``jit`` runs, once no transform will differentiate it: the rule is no
    longer needed, and the function's nodes fuse and share buffers with their neighbours.
    (The graph replayed under an outer transform keeps the rule nodes.) A checkpoint's
    recomputation in a backward pass reads its inputs through ``optimization_barrier``, so
    inlining does not merge it back into the forward pass.
    """
    from fgrad.transforms._rule_ops import RULE_OPS

    if not any(node.op in RULE_OPS for node in graph.nodes):
        return graph
    env: dict[int, Any] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        node = _renamed(node, env)
        if node.op not in RULE_OPS:
            nodes.append(node)
            continue
        fun = node.params["fun"].graph
        inner = {id(v): x for v, x in zip(fun.invars, node.inputs)}
        for n in fun.nodes:
            outputs = [Var(v.aval) for v in n.outputs]
            nodes.append(Node(n.op, [_sub(v, inner) for v in n.inputs], n.params, outputs, n.source))
            inner.update((id(v), w) for v, w in zip(n.outputs, outputs))
        for v, o in zip(node.outputs, fun.outvars):
            env[id(v)] = _sub(o, inner)
    return inline_rules(optimize(_rebuild(graph, nodes, env)))  # rules inside rules too


def optimize(graph: Graph) -> Graph:
    """The passes ``jit`` runs, in order."""
    graph = fold_constants(simplify(graph))
    graph = concat_scatters(simplify(graph))
    return dce(cse(simplify(cse(graph))))
