"""General (non-Hermitian) eigendecomposition ops: ``eig`` and ``eigvals``.

Both return complex results, as numpy's do (complex128 for float64 or integer input,
complex64 for float32). numpy computes them (LAPACK ``geev``); cupy has no general
eigensolver, so on cupy they raise and say to move the matrix to the CPU.

Derivatives follow JAX:

* ``eigvals`` is differentiable (first order): with ``A = V diag(w) V^-1``,
  ``dw = diag(V^-1 dA V)`` (Giles 2008, section 3.1; Magnus 1985), and its VJP is the
  transpose of that linear map, ``V^-T diag(w_bar) V^T`` (the real part for real input),
  with no conjugation, the convention of the other holomorphic linalg ops.
* ``eig``'s eigenvectors are normalised to unit length with an arbitrary phase, so their
  derivative is only defined for functions that do not depend on that phase, and only for
  distinct eigenvalues: fgrad cannot check either, so differentiating ``eig`` raises, as
  JAX's does by default; ``eigvals`` (or ``eigh`` for Hermitian input) has the
  eigenvalue gradient.
"""

from __future__ import annotations

import numpy as np

from fgrad import dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError
from fgrad.ops.elementwise import multiply, real
from fgrad.ops.linalg import (
    _expand,
    _linalg_dtype,
    _mT,
    _square,
    _stack_batch,
    diagonal,
    matmul,
    solve,
)
from fgrad.tensor import ShapeDtype


def _complex_dtype(name: str, x) -> np.dtype:
    return np.result_type(_linalg_dtype(name, x), np.complex64)


def _solver(xp, name: str):
    """``xp.linalg.eig`` or ``eigvals``; cupy has neither (only the Hermitian ``eigh``)."""
    fn = getattr(xp.linalg, name, None)
    if fn is None:
        raise DTypeError(
            f"{name}: {xp.__name__} has no general eigensolver; move the matrix to the CPU "
            "(fgrad.device_put(x, 'cpu')), or use eigh/eigvalsh for Hermitian matrices"
        )
    return fn


def _complex_result(xp, arrays, dtype):
    return tuple(xp.asarray(a).astype(dtype, copy=False) for a in arrays)


def _eigvals_aval(x):
    s = _square("eigvals", x)
    return ShapeDtype(s[:-1], _complex_dtype("eigvals", x))


def _eigvals_kernel(xp, x):
    return _complex_result(xp, (_solver(xp, "eigvals")(x),), _complex_dtype("eigvals", x))[0]


def _eigenvectors(x):
    # The derivative rules need V, not its derivative: eigvals is checked to first order.
    return eig(x)[1]


def _eigvals_jvp(t, out, x):
    v = _eigenvectors(x)
    return diagonal(matmul(solve(v, t), v), offset=0)


def _eigvals_vjp(ct, out, x):
    v = _eigenvectors(x)
    vt = _mT(v)
    ct_x = solve(vt, multiply(_expand(ct, -1), vt))  # V^-T diag(ct) V^T
    return real(ct_x) if not dtypes.is_complex(x.dtype) else ct_x


def _spectrum(rng, shapes):
    """``V diag(w) V^-1`` with well-conditioned complex V and distinct eigenvalues, so the
    order numpy returns stays put under the finite differences' steps. Complex, so that
    eigvals is holomorphic there and the registry's bilinear checks (which compare complex
    values, not real parts) apply; tests/ops/test_linalg_eig.py checks real input."""
    out = []
    for s in shapes:
        n = s[-1]
        v = rng.standard_normal(s) + 1j * rng.standard_normal(s) + 2 * np.eye(n)
        w = (1.0 + np.arange(n)) * (1 + 0.5j)
        out.append((v * w[..., None, :]) @ np.linalg.inv(v))
    return out


eigvals = defop(
    "eigvals",
    kernel=_eigvals_kernel,
    aval=_eigvals_aval,
    jvp=(_eigvals_jvp,),
    vjp=(_eigvals_vjp,),
    batch=_stack_batch,
    check=Check(shapes=(((3, 3),), ((2, 3, 3),)), make_args=_spectrum, order=1, strict=False),
    doc="""Eigenvalues of each square matrix (complex; in LAPACK's order, as numpy).

    Differentiable (first order, as JAX): ``dw = diag(V^-1 dA V)``. Where two eigenvalues
    coincide the derivative is not defined and comes out large or NaN. Second derivatives
    need those of the eigenvectors, which fgrad (like JAX) does not define.

    Args:
        x: ``(..., n, n)`` floating, integer or complex Tensor.

    Returns:
        ``(..., n)`` complex Tensor (complex64 for float32 input, else complex128).

    Raises:
        ShapeError: the matrices are not square.
        DTypeError: float16 input, or a backend without a general eigensolver (cupy).

    Example:
        >>> fnp.linalg.eigvals(fnp.array([[0.0, -1.0], [1.0, 0.0]]))
        Tensor([0.+1.j, 0.-1.j], dtype=complex128)
        >>> fgrad.grad(lambda a: fnp.real(fnp.linalg.eigvals(a) ** 2).sum())(
        ...     fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([[2., 6.],
                [4., 8.]], dtype=float64)

    References:
        M. B. Giles, "An extended collection of matrix derivative results for forward and
        reverse mode algorithmic differentiation", 2008, section 3.1.
    """,
)


def _eig_aval(x):
    s = _square("eig", x)
    dtype = _complex_dtype("eig", x)
    return ShapeDtype(s[:-1], dtype), ShapeDtype(s, dtype)


def _eig_kernel(xp, x):
    return _complex_result(xp, _solver(xp, "eig")(x), _complex_dtype("eig", x))


def _no_eigenvector_derivative(*_):
    raise NotImplementedError(
        "eig: eigenvector derivatives of a non-Hermitian matrix are only defined for "
        "distinct eigenvalues and for functions that ignore each eigenvector's arbitrary "
        "phase, which fgrad cannot check (JAX refuses them too). Differentiate "
        "fnp.linalg.eigvals for the eigenvalues (to first order only: its second derivative "
        "would need these eigenvector derivatives), or use eigh for Hermitian matrices"
    )


eig = defop(
    "eig",
    kernel=_eig_kernel,
    aval=_eig_aval,
    multiple_results=True,
    jvp=(_no_eigenvector_derivative,),
    vjp=_no_eigenvector_derivative,
    batch=_stack_batch,
    check=Check(shapes=(((3, 3),), ((2, 3, 3),)), make_args=_spectrum, modes=(), strict=False),
    doc="""Eigenvalues and right eigenvectors of each square matrix (complex, as numpy).

    ``a @ v[..., :, i] == w[..., i] * v[..., :, i]``; each eigenvector has unit length and
    an arbitrary phase. Not differentiable (as JAX by default): use ``eigvals`` for
    eigenvalue gradients, ``eigh`` for Hermitian matrices.

    Args:
        x: ``(..., n, n)`` floating, integer or complex Tensor.

    Returns:
        ``(w, v)``: ``(..., n)`` eigenvalues and ``(..., n, n)`` eigenvectors in the
        columns, complex; ``fnp.linalg.eig`` returns a named tuple.

    Raises:
        ShapeError: the matrices are not square.
        DTypeError: float16 input, or a backend without a general eigensolver (cupy).
        NotImplementedError: when differentiated.

    Example:
        >>> w, v = fnp.linalg.eig(fnp.array([[2.0, 0.0], [0.0, 3.0]]))
        >>> w
        Tensor([2.+0.j, 3.+0.j], dtype=complex128)
    """,
)
