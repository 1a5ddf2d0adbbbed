"""Hugging Face checkpoint folders: ``config.json`` and safetensors weights.

A folder as ``huggingface_hub`` downloads it holds ``config.json`` (the hyper-parameters;
``model_type`` names the architecture) and the weights, either in one
``model.safetensors`` or in shards listed by ``model.safetensors.index.json`` (its
``weight_map`` maps each tensor name to its shard's file name). The safetensors files
are read by :func:`fgrad.io.load`, which checks each header against the file before any
tensor is read (a truncated or corrupt file is a ValueError naming it) and widens
bfloat16 to float32 exactly. Formats: the safetensors specification
(``huggingface/safetensors``, README "Format") and ``transformers``' sharded-checkpoint
index (``modeling_utils``, ``SAFE_WEIGHTS_INDEX_NAME``).

Example:
    >>> import json, os, tempfile
    >>> import numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "config.json"), "w") as f:
    ...     json.dump({"model_type": "llama", "hidden_size": 4}, f)
    >>> fgrad.io.save(os.path.join(folder, "model.safetensors"), {"w": fnp.ones(4, dtype="float32")})
    >>> ckpt = read(folder)
    >>> ckpt.arch, ckpt.config["hidden_size"], sorted(ckpt.tensors)
    ('llama', 4, ['w'])
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ARCHITECTURES", "HFCheckpoint", "read"]

ARCHITECTURES = ("llama", "qwen2", "bert", "roberta", "xlm-roberta", "camembert")
"""The ``model_type`` values fgrad.llm reads."""

_SINGLE = "model.safetensors"
_INDEX = "model.safetensors.index.json"
_MODES = ("float32", "float16")


@dataclass
class HFCheckpoint:
    """What :func:`read` returns: a Hugging Face folder's config and tensors.

    Attributes:
        folder: the folder read.
        config: ``config.json`` as a dict.
        arch: ``config["model_type"]`` (one of :data:`ARCHITECTURES`).
        tensors: Hugging Face tensor name (``"model.layers.0.self_attn.q_proj.weight"``)
            -> numpy array; floating tensors in the ``dtype`` asked for (bfloat16 widened
            exactly to float32), integer ones as stored. Linear weights are
            ``(out_features, in_features)``, as PyTorch stores them.
        files: the safetensors files read, in order.
    """

    folder: str
    config: dict[str, Any]
    arch: str
    tensors: dict[str, np.ndarray]
    files: list[str] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        """Bytes held by :attr:`tensors`."""
        return sum(int(a.nbytes) for a in self.tensors.values())


def _fail(folder: str, what: str) -> ValueError:
    return ValueError(f"fgrad.llm.hf.read: {folder}: {what}")


def _config(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise _fail(
            folder,
            "no config.json; a Hugging Face checkpoint folder holds config.json and "
            f"{_SINGLE} (or {_INDEX} and its shards)",
        )
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise _fail(folder, f"config.json is not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise _fail(folder, "config.json does not hold a JSON object")
    arch = config.get("model_type")
    if arch not in ARCHITECTURES:
        from fgrad.llm.bert import _RELATIVES  # why BERT's relatives are not read
        from fgrad.llm.config import UnsupportedModelError

        why = f" ({arch} {_RELATIVES[arch]})" if arch in _RELATIVES else ""
        raise UnsupportedModelError(
            f"fgrad.llm.hf.read: {folder}: config.json's model_type is {arch!r}, which "
            f"fgrad.llm does not read{why} (supported: {', '.join(ARCHITECTURES)})"
        )
    return config


def _shards(folder: str) -> tuple[list[str], dict[str, str] | None]:
    """The safetensors files to read and, for a sharded folder, tensor name -> file."""
    index_path = os.path.join(folder, _INDEX)
    if os.path.isfile(index_path):
        try:
            with open(index_path, encoding="utf-8") as f:
                index = json.load(f)
        except (ValueError, UnicodeDecodeError) as e:
            raise _fail(folder, f"{_INDEX} is not valid JSON ({e})") from None
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            raise _fail(folder, f"{_INDEX} has no weight_map of tensor name -> shard file")
        files = sorted(set(weight_map.values()))
        for name in files:  # a shard is a file name inside the folder, never a path out of it
            if os.path.basename(name) != name or name in ("", ".", ".."):
                raise _fail(folder, f"{_INDEX} names the shard {name!r}, which is not a file name")
        missing = [name for name in files if not os.path.isfile(os.path.join(folder, name))]
        if missing:
            raise _fail(
                folder,
                f"{len(missing)} of the {len(files)} shards that {_INDEX} lists are missing: "
                f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} (download them)",
            )
        return files, weight_map
    if os.path.isfile(os.path.join(folder, _SINGLE)):
        return [_SINGLE], None
    others = sorted(n for n in os.listdir(folder) if n.endswith((".bin", ".pt", ".pth", ".ckpt")))
    hint = (
        f"; it has {', '.join(others[:3])}: PyTorch pickles, which fgrad does not load "
        "(they can run code); convert them to safetensors"
        if others
        else ""
    )
    raise _fail(folder, f"no {_SINGLE} and no {_INDEX}{hint}")


def read(folder: str | os.PathLike, *, dtype: str = "float32") -> HFCheckpoint:
    """Read a Hugging Face checkpoint folder: ``config.json`` and the safetensors weights.

    Args:
        folder: the folder (``config.json`` plus ``model.safetensors``, or
            ``model.safetensors.index.json`` and the shards it names).
        dtype: ``"float32"`` (bfloat16 and float16 weights widened exactly) or
            ``"float16"`` (rounded; half the memory).

    Returns:
        An :class:`HFCheckpoint` (``config``, ``arch``, ``tensors`` by their Hugging Face
        names).

    Raises:
        fgrad.llm.config.UnsupportedModelError: (a ValueError) a ``model_type`` fgrad.llm
            does not read (the message names it, says why for BERT's relatives, and lists
            the supported ones).
        ValueError: ``dtype`` is not one of the two; no ``config.json``, or one that is not
            JSON; no weights file; shards missing (named); an index whose
            tensors are not where it says; a truncated or corrupt safetensors file (the
            message names it).
        ImportError: the ``safetensors`` (or, for bfloat16 weights, ``ml_dtypes``)
            package is not installed.

    Example:
        >>> import json, os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with open(os.path.join(folder, "config.json"), "w") as f:
        ...     json.dump({"model_type": "gpt_neox"}, f)
        >>> try:
        ...     read(folder)
        ... except ValueError as e:
        ...     print(str(e).split(": ", 2)[2])
        config.json's model_type is 'gpt_neox', which fgrad.llm does not read (supported: llama, qwen2, bert, roberta, xlm-roberta, camembert)
    """
    from fgrad import io

    if dtype not in _MODES:
        raise ValueError(f"fgrad.llm.hf.read: dtype must be 'float32' or 'float16', got {dtype!r}")
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise _fail(folder, "not a folder (pass the checkpoint's folder, which holds config.json)")
    config = _config(folder)
    files, weight_map = _shards(folder)
    want = np.dtype(dtype)
    tensors: dict[str, np.ndarray] = {}
    for name in files:
        path = os.path.join(folder, name)
        try:
            loaded = io.load(path)
        except ValueError as e:
            raise ValueError(f"fgrad.llm.hf.read: {e}") from None
        if not isinstance(loaded, dict):
            raise _fail(folder, f"{name} is an fgrad pytree checkpoint, not a model's flat tensors")
        for key, value in loaded.items():
            if weight_map is not None and weight_map.get(key) != name:
                where = weight_map.get(key)
                raise _fail(
                    folder,
                    f"{name} holds tensor {key!r}, which {_INDEX} "
                    + (f"puts in {where}" if where else "does not list"),
                )
            if key in tensors:
                raise _fail(folder, f"tensor {key!r} is in more than one file")
            arr = np.asarray(value)
            tensors[key] = arr.astype(want, copy=False) if arr.dtype.kind == "f" else arr
        del loaded
    if weight_map is not None:
        absent = sorted(set(weight_map) - set(tensors))
        if absent:
            raise _fail(
                folder,
                f"{_INDEX} lists {len(absent)} tensors that its shards do not hold: "
                f"{', '.join(absent[:5])}",
            )
    return HFCheckpoint(folder, config, config["model_type"], tensors, [os.path.join(folder, n) for n in files])
