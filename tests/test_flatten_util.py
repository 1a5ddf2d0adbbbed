"""fgrad.flatten_util.ravel_pytree: the flat vector and its inverse, with mixed dtypes,
under grad (both directions), jit and vmap; the shapes and dtypes are JAX's where its
promotion agrees with numpy's (checked with jax 0.10.2), numpy 2's elsewhere."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.flatten_util import ravel_pytree
from fgrad.test_util import check_grads


def _params():
    return {"w": fnp.asarray(np.arange(6.0).reshape(2, 3)), "b": fnp.array([-1.0, 0.5])}


def test_flat_is_the_leaves_in_flatten_order():
    flat, unravel = ravel_pytree(_params())
    np.testing.assert_array_equal(np.asarray(flat), [-1.0, 0.5, 0, 1, 2, 3, 4, 5])
    back = unravel(flat)
    assert set(back) == {"w", "b"}
    np.testing.assert_array_equal(np.asarray(back["w"]), np.arange(6.0).reshape(2, 3))


def test_round_trip_with_mixed_dtypes():
    tree = {
        "f32": fnp.ones(2, dtype="float32"),
        "i32": fnp.array([1, 2, 3], dtype="int32"),
        "flag": fnp.array([True, False]),
        "n": (fnp.array(4, dtype="int8"),),
    }
    flat, unravel = ravel_pytree(tree)
    # numpy 2 promotes float32 with int32 to float64 (JAX's lattice: float32).
    assert flat.shape == (8,) and flat.dtype == np.result_type(np.float32, np.int32, np.int8, bool)
    back = unravel(flat)
    for key in ("f32", "i32", "flag"):
        assert back[key].dtype == tree[key].dtype
        np.testing.assert_array_equal(np.asarray(back[key]), np.asarray(tree[key]))
    assert back["n"][0].dtype == np.int8 and int(back["n"][0]) == 4


def test_same_kind_promotion_and_weak_scalars_as_jax():
    # jax: ravel_pytree({"a": float32[2], "c": 2.0})[0].dtype == float32 (2.0 is weak).
    flat, unravel = ravel_pytree({"a": fnp.ones(2, dtype="float32"), "c": 2.0})
    assert flat.dtype == np.float32
    assert float(unravel(flat)["c"]) == 2.0
    # jax: int32 with int8 gives int32.
    assert ravel_pytree([fnp.ones(2, dtype="int32"), fnp.ones(1, dtype="int8")])[0].dtype == np.int32


def test_empty_tree():
    flat, unravel = ravel_pytree({"a": None, "b": []})
    assert flat.shape == (0,)
    assert unravel(flat) == {"a": None, "b": []}


def test_unravel_checks_its_input():
    flat, unravel = ravel_pytree(_params())
    with pytest.raises(ValueError, match=r"expected a 1-d array of shape \(8,\).*got shape \(3,\)"):
        unravel(fnp.ones(3))
    with pytest.warns(UserWarning, match="dtype float32, expected float64; casting"):
        back = unravel(flat.astype("float32"))
    assert back["w"].dtype == np.float64


def test_gradients_through_ravel_and_unravel():
    flat, unravel = ravel_pytree(_params())

    def through_unravel(v):
        p = unravel(v)
        return fnp.sum(fnp.sin(p["w"]) @ fnp.ones(3)) + fnp.sum(p["b"] ** 3)

    check_grads(through_unravel, (flat,), order=2, modes=("rev", "fwd"))
    g = fgrad.grad(through_unravel)(flat)
    v = np.asarray(flat)
    np.testing.assert_allclose(np.asarray(g), np.concatenate([3 * v[:2] ** 2, np.cos(v[2:])]), rtol=1e-14)

    def through_ravel(p):
        f, _ = ravel_pytree(p)
        return fnp.sum(f * fnp.arange(8.0))

    grads = fgrad.grad(through_ravel)(_params())
    np.testing.assert_array_equal(np.asarray(grads["b"]), [0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(grads["w"]), np.arange(2.0, 8.0).reshape(2, 3))


def test_under_jit_and_vmap():
    flat, unravel = ravel_pytree(_params())
    np.testing.assert_array_equal(np.asarray(fgrad.jit(lambda p: ravel_pytree(p)[0])(_params())), np.asarray(flat))
    np.testing.assert_array_equal(np.asarray(fgrad.jit(unravel)(flat)["w"]), np.asarray(_params()["w"]))
    batch = {"w": fnp.ones((4, 2, 3)), "b": fnp.zeros((4, 2))}
    flats = fgrad.vmap(lambda p: ravel_pytree(p)[0])(batch)
    assert flats.shape == (4, 8)
    np.testing.assert_array_equal(np.asarray(flats), np.tile([0, 0, 1, 1, 1, 1, 1, 1.0], (4, 1)))
    back = fgrad.vmap(unravel)(flats)
    assert back["w"].shape == (4, 2, 3)
    np.testing.assert_array_equal(np.asarray(back["w"]), np.ones((4, 2, 3)))
