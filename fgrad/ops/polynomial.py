"""Polynomial ops: the roots of a polynomial from its coefficients.

``roots`` is a primitive because its kernel (the eigenvalues of the companion matrix,
numpy's method) has no composition of other ops, and its derivative is not the
eigenvalue derivative of that matrix but the implicit-function rule of the polynomial
itself: at a simple root ``r`` of ``p(x) = sum_k p[k] x**(n-k)``, ``dr/dp[k] =
-r**(n-k) / p'(r)``. The rest of numpy's polynomial functions are compositions
(``fgrad/numpy/_math_extra.py``).
"""

from __future__ import annotations

import numpy as np

from fgrad import dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._doc import contract
from fgrad.ops.elementwise import astype, divide, multiply, negative, power, real
from fgrad.ops.reduction import sum as _sum
from fgrad.ops.shape import reshape
from fgrad.ops._rules import shape_of
from fgrad.tensor import ShapeDtype

__all__ = ["roots"]


def _companion_eigvals(xp, p):
    """Eigenvalues of the companion matrices of ``p`` (``(..., n + 1)``, ``p[..., 0] != 0``)."""
    n = p.shape[-1] - 1
    out_dtype = np.complex64 if p.dtype in (np.float32, np.complex64) else np.complex128
    if n == 0:
        return xp.zeros(p.shape[:-1] + (0,), dtype=out_dtype)
    if not hasattr(xp.linalg, "eigvals"):  # cupy has no general (non-Hermitian) eigensolver
        raise DTypeError(
            "roots: this array backend has no general eigensolver (cupy's linalg has none); "
            "move the coefficients to the CPU first, fgrad.device_put(p, 'cpu')"
        )
    top = -p[..., 1:] / p[..., :1]
    below = xp.broadcast_to(xp.eye(n - 1, n, dtype=top.dtype), p.shape[:-1] + (n - 1, n))
    companion = xp.concatenate([top[..., None, :], below], axis=-2)
    return xp.asarray(xp.linalg.eigvals(companion), dtype=out_dtype)


def _roots_aval(p):
    shape = shape_of(p)
    dtype = np.dtype(dtypes.result_type(p))
    if not shape:
        raise ShapeError("roots: needs the coefficients as a (..., n + 1) Tensor, got a 0-d one")
    if not dtypes.is_inexact(dtype):
        raise DTypeError(f"roots: needs floating or complex coefficients, got {dtype}")
    out = np.complex64 if dtype in (np.float32, np.complex64) else np.complex128
    return ShapeDtype(shape[:-1] + (shape[-1] - 1,), np.dtype(out))


def _dr_dp(out, p):
    """``J[..., i, k] = -r_i**(n-k) / p'(r_i)``: the derivative of each root in each
    coefficient (implicit function theorem; infinite at a repeated root)."""
    n = shape_of(p)[-1] - 1
    r = reshape(out, shape=shape_of(out) + (1,))  # (..., n, 1)
    cp = astype(p, dtype=out.dtype)
    powers = np.arange(n, -1, -1, dtype=np.float64)  # (n + 1,)
    r_pow = power(r, powers)  # (..., n, n + 1): r**(n-k)
    # p'(r) = sum_k (n - k) p[k] r**(n-k-1); powers - 1 is -1 at k = n, where the factor is 0.
    dcoef = multiply(cp, powers)
    lower = power(r, np.maximum(powers - 1, 0))
    dp = _sum(multiply(reshape(dcoef, shape=shape_of(dcoef)[:-1] + (1, n + 1)), lower),
              axes=(len(shape_of(out)),), keepdims=True)
    return negative(divide(r_pow, dp))


def _roots_jvp(t, out, p):
    ct = astype(t, dtype=out.dtype)
    jac = _dr_dp(out, p)
    n1 = shape_of(p)[-1]
    return _sum(multiply(jac, reshape(ct, shape=shape_of(ct)[:-1] + (1, n1))),
                axes=(len(shape_of(jac)) - 1,), keepdims=False)


def _roots_vjp(ct, out, p):
    # The transpose of the JVP without conjugation (JAX's convention); a real ``p`` takes
    # the real part, as the transpose of its cast to complex does.
    jac = _dr_dp(out, p)
    cot = _sum(multiply(jac, reshape(ct, shape=shape_of(ct) + (1,))),
               axes=(len(shape_of(jac)) - 2,), keepdims=False)
    if not dtypes.is_complex(dtypes.result_type(p)):
        cot = astype(real(cot), dtype=p.dtype)
    return cot


def _roots_args(rng, shapes):
    # p = a * prod(x - r_i) with well separated complex roots. Sampled complex, as rfft's
    # check: on complex p the op is holomorphic, which the registry's bilinear checks
    # assume; real p (a real input with complex roots) is checked against finite
    # differences of the real and imaginary parts in tests/numpy/test_math_grads.py.
    out = []
    for s in shapes:
        n, batch = s[-1] - 1, s[:-1]
        r = rng.uniform(-1, 1, batch + (n,)) + 1j * rng.uniform(-1, 1, batch + (n,))
        r = r + np.arange(n) * (0.9 + 0.4j)  # keeps the roots apart
        coeffs = np.empty(s, dtype=np.complex128)
        for idx in np.ndindex(*batch):
            coeffs[idx] = np.poly(r[idx]) * (rng.uniform(0.5, 2.0) + 0.3j)
        out.append(coeffs)
    return out


def _roots_batch(op, args, dims, **params):
    return op(*args, **params), 0  # the kernel takes leading stack axes


roots = defop(
    "roots",
    kernel=_companion_eigvals,
    aval=_roots_aval,
    jvp=(_roots_jvp,),
    vjp=(_roots_vjp,),
    batch=_roots_batch,
    check=Check(shapes=(((3,),), ((4,),), ((2, 3),)), make_args=_roots_args, strict=False),
    doc=contract(
        "The roots of each polynomial ``p[..., 0] x**n + ... + p[..., n]`` "
        "(``p[..., 0] != 0``), as the eigenvalues of its companion matrix; complex.",
        ">>> from fgrad.ops.polynomial import roots\n"
        ">>> fnp.sort(fnp.real(roots(fnp.array([1.0, -3.0, 2.0]))))\n"
        "Tensor([1., 2.], dtype=float64)",
        user="fgrad.numpy.roots",
    ),
)


def __dir__() -> list[str]:
    return list(__all__)
