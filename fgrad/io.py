"""Checkpoints: pytrees of Tensors saved to and loaded from safetensors files.

The safetensors format is an 8-byte little-endian header length, a JSON header (dtype,
shape and byte range of each tensor, plus string metadata) and the raw little-endian tensor
bytes. It holds no code, so loading never runs anything (no pickle). fgrad names each
tensor by its path in the pytree, as a JSON pointer (RFC 6901: ``/layers/0/w``), and stores
the tree's structure as JSON in the metadata, so :func:`load` rebuilds the same nesting of
dicts, lists, tuples and ``None``. Files are written atomically: a crash leaves either the
old file or the new one, never a partial file.

Example:
    >>> import os, tempfile
    >>> params = {"w": fnp.ones((2, 3), dtype="float32"), "b": [fnp.zeros(3), None]}
    >>> path = os.path.join(tempfile.mkdtemp(), "params.safetensors")
    >>> save(path, params)
    >>> restored = load(path)
    >>> restored["w"].dtype, restored["w"].shape, restored["b"][1]
    (dtype('float32'), (2, 3), None)

References:
    The safetensors format: https://github.com/huggingface/safetensors (``README``,
    "Format").
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

import numpy as np

from fgrad.tensor import Tensor, asarray

__all__ = ["load", "save"]

_TREE_KEY = "fgrad.tree"
_FORMAT_KEY = "fgrad.format"
_FORMAT_VERSION = "1"

# numpy dtypes safetensors can hold, and the header's name for each.
_CODES = {
    "bool": "BOOL",
    "int8": "I8",
    "uint8": "U8",
    "int16": "I16",
    "uint16": "U16",
    "int32": "I32",
    "uint32": "U32",
    "int64": "I64",
    "uint64": "U64",
    "float16": "F16",
    "float32": "F32",
    "float64": "F64",
    "complex64": "C64",
}
_DTYPES = {code: np.dtype(name) for name, code in _CODES.items()}
_MAX_HEADER = 100_000_000  # the safetensors library's own limit on the header size


def _safetensors_numpy():
    """The safetensors numpy API, imported on first use so ``import fgrad`` does not need it."""
    try:
        import safetensors.numpy
    except ImportError as e:
        raise ImportError(
            "fgrad.io needs the safetensors package: pip install safetensors "
            "(or pip install 'fgrad[io]')"
        ) from e
    return safetensors.numpy


# --------------------------------------------------------------------------- save


def save(path: str | os.PathLike, params: Any) -> None:
    """Save a pytree of Tensors to a safetensors file, atomically.

    The data go to a temporary file in the same directory, which is flushed, fsynced and
    then renamed over ``path`` (``os.replace``), so readers see the old file or the complete
    new one. The pytree's structure is stored as JSON in the file's metadata.

    Args:
        path: file to write (``str`` or path-like); replaced if it exists. The suffix
            ``.safetensors`` is customary but not required.
        params: a pytree whose nodes are dicts with ``str`` keys, lists, tuples and ``None``,
            and whose leaves are Tensors or numpy arrays of any shape with dtype bool,
            (u)int8/16/32/64, float16/32/64 or complex64. CUDA Tensors are copied to the host.

    Raises:
        TypeError: a node or leaf of an unsupported type (a namedtuple, a dataclass, a
            Python scalar, a dict with a non-``str`` key) or an unsupported dtype (complex128,
            or bfloat16 and other ``ml_dtypes`` types); the message names the leaf's path.
        OSError: the directory is missing or not writable (no partial file is left).
        ImportError: the ``safetensors`` package is not installed.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> save(path, {"w": fnp.array([1.0, 2.0]), "step": fnp.array(7)})
        >>> load(path)
        {'w': Tensor([1., 2.], dtype=float64), 'step': Tensor(7, dtype=int64)}
    """
    tensors: dict[str, np.ndarray] = {}
    structure = _encode(params, "", tensors)
    metadata = {_FORMAT_KEY: _FORMAT_VERSION, _TREE_KEY: json.dumps(structure)}
    try:
        data = _safetensors_numpy().save(tensors, metadata=metadata)
    except Exception as e:  # the library raises its own SafetensorError for bad input
        raise TypeError(f"fgrad.io.save: safetensors could not serialise the tensors: {e}") from e
    _write_atomic(os.fspath(path), data)


def _encode(node: Any, where: str, tensors: dict[str, np.ndarray]) -> Any:
    """The JSON description of ``node``; leaves go into ``tensors`` under their path.

    JSON form: a leaf is its tensor's name (a string), ``None`` is ``null``, and containers
    are ``{"dict": {key: child}}``, ``{"list": [children]}``, ``{"tuple": [children]}``.
    """
    cls = type(node)
    if node is None:
        return None
    if cls is dict:
        out = {}
        for key, child in node.items():
            if type(key) is not str:
                raise TypeError(
                    f"fgrad.io.save: dict at {_show(where)} has key {key!r} of type "
                    f"{type(key).__name__}; checkpoint dicts need str keys"
                )
            out[key] = _encode(child, f"{where}/{_escape(key)}", tensors)
        return {"dict": out}
    if cls is list or cls is tuple:
        children = [_encode(c, f"{where}/{i}", tensors) for i, c in enumerate(node)]
        return {cls.__name__: children}
    if isinstance(node, (Tensor, np.ndarray)):
        tensors[where] = _host_array(node, where)
        return where
    hint = ""
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        hint = "; convert a namedtuple with ._asdict() (or tuple(x)) first"
    elif isinstance(node, (bool, int, float, complex, np.generic)):
        hint = "; wrap Python and numpy scalars with fnp.array(x)"
    elif isinstance(node, dict):
        hint = "; convert it with dict(x) first"
    raise TypeError(
        f"fgrad.io.save: unsupported pytree node {cls.__qualname__} at {_show(where)}; "
        f"checkpoints hold dicts with str keys, lists, tuples, None and Tensor leaves{hint}"
    )


def _host_array(leaf: Any, where: str) -> np.ndarray:
    arr = np.asarray(leaf)
    name = arr.dtype.name
    if name not in _CODES:
        hint = " (use complex64, or store real and imaginary parts)" if name == "complex128" else ""
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2") or arr.dtype.kind == "V":
            hint = " (numpy has no such dtype; cast to float32 before saving)"
        raise TypeError(
            f"fgrad.io.save: leaf {_show(where)} has dtype {name}, which the safetensors numpy "
            f"API cannot store; supported: {', '.join(_CODES)}{hint}"
        )
    # The library reads raw memory from the array's data pointer, so it must be C-contiguous.
    # (np.ascontiguousarray would turn 0-d arrays into 1-d ones.)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` via a fsynced temporary file and an atomic rename."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
    # 0o666 and O_EXCL: the umask applies as for an ordinary file, and no existing file is
    # ever reused as the temporary.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
    except OSError as e:  # name the path asked for, not the hidden temporary file
        if not os.path.isdir(directory):
            reason = f"its directory {directory!r} does not exist (create it first)"
        else:
            reason = e.strerror or str(e)
        raise type(e)(e.errno, f"fgrad.io.save: cannot write {path!r}: {reason}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if os.name == "posix":  # make the rename itself durable
        try:
            dir_fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:  # some file systems cannot fsync a directory; the data are synced
            pass
        finally:
            os.close(dir_fd)


# --------------------------------------------------------------------------- load


def load(path: str | os.PathLike, *, device: Any = None) -> Any:
    """Load a pytree of Tensors saved by :func:`save`.

    The file is checked before any tensor is read: header length against file size, the
    header's JSON, every tensor's dtype and byte range, then the library's own checks. Nothing
    is unpickled or executed. A safetensors file written by another tool (no fgrad tree in
    its metadata) loads as a flat ``dict`` from tensor name to Tensor.

    Args:
        path: the file to read (``str`` or path-like).
        device: where to put the Tensors: ``"cpu"`` (default), ``"cuda[:N]"`` or a Device.

    Returns:
        The pytree with the saved structure (dicts, lists, tuples, ``None``) whose leaves are
        Tensors with the saved shapes and dtypes.

    Raises:
        ValueError: the file is not a valid safetensors file: too short, truncated (header
            or data shorter than declared), a header that is not JSON, a tensor with an
            invalid byte range, a dtype numpy cannot hold (bfloat16, float8), or an fgrad
            tree description that does not match the tensors. The message names ``path``.
        OSError: the file cannot be read (for example ``FileNotFoundError``).
        ImportError: the ``safetensors`` package is not installed.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> save(path, ([fnp.array([1, 2], dtype="int32")], {"scale": fnp.array(0.5)}))
        >>> load(path)
        ([Tensor([1, 2], dtype=int32)], {'scale': Tensor(0.5, dtype=float64)})
    """
    path = os.fspath(path)
    st = _safetensors_numpy()
    with open(path, "rb") as f:
        data = f.read()
    header = _read_header(path, data)
    try:
        arrays = st.load(data)
    except Exception as e:  # SafetensorError, or a numpy error on a malformed entry
        raise ValueError(f"{path}: not a valid safetensors file: {e}") from e
    tensors = {name: asarray(a, device=device) for name, a in arrays.items()}
    metadata = header.get("__metadata__") or {}
    if _TREE_KEY not in metadata:
        return dict(sorted(tensors.items()))
    try:
        structure = json.loads(metadata[_TREE_KEY])
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: the fgrad tree in the metadata is not valid JSON: {e}") from e
    used: set[str] = set()
    tree = _decode(structure, tensors, used, path, "")
    unused = sorted(set(tensors) - used)
    if unused:
        raise ValueError(
            f"{path}: tensors {unused[:5]} are not referenced by the fgrad tree in the metadata"
        )
    return tree


def _read_header(path: str, data: bytes) -> dict:
    """Parse and check the header; raise ValueError naming what is wrong."""
    size = len(data)
    if size < 8:
        raise ValueError(
            f"{path}: not a safetensors file: {size} bytes, fewer than the 8-byte header length"
        )
    n = int.from_bytes(data[:8], "little")
    if n > _MAX_HEADER:
        raise ValueError(
            f"{path}: not a safetensors file: it starts with {data[:8]!r}, which as a header "
            f"length reads {n} bytes, over the format's limit of {_MAX_HEADER}"
        )
    if n > size - 8:
        raise ValueError(
            f"{path}: truncated or not a safetensors file: the header length field says "
            f"{n} bytes but only {size - 8} bytes follow it"
        )
    if n < 2:
        raise ValueError(f"{path}: not a safetensors file: invalid header length {n}")
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(
            f"{path}: not a safetensors file: the header is not UTF-8 JSON ({e})"
        ) from e
    if not isinstance(header, dict):
        raise ValueError(f"{path}: not a safetensors file: the header is not a JSON object")  # noqa: TRY004
    available = size - 8 - n
    covered = 0
    for name, entry in header.items():
        if name == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise ValueError(f"{path}: corrupt header: __metadata__ must map str to str")
            continue
        covered = max(covered, _check_entry(path, name, entry, available))
    if covered < available:
        raise ValueError(
            f"{path}: corrupt file: {available - covered} bytes after the last tensor's data "
            "(appended to, or not a single safetensors file)"
        )
    return header


def _check_entry(path: str, name: str, entry: Any, available: int) -> int:
    """Check one tensor's header entry; return where its data end."""
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        raise ValueError(
            f"{path}: corrupt header: tensor {name!r} lacks dtype, shape or data_offsets"
        )
    code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if code not in _DTYPES:
        hint = "numpy has no such dtype; " if isinstance(code, str) else ""
        raise ValueError(
            f"{path}: tensor {name!r} has dtype {code!r}, which fgrad cannot load ({hint}"
            f"supported: {', '.join(_DTYPES)}); convert it, e.g. to F32, when writing the file"
        )
    ints = lambda xs: isinstance(xs, list) and all(type(x) is int and x >= 0 for x in xs)
    if not ints(shape) or not ints(offsets) or len(offsets) != 2:
        raise ValueError(f"{path}: corrupt header: tensor {name!r} has a malformed shape/offsets")
    begin, end = offsets
    if end > available:
        raise ValueError(
            f"{path}: truncated: tensor {name!r} needs bytes [{begin}, {end}) of the data "
            f"section, which holds only {available} bytes"
        )
    expected = int(np.prod(shape, dtype=np.int64)) * _DTYPES[code].itemsize
    if end - begin != expected:
        raise ValueError(
            f"{path}: corrupt header: tensor {name!r} of shape {tuple(shape)} and dtype {code} "
            f"needs {expected} bytes but its data_offsets span {end - begin}"
        )
    return end


def _decode(node: Any, tensors: dict, used: set, path: str, where: str) -> Any:
    if node is None:
        return None
    if isinstance(node, str):
        if node not in tensors:
            raise ValueError(f"{path}: the fgrad tree names tensor {node!r}, which is missing")
        if node in used:
            raise ValueError(f"{path}: the fgrad tree names tensor {node!r} twice")
        used.add(node)
        return tensors[node]
    if isinstance(node, dict) and len(node) == 1:
        ((kind, children),) = node.items()
        if kind == "dict" and isinstance(children, dict):
            return {
                k: _decode(c, tensors, used, path, f"{where}/{_escape(k)}")
                for k, c in children.items()
            }
        if kind in ("list", "tuple") and isinstance(children, list):
            out = [_decode(c, tensors, used, path, f"{where}/{i}") for i, c in enumerate(children)]
            return out if kind == "list" else tuple(out)
    raise ValueError(
        f"{path}: corrupt fgrad tree in the metadata: unrecognised node {str(node)[:80]!r} at "
        f"{_show(where)}"
    )


# --------------------------------------------------------------------------- names


def _escape(key: str) -> str:
    """A dict key as one JSON-pointer token (RFC 6901): ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def _show(where: str) -> str:
    return repr(where) if where else "the root"
