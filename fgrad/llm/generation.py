"""Generation with a KV cache: prefill the prompt, then one jitted call per token.

:func:`generate` yields token ids as they are chosen. The prompt is prefilled in one
jitted call per chunk of ``prefill_chunk`` tokens (one call for most prompts), each
writing its keys and values into a preallocated :class:`fgrad.llm.cache.KVCache`. Then
every new token is ONE jitted call: the model on one position, the sampler, the count of
seen tokens for penalties and the next key, with the cache donated (its arrays may hold
the outputs) and the position a traced value of the cache, so that the call is traced
once per model, sampler and cache size and never per token. :func:`generate_batch` runs
several prompts at once, left-padded to one length.

Example:
    >>> from fgrad.llm import ModelConfig, Transformer, sampling
    >>> cfg = ModelConfig("llama", vocab_size=16, d_model=8, n_layers=1, n_heads=2,
    ...                   n_kv_heads=1, d_head=4, d_ff=16)
    >>> model = Transformer(cfg).bind(Transformer(cfg).init(fgrad.random.key(0), scale=1.0))
    >>> list(generate(model, None, [1, 2, 3], 4, sampling.greedy()))
    [12, 8, 12, 12]
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random
from fgrad.llm.cache import KVCache
from fgrad.llm.sampling import Sampler, greedy

__all__ = ["PromptTooLongError", "generate", "generate_batch", "decode_fns"]

_CACHE_ROUND = 128  # cache lengths are rounded up to this: fewer distinct jit signatures
_FNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class PromptTooLongError(ValueError):
    """A prompt that does not fit in the model's context."""


def decode_fns(module: Any, sampler: Sampler) -> tuple:
    """The jitted ``(prefill, step, first)`` functions of a Transformer and a sampler.

    * ``prefill(params, cache, tokens, fresh=False) -> (logits, cache)``: ``(batch, seq)``
      tokens into the cache (donated); the last position's ``(batch, vocab)`` logits;
      ``fresh`` (static): the cache is empty, attention reads the prompt's keys only;
    * ``step(params, cache, tokens, counts, key) -> (next, cache, counts, key)``: one
      position for every row (``tokens`` ``(batch, 1)``), sampled; cache and counts
      donated;
    * ``first(logits, counts, key) -> (next, counts, key)``: the sampler on prefill's logits.

    Made once per (module, sampler) and kept while the module lives, so their jit caches
    persist between :func:`generate` calls (``step.cache_info()`` counts the traces).

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Transformer
        >>> from fgrad.llm.sampling import Sampler
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> prefill, step, first = decode_fns(Transformer(cfg), Sampler())
        >>> type(step).__name__  # jitted: one trace serves every decode step
        'Jitted'
    """
    per_module = _FNS.setdefault(module, {})
    if sampler in per_module:
        return per_module[sampler]
    vocab = module.config.vocab_size

    def draw(logits, counts, key):
        if sampler.is_greedy:
            nxt = sampler(logits, None, counts)
        else:
            key, sub = random.split(key)
            nxt = sampler(logits, sub, counts)
        if counts is not None:
            counts = counts + nn.one_hot(nxt, vocab, dtype=counts.dtype)
        return nxt, counts, key

    def prefill(params, cache, tokens, fresh=False):
        logits, cache = module.apply(params, tokens, cache, last_only=True, fresh=fresh)
        return logits[:, -1], cache

    def step(params, cache, tokens, counts, key):
        logits, cache = module.apply(params, tokens, cache, last_only=True)
        nxt, counts, key = draw(logits[:, -1], counts, key)
        return nxt, cache, counts, key

    fns = (
        fgrad.jit(prefill, donate_argnums=(1,), static_argnames=("fresh",)),
        fgrad.jit(step, donate_argnums=(1, 3)),
        fgrad.jit(draw, donate_argnums=(1,)),
    )
    per_module[sampler] = fns
    return fns


def _prompt_ids(tokenizer: Any, prompt: Any, chat: bool) -> list[int]:
    if isinstance(prompt, str):
        if tokenizer is None:
            raise ValueError("generate: a text prompt needs a tokenizer; pass ids or the tokenizer")
        if chat:
            return tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
        return tokenizer.encode(prompt)
    if chat:
        return tokenizer.apply_chat_template(list(prompt))  # a list of messages
    ids = [int(i) for i in np.asarray(prompt).reshape(-1)]
    return ids


def generate(
    model: Any,
    tokenizer: Any,
    prompt: str | Sequence[int],
    max_tokens: int = 128,
    sampler: Sampler | None = None,
    key: Any = None,
    *,
    chat: bool = False,
    stop: Sequence[int] | None = None,
    truncate: bool = False,
    prefill_chunk: int = 512,
    stats: dict | None = None,
) -> Iterator[int]:
    """Yield the ids of up to ``max_tokens`` new tokens after ``prompt``, as they come.

    Args:
        model: a :class:`fgrad.llm.model.Model`.
        tokenizer: its :class:`fgrad.llm.tokenizer.Tokenizer` (None when ``prompt`` is ids
            and ``stop`` is given or not needed).
        prompt: text (encoded with BOS as the model says), a sequence of ids, or with
            ``chat`` a user message (text) or a list of ``{"role", "content"}`` messages.
        max_tokens: the most tokens to generate.
        sampler: a :class:`fgrad.llm.sampling.Sampler` (default greedy).
        key: a random key (``fgrad.random.key(seed)``) when the sampler draws.
        chat: render the prompt with the model's chat template.
        stop: ids that end generation (not yielded); default the tokenizer's
            ``stop_tokens``.
        truncate: a prompt too long for the context keeps its last tokens instead of
            raising.
        prefill_chunk: prompt tokens per prefill call.
        stats: a dict to fill with ``prompt_tokens``, ``prompt_seconds``,
            ``decode_tokens`` and ``decode_seconds``.

    Yields:
        int token ids.

    Raises:
        PromptTooLongError: the prompt leaves no room for one new token in the context
            and ``truncate`` is False (the message says how long it may be).
        ValueError: an empty prompt, ``max_tokens`` below 0, or a drawing sampler without
            a key.

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Model, Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Model(Transformer(cfg), Transformer(cfg).init(fgrad.random.key(0)))
        >>> list(fgrad.llm.generate(model, None, [1, 2, 3], max_tokens=4))  # ids, greedy
        [7, 30, 4, 30]
    """
    rows = generate_batch(
        model, tokenizer, [prompt], max_tokens, sampler, key, chat=chat, stop=stop,
        truncate=truncate, prefill_chunk=prefill_chunk, stats=stats, stream=True,
    )
    stops = _stops(tokenizer, stop)
    for step in rows:
        token = int(step[0])
        if token in stops:
            return
        yield token


def generate_batch(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Any],
    max_tokens: int = 128,
    sampler: Sampler | None = None,
    key: Any = None,
    *,
    chat: bool = False,
    stop: Sequence[int] | None = None,
    truncate: bool = False,
    prefill_chunk: int = 512,
    stats: dict | None = None,
    stream: bool = False,
) -> Any:
    """Generate for several prompts at once, left-padded to one length.

    Rows are independent: a row's left padding is masked out of every attention and its
    positions start at its first real token, so each row's tokens are those it would get
    alone (up to float rounding of the batched products). Arguments as :func:`generate`.

    Returns:
        A list with each prompt's generated ids (stop tokens excluded). With ``stream``,
        an iterator of ``(batch,)`` int arrays, one per step, until every row stopped
        (rows that stopped repeat their stop token).

    Example:
        >>> from fgrad.llm.config import ModelConfig
        >>> from fgrad.llm.model import Model, Transformer
        >>> cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=1, n_heads=4,
        ...                   n_kv_heads=2, d_head=4, d_ff=32)
        >>> model = Model(Transformer(cfg), Transformer(cfg).init(fgrad.random.key(0)))
        >>> fgrad.llm.generate_batch(model, None, [[1, 2, 3], [4]], max_tokens=3)
        [[7, 30, 4], [30, 15, 14]]
    """
    gen = _run(model, tokenizer, prompts, max_tokens, sampler, key, chat, stop, truncate,
               prefill_chunk, stats)
    if stream:
        return gen
    out: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    stops = _stops(tokenizer, stop)
    for step in gen:
        for b, t in enumerate(step):
            if not done[b]:
                if int(t) in stops:
                    done[b] = True
                else:
                    out[b].append(int(t))
    return out


def _stops(tokenizer: Any, stop: Any) -> frozenset:
    if stop is not None:
        return frozenset(int(s) for s in stop)
    return frozenset() if tokenizer is None else tokenizer.stop_tokens


def _run(model, tokenizer, prompts, max_tokens, sampler, key, chat, stop, truncate, chunk, stats):
    sampler = greedy() if sampler is None else sampler
    if not isinstance(sampler, Sampler):
        raise TypeError(f"generate: sampler must be a fgrad.llm.sampling.Sampler, got {sampler!r}")
    if int(max_tokens) < 0:
        raise ValueError(f"generate: max_tokens must be >= 0, got {max_tokens}")
    if not sampler.is_greedy and key is None:
        raise ValueError(
            "generate: the sampler draws at random (temperature > 0), so pass key="
            "fgrad.random.key(seed); or use sampling.greedy()"
        )
    config = model.config
    if not hasattr(config, "context_length"):  # an encoder (load() returns one for BERT folders)
        raise TypeError(
            f"generate: needs a decoder language model (fgrad.llm.model.Model); got a "
            f"{type(model).__name__}, which encodes text but does not generate it: use "
            "fgrad.llm.bert.load_encoder(folder).encode(texts) for sentence embeddings"
        )
    context = config.context_length
    ids = [_prompt_ids(tokenizer, p, chat) for p in prompts]
    which = (lambda i: "the prompt") if len(ids) == 1 else (lambda i: f"prompt {i}")
    for i, row in enumerate(ids):
        if not row:
            raise ValueError(f"generate: {which(i)} is empty; give at least one token")
        bad = [t for t in row if not 0 <= t < config.vocab_size]
        if bad:
            raise IndexError(
                f"generate: {which(i)} holds token id {bad[0]}, outside the vocabulary "
                f"[0, {config.vocab_size})"
            )
        if len(row) >= context:
            if not truncate:
                raise PromptTooLongError(
                    f"generate: {which(i)} has {len(row)} tokens, but the model's context is "
                    f"{context}: it may have at most {context - 1} to leave room for a new "
                    "token; shorten it, or pass truncate=True to keep its last "
                    f"{max(1, context - max(int(max_tokens), 1))} tokens"
                )
        if truncate and len(row) + int(max_tokens) > context:
            ids[i] = row[len(row) - max(1, context - int(max_tokens)) :]
    length = max(len(r) for r in ids)
    max_tokens = min(int(max_tokens), context - length)
    stops = _stops(tokenizer, stop)
    batch = len(ids)
    pad = [length - len(r) for r in ids]
    tokens = np.zeros((batch, length), np.int64)
    for b, row in enumerate(ids):
        tokens[b, pad[b] :] = row
    max_len = min(context, -(-(length + max_tokens) // _CACHE_ROUND) * _CACHE_ROUND)
    module, params = model.module, model.params
    prefill, step, first = decode_fns(module, sampler)
    cache = model.new_cache(batch, max_len, pad=pad)
    counts = None
    if sampler.uses_counts:
        counts_np = np.zeros((batch, config.vocab_size), np.float32)
        for b, row in enumerate(ids):
            np.add.at(counts_np[b], row, 1.0)
        counts = fnp.asarray(counts_np)
    key = random.key(0) if key is None else key
    if stats is not None:
        stats.update(prompt_tokens=batch * length, decode_tokens=0, decode_seconds=0.0)
    if max_tokens == 0:
        return
    start = time.perf_counter()
    for s in range(0, length, int(chunk)):
        logits, cache = prefill(params, cache, fnp.asarray(tokens[:, s : s + int(chunk)]), fresh=s == 0)
    nxt, counts, key = first(logits, counts, key)
    now = np.asarray(nxt).reshape(batch)
    if stats is not None:
        stats["prompt_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    done = np.array([int(t) in stops for t in now])
    yield now
    for n in range(1, max_tokens):
        if done.all():
            break
        nxt, cache, counts, key = step(params, cache, fnp.asarray(now.reshape(batch, 1)), counts, key)
        new = np.asarray(nxt).reshape(batch)
        now = np.where(done, now, new)
        done |= np.array([int(t) in stops for t in now])
        if stats is not None:
            stats["decode_tokens"] = n
            stats["decode_seconds"] = time.perf_counter() - start
        yield now
