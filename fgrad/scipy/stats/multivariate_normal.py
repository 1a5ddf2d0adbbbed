"""The multivariate normal distribution (``scipy.stats.multivariate_normal``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args
from fgrad.errors import ConcretizationError, ShapeError
from fgrad.scipy import linalg
from fgrad.scipy.stats._common import LOG_2PI, doc, inputs, with_doc

__all__ = ["logpdf", "pdf"]

_ARGS = {"x": "``(..., d)`` points.", "mean": "``(d,)`` (or ``(..., d)``) mean.",
         "cov": "``(d, d)`` (or ``(..., d, d)``) symmetric positive-definite covariance "
                "(positive semi-definite with ``allow_singular=True``), or a scalar (times the identity).",
         "allow_singular": "False (default): ``cov`` must be positive definite (its Cholesky "
                           "factor is used). True: a singular ``cov`` is allowed, as scipy's: the "
                           "density is over the span of ``cov``, from its eigendecomposition "
                           "(eigenvalues at most ``1e6 eps max|s|`` count as zero: the "
                           "pseudo-inverse and the log pseudo-determinant over the non-zero "
                           "spectrum, the rank in place of ``d``), and ``-inf`` off that span. "
                           "(JAX accepts the argument only as None.)"}
_SRC = ("The Gaussian log-density through the Cholesky factor ``cov = L L^T``: "
        "``-|L^-1 (x - mean)|^2 / 2 - sum log diag L - d log(2 pi) / 2``; with "
        "``allow_singular=True``, scipy.stats.multivariate_normal's eigh-based form.")
_EX = ">>> from fgrad.scipy.stats import multivariate_normal\n>>> multivariate_normal.{}\n{}"
_RET = "Tensor of the broadcast leading shape of ``x`` and ``mean`` (the last axis reduced)."
_RAISES = ("ShapeError: ``x``, ``mean`` and ``cov`` do not share ``d``, or do not broadcast.\n"
           "        numpy.linalg.LinAlgError: (a ValueError) ``cov`` is not positive definite "
           "and ``allow_singular`` is False (under ``jit``: when the compiled function runs); "
           "scipy raises the same.\n"
           "        ValueError: ``allow_singular=True`` and ``cov`` has an eigenvalue below "
           "``-1e6 eps max|s|`` (not positive semi-definite; under ``jit`` the result is NaN instead).")
_SINGULAR_EX = """
>>> # a singular covariance: the density on the line x0 = x1, -inf off it (as scipy)
>>> multivariate_normal.logpdf(fnp.array([[1.0, 1.0], [1.0, 0.0]]), fnp.zeros(2), fnp.ones((2, 2)), allow_singular=True)
Tensor([-1.76551212,        -inf], dtype=float64)"""


def _shapes(x: Any, mean: Any, cov: Any) -> tuple:
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
    return x, mean, cov, d


def _singular_logpdf(diff: Any, cov: Any) -> Any:
    """scipy's log-density for a positive semi-definite ``cov`` (``_PSD``): eigenvalues
    ``s <= 1e6 eps max|s|`` are zero; the rest give the pseudo-inverse, the log
    pseudo-determinant and the rank; points with a component in the null space beyond
    ``1e3`` times that cutoff are off the support (``-inf``)."""
    s, u = fnp.linalg.eigh(cov)
    cutoff = 1e6 * float(np.finfo(np.dtype(s.dtype)).eps) * fnp.max(fnp.abs(s), axis=-1, keepdims=True)
    try:
        negative = bool(fnp.any(fnp.min(s, axis=-1, keepdims=True) < -cutoff))
    except ConcretizationError:  # traced by jit: NaN below instead of an error
        negative = False
    if negative:
        raise ValueError("logpdf: cov must be symmetric positive semi-definite (an eigenvalue "
                         "is below -1e6 eps max|s|), with allow_singular=True")
    keep = s > cutoff
    s_kept = fnp.where(keep, s, 1.0)
    rank = fnp.sum(keep, axis=-1)
    log_pdet = fnp.sum(fnp.where(keep, fnp.log(s_kept), 0.0), axis=-1)
    proj = fnp.sum(u * diff[..., :, None], axis=-2)  # u^T (x - mean), (..., d)
    maha = fnp.sum(fnp.where(keep, proj * proj / s_kept, 0.0), axis=-1)
    residual = fnp.sqrt(fnp.sum(fnp.where(keep, 0.0, proj * proj), axis=-1))
    psd = fnp.all(s >= -cutoff, axis=-1)
    out = -0.5 * (rank * LOG_2PI + log_pdet + maha)
    return fnp.where(psd, fnp.where(residual < 1e3 * cutoff[..., 0], out, -math.inf), math.nan)


@with_doc(doc("Log of the multivariate normal density.", _ARGS, _EX.format('logpdf(fnp.array([0.5, -1.0]), fnp.zeros(2), fnp.array([[2.0, 0.5], [0.5, 1.0]]))', 'Tensor(-2.90339925, dtype=float64)') + _SINGULAR_EX, _SRC, returns=_RET, raises=_RAISES))
def logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    allow_singular = _args.flag(allow_singular, "logpdf", "allow_singular")
    x, mean, cov, d = _shapes(x, mean, cov)
    diff = x - mean
    if allow_singular:
        return _singular_logpdf(diff, cov)
    try:
        low, _ = linalg.cho_factor(cov, lower=True)
    except np.linalg.LinAlgError as e:
        raise np.linalg.LinAlgError(
            f"logpdf: cov is not positive definite ({e}); for a singular covariance pass "
            "allow_singular=True (as scipy)") from None
    z = linalg.solve_triangular(low, diff[..., None], lower=True)[..., 0]
    half_logdet = fnp.sum(fnp.log(fnp.diagonal(low, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * fnp.sum(z * z, axis=-1) - half_logdet - 0.5 * d * LOG_2PI


@with_doc(doc("The multivariate normal density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 0.0]), fnp.zeros(2), fnp.eye(2))', 'Tensor(0.15915494, dtype=float64)'), _SRC, returns=_RET, raises=_RAISES))
def pdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    return fnp.exp(logpdf(x, mean, cov, allow_singular))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
