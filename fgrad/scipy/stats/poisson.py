"""The Poisson distribution (``scipy.stats.poisson``) with mean ``mu``."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["cdf", "logpmf", "pmf"]

_ARGS = {"k": "Tensor, array or Python scalar of counts (real; non-integers have mass 0).",
         "mu": "the mean (positive).", "loc": "the shift of the support."}
_SRC = "The Poisson mass ``mu^k e^-mu / k!``; the CDF ``gammaincc(floor(k) + 1, mu)``."
_EX = ">>> from fgrad.scipy.stats import poisson\n>>> poisson.{}\n{}"


@with_doc(doc("Log of the Poisson mass ``xlogy(k, mu) - mu - gammaln(k + 1)``.", _ARGS, _EX.format('logpmf(fnp.array([0, 2, -1]), 1.5)', 'Tensor([-1.5       , -1.38221696,        -inf], dtype=float64)'), _SRC))
def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = inputs("logpmf", k=k, mu=mu, loc=loc)
    k = k - loc
    inside = (k >= 0) & (k == fnp.floor(k))
    ks = safe(inside, k, 0.0)
    return outside(inside, special.xlogy(ks, mu) - mu - special.gammaln(ks + 1))


@with_doc(doc("The Poisson mass.", _ARGS, _EX.format('pmf(fnp.array([0, 2]), 1.5)', 'Tensor([0.22313016, 0.25102143], dtype=float64)'), _SRC))
def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return fnp.exp(logpmf(k, mu, loc))


@with_doc(doc("The Poisson CDF ``gammaincc(floor(k) + 1, mu)``.", _ARGS, _EX.format('cdf(fnp.array([-1.0, 0.0, 2.5]), 1.5)', 'Tensor([0.        , 0.22313016, 0.80884683], dtype=float64)'), _SRC))
def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = inputs("cdf", k=k, mu=mu, loc=loc)
    k = fnp.floor(k - loc)
    return outside(k >= 0, special.gammaincc(safe(k >= 0, k, 0.0) + 1, mu), 0.0)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
