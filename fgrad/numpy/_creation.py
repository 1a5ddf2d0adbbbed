"""Array creation: array, asarray, zeros, ones, full, arange, eye, linspace, *_like."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import backend, dtypes
from fgrad.core.trace import Tracer, concrete_value
from fgrad.errors import ConcretizationError
from fgrad.ops.elementwise import full_like as _full_like
from fgrad.tensor import Tensor, _wrap, as_tensor
from fgrad.tensor import asarray as _asarray

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
]


def array(object: Any, dtype: Any = None, *, device: Any = None, copy: bool = True) -> Tensor:
    """Make a Tensor, copying the data (numpy's ``array``).

    Nested lists that hold Tensors (traced ones too) are stacked with differentiable ops,
    so ``fnp.array([x[1], -x[0]])`` works inside ``grad`` and ``jit``, as in JAX.

    Args:
        object: Tensor, array, Python scalar or nested lists (of scalars or Tensors).
        dtype: optional dtype.
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.
        copy: copy array data (default True).

    Returns:
        A Tensor; Python floats give float64 and ints int64, as numpy.

    Raises:
        TypeError: ``object`` is not numeric.

    Example:
        >>> fnp.array([1.0, 2.0], dtype="float32")
        Tensor([1., 2.], dtype=float32)
    """
    if isinstance(object, (list, tuple)) and _holds_tensor(object):
        out = _stack_nested(object)
        return out if dtype is None else out.astype(dtype)
    return _asarray(object, dtype=dtype, device=device, copy=copy)


def asarray(a: Any, dtype: Any = None, *, device: Any = None, copy: bool | None = None) -> Tensor:
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

    Raises:
        TypeError: ``a`` is not numeric.

    Example:
        >>> fnp.asarray([1, 2])
        Tensor([1, 2], dtype=int64)
        >>> fgrad.jit(lambda lr: fnp.asarray([lr, 1.0]))(0.5)
        Tensor([0.5, 1. ], dtype=float64)
    """
    if isinstance(a, (list, tuple)) and _holds_tensor(a):
        out = _stack_nested(a)
        return out if dtype is None else out.astype(dtype)
    return _asarray(a, dtype=dtype, device=device, copy=copy)


def _holds_tensor(seq: Any) -> bool:
    return any(
        isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and _holds_tensor(x)) for x in seq
    )


def _stack_nested(seq: Any) -> Tensor:
    from fgrad.numpy._shape import stack  # a sibling module of this layer

    parts = [
        _stack_nested(x) if isinstance(x, (list, tuple)) else as_tensor(x)
        for x in seq
    ]
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
    dev = backend.get_device(device)
    xp = np if dev.platform == "cpu" else backend.namespace_of(backend.asarray_on(0, dev))
    return _wrap(getattr(xp, fn_name)(*args, dtype=dtype))


def zeros(shape: Any, dtype: Any = None, *, device: Any = None) -> Tensor:
    """A Tensor of zeros.

    Args:
        shape: int or tuple of ints.
        dtype: default float64.
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.

    Example:
        >>> fnp.zeros((2,), dtype="float32")
        Tensor([0., 0.], dtype=float32)
    """
    shape = _static(shape, "zeros", "shape")
    return _make("zeros", shape, dtype=dtype or np.float64, device=device)


def ones(shape: Any, dtype: Any = None, *, device: Any = None) -> Tensor:
    """A Tensor of ones (float64 unless ``dtype`` is given).

    Example:
        >>> fnp.ones(2)
        Tensor([1., 1.], dtype=float64)
    """
    shape = _static(shape, "ones", "shape")
    return _make("ones", shape, dtype=dtype or np.float64, device=device)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> Tensor:
    """A Tensor filled with ``fill_value`` (dtype inferred from it unless given).

    Example:
        >>> fnp.full((2,), 3)
        Tensor([3, 3], dtype=int64)
    """
    shape = _static(shape, "full", "shape")
    if isinstance(fill_value, Tracer):  # traced fill values too, as in JAX: a broadcast
        from fgrad.numpy._shape import broadcast_to  # a sibling module of this layer

        value = fill_value if dtype is None else fill_value.astype(dtype)
        return broadcast_to(value, (shape,) if isinstance(shape, int) else shape)
    return _make("full", shape, fill_value, dtype=dtype, device=device)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, *, device: Any = None):
    """Evenly spaced values in ``[start, stop)`` (numpy's ``arange``).

    Example:
        >>> fnp.arange(3)
        Tensor([0, 1, 2], dtype=int64)
    """
    hint = "for traced bounds write start + step * fnp.arange(n) with a static n"
    args = (start,) if stop is None else (start, stop, step)
    return _make("arange", *_static(args, "arange", "a bound", hint), dtype=dtype, device=device)


def linspace(start: float, stop: float, num: int = 50, *, endpoint: bool = True, dtype: Any = None, device: Any = None):
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
        dtype: result dtype; default the ends' float dtype (float64 for Python numbers).
        device: ``"cpu"`` or ``"cuda[:N]"`` for Python-number ends; Tensor ends keep
            their own device.

    Returns:
        Tensor of shape ``(num, ...)``.

    Raises:
        ConcretizationError: ``num`` is traced.
        ValueError: ``num`` is negative.

    Example:
        >>> fnp.linspace(0.0, 1.0, 3)
        Tensor([0. , 0.5, 1. ], dtype=float64)
        >>> fgrad.jit(lambda stop: fnp.linspace(0.0, stop, 3))(2.0)
        Tensor([0., 1., 2.], dtype=float64)
    """
    num = _static(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    if isinstance(start, Tensor) or isinstance(stop, Tensor):
        return _linspace_ops(start, stop, num, endpoint, dtype)
    data = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    return _asarray(data, device=device)


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


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None):
    """The ``(n, m)`` identity-like matrix with ones on diagonal ``k`` (float64 by default).

    Example:
        >>> fnp.eye(2)
        Tensor([[1., 0.],
                [0., 1.]], dtype=float64)
    """
    n, m, k = _static(n, "eye", "n"), _static(m, "eye", "m"), _static(k, "eye", "k")
    return _asarray(np.eye(n, m, k, dtype=dtype or np.float64), device=device)


def full_like(a: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """A Tensor shaped like ``a`` filled with ``fill_value``; carries no derivative for ``a``.

    ``fill_value`` may be a 0-d Tensor, also a traced one (as in JAX): the result is then
    it broadcast, cast to ``dtype`` (``a.dtype`` when not given), and differentiable in it.

    Example:
        >>> fnp.full_like(fnp.array([1.0, 2.0]), 7.0)
        Tensor([7., 7.], dtype=float64)
    """
    if isinstance(fill_value, Tensor):
        from fgrad.numpy._shape import broadcast_to  # a sibling module of this layer

        if fill_value.ndim:
            raise ValueError(
                f"full_like: fill_value must be a scalar, got shape {fill_value.shape}; "
                "use fnp.broadcast_to(value, a.shape) for an array"
            )
        value = fill_value.astype(a.dtype if dtype is None else np.dtype(dtype))
        return broadcast_to(value, tuple(a.shape))
    return _full_like(a, fill_value=fill_value, dtype=None if dtype is None else np.dtype(dtype))


def zeros_like(a: Any, dtype: Any = None) -> Tensor:
    """Zeros shaped like ``a``.

    Example:
        >>> fnp.zeros_like(fnp.array([1, 2]))
        Tensor([0, 0], dtype=int64)
    """
    return full_like(a, 0, dtype)


def ones_like(a: Any, dtype: Any = None) -> Tensor:
    """Ones shaped like ``a``.

    Example:
        >>> fnp.ones_like(fnp.array([1.5]))
        Tensor([1.], dtype=float64)
    """
    return full_like(a, 1, dtype)
