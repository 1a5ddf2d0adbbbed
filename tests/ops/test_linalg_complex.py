"""Linear algebra on complex input: values against numpy, eagerly and under jit, and
derivatives against finite differences.

Most of these functions are not holomorphic (eigh, cholesky, svd, qr, pinv, slogdet and the
norms involve conjugates), so ``check_grads``' bilinear comparison applies to them as
functions of the real and imaginary parts: :func:`_split` feeds ``re + 1j * im`` and
returns the real and imaginary parts of every output. That checks the whole chain in
JAX's convention (a VJP is the transpose of the JVP under ``Re(sum(ct * t))``), which is
what ``fgrad.grad`` returns for complex inputs. Eigenvectors and singular vectors are
defined up to a phase, so only functions that do not depend on it are differentiated.
"""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

MODES = ("rev", "fwd")
WRAPS = [lambda f: f, fgrad.jit]
WRAP_IDS = ["eager", "jit"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _cnormal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _hermitian(rng, n, batch=()):
    """Hermitian matrices with eigenvalues 1 - 0.4 n, 2 - 0.4 n, ...: distinct and of both
    signs, so eigenvector derivatives are finite."""
    q, _ = np.linalg.qr(_cnormal(rng, batch + (n, n)))
    w = np.arange(1.0, n + 1) - 0.4 * n
    return (q * w) @ np.conj(np.swapaxes(q, -1, -2))


def _hpd(rng, n, batch=()):
    z = _cnormal(rng, batch + (n, n))
    return z @ np.conj(np.swapaxes(z, -1, -2)) + n * np.eye(n)


def _distinct_singular(rng, shape):
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(_cnormal(rng, shape[:-2] + (m, k)))
    v, _ = np.linalg.qr(_cnormal(rng, shape[:-2] + (n, k)))
    return (u * (1.5 * np.arange(k, 0, -1.0))) @ np.conj(np.swapaxes(v, -1, -2))


def _close(got, want, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype}, numpy's {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _split(f):
    """``f`` of a complex array as a function of its real and imaginary parts, returning
    the real and imaginary parts of its outputs (real ones only once)."""

    def g(re, im):
        out = f(re + 1j * im)
        outs = out if isinstance(out, tuple) else (out,)
        parts = []
        for o in outs:
            parts.append(fnp.real(o))
            if np.dtype(o.dtype).kind == "c":
                parts.append(fnp.imag(o))
        return tuple(parts)

    return g


def _check_complex(f, z, order=2, modes=MODES):
    z = np.asarray(z)
    check_grads(_split(f), (fgrad.asarray(z.real), fgrad.asarray(z.imag)), order=order, modes=modes)


# ------------------------------------------------------------------------ the reported bug


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
def test_issue_12_eigvalsh_of_a_complex_hermitian_matrix(wrap):
    # (a + a^T) / 2 kept the real part only: [[2, 0], [0, 2]], eigenvalues [2, 2].
    a = fnp.array([[2, 1j], [-1j, 2]])
    _close(wrap(fnp.linalg.eigvalsh)(a), np.array([1.0, 3.0]))
    _close(wrap(lambda x: fnp.linalg.eigh(x).eigenvalues)(a), np.array([1.0, 3.0]))
    low = wrap(fnp.linalg.cholesky)(fnp.array([[4, 2j], [-2j, 2]]))
    _close(low, np.linalg.cholesky(np.array([[4, 2j], [-2j, 2]])))


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_issue_12_hermitian_decompositions_match_numpy(wrap, batch):
    rng = _rng(1)
    z = _cnormal(rng, batch + (4, 4))
    h = z + np.conj(np.swapaxes(z, -1, -2))  # Hermitian, eigenvalues not chosen
    p = _hpd(rng, 4, batch)
    _close(wrap(fnp.linalg.eigvalsh)(h), np.linalg.eigvalsh(h))
    w, v = wrap(lambda x: tuple(fnp.linalg.eigh(x)))(h)
    _close(w, np.linalg.eigh(h).eigenvalues)
    v = np.asarray(v)
    np.testing.assert_allclose(h @ v, v * np.asarray(w)[..., None, :], atol=1e-12)
    np.testing.assert_allclose(np.conj(np.swapaxes(v, -1, -2)) @ v, np.broadcast_to(np.eye(4), v.shape), atol=1e-12)
    _close(wrap(fnp.linalg.cholesky)(p), np.linalg.cholesky(p))
    _close(wrap(lambda x: fnp.linalg.cholesky(x, upper=True))(p), np.linalg.cholesky(p, upper=True))


def test_issue_12_float32_complex64_hermitian():
    rng = _rng(2)
    h = _hermitian(rng, 3).astype(np.complex64)
    w = fnp.linalg.eigvalsh(h)
    assert w.dtype == np.float32
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(h), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------ derivatives


def _sign_free_eigh(x):
    w, v = fnp.linalg.eigh(x)
    return (v * (w**2)[..., None, :]) @ fnp.conj(v).mT, fnp.abs(v) ** 2, w


@pytest.mark.parametrize("batch", [(), (2,)])
def test_issue_12_hermitian_derivatives_against_finite_differences(batch):
    rng = _rng(3)
    h, p = _hermitian(rng, 3, batch), _hpd(rng, 3, batch)
    _check_complex(fnp.linalg.eigvalsh, h)
    _check_complex(_sign_free_eigh, h)
    _check_complex(fnp.linalg.cholesky, p)
    _check_complex(lambda x: fnp.linalg.cholesky(x, upper=True), p)
    # Through a Hermitian construction, as users write it: B B^H + I.
    _check_complex(lambda b: fnp.linalg.cholesky(b @ fnp.conj(b).mT + fnp.eye(3)), _cnormal(rng, batch + (3, 3)))


def test_issue_12_hermitian_derivatives_under_jit():
    rng = _rng(4)
    h, p = _hermitian(rng, 3), _hpd(rng, 3)
    _check_complex(fgrad.jit(fnp.linalg.eigvalsh), h)
    _check_complex(fgrad.jit(_sign_free_eigh), h, order=1)
    _check_complex(fgrad.jit(fnp.linalg.cholesky), p, order=1)


def test_issue_12_complex_gradient_follows_jax_convention():
    # grad of a real function of z = x + iy is df/dx - i df/dy (JAX's convention); here
    # against the derivatives in the real and imaginary parts.
    rng = _rng(5)
    h, p = _hermitian(rng, 3), _hpd(rng, 3)
    cases = [
        (lambda a: fnp.sum(fnp.linalg.eigvalsh(a) ** 3), h),
        (lambda a: fnp.sum(fnp.abs(fnp.linalg.cholesky(a)) ** 2), p),
        (lambda a: fnp.linalg.slogdet(a).logabsdet, p),
        (lambda a: fnp.linalg.norm(a, "nuc"), p),
    ]
    for f, z in cases:
        g = np.asarray(fgrad.grad(f)(fgrad.asarray(z)))
        gx, gy = fgrad.grad(lambda x, y: f(x + 1j * y), argnums=(0, 1))(
            fgrad.asarray(z.real), fgrad.asarray(z.imag)
        )
        np.testing.assert_allclose(g, np.asarray(gx) - 1j * np.asarray(gy), atol=1e-12)
        np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(f))(fgrad.asarray(z))), g, atol=1e-12)


def test_issue_12_eigvalsh_gradient_is_finite_for_repeated_eigenvalues():
    # d sum(w^2) / dA = 2 A, conjugated for JAX's convention: 2 conj(A) = 2 A^T.
    a = np.array([[2.0, 1j, 0.0], [-1j, 2.0, 0.0], [0.0, 0.0, 1.0]])  # eigenvalues 1, 1, 3
    g = fgrad.grad(lambda x: fnp.sum(fnp.linalg.eigvalsh(x) ** 2))(fgrad.asarray(a))
    np.testing.assert_allclose(np.asarray(g), 2 * a.T, atol=1e-12)


# ------------------------------------------------------------------------ every other linalg function


def _cases():
    rng = _rng(6)
    a = _cnormal(rng, (3, 3)) + 3 * np.eye(3)
    ab = _cnormal(rng, (2, 3, 3)) + 3 * np.eye(3)
    tall, b = _cnormal(rng, (4, 3)), _cnormal(rng, (4, 2))
    return [
        ("inv", fnp.linalg.inv, np.linalg.inv, (ab,)),
        ("solve", fnp.linalg.solve, np.linalg.solve, (ab, _cnormal(rng, (2, 3, 2)))),
        ("det", fnp.linalg.det, np.linalg.det, (ab,)),
        ("slogdet", lambda x: tuple(fnp.linalg.slogdet(x)), lambda x: tuple(np.linalg.slogdet(x)), (ab,)),
        ("svdvals", fnp.linalg.svdvals, np.linalg.svdvals, (tall,)),
        ("svd_S", lambda x: fnp.linalg.svd(x).S, lambda x: np.linalg.svd(x).S, (tall,)),
        ("pinv", fnp.linalg.pinv, np.linalg.pinv, (tall,)),
        ("matrix_power", lambda x: fnp.linalg.matrix_power(x, 3), lambda x: np.linalg.matrix_power(x, 3), (a,)),
        ("matrix_power_neg", lambda x: fnp.linalg.matrix_power(x, -2), lambda x: np.linalg.matrix_power(x, -2), (a,)),
        ("lstsq_x", lambda x, y: fnp.linalg.lstsq(x, y).x, lambda x, y: np.linalg.lstsq(x, y)[0], (tall, b)),
        ("lstsq_residuals", lambda x, y: fnp.linalg.lstsq(x, y).residuals, lambda x, y: np.linalg.lstsq(x, y)[1], (tall, b)),
        ("lstsq_s", lambda x, y: fnp.linalg.lstsq(x, y).s, lambda x, y: np.linalg.lstsq(x, y)[3], (tall, b)),
        ("trace", fnp.linalg.trace, np.linalg.trace, (ab,)),
        ("matmul", fnp.linalg.matmul, np.linalg.matmul, (ab, a)),
        ("vecdot", fnp.linalg.vecdot, np.linalg.vecdot, (a, ab)),
        ("outer", fnp.linalg.outer, np.linalg.outer, (a[0], a[1])),
        ("tensordot", fnp.linalg.tensordot, np.linalg.tensordot, (a, a)),
        ("diagonal", fnp.linalg.diagonal, np.linalg.diagonal, (ab,)),
        *[
            (f"norm_{o}", lambda x, o=o: fnp.linalg.norm(x, o), lambda x, o=o: np.linalg.norm(x, o), (a,))
            for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
        ],
        *[
            (f"vector_norm_{o}", lambda x, o=o: fnp.linalg.vector_norm(x, ord=o, axis=1),
             lambda x, o=o: np.linalg.vector_norm(x, ord=o, axis=1), (a,))
            for o in (2, 1, 0, 3, 0.5, np.inf, -np.inf)
        ],
        ("matrix_norm", lambda x: fnp.linalg.matrix_norm(x, ord="nuc"), lambda x: np.linalg.matrix_norm(x, ord="nuc"), (ab,)),
    ]


CASES = _cases()


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
@pytest.mark.parametrize("name,f,want,args", CASES, ids=[c[0] for c in CASES])
def test_issue_12_complex_input_matches_numpy(wrap, name, f, want, args):
    got = wrap(f)(*args)
    expected = want(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        _close(g, w, tol=1e-11)


@pytest.mark.parametrize("wrap", WRAPS, ids=WRAP_IDS)
def test_issue_12_complex_svd_and_qr_reconstruct(wrap):
    x = _cnormal(_rng(7), (2, 4, 3))
    u, s, vh = wrap(lambda a: tuple(fnp.linalg.svd(a, full_matrices=False)))(x)
    np.testing.assert_allclose(np.asarray((u * s[..., None, :]) @ vh), x, atol=1e-12)
    q, r = wrap(lambda a: tuple(fnp.linalg.qr(a)))(x)
    np.testing.assert_allclose(np.asarray(q @ r), x, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(r)), np.abs(np.linalg.qr(x).R), atol=1e-12)
    assert np.all(np.asarray(r).diagonal(axis1=-2, axis2=-1).imag == 0)  # LAPACK's real diagonal


def _sign_free_svd(x):
    u, s, vh = fnp.linalg.svd(x, full_matrices=False)
    return (u * (s**3)[..., None, :]) @ vh, fnp.abs(u) ** 2, fnp.abs(vh) ** 2


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 4, 3)])
def test_issue_12_complex_svd_pinv_derivatives(shape):
    a = _distinct_singular(_rng(8), shape)
    _check_complex(_sign_free_svd, a)
    _check_complex(fnp.linalg.svdvals, a)
    _check_complex(fnp.linalg.pinv, a)
    _check_complex(lambda x: fnp.linalg.matrix_norm(x, ord="nuc"), a, order=1)
    _check_complex(lambda x: fnp.linalg.matrix_norm(x, ord=2), a, order=1)
    _check_complex(lambda x: fnp.linalg.matrix_norm(x, ord="fro"), a)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (2, 4, 3), (2, 4), (2, 3, 5)])
def test_issue_12_complex_qr_derivatives(shape):
    rng = _rng(9)
    a = _cnormal(rng, shape) + 2 * np.eye(*shape[-2:])
    _check_complex(lambda x: tuple(fnp.linalg.qr(x)), a)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_issue_12_complex_slogdet_derivatives(batch):
    # The sign e^{i phi} moves with the phase: d sign = sign * i Im tr(x^-1 dx).
    a = _cnormal(_rng(10), batch + (3, 3)) + 3 * np.eye(3)
    _check_complex(lambda x: tuple(fnp.linalg.slogdet(x)), a)
    _check_complex(fgrad.jit(lambda x: tuple(fnp.linalg.slogdet(x))), a, order=1)


def test_issue_12_complex_lstsq_derivatives():
    rng = _rng(11)
    a, b = _distinct_singular(rng, (4, 3)), _cnormal(rng, (4, 2))
    _check_complex(lambda x: tuple(fnp.linalg.lstsq(x, b))[:2], a, order=1)


def test_issue_12_holomorphic_ops_take_complex_input_directly():
    # Holomorphic: the bilinear comparison holds on the complex input itself.
    rng = _rng(12)
    a = fgrad.asarray(_cnormal(rng, (2, 3, 3)) + 3 * np.eye(3))
    for f in (fnp.linalg.det, fnp.linalg.inv, lambda x: fnp.linalg.matrix_power(x, -2)):
        check_grads(f, (a,), order=2, modes=MODES)
        check_grads(fgrad.jit(f), (a,), order=1, modes=MODES)


def test_issue_12_vmap_of_complex_eigvalsh_and_its_gradient():
    h = _hermitian(_rng(13), 3, (4,))
    f = lambda x: fnp.sum(fnp.linalg.eigvalsh(x) ** 3)
    per = np.stack([np.asarray(fgrad.grad(f)(fgrad.asarray(m))) for m in h])
    np.testing.assert_allclose(np.asarray(fgrad.vmap(fgrad.grad(f))(fgrad.asarray(h))), per, atol=1e-12)
    _close(fgrad.vmap(fnp.linalg.eigvalsh)(fgrad.asarray(h)), np.linalg.eigvalsh(h))
