"""Scaled dot-product attention, multi-head self-attention and the pre-norm transformer block.

Masks are boolean with True where a query may attend to a key (JAX's and flax's
convention; PyTorch's ``attn_mask`` uses the opposite sense for bool masks). They broadcast
against the attention scores ``(batch, n_heads, seq_q, seq_k)``: :func:`causal_mask` gives
``(seq, seq)``, :func:`padding_mask` gives ``(batch, 1, 1, seq_k)``, and masks combine with
``fnp.logical_and``. Masked scores are replaced by the dtype's most negative finite value,
not ``-inf``, so a query with no visible key gets uniform weights instead of NaN (flax's
choice), and masked positions receive exactly zero gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args, dtypes, random
from fgrad.errors import ConcretizationError, DTypeError, FgradError, ShapeError
from fgrad.nn._activations import gelu, silu, softmax
from fgrad.nn.layers import (
    Dropout,
    LayerNorm,
    LayerNormParams,
    Linear,
    LinearParams,
    _checked_params,
    _field_dtype,
    _split,
    _typed_params,
    dropout,
)
from fgrad.ops._rules import broadcasts_to
from fgrad.tensor import Tensor, as_tensor, device_arg

__all__ = [
    "MultiHeadAttention",
    "MultiHeadAttentionParams",
    "RotaryEmbedding",
    "SwiGLU",
    "SwiGLUParams",
    "TransformerBlock",
    "TransformerBlockParams",
    "causal_mask",
    "dot_product_attention",
    "gelu_tanh",
    "padding_mask",
    "rotary_embedding",
    "rotary_tables",
]


def causal_mask(seq_len: int, *, device: Any = None) -> Tensor:
    """The ``(seq_len, seq_len)`` bool mask letting position ``i`` attend to positions ``j <= i``.

    Raises:
        DTypeError: ``seq_len`` is not an int (``2.5`` is not truncated to 2).
        ValueError: ``seq_len`` is negative, or an unknown device.

    Example:
        >>> causal_mask(3)
        Tensor([[ True, False, False],
                [ True,  True, False],
                [ True,  True,  True]], dtype=bool)
    """
    seq_len = _args.size(seq_len, "causal_mask", "seq_len")
    idx = fnp.arange(seq_len, device=device_arg(device, "causal_mask"))
    return fnp.greater_equal(fnp.reshape(idx, (-1, 1)), fnp.reshape(idx, (1, -1)))


def padding_mask(valid: Any) -> Tensor:
    """A ``(batch, 1, 1, seq)`` attention mask from a ``(batch, seq)`` bool "is a real token" Tensor.

    Raises:
        DTypeError: ``valid`` is not numeric.
        ShapeError: ``valid`` is not 2-D.

    Example:
        >>> padding_mask(fnp.array([[True, True, False]])).shape
        (1, 1, 1, 3)
    """
    valid = as_tensor(valid, "padding_mask", "valid")
    shape = tuple(valid.shape)
    if len(shape) != 2:
        raise ShapeError(f"padding_mask: needs a (batch, seq) bool Tensor, got shape {shape}")
    valid = valid if np.dtype(valid.dtype) == np.bool_ else fnp.not_equal(valid, 0)
    return fnp.reshape(valid, (shape[0], 1, 1, shape[1]))


def dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    mask: Any = None,
    dropout_rate: float = 0.0,
    key: Any = None,
    train: bool = False,
) -> Tensor:
    """``softmax(q k^T / sqrt(d_head)) v`` over the last two axes, with an optional mask.

    Args:
        q: ``(..., seq_q, d_head)`` floating Tensor of queries.
        k: ``(..., seq_k, d_head)`` keys.
        v: ``(..., seq_k, d_v)`` values.
        mask: optional bool Tensor broadcastable to ``(..., seq_q, seq_k)``; True = attend.
        dropout_rate: dropout on the attention weights in training.
        key: random key for the dropout (training only).
        train: apply dropout.

    Returns:
        ``(..., seq_q, d_v)`` Tensor.

    Raises:
        ShapeError: ``q``, ``k`` or ``v`` has fewer than 2 dimensions, the feature sizes of
            ``q`` and ``k`` or the lengths of ``k`` and ``v`` differ, or ``mask`` does not
            broadcast to the scores.
        DTypeError: an input is not numeric, ``mask`` is not bool, ``dropout_rate`` not a
            real number or ``train`` not a bool.
        ValueError: ``dropout_rate`` outside ``[0, 1]``; in training with a rate, no key.
        TypeError: ``key`` is not a key.

    Example:
        >>> q = fnp.array([[1.0, 0.0]]); k = fnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> v = fnp.array([[1.0], [3.0]])
        >>> dot_product_attention(q, k, v, mask=fnp.array([[True, False]]))
        Tensor([[1.]], dtype=float64)

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762, eq. 1.
    """
    q, k, v = (as_tensor(t, "dot_product_attention", n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim < 2:
            raise ShapeError(
                f"dot_product_attention: {name} must be (..., seq, features) with at least 2 "
                f"dimensions, got shape {tuple(t.shape)}; add a sequence axis with "
                f"{name}[None] for a single position"
            )
    rate = _args.real(dropout_rate, "dot_product_attention", "dropout_rate")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dot_product_attention: dropout_rate must be in [0, 1], got {rate}")
    train = _args.flag(train, "dot_product_attention", "train")
    if key is not None:
        random._key_data(key, "bernoulli", where="dot_product_attention")
    elif train and rate > 0.0:
        raise ValueError(
            "dot_product_attention: needs a key for dropout in training; pass "
            "key=fgrad.random.key(...)"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"dot_product_attention: q {tuple(q.shape)}, k {tuple(k.shape)} and v "
            f"{tuple(v.shape)} must be (..., seq_q, d), (..., seq_k, d) and (..., seq_k, d_v)"
        )
    scores = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        mask = as_tensor(mask, "dot_product_attention", "mask")
        if not dtypes.is_bool(mask.dtype):
            raise DTypeError(
                f"dot_product_attention: mask must be a bool Tensor (True = attend), got "
                f"dtype {mask.dtype}; compare first, e.g. mask != 0"
            )
        if not broadcasts_to(tuple(mask.shape), tuple(scores.shape)):
            raise ShapeError(
                f"dot_product_attention: mask of shape {tuple(mask.shape)} does not broadcast "
                f"to the scores' shape {tuple(scores.shape)} (..., seq_q, seq_k)"
            )
        scores = fnp.where(mask, scores, float(np.finfo(np.dtype(scores.dtype)).min))
    weights = softmax(scores, axis=-1)
    if train and rate > 0.0:
        weights = dropout(weights, rate, key=key)
    return fnp.matmul(weights, v)


def rotary_tables(
    length: int,
    d_rot: int,
    *,
    base: float = 10000.0,
    inv_freq: Any = None,
    dtype: Any = np.float32,
    device: Any = None,
) -> tuple[Tensor, Tensor]:
    """The cosines and sines of rotary position embeddings for positions ``0 .. length - 1``.

    Pair ``i`` of a head rotates by angle ``p * inv_freq[i]`` at position ``p``, with
    ``inv_freq[i] = base ** (-2 i / d_rot)`` (RoFormer's ``theta_i``) unless ``inv_freq``
    is given (scaled variants compute their own). The angles are formed in float64 and
    rounded once, so long contexts keep their precision. Build the tables once per model
    and gather rows by position (:func:`rotary_embedding`), not per step.

    Args:
        length: number of positions (a Python int).
        d_rot: rotated dimensions of a head (even).
        base: the frequency base.
        inv_freq: optional ``(d_rot // 2,)`` array of real inverse frequencies, replacing
            ``base``'s.
        dtype: the tables' floating dtype (default float32).
        device: where the tables live.

    Returns:
        ``(cos, sin)``, each ``(length, d_rot // 2)`` of ``dtype``.

    Raises:
        DTypeError: ``length`` or ``d_rot`` is not an int, ``base`` not a real number,
            ``inv_freq`` not an array of real numbers, ``dtype`` not a floating dtype.
        ValueError: ``d_rot`` is odd or below 2, ``base`` not positive, ``inv_freq`` not
            finite.
        ShapeError: ``inv_freq`` is not ``(d_rot // 2,)``.

    Example:
        >>> cos, sin = rotary_tables(3, 4, base=100.0)
        >>> fnp.round(sin, 3)
        Tensor([[0.   , 0.   ],
                [0.841, 0.1  ],
                [0.909, 0.199]], dtype=float32)

    References:
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021,
        arXiv:2104.09864, eq. 15.
    """
    name = "rotary_tables"
    length = _args.size(length, name, "length")
    d_rot = _args.size(d_rot, name, "d_rot", minimum=2)
    if d_rot % 2:
        raise ValueError(f"rotary_tables: d_rot must be even (it rotates pairs), got {d_rot}")
    base = _args.real(base, name, "base", above=0.0)
    dtype = _args.dtype(dtype, name, none_ok=False)
    if dtype.kind != "f":
        raise DTypeError(
            f"rotary_tables: dtype must be a floating dtype (cosines and sines), got "
            f"{dtype.name}; pass one such as 'float32'"
        )
    dev = device_arg(device, name)
    if inv_freq is None:
        inv_freq = base ** (-np.arange(0, d_rot, 2, dtype=np.float64) / d_rot)
    else:
        inv_freq = _inv_freq(inv_freq, d_rot)
    if inv_freq.shape != (d_rot // 2,):
        raise ShapeError(
            f"rotary_tables: inv_freq must have shape ({d_rot // 2},) for d_rot={d_rot}, "
            f"got {inv_freq.shape}"
        )
    angles = np.outer(np.arange(length, dtype=np.float64), inv_freq)
    return (
        fnp.asarray(np.cos(angles).astype(dtype), device=dev),
        fnp.asarray(np.sin(angles).astype(dtype), device=dev),
    )


def _inv_freq(inv_freq: Any, d_rot: int) -> np.ndarray:
    """rotary_tables' ``inv_freq`` as a float64 numpy array of finite real numbers."""
    try:
        arr = np.asarray(inv_freq)
    except FgradError:
        raise  # a traced value: its ConcretizationError says what to do
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype.kind not in "iuf":
        raise DTypeError(
            f"rotary_tables: inv_freq must be an array of real numbers, shape "
            f"({d_rot // 2},), got {_args.describe(inv_freq)}"
        )
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError("rotary_tables: inv_freq must be finite, got NaN or infinity in it")
    return arr


def rotary_embedding(x: Any, cos: Any, sin: Any, *, interleaved: bool = False) -> Tensor:
    """Rotate the leading ``2 * cos.shape[-1]`` features of ``x`` by position (RoPE).

    Each pair ``(a, b)`` of features becomes ``(a cos - b sin, a sin + b cos)``. The pairs
    are the two halves ``(i, i + d_rot / 2)`` (GPT-NeoX's and Hugging Face's layout) or,
    with ``interleaved``, adjacent features ``(2 i, 2 i + 1)`` (the RoFormer paper's and
    Meta's original llama layout, kept in llama GGUF files). Features past ``d_rot`` pass
    through unchanged (partial rotary). Query-key products then depend only on the
    positions' difference.

    Args:
        x: ``(..., seq, d_head)`` floating Tensor (e.g. ``(batch, n_heads, seq, d_head)``).
        cos: cosines broadcastable to ``(..., seq, d_rot // 2)``, rows gathered from
            :func:`rotary_tables` at each token's position.
        sin: sines of the same shape.
        interleaved: rotate adjacent pairs instead of halves.

    Returns:
        Tensor of ``x``'s shape and dtype.

    Raises:
        ShapeError: ``2 * cos.shape[-1]`` exceeds ``x``'s last axis, ``cos`` and ``sin``
            differ in shape, or they do not broadcast to ``(..., seq, d_rot // 2)`` of ``x``.
        DTypeError: ``x`` is not floating, ``cos`` or ``sin`` not real, ``interleaved``
            not a bool.

    Example:
        >>> cos, sin = rotary_tables(2, 2, base=10.0)
        >>> x = fnp.array([[1.0, 0.0], [1.0, 0.0]])  # (seq, d_head): positions 0 and 1
        >>> fnp.round(rotary_embedding(x, cos, sin), 4)
        Tensor([[1.    , 0.    ],
                [0.5403, 0.8415]], dtype=float64)

    References:
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021,
        arXiv:2104.09864, eq. 34.
    """
    x = as_tensor(x, "rotary_embedding", "x")
    cos = as_tensor(cos, "rotary_embedding", "cos")
    sin = as_tensor(sin, "rotary_embedding", "sin")
    interleaved = _args.flag(interleaved, "rotary_embedding", "interleaved")
    if np.dtype(x.dtype).kind not in "fc":
        raise DTypeError(
            f"rotary_embedding: x must be floating, got {_args.describe(x)}; cast it "
            "(x.astype('float32'))"
        )
    for arg, t in (("cos", cos), ("sin", sin)):
        if np.dtype(t.dtype).kind not in "iuf":
            raise DTypeError(
                f"rotary_embedding: {arg} must be real (the tables of rotary_tables), got "
                f"{_args.describe(t)}"
            )
    if tuple(cos.shape) != tuple(sin.shape):
        raise ShapeError(
            f"rotary_embedding: cos {tuple(cos.shape)} and sin {tuple(sin.shape)} differ in shape"
        )
    if x.ndim < 1 or cos.ndim < 1:
        raise ShapeError("rotary_embedding: x and the tables need a feature axis")
    half = cos.shape[-1]
    d = x.shape[-1]
    if 2 * half > d:
        raise ShapeError(
            f"rotary_embedding: tables of {half} pairs rotate {2 * half} features, but x has "
            f"{d} (shape {tuple(x.shape)})"
        )
    target = (*x.shape[:-1], half)
    if not broadcasts_to(tuple(cos.shape), target):
        raise ShapeError(
            f"rotary_embedding: tables of shape {tuple(cos.shape)} do not broadcast to "
            f"{target}, x's (..., seq, d_rot // 2) for x of shape {tuple(x.shape)}; gather "
            "the tables' rows at the positions of x's sequence axis"
        )
    cos, sin = fnp.astype(cos, x.dtype), fnp.astype(sin, x.dtype)
    rot = x[..., : 2 * half] if 2 * half < d else x
    if interleaved:
        pairs = fnp.reshape(rot, (*rot.shape[:-1], half, 2))
        a, b = pairs[..., 0], pairs[..., 1]
        out = fnp.reshape(
            fnp.stack([a * cos - b * sin, a * sin + b * cos], axis=-1), tuple(rot.shape)
        )
    else:
        a, b = rot[..., :half], rot[..., half:]
        out = fnp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    return out if 2 * half == d else fnp.concatenate([out, x[..., 2 * half :]], axis=-1)


def gelu_tanh(x: Any) -> Tensor:
    """GELU with the tanh approximation (GPT-2's MLP activation and JAX's default ``gelu``).

    Example:
        >>> gelu_tanh(fnp.array([1.0]))
        Tensor([0.84119199], dtype=float64)
    """
    return gelu(as_tensor(x, "gelu_tanh", "x"), approximate=True)


@_typed_params
class MultiHeadAttentionParams(NamedTuple):
    """Parameters of :class:`MultiHeadAttention` (fields in alphabetical order, as the
    leaves flatten).

    Attributes:
        out: :class:`~fgrad.nn.LinearParams` of the ``(d_model, d_model)`` output projection.
        qkv: :class:`~fgrad.nn.LinearParams` of the fused ``(d_model, 3 * d_model)``
            query, key and value projection.

    Example:
        >>> MultiHeadAttention(8, 2).init(fgrad.random.key(0)).qkv.weight.shape
        (8, 24)
    """

    out: LinearParams
    qkv: LinearParams


@_typed_params
class TransformerBlockParams(NamedTuple):
    """Parameters of :class:`TransformerBlock` (fields in alphabetical order, as the leaves
    flatten).

    Attributes:
        attn: :class:`MultiHeadAttentionParams` of the self-attention.
        mlp_in: :class:`~fgrad.nn.LinearParams` of the MLP's first layer.
        mlp_out: :class:`~fgrad.nn.LinearParams` of the MLP's second layer.
        norm1: :class:`~fgrad.nn.LayerNormParams` before the attention.
        norm2: :class:`~fgrad.nn.LayerNormParams` before the MLP.

    Example:
        >>> TransformerBlock(8, 2).init(fgrad.random.key(0)).mlp_in.weight.shape
        (8, 32)
    """

    attn: MultiHeadAttentionParams
    mlp_in: LinearParams
    mlp_out: LinearParams
    norm1: LayerNormParams
    norm2: LayerNormParams


def _and(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else fnp.logical_and(a, b)


@dataclass(frozen=True)
class MultiHeadAttention:
    """Multi-head self-attention over ``(batch, seq, d_model)`` inputs.

    The queries, keys and values come from one fused ``(d_model, 3 * d_model)`` projection
    (one matrix product instead of three); ``n_heads`` heads of ``d_head = d_model //
    n_heads`` attend in parallel and an output projection mixes them.

    Attributes:
        d_model: model width; divisible by ``n_heads``.
        n_heads: number of heads.
        causal: each position attends only to itself and earlier positions.
        dropout_rate: dropout on the attention weights in training.
        use_bias: projections add biases.
        param_dtype: dtype of the parameters (default float32).

    Params:
        :class:`MultiHeadAttentionParams`: ``qkv``, the params of ``Linear(d_model, 3 *
        d_model)``, and ``out``, those of ``Linear(d_model, d_model)``.

    ``apply(params, x, *, mask=None, key=None, train=False)``: ``x`` is ``(batch, seq,
    d_model)``; ``mask`` an optional bool Tensor broadcastable to ``(batch, n_heads, seq,
    seq)`` (see :func:`padding_mask`), combined with the causal mask. Returns ``(batch,
    seq, d_model)``.

    Raises:
        ValueError: ``d_model`` is not divisible by ``n_heads``; a size below 1, or
            ``dropout_rate`` outside ``[0, 1]``.
        DTypeError: a size is not an int, a flag not a bool, ``dropout_rate`` not a real
            number, or ``param_dtype`` not a floating dtype.
        ShapeError: ``x`` is not ``(batch, seq, d_model)``.

    Example:
        >>> mha = MultiHeadAttention(8, 2, causal=True)
        >>> params = mha.init(fgrad.random.key(0))
        >>> mha.apply(params, fnp.ones((2, 5, 8), dtype="float32")).shape
        (2, 5, 8)

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762,
        section 3.2.2.
    """

    d_model: int
    n_heads: int
    causal: bool = False
    dropout_rate: float = 0.0
    use_bias: bool = True
    param_dtype: Any = np.float32

    def __post_init__(self):
        _args.size(self.d_model, "MultiHeadAttention", "d_model", minimum=1)
        _args.size(self.n_heads, "MultiHeadAttention", "n_heads", minimum=1)
        _args.flag(self.causal, "MultiHeadAttention", "causal")
        _rate(self.dropout_rate, "MultiHeadAttention")
        _args.flag(self.use_bias, "MultiHeadAttention", "use_bias")
        _field_dtype(self.param_dtype, "MultiHeadAttention")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"MultiHeadAttention: d_model={self.d_model} is not divisible by n_heads={self.n_heads}"
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def init(self, key: Any) -> MultiHeadAttentionParams:
        k1, k2 = _split(key, 2)
        d = self.d_model
        return MultiHeadAttentionParams(
            out=Linear(d, d, self.use_bias, self.param_dtype).init(k2),
            qkv=Linear(d, 3 * d, self.use_bias, self.param_dtype).init(k1),
        )

    def apply(
        self,
        params: MultiHeadAttentionParams,
        x: Any,
        *,
        mask: Any = None,
        key: Any = None,
        train: bool = False,
    ) -> Tensor:
        params = _checked_params(params, MultiHeadAttentionParams, "MultiHeadAttention")
        shape = tuple(x.shape)
        if len(shape) != 3 or shape[2] != self.d_model:
            raise ShapeError(
                f"MultiHeadAttention: input must be (batch, seq, d_model={self.d_model}), got {shape}"
            )
        batch, seq, d = shape
        h, dh = self.n_heads, self.d_head
        qkv = Linear(d, 3 * d, self.use_bias).apply(params.qkv, x)
        # (batch, seq, 3, heads, d_head) -> (3, batch, heads, seq, d_head)
        qkv = fnp.permute_dims(fnp.reshape(qkv, (batch, seq, 3, h, dh)), (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        if mask is not None:
            _check_mask(tuple(mask.shape), (batch, h, seq, seq))
        if self.causal:
            mask = _and(causal_mask(seq, device=_device(x)), mask)
        out = dot_product_attention(
            q, k, v, mask=mask, dropout_rate=self.dropout_rate, key=key, train=train
        )
        out = fnp.reshape(fnp.permute_dims(out, (0, 2, 1, 3)), (batch, seq, d))
        return Linear(d, d, self.use_bias).apply(params.out, out)


def _rate(rate: Any, layer: str) -> None:
    if not 0.0 <= _args.real(rate, layer, "dropout_rate") <= 1.0:
        raise ValueError(f"{layer}: dropout_rate must be in [0, 1], got {rate}")


def _check_mask(shape: tuple, scores: tuple) -> None:
    if not broadcasts_to(shape, scores):
        raise ShapeError(
            f"MultiHeadAttention: mask of shape {shape} does not broadcast to the attention "
            f"scores (batch, n_heads, seq, seq) = {scores}; for a (batch, seq) 'is a real "
            "token' mask use padding_mask(valid)"
        )


def _device(x: Any) -> Any:
    try:
        return x.device
    except ConcretizationError:  # an abstract tracer has no device; the default one will do
        return None


def _init_layers(layers: dict, key: Any, cls: type) -> Any:
    """``cls`` of each named sub-layer's params, one key each, split in ``layers``' order."""
    keys = dict(zip(layers, _split(key, len(layers))))
    return cls(**{name: layer.init(keys[name]) for name, layer in layers.items()})


@dataclass(frozen=True)
class TransformerBlock:
    """A pre-norm transformer block: ``x + attn(norm(x))``, then ``h + mlp(norm(h))``.

    The MLP is ``Linear(d_model, mlp_ratio * d_model) -> activation -> Linear(...,
    d_model)``. Normalising before each sub-layer (rather than after, as the original
    paper) is the GPT-2 arrangement, which trains stably without warm-up tricks.

    Attributes:
        d_model: model width.
        n_heads: attention heads; divides ``d_model``.
        mlp_ratio: hidden width of the MLP as a multiple of ``d_model`` (default 4).
        causal: causal self-attention (for language models).
        dropout_rate: dropout on attention weights and on each residual branch, in training.
        activation: the MLP's activation (default :func:`gelu_tanh`, GPT-2's tanh
            approximation of GELU; pass ``fgrad.nn.gelu`` for the exact, slower form).
        eps: the layer norms' epsilon.
        param_dtype: dtype of the parameters (default float32).

    Params:
        :class:`TransformerBlockParams`: ``norm1``, ``attn``, ``norm2``, ``mlp_in`` and
        ``mlp_out``, the sub-layers' params.

    ``apply(params, x, *, mask=None, key=None, train=False)`` maps ``(batch, seq,
    d_model)`` to the same shape.

    Raises:
        ValueError: ``d_model`` is not divisible by ``n_heads``; a size below 1, a
            ``mlp_ratio`` that is not positive, a negative ``eps``, or ``dropout_rate``
            outside ``[0, 1]``.
        DTypeError: a size is not an int, a flag not a bool, a number not a real number,
            ``activation`` not callable, or ``param_dtype`` not a floating dtype.

    Example:
        >>> block = TransformerBlock(16, 4, causal=True)
        >>> params = block.init(fgrad.random.key(0))
        >>> block.apply(params, fnp.ones((2, 6, 16), dtype="float32")).shape
        (2, 6, 16)

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762;
        Radford et al., "Language Models are Unsupervised Multitask Learners" (GPT-2), 2019,
        section 2.3 (pre-norm); Xiong et al., "On Layer Normalization in the Transformer
        Architecture", ICML 2020.
    """

    d_model: int
    n_heads: int
    mlp_ratio: float = 4
    causal: bool = False
    dropout_rate: float = 0.0
    activation: Any = gelu_tanh
    eps: float = 1e-5
    param_dtype: Any = np.float32

    def __post_init__(self):
        name = "TransformerBlock"
        _args.size(self.d_model, name, "d_model", minimum=1)
        _args.size(self.n_heads, name, "n_heads", minimum=1)
        _args.real(self.mlp_ratio, name, "mlp_ratio", above=0.0)
        _args.flag(self.causal, name, "causal")
        _rate(self.dropout_rate, name)
        _args.function(self.activation, name, "activation")
        _args.real(self.eps, name, "eps", minimum=0.0)
        _field_dtype(self.param_dtype, name)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"{name}: d_model={self.d_model} is not divisible by n_heads={self.n_heads}"
            )
        if round(self.mlp_ratio * self.d_model) < 1:
            raise ValueError(
                f"{name}: the MLP's hidden width round(mlp_ratio * d_model) = "
                f"{round(self.mlp_ratio * self.d_model)} must be >= 1"
            )

    @property
    def _hidden(self) -> int:
        return round(self.mlp_ratio * self.d_model)

    def _layers(self):
        d, pd = self.d_model, self.param_dtype
        return {
            "norm1": LayerNorm(d, self.eps, param_dtype=pd),
            "attn": MultiHeadAttention(
                d, self.n_heads, self.causal, self.dropout_rate, param_dtype=pd
            ),
            "norm2": LayerNorm(d, self.eps, param_dtype=pd),
            "mlp_in": Linear(d, self._hidden, param_dtype=pd),
            "mlp_out": Linear(self._hidden, d, param_dtype=pd),
        }

    def init(self, key: Any) -> TransformerBlockParams:
        # Keys are split in the sub-layers' order of application (norm1, attn, ...), as
        # before the params were typed, so a seed gives the same initial values.
        return _init_layers(self._layers(), key, TransformerBlockParams)

    def apply(
        self,
        params: TransformerBlockParams,
        x: Any,
        *,
        mask: Any = None,
        key: Any = None,
        train: bool = False,
    ) -> Tensor:
        p = _checked_params(params, TransformerBlockParams, "TransformerBlock")
        layers = self._layers()
        k_attn, k_drop1, k_drop2 = _split(key if train else None, 3)
        drop = Dropout(self.dropout_rate)
        h = layers["attn"].apply(
            p.attn, layers["norm1"].apply(p.norm1, x), mask=mask, key=k_attn, train=train
        )
        x = x + drop.apply((), h, key=k_drop1, train=train)
        h = layers["mlp_in"].apply(p.mlp_in, layers["norm2"].apply(p.norm2, x))
        h = layers["mlp_out"].apply(p.mlp_out, self.activation(h))
        return x + drop.apply((), h, key=k_drop2, train=train)


@dataclass(frozen=True)
class RotaryEmbedding:
    """Rotary position embedding as a layer (no parameters): :func:`rotary_embedding` with
    the angles of :func:`rotary_tables`.

    ``apply((), x, *, positions=None)`` rotates the leading ``d_rot`` features of each
    head of ``x`` (``(..., seq, d_head)``) by its position: ``0 .. seq - 1`` when
    ``positions`` is None (the tables come from :func:`rotary_tables`, built at trace
    time), otherwise the integer ``positions``, of a shape broadcastable to
    ``x.shape[:-1]`` (``(seq,)``, or ``(batch, 1, seq)`` for ``(batch, n_heads, seq,
    d_head)`` with per-example offsets, as a KV-cached decoder needs). The angles of given
    positions are formed in float64 from the same frequencies and rounded once, so they
    equal the tables' rows.

    Attributes:
        d_rot: rotated features of a head (even, at most ``d_head``).
        base: the frequency base (``inv_freq[i] = base ** (-2 i / d_rot)``).
        interleaved: rotate adjacent pairs instead of halves (see :func:`rotary_embedding`).

    Raises:
        DTypeError: ``d_rot`` not an int, ``base`` not a real number, ``interleaved`` not
            a bool; in ``apply``, ``positions`` not integers or ``x`` not floating.
        ValueError: ``d_rot`` odd or below 2, ``base`` not positive.
        ShapeError: in ``apply``, ``d_rot`` exceeds ``x``'s last axis, or ``positions``
            does not broadcast to ``x.shape[:-1]``.

    Example:
        >>> rope = RotaryEmbedding(2, base=10.0)
        >>> x = fnp.array([[1.0, 0.0], [1.0, 0.0]])  # (seq, d_head)
        >>> fnp.round(rope.apply((), x), 4)
        Tensor([[1.    , 0.    ],
                [0.5403, 0.8415]], dtype=float64)
        >>> fnp.round(rope.apply((), x, positions=fnp.array([1, 1])), 4)
        Tensor([[0.5403, 0.8415],
                [0.5403, 0.8415]], dtype=float64)

    References:
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021,
        arXiv:2104.09864, eq. 34.
    """

    d_rot: int
    base: float = 10000.0
    interleaved: bool = False

    def __post_init__(self):
        d_rot = _args.size(self.d_rot, "RotaryEmbedding", "d_rot", minimum=2)
        if d_rot % 2:
            raise ValueError(f"RotaryEmbedding: d_rot must be even (it rotates pairs), got {d_rot}")
        _args.real(self.base, "RotaryEmbedding", "base", above=0.0)
        _args.flag(self.interleaved, "RotaryEmbedding", "interleaved")

    def init(self, key: Any) -> tuple:
        return ()

    def apply(
        self, params: tuple, x: Any, *, positions: Any = None, key: Any = None, train: bool = False
    ) -> Tensor:
        name = "RotaryEmbedding.apply"
        x = as_tensor(x, name, "x")
        if x.ndim < 2 or np.dtype(x.dtype).kind not in "fc":
            raise (ShapeError if x.ndim < 2 else DTypeError)(
                f"{name}: x must be a floating (..., seq, d_head) Tensor, got "
                f"{_args.describe(x)}"
            )
        dtype = np.dtype(x.dtype) if np.dtype(x.dtype).kind == "f" else np.float64
        if positions is None:
            cos, sin = rotary_tables(
                x.shape[-2], self.d_rot, base=self.base, dtype=dtype, device=_device(x)
            )
        else:
            positions = as_tensor(positions, name, "positions")
            if not dtypes.is_integer(np.dtype(positions.dtype)):
                raise DTypeError(
                    f"{name}: positions must be an integer Tensor, got "
                    f"{_args.describe(positions)}"
                )
            if not broadcasts_to(tuple(positions.shape), tuple(x.shape[:-1])):
                raise ShapeError(
                    f"{name}: positions of shape {tuple(positions.shape)} do not broadcast "
                    f"to x.shape[:-1] = {tuple(x.shape[:-1])}"
                )
            inv_freq = self.base ** (-np.arange(0, self.d_rot, 2, dtype=np.float64) / self.d_rot)
            angles = fnp.astype(positions, np.float64)[..., None] * inv_freq
            cos = fnp.astype(fnp.cos(angles), dtype)
            sin = fnp.astype(fnp.sin(angles), dtype)
        return rotary_embedding(x, cos, sin, interleaved=self.interleaved)


@_typed_params
class SwiGLUParams(NamedTuple):
    """Parameters of :class:`SwiGLU` (fields in alphabetical order, as the leaves flatten).

    Attributes:
        down: :class:`~fgrad.nn.LinearParams` of the ``(d_hidden, d_model)`` output projection.
        gate: :class:`~fgrad.nn.LinearParams` of the ``(d_model, d_hidden)`` gate projection.
        up: :class:`~fgrad.nn.LinearParams` of the ``(d_model, d_hidden)`` value projection.

    Example:
        >>> SwiGLU(4, 6).init(fgrad.random.key(0)).down.weight.shape
        (6, 4)
    """

    down: LinearParams
    gate: LinearParams
    up: LinearParams


@dataclass(frozen=True)
class SwiGLU:
    """The SwiGLU feed-forward block: ``down(silu(gate(x)) * up(x))``.

    Shazeer's ``FFN_SwiGLU(x) = (Swish_1(x W) * x V) W_2``, the MLP of PaLM and llama,
    with ``silu = Swish_1`` and no biases by default (as the paper). At equal parameter
    count with a two-matrix MLP of width ``4 * d_model``, ``d_hidden`` is ``8 * d_model /
    3`` (the paper's choice).

    Attributes:
        d_model: input and output width.
        d_hidden: width of the gated hidden layer.
        use_bias: the three projections add biases.
        param_dtype: dtype of the parameters (default float32).

    Params:
        :class:`SwiGLUParams`: ``gate`` and ``up`` (``Linear(d_model, d_hidden)``) and
        ``down`` (``Linear(d_hidden, d_model)``).

    Input ``(..., d_model)``; output ``(..., d_model)``.

    Raises:
        DTypeError: a size is not an int, ``use_bias`` not a bool, ``param_dtype`` not a
            floating dtype.
        ValueError: a size below 1.
        ShapeError: the input's last axis is not ``d_model`` (from ``matmul``).

    Example:
        >>> mlp = SwiGLU(8, 16)
        >>> params = mlp.init(fgrad.random.key(0))
        >>> mlp.apply(params, fnp.ones((2, 5, 8), dtype="float32")).shape
        (2, 5, 8)

    References:
        Shazeer, "GLU Variants Improve Transformer", 2020, arXiv:2002.05202, eq. 6.
    """

    d_model: int
    d_hidden: int
    use_bias: bool = False
    param_dtype: Any = np.float32

    def __post_init__(self):
        _args.size(self.d_model, "SwiGLU", "d_model", minimum=1)
        _args.size(self.d_hidden, "SwiGLU", "d_hidden", minimum=1)
        _args.flag(self.use_bias, "SwiGLU", "use_bias")
        _field_dtype(self.param_dtype, "SwiGLU")

    def _layers(self) -> dict:
        d, h, b, pd = self.d_model, self.d_hidden, self.use_bias, self.param_dtype
        return {"gate": Linear(d, h, b, pd), "up": Linear(d, h, b, pd), "down": Linear(h, d, b, pd)}

    def init(self, key: Any) -> SwiGLUParams:
        return _init_layers(self._layers(), key, SwiGLUParams)

    def apply(
        self, params: SwiGLUParams, x: Any, *, key: Any = None, train: bool = False
    ) -> Tensor:
        p = _checked_params(params, SwiGLUParams, "SwiGLU")
        layers = self._layers()
        hidden = silu(layers["gate"].apply(p.gate, x)) * layers["up"].apply(p.up, x)
        return layers["down"].apply(p.down, hidden)
