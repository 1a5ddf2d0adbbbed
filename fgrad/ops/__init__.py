"""The op registry: every primitive, declared once per family module."""

from fgrad.core.op import REGISTRY, Check, Op
from fgrad.ops import conv, control, elementwise, fft, indexing, linalg, nn, random, reduction, shape, sorting  # noqa: F401  (registers the ops)

__all__ = ["REGISTRY", "Check", "Op"]
