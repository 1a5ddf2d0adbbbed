"""Compiled loops on the CPU: a ``scan`` or ``while_loop`` whose body lowers to numba runs as one native loop.

``jit`` runs a graph as one numpy call per node, and a ``scan`` as a Python loop over its
body: a small-state simulation (an ODE solver, an RNN step) pays Python and numpy dispatch
for every op of every step, far more than the arithmetic. Where numba is installed
(``pip install "fgrad[cpu-compile]"``) and ``fgrad.config.cpu_compile`` is on, the scan
kernel lowers its body graph to Python source over numba-typed values — 0-d values as
scalars, arrays as arrays, numpy calls numba compiles natively — and compiles the whole loop
with ``numba.njit``: the carry stays in native values from step to step. The reverse-mode
loops of a scan's gradient are scans too, so they compile the same way. Each of the
body's ``fusion.elementwise_groups`` over arrays is written as one loop nest in scalars
(the fused kernels' expressions, ``fusion_numba._Emitter``), so that it allocates only the
arrays read after it.

Nothing is guessed: a body holding an op without a lowering here, or one numba cannot
type, falls back to the numpy loop for that scan (``config.log_compiles`` says which op,
or numba's error), and a compiled loop whose first results differ in shape or dtype from
the body's avals is dropped the same way. The generated module is written to a cache
directory keyed by its source, so numba's own on-disk cache (``cache=True``) serves the
next run of the script without compiling again.

Reference: numba's nopython mode (https://numba.readthedocs.io/en/stable/reference/pysupported.html
and numpysupported.html); the loop-to-native idea is XLA's ``While`` lowering.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad._config import config
from fgrad.core.graph import Graph, Var
from fgrad.ops import elementwise as e
from fgrad.ops import indexing as ix
from fgrad.ops import linalg as la
from fgrad.ops import nn as nn_ops
from fgrad.ops import reduction as r
from fgrad.ops import shape as s
from fgrad.tensor import Tensor

__all__ = ["available", "compile_scan", "compile_while"]

_log = logging.getLogger("fgrad")


SMALL_MATMUL = 256
"""The most multiply-adds of a matrix product in a compiled loop body written as loops
(with a static shape, LLVM unrolls and vectorises them); a larger product calls BLAS
(``np.dot``). Measured in a numba loop, float64 matrix-vector products: 2 x 2, 68 ns a
step inline against 175 ns through BLAS; 8 x 8, 92 against 205; 32 x 32, 657 against 254."""


class Unsupported(Exception):
    """The body holds something this lowering does not cover (the message says what)."""


class _DoesNotPay(Exception):
    """The body lowers, but its numpy loop is as fast (the message says why)."""


MAX_ARRAY = 1 << 16
"""The most elements of a value (other than a matrix product's) in a body worth compiling:
past it each op's numpy loop amortises its call. Measured (one thread, process time), an
LSTM over 100 steps with (32, 512) gates: compiled 0.74x the numpy floor forward and 1.38x
for value_and_grad, against 0.89x and 1.66x as numpy calls; before elementwise groups were
written as loop nests (each op an allocated array, scalar libm for exp and tanh) the
compiled loops took twice the numpy calls' time, and the limit was 2048."""


def _check_pays(graph: Graph) -> None:
    for node in graph.nodes:
        if node.op is la.matmul:
            continue
        for v in node.outputs:
            n = math.prod(v.aval.shape)
            if n > MAX_ARRAY:
                raise _DoesNotPay(
                    f"its {node.op.name} gives {n} elements (more than MAX_ARRAY = {MAX_ARRAY}: "
                    "numpy's own loops are as fast)"
                )


def available() -> bool:
    """Whether numba imports (the ``cpu-compile`` extra)."""
    return importlib.util.find_spec("numba") is not None


# ------------------------------------------------------------------ lowering, op by op
# Each rule writes the statement(s) computing a node's outputs from its input expressions.
# Values of shape () are numba scalars (cast to their aval's dtype on every assignment, so
# a loop carry keeps one type); other values are arrays.

_BINARY = {e.add: "+", e.subtract: "-", e.multiply: "*", e.divide: "/", e.power: "**"}
_COMPARE = {e.less: "<", e.less_equal: "<=", e.greater: ">", e.greater_equal: ">=",
            e.equal: "==", e.not_equal: "!="}
_CALLS = {
    e.exp: "np.exp", e.log: "np.log", e.sin: "np.sin", e.cos: "np.cos", e.tan: "np.tan",
    e.tanh: "np.tanh", e.sinh: "np.sinh", e.cosh: "np.cosh", e.sqrt: "np.sqrt",
    e.log1p: "np.log1p", e.expm1: "np.expm1", e.arctan: "np.arctan", e.arcsin: "np.arcsin",
    e.arccos: "np.arccos", e.abs: "np.abs", e.floor: "np.floor", e.ceil: "np.ceil",
    e.arctan2: "np.arctan2", e.hypot: "np.hypot",
}
# maximum, minimum, relu, remainder and floor_divide are written out below with numpy's
# rules: numba's own functions differ on signed zeros and infinities (maximum(0.0, -0.0),
# inf // 1, 1.0 // 0.1, remainder(3.0, -1.0)).


def _dtype_name(dtype: Any) -> str:
    return f"np.{np.dtype(dtype).name}"


def _literal(value: Any, dtype: Any) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return repr(bool(value))
    if dtype.kind == "c":
        raise Unsupported("a complex constant")
    v = float(value) if dtype.kind == "f" else int(value)
    if dtype.kind == "f" and not math.isfinite(v):
        text = "np.nan" if math.isnan(v) else ("np.inf" if v > 0 else "-np.inf")
    else:
        text = repr(v)
    return f"{_dtype_name(dtype)}({text})"


def _index_text(index: Any) -> str:
    parts = []
    for k in index if isinstance(index, tuple) else (index,):
        if type(k) is tuple:  # getitem's params keep a slice as (start, stop, step)
            k = ix._slice(k)
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            parts.append(str(int(k)))
        elif isinstance(k, slice) and all(
            v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))
            for v in (k.start, k.stop, k.step)
        ):
            parts.append(":".join("" if v is None else str(int(v)) for v in (k.start, k.stop, k.step)))
        else:
            raise Unsupported(f"an index {k!r}")
    return ", ".join(parts) + ("," if len(parts) == 1 else "")


class _Lowering:
    """Source lines for a graph's nodes, with names for its values."""

    def __init__(self, graph: Graph, names: dict[int, str], arrays: list, header: set):
        self.graph = graph
        self.names = names
        self.arrays = arrays  # array constants, passed in as arguments
        self.header = header  # module-level lines (the fused math functions called)
        self.lines: list[str] = []

    def ref(self, v: Any, dtype: Any) -> str:
        if isinstance(v, Var):
            return self.names[id(v)]
        if type(v) in (bool, int, float):
            return _literal(v, dtype)
        data = v._data if isinstance(v, Tensor) else v
        if isinstance(data, (np.ndarray, np.generic)):
            if data.dtype.kind == "c" or data.dtype.hasobject:
                raise Unsupported(f"a {data.dtype} constant")
            if data.shape == ():
                return _literal(data.item(), data.dtype)
            self.arrays.append(np.ascontiguousarray(data))
            return f"k{len(self.arrays) - 1}"
        raise Unsupported(f"a constant of type {type(v).__name__}")

    def assign(self, out: Var, expr: str) -> None:
        name = self.names[id(out)]
        aval = out.aval
        if aval.shape == ():
            self.lines.append(f"{name} = {_dtype_name(aval.dtype)}({expr})")
        else:
            self.lines.append(f"{name} = {expr}")

    def node(self, node: Any) -> None:
        op, ins, params, outs = node.op, node.inputs, node.params, node.outputs
        if isinstance(getattr(op, "kernel", None), _Inline):  # fusion's Node of a group
            return self._group(op.kernel.group, ins, outs)
        out = outs[0]
        dt = out.aval.dtype
        if any(np.dtype(getattr(getattr(v, "aval", None), "dtype", "f8")).kind == "c" for v in (*ins, out)):
            raise Unsupported(f"complex values in {op.name}")
        if op in (e.floor_divide, e.remainder) and np.dtype(dt).kind in "iu":
            return self._int_divmod(ins, op is e.floor_divide, out)
        if op is e.power and np.dtype(dt).kind in "iub":
            # numba's integer pow returns 0 for the negative powers numpy refuses
            raise Unsupported("an integer power")
        if op is e.power and not isinstance(ins[1], Var) and float(np.asarray(ins[1])) == 0.5:
            # numpy's power takes sqrt for a scalar 0.5 (sqrt(-inf) = nan, sqrt(-0.0) = -0.0)
            return self.assign(out, f"np.sqrt({self.ref(ins[0], dt)})")
        if op in _BINARY:
            a, b = (self.ref(v, dt) for v in ins)
            return self.assign(out, f"({a} {_BINARY[op]} {b})")
        if op in _COMPARE:
            other = next((v.aval.dtype for v in ins if isinstance(v, Var)), dt)
            a, b = (self.ref(v, other) for v in ins)
            return self.assign(out, f"({a} {_COMPARE[op]} {b})")
        if op in _CALLS:
            args = ", ".join(self.ref(v, dt) for v in ins)
            return self.assign(out, f"{_CALLS[op]}({args})")
        if op is e.negative:
            return self.assign(out, f"(-{self.ref(ins[0], dt)})")
        if op in (e.stop_gradient, e.optimization_barrier) and len(outs) == 1:
            return self.assign(out, self.ref(ins[0], dt))
        if op is e.astype:
            x = self.ref(ins[0], ins[0].aval.dtype if isinstance(ins[0], Var) else dt)
            if out.aval.shape == ():
                return self.assign(out, x)
            return self.assign(out, f"{x}.astype({_dtype_name(dt)})")
        if op is e.where:
            c, a, b = self.ref(ins[0], np.bool_), self.ref(ins[1], dt), self.ref(ins[2], dt)
            if out.aval.shape == ():
                return self.assign(out, f"({a} if {c} else {b})")
            return self.assign(out, f"np.where({c}, {a}, {b})")
        if op is e.full_like:
            fill = _literal(params["fill_value"], dt)
            if out.aval.shape == ():
                return self.assign(out, fill)
            return self.assign(out, f"np.full({tuple(out.aval.shape)!r}, {fill}, {_dtype_name(dt)})")
        if op is s.reshape:
            return self._reshape(ins[0], out)
        if op is s.concatenate:
            parts = ", ".join(self._array(v) for v in ins)
            return self.assign(out, f"np.concatenate(({parts},), {int(params['axis'])})")
        if op is s.broadcast_to:
            x = self.ref(ins[0], dt)
            shape = tuple(out.aval.shape)
            return self.assign(out, f"np.broadcast_to({x}, {shape!r}).copy()")
        if op is s.permute_dims:
            return self.assign(out, f"np.ascontiguousarray({self._array(ins[0])}.transpose({tuple(params['axes'])!r}))")
        if op is ix.getitem:
            x = self.ref(ins[0], dt)
            expr = f"{x}[{_index_text(params['index'])}]"
            if out.aval.shape != ():
                expr = f"np.ascontiguousarray({expr})"
            return self.assign(out, expr)
        if op is ix.scatter_set:
            if out.aval.shape == ():
                raise Unsupported("scatter_set into a 0-d value")
            x, v = self.ref(ins[0], dt), self.ref(ins[1], dt)
            name = self.names[id(out)]
            self.lines.append(f"{name} = {x}.copy()")
            self.lines.append(f"{name}[{_index_text(params['index'])}] = {v}")
            return None
        if op is r.sum:
            return self._sum(ins[0], out, params)
        if op is e.sigmoid:  # the kernel's form: exp(-|x|) never overflows
            x, one, t = self.ref(ins[0], dt), _literal(1.0, dt), f"t_{self.names[id(out)]}"
            self.lines.append(f"{t} = np.exp(-np.abs({x}))")
            if out.aval.shape == ():
                return self.assign(out, f"({one} / ({one} + {t}) if {x} >= 0 else {t} / ({one} + {t}))")
            return self.assign(out, f"np.where({x} >= 0, {one} / ({one} + {t}), {t} / ({one} + {t}))")
        if op is nn_ops.relu:
            return self._extremum(self.ref(ins[0], dt), _literal(0, dt), ">", out)
        if op in (e.maximum, e.minimum):
            a, b = (self.ref(v, dt) for v in ins)
            return self._extremum(a, b, ">" if op is e.maximum else "<", out)
        if op in (e.remainder, e.floor_divide):
            a, b = (self.ref(v, dt) for v in ins)
            return self._divmod(a, b, op is e.floor_divide, out)
        if op is la.matmul:
            return self._matmul(ins, out)
        if op is ix.dynamic_slice:
            return self._dynamic(ins[0], ins[1:], tuple(params["slice_sizes"]), out, None)
        if op is ix.dynamic_update_slice:
            return self._dynamic(ins[0], ins[2:], tuple(ins[1].aval.shape), out, ins[1])
        if op is s.split:
            return self._split(ins[0], outs, params)
        raise Unsupported(f"op {op.name!r}")

    def _group(self, group: Any, ins: list, outs: list) -> None:
        """An elementwise group (``fusion.ElementwiseGroup``) as one loop nest over its
        shape: each element's steps in scalars, only the values read after the group
        written to arrays (see :func:`_inline_groups`)."""
        from fgrad.transforms.fusion_numba import _Emitter

        shape = tuple(group.shape)
        nd, tag = len(shape), self.names[id(outs[0])]
        index = [f"i{d}_{tag}" for d in range(nd)]
        reads, loads = [], []
        for k, x in enumerate(ins):
            ref = self.ref(x, x.aval.dtype if isinstance(x, Var) else x.dtype)
            have = tuple(x.aval.shape if isinstance(x, Var) else x.shape)
            if have == ():
                reads.append(ref)
                continue
            lead = nd - len(have)  # broadcasting aligns the trailing axes
            sub = ["0" if n == 1 and shape[lead + d] != 1 else index[lead + d] for d, n in enumerate(have)]
            reads.append(f"x{k}_{tag}")
            loads.append(f"x{k}_{tag} = {ref}[{', '.join(sub)}]")
        em = _Emitter(group, prefix=f"{tag}_", inputs=reads)
        try:
            steps = em.steps()
        except ValueError:  # an expression numba's emitter does not write: op by op
            for k, node in enumerate(group.nodes):
                for j, o in enumerate(node.outputs):
                    self.names.setdefault(id(o), f"{tag}_n{k}_{j}")
                self.node(node)
            return None
        self.header.update(em.header())
        self.lines += em.const_lines
        writes = []
        for o, result in zip(outs, group.results):
            self.lines.append(f"{self.names[id(o)]} = np.empty({shape!r}, {_dtype_name(o.aval.dtype)})")
            writes.append(f"{self.names[id(o)]}[{', '.join(index)}] = {tag}_v{result[1]}")
        ind = ""
        for d in range(nd):
            self.lines.append(f"{ind}for {index[d]} in range({shape[d]}):")
            ind += "    "
        self.lines += [ind + line for line in loads + steps + writes]
        return None

    def _where(self, cond: str, a: str, b: str, out: Var) -> str:
        """``a`` where ``cond`` else ``b``: a conditional for 0-d values, else np.where."""
        return f"({a} if {cond} else {b})" if out.aval.shape == () else f"np.where({cond}, {a}, {b})"

    def _extremum(self, a: str, b: str, cmp: str, out: Var) -> None:
        # numpy's loop: a when a is NaN or strictly beyond b, else b (ties and NaN in b: b)
        nan = f"({a} != {a})"
        either = f"({nan} or ({a} {cmp} {b}))" if out.aval.shape == () else f"({nan} | ({a} {cmp} {b}))"
        return self.assign(out, self._where(either, a, b, out))

    def _int_divmod(self, ins: list, floor: bool, out: Var) -> None:
        """numpy's integer floor_divide or remainder on scalars: Python's ``//`` and ``%``
        (numba's integer ``np.fmod`` is wrong for negative operands, and a float quotient
        loses int64 digits), with numpy's 0 for a zero divisor and the wrapped quotient of
        the most negative value by -1."""
        if out.aval.shape != ():
            raise Unsupported(f"an integer {'floor_divide' if floor else 'remainder'} of arrays")
        dt = out.aval.dtype
        a, b = (self.ref(v, dt) for v in ins)
        by_minus_one = f"(-{a})" if floor else _literal(0, dt)
        value = f"({a} // {b})" if floor else f"({a} % {b})"
        zero = _literal(0, dt)
        return self.assign(out, f"({zero} if {b} == 0 else ({by_minus_one} if {b} == -1 else {value}))")

    def _divmod(self, a: str, b: str, floor: bool, out: Var) -> None:
        """numpy's floor_divide or remainder (``npy_divmod``): from ``fmod``, the exact
        remainder, so that ``1.0 // 0.1`` is 9 and ``inf // 1`` NaN."""
        name = self.names[id(out)]
        scalar = out.aval.shape == ()
        band, bor = (" and ", " or ") if scalar else (" & ", " | ")
        mod, fix = f"m_{name}", f"f_{name}"
        self.lines.append(f"{mod} = np.fmod({a}, {b})")
        # where the remainder's sign differs from the divisor's, floor moves down by one
        self.lines.append(f"{fix} = ({mod} != 0){band}(({b} < 0) != ({mod} < 0))")
        if not floor:  # the remainder takes b's sign; an exact zero is copysign(0, b)
            shifted = self._where(fix, f"({mod} + {b})", mod, out)
            zero = f"np.copysign({_literal(0, out.aval.dtype)}, {b})"
            return self.assign(out, self._where(f"({mod} == 0)", zero, shifted, out))
        div, fl = f"d_{name}", f"l_{name}"
        self.lines.append(f"{div} = ({a} - {mod}) / {b}")
        self.lines.append(f"{div} = {self._where(fix, f'({div} - 1)', div, out)}")
        self.lines.append(f"{fl} = np.floor({div})")
        self.lines.append(f"{fl} = {self._where(f'(({div} - {fl}) > 0.5)', f'({fl} + 1)', fl, out)}")
        exact = f"({a} / {b})"  # b == 0: numpy's inf or NaN; a zero quotient: its sign
        zero = f"np.copysign({_literal(0, out.aval.dtype)}, {exact})"
        value = self._where(f"({div} != 0)", fl, zero, out)
        return self.assign(out, self._where(f"({b} == 0)", exact, value, out))

    def _matmul(self, ins: list, out: Var) -> None:
        a, b = ins
        if not (isinstance(a, Var) and isinstance(b, Var)) or max(len(a.aval.shape), len(b.aval.shape)) > 2:
            raise Unsupported("a batched matmul, or one with a constant operand")
        if a.aval.dtype != b.aval.dtype or np.dtype(a.aval.dtype).kind != "f":
            raise Unsupported("a matmul of mixed or non-float dtypes")
        sa, sb = tuple(a.aval.shape), tuple(b.aval.shape)
        if math.prod(sa) * (sb[-1] if len(sb) == 2 else 1) > SMALL_MATMUL:
            return self.assign(out, f"np.dot({self.names[id(a)]}, {self.names[id(b)]})")
        return self._small_matmul(self.names[id(a)], self.names[id(b)], sa, sb, out)

    def _small_matmul(self, a: str, b: str, sa: tuple, sb: tuple, out: Var) -> None:
        """``a @ b`` as loops in the body (see :data:`SMALL_MATMUL`), summing over the
        inner axis in order; loop names carry the output's, apart from the body's."""
        name, dt = self.names[id(out)], _dtype_name(out.aval.dtype)
        i, j, p, acc = (f"{c}_{name}" for c in ("i", "j", "p", "acc"))
        a_p = f"{a}[{i}, {p}]" if len(sa) == 2 else f"{a}[{p}]"
        b_p = f"{b}[{p}, {j}]" if len(sb) == 2 else f"{b}[{p}]"
        loops = ([f"for {i} in range({sa[0]}):"] if len(sa) == 2 else []) + (
            [f"for {j} in range({sb[1]}):"] if len(sb) == 2 else []
        )
        index = ", ".join(([i] if len(sa) == 2 else []) + ([j] if len(sb) == 2 else []))
        if not loops:  # two vectors: a number
            self.lines += [f"{name} = {dt}(0)", f"for {p} in range({sa[0]}):", f"    {name} += {a_p} * {b_p}"]
            return None
        self.lines.append(f"{name} = np.empty({tuple(out.aval.shape)!r}, {dt})")
        ind = ""
        for loop in loops:
            self.lines.append(ind + loop)
            ind += "    "
        self.lines += [
            f"{ind}{acc} = {dt}(0)",
            f"{ind}for {p} in range({sa[-1]}):",
            f"{ind}    {acc} += {a_p} * {b_p}",
            f"{ind}{name}[{index}] = {acc}",
        ]
        return None

    def _dynamic(self, x: Any, starts: list, sizes: tuple, out: Var, update: Any) -> None:
        if not isinstance(x, Var) or x.aval.shape == ():
            raise Unsupported("a dynamic slice of a constant or 0-d value")
        name = self.names[id(out)]
        index = []
        for d, (st, n, k) in enumerate(zip(starts, x.aval.shape, sizes)):
            begin = f"s{d}_{name}"
            value = str(int(st)) if type(st) in (int, bool) else f"int({self.ref(st, np.int64)})"
            self.lines.append(f"{begin} = min(max({value}, 0), {n - k})")  # clamped, as the op
            index.append(f"{begin}:{begin} + {k}")
        src = self.names[id(x)]
        if update is None:
            return self.assign(out, f"np.ascontiguousarray({src}[{', '.join(index)}])")
        self.lines.append(f"{name} = {src}.copy()")
        self.lines.append(f"{name}[{', '.join(index)}] = {self.ref(update, out.aval.dtype)}")
        return None

    def _array(self, v: Any) -> str:
        x = self.ref(v, v.aval.dtype if isinstance(v, Var) else np.float64)
        if isinstance(v, Var) and v.aval.shape == ():
            return f"np.full((1,), {x})"
        return x

    def _reshape(self, v: Any, out: Var) -> None:
        shape = tuple(out.aval.shape)
        if isinstance(v, Var) and v.aval.shape == ():
            x = self.ref(v, v.aval.dtype)
            return self.assign(out, x if shape == () else f"np.full({shape!r}, {x})")
        x = self.ref(v, out.aval.dtype)
        if shape == ():
            return self.assign(out, f"{x}.ravel()[0]")
        return self.assign(out, f"np.ascontiguousarray({x}).reshape({shape!r})")

    def _sum(self, v: Any, out: Var, params: dict) -> None:
        x = self.ref(v, out.aval.dtype)
        axes = params.get("axes")
        ndim = len(v.aval.shape) if isinstance(v, Var) else 0
        if ndim == 0:
            return self.assign(out, x)
        all_axes = axes is None or sorted(int(a) % ndim for a in axes) == list(range(ndim))
        if all_axes:
            total = f"np.sum({x})"
            if out.aval.shape == ():
                return self.assign(out, total)
            return self.assign(out, f"np.full({tuple(out.aval.shape)!r}, {total})")
        if len(axes) == 1:
            expr = f"np.sum({x}, axis={int(axes[0]) % ndim})"
            if params.get("keepdims"):
                expr = f"np.ascontiguousarray({expr}).reshape({tuple(out.aval.shape)!r})"
            return self.assign(out, expr)
        raise Unsupported("a sum over several (not all) axes")

    def _split(self, v: Any, outs: list, params: dict) -> None:
        ndim = len(v.aval.shape)
        axis = int(params.get("axis", 0)) % ndim
        x = self.ref(v, v.aval.dtype)
        start = 0
        for o in outs:
            n = o.aval.shape[axis]
            index = [":"] * axis + [f"{start}:{start + n}"]
            self.lines.append(f"{self.names[id(o)]} = np.ascontiguousarray({x}[{', '.join(index)}])")
            start += n
        return None


# ------------------------------------------------------------------ the loop


def _scan_source(graph: Graph, n_consts: int, n_carry: int, length: int, reverse: bool) -> tuple[str, list]:
    """The source of ``_loop(consts..., carry..., xs..., array constants...)``."""
    n_xs = len(graph.invars) - n_consts - n_carry
    arrays: list = []
    header: set = set()
    body_lines, outs = _lower_body(graph, [f"in{i}" for i in range(len(graph.invars))], "v", arrays, header)
    carry_in = [f"in{n_consts + i}" for i in range(n_carry)]
    y_vars = graph.outvars[n_carry:]
    params = [f"p{i}" for i in range(n_consts + n_carry)] + [f"xs{j}" for j in range(n_xs)]
    params += [f"k{i}" for i in range(len(arrays))]
    lines = [f"def _loop({', '.join(params)}):"]
    for i in range(n_consts + n_carry):  # scalars for 0-d values, contiguous arrays else
        lines.append(f"    in{i} = {_value(graph.invars[i].aval, f'p{i}', zero_d=True)}")
    for j, y in enumerate(y_vars):
        lines.append(f"    ys{j} = np.empty(({length},) + {tuple(y.aval.shape)!r}, {_dtype_name(y.aval.dtype)})")
    lines.append(f"    for step in range({length}):")
    lines.append(f"        i = {length - 1} - step" if reverse else "        i = step")
    for j in range(n_xs):
        k = n_consts + n_carry + j
        lines.append(f"        in{k} = {_value(graph.invars[k].aval, f'xs{j}[i]')}")
    lines += [f"        {line}" for line in body_lines]
    for j, y in enumerate(y_vars):
        lines.append(f"        ys{j}[i] = {outs[n_carry + j]}")
    for i in range(n_carry):
        lines.append(f"        {carry_in[i]} = {_value(graph.invars[n_consts + i].aval, outs[i])}")
    ret = carry_in + [f"ys{j}" for j in range(len(y_vars))]
    lines.append(f"    return ({', '.join(ret)},)")
    return "\n".join(sorted(header) + lines) + "\n", arrays


class _Inline:
    """The kernel of a fused Node in a loop body: its group, written inline."""

    __slots__ = ("group",)

    def __init__(self, group: Any):
        self.group = group


def _inline_groups(graph: Graph) -> Graph:
    """``graph`` with each of ``fusion.elementwise_groups`` over arrays as one Node, so
    that the body computes it as one loop nest in scalars. Written op by op, each array
    op allocates its result; a 64-element RK4 state's gradient step is ~100 such ops, and
    their allocations (~50 ns each) and passes were most of the compiled loop's time."""
    from fgrad.transforms import fusion

    def mark(group: Any) -> _Inline | None:
        return _Inline(group) if group.shape != () else None  # 0-d values are scalars already

    return fusion.fuse_graph(graph, mark, min_size=1, name="inline_loop")


def _lower_body(
    graph: Graph, inputs: list[str], prefix: str, arrays: list, header: set
) -> tuple[list[str], list[str]]:
    """The lines computing ``graph`` from variables ``inputs`` (one per input Var), and
    the names of its outputs; ``prefix`` keeps two graphs' names apart."""
    graph = _inline_groups(graph)
    names = {id(v): n for v, n in zip(graph.invars, inputs)}
    for k, node in enumerate(graph.nodes):
        for j, o in enumerate(node.outputs):
            names[id(o)] = f"{prefix}{k}_{j}"
    low = _Lowering(graph, names, arrays, header)
    for node in graph.nodes:
        low.node(node)
    if not all(isinstance(o, Var) for o in graph.outvars):
        raise Unsupported("a constant output of the body")
    return low.lines, [names[id(o)] for o in graph.outvars]


def _while_source(cond: Graph, body: Graph, n_cond: int, n_body: int) -> tuple[str, list]:
    """The source of ``_loop(cond consts..., body consts..., carry..., array constants...)``."""
    n_carry = len(body.invars) - n_body
    arrays: list = []
    header: set = set()
    cc = [f"cc{i}" for i in range(n_cond)]
    bc = [f"bc{i}" for i in range(n_body)]
    carry = [f"carry{i}" for i in range(n_carry)]
    cond_lines, (pred,) = _lower_body(cond, cc + carry, "u", arrays, header)
    body_lines, outs = _lower_body(body, bc + carry, "v", arrays, header)
    params = [f"p{i}" for i in range(n_cond + n_body + n_carry)] + [f"k{i}" for i in range(len(arrays))]
    lines = [f"def _loop({', '.join(params)}):"]
    avals = list(cond.invars[:n_cond]) + list(body.invars[:n_body]) + list(body.invars[n_body:])
    for i, (name, v) in enumerate(zip(cc + bc + carry, avals)):
        lines.append(f"    {name} = {_value(v.aval, f'p{i}', zero_d=True)}")
    lines.append("    while True:")
    lines += [f"        {line}" for line in cond_lines]
    lines.append(f"        if not {pred}:")
    lines.append("            break")
    lines += [f"        {line}" for line in body_lines]
    for name, out, v in zip(carry, outs, body.invars[n_body:]):
        lines.append(f"        {name} = {_value(v.aval, out)}")
    lines.append(f"    return ({', '.join(carry)},)")
    return "\n".join(sorted(header) + lines) + "\n", arrays


def _value(aval: Any, expr: str, zero_d: bool = False) -> str:
    """``expr`` as the value a body variable of ``aval`` holds: a scalar of its dtype for
    shape () (``zero_d``: read out of a 0-d array), else a C-contiguous array (one layout,
    so numba gives a loop carry one type)."""
    if aval.shape == ():
        return f"{_dtype_name(aval.dtype)}({expr}[()])" if zero_d else f"{_dtype_name(aval.dtype)}({expr})"
    return f"np.ascontiguousarray({expr})"


def _cache_dir() -> str:
    base = os.environ.get("FGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fgrad"
    )
    path = os.path.join(base, "numba")
    os.makedirs(path, exist_ok=True)
    return path


def _load(source: str) -> Callable:
    """``_loop`` of ``source``, compiled by numba (from its disk cache when it has one)."""
    # error_model="numpy": x / 0 gives inf or NaN as numpy does, not ZeroDivisionError
    header, _, loop = source.partition("def _loop(")
    if header:  # the fused groups' math functions, inlined: their digest keys the cache
        from fgrad.transforms.fusion_numba import _MODULE_HEAD, _math_digest

        text = f"# math {_math_digest()}\n{_MODULE_HEAD}{header}"
    else:
        text = "import math\nimport numpy as np\nimport numba\n"
    text += '\n\n@numba.njit(cache=True, nogil=True, error_model="numpy")\ndef _loop(' + loop
    return load_module(text, "fgrad_loop")._loop


def load_module(text: str, prefix: str) -> Any:
    """The module of source ``text``, written to the cache folder under a name keyed by
    the text and numba's version (so numba's ``cache=True`` finds its compiled code on
    the next run), imported once per process."""
    import numba

    digest = hashlib.sha256((text + numba.__version__).encode()).hexdigest()[:24]
    name = f"{prefix}_{digest}"
    try:
        folder = _cache_dir()
    except OSError:  # no writable home: a private folder for this process
        import tempfile

        folder = tempfile.mkdtemp(prefix="fgrad-numba-")
    path = os.path.join(folder, name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)  # atomic: another process may be writing the same module
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return module


class _CompiledLoop:
    """A loop as one numba function; checks its first results against the body's avals."""

    def __init__(self, fn: Callable, arrays: list, body: Any, n_carry: int, length: int, key: tuple):
        self.key = key  # where the body memoises it: a failed first call replaces it by False
        self.fn = fn
        self.arrays = arrays
        self.body = body
        self.n_carry = n_carry
        self.length = length
        self.checked = False

    def __call__(self, args: list) -> tuple | None:
        start = time.perf_counter()
        try:
            outs = self.fn(*[np.asarray(a) for a in args], *self.arrays)
        except Exception as err:  # noqa: BLE001  (numba's typing or lowering error)
            if self.checked:
                raise
            _log_fallback(self.body, f"numba could not compile it: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            self.body.derived[self.key] = False  # numpy from now on
            return None
        carry = self.body.out_avals[: self.n_carry]
        ys = self.body.out_avals[self.n_carry :]
        want = [(tuple(a.shape), a.dtype) for a in carry] + [((self.length, *a.shape), a.dtype) for a in ys]
        # numba returns a 0-d carry as a Python number (a float32 one as a float): its dtype
        # is the aval's, and the value is exact in it
        outs = [
            np.asarray(o, dtype) if type(o) in (float, int, bool) else np.asarray(o)
            for o, (_, dtype) in zip(outs, want)
        ]
        if not self.checked:
            for o, (shape, dtype) in zip(outs, want):
                if o.shape != shape or o.dtype != np.dtype(dtype):
                    _log_fallback(self.body, f"its compiled result {o.dtype}{list(o.shape)} is not {np.dtype(dtype)}{list(shape)}")
                    self.body.derived[self.key] = False
                    return None
            self.checked = True
            if config.log_compiles:
                _log.warning(
                    "jit: compiled loop body %r with numba (first call %.2f s)",
                    self.body.name, time.perf_counter() - start,
                )
        return tuple(outs)


def _log_fallback(body: Any, why: str) -> None:
    if config.log_compiles:
        _log.warning("jit: loop body %r runs as numpy calls: %s", body.name, why)


def compile_scan(body: Any, n_consts: int, n_carry: int, length: int, reverse: bool) -> Any:
    """The compiled loop of a scan over ``body`` (a SubGraph), or None when the body does
    not lower (an op without a rule here, complex values) or numba is missing; memoised
    on the body. The result, called on the scan's input arrays, returns its outputs, or
    None the first time when numba cannot type the loop (the caller then runs numpy, and
    so does every later call)."""
    key = ("numba", n_consts, n_carry, length, bool(reverse))
    cached = body.derived.get(key)
    if cached is not None:
        return cached or None
    compiled: Any = False
    try:
        _check_pays(body.graph)
        source, arrays = _scan_source(body.graph, n_consts, n_carry, length, reverse)
        compiled = _CompiledLoop(_load(source), arrays, body, n_carry, length, key)
    except Unsupported as why:
        _log_fallback(body, f"no CPU lowering for {why}")
    except _DoesNotPay as why:
        _log_fallback(body, str(why))
    except ImportError:
        pass
    body.derived[key] = compiled
    return compiled or None


def compile_while(cond: Any, body: Any, n_cond_consts: int, n_body_consts: int) -> Any:
    """The compiled loop of a ``while_loop`` of SubGraphs ``cond`` and ``body``, or None
    (as :func:`compile_scan`); memoised on the body."""
    key = ("numba while", cond, n_cond_consts, n_body_consts)
    cached = body.derived.get(key)
    if cached is not None:
        return cached or None
    compiled: Any = False
    try:
        if cond.graph.outvars and cond.graph.outvars[0].aval.shape != ():
            raise Unsupported("a predicate that is not a scalar")
        _check_pays(body.graph)
        source, arrays = _while_source(cond.graph, body.graph, n_cond_consts, n_body_consts)
        n_carry = len(body.out_avals)
        compiled = _CompiledLoop(_load(source), arrays, body, n_carry, 0, key)
    except Unsupported as why:
        _log_fallback(body, f"no CPU lowering for {why}")
    except _DoesNotPay as why:
        _log_fallback(body, str(why))
    except ImportError:
        pass
    body.derived[key] = compiled
    return compiled or None
