"""The Newton-CG example at reduced size: exact Hessian-vector products, and it wins."""

import numpy as np
import pytest

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def hn(load_example):
    return load_example("hvp_newton")


@pytest.fixture(scope="module")
def small_problem(hn):
    x_train, _, y_train, _ = hn.load_data(0)
    return hn.with_bias(x_train[:300]), y_train[:300]


def test_hvp_fwd_rev_equals_rev_rev_and_finite_differences(hn, small_problem):
    import fgrad
    import fgrad.numpy as fnp
    from fgrad import random

    x, y = small_problem
    x, y = fnp.asarray(x), fnp.asarray(y)
    l2 = 1e-2
    f = lambda t, x_, y_: hn.loss(t, x_, y_, l2)
    theta = 0.3 * random.normal(random.key(0), (65, 10), "float64")
    v = random.normal(random.key(1), (65, 10), "float64")
    fwd_rev = np.asarray(hn.hvp_forward_over_reverse(f, theta, v, x, y))
    rev_rev = np.asarray(hn.hvp_reverse_over_reverse(f, theta, v, x, y))
    # Both are exact (Pearlmutter 1994): they agree to rounding.
    np.testing.assert_allclose(fwd_rev, rev_rev, rtol=1e-10, atol=1e-13)
    # And equal the library's hvp.
    (lib,) = fgrad.hvp(lambda t: f(t, x, y), (theta,), (v,))
    np.testing.assert_allclose(fwd_rev, np.asarray(lib), rtol=1e-10, atol=1e-13)
    # Central differences of the gradient: (g(t + eps v) - g(t - eps v)) / (2 eps) = H v + O(eps^2).
    eps = 1e-5
    g = fgrad.grad(f)
    fd = (np.asarray(g(theta + eps * v, x, y)) - np.asarray(g(theta - eps * v, x, y))) / (2 * eps)
    np.testing.assert_allclose(fwd_rev, fd, rtol=1e-6, atol=1e-8)
    # The L2 term alone contributes l2 * v: H - l2 I is the (PSD) data Hessian.
    v_np = np.asarray(v)
    assert float(np.sum(v_np * (fwd_rev - l2 * v_np))) >= 0.0


def test_jitted_hvp_matches_eager(hn, small_problem):
    import fgrad.numpy as fnp
    from fgrad import random

    x, y = small_problem
    theta = 0.1 * random.normal(random.key(2), (65, 10), "float64")
    v = random.normal(random.key(3), (65, 10), "float64")
    for mode in ("fwd-rev", "rev-rev"):
        problem = hn.Problem(x, y, 1e-3, mode)
        counter = hn.Counter()
        jitted = np.asarray(problem.hvp(theta, v, counter))
        f = lambda t, x_, y_: hn.loss(t, x_, y_, 1e-3)
        eager = np.asarray(hn.hvp_forward_over_reverse(f, theta, v, fnp.asarray(x), fnp.asarray(y)))
        np.testing.assert_allclose(jitted, eager, rtol=1e-10, atol=1e-13)
        assert counter.hvp == 1
    assert hn.check_hvp(problem, theta, v) < 1e-12


def test_conjugate_gradient_solves_spd_system(hn):
    import fgrad.numpy as fnp

    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 6))
    h = a @ a.T + 6 * np.eye(6)  # symmetric positive definite
    g = rng.normal(size=6)
    p, n_iters = hn.conjugate_gradient(
        lambda v: fnp.matmul(fnp.asarray(h), v), fnp.asarray(g), max_iters=20, tol=1e-12
    )
    # In exact arithmetic CG terminates in at most n = 6 steps (N&W Theorem 5.1).
    assert n_iters <= 8
    np.testing.assert_allclose(np.asarray(p), np.linalg.solve(h, -g), rtol=1e-8, atol=1e-10)
    # Negative curvature on the first direction: fall back to steepest descent.
    p, n_iters = hn.conjugate_gradient(lambda v: -v, fnp.asarray(g), max_iters=5, tol=1e-12)
    assert n_iters == 1
    np.testing.assert_allclose(np.asarray(p), -g)


def test_newton_cg_beats_gradient_descent(hn):
    result = hn.main(["--newton-iters", "6", "--cg-iters", "10", "--gd-iters", "60"])
    newton, gd = result["newton_cg"], result["gradient_descent"]
    assert result["hvp_max_diff"] < 1e-12
    assert len(newton.loss) == 7 and len(gd.loss) == 61
    # Both descend monotonically (Armijo line search; GD with step 1/L).
    assert all(b <= a + 1e-12 for a, b in zip(newton.loss, newton.loss[1:]))
    assert all(b <= a + 1e-12 for a, b in zip(gd.loss, gd.loss[1:]))
    # Far fewer iterations, far lower loss: 6 Newton steps beat 60 gradient steps.
    assert newton.loss[-1] < gd.loss[-1] - 0.3
    assert newton.test_accuracy[-1] >= 0.9
    assert newton.counter.hvp > 0 and gd.counter.hvp == 0
    assert gd.counter.grad == 61
