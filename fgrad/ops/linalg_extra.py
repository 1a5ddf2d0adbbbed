"""Matrix-function ops for ``fgrad.scipy.linalg``: the matrix exponential and the principal
matrix square root, each over the last two axes and broadcast over leading ones.

Both are real-input ops computed in float64 (float32 input is rounded once at the end).
Their derivatives are Frechet derivatives, written with fgrad ops so that they are
differentiable again:

* ``expm``: ``L(A, E)`` is the top-right block of ``expm([[A, E], [0, A]])`` (Higham,
  *Functions of Matrices*, 2008, theorem 3.6; the route Al-Mohy and Higham 2009 take for
  ``expm_frechet``); the adjoint under ``sum(ct * t)`` is ``L(A^T, ct)``;
* ``sqrtm``: ``E = L(A, T)`` solves the Sylvester equation ``X E + E X = T`` with
  ``X = sqrtm(A)`` (Higham 2008, 6.1), solved here as the ``n^2 x n^2`` Kronecker system;
  the adjoint solves the same equation with ``X^T``.
"""

from __future__ import annotations

import math

import numpy as np

from fgrad import dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._rules import ndim_of, shape_of
from fgrad.ops.elementwise import add, multiply
from fgrad.ops.indexing import getitem
from fgrad.ops.linalg import _stack_batch, solve
from fgrad.ops.shape import concatenate, permute_dims, reshape
from fgrad.tensor import ShapeDtype

__all__ = ["expm", "sqrtm"]


def _describe(x) -> str:
    return str(ShapeDtype(shape_of(x), np.dtype(dtypes.result_type(x))))


def _square_real_aval(name: str):
    def rule(x):
        s = shape_of(x)
        dtype = np.dtype(dtypes.result_type(x))
        if len(s) < 2 or s[-1] != s[-2]:
            raise ShapeError(
                f"{name}: expected a square matrix or a stack of them, shape (..., n, n); "
                f"got {_describe(x)}"
            )
        if dtype.kind == "c":
            raise DTypeError(
                f"{name}: complex input {_describe(x)} is not supported; pass a real matrix"
            )
        return ShapeDtype(s, dtype if dtype.kind == "f" else np.dtype(np.float64))

    rule.real_only = True
    return rule


def _dtype_name(x) -> str:
    return str(x.dtype).rsplit(".", 1)[-1]


def _wide(xp, x):
    name = _dtype_name(x)
    out_name = name if name.startswith("float") else "float64"
    return (x if name == "float64" else xp.astype(x, xp.float64)), out_name


def _narrow(xp, x, name: str):
    return x if name == "float64" else xp.astype(x, getattr(xp, name))


def _eye_like(xp, a):
    n = a.shape[-1]
    return xp.eye(n, dtype=a.dtype) + xp.zeros_like(a)


def _mT(x):
    n = ndim_of(x)
    return permute_dims(x, axes=tuple(range(n - 2)) + (n - 1, n - 2))


# ---------------------------------------------------------------------- expm

# N. J. Higham, "The scaling and squaring method for the matrix exponential revisited",
# SIAM J. Matrix Anal. Appl. 26(4), 2005: the [13/13] Pade approximant after scaling by
# 2^-s with ||A / 2^s||_1 <= theta_13, then s squarings. The coefficients b_k of the
# approximant's numerator are (26 - k)! 13! / (26! (13 - k)! k!) scaled to integers, as
# the paper gives them.
_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)
_THETA13 = 5.371920351148152


def _expm_kernel(xp, a):
    a, name = _wide(xp, a)
    if a.shape[-1] == 0:
        return _narrow(xp, a, name)
    norm = xp.max(xp.sum(xp.abs(a), axis=-2), axis=-1)  # the 1-norm of each matrix
    finite = xp.isfinite(norm)
    ratio = xp.where(finite, norm, 0.0) / _THETA13
    s = xp.where(ratio > 1, xp.ceil(xp.log2(xp.where(ratio > 1, ratio, 1.0))), 0.0)
    scaled = a / (2.0 ** s)[..., None, None]
    b = _PADE13
    ident = _eye_like(xp, scaled)
    a2 = scaled @ scaled
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = scaled @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    r = xp.linalg.solve(v - u, v + u)
    steps = int(xp.max(s)) if s.size else 0
    for k in range(steps):
        r = xp.where((k < s)[..., None, None], r @ r, r)
    r = xp.where(finite[..., None, None], r, math.nan)
    return _narrow(xp, r, name)


def _corner(a, e):
    """``[[a, e], [0, a]]`` of each matrix (fgrad ops, so the rule differentiates again)."""
    n = ndim_of(a)
    zero = multiply(a, 0.0)
    top = concatenate(a, e, axis=n - 1)
    bottom = concatenate(zero, a, axis=n - 1)
    return concatenate(top, bottom, axis=n - 2)


def _top_right(m, size: int):
    shape = shape_of(m)
    index = tuple((0, d, 1) for d in shape[:-2]) + ((0, size, 1), (size, 2 * size, 1))
    return getitem(m, index=index)


def _expm_frechet(a, e):
    """``L(A, E)``: the top-right block of ``expm([[A, E], [0, A]])``."""
    return _top_right(expm(_corner(a, e)), shape_of(a)[-1])


def _random_matrices(rng, shapes):
    return [0.6 * rng.standard_normal(s) for s in shapes]


expm = defop(
    "expm",
    kernel=_expm_kernel,
    aval=_square_real_aval("expm"),
    jvp=(lambda t, out, a: _expm_frechet(a, t),),
    vjp=(lambda ct, out, a: _expm_frechet(_mT(a), ct),),
    batch=_stack_batch,
    check=Check(shapes=(((3, 3),), ((2, 2, 2),)), make_args=_random_matrices),
    doc="""The matrix exponential ``sum_k A^k / k!`` of each square matrix.

    Scaling and squaring with the [13/13] Pade approximant (scipy's ``expm`` for real
    input). The derivative is the Frechet derivative ``L(A, E)``, the top-right block of
    ``expm([[A, E], [0, A]])``; the VJP is ``L(A^T, ct)``. A matrix with a non-finite
    entry gives NaN.

    Args:
        a: ``(..., n, n)`` real Tensor (integers and bools give float64).

    Returns:
        Tensor of ``a.shape``, floating dtype of ``a``.

    Raises:
        ShapeError: ``a`` is not a (stack of) square matrices.
        DTypeError: complex input.

    Example:
        >>> from fgrad.scipy.linalg import expm
        >>> expm(fnp.array([[0.0, 1.0], [-1.0, 0.0]]))
        Tensor([[ 0.54030231,  0.84147098],
                [-0.84147098,  0.54030231]], dtype=float64)

    References:
        N. J. Higham, "The scaling and squaring method for the matrix exponential
        revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005; the Frechet derivative by the
        block form of Higham, *Functions of Matrices*, 2008, theorem 3.6 (used by A. H.
        Al-Mohy and N. J. Higham, SIAM J. Matrix Anal. Appl. 30(4), 2009).
    """,
)


# ---------------------------------------------------------------------- sqrtm

_SQRTM_MAX_ITER = 100


def _sqrtm_kernel(xp, a):
    a, name = _wide(xp, a)
    n = a.shape[-1]
    if n == 0:
        return _narrow(xp, a, name)
    # The product form of the Denman-Beavers iteration with determinant scaling (Higham,
    # Functions of Matrices, 2008, eq. 6.29): M_0 = A, X_0 = A;
    # X <- mu X (I + (mu^2 M)^-1) / 2, M <- (I + (mu^2 M + (mu^2 M)^-1) / 2) / 2 with
    # mu = |det M|^(-1/(2n)); X -> A^(1/2), M -> I.
    ident = _eye_like(xp, a)
    x = a
    m = a
    for k in range(_SQRTM_MAX_ITER):
        if k < 8:
            sign, logdet = xp.linalg.slogdet(m)
            mu = xp.exp(-logdet / (2 * n))[..., None, None]
        else:
            mu = 1.0
        mm = mu * mu * m
        inv = xp.linalg.inv(mm)
        x = mu * (x @ (ident + inv)) / 2
        m = (ident + (mm + inv) / 2) / 2
        err = xp.max(xp.abs(m - ident))
        if not bool(err > 1e-15) and k >= 2:
            break
    return _narrow(xp, x, name)


def _sylvester(x, t):
    """``E`` with ``X E + E X = T`` for each matrix (the Kronecker system, fgrad ops)."""
    shape = shape_of(x)
    n = shape[-1]
    lead = shape[:-2]
    ident = add(multiply(x, 0.0), _eye(n, x))
    # M[(i, j), (k, l)] = X_ik d_jl + d_ik X_lj
    left = multiply(reshape(x, shape=lead + (n, 1, n, 1)), reshape(ident, shape=lead + (1, n, 1, n)))
    right = multiply(reshape(ident, shape=lead + (n, 1, n, 1)), reshape(_mT(x), shape=lead + (1, n, 1, n)))
    system = reshape(add(left, right), shape=lead + (n * n, n * n))
    flat = solve(system, reshape(t, shape=lead + (n * n, 1)))
    return reshape(flat, shape=shape)


def _eye(n: int, like):
    from fgrad.ops.elementwise import astype

    return astype(np.eye(n), dtype=np.dtype(dtypes.result_type(like)))


def _positive_matrices(rng, shapes):
    out = []
    for s in shapes:
        n = s[-1]
        out.append(0.4 * rng.standard_normal(s) + 2.0 * np.eye(n))
    return out


sqrtm = defop(
    "sqrtm",
    kernel=_sqrtm_kernel,
    aval=_square_real_aval("sqrtm"),
    jvp=(lambda t, out, a: _sylvester(out, t),),
    vjp=(lambda ct, out, a: _sylvester(_mT(out), ct),),
    batch=_stack_batch,
    check=Check(shapes=(((3, 3),), ((2, 2, 2),)), make_args=_positive_matrices),
    doc="""The principal square root ``X`` of each square matrix: ``X @ X = A``.

    For real matrices with no eigenvalue on the closed negative real axis (then the
    principal root is real); elsewhere the iteration does not converge and the result is
    not a root (scipy would return a complex one). The derivative ``E`` solves the
    Sylvester equation ``X E + E X = T``; the VJP solves it with ``X^T``.

    Args:
        a: ``(..., n, n)`` real Tensor (integers and bools give float64).

    Returns:
        Tensor of ``a.shape``, floating dtype of ``a``.

    Raises:
        ShapeError: ``a`` is not a (stack of) square matrices.
        DTypeError: complex input.

    Example:
        >>> from fgrad.scipy.linalg import sqrtm
        >>> sqrtm(fnp.array([[4.0, 1.0], [0.0, 9.0]]))
        Tensor([[2. , 0.2],
                [0. , 3. ]], dtype=float64)

    References:
        E. D. Denman and A. N. Beavers, "The matrix sign function and computations in
        systems", Appl. Math. Comput. 2, 1976, in the scaled product form of N. J.
        Higham, *Functions of Matrices*, SIAM 2008, eq. 6.29; the derivative by
        Higham 2008, section 6.1.
    """,
)
