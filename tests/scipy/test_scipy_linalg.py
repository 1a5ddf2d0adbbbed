"""fgrad.scipy.linalg against scipy.linalg, batched, with derivatives against finite
differences (the registry test checks the expm and sqrtm ops themselves)."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy import linalg
from fgrad.test_util import check_grads

sl = pytest.importorskip("scipy.linalg")
rng = np.random.default_rng(0)


def _spd(n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, "T"])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular_matches_scipy_and_ignores_the_other_triangle(lower, trans, unit_diagonal):
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    got = linalg.solve_triangular(fnp.asarray(a), fnp.asarray(b), trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    want = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-13)
    # batched, vector right-hand side
    ab = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    bb = rng.standard_normal((3, 4))
    got = linalg.solve_triangular(fnp.asarray(ab), fnp.asarray(bb), trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    want = np.stack([sl.solve_triangular(ab[i], bb[i], trans=trans, lower=lower, unit_diagonal=unit_diagonal) for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-13)
    f = lambda a_, b_: linalg.solve_triangular(a_, b_, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    check_grads(f, [fnp.asarray(a), fnp.asarray(b)], order=2)
    grad_a = fgrad.grad(lambda a_: fnp.sum(f(a_, fnp.asarray(b))))(fnp.asarray(a))
    other = np.triu(np.ones((4, 4)), 1) if lower else np.tril(np.ones((4, 4)), -1)
    if unit_diagonal:
        other = other + np.eye(4)
    assert np.all(np.asarray(grad_a)[other == 1] == 0)


@pytest.mark.parametrize("lower", [True, False])
def test_cho_factor_and_cho_solve(lower):
    a = _spd(4)
    b = rng.standard_normal(4)
    c, low = linalg.cho_factor(fnp.asarray(a), lower=lower)
    assert low is lower
    want_c = sl.cholesky(a, lower=lower)
    np.testing.assert_allclose(np.asarray(c), want_c, rtol=1e-13, atol=1e-14)
    got = linalg.cho_solve((c, low), fnp.asarray(b))
    np.testing.assert_allclose(np.asarray(got), sl.cho_solve(sl.cho_factor(a, lower=lower), b), rtol=1e-12)
    ab = _spd(3, (2,))
    bb = rng.standard_normal((2, 3, 2))
    got = linalg.cho_solve(linalg.cho_factor(fnp.asarray(ab), lower=lower), fnp.asarray(bb))
    np.testing.assert_allclose(np.asarray(got), np.linalg.solve(ab, bb), rtol=1e-12)
    sym = lambda m: (m + fnp.swapaxes(m, -1, -2)) / 2
    check_grads(lambda m, v: linalg.cho_solve(linalg.cho_factor(sym(m) , lower=lower), v), [fnp.asarray(a), fnp.asarray(b)], order=2)


def test_expm_matches_scipy_batched_and_its_frechet_derivative():
    for scale in (0.01, 1.0, 8.0):
        a = scale * rng.standard_normal((2, 4, 4))
        got = np.asarray(linalg.expm(fnp.asarray(a)))
        want = np.stack([sl.expm(m) for m in a])
        np.testing.assert_allclose(got, want, rtol=1e-11 * max(1.0, scale), atol=1e-13 * np.abs(want).max())
    a = 0.7 * rng.standard_normal((3, 3))
    e = rng.standard_normal((3, 3))
    _, tangent = fgrad.jvp(linalg.expm, (fnp.asarray(a),), (fnp.asarray(e),))
    np.testing.assert_allclose(np.asarray(tangent), sl.expm_frechet(a, e, compute_expm=False), rtol=1e-12)
    check_grads(linalg.expm, [fnp.asarray(a)], order=2)
    assert linalg.expm(fnp.asarray(a, dtype="float32")).dtype == np.float32


def test_sqrtm_matches_scipy_and_derivatives():
    a = 0.3 * rng.standard_normal((2, 4, 4)) + 2 * np.eye(4)
    got = np.asarray(linalg.sqrtm(fnp.asarray(a)))
    want = np.stack([sl.sqrtm(m) for m in a])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got @ got, a, rtol=1e-12)
    check_grads(linalg.sqrtm, [fnp.asarray(a[0])], order=2)


def test_block_diag():
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((1, 1)), rng.standard_normal(2)
    got = linalg.block_diag(fnp.asarray(a), fnp.asarray(b), fnp.asarray(c), 4.0)
    np.testing.assert_array_equal(np.asarray(got), sl.block_diag(a, b, c, 4.0))
    assert linalg.block_diag().shape == (1, 0)
    check_grads(lambda x, y: linalg.block_diag(x, y), [fnp.asarray(a), fnp.asarray(c)], order=1)


def test_jit_and_vmap():
    a = _spd(3, (2,))
    b = rng.standard_normal((2, 3))
    f = lambda m, v: linalg.cho_solve(linalg.cho_factor(m, lower=True), v)
    np.testing.assert_allclose(np.asarray(fgrad.jit(f)(fnp.asarray(a), fnp.asarray(b))), np.asarray(f(fnp.asarray(a), fnp.asarray(b))), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(fgrad.vmap(linalg.expm)(fnp.asarray(a / 10))), np.asarray(linalg.expm(fnp.asarray(a / 10))), rtol=1e-14)


def test_bad_input_is_clear():
    with pytest.raises(ValueError, match="solve_triangular: trans"):
        linalg.solve_triangular(fnp.eye(2), fnp.ones(2), trans=3)
    with pytest.raises(ValueError, match="solve_triangular: b of shape"):
        linalg.solve_triangular(fnp.eye(2), fnp.ones(3))
    with pytest.raises(ValueError, match="expm: A must be a square"):
        linalg.expm(fnp.ones((2, 3)))
    with pytest.raises(ValueError, match="expm"):
        fgrad.jit(linalg.expm)(fnp.ones((2, 3)))
    with pytest.raises(TypeError, match="cho_solve: c_and_lower"):
        linalg.cho_solve(fnp.eye(2), fnp.ones(2))
