"""The normal distribution (``scipy.stats.norm``): ``loc`` the mean, ``scale`` the standard
deviation."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import LOG_2PI, doc, inputs, with_doc

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_ARGS = {
    "x": "Tensor, array or Python scalar, real.",
    "loc": "the mean, broadcastable with ``x``.",
    "scale": "the standard deviation (positive), broadcastable with ``x``.",
}
_SRC = "The normal density and ``ndtr``/``log_ndtr``/``ndtri`` of ``fgrad.scipy.special``."


@with_doc(doc("Log of the normal density ``-((x - loc) / scale)**2 / 2 - log(scale) - log(2 pi) / 2``.", _ARGS,
              ">>> from fgrad.scipy.stats import norm\n>>> norm.logpdf(fnp.array([0.0, 1.0]), 0.0, 2.0)\nTensor([-1.61208571, -1.73708571], dtype=float64)", _SRC))
def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logpdf", x=x, loc=loc, scale=scale)
    z = (x - loc) / scale
    return -0.5 * z * z - fnp.log(scale) - 0.5 * LOG_2PI


@with_doc(doc("The normal density.", _ARGS,
              ">>> from fgrad.scipy.stats import norm\n>>> norm.pdf(fnp.array([0.0, 1.0]))\nTensor([0.39894228, 0.24197072], dtype=float64)", _SRC))
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, loc, scale))


@with_doc(doc("The normal CDF ``ndtr((x - loc) / scale)``.", _ARGS,
              ">>> from fgrad.scipy.stats import norm\n>>> norm.cdf(fnp.array([0.0, 1.96, -30.0]))\nTensor([5.00000000e-001, 9.75002105e-001, 4.90671393e-198], dtype=float64)", _SRC))
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("cdf", x=x, loc=loc, scale=scale)
    return special.ndtr((x - loc) / scale)


@with_doc(doc("Log of the normal CDF, accurate in both tails (``log_ndtr``).", _ARGS,
              ">>> from fgrad.scipy.stats import norm\n>>> norm.logcdf(fnp.array([-40.0, 0.0]))\nTensor([-8.04608442e+02, -6.93147181e-01], dtype=float64)", _SRC))
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logcdf", x=x, loc=loc, scale=scale)
    return special.log_ndtr((x - loc) / scale)


@with_doc(doc("The normal survival function ``1 - cdf``, accurate in the upper tail.", _ARGS,
              ">>> from fgrad.scipy.stats import norm\n>>> norm.sf(fnp.array([0.0, 30.0]))\nTensor([5.00000000e-001, 4.90671393e-198], dtype=float64)", _SRC))
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("sf", x=x, loc=loc, scale=scale)
    return special.ndtr((loc - x) / scale)


@with_doc(doc("Log of the normal survival function.", _ARGS,
              ">>> from fgrad.scipy.stats import norm\n>>> norm.logsf(fnp.array([0.0, 40.0]))\nTensor([-6.93147181e-01, -8.04608442e+02], dtype=float64)", _SRC))
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = inputs("logsf", x=x, loc=loc, scale=scale)
    return special.log_ndtr((loc - x) / scale)


@with_doc(doc("The normal quantile ``loc + scale * ndtri(q)``.",
              {"q": "probabilities in ``[0, 1]``.", "loc": _ARGS["loc"], "scale": _ARGS["scale"]},
              ">>> from fgrad.scipy.stats import norm\n>>> norm.ppf(fnp.array([0.5, 0.975]), 1.0, 2.0)\nTensor([1.        , 4.91992797], dtype=float64)", _SRC))
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = inputs("ppf", q=q, loc=loc, scale=scale)
    return loc + scale * special.ndtri(q)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
