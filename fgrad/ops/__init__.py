"""The op registry: every primitive, declared once per family module."""

from fgrad.core.op import REGISTRY, Check, Op
from fgrad.ops import conv, elementwise, fft, indexing, linalg, linalg_eig, linalg_extra, nn, random, reduction, shape, sorting, special  # noqa: F401  (registers the ops)
from fgrad.ops import traits  # noqa: F401,E402  (sets the ops' traits)

__all__ = ["REGISTRY", "Check", "Op"]
