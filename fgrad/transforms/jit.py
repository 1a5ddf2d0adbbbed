"""``jit``: trace a function once per input signature, then replay the cached graph.

The first call with a new signature (tree structure, shapes, dtypes, array type, static
values, Python ints and bools) traces the function abstractly into a Graph, runs the graph passes
(``fgrad.transforms.passes``), and compiles it to a *program*: one generated Python
function with a line per node that calls the kernel on local variables. Later calls run
that function directly: no tracing, no Tensor wrapping, no per-op dispatch. A value is
released (``del``) right after its last use, so intermediates do not outlive their
consumers. On numpy, steps that are ufuncs (elementwise ops, ``matmul``) and a few
others write into ``out=`` buffers of an arena that the program plans at compile time
and keeps between calls (see the notes above :class:`_Program`).

Called on tracers of another transform (``grad(jit(f))``), the cached graph is replayed
op by op so that the outer transform records it.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import backend, tree
from fgrad._config import config
from fgrad.core.debug import check_program
from fgrad.core.graph import Graph, GraphTrace, GraphTracer, Node, Var
from fgrad.core.trace import Tracer, new_trace
from fgrad.tensor import Donated, ShapeDtype, Tensor, WeakShapeDtype, _wrap
from fgrad.transforms.passes import exact_key, optimize
from fgrad.transforms.retrace import RetraceMonitor

__all__ = ["jit"]

_log = logging.getLogger("fgrad")
_SCALARS = (bool, int, float, complex)
# Python scalar arguments: floats and complex numbers are traced as weakly typed scalars
# (a new value runs the same program), as JAX does; ints and bools stay compile-time
# constants (they are shapes, axes, counts and flags far more often than data).
_TRACED_SCALARS = (float, complex)
_STATIC_SCALARS = (bool, int)
# Compiled signatures a jitted function keeps (the oldest goes first): each holds its
# program's buffers, so a function traced for ever new signatures must not keep them all.
_CACHE_SIZE = 64


# ------------------------------------------------------------------------ the program
# A compiled graph is one generated Python function: a line per node that calls the
# kernel on local variables, ``del`` after each value's last use, and ``out=`` buffers
# for the steps that can write into one. Nothing else runs between kernels: no slot
# lists, no argument packing, no dispatch (``_Program.source`` shows the code).
#
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

# Ops whose kernels always return a new array, never a view of an input.
_FRESH = frozenset(
    {
        "where",
        "softmax",
        "log_softmax",
        "matmul",
        "sum",
        "max",
        "min",
        "full_like",
        "scatter_add",
        "scatter_set",
        "concatenate",
        "logsumexp",
        # fgrad/ops/nn.py's fused ops
        "softmax_jvp",
        "gelu_tanh_gate",
        "standardize",
        "standardize_grad",
        "scale_shift",
        "sum_rows",
    }
)
_INT_OF = {4: np.dtype(np.int32), 8: np.dtype(np.int64)}


class _Arg:
    """Stands for kernel input ``i`` while a kernel runs on a recording namespace."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


class _Token:
    """What a recorded call returns: any use of it as a value stops the recording."""

    __slots__ = ()

    def _refuse(self, *args: Any) -> Any:
        raise TypeError("a recorded kernel used a call's result as a value")

    __bool__ = __len__ = __iter__ = __index__ = __float__ = __int__ = __getattr__ = _refuse


class _Recorder:
    """A fake ``xp`` that records the call a kernel such as ``xp.maximum(x, 0)`` makes.

    A second call stops the recording (so no kernel loops on it for long)."""

    def __init__(self):
        self.calls: list = []

    def __getattr__(self, name: str) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.calls:
                raise TypeError("a recorded kernel made more than one call")
            token = _Token()
            self.calls.append((name, args, kwargs, token))
            return token

        return call


def _ufunc_form(op: Any, params: dict, n_inputs: int) -> tuple | None:
    """``(ufunc, args)`` when ``op``'s kernel is one numpy ufunc call on its inputs.

    The kernel runs once on a recording namespace with placeholders for its inputs. It
    qualifies when it makes exactly one call, of a name that is a ufunc in numpy, with
    placeholders and Python scalars as arguments, and returns that call's result; the
    step may then write into an ``out=`` buffer. A kernel that reads an attribute of an
    input, branches on it or makes two calls fails the test and keeps its own code.
    """
    rec = _Recorder()
    try:
        result = op.kernel(rec, *[_Arg(i) for i in range(n_inputs)], **params)
    except Exception:  # noqa: BLE001  (any kernel that is not one plain call lands here)
        return None
    if len(rec.calls) != 1:
        return None
    name, args, kwargs, token = rec.calls[0]
    ufunc = getattr(np, name, None)
    if result is not token or kwargs or not isinstance(ufunc, np.ufunc):
        return None
    if not all(isinstance(a, _Arg) or type(a) in _SCALARS for a in args):
        return None
    return ufunc, args


def _matmul_rows(x: Any, y: Any, out: Any = None) -> Any:
    """``(..., m, k) @ (k, n)`` as one ``(rows, k) @ (k, n)`` BLAS call, not one per batch."""
    rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # not -1: k may be 0
    if out is None:
        return np.matmul(rows, y).reshape(x.shape[:-1] + y.shape[-1:])
    np.matmul(rows, y, out=out.reshape(rows.shape[0], y.shape[-1]))
    return out


def _where_zero(cond: Any, x: Any, out: Any = None, keep: bool = True) -> Any:
    """``where(cond, x, 0)`` (``keep``) or ``where(cond, 0, x)`` as a bit mask, 3x faster.

    The mask (all ones where ``x`` is kept, else zeros) is built in ``out``'s memory as
    integers of the float's width, then ANDed with ``x``'s bits: kept values come out bit
    for bit (NaNs included) and the others as +0.0, exactly what ``numpy.where`` gives.
    """
    if out is None:
        out = np.empty(x.shape, x.dtype)
    bits = out.view(_INT_OF[x.dtype.itemsize])
    flag = cond.view(np.int8)
    if keep:  # True -> -1 (all ones), False -> 0
        np.negative(flag, out=bits, casting="unsafe")
    else:  # True -> 0, False -> -1
        np.subtract(flag, 1, out=bits, casting="unsafe")
    np.bitwise_and(x.view(bits.dtype), bits, out=bits)
    return out


def _where_zero_form(node: Node) -> bool | None:
    """``keep`` for :func:`_where_zero` when ``node`` is ``where(c, x, 0)`` or ``where(c, 0,
    x)`` with ``c`` bool and ``x`` float32/64, both of the output's shape; else None."""
    if node.op.name != "where" or len(node.inputs) != 3 or node.params:
        return None
    cond, a, b = node.inputs
    out = node.outputs[0].aval
    if not isinstance(cond, Var) or cond.aval.dtype != np.bool_ or cond.aval.shape != out.shape:
        return None
    if np.dtype(out.dtype) not in (np.float32, np.float64):
        return None
    for keep, x, zero in ((True, a, b), (False, b, a)):
        is_zero = type(zero) in (int, float) and zero == 0 and math.copysign(1.0, zero) > 0
        if is_zero and isinstance(x, Var) and x.aval == out:
            return keep
    return None


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


def _resolves_to(ufunc: np.ufunc, args: tuple, inputs: list, dtype: Any) -> bool:
    """numpy's result dtype for ``ufunc`` on these arguments is ``dtype`` (the aval's).

    Writing into an ``out=`` buffer of the aval's dtype would otherwise cast (or raise),
    where the kernel alone gives numpy's type (the two differ for some bool inputs)."""
    types = []
    for a in args:
        if isinstance(a, _Arg):
            a = inputs[a.i]
        if isinstance(a, Var) and a.aval.weak:  # a Python scalar when the program runs
            types.append(complex if a.aval.dtype.kind == "c" else float)
        elif isinstance(a, Var):
            types.append(np.dtype(a.aval.dtype))
        elif type(a) in _SCALARS:
            types.append(type(a))  # weak (NEP 50)
        else:
            data = a._data if isinstance(a, Tensor) else a
            if not hasattr(data, "dtype"):
                return False
            types.append(np.dtype(data.dtype))
    try:
        resolved = ufunc.resolve_dtypes((*types, *[None] * ufunc.nout))
    except Exception:  # noqa: BLE001  (no loop, or an argument numpy cannot type)
        return False
    return resolved[ufunc.nin] == np.dtype(dtype)


def _concat_into(*xs: Any, axis: int, out: Any) -> Any:
    return np.concatenate(xs, axis=axis, out=out)


def _drop_ones(shape: tuple) -> tuple:
    return tuple(d for d in shape if d != 1)


def _reshape_copy(x: Any, out: Any) -> Any:
    """``reshape`` of a permuted view, which copies: the copy goes into ``out``."""
    np.copyto(out.reshape(x.shape), x)
    return out


def _step_forms(graph: Graph, xp: Any) -> list[tuple]:
    """How each node runs: ``("ufunc", ufunc, args)``, a specialised numpy kernel
    (``("matmul_rows",)``, ``("where0", keep)``, ``("into", fn, kwargs)``) or
    ``("kernel",)``. All but the last may take an ``out=`` buffer, unless the form ends
    with ``"small"``."""
    forms: list[tuple] = []
    producer: dict[int, Node] = {}
    for node in graph.nodes:
        for v in node.outputs:
            producer[id(v)] = node
        form: tuple = ("kernel",)
        if xp is np and not node.op.multiple_results:
            out = node.outputs[0].aval
            name = node.op.name
            ins = node.inputs
            keep = _where_zero_form(node)
            uf = None if keep is not None else _ufunc_form(node.op, node.params, len(ins))
            if keep is not None:
                form = ("where0", keep)
            elif uf is not None and uf[0] is np.matmul:
                x, y = ins
                rows = (
                    len(getattr(x, "aval", x).shape) >= 3 and len(getattr(y, "aval", y).shape) == 2
                )
                if rows and _resolves_to(np.matmul, uf[1], ins, out.dtype):
                    form = ("matmul_rows",)
                else:
                    form = ("ufunc", *uf)
            elif uf is not None:
                form = ("ufunc", *uf)
            elif name == "softmax" and isinstance(ins[0], Var) and ins[0].aval == out:
                # The softmax kernel takes out= (it writes its temporaries into it).
                form = ("into", functools.partial(node.op.kernel, np), {"axes": node.params["axes"]})
            elif name == "concatenate" and all(
                isinstance(v, Var) and v.aval.dtype == out.dtype for v in ins
            ):
                form = ("into", _concat_into, {"axis": node.params["axis"]})
            elif (
                name == "reshape"
                and isinstance(ins[0], Var)
                and getattr(producer.get(id(ins[0])), "op", None) is not None
                and producer[id(ins[0])].op.name == "permute_dims"
                and _drop_ones(ins[0].aval.shape) != _drop_ones(out.shape)
            ):  # a reshape of a permuted view that copies (not just adding unit axes)
                form = ("into", _reshape_copy, {})
            if form[0] == "ufunc" and not _resolves_to(form[1], form[2], ins, out.dtype):
                form += ("small",)  # numpy's own result type differs: no out= (nor a cast)
            elif form[0] != "kernel" and (
                _nbytes(out) < _MIN_BUFFER or np.dtype(out.dtype).hasobject
            ):
                form = ("kernel",) if form[0] == "into" else form + ("small",)
        forms.append(form)
    return forms


def _donation_plan(graph: Graph, forms: list[tuple], donated: tuple[int, ...]) -> dict[int, int]:
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
    step_of: dict[int, int] = {}
    for k, (node, form) in enumerate(zip(nodes, forms)):
        seen = frozenset().union(
            *(alias.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
        )
        for i in seen:
            read_until[i] = k
        fresh = node.op.name in _FRESH or form[0] in ("ufunc", "matmul_rows", "where0")
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
            if graph.invars[i].aval == v.aval and (end < k or (end == k and form[0] == "ufunc")):
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


class _Program:
    """A graph compiled to one Python function over backend arrays (see the notes above)."""

    __slots__ = (
        "_buffers", "_claims", "_fn", "_layout", "_lock", "arena_bytes", "graph", "source",
        "traced",
    )

    def __init__(
        self, graph: Graph, xp: Any, donated: tuple[int, ...] = (), traced: Graph | None = None
    ):
        self.graph = graph
        self.traced = traced or graph  # before fusion: what debug_nans re-runs op by op
        nodes = graph.nodes
        ns: dict[str, Any] = {"xp": xp}
        names: dict[int, str] = {id(v): f"a{i}" for i, v in enumerate(graph.invars)}
        const_names: dict[int, str] = {}

        def const(value: Any) -> str:
            key = id(value)
            if key not in const_names:
                const_names[key] = f"c{len(const_names)}"
                data = value._data if isinstance(value, Tensor) else value
                if xp is not np and type(data) is np.ndarray:
                    # Constants made on the host while tracing (folded ones, captured
                    # numpy-backed Tensors) move to the program's namespace once, here.
                    data = xp.asarray(data)
                ns[const_names[key]] = data
            return const_names[key]

        def ref(v: Any) -> str:
            return names[id(v)] if isinstance(v, Var) else const(v)

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
        forms = _step_forms(graph, xp)
        roots: dict[int, frozenset] = {}
        candidates = set()
        for node, form in zip(nodes, forms):
            if form[0] != "kernel" and form[-1] != "small":
                o = id(node.outputs[0])
                candidates.add(o)
                roots[o] = frozenset((o,))
                if form[0] == "into" and form[1] is _reshape_copy:
                    # Without a buffer (when it escapes) it runs as reshape: maybe a view.
                    roots[o] |= frozenset().union(
                        *(roots.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
                    )
            elif node.op.name in _FRESH:
                for v in node.outputs:
                    roots[id(v)] = frozenset()
            else:
                r = frozenset().union(
                    *(roots.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
                )
                for v in node.outputs:
                    roots[id(v)] = r
        managed = candidates - frozenset().union(*(roots.get(i, ()) for i in outputs))
        donation = _donation_plan(graph, forms, donated if xp is np else ())
        self._claims = tuple(sorted(set(donation.values())))
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
        lines: list[str] = []
        for k, (node, form) in enumerate(zip(nodes, forms)):
            o = node.outputs[0]
            buf = ""
            if id(o) in managed:
                donor = None
                if form[0] == "ufunc" and form[1].signature is None:  # elementwise: in place
                    for v in node.inputs:
                        if (
                            isinstance(v, Var)
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
                buf = f"b{buffer_of[id(o)]}"
            elif id(o) in donation:
                buf = names[id(graph.invars[donation[id(o)]])]
            args = [ref(v) for v in node.inputs]
            for v in node.outputs:
                names[id(v)] = f"v{len(names)}"
            target = ", ".join(names[id(v)] for v in node.outputs)
            if node.op.multiple_results and len(node.outputs) == 1:
                target += ","
            if form[0] == "ufunc":
                call_args = [args[a.i] if isinstance(a, _Arg) else const(a) for a in form[2]]
                call = f"{const(form[1])}({', '.join(call_args + ([f'out={buf}'] if buf else []))})"
            elif form[0] == "matmul_rows":
                call = f"{const(_matmul_rows)}({', '.join(args + ([buf] if buf else []))})"
            elif form[0] == "where0":
                x = args[1] if form[1] else args[2]
                call = f"{const(_where_zero)}({args[0]}, {x}, {buf or 'None'}, {form[1]})"
            elif form[0] == "into" and buf:
                kw = [f"{key}={const(val)}" for key, val in form[2].items()]
                call = f"{const(form[1])}({', '.join(args + kw + [f'out={buf}'])})"
            else:  # the op's own kernel (also an "into" form without a buffer)
                kw = [f"{key}={const(val)}" for key, val in node.params.items()]
                call = f"{const(node.op.kernel)}({', '.join(['xp'] + args + kw)})"
            lines.append(f"{target} = {call}  # {node.op.name}")
            read_here = {id(v): v for v in node.inputs if isinstance(v, Var)}
            dead = [names[i] for i in read_here if last_use[i] == k and i not in inputs]
            dead += [names[id(v)] for v in node.outputs if id(v) not in last_use]
            if dead:
                lines.append(f"del {', '.join(dead)}")
            for v in ending.get(k, ()):
                if id(v) not in handed_on:
                    arena.release(offset_of[id(v)], _nbytes(v.aval))

        head = ["def _run(datas, buffers):"]
        if graph.invars:
            head.append(f"    {''.join(f'a{i}, ' for i in range(len(graph.invars)))}= datas")
        if layout:
            head.append(f"    {''.join(f'b{i}, ' for i in range(len(layout)))}= buffers")
        body = [f"    {line}" for line in lines]
        ret = f"    return [{', '.join(ref(v) for v in graph.outvars)}]"
        self.source = "\n".join(head + body + [ret])
        exec(compile(self.source, "<fgrad.jit program>", "exec"), ns)  # noqa: S102
        self._fn = ns["_run"]
        self._layout = layout
        self.arena_bytes = arena.end
        self._buffers: list | None = None
        self._lock = threading.Lock()

    def _new_buffers(self) -> list:
        raw = np.empty(self.arena_bytes + _ALIGN, np.uint8)
        start = -raw.ctypes.data % _ALIGN
        return [
            raw[start + offset : start + offset + _nbytes(ShapeDtype(shape, dtype))]
            .view(dtype)
            .reshape(shape)
            for offset, shape, dtype in self._layout
        ]

    def run(self, datas: list) -> list:
        for i in self._claims:
            _claim(datas, i)
        if not self._layout:
            return self._fn(datas, ())
        if not self._lock.acquire(blocking=False):
            # Running already (another thread): this call gets buffers of its own.
            return self._fn(datas, self._new_buffers())
        try:
            if self._buffers is None:
                self._buffers = self._new_buffers()
            return self._fn(datas, self._buffers)
        finally:
            self._lock.release()


class _Slow(Exception):
    """The quick argument walk met something only the general path handles."""


def _walk(x: Any, datas: list, sig: list) -> Any:
    """The structure of the argument pytree ``x``; arrays go to ``datas``, their
    signatures (and static Python scalars) to ``sig``; traced Python scalars go to both. Raises _Slow for anything but
    Tensors, numpy arrays, Python scalars, None, tuples, lists and dicts."""
    t = type(x)
    if t is Tensor:
        d = x._data
        datas.append(d)
        sig.append((type(d), d.shape, d.dtype))
        return 0
    if t is tuple or t is list:
        return (t, *[_walk(c, datas, sig) for c in x])
    if t is dict:
        keys = sorted(x)
        return (dict, tuple(keys), *[_walk(x[k], datas, sig) for k in keys])
    if t in _TRACED_SCALARS:
        datas.append(x)
        sig.append((t,))
        return 3
    if t in _SCALARS:
        sig.append((t, exact_key(x)))
        return 1
    if t is np.ndarray:
        datas.append(x.copy())  # the caller may reuse its buffer: outputs must not alias it
        sig.append((t, x.shape, x.dtype))
        return 0
    if x is None:
        return 2
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
) -> Callable:
    """Compile ``f``: trace it once per input signature and replay the cached graph.

    Array arguments (Tensors, numpy or cupy arrays) are traced by shape and dtype. Python
    floats and complex numbers are traced too, weakly typed as in JAX (``float32 x * lr``
    stays float32, as it does eagerly), so a new value reuses the program; Python control
    flow on them needs them static. Python ints and bools and the arguments named static
    are part of the signature, so a new value retraces (``fgrad.config.
    explain_cache_misses`` logs why each trace happened; a ``RetraceWarning`` says when
    new int or bool values keep causing traces). The programs of the 64 most recent
    signatures are kept. The traced graph is simplified (dead code, common subexpressions, constant
    folding, shape plumbing) and run as one kernel call per node. Works on ``grad(f)``,
    whole training steps, and inside other transforms (``grad(jit(f))``, ``jit(grad(f))``).

    On numpy the compiled program keeps buffers for its intermediates between calls
    (about ``graph.cost().peak_bytes``; ``f.clear_cache()`` lets them go), so that a
    call allocates little beyond its outputs. Results are those of the eager ops up to
    rounding: a ``(..., m, k) @ (k, n)`` product runs as one 2-D BLAS call, which may
    round differently from numpy's per-batch loop.

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
        A function with ``f``'s signature. ``.cache_info()`` gives hits, misses and size;
        ``.graph(*args)`` the optimised Graph for those arguments.

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
    if not callable(f):
        raise TypeError(f"jit: expected a function to compile, got {type(f).__name__} {f!r}")
    static_nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    static_names = (
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    )
    static_nums, static_names = _complete_positions(f, static_nums, static_names, "static")
    donate_nums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    donate_names = (
        (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames)
    )
    donate_nums, donate_names = _complete_positions(f, donate_nums, donate_names, "donate")
    both = sorted(set(donate_names) & set(static_names)) or sorted(set(donate_nums) & set(static_nums))
    if both:
        raise ValueError(
            f"jit({_name(f)}): {both} are both donated (donate_argnums / donate_argnames) and "
            "static (static_argnums / static_argnames); a static argument is not an array "
            "and cannot be donated"
        )
    donating = bool(donate_nums or donate_names)
    cache: dict[Any, tuple[Graph, _Program | None]] = {}
    stats = {"hits": 0, "misses": 0}
    monitor = RetraceMonitor(_name(f), _positional_params(f))

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
            _log.warning("jit: tracing %s for %s", _name(f), monitor.describe(in_tree, static, key[2]))
        reason = monitor.on_miss(in_tree, static, key[2])
        if reason is not None and config.explain_cache_misses:
            _log.warning("%s", reason)
        static_pos = dict(static)

        def flat_f(*flat):
            d_args, d_kwargs = tree.unflatten(in_tree, flat)
            full = [static_pos[n] if n in nums else a for n, a in enumerate(d_args)]
            return f(*full, **{**d_kwargs, **{k: v for k, v in static if isinstance(k, str)}})

        graph = _trace(flat_f, leaves, in_tree)
        graph = optimize(graph)
        stats["misses"] += 1
        if _closes_over_tracers(graph):
            # f read a value another transform is tracing (vmap, grad, jvp around this
            # jit): that value differs on the next call, so the graph is replayed op by op
            # under that transform and not kept.
            return graph, None
        xp = _namespace(leaves)
        donated = _donated_inputs(dyn_args, dyn_kwargs, nums, donate_nums, donate_names)
        program = None
        if xp is not None:
            run_graph = graph
            if xp is not np:  # on cupy, chains of elementwise nodes run as one kernel each
                from fgrad.transforms.fusion import fuse_for  # its tables: only when needed

                run_graph = fuse_for(graph, xp)
            program = _Program(run_graph, xp, donated, graph)
        if len(cache) >= _CACHE_SIZE:
            evicted = cache.pop(next(iter(cache)))[1]
            for k in [k for k, v in fast.items() if v[0] is evicted]:
                del fast[k]
        cache[key] = (graph, program)
        return graph, program

    # Calls with positional array arguments only (the common case) first try a cache keyed
    # on a quick walk of the arguments: no TreeDef, no signature tuples per leaf.
    fast: dict[Any, tuple[_Program, Callable]] = {}

    @functools.wraps(f)
    def jitted(*args: Any, **kwargs: Any) -> Any:
        fast_key = None
        if not kwargs and not static_nums:
            datas: list = []
            sig: list = []
            try:
                fast_key = (_walk(args, datas, sig), tuple(sig))
                entry = fast.get(fast_key)
            except _Slow:  # a leaf or node the walk does not know (tracers among them)
                fast_key = entry = None
            except TypeError:  # an unhashable static leaf: the general path explains
                fast_key = entry = None
            if entry is not None:
                stats["hits"] += 1
                program = entry[0]
                outs = _checked_run(program, datas) if config.debug_nans else program.run(datas)
                out = entry[1](outs)
                if donating:
                    _consume(args, {}, donate_nums, donate_names, f)
                return out
        nums, static, dyn_args, dyn_kwargs = split(args, kwargs)
        leaves, in_tree = tree.flatten((dyn_args, dyn_kwargs))
        key = (in_tree, exact_key(static), tuple(_signature_leaf(x) for x in leaves))
        entry = cache.get(key)
        if entry is None:
            graph, program = build(nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key)
        else:
            stats["hits"] += 1
            graph, program = entry
        arrays = [x for x in leaves if type(x) not in _STATIC_SCALARS]
        if any(isinstance(x, ShapeDtype) for x in arrays):
            raise TypeError(
                f"jit({_name(f)}): called with a ShapeDtype, which has no values; use "
                f"{_name(f)}.graph(...) or fgrad.eval_shape for shapes, and arrays to compute"
            )
        if program is None or any(isinstance(x, Tracer) for x in arrays):
            # Inside another transform: replay op by op so that transform records it.
            return _replay(graph, arrays)
        # Raw arrays are copied, as Tensors made from them would be: a caller that reuses
        # its buffer must not see it in (possibly aliasing) outputs.
        datas = [
            x._data if isinstance(x, Tensor) else x if type(x) in _TRACED_SCALARS else x.copy()
            for x in arrays
        ]
        build_out = _output_builder(graph.out_tree)
        if fast_key is not None:
            fast[fast_key] = (program, build_out)
        out = build_out(_checked_run(program, datas) if config.debug_nans else program.run(datas))
        if donating:
            _consume(args, kwargs, donate_nums, donate_names, f)
        return out

    def _checked_run(program: _Program, datas: list) -> list:
        inputs = list(datas)  # a second reference: donated inputs are copied, not overwritten
        with np.errstate(invalid="ignore", divide="ignore"):  # the check says more
            outs = program.run(datas)
        check_program(program.traced, inputs, outs, f"jit({_name(f)})")
        return outs

    def cache_info():
        return _CacheInfo(stats["hits"], stats["misses"], len(cache))

    def graph_for(*args: Any, **kwargs: Any) -> Graph:
        # Arguments may be ShapeDtypes (as JAX's jit(f).lower takes ShapeDtypeStructs): the
        # program compiled for them serves later calls with numpy arrays of those avals.
        nums, static, dyn_args, dyn_kwargs = split(args, kwargs)
        leaves, in_tree = tree.flatten((dyn_args, dyn_kwargs))
        key = (in_tree, exact_key(static), tuple(_signature_leaf(x) for x in leaves))
        entry = cache.get(key) or build(nums, static, dyn_args, dyn_kwargs, leaves, in_tree, key)
        return entry[0]

    jitted.cache_info = cache_info
    jitted.graph = graph_for

    def clear_cache():
        cache.clear()
        fast.clear()
        stats.update(hits=0, misses=0)  # as functools.lru_cache's cache_clear

    jitted.clear_cache = clear_cache
    return jitted


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


def _complete_positions(f: Callable, nums: tuple, names: tuple, what: str) -> tuple[tuple, tuple]:
    """Complete ``{what}_argnums`` and ``{what}_argnames`` from each other, as JAX does.

    A static (or donated) argument named may be passed positionally and one numbered may
    be passed by keyword; positions beyond ``f``'s positional parameters, and names that
    are not its parameters (unless it takes ``**kwargs``), are errors: a misspelt name
    would otherwise be traced silently.
    """
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
    nums = tuple(sorted({n % len(positional) for n in nums} | {positional.index(m) for m in names if m in positional}))
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


def _trace(flat_f: Callable, leaves: list, in_tree: Any) -> Graph:
    """Trace ``flat_f`` with graph tracers for the array leaves and the Python floats and
    complex numbers (weakly typed); ints and bools stay constants."""
    with new_trace(GraphTrace()) as trace:
        invars, inputs = [], []
        for x in leaves:
            if type(x) in _STATIC_SCALARS:
                inputs.append(x)
                continue
            if type(x) in _TRACED_SCALARS:
                aval = WeakShapeDtype((), np.dtype(type(x)))
            elif isinstance(x, Tensor):
                aval = x.aval
            else:
                aval = ShapeDtype(tuple(x.shape), np.dtype(x.dtype))
            v = Var(aval)
            invars.append(v)
            inputs.append(GraphTracer(trace, v))
        out = flat_f(*inputs)
        out_leaves, out_tree = tree.flatten(out)
    outvars = [o.var if type(o) is GraphTracer and o._trace is trace else o for o in out_leaves]
    for k, o in enumerate(outvars):
        if not isinstance(o, (Var, Tensor)) and type(o) not in _SCALARS and not hasattr(o, "dtype"):
            raise TypeError(
                f"jit: the function's output leaf {k} is a {type(o).__name__} ({o!r:.40}), "
                "not an array or a Python number; a jitted function returns pytrees of arrays "
                "and numbers (return other values from a wrapper around the jitted part)"
            )
        if isinstance(o, Tracer):
            from fgrad.errors import TracerLeakError

            raise TracerLeakError(
                "jit: the function returned a tracer of an outer transform it closed over"
            )
    return Graph(invars, trace.nodes, outvars, in_tree, out_tree)


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


def _replay(graph: Graph, arrays: list) -> Any:
    return tree.unflatten(graph.out_tree, graph.evaluate_flat(arrays))


def _as_output(x: Any) -> Any:
    if isinstance(x, Tensor) or type(x) in _SCALARS or x is None:
        return x
    return _wrap(x)
