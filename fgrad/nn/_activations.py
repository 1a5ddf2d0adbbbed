"""Activation functions and normalisers, with JAX's names and signatures (``jax.nn``).

relu, sigmoid, softmax and log_softmax are registry ops (own stable kernels and derivative
conventions); gelu, silu and softplus are compositions of ops, so their derivatives come
from the ops' rules (the tanh gelu of a floating array uses the fused gate op
``gelu_tanh_gate``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fgrad import _args
from fgrad.errors import DTypeError
from fgrad.ops import nn as _nn
from fgrad.ops._rules import ndim_of, norm_axes
from fgrad.ops.elementwise import add, erfc, logaddexp, multiply, sigmoid, tanh
from fgrad.ops.nn import relu

__all__ = ["gelu", "log_softmax", "relu", "sigmoid", "silu", "softmax", "softplus", "swish"]

def _input(x: Any, fn: str) -> Any:
    """``x`` checked: a Tensor, a numeric array or a Python number (lists are refused, as
    the ops refuse them), so that bad input names the activation, not an op inside it."""
    if isinstance(x, (bool, float, complex)):
        return x
    if isinstance(x, int):
        if abs(x) > 2**63 - 1:
            raise ValueError(f"{fn}: x={x} is beyond the int64 range; pass a float or an array")
        return x
    if hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, (list, tuple)):
        try:
            numeric = _args.is_numeric(np.dtype(x.dtype))
        except TypeError:  # an Array API namespace's own dtype
            numeric = True
        if numeric:
            return x
        raise DTypeError(
            f"{fn}: x must be numeric, got {_args.describe(x)}; Tensors hold bool, integer, "
            "floating or complex numbers"
        )
    hint = "; convert lists with fnp.asarray" if isinstance(x, (list, tuple)) else ""
    raise DTypeError(
        f"{fn}: x must be a Tensor, an array or a Python number, got {_args.describe(x)}{hint}"
    )


_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def softmax(x: Any, axis: Any = -1) -> Any:
    """Softmax over ``axis``: ``exp(x) / sum(exp(x), axis)``, stable for large inputs.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype.
        axis: int or tuple of ints to normalise over (default the last axis), or None
            for all axes.

    Returns:
        Tensor of ``x.shape``: non-negative, summing to 1 over ``axis``; ``-inf`` entries
        get 0. Values and derivatives stay finite for inputs like 1000.

    Raises:
        ShapeError: ``axis`` is out of range or repeated.
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import softmax
        >>> softmax(fnp.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]]))
        Tensor([[0.09003057, 0.24472847, 0.66524096],
                [0.33333333, 0.33333333, 0.33333333]], dtype=float64)
    """
    x = _input(x, "softmax")
    return _nn.softmax(x, axes=norm_axes("softmax", axis, ndim_of(x)))


def log_softmax(x: Any, axis: Any = -1) -> Any:
    """Log-softmax over ``axis``: ``x - logsumexp(x, axis)``, stable for large inputs.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype.
        axis: int or tuple of ints to normalise over (default the last axis), or None
            for all axes.

    Returns:
        Tensor of ``x.shape``: log-probabilities whose ``exp`` sums to 1 over ``axis``.

    Raises:
        ShapeError: ``axis`` is out of range or repeated.
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import log_softmax
        >>> log_softmax(fnp.array([0.0, 1000.0]))
        Tensor([-1000.,     0.], dtype=float64)
    """
    x = _input(x, "log_softmax")
    return _nn.log_softmax(x, axes=norm_axes("log_softmax", axis, ndim_of(x)))


def softplus(x: Any) -> Any:
    """Softplus ``log(1 + exp(x))``, computed as ``logaddexp(x, 0)`` so it never overflows.

    The derivative is ``sigmoid(x)``; ``softplus(1000) = 1000`` with derivative 1, and
    ``softplus(-1000) = 0`` with derivative 0 (JAX's ``jax.nn.softplus``).

    Args:
        x: Tensor, array or Python scalar of real dtype.

    Returns:
        Tensor of ``x.shape`` and floating dtype, positive.

    Example:
        >>> from fgrad.nn import softplus
        >>> softplus(fnp.array([-1000.0, 0.0, 1000.0]))
        Tensor([0.00000000e+00, 6.93147181e-01, 1.00000000e+03], dtype=float64)
    """
    x = _input(x, "softplus")
    if getattr(getattr(x, "dtype", None), "kind", None) == "c" or isinstance(x, complex):
        raise DTypeError(
            "softplus: defined for real input only (it is logaddexp(x, 0)), got complex "
            f"{getattr(x, 'aval', x)}; apply it to real values (fnp.real, fnp.abs)"
        )
    return logaddexp(x, 0.0)


def silu(x: Any) -> Any:
    """SiLU (swish) ``x * sigmoid(x)``.

    Args:
        x: Tensor, array or Python scalar of real dtype.

    Returns:
        Tensor of ``x.shape`` and floating dtype.

    Example:
        >>> from fgrad.nn import silu
        >>> silu(fnp.array([-1.0, 0.0, 2.0]))
        Tensor([-0.26894142,  0.        ,  1.76159416], dtype=float64)

    References:
        Elfwing, Uchibe and Doya, "Sigmoid-weighted linear units for neural network
        function approximation in reinforcement learning", 2017, arXiv:1702.03118;
        Ramachandran, Zoph and Le, "Searching for activation functions", 2017,
        arXiv:1710.05941 (swish).
    """
    x = _input(x, "silu")
    return multiply(x, sigmoid(x))


swish = silu


def gelu(x: Any, approximate: bool | str = False) -> Any:
    """Gaussian error linear unit ``x * Phi(x)``, ``Phi`` the standard normal CDF.

    Exact by default, as PyTorch's ``gelu``: ``Phi(x) = erfc(-x / sqrt(2)) / 2``, which,
    unlike ``(1 + erf(x / sqrt(2))) / 2``, keeps full accuracy for negative ``x``. With
    ``approximate=True`` or ``"tanh"``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))``
    (JAX's default, PyTorch's ``approximate="tanh"``).

    Args:
        x: Tensor, array or Python scalar of real dtype.
        approximate: False or ``"none"`` for the exact form; True or ``"tanh"`` for the
            tanh approximation.

    Returns:
        Tensor of ``x.shape`` and floating dtype.

    Raises:
        ValueError: an unknown ``approximate``.
        DTypeError: complex input with the exact form.

    Example:
        >>> from fgrad.nn import gelu
        >>> gelu(fnp.array([-1.0, 0.0, 1.0]))
        Tensor([-0.15865525,  0.        ,  0.84134475], dtype=float64)
        >>> gelu(fnp.array([-1.0, 0.0, 1.0]), approximate="tanh")
        Tensor([-0.15880801,  0.        ,  0.84119199], dtype=float64)

    References:
        Hendrycks and Gimpel, "Gaussian error linear units (GELUs)", 2016,
        arXiv:1606.08415 (both forms).
    """
    x = _input(x, "gelu")
    if isinstance(approximate, str):
        _args.choice(approximate, "gelu", "approximate", ("none", "tanh"))
    else:
        approximate = _args.flag(approximate, "gelu", "approximate")
    if approximate in (False, "none"):
        if getattr(getattr(x, "dtype", None), "kind", None) == "c" or isinstance(x, complex):
            raise DTypeError(
                f"gelu: the exact form uses erf, which is defined for real input only, got "
                f"complex {getattr(x, 'aval', x)}; pass approximate='tanh' for the "
                "holomorphic tanh form, or apply gelu to the real and imaginary parts"
            )
        return multiply(multiply(x, 0.5), erfc(multiply(x, -_SQRT_HALF)))
    if approximate in (True, "tanh"):
        if getattr(getattr(x, "dtype", None), "kind", None) == "f":
            # One fused op for the gate (same values bit for bit, fewer passes over memory,
            # and a derivative without another tanh).
            return multiply(x, _nn.gelu_tanh_gate(x))
        cube = multiply(multiply(x, x), x)
        inner = multiply(_SQRT_2_OVER_PI, add(x, multiply(cube, 0.044715)))
        return multiply(multiply(x, 0.5), add(tanh(inner), 1.0))
    raise ValueError(
        f"gelu: approximate must be False, True, 'none' or 'tanh', not {approximate!r}"
    )
