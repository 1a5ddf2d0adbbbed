"""Group normalisation, and batch normalisation with its running statistics passed in and out.

:func:`group_norm` normalises each example's channel groups (no state). Batch
normalisation has state, the running mean and variance; a stateless layer cannot keep it,
so :func:`batch_norm` and :class:`BatchNorm` take it as an argument and return the
updated one, as flax's ``batch_stats`` collection does::

    y, state = bn.apply(params, state, x, train=True)    # batch statistics; state updated
    y, _ = bn.apply(params, state, x)                      # evaluation: running statistics

In a training step the state travels beside the parameters, typically as the auxiliary
output of ``value_and_grad(loss, has_aux=True)``.

Example:
    >>> bn = BatchNorm(2)
    >>> params, state = bn.init(None), bn.init_state()
    >>> x = fnp.array([[1.0, 10.0], [3.0, 30.0]])
    >>> y, state = bn.apply(params, state, x, train=True)
    >>> fnp.round(y, 3)
    Tensor([[-1., -1.],
            [ 1.,  1.]], dtype=float64)
    >>> state.mean  # 0.9 * 0 + 0.1 * batch mean
    Tensor([0.2, 2. ], dtype=float32)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args, dtypes
from fgrad.errors import DTypeError, ShapeError
from fgrad.nn.initializers import ones, zeros
from fgrad.nn.layers import (
    _checked_params,
    _field_dtype,
    _required,
    _typed_params,
    _widened,
    layer_norm,
)
from fgrad.ops.elementwise import stop_gradient
from fgrad.tensor import Tensor, as_tensor

__all__ = [
    "BatchNorm",
    "BatchNormParams",
    "BatchNormState",
    "GroupNorm",
    "GroupNormParams",
    "batch_norm",
    "group_norm",
]


@_typed_params
class GroupNormParams(NamedTuple):
    """Parameters of :class:`GroupNorm` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(num_channels,)`` Tensor, or None with ``use_bias=False``.
        scale: ``(num_channels,)`` Tensor, or None with ``use_scale=False``.

    Example:
        >>> GroupNorm(2, 4).init(None).scale
        Tensor([1., 1., 1., 1.], dtype=float32)
    """

    bias: Any
    scale: Any


@_typed_params
class BatchNormParams(NamedTuple):
    """Parameters of :class:`BatchNorm` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(num_features,)`` Tensor, or None with ``use_bias=False``.
        scale: ``(num_features,)`` Tensor, or None with ``use_scale=False``.

    Example:
        >>> BatchNorm(3).init(None).bias
        Tensor([0., 0., 0.], dtype=float32)
    """

    bias: Any
    scale: Any


class BatchNormState(NamedTuple):
    """The running statistics of :func:`batch_norm`: not parameters, never differentiated.

    Attributes:
        mean: ``(num_features,)`` running mean (starts at zeros).
        var: ``(num_features,)`` running unbiased variance (starts at ones), PyTorch's
            ``running_var``.

    Example:
        >>> BatchNorm(2).init_state()
        BatchNormState(mean=Tensor([0., 0.], dtype=float32), var=Tensor([1., 1.], dtype=float32))
    """

    mean: Any
    var: Any


def _channel_shape(ndim: int, axis: int, channels: int) -> tuple[int, ...]:
    """``(1, ..., channels, ..., 1)``: a per-channel vector broadcast along ``axis``."""
    shape = [1] * ndim
    shape[axis] = channels
    return tuple(shape)


def _affine(y: Any, scale: Any, bias: Any, axis: int, channels: int, name: str) -> Any:
    """``y * scale + bias`` with ``(channels,)`` parameters along ``axis``."""
    shape = _channel_shape(y.ndim, axis, channels)
    for arg, p in (("scale", scale), ("bias", bias)):
        if p is None:
            continue
        p = as_tensor(p, name, arg)
        if tuple(p.shape) != (channels,):
            raise ShapeError(
                f"{name}: {arg} must have shape ({channels},), one per channel, got "
                f"{tuple(p.shape)}"
            )
        p = fnp.reshape(p, shape)
        y = y * p if arg == "scale" else y + p
    return y


def _floating_input(x: Any, name: str, min_ndim: int, what: str) -> Tensor:
    x = as_tensor(x, name, "x")
    if not dtypes.is_floating(np.dtype(x.dtype)):
        raise DTypeError(
            f"{name}: x must be real floating, got {_args.describe(x)}; cast it "
            "(x.astype('float32'))"
        )
    if x.ndim < min_ndim:
        raise ShapeError(f"{name}: x must be {what}, got shape {tuple(x.shape)}")
    return x


def group_norm(
    x: Any, num_groups: int, scale: Any = None, bias: Any = None, *, eps: float = 1e-5
) -> Tensor:
    """Normalise each example's channel groups to zero mean and unit variance, then scale and shift.

    The channels (axis 1) are split into ``num_groups`` contiguous groups; each group of
    each example is standardised over its channels and spatial positions with the biased
    variance, ``y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c]``, as PyTorch's
    ``torch.nn.functional.group_norm``. ``num_groups = 1`` normalises each example as a
    whole; ``num_groups = channels`` is instance normalisation.

    Args:
        x: ``(batch, channels, *spatial)`` real floating Tensor.
        num_groups: positive int dividing ``channels``.
        scale: optional ``(channels,)`` Tensor.
        bias: optional ``(channels,)`` Tensor.
        eps: added to the variance, ``>= 0``.

    Returns:
        Tensor of ``x.shape`` and the promoted dtype of ``x`` and the parameters.

    Raises:
        ShapeError: ``x`` has fewer than 2 dimensions, or ``scale``/``bias`` is not
            ``(channels,)``.
        DTypeError: ``x`` is not real floating; ``num_groups`` not an int; ``eps`` not a
            real number.
        ValueError: ``num_groups`` below 1 or not dividing ``channels``; negative ``eps``.

    Example:
        >>> x = fnp.reshape(fnp.arange(8.0), (1, 4, 2))
        >>> fnp.round(group_norm(x, 2, eps=0.0), 4)[0]
        Tensor([[-1.3416, -0.4472],
                [ 0.4472,  1.3416],
                [-1.3416, -0.4472],
                [ 0.4472,  1.3416]], dtype=float64)

    References:
        Wu and He, "Group Normalization", ECCV 2018, arXiv:1803.08494, eq. 1-3.
    """
    name = "group_norm"
    x = _floating_input(x, name, 2, "(batch, channels, *spatial)")
    groups = _args.size(num_groups, name, "num_groups", minimum=1)
    eps = _args.real(eps, name, "eps", minimum=0.0)
    n, c = x.shape[0], x.shape[1]
    if c % groups:
        raise ValueError(f"{name}: num_groups={groups} must divide the {c} channels of x")
    # Each (example, group) is one row: layer_norm's fused standardisation over it.
    rows = fnp.reshape(x, (n, groups, (c // groups) * math.prod(x.shape[2:])))
    y = fnp.reshape(layer_norm(rows, eps=eps), tuple(x.shape))
    return _affine(y, scale, bias, 1, c, name)


@dataclass(frozen=True)
class GroupNorm:
    """Group normalisation over channel groups with a learned per-channel scale and bias
    (see :func:`group_norm`; PyTorch's ``nn.GroupNorm``).

    Attributes:
        num_groups: number of channel groups; divides ``num_channels``.
        num_channels: channels of the input (axis 1).
        eps: added to the variance (default 1e-5, as PyTorch).
        use_scale: learn a scale (initialised to ones).
        use_bias: learn a bias (initialised to zeros).
        param_dtype: dtype of the parameters (default float32).

    Params:
        :class:`GroupNormParams`: ``scale`` and ``bias``, each ``(num_channels,)``.

    Input ``(batch, num_channels, *spatial)``; output of the same shape.

    Raises:
        DTypeError: a size is not an int, ``eps`` not a real number, a flag not a bool, or
            ``param_dtype`` not a floating dtype.
        ValueError: a size below 1, ``num_groups`` not dividing ``num_channels``, or a
            negative ``eps``.

    Example:
        >>> gn = GroupNorm(2, 4)
        >>> gn.apply(gn.init(None), fnp.ones((3, 4, 5, 5))).shape
        (3, 4, 5, 5)
    """

    num_groups: int
    num_channels: int
    eps: float = 1e-5
    use_scale: bool = True
    use_bias: bool = True
    param_dtype: Any = np.float32

    def __post_init__(self):
        _args.size(self.num_groups, "GroupNorm", "num_groups", minimum=1)
        _args.size(self.num_channels, "GroupNorm", "num_channels", minimum=1)
        _norm_layer_fields(self, "GroupNorm")
        if self.num_channels % self.num_groups:
            raise ValueError(
                f"GroupNorm: num_groups={self.num_groups} must divide "
                f"num_channels={self.num_channels}"
            )

    def init(self, key: Any) -> GroupNormParams:
        bias, scale = _scale_bias(self, self.num_channels, key)
        return GroupNormParams(bias=bias, scale=scale)

    def apply(
        self, params: GroupNormParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        params = _checked_params(params, GroupNormParams, "GroupNorm")
        scale = _required(params, "scale", "GroupNorm", self.use_scale, "use_scale")
        bias = _required(params, "bias", "GroupNorm", self.use_bias, "use_bias")
        x = _floating_input(x, "GroupNorm.apply", 2, "(batch, channels, *spatial)")
        if x.shape[1] != self.num_channels:
            raise ShapeError(
                f"GroupNorm.apply: x {tuple(x.shape)} has {x.shape[1]} channels on axis 1, "
                f"the layer {self.num_channels}"
            )
        return group_norm(x, self.num_groups, scale, bias, eps=self.eps)


def _norm_layer_fields(layer: Any, name: str) -> None:
    _args.real(layer.eps, name, "eps", minimum=0.0)
    _args.flag(layer.use_scale, name, "use_scale")
    _args.flag(layer.use_bias, name, "use_bias")
    _field_dtype(layer.param_dtype, name)


def _scale_bias(layer: Any, channels: int, key: Any) -> tuple[Any, Any]:
    shape, dtype = (channels,), layer.param_dtype
    return (
        zeros(key, shape, dtype) if layer.use_bias else None,
        ones(key, shape, dtype) if layer.use_scale else None,
    )


def batch_norm(
    x: Any,
    state: BatchNormState,
    scale: Any = None,
    bias: Any = None,
    *,
    train: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
    axis: int = 1,
) -> tuple[Tensor, BatchNormState]:
    """Batch normalisation with explicit running statistics: returns ``(y, new_state)``.

    In training (``train=True``) each feature along ``axis`` is standardised with the
    batch's mean and biased variance over every other axis, ``y = (x - mean) / sqrt(var +
    eps) * scale + bias``, and the running statistics move towards the batch's:
    ``mean' = (1 - momentum) * mean + momentum * batch_mean`` and likewise ``var`` with the
    *unbiased* batch variance (``n / (n - 1)`` times the biased one), as PyTorch's
    ``nn.BatchNorm*d`` (``momentum=0.1``; flax's ``momentum=0.9`` is ``1 -`` this). The
    new statistics are constants for differentiation (``stop_gradient``) and keep the
    state's dtype. In evaluation (``train=False``) ``x`` is standardised with the running
    statistics and the state comes back unchanged.

    Args:
        x: ``(batch, features, ...)`` real floating Tensor (features on ``axis``).
        state: :class:`BatchNormState` of ``(features,)`` running mean and variance.
        scale: optional ``(features,)`` Tensor.
        bias: optional ``(features,)`` Tensor.
        train: use and update the batch statistics.
        momentum: weight of the batch statistics in the update, in ``[0, 1]``.
        eps: added to the variance, ``>= 0``.
        axis: the feature axis (1 for PyTorch's NCHW and ``(batch, features)`` layouts,
            -1 for channels-last).

    Returns:
        ``(y, state)``: ``y`` of ``x.shape`` and the promoted dtype, and the new
        :class:`BatchNormState`.

    Raises:
        ShapeError: ``x`` has fewer than 2 dimensions, or a statistic or parameter is not
            ``(features,)``.
        DTypeError: ``x`` is not real floating, ``train`` not a bool, ``momentum``/``eps``
            not real numbers, ``axis`` not an int.
        ValueError: ``momentum`` outside ``[0, 1]``, a negative ``eps``, or training on a
            batch with one value per feature (its unbiased variance is undefined; PyTorch
            raises too).
        TypeError: ``state`` is not a :class:`BatchNormState`.

    Example:
        >>> state = BatchNormState(mean=fnp.zeros(1), var=fnp.ones(1))
        >>> y, state = batch_norm(fnp.array([[1.0], [3.0]]), state, train=True, momentum=0.5)
        >>> y[:, 0], state.mean, state.var  # batch mean 2, unbiased variance 2
        (Tensor([-0.999995,  0.999995], dtype=float64), Tensor([1.], dtype=float64),
         Tensor([1.5], dtype=float64))

    References:
        Ioffe and Szegedy, "Batch Normalization: Accelerating Deep Network Training by
        Reducing Internal Covariate Shift", ICML 2015, arXiv:1502.03167, algorithm 1 and
        section 3.1 (the unbiased variance for inference).
    """
    name = "batch_norm"
    x = _floating_input(x, name, 2, "(batch, features, ...)")
    if not isinstance(state, BatchNormState):
        raise TypeError(
            f"{name}: state must be a BatchNormState(mean=..., var=...), got "
            f"{_args.describe(state)}; build it with BatchNorm(features).init_state()"
        )
    train = _args.flag(train, name, "train")
    momentum = _args.real(momentum, name, "momentum", minimum=0.0)
    if momentum > 1.0:
        raise ValueError(f"{name}: momentum must be in [0, 1], got {momentum}")
    eps = _args.real(eps, name, "eps", minimum=0.0)
    axis = _args.axis(axis, name, x.ndim)
    features = x.shape[axis]
    mean, var = (as_tensor(s, name, f"state.{f}") for s, f in zip(state, state._fields))
    for f, s in (("mean", mean), ("var", var)):
        if tuple(s.shape) != (features,):
            raise ShapeError(
                f"{name}: state.{f} must have shape ({features},), one per feature on axis "
                f"{axis} of x {tuple(x.shape)}, got {tuple(s.shape)}"
            )
    shape = _channel_shape(x.ndim, axis, features)
    xw, rounded = _widened(x, scale, bias)
    if train:
        axes = tuple(a for a in range(x.ndim) if a != axis)
        n = math.prod(x.shape) // max(features, 1)
        if n < 2:
            raise ValueError(
                f"{name}: training needs more than one value per feature, got x of shape "
                f"{tuple(x.shape)}; use train=False or a larger batch"
            )
        batch_mean = fnp.mean(xw, axis=axes, keepdims=True)
        centred = xw - batch_mean
        batch_var = fnp.mean(centred * centred, axis=axes, keepdims=True)
        y = centred / fnp.sqrt(batch_var + eps)
        new_mean = _moved(mean, stop_gradient(fnp.reshape(batch_mean, (features,))), momentum)
        unbiased = stop_gradient(fnp.reshape(batch_var, (features,))) * (n / (n - 1))
        state = BatchNormState(mean=new_mean, var=_moved(var, unbiased, momentum))
    else:
        y = (xw - fnp.reshape(mean, shape)) / fnp.sqrt(fnp.reshape(var, shape) + eps)
        state = BatchNormState(mean=mean, var=var)
    if rounded is not None:
        y = fnp.astype(y, rounded)
    return _affine(y, scale, bias, axis, features, name), state


def _moved(running: Tensor, batch: Tensor, momentum: float) -> Tensor:
    """``(1 - momentum) * running + momentum * batch`` in the running statistic's dtype."""
    return fnp.astype((1.0 - momentum) * running + momentum * batch, running.dtype)


@dataclass(frozen=True)
class BatchNorm:
    """Batch normalisation over a feature axis with running statistics (see :func:`batch_norm`).

    PyTorch's ``nn.BatchNorm1d``/``BatchNorm2d`` (``momentum=0.1``, ``eps=1e-5``, features
    on axis 1), stateless: the running statistics are a :class:`BatchNormState` that
    ``apply`` takes and returns, ``init_state()`` the initial one (zeros and ones). Its
    ``apply`` has the extra state argument, so it does not go inside :class:`Sequential`.

    Attributes:
        num_features: size of the feature axis.
        momentum: weight of the batch statistics in the running-average update.
        eps: added to the variance.
        axis: the feature axis (1: NCHW images and ``(batch, features)``; -1:
            channels-last).
        use_scale: learn a scale (initialised to ones).
        use_bias: learn a bias (initialised to zeros).
        param_dtype: dtype of the parameters and of the state (default float32).

    Params:
        :class:`BatchNormParams`: ``scale`` and ``bias``, each ``(num_features,)``.

    ``apply(params, state, x, *, train=False, key=None) -> (y, state)``: training uses and
    updates the batch statistics; evaluation uses the running ones.

    Raises:
        DTypeError: a size or ``axis`` is not an int, ``momentum``/``eps`` not a real
            number, a flag not a bool, or ``param_dtype`` not a floating dtype.
        ValueError: ``num_features`` below 1, ``momentum`` outside ``[0, 1]``, or a
            negative ``eps``.

    Example:
        >>> bn = BatchNorm(3)
        >>> params, state = bn.init(fgrad.random.key(0)), bn.init_state()
        >>> x = fgrad.random.normal(fgrad.random.key(1), (8, 3, 4, 4), dtype="float32")
        >>> y, state = bn.apply(params, state, x, train=True)
        >>> fnp.round(fnp.mean(y, axis=(0, 2, 3)), 4) + 0.0
        Tensor([0., 0., 0.], dtype=float32)
        >>> y_eval, _ = bn.apply(params, state, x)  # running statistics
    """

    num_features: int
    momentum: float = 0.1
    eps: float = 1e-5
    axis: int = 1
    use_scale: bool = True
    use_bias: bool = True
    param_dtype: Any = np.float32

    def __post_init__(self):
        _args.size(self.num_features, "BatchNorm", "num_features", minimum=1)
        momentum = _args.real(self.momentum, "BatchNorm", "momentum", minimum=0.0)
        if momentum > 1.0:
            raise ValueError(f"BatchNorm: momentum must be in [0, 1], got {momentum}")
        _args.index(self.axis, "BatchNorm", "axis")
        _norm_layer_fields(self, "BatchNorm")

    def init(self, key: Any) -> BatchNormParams:
        bias, scale = _scale_bias(self, self.num_features, key)
        return BatchNormParams(bias=bias, scale=scale)

    def init_state(self) -> BatchNormState:
        """The initial running statistics: mean zeros, variance ones (``(num_features,)``)."""
        shape = (self.num_features,)
        return BatchNormState(
            mean=zeros(None, shape, self.param_dtype), var=ones(None, shape, self.param_dtype)
        )

    def apply(
        self,
        params: BatchNormParams,
        state: BatchNormState,
        x: Any,
        *,
        train: bool = False,
        key: Any = None,
    ) -> tuple[Tensor, BatchNormState]:
        params = _checked_params(params, BatchNormParams, "BatchNorm")
        scale = _required(params, "scale", "BatchNorm", self.use_scale, "use_scale")
        bias = _required(params, "bias", "BatchNorm", self.use_bias, "use_bias")
        return batch_norm(
            x,
            state,
            scale,
            bias,
            train=train,
            momentum=self.momentum,
            eps=self.eps,
            axis=self.axis,
        )
