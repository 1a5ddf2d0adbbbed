"""fgrad.scipy.special against scipy.special on grids with tails, special values, and
derivatives against finite differences (the registry test checks the ops themselves)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy import special
from fgrad.test_util import check_grads

sp = pytest.importorskip("scipy.special")


def _grid(*parts):
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


POS = _grid(np.geomspace(1e-300, 1e-3, 20), np.linspace(1e-3, 30, 600), np.geomspace(30, 1e300, 40))
PROB = _grid(np.geomspace(1e-300, 0.5, 200), np.linspace(0, 1, 401), 1 - np.geomspace(1e-16, 0.5, 60))
_A, _X = np.meshgrid(_grid(np.geomspace(1e-3, 1, 8), np.linspace(1, 50, 20), [200.0, 1000.0]),
                     _grid(np.geomspace(1e-5, 1, 8), np.linspace(1, 100, 30), [500.0, 2000.0]))
# scipy's betaln loses digits when one argument is much larger than the other (1e-9 at
# (6e5, 0.11)); those points are checked against mpmath's values in test_betaln_large.
_B1, _B2 = np.meshgrid(_grid(np.geomspace(1e-3, 1, 8), np.linspace(1, 100, 15)),
                       _grid(np.geomspace(1e-3, 1, 8), np.linspace(1, 100, 15)))
_Z1, _Z2 = np.meshgrid(_grid(np.linspace(1.01, 10, 20), [20.0, 60.0]), _grid(np.geomspace(1e-3, 1, 8), np.linspace(1, 100, 20)))
_N, _XP = np.meshgrid(np.arange(0, 6), _grid(np.geomspace(1e-3, 1, 8), np.linspace(1, 60, 30)))
_XY1, _XY2 = np.meshgrid(np.linspace(-3, 3, 13), _grid([0.0], np.geomspace(1e-300, 1, 10), np.linspace(0.1, 10, 10)))

# name -> (fgrad function, scipy function, args, float64 rtol, float32 rtol). The float64
# tolerances are the measured maxima (docs/scipy.md) rounded up; float32 results are the
# float64 ones rounded once, so they agree with scipy's rounded to float32 to an ulp.
CASES = {
    "gammaln": (special.gammaln, sp.gammaln, (POS,), 5e-14, 2e-7),
    "gammaln_negative": (special.gammaln, sp.gammaln, (-np.linspace(0.01, 50, 499),), 1e-14, 2e-7),
    "digamma": (special.digamma, sp.digamma, (POS,), 5e-15, 2e-7),
    "digamma_negative": (special.digamma, sp.digamma, (-np.linspace(0.013, 20.3, 499),), 1e-13, 2e-7),
    "polygamma": (special.polygamma, sp.polygamma, (_N.ravel(), _XP.ravel()), 5e-15, 2e-7),
    "zeta": (special.zeta, sp.zeta, (_Z1.ravel(), _Z2.ravel()), 5e-15, 2e-7),
    "zeta_riemann": (special.zeta, sp.zeta, (_grid(np.linspace(-30, 0.99, 200), np.linspace(1.01, 40, 100)),), 5e-14, 2e-7),
    "betaln": (special.betaln, sp.betaln, (_B1.ravel(), _B2.ravel()), 5e-13, 2e-7),
    "gammainc": (special.gammainc, sp.gammainc, (_A.ravel(), _X.ravel()), 5e-12, 2e-7),
    "gammaincc": (special.gammaincc, sp.gammaincc, (_A.ravel(), _X.ravel()), 1e-11, 2e-7),
    "erfinv": (special.erfinv, sp.erfinv, (_grid(-np.geomspace(1e-300, 1, 100), np.linspace(-1, 1, 401), 1 - np.geomspace(1e-16, 0.5, 60)),), 2e-15, 2e-7),
    "ndtri": (special.ndtri, sp.ndtri, (PROB,), 2e-15, 2e-7),
    # ndtr's tail (and log_ndtr's for x > 6) inherit the rounding of x / sqrt(2), amplified
    # by x**2: 2e-13 at x = -37 against mpmath, for scipy's ndtr as for this one
    "ndtr": (special.ndtr, sp.ndtr, (np.linspace(-38, 9, 941),), 1e-12, 2e-7),
    "log_ndtr": (special.log_ndtr, sp.log_ndtr, (_grid(-np.geomspace(1e-3, 1e5, 300), np.linspace(-40, 37, 771)),), 1e-12, 2e-7),
    "logit": (special.logit, sp.logit, (PROB,), 2e-15, 2e-7),
    "expit": (special.expit, sp.expit, (np.linspace(-700, 700, 1401),), 2e-15, 2e-7),
    "entr": (special.entr, sp.entr, (_grid(np.geomspace(1e-300, 1e300, 100), np.linspace(-1, 3, 41)),), 1e-15, 2e-7),
    "i0e": (special.i0e, sp.i0e, (_grid(np.linspace(-50, 50, 801), np.geomspace(1e-10, 1e300, 100)),), 5e-15, 2e-7),
    "i1e": (special.i1e, sp.i1e, (_grid(np.linspace(-50, 50, 801), np.geomspace(1e-30, 1e300, 100)),), 5e-15, 2e-7),
    "xlogy": (special.xlogy, sp.xlogy, (_XY1.ravel(), _XY2.ravel()), 1e-15, 2e-7),
    "xlog1py": (special.xlog1py, sp.xlog1py, (_XY1.ravel(), _XY2.ravel() - 0.999), 1e-15, 2e-7),
    "erf": (special.erf, sp.erf, (np.linspace(-6, 6, 241),), 1e-15, 2e-7),
    # fgrad's erfc op computes float32 in float32 (the others compute in float64)
    "erfc": (special.erfc, sp.erfc, (np.linspace(-6, 26, 321),), 1e-13, 1e-6),
}


def max_relative_error(got, want, tiny):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    # below the smallest normal number both are rounding noise (subnormal results)
    small = (np.abs(want) < tiny) & (np.abs(got) < tiny)
    err = np.abs(got - want) / np.maximum(np.abs(want), tiny)
    err[same | small] = 0.0
    return float(err.max())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy_on_grids_with_tails(name, dtype):
    fn, ref, args, tol64, tol32 = CASES[name]
    args = [a if a.dtype.kind == "i" else a.astype(dtype) for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = fn(*[fnp.asarray(a) for a in args])
        want = ref(*[a.astype(np.float64) for a in args])
    assert got.dtype == (np.dtype(dtype) if name != "polygamma" else np.float64)  # int n
    if got.dtype == np.float32:
        want = want.astype(np.float32)
    tiny = np.finfo(got.dtype).tiny
    assert np.isfinite(np.asarray(got)).sum() > 0.5 * np.size(got)
    err = max_relative_error(got, want, tiny)
    assert err <= (tol64 if dtype == "float64" else tol32), f"{name} {dtype}: {err:.2e}"


def test_special_values_as_scipy():
    inf, nan = np.inf, np.nan
    pairs = [
        (special.xlogy(0.0, 0.0), 0.0),
        (special.xlogy(0.0, nan), nan),
        (special.xlogy(0.0, -1.0), 0.0),
        (special.xlog1py(0.0, -1.0), 0.0),
        (special.logsumexp(fnp.array([-inf, -inf])), -inf),
        (special.logsumexp(fnp.array([nan, 1.0])), nan),
        (special.gammaln(0.0), inf),
        (special.gammaln(-2.0), inf),
        (special.digamma(0.0), -inf),
        (special.digamma(-2.0), nan),
        (special.erfinv(1.0), inf),
        (special.erfinv(-1.0), -inf),
        (special.erfinv(1.5), nan),
        (special.ndtri(0.0), -inf),
        (special.ndtri(1.0), inf),
        (special.log_ndtr(-inf), -inf),
        (special.log_ndtr(inf), 0.0),
        (special.logit(0.0), -inf),
        (special.logit(1.0), inf),
        (special.logit(2.0), nan),
        (special.entr(0.0), 0.0),
        (special.entr(-1.0), -inf),
        (special.gammainc(0.0, 1.0), 1.0),
        (special.gammainc(1.0, 0.0), 0.0),
        (special.gammainc(1.0, inf), 1.0),
        (special.gammainc(-1.0, 1.0), nan),
        (special.gammaincc(1.0, inf), 0.0),
        (special.zeta(1.0), inf),
        (special.zeta(0.0), -0.5),
        (special.zeta(3.0, -2.0), inf),
        (special.zeta(0.5, 2.0), nan),
        (special.i0e(inf), 0.0),
        (special.gammaln(nan), nan),
        (special.ndtri(nan), nan),
    ]
    for got, want in pairs:
        assert float(got) == want or (np.isnan(want) and np.isnan(float(got))), (got, want)
    np.testing.assert_allclose(float(special.zeta(2.0, -1.5)), sp.zeta(2.0, -1.5), rtol=1e-14)
    np.testing.assert_allclose(float(special.polygamma(1, -1.5)), sp.polygamma(1, -1.5), rtol=1e-13)


def test_betaln_large_arguments_against_mpmath():
    # log B(a, b) to 50 digits (mpmath.log(mpmath.beta(a, b))), rounded to float64
    cases = [
        (615848.2110660254, 0.11288378916846883, 0.6213565470243313),
        (33598.184, 0.078476, 1.686652406245679),
        (1e10, 1.0, -23.025850929940457),
        (1e5, 1e5, -138633.92706134808),
    ]
    for a, b, want in cases:
        np.testing.assert_allclose(float(special.betaln(a, b)), want, rtol=2e-15)
        np.testing.assert_allclose(float(special.betaln(b, a)), want, rtol=2e-15)


def test_logsumexp_with_b_return_sign_axis_keepdims():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((3, 4))
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            got = special.logsumexp(fnp.asarray(a), axis=axis, b=fnp.asarray(b), keepdims=keepdims, return_sign=True)
            want = sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
            np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-13)
            np.testing.assert_array_equal(np.asarray(got[1]), want[1])
    np.testing.assert_allclose(np.asarray(special.softmax(fnp.asarray(a))), sp.softmax(a), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(special.log_softmax(fnp.asarray(a), axis=1)), sp.log_softmax(a, axis=1), rtol=1e-14)
    np.testing.assert_allclose(float(special.multigammaln(3.7, 4)), sp.multigammaln(3.7, 4), rtol=1e-14)


def test_float32_stays_float32_and_python_scalars_are_weak():
    x = fnp.array([0.5, 2.0], dtype="float32")
    for fn in (special.gammaln, special.digamma, special.erfinv, special.log_ndtr, special.i0e, special.ndtr, special.expit):
        assert fn(x).dtype == np.float32
    assert special.xlogy(x, 2.0).dtype == np.float32
    assert special.gammainc(2.0, x).dtype == np.float32
    assert special.gammaln(3).dtype == np.float64  # integers give float64


# Derivatives of the public functions (composites included) against finite differences.
GRAD_CASES = [
    (special.gammaln, (np.array([0.3, 2.5, 7.0]),)),
    (special.gammaln, (np.array([-0.4, -2.6]),)),
    (special.digamma, (np.array([0.3, 2.5, 12.0]),)),
    (special.ndtr, (np.array([-3.0, 0.2, 4.0]),)),
    (special.log_ndtr, (np.array([-30.0, -3.0, 0.2, 6.0]),)),
    (special.ndtri, (np.array([0.01, 0.4, 0.99]),)),
    (special.erfinv, (np.array([-0.9, 0.1, 0.7]),)),
    (special.logit, (np.array([0.1, 0.5, 0.8]),)),
    (special.expit, (np.array([-3.0, 0.5]),)),
    (special.entr, (np.array([0.2, 1.5]),)),
    (special.i0e, (np.array([-3.0, 0.4, 25.0]),)),
    (special.i1e, (np.array([-3.0, 0.4, 25.0]),)),
    (special.betaln, (np.array([0.5, 3.0]), np.array([2.0, 20.0]))),
    (special.xlogy, (np.array([0.5, -2.0]), np.array([0.3, 4.0]))),
    (special.xlog1py, (np.array([0.5, -2.0]), np.array([-0.3, 4.0]))),
    (lambda a: special.logsumexp(a, axis=1, b=fnp.array([1.0, 2.0, 0.5])), (np.array([[0.1, 0.2, -1.0], [3.0, 2.0, 1.0]]),)),
    (lambda a: special.softmax(a, axis=0), (np.array([[0.1, 0.2], [3.0, 2.0]]),)),
    (lambda a: special.multigammaln(a, 3), (np.array([1.7, 4.0]),)),
    (lambda x: special.gammainc(2.5, x), (np.array([0.5, 3.0, 9.0]),)),
    (lambda x: special.gammaincc(2.5, x), (np.array([0.5, 3.0, 9.0]),)),
    (lambda q: special.zeta(3.0, q), (np.array([0.5, 2.0]),)),
    (lambda x: special.polygamma(2, x), (np.array([0.5, 2.0]),)),
]


@pytest.mark.parametrize("k", range(len(GRAD_CASES)))
def test_derivatives_against_finite_differences(k):
    fn, args = GRAD_CASES[k]
    check_grads(fn, [fnp.asarray(a) for a in args], order=2, modes=("rev", "fwd"))


def test_xlogy_derivative_at_zero_is_jax_rule():
    dx, dy = fgrad.grad(special.xlogy, argnums=(0, 1))(0.0, 2.0)
    assert float(dx) == np.log(2.0) and float(dy) == 0.0
    assert float(fgrad.grad(special.xlogy)(0.0, 0.0)) == -np.inf
    assert float(fgrad.grad(special.entr)(0.0)) == np.inf


@pytest.mark.parametrize(
    "fn, argnums, arg",
    [
        (special.gammainc, 0, "a"),
        (special.gammaincc, 0, "a"),
        (special.zeta, 0, "x"),
        (fgrad.ops.special.polygamma, 0, "n"),  # the public function takes integer n only
    ],
)
def test_derivatives_without_closed_form_raise_naming_the_argument(fn, argnums, arg):
    name = getattr(fn, "name", None) or fn.__name__
    with pytest.raises(special.NoDerivativeError, match=rf"{name}: the derivative with respect to {arg}"):
        fgrad.grad(fn, argnums=argnums)(2.0, 1.5)
    with pytest.raises(special.NoDerivativeError, match=arg):
        fgrad.jvp(lambda v: fn(v, 1.5), (2.0,), (1.0,))
    # the other argument differentiates, also when the first is a traced constant
    fgrad.grad(fn, argnums=1)(2.0, 1.5)


def test_jit_and_vmap_agree_with_eager():
    x = fnp.array([[0.3, 1.7], [4.0, 0.9]])
    for fn in (special.gammaln, special.log_ndtr, special.i1e, lambda v: special.gammainc(1.5, v),
               lambda v: special.logsumexp(v, axis=-1), lambda v: special.multigammaln(v + 1, 2)):
        np.testing.assert_allclose(np.asarray(fgrad.jit(fn)(x)), np.asarray(fn(x)), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(fgrad.vmap(fn)(x)), np.asarray(fn(x)), rtol=1e-15)


@pytest.mark.parametrize("bad", [None, "abc", object(), 1j, [1j]])
def test_bad_input_is_a_clear_error_eagerly_and_under_jit(bad):
    for fn in (special.gammaln, special.ndtr, special.expit, special.logsumexp, special.softmax):
        name = fn.__name__
        with pytest.raises((TypeError, ValueError), match=name):
            fn(bad)
    with pytest.raises((TypeError, ValueError), match="multigammaln"):
        special.multigammaln(2.0, 1.5)
    with pytest.raises((TypeError, ValueError), match="gammainc"):
        fgrad.jit(special.gammainc)(fnp.ones(3), fnp.ones(2))
    with pytest.raises(TypeError, match="polygamma: n must be a non-negative integer"):
        special.polygamma(1.5, 1.0)
    with pytest.raises((TypeError, ValueError), match="xlogy"):
        special.xlogy(fnp.ones(3), fnp.ones(2))
