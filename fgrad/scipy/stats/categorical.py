"""The categorical distribution over ``0, ..., n - 1`` with probabilities ``p`` along the
last axis (scipy has it only as ``multinomial`` with one trial)."""

from __future__ import annotations

from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad.errors import DTypeError, ShapeError
from fgrad.scipy.stats._common import doc, inputs, outside, with_doc

__all__ = ["logpmf", "pmf"]

_ARGS = {"k": "``(...)`` integer Tensor of categories (outside ``[0, n)`` the mass is 0).",
         "p": "``(..., n)`` probabilities along the last axis (summing to 1)."}
_SRC = "``log p[k]`` by ``take_along_axis`` (the derivative reaches only the chosen entry)."
_EX = ">>> from fgrad.scipy.stats import categorical\n>>> categorical.{}\n{}"
_RET = "Tensor of the broadcast shape of ``k`` and ``p``'s leading axes, floating dtype of ``p``."


@with_doc(doc("Log of the categorical mass ``log p[k]``.", _ARGS, _EX.format('logpmf(fnp.array([0, 2]), fnp.array([0.2, 0.3, 0.5]))', 'Tensor([-1.60943791, -0.69314718], dtype=float64)'), _SRC, returns=_RET))
def logpmf(k: Any, p: Any) -> Any:
    k, p = inputs("logpmf", k=k, p=p)
    p = fnp.asarray(p)
    if np.dtype(k.dtype).kind not in "iu":
        raise DTypeError(f"logpmf: k must be an integer Tensor of categories, got dtype {k.dtype}")
    if p.ndim < 1:
        raise ShapeError(f"logpmf: p must have the categories along its last axis, got shape {tuple(p.shape)}")
    n = p.shape[-1]
    lead = np.broadcast_shapes(tuple(k.shape), tuple(p.shape[:-1]))
    inside = (k >= 0) & (k < n)
    idx = fnp.broadcast_to(fnp.where(inside, k, 0), lead)[..., None]
    chosen = fnp.take_along_axis(fnp.broadcast_to(p, lead + (n,)), idx, axis=-1)[..., 0]
    return outside(inside, fnp.log(chosen))


@with_doc(doc("The categorical mass ``p[k]``.", _ARGS, _EX.format('pmf(fnp.array([0, 2]), fnp.array([0.2, 0.3, 0.5]))', 'Tensor([0.2, 0.5], dtype=float64)'), _SRC, returns=_RET))
def pmf(k: Any, p: Any) -> Any:
    return fnp.exp(logpmf(k, p))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
