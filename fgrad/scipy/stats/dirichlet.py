"""The Dirichlet distribution (``scipy.stats.dirichlet``) over the simplex."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["logpdf", "pdf"]

_ARGS = {"x": "``(k,)`` or ``(k, ...)`` points of the simplex, the components along the FIRST "
              "axis (as scipy and JAX); ``(k - 1, ...)`` gives all but the last component, "
              "which is ``1 - sum``. Non-negative, summing to 1 over axis 0.",
         "alpha": "``(k,)`` concentrations (positive)."}
_SRC = "The Dirichlet density ``prod x_i^(alpha_i - 1) / B(alpha)``, ``log B = sum gammaln(alpha) - gammaln(sum alpha)``; scipy.stats.dirichlet's argument convention."
_EX = ">>> from fgrad.scipy.stats import dirichlet\n>>> dirichlet.{}\n{}"
_RET = "Tensor of ``x.shape[1:]`` (the component axis 0 reduced), floating dtype."
_RAISES = "ShapeError: ``alpha`` is not 1-D, or ``x.shape[0]`` is neither ``k`` nor ``k - 1``."


@with_doc(doc("Log of the Dirichlet density; ``-inf`` off the simplex (to 1e-6 in the sum).", _ARGS, _EX.format('logpdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))', 'Tensor(1.5040774, dtype=float64)') + "\n>>> # two points as the columns of a (k, N) array\n>>> dirichlet.logpdf(fnp.array([[0.2, 0.6], [0.3, 0.1], [0.5, 0.3]]), fnp.array([1.0, 2.0, 3.0]))\nTensor([ 1.5040774 , -0.61618614], dtype=float64)", _SRC, returns=_RET, raises=_RAISES))
def logpdf(x: Any, alpha: Any) -> Any:
    x, alpha = inputs("logpdf", x=x, alpha=alpha)
    alpha = fnp.asarray(alpha)
    if alpha.ndim != 1 or x.ndim < 1 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ShapeError(
            f"logpdf: alpha must be 1-D (k,) and x (k, ...) or (k - 1, ...), the components "
            f"along the first axis as scipy.stats.dirichlet; got x of shape {tuple(x.shape)} "
            f"and alpha of shape {tuple(alpha.shape)} (for points along the last axis, pass x.T)"
        )
    if x.shape[0] != alpha.shape[0]:
        x = fnp.concatenate([x, 1 - fnp.sum(x, axis=0, keepdims=True)], axis=0)
    a = fnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    inside = fnp.all(x >= 0, axis=0) & (fnp.abs(fnp.sum(x, axis=0) - 1) < 1e-6)
    xs = safe(x >= 0, x, 1.0)
    lognorm = fnp.sum(special.gammaln(alpha)) - special.gammaln(fnp.sum(alpha))
    return outside(inside, fnp.sum(special.xlogy(a - 1, xs), axis=0) - lognorm)


@with_doc(doc("The Dirichlet density.", _ARGS, _EX.format('pdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))', 'Tensor(4.5, dtype=float64)'), _SRC, returns=_RET, raises=_RAISES))
def pdf(x: Any, alpha: Any) -> Any:
    return fnp.exp(logpdf(x, alpha))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
