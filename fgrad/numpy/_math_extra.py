"""numpy's elementwise, nan-reduction, statistics, polynomial, window and histogram functions beyond the op exports.

Each is a composition of registry ops, so its derivatives come from theirs: wherever the
maths is differentiable, so is the function (the ``nan*`` reductions give NaN entries a
zero cotangent; ``bincount`` and ``histogram`` are differentiable in their ``weights``,
not in the data; integer, index and boolean results carry no derivative, as in JAX).
Results whose shape depends on the values (``bincount`` without ``length``, ``roots`` and
``polydiv`` trimming zeros, ``histogram`` with a string ``bins``) need concrete input and
raise a ConcretizationError naming the static argument to pass under ``jit``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad._args import names_errors as _named
from fgrad.core.trace import concrete_value as _concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.numpy import _creation as _c
from fgrad.numpy import _elementwise as _ew
from fgrad.numpy._elementwise import _no_out
from fgrad.numpy import _extras as _x
from fgrad.numpy import _indexing as _ix
from fgrad.numpy import _linalg_top as _la
from fgrad.numpy import _reductions as _red
from fgrad.numpy import _shape as _sh
from fgrad.numpy import _sorting as _so
from fgrad.numpy._linalg_top import _arr
from fgrad.ops import elementwise as _e
from fgrad.ops import polynomial as _poly
from fgrad.ops import reduction as _r
from fgrad.ops._rules import floating as _floating
from fgrad.ops._rules import norm_axes as _norm_axes
from fgrad.ops.special import i0e as _i0e
from fgrad.tensor import Tensor, as_tensor

__all__ = [
    "angle", "around", "average", "bartlett", "bincount", "bitwise_left_shift",
    "bitwise_right_shift", "blackman", "convolve", "corrcoef", "correlate", "cov",
    "cumulative_prod", "cumulative_sum", "degrees", "digitize", "divmod", "ediff1d",
    "einsum_path", "float_power", "frexp", "gradient", "hamming", "hanning", "heaviside",
    "histogram", "histogram2d", "histogram_bin_edges", "histogramdd", "i0", "iscomplex",
    "isneginf", "isposinf", "isreal", "kaiser", "logaddexp2", "matvec", "modf", "nanargmax",
    "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmedian", "nanmin", "nanpercentile",
    "nanprod", "nanquantile", "nanstd", "nanvar", "packbits", "poly", "polyadd", "polyder",
    "polydiv", "polyfit", "polyint", "polymul", "polysub", "polyval", "ptp", "radians",
    "roots", "sinc", "trapezoid", "unpackbits", "unwrap", "vander", "vecmat",
]

# numpy's second names of registry ops (the ops are exported under their first names).
radians = _e.deg2rad
degrees = _e.rad2deg
bitwise_left_shift = _e.left_shift
bitwise_right_shift = _e.right_shift
around = _ew.round

def _t(x: Any, fn: str, arg: str = "x") -> Tensor:
    """``x`` as a Tensor, a non-numeric input raising an error naming ``fn`` and ``arg``."""
    x = _arr(x, fn, arg)
    return x if isinstance(x, Tensor) else as_tensor(x)


def _dtype(x: Any) -> np.dtype:
    return np.dtype(dtypes.result_type(x))


def _float(x: Tensor) -> Tensor:
    """``x`` in numpy's floating dtype for a transcendental function (ints: float64)."""
    dtype = _dtype(x)
    return x if dtypes.is_inexact(dtype) else _e.astype(x, dtype=_floating(dtype))


def _float64(x: Tensor) -> Tensor:
    """``x`` in numpy's dtype for a statistic or special function: integer and bool input
    gives float64 (numpy computes these in double whatever the integer's width)."""
    return x if dtypes.is_inexact(_dtype(x)) else _e.astype(x, dtype=dtypes.float64)


def _real(x: Tensor, fn: str, arg: str = "x") -> Tensor:
    if dtypes.is_complex(_dtype(x)):
        raise DTypeError(f"{fn}: not defined for complex {arg} (dtype {_dtype(x)}); pass real values")
    return x


def _concrete(x: Any, fn: str, hint: str) -> np.ndarray:
    """``x``'s values; a ConcretizationError saying what to pass when it is traced."""
    try:
        return np.asarray(_concrete_value(x)) if isinstance(x, Tensor) else np.asarray(x)
    except ConcretizationError:
        raise ConcretizationError(
            f"{fn}: the result's shape depends on the values of {x.aval}, which is traced "
            f"here (no values under jit or make_graph; one set per example under vmap). {hint}"
        ) from None


def _maybe_concrete(x: Any) -> np.ndarray | None:
    try:
        return np.asarray(_concrete_value(x)) if isinstance(x, Tensor) else np.asarray(x)
    except ConcretizationError:
        return None


def _one_d(x: Tensor, fn: str, arg: str) -> Tensor:
    if x.ndim != 1:
        raise ShapeError(f"{fn}: {arg} must be 1-d, got shape {x.shape}")
    return x


def _public(name: str, fn: Any, doc: str) -> Any:
    """``fn`` as the public function ``name`` with docstring ``doc`` (for the pairs of
    functions one body serves, such as ``nanmax``/``nanmin``); its errors name it."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return _named(name)(fn)


# ------------------------------------------------------------------ elementwise


@_named("angle")
def angle(z: Any, deg: bool = False) -> Tensor:
    """The argument (phase angle) of complex ``z``, ``arctan2(imag, real)``.

    Args:
        z: Tensor of any shape; real input gives 0 or ``pi``.
        deg: return degrees instead of radians.

    Returns:
        Real floating Tensor of ``z.shape``, in ``(-pi, pi]``. Differentiable (away from 0).

    Raises:
        DTypeError: ``z`` is not numeric, or ``deg`` is not a bool.

    Example:
        >>> fnp.angle(fnp.array([1j, -1.0, 1 + 1j]), deg=True)
        Tensor([ 90., 180.,  45.], dtype=float64)
    """
    deg = _args.flag(deg, "angle", "deg")
    z = _t(z, "angle", "z")
    if _dtype(z) == np.bool_:  # numpy's arctan2(0, z): the Python 0 makes bool int64
        z = _float64(z)
    out = _e.arctan2(_e.imag(z), _e.real(z))
    return _e.multiply(out, 180.0 / math.pi) if deg else out


@_named("divmod")
def divmod(x1: Any, x2: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> tuple[Tensor, Tensor]:
    """``(floor_divide(x1, x2), remainder(x1, x2))`` together, as Python's ``divmod``.

    Args:
        x1: dividend, Tensor or Python scalar.
        x2: divisor, broadcastable with ``x1``.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast the input(s) to this dtype first.

    Returns:
        Pair of Tensors of the broadcast shape; the quotient has no derivative, the
        remainder that of ``remainder``.

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> fnp.divmod(fnp.array([7.0, -7.0]), 2.0)
        (Tensor([ 3., -4.], dtype=float64), Tensor([1., 1.], dtype=float64))
    """
    x1, x2 = (_ew._ufunc_args("divmod", out, where, dtype, v) for v in (x1, x2))
    return _e.floor_divide(x1, x2), _e.remainder(x1, x2)


@_named("float_power")
def float_power(x1: Any, x2: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Tensor:
    """``x1 ** x2`` computed in float64 (complex128 for complex input), as numpy's.

    Args:
        x1: base, Tensor or Python scalar.
        x2: exponent, broadcastable with ``x1``.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast the input(s) to this dtype first.

    Returns:
        float64 (or complex128) Tensor of the broadcast shape; differentiable as ``power``.
        (JAX keeps float32 input in float32.)

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> fnp.float_power(fnp.array([2, 3], dtype=fnp.float32), 2)
        Tensor([4., 9.], dtype=float64)
    """
    x1, x2 = (_ew._ufunc_args("float_power", out, where, dtype, _t(v, "float_power", n))
              for v, n in ((x1, "x1"), (x2, "x2")))
    wide = np.complex128 if dtypes.is_complex(dtypes.result_type(x1, x2)) else np.float64
    return _e.power(_e.astype(x1, dtype=np.dtype(wide)), _e.astype(x2, dtype=np.dtype(wide)))


@_named("frexp")
def frexp(x: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> tuple[Tensor, Tensor]:
    """Mantissa and exponent: ``x = m * 2**e`` with ``0.5 <= |m| < 1`` (``m = e = 0`` at 0).

    Args:
        x: real Tensor of any shape (integers promote to floating, as numpy).
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast the input(s) to this dtype first.

    Returns:
        ``(m, e)``: ``m`` of ``x``'s floating dtype, differentiable (``dm/dx = 2**-e``, as
        JAX); ``e`` int32, no derivative. Infinities and NaN give ``(x, 0)``.

    Raises:
        DTypeError: complex or non-numeric ``x``.

    Example:
        >>> fnp.frexp(fnp.array([8.0, -0.3]))
        (Tensor([ 0.5, -0.6], dtype=float64), Tensor([ 4, -1], dtype=int32))
    """
    x = _float(_real(_ew._ufunc_args("frexp", out, where, dtype, _t(x, "frexp")), "frexp"))
    e = _e.frexp_exponent(x)
    return _e.ldexp(x, _e.negative(e)), e


@_named("modf")
def modf(x: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> tuple[Tensor, Tensor]:
    """Fractional and integral parts, both with the sign of ``x``.

    Args:
        x: real Tensor of any shape.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast the input(s) to this dtype first.

    Returns:
        ``(frac, whole)`` of ``x``'s floating dtype; ``frac`` has derivative 1, ``whole``
        none (as JAX). ``modf(inf) = (0, inf)``.

    Raises:
        DTypeError: complex or non-numeric ``x``.

    Example:
        >>> fnp.modf(fnp.array([3.25, -1.5]))
        (Tensor([ 0.25, -0.5 ], dtype=float64), Tensor([ 3., -1.], dtype=float64))
    """
    x = _float(_real(_ew._ufunc_args("modf", out, where, dtype, _t(x, "modf")), "modf"))
    whole = _e.trunc(x)
    inf = _e.isinf(x)
    safe = _e.where(inf, 0.0, x)  # inf - inf would be NaN (and warn)
    frac = _e.where(inf, _e.copysign(0.0, x), _e.subtract(safe, _e.trunc(safe)))
    return frac, whole


@_named("heaviside")
def heaviside(x1: Any, x2: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Tensor:
    """The Heaviside step: 0 for ``x1 < 0``, ``x2`` at ``x1 == 0``, 1 for ``x1 > 0``.

    Args:
        x1: real Tensor.
        x2: the value at 0, broadcastable with ``x1``.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast the input(s) to this dtype first.

    Returns:
        Floating Tensor of the broadcast shape (NaN where ``x1`` is NaN). No derivative in
        ``x1``; ``x2``'s flows where ``x1 == 0`` (as JAX).

    Raises:
        DTypeError: complex input.
        ShapeError: the shapes do not broadcast.

    Example:
        >>> fnp.heaviside(fnp.array([-1.0, 0.0, 2.0]), 0.5)
        Tensor([0. , 0.5, 1. ], dtype=float64)
    """
    x1 = _real(_ew._ufunc_args("heaviside", out, where, dtype, _t(x1, "heaviside", "x1")), "heaviside", "x1")
    x2 = _ew._ufunc_args("heaviside", None, True, dtype, x2)
    x2 = _real(_t(x2, "heaviside", "x2") if not isinstance(x2, (int, float)) else x2, "heaviside", "x2")
    dtype = np.dtype(_floating(np.dtype(dtypes.result_type(x1, x2))))
    out = _e.where(_e.less(x1, 0), 0.0, _e.where(_e.greater(x1, 0), 1.0, x2))
    out = _e.where(_e.isnan(x1), np.nan, out)
    return _e.astype(out, dtype=dtype)


@_named("i0")
def i0(x: Any) -> Tensor:
    """The modified Bessel function of the first kind, order 0: ``exp(|x|) * i0e(x)``.

    Args:
        x: real Tensor of any shape.

    Returns:
        Floating Tensor of ``x.shape`` (ints give float64; float32 stays float32, where
        numpy gives float64). Its derivative is ``i1(x)``, as JAX's.

    Raises:
        DTypeError: complex or non-numeric ``x``.

    Example:
        >>> fnp.i0(fnp.array([0.0, 1.0]))
        Tensor([1.        , 1.26606588], dtype=float64)
    """
    x = _float64(_real(_t(x, "i0"), "i0"))
    return _e.multiply(_e.exp(_e.abs(x)), _i0e(x))


# sin(y) / y = sum_k (-1)**k y**(2k) / (2k + 1)!, used for |y| < 0.1 (error below 1e-18).
_SINC_TAYLOR = [(-1.0) ** k / math.factorial(2 * k + 1) for k in range(5)]


@_named("sinc")
def sinc(x: Any) -> Tensor:
    """The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0.

    Near 0 a Taylor polynomial replaces the quotient, so every derivative is finite and
    right there: ``sinc'(0) = 0``, ``sinc''(0) = -pi**2 / 3``, as JAX's.

    Args:
        x: Tensor of any shape (complex too).

    Returns:
        Floating Tensor of ``x.shape``.

    Raises:
        DTypeError: non-numeric ``x``.

    Example:
        >>> fnp.sinc(fnp.array([0.0, 0.5, 1.0]))
        Tensor([1.00000000e+00, 6.36619772e-01, 3.89817183e-17], dtype=float64)
        >>> fgrad.grad(fgrad.grad(fnp.sinc))(0.0)
        Tensor(-3.28986813, dtype=float64)
    """
    x = _float64(_t(x, "sinc"))
    y = _e.multiply(x, math.pi)
    small = _e.less(_e.abs(y), 0.1)
    safe = _e.where(small, 1.0, y)
    y2 = _e.multiply(y, y)
    series = _SINC_TAYLOR[-1]
    for c in reversed(_SINC_TAYLOR[:-1]):
        series = _e.add(_e.multiply(series, y2), c)
    return _e.astype(_e.where(small, series, _e.divide(_e.sin(safe), safe)), dtype=x.dtype)


_LN2 = math.log(2.0)


@_named("logaddexp2")
def logaddexp2(x1: Any, x2: Any, /, out: Any = None, *, where: Any = True, dtype: Any = None) -> Tensor:
    """``log2(2**x1 + 2**x2)`` without overflow.

    Args:
        x1: real Tensor or Python scalar.
        x2: broadcastable with ``x1``.
        out: not supported (Tensors are immutable).
        where: only True (numpy's default).
        dtype: cast the input(s) to this dtype first.

    Returns:
        Floating Tensor of the broadcast shape; differentiable with ``logaddexp``'s
        conventions (0.5 to each input at ties, no NaN at ``-inf``).

    Raises:
        DTypeError: complex input.
        ShapeError: the shapes do not broadcast.

    Example:
        >>> fnp.logaddexp2(fnp.array([1.0, 1000.0]), fnp.array([1.0, 1000.0]))
        Tensor([   2., 1001.], dtype=float64)
    """
    x1, x2 = (_ew._ufunc_args("logaddexp2", out, where, dtype, _t(v, "logaddexp2", n))
              for v, n in ((x1, "x1"), (x2, "x2")))
    return _e.divide(_e.logaddexp(_e.multiply(_float(x1), _LN2), _e.multiply(_float(x2), _LN2)), _LN2)


def _signed_inf(name: str, negative: bool) -> Any:
    sign = "negative" if negative else "positive"

    def fn(x: Any, out: Any = None) -> Tensor:
        _no_out(out, name)
        x = _real(_t(x, name), name)
        neg = _e.signbit(x)
        return _e.logical_and(_e.isinf(x), neg if negative else _e.logical_not(neg))

    want = "Tensor([ True, False, False], dtype=bool)" if negative else "Tensor([False,  True, False], dtype=bool)"
    return _public(name, fn, f"""True where ``x`` is {sign} infinity.

    Args:
        x: real Tensor of any shape.
        out: not supported (Tensors are immutable).

    Returns:
        bool Tensor of ``x.shape``; no derivative.

    Raises:
        DTypeError: complex input (as numpy).
        TypeError: ``out`` is given.

    Example:
        >>> fnp.{name}(fnp.array([-fnp.inf, fnp.inf, 1.0]))
        {want}
    """)


isneginf = _signed_inf("isneginf", True)
isposinf = _signed_inf("isposinf", False)


def _imag_test(name: str, nonzero: bool) -> Any:
    def fn(x: Any) -> Tensor:
        imag = _e.imag(_t(x, name))
        return _e.not_equal(imag, 0) if nonzero else _e.equal(imag, 0)

    what = "a nonzero" if nonzero else "a zero"
    real_dtype = "False" if nonzero else "True"
    want = "Tensor([ True, False], dtype=bool)" if nonzero else "Tensor([False,  True], dtype=bool)"
    return _public(name, fn, f"""True where ``x`` has {what} imaginary part ({real_dtype} everywhere for a real dtype).

    Args:
        x: Tensor of any shape.

    Returns:
        bool Tensor of ``x.shape``; no derivative.

    Raises:
        DTypeError: non-numeric ``x``.

    Example:
        >>> fnp.{name}(fnp.array([1 + 1j, 2 + 0j]))
        {want}
    """)


iscomplex = _imag_test("iscomplex", True)
isreal = _imag_test("isreal", False)

def _bit_axis(a: Tensor, axis: Any, fn: str) -> tuple[Tensor, int | None]:
    """``a`` flattened (``axis`` None) or with ``axis`` moved last; the axis to restore."""
    if axis is None:
        return _sh.reshape(a, (-1,)), None
    ax = _args.axis(axis, fn, a.ndim)
    return _sh.moveaxis(a, ax, -1), ax


_BITORDER = ("big", "little")


@_named("packbits")
def packbits(a: Any, axis: Any = None, bitorder: str = "big") -> Tensor:
    """Pack the truth values of ``a`` into the bits of uint8 bytes, 8 per byte.

    Args:
        a: integer or bool Tensor; nonzero elements give 1 bits.
        axis: the axis to pack along; None packs the flattened ``a``.
        bitorder: ``"big"`` (the first element is the highest bit) or ``"little"``.

    Returns:
        uint8 Tensor whose packed axis has ``ceil(n / 8)`` elements (the last byte padded
        with 0 bits); no derivative.

    Raises:
        DTypeError: ``a`` is not integer or bool.
        ValueError: an unknown ``bitorder``.

    Example:
        >>> fnp.packbits(fnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
        Tensor([176, 128], dtype=uint8)
    """
    _args.choice(bitorder, "packbits", "bitorder", _BITORDER)
    a = _t(a, "packbits", "a")
    if _dtype(a).kind not in "biu":
        raise DTypeError(f"packbits: needs an integer or bool array, got dtype {_dtype(a)}")
    moved, ax = _bit_axis(a, axis, "packbits")
    n = moved.shape[-1]
    pad = (-n) % 8
    bits = _e.astype(_e.not_equal(moved, 0), dtype=np.dtype(np.uint8))
    if pad:
        bits = _sh.concatenate([bits, _c.zeros(bits.shape[:-1] + (pad,), dtype=np.uint8)], axis=-1)
    bits = _sh.reshape(bits, bits.shape[:-1] + ((n + pad) // 8, 8))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1], dtype=np.uint8)
    if bitorder == "little":
        weights = weights[::-1].copy()
    packed = _r.sum(_e.multiply(bits, weights), axes=(bits.ndim - 1,), keepdims=False)
    packed = _e.astype(packed, dtype=np.dtype(np.uint8))
    return packed if ax is None else _sh.moveaxis(packed, -1, ax)


@_named("unpackbits")
def unpackbits(a: Any, axis: Any = None, count: Any = None, bitorder: str = "big") -> Tensor:
    """Unpack the bits of uint8 ``a`` into 0/1 elements, 8 per byte.

    Args:
        a: uint8 Tensor.
        axis: the axis to unpack along; None unpacks the flattened ``a``.
        count: keep this many bits along ``axis`` (negative: drop that many from the end;
            more than there are: pad with zeros); None keeps all.
        bitorder: ``"big"`` (the highest bit first) or ``"little"``.

    Returns:
        uint8 Tensor of 0s and 1s; no derivative.

    Raises:
        DTypeError: ``a`` is not uint8, or ``count`` not an int.
        ValueError: an unknown ``bitorder``.

    Example:
        >>> fnp.unpackbits(fnp.array([176], dtype=fnp.uint8))
        Tensor([1, 0, 1, 1, 0, 0, 0, 0], dtype=uint8)
    """
    _args.choice(bitorder, "unpackbits", "bitorder", _BITORDER)
    count = _args.index(count, "unpackbits", "count", none_ok=True) if count is not None else None
    a = _t(a, "unpackbits", "a")
    if _dtype(a) != np.uint8:
        raise DTypeError(f"unpackbits: needs a uint8 array, got dtype {_dtype(a)}")
    moved, ax = _bit_axis(a, axis, "unpackbits")
    shifts = np.arange(7, -1, -1, dtype=np.uint8) if bitorder == "big" else np.arange(8, dtype=np.uint8)
    bits = _e.bitwise_and(_e.right_shift(_sh.expand_dims(moved, -1), shifts), np.uint8(1))
    bits = _sh.reshape(bits, moved.shape[:-1] + (moved.shape[-1] * 8,))
    if count is not None:
        n = bits.shape[-1]
        keep = count if count >= 0 else builtins.max(n + count, 0)
        if keep <= n:
            bits = bits[..., :keep]
        else:
            bits = _sh.concatenate([bits, _c.zeros(bits.shape[:-1] + (keep - n,), dtype=np.uint8)], axis=-1)
    return bits if ax is None else _sh.moveaxis(bits, -1, ax)


# ------------------------------------------------------------------ nan reductions


def _nan_input(a: Any, fn: str, where: Any) -> tuple[Tensor, Tensor | None]:
    """``a`` as a Tensor with ``where``'s excluded elements made NaN, and its NaN mask
    (None for a dtype without NaN)."""
    a = _t(a, fn, "a")
    if where is not None and where is not True:
        w = _t(where, fn, "where")
        if _dtype(w) != np.bool_:
            raise DTypeError(f"{fn}: where must be a bool array, got dtype {_dtype(w)}")
        a = _e.where(w, _float64(a), np.nan)
    if not dtypes.is_inexact(_dtype(a)):
        return a, None
    return a, _e.isnan(a)


def _keep(keepdims: Any, fn: str) -> bool:
    return _args.flag(keepdims, fn, "keepdims")


def _nan_extremum(fn: str, pick, fill: float, a, axis, out, keepdims, initial, where):
    _no_out(out, fn)
    keepdims = _keep(keepdims, fn)
    a, nan = _nan_input(a, fn, where)
    if initial is not None:
        _args.real(initial, fn, "initial")
    if nan is None:
        res = pick(a, axis, keepdims=keepdims)
    else:
        axes = _norm_axes(fn, axis, a.ndim)
        if builtins.any(a.shape[d] == 0 for d in axes) and initial is None:
            raise ShapeError(f"{fn}: cannot reduce a zero-size axis of shape {a.shape} without initial")
        clean = _e.where(nan, fill, a)
        res = _r.max(clean, axes=axes, keepdims=keepdims) if fill < 0 else _r.min(clean, axes=axes, keepdims=keepdims)
        res = _e.where(_r.all(nan, axes=axes, keepdims=keepdims), np.nan, res)
    if initial is not None:
        res = (_e.fmax if fill < 0 else _e.fmin)(res, initial)
    return res


def _nan_extremum_fn(name: str, pick, fill: float, bound: str, example: str) -> Any:
    def fn(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Tensor:
        return _nan_extremum(name, pick, fill, a, axis, out, keepdims, initial, where)

    word = "largest" if fill < 0 else "smallest"
    return _public(name, fn, f"""The {word} element over ``axis``, ignoring NaNs (NaN for an all-NaN slice).

    Args:
        a: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        initial: {bound} taken into the result.
        where: bool Tensor broadcastable to ``a``: the elements to include.

    Returns:
        Tensor of the reduced shape and ``a``'s dtype. NaN entries get a zero derivative;
        ties split it evenly, as ``{name[3:]}``.

    Raises:
        ShapeError: an axis is out of range, or zero-size without ``initial``.
        TypeError: ``out`` is given.

    Example:
{example}
    """)


nanmax = _nan_extremum_fn("nanmax", _red.max, -np.inf, "a lower bound", """\
        >>> fnp.nanmax(fnp.array([[1.0, fnp.nan], [fnp.nan, fnp.nan]]), axis=1)
        Tensor([ 1., nan], dtype=float64)""")
nanmin = _nan_extremum_fn("nanmin", _red.min, np.inf, "an upper bound", """\
        >>> fnp.nanmin(fnp.array([3.0, fnp.nan, 2.0]))
        Tensor(2., dtype=float64)""")


def _nan_arg_fn(name: str, pick, fill: float, example: str) -> Any:
    def fn(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Tensor:
        _no_out(out, name)
        keepdims = _keep(keepdims, name)
        a, nan = _nan_input(a, name, None)
        if nan is None:
            return pick(a, axis, keepdims=keepdims)
        idx = pick(_e.where(nan, fill, a), axis, keepdims=keepdims)
        axes = tuple(range(a.ndim)) if axis is None else _norm_axes(name, axis, a.ndim)
        return _e.where(_r.all(nan, axes=axes, keepdims=keepdims), -1, idx)

    word = "largest" if fill < 0 else "smallest"
    return _public(name, fn, f"""Index of the {word} element along ``axis``, ignoring NaNs.

    Args:
        a: real Tensor.
        axis: an int, or None for the index into the flattened ``a``.
        out: not supported (Tensors are immutable).
        keepdims: keep the reduced axis with size 1.

    Returns:
        int64 Tensor of the reduced shape; -1 for an all-NaN slice (as JAX: numpy raises
        ValueError, which a traced value cannot). No derivative.

    Raises:
        ShapeError: ``axis`` out of range, or an empty slice.
        TypeError: ``out`` is given.

    Example:
{example}
    """)


nanargmax = _nan_arg_fn("nanargmax", _red.argmax, -np.inf, """\
        >>> fnp.nanargmax(fnp.array([[1.0, fnp.nan, 3.0], [fnp.nan] * 3]), axis=1)
        Tensor([ 2, -1], dtype=int64)""")
nanargmin = _nan_arg_fn("nanargmin", _red.argmin, np.inf, """\
        >>> fnp.nanargmin(fnp.array([fnp.nan, 2.0, 1.0]))
        Tensor(2, dtype=int64)""")


def _nan_scan_fn(name: str, scan, fill: float, example: str) -> Any:
    def fn(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
        _no_out(out, name)
        a, nan = _nan_input(a, name, None)
        return scan(a if nan is None else _e.where(nan, fill, a), axis, dtype)

    what = "sum" if fill == 0 else "product"
    return _public(name, fn, f"""Cumulative {what} along ``axis`` with NaNs counted as {fill:g} (zero derivative at NaNs).

    Args:
        a: Tensor of any shape.
        axis: an int, or None to scan the flattened ``a``.
        dtype: optional accumulation dtype.
        out: not supported (Tensors are immutable).

    Returns:
        Tensor of ``a.shape`` (flattened for ``axis=None``).

    Raises:
        ShapeError: ``axis`` out of range.
        TypeError: ``out`` is given.

    Example:
{example}
    """)


nancumsum = _nan_scan_fn("nancumsum", _red.cumsum, 0.0, """\
        >>> fnp.nancumsum(fnp.array([1.0, fnp.nan, 2.0]))
        Tensor([1., 1., 3.], dtype=float64)""")
nancumprod = _nan_scan_fn("nancumprod", _red.cumprod, 1.0, """\
        >>> fnp.nancumprod(fnp.array([2.0, fnp.nan, 3.0]))
        Tensor([2., 2., 6.], dtype=float64)""")


@_named("nanprod")
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Tensor:
    """Product over ``axis`` with NaNs counted as 1 (zero derivative at NaNs).

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional accumulation dtype.
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.
        initial: a factor the product starts from.
        where: bool Tensor broadcastable to ``a``: the elements to include.

    Returns:
        Tensor of the reduced shape.

    Raises:
        ShapeError: an axis is out of range.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.nanprod(fnp.array([2.0, fnp.nan, 3.0]))
        Tensor(6., dtype=float64)
    """
    _no_out(out, "nanprod")
    keepdims = _keep(keepdims, "nanprod")
    a, nan = _nan_input(a, "nanprod", where)
    res = _red.prod(a if nan is None else _e.where(nan, 1.0, a), axis, dtype, keepdims=keepdims)
    if initial is not None:
        res = _e.multiply(res, _args.real(initial, "nanprod", "initial"))
    return res


def _nan_moments(fn: str, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    """``(variance, rounded-to dtype)`` of the non-NaN elements (numpy's nanvar)."""
    _no_out(out, fn)
    keepdims = _keep(keepdims, fn)
    ddof = _red._ddof(ddof, fn, "ddof", none_ok=False)
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"{fn}: give ddof or correction, not both")
        ddof = _red._ddof(correction, fn, "correction")
    a, nan = _nan_input(a, fn, where)
    if dtype is not None:
        a = _e.astype(a, dtype=_args.dtype(dtype, fn))
        nan = _e.isnan(a) if dtypes.is_inexact(_dtype(a)) else None
    a, rounded = _red._widened(_float64(a))
    if nan is None:
        nan = _e.isnan(a)
    axes = _norm_axes(fn, axis, a.ndim)
    clean = _e.where(nan, 0.0, a)
    count = _r.sum(_e.logical_not(nan), axes=axes, keepdims=True)
    count = _e.astype(count, dtype=np.dtype(_e.real(clean).dtype))
    if mean is not None:
        mu = _t(mean, fn, "mean")
        mu = mu if keepdims or mu.ndim == a.ndim else _sh.reshape(mu, _r.sum(clean, axes=axes, keepdims=True).shape)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = _e.divide(_r.sum(clean, axes=axes, keepdims=True), count)
    centred = _e.where(nan, 0.0, _e.subtract(a, mu))
    sq = _e.real(_e.multiply(centred, _e.conj(centred))) if dtypes.is_complex(_dtype(a)) else _e.multiply(centred, centred)
    total = _r.sum(sq, axes=axes, keepdims=keepdims)
    dof = _e.subtract(count, ddof)
    dof = dof if keepdims else _sh.reshape(dof, total.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        # numpy: a slice with no more than ddof numbers gives NaN.
        res = _e.where(_e.greater(dof, 0), _e.divide(total, _e.where(_e.greater(dof, 0), dof, 1.0)), np.nan)
    return res, rounded


def _nan_moment_fn(name: str, root: bool) -> Any:
    def fn(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
           keepdims: bool = False, *, where: Any = None, mean: Any = None,
           correction: Any = None) -> Tensor:
        res, rounded = _nan_moments(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction)
        return _red._rounded(_e.sqrt(res) if root else res, rounded)

    what = ("Standard deviation", "``sqrt(nanvar)``") if root else (
        "Variance", "``sum(|x - mean|**2) / (n - ddof)``")
    extra = "; at zero variance the derivative is NaN, as ``std``'s" if root else ""
    return _public(name, fn, f"""{what[0]} over ``axis`` of the non-NaN elements, {what[1]}.

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        dtype: optional dtype to compute in.
        out: not supported (Tensors are immutable).
        ddof: delta degrees of freedom (``n`` counts the non-NaN elements).
        keepdims: keep reduced axes with size 1.
        where: bool Tensor broadcastable to ``a``: the elements to include.
        mean: a precomputed mean, of the ``keepdims=True`` shape (numpy 2's argument).
        correction: the Array API name of ``ddof``.

    Returns:
        Real floating Tensor of the reduced shape; NaN where ``n <= ddof``. NaN entries
        get a zero derivative{extra}.

    Raises:
        ShapeError: an axis is out of range.
        ValueError: both ``ddof`` and ``correction``.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.{name}(fnp.array([1.0, fnp.nan, 3.0]))
        Tensor(1., dtype=float64)
    """)


nanvar = _nan_moment_fn("nanvar", False)
nanstd = _nan_moment_fn("nanstd", True)


_QMETHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _nan_quantile(fn: str, a, q, axis, out, overwrite_input, method, keepdims, scale, interpolation=None):
    _no_out(out, fn)
    _args.flag(overwrite_input, fn, "overwrite_input")
    if interpolation is not None:
        method = interpolation
    _args.choice(method, fn, "method", _QMETHODS)
    keepdims = _args.flag(keepdims, fn, "keepdims")
    a = _real(_t(a, fn, "a"), fn, "a")
    a = _float64(a)
    dtype = _dtype(a)
    flat, kept = _so._last_axis(fn, a, axis)
    n_all = flat.shape[-1]
    if n_all == 0:
        raise ShapeError(f"{fn}: cannot take quantiles of an empty slice (shape {a.shape})")
    q = _t(q, fn, "q")
    if dtypes.is_complex(_dtype(q)) or _dtype(q) == np.bool_:
        raise DTypeError(f"{fn}: q must be real numbers, got dtype {_dtype(q)}")
    qv = _maybe_concrete(q)
    if qv is not None and np.any(~((qv >= 0) & (qv <= scale))):
        raise ValueError(f"{fn}: q must be in [0, {scale}], got {qv}")
    q = _e.divide(_e.astype(q, dtype=dtype), scale) if scale != 1 else _e.astype(q, dtype=dtype)
    s = _so.sort(flat, axis=-1)  # NaNs sort last
    batch = s.shape[:-1]
    n = _r.sum(_e.logical_not(_e.isnan(s)), axes=(s.ndim - 1,), keepdims=False)  # batch
    qb = _sh.reshape(q, q.shape + (1,) * len(batch))  # Q + (1,)*B
    last = _e.astype(_e.subtract(n, 1), dtype=np.dtype(np.float64))
    pos = _e.multiply(_e.astype(qb, dtype=np.dtype(np.float64)), _e.maximum(last, 0.0))  # Q + B
    lo = _e.floor(pos)
    full = tuple(pos.shape) + (n_all,)
    sb = _sh.broadcast_to(s, full)

    def at(p):
        idx = _e.astype(_e.stop_gradient(_e.minimum(p, n_all - 1)), dtype=np.dtype(np.int64))
        return _ix.take_along_axis(sb, _sh.expand_dims(idx, -1), axis=-1)[..., 0]

    hi = _e.minimum(_e.add(lo, 1.0), _e.maximum(last, 0.0))
    if method == "lower":
        res = at(lo)
    elif method == "higher":
        res = at(_e.ceil(pos))
    elif method == "nearest":
        res = at(_e.round(pos))
    elif method == "midpoint":
        res = _e.multiply(_e.add(at(lo), at(_e.ceil(pos))), 0.5)
    else:
        w = _e.astype(_e.subtract(pos, _e.stop_gradient(lo)), dtype=dtype)
        below, above = at(lo), at(hi)
        res = _e.where(_e.equal(w, 0), below, _e.add(below, _e.multiply(w, _e.subtract(above, below))))
    res = _e.where(_e.equal(n, 0), np.nan, res)
    if keepdims:
        res = _sh.reshape(res, tuple(q.shape) + kept)
    return _e.astype(res, dtype=dtype)


def _no_weights(weights: Any, fn: str) -> None:
    if weights is not None:
        raise TypeError(
            f"{fn}: weights= is not supported (numpy takes them only with "
            "method='inverted_cdf'); repeat samples by their integer weights instead"
        )


def _nan_quantile_fn(name: str, scale: int, example: str) -> Any:
    def fn(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           method: str = "linear", keepdims: bool = False, *, weights: Any = None,
           interpolation: Any = None) -> Tensor:
        _no_weights(weights, name)
        return _nan_quantile(name, a, q, axis, out, overwrite_input, method, keepdims, scale, interpolation)

    what = "quantiles" if scale == 1 else "percentiles"
    return _public(name, fn, f"""The ``q``-th {what} over ``axis`` of the non-NaN elements, ``q`` in ``[0, {scale}]``.

    Args:
        a: real Tensor.
        q: {what} in ``[0, {scale}]``: a Python number or a Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        overwrite_input: ignored (Tensors are immutable).
        method: ``"linear"``, ``"lower"``, ``"higher"``, ``"nearest"`` or ``"midpoint"``.
        keepdims: keep the reduced axes with size 1.
        weights: not supported (numpy takes them for ``method="inverted_cdf"`` only).
        interpolation: numpy's old name of ``method``.

    Returns:
        Tensor of shape ``q.shape + reduced shape``; NaN for an all-NaN slice.
        Differentiable in ``a`` (NaNs get zero) and, for ``"linear"``, in ``q``.

    Raises:
        ShapeError: an empty slice or an axis out of range.
        ValueError: an unknown ``method`` or a concrete ``q`` outside ``[0, {scale}]``.
        TypeError: ``out`` or ``weights`` is given.

    Example:
{example}
    """)


nanquantile = _nan_quantile_fn("nanquantile", 1, """\
        >>> fnp.nanquantile(fnp.array([[1.0, fnp.nan, 3.0], [4.0, 5.0, 6.0]]), 0.5, axis=1)
        Tensor([2., 5.], dtype=float64)""")
nanpercentile = _nan_quantile_fn("nanpercentile", 100, """\
        >>> fnp.nanpercentile(fnp.array([1.0, fnp.nan, 3.0, 5.0]), 50)
        Tensor(3., dtype=float64)""")


@_named("nanmedian")
def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Tensor:
    """The median over ``axis`` of the non-NaN elements.

    Args:
        a: real Tensor.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        overwrite_input: ignored (Tensors are immutable).
        keepdims: keep the reduced axes with size 1.

    Returns:
        Tensor of the reduced shape; NaN for an all-NaN slice. The derivative goes to the
        middle element(s), NaNs get zero.

    Raises:
        ShapeError: an empty slice or an axis out of range.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.nanmedian(fnp.array([2.0, fnp.nan, 3.0, 5.0]))
        Tensor(3., dtype=float64)
    """
    return _nan_quantile("nanmedian", a, 0.5, axis, out, overwrite_input, "linear", keepdims, 1)


# ------------------------------------------------------------------ statistics


@_named("ptp")
def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """Peak to peak: ``max(a) - min(a)`` over ``axis``.

    Args:
        a: real Tensor.
        axis: int, tuple of ints, or None (all axes).
        out: not supported (Tensors are immutable).
        keepdims: keep reduced axes with size 1.

    Returns:
        Tensor of the reduced shape and ``a``'s dtype; differentiable as ``max`` and
        ``min`` (ties split evenly).

    Raises:
        ShapeError: an axis is out of range or has size 0.
        TypeError: ``out`` is given.

    Example:
        >>> fnp.ptp(fnp.array([[4.0, 9.0, 2.0], [1.0, 1.0, 1.0]]), axis=1)
        Tensor([7., 0.], dtype=float64)
    """
    _no_out(out, "ptp")
    keepdims = _keep(keepdims, "ptp")
    a = _t(a, "ptp", "a")
    return _e.subtract(_red.max(a, axis, keepdims=keepdims), _red.min(a, axis, keepdims=keepdims))


@_named("average")
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """The weighted mean over ``axis``: ``sum(a * weights) / sum(weights)``.

    Args:
        a: Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        weights: None (the plain mean), a Tensor of ``a``'s shape, or of the shape of the
            reduced axes (``tuple(a.shape[i] for i in axis)``, as numpy 2; 1-d along an int
            ``axis``). Differentiable, as ``a`` is.
        returned: also return the sum of the weights (broadcast to the result's shape).
        keepdims: keep reduced axes with size 1.

    Returns:
        Tensor of the reduced shape (floating dtype; ints give float64), or the pair
        ``(average, sum_of_weights)``.

    Raises:
        ShapeError: ``weights`` of another shape without ``axis``, or neither of ``a``'s
            shape nor of the reduced axes'.
        ZeroDivisionError: concrete weights summing to zero (traced ones give NaN/inf).

    Example:
        >>> fnp.average(fnp.array([1.0, 2.0, 3.0]), weights=fnp.array([3.0, 1.0, 0.0]))
        Tensor(1.25, dtype=float64)
    """
    returned = _args.flag(returned, "average", "returned")
    keepdims = _keep(keepdims, "average")
    a = _t(a, "average", "a")
    if weights is None:
        avg = _red.mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        n = _red._count(a, _norm_axes("average", axis, a.ndim))
        return avg, _e.astype(_c.full_like(avg, n), dtype=_dtype(avg))
    w = _t(weights, "average", "weights")
    if dtypes.is_inexact(_dtype(a)):
        rdt = np.dtype(dtypes.result_type(a, w))
    else:
        rdt = np.result_type(_dtype(a), _dtype(w), np.float64)
    if w.shape != a.shape:
        if axis is None:
            raise ShapeError(f"average: axis must be given when weights {w.shape} and a {a.shape} differ in shape")
        # numpy 2: weights shaped as the reduced axes, in the order ``axis`` names them
        axis_list = axis if isinstance(axis, (tuple, list)) else (axis,)
        given = [_args.axis(ax, "average", a.ndim) for ax in axis_list]
        want = tuple(a.shape[ax] for ax in given)
        if w.shape != want:
            raise ShapeError(
                f"average: weights of shape {w.shape} differ from a's shape {a.shape} and from "
                f"the shape {want} of the reduced axes {tuple(given)}; pass weights of one of "
                "these")
        order = sorted(range(len(given)), key=given.__getitem__)
        w = _sh.transpose(w, order) if order != list(range(len(given))) else w
        w = _sh.reshape(w, tuple(a.shape[d] if d in given else 1 for d in range(a.ndim)))
        w = _sh.broadcast_to(w, a.shape)
    a, w = _e.astype(a, dtype=rdt), _e.astype(w, dtype=rdt)
    axes = _norm_axes("average", axis, a.ndim)
    scl = _r.sum(w, axes=axes, keepdims=keepdims)
    sv = _maybe_concrete(scl)
    if sv is not None and np.any(sv == 0):
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = _e.divide(_r.sum(_e.multiply(a, w), axes=axes, keepdims=keepdims), scl)
    return (avg, scl) if returned else avg


def _as_2d_rows(m: Any, fn: str, arg: str, rowvar: bool) -> Tensor:
    x = _t(m, fn, arg)
    if x.ndim > 2:
        raise ShapeError(f"{fn}: {arg} has more than 2 dimensions (shape {x.shape})")
    x = _sh.reshape(x, (1, -1)) if x.ndim < 2 else x
    if not rowvar and x.shape[0] != 1:
        x = _sh.swapaxes(x, 0, 1)
    return x


@_named("cov")
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``m`` (numpy's ``cov``).

    Args:
        m: ``(n_vars, n_obs)`` Tensor (1-d: one variable); the columns are variables if
            ``rowvar`` is False.
        y: more variables, stacked under ``m``'s.
        rowvar: rows are variables (True) or columns are.
        bias: normalise by ``N`` instead of ``N - 1``.
        ddof: overrides ``bias``: normalise by ``N - ddof``.
        fweights: 1-d integer frequency weights per observation.
        aweights: 1-d observation weights (differentiable).
        dtype: the result dtype (default at least float64).

    Returns:
        ``(n_vars, n_vars)`` Tensor (0-d for one variable); differentiable in ``m``, ``y``
        and ``aweights``.

    Raises:
        ShapeError: more than 2 dimensions, or weights of the wrong shape.
        DTypeError: non-integer ``fweights``.

    Example:
        >>> fnp.cov(fnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        Tensor([[ 1., -1.],
                [-1.,  1.]], dtype=float64)
    """
    rowvar, bias = _args.flag(rowvar, "cov", "rowvar"), _args.flag(bias, "cov", "bias")
    if ddof is not None:
        ddof = _args.index(ddof, "cov", "ddof")
    x = _as_2d_rows(m, "cov", "m", rowvar)
    if y is not None:
        x = _sh.concatenate([x, _as_2d_rows(y, "cov", "y", rowvar)], axis=0)
    if dtype is None:
        dtype = np.result_type(_dtype(x), np.float64)
    x = _e.astype(x, dtype=_args.dtype(dtype, "cov"))
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        wt = _t(wt, "cov", name)
        if wt.ndim != 1 or wt.shape[0] != n_obs:
            raise ShapeError(f"cov: {name} must be 1-d of length {n_obs}, got shape {wt.shape}")
        if name == "fweights" and _dtype(wt).kind not in "iu":
            raise DTypeError(f"cov: fweights must be integers, got dtype {_dtype(wt)}")
        wt = _e.astype(wt, dtype=np.dtype(_e.real(x).dtype))
        w = wt if w is None else _e.multiply(w, wt)
    if ddof is None:
        ddof = 0 if bias else 1
    if w is None:
        avg = _red.mean(x, 1, keepdims=True)
        fact = float(builtins.max(n_obs - ddof, 0))
    else:
        w_sum = _r.sum(w, axes=(0,), keepdims=False)
        avg = _e.divide(_r.sum(_e.multiply(x, w), axes=(1,), keepdims=True), w_sum)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = _e.subtract(w_sum, ddof)
        else:
            aw = _e.astype(_t(aweights, "cov", "aweights"), dtype=np.dtype(_e.real(x).dtype))
            fact = _e.subtract(w_sum, _e.divide(_e.multiply(ddof, _r.sum(_e.multiply(w, aw), axes=(0,), keepdims=False)), w_sum))
        fact = _e.maximum(fact, 0.0)
    xc = _e.subtract(x, avg)
    xw = xc if w is None else _e.multiply(xc, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = _e.divide(_la.matmul(xc, _e.conj(_sh.swapaxes(xw, 0, 1))), fact)
    return _sh.squeeze(c) if c.shape == (1, 1) else c


@_named("corrcoef")
def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Tensor:
    """Pearson correlation coefficients, ``cov / outer(std, std)``, clipped to ``[-1, 1]``.

    Args:
        x: ``(n_vars, n_obs)`` Tensor (1-d: one variable).
        y: more variables, stacked under ``x``'s.
        rowvar: rows are variables (True) or columns are.
        dtype: the result dtype (default at least float64).

    Returns:
        ``(n_vars, n_vars)`` Tensor (0-d for one variable); differentiable.

    Raises:
        ShapeError: more than 2 dimensions.

    Example:
        >>> fnp.corrcoef(fnp.array([1.0, 2.0, 4.0]), fnp.array([2.0, 1.0, 0.0]))
        Tensor([[ 1.        , -0.98198051],
                [-0.98198051,  1.        ]], dtype=float64)
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return _e.divide(c, c)
    d = _e.real(_x.diag(c))
    std = _e.sqrt(d)
    c = _e.divide(_e.divide(c, _sh.reshape(std, (-1, 1))), _sh.reshape(std, (1, -1)))
    if dtypes.is_complex(_dtype(c)):
        return _e.add(_ew.clip(_e.real(c), -1.0, 1.0), _e.multiply(_ew.clip(_e.imag(c), -1.0, 1.0), 1j))
    return _ew.clip(c, -1.0, 1.0)


# ------------------------------------------------------------------ convolution, scans, calculus

_MODES = ("full", "same", "valid")


def _conv_full(a: Tensor, v: Tensor) -> Tensor:
    """The full discrete convolution ``out[k] = sum_i a[i] v[k - i]`` of 1-d ``a`` and
    ``v``, as ``T @ a`` with ``T[k, i] = v[k - i]`` gathered (0 outside ``v``)."""
    n, m = a.shape[0], v.shape[0]
    if m < n:  # the Toeplitz matrix over the shorter input is the smaller one
        a, v, n, m = v, a, m, n
    k = np.arange(n + m - 1)[:, None] - np.arange(n)[None, :]
    inside = (k >= 0) & (k < m)
    # a zero of v's dtype: a Python 0 would promote bool input to int64 (numpy keeps bool)
    toeplitz = _e.where(inside, _ix.take(v, np.clip(k, 0, m - 1)), np.zeros((), _dtype(v)))
    return _la.matmul(toeplitz, a)


def _conv(fn: str, a: Any, v: Any, mode: Any, flip_conj: bool) -> Tensor:
    _args.choice(mode, fn, "mode", _MODES)
    a, v = _one_d(_t(a, fn, "a"), fn, "a"), _one_d(_t(v, fn, "v"), fn, "v")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{fn}: a and v must not be empty (shapes {a.shape}, {v.shape})")
    if flip_conj:
        v = _e.conj(v[::-1]) if dtypes.is_complex(_dtype(v)) else v[::-1]
    full = _conv_full(a, v)
    n, m = a.shape[0], v.shape[0]
    if mode == "full":
        return full
    if mode == "same":
        # numpy centres on the longer input; correlate with a shorter ``a`` is the reversed
        # correlation of the swapped pair, whose centre lies one place later for even n.
        start = n // 2 if flip_conj and n < m else (builtins.min(n, m) - 1) // 2
        return full[start:start + builtins.max(n, m)]
    start = builtins.min(n, m) - 1
    return full[start:start + builtins.max(n, m) - builtins.min(n, m) + 1]


@_named("convolve")
def convolve(a: Any, v: Any, mode: str = "full") -> Tensor:
    """The discrete linear convolution of two 1-d sequences (numpy's ``convolve``).

    Args:
        a: 1-d Tensor of length ``N``.
        v: 1-d Tensor of length ``M``.
        mode: ``"full"`` (length ``N + M - 1``), ``"same"`` (``max(N, M)``, centred) or
            ``"valid"`` (``max(N, M) - min(N, M) + 1``).

    Returns:
        1-d Tensor of the promoted dtype; differentiable in both inputs (a matrix product
        with a gathered Toeplitz matrix, ``O(N M)`` work and memory).

    Raises:
        ShapeError: an input is not 1-d.
        ValueError: an empty input or an unknown ``mode``.

    Example:
        >>> fnp.convolve(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5]))
        Tensor([0. , 1. , 2.5, 4. , 1.5], dtype=float64)
    """
    return _conv("convolve", a, v, mode, False)


@_named("correlate")
def correlate(a: Any, v: Any, mode: str = "valid") -> Tensor:
    """The cross-correlation ``c[k] = sum_n a[n + k] conj(v[n])`` of two 1-d sequences.

    Args:
        a: 1-d Tensor.
        v: 1-d Tensor.
        mode: ``"valid"`` (numpy's default), ``"same"`` or ``"full"``, as :func:`convolve`.

    Returns:
        1-d Tensor of the promoted dtype; differentiable in both inputs.

    Raises:
        ShapeError: an input is not 1-d.
        ValueError: an empty input or an unknown ``mode``.

    Example:
        >>> fnp.correlate(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5]), "same")
        Tensor([2. , 3.5, 3. ], dtype=float64)
    """
    return _conv("correlate", a, v, mode, True)


def _cumulative(fn: str, scan, identity: float, x, axis, dtype, include_initial):
    include_initial = _args.flag(include_initial, fn, "include_initial")
    x = _t(x, fn)
    if axis is None:
        if x.ndim > 1:
            raise ShapeError(f"{fn}: axis must be given for a {x.ndim}-d input (shape {x.shape})")
        axis = 0
    x = _sh.reshape(x, (1,)) if x.ndim == 0 else x
    ax = _args.axis(axis, fn, x.ndim)
    out = scan(x, ax, dtype)
    if include_initial:
        first = _c.full(out.shape[:ax] + (1,) + out.shape[ax + 1:], identity, dtype=out.dtype)
        out = _sh.concatenate([first, out], axis=ax)
    return out


def _cumulative_fn(name: str, scan, identity: int, example: str) -> Any:
    def fn(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
           include_initial: bool = False) -> Tensor:
        _no_out(out, name)
        return _cumulative(name, scan, identity, x, axis, dtype, include_initial)

    what = "sum" if identity == 0 else "product"
    return _public(name, fn, f"""Cumulative {what} along ``axis`` (the Array API's ``{name}``).

    Args:
        x: Tensor; ``axis`` may be omitted only for 0-d and 1-d input.
        axis: the axis to scan.
        dtype: optional accumulation dtype.
        out: not supported (Tensors are immutable).
        include_initial: start with the {what} of no elements, {identity} (one more element).

    Returns:
        Tensor of ``x.shape`` (one longer along ``axis`` with ``include_initial``).

    Raises:
        ShapeError: ``axis`` missing for a 2-d or higher ``x``, or out of range.
        TypeError: ``out`` is given.

    Example:
{example}
    """)


cumulative_sum = _cumulative_fn("cumulative_sum", _red.cumsum, 0, """\
        >>> fnp.cumulative_sum(fnp.array([1, 2, 3]), include_initial=True)
        Tensor([0, 1, 3, 6], dtype=int64)""")
cumulative_prod = _cumulative_fn("cumulative_prod", _red.cumprod, 1, """\
        >>> fnp.cumulative_prod(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        Tensor([[ 1.,  2.],
                [ 3., 12.]], dtype=float64)""")


def _sl(x: Tensor, axis: int, start: Any, stop: Any) -> Tensor:
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def _along(v: Tensor, axis: int, ndim: int) -> Tensor:
    """1-d ``v`` shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    return _sh.reshape(v, tuple(-1 if d == axis else 1 for d in range(ndim)))


def _gradient_axis(f: Tensor, ax: int, h: Any, edge_order: int) -> Tensor:
    n = f.shape[ax]
    if n < edge_order + 1:
        raise ValueError(
            f"gradient: shape {f.shape} has {n} elements along axis {ax}; edge_order="
            f"{edge_order} needs at least {edge_order + 1}"
        )
    s = lambda a, b: _sl(f, ax, a, b)  # noqa: E731
    if h.ndim == 0:  # uniform spacing
        mid = _e.divide(_e.subtract(s(2, None), s(None, -2)), _e.multiply(h, 2.0))
        if edge_order == 1:
            first = _e.divide(_e.subtract(s(1, 2), s(0, 1)), h)
            last = _e.divide(_e.subtract(s(-1, None), s(-2, -1)), h)
        else:
            first = _e.divide(_e.add(_e.add(_e.multiply(s(0, 1), -1.5), _e.multiply(s(1, 2), 2.0)), _e.multiply(s(2, 3), -0.5)), h)
            last = _e.divide(_e.add(_e.add(_e.multiply(s(-3, -2), 0.5), _e.multiply(s(-2, -1), -2.0)), _e.multiply(s(-1, None), 1.5)), h)
        return _sh.concatenate([first, mid, last] if n > 2 else [first, last], axis=ax)
    if h.ndim != 1 or h.shape[0] != n:
        raise ShapeError(f"gradient: coordinates must be 1-d of length {n} along axis {ax}, got shape {h.shape}")
    dx = _e.subtract(h[1:], h[:-1])
    b = lambda v: _along(v, ax, f.ndim)  # noqa: E731
    terms = [f]
    if n > 2:
        d1, d2 = dx[:-1], dx[1:]
        a = _e.negative(_e.divide(d2, _e.multiply(d1, _e.add(d1, d2))))
        c = _e.divide(d1, _e.multiply(d2, _e.add(d1, d2)))
        bb = _e.divide(_e.subtract(d2, d1), _e.multiply(d1, d2))
        mid = _e.add(_e.add(_e.multiply(b(a), s(None, -2)), _e.multiply(b(bb), s(1, -1))), _e.multiply(b(c), s(2, None)))
    del terms
    if edge_order == 1:
        first = _e.divide(_e.subtract(s(1, 2), s(0, 1)), b(dx[:1]))
        last = _e.divide(_e.subtract(s(-1, None), s(-2, -1)), b(dx[-1:]))
    else:
        d1, d2 = dx[0:1], dx[1:2]
        a = _e.negative(_e.divide(_e.add(_e.multiply(d1, 2.0), d2), _e.multiply(d1, _e.add(d1, d2))))
        bb = _e.divide(_e.add(d1, d2), _e.multiply(d1, d2))
        c = _e.negative(_e.divide(d1, _e.multiply(d2, _e.add(d1, d2))))
        first = _e.add(_e.add(_e.multiply(b(a), s(0, 1)), _e.multiply(b(bb), s(1, 2))), _e.multiply(b(c), s(2, 3)))
        d1, d2 = dx[-2:-1], dx[-1:]
        a = _e.divide(d2, _e.multiply(d1, _e.add(d1, d2)))
        bb = _e.negative(_e.divide(_e.add(d2, d1), _e.multiply(d1, d2)))
        c = _e.divide(_e.add(_e.multiply(d2, 2.0), d1), _e.multiply(d2, _e.add(d1, d2)))
        last = _e.add(_e.add(_e.multiply(b(a), s(-3, -2)), _e.multiply(b(bb), s(-2, -1))), _e.multiply(b(c), s(-1, None)))
    return _sh.concatenate([first, mid, last] if n > 2 else [first, last], axis=ax)


@_named("gradient")
def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """The gradient of sampled values ``f`` by central differences (numpy's ``gradient``).

    Second-order accurate central differences inside, one-sided differences of order
    ``edge_order`` at the boundaries, for uniform spacing or given coordinates.

    Args:
        f: Tensor of samples.
        *varargs: the spacing: none (1 along every axis), one scalar for all axes, or one
            scalar or 1-d coordinate Tensor per axis differentiated.
        axis: None (all axes), an int or a tuple of ints.
        edge_order: 1 or 2.

    Returns:
        A Tensor of ``f.shape`` (floating) for one axis, else a tuple of them, one per
        axis; differentiable in ``f`` and the spacings.

    Raises:
        ValueError: a bad ``edge_order``, a wrong number of spacings, or an axis with too
            few samples.
        ShapeError: coordinates of the wrong length.

    Example:
        >>> fnp.gradient(fnp.array([1.0, 2.0, 4.0, 7.0]))
        Tensor([1. , 1.5, 2.5, 3. ], dtype=float64)
        >>> fnp.gradient(fnp.array([1.0, 2.0, 4.0, 7.0]), fnp.array([0.0, 1.0, 3.0, 4.0]))
        Tensor([1.        , 1.        , 2.33333333, 3.        ], dtype=float64)
    """
    edge_order = _args.choice(edge_order, "gradient", "edge_order", (1, 2))
    f = _float64(_t(f, "gradient", "f"))
    if f.ndim == 0:
        raise ShapeError("gradient: f must have at least one dimension, got a 0-d value")
    axes = _norm_axes("gradient", axis, f.ndim) if axis is not None else tuple(range(f.ndim))
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (axes[0],)
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and _t(varargs[0], "gradient", "varargs").ndim == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise ValueError(f"gradient: expected 0, 1 or {len(axes)} spacings, got {len(varargs)}")
    outs = []
    for ax, h in zip(axes, spacing):
        h = _t(h, "gradient", "varargs")
        h = _e.astype(h, dtype=np.dtype(dtypes.result_type(h, f))) if not dtypes.is_inexact(_dtype(h)) else h
        out = _gradient_axis(f, ax, h, edge_order)
        # numpy writes into an array of f's (floating) dtype: float32 f stays float32
        # whatever the spacing's dtype (JAX agrees for Python-scalar spacings)
        outs.append(out if _dtype(out) == _dtype(f) else _e.astype(out, dtype=_dtype(f)))
    return outs[0] if len(outs) == 1 else tuple(outs)


@_named("trapezoid")
def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Tensor:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule.

    Args:
        y: Tensor of samples.
        x: sample points: 1-d of ``y``'s length along ``axis``, or ``y``'s shape; None
            uses the spacing ``dx``.
        dx: the spacing when ``x`` is None.
        axis: the axis to integrate along.

    Returns:
        Tensor of ``y.shape`` without ``axis``; differentiable in ``y``, ``x`` and ``dx``.

    Raises:
        ShapeError: ``axis`` out of range, or ``x`` of the wrong shape.

    Example:
        >>> fnp.trapezoid(fnp.array([1.0, 2.0, 4.0]), fnp.array([0.0, 1.0, 3.0]))
        Tensor(7.5, dtype=float64)
    """
    y = _t(y, "trapezoid", "y")
    ax = _args.axis(axis, "trapezoid", y.ndim)
    if x is None:
        d = _args.real(dx, "trapezoid", "dx") if not isinstance(dx, Tensor) else dx
    else:
        x = _t(x, "trapezoid", "x")
        if x.ndim == 0:
            raise ShapeError("trapezoid: x must be 1-d or of y's shape, got a 0-d value (use dx=)")
        if x.ndim == 1:
            if x.shape[0] != y.shape[ax]:
                raise ShapeError(f"trapezoid: x of length {x.shape[0]} does not match y's axis {ax} ({y.shape[ax]})")
            d = _along(_e.subtract(x[1:], x[:-1]), ax, y.ndim)
        else:
            d = _e.subtract(_sl(x, ax, 1, None), _sl(x, ax, None, -1))
    avg = _e.divide(_e.add(_sl(y, ax, 1, None), _sl(y, ax, None, -1)), 2.0)
    return _r.sum(_e.multiply(d, avg), axes=(ax,), keepdims=False)


@_named("unwrap")
def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> Tensor:
    """Unwrap phases: add multiples of ``period`` where consecutive values jump by more
    than ``discont`` (numpy's ``unwrap``).

    Args:
        p: real Tensor of angles.
        discont: the largest jump left alone; default and minimum ``period / 2``.
        axis: the axis to unwrap along.
        period: the size of the range the input wraps over.

    Returns:
        Floating Tensor of ``p.shape``; the derivative is 1 (the added multiples of
        ``period`` are piecewise constant, as in JAX). Integer input is computed in
        float64 (numpy keeps integers with an integer period).

    Raises:
        DTypeError: complex input.
        ShapeError: ``axis`` out of range.

    Example:
        >>> fnp.unwrap(fnp.array([0.0, 3.0, 6.5]))
        Tensor([0.        , 3.        , 0.21681469], dtype=float64)
    """
    p = _float64(_real(_t(p, "unwrap", "p"), "unwrap", "p"))
    ax = _args.axis(axis, "unwrap", p.ndim)
    period = _args.real(period, "unwrap", "period")
    half = period / 2
    discont = half if discont is None else _args.real(discont, "unwrap", "discont")
    dd = _e.stop_gradient(_e.subtract(_sl(p, ax, 1, None), _sl(p, ax, None, -1)))
    ddmod = _e.subtract(_e.remainder(_e.add(dd, half), period), half)
    ddmod = _e.where(_e.logical_and(_e.equal(ddmod, -half), _e.greater(dd, 0)), half, ddmod)
    correct = _e.where(_e.less(_e.abs(dd), discont), 0.0, _e.subtract(ddmod, dd))
    zero = _c.zeros(p.shape[:ax] + (1,) + p.shape[ax + 1:], dtype=p.dtype)
    return _e.add(p, _sh.concatenate([zero, _red.cumsum(correct, ax)], axis=ax))


@_named("ediff1d")
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Tensor:
    """Differences of consecutive elements of the flattened ``ary``, with optional ends.

    Args:
        ary: Tensor of any shape (flattened).
        to_end: values appended after the differences.
        to_begin: values put before them.

    Returns:
        1-d Tensor of ``ary``'s dtype; differentiable.

    Raises:
        DTypeError: non-numeric input.

    Example:
        >>> fnp.ediff1d(fnp.array([1.0, 2.0, 4.0, 7.0]), to_begin=-99.0)
        Tensor([-99.,   1.,   2.,   3.], dtype=float64)
    """
    a = _sh.reshape(_t(ary, "ediff1d", "ary"), (-1,))
    parts = [_e.subtract(a[1:], a[:-1])]
    for name, extra, front in (("to_begin", to_begin, True), ("to_end", to_end, False)):
        if extra is not None:
            v = _sh.reshape(_t(extra, "ediff1d", name), (-1,))
            if not np.can_cast(_dtype(v), a.dtype, "same_kind"):
                raise DTypeError(
                    f"ediff1d: {name} of dtype {_dtype(v)} does not cast to ary's {a.dtype} "
                    "(numpy's same_kind rule)"
                )
            v = _e.astype(v, dtype=a.dtype)
            parts.insert(0, v) if front else parts.append(v)
    return _sh.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]


# ------------------------------------------------------------------ polynomials


def _coeffs(p: Any, fn: str, arg: str = "p") -> Tensor:
    p = _one_d(_t(p, fn, arg), fn, arg)
    if p.shape[0] == 0:
        raise ValueError(f"{fn}: {arg} must have at least one coefficient")
    return p


@_named("poly")
def poly(seq_of_zeros: Any) -> Tensor:
    """The coefficients of the monic polynomial with the given roots, highest power first.

    For a square matrix, its characteristic polynomial (Faddeev-LeVerrier recursion,
    where numpy takes the eigenvalues' polynomial; equal up to rounding).

    Args:
        seq_of_zeros: 1-d Tensor of roots, or a square ``(n, n)`` matrix.

    Returns:
        1-d Tensor of ``n + 1`` coefficients (0-d 1.0 for no roots; floating; complex roots give complex ones,
        as JAX: numpy returns the real part when the roots come in conjugate pairs).
        Differentiable.

    Raises:
        ShapeError: a 2-d input that is not square, or more dimensions.

    Example:
        >>> fnp.poly(fnp.array([1.0, 2.0]))
        Tensor([ 1., -3.,  2.], dtype=float64)
        >>> fnp.poly(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([ 1., -5., -2.], dtype=float64)
    """
    z = _float64(_t(seq_of_zeros, "poly", "seq_of_zeros"))
    if z.ndim == 0:
        raise ShapeError("poly: input must be 1-d or a square 2-d array, got a 0-d one")
    if z.size == 0:
        return as_tensor(np.asarray(1.0, dtype=z.dtype))  # numpy: the empty product, 0-d
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] > 0:
        n = z.shape[0]
        eye = _c.eye(n, dtype=z.dtype)
        coeffs = [_e.astype(1.0, dtype=z.dtype)]
        mk = _c.zeros((n, n), dtype=z.dtype)
        for k in range(1, n + 1):
            mk = _e.add(_la.matmul(z, mk), _e.multiply(eye, coeffs[-1]))
            coeffs.append(_e.divide(_e.negative(_la.trace(_la.matmul(z, mk))), float(k)))
        return _sh.stack(coeffs)
    if z.ndim > 1:
        raise ShapeError(f"poly: input must be 1-d or a square 2-d array, got shape {z.shape}")
    z = _sh.reshape(z, (-1,))
    a = _c.ones((1,), dtype=z.dtype)
    for k in range(z.shape[0]):
        zero = _c.zeros((1,), dtype=z.dtype)
        a = _e.subtract(_sh.concatenate([a, zero]), _e.multiply(z[k], _sh.concatenate([zero, a])))
    return a


def _left_pad(p: Tensor, n: int) -> Tensor:
    return p if p.shape[0] == n else _sh.concatenate([_c.zeros((n - p.shape[0],), dtype=p.dtype), p])


def _poly_sum_fn(name: str, op, sign: str, example: str) -> Any:
    def fn(a1: Any, a2: Any) -> Tensor:
        a1, a2 = _coeffs(a1, name, "a1"), _coeffs(a2, name, "a2")
        n = builtins.max(a1.shape[0], a2.shape[0])
        return op(_left_pad(a1, n), _left_pad(a2, n))

    return _public(name, fn, f"""The polynomial ``a1 {sign} a2`` (coefficients highest power first).

    Args:
        a1: 1-d coefficients.
        a2: 1-d coefficients.

    Returns:
        1-d Tensor of the longer length; differentiable.

    Raises:
        ShapeError: an input that is not 1-d.

    Example:
{example}
    """)


polyadd = _poly_sum_fn("polyadd", _e.add, "+", """\
        >>> fnp.polyadd(fnp.array([1.0, 2.0]), fnp.array([9.0, 5.0, 4.0]))
        Tensor([9., 6., 6.], dtype=float64)""")
polysub = _poly_sum_fn("polysub", _e.subtract, "-", """\
        >>> fnp.polysub(fnp.array([2.0, 10.0, -2.0]), fnp.array([3.0, 10.0, -4.0]))
        Tensor([-1.,  0.,  2.], dtype=float64)""")


@_named("polymul")
def polymul(a1: Any, a2: Any) -> Tensor:
    """The product of two polynomials (the convolution of their coefficients).

    Args:
        a1: 1-d coefficients (highest power first).
        a2: 1-d coefficients.

    Returns:
        1-d Tensor of length ``len(a1) + len(a2) - 1``; differentiable.

    Raises:
        ShapeError: an input with more than 1 dimension.

    Example:
        >>> fnp.polymul(fnp.array([1.0, 2.0, 3.0]), fnp.array([9.0, 5.0, 1.0]))
        Tensor([ 9., 23., 38., 17.,  3.], dtype=float64)
    """
    return convolve(_coeffs(a1, "polymul", "a1"), _coeffs(a2, "polymul", "a2"))


@_named("polydiv")
def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = True) -> tuple[Tensor, Tensor]:
    """Polynomial division: ``u = q * v + r`` with ``deg r < deg v``.

    Args:
        u: 1-d dividend coefficients (highest power first).
        v: 1-d divisor coefficients, ``v[0] != 0``.
        trim_leading_zeros: drop the remainder's leading (near-)zeros as numpy does
            (``abs < 1e-14`` relative); that needs concrete values, so pass False under
            ``jit`` for a remainder of ``len(u)`` coefficients (JAX's default).

    Returns:
        ``(q, r)``, floating 1-d Tensors; differentiable in ``u`` and ``v``.

    Raises:
        ConcretizationError: ``trim_leading_zeros`` on traced values.
        ShapeError: an input with more than 1 dimension.

    Example:
        >>> fnp.polydiv(fnp.array([3.0, 5.0, 2.0]), fnp.array([2.0, 1.0]))
        (Tensor([1.5 , 1.75], dtype=float64), Tensor([0.25], dtype=float64))
    """
    trim = _args.flag(trim_leading_zeros, "polydiv", "trim_leading_zeros")
    u, v = _float64(_coeffs(u, "polydiv", "u")), _float64(_coeffs(v, "polydiv", "v"))
    dtype = np.dtype(dtypes.result_type(u, v))
    u, v = _e.astype(u, dtype=dtype), _e.astype(v, dtype=dtype)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = _e.divide(1.0, v[0])
    r = [u[i] for i in range(m + 1)]
    q = []
    for k in range(builtins.max(m - n + 1, 0)):
        d = _e.multiply(scale, r[k])
        q.append(d)
        for j in range(n + 1):
            r[k + j] = _e.subtract(r[k + j], _e.multiply(d, v[j]))
    q = _sh.stack(q) if q else _c.zeros((1,), dtype=dtype)
    r = _sh.stack(r)
    if trim:
        rv = _concrete(r, "polydiv", "Pass trim_leading_zeros=False for a remainder of len(u) coefficients.")
        start = 0
        while start < rv.shape[0] - 1 and np.allclose(rv[start], 0, rtol=1e-14):
            start += 1
        r = r[start:]
    return q, r


@_named("polyder")
def polyder(p: Any, m: int = 1) -> Tensor:
    """The ``m``-th derivative of a polynomial.

    Args:
        p: 1-d coefficients (highest power first).
        m: the order of the derivative, ``>= 0``.

    Returns:
        1-d Tensor of ``max(len(p) - m, 1)`` coefficients (numpy's length rules);
        differentiable in ``p``.

    Raises:
        ValueError: negative ``m``.

    Example:
        >>> fnp.polyder(fnp.array([1.0, 2.0, 3.0, 4.0]), 2)
        Tensor([6., 4.], dtype=float64)
    """
    m = _args.index(m, "polyder", "m")
    if m < 0:
        raise ValueError(f"polyder: the order of the derivative must be >= 0, got {m}")
    p = _coeffs(p, "polyder")
    for _ in range(m):
        n = p.shape[0] - 1
        p = _e.multiply(p[:-1], np.arange(n, 0, -1)) if n > 0 else _e.multiply(p[:0], 0)
    return p


@_named("polyint")
def polyint(p: Any, m: int = 1, k: Any = None) -> Tensor:
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``.

    Args:
        p: 1-d coefficients (highest power first).
        m: the order of the antiderivative, ``>= 0``.
        k: the constants, one scalar for all or a sequence of ``m`` (the first for the
            first integration); default 0.

    Returns:
        1-d Tensor of ``len(p) + m`` floating coefficients; differentiable in ``p``, ``k``.

    Raises:
        ValueError: negative ``m``, or ``k`` of another length than ``m``.

    Example:
        >>> fnp.polyint(fnp.array([3.0, 2.0, 1.0]))
        Tensor([1., 1., 1., 0.], dtype=float64)
    """
    m = _args.index(m, "polyint", "m")
    if m < 0:
        raise ValueError(f"polyint: the order of the antiderivative must be >= 0, got {m}")
    p = _float(_coeffs(p, "polyint"))
    if k is None:
        ks = [0.0] * m
    else:
        kt = _t(k, "polyint", "k")
        ks = [kt] * m if kt.ndim == 0 else [kt[i] for i in range(kt.shape[0])]
        if len(ks) != m:
            raise ValueError(f"polyint: k must be a scalar or have m={m} elements, got {len(ks)}")
    for i in range(m):
        n = p.shape[0]
        p = _sh.concatenate([_e.divide(p, np.arange(n, 0, -1, dtype=np.float64)), _sh.reshape(_e.astype(ks[i], dtype=p.dtype), (1,))])
    return p


@_named("polyval")
def polyval(p: Any, x: Any) -> Tensor:
    """The polynomial ``p[0] x**(N-1) + ... + p[N-1]`` at ``x``, by Horner's rule.

    Args:
        p: 1-d coefficients (highest power first).
        x: Tensor or Python scalar of points.

    Returns:
        Tensor of ``x.shape`` and the promoted dtype; differentiable in ``p`` and ``x``.

    Raises:
        ShapeError: ``p`` has more than 1 dimension.

    Example:
        >>> fnp.polyval(fnp.array([3.0, 0.0, 1.0]), fnp.array([5.0, 1.0]))
        Tensor([76.,  4.], dtype=float64)
    """
    p = _coeffs(p, "polyval")
    x = _t(x, "polyval", "x")
    y = _e.multiply(_c.zeros_like(x, dtype=np.dtype(dtypes.result_type(p, x))), x)
    for i in range(p.shape[0]):
        y = _e.add(_e.multiply(y, x), p[i])
    return y


@_named("polyfit")
def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None,
            cov: Any = False) -> Any:
    """Least-squares fit of a polynomial of degree ``deg`` to the points ``(x, y)``.

    As numpy's: the Vandermonde columns are scaled to unit norm before ``lstsq``.

    Args:
        x: 1-d sample points, length ``M``.
        y: ``(M,)`` or ``(M, K)`` values (``K`` fits at once).
        deg: the degree.
        rcond: relative cutoff for small singular values (default ``M * eps``).
        full: also return ``(residuals, rank, singular_values, rcond)``.
        w: 1-d weights applied to the residuals (``1/sigma``).
        cov: also return the coefficients' covariance (``"unscaled"``: without the
            residual-variance factor).

    Returns:
        Coefficients, highest power first: ``(deg + 1,)`` or ``(deg + 1, K)``;
        differentiable in ``x``, ``y`` and ``w`` (through ``lstsq``, as JAX's). With
        ``full`` or ``cov``, a tuple as numpy's.

    Raises:
        ValueError: negative ``deg``, or ``cov`` with no more points than coefficients.
        ShapeError: ``x``/``y``/``w`` of mismatched or wrong rank.

    Example:
        >>> fnp.round(fnp.polyfit(fnp.array([0.0, 1.0, 2.0, 3.0]), fnp.array([1.0, 3.0, 5.0, 7.0]), 1), 10)
        Tensor([2., 1.], dtype=float64)
    """
    from fgrad.numpy import linalg as _linalg  # a later module of this layer

    deg = _args.index(deg, "polyfit", "deg")
    full = _args.flag(full, "polyfit", "full")
    if not (isinstance(cov, (bool, int)) or (isinstance(cov, str) and cov == "unscaled")):
        raise TypeError(f"polyfit: cov must be a bool or 'unscaled', got {_args.describe(cov)}")
    cov = cov if isinstance(cov, str) else bool(cov)
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
    x = _float(_one_d(_t(x, "polyfit", "x"), "polyfit", "x"))
    y = _float(_t(y, "polyfit", "y"))
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise ShapeError(f"polyfit: y must be (M,) or (M, K) with M = len(x) = {x.shape[0]}, got {y.shape}")
    order = deg + 1
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = _one_d(_t(w, "polyfit", "w"), "polyfit", "w")
        if w.shape[0] != x.shape[0]:
            raise ShapeError(f"polyfit: w of length {w.shape[0]} does not match x ({x.shape[0]})")
        lhs = _e.multiply(lhs, _sh.reshape(w, (-1, 1)))
        rhs = _e.multiply(rhs, w if y.ndim == 1 else _sh.reshape(w, (-1, 1)))
    if rcond is None:
        rcond = x.shape[0] * float(np.finfo(_dtype(x)).eps)
    scale = _e.sqrt(_r.sum(_e.multiply(lhs, lhs), axes=(0,), keepdims=False))
    scale = _e.where(_e.equal(scale, 0), 1.0, scale)
    lhs = _e.divide(lhs, scale)
    c, resids, rank, s = _linalg.lstsq(lhs, rhs, rcond, numpy_resid=True) if full else (
        _linalg.lstsq(lhs, rhs, rcond)[0], None, None, None)
    c = _e.divide(c, scale if c.ndim == 1 else _sh.reshape(scale, (-1, 1)))
    if full:
        return c, resids, rank, s, rcond
    if cov is not False:
        n_pts = x.shape[0]
        if n_pts <= order:
            raise ValueError("polyfit: the fit has too few points for a covariance (need len(x) > deg + 1)")
        inv = _linalg.inv(_la.matmul(_sh.swapaxes(lhs, 0, 1), lhs))
        inv = _e.divide(inv, _la.outer(scale, scale))
        if cov == "unscaled":
            fac = 1.0
        else:
            resid = _e.subtract(rhs, _la.matmul(lhs, _e.multiply(c, scale if c.ndim == 1 else _sh.reshape(scale, (-1, 1)))))
            fac = _e.divide(_r.sum(_e.multiply(resid, resid), axes=(0,), keepdims=False), n_pts - order)
        if y.ndim == 1:
            return c, _e.multiply(inv, fac)
        return c, _e.multiply(_sh.expand_dims(inv, -1), fac)
    return c


@_named("roots")
def roots(p: Any, *, strip_zeros: bool = True) -> Tensor:
    """The roots of the polynomial ``p[0] x**n + ... + p[n]``, as numpy's ``roots``.

    The eigenvalues of the companion matrix; the derivative is the implicit-function
    rule ``dr/dp[k] = -r**(n-k) / p'(r)`` (infinite at a repeated root).

    Args:
        p: 1-d coefficients, highest power first.
        strip_zeros: drop leading zeros (which lower the degree) and trailing zeros (each
            a root at 0), as numpy; that needs concrete values, so under ``jit`` pass
            False with ``p[0] != 0`` (JAX's ``strip_zeros``).

    Returns:
        1-d complex Tensor of the roots (complex64 for float32 input), always complex,
        as JAX (numpy returns real roots as a real array); differentiable.

    Raises:
        ConcretizationError: ``strip_zeros`` on a traced ``p``.
        ShapeError: ``p`` has more than 1 dimension.

    Example:
        >>> fnp.roots(fnp.array([1.0, -3.0, 2.0]))
        Tensor([2.+0.j, 1.+0.j], dtype=complex128)
    """
    strip = _args.flag(strip_zeros, "roots", "strip_zeros")
    p = _float(_coeffs(p, "roots"))
    n_zero_roots = 0
    if strip:
        pv = _concrete(p, "roots", "Pass strip_zeros=False with a nonzero leading coefficient.")
        nz = np.flatnonzero(pv)
        if nz.size == 0:
            return _c.zeros((0,), dtype=_poly._roots_aval(p).dtype)
        n_zero_roots = pv.shape[0] - 1 - int(nz[-1])
        p = p[int(nz[0]):int(nz[-1]) + 1]
    r = _poly.roots(p)
    if n_zero_roots:
        r = _sh.concatenate([r, _c.zeros((n_zero_roots,), dtype=r.dtype)])
    return r


@_named("vander")
def vander(x: Any, N: Any = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix ``x[:, None] ** powers`` (decreasing powers by default).

    Args:
        x: 1-d Tensor of length ``M``.
        N: the number of columns (default ``M``).
        increasing: powers ``0, 1, ...`` left to right instead of ``N-1, ..., 0``.

    Returns:
        ``(M, N)`` Tensor of ``x``'s floating dtype, or for integers and bool numpy's
        ``promote_types(x.dtype, int64)``; differentiable in ``x``.

    Raises:
        ShapeError: ``x`` is not 1-d.
        ValueError: negative ``N``.

    Example:
        >>> fnp.vander(fnp.array([1.0, 2.0, 3.0]))
        Tensor([[1., 1., 1.],
                [4., 2., 1.],
                [9., 3., 1.]], dtype=float64)
    """
    increasing = _args.flag(increasing, "vander", "increasing")
    x = _one_d(_t(x, "vander", "x"), "vander", "x")
    if not dtypes.is_inexact(_dtype(x)):  # numpy: promote_types(x.dtype, int64); uint64: float64
        x = _e.astype(x, dtype=np.promote_types(_dtype(x), np.int64))
    n = x.shape[0] if N is None else _args.size(N, "vander", "N")
    m = x.shape[0]
    # Running products, as numpy's (exact powers; no x**(k-1) at x = 0 in the derivative).
    cols = [_c.ones((m, builtins.min(n, 1)), dtype=_dtype(x))]
    if n > 1:
        cols.append(_red.cumprod(_sh.broadcast_to(_sh.reshape(x, (m, 1)), (m, n - 1)), 1))
    out = _sh.concatenate(cols, axis=1) if len(cols) > 1 else cols[0]
    return out if increasing else _sh.flip(out, 1)


# ------------------------------------------------------------------ windows


def _window(fn: str, M: Any, make) -> Tensor:
    m = _args.index(M, fn, "M")
    if m < 1:
        return _c.zeros((0,), dtype=np.float64)
    if m == 1:
        return _c.ones((1,), dtype=np.float64)
    return make(m, _c.arange(0, m, dtype=np.float64))


def _window_fn(name: str, formula: str, make, example: str) -> Any:
    def fn(M: int) -> Tensor:
        return _window(name, M, make)

    return _public(name, fn, f"""The {formula} window of ``M`` points.

    Args:
        M: the number of points (an empty window for ``M < 1``).

    Returns:
        ``(M,)`` float64 Tensor; no input to differentiate.

    Raises:
        TypeError: ``M`` is not an integer.

    Example:
{example}
    """)


def _triangle(m: int, n: Tensor) -> Tensor:
    return _e.subtract(1.0, _e.abs(_e.subtract(_e.multiply(n, 2.0 / (m - 1)), 1.0)))


def _cosines(*coefs: float):
    """``sum_j (-1)**j c_j cos(2 pi j n / (M - 1))``: the generalised cosine windows."""

    def make(m, n):
        out = 0.0
        for j, c in enumerate(coefs):
            out = _e.add(out, _e.multiply((-1) ** j * c, _e.cos(_e.multiply(n, 2 * math.pi * j / (m - 1)))))
        return out

    return make


bartlett = _window_fn("bartlett", "Bartlett (triangular), zero at both ends,", _triangle, """\
        >>> fnp.bartlett(5)
        Tensor([0. , 0.5, 1. , 0.5, 0. ], dtype=float64)""")
blackman = _window_fn("blackman", "Blackman (``0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))``)",
                      _cosines(0.42, 0.5, 0.08), """\
        >>> fnp.round(fnp.blackman(3), 8)
        Tensor([-0.,  1., -0.], dtype=float64)""")
hamming = _window_fn("hamming", "Hamming (``0.54 - 0.46 cos(2 pi n / (M - 1))``)", _cosines(0.54, 0.46), """\
        >>> fnp.hamming(3)
        Tensor([0.08, 1.  , 0.08], dtype=float64)""")
hanning = _window_fn("hanning", "Hann (``0.5 - 0.5 cos(2 pi n / (M - 1))``)", _cosines(0.5, 0.5), """\
        >>> fnp.hanning(3)
        Tensor([0., 1., 0.], dtype=float64)""")


@_named("kaiser")
def kaiser(M: int, beta: Any) -> Tensor:
    """The Kaiser window, ``i0(beta sqrt(1 - (2n/(M-1) - 1)**2)) / i0(beta)``.

    Args:
        M: the number of points (an empty window for ``M < 1``).
        beta: the shape parameter (0: rectangular); a Python float or 0-d Tensor,
            differentiable.

    Returns:
        ``(M,)`` float64 Tensor.

    Raises:
        TypeError: ``M`` is not an integer.
        DTypeError: ``beta`` is not a real number.

    Example:
        >>> fnp.kaiser(4, 3.0)
        Tensor([0.20488476, 0.87124187, 0.87124187, 0.20488476], dtype=float64)
    """
    beta = _real(_t(beta, "kaiser", "beta"), "kaiser", "beta")
    if beta.ndim:
        raise ShapeError(f"kaiser: beta must be a scalar, got shape {beta.shape}")
    beta = _e.astype(beta, dtype=np.dtype(np.float64))

    def make(m, n):
        ratio = _e.subtract(_e.multiply(n, 2.0 / (m - 1)), 1.0)
        return _e.divide(i0(_e.multiply(beta, _e.sqrt(_e.subtract(1.0, _e.multiply(ratio, ratio))))), i0(beta))

    return _window("kaiser", M, make)


# ------------------------------------------------------------------ histograms and counting


_BIN_RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


def _bin_edges(fn: str, a: Tensor, bins: Any, rng: Any, weights: Any) -> Tensor:
    """numpy's bin edges for one dimension of data ``a`` (flattened, real)."""
    edge_dtype = np.result_type(_dtype(a), np.float64) if _dtype(a).kind in "biu" else _dtype(a)
    if isinstance(bins, str):
        if bins not in _BIN_RULES:
            raise ValueError(f"{fn}: bins={bins!r} is not one of numpy's rules {_BIN_RULES}")
        av = _concrete(a, fn, "Pass the number of bins (an int) or the edges instead of a string rule.")
        wv = None if weights is None else _concrete(weights, fn, "Pass an int bins.")
        rv = None if rng is None else tuple(float(v) for v in rng)
        return as_tensor(np.histogram_bin_edges(av, bins, rv, wv))
    if isinstance(bins, (Tensor, list, tuple, np.ndarray)):
        edges = _t(bins, fn, "bins")
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise ShapeError(f"{fn}: bins must be an int or 1-d edges (at least 2), got shape {edges.shape}")
        ev = _maybe_concrete(edges)
        if ev is not None and np.any(ev[1:] < ev[:-1]):
            raise ValueError(f"{fn}: bins must increase monotonically, got {ev}")
        return edges
    n = _args.index(bins, fn, "bins")
    if n < 1:
        raise ValueError(f"{fn}: bins must be positive, got {n}")
    if rng is not None:
        if not isinstance(rng, (tuple, list)) or len(rng) != 2:
            raise TypeError(f"{fn}: range must be a (min, max) pair, got {_args.describe(rng)}")
        lo, hi = (_args.real(v, fn, "range") for v in rng)
        if lo > hi:
            raise ValueError(f"{fn}: max must be larger than min in range, got {rng}")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"{fn}: supplied range of [{lo}, {hi}] is not finite")
        lo, hi = as_tensor(np.asarray(lo, edge_dtype)), as_tensor(np.asarray(hi, edge_dtype))
    elif a.size == 0:
        lo, hi = as_tensor(np.asarray(0.0, edge_dtype)), as_tensor(np.asarray(1.0, edge_dtype))
    else:
        lo = _e.astype(_e.stop_gradient(_red.min(a)), dtype=edge_dtype)
        hi = _e.astype(_e.stop_gradient(_red.max(a)), dtype=edge_dtype)
        lv, hv = _maybe_concrete(lo), _maybe_concrete(hi)
        if lv is not None and not (np.isfinite(lv) and np.isfinite(hv)):
            raise ValueError(f"{fn}: autodetected range of [{lv}, {hv}] is not finite; pass range=")
    same = _e.equal(lo, hi)
    lo, hi = _e.where(same, _e.subtract(lo, 0.5), lo), _e.where(same, _e.add(hi, 0.5), hi)
    step = _e.divide(_e.subtract(hi, lo), float(n))
    inner = _e.add(lo, _e.multiply(_c.arange(0, n, dtype=edge_dtype), step))
    return _sh.concatenate([inner, _sh.reshape(hi, (1,))])


def _bin_index(x: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin (numpy: half-open bins, the last one closed) and whether it has one."""
    nb = edges.shape[0] - 1
    idx = _e.subtract(_so.searchsorted(edges, x, side="right"), 1)
    idx = _e.where(_e.equal(x, edges[-1]), nb - 1, idx)
    ok = _e.logical_and(_e.logical_and(_e.greater_equal(idx, 0), _e.less(idx, nb)),
                        _e.logical_and(_e.greater_equal(x, edges[0]), _e.less_equal(x, edges[-1])))
    return _e.where(ok, idx, 0), ok


def _counts(flat_idx: Tensor, ok: Tensor, weights: Any, length: int) -> Tensor:
    w = _e.where(ok, 1, 0) if weights is None else _e.where(ok, weights, 0)
    return bincount(flat_idx, w, length=length) if weights is not None else _e.astype(
        bincount(flat_idx, w, length=length), dtype=np.dtype(np.int64))


@_named("histogram_bin_edges")
def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Tensor:
    """The bin edges :func:`histogram` uses (numpy's ``histogram_bin_edges``).

    Args:
        a: real Tensor of data (flattened).
        bins: the number of equal-width bins, the edges themselves (1-d, increasing), or
            one of numpy's rules (``"auto"``, ``"fd"``, ...; needs concrete data).
        range: ``(min, max)`` of the bins; default the data's range.
        weights: used by the string rules only.

    Returns:
        1-d floating Tensor of ``nbins + 1`` edges; no derivative.

    Raises:
        ValueError: ``bins`` not positive or not increasing, a bad ``range``, or a
            non-finite autodetected range.
        ConcretizationError: a string ``bins`` on traced data.

    Example:
        >>> fnp.histogram_bin_edges(fnp.array([0.0, 1.0, 4.0]), bins=4)
        Tensor([0., 1., 2., 3., 4.], dtype=float64)
    """
    a = _real(_t(a, "histogram_bin_edges", "a"), "histogram_bin_edges", "a")
    if weights is not None:
        weights = _t(weights, "histogram_bin_edges", "weights")
        if weights.shape != a.shape:
            raise ShapeError(f"histogram_bin_edges: weights of shape {weights.shape} do not match a's {a.shape}")
        weights = _sh.reshape(weights, (-1,))
    return _bin_edges("histogram_bin_edges", _sh.reshape(a, (-1,)), bins, range, weights)


@_named("histogram")
def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,
              weights: Any = None) -> tuple[Tensor, Tensor]:
    """The histogram of ``a``: counts (or summed weights) per bin, and the bin edges.

    Bins are half-open ``[e_i, e_{i+1})`` except the last, which includes its right edge;
    values outside the edges (and NaN) are not counted. An int ``bins`` gives a static
    number of bins, so this works under ``jit`` (the edges follow the traced data's range).

    Args:
        a: real Tensor of data (flattened).
        bins: the number of equal-width bins, the edges (1-d, increasing), or a numpy rule
            name (concrete data only).
        range: ``(min, max)`` of the bins; default the data's range.
        density: normalise to a probability density (the integral over the range is 1).
        weights: a Tensor of ``a``'s shape; each value counts its weight. Differentiable.

    Returns:
        ``(hist, bin_edges)``: ``hist`` int64 counts, or of ``weights``' dtype (floating
        with ``density``); no derivative in ``a``.

    Raises:
        ShapeError: ``weights`` of another shape.
        ValueError: bad ``bins`` or ``range``.
        ConcretizationError: a string ``bins`` on traced data.

    Example:
        >>> fnp.histogram(fnp.array([1.0, 2.0, 1.0, 4.0]), bins=3, range=(0.0, 3.0))
        (Tensor([0, 2, 1], dtype=int64), Tensor([0., 1., 2., 3.], dtype=float64))
    """
    a = _real(_t(a, "histogram", "a"), "histogram", "a")
    if weights is not None:
        weights = _t(weights, "histogram", "weights")
        if weights.shape != a.shape:
            raise ShapeError(f"histogram: weights of shape {weights.shape} do not match a's {a.shape}")
        weights = _sh.reshape(weights, (-1,))
    a = _sh.reshape(a, (-1,))
    edges = _bin_edges("histogram", a, bins, range, weights)
    idx, ok = _bin_index(_e.stop_gradient(a), edges)
    hist = _counts(idx, ok, weights, edges.shape[0] - 1)
    if weights is not None and _dtype(hist) != _dtype(weights):  # numpy sums in weights' dtype
        hist = _e.astype(hist, dtype=_dtype(weights))
    if density is not None and _args.flag(density, "histogram", "density"):
        widths = _e.subtract(edges[1:], edges[:-1])
        hist = _e.divide(_e.divide(hist, _r.sum(hist, axes=(0,), keepdims=False)), widths)
    return hist, edges


@_named("histogramdd")
def histogramdd(sample: Any, bins: Any = 10, range: Any = None, density: Any = None,
                weights: Any = None) -> tuple[Tensor, list]:
    """The multidimensional histogram of ``N`` points in ``D`` dimensions.

    Args:
        sample: ``(N, D)`` Tensor, or a sequence of ``D`` 1-d Tensors of length ``N``.
        bins: an int for every dimension, or a sequence of ``D`` ints or edge Tensors.
        range: a sequence of ``D`` ``(min, max)`` pairs (or None entries).
        density: normalise to a probability density.
        weights: ``(N,)`` weights, differentiable.

    Returns:
        ``(hist, edges)``: a ``D``-d Tensor of counts (int64, or ``weights``' dtype) and
        the list of ``D`` edge Tensors.

    Raises:
        ShapeError: ``sample`` is not ``(N, D)`` or ``weights`` not ``(N,)``.
        ValueError: bad ``bins`` or ``range``, or sequences of the wrong length.

    Example:
        >>> h, edges = fnp.histogramdd(fnp.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]), bins=2)
        >>> h
        Tensor([[1, 0],
                [1, 1]], dtype=int64)
    """
    if isinstance(sample, (list, tuple)):
        items = [_t(s, "histogramdd", "sample") for s in sample]
        if builtins.all(v.ndim == 0 for v in items):  # numpy: a sequence of numbers is 1-d data
            cols = [_sh.stack(items)] if items else []
        else:
            cols = [_sh.reshape(v, (-1,)) for v in items]
        if not cols:
            raise ShapeError("histogramdd: sample is empty")
    else:
        s = _t(sample, "histogramdd", "sample")
        if s.ndim == 1:
            s = _sh.reshape(s, (-1, 1))
        if s.ndim != 2:
            raise ShapeError(f"histogramdd: sample must be (N, D), got shape {s.shape}")
        cols = [s[:, d] for d in builtins.range(s.shape[1])]
    d = len(cols)
    bins_list = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    if range is not None and not isinstance(range, (list, tuple)):
        raise TypeError(f"histogramdd: range must be a sequence of (min, max) pairs, got {_args.describe(range)}")
    ranges = list(range) if range is not None else [None] * d
    if len(bins_list) != d or len(ranges) != d:
        raise ValueError(f"histogramdd: bins and range need one entry per dimension ({d})")
    if weights is not None:
        weights = _t(weights, "histogramdd", "weights")
        if weights.shape != cols[0].shape:
            raise ShapeError(f"histogramdd: weights must be ({cols[0].shape[0]},), got {weights.shape}")
    edges, flat, ok, shape = [], None, None, []
    for col, b, r in zip(cols, bins_list, ranges):
        col = _real(col, "histogramdd", "sample")
        e = _bin_edges("histogramdd", col, b, r, None)
        i, k = _bin_index(_e.stop_gradient(col), e)
        nb = e.shape[0] - 1
        flat = i if flat is None else _e.add(_e.multiply(flat, nb), i)
        ok = k if ok is None else _e.logical_and(ok, k)
        edges.append(e)
        shape.append(nb)
    length = int(np.prod(shape, dtype=np.int64))
    hist = _sh.reshape(_counts(flat, ok, weights, length), tuple(shape))
    if density is not None and _args.flag(density, "histogramdd", "density"):
        hist = _e.divide(hist, _r.sum(hist, axes=tuple(builtins.range(d)), keepdims=False))
        for k, e in enumerate(edges):
            hist = _e.divide(hist, _along(_e.subtract(e[1:], e[:-1]), k, d))
    return hist, edges


@_named("histogram2d")
def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None,
                weights: Any = None) -> tuple[Tensor, Tensor, Tensor]:
    """The 2-d histogram of the points ``(x[i], y[i])``.

    Args:
        x: 1-d Tensor of first coordinates.
        y: 1-d Tensor of second coordinates, ``x``'s length.
        bins: an int, a pair of ints or edge Tensors, or one edge Tensor for both.
        range: ``((xmin, xmax), (ymin, ymax))``.
        density: normalise to a probability density.
        weights: 1-d weights, differentiable.

    Returns:
        ``(hist, xedges, yedges)``: ``hist[i, j]`` counts ``x`` in bin ``i`` and ``y`` in
        bin ``j``.

    Raises:
        ShapeError: ``x`` and ``y`` differ in length.
        ValueError: bad ``bins`` or ``range``.

    Example:
        >>> h, xe, ye = fnp.histogram2d(fnp.array([0.0, 1.0, 1.0]), fnp.array([0.0, 1.0, 0.0]), bins=2)
        >>> h
        Tensor([[1, 0],
                [1, 1]], dtype=int64)
    """
    x, y = _t(x, "histogram2d", "x"), _t(y, "histogram2d", "y")
    if x.shape != y.shape:
        raise ShapeError(f"histogram2d: x and y must have the same shape, got {x.shape} and {y.shape}")
    if isinstance(bins, (Tensor, np.ndarray)) or (isinstance(bins, (list, tuple)) and len(bins) != 2):
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


@_named("bincount")
def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: Any = None) -> Tensor:
    """The number of occurrences of each value ``0, 1, ...`` in non-negative integer ``x``.

    Args:
        x: 1-d non-negative integer Tensor.
        weights: optional ``x``-shaped weights: each occurrence counts its weight.
            Differentiable (the counts are not differentiable in ``x``).
        minlength: the least number of bins.
        length: the exact number of bins (JAX's argument, taking precedence over
            ``minlength``), needed under ``jit``, where the largest value of ``x`` is not
            known; values ``>= length`` are dropped.

    Returns:
        1-d Tensor of ``max(max(x) + 1, minlength)`` (or ``length``) counts: int64, or
        float64 with ``weights`` (as numpy; float32 weights give float64 too).

    Raises:
        DTypeError: ``x`` is not integer, or ``weights`` complex.
        ShapeError: ``x`` is not 1-d, or ``weights`` of another shape.
        ValueError: a concrete negative value in ``x``, or a negative ``minlength``.
        ConcretizationError: no ``length`` for a traced ``x``.

    Example:
        >>> fnp.bincount(fnp.array([0, 1, 1, 3]))
        Tensor([1, 2, 0, 1], dtype=int64)
        >>> fnp.bincount(fnp.array([0, 1, 1]), weights=fnp.array([0.5, 1.0, 2.0]))
        Tensor([0.5, 3. ], dtype=float64)
    """
    x = _one_d(_t(x, "bincount", "x"), "bincount", "x")
    if _dtype(x).kind not in "biu":
        raise DTypeError(f"bincount: x must be non-negative integers, got dtype {_dtype(x)}")
    minlength = _args.index(minlength, "bincount", "minlength")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    xv = _maybe_concrete(x)
    if xv is not None and xv.size and xv.min() < 0:
        raise ValueError(f"bincount: x must be non-negative, got a minimum of {xv.min()}")
    if length is None:
        xv = _concrete(x, "bincount", "Pass a static length=N (the number of bins), as in JAX.")
        length = builtins.max(int(xv.max()) + 1 if xv.size else 0, minlength)
    else:
        length = _args.size(length, "bincount", "length")  # as JAX's: it overrides minlength
    if weights is None:
        w = _c.ones(x.shape, dtype=np.int64)
    else:
        w = _t(weights, "bincount", "weights")
        if dtypes.is_complex(_dtype(w)):
            raise DTypeError(f"bincount: weights must be real, got dtype {_dtype(w)}")
        if w.shape != x.shape:
            raise ShapeError(f"bincount: weights of shape {w.shape} do not match x's {x.shape}")
        w = _e.astype(w, dtype=np.dtype(np.float64))
    inside = _e.logical_and(_e.greater_equal(x, 0), _e.less(x, length))
    idx = _e.where(inside, x, length)  # the extra last bin takes what is dropped
    total = _ix._at(_c.zeros((length + 1,), dtype=w.dtype))[idx].add(w)
    return total[:length]


@_named("digitize")
def digitize(x: Any, bins: Any, right: bool = False) -> Tensor:
    """The index of the bin each value of ``x`` falls in (numpy's ``digitize``).

    For increasing ``bins``: ``i`` with ``bins[i-1] <= x < bins[i]`` (``<`` and ``<=``
    swapped with ``right``); for decreasing ``bins`` the mirror image.

    Args:
        x: real Tensor of any shape.
        bins: 1-d monotonic Tensor.
        right: whether the intervals include their right edge instead of the left.

    Returns:
        int64 Tensor of ``x.shape``, values in ``[0, len(bins)]``; no derivative.

    Raises:
        ShapeError: ``bins`` is not 1-d.
        ValueError: concrete ``bins`` that are not monotonic.
        DTypeError: complex input.

    Example:
        >>> fnp.digitize(fnp.array([0.2, 6.4, 3.0, 1.6]), fnp.array([0.0, 1.0, 2.5, 4.0, 10.0]))
        Tensor([1, 4, 3, 2], dtype=int64)
    """
    right = _args.flag(right, "digitize", "right")
    x = _real(_t(x, "digitize", "x"), "digitize", "x")
    bins = _one_d(_real(_t(bins, "digitize", "bins"), "digitize", "bins"), "digitize", "bins")
    bv = _maybe_concrete(bins)
    if bv is not None and bv.size > 1:
        d = np.diff(bv)
        if not (np.all(d >= 0) or np.all(d <= 0)):
            raise ValueError("digitize: bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    up = _so.searchsorted(bins, x, side=side)
    if bins.shape[0] < 2:
        return up
    down = _e.subtract(bins.shape[0], _so.searchsorted(bins[::-1], x, side=side))
    return _e.where(_e.greater_equal(bins[-1], bins[0]), up, down)


# ------------------------------------------------------------------ products


def _gufunc_args(fn: str, out, axes, axis, keepdims, dtype, x):
    """numpy's gufunc keywords: ``out`` refused, the core axes fixed (last ones)."""
    _no_out(out, fn)
    if axes is not None or axis is not None or keepdims is not False:
        raise TypeError(
            f"{fn}: axes=, axis= and keepdims= are not supported (the core axes are the last "
            "ones); move them there first with fnp.moveaxis"
        )
    return x if dtype is None else _e.astype(x, dtype=_args.dtype(dtype, fn, none_ok=False))


@_named("matvec")
def matvec(x1: Any, x2: Any, /, out: Any = None, *, axes: Any = None, axis: Any = None,
           keepdims: bool = False, dtype: Any = None) -> Tensor:
    """Matrix-vector products over stacks: ``out[..., i] = sum_j x1[..., i, j] x2[..., j]``.

    Args:
        x1: ``(..., M, N)`` Tensor.
        x2: ``(..., N)`` Tensor; the stack axes broadcast.
        out: not supported (Tensors are immutable).
        axes: not supported (the core axes are the last ones).
        axis: not supported.
        keepdims: only False.
        dtype: cast both inputs to this dtype first.

    Returns:
        ``(..., M)`` Tensor; differentiable.

    Raises:
        ShapeError: ``x1`` below 2-d, ``x2`` 0-d, or the ``N`` axes differ.

    Example:
        >>> fnp.matvec(fnp.array([[1.0, 2.0], [3.0, 4.0]]), fnp.array([1.0, 1.0]))
        Tensor([3., 7.], dtype=float64)
    """
    x1, x2 = (_gufunc_args("matvec", out, axes, axis, keepdims, dtype, _t(v, "matvec", n))
              for v, n in ((x1, "x1"), (x2, "x2")))
    if x1.ndim < 2 or x2.ndim < 1 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"matvec: needs (..., M, N) and (..., N), got {x1.shape} and {x2.shape}")
    return _la.matmul(x1, _sh.expand_dims(x2, -1))[..., 0]


@_named("vecmat")
def vecmat(x1: Any, x2: Any, /, out: Any = None, *, axes: Any = None, axis: Any = None,
           keepdims: bool = False, dtype: Any = None) -> Tensor:
    """Vector-matrix products over stacks, conjugating the vector (numpy's ``vecmat``).

    Args:
        x1: ``(..., M)`` Tensor (conjugated when complex).
        x2: ``(..., M, N)`` Tensor; the stack axes broadcast.
        out: not supported (Tensors are immutable).
        axes: not supported (the core axes are the last ones).
        axis: not supported.
        keepdims: only False.
        dtype: cast both inputs to this dtype first.

    Returns:
        ``(..., N)`` Tensor: ``sum_i conj(x1[..., i]) x2[..., i, :]``; differentiable.

    Raises:
        ShapeError: ``x2`` below 2-d, ``x1`` 0-d, or the ``M`` axes differ.

    Example:
        >>> fnp.vecmat(fnp.array([1.0, 1.0]), fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([4., 6.], dtype=float64)
    """
    x1, x2 = (_gufunc_args("vecmat", out, axes, axis, keepdims, dtype, _t(v, "vecmat", n))
              for v, n in ((x1, "x1"), (x2, "x2")))
    if x2.ndim < 2 or x1.ndim < 1 or x1.shape[-1] != x2.shape[-2]:
        raise ShapeError(f"vecmat: needs (..., M) and (..., M, N), got {x1.shape} and {x2.shape}")
    x1 = _e.conj(x1) if dtypes.is_complex(_dtype(x1)) else x1  # numpy's conj(bool) is int8
    return _la.matmul(_sh.expand_dims(x1, -2), x2)[..., 0, :]


@_named("einsum_path")
def einsum_path(subscripts: str, *operands: Any, optimize: Any = "greedy", einsum_call: bool = False) -> Any:
    """numpy's contraction order for an ``einsum`` and its cost report, from the shapes.

    Only the operands' shapes are read, so traced operands work too.

    Args:
        subscripts: the ``einsum`` subscripts.
        *operands: the Tensors (or arrays) to contract.
        optimize: ``"greedy"``, ``"optimal"``, True (greedy), or an explicit path list.
        einsum_call: numpy's internal flag (False).

    Returns:
        ``(path, report)``: the list ``["einsum_path", (i, j), ...]`` and a printable string.

    Raises:
        ValueError: subscripts that do not match the operands (numpy's message).

    Example:
        >>> path, report = fnp.einsum_path("ij,jk,kl->il", fnp.ones((2, 3)), fnp.ones((3, 4)), fnp.ones((4, 5)))
        >>> path
        ['einsum_path', (1, 2), (0, 1)]
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum_path: subscripts must be a str, got {_args.describe(subscripts)}")
    stand_ins = []
    for i, op in enumerate(operands):
        t = _t(op, "einsum_path", f"operands[{i}]")
        stand_ins.append(np.broadcast_to(np.zeros((), dtype=_dtype(t)), t.shape))
    try:
        return np.einsum_path(subscripts, *stand_ins, optimize=optimize, einsum_call=einsum_call)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"einsum_path: {e}") from None


def __dir__() -> list[str]:
    return list(__all__)
