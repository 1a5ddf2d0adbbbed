"""Linear algebra: values against numpy, derivatives against finite differences, errors.

The registry sweep (test_registry.py) checks each linalg op on a few shapes; here the
numpy-level functions (fnp.matmul, fnp.einsum, fnp.linalg.*) are checked case by case,
including the conventions: norms have gradient 0 at zero input (PyTorch), eigenvalue and
singular-value gradients stay finite for repeated values, and errors name op and shapes.
Expected values come from numpy (numpy.linalg, numpy.einsum) unless stated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.test_util import check_grads

MODES = ("rev", "fwd")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _t(a):
    return fgrad.asarray(np.asarray(a, dtype=np.float64))


def _well_conditioned(rng, shape):
    return rng.standard_normal(shape) + shape[-1] * np.eye(shape[-2], shape[-1])


def _spd(rng, shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _close(got, want, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------ matmul


MATMUL_SHAPES = [
    ((3,), (3,)),  # vector . vector
    ((3,), (3, 2)),  # vector @ matrix
    ((2, 3), (3,)),  # matrix @ vector
    ((2, 3), (3, 4)),
    ((2, 2, 3), (3, 4)),  # batch @ matrix
    ((3,), (2, 3, 4)),  # vector @ batch
    ((2, 4, 3), (3,)),  # batch @ vector
    ((2, 1, 2, 3), (3, 3, 2)),  # broadcast batch dimensions
    ((2, 3), (2, 3, 4)),  # matrix @ batch
    ((2, 2, 2, 3), (3, 4)),  # two batch dimensions @ matrix (x @ W)
]


@pytest.mark.parametrize("sx,sy", MATMUL_SHAPES)
def test_matmul_values_and_grads(sx, sy):
    rng = _rng()
    x, y = rng.standard_normal(sx), rng.standard_normal(sy)
    _close(fnp.matmul(_t(x), _t(y)), np.matmul(x, y))
    _close(_t(x) @ _t(y), x @ y)
    check_grads(fnp.matmul, (_t(x), _t(y)), order=2, modes=MODES)


def test_matmul_with_numpy_operand_and_float32():
    x = fnp.ones((2, 3), dtype="float32")
    assert (x @ np.ones((3, 1), np.float32)).dtype == np.float32
    g = fgrad.grad(lambda w: fnp.sum(x @ w))(fnp.ones((3, 2), dtype="float32"))
    assert g.dtype == np.float32 and g.shape == (3, 2)


def test_matmul_shape_error_names_op_and_shapes():
    with pytest.raises(ShapeError, match=r"matmul.*f64\[2,3\].*f64\[2,3\]"):
        fnp.ones((2, 3)) @ fnp.ones((2, 3))
    with pytest.raises(ShapeError, match=r"matmul.*\(4,\).*\(3,\)"):
        fnp.matmul(fnp.ones((4, 2, 3)), fnp.ones((3, 3, 2)))
    with pytest.raises(ShapeError, match="matmul.*at least one dimension"):
        fnp.matmul(fnp.ones(3), 2.0)


def test_matmul_shape_rule_under_make_graph():
    g = fgrad.make_graph(lambda a, b: a @ b)(fnp.ones((2, 1, 2, 3)), fnp.ones((3, 3)))
    assert "f64[2,1,2,3]" in str(g) and "matmul" in str(g)


# ------------------------------------------------------------------------ einsum and products


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output
    ("ii->", [(3, 3)]),  # trace
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),  # diagonal
    ("iij,jk->ki", [(3, 3, 2), (2, 4)]),  # repeated index inside an operand
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i", [(3,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),  # ellipsis with broadcasting
    ("...ij,...jk", [(1, 2, 3), (4, 3, 2)]),  # size-1 ellipsis dimension
    ("i...->...", [(3, 2)]),
    ("ij,ij->i", [(1, 3), (2, 3)]),  # a named size-1 dimension broadcasts, as numpy
    ("Ab,bC", [(2, 3), (3, 4)]),  # uppercase letters
]


@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES)
def test_einsum_values_and_grads(subscripts, shapes):
    rng = _rng(1)
    args = [rng.standard_normal(s) for s in shapes]
    _close(fnp.einsum(subscripts, *map(_t, args)), np.einsum(subscripts, *args))
    check_grads(lambda *a: fnp.einsum(subscripts, *a), [_t(a) for a in args], order=2, modes=MODES)


def test_einsum_with_scalar_and_constant_operands():
    x = _t([1.0, 2.0])
    _close(fnp.einsum("i,->i", x, 3.0), [3.0, 6.0])
    g = fgrad.grad(lambda x: fnp.einsum("i,i->", x, np.array([2.0, 5.0])))(x)
    _close(g, [2.0, 5.0])


def test_einsum_errors():
    with pytest.raises(ShapeError, match="einsum.*'j'.*3 and 2"):
        fnp.einsum("ij,jk", fnp.ones((2, 3)), fnp.ones((2, 3)))
    with pytest.raises(ShapeError, match="einsum.*2 letters"):
        fnp.einsum("ij", fnp.ones((2, 2, 2)))
    with pytest.raises(ShapeError, match="einsum.*2 operands"):
        fnp.einsum("ij,jk", fnp.ones((2, 2)))
    with pytest.raises(ValueError, match="einsum.*repeat"):
        fnp.einsum("ij->ii", fnp.ones((2, 2)))
    with pytest.raises(ShapeError, match="einsum.*'q'"):
        fnp.einsum("ij->q", fnp.ones((2, 2)))
    with pytest.raises(ShapeError, match=r"einsum.*'\.\.\.'"):
        fnp.einsum("...i->i", fnp.ones((2, 3)))


PRODUCT_CASES = [
    ("dot", lambda a, b: fnp.dot(a, b), np.dot, [(3,), (3,)]),
    ("dot", lambda a, b: fnp.dot(a, b), np.dot, [(2, 3), (3, 2)]),
    ("dot", lambda a, b: fnp.dot(a, b), np.dot, [(2, 2, 3), (3,)]),
    ("dot", lambda a, b: fnp.dot(a, b), np.dot, [(2, 3), (4, 3, 2)]),
    ("dot", lambda a, b: fnp.dot(a, b), np.dot, [(), (2, 3)]),
    ("inner", fnp.inner, np.inner, [(2, 3), (4, 3)]),
    ("outer", fnp.outer, np.outer, [(2, 2), (3,)]),
    ("vdot", fnp.vdot, np.vdot, [(2, 3), (3, 2)]),
    ("tensordot", fnp.tensordot, np.tensordot, [(2, 3, 4), (3, 4, 2)]),
    (
        "tensordot1",
        lambda a, b: fnp.tensordot(a, b, axes=1),
        lambda a, b: np.tensordot(a, b, axes=1),
        [(2, 3), (3, 4)],
    ),
    (
        "tensordot_pairs",
        lambda a, b: fnp.tensordot(a, b, axes=([0, 2], [1, 0])),
        lambda a, b: np.tensordot(a, b, axes=([0, 2], [1, 0])),
        [(2, 3, 4), (4, 2)],
    ),
    ("kron", fnp.kron, np.kron, [(2, 2), (2, 3)]),
    ("kron", fnp.kron, np.kron, [(3,), (2, 2)]),
    ("vecdot", fnp.vecdot, np.vecdot, [(2, 3), (3,)]),
]


@pytest.mark.parametrize("name,f,want,shapes", PRODUCT_CASES, ids=[c[0] for c in PRODUCT_CASES])
def test_products_values_and_grads(name, f, want, shapes):
    rng = _rng(2)
    args = [rng.standard_normal(s) for s in shapes]
    _close(f(*map(_t, args)), want(*args))
    check_grads(f, [_t(a) for a in args], order=2, modes=MODES)


def test_vdot_conjugates_first_argument():
    a, b = np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1j])
    _close(fnp.vdot(a, b), np.vdot(a, b))


@pytest.mark.parametrize("offset,axis1,axis2", [(0, 0, 1), (1, 0, 1), (-1, 1, 2), (0, 2, 0)])
def test_trace_and_diagonal(offset, axis1, axis2):
    x = _rng(3).standard_normal((3, 4, 3))
    _close(fnp.diagonal(_t(x), offset, axis1, axis2), np.diagonal(x, offset, axis1, axis2))
    _close(fnp.trace(_t(x), offset, axis1, axis2), np.trace(x, offset, axis1, axis2))
    _close(_t(x).trace(offset, axis1, axis2), np.trace(x, offset, axis1, axis2))
    check_grads(lambda a: fnp.trace(a, offset, axis1, axis2), (_t(x),), order=2, modes=MODES)
    check_grads(lambda a: fnp.diagonal(a, offset, axis1, axis2), (_t(x),), order=2, modes=MODES)


def test_trace_gradient_is_identity():
    # d tr(X) / dX = I (Giles 2008, 2.2).
    _close(fgrad.grad(fnp.trace)(fnp.ones((3, 3))), np.eye(3))
    _close(fnp.linalg.trace(_t(np.arange(8.0).reshape(2, 2, 2))), [3.0, 11.0])


# ------------------------------------------------------------------------ solves and determinants


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_inv_det_slogdet(shape):
    a = _well_conditioned(_rng(4), shape)
    a[..., 0, :] *= -1  # a negative determinant too
    _close(fnp.linalg.inv(_t(a)), np.linalg.inv(a))
    _close(fnp.linalg.det(_t(a)), np.linalg.det(a))
    sign, logabsdet = fnp.linalg.slogdet(_t(a))
    want = np.linalg.slogdet(a)
    _close(sign, want.sign)
    _close(logabsdet, want.logabsdet)
    check_grads(fnp.linalg.inv, (_t(a),), order=2, modes=MODES)
    check_grads(fnp.linalg.det, (_t(a),), order=2, modes=MODES)
    check_grads(lambda x: fnp.linalg.slogdet(x).logabsdet, (_t(a),), order=2, modes=MODES)


def test_slogdet_sign_has_zero_gradient():
    a = _t(_well_conditioned(_rng(5), (3, 3)))
    _close(fgrad.grad(lambda x: fnp.linalg.slogdet(x).sign)(a), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3, 3), (3,)),
        ((3, 3), (3, 2)),
        ((2, 3, 3), (3,)),
        ((2, 3, 3), (2, 3, 1)),
        ((2, 3, 3), (3, 2)),
        ((3, 3), (2, 3, 2)),
    ],
)
def test_solve(sa, sb):
    rng = _rng(6)
    a, b = _well_conditioned(rng, sa), rng.standard_normal(sb)
    _close(fnp.linalg.solve(_t(a), _t(b)), np.linalg.solve(a, b))
    check_grads(fnp.linalg.solve, (_t(a), _t(b)), order=2, modes=MODES)


def test_solve_singular_raises_linalg_error():
    with pytest.raises(np.linalg.LinAlgError, match="solve"):
        fnp.linalg.solve(fnp.array([[1.0, 2.0], [2.0, 4.0]]), fnp.ones(2))
    assert fnp.linalg.LinAlgError is np.linalg.LinAlgError


def test_solve_and_inv_shape_errors():
    with pytest.raises(ShapeError, match=r"solve.*f64\[2,2\].*f64\[3\]"):
        fnp.linalg.solve(fnp.eye(2), fnp.ones(3))
    with pytest.raises(ShapeError, match=r"solve.*b\[\.\.\., None\]"):
        fnp.linalg.solve(fnp.ones((2, 3, 3)), fnp.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"inv.*square.*f64\[2,3\]"):
        fnp.linalg.inv(fnp.ones((2, 3)))
    with pytest.raises(fgrad.DTypeError, match="float16"):
        fnp.linalg.inv(fnp.ones((2, 2), dtype="float16"))


# ------------------------------------------------------------------------ decompositions


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_cholesky(shape):
    a = _spd(_rng(7), shape)
    _close(fnp.linalg.cholesky(_t(a)), np.linalg.cholesky(a))
    _close(fnp.linalg.cholesky(_t(a), upper=True), np.linalg.cholesky(a, upper=True))
    check_grads(fnp.linalg.cholesky, (_t(a),), order=2, modes=MODES)
    # Through a symmetric construction, as users write it: A = B B^T + I.
    b = _t(_rng(8).standard_normal(shape))
    f = lambda b: fnp.linalg.cholesky(b @ b.mT + fnp.eye(shape[-1]))
    check_grads(f, (b,), order=2, modes=MODES)


def test_cholesky_gradient_is_symmetric_and_not_pd_raises():
    a = _t(_spd(_rng(9), (3, 3)))
    g = np.asarray(fgrad.grad(lambda x: fnp.sum(fnp.linalg.cholesky(x) ** 3))(a))
    _close(g, g.T)
    with pytest.raises(np.linalg.LinAlgError, match="cholesky"):
        fnp.linalg.cholesky(fnp.array([[1.0, 2.0], [2.0, 1.0]]))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (2, 5, 3)])
def test_qr(shape):
    a = _well_conditioned(_rng(10), shape)
    q, r = fnp.linalg.qr(_t(a))
    _close(q @ r, a)
    _close(np.abs(np.asarray(r)), np.abs(np.linalg.qr(a).R))
    check_grads(lambda x: tuple(fnp.linalg.qr(x)), (_t(a),), order=2, modes=MODES)


def test_qr_modes_wide_derivatives_and_the_complete_mode_error():
    a = _t(_rng(11).standard_normal((4, 2)))
    assert fnp.linalg.qr(a, mode="complete").Q.shape == (4, 4)
    assert fnp.linalg.qr(a, mode="r").shape == (2, 2)
    with pytest.raises(NotImplementedError, match="mode='complete' need m <= n"):
        fgrad.grad(lambda x: fnp.sum(fnp.linalg.qr(x, mode="complete").Q))(a)
    # Wide input: JAX 0.10.2's values at this matrix (x64), Q and R parts alike.
    w = np.array([[0.12573022, -0.13210486, 0.64042265], [0.10490012, -0.53566937, 0.36159505]])
    g_r = fgrad.grad(lambda x: fnp.sum(fnp.linalg.qr(x).R))(w)
    g_q = fgrad.grad(lambda x: fnp.sum(fnp.linalg.qr(x, mode="complete").Q))(w)
    np.testing.assert_allclose(np.asarray(g_r), [[-1.47410117, -1.40848049, -1.40848049],
                                                 [0.20586235, 0.12721132, 0.12721132]], atol=1e-8)
    np.testing.assert_allclose(np.asarray(g_q), [[6.00826172, 0.0, 0.0], [-7.20132701, 0.0, 0.0]],
                               atol=1e-8)
    for wrap in (lambda f: f, fgrad.jit):
        again = wrap(fgrad.grad(lambda x: fnp.sum(fnp.linalg.qr(x).R)))(w)
        np.testing.assert_allclose(np.asarray(again), np.asarray(g_r), rtol=1e-12)
    check_grads(lambda x: tuple(fnp.linalg.qr(x)), (_t(w),), order=2, modes=MODES)
    assert np.isfinite(np.asarray(g_q)).all()


def _distinct_spectrum(rng, n, batch=()):
    q, _ = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    w = np.arange(1.0, n + 1) - 0.4 * n
    return (q * w) @ np.swapaxes(q, -1, -2)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigh(batch):
    a = _distinct_spectrum(_rng(12), 4, batch)
    w, v = fnp.linalg.eigh(_t(a))
    _close(w, np.linalg.eigh(a).eigenvalues)
    _close((v * w[..., None, :]) @ v.mT, a)
    check_grads(lambda x: tuple(fnp.linalg.eigh(x)), (_t(a),), order=2, modes=MODES)

    # A sign-invariant function of the eigenvectors: V diag(w^2) V^T (= A^2).
    def f(x):
        w, v = fnp.linalg.eigh(x)
        return (v * (w**2)[..., None, :]) @ v.mT

    check_grads(f, (_t(a),), order=2, modes=MODES)
    _close(f(_t(a)), a @ a)


def test_eigh_repeated_eigenvalues():
    # Eigenvalue gradients stay finite for repeated eigenvalues (d sum(w^2) / dA = 2 A);
    # eigenvector gradients are undefined there and come out NaN, as in PyTorch.
    a = fnp.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no divide-by-zero warnings on the way
        _close(fgrad.grad(lambda x: fnp.sum(fnp.linalg.eigh(x)[0] ** 2))(a), 2 * np.eye(3))
        _close(fgrad.grad(lambda x: fnp.sum(fnp.linalg.eigvalsh(x) ** 2))(a), 2 * np.eye(3))
        g = fgrad.grad(lambda x: fnp.sum(fnp.linalg.eigh(x)[1]))(a)
    assert np.isnan(np.asarray(g)).any()


def test_eigvalsh_second_order_with_distinct_eigenvalues():
    a = _t(_distinct_spectrum(_rng(13), 3))
    _close(fnp.linalg.eigvalsh(a), np.linalg.eigvalsh(np.asarray(a)))
    check_grads(fnp.linalg.eigvalsh, (a,), order=2, modes=MODES)


def _distinct_singular(rng, shape):
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, k)))
    v, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, k)))
    return (u * (1.5 * np.arange(k, 0, -1.0))) @ np.swapaxes(v, -1, -2)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_svd(shape):
    a = _distinct_singular(_rng(14), shape)
    u, s, vh = fnp.linalg.svd(_t(a), full_matrices=False)
    _close(s, np.linalg.svd(a, compute_uv=False))
    _close((u * s[..., None, :]) @ vh, a)
    check_grads(
        lambda x: tuple(fnp.linalg.svd(x, full_matrices=False)), (_t(a),), order=2, modes=MODES
    )

    # Sign-invariant: U diag(s^3) Vh.
    def f(x):
        u, s, vh = fnp.linalg.svd(x, full_matrices=False)
        return (u * (s**3)[..., None, :]) @ vh

    check_grads(f, (_t(a),), order=2, modes=MODES)
    check_grads(fnp.linalg.svdvals, (_t(a),), order=2, modes=MODES)


def test_svd_rank_deficient_singular_value_gradient_is_finite():
    # ones((3, 2)) has singular values (sqrt(6), ~0): d s[0] / dA = u0 v0^T = 1/sqrt(6)
    # everywhere, finite although U's derivative would divide by the tiny s[1].
    a = fnp.ones((3, 2))
    for f in (
        lambda x: fnp.linalg.svd(x, full_matrices=False).S[0],
        lambda x: fnp.linalg.svdvals(x)[0],
    ):
        _close(fgrad.grad(f)(a), np.full((3, 2), 1 / np.sqrt(6)), atol=1e-12)
    # An exactly zero singular value is a kink (as |x| at 0): zero subgradient, so the
    # gradient of sum(s) is u0 v0^T alone.
    e = _t([[2.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    for f in (
        lambda x: fnp.sum(fnp.linalg.svd(x, full_matrices=False).S),
        lambda x: fnp.sum(fnp.linalg.svdvals(x)),
    ):
        _close(fgrad.grad(f)(e), [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    assert fnp.linalg.svd(a, compute_uv=False).shape == (2,)
    assert fnp.linalg.svd(a).U.shape == (3, 3)  # full_matrices=True by default, as numpy
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        fgrad.grad(lambda x: fnp.sum(fnp.linalg.svd(x).U))(a)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_pinv(shape):
    a = _distinct_singular(_rng(15), shape)
    _close(fnp.linalg.pinv(_t(a)), np.linalg.pinv(a))
    check_grads(fnp.linalg.pinv, (_t(a),), order=2, modes=MODES)


def test_pinv_rank_deficient_constant_rank_gradient():
    # Golub-Pereyra holds at constant rank: the gradient agrees with finite differences along
    # a direction that keeps the rank (a rank-1 perturbation of a rank-1 matrix's factor).
    u = _t([[1.0], [2.0], [0.5]])

    def f(v):
        return fnp.linalg.pinv(u @ v)

    check_grads(f, (_t([[1.0, -1.0]]),), order=1, modes=MODES)


# ------------------------------------------------------------------------ norms


VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _signed_away_from_zero(rng, shape):
    return rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), (-1, True)])
def test_vector_norms(ord, axis, keepdims):
    x = _signed_away_from_zero(_rng(16), (3, 4))
    if axis is None:
        x = x[0]  # numpy: a vector norm with axis=None needs a 1-D input
    want = np.linalg.norm(x, ord, axis, keepdims)
    f = lambda a: fnp.linalg.norm(a, ord, axis, keepdims)
    _close(f(_t(x)), want)
    check_grads(f, (_t(x),), order=2, modes=MODES)


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("axis,keepdims", [(None, False), ((1, 2), False), ((2, 0), True)])
def test_matrix_norms(ord, axis, keepdims):
    rng = _rng(17)
    if axis is None:
        x = _distinct_singular(rng, (4, 3)) + 0.1 * rng.standard_normal((4, 3))
    else:
        x = rng.standard_normal((3, 4, 3))
    want = np.linalg.norm(x, ord, axis, keepdims)
    f = lambda a: fnp.linalg.norm(a, ord, axis, keepdims)
    _close(f(_t(x)), want)
    check_grads(f, (_t(x),), order=2, modes=MODES)


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm_gradient_at_zero_is_zero(ord):
    # PyTorch: the zero subgradient at zero input, never NaN.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)  # numpy's own p < 0
        g = fgrad.grad(lambda x: fnp.linalg.norm(x, ord))(fnp.zeros(3))
        _, t = fgrad.jvp(lambda x: fnp.linalg.norm(x, ord), (fnp.zeros(3),), (fnp.ones(3),))
    assert np.array_equal(np.asarray(g), np.zeros(3))
    assert np.array_equal(np.asarray(t), 0.0) or ord == 0


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm_gradient_at_zero_is_zero(ord):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = fgrad.grad(lambda x: fnp.linalg.norm(x, ord))(fnp.zeros((2, 3)))
    assert np.array_equal(np.asarray(g), np.zeros((2, 3)))


def test_norm_zero_entries_and_ties():
    # |x| at 0 has derivative 0 (ord 1); inf-norm ties split evenly (as max).
    _close(fgrad.grad(lambda x: fnp.linalg.norm(x, 1))(_t([0.0, 2.0, -1.0])), [0.0, 1.0, -1.0])
    _close(fgrad.grad(lambda x: fnp.linalg.norm(x, np.inf))(_t([2.0, -2.0, 1.0])), [0.5, -0.5, 0.0])
    _close(fgrad.grad(lambda x: fnp.linalg.norm(x, 0.5))(_t([0.0, 4.0])), [0.0, 1.0])
    # Euclidean norm: gradient x / |x|.
    _close(fgrad.grad(fnp.linalg.norm)(_t([3.0, 4.0])), [0.6, 0.8])


def test_norm_complex_and_float32():
    z = np.array([3 + 4j, 1 - 1j])
    _close(fnp.linalg.norm(z), np.linalg.norm(z))
    x = fnp.array([3.0, 4.0], dtype="float32")
    value, g = fgrad.value_and_grad(fnp.linalg.norm)(x)
    assert value.dtype == np.float32 and g.dtype == np.float32


def test_vector_and_matrix_norm_array_api_names():
    x = _signed_away_from_zero(_rng(18), (2, 3, 4))
    _close(
        fnp.linalg.vector_norm(_t(x), axis=(0, 2), ord=3),
        np.linalg.vector_norm(x, axis=(0, 2), ord=3),
    )
    _close(fnp.linalg.vector_norm(_t(x)), np.linalg.vector_norm(x))
    for ord in ("fro", "nuc", 2, -1, np.inf):
        _close(
            fnp.linalg.matrix_norm(_t(x), ord=ord, keepdims=True),
            np.linalg.matrix_norm(x, ord=ord, keepdims=True),
        )


def test_norm_errors():
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        fnp.linalg.norm(fnp.ones(3), "fro")
    with pytest.raises(ValueError, match="invalid norm order 3 for matrices"):
        fnp.linalg.norm(fnp.ones((2, 2)), 3)
    with pytest.raises(ShapeError, match="norm.*1-D or 2-D"):
        fnp.linalg.norm(fnp.ones((2, 2, 2)), 2)
    with pytest.raises(ShapeError, match="norm.*out of range"):
        fnp.linalg.norm(fnp.ones(3), axis=1)


def test_complex_holomorphic_ops_follow_jax_convention():
    # matmul, einsum, inv, solve and det are holomorphic: the VJP is the transpose of the
    # JVP with no conjugation (JAX's convention), checked in a complex direction.
    rng = _rng(19)

    def c(*shape):
        z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        return fgrad.asarray(z + 3 * np.eye(*shape[-2:]) if len(shape) > 1 else z)

    for f, args in [
        (fnp.matmul, (c(2, 3), c(3, 2))),
        (lambda a, b: fnp.einsum("ij,jk->ik", a, b), (c(2, 3), c(3, 2))),
        (fnp.linalg.inv, (c(3, 3),)),
        (fnp.linalg.solve, (c(3, 3), c(3))),
        (fnp.linalg.det, (c(3, 3),)),
    ]:
        check_grads(f, args, order=2, modes=MODES)
