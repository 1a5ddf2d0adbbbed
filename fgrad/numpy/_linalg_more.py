"""numpy.linalg's general eigenproblem, conditioning, rank and tensor-shaped functions.

Composed from the registry's ops (``eig``/``eigvals`` in ``fgrad/ops/linalg_eig.py``,
``svdvals``, ``inv``, ``solve``, ``matmul``), so they differentiate wherever those do;
``matrix_rank`` is an integer count with no gradient, as in JAX.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from fgrad import _args
from fgrad._args import names_errors as _named
from fgrad.errors import ShapeError
from fgrad.numpy._linalg_top import _arr, matmul
from fgrad.ops._rules import shape_of
from fgrad.ops.elementwise import abs as _abs
from fgrad.ops.elementwise import astype as _astype
from fgrad.ops.elementwise import divide as _div
from fgrad.ops.elementwise import equal as _eq
from fgrad.ops.elementwise import where as _where
from fgrad.ops.elementwise import greater as _gt
from fgrad.ops.elementwise import multiply as _mul
from fgrad.ops.elementwise import stop_gradient as _stop
from fgrad.ops.linalg import eigvalsh as _eigvalsh
from fgrad.ops.linalg import det, inv, solve, svdvals
from fgrad.ops.linalg_eig import eig as _eig
from fgrad.ops.linalg_eig import eigvals as _eigvals_op
from fgrad.ops.reduction import max as _max
from fgrad.ops.reduction import min as _min
from fgrad.ops.reduction import sum as _sum
from fgrad.ops.shape import permute_dims as _permute_dims
from fgrad.ops.shape import reshape as _reshape
from fgrad.tensor import Tensor, asarray

__all__ = [
    "EigResult",
    "cond",
    "cross",
    "eig",
    "eigvals",
    "matrix_rank",
    "multi_dot",
    "tensorinv",
    "tensorsolve",
]


class EigResult(NamedTuple):
    """``eig``'s result (numpy's field names)."""

    eigenvalues: Any
    eigenvectors: Any


@_named("eig")
def eig(a: Any, /) -> EigResult:
    """Eigenvalues and right eigenvectors of each square matrix (see the ``eig`` op).

    Complex results as numpy's; not differentiable (as JAX by default): differentiate
    :func:`eigvals`, or use ``eigh`` for Hermitian matrices.

    Args:
        a: ``(..., n, n)`` floating, integer or complex Tensor.

    Returns:
        ``EigResult(eigenvalues, eigenvectors)``: ``(..., n)`` and ``(..., n, n)`` complex
        Tensors, ``a @ v[..., :, i] == w[..., i] * v[..., :, i]``.

    Raises:
        ShapeError: the matrices are not square.
        NotImplementedError: when differentiated.

    Example:
        >>> w, v = fnp.linalg.eig(fnp.array([[0.0, 1.0], [-2.0, -3.0]]))
        >>> w
        Tensor([-1.+0.j, -2.+0.j], dtype=complex128)
    """
    return EigResult(*_eig(_arr(a, "eig", "a")))


@_named("eigvals")
def eigvals(a: Any, /) -> Any:
    """Eigenvalues of each square matrix, complex, differentiable (see the ``eigvals`` op).

    Args:
        a: ``(..., n, n)`` floating, integer or complex Tensor.

    Returns:
        ``(..., n)`` complex Tensor.

    Raises:
        ShapeError: the matrices are not square.

    Example:
        >>> fnp.linalg.eigvals(fnp.array([[2.0, 1.0], [0.0, 3.0]]))
        Tensor([2.+0.j, 3.+0.j], dtype=complex128)
    """
    return _eigvals_op(_arr(a, "eigvals", "a"))


def _square_shape(name: str, x: Any) -> tuple[int, ...]:
    s = shape_of(x)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ShapeError(f"{name}: needs (..., M, M) square matrices, got shape {s}")
    return s


@_named("cond")
def cond(x: Any, p: Any = None) -> Any:
    """Condition number of each matrix in the norm ``p`` (numpy's ``cond``).

    ``p=None``, ``2`` or ``-2``: the ratio of the largest to the smallest singular value
    (``-2``: its inverse), for any ``(..., M, N)``; other orders (``"fro"``, ``"nuc"``,
    ``1``, ``-1``, ``inf``, ``-inf``): ``norm(x, p) * norm(inv(x), p)``, square matrices
    only. Differentiable wherever the singular values (or the inverse) are; a singular
    matrix gives ``inf`` in the 2-norm, as numpy.

    Args:
        x: ``(..., M, N)`` floating or complex Tensor.
        p: the norm order.

    Returns:
        ``(...)`` real Tensor; ``inf`` for a matrix whose LU factorisation is singular,
        as numpy.

    Raises:
        ShapeError: fewer than two dimensions, or a non-square matrix with ``p`` other
            than None, 2 or -2.
        ValueError: an unknown ``p``.

    Example:
        >>> fnp.linalg.cond(fnp.array([[2.0, 0.0], [0.0, 0.5]]))
        Tensor(4., dtype=float64)
        >>> fgrad.grad(lambda t: fnp.linalg.cond(fnp.array([[t, 0.0], [0.0, 1.0]])))(3.0)
        Tensor(1., dtype=float64)
    """
    from fgrad.numpy._creation import eye as fnp_eye
    from fgrad.numpy.linalg import matrix_norm

    x = _arr(x, "cond", "x")
    s = shape_of(x)
    if len(s) < 2:
        raise ShapeError(f"cond: needs (..., M, N) matrices, got shape {s}")
    last = (len(s) - 2,)  # the singular values: (..., k)
    if p in (None, 2, -2):
        sv = svdvals(x)
        big, small = _max(sv, axes=last, keepdims=False), _min(sv, axes=last, keepdims=False)
        return _div(small, big) if p == -2 else _div(big, small)
    _square_shape("cond", x)
    # numpy gives inf for a matrix its LU factorisation finds singular (its inverse fails
    # to NaN, read as inf): the same LU's zero determinant finds them here, the identity is
    # inverted in their place and the result replaced by inf.
    singular = _eq(_stop(det(x)), 0)
    eye = fnp_eye(s[-1], dtype=x.dtype)
    safe = _where(_reshape(singular, shape=tuple(shape_of(singular)) + (1, 1)), eye, x)
    out = _mul(matrix_norm(x, ord=p), matrix_norm(inv(safe), ord=p))
    return _where(singular, float("inf"), out)


@_named("matrix_rank")
def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """Rank of each matrix: the count of singular values above a tolerance (numpy's).

    The tolerance is ``tol`` if given, else ``rtol * max(s)`` with ``rtol`` defaulting to
    ``max(M, N) * eps`` of the dtype (numpy 2's rule). A 1-d input has rank 1 unless it
    is all zeros. An integer count: no gradient.

    Args:
        A: ``(M,)`` or ``(..., M, N)`` Tensor.
        tol: absolute threshold (scalar or ``(...)``), or None.
        hermitian: ``A`` is Hermitian (uses ``|eigvalsh|``, cheaper).
        rtol: relative threshold; not with ``tol``.

    Returns:
        ``(...)`` int64 Tensor.

    Raises:
        ValueError: both ``tol`` and ``rtol`` are given.

    Example:
        >>> fnp.linalg.matrix_rank(fnp.array([[1.0, 2.0], [2.0, 4.0]]))
        Tensor(1, dtype=int64)
    """
    hermitian = _args.flag(hermitian, "matrix_rank", "hermitian")
    if tol is not None and rtol is not None:
        raise ValueError("matrix_rank: pass tol or rtol, not both")
    A = _stop(_arr(A, "matrix_rank", "A"))
    s = shape_of(A)
    if len(s) < 2:
        nonzero = _sum(_astype(_gt(_abs(A), 0), dtype=np.int64), axes=None, keepdims=False)
        return _astype(_gt(nonzero, 0), dtype=np.int64)
    sv = _abs(_eigvalsh(A)) if hermitian else svdvals(A)
    last = (len(s) - 2,)  # the singular values: (..., k)
    if tol is None:
        if rtol is None:
            rtol = max(s[-2:]) * float(np.finfo(np.dtype(sv.dtype)).eps)
        elif not isinstance(rtol, (int, float)):
            rtol = _trailing_axis(rtol)
        tol = _mul(_max(sv, axes=last, keepdims=True), rtol)
    elif not isinstance(tol, (int, float)):
        tol = _trailing_axis(tol)
    above = _gt(sv, tol)  # an array tol broadcasts against the stack, as numpy's
    return _sum(_astype(above, dtype=np.int64), axes=(len(shape_of(above)) - 1,), keepdims=False)


def _trailing_axis(threshold: Any) -> Any:
    """A per-matrix threshold with an axis for the singular values (numpy's ``tol[..., None]``)."""
    threshold = threshold if isinstance(threshold, Tensor) else asarray(threshold)
    return _reshape(threshold, shape=tuple(shape_of(threshold)) + (1,))


def _chain_order(dims: list[int]) -> list[list[int]]:
    """Split points of the cheapest product of matrices ``dims[i] x dims[i + 1]``.

    The textbook dynamic programme over chain lengths (Cormen et al., *Introduction to
    Algorithms*, section 15.2, matrix-chain multiplication); ``O(n^3)`` in the count,
    run on static shapes.
    """
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays: list, split: list[list[int]], i: int, j: int) -> Any:
    if i == j:
        return arrays[i]
    k = split[i][j]
    return matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


@_named("multi_dot")
def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    """Product of two or more matrices in the cheapest order (numpy's ``multi_dot``).

    The first array may be 1-d (a row vector) and the last 1-d (a column vector); the
    others are 2-d. The order minimises the scalar multiplications for the static shapes
    (the matrix-chain dynamic programme); the value is the plain product's up to rounding.

    Args:
        arrays: a sequence of at least two Tensors.
        out: not supported (Tensors are immutable).

    Returns:
        Tensor: 2-d, 1-d or 0-d as numpy's.

    Raises:
        ValueError: fewer than two arrays, or ``out`` given.
        ShapeError: an inner array is not 2-d, or the shapes do not chain.

    Example:
        >>> a, b, c = fnp.ones((2, 3)), fnp.ones((3, 4)), fnp.ones(4)
        >>> fnp.linalg.multi_dot([a, b, c])
        Tensor([12., 12.], dtype=float64)
    """
    if out is not None:
        raise ValueError("multi_dot: out= is not supported (Tensors are immutable); use the result")
    arrays = [_arr(a, "multi_dot", "arrays") for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: needs at least two arrays, got {len(arrays)}")
    first_vec, last_vec = len(shape_of(arrays[0])) == 1, len(shape_of(arrays[-1])) == 1
    if first_vec:
        arrays[0] = _reshape(arrays[0], shape=(1,) + tuple(shape_of(arrays[0])))
    if last_vec:
        arrays[-1] = _reshape(arrays[-1], shape=tuple(shape_of(arrays[-1])) + (1,))
    shapes = [tuple(shape_of(a)) for a in arrays]
    for k, s in enumerate(shapes):
        if len(s) != 2:
            raise ShapeError(f"multi_dot: array {k} must be 2-d (only the first and last may "
                             f"be 1-d), got shape {s}")
    for k in range(len(shapes) - 1):
        if shapes[k][1] != shapes[k + 1][0]:
            raise ShapeError(f"multi_dot: shapes {shapes[k]} (array {k}) and {shapes[k + 1]} "
                             f"(array {k + 1}) do not chain")
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    result = _chain(arrays, _chain_order(dims), 0, len(arrays) - 1)
    keep = tuple(d for d, drop in zip(shape_of(result), (first_vec, last_vec)) if not drop)
    return _reshape(result, shape=keep) if first_vec or last_vec else result


@_named("tensorinv")
def tensorinv(a: Any, ind: int = 2) -> Any:
    """Inverse of ``a`` for ``tensordot`` over its first ``ind`` axes (numpy's ``tensorinv``).

    ``tensordot(tensorinv(a, ind), a, ind)`` is the identity on ``a.shape[ind:]``: the
    inverse of ``a`` read as a square matrix of ``prod(shape[:ind])`` rows.

    Args:
        a: Tensor with ``prod(a.shape[:ind]) == prod(a.shape[ind:])``.
        ind: a positive int, how many leading axes index the rows.

    Returns:
        Tensor of shape ``a.shape[ind:] + a.shape[:ind]``.

    Raises:
        ValueError: ``ind`` is not positive.
        ShapeError: the two products differ.

    Example:
        >>> a = fnp.reshape(fnp.eye(4) * 2.0, (4, 2, 2))
        >>> fnp.linalg.tensorinv(a, ind=1).shape
        (2, 2, 4)
    """
    ind = _args.index(ind, "tensorinv", "ind", what="an integer")
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    a = _arr(a, "tensorinv", "a")
    s = tuple(shape_of(a))
    rows, cols = math.prod(s[:ind]), math.prod(s[ind:])
    if rows != cols:
        raise ShapeError(f"tensorinv: prod(shape[:{ind}]) = {rows} must equal "
                         f"prod(shape[{ind}:]) = {cols}; shape {s}")
    return _reshape(inv(_reshape(a, shape=(rows, cols))), shape=s[ind:] + s[:ind])


@_named("tensorsolve")
def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` (numpy's ``tensorsolve``).

    Args:
        a: Tensor whose leading ``b.ndim`` axes hold as many elements as ``b`` and whose
            trailing ones are ``x``'s, with as many elements again (numpy reads the
            leading group in order, whatever its shape).
        b: Tensor.
        axes: axes of ``a`` to move to the end first, or None.

    Returns:
        Tensor ``x`` of shape ``a.shape[b.ndim:]``.

    Raises:
        ShapeError: the two groups of axes of ``a`` and ``b`` differ in size.

    Example:
        >>> a = fnp.reshape(fnp.eye(6) * 2.0, (2, 3, 6))
        >>> fnp.linalg.tensorsolve(a, fnp.ones((2, 3))).shape
        (6,)
    """
    a, b = _arr(a, "tensorsolve", "a"), _arr(b, "tensorsolve", "b")
    if not isinstance(b, Tensor):
        b = asarray(b)
    if axes is not None:
        nd = len(shape_of(a))
        moved = list(_args.axes(axes, "tensorsolve", nd, "axes"))
        a = _permute_dims(a, axes=tuple(i for i in range(nd) if i not in moved) + tuple(moved))
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    x_shape = sa[len(sb):]
    rows, cols = math.prod(sb), math.prod(x_shape)
    if rows != cols or math.prod(sa[: len(sb)]) != rows:
        raise ShapeError(f"tensorsolve: a {sa} must be square as a matrix ({rows} rows for b "
                         f"{sb}, {cols} columns for x {x_shape})")
    x = solve(_reshape(a, shape=(rows, cols)), _reshape(b, shape=(rows, 1)))
    return _reshape(x, shape=x_shape)


@_named("cross")
def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-vectors along ``axis`` (numpy 2's and the Array API's).

    Unlike ``fnp.cross``, both vectors must have length 3 along ``axis``; the other axes
    broadcast.

    Args:
        x1, x2: Tensors with size 3 along ``axis``.
        axis: the vector axis (an int).

    Returns:
        Tensor of the broadcast shape, promoted dtype.

    Raises:
        ShapeError: a vector axis does not have length 3.

    Example:
        >>> fnp.linalg.cross(fnp.array([0.0, 1.0, 0.0]), fnp.array([0.0, 0.0, 1.0]))
        Tensor([1., 0., 0.], dtype=float64)
    """
    from fgrad.numpy._extras import cross as _cross

    axis = _args.index(axis, "cross", "axis")
    x1, x2 = _arr(x1, "cross", "x1"), _arr(x2, "cross", "x2")
    for name, x in (("x1", x1), ("x2", x2)):
        s = tuple(shape_of(x))
        if not s or not -len(s) <= axis < len(s) or s[axis] != 3:
            raise ShapeError(f"cross: {name} must have size 3 along axis {axis}, got shape {s}")
    return _cross(x1, x2, axis=axis)
