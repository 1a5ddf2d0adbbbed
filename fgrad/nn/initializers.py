"""Parameter initialisers: functions ``init(key, shape, dtype=float32) -> Tensor``.

As in ``jax.nn.initializers``, :func:`zeros` and :func:`ones` are initialisers themselves,
while the others are factories that take hyper-parameters and return one
(``normal(0.02)``, ``glorot_uniform()``). A factory called with a key first uses its
default hyper-parameters directly: ``glorot_uniform(key, shape)`` is
``glorot_uniform()(key, shape)``. The variance-scaling family computes fans from
the shape: ``fan_in = shape[in_axis] * receptive_field`` and ``fan_out = shape[out_axis] *
receptive_field``, where the receptive field is the product of the other dimensions. The
defaults (``in_axis=-2``, ``out_axis=-1``) fit ``(in_features, out_features)`` matrices;
for ``(out_channels, in_channels, kh, kw)`` convolution filters pass ``in_axis=1,
out_axis=0`` (as :class:`fgrad.nn.Conv2d` does).

Example:
    >>> init = glorot_uniform()
    >>> w = init(fgrad.random.key(0), (64, 32))
    >>> w.shape, w.dtype
    ((64, 32), dtype('float32'))
    >>> bool(fnp.max(fnp.abs(w)) <= (6 / (64 + 32)) ** 0.5)
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args, random
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import Tensor, as_tensor

__all__ = [
    "Initializer",
    "constant",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]

Initializer = Callable[..., Tensor]

# std of a standard normal truncated to [-2, 2]; dividing by it restores unit variance.
_TRUNC_STD = 0.87962566103423978


def _factory(make: Callable) -> Callable:
    """Let ``make(key, shape, dtype)`` stand for ``make()(key, shape, dtype)``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args and _is_key_call(args, kwargs):  # a key: initialise with the defaults
            return make()(*args, **kwargs)
        return make(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = make.__name__
    wrapper.__doc__ = make.__doc__
    wrapper.__module__ = make.__module__
    wrapper.__wrapped__ = make
    return wrapper


def _is_key_call(args: tuple, kwargs: dict) -> bool:
    """Whether a factory was called as an initialiser, ``(key, shape[, dtype])``: a key
    first (a Tensor of a key's shape and dtype) with a shape after it, not a
    hyper-parameter that happens to be a Tensor."""
    first = args[0]
    if not isinstance(first, Tensor):
        return False
    keylike = tuple(first.shape) == (2,) and str(first.dtype) == "uint32"
    return keylike or len(args) > 1 or "shape" in kwargs


def _shape(shape: Any, name: str) -> tuple[int, ...]:
    return _args.shape(shape, name)


def _device(key: Any) -> Any:
    """Make constant parameters on the device of the key (where sampled ones land too)."""
    return key.device if isinstance(key, Tensor) else None


def _float(dtype: Any, name: str) -> np.dtype:
    dtype = _args.dtype(dtype, name, none_ok=False)
    if not np.issubdtype(dtype, np.floating):
        raise DTypeError(f"{name}: parameters must be real floating, got dtype {dtype}")
    return dtype


def zeros(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
    """Zeros (``key`` is ignored; kept so every initialiser has one signature).

    Raises:
        DTypeError: ``shape`` holds something other than ints, or ``dtype`` is not a
            numeric dtype.
        ShapeError: a negative size.

    Example:
        >>> zeros(fgrad.random.key(0), (2,))
        Tensor([0., 0.], dtype=float32)
    """
    dtype = _args.dtype(dtype, "zeros", none_ok=False)
    return fnp.zeros(_shape(shape, "zeros"), dtype=dtype, device=_device(key))


def ones(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
    """Ones (``key`` is ignored).

    Raises:
        DTypeError: ``shape`` holds something other than ints, or ``dtype`` is not a
            numeric dtype.
        ShapeError: a negative size.

    Example:
        >>> ones(fgrad.random.key(0), (2,))
        Tensor([1., 1.], dtype=float32)
    """
    dtype = _args.dtype(dtype, "ones", none_ok=False)
    return fnp.ones(_shape(shape, "ones"), dtype=dtype, device=_device(key))


def constant(value: float) -> Initializer:
    """An initialiser filling with ``value``.

    Raises:
        DTypeError: ``value`` is not numeric; (from ``init``) a bad shape or dtype.

    Example:
        >>> constant(0.5)(fgrad.random.key(0), (2,))
        Tensor([0.5, 0.5], dtype=float32)
    """
    as_tensor(value, "constant", "value")

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _args.dtype(dtype, "constant", none_ok=False)
        return fnp.full(_shape(shape, "constant"), value, dtype=dtype, device=_device(key))

    return init


@_factory
def normal(stddev: float = 1e-2) -> Initializer:
    """An initialiser drawing from ``N(0, stddev**2)``.

    Raises:
        DTypeError: ``stddev`` is not a real number.
        ValueError: ``stddev`` is negative.

    Example:
        >>> w = normal(0.02)(fgrad.random.key(0), (1000,))
        >>> round(float(fnp.std(w)), 2)
        0.02
    """
    stddev = _args.real(stddev, "normal", "stddev", minimum=0.0)

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _float(dtype, "normal")
        return random.normal(key, _shape(shape, "normal"), dtype) * stddev

    return init


@_factory
def uniform(scale: float = 1e-2) -> Initializer:
    """An initialiser drawing from ``U[-scale, scale)``.

    Raises:
        DTypeError: ``scale`` is not a real number.
        ValueError: ``scale`` is not positive.

    Example:
        >>> w = uniform(0.1)(fgrad.random.key(0), (1000,))
        >>> bool(fnp.max(fnp.abs(w)) <= 0.1)
        True
    """
    scale = _args.real(scale, "uniform", "scale", above=0.0)

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _float(dtype, "uniform")
        return random.uniform(key, _shape(shape, "uniform"), dtype, -scale, scale)

    return init


@_factory
def truncated_normal(stddev: float = 1e-2, lower: float = -2.0, upper: float = 2.0) -> Initializer:
    """An initialiser drawing ``stddev * z`` with ``z`` standard normal truncated to ``[lower, upper]``.

    Raises:
        DTypeError: an argument is not a real number.
        ValueError: ``stddev`` is negative, or ``lower >= upper``.

    Example:
        >>> w = truncated_normal(1.0)(fgrad.random.key(0), (1000,))
        >>> bool(fnp.max(fnp.abs(w)) <= 2.0)
        True
    """
    stddev = _args.real(stddev, "truncated_normal", "stddev", minimum=0.0)
    lower = _args.real(lower, "truncated_normal", "lower")
    upper = _args.real(upper, "truncated_normal", "upper", above=lower)

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _float(dtype, "truncated_normal")
        shape = _shape(shape, "truncated_normal")
        return random.truncated_normal(key, lower, upper, shape, dtype) * stddev

    return init


def _fans(shape: tuple[int, ...], in_axis: int, out_axis: int, name: str) -> tuple[int, int]:
    if len(shape) < 2:
        raise ShapeError(
            f"{name}: needs a shape of at least 2 dimensions to find fan-in and fan-out, got "
            f"{shape}; use normal(stddev) or zeros for vectors such as biases"
        )
    n = len(shape)
    ia = _args.axis(in_axis, name, n, "in_axis")
    oa = _args.axis(out_axis, name, n, "out_axis")
    receptive = math.prod(d for i, d in enumerate(shape) if i not in (ia, oa))
    return shape[ia] * receptive, shape[oa] * receptive


def variance_scaling(
    scale: float,
    mode: str,
    distribution: str,
    in_axis: int = -2,
    out_axis: int = -1,
) -> Initializer:
    """An initialiser with variance ``scale / fan``, the family of Glorot, He and LeCun.

    Args:
        scale: multiplier of the variance.
        mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"`` (the mean of the two).
        distribution: ``"normal"``, ``"truncated_normal"`` (truncated at two standard
            deviations, rescaled to keep the variance) or ``"uniform"`` (on
            ``[-sqrt(3 var), sqrt(3 var))``).
        in_axis: axis of the input features.
        out_axis: axis of the output features.

    Returns:
        ``init(key, shape, dtype=float32) -> Tensor``.

    Raises:
        ValueError: an unknown ``mode`` or ``distribution``, or a ``scale`` that is not
            positive.
        DTypeError: ``scale`` is not a real number or an axis not an int; (from ``init``)
            a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape with fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> w = variance_scaling(2.0, "fan_in", "normal")(fgrad.random.key(0), (500, 400))
        >>> round(float(fnp.std(w)) * 500 ** 0.5 / 2 ** 0.5, 1)
        1.0
    """
    return _variance_scaling(scale, mode, distribution, in_axis, out_axis, "variance_scaling")


def _variance_scaling(
    scale: Any, mode: Any, distribution: Any, in_axis: Any, out_axis: Any, name: str
) -> Initializer:
    """variance_scaling, its errors naming ``name`` (the factory the user called)."""
    scale = _args.real(scale, name, "scale", above=0.0)
    mode = _args.choice(mode, name, "mode", ("fan_in", "fan_out", "fan_avg"))
    distribution = _args.choice(
        distribution, name, "distribution", ("normal", "truncated_normal", "uniform")
    )
    in_axis = _args.index(in_axis, name, "in_axis")
    out_axis = _args.index(out_axis, name, "out_axis")

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        shape = _shape(shape, name)
        dtype = _float(dtype, name)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, name)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / max(1.0, fan)
        if distribution == "normal":
            return random.normal(key, shape, dtype) * math.sqrt(variance)
        if distribution == "truncated_normal":
            z = random.truncated_normal(key, -2.0, 2.0, shape, dtype)
            return z * (math.sqrt(variance) / _TRUNC_STD)
        limit = math.sqrt(3.0 * variance)
        return random.uniform(key, shape, dtype, -limit, limit)

    return init


@_factory
def glorot_uniform(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """Glorot (Xavier) uniform: ``U[-a, a)`` with ``a = sqrt(6 / (fan_in + fan_out))``.

    Raises:
        DTypeError: an axis is not an int; (from ``init``) a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape of fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> glorot_uniform()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        Glorot and Bengio, "Understanding the difficulty of training deep feedforward neural
        networks", AISTATS 2010, eq. 16.
    """
    return _variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, "glorot_uniform")


@_factory
def glorot_normal(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """Glorot (Xavier) normal: ``N(0, 2 / (fan_in + fan_out))``.

    Follows the paper's variance with an untruncated normal, as PyTorch's
    ``xavier_normal_`` (JAX truncates at two standard deviations; use
    ``variance_scaling(1.0, "fan_avg", "truncated_normal")`` for that).

    Raises:
        DTypeError: an axis is not an int; (from ``init``) a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape of fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> glorot_normal()(fgrad.random.key(0), (3, 2)).dtype
        dtype('float32')

    References:
        Glorot and Bengio, "Understanding the difficulty of training deep feedforward neural
        networks", AISTATS 2010.
    """
    return _variance_scaling(1.0, "fan_avg", "normal", in_axis, out_axis, "glorot_normal")


@_factory
def he_uniform(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """He (Kaiming) uniform for ReLU networks: ``U[-a, a)`` with ``a = sqrt(6 / fan_in)``.

    Raises:
        DTypeError: an axis is not an int; (from ``init``) a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape of fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> he_uniform()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        He, Zhang, Ren and Sun, "Delving Deep into Rectifiers: Surpassing Human-Level
        Performance on ImageNet Classification", ICCV 2015, arXiv:1502.01852, eq. 10.
    """
    return _variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, "he_uniform")


@_factory
def he_normal(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """He (Kaiming) normal for ReLU networks: ``N(0, 2 / fan_in)``.

    The paper's (and PyTorch's ``kaiming_normal_``) untruncated normal; JAX truncates.

    Raises:
        DTypeError: an axis is not an int; (from ``init``) a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape of fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> he_normal()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        He, Zhang, Ren and Sun, "Delving Deep into Rectifiers: Surpassing Human-Level
        Performance on ImageNet Classification", ICCV 2015, arXiv:1502.01852, eq. 10.
    """
    return _variance_scaling(2.0, "fan_in", "normal", in_axis, out_axis, "he_normal")


@_factory
def lecun_normal(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """LeCun normal: ``N(0, 1 / fan_in)`` truncated at two standard deviations (JAX's and flax's default).

    Raises:
        DTypeError: an axis is not an int; (from ``init``) a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape of fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> lecun_normal()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        LeCun, Bottou, Orr and Mueller, "Efficient BackProp", 1998.
    """
    return _variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, "lecun_normal")


@_factory
def lecun_uniform(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """LeCun uniform: ``U[-a, a)`` with ``a = sqrt(3 / fan_in)``.

    Raises:
        DTypeError: an axis is not an int; (from ``init``) a non-floating ``dtype``.
        ShapeError: (from ``init``) a shape of fewer than 2 dimensions, or an axis out of
            its range.

    Example:
        >>> lecun_uniform()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        LeCun, Bottou, Orr and Mueller, "Efficient BackProp", 1998.
    """
    return _variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, "lecun_uniform")


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal
