"""fgrad.scipy.linalg.schur: the defining properties of a Schur form (reconstruction,
orthogonality, (quasi-)triangular structure, LAPACK's standard 2x2 blocks) and the same
eigenvalues as scipy.linalg.schur, on random, defective, badly scaled and structured
matrices, batched, under jit and vmap; no derivative, as JAX."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import DTypeError, ShapeError
from fgrad.scipy import linalg

sl = pytest.importorskip("scipy.linalg")
rng = np.random.default_rng(11)


def _cases():
    out = [rng.standard_normal((n, n)) for n in (1, 2, 3, 5, 9) for _ in range(3)]
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    jordan = np.diag([2.0] * 4) + np.diag([1.0] * 3, 1)  # defective: one eigenvalue, one vector
    out += [
        q @ jordan @ q.T,
        np.roll(np.eye(4), 1, axis=1),  # a cyclic permutation: eigenvalues on the unit circle
        np.kron(np.eye(2), np.array([[0.0, 1.0], [-1.0, 0.0]])),  # repeated complex pair
        np.zeros((3, 3)),
        np.triu(rng.standard_normal((4, 4))),  # already triangular
        1e-200 * rng.standard_normal((4, 4)),
        1e200 * rng.standard_normal((4, 4)),
    ]
    return out


def _matched(got, want):
    """The largest distance from an eigenvalue in ``want`` to the nearest in ``got``."""
    return max(np.min(np.abs(got - w)) for w in want)


@pytest.mark.parametrize("k", range(len(_cases())))
def test_schur_form_properties_and_eigenvalues_match_scipy(k):
    a = _cases()[k]
    n = a.shape[0]
    scale = max(np.abs(a).max(), 1e-300)
    t, z = (np.asarray(v) for v in linalg.schur(fnp.asarray(a)))
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-13 * scale, rtol=0)
    np.testing.assert_allclose(z.T @ z, np.eye(n), atol=1e-13)
    assert np.all(np.tril(t, -2) == 0)
    sub = np.diag(t, -1)
    for i in np.flatnonzero(sub):  # a 2x2 block: standard form, a complex pair
        assert i + 1 >= len(sub) or sub[i + 1] == 0, "two 2x2 blocks overlap"
        assert t[i, i] == t[i + 1, i + 1] and np.sign(t[i, i + 1]) * np.sign(sub[i]) < 0
    tc, zc = (np.asarray(v) for v in linalg.schur(fnp.asarray(a), output="complex"))
    assert tc.dtype == np.complex128
    np.testing.assert_allclose(zc @ tc @ zc.conj().T, a, atol=1e-13 * scale, rtol=0)
    np.testing.assert_allclose(zc.conj().T @ zc, np.eye(n), atol=1e-13)
    assert np.all(np.tril(tc, -1) == 0)
    want = np.diag(sl.schur(a, output="complex")[0])
    # a defective eigenvalue moves by eps^(1/4) under rounding, in scipy's form as in ours
    tol = 2e-4 if k == 15 else 1e-12
    assert _matched(np.diag(tc), want) <= tol * scale


def test_schur_batched_jit_vmap_float32_and_refusals():
    a = rng.standard_normal((3, 5, 5))
    t, z = linalg.schur(fnp.asarray(a))
    for i in range(3):
        ti, zi = linalg.schur(fnp.asarray(a[i]))
        np.testing.assert_array_equal(np.asarray(t)[i], np.asarray(ti))
        np.testing.assert_array_equal(np.asarray(z)[i], np.asarray(zi))
    jt, _ = fgrad.jit(lambda m: linalg.schur(m))(fnp.asarray(a))
    vt, _ = fgrad.vmap(lambda m: linalg.schur(m, output="c"))(fnp.asarray(a))
    np.testing.assert_array_equal(np.asarray(jt), np.asarray(t))
    np.testing.assert_allclose(np.asarray(vt), np.asarray(linalg.schur(fnp.asarray(a), output="complex")[0]), rtol=0, atol=0)
    t32, z32 = linalg.schur(fnp.asarray(a[0], dtype="float32"))
    assert t32.dtype == np.float32 and linalg.schur(fnp.asarray(a[0], dtype="float32"), "complex")[0].dtype == np.complex64
    nan_t, _ = linalg.schur(fnp.asarray([[1.0, np.nan], [0.0, 1.0]]))
    assert np.all(np.isnan(np.asarray(nan_t)))
    with pytest.raises(NotImplementedError, match="schur: the Schur form is not differentiable"):
        fgrad.grad(lambda m: fnp.sum(linalg.schur(m)[0]))(fnp.asarray(a[0]))
    with pytest.raises(ValueError, match="schur: sort is not supported"):
        linalg.schur(fnp.eye(2), sort="lhp")
    with pytest.raises(ValueError, match="schur: output must be"):
        linalg.schur(fnp.eye(2), output="upper")
    with pytest.raises(ShapeError, match="schur: a must be a square matrix"):
        linalg.schur(fnp.ones((2, 3)))
    with pytest.raises(DTypeError):
        linalg.schur(fnp.eye(2) * 1j)
