"""Matrix ops for ``fgrad.scipy.linalg``: the matrix exponential, the principal matrix
square root, the LU decomposition with partial pivoting and the Schur decomposition, each
over the last two axes and broadcast over leading ones.

Both are real-input ops computed in float64 (float32 input is rounded once at the end).
Their derivatives are Frechet derivatives, written with fgrad ops so that they are
differentiable again:

* ``expm``: ``L(A, E)`` is the top-right block of ``expm([[A, E], [0, A]])`` (Higham,
  *Functions of Matrices*, 2008, theorem 3.6; the route Al-Mohy and Higham 2009 take for
  ``expm_frechet``); the adjoint under ``sum(ct * t)`` is ``L(A^T, ct)``;
* ``sqrtm``: ``E = L(A, T)`` solves the Sylvester equation ``X E + E X = T`` with
  ``X = sqrtm(A)`` (Higham 2008, 6.1), solved here as the ``n^2 x n^2`` Kronecker system;
  the adjoint solves the same equation with ``X^T``;
* ``lu``: with ``A[perm] = L U`` and ``F = L^-1 dA[perm] U^-1``,
  ``dL = L tril(F, -1)`` and ``dU = triu(F) U`` (de Hoog, Anderssen and Lukas 2011;
  the forward-mode form JAX's ``lu`` uses); the adjoint is
  ``A_bar[perm] = L^-T (tril(L^T L_bar, -1) + triu(U_bar U^T)) U^-T``.
"""

from __future__ import annotations

import math

import numpy as np

from fgrad import dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._rules import ndim_of, shape_of
from fgrad.ops.elementwise import add, astype, equal, multiply, subtract
from fgrad.ops.indexing import getitem
from fgrad.ops.linalg import _right_solve, _stack_batch, matmul, solve, tril
from fgrad.ops.shape import concatenate, permute_dims, reshape
from fgrad.tensor import ShapeDtype

__all__ = ["expm", "lu", "lu_pivots_to_permutation", "schur", "sqrtm"]


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


# ---------------------------------------------------------------------- lu


def _lu_aval(x):
    s = _square_real_aval("lu")(x)
    index = ShapeDtype(s.shape[:-1], np.dtype(np.int32))
    return s, index, index


def _swap_rows(xp, m, rows, k, p):
    """Entries ``k`` and ``p[i]`` of each row ``i`` of the stack ``m`` exchanged, in place
    (``m[i, k]`` may itself be a row of a matrix)."""
    at_k, at_p = m[rows, k].copy(), m[rows, p].copy()
    m[rows, k], m[rows, p] = at_p, at_k


def _lu_kernel(xp, a):
    """Doolittle elimination with partial pivoting (Golub and Van Loan, *Matrix
    Computations*, 4th ed., algorithm 3.4.1), one column at a time over the whole stack:
    returns the packed factors (``L`` below the diagonal, unit diagonal implied; ``U`` on
    and above it), LAPACK's pivots (row ``k`` was swapped with row ``piv[k]``, 0-based) and
    the permutation ``perm`` with ``a[perm] = L U``. A zero pivot column is left as it is
    (the matrix is singular: ``U`` gets a zero on its diagonal, as LAPACK's getrf)."""
    a, name = _wide(xp, a)
    shape = a.shape
    n = shape[-1]
    m = xp.reshape(xp.asarray(a, copy=True), (-1, n, n))
    count = m.shape[0]
    rows = xp.arange(count)
    perm = xp.broadcast_to(xp.arange(n), (count, n)).copy()
    piv = xp.zeros((count, n), dtype=xp.int32)
    for k in range(n):
        p = k + xp.argmax(xp.abs(m[:, k:, k]), axis=-1)
        piv[:, k] = p
        _swap_rows(xp, m, rows, k, p)
        _swap_rows(xp, perm, rows, k, p)
        pivot = m[:, k, k]
        ok = pivot != 0
        factor = xp.where(ok[:, None], m[:, k + 1:, k] / xp.where(ok, pivot, 1.0)[:, None], 0.0)
        m[:, k + 1:, k] = factor
        m[:, k + 1:, k + 1:] -= factor[:, :, None] * m[:, k, None, k + 1:]
    lead = shape[:-2]
    return (
        _narrow(xp, xp.reshape(m, shape), name),
        xp.reshape(piv, lead + (n,)),
        xp.reshape(xp.astype(perm, xp.int32), lead + (n,)),
    )


def _lu_parts(packed):
    """``(L, U)`` from the packed factors (fgrad ops)."""
    n = shape_of(packed)[-1]
    eye = _eye(n, packed)
    return add(tril(packed, k=-1), eye), _mT(tril(_mT(packed), k=0))


def _permutation_matrix(perm, like):
    """``E`` with ``E @ x = x[perm]`` for each stack entry (one-hot rows, a constant)."""
    n = shape_of(perm)[-1]
    onehot = equal(reshape(perm, shape=shape_of(perm) + (1,)), np.arange(n, dtype=np.int32))
    return astype(onehot, dtype=np.dtype(dtypes.result_type(like)))


def _lu_jvp(t, out, a):
    packed, _, perm = out
    low, up = _lu_parts(packed)
    f = _right_solve(solve(low, matmul(_permutation_matrix(perm, a), t)), up)
    strict = tril(f, k=-1)
    upper = subtract(f, strict)
    return add(matmul(low, strict), matmul(upper, up)), None, None


def _lu_vjp(ct, out, a):
    packed, _, perm = out
    low, up = _lu_parts(packed)
    c = ct[0]
    lower_part = tril(matmul(_mT(low), c), k=-1)
    cu = matmul(c, _mT(up))
    inner = add(lower_part, subtract(cu, tril(cu, k=-1)))
    grad_permuted = _right_solve(solve(_mT(low), inner), _mT(up))
    return matmul(_mT(_permutation_matrix(perm, a)), grad_permuted)


lu = defop(
    "lu",
    kernel=_lu_kernel,
    aval=_lu_aval,
    multiple_results=True,
    jvp=(_lu_jvp,),
    vjp=(_lu_vjp,),
    batch=_stack_batch,
    # row swaps by integer-array assignment: the Array API has no in-place update
    check=Check(shapes=(((3, 3),), ((2, 4, 4),)), make_args=_random_matrices, strict=False),
    doc="""The LU decomposition with partial pivoting of each square matrix, packed.

    ``a[perm] = L U`` with ``L`` unit lower triangular and ``U`` upper triangular, as
    LAPACK's ``getrf`` (and ``jax.lax.linalg.lu``). Differentiable in ``a`` through the
    packed factors (the pivots are piecewise constant); at a singular matrix ``U`` has a
    zero on its diagonal and the derivative is not finite.

    Args:
        a: ``(..., n, n)`` real Tensor (integers and bools give float64).

    Returns:
        ``(lu, pivots, perm)``: ``lu`` of ``a.shape`` (``L`` strictly below the diagonal,
        ``U`` on and above it); ``pivots`` ``(..., n)`` int32, LAPACK's row swaps
        (0-based, as scipy's ``lu_factor``); ``perm`` ``(..., n)`` int32.

    Raises:
        ShapeError: ``a`` is not a (stack of) square matrices.
        DTypeError: complex input.

    Example:
        >>> from fgrad.ops.linalg_extra import lu
        >>> packed, pivots, perm = lu(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> packed, pivots, perm
        (Tensor([[3.        , 4.        ],
                [0.33333333, 0.66666667]], dtype=float64), Tensor([1, 1], dtype=int32), Tensor([1, 0], dtype=int32))

    References:
        Golub and Van Loan, *Matrix Computations*, 4th ed., 2013, algorithm 3.4.1; the
        derivative of F. R. de Hoog, R. S. Anderssen and M. A. Lukas, "Differentiation of
        matrix functionals using triangular factorization", Math. Comp. 80, 2011.
    """,
)


def _pivots_aval(piv):
    s = shape_of(piv)
    dtype = np.dtype(dtypes.result_type(piv))
    if len(s) < 1 or dtype.kind not in "iu":
        raise DTypeError(
            f"lu_pivots_to_permutation: expected integer pivots of shape (..., n), got "
            f"{_describe(piv)}"
        )
    return ShapeDtype(s, np.dtype(np.int32))


def _pivots_kernel(xp, piv):
    """The permutation the row swaps ``k <-> piv[k]``, applied in order, make."""
    shape = piv.shape
    n = shape[-1]
    p = xp.reshape(piv, (-1, n))
    count = p.shape[0]
    rows = xp.arange(count)
    perm = xp.broadcast_to(xp.arange(n, dtype=xp.int32), (count, n)).copy()
    for k in range(n):
        _swap_rows(xp, perm, rows, k, p[:, k])
    return xp.reshape(perm, shape)


def _pivot_samples(rng, shapes):
    out = []
    for s in shapes:
        n = s[-1]
        out.append(np.stack([rng.integers(k, n, s[:-1]) for k in range(n)], axis=-1).astype(np.int32))
    return out


lu_pivots_to_permutation = defop(
    "lu_pivots_to_permutation",
    kernel=_pivots_kernel,
    aval=_pivots_aval,
    nondiff=True,
    batch=_stack_batch,
    check=Check(shapes=(((3,),), ((2, 4),)), make_args=_pivot_samples, strict=False),
    doc="""The row permutation that LAPACK-style pivots describe.

    Row ``k`` swapped with row ``pivots[k]``, for ``k = 0, 1, ...`` in turn, takes
    ``arange(n)`` to ``perm`` (``jax.lax.linalg.lu_pivots_to_permutation``); ``a[perm]``
    is then ``L U``. Not differentiable (integer output).

    Args:
        pivots: ``(..., n)`` integer Tensor, ``k <= pivots[k] < n``.

    Returns:
        ``(..., n)`` int32 Tensor.

    Raises:
        DTypeError: ``pivots`` is not an integer Tensor of at least one dimension.

    Example:
        >>> from fgrad.ops.linalg_extra import lu_pivots_to_permutation
        >>> lu_pivots_to_permutation(fnp.array([2, 2, 2], dtype="int32"))
        Tensor([2, 0, 1], dtype=int32)

    References:
        LAPACK's ``getrf`` pivot convention (``ipiv``, here 0-based as scipy's).
    """,
)


# ---------------------------------------------------------------------- schur

_SCHUR_MAX_SWEEPS = 40  # per eigenvalue, as LAPACK's dhseqr allows about 30


def _reflect(xp, w):
    """The unit Householder vector ``v`` with ``(I - 2 v v^T) w = -sign(w_0) |w| e_1``
    (zero for a zero ``w``: the identity)."""
    norm = float(xp.sqrt(xp.sum(w * w)))
    if norm == 0.0:
        return xp.zeros_like(w)
    v = xp.asarray(w, copy=True)
    v[0] += norm if float(w[0]) >= 0 else -norm
    return v / xp.sqrt(xp.sum(v * v))


def _reflect_rows(h, v, rows, cols):
    block = h[rows, cols]
    h[rows, cols] = block - 2.0 * v[:, None] * (v @ block)[None, :]


def _reflect_cols(h, v, rows, cols):
    block = h[rows, cols]
    h[rows, cols] = block - 2.0 * (block @ v)[:, None] * v[None, :]


def _rotate(h, z, i, c, s, n):
    """``h <- G^T h G``, ``z <- z G`` for the rotation ``G = [[c, -s], [s, c]]`` in the
    plane ``(i, i + 1)``."""
    rows = h[i : i + 2, i:].copy()
    h[i, i:], h[i + 1, i:] = c * rows[0] + s * rows[1], -s * rows[0] + c * rows[1]
    for m in (h[: i + 2], z):
        cols = m[:, i : i + 2].copy()
        m[:, i], m[:, i + 1] = c * cols[:, 0] + s * cols[:, 1], -s * cols[:, 0] + c * cols[:, 1]


def _standardize(xp, h, z, i, n):
    """The 2x2 diagonal block at ``(i, i + 1)`` in LAPACK's standard form: upper
    triangular if its eigenvalues are real, else equal diagonal entries (``b c < 0``)."""
    a, b, c, d = float(h[i, i]), float(h[i, i + 1]), float(h[i + 1, i]), float(h[i + 1, i + 1])
    if c == 0.0:
        return
    p = 0.5 * (a - d)
    disc = p * p + b * c
    if disc >= 0:  # real eigenvalues: the first column of G is an eigenvector
        lam = d + p + math.copysign(math.sqrt(disc), p) if p != 0 else d + math.sqrt(disc)
        u = (b, lam - a) if abs(b) + abs(lam - a) >= abs(lam - d) + abs(c) else (lam - d, c)
        r = math.hypot(*u)
        _rotate(h, z, i, u[0] / r, u[1] / r, n)
        h[i + 1, i] = 0.0
        return
    # complex pair: the angle that equalises the diagonal of G^T B G, with
    # G = [[cos t, -sin t], [sin t, cos t]]: (a - d) cos 2t + (b + c) sin 2t = 0
    theta = 0.5 * math.atan2(d - a, b + c) if (a - d) != 0 else 0.0
    _rotate(h, z, i, math.cos(theta), math.sin(theta), n)
    mean = 0.5 * (float(h[i, i]) + float(h[i + 1, i + 1]))
    h[i, i] = h[i + 1, i + 1] = mean


def _real_schur(xp, a, complex_form=False):
    """``(T, Z)`` with ``a = Z T Z^T`` for one real matrix: Householder reduction to
    Hessenberg form, then Francis double-shift QR steps with deflation (Golub and Van Loan,
    *Matrix Computations*, 4th ed., algorithms 7.4.2, 7.5.1 and 7.5.2), ad hoc shifts
    after 10 and 20 steps without deflation (as EISPACK's hqr2), and each 2x2 block
    standardised (as LAPACK's dlanv2). NaN if it does not converge."""
    n = a.shape[0]
    h = xp.asarray(a, copy=True)
    z = xp.eye(n, dtype=h.dtype)
    if not bool(xp.all(xp.isfinite(h))):
        return (_complex_schur(xp, h, z) if complex_form else (h, z))[0] * math.nan, z * math.nan
    # scaled by a power of two near its largest entry (exact), so squares neither
    # overflow nor underflow; T is scaled back at the end
    big = float(xp.max(xp.abs(h))) if n else 0.0
    unit = 2.0 ** round(math.log2(big)) if big > 0 else 1.0
    h = h / unit
    t, z = _francis(xp, h, z)
    if complex_form:
        t, z = _complex_schur(xp, t, z)
    return t * unit, z


def _francis(xp, h, z):
    """Hessenberg reduction and the Francis QR steps of :func:`_real_schur`, in place."""
    n = h.shape[0]
    for k in range(n - 2):  # Hessenberg
        v = _reflect(xp, h[k + 1 :, k])
        _reflect_rows(h, v, slice(k + 1, n), slice(k, n))
        _reflect_cols(h, v, slice(0, n), slice(k + 1, n))
        _reflect_cols(z, v, slice(0, n), slice(k + 1, n))
        h[k + 2 :, k] = 0.0
    eps = 2.0**-52
    scale = float(xp.sum(xp.abs(h))) or 1.0
    hi, sweeps, total = n - 1, 0, 0
    while hi >= 1:
        lo = hi
        while lo > 0:  # the lowest negligible subdiagonal entry above row hi
            s = abs(float(h[lo - 1, lo - 1])) + abs(float(h[lo, lo]))
            if abs(float(h[lo, lo - 1])) <= eps * (s if s != 0 else scale):
                h[lo, lo - 1] = 0.0
                break
            lo -= 1
        if lo == hi:  # a 1x1 block has converged
            hi, sweeps = hi - 1, 0
            continue
        if lo == hi - 1:  # a 2x2 block
            _standardize(xp, h, z, hi - 1, n)
            hi, sweeps = hi - 2, 0
            continue
        sweeps += 1
        total += 1
        if total > _SCHUR_MAX_SWEEPS * n:
            return h * math.nan, z * math.nan
        if sweeps % 10 == 0:  # ad hoc shifts break a cycle
            w = abs(float(h[hi, hi - 1])) + abs(float(h[hi - 1, hi - 2]))
            trace, det = 1.5 * w, 0.5625 * w * w
        else:  # the eigenvalues of the trailing 2x2 block
            trace = float(h[hi - 1, hi - 1] + h[hi, hi])
            det = float(h[hi - 1, hi - 1] * h[hi, hi] - h[hi - 1, hi] * h[hi, hi - 1])
        x = float(h[lo, lo] ** 2 + h[lo, lo + 1] * h[lo + 1, lo] - trace * h[lo, lo]) + det
        y = float(h[lo + 1, lo] * (h[lo, lo] + h[lo + 1, lo + 1] - trace))
        w3 = float(h[lo + 1, lo] * h[lo + 2, lo + 1])
        for k in range(lo, hi - 1):  # chase the bulge down (algorithm 7.5.1)
            v = _reflect(xp, xp.asarray([x, y, w3], dtype=h.dtype))
            q = max(lo, k - 1)
            _reflect_rows(h, v, slice(k, k + 3), slice(q, n))
            r = min(k + 4, hi + 1)
            _reflect_cols(h, v, slice(0, r), slice(k, k + 3))
            _reflect_cols(z, v, slice(0, n), slice(k, k + 3))
            if k > lo:
                h[k + 1 : k + 3, k - 1] = 0.0
            x, y = float(h[k + 1, k]), float(h[k + 2, k])
            if k < hi - 2:
                w3 = float(h[k + 3, k])
        v = _reflect(xp, xp.asarray([x, y], dtype=h.dtype))
        _reflect_rows(h, v, slice(hi - 1, hi + 1), slice(hi - 2, n))
        _reflect_cols(h, v, slice(0, hi + 1), slice(hi - 1, hi + 1))
        _reflect_cols(z, v, slice(0, n), slice(hi - 1, hi + 1))
        h[hi, hi - 2] = 0.0
    return h, z


def _complex_schur(xp, t, z):
    """The complex (upper triangular) Schur form from the real one: each standardised 2x2
    block is triangularised by a unitary rotation built from one of its eigenvalues (the
    method of scipy's ``rsf2csf``)."""
    t = xp.astype(t, xp.complex128)
    z = xp.astype(z, xp.complex128)
    n = t.shape[0]
    for m in range(n - 1, 0, -1):
        if t[m, m - 1] == 0:
            continue
        a, b, c, d = t[m - 1, m - 1], t[m - 1, m], t[m, m - 1], t[m, m]
        half = 0.5 * (a + d)
        root = xp.sqrt(complex(0.25 * (a - d) ** 2 + b * c))
        mu = half + root - d
        r = math.hypot(abs(mu), abs(c))
        cs, sn = mu / r, c / r
        g = xp.asarray([[xp.conj(cs), sn], [-sn, cs]])
        t[m - 1 : m + 1, m - 1 :] = g @ t[m - 1 : m + 1, m - 1 :]
        t[: m + 1, m - 1 : m + 1] = t[: m + 1, m - 1 : m + 1] @ xp.conj(g.T)
        z[:, m - 1 : m + 1] = z[:, m - 1 : m + 1] @ xp.conj(g.T)
        t[m, m - 1] = 0
    return t, z


def _schur_kernel(xp, a, *, output):
    a, name = _wide(xp, a)
    shape = a.shape
    n = shape[-1]
    stack = xp.reshape(a, (-1, n, n))
    ts, zs = [], []
    with np.errstate(all="ignore"):  # a matrix that does not converge gives NaN, silently
        for m in stack:
            t, z = _real_schur(xp, m, output == "complex")
            ts.append(t)
            zs.append(z)
    t = xp.reshape(xp.stack(ts), shape) if ts else xp.zeros(shape, dtype=a.dtype)
    z = xp.reshape(xp.stack(zs), shape) if zs else xp.zeros(shape, dtype=a.dtype)
    if output == "complex":
        cname = "complex64" if name == "float32" else "complex128"
        return xp.astype(t, getattr(xp, cname)), xp.astype(z, getattr(xp, cname))
    return _narrow(xp, t, name), _narrow(xp, z, name)


def _schur_aval(x, *, output):
    s = _square_real_aval("schur")(x)
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    if output == "complex":
        s = ShapeDtype(s.shape, np.dtype(np.complex64 if s.dtype == np.float32 else np.complex128))
    return s, s


def _no_schur_derivative(*_, **params):
    raise NotImplementedError(
        "schur: the Schur form is not differentiable here (it is not unique: the order "
        "of the eigenvalues and the signs of Z's columns are arbitrary; JAX refuses it too). "
        "Differentiate fnp.linalg.eigvals for the eigenvalues, or a function of the matrix "
        "itself"
    )


schur = defop(
    "schur",
    kernel=_schur_kernel,
    aval=_schur_aval,
    multiple_results=True,
    jvp=(_no_schur_derivative,),
    vjp=_no_schur_derivative,
    batch=_stack_batch,
    # element assignment in the QR sweeps: no Array API form; no derivative to check
    check=Check(
        shapes=(((4, 4),), ((2, 3, 3),)), params=({"output": "real"}, {"output": "complex"}),
        make_args=_random_matrices, modes=(), strict=False,
    ),
    doc="""The Schur decomposition ``a = Z T Z^H`` of each real square matrix.

    ``output="real"``: ``Z`` orthogonal and ``T`` quasi-upper-triangular, with a 2x2 block
    for each complex-conjugate pair of eigenvalues, in LAPACK's standard form (equal
    diagonal entries, off-diagonal entries of opposite signs); real eigenvalues' blocks
    are 1x1. ``output="complex"``: ``Z`` unitary and ``T`` upper triangular. As
    ``scipy.linalg.schur`` for real input, up to the order of the eigenvalues along the
    diagonal and the signs (phases) of ``Z``'s columns, which a Schur form leaves free.
    A matrix with a non-finite entry, or a QR iteration that does not converge, gives
    NaN. Not differentiable (as JAX's).

    Args:
        a: ``(..., n, n)`` real Tensor (integers and bools give float64).
        output: ``"real"`` or ``"complex"``.

    Returns:
        ``(T, Z)``, each of ``a.shape``: ``a``'s floating dtype for ``"real"``, the
        matching complex dtype for ``"complex"``.

    Raises:
        ShapeError: ``a`` is not a (stack of) square matrices.
        DTypeError: complex input.
        ValueError: an unknown ``output``.
        NotImplementedError: when differentiated.

    Example:
        >>> from fgrad.ops.linalg_extra import schur
        >>> t, z = schur(fnp.array([[1.0, 2.0], [0.5, 1.0]]), output="real")
        >>> fnp.round(fnp.diagonal(t), 6)
        Tensor([2., 0.], dtype=float64)

    References:
        G. H. Golub and C. F. Van Loan, *Matrix Computations*, 4th ed., 2013, algorithms
        7.4.2 (Hessenberg reduction), 7.5.1 (the Francis double-shift step) and 7.5.2
        (the QR algorithm); the 2x2 standard form of LAPACK's ``dlanv2``.
    """,
)
