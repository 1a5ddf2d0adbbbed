"""Op families: the declarations most ops share, so an op is its kernel and its calculus.

An elementwise op with one input has one derivative, and the same function of ``t`` gives
its JVP (applied to a tangent) and its VJP (applied to a cotangent): multiplying by
``f'(x)`` is its own transpose, in JAX's convention for complex numbers too (no
conjugation). ``unary_op`` declares both rules from that one function, with the shared
shape rule, batching rule and docstring template; ``binary_op`` does the same with one
derivative per input (the framework sums a broadcast input's cotangent back to its shape).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fgrad.core.op import Check, Op, defop
from fgrad.ops._batch import elementwise_batch
from fgrad.ops._rules import floating, unary

__all__ = ["binary_op", "unary_op"]


def unary_op(
    name: str,
    kernel: Callable,
    derivative: Callable,
    *,
    aval: Callable | None = None,
    check: Check | None = None,
    doc: str | None = None,
    vjp_reads: tuple[str, ...] = ("inputs", "out"),
) -> Op:
    """Declare an elementwise op of one input from its kernel and its derivative.

    Args:
        name: the numpy name.
        kernel: ``(xp, x) -> array``.
        derivative: ``(t, out, x) -> t * f'(x)``, written with fgrad ops; it serves as
            the JVP (``t`` a tangent) and the VJP (``t`` a cotangent).
        aval: the shape rule; by default numpy's rule for transcendental functions
            (``unary(floating)``: integers promote to the smallest float holding them).
        check: how the registry test samples inputs (default: ``Check()``).
        doc: the public docstring (usually ``fgrad.ops._doc.unary_doc``).
        vjp_reads: what the derivative reads besides ``t`` (see :func:`defop`).

    Example:
        >>> from fgrad.ops.elementwise import exp  # declared as unary_op("exp", ...)
        >>> exp.jvp[0] is exp.vjp[0]
        True
        >>> fgrad.grad(exp)(0.0)
        Tensor(1., dtype=float64)
    """
    return defop(
        name,
        kernel=kernel,
        aval=aval if aval is not None else unary(floating, name=name),
        jvp=(derivative,),
        vjp=(derivative,),
        batch=elementwise_batch,
        check=check if check is not None else Check(),
        doc=doc,
        vjp_reads=vjp_reads,
    )


def binary_op(
    name: str,
    kernel: Callable,
    derivatives: tuple[Callable, Callable],
    *,
    aval: Callable,
    check: Check,
    doc: str | None = None,
    vjp_reads: tuple[str, ...] = ("inputs", "out"),
) -> Op:
    """Declare a broadcasting elementwise op of two inputs from its partial derivatives.

    Args:
        name: the numpy name.
        kernel: ``(xp, x, y) -> array``.
        derivatives: ``((t, out, x, y) -> t * df/dx, (t, out, x, y) -> t * df/dy)``,
            each serving as the JVP and the VJP for its input.
        aval: the shape rule (``fgrad.ops._rules.binary(name, dtype_rule)``).
        check: how the registry test samples inputs.
        doc: the public docstring (usually ``fgrad.ops._doc.binary_doc``).
        vjp_reads: what the derivatives read besides ``t`` (see :func:`defop`).

    Example:
        >>> from fgrad.ops.elementwise import multiply  # declared as binary_op("multiply", ...)
        >>> fgrad.grad(multiply, argnums=(0, 1))(2.0, 3.0)
        (Tensor(3., dtype=float64), Tensor(2., dtype=float64))
    """
    return defop(
        name,
        kernel=kernel,
        aval=aval,
        jvp=derivatives,
        vjp=derivatives,
        batch=elementwise_batch,
        check=check,
        doc=doc,
        vjp_reads=vjp_reads,
    )
