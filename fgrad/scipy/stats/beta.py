"""The beta distribution (``scipy.stats.beta``) on ``[loc, loc + scale]``."""

from __future__ import annotations

from typing import Any

import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.scipy.stats._common import doc, inputs, outside, safe, with_doc

__all__ = ["logpdf", "pdf"]

_ARGS = {"x": "Tensor, array or Python scalar, real.", "a": "first shape (positive).",
         "b": "second shape (positive).", "loc": "the lower end.", "scale": "the width (positive)."}
_SRC = "The beta density ``z^(a-1) (1-z)^(b-1) / (B(a, b) scale)`` with ``betaln``."
_EX = ">>> from fgrad.scipy.stats import beta\n>>> beta.{}\n{}"


@with_doc(doc("Log of the beta density.", _ARGS, _EX.format('logpdf(fnp.array([0.25, 0.5, 2.0]), 2.0, 3.0)', 'Tensor([0.52324814, 0.40546511,       -inf], dtype=float64)'), _SRC))
def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = inputs("logpdf", x=x, a=a, b=b, loc=loc, scale=scale)
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    zs = safe(inside, z, 0.5)
    value = special.xlogy(a - 1, zs) + special.xlog1py(b - 1, -zs) - special.betaln(a, b) - fnp.log(scale)
    return outside(inside, value)


@with_doc(doc("The beta density.", _ARGS, _EX.format('pdf(fnp.array([0.25, 0.5]), 2.0, 3.0)', 'Tensor([1.6875, 1.5   ], dtype=float64)'), _SRC))
def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return fnp.exp(logpdf(x, a, b, loc, scale))
