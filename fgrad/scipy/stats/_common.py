"""Helpers shared by the distributions of ``fgrad.scipy.stats``: argument checks that name
the public function, and ``-inf`` outside a support without NaN derivatives."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import dtypes
from fgrad._args import names_errors
from fgrad.scipy.special import _real
from fgrad.tensor import as_tensor

__all__ = ["LOG_2PI", "inputs", "outside", "safe"]

LOG_2PI = math.log(2 * math.pi)


def inputs(fn: str, **named: Any) -> list:
    """Each argument checked (real, numeric) in the order given, naming ``fn``; the first
    (the point ``x``, ``k`` or ``q``) made a Tensor, so that results are Tensors.

    A parameter given as a Python number (a default ``loc=0``, or jit's traced float)
    takes the floating dtype promotion gives it with ``x``, as a weak scalar does: so
    ``logpdf(float32 x)`` stays float32 even where the formula applies ``log`` to the
    parameter alone (which would make a Python number float64)."""
    out = [_real(v, fn, k) for k, v in named.items()]
    out[0] = as_tensor(out[0])
    for k, v in enumerate(out[1:], 1):
        if (type(v) in (int, float)) or getattr(v, "weak", False):
            target = np.dtype(dtypes.result_type(out[0], v))
            if not dtypes.is_inexact(target):
                target = np.dtype(np.float64)
            out[k] = fnp.asarray(v, dtype=target)
    return out


def safe(inside: Any, x: Any, fill: float) -> Any:
    """``x`` where ``inside``, ``fill`` elsewhere: keeps formulas finite outside a support,
    so their (discarded) derivatives there are not NaN."""
    return fnp.where(inside, x, fill)


def outside(inside: Any, value: Any, fill: float = -math.inf) -> Any:
    """``value`` on the support, ``fill`` (``-inf`` for log-densities) off it."""
    return fnp.where(inside, value, fill)


def with_doc(doc: str):
    """Give a public function its docstring, and make the errors raised inside it (by the
    ops it is built of, or by the function it calls: ``pdf`` calls ``logpdf``) name it."""

    def deco(f):
        f.__doc__ = doc
        wrapped = names_errors(f.__name__)(f)
        wrapped.__doc__ = doc
        return wrapped

    return deco


def doc(summary: str, args: dict, example: str, source: str, *, returns: str = "",
        raises: str = "ShapeError: the arguments do not broadcast.") -> str:
    """A distribution function's docstring: summary, shapes and dtypes, errors, example."""
    lines = "\n".join(f"        {k}: {v}" for k, v in args.items())
    example = "\n".join("        " + line for line in example.strip("\n").splitlines())
    returns = returns or (
        "Tensor of the arguments' broadcast shape, their promoted floating dtype (integers "
        "give float64)."
    )
    return f"""{summary}

    Differentiable in every real argument; broadcasting as numpy's. Outside the support
    a log-density is ``-inf`` and a density 0, as scipy's.

    Args:
{lines}

    Returns:
        {returns}

    Raises:
        {raises}
        DTypeError: a complex or non-numeric argument.

    Example:
{example}

    References:
        {source}
    """
