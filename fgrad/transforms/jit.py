"""``jit``: trace a function once per input signature, then replay the cached graph.

The first call with a new signature (tree structure, shapes, dtypes, array type, static
values, Python ints and bools) traces the function abstractly into a Graph, runs the
graph passes (``fgrad.transforms.passes``), and compiles it to a *program*
(``fgrad.transforms.program``): one generated Python function with a line per node that
calls the kernel on local variables, with ``out=`` buffers on numpy. Later calls run
that function directly: no tracing, no Tensor wrapping, no per-op dispatch. This module
decides when to trace: signatures, the cache, static and donated arguments, weakly typed
Python floats, and why a function traces again (``fgrad.transforms.retrace``).

Called on tracers of another transform (``grad(jit(f))``), the cached graph is replayed
op by op so that the outer transform records it.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import backend, tree
from fgrad._config import config
from fgrad._keys import exact_key
from fgrad.core.debug import check_program
from fgrad.core.graph import Graph, Var
from fgrad.core.staging import STATIC_SCALARS, TRACED_SCALARS, stage
from fgrad.core.trace import Tracer
from fgrad.errors import ConcretizationError, FgradError
from fgrad.tensor import Donated, ShapeDtype, Tensor, _wrap
from fgrad.transforms.argnums import as_names, as_positions
from fgrad.transforms.passes import inline_rules, optimize
from fgrad.transforms.program import Program
from fgrad.transforms.retrace import RetraceMonitor

__all__ = ["Jitted", "jit"]

_log = logging.getLogger("fgrad")
_SCALARS = (bool, int, float, complex)
_TRACED_SCALARS, _STATIC_SCALARS = TRACED_SCALARS, STATIC_SCALARS  # staging's policy
# Compiled signatures a jitted function keeps (the oldest goes first): each holds its
# program's buffers, so a function traced for ever new signatures must not keep them all.
_CACHE_SIZE = 64


class _Slow(Exception):
    """The quick argument walk met something only the general path handles."""


_PLAIN = (type(None), bool, int, float, str, bytes)


def _plain(aux: Any) -> bool:
    """Static data that hashes by value (None, numbers, strings, types, tuples of them)."""
    if type(aux) in _PLAIN or isinstance(aux, type):
        return True
    return type(aux) in (tuple, frozenset) and all(_plain(a) for a in aux)


# id(aux) -> (aux, its key): the static data of registered nodes seen lately. The entry
# holds the object, so an id found here is still that object's; a model's hundreds of
# weight nodes hand out the same static tuples at every call, and keying them again cost
# most of a decode step's argument walk (0.8 ms of it for SmolLM2's 211 weights).
_AUX_KEYS: dict[int, tuple] = {}
_AUX_KEYS_MAX = 4096


def _aux_key(aux: Any) -> Any:
    """``exact_key(aux)`` for a registered node's static data; _Slow where it is not plain."""
    hit = _AUX_KEYS.get(id(aux))
    if hit is not None and hit[0] is aux:
        return hit[1]
    if not _plain(aux):  # keyed by identity (a module object): the TreeDef compares it
        raise _Slow
    key = exact_key(aux)
    if len(_AUX_KEYS) >= _AUX_KEYS_MAX:
        _AUX_KEYS.clear()
    _AUX_KEYS[id(aux)] = (aux, key)
    return key


def _walk(x: Any, datas: list, sig: list, raw: list) -> Any:
    """The structure of the argument pytree ``x``; arrays go to ``datas``, their
    signatures (and static Python scalars) to ``sig``; traced Python scalars go to both;
    the positions in ``datas`` of numpy arrays (not Tensors) to ``raw``.
    Raises _Slow for anything but Tensors, numpy arrays, Python scalars, None, tuples,
    lists, dicts, namedtuples and registered pytree nodes."""
    t = type(x)
    if t is Tensor:
        d = x._data
        datas.append(d)
        sig.append((type(d), d.shape, d.dtype))
        return 0
    if t is tuple or t is list:
        return (t, *[_walk(c, datas, sig, raw) for c in x])
    if t is dict:
        keys = sorted(x)
        return (dict, tuple(keys), *[_walk(x[k], datas, sig, raw) for k in keys])
    if t in _TRACED_SCALARS:
        datas.append(x)
        sig.append((t,))
        return 3
    if t in _SCALARS:
        sig.append((t, exact_key(x)))
        return 1
    if t is np.ndarray:
        raw.append(len(datas))  # copied where an output may alias it (_private)
        datas.append(x)
        sig.append((t, x.shape, x.dtype))
        return 0
    if x is None:
        return 2
    # Registered pytree nodes (a KV cache, a bound model) and namedtuples (layer params):
    # the node's type and static data stand in the key, as in the TreeDef.
    node = tree._REGISTRY.get(t)
    if node is not None:
        children, aux = node.flatten(x)
        return (t, _aux_key(aux), *[_walk(c, datas, sig, raw) for c in children])
    if issubclass(t, tuple) and hasattr(t, "_fields") and not getattr(t, "_pytree_leaf", False):
        return (t, *[_walk(c, datas, sig, raw) for c in x])
    raise _Slow


def _output_builder(out_tree: Any) -> Callable:
    """``outs -> pytree of Tensors`` for the program's output list."""
    if out_tree == tree.structure(0):  # a single array
        return lambda outs: _as_output(outs[0])
    return lambda outs: tree.unflatten(out_tree, [_as_output(o) for o in outs])


def _signature_leaf(x: Any) -> Any:
    if type(x) in _TRACED_SCALARS:
        return ("weak", type(x))
    if type(x) in _SCALARS:
        return ("static", type(x), exact_key(x))  # ints and bools are baked into the trace
    if isinstance(x, Tracer):
        return ("aval", x.aval)
    if isinstance(x, ShapeDtype):  # .graph(...) on avals: the signature of a numpy array
        return ("array", tuple(x.shape), np.dtype(x.dtype), np)
    data = x._data if isinstance(x, Tensor) else x
    if not hasattr(data, "shape") or not hasattr(data, "dtype"):
        raise TypeError(
            f"jit: an argument leaf of type {type(x).__qualname__} is not an array or a Python "
            "scalar; mark that argument static (static_argnums / static_argnames) or pass arrays"
        )
    # The namespace, not type(data): numpy returns 0-d results as numpy scalars.
    return ("array", tuple(data.shape), np.dtype(data.dtype), backend.namespace_of(data))


def jit(
    f: Callable,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    donate_argnames: str | Sequence[str] = (),
) -> Jitted:
    """Compile ``f``: trace it once per input signature and replay the cached graph.

    Array arguments (Tensors, numpy or cupy arrays) are traced by shape and dtype. Python
    floats and complex numbers are traced too, weakly typed as in JAX (``float32 x * lr``
    stays float32, as it does eagerly), so a new value reuses the program; Python control
    flow on them needs them static. Python ints and bools and the arguments named static
    are part of the signature, so a new value retraces
    (``fgrad.config.explain_cache_misses`` logs why each trace happened; a
    ``RetraceWarning`` says when new int or bool values keep causing traces). The
    programs of the 64 most recent signatures are kept. The traced graph is simplified
    (dead code, common subexpressions, constant folding, shape plumbing) and run as one
    kernel call per node. Works on ``grad(f)``,
    whole training steps, and inside other transforms (``grad(jit(f))``, ``jit(grad(f))``).

    On numpy the compiled program keeps buffers for its intermediates between calls
    (about ``graph.cost().peak_bytes``; ``f.clear_cache()`` lets them go), so that a
    call allocates little beyond its outputs. Results are those of the eager ops up to
    rounding: a ``(..., m, k) @ (k, n)`` product runs as one 2-D BLAS call, and a stack
    of small products with a transposed right operand (attention's ``q @ k^T``) on a
    row-major copy of it, both faster on OpenBLAS and both may round differently from
    numpy's per-batch loop on the view.

    Args:
        f: a pure function of pytrees of Tensors.
        static_argnums: positional arguments treated as compile-time constants (hashable).
        static_argnames: keyword arguments treated as compile-time constants (hashable).
        donate_argnums: positional arguments whose Tensors the call consumes, as in JAX:
            on numpy an output of the same shape and dtype is written into a donated
            array once the program no longer reads it (a training step then updates its
            parameters and optimiser state in place instead of allocating new ones).
            After the call the donated Tensors raise ``DeletedError`` when used (also when
            no output could reuse them). A donated argument passed by keyword is donated
            too. Arrays under 2 KiB are not written into (numpy allocates those faster
            than planning saves), nor is an array something else may see (a view of it,
            another Tensor sharing it): no other Tensor ever changes.
        donate_argnames: the same by parameter name (completed from each other, as
            ``static_argnums`` and ``static_argnames`` are).

    Returns:
        A :class:`Jitted` with ``f``'s signature: calling it runs the program for the
        arguments' signature (tracing and compiling it first when new); ``.graph(*args)``
        is the optimised Graph for those arguments, ``.compile(*args)`` the Program,
        ``.signature(*args)`` the cache key, ``.cache_info()`` hits, misses and size, and
        ``.clear_cache()`` drops every program.

    Raises:
        ConcretizationError: ``f`` uses Python control flow on a traced value; the message
            names the line and points to ``static_argnums``.
        TypeError: a static argument is not hashable.
        ValueError: a ``static_argnums`` or ``donate_argnums`` position is out of range, a
            ``static_argnames`` or ``donate_argnames`` name is not a parameter of ``f``
            (and ``f`` takes no ``**kwargs``), or an argument is both static and donated.

    Example:
        >>> @fgrad.jit
        ... def f(x):
        ...     return fnp.sum(fnp.sin(x) ** 2)
        >>> f(fnp.array([0.5, 1.0]))
        Tensor(0.93792227, dtype=float64)
        >>> f.cache_info()
        CacheInfo(hits=0, misses=1, size=1)
    """
    return Jitted(f, static_argnums, static_argnames, donate_argnums, donate_argnames)


class Jitted:
    """A function compiled by :func:`jit`: a cache of (Graph, Program) per signature."""

    def __init__(self, f, static_argnums, static_argnames, donate_argnums, donate_argnames):
        if not callable(f):
            raise TypeError(f"jit: expected a function to compile, got {type(f).__name__} {f!r}")
        self._f = f
        self._static_nums, self._static_names = _complete_positions(
            f, static_argnums, static_argnames, "static"
        )
        self._donate_nums, self._donate_names = _complete_positions(
            f, donate_argnums, donate_argnames, "donate"
        )
        both = sorted(set(self._donate_names) & set(self._static_names)) or sorted(
            set(self._donate_nums) & set(self._static_nums)
        )
        if both:
            raise ValueError(
                f"jit({_name(f)}): {both} are both donated (donate_argnums / donate_argnames) "
                "and static (static_argnums / static_argnames); a static argument is not an "
                "array and cannot be donated"
            )
        self._donating = bool(self._donate_nums or self._donate_names)
        self._walkable = not self._static_nums  # the quick argument walk knows no statics
        self._cache: dict[Any, tuple[Graph, Program | None]] = {}
        # Calls with positional array arguments only (the common case) first try a cache
        # keyed on a quick walk of the arguments: no TreeDef, no signature tuple per leaf.
        self._fast: dict[Any, tuple[Program, Callable]] = {}
        self._hits = self._misses = 0
        self._monitor = RetraceMonitor(_name(f), _positional_params(f), _CACHE_SIZE, _defaults(f))
        functools.update_wrapper(self, f, updated=())  # not f.__dict__: a wrapped transform's state

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        # As a function would: a jitted method binds its instance.
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<jit({_name(self._f)})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast_key = None
        if not kwargs and self._walkable:
            datas: list = []
            sig: list = []
            raw: list = []
            try:
                fast_key = (_walk(args, datas, sig, raw), tuple(sig))
                entry = self._fast.get(fast_key)
            except _Slow:  # a leaf or node the walk does not know (tracers among them)
                fast_key = entry = None
            except TypeError:  # an unhashable static leaf: the general path explains
                fast_key = entry = None
            if entry is not None:
                self._hits += 1
                program = entry[0]
                _private(datas, raw, program)
                outs = self._checked_run(program, datas) if config.debug_nans else _run(program, datas)
                if self._donating:
                    self._consume(args, {})
                return entry[1](outs)
        parts = self._split(args, kwargs)
        leaves = parts[4]
        if any(isinstance(x, ShapeDtype) for x in leaves):
            raise TypeError(
                f"jit({_name(self._f)}): called with a ShapeDtype, which has no values; for "
                "shapes use the jitted function's .graph(...) or fgrad.eval_shape, and pass "
                "arrays to compute"
            )
        graph, program = self._entry(parts, count_hit=True)
        arrays = [x for x in leaves if type(x) not in _STATIC_SCALARS]
        if program is None or any(isinstance(x, Tracer) for x in arrays):
            # Inside another transform: replay op by op so that transform records it.
            return _replay(graph, arrays)
        datas = [x._data if isinstance(x, Tensor) else x for x in arrays]
        raw = [
            i for i, x in enumerate(arrays)
            if not isinstance(x, Tensor) and type(x) not in _TRACED_SCALARS
        ]
        _private(datas, raw, program)
        build_out = _output_builder(graph.out_tree)
        if fast_key is not None:
            self._fast[fast_key] = (program, build_out)
        out = build_out(self._checked_run(program, datas) if config.debug_nans else _run(program, datas))
        if self._donating:
            self._consume(args, kwargs)
        return out

    def signature(self, *args: Any, **kwargs: Any) -> tuple:
        """The cache key of a call with these arguments: the input structure, the static
        arguments and each leaf's signature (shape, dtype and array namespace; the value
        of a Python int or bool; the type of a traced Python float)."""
        return self._split(args, kwargs)[-1]

    def graph(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimised Graph for these arguments (traced now if new). Arguments may be
        ShapeDtypes (as JAX's ``jit(f).lower`` takes ShapeDtypeStructs): the program
        compiled for them serves later calls with numpy arrays of those avals."""
        return self._entry(self._split(args, kwargs))[0]

    def compile(self, *args: Any, **kwargs: Any) -> Program | None:
        """Trace and compile for these arguments now (before the first call), and return
        the Program calls with them will run, for inspection: ``.source`` is the generated
        code, ``.arena_bytes`` the buffers it keeps. Call the jitted function itself to
        run it (unlike JAX's ``lower().compile()``, the result is not a callable). None
        when the function closes over another transform's tracers, whose graph is
        replayed op by op instead."""
        return self._entry(self._split(args, kwargs))[1]

    def cache_info(self) -> _CacheInfo:
        """Hits, misses (traces) and size of the cache, as ``functools.lru_cache``'s."""
        return _CacheInfo(self._hits, self._misses, len(self._cache))

    def clear_cache(self) -> None:
        """Drop every program (and its buffers) and reset the counts."""
        self._cache.clear()
        self._fast.clear()
        self._hits = self._misses = 0

    def _split(self, args: tuple, kwargs: dict) -> tuple:
        """``(nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key)`` of a call."""
        f = self._f
        nargs = len(args)
        nums = {n % nargs for n in self._static_nums if -nargs <= n < nargs}
        static = tuple((n, args[n]) for n in sorted(nums)) + tuple(
            (k, kwargs[k]) for k in sorted(kwargs) if k in self._static_names
        )
        for k, v in static:
            if isinstance(v, Tracer):
                raise ConcretizationError(
                    f"jit({_name(f)}): the static argument {self._monitor.static_name(k)} is "
                    f"a traced value {v.aval} (an enclosing "
                    "transform traces it, such as an outer jit's array or float argument); a "
                    "static argument needs a concrete value: make it static in the outer "
                    "jit too (its static_argnums / static_argnames), or pass it here as an "
                    "ordinary argument"
                )
        try:
            hash(static)
        except TypeError:
            raise TypeError(
                f"jit({_name(f)}): static arguments must be hashable; got "
                f"{[type(v).__name__ for _, v in static]}. Pass arrays as ordinary arguments"
            ) from None
        dyn_args = tuple(None if n in nums else a for n, a in enumerate(args))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        leaves, in_tree = tree.flatten((dyn_args, dyn_kwargs))
        key = (in_tree, exact_key(static), tuple(_signature_leaf(x) for x in leaves))
        return nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key

    def _entry(self, parts: tuple, count_hit: bool = False) -> tuple[Graph, Program | None]:
        entry = self._cache.get(parts[-1])
        if entry is None:
            return self._build(*parts)
        if count_hit:
            self._hits += 1
        return entry

    def _build(self, nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key):
        f, monitor = self._f, self._monitor
        if config.log_compiles:
            _log.warning("jit: tracing %s for %s", _name(f), monitor.describe(in_tree, static, key[2]))
        reason = monitor.on_miss(in_tree, static, key[2])
        if reason is not None and config.explain_cache_misses:
            _log.warning("%s", reason)
        static_pos = dict(static)

        def flat_f(*flat):
            d_args, d_kwargs = tree.unflatten(in_tree, flat)
            full = [static_pos[n] if n in nums else a for n, a in enumerate(d_args)]
            return f(*full, **{**d_kwargs, **{k: v for k, v in static if isinstance(k, str)}})

        graph = optimize(stage(flat_f, leaves, in_tree, f"jit({_name(f)})"))
        self._misses += 1
        if _closes_over_tracers(graph):
            # f read a value another transform is tracing (vmap, grad, jvp around this
            # jit): that value differs on the next call, so the graph is replayed op by op
            # under that transform and not kept.
            return graph, None
        xp = _namespace(leaves)
        donated = _donated_inputs(dyn_args, dyn_kwargs, nums, self._donate_nums, self._donate_names)
        program = None
        if xp is not None:
            run_graph = inline_rules(graph)
            if xp is not np:  # on cupy, chains of elementwise nodes run as one kernel each
                from fgrad.transforms.fusion import fuse_for  # its tables: only when needed

                run_graph = fuse_for(run_graph, xp)
            elif config.cpu_compile:  # numba kernels, where they pay
                from fgrad.transforms.fusion import fuse_for

                fused = fuse_for(run_graph, xp)
                # A fused kernel writes a fresh array: where it would give an output that a
                # donated input's buffer can take (an optimiser's update), numpy's in-place
                # steps stay. A KV cache's outputs come from dynamic_update_slice: fused.
                if not (donated and _fuses_a_donation_target(fused, donated)):
                    run_graph = fused
            program = Program(run_graph, xp, donated, graph)
        if len(self._cache) >= _CACHE_SIZE:
            evicted = self._cache.pop(next(iter(self._cache)))[1]
            for k in [k for k, v in self._fast.items() if v[0] is evicted]:
                del self._fast[k]
        self._cache[key] = (graph, program)
        return graph, program

    def _checked_run(self, program: Program, datas: list) -> list:
        inputs = list(datas)  # a second reference: donated inputs are copied, not overwritten
        with np.errstate(invalid="ignore", divide="ignore"):  # the check says more
            outs = program.run(datas)
        check_program(program.traced, inputs, outs, f"jit({_name(self._f)})")
        return outs

    def _consume(self, args: tuple, kwargs: dict) -> None:
        _consume(args, kwargs, self._donate_nums, self._donate_names, self._f)


def _fuses_a_donation_target(graph: Graph, donated: tuple) -> bool:
    """Whether a fused node of ``graph`` gives an output of the shape and dtype of a
    donated input (one the memory plan could write into that input's buffer)."""
    avals = {graph.invars[i].aval for i in donated}
    targets = {id(v) for v in graph.outvars if isinstance(v, Var) and v.aval in avals}
    return any(
        id(v) in targets for node in graph.nodes if node.op.name.startswith("fused") for v in node.outputs
    )


def _closes_over_tracers(graph: Graph) -> bool:
    """Whether a constant of ``graph`` is a tracer of an outer transform (a closure)."""
    return any(isinstance(v, Tracer) for node in graph.nodes for v in node.inputs) or any(
        isinstance(v, Tracer) for v in graph.outvars
    )


def _positional_params(f: Callable) -> list[str] | None:
    """Names of ``f``'s positional parameters; None without a signature or with *args."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _defaults(f: Callable) -> dict[str, Any]:
    """``f``'s parameters with default values, by name (empty without a signature)."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty}


def _check_positions(f: Callable, nums: tuple, what: str, positional: list[str]) -> None:
    for n in nums:
        if not -len(positional) <= n < len(positional):
            raise ValueError(
                f"jit({_name(f)}): {what} {n} is out of range for a function with "
                f"{len(positional)} positional parameters {positional}"
            )


def _donated_inputs(
    dyn_args: tuple, dyn_kwargs: dict, static: set, donate_nums: tuple, donate_names: tuple
) -> tuple[int, ...]:
    """Indices into the program's inputs (the array leaves, in order: positional arguments,
    then keyword arguments by sorted name) of the donated ones."""
    if not (donate_nums or donate_names):
        return ()
    nargs = len(dyn_args)
    positions = {n % nargs for n in donate_nums if -nargs <= n < nargs and n % nargs not in static}
    parts = [(n in positions, arg) for n, arg in enumerate(dyn_args)]
    parts += [(k in donate_names, dyn_kwargs[k]) for k in sorted(dyn_kwargs)]
    found: list[int] = []
    k = 0
    for donated, arg in parts:
        for leaf in tree.leaves(arg):
            if type(leaf) in _STATIC_SCALARS:
                continue
            if donated and isinstance(leaf, Tensor):
                found.append(k)
            k += 1
    return tuple(found)


def _consume(args: tuple, kwargs: dict, donate_nums: tuple, donate_names: tuple, f: Callable) -> None:
    """Mark the donated argument Tensors deleted: their arrays may now hold outputs."""
    nargs = len(args)
    donated = [args[n] for n in donate_nums if -nargs <= n < nargs]
    donated += [v for k, v in kwargs.items() if k in donate_names]
    for arg in donated:
        for leaf in tree.leaves(arg):
            if type(leaf) is Tensor:
                data = leaf._data
                leaf._data = Donated(f"jit({_name(f)})", data.shape, data.dtype)


def _complete_positions(f: Callable, nums: Any, names: Any, what: str) -> tuple[tuple, tuple]:
    """Complete ``{what}_argnums`` and ``{what}_argnames`` (each one value or a sequence)
    from each other, as JAX does.

    A static (or donated) argument named may be passed positionally and one numbered may
    be passed by keyword; positions beyond ``f``'s positional parameters, and names that
    are not its parameters (unless it takes ``**kwargs``), are errors: a misspelt name
    would otherwise be traced silently.
    """
    where = f"jit({_name(f)})"
    nums = as_positions(nums, where, f"{what}_argnums", f"{what}_argnames")
    names = as_names(names, where, f"{what}_argnames", f"{what}_argnums")
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return nums, names
    if names and not any(p.kind is p.VAR_KEYWORD for p in params):
        known = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        unknown = [m for m in names if m not in known]
        if unknown:
            raise ValueError(
                f"jit({_name(f)}): {what}_argnames {unknown} name no parameter of "
                f"{_name(f)}, whose parameters are {known}"
            )
    positional = _positional_params(f)
    if positional is None:
        return nums, names
    _check_positions(f, nums, f"{what}_argnums", positional)
    nums = tuple(
        sorted({n % len(positional) for n in nums} | {positional.index(m) for m in names if m in positional})
    )
    names = tuple(sorted(set(names) | {positional[n] for n in nums}))
    return nums, names


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


def _namespace(leaves: list) -> Any:
    """The namespace the program's kernels use, or None when an input is a tracer."""
    xp = np
    for x in leaves:
        if isinstance(x, Tracer):
            return None
        if type(x) in _SCALARS or isinstance(x, ShapeDtype):
            continue
        xp = backend.namespace_of(x._data if isinstance(x, Tensor) else x)
    return xp


def _private(datas: list, raw: list, program: Program) -> None:
    """Copy the caller's arrays (at positions ``raw`` of ``datas``, not Tensors) that an output
    of ``program`` may alias, or that it may write into (donated), as a Tensor made from
    them would be: a caller that reuses its buffer must never change a returned Tensor.
    An array whose every output is a new one (``exp(x)``) is read in place: copying a
    million float32 cost a quarter of the op itself."""
    for i in raw:
        if i in program.viewed_inputs:
            datas[i] = datas[i].copy()


def _run(program: Program, datas: list) -> list:
    """``program.run(datas)``; a kernel's error is raised as eager evaluation names it."""
    try:
        return program.run(datas)
    except Exception as err:
        raise _named(program.traced, datas, err) from None


def _named(graph: Graph, datas: list, err: Exception) -> Exception:
    """The error of the op that failed, naming it and its inputs' avals and the line that
    traced it: a compiled program's error comes from a bare kernel call (numpy's
    ``LinAlgError`` or ``TypeError``, no op), so the graph runs again op by op to say which
    op it was. Only after a failure, so the program itself pays nothing."""
    if isinstance(err, FgradError):
        return err
    failing: list = []

    def note(node: Any) -> None:
        failing[:] = [node]

    try:
        with np.errstate(all="ignore"):
            graph.evaluate_flat([_wrap(d) if hasattr(d, "shape") else d for d in datas], note)
    except Exception as named:  # noqa: BLE001  (whatever the op raised, now with its name)
        node = failing[0] if failing else None
        if node is not None and node.source and named.args and isinstance(named.args[0], str):
            named.args = (f"{named.args[0]} (traced at {node.source})", *named.args[1:])
        return named
    return err


def _replay(graph: Graph, arrays: list) -> Any:
    return tree.unflatten(graph.out_tree, graph.evaluate_flat(arrays))


def _as_output(x: Any) -> Any:
    # A Python number the function returns as a constant is a 0-d Tensor too, as every
    # traced result is (jit returns arrays, as JAX's does).
    if isinstance(x, Tensor) or x is None:
        return x
    return _wrap(np.asarray(x)) if type(x) in _SCALARS else _wrap(x)
