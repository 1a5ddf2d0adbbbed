"""eval_shape: shapes and dtypes without computing; ShapeDtype is a pytree leaf."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random


def test_matches_the_computed_result():
    def f(params, x, *, scale):
        h = fnp.tanh(x @ params["w"] + params["b"]) * scale
        return {"h": h, "mean": fnp.mean(h, axis=0), "n": fnp.sum(h > 0)}

    params = {"w": fnp.ones((5, 3), dtype="float32"), "b": fnp.zeros(3, dtype="float32")}
    x = fnp.ones((4, 5), dtype="float32")
    want = fgrad.tree.map(lambda t: fgrad.ShapeDtype(t.shape, t.dtype), f(params, x, scale=2.0))

    got = fgrad.eval_shape(f, params, x, scale=2.0)
    assert got == want
    assert got["h"].dtype == np.float32  # the Python scalar stays weak, as when it runs


def test_takes_shape_dtype_leaves_with_any_dtype_spelling():
    spec = {"w": fgrad.ShapeDtype((784, 10), np.float32), "b": fgrad.ShapeDtype((10,), "float32")}
    out = fgrad.eval_shape(lambda p, x: x @ p["w"] + p["b"], spec, fgrad.ShapeDtype((2, 784), np.float32))
    assert out == fgrad.ShapeDtype((2, 10), np.dtype(np.float32))


def test_computes_nothing():
    big = fgrad.ShapeDtype((100_000, 100_000), np.float32)  # 40 GB if it were computed
    out = fgrad.eval_shape(lambda a: fnp.exp(a @ a.T).sum(axis=1), big)
    assert out == fgrad.ShapeDtype((100_000,), np.dtype(np.float32))


def test_sizes_a_layers_parameters():
    shapes = fgrad.eval_shape(nn.Linear(1000, 2000).init, random.key(0))
    assert fgrad.tree.map(lambda s: s.shape, shapes) == nn.LinearParams(
        bias=(2000,), weight=(1000, 2000)
    )


def test_constant_and_scalar_results():
    out = fgrad.eval_shape(lambda x: (fnp.ones(3), 2.0, x), fnp.ones(2, dtype="int32"))
    assert out == (
        fgrad.ShapeDtype((3,), np.dtype(np.float64)),
        fgrad.ShapeDtype((), np.dtype(np.float64)),
        fgrad.ShapeDtype((2,), np.dtype(np.int32)),
    )


def test_python_control_flow_on_a_traced_value_is_an_error():
    with pytest.raises(fgrad.ConcretizationError):
        fgrad.eval_shape(lambda x: x if x > 0 else -x, fnp.array(1.0))


def test_shape_dtype_is_a_pytree_leaf():
    s = fgrad.ShapeDtype((3,), np.dtype(np.float32))
    assert fgrad.tree.leaves({"a": s}) == [s]
    g = fgrad.make_graph(lambda x: x * 2.0)(s)
    assert g.outvars[0].aval == s


def test_make_graph_static_argnums_are_passed_not_traced():
    def f(x, n):
        return x * n if n > 1 else -x  # Python control flow on n

    g = fgrad.make_graph(f, static_argnums=1)(fnp.ones(2), 3)
    assert len(g.invars) == 1 and [n.op.name for n in g.nodes] == ["multiply"]
    g = fgrad.make_graph(f, static_argnums=-1)(fnp.ones(2), 0)
    assert [n.op.name for n in g.nodes] == ["negative"]
    with pytest.raises(ValueError, match="static_argnums \\[2\\] out of range"):
        fgrad.make_graph(f, static_argnums=2)(fnp.ones(2), 3)
    with pytest.raises(TypeError, match="static_argnums takes positions"):
        fgrad.make_graph(f, static_argnums="n")
