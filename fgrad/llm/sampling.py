"""Choosing the next token: pure functions of logits (and a key), composable under jit and vmap.

A :class:`Sampler` runs this chain over the last axis of ``(..., vocab_size)`` logits, in
the order of Hugging Face transformers' ``generate`` (its logits processors, then its
warpers), which is also vLLM's:

1. penalties on tokens already seen: repetition (CTRL: a positive logit divided by the
   penalty, a negative one multiplied) on every id in the prompt or the output, then
   presence (``- presence * (count > 0)``) and frequency (``- frequency * count``) with
   ``counts`` of the generated tokens only, as the OpenAI API ("how often that token was
   sampled") and vLLM (``SamplingParams``: "in the generated text so far"; its
   ``apply_penalties`` masks repetition with ``prompt_mask | output_mask``) do;
2. temperature (``logits / temperature``; 0 means greedy: the arg-max, no key needed);
3. top-k: keep the ``k`` largest logits (ties at the k-th are kept);
4. top-p (nucleus): keep the most likely tokens whose probabilities, largest first, sum
   to ``top_p``, the one that crosses it included;
5. min-p: keep tokens with probability at least ``min_p`` times the largest;
6. draw from the softmax of what is left (Gumbel-max, :func:`fgrad.random.categorical`).

llama.cpp's default chain differs: it applies the temperature after the filters
(penalties, top-k, top-p, min-p, then temperature), so ``top_p`` and ``min_p`` select
from the untempered distribution there.

Example:
    >>> logits = fnp.array([[1.0, 3.0, 2.0], [0.0, 0.0, 5.0]])
    >>> greedy()(logits)
    Tensor([1, 2], dtype=int64)
    >>> top_k_mask(fnp.array([1.0, 3.0, 2.0]), 2)
    Tensor([-inf,   3.,   2.], dtype=float64)

References:
    Keskar et al., "CTRL: A Conditional Transformer Language Model for Controllable
    Generation", 2019, arXiv:1909.05858 (repetition penalty, section 4.1); Fan et al.,
    "Hierarchical Neural Story Generation", 2018, arXiv:1805.04833 (top-k); Holtzman et
    al., "The Curious Case of Neural Text Degeneration", 2019, arXiv:1904.09751 (top-p);
    Nguyen et al., "Turning Up the Heat: Min-p Sampling for Creative and Coherent LLM
    Outputs", 2024, arXiv:2407.01082 (min-p).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import fgrad.numpy as fnp
from fgrad import random
from fgrad.nn import log_softmax, softmax
from fgrad.tensor import Tensor

__all__ = [
    "Sampler",
    "apply_penalties",
    "greedy",
    "min_p_mask",
    "top_k_mask",
    "top_p_mask",
]

_NEG = -math.inf


def apply_penalties(
    logits: Any,
    counts: Any,
    *,
    repetition: float = 1.0,
    presence: float = 0.0,
    frequency: float = 0.0,
    prompt: Any = None,
) -> Tensor:
    """Logits lowered for tokens already seen.

    Args:
        logits: ``(..., vocab_size)`` real floating Tensor.
        counts: ``(..., vocab_size)`` Tensor of how often each id was generated so far
            (any real dtype).
        repetition: CTRL's penalty (``>= 1`` discourages; 1 does nothing), on the ids in
            ``counts`` or ``prompt``.
        presence: subtracted once from every id in ``counts``.
        frequency: subtracted per occurrence in ``counts``.
        prompt: ``(..., vocab_size)`` Tensor, positive for the prompt's ids (counts or a
            0/1 mask), seen by the repetition penalty only (vLLM's convention); None: only
            ``counts``.

    Returns:
        Tensor of ``logits``' shape and dtype.

    Example:
        >>> apply_penalties(fnp.array([2.0, -2.0, 1.0]), fnp.array([1, 1, 0]), repetition=2.0)
        Tensor([ 1., -4.,  1.], dtype=float64)
        >>> apply_penalties(fnp.array([2.0, 2.0]), fnp.array([0, 0]), presence=1.0,
        ...                 repetition=2.0, prompt=fnp.array([1, 0]))  # the prompt: repetition only
        Tensor([1., 2.], dtype=float64)
    """
    seen = counts > 0
    if repetition != 1.0:
        repeated = seen if prompt is None else fnp.logical_or(seen, prompt > 0)
        logits = fnp.where(repeated, fnp.where(logits > 0, logits / repetition, logits * repetition), logits)
    if presence:
        logits = logits - presence * fnp.astype(seen, logits.dtype)
    if frequency:
        logits = logits - frequency * fnp.astype(counts, logits.dtype)
    return logits


def top_k_mask(logits: Any, k: int) -> Tensor:
    """``logits`` with all but the ``k`` largest along the last axis set to ``-inf``.

    Ties with the k-th largest are kept. ``k`` of 0 or at least the vocabulary keeps all.

    Example:
        >>> top_k_mask(fnp.array([0.5, 2.0, 1.0, 2.0]), 1)
        Tensor([-inf,   2., -inf,   2.], dtype=float64)
    """
    k = int(k)
    if k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = fnp.top_k(logits, k)[0][..., k - 1 :]
    return fnp.where(logits >= kth, logits, _NEG)


def top_p_mask(logits: Any, p: float) -> Tensor:
    """``logits`` outside the nucleus of probability ``p`` set to ``-inf`` (Holtzman et al. 2019).

    The nucleus is the smallest set of most likely tokens whose probabilities sum to at
    least ``p``; the most likely token is always kept. ``p >= 1`` keeps all.

    Example:
        >>> top_p_mask(fnp.log(fnp.array([0.5, 0.3, 0.2])), 0.7)
        Tensor([-0.69314718, -1.2039728 ,        -inf], dtype=float64)
    """
    if p >= 1.0:
        return logits
    ordered = -fnp.sort(-logits, axis=-1)  # largest first
    probs = softmax(ordered, axis=-1)
    before = fnp.cumsum(probs, axis=-1) - probs  # mass of the tokens more likely than each
    keep = before < p
    threshold = fnp.min(fnp.where(keep, ordered, math.inf), axis=-1, keepdims=True)
    return fnp.where(logits >= threshold, logits, _NEG)


def min_p_mask(logits: Any, p: float) -> Tensor:
    """``logits`` of tokens less likely than ``p`` times the most likely set to ``-inf`` (Nguyen et al. 2024).

    Example:
        >>> min_p_mask(fnp.log(fnp.array([0.6, 0.3, 0.1])), 0.25)
        Tensor([-0.51082562, -1.2039728 ,        -inf], dtype=float64)
    """
    if p <= 0.0:
        return logits
    top = fnp.max(logits, axis=-1, keepdims=True)
    return fnp.where(logits >= top + math.log(p), logits, _NEG)


@dataclass(frozen=True)
class Sampler:
    """The sampling chain of the module docstring, as one pure function of logits and a key.

    Attributes:
        temperature: divides the logits; 0 is greedy decoding (default 1).
        top_k: keep the ``top_k`` most likely tokens (0: all).
        top_p: nucleus mass (1: all).
        min_p: relative probability floor (0: none).
        repetition_penalty: CTRL's penalty on tokens of the prompt or the output (1: none).
        presence_penalty: subtracted once from each generated token's logit.
        frequency_penalty: subtracted per generated occurrence.

    ``sampler(logits, key=None, counts=None, prompt=None)`` takes ``(vocab_size,)`` or
    ``(batch, vocab_size)`` logits (and, when a penalty is set, ``counts`` of the generated
    tokens and optionally ``prompt``, positive for the prompt's ids, of the same shape: see
    :func:`apply_penalties`) and returns int64 ids of shape ``logits.shape[:-1]``; rows of
    a batch draw independent samples. It runs under ``jit`` and ``vmap``.

    Raises:
        ValueError: a negative temperature, ``top_k`` or ``min_p``; ``top_p`` outside
            ``(0, 1]``; ``min_p`` above 1; a repetition penalty that is not positive; at
            call time a non-greedy sampler without a key, or a penalty without counts.

    Example:
        >>> sampler = Sampler(temperature=0.7, top_k=2)
        >>> sampler(fnp.array([1.0, 3.0, 2.0]), fgrad.random.key(0)) in (1, 2)
        True
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0

    def __post_init__(self):
        checks = (
            (self.temperature >= 0, "temperature must be >= 0 (0 is greedy)"),
            (int(self.top_k) == self.top_k and self.top_k >= 0, "top_k must be an int >= 0 (0 keeps all)"),
            (0 < self.top_p <= 1, "top_p must be in (0, 1]"),
            (0 <= self.min_p <= 1, "min_p must be in [0, 1]"),
            (self.repetition_penalty > 0, "repetition_penalty must be > 0 (1 is none)"),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(f"Sampler: {message}; got {self}")

    @property
    def is_greedy(self) -> bool:
        """Temperature 0: the arg-max, no randomness."""
        return self.temperature == 0

    @property
    def uses_counts(self) -> bool:
        """A penalty is set, so calls need the counts of seen tokens."""
        return (
            self.repetition_penalty != 1.0 or self.presence_penalty != 0.0 or self.frequency_penalty != 0.0
        )

    def process(self, logits: Any, counts: Any = None, prompt: Any = None) -> Tensor:
        """The logits after penalties, temperature and the filters (removed tokens ``-inf``)."""
        if self.uses_counts:
            if counts is None:
                raise ValueError("Sampler: a penalty is set, so the call needs counts= of seen tokens")
            logits = apply_penalties(
                logits, counts, repetition=self.repetition_penalty,
                presence=self.presence_penalty, frequency=self.frequency_penalty, prompt=prompt,
            )
        if self.is_greedy:
            return logits
        if self.temperature != 1.0:
            logits = logits / self.temperature
        logits = top_k_mask(logits, self.top_k)
        logits = top_p_mask(logits, self.top_p)
        return min_p_mask(logits, self.min_p)

    def __call__(self, logits: Any, key: Any = None, counts: Any = None, prompt: Any = None) -> Tensor:
        logits = logits if hasattr(logits, "shape") else fnp.asarray(logits)
        logits = self.process(logits, counts, prompt)
        if self.is_greedy:
            return fnp.argmax(logits, axis=-1)
        if key is None:
            raise ValueError(
                "Sampler: sampling with temperature > 0 needs a key (fgrad.random.key(seed)); "
                "or use greedy()"
            )
        if len(logits.shape) == 1:
            return random.categorical(key, logits)
        rows = logits.shape[0]
        keys = random.split(key, rows)
        draw = [random.categorical(keys[i], logits[i]) for i in range(rows)]
        return fnp.stack(draw)

    def log_probs(self, logits: Any, counts: Any = None, prompt: Any = None) -> Tensor:
        """Log-probabilities of the distribution drawn from (``-inf`` for removed tokens)."""
        return log_softmax(self.process(logits, counts, prompt), axis=-1)


def greedy() -> Sampler:
    """The arg-max sampler (temperature 0).

    Example:
        >>> greedy()(fnp.array([0.1, 0.9, 0.3]))
        Tensor(1, dtype=int64)
    """
    return Sampler(temperature=0.0)
