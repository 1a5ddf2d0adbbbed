"""Elementwise functions under numpy's names (most are the registry's ops themselves)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad.ops.elementwise import (  # noqa: F401  (re-exported)
    add,
    conj,
    cos,
    divide,
    exp,
    log,
    multiply,
    negative,
    real,
    sin,
    sqrt,
    stop_gradient,
    subtract,
    tanh,
)
from fgrad.ops.elementwise import astype as _astype

true_divide = divide
conjugate = conj


def astype(x: Any, dtype: Any) -> Any:
    """Cast ``x`` to ``dtype`` (differentiable between floating dtypes).

    Example:
        >>> fnp.astype(fnp.array([1.5]), "float32")
        Tensor([1.5], dtype=float32)
    """
    return _astype(x, dtype=np.dtype(dtype))
