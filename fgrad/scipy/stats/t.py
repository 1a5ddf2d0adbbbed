"""Student's t distribution (``scipy.stats.t``) with ``df`` degrees of freedom."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad import stop_gradient as _stop_gradient
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, with_doc

__all__ = ["cdf", "logpdf", "pdf", "sf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "df": "degrees of freedom (positive).",
         "loc": "the location.", "scale": "the scale (positive)."}
_SRC = ("The t density ``Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi) scale) (1 + z^2/df)^(-(df+1)/2)``; "
        "the CDF by the incomplete beta function (Abramowitz and Stegun 26.7.1, 26.5.27), whose "
        "derivative in ``df`` raises as ``betainc``'s in ``a`` and ``b`` does.")
_EX = ">>> from fgrad.scipy.stats import t\n>>> t.{}\n{}"


@with_doc(doc("Log of Student's t density.", _ARGS, _EX.format('logpdf(fnp.array([0.0, 2.0]), 3.0)', 'Tensor([-1.00088885, -2.69548457], dtype=float64)'), _SRC))
def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = inputs("logpdf", x=x, df=df, loc=loc, scale=scale)
    z = (x - loc) / scale
    half = (df + 1) / 2
    norm = special.gammaln(half) - special.gammaln(df / 2) - 0.5 * fnp.log(df * math.pi) - fnp.log(scale)
    return norm - half * fnp.log1p(z * z / df)


@with_doc(doc("Student's t density.", _ARGS, _EX.format('pdf(fnp.array([0.0, 2.0]), 3.0)', 'Tensor([0.3675526 , 0.06750966], dtype=float64)'), _SRC))
def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, df, loc, scale))


def _cdf(z: Any, df: Any) -> Any:
    """P(T <= z) for the standard t, from the incomplete beta function in two forms: near
    the centre (``|cdf - 1/2| < 1/4``) ``(1 + sign(z) I_u(1/2, df/2)) / 2`` with
    ``u = z^2 / (df + z^2)``, which keeps the digits of a small ``z``; in the tails the
    smaller of cdf and sf directly, ``I_w(df/2, 1/2) / 2`` with ``w = df / (df + z^2)``,
    which does not subtract from 1/2."""
    z2 = z * z
    zero = z == 0
    half_df = df / 2
    frozen = _stop_gradient(z2)
    near = special.betainc(0.5, _stop_gradient(half_df), frozen / (_stop_gradient(df) + frozen)) < 0.5
    # each form on inputs where it is finite, so its discarded derivative is too
    z2_near = fnp.where(near & ~zero, z2, df / 2)
    z2_tail = fnp.where(near, df * 2, z2)
    center = 0.5 * fnp.sign(z) * special.betainc(0.5, half_df, z2_near / (df + z2_near))
    tail = 0.5 * special.betainc(half_df, 0.5, df / (df + z2_tail))
    value = fnp.where(near, 0.5 + center, fnp.where(z < 0, tail, 1.0 - tail))
    # At z = 0 the chain rule through I_u is inf * 0; its derivative there is the
    # density at 0, added as a term whose value is 0 (that form's input is moved off 0)
    density0 = pdf(fnp.zeros_like(z), df)
    return value + fnp.where(zero, density0, 0.0) * (z - _stop_gradient(z))


@with_doc(doc("Student's t CDF.", _ARGS, _EX.format('cdf(fnp.array([-2.0, 0.0, 1.0]), 3.0)', 'Tensor([0.06966298, 0.5       , 0.80449889], dtype=float64)'), _SRC))
def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = inputs("cdf", x=x, df=df, loc=loc, scale=scale)
    return _cdf((x - loc) / scale, df)


@with_doc(doc("Student's t survival function ``1 - cdf``, accurate in the upper tail.", _ARGS, _EX.format('sf(fnp.array([1.0, 30.0]), 3.0)', 'Tensor([1.95501109e-01, 4.06764021e-05], dtype=float64)'), _SRC))
def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = inputs("sf", x=x, df=df, loc=loc, scale=scale)
    return _cdf((loc - x) / scale, df)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
