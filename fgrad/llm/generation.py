"""Generation with a KV cache: prefill the prompt, then one jitted call per token.

:func:`generate` yields token ids as they are chosen. The prompt is prefilled in one
jitted call per chunk of ``prefill_chunk`` tokens (one call for most prompts), each
writing its keys and values into a preallocated :class:`fgrad.llm.cache.KVCache`. Then
every new token is ONE jitted call: the model on one position, the sampler, the counts of
generated tokens for penalties and the next key, with the cache donated (its arrays may hold
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

import numbers
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random
from fgrad.core.trace import Tracer
from fgrad.llm.cache import KVCache
from fgrad.llm.model import check_fresh
from fgrad.llm.sampling import Sampler, greedy

__all__ = ["PromptTooLongError", "generate", "generate_batch", "decode_fns"]

_CACHE_ROUND = 128  # cache lengths are rounded up to this: fewer distinct jit signatures
_FNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class PromptTooLongError(ValueError):
    """A prompt that does not fit in the model's context."""


class _Prefill:
    """The jitted prefill, refusing ``fresh=True`` on a cache that holds positions.

    ``Transformer.apply`` checks this only when the offset is concrete; inside the jitted
    function it is traced, so the check runs here, on the concrete offset, before the call
    (a misused ``fresh`` would otherwise give wrong logits silently).
    """

    def __init__(self, jitted: Any):
        self.jitted = jitted

    def __call__(self, params: Any, cache: KVCache, tokens: Any, fresh: bool = False):
        if fresh and not isinstance(cache.offset, Tracer):
            check_fresh(cache, "prefill")
        return self.jitted(params, cache, tokens, fresh=fresh)

    def cache_info(self):
        """The jitted function's trace counts (``hits``, ``misses``)."""
        return self.jitted.cache_info()


def decode_fns(module: Any, sampler: Sampler) -> tuple:
    """The jitted ``(prefill, step, first)`` functions of a Transformer and a sampler.

    * ``prefill(params, cache, tokens, fresh=False) -> (logits, cache)``: ``(batch, seq)``
      tokens into the cache (donated); the last position's ``(batch, vocab)`` logits;
      ``fresh`` (static): the cache is empty, attention reads the prompt's keys only. A
      thin wrapper of the jitted function (``prefill.jitted``) that raises ValueError for
      ``fresh=True`` when the cache's offset is not 0 (checked before the call, where the
      offset is concrete; inside the trace it is not);
    * ``step(params, cache, tokens, counts, key, prompt=None) -> (next, cache, counts,
      key)``: one position for every row (``tokens`` ``(batch, 1)``), sampled; cache and
      counts donated. ``counts``: ``(batch, vocab)`` float32 counts of the generated
      tokens (None when the sampler has no penalty); ``prompt``: ``(batch, vocab)``,
      positive for each row's prompt ids, for the repetition penalty (None: none);
    * ``first(logits, counts, key, prompt=None) -> (next, counts, key)``: the sampler on
      prefill's logits.

    Made once per (module, sampler) and kept while the module lives, so their jit caches
    persist between :func:`generate` calls (``step.cache_info()`` and
    ``prefill.cache_info()`` count the traces).

    Raises:
        ValueError: (from ``prefill``) ``fresh=True`` with a cache that holds positions.

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

    def draw(logits, counts, key, prompt=None):
        if sampler.is_greedy:
            nxt = sampler(logits, None, counts, prompt)
        else:
            key, sub = random.split(key)
            nxt = sampler(logits, sub, counts, prompt)
        if counts is not None:
            counts = counts + nn.one_hot(nxt, vocab, dtype=counts.dtype)
        return nxt, counts, key

    def prefill(params, cache, tokens, fresh=False):
        logits, cache = module.apply(params, tokens, cache, last_only=True, fresh=fresh)
        return logits[:, -1], cache

    def step(params, cache, tokens, counts, key, prompt=None):
        logits, cache = module.apply(params, tokens, cache, last_only=True)
        nxt, counts, key = draw(logits[:, -1], counts, key, prompt)
        return nxt, cache, counts, key

    fns = (
        _Prefill(fgrad.jit(prefill, donate_argnums=(1,), static_argnames=("fresh",))),
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
        messages = list(prompt)
        if not messages or not all(isinstance(m, dict) and {"role", "content"} <= m.keys() for m in messages):
            raise TypeError(
                "generate: chat=True needs a text prompt or a list of {\"role\", \"content\"} "
                f"messages, got {prompt!r:.80}; pass token ids with chat=False"
            )
        if tokenizer is None:
            raise ValueError("generate: chat=True needs the tokenizer (its chat template)")
        return tokenizer.apply_chat_template(messages)
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
        prefill_chunk: prompt tokens per prefill call (an int >= 1).
        stats: a dict to fill with ``prompt_tokens``, ``prompt_seconds``,
            ``decode_tokens`` and ``decode_seconds``.

    Yields:
        int token ids.

    Raises:
        PromptTooLongError: the prompt leaves no room for one new token in the context
            and ``truncate`` is False (the message says how long it may be).
        ValueError: an empty prompt, ``max_tokens`` below 0, ``prefill_chunk`` below 1, or
            a drawing sampler without a key.
        TypeError: ``max_tokens`` or ``prefill_chunk`` not an int (a bool or 1.7 too),
            or with ``chat`` a prompt that is neither text nor a list of messages.

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
    positions start at its first real token, so with a greedy sampler each row's tokens
    are those it would get alone (up to float rounding of the batched products). A drawing
    sampler splits the one ``key`` over the rows, so a row's draws differ from those it
    gets alone with the same key. Arguments as :func:`generate`.

    Raises:
        As :func:`generate` (at once, or with ``stream`` at the first step); ValueError
        for an empty ``prompts``, TypeError for a string instead of a list of prompts.

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
    if isinstance(prompts, str):
        raise TypeError("generate_batch: prompts must be a list of prompts, got one string; wrap it in a list")
    prompts = list(prompts)
    if not prompts:
        raise ValueError("generate_batch: prompts is empty; give at least one prompt")
    max_tokens = _int_at_least("max_tokens", max_tokens, 0)
    prefill_chunk = _int_at_least("prefill_chunk", prefill_chunk, 1)
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


def _int_at_least(name: str, value: Any, least: int) -> int:
    # strict like numpy's index arguments: 1.7 or True is a mistake, not 1
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"generate: {name} must be an int, got {value!r} ({type(value).__name__})")
    if value < least:
        raise ValueError(f"generate: {name} must be >= {least}, got {value}")
    return int(value)


def _stops(tokenizer: Any, stop: Any) -> frozenset:
    if stop is not None:
        return frozenset(int(s) for s in stop)
    return frozenset() if tokenizer is None else tokenizer.stop_tokens


def _run(model, tokenizer, prompts, max_tokens, sampler, key, chat, stop, truncate, chunk, stats):
    sampler = greedy() if sampler is None else sampler
    if not isinstance(sampler, Sampler):
        raise TypeError(f"generate: sampler must be a fgrad.llm.sampling.Sampler, got {sampler!r}")
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
                    "token; shorten it, or pass truncate=True (--truncate on the command line) to keep "
                    f"its last {max(1, context - max(max_tokens, 1))} tokens"
                )
        if truncate and len(row) + max_tokens > context:
            ids[i] = row[len(row) - max(1, context - max_tokens) :]
    length = max(len(r) for r in ids)
    max_tokens = min(max_tokens, context - length)
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
    # presence and frequency count the generated tokens only, the repetition penalty the
    # prompt's too (vLLM's and the OpenAI API's convention; fgrad.llm.sampling)
    counts = prompt_seen = None
    if sampler.uses_counts:
        counts = fnp.zeros((batch, config.vocab_size), fnp.float32)
    if sampler.repetition_penalty != 1.0:
        seen_np = np.zeros((batch, config.vocab_size), np.float32)
        for b, row in enumerate(ids):
            seen_np[b, row] = 1.0
        prompt_seen = fnp.asarray(seen_np)
    key = random.key(0) if key is None else key
    if stats is not None:
        stats.update(prompt_tokens=batch * length, decode_tokens=0, decode_seconds=0.0)
    if max_tokens == 0:
        return
    start = time.perf_counter()
    for s in range(0, length, chunk):
        logits, cache = prefill(params, cache, fnp.asarray(tokens[:, s : s + chunk]), fresh=s == 0)
    nxt, counts, key = first(logits, counts, key, prompt_seen)
    now = np.asarray(nxt).reshape(batch)
    if stats is not None:
        stats["prompt_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    done = np.array([int(t) in stops for t in now])
    yield now
    for n in range(1, max_tokens):
        if done.all():
            break
        nxt, cache, counts, key = step(
            params, cache, fnp.asarray(now.reshape(batch, 1)), counts, key, prompt_seen
        )
        new = np.asarray(nxt).reshape(batch)
        now = np.where(done, now, new)
        done |= np.array([int(t) in stops for t in now])
        if stats is not None:
            stats["decode_tokens"] = n
            stats["decode_seconds"] = time.perf_counter() - start
        yield now
