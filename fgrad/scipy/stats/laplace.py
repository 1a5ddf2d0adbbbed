"""The Laplace distribution (``scipy.stats.laplace``): density ``exp(-|x - loc| / scale) /
(2 scale)``."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpdf", "pdf", "ppf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "loc": "the location.", "scale": "the scale (positive)."}
_SRC = "The Laplace density and its closed-form CDF and quantile."
_EX = ">>> from fgrad.scipy.stats import laplace\n>>> laplace.{}\n{}"


@with_doc(doc("Log of the Laplace density ``-|x - loc| / scale - log(2 scale)``.", _ARGS, _EX.format('logpdf(fnp.array([0.0, 2.0]))', 'Tensor([-0.69314718, -2.69314718], dtype=float64)'), _SRC))
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logpdf", x=x, loc=loc, scale=scale)
    return -fnp.abs(x - loc) / scale - fnp.log(2 * scale)


@with_doc(doc("The Laplace density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 2.0]))', 'Tensor([0.5       , 0.06766764], dtype=float64)'), _SRC))
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, loc, scale))


@with_doc(doc("The Laplace CDF.", _ARGS, _EX.format('cdf(fnp.array([-1.0, 0.0, 1.0]))', 'Tensor([0.18393972, 0.5       , 0.81606028], dtype=float64)'), _SRC))
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("cdf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    half = 0.5 * fnp.exp(-fnp.abs(z))
    return fnp.where(z < 0, half, 1 - half)


@with_doc(doc("The Laplace quantile.", {"q": "probabilities in ``[0, 1]``.", "loc": _ARGS["loc"], "scale": _ARGS["scale"]}, _EX.format('ppf(fnp.array([0.25, 0.5, 0.75]))', 'Tensor([-0.69314718,  0.        ,  0.69314718], dtype=float64)'), _SRC))
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = inputs("ppf", q=q, loc=loc, scale=scale)
    ok = (q >= 0) & (q <= 1)
    qs = safe(ok, q, 0.5)
    low = fnp.log(2 * safe(qs <= 0.5, qs, 0.25))
    high = -fnp.log(2 * (1 - safe(qs > 0.5, qs, 0.75)))
    return outside(ok, loc + scale * fnp.where(qs <= 0.5, low, high), math.nan)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
