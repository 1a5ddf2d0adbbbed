"""dtypes and type promotion.

Promotion follows numpy 2 (NEP 50): Python scalars are *weak*, so ``float32 * 2.0`` stays
float32 and ``int32 + 1`` stays int32, as in JAX. Arrays keep numpy's defaults (Python floats
become float64 when a Tensor is made from them; no silent downcast).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "bool_",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "result_type",
    "is_floating",
    "is_complex",
    "is_inexact",
    "is_integer",
    "is_bool",
]

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

_PY_SCALARS = (bool, int, float, complex)


# A Python number of each dtype kind: what a weakly typed traced scalar (jit's Python float
# arguments) stands for in promotion, and where its Python arithmetic is typed (1, so that
# no stand-in divides by zero).
WEAK_STAND_IN = {"f": 1.0, "c": 1 + 0j, "i": 1, "u": 1, "b": True}


def _dtype_or_weak(x: Any) -> Any:
    if type(x) in _PY_SCALARS:
        return x  # numpy 2 treats a Python scalar in result_type as weak
    if getattr(x, "weak", False):
        return WEAK_STAND_IN[np.dtype(x.dtype).kind]
    if isinstance(x, (type, np.dtype, str)):
        return np.dtype(x)
    return np.dtype(x.dtype)


def result_type(*args: Any) -> np.dtype:
    """The dtype numpy 2 gives an op over ``args`` (Tensors, arrays, dtypes, Python scalars).

    Example:
        >>> result_type(np.float32, 2.0)
        dtype('float32')
        >>> result_type(np.int32, np.float32)
        dtype('float64')
    """
    return np.result_type(*[_dtype_or_weak(a) for a in args])


# dtype.kind checks: np.issubdtype costs ~0.5 us and these run once per traced op.
def is_floating(dtype: Any) -> bool:
    """True for real floating dtypes."""
    return np.dtype(dtype).kind == "f"


def is_complex(dtype: Any) -> bool:
    """True for complex dtypes."""
    return np.dtype(dtype).kind == "c"


def is_inexact(dtype: Any) -> bool:
    """True for real floating and complex dtypes: those that can carry derivatives."""
    return np.dtype(dtype).kind in "fc"


def is_integer(dtype: Any) -> bool:
    """True for signed and unsigned integer dtypes (not bool)."""
    return np.dtype(dtype).kind in "iu"


def is_bool(dtype: Any) -> bool:
    """True for the bool dtype."""
    return np.dtype(dtype) == bool_
