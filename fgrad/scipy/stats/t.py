"""Student's t distribution (``scipy.stats.t``) with ``df`` degrees of freedom."""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, with_doc

__all__ = ["logpdf", "pdf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "df": "degrees of freedom (positive).",
         "loc": "the location.", "scale": "the scale (positive)."}
_SRC = "The t density ``Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi) scale) (1 + z^2/df)^(-(df+1)/2)``."
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
