"""The gamma distribution (``scipy.stats.gamma``) with shape ``a``: density
``z^(a-1) e^-z / (Gamma(a) scale)``, ``z = (x - loc) / scale >= 0``."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpdf", "pdf", "sf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "a": "the shape (positive).",
         "loc": "the start of the support.", "scale": "the scale (positive)."}
_SRC = "The gamma density; CDF and survival function by ``gammainc``/``gammaincc`` (their derivatives in ``a`` raise)."
_EX = ">>> from fgrad.scipy.stats import gamma\n>>> gamma.{}\n{}"


@with_doc(doc("Log of the gamma density ``xlogy(a - 1, z) - z - gammaln(a) - log(scale)``.", _ARGS, _EX.format('logpdf(fnp.array([-1.0, 0.5, 2.0]), 2.0)', 'Tensor([       -inf, -1.19314718, -1.30685282], dtype=float64)'), _SRC))
def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = inputs("logpdf", x=x, a=a, loc=loc, scale=scale)
    z = (x - loc) / scale
    inside = z >= 0
    zs = safe(inside, z, 1.0)
    return outside(inside, special.xlogy(a - 1, zs) - zs - special.gammaln(a) - fnp.log(scale))


@with_doc(doc("The gamma density.", _ARGS, _EX.format('pdf(fnp.array([0.5, 2.0]), 2.0)', 'Tensor([0.30326533, 0.27067057], dtype=float64)'), _SRC))
def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, a, loc, scale))


@with_doc(doc("The gamma CDF ``gammainc(a, z)``.", _ARGS, _EX.format('cdf(fnp.array([-1.0, 2.0]), 2.0)', 'Tensor([0.        , 0.59399415], dtype=float64)'), _SRC))
def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = inputs("cdf", x=x, a=a, loc=loc, scale=scale)
    z = (x - loc) / scale
    return special.gammainc(a, fnp.maximum(z, 0.0))


@with_doc(doc("The gamma survival function ``gammaincc(a, z)``.", _ARGS, _EX.format('sf(fnp.array([-1.0, 2.0]), 2.0)', 'Tensor([1.        , 0.40600585], dtype=float64)'), _SRC))
def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = inputs("sf", x=x, a=a, loc=loc, scale=scale)
    z = (x - loc) / scale
    return special.gammaincc(a, fnp.maximum(z, 0.0))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
