"""The multivariate normal distribution (``scipy.stats.multivariate_normal``)."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.scipy import linalg
from fgrad.scipy.stats._common import LOG_2PI, doc, inputs, with_doc

__all__ = ["logpdf", "pdf"]

_ARGS = {"x": "``(..., d)`` points.", "mean": "``(d,)`` (or ``(..., d)``) mean.",
         "cov": "``(d, d)`` (or ``(..., d, d)``) symmetric positive-definite covariance."}
_SRC = ("The Gaussian log-density through the Cholesky factor ``cov = L L^T``: "
        "``-|L^-1 (x - mean)|^2 / 2 - sum log diag L - d log(2 pi) / 2``.")
_EX = ">>> from fgrad.scipy.stats import multivariate_normal\n>>> multivariate_normal.{}\n{}"
_RET = "Tensor of the broadcast leading shape of ``x`` and ``mean`` (the last axis reduced)."


@with_doc(doc("Log of the multivariate normal density.", _ARGS, _EX.format('logpdf(fnp.array([0.5, -1.0]), fnp.zeros(2), fnp.array([[2.0, 0.5], [0.5, 1.0]]))', 'Tensor(-2.90339925, dtype=float64)'), _SRC, returns=_RET))
def logpdf(x: Any, mean: Any = None, cov: Any = 1) -> Any:
    x, = inputs("logpdf", x=x)
    d = x.shape[-1] if x.ndim else 1
    mean = fnp.zeros(d, dtype=x.dtype if x.dtype.kind == "f" else "float64") if mean is None else inputs("logpdf", mean=mean)[0]
    cov = inputs("logpdf", cov=cov)[0]
    if cov.ndim == 0:
        cov = cov * fnp.eye(d)
    if x.ndim < 1 or mean.ndim < 1 or cov.ndim < 2 or not (x.shape[-1] == mean.shape[-1] == cov.shape[-1] == cov.shape[-2]):
        raise ShapeError(
            f"logpdf: x {tuple(x.shape)}, mean {tuple(mean.shape)} and cov {tuple(cov.shape)} "
            "must share the dimension d: x (..., d), mean (..., d), cov (..., d, d)"
        )
    low, _ = linalg.cho_factor(cov, lower=True)
    diff = x - mean
    z = linalg.solve_triangular(low, diff[..., None], lower=True)[..., 0]
    half_logdet = fnp.sum(fnp.log(fnp.diagonal(low, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * fnp.sum(z * z, axis=-1) - half_logdet - 0.5 * d * LOG_2PI


@with_doc(doc("The multivariate normal density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 0.0]), fnp.zeros(2), fnp.eye(2))', 'Tensor(0.15915494, dtype=float64)'), _SRC, returns=_RET))
def pdf(x: Any, mean: Any = None, cov: Any = 1) -> Any:
    return fnp.exp(logpdf(x, mean, cov))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
