"""Generation: the cached decode equals recomputing the whole sequence, one trace for all
steps, batched left-padded rows equal rows alone, stop tokens, prompts too long."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import random, tree
from fgrad.llm import gguf, sampling
from fgrad.llm.generation import PromptTooLongError, decode_fns, generate, generate_batch
from fgrad.llm.loading import load, model_from_gguf


@pytest.fixture(scope="module")
def tiny(tiny_llama_gguf):
    return load(tiny_llama_gguf)


def _greedy_without_cache(model, ids, n):
    ids = list(ids)
    out = []
    for _ in range(n):
        logits, _ = model(fnp.asarray([ids]))
        out.append(int(np.asarray(logits[0, -1]).argmax()))
        ids.append(out[-1])
    return out


def test_cached_greedy_equals_recomputing(tiny):
    model, tok = tiny
    prompt = tok.encode(" the cat sat on the mat")
    want = _greedy_without_cache(model, prompt, 12)
    got = list(generate(model, tok, prompt, 12, sampling.greedy(), stop=()))
    assert got == want
    # chunked prefill (3 tokens a call) gives the same tokens
    assert list(generate(model, tok, prompt, 12, stop=(), prefill_chunk=3)) == want


def test_decode_traces_once(tiny):
    model, tok = tiny
    sampler = sampling.Sampler(temperature=0.9, top_k=20, repetition_penalty=1.3)
    _, step, _ = decode_fns(model.module, sampler)
    stats = {}
    a = list(generate(model, tok, " hello", 10, sampler, random.key(1), stop=(), stats=stats))
    b = list(generate(model, tok, " there", 10, sampler, random.key(1), stop=()))
    assert len(a) == len(b) == 10 and stats["decode_tokens"] == 9
    assert step.cache_info().misses == 1 and step.cache_info().hits == 17  # 18 steps
    # the same key gives the same tokens
    assert list(generate(model, tok, " hello", 10, sampler, random.key(1), stop=())) == a


def test_batched_left_padding_equals_rows_alone(tiny):
    model, tok = tiny
    prompts = [" the cat sat", " a", " on the mat in the"]
    alone = [list(generate(model, tok, p, 6, stop=())) for p in prompts]
    assert generate_batch(model, tok, prompts, 6, stop=()) == alone


def test_stop_tokens_end_generation(tiny):
    model, tok = tiny
    first = next(iter(generate(model, tok, " the", 1, stop=())))
    assert list(generate(model, tok, " the", 5, stop=[first])) == []


def test_prompt_longer_than_context(tiny):
    model, tok = tiny
    context = model.config.context_length
    long = [5] * (context + 10)
    with pytest.raises(PromptTooLongError, match=rf"context is {context}.*truncate=True"):
        list(generate(model, tok, long, 4))
    got = list(generate(model, tok, long, 4, stop=(), truncate=True))
    assert got == list(generate(model, tok, long[-(context - 4):], 4, stop=()))
    with pytest.raises(ValueError, match="needs a key|pass key="):
        list(generate(model, tok, " x", 2, sampling.Sampler()))
    with pytest.raises(ValueError, match="empty"):
        list(generate(model, tok, [], 2))


def test_cache_is_a_pytree(tiny):
    model, _ = tiny
    cache = model.new_cache(2, 16)
    leaves = tree.leaves(cache)
    assert len(leaves) == 2 * model.config.n_layers + 2
    assert cache.keys[0].shape == (2, model.config.n_kv_heads, 16, model.config.d_head)
    assert cache.nbytes == 2 * model.config.n_layers * 2 * 2 * 16 * 16 * 4


def test_bad_token_ids_and_encoders_are_refused(tiny):
    model, tok = tiny
    vocab = model.config.vocab_size
    for bad in (-1, vocab):
        with pytest.raises(IndexError, match=f"token id {bad}, outside the vocabulary"):
            list(generate(model, None, [5, bad], 2, stop=()))
    with pytest.raises(IndexError, match="prompt 1 holds token id -3"):
        generate_batch(model, None, [[5, 6], [-3]], 2, stop=())
    with pytest.raises(ValueError, match="the prompt is empty"):
        list(generate(model, None, [], 2))
    from fgrad.llm import bert

    cfg = bert.BertConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=2, d_ff=8)
    encoder = bert.BertEncoder(cfg).bind(bert.BertEncoder(cfg).init(random.key(0)))
    with pytest.raises(TypeError, match="needs a decoder.*BertModel.*load_encoder"):
        list(generate(encoder, None, [1, 2], 2))


def test_a_fresh_prefill_reads_only_the_prompts_keys_and_gives_the_same(tiny):
    # fresh=True attends to the chunk's own keys instead of every (empty, masked) slot of
    # the cache: the same logits and cache, rows left-padded too; a cache that already
    # holds positions refuses it.
    model, _ = tiny
    tokens = fnp.asarray([[0, 0, 5, 9, 3, 7], [4, 8, 2, 6, 1, 3]])
    pad = [2, 0]
    prefill, _, _ = decode_fns(model.module, sampling.greedy())
    want = prefill(model.params, model.new_cache(2, 16, pad=pad), tokens)
    got = prefill(model.params, model.new_cache(2, 16, pad=pad), tokens, fresh=True)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6, atol=1e-6)
    for a, b in zip(got[1].keys + got[1].values, want[1].keys + want[1].values):
        for row, p in enumerate(pad):  # padding slots hold values no query reads
            np.testing.assert_allclose(  # later layers: products over fewer zero terms
                np.asarray(a)[row, :, p:], np.asarray(b)[row, :, p:], rtol=1e-5, atol=1e-6
            )
    assert int(got[1].offset) == 6
    eager_want, _ = model(tokens, model.new_cache(2, 16, pad=pad))
    eager_got, cache = model(tokens, model.new_cache(2, 16, pad=pad), fresh=True)
    for row, p in enumerate(pad):
        np.testing.assert_allclose(
            np.asarray(eager_got)[row, p:], np.asarray(eager_want)[row, p:], rtol=1e-5, atol=1e-6
        )
    with pytest.raises(ValueError, match="fresh=True, but the cache holds 6"):
        model(tokens[:, :1], cache, fresh=True)


def test_a_jitted_fresh_prefill_refuses_a_cache_that_holds_positions(tiny):
    # inside the jitted prefill the offset is traced, so Transformer.apply cannot check it:
    # without the wrapper's check the call ran and gave wrong logits
    model, _ = tiny
    prefill, _, _ = decode_fns(model.module, sampling.greedy())
    tokens = fnp.asarray([[5, 9, 3, 7]])
    _, cache = prefill(model.params, model.new_cache(1, 16), tokens, fresh=True)
    with pytest.raises(ValueError, match="fresh=True, but the cache holds 4 positions"):
        prefill(model.params, cache, tokens[:, :1], fresh=True)
    logits, cache = prefill(model.params, cache, tokens[:, :1])  # fresh=False still runs
    want, _ = model(fnp.asarray([[5, 9, 3, 7, 5]]))
    np.testing.assert_allclose(np.asarray(logits[0]), np.asarray(want[0, -1]), rtol=1e-5, atol=1e-5)
    info = prefill.cache_info()
    assert info.misses >= 1 and info.hits + info.misses >= 2


def test_bad_lengths_and_chunks_are_refused(tiny):
    model, tok = tiny
    for chunk, error in ((0, ValueError), (-1, ValueError), (True, TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="prefill_chunk"):
            list(generate(model, tok, [5, 6, 7], 2, prefill_chunk=chunk))
        with pytest.raises(error, match="prefill_chunk"):
            generate_batch(model, tok, [[5, 6, 7]], 2, prefill_chunk=chunk)
    for n, error in ((1.7, TypeError), (False, TypeError), ("2", TypeError), (-1, ValueError)):
        with pytest.raises(error, match="max_tokens"):
            list(generate(model, tok, [5, 6, 7], n))
        with pytest.raises(error, match="max_tokens"):
            generate_batch(model, tok, [[5, 6, 7]], n)
    # numpy integers are ints; a chunk of 1 prefills token by token and gives the same
    assert list(generate(model, tok, [5, 6, 7], np.int64(3), stop=(), prefill_chunk=1)) == list(
        generate(model, tok, [5, 6, 7], 3, stop=())
    )


def test_empty_batches_and_chat_ids_are_refused(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="prompts is empty"):
        generate_batch(model, tok, [], 2)
    with pytest.raises(TypeError, match="list of prompts"):
        generate_batch(model, tok, " a string", 2)
    with pytest.raises(TypeError, match=r"chat=True needs a text prompt or a list of \{"):
        list(generate(model, tok, [5, 6, 7], 2, chat=True))
    with pytest.raises(TypeError, match="chat=True needs"):
        list(generate(model, tok, [{"role": "user"}], 2, chat=True))
    got = list(generate(model, tok, [{"role": "user", "content": "hi"}], 2, chat=True, stop=()))
    assert got == list(generate(model, tok, "hi", 2, chat=True, stop=()))


def _penalized_without_cache(model, sampler, ids, n):
    # presence and frequency count generated tokens; repetition covers the prompt too
    vocab = model.config.vocab_size
    prompt = np.zeros(vocab, np.float32)
    prompt[list(ids)] = 1.0
    counts = np.zeros(vocab, np.float32)
    ids, out = list(ids), []
    for _ in range(n):
        logits, _ = model(fnp.asarray([ids]))
        nxt = int(sampler(logits[0, -1], None, fnp.asarray(counts), fnp.asarray(prompt)))
        out.append(nxt)
        ids.append(nxt)
        counts[nxt] += 1
    return out


def test_presence_and_frequency_count_generated_tokens_repetition_the_prompt_too(tiny):
    model, tok = tiny
    prompt = tok.encode(" the cat sat on the mat")
    plain = list(generate(model, tok, prompt, 2, stop=()))
    assert plain[1] == plain[0] and plain[0] not in prompt  # this model repeats itself
    prompt = prompt + plain[:1]  # now greedy's next token is in the prompt
    assert list(generate(model, tok, prompt, 1, stop=())) == plain[:1]
    # the OpenAI API and vLLM: the presence penalty ignores the prompt, so the first
    # token is greedy's; the second (a repeat of the first) is pushed away
    presence = sampling.Sampler(temperature=0.0, presence_penalty=100.0)
    got = list(generate(model, tok, prompt, 2, presence, stop=()))
    assert got[0] == plain[0] and got[1] != got[0]
    # the repetition penalty (HF, vLLM) covers the prompt: the first token changes
    repetition = sampling.Sampler(temperature=0.0, repetition_penalty=100.0)
    assert next(iter(generate(model, tok, prompt, 1, repetition, stop=()))) != plain[0]
    for sampler in (presence, repetition, sampling.Sampler(
            temperature=0.0, repetition_penalty=1.5, presence_penalty=0.5, frequency_penalty=0.7)):
        assert list(generate(model, tok, prompt, 6, sampler, stop=())) == _penalized_without_cache(
            model, sampler, prompt, 6
        )


def test_the_decode_functions_and_the_error_are_exported():
    import fgrad.llm
    from fgrad.llm import PromptTooLongError as exported, decode_fns as fns

    assert fns is decode_fns and exported is PromptTooLongError
    assert {"decode_fns", "PromptTooLongError"} <= set(fgrad.llm.__all__) & set(dir(fgrad.llm))
