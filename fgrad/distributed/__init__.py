"""Data-parallel training across processes and machines, over MPI (mpi4py) and NCCL.

Run one process per device with an MPI launcher (``mpirun -n 4 python -m mpi4py train.py``
or Slurm's ``srun``); each process calls the same code. ``init()`` joins the group (it is
idempotent, and called by every function here); without an MPI launcher, or without
mpi4py installed, the group is this process alone, so the same script runs unchanged on
one process. ``docs/distributed.md`` is the guide.

* Collectives on Tensors and on numpy/cupy arrays: :func:`all_sum`, :func:`all_mean`,
  :func:`all_max`, :func:`all_gather`, :func:`broadcast`, :func:`barrier`. On Tensors the
  reductions are ops (differentiable, recorded by ``jit``); on numpy arrays they pass the
  buffer to MPI (no pickling) and, with ``inplace=True``, reduce into it.
* :func:`spmd`: binds an axis name to the processes, so ``fgrad.lax.psum(x, "data")`` and
  the other named collectives reduce across ranks; the same function runs under
  ``fgrad.vmap(f, axis_name="data")`` on one process.
* :func:`average_gradients` (one collective per bucket of same-dtype leaves, Horovod's
  tensor fusion), :func:`broadcast_params`, and :class:`ShardedLoader`.

Every rank must call the same collectives in the same order on arrays of the same shapes
and dtypes; by default a small header exchange checks that first and raises on every
rank, naming each rank's shape and dtype (``init(check=False)`` skips it).

References: MPI 4.0 standard (https://www.mpi-forum.org/docs/); mpi4py
(https://mpi4py.readthedocs.io); JAX's pmap/psum semantics; Sergeev and Del Balso,
"Horovod: fast and easy distributed deep learning in TensorFlow", 2018, arXiv:1802.05799
(tensor fusion).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fgrad import _args, backend, tree
from fgrad.core.trace import Tracer
from fgrad.distributed._comm import Group, LocalGroup, MPIGroup, describe
from fgrad.errors import DTypeError
from fgrad.lax import _collectives
from fgrad.tensor import Tensor, as_tensor, asarray
from fgrad.transforms import batching

__all__ = [
    "Group",
    "LocalGroup",
    "ShardedLoader",
    "all_gather",
    "all_max",
    "all_mean",
    "all_sum",
    "average_gradients",
    "barrier",
    "broadcast",
    "broadcast_params",
    "init",
    "rank",
    "size",
    "spmd",
]


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)

_WORLD: Group | None = None
# Environment variables that MPI launchers set in the processes they start: Open MPI,
# PMIx (Open MPI 5, Slurm's srun --mpi=pmix), MPICH's hydra and Intel MPI (PMI).
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")
DEFAULT_BUCKET_BYTES = 25 * 2**20  # PyTorch DDP's default bucket; Horovod fuses up to 64 MiB


def init(*, backend: str = "auto", check: bool | None = None, gpu: str = "nccl") -> Group:
    """Join the group of processes (idempotent): the group of this process alone without MPI.

    Args:
        backend: ``"auto"`` uses MPI when mpi4py is importable and the process was started
            by an MPI launcher (or mpi4py's MPI is already loaded, as under
            ``python -m mpi4py``), else the group of one; ``"mpi"`` forces MPI (an
            ``MPI_Init`` of a singleton outside a launcher); ``"local"`` forces one process.
        check: compare shapes and dtypes across ranks before each collective (default
            True, or the ``FGRAD_DISTRIBUTED_CHECK`` environment variable, ``0`` to skip).
        gpu: how cupy arrays are reduced: ``"nccl"`` (cupy's NCCL bindings) or ``"mpi"``
            (a CUDA-aware MPI given device buffers).

    Returns:
        The world :class:`Group` (``.rank``, ``.size``, ``.check``, which may be set
        later). A later call returns the same group; giving other settings then raises.

    Raises:
        ValueError: an unknown ``backend`` or ``gpu``, or settings that differ from those
            of the group already made.
        DTypeError: ``backend`` or ``gpu`` is not a string, ``check`` not a bool or None.
        ImportError: ``backend="mpi"`` and mpi4py is not installed
            (``pip install "fgrad[distributed]"``).

    Example:
        >>> group = fgrad.distributed.init()
        >>> (group.rank, group.size)  # one process, not started by mpirun
        (0, 1)
    """
    global _WORLD
    backend = _args.choice(backend, "init", "backend", ("auto", "mpi", "local"))
    if check is not None:
        check = _args.flag(check, "init", "check")
    gpu = _args.choice(gpu, "init", "gpu", ("nccl", "mpi"))
    if _WORLD is not None:
        kind = "local" if isinstance(_WORLD, LocalGroup) else "mpi"
        if (backend not in ("auto", kind)) or (check is not None and check != _WORLD.check):
            raise ValueError(
                f"init: the group is already made ({kind}, check={_WORLD.check}); it cannot "
                f"change to backend={backend!r}, check={check}"
            )
        return _WORLD
    if check is None:
        check = os.environ.get("FGRAD_DISTRIBUTED_CHECK", "1") not in ("0", "false", "False")
    if backend == "auto":
        launched = any(v in os.environ for v in _LAUNCHER_VARS) or "mpi4py.MPI" in sys.modules
        backend = "mpi" if launched and _has_mpi4py() else "local"
    if backend == "local":
        _WORLD = LocalGroup(check)
    else:
        from mpi4py import MPI

        _WORLD = MPIGroup(MPI.COMM_WORLD, check=check, gpu=gpu)
    return _WORLD


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _check_group(group: Any, name: str, *, duck: bool = False) -> Any:
    """``group`` itself when it is a :class:`Group` or None (the world's, made later).

    With ``duck``, any object with int ``rank`` and ``size`` (``0 <= rank < size``) will
    do, as :class:`ShardedLoader` reads only those.
    """
    if group is None or isinstance(group, Group):
        return group
    if duck:
        r, n = getattr(group, "rank", None), getattr(group, "size", None)
        if type(r) is int and type(n) is int and 0 <= r < n:
            return group
        raise TypeError(
            f"{name}: group must be a fgrad.distributed.Group (init() returns the world's) or "
            f"an object with int rank and size, 0 <= rank < size; got {_args.describe(group)}"
        )
    raise TypeError(
        f"{name}: group must be a fgrad.distributed.Group (init() returns the world's) or "
        f"None for the world's, got {_args.describe(group)}"
    )


def _group(group: Any, name: str, *, duck: bool = False) -> Group:
    """The group a function runs on: ``group`` checked, or the world's for None."""
    group = _check_group(group, name, duck=duck)
    return init() if group is None else group


def _root(root: Any, g: Group, name: str) -> int:
    """``root`` as a Python int rank of ``g``."""
    r = _args.index(root, name, "root", what=f"a rank (an int in [0, {g.size}))")
    if not 0 <= r < g.size:
        raise ValueError(f"{name}: root must be a rank in [0, {g.size}), got {root!r}")
    return r


def _raw_numeric(name: str, x: Any) -> None:
    """Refuse a numpy/cupy array that holds no numbers (strings, objects, dates)."""
    if not _args.is_numeric(np.dtype(x.dtype)):
        raise DTypeError(
            f"{name}: x is {describe(x)}, not numeric; pass numbers (bool, integer, floating "
            "or complex)"
        )


def rank(group: Group | None = None) -> int:
    """This process' rank in ``[0, size())``.

    Example:
        >>> fgrad.distributed.rank()
        0
    """
    return _group(group, "rank").rank


def size(group: Group | None = None) -> int:
    """The number of processes in the group.

    Example:
        >>> fgrad.distributed.size()
        1
    """
    return _group(group, "size").size


# ------------------------------------------------------------------------ collectives


def _raw(x: Any) -> bool:
    return not isinstance(x, Tensor) and hasattr(x, "shape") and hasattr(x, "dtype")


def _world_params(g: Group) -> dict:
    return {"axis_name": None, "axis_size": g.size, "group": g}


def _reduce(name: str, op: Any, x: Any, group: Group | None, inplace: Any, kinds: str) -> Any:
    g = _group(group, name)
    inplace = _args.flag(inplace, name, "inplace")
    if _raw(x):
        if np.dtype(x.dtype).kind not in kinds:
            raise DTypeError(f"{name}: cannot reduce {describe(x)}; cast it first")
        return g.all_sum(x, inplace) if op is _collectives.psum_op else g.all_max(x, inplace)
    if inplace:
        raise TypeError(f"{name}: inplace=True needs a numpy or cupy array; a Tensor never changes")
    x = _collectives._leaf(name, x, kinds)
    return op(x, **_world_params(g))


def all_sum(x: Any, *, group: Group | None = None, inplace: bool = False) -> Any:
    """Elementwise sum over the ranks of ``x``, on every rank (``MPI_Allreduce``).

    Args:
        x: a numeric Tensor (differentiable: its VJP is ``all_sum`` of the cotangent) or a
            numpy/cupy array, of the same shape and dtype on every rank.
        group: the group; the world's by default.
        inplace: (arrays only) reduce into ``x`` itself (``MPI_IN_PLACE``) and return it;
            ``x`` must be C-contiguous and writable.

    Returns:
        A Tensor for a Tensor, an array for an array, of ``x``'s shape and dtype.

    Raises:
        ShapeError, DTypeError: the ranks passed different shapes or dtypes (raised on
            every rank, naming each rank's; with the check on); ``x`` is bool or not numeric.
        TypeError: ``inplace`` with a Tensor.

    Example:
        >>> fgrad.distributed.all_sum(fnp.array([1.0, 2.0]))  # the sum over 1 rank
        Tensor([1., 2.], dtype=float64)
    """
    return _reduce("all_sum", _collectives.psum_op, x, group, inplace, "iufc")


def all_mean(x: Any, *, group: Group | None = None, inplace: bool = False) -> Any:
    """Elementwise mean over the ranks of ``x``: ``all_sum(x) / size``.

    Args:
        x: a floating Tensor or numpy/cupy array, the same shape and dtype on every rank.
        group: the group; the world's by default.
        inplace: (arrays only) reduce into ``x`` and divide it in place.

    Returns:
        A Tensor or array of ``x``'s shape and dtype.

    Raises:
        ShapeError, DTypeError: as :func:`all_sum`; ``x`` is not floating.

    Example:
        >>> fgrad.distributed.all_mean(np.array([2.0, 4.0]))
        array([2., 4.])
    """
    g = _group(group, "all_mean")
    out = _reduce("all_mean", _collectives.psum_op, x, g, inplace, "fc")
    if _raw(out):
        out /= g.size  # a fresh array, or the caller's buffer when inplace
        return out
    return out / g.size


def all_max(x: Any, *, group: Group | None = None, inplace: bool = False) -> Any:
    """Elementwise maximum over the ranks of ``x`` (``MPI_Allreduce`` with ``MPI_MAX``).

    Args:
        x: a real (integer or floating) Tensor or numpy/cupy array.
        group: the group; the world's by default.
        inplace: (arrays only) reduce into ``x``.

    Returns:
        A Tensor or array of ``x``'s shape and dtype; on Tensors differentiable (the
        tangent of the ranks holding the maximum, averaged over ties).

    Raises:
        ShapeError, DTypeError: as :func:`all_sum`; ``x`` is bool or complex.

    Example:
        >>> fgrad.distributed.all_max(fnp.array([1.0, 5.0]))
        Tensor([1., 5.], dtype=float64)
    """
    return _reduce("all_max", _collectives.pmax_op, x, group, inplace, "iuf")


def all_gather(x: Any, *, group: Group | None = None) -> Any:
    """Every rank's ``x``, stacked in rank order along a new first axis (``MPI_Allgather``).

    Args:
        x: a numeric Tensor (differentiable) or numpy/cupy array, the same shape and
            dtype on every rank.
        group: the group; the world's by default.

    Returns:
        ``(size, *x.shape)``, a Tensor or an array as ``x``.

    Raises:
        ShapeError, DTypeError: as :func:`all_sum`.

    Example:
        >>> fgrad.distributed.all_gather(fnp.array([1.0, 2.0]))
        Tensor([[1., 2.]], dtype=float64)
    """
    g = _group(group, "all_gather")
    if _raw(x):
        _raw_numeric("all_gather", x)
        return g.all_gather(x)
    x = _collectives._leaf("all_gather", x, "iufc")
    return _collectives.all_gather_op(x, axis=0, tiled=False, **_world_params(g))


def broadcast(x: Any, root: int = 0, *, group: Group | None = None, inplace: bool = False) -> Any:
    """Rank ``root``'s ``x`` on every rank (``MPI_Bcast``).

    Args:
        x: a Tensor (concrete: not inside a transform) or numpy/cupy array; on ranks other
            than ``root`` only its shape and dtype matter, and they must match root's.
        root: the rank whose value is sent.
        group: the group; the world's by default.
        inplace: (arrays only) receive into ``x``.

    Returns:
        A Tensor or array: root's value.

    Raises:
        ValueError: ``root`` is not a rank.
        TypeError: ``x`` is traced (broadcast is not differentiated), or ``inplace`` with
            a Tensor.
        ShapeError, DTypeError: as :func:`all_sum`; ``x`` is not numeric, ``root`` not an
            int.

    Example:
        >>> fgrad.distributed.broadcast(fnp.array([1.0, 2.0]), root=0)
        Tensor([1., 2.], dtype=float64)
    """
    g = _group(group, "broadcast")
    root = _root(root, g, "broadcast")
    inplace = _args.flag(inplace, "broadcast", "inplace")
    if _raw(x):
        _raw_numeric("broadcast", x)
        return g.broadcast(x, root, inplace)
    if inplace:
        raise TypeError("broadcast: inplace=True needs a numpy or cupy array; a Tensor never changes")
    return asarray(g.broadcast(_concrete("broadcast", x), root))


def _concrete(name: str, x: Any) -> Any:
    if isinstance(x, Tracer):
        raise TypeError(
            f"{name}: got a traced value {x.aval}; call it outside grad/jit/vmap on concrete "
            "Tensors (it is not differentiated)"
        )
    return as_tensor(x, name, "x")._data


def barrier(*, group: Group | None = None) -> None:
    """Return once every rank of the group has called it (``MPI_Barrier``).

    Example:
        >>> fgrad.distributed.barrier()
    """
    _group(group, "barrier").barrier()


# ------------------------------------------------------------------------ spmd


def spmd(f: Callable, axis_name: Any = "data", *, group: Group | None = None) -> Callable:
    """Run ``f`` with ``axis_name`` bound to the processes of the group.

    Each process calls the returned function on its own data; inside ``f``,
    ``fgrad.lax.psum(x, axis_name)``, ``pmean``, ``pmax``, ``all_gather`` and
    ``axis_index`` act across the ranks (``axis_index`` is the rank). ``f`` is otherwise
    called as it is, so ``jit``, ``grad`` and ``vmap`` may go inside or around it, and a
    program ``jit`` records keeps its collectives. The same ``f`` under
    ``fgrad.vmap(f, axis_name=axis_name)`` over the stacked per-rank data gives the same
    values (JAX's pmap semantics, with the processes as the mapped axis).

    Args:
        f: a function of pytrees of Tensors.
        axis_name: the name to bind (hashable).
        group: the processes; the world's by default.

    Returns:
        A function with ``f``'s signature.

    Raises:
        TypeError: ``f`` is not callable, ``axis_name`` is not hashable, or ``group`` is
            not a :class:`Group`.

    Example:
        >>> step = fgrad.distributed.spmd(lambda x: fgrad.lax.pmean(x, "data"))
        >>> step(fnp.array([1.0, 3.0]))  # one process: its own value
        Tensor([1., 3.], dtype=float64)
    """
    if not callable(f):
        raise TypeError(f"spmd: f must be callable, got {type(f).__name__}")
    try:
        hash(axis_name)
    except TypeError:
        raise TypeError(f"spmd: axis_name must be hashable, got {type(axis_name).__name__}") from None
    _check_group(group, "spmd")

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        g = _group(group, "spmd")
        with batching.named_axis(batching.AxisFrame(axis_name, g.size, group=g)):
            return f(*args, **kwargs)

    return run


# ------------------------------------------------------------------------ gradients


def _buckets(leaves: list, bucket_bytes: int) -> list[list[int]]:
    """Leaf indices in buckets of one dtype each, at most ``bucket_bytes`` (a leaf larger
    than that is a bucket alone); dtypes in name order, leaves in tree order, so every
    rank makes the same buckets from the same tree."""
    by_dtype: dict[str, list[int]] = {}
    for i, leaf in enumerate(leaves):
        by_dtype.setdefault(np.dtype(leaf.dtype).name, []).append(i)
    out = []
    for name in sorted(by_dtype):
        bucket, nbytes = [], 0
        for i in by_dtype[name]:
            n = leaves[i].size * np.dtype(leaves[i].dtype).itemsize
            if bucket and nbytes + n > bucket_bytes:
                out.append(bucket)
                bucket, nbytes = [], 0
            bucket.append(i)
            nbytes += n
        if bucket:
            out.append(bucket)
    return out


def _tree_leaves(name: str, tree_: Any, kinds: str) -> tuple[list, Any]:
    leaves, treedef = tree.flatten(tree_)
    out = []
    for leaf in leaves:
        if not (_raw(leaf) or isinstance(leaf, Tensor)):
            leaf = as_tensor(leaf, name, f"leaf {len(out)}")
        if np.dtype(leaf.dtype).kind not in kinds:
            raise DTypeError(f"{name}: leaf {len(out)} is {describe(leaf)}; only {kinds!r} kinds are allowed")
        out.append(leaf)
    return out, treedef


def _bucket_bytes(name: str, bucket_bytes: Any) -> int:
    n = _args.index(bucket_bytes, name, "bucket_bytes", what="a positive int")
    if n < 1:
        raise ValueError(f"{name}: bucket_bytes must be a positive int, got {bucket_bytes!r}")
    return n


def average_gradients(
    grads: Any, *, bucket_bytes: int = DEFAULT_BUCKET_BYTES, group: Group | None = None
) -> Any:
    """The mean over ranks of a pytree of gradients, one allreduce per bucket of leaves.

    Leaves of one dtype are flattened into buckets of at most ``bucket_bytes`` (Horovod's
    tensor fusion): one copy in, one ``MPI_Allreduce`` in place per bucket, the results
    views of the bucket. Buckets follow dtype name then tree order, the same on every rank,
    so the collectives match and the result is the same on every rank. Traced leaves
    (inside ``jit`` or ``grad``) are bucketed with ops instead (concatenate, ``psum``,
    slices), so a jitted training step holds one collective per bucket too.

    Args:
        grads: a pytree of floating Tensors (or arrays), the same structure, shapes and
            dtypes on every rank.
        bucket_bytes: the largest bucket, in bytes (default 25 MiB, PyTorch DDP's).
        group: the group; the world's by default.

    Returns:
        A pytree like ``grads`` of Tensors (arrays for array leaves): the mean over ranks.

    Raises:
        ShapeError, DTypeError: the ranks passed different pytrees (raised on every rank,
            listing each rank's leaves; with the check on); a leaf is not floating;
            ``bucket_bytes`` is not an int.
        ValueError: ``bucket_bytes`` is below 1.
        TypeError: ``group`` is not a :class:`Group`.

    Example:
        >>> grads = {"w": fnp.ones((2, 2)), "b": fnp.array([0.5, 1.5])}
        >>> fgrad.distributed.average_gradients(grads)["b"]
        Tensor([0.5, 1.5], dtype=float64)

    References:
        Sergeev and Del Balso, arXiv:1802.05799 (Horovod; tensor fusion); Li et al.,
        "PyTorch Distributed", VLDB 2020, arXiv:2006.15704 (gradient buckets).
    """
    return _bucketed("average_gradients", grads, bucket_bytes, group, "mean")


def broadcast_params(params: Any, root: int = 0, *, group: Group | None = None) -> Any:
    """Rank ``root``'s parameters on every rank, so that all ranks start from the same.

    Bucketed as :func:`average_gradients` (one ``MPI_Bcast`` per bucket).

    Args:
        params: a pytree of numeric concrete Tensors (or arrays), the same structure,
            shapes and dtypes on every rank (values elsewhere than ``root`` are ignored).
        root: the rank whose parameters are sent.
        group: the group; the world's by default.

    Returns:
        A pytree like ``params``: root's values.

    Raises:
        ShapeError, DTypeError: the ranks' pytrees differ; a leaf is bool.
        ValueError: ``root`` is not a rank.
        TypeError: a leaf is traced.

    Example:
        >>> fgrad.distributed.broadcast_params({"w": fnp.ones(2)})["w"]
        Tensor([1., 1.], dtype=float64)
    """
    g = _group(group, "broadcast_params")
    root = _root(root, g, "broadcast_params")
    return _bucketed("broadcast_params", params, DEFAULT_BUCKET_BYTES, g, "broadcast", root)


def _bucketed(name: str, tree_: Any, bucket_bytes: Any, group: Group | None, mode: str, root: int = 0) -> Any:
    g = _group(group, name)
    bucket_bytes = _bucket_bytes(name, bucket_bytes)
    leaves, treedef = _tree_leaves(name, tree_, "fc" if mode == "mean" else "iufc")
    g.check_tree(name, [_describe_leaf(leaf) for leaf in leaves], root)
    traced = any(isinstance(leaf, Tracer) for leaf in leaves)
    if traced and mode == "broadcast":
        raise TypeError(f"{name}: got traced leaves; call it outside grad/jit/vmap")
    out: list[Any] = [None] * len(leaves)
    for bucket in _buckets(leaves, bucket_bytes):
        parts = [leaves[i] for i in bucket]
        if traced:
            results = _traced_bucket(parts, g)
        else:
            results = _concrete_bucket(parts, g, mode, root)
        for i, r in zip(bucket, results):
            out[i] = r
    return tree.unflatten(treedef, out)


def _describe_leaf(leaf: Any) -> str:
    return f"{np.dtype(leaf.dtype).name}{list(leaf.shape)}"


def _concrete_bucket(parts: list, g: Group, mode: str, root: int) -> list:
    datas = [p._data if isinstance(p, Tensor) else p for p in parts]
    xp = backend.namespace_of(datas[0])
    if len(datas) == 1:
        buf = xp.array(datas[0], copy=True, order="C").reshape(-1)
    else:
        buf = xp.concatenate([xp.reshape(d, (-1,)) for d in datas])
    g.check, check = False, g.check  # check_tree checked the whole tree already
    try:
        if mode == "broadcast":
            buf = g.broadcast(buf, root, inplace=True)
        else:
            buf = g.all_sum(buf, inplace=True)
            buf /= g.size
    finally:
        g.check = check
    out, start = [], 0
    for p, d in zip(parts, datas):
        n = d.size
        piece = xp.reshape(buf[start : start + n], d.shape)
        start += n
        out.append(asarray(piece) if isinstance(p, Tensor) else piece)
    return out


def _traced_bucket(parts: list, g: Group) -> list:
    from fgrad import numpy as fnp

    parts = [p if isinstance(p, Tensor) else asarray(p) for p in parts]
    flat = fnp.concatenate([fnp.reshape(p, (-1,)) for p in parts]) if len(parts) > 1 else fnp.reshape(parts[0], (-1,))
    total = _collectives.psum_op(flat, **_world_params(g)) / g.size
    out, start = [], 0
    for p in parts:
        n = int(np.prod(p.shape))
        out.append(fnp.reshape(total[start : start + n], p.shape))
        start += n
    return out


# ------------------------------------------------------------------------ data


class ShardedLoader:
    """Per-rank batches of a data set: rank ``r`` reads its ``r::size`` share.

    Each epoch draws one permutation of the examples (the same on every rank, from
    ``seed`` and the epoch), and rank ``r`` takes ``perm[r::size]``; its ``k``-th batch is
    the ``k``-th run of ``batch_size`` of those. The global batch ``k`` is then the
    concatenation over ranks of their ``k``-th batches: the examples
    ``perm[k * B * size : (k + 1) * B * size]`` (in another order), so ``size`` ranks with
    batch ``B`` see the batches that one process with batch ``B * size`` sees. Every rank
    runs the same number of steps (a partial last global batch is dropped).

    Args:
        data: a pytree of arrays (numpy or Tensors), each with the examples along axis 0.
        batch_size: examples per rank per step (B).
        seed: the permutation's seed (an int); None keeps the data's order.
        group: the group; the world's by default.

    Raises:
        ValueError: the leaves differ in length, ``batch_size`` is below 1, ``seed`` is
            negative, or there are fewer examples than one global batch.
        DTypeError: ``batch_size`` or ``seed`` is not an int, or a leaf of ``data`` is not
            numeric.
        TypeError: ``group`` is neither a :class:`Group` nor an object with int ``rank``
            and ``size``.

    Example:
        >>> loader = fgrad.distributed.ShardedLoader(np.arange(8.0), batch_size=2, seed=None)
        >>> [b.tolist() for b in loader.epoch(0)]  # one rank: the data in order
        [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]
    """

    def __init__(self, data: Any, batch_size: int, *, seed: int | None = 0, group: Group | None = None):
        name = "ShardedLoader"
        batch = _args.index(batch_size, name, "batch_size", what="a positive int")
        if batch < 1:
            raise ValueError(
                f"ShardedLoader: batch_size must be a positive int, got {batch_size!r}"
            )
        batch_size = batch
        seed = _args.index(seed, name, "seed", minimum=0, none_ok=True, what="an int or None")
        self.group = _group(group, name, duck=True)
        leaves, self._treedef = tree.flatten(data)
        lengths = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in leaves}
        if len(lengths) != 1 or -1 in lengths:
            raise ValueError(f"ShardedLoader: every leaf needs the same leading length; got {sorted(lengths)}")
        self._leaves = [np.asarray(leaf) for leaf in leaves]
        for i, leaf in enumerate(self._leaves):
            if not _args.is_numeric(leaf.dtype):
                raise DTypeError(
                    f"ShardedLoader: leaf {i} of data is {_args.describe(leaf)}, not numeric; "
                    "batches are Tensors, which hold bool, integer, floating or complex numbers"
                )
        self.n = lengths.pop()
        self.batch_size = batch_size
        self.seed = seed
        self.steps_per_epoch = self.n // (batch_size * self.group.size)
        if self.steps_per_epoch == 0:
            raise ValueError(
                f"ShardedLoader: {self.n} examples make no global batch of {batch_size} x "
                f"{self.group.size} ranks"
            )

    def indices(self, epoch: int) -> np.ndarray:
        """This rank's example indices for ``epoch``, ``(steps_per_epoch, batch_size)``."""
        epoch = _args.index(epoch, "ShardedLoader.indices", "epoch", minimum=0)
        order = np.arange(self.n) if self.seed is None else np.random.default_rng((self.seed, epoch)).permutation(self.n)
        size, b = self.group.size, self.batch_size
        used = order[: self.steps_per_epoch * b * size]
        return used[self.group.rank :: size].reshape(self.steps_per_epoch, b)

    def epoch(self, epoch: int) -> Iterator[Any]:
        """This rank's batches for ``epoch``: pytrees like ``data`` of Tensors."""
        epoch = _args.index(epoch, "ShardedLoader.epoch", "epoch", minimum=0)
        return self._batches(self.indices(epoch))  # checked now, not at the first batch

    def _batches(self, indices: np.ndarray) -> Iterator[Any]:
        for idx in indices:
            yield tree.unflatten(self._treedef, [asarray(leaf[idx]) for leaf in self._leaves])

    def __len__(self) -> int:
        return self.steps_per_epoch
