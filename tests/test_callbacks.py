"""fgrad.pure_callback: a host function with declared result avals, eagerly and under jit,
vmap (its three vmap_methods, as JAX's), custom_jvp/custom_vjp (differentiable only there,
as in JAX), and the errors for results that differ from their declaration. Values are
checked against numpy's own functions."""

import numpy as np
import pytest
import scipy.special

import fgrad
import fgrad.numpy as fnp
from fgrad import ShapeDtype, lax
from fgrad.errors import DTypeError, ShapeError
from fgrad.transforms import passes


def _erfcx(x, **kw):
    return fgrad.pure_callback(
        lambda a: scipy.special.erfcx(a), ShapeDtype(x.shape, x.dtype), x, **kw
    )


X = np.array([0.1, 0.7, 2.5])


@pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit], ids=["eager", "jit"])
def test_values_eager_and_jit(wrap):
    f = wrap(lambda x: 2.0 * _erfcx(x + 1.0))
    for x in (X, X[::-1]):
        np.testing.assert_allclose(np.asarray(f(fnp.asarray(x))), 2 * scipy.special.erfcx(x + 1), rtol=1e-15)


def test_jit_runs_the_function_at_every_call():
    calls = []

    def host(a):
        calls.append(a.copy())
        return a + 1

    f = fgrad.jit(lambda x: fgrad.pure_callback(host, ShapeDtype((2,), "float64"), x))
    f(fnp.zeros(2))
    f(fnp.ones(2))
    assert [c.tolist() for c in calls] == [[0.0, 0.0], [1.0, 1.0]]


def test_pytrees_in_and_out_and_kwargs():
    def host(p, scale):
        return {"sum": np.sum(p["a"]) * scale, "neg": -p["b"]}

    spec = {"sum": ShapeDtype((), "float64"), "neg": ShapeDtype((2,), "int64")}
    p = {"a": fnp.array([1.0, 2.0]), "b": fnp.array([3, 4])}
    f = lambda q: fgrad.pure_callback(host, spec, q, scale=10.0)  # noqa: E731
    for out in (f(p), fgrad.jit(f)(p)):
        assert float(out["sum"]) == 30.0
        np.testing.assert_array_equal(np.asarray(out["neg"]), [-3, -4])
        assert out["neg"].dtype == np.int64


def test_sequential_vmap_calls_once_per_example():
    shapes = []

    def host(a, b):
        shapes.append((a.shape, b.shape))
        return np.asarray(np.dot(a, b))

    f = lambda x, y: fgrad.pure_callback(  # noqa: E731
        host, ShapeDtype((), "float64"), x, y, vmap_method="sequential"
    )
    xs = np.arange(6.0).reshape(3, 2)
    y = np.array([1.0, -1.0])
    out = fgrad.vmap(f, in_axes=(0, None))(fnp.asarray(xs), fnp.asarray(y))
    np.testing.assert_allclose(np.asarray(out), xs @ y)
    assert shapes == [((2,), (2,))] * 3


@pytest.mark.parametrize(
    "method, b_shape", [("expand_dims", (1, 2)), ("broadcast_all", (3, 2))]
)
def test_batched_vmap_methods_pass_the_batch(method, b_shape):
    shapes = []

    def host(a, b):
        shapes.append((a.shape, b.shape))
        return np.sum(a * b, axis=-1)

    f = lambda x, y: fgrad.pure_callback(  # noqa: E731
        host, ShapeDtype((), "float64"), x, y, vmap_method=method
    )
    xs = np.arange(6.0).reshape(3, 2)
    y = np.array([2.0, -1.0])
    for g in (fgrad.vmap(f, in_axes=(0, None)), fgrad.jit(fgrad.vmap(f, in_axes=(0, None)))):
        np.testing.assert_allclose(np.asarray(g(fnp.asarray(xs), fnp.asarray(y))), xs @ y)
    assert shapes == [((3, 2), b_shape)] * 2  # JAX passes the same shapes


def test_nested_vmap_sequential_and_expand_dims_agree():
    xs = np.arange(24.0).reshape(2, 3, 4)

    def make(method):
        def f(x):
            return fgrad.pure_callback(
                lambda a: np.cumsum(a, axis=-1), ShapeDtype((4,), "float64"), x, vmap_method=method
            )

        return fgrad.vmap(fgrad.vmap(f))

    for method in ("sequential", "expand_dims", "broadcast_all"):
        np.testing.assert_allclose(np.asarray(make(method)(fnp.asarray(xs))), np.cumsum(xs, -1))


def test_vmap_without_a_method_raises():
    with pytest.raises(NotImplementedError, match="vmap_method"):
        fgrad.vmap(_erfcx)(fnp.ones((2, 3)))
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        _erfcx(fnp.ones(3), vmap_method="loop")


@pytest.mark.parametrize("transform", [fgrad.grad, lambda f: fgrad.grad(fgrad.jit(f))])
def test_grad_without_a_custom_rule_raises(transform):
    with pytest.raises(ValueError, match="pure_callback: .*custom_jvp or fgrad.custom_vjp"):
        transform(lambda x: fnp.sum(_erfcx(x)))(fnp.asarray(X))


def test_jvp_without_a_custom_rule_raises():
    with pytest.raises(ValueError, match="no JVP rule"):
        fgrad.jvp(_erfcx, (fnp.asarray(X),), (fnp.ones(3),))


def _erfcx_derivative(x, y):
    # d/dx erfcx(x) = 2 x erfcx(x) - 2 / sqrt(pi)
    return 2 * x * y - 2 / np.sqrt(np.pi)


def test_custom_jvp_makes_it_differentiable():
    @fgrad.custom_jvp
    def erfcx(x):
        return _erfcx(x)

    @erfcx.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        y = erfcx(x)
        return y, t * (2 * x * y - 2 / np.sqrt(np.pi))

    want = _erfcx_derivative(X, scipy.special.erfcx(X))
    for g in (fgrad.grad(lambda x: fnp.sum(erfcx(x))), fgrad.jit(fgrad.grad(lambda x: fnp.sum(erfcx(x))))):
        np.testing.assert_allclose(np.asarray(g(fnp.asarray(X))), want, rtol=1e-13)


def test_custom_vjp_matches_finite_differences():
    @fgrad.custom_vjp
    def erfcx(x):
        return _erfcx(x)

    def fwd(x):
        y = erfcx(x)
        return y, (x, y)

    def bwd(res, ct):
        x, y = res
        return (ct * (2 * x * y - 2 / np.sqrt(np.pi)),)

    erfcx.defvjp(fwd, bwd)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(erfcx(x))))(fnp.asarray(X))
    eps = 1e-6
    fd = (np.sin(scipy.special.erfcx(X + eps)) - np.sin(scipy.special.erfcx(X - eps))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-8)


def test_results_that_differ_from_the_declaration_raise():
    with pytest.raises(ShapeError, match=r"result 0 has shape \(1,\).*declares f64\[\]"):
        fgrad.pure_callback(lambda a: a[None], ShapeDtype((), "float64"), fnp.array(1.0))
    with pytest.raises(DTypeError, match="result 0 has dtype float64.*declares f32"):
        fgrad.jit(lambda x: fgrad.pure_callback(lambda a: a, ShapeDtype((), "float32"), x))(1.0)
    with pytest.raises(TypeError, match="returned a pytree of structure"):
        fgrad.pure_callback(lambda a: (a, a), ShapeDtype((), "float64"), fnp.array(1.0))
    with pytest.raises(TypeError, match="callback must be callable"):
        fgrad.pure_callback(None, ShapeDtype((), "float64"), 1.0)
    with pytest.raises(TypeError, match="result_shape_dtypes leaf 0"):
        fgrad.pure_callback(lambda a: a, (3,), 1.0)


def test_inside_scan_body():
    def body(c, x):
        y = fgrad.pure_callback(np.exp, ShapeDtype((), "float64"), x)
        return c + y, y

    xs = np.array([0.0, 1.0, 2.0])
    for f in (lambda v: lax.scan(body, 0.0, v), fgrad.jit(lambda v: lax.scan(body, 0.0, v))):
        carry, ys = f(fnp.asarray(xs))
        np.testing.assert_allclose(float(carry), np.exp(xs).sum(), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(ys), np.exp(xs), rtol=1e-15)


def test_an_unused_pure_callback_may_be_dropped_but_a_debug_one_not():
    g = fgrad.make_graph(
        lambda x: (fgrad.pure_callback(np.sin, ShapeDtype((), "float64"), x),
                   fgrad.debug.callback(lambda v: None, x), x + 1.0)[2]
    )(fnp.array(1.0))
    assert [n.op.name for n in passes.dce(g).nodes] == ["debug_callback", "add"]
