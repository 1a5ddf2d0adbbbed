"""fgrad.random's distributions against their closed forms and scipy.stats, at fixed keys.

Each sampler draws N values from a fixed key; the sample mean (and variance, where finite)
is compared with the closed form within 5 standard errors, and the whole sample with
scipy's CDF by a Kolmogorov-Smirnov test (a chi-square test for counts) at p > 1e-3.
Keys are fixed, so the tests are deterministic.
"""

import math

import numpy as np
import pytest
import scipy.stats as st

import fgrad.numpy as fnp
from fgrad import random

N = 20_000
P_MIN = 1e-3


def draw(fn, *args, **kwargs):
    return np.asarray(fn(*args, **kwargs))


def check_moments(x, mean, var):
    """Sample mean within 5 standard errors of ``mean``; sample variance within 5 of its
    own (the variance of s^2 is about (m4 - var^2) / N, estimated from the sample)."""
    x = np.asarray(x, dtype=np.float64)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / len(x)), (x.mean(), mean)
    m4 = np.mean((x - x.mean()) ** 4)
    assert abs(x.var() - var) < 5 * math.sqrt(max(m4 - var**2, 1e-300) / len(x)), (x.var(), var)


def check_ks(x, dist):
    assert st.kstest(np.asarray(x, dtype=np.float64), dist.cdf).pvalue > P_MIN


def check_chisquare(x, dist):
    """Chi-square of the counts of each value against ``dist.pmf``; values whose expected
    count is below 5 are pooled into the two tails."""
    x = np.asarray(x)
    lo, hi = int(dist.ppf(1e-9)), int(dist.ppf(1 - 1e-9)) + 1
    values = np.arange(lo, hi + 1)
    expected = dist.pmf(values) * len(x)
    keep = expected >= 5
    inner = values[keep]
    observed = [np.sum(x < inner[0]), *(np.sum(x == v) for v in inner), np.sum(x > inner[-1])]
    exp = [dist.cdf(inner[0] - 1) * len(x), *(dist.pmf(inner) * len(x)), dist.sf(inner[-1]) * len(x)]
    observed, exp = np.array(observed, float), np.array(exp)
    tails = exp >= 1e-3  # drop a tail with no mass (it must then be empty)
    assert observed[~tails].sum() == 0
    assert st.chisquare(observed[tails], exp[tails] * observed.sum() / exp[tails].sum()).pvalue > P_MIN


@pytest.mark.parametrize("a", [0.05, 0.4, 1.0, 4.5, 250.0])
def test_gamma(a):
    x = draw(random.gamma, random.key(1), a, (N,))
    check_moments(x, a, a)  # Gamma(a, 1): mean a, variance a
    check_ks(x, st.gamma(a))


def test_gamma_broadcasts_its_concentration():
    a = np.array([0.5, 2.0, 8.0])
    x = draw(random.gamma, random.key(2), a, (N, 3))
    for j in range(3):
        check_ks(x[:, j], st.gamma(a[j]))


def test_loggamma_keeps_small_concentrations():
    # Gamma(0.002) underflows to 0 in float64 most of the time; its log does not
    lx = draw(random.loggamma, random.key(3), 0.002, (N,))
    assert np.isfinite(lx).all()
    check_ks(lx, st.loggamma(0.002))  # scipy's loggamma(c): the law of log Gamma(c)
    x = draw(random.gamma, random.key(3), 0.002, (N,))
    np.testing.assert_allclose(x, np.exp(lx), rtol=1e-14)  # the same samples


@pytest.mark.parametrize("a,b", [(0.5, 0.5), (2.0, 5.0), (0.01, 0.02), (40.0, 3.0)])
def test_beta(a, b):
    x = draw(random.beta, random.key(4), a, b, (N,))
    assert np.isfinite(x).all() and (x >= 0).all() and (x <= 1).all()
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    check_moments(x, mean, var)
    if min(a, b) > 0.1:  # tiny concentrations put most samples at exactly 0 or 1
        check_ks(x, st.beta(a, b))


def test_dirichlet_marginals_and_covariance():
    alpha = np.array([0.5, 1.0, 3.5])
    s = alpha.sum()
    x = draw(random.dirichlet, random.key(5), fnp.asarray(alpha), (N,))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-14)
    for i in range(3):  # marginals are Beta(alpha_i, s - alpha_i)
        check_ks(x[:, i], st.beta(alpha[i], s - alpha[i]))
    # Cov(x_i, x_j) = -alpha_i alpha_j / (s^2 (s + 1)), i != j
    c01 = np.cov(x[:, 0], x[:, 1])[0, 1]
    assert abs(c01 - (-alpha[0] * alpha[1] / (s**2 * (s + 1)))) < 0.002  # se ~ 2e-4


def test_dirichlet_batch_of_concentrations():
    alpha = np.array([[1.0, 1.0], [10.0, 30.0]])
    x = draw(random.dirichlet, random.key(6), fnp.asarray(alpha), (N, 2))
    assert x.shape == (N, 2, 2)
    check_ks(x[:, 0, 0], st.uniform())
    check_ks(x[:, 1, 0], st.beta(10.0, 30.0))


@pytest.mark.parametrize("lam", [0.0, 0.7, 6.0, 10.0, 80.0, 5000.0])
def test_poisson(lam):
    x = draw(random.poisson, random.key(7), lam, (N,))
    assert x.dtype == np.int64
    if lam == 0:
        assert (x == 0).all()
        return
    check_moments(x, lam, lam)
    check_chisquare(x, st.poisson(lam))


@pytest.mark.parametrize("n,p", [(20, 0.3), (1000, 0.02), (200, 0.6), (60, 0.97), (5, 1.0)])
def test_binomial(n, p):
    x = draw(random.binomial, random.key(8), n, p, (N,))
    assert x.dtype == np.float64 and (x == np.round(x)).all()
    if p == 1.0:
        assert (x == n).all()
        return
    check_moments(x, n * p, n * p * (1 - p))
    check_chisquare(x, st.binom(n, p))


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9])
def test_geometric(p):
    x = draw(random.geometric, random.key(9), p, (N,))
    assert x.dtype == np.int64 and x.min() >= 1
    check_moments(x, 1 / p, (1 - p) / p**2)
    check_chisquare(x, st.geom(p))


@pytest.mark.parametrize(
    "fn,dist,mean,var",
    [
        (random.exponential, st.expon(), 1.0, 1.0),
        (random.laplace, st.laplace(), 0.0, 2.0),
        (random.logistic, st.logistic(), 0.0, math.pi**2 / 3),
        (random.gumbel, st.gumbel_r(), np.euler_gamma, math.pi**2 / 6),
        (random.cauchy, st.cauchy(), None, None),
    ],
    ids=["exponential", "laplace", "logistic", "gumbel", "cauchy"],
)
def test_standard_continuous(fn, dist, mean, var):
    x = draw(fn, random.key(10), (N,))
    if mean is not None:
        check_moments(x, mean, var)
    check_ks(x, dist)
    x32 = draw(fn, random.key(10), (N,), "float32")
    assert x32.dtype == np.float32 and np.isfinite(x32).all()
    check_ks(x32, dist)


@pytest.mark.parametrize("df", [0.7, 3.0, 12.0])
def test_t(df):
    x = draw(random.t, random.key(11), df, (N,))
    if df > 4:
        check_moments(x, 0.0, df / (df - 2))
    check_ks(x, st.t(df))


@pytest.mark.parametrize("p", [0.8, 2.0, 5.0])
def test_generalized_normal(p):
    x = draw(random.generalized_normal, random.key(12), p, (N,))
    check_ks(x, st.gennorm(p))  # scipy's gennorm(beta): density beta/(2 Gamma(1/beta)) e^-|x|^beta


def test_rademacher():
    x = draw(random.rademacher, random.key(13), (N,))
    assert x.dtype == np.int64 and set(np.unique(x)) == {-1, 1}
    check_moments(x, 0.0, 1.0)
    assert draw(random.rademacher, random.key(13), (4,), "float32").dtype == np.float32


@pytest.mark.parametrize("d,p", [(1, 2.0), (3, 2.0), (2, 1.0), (4, 0.7)])
def test_ball_is_uniform(d, p):
    x = draw(random.ball, random.key(14), d, p, (N,))
    assert x.shape == (N, d)
    r = np.sum(np.abs(x) ** p, axis=-1) ** (1 / p)
    assert (r < 1).all()
    check_ks(r**d, st.uniform())  # uniform in the ball: P(r < s) = s^d for every L_p norm
    # and the direction is independent of the radius: the orthant is uniform
    orthant = (x > 0) @ (2 ** np.arange(d))
    counts = np.bincount(orthant, minlength=2**d)
    assert st.chisquare(counts).pvalue > P_MIN


@pytest.mark.parametrize("n,m", [(4, None), (5, 2), (2, 5)])
def test_orthogonal_is_haar(n, m):
    q = draw(random.orthogonal, random.key(15), n, (N // 4,), m=m)
    m = n if m is None else m
    assert q.shape == (N // 4, n, m)
    small = min(n, m)
    gram = q.transpose(0, 2, 1) @ q if n >= m else q @ q.transpose(0, 2, 1)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-12)
    # A column of a Haar matrix is uniform on the sphere S^(rows-1): (q_ij + 1) / 2 is
    # Beta((rows-1)/2, (rows-1)/2). Without the sign fix the diagonal is biased.
    rows = max(n, m)
    half = (rows - 1) / 2
    for i, j in ((0, 0), (n - 1, m - 1), (0, m - 1)):
        check_ks((q[:, i, j] + 1) / 2, st.beta(half, half))
    if n == m:  # det is +1 or -1 with probability 1/2 each
        det = np.linalg.det(q)
        np.testing.assert_allclose(np.abs(det), 1.0, rtol=1e-12)
        assert abs(np.mean(det)) < 5 / math.sqrt(len(det))


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal(method):
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [-0.3, 0.4, 1.2]])
    cov = a @ a.T
    x = draw(random.multivariate_normal, random.key(16), fnp.asarray(mean), fnp.asarray(cov),
             (N,), method=method)
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.mean(0), mean, atol=5 * math.sqrt(cov.diagonal().max() / N))
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.05)  # se of entries ~ 0.015
    # the squared Mahalanobis distance is chi-square with 3 degrees of freedom
    d2 = np.einsum("ni,ij,nj->n", x - mean, np.linalg.inv(cov), x - mean)
    check_ks(d2, st.chi2(3))


@pytest.mark.parametrize("method", ["eigh", "svd"])
def test_multivariate_normal_singular_covariance(method):
    # rank 1: every sample lies on the line mean + t (1, 2), with t ~ N(0, 1)
    v = np.array([1.0, 2.0])
    x = draw(random.multivariate_normal, random.key(17), fnp.zeros(2), fnp.asarray(np.outer(v, v)),
             (N,), method=method)
    np.testing.assert_allclose(x[:, 1], 2 * x[:, 0], atol=1e-7)
    check_ks(x[:, 0], st.norm())


def test_multivariate_normal_batches_mean_and_cov():
    mean = np.zeros((2, 2))
    cov = np.stack([np.eye(2), 4 * np.eye(2)])
    x = draw(random.multivariate_normal, random.key(18), fnp.asarray(mean), fnp.asarray(cov),
             (N, 2))
    assert x.shape == (N, 2, 2)
    check_ks(x[:, 0, 0], st.norm())
    check_ks(x[:, 1, 1], st.norm(scale=2.0))
