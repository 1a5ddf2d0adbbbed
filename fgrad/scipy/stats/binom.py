"""The binomial distribution (``scipy.stats.binom``): ``n`` trials, success probability ``p``."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["logpmf", "pmf"]

_ARGS = {"k": "Tensor, array or Python scalar of counts.", "n": "the number of trials.",
         "p": "the success probability, in ``[0, 1]``.", "loc": "the shift of the support."}
_SRC = ("The binomial mass ``C(n, k) p^k (1-p)^(n-k)``, ``log C(n, k) = gammaln(n + 1) - "
        "gammaln(k + 1) - gammaln(n - k + 1)``.")
_EX = ">>> from fgrad.scipy.stats import binom\n>>> binom.{}\n{}"


@with_doc(doc("Log of the binomial mass.", _ARGS, _EX.format('logpmf(fnp.array([0, 3, 11]), 10, 0.3)', 'Tensor([-3.56674944, -1.32115128,        -inf], dtype=float64)'), _SRC))
def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = inputs("logpmf", k=k, n=n, p=p, loc=loc)
    k = k - loc
    inside = (k >= 0) & (k <= n) & (k == fnp.floor(k))
    ks = safe(inside, k, 0.0)
    comb = special.gammaln(n + 1) - special.gammaln(ks + 1) - special.gammaln(n - ks + 1)
    return outside(inside, comb + special.xlogy(ks, p) + special.xlog1py(n - ks, -p))


@with_doc(doc("The binomial mass.", _ARGS, _EX.format('pmf(fnp.array([0, 3]), 10, 0.3)', 'Tensor([0.02824752, 0.26682793], dtype=float64)'), _SRC))
def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return fnp.exp(logpmf(k, n, p, loc))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
