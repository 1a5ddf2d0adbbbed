"""numpy.linalg's general eigenproblem, cond, matrix_rank, multi_dot, tensorsolve,
tensorinv and the Array API's linalg.cross: values against numpy, eagerly, under jit and
vmap, and derivatives against finite differences (real input: the registry sweep samples
eigvals on complex matrices, where it is holomorphic)."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.test_util import check_grads

LA = fnp.linalg
WRAPS = [lambda f: f, fgrad.jit]
WRAP_IDS = ["eager", "jit"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _sorted(w):
    w = np.asarray(w)
    return w[..., np.lexsort((w.imag.round(8), w.real.round(8)))] if w.ndim == 1 else w


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
@pytest.mark.parametrize("dtype,cdtype", [(np.float64, np.complex128), (np.float32, np.complex64),
                                          (np.complex128, np.complex128), (np.int64, np.complex128)])
def test_eig_and_eigvals_match_numpy(wrap, dtype, cdtype):
    rng = _rng()
    a = rng.standard_normal((4, 4)) * 3
    if dtype is np.complex128:
        a = a + 1j * rng.standard_normal((4, 4))
    a = a.astype(dtype)
    w, v = wrap(LA.eig)(a)
    assert w.dtype == cdtype and v.dtype == cdtype
    want_w, _ = np.linalg.eig(a)
    np.testing.assert_allclose(np.asarray(w), want_w.astype(cdtype), rtol=1e-4)
    tol = 1e-4 if dtype is np.float32 else 1e-10
    np.testing.assert_allclose(a @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(v), axis=0), 1, rtol=tol)
    np.testing.assert_allclose(np.asarray(wrap(LA.eigvals)(a)), np.asarray(w), rtol=tol)


def test_eig_batched_and_under_vmap():
    a = _rng(1).standard_normal((3, 4, 4))
    want = np.linalg.eigvals(a)
    np.testing.assert_allclose(np.asarray(LA.eigvals(a)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fgrad.vmap(LA.eigvals)(a)), want, rtol=1e-12)
    w, v = fgrad.vmap(LA.eig)(a)
    np.testing.assert_allclose(a @ np.asarray(v), np.asarray(v) * np.asarray(w)[:, None, :], atol=1e-10)
    assert isinstance(LA.eig(a), LA.EigResult) and LA.eig(a).eigenvalues.shape == (3, 4)


def _real_spectrum(rng, n=3):
    v = rng.standard_normal((n, n)) + 2 * np.eye(n)
    return v @ np.diag(np.arange(1.0, n + 1)) @ np.linalg.inv(v)


@pytest.mark.parametrize("part", ["real", "abs"])
def test_eigvals_gradient_of_real_input_against_finite_differences(part):
    # A rotation block gives a complex pair, whose modulus is a smooth function of a.
    rng = _rng(2)
    a = _real_spectrum(rng)
    a[:2, :2] += np.array([[0.0, 2.0], [-2.0, 0.0]])
    f = {"real": lambda x: fnp.real(LA.eigvals(x) ** 2).sum(),
         "abs": lambda x: (fnp.abs(LA.eigvals(x)) * fnp.arange(1.0, 4.0)).sum()}[part]
    check_grads(f, [a], order=1, modes=("rev", "fwd"))
    check_grads(fgrad.jit(f), [a], order=1, modes=("rev",))


def test_eigvals_gradient_matches_jax_values():
    # jax.grad(lambda a: (jnp.linalg.eigvals(a) ** 2).real.sum()) at [[1, 2], [3, 4]] is
    # 2 a^T; jax.grad of |eigvals| summed at the rotation [[0, -1], [1, 0]] is the rotation.
    a = fnp.array([[1.0, 2.0], [3.0, 4.0]])
    g = fgrad.grad(lambda x: fnp.real(LA.eigvals(x) ** 2).sum())(a)
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(a).T, rtol=1e-12)
    r = fnp.array([[0.0, -1.0], [1.0, 0.0]])
    g = fgrad.grad(lambda x: fnp.abs(LA.eigvals(x)).sum())(r)
    np.testing.assert_allclose(np.asarray(g), np.asarray(r), atol=1e-12)


def test_eigvals_vmap_of_grad_equals_per_example_grads():
    a = np.stack([_real_spectrum(_rng(s)) for s in range(3)])
    f = lambda x: fnp.real(LA.eigvals(x) ** 3).sum()  # noqa: E731
    got = fgrad.vmap(fgrad.grad(f))(a)
    for k in range(3):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(fgrad.grad(f)(a[k])), rtol=1e-10)


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
def test_eig_refuses_derivatives(wrap):
    a = _real_spectrum(_rng(3))
    with pytest.raises(NotImplementedError, match="eigvals"):
        fgrad.grad(wrap(lambda x: fnp.real(LA.eig(x).eigenvalues).sum()))(a)
    with pytest.raises(NotImplementedError, match="eigvals"):
        fgrad.jvp(wrap(lambda x: LA.eig(x).eigenvectors), (a,), (a,))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond_matches_numpy_and_differentiates(p):
    a = _rng(4).standard_normal((2, 3, 3)) + 2 * np.eye(3)
    np.testing.assert_allclose(np.asarray(LA.cond(a, p)), np.linalg.cond(a, p), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(fgrad.jit(LA.cond, static_argnums=1)(a, p)),
                               np.linalg.cond(a, p), rtol=1e-10)
    if p not in (1, -1, np.inf, -np.inf):  # those are max/min of sums: kinks
        check_grads(lambda x: LA.cond(x, p).sum(), [a], order=1)


def test_cond_rectangular_and_singular():
    a = _rng(5).standard_normal((4, 2))
    np.testing.assert_allclose(np.asarray(LA.cond(a)), np.linalg.cond(a), rtol=1e-12)
    with np.errstate(divide="ignore"):
        assert np.isinf(float(LA.cond(np.array([[1.0, 0.0], [0.0, 0.0]])))) and np.isinf(
            np.linalg.cond(np.array([[1.0, 0.0], [0.0, 0.0]])))
    with pytest.raises(ShapeError, match="cond"):
        LA.cond(a, "fro")
    with pytest.raises(ShapeError, match="cond"):
        LA.cond(np.ones(3))


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
def test_matrix_rank_matches_numpy(wrap):
    rng = _rng(6)
    low = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))
    full = rng.standard_normal((5, 4))
    for x in (low, full, np.zeros((3, 3)), np.eye(4)):
        got = wrap(LA.matrix_rank)(x)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(np.asarray(got), np.linalg.matrix_rank(x))
    np.testing.assert_array_equal(np.asarray(LA.matrix_rank(full, tol=10.0)),
                                  np.linalg.matrix_rank(full, tol=10.0))
    np.testing.assert_array_equal(np.asarray(LA.matrix_rank(full, rtol=0.5)),
                                  np.linalg.matrix_rank(full, rtol=0.5))
    for tol in ((1.5,), np.full((5, 7), 1.0), np.array([0.5, 3.0])):  # broadcast as numpy's
        for kw in ("tol", "rtol"):
            want = np.linalg.matrix_rank(full[:2, :2], **{kw: tol})
            got = LA.matrix_rank(full[:2, :2], **{kw: tol})
            assert got.shape == np.shape(want)
            np.testing.assert_array_equal(np.asarray(got), want)
    sym = low[0] @ low[0].T
    np.testing.assert_array_equal(np.asarray(LA.matrix_rank(sym, hermitian=True)), 2)
    assert int(LA.matrix_rank(np.zeros(3))) == 0 and int(LA.matrix_rank(np.array([0.0, 1.0]))) == 1
    with pytest.raises(ValueError, match="not both"):
        LA.matrix_rank(full, tol=1.0, rtol=1.0)
    assert float(fgrad.grad(lambda x: LA.matrix_rank(x) * x.sum())(full).sum()) == pytest.approx(
        4 * full.size)  # the rank is a constant to the derivative


@pytest.mark.parametrize("shapes", [
    [(10, 100), (100, 5), (5, 50)],
    [(100,), (100, 5), (5, 50), (50, 2)],
    [(3, 4), (4, 5), (5,)],
    [(4,), (4,)],
    [(6,), (6, 2), (2, 3), (3,)],
])
def test_multi_dot_matches_numpy(shapes):
    rng = _rng(7)
    arrays = [rng.standard_normal(s) for s in shapes]
    want = np.linalg.multi_dot(arrays)
    got = LA.multi_dot(arrays)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(fgrad.jit(LA.multi_dot)(arrays)), want, rtol=1e-10)


def test_multi_dot_picks_the_cheapest_order_and_differentiates():
    from fgrad.numpy._linalg_more import _chain_order

    # (10x100)(100x5)(5x50): (AB)C costs 5,000 + 2,500; A(BC) costs 25,000 + 50,000.
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0
    rng = _rng(8)
    arrays = [rng.standard_normal(s) for s in [(2, 3), (3, 4), (4, 2)]]
    check_grads(lambda *xs: LA.multi_dot(list(xs)), arrays, order=2)
    with pytest.raises(ValueError, match="two"):
        LA.multi_dot([arrays[0]])
    with pytest.raises(ShapeError, match="chain"):
        LA.multi_dot([arrays[0], arrays[0]])
    with pytest.raises(ValueError, match="immutable"):
        LA.multi_dot(arrays, out=np.zeros((2, 2)))


def test_tensorinv_and_tensorsolve_match_numpy():
    rng = _rng(9)
    a = (np.eye(24) + 0.3 * rng.standard_normal((24, 24))).reshape(4, 6, 8, 3)
    for ind in (1, 2):
        np.testing.assert_allclose(np.asarray(LA.tensorinv(a.reshape(24, 24).reshape(
            (4, 6, 24) if ind == 2 else (24, 4, 6)), ind=ind)),
            np.linalg.tensorinv(a.reshape((4, 6, 24) if ind == 2 else (24, 4, 6)), ind=ind), rtol=1e-9)
    a = a.reshape(2, 3, 4, 2, 3, 4)
    b = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(np.asarray(LA.tensorsolve(a, b)), np.linalg.tensorsolve(a, b), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(LA.tensorsolve(a, b, axes=(0, 4))),
                               np.linalg.tensorsolve(a, b, axes=(0, 4)), rtol=1e-9)
    small = (np.eye(6) + 0.3 * rng.standard_normal((6, 6))).reshape(2, 3, 2, 3)
    check_grads(lambda x, y: LA.tensorsolve(x, y), [small, b[:, :, 0]], order=1)
    check_grads(lambda x: LA.tensorinv(x, ind=2), [small], order=1)
    with pytest.raises(ShapeError, match="tensorinv"):
        LA.tensorinv(np.ones((2, 3)), ind=1)
    with pytest.raises(ShapeError, match="tensorsolve"):
        LA.tensorsolve(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ShapeError, match="tensorsolve"):
        LA.tensorsolve(np.ones((6, 2, 3)), np.ones(5))


def test_linalg_cross_is_the_array_api_one():
    rng = _rng(10)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((2, 1, 3))
    np.testing.assert_allclose(np.asarray(LA.cross(x, y)), np.linalg.cross(x, y), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(LA.cross(x.T, x.T[::-1], axis=0)),
                               np.linalg.cross(x.T, x.T[::-1], axis=0), rtol=1e-12)
    with pytest.raises(ShapeError, match="size 3"):
        LA.cross(np.ones(2), np.ones(2))
    check_grads(lambda a, b: LA.cross(a, b), [x, y], order=2)


@pytest.mark.parametrize("p", ["fro", 1, -1, np.inf, -np.inf])
def test_cond_of_a_singular_matrix_is_inf_as_numpy(p):
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    stack = np.stack([s, np.array([[2.0, 1.0], [0.0, 3.0]])])
    with np.errstate(all="ignore"):
        want = np.linalg.cond(stack, p)
    for wrap in WRAPS:
        np.testing.assert_allclose(np.asarray(wrap(lambda x: LA.cond(x, p))(stack)), want)
    g = fgrad.grad(lambda x: LA.cond(x, p)[1])(stack)  # the singular one gets no NaN
    assert np.isfinite(np.asarray(g)).all()


def test_pinv_and_lstsq_of_integer_matrices_read_them_as_float64():
    a = np.array([[1, 2], [3, 4]])
    np.testing.assert_allclose(np.asarray(LA.pinv(a)), np.linalg.pinv(a), rtol=1e-12)
    assert LA.pinv(a).dtype == np.float64
    np.testing.assert_allclose(np.asarray(LA.lstsq(a, np.array([1, 2]))[0]),
                               np.linalg.lstsq(a, np.array([1, 2]))[0], atol=1e-12)


def test_second_derivative_of_eigvals_says_first_order_only():
    a = _real_spectrum(_rng(11))
    with pytest.raises(NotImplementedError, match="first order only"):
        fgrad.hessian(lambda x: fnp.real(LA.eigvals(x)).sum())(a)
