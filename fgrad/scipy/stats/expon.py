"""The exponential distribution (``scipy.stats.expon``): density ``exp(-(x - loc) / scale) /
scale`` on ``x >= loc``."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpdf", "pdf", "ppf", "sf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "loc": "the start of the support.",
         "scale": "``1 / rate`` (positive)."}
_SRC = "The exponential density and its closed-form CDF and quantile."
_EX = ">>> from fgrad.scipy.stats import expon\n>>> expon.{}\n{}"


@with_doc(doc("Log of the exponential density ``-(x - loc) / scale - log(scale)``.", _ARGS, _EX.format('logpdf(fnp.array([-1.0, 0.0, 2.0]))', 'Tensor([-inf,  -0.,  -2.], dtype=float64)'), _SRC))
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logpdf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    return outside(z >= 0, -safe(z >= 0, z, 0.0) - fnp.log(scale))


@with_doc(doc("The exponential density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 2.0]), scale=2.0)', 'Tensor([0.5       , 0.18393972], dtype=float64)'), _SRC))
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, loc, scale))


@with_doc(doc("The exponential CDF ``1 - exp(-(x - loc) / scale)``.", _ARGS, _EX.format('cdf(fnp.array([-1.0, 1.0]))', 'Tensor([0.        , 0.63212056], dtype=float64)'), _SRC))
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("cdf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    return outside(z >= 0, -fnp.expm1(-safe(z >= 0, z, 0.0)), 0.0)


@with_doc(doc("The exponential survival function ``exp(-(x - loc) / scale)``.", _ARGS, _EX.format('sf(fnp.array([-1.0, 1.0]))', 'Tensor([1.        , 0.36787944], dtype=float64)'), _SRC))
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("sf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    return outside(z >= 0, fnp.exp(-safe(z >= 0, z, 0.0)), 1.0)


@with_doc(doc("The exponential quantile ``loc - scale * log1p(-q)``.", {"q": "probabilities in ``[0, 1]``.", "loc": _ARGS["loc"], "scale": _ARGS["scale"]}, _EX.format('ppf(fnp.array([0.0, 0.5]))', 'Tensor([0.        , 0.69314718], dtype=float64)'), _SRC))
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = inputs("ppf", q=q, loc=loc, scale=scale)
    ok = (q >= 0) & (q <= 1)
    return outside(ok, loc - scale * fnp.log1p(-safe(ok, q, 0.5)), math.nan)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
