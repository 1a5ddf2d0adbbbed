"""The Cauchy distribution (``scipy.stats.cauchy``): density ``1 / (pi scale (1 + z^2))``."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpdf", "pdf", "ppf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "loc": "the location.", "scale": "the scale (positive)."}
_SRC = "The Cauchy density, CDF ``1/2 + arctan(z) / pi`` and quantile ``tan(pi (q - 1/2))``."
_EX = ">>> from fgrad.scipy.stats import cauchy\n>>> cauchy.{}\n{}"


@with_doc(doc("Log of the Cauchy density ``-log(pi scale) - log1p(z^2)``.", _ARGS, _EX.format('logpdf(fnp.array([0.0, 1.0]))', 'Tensor([-1.14472989, -1.83787707], dtype=float64)'), _SRC))
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logpdf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    return -math.log(math.pi) - fnp.log(scale) - fnp.log1p(z * z)


@with_doc(doc("The Cauchy density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 1.0]))', 'Tensor([0.31830989, 0.15915494], dtype=float64)'), _SRC))
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, loc, scale))


@with_doc(doc("The Cauchy CDF ``1/2 + arctan((x - loc) / scale) / pi``.", _ARGS, _EX.format('cdf(fnp.array([0.0, 1.0]))', 'Tensor([0.5 , 0.75], dtype=float64)'), _SRC))
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("cdf", x=x, loc=loc, scale=scale)
    return 0.5 + fnp.arctan((x - loc) / scale) / math.pi


@with_doc(doc("The Cauchy quantile ``loc + scale tan(pi (q - 1/2))``.", {"q": "probabilities in ``[0, 1]``.", "loc": _ARGS["loc"], "scale": _ARGS["scale"]}, _EX.format('ppf(fnp.array([0.5, 0.75]))', 'Tensor([0., 1.], dtype=float64)'), _SRC))
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = inputs("ppf", q=q, loc=loc, scale=scale)
    ok = (q > 0) & (q < 1)
    qs = safe(ok, q, 0.5)
    # -1 / tan(pi q) below 1/2 and 1 / tan(pi (1 - q)) above: no digits lost in the tails
    low = -1 / fnp.tan(math.pi * safe(qs <= 0.5, qs, 0.25))
    high = 1 / fnp.tan(math.pi * (1 - safe(qs > 0.5, qs, 0.75)))
    value = outside(ok, loc + scale * fnp.where(qs <= 0.5, low, high), math.nan)
    return fnp.where(q == 0, -math.inf, fnp.where(q == 1, math.inf, value))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
