"""The Array API standard's namespace helpers: dtype queries, promotion, DLPack.

``fgrad.numpy`` is the namespace that ``Tensor.__array_namespace__()`` returns, so code
written for the Array API standard (``xp = array_namespace(x)``, scikit-learn with
``array_api_dispatch=True``, array-api-extra) runs on Tensors and is differentiable by
fgrad's transforms. This module holds the standard's functions that are about dtypes,
shapes and devices rather than values: ``__array_namespace_info__``, ``finfo``, ``iinfo``,
``result_type``, ``can_cast``, ``isdtype``, ``broadcast_shapes``, ``from_dlpack``,
``astype`` (with the standard's ``copy`` and ``device``), and numpy's dtype and shape
queries that array code asks of its inputs (``issubdtype``, ``ndim``, ``shape``, ...).

Reference: the Python Array API standard, version 2025.12
(https://data-apis.org/array-api/2025.12/), whose reference implementation is
``array_api_strict``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args, backend, dtypes
from fgrad.errors import DTypeError, ShapeError
from fgrad.numpy._elementwise import astype as _cast
from fgrad.tensor import Tensor, _wrap, as_tensor, device_arg, device_put

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "finfo",
    "iinfo",
    "result_type",
    "can_cast",
    "isdtype",
    "promote_types",
    "issubdtype",
    "iscomplexobj",
    "isrealobj",
    "isscalar",
    "iterable",
    "ndim",
    "shape",
    "size",
    "broadcast_shapes",
    "from_dlpack",
    "astype",
    "generic",
    "number",
    "inexact",
    "floating",
    "complexfloating",
    "integer",
    "signedinteger",
    "unsignedinteger",
]

__array_api_version__ = "2025.12"

# The versions of the standard a caller may ask for (``x.__array_namespace__(api_version=)``):
# fgrad.numpy follows the newest, which keeps every earlier version's functions.
_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")

# numpy's abstract scalar types, for ``fnp.issubdtype(x.dtype, fnp.floating)`` (as jax.numpy).
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger

# The standard's dtypes (no float16: the standard has none), by kind, in its order.
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_ALL = ("bool",) + _KINDS["numeric"]


def _check_api_version(api_version: Any, fn: str) -> None:
    """Refuse a version of the standard fgrad.numpy does not follow (None is the newest).

    Raises:
        ValueError: ``api_version`` is not one of ``_API_VERSIONS``.
    """
    if api_version is not None and api_version not in _API_VERSIONS:
        raise ValueError(
            f"{fn}: api_version {api_version!r} is not a version of the Array API standard "
            f"that fgrad.numpy follows; use None (the newest, {__array_api_version__}) or "
            f"one of {', '.join(_API_VERSIONS)}"
        )


def _dtype_of(value: Any, fn: str, arg: str) -> np.dtype:
    """The dtype of a dtype, a Tensor or an array, with errors naming ``fn`` and ``arg``."""
    if isinstance(value, Tensor):
        return value.dtype
    if hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(value, type):
        return _args.dtype(value.dtype, fn, f"the dtype of {arg}", none_ok=False)
    return _args.dtype(value, fn, arg, none_ok=False)


def _device(device: Any, fn: str) -> backend.Device:
    """``device`` (None, a name or a Device) as a Device fgrad has."""
    return device_arg(device, fn)


class _NamespaceInfo:
    """What fgrad.numpy supports: the object ``fnp.__array_namespace_info__()`` returns.

    Example:
        >>> info = fnp.__array_namespace_info__()
        >>> info.default_dtypes()["real floating"]
        dtype('float64')
    """

    __slots__ = ()

    def capabilities(self) -> dict[str, Any]:
        """The optional features fgrad.numpy has, by the standard's names.

        Boolean-mask indexing and functions whose output shape depends on values
        (``nonzero``, ``unique_*``) work on concrete Tensors (eagerly and under ``grad``);
        under ``jit`` and ``vmap`` they raise ``ConcretizationError``, as JAX's do.

        Returns:
            ``{"boolean indexing": True, "data-dependent shapes": True,
            "max dimensions": 64}`` (numpy 2's limit).

        Example:
            >>> fnp.__array_namespace_info__().capabilities()["max dimensions"]
            64
        """
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> backend.Device:
        """The device new Tensors go to when none is named: the CPU.

        Example:
            >>> fnp.__array_namespace_info__().default_device()
            cpu
        """
        return backend.CPU

    def devices(self) -> tuple[backend.Device, ...]:
        """Every device fgrad can put Tensors on: the CPU, then each GPU cupy sees.

        Example:
            >>> fnp.__array_namespace_info__().devices()[0]
            cpu
        """
        gpus = backend._gpu_count()  # 0 without cupy or a GPU
        return (backend.CPU,) + tuple(backend.Device("cuda", i) for i in range(gpus))

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        """The dtypes fgrad.numpy's functions make when none is given (numpy's defaults).

        Args:
            device: None (the default device), ``"cpu"``, ``"cuda[:N]"`` or a Device.

        Returns:
            A dict with keys ``"real floating"`` (float64), ``"complex floating"``
            (complex128), ``"integral"`` and ``"indexing"`` (int64).

        Raises:
            ValueError: an unknown device.

        Example:
            >>> fnp.__array_namespace_info__().default_dtypes()["indexing"]
            dtype('int64')
        """
        _device(device, "__array_namespace_info__().default_dtypes")
        return {
            "real floating": dtypes.float64,
            "complex floating": dtypes.complex128,
            "integral": dtypes.int64,
            "indexing": dtypes.int64,
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """The standard's dtypes that fgrad supports, by name, of one kind or several.

        Args:
            device: None (the default device), ``"cpu"``, ``"cuda[:N]"`` or a Device; every
                device supports the same dtypes.
            kind: None (all), one of ``"bool"``, ``"signed integer"``, ``"unsigned
                integer"``, ``"integral"``, ``"real floating"``, ``"complex floating"``,
                ``"numeric"``, or a tuple of these (their union).

        Returns:
            A dict from canonical names (``"float32"``) to numpy dtypes.

        Raises:
            ValueError: an unknown kind or device.

        Example:
            >>> fnp.__array_namespace_info__().dtypes(kind="real floating")
            {'float32': dtype('float32'), 'float64': dtype('float64')}
        """
        fn = "__array_namespace_info__().dtypes"
        _device(device, fn)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names: list[str] = []
        for k in kinds:
            if k is not None and (not isinstance(k, str) or k not in _KINDS):
                raise ValueError(
                    f"{fn}: unknown kind {k!r}; use None, a tuple of kinds, or one of "
                    f"{', '.join(map(repr, _KINDS))}"
                )
            names += [n for n in (_ALL if k is None else _KINDS[k]) if n not in names]
        return {n: np.dtype(n) for n in names}

    def __repr__(self) -> str:
        return "fgrad.numpy.__array_namespace_info__()"


def __array_namespace_info__() -> _NamespaceInfo:
    """The Array API's inspection object: fgrad.numpy's capabilities, devices and dtypes.

    Returns:
        An object with ``capabilities()``, ``default_device()``, ``devices()``,
        ``default_dtypes(*, device=None)`` and ``dtypes(*, device=None, kind=None)``.

    Example:
        >>> info = fnp.__array_namespace_info__()
        >>> info.default_device(), sorted(info.dtypes(kind="complex floating"))
        (cpu, ['complex128', 'complex64'])
    """
    return _NamespaceInfo()


def finfo(type: Any, /) -> np.finfo:
    """Machine limits of a floating or complex dtype (numpy's ``finfo``).

    Args:
        type: a floating or complex dtype (a name, numpy dtype or scalar type), or a
            Tensor or array of one. A complex dtype gives its real part's limits.

    Returns:
        numpy's ``finfo`` object: ``bits``, ``eps``, ``max``, ``min``,
        ``smallest_normal`` (the standard's names), ``dtype``, and numpy's others
        (``tiny``, ``resolution``, ...). Values are numpy scalars of the dtype.

    Raises:
        DTypeError: ``type`` is not a floating or complex dtype (use :func:`iinfo` for
            integers).

    Example:
        >>> fnp.finfo(fnp.float32).eps
        np.float32(1.1920929e-07)
        >>> fnp.finfo(fnp.ones(2)).bits
        64
    """
    dt = _dtype_of(type, "finfo", "type")
    if dt.kind not in "fc":
        raise DTypeError(
            f"finfo: {dt} is not a floating or complex dtype; use fnp.iinfo for integer dtypes"
        )
    return np.finfo(dt)


def iinfo(type: Any, /) -> np.iinfo:
    """Machine limits of an integer dtype (numpy's ``iinfo``).

    Args:
        type: an integer dtype (a name, numpy dtype or scalar type), or a Tensor or array
            of one.

    Returns:
        numpy's ``iinfo`` object: ``bits``, ``max``, ``min`` (Python ints) and ``dtype``.

    Raises:
        DTypeError: ``type`` is not an integer dtype (use :func:`finfo` for floating ones).

    Example:
        >>> fnp.iinfo(fnp.int32).max
        2147483647
    """
    dt = _dtype_of(type, "iinfo", "type")
    if dt.kind not in "iu":
        raise DTypeError(
            f"iinfo: {dt} is not an integer dtype; use fnp.finfo for floating and complex dtypes"
        )
    return np.iinfo(dt)


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype that promoting these Tensors, dtypes and Python scalars gives.

    numpy 2's promotion, in which Python scalars are weak (``float32`` with ``1.0`` stays
    float32), as fgrad's ops promote. It extends the standard's table with numpy's mixed
    kinds (``int64`` with ``uint64`` gives float64; the standard leaves those undefined).

    Args:
        arrays_and_dtypes: Tensors, arrays, dtypes (names, numpy dtypes, scalar types) or
            Python scalars; at least one that is not a Python scalar.

    Returns:
        A numpy dtype.

    Raises:
        TypeError: no arguments, or only Python scalars (they have no dtype of their own).
        DTypeError: an argument is neither numeric nor a dtype.

    Example:
        >>> fnp.result_type(fnp.ones(2, dtype="float32"), 2.0)
        dtype('float32')
        >>> fnp.result_type("int32", fnp.int64)
        dtype('int64')
    """
    if all(type(a) in (bool, int, float, complex) for a in arrays_and_dtypes):
        raise TypeError(
            "result_type: needs at least one Tensor, array or dtype (Python scalars alone "
            f"have no dtype), got {len(arrays_and_dtypes)} Python scalar(s)"
        )
    args = []
    for i, a in enumerate(arrays_and_dtypes):
        if type(a) in (bool, int, float, complex) or isinstance(a, Tensor):
            args.append(a)
        else:
            args.append(_dtype_of(a, "result_type", f"argument {i}"))
    return dtypes.result_type(*args)


def can_cast(from_: Any, to: Any, /, casting: str = "safe") -> bool:
    """Whether ``from_`` casts to ``to`` under numpy's ``casting`` rule (safe by default).

    Args:
        from_: a dtype, or a Tensor or array (its dtype).
        to: a dtype.
        casting: ``"no"``, ``"equiv"``, ``"safe"`` (the standard's rule), ``"same_kind"``
            or ``"unsafe"``.

    Returns:
        A Python bool.

    Raises:
        DTypeError: ``from_`` or ``to`` is not a numeric dtype.
        ValueError: an unknown ``casting``.

    Example:
        >>> fnp.can_cast(fnp.float32, fnp.float64), fnp.can_cast(fnp.float64, fnp.float32)
        (True, False)
    """
    src = _dtype_of(from_, "can_cast", "from_")
    dst = _args.dtype(to, "can_cast", "to", none_ok=False)
    _args.choice(casting, "can_cast", "casting", ("no", "equiv", "safe", "same_kind", "unsafe"))
    return bool(np.can_cast(src, dst, casting=casting))


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``, by the Array API's kind names.

    Args:
        dtype: a dtype (a name, numpy dtype or scalar type).
        kind: a dtype (or its name), one of ``"bool"``, ``"signed integer"``, ``"unsigned
            integer"``, ``"integral"``, ``"real floating"``, ``"complex floating"``,
            ``"numeric"``, or a tuple of these (any of them).

    Returns:
        A Python bool.

    Raises:
        DTypeError: ``dtype`` is not a dtype (a Tensor is not: pass ``x.dtype``).
        ValueError: an unknown kind name.

    Example:
        >>> fnp.isdtype(fnp.float32, "real floating")
        True
        >>> fnp.isdtype(fnp.int8, ("bool", "unsigned integer"))
        False
    """
    dt = _args.dtype(dtype, "isdtype", "dtype", none_ok=False)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            if dt.name in _KINDS[k]:
                return True
            continue
        try:  # a dtype (or its name, as fgrad takes dtypes everywhere)
            if dt == _args.dtype(k, "isdtype", "kind", none_ok=False):
                return True
        except DTypeError:
            if not isinstance(k, str):
                raise
            raise ValueError(
                f"isdtype: unknown kind {k!r}; use a dtype, a tuple, or one of "
                f"{', '.join(map(repr, _KINDS))}"
            ) from None
    return False


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both dtypes cast to safely (numpy's ``promote_types``).

    Args:
        type1: a dtype (a name, numpy dtype or scalar type).
        type2: a dtype.

    Returns:
        A numpy dtype.

    Raises:
        DTypeError: an argument is not a numeric dtype.

    Example:
        >>> fnp.promote_types("int8", "uint8")
        dtype('int16')
    """
    a = _args.dtype(type1, "promote_types", "type1", none_ok=False)
    b = _args.dtype(type2, "promote_types", "type2", none_ok=False)
    return np.promote_types(a, b)


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """Whether dtype ``arg1`` is below ``arg2`` in numpy's type hierarchy.

    Args:
        arg1: a dtype, or a Tensor's ``dtype``.
        arg2: a dtype or an abstract type (``fnp.floating``, ``fnp.integer``,
            ``fnp.number``, ``fnp.inexact``, ``fnp.complexfloating``, ...).

    Returns:
        A Python bool.

    Raises:
        DTypeError: an argument is neither a numeric dtype nor an abstract type (a Tensor
            is not: pass ``x.dtype``).

    Example:
        >>> x = fnp.ones(2, dtype="float32")
        >>> fnp.issubdtype(x.dtype, fnp.floating), fnp.issubdtype(x.dtype, fnp.integer)
        (True, False)
    """
    return bool(np.issubdtype(_type(arg1, "arg1"), _type(arg2, "arg2")))


def _type(value: Any, arg: str) -> Any:
    """issubdtype's argument: numpy's abstract type (np.floating) as it is, else a dtype."""
    if isinstance(value, type) and issubclass(value, np.generic):
        return value
    return _args.dtype(value, "issubdtype", arg, none_ok=False)


def _dtype_of_value(x: Any) -> np.dtype:
    """The dtype of a Tensor, an array, a Python scalar or nested lists (numpy's)."""
    if hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def iscomplexobj(x: Any) -> bool:
    """Whether ``x`` has a complex dtype (whatever its values), as numpy's.

    Args:
        x: a Tensor, an array, a Python scalar or nested lists.

    Returns:
        A Python bool.

    Example:
        >>> fnp.iscomplexobj(fnp.array([1 + 0j])), fnp.iscomplexobj(fnp.ones(2))
        (True, False)
    """
    return _dtype_of_value(x).kind == "c"


def isrealobj(x: Any) -> bool:
    """Whether ``x`` has a dtype that is not complex, as numpy's.

    Args:
        x: a Tensor, an array, a Python scalar or nested lists.

    Returns:
        A Python bool.

    Example:
        >>> fnp.isrealobj(fnp.ones(2)), fnp.isrealobj(1j)
        (True, False)
    """
    return not iscomplexobj(x)


def isscalar(element: Any) -> bool:
    """Whether ``element`` is a scalar: a Python or numpy scalar, or a 0-d Tensor.

    As ``jax.numpy.isscalar`` (numpy's says False for 0-d arrays, which fgrad's ops return
    where numpy returns scalars).

    Args:
        element: anything.

    Returns:
        A Python bool.

    Example:
        >>> fnp.isscalar(1.5), fnp.isscalar(fnp.sum(fnp.ones(3))), fnp.isscalar(fnp.ones(3))
        (True, True, False)
    """
    if isinstance(element, Tensor):
        return element.ndim == 0
    return bool(np.isscalar(element))


def iterable(y: Any) -> bool:
    """Whether ``iter(y)`` works: a Tensor that is not 0-d, a list, an array, ...

    Args:
        y: anything.

    Returns:
        A Python bool.

    Example:
        >>> fnp.iterable(fnp.ones(2)), fnp.iterable(fnp.array(1.0)), fnp.iterable(2.0)
        (True, False, False)
    """
    if isinstance(y, Tensor):
        return y.ndim > 0
    return bool(np.iterable(y))


def ndim(a: Any) -> int:
    """The number of dimensions of a Tensor, an array, a scalar or nested lists.

    Example:
        >>> fnp.ndim(fnp.ones((2, 3))), fnp.ndim(1.0), fnp.ndim([[1, 2]])
        (2, 0, 2)
    """
    return len(shape(a))


def shape(a: Any) -> tuple[int, ...]:
    """The shape of a Tensor, an array, a scalar (``()``) or nested lists.

    Raises:
        ShapeError: nested lists of unequal lengths (no shape).

    Example:
        >>> fnp.shape(fnp.ones((2, 3))), fnp.shape(1.0), fnp.shape([[1, 2]])
        ((2, 3), (), (1, 2))
    """
    if isinstance(a, Tensor) or (hasattr(a, "shape") and not isinstance(a, type)):
        return tuple(a.shape)
    try:
        return np.shape(a)
    except ValueError as err:
        raise ShapeError(f"shape: {_args.describe(a)} has no shape: {err}") from None


def size(a: Any, axis: Any = None) -> int:
    """The number of elements of ``a``, or its length along ``axis`` (numpy's ``size``).

    Args:
        a: a Tensor, an array, a scalar or nested lists.
        axis: None (all elements), an int, or a tuple of ints (the product of those
            lengths).

    Raises:
        ValueError: ``axis`` out of range for ``a``'s dimensions.

    Example:
        >>> fnp.size(fnp.ones((2, 3))), fnp.size(fnp.ones((2, 3)), 1)
        (6, 3)
    """
    dims = shape(a)
    if axis is None:
        return int(np.prod(dims, dtype=np.int64))
    axes = _args.axes(axis, "size", len(dims))
    return int(np.prod([dims[i] for i in axes], dtype=np.int64))


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that arrays of these shapes broadcast to (numpy's rules).

    Args:
        shapes: shapes (tuples of non-negative ints, or ints for 1-d shapes).

    Returns:
        A tuple of ints (``()`` for no shapes).

    Raises:
        ShapeError: the shapes do not broadcast (a dimension that differs and is not 1).
        DTypeError: a shape holds something that is not an int.

    Example:
        >>> fnp.broadcast_shapes((2, 1), (3,), ())
        (2, 3)
    """
    parsed = [_args.shape(s, "broadcast_shapes", f"shape {i}") for i, s in enumerate(shapes)]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*parsed))
    except ValueError:
        raise ShapeError(
            f"broadcast_shapes: the shapes {', '.join(map(str, parsed))} do not broadcast "
            "(each dimension, counted from the end, must be equal or 1)"
        ) from None


# DLPack device types (dlpack.h's DLDeviceType): where a producer's buffer lives.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A Tensor of the data of any DLPack producer (a numpy, cupy or torch array, ...).

    With ``copy=None`` (the standard's default) the Tensor shares the producer's memory
    where it can, as DLPack intends: changing the producer's array afterwards changes the
    Tensor too, so pass ``copy=True`` when the producer may be written to. ``np.from_dlpack``
    of a Tensor goes the other way (``Tensor.__dlpack__``) and gives a read-only array.

    Args:
        x: an object with ``__dlpack__`` and ``__dlpack_device__`` (a Tensor too).
        device: None (where ``x`` is), ``"cpu"``, ``"cuda[:N]"`` or a Device.
        copy: True always copies; False never does (raises where a copy is needed);
            None copies only when needed.

    Returns:
        A Tensor of ``x``'s shape and dtype.

    Raises:
        TypeError: ``x`` supports no DLPack.
        ValueError: a device fgrad has no namespace for, an unknown ``device``,
            ``copy=False`` where moving the data needs a copy, or data DLPack cannot share.
        DTypeError: the data is not numeric (strings, objects, dates).

    Example:
        >>> a = np.arange(3.0)
        >>> t = fnp.from_dlpack(a, copy=True)
        >>> t, np.from_dlpack(t).flags.writeable
        (Tensor([0., 1., 2.], dtype=float64), False)
    """
    if isinstance(x, Tensor) and type(x) is not Tensor:  # a traced value stays traced
        return x if device is None else device_put(x, device)
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(
            f"from_dlpack: {_args.describe(x)} supports no DLPack (__dlpack__); use "
            "fnp.asarray for lists, scalars and arrays without it"
        )
    copy = None if copy is None else _args.flag(copy, "from_dlpack", "copy")
    target = None if device is None else _device(device, "from_dlpack")
    if isinstance(x, np.ndarray):
        _args.dtype(x.dtype, "from_dlpack", "the dtype of x", none_ok=False)  # numeric only
    kind = int(x.__dlpack_device__()[0])
    if kind in (_DL_CPU, _DL_CUDA_HOST):
        try:
            data = np.from_dlpack(x, copy=copy)
        except BufferError as err:  # a dtype DLPack cannot carry, or copy=False refused
            raise ValueError(f"from_dlpack: {_args.describe(x)} cannot be shared: {err}") from None
        if not copy and data.flags.writeable:  # Tensors do not write to shared memory
            data = data.view()
            data.flags.writeable = False
    elif kind == _DL_CUDA:
        xp = backend.namespace_for(backend.Device("cuda", int(x.__dlpack_device__()[1])))
        data = xp.from_dlpack(x) if not copy else xp.from_dlpack(x).copy()
    else:
        raise ValueError(
            f"from_dlpack: the data is on DLPack device type {kind}, which fgrad has no "
            "array namespace for (it has the CPU and CUDA GPUs); copy it to the CPU first"
        )
    if target is not None and backend.device_of(data) != target:
        if copy is False:
            raise ValueError(
                f"from_dlpack: copy=False, but moving the data from {backend.device_of(data)} "
                f"to {target} needs a copy; pass copy=None"
            )
        data = backend.to_device(data, target)
    return _wrap(data)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``x`` cast to ``dtype`` (differentiable between floating and complex dtypes).

    The standard's ``astype``. Tensors are immutable, so a copy is never observable:
    ``copy=False`` may return ``x`` itself when nothing changes, ``copy=True`` may too.
    Casts to integer or bool dtypes carry no gradient (the result is not traced), as in
    JAX.

    Args:
        x: Tensor, array or Python scalar of any shape and numeric dtype.
        dtype: a numeric dtype (a name, numpy dtype or scalar type).
        copy: accepted for the standard (see above).
        device: None (``x``'s device), ``"cpu"``, ``"cuda[:N]"`` or a Device.

    Returns:
        Tensor of ``x.shape`` and ``dtype``, on ``device``.

    Raises:
        DTypeError: ``x`` is not numeric, or ``dtype`` is not a numeric dtype.
        ValueError: an unknown device, or a traced value asked to move to another device.

    Example:
        >>> fnp.astype(fnp.array([1.5, 2.5]), fnp.int32)
        Tensor([1, 2], dtype=int32)
        >>> fnp.array([1.0]).astype("float32", copy=False)
        Tensor([1.], dtype=float32)
    """
    if copy is not True and copy is not False:
        _args.flag(copy, "astype", "copy")
    x = x if isinstance(x, Tensor) else as_tensor(x, "astype", "x")
    dt = _args.dtype(dtype, "astype", "dtype", none_ok=False)
    out = x if (dt == x.dtype and not x.weak) else _cast(x, dt)
    if device is not None:
        target = _device(device, "astype")
        if out.device != target:
            out = device_put(out, target)
    return out
