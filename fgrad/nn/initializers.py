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
from fgrad import random
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import Tensor

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
        if args and isinstance(args[0], Tensor):  # a key: initialise with the defaults
            return make()(*args, **kwargs)
        return make(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = make.__name__
    wrapper.__doc__ = make.__doc__
    wrapper.__module__ = make.__module__
    wrapper.__wrapped__ = make
    return wrapper


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def _device(key: Any) -> Any:
    """Make constant parameters on the device of the key (where sampled ones land too)."""
    return key.device if isinstance(key, Tensor) else None


def _float(dtype: Any, name: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise DTypeError(f"{name}: parameters must be real floating, got dtype {dtype}")
    return dtype


def zeros(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
    """Zeros (``key`` is ignored; kept so every initialiser has one signature).

    Example:
        >>> zeros(fgrad.random.key(0), (2,))
        Tensor([0., 0.], dtype=float32)
    """
    return fnp.zeros(_shape(shape), dtype=np.dtype(dtype), device=_device(key))


def ones(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
    """Ones (``key`` is ignored).

    Example:
        >>> ones(fgrad.random.key(0), (2,))
        Tensor([1., 1.], dtype=float32)
    """
    return fnp.ones(_shape(shape), dtype=np.dtype(dtype), device=_device(key))


def constant(value: float) -> Initializer:
    """An initialiser filling with ``value``.

    Example:
        >>> constant(0.5)(fgrad.random.key(0), (2,))
        Tensor([0.5, 0.5], dtype=float32)
    """

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        return fnp.full(_shape(shape), value, dtype=np.dtype(dtype), device=_device(key))

    return init


@_factory
def normal(stddev: float = 1e-2) -> Initializer:
    """An initialiser drawing from ``N(0, stddev**2)``.

    Example:
        >>> w = normal(0.02)(fgrad.random.key(0), (1000,))
        >>> round(float(fnp.std(w)), 2)
        0.02
    """

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _float(dtype, "normal")
        return random.normal(key, _shape(shape), dtype) * stddev

    return init


@_factory
def uniform(scale: float = 1e-2) -> Initializer:
    """An initialiser drawing from ``U[-scale, scale)``.

    Example:
        >>> w = uniform(0.1)(fgrad.random.key(0), (1000,))
        >>> bool(fnp.max(fnp.abs(w)) <= 0.1)
        True
    """

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _float(dtype, "uniform")
        return random.uniform(key, _shape(shape), dtype, -scale, scale)

    return init


@_factory
def truncated_normal(stddev: float = 1e-2, lower: float = -2.0, upper: float = 2.0) -> Initializer:
    """An initialiser drawing ``stddev * z`` with ``z`` standard normal truncated to ``[lower, upper]``.

    Example:
        >>> w = truncated_normal(1.0)(fgrad.random.key(0), (1000,))
        >>> bool(fnp.max(fnp.abs(w)) <= 2.0)
        True
    """

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        dtype = _float(dtype, "truncated_normal")
        return random.truncated_normal(key, lower, upper, _shape(shape), dtype) * stddev

    return init


def _fans(shape: tuple[int, ...], in_axis: int, out_axis: int, name: str) -> tuple[int, int]:
    if len(shape) < 2:
        raise ShapeError(
            f"{name}: needs a shape of at least 2 dimensions to find fan-in and fan-out, got "
            f"{shape}; use normal(stddev) or zeros for vectors such as biases"
        )
    n = len(shape)
    ia, oa = in_axis % n, out_axis % n
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
        ValueError: an unknown ``mode`` or ``distribution``.
        ShapeError: (from ``init``) a shape with fewer than 2 dimensions.
        DTypeError: (from ``init``) a non-floating ``dtype``.

    Example:
        >>> w = variance_scaling(2.0, "fan_in", "normal")(fgrad.random.key(0), (500, 400))
        >>> round(float(fnp.std(w)) * 500 ** 0.5 / 2 ** 0.5, 1)
        1.0
    """
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling: mode must be fan_in, fan_out or fan_avg, got {mode!r}")
    if distribution not in ("normal", "truncated_normal", "uniform"):
        raise ValueError(
            "variance_scaling: distribution must be normal, truncated_normal or uniform, got "
            f"{distribution!r}"
        )

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> Tensor:
        shape = _shape(shape)
        dtype = _float(dtype, "variance_scaling")
        fan_in, fan_out = _fans(shape, in_axis, out_axis, "variance_scaling")
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

    Example:
        >>> glorot_uniform()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        Glorot and Bengio, "Understanding the difficulty of training deep feedforward neural
        networks", AISTATS 2010, eq. 16.
    """
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis)


@_factory
def glorot_normal(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """Glorot (Xavier) normal: ``N(0, 2 / (fan_in + fan_out))``.

    Follows the paper's variance with an untruncated normal, as PyTorch's
    ``xavier_normal_`` (JAX truncates at two standard deviations; use
    ``variance_scaling(1.0, "fan_avg", "truncated_normal")`` for that).

    Example:
        >>> glorot_normal()(fgrad.random.key(0), (3, 2)).dtype
        dtype('float32')

    References:
        Glorot and Bengio, "Understanding the difficulty of training deep feedforward neural
        networks", AISTATS 2010.
    """
    return variance_scaling(1.0, "fan_avg", "normal", in_axis, out_axis)


@_factory
def he_uniform(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """He (Kaiming) uniform for ReLU networks: ``U[-a, a)`` with ``a = sqrt(6 / fan_in)``.

    Example:
        >>> he_uniform()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        He, Zhang, Ren and Sun, "Delving Deep into Rectifiers: Surpassing Human-Level
        Performance on ImageNet Classification", ICCV 2015, arXiv:1502.01852, eq. 10.
    """
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis)


@_factory
def he_normal(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """He (Kaiming) normal for ReLU networks: ``N(0, 2 / fan_in)``.

    The paper's (and PyTorch's ``kaiming_normal_``) untruncated normal; JAX truncates.

    Example:
        >>> he_normal()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        He, Zhang, Ren and Sun, "Delving Deep into Rectifiers: Surpassing Human-Level
        Performance on ImageNet Classification", ICCV 2015, arXiv:1502.01852, eq. 10.
    """
    return variance_scaling(2.0, "fan_in", "normal", in_axis, out_axis)


@_factory
def lecun_normal(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """LeCun normal: ``N(0, 1 / fan_in)`` truncated at two standard deviations (JAX's and flax's default).

    Example:
        >>> lecun_normal()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        LeCun, Bottou, Orr and Mueller, "Efficient BackProp", 1998.
    """
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis)


@_factory
def lecun_uniform(in_axis: int = -2, out_axis: int = -1) -> Initializer:
    """LeCun uniform: ``U[-a, a)`` with ``a = sqrt(3 / fan_in)``.

    Example:
        >>> lecun_uniform()(fgrad.random.key(0), (3, 2)).shape
        (3, 2)

    References:
        LeCun, Bottou, Orr and Mueller, "Efficient BackProp", 1998.
    """
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal
