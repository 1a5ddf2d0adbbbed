"""Derivatives of det and slogdet at singular and rank-deficient matrices.

``det`` is a polynomial: its gradient is the cofactor matrix ``adj(A)^T``, which exists
everywhere (rank 1 at rank ``n - 1``, zero at lower rank), and its second derivative is
made of the ``(n - 2)``-minors. Expected values are cofactors computed here from minors,
and finite differences of ``det``, which are exact up to rounding for a polynomial.
``slogdet``'s ``logabsdet`` is ``-inf`` at a singular matrix and has no derivative there.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ops.linalg import adjugate
from fgrad.test_util import check_grads

MODES = ("rev", "fwd")


def _cofactors(a):
    """``C[i, j] = (-1)^(i + j) det(a without row i and column j)``, by hand."""
    a = np.asarray(a)
    n = a.shape[-1]
    c = np.empty_like(a)
    for i, j in itertools.product(range(n), range(n)):
        minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
        c[..., i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return c


def _fd_grad(f, a, eps=1e-6):
    """Central differences of ``f`` entry by entry (exact up to rounding for det)."""
    a = np.asarray(a, dtype=float)
    g = np.empty_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = eps
        g[idx] = (f(a + e) - f(a - e)) / (2 * eps)
    return g


def _second_minors_hessian(a):
    """``d^2 det / da_ij da_kl`` by differentiating the hand-made cofactors (finite
    differences of a polynomial of degree n - 1)."""
    n = a.shape[-1]
    return np.stack([_fd_grad(lambda x: _cofactors(x)[i, j], a) for i in range(n) for j in range(n)]).reshape(n, n, n, n)


RANK1 = np.outer([1.0, 2.0, -1.0], [3.0, 0.5, 2.0])  # rank 1: every 2x2 minor is zero
RANK2 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])  # rank 2
SINGULAR = [
    ("2x2", np.array([[1.0, 2.0], [2.0, 4.0]])),
    ("rank1_3x3", RANK1),
    ("rank2_3x3", RANK2),
    ("zero_3x3", np.zeros((3, 3))),
    ("zero_2x2", np.zeros((2, 2))),
    ("rank3_4x4", np.diag([1.0, 2.0, 3.0, 0.0]) + np.triu(np.ones((4, 4)), 1) * np.array([1, 1, 1, 0.0])),
]


def test_issue_12_grad_det_at_the_reported_matrix():
    # It raised LinAlgError naming inv; the cofactor matrix of [[a, b], [c, d]] is
    # [[d, -c], [-b, a]].
    a = fnp.array([[1.0, 2.0], [2.0, 4.0]])
    want = np.array([[4.0, -2.0], [-2.0, 1.0]])
    for g in (fgrad.grad(fnp.linalg.det), fgrad.jit(fgrad.grad(fnp.linalg.det)), fgrad.grad(fgrad.jit(fnp.linalg.det))):
        np.testing.assert_allclose(np.asarray(g(a)), want, atol=1e-14)
    np.testing.assert_allclose(np.asarray(fgrad.jacfwd(fnp.linalg.det)(a)), want, atol=1e-14)


@pytest.mark.parametrize("name,a", SINGULAR, ids=[c[0] for c in SINGULAR])
def test_issue_12_grad_det_is_the_cofactor_matrix(name, a):
    want = _cofactors(a)
    fd = _fd_grad(np.linalg.det, a)
    np.testing.assert_allclose(want, fd, atol=1e-8)  # the hand-made cofactors themselves
    x = fgrad.asarray(a)
    for g in (fgrad.grad(fnp.linalg.det), fgrad.jit(fgrad.grad(fnp.linalg.det)), fgrad.jacfwd(fnp.linalg.det)):
        got = np.asarray(g(x))
        assert np.all(np.isfinite(got)), got
        np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(np.asarray(adjugate(x)), want.T, atol=1e-12)
    _, t = fgrad.jvp(fnp.linalg.det, (x,), (fnp.ones(a.shape),))
    np.testing.assert_allclose(float(t), want.sum(), atol=1e-12)


@pytest.mark.parametrize("name,a", SINGULAR, ids=[c[0] for c in SINGULAR])
def test_issue_12_second_derivative_of_det_at_singular_matrices(name, a):
    x = fgrad.asarray(a)
    n = a.shape[-1]
    want = _second_minors_hessian(a)
    for h in (fgrad.hessian(fnp.linalg.det), fgrad.jit(fgrad.hessian(fnp.linalg.det)), fgrad.jacfwd(fgrad.jacrev(fnp.linalg.det))):
        got = np.asarray(h(x))
        assert got.shape == (n, n, n, n) and np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, atol=1e-7)
    check_grads(fnp.linalg.det, (x,), order=2, modes=MODES)


def test_issue_12_hessian_of_det_at_zero_2x2_is_the_closed_form():
    # det = a d - b c: d^2 / (da dd) = 1, d^2 / (db dc) = -1, everything else 0.
    h = np.asarray(fgrad.hessian(fnp.linalg.det)(fnp.zeros((2, 2)))).reshape(4, 4)
    want = np.zeros((4, 4))
    want[0, 3] = want[3, 0] = 1.0
    want[1, 2] = want[2, 1] = -1.0
    np.testing.assert_allclose(h, want, atol=1e-14)


def test_issue_12_grad_det_on_a_batch_mixing_singular_and_invertible():
    rng = np.random.default_rng(0)
    good = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    stack = np.stack([RANK1, good, RANK2, np.zeros((3, 3))])
    want = np.stack([_cofactors(m) for m in stack])
    g = fgrad.grad(lambda s: fnp.sum(fnp.linalg.det(s)))(fgrad.asarray(stack))
    np.testing.assert_allclose(np.asarray(g), want, atol=1e-12)
    np.testing.assert_allclose(np.asarray(fgrad.vmap(fgrad.grad(fnp.linalg.det))(fgrad.asarray(stack))), want, atol=1e-12)
    # The invertible one is det(A) A^-T, as before.
    np.testing.assert_allclose(want[1], np.linalg.det(good) * np.linalg.inv(good).T, atol=1e-12)


def test_issue_12_grad_det_complex_singular_is_holomorphic():
    # Holomorphic: the complex cofactor matrix, no conjugation (JAX's convention).
    u, v = np.array([1.0 + 1j, 2.0, -1j]), np.array([0.5, 1j, 2.0 - 1j])
    a = np.outer(u, v) + np.outer(v, [1.0, 0.0, 1j])  # rank 2
    g = fgrad.grad(fnp.linalg.det, holomorphic=True)(fgrad.asarray(a))
    np.testing.assert_allclose(np.asarray(g), _cofactors(a), atol=1e-12)
    check_grads(fnp.linalg.det, (fgrad.asarray(a),), order=2, modes=MODES)


def test_issue_12_adjugate_values_and_dtypes():
    rng = np.random.default_rng(1)
    for a in (rng.standard_normal((4, 4)), RANK2, np.zeros((1, 1)), np.array([[0.0]])):
        np.testing.assert_allclose(np.asarray(adjugate(fgrad.asarray(a))), _cofactors(a).T, atol=1e-12)
    a32 = fgrad.asarray(RANK2.astype(np.float32))
    got = adjugate(a32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), _cofactors(RANK2).T, atol=1e-4)
    assert adjugate(fgrad.asarray(np.eye(3, dtype=np.int64))).dtype == np.float64
    np.testing.assert_allclose(np.asarray(fgrad.jit(adjugate)(fgrad.asarray(RANK1))), np.zeros((3, 3)), atol=1e-12)


def test_issue_12_grad_det_invertible_unchanged():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    g = fgrad.grad(lambda x: fnp.sum(fnp.linalg.det(x)))(fgrad.asarray(a))
    want = np.linalg.det(a)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------ slogdet


@pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit], ids=["eager", "jit"])
def test_issue_12_slogdet_gradient_at_singular_is_nan_not_an_error(wrap):
    # logabsdet = -inf: no derivative. JAX's singular solve gives inf/nan; here NaN,
    # without the LinAlgError that named inv.
    a = fnp.array([[1.0, 2.0], [2.0, 4.0]])
    sign, logabsdet = fnp.linalg.slogdet(a)
    assert float(sign) == 0.0 and float(logabsdet) == -np.inf
    g = wrap(fgrad.grad(lambda x: fnp.linalg.slogdet(x).logabsdet))(a)
    assert np.all(np.isnan(np.asarray(g)))
    _, t = fgrad.jvp(wrap(lambda x: fnp.linalg.slogdet(x).logabsdet), (a,), (fnp.ones((2, 2)),))
    assert np.isnan(float(t))
    # A function of the sign alone has gradient zero there too.
    g_sign = wrap(fgrad.grad(lambda x: fnp.linalg.slogdet(x).sign))(a)
    np.testing.assert_array_equal(np.asarray(g_sign), np.zeros((2, 2)))


def test_issue_12_slogdet_batch_with_one_singular_matrix():
    rng = np.random.default_rng(3)
    good = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    stack = fgrad.asarray(np.stack([good, RANK1]))
    g = np.asarray(fgrad.grad(lambda s: fnp.sum(fnp.linalg.slogdet(s).logabsdet))(stack))
    np.testing.assert_allclose(g[0], np.linalg.inv(good).T, atol=1e-12)
    assert np.all(np.isnan(g[1]))
    check_grads(lambda x: fnp.linalg.slogdet(x).logabsdet, (fgrad.asarray(good),), order=2, modes=MODES)
