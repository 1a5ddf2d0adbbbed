"""fgrad.scipy.optimize.minimize against scipy.optimize.minimize (same minima, comparable
iteration counts), under jit and vmap, over pytrees, and its implicit derivative in
``args`` against finite differences of re-solving."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import DTypeError, ShapeError
from fgrad.scipy import optimize
from fgrad.scipy.optimize import minimize

so = pytest.importorskip("scipy.optimize")


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def beale(x):
    a, b = x[0], x[1]
    return (1.5 - a + a * b) ** 2 + (2.25 - a + a * b**2) ** 2 + (2.625 - a + a * b**3) ** 2


def himmelblau(x):
    return (x[0] ** 2 + x[1] - 11) ** 2 + (x[0] + x[1] ** 2 - 7) ** 2


_H = np.diag([1.0, 10.0, 100.0, 1000.0])  # an ill-conditioned quadratic, minimum at 1


def quadratic(x):
    d = x - 1.0
    return 0.5 * d @ fnp.asarray(_H) @ d


def _np(f):
    """The same objective on numpy arrays, with its gradient (via fgrad) for scipy."""
    value_and_grad = fgrad.value_and_grad(f)

    def fun(x):
        v, g = value_and_grad(fnp.asarray(x))
        return float(v), np.asarray(g)

    return fun


PROBLEMS = [
    ("rosen2", rosen, [-1.2, 1.0]),
    ("rosen5", rosen, [0.0] * 5),
    ("beale", beale, [1.0, 1.0]),
    ("himmelblau", himmelblau, [0.0, 0.0]),
    ("quadratic", quadratic, [0.0, 0.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("method,scipy_method", [("BFGS", "BFGS"), ("L-BFGS", "L-BFGS-B")])
@pytest.mark.parametrize("name,f,x0", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_minimize_matches_scipy(method, scipy_method, name, f, x0):
    opts = {"gtol": 1e-9} if method == "BFGS" else {"gtol": 1e-9, "ftol": 1e-15}
    res = minimize(f, fnp.asarray(x0), method=method, options=opts)
    sopts = opts
    want = so.minimize(_np(f), np.asarray(x0), jac=True, method=scipy_method, options=sopts)
    assert bool(res.success) and int(res.status) == 0
    np.testing.assert_allclose(np.asarray(res.x), want.x, atol=1e-6)
    np.testing.assert_allclose(float(res.fun), want.fun, atol=1e-10)
    # BFGS stops on the gradient; L-BFGS also when f stops decreasing (ftol, as scipy's)
    assert np.max(np.abs(np.asarray(res.jac))) <= (1e-9 if method == "BFGS" else 1e-6)
    # comparable work: the same algorithms with a different line search
    assert int(res.nit) <= 1.5 * want.nit + 5, (int(res.nit), want.nit)
    assert int(res.nfev) <= 1.5 * want.nfev + 5, (int(res.nfev), want.nfev)
    assert int(res.njev) == int(res.nfev)
    if method == "BFGS":  # the estimate approaches the true inverse Hessian
        true_inv = np.linalg.inv(np.asarray(fgrad.hessian(f)(res.x)))
        np.testing.assert_allclose(np.asarray(res.hess_inv), true_inv, rtol=0.2, atol=0.05 * np.abs(true_inv).max())
    else:
        assert res.hess_inv is None


@pytest.mark.parametrize("method", ["BFGS", "l-bfgs"])
def test_jit_and_vmap_over_starting_points_equal_the_eager_loop(method):
    x0s = np.random.default_rng(0).uniform(-2.0, 2.0, (3, 3))
    solve = lambda x0: minimize(rosen, x0, method=method)
    batched = fgrad.jit(fgrad.vmap(solve))(fnp.asarray(x0s))
    for i, x0 in enumerate(x0s):
        eager = solve(fnp.asarray(x0))
        others = [fgrad.tree.map(lambda v: v[i], batched)]
        if i == 0:
            others.append(fgrad.jit(solve)(fnp.asarray(x0)))
        for res in others:
            assert int(res.nit) == int(eager.nit) and int(res.nfev) == int(eager.nfev)
            np.testing.assert_allclose(np.asarray(res.x), np.asarray(eager.x), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(np.asarray(eager.x), np.ones(3), atol=1e-4)


def test_pytree_x0_float32_and_status_codes():
    target = {"w": np.arange(4.0).reshape(2, 2), "b": (np.array([-2.0]),)}
    fun = lambda p: fnp.sum((p["w"] - target["w"]) ** 2) + fnp.sum((p["b"][0] - target["b"][0]) ** 2) ** 2
    x0 = {"w": fnp.zeros((2, 2)), "b": (fnp.zeros(1),)}
    res = minimize(fun, x0, method="L-BFGS")
    assert fgrad.tree.structure(res.x) == fgrad.tree.structure(x0)
    np.testing.assert_allclose(np.asarray(res.x["w"]), target["w"], atol=1e-5)
    np.testing.assert_allclose(np.asarray(res.x["b"][0]), target["b"][0], atol=1e-2)
    assert tuple(res.jac["w"].shape) == (2, 2)
    res32 = minimize(rosen, fnp.zeros(2, dtype="float32"), options={"gtol": 1e-3})
    assert res32.x.dtype == np.float32 and bool(res32.success)
    np.testing.assert_allclose(np.asarray(res32.x), [1.0, 1.0], atol=1e-2)
    capped = minimize(rosen, fnp.zeros(3), options={"maxiter": 2})
    assert int(capped.status) == 1 and not bool(capped.success) and int(capped.nit) == 2
    start = minimize(rosen, fnp.ones(3))  # already at the minimum: no iteration
    assert int(start.nit) == 0 and bool(start.success)
    # no descent from a maximum's neighbourhood along -H g with H = I is impossible, but
    # a line search limited to one evaluation fails on Rosenbrock's first step
    short = minimize(rosen, fnp.asarray([-1.2, 1.0]), options={"maxls": 1})
    assert int(short.status) == 5 and not bool(short.success)


def _ridge(a, y):
    def fun(x, lam, shift):
        return 0.5 * fnp.sum((fnp.asarray(a) @ x - fnp.asarray(y) - shift) ** 2) + 0.5 * lam * fnp.sum(x**4 + x**2)

    return fun


def test_implicit_derivative_in_args_against_finite_differences_of_resolving():
    rng = np.random.default_rng(3)
    a, y = rng.standard_normal((7, 3)), rng.standard_normal(7)
    fun = _ridge(a, y)
    opts = {"gtol": 1e-12}

    def solution(lam, shift, method="BFGS"):
        return minimize(fun, fnp.zeros(3), (lam, shift), method=method, options=opts).x

    lam, shift = 0.8, fnp.asarray(rng.standard_normal(7) * 0.1)
    jac_lam = np.asarray(fgrad.jacrev(solution)(lam, shift))
    eps = 1e-5
    fd = (np.asarray(solution(lam + eps, shift)) - np.asarray(solution(lam - eps, shift))) / (2 * eps)
    np.testing.assert_allclose(jac_lam, fd, rtol=1e-6, atol=1e-8)
    # in a vector parameter, by L-BFGS, through jit, one direction
    v = rng.standard_normal(7)
    loss = lambda s: fnp.sum(solution(lam, s, "L-BFGS") ** 2)
    g = np.asarray(fgrad.jit(fgrad.grad(loss))(shift))
    fd = (float(loss(shift + eps * fnp.asarray(v))) - float(loss(shift - eps * fnp.asarray(v)))) / (2 * eps)
    np.testing.assert_allclose(g @ v, fd, rtol=1e-5)
    # vmap of grad: per-example derivatives equal the loop
    per = fgrad.vmap(fgrad.grad(lambda l: fnp.sum(solution(l, shift))))(fnp.array([0.3, 0.8]))
    for k, l in enumerate((0.3, 0.8)):
        # (to the solutions' accuracy: batched, the loop's last steps may differ in rounding)
        np.testing.assert_allclose(float(per[k]), float(fgrad.grad(lambda l_: fnp.sum(solution(l_, shift)))(l)), rtol=1e-7)
    # the minimum value differentiates too (envelope theorem: d f*/d lam = df/d lam at x*)
    fstar = lambda l: minimize(fun, fnp.zeros(3), (l, shift), options=opts).fun
    xs = np.asarray(solution(lam, shift))
    np.testing.assert_allclose(float(fgrad.grad(fstar)(lam)), 0.5 * np.sum(xs**4 + xs**2), rtol=1e-8)
    # x0 gets no derivative
    g0 = fgrad.grad(lambda x0: fnp.sum(minimize(fun, x0, (lam, shift)).x))(fnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(g0), np.zeros(3))


def test_errors_name_minimize():
    with pytest.raises(ValueError, match="minimize: method must be"):
        minimize(rosen, fnp.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match=r"minimize: unknown option\(s\) \['maxcor'\]"):
        minimize(rosen, fnp.zeros(2), options={"maxcor": 3})
    with pytest.raises(ValueError, match="0 < c1 < c2 < 1"):
        minimize(rosen, fnp.zeros(2), options={"c1": 0.9, "c2": 0.1})
    with pytest.raises(ShapeError, match="fun must return a scalar"):
        minimize(lambda x: x**2, fnp.zeros(2))
    with pytest.raises(DTypeError, match="real floating"):
        minimize(rosen, fnp.zeros(2, dtype="int32"))
    with pytest.raises(TypeError, match="args must be a tuple"):
        minimize(lambda x, a: fnp.sum(x * a), fnp.zeros(2), args=1.0)
    with pytest.raises(ValueError, match="maxiter must be a positive int"):
        minimize(rosen, fnp.zeros(2), options={"maxiter": 0})


def test_module_surface():
    # (the docstring examples run through pytest's --doctest-modules, fgrad/ being a test path)
    assert dir(optimize) == ["OptimizeResults", "minimize"] and optimize.__all__ == ["OptimizeResults", "minimize"]
    assert math.isclose(float(minimize(lambda x: fnp.sum((x - 2.0) ** 2), fnp.zeros(1)).x[0]), 2.0, abs_tol=1e-6)


def test_scipy_modules_list_only_their_public_names():
    import importlib

    import fgrad.scipy
    from fgrad.scipy import stats

    names = ["fgrad.scipy", "fgrad.scipy.linalg", "fgrad.scipy.special", "fgrad.scipy.optimize", "fgrad.scipy.stats"]
    names += [f"fgrad.scipy.stats.{d}" for d in stats.__all__]
    for name in names:
        module = importlib.import_module(name)
        public = {n for n in dir(module) if not n.startswith("_")}
        assert public == set(module.__all__), (name, sorted(public ^ set(module.__all__)))
    assert fgrad.scipy.linalg.np.__name__ == "numpy"  # hidden from dir(), still reachable
