"""fgrad.distributed on one process (the size-1 group, no mpirun) and the named-axis
collectives of fgrad.lax under vmap; the multi-rank checks are in test_mpi.py."""

from __future__ import annotations

import types

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import distributed as dist
from fgrad import lax
from fgrad.errors import DTypeError
from fgrad.test_util import check_grads


def test_init_is_idempotent_and_gives_the_group_of_one():
    g = dist.init()
    assert dist.init() is g
    assert (g.rank, g.size) == (0, 1) and (dist.rank(), dist.size()) == (0, 1)
    with pytest.raises(ValueError, match="backend must be"):
        dist.init(backend="tcp")


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "complex128"])
def test_collectives_of_one_process_return_the_input(dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    for fn in (dist.all_sum, dist.broadcast):
        out = fn(x)
        np.testing.assert_array_equal(out, x)
        assert out is not x and out.dtype == x.dtype  # a new array
    np.testing.assert_array_equal(dist.all_gather(x), x[None])
    t = dist.all_sum(fnp.asarray(x))
    assert isinstance(t, fgrad.Tensor) and t.dtype == x.dtype
    buf = x.copy()
    assert dist.all_sum(buf, inplace=True) is buf


def test_collective_errors_name_the_function():
    with pytest.raises(TypeError, match="all_sum: inplace=True needs a numpy or cupy array"):
        dist.all_sum(fnp.ones(2), inplace=True)
    with pytest.raises(DTypeError, match="all_sum: bool input"):
        dist.all_sum(fnp.ones(2) > 0)
    with pytest.raises(DTypeError, match="all_max"):
        dist.all_max(np.ones(2, dtype=complex))
    with pytest.raises(ValueError, match=r"broadcast: root must be a rank in \[0, 1\), got 1"):
        dist.broadcast(np.ones(2), root=1)
    with pytest.raises(TypeError, match="broadcast: got a traced value"):
        fgrad.grad(lambda x: fnp.sum(dist.broadcast(x)))(fnp.ones(2))
    with pytest.raises(ValueError, match="bucket_bytes must be a positive int"):
        dist.average_gradients({"w": fnp.ones(2)}, bucket_bytes=0)
    with pytest.raises(DTypeError, match="average_gradients: leaf 0"):
        dist.average_gradients([fnp.arange(3)])


def test_tensor_collectives_are_differentiable_and_jit():
    x = fnp.array([1.0, -2.0, 3.0])
    check_grads(lambda x: dist.all_sum(x) ** 2, (x,), order=2)
    check_grads(lambda x: dist.all_max(x) * x, (x,), order=2)
    check_grads(lambda x: dist.all_gather(x) * 2.0, (x,), order=1)
    np.testing.assert_allclose(fgrad.jit(lambda x: dist.all_mean(x) + 1)(x), [2.0, -1.0, 4.0])


def test_average_gradients_keeps_the_tree_and_buckets_deterministically():
    grads = {"b": fnp.ones(3, dtype="float32"), "a": fnp.full((2, 2), 2.0), "c": np.ones(5)}
    out = dist.average_gradients(grads, bucket_bytes=16)
    assert fgrad.tree.structure(out) == fgrad.tree.structure(grads)
    assert out["b"].dtype == np.float32 and isinstance(out["c"], np.ndarray)
    np.testing.assert_array_equal(out["a"], grads["a"])
    leaves = fgrad.tree.leaves(grads)  # a (f64, 32 B), b (f32, 12 B), c (f64, 40 B)
    # dtypes in name order, leaves in tree order, a bucket closes past 16 bytes
    assert dist._buckets(leaves, 16) == [[1], [0], [2]]
    assert dist._buckets(leaves, 1 << 20) == [[1], [0, 2]]
    traced = fgrad.jit(lambda g: dist.average_gradients(g, bucket_bytes=16))(grads)
    np.testing.assert_array_equal(traced["c"], grads["c"])


def test_broadcast_params_of_one_process():
    params = {"w": fnp.ones((2, 3)), "n": fnp.arange(3)}
    out = dist.broadcast_params(params)
    np.testing.assert_array_equal(out["n"], params["n"])
    assert out["n"].dtype == params["n"].dtype


def test_sharded_loader_gives_each_rank_its_share_of_every_global_batch():
    x = np.arange(20)
    parts = [
        list(dist.ShardedLoader(x, 3, seed=5, group=types.SimpleNamespace(rank=r, size=2)).epoch(1))
        for r in range(2)
    ]
    whole = list(dist.ShardedLoader(x, 6, seed=5, group=types.SimpleNamespace(rank=0, size=1)).epoch(1))
    assert len(parts[0]) == len(parts[1]) == len(whole) == 3
    for k in range(3):
        both = np.concatenate([np.asarray(parts[0][k]), np.asarray(parts[1][k])])
        assert sorted(both.tolist()) == sorted(np.asarray(whole[k]).tolist())
    with pytest.raises(ValueError, match="no global batch"):
        dist.ShardedLoader(x, 11, group=types.SimpleNamespace(rank=0, size=2))
    with pytest.raises(ValueError, match="same leading length"):
        dist.ShardedLoader((x, x[:3]), 2)


# ------------------------------------------------------------------------ named axes


XS = np.random.default_rng(0).normal(size=(4, 3))


def test_named_collectives_under_vmap_match_numpy():
    def f(x):
        return (
            lax.psum(x, "i"),
            lax.pmean(x, "i"),
            lax.pmax(x, "i"),
            lax.pmin(x, "i"),
            lax.all_gather(x, "i"),
            lax.all_gather(x, "i", axis=1),
            lax.all_gather(x, "i", tiled=True),
            lax.axis_index("i"),
            lax.psum(1, "i"),
        )

    for fn in (fgrad.vmap(f, axis_name="i"), fgrad.jit(fgrad.vmap(f, axis_name="i"))):
        s, m, hi, lo, g0, g1, gt, idx, n = fn(fnp.asarray(XS))
        rows = lambda v: np.broadcast_to(v, (4, *np.shape(v)))
        np.testing.assert_allclose(s, rows(XS.sum(0)))
        np.testing.assert_allclose(m, rows(XS.mean(0)))
        np.testing.assert_allclose(hi, rows(XS.max(0)))
        np.testing.assert_allclose(lo, rows(XS.min(0)))
        np.testing.assert_allclose(g0, rows(XS))
        np.testing.assert_allclose(g1, rows(XS.T))
        np.testing.assert_allclose(gt, rows(XS.reshape(-1)))
        np.testing.assert_array_equal(idx, np.arange(4))
        assert idx.dtype == np.int32
        np.testing.assert_array_equal(n, [4] * 4)


def test_vmap_without_axis_name_is_unchanged():
    f = fgrad.vmap(lambda x: fnp.sum(x ** 2))
    np.testing.assert_allclose(f(fnp.asarray(XS)), (XS ** 2).sum(1))
    with pytest.raises(NameError, match="psum: unbound axis name 'i'"):
        fgrad.vmap(lambda x: lax.psum(x, "i"))(fnp.asarray(XS))
    with pytest.raises(TypeError, match="axis_name must be hashable"):
        fgrad.vmap(lambda x: x, axis_name=["i"])


def _loss(w, x):
    """A per-example loss that mixes the examples through every collective."""
    z = fnp.tanh(x * w)
    return (
        fnp.sum(z * lax.pmean(z, "i"))
        + fnp.sum(lax.pmax(z ** 2, "i"))
        + fnp.sum(lax.all_gather(z, "i")[-1] * z)
        + fnp.sum(z) * lax.axis_index("i").astype(z.dtype)
    )


def test_gradients_of_collectives_match_finite_differences():
    w = fnp.array([0.3, -0.7, 1.1])

    def total(w, xs):  # the sum over examples of the per-example loss
        return fnp.sum(fgrad.vmap(_loss, in_axes=(None, 0), axis_name="i")(w, xs))

    check_grads(total, (w, fnp.asarray(XS)), order=2)
    # vmap(grad): each example's gradient of that sum (psum transposes to psum); they
    # add up to grad of the sum, with respect to the shared w.
    per_example = fgrad.vmap(fgrad.grad(_loss), in_axes=(None, 0), axis_name="i")(w, fnp.asarray(XS))
    np.testing.assert_allclose(fnp.sum(per_example, axis=0), fgrad.grad(total)(w, fnp.asarray(XS)), rtol=1e-12)
    per_x = fgrad.vmap(fgrad.grad(_loss, argnums=1), in_axes=(None, 0), axis_name="i")(w, fnp.asarray(XS))
    np.testing.assert_allclose(per_x, fgrad.grad(total, argnums=1)(w, fnp.asarray(XS)), rtol=1e-12)
    jitted = fgrad.jit(fgrad.vmap(fgrad.grad(_loss, argnums=1), in_axes=(None, 0), axis_name="i"))
    np.testing.assert_allclose(jitted(w, fnp.asarray(XS)), per_x, rtol=1e-12)
    inner_jit = fgrad.vmap(fgrad.jit(fgrad.grad(_loss, argnums=1)), in_axes=(None, 0), axis_name="i")
    np.testing.assert_allclose(inner_jit(w, fnp.asarray(XS)), per_x, rtol=1e-12)


def test_nested_named_axes_reduce_over_their_own_axis():
    x = fnp.asarray(np.arange(6.0).reshape(2, 3))
    inner = fgrad.vmap(fgrad.vmap(lambda v: lax.psum(v, "j"), axis_name="j"), axis_name="i")(x)
    outer = fgrad.vmap(fgrad.vmap(lambda v: lax.psum(v, "i")), axis_name="i")(x)
    both = fgrad.vmap(fgrad.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")(x)
    np.testing.assert_allclose(inner, [[3.0] * 3, [12.0] * 3])
    np.testing.assert_allclose(outer, [[3.0, 5.0, 7.0]] * 2)
    np.testing.assert_allclose(both, np.full((2, 3), 15.0))


def test_the_same_function_under_spmd_of_one_process_and_vmap_of_one_example():
    f = lambda x: _loss(fnp.array([0.3, -0.7, 1.1]), x)
    x = fnp.asarray(XS[0])
    want = fgrad.vmap(f, axis_name="i")(x[None])[0]
    np.testing.assert_allclose(dist.spmd(f, axis_name="i")(x), want, rtol=1e-12)
    np.testing.assert_allclose(fgrad.jit(dist.spmd(f, axis_name="i"))(x), want, rtol=1e-12)
    g = fgrad.vmap(fgrad.grad(f), axis_name="i")(x[None])[0]
    np.testing.assert_allclose(dist.spmd(fgrad.grad(f), axis_name="i")(x), g, rtol=1e-12)
