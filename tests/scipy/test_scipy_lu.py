"""fgrad.scipy.linalg's lu, lu_factor and lu_solve against scipy.linalg, batched, with
derivatives against finite differences and under jit/vmap (the registry test checks the
lu op's rules themselves)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops.linalg_extra import lu_pivots_to_permutation
from fgrad.scipy import linalg
from fgrad.test_util import check_grads

sl = pytest.importorskip("scipy.linalg")
rng = np.random.default_rng(5)


@pytest.mark.parametrize("kw", [{}, {"permute_l": True}, {"p_indices": True}])
def test_lu_matches_scipy_batched(kw):
    a = rng.standard_normal((3, 5, 5))
    got = linalg.lu(fnp.asarray(a), **kw)
    for i in range(3):
        want = sl.lu(a[i], **kw)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == w.dtype
            np.testing.assert_allclose(np.asarray(g)[i], w, rtol=1e-13, atol=1e-14)
    assert linalg.lu(fnp.asarray(a[0], dtype="float32"))[1].dtype == np.float32


def test_lu_factor_pivots_and_permutation_match_scipy():
    a = rng.standard_normal((2, 6, 6))
    packed, piv = linalg.lu_factor(fnp.asarray(a))
    for i in range(2):
        want_lu, want_piv = sl.lu_factor(a[i])
        np.testing.assert_allclose(np.asarray(packed)[i], want_lu, rtol=1e-13, atol=1e-14)
        np.testing.assert_array_equal(np.asarray(piv)[i], want_piv)
        perm = np.asarray(lu_pivots_to_permutation(piv))[i]
        _, l, u = sl.lu(a[i])
        np.testing.assert_allclose(a[i][perm], l @ u, rtol=1e-12, atol=1e-13)
    # a singular matrix factors (U has a zero pivot), as LAPACK's getrf
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sl.LinAlgWarning)
        want = sl.lu_factor(sing)[0]
    np.testing.assert_allclose(np.asarray(linalg.lu_factor(fnp.asarray(sing))[0]), want)


@pytest.mark.parametrize("trans", [0, 1, 2, "T"])
def test_lu_solve_matches_scipy_and_differentiates(trans):
    a = rng.standard_normal((4, 4)) + 2 * np.eye(4)
    b = rng.standard_normal((4, 3))
    lu_and_piv = linalg.lu_factor(fnp.asarray(a))
    want = sl.lu_solve(sl.lu_factor(a), b, trans={"T": 1}.get(trans, trans))  # scipy takes ints only
    np.testing.assert_allclose(np.asarray(linalg.lu_solve(lu_and_piv, fnp.asarray(b), trans=trans)), want, rtol=1e-12)
    vec = linalg.lu_solve(lu_and_piv, fnp.asarray(b[:, 0]), trans=trans)
    np.testing.assert_allclose(np.asarray(vec), want[:, 0], rtol=1e-12)
    # through the factorisation: d/da of solve(a, b) (a^T for trans), in both modes
    f = lambda m, r: linalg.lu_solve(linalg.lu_factor(m), r, trans=trans)
    check_grads(f, [fnp.asarray(a), fnp.asarray(b)], order=2)
    # the gradient in b is the solve of the transposed system
    ct = rng.standard_normal((4, 3))
    grad_b = fgrad.grad(lambda r: fnp.sum(fnp.asarray(ct) * f(fnp.asarray(a), r)))(fnp.asarray(b))
    np.testing.assert_allclose(np.asarray(grad_b), np.linalg.solve(a if trans not in (0,) else a.T, ct), rtol=1e-12)


def test_lu_gradients_batched_jit_and_vmap():
    a = rng.standard_normal((2, 4, 4))
    check_grads(lambda m: linalg.lu(m)[1], [fnp.asarray(a)], order=2)
    check_grads(lambda m: linalg.lu(m, permute_l=True)[0], [fnp.asarray(a)], order=1)
    loss = lambda m: fnp.sum(linalg.lu(m)[2] ** 2) + fnp.sum(fnp.sin(linalg.lu(m)[1]))
    eager = fgrad.grad(loss)(fnp.asarray(a))
    np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(loss))(fnp.asarray(a))), np.asarray(eager), rtol=1e-13)
    per_example = fgrad.vmap(fgrad.grad(loss))(fnp.asarray(a))
    np.testing.assert_allclose(np.asarray(per_example), np.asarray(eager), rtol=1e-13)
    b = rng.standard_normal((2, 4))
    solve = fgrad.jit(fgrad.vmap(lambda m, r: linalg.lu_solve(linalg.lu_factor(m), r)))
    np.testing.assert_allclose(np.asarray(solve(fnp.asarray(a), fnp.asarray(b))), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)


def test_lu_errors_name_the_function():
    with pytest.raises(ShapeError, match="lu: a must be a square matrix"):
        linalg.lu(fnp.ones((3, 2)))
    with pytest.raises(DTypeError, match="lu_solve: lu_and_piv must be the pair"):
        linalg.lu_solve(fnp.eye(2), fnp.ones(2))
    with pytest.raises(ValueError, match="lu_solve: trans must be"):
        linalg.lu_solve(linalg.lu_factor(fnp.eye(2)), fnp.ones(2), trans=3)
    with pytest.raises(DTypeError, match="lu_solve: piv must be integer pivots"):
        linalg.lu_solve((fnp.eye(2), fnp.zeros(2)), fnp.ones(2))
    with pytest.raises(ShapeError, match="lu_solve: b of shape"):
        linalg.lu_solve(linalg.lu_factor(fnp.eye(2)), fnp.ones(3))
