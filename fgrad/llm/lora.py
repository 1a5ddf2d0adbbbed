"""LoRA and QLoRA: low-rank adapters as a transformation of the parameter pytree.

A LoRA adapter of a linear weight ``W`` (``(out, in)``, fgrad's and PyTorch's layout: the
product is ``x @ W.T``) is a pair ``A`` (``(rank, in)``) and ``B`` (``(out, rank)``); the
adapted product is

    ``y = x W^T + s * (x A^T) B^T``,  ``s = alpha / rank``  (rsLoRA: ``alpha / sqrt(rank)``),

computed as two thin products beside the base one, never by forming ``W + s B A``. ``A``
starts Kaiming-uniform as PEFT initialises it (``U(-1/sqrt(in), 1/sqrt(in))``, PyTorch's
``kaiming_uniform_(a=sqrt(5))``), ``B`` at zero, so the adapted model starts equal to the
base, bit for bit.

The adapters live apart from the base: :func:`init` returns a :class:`LoraAdapters`
pytree (only ``A`` and ``B`` are leaves), and :func:`apply` returns the base's parameter
pytree with each targeted weight replaced by a :class:`LoraWeight` node that holds the
base weight (the same array, not a copy), ``A``, ``B`` and the scale. So
``fgrad.grad(loss)(adapters)`` with ``loss(adapters) = f(apply(params, adapters))``
differentiates the adapters only: the base is a constant of the loss, never differentiated
nor copied. The base weights may be dense, kept quantized
(:class:`fgrad.llm.quantized.QuantizedWeight`, the GGUF blocks) or int8
(:class:`fgrad.llm.int8.Int8Weight`): that is QLoRA, with gradients flowing through the
quantized product to the activations and on to the adapters.

Target names are PEFT's (Hugging Face module names) or fgrad's parameter names:

=============  ============  ==========================================
PEFT / HF      fgrad         PEFT tensor name in ``adapter_model.safetensors``
=============  ============  ==========================================
``q_proj``     ``wq``        ``base_model.model.model.layers.{i}.self_attn.q_proj.lora_{A,B}.weight``
``k_proj``     ``wk``        ``...layers.{i}.self_attn.k_proj...``
``v_proj``     ``wv``        ``...layers.{i}.self_attn.v_proj...``
``o_proj``     ``wo``        ``...layers.{i}.self_attn.o_proj...``
``gate_proj``  ``w_gate``    ``...layers.{i}.mlp.gate_proj...``
``up_proj``    ``w_up``      ``...layers.{i}.mlp.up_proj...``
``down_proj``  ``w_down``    ``...layers.{i}.mlp.down_proj...``
=============  ============  ==========================================

:func:`save` writes a folder PEFT loads (``PeftModel.from_pretrained``):
``adapter_model.safetensors`` with those names, ``lora_A.weight`` ``(r, in)`` and
``lora_B.weight`` ``(out, r)``, and ``adapter_config.json`` (``peft_type: "LORA"``, ``r``,
``lora_alpha``, ``target_modules``, ``use_rslora``, ...); :func:`load` reads PEFT's.
Both files are written atomically. Checked against PEFT 0.21 in
``tests/llm/test_lora.py`` (adapters PEFT made, stored in ``tests/llm/data/lora/``).

Example:
    >>> from fgrad.llm.config import ModelConfig
    >>> from fgrad.llm.model import Transformer
    >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=2, n_heads=4,
    ...                   n_kv_heads=2, d_head=4, d_ff=32)
    >>> module = Transformer(cfg)
    >>> params = module.init(fgrad.random.key(0))
    >>> adapters = init(fgrad.random.key(1), params, rank=4, alpha=8)
    >>> adapters.targets, adapters.scale, n_params(adapters)
    (('q_proj', 'v_proj'), 2.0, 448)
    >>> tokens = fnp.array([[1, 2, 3]])
    >>> base = module.apply(params, tokens)[0]
    >>> bool(fnp.all(module.apply(apply(params, adapters), tokens)[0] == base))
    True

References:
    Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", 2021,
    arXiv:2106.09685; Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs",
    2023, arXiv:2305.14314; Kalajdzievski, "A Rank Stabilization Scaling Factor for
    Fine-Tuning with LoRA", 2023, arXiv:2312.03732 (rsLoRA); Hugging Face PEFT
    (``peft/tuners/lora/layer.py``: initialisation, scaling; ``peft/utils/save_and_load.py``:
    tensor names).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad.numpy as fnp
from fgrad import random, tree
from fgrad.errors import ShapeError

__all__ = [
    "LoraAdapters",
    "LoraPair",
    "LoraWeight",
    "TARGETS",
    "apply",
    "init",
    "load",
    "merge",
    "n_params",
    "save",
    "unmerge",
]

TARGETS = {
    "q_proj": "wq",
    "k_proj": "wk",
    "v_proj": "wv",
    "o_proj": "wo",
    "gate_proj": "w_gate",
    "up_proj": "w_up",
    "down_proj": "w_down",
}
"""PEFT's (Hugging Face's) module name -> fgrad's parameter name in a layer."""

_MODULE = {
    "wq": "self_attn.q_proj",
    "wk": "self_attn.k_proj",
    "wv": "self_attn.v_proj",
    "wo": "self_attn.o_proj",
    "w_gate": "mlp.gate_proj",
    "w_up": "mlp.up_proj",
    "w_down": "mlp.down_proj",
}
_PEFT_NAME = {ours: hf for hf, ours in TARGETS.items()}
_PREFIX = "base_model.model.model.layers."
_TENSOR = re.compile(
    r"^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])(?:\.default)?\.weight$"
)
WEIGHTS_NAME = "adapter_model.safetensors"
CONFIG_NAME = "adapter_config.json"


class LoraPair(NamedTuple):
    """One weight's adapter: ``a`` of shape ``(rank, in)`` and ``b`` of shape ``(out, rank)``."""

    a: Any
    b: Any


@dataclass(frozen=True)
class LoraAdapters:
    """The adapters of a model: per layer, a dict from fgrad weight name to :class:`LoraPair`.

    A pytree whose leaves are the ``A`` and ``B`` matrices (``rank``, ``alpha`` and
    ``use_rslora`` are static), so ``grad`` returns a LoraAdapters of gradients and the
    optimisers of :mod:`fgrad.optim` update it.

    Attributes:
        layers: tuple with one dict per layer of the model (an empty dict: that layer has
            no adapter), mapping ``"wq"``, ``"wv"``, ... to a :class:`LoraPair`.
        rank: the rank ``r``.
        alpha: ``lora_alpha``.
        use_rslora: scale by ``alpha / sqrt(rank)`` (rsLoRA) instead of ``alpha / rank``.
    """

    layers: tuple
    rank: int
    alpha: float
    use_rslora: bool = False

    @property
    def scale(self) -> float:
        """``alpha / rank``, or ``alpha / sqrt(rank)`` with ``use_rslora``."""
        return self.alpha / (math.sqrt(self.rank) if self.use_rslora else self.rank)

    @property
    def targets(self) -> tuple[str, ...]:
        """The PEFT module names adapted (in fgrad's layer order)."""
        names = {name for layer in self.layers for name in layer}
        return tuple(_PEFT_NAME[n] for n in _MODULE if n in names)


tree.register_dataclass(LoraAdapters, meta_fields=("rank", "alpha", "use_rslora"))


class LoraWeight:
    """A base weight with its adapter: ``linear(x, w)`` is ``x W^T + scale (x A^T) B^T``.

    A pytree node whose children are the base weight (a Tensor, a
    :class:`~fgrad.llm.quantized.QuantizedWeight` or an :class:`~fgrad.llm.int8.Int8Weight`),
    ``a`` and ``b``; ``scale`` is static. :func:`apply` builds these; the model's
    ``linear`` calls :meth:`__fgrad_linear__`.

    Attributes:
        base: the ``(out, in)`` base weight.
        a: ``(rank, in)`` Tensor.
        b: ``(out, rank)`` Tensor.
        scale: the float multiplying the adapter's product.
    """

    __slots__ = ("base", "a", "b", "scale")

    def __init__(self, base: Any, a: Any, b: Any, scale: float):
        self.base, self.a, self.b, self.scale = base, a, b, float(scale)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.base.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.base.dtype)

    def __fgrad_linear__(self, x: Any) -> Any:
        from fgrad.llm.quantized import linear

        # PEFT's order: the base result, plus lora_B(lora_A(x)) * scaling.
        return linear(x, self.base) + linear(linear(x, self.a), self.b) * self.scale

    def __repr__(self) -> str:
        return f"LoraWeight(shape={self.shape}, rank={self.a.shape[0]}, scale={self.scale})"


def _lora_unflatten(scale: float, children: Any) -> LoraWeight:
    w = object.__new__(LoraWeight)
    w.base, w.a, w.b = children
    w.scale = scale
    return w


tree.register(LoraWeight, lambda w: ((w.base, w.a, w.b), w.scale), _lora_unflatten)


# ------------------------------------------------------------------------- building


def _resolve_targets(targets: Any, fn: str) -> tuple[str, ...]:
    """PEFT or fgrad names -> fgrad names, in the layer's order; ValueError listing both."""
    if isinstance(targets, str):
        targets = (targets,)
    targets = tuple(targets)
    if not targets:
        raise ValueError(f"lora.{fn}: targets is empty; choose from {', '.join(TARGETS)}")
    ours = set()
    for name in targets:
        if name in TARGETS:
            ours.add(TARGETS[name])
        elif name in _MODULE:
            ours.add(name)
        else:
            raise ValueError(
                f"lora.{fn}: unknown target {name!r}; the targets are the PEFT names "
                f"{', '.join(TARGETS)} or fgrad's {', '.join(_MODULE)}"
            )
    return tuple(n for n in _MODULE if n in ours)


def _params_of(params: Any) -> dict:
    p = getattr(params, "params", params)  # a Model or its parameter dict
    if not isinstance(p, dict) or "layers" not in p:
        raise TypeError(
            f"lora: expected a model's parameter dict (with 'layers') or a Model, got "
            f"{type(params).__name__}"
        )
    return p


def _float_dtype(w: Any) -> np.dtype:
    dtype = np.dtype(getattr(w, "dtype", np.float32))
    return dtype if dtype.kind == "f" else np.dtype(np.float32)


def init(
    key: Any,
    params: Any,
    rank: int,
    alpha: float,
    targets: Any = ("q_proj", "v_proj"),
    *,
    use_rslora: bool = False,
    dtype: Any = None,
) -> LoraAdapters:
    """Adapters for the ``targets`` of every layer: ``A`` Kaiming-uniform, ``B`` zero.

    Args:
        key: a :mod:`fgrad.random` key.
        params: the model's parameter pytree (or a :class:`~fgrad.llm.model.Model`); only
            the weights' shapes are read, so a quantized base works as a dense one.
        rank: ``r`` > 0, at most ``min(out, in)`` of every target.
        alpha: ``lora_alpha``; the adapter's product is scaled by ``alpha / rank``.
        targets: PEFT module names (``"q_proj"``, ``"v_proj"``, ``"down_proj"``, ...) or
            fgrad parameter names (``"wq"``, ...); see the module's table.
        use_rslora: scale by ``alpha / sqrt(rank)`` (rsLoRA) instead.
        dtype: of ``A`` and ``B``; default the base weight's floating dtype (float32 for a
            quantized base).

    Returns:
        A :class:`LoraAdapters`: ``A`` of shape ``(rank, in)`` uniform on
        ``[-1/sqrt(in), 1/sqrt(in))`` (PyTorch's ``kaiming_uniform_(a=sqrt(5))``, as PEFT
        does), ``B`` of shape ``(out, rank)`` zero.

    Raises:
        ValueError: ``rank`` <= 0 or larger than a target's ``min(out, in)``, ``alpha`` not
            positive, or an unknown target (the message lists the names).
        KeyError: a target weight is missing from a layer.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> params = Transformer(cfg).init(fgrad.random.key(0))
        >>> ad = init(fgrad.random.key(1), params, 2, 4.0, targets=("q_proj", "down_proj"))
        >>> ad.layers[0]["w_down"].a.shape, ad.layers[0]["w_down"].b.shape
        ((2, 32), (16, 2))
    """
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or rank <= 0:
        raise ValueError(f"lora.init: rank must be a positive int, got {rank!r}")
    if not isinstance(alpha, (int, float, np.number)) or not alpha > 0:
        raise ValueError(f"lora.init: alpha must be a positive number, got {alpha!r}")
    names = _resolve_targets(targets, "init")
    p = _params_of(params)
    layers = []
    for i, layer in enumerate(p["layers"]):
        pairs = {}
        for name in names:
            if name not in layer:
                raise KeyError(f"lora.init: layer {i} has no weight {name!r} (it has {sorted(layer)})")
            w = layer[name]
            out_f, in_f = (int(d) for d in w.shape)
            if rank > min(out_f, in_f):
                raise ValueError(
                    f"lora.init: rank {rank} exceeds min(out, in) = {min(out_f, in_f)} of "
                    f"layer {i}'s {name} ({out_f}, {in_f})"
                )
            dt = np.dtype(dtype) if dtype is not None else _float_dtype(w)
            key, sub = random.split(key)
            bound = 1.0 / math.sqrt(in_f)
            a = random.uniform(sub, (int(rank), in_f), dt, -bound, bound)
            pairs[name] = LoraPair(a, fnp.zeros((out_f, int(rank)), dtype=dt))
        layers.append(pairs)
    return LoraAdapters(tuple(layers), int(rank), float(alpha), bool(use_rslora))


def _check_fit(p: dict, adapters: LoraAdapters, fn: str) -> None:
    if not isinstance(adapters, LoraAdapters):
        raise TypeError(f"lora.{fn}: adapters must be LoraAdapters, got {type(adapters).__name__}")
    if len(adapters.layers) != len(p["layers"]):
        raise ShapeError(
            f"lora.{fn}: the adapters have {len(adapters.layers)} layers, the model "
            f"{len(p['layers'])}"
        )
    for i, (layer, pairs) in enumerate(zip(p["layers"], adapters.layers)):
        for name, pair in pairs.items():
            if name not in layer:
                raise KeyError(f"lora.{fn}: layer {i} has no weight {name!r} to adapt")
            out_f, in_f = (int(d) for d in layer[name].shape)
            a, b = tuple(pair.a.shape), tuple(pair.b.shape)
            if len(a) != 2 or len(b) != 2 or a[1] != in_f or b[0] != out_f or a[0] != b[1]:
                raise ShapeError(
                    f"lora.{fn}: layer {i}'s {name} is ({out_f}, {in_f}); its adapter must be "
                    f"A (r, {in_f}) and B ({out_f}, r), got A {a} and B {b}"
                )


def _with_layers(params: Any, layers: list) -> Any:
    p = _params_of(params)
    new = dict(p, layers=layers)
    return params.module.bind(new) if hasattr(params, "module") and hasattr(params, "params") else new


def apply(params: Any, adapters: LoraAdapters) -> Any:
    """The parameters with each adapted weight wrapped in a :class:`LoraWeight`.

    Nothing is copied: the new pytree refers to the base's arrays. Differentiate a loss of
    ``apply(params, adapters)`` with respect to ``adapters`` to train them with the base
    frozen.

    Args:
        params: the parameter pytree or a :class:`~fgrad.llm.model.Model` (then a Model is
            returned).
        adapters: :class:`LoraAdapters` for this model (from :func:`init` or :func:`load`).

    Returns:
        The same kind of pytree, its targeted weights replaced by :class:`LoraWeight`.

    Raises:
        ShapeError: the adapters' layer count or shapes do not fit the model.
        KeyError: an adapted weight is missing from the model.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> params = Transformer(cfg).init(fgrad.random.key(0))
        >>> wrapped = apply(params, init(fgrad.random.key(1), params, 2, 4.0))
        >>> wrapped["layers"][0]["wq"]
        LoraWeight(shape=(16, 16), rank=2, scale=2.0)
        >>> wrapped["layers"][0]["wq"].base is params["layers"][0]["wq"]
        True
    """
    p = _params_of(params)
    _check_fit(p, adapters, "apply")
    scale = adapters.scale
    layers = []
    for layer, pairs in zip(p["layers"], adapters.layers):
        if pairs:
            layer = dict(layer)
            for name, pair in pairs.items():
                layer[name] = LoraWeight(layer[name], pair.a, pair.b, scale)
        layers.append(layer)
    return _with_layers(params, layers)


def _dense(w: Any) -> Any:
    if hasattr(w, "dequantize"):  # a kept-quantized or int8 base: merged weights are dense
        return fnp.asarray(w.dequantize())
    return w


def _delta(pair: LoraPair, scale: float) -> Any:
    return fnp.matmul(pair.b, pair.a) * scale  # (out, r) @ (r, in)


def merge(params: Any, adapters: LoraAdapters) -> Any:
    """Dense parameters with the adapters added in: ``W + scale * B @ A``.

    A quantized base weight is dequantized first (merged weights are dense float32).

    Args:
        params: the base's parameter pytree or Model.
        adapters: :class:`LoraAdapters` for it.

    Returns:
        The same kind of pytree, with plain weights (no :class:`LoraWeight`): the merged
        model computes the adapted model's logits (equal up to float rounding).

    Raises:
        ShapeError, KeyError: as :func:`apply`.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> params = Transformer(cfg).init(fgrad.random.key(0))
        >>> ad = init(fgrad.random.key(1), params, 2, 4.0)
        >>> bool(fnp.all(merge(params, ad)["layers"][0]["wq"] == params["layers"][0]["wq"]))
        True
    """
    return _shifted(params, adapters, 1.0, "merge")


def unmerge(params: Any, adapters: LoraAdapters) -> Any:
    """Subtract merged adapters again: ``W - scale * B @ A`` (the base, up to rounding).

    Args:
        params: parameters that :func:`merge` returned (or a Model of them).
        adapters: the adapters that were merged.

    Returns:
        The same kind of pytree with the adapters' product subtracted from the adapted
        weights (exact in real arithmetic; within float rounding of the base here).

    Raises:
        ShapeError, KeyError: as :func:`apply`.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> params = Transformer(cfg).init(fgrad.random.key(0))
        >>> ad = init(fgrad.random.key(1), params, 2, 4.0)
        >>> back = unmerge(merge(params, ad), ad)
        >>> bool(fnp.all(back["layers"][0]["wv"] == params["layers"][0]["wv"]))
        True
    """
    return _shifted(params, adapters, -1.0, "unmerge")


def _shifted(params: Any, adapters: Any, sign: float, fn: str) -> Any:
    """``params`` with ``sign * scale * B A`` added to each adapted weight (made dense)."""
    p = _params_of(params)
    _check_fit(p, adapters, fn)
    layers = []
    for layer, pairs in zip(p["layers"], adapters.layers):
        if pairs:
            layer = dict(layer)
            for name, pair in pairs.items():
                w = _dense(layer[name])
                layer[name] = fnp.astype(w + sign * _delta(pair, adapters.scale), w.dtype)
        layers.append(layer)
    return _with_layers(params, layers)


def n_params(adapters: LoraAdapters) -> int:
    """The number of trainable values (the sizes of every ``A`` and ``B``).

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> params = Transformer(cfg).init(fgrad.random.key(0))
        >>> n_params(init(fgrad.random.key(1), params, 2, 4.0))  # rank 2 on q and v
        112
    """
    return sum(int(np.prod(leaf.shape)) for leaf in tree.leaves(adapters))


# ------------------------------------------------------------------------- files


def save(
    folder: str | os.PathLike,
    adapters: LoraAdapters,
    *,
    base_model_name_or_path: str | None = None,
) -> None:
    """Write ``adapter_model.safetensors`` and ``adapter_config.json`` as PEFT does.

    Tensor names are ``base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight``
    (``(r, in)``) and ``...lora_B.weight`` (``(out, r)``), float32 or the adapters'
    dtype; the config has PEFT's keys (``peft_type: "LORA"``, ``task_type: "CAUSAL_LM"``,
    ``r``, ``lora_alpha``, ``target_modules``, ``use_rslora``, ``lora_dropout`` 0,
    ``bias: "none"``, ...). Each file is written atomically (a temporary renamed over it).
    Needs the ``safetensors`` package.

    Args:
        folder: created if missing; existing adapter files are replaced.
        adapters: the :class:`LoraAdapters` to write.
        base_model_name_or_path: recorded in the config (PEFT reads it to find the base).

    Raises:
        TypeError: ``adapters`` is not a LoraAdapters.
        OSError: the folder cannot be written.

    Example:
        >>> import tempfile
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> ad = init(fgrad.random.key(1), Transformer(cfg).init(fgrad.random.key(0)), 2, 4.0)
        >>> folder = tempfile.mkdtemp()
        >>> save(folder, ad)
        >>> sorted(os.listdir(folder))
        ['adapter_config.json', 'adapter_model.safetensors']
        >>> load(folder).targets
        ('q_proj', 'v_proj')
    """
    from safetensors.numpy import save_file

    from fgrad import _io_files

    if not isinstance(adapters, LoraAdapters):
        raise TypeError(f"lora.save: adapters must be LoraAdapters, got {type(adapters).__name__}")
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    tensors = {}
    for i, pairs in enumerate(adapters.layers):
        for name, pair in pairs.items():
            stem = f"{_PREFIX}{i}.{_MODULE[name]}"
            tensors[f"{stem}.lora_A.weight"] = np.ascontiguousarray(np.asarray(pair.a))
            tensors[f"{stem}.lora_B.weight"] = np.ascontiguousarray(np.asarray(pair.b))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model_name_or_path,
        "r": adapters.rank,
        "lora_alpha": adapters.alpha if adapters.alpha != int(adapters.alpha) else int(adapters.alpha),
        "target_modules": sorted(adapters.targets),
        "use_rslora": adapters.use_rslora,
        "lora_dropout": 0.0,
        "bias": "none",
        "fan_in_fan_out": False,
        "init_lora_weights": True,
        "inference_mode": True,
        "modules_to_save": None,
        "layers_to_transform": _layers_to_transform(adapters),
        "rank_pattern": {},
        "alpha_pattern": {},
        "use_dora": False,
        "revision": None,
    }
    _io_files.write_atomic(
        os.path.join(folder, WEIGHTS_NAME), lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"})
    )

    def write_config(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")

    _io_files.write_atomic(os.path.join(folder, CONFIG_NAME), write_config)


def _layers_to_transform(adapters: LoraAdapters) -> list[int] | None:
    present = [i for i, pairs in enumerate(adapters.layers) if pairs]
    return None if len(present) == len(adapters.layers) else present


def load(folder: str | os.PathLike, *, n_layers: int | None = None) -> LoraAdapters:
    """Read a PEFT LoRA adapter folder (``adapter_model.safetensors`` + ``adapter_config.json``).

    Args:
        folder: the folder PEFT's ``save_pretrained`` (or :func:`save`) wrote.
        n_layers: the model's layer count (default: one past the highest layer named in
            the file); layers without tensors get no adapter.

    Returns:
        :class:`LoraAdapters` with float32 (or the file's dtype) Tensors; bfloat16 files
        widen exactly to float32.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: not a LORA config, a variant fgrad does not implement (DoRA,
            ``rank_pattern``/``alpha_pattern``, ``fan_in_fan_out``, LoRA biases), a tensor
            name that is not a llama projection's ``lora_A``/``lora_B`` (named), a missing
            half of a pair, or shapes that disagree with ``r``.

    Example:
        >>> # see save()
    """
    from fgrad import io

    folder = os.fspath(folder)
    paths = [os.path.join(folder, n) for n in (CONFIG_NAME, WEIGHTS_NAME)]
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(f"lora.load: {path} is missing (a PEFT adapter folder has {CONFIG_NAME} and {WEIGHTS_NAME})")
    with open(paths[0]) as f:
        config = json.load(f)
    if config.get("peft_type") != "LORA":
        raise ValueError(f"lora.load: {paths[0]} has peft_type {config.get('peft_type')!r}, not 'LORA'")
    for key, ok in (("use_dora", False), ("fan_in_fan_out", False)):
        if bool(config.get(key, False)) != ok:
            raise ValueError(f"lora.load: {paths[0]}: {key}={config[key]!r} is not supported")
    for key in ("rank_pattern", "alpha_pattern"):
        if config.get(key):
            raise ValueError(f"lora.load: {paths[0]}: a per-module {key} is not supported")
    if config.get("bias", "none") != "none" or config.get("lora_bias"):
        raise ValueError(f"lora.load: {paths[0]}: LoRA biases are not supported")
    rank = int(config["r"])
    alpha = float(config["lora_alpha"])
    found: dict[tuple[int, str], dict[str, Any]] = {}
    for name, value in io.load(paths[1]).items():
        m = _TENSOR.match(name)
        hf = m and m.group(3)
        if m is None or hf not in TARGETS or _MODULE[TARGETS[hf]] != f"{m.group(2)}.{hf}":
            raise ValueError(
                f"lora.load: {paths[1]}: tensor {name!r} is not a llama projection's lora_A "
                f"or lora_B (expected {_PREFIX}{{i}}.self_attn.q_proj.lora_A.weight, ...)"
            )
        found.setdefault((int(m.group(1)), TARGETS[hf]), {})[m.group(4)] = value
    count = n_layers if n_layers is not None else 1 + max((i for i, _ in found), default=-1)
    layers: list[dict] = [{} for _ in range(count)]
    for (i, name), halves in sorted(found.items()):
        if set(halves) != {"A", "B"}:
            raise ValueError(f"lora.load: {paths[1]}: layer {i}'s {_PEFT_NAME[name]} lacks lora_{({'A', 'B'} - set(halves)).pop()}")
        if i >= count:
            raise ValueError(f"lora.load: {paths[1]} has layer {i}; the model has {count} layers")
        a, b = halves["A"], halves["B"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != rank or b.shape[1] != rank:
            raise ValueError(
                f"lora.load: {paths[1]}: layer {i}'s {_PEFT_NAME[name]} has lora_A {tuple(a.shape)} "
                f"and lora_B {tuple(b.shape)}; with r={rank} they must be (r, in) and (out, r)"
            )
        layers[i][name] = LoraPair(a, b)
    ordered = tuple({n: layer[n] for n in _MODULE if n in layer} for layer in layers)
    return LoraAdapters(ordered, rank, alpha, bool(config.get("use_rslora", False)))
