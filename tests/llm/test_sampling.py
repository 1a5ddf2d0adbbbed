"""Samplers: each filter against numpy, the chain's order, penalties, vmap, jit, errors."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import random
from fgrad.llm.sampling import Sampler, apply_penalties, greedy, min_p_mask, top_k_mask, top_p_mask

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((3, 50))


def _kept(x):
    return np.isfinite(np.asarray(x))


def test_top_k_keeps_the_k_largest():
    kept = _kept(top_k_mask(fnp.asarray(LOGITS), 5))
    want = LOGITS >= np.sort(LOGITS, axis=-1)[:, -5:-4]
    assert (kept == want).all() and (kept.sum(-1) == 5).all()
    assert _kept(top_k_mask(fnp.asarray(LOGITS), 0)).all()


def test_top_p_is_the_smallest_nucleus():
    for p in (0.1, 0.5, 0.9):
        kept = _kept(top_p_mask(fnp.asarray(LOGITS), p))
        probs = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
        for row in range(3):
            order = np.argsort(-probs[row])
            n = int(np.searchsorted(np.cumsum(probs[row][order]), p) + 1)  # first prefix reaching p
            assert set(np.flatnonzero(kept[row])) == set(order[:n])


def test_min_p_relative_to_the_most_likely():
    kept = _kept(min_p_mask(fnp.asarray(LOGITS), 0.2))
    probs = np.exp(LOGITS)
    assert (kept == (probs >= 0.2 * probs.max(-1, keepdims=True))).all()


def test_penalties():
    logits = fnp.array([2.0, -2.0, 1.0, 0.5])
    counts = fnp.array([2, 1, 0, 1])
    got = apply_penalties(logits, counts, repetition=2.0, presence=0.5, frequency=0.25)
    # CTRL divides positive logits of seen tokens and multiplies negative ones; then OpenAI's
    # presence (once) and frequency (per occurrence) penalties.
    np.testing.assert_allclose(np.asarray(got), [1.0 - 0.5 - 0.5, -4.0 - 0.5 - 0.25, 1.0, 0.25 - 0.5 - 0.25])
    # the prompt's ids (vLLM's prompt mask) get the repetition penalty only, not presence
    # or frequency, which count generated tokens (OpenAI API, vLLM)
    prompt = fnp.array([0, 0, 3, 1])
    got = apply_penalties(logits, counts, repetition=2.0, presence=0.5, frequency=0.25, prompt=prompt)
    np.testing.assert_allclose(np.asarray(got), [1.0 - 0.5 - 0.5, -4.0 - 0.5 - 0.25, 0.5, 0.25 - 0.5 - 0.25])
    got = Sampler(temperature=0.0, presence_penalty=0.5, repetition_penalty=2.0).process(
        logits, fnp.zeros(4), fnp.array([1, 0, 0, 0]))
    np.testing.assert_allclose(np.asarray(got), [1.0, -2.0, 1.0, 0.5])


def test_temperature_before_top_p_as_transformers():
    """HF transformers tempers first, so top-p selects from the tempered distribution."""
    logits = fnp.log(fnp.array([0.5, 0.3, 0.2]))
    kept = _kept(Sampler(temperature=0.5, top_p=0.7).process(logits))
    # tempered probabilities ~ [0.66, 0.24, 0.1]: 0.66 < 0.7, so two tokens; untempered
    # ones (0.5, 0.3) would also need two, so check a case where they differ:
    assert kept.tolist() == [True, True, False]
    kept = _kept(Sampler(temperature=0.25, top_p=0.8).process(logits))
    assert kept.tolist() == [True, False, False]  # tempered: [0.84, 0.13, 0.03]


def test_greedy_and_sample_frequencies():
    assert greedy()(fnp.asarray(LOGITS)).tolist() == LOGITS.argmax(-1).tolist()
    logits = fnp.log(fnp.array([0.6, 0.3, 0.1]))
    sampler = Sampler(temperature=1.0)
    keys = random.split(random.key(0), 4000)
    draws = np.asarray(fgrad.vmap(lambda k: sampler(logits, k))(keys))
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 4000, [0.6, 0.3, 0.1], atol=0.03)


def test_vmap_over_a_batch_equals_rows():
    sampler = Sampler(temperature=0.8, top_k=10, top_p=0.9, min_p=0.05)
    keys = random.split(random.key(3), 3)
    batched = fgrad.vmap(sampler)(fnp.asarray(LOGITS), keys)
    rows = [int(sampler(fnp.asarray(LOGITS[i]), keys[i])) for i in range(3)]
    assert np.asarray(batched).tolist() == rows
    jitted = fgrad.jit(sampler)
    assert int(jitted(fnp.asarray(LOGITS[0]), keys[0])) == rows[0]


def test_errors():
    with pytest.raises(ValueError, match="top_p must be in"):
        Sampler(top_p=0.0)
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        Sampler(temperature=-1.0)
    with pytest.raises(ValueError, match="needs a key"):
        Sampler()(fnp.asarray(LOGITS[0]))
    with pytest.raises(ValueError, match="counts="):
        Sampler(repetition_penalty=1.2)(fnp.asarray(LOGITS[0]), random.key(0))
