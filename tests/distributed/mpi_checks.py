"""Checks that run on every rank of an MPI job (``tests/distributed/test_mpi.py`` starts it).

``mpirun -n N python -m mpi4py tests/distributed/mpi_checks.py [--train]``: each rank
runs every check and prints ``OK rank r`` at the end; a failed assertion aborts the job
(``python -m mpi4py``). Expected values are computed with numpy from every rank's data,
which each rank regenerates from the rank's seed.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import distributed as dist
from fgrad import lax
from fgrad.errors import DTypeError, ShapeError


def data(r: int, shape=(3, 4), dtype=np.float64) -> np.ndarray:
    """Rank ``r``'s test array (every rank can make every rank's)."""
    rng = np.random.default_rng(100 + r)
    x = rng.normal(size=shape) * 4
    return x.astype(dtype) if np.dtype(dtype).kind != "c" else (x + 1j * rng.normal(size=shape)).astype(dtype)


def check_collectives(g) -> None:
    n, r = g.size, g.rank
    for dtype in (np.float64, np.float32, np.int32, np.int64, np.complex128, np.float16):
        xs = [data(k, dtype=dtype) for k in range(n)]
        want = np.sum(np.stack(xs).astype(np.float64 if dtype == np.float16 else dtype), axis=0).astype(dtype)
        got = dist.all_sum(xs[r])
        assert got.dtype == dtype and got.shape == (3, 4)
        np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == np.float16 else 1e-6)
        buf = xs[r].copy()
        assert dist.all_sum(buf, inplace=True) is buf
        np.testing.assert_allclose(buf, want, rtol=1e-3 if dtype == np.float16 else 1e-6)
        np.testing.assert_array_equal(dist.all_gather(xs[r]), np.stack(xs))
        if np.dtype(dtype).kind != "c":
            np.testing.assert_array_equal(dist.all_max(xs[r]), np.max(np.stack(xs), axis=0))
    xs = [data(k) for k in range(n)]
    np.testing.assert_allclose(dist.all_mean(xs[r]), np.mean(np.stack(xs), axis=0), rtol=1e-12)
    # Tensors (also 0-d and non-contiguous), through the ops.
    t = dist.all_sum(fnp.asarray(xs[r]).T)
    assert isinstance(t, fgrad.Tensor)
    np.testing.assert_allclose(t, np.sum(np.stack(xs), axis=0).T, rtol=1e-12)
    np.testing.assert_allclose(dist.all_sum(fnp.asarray(float(r))), n * (n - 1) / 2)
    np.testing.assert_allclose(dist.all_gather(fnp.asarray(xs[r])), np.stack(xs))
    np.testing.assert_allclose(dist.all_max(fnp.asarray(xs[r])), np.max(np.stack(xs), axis=0))
    for root in range(n):
        np.testing.assert_array_equal(dist.broadcast(xs[r], root), xs[root])
        np.testing.assert_array_equal(dist.broadcast(fnp.asarray(xs[r]), root=root), xs[root])
    dist.barrier()
    # average_gradients / broadcast_params over mixed dtypes and small buckets.
    tree_ = {"a": fnp.asarray(xs[r]), "b": fnp.asarray(xs[r][0].astype(np.float32)), "c": xs[r][1]}
    for bucket in (8, 64, 1 << 20):
        mean = dist.average_gradients(tree_, bucket_bytes=bucket)
        np.testing.assert_allclose(mean["a"], np.mean(np.stack(xs), axis=0), rtol=1e-12)
        np.testing.assert_allclose(mean["b"], np.mean(np.stack(xs), axis=0)[0], rtol=1e-5)
        assert mean["b"].dtype == np.float32 and isinstance(mean["c"], np.ndarray)
    jitted = fgrad.jit(lambda t: dist.average_gradients(t, bucket_bytes=64))
    np.testing.assert_allclose(jitted(tree_)["a"], np.mean(np.stack(xs), axis=0), rtol=1e-12)
    params = dist.broadcast_params(tree_, root=n - 1)
    np.testing.assert_array_equal(params["a"], xs[n - 1])


def _collective_fn(x):
    """A function of one member's ``x`` (shape ``(3,)``) that uses every named collective."""
    i = lax.axis_index("d").astype(x.dtype)
    total = lax.psum(x * x, "d")
    mean = lax.pmean(fnp.sin(x), "d")
    big = lax.pmax(x, "d")
    gathered = lax.all_gather(x, "d")  # (size, 3)
    tiled = lax.all_gather(x, "d", axis=0, tiled=True)  # (size * 3,)
    return fnp.sum(total * mean) + fnp.sum(big * x) + fnp.sum(gathered[0] * x) * (i + 1) + fnp.sum(tiled ** 2) * 0.1


def check_named_axes(g) -> None:
    """The same function under vmap over the stacked data and under spmd across ranks."""
    n, r = g.size, g.rank
    xs = np.stack([data(k, shape=(3,)) for k in range(n)])
    under_vmap = fgrad.vmap(_collective_fn, axis_name="d")(fnp.asarray(xs))
    across = dist.spmd(_collective_fn, axis_name="d")(fnp.asarray(xs[r]))
    np.testing.assert_allclose(across, under_vmap[r], rtol=1e-12)
    np.testing.assert_allclose(fgrad.jit(dist.spmd(_collective_fn, "d"))(fnp.asarray(xs[r])), under_vmap[r], rtol=1e-12)
    np.testing.assert_allclose(dist.spmd(fgrad.jit(_collective_fn), "d")(fnp.asarray(xs[r])), under_vmap[r], rtol=1e-12)
    np.testing.assert_allclose(
        dist.spmd(lambda x: lax.psum(x, "d"), "d")(fnp.asarray(xs[r])), xs.sum(axis=0), rtol=1e-12
    )

    # Gradients: on each member, the derivative of the sum over members (the module's
    # convention), equal under vmap and across ranks, and against finite differences.
    grad_vmap = fgrad.grad(lambda X: fnp.sum(fgrad.vmap(_collective_fn, axis_name="d")(X)))(fnp.asarray(xs))
    per_member = fgrad.vmap(fgrad.grad(_collective_fn), axis_name="d")(fnp.asarray(xs))
    grad_ranks = dist.spmd(fgrad.grad(_collective_fn), "d")(fnp.asarray(xs[r]))
    grad_jit = fgrad.jit(dist.spmd(fgrad.grad(_collective_fn), "d"))(fnp.asarray(xs[r]))
    np.testing.assert_allclose(per_member, grad_vmap, rtol=1e-10)
    np.testing.assert_allclose(grad_ranks, grad_vmap[r], rtol=1e-10)
    np.testing.assert_allclose(grad_jit, grad_vmap[r], rtol=1e-10)
    u = np.random.default_rng(7 + r).normal(size=3)  # each rank its own direction
    eps = 1e-6

    def total(x):  # F = sum over ranks of f(x_r)
        return float(dist.all_sum(dist.spmd(_collective_fn, "d")(fnp.asarray(x))))

    fd = (total(xs[r] + eps * u) - total(xs[r] - eps * u)) / (2 * eps)
    ad = float(dist.all_sum(fnp.asarray(np.dot(np.asarray(grad_ranks), u))))
    assert abs(fd - ad) <= 1e-6 * max(1.0, abs(ad)), (fd, ad)
    # Forward mode agrees with reverse (<J u, 1> == <J^T 1, u> summed over ranks).
    _, tangent = fgrad.jvp(dist.spmd(_collective_fn, "d"), (fnp.asarray(xs[r]),), (fnp.asarray(u),))
    np.testing.assert_allclose(float(dist.all_sum(tangent)), ad, rtol=1e-9)
    # Second order through psum: the Hessian-vector product of sum_r psum(x_r^3 ...).
    f2 = lambda x: fnp.sum(lax.psum(x ** 3, "d") * x)
    hv = dist.spmd(lambda x: fgrad.jvp(fgrad.grad(f2), (x,), (fnp.asarray(u),))[1], "d")(fnp.asarray(xs[r]))
    hv_vmap = fgrad.jvp(
        fgrad.grad(lambda X: fnp.sum(fgrad.vmap(f2, axis_name="d")(X))),
        (fnp.asarray(xs),),
        (fnp.asarray(np.stack([np.random.default_rng(7 + k).normal(size=3) for k in range(n)])),),
    )[1]
    np.testing.assert_allclose(hv, hv_vmap[r], rtol=1e-10)


def check_mismatches(g) -> None:
    """A collective with different shapes or dtypes raises on every rank, naming both."""
    n, r = g.size, g.rank
    cases = [
        (lambda: dist.all_sum(np.ones(3 + r)), ShapeError, [f"rank {k}: all_sum of float64[{3 + k}]" for k in range(n)]),
        (lambda: dist.all_sum(np.ones(3, dtype=np.float32 if r else np.float64)), DTypeError, ["float32[3]", "float64[3]"]),
        (lambda: dist.all_gather(fnp.ones((2, 1 + r))), ShapeError, ["float64[2, 1]", "float64[2, 2]"]),
        (lambda: dist.broadcast(np.ones(2 + r), root=0), ShapeError, ["broadcast", "root 0"]),
        (lambda: dist.average_gradients({"w": fnp.ones(2 + r)}), ShapeError, ["float64[2]", "float64[3]", "rank 1"]),
        (lambda: dist.spmd(lambda x: lax.psum(x, "d"), "d")(fnp.ones((r + 1, 2))), ShapeError, ["float64[1, 2]", "float64[2, 2]"]),
    ]
    for k, (call, kind, pieces) in enumerate(cases):
        try:
            call()
        except kind as err:
            msg = str(err)
            assert all(p in msg for p in pieces), (k, msg)
        else:
            raise AssertionError(f"case {k}: no {kind.__name__} on rank {r}")
    # The group still works afterwards: the check kept the ranks in step.
    np.testing.assert_allclose(dist.all_sum(np.ones(2)), np.full(2, n))


def check_training(g) -> None:
    """N ranks with batch B per rank give the parameters of 1 process with batch N * B."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    import data_parallel
    from fgrad import nn, optim

    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 16)).astype(np.float32)
    y = (x[:, :4].sum(axis=1) > 0).astype(np.int64) + 2 * (x[:, 4] > 0)
    model = nn.MLP((16, 32, 4), activation=nn.relu)
    b = 8
    for name, opt in (("sgd", optim.sgd(0.1, momentum=0.9)), ("adamw", optim.adamw(3e-3, weight_decay=1e-2))):
        params, losses, _ = data_parallel.train(model, opt, (x, y), batch_size=b, steps=50, seed=3, group=g)
        ref, ref_losses, _ = data_parallel.train(
            model, opt, (x, y), batch_size=b * g.size, steps=50, seed=3, group=dist.LocalGroup()
        )
        for p, q in zip(fgrad.tree.leaves(params), fgrad.tree.leaves(ref)):
            np.testing.assert_allclose(p, q, rtol=2e-4, atol=2e-5, err_msg=name)
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-4, err_msg=name)
        assert losses[-1] < losses[0], (name, losses[0], losses[-1])
        # Every rank holds the same parameters, bit for bit.
        for p in fgrad.tree.leaves(params):
            np.testing.assert_array_equal(dist.broadcast(p, root=0), p)


def main() -> None:
    g = dist.init()
    want = int(sys.argv[sys.argv.index("--size") + 1]) if "--size" in sys.argv else None
    assert want is None or g.size == want, (g.size, want)
    assert g.size > 1, "run under mpirun -n 2 or more"
    check_collectives(g)
    check_named_axes(g)
    check_mismatches(g)
    if "--train" in sys.argv:
        check_training(g)
    print(f"OK rank {g.rank} of {g.size}", flush=True)


if __name__ == "__main__":
    main()
