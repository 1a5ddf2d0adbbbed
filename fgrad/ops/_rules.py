"""Shared shape/dtype rules and the helpers derivative rules lean on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import ShapeDtype

__all__ = [
    "shape_of",
    "ndim_of",
    "dtype_of",
    "broadcast_shapes",
    "broadcasts_to",
    "unary",
    "binary",
    "same",
    "floating",
    "to_bool",
    "norm_axes",
    "PerInput",
    "refuses_complex",
]


def shape_of(x: Any) -> tuple[int, ...]:
    """Shape of a Tensor, aval, array or Python scalar (``()``)."""
    return tuple(getattr(x, "shape", ()))


def ndim_of(x: Any) -> int:
    """Number of dimensions of a Tensor, aval, array or Python scalar (0)."""
    return len(shape_of(x))


def dtype_of(x: Any) -> Any:
    """dtype of a Tensor, aval or array; a Python scalar stays itself (weak)."""
    return getattr(x, "dtype", None) or x


def broadcast_shapes(name: str, *xs: Any) -> tuple[int, ...]:
    """Broadcast the shapes of ``xs``; ShapeError naming the op when they do not."""
    shapes = [shape_of(x) for x in xs]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        described = ", ".join(str(ShapeDtype(s, np.dtype(dtypes.result_type(x)))) for s, x in zip(shapes, xs))
        raise ShapeError(
            f"{name}: input shapes do not broadcast: {described}. Trailing dimensions must be "
            "equal or 1; use reshape or expand_dims to line them up"
        ) from None


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to exactly ``target`` (numpy's rules)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def same(dtype: np.dtype) -> np.dtype:
    """dtype rule: keep the input dtype."""
    return dtype


def floating(dtype: np.dtype) -> np.dtype:
    """dtype rule of transcendental functions, as numpy's: the smallest float that holds
    the input (bool and 8-bit ints give float16, 16-bit ints float32, wider ints float64)."""
    return dtype if dtypes.is_inexact(dtype) else np.result_type(dtype, np.float16)


def to_bool(dtype: np.dtype) -> np.dtype:
    """dtype rule of predicates."""
    return dtypes.bool_


def unary(dtype_rule=same, *, name: str = "", real_only: bool = False):
    """aval rule of an elementwise op with one input."""

    def rule(x, **params):
        dtype = np.dtype(dtypes.result_type(x))
        if real_only and dtypes.is_complex(dtype):
            raise DTypeError(
                f"{name}: not defined for complex input {ShapeDtype(shape_of(x), dtype)}; "
                "apply it to the real and imaginary parts (fnp.real, fnp.imag) if that is meant"
            )
        return ShapeDtype(shape_of(x), np.dtype(dtype_rule(dtype)))

    # Read by defop: the eager kernel refuses complex input too (core/op.py, _bind_kernel).
    rule.real_only = real_only
    return rule


def binary(name: str, dtype_rule=same, *, real_only: bool = False):
    """aval rule of a broadcasting elementwise op with two or more inputs."""

    def rule(*xs, **params):
        shape = broadcast_shapes(name, *xs)
        dtype = np.dtype(dtypes.result_type(*xs))
        if real_only and dtypes.is_complex(dtype):
            described = ", ".join(
                str(ShapeDtype(shape_of(x), np.dtype(dtypes.result_type(x)))) for x in xs
            )
            raise DTypeError(
                f"{name}: not defined for complex input ({described}); apply it to real "
                "values (fnp.real, fnp.abs) if that is meant"
            )
        return ShapeDtype(shape, np.dtype(dtype_rule(dtype)))

    rule.real_only = real_only  # read by defop, as unary's
    return rule


def refuses_complex(rule: Callable) -> Callable:
    """Mark an aval ``rule`` that raises DTypeError for complex input, so the op's eager
    kernel refuses complex input as well (``unary``/``binary`` rules mark themselves)."""
    rule.real_only = True
    return rule


class PerInput:
    """The ``jvp`` or ``vjp`` rules of an op with any number of inputs: ``rules[i]`` is
    ``make(i)``, the rule for input ``i`` (None: not differentiable in it), made when asked."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[int], Any]):
        self._make = make

    def __getitem__(self, i: int) -> Any:
        return self._make(i)


def norm_axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """Canonical ``axes``: sorted non-negative ints; None means all axes.

    Raises:
        DTypeError: ``axis`` is not None, an int or a sequence of ints (floats, even
            ``1.0``, bools and strings are refused, as numpy's reductions refuse them).
        ShapeError: an axis is out of range or repeated.
    """
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(_args.axes(axis, name, ndim)))
