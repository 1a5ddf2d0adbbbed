"""The Bernoulli distribution (``scipy.stats.bernoulli``) with success probability ``p``."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, with_doc

__all__ = ["cdf", "logpmf", "pmf"]

_ARGS = {"k": "Tensor, array or Python scalar, 0 or 1 (other values have mass 0).",
         "p": "the probability of 1, in ``[0, 1]``.", "loc": "the shift of the support."}
_SRC = "The Bernoulli mass ``p^k (1 - p)^(1 - k)`` as ``xlogy(k, p) + xlog1py(1 - k, -p)``."
_EX = ">>> from fgrad.scipy.stats import bernoulli\n>>> bernoulli.{}\n{}"


@with_doc(doc("Log of the Bernoulli mass.", _ARGS, _EX.format('logpmf(fnp.array([0, 1, 2]), 0.25)', 'Tensor([-0.28768207, -1.38629436,        -inf], dtype=float64)'), _SRC))
def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = inputs("logpmf", k=k, p=p, loc=loc)
    k = k - loc
    inside = (k == 0) | (k == 1)
    ks = fnp.where(inside, k, 0.0)
    return outside(inside, special.xlogy(ks, p) + special.xlog1py(1 - ks, -p))


@with_doc(doc("The Bernoulli mass.", _ARGS, _EX.format('pmf(fnp.array([0, 1]), 0.25)', 'Tensor([0.75, 0.25], dtype=float64)'), _SRC))
def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return fnp.exp(logpmf(k, p, loc))


@with_doc(doc("The Bernoulli CDF: 0 below 0, ``1 - p`` on ``[0, 1)``, 1 from 1.", _ARGS, _EX.format('cdf(fnp.array([-1.0, 0.5, 1.0]), 0.25)', 'Tensor([0.  , 0.75, 1.  ], dtype=float64)'), _SRC))
def cdf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = inputs("cdf", k=k, p=p, loc=loc)
    k = k - loc
    return fnp.where(k < 0, 0.0, fnp.where(k < 1, 1 - p, 1.0 + 0 * p))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
