"""The beta distribution (``scipy.stats.beta``) on ``[loc, loc + scale]``."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "a": "first shape (positive).",
         "b": "second shape (positive).", "loc": "the lower end.", "scale": "the width (positive)."}
_SRC = ("The beta density ``z^(a-1) (1-z)^(b-1) / (B(a, b) scale)`` with ``betaln``; the CDF "
        "``betainc(a, b, z)`` and the survival function ``betainc(b, a, 1 - z)`` (their derivatives "
        "in ``a`` and ``b`` raise, as JAX's).")
_EX = ">>> from fgrad.scipy.stats import beta\n>>> beta.{}\n{}"


@with_doc(doc("Log of the beta density.", _ARGS, _EX.format('logpdf(fnp.array([0.25, 0.5, 2.0]), 2.0, 3.0)', 'Tensor([0.52324814, 0.40546511,       -inf], dtype=float64)'), _SRC))
def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = inputs("logpdf", x=x, a=a, b=b, loc=loc, scale=scale)
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    zs = safe(inside, z, 0.5)
    value = special.xlogy(a - 1, zs) + special.xlog1py(b - 1, -zs) - special.betaln(a, b) - fnp.log(scale)
    return outside(inside, value)


@with_doc(doc("The beta density.", _ARGS, _EX.format('pdf(fnp.array([0.25, 0.5]), 2.0, 3.0)', 'Tensor([1.6875, 1.5   ], dtype=float64)'), _SRC))
def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, a, b, loc, scale))


def _log_of_either(p: Any, other: Any) -> Any:
    """``log p`` where ``p = 1 - other``: ``log1p(-other)`` when ``other`` is the small one
    (``log`` of a number near 1 would lose it)."""
    small = other < 0.5
    return fnp.where(small, fnp.log1p(-fnp.where(small, other, 0.0)), fnp.log(fnp.where(small, 1.0, p)))


def _unit(x: Any, loc: Any, scale: Any) -> Any:
    return fnp.clip((x - loc) / scale, 0.0, 1.0)


@with_doc(doc("The beta CDF ``betainc(a, b, z)``.", _ARGS, _EX.format('cdf(fnp.array([-0.5, 0.3, 1.5]), 2.0, 3.0)', 'Tensor([0.    , 0.3483, 1.    ], dtype=float64)'), _SRC))
def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = inputs("cdf", x=x, a=a, b=b, loc=loc, scale=scale)
    return special.betainc(a, b, _unit(x, loc, scale))


@with_doc(doc("Log of the beta CDF.", _ARGS, _EX.format('logcdf(fnp.array([0.3, 1.5]), 2.0, 3.0)', 'Tensor([-1.0546911,  0.       ], dtype=float64)'), _SRC))
def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    low, high = cdf(x, a, b, loc, scale), sf(x, a, b, loc, scale)
    return _log_of_either(low, high)


@with_doc(doc("The beta survival function ``betainc(b, a, 1 - z)``, accurate in the upper tail.", _ARGS, _EX.format('sf(fnp.array([0.3, 0.999]), 2.0, 3.0)', 'Tensor([6.517e-01, 3.997e-09], dtype=float64)'), _SRC))
def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = inputs("sf", x=x, a=a, b=b, loc=loc, scale=scale)
    return special.betainc(b, a, 1.0 - _unit(x, loc, scale))


@with_doc(doc("Log of the beta survival function.", _ARGS, _EX.format('logsf(fnp.array([0.3, 0.999]), 2.0, 3.0)', 'Tensor([ -0.42817095, -19.33772176], dtype=float64)'), _SRC))
def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return _log_of_either(sf(x, a, b, loc, scale), cdf(x, a, b, loc, scale))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
