"""Every transform normalises argnums the same way (one normaliser, as JAX's)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def _f(x, y):
    return fnp.sum(x * y)


X, Y = fnp.ones(2), fnp.arange(2.0)


@pytest.mark.parametrize("transform", [fgrad.grad, fgrad.jacrev, fgrad.jacfwd])
def test_issue_11_numpy_integer_argnums(transform):
    """``argnums=np.int64(1)`` is one position (it raised 'not iterable' in grad)."""
    got = transform(_f, argnums=np.int64(1))(X, Y)
    np.testing.assert_array_equal(np.asarray(got), [1.0, 1.0])
    pair = transform(_f, argnums=(np.int64(0), 1))(X, Y)
    assert isinstance(pair, tuple) and len(pair) == 2


def test_value_and_grad_and_hessian_take_numpy_integers():
    value, g = fgrad.value_and_grad(_f, argnums=np.int32(0))(X, Y)
    assert float(value) == 1.0
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0])
    h = fgrad.hessian(lambda x, y: fnp.sum(x * x * y), argnums=np.int64(0))(X, Y)
    np.testing.assert_array_equal(np.asarray(h), np.diag([0.0, 2.0]))


@pytest.mark.parametrize("bad", ["x", True, 1.0])
def test_argnums_of_the_wrong_type_are_named(bad):
    with pytest.raises(TypeError, match="grad: argnums takes positions"):
        fgrad.grad(_f, argnums=bad)(X, Y)


def test_custom_vjp_nondiff_argnums_take_numpy_integers():
    f = fgrad.custom_vjp(lambda n, x: x * n, nondiff_argnums=np.int64(0))
    f.defvjp(lambda n, x: (x * n, None), lambda n, res, ct: (ct * n,))
    assert float(fgrad.grad(f, argnums=1)(3.0, 2.0)) == 3.0


@pytest.mark.parametrize(
    "name",
    ["grad", "value_and_grad", "vmap", "jacrev", "jacfwd", "hessian", "make_graph",
     "checkpoint", "custom_vjp", "custom_jvp", "jit"],
)
def test_issue_12_transforms_of_non_callables_name_themselves(name):
    with pytest.raises(TypeError, match=f"{name}: expected a function"):
        getattr(fgrad, name)(3)


@pytest.mark.parametrize("call", [
    lambda: fgrad.vjp(3, X), lambda: fgrad.jvp(3, (X,), (X,)), lambda: fgrad.eval_shape(3, X),
    lambda: fgrad.linearize(3, X), lambda: fgrad.hvp(3, (X,), (X,)),
])
def test_issue_12_immediate_transforms_of_non_callables(call):
    with pytest.raises(TypeError, match="expected a function"):
        call()


def test_issue_12_forgetting_has_aux_is_explained():
    with pytest.raises(TypeError, match="has_aux=True"):
        fgrad.grad(lambda x: (fnp.sum(x), {"n": 1}))(X)
