"""Reverse and forward mode: shapes under broadcasting, accumulation, higher order,
argnums / has_aux / pytrees, and the errors a user meets.

Expected values are closed forms derived in the comments (calculus), or numpy.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import (
    ConcretizationError,
    MutationError,
    ShapeError,
    TracerLeakError,
)


def _sum_to(a, shape):
    """numpy: sum ``a`` over the axes broadcasting added or stretched to reach it."""
    a = np.asarray(a)
    while a.ndim > len(shape):
        a = a.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and a.shape[i] != 1:
            a = a.sum(axis=i, keepdims=True)
    return a


# Partial derivatives of op(x, y) (before summing back over broadcast axes).
PARTIALS = {
    "add": (lambda x, y: np.ones_like(x + y), lambda x, y: np.ones_like(x + y)),
    "subtract": (lambda x, y: np.ones_like(x + y), lambda x, y: -np.ones_like(x + y)),
    "multiply": (lambda x, y: y + 0 * x, lambda x, y: x + 0 * y),
    "divide": (lambda x, y: 1 / y + 0 * x, lambda x, y: -x / y**2),
}


@pytest.mark.parametrize("name", list(PARTIALS))
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    seed=st.integers(0, 2**16),
)
def test_binary_gradients_have_input_shapes_under_broadcasting(name, shapes, seed):
    x_shape, y_shape = shapes.input_shapes
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, x_shape)
    y = rng.uniform(0.5, 2, y_shape) * rng.choice([-1, 1], y_shape)  # away from 0 for divide
    op = getattr(fnp, name)
    gx, gy = fgrad.grad(lambda a, b: fnp.sum(op(a, b)), argnums=(0, 1))(x, y)
    assert gx.shape == x_shape and gy.shape == y_shape
    assert gx.dtype == gy.dtype == np.float64
    dx, dy = PARTIALS[name]
    assert_allclose(np.asarray(gx), _sum_to(dx(x, y), x_shape), rtol=1e-12, atol=1e-12)
    assert_allclose(np.asarray(gy), _sum_to(dy(x, y), y_shape), rtol=1e-12, atol=1e-12)


@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
def test_jvp_tangent_has_the_output_shape(shapes):
    x_shape, y_shape = shapes.input_shapes
    x, y = np.full(x_shape, 0.5), np.full(y_shape, 2.0)
    out, t = fgrad.jvp(fnp.multiply, (x, y), (np.ones(x_shape), np.zeros(y_shape)))
    assert out.shape == t.shape == shapes.result_shape
    assert_allclose(np.asarray(t), np.broadcast_to(y, shapes.result_shape))  # d(xy) = y dx


def test_a_value_used_twice_accumulates():
    x = fnp.array([0.5, -1.0, 2.0])
    # d/dx sum(x * x) = 2x
    assert_allclose(np.asarray(fgrad.grad(lambda x: fnp.sum(x * x))(x)), 2 * np.asarray(x))

    # y = sin x used three times: d/dx sum(y*y + y) = (2 sin x + 1) cos x
    def f(x):
        y = fnp.sin(x)
        return fnp.sum(y * y + y)

    a = np.asarray(x)
    assert_allclose(np.asarray(fgrad.grad(f)(x)), (2 * np.sin(a) + 1) * np.cos(a), rtol=1e-12)


def test_third_derivative_of_tanh():
    # t = tanh x: t' = 1 - t^2, t'' = -2 t (1 - t^2), t''' = -2 (1 - t^2)(1 - 3 t^2)
    for x in (-1.3, 0.0, 0.4, 2.0):
        t = np.tanh(x)
        d1 = fgrad.grad(fnp.tanh)(x)
        d2 = fgrad.grad(fgrad.grad(fnp.tanh))(x)
        d3 = fgrad.grad(fgrad.grad(fgrad.grad(fnp.tanh)))(x)
        assert_allclose(float(d1), 1 - t**2, rtol=1e-12)
        assert_allclose(float(d2), -2 * t * (1 - t**2), rtol=1e-12, atol=1e-15)
        assert_allclose(float(d3), -2 * (1 - t**2) * (1 - 3 * t**2), rtol=1e-12)


def _hessian_by_grad_of_grad(f, x):
    """Row i of the Hessian is the gradient of <grad f(x), e_i>."""
    n = x.shape[0]
    rows = []
    for i in range(n):
        e = np.eye(n)[i]
        rows.append(np.asarray(fgrad.grad(lambda x, e=e: fnp.sum(fgrad.grad(f)(x) * e))(x)))
    return np.stack(rows)


def test_hessian_of_a_cubic_as_grad_of_grad():
    # f = (sum x)^2 + sum c x^3  =>  H_ij = 2 + delta_ij 6 c_i x_i
    c = np.array([1.0, -2.0, 0.5])
    x = fnp.array([0.3, 1.2, -0.7])

    def f(x):
        s = fnp.sum(x)
        return s * s + fnp.sum(c * x * x * x)

    want = 2.0 + np.diag(6 * c * np.asarray(x))
    assert_allclose(_hessian_by_grad_of_grad(f, x), want, rtol=1e-12)


@pytest.mark.skipif(not hasattr(fnp, "matmul"), reason="fnp.matmul not added yet")
def test_hessian_of_a_quadratic_form():
    # f = 1/2 x^T A x + b.x  =>  grad = (A + A^T)/2 x + b, H = (A + A^T)/2
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    b = rng.standard_normal(3)
    x = fnp.array(rng.standard_normal(3))
    f = lambda x: 0.5 * fnp.sum(x * fnp.matmul(a, x)) + fnp.sum(b * x)
    assert_allclose(np.asarray(fgrad.grad(f)(x)), (a + a.T) / 2 @ np.asarray(x) + b, rtol=1e-12)
    assert_allclose(_hessian_by_grad_of_grad(f, x), (a + a.T) / 2, rtol=1e-12, atol=1e-14)


def test_argnums_int_and_tuple():
    f = lambda x, y, z: fnp.sum(x * y + z)
    x, y, z = fnp.array([1.0, 2.0]), fnp.array([3.0, 4.0]), fnp.array([5.0, 6.0])
    assert_allclose(np.asarray(fgrad.grad(f)(x, y, z)), [3.0, 4.0])
    assert_allclose(np.asarray(fgrad.grad(f, argnums=1)(x, y, z)), [1.0, 2.0])
    assert_allclose(np.asarray(fgrad.grad(f, argnums=-1)(x, y, z)), [1.0, 1.0])
    gz, gx = fgrad.grad(f, argnums=(2, 0))(x, y, z)
    assert_allclose(np.asarray(gz), [1.0, 1.0])
    assert_allclose(np.asarray(gx), [3.0, 4.0])
    (gy,) = fgrad.grad(f, argnums=(1,))(x, y, z)  # a 1-tuple gives a 1-tuple
    assert_allclose(np.asarray(gy), [1.0, 2.0])
    with pytest.raises(ValueError, match="argnums"):
        fgrad.grad(f, argnums=3)(x, y, z)


def test_non_differentiated_integer_arguments_are_fine():
    f = lambda x, n: fnp.sum(x * n)
    assert_allclose(np.asarray(fgrad.grad(f)(fnp.array([1.0, 2.0]), fnp.array([3, 4]))), [3, 4])


def test_has_aux_and_value_and_grad():
    def f(x):
        y = fnp.sin(x)
        return fnp.sum(y), {"y": y, "n": 3}

    x = fnp.array([0.1, 0.2])
    g, aux = fgrad.grad(f, has_aux=True)(x)
    assert_allclose(np.asarray(g), np.cos([0.1, 0.2]))
    assert aux["n"] == 3 and type(aux["y"]) is fgrad.Tensor  # no tracer escapes
    assert_allclose(np.asarray(aux["y"]), np.sin([0.1, 0.2]))

    (value, aux2), g2 = fgrad.value_and_grad(f, has_aux=True)(x)
    assert_allclose(float(value), np.sin(0.1) + np.sin(0.2))
    assert type(value) is fgrad.Tensor and type(aux2["y"]) is fgrad.Tensor
    assert_allclose(np.asarray(g2), np.asarray(g))

    value, g3 = fgrad.value_and_grad(lambda x: fnp.sum(x * x))(x)
    assert_allclose(float(value), 0.05)
    assert_allclose(np.asarray(g3), [0.2, 0.4])


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match="pair"):
        fgrad.grad(lambda x: fnp.sum(x), has_aux=True)(fnp.array([1.0]))


def test_vjp_with_pytree_inputs_and_outputs():
    def f(d):
        return {"a": d["x"] * d["y"], "b": (fnp.sin(d["x"]),)}

    primals = {"x": fnp.array([0.5, 1.0]), "y": fnp.array([2.0, 3.0])}
    out, f_vjp = fgrad.vjp(f, primals)
    assert_allclose(np.asarray(out["a"]), [1.0, 3.0])
    (ct,) = f_vjp({"a": fnp.ones(2), "b": (fnp.array([1.0, 2.0]),)})
    # d/dx = y * ct_a + cos x * ct_b;  d/dy = x * ct_a
    assert set(ct) == {"x", "y"}
    assert_allclose(np.asarray(ct["x"]), [2.0 + np.cos(0.5), 3.0 + 2 * np.cos(1.0)])
    assert_allclose(np.asarray(ct["y"]), [0.5, 1.0])
    with pytest.raises(ShapeError, match="structure"):
        f_vjp({"a": fnp.ones(2)})
    with pytest.raises(ShapeError, match="does not match"):
        f_vjp({"a": fnp.ones(3), "b": (fnp.ones(2),)})


def test_vjp_with_several_primals_and_has_aux():
    out, f_vjp, aux = fgrad.vjp(
        lambda x, y: (x * y, "aux"), fnp.array(2.0), fnp.array(3.0), has_aux=True
    )
    assert aux == "aux" and float(out) == 6.0
    cx, cy = f_vjp(fnp.array(1.0))
    assert float(cx) == 3.0 and float(cy) == 2.0


def test_jvp_matches_closed_form_with_pytrees():
    def f(p):
        return fnp.sum(fnp.exp(p["w"]) * p["b"])

    p = {"w": fnp.array([0.0, 1.0]), "b": fnp.array(2.0)}
    t = {"w": fnp.array([1.0, 0.5]), "b": fnp.array(1.0)}
    out, dout = fgrad.jvp(f, (p,), (t,))
    # d = sum(exp(w) * tw * b + exp(w) * tb)
    e = np.exp([0.0, 1.0])
    assert_allclose(float(out), 2 * e.sum())
    assert_allclose(float(dout), np.sum(e * np.array([1.0, 0.5]) * 2.0 + e), rtol=1e-12)


def test_jvp_errors():
    with pytest.raises(TypeError, match="tuples or lists"):
        fgrad.jvp(fnp.sin, fnp.array(1.0), fnp.array(1.0))
    with pytest.raises(ShapeError, match="does not match"):
        fgrad.jvp(fnp.sin, (fnp.ones(2),), (fnp.ones(3),))


def test_jvp_of_grad_is_a_hessian_vector_product():
    # f = sum x^3 / 3: grad = x^2, H v = 2 x v
    x, v = fnp.array([1.0, -2.0]), fnp.array([0.5, 1.0])
    _, hv = fgrad.jvp(fgrad.grad(lambda x: fnp.sum(x * x * x) / 3.0), (x,), (v,))
    assert_allclose(np.asarray(hv), [1.0, -4.0])


def test_stop_gradient_blocks_the_derivative():
    x = fnp.array([1.0, 3.0])
    # d/dx sum(sg(x) * x) = sg(x) = x (not 2x)
    assert_allclose(
        np.asarray(fgrad.grad(lambda x: fnp.sum(fgrad.stop_gradient(x) * x))(x)), [1.0, 3.0]
    )
    assert_allclose(float(fgrad.grad(lambda x: fnp.sum(fgrad.stop_gradient(x * x)))(x).sum()), 0.0)
    _, t = fgrad.jvp(lambda x: fgrad.stop_gradient(x) * 2.0, (x,), (fnp.ones(2),))
    assert_allclose(np.asarray(t), [0.0, 0.0])


def test_outputs_independent_of_inputs_get_zero_gradients():
    g = fgrad.grad(lambda x, y: fnp.sum(y * 2.0))(fnp.array([1.0, 2.0]), fnp.array([1.0]))
    assert g.shape == (2,) and np.all(np.asarray(g) == 0)


# ------------------------------------------------------------------------ errors


def test_grad_of_a_non_scalar_output_names_vjp_and_jacrev():
    with pytest.raises(TypeError, match=r"scalar.*vjp.*jacrev") as info:
        fgrad.grad(lambda x: x * 2.0)(fnp.ones(3))
    assert "f64[3]" in str(info.value)


@pytest.mark.parametrize(
    "value", [fgrad.asarray([1, 2]), fgrad.asarray([True, False]), 3, np.array([1, 2], np.int32)]
)
def test_grad_with_respect_to_integer_or_bool_inputs_is_a_type_error(value):
    with pytest.raises(TypeError, match="floating") as info:
        fgrad.grad(lambda x: fnp.sum(x * 2.0))(value)
    assert "argument 0" in str(info.value)


def test_incompatible_shapes_name_the_op_and_the_shapes():
    x, y = fnp.ones((2, 3)), fnp.ones(4)
    for fn in (
        lambda: x + y,
        lambda: fgrad.grad(lambda x: fnp.sum(x * y))(x),
        lambda: fgrad.jvp(lambda x: x - y, (x,), (x,)),
        lambda: fgrad.make_graph(lambda x: fnp.add(x, y))(x),
    ):
        with pytest.raises(ShapeError) as info:
            fn()
        assert isinstance(info.value, ValueError)
        msg = str(info.value)
        assert any(name in msg for name in ("add", "multiply", "subtract")), msg
        assert ("2,3" in msg or "(2, 3)" in msg) and "4" in msg, msg


def test_a_tracer_used_after_its_transform_returned_raises():
    leaked = []

    def f(x):
        leaked.append(x)
        return fnp.sum(x)

    fgrad.grad(f)(fnp.array([1.0, 2.0]))
    with pytest.raises(TracerLeakError, match=r"'sin'.*already returned"):
        fnp.sin(leaked[0])
    with pytest.raises(TracerLeakError, match="multiply"):
        leaked[0] * 2.0
    with pytest.raises(TypeError):  # TracerLeakError is a TypeError
        2.0 + leaked[0]

    fgrad.jvp(f, (fnp.array([1.0]),), (fnp.array([1.0]),))
    with pytest.raises(TracerLeakError):
        fnp.exp(leaked[-1])


def test_python_control_flow_on_a_traced_value_under_make_graph():
    def f(x):
        if fnp.sum(x) > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError, match="concrete") as info:
        fgrad.make_graph(f)(fnp.ones(3))
    assert isinstance(info.value, TypeError)
    with pytest.raises(ConcretizationError):
        fgrad.make_graph(lambda x: float(fnp.sum(x)))(fnp.ones(3))
    # Under eager grad the same Python control flow works on the values.
    assert_allclose(np.asarray(fgrad.grad(lambda x: fnp.sum(f(x)))(fnp.ones(3))), np.ones(3))


def test_mutation_raises_inside_and_outside_transforms():
    x = fnp.array([1.0, 2.0])
    with pytest.raises(MutationError, match=r"\.at\[.*\]\.set"):
        x[0] = 1

    def f(x):
        x[0] = 1.0
        return fnp.sum(x)

    with pytest.raises(MutationError, match=r"\.at\[.*\]\.set") as info:
        fgrad.grad(f)(x)
    assert isinstance(info.value, TypeError)


def test_unregistered_container_and_bad_aux_errors_say_what_to_do():
    import dataclasses

    @dataclasses.dataclass
    class Params:
        w: float

    with pytest.raises(TypeError, match="register_dataclass"):
        fgrad.grad(lambda p: p.w)(Params(1.0))
    with pytest.raises(TypeError, match=r"pair \(output, aux\).*Tensor f64\[\]"):
        fgrad.grad(lambda x: x, has_aux=True)(1.0)


def test_repeated_argnums_is_an_error():
    f = lambda a, b: fnp.sum(a * b)  # noqa: E731
    a, b = fnp.array([1.0, 2.0]), fnp.array([3.0, 4.0])
    with pytest.raises(ValueError, match="names an argument twice"):
        fgrad.grad(f, argnums=(0, 0))(a, b)
    with pytest.raises(ValueError, match="names an argument twice"):
        fgrad.grad(f, argnums=(0, -2))(a, b)


def test_integer_input_error_mentions_allow_int():
    with pytest.raises(TypeError, match="allow_int=True"):
        fgrad.grad(lambda n: n * 1.0)(fnp.array(3))
