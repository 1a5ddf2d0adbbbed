"""Reparameterisation gradients of fgrad.random's samplers.

gamma's derivative in its concentration is the implicit one, dx/da = -(dF/da) / pdf at the
sample (Figurnov et al. 2018): checked against central differences in ``a`` of scipy's
inverse CDF ``gammaincinv(a, u)`` at the sample's own ``u = gammainc(a, x)``. beta,
dirichlet and t are built from gammas: their derivatives are checked against the chain
rule over those same scipy derivatives, and their means' derivatives against the closed
forms (the estimators are unbiased).
"""

import math

import numpy as np
import pytest
import scipy.special as sc

import fgrad
import fgrad.numpy as fnp
from fgrad import random
from fgrad.ops.random import random_gamma_grad
from fgrad.test_util import check_grads


def implicit_dx_da(a, x):
    """dx/da of x = gammaincinv(a, u) at fixed u, by central differences in float64."""
    u = sc.gammainc(a, x)
    h = 1e-6 * a
    return (sc.gammaincinv(a + h, u) - sc.gammaincinv(a - h, u)) / (2 * h)


@pytest.mark.parametrize("a", [0.03, 0.3, 1.0, 2.5, 40.0, 3000.0])
def test_gamma_gradient_is_the_implicit_one(a):
    key = random.key(0)
    x = np.asarray(random.gamma(key, a, (40,)))
    # the per-sample derivatives: the Jacobian of the samples in a (one column)
    ct = fgrad.jacfwd(lambda a_: random.gamma(key, a_, (40,)))(a)
    keep = x > 1e-300  # central differences of gammaincinv fail where x underflows
    np.testing.assert_allclose(np.asarray(ct)[keep], implicit_dx_da(a, x[keep]), rtol=1e-6)
    # reverse mode agrees with forward mode
    w = np.linspace(-1.0, 1.0, 40)
    rev = fgrad.grad(lambda a_: fnp.sum(random.gamma(key, a_, (40,)) * w))(a)
    np.testing.assert_allclose(float(rev), float(np.sum(np.asarray(ct) * w)), rtol=1e-12)


def test_gamma_gradient_kernel_over_the_whole_range():
    # the series side (x < a + 1) and the continued fraction (x >= a + 1), deep tails
    for a in (0.01, 0.5, 7.0, 500.0):
        x = sc.gammaincinv(a, np.array([1e-8, 1e-3, 0.2, 0.5, 0.8, 0.999, 1 - 1e-9]))
        x = x[x > 1e-300]  # Gamma(0.01)'s lower quantiles underflow
        got = np.asarray(random_gamma_grad(a, x, log_space=False))
        np.testing.assert_allclose(got, implicit_dx_da(a, x), rtol=1e-6)
        got_log = np.asarray(random_gamma_grad(a, np.log(x), log_space=True))
        np.testing.assert_allclose(got_log, implicit_dx_da(a, x) / x, rtol=1e-6)


def test_gamma_gradient_of_the_mean_is_unbiased():
    # d E[x] / da = 1 for Gamma(a, 1); d E[x^2] / da = 2a + 1
    keys = random.split(random.key(1), 2)
    n = 20_000
    g1 = fgrad.grad(lambda a: fnp.mean(random.gamma(keys[0], a, (n,))))(2.0)
    g2 = fgrad.grad(lambda a: fnp.mean(random.gamma(keys[1], a, (n,)) ** 2))(2.0)
    # per-sample dx/da has standard deviation about 0.5 (2 for x^2) at a = 2
    assert abs(float(g1) - 1.0) < 5 * 0.6 / math.sqrt(n)
    assert abs(float(g2) - 5.0) < 5 * 3.0 / math.sqrt(n)


def test_loggamma_gradient():
    key = random.key(2)
    a = 0.05
    lx = np.asarray(random.loggamma(key, a, (30,)))
    ct = np.asarray(fgrad.jacfwd(lambda a_: random.loggamma(key, a_, (30,)))(a))
    x = np.exp(lx)
    keep = x > 1e-300
    np.testing.assert_allclose(ct[keep], implicit_dx_da(a, x[keep]) / x[keep], rtol=1e-6)


def test_beta_gradient_is_the_chain_rule_through_two_gammas():
    key = random.key(3)
    a, b = 1.7, 0.6
    x = np.asarray(random.beta(key, a, b, (25,)))
    da, db = fgrad.jacfwd(lambda a_, b_: random.beta(key, a_, b_, (25,)), argnums=(0, 1))(a, b)
    ka, kb = random.split(key)
    g = np.exp(np.asarray(random.loggamma(ka, a, (25,))))
    h = np.exp(np.asarray(random.loggamma(kb, b, (25,))))
    np.testing.assert_allclose(x, g / (g + h), rtol=1e-13)  # the beta sample's construction
    # d/da g/(g+h) = h/(g+h)^2 dg/da; d/db = -g/(g+h)^2 dh/db
    np.testing.assert_allclose(np.asarray(da), h / (g + h) ** 2 * implicit_dx_da(a, g), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(db), -g / (g + h) ** 2 * implicit_dx_da(b, h), rtol=1e-6)


def test_beta_mean_gradient_is_unbiased():
    # E[x] = a / (a + b): d/da = b / (a + b)^2, d/db = -a / (a + b)^2
    a, b, n = 2.0, 3.0, 20_000
    ga, gb = fgrad.grad(lambda a_, b_: fnp.mean(random.beta(random.key(4), a_, b_, (n,))),
                        argnums=(0, 1))(a, b)
    assert abs(float(ga) - b / (a + b) ** 2) < 0.004  # per-sample sd ~ 0.1
    assert abs(float(gb) + a / (a + b) ** 2) < 0.004


def test_dirichlet_mean_jacobian_is_unbiased():
    # E[x_i] = alpha_i / s: d E[x_i] / d alpha_j = (delta_ij s - alpha_i) / s^2
    alpha = np.array([0.8, 2.0, 3.2])
    s = alpha.sum()
    n = 20_000
    jac = fgrad.jacrev(lambda al: fnp.mean(random.dirichlet(random.key(5), al, (n,)), axis=0))(
        fnp.asarray(alpha)
    )
    want = (np.eye(3) * s - alpha[:, None]) / s**2
    np.testing.assert_allclose(np.asarray(jac), want, atol=0.004)  # per-sample sd < 0.15


def test_dirichlet_gradient_is_the_chain_rule_through_gammas():
    key = random.key(6)
    alpha = fnp.array([0.4, 1.5])
    jac = np.asarray(fgrad.jacfwd(lambda al: random.dirichlet(key, al, (5,)))(alpha))  # (5, 2, 2)
    g = np.exp(np.asarray(random.loggamma(key, alpha, (5, 2))))
    dg = implicit_dx_da(np.asarray(alpha), g)  # dg_j / dalpha_j
    s = g.sum(-1, keepdims=True)
    # x_i = g_i / s: dx_i/dalpha_j = (delta_ij / s - g_i / s^2) dg_j/dalpha_j
    want = (np.eye(2)[None] / s[..., None] - g[..., :, None] / s[..., None] ** 2) * dg[:, None, :]
    np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-12)


def test_t_gradient_in_df():
    key = random.key(7)
    df = 5.0
    got = np.asarray(fgrad.jacfwd(lambda d: random.t(key, d, (20,)))(df))
    kn, kg = random.split(key)
    z = np.asarray(random.normal(kn, (20,)))
    g = np.asarray(random.gamma(kg, df / 2, (20,)))
    # t = z sqrt(h / g(h)), h = df / 2: dt/ddf = z / 2 * d/dh sqrt(h / g)
    dg = implicit_dx_da(df / 2, g)
    want = z * 0.5 * 0.5 / np.sqrt(df / 2 / g) * (1 / g - (df / 2) * dg / g**2)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_multivariate_normal_gradients_in_mean_and_cov():
    key = random.key(8)

    def f(mean, a):
        cov = a @ a.T + fnp.eye(3)  # symmetric positive definite for every direction
        return random.multivariate_normal(key, mean, cov, (4,), method="cholesky")

    m0 = fnp.array([0.5, -1.0, 2.0])
    a0 = fnp.array([[1.0, 0.2, 0.0], [0.3, 0.7, 0.1], [0.0, -0.4, 0.9]])
    check_grads(f, (m0, a0), order=1, modes=("rev", "fwd"))
    for method in ("eigh", "svd"):  # distinct eigenvalues: the factors are smooth
        g = lambda mean, a: random.multivariate_normal(  # noqa: E731
            key, mean, a @ a.T + fnp.diag(fnp.array([1.0, 2.0, 3.0])), (4,), method=method
        )
        check_grads(g, (m0, a0), order=1, modes=("rev",))


def test_standard_samplers_reparameterise_location_and_scale():
    key = random.key(9)
    for fn in (random.exponential, random.laplace, random.logistic, random.gumbel):
        f = lambda loc, scale: loc + scale * fn(key, (5,))  # noqa: E731
        check_grads(f, (fnp.array(0.3), fnp.array(1.7)), order=2, modes=("rev", "fwd"))


def test_count_samplers_have_no_derivative():
    # integer counts: the derivative of a function of them in the rate is 0, as in JAX
    g = fgrad.grad(lambda lam: fnp.sum(random.poisson(random.key(0), lam, (5,)) * lam))(3.0)
    assert float(g) == float(np.sum(np.asarray(random.poisson(random.key(0), 3.0, (5,)))))
    g = fgrad.grad(lambda p: fnp.sum(random.binomial(random.key(0), 10, p, (5,))))(0.3)
    assert float(g) == 0.0
    g = fgrad.grad(lambda p: fnp.sum(fnp.astype(random.geometric(random.key(0), p, (5,)), float)))(0.3)
    assert float(g) == 0.0


def test_second_derivatives_of_gamma_are_refused():
    f = lambda a: fnp.sum(random.gamma(random.key(0), a, (3,)))  # noqa: E731
    with pytest.raises(TypeError, match="second derivatives"):
        fgrad.grad(fgrad.grad(f))(2.0)
