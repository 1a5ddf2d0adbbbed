"""A graph compiled to one Python function over backend arrays: what ``jit`` runs.

:class:`Program` turns a (passed-over) Graph into generated Python source with one line
per node that calls the kernel on local variables and ``del`` after each value's last
use; on numpy the ufunc steps write into ``out=`` buffers of an arena planned at compile
time and kept between calls, and outputs may be written into donated inputs. See the
notes below. ``fgrad.transforms.jit`` decides when to compile and caches the programs.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad.core.graph import Graph, Node, Var
from fgrad.ops.elementwise import where
from fgrad.ops.indexing import _dynamic_key, dynamic_update_slice, getitem, index_key
from fgrad.ops.linalg import matmul
from fgrad.ops.nn import softmax
from fgrad.ops.shape import concatenate, permute_dims, reshape
from fgrad.ops.traits import FRESH
from fgrad.tensor import ShapeDtype, Tensor
from fgrad.transforms.memory import _ALIGN, _MIN_BUFFER, _claim, _nbytes, plan_memory

__all__ = ["Program"]

_SCALARS = (bool, int, float, complex)


# ------------------------------------------------------------------------ the program
# A compiled graph is one generated Python function: a line per node that calls the
# kernel on local variables, ``del`` after each value's last use, and ``out=`` buffers
# for the steps that can write into one. Nothing else runs between kernels: no slot
# lists, no argument packing, no dispatch (``_Program.source`` shows the code).
#
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
    if node.op is not where or len(node.inputs) != 3 or node.params:
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


def _resolves_to(ufunc: np.ufunc, args: tuple, inputs: list, dtype: Any) -> bool:
    """numpy's result dtype for ``ufunc`` on these arguments is ``dtype`` (the aval's).

    Writing into an ``out=`` buffer of the aval's dtype would otherwise cast (or raise),
    where the kernel alone gives numpy's type (the two differ for some bool inputs)."""
    types = []
    for a in args:
        if isinstance(a, _Arg):
            a = inputs[a.i]
        if isinstance(a, Var):  # a weakly typed one too: a 0-d array when the program runs
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


def _update_into(x: Any, update: Any, *starts: Any, out: Any) -> Any:
    """``dynamic_update_slice`` into ``out``: in place when ``out`` is ``x`` itself (the
    plan gave the step its operand's array, which dies there), else a copy of ``x`` first."""
    if out is not x:
        np.copyto(out, x)
    out[_dynamic_key(starts, x.shape, update.shape)] = update
    return out


def _drop_ones(shape: tuple) -> tuple:
    return tuple(d for d in shape if d != 1)


def _reshape_copy(x: Any, out: Any) -> Any:
    """``reshape`` of a permuted view, which copies: the copy goes into ``out``."""
    np.copyto(out.reshape(x.shape), x)
    return out


# OpenBLAS multiplies small matrices faster when the right operand is row-major: for a
# stack of (64, 32) @ (32, 64) products, as in attention's ``q @ k^T``, a transposed
# right operand takes 135 us per stack, a contiguous copy 22 us plus 103 us. From about
# 64 x 128 matrices on the two orders cost the same, and the copy is a loss.
_SMALL_MATRIX = 4096  # elements of the right operand's matrices


def _transpose_copy(x: Any, axes: tuple, out: Any) -> Any:
    """``permute_dims`` that writes a contiguous copy into ``out`` (not a view)."""
    np.copyto(out, x.transpose(axes))
    return out


def _feeds_small_batched_matmul(node: Node, consumers: list) -> bool:
    """``node`` swaps the last two axes of a stack of small matrices, and every reader
    multiplies it as the right operand of a batched matmul (see ``_SMALL_MATRIX``)."""
    axes = node.params.get("axes", ())
    n = len(axes)
    out = node.outputs[0].aval
    if n < 3 or tuple(axes) != (*range(n - 2), n - 1, n - 2):
        return False
    if out.shape[-1] * out.shape[-2] > _SMALL_MATRIX or not consumers:
        return False
    v = node.outputs[0]
    return all(
        c.op is matmul
        and len(c.inputs) == 2
        and c.inputs[1] is v
        and c.inputs[0] is not v
        and len(getattr(c.inputs[0], "aval", c.inputs[0]).shape) >= 3
        for c in consumers
    )


def _view_form(node: Node) -> tuple | None:
    """A view step written as the array's own method or index: ``("kernel", text)``.

    A reshape, axis permutation or basic index of a numpy array is a view whatever the
    op's kernel adds around it; a decode step of a 30-layer model runs about 900 of them,
    and the op's kernel (a lambda calling ``np.reshape``, which calls the method) costs
    1.4 us a call against 0.3 us for the method. The form stays ``"kernel"`` for the
    memory plan: no buffer, and the result may view its input."""
    op, params = node.op, node.params
    if op is reshape:
        return ("kernel", "{0}.reshape({shape})", {"shape": params["shape"]})
    if op is permute_dims:
        return ("kernel", "{0}.transpose({axes})", {"axes": params["axes"]})
    if op is getitem and len(node.inputs) == 1:
        return ("kernel", "{0}[{key}]", {"key": index_key(params["index"], ())})
    return None


def _step_forms(graph: Graph, xp: Any) -> list[tuple]:
    """How each node runs: ``("ufunc", ufunc, args)``, a specialised numpy kernel
    (``("matmul_rows",)``, ``("where0", keep)``, ``("into", fn, kwargs)``) or
    ``("kernel",)``. All but the last may take an ``out=`` buffer, unless the form ends
    with ``"small"``."""
    forms: list[tuple] = []
    producer: dict[int, Node] = {}
    consumers: dict[int, list] = {}
    for node in graph.nodes:
        for v in node.inputs:
            if isinstance(v, Var):
                consumers.setdefault(id(v), []).append(node)
    for node in graph.nodes:
        for v in node.outputs:
            producer[id(v)] = node
        form: tuple = ("kernel",)
        # An effectful kernel (a host callback) runs as it is: never on placeholders.
        if xp is np and not node.op.multiple_results and not node.op.effectful:
            out = node.outputs[0].aval
            op = node.op
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
            elif op is softmax and isinstance(ins[0], Var) and ins[0].aval == out:
                # The softmax kernel takes out= (it writes its temporaries into it).
                form = ("into", functools.partial(node.op.kernel, np), {"axes": node.params["axes"]})
            elif op is concatenate and all(
                isinstance(v, Var) and v.aval.dtype == out.dtype for v in ins
            ):
                form = ("into", _concat_into, {"axis": node.params["axis"]})
            elif (
                op is reshape
                and isinstance(ins[0], Var)
                and getattr(producer.get(id(ins[0])), "op", None) is not None
                and producer[id(ins[0])].op is permute_dims
                and _drop_ones(ins[0].aval.shape) != _drop_ones(out.shape)
            ):  # a reshape of a permuted view that copies (not just adding unit axes)
                form = ("into", _reshape_copy, {})
            elif op is dynamic_update_slice and isinstance(ins[0], Var):
                form = ("into", _update_into, {})
            elif op is permute_dims and _feeds_small_batched_matmul(
                node, consumers.get(id(node.outputs[0]), [])
            ):
                form = ("into", _transpose_copy, {"axes": node.params["axes"]})
            elif isinstance(ins[0], Var) and (view := _view_form(node)) is not None:
                forms.append(view)
                continue
            if form[0] == "ufunc" and not _resolves_to(form[1], form[2], ins, out.dtype):
                form += ("small",)  # numpy's own result type differs: no out= (nor a cast)
            elif form[0] != "kernel" and (
                _nbytes(out) < _MIN_BUFFER or np.dtype(out.dtype).hasobject
            ):
                form = ("kernel",) if form[0] == "into" else form + ("small",)
        forms.append(form)
    return forms


def _viewed_inputs(graph: Graph, forms: list[tuple]) -> frozenset[int]:
    """Positions of the inputs whose arrays an output may be, or view: what ``jit``
    copies of a caller's numpy arrays (the rest it need not; donated inputs, which outputs
    may be written into, the Program adds; host callbacks get copies of their own).

    Conservative, as the memory plan: a step counts as making a new array only when its
    op is in ``traits.FRESH``, is a fused kernel (``fresh``: ``fusion``'s, which write new
    arrays), or is called as one ufunc (or matmul, or the bit-mask ``where``); any other
    step may return a view of its inputs.
    """
    alias = {id(v): frozenset((i,)) for i, v in enumerate(graph.invars)}
    for node, form in zip(graph.nodes, forms):
        fresh = node.op in FRESH or getattr(node.op, "fresh", False)
        if fresh or form[0] in ("ufunc", "matmul_rows", "where0"):
            continue
        seen = frozenset().union(
            *(alias.get(id(v), ()) for v in node.inputs if isinstance(v, Var))
        )
        if seen:
            for v in node.outputs:
                alias[id(v)] = seen
    return frozenset().union(*(alias.get(id(v), ()) for v in graph.outvars if isinstance(v, Var)))


class Program:
    """A graph compiled to one Python function over backend arrays (see the notes above).

    ``viewed_inputs``: the input positions an output may alias (:func:`_viewed_inputs`).
    """

    __slots__ = (
        "_buffers", "_claims", "_fn", "_layout", "_lock", "arena_bytes", "graph", "source",
        "traced", "viewed_inputs",
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

        forms = _step_forms(graph, xp)
        self.viewed_inputs = _viewed_inputs(graph, forms) | frozenset(donated)
        overwrites = {
            k: frozenset((0,)) for k, form in enumerate(forms) if form[0] == "into" and form[1] is _update_into
        }
        plan = plan_memory(
            graph, forms, donated if xp is np else (), (_reshape_copy, _transpose_copy), overwrites
        )
        self._claims = plan.claims
        lines: list[str] = []
        for k, (node, form) in enumerate(zip(nodes, forms)):
            where = plan.out_buffer.get(k)
            buf = "" if where is None else f"b{where}" if where >= 0 else names[id(graph.invars[~where])]
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
            elif form[0] == "kernel" and len(form) > 1:  # a view written as an expression
                call = form[1].format(*args, **{k: const(v) for k, v in form[2].items()})
            else:  # the op's own kernel (also an "into" form without a buffer)
                kw = [f"{key}={const(val)}" for key, val in node.params.items()]
                call = f"{const(node.op.kernel)}({', '.join(['xp'] + args + kw)})"
            lines.append(f"{target} = {call}  # {node.op.name}")
            dead = [names[id(v)] for v in plan.dead_after[k]]
            if dead:
                lines.append(f"del {', '.join(dead)}")

        head = ["def _run(datas, buffers):"]
        if graph.invars:
            head.append(f"    {''.join(f'a{i}, ' for i in range(len(graph.invars)))}= datas")
        for i, v in enumerate(graph.invars):  # jit's traced Python numbers run as 0-d arrays
            if v.aval.weak:
                head.append(f"    a{i} = xp.asarray(a{i})")
        if plan.layout:
            head.append(f"    {''.join(f'b{i}, ' for i in range(len(plan.layout)))}= buffers")
        body = [f"    {line}" for line in lines]
        ret = f"    return [{', '.join(ref(v) for v in graph.outvars)}]"
        self.source = "\n".join(head + body + [ret])
        exec(compile(self.source, "<fgrad.jit program>", "exec"), ns)  # noqa: S102
        self._fn = ns["_run"]
        self._layout = plan.layout
        self.arena_bytes = plan.arena_bytes
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
