"""Data-parallel training of the digits MLP (or the character transformer) across processes, over MPI.

Launch one process per core (or per GPU) with an MPI launcher; each reads its share of
every global batch (``fgrad.distributed.ShardedLoader``), computes the gradients of its
share, averages them over the ranks (``average_gradients``: one allreduce per bucket,
inside the jitted step) and applies the same AdamW update, so the parameters stay equal
on every rank::

    mpirun -n 2 -x OMP_NUM_THREADS=1 "$(which python)" -m mpi4py examples/data_parallel.py
    # as root in a container, on 2 cores: mpirun -n 4 --allow-run-as-root --oversubscribe ...
    python examples/data_parallel.py          # the same script on one process
    ... examples/data_parallel.py --model char  # the character transformer of
                                                # examples/char_transformer.py instead

``python -m mpi4py`` makes an exception on one rank abort the whole job instead of leaving
the others waiting in a collective. Prints per-rank throughput and the test accuracy
(rank 0). N ranks with batch B per rank compute the same steps as one process with batch
N * B (to float rounding; ``tests/distributed`` checks it for SGD and AdamW).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import distributed, nn, optim, random

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import char_transformer  # noqa: E402  (the corpus and the model of examples/char_transformer.py)
import digits  # noqa: E402  (the data and the model of examples/digits.py)


def make_step(model, opt, group=None):
    """The jitted data-parallel step: local gradients, their mean over ranks, the update."""

    def loss_fn(params, x, y):
        return fnp.mean(nn.softmax_cross_entropy(model.apply(params, x), y))

    def step(params, opt_state, x, y):
        loss, grads = fgrad.value_and_grad(loss_fn)(params, x, y)
        grads = distributed.average_gradients(grads, group=group)  # one psum per bucket
        loss = distributed.all_mean(loss, group=group)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    return fgrad.jit(step, donate_argnums=(0, 1))


def train(model, opt, data, *, batch_size: int, steps: int, seed: int = 0, group=None):
    """``steps`` data-parallel steps from the same initial parameters on every rank.

    Returns ``(params, losses, seconds)``; ``losses`` are the global batches' mean losses.
    """
    group = distributed.init() if group is None else group
    params = distributed.broadcast_params(model.init(random.key(seed)), group=group)
    opt_state = opt.init(params)
    loader = distributed.ShardedLoader(data, batch_size, seed=seed, group=group)
    step = make_step(model, opt, group)
    losses, epoch, start = [], 0, None
    while len(losses) < steps:
        for x, y in loader.epoch(epoch):
            params, opt_state, loss = step(params, opt_state, x, y)
            losses.append(float(loss))
            if start is None:  # the first step traces and compiles: not counted
                start = time.perf_counter()
            if len(losses) == steps:
                break
        epoch += 1
    return params, losses, time.perf_counter() - start


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=digits.POSITIVE_INT, default=600)
    parser.add_argument("--batch-size", type=digits.POSITIVE_INT, default=32, help="per rank")
    parser.add_argument("--lr", type=digits.POSITIVE_FLOAT, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", choices=("mlp", "char"), default="mlp")
    parser.add_argument("--chars", type=digits.POSITIVE_INT, default=200_000,
                        help="--model char: characters of the corpus (the standard library's source)")
    parser.add_argument("--seq-len", type=digits.POSITIVE_INT, default=64, help="--model char")
    args = parser.parse_args(argv)

    group = distributed.init()
    opt = optim.adamw(optim.cosine_decay_schedule(args.lr, args.steps), weight_decay=1e-4)
    if args.model == "char":
        return _main_char(args, group, opt)
    x_train, x_test, y_train, y_test = digits.load_data(args.seed)
    model = digits.make_model("mlp")
    params, losses, seconds = train(
        model, opt, (x_train, y_train), batch_size=args.batch_size, steps=args.steps,
        seed=args.seed, group=group,
    )
    per_second = (args.steps - 1) * args.batch_size / seconds
    print(
        f"rank {group.rank}/{group.size}: {args.steps} steps of {args.batch_size} examples, "
        f"{per_second:,.0f} examples/s on this rank ({per_second * group.size:,.0f} in all)",
        flush=True,
    )
    acc = digits.accuracy(model, params, x_test, y_test)
    distributed.barrier(group=group)
    if group.rank == 0:
        print(f"test accuracy {acc:.4f} ({len(y_test)} images), final loss {losses[-1]:.4f}")
    return {"accuracy": acc, "losses": losses, "examples_per_second": per_second}


def _main_char(args, group, opt) -> dict:
    """The character transformer, trained data-parallel on non-overlapping windows of the
    corpus: the windows are the data set that ``ShardedLoader`` shares out, so N ranks with
    batch B compute the steps of one process with batch N * B, as for the MLP."""
    data = char_transformer.make_dataset(char_transformer.load_corpus(args.chars))
    t = args.seq_len
    starts = np.arange(0, len(data.train) - t - 1, t)
    inputs, targets = char_transformer.batch_windows(data.train, starts, t)
    model = char_transformer.CharTransformer(len(data.vocab), t)
    params, losses, seconds = train(
        model, opt, (inputs, targets), batch_size=args.batch_size, steps=args.steps,
        seed=args.seed, group=group,
    )
    per_second = (args.steps - 1) * args.batch_size * t / seconds
    print(
        f"rank {group.rank}/{group.size}: {args.steps} steps of {args.batch_size} windows of "
        f"{t} characters, {per_second:,.0f} characters/s on this rank "
        f"({per_second * group.size:,.0f} in all)",
        flush=True,
    )
    bits = char_transformer.evaluate(model, params, data.held_out, batch_size=16, max_batches=4)
    baseline = char_transformer.unigram_bits(data.held_out, len(data.vocab))
    distributed.barrier(group=group)
    if group.rank == 0:
        print(
            f"held-out {bits:.3f} bits per character (unigram baseline {baseline:.3f}), "
            f"final loss {losses[-1]:.4f}"
        )
    return {"bits_per_char": bits, "losses": losses, "chars_per_second": per_second}


if __name__ == "__main__":
    main()
