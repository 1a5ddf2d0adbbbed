"""Attention of a few queries as one compiled numba loop: a language model's decode step.

``fgrad.nn.dot_product_attention`` traces to ``matmul(q, k^T)``, a multiply by
``1/sqrt(d)``, a ``where`` with the mask, ``softmax`` and ``matmul(weights, v)``. For the
few query rows of a decode step (a SmolLM2 step: 3 KV heads x 3 grouped queries against a
few hundred cached keys) those are five numpy calls on tiny arrays, and numpy's batched
matmul and fgrad's softmax kernel (several passes) cost tens of microseconds each:
measured inside a SmolLM2 decode step, the chain took about 250 us a layer, a sixth of the
step. :func:`fuse_attention` finds the chain in a graph ``jit`` runs and replaces it by
one Node whose kernel (:func:`attention_kernel`) computes, for each query row, the scores
against every key, the masked softmax and the weighted sum of the values in one loop.

The chain fuses only where nothing else reads its intermediate values (the scores, the
weights): under ``grad`` the backward pass reads the weights, so a training step keeps
the separate ops and their derivative rules; the fused Node runs forward only, as
``fusion.fuse_graph``'s Nodes do. It fuses for float32 and float64 with the same dtype
throughout, equal leading (batch, head) axes of ``q``, ``k`` and ``v``, and at most
:data:`MAX_QUERIES` query rows (beyond that BLAS's matmuls win: a prefill keeps them).

Values: the mask fills with the ``where``'s constant (``dot_product_attention``'s is the
dtype's most negative finite value, so a row with every key masked out attends uniformly,
as before); the softmax subtracts the row's maximum, exponentiates with
``fusion_numba``'s vectorised ``exp`` (within a few ulp of numpy's) and divides by the
sum; NaN in a score attended to makes its row NaN, as the separate ops do. Dot products
and sums are reassociated (vectorised), as BLAS reassociates its own, so results agree
with the unfused chain to float rounding (``tests/transforms/test_fusion_attention.py``
compares them).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad._config import config
from fgrad.core.graph import Graph, Node, Var
from fgrad.transforms import fusion

__all__ = ["MAX_QUERIES", "AttentionGroup", "attention_groups", "attention_kernel", "fuse_attention"]

_log = logging.getLogger("fgrad")

MAX_QUERIES = 16
"""The most query rows (``q.shape[-2]``) a fused chain has; a longer one keeps BLAS."""

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dataclasses.dataclass(frozen=True, eq=False)
class AttentionGroup:
    """One attention chain of a graph, as :func:`fusion.fuse_graph` takes groups.

    Attributes:
        nodes: the chain's Nodes (matmul, [multiply], [where], softmax, matmul), in order.
        inputs: ``(q, k^T, v)`` and, with a ``where``, the mask (Vars or constants).
        outputs: ``(out,)``, the second matmul's Var.
        scale: the multiply's constant (1.0 without one).
        fill: the ``where``'s constant for masked-out scores (None without a ``where``).
    """

    nodes: tuple
    inputs: tuple
    outputs: tuple
    scale: float
    fill: float | None


def _scalar(x: Any) -> float | None:
    """``x`` as a Python float when it is a real Python number, else None."""
    return float(x) if type(x) in (float, int) else None


def _shape(x: Any) -> tuple:
    return tuple(x.aval.shape) if isinstance(x, Var) else tuple(np.shape(getattr(x, "_data", x)))


def _dtype(x: Any) -> np.dtype:
    return np.dtype(x.aval.dtype if isinstance(x, Var) else getattr(getattr(x, "_data", x), "dtype", object))


def attention_groups(graph: Graph) -> list[AttentionGroup]:
    """The attention chains of ``graph`` that :func:`attention_kernel` can run.

    Args:
        graph: a Graph (as ``jit`` runs it).

    Returns:
        A list of :class:`AttentionGroup`, in graph order.

    Example:
        >>> from fgrad.nn import dot_product_attention
        >>> q, k = np.ones((2, 3, 8), np.float32), np.ones((2, 5, 8), np.float32)
        >>> g = fgrad.make_graph(lambda q, k: dot_product_attention(q, k, k))(q, k)
        >>> [n.op.name for n in attention_groups(g)[0].nodes]
        ['matmul', 'multiply', 'softmax', 'matmul']
    """
    readers: dict[int, list] = {}
    for node in graph.nodes:
        for x in node.inputs:
            if isinstance(x, Var):
                readers.setdefault(id(x), []).append(node)
    outs = {id(v) for v in graph.outvars}

    def only_reader(v: Var) -> Node | None:
        """The one Node reading ``v``, where ``v`` is not a graph output."""
        nodes = readers.get(id(v), [])
        return nodes[0] if len(nodes) == 1 and id(v) not in outs else None

    groups = []
    for node in graph.nodes:
        found = _chain(node, only_reader)
        if found is not None:
            groups.append(found)
    return groups


def _chain(first: Node, only_reader: Callable) -> AttentionGroup | None:
    """The chain starting at ``first`` (a matmul), or None."""
    if first.op.name != "matmul" or len(first.inputs) != 2 or first.params:
        return None
    q, kt = first.inputs
    qs, ks = _shape(q), _shape(kt)
    dtype = _dtype(q)
    if (len(qs) < 2 or len(ks) != len(qs) or qs[:-2] != ks[:-2] or qs[-1] != ks[-2]
            or dtype not in _FLOATS or _dtype(kt) != dtype or not 1 <= qs[-2] <= MAX_QUERIES):
        return None
    nodes, node, scale, fill, mask = [first], first, 1.0, None, None
    nxt = only_reader(node.outputs[0])
    if nxt is not None and nxt.op.name == "multiply":
        a, b = nxt.inputs
        c = _scalar(b) if a is node.outputs[0] else _scalar(a)
        if c is None:
            return None
        scale, node = c, nxt
        nodes.append(node)
        nxt = only_reader(node.outputs[0])
    if nxt is not None and nxt.op.name == "where":
        m, x, f = nxt.inputs
        scores = (*qs[:-1], ks[-1])
        if (x is not node.outputs[0] or _scalar(f) is None or _dtype(m) != np.dtype(np.bool_)
                or not _broadcasts(_shape(m), scores)):
            return None
        fill, mask, node = _scalar(f), m, nxt
        nodes.append(node)
        nxt = only_reader(node.outputs[0])
    if nxt is None or nxt.op.name != "softmax" or nxt.params.get("axes") != (len(qs) - 1,):
        return None
    node = nxt
    nodes.append(node)
    last = only_reader(node.outputs[0])
    if last is None or last.op.name != "matmul" or last.params or last.inputs[0] is not node.outputs[0]:
        return None
    v = last.inputs[1]
    vs = _shape(v)
    if len(vs) != len(qs) or vs[:-2] != qs[:-2] or vs[-2] != ks[-1] or _dtype(v) != dtype:
        return None
    nodes.append(last)
    inputs = (q, kt, v) if mask is None else (q, kt, v, mask)
    return AttentionGroup(tuple(nodes), inputs, tuple(last.outputs), scale, fill)


def _broadcasts(shape: tuple, to: tuple) -> bool:
    if len(shape) > len(to):
        return False
    return all(a in (1, b) for a, b in zip(shape[::-1], to[::-1]))


def _compiled(kernel: Any, dtype: np.dtype) -> Any:
    """``kernel`` compiled (or loaded from numba's disk cache) for ``dtype``'s
    C-contiguous arrays, so typing errors show here and not at the first call."""
    import numba

    a3, b3 = numba.types.Array(numba.from_dtype(dtype), 3, "C"), numba.types.Array(numba.types.boolean, 3, "C")
    s = numba.from_dtype(dtype)
    kernel.compile((a3, a3, a3, b3, s, s, s, s, a3))
    return kernel


def attention_kernel(group: AttentionGroup) -> Callable | None:
    """The group as a kernel ``(xp, q, k^T, v[, mask]) -> (out,)``, or None where numba
    cannot compile it (with ``config.log_compiles`` the log says why).

    Args:
        group: an :class:`AttentionGroup`.

    Returns:
        A callable, or None.

    Example:
        >>> import pytest
        >>> _ = pytest.importorskip("numba")
        >>> from fgrad.nn import dot_product_attention
        >>> q, k = np.ones((2, 3, 8), np.float32), np.ones((2, 5, 8), np.float32)
        >>> g = fgrad.make_graph(lambda q, k: dot_product_attention(q, k, k))(q, k)
        >>> (out,) = attention_kernel(attention_groups(g)[0])(np, q, k.swapaxes(1, 2), k)
        >>> out.shape, float(out[0, 0, 0])
        ((2, 3, 8), 1.0)
    """
    q, kt, v = group.inputs[:3]
    qs, ks, vs = _shape(q), _shape(kt), _shape(v)
    dtype = _dtype(q)
    lead, m, d, n, dv = qs[:-2], qs[-2], qs[-1], ks[-1], vs[-1]
    batch = math.prod(lead)
    scale = dtype.type(group.scale)
    fill = dtype.type(0.0 if group.fill is None else group.fill)
    zero, lowest = dtype.type(0.0), dtype.type(-np.inf)
    scores = (*lead, m, n)
    always = np.ones((1, 1, n), np.bool_)

    def mask3(mask: Any) -> Any:
        # As the kernel reads it, without a copy where its axes allow (a decode step's
        # (1, 1, rows, keys) mask); else broadcast out in full.
        full = (1,) * (len(scores) - mask.ndim) + tuple(mask.shape)
        heads, rows = full[:-2], full[-2]
        if full[-1] == n and rows in (1, m) and (heads == lead or all(h == 1 for h in heads)):
            return np.ascontiguousarray(mask).reshape(math.prod(heads), rows, n)
        return np.ascontiguousarray(np.broadcast_to(mask, scores)).reshape(batch, m, n)

    try:
        from fgrad.transforms import _attention_kernel

        kernel = _compiled(_attention_kernel.attend, dtype)
    except Exception as err:  # noqa: BLE001  (numba's typing or lowering error)
        if config.log_compiles:
            _log.warning("jit: attention with scores %s%s (batch..., queries, keys) runs as "
                         "numpy calls: %s", dtype.name, list(scores), err)
        return None

    def run(xp: Any, q: Any, kt: Any, v: Any, mask: Any = None) -> tuple:
        q3 = np.ascontiguousarray(q).reshape(batch, m, d)
        k3 = np.ascontiguousarray(np.swapaxes(kt, -1, -2)).reshape(batch, n, d)
        v3 = np.ascontiguousarray(v).reshape(batch, n, dv)
        out = np.empty((*lead, m, dv), dtype)
        kernel(q3, k3, v3, always if mask is None else mask3(mask), scale, fill, zero, lowest, out.reshape(batch, m, dv))
        return (out,)

    if config.log_compiles:
        _log.warning("jit: attention with scores %s%s (batch..., queries, keys) runs as one "
                     "compiled loop", dtype.name, list(scores))
    return run


def fuse_attention(graph: Graph) -> Graph:
    """``graph`` with each of its :func:`attention_groups` run as one compiled kernel.

    Args:
        graph: a Graph (as ``jit`` runs it); it is not changed.

    Returns:
        A Graph with the same inputs and outputs, or ``graph`` when nothing fuses.

    Example:
        >>> import pytest
        >>> _ = pytest.importorskip("numba")
        >>> from fgrad.nn import dot_product_attention
        >>> q, k = np.ones((2, 3, 8), np.float32), np.ones((2, 5, 8), np.float32)
        >>> g = fgrad.make_graph(lambda q, k: dot_product_attention(q, k, k))(q, k)
        >>> [n.op.name for n in fuse_attention(g).nodes]
        ['permute_dims', 'fused_attention']
    """
    groups = attention_groups(graph)
    if not groups:
        return graph
    return fusion.fuse_graph(graph, attention_kernel, groups=groups, name="fused_attention")


def __dir__() -> list[str]:
    return list(__all__)
