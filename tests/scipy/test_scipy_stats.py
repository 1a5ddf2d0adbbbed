"""fgrad.scipy.stats against scipy.stats on sample points (support edges included), and
derivatives in the parameters against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy import stats
from fgrad.test_util import check_grads

ss = pytest.importorskip("scipy.stats")

X = np.array([-3.0, -0.5, 0.0, 0.3, 0.7, 1.0, 2.5, 40.0])
Q = np.array([0.0, 1e-10, 0.1, 0.5, 0.9, 1.0])
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 7.0, 2.5])

# (our module, scipy distribution, parameters as scipy takes them)
CONTINUOUS = [
    (stats.norm, ss.norm, (0.3, 1.7), ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")),
    (stats.t, ss.t, (3.5, 0.2, 1.3), ("logpdf", "pdf")),
    (stats.gamma, ss.gamma, (2.5, -0.5, 1.5), ("logpdf", "pdf", "cdf", "sf")),
    (stats.beta, ss.beta, (2.0, 3.5, -1.0, 3.0), ("logpdf", "pdf")),
    (stats.expon, ss.expon, (-0.2, 2.0), ("logpdf", "pdf", "cdf", "sf", "ppf")),
    (stats.laplace, ss.laplace, (0.4, 1.5), ("logpdf", "pdf", "cdf", "ppf")),
    (stats.logistic, ss.logistic, (0.4, 1.5), ("logpdf", "pdf", "cdf", "sf", "ppf")),
    (stats.cauchy, ss.cauchy, (0.4, 1.5), ("logpdf", "pdf", "cdf", "ppf")),
    (stats.uniform, ss.uniform, (-0.5, 2.0), ("logpdf", "pdf", "cdf", "ppf")),
]
DISCRETE = [
    (stats.poisson, ss.poisson, (2.5,), ("logpmf", "pmf", "cdf")),
    (stats.bernoulli, ss.bernoulli, (0.3,), ("logpmf", "pmf", "cdf")),
    (stats.binom, ss.binom, (6, 0.3), ("logpmf", "pmf")),
]


@pytest.mark.parametrize("ours, ref, params, names", CONTINUOUS + DISCRETE, ids=lambda v: getattr(v, "__name__", ""))
def test_against_scipy(ours, ref, params, names):
    discrete = ours in (stats.poisson, stats.bernoulli, stats.binom)
    for name in names:
        pts = Q if name == "ppf" else (K if discrete else X)
        got = np.asarray(getattr(ours, name)(fnp.asarray(pts), *params))
        with np.errstate(all="ignore"):
            want = getattr(ref, name)(pts, *params)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, err_msg=f"{ours.__name__}.{name}")


def test_multivariate_normal_dirichlet_categorical():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    mean = rng.standard_normal(3)
    x = rng.standard_normal((4, 3))
    got = stats.multivariate_normal.logpdf(fnp.asarray(x), fnp.asarray(mean), fnp.asarray(cov))
    np.testing.assert_allclose(np.asarray(got), ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.pdf(fnp.asarray(x[0]), fnp.asarray(mean), fnp.asarray(cov))),
                               ss.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-13)
    alpha = np.array([0.7, 2.0, 3.5])
    pts = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    got = stats.dirichlet.logpdf(fnp.asarray(pts.T), fnp.asarray(alpha))  # (k, N), as scipy
    np.testing.assert_allclose(np.asarray(got), ss.dirichlet.logpdf(pts.T, alpha), rtol=1e-13)
    assert float(stats.dirichlet.logpdf(fnp.array([0.5, 0.6, -0.1]), fnp.asarray(alpha))) == -np.inf
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    got = stats.categorical.logpmf(fnp.array([2, 0]), fnp.asarray(p))
    np.testing.assert_allclose(np.asarray(got), np.log([0.5, 0.6]), rtol=1e-15)
    assert float(stats.categorical.logpmf(fnp.array(3), fnp.asarray(p[0]))) == -np.inf


GRADS = [
    (lambda m, s: stats.norm.logpdf(fnp.array([0.1, 2.0]), m, s), (0.3, 1.4)),
    (lambda m, s: stats.norm.logcdf(fnp.array([-5.0, 2.0]), m, s), (0.3, 1.4)),
    (lambda d, s: stats.t.logpdf(fnp.array([0.1, 2.0]), d, 0.2, s), (3.5, 1.4)),
    (lambda a, s: stats.gamma.logpdf(fnp.array([0.5, 2.0]), a, 0.0, s), (2.5, 1.4)),
    (lambda s: stats.gamma.cdf(fnp.array([0.5, 2.0]), 2.5, 0.0, s), (1.4,)),
    (lambda a, b: stats.beta.logpdf(fnp.array([0.3, 0.6]), a, b), (2.0, 3.5)),
    (lambda alpha: stats.dirichlet.logpdf(fnp.array([0.2, 0.3, 0.5]), alpha), (np.array([0.7, 2.0, 3.5]),)),
    (lambda mu: stats.poisson.logpmf(fnp.array([0.0, 3.0]), mu), (2.5,)),
    (lambda p: stats.binom.logpmf(fnp.array([0.0, 3.0]), 6, p), (0.3,)),
    (lambda p: stats.bernoulli.logpmf(fnp.array([0.0, 1.0]), p), (0.3,)),
    (lambda s: stats.logistic.logpdf(fnp.array([0.1, 2.0]), 0.4, s), (1.5,)),
    (lambda s: stats.cauchy.logpdf(fnp.array([0.1, 2.0]), 0.4, s), (1.5,)),
    (lambda s: stats.laplace.logpdf(fnp.array([0.1, 2.0]), 0.4, s), (1.5,)),
    (lambda s: stats.expon.logpdf(fnp.array([0.1, 2.0]), 0.0, s), (1.5,)),
    (lambda p: stats.categorical.logpmf(fnp.array([0, 2]), p), (np.array([0.2, 0.3, 0.5]),)),
    (lambda m, c: stats.multivariate_normal.logpdf(fnp.array([0.5, -1.0]), m, (c + fnp.swapaxes(c, 0, 1)) / 2),
     (np.array([0.1, 0.2]), np.array([[2.0, 0.5], [0.5, 1.0]]))),
]


@pytest.mark.parametrize("k", range(len(GRADS)))
def test_parameter_derivatives_against_finite_differences(k):
    fn, params = GRADS[k]
    check_grads(fn, [fnp.asarray(p) for p in params], order=2, modes=("rev", "fwd"))


def test_outside_the_support_gradient_is_finite_and_jit_agrees():
    g = fgrad.grad(lambda a: fnp.sum(stats.gamma.pdf(fnp.array([-1.0, 1.0]), a)))(2.0)
    assert np.isfinite(float(g))
    f = lambda x: stats.beta.logpdf(x, 2.0, 3.0)
    x = fnp.array([-0.5, 0.25, 0.5])
    np.testing.assert_array_equal(np.asarray(fgrad.jit(f)(x)), np.asarray(f(x)))
    np.testing.assert_array_equal(np.asarray(fgrad.vmap(f)(x)), np.asarray(f(x)))


def test_bad_input_names_the_function():
    with pytest.raises(TypeError, match="logpdf"):
        stats.norm.logpdf("abc")
    with pytest.raises(ValueError, match="logpdf: x"):
        stats.multivariate_normal.logpdf(fnp.ones(3), fnp.zeros(2), fnp.eye(2))
    with pytest.raises(TypeError, match="logpmf: k must be an integer"):
        stats.categorical.logpmf(fnp.array([0.5]), fnp.array([0.5, 0.5]))
