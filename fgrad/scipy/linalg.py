"""``fgrad.scipy.linalg``: scipy's linear-algebra functions, differentiable and batched.

Every function acts on the last two axes and broadcasts over leading (batch) axes, as
``jax.scipy.linalg`` does. Triangular and Cholesky solves are compositions of fgrad's
``solve``, ``cholesky`` and ``tril``/``triu`` ops (so their derivatives are those ops');
``expm`` and ``sqrtm`` are ops of their own (``fgrad/ops/linalg_extra.py``) whose
derivatives are Frechet derivatives. ``overwrite_*`` and ``check_finite`` are accepted
for scipy's signatures and ignored (Tensors are immutable; nothing is checked for
finiteness, as under ``jit`` nothing could be).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad._args import names_errors as _named
from fgrad.errors import DTypeError, ShapeError
from fgrad.numpy._linalg_top import _arr
from fgrad.ops import linalg as _la
from fgrad.ops import linalg_extra as _lx
from fgrad.ops.elementwise import add, astype, multiply, subtract
from fgrad.ops.shape import concatenate, pad, reshape
from fgrad.tensor import as_tensor

__all__ = ["block_diag", "cho_factor", "cho_solve", "expm", "solve_triangular", "sqrtm"]


def _matrix(a: Any, fn: str, arg: str) -> Any:
    a = as_tensor(_arr(a, fn, arg), fn, arg)
    if dtypes.is_complex(a.dtype):
        raise DTypeError(f"{fn}: {arg} must be real, got {_args.describe(a)}; complex input is not supported")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(
            f"{fn}: {arg} must be a square matrix or a stack of them, shape (..., n, n); got "
            f"shape {tuple(a.shape)}"
        )
    if a.dtype.kind in "biu":
        a = astype(a, dtype=np.dtype(np.float64))
    return a


def _rhs(b: Any, a: Any, fn: str) -> tuple[Any, bool]:
    """``b`` as a stack of matrices matching ``a``, and whether it was a vector (stack)."""
    b = as_tensor(_arr(b, fn, "b"), fn, "b")
    if dtypes.is_complex(b.dtype):
        raise DTypeError(f"{fn}: b must be real, got {_args.describe(b)}")
    n = a.shape[-1]
    vector = b.ndim == 1 or b.ndim == a.ndim - 1
    if b.ndim == 0 or b.shape[-1 if vector else -2] != n:
        raise ShapeError(
            f"{fn}: b of shape {tuple(b.shape)} does not match a of shape {tuple(a.shape)}; "
            f"pass b of shape (..., {n}) or (..., {n}, k)"
        )
    if vector:
        b = reshape(b, shape=tuple(b.shape) + (1,))
    return b, vector


def _tri(a: Any, lower: bool, unit_diagonal: bool) -> Any:
    n = a.shape[-1]
    t = _la.tril(a, k=0) if lower else _la.tril(_la._mT(a), k=0)
    if not lower:
        t = _la._mT(t)
    if unit_diagonal:
        eye = astype(np.eye(n), dtype=np.dtype(a.dtype))
        t = add(subtract(t, multiply(a, eye)), eye)
    return t


_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(
    a: Any,
    b: Any,
    trans: Any = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    """Solve ``a x = b`` for ``x``, reading only one triangle of ``a``.

    As ``scipy.linalg.solve_triangular``: the other triangle of ``a`` is ignored (and
    gets a zero derivative), and with ``unit_diagonal`` the diagonal too (read as ones).
    Batched over leading axes of ``a`` and ``b``.

    Args:
        a: ``(..., n, n)`` real Tensor.
        b: ``(..., n)`` or ``(..., n, k)`` real Tensor.
        trans: 0 or ``"N"`` solves ``a x = b``; 1, ``"T"``, 2 or ``"C"`` solves
            ``a^T x = b``.
        lower: read the lower triangle (default: the upper, scipy's default).
        unit_diagonal: take the diagonal of ``a`` to be ones.
        overwrite_b: ignored (scipy's signature).
        check_finite: ignored (scipy's signature).

    Returns:
        Tensor of ``b``'s shape (broadcast with ``a``'s leading axes).

    Raises:
        ShapeError: ``a`` is not square, or ``b`` does not match it.
        DTypeError: complex or non-numeric input.
        ValueError: an unknown ``trans``.

    Example:
        >>> from fgrad.scipy.linalg import solve_triangular
        >>> a = fnp.array([[2.0, 0.0], [1.0, 4.0]])
        >>> solve_triangular(a, fnp.array([2.0, 9.0]), lower=True)
        Tensor([1., 2.], dtype=float64)

    References:
        Forward and back substitution (Golub and Van Loan, *Matrix Computations*, 3.1);
        computed with fgrad's ``solve`` op on the triangle, whose derivative it inherits.
    """
    fn = "solve_triangular"
    lower = _args.flag(lower, fn, "lower")
    unit_diagonal = _args.flag(unit_diagonal, fn, "unit_diagonal")
    _args.flag(overwrite_b, fn, "overwrite_b")
    _args.flag(check_finite, fn, "check_finite")
    if isinstance(trans, (bool, np.bool_)) or not isinstance(trans, (int, str, np.integer)) or trans not in _TRANS:
        raise ValueError(f"{fn}: trans must be 0, 1, 2, 'N', 'T' or 'C', got {_args.describe(trans)}")
    a = _matrix(a, fn, "a")
    b, vector = _rhs(b, a, fn)
    t = _tri(a, lower, unit_diagonal)
    if _TRANS[trans]:
        t = _la._mT(t)
    x = _la.solve(t, b)
    return reshape(x, shape=tuple(x.shape[:-1])) if vector else x


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of each symmetric positive-definite matrix, for :func:`cho_solve`.

    Returns ``(c, lower)`` as scipy does; ``c`` holds the factor in the triangle
    ``lower`` names (``a = c c^T`` for ``lower=True``, ``a = c^T c`` otherwise) and zeros
    in the other (scipy leaves whatever was there). The input is symmetrised,
    ``(a + a^T) / 2``, as fgrad's ``cholesky`` does. Not positive definite: NaN entries.

    Args:
        a: ``(..., n, n)`` real symmetric positive-definite Tensor.
        lower: return the lower factor (default: the upper, scipy's default).
        overwrite_a: ignored (scipy's signature).
        check_finite: ignored (scipy's signature).

    Returns:
        ``(c, lower)``: a Tensor of ``a.shape`` and the bool.

    Raises:
        ShapeError: ``a`` is not square.
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.linalg import cho_factor
        >>> c, lower = cho_factor(fnp.array([[4.0, 2.0], [2.0, 5.0]]), lower=True)
        >>> c
        Tensor([[2., 0.],
                [1., 2.]], dtype=float64)

    References:
        The Cholesky decomposition (Golub and Van Loan, 4.2), fgrad's ``cholesky`` op
        (derivative of Murray 2016).
    """
    fn = "cho_factor"
    lower = _args.flag(lower, fn, "lower")
    _args.flag(overwrite_a, fn, "overwrite_a")
    _args.flag(check_finite, fn, "check_finite")
    a = _matrix(a, fn, "a")
    c = _la.cholesky(a)
    return (c if lower else _la._mT(c)), lower


def cho_solve(c_and_lower: Any, b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` given ``cho_factor(a)``: two triangular solves.

    Args:
        c_and_lower: the pair ``(c, lower)`` that :func:`cho_factor` returns.
        b: ``(..., n)`` or ``(..., n, k)`` real Tensor.
        overwrite_b: ignored (scipy's signature).
        check_finite: ignored (scipy's signature).

    Returns:
        Tensor of ``b``'s shape.

    Raises:
        ShapeError: ``c`` is not square or ``b`` does not match it.
        DTypeError: ``c_and_lower`` is not a ``(c, lower)`` pair, or complex input.

    Example:
        >>> from fgrad.scipy.linalg import cho_factor, cho_solve
        >>> a = fnp.array([[4.0, 2.0], [2.0, 5.0]])
        >>> cho_solve(cho_factor(a), fnp.array([6.0, 7.0]))
        Tensor([1., 1.], dtype=float64)

    References:
        Golub and Van Loan, 4.2: ``L y = b``, then ``L^T x = y``.
    """
    fn = "cho_solve"
    if not isinstance(c_and_lower, (tuple, list)) or len(c_and_lower) != 2:
        raise DTypeError(
            f"{fn}: c_and_lower must be the pair (c, lower) that cho_factor returns, got "
            f"{_args.describe(c_and_lower)}"
        )
    c, lower = c_and_lower
    lower = _args.flag(lower, fn, "lower")
    _args.flag(overwrite_b, fn, "overwrite_b")
    _args.flag(check_finite, fn, "check_finite")
    c = _matrix(c, fn, "c")
    b, vector = _rhs(b, c, fn)
    t = _tri(c, lower, False)
    low = t if lower else _la._mT(t)  # a = low low^T
    y = _la.solve(low, b)
    x = _la.solve(_la._mT(low), y)
    return reshape(x, shape=tuple(x.shape[:-1])) if vector else x


@_named("block_diag")
def block_diag(*arrs: Any) -> Any:
    """The block-diagonal matrix with ``arrs`` on its diagonal (scipy's ``block_diag``).

    Scalars and 1-d inputs count as ``1 x n`` matrices, as scipy's; no input gives a
    ``(1, 0)`` matrix. Differentiable in every block.

    Args:
        *arrs: Tensors of at most 2 dimensions.

    Returns:
        ``(sum of rows, sum of columns)`` Tensor of the promoted dtype.

    Raises:
        ShapeError: an input has more than 2 dimensions.
        DTypeError: a non-numeric input.

    Example:
        >>> from fgrad.scipy.linalg import block_diag
        >>> block_diag(fnp.array([[1.0, 2.0]]), 3.0)
        Tensor([[1., 2., 0.],
                [0., 0., 3.]], dtype=float64)

    References:
        The definition, as ``scipy.linalg.block_diag``.
    """
    fn = "block_diag"
    mats = []
    for k, m in enumerate(arrs):
        m = as_tensor(_arr(m, fn, f"arrs[{k}]"), fn, f"arrs[{k}]")
        if m.ndim > 2:
            raise ShapeError(f"{fn}: arrs[{k}] has shape {tuple(m.shape)}; blocks have at most 2 dimensions")
        mats.append(reshape(m, shape=(1, -1) if m.ndim < 2 else tuple(m.shape)) if m.ndim < 2 else m)
    if not mats:
        return as_tensor(np.zeros((1, 0)))
    dtype = np.dtype(dtypes.result_type(*mats))
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        rows.append(pad(astype(m, dtype=dtype), pad_width=((0, 0), (left, cols - left - c)), constant=0))
        left += c
    return concatenate(*rows, axis=0)


def expm(A: Any) -> Any:
    return _lx.expm(_matrix(A, "expm", "A"))


def sqrtm(A: Any) -> Any:
    return _lx.sqrtm(_matrix(A, "sqrtm", "A"))


expm.__doc__ = _lx.expm.doc.replace("        a: ``(", "        A: ``(")
sqrtm.__doc__ = _lx.sqrtm.doc.replace("        a: ``(", "        A: ``(")
