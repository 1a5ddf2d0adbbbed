"""Stateless layers: frozen dataclasses of hyper-parameters with ``init`` and ``apply``.

A layer holds no arrays. ``params = layer.init(key)`` builds its parameters, a pytree, and
``y = layer.apply(params, x, key=None, train=False)`` is a pure function of them, so
``fgrad.grad`` differentiates it and optimisers update the pytree. ``key`` feeds stochastic
layers (:class:`Dropout`) in training; ``train=False`` makes them the identity. Parameters
are float32 unless the ``param_dtype`` field says otherwise (as in PyTorch and flax); the
computation follows the inputs' and parameters' promoted dtype.

Parameters are typed: each layer's are a NamedTuple (:class:`LinearParams`,
:class:`Conv2dParams`, ...), read by attribute (``params.weight``), so a misspelt field
fails where it is written, and containers (:class:`Sequential`, :class:`MLP`) give a tuple
of their layers' params (``()`` for a layer without parameters). A field a layer does not
use (``bias`` with ``use_bias=False``) is ``None``, which holds no leaves. The fields come
in alphabetical order, the order of the dict keys they replace, so the leaves flatten in
the order they always had, and optimiser states or checkpoints saved as lists of leaves
keep lining up; build params by keyword, ``LinearParams(bias=b, weight=w)``. Indexing a
field by name (``params["weight"]``) raises a TypeError that names the attribute: a
NamedTuple is a tuple, as optax's states are, and two spellings of one field would keep
the string lookups that typing removes. A checkpoint saved from the old dict params loads
into the typed form with ``fgrad.io.load(path, like=layer.init(key))``, which matches
tensors by their path (``/0/weight`` in both).

The functional forms (:func:`conv2d`, :func:`max_pool2d`, :func:`avg_pool2d`,
:func:`dropout`, :func:`layer_norm`, :func:`rms_norm`) accept PyTorch-style arguments and
can be used in hand-written models directly.

Example:
    >>> model = Sequential([Linear(4, 8), relu, Linear(8, 3)])
    >>> params = model.init(fgrad.random.key(0))
    >>> [type(p).__name__ for p in params]
    ['LinearParams', 'tuple', 'LinearParams']
    >>> params[0].weight.shape, params[0].bias.shape
    ((4, 8), (8,))
    >>> model.apply(params, fnp.ones((2, 4), dtype="float32")).shape
    (2, 3)
    >>> params[0].wieght
    Traceback (most recent call last):
    ...
    AttributeError: LinearParams has no field 'wieght' (its fields: bias, weight)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args, dtypes, random
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.nn._activations import relu
from fgrad.nn.initializers import Initializer, glorot_uniform, normal, ones, zeros
from fgrad.numpy._linalg_top import _arr
from fgrad.ops import conv as _conv
from fgrad.ops import nn as _nn
from fgrad.tensor import Tensor, as_tensor

__all__ = [
    "MLP",
    "AvgPool2d",
    "Conv1d",
    "Conv1dParams",
    "Conv2d",
    "Conv2dParams",
    "ConvTranspose2d",
    "ConvTranspose2dParams",
    "Dropout",
    "Embedding",
    "EmbeddingParams",
    "Flatten",
    "LayerNorm",
    "LayerNormParams",
    "Linear",
    "LinearParams",
    "MaxPool2d",
    "RMSNorm",
    "RMSNormParams",
    "Sequential",
    "avg_pool2d",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "dropout",
    "layer_norm",
    "max_pool2d",
    "rms_norm",
]

# Shared default initialisers: one object each, so equal hyper-parameters give equal layers.
_DENSE_INIT = glorot_uniform()
_CONV_INIT = glorot_uniform(in_axis=1, out_axis=0)  # OIHW filters
_EMBED_INIT = normal(0.02)


def _split(key: Any, n: int) -> list:
    """``n`` keys from ``key``, or ``n`` Nones when there is no key."""
    if key is None:
        return [None] * n
    return list(random.split(key, n))


# ------------------------------------------------------------------------ typed params


def _fields_text(params: Any) -> str:
    return ", ".join(params._fields)


def _field_item(params: Any, index: Any) -> Any:
    """``params[i]`` by position, as for any tuple; a field name in brackets is refused."""
    if isinstance(index, str):
        raise TypeError(_by_name(params, index, f"params[{index!r}]"))
    return tuple.__getitem__(params, index)


def _field_contains(params: Any, value: Any) -> bool:
    """``x in params`` over the values, as for any tuple; a field name is refused."""
    if isinstance(value, str):
        cls = type(params).__name__
        if value in params._fields:
            raise TypeError(
                f"{cls} is a NamedTuple, not a dict: test the field with "
                f"params.{value} is not None, not {value!r} in params"
            )
        raise TypeError(_by_name(params, value, f"{value!r} in params"))
    return tuple.__contains__(params, value)


def _by_name(params: Any, name: str, written: str) -> str:
    cls = type(params).__name__
    if name in params._fields:
        return (
            f"{cls} is a NamedTuple, not a dict: read the field as params.{name}, not "
            f"{written} (its fields: {_fields_text(params)})"
        )
    return f"{cls} has no field {name!r} (its fields: {_fields_text(params)})"


def _missing_field(params: Any, name: str) -> Any:
    """Only called when ``name`` is not an attribute: a misspelt field fails here."""
    raise AttributeError(
        f"{type(params).__name__} has no field {name!r} (its fields: {_fields_text(params)})",
        name=name,
        obj=params,
    )


def _typed_params(cls: type) -> type:
    """A layer's params NamedTuple, whose errors name its fields (for every such class)."""
    cls.__getitem__ = _field_item
    cls.__contains__ = _field_contains
    cls.__getattr__ = _missing_field
    return cls


def _checked_params(params: Any, cls: type, layer: str) -> Any:
    """``params`` if it is a ``cls``; a TypeError that says how to get one otherwise."""
    if isinstance(params, cls):
        return params
    fields = ", ".join(f"{f}=..." for f in cls._fields)
    if isinstance(params, dict):
        got = f"a dict with keys {sorted(map(str, params))}"
        hint = (
            f"; layer params are NamedTuples: rebuild it as {cls.__name__}({fields}), and "
            f"load a checkpoint saved with dict params with fgrad.io.load(path, "
            f"like={layer}.init(key))"
        )
    else:
        got, hint = _args.describe(params), ""
    raise TypeError(
        f"{layer}.apply: params must be {cls.__name__} (from {layer}.init(key)), got {got}{hint}"
    )


def _required(params: Any, field: str, layer: str, use: bool = True, flag: str = "") -> Any:
    """``params.<field>``: a Tensor where the layer uses it (``use``), None where it does not."""
    value = getattr(params, field)
    if use and value is None:
        raise ValueError(
            f"{layer}.apply: params.{field} is None, but the layer "
            f"{'has ' + flag + '=True' if flag else 'needs it'}; build params with "
            f"{layer}.init(key)"
        )
    if not use and value is not None:
        raise ValueError(
            f"{layer}.apply: params.{field} is set, but the layer has {flag}=False and would "
            f"ignore it; build the layer with {flag}=True, or set the field to None"
        )
    return value


def _sequence_params(params: Any, n: int, layer: str, what: str) -> None:
    if isinstance(params, (tuple, list)):
        if len(params) == n:
            return
        got = f"{len(params)} entries"
    else:
        got = _args.describe(params)
    raise ValueError(
        f"{layer}.apply: params must be a tuple with one entry per layer ({n} {what}), got "
        f"{got}; build them with {layer}.init(key)"
    )


@_typed_params
class LinearParams(NamedTuple):
    """Parameters of :class:`Linear` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(out_features,)`` Tensor, or None without a bias.
        weight: ``(in_features, out_features)`` Tensor.

    Example:
        >>> p = LinearParams(bias=None, weight=fnp.ones((2, 3)))
        >>> Linear(2, 3, use_bias=False).apply(p, fnp.ones((1, 2)))
        Tensor([[2., 2., 2.]], dtype=float64)
        >>> p["weight"]
        Traceback (most recent call last):
        ...
        TypeError: LinearParams is a NamedTuple, not a dict: read the field as params.weight,
        not params['weight'] (its fields: bias, weight)
    """

    bias: Any
    weight: Any


@_typed_params
class Conv2dParams(NamedTuple):
    """Parameters of :class:`Conv2d` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(out_channels,)`` Tensor, or None without a bias.
        weight: ``(out_channels, in_channels // groups, kh, kw)`` Tensor (OIHW).

    Example:
        >>> Conv2d(1, 2, 3).init(fgrad.random.key(0)).weight.shape
        (2, 1, 3, 3)
    """

    bias: Any
    weight: Any


@_typed_params
class Conv1dParams(NamedTuple):
    """Parameters of :class:`Conv1d` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(out_channels,)`` Tensor, or None without a bias.
        weight: ``(out_channels, in_channels // groups, k)`` Tensor.

    Example:
        >>> Conv1d(2, 4, 3).init(fgrad.random.key(0)).weight.shape
        (4, 2, 3)
    """

    bias: Any
    weight: Any


@_typed_params
class ConvTranspose2dParams(NamedTuple):
    """Parameters of :class:`ConvTranspose2d` (fields in alphabetical order).

    Attributes:
        bias: ``(out_channels,)`` Tensor, or None without a bias.
        weight: ``(in_channels, out_channels // groups, kh, kw)`` Tensor (PyTorch's layout).

    Example:
        >>> ConvTranspose2d(2, 4, 3).init(fgrad.random.key(0)).weight.shape
        (2, 4, 3, 3)
    """

    bias: Any
    weight: Any


@_typed_params
class EmbeddingParams(NamedTuple):
    """Parameters of :class:`Embedding`.

    Attributes:
        embedding: ``(vocab_size, d_model)`` Tensor, one row per id.

    Example:
        >>> Embedding(10, 4).init(fgrad.random.key(0)).embedding.shape
        (10, 4)
    """

    embedding: Any


@_typed_params
class LayerNormParams(NamedTuple):
    """Parameters of :class:`LayerNorm` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        bias: ``(d_model,)`` Tensor, or None with ``use_bias=False``.
        scale: ``(d_model,)`` Tensor, or None with ``use_scale=False``.

    Example:
        >>> p = LayerNorm(3).init(None)
        >>> p.scale, p.bias
        (Tensor([1., 1., 1.], dtype=float32), Tensor([0., 0., 0.], dtype=float32))
    """

    bias: Any
    scale: Any


@_typed_params
class RMSNormParams(NamedTuple):
    """Parameters of :class:`RMSNorm`.

    Attributes:
        scale: ``(d_model,)`` Tensor, or None with ``use_scale=False``.

    Example:
        >>> RMSNorm(2).init(None).scale
        Tensor([1., 1.], dtype=float32)
    """

    scale: Any


def _pair(value: Any, name: str, what: str, minimum: int = 1) -> tuple[int, int]:
    """An int or a pair of ints, each ``>= minimum`` (1: windows, strides, dilations)."""
    if _args._int_or_none(value) is None and (
        isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list))
    ):
        raise DTypeError(
            f"{name}: {what} must be an int or a pair of ints, got {_args.describe(value)}"
        )
    pair = _args.shape(value, name, what)
    if len(pair) == 1 and not isinstance(value, (tuple, list)):
        pair = pair * 2
    if len(pair) != 2:
        raise ShapeError(f"{name}: {what} must be an int or a pair of ints, got {value}")
    if min(pair) < minimum:
        raise ValueError(f"{name}: {what} must be >= {minimum}, got {value}")
    return pair


def _check_padding(padding: Any, name: str) -> None:
    """Refuse a padding that is none of an int, pairs, "SAME" or "VALID" (before any input)."""
    _padding(padding, name, (1, 1), (1, 1), (1, 1), (1, 1))


def _field_dtype(value: Any, layer: str, field: str = "param_dtype") -> None:
    """A layer's parameter dtype: floating or complex (parameters are differentiated)."""
    dt = _args.dtype(value, layer, field, none_ok=False)
    if not dtypes.is_inexact(dt):
        raise DTypeError(
            f"{layer}: {field} must be a floating dtype (parameters are differentiated), "
            f"got {dt}"
        )


def _padding(
    padding: Any, name: str, size: Sequence[int], window: Sequence[int], stride, dilation
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Canonical ``((top, bottom), (left, right))`` from an int, pairs, ``"SAME"`` or ``"VALID"``."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0), (0, 0))
        if mode != "SAME":
            raise ValueError(
                f"{name}: padding must be 'SAME', 'VALID', an int or pairs, got {padding!r}"
            )
        # TensorFlow's and JAX's SAME: out = ceil(in / stride); the odd pixel goes at the end.
        pads = []
        for n, k, s, d in zip(size, window, stride, dilation):
            total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    bad = DTypeError(
        f"{name}: padding must be 'SAME', 'VALID', an int, (ph, pw) or ((top, bottom), "
        f"(left, right)) of ints >= 0, got {_args.describe(padding)}"
    )
    p = _args._int_or_none(padding)
    if p is not None:
        pads = ((p, p), (p, p))
    elif not isinstance(padding, (tuple, list)) or len(padding) != 2:
        raise bad
    elif all(_args._int_or_none(q) is not None for q in padding):
        pads = tuple((int(q), int(q)) for q in padding)
    elif all(isinstance(q, (tuple, list)) and len(q) == 2 for q in padding) and all(
        _args._int_or_none(v) is not None for q in padding for v in q
    ):
        pads = tuple((int(q[0]), int(q[1])) for q in padding)
    else:
        raise bad
    if min(min(q) for q in pads) < 0:
        raise ValueError(f"{name}: padding must be >= 0, got {padding}")
    return pads


def _spatial(x: Any, name: str) -> tuple[int, int]:
    shape = tuple(x.shape)
    if len(shape) != 4:
        raise ShapeError(f"{name}: needs a 4-D (batch, channels, height, width) input, got {shape}")
    return shape[2], shape[3]


# ------------------------------------------------------------------------ functional forms


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of NCHW images with OIHW filters, plus an optional bias.

    The arguments follow PyTorch's ``torch.nn.functional.conv2d``; ``padding="SAME"`` is
    TensorFlow's and JAX's (output size ``ceil(size / stride)``; an odd total puts the
    extra row or column at the end), ``"VALID"`` is no padding.

    Args:
        x: ``(batch, in_channels, height, width)`` floating Tensor.
        weight: ``(out_channels, in_channels // groups, kh, kw)`` floating Tensor.
        bias: optional ``(out_channels,)`` Tensor.
        stride: int or ``(sh, sw)``.
        padding: int, ``(ph, pw)``, ``((top, bottom), (left, right))``, ``"SAME"`` or
            ``"VALID"``; zero padding.
        dilation: int or ``(dh, dw)``.
        groups: number of channel groups (``in_channels`` for a depthwise convolution).

    Returns:
        ``(batch, out_channels, out_height, out_width)`` Tensor of the promoted dtype.

    Raises:
        ShapeError: inputs are not 4-D, channels do not match ``groups``, or the filter does
            not fit the padded image.
        DTypeError: an input is not numeric, or ``stride``, ``padding``, ``dilation`` or
            ``groups`` holds something other than ints.
        ValueError: an unknown padding string, a stride, dilation or groups below 1, or a
            negative padding.

    Example:
        >>> x = fnp.reshape(fnp.arange(16.0), (1, 1, 4, 4))
        >>> conv2d(x, fnp.ones((1, 1, 3, 3)), padding="SAME")[0, 0]
        Tensor([[10., 18., 24., 18.],
                [27., 45., 54., 39.],
                [51., 81., 90., 63.],
                [42., 66., 72., 50.]], dtype=float64)

    References:
        Dumoulin and Visin, "A guide to convolution arithmetic for deep learning", 2016,
        arXiv:1603.07285.
    """
    x = as_tensor(x, "conv2d", "x")
    weight = as_tensor(weight, "conv2d", "weight")
    size = _spatial(x, "conv2d")
    w_shape = tuple(weight.shape)
    if len(w_shape) != 4:
        raise ShapeError(f"conv2d: weight must be (out, in // groups, kh, kw), got {w_shape}")
    stride = _pair(stride, "conv2d", "stride")
    dilation = _pair(dilation, "conv2d", "dilation")
    groups = _args.size(groups, "conv2d", "groups", minimum=1)
    pad = _padding(padding, "conv2d", size, w_shape[2:], stride, dilation)
    y = _conv.conv2d(x, weight, stride=stride, padding=pad, dilation=dilation, groups=groups)
    if bias is not None:
        y = y + fnp.reshape(_bias_of("conv2d", bias, w_shape[0]), (1, -1, 1, 1))
    return y


def _conv1d_padding(
    padding: Any, name: str, size: int, k: int, stride: int, dilation: int
) -> tuple[int, int]:
    """conv1d's ``(left, right)`` padding from an int, a pair, ``"SAME"`` or ``"VALID"``."""
    if isinstance(padding, str):
        return _padding(padding, name, (1, size), (1, k), (1, stride), (1, dilation))[1]
    pads = padding if isinstance(padding, (tuple, list)) and len(padding) == 2 else None
    if pads is None:
        if _args._int_or_none(padding) is None:
            raise DTypeError(
                f"{name}: padding must be 'SAME', 'VALID', an int or (left, right) ints >= 0, "
                f"got {_args.describe(padding)}"
            )
        pads = (padding, padding)
    return tuple(_args.size(p, name, "padding") for p in pads)


def _channels_match(name: str, x: Any, weight: Any, groups: int, in_axis: int) -> None:
    """The input's channels are ``weight.shape[in_axis]`` (times ``groups`` for conv1d's
    ``in // groups`` axis), checked before the reshapes that would hide the mismatch."""
    want = weight.shape[in_axis] * (groups if in_axis == 1 else 1)
    if x.shape[1] != want or weight.shape[0] % groups:
        raise ShapeError(
            f"{name}: x {tuple(x.shape)} has {x.shape[1]} channels, but the weight "
            f"{tuple(weight.shape)} with groups={groups} expects {want} (and a first axis "
            f"divisible by groups); x is read channels-first (batch, channels, ...)"
        )


def conv1d(
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    stride: int = 1,
    padding: Any = 0,
    dilation: int = 1,
    groups: int = 1,
) -> Tensor:
    """1-D cross-correlation of ``(batch, channels, length)`` signals, plus an optional bias.

    The arguments follow PyTorch's ``torch.nn.functional.conv1d``: ``out[n, o, t] =
    sum_{c, k} x_pad[n, g*C_g + c, t*stride + k*dilation] * weight[o, c, k]`` (no filter
    flip). It runs as :func:`conv2d` over a height-1 image, so its derivatives are the
    conv2d family's.

    Args:
        x: ``(batch, in_channels, length)`` floating Tensor.
        weight: ``(out_channels, in_channels // groups, k)`` floating Tensor.
        bias: optional ``(out_channels,)`` Tensor.
        stride: positive int.
        padding: int, ``(left, right)``, ``"SAME"`` (output length ``ceil(length /
            stride)``, the odd element at the end) or ``"VALID"``; zero padding.
        dilation: positive int.
        groups: number of channel groups.

    Returns:
        ``(batch, out_channels, out_length)`` Tensor of the promoted dtype, ``out_length =
        (length + left + right - dilation * (k - 1) - 1) // stride + 1``.

    Raises:
        ShapeError: ``x`` or ``weight`` is not 3-D, the channels do not match ``groups``,
            or the filter does not fit the padded signal.
        DTypeError: an input is not numeric, or an argument is not an int.
        ValueError: a stride, dilation or groups below 1, a negative padding, or an
            unknown padding string.

    Example:
        >>> x = fnp.reshape(fnp.arange(5.0), (1, 1, 5))
        >>> conv1d(x, fnp.array([[[1.0, 0.0, -1.0]]]), padding=1)
        Tensor([[[-1., -2., -2., -2.,  3.]]], dtype=float64)
    """
    x = as_tensor(x, "conv1d", "x")
    weight = as_tensor(weight, "conv1d", "weight")
    if x.ndim != 3 or weight.ndim != 3:
        raise ShapeError(
            f"conv1d: needs a 3-D x (batch, channels, length) and a 3-D weight (out_channels, "
            f"in_channels // groups, k), got {tuple(x.shape)} and {tuple(weight.shape)}"
        )
    stride = _args.size(stride, "conv1d", "stride", minimum=1)
    dilation = _args.size(dilation, "conv1d", "dilation", minimum=1)
    groups = _args.size(groups, "conv1d", "groups", minimum=1)
    _channels_match("conv1d", x, weight, groups, 1)
    pad = _conv1d_padding(padding, "conv1d", x.shape[2], weight.shape[2], stride, dilation)
    span = dilation * (weight.shape[2] - 1) + 1
    if x.shape[2] + sum(pad) < span:
        raise ShapeError(
            f"conv1d: the filter of {weight.shape[2]} taps (dilation {dilation}, spanning "
            f"{span}) does not fit the signal of length {x.shape[2]} padded by {pad}; pad more "
            "or use a smaller kernel"
        )
    y = conv2d(
        fnp.expand_dims(x, 2),
        fnp.expand_dims(weight, 2),
        None if bias is None else _bias_of("conv1d", bias, weight.shape[0]),
        stride=(1, stride),
        padding=((0, 0), pad),
        dilation=(1, dilation),
        groups=groups,
    )
    return y[:, :, 0, :]


def _bias_of(name: str, bias: Any, channels: int) -> Tensor:
    bias = as_tensor(bias, name, "bias")
    if tuple(bias.shape) != (channels,):
        raise ShapeError(
            f"{name}: bias must have shape (out_channels,) = ({channels},), got "
            f"{tuple(bias.shape)}"
        )
    return bias


def conv_transpose2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    *,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """2-D transposed convolution of NCHW images (the gradient of :func:`conv2d` in its input).

    The arguments and the weight layout follow PyTorch's
    ``torch.nn.functional.conv_transpose2d``: ``weight`` is ``(in_channels, out_channels //
    groups, kh, kw)``, which is the OIHW filter of the convolution whose input gradient this
    is, so ``conv_transpose2d(ct, w, stride=s, padding=p)`` is the VJP of ``x ->
    conv2d(x, w, stride=s, padding=p)`` at cotangent ``ct`` (for ``x`` of the output size).
    ``padding`` crops that many rows and columns from each side of the full transposed
    output, and ``output_padding`` adds rows at the bottom and columns at the right (as in
    PyTorch), choosing among the input sizes that a strided convolution maps to one output
    size.
    It runs as the ``conv2d_backprop_input`` op, so its derivatives are the conv2d family's.

    Args:
        x: ``(batch, in_channels, height, width)`` floating Tensor.
        weight: ``(in_channels, out_channels // groups, kh, kw)`` floating Tensor.
        bias: optional ``(out_channels,)`` Tensor.
        stride: int or ``(sh, sw)``, positive.
        padding: int or ``(ph, pw)``, non-negative.
        output_padding: int or ``(oph, opw)``, each below the stride or the dilation of its
            axis (PyTorch's rule).
        groups: channel groups; divides ``in_channels``.
        dilation: int or ``(dh, dw)``, positive.

    Returns:
        ``(batch, out_channels, out_height, out_width)`` Tensor of the promoted dtype, with
        ``out_height = (height - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1`` (likewise
        the width).

    Raises:
        ShapeError: ``x`` or ``weight`` is not 4-D, ``x``'s channels are not
            ``weight.shape[0]``, ``groups`` does not divide them, or the output would be
            empty.
        DTypeError: an input is not numeric, or an argument holds something other than
            ints.
        ValueError: a stride, dilation or groups below 1, a negative padding, or an
            ``output_padding`` not below both the stride and the dilation.

    Example:
        >>> x = fnp.ones((1, 1, 2, 2))
        >>> conv_transpose2d(x, fnp.ones((1, 1, 2, 2)), stride=2)[0, 0]
        Tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.],
                [1., 1., 1., 1.],
                [1., 1., 1., 1.]], dtype=float64)

    References:
        Dumoulin and Visin, "A guide to convolution arithmetic for deep learning", 2016,
        arXiv:1603.07285, section 4 (transposed convolution arithmetic).
    """
    name = "conv_transpose2d"
    x = as_tensor(x, name, "x")
    weight = as_tensor(weight, name, "weight")
    if x.ndim != 4 or weight.ndim != 4:
        raise ShapeError(
            f"{name}: needs a 4-D x (batch, channels, height, width) and a 4-D weight "
            f"(in_channels, out_channels // groups, kh, kw), got {tuple(x.shape)} and "
            f"{tuple(weight.shape)}"
        )
    stride = _pair(stride, name, "stride")
    dilation = _pair(dilation, name, "dilation")
    padding = _pair(padding, name, "padding", minimum=0)
    output_padding = _pair(output_padding, name, "output_padding", minimum=0)
    groups = _args.size(groups, name, "groups", minimum=1)
    _channels_match(name, x, weight, groups, 0)
    sizes, pads, extra = [], [], []
    for n, k, s, p, d, op in zip(
        x.shape[2:], weight.shape[2:], stride, padding, dilation, output_padding
    ):
        if op >= s and op >= d:
            raise ValueError(
                f"{name}: output_padding {output_padding} must be below the stride {stride} "
                f"or the dilation {dilation} on each axis"
            )
        out = (n - 1) * s - 2 * p + d * (k - 1) + op + 1
        # conv2d's input gradient for an input of `out` rows, padded (p, high): `high`
        # makes the strided convolution of that input give back n rows. When op >= s
        # (allowed with a larger dilation), no such padding is >= 0; the last rows then
        # lie past every window and are zeros.
        high = p - s * (op // s)
        if out < 1 or out + min(high, 0) < 1:
            raise ShapeError(
                f"{name}: the output would be empty ({out} rows) for input {tuple(x.shape)}, "
                f"kernel {tuple(weight.shape[2:])}, stride {stride}, padding {padding}; "
                "use less padding"
            )
        sizes.append(out + min(high, 0))
        pads.append((p, max(high, 0)))
        extra.append(max(-high, 0))
    y = _conv.conv2d_backprop_input(
        x, weight, input_size=tuple(sizes), stride=stride, padding=tuple(pads),
        dilation=dilation, groups=groups,
    )
    if any(extra):
        y = fnp.pad(y, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))
    if bias is not None:
        out_channels = weight.shape[1] * groups
        y = y + fnp.reshape(_bias_of(name, bias, out_channels), (1, -1, 1, 1))
    return y


def _pool_args(name, x, window, stride, padding):
    size = _spatial(as_tensor(x, name, "x"), name)
    window = _pair(window, name, "window")
    stride = window if stride is None else _pair(stride, name, "stride")
    pad = _padding(padding, name, size, window, stride, (1, 1))
    return {"window": window, "stride": stride, "padding": pad}


def max_pool2d(x: Any, window: Any, stride: Any = None, padding: Any = 0) -> Tensor:
    """Maximum over ``window``-sized patches of NCHW images.

    A window's gradient goes to its first maximum in row-major order (PyTorch's and JAX's
    max-pooling convention; ties are not split). Padding never wins a window.

    Args:
        x: ``(batch, channels, height, width)`` real Tensor.
        window: int or ``(kh, kw)``.
        stride: int or ``(sh, sw)``; default ``window`` (non-overlapping windows).
        padding: as in :func:`conv2d`; each side at most half the window.

    Returns:
        ``(batch, channels, out_height, out_width)`` Tensor of ``x.dtype``.

    Raises:
        ShapeError: ``x`` is not 4-D, the window does not fit, or padding exceeds half the
            window.
        DTypeError: ``x`` is not numeric, or ``window``, ``stride`` or ``padding`` holds
            something other than ints.
        ValueError: a window or stride below 1, or a negative padding.

    Example:
        >>> x = fnp.reshape(fnp.arange(16.0), (1, 1, 4, 4))
        >>> max_pool2d(x, 2)
        Tensor([[[[ 5.,  7.],
                  [13., 15.]]]], dtype=float64)
    """
    args = _pool_args("max_pool2d", x, window, stride, padding)
    return _conv.max_pool2d(as_tensor(x), **args)


def avg_pool2d(
    x: Any, window: Any, stride: Any = None, padding: Any = 0, count_include_pad: bool = True
) -> Tensor:
    """Mean over ``window``-sized patches of NCHW images.

    Args:
        x: ``(batch, channels, height, width)`` floating Tensor.
        window: int or ``(kh, kw)``.
        stride: int or ``(sh, sw)``; default ``window``.
        padding: as in :func:`conv2d`; each side at most half the window; zero padding.
        count_include_pad: divide by the window size (True, PyTorch's default) or by the
            number of non-padding elements.

    Returns:
        ``(batch, channels, out_height, out_width)`` Tensor of ``x.dtype``.

    Raises:
        ShapeError: as :func:`max_pool2d`.
        DTypeError: ``x`` is not floating, or an argument as :func:`max_pool2d`.
        ValueError: as :func:`max_pool2d`.

    Example:
        >>> avg_pool2d(fnp.reshape(fnp.arange(16.0), (1, 1, 4, 4)), 2)
        Tensor([[[[ 2.5,  4.5],
                  [10.5, 12.5]]]], dtype=float64)
    """
    args = _pool_args("avg_pool2d", x, window, stride, padding)
    include = _args.flag(count_include_pad, "avg_pool2d", "count_include_pad")
    return _conv.avg_pool2d(as_tensor(x), count_include_pad=include, **args)


def dropout(x: Any, rate: float, *, key: Any) -> Tensor:
    """Inverted dropout: zero each element with probability ``rate``, scale the rest by ``1 / (1 - rate)``.

    The expectation of the output equals ``x``, so no rescaling is needed at evaluation.

    Args:
        x: floating Tensor of any shape.
        rate: probability of dropping, in ``[0, 1]``; ``rate=1`` gives zeros.
        key: a key from :func:`fgrad.random.key`.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        ValueError: ``rate`` outside ``[0, 1]`` or ``key`` is None.
        DTypeError: ``rate`` is not a real number, or ``x`` is not numeric.
        TypeError: ``key`` is not a key.
        ConcretizationError: ``rate`` is traced (a Python float argument of a jitted
            function: mark it static; or an argument of grad, jvp or vmap).

    Example:
        >>> y = dropout(fnp.ones(1000), 0.5, key=fgrad.random.key(0))
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]

    References:
        Srivastava et al., "Dropout: A Simple Way to Prevent Neural Networks from
        Overfitting", JMLR 15, 2014 (inverted scaling as in its Section 10 implementations).
    """
    if isinstance(rate, Tensor) and type(rate) is not Tensor:  # a tracer
        raise ConcretizationError(
            f"dropout: rate is a traced value {rate.aval}, but the rate must be a Python "
            "number (it selects the rate 0 and 1 cases, and dropout is not differentiated "
            "in it); under jit a Python float argument is traced, so mark it static "
            "(static_argnums / static_argnames); under grad, jvp or vmap pass it as a "
            "constant rather than an argument of the transformed function"
        )
    rate = _args.real(rate, "dropout", "rate")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1], got {rate}")
    x = as_tensor(x, "dropout", "x")
    if key is None:
        raise ValueError("dropout: needs a key in training; pass key=fgrad.random.key(...)")
    random._key_data(key, "bernoulli", where="dropout")
    if rate == 0.0:
        return x
    if rate == 1.0:
        return x * 0.0
    keep = random.bernoulli(key, 1.0 - rate, tuple(x.shape))
    return fnp.where(keep, x * (1.0 / (1.0 - rate)), 0.0)


def _fused_norm(x: Any, axis: Any, *params: Any) -> bool:
    """The fused ops apply: a real floating ``x`` normalised over its last axis, with
    parameters of its dtype and of shape ``()`` or ``(d_model,)`` (or None)."""
    dtype = getattr(x, "dtype", None)
    shape = tuple(getattr(x, "shape", ()))
    if dtype is None or np.dtype(dtype).kind != "f" or not shape or not shape[-1]:
        return False
    if not isinstance(axis, (int, np.integer)) or axis not in (-1, len(shape) - 1):
        return False
    return all(
        p is None
        or (hasattr(p, "shape") and p.dtype == dtype and tuple(p.shape) in ((), shape[-1:]))
        for p in params
    )


def _norm_args(fn: str, x: Any, eps: Any, axis: Any, **params: Any) -> tuple:
    """``layer_norm``'s and ``rms_norm``'s arguments checked: ``(x, eps, *params)``, with
    ``x`` and the parameters numeric Tensors, ``eps`` a real ``>= 0`` and ``axis`` an int
    or a tuple of ints within ``x``'s dimensions."""
    x = as_tensor(_arr(x, fn, "x"))
    shape = tuple(x.shape)
    if not shape:
        raise ShapeError(f"{fn}: x must have at least one dimension, got a 0-d input")
    _args.axes(axis, fn, len(shape))
    if isinstance(eps, Tensor) and tuple(eps.shape) == () and np.dtype(eps.dtype).kind in "iuf":
        pass  # a traced scalar (jit traces Python floats): its value is unknown here
    else:
        eps = _args.real(eps, fn, "eps", minimum=0.0)
    out = []
    for name, p in params.items():
        if p is not None:
            p = _arr(p, fn, name)  # Python numbers stay weakly typed
            try:
                ok = np.broadcast_shapes(tuple(getattr(p, "shape", ())), shape) == shape
            except ValueError:
                ok = False
            if not ok:
                p_shape = tuple(getattr(p, "shape", ()))
                raise ShapeError(
                    f"{fn}: {name} of shape {p_shape} does not broadcast to x's shape {shape}"
                )
        out.append(p)
    return (x, eps, *out)


def _widened(x: Any, *params: Any) -> tuple[Any, Any]:
    """``(x to compute with, dtype to round the result to or None)``: a float16 ``x`` is
    normalised in float32, since its squares overflow past 256 and its row sums past 65504
    (PyTorch's and JAX's norms widen too). The result is rounded to float16 only when
    the parameters would not have promoted it anyway."""
    if getattr(x, "dtype", None) != fnp.float16:
        return x, None
    result = dtypes.result_type(x, *(p for p in params if p is not None))
    return fnp.astype(x, fnp.float32), (result if result == fnp.float16 else None)


def layer_norm(
    x: Any, scale: Any = None, bias: Any = None, *, eps: float = 1e-5, axis: int = -1
) -> Tensor:
    """Normalise ``x`` to zero mean and unit variance over ``axis``, then scale and shift.

    ``y = (x - mean) / sqrt(var + eps) * scale + bias`` with the biased (``1/n``) variance,
    as in the paper and PyTorch. Over the last axis, with ``(d_model,)`` parameters of
    ``x``'s dtype, it runs as two fused ops (:func:`fgrad.ops.nn.standardize` and
    :func:`fgrad.ops.nn.scale_shift`) whose backward is the analytic one; otherwise as a
    composition of ops.

    Args:
        x: ``(..., d_model)`` floating Tensor.
        scale: optional Tensor broadcastable to ``x`` (typically ``(d_model,)``).
        bias: optional Tensor broadcastable to ``x``.
        eps: added to the variance for stability.
        axis: the normalised axis.

    Returns:
        Tensor of ``x.shape`` and the promoted dtype of ``x`` and the parameters. float16 is
        normalised in float32 and rounded once (the fused op does the same inside).

    Example:
        >>> layer_norm(fnp.array([1.0, 2.0, 3.0]), eps=0.0)
        Tensor([-1.22474487,  0.        ,  1.22474487], dtype=float64)

    References:
        Ba, Kiros and Hinton, "Layer Normalization", 2016, arXiv:1607.06450, eq. 4.
    """
    x, eps, scale, bias = _norm_args("layer_norm", x, eps, axis, scale=scale, bias=bias)
    if _fused_norm(x, axis, scale, bias):
        xhat, _ = _nn.standardize(x, eps=float(eps))
        if scale is None and bias is None:
            return xhat
        return _nn.scale_shift(xhat, 1.0 if scale is None else scale, 0.0 if bias is None else bias)
    x, rounded = _widened(x, scale, bias)
    mean = fnp.mean(x, axis=axis, keepdims=True)
    centred = x - mean
    var = fnp.mean(centred * centred, axis=axis, keepdims=True)
    y = centred / fnp.sqrt(var + eps)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y if rounded is None else fnp.astype(y, rounded)


def rms_norm(x: Any, scale: Any = None, *, eps: float = 1e-6, axis: int = -1) -> Tensor:
    """Divide ``x`` by its root mean square over ``axis``, then scale (no centring, no bias).

    ``y = x / sqrt(mean(x**2) + eps) * scale``.

    Args:
        x: ``(..., d_model)`` floating Tensor.
        scale: optional Tensor broadcastable to ``x`` (typically ``(d_model,)``).
        eps: added to the mean square for stability.
        axis: the normalised axis.

    Returns:
        Tensor of ``x.shape`` and the promoted dtype of ``x`` and ``scale``. float16 is
        normalised in float32 (its squares overflow past 256) and rounded once.

    Example:
        >>> rms_norm(fnp.array([3.0, 4.0]), eps=0.0)
        Tensor([0.84852814, 1.13137085], dtype=float64)

    References:
        Zhang and Sennrich, "Root Mean Square Layer Normalization", NeurIPS 2019,
        arXiv:1910.07467, eq. 4.
    """
    x, eps, scale = _norm_args("rms_norm", x, eps, axis, scale=scale)
    x, rounded = _widened(x, scale)
    ms = fnp.mean(x * x, axis=axis, keepdims=True)
    y = x / fnp.sqrt(ms + eps)
    y = y if scale is None else y * scale
    return y if rounded is None else fnp.astype(y, rounded)


# ------------------------------------------------------------------------ layers


@dataclass(frozen=True)
class Linear:
    """Affine map ``y = x @ weight + bias`` over the last axis.

    ``weight`` is stored ``(in_features, out_features)`` (flax's layout, so no transpose;
    PyTorch stores the transpose).

    Attributes:
        in_features: size of the input's last axis.
        out_features: size of the output's last axis.
        use_bias: add a bias.
        param_dtype: dtype of the parameters (default float32).
        kernel_init: initialiser of ``weight`` (default Glorot uniform).
        bias_init: initialiser of ``bias`` (default zeros).

    Params:
        :class:`LinearParams`: ``weight`` ``(in_features, out_features)``, ``bias``
        ``(out_features,)`` (None without a bias).

    Input ``(..., in_features)`` floating Tensor; output ``(..., out_features)``.

    Raises:
        DTypeError: a size is not an int (``Linear(2.5, 3)``), ``use_bias`` not a bool,
            ``param_dtype`` not a floating dtype, or an initialiser not callable.
        ValueError: a size below 1.
        ShapeError: the input's last axis is not ``in_features`` (from ``matmul``).
        TypeError: ``apply`` got params that are not :class:`LinearParams`.

    Example:
        >>> layer = Linear(3, 2)
        >>> params = layer.init(fgrad.random.key(0))
        >>> params.weight.shape, params.bias.dtype
        ((3, 2), dtype('float32'))
        >>> layer.apply(params, fnp.zeros((5, 3), dtype="float32")).shape
        (5, 2)
    """

    in_features: int
    out_features: int
    use_bias: bool = True
    param_dtype: Any = np.float32
    kernel_init: Initializer = _DENSE_INIT
    bias_init: Initializer = zeros

    def __post_init__(self):
        _args.size(self.in_features, "Linear", "in_features", minimum=1)
        _args.size(self.out_features, "Linear", "out_features", minimum=1)
        _args.flag(self.use_bias, "Linear", "use_bias")
        _field_dtype(self.param_dtype, "Linear")
        _args.function(self.kernel_init, "Linear", "kernel_init")
        _args.function(self.bias_init, "Linear", "bias_init")

    def init(self, key: Any) -> LinearParams:
        wkey, bkey = _split(key, 2)
        weight = self.kernel_init(wkey, (self.in_features, self.out_features), self.param_dtype)
        bias = None
        if self.use_bias:
            bias = self.bias_init(bkey, (self.out_features,), self.param_dtype)
        return LinearParams(bias=bias, weight=weight)

    def apply(
        self, params: LinearParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        params = _checked_params(params, LinearParams, "Linear")
        y = fnp.matmul(x, _required(params, "weight", "Linear"))
        bias = _required(params, "bias", "Linear", self.use_bias, "use_bias")
        if bias is not None:
            # bias_add: x + bias, whose bias gradient is one matrix-vector product.
            y = _nn.bias_add(y, bias)
        return y


@dataclass(frozen=True)
class MLP:
    """A stack of :class:`Linear` layers with an activation between them.

    Attributes:
        sizes: ``(in_features, hidden_1, ..., out_features)``; at least two entries.
        activation: elementwise function applied after every layer but the last (default
            :func:`fgrad.nn.relu`).
        activate_final: also apply the activation after the last layer.
        use_bias: layers add biases.
        param_dtype: dtype of the parameters (default float32).

    Params:
        tuple with one :class:`LinearParams` per layer.

    Input ``(..., sizes[0])``; output ``(..., sizes[-1])``.

    Raises:
        DTypeError: a size is not an int, ``activation`` is not callable, a flag is not a
            bool, or ``param_dtype`` is not a floating dtype.
        ValueError: fewer than two sizes, or a size below 1.

    Example:
        >>> mlp = MLP((64, 256, 256, 10))
        >>> params = mlp.init(fgrad.random.key(0))
        >>> [p.weight.shape for p in params]
        [(64, 256), (256, 256), (256, 10)]
        >>> mlp.apply(params, fnp.ones((2, 64), dtype="float32")).shape
        (2, 10)
    """

    sizes: Sequence[int]
    activation: Callable = relu
    activate_final: bool = False
    use_bias: bool = True
    param_dtype: Any = np.float32

    def __post_init__(self):
        if isinstance(self.sizes, (str, bytes)) or not hasattr(self.sizes, "__iter__"):
            raise DTypeError(
                f"MLP: sizes must be a sequence of ints, got {_args.describe(self.sizes)}"
            )
        sizes = tuple(_args.size(s, "MLP", "sizes", minimum=1) for s in self.sizes)
        object.__setattr__(self, "sizes", sizes)
        if len(self.sizes) < 2:
            raise ValueError(f"MLP: sizes needs input and output sizes, got {self.sizes}")
        _args.function(self.activation, "MLP", "activation")
        _args.flag(self.activate_final, "MLP", "activate_final")
        _args.flag(self.use_bias, "MLP", "use_bias")
        _field_dtype(self.param_dtype, "MLP")

    @property
    def layers(self) -> tuple[Linear, ...]:
        return tuple(
            Linear(a, b, self.use_bias, self.param_dtype)
            for a, b in zip(self.sizes[:-1], self.sizes[1:])
        )

    def init(self, key: Any) -> tuple[LinearParams, ...]:
        layers = self.layers
        return tuple(layer.init(k) for layer, k in zip(layers, _split(key, len(layers))))

    def apply(
        self, params: Sequence[LinearParams], x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        layers = self.layers
        _sequence_params(params, len(layers), "MLP", "LinearParams")
        for i, (layer, p) in enumerate(zip(layers, params)):
            x = layer.apply(p, x)
            if i < len(layers) - 1 or self.activate_final:
                x = self.activation(x)
        return x


@dataclass(frozen=True)
class Conv2d:
    """2-D convolution layer over NCHW images (see :func:`conv2d`).

    Attributes:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or ``(kh, kw)``.
        stride: int or ``(sh, sw)``.
        padding: int, pairs, ``"SAME"`` or ``"VALID"``.
        dilation: int or ``(dh, dw)``.
        groups: channel groups; must divide both channel counts.
        use_bias: add a per-channel bias.
        param_dtype: dtype of the parameters (default float32).
        kernel_init: initialiser of ``weight`` (default Glorot uniform over the OIHW fans).
        bias_init: initialiser of ``bias`` (default zeros).

    Params:
        :class:`Conv2dParams`: ``weight`` ``(out_channels, in_channels // groups, kh, kw)``,
        ``bias`` ``(out_channels,)`` (None without a bias).

    Raises:
        ValueError: ``groups`` does not divide the channel counts; a channel count,
            kernel size, stride, dilation or ``groups`` below 1; a negative padding.
        DTypeError: a size, stride, padding or dilation that is not an int (or pair of
            ints), a flag that is not a bool, ``param_dtype`` not a floating dtype, or an
            initialiser that is not callable.

    Example:
        >>> conv = Conv2d(1, 8, 3, padding="SAME")
        >>> params = conv.init(fgrad.random.key(0))
        >>> params.weight.shape
        (8, 1, 3, 3)
        >>> conv.apply(params, fnp.ones((2, 1, 8, 8), dtype="float32")).shape
        (2, 8, 8, 8)
    """

    in_channels: int
    out_channels: int
    kernel_size: Any
    stride: Any = 1
    padding: Any = 0
    dilation: Any = 1
    groups: int = 1
    use_bias: bool = True
    param_dtype: Any = np.float32
    kernel_init: Initializer = _CONV_INIT
    bias_init: Initializer = zeros

    def __post_init__(self):
        object.__setattr__(self, "kernel_size", _pair(self.kernel_size, "Conv2d", "kernel_size"))
        _pair(self.stride, "Conv2d", "stride")
        _pair(self.dilation, "Conv2d", "dilation")
        _check_padding(self.padding, "Conv2d")
        _conv_layer_fields(self, "Conv2d")

    def init(self, key: Any) -> Conv2dParams:
        shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        return _conv_layer_params(self, key, shape, Conv2dParams)

    def apply(
        self, params: Conv2dParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        geometry = {"stride": self.stride, "padding": self.padding, "dilation": self.dilation}
        return _conv_layer_apply(self, params, x, Conv2dParams, conv2d, **geometry)


def _conv_layer_fields(layer: Any, name: str) -> None:
    """The constructor checks the convolution layers share (sizes, flags, initialisers)."""
    _args.size(layer.in_channels, name, "in_channels", minimum=1)
    _args.size(layer.out_channels, name, "out_channels", minimum=1)
    _args.size(layer.groups, name, "groups", minimum=1)
    _args.flag(layer.use_bias, name, "use_bias")
    _field_dtype(layer.param_dtype, name)
    _args.function(layer.kernel_init, name, "kernel_init")
    _args.function(layer.bias_init, name, "bias_init")
    if layer.in_channels % layer.groups or layer.out_channels % layer.groups:
        raise ValueError(
            f"{name}: groups={layer.groups} must divide in_channels={layer.in_channels} and "
            f"out_channels={layer.out_channels}"
        )


def _conv_layer_apply(layer: Any, params: Any, x: Any, cls: type, fn: Callable, **geometry):
    """``fn(x, weight, bias, groups=..., **geometry)`` with the layer's checked params."""
    name = type(layer).__name__
    params = _checked_params(params, cls, name)
    weight = _required(params, "weight", name)
    bias = _required(params, "bias", name, layer.use_bias, "use_bias")
    return fn(x, weight, bias, groups=layer.groups, **geometry)


def _conv_layer_params(layer: Any, key: Any, shape: tuple, cls: type) -> Any:
    wkey, bkey = _split(key, 2)
    weight = layer.kernel_init(wkey, shape, layer.param_dtype)
    bias = None
    if layer.use_bias:
        bias = layer.bias_init(bkey, (layer.out_channels,), layer.param_dtype)
    return cls(bias=bias, weight=weight)


@dataclass(frozen=True)
class Conv1d:
    """1-D convolution layer over ``(batch, channels, length)`` signals (see :func:`conv1d`).

    Attributes:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int, the filter's length.
        stride: positive int.
        padding: int, ``(left, right)``, ``"SAME"`` or ``"VALID"``.
        dilation: positive int.
        groups: channel groups; must divide both channel counts.
        use_bias: add a per-channel bias.
        param_dtype: dtype of the parameters (default float32).
        kernel_init: initialiser of ``weight`` (default Glorot uniform over its fans).
        bias_init: initialiser of ``bias`` (default zeros).

    Params:
        :class:`Conv1dParams`: ``weight`` ``(out_channels, in_channels // groups, k)``,
        ``bias`` ``(out_channels,)`` (None without a bias).

    Raises:
        ValueError: ``groups`` does not divide the channel counts; a size below 1.
        DTypeError: a size, stride, padding or dilation that is not an int, a flag that is
            not a bool, ``param_dtype`` not a floating dtype, or an initialiser that is not
            callable.

    Example:
        >>> conv = Conv1d(2, 4, 3, padding="SAME")
        >>> params = conv.init(fgrad.random.key(0))
        >>> conv.apply(params, fnp.ones((5, 2, 16), dtype="float32")).shape
        (5, 4, 16)
    """

    in_channels: int
    out_channels: int
    kernel_size: int
    stride: int = 1
    padding: Any = 0
    dilation: int = 1
    groups: int = 1
    use_bias: bool = True
    param_dtype: Any = np.float32
    kernel_init: Initializer = _CONV_INIT
    bias_init: Initializer = zeros

    def __post_init__(self):
        _args.size(self.kernel_size, "Conv1d", "kernel_size", minimum=1)
        _args.size(self.stride, "Conv1d", "stride", minimum=1)
        _args.size(self.dilation, "Conv1d", "dilation", minimum=1)
        _conv1d_padding(self.padding, "Conv1d", 1, 1, 1, 1)
        _conv_layer_fields(self, "Conv1d")

    def init(self, key: Any) -> Conv1dParams:
        shape = (self.out_channels, self.in_channels // self.groups, self.kernel_size)
        return _conv_layer_params(self, key, shape, Conv1dParams)

    def apply(
        self, params: Conv1dParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        geometry = {"stride": self.stride, "padding": self.padding, "dilation": self.dilation}
        return _conv_layer_apply(self, params, x, Conv1dParams, conv1d, **geometry)


@dataclass(frozen=True)
class ConvTranspose2d:
    """2-D transposed convolution layer over NCHW images (see :func:`conv_transpose2d`).

    PyTorch's ``nn.ConvTranspose2d``: it maps the output shape of a ``Conv2d`` with the
    same ``kernel_size``, ``stride``, ``padding`` and ``dilation`` back to its input shape
    (``output_padding`` picks among the sizes a stride makes ambiguous), e.g. to upsample
    in a decoder.

    Attributes:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or ``(kh, kw)``.
        stride: int or ``(sh, sw)``.
        padding: int or ``(ph, pw)``.
        output_padding: int or ``(oph, opw)``, below the stride or the dilation.
        groups: channel groups; must divide both channel counts.
        use_bias: add a per-channel bias.
        dilation: int or ``(dh, dw)``.
        param_dtype: dtype of the parameters (default float32).
        kernel_init: initialiser of ``weight`` (default Glorot uniform over its fans).
        bias_init: initialiser of ``bias`` (default zeros).

    Params:
        :class:`ConvTranspose2dParams`: ``weight`` ``(in_channels, out_channels // groups,
        kh, kw)``, ``bias`` ``(out_channels,)`` (None without a bias).

    Raises:
        ValueError: ``groups`` does not divide the channel counts; a size below 1; an
            ``output_padding`` not below both the stride and the dilation.
        DTypeError: as :class:`Conv2d`.

    Example:
        >>> up = ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        >>> params = up.init(fgrad.random.key(0))
        >>> up.apply(params, fnp.ones((2, 8, 5, 5), dtype="float32")).shape  # 5 -> 10
        (2, 4, 10, 10)
    """

    in_channels: int
    out_channels: int
    kernel_size: Any
    stride: Any = 1
    padding: Any = 0
    output_padding: Any = 0
    groups: int = 1
    use_bias: bool = True
    dilation: Any = 1
    param_dtype: Any = np.float32
    kernel_init: Initializer = _CONV_INIT
    bias_init: Initializer = zeros

    def __post_init__(self):
        name = "ConvTranspose2d"
        object.__setattr__(self, "kernel_size", _pair(self.kernel_size, name, "kernel_size"))
        stride = _pair(self.stride, name, "stride")
        dilation = _pair(self.dilation, name, "dilation")
        _pair(self.padding, name, "padding", minimum=0)
        op = _pair(self.output_padding, name, "output_padding", minimum=0)
        if any(o >= s and o >= d for o, s, d in zip(op, stride, dilation)):
            raise ValueError(
                f"{name}: output_padding {self.output_padding} must be below the stride "
                f"{self.stride} or the dilation {self.dilation} on each axis"
            )
        _conv_layer_fields(self, name)

    def init(self, key: Any) -> ConvTranspose2dParams:
        shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        return _conv_layer_params(self, key, shape, ConvTranspose2dParams)

    def apply(
        self, params: ConvTranspose2dParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        geometry = {"stride": self.stride, "padding": self.padding, "dilation": self.dilation}
        return _conv_layer_apply(
            self, params, x, ConvTranspose2dParams, conv_transpose2d,
            output_padding=self.output_padding, **geometry,
        )


@dataclass(frozen=True)
class MaxPool2d:
    """Max pooling layer (see :func:`max_pool2d`); no parameters (``()``).

    Example:
        >>> pool = MaxPool2d(2)
        >>> pool.apply(pool.init(None), fnp.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    window: Any
    stride: Any = None
    padding: Any = 0

    def __post_init__(self):
        _pool_fields(self, "MaxPool2d")

    def init(self, key: Any) -> tuple:
        return ()

    def apply(self, params: tuple, x: Any, *, key: Any = None, train: bool = False) -> Tensor:
        return max_pool2d(x, self.window, self.stride, self.padding)


def _pool_fields(layer: Any, name: str) -> None:
    _pair(layer.window, name, "window")
    if layer.stride is not None:
        _pair(layer.stride, name, "stride")
    _check_padding(layer.padding, name)


@dataclass(frozen=True)
class AvgPool2d:
    """Average pooling layer (see :func:`avg_pool2d`); no parameters (``()``).

    Example:
        >>> pool = AvgPool2d(2, count_include_pad=False)
        >>> pool.apply((), fnp.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    window: Any
    stride: Any = None
    padding: Any = 0
    count_include_pad: bool = True

    def __post_init__(self):
        _pool_fields(self, "AvgPool2d")
        _args.flag(self.count_include_pad, "AvgPool2d", "count_include_pad")

    def init(self, key: Any) -> tuple:
        return ()

    def apply(self, params: tuple, x: Any, *, key: Any = None, train: bool = False) -> Tensor:
        return avg_pool2d(x, self.window, self.stride, self.padding, self.count_include_pad)


@dataclass(frozen=True)
class Flatten:
    """Merge the axes from ``start_axis`` on into one (``(batch, c, h, w) -> (batch, c*h*w)``).

    Example:
        >>> Flatten().apply((), fnp.ones((2, 3, 4, 4))).shape
        (2, 48)
    """

    start_axis: int = 1

    def __post_init__(self):
        _args.index(self.start_axis, "Flatten", "start_axis")

    def init(self, key: Any) -> tuple:
        return ()

    def apply(self, params: tuple, x: Any, *, key: Any = None, train: bool = False) -> Tensor:
        shape = tuple(x.shape)
        start = self.start_axis % max(len(shape), 1)
        return fnp.reshape(x, (*shape[:start], math.prod(shape[start:])))


@dataclass(frozen=True)
class Embedding:
    """A table of ``vocab_size`` learned vectors, looked up by integer ids.

    Attributes:
        vocab_size: number of ids.
        d_model: size of each vector.
        param_dtype: dtype of the table (default float32).
        embedding_init: initialiser of the table (default ``normal(0.02)``, as GPT-2).

    Params:
        :class:`EmbeddingParams`: ``embedding`` ``(vocab_size, d_model)``.

    Input: integer Tensor ``(...)`` of ids in ``[0, vocab_size)``; output ``(..., d_model)``.

    Raises:
        DTypeError: the ids are not integers; a size that is not an int, ``param_dtype``
            not a floating dtype, or ``embedding_init`` not callable.
        ValueError: a size below 1.

    Example:
        >>> emb = Embedding(10, 4)
        >>> params = emb.init(fgrad.random.key(0))
        >>> emb.apply(params, fnp.array([[1, 2, 3]])).shape
        (1, 3, 4)
        >>> emb.attend(params, fnp.ones((1, 3, 4), dtype="float32")).shape  # tied output logits
        (1, 3, 10)
    """

    vocab_size: int
    d_model: int
    param_dtype: Any = np.float32
    embedding_init: Initializer = _EMBED_INIT

    def __post_init__(self):
        _args.size(self.vocab_size, "Embedding", "vocab_size", minimum=1)
        _args.size(self.d_model, "Embedding", "d_model", minimum=1)
        _field_dtype(self.param_dtype, "Embedding")
        _args.function(self.embedding_init, "Embedding", "embedding_init")

    def init(self, key: Any) -> EmbeddingParams:
        table = self.embedding_init(key, (self.vocab_size, self.d_model), self.param_dtype)
        return EmbeddingParams(embedding=table)

    def apply(
        self, params: EmbeddingParams, ids: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        params = _checked_params(params, EmbeddingParams, "Embedding")
        table = _required(params, "embedding", "Embedding")
        ids = ids if hasattr(ids, "dtype") else fnp.asarray(ids)
        if not np.issubdtype(np.dtype(ids.dtype), np.integer):
            raise DTypeError(
                f"Embedding.apply: ids must be an integer Tensor, got dtype {ids.dtype}; "
                "cast with astype('int64')"
            )
        return fnp.take(table, ids, axis=0)

    def attend(self, params: EmbeddingParams, x: Any) -> Tensor:
        """Logits ``x @ embedding.T`` against every vocabulary vector (weight tying).

        Input ``(..., d_model)``; output ``(..., vocab_size)``.
        """
        params = _checked_params(params, EmbeddingParams, "Embedding")
        return fnp.matmul(x, fnp.transpose(_required(params, "embedding", "Embedding")))


@dataclass(frozen=True)
class LayerNorm:
    """Layer normalisation over the last axis, with learned scale and bias (see :func:`layer_norm`).

    Attributes:
        d_model: size of the normalised axis.
        eps: added to the variance (default 1e-5, as PyTorch).
        use_scale: learn a scale (initialised to ones).
        use_bias: learn a bias (initialised to zeros).
        param_dtype: dtype of the parameters (default float32).

    Params:
        :class:`LayerNormParams`: ``scale`` and ``bias``, each ``(d_model,)`` (None where
        ``use_scale`` or ``use_bias`` is False).

    Raises:
        DTypeError: ``d_model`` is not an int, ``eps`` not a real number, a flag not a
            bool, or ``param_dtype`` not a floating dtype.
        ValueError: ``d_model`` below 1 or a negative ``eps``.

    Example:
        >>> ln = LayerNorm(3)
        >>> ln.apply(ln.init(None), fnp.array([1.0, 2.0, 3.0]))
        Tensor([-1.22473569,  0.        ,  1.22473569], dtype=float64)

    References:
        Ba, Kiros and Hinton, "Layer Normalization", 2016, arXiv:1607.06450.
    """

    d_model: int
    eps: float = 1e-5
    use_scale: bool = True
    use_bias: bool = True
    param_dtype: Any = np.float32

    def __post_init__(self):
        _norm_fields(self, "LayerNorm")
        _args.flag(self.use_bias, "LayerNorm", "use_bias")

    def init(self, key: Any) -> LayerNormParams:
        shape, dtype = (self.d_model,), self.param_dtype
        return LayerNormParams(
            bias=zeros(key, shape, dtype) if self.use_bias else None,
            scale=ones(key, shape, dtype) if self.use_scale else None,
        )

    def apply(
        self, params: LayerNormParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        params = _checked_params(params, LayerNormParams, "LayerNorm")
        scale = _required(params, "scale", "LayerNorm", self.use_scale, "use_scale")
        bias = _required(params, "bias", "LayerNorm", self.use_bias, "use_bias")
        return layer_norm(x, scale, bias, eps=self.eps)


@dataclass(frozen=True)
class RMSNorm:
    """Root-mean-square normalisation over the last axis with a learned scale (see :func:`rms_norm`).

    Attributes:
        d_model: size of the normalised axis.
        eps: added to the mean square (default 1e-6).
        use_scale: learn a scale (initialised to ones).
        param_dtype: dtype of the parameters (default float32).

    Params:
        :class:`RMSNormParams`: ``scale`` ``(d_model,)`` (None with ``use_scale=False``).

    Raises:
        DTypeError: ``d_model`` is not an int, ``eps`` not a real number, ``use_scale``
            not a bool, or ``param_dtype`` not a floating dtype.
        ValueError: ``d_model`` below 1 or a negative ``eps``.

    Example:
        >>> norm = RMSNorm(2, eps=0.0)
        >>> norm.apply(norm.init(None), fnp.array([3.0, 4.0]))
        Tensor([0.84852814, 1.13137085], dtype=float64)

    References:
        Zhang and Sennrich, "Root Mean Square Layer Normalization", NeurIPS 2019,
        arXiv:1910.07467.
    """

    d_model: int
    eps: float = 1e-6
    use_scale: bool = True
    param_dtype: Any = np.float32

    def __post_init__(self):
        _norm_fields(self, "RMSNorm")

    def init(self, key: Any) -> RMSNormParams:
        scale = ones(key, (self.d_model,), self.param_dtype) if self.use_scale else None
        return RMSNormParams(scale=scale)

    def apply(
        self, params: RMSNormParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        params = _checked_params(params, RMSNormParams, "RMSNorm")
        scale = _required(params, "scale", "RMSNorm", self.use_scale, "use_scale")
        return rms_norm(x, scale, eps=self.eps)


def _norm_fields(layer: Any, name: str) -> None:
    """The constructor checks of LayerNorm and RMSNorm."""
    _args.size(layer.d_model, name, "d_model", minimum=1)
    _args.real(layer.eps, name, "eps", minimum=0.0)
    _args.flag(layer.use_scale, name, "use_scale")
    _field_dtype(layer.param_dtype, name)


@dataclass(frozen=True)
class Dropout:
    """Inverted dropout in training, the identity otherwise (see :func:`dropout`); no parameters.

    Attributes:
        rate: probability of zeroing an element, in ``[0, 1]``.

    Raises:
        ValueError: ``rate`` outside ``[0, 1]``, or ``train=True`` with a non-zero rate and
            no ``key``.
        DTypeError: ``rate`` is not a real number.

    Example:
        >>> drop = Dropout(0.5)
        >>> x = fnp.ones(4)
        >>> drop.apply((), x)  # evaluation: identity
        Tensor([1., 1., 1., 1.], dtype=float64)
        >>> set(drop.apply((), fnp.ones(100), key=fgrad.random.key(0), train=True).tolist())
        {0.0, 2.0}

    References:
        Srivastava et al., "Dropout: A Simple Way to Prevent Neural Networks from
        Overfitting", JMLR 15, 2014.
    """

    rate: float

    def __post_init__(self):
        if not 0.0 <= _args.real(self.rate, "Dropout", "rate") <= 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1], got {self.rate}")

    def init(self, key: Any) -> tuple:
        return ()

    def apply(self, params: tuple, x: Any, *, key: Any = None, train: bool = False) -> Tensor:
        if not train or self.rate == 0.0:
            return x
        return dropout(x, self.rate, key=key)


@dataclass(frozen=True)
class Sequential:
    """Layers applied in order; each a layer (``init``/``apply``) or a plain function ``x -> y``.

    Attributes:
        layers: sequence of layers and functions (stored as a tuple).

    Params:
        tuple with one entry per layer (``()`` for functions and parameter-free layers).

    ``apply`` passes ``train`` to every layer and, in training, a separate key (split from
    ``key``) to each; in evaluation the layers get ``key=None``.

    Raises:
        ValueError: ``params`` does not have one entry per layer.
        TypeError: ``layers`` is not a sequence, or holds something that is neither a
            layer nor a function.

    Example:
        >>> cnn = Sequential([
        ...     Conv2d(1, 8, 3, padding=1), relu, MaxPool2d(2),
        ...     Flatten(), Linear(8 * 4 * 4, 10)])
        >>> params = cnn.init(fgrad.random.key(0))
        >>> cnn.apply(params, fnp.ones((2, 1, 8, 8), dtype="float32")).shape
        (2, 10)
    """

    layers: Sequence[Any]

    def __post_init__(self):
        if isinstance(self.layers, (str, bytes)) or not hasattr(self.layers, "__iter__"):
            raise TypeError(
                f"Sequential: layers must be a sequence of layers and functions, got "
                f"{_args.describe(self.layers)}"
            )
        object.__setattr__(self, "layers", tuple(self.layers))
        for layer in self.layers:
            if not (hasattr(layer, "apply") or callable(layer)):
                raise TypeError(f"Sequential: {layer!r} is neither a layer nor a function")

    def init(self, key: Any) -> tuple:
        keys = _split(key, len(self.layers))
        return tuple(
            layer.init(k) if hasattr(layer, "init") else () for layer, k in zip(self.layers, keys)
        )

    def apply(self, params: Sequence[Any], x: Any, *, key: Any = None, train: bool = False) -> Any:
        _sequence_params(params, len(self.layers), "Sequential", "params")
        # Keys feed stochastic layers in training only; evaluation splits nothing.
        keys = _split(key if train else None, len(self.layers))
        for layer, p, k in zip(self.layers, params, keys):
            x = layer.apply(p, x, key=k, train=train) if hasattr(layer, "apply") else layer(x)
        return x
