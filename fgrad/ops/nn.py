"""Neural-network ops with their own kernels or derivative conventions: relu, softmax,
log_softmax. The smooth activations built from other ops (gelu, silu, softplus) are
composites in :mod:`fgrad.nn`, and sigmoid lives with the elementwise ops.

softmax and log_softmax take canonical ``axes`` (a sorted tuple of non-negative ints);
:func:`fgrad.nn.softmax` and :func:`fgrad.nn.log_softmax` accept JAX's ``axis``.
"""

from __future__ import annotations

from fgrad.core.op import Check, defop
from fgrad.ops._rules import floating, same, unary
from fgrad.ops.elementwise import exp, greater, multiply, subtract, where
from fgrad.ops.reduction import sum as _sum


def _relu_args(rng, shapes):
    # Off the kink at 0, where finite differences would straddle the two pieces.
    return [rng.uniform(0.2, 2.0, s) * rng.choice([-1.0, 1.0], s) for s in shapes]


relu = defop(
    "relu",
    kernel=lambda xp, x: xp.maximum(x, 0),
    aval=unary(same),
    # where(x > 0, ., 0) and not maximum's rule: relu'(0) = 0 (JAX, PyTorch), not 0.5.
    jvp=(lambda t, out, x: where(greater(x, 0), t, 0),),
    vjp=(lambda ct, out, x: where(greater(x, 0), ct, 0),),
    check=Check(make_args=_relu_args),
    doc="""Rectified linear unit, ``max(x, 0)``.

    Elementwise. The derivative is 1 for ``x > 0`` and 0 otherwise, including at
    ``x = 0`` (JAX's and PyTorch's convention). NaN stays NaN.

    Args:
        x: Tensor, array or Python scalar of any shape and real dtype.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import relu
        >>> relu(fnp.array([-1.0, 0.0, 2.0]))
        Tensor([0., 0., 2.], dtype=float64)
        >>> fgrad.grad(relu)(0.0)
        Tensor(0., dtype=float64)
    """,
)


def _axes_aval(name):
    elementwise = unary(floating, name=name, real_only=True)
    return lambda x, *, axes: elementwise(x)


def _softmax_kernel(xp, x, *, axes):
    # Shift by the maximum so exp never overflows (the largest exponent is 0).
    e = xp.exp(x - xp.max(x, axis=axes, keepdims=True))
    return e / xp.sum(e, axis=axes, keepdims=True)


def _softmax_rule(t, out, x, *, axes):
    # J = diag(s) - s s^T is symmetric, so the JVP and the VJP are the same map.
    return multiply(out, subtract(t, _sum(multiply(t, out), axes=axes, keepdims=True)))


_AXES_CHECK = Check(
    shapes=(((2, 3),),),
    params=({"axes": (1,)}, {"axes": (0,)}, {"axes": (0, 1)}),
    domain=(-3.0, 3.0),
)

softmax = defop(
    "softmax",
    kernel=_softmax_kernel,
    aval=_axes_aval("softmax"),
    jvp=(_softmax_rule,),
    vjp=(_softmax_rule,),
    check=_AXES_CHECK,
    doc="""Softmax over ``axes``: ``exp(x) / sum(exp(x), axes)``, computed without overflow.

    The kernel subtracts the maximum over ``axes`` first, and the derivative
    ``s * (t - sum(s * t))`` is formed from the output ``s``, so inputs like 1000 give
    finite values and derivatives. ``-inf`` entries get probability 0.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype (integers are promoted to float64).
        axes: sorted tuple of the axes to normalise over (``fgrad.nn.softmax`` takes
            ``axis``, default -1).

    Returns:
        Tensor of ``x.shape`` and floating dtype, non-negative, summing to 1 over ``axes``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import softmax
        >>> softmax(fnp.array([1000.0, 1000.0, -float("inf")]))
        Tensor([0.5, 0.5, 0. ], dtype=float64)
    """,
)


def _log_softmax_kernel(xp, x, *, axes):
    shifted = x - xp.max(x, axis=axes, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axes, keepdims=True))


log_softmax = defop(
    "log_softmax",
    kernel=_log_softmax_kernel,
    aval=_axes_aval("log_softmax"),
    # d out = t - sum(softmax * t), with softmax = exp(out) <= 1: nothing overflows.
    jvp=(
        lambda t, out, x, *, axes: subtract(
            t, _sum(multiply(exp(out), t), axes=axes, keepdims=True)
        ),
    ),
    vjp=(
        lambda ct, out, x, *, axes: subtract(
            ct, multiply(exp(out), _sum(ct, axes=axes, keepdims=True))
        ),
    ),
    check=_AXES_CHECK,
    doc="""Log of the softmax over ``axes``: ``x - logsumexp(x, axes)``, without overflow.

    The kernel subtracts the maximum over ``axes`` before exponentiating, and the
    derivative ``t - sum(exp(out) * t)`` uses ``exp(out) <= 1``, so inputs like 1000
    give finite values and derivatives.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype (integers are promoted to float64).
        axes: sorted tuple of the axes to normalise over (``fgrad.nn.log_softmax`` takes
            ``axis``, default -1).

    Returns:
        Tensor of ``x.shape`` and floating dtype; ``exp`` of it sums to 1 over ``axes``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import log_softmax
        >>> log_softmax(fnp.array([1000.0, 1000.0]))
        Tensor([-0.69314718, -0.69314718], dtype=float64)
    """,
)

# doctest collects only functions and classes; run the op docstrings' examples too.
__test__ = {op.name: op.doc for op in (relu, softmax, log_softmax)}
