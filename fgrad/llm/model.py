"""The llama-family decoder (llama, qwen2) as a stateless function of a parameter pytree.

``Transformer(config).apply(params, tokens, cache)`` maps ``(batch, seq)`` token ids to
``(batch, seq, vocab_size)`` logits and the updated :class:`fgrad.llm.cache.KVCache`. Each
block is pre-norm: ``x + attention(rms_norm(x))``, then ``h + mlp(rms_norm(h))``, with
rotary position embeddings on the queries and keys, grouped-query attention and a SwiGLU
MLP ``down(silu(gate(x)) * up(x))``; a final RMSNorm and the output head (the embedding
matrix when tied) give the logits. :class:`Model` binds a ``Transformer`` to its
parameters: ``model(tokens, cache) -> (logits, cache)``, and is itself a pytree whose
leaves are the parameters, so ``grad`` differentiates it directly.

The parameter pytree::

    {"embed": (vocab_size, d_model),
     "layers": [{"attn_norm": (d_model,), "wq": (n_heads * d_head, d_model),
                 "wk", "wv": (n_kv_heads * d_head, d_model), "wo": (d_model, n_heads * d_head),
                 "bq", "bk", "bv" (qwen2 only), "ffn_norm": (d_model,),
                 "w_gate", "w_up": (d_ff, d_model), "w_down": (d_model, d_ff)}, ...],
     "norm": (d_model,),
     "head": (vocab_size, d_model)}        # absent when the head is tied

Linear weights are ``(out_features, in_features)`` as stored in GGUF and safetensors files
(the product is ``x @ w.T``), dense Tensors or :class:`fgrad.llm.quantized.QuantizedWeight`.

Example:
    >>> from fgrad.llm.config import ModelConfig
    >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=2, n_heads=4,
    ...                   n_kv_heads=2, d_head=4, d_ff=32)
    >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0)))
    >>> logits, cache = model(fnp.array([[1, 2, 3]]))
    >>> logits.shape
    (1, 3, 32)

References:
    Touvron et al., "LLaMA: Open and Efficient Foundation Language Models", 2023,
    arXiv:2302.13971; Su et al., "RoFormer", 2021, arXiv:2104.09864 (RoPE); Ainslie et
    al., "GQA", 2023, arXiv:2305.13245; Shazeer, "GLU Variants Improve Transformer", 2020,
    arXiv:2002.05202 (SwiGLU); Zhang and Sennrich, "Root Mean Square Layer
    Normalization", 2019, arXiv:1910.07467.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import random, tree
from fgrad.core.trace import Tracer
from fgrad.errors import ShapeError
from fgrad.llm.cache import KVCache
from fgrad.llm.config import ModelConfig
from fgrad.nn import dot_product_attention, rms_norm, rotary_embedding, rotary_tables, silu
from fgrad.tensor import Tensor

__all__ = ["Model", "Transformer"]


def _linear(x: Any, w: Any) -> Tensor:
    """``x @ w.T`` for an ``(out, in)`` weight, dense or quantized: one place to route it."""
    from fgrad.llm import quantized

    return quantized.linear(x, w)


def _linear_many(x: Any, ws: tuple) -> tuple:
    """``x @ w.T`` for each weight; kept-quantized ones of one type in one product."""
    from fgrad.llm import quantized

    return quantized.linear_many(x, ws)


def _embed(table: Any, tokens: Any) -> Tensor:
    """Rows of the embedding table; a quantized table dequantizes only the rows taken."""
    from fgrad.llm.quantized import QuantizedWeight, quantized_matmul

    take = getattr(type(table), "__fgrad_take__", None)
    if take is not None:  # another compressed table (fgrad.llm.int8.Int8Weight) looks up its rows
        return take(table, tokens)
    if not isinstance(table, QuantizedWeight):
        return fnp.take(table, tokens, axis=0)
    # The rows' packed blocks, dequantized by a product with the identity: I @ W_rows.T is
    # exactly W_rows.T (each sum has one nonzero term), in the op that runs under every
    # transform, and only the rows taken are ever dequantized.
    batch, seq = int(tokens.shape[0]), int(tokens.shape[1])
    d = table.shape[1]
    rows = fnp.take(table.blocks, fnp.reshape(tokens, (-1,)), axis=0)
    eye = fnp.eye(d, dtype=np.float32)
    cols = quantized_matmul(eye, rows, qtype=table.qtype, shape=(batch * seq, d))
    return fnp.reshape(fnp.matrix_transpose(cols), (batch, seq, d))


def check_fresh(cache: KVCache, name: str) -> None:
    """Raise ValueError when ``cache`` (its offset concrete) already holds positions: a
    ``fresh`` call would attend to its own keys only and miss them."""
    if int(cache.offset):
        raise ValueError(
            f"{name}: fresh=True, but the cache holds {int(cache.offset)} positions already; "
            "pass fresh=False"
        )


@dataclass(frozen=True, eq=False)
class Transformer:
    """A llama-family decoder: ``apply(params, tokens, cache) -> (logits, cache)``.

    Attributes:
        config: the :class:`fgrad.llm.config.ModelConfig`.
        rope_factors: optional ``(rope_dim // 2,)`` divisors of the rotary frequencies
            (a llama 3.1 GGUF file's ``rope_freqs.weight``).

    The rotary tables (cosines and sines of every position up to the context length) are
    built once per Transformer, not per call.

    Raises:
        ShapeError: ``rope_factors`` is not ``(rope_dim // 2,)``.
    """

    config: ModelConfig
    rope_factors: Any = None
    _tables: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.rope_factors is not None:
            factors = np.asarray(self.rope_factors, dtype=np.float64).reshape(-1)
            if factors.shape != (self.config.rope_dim // 2,):
                raise ShapeError(
                    f"Transformer: rope_factors must be ({self.config.rope_dim // 2},), got "
                    f"{factors.shape}"
                )
            object.__setattr__(self, "rope_factors", tuple(float(f) for f in factors))

    # ------------------------------------------------------------------ parameters

    def init(self, key: Any, *, dtype: Any = np.float32, scale: float = 0.02) -> dict:
        """Random parameters (normal, std ``scale``; norms at one), for tests and training.

        Returns:
            The parameter pytree of the module docstring, of ``dtype``.
        """
        c = self.config
        keys = iter(random.split(key, 2 + 7 * c.n_layers))

        def normal(shape):
            return fnp.astype(random.normal(next(keys), shape) * scale, dtype)

        def ones(n):
            return fnp.ones((n,), dtype=dtype)

        q, kv = c.n_heads * c.d_head, c.n_kv_heads * c.d_head
        layers = []
        for _ in range(c.n_layers):
            layer = {
                "attn_norm": ones(c.d_model),
                "wq": normal((q, c.d_model)),
                "wk": normal((kv, c.d_model)),
                "wv": normal((kv, c.d_model)),
                "wo": normal((c.d_model, q)),
                "ffn_norm": ones(c.d_model),
                "w_gate": normal((c.d_ff, c.d_model)),
                "w_up": normal((c.d_ff, c.d_model)),
                "w_down": normal((c.d_model, c.d_ff)),
            }
            if c.qkv_bias:
                layer.update(bq=fnp.zeros((q,), dtype), bk=fnp.zeros((kv,), dtype),
                             bv=fnp.zeros((kv,), dtype))
            layers.append(layer)
        params = {"embed": normal((c.vocab_size, c.d_model)), "layers": layers, "norm": ones(c.d_model)}
        if not c.tied_embeddings:
            params["head"] = normal((c.vocab_size, c.d_model))
        return params

    def bind(self, params: dict) -> Model:
        """A :class:`Model` of this Transformer and ``params``."""
        return Model(self, params)

    def inv_freq(self) -> np.ndarray:
        """The ``(rope_dim // 2,)`` inverse rotary frequencies after scaling (float64)."""
        c = self.config
        inv = c.rope_base ** (-np.arange(0, c.rope_dim, 2, dtype=np.float64) / c.rope_dim)
        if c.rope_scaling is not None:
            inv = c.rope_scaling.apply(inv)
        if self.rope_factors is not None:
            inv = inv / np.asarray(self.rope_factors)
        return inv

    def tables(self, dtype: Any = np.float32) -> tuple[Tensor, Tensor]:
        """``(cos, sin)``, each ``(context_length, rope_dim // 2)``; built once per dtype."""
        key = np.dtype(dtype).name
        if key not in self._tables:
            self._tables[key] = rotary_tables(
                self.config.context_length, self.config.rope_dim, inv_freq=self.inv_freq(), dtype=dtype
            )
        return self._tables[key]

    # ------------------------------------------------------------------ forward

    def apply(
        self,
        params: dict,
        tokens: Any = None,
        cache: KVCache | None = None,
        *,
        embeddings: Any = None,
        last_only: bool = False,
        fresh: bool = False,
    ) -> tuple[Tensor, KVCache | None]:
        """Logits of the next token at each position, and the cache with these positions added.

        Args:
            params: the parameter pytree (module docstring).
            tokens: ``(batch, seq)`` integer Tensor of token ids (or give ``embeddings``).
            cache: a :class:`KVCache` holding earlier positions, or None: the sequence
                stands alone (positions from 0, causal mask).
            embeddings: ``(batch, seq, d_model)`` floating Tensor used instead of looking
                up ``tokens`` (for gradients with respect to the input embeddings).
            last_only: compute the head only at the last position (what decoding needs:
                it saves a ``(seq, d_model) x (d_model, vocab)`` product).
            fresh: the cache holds no position yet (offset 0), so attention reads this
                call's keys only, not every slot of the cache (a prompt's first prefill:
                the empty slots would be masked out anyway). The keys and values still go
                into the cache. A nonzero offset raises ValueError only when it is
                concrete: under your own ``jit`` it is traced, the check cannot run, and a
                misused ``fresh=True`` gives wrong logits silently (the prefill of
                :func:`fgrad.llm.generation.decode_fns` checks before its jitted call).

        Returns:
            ``(logits, cache)``: ``(batch, seq, vocab_size)`` (``(batch, 1, vocab_size)``
            with ``last_only``) Tensor in the activations' dtype, and the new cache (None
            when none was given).

        Raises:
            ShapeError: ``tokens`` is not 2-D, ``embeddings`` not ``(batch, seq, d_model)``,
                the cache's batch differs, or the positions would pass the cache's end or
                the model's context (when the offset is known).
            ValueError: neither or both of ``tokens`` and ``embeddings``, or ``fresh``
                with a cache whose offset is known and not 0.
        """
        c = self.config
        if (tokens is None) == (embeddings is None):
            raise ValueError("Transformer.apply: pass exactly one of tokens and embeddings")
        if embeddings is None:
            tokens = tokens if hasattr(tokens, "shape") else fnp.asarray(tokens)
            if len(tokens.shape) != 2:
                raise ShapeError(
                    f"Transformer.apply: tokens must be (batch, seq) ids, got shape "
                    f"{tuple(tokens.shape)}; add a batch axis with tokens[None]"
                )
            x = _embed(params["embed"], tokens)
        else:
            x = embeddings
            if len(x.shape) != 3 or x.shape[-1] != c.d_model:
                raise ShapeError(
                    f"Transformer.apply: embeddings must be (batch, seq, d_model={c.d_model}), "
                    f"got {tuple(x.shape)}"
                )
        batch, seq = int(x.shape[0]), int(x.shape[1])
        cos_table, sin_table = self.tables(x.dtype)
        if cache is None:
            positions = fnp.arange(seq)[None, :]
            kpos = fnp.arange(seq)
            qpos = fnp.arange(seq)
            start = None
        else:
            if cache.batch != batch:
                raise ShapeError(
                    f"Transformer.apply: the cache holds {cache.batch} rows, the tokens {batch}"
                )
            offset = cache.offset
            if not isinstance(offset, Tracer):
                if fresh:
                    check_fresh(cache, "Transformer.apply")
                end = int(offset) + seq
                if end > cache.max_len:
                    raise ShapeError(
                        f"Transformer.apply: positions up to {end} do not fit in the cache of "
                        f"{cache.max_len}; create a longer KVCache"
                    )
            qpos = offset + fnp.arange(seq)  # cache slots of the queries
            positions = fnp.maximum(qpos[None, :] - cache.pad[:, None], 0)
            kpos = fnp.arange(seq if fresh else cache.max_len)  # key slots attended to
            start = cache.pad
        if cache is None and seq > c.context_length:
            raise ShapeError(
                f"Transformer.apply: {seq} positions exceed the context of {c.context_length}"
            )
        cos = fnp.take(cos_table, positions, axis=0)[:, None]  # (batch, 1, seq, rope_dim/2)
        sin = fnp.take(sin_table, positions, axis=0)[:, None]
        # Lower-right causal mask at the cache offset: query slot q sees key slots <= q,
        # past the row's left padding. Rows are (group, seq) flattened (see _attention).
        qrows = fnp.tile(qpos, c.group)
        mask = fnp.less_equal(kpos[None, :], qrows[:, None])[None, None]
        if start is not None:
            mask = fnp.logical_and(mask, fnp.greater_equal(kpos[None, :], start[:, None])[:, None, None])
        new_keys, new_values = [], []
        for i, layer in enumerate(params["layers"]):
            h = rms_norm(x, layer["attn_norm"], eps=c.norm_eps)
            kv = None if cache is None else (cache.keys[i], cache.values[i], cache.offset, fresh)
            h, k_all, v_all = self._attention(layer, h, cos, sin, mask, kv)
            new_keys.append(k_all)
            new_values.append(v_all)
            x = x + h
            h = rms_norm(x, layer["ffn_norm"], eps=c.norm_eps)
            gate, up = _linear_many(h, (layer["w_gate"], layer["w_up"]))
            h = _linear(silu(gate) * up, layer["w_down"])
            x = x + h
        if last_only:
            x = x[:, -1:]
        x = rms_norm(x, params["norm"], eps=c.norm_eps)
        logits = _linear(x, params["embed"] if c.tied_embeddings else params["head"])
        if cache is None:
            return logits, None
        return logits, KVCache(tuple(new_keys), tuple(new_values), cache.offset + seq, cache.pad)

    def _attention(self, layer, h, cos, sin, mask, kv):
        """Grouped-query self-attention of one block: ``(output, keys, values)``."""
        c = self.config
        batch, seq = int(h.shape[0]), int(h.shape[1])

        def heads(y, b, n):
            if b in layer:
                y = y + layer[b]
            return fnp.permute_dims(fnp.reshape(y, (batch, seq, n, c.d_head)), (0, 2, 1, 3))

        q, k, v = _linear_many(h, (layer["wq"], layer["wk"], layer["wv"]))
        q = heads(q, "bq", c.n_heads)
        k = heads(k, "bk", c.n_kv_heads)
        v = heads(v, "bv", c.n_kv_heads)
        q = rotary_embedding(q, cos, sin, interleaved=c.rope_interleaved)
        k = rotary_embedding(k, cos, sin, interleaved=c.rope_interleaved)
        k_seen, v_seen = k, v  # what attention reads: this call's keys (no cache, fresh)
        if kv is not None:
            k_cache, v_cache, offset, fresh = kv
            k = fnp.dynamic_update_slice(k_cache, fnp.astype(k, k_cache.dtype), (0, 0, offset, 0))
            v = fnp.dynamic_update_slice(v_cache, fnp.astype(v, v_cache.dtype), (0, 0, offset, 0))
            if not fresh:  # or every slot of the cache
                k_seen, v_seen = k, v
        # Query head h reads KV head h // group: the group's queries become extra rows of
        # one product per KV head (no copy of the keys), rows ordered (group, seq).
        qg = fnp.reshape(q, (batch, c.n_kv_heads, c.group * seq, c.d_head))
        out = dot_product_attention(
            qg, fnp.astype(k_seen, q.dtype), fnp.astype(v_seen, q.dtype), mask=mask
        )
        out = fnp.reshape(out, (batch, c.n_heads, seq, c.d_head))
        out = fnp.reshape(fnp.permute_dims(out, (0, 2, 1, 3)), (batch, seq, c.n_heads * c.d_head))
        return _linear(out, layer["wo"]), k, v


@dataclass(frozen=True)
class Model:
    """A :class:`Transformer` bound to its parameters: ``model(tokens, cache) -> (logits, cache)``.

    A pytree: its leaves are the parameters (the Transformer is static), so
    ``fgrad.grad(loss)(model)`` returns a Model of gradients and ``jit`` takes it as an
    argument.

    Attributes:
        module: the :class:`Transformer`.
        params: its parameter pytree.
    """

    module: Transformer
    params: dict

    @property
    def config(self) -> ModelConfig:
        """The model's :class:`fgrad.llm.config.ModelConfig`."""
        return self.module.config

    def __call__(self, tokens: Any = None, cache: KVCache | None = None, **kwargs: Any):
        """``self.module.apply(self.params, tokens, cache, **kwargs)``."""
        return self.module.apply(self.params, tokens, cache, **kwargs)

    def new_cache(self, batch: int, max_len: int, *, pad: Any = None) -> KVCache:
        """An empty :class:`KVCache` in the dtype of the model's norms (float32 if quantized)."""
        dtype = self.params["norm"].dtype
        return KVCache.create(self.config, batch, max_len, dtype=dtype, pad=pad)

    @property
    def nbytes(self) -> int:
        """Bytes held by the parameters (packed blocks for quantized weights)."""
        total = 0
        for leaf in tree.leaves(self.params):
            nbytes = getattr(leaf, "nbytes", None)
            if nbytes is None:
                nbytes = int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize
            total += int(nbytes)
        return total


tree.register_dataclass(Model, meta_fields=("module",))
