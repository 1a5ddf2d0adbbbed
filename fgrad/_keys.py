"""Hashable keys for static data that ``==`` would confuse.

Traces are cached by their static arguments and by the static data of pytree nodes, and
Python's equality makes ``1 == 1.0 == True`` and ``0.0 == -0.0``: a cache keyed by the
values themselves would replay a trace made for another type or sign. Used by
:class:`fgrad.tree.TreeDef` equality and by ``jit``'s caches.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

__all__ = ["exact_key"]

# Tuple elements exact_key keys itself (numpy's float64 subclasses float); others by type.
_KEYED = (float, complex, np.inexact, tuple)


def exact_key(x: Any) -> Any:
    """A hashable key that tells apart what ``==`` confuses: ``0.0`` and ``-0.0`` (keyed by
    their bits, so equal NaNs also match; numpy scalars too, with their type). Tuples are
    keyed element by element, each with its type: ``(True,)`` and ``(1,)`` (static
    arguments ``True`` and ``1``) trace apart. Anything else is its own key.

    Example:
        >>> exact_key((1,)) == exact_key((True,)), exact_key(0.0) == exact_key(-0.0)
        (False, False)
        >>> exact_key(float("nan")) == exact_key(float("nan"))
        True
    """
    if type(x) is float:
        return (float, struct.pack("<d", x))
    if type(x) is complex:
        return (complex, struct.pack("<dd", x.real, x.imag))
    if isinstance(x, np.inexact):
        return (type(x), x.tobytes())
    if type(x) is tuple:
        return tuple(exact_key(v) if isinstance(v, _KEYED) else (type(v), v) for v in x)
    return x
