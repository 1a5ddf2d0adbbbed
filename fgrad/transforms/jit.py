"""``jit``: trace a function once per input signature, then replay the cached graph.

The first call with a new signature (tree structure, shapes, dtypes, array type, static
values) traces the function abstractly into a Graph, runs the graph passes, and compiles
it to a *program*: a flat list of steps, each one kernel call on backend arrays with its
inputs read from numbered slots. Later calls run the program directly: no tracing, no
Tensor wrapping, no per-op dispatch. A slot is released right after its last use, so
intermediates do not outlive their consumers (peak memory stays near the minimum).

Called on tracers of another transform (``grad(jit(f))``), the cached graph is replayed
op by op so that the outer transform records it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from fgrad import backend, tree
from fgrad._config import config
from fgrad.core.graph import Graph, GraphTrace, GraphTracer, Var
from fgrad.core.trace import Tracer, new_trace
from fgrad.tensor import ShapeDtype, Tensor, _wrap
from fgrad.transforms.passes import optimize

__all__ = ["jit"]

_log = logging.getLogger("fgrad")
_SCALARS = (bool, int, float, complex)


class _Program:
    """A compiled graph: steps over numbered slots holding backend arrays."""

    __slots__ = ("graph", "template", "steps", "outputs", "n_in")

    def __init__(self, graph: Graph, xp: Any):
        self.graph = graph
        slots: dict[int, int] = {}
        template: list[Any] = []

        def slot_of(v: Any) -> int:
            key = id(v)
            if isinstance(v, Var):
                if key not in slots:
                    slots[key] = len(template)
                    template.append(None)
                return slots[key]
            # A constant: its value lives in the template, copied into each run.
            template.append(v._data if isinstance(v, Tensor) else v)
            return len(template) - 1

        for v in graph.invars:
            slot_of(v)
        self.n_in = len(graph.invars)
        raw_steps = []
        for node in graph.nodes:
            ins = tuple(slot_of(v) for v in node.inputs)
            outs = tuple(slot_of(v) for v in node.outputs)
            raw_steps.append((node, ins, outs))
        out_slots = [slot_of(v) for v in graph.outvars]
        # Free each intermediate slot after its last reader (outputs and inputs are kept).
        keep = set(out_slots) | set(range(self.n_in))
        last_use: dict[int, int] = {}
        for k, (_, ins, _) in enumerate(raw_steps):
            for s in ins:
                last_use[s] = k
        frees: list[list[int]] = [[] for _ in raw_steps]
        for s, k in last_use.items():
            if s not in keep and template[s] is None:
                frees[k].append(s)
        self.steps = [
            (partial(node.op.kernel, xp), ins, outs, node.params, node.op.multiple_results, tuple(frees[k]))
            for k, (node, ins, outs) in enumerate(raw_steps)
        ]
        self.template = template
        self.outputs = out_slots

    def run(self, datas: list[Any]) -> list[Any]:
        env = self.template.copy()
        env[: self.n_in] = datas
        for kernel, ins, outs, params, multi, frees in self.steps:
            out = kernel(*[env[s] for s in ins], **params)
            if multi:
                for s, o in zip(outs, out):
                    env[s] = o
            else:
                env[outs[0]] = out
            for s in frees:
                env[s] = None
        return [env[s] for s in self.outputs]


def _signature_leaf(x: Any) -> Any:
    if type(x) in _SCALARS:
        return ("static", type(x), x)  # Python scalars are baked into the trace
    if isinstance(x, Tracer):
        return ("aval", x.aval)
    data = x._data if isinstance(x, Tensor) else x
    # The namespace, not type(data): numpy returns 0-d results as numpy scalars.
    return ("array", tuple(data.shape), np.dtype(data.dtype), backend.namespace_of(data))


def jit(
    f: Callable,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
) -> Callable:
    """Compile ``f``: trace it once per input signature and replay the cached graph.

    Array arguments (Tensors, numpy or cupy arrays) are traced by shape and dtype; Python
    scalars and the arguments named static are part of the signature, so a new value
    retraces. The traced graph is simplified (dead code, common subexpressions, shape
    plumbing) and run as one kernel call per node. Works on ``grad(f)``, whole training
    steps, and inside other transforms (``grad(jit(f))``, ``jit(grad(f))``).

    Args:
        f: a pure function of pytrees of Tensors.
        static_argnums: positional arguments treated as compile-time constants (hashable).
        static_argnames: keyword arguments treated as compile-time constants (hashable).
        donate_argnums: accepted for JAX compatibility; numpy buffers are never donated.

    Returns:
        A function with ``f``'s signature. ``.cache_info()`` gives hits, misses and size;
        ``.graph(*args)`` the optimised Graph for those arguments.

    Raises:
        ConcretizationError: ``f`` uses Python control flow on a traced value; the message
            names the line and points to ``static_argnums``.
        TypeError: a static argument is not hashable.

    Example:
        >>> @fgrad.jit
        ... def f(x):
        ...     return fnp.sum(fnp.sin(x) ** 2)
        >>> f(fnp.array([0.5, 1.0]))
        Tensor(0.93792227, dtype=float64)
        >>> f.cache_info()
        CacheInfo(hits=0, misses=1, size=1)
    """
    static_nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    static_names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    cache: dict[Any, tuple[Graph, _Program | None]] = {}
    stats = {"hits": 0, "misses": 0}

    def split(args, kwargs):
        nargs = len(args)
        nums = {n % nargs for n in static_nums if -nargs <= n < nargs}
        static = tuple((n, args[n]) for n in sorted(nums)) + tuple(
            (k, kwargs[k]) for k in sorted(kwargs) if k in static_names
        )
        try:
            hash(static)
        except TypeError:
            raise TypeError(
                f"jit({_name(f)}): static arguments must be hashable; got "
                f"{[type(v).__name__ for _, v in static]}. Pass arrays as ordinary arguments"
            ) from None
        dyn_args = tuple(None if n in nums else a for n, a in enumerate(args))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        return nums, static, dyn_args, dyn_kwargs

    def build(nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key):
        if config.log_compiles:
            sig = ", ".join(str(_signature_leaf(x)[1:]) for x in leaves)
            _log.warning("jit: tracing %s for signature (%s)", _name(f), sig)
        static_pos = dict(static)

        def flat_f(*flat):
            d_args, d_kwargs = tree.unflatten(in_tree, flat)
            full = [static_pos[n] if n in nums else a for n, a in enumerate(d_args)]
            return f(*full, **{**d_kwargs, **{k: v for k, v in static if isinstance(k, str)}})

        graph = _trace(flat_f, leaves, in_tree)
        graph = optimize(graph)
        xp = _namespace(leaves)
        program = _Program(graph, xp) if xp is not None else None
        cache[key] = (graph, program)
        stats["misses"] += 1
        return graph, program

    @functools.wraps(f)
    def jitted(*args: Any, **kwargs: Any) -> Any:
        nums, static, dyn_args, dyn_kwargs = split(args, kwargs)
        leaves, in_tree = tree.flatten((dyn_args, dyn_kwargs))
        key = (in_tree, static, tuple(_signature_leaf(x) for x in leaves))
        entry = cache.get(key)
        if entry is None:
            graph, program = build(nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key)
        else:
            stats["hits"] += 1
            graph, program = entry
        arrays = [x for x in leaves if type(x) not in _SCALARS]
        if program is None or any(isinstance(x, Tracer) for x in arrays):
            # Inside another transform: replay op by op so that transform records it.
            return _replay(graph, arrays)
        datas = [x._data if isinstance(x, Tensor) else x for x in arrays]
        outs = program.run(datas)
        return tree.unflatten(graph.out_tree, [_as_output(o) for o in outs])

    def cache_info():
        return _CacheInfo(stats["hits"], stats["misses"], len(cache))

    def graph_for(*args: Any, **kwargs: Any) -> Graph:
        nums, static, dyn_args, dyn_kwargs = split(args, kwargs)
        leaves, in_tree = tree.flatten((dyn_args, dyn_kwargs))
        key = (in_tree, static, tuple(_signature_leaf(x) for x in leaves))
        entry = cache.get(key) or build(nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key)
        return entry[0]

    jitted.cache_info = cache_info
    jitted.graph = graph_for
    jitted.clear_cache = cache.clear
    del donate_argnums
    return jitted


class _CacheInfo(tuple):
    __slots__ = ()

    def __new__(cls, hits: int, misses: int, size: int):
        return tuple.__new__(cls, (hits, misses, size))

    hits = property(lambda self: self[0])
    misses = property(lambda self: self[1])
    size = property(lambda self: self[2])

    def __repr__(self) -> str:
        return f"CacheInfo(hits={self.hits}, misses={self.misses}, size={self.size})"


def _name(f: Callable) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _trace(flat_f: Callable, leaves: list, in_tree: Any) -> Graph:
    """Trace ``flat_f`` with graph tracers for the array leaves; scalars stay constants."""
    with new_trace(GraphTrace()) as trace:
        invars, inputs = [], []
        for x in leaves:
            if type(x) in _SCALARS:
                inputs.append(x)
                continue
            aval = x.aval if isinstance(x, Tensor) else ShapeDtype(tuple(x.shape), np.dtype(x.dtype))
            v = Var(aval)
            invars.append(v)
            inputs.append(GraphTracer(trace, v))
        out = flat_f(*inputs)
        out_leaves, out_tree = tree.flatten(out)
    outvars = [o.var if type(o) is GraphTracer and o._trace is trace else o for o in out_leaves]
    for o in outvars:
        if isinstance(o, Tracer):
            from fgrad.errors import TracerLeakError

            raise TracerLeakError("jit: the function returned a tracer of an outer transform it closed over")
    return Graph(invars, trace.nodes, outvars, in_tree, out_tree)


def _namespace(leaves: list) -> Any:
    """The namespace the program's kernels use, or None when an input is a tracer."""
    xp = np
    for x in leaves:
        if isinstance(x, Tracer):
            return None
        if type(x) in _SCALARS:
            continue
        xp = backend.namespace_of(x._data if isinstance(x, Tensor) else x)
    return xp


def _replay(graph: Graph, arrays: list) -> Any:
    return tree.unflatten(graph.out_tree, graph.evaluate_flat(arrays))


def _as_output(x: Any) -> Any:
    if isinstance(x, Tensor) or type(x) in _SCALARS or x is None:
        return x
    return _wrap(x)
