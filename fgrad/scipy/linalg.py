"""``fgrad.scipy.linalg``: scipy's linear-algebra functions, differentiable and batched.

Every function acts on the last two axes and broadcasts over leading (batch) axes, as
``jax.scipy.linalg`` does. Triangular and Cholesky solves are compositions of fgrad's
``solve``, ``cholesky`` and ``tril``/``triu`` ops (so their derivatives are those ops');
``expm``, ``sqrtm``, ``lu`` and ``schur`` are ops of their own
(``fgrad/ops/linalg_extra.py``): the first two with Frechet derivatives, ``lu`` with the
derivative of the LU factors (``lu_solve`` is triangular solves on them, so it
differentiates in both the factors and the right-hand side), ``schur`` without one. ``overwrite_*`` and ``check_finite`` are accepted
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
from fgrad.ops.linalg import matmul as _matmul
from fgrad.ops.shape import concatenate, pad, reshape
from fgrad.tensor import as_tensor

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "expm", "lu", "lu_factor", "lu_solve", "schur",
    "solve_triangular", "sqrtm",
]


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


def _transposed(trans: Any, fn: str) -> bool:
    """Whether scipy's ``trans`` (0/1/2 or "N"/"T"/"C") asks for the transposed system."""
    if isinstance(trans, (bool, np.bool_)) or not isinstance(trans, (int, str, np.integer)) or trans not in _TRANS:
        raise ValueError(f"{fn}: trans must be 0, 1, 2, 'N', 'T' or 'C', got {_args.describe(trans)}")
    return _TRANS[trans]


def _pair(value: Any, fn: str, what: str, maker: str) -> tuple:
    """``value`` unpacked as the 2-tuple that ``maker`` returns, or a DTypeError naming ``fn``."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise DTypeError(f"{fn}: {what} must be the pair that {maker} returns, got {_args.describe(value)}")
    return tuple(value)


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
    transposed = _transposed(trans, fn)
    a = _matrix(a, fn, "a")
    b, vector = _rhs(b, a, fn)
    t = _tri(a, lower, unit_diagonal)
    if transposed:
        t = _la._mT(t)
    x = _la.solve(t, b)
    return reshape(x, shape=tuple(x.shape[:-1])) if vector else x


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of each symmetric positive-definite matrix, for :func:`cho_solve`.

    Returns ``(c, lower)`` as scipy does; ``c`` holds the factor in the triangle
    ``lower`` names (``a = c c^T`` for ``lower=True``, ``a = c^T c`` otherwise) and zeros
    in the other (scipy leaves whatever was there). The input is symmetrised,
    ``(a + a^T) / 2``, as fgrad's ``cholesky`` does. A matrix that is not positive
    definite raises ``numpy.linalg.LinAlgError``, as scipy's (JAX returns NaN entries).

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
        numpy.linalg.LinAlgError: (a ValueError) a matrix is not positive definite;
            eagerly at the call, under ``jit`` when the compiled function runs.

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
    c, lower = _pair(c_and_lower, fn, "c_and_lower", "cho_factor (c, lower)")
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


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True, p_indices: bool = False):
    """The LU decomposition with partial pivoting, ``a = P L U``, as ``scipy.linalg.lu``.

    Square matrices only (scipy also factors rectangular ones), batched over leading
    axes. Differentiable in ``a`` through ``L`` and ``U`` (the permutation is piecewise
    constant and gets no derivative).

    Args:
        a: ``(..., n, n)`` real Tensor.
        permute_l: return ``(P L, U)`` instead of ``(P, L, U)``.
        overwrite_a: ignored (scipy's signature).
        check_finite: ignored (scipy's signature).
        p_indices: return the permutation as int32 row indices ``p`` with
            ``a = L[p] U`` instead of the matrix ``P``.

    Returns:
        ``(p, l, u)``, or ``(pl, u)`` with ``permute_l``: ``p`` ``(..., n, n)`` of
        ``a``'s floating dtype (``(..., n)`` int32 with ``p_indices``); ``l`` unit lower
        and ``u`` upper triangular, each ``(..., n, n)``.

    Raises:
        ShapeError: ``a`` is not square (rectangular input: not supported; factor a
            square block or use ``fnp.linalg.qr``).
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.linalg import lu
        >>> p, l, u = lu(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> p, l, u
        (Tensor([[0., 1.],
                [1., 0.]], dtype=float64), Tensor([[1.        , 0.        ],
                [0.33333333, 1.        ]], dtype=float64), Tensor([[3.        , 4.        ],
                [0.        , 0.66666667]], dtype=float64))

    References:
        Golub and Van Loan, *Matrix Computations*, 4th ed., algorithm 3.4.1; the
        derivative of de Hoog, Anderssen and Lukas, Math. Comp. 80, 2011 (see
        ``fgrad.ops.linalg_extra.lu``).
    """
    fn = "lu"
    permute_l = _args.flag(permute_l, fn, "permute_l")
    p_indices = _args.flag(p_indices, fn, "p_indices")
    _args.flag(overwrite_a, fn, "overwrite_a")
    _args.flag(check_finite, fn, "check_finite")
    a = _matrix(a, fn, "a")
    packed, _, perm = _lx.lu(a)
    low, up = _lx._lu_parts(packed)
    # a[perm] = L U, so a = E^T L U with E the one-hot rows of perm: P = E^T
    p_matrix = _la._mT(_lx._permutation_matrix(perm, packed))
    if permute_l:
        return _matmul(p_matrix, low), up
    if p_indices:
        from fgrad.numpy import argsort

        return astype(argsort(perm, axis=-1), dtype=np.dtype(np.int32)), low, up
    return p_matrix, low, up


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True):
    """The packed LU factors and LAPACK pivots of each square matrix, for :func:`lu_solve`.

    As ``scipy.linalg.lu_factor``: ``lu`` holds ``L`` strictly below the diagonal (its
    unit diagonal implied) and ``U`` on and above it; row ``k`` was swapped with row
    ``piv[k]`` (0-based). A singular matrix factors without error (``U`` has a zero on
    its diagonal; solving with it gives inf/NaN), as scipy's warns.

    Args:
        a: ``(..., n, n)`` real Tensor.
        overwrite_a: ignored (scipy's signature).
        check_finite: ignored (scipy's signature).

    Returns:
        ``(lu, piv)``: a Tensor of ``a.shape`` (differentiable) and ``(..., n)`` int32.

    Raises:
        ShapeError: ``a`` is not square.
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.linalg import lu_factor
        >>> lu_factor(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        (Tensor([[3.        , 4.        ],
                [0.33333333, 0.66666667]], dtype=float64), Tensor([1, 1], dtype=int32))

    References:
        LAPACK's ``getrf`` (partial pivoting, Golub and Van Loan algorithm 3.4.1).
    """
    fn = "lu_factor"
    _args.flag(overwrite_a, fn, "overwrite_a")
    _args.flag(check_finite, fn, "check_finite")
    packed, piv, _ = _lx.lu(_matrix(a, fn, "a"))
    return packed, piv


def lu_solve(lu_and_piv: Any, b: Any, trans: Any = 0, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` (or ``a^T x = b``) given ``lu_factor(a)``.

    Forward and back substitution on the factors: for ``trans=0``,
    ``x = U^-1 L^-1 b[perm]``; for ``trans=1`` or 2, ``x = E^T L^-T U^-T b``. Built of
    fgrad's solves, so differentiable in ``lu`` and in ``b`` (the derivative in ``b`` is
    the solve of the transposed system). Batched over leading axes.

    Args:
        lu_and_piv: the pair ``(lu, piv)`` that :func:`lu_factor` returns.
        b: ``(..., n)`` or ``(..., n, k)`` real Tensor.
        trans: 0 or ``"N"`` solves ``a x = b``; 1, ``"T"``, 2 or ``"C"`` solve
            ``a^T x = b`` (the same for real matrices).
        overwrite_b: ignored (scipy's signature).
        check_finite: ignored (scipy's signature).

    Returns:
        Tensor of ``b``'s shape.

    Raises:
        ShapeError: ``lu`` is not square or ``b`` does not match it.
        DTypeError: ``lu_and_piv`` is not an ``(lu, piv)`` pair, complex input, or
            non-integer pivots.
        ValueError: an unknown ``trans``.

    Example:
        >>> from fgrad.scipy.linalg import lu_factor, lu_solve
        >>> a = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> lu_solve(lu_factor(a), fnp.array([5.0, 11.0]))
        Tensor([1., 2.], dtype=float64)
        >>> lu_solve(lu_factor(a), fnp.array([7.0, 10.0]), trans=1)
        Tensor([1., 2.], dtype=float64)

    References:
        Golub and Van Loan, *Matrix Computations*, 4th ed., 3.1 and 3.4 (LAPACK's
        ``getrs``).
    """
    fn = "lu_solve"
    packed, piv = _pair(lu_and_piv, fn, "lu_and_piv", "lu_factor (lu, piv)")
    transposed = _transposed(trans, fn)
    _args.flag(overwrite_b, fn, "overwrite_b")
    _args.flag(check_finite, fn, "check_finite")
    packed = _matrix(packed, fn, "lu")
    piv = as_tensor(_arr(piv, fn, "piv"), fn, "piv")
    if piv.dtype.kind not in "iu" or tuple(piv.shape) != tuple(packed.shape[:-1]):
        raise DTypeError(
            f"{fn}: piv must be integer pivots of shape {tuple(packed.shape[:-1])} (lu_factor's), "
            f"got {_args.describe(piv)}"
        )
    b, vector = _rhs(b, packed, fn)
    perm = _lx.lu_pivots_to_permutation(piv)
    e = _lx._permutation_matrix(perm, packed)
    low, up = _lx._lu_parts(packed)
    if transposed:
        x = _matmul(_la._mT(e), _la.solve(_la._mT(low), _la.solve(_la._mT(up), b)))
    else:
        x = _la.solve(up, _la.solve(low, _matmul(e, b)))
    return reshape(x, shape=tuple(x.shape[:-1])) if vector else x


def schur(
    a: Any,
    output: str = "real",
    lwork: Any = None,
    overwrite_a: bool = False,
    sort: Any = None,
    check_finite: bool = True,
):
    """The Schur decomposition ``a = Z T Z^H``, as ``scipy.linalg.schur`` for real input.

    ``output="real"`` gives an orthogonal ``Z`` and a quasi-upper-triangular ``T`` (2x2
    blocks, in LAPACK's standard form, for complex-conjugate eigenvalue pairs);
    ``output="complex"`` a unitary ``Z`` and an upper-triangular ``T``. A Schur form is
    not unique: the order of the eigenvalues along the diagonal and the signs (phases) of
    ``Z``'s columns may differ from scipy's. Batched over leading axes; not differentiable
    (as JAX's).

    Args:
        a: ``(..., n, n)`` real Tensor.
        output: ``"real"`` or ``"complex"`` (also ``"r"``, ``"c"``).
        lwork: ignored (scipy's signature).
        overwrite_a: ignored (scipy's signature).
        sort: must be None (ordering the eigenvalues is not supported).
        check_finite: ignored (scipy's signature).

    Returns:
        ``(T, Z)``, each of ``a.shape``, real floating for ``"real"``, complex otherwise.

    Raises:
        ShapeError: ``a`` is not square.
        DTypeError: complex or non-numeric input (complex Schur of a complex matrix is
            not provided).
        ValueError: an unknown ``output``, or a ``sort``.
        NotImplementedError: when differentiated.

    Example:
        >>> from fgrad.scipy.linalg import schur
        >>> t, z = schur(fnp.array([[0.0, 2.0], [-2.0, 0.0]]))
        >>> t
        Tensor([[ 0.,  2.],
                [-2.,  0.]], dtype=float64)
        >>> t, z = schur(fnp.array([[0.0, 2.0], [-2.0, 0.0]]), output="complex")
        >>> fnp.round(fnp.diagonal(t), 6)
        Tensor([0.+2.j, 0.-2.j], dtype=complex128)

    References:
        Golub and Van Loan, *Matrix Computations*, 4th ed., algorithms 7.4.2, 7.5.1 and
        7.5.2 (see ``fgrad.ops.linalg_extra.schur``).
    """
    fn = "schur"
    _args.flag(overwrite_a, fn, "overwrite_a")
    _args.flag(check_finite, fn, "check_finite")
    if sort is not None:
        raise ValueError(f"{fn}: sort is not supported (got {_args.describe(sort)}); pass sort=None")
    names = {"real": "real", "r": "real", "complex": "complex", "c": "complex"}
    if not isinstance(output, str) or output not in names:
        raise ValueError(f"{fn}: output must be 'real' or 'complex', got {_args.describe(output)}")
    return tuple(_lx.schur(_matrix(a, fn, "a"), output=names[output]))


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
