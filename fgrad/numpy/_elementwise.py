"""Elementwise functions under numpy's names (most are the registry's ops themselves).

The rest are compositions of ops, so their derivatives come from the ops' rules:
``square``, ``reciprocal``, ``exp2``, ``clip``, ``nan_to_num``, ``positive`` and the
``decimals`` form of ``round``. ``erf`` and ``erfc`` are not numpy functions; they are here
because numpy has no namespace for them (scipy.special's names, as in ``jax.scipy``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad.core.staging import weak
from fgrad.core.op import REGISTRY, is_weak
from fgrad.ops import elementwise as _e
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._rules import broadcast_shapes
from fgrad.tensor import Tensor, as_tensor

# The ops fgrad.numpy exports as they are, under the names their declarations give
# (``numpy=`` in fgrad/ops/elementwise.py): a new op needs no edit here. Their signatures
# are their kernels' (``inspect.signature(tanh)`` is ``(x)``) and their docstrings the
# user documentation.
_OPS = {name: op for op in REGISTRY.values() for name in op.numpy_names}
globals().update(_OPS)

# The functions with numpy's semantics beyond an op's (argument handling, compositions).
_WRAPPERS = [
    "astype",
    "clip",
    "exp2",
    "nan_to_num",
    "positive",
    "reciprocal",
    "round",
    "square",
    "where",
]
__all__ = sorted([*_OPS, *_WRAPPERS])


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """Cast ``x`` to ``dtype`` (differentiable between floating dtypes).

    Args:
        x: Tensor, array or Python scalar of any shape.
        dtype: a numpy dtype or its name.
        copy: accepted for the Array API's signature; Tensors are immutable, so a cast to
            the same dtype may return ``x`` itself either way.
        device: None or ``x``'s device (moving is ``fgrad.device_put``'s job).

    Returns:
        Tensor of ``x.shape`` and ``dtype``. Casts to integer or bool dtypes carry no
        gradient (the result is not traced).

    Raises:
        DTypeError: ``x`` is not numeric, or ``dtype`` is not a numeric dtype.
        ValueError: ``device`` is not ``x``'s.

    Example:
        >>> fnp.astype(fnp.array([1.5]), "float32")
        Tensor([1.5], dtype=float32)
    """
    _args.flag(copy, "astype", "copy")
    x = x if isinstance(x, Tensor) else as_tensor(x, "astype", "x")
    if device is not None and device != x.device:
        raise ValueError(
            f"astype: device={device!r} is not x's device {x.device!r}; move it with "
            "fgrad.device_put(x, device) first"
        )
    return _e.astype(x, dtype=_args.dtype(dtype, "astype", none_ok=False))


def _input(x: Any, fn: str, arg: str = "x") -> Any:
    """A Tensor, a traced value or a Python number as it is, anything else as a Tensor;
    non-numeric input raises a DTypeError naming ``fn`` and ``arg``."""
    if isinstance(x, Tensor) or type(x) in (bool, float, complex):
        return x
    if type(x) is int and -(2**63) <= x < 2**63:
        return x
    return as_tensor(x, fn, arg)


def _dtype(x: Any) -> np.dtype:
    return np.dtype(dtypes.result_type(x))


def _no_out(out: Any, fn: str) -> None:
    """numpy's ``out=``: Tensors are immutable, so the result is returned instead."""
    if out is not None:
        raise TypeError(
            f"{fn}: out= is not supported (Tensors are immutable); use the returned value, "
            f"y = fnp.{fn}(...)"
        )


def _ufunc_args(fn: str, out: Any, where: Any, dtype: Any, x: Any) -> Any:
    """numpy's ufunc keywords: ``out`` refused (Tensors are immutable), ``where`` only
    True (numpy leaves the other elements uninitialised without ``out``), ``dtype``: the
    input cast to it."""
    _no_out(out, fn)
    if where is not True:
        raise TypeError(
            f"{fn}: where= other than True is not supported (without out= numpy leaves the "
            f"other elements undefined); use fnp.where(mask, fnp.{fn}(x), other)"
        )
    if dtype is None:
        return x
    return _e.astype(as_tensor(x), dtype=_args.dtype(dtype, fn, none_ok=False))


def positive(x: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Any:
    """Numerical positive, ``+x``: ``x`` itself (Tensors are immutable, so no copy).

    Args:
        x: Tensor, array or Python scalar.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast ``x`` to this dtype first.

    Returns:
        ``x`` as a Tensor, with its derivative (the identity).

    Raises:
        TypeError: ``out`` is given, or ``where`` is not True.
        DTypeError: ``x`` is not numeric, or is bool (numpy's ``positive`` has no bool
            loop either).

    Example:
        >>> fnp.positive(fnp.array([-1.0, 2.0]))
        Tensor([-1.,  2.], dtype=float64)
    """
    x = _ufunc_args("positive", out, where, dtype, as_tensor(x, "positive", "x"))
    if dtypes.is_bool(x.dtype):
        raise DTypeError(
            "positive: not defined for bool input (as numpy's); use the Tensor itself, or "
            "x.astype(int) for numbers"
        )
    return x


def square(x: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Any:
    """``x * x``, elementwise.

    Args:
        x: Tensor, array or Python scalar of any shape.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast ``x`` to this dtype first.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype`` (bool gives int8, as numpy's).

    Raises:
        TypeError: ``out`` is given, or ``where`` is not True.

    Example:
        >>> fnp.square(fnp.array([-3.0, 0.5]))
        Tensor([9.  , 0.25], dtype=float64)
    """
    x = _int8_if_bool(_ufunc_args("square", out, where, dtype, _input(x, "square")))
    return _e.multiply(x, x)


def _int8_if_bool(x: Any) -> Any:
    """numpy's arithmetic ufuncs (``square``, ``reciprocal``) have no bool loop: int8."""
    if isinstance(x, bool):
        return np.int8(x)
    return _e.astype(x, dtype=np.dtype(np.int8)) if _dtype(x) == np.bool_ else x


def reciprocal(x: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Any:
    """``1 / x``, elementwise; integers keep their dtype (numpy's integer reciprocal).

    Args:
        x: Tensor, array or Python scalar of any shape.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast ``x`` to this dtype first.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``; ``inf`` at 0 for floating ``x``. Integer
        ``x`` gives numpy's truncated integer quotient ``1 // x`` towards zero (1 at 1,
        -1 at -1, else 0; 0 at 0, where numpy's result is platform-defined); bool gives
        int8. For a floating result, pass floats (``fnp.reciprocal(x, dtype=float)``).

    Raises:
        TypeError: ``out`` is given, or ``where`` is not True.

    Example:
        >>> fnp.reciprocal(fnp.array([2.0, -4.0]))
        Tensor([ 0.5 , -0.25], dtype=float64)
        >>> fnp.reciprocal(fnp.array([1, -1, 3]))
        Tensor([ 1, -1,  0], dtype=int64)
    """
    x = _int8_if_bool(_ufunc_args("reciprocal", out, where, dtype, _input(x, "reciprocal")))
    if isinstance(x, int) or (not isinstance(x, float | complex) and dtypes.is_integer(_dtype(x))):
        # |x| > 1 truncates to 0; a select, so that no integer division by 0 runs
        dt = _dtype(x)
        one, zero = np.ones((), dt), np.zeros((), dt)
        rest = zero if dt.kind == "u" else _e.where(_e.equal(x, -1), np.array(-1, dt), zero)
        return _e.where(_e.equal(x, 1), one, rest)
    return _e.divide(1.0, x)


def exp2(x: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Any:
    """``2 ** x``, elementwise.

    Args:
        x: Tensor, array or Python scalar of any shape.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast ``x`` to this dtype first.

    Returns:
        Tensor of ``x.shape`` and floating dtype.

    Raises:
        TypeError: ``out`` is given, or ``where`` is not True.

    Example:
        >>> fnp.exp2(fnp.array([3.0, -1.0]))
        Tensor([8. , 0.5], dtype=float64)
    """
    return _e.power(2.0, _ufunc_args("exp2", out, where, dtype, _input(x, "exp2")))


def round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    """Round to ``decimals`` decimal places, halves to even (numpy's ``round``).

    Piecewise constant: the result carries no derivative (it is not traced).

    Args:
        a: Tensor, array or Python scalar of any shape.
        decimals: number of decimal places; negative rounds to tens, hundreds, ...
        out: not supported (Tensors are immutable).

    Returns:
        Tensor of ``a.shape`` and ``a.dtype``.

    Raises:
        TypeError: ``out`` is given.
        DTypeError: ``a`` is not numeric, or ``decimals`` is not an int (``1.5`` is not
            truncated to 1; bools count as 0 and 1, as numpy's), or ``a`` is bool with
            ``decimals != 0``.

    Example:
        >>> fnp.round(fnp.array([2.5, 3.14159]), 2)
        Tensor([2.5 , 3.14], dtype=float64)
        >>> fnp.round(fnp.array([0.5, 1.5]))
        Tensor([0., 2.], dtype=float64)
    """
    _ufunc_args("round", out, True, None, None)
    x = _input(a, "round")
    decimals = _args.index(decimals, "round", "decimals", bool_ok=True)
    if decimals == 0:
        return _e.round(x)
    if dtypes.is_bool(_dtype(x)):  # numpy cannot cast the scaled values back to bool either
        raise DTypeError(
            f"round: bool input with decimals={decimals} (numpy refuses it too); cast first, "
            "fnp.round(x.astype(float), decimals)"
        )
    if not dtypes.is_inexact(_dtype(x)):
        if decimals > 0:
            return as_tensor(x)  # integers have no decimals to round
        scale = 10 ** (-decimals)
        return _e.multiply(_e.round(_e.divide(x, scale)), scale).astype(_dtype(x))
    # numpy's own method: scale, round to an integer, scale back.
    scale = 10.0**decimals
    return _e.divide(_e.round(_e.multiply(x, scale)), scale)


def clip(
    a: Any,
    a_min: Any = None,
    a_max: Any = None,
    out: Any = None,
    *,
    min: Any = None,
    max: Any = None,
) -> Any:
    """Limit the values of ``a`` to ``[min, max]``: ``minimum(maximum(a, min), max)``.

    Either bound may be None (no limit), a Python scalar or a Tensor that broadcasts with
    ``a``; bounds that are Tensors are differentiated too. The derivative in ``a`` is 1
    strictly inside, 0 outside, and 0.5 on a bound (shared with it), exactly as JAX's
    ``jnp.clip``, which is the same composition (PyTorch's ``clamp`` gives 1 there).

    Args:
        a: Tensor, array or Python scalar.
        a_min: lower bound (numpy's name); or pass ``min=``.
        a_max: upper bound (numpy's name); or pass ``max=``.
        out: not supported (Tensors are immutable).
        min: lower bound (the Array API's name).
        max: upper bound (the Array API's name).

    Returns:
        Tensor of the broadcast shape and promoted dtype.

    Raises:
        DTypeError: ``a`` or a bound is not numeric.
        ShapeError: the bounds do not broadcast with ``a``.
        ValueError: a bound is given twice (``a_min`` and ``min``, or ``a_max`` and ``max``).
        TypeError: ``out`` is given.

    Example:
        >>> fnp.clip(fnp.array([-2.0, 0.5, 3.0]), 0.0, 1.0)
        Tensor([0. , 0.5, 1. ], dtype=float64)
        >>> fgrad.grad(lambda x: fnp.sum(fnp.clip(x, 0.0, 1.0)))(fnp.array([-2.0, 0.5, 1.0]))
        Tensor([0. , 1. , 0.5], dtype=float64)
    """
    _ufunc_args("clip", out, True, None, None)
    bounds = (("a_min", "min", a_min, min), ("a_max", "max", a_max, max))
    for numpy_name, name, value, other in bounds:
        if value is not None and other is not None:
            raise ValueError(
                f"clip: the {name} bound is given twice, as {numpy_name}={value!r} and "
                f"{name}={other!r}; pass one of them"
            )
    a = _input(a, "clip", "a")
    lo = _input(a_min if a_min is not None else min, "clip", "min") if (
        a_min is not None or min is not None
    ) else None
    hi = _input(a_max if a_max is not None else max, "clip", "max") if (
        a_max is not None or max is not None
    ) else None
    broadcast_shapes("clip", *(v for v in (a, lo, hi) if v is not None))
    out = a
    if lo is not None:
        out = _e.maximum(out, lo)
    if hi is not None:
        out = _e.minimum(out, hi)
    return as_tensor(out)


def where(
    condition: Any,
    x: Any = None,
    y: Any = None,
    /,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Elements of ``x`` where ``condition`` is true, else of ``y``; or ``nonzero(condition)``.

    With ``x`` and ``y``: elementwise with numpy broadcasting over all three inputs. The
    derivative flows to ``x`` where ``condition`` holds and to ``y`` elsewhere;
    ``condition`` carries none. The branch not taken gets a zero cotangent, so
    ``where(x > 0, log(x), 0.0)`` has gradient 0 at ``x = -1``. As in JAX, a branch whose
    own derivative is infinite still gives NaN (``0 * inf``): for ``where(x > 0, sqrt(x),
    0.0)`` at 0, first make the input safe, ``sqrt(where(x > 0, x, 1.0))`` (the "double
    where" trick).

    With ``condition`` alone: :func:`nonzero` of it (numpy's one-argument form), whose
    result shape depends on the values; it needs a concrete ``condition`` or a static
    ``size`` (JAX's ``size``/``fill_value``).

    Args:
        condition: bool Tensor, array or Python bool.
        x: Tensor, array or Python scalar.
        y: Tensor, array or Python scalar.
        size: with ``condition`` alone: the static length of each index Tensor.
        fill_value: with ``condition`` alone: padding for ``size``.

    Returns:
        Tensor of the broadcast shape of all three and the promoted dtype of ``x``, ``y``;
        with ``condition`` alone, a tuple of int64 index Tensors, one per axis.

    Raises:
        ShapeError: the shapes do not broadcast.
        TypeError: only one of ``x`` and ``y`` is given.
        ConcretizationError: ``where(condition)`` on a value traced abstractly (``jit``,
            ``make_graph``) without ``size``.

    Example:
        >>> x = fnp.array([-1.0, 4.0])
        >>> fnp.where(x > 0, fnp.sqrt(fnp.abs(x)), 0.0)
        Tensor([0., 2.], dtype=float64)
        >>> safe_log = lambda x: fnp.log(fnp.where(x > 0, x, 1.0))  # no log(-1) warning
        >>> fgrad.grad(lambda x: fnp.where(x > 0, safe_log(x), 0.0))(-1.0)
        Tensor(0., dtype=float64)
        >>> fnp.where(fnp.array([0.0, 2.0, 3.0]) > 1.0)
        (Tensor([1, 2], dtype=int64),)
    """
    if x is None and y is None:
        from fgrad.numpy._sorting import nonzero  # a sibling module of this layer

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError(
            "where: pass both x and y, or neither (where(condition) is nonzero(condition))"
        )
    if size is not None or fill_value is not None:
        raise TypeError("where: size and fill_value apply to the one-argument where(condition)")
    condition = _input(condition, "where", "condition")
    x, y = _input(x, "where", "x"), _input(y, "where", "y")
    broadcast_shapes("where", condition, x, y)
    return _e.where(condition, x, y)


def nan_to_num(
    x: Any,
    copy: bool = True,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
) -> Any:
    """Replace NaN by ``nan``, ``+inf`` by ``posinf`` and ``-inf`` by ``neginf``.

    The derivative is 1 at finite elements and 0 at replaced ones. Complex inputs have
    their real and imaginary parts treated separately, as in numpy.

    Args:
        x: Tensor, array or Python scalar.
        copy: ignored (Tensors are immutable); numpy's signature.
        nan: value for NaN.
        posinf: value for ``+inf``; default the largest finite value of the dtype.
        neginf: value for ``-inf``; default the most negative finite value of the dtype.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        DTypeError: ``x`` is not numeric, or a replacement is not a real number.
        ShapeError: a replacement is a Tensor that is not 0-d.

    Example:
        >>> fnp.nan_to_num(fnp.array([float("nan"), float("inf"), -float("inf"), 1.0]))
        Tensor([ 0.00000000e+000,  1.79769313e+308, -1.79769313e+308,
                 1.00000000e+000], dtype=float64)
    """
    x = _input(x, "nan_to_num")
    _args.flag(copy, "nan_to_num", "copy")
    values = []
    for name, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if isinstance(value, Tensor):
            if value.ndim:
                raise ShapeError(
                    f"nan_to_num: {name} must be a scalar, got a Tensor of shape {value.shape}"
                )
        elif value is not None or name == "nan":
            value = float(_real_number(value, "nan_to_num", name))
        values.append(value)
    nan, posinf, neginf = values
    dtype = _dtype(x)
    if not dtypes.is_inexact(dtype):
        return as_tensor(x)
    if dtypes.is_complex(dtype):
        parts = (
            nan_to_num(_e.real(x), nan=nan, posinf=posinf, neginf=neginf),
            nan_to_num(_e.imag(x), nan=nan, posinf=posinf, neginf=neginf),
        )
        return _e.add(parts[0], _e.multiply(parts[1], 1j))
    big = float(np.finfo(dtype).max)
    out = where(_e.isnan(x), nan, x)
    out = where(_e.equal(x, float("inf")), big if posinf is None else posinf, out)
    return where(_e.equal(x, -float("inf")), -big if neginf is None else neginf, out)


def _real_number(value: Any, fn: str, arg: str) -> Any:
    """``value`` if it is a real Python or numpy number (NaN and infinities included)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        return value
    raise DTypeError(f"{fn}: {arg} must be a real number, got {_args.describe(value)}")


# ------------------------------------------------------------------ operators on bool / int


def _logic_or_bits(name: str, op: str, logical, bitwise, example: str):
    def fn(x: Any, y: Any) -> Any:
        dtype = np.dtype(dtypes.result_type(x, y))
        if dtypes.is_bool(dtype) or dtypes.is_integer(dtype):
            out = (logical if dtypes.is_bool(dtype) else bitwise)(x, y)
            # Of jit's traced numbers, Python's operator: a number (weak), as eagerly.
            return weak(out) if is_weak(x) and is_weak(y) else out
        raise TypeError(
            f"operator {op}: needs bool or integer Tensors, got dtype {dtype}; for masks "
            f"compare first, e.g. (x > 0) {op} (y > 0), or use fnp.{logical.name}"
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""``x {op} y``: {logical.name} on bools, {bitwise.name} on integers.

    The function behind Tensor's ``{op}`` operator; no derivative.

    Raises:
        TypeError: a floating or complex operand.

    Example:
        >>> a, b = fnp.array([True, True, False]), fnp.array([True, False, False])
        >>> a {op} b
        {example}
    """
    return fn


_logical_and_or_bitwise_and = _logic_or_bits(
    "_logical_and_or_bitwise_and",
    "&",
    _e.logical_and,
    _e.bitwise_and,
    "Tensor([ True, False, False], dtype=bool)",
)
_logical_or_or_bitwise_or = _logic_or_bits(
    "_logical_or_or_bitwise_or",
    "|",
    _e.logical_or,
    _e.bitwise_or,
    "Tensor([ True,  True, False], dtype=bool)",
)
_logical_xor_or_bitwise_xor = _logic_or_bits(
    "_logical_xor_or_bitwise_xor",
    "^",
    _e.logical_xor,
    _e.bitwise_xor,
    "Tensor([False,  True, False], dtype=bool)",
)
