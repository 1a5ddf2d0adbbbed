"""betainc, the t and beta CDFs, and Temme's expansion in gammainc: values against scipy
(and mpmath where scipy itself is off), derivatives against finite differences, jit/vmap
(the registry test checks the betainc op's rules in x)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import special as _s
from fgrad.scipy import special
from fgrad.scipy.stats import beta, t
from fgrad.test_util import check_grads

sp = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")


def _rel(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    keep = np.abs(want) > 1e-300
    return np.max(np.abs(got - want)[keep] / np.abs(want[keep]))


def _betainc_grid():
    ab = np.geomspace(0.05, 500.0, 11)
    tail = np.geomspace(1e-12, 0.5, 12)
    x = np.concatenate([tail, 1 - tail, np.linspace(0.05, 0.95, 7)])
    return np.meshgrid(ab, ab, x, indexing="ij")


def test_betainc_matches_scipy_on_a_grid_with_tails_float64_and_float32():
    a, b, x = _betainc_grid()
    want = sp.betainc(a, b, x)
    got = special.betainc(fnp.asarray(a), fnp.asarray(b), fnp.asarray(x))
    # measured 3.3e-12: 1 - I_(1-x)(b, a) near x = 1 loses the digits of the difference
    assert _rel(got, want) < 1e-11
    got32 = special.betainc(fnp.asarray(a, dtype="float32"), fnp.asarray(b, dtype="float32"), fnp.asarray(x, dtype="float32"))
    assert got32.dtype == np.float32
    a32, b32, x32 = (v.astype(np.float32).astype(np.float64) for v in (a, b, x))
    # the kernel runs in float64 and rounds once: within an ulp of scipy's value at the
    # float32 inputs, rounded
    want32 = sp.betainc(a32, b32, x32)
    keep = want32 > 1e-30
    ulp = np.spacing(want32[keep].astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(np.asarray(got32, dtype=np.float64)[keep] - want32[keep]) / ulp) <= 1.0


def test_betainc_where_scipy_is_off_agrees_with_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    # scipy 1.17 is off by 2e-4 at the first point; large shapes need many terms
    points = [(15117.7507061566, 12.663801734674022, 0.9523540716455392), (60.0, 50.0, 0.55), (300.0, 2.0, 0.99)]
    for a, b, x in points:
        want = float(mp.betainc(mp.mpf(a), mp.mpf(b), 0, mp.mpf(x), regularized=True))
        assert abs(float(special.betainc(a, b, x)) - want) <= 1e-12 * want


def test_betainc_special_values_are_scipys():
    inf = math.inf
    cases = [(0, 1, 0), (0, 1, 0.5), (0, 1, 1), (1, 0, 0), (1, 0, 0.5), (1, 0, 1), (inf, 1, 0.5), (1, inf, 0.5),
             (2, 3, 0), (2, 3, 1), (0, 0, 0.5), (2, 3, 1.5), (2, 3, -0.1), (-1, 2, 0.5), (2, 3, math.nan), (0.5, 0.5, 0)]
    a, b, x = (np.array(c, dtype=np.float64) for c in zip(*cases))
    np.testing.assert_array_equal(np.asarray(special.betainc(fnp.asarray(a), fnp.asarray(b), fnp.asarray(x))), sp.betainc(a, b, x))


def test_betainc_derivative_in_x_and_refusal_in_a_and_b_as_jax():
    x = fnp.array([0.05, 0.4, 0.9])
    check_grads(lambda x_: special.betainc(2.5, 0.7, x_), [x], order=2)
    dens = np.asarray(fgrad.vmap(fgrad.grad(lambda x_: special.betainc(2.5, 0.7, x_)))(x))
    np.testing.assert_allclose(dens, st.beta.pdf(np.asarray(x), 2.5, 0.7), rtol=1e-13)
    for argnums in (0, 1):
        with pytest.raises(special.NoDerivativeError, match="betainc: the derivative with respect to"):
            fgrad.grad(special.betainc, argnums=argnums)(2.0, 3.0, 0.4)
    # jit and vmap agree with eager
    a, b, xs = fnp.array([0.5, 3.0, 40.0]), fnp.array([2.0, 0.5, 60.0]), fnp.array([0.1, 0.6, 0.45])
    eager = np.asarray(special.betainc(a, b, xs))
    np.testing.assert_allclose(np.asarray(fgrad.jit(special.betainc)(a, b, xs)), eager, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(fgrad.vmap(special.betainc, in_axes=(0, 0, 0))(a, b, xs)), eager, rtol=1e-15)


def _temme_exact(k_terms: int, n_terms: int) -> list[list[Fraction]]:
    """c_k(eta)'s coefficients from their definition (DLMF 8.12.8-8.12.9), in rationals."""
    size = n_terms + 2 * k_terms + 2
    inner = [Fraction(2 * (-1) ** n, n + 2) for n in range(size)]  # 2 (mu - log(1+mu)) / mu^2
    root = [Fraction(1)] + [Fraction(0)] * (size - 1)
    for n in range(1, size):
        root[n] = (inner[n] - sum(root[i] * root[n - i] for i in range(1, n))) / 2
    eta_of_mu = [Fraction(0)] + root[:-1]

    def mul(p, q):
        return [sum(p[i] * q[n - i] for i in range(n + 1)) for n in range(size)]

    mu = [Fraction(0), Fraction(1)] + [Fraction(0)] * (size - 2)
    for n in range(2, size):  # revert eta(mu), one order at a time
        power, total = [Fraction(1)] + [Fraction(0)] * (size - 1), [Fraction(0)] * size
        for j in range(1, n + 1):
            power = mul(power, mu)
            total = [u + eta_of_mu[j] * v for u, v in zip(total, power)]
        mu[n] = -total[n]
    ratio, inv = mu[1:], [Fraction(1)] + [Fraction(0)] * (size - 2)
    for n in range(1, size - 1):
        inv[n] = -sum(ratio[i] * inv[n - i] for i in range(1, n + 1))
    c0 = inv[1:]
    cs = [c0]
    for _ in range(1, k_terms):
        prev = cs[-1]
        cs.append([(n + 2) * prev[n + 2] - prev[1] * c0[n] for n in range(len(prev) - 2)])
    return [c[:n_terms] for c in cs]


def test_temme_coefficients_rederived_from_their_definition():
    exact = _temme_exact(4, 8)
    assert exact[0][:3] == [Fraction(-1, 3), Fraction(1, 12), Fraction(-2, 135)]  # DLMF 8.12.10
    for k in range(4):
        np.testing.assert_allclose(_s._TEMME[k][:8], [float(v) for v in exact[k]], rtol=1e-15, atol=0)


def test_gammainc_large_a_against_mpmath_and_scipy():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    rng = np.random.default_rng(3)
    a = np.geomspace(25.0, 1e4, 12).repeat(2)  # (mpmath takes 30 ms a point here)
    x = a + np.sqrt(a) * rng.uniform(-5, 5, a.size)  # the transition, where Temme's is used
    x = np.concatenate([x, a * rng.uniform(0.3, 2.5, a.size)])
    a = np.concatenate([a, a])
    def both(u, v):  # mpmath sums the smaller side's series; the other is 1 - it (30 digits)
        u, v = mp.mpf(u), mp.mpf(v)
        if v < u:
            small = mp.gammainc(u, 0, v, regularized=True)
            return float(small), float(1 - small)
        small = mp.gammainc(u, v, mp.inf, regularized=True)
        return float(1 - small), float(small)

    p, q = np.array([both(u, v) for u, v in zip(a, x)]).T
    got_p = np.asarray(special.gammainc(fnp.asarray(a), fnp.asarray(x)))
    got_q = np.asarray(special.gammaincc(fnp.asarray(a), fnp.asarray(x)))
    # before Temme's expansion and the Stirling prefactor: 1.4e-11 and 1.9e-11 here
    assert _rel(got_p, p) < 1e-12 and _rel(got_q, q) < 2e-12
    # scipy on a wide grid up to a = 1e4, tails included (scipy itself is off by ~6e-12)
    aa, xx = np.meshgrid(np.geomspace(1e-3, 1e4, 30), np.geomspace(1e-4, 3e4, 60), indexing="ij")
    assert _rel(special.gammainc(fnp.asarray(aa), fnp.asarray(xx)), sp.gammainc(aa, xx)) < 3e-11
    assert _rel(special.gammaincc(fnp.asarray(aa), fnp.asarray(xx)), sp.gammaincc(aa, xx)) < 3e-11
    g32 = special.gammainc(fnp.asarray(aa, dtype="float32"), fnp.asarray(xx, dtype="float32"))
    want32 = sp.gammainc(aa.astype(np.float32).astype(float), xx.astype(np.float32).astype(float))
    keep = want32 > 1e-30
    assert np.max(np.abs(np.asarray(g32, dtype=float)[keep] - want32[keep]) / np.spacing(want32[keep].astype(np.float32))) <= 1.0
    check_grads(lambda x_: special.gammainc(400.0, x_), [fnp.array([380.0, 400.0, 430.0])], order=2)


def test_t_cdf_and_sf_match_scipy_with_derivatives():
    x = np.concatenate([-np.geomspace(1e3, 1e-3, 20), [0.0], np.geomspace(1e-3, 1e3, 20)])
    for df in (0.5, 1.0, 3.0, 30.0, 1e4):
        cdf = np.asarray(t.cdf(fnp.asarray(x), df, 0.5, 2.0))
        sf = np.asarray(t.sf(fnp.asarray(x), df, 0.5, 2.0))
        assert _rel(cdf, st.t.cdf(x, df, 0.5, 2.0)) < 1e-11
        assert _rel(sf, st.t.sf(x, df, 0.5, 2.0)) < 1e-11
    grads = fgrad.vmap(fgrad.grad(t.cdf), in_axes=(0, None))(fnp.array([-4.0, 0.0, 0.3, 7.0]), 3.0)
    np.testing.assert_allclose(np.asarray(grads), st.t.pdf([-4.0, 0.0, 0.3, 7.0], 3.0), rtol=1e-13)
    check_grads(lambda x_, loc, scale: t.cdf(x_, 3.0, loc, scale), [fnp.array([-3.0, 0.2, 4.0]), 0.1, 1.5], order=2)
    check_grads(lambda x_: t.sf(x_, 2.5), [fnp.array([-3.0, 0.0, 0.2, 4.0])], order=1)
    with pytest.raises(special.NoDerivativeError):
        fgrad.grad(t.cdf, argnums=1)(1.0, 3.0)
    assert t.cdf(fnp.array([1.0], dtype="float32"), 3.0).dtype == np.float32
    np.testing.assert_allclose(np.asarray(fgrad.jit(t.cdf)(fnp.asarray(x), 4.0)), st.t.cdf(x, 4.0), rtol=1e-11)


def test_beta_cdf_family_matches_scipy_with_derivatives():
    x = np.concatenate([[-0.5, 0.0], np.geomspace(1e-8, 0.5, 10), 1 - np.geomspace(1e-8, 0.5, 10), [1.0, 1.5]])
    for a, b in ((2.0, 3.0), (0.5, 0.7), (30.0, 4.0)):
        for name in ("cdf", "sf", "logcdf", "logsf"):
            got = np.asarray(getattr(beta, name)(fnp.asarray(x), a, b, -0.1, 1.2))
            want = getattr(st.beta, name)(x, a, b, -0.1, 1.2)
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-300, err_msg=f"{name} a={a} b={b}")
    check_grads(lambda x_, loc, scale: beta.cdf(x_, 2.0, 3.5, loc, scale), [fnp.array([0.2, 0.5, 0.9]), 0.05, 1.1], order=2)
    check_grads(lambda x_: beta.logsf(x_, 2.0, 3.5), [fnp.array([0.2, 0.5, 0.9])], order=1)
    with pytest.raises(special.NoDerivativeError):
        fgrad.grad(beta.cdf, argnums=1)(0.3, 2.0, 3.0)
