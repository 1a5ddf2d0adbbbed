"""Array creation: array, asarray, zeros, ones, full, arange, eye, linspace, *_like."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args, backend, dtypes
from fgrad.core.trace import Tracer, concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.ops.elementwise import full_like as _full_like
from fgrad.tensor import Tensor, _asarray, _wrap, as_tensor, device_arg

__all__ = [
    "array",
    "asarray",
    "zeros",
    "ones",
    "full",
    "arange",
    "linspace",
    "eye",
    "full_like",
    "zeros_like",
    "ones_like",
    # numpy's scalar types, callable: fnp.float32(1.0) is a 0-d float32 Tensor
    "bool_",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def array(
    object: Any, dtype: Any = None, *, device: Any = None, copy: bool = True, order: str = "K",
    subok: bool = False, ndmin: int = 0, ndmax: int = 0, like: Any = None,
) -> Tensor:
    """Make a Tensor, copying the data (numpy's ``array``).

    Nested lists that hold Tensors (traced ones too) are stacked with differentiable ops,
    so ``fnp.array([x[1], -x[0]])`` works inside ``grad`` and ``jit``, as in JAX.

    Args:
        object: Tensor, array, Python scalar or nested lists (of scalars or Tensors).
        dtype: optional dtype.
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.
        copy: copy array data (default True).
        order, subok, like: numpy's; checked, and change nothing (Tensors are row-major;
            ``like`` must be None).
        ndmin: the least number of dimensions: leading axes of length 1 are added.
        ndmax: 0, or the most dimensions the nested lists may have (numpy would make
            object arrays beyond it, which Tensors cannot hold: a ValueError here).

    Returns:
        A Tensor; Python floats give float64 and ints int64, as numpy.

    Raises:
        DTypeError: ``object`` is not numeric (strings, None, objects, dates), ``dtype`` is
            not a numeric dtype, or ``copy`` is not None or a bool.
        ShapeError: nested lists are ragged.

    Example:
        >>> fnp.array([1.0, 2.0], dtype="float32")
        Tensor([1., 2.], dtype=float32)
    """
    copy = None if copy is None else _args.flag(copy, "array", "copy")
    _numpy_layout("array", order, like, subok)
    ndmin = _args.size(ndmin, "array", "ndmin")
    ndmax = _args.size(ndmax, "array", "ndmax")
    out = _make_tensor(object, dtype, device, copy, "array", "object")
    if ndmax and out.ndim > ndmax:
        raise ValueError(
            f"array: object has {out.ndim} dimensions, more than ndmax={ndmax} (numpy would "
            "make an object array, which a Tensor cannot hold)"
        )
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + tuple(out.shape))
    return out


def asarray(
    a: Any, dtype: Any = None, order: str | None = None, *, device: Any = None,
    copy: bool | None = None, like: Any = None,
) -> Tensor:
    """Make a Tensor, copying only when needed (numpy's ``asarray``; :func:`fgrad.asarray`).

    Nested lists that hold Tensors (traced ones too, such as ``jit``'s traced Python
    floats) are stacked with differentiable ops, as :func:`array` does, so
    ``fnp.asarray([lr, 1.0])`` works inside ``jit`` and ``grad``, as in JAX.

    Args:
        a: Tensor, array, Python scalar or nested lists (of scalars or Tensors).
        dtype: optional dtype.
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.
        copy: ``None`` copies raw arrays (a Tensor never aliases a mutable array),
            ``False`` raises where a copy is needed.
        order, like: numpy's; checked, and change nothing (Tensors are row-major).

    Raises:
        DTypeError: ``a`` is not numeric (strings, None, objects, dates), ``dtype`` is not
            a numeric dtype, or ``copy`` is not None or a bool.
        ShapeError: nested lists are ragged.

    Example:
        >>> fnp.asarray([1, 2])
        Tensor([1, 2], dtype=int64)
        >>> fgrad.jit(lambda lr: fnp.asarray([lr, 1.0]))(0.5)
        Tensor([0.5, 1. ], dtype=float64)
    """
    copy = None if copy is None else _args.flag(copy, "asarray", "copy")
    _numpy_layout("asarray", order, like)
    return _make_tensor(a, dtype, device, copy, "asarray", "a")


def _numpy_layout(fn: str, order: Any = "C", like: Any = None, subok: Any = False) -> None:
    """Check numpy's ``order``, ``like`` (None only) and ``subok``, which change nothing
    for Tensors (always row-major, one type): numpy's calls work, bad values raise."""
    if order is not None:
        _args.choice(order, fn, "order", ("C", "F", "A", "K"))
    if like is not None:  # numpy's dispatch to other array libraries: results are Tensors
        raise TypeError(
            f"{fn}: like= is not supported (fgrad always makes Tensors), got "
            f"{_args.describe(like)}; leave it None"
        )
    _args.flag(subok, fn, "subok")


def _make_tensor(value: Any, dtype: Any, device: Any, copy: Any, fn: str, arg: str) -> Tensor:
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        out = _stack_nested(value, fn, arg)
        return out if dtype is None else out.astype(_args.dtype(dtype, fn))
    return _asarray(value, dtype, device, copy, fn, arg)


def _holds_tensor(seq: Any) -> bool:
    return any(
        isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and _holds_tensor(x)) for x in seq
    )


def _stack_nested(seq: Any, fn: str, arg: str) -> Tensor:
    from fgrad.numpy._shape import stack  # a sibling module of this layer

    parts = [
        _stack_nested(x, fn, arg) if isinstance(x, (list, tuple)) else as_tensor(x, fn, arg)
        for x in seq
    ]
    shapes = {tuple(p.shape) for p in parts}
    if len(shapes) > 1:
        raise ShapeError(
            f"{fn}: {arg} is ragged: its entries have shapes {sorted(shapes)}; nested lists "
            "must have entries of one shape"
        )
    return stack(parts)


_SIZE_HINT = "take the size from a static shape such as x.shape[0] (sizes cannot be traced)"


def _static(value: Any, fn: str, what: str, hint: str = _SIZE_HINT) -> Any:
    """``value`` with Tensors made Python numbers: sizes and bounds are needed before any op runs.

    Integer tracers of eager transforms (grad, jvp, vmap) have concrete values and no
    derivative, so they are used as they are. Abstract tracers (jit, make_graph) have no
    value; floating tracers would silently lose their derivative. Both raise
    ConcretizationError naming ``fn``, the argument and what to do instead.
    """
    if isinstance(value, (tuple, list)):
        return tuple(_static(v, fn, what, hint) for v in value)
    if not isinstance(value, Tensor):
        return value
    if isinstance(value, Tracer):
        integral = dtypes.is_integer(value.dtype) or dtypes.is_bool(value.dtype)
        try:
            data = concrete_value(value) if integral else None
        except ConcretizationError:
            data = None
        if data is None:
            raise ConcretizationError(
                f"fnp.{fn}: {what} is a traced value {value.aval}, but {fn} needs a Python "
                "number there. Pass a Python value and mark that argument static (jit's "
                f"static_argnums / static_argnames), or {hint}"
            ) from None
        return data.tolist()
    return value._data.tolist()


def _make(fn_name: str, *args: Any, dtype: Any = None, device: Any = None) -> Tensor:
    dev = device if isinstance(device, backend.Device) else backend.get_device(device)
    xp = np if dev.platform == "cpu" else backend.namespace_of(backend.asarray_on(0, dev))
    return _wrap(getattr(xp, fn_name)(*args, dtype=dtype))


def _shape_arg(shape: Any, fn: str) -> tuple[int, ...]:
    """A static shape (traced integers made concrete), checked by :func:`fgrad._args.shape`."""
    return _args.shape(_static(shape, fn, "shape"), fn)


def _filled(fn: str, shape: Any, dtype: Any, device: Any, make: str | None = None) -> Tensor:
    """zeros or ones (``make``, default ``fn``): ``shape``, ``dtype`` (default float64) and
    ``device`` checked, errors naming ``fn``."""
    shape = _shape_arg(shape, fn)
    dtype = _args.dtype(dtype, fn) or np.dtype(np.float64)
    return _make(make or fn, shape, dtype=dtype, device=device_arg(device, fn))


def zeros(
    shape: Any, dtype: Any = None, order: str = "C", *, device: Any = None, like: Any = None
) -> Tensor:
    """A Tensor of zeros.

    Args:
        shape: int or tuple of ints (``>= 0``; not floats, not bools).
        dtype: a numeric dtype; default float64.
        order, like: numpy's; checked, and change nothing (Tensors are row-major).
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.

    Raises:
        DTypeError: ``shape`` holds something other than ints, or ``dtype`` is not a
            numeric dtype.
        ShapeError: a negative size.
        ValueError: unknown device.

    Example:
        >>> fnp.zeros((2,), dtype="float32")
        Tensor([0., 0.], dtype=float32)
    """
    _numpy_layout("zeros", order, like)
    return _filled("zeros", shape, dtype, device)


def ones(
    shape: Any, dtype: Any = None, order: str = "C", *, device: Any = None, like: Any = None
) -> Tensor:
    """A Tensor of ones (float64 unless ``dtype`` is given).

    Raises:
        DTypeError: ``shape`` holds something other than ints, or ``dtype`` is not a
            numeric dtype (``str``, ``object``, ``datetime64``).
        ShapeError: a negative size.
        ValueError: unknown device.

    Example:
        >>> fnp.ones(2)
        Tensor([1., 1.], dtype=float64)
    """
    _numpy_layout("ones", order, like)
    return _filled("ones", shape, dtype, device)


def full(
    shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", *, device: Any = None,
    like: Any = None,
) -> Tensor:
    """A Tensor filled with ``fill_value`` (dtype inferred from it unless given).

    Args:
        shape: int or tuple of ints.
        fill_value: a number, or an array (Tensors too, traced ones as in JAX) that
            broadcasts to ``shape``.
        dtype: optional numeric dtype.
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.

    Raises:
        DTypeError: ``shape`` holds something other than ints, ``fill_value`` is not
            numeric (None, a string) or ``dtype`` is not a numeric dtype.
        ShapeError: a negative size, or ``fill_value`` does not broadcast to ``shape``.

    Example:
        >>> fnp.full((2,), 3)
        Tensor([3, 3], dtype=int64)
    """
    _numpy_layout("full", order, like)
    shape = _shape_arg(shape, "full")
    dtype = _args.dtype(dtype, "full")
    if isinstance(fill_value, Tracer):  # traced fill values too, as in JAX: a broadcast
        from fgrad.numpy._shape import broadcast_to  # a sibling module of this layer

        value = fill_value if dtype is None else fill_value.astype(dtype)
        return broadcast_to(value, shape)
    dev = device_arg(device, "full")
    value = as_tensor(fill_value, "full", "fill_value")
    if dtype is None:
        dtype = value.dtype
    try:
        return _make("full", shape, np.asarray(value), dtype=dtype, device=dev)
    except ValueError:
        raise ShapeError(
            f"full: fill_value of shape {tuple(value.shape)} does not broadcast to shape {shape}"
        ) from None


def arange(
    start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, *, device: Any = None,
    like: Any = None,
):
    """Evenly spaced values in ``[start, stop)`` (numpy's ``arange``).

    Args:
        start: the first value, or the end (from 0) when ``stop`` is None.
        stop: the end (excluded).
        step: the spacing, not 0.
        dtype: optional numeric dtype (default: the bounds' type, as numpy's).
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.

    Raises:
        DTypeError: a bound is not a real number, or ``dtype`` is not numeric.
        ValueError: ``step`` is 0, a bound is NaN or infinite, or the result too long.

    Example:
        >>> fnp.arange(3)
        Tensor([0, 1, 2], dtype=int64)
    """
    _numpy_layout("arange", None, like)
    hint = "for traced bounds write start + step * fnp.arange(n) with a static n"
    names = ("start",) if stop is None else ("start", "stop", "step")
    args = (start,) if stop is None else (start, stop, step)
    args = _static(args, "arange", "a bound", hint)
    for name, value in zip(names, args):
        _real_scalar(value, "arange", name)
    if len(args) == 3 and args[2] == 0:
        raise ValueError("arange: step must not be 0")
    dtype = _args.dtype(dtype, "arange")
    dev = device_arg(device, "arange")
    try:
        out = _make("arange", *args, dtype=dtype, device=dev)
    except (ValueError, OverflowError, MemoryError) as err:
        raise ValueError(f"arange: cannot make the range {args}: {err}") from None
    if not _args.is_numeric(out.dtype):  # Python ints beyond int64 give an object array
        raise ValueError(
            f"arange: the bounds {args} are beyond the int64 range; pass floats or a float "
            "dtype"
        )
    return out


def _real_scalar(value: Any, fn: str, arg: str) -> Any:
    """``value`` if it is a real Python or numpy number (bools too), else a DTypeError."""
    if isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
        return value
    raise DTypeError(f"{fn}: {arg} must be a real number, got {_args.describe(value)}")


def linspace(
    start: float, stop: float, num: int = 50, endpoint: bool = True, retstep: bool = False,
    dtype: Any = None, axis: int = 0, *, device: Any = None,
):
    """``num`` evenly spaced values from ``start`` to ``stop`` (float64 by default).

    ``start`` and ``stop`` may be Tensors, also traced ones (under ``jit``, ``grad``), as
    in JAX: the values are then computed with ops, by numpy's own steps (``start + i *
    step`` in the ends' float dtype, the last one ``stop``, floored for an integer
    ``dtype``), and are differentiable in the ends. ``num`` must be a Python int.

    Args:
        start, stop: Python numbers, or Tensors (0-d, or arrays that broadcast together:
            the result then has shape ``(num, *broadcast shape)``).
        num: number of values, a Python int ``>= 0``.
        endpoint: include ``stop`` (default True).
        retstep: also return the spacing: ``(samples, step)``, as numpy.
        dtype: result dtype; default the ends' float dtype (float64 for Python numbers).
        axis: where the new axis of the samples goes when the ends are arrays.
        device: ``"cpu"`` or ``"cuda[:N]"`` for Python-number ends; Tensor ends keep
            their own device.

    Returns:
        Tensor of shape ``(num, ...)`` (the new axis at ``axis``), and with ``retstep``
        the step (a Python float for Python-number ends, else a Tensor; NaN for
        ``num < 2`` with ``endpoint``).

    Raises:
        ConcretizationError: ``num`` is traced.
        DTypeError: ``num`` is not an int, an end is not numeric, or ``dtype`` is not a
            numeric dtype.
        ValueError: ``num`` is negative.

    Example:
        >>> fnp.linspace(0.0, 1.0, 3)
        Tensor([0. , 0.5, 1. ], dtype=float64)
        >>> fgrad.jit(lambda stop: fnp.linspace(0.0, stop, 3))(2.0)
        Tensor([0., 1., 2.], dtype=float64)
    """
    num = _args.size(_static(num, "linspace", "num"), "linspace", "num")
    endpoint = _args.flag(endpoint, "linspace", "endpoint")
    retstep = _args.flag(retstep, "linspace", "retstep")
    axis = _args.index(axis, "linspace", "axis")
    dtype = _args.dtype(dtype, "linspace")
    if isinstance(start, Tensor) or isinstance(stop, Tensor):
        out = _linspace_ops(start, stop, num, endpoint, dtype)
        if axis != 0:
            from fgrad.numpy._shape import moveaxis  # a sibling module of this layer

            out = moveaxis(out, 0, _args.axis(axis, "linspace", out.ndim))
        if retstep:
            div = (num - 1) if endpoint else num
            step = (stop - start) / div if div > 0 else as_tensor(np.nan) * (stop - start)
            return out, step
        return out
    dev = device_arg(device, "linspace")
    start = as_tensor(start, "linspace", "start")._data
    stop = as_tensor(stop, "linspace", "stop")._data
    try:
        data = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
    except ValueError as err:
        raise ShapeError(f"linspace: start and stop do not broadcast: {err}") from None
    except TypeError as err:
        raise DTypeError(
            f"linspace: cannot compute with start {start!r}, stop {stop!r}: {err}"
        ) from None
    if retstep:
        data, step = data
        return _asarray(data, None, dev, None, "linspace"), float(step) if np.ndim(step) == 0 else _asarray(step, None, dev, None, "linspace")
    return _asarray(data, None, dev, None, "linspace")


def _linspace_ops(start: Any, stop: Any, num: int, endpoint: bool, dtype: Any) -> Tensor:
    """numpy's ``linspace`` (numpy/_core/function_base.py) step by step, with ops."""
    from fgrad.numpy._elementwise import floor, where  # sibling modules of this layer
    from fgrad.numpy._reductions import any as any_

    dt = np.dtype(dtypes.result_type(start, stop, 1.0))  # the ends' float dtype
    div = (num - 1) if endpoint else num
    delta = stop - start
    y = _make("arange", num, dtype=dt, device=None).reshape((-1,) + (1,) * len(np.shape(delta)))
    if div > 0:
        step = delta / div
        # numpy divides first where a step underflows to 0 (subnormal ends, gh-5437)
        y = where(any_(as_tensor(step == 0)), y / div * delta, y * step)
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y = y.at[-1].set(stop)
    if dtype is not None and dtypes.is_integer(dtype):
        y = floor(y)
    return y.astype(dt if dtype is None else np.dtype(dtype))


def eye(
    N: int, M: int | None = None, k: int = 0, dtype: Any = None, order: str = "C", *,
    device: Any = None, like: Any = None,
):
    """The ``(N, M)`` identity-like matrix with ones on diagonal ``k`` (float64 by default).

    Args:
        N: number of rows, an int ``>= 0``.
        M: number of columns (default ``N``).
        k: the diagonal: 0 the main one, positive above, negative below.
        dtype: optional numeric dtype.
        order, like: numpy's; checked, and change nothing (Tensors are row-major).
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.

    Raises:
        DTypeError: ``N``, ``M`` or ``k`` is not an int, or ``dtype`` is not numeric.
        ValueError: ``N`` or ``M`` is negative.

    Example:
        >>> fnp.eye(2)
        Tensor([[1., 0.],
                [0., 1.]], dtype=float64)
    """
    _numpy_layout("eye", order, like)
    n = _args.size(_static(N, "eye", "N"), "eye", "N")
    m = _args.size(_static(M, "eye", "M"), "eye", "M", none_ok=True)
    k = _args.index(_static(k, "eye", "k"), "eye", "k")
    dtype = _args.dtype(dtype, "eye") or np.dtype(np.float64)
    return _asarray(np.eye(n, m, k, dtype=dtype), None, device_arg(device, "eye"), None, "eye")


def full_like(
    a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
    shape: Any = None, *, device: Any = None,
) -> Tensor:
    """A Tensor shaped like ``a`` filled with ``fill_value``; carries no derivative for ``a``.

    ``fill_value`` may be a 0-d Tensor, also a traced one (as in JAX): the result is then
    it broadcast, cast to ``dtype`` (``a.dtype`` when not given), and differentiable in it.
    ``shape`` overrides ``a``'s shape and ``device`` its device, as numpy's and JAX's;
    ``order`` and ``subok`` are checked and change nothing.

    Raises:
        DTypeError: ``a`` or ``fill_value`` is not numeric, or ``dtype`` is not a numeric
            dtype.
        ShapeError: ``fill_value`` is not a scalar.

    Example:
        >>> fnp.full_like(fnp.array([1.0, 2.0]), 7.0)
        Tensor([7., 7.], dtype=float64)
    """
    return _like("full_like", a, fill_value, dtype, order, subok, shape, device)


def _like(
    fn: str, a: Any, fill_value: Any, dtype: Any, order: Any = "K", subok: Any = True,
    shape: Any = None, device: Any = None,
) -> Tensor:
    """full_like, zeros_like and ones_like, their errors naming ``fn``."""
    _numpy_layout(fn, order, None, subok)
    dtype = _args.dtype(dtype, fn)
    if not isinstance(a, Tensor):
        a = as_tensor(a, fn, "a")
    if shape is not None or device is not None:
        target = tuple(a.shape) if shape is None else _shape_arg(shape, fn)
        dev = a.device if device is None else device_arg(device, fn)
        if isinstance(fill_value, Tensor):
            from fgrad.numpy._shape import broadcast_to  # a sibling module of this layer

            return broadcast_to(fill_value.astype(a.dtype if dtype is None else dtype), target)
        return full(target, fill_value, a.dtype if dtype is None else dtype, device=dev)
    if not isinstance(fill_value, Tensor):
        if isinstance(fill_value, (str, bytes)) or not (
            np.isscalar(fill_value) or isinstance(fill_value, (list, tuple, np.ndarray))
        ):
            raise DTypeError(
                f"{fn}: fill_value must be a number, got {_args.describe(fill_value)}"
            )
        fill_value = np.asarray(fill_value)
        if not _args.is_numeric(fill_value.dtype):
            raise DTypeError(f"{fn}: fill_value must be a number, got {fill_value!r}")
        if fill_value.ndim:
            fill_value = as_tensor(fill_value, fn, "fill_value")
        else:
            fill_value = fill_value.item()
    if isinstance(fill_value, Tensor):
        from fgrad.numpy._shape import broadcast_to  # a sibling module of this layer

        if fill_value.ndim:
            raise ShapeError(
                f"{fn}: fill_value must be a scalar, got shape {fill_value.shape}; "
                "use fnp.broadcast_to(value, a.shape) for an array"
            )
        value = fill_value.astype(a.dtype if dtype is None else dtype)
        return broadcast_to(value, tuple(a.shape))
    return _full_like(a, fill_value=fill_value, dtype=dtype)


def zeros_like(
    a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *,
    device: Any = None,
) -> Tensor:
    """Zeros shaped like ``a``.

    Raises:
        DTypeError: ``a`` is not numeric, or ``dtype`` is not a numeric dtype.

    Example:
        >>> fnp.zeros_like(fnp.array([1, 2]))
        Tensor([0, 0], dtype=int64)
    """
    return _like("zeros_like", a, 0, dtype, order, subok, shape, device)


def ones_like(
    a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *,
    device: Any = None,
) -> Tensor:
    """Ones shaped like ``a``.

    Raises:
        DTypeError: ``a`` is not numeric, or ``dtype`` is not a numeric dtype.

    Example:
        >>> fnp.ones_like(fnp.array([1.5]))
        Tensor([1.], dtype=float64)
    """
    return _like("ones_like", a, 1, dtype, order, subok, shape, device)


class ScalarType:
    """A numpy dtype name that can also be called, as numpy's scalar types: ``fnp.float32``.

    As a dtype it is the numpy dtype (``np.dtype(fnp.float32)``, ``x.dtype == fnp.float32``,
    ``dtype=fnp.float32``, its ``kind``, ``name`` and ``itemsize``); called, it makes a
    Tensor of that dtype, as ``np.float32(1.0)`` makes a numpy scalar: a 0-d Tensor from a
    number (``jnp.float32(1.0)`` is a 0-d array too), or the cast of an array.

    Raises:
        DTypeError: (when called) the value is not numeric, such as a string.

    Example:
        >>> fnp.float32(1.5)
        Tensor(1.5, dtype=float32)
        >>> fnp.int32([1, 2])
        Tensor([1, 2], dtype=int32)
        >>> fnp.ones(2, dtype=fnp.float16).dtype == fnp.float16
        True
    """

    __slots__ = ("dtype", "__name__")

    def __init__(self, dtype: Any):
        self.dtype = np.dtype(dtype)
        self.__name__ = self.dtype.name if self.dtype.kind != "b" else "bool_"

    def __call__(self, value: Any = 0, imag: Any = None, /) -> Tensor:
        if imag is not None:  # numpy's complex64(real, imag)
            if self.dtype.kind != "c":
                raise TypeError(f"{self.__name__}: takes one value (imag is for complex types)")
            return self(value) + 1j * self(imag)
        if isinstance(value, Tensor):
            return value.astype(self.dtype)
        return _asarray(value, self.dtype, None, None, self.__name__, "value")

    def __eq__(self, other: Any) -> bool:
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __getattr__(self, name: str) -> Any:  # kind, name, itemsize, ...: the dtype's
        return getattr(object.__getattribute__(self, "dtype"), name)

    def __repr__(self) -> str:
        return f"fgrad.numpy.{self.__name__}"

    def __str__(self) -> str:
        return self.dtype.name


bool_ = ScalarType(dtypes.bool_)
int32 = ScalarType(dtypes.int32)
int64 = ScalarType(dtypes.int64)
float16 = ScalarType(dtypes.float16)
float32 = ScalarType(dtypes.float32)
float64 = ScalarType(dtypes.float64)
complex64 = ScalarType(dtypes.complex64)
complex128 = ScalarType(dtypes.complex128)
