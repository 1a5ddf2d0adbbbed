"""Op families: the declarations most ops share, so an op is its kernel and its calculus.

An elementwise op with one input has one derivative, and the same function of ``t`` gives
its JVP (applied to a tangent) and its VJP (applied to a cotangent): multiplying by
``f'(x)`` is its own transpose, in JAX's convention for complex numbers too (no
conjugation). ``unary_op`` declares both rules from that one function, with the shared
shape rule, batching rule and docstring template; ``binary_op`` does the same with one
derivative per input (the framework sums a broadcast input's cotangent back to its shape).
``linear_op`` declares an op that is linear in its input from the op and its transpose,
and ``nondiff_op`` an elementwise op without derivative (comparisons, rounding, masks).

A kernel that only calls one namespace function can be given as that function's name:
``"exp"`` stands for ``lambda xp, x: xp.exp(x)``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType

from fgrad.core.op import LINEAR, Check, Op, defop
from fgrad.ops._batch import elementwise_batch
from fgrad.ops._rules import binary, floating, same, unary

__all__ = ["BINARY_SHAPES", "binary_op", "linear_op", "nondiff_op", "unary_op", "xp_kernel"]

# The registry test's input shapes for a broadcasting op of two inputs.
BINARY_SHAPES = (((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)))

_TEMPLATES = {1: (lambda xp, x: xp.f(x)).__code__, 2: (lambda xp, x, y: xp.f(x, y)).__code__}


def xp_kernel(fn: str | Callable, arity: int) -> Callable:
    """The kernel ``lambda xp, x: xp.fn(x)`` (``x, y`` when ``arity`` is 2); a callable
    is returned as it is.

    The code is that lambda's with the name swapped in, so the eager fast path
    (``_direct_kernel`` in ``fgrad/core/op.py``) calls ``xp.fn`` directly, as it does for
    the lambda written out, and ``inspect.signature`` of the op is ``(x)`` or ``(x, y)``.
    """
    if callable(fn):
        return fn
    if not fn.isidentifier():
        raise ValueError(f"xp_kernel: {fn!r} is not a namespace function's name")
    return FunctionType(_TEMPLATES[arity].replace(co_names=(fn,)), {})


def unary_op(
    name: str,
    kernel: Callable | str,
    derivative: Callable,
    *,
    aval: Callable | None = None,
    check: Check | None = None,
    doc: str | None = None,
    vjp_reads: tuple[str, ...] = ("inputs", "out"),
    numpy: bool | tuple[str, ...] = (),
) -> Op:
    """Declare an elementwise op of one input from its kernel and its derivative.

    Args:
        name: the numpy name.
        kernel: ``(xp, x) -> array``, or the name of the namespace function it calls.
        derivative: ``(t, out, x) -> t * f'(x)``, written with fgrad ops; it serves as
            the JVP (``t`` a tangent) and the VJP (``t`` a cotangent).
        aval: the shape rule; by default numpy's rule for transcendental functions
            (``unary(floating)``: integers promote to the smallest float holding them).
        check: how the registry test samples inputs (default: ``Check()``).
        doc: the public docstring (usually ``fgrad.ops._doc.unary_doc``).
        vjp_reads: what the derivative reads besides ``t`` (see :func:`defop`).
        numpy: the names ``fgrad.numpy`` exports the op under (see :func:`defop`).

    Example:
        >>> from fgrad.ops.elementwise import exp  # declared as unary_op("exp", ...)
        >>> exp.jvp[0] is exp.vjp[0]
        True
        >>> fgrad.grad(exp)(0.0)
        Tensor(1., dtype=float64)
    """
    return defop(
        name,
        kernel=xp_kernel(kernel, 1),
        aval=aval if aval is not None else unary(floating, name=name),
        jvp=(derivative,),
        vjp=(derivative,),
        batch=elementwise_batch,
        check=check if check is not None else Check(),
        doc=doc,
        vjp_reads=vjp_reads,
        numpy=numpy,
    )


def binary_op(
    name: str,
    kernel: Callable | str,
    derivatives: tuple[Callable, Callable],
    *,
    aval: Callable | None = None,
    check: Check | None = None,
    doc: str | None = None,
    vjp_reads: tuple[str, ...] = ("inputs", "out"),
    numpy: bool | tuple[str, ...] = (),
) -> Op:
    """Declare a broadcasting elementwise op of two inputs from its partial derivatives.

    Args:
        name: the numpy name.
        kernel: ``(xp, x, y) -> array``, or the name of the namespace function it calls.
        derivatives: ``((t, out, x, y) -> t * df/dx, (t, out, x, y) -> t * df/dy)``,
            each serving as the JVP and the VJP for its input.
        aval: the shape rule (default ``fgrad.ops._rules.binary(name)``: broadcasting,
            numpy's promotion).
        check: how the registry test samples inputs (default: the broadcasting shapes
            ``BINARY_SHAPES`` on the default domain).
        doc: the public docstring (usually ``fgrad.ops._doc.binary_doc``).
        vjp_reads: what the derivatives read besides ``t`` (see :func:`defop`).
        numpy: the names ``fgrad.numpy`` exports the op under (see :func:`defop`).

    Example:
        >>> from fgrad.ops.elementwise import multiply  # declared as binary_op("multiply", ...)
        >>> fgrad.grad(multiply, argnums=(0, 1))(2.0, 3.0)
        (Tensor(3., dtype=float64), Tensor(2., dtype=float64))
    """
    return defop(
        name,
        kernel=xp_kernel(kernel, 2),
        aval=aval if aval is not None else binary(name),
        jvp=derivatives,
        vjp=derivatives,
        batch=elementwise_batch,
        check=check if check is not None else Check(shapes=BINARY_SHAPES),
        doc=doc,
        vjp_reads=vjp_reads,
        numpy=numpy,
    )


def linear_op(
    name: str,
    kernel: Callable | str,
    transpose: Callable,
    *,
    aval: Callable | None = None,
    check: Check | None = None,
    doc: str | None = None,
    vjp_reads: tuple[str, ...] = (),
    numpy: bool | tuple[str, ...] = (),
) -> Op:
    """Declare an elementwise op that is linear in its one input (``negative``, ``real``,
    casts): its JVP is the op applied to the tangent, its VJP the given transpose.

    Args:
        name: the numpy name.
        kernel: ``(xp, x, **params) -> array``, or the name of the namespace function.
        transpose: ``(ct, out, x, **params) -> cotangent`` of ``x``, written with fgrad
            ops (``None`` for no cotangent).
        aval: the shape rule (default ``unary(same)``: shape and dtype of ``x``).
        check: how the registry test samples inputs (default: ``Check()``).
        doc: the public docstring.
        vjp_reads: what the transpose reads besides ``ct`` (default: nothing but avals).
        numpy: the names ``fgrad.numpy`` exports the op under (see :func:`defop`).

    Example:
        >>> from fgrad.ops.elementwise import negative  # declared as linear_op("negative", ...)
        >>> fgrad.jvp(negative, (2.0,), (1.0,))
        (Tensor(-2., dtype=float64), Tensor(-1., dtype=float64))
    """
    return defop(
        name,
        kernel=xp_kernel(kernel, 1),
        aval=aval if aval is not None else unary(same),
        jvp=LINEAR,
        vjp=(transpose,),
        batch=elementwise_batch,
        check=check if check is not None else Check(),
        doc=doc,
        vjp_reads=vjp_reads,
        numpy=numpy,
    )


def nondiff_op(
    name: str,
    kernel: Callable | str,
    *,
    aval: Callable,
    arity: int = 1,
    check: Check | None = None,
    doc: str | None = None,
    numpy: bool | tuple[str, ...] = (),
) -> Op:
    """Declare an elementwise op without derivative (comparisons, rounding, bit ops):
    transforms treat its result as a constant.

    Args:
        name: the numpy name.
        kernel: ``(xp, *arrays, **params) -> array``, or the name of the namespace
            function it calls with ``arity`` inputs.
        aval: the shape rule.
        arity: the number of array inputs (2: broadcasting, sampled on ``BINARY_SHAPES``).
        check: how the registry test samples inputs (default: ``Check()`` with the
            shapes for ``arity``).
        doc: the public docstring (usually ``fgrad.ops._doc.nondiff_doc``).
        numpy: the names ``fgrad.numpy`` exports the op under (see :func:`defop`).

    Example:
        >>> from fgrad.ops.elementwise import floor  # declared as nondiff_op("floor", ...)
        >>> floor.nondiff, fgrad.grad(floor)(1.5)
        (True, Tensor(0., dtype=float64))
    """
    if check is None:
        check = Check(shapes=BINARY_SHAPES) if arity == 2 else Check()
    return defop(
        name,
        kernel=xp_kernel(kernel, arity),
        aval=aval,
        nondiff=True,
        batch=elementwise_batch,
        check=check,
        doc=doc,
        numpy=numpy,
    )
