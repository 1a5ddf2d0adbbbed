"""The logistic distribution (``scipy.stats.logistic``): CDF ``expit((x - loc) / scale)``."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpdf", "pdf", "ppf", "sf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "loc": "the location.", "scale": "the scale (positive)."}
_SRC = "The logistic density ``e^-z / (scale (1 + e^-z)^2)``; CDF ``expit``, quantile ``logit``."
_EX = ">>> from fgrad.scipy.stats import logistic\n>>> logistic.{}\n{}"


@with_doc(doc("Log of the logistic density ``-|z| - 2 log1p(exp(-|z|)) - log(scale)``.", _ARGS, _EX.format('logpdf(fnp.array([0.0, 800.0]))', 'Tensor([  -1.38629436, -800.        ], dtype=float64)'), _SRC))
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logpdf", x=x, loc=loc, scale=scale)
    z = fnp.abs((x - loc) / scale)
    return -z - 2 * fnp.log1p(fnp.exp(-z)) - fnp.log(scale)


@with_doc(doc("The logistic density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 1.0]))', 'Tensor([0.25      , 0.19661193], dtype=float64)'), _SRC))
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, loc, scale))


@with_doc(doc("The logistic CDF ``expit((x - loc) / scale)``.", _ARGS, _EX.format('cdf(fnp.array([0.0, 2.0]))', 'Tensor([0.5       , 0.88079708], dtype=float64)'), _SRC))
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("cdf", x=x, loc=loc, scale=scale)
    return special.expit((x - loc) / scale)


@with_doc(doc("The logistic survival function ``expit(-(x - loc) / scale)``.", _ARGS, _EX.format('sf(fnp.array([0.0, 2.0]))', 'Tensor([0.5       , 0.11920292], dtype=float64)'), _SRC))
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("sf", x=x, loc=loc, scale=scale)
    return special.expit((loc - x) / scale)


@with_doc(doc("The logistic quantile ``loc + scale * logit(q)``.", {"q": "probabilities in ``[0, 1]``.", "loc": _ARGS["loc"], "scale": _ARGS["scale"]}, _EX.format('ppf(fnp.array([0.5, 0.9]))', 'Tensor([0.        , 2.19722458], dtype=float64)'), _SRC))
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = inputs("ppf", q=q, loc=loc, scale=scale)
    return loc + scale * special.logit(q)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
