"""Tokenizers from GGUF vocabularies (byte-level BPE, SentencePiece with byte fallback),
special and stop tokens, the chat template without a double BOS, streaming decode."""

import pytest

from fgrad.llm import gguf
from fgrad.llm.tokenizer import Tokenizer, UnsupportedTokenizerError

from conftest import tiny_vocabulary


def _bpe_meta(**extra):
    tokens, types, merges = tiny_vocabulary()
    meta = {
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm",
        "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges, "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
    }
    meta.update(extra)
    return meta


def test_tiny_gguf_byte_level_bpe(tiny_llama_gguf):
    tok = Tokenizer.from_gguf_metadata(gguf.read(tiny_llama_gguf, dtype=None).metadata)
    tokens = tiny_vocabulary()[0]
    ids = tok.encode(" the cat")
    assert [tokens[i] for i in ids] == ["Ġthe", "Ġc", "a", "t"]  # merges Ġ t, h e, Ġt he, Ġ c
    assert tok.decode(ids) == " the cat"
    assert tok.stop_tokens >= {2} and not tok.add_bos
    # special tokens in the text are single ids; digits split one by one (smollm)
    assert tok.encode("<|im_start|>42") == [1, tokens.index("4"), tokens.index("2")]
    text = "naïve — 😀 1234\n\tx"
    assert tok.decode(tok.encode(text)) == text


def test_stream_decoder_never_splits_a_character():
    tok = Tokenizer.from_gguf_metadata(_bpe_meta())
    text = "é😀 ok"
    ids = tok.encode(text)  # bytes: no merges cover them, so one id per byte
    stream = tok.stream()
    pieces = [stream.push(i) for i in ids]
    assert "".join(pieces) + stream.flush() == text
    assert "\ufffd" not in "".join(pieces)
    assert pieces[:2] == ["", "é"]  # é is two bytes: nothing until the second


def test_chat_template_and_no_double_bos():
    template = "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
    tok = Tokenizer.from_gguf_metadata(
        _bpe_meta(**{"tokenizer.ggml.add_bos_token": True, "tokenizer.chat_template": template})
    )
    ids = tok.apply_chat_template([{"role": "user", "content": "hi"}])
    assert ids[0] == 1 and ids.count(1) == 1
    assert tok.decode(ids, skip_special=False) == "<|im_start|>[user]hi"
    assert tok.encode("hi")[0] == 1  # plain prompts get the BOS the metadata asks for
    with pytest.raises(ValueError, match="no chat template"):
        Tokenizer.from_gguf_metadata(_bpe_meta()).apply_chat_template([{"role": "user", "content": "x"}])


def test_sentencepiece_vocabulary_with_byte_fallback():
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    words = ["▁", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "hell", "▁hell", "▁hello", "▁w", "or", "▁wor", "ld", "▁world"]
    tokens = pieces + words
    types = [2, 3, 3] + [6] * 256 + [1] * len(words)
    scores = [0.0] * len(pieces) + [-float(i) for i in range(len(words))][::-1]
    tok = Tokenizer.from_gguf_metadata({
        "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types, "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
    })
    ids = tok.encode("hello world")
    assert ids[0] == 1  # llama vocabularies add BOS by default
    assert [tokens[i] for i in ids[1:]] == ["▁hello", "▁world"]
    ids = tok.encode("hé", add_bos=False)  # é is not in the vocabulary: its UTF-8 bytes
    assert [tokens[i] for i in ids] == ["▁", "h", "<0xC3>", "<0xA9>"]
    assert tok.decode(ids) == "hé"


def test_unsupported_vocabularies_list_the_supported():
    with pytest.raises(UnsupportedTokenizerError, match="supported: .*smollm"):
        Tokenizer.from_gguf_metadata(_bpe_meta(**{"tokenizer.ggml.pre": "klingon"}))
    with pytest.raises(UnsupportedTokenizerError, match="'bert'.*gpt2"):
        Tokenizer.from_gguf_metadata(_bpe_meta(**{"tokenizer.ggml.model": "bert"}))
