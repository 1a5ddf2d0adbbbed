"""The op registry: every primitive, declared once per family module."""

from fgrad.core.op import REGISTRY, Check, Op
from fgrad.ops import conv, elementwise, indexing, linalg, nn, random, reduction, shape  # noqa: F401  (registers the ops)

__all__ = ["REGISTRY", "Check", "Op"]
