"""Train a character-level causal transformer on the Python standard library's own source.

The corpus is on every machine that runs this script: the public top-level modules of the
standard library (the ``*.py`` files beside ``os.py`` whose names do not start with ``_``),
read in sorted order and concatenated up to ``--n-chars`` characters. The vocabulary is
the sorted set of characters in that text. The first 90% (by position) is the training
text, the last 10% the held-out text, so held-out modules are never seen in training.

The model is a GPT-style decoder: token and learned position embeddings, ``--n-layers``
pre-norm :class:`fgrad.nn.TransformerBlock` blocks with causal self-attention, a final
LayerNorm and a linear read-out to the vocabulary. It is trained with AdamW under a linear
warm-up plus cosine-decay learning rate and global-norm gradient clipping.

Prints the unigram baseline (the entropy of the training text's character frequencies, the
best any model that ignores context can do) and the train and held-out loss of the model,
all in bits per character, then samples text with temperature and top-k.

Run ``python examples/char_transformer.py --help`` for the options.

References:
    Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762.
    Radford et al., "Language Models are Unsupervised Multitask Learners" (GPT-2), 2019.
    Karpathy, "The Unreasonable Effectiveness of Recurrent Neural Networks", 2015 (the
    character-level language modelling set-up).
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim, random, tree

LN2 = math.log(2.0)


# ----------------------------------------------------------------------------- data


def corpus_files() -> list[pathlib.Path]:
    """The standard library's public top-level ``.py`` files, sorted by name."""
    stdlib = pathlib.Path(os.__file__).resolve().parent
    return sorted(p for p in stdlib.glob("*.py") if not p.name.startswith("_"))


def load_corpus(n_chars: int = 1_000_000) -> str:
    """The first ``n_chars`` characters of :func:`corpus_files` concatenated (UTF-8 text)."""
    parts, total = [], 0
    for path in corpus_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        total += len(text)
        if total >= n_chars:
            break
    return "".join(parts)[:n_chars]


@dataclass(frozen=True)
class Dataset:
    """A character corpus encoded as ids: ``vocab[i]`` is the character with id ``i``."""

    vocab: str
    train: np.ndarray  # (n_train,) int64 ids
    held_out: np.ndarray  # (n_held_out,) int64 ids

    def encode(self, text: str) -> np.ndarray:
        """Ids of the characters of ``text``; ValueError names any not in the vocabulary."""
        missing = self.unknown(text)
        if missing:
            raise ValueError(
                f"characters {missing!r} are not in the vocabulary of {len(self.vocab)} "
                "characters of the training text"
            )
        index = {c: i for i, c in enumerate(self.vocab)}
        return np.array([index[c] for c in text], dtype=np.int64)

    def unknown(self, text: str) -> str:
        """The distinct characters of ``text`` that are not in the vocabulary, in order."""
        known = set(self.vocab)
        return "".join(dict.fromkeys(c for c in text if c not in known))

    def decode(self, ids) -> str:
        """The text spelled by a sequence of ids."""
        return "".join(self.vocab[int(i)] for i in ids)


def make_dataset(text: str, held_out_fraction: float = 0.1) -> Dataset:
    """Encode ``text`` and split it by position: the last ``held_out_fraction`` is held out."""
    vocab = "".join(sorted(set(text)))
    lookup = np.zeros(max(map(ord, vocab)) + 1, dtype=np.int64)
    lookup[[ord(c) for c in vocab]] = np.arange(len(vocab))
    ids = lookup[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)]
    split = round(len(ids) * (1.0 - held_out_fraction))
    return Dataset(vocab, ids[:split], ids[split:])


def unigram_bits(ids: np.ndarray, vocab_size: int) -> float:
    """Entropy in bits per character of the character frequencies of ``ids``.

    This is the cross-entropy of the best context-free model on the same text, the
    baseline that a model using context has to beat.
    """
    counts = np.bincount(ids, minlength=vocab_size).astype(np.float64)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def batch_windows(
    ids: np.ndarray, starts: np.ndarray, seq_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``ids[s : s + seq_len]`` and next-character targets, ``(batch, seq_len)`` each."""
    idx = starts[:, None] + np.arange(seq_len + 1)[None, :]
    window = ids[idx]
    return window[:, :-1], window[:, 1:]


# ----------------------------------------------------------------------------- model


class CharTransformerParams(NamedTuple):
    """The model's parameters, typed as the layers' are (fields in alphabetical order)."""

    blocks: tuple  # one nn.TransformerBlockParams per block
    head: Any  # nn.LinearParams
    norm: Any  # nn.LayerNormParams
    positions: Any  # nn.EmbeddingParams
    tokens: Any  # nn.EmbeddingParams


@dataclass(frozen=True)
class CharTransformer:
    """A decoder-only transformer over characters: ids ``(batch, seq)`` to logits ``(batch, seq, vocab_size)``.

    Attributes:
        vocab_size: number of distinct characters.
        seq_len: the longest context (number of learned positions).
        d_model: model width.
        n_layers: number of transformer blocks.
        n_heads: attention heads per block.
    """

    vocab_size: int
    seq_len: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4

    def _layers(self):
        d = self.d_model
        return (
            nn.Embedding(self.vocab_size, d),
            nn.Embedding(self.seq_len, d),
            nn.TransformerBlock(d, self.n_heads, causal=True),
            nn.LayerNorm(d),
            nn.Linear(d, self.vocab_size),
        )

    def init(self, key) -> CharTransformerParams:
        """Parameters: the embeddings, a tuple of block params, the final norm and head."""
        tokens, positions, block, norm, head = self._layers()
        keys = random.split(key, 3 + self.n_layers)
        return CharTransformerParams(
            blocks=tuple(block.init(keys[3 + i]) for i in range(self.n_layers)),
            head=head.init(keys[2]),
            norm=norm.init(None),
            positions=positions.init(keys[1]),
            tokens=tokens.init(keys[0]),
        )

    def apply(self, params: CharTransformerParams, ids):
        """Logits of the next character at every position of ``ids`` (``(batch, seq)``)."""
        tokens, positions, block, norm, head = self._layers()
        seq = ids.shape[1]
        x = tokens.apply(params.tokens, ids) + positions.apply(params.positions, fnp.arange(seq))
        for p in params.blocks:
            x = block.apply(p, x)
        return head.apply(params.head, norm.apply(params.norm, x))


def loss_fn(model: CharTransformer, params: CharTransformerParams, inputs, targets):
    """Mean next-character cross-entropy in nats over all positions of the batch."""
    logits = model.apply(params, inputs)
    return fnp.mean(nn.softmax_cross_entropy(logits, targets))


# ----------------------------------------------------------------------------- training


def evaluate(
    model: CharTransformer, params: CharTransformerParams, ids: np.ndarray, *, batch_size: int, max_batches: int
) -> float:
    """Mean loss in bits per character over non-overlapping windows of ``ids``.

    Uses up to ``max_batches`` full batches of windows spread evenly over ``ids`` (a fixed
    set, so repeated evaluations are comparable); every window position counts, as in
    training.
    """
    seq_len = model.seq_len
    n_windows = (len(ids) - 1) // seq_len
    n_batches = max(1, min(max_batches, n_windows // batch_size))
    n_windows = n_batches * batch_size
    starts = np.linspace(0, len(ids) - seq_len - 1, n_windows).astype(np.int64)
    step = _eval_fn(model)
    total = 0.0
    for b in range(n_batches):
        inputs, targets = batch_windows(ids, starts[b * batch_size : (b + 1) * batch_size], seq_len)
        total += float(step(params, fnp.asarray(inputs), fnp.asarray(targets)))
    return total / n_batches / LN2


_EVAL_FNS: dict = {}


def _eval_fn(model):
    # One jitted loss per model shape, shared between calls (jit caches per signature).
    if model not in _EVAL_FNS:
        _EVAL_FNS[model] = fgrad.jit(lambda params, x, y: loss_fn(model, params, x, y))
    return _EVAL_FNS[model]


def _decay_mask(params):
    # Decoupled weight decay on matrices only: not on biases or LayerNorm scales (GPT-2).
    return tree.map(lambda p: p.ndim >= 2, params)


def train(
    data: Dataset,
    *,
    steps: int = 1000,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    seq_len: int = 64,
    batch_size: int = 32,
    lr: float = 6e-3,
    warmup: int = 100,
    weight_decay: float = 0.01,
    clip: float = 1.0,
    seed: int = 0,
    eval_batches: int = 8,
    eval_every: int = 0,
    progress: bool = True,
) -> dict:
    """Train a :class:`CharTransformer` with AdamW; returns model, params and bits/char figures.

    Returns:
        A dict with ``model``, ``params``, ``train_bits`` and ``held_out_bits`` (bits per
        character on fixed evaluation windows), ``unigram_bits`` (the baseline on the
        training text), ``history`` (the training bits/char of every step), ``evals``
        (``(step, train_bits, held_out_bits)`` every ``eval_every`` steps, if > 0) and
        ``seconds`` (the training time, evaluations included).
    """
    model = CharTransformer(len(data.vocab), seq_len, d_model, n_layers, n_heads)
    key = random.key(seed)
    key, init_key = random.split(key)
    params = model.init(init_key)
    schedule = optim.warmup_cosine_decay_schedule(
        0.0, lr, min(warmup, steps - 1), steps, end_value=lr / 10
    )
    opt = optim.chain(
        optim.clip_by_global_norm(clip),
        optim.adamw(schedule, b2=0.99, weight_decay=weight_decay, mask=_decay_mask),
    )
    opt_state = opt.init(params)

    # Loss, gradients, clipping and the AdamW update (step count and schedule included) in
    # one graph for the fixed batch shape: traced on the first step, replayed after.
    @fgrad.jit
    def train_step(params, opt_state, x, y):
        loss, grads = fgrad.value_and_grad(lambda p: loss_fn(model, p, x, y))(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    def evaluate_both():
        return tuple(
            evaluate(model, params, ids, batch_size=batch_size, max_batches=eval_batches)
            for ids in (data.train, data.held_out)
        )

    history, evals = [], []
    running = None
    bar = _progress(steps, progress)
    start = time.perf_counter()
    for step in range(steps):
        key, batch_key = random.split(key)
        starts = np.asarray(random.randint(batch_key, (batch_size,), 0, len(data.train) - seq_len))
        inputs, targets = batch_windows(data.train, starts, seq_len)
        params, opt_state, loss = train_step(
            params, opt_state, fnp.asarray(inputs), fnp.asarray(targets)
        )
        bits = float(loss) / LN2
        running = bits if running is None else 0.95 * running + 0.05 * bits
        history.append(bits)
        if step % 10 == 0 or step == steps - 1:
            bar.set_postfix(bits_per_char=f"{running:.3f}")
        bar.update(1)
        if eval_every and (step + 1) % eval_every == 0 and step + 1 < steps:
            evals.append((step + 1, *evaluate_both()))
            bar.write(
                f"step {step + 1}: train {evals[-1][1]:.3f}, held out {evals[-1][2]:.3f} bits/char"
            )
    bar.close()
    seconds = time.perf_counter() - start
    train_bits, held_out_bits = evaluate_both()
    evals.append((steps, train_bits, held_out_bits))
    return {
        "model": model,
        "params": params,
        "unigram_bits": unigram_bits(data.train, len(data.vocab)),
        "train_bits": train_bits,
        "held_out_bits": held_out_bits,
        "history": history,
        "evals": evals,
        "seconds": seconds,
    }


# ----------------------------------------------------------------------------- sampling


def sample(
    model: CharTransformer,
    params: CharTransformerParams,
    data: Dataset,
    key,
    *,
    prompt: str = "def ",
    length: int = 200,
    temperature: float = 0.8,
    top_k: int | None = 10,
) -> str:
    """Generate ``length`` characters after ``prompt`` (returned without the prompt).

    Each character is drawn by :func:`fgrad.random.categorical` from the model's logits at
    the last position, divided by ``temperature`` and restricted to the ``top_k`` most
    likely characters (all of them when ``top_k`` is None or 0). The context is the last
    ``seq_len`` characters, right-padded to ``seq_len`` so that every call has one shape
    (one jit trace); causal attention makes the padding invisible to earlier positions.
    """
    if temperature <= 0:
        raise ValueError(f"sample: temperature must be > 0, got {temperature}")
    forward = _forward_fn(model)
    context = list(data.encode(prompt)) or [0]
    out = []
    for _ in range(length):
        window = context[-model.seq_len :]
        padded = np.zeros((1, model.seq_len), dtype=np.int64)
        padded[0, : len(window)] = window
        logits = np.asarray(forward(params, fnp.asarray(padded)))[0, len(window) - 1].astype(
            np.float64
        )
        logits = logits / temperature
        if top_k and top_k < len(logits):
            kth = np.partition(logits, -top_k)[-top_k]
            logits = np.where(logits >= kth, logits, -np.inf)
        key, draw_key = random.split(key)
        next_id = int(random.categorical(draw_key, fnp.asarray(logits)))
        context.append(next_id)
        out.append(next_id)
    return data.decode(out)


_FORWARD_FNS: dict = {}


def _forward_fn(model):
    # One jitted forward pass per model shape, reused by every sampling step.
    if model not in _FORWARD_FNS:
        _FORWARD_FNS[model] = fgrad.jit(model.apply)
    return _FORWARD_FNS[model]


# ----------------------------------------------------------------------------- driver


def _progress(total: int, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is an optional extra; fall back to a silent counter
        tqdm = None
    if tqdm is None or not enabled:
        return _Silent()
    return tqdm(total=total, desc="train", unit="step")  # stderr, so printed results stay clean in logs


class _Silent:
    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        pass

    def close(self):
        pass

    def write(self, text):
        print(text)


def _checked(kind: type, test, what: str):
    """An argparse ``type=``: ``kind(text)`` passing ``test``, else a one-line usage error."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not test(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    parse.__name__ = what
    return parse


POSITIVE_INT = _checked(int, lambda v: v >= 1, "a positive integer")
COUNT = _checked(int, lambda v: v >= 0, "an integer >= 0")
POSITIVE_FLOAT = _checked(float, lambda v: 0 < v < math.inf, "a positive number")


def main(argv=None) -> dict:
    """Parse options, train, print bits/char and a sample; returns the figures and the sample."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=POSITIVE_INT, default=1000, help="training steps")
    parser.add_argument("--d-model", type=POSITIVE_INT, default=64, help="model width")
    parser.add_argument("--n-layers", type=POSITIVE_INT, default=2, help="transformer blocks")
    parser.add_argument("--n-heads", type=POSITIVE_INT, default=4, help="attention heads per block")
    parser.add_argument(
        "--seq-len", type=POSITIVE_INT, default=64, help="context length in characters"
    )
    parser.add_argument("--batch-size", type=POSITIVE_INT, default=32)
    parser.add_argument("--lr", type=POSITIVE_FLOAT, default=6e-3, help="peak learning rate")
    parser.add_argument("--warmup", type=COUNT, default=100, help="linear warm-up steps")
    parser.add_argument(
        "--n-chars", type=POSITIVE_INT, default=1_000_000, help="corpus size in characters"
    )
    parser.add_argument(
        "--eval-batches", type=POSITIVE_INT, default=8, help="batches per evaluation"
    )
    parser.add_argument(
        "--eval-every", type=COUNT, default=250, help="evaluate every k steps (0: only at the end)"
    )
    parser.add_argument("--prompt", default="def ", help="text the sample continues")
    parser.add_argument("--sample-length", type=COUNT, default=300, help="characters to sample")
    parser.add_argument(
        "--temperature", type=POSITIVE_FLOAT, default=0.8, help="sampling temperature (> 0)"
    )
    parser.add_argument(
        "--top-k", type=COUNT, default=10, help="sample among the k likeliest (0: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=pathlib.Path, default=None, help="save the parameters (safetensors)"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    if args.d_model % args.n_heads:
        parser.error(f"--d-model {args.d_model} must be a multiple of --n-heads {args.n_heads}")

    data = make_dataset(load_corpus(args.n_chars))
    if len(data.held_out) <= args.seq_len:  # the held-out text is the shorter part (10%)
        parser.error(
            f"--n-chars {args.n_chars}: the held-out text ({len(data.held_out)} characters) "
            f"needs more than --seq-len {args.seq_len} characters; use --n-chars of at least "
            f"{10 * (args.seq_len + 1) + 10}"
        )
    missing = data.unknown(args.prompt)
    if missing:  # checked before training, not after it
        parser.error(
            f"--prompt: characters {missing!r} are not in the vocabulary of the training text "
            f"({len(data.vocab)} characters); use characters that occur in Python source"
        )
    print(
        f"corpus: {len(data.train) + len(data.held_out):,} characters of the standard library "
        f"({len(data.train):,} train, {len(data.held_out):,} held out), vocabulary {len(data.vocab)}"
    )
    result = train(
        data,
        steps=args.steps,
        d_model=args.d_model,
        n_layers=args.n_layers,
        n_heads=args.n_heads,
        seq_len=args.seq_len,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        seed=args.seed,
        eval_batches=args.eval_batches,
        eval_every=args.eval_every,
        progress=not args.no_progress,
    )
    n_params = sum(int(np.prod(p.shape)) for p in tree.leaves(result["params"]))
    print(f"model: {n_params:,} parameters, {args.steps} steps in {result['seconds']:.1f} s")
    print(f"unigram baseline: {result['unigram_bits']:.3f} bits/char")
    print(f"train:            {result['train_bits']:.3f} bits/char")
    print(f"held out:         {result['held_out_bits']:.3f} bits/char")
    text = sample(
        result["model"],
        result["params"],
        data,
        random.fold_in(random.key(args.seed), 1),
        prompt=args.prompt,
        length=args.sample_length,
        temperature=args.temperature,
        top_k=args.top_k,
    )
    print(f"sample (temperature {args.temperature}, top-k {args.top_k}):\n{args.prompt}{text}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        fgrad.io.save(args.out, result["params"])  # atomic: temporary file + rename
        print(f"saved {args.out}")
    result["sample"] = text
    result["vocab"] = data.vocab
    return result


if __name__ == "__main__":
    main()
