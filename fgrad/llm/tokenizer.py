"""Tokenizers of the model files: the GGUF vocabulary (BPE or SentencePiece) or ``tokenizer.json``.

The tokenization itself is the ``tokenizers`` package's (Hugging Face's Rust library);
this module builds one from what a GGUF file stores and adds what generation needs: the
BOS token when the metadata says so (``tokenizer.ggml.add_bos_token``), a *set* of stop
tokens (end of sequence and the chat templates' end-of-turn tokens), the chat template
rendered with ``jinja2``, and streaming detokenization that never splits a UTF-8
character (:class:`StreamDecoder`).

Two GGUF vocabularies are understood:

* ``tokenizer.ggml.model = "gpt2"``: byte-level BPE with ``tokenizer.ggml.merges``, and the
  pre-tokenizer (how text is split before BPE) that ``tokenizer.ggml.pre`` names: GPT-2's
  regular expression, split digits one by one first for the StarCoder family (SmolLM's
  ``"smollm"``), Llama 3's and Qwen 2's expressions;
* ``tokenizer.ggml.model = "llama"``: SentencePiece-style BPE over ``▁``-joined words whose
  merges follow the pieces' scores, with byte fallback (``<0x41>`` tokens) for characters
  outside the vocabulary.

Neither ``tokenizers`` nor ``jinja2`` is imported until a tokenizer is built.

Example:
    >>> tok = Tokenizer.from_gguf_metadata({
    ...     "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm",
    ...     "tokenizer.ggml.tokens": ["<eos>", "a", "b", "ab", "1", "2"],
    ...     "tokenizer.ggml.merges": ["a b"], "tokenizer.ggml.eos_token_id": 0})
    >>> tok.encode("ab12")
    [3, 4, 5]
    >>> tok.decode([3, 4, 5]), tok.stop_tokens
    ('ab12', frozenset({0}))
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["StreamDecoder", "Tokenizer", "UnsupportedTokenizerError"]

# The pre-tokenizer expressions of llama.cpp's tokenizer.ggml.pre names (the expressions
# are the ones each model family's own tokenizer uses; llama.cpp names them).
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# name -> (split digits individually first, expression)
_PRE_TOKENIZERS = {
    "default": (False, _GPT2),
    "gpt2": (False, _GPT2),
    "gpt-2": (False, _GPT2),
    "mpt": (False, _GPT2),
    "olmo": (False, _GPT2),
    "smollm": (True, _GPT2),
    "starcoder": (True, _GPT2),
    "refact": (True, _GPT2),
    "llama-bpe": (False, _LLAMA3),
    "llama3": (False, _LLAMA3),
    "qwen2": (False, _QWEN2),
}
# End-of-turn tokens of common chat templates: stop tokens when the vocabulary has them.
_END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>")
_CONTROL, _USER_DEFINED, _BYTE = 3, 4, 6  # tokenizer.ggml.token_type values


class UnsupportedTokenizerError(ValueError):
    """A vocabulary type or pre-tokenizer that fgrad.llm cannot build."""


class Tokenizer:
    """Text to token ids and back, with the special tokens generation needs.

    Build one with :meth:`from_gguf_metadata` or :meth:`from_file` (a ``tokenizer.json``).

    Attributes:
        bos_id: the beginning-of-sequence id or None.
        eos_id: the end-of-sequence id or None.
        add_bos: :meth:`encode` puts ``bos_id`` first.
        stop_tokens: frozenset of ids that end generation.
        chat_template: the jinja2 chat template text or None.
        vocab_size: number of ids.
        post_processor: the ``tokenizer.json``'s post-processor (``tokenizers``' object:
            BERT's ``[CLS] $A [SEP]`` template) or None; applied only when
            :meth:`encode` is asked for ``add_special_tokens``.
    """

    def __init__(
        self,
        backend: Any,
        *,
        bos_id: int | None = None,
        eos_id: int | None = None,
        add_bos: bool = False,
        stop_tokens: Iterable[int] = (),
        chat_template: str | None = None,
        post_processor: Any = None,
    ):
        self.backend = backend
        self.post_processor = post_processor
        self.bos_id = bos_id
        self.eos_id = eos_id
        self.add_bos = bool(add_bos and bos_id is not None)
        self.stop_tokens = frozenset(int(t) for t in stop_tokens) | (
            frozenset() if eos_id is None else frozenset({int(eos_id)})
        )
        self.chat_template = chat_template
        self.vocab_size = backend.get_vocab_size(with_added_tokens=True)

    # ------------------------------------------------------------------ building

    @classmethod
    def from_gguf_metadata(cls, metadata: Mapping[str, Any]) -> Tokenizer:
        """The tokenizer a GGUF file's ``tokenizer.*`` metadata describes.

        Raises:
            UnsupportedTokenizerError: a ``tokenizer.ggml.model`` other than ``gpt2`` and
                ``llama``, or a ``tokenizer.ggml.pre`` not in the table (the message lists
                both).
            KeyError: the metadata has no ``tokenizer.ggml.tokens``.
        """
        if "tokenizer.ggml.tokens" not in metadata:
            raise KeyError("GGUF metadata: tokenizer.ggml.tokens is missing: the file has no vocabulary")
        kind = metadata.get("tokenizer.ggml.model", "gpt2")
        tokens = [str(t) for t in metadata["tokenizer.ggml.tokens"]]
        types = list(metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens))
        if kind == "gpt2":
            backend = _bpe_backend(tokens, metadata.get("tokenizer.ggml.merges") or [],
                                   metadata.get("tokenizer.ggml.pre", "default"))
        elif kind == "llama":
            scores = list(metadata.get("tokenizer.ggml.scores") or [0.0] * len(tokens))
            backend = _sentencepiece_backend(
                tokens, scores, types, metadata.get("tokenizer.ggml.unknown_token_id", 0),
                bool(metadata.get("tokenizer.ggml.add_space_prefix", True)),
            )
        else:
            raise UnsupportedTokenizerError(
                f"tokenizer.ggml.model {kind!r} is not supported; supported: gpt2 (byte-level "
                "BPE), llama (SentencePiece BPE with byte fallback)"
            )
        from tokenizers import AddedToken

        special = [t for t, ty in zip(tokens, types) if ty in (_CONTROL, _USER_DEFINED)]
        backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])

        def ident(key):
            value = metadata.get(key)
            return None if value is None or not 0 <= int(value) < len(tokens) else int(value)

        bos, eos = ident("tokenizer.ggml.bos_token_id"), ident("tokenizer.ggml.eos_token_id")
        default_bos = kind == "llama"  # SentencePiece llama vocabularies start with <s>
        ids = {t: i for i, t in enumerate(tokens)}
        stops = {ids[t] for t in _END_OF_TURN if t in ids and types[ids[t]] in (_CONTROL, _USER_DEFINED)}
        eot = ident("tokenizer.ggml.eot_token_id")
        if eot is not None:
            stops.add(eot)
        return cls(
            backend,
            bos_id=bos,
            eos_id=eos,
            add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", default_bos)),
            stop_tokens=stops,
            chat_template=metadata.get("tokenizer.chat_template"),
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Tokenizer:
        """The tokenizer of a ``tokenizer.json``, with ``tokenizer_config.json`` beside it
        giving the BOS/EOS tokens and the chat template when present.

        Raises:
            FileNotFoundError: ``path`` does not exist.
        """
        from tokenizers import Tokenizer as _Backend

        path = os.fspath(path)
        folder = os.path.dirname(path)
        backend = _Backend.from_file(path)
        config: dict = {}
        cfg_path = os.path.join(folder, "tokenizer_config.json")
        if os.path.exists(cfg_path):
            with open(cfg_path, encoding="utf-8") as f:
                config = json.load(f)

        def ident(name):
            tok = config.get(name)
            if isinstance(tok, dict):
                tok = tok.get("content")
            return None if tok is None else backend.token_to_id(tok)

        bos, eos = ident("bos_token"), ident("eos_token")
        vocab = backend.get_vocab(with_added_tokens=True)
        specials = {t.content for t in _added(backend) if t.special}
        stops = {vocab[t] for t in _END_OF_TURN if t in vocab and t in specials}
        add_bos = bool(config.get("add_bos_token", _post_adds(backend, bos)))
        backend.no_padding()
        backend.no_truncation()
        # generation adds BOS itself (once): the post-processor's template would add a
        # second; it is kept aside for encoders (BERT's [CLS] ... [SEP]), see encode
        post_processor = backend.post_processor
        backend.post_processor = None
        return cls(backend, bos_id=bos, eos_id=eos, add_bos=add_bos, stop_tokens=stops,
                   chat_template=config.get("chat_template"), post_processor=post_processor)

    # ------------------------------------------------------------------ use

    def encode(
        self,
        text: str,
        *,
        add_bos: bool | None = None,
        add_special_tokens: bool = False,
        max_length: int | None = None,
    ) -> list[int]:
        """Token ids of ``text``; BOS first if ``add_bos`` (default: as the model says).

        Special tokens written in the text (``<|im_start|>``) become their ids.

        Args:
            text: the text.
            add_bos: put ``bos_id`` first (never twice); None: :attr:`add_bos`.
            add_special_tokens: wrap the ids in the ``tokenizer.json`` post-processor's
                special tokens instead (BERT's ``[CLS] ... [SEP]``, what transformers'
                ``add_special_tokens=True`` does); ``add_bos`` is then ignored. A tokenizer
                without a post-processor (a GGUF vocabulary) falls back to the BOS rule.
            max_length: keep at most this many ids, special tokens included: the text's
                ids are cut at the end before the special tokens are added (transformers'
                ``truncation=True, max_length=...`` for one text).

        Raises:
            TypeError: ``text`` is not a str.
            ValueError: ``max_length`` leaves no room for the text's ids.
        """
        if not isinstance(text, str):
            raise TypeError(f"Tokenizer.encode: text must be a str, got {type(text).__name__}")
        encoding = self.backend.encode(text, add_special_tokens=False)
        post = self.post_processor if add_special_tokens else None
        add = (self.add_bos if add_bos is None else add_bos) and post is None
        if max_length is not None:
            n_special = post.num_special_tokens_to_add(False) if post is not None else int(
                bool(add and self.bos_id is not None)
            )
            room = int(max_length) - n_special
            if room < 1:
                raise ValueError(
                    f"Tokenizer.encode: max_length={max_length} leaves no room for the text "
                    f"beside the {n_special} special tokens"
                )
            encoding.truncate(room)
        if post is not None:
            return list(post.process(encoding).ids)
        ids = encoding.ids
        if add and self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids = [self.bos_id, *ids]  # never a second BOS (a template may have written one)
        return ids

    def decode(self, ids: Sequence[int], *, skip_special: bool = True) -> str:
        """The text of ``ids`` (special tokens dropped unless ``skip_special=False``)."""
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    def token(self, i: int) -> str:
        """The vocabulary string of id ``i``."""
        return self.backend.id_to_token(int(i))

    def apply_chat_template(
        self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of a conversation rendered by the model's chat template.

        Args:
            messages: ``[{"role": "user", "content": "..."}, ...]``.
            add_generation_prompt: end with the assistant turn's opening.

        Returns:
            The ids, with BOS first when the model adds one, never twice.

        Raises:
            ValueError: the model has no chat template, or the template raised (its
                message is kept).
        """
        if not self.chat_template:
            raise ValueError(
                "Tokenizer.apply_chat_template: this model has no chat template "
                "(tokenizer.chat_template); generate from a plain prompt instead"
            )
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message):
            raise jinja2.TemplateError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        env.filters["tojson"] = lambda value, indent=None: json.dumps(value, indent=indent)
        try:
            text = env.from_string(self.chat_template).render(
                messages=list(messages),
                add_generation_prompt=add_generation_prompt,
                bos_token=self._text(self.bos_id),
                eos_token=self._text(self.eos_id),
            )
        except jinja2.TemplateError as err:
            raise ValueError(f"Tokenizer.apply_chat_template: the template failed: {err}") from err
        return self.encode(text)

    def stream(self) -> StreamDecoder:
        """A :class:`StreamDecoder` over this tokenizer."""
        return StreamDecoder(self)

    def _text(self, i: int | None) -> str:
        return "" if i is None else self.backend.id_to_token(i)

    def __repr__(self) -> str:
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, bos_id={self.bos_id}, eos_id={self.eos_id}, "
            f"add_bos={self.add_bos}, stop_tokens={sorted(self.stop_tokens)})"
        )


class StreamDecoder:
    """Text of a growing id sequence, handed out piece by piece, never splitting a character.

    ``push(i)`` returns the text that id ``i`` completes: empty while the ids so far end
    inside a multi-byte UTF-8 character (decoded, it would end in U+FFFD) or a word
    piece whose spacing is not settled. The pieces concatenate to ``decode(ids)``.

    Example:
        >>> tok = Tokenizer.from_gguf_metadata({"tokenizer.ggml.model": "gpt2",
        ...     "tokenizer.ggml.tokens": ["\\u00c3", "\\u00a9"], "tokenizer.ggml.merges": []})
        >>> stream = tok.stream()
        >>> stream.push(0), stream.push(1)  # the two bytes of 'é'
        ('', 'é')
    """

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self._prefix = 0  # ids before this are settled and handed out
        self._read = 0  # ids[_prefix:_read] are the context of the next piece

    def push(self, i: int) -> str:
        """Add id ``i``; the new text it completes (maybe empty)."""
        self.ids.append(int(i))
        decode = self.tokenizer.decode
        before = decode(self.ids[self._prefix : self._read])
        after = decode(self.ids[self._prefix :])
        if len(after) > len(before) and not after.endswith("\ufffd"):
            piece = after[len(before) :]
            # keep one id of context: a SentencePiece word's leading space depends on it
            self._prefix, self._read = self._read, len(self.ids)
            return piece
        return ""

    def flush(self) -> str:
        """Whatever is held back (an incomplete character at the end becomes U+FFFD)."""
        decode = self.tokenizer.decode
        before = decode(self.ids[self._prefix : self._read])
        after = decode(self.ids[self._prefix :])
        self._prefix = self._read = len(self.ids)
        return after[len(before) :]


# ---------------------------------------------------------------------- backends


def _bpe_backend(tokens: list[str], merges: Sequence[str], pre: str) -> Any:
    """Byte-level BPE (GPT-2 family) with the pre-tokenizer ``pre`` names."""
    from tokenizers import Regex, Tokenizer as _Backend, decoders, models, pre_tokenizers

    if pre not in _PRE_TOKENIZERS:
        raise UnsupportedTokenizerError(
            f"tokenizer.ggml.pre {pre!r} is not supported; supported: "
            f"{', '.join(sorted(_PRE_TOKENIZERS))}"
        )
    digits, expression = _PRE_TOKENIZERS[pre]
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    model = models.BPE({t: i for i, t in enumerate(tokens)}, pairs, ignore_merges=False)
    backend = _Backend(model)
    steps = [pre_tokenizers.Digits(individual_digits=True)] if digits else []
    steps += [
        pre_tokenizers.Split(Regex(expression), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ]
    backend.pre_tokenizer = pre_tokenizers.Sequence(steps)
    backend.decoder = decoders.ByteLevel()
    return backend


def _sentencepiece_backend(
    tokens: list[str], scores: list[float], types: list[int], unk: int, space_prefix: bool
) -> Any:
    """SentencePiece-style BPE: merges ordered by the merged piece's score, byte fallback."""
    from tokenizers import Tokenizer as _Backend, decoders, models, normalizers

    vocab = {t: i for i, t in enumerate(tokens)}
    # SentencePiece's BPE merges, at each step, the adjacent pair whose union is the
    # highest-scoring piece; as ranked BPE merges that is every split of every piece into
    # two pieces, ordered by the whole piece's score (ties: the lower id first).
    ranked = []
    for i, piece in enumerate(tokens):
        if types[i] != 1 or len(piece) < 2:
            continue
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                ranked.append((-float(scores[i]), i, vocab[left], left, right))
    ranked.sort()
    merges = [(left, right) for _, _, _, left, right in ranked]
    model = models.BPE(vocab, merges, unk_token=tokens[unk] if 0 <= unk < len(tokens) else None,
                       fuse_unk=True, byte_fallback=True)
    backend = _Backend(model)
    steps = [normalizers.Prepend("▁")] if space_prefix else []
    backend.normalizer = normalizers.Sequence([*steps, normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
        + ([decoders.Strip(" ", 1, 0)] if space_prefix else [])
    )
    return backend


def _added(backend: Any) -> list:
    try:
        return list(backend.get_added_tokens_decoder().values())
    except AttributeError:  # older tokenizers
        return []


def _post_adds(backend: Any, bos: int | None) -> bool:
    """Whether a tokenizer.json's post-processor puts BOS first."""
    if bos is None or backend.post_processor is None:
        return False
    return backend.encode("a", add_special_tokens=True).ids[:1] == [bos]
