"""The immutable Tensor and its abstract value, ShapeDtype.

A Tensor wraps one backend array (numpy or cupy) and never changes it. Operators and
methods (``+``, ``@``, ``x[i]``, ``x.T``, ``x.at[i].set(v)``) are installed by
``fgrad.numpy`` so that this module does not depend on the ops.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import numpy as np

from fgrad import _args, backend, tree
from fgrad.errors import DeletedError, DTypeError, FgradError, MutationError, ShapeError

__all__ = ["Tensor", "ShapeDtype", "asarray", "device_put", "block_until_ready"]


def _ndim(self) -> int:
    """The number of dimensions."""
    return len(self.shape)


def _size(self) -> int:
    """The number of elements."""
    return math.prod(self.shape)


class Donated:
    """Stands in for the data of a Tensor donated to ``jit`` (``donate_argnums``).

    The jitted function may have written its outputs into that buffer, so any use of the
    old Tensor's values (an op, ``np.asarray``, ``.item()``) raises DeletedError instead of
    showing other values; its ``shape`` and ``dtype`` stay readable, as a deleted JAX
    array's do. Reference: JAX's buffer donation, where a donated array is deleted.
    """

    __slots__ = ("_where", "shape", "dtype")

    def __init__(self, where: str, shape: tuple = (), dtype: Any = None):
        self._where = where
        self.shape = shape
        self.dtype = dtype

    def _raise(self, *args: Any, **kwargs: Any):
        raise DeletedError(
            f"this Tensor was donated to {self._where} (donate_argnums / donate_argnames) and "
            "may have been overwritten by its outputs; use the function's results instead, "
            "or do not donate arguments you use again"
        )

    def __getattr__(self, name: str):
        self._raise()

    __array__ = __array_ufunc__ = __array_function__ = __len__ = __iter__ = _raise


class ShapeDtype(NamedTuple):
    """The abstract value (``aval``) of an array: its shape and dtype, no data.

    ``weak`` marks a weakly typed value (JAX's weak types, numpy 2's NEP 50 for Python
    scalars): a Python float that ``jit`` traces, and what Python operators make of such
    values. In an op with arrays it takes their dtype (``float32 array * lr`` stays float32);
    alone its dtype is the one numpy gives the Python number (float64, complex128). A weak
    aval is not equal to the strong one of the same dtype.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak: bool = False
    # A leaf of pytrees, not a namedtuple node: transforms take avals in place of arrays.
    _pytree_leaf = True

    def __str__(self) -> str:
        text = f"{_short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"
        return "weak " + text if self.weak else text

    def __repr__(self) -> str:
        weak = ", weak=True" if self.weak else ""
        return f"ShapeDtype(shape={self.shape!r}, dtype={self.dtype!r}{weak})"

    ndim = property(_ndim)  # shared with Tensor
    size = property(_size)


_new_aval = tuple.__new__

_SHORT = {"float": "f", "int": "i", "uint": "u", "complex": "c", "bool": "bool"}


def _short_dtype(dtype: np.dtype) -> str:
    name = np.dtype(dtype).name
    for long, short in _SHORT.items():
        if name.startswith(long):
            return short + name[len(long) :]
    return name


class Tensor:
    """An immutable n-dimensional array on a device.

    Make one with :func:`fgrad.asarray` or :func:`fgrad.numpy.array`. Tensors cannot be
    changed in place: ``x[0] = 1`` raises ``MutationError`` (a ``TypeError``); write
    ``x = x.at[0].set(1)`` instead, which returns a new Tensor.

    Raises:
        TypeError: the class is called (``Tensor()``, ``fnp.ndarray(shape)``): that would
            be a Tensor without data.

    Example:
        >>> import fgrad
        >>> x = fgrad.asarray([1.0, 2.0], dtype="float32")
        >>> x
        Tensor([1., 2.], dtype=float32)
        >>> x.shape, x.dtype, x.ndim, x.size
        ((2,), dtype('float32'), 1, 2)
    """

    __slots__ = ("_data",)
    __array_priority__ = 100  # so ``np_array + tensor`` defers to Tensor.__radd__

    def __init__(self, *args: Any, **kwargs: Any):
        # Tensors are made by asarray and the ops (which skip __init__); calling the class
        # (fnp.ndarray(...), as np.ndarray(shape)) would give a Tensor without data.
        if type(self) is Tensor:
            raise TypeError(
                "Tensor: Tensors are not made by calling the class; use fgrad.asarray(data) "
                "or fgrad.numpy.array(data), or fgrad.numpy.zeros(shape) for a shape"
            )
    weak = False  # only traced values are weakly typed (see ShapeDtype.weak)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, a tuple of ints."""
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype."""
        return self._data.dtype

    @property
    def aval(self) -> ShapeDtype:
        """The abstract value ``ShapeDtype(shape, dtype)``."""
        data = self._data
        return _new_aval(ShapeDtype, (data.shape, data.dtype, False))  # skips NamedTuple's __new__

    ndim = property(_ndim)
    size = property(_size)

    @property
    def device(self) -> backend.Device:
        """The :class:`fgrad.backend.Device` holding the data."""
        return backend.device_of(self._data)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d Tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        # numpy's protocol: the result shares the Tensor's buffer where it can, so it is
        # a read-only view; copy=True gives a private writable copy; copy=False raises
        # where a copy is unavoidable (another device, another dtype).
        data = self._data
        if not isinstance(data, (np.ndarray, np.generic)):
            if copy is False:
                raise ValueError(
                    f"np.asarray(copy=False) of a Tensor on {self.device} needs a copy to "
                    "the CPU; allow a copy or use fgrad.device_put(x, 'cpu')"
                )
            return np.asarray(backend.to_device(data, backend.CPU), dtype=dtype)
        out = np.asarray(data, dtype=dtype, copy=copy)
        if out is data or (copy is not True and np.may_share_memory(out, data)):
            out = out.view()
            out.flags.writeable = False  # the Tensor shares this buffer: keep it immutable
        return out

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # Exports a read-only view so consumers (np.from_dlpack) cannot change the Tensor.
        # DLPack before 1.0 cannot mark data read-only; such consumers get a copy.
        kwargs = {"stream": stream}
        if max_version is not None:
            kwargs.update(max_version=max_version, dl_device=dl_device, copy=copy)
        data = self._data
        if isinstance(data, np.generic):
            data = np.asarray(data)  # a fresh 0-d array that no one else holds
        elif isinstance(data, np.ndarray) and not copy:
            data = data.view()
            data.flags.writeable = False
            try:
                return data.__dlpack__(**kwargs)
            except BufferError:
                if copy is False:
                    raise
                data = data.copy()
        return data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        data = self._data
        return (
            np.asarray(data).__dlpack_device__()
            if isinstance(data, np.generic)
            else data.__dlpack_device__()
        )

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """This Tensor on ``device`` (the Array API's method; :func:`device_put` for one).

        Args:
            device: ``"cpu"``, ``"cuda"``/``"cuda:N"`` (needs cupy) or a Device, such as
                another Tensor's ``device``.
            stream: must be None: copies run on the device's current stream.

        Returns:
            The Tensor itself when it is on ``device`` already, else a copy there.

        Raises:
            ValueError: unknown device, a ``stream``, or a traced value inside a transform
                that would have to move to another device.

        Example:
            >>> x = fnp.ones(2)
            >>> x.to_device(x.device) is x
            True
        """
        if stream is not None:
            raise ValueError(
                "Tensor.to_device: stream must be None (fgrad copies on the device's current "
                f"stream), got {_args.describe(stream)}"
            )
        return device_put(self, device_arg(device, "Tensor.to_device"))

    def is_deleted(self) -> bool:
        """Whether the Tensor was donated to a jitted function (its values are gone), as
        JAX's ``Array.is_deleted``.

        Returns:
            True when the values are gone (``shape`` and ``dtype`` stay readable).

        Example:
            >>> step = fgrad.jit(lambda w: w * 0.5, donate_argnums=0)
            >>> w = fnp.ones(1024)
            >>> w_new = step(w)
            >>> w.is_deleted(), w.shape, w_new.is_deleted()
            (True, (1024,), False)
        """
        return type(self._data) is Donated

    def block_until_ready(self) -> Tensor:
        """Wait until the Tensor's value is computed and return it, as in JAX.

        On the GPU (cupy) kernels run asynchronously: time a call with
        ``f(x).block_until_ready()``. On numpy values are ready on return; a traced value
        is returned as it is.

        Returns:
            This Tensor (any shape and dtype), unchanged.

        Raises:
            DeletedError: the Tensor was donated to a jitted function.

        Example:
            >>> fgrad.jit(lambda x: x * 2.0)(fnp.ones(2)).block_until_ready()
            Tensor([2., 2.], dtype=float64)
        """
        data = self._data
        if type(data) is not np.ndarray:
            backend.synchronize(data)
        return self

    def item(self) -> Any:
        """The value of a one-element Tensor as a Python scalar."""
        return self._data.item()

    def tolist(self) -> Any:
        """The data as nested Python lists."""
        return np.asarray(self).tolist()

    def __bool__(self) -> bool:
        return bool(self._data)

    def __float__(self) -> float:
        return float(self._data)

    def __int__(self) -> int:
        return int(self._data)

    def __complex__(self) -> complex:
        return complex(self._data)

    def __index__(self) -> int:
        return self._data.__index__()

    def __setitem__(self, idx, value):
        raise MutationError(
            "Tensors are immutable and do not support item assignment; use the functional "
            "update x = x.at[idx].set(value) (or .add / .multiply), which returns a new Tensor"
        )

    def __delitem__(self, idx):
        raise MutationError("Tensors are immutable; build a new Tensor instead of deleting items")

    __hash__ = None  # like numpy arrays: equality is elementwise, so no hash

    def __repr__(self) -> str:
        if type(self._data) is Donated:
            return "Tensor(<donated>)"
        data = np.asarray(self)
        body = np.array2string(data, separator=", ", prefix="Tensor(")
        dev = "" if self.device == backend.CPU else f", device={self.device}"
        return f"Tensor({body}, dtype={data.dtype.name}{dev})"

    def __str__(self) -> str:
        return str(np.asarray(self))

    def __format__(self, spec: str) -> str:
        return format(self._data.item(), spec) if self.ndim == 0 else str(self)


def _wrap(data: Any) -> Tensor:
    """Make a Tensor from a backend array without copying (the array is owned)."""
    t = object.__new__(Tensor)
    t._data = data
    return t


def asarray(value: Any, dtype: Any = None, *, device: Any = None, copy: bool | None = None):
    """Make a Tensor from a Tensor, an array, a Python scalar or nested lists.

    Data from numpy arrays and lists is copied, so later changes to them do not reach the
    Tensor. Python floats become float64 and ints int64, as in numpy. Tensors hold numbers
    only: bool, integers, floats, complex (not yet bfloat16: cast it to float32).

    Args:
        value: Tensor, numpy/cupy array, DLPack-capable array, Python scalar or nested lists.
        dtype: optional numeric dtype (name, numpy dtype or scalar type).
        device: ``"cpu"`` (default), ``"cuda"``/``"cuda:N"`` (needs cupy) or a Device.
        copy: force (True) or avoid (False, where possible) a copy of array data.

    Returns:
        A Tensor.

    Raises:
        ValueError: unknown device, or cuda without cupy and a GPU.
        DTypeError: ``value`` is not numeric (a string, None, an object, dates) or
            ``dtype`` is not a numeric dtype (``str``, ``object``, ``datetime64``).

    Example:
        >>> asarray([[1, 2], [3, 4]]).dtype
        dtype('int64')
        >>> asarray(1.5, dtype="float32")
        Tensor(1.5, dtype=float32)
    """
    return _asarray(value, dtype, device, copy, "asarray")


def _asarray(value: Any, dtype: Any, device: Any, copy: Any, fn: str, arg: str = "the input"):
    """:func:`asarray`, with errors naming ``fn`` (the public function) and ``arg``."""
    if isinstance(value, Tensor) and type(value) is not Tensor:  # a tracer: keep it traced
        if value.weak:  # jit's traced Python scalar becomes an array, as the scalar would
            return value.astype(value.dtype if dtype is None else dtype)
        return value if dtype is None else value.astype(dtype)
    if dtype is not None:
        dtype = _args.dtype(dtype, fn)
    if isinstance(value, Tensor):
        if (dtype is None or dtype == value.dtype) and device is None and not copy:
            return value
        value = value._data
    target = device_arg(device, fn) if device is not None else None
    if isinstance(value, (str, bytes)) or value is None or (
        isinstance(value, np.ndarray) and not _args.is_numeric(value.dtype)
    ):
        raise _not_numeric(fn, arg, value)
    if not isinstance(value, _ARRAY_LIKE) and not any(hasattr(value, a) for a in _PROTOCOLS):
        raise _not_numeric(fn, arg, value)  # object(): numpy would make it True for bool
    if target is None:  # stay where an array already is (cupy, Array API arrays)
        xp = backend._XP_BY_TYPE.get(type(value))
        if xp is np or (xp is None and not hasattr(value, "__array_namespace__")):
            target = backend.CPU
        else:
            target = backend.device_of(value)
    try:
        data = backend.asarray_on(value, target, dtype=dtype, copy=copy)
    except (TypeError, ValueError, OverflowError) as err:
        if isinstance(err, FgradError):
            raise
        if copy is False and isinstance(err, ValueError):
            raise ValueError(
                f"{fn}: copy=False, but a Tensor of {_args.describe(value)} needs a copy (of "
                "a list, to another dtype or device); pass copy=None to copy only when needed"
            ) from None
        with_dtype = f" with dtype {dtype}" if dtype is not None else ""
        cls = ShapeError if isinstance(err, ValueError) else DTypeError
        raise cls(
            f"{fn}: cannot make a numeric Tensor from {_args.describe(value)}{with_dtype}: {err}"
        ) from None
    if not _args.is_numeric(data.dtype):
        raise _not_numeric(fn, arg, value, data.dtype)
    return _wrap(data)


# What asarray converts: numbers, sequences and arrays (by their protocols); any other
# object is refused before numpy could make it an object array or, for dtype=bool, True.
_ARRAY_LIKE = (list, tuple, np.ndarray, np.generic, numbers.Number)
_PROTOCOLS = ("__array__", "__array_namespace__", "__dlpack__", "__len__", "__float__")


def _not_numeric(fn: str, arg: str, value: Any, dtype: Any = None) -> DTypeError:
    got = _args.describe(value) + (f" (dtype {dtype})" if dtype is not None else "")
    return DTypeError(
        f"{fn}: {arg} must be numeric (a Tensor, an array or nested lists of numbers), got "
        f"{got}; Tensors hold bool, integer, floating or complex numbers"
        + _args.dtype_hint(dtype if dtype is not None else getattr(value, "dtype", None))
    )


def device_arg(device: Any, fn: str) -> backend.Device:
    """``backend.get_device(device)``, its errors naming the public function ``fn``.

    Raises:
        DTypeError: ``device`` is neither a string nor a Device.
        ValueError: unknown device, or cuda without cupy and a GPU.
    """
    if device is not None and not isinstance(device, (str, backend.Device)):
        raise DTypeError(
            f"{fn}: device must be 'cpu', 'cuda', 'cuda:N' or a Device, got "
            f"{_args.describe(device)}"
        )
    try:
        return backend.get_device(device)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{fn}: {err}") from None


def as_tensor(x: Any, fn: str | None = None, arg: str = "the input") -> Tensor:
    """``x`` as a Tensor: a Tensor as it is, anything else through :func:`asarray`.

    jit's weakly typed traced Python floats count as Python numbers here: a function that
    makes its argument a Tensor gives the array the Python number would become eagerly.
    With ``fn``, an input that is not numeric raises a DTypeError naming ``fn`` and
    ``arg`` (the public function and its argument).
    """
    if isinstance(x, Tensor) and not x.weak:
        return x
    return _asarray(x, None, None, None, fn or "asarray", arg)


def device_put(x: Any, device: Any = None) -> Any:
    """Put every array leaf of the pytree ``x`` on ``device`` as a Tensor.

    A Tensor already on ``device`` is returned as is (Tensors are immutable, so sharing is
    safe); others are copied there. numpy arrays, Python scalars and lists become Tensors
    (copied, as :func:`asarray` does).

    Args:
        x: a pytree whose leaves are Tensors, arrays or Python scalars.
        device: ``"cpu"`` (default), ``"cuda"``/``"cuda:N"`` (needs cupy) or a Device.

    Returns:
        A pytree of the structure of ``x`` with Tensor leaves on ``device``.

    Raises:
        ValueError: unknown device, cuda without cupy and a GPU, or a traced value inside a
            transform that would have to move to another device.

    Example:
        >>> params = {"w": np.ones(2), "b": 0.5}
        >>> fgrad.device_put(params, "cpu")
        {'b': Tensor(0.5, dtype=float64), 'w': Tensor([1., 1.], dtype=float64)}
    """
    target = backend.get_device(device)

    def put(leaf: Any) -> Any:
        if isinstance(leaf, Tensor):
            if leaf.device == target:
                return leaf
            if type(leaf) is not Tensor:  # a tracer: moving it would leave the trace
                raise ValueError(
                    f"device_put: cannot move the traced value {leaf.aval} from {leaf.device} "
                    f"to {target} inside a transform; move the inputs before calling it"
                )
            return _wrap(backend.to_device(leaf._data, target))
        return asarray(leaf, device=target)

    return tree.map(put, x)


def block_until_ready(x: Any) -> Any:
    """Wait until every Tensor in the pytree ``x`` is computed; return ``x``, as in JAX.

    Leaves that are not Tensors are passed through. Use it to time GPU (cupy) code,
    whose kernels run asynchronously; on numpy it returns at once.

    Args:
        x: any pytree; its Tensor leaves may have any shape and dtype.

    Returns:
        ``x`` itself.

    Raises:
        DeletedError: a Tensor leaf was donated to a jitted function.

    Example:
        >>> out = fgrad.block_until_ready({"loss": fnp.array(0.5), "step": 3})
        >>> out["step"]
        3
    """
    for leaf in tree.leaves(x):
        if isinstance(leaf, Tensor):
            leaf.block_until_ready()
    return x
