"""The shape of a decoder language model, read from GGUF metadata or a Hugging Face ``config.json``.

:class:`ModelConfig` holds what the forward pass needs: sizes, the RMSNorm epsilon, the
rotary embedding (base, rotated dimensions, layout, scaling) and whether the output head
is tied to the embedding. GGUF files name their keys after the architecture
(``llama.attention.head_count``); :meth:`ModelConfig.from_gguf` reads them,
:meth:`ModelConfig.from_hf` reads the Hugging Face names (``num_attention_heads``).

Example:
    >>> meta = {"general.architecture": "llama", "llama.embedding_length": 64,
    ...         "llama.block_count": 2, "llama.attention.head_count": 4,
    ...         "llama.feed_forward_length": 128, "llama.vocab_size": 100}
    >>> cfg = ModelConfig.from_gguf(meta)
    >>> cfg.n_kv_heads, cfg.d_head, cfg.rope_interleaved, cfg.tied_embeddings
    (4, 16, True, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["ModelConfig", "RopeScaling", "SUPPORTED_ARCHITECTURES", "UnsupportedModelError"]

# GGUF ``general.architecture`` / HF ``model_type`` values the decoder runs.
SUPPORTED_ARCHITECTURES = ("llama", "qwen2")
# HF model types that are the llama decoder under another name.
_HF_LLAMA_ALIASES = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2"}


class UnsupportedModelError(ValueError):
    """A model file of an architecture (or with a feature) that fgrad.llm does not run."""


@dataclass(frozen=True)
class RopeScaling:
    """How rotary frequencies are stretched for contexts longer than the training one.

    Attributes:
        kind: ``"linear"`` (positions divided by ``factor``: every frequency over
            ``factor``) or ``"llama3"`` (Llama 3.1: low frequencies over ``factor``, high
            ones kept, a smooth blend between).
        factor: the stretch.
        original_context: the training context length (``llama3`` only).
        low_freq_factor: ``llama3``: wavelengths above ``original_context /
            low_freq_factor`` are divided by ``factor``.
        high_freq_factor: ``llama3``: wavelengths below ``original_context /
            high_freq_factor`` are kept.
    """

    kind: str
    factor: float
    original_context: int = 8192
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0

    def apply(self, inv_freq: np.ndarray) -> np.ndarray:
        """The scaled inverse frequencies (float64 numpy array of the same shape)."""
        inv_freq = np.asarray(inv_freq, dtype=np.float64)
        if self.kind == "linear":
            return inv_freq / self.factor
        # llama3: the rule of Meta's reference code for Llama 3.1, by wavelength 2 pi / f.
        low_wavelen = self.original_context / self.low_freq_factor
        high_wavelen = self.original_context / self.high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        smooth = (self.original_context / wavelen - self.low_freq_factor) / (
            self.high_freq_factor - self.low_freq_factor
        )
        blended = (1 - smooth) * inv_freq / self.factor + smooth * inv_freq
        return np.where(
            wavelen < high_wavelen,
            inv_freq,
            np.where(wavelen > low_wavelen, inv_freq / self.factor, blended),
        )


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and numerics of a llama-family decoder (llama, qwen2).

    Attributes:
        arch: ``"llama"`` or ``"qwen2"``.
        vocab_size: number of tokens.
        d_model: residual width.
        n_layers: number of decoder blocks.
        n_heads: query heads.
        n_kv_heads: key/value heads (grouped-query attention: query head ``h`` reads KV
            head ``h // (n_heads // n_kv_heads)``).
        d_head: width of one head.
        d_ff: hidden width of the SwiGLU MLP.
        norm_eps: RMSNorm's epsilon.
        rope_base: the rotary base (``theta``).
        rope_dim: rotated dimensions of each head (``<= d_head``; the rest pass through).
        rope_interleaved: rotate adjacent pairs ``(2i, 2i + 1)`` (llama-architecture GGUF
            files, whose q/k weights llama.cpp's converter permuted) rather than halves
            ``(i, i + rope_dim / 2)`` (Hugging Face checkpoints, qwen2 GGUF files).
        rope_scaling: a :class:`RopeScaling` or None.
        context_length: the longest context the model was trained for.
        tied_embeddings: the output head is the embedding matrix.
        qkv_bias: the q, k and v projections add biases (qwen2).

    References:
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021,
        arXiv:2104.09864; Ainslie et al., "GQA: Training Generalized Multi-Query Transformer
        Models from Multi-Head Checkpoints", 2023, arXiv:2305.13245.
    """

    arch: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_ff: int
    norm_eps: float = 1e-5
    rope_base: float = 10000.0
    rope_dim: int = 0  # 0: d_head
    rope_interleaved: bool = False
    rope_scaling: RopeScaling | None = None
    context_length: int = 2048
    tied_embeddings: bool = False
    qkv_bias: bool = False

    def __post_init__(self):
        if self.arch not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(_unsupported(self.arch))
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_head",
                     "d_ff", "context_length"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ModelConfig: {name} must be a positive int, got {value!r}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"ModelConfig: n_heads={self.n_heads} is not a multiple of "
                f"n_kv_heads={self.n_kv_heads} (grouped-query attention shares each KV head "
                "among the same number of query heads)"
            )
        if self.rope_dim == 0:
            object.__setattr__(self, "rope_dim", self.d_head)
        if self.rope_dim % 2 or not 0 < self.rope_dim <= self.d_head:
            raise ValueError(
                f"ModelConfig: rope_dim={self.rope_dim} must be even and in (0, d_head="
                f"{self.d_head}]"
            )

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.n_heads // self.n_kv_heads

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return replace(self, **changes)

    @classmethod
    def from_gguf(cls, metadata: Mapping[str, Any], tensor_names: Sequence[str] = ()) -> ModelConfig:
        """The config a GGUF file's metadata describes.

        Args:
            metadata: the file's key/value metadata (``general.architecture``,
                ``{arch}.embedding_length`` ...).
            tensor_names: the file's tensor names; without ``output.weight`` the head is
                tied to ``token_embd.weight``. Empty (the default): tied.

        Raises:
            UnsupportedModelError: an architecture other than llama or qwen2, or a rope
                scaling type other than none, linear or llama3.
            KeyError: a required key is missing (the message names it).

        Example:
            >>> ModelConfig.from_gguf({"general.architecture": "gpt2"})
            Traceback (most recent call last):
            ...
            fgrad.llm.config.UnsupportedModelError: architecture 'gpt2' is not supported; fgrad.llm runs llama, qwen2 (GGUF or Hugging Face) and bert (Hugging Face folders)
        """
        arch = metadata.get("general.architecture")
        if arch not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(_unsupported(arch))

        def get(key: str, default: Any = _REQUIRED) -> Any:
            full = f"{arch}.{key}"
            if full in metadata:
                return metadata[full]
            if default is _REQUIRED:
                raise KeyError(f"GGUF metadata: {full!r} is missing; the file is not a complete {arch} model")
            return default

        d_model = int(get("embedding_length"))
        n_heads = int(get("attention.head_count"))
        n_kv = get("attention.head_count_kv", n_heads)
        d_head = int(get("attention.key_length", d_model // n_heads))
        vocab = get("vocab_size", None)
        if vocab is None:
            tokens = metadata.get("tokenizer.ggml.tokens")
            if tokens is None:
                raise KeyError(
                    f"GGUF metadata: neither {arch}.vocab_size nor tokenizer.ggml.tokens says "
                    "the vocabulary size"
                )
            vocab = len(tokens)
        scaling = None
        kind = str(get("rope.scaling.type", "none"))
        if kind == "linear":
            scaling = RopeScaling("linear", float(get("rope.scaling.factor")))
        elif kind not in ("none", ""):
            raise UnsupportedModelError(
                f"GGUF rope scaling type {kind!r} is not supported; supported: none, linear "
                "(llama3's is a rope_freqs.weight tensor, which is supported)"
            )
        names = set(tensor_names)
        return cls(
            arch=arch,
            vocab_size=int(vocab),
            d_model=d_model,
            n_layers=int(get("block_count")),
            n_heads=n_heads,
            n_kv_heads=int(_first(n_kv)),
            d_head=d_head,
            d_ff=int(_first(get("feed_forward_length"))),
            norm_eps=float(get("attention.layer_norm_rms_epsilon", 1e-5)),
            rope_base=float(get("rope.freq_base", 10000.0)),
            rope_dim=int(get("rope.dimension_count", d_head)),
            # llama.cpp's converter permutes llama q/k rows for rotation of adjacent pairs;
            # qwen2 files keep Hugging Face's layout and rotate halves (NEOX style).
            rope_interleaved=arch == "llama",
            rope_scaling=scaling,
            context_length=int(get("context_length", 2048)),
            tied_embeddings=bool(not names or "output.weight" not in names),
            qkv_bias=bool("blk.0.attn_q.bias" in names) if names else arch == "qwen2",
        )

    @classmethod
    def from_hf(cls, config: Mapping[str, Any]) -> ModelConfig:
        """The config of a Hugging Face ``config.json`` (a dict) of a llama-family decoder.

        Raises:
            UnsupportedModelError: another ``model_type`` (for ``bert`` use
                :class:`fgrad.llm.bert.BertConfig`), or an unsupported rope scaling.
            KeyError: a required key is missing.

        Example:
            >>> cfg = ModelConfig.from_hf({"model_type": "qwen2", "hidden_size": 32,
            ...     "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
            ...     "intermediate_size": 64, "vocab_size": 50})
            >>> cfg.qkv_bias, cfg.rope_interleaved, cfg.group
            (True, False, 2)
        """
        model_type = config.get("model_type")
        arch = _HF_LLAMA_ALIASES.get(model_type)
        if arch is None:
            raise UnsupportedModelError(_unsupported(model_type))

        def get(key: str) -> Any:
            if key not in config:
                raise KeyError(f"config.json: {key!r} is missing for a {model_type} model")
            return config[key]

        d_model, n_heads = int(get("hidden_size")), int(get("num_attention_heads"))
        d_head = int(config.get("head_dim") or d_model // n_heads)
        rope = dict(config.get("rope_parameters") or {})
        base = config.get("rope_theta", rope.get("rope_theta", 10000.0))
        scaling_cfg = config.get("rope_scaling") or (rope if rope.get("rope_type") else None)
        scaling = None
        if scaling_cfg:
            kind = scaling_cfg.get("rope_type", scaling_cfg.get("type"))
            if kind == "linear":
                scaling = RopeScaling("linear", float(scaling_cfg["factor"]))
            elif kind == "llama3":
                scaling = RopeScaling(
                    "llama3",
                    float(scaling_cfg["factor"]),
                    int(scaling_cfg["original_max_position_embeddings"]),
                    float(scaling_cfg["low_freq_factor"]),
                    float(scaling_cfg["high_freq_factor"]),
                )
            elif kind not in (None, "default"):
                raise UnsupportedModelError(
                    f"config.json: rope scaling {kind!r} is not supported; supported: "
                    "linear, llama3"
                )
        return cls(
            arch=arch,
            vocab_size=int(get("vocab_size")),
            d_model=d_model,
            n_layers=int(get("num_hidden_layers")),
            n_heads=n_heads,
            n_kv_heads=int(config.get("num_key_value_heads") or n_heads),
            d_head=d_head,
            d_ff=int(get("intermediate_size")),
            norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope_base=float(base),
            rope_dim=int(d_head * float(config.get("partial_rotary_factor", 1.0))),
            rope_interleaved=False,  # Hugging Face's layout rotates halves
            rope_scaling=scaling,
            context_length=int(config.get("max_position_embeddings", 2048)),
            tied_embeddings=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=arch == "qwen2" or bool(config.get("attention_bias", False)),
        )


_REQUIRED = object()


def _first(value: Any) -> Any:
    """A per-layer list in GGUF metadata (some files store head_count_kv per layer) -> its first."""
    if isinstance(value, (list, tuple, np.ndarray)):
        values = {int(v) for v in value}
        if len(values) != 1:
            raise UnsupportedModelError(
                f"GGUF metadata: per-layer sizes {sorted(values)} differ between layers; "
                "fgrad.llm runs models whose layers all have one shape"
            )
        return values.pop()
    return value


def _unsupported(arch: Any) -> str:
    return (
        f"architecture {arch!r} is not supported; fgrad.llm runs "
        f"{', '.join(SUPPORTED_ARCHITECTURES)} (GGUF or Hugging Face) and bert, roberta, "
        "xlm-roberta and camembert encoders (Hugging Face "
        "folders)"
    )
