"""The Dirichlet distribution (``scipy.stats.dirichlet``) over the simplex."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["logpdf", "pdf"]

_ARGS = {"x": "``(..., k)`` points of the simplex (non-negative, summing to 1 over the last axis).",
         "alpha": "``(k,)`` or ``(..., k)`` concentrations (positive)."}
_SRC = "The Dirichlet density ``prod x_i^(alpha_i - 1) / B(alpha)``, ``log B = sum gammaln(alpha) - gammaln(sum alpha)``."
_EX = ">>> from fgrad.scipy.stats import dirichlet\n>>> dirichlet.{}\n{}"
_RET = "Tensor of the broadcast leading shape (the last axis reduced), floating dtype."


@with_doc(doc("Log of the Dirichlet density; ``-inf`` off the simplex (to 1e-6 in the sum).", _ARGS, _EX.format('logpdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))', 'Tensor(1.5040774, dtype=float64)'), _SRC, returns=_RET))
def logpdf(x: Any, alpha: Any) -> Any:
    x, alpha = inputs("logpdf", x=x, alpha=alpha)
    alpha = fnp.asarray(alpha)
    if x.ndim < 1 or alpha.ndim < 1 or x.shape[-1] != alpha.shape[-1]:
        raise ShapeError(
            f"logpdf: x of shape {tuple(x.shape)} and alpha of shape {tuple(alpha.shape)} "
            "must have the same length k along their last axis"
        )
    inside = fnp.all(x >= 0, axis=-1) & (fnp.abs(fnp.sum(x, axis=-1) - 1) < 1e-6)
    xs = safe(x >= 0, x, 1.0)
    lognorm = fnp.sum(special.gammaln(alpha), axis=-1) - special.gammaln(fnp.sum(alpha, axis=-1))
    return outside(inside, fnp.sum(special.xlogy(alpha - 1, xs), axis=-1) - lognorm)


@with_doc(doc("The Dirichlet density.", _ARGS, _EX.format('pdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))', 'Tensor(4.5, dtype=float64)'), _SRC, returns=_RET))
def pdf(x: Any, alpha: Any) -> Any:
    return fnp.exp(logpdf(x, alpha))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
