"""Weakly typed scalars: how ``jit``'s traced Python floats compute as Python numbers do.

Under ``jit`` a Python float or complex argument is traced as a weakly typed scalar
(:class:`fgrad.tensor.WeakShapeDtype`), as JAX does, so that a new value does not retrace.
Eager code computes with the number itself: Python operators between it and other
numbers (``lr * 2``, ``1 - beta``, ``-lr``, a loop counter) are Python arithmetic whose
results stay numbers, weak in every later op with arrays. Traced, those operators record
:data:`scalar_arith` nodes that run the Python operator when the program runs, and
:data:`to_weak` turns a 0-d array back into a Python number where eager code has one (a
loop carry that stays a number). Neither is in ``REGISTRY``: only jit's weak tracers
reach them, never a differentiated value.
Reference: JAX's weak types (https://docs.jax.dev/en/latest/type_promotion.html).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad.core.graph import GraphTracer, Node, Var
from fgrad.core.op import Op
from fgrad.core.trace import Tracer, bind
from fgrad.dtypes import WEAK_STAND_IN
from fgrad.tensor import Tensor, WeakShapeDtype

__all__ = ["PY_BINARY", "is_weak", "needs_array_result", "scalar_arith", "to_weak"]

_SCALARS = frozenset((int, float, complex, bool))

PY_BINARY = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "power": operator.pow,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
}


def is_weak(x: Any) -> bool:
    """A Python number, or a weakly typed tracer of jit (its Python arithmetic stays weak)."""
    # Only jit's own tracers: a weak value inside grad or jvp (a loop's weak carry) goes to
    # the op, which records its derivative (scalar_arith has none).
    return type(x) in _SCALARS or (type(x) is GraphTracer and x.weak)


def needs_array_result(node: Node) -> bool:
    """Whether running ``node`` on a weak input (a Python scalar when a program runs) may
    hand back a Python scalar where its output aval is an array: an identity-like kernel
    (``stop_gradient``), or one such as ``np.real(1.5)``. Runners wrap those kernels in
    :func:`fgrad.core.op.array_result`."""
    return (
        not node.op.multiple_results
        and not node.outputs[0].aval.weak
        and any(isinstance(v, Var) and v.aval.weak for v in node.inputs)
    )


def _scalar_arith_aval(*avals: Any, fn: Callable) -> WeakShapeDtype:
    values = [a if type(a) in _SCALARS else WEAK_STAND_IN[np.dtype(a.dtype).kind] for a in avals]
    return WeakShapeDtype((), np.dtype(type(fn(*values))))


def _python(*args: Any, fn: Callable) -> Any:
    out = fn(*args)
    if type(out) is complex and not any(type(a) is complex for a in args):
        # (-1.3) ** 0.5: Python answers with a complex, but the trace typed a real
        # (the values were unknown): NaN, as JAX (and numpy's power) give.
        return math.nan
    return out


class _ScalarArith(Op):
    __slots__ = ()

    def __call__(self, *args: Any, fn: Callable) -> Any:
        if any(isinstance(a, Tracer) for a in args):
            return bind(self, args, {"fn": fn})
        return _python(*args, fn=fn)  # a replayed graph: Python scalars in and out


def _scalar_arith_batch(op: Op, args: tuple, dims: tuple, *, fn: Callable) -> tuple:
    # One number per example cannot stay a Python number: the Python operator runs on the
    # arrays instead (Tensor operators, so fgrad ops), mapped over the leading axis.
    mapped = any(d is not None for d in dims)
    return (fn(*args), 0) if mapped else (op(*args, fn=fn), None)


scalar_arith = _ScalarArith(
    "scalar_arith",
    lambda xp, *args, fn: _python(*args, fn=fn),
    _scalar_arith_aval,
    None,
    None,
    True,
    False,
    None,
)
scalar_arith.batch = _scalar_arith_batch


class _ToWeak(Op):
    __slots__ = ()

    def __call__(self, x: Any) -> Any:
        if isinstance(x, Tracer):
            return bind(self, (x,), {})
        return _python_scalar(x._data if isinstance(x, Tensor) else x)


def _python_scalar(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _to_weak_batch(op: Op, args: tuple, dims: tuple, **params: Any) -> tuple:
    # Mapped over a batch it cannot be one Python number: it stays the (strong) array.
    return (args[0], dims[0]) if dims[0] is not None else (op(args[0]), None)


# A 0-d result that eager code computes as a Python number (a loop whose carry stays
# one, a cond whose branches return numbers) but a traced loop computes as an array:
# back to a Python number when the program runs, weakly typed while tracing.
to_weak = _ToWeak(
    "to_weak",
    lambda xp, x: _python_scalar(x),
    lambda x: WeakShapeDtype((), np.dtype(x.dtype)),
    None,
    None,
    True,
    False,
    None,
)
to_weak.batch = _to_weak_batch
