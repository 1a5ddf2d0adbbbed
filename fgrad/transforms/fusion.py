"""Elementwise fusion for cupy under ``jit``: a chain of elementwise Nodes runs as one kernel.

On a GPU an elementwise op costs a kernel launch and a full pass over memory, and does
almost no arithmetic: ``x * gelu_tanh_gate(x) + b`` as three cupy calls reads and writes
every element three times. Fused, one kernel reads each input once, keeps intermediates
in registers, and writes only the values that are used later. This is the idea of XLA's
loop fusion, done here with ``cupy.ElementwiseKernel``, which compiles a C++ loop body
(with broadcasting over its array arguments) once per signature and caches it.

The pieces, each tested on the CPU (only the final CUDA compile and launch need a GPU):

* **An expression language**, defined once per op in ``_OPS`` and rendered two ways: to
  CUDA C++ (:func:`render_cuda`, the ``ElementwiseKernel`` arguments) and to a numpy
  function (:func:`render_numpy`), so the CPU tests check the very expressions the GPU
  compiles. Expressions are tuples: ``("in", i)`` a kernel input, ``("val", k)`` an
  earlier step, ``("const", value, dtype)`` a typed literal, ``("neg", a)``,
  ``("bin", "+", a, b)`` (``+ - * /``), ``("cmp", "<", a, b)``, ``("and" | "or" | "xor",
  a, b)``, ``("not", a)``, ``("call", "exp", a, ...)``, ``("select", cond, a, b)`` and
  ``("cast", a, dtype)``.
* :func:`elementwise_groups`: the maximal connected sets of fusable Nodes of one graph
  that can run as one kernel.
* :func:`fuse_graph`: the graph with each group replaced by one Node, and
  :func:`fuse_for`, the hook ``jit`` calls: on cupy each group becomes one cached
  ``ElementwiseKernel``; for every other namespace the graph is returned unchanged.

What fuses: float32 and float64 arithmetic (``add``, ``subtract``, ``multiply``,
``divide``, ``negative``, ``power``, ``maximum``, ``minimum``), the unary math functions
(exp, log, tanh, sin, sqrt, erf ... and rounding), ``where``, ``relu``, ``sigmoid``,
``gelu_tanh_gate``, ``logaddexp``, ``sign``, comparisons, logical ops, NaN/inf
predicates and casts between the float and bool. The Nodes of a group share one output
shape (inputs may broadcast to it) and one float dtype (bool values may mix in); Python
scalars become literals of the dtype numpy 2 gives them (a weak ``0.5`` with float32
is ``0.5f``). Anything else (integers, complex, float16, mixed float widths, reductions,
shape ops) is not fused and runs as before. :func:`row_reduce_groups` describes larger
groups, elementwise ops around reductions over the last axis (:class:`RowReduceGroup`),
which only the numba renderer (``fusion_numba``) runs as one kernel.

The expressions follow numpy where plain C differs: ``maximum``/``minimum`` propagate NaN
and, on equal inputs, return the second (so ``maximum(-0.0, 0.0)`` is ``+0.0``, as
numpy's), ``sign`` of a zero is ``+0.0`` and of NaN is NaN, ``round`` is ``rint`` (ties to
even), float to bool is ``x != 0`` (NaN is true), and ``logaddexp`` is numpy's algorithm.
Kernels compile with ``--fmad=false``: a product and a sum are not contracted into one
fused multiply-add, so arithmetic rounds as the separate cupy ops do. The math functions
are CUDA's, as cupy's own ufuncs call them, except where cupy's eager results depart
from numpy (``sign`` of NaN, say) and for ``erf``/``erfc``, whose eager kernels evaluate
Cody's rational approximations: there fused results differ in the last bits. The CUDA
text is checked on the CPU; the GPU tests in ``tests/transforms/test_fusion.py`` compile
and run it where cupy finds a GPU.

On numpy nothing changes: a numpy step is compute-bound and jit already writes its
ufuncs into reused buffers, so fusion was measured to gain nothing there.

References:
    CuPy documentation, "User-defined kernels" (``cupy.ElementwiseKernel``).
    XLA's operation fusion (loop fusion of elementwise producers into consumers).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import heapq
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad import backend
from fgrad._config import config
from fgrad.core.graph import Graph, Node, Var
from fgrad.core.trace import Tracer
from fgrad.ops import REGISTRY
from fgrad.tensor import ShapeDtype, Tensor
from fgrad.transforms import cpu_compile
from fgrad.transforms.passes import has_effects

__all__ = [
    "ElementwiseGroup",
    "RowReduceGroup",
    "elementwise_groups",
    "fuse_for",
    "fuse_graph",
    "numpy_kernel",
    "render_cuda",
    "render_numpy",
    "row_reduce_groups",
]

_F32, _F64, _BOOL = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_)
_DTYPES = (_F32, _F64, _BOOL)
_C_TYPES = {_F32: "float", _F64: "double", _BOOL: "bool"}
# NVRTC options: no a*b+c contraction, so results match the unfused ops bit for bit.
_NVRTC_OPTIONS = ("--fmad=false",)

# ------------------------------------------------------------------------ the expressions
# Math functions: name -> (C function for float64, for float32, numpy function).
_FUNCTIONS: dict[str, tuple[str, str, Callable]] = {
    "exp": ("exp", "expf", np.exp),
    "expm1": ("expm1", "expm1f", np.expm1),
    "log": ("log", "logf", np.log),
    "log1p": ("log1p", "log1pf", np.log1p),
    "log2": ("log2", "log2f", np.log2),
    "log10": ("log10", "log10f", np.log10),
    "sqrt": ("sqrt", "sqrtf", np.sqrt),
    "cbrt": ("cbrt", "cbrtf", np.cbrt),
    "sin": ("sin", "sinf", np.sin),
    "cos": ("cos", "cosf", np.cos),
    "tan": ("tan", "tanf", np.tan),
    "asin": ("asin", "asinf", np.arcsin),
    "acos": ("acos", "acosf", np.arccos),
    "atan": ("atan", "atanf", np.arctan),
    "sinh": ("sinh", "sinhf", np.sinh),
    "cosh": ("cosh", "coshf", np.cosh),
    "tanh": ("tanh", "tanhf", np.tanh),
    "asinh": ("asinh", "asinhf", np.arcsinh),
    "acosh": ("acosh", "acoshf", np.arccosh),
    "atanh": ("atanh", "atanhf", np.arctanh),
    "atan2": ("atan2", "atan2f", np.arctan2),
    "hypot": ("hypot", "hypotf", np.hypot),
    "pow": ("pow", "powf", np.power),
    "fabs": ("fabs", "fabsf", np.fabs),
    "floor": ("floor", "floorf", np.floor),
    "ceil": ("ceil", "ceilf", np.ceil),
    "trunc": ("trunc", "truncf", np.trunc),
    "rint": ("rint", "rintf", np.rint),
    # fgrad's own erf/erfc (Cody's approximations) stand for CUDA's on the CPU.
    "erf": ("erf", "erff", lambda x: REGISTRY["erf"].kernel(np, x)),
    "erfc": ("erfc", "erfcf", lambda x: REGISTRY["erfc"].kernel(np, x)),
    "isnan": ("isnan", "isnan", np.isnan),
    "isinf": ("isinf", "isinf", np.isinf),
    "isfinite": ("isfinite", "isfinite", np.isfinite),
}

# How an op's operands are typed before its expression is built.
_FLOAT = "float"  # every operand and the result in the group's float dtype
_WHERE = "where"  # condition as bool, the two branches as the float dtype
_COMPARE = "compare"  # operands in their common dtype (the float, or bool), bool result
_LOGIC = "logic"  # bool operands, bool result
_PREDICATE = "predicate"  # one float operand, bool result
_CAST = "cast"  # astype between the float dtype and bool

# Ops whose numpy kernels take bool arrays beside a float one (promoting them).
_BOOL_OPERANDS = frozenset(
    {"add", "bias_add", "subtract", "multiply", "divide", "maximum", "minimum", "power"}
)

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715
_LN2 = 0.693147180559945309417232121458176568


class _Builder:
    """What an op's expression builder may use: the float dtype, typed literals, and
    ``let`` to name a value it reads more than once (one step of the kernel)."""

    def __init__(self, steps: list, dtype: np.dtype | None):
        self.steps = steps
        self.dtype = dtype

    def const(self, value: float) -> tuple:
        return _literal(value, self.dtype)

    def let(self, expr: tuple, dtype: np.dtype | None = None) -> tuple:
        self.steps.append((self.dtype if dtype is None else dtype, expr))
        return ("val", len(self.steps) - 1)


def _literal(value: Any, dtype: np.dtype) -> tuple:
    """``("const", value, dtype)`` with ``value`` a Python bool or float exact in ``dtype``."""
    if dtype == _BOOL:
        return ("const", bool(value), dtype)
    with np.errstate(all="ignore"):
        return ("const", float(np.asarray(value, dtype=dtype)), dtype)


def _bin(op: str) -> Callable:
    return lambda b, x, y: ("bin", op, x, y)


def _cmp(op: str) -> Callable:
    return lambda b, x, y: ("cmp", op, x, y)


def _call(fn: str) -> Callable:
    return lambda b, *xs: ("call", fn, *xs)


def _maximum(b: _Builder, x: tuple, y: tuple, op: str = ">") -> tuple:
    # numpy's loop: x when x is NaN or strictly larger, else y (NaN in y, ties to y).
    return ("select", ("or", ("call", "isnan", x), ("cmp", op, x, y)), x, y)


def _minimum(b: _Builder, x: tuple, y: tuple) -> tuple:
    return _maximum(b, x, y, "<")


def _power(b: _Builder, x: tuple, y: tuple) -> tuple:
    if y[0] == "const" and y[1] == 2.0:
        return ("bin", "*", x, x)  # exact, and what pow(x, 2) rounds to
    if y[0] == "const" and y[1] == 0.5:  # numpy's power takes sqrt for a scalar 0.5
        return ("call", "sqrt", x)  # (sqrt(-inf) = nan, sqrt(-0.0) = -0.0, unlike pow)
    return ("call", "pow", x, y)


def _sign(b: _Builder, x: tuple) -> tuple:
    # numpy: 1, -1, +0.0 for either zero, NaN for NaN.
    rest = ("select", ("cmp", "==", x, b.const(0.0)), b.const(0.0), x)
    return (
        "select",
        ("cmp", ">", x, b.const(0.0)),
        b.const(1.0),
        ("select", ("cmp", "<", x, b.const(0.0)), b.const(-1.0), rest),
    )


def _sigmoid(b: _Builder, x: tuple) -> tuple:
    # fgrad's sigmoid kernel: e = exp(-|x|); 1 / (1 + e) for x >= 0, else e / (1 + e).
    e = b.let(("call", "exp", ("neg", ("call", "fabs", x))))
    d = b.let(("bin", "+", b.const(1.0), e))
    return (
        "select",
        ("cmp", ">=", x, b.const(0.0)),
        ("bin", "/", b.const(1.0), d),
        ("bin", "/", e, d),
    )


def _gelu_tanh_gate(b: _Builder, x: tuple) -> tuple:
    # The kernel's operations in its order: 0.5 * (1 + tanh(C * (x * x * x * A + x))).
    z = b.let(("bin", "*", x, x))
    z = b.let(("bin", "*", ("bin", "*", z, x), b.const(_GELU_A)))
    z = b.let(("call", "tanh", ("bin", "*", ("bin", "+", z, x), b.const(_GELU_C))))
    return ("bin", "*", ("bin", "+", z, b.const(1.0)), b.const(0.5))


def _logaddexp(b: _Builder, x: tuple, y: tuple) -> tuple:
    # numpy's npy_logaddexp: x + log 2 on equal inputs (infinities too), else the larger
    # plus log1p(exp(-|x - y|)); NaN when the difference is NaN.
    d = b.let(("bin", "-", x, y))
    zero = b.const(0.0)
    below = ("bin", "+", y, ("call", "log1p", ("call", "exp", d)))
    above = ("bin", "+", x, ("call", "log1p", ("call", "exp", ("neg", d))))
    nan_or_below = ("select", ("cmp", "<=", d, zero), below, d)
    return (
        "select",
        ("cmp", "==", x, y),
        ("bin", "+", x, b.const(_LN2)),
        ("select", ("cmp", ">", d, zero), above, nan_or_below),
    )


# Ops that are one C math function of the same name.
_SAME_NAME = (
    *("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "sin", "cos", "tan"),
    *("sinh", "cosh", "tanh", "hypot", "erf", "erfc", "floor", "ceil", "trunc"),
)
# op name -> (how its operands are typed, expression builder(builder, *operands)).
_OPS: dict[str, tuple[str, Callable]] = {
    "add": (_FLOAT, _bin("+")),
    "bias_add": (_FLOAT, _bin("+")),
    "subtract": (_FLOAT, _bin("-")),
    "multiply": (_FLOAT, _bin("*")),
    "divide": (_FLOAT, _bin("/")),
    "negative": (_FLOAT, lambda b, x: ("neg", x)),
    "power": (_FLOAT, _power),
    "maximum": (_FLOAT, _maximum),
    "minimum": (_FLOAT, _minimum),
    "relu": (_FLOAT, lambda b, x: _maximum(b, x, b.const(0.0))),
    "abs": (_FLOAT, _call("fabs")),
    "sign": (_FLOAT, _sign),
    "sigmoid": (_FLOAT, _sigmoid),
    "gelu_tanh_gate": (_FLOAT, _gelu_tanh_gate),
    "logaddexp": (_FLOAT, _logaddexp),
    "stop_gradient": (_FLOAT, lambda b, x: x),
    "round": (_FLOAT, _call("rint")),
    "arcsin": (_FLOAT, _call("asin")),
    "arccos": (_FLOAT, _call("acos")),
    "arctan": (_FLOAT, _call("atan")),
    "arcsinh": (_FLOAT, _call("asinh")),
    "arccosh": (_FLOAT, _call("acosh")),
    "arctanh": (_FLOAT, _call("atanh")),
    "arctan2": (_FLOAT, _call("atan2")),
    **{name: (_FLOAT, _call(name)) for name in _SAME_NAME},
    "where": (_WHERE, lambda b, c, x, y: ("select", c, x, y)),
    "less": (_COMPARE, _cmp("<")),
    "less_equal": (_COMPARE, _cmp("<=")),
    "greater": (_COMPARE, _cmp(">")),
    "greater_equal": (_COMPARE, _cmp(">=")),
    "equal": (_COMPARE, _cmp("==")),
    "not_equal": (_COMPARE, _cmp("!=")),
    "logical_and": (_LOGIC, lambda b, x, y: ("and", x, y)),
    "logical_or": (_LOGIC, lambda b, x, y: ("or", x, y)),
    "logical_xor": (_LOGIC, lambda b, x, y: ("xor", x, y)),
    "logical_not": (_LOGIC, lambda b, x: ("not", x)),
    "isnan": (_PREDICATE, _call("isnan")),
    "isinf": (_PREDICATE, _call("isinf")),
    "isfinite": (_PREDICATE, _call("isfinite")),
    "astype": (_CAST, None),
}


# ------------------------------------------------------------------------ which nodes fuse


@dataclasses.dataclass
class _Plan:
    """How one fusable Node becomes expressions: its operands and the dtype of each."""

    kind: str
    build: Callable | None
    out: np.dtype
    dtype: np.dtype | None  # the float dtype it computes in (None: bool only)
    shape: tuple
    operands: list  # ("var", Var) | ("array", const) | ("literal", value, dtype) | ("scalar", x)
    targets: list  # the dtype each operand is cast to


def _broadcast_value(data: Any) -> Any:
    """The one value of a constant array whose every stride is 0 (a 0-d array, a numpy
    scalar, a broadcast scalar), as a Python scalar; else None."""
    shape = tuple(getattr(data, "shape", ()))
    strides = tuple(getattr(data, "strides", ()) or (0,) * len(shape))
    if any(s != 0 for s in strides) or 0 in shape:
        return None
    return data[(0,) * len(shape)].item() if shape else data.item()


def _plan(node: Node) -> _Plan | None:
    """How ``node`` fuses, or None when it does not (see the module docstring)."""
    entry = _OPS.get(node.op.name)
    if entry is None or node.op.multiple_results or len(node.outputs) != 1:
        return None
    kind, build = entry
    out = node.outputs[0].aval
    if not isinstance(out, ShapeDtype) or np.dtype(out.dtype) not in _DTYPES:
        return None
    if node.params and not (kind == _CAST and set(node.params) == {"dtype"}):
        return None
    operands: list = []
    strong: list = []  # dtypes of the array operands
    for x in node.inputs:
        if isinstance(x, Var):  # a weakly typed one is a 0-d array of its dtype when it runs
            dtype = np.dtype(x.aval.dtype)
            operands.append(("var", x))
        elif type(x) in (bool, int, float):
            operands.append(("scalar", x))
            continue
        else:
            data = x._data if isinstance(x, Tensor) else x
            if isinstance(x, Tracer) or not hasattr(data, "dtype") or not hasattr(data, "shape"):
                return None
            dtype = np.dtype(data.dtype)
            value = _broadcast_value(data)
            operands.append(("array", x) if value is None else ("literal", value, dtype))
        if dtype not in _DTYPES:
            return None
        strong.append(dtype)
    out_dtype = np.dtype(out.dtype)
    floats = {d for d in (*strong, out_dtype) if d.kind == "f"}
    if not strong or len(floats) > 1:
        return None
    dtype = floats.pop() if floats else None
    targets = _targets(kind, node.op.name, out_dtype, dtype, operands, strong)
    if targets is None:
        return None
    return _Plan(kind, build, out_dtype, dtype, tuple(out.shape), operands, targets)


def _targets(kind: str, name: str, out: np.dtype, dtype: Any, operands: list, strong: list):
    """The dtype each operand is cast to, or None when numpy would type the op otherwise."""
    scalars = [op[1] for op in operands if op[0] == "scalar"]
    n = len(operands)
    if kind == _CAST:  # astype between the float dtype and bool (or to its own dtype)
        return [strong[0]] if n == 1 else None
    if kind in (_FLOAT, _WHERE):
        if out != dtype or (kind == _FLOAT and _BOOL in strong and name not in _BOOL_OPERANDS):
            return None
        branches = operands[1:] if kind == _WHERE else operands
        if not all(_fits(op[1], dtype) for op in branches if op[0] == "scalar"):
            return None
        return [_BOOL, dtype, dtype] if kind == _WHERE else [dtype] * n
    if out != _BOOL:
        return None
    if kind == _COMPARE:
        common = _BOOL if dtype is None else dtype
        if common == _BOOL and not all(type(s) is bool for s in scalars):
            return None  # numpy would compare bools with a Python number as integers
        return [common] * n
    if kind == _LOGIC:
        return [_BOOL] * n if all(type(s) is bool for s in scalars) else None
    # _PREDICATE: one float operand
    return [dtype] if dtype is not None and strong == [dtype] else None


def _fits(value: Any, dtype: np.dtype) -> bool:
    """A Python scalar converts to ``dtype`` as numpy's weak scalars do (no OverflowError)."""
    try:
        with np.errstate(all="ignore"):
            np.asarray(value, dtype=dtype)
    except (OverflowError, ValueError, TypeError):
        return False
    return True


# ------------------------------------------------------------------------ groups


@dataclasses.dataclass(frozen=True, eq=False)
class ElementwiseGroup:
    """Elementwise Nodes of a graph that run as one kernel: ``outputs = f(*inputs)``.

    Attributes:
        nodes: the graph's Nodes in the group, in graph order.
        inputs: what the kernel reads from outside: Vars and constant arrays, in order of
            first use. They broadcast to ``shape``.
        outputs: the group's Vars that are read after it (by other Nodes, or as graph
            outputs), each of ``shape``.
        shape: the shape of every Node's output.
        dtype: the float dtype the group computes in (None when all values are bool).
        steps: ``(dtype, expression)`` per kernel step; ``("val", k)`` reads step ``k``.
        results: the step (``("val", k)``) that gives each output.
    """

    nodes: tuple
    inputs: tuple
    outputs: tuple
    shape: tuple
    dtype: np.dtype | None
    steps: tuple
    results: tuple


def elementwise_groups(graph: Graph, min_size: int = 2) -> list[ElementwiseGroup]:
    """The sets of elementwise Nodes in ``graph`` that can each run as one kernel.

    Each group is a maximal set of fusable Nodes, connected by the values they pass,
    whose outputs share one shape and one float dtype (bool values may mix in); it
    is grown greedily in graph order. A group never contains two Nodes between which a
    path leaves the group and comes back (a Node outside that reads one member and feeds
    another): as one kernel, it would have to run both before and after that Node.

    Args:
        graph: a Graph (as ``jit`` or ``fgrad.make_graph`` build them).
        min_size: the fewest Nodes a returned group has (1 gives single fusable Nodes too).

    Returns:
        A list of :class:`ElementwiseGroup`, ordered by their first Node.

    Example:
        >>> from fgrad.transforms.fusion import elementwise_groups
        >>> g = fgrad.make_graph(lambda x: fnp.tanh(x * 2.0) + 1.0)(fnp.ones(3))
        >>> [[n.op.name for n in group.nodes] for group in elementwise_groups(g)]
        [['multiply', 'tanh', 'add']]
    """
    nodes = graph.nodes
    plans = [_plan(node) for node in nodes]
    producer = {id(v): k for k, node in enumerate(nodes) for v in node.outputs}
    preds = [
        sorted({producer[id(v)] for v in node.inputs if isinstance(v, Var) and id(v) in producer})
        for node in nodes
    ]
    ancestors = [0] * len(nodes)  # bit p set: node p reaches node k
    group_of = [-1] * len(nodes)
    groups: dict[int, list] = {}  # id (first node) -> [members, member bits, producers, dtype]
    for k, plan in enumerate(plans):
        for p in preds[k]:
            ancestors[k] |= ancestors[p] | (1 << p)
        if plan is None:
            continue
        members, bits, outside, dtype = [k], 1 << k, set(preds[k]), plan.dtype
        for p in preds[k]:
            gid = group_of[p]
            if gid < 0 or (bits >> p) & 1:
                continue
            other = groups[gid]
            joint = other[3] if dtype is None else dtype
            if plans[gid].shape != plan.shape or other[3] not in (None, joint):
                continue
            trial = bits | other[1]
            rest = {q for q in outside | other[2] if not (trial >> q) & 1}
            if any(ancestors[q] & trial for q in rest):
                continue  # a path from the group through q back into it
            members, bits, outside, dtype = members + other[0], trial, rest, joint
            del groups[gid]
        members.sort()
        groups[members[0]] = [members, bits, outside, dtype]
        for m in members:
            group_of[m] = members[0]
    # Values read across a group's boundary (or returned) are outputs of their group.
    escaping = {id(v) for v in graph.outvars if isinstance(v, Var)}
    for k, node in enumerate(nodes):
        for v in node.inputs:
            if id(v) in producer and (group_of[k] < 0 or group_of[k] != group_of[producer[id(v)]]):
                escaping.add(id(v))
    return [
        _make_group([nodes[m] for m in g[0]], [plans[m] for m in g[0]], g[3], escaping)
        for _, g in sorted(groups.items())
        if len(g[0]) >= min_size
    ]


def _make_group(nodes: list, plans: list, dtype: Any, escaping: set) -> ElementwiseGroup:
    """The group of ``nodes``: its inputs, outputs and kernel steps."""
    env: dict[int, tuple] = {}  # id(Var) -> (expression, dtype) of values computed here
    inputs: list = []
    index: dict[int, int] = {}
    steps: list = []
    for node, plan in zip(nodes, plans):
        operands = []
        for op, target in zip(plan.operands, plan.targets):
            if op[0] in ("scalar", "literal"):
                operands.append(_literal(op[1], target))
                continue
            x = op[1]
            if id(x) in env:
                expr, have = env[id(x)]
            else:
                if id(x) not in index:
                    index[id(x)] = len(inputs)
                    inputs.append(x)
                expr = ("in", index[id(x)])
                have = np.dtype(x.aval.dtype if isinstance(x, Var) else _data(x).dtype)
            operands.append(expr if have == target else ("cast", expr, target))
        builder = _Builder(steps, dtype)
        if plan.kind == _CAST:
            expr = operands[0] if plan.targets[0] == plan.out else ("cast", operands[0], plan.out)
        else:
            expr = plan.build(builder, *operands)
        env[id(node.outputs[0])] = (builder.let(expr, plan.out), plan.out)
    outputs = tuple(node.outputs[0] for node in nodes if id(node.outputs[0]) in escaping)
    return ElementwiseGroup(
        nodes=tuple(nodes),
        inputs=tuple(inputs),
        outputs=outputs,
        shape=plans[0].shape,
        dtype=dtype,
        steps=tuple(steps),
        results=tuple(env[id(v)][0] for v in outputs),
    )


def _data(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


# ------------------------------------------------------------------------ row reductions
# Where a value lives in a RowReduceGroup over rows of shape S = (rows..., n): over the
# whole row (shape S), once per row with the reduced axis kept (S[:-1] + (1,)), or once
# per row without it (S[:-1]). Reductions read "row" values.
ROW, KEPT, FLAT = "row", "kept", "flat"
_ROW_REDUCTIONS = frozenset({"sum", "max", "min"})


@dataclasses.dataclass(frozen=True, eq=False)
class RowReduceGroup:
    """Nodes that run as one row-wise kernel: elementwise ops over rows of ``shape``,
    reductions (sum, max, min) over its last axis, and elementwise ops on the per-row
    results, which later row ops may read broadcast back over the row, as softmax's
    ``exp(x - max(x)) / sum(...)`` and layer-norm's mean and variance do. Each row is done
    in a few passes over values that stay in cache. Rendered by numba only
    (``fusion_numba``); cupy fuses the elementwise parts alone.

    Attributes:
        nodes: the graph's Nodes in the group, in graph order.
        inputs: what the kernel reads from outside: Vars and constant arrays.
        outputs: the group's Vars read after it (by other Nodes, or as graph outputs).
        shape: the rows' shape ``(rows..., n)``, ``n`` the reduced axis.
        dtype: the float dtype of the reductions.
        parts: the group's pieces in an order that runs: ``("map", group, where)``, an
            :class:`ElementwiseGroup` whose values live where ``where`` says (``"row"``:
            of ``shape``; ``"kept"``: ``shape[:-1] + (1,)``; ``"flat"``: ``shape[:-1]``),
            or ``("reduce", node)``, a reduction of a row value over the last axis.
    """

    nodes: tuple
    inputs: tuple
    outputs: tuple
    shape: tuple
    dtype: np.dtype
    parts: tuple


def _row_reduction(node: Node) -> tuple | None:
    """The row shape a node reduces over its last axis (sum, max or min of a float32 or
    float64 Var, into its own dtype), or None."""
    if node.op.name not in _ROW_REDUCTIONS or len(node.inputs) != 1 or len(node.outputs) != 1:
        return None
    (x,), out = node.inputs, node.outputs[0].aval
    if not isinstance(x, Var) or set(node.params) != {"axes", "keepdims"}:
        return None
    shape, dtype = tuple(x.aval.shape), np.dtype(x.aval.dtype)
    if dtype not in (_F32, _F64) or np.dtype(out.dtype) != dtype or len(shape) < 1:
        return None
    if node.params["axes"] != (len(shape) - 1,) or shape[-1] < 2 or 0 in shape:
        return None
    return shape


def _where(shape: tuple, rows: tuple) -> str | None:
    """Where a value of ``shape`` lives in a group over rows of shape ``rows``."""
    return {rows: ROW, rows[:-1] + (1,): KEPT, rows[:-1]: FLAT}.get(tuple(shape))


def _reads_fit(group: ElementwiseGroup, where: str, rows: tuple) -> bool:
    """Whether each input of an elementwise part broadcasts as a row kernel reads it:
    over the whole row, the last axis only, the row axes only, or once (each axis part
    all or none)."""
    shape = rows if where == ROW else (rows[:-1] + (1,) if where == KEPT else rows[:-1])
    for x in group.inputs:
        have = tuple(x.aval.shape) if isinstance(x, Var) else tuple(np.shape(_constant(x, None)))
        full = (1,) * (len(shape) - len(have)) + have
        for part, want in ((full[: len(rows) - 1], shape[: len(rows) - 1]),
                           (full[len(rows) - 1 :], shape[len(rows) - 1 :])):
            varies = {a == b for a, b in zip(part, want) if b != 1}
            if len(varies) > 1:
                return False
    return True


def row_reduce_groups(graph: Graph) -> list[RowReduceGroup]:
    """The sets of Nodes of ``graph`` that can each run as one row-wise kernel.

    Starting from each reduction over the last axis (sum, max, min), a group takes in the
    elementwise groups (:func:`elementwise_groups`, single Nodes too) and other such
    reductions connected to it, over the same rows: elementwise groups of the rows'
    shape that feed a reduction or read row values and per-row results, and elementwise
    groups of per-row values (``shape[:-1] + (1,)`` or ``shape[:-1]``) that read
    reductions. As for elementwise groups, no path may leave a group and come back.
    Only groups with at least one elementwise part are returned.

    Args:
        graph: a Graph (as ``jit`` runs it).

    Returns:
        A list of :class:`RowReduceGroup`, ordered by their first Node.

    Example:
        >>> from fgrad.transforms.fusion import row_reduce_groups
        >>> def softmax(x):
        ...     e = fnp.exp(x - fnp.max(x, axis=-1, keepdims=True))
        ...     return e / fnp.sum(e, axis=-1, keepdims=True)
        >>> (g,) = row_reduce_groups(fgrad.make_graph(softmax)(fnp.ones((4, 8))))
        >>> [p[0] if p[0] == "reduce" else [n.op.name for n in p[1].nodes] for p in g.parts]
        ['reduce', ['subtract', 'exp'], 'reduce', ['divide']]
    """
    nodes = graph.nodes
    index = {id(node): k for k, node in enumerate(nodes)}
    producer = {id(v): k for k, node in enumerate(nodes) for v in node.outputs}
    units: list[list] = []  # [kind, payload, node indices, row shape or None]
    for g in elementwise_groups(graph, min_size=1):
        units.append(["map", g, [index[id(n)] for n in g.nodes], None])
    for k, node in enumerate(nodes):
        rows = _row_reduction(node)
        if rows is not None:
            units.append(["reduce", node, [k], rows])
    if not any(u[0] == "reduce" for u in units):
        return []
    unit_of = {k: u for u, unit in enumerate(units) for k in unit[2]}
    preds = [
        sorted({unit_of[producer[id(v)]] for k in unit[2] for v in nodes[k].inputs
                if isinstance(v, Var) and id(v) in producer and producer[id(v)] in unit_of
                and unit_of[producer[id(v)]] != u})
        for u, unit in enumerate(units)
    ]
    ancestors = [0] * len(nodes)  # bit p set: node p reaches node k
    for k, node in enumerate(nodes):
        for v in node.inputs:
            if isinstance(v, Var) and id(v) in producer:
                p = producer[id(v)]
                ancestors[k] |= ancestors[p] | (1 << p)
    group_of = [-1] * len(units)
    groups: dict[int, list] = {}  # id -> [member units, node bits, rows, where per unit]

    def value_where(u: int, where: dict) -> str:
        unit = units[u]
        if unit[0] == "reduce":
            return KEPT if unit[1].params["keepdims"] else FLAT
        return where[u]

    def fits(members: set, where: dict, rows: tuple) -> bool:
        """Every edge inside ``members`` is one a row kernel runs, and no path leaves the
        set and comes back."""
        bits, outside = 0, set()
        for u in members:
            for k in units[u][2]:
                bits |= 1 << k
        for u in members:
            reads = ROW if units[u][0] == "reduce" else where[u]
            if units[u][0] == "map" and not _reads_fit(units[u][1], where[u], rows):
                return False
            for k in units[u][2]:
                for v in nodes[k].inputs:
                    if not (isinstance(v, Var) and id(v) in producer):
                        continue
                    p = producer[id(v)]
                    if not (bits >> p) & 1:
                        outside.add(p)
                        continue
                    q = unit_of[p]
                    if q == u:
                        continue
                    have = value_where(q, where)
                    if not (have == reads or (have == KEPT and reads == ROW)):
                        return False
        return not any(ancestors[q] & bits for q in outside)

    order = _unit_order(len(units), preds, [min(unit[2]) for unit in units])
    for u in order:
        unit = units[u]
        rows = unit[3]
        members, where = {u}, {}
        for p in preds[u]:
            gid = group_of[p]
            if gid >= 0:
                other = groups[gid]
                if rows is not None and other[2] != rows:
                    continue
                r = other[2]
                if unit[0] == "map":
                    w = where.get(u) or _where(unit[1].shape, r)
                    if w is None:
                        continue
                    trial_where = {**where, **other[3], u: w}
                else:
                    trial_where = {**where, **other[3]}
                trial = members | other[0]
                if fits(trial, trial_where, r):
                    members, where, rows = trial, trial_where, r
                    del groups[gid]
                    for m in other[0]:
                        group_of[m] = -1
            elif unit[0] == "reduce" and units[p][0] == "map" and units[p][1].shape == rows:
                trial_where = {**where, p: ROW}  # a free row group feeding the reduction
                if fits(members | {p}, trial_where, rows):
                    members, where = members | {p}, trial_where
        if rows is None:
            continue  # an elementwise group no reduction reaches (yet)
        gid = min(members)
        groups[gid] = [members, None, rows, where]
        for m in members:
            group_of[m] = gid
    found = []
    for members, _, rows, where in groups.values():
        if all(units[m][0] == "reduce" for m in members):
            continue
        found.append(_make_row_group(graph, [units[m] for m in _in_order(members, order)],
                                     [where.get(m) for m in _in_order(members, order)], rows))
    return sorted(found, key=lambda g: index[id(g.nodes[0])])


def _in_order(members: set, order: list) -> list:
    return [u for u in order if u in members]


def _unit_order(n: int, preds: list, first: list) -> list:
    """Units in an order where each follows the units it reads (ties: first Node)."""
    waiting = [len(p) for p in preds]
    users: list[list[int]] = [[] for _ in range(n)]
    for u, ps in enumerate(preds):
        for p in ps:
            users[p].append(u)
    ready = [(first[u], u) for u in range(n) if not waiting[u]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for w in users[u]:
            waiting[w] -= 1
            if not waiting[w]:
                heapq.heappush(ready, (first[w], w))
    return order


def _make_row_group(graph: Graph, units: list, wheres: list, rows: tuple) -> RowReduceGroup:
    """The RowReduceGroup of ``units`` (in an order that runs), each with its ``where``."""
    member = {id(nodes_k) for unit in units for nodes_k in
              (unit[1].nodes if unit[0] == "map" else (unit[1],))}
    nodes = [node for node in graph.nodes if id(node) in member]
    made = {id(v) for node in nodes for v in node.outputs}
    inputs: dict[int, Any] = {}
    for node in nodes:
        for x in node.inputs:
            if isinstance(x, Var) and id(x) not in made or (
                not isinstance(x, Var) and type(x) not in (bool, int, float)
                and _broadcast_value(_data(x)) is None
            ):
                inputs.setdefault(id(x), x)
    read_after = {id(v) for v in graph.outvars if isinstance(v, Var)}
    for node in graph.nodes:
        if id(node) not in member:
            read_after.update(id(v) for v in node.inputs if isinstance(v, Var))
    outputs = tuple(v for node in nodes for v in node.outputs if id(v) in read_after)
    parts = tuple(
        ("map", unit[1], where) if unit[0] == "map" else ("reduce", unit[1])
        for unit, where in zip(units, wheres)
    )
    return RowReduceGroup(tuple(nodes), tuple(inputs.values()), outputs, rows,
                          np.dtype(units[[u[0] for u in units].index("reduce")][1].outputs[0].aval.dtype),
                          parts)


# ------------------------------------------------------------------------ rendering


def _c_literal(value: Any, dtype: np.dtype) -> str:
    if dtype == _BOOL:
        return "true" if value else "false"
    v = dtype.type(value)
    if not np.isfinite(v):  # by its bits: C has no literal for inf and NaN
        if dtype == _F32:
            return f"__int_as_float(0x{int(v.view(np.uint32)):08x})"
        return f"__longlong_as_double(0x{int(v.view(np.uint64)):016x}LL)"
    text = str(v) if dtype == _F32 else repr(float(v))  # shortest round-trip digits
    text += "f" if dtype == _F32 else ""
    return f"({text})" if text.startswith("-") else text


# Each operation as (CUDA C++, numpy) text: {0} {1} {2} are its operands, {op} the
# operator, {ctype}/{dtype} a cast's type, {c_fn}/{name} a call's function, {args} all
# operands (numpy's f_name is the numpy function of _FUNCTIONS[name]).
_SYNTAX = {
    "neg": ("(-{0})", "np.negative({0})"),
    "bin": ("({0} {op} {1})", "({0} {op} {1})"),
    "cmp": ("({0} {op} {1})", "({0} {op} {1})"),
    "and": ("({0} && {1})", "np.logical_and({0}, {1})"),
    "or": ("({0} || {1})", "np.logical_or({0}, {1})"),
    "xor": ("({0} != {1})", "np.logical_xor({0}, {1})"),
    "not": ("(!{0})", "np.logical_not({0})"),
    "select": ("({0} ? {1} : {2})", "np.where({0}, {1}, {2})"),
    "cast": ("(({ctype}){0})", "np.asarray({0}).astype(np.{dtype})"),
    "call": ("{c_fn}({args})", "f_{name}({args})"),
}
_CUDA, _NUMPY = 0, 1


def _render(e: tuple, target: int, dtype: np.dtype | None) -> str:
    """Expression ``e`` as CUDA C++ or numpy text; ``dtype`` (the group's float) picks
    the float32 (``expf``) or float64 (``exp``) C functions."""
    tag = e[0]
    if tag in ("in", "val"):
        return f"{'in' if tag == 'in' else 'v'}{e[1]}"
    if tag == "const":
        return (_c_literal, _py_literal)[target](e[1], e[2])
    if tag not in _SYNTAX:
        raise ValueError(f"fusion: unknown expression {e!r}")
    args = [_render(a, target, dtype) for a in e[1:] if isinstance(a, tuple)]
    fields = {"args": ", ".join(args), "op": e[1]}
    if tag == "cast":
        fields.update(ctype=_C_TYPES[e[2]], dtype=e[2].name)
    elif tag == "call":
        fields.update(name=e[1], c_fn=_FUNCTIONS[e[1]][1 if dtype == _F32 else 0])
    return _SYNTAX[tag][target].format(*args, **fields)


def _kernel_name(group: ElementwiseGroup, text: str) -> str:
    names = list(dict.fromkeys(node.op.name for node in group.nodes))
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    return "fgrad_" + "_".join(names[:3]) + ("_etc" if len(names) > 3 else "") + f"_{digest}"


def _input_dtype(x: Any) -> np.dtype:
    return np.dtype(x.aval.dtype if isinstance(x, Var) else _data(x).dtype)


def render_cuda(group: ElementwiseGroup) -> tuple[str, str, str, str]:
    """The group as the arguments of ``cupy.ElementwiseKernel``.

    Inputs are named ``in0, in1 ...``, outputs ``out0 ...``, each step a local ``v0 ...``;
    literals are typed (``0.5f`` for float32) and float32 math calls the ``f`` functions.

    Args:
        group: an :class:`ElementwiseGroup`.

    Returns:
        ``(in_params, out_params, operation, name)``, all strings.

    Example:
        >>> from fgrad.transforms.fusion import elementwise_groups, render_cuda
        >>> x = fnp.ones(3, dtype="float32")
        >>> g = fgrad.make_graph(lambda x: fnp.exp(x) * 0.5)(x)
        >>> in_params, out_params, body, name = render_cuda(elementwise_groups(g)[0])
        >>> in_params, out_params
        ('float32 in0', 'float32 out0')
        >>> print(body)
        float v0 = expf(in0);
        float v1 = (v0 * 0.5f);
        out0 = v1;
    """
    in_params = ", ".join(f"{_input_dtype(x).name} in{i}" for i, x in enumerate(group.inputs))
    out_params = ", ".join(
        f"{np.dtype(v.aval.dtype).name} out{j}" for j, v in enumerate(group.outputs)
    )
    lines = [
        f"{_C_TYPES[dtype]} v{k} = {_render(e, _CUDA, group.dtype)};"
        for k, (dtype, e) in enumerate(group.steps)
    ]
    lines += [f"out{j} = {_render(r, _CUDA, group.dtype)};" for j, r in enumerate(group.results)]
    body = "\n".join(lines)
    return in_params, out_params, body, _kernel_name(group, f"{in_params};{out_params};{body}")


def _py_literal(value: Any, dtype: np.dtype) -> str:
    if dtype == _BOOL:
        return "np.True_" if value else "np.False_"
    text = repr(float(value)) if math.isfinite(value) else f"float('{value}')"
    return f"np.{dtype.name}({text})"


def render_numpy(group: ElementwiseGroup) -> Callable:
    """The group's expressions as one Python function over numpy arrays (for testing).

    It evaluates the very steps :func:`render_cuda` writes, with numpy functions for the
    C ones (``np.fabs`` for ``fabsf``, ``np.where`` for ``?:`` ...); its ``__source__``
    attribute holds the generated code.

    Args:
        group: an :class:`ElementwiseGroup`.

    Returns:
        ``f(*inputs) -> tuple`` of one array per output of the group.

    Example:
        >>> from fgrad.transforms.fusion import elementwise_groups, render_numpy
        >>> g = fgrad.make_graph(lambda x: fnp.maximum(x - 1.0, 0.0))(fnp.ones(2))
        >>> f = render_numpy(elementwise_groups(g)[0])
        >>> f(np.array([0.5, 3.0]))
        (array([0., 2.]),)
    """
    args = ", ".join(f"in{i}" for i in range(len(group.inputs)))
    lines = [f"def fused({args}):"]
    lines += [
        f"    v{k} = {_render(e, _NUMPY, group.dtype)}" for k, (_, e) in enumerate(group.steps)
    ]
    outs = [
        f"np.asarray({_render(r, _NUMPY, group.dtype)}, dtype=np.{np.dtype(v.aval.dtype).name})"
        for r, v in zip(group.results, group.outputs)
    ]
    lines.append(f"    return ({''.join(o + ', ' for o in outs)})")
    source = "\n".join(lines)
    ns: dict[str, Any] = {"np": np, **{f"f_{k}": v[2] for k, v in _FUNCTIONS.items()}}
    exec(compile(source, "<fgrad.fusion numpy>", "exec"), ns)  # noqa: S102
    fn = ns["fused"]
    fn.__source__ = source
    return fn


# ------------------------------------------------------------------------ graphs and jit


class _FusedOp:
    """Stands for an Op in a ``jit`` program: the Node of one group, run by ``kernel``."""

    __slots__ = ("kernel", "name")
    multiple_results = True
    effectful = False  # elementwise arithmetic only
    fresh = True  # every kernel writes its outputs into new arrays, never a view of an input

    def __init__(self, kernel: Callable, name: str):
        self.kernel = kernel
        self.name = name

    def eval_arrays(self, *datas: Any) -> Any:
        """Run the kernel on backend arrays (as ``Op.eval_arrays``; debug_nans re-runs it)."""
        xp = backend.namespace_of(next(d for d in datas if hasattr(d, "shape")))
        return self.kernel(xp, *datas)


def numpy_kernel(group: ElementwiseGroup) -> Callable:
    """A kernel ``(xp, *inputs) -> outputs`` that runs :func:`render_numpy`'s function."""
    fn = render_numpy(group)
    return lambda xp, *inputs: fn(*inputs)


@functools.lru_cache(maxsize=512)
def _elementwise_kernel(xp: Any, in_params: str, out_params: str, body: str, name: str) -> Any:
    """One ``ElementwiseKernel`` per source (cupy compiles it on first call, per signature)."""
    return xp.ElementwiseKernel(in_params, out_params, body, name, options=_NVRTC_OPTIONS)


def _cupy_kernel(xp: Any, group: ElementwiseGroup) -> Callable:
    kernel = _elementwise_kernel(xp, *render_cuda(group))
    shape = group.shape
    dtypes = [np.dtype(v.aval.dtype) for v in group.outputs]

    def run(xp: Any, *inputs: Any) -> tuple:
        outs = tuple(xp.empty(shape, dtype) for dtype in dtypes)
        kernel(*inputs, *outs)
        return outs

    return run


def fuse_graph(
    graph: Graph,
    make_kernel: Callable = numpy_kernel,
    constant: Callable | None = None,
    min_size: int = 2,
    groups: list | None = None,
    name: str = "fused_elementwise",
) -> Graph:
    """``graph`` with each of its :func:`elementwise_groups` replaced by one Node.

    The new Node reads the group's inputs and gives its outputs (the same Vars), running
    ``make_kernel(group)(xp, *inputs) -> outputs`` (a group whose ``make_kernel`` is None
    stays as it is); Nodes are reordered where a group
    needs it, keeping the graph's order otherwise. The result is for running (``jit``'s
    program), not for differentiating: the fused Nodes have no derivative rules.

    Args:
        graph: the Graph to fuse; it is not changed.
        make_kernel: makes the kernel of a group (default: the numpy rendering).
        constant: applied once to each constant array the kernels read (to move it to
            the kernels' device).
        min_size: the fewest Nodes of a group offered to ``make_kernel`` (1: single
            Nodes too, where ``make_kernel`` decides).
        groups: the groups to offer instead of :func:`elementwise_groups`' (disjoint,
            each with ``nodes``, ``inputs`` and ``outputs``: :class:`RowReduceGroup`).
        name: the fused Nodes' op name (what ``jit``'s program and its profiles show).

    Returns:
        A Graph with the same inputs and outputs, or ``graph`` itself when nothing fuses.

    Example:
        >>> from fgrad.transforms.fusion import fuse_graph
        >>> g = fgrad.make_graph(lambda x: fnp.sum(fnp.exp(x) * 2.0 + 1.0))(fnp.ones(3))
        >>> [n.op.name for n in fuse_graph(g).nodes]
        ['fused_elementwise', 'sum']
    """
    if groups is None:
        groups = elementwise_groups(graph, min_size)
    kernels = [(g, make_kernel(g)) for g in groups]
    groups = [g for g, kernel in kernels if kernel is not None]  # None: leave it unfused
    if not groups:
        return graph
    first = {id(g.nodes[0]): (g, kernel) for g, kernel in kernels if kernel is not None}
    members = {id(node) for g in groups for node in g.nodes}
    units: list[Node] = []
    for node in graph.nodes:
        group, kernel = first.get(id(node), (None, None))
        if group is not None:
            inputs = [x if isinstance(x, Var) else _constant(x, constant) for x in group.inputs]
            op = _FusedOp(kernel, name)
            units.append(Node(op, inputs, {}, list(group.outputs), node.source))
        elif id(node) not in members:
            units.append(node)
    names = [(v, v.name) for v in _all_vars(graph)]
    fused = Graph(graph.invars, _toposort(units), graph.outvars, graph.in_tree, graph.out_tree)
    for v, name in names:  # Graph() renames Vars; the original graph keeps its names
        v.name = name
    return fused


def _constant(x: Any, constant: Callable | None) -> Any:
    """A constant kernel input without its broadcast (zero-stride) axes, kept as length 1:
    the kernel broadcasts it again, and ``constant`` (a copy to the device) copies only
    its own elements."""
    data = _data(x)
    strides = getattr(data, "strides", None)
    if strides and 0 in strides:
        data = data[tuple(slice(0, 1) if s == 0 else slice(None) for s in strides)]
    return data if constant is None else constant(data)


def _all_vars(graph: Graph) -> list:
    return [*graph.invars, *(v for node in graph.nodes for v in node.outputs)]


def _toposort(units: list) -> list:
    """``units`` in an order where each follows the producers of its inputs; ties keep
    the given order."""
    producer = {id(v): k for k, unit in enumerate(units) for v in unit.outputs}
    waiting = [0] * len(units)
    users: list[list[int]] = [[] for _ in units]
    last_effect = None  # nodes with effects (host callbacks) keep their order: a chain
    for k, unit in enumerate(units):
        before = {producer[id(v)] for v in unit.inputs if isinstance(v, Var) and id(v) in producer}
        if has_effects(unit):
            if last_effect is not None:
                before.add(last_effect)
            last_effect = k
        for p in before:
            waiting[k] += 1
            users[p].append(k)
    ready = [k for k in range(len(units)) if not waiting[k]]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(units[k])
        for u in users[k]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, u)
    if len(order) != len(units):
        raise AssertionError("fusion: the fused graph has a cycle")
    return order


def fuse_for(graph: Graph, xp: Any) -> Graph:
    """The graph ``jit`` compiles for the namespace ``xp``: on cupy with each group of
    elementwise Nodes fused into one cached ``cupy.ElementwiseKernel``; on numpy, where
    numba is installed and ``config.cpu_compile`` is on, with each group that pays fused
    into one compiled numba loop (``fusion_numba.fuse_numpy``); else ``graph`` itself.

    Example:
        >>> from fgrad.transforms.fusion import fuse_for
        >>> g = fgrad.make_graph(lambda x: fnp.exp(x) * 2.0)(fnp.ones(3))
        >>> fuse_for(g, np) is g  # 3 elements: fused only where it pays
        True
    """
    if xp is np:  # through numba, where installed and config.cpu_compile is on
        if not (config.cpu_compile and cpu_compile.available()) or config.debug_nans:
            return graph
        from fgrad.transforms.fusion_numba import fuse_numpy  # imports numba: only when needed

        return fuse_numpy(graph)
    if getattr(xp, "__name__", "") != "cupy":
        return graph
    return fuse_graph(graph, functools.partial(_cupy_kernel, xp), constant=xp.asarray)
