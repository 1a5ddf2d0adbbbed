"""Checkpoints: pytrees of Tensors saved to and loaded from safetensors files.

The safetensors format is an 8-byte little-endian header length, a JSON header (each
tensor's dtype, shape and byte range, plus a ``__metadata__`` object of string metadata)
and the tensors' raw little-endian bytes, one after the other with neither gaps nor
overlaps. It holds no code, so loading never runs anything (no pickle). The bytes are read
and written by the ``safetensors`` package (``pip install 'fgrad[io]'``), imported on
first use. fgrad names each tensor by its path in the pytree, as a JSON pointer (RFC 6901:
``/layers/0/w``), and stores in the metadata:

* ``fgrad.tree``: the tree's structure as JSON, so :func:`load` rebuilds the same nesting
  of dicts, lists, tuples and ``None`` (at any depth: nothing recurses); a NamedTuple (the
  layers' typed params, an optimiser's state) is stored as the dict of its fields, since
  the file names no class;
* ``fgrad.crc32``: a CRC-32 of each tensor's bytes, so a changed byte is reported with the
  tensor it belongs to, and ``fgrad.header_crc32``: a CRC-32 of the tree, the checksums and
  every tensor's name, dtype and shape, so a damaged header is reported rather than loaded
  with renamed keys or a flattened tree. (Checksums find accidental damage, from disks,
  copies and downloads; they are not signatures: whoever can write the file can forge
  them.)

Before the library parses a header, fgrad checks it with bounded cost (its length against
the file, at most 100 MB, at most 262 144 tensors, JSON nesting, duplicate keys, each
tensor's dtype, shape and byte range), so that a hostile header is refused in a fraction
of a second and messages name the file and the tensor.

The files stay plain safetensors files that other tools (the ``safetensors`` package,
PyTorch, JAX) read; fgrad reads theirs, as flat dicts from tensor name to Tensor.
``load(path, like=template)`` puts the tensors into the template's structure instead,
matched by name and checked for shape and dtype, which is how typed params and optimiser
states come back as their NamedTuples, and how a checkpoint saved with the dict params of
older fgrad loads into the typed ones (a field and a dict key give the same name). Files are
written atomically: a crash leaves either the old file or the new one, never a partial
file, and the temporaries of writers that were killed are removed by the next save of the
same file. ``bfloat16`` tensors (``BF16``, the dtype of most published language-model
checkpoints) are written from numpy arrays of the ``ml_dtypes`` package and load as
float32 Tensors, exactly, since fgrad Tensors have no bfloat16 dtype.

Example:
    >>> import os, tempfile
    >>> params = {"w": fnp.ones((2, 3), dtype="float32"), "b": [fnp.zeros(3), None]}
    >>> path = os.path.join(tempfile.mkdtemp(), "params.safetensors")
    >>> save(path, params)
    >>> restored = load(path)
    >>> restored["w"].dtype, restored["w"].shape, restored["b"][1]
    (dtype('float32'), (2, 3), None)
    >>> layer = fgrad.nn.Linear(2, 3)
    >>> save(path, layer.init(fgrad.random.key(0)))
    >>> load(path)["weight"].shape  # the fields of a NamedTuple, as a dict
    (2, 3)
    >>> load(path, like=layer.init(fgrad.random.key(1))).weight.shape
    (2, 3)
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from typing import Any, BinaryIO

import numpy as np

from fgrad import _io_files, _io_tree, backend
from fgrad.tensor import asarray

__all__ = ["load", "save"]


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)

_FORMAT_KEY = "fgrad.format"
_TREE_KEY = "fgrad.tree"
_CRC_KEY = "fgrad.crc32"
_HEADER_CRC_KEY = "fgrad.header_crc32"
_FORMAT_VERSION = "2"  # 2 added the checksums; files of format 1 (no checksums) still load
_FGRAD_KEYS = {_FORMAT_KEY, _TREE_KEY, _CRC_KEY, _HEADER_CRC_KEY}

# numpy dtype names safetensors can hold, and the header's name for each.
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
    "bfloat16": "BF16",  # ml_dtypes' numpy dtype; stored bit for bit
    "float32": "F32",
    "float64": "F64",
    "complex64": "C64",
}
_NAMES = {code: name for name, code in _CODES.items()}  # the dtype the library reads into
_ITEMSIZE = {code: 2 if code == "BF16" else np.dtype(n).itemsize for n, code in _CODES.items()}

# Limits on what a header may make load do, each far above any real checkpoint, so that
# the memory and time spent on a file are bounded by its size.
_MAX_HEADER = 100_000_000  # bytes; the safetensors library's own limit
_MAX_TENSORS = 2**18  # 262 144; each costs ~15 us to load, and the largest models hold ~100 000
_MAX_NDIM = 64  # numpy's limit
_MAX_BYTES = 2**62  # elements x itemsize, zero dimensions left out: more than numpy can hold
# Parsing stops early once a header has described over _EARLY tensors that claim more
# than twice the data section plus _SLACK bytes: overlapping ranges, or a file cut short.
_SLACK = 65_536
_EARLY = 1024


def _safetensors(fn: str) -> Any:
    """The ``safetensors`` package, imported on first use; ImportError saying how to get it."""
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as e:
        raise ImportError(
            f"fgrad.io.{fn} reads and writes files with the safetensors package, which is "
            "not installed: pip install 'fgrad[io]' (or: pip install safetensors ml_dtypes)"
        ) from e
    return safetensors


def _crc(arr: np.ndarray) -> int:
    """CRC-32 of a C-contiguous array's bytes (no copy)."""
    return zlib.crc32(arr.reshape(-1).view(np.uint8))


# --------------------------------------------------------------------------- save


def save(path: str | os.PathLike, params: Any) -> None:
    """Save a pytree of Tensors to a safetensors file, atomically, with checksums.

    The ``safetensors`` package writes the file into a private temporary directory next to
    ``path``; it is moved to a temporary file, flushed, fsynced and then renamed over
    ``path`` (``os.replace``), so readers see the old file or the complete new one.
    Temporaries left in that directory by earlier saves of ``path`` whose process was
    killed are removed first (on POSIX systems, where a process can be looked up). CPU
    Tensors and C-contiguous numpy arrays are written from their own memory, without a
    copy; CUDA Tensors are copied to the host first (all of them: the library writes from
    host memory). The pytree's structure and a CRC-32 of every tensor are stored in the
    file's metadata (see the module's description).

    Args:
        path: file to write (``str`` or path-like); replaced if it exists. The suffix
            ``.safetensors`` is customary but not required.
        params: a pytree whose nodes are dicts with ``str`` keys, lists, tuples, NamedTuples
            (stored as dicts of their fields) and ``None``, nested to any depth, and whose
            leaves are Tensors or numpy arrays of any shape
            with dtype bool, (u)int8/16/32/64, float16/32/64, complex64 or bfloat16 (numpy
            arrays of ``ml_dtypes.bfloat16``: to store float32 parameters as bfloat16, pass
            ``fgrad.tree.map(lambda x: np.asarray(x).astype(ml_dtypes.bfloat16), params)``).

    Raises:
        TypeError: a node or leaf of an unsupported type (a dataclass, a Python scalar, a
            dict with a non-``str`` key) or an unsupported dtype
            (complex128, float8); the message names the leaf's path.
        ValueError: the checkpoint would break a limit that :func:`load` enforces: more than
            262 144 leaves, or a header (names and tree) over 100 MB.
        OSError: ``path`` is a directory (IsADirectoryError), the directory is missing or
            not writable, or the disk is full (no partial file is left, and an existing
            ``path`` is unchanged).
        ImportError: the ``safetensors`` package is not installed.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> save(path, {"w": fnp.array([1.0, 2.0]), "step": fnp.array(7)})
        >>> load(path)
        {'w': Tensor([1., 2.], dtype=float64), 'step': Tensor(7, dtype=int64)}
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"fgrad.io.save: {path!r} is a directory; pass a file path inside it (for "
            f"example {os.path.join(path, 'params.safetensors')!r})"
        )
    codes: dict[str, str] = {}

    def check_leaf(name: str, leaf: Any) -> None:
        codes[name] = _code_of(leaf, name)

    tree_text, leaves = _io_tree.encode(params, check_leaf)
    if len(leaves) > _MAX_TENSORS:
        raise ValueError(
            f"fgrad.io.save: the pytree for {path!r} has {len(leaves)} leaves, more than the "
            f"{_MAX_TENSORS} tensors that load accepts in one file; stack small leaves into "
            "larger arrays, or save the pytree in several files"
        )
    st = _safetensors("save")
    arrays = {name: _host_array(leaf) for name, leaf in leaves}
    crcs = {name: f"{_crc(arr):08x}" for name, arr in arrays.items()}
    crc_text = json.dumps(crcs, ensure_ascii=False, separators=(",", ":"))
    metadata = {_FORMAT_KEY: _FORMAT_VERSION, _TREE_KEY: tree_text, _CRC_KEY: crc_text}
    described = ((name, codes[name], arr.shape) for name, arr in arrays.items())
    metadata[_HEADER_CRC_KEY] = _header_digest(metadata, described)

    def write(tmp: str) -> None:
        try:
            st.numpy.save_file(arrays, tmp, metadata=metadata)
        except st.SafetensorError as e:  # the library's I/O errors (disk full, ...)
            raise OSError(f"fgrad.io.save: cannot write {path!r}: {e}") from None
        with open(tmp, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
        if n > _MAX_HEADER:
            raise ValueError(
                f"fgrad.io.save: the header of {path!r} (tensor names and the tree) would take "
                f"{n} bytes, over the format's limit of {_MAX_HEADER}; save the pytree in "
                "several files"
            )

    _io_files.write_atomic(path, write)


def _code_of(leaf: Any, name: str) -> str:
    """The header's dtype code for ``leaf``; TypeError naming the leaf for other dtypes."""
    dtype = np.dtype(leaf.dtype)
    code = _CODES.get(dtype.name)
    if code is None:
        hint = ""
        if dtype.name == "complex128":
            hint = " (use complex64, or store real and imaginary parts)"
        elif dtype.name.startswith("float8") or dtype.kind == "V":
            hint = " (fgrad.io stores no such dtype; cast to float32 or bfloat16 first)"
        raise TypeError(
            f"fgrad.io.save: leaf {_io_tree.show(name)} has dtype {dtype.name}, which fgrad "
            f"checkpoints cannot store; supported: {', '.join(_CODES)}{hint}"
        )
    return code


def _host_array(leaf: Any) -> np.ndarray:
    """A leaf as a little-endian, C-contiguous host array (a copy only where it must be)."""
    arr = np.asarray(leaf)  # a CUDA Tensor is copied to the host here
    order = arr.dtype.byteorder
    if order == ">" or (order == "=" and sys.byteorder == "big"):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    # The library writes data_ptr..data_ptr + nbytes, whatever the strides: C order needed.
    # (np.ascontiguousarray would turn 0-d arrays into 1-d ones.)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _header_digest(metadata: dict[str, str], tensors: Any) -> str:
    """CRC-32 (8 hex digits) of fgrad's metadata and each tensor's name, dtype and shape.

    Byte offsets are left out: a damaged offset breaks the layout checks or a tensor's own
    checksum, and a tool that rewrites the file with another layout keeps it valid.
    """
    fgrad_keys = sorted(
        (k, v) for k, v in metadata.items() if k.startswith("fgrad.") and k != _HEADER_CRC_KEY
    )
    described = sorted([name, code, list(shape)] for name, code, shape in tensors)
    canonical = json.dumps([fgrad_keys, described], separators=(",", ":"))  # ASCII
    return f"{zlib.crc32(canonical.encode('ascii')):08x}"


# --------------------------------------------------------------------------- load


def load(path: str | os.PathLike, *, device: Any = None, like: Any = None) -> Any:
    """Load a pytree of Tensors saved by :func:`save`, or the tensors of any safetensors file.

    The whole header is checked before any tensor is read: its length against the file's
    size, its JSON, every tensor's dtype, shape and byte range (the ranges must tile the
    data section, with no gap and no overlap), fgrad's metadata and, in files fgrad wrote,
    the header's checksum. Then the ``safetensors`` package reads the tensors one at a time
    (with ``pread``, so a file that shrinks meanwhile is an error, not a crash) into fresh
    arrays (peak memory about one checkpoint), each checked against its checksum. Nothing is
    unpickled or executed. A safetensors file written by another tool (no fgrad tree in its
    metadata) loads as a flat ``dict`` from tensor name to Tensor, sorted by name; files of
    fgrad's format 1 (which had no checksums) load unchecked.

    With ``like``, the tensors fill a template instead (as equinox's
    ``tree_deserialise_leaves(path, like)``): each leaf of ``like`` takes the tensor named by
    its path (``/0/weight`` for ``params[0].weight``, or ``params[0]["weight"]`` in dict
    params), which must have the leaf's shape and dtype, and every tensor of the file must
    be used. Containers come from ``like``, so NamedTuples come back as their classes, and
    checkpoints of dict params (fgrad's layers before their params were typed, with ``{}``
    for a layer without parameters) load into the typed params, whose fields have the dict
    keys' names.

    Args:
        path: the file to read (``str`` or path-like).
        device: where to put the Tensors: ``"cpu"`` (default), ``"cuda[:N]"`` or a Device.
        like: optional template: a pytree of dicts, lists, tuples, NamedTuples and
            ``None`` whose leaves have ``shape`` and ``dtype`` (Tensors, arrays, or
            ``fgrad.ShapeDtype`` from ``fgrad.eval_shape(model.init, key)``), such as a
            freshly initialised model's params or an optimiser's ``init`` state.

    Returns:
        The pytree with the saved structure (dicts, lists, tuples, ``None``; NamedTuples as
        dicts) or, with ``like``, with ``like``'s, whose leaves are Tensors with the saved
        shapes and dtypes; ``BF16`` tensors become float32 Tensors (exactly: every bfloat16
        value is a float32 value).

    Raises:
        ValueError: the file is not a valid safetensors file, or is damaged: too short,
            truncated (header or data shorter than declared), a header that is not UTF-8
            JSON or breaks a limit (over 100 MB, more than 262 144 tensors, more than 64
            dimensions), a tensor with an invalid shape, dtype (float8) or byte
            range (past the data, overlapping another, a gap, bytes after the last), a
            header or tensor that does not match fgrad's checksum (the message names the
            tensor), or an fgrad tree that does not match the tensors; with ``like``, a leaf
            whose tensor is missing or has another shape or dtype, or a tensor no leaf
            takes. The message names ``path`` and the tensors, and says what to do.
        TypeError: ``like`` holds a node checkpoints cannot hold (a dataclass).
        OSError: the file cannot be read (for example ``FileNotFoundError``).
        ImportError: the ``safetensors`` package is not installed, or the file holds
            ``BF16`` tensors and ``ml_dtypes`` is not installed.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> save(path, ([fnp.array([1, 2], dtype="int32")], {"scale": fnp.array(0.5)}))
        >>> load(path)
        ([Tensor([1, 2], dtype=int32)], {'scale': Tensor(0.5, dtype=float64)})
    """
    path = os.fspath(path)
    on_cpu = device is None or backend.get_device(device).platform == "cpu"
    with open(path, "rb") as f:  # fgrad's checks, before the library parses anything
        size = os.fstat(f.fileno()).st_size
        text, start = _read_header(path, f, size)  # start: where the data section begins
    metadata, entries = _parse_header(path, text, size - start)
    del text
    st = _safetensors("load")
    if any(e[0] == "BF16" for e in entries.values()):
        _need_ml_dtypes(path)
    changed = f"{path}: the file changed while it was loaded; load it again"
    try:
        opened = st.safe_open(path, framework="np", backend="pread")
    except st.SafetensorError as e:
        raise ValueError(f"{path}: not a safetensors file the library accepts: {e}") from None
    with opened as f:
        if (f.metadata() or {}) != metadata or set(f.keys()) != entries.keys():
            raise ValueError(changed)  # the library read another header than fgrad checked
        fgrad_meta = _check_fgrad_metadata(path, f.metadata() or {}, entries)
        crcs = None if fgrad_meta is None else fgrad_meta[1]
        tensors = {}
        for name, (code, shape, _, _) in entries.items():  # in file order: sequential
            try:
                arr = f.get_tensor(name)
            except (st.SafetensorError, ValueError, TypeError) as e:
                raise ValueError(
                    f"{path}: tensor {name!r} could not be read ({e}); the file was truncated "
                    "or changed while it was loaded"
                ) from None
            if arr.dtype.name != _NAMES[code] or arr.shape != shape:
                raise ValueError(changed)
            arr = _checked(path, name, code, arr, None if crcs is None else crcs[name])
            # copy=False: the array is fresh and ours; a CUDA load copies it to the device
            # and drops it, so that only one host array exists at a time.
            tensors[name] = asarray(arr, device=device, copy=False if on_cpu else None)
            del arr
    if fgrad_meta is None:
        tensors = dict(sorted(tensors.items()))
        return tensors if like is None else _into(path, like, tensors)
    used: set[str] = set()

    def resolve(name: str) -> Any:
        value = tensors[name]
        used.add(name)
        return value

    try:
        tree = _io_tree.decode(fgrad_meta[0], resolve)
    except _io_tree.TreeError as e:
        raise ValueError(f"{path}: corrupt fgrad tree in the metadata: {e}") from None
    if len(used) < len(tensors):
        unused = sorted(set(tensors) - used)
        raise ValueError(
            f"{path}: tensors {unused[:5]} are not referenced by the fgrad tree in the "
            "metadata; the header is damaged, or the file was edited by another tool"
        )
    return tree if like is None else _into(path, like, tensors)


def _into(path: str, like: Any, tensors: dict[str, Any]) -> Any:
    """The tensors in ``like``'s structure, each checked against the leaf it replaces."""
    missing: list[str] = []
    used: set[str] = set()

    def take(name: str, leaf: Any) -> Any:
        value = tensors.get(name)
        if value is None:
            missing.append(name)
            return leaf
        used.add(name)
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is not None and tuple(shape) != tuple(value.shape):
            raise ValueError(
                f"{path}: tensor {name!r} has shape {tuple(value.shape)}, but the leaf of like "
                f"at {_io_tree.show(name)} has shape {tuple(shape)}: the checkpoint was saved "
                "from a model of other sizes"
            )
        if dtype is not None and np.dtype(dtype) != np.dtype(value.dtype):
            raise ValueError(
                f"{path}: tensor {name!r} has dtype {np.dtype(value.dtype)}, but the leaf of "
                f"like at {_io_tree.show(name)} has dtype {np.dtype(dtype)}; load without "
                "like= and cast (fgrad.tree.map(lambda x: x.astype(...), tree)), or give "
                "like the saved dtypes"
            )
        return value

    out = _io_tree.fill(like, take)
    saved = sorted(tensors)
    if missing:
        raise ValueError(
            f"{path}: like has leaves at {missing[:5]}{_more(missing)} that the checkpoint "
            f"has no tensor for (it holds {saved[:5]}{_more(saved)}); the checkpoint was "
            "saved from another structure"
        )
    unused = [name for name in saved if name not in used]
    if unused:
        raise ValueError(
            f"{path}: the checkpoint holds tensors {unused[:5]}{_more(unused)} that no leaf "
            "of like takes; give like the saved structure (a layer with use_bias=True where "
            "the checkpoint has biases), or load without like= and pick the tensors"
        )
    return out


def _more(names: list[str]) -> str:
    return f" and {len(names) - 5} more" if len(names) > 5 else ""


def _need_ml_dtypes(path: str) -> None:
    """Import ml_dtypes, which gives numpy the bfloat16 dtype the library reads BF16 into."""
    try:
        import ml_dtypes  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"{path} holds BF16 tensors, which need the ml_dtypes package to be read: "
            "pip install 'fgrad[io]' (or: pip install ml_dtypes)"
        ) from e


def _checked(path: str, name: str, code: str, arr: np.ndarray, crc: int | None) -> np.ndarray:
    """A tensor as read, checked against its CRC-32 when ``crc`` is given, as fgrad holds it."""
    if crc is not None and arr.size:
        actual = _crc(arr)
        if actual != crc:
            raise ValueError(
                f"{path}: tensor {name!r} is corrupt: its {arr.nbytes} bytes do not match the "
                f"checksum saved with it (crc32 {crc:08x}, the data give {actual:08x}); the "
                "file was damaged after it was saved (disk, copy or download): restore it "
                "from a good copy, or save it again"
            )
    if code == "BOOL":  # numpy needs 0 or 1 in a bool; other tools may have written 0xff
        raw = arr.view(np.uint8)
        np.not_equal(raw, 0, out=arr)
    elif code == "BF16":  # fgrad Tensors have no bfloat16: widen exactly to float32
        arr = arr.astype(np.float32)
    return arr


def _too_many() -> str:
    """The message for a header of more than ``_MAX_TENSORS`` tensors."""
    return f"more than {_MAX_TENSORS} tensors, far more than a checkpoint holds"


def _read_header(path: str, f: BinaryIO, size: int) -> tuple[str, int]:
    """The header's JSON text and the data section's offset in the file.

    The length field is checked against the file's size before anything else is read, and
    the tensor count (one ``"data_offsets"`` key per tensor) before the JSON is parsed.
    """
    if size < 8:
        raise ValueError(
            f"{path}: not a safetensors file: {size} bytes, fewer than the 8-byte header length"
        )
    first = f.read(8)
    n = int.from_bytes(first, "little")
    if n > _MAX_HEADER:
        raise ValueError(
            f"{path}: not a safetensors file: it starts with {first!r}, which as a header "
            f"length reads {n} bytes, over the format's limit of {_MAX_HEADER}"
        )
    if n > size - 8:
        raise ValueError(
            f"{path}: truncated or not a safetensors file: the header length field says "
            f"{n} bytes but only {size - 8} bytes follow it"
        )
    if n < 2:
        raise ValueError(f"{path}: not a safetensors file: invalid header length {n}")
    raw = f.read(n)  # buffered: n bytes, fewer only at the end of the file
    if len(raw) < n:
        raise ValueError(f"{path}: truncated while it was read: the file shrank during load")
    # Inside JSON strings a quote is escaped, so the key, spelt plainly, occurs once per
    # tensor (twice for a tensor named "data_offsets"); the parser counts any spelt with
    # escapes.
    if raw.count(b'"data_offsets"') > _MAX_TENSORS + 1:
        raise ValueError(f"{path}: corrupt header: {_too_many()}")
    try:
        return raw.decode("utf-8"), 8 + n
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not a safetensors file: the header is not UTF-8 JSON ({e})"
        ) from None


class _HeaderError(ValueError):
    """Raised inside ``json.loads`` to stop parsing; the message lacks the file's name."""


def _parse_header(path: str, text: str, available: int) -> tuple[dict, dict]:
    """Parse and check the header: ``(metadata, {name: (code, shape, begin, end)})``.

    The entries come in file order. The JSON decoder reports each object as it completes,
    so a header of too many tensors, or of many tensors that claim far more bytes than the
    data section holds, is refused while it is being parsed, before it costs more memory.
    """
    claimed = 0
    count = 0

    def on_object(pairs: list) -> dict:
        nonlocal claimed, count
        obj = dict(pairs)
        if len(obj) < len(pairs):
            seen: set = set()
            key = next(k for k, _ in pairs if k in seen or seen.add(k))
            raise _HeaderError(f"the key {key!r} appears twice in one object")
        offsets = obj.get("data_offsets")
        if type(offsets) is list and len(offsets) == 2:  # a tensor's entry
            count += 1
            if count > _MAX_TENSORS:
                raise _HeaderError(_too_many())
            begin, end = offsets
            if type(begin) is int and type(end) is int and end > begin:
                # Valid ranges add up to exactly the data section. Small headers, and those
                # that claim a little more (a file cut short), are left to the checks after
                # parsing, whose messages name the tensor.
                claimed += end - begin
                if claimed > 2 * available + _SLACK and count > _EARLY:
                    raise _HeaderError(
                        f"truncated or overlapping: its tensors need at least {claimed} bytes "
                        f"of data, but the data section holds only {available}"
                    )
        return obj

    try:
        header = json.loads(text, object_pairs_hook=on_object)
    except _HeaderError as e:
        raise ValueError(f"{path}: corrupt header: {e}") from None
    except RecursionError:  # a tensor entry is 3 levels deep; this is no header
        raise ValueError(
            f"{path}: not a safetensors file: the header's JSON is nested too deeply"
        ) from None
    except ValueError as e:
        raise ValueError(
            f"{path}: not a safetensors file: the header is not UTF-8 JSON ({e})"
        ) from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: not a safetensors file: the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError(f"{path}: corrupt header: __metadata__ must map str to str")
    entries = {name: _check_entry(path, name, entry, available) for name, entry in header.items()}
    del header
    return metadata, _check_layout(path, entries, available)


def _check_entry(path: str, name: str, entry: Any, available: int) -> tuple:
    """One tensor's header entry as ``(code, shape, begin, end)``, or a ValueError."""
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        raise ValueError(
            f"{path}: corrupt header: tensor {name!r} lacks dtype, shape or data_offsets"
        )
    code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(code, str) or code not in _ITEMSIZE:
        hint = "fgrad Tensors have no such dtype; " if isinstance(code, str) else ""
        raise ValueError(
            f"{path}: tensor {name!r} has dtype {code!r}, which fgrad cannot load ({hint}"
            f"supported: {', '.join(_ITEMSIZE)}); convert it, e.g. to F32, when writing the file"
        )
    well_formed = _naturals(shape) and _naturals(offsets) and len(offsets) == 2
    if not well_formed or offsets[0] > offsets[1]:
        raise ValueError(f"{path}: corrupt header: tensor {name!r} has a malformed shape/offsets")
    if len(shape) > _MAX_NDIM:
        raise ValueError(
            f"{path}: corrupt header: tensor {name!r} has {len(shape)} dimensions, more than "
            f"the {_MAX_NDIM} numpy supports"
        )
    itemsize = _ITEMSIZE[code]
    # Python ints, checked as they grow: a dimension of 2**70 is an error, not an overflow.
    virtual = itemsize
    for d in shape:
        virtual *= d or 1
        if virtual > _MAX_BYTES:
            raise ValueError(
                f"{path}: corrupt header: tensor {name!r} has shape {shape}, larger than any "
                "array can be"
            )
    begin, end = offsets
    if end > available:
        raise ValueError(
            f"{path}: truncated: tensor {name!r} needs bytes [{begin}, {end}) of the data "
            f"section, which holds only {available} bytes"
        )
    expected = 0 if 0 in shape else virtual
    if end - begin != expected:
        raise ValueError(
            f"{path}: corrupt header: tensor {name!r} of shape {tuple(shape)} and dtype {code} "
            f"needs {expected} bytes but its data_offsets span {end - begin}"
        )
    return code, tuple(shape), begin, end


def _naturals(xs: Any) -> bool:
    """Whether ``xs`` is a JSON list of non-negative integers (``True`` is no integer here)."""
    if type(xs) is not list:
        return False
    for x in xs:
        if type(x) is not int or x < 0:
            return False
    return True


def _check_layout(path: str, entries: dict, available: int) -> dict:
    """``entries`` in file order, checked to tile the data section: no overlap, no gap."""
    ordered = dict(sorted(entries.items(), key=lambda e: e[1][2:]))
    covered, previous = 0, None
    for name, (_, _, begin, end) in ordered.items():
        if begin < covered:
            raise ValueError(
                f"{path}: corrupt header: tensor {name!r} (bytes [{begin}, {end})) overlaps "
                f"tensor {previous!r}, which ends at {covered}"
            )
        if begin > covered:
            raise ValueError(
                f"{path}: corrupt header: bytes [{covered}, {begin}) of the data section belong "
                f"to no tensor (before tensor {name!r})"
            )
        covered, previous = end, name
    if covered < available:
        raise ValueError(
            f"{path}: corrupt file: {available - covered} bytes after the last tensor's data "
            "(appended to, or not a single safetensors file)"
        )
    return ordered


def _check_fgrad_metadata(
    path: str, metadata: dict[str, str], entries: dict
) -> tuple[str, dict[str, int] | None] | None:
    """fgrad's tree and checksums, checked against the header; None for a foreign file.

    A damaged byte must not turn an fgrad file into a "foreign" one (which would load as a
    flat dict) or one of format 1 (which has no checksums): the keys come as a set, and any
    key of the set that is present means all of its format must be.
    """
    present = {k for k in metadata if k.startswith("fgrad.")}
    if not present:
        return None
    restore = "the file was damaged after it was saved: restore it from a good copy"
    version = metadata.get(_FORMAT_KEY)
    if version is None:
        raise ValueError(
            f"{path}: corrupt header: the metadata has fgrad keys {sorted(present)} but no "
            f"{_FORMAT_KEY!r}; {restore}"
        )
    if version not in ("1", _FORMAT_VERSION):
        raise ValueError(
            f"{path}: fgrad checkpoint format {version!r} is not one this fgrad reads (1 or "
            f"{_FORMAT_VERSION}): written by a newer fgrad (upgrade it), or damaged"
        )
    checked = version != "1" or bool(present & {_CRC_KEY, _HEADER_CRC_KEY})
    required = _FGRAD_KEYS if checked else {_FORMAT_KEY, _TREE_KEY}
    if present != required:
        odd = sorted(present ^ required)
        raise ValueError(
            f"{path}: corrupt header: fgrad's metadata keys are {sorted(present)}, not "
            f"{sorted(required)} (the difference: {odd}); {restore}"
        )
    if not checked:
        return metadata[_TREE_KEY], None
    saved = metadata[_HEADER_CRC_KEY]
    actual = _header_digest(metadata, ((n, e[0], e[1]) for n, e in entries.items()))
    if saved != actual:
        raise ValueError(
            f"{path}: corrupt header: it does not match the checksum saved with it "
            f"({_HEADER_CRC_KEY} is {saved!r}, the header gives {actual!r}), so tensor "
            f"names, dtypes, shapes or the tree changed; {restore}"
        )
    try:
        crcs = json.loads(metadata[_CRC_KEY])
    except (ValueError, RecursionError):
        crcs = None
    if (
        not isinstance(crcs, dict)
        or crcs.keys() != entries.keys()
        or not all(isinstance(c, str) and len(c) == 8 for c in crcs.values())
    ):
        raise ValueError(
            f"{path}: corrupt header: {_CRC_KEY} is not one 8-digit checksum per tensor; "
            f"{restore}"
        )
    try:
        return metadata[_TREE_KEY], {name: int(c, 16) for name, c in crcs.items()}
    except ValueError:
        raise ValueError(
            f"{path}: corrupt header: {_CRC_KEY} holds a checksum that is not hexadecimal; "
            f"{restore}"
        ) from None
