"""Train a character-level LSTM language model on the Python standard library's own source.

This script reads top to bottom like a notebook; each ``# %%`` cell is one step.

1. **Data.** The corpus of ``examples/char_transformer.py``: the public top-level modules of
   the standard library, concatenated up to ``--n-chars`` characters, the first 90% for
   training and the last 10% held out (whole modules the model never sees). Characters
   are ids into the sorted vocabulary of the text.
2. **Model.** Embedding -> ``--n-layers`` LSTM layers (:class:`fgrad.nn.RNN` over
   :class:`fgrad.nn.LSTMCell`, one :func:`fgrad.lax.scan` each) -> a linear read-out to the
   vocabulary: the next character's logits at every position (Graves 2013; Karpathy
   2015's char-rnn). The forget gates' biases start at 1 (Jozefowicz et al. 2015).
3. **Training.** Random windows of ``--seq-len`` characters, each starting from a zero
   state (truncated backpropagation through time); Adam with global-norm gradient
   clipping. Loss, gradients, clipping and the update are one :func:`fgrad.jit` program:
   the scan's forward loop and its reverse loop are each one node of it.
4. **Evaluation.** Every ``--eval-every`` steps the mean cross-entropy on fixed held-out
   windows is printed in bits per character, beside the unigram baseline (the entropy of
   the character frequencies, the best any model without context can do).
5. **Sampling.** The prompt runs through the cells one character at a time, then each
   next character is drawn from the logits (divided by ``--temperature``) and fed back,
   carrying the LSTM state ``(h, c)``: one jitted step per character, no recomputation.

Run ``python examples/lstm_lm.py --help`` for the options; ``--quick`` is a few-second
run (``tests/examples/test_lstm_lm.py`` runs it).

References:
    Hochreiter and Schmidhuber, "Long Short-Term Memory", Neural Computation 9, 1997.
    Graves, "Generating Sequences With Recurrent Neural Networks", 2013, arXiv:1308.0850.
    Karpathy, "The Unreasonable Effectiveness of Recurrent Neural Networks", 2015.
    Jozefowicz, Zaremba and Sutskever, "An Empirical Exploration of Recurrent Network
    Architectures", ICML 2015.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim, random, tree

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import char_transformer  # noqa: E402  (the corpus, its split and windows, and the options' types)

LN2 = math.log(2.0)

# %% [1] data: the same corpus, split and windows as the character transformer
load_corpus = char_transformer.load_corpus
make_dataset = char_transformer.make_dataset
unigram_bits = char_transformer.unigram_bits
batch_windows = char_transformer.batch_windows


# %% [2] model


class LSTMLMParams(NamedTuple):
    """The model's parameters (fields in alphabetical order, as the layers' are)."""

    embed: Any  # nn.EmbeddingParams
    head: Any  # nn.LinearParams
    layers: tuple  # one nn.LSTMCellParams per layer


@dataclass(frozen=True)
class LSTMLM:
    """Ids ``(batch, seq)`` to next-character logits ``(batch, seq, vocab_size)``.

    Attributes:
        vocab_size: number of distinct characters.
        d_embed: width of the character embedding.
        hidden_size: width of each LSTM layer.
        n_layers: stacked LSTM layers.
    """

    vocab_size: int
    d_embed: int = 32
    hidden_size: int = 128
    n_layers: int = 1

    def cells(self) -> list[nn.LSTMCell]:
        sizes = [self.d_embed] + [self.hidden_size] * self.n_layers
        return [nn.LSTMCell(a, self.hidden_size, forget_bias=1.0) for a in sizes[:-1]]

    def _embed(self) -> nn.Embedding:
        init = nn.initializers.normal(0.1)
        return nn.Embedding(self.vocab_size, self.d_embed, embedding_init=init)

    def _head(self) -> nn.Linear:
        return nn.Linear(self.hidden_size, self.vocab_size)

    def init(self, key) -> LSTMLMParams:
        k_embed, k_head, *k_layers = random.split(key, 2 + self.n_layers)
        return LSTMLMParams(
            embed=self._embed().init(k_embed),
            head=self._head().init(k_head),
            layers=tuple(cell.init(k) for cell, k in zip(self.cells(), k_layers)),
        )

    def apply(self, params: LSTMLMParams, ids):
        """Logits at every position of ``ids``; each layer one scan over the sequence."""
        x = self._embed().apply(params.embed, ids)
        for cell, p in zip(self.cells(), params.layers):
            x, _ = nn.RNN(cell).apply(p, x)  # batch-major (batch, seq, features)
        return self._head().apply(params.head, x)

    def step(self, params: LSTMLMParams, carries: tuple, ids):
        """One character per sequence: ``ids`` ``(batch,)`` and the layers' ``(h, c)``
        carries to the next carries and logits ``(batch, vocab_size)`` (for sampling)."""
        x = self._embed().apply(params.embed, ids)
        new = []
        for cell, p, carry in zip(self.cells(), params.layers, carries):
            carry, x = cell.apply(p, carry, x)
            new.append(carry)
        return tuple(new), self._head().apply(params.head, x)

    def initial_carries(self, batch: int) -> tuple:
        return tuple(cell.initial_carry((batch,)) for cell in self.cells())


def loss_fn(model: LSTMLM, params: LSTMLMParams, inputs, targets):
    """Mean next-character cross-entropy in nats over every position of the batch."""
    return fnp.mean(nn.softmax_cross_entropy(model.apply(params, inputs), targets))


# %% [3] training, [4] evaluation


def held_out_windows(ids: np.ndarray, seq_len: int, n_windows: int) -> tuple:
    """Fixed windows spread evenly over ``ids``, so successive evaluations compare."""
    n_windows = max(1, min(n_windows, (len(ids) - 1) // seq_len))
    starts = np.linspace(0, len(ids) - seq_len - 1, n_windows).astype(np.int64)
    return batch_windows(ids, starts, seq_len)


def train(
    data,
    *,
    steps: int = 2000,
    d_embed: int = 32,
    hidden_size: int = 128,
    n_layers: int = 1,
    seq_len: int = 64,
    batch_size: int = 32,
    lr: float = 3e-3,
    clip: float = 1.0,
    eval_every: int = 200,
    eval_windows: int = 64,
    seed: int = 0,
    log=print,
) -> dict:
    """Train an :class:`LSTMLM` with Adam; returns the model, params and bits/char figures.

    Returns:
        A dict with ``model``, ``params``, ``evals`` (``(step, held_out_bits)`` at step 0,
        every ``eval_every`` steps and at the end), ``held_out_bits`` (the last),
        ``train_bits`` (per step), ``unigram_bits`` and ``seconds`` (training time).
    """
    model = LSTMLM(len(data.vocab), d_embed, hidden_size, n_layers)
    key, init_key = random.split(random.key(seed))
    params = model.init(init_key)
    opt = optim.chain(optim.clip_by_global_norm(clip), optim.adam(lr))
    opt_state = opt.init(params)

    @fgrad.jit
    def train_step(params, opt_state, x, y):
        loss, grads = fgrad.value_and_grad(lambda p: loss_fn(model, p, x, y))(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    windows = held_out_windows(data.held_out, seq_len, eval_windows)
    held_x, held_y = (fnp.asarray(a) for a in windows)
    evaluate = fgrad.jit(lambda p: loss_fn(model, p, held_x, held_y))
    baseline = unigram_bits(data.train, len(data.vocab))

    def report(step):
        bits = float(evaluate(params)) / LN2
        evals.append((step, bits))
        log(f"step {step:5d}: held-out {bits:.3f} bits/char (unigram baseline {baseline:.3f})")

    evals, history = [], []
    report(0)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        key, batch_key = random.split(key)
        starts = np.asarray(random.randint(batch_key, (batch_size,), 0, len(data.train) - seq_len))
        inputs, targets = batch_windows(data.train, starts, seq_len)
        inputs, targets = fnp.asarray(inputs), fnp.asarray(targets)
        params, opt_state, loss = train_step(params, opt_state, inputs, targets)
        history.append(float(loss) / LN2)
        if (eval_every and step % eval_every == 0) or step == steps:
            report(step)
    return {
        "model": model,
        "params": params,
        "evals": evals,
        "held_out_bits": evals[-1][1],
        "train_bits": history,
        "unigram_bits": baseline,
        "seconds": time.perf_counter() - start,
    }


# %% [5] sampling


def sample(model: LSTMLM, params: LSTMLMParams, data, key, *, prompt: str = "def ",
           length: int = 200, temperature: float = 0.8) -> str:
    """``length`` characters after ``prompt`` (returned without it), carrying the state."""
    if temperature <= 0:
        raise ValueError(f"sample: temperature must be > 0, got {temperature}")
    step = fgrad.jit(model.step)
    carries = model.initial_carries(1)
    logits = None
    for i in data.encode(prompt) if prompt else [0]:
        carries, logits = step(params, carries, fnp.asarray([i]))
    out = []
    for _ in range(length):
        key, draw = random.split(key)
        next_id = int(random.categorical(draw, logits[0] / temperature))
        out.append(next_id)
        carries, logits = step(params, carries, fnp.asarray([next_id]))
    return data.decode(out)


# %% driver

POSITIVE_INT, COUNT, POSITIVE_FLOAT = (
    char_transformer.POSITIVE_INT,
    char_transformer.COUNT,
    char_transformer.POSITIVE_FLOAT,
)

QUICK = {"steps": 60, "hidden_size": 64, "seq_len": 32, "batch_size": 16, "n_chars": 100_000,
         "eval_every": 20, "eval_windows": 16, "sample_length": 40}


def main(argv=None) -> dict:
    """Parse options, train, print the held-out loss as it falls and a sample."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=POSITIVE_INT, default=2000, help="training steps")
    parser.add_argument("--hidden-size", type=POSITIVE_INT, default=128, help="LSTM width")
    parser.add_argument("--n-layers", type=POSITIVE_INT, default=1, help="stacked LSTM layers")
    parser.add_argument("--d-embed", type=POSITIVE_INT, default=32, help="embedding width")
    parser.add_argument("--seq-len", type=POSITIVE_INT, default=64, help="window length (BPTT)")
    parser.add_argument("--batch-size", type=POSITIVE_INT, default=32)
    parser.add_argument("--lr", type=POSITIVE_FLOAT, default=3e-3, help="Adam learning rate")
    parser.add_argument("--n-chars", type=POSITIVE_INT, default=1_000_000, help="corpus size")
    parser.add_argument("--eval-every", type=COUNT, default=200, help="evaluate every k steps")
    parser.add_argument("--eval-windows", type=POSITIVE_INT, default=64, help="held-out windows")
    parser.add_argument("--prompt", default="def ", help="text the sample continues")
    parser.add_argument("--sample-length", type=COUNT, default=300, help="characters to sample")
    parser.add_argument("--temperature", type=POSITIVE_FLOAT, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a few-second run: " + ", ".join(f"{k}={v}" for k, v in QUICK.items()))
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)

    data = make_dataset(load_corpus(args.n_chars))
    if len(data.held_out) <= args.seq_len:
        parser.error(f"--n-chars {args.n_chars}: the held-out 10% is shorter than --seq-len")
    missing = data.unknown(args.prompt)
    if missing:
        parser.error(f"--prompt: characters {missing!r} are not in the training text's vocabulary")
    print(f"corpus: {len(data.train):,} train and {len(data.held_out):,} held-out characters, "
          f"vocabulary {len(data.vocab)}")
    result = train(
        data, steps=args.steps, d_embed=args.d_embed, hidden_size=args.hidden_size,
        n_layers=args.n_layers, seq_len=args.seq_len, batch_size=args.batch_size, lr=args.lr,
        eval_every=args.eval_every, eval_windows=args.eval_windows, seed=args.seed,
    )
    n_params = sum(int(np.prod(p.shape)) for p in tree.leaves(result["params"]))
    chars = args.steps * args.batch_size * args.seq_len
    print(f"model: {n_params:,} parameters; {args.steps} steps in {result['seconds']:.1f} s "
          f"({chars / result['seconds']:,.0f} characters/s)")
    text = sample(result["model"], result["params"], data, random.key(args.seed + 1),
                  prompt=args.prompt, length=args.sample_length, temperature=args.temperature)
    print(f"sample (temperature {args.temperature}):\n{args.prompt}{text}")
    return {**result, "sample": text, "vocab": data.vocab}


if __name__ == "__main__":
    main()
