"""Process groups: the collectives on backend arrays (numpy over MPI, cupy over NCCL).

A group is what every collective of ``fgrad.distributed`` and every ``spmd`` axis runs
on. ``LocalGroup`` is the group of one process (no MPI needed); ``MPIGroup`` wraps an
mpi4py communicator. Methods take backend arrays and return new ones (or, ``inplace``,
reduce into a contiguous writable buffer with ``MPI_IN_PLACE``); numpy buffers go to MPI
through the buffer interface, never pickled.

Consistency check: MPI does not check that ranks pass the same shapes and dtypes; a
mismatch truncates (``MPI_ERR_TRUNCATE``), hangs, or silently reduces bytes of different
meaning. So by default each collective first exchanges a 24-integer header (collective,
dtype, device, shape, root) with one ``MPI_Allgather``, and raises the same error on every
rank when the headers differ, naming each rank's shape and dtype. It costs one small
latency-bound exchange per collective (``benchmarks/README.md`` gives the figure) and
``average_gradients`` pays it once per call, not per bucket; ``init(check=False)`` or
``FGRAD_DISTRIBUTED_CHECK=0`` turns it off.

References: MPI 4.0 standard, chapter 6 (collective communication: ``MPI_Allreduce``,
``MPI_Allgather``, ``MPI_Bcast``, ``MPI_IN_PLACE``); mpi4py's buffer-based methods;
NCCL's ``ncclCommInitRank`` with a unique id broadcast out of band (here over MPI).
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any

import numpy as np

from fgrad import _args, backend
from fgrad.errors import DTypeError, ShapeError

__all__ = ["Group", "LocalGroup", "MPIGroup"]

_MAX_DIMS = 16
_HEADER = 8 + _MAX_DIMS  # collective, dtype, device, ndim, root, shape hash, count, spare, dims
_CODES = {"all_sum": 1, "all_max": 2, "all_gather": 3, "broadcast": 4, "tree": 5}


def _dtype_code(dtype: Any) -> int:
    dtype = np.dtype(dtype)
    return ord(dtype.kind) * 100 + dtype.itemsize


def _dtype_name(code: int) -> str:
    try:
        return np.dtype(f"{chr(code // 100)}{code % 100}").name
    except TypeError:
        return f"dtype code {code}"


def describe(x: Any) -> str:
    """``float64[3, 4] (numpy)``: what a rank passed, for error messages."""
    shape = ", ".join(str(n) for n in x.shape)
    if hasattr(x, "aval"):  # a Tensor
        where = "Tensor"
    else:
        where = "numpy" if backend.namespace_of(x) is np else "gpu"
    return f"{np.dtype(x.dtype).name}[{shape}] ({where})"


class Group:
    """A group of processes and its collectives on backend arrays (numpy, cupy).

    Attributes:
        rank: this process' index in ``[0, size)``.
        size: the number of processes.
        check: whether collectives first compare shapes and dtypes across ranks.
    """

    rank: int = 0
    size: int = 1
    check: bool = True

    def all_sum(self, x: Any, inplace: bool = False) -> Any:
        """Elementwise sum over ranks of the array ``x`` (a new array unless ``inplace``)."""
        return self._reduce("all_sum", x, inplace)

    def all_max(self, x: Any, inplace: bool = False) -> Any:
        """Elementwise maximum over ranks of the array ``x``."""
        return self._reduce("all_max", x, inplace)

    def all_gather(self, x: Any) -> Any:
        """Every rank's ``x`` stacked: ``(size, *x.shape)``, in rank order."""
        raise NotImplementedError

    def broadcast(self, x: Any, root: int = 0, inplace: bool = False) -> Any:
        """Rank ``root``'s ``x`` on every rank (``x`` elsewhere gives only shape and dtype)."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Return once every rank has called it."""

    def check_tree(self, name: str, descriptions: list[str], header: Any) -> None:
        """Raise on every rank when ranks pass pytrees of different leaves."""

    def _reduce(self, name: str, x: Any, inplace: bool) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"


class LocalGroup(Group):
    """The group of this process alone: every collective returns (a copy of) its input."""

    def __init__(self, check: bool = True):
        self.check = _args.flag(check, "LocalGroup", "check")

    def _reduce(self, name: str, x: Any, inplace: bool) -> Any:
        return x if inplace else _copy(x)

    def all_gather(self, x: Any) -> Any:
        return backend.namespace_of(x).stack([x])

    def broadcast(self, x: Any, root: int = 0, inplace: bool = False) -> Any:
        _check_root(root, 1)
        return x if inplace else _copy(x)


def _contiguous(x: Any) -> Any:
    """``x`` itself when C-contiguous, else a C-contiguous copy (0-d stays 0-d, which
    ``ascontiguousarray`` would make 1-d)."""
    return x if x.flags.c_contiguous else backend.namespace_of(x).array(x, order="C")


def _copy(x: Any) -> Any:
    return backend.namespace_of(x).asarray(x, copy=True)


def _check_root(root: Any, size: int) -> None:
    if type(root) is not int or not 0 <= root < size:
        raise ValueError(f"broadcast: root must be a rank in [0, {size}), got {root!r}")


class MPIGroup(Group):
    """A group over an mpi4py communicator (``MPI.COMM_WORLD`` by default).

    numpy arrays go through MPI; cupy arrays through NCCL (``gpu="nccl"``: a communicator
    made on first use, its unique id broadcast over MPI) or through a CUDA-aware MPI
    (``gpu="mpi"``, which passes device buffers to MPI directly).
    """

    def __init__(self, comm: Any, check: bool = True, gpu: str = "nccl"):
        from mpi4py import MPI

        if gpu not in ("nccl", "mpi"):
            raise ValueError(f"init: gpu must be 'nccl' or 'mpi', got {gpu!r}")
        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.check = check
        self.gpu = gpu
        self._nccl_comm = None
        self._ops = {"all_sum": MPI.SUM, "all_max": MPI.MAX}

    # -- consistency check --------------------------------------------------------------

    def _header(self, name: str, x: Any, root: int = -1) -> np.ndarray:
        h = np.zeros(_HEADER, dtype=np.int64)
        shape = tuple(int(n) for n in x.shape)
        h[0] = _CODES[name]
        h[1] = _dtype_code(x.dtype)
        h[2] = 0 if backend.namespace_of(x) is np else 1
        h[3] = len(shape)
        h[4] = root
        h[5] = zlib.crc32(repr(shape).encode())
        h[8 : 8 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
        return h

    def _agree(self, name: str, x: Any, root: int = -1) -> None:
        """Raise the same error on every rank when the ranks' headers differ."""
        if not self.check or self.size == 1:
            return
        mine = self._header(name, x, root)
        table = np.empty((self.size, _HEADER), dtype=np.int64)
        self.comm.Allgather(mine, table)
        if (table == table[0]).all():
            return
        names = {v: k for k, v in _CODES.items()}
        parts = []
        for r, h in enumerate(table):
            shape = ", ".join(str(int(n)) for n in h[8 : 8 + min(int(h[3]), _MAX_DIMS)])
            where = "numpy" if h[2] == 0 else "gpu"
            extra = f", root {int(h[4])}" if h[0] == _CODES["broadcast"] else ""
            what = names.get(int(h[0]), "?")
            parts.append(f"rank {r}: {what} of {_dtype_name(int(h[1]))}[{shape}] ({where}){extra}")
        listing = "; ".join(parts)
        kind = ShapeError
        if len(set(table[:, 1].tolist())) > 1 or len(set(table[:, 2].tolist())) > 1:
            kind = DTypeError
        raise kind(
            f"{name}: the ranks disagree on the collective ({listing}); every rank must call "
            "the same collective on arrays of the same shape and dtype, in the same order"
        )

    def check_tree(self, name: str, descriptions: list[str], header: Any) -> None:
        if not self.check or self.size == 1:
            return
        mine = np.zeros(4, dtype=np.int64)
        mine[0] = len(descriptions)
        mine[1] = zlib.crc32("; ".join(descriptions).encode())
        mine[2] = header
        table = np.empty((self.size, 4), dtype=np.int64)
        self.comm.Allgather(mine, table)
        if (table == table[0]).all():
            return
        every = self.comm.allgather(descriptions)  # only on error: the full listing
        lines = []
        for r, d in enumerate(every):
            lines.append(f"rank {r}: {len(d)} leaves [{', '.join(d[:8])}{', ...' if len(d) > 8 else ''}]")
        kind = ShapeError
        if len({tuple(s.split("[")[0] for s in d) for d in every}) > 1:
            kind = DTypeError
        raise kind(
            f"{name}: the ranks passed different pytrees ({'; '.join(lines)}); every rank must "
            "pass leaves of the same shapes and dtypes, in the same order"
        )

    # -- collectives --------------------------------------------------------------------

    def _reduce(self, name: str, x: Any, inplace: bool) -> Any:
        self._agree(name, x)
        if backend.namespace_of(x) is not np and self.gpu == "nccl":
            return self._nccl_reduce(name, x, inplace)
        MPI = self._MPI
        if x.dtype == np.float16:  # MPI has no half type: reduce in float32, round once
            wide = self._reduce_mpi(name, x.astype(np.float32), True)
            out = wide.astype(np.float16)
            if inplace:
                x[...] = out
                return x
            return out
        return self._reduce_mpi(name, x, inplace)

    def _reduce_mpi(self, name: str, x: Any, inplace: bool) -> Any:
        MPI = self._MPI
        op = self._ops[name]
        if inplace:
            if not (x.flags.c_contiguous and x.flags.writeable):
                raise ValueError(f"{name}: inplace needs a C-contiguous writable array, got {describe(x)}")
            self.comm.Allreduce(MPI.IN_PLACE, x, op=op)
            return x
        xp = backend.namespace_of(x)
        send = _contiguous(x)
        out = xp.empty_like(send)
        self.comm.Allreduce(send, out, op=op)
        return out

    def all_gather(self, x: Any) -> Any:
        self._agree("all_gather", x)
        xp = backend.namespace_of(x)
        send = _contiguous(x)
        out = xp.empty((self.size, *send.shape), dtype=send.dtype)
        if xp is not np and self.gpu == "nccl":
            comm, nccl, stream = self._nccl()
            comm.allGather(send.data.ptr, out.data.ptr, send.size, _nccl_dtype(nccl, send), stream)
            return out
        if send.dtype == np.float16:  # a bit copy: view as uint16
            self.comm.Allgather(send.view(np.uint16), out.view(np.uint16))
        else:
            self.comm.Allgather(send, out)
        return out

    def broadcast(self, x: Any, root: int = 0, inplace: bool = False) -> Any:
        _check_root(root, self.size)
        self._agree("broadcast", x, root)
        xp = backend.namespace_of(x)
        buf = x if inplace else xp.array(x, copy=True, order="C")
        if inplace and not (x.flags.c_contiguous and x.flags.writeable):
            raise ValueError(f"broadcast: inplace needs a C-contiguous writable array, got {describe(x)}")
        if xp is not np and self.gpu == "nccl":
            comm, nccl, stream = self._nccl()
            comm.broadcast(buf.data.ptr, buf.data.ptr, buf.size, _nccl_dtype(nccl, buf), root, stream)
            return buf
        self.comm.Bcast(buf.view(np.uint8) if buf.dtype == np.float16 else buf, root=root)
        return buf

    def barrier(self) -> None:
        self.comm.Barrier()

    # -- NCCL (cupy arrays) -------------------------------------------------------------

    def _nccl(self) -> tuple:
        """The NCCL communicator (made on first use on every rank: a collective), the
        ``nccl`` module and the current stream's handle."""
        cupy = backend.namespace_for(backend.get_device("cuda"))
        nccl = importlib.import_module(cupy.__name__ + ".cuda.nccl")
        if self._nccl_comm is None:
            uid = nccl.get_unique_id() if self.rank == 0 else None
            uid = self.comm.bcast(uid, root=0)
            self._nccl_comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        return self._nccl_comm, nccl, cupy.cuda.get_current_stream().ptr

    def _nccl_reduce(self, name: str, x: Any, inplace: bool) -> Any:
        comm, nccl, stream = self._nccl()
        xp = backend.namespace_of(x)
        send = x if inplace else _contiguous(x)
        out = send if inplace else xp.empty_like(send)
        op = nccl.NCCL_SUM if name == "all_sum" else nccl.NCCL_MAX
        comm.allReduce(send.data.ptr, out.data.ptr, send.size, _nccl_dtype(nccl, send), op, stream)
        return out


def _nccl_dtype(nccl: Any, x: Any) -> int:
    table = {
        "float16": "NCCL_FLOAT16",
        "float32": "NCCL_FLOAT32",
        "float64": "NCCL_FLOAT64",
        "int8": "NCCL_INT8",
        "uint8": "NCCL_UINT8",
        "int32": "NCCL_INT32",
        "uint32": "NCCL_UINT32",
        "int64": "NCCL_INT64",
        "uint64": "NCCL_UINT64",
    }
    name = table.get(np.dtype(x.dtype).name)
    if name is None:
        raise DTypeError(
            f"NCCL has no type for {describe(x)}; cast it (complex: view as float pairs)"
        )
    return getattr(nccl, name)
