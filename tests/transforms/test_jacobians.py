"""jacrev, jacfwd, hessian, hvp, linearize against closed forms and each other."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """Closed form of the Rosenbrock Hessian (tridiagonal)."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i, i + 1] += -400 * x[i]
        h[i + 1, i] += -400 * x[i]
        h[i + 1, i + 1] += 200
    return h


@pytest.fixture
def x():
    return fnp.array([0.3, -0.7, 1.2, 0.5])


def test_jacfwd_equals_jacrev_and_closed_form_for_elementwise(x):
    f = lambda v: fnp.sin(v) * fnp.exp(v)  # noqa: E731
    want = np.diag(np.cos(np.asarray(x)) * np.exp(np.asarray(x)) + np.sin(np.asarray(x)) * np.exp(np.asarray(x)))
    np.testing.assert_allclose(np.asarray(fgrad.jacrev(f)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fgrad.jacfwd(f)(x)), want, rtol=1e-12)


def test_rosenbrock_hessian_closed_form(x):
    want = rosenbrock_hessian(np.asarray(x))
    np.testing.assert_allclose(np.asarray(fgrad.hessian(rosenbrock)(x)), want, rtol=1e-10)
    h_rev_rev = fgrad.jacrev(fgrad.jacrev(rosenbrock))(x)
    np.testing.assert_allclose(np.asarray(h_rev_rev), want, rtol=1e-10)
    v = fnp.array([1.0, -2.0, 0.5, 3.0])
    (hv,) = fgrad.hvp(rosenbrock, (x,), (v,))
    np.testing.assert_allclose(np.asarray(hv), want @ np.asarray(v), rtol=1e-10)


def test_jacobian_shapes_and_pytrees():
    f = lambda d: {"out": d["a"][:, None] * d["b"][None, :]}  # noqa: E731
    args = {"a": fnp.ones(2), "b": fnp.ones(3)}
    jr = fgrad.jacrev(f)(args)
    jf = fgrad.jacfwd(f)(args)
    assert jr["out"]["a"].shape == (2, 3, 2) and jr["out"]["b"].shape == (2, 3, 3)
    for k in "ab":
        np.testing.assert_allclose(np.asarray(jr["out"][k]), np.asarray(jf["out"][k]))


def test_argnums_tuple_and_has_aux():
    f = lambda a, b: (a * b, "aux")  # noqa: E731
    (ja, jb), aux = fgrad.jacrev(f, argnums=(0, 1), has_aux=True)(fnp.array([2.0]), fnp.array([3.0]))
    assert aux == "aux" and float(ja[0, 0]) == 3.0 and float(jb[0, 0]) == 2.0
    (ja, jb), aux = fgrad.jacfwd(f, argnums=(0, 1), has_aux=True)(fnp.array([2.0]), fnp.array([3.0]))
    assert aux == "aux" and float(ja[0, 0]) == 3.0 and float(jb[0, 0]) == 2.0


def test_third_derivatives_compose_in_every_order():
    f = lambda x: fnp.sin(x) * x  # noqa: E731
    x0 = 0.7
    # d3/dx3 (x sin x) = -3 sin x - x cos x
    want = -3 * np.sin(x0) - x0 * np.cos(x0)
    d2 = fgrad.grad(fgrad.grad(f))
    assert np.isclose(float(fgrad.grad(d2)(x0)), want)
    assert np.isclose(float(fgrad.jvp(d2, (x0,), (1.0,))[1]), want)
    assert np.isclose(float(fgrad.jacfwd(fgrad.jacrev(fgrad.grad(f)))(fnp.array(x0))), want)
    fwd2 = lambda x: fgrad.jvp(lambda y: fgrad.jvp(f, (y,), (1.0,))[1], (x,), (1.0,))[1]  # noqa: E731
    assert np.isclose(float(fgrad.grad(fwd2)(x0)), want)


def test_linearize(x):
    y, f_jvp = fgrad.linearize(fnp.sin, x)
    np.testing.assert_allclose(np.asarray(f_jvp(fnp.ones(4))), np.cos(np.asarray(x)))


def test_int_inputs_need_allow_int():
    with pytest.raises(TypeError, match="floating"):
        fgrad.jacrev(lambda x: x * 2.0)(fnp.array([1, 2]))


def test_softmax_jacobian_closed_form():
    """d softmax(x)_i / d x_j = s_i (delta_ij - s_j)."""
    x = fnp.array([0.5, -1.0, 2.0, 0.1])
    s = np.exp(np.asarray(x)) / np.exp(np.asarray(x)).sum()
    want = np.diag(s) - np.outer(s, s)
    for jac in (fgrad.jacrev, fgrad.jacfwd):
        np.testing.assert_allclose(np.asarray(jac(fgrad.nn.softmax)(x)), want, atol=1e-14)


def test_mlp_jacobians_agree_and_match_finite_differences():
    rng = np.random.default_rng(0)
    params = {
        "w1": fnp.asarray(rng.standard_normal((3, 5))),
        "b1": fnp.asarray(rng.standard_normal(5)),
        "w2": fnp.asarray(rng.standard_normal((5, 2))),
    }

    def mlp(p, x):
        return fnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]

    x = fnp.asarray(rng.standard_normal((4, 3)))
    jr = fgrad.jacrev(mlp)(params, x)
    jf = fgrad.jacfwd(mlp)(params, x)
    for k in params:
        assert jr[k].shape == (4, 2) + params[k].shape
        np.testing.assert_allclose(np.asarray(jr[k]), np.asarray(jf[k]), atol=1e-12)
    # one entry against a central difference
    eps = 1e-6
    w1 = np.asarray(params["w1"]).copy()
    w1[1, 2] += eps
    plus = np.asarray(mlp({**params, "w1": fnp.asarray(w1)}, x))
    w1[1, 2] -= 2 * eps
    minus = np.asarray(mlp({**params, "w1": fnp.asarray(w1)}, x))
    np.testing.assert_allclose(np.asarray(jr["w1"])[:, :, 1, 2], (plus - minus) / (2 * eps), atol=1e-8)
    h = fgrad.hessian(lambda p: fnp.sum(mlp(p, x) ** 2))(params)
    assert h["w2"]["w2"].shape == (5, 2, 5, 2)
    hm = np.asarray(h["w2"]["w2"]).reshape(10, 10)
    np.testing.assert_allclose(hm, hm.T, atol=1e-10)  # a Hessian is symmetric


def test_make_graph_shows_jvp_and_vjp_graphs():
    jvp_graph = fgrad.make_graph(lambda x, t: fgrad.jvp(fnp.sin, (x,), (t,)))(fnp.ones(3), fnp.ones(3))
    assert [n.op.name for n in jvp_graph.nodes] == ["sin", "cos", "multiply"]
    vjp_graph = fgrad.make_graph(fgrad.grad(lambda x: fnp.sum(fnp.exp(x))))(fnp.ones(3))
    assert "exp" in str(vjp_graph) and "multiply" in str(vjp_graph)
