"""jit: same results as eager, cache hits and misses, nesting, errors."""

import logging

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import REGISTRY
from fgrad.test_util import op_args, op_cases


def loss(w, x):
    return fnp.sum(fnp.tanh(x * w) ** 2) / 3.0


X = fnp.array([0.5, -1.0, 2.0])


def test_jit_matches_eager_and_caches():
    f = fgrad.jit(loss)
    np.testing.assert_allclose(np.asarray(f(1.5, X)), np.asarray(loss(1.5, X)))
    f(1.5, X)
    assert f.cache_info().misses == 1 and f.cache_info().hits == 1
    f(1.5, fnp.array([1.0, 2.0]))  # new shape: retrace
    f(1.5, fnp.array([1.0, 2.0, 3.0], dtype="float32"))  # new dtype: retrace
    f(2.5, X)  # new Python scalar: retrace (scalars are static)
    assert f.cache_info().misses == 4


def test_jit_of_grad_and_grad_of_jit_match_eager():
    w = fnp.array(1.5)
    want = fgrad.grad(loss)(w, X)
    np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(loss))(w, X)), np.asarray(want))
    np.testing.assert_allclose(np.asarray(fgrad.grad(fgrad.jit(loss))(w, X)), np.asarray(want))
    second = fgrad.grad(fgrad.grad(loss))(w, X)
    np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(fgrad.grad(loss)))(w, X)), np.asarray(second))
    np.testing.assert_allclose(np.asarray(fgrad.grad(fgrad.grad(fgrad.jit(loss)))(w, X)), np.asarray(second))
    t = fgrad.jvp(fgrad.jit(loss), (w, X), (fnp.array(1.0), fnp.zeros(3)))[1]
    np.testing.assert_allclose(np.asarray(t), np.asarray(want))


def test_value_and_grad_training_step_in_one_graph():
    def step(params, x, y):
        def mse(p):
            return fnp.mean((x * p["w"] + p["b"] - y) ** 2)

        value, grads = fgrad.value_and_grad(mse)(params)
        new = fgrad.tree.map(lambda p, g: p - 0.1 * g, params, grads)
        return value, new

    params = {"w": fnp.array(0.0), "b": fnp.array(0.0)}
    x = fnp.linspace(-1.0, 1.0, 20)
    y = 3.0 * x + 1.0
    fast = fgrad.jit(step)
    p_eager, p_jit = params, params
    for _ in range(50):
        v_eager, p_eager = step(p_eager, x, y)
        v_jit, p_jit = fast(p_jit, x, y)
    assert fast.cache_info().misses == 1
    for k in "wb":
        np.testing.assert_allclose(np.asarray(p_jit[k]), np.asarray(p_eager[k]), rtol=1e-12)
    assert float(v_jit) < 1e-2


def test_static_argnums_and_control_flow_error():
    def f(x, mode):
        return fnp.sin(x) if mode == "sin" else fnp.cos(x)

    g = fgrad.jit(f, static_argnums=1)
    assert np.isclose(float(g(fnp.array(0.0), "cos")), 1.0)
    assert np.isclose(float(g(fnp.array(0.0), "sin")), 0.0)
    with pytest.raises(fgrad.ConcretizationError, match="static_argnums") as err:
        fgrad.jit(lambda x: x if x > 0 else -x)(fnp.array(1.0))
    assert "test_jit.py" in str(err.value)  # names the user's line
    with pytest.raises(TypeError, match="hashable"):
        fgrad.jit(f, static_argnums=1)(fnp.array(0.0), ["not", "hashable"])


def test_log_compiles(caplog):
    fgrad.config.log_compiles = True
    try:
        with caplog.at_level(logging.WARNING, logger="fgrad"):
            f = fgrad.jit(lambda x: x * 2.0)
            f(fnp.ones(2))
            f(fnp.ones(2))
    finally:
        fgrad.config.log_compiles = False
    assert sum("tracing" in r.message for r in caplog.records) == 1


def test_intermediates_are_released_after_last_use():
    from fgrad.transforms.jit import _Program

    f = fgrad.jit(lambda x: fnp.sum(fnp.exp(fnp.sin(fnp.cos(x)))))
    graph = f.graph(fnp.ones(4))
    program = _Program(graph, np)
    freed = [name for line in program.source.splitlines() if line.strip().startswith("del ")
             for name in line.strip()[4:].split(", ")]
    # cos, sin and exp outputs are each freed once their consumer has run.
    assert len(freed) == 3


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if REGISTRY[n].check is not None))
def test_jit_equals_eager_on_every_op(name):
    """The registry sweep's first case of each op gives identical results under jit."""
    op = REGISTRY[name]
    shapes, params = op_cases(op, 1)[0]
    args = op_args(op, shapes, params)
    want = op(*args, **params)
    got = fgrad.jit(lambda *a: op(*a, **params))(*args)
    for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
