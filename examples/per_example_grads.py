"""Per-example gradients with ``vmap``: DP-SGD's clipped, noised step on the UCI digits.

DP-SGD (Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, Algorithm 1)
needs every example's own gradient: each is clipped to norm ``C``, the clipped gradients
are summed, Gaussian noise of standard deviation ``sigma * C`` is added, and the sum is
averaged over the batch. ``fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0, 0))`` gives the
whole batch of per-example gradients in one batched pass (each op runs once on the batch),
and ``fgrad.jit`` compiles the step. This script trains the digits MLP with that step and
with plain minibatch SGD, prints both test accuracies and how often gradients were
clipped, and times the batched per-example gradients against a Python loop over examples.

The privacy guarantee (epsilon) of a run depends on sigma, the sampling rate and the
number of steps, and needs an accountant (for example Opacus' RDP accountant); it is not
computed here. Run ``python examples/per_example_grads.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim, random

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from digits import POSITIVE_FLOAT, POSITIVE_INT, load_data  # noqa: E402  (the same split)

MODEL = nn.MLP((64, 128, 10), activation=nn.relu)


def loss(params, x, y):
    """Softmax cross-entropy of one example (``x`` of 64 pixels) or of a batch, in nats."""
    logits = MODEL.apply(params, x)
    return fnp.mean(nn.softmax_cross_entropy(logits, y))


# Each example's gradient: the same loss, mapped over the examples of a batch.
per_example_grads = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0, 0))


def clipped_noisy_mean(grads, key, clip: float, sigma: float):
    """DP-SGD's aggregate of per-example gradients (leaves ``(batch, ...)``): clip each
    example's whole gradient to norm ``clip``, sum, add N(0, (sigma * clip)^2) noise per
    coordinate, divide by the batch size. Also returns the fraction of examples clipped."""
    leaves, treedef = fgrad.tree.flatten(grads)
    batch = leaves[0].shape[0]
    sq = sum(fnp.sum(fnp.reshape(g, (batch, -1)) ** 2, axis=1) for g in leaves)
    norms = fnp.sqrt(sq)
    scale = fnp.minimum(1.0, clip / fnp.maximum(norms, 1e-12))
    keys = random.split(key, len(leaves))
    noisy = [
        (fnp.tensordot(scale, g, axes=1) + sigma * clip * random.normal(k, g.shape[1:], g.dtype)) / batch
        for g, k in zip(leaves, keys)
    ]
    return fgrad.tree.unflatten(treedef, noisy), fnp.mean(norms > clip)


def train(data, *, private: bool, epochs: int, batch_size: int, lr: float, clip: float, sigma: float, seed: int):
    """Train the MLP with SGD (momentum 0.9); ``private`` uses the DP-SGD aggregate."""
    x_train, x_test, y_train, y_test = data
    key = random.key(seed)
    key, init_key = random.split(key)
    params = MODEL.init(init_key)
    opt = optim.sgd(lr, momentum=0.9)
    opt_state = opt.init(params)

    def step(params, opt_state, x, y, key):
        if private:
            grads, clipped = clipped_noisy_mean(per_example_grads(params, x, y), key, clip, sigma)
        else:
            grads, clipped = fgrad.grad(loss)(params, x, y), fnp.array(0.0)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, clipped

    step = fgrad.jit(step, donate_argnums=(0, 1))
    clipped_fractions = []
    n_full = len(x_train) // batch_size * batch_size  # full batches only: one compiled shape
    for _ in range(epochs):
        key, perm_key = random.split(key)
        order = np.asarray(random.permutation(perm_key, len(x_train)))[:n_full]
        for start in range(0, n_full, batch_size):
            idx = order[start : start + batch_size]
            key, step_key = random.split(key)
            params, opt_state, clipped = step(
                params, opt_state, fnp.asarray(x_train[idx]), fnp.asarray(y_train[idx]), step_key
            )
            clipped_fractions.append(float(clipped))
    logits = MODEL.apply(params, fnp.asarray(x_test))
    acc = float(np.mean(np.asarray(fnp.argmax(logits, axis=-1)) == y_test))
    return acc, float(np.mean(clipped_fractions))


def time_per_example_grads(data, batch_size: int, repeats: int = 5) -> tuple[float, float, float]:
    """Seconds for one batch of per-example gradients: vmap (jitted), vmap (eager) and a
    Python loop of grad calls; checks that they agree."""
    x_train, _, y_train, _ = data
    params = MODEL.init(random.key(1))
    x, y = fnp.asarray(x_train[:batch_size]), fnp.asarray(y_train[:batch_size])
    jitted = fgrad.jit(per_example_grads)
    grad_one = fgrad.grad(loss)

    def loop():
        return [grad_one(params, x[i], y[i]) for i in range(batch_size)]

    batched, looped = jitted(params, x, y), loop()
    for i, leaf in enumerate(fgrad.tree.leaves(batched)):
        want = np.stack([np.asarray(fgrad.tree.leaves(g)[i]) for g in looped])
        np.testing.assert_allclose(np.asarray(leaf), want, rtol=1e-4, atol=1e-6)

    def best(fn):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    return best(lambda: jitted(params, x, y)), best(lambda: per_example_grads(params, x, y)), best(loop)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=POSITIVE_INT, default=20)
    parser.add_argument("--batch-size", type=POSITIVE_INT, default=64)
    parser.add_argument("--lr", type=POSITIVE_FLOAT, default=0.05)
    parser.add_argument("--clip", type=POSITIVE_FLOAT, default=1.0, help="per-example gradient norm bound C")
    parser.add_argument("--sigma", type=float, default=1.0, help="noise multiplier (noise std = sigma * C)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.sigma < 0:
        parser.error(f"argument --sigma: expected a number >= 0, got {args.sigma}")

    data = load_data(args.seed)
    common = dict(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, clip=args.clip, sigma=args.sigma, seed=args.seed)
    sgd_acc, _ = train(data, private=False, **common)
    dp_acc, clipped = train(data, private=True, **common)
    t_jit, t_eager, t_loop = time_per_example_grads(data, args.batch_size)
    print(f"SGD:    test accuracy {sgd_acc:.4f}")
    print(
        f"DP-SGD: test accuracy {dp_acc:.4f} (clip C={args.clip}, noise multiplier {args.sigma}; "
        f"{100 * clipped:.0f}% of per-example gradients clipped)"
    )
    print(
        f"{args.batch_size} per-example gradients: vmap+jit {1e3 * t_jit:.2f} ms, vmap {1e3 * t_eager:.2f} ms, "
        f"loop of grad {1e3 * t_loop:.1f} ms ({t_loop / t_jit:.0f}x the jitted vmap)"
    )
    return {"sgd": sgd_acc, "dp_sgd": dp_acc, "clipped": clipped, "seconds": (t_jit, t_eager, t_loop)}


if __name__ == "__main__":
    main()
