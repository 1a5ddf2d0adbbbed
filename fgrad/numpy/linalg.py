"""``fgrad.numpy.linalg``: numpy's (and the Array API's) ``linalg`` names.

Solves, determinants and decompositions are registry ops (``fgrad/ops/linalg.py``) with
their own derivative rules; norms and the rest compose ops. Every function acts on the
last two axes and broadcasts over leading batch axes, as numpy's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from fgrad.core.trace import concrete_value
from fgrad.errors import ConcretizationError, ShapeError
from fgrad import _args
from fgrad._args import names_errors as _named
from fgrad.numpy._linalg_top import _arr, _diagonal, matmul, tensordot, vecdot
from fgrad.numpy._shape import matrix_transpose
from fgrad.ops import linalg as _la
from fgrad.ops._rules import shape_of
from fgrad.ops.elementwise import abs as _abs
from fgrad.ops.elementwise import astype as _astype
from fgrad.ops.elementwise import conj as _conj
from fgrad.ops.elementwise import greater as _gt
from fgrad.ops.elementwise import multiply as _mul
from fgrad.ops.elementwise import real as _real
from fgrad.ops.elementwise import subtract as _sub
from fgrad.ops.linalg import det, inv, solve, svdvals
from fgrad.ops.linalg import eigvalsh as _eigvalsh
from fgrad.ops.reduction import max as _max
from fgrad.ops.reduction import min as _min
from fgrad.ops.reduction import sum as _sum
from fgrad.ops.shape import broadcast_to as _broadcast_to
from fgrad.ops.shape import permute_dims as _permute_dims
from fgrad.ops.shape import reshape as _reshape
from fgrad.tensor import Tensor, asarray
from fgrad.numpy._linalg_more import (  # noqa: F401  (numpy.linalg's names, composed)
    EigResult,
    cond,
    cross,
    eig,
    eigvals,
    matrix_rank,
    multi_dot,
    tensorinv,
    tensorsolve,
)

__all__ = [
    "EigResult",
    "EighResult",
    "LinAlgError",
    "LstsqResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
    "vector_norm",
]

LinAlgError = np.linalg.LinAlgError


class SlogdetResult(NamedTuple):
    """``slogdet``'s result (numpy's field names)."""

    sign: Tensor
    logabsdet: Tensor


class QRResult(NamedTuple):
    """``qr``'s result (numpy's field names)."""

    Q: Tensor
    R: Tensor


class EighResult(NamedTuple):
    """``eigh``'s result (numpy's field names)."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    """``svd``'s result (numpy's field names)."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def _check_uplo(name: str, uplo: str) -> None:
    _args.choice(uplo, name, "UPLO", ("L", "U"))


@_named("slogdet")
def slogdet(a: Any) -> SlogdetResult:
    """Sign and natural log of ``|det a|`` of each square matrix (see ``slogdet`` op).

    Args:
        a: ``(..., n, n)`` floating or complex Tensor.

    Returns:
        ``SlogdetResult(sign, logabsdet)``, each of shape ``(...)``; ``sign`` has the
        input's dtype (``e^{i phi}`` for complex input), ``logabsdet`` the real one. A
        singular matrix gives ``sign = 0`` and ``logabsdet = -inf``, where the gradient of
        ``logabsdet`` is NaN (it does not exist; JAX's is not finite either). ``det``'s
        gradient exists there.

    Raises:
        ShapeError: the matrices are not square.

    Example:
        >>> fnp.linalg.slogdet(fnp.array([[2.0, 0.0], [0.0, 0.5]]))
        SlogdetResult(sign=Tensor(1., dtype=float64), logabsdet=Tensor(0., dtype=float64))
        >>> fgrad.grad(lambda a: fnp.linalg.slogdet(a).logabsdet)(fnp.array([[2.0, 0.0], [0.0, 0.5]]))
        Tensor([[0.5, 0. ],
                [0. , 2. ]], dtype=float64)
    """
    return SlogdetResult(*_la.slogdet(_arr(a, "slogdet", "a")))


@_named("cholesky")
def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """Cholesky factor of each symmetric positive-definite matrix (see ``cholesky`` op).

    Args:
        a: ``(..., n, n)`` floating or complex Tensor, Hermitian positive definite; made
            Hermitian as ``(a + a^H) / 2`` (JAX's convention; ``(a + a^T) / 2`` for real
            input), so gradients are Hermitian. numpy reads the lower triangle; the two
            agree on Hermitian input.
        upper: return the upper factor ``U = L^H`` (``a = U^H U``) instead.

    Returns:
        ``(..., n, n)`` triangular Tensor.

    Raises:
        ShapeError: the matrices are not square.
        numpy.linalg.LinAlgError: a matrix is not positive definite.

    Example:
        >>> fnp.linalg.cholesky(fnp.array([[4.0, 2.0], [2.0, 2.0]]), upper=True)
        Tensor([[2., 1.],
                [0., 1.]], dtype=float64)
    """
    upper = _args.flag(upper, "cholesky", "upper")
    low = _la.cholesky(_arr(a, "cholesky", "a"))
    if not upper:
        return low
    up = matrix_transpose(low)
    return _conj(up) if np.dtype(up.dtype).kind == "c" else up


@_named("qr")
def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition of each matrix (see the ``qr`` op for derivatives).

    Args:
        a: ``(..., m, n)`` floating or complex Tensor.
        mode: ``"reduced"`` (default), ``"complete"`` or ``"r"`` (only ``R``).

    Returns:
        ``QRResult(Q, R)``, or ``R`` alone for ``mode="r"``.

    Raises:
        ValueError: an unknown mode.
        ShapeError: ``a`` has fewer than two dimensions.

    Example:
        >>> q, r = fnp.linalg.qr(fnp.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    _args.choice(mode, "qr", "mode", ("reduced", "complete", "r"))
    q, r = _la.qr(_arr(a, "qr", "a"), mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else QRResult(q, r)


@_named("eigh")
def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """Eigenvalues and eigenvectors of each Hermitian matrix (see the ``eigh`` op).

    Args:
        a: ``(..., n, n)`` floating or complex Tensor, Hermitian (real symmetric); made
            Hermitian as ``(a + a^H) / 2`` (JAX's convention), so ``UPLO`` does not change
            the result for Hermitian input.
        UPLO: ``"L"`` or ``"U"``, accepted for numpy compatibility.

    Returns:
        ``EighResult(eigenvalues, eigenvectors)``: real, ascending ``(..., n)`` and the
        eigenvectors in the columns of ``(..., n, n)``.

    Raises:
        ShapeError: the matrices are not square.
        ValueError: ``UPLO`` is not ``"L"`` or ``"U"``.

    Example:
        >>> w, v = fnp.linalg.eigh(fnp.array([[2.0, 0.0], [0.0, 1.0]]))
        >>> w, fnp.abs(v)
        (Tensor([1., 2.], dtype=float64), Tensor([[0., 1.],
                [1., 0.]], dtype=float64))
    """
    _check_uplo("eigh", UPLO)
    return EighResult(*_la.eigh(_arr(a, "eigh", "a")))


@_named("eigvalsh")
def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """Eigenvalues (ascending) of each Hermitian matrix; finite gradients even when repeated.

    Args:
        a: ``(..., n, n)`` floating or complex Tensor, made Hermitian as in :func:`eigh`.
        UPLO: ``"L"`` or ``"U"``, accepted for numpy compatibility.

    Returns:
        ``(..., n)`` Tensor.

    Raises:
        ShapeError: the matrices are not square.

    Example:
        >>> fnp.linalg.eigvalsh(fnp.array([[2.0, 1.0], [1.0, 2.0]]))
        Tensor([1., 3.], dtype=float64)
        >>> fnp.linalg.eigvalsh(fnp.array([[2, 1j], [-1j, 2]]))
        Tensor([1., 3.], dtype=float64)
    """
    _check_uplo("eigvalsh", UPLO)
    return _eigvalsh(_arr(a, "eigvalsh", "a"))


@_named("svd")
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition ``a = U diag(S) Vh`` (see the ``svd`` op).

    As in numpy (and JAX), ``full_matrices`` defaults to True; derivatives of non-square
    input need ``full_matrices=False``.

    Args:
        a: ``(..., m, n)`` floating or complex Tensor.
        full_matrices: square ``U`` and ``Vh`` (True) or the reduced ``(m, k)`` and
            ``(k, n)`` factors, ``k = min(m, n)``.
        compute_uv: False returns only the singular values (as ``svdvals``).
        hermitian: accepted for numpy compatibility; the general algorithm is used.

    Returns:
        ``SVDResult(U, S, Vh)``, ``S`` descending; or ``S`` when ``compute_uv`` is False.

    Raises:
        ShapeError: ``a`` has fewer than two dimensions.

    Example:
        >>> fnp.linalg.svd(fnp.array([[0.0, 2.0], [1.0, 0.0]]), compute_uv=False)
        Tensor([2., 1.], dtype=float64)
    """
    a = _arr(a, "svd", "a")
    full_matrices = _args.flag(full_matrices, "svd", "full_matrices")
    compute_uv = _args.flag(compute_uv, "svd", "compute_uv")
    _args.flag(hermitian, "svd", "hermitian")
    if not compute_uv:
        return svdvals(a)
    return SVDResult(*_la.svd(a, full_matrices=full_matrices))


@_named("pinv")
def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse of each matrix (see the ``pinv`` op).

    Args:
        a: ``(..., m, n)`` floating or complex Tensor.
        rcond: numpy's older name of ``rtol``.
        hermitian: accepted for numpy compatibility.
        rtol: singular values below ``rtol`` times the largest count as zero; None is
            ``max(m, n) * eps``.

    Returns:
        ``(..., n, m)`` Tensor.

    Raises:
        ShapeError: ``a`` has fewer than two dimensions.

    Example:
        >>> fnp.linalg.pinv(fnp.array([[2.0], [0.0]]))
        Tensor([[0.5, 0. ]], dtype=float64)
    """
    rcond = _args.real(rcond, "pinv", "rcond", none_ok=True)
    rtol = _args.real(rtol, "pinv", "rtol", none_ok=True)
    _args.flag(hermitian, "pinv", "hermitian")
    tol = rtol if rtol is not None else rcond
    return _la.pinv(_arr(a, "pinv", "a"), rtol=tol)


@_named("diagonal")
def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """Diagonal ``offset`` of the matrices over the last two axes (the Array API's).

    Example:
        >>> fnp.linalg.diagonal(fnp.ones((2, 3, 3))).shape
        (2, 3)
    """
    return _diagonal(x, offset, -2, -1, "diagonal")


@_named("trace")
def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of diagonal ``offset`` of the matrices over the last two axes (the Array API's).

    Example:
        >>> fnp.linalg.trace(fnp.ones((2, 3, 3)))
        Tensor([3., 3.], dtype=float64)
    """
    dtype = _args.dtype(dtype, "trace")
    d = _diagonal(x, offset, -2, -1, "trace")
    out = _sum(d, axes=(len(shape_of(d)) - 1,), keepdims=False)
    return out if dtype is None else _astype(out, dtype=dtype)


@_named("outer")
def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two vectors (the Array API's: 1-D inputs only).

    Raises:
        ShapeError: an input is not 1-D.

    Example:
        >>> fnp.linalg.outer(fnp.array([1.0, 2.0]), fnp.array([3.0]))
        Tensor([[3.],
                [6.]], dtype=float64)
    """
    x1, x2 = _arr(x1, "outer", "x1"), _arr(x2, "outer", "x2")
    if len(shape_of(x1)) != 1 or len(shape_of(x2)) != 1:
        raise ShapeError(
            f"linalg.outer: needs 1-D inputs; got shapes {shape_of(x1)} and {shape_of(x2)} "
            "(fnp.outer flattens its inputs)"
        )
    return _la.einsum(x1, x2, subscripts="a,b->ab")


# ------------------------------------------------------------------------ norms

_INF = float("inf")


def _vector_ord(ord: Any, name: str = "norm") -> float:
    if isinstance(ord, str):
        raise ValueError(f"{name}: invalid norm order {ord!r} for vectors")  # noqa: TRY004 - numpy
    if ord is None:
        return 2.0
    return _args.real(ord, name, "ord")


_MATRIX_ORDS = (1, -1, 2, -2, _INF, -_INF)


def _matrix_ord(ord: Any, name: str) -> Any:
    """A matrix norm order: None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    if ord is None or isinstance(ord, str):
        return _args.choice(ord, name, "ord", ("fro", "nuc"), none_ok=True)
    o = _args.real(ord, name, "ord")
    if o not in _MATRIX_ORDS:
        raise ValueError(
            f"{name}: invalid norm order {ord!r} for matrices; use 'fro', 'nuc', 1, -1, 2, -2, "
            "inf or -inf"
        )
    return int(o) if abs(o) != _INF else o


def _axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return _args.axes(axis, name, ndim)


@_named("vector_norm")
def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """Vector norm over ``axis`` (all axes by default), for any ``ord`` (see the op).

    Args:
        x: Tensor of any shape.
        axis: int, tuple of ints or None (all axes, as one flattened vector).
        keepdims: keep the reduced axes with size 1.
        ord: ``2`` (default), ``1``, ``inf``, ``-inf``, ``0`` or any other ``p``.

    Returns:
        Tensor of the reduced shape, real floating dtype. The gradient at zero is zero.

    Raises:
        ShapeError: an axis is out of range or repeated.
        ValueError: ``ord`` is a string.

    Example:
        >>> fnp.linalg.vector_norm(fnp.array([[3.0, 4.0], [0.0, 1.0]]), axis=1, ord=fnp.inf)
        Tensor([4., 1.], dtype=float64)
    """
    x = _arr(x, "vector_norm", "x")
    keepdims = _args.flag(keepdims, "vector_norm", "keepdims")
    axes = tuple(sorted(_axes("vector_norm", axis, len(shape_of(x)))))
    ord = _vector_ord(ord, "vector_norm")
    return _la.vector_norm(x, ord=ord, axes=axes, keepdims=keepdims)


def _matrix_norm_last2(x: Any, ord: Any) -> Any:
    """Matrix norm over the last two axes, no kept dimensions."""
    nd = len(shape_of(x))
    last = (nd - 2,)
    if ord in (None, "fro"):
        return _la.vector_norm(x, ord=2.0, axes=(nd - 2, nd - 1), keepdims=False)
    if ord == "nuc":
        return _sum(svdvals(x), axes=last, keepdims=False)
    if ord in (2, -2):
        return (_max if ord == 2 else _min)(svdvals(x), axes=last, keepdims=False)
    if ord in (1, -1, _INF, -_INF):
        # 1: largest column sum of |x| (sum over rows); inf: largest row sum.
        sums = _sum(_abs(x), axes=(nd - 2 if ord in (1, -1) else nd - 1,), keepdims=False)
        return (_max if ord > 0 else _min)(sums, axes=last, keepdims=False)
    raise ValueError(
        f"norm: invalid norm order {ord!r} for matrices; use 'fro', 'nuc', 1, -1, 2, -2, inf "
        "or -inf"
    )


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:
    nd = len(shape_of(x))
    r, c = axes
    if (r, c) != (nd - 2, nd - 1):
        x = _permute_dims(x, axes=tuple(i for i in range(nd) if i not in axes) + (r, c))
    out = _matrix_norm_last2(x, ord)
    if keepdims:  # the reduced axes back in their places, with size 1
        full = list(shape_of(out))
        for i in sorted(axes):
            full.insert(i, 1)
        out = _reshape(out, shape=tuple(full))
    return out


@_named("matrix_norm")
def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Matrix norm over the last two axes (the Array API's ``matrix_norm``).

    ``ord``: ``"fro"`` (Frobenius), ``"nuc"`` (sum of singular values), ``2`` / ``-2``
    (largest / smallest singular value), ``1`` / ``-1`` (largest / smallest column sum of
    ``|x|``), ``inf`` / ``-inf`` (row sums). The gradient at the zero matrix is zero for
    every order (the zero subgradient, PyTorch's convention), never NaN.

    Args:
        x: ``(..., m, n)`` Tensor.
        keepdims: keep the last two axes with size 1.
        ord: the order.

    Returns:
        ``(...)`` Tensor, real floating dtype.

    Raises:
        ShapeError: ``x`` has fewer than two dimensions.
        ValueError: an unknown ``ord``.

    Example:
        >>> x = fnp.array([[1.0, -2.0], [3.0, 4.0]])
        >>> fnp.linalg.matrix_norm(x, ord=1), fnp.linalg.matrix_norm(x, ord=fnp.inf)
        (Tensor(6., dtype=float64), Tensor(7., dtype=float64))
    """
    x = _arr(x, "matrix_norm", "x")
    keepdims = _args.flag(keepdims, "matrix_norm", "keepdims")
    ord = _matrix_ord(ord, "matrix_norm")
    nd = len(shape_of(x))
    if nd < 2:
        raise ShapeError(f"matrix_norm: needs at least two dimensions; got shape {shape_of(x)}")
    return _matrix_norm(x, ord, (nd - 2, nd - 1), keepdims)


@_named("norm")
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Matrix or vector norm with numpy's ``linalg.norm`` rules.

    With ``axis=None``: ``ord=None`` gives the 2-norm of the flattened input; otherwise
    ``x`` must be 1-D (a vector norm) or 2-D (a matrix norm). An int ``axis`` gives vector
    norms along it and a pair of axes matrix norms over them.

    Orders: vectors ``None``/``2``, ``1``, ``inf``, ``-inf``, ``0`` (non-zero count) and any
    other ``p``; matrices ``None``/``"fro"``, ``"nuc"``, ``1``, ``-1``, ``2``, ``-2``,
    ``inf``, ``-inf``. At zero input the gradient is zero (the zero subgradient, as
    PyTorch), never NaN; ties in ``inf``-type norms split the gradient evenly.

    Args:
        x: Tensor.
        ord: the order.
        axis: None, an int, or a pair of ints.
        keepdims: keep the reduced axes with size 1.

    Returns:
        Tensor of the reduced shape, real floating dtype.

    Raises:
        ShapeError: an axis is out of range, or ``axis=None`` with ``ord`` for an input
            that is not 1-D or 2-D.
        ValueError: an order that does not apply (a string for vectors, an unknown one).

    Example:
        >>> x = fnp.array([[3.0, 0.0], [0.0, -4.0]])
        >>> fnp.linalg.norm(x), fnp.linalg.norm(x, 2), fnp.linalg.norm(x, "nuc")
        (Tensor(5., dtype=float64), Tensor(4., dtype=float64), Tensor(7., dtype=float64))
        >>> fnp.linalg.norm(x, axis=1)
        Tensor([3., 4.], dtype=float64)
        >>> fgrad.grad(lambda x: fnp.linalg.norm(x, "nuc"))(fnp.zeros((2, 2)))
        Tensor([[0., 0.],
                [0., 0.]], dtype=float64)
    """
    x = _arr(x, "norm", "x")
    keepdims = _args.flag(keepdims, "norm", "keepdims")
    if isinstance(ord, Tensor) and type(ord) is not Tensor:
        raise ConcretizationError(
            f"norm: ord is a traced value {ord.aval}, but the order must be a Python number or "
            "string; under jit a Python float argument is traced, so mark it static "
            "(static_argnums / static_argnames)"
        )
    nd = len(shape_of(x))
    if axis is None:
        if ord is None:
            return _la.vector_norm(x, ord=2.0, axes=tuple(range(nd)), keepdims=bool(keepdims))
        if nd not in (1, 2):
            raise ShapeError(
                f"norm: with ord={ord!r} and axis=None the input must be 1-D or 2-D; got "
                f"shape {shape_of(x)}. Pass axis"
            )
        axis = tuple(range(nd))
    axes = _axes("norm", axis, nd)
    if len(axes) == 1:
        return _la.vector_norm(x, ord=_vector_ord(ord), axes=axes, keepdims=keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, _matrix_ord(ord, "norm"), axes, keepdims)
    raise ShapeError(f"norm: axis must name one or two axes; got {axis}")


# ------------------------------------------------------------------------ lstsq, matrix_power


class LstsqResult(NamedTuple):
    """``lstsq``'s result (numpy's order)."""

    x: Tensor
    residuals: Tensor
    rank: Tensor
    s: Tensor


@_named("lstsq")
def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: bool = False) -> LstsqResult:
    """Least-squares solution ``x`` minimising ``||b - a x||_2`` (numpy's ``lstsq``).

    ``x = pinv(a) @ b``: the minimum-norm solution, also for rank-deficient ``a``;
    differentiable in ``a`` and ``b`` (through :func:`pinv`'s derivative, which assumes the
    rank does not change nearby).

    Args:
        a: ``(M, N)`` floating or complex Tensor.
        b: ``(M,)`` or ``(M, K)`` Tensor.
        rcond: singular values below ``rcond`` times the largest count as zero; None is
            ``max(M, N) * eps``, numpy's default.
        numpy_resid: return residuals exactly as numpy does: empty when the rank is
            below ``N`` or ``M <= N`` (needs concrete values). By default (as JAX) the
            residuals are always computed.

    Returns:
        ``LstsqResult(x, residuals, rank, s)``: ``x`` of shape ``(N,)`` or ``(N, K)``;
        the sums of squared residuals ``|b - a x|^2``, ``(1,)`` or ``(K,)``, real; the rank
        (0-d int64, no
        derivative); the singular values of ``a``, ``(min(M, N),)``.

    Raises:
        ShapeError: ``a`` is not 2-D, or ``b`` does not have ``M`` rows.

    Example:
        >>> a = fnp.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
        >>> x, residuals, rank, s = fnp.linalg.lstsq(a, fnp.array([1.0, 2.0, 2.0]))
        >>> fnp.round(x, 4), fnp.round(residuals, 4), rank
        (Tensor([1.1667, 0.5   ], dtype=float64), Tensor([0.1667], dtype=float64), Tensor(2, dtype=int64))
    """
    a, b = _arr(a, "lstsq", "a"), _arr(b, "lstsq", "b")
    rcond = _args.real(rcond, "lstsq", "rcond", none_ok=True)
    numpy_resid = _args.flag(numpy_resid, "lstsq", "numpy_resid")
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) != 2 or len(sb) not in (1, 2) or sb[0] != sa[0]:
        raise ShapeError(
            f"lstsq: a must be (M, N) and b (M,) or (M, K); got a {sa} and b {sb}"
        )
    m, n = sa
    tol = None if rcond is None or rcond < 0 else float(rcond)
    x = matmul(_la.pinv(a, rtol=tol), b)
    s = svdvals(a)
    rel = max(m, n) * np.finfo(np.dtype(s.dtype)).eps if tol is None else tol
    cut = _mul(rel, _max(s, axes=(0,), keepdims=False)) if min(m, n) else 0
    rank = _sum(_astype(_gt(s, cut), dtype=np.dtype(np.int64)), axes=(0,), keepdims=False)
    r = _sub(b, matmul(a, x))
    # |r|^2, real (numpy's residuals are real for complex input too); r * r would be a
    # complex number unrelated to the residual.
    sq = _real(_mul(_conj(r), r)) if np.dtype(r.dtype).kind == "c" else _mul(r, r)
    resid = _sum(sq, axes=(0,), keepdims=False)
    if len(sb) == 1:
        resid = _reshape(resid, shape=(1,))
    if numpy_resid:
        try:
            full = int(concrete_value(rank)) == n and m > n
        except ConcretizationError:
            raise ConcretizationError(
                "lstsq: numpy_resid=True decides the residuals' shape from the rank, which "
                "is traced here (jit, make_graph, or one per example under vmap); use "
                "numpy_resid=False"
            ) from None
        if not full:
            resid = _reshape(resid, shape=(resid.shape[0],))[:0]
    return LstsqResult(x, resid, rank, s)


@_named("matrix_power")
def matrix_power(a: Any, n: int) -> Any:
    """``a`` raised to the integer power ``n`` by repeated squaring (numpy's ``matrix_power``).

    ``n = 0`` gives identity matrices, negative ``n`` powers of ``inv(a)``. Differentiable
    in ``a`` (a product of matmuls).

    Args:
        a: ``(..., M, M)`` Tensor.
        n: a Python int (static).

    Returns:
        ``(..., M, M)`` Tensor, dtype of ``a`` (float64 for negative ``n`` with integer
        ``a``).

    Raises:
        ShapeError: the matrices are not square.
        TypeError: ``n`` is not an int.

    Example:
        >>> fnp.linalg.matrix_power(fnp.array([[1.0, 1.0], [0.0, 1.0]]), 3)
        Tensor([[1., 3.],
                [0., 1.]], dtype=float64)
        >>> fgrad.grad(lambda t: fnp.linalg.matrix_power(fnp.array([[t]]), -2)[0, 0])(2.0)
        Tensor(-0.25, dtype=float64)
    """
    n = _args.index(n, "matrix_power", "n", what="an integer")
    a = _arr(a, "matrix_power", "a")
    if not isinstance(a, Tensor):
        a = asarray(a)
    sa = shape_of(a)
    if len(sa) < 2 or sa[-1] != sa[-2]:
        raise ShapeError(f"matrix_power: needs (..., M, M) square matrices, got shape {sa}")
    n = int(n)
    if n == 0:
        eye = asarray(np.eye(sa[-1], dtype=np.dtype(a.dtype)), device=a.device)
        return _broadcast_to(eye, shape=sa)
    if n < 0:
        a, n = inv(a), -n
    result = None
    base = a
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = matmul(base, base)
