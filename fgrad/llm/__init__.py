"""Language models from the files people have: GGUF and Hugging Face checkpoints.

Nothing heavy loads with this package: each public name below is imported from its module
on first use (``import fgrad`` does not import ``fgrad.llm`` at all, and the optional
packages ``gguf``, ``safetensors`` and ``tokenizers`` load only inside the functions that
need them).

Modules:
    ``gguf``: :func:`fgrad.llm.gguf.read` reads a GGUF file (metadata and tensors,
    dequantized or kept quantized). ``quants``: dequantization of ggml's tensor types.
    ``quantized``: :class:`~fgrad.llm.quantized.QuantizedWeight` and ``linear`` (the
    ``quantized_matmul`` op). ``hf``: :func:`fgrad.llm.hf.read` reads a Hugging Face folder.
    ``bert``: BERT encoders and sentence embeddings (:func:`fgrad.llm.load_encoder`).
    ``lora``: LoRA and QLoRA adapters as a pytree transform, PEFT's adapter files.
    ``int8``: int8 weights (per channel or group) and SmoothQuant W8A8.

Example:
    >>> import fgrad.llm
    >>> fgrad.llm.read_gguf is fgrad.llm.gguf.read
    True
"""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> "module:attribute", resolved on first use by __getattr__. To add a name,
# add a row here (and nothing else).
_LAZY = {
    "read_gguf": "fgrad.llm.gguf:read",
    "read_hf": "fgrad.llm.hf:read",
    "GGUFFile": "fgrad.llm.gguf:GGUFFile",
    "HFCheckpoint": "fgrad.llm.hf:HFCheckpoint",
    "QuantizedWeight": "fgrad.llm.quantized:QuantizedWeight",
    "linear": "fgrad.llm.quantized:linear",
    "embedding": "fgrad.llm.quantized:embedding",
    "dequantize": "fgrad.llm.quants:dequantize",
    "load": "fgrad.llm.loading:load",
    "generate": "fgrad.llm.generation:generate",
    "generate_batch": "fgrad.llm.generation:generate_batch",
    "decode_fns": "fgrad.llm.generation:decode_fns",
    "PromptTooLongError": "fgrad.llm.generation:PromptTooLongError",
    "Sampler": "fgrad.llm.sampling:Sampler",
    "Tokenizer": "fgrad.llm.tokenizer:Tokenizer",
    "ModelConfig": "fgrad.llm.config:ModelConfig",
    "KVCache": "fgrad.llm.cache:KVCache",
    "Model": "fgrad.llm.model:Model",
    "Transformer": "fgrad.llm.model:Transformer",
    "load_encoder": "fgrad.llm.bert:load_encoder",
    "SentenceEncoder": "fgrad.llm.bert:SentenceEncoder",
    "BertConfig": "fgrad.llm.bert:BertConfig",
    "BertEncoder": "fgrad.llm.bert:BertEncoder",
    "BertModel": "fgrad.llm.bert:BertModel",
    "mean_pool": "fgrad.llm.bert:mean_pool",
    "LoraAdapters": "fgrad.llm.lora:LoraAdapters",
    "LoraWeight": "fgrad.llm.lora:LoraWeight",
    "Int8Weight": "fgrad.llm.int8:Int8Weight",
}

_SUBMODULES = ("bert", "gguf", "hf", "int8", "lora", "quants", "quantized")

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is not None:
        module, _, attr = target.partition(":")
        value = getattr(importlib.import_module(module), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'fgrad.llm' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
