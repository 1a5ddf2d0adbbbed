"""The uniform distribution (``scipy.stats.uniform``) on ``[loc, loc + scale]``."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpdf", "pdf", "ppf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "loc": "the lower end.", "scale": "the width (positive)."}
_SRC = "The uniform density ``1 / scale`` on ``[loc, loc + scale]``."
_EX = ">>> from fgrad.scipy.stats import uniform\n>>> uniform.{}\n{}"


@with_doc(doc("Log of the uniform density: ``-log(scale)`` on the support.", _ARGS, _EX.format('logpdf(fnp.array([-0.5, 0.5]))', 'Tensor([-inf,   0.], dtype=float64)'), _SRC))
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logpdf", x=x, loc=loc, scale=scale)
    inside = (x >= loc) & (x <= loc + scale)
    return outside(inside, -fnp.log(scale) + 0 * x)


@with_doc(doc("The uniform density.", _ARGS, _EX.format('pdf(fnp.array([-0.5, 0.5]), 0.0, 2.0)', 'Tensor([0. , 0.5], dtype=float64)'), _SRC))
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, loc, scale))


@with_doc(doc("The uniform CDF ``clip((x - loc) / scale, 0, 1)``.", _ARGS, _EX.format('cdf(fnp.array([-1.0, 0.25, 2.0]))', 'Tensor([0.  , 0.25, 1.  ], dtype=float64)'), _SRC))
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("cdf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    return fnp.where(z < 0, 0.0, fnp.where(z > 1, 1.0, z))


@with_doc(doc("The uniform quantile ``loc + q scale``.", {"q": "probabilities in ``[0, 1]``.", "loc": _ARGS["loc"], "scale": _ARGS["scale"]}, _EX.format('ppf(fnp.array([0.0, 0.5]), 1.0, 2.0)', 'Tensor([1., 2.], dtype=float64)'), _SRC))
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = inputs("ppf", q=q, loc=loc, scale=scale)
    ok = (q >= 0) & (q <= 1)
    return outside(ok, loc + safe(ok, q, 0.5) * scale, math.nan)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
