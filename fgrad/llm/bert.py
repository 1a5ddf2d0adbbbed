"""BERT-family encoders and sentence embeddings by mean pooling, from Hugging Face folders.

``BertEncoder(config).apply(params, tokens, mask) -> (batch, seq, d_model)`` is BERT's
encoder as a stateless function of a parameter pytree: the sum of word, position and
token-type embeddings, LayerNorm, then post-LN layers ``x = norm(x + attention(x))``,
``x = norm(x + down(act(up(x))))``, the attention masked to the real (non-padding)
tokens. :class:`BertModel` binds an encoder to its parameters and is a pytree (``grad``
differentiates it, ``jit`` takes it as an argument); :func:`mean_pool` averages the
hidden states over the real tokens (sentence-transformers' mean pooling), and
:class:`SentenceEncoder` adds the tokenizer: ``encode(texts) -> (batch, d_model)``.

The parameter pytree (linear weights ``(out_features, in_features)`` as PyTorch stores
them; the product is ``x @ w.T + b``)::

    {"embeddings": {"word": (vocab_size, d_model), "position": (max_positions, d_model),
                    "token_type": (type_vocab_size, d_model),
                    "norm_scale", "norm_bias": (d_model,)},
     "layers": [{"wq", "wk", "wv", "wo": (d_model, d_model), "bq", "bk", "bv", "bo": (d_model,),
                 "attn_norm_scale", "attn_norm_bias": (d_model,),
                 "w_up": (d_ff, d_model), "b_up": (d_ff,), "w_down": (d_model, d_ff),
                 "b_down": (d_model,), "ffn_norm_scale", "ffn_norm_bias": (d_model,)}, ...],
     "pooler": {"w": (d_model, d_model), "b": (d_model,)}}    # when the checkpoint has one

Hugging Face names (``embeddings.word_embeddings.weight``,
``encoder.layer.{i}.attention.self.query.weight``, ..., with or without the ``bert.``
prefix of ``BertForMaskedLM`` and friends, whose heads are ignored) map onto it in
:func:`from_tensors`. ``model_type`` ``"bert"`` and the RoBERTa family (``"roberta"``,
``"xlm-roberta"``, ``"camembert"``) are read: RoBERTa has BERT's layers but numbers the
positions of the real tokens from ``padding_idx + 1`` (a padding token sits at position
``padding_idx``; transformers' ``create_position_ids_from_input_ids``), has one token type
and names its tensors ``roberta.*``. DistilBERT names its layers differently and ELECTRA
projects its embeddings: they are refused, saying so.

Example:
    >>> cfg = BertConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=4, d_ff=32)
    >>> model = BertEncoder(cfg).bind(BertEncoder(cfg).init(fgrad.random.key(0)))
    >>> tokens = fnp.array([[2, 7, 9, 3], [2, 5, 3, 0]])
    >>> mask = fnp.array([[1, 1, 1, 1], [1, 1, 1, 0]]) == 1
    >>> model(tokens, mask).shape, model.embed(tokens, mask).shape
    ((2, 4, 16), (2, 16))

References:
    Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language
    Understanding", NAACL 2019, arXiv:1810.04805 (the encoder, section 3); Vaswani et al.,
    "Attention Is All You Need", 2017, arXiv:1706.03762 (post-LN layers); Reimers and
    Gurevych, "Sentence-BERT", EMNLP 2019, arXiv:1908.10084 (mean pooling, section 3).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import random, tree
from fgrad.errors import ShapeError
from fgrad.llm.config import UnsupportedModelError
from fgrad.nn import dot_product_attention, gelu, layer_norm, relu
from fgrad.tensor import Tensor

__all__ = [
    "ACTIVATIONS",
    "MODEL_TYPES",
    "BertConfig",
    "BertEncoder",
    "BertModel",
    "SentenceEncoder",
    "from_tensors",
    "load",
    "to_tensors",
    "load_encoder",
    "mean_pool",
    "save",
    "l2_normalize",
]

ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")
"""The ``hidden_act`` values run: ``gelu`` is the exact erf form (BERT's); ``gelu_new``
and ``gelu_pytorch_tanh`` are transformers' names of the tanh approximation."""

MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "camembert")
"""The ``model_type`` values read; all but ``"bert"`` number positions as RoBERTa does."""

_ARCHITECTURES = {"bert": "BertModel", "roberta": "RobertaModel",
                  "xlm-roberta": "XLMRobertaModel", "camembert": "CamembertModel"}

# Model types with BERT's layer layout that this module does not read, and why.
_RELATIVES = {
    "distilbert": "names its layers transformer.layer.{i}.attention.q_lin and has no token types",
    "electra": "projects its embeddings to another width",
}


class _Required:
    """Marks a config.json key without a default."""


def _act(name: str, x: Tensor) -> Tensor:
    if name == "relu":
        return relu(x)
    if np.dtype(x.dtype) == np.float16:
        # float16 activations are widened for GELU and rounded once: erfc's float16 kernel
        # overflows for |x| near 3 to 4 (NaN), and PyTorch's CPU GELU computes in float32 too
        return fnp.astype(_act(name, fnp.astype(x, np.float32)), np.float16)
    return gelu(x) if name == "gelu" else gelu(x, approximate="tanh")


@dataclass(frozen=True)
class BertConfig:
    """Sizes and numerics of a BERT encoder, from a Hugging Face ``config.json``.

    Attributes:
        vocab_size: number of tokens.
        d_model: hidden width (``hidden_size``).
        n_layers: encoder layers (``num_hidden_layers``).
        n_heads: attention heads (``num_attention_heads``); ``d_head = d_model / n_heads``.
        d_ff: width of the feed-forward layer (``intermediate_size``).
        max_positions: rows of the position table (``max_position_embeddings``): the
            longest input.
        type_vocab_size: rows of the token-type (segment) table.
        norm_eps: every LayerNorm's epsilon (``layer_norm_eps``; BERT's is 1e-12).
        hidden_act: the feed-forward activation, one of :data:`ACTIVATIONS`.
        pad_token_id: the id that pads a batch (``pad_token_id``; for BERT any id works,
            the mask hides it; for RoBERTa it is also ``padding_idx``, which sets the
            positions).
        model_type: one of :data:`MODEL_TYPES`: ``"bert"`` numbers positions ``0, 1, ...``;
            the RoBERTa family from ``pad_token_id + 1`` over the non-padding tokens.

    Raises:
        ValueError: a size is not a positive int, ``d_model`` is not a multiple of
            ``n_heads``, or ``norm_eps`` is negative.
        UnsupportedModelError: ``hidden_act`` is not one of :data:`ACTIVATIONS`, or
            ``model_type`` not one of :data:`MODEL_TYPES`.
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_positions: int = 512
    type_vocab_size: int = 2
    norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    pad_token_id: int = 0
    model_type: str = "bert"

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_positions",
                     "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BertConfig: {name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"BertConfig: d_model={self.d_model} is not a multiple of n_heads={self.n_heads}"
            )
        if not self.norm_eps >= 0:
            raise ValueError(f"BertConfig: norm_eps must be >= 0, got {self.norm_eps!r}")
        if self.hidden_act not in ACTIVATIONS:
            raise UnsupportedModelError(
                f"BertConfig: hidden_act {self.hidden_act!r} is not supported; supported: "
                f"{', '.join(ACTIVATIONS)}"
            )
        if self.model_type not in MODEL_TYPES:
            raise UnsupportedModelError(
                f"BertConfig: model_type {self.model_type!r} is not supported; supported: "
                f"{', '.join(MODEL_TYPES)}"
            )
        if self.roberta_positions and not 0 <= self.pad_token_id < self.max_positions - 1:
            raise ValueError(
                f"BertConfig: a {self.model_type} model numbers positions from pad_token_id + "
                f"1 = {self.pad_token_id + 1}, beyond its {self.max_positions} positions"
            )

    @property
    def roberta_positions(self) -> bool:
        """Positions count the non-padding tokens from ``pad_token_id + 1`` (RoBERTa's rule)."""
        return self.model_type != "bert"

    @property
    def max_length(self) -> int:
        """The longest input in tokens: the position table's rows, less RoBERTa's offset."""
        return self.max_positions - (self.pad_token_id + 1 if self.roberta_positions else 0)

    @property
    def d_head(self) -> int:
        """Width of one attention head."""
        return self.d_model // self.n_heads

    def replace(self, **changes: Any) -> BertConfig:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return replace(self, **changes)

    def to_hf(self) -> dict[str, Any]:
        """This config as a Hugging Face ``config.json`` dict (what :meth:`from_hf` reads back).

        Example:
            >>> cfg = BertConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=4, d_ff=32)
            >>> BertConfig.from_hf(cfg.to_hf()) == cfg
            True
        """
        return {
            "model_type": self.model_type,
            "architectures": [_ARCHITECTURES[self.model_type]],
            "vocab_size": self.vocab_size,
            "hidden_size": self.d_model,
            "num_hidden_layers": self.n_layers,
            "num_attention_heads": self.n_heads,
            "intermediate_size": self.d_ff,
            "max_position_embeddings": self.max_positions,
            "type_vocab_size": self.type_vocab_size,
            "layer_norm_eps": self.norm_eps,
            "hidden_act": self.hidden_act,
            "pad_token_id": self.pad_token_id,
            "position_embedding_type": "absolute",
        }

    @classmethod
    def from_hf(cls, config: Mapping[str, Any]) -> BertConfig:
        """The config of a Hugging Face BERT ``config.json`` (a dict).

        Raises:
            UnsupportedModelError: ``model_type`` is not one of :data:`MODEL_TYPES` (a
                relative such as ``"distilbert"`` is named with what differs),
                ``position_embedding_type`` is
                not ``"absolute"``, the model is a decoder, or ``hidden_act`` is not one of
                :data:`ACTIVATIONS`.
            KeyError: a required key is missing (named).

        Example:
            >>> cfg = BertConfig.from_hf({"model_type": "bert", "vocab_size": 30522,
            ...     "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
            ...     "intermediate_size": 1536})
            >>> cfg.d_head, cfg.norm_eps, cfg.hidden_act
            (32, 1e-12, 'gelu')
            >>> BertConfig.from_hf({"model_type": "distilbert"})
            Traceback (most recent call last):
            ...
            fgrad.llm.config.UnsupportedModelError: config.json: model_type 'distilbert' is not read by fgrad.llm.bert: it has BERT's layers but names its layers transformer.layer.{i}.attention.q_lin and has no token types; supported: bert, roberta, xlm-roberta, camembert
        """
        model_type = config.get("model_type")
        if model_type not in MODEL_TYPES:
            if model_type in _RELATIVES:
                why = f"it has BERT's layers but {_RELATIVES[model_type]}"
            elif model_type in ("llama", "mistral", "qwen2"):
                why = "it is a decoder language model: load it with fgrad.llm.load"
            else:
                why = "it is not a BERT encoder"
            raise UnsupportedModelError(
                f"config.json: model_type {model_type!r} is not read by fgrad.llm.bert: {why}; "
                f"supported: {', '.join(MODEL_TYPES)}"
            )
        kind = config.get("position_embedding_type", "absolute")
        if kind != "absolute":
            raise UnsupportedModelError(
                f"config.json: position_embedding_type {kind!r} is not supported; supported: "
                "absolute"
            )
        if config.get("is_decoder") or config.get("add_cross_attention"):
            raise UnsupportedModelError(
                "config.json: a BERT decoder (is_decoder / add_cross_attention) is not "
                "supported; fgrad.llm.bert runs the bidirectional encoder"
            )

        def get(key: str, default: Any = _Required) -> Any:
            if key in config and config[key] is not None:
                return config[key]
            if default is _Required:
                raise KeyError(f"config.json: {key!r} is missing for a {model_type} model")
            return default

        act = get("hidden_act", "gelu")
        if not isinstance(act, str) or act not in ACTIVATIONS:
            raise UnsupportedModelError(
                f"config.json: hidden_act {act!r} is not supported; supported: "
                f"{', '.join(ACTIVATIONS)}"
            )
        return cls(
            vocab_size=int(get("vocab_size")),
            d_model=int(get("hidden_size")),
            n_layers=int(get("num_hidden_layers")),
            n_heads=int(get("num_attention_heads")),
            d_ff=int(get("intermediate_size")),
            max_positions=int(get("max_position_embeddings", 512)),
            type_vocab_size=int(get("type_vocab_size", 2)),
            norm_eps=float(get("layer_norm_eps", 1e-12)),
            hidden_act=act,
            pad_token_id=int(get("pad_token_id", 0 if model_type == "bert" else 1)),
            model_type=model_type,
        )


def _linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return fnp.matmul(x, fnp.matrix_transpose(w)) + b


def _mask_of(mask: Any, shape: tuple, where: str) -> Tensor:
    """A (batch, seq) bool "real token" Tensor from a bool or 0/1 mask (as HF's attention_mask)."""
    mask = mask if hasattr(mask, "shape") else fnp.asarray(mask)
    if tuple(mask.shape) != shape:
        raise ShapeError(
            f"{where}: mask must have the tokens' shape {shape} (True or 1 = a real token), "
            f"got {tuple(mask.shape)}"
        )
    return mask if np.dtype(mask.dtype) == np.bool_ else fnp.not_equal(mask, 0)


@dataclass(frozen=True, eq=False)
class BertEncoder:
    """A BERT encoder: ``apply(params, tokens, mask) -> (batch, seq, d_model)`` hidden states.

    Attributes:
        config: the :class:`BertConfig`.
    """

    config: BertConfig

    def init(
        self, key: Any, *, dtype: Any = np.float32, scale: float = 0.02, pooler: bool = True
    ) -> dict:
        """Random parameters (normal, std ``scale``; biases zero, LayerNorm scales one).

        Returns:
            The parameter pytree of the module docstring, of ``dtype``.
        """
        c = self.config
        keys = iter(random.split(key, 4 + 6 * c.n_layers))

        def normal(*shape):
            return fnp.astype(random.normal(next(keys), shape) * scale, dtype)

        def const(n, value):
            return fnp.full((n,), value, dtype=dtype)

        d = c.d_model
        params: dict = {
            "embeddings": {"word": normal(c.vocab_size, d), "position": normal(c.max_positions, d),
                           "token_type": normal(c.type_vocab_size, d),
                           "norm_scale": const(d, 1.0), "norm_bias": const(d, 0.0)},
            "layers": [],
        }
        for _ in range(c.n_layers):
            params["layers"].append({
                "wq": normal(d, d), "bq": const(d, 0.0), "wk": normal(d, d), "bk": const(d, 0.0),
                "wv": normal(d, d), "bv": const(d, 0.0), "wo": normal(d, d), "bo": const(d, 0.0),
                "attn_norm_scale": const(d, 1.0), "attn_norm_bias": const(d, 0.0),
                "w_up": normal(c.d_ff, d), "b_up": const(c.d_ff, 0.0),
                "w_down": normal(d, c.d_ff), "b_down": const(d, 0.0),
                "ffn_norm_scale": const(d, 1.0), "ffn_norm_bias": const(d, 0.0),
            })  # fmt: skip
        if pooler:
            params["pooler"] = {"w": normal(d, d), "b": const(d, 0.0)}
        return params

    def bind(self, params: dict) -> BertModel:
        """A :class:`BertModel` of this encoder and ``params``."""
        return BertModel(self, params)

    def apply(
        self, params: dict, tokens: Any, mask: Any = None, token_type_ids: Any = None
    ) -> Tensor:
        """The last hidden states of a padded batch.

        Args:
            params: the parameter pytree (module docstring).
            tokens: ``(batch, seq)`` integer Tensor of token ids (``[CLS] ... [SEP]`` and
                padding, as :meth:`SentenceEncoder.tokenize` makes them).
            mask: ``(batch, seq)`` bool or 0/1 Tensor, True (1) at real tokens: padding is
                hidden from every attention. None: no padding.
            token_type_ids: ``(batch, seq)`` integer Tensor of segment ids. None: all 0
                (one text per row).

        Returns:
            ``(batch, seq, d_model)`` Tensor in the parameters' dtype; rows at padding
            positions are computed but meaningless.

        Raises:
            ShapeError: ``tokens`` is not 2-D, is longer than ``max_positions``, or ``mask``
                / ``token_type_ids`` have another shape.
        """
        c = self.config
        tokens = tokens if hasattr(tokens, "shape") else fnp.asarray(tokens)
        if len(tokens.shape) != 2:
            raise ShapeError(
                f"BertEncoder.apply: tokens must be (batch, seq) ids, got shape "
                f"{tuple(tokens.shape)}; add a batch axis with tokens[None]"
            )
        batch, seq = int(tokens.shape[0]), int(tokens.shape[1])
        if seq > c.max_length:
            raise ShapeError(
                f"BertEncoder.apply: {seq} tokens exceed the model's {c.max_length} "
                "positions; truncate the texts (SentenceEncoder truncates to max_length)"
            )
        emb = params["embeddings"]
        if c.roberta_positions:
            # transformers' create_position_ids_from_input_ids: the real tokens count up
            # from padding_idx + 1, a padding token sits at padding_idx (its row is unused).
            real = fnp.astype(fnp.not_equal(tokens, c.pad_token_id), np.int64)
            positions = fnp.take(emb["position"], fnp.cumsum(real, axis=1) * real + c.pad_token_id,
                                 axis=0)
        else:
            positions = emb["position"][:seq]
        x = fnp.take(emb["word"], tokens, axis=0) + positions
        if token_type_ids is None:
            x = x + emb["token_type"][0]
        else:
            if not hasattr(token_type_ids, "shape"):
                token_type_ids = fnp.asarray(token_type_ids)
            if tuple(token_type_ids.shape) != (batch, seq):
                raise ShapeError(
                    f"BertEncoder.apply: token_type_ids must have the tokens' shape "
                    f"{(batch, seq)}, got {tuple(token_type_ids.shape)}"
                )
            x = x + fnp.take(emb["token_type"], token_type_ids, axis=0)
        x = layer_norm(x, emb["norm_scale"], emb["norm_bias"], eps=c.norm_eps)
        attend = None
        if mask is not None:
            valid = _mask_of(mask, (batch, seq), "BertEncoder.apply")
            attend = fnp.reshape(valid, (batch, 1, 1, seq))
        for layer in params["layers"]:
            x = self._layer(layer, x, attend)
        return x

    def _layer(self, layer: dict, x: Tensor, attend: Tensor | None) -> Tensor:
        """One post-LN encoder layer (Devlin et al. 2019, section 3; Vaswani et al. 2017, 3.1)."""
        c = self.config
        batch, seq = int(x.shape[0]), int(x.shape[1])

        def heads(w, b):
            y = fnp.reshape(_linear(x, layer[w], layer[b]), (batch, seq, c.n_heads, c.d_head))
            return fnp.permute_dims(y, (0, 2, 1, 3))

        q, k, v = heads("wq", "bq"), heads("wk", "bk"), heads("wv", "bv")
        out = dot_product_attention(q, k, v, mask=attend)
        out = fnp.reshape(fnp.permute_dims(out, (0, 2, 1, 3)), (batch, seq, c.d_model))
        x = layer_norm(x + _linear(out, layer["wo"], layer["bo"]), layer["attn_norm_scale"],
                       layer["attn_norm_bias"], eps=c.norm_eps)
        h = _act(c.hidden_act, _linear(x, layer["w_up"], layer["b_up"]))
        return layer_norm(x + _linear(h, layer["w_down"], layer["b_down"]), layer["ffn_norm_scale"],
                          layer["ffn_norm_bias"], eps=c.norm_eps)


def mean_pool(hidden: Any, mask: Any = None) -> Tensor:
    """The mean of the hidden states over the real tokens: sentence embeddings.

    ``sum_t mask_t h_t / max(sum_t mask_t, 1e-9)``, sentence-transformers' mean pooling
    (a row with no real token gives zeros).

    Args:
        hidden: ``(..., seq, d_model)`` real floating Tensor.
        mask: ``(..., seq)`` bool or 0/1 Tensor, True at real tokens; None: all.

    Returns:
        ``(..., d_model)`` Tensor of ``hidden``'s dtype.

    Raises:
        ShapeError: ``mask`` is not ``hidden``'s shape without the last axis.

    Example:
        >>> h = fnp.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])
        >>> mean_pool(h, fnp.array([[True, True, False]]))
        Tensor([[2., 3.]], dtype=float64)

    References:
        Reimers and Gurevych, "Sentence-BERT", EMNLP 2019, arXiv:1908.10084, section 3
        (MEAN pooling).
    """
    hidden = hidden if hasattr(hidden, "shape") else fnp.asarray(hidden)
    if mask is None:
        return fnp.mean(hidden, axis=-2)
    mask = _mask_of(mask, tuple(hidden.shape[:-1]), "mean_pool")
    weights = fnp.astype(mask, hidden.dtype)[..., None]
    count = fnp.maximum(fnp.sum(weights, axis=-2), 1e-9)
    return fnp.sum(hidden * weights, axis=-2) / count


def l2_normalize(x: Any) -> Tensor:
    """``x / max(||x||_2, 1e-12)`` over the last axis (sentence-transformers' Normalize).

    Example:
        >>> l2_normalize(fnp.array([3.0, 4.0]))
        Tensor([0.6, 0.8], dtype=float64)
    """
    x = x if hasattr(x, "shape") else fnp.asarray(x)
    return x / fnp.maximum(fnp.sqrt(fnp.sum(x * x, axis=-1, keepdims=True)), 1e-12)


@dataclass(frozen=True)
class BertModel:
    """A :class:`BertEncoder` bound to its parameters: ``model(tokens, mask) -> hidden states``.

    A pytree: its leaves are the parameters (the encoder is static), so
    ``fgrad.grad(loss)(model)`` returns a BertModel of gradients and ``jit`` takes it as
    an argument.

    Attributes:
        module: the :class:`BertEncoder`.
        params: its parameter pytree.
    """

    module: BertEncoder
    params: dict

    @property
    def config(self) -> BertConfig:
        """The model's :class:`BertConfig`."""
        return self.module.config

    def __call__(self, tokens: Any, mask: Any = None, token_type_ids: Any = None) -> Tensor:
        """``(batch, seq, d_model)`` last hidden states: ``self.module.apply(self.params, ...)``."""
        return self.module.apply(self.params, tokens, mask, token_type_ids)

    def embed(self, tokens: Any, mask: Any = None, *, normalize: bool = False,
              token_type_ids: Any = None) -> Tensor:
        """``(batch, d_model)`` sentence embeddings: :func:`mean_pool` of the hidden states,
        L2-normalised (:func:`l2_normalize`) if ``normalize``."""
        pooled = mean_pool(self(tokens, mask, token_type_ids), mask)
        return l2_normalize(pooled) if normalize else pooled

    def pooler_output(self, hidden: Any) -> Tensor:
        """BERT's pooler: ``(batch, d_model)`` ``tanh(dense(hidden[:, 0]))``, at ``[CLS]``.

        Raises:
            ValueError: the checkpoint has no pooler.
        """
        if "pooler" not in self.params:
            raise ValueError("BertModel.pooler_output: this checkpoint has no pooler.dense weights")
        p = self.params["pooler"]
        return fnp.tanh(_linear(hidden[:, 0], p["w"], p["b"]))

    @property
    def nbytes(self) -> int:
        """Bytes held by the parameters."""
        leaves = tree.leaves(self.params)
        return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in leaves)


tree.register_dataclass(BertModel, meta_fields=("module",))


class SentenceEncoder:
    """A :class:`BertModel` and its tokenizer: ``encode(texts) -> (batch, d_model)`` embeddings.

    Each text becomes the ids of ``[CLS] text [SEP]`` (the ``tokenizer.json``
    post-processor's template), cut to ``max_length`` ids; a batch is padded with
    ``pad_token_id`` and masked; the embedding is the mean of the last hidden states over
    the real tokens (sentence-transformers' mean pooling), L2-normalised if asked.

    Args:
        model: the :class:`BertModel`.
        tokenizer: a :class:`fgrad.llm.tokenizer.Tokenizer` from the folder's
            ``tokenizer.json`` (it keeps the post-processor).
        max_length: the longest input in ids, special tokens included; None: the
            model's ``max_positions``.

    Raises:
        ValueError: the tokenizer has no post-processor (no ``[CLS]``/``[SEP]`` template),
            or ``max_length`` exceeds the model's positions.
    """

    def __init__(self, model: BertModel, tokenizer: Any, *, max_length: int | None = None):
        if getattr(tokenizer, "post_processor", None) is None:
            raise ValueError(
                "SentenceEncoder: the tokenizer has no post-processor, so nothing would add "
                "[CLS] and [SEP]; build it with Tokenizer.from_file(<folder>/tokenizer.json)"
            )
        limit = model.config.max_length
        max_length = limit if max_length is None else int(max_length)
        if not 0 < max_length <= limit:
            raise ValueError(
                f"SentenceEncoder: max_length must be in [1, {limit}] (the model's positions), "
                f"got {max_length}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = max_length

    @property
    def config(self) -> BertConfig:
        """The model's :class:`BertConfig`."""
        return self.model.config

    def tokenize(self, texts: Sequence[str]) -> tuple[Tensor, Tensor]:
        """``(tokens, mask)``: ``(batch, seq)`` int64 ids padded with ``pad_token_id`` and the
        bool mask of real tokens (``seq`` is the longest text's length).

        Raises:
            TypeError: ``texts`` is a str or holds a non-str (a list of str is needed).
            ValueError: ``texts`` is empty.
        """
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("SentenceEncoder.tokenize: texts must be a list of str")
        if not texts:
            raise ValueError("SentenceEncoder.tokenize: texts is empty")
        rows = [self.tokenizer.encode(t, add_special_tokens=True, max_length=self.max_length)
                for t in texts]
        seq = max(len(r) for r in rows)
        ids = np.full((len(rows), seq), self.config.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(rows), seq), dtype=bool)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = True
        return fnp.asarray(ids), fnp.asarray(mask)

    def encode(self, texts: str | Sequence[str], *, normalize: bool = False,
               batch_size: int = 32) -> Tensor:
        """Sentence embeddings of ``texts``.

        Texts are sorted by length and run ``batch_size`` at a time (less padding); the
        result is in the order given.

        Args:
            texts: a list of str, or one str.
            normalize: L2-normalise each embedding (for cosine similarity by dot product).
            batch_size: texts per forward pass.

        Returns:
            ``(len(texts), d_model)`` Tensor in the parameters' dtype; ``(d_model,)`` for one
            str (as sentence-transformers' ``encode``).

        Raises:
            TypeError: ``texts`` holds a non-str.
            ValueError: ``texts`` is empty, or ``batch_size < 1``.
        """
        if isinstance(texts, str):
            return self.encode([texts], normalize=normalize)[0]
        texts = list(texts)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(
                f"SentenceEncoder.encode: batch_size must be a positive int, got {batch_size!r}"
            )
        if not texts:
            raise ValueError("SentenceEncoder.encode: texts is empty")
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = []
        for start in range(0, len(order), batch_size):
            tokens, mask = self.tokenize([texts[i] for i in order[start : start + batch_size]])
            parts.append(self.model.embed(tokens, mask, normalize=normalize))
        stacked = fnp.concatenate(parts, axis=0)
        return fnp.take(stacked, fnp.asarray(np.argsort(np.asarray(order))), axis=0)

    def __repr__(self) -> str:
        c = self.config
        return (f"SentenceEncoder(d_model={c.d_model}, n_layers={c.n_layers}, n_heads={c.n_heads}, "
                f"vocab_size={c.vocab_size}, max_length={self.max_length})")


# ---------------------------------------------------------------------- loading

_EMBEDDINGS = {
    "word_embeddings.weight": "word",
    "position_embeddings.weight": "position",
    "token_type_embeddings.weight": "token_type",
    "LayerNorm.weight": "norm_scale",
    "LayerNorm.bias": "norm_bias",
}
_LAYER = {
    "attention.self.query.weight": "wq",
    "attention.self.query.bias": "bq",
    "attention.self.key.weight": "wk",
    "attention.self.key.bias": "bk",
    "attention.self.value.weight": "wv",
    "attention.self.value.bias": "bv",
    "attention.output.dense.weight": "wo",
    "attention.output.dense.bias": "bo",
    "attention.output.LayerNorm.weight": "attn_norm_scale",
    "attention.output.LayerNorm.bias": "attn_norm_bias",
    "intermediate.dense.weight": "w_up",
    "intermediate.dense.bias": "b_up",
    "output.dense.weight": "w_down",
    "output.dense.bias": "b_down",
    "output.LayerNorm.weight": "ffn_norm_scale",
    "output.LayerNorm.bias": "ffn_norm_bias",
}


def _shapes(c: BertConfig) -> tuple[dict, dict]:
    d, ff = c.d_model, c.d_ff
    emb = {"word": (c.vocab_size, d), "position": (c.max_positions, d),
           "token_type": (c.type_vocab_size, d), "norm_scale": (d,), "norm_bias": (d,)}
    layer = {k: (d, d) for k in ("wq", "wk", "wv", "wo")}
    layer.update({k: (d,) for k in ("bq", "bk", "bv", "bo", "attn_norm_scale", "attn_norm_bias",
                                   "b_down", "ffn_norm_scale", "ffn_norm_bias")})
    layer.update(w_up=(ff, d), b_up=(ff,), w_down=(d, ff))
    return emb, layer


def from_tensors(config: Mapping[str, Any] | BertConfig, tensors: Mapping[str, Any],
                 *, where: str = "checkpoint") -> BertModel:
    """The :class:`BertModel` of a ``config.json`` dict and tensors by their Hugging Face names.

    Names may carry the ``bert.`` (or, for the RoBERTa family, ``roberta.``) prefix
    (``BertForMaskedLM``, ``RobertaForSequenceClassification`` ...); their heads (``cls.*``,
    ``lm_head.*``, ``classifier.*``) and buffers (``position_ids``) are ignored. Old checkpoints' ``LayerNorm.gamma`` / ``.beta`` read as ``.weight`` / ``.bias``.

    Args:
        config: the ``config.json`` dict (or a :class:`BertConfig`).
        tensors: name -> numpy array or Tensor (floating ones keep their dtype).
        where: what to call the source in errors (the folder).

    Raises:
        UnsupportedModelError: from :meth:`BertConfig.from_hf`.
        KeyError: a tensor is missing (named).
        ShapeError: a tensor's shape is not the config's (named, both shapes given).

    Example:
        >>> cfg = BertConfig(vocab_size=30, d_model=16, n_layers=1, n_heads=4, d_ff=32)
        >>> from_tensors(cfg, {"bert.embeddings.word_embeddings.weight": np.zeros((30, 16))})
        Traceback (most recent call last):
        ...
        KeyError: "checkpoint: tensor 'bert.embeddings.position_embeddings.weight' is missing for a 1-layer bert model"
    """
    cfg = config if isinstance(config, BertConfig) else BertConfig.from_hf(config)
    names = {}
    base = "roberta." if cfg.roberta_positions else "bert."
    prefixed = any(k.startswith((base + "encoder.", base + "embeddings.")) for k in tensors)
    for key, value in tensors.items():
        name = key.removeprefix(base) if prefixed else key
        if name.endswith("LayerNorm.gamma") or name.endswith("LayerNorm.beta"):
            stem, _, old = name.rpartition(".")
            name = f"{stem}.{'weight' if old == 'gamma' else 'bias'}"
        names[name] = (key, value)
    emb_shapes, layer_shapes = _shapes(cfg)

    def get(name: str, shape: tuple) -> Tensor:
        if name not in names:
            stored = (base if prefixed else "") + name
            raise KeyError(
                f"{where}: tensor {stored!r} is missing for a {cfg.n_layers}-layer "
                f"{cfg.model_type} model"
            )
        key, value = names[name]
        if tuple(value.shape) != shape:
            raise ShapeError(
                f"{where}: tensor {key!r} has shape {tuple(value.shape)}, the config says {shape}"
            )
        return value if isinstance(value, Tensor) else fnp.asarray(np.asarray(value))

    params: dict = {
        "embeddings": {
            ours: get("embeddings." + hf, emb_shapes[ours]) for hf, ours in _EMBEDDINGS.items()
        },
        "layers": [
            {ours: get(f"encoder.layer.{i}.{hf}", layer_shapes[ours])
             for hf, ours in _LAYER.items()}
            for i in range(cfg.n_layers)
        ],
    }
    if f"encoder.layer.{cfg.n_layers}.output.dense.weight" in names:
        raise ShapeError(
            f"{where}: the tensors have more layers than the config's num_hidden_layers="
            f"{cfg.n_layers}"
        )
    if "pooler.dense.weight" in names:
        d = cfg.d_model
        params["pooler"] = {"w": get("pooler.dense.weight", (d, d)),
                            "b": get("pooler.dense.bias", (d,))}
    return BertEncoder(cfg).bind(params)


def to_tensors(model: BertModel) -> dict[str, np.ndarray]:
    """The parameters of ``model`` as numpy arrays by their Hugging Face names (no prefix).

    :func:`save` writes them, with ``model.config.to_hf()`` as ``config.json``, as a
    folder that :func:`load` and transformers' ``BertModel.from_pretrained`` read.

    Example:
        >>> cfg = BertConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=4, d_ff=32)
        >>> model = BertEncoder(cfg).bind(BertEncoder(cfg).init(fgrad.random.key(0)))
        >>> tensors = to_tensors(model)
        >>> tensors["encoder.layer.1.attention.self.query.weight"].shape, len(tensors)
        ((16, 16), 39)
        >>> again = from_tensors(cfg.to_hf(), tensors)
        >>> bool(fnp.all(again(fnp.array([[2, 7, 3]])) == model(fnp.array([[2, 7, 3]]))))
        True
    """
    p = model.params
    out = {"embeddings." + hf: np.asarray(p["embeddings"][ours]) for hf, ours in _EMBEDDINGS.items()}
    for i, layer in enumerate(p["layers"]):
        out.update({f"encoder.layer.{i}.{hf}": np.asarray(layer[ours]) for hf, ours in _LAYER.items()})
    if "pooler" in p:
        out["pooler.dense.weight"] = np.asarray(p["pooler"]["w"])
        out["pooler.dense.bias"] = np.asarray(p["pooler"]["b"])
    return out


def save(model: BertModel, folder: str | os.PathLike) -> None:
    """Write ``model`` as a Hugging Face BERT folder: ``config.json`` and ``model.safetensors``.

    The tensors have their Hugging Face names (:func:`to_tensors`) at the top level of the
    file, as transformers writes them (``fgrad.io.save`` would store pytree paths), so
    ``BertModel.from_pretrained(folder)`` and :func:`load` read it back; the tokenizer is
    not written (copy ``tokenizer.json`` beside it). The folder is created if needed.

    Raises:
        ImportError: the ``safetensors`` package is not installed.

    Example:
        >>> import tempfile
        >>> cfg = BertConfig(vocab_size=30, d_model=16, n_layers=1, n_heads=4, d_ff=32)
        >>> model = BertEncoder(cfg).bind(BertEncoder(cfg).init(fgrad.random.key(0)))
        >>> folder = tempfile.mkdtemp()
        >>> save(model, folder)
        >>> sorted(os.listdir(folder)), load(folder).config == cfg
        (['config.json', 'model.safetensors'], True)
    """
    import json

    from safetensors.numpy import save_file

    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    tensors = {k: np.ascontiguousarray(v) for k, v in to_tensors(model).items()}
    save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(model.config.to_hf(), f, indent=2)


def load(folder: str | os.PathLike, *, dtype: str = "float32") -> BertModel:
    """The :class:`BertModel` of a Hugging Face BERT folder (``config.json`` + safetensors).

    Read by :func:`fgrad.llm.hf.read` (one ``model.safetensors`` or a sharded index;
    bfloat16 and float16 weights widened exactly to float32, or ``dtype="float16"``).

    Raises:
        ValueError: from :func:`fgrad.llm.hf.read` (no config.json, a ``model_type`` it does
            not read, missing or damaged weights files).
        UnsupportedModelError, KeyError, ShapeError: from :func:`from_tensors`.

    Example:
        >>> import tempfile
        >>> try:
        ...     load(tempfile.mkdtemp())
        ... except ValueError as e:
        ...     print(str(e).split(": ", 2)[2][:14])
        no config.json
    """
    from fgrad.llm import hf

    ckpt = hf.read(folder, dtype=dtype)
    return from_tensors(ckpt.config, ckpt.tensors, where=f"checkpoint {os.fspath(folder)!r}")


def load_encoder(folder: str | os.PathLike, *, dtype: str = "float32",
                 max_length: int | None = None) -> SentenceEncoder:
    """A :class:`SentenceEncoder` of a Hugging Face BERT folder and its ``tokenizer.json``.

    ``fgrad.llm.load(folder)`` gives ``(BertModel, Tokenizer)`` for the same folder;
    this bundles them with mean pooling: ``load_encoder(folder).encode(texts)``.

    Args:
        folder: ``config.json``, ``model.safetensors`` (or an index and shards) and
            ``tokenizer.json``.
        dtype: ``"float32"`` or ``"float16"`` (as :func:`fgrad.llm.hf.read`).
        max_length: the longest input in ids. None: a sentence-transformers folder's
            ``max_seq_length`` (``sentence_bert_config.json``), else the model's positions.

    Raises:
        FileNotFoundError: the folder has no ``tokenizer.json``.
        UnsupportedModelError: a sentence-transformers folder whose
            ``1_Pooling/config.json`` asks for a pooling other than the mean.
        ValueError, UnsupportedModelError, KeyError, ShapeError: from :func:`load`.

    Example:
        >>> import os, tempfile
        >>> from tokenizers import Tokenizer, models, pre_tokenizers, processors
        >>> folder = tempfile.mkdtemp()
        >>> vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hi", "there"])}
        >>> tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
        >>> tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        >>> tok.post_processor = processors.TemplateProcessing(
        ...     single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
        >>> tok.save(os.path.join(folder, "tokenizer.json"))
        >>> cfg = BertConfig(vocab_size=6, d_model=8, n_layers=1, n_heads=2, d_ff=16)
        >>> save(BertEncoder(cfg).bind(BertEncoder(cfg).init(fgrad.random.key(0))), folder)
        >>> encoder = load_encoder(folder)
        >>> tokens, mask = encoder.tokenize(["hi there", "hi"])
        >>> tokens.tolist(), mask.tolist()
        ([[2, 4, 5, 3], [2, 4, 3, 0]], [[True, True, True, True], [True, True, True, False]])
        >>> embeddings = encoder.encode(["hi there", "hi"], normalize=True)
        >>> embeddings.shape, fnp.round(fnp.sum(embeddings * embeddings, axis=-1), 6).tolist()
        ((2, 8), [1.0, 1.0])
    """
    from fgrad.llm.tokenizer import Tokenizer

    folder = os.fspath(folder)
    model = load(folder, dtype=dtype)
    path = os.path.join(folder, "tokenizer.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_encoder: the folder {folder!r} has no tokenizer.json")
    if max_length is None:
        max_length = _sentence_transformers_length(folder, model.config.max_length)
    return SentenceEncoder(model, Tokenizer.from_file(path), max_length=max_length)


def _sentence_transformers_length(folder: str, limit: int) -> int:
    """A sentence-transformers folder's ``max_seq_length``; refuses its pooling if not mean.

    sentence-transformers saves ``sentence_bert_config.json`` (the truncation length it
    encodes with) and ``1_Pooling/config.json`` (the pooling mode) beside the model.
    """
    import json

    pooling = os.path.join(folder, "1_Pooling", "config.json")
    if os.path.exists(pooling):
        with open(pooling, encoding="utf-8") as f:
            modes = {k for k, v in json.load(f).items() if k.startswith("pooling_mode") and v}
        if modes and modes != {"pooling_mode_mean_tokens"}:
            raise UnsupportedModelError(
                f"load_encoder: {pooling} asks for {', '.join(sorted(modes))}; fgrad.llm.bert "
                "pools by the mean over tokens only (load the BertModel with "
                "fgrad.llm.bert.load and pool its hidden states yourself)"
            )
    config = os.path.join(folder, "sentence_bert_config.json")
    if os.path.exists(config):
        with open(config, encoding="utf-8") as f:
            length = json.load(f).get("max_seq_length")
        if isinstance(length, int) and length > 0:
            return min(length, limit)
    return limit

