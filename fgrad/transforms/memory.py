"""The memory plan of a compiled program: which values get buffers, and which arrays hold them.

:func:`plan_memory` decides, from a graph and how each step will be called (its "form",
``transforms/program.py``), which intermediates live in slices of one byte arena kept
between calls, which outputs are written into donated inputs, and after which step each
value is dead. ``Program`` then emits code from the plan.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from fgrad.core.graph import Graph, Var
from fgrad.ops.traits import FRESH

__all__ = ["MemoryPlan", "plan_memory"]


# Buffers (numpy only). Most steps of a training graph are ufuncs (elementwise ops,
# matmul) that can write their result into a given array. Each such intermediate that
# does not escape (is not an output, nor viewed by one) gets a slice of one byte arena,
# planned at compile time like register allocation: a slice is reused once every value
# that may alias it has had its last use. Aliasing is tracked conservatively: an op not
# known to allocate (reshape, permute_dims, getitem, astype ...) is assumed to return a
# view of its inputs. An elementwise step whose same-shaped input dies there writes in
# place. The arena is kept between calls: allocating fresh pages for every intermediate
# and faulting them in costs more than many kernels (a third of a transformer block's
# step where this was measured), and the program needs that memory on every call anyway.
# ``_Program.arena_bytes`` says how much it holds.

_ALIGN = 64  # bytes: each buffer starts on a cache line
_MIN_BUFFER = 2048  # bytes: smaller intermediates are cheap for numpy's own allocator

def _nbytes(aval: Any) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


class _Arena:
    """Best-fit placement of byte ranges in one buffer, planned once at compile time."""

    def __init__(self):
        self.free: list[list[int]] = []  # [offset, size] holes, sorted by offset
        self.end = 0

    @staticmethod
    def _size(nbytes: int) -> int:
        return max(_ALIGN, -(-nbytes // _ALIGN) * _ALIGN)

    def alloc(self, nbytes: int) -> int:
        size = self._size(nbytes)
        fits = [hole for hole in self.free if hole[1] >= size]
        if fits:
            hole = min(fits, key=lambda h: h[1])
            offset = hole[0]
            hole[0] += size
            hole[1] -= size
            if not hole[1]:
                self.free.remove(hole)
            return offset
        offset = self.end
        if self.free and self.free[-1][0] + self.free[-1][1] == self.end:  # grow the last hole
            offset = self.free.pop()[0]
        self.end = offset + size
        return offset

    def release(self, offset: int, nbytes: int) -> None:
        self.free.append([offset, self._size(nbytes)])
        self.free.sort()
        merged: list[list[int]] = []
        for hole in self.free:
            if merged and merged[-1][0] + merged[-1][1] == hole[0]:
                merged[-1][1] += hole[1]
            else:
                merged.append(hole)
        self.free = merged




def _donation_plan(
    graph: Graph, forms: list[tuple], donated: tuple[int, ...], overwrites: dict[int, frozenset]
) -> dict[int, int]:
    """Which outputs to write into donated inputs' arrays: ``{id(output var): input index}``.

    An input's array may take an output of the same shape and dtype once nothing reads the
    input any more (nor a view of it: an op not known to allocate is taken to return a
    view, as for the arena), or at that very step when the step is elementwise and may
    run in place. Inputs that an output views are never reused.
    """
    if not donated:
        return {}
    nodes = graph.nodes
    alias = {id(graph.invars[i]): frozenset((i,)) for i in donated}
    read_until = dict.fromkeys(donated, -1)
    # Donated inputs a step reads at a position other than those it may write over.
    read_elsewhere: dict[int, set] = {}
    step_of: dict[int, int] = {}
    for k, (node, form) in enumerate(zip(nodes, forms)):
        seen = frozenset().union(
            *(alias.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
        )
        for i in seen:
            read_until[i] = k
        for pos, v in enumerate(node.inputs):
            if isinstance(v, Var) and pos not in overwrites.get(k, ()):
                read_elsewhere.setdefault(k, set()).update(alias.get(id(v), ()))
        # An overwriting step's result is a new array, or the input it may overwrite.
        fresh = node.op in FRESH or form[0] in ("ufunc", "matmul_rows", "where0") or k in overwrites
        if seen and not fresh:
            for v in node.outputs:
                alias[id(v)] = seen
        step_of[id(node.outputs[0])] = k
    for v in graph.outvars:
        for i in alias.get(id(v), ()) if isinstance(v, Var) else ():
            read_until[i] = len(nodes)  # the output is (a view of) the input itself
    plan: dict[int, int] = {}
    free = list(donated)
    for v in graph.outvars:
        k = step_of.get(id(v)) if isinstance(v, Var) else None
        if k is None or id(v) in plan:
            continue
        node, form = nodes[k], forms[k]
        if node.op.multiple_results or form[0] == "kernel" or form[-1] == "small":
            continue
        for i in free:
            end = read_until[i]
            in_place = form[0] == "ufunc" or (
                k in overwrites and i not in read_elsewhere.get(k, ())
            )
            if graph.invars[i].aval == v.aval and (end < k or (end == k and in_place)):
                plan[id(v)] = i
                free.remove(i)
                break
    return plan


# References to a donated array when _Program.run checks it: the Tensor's, the argument
# list's, the local name's and getrefcount's own. One more means a view or another Tensor
# shares the buffer, which must then not change.
_OWN_REFS = 4


def _claim(datas: list, i: int) -> None:
    """Make ``datas[i]`` an array the program may overwrite: the donated one when nothing
    else can see its memory, else a private copy."""
    d = datas[i]
    if not (
        type(d) is np.ndarray
        and d.base is None
        and d.flags.writeable
        and d.flags.c_contiguous
        and sys.getrefcount(d) <= _OWN_REFS
    ):
        datas[i] = np.array(d, order="C", copy=True)


class MemoryPlan(NamedTuple):
    """Where a program's values live.

    ``out_buffer[k]``: the buffer step ``k`` writes into (``i >= 0``: the arena view ``i``;
    ``~i``: donated input ``i``); ``layout``: ``(offset, shape, dtype)`` of each arena view;
    ``dead_after[k]``: the Vars no step after ``k`` reads (to ``del``); ``claims``: the
    donated inputs the program writes into.
    """

    out_buffer: dict[int, int]
    layout: list[tuple]
    arena_bytes: int
    dead_after: list[list[Var]]
    claims: tuple[int, ...]


def plan_memory(
    graph: Graph,
    forms: list[tuple],
    donated: tuple[int, ...],
    view_copies: tuple,
    overwrites: dict[int, frozenset] | None = None,
) -> MemoryPlan:
    """The plan for ``graph`` run with steps of ``forms``; ``donated`` input indices may
    take outputs; ``view_copies`` are the "into" kernels that, without a buffer, run as
    the op (and may return a view); ``overwrites[k]``, the input positions whose array
    step ``k``'s kernel may write its result over (besides elementwise ufuncs, which may
    write over any input): an update of a slice, written in place into its operand when
    that dies at the step (a KV cache donated to a decode step)."""
    overwrites = overwrites or {}
    nodes = graph.nodes
    # Last reader of each value; the graph's outputs live to the end.
    last_use: dict[int, int] = {}
    for k, node in enumerate(nodes):
        for v in node.inputs:
            if isinstance(v, Var):
                last_use[id(v)] = k
    outputs = {id(v) for v in graph.outvars if isinstance(v, Var)}
    for i in outputs:
        last_use[i] = len(nodes)
    inputs = {id(v) for v in graph.invars}

    # Buffered values: not escaping, and which buffers each value may alias.
    roots: dict[int, frozenset] = {}
    candidates = set()
    for node, form in zip(nodes, forms):
        if form[0] != "kernel" and form[-1] != "small":
            o = id(node.outputs[0])
            candidates.add(o)
            roots[o] = frozenset((o,))
            if form[0] == "into" and form[1] in view_copies:
                # Without a buffer (when it escapes) it runs as the op: maybe a view.
                roots[o] |= frozenset().union(
                    *(roots.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
                )
        elif node.op in FRESH:
            for v in node.outputs:
                roots[id(v)] = frozenset()
        else:
            r = frozenset().union(
                *(roots.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
            )
            for v in node.outputs:
                roots[id(v)] = r
    managed = candidates - frozenset().union(*(roots.get(i, ()) for i in outputs))
    donation = _donation_plan(graph, forms, donated, overwrites)
    busy_end: dict[int, int] = {}  # buffered value -> last step any alias of it is read
    for k, node in enumerate(nodes):
        for v in node.outputs:
            for b in roots.get(id(v), ()):
                if b in managed:
                    busy_end[b] = max(busy_end.get(b, k), last_use.get(id(v), k))
    ending: dict[int, list] = {}
    for k, node in enumerate(nodes):
        for v in node.outputs:
            if id(v) in managed:
                ending.setdefault(busy_end[id(v)], []).append(v)

    arena = _Arena()
    offset_of: dict[int, int] = {}
    buffer_of: dict[int, int] = {}
    layout: list[tuple] = []  # (offset, shape, dtype) of each buffer view
    handed_on: set[int] = set()
    out_buffer: dict[int, int] = {}
    dead_after: list[list[Var]] = []
    for k, (node, form) in enumerate(zip(nodes, forms)):
        o = node.outputs[0]
        if id(o) in managed:
            donor = None
            elementwise = form[0] == "ufunc" and form[1].signature is None
            if elementwise or k in overwrites:  # in place
                for pos, v in enumerate(node.inputs):
                    if (
                        (elementwise or pos in overwrites[k])
                        and isinstance(v, Var)
                        and id(v) in managed
                        and busy_end[id(v)] == k
                        and v.aval == o.aval
                    ):
                        donor = v
                        break
            if donor is not None:
                handed_on.add(id(donor))
                offset_of[id(o)], buffer_of[id(o)] = offset_of[id(donor)], buffer_of[id(donor)]
            else:
                offset_of[id(o)] = arena.alloc(_nbytes(o.aval))
                buffer_of[id(o)] = len(layout)
                layout.append((offset_of[id(o)], tuple(o.aval.shape), np.dtype(o.aval.dtype)))
            out_buffer[k] = buffer_of[id(o)]
        elif id(o) in donation:
            out_buffer[k] = ~donation[id(o)]
        read_here = {id(v): v for v in node.inputs if isinstance(v, Var)}
        dead = [v for i, v in read_here.items() if last_use[i] == k and i not in inputs]
        dead += [v for v in node.outputs if id(v) not in last_use]
        dead_after.append(dead)
        for v in ending.get(k, ()):
            if id(v) not in handed_on:
                arena.release(offset_of[id(v)], _nbytes(v.aval))

    claims = tuple(sorted(set(donation.values())))
    return MemoryPlan(out_buffer, layout, arena.end, dead_after, claims)
