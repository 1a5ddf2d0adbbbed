"""vmap itself: in_axes/out_axes/axis_size as JAX, errors, and composition with the other
transforms. Per-op rules are swept in tests/ops/test_vmap_registry.py."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError

RNG = np.random.default_rng(0)


def _t(*shape):
    return fnp.asarray(RNG.standard_normal(shape))


def _loop(f, *args, in_axes):
    """The per-example reference: slice, apply, stack."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [
        f(*[a if ax is None else fnp.asarray(np.take(np.asarray(a), i, axis=ax)) for a, ax in zip(args, in_axes)])
        for i in range(size)
    ]
    return np.stack([np.asarray(o) for o in outs])


def test_in_axes_per_argument_and_negative_axes():
    f = lambda x, w: fnp.tanh(x @ w)  # noqa: E731
    x, w = _t(4, 3, 5), _t(5, 2)
    got = fgrad.vmap(f, in_axes=(1, None))(x, w)
    np.testing.assert_allclose(np.asarray(got), _loop(f, x, w, in_axes=(1, None)), rtol=1e-12)
    got = fgrad.vmap(f, in_axes=(-2, None))(x, w)
    np.testing.assert_allclose(np.asarray(got), _loop(f, x, w, in_axes=(1, None)), rtol=1e-12)


def test_in_axes_as_a_pytree_prefix():
    def f(params, x):
        return fnp.sum(x * params["scale"] + params["shift"])

    params = {"scale": _t(3, 2), "shift": _t(2)}  # scale mapped over axis 0, shift shared
    x = _t(3, 2)
    got = fgrad.vmap(f, in_axes=({"scale": 0, "shift": None}, 0))(params, x)
    want = [f({"scale": params["scale"][i], "shift": params["shift"]}, x[i]) for i in range(3)]
    np.testing.assert_allclose(np.asarray(got), np.asarray([np.asarray(v) for v in want]), rtol=1e-12)


def test_out_axes_and_unbatched_outputs():
    x = _t(3, 4)
    got = fgrad.vmap(lambda x: (x * 2.0, fnp.ones(2)), out_axes=(1, 0))(x)
    np.testing.assert_allclose(np.asarray(got[0]), 2.0 * np.asarray(x).T)
    np.testing.assert_array_equal(np.asarray(got[1]), np.ones((3, 2)))  # broadcast per example
    shared = fgrad.vmap(lambda x, c: (x + c, c * 2.0), in_axes=(0, None), out_axes=(0, None))
    y, c2 = shared(x, fnp.array(1.5))
    assert float(c2) == 3.0
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) + 1.5)


def test_axis_size_when_nothing_is_mapped():
    out = fgrad.vmap(lambda c: c * 2.0, in_axes=None, axis_size=4)(fnp.array([1.0, 2.0]))
    assert out.shape == (4, 2)
    with pytest.raises(ValueError, match="axis_size"):
        fgrad.vmap(lambda c: c, in_axes=None)(fnp.ones(2))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"different sizes \(2: axis 0 of argument 0 .*; 3: axis 0 of argument 1"):
        fgrad.vmap(fnp.add)(fnp.ones(2), fnp.ones(3))
    with pytest.raises(ValueError, match=r"7: axis_size"):
        fgrad.vmap(fnp.sin, axis_size=7)(fnp.ones(2))
    with pytest.raises(ValueError, match="out_axes 5 is out of range"):
        fgrad.vmap(lambda a: a * 2, out_axes=5)(fnp.ones((3, 4)))
    with pytest.raises(ValueError, match="in_axes has 1 entries but the function got 2"):
        fgrad.vmap(fnp.add, in_axes=(0,))(fnp.ones(2), fnp.ones(2))
    with pytest.raises(ValueError, match="out of range"):
        fgrad.vmap(fnp.sin, in_axes=2)(fnp.ones((2, 3)))
    with pytest.raises(ValueError, match="does not match"):
        fgrad.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": fnp.ones(2)})
    with pytest.raises(ValueError, match="out_axes=None differs between examples"):
        fgrad.vmap(fnp.sin, out_axes=None)(fnp.ones(2))
    with pytest.raises(ConcretizationError, match="vmap"):
        fgrad.vmap(lambda x: x if x > 0 else -x)(fnp.array([1.0, -1.0]))


def _mlp_loss(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return fnp.mean((h @ params["w2"] - y) ** 2)


def _mlp():
    params = {"w1": _t(4, 8), "b1": _t(8), "w2": _t(8, 2)}
    return params, _t(5, 4), _t(5, 2)


def test_per_example_gradients_equal_the_loop():
    params, xs, ys = _mlp()
    g = fgrad.vmap(fgrad.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for i in range(5):
        gi = fgrad.grad(_mlp_loss)(params, xs[i], ys[i])
        for k in params:
            np.testing.assert_allclose(np.asarray(g[k][i]), np.asarray(gi[k]), rtol=1e-10)


def test_grad_of_vmap_jit_of_vmap_and_nested_vmap():
    params, xs, ys = _mlp()

    def batch_loss(params):
        return fnp.sum(fgrad.vmap(_mlp_loss, in_axes=(None, 0, 0))(params, xs, ys))

    want = fgrad.grad(lambda p: sum(_mlp_loss(p, xs[i], ys[i]) for i in range(5)))(params)
    got = fgrad.grad(batch_loss)(params)
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10)

    per_example = fgrad.vmap(fgrad.grad(_mlp_loss), in_axes=(None, 0, 0))
    jitted = fgrad.jit(per_example)
    for k, v in jitted(params, xs, ys).items():
        np.testing.assert_allclose(np.asarray(v), np.asarray(per_example(params, xs, ys)[k]), rtol=1e-12)

    outer = fgrad.vmap(fgrad.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))
    a, b = _t(3), _t(4)
    np.testing.assert_allclose(np.asarray(outer(a, b)), np.asarray(b)[:, None] * np.asarray(a)[None, :])


def test_jvp_of_vmap_and_vmap_of_jvp():
    x, t = _t(3, 4), _t(3, 4)
    f = lambda x: fnp.sin(x) * x  # noqa: E731
    _, tan = fgrad.jvp(fgrad.vmap(f), (x,), (t,))
    want = np.asarray(t) * (np.cos(np.asarray(x)) * np.asarray(x) + np.sin(np.asarray(x)))
    np.testing.assert_allclose(np.asarray(tan), want, rtol=1e-12)
    tan2 = fgrad.vmap(lambda x, t: fgrad.jvp(f, (x,), (t,))[1])(x, t)
    np.testing.assert_allclose(np.asarray(tan2), want, rtol=1e-12)


def test_jacobian_rows_by_vmap_of_vjp():
    # jacrev's rows as vmap over cotangents: the classic use.
    x = _t(3)
    f = lambda x: fnp.tanh(x) * fnp.sum(x)  # noqa: E731
    _, f_vjp = fgrad.vjp(f, x)
    rows = fgrad.vmap(lambda ct: f_vjp(ct)[0])(fnp.eye(3))
    np.testing.assert_allclose(np.asarray(rows), np.asarray(fgrad.jacrev(f)(x)), rtol=1e-12)


def test_keyword_arguments_are_mapped_over_their_first_axis():
    x = _t(4, 6)
    got = fgrad.vmap(lambda a, b: a * b)(x, b=x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) ** 2)
    keys = fgrad.random.split(fgrad.random.key(0), 4)
    drop = fgrad.vmap(lambda x, key: fgrad.nn.dropout(x, 0.5, key=key))(x, key=keys)
    for i in range(4):
        want = fgrad.nn.dropout(x[i], 0.5, key=keys[i])
        np.testing.assert_array_equal(np.asarray(drop[i]), np.asarray(want))


def test_shape_errors_under_vmap_give_the_per_example_shapes():
    with pytest.raises(fgrad.ShapeError, match=r"under vmap.*op 'add' got f64\[4\], f64\[3\]"):
        fgrad.vmap(lambda a, b: a + b, in_axes=(1, None))(fnp.ones((4, 8)), fnp.ones(3))
