"""Regression tests for the problems a new user reported (issue 17): each fails on the code
before its fix."""

import numpy as np
import pytest
import scipy.stats as ss
from scipy.special import gammaln

import fgrad
import fgrad.numpy as fnp
from fgrad import random
from fgrad.errors import ShapeError
from fgrad.scipy import stats

# ---------------------------------------------------------------- 1. p of generalized_normal, ball


def _second_moment(p):
    """E[x^2] = Gamma(3/p) / Gamma(1/p) for the density proportional to exp(-|x|^p)."""
    return np.exp(gammaln(3 / p) - gammaln(1 / p))


def _ball_second_moment(p, d):
    """E[|x|_2^2] for x uniform in the unit L_p ball of R^d."""
    return d * np.exp(gammaln(3 / p) + gammaln(1 + d / p) - gammaln(1 / p) - gammaln(1 + (d + 2) / p))


def _fd(f, p, h=1e-5):
    return (f(p + h) - f(p - h)) / (2 * h)


def _gn_moment(p, n=100000):
    return fnp.mean(random.generalized_normal(random.key(0), p, (n,)) ** 2)


def _gn_small(p):
    return _gn_moment(p, 5000)


def test_generalized_normal_gradient_compositions_agree():
    want = float(fgrad.grad(_gn_moment)(2.5))
    assert abs(want - _fd(_second_moment, 2.5)) < 0.004
    small = float(fgrad.grad(_gn_small)(2.5))
    assert float(fgrad.jit(fgrad.grad(_gn_small))(2.5)) == pytest.approx(small, rel=1e-10)
    assert float(fgrad.grad(fgrad.jit(_gn_small))(2.5)) == pytest.approx(small, rel=1e-10)
    batched = np.asarray(fgrad.vmap(fgrad.grad(_gn_small))(fnp.array([1.5, 2.5])))
    np.testing.assert_allclose(batched[1], small, rtol=1e-10)
    assert abs(batched[0] - _fd(_second_moment, 1.5)) < 0.1  # -0.849, from 5000 samples
    # jit with a traced p draws the same numbers as eagerly
    x = random.generalized_normal(random.key(3), 1.7, (5,))
    np.testing.assert_allclose(
        np.asarray(fgrad.jit(lambda p: random.generalized_normal(random.key(3), p, (5,)))(1.7)),
        np.asarray(x), rtol=1e-12)


def test_generalized_normal_p_checks():
    with pytest.raises(ValueError, match="p > 0"):
        random.generalized_normal(random.key(0), -1.0, (3,))
    with pytest.raises(ShapeError):
        random.generalized_normal(random.key(0), fnp.array([1.0, 2.0]), (3,))
    # an array p that broadcasts to shape draws per element
    x = random.generalized_normal(random.key(0), fnp.array([1.0, 2.0, 3.0]), (3,))
    assert x.shape == (3,)


def test_ball_gradient_in_p():
    def f(p):
        return fnp.mean(fnp.sum(random.ball(random.key(1), 3, p, (30000,)) ** 2, axis=-1))

    want = _fd(lambda p: _ball_second_moment(p, 3), 2.0)  # 0.2
    got = float(fgrad.grad(f)(2.0))
    assert abs(got - want) < 0.01, (got, want)
    assert float(fgrad.jit(fgrad.grad(f))(2.0)) == pytest.approx(got, rel=1e-10)
    assert abs(float(fgrad.jit(f)(3.0)) - _ball_second_moment(3.0, 3)) < 0.005
    with pytest.raises(ShapeError, match="scalar"):
        random.ball(random.key(0), 2, fnp.array([2.0, 3.0]))


# ---------------------------------------------------------------- 2. dirichlet: components on axis 0


def test_dirichlet_components_along_the_first_axis():
    alpha = np.array([0.7, 2.0, 3.5])
    pts = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]]).T  # square (k, k)
    got = stats.dirichlet.logpdf(fnp.asarray(pts), fnp.asarray(alpha))
    np.testing.assert_allclose(np.asarray(got), ss.dirichlet.logpdf(pts, alpha), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(stats.dirichlet.pdf(fnp.asarray(pts), fnp.asarray(alpha))),
                               ss.dirichlet.pdf(pts, alpha), rtol=1e-13)
    # k - 1 components: the last is 1 - sum (scipy and JAX)
    np.testing.assert_allclose(np.asarray(stats.dirichlet.logpdf(fnp.asarray(pts[:2]), fnp.asarray(alpha))),
                               ss.dirichlet.logpdf(pts[:2], alpha), rtol=1e-12)
    x3 = np.full((3, 2, 4), 1 / 3)  # (k, ...) batches
    assert stats.dirichlet.logpdf(fnp.asarray(x3), fnp.asarray(alpha)).shape == (2, 4)
    with pytest.raises(ShapeError, match="1-D"):
        stats.dirichlet.logpdf(fnp.asarray(pts), fnp.ones((3, 3)))
    with pytest.raises(ShapeError, match="first axis"):
        stats.dirichlet.logpdf(fnp.ones((5, 2)) / 5, fnp.asarray(alpha))
    f = lambda a: fnp.sum(stats.dirichlet.logpdf(fnp.asarray(pts), a))
    fgrad.test_util.check_grads(f, (fnp.asarray(alpha),), order=1)
    np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(f))(fnp.asarray(alpha))),
                               np.asarray(fgrad.grad(f)(fnp.asarray(alpha))), rtol=1e-12)


# ---------------------------------------------------------------- 3. singular covariances


def test_cho_factor_and_logpdf_raise_linalgerror_and_say_so():
    from fgrad.scipy import linalg
    bad = fnp.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError):
        linalg.cho_factor(bad)
    with pytest.raises(np.linalg.LinAlgError):
        fgrad.jit(lambda a: linalg.cho_factor(a)[0])(bad)
    assert "LinAlgError" in linalg.cho_factor.__doc__ and "Not positive definite: NaN" not in linalg.cho_factor.__doc__
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular=True"):
        stats.multivariate_normal.logpdf(fnp.zeros(2), fnp.zeros(2), fnp.ones((2, 2)))


def test_multivariate_normal_allow_singular_against_scipy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2))
    cov, mean = a @ a.T, rng.standard_normal(3)  # rank 2
    on = (mean[:, None] + a @ rng.standard_normal((2, 4))).T
    x = np.vstack([on, rng.standard_normal((2, 3))])  # 4 points on the support, 2 off it
    want = ss.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    assert np.isinf(want[4:]).all()
    f = lambda x, m, c: stats.multivariate_normal.logpdf(x, m, c, allow_singular=True)
    args = (fnp.asarray(x), fnp.asarray(mean), fnp.asarray(cov))
    np.testing.assert_allclose(np.asarray(f(*args)), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(fgrad.jit(f)(*args)), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.pdf(*args, allow_singular=True)),
                               ss.multivariate_normal.pdf(x, mean, cov, allow_singular=True), rtol=1e-10)
    # positive definite: the eigh path equals the Cholesky one; and scipy's
    b = rng.standard_normal((3, 3))
    pd = fnp.asarray(b @ b.T + np.eye(3))
    np.testing.assert_allclose(np.asarray(f(args[0], args[1], pd)),
                               np.asarray(stats.multivariate_normal.logpdf(args[0], args[1], pd)), rtol=1e-12)
    # derivative in the mean, along the support, by central differences of scipy's density
    g = np.asarray(fgrad.grad(lambda m: fnp.sum(f(args[0][:4], m, args[2])))(args[1]))
    h = 1e-6 * a[:, 0]  # a direction inside the span of cov
    fd = (ss.multivariate_normal.logpdf(on, mean + h, cov, allow_singular=True).sum()
          - ss.multivariate_normal.logpdf(on, mean - h, cov, allow_singular=True).sum()) / 2e-6
    np.testing.assert_allclose(g @ a[:, 0], fd, rtol=1e-5)
    with pytest.raises(ValueError, match="semi-definite"):
        f(fnp.zeros(2), fnp.zeros(2), fnp.array([[1.0, 2.0], [2.0, 1.0]]))


# ---------------------------------------------------------------- 4. minimize and closed-over values


def test_minimize_refuses_a_differentiated_closure_in_every_mode():
    from fgrad.scipy.optimize import minimize
    f = lambda c: minimize(lambda x: fnp.sum((x - c) ** 2), fnp.zeros(2)).x[0]
    for g in (fgrad.grad(f), fgrad.jit(fgrad.grad(f))):
        with pytest.raises(TypeError, match="minimize: .*pass the value in args"):
            g(1.0)
    with pytest.raises(TypeError, match="custom_vjp minimize"):
        fgrad.grad(fgrad.jit(f))(1.0)  # jit hides the value: the rule refuses it
    np.testing.assert_allclose(float(f(1.0)), 1.0, atol=1e-8)  # undifferentiated, fine
    np.testing.assert_allclose(float(fgrad.jit(f)(1.0)), 1.0, atol=1e-8)
    # the same through args: implicit differentiation, d x*_0 / dc = 1
    h = lambda c: minimize(lambda x, c: fnp.sum((x - c) ** 2 * fnp.array([1.0, 3.0])), fnp.zeros(2), (c,)).x[0]
    for g in (fgrad.grad(h), fgrad.jit(fgrad.grad(h)), fgrad.grad(fgrad.jit(h))):
        np.testing.assert_allclose(float(g(1.0)), 1.0, rtol=1e-8)
    # without args, x0 gets a zero derivative (the loop is not unrolled)
    z = fgrad.grad(lambda x0: minimize(lambda x: fnp.sum((x - 2.0) ** 2), x0).x[0])(fnp.zeros(2))
    np.testing.assert_array_equal(np.asarray(z), [0.0, 0.0])
    from fgrad.scipy import optimize
    assert "* w" not in optimize.minimize.__doc__


# ---------------------------------------------------------------- 5. optim: prefix masks and labels


def _nested():
    return {"conv": {"w": fnp.ones((2, 2)), "b": fnp.ones(2)}, "rnn": {"w": fnp.ones(3), "u": (fnp.ones(1), fnp.ones(1))}}


def test_multi_transform_and_masked_take_prefix_labels():
    from fgrad import optim
    params = _nested()
    grads = fgrad.tree.map(lambda x: 2.0 * fnp.ones_like(x), params)
    opt = optim.multi_transform({"frozen": optim.set_to_zero(), "adam": optim.adam(0.1)},
                                {"conv": "frozen", "rnn": "adam"})
    state = opt.init(params)
    step = fgrad.jit(lambda g, s, p: opt.update(g, s, p))
    for update in (opt.update, step):
        updates, _ = update(grads, state, params)
        for leaf in fgrad.tree.leaves(updates["conv"]):
            np.testing.assert_array_equal(np.asarray(leaf), 0.0)
        for leaf in fgrad.tree.leaves(updates["rnn"]):
            np.testing.assert_allclose(np.asarray(leaf), -0.1, rtol=1e-6)  # adam's first step
    # a prefix gives the same result as the full per-leaf labels
    full = fgrad.tree.map(lambda _: "adam", params)
    full["conv"] = fgrad.tree.map(lambda _: "frozen", params["conv"])
    opt_full = optim.multi_transform({"frozen": optim.set_to_zero(), "adam": optim.adam(0.1)}, full)
    u_full, _ = opt_full.update(grads, opt_full.init(params), params)
    for a, b in zip(fgrad.tree.leaves(u_full), fgrad.tree.leaves(opt.update(grads, state, params)[0])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # masked: a bool at an inner node
    m = optim.masked(optim.scale(-1.0), {"conv": False, "rnn": {"w": True, "u": False}})
    u, _ = m.update(grads, m.init(params))
    assert float(u["conv"]["w"][0, 0]) == 2.0 and float(u["rnn"]["w"][0]) == -2.0
    assert float(u["rnn"]["u"][1][0]) == 2.0
    # neither the structure nor a prefix: named errors
    for bad in ({"cnov": False, "rnn": True}, {"conv": False}, {"conv": {"w": {"x": True}, "b": True}, "rnn": True}):
        with pytest.raises(ValueError, match="nor a prefix"):
            optim.masked(optim.scale(-1.0), bad).init(params)


def test_set_to_zero_and_identity():
    from fgrad import optim
    g = {"a": fnp.array([1.0, -2.0], dtype="float32"), "b": (fnp.array(3.0),)}
    z, s = optim.set_to_zero().update(g, optim.set_to_zero().init(g))
    assert z["a"].dtype == np.float32 and s == optim.EmptyState()
    np.testing.assert_array_equal(np.asarray(z["a"]), [0.0, 0.0])
    i, _ = optim.identity().update(g, optim.identity().init(g))
    assert i["a"] is g["a"] and i["b"][0] is g["b"][0]
    assert {"set_to_zero", "identity"} <= set(dir(optim)) and {"set_to_zero", "identity"} <= set(optim.__all__)


# ---------------------------------------------------------------- 6, 7. test_util's names; debug.print specs


def test_test_util_lists_only_public_names():
    from fgrad import test_util
    assert dir(test_util) == sorted(test_util.__all__) == ["check_grads", "op_args", "op_cases"]
    for name in test_util.__all__:
        assert callable(getattr(test_util, name))


def test_debug_print_format_spec_on_a_non_scalar_array(capsys):
    x = fnp.array([1.0, 2.0])
    with pytest.raises(TypeError) as python_error:
        "{:.2f}".format(np.asarray(x))  # the type Python's format raises
    for call in (lambda: fgrad.debug.print("{:.2f}", x),
                 lambda: fgrad.jit(lambda v: fgrad.debug.print("v = {v:.2f}", v=v))(x),
                 lambda: fgrad.debug.print("{} {:>6}", 1.0, x)):
        with pytest.raises(type(python_error.value), match=r"shape \(2,\).*non-scalar array cannot take a format spec"):
            call()
    capsys.readouterr()
    # scalars (0-d arrays, each example under vmap, Python numbers) take it; {} and !r do too
    fgrad.debug.print("{:.2f} {x:.1f}", fnp.array(1.0), x=2.0)
    fgrad.vmap(lambda v: fgrad.debug.print("{:.3f}", v))(x)
    fgrad.debug.print("{} {!r:>3}", x, x)
    assert capsys.readouterr().out.splitlines() == ["1.00 2.0", "1.000", "2.000", "[1. 2.] array([1., 2.])"]
