"""Train an MLP and a small CNN on the UCI handwritten digits with fgrad.

The data: 1,797 8x8 grey-level images of the digits 0-9 (Alpaydin and Kaynak, UCI, 1998),
shipped inside scikit-learn as ``sklearn.datasets.load_digits`` — no download. A fixed,
stratified 80/20 split gives 1,437 training and 360 test images.

Run ``python examples/digits.py --help`` for the options. Prints the test accuracy of each
model, saves a loss/accuracy plot (PNG) and the trained parameters (safetensors).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import time
from typing import Any, NamedTuple

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim, random

MODELS = ("mlp", "cnn")


def load_data(seed: int = 0):
    """The digits as float32 images scaled to [0, 1] and int64 labels, split 80/20."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)
    return train_test_split(images, labels.astype(np.int64), test_size=0.2, random_state=seed, stratify=labels)


def make_model(name: str):
    """The model as a layer with init/apply; its input is ``(batch, 64)`` pixels."""
    if name == "mlp":
        return nn.MLP((64, 256, 256, 10), activation=nn.relu)
    return _SmallCNN()


class SmallCNNParams(NamedTuple):
    """The CNN's parameters, typed as the layers' are: a misspelt field fails where it is read."""

    conv1: Any  # nn.Conv2dParams
    conv2: Any  # nn.Conv2dParams
    head: Any  # nn.LinearParams


class _SmallCNN:
    """conv(1->16, 3x3, pad 1) - relu - maxpool 2 - conv(16->32, 3x3, pad 1) - relu - maxpool 2 - linear."""

    def __init__(self):
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(32 * 2 * 2, 10)

    def init(self, key) -> SmallCNNParams:
        k1, k2, k3 = random.split(key, 3)
        return SmallCNNParams(
            conv1=self.conv1.init(k1), conv2=self.conv2.init(k2), head=self.head.init(k3)
        )

    def apply(self, params: SmallCNNParams, x, *, key=None, train=False):
        x = fnp.reshape(x, (-1, 1, 8, 8))
        x = self.pool.apply((), nn.relu(self.conv1.apply(params.conv1, x)))
        x = self.pool.apply((), nn.relu(self.conv2.apply(params.conv2, x)))
        return self.head.apply(params.head, fnp.reshape(x, (x.shape[0], -1)))


def train(name: str, data, *, epochs: int, batch_size: int, lr: float, seed: int, progress: bool = True):
    """Train one model with AdamW; returns (params, history, test accuracy)."""
    x_train, x_test, y_train, y_test = data
    model = make_model(name)
    key = random.key(seed)
    key, init_key = random.split(key)
    params = model.init(init_key)
    steps_per_epoch = -(-len(x_train) // batch_size)
    schedule = optim.cosine_decay_schedule(lr, epochs * steps_per_epoch)
    opt = optim.adamw(schedule, weight_decay=1e-4)
    opt_state = opt.init(params)

    def loss_fn(params, x, y):
        logits = model.apply(params, x)
        return fnp.mean(nn.softmax_cross_entropy(logits, y))

    # Loss, gradients and the AdamW update (its step count and schedule included) in one
    # graph per batch shape: traced on the first step, replayed after. The old parameters
    # and optimiser state are not used again, so they are donated: the new ones are
    # written into their arrays instead of fresh ones.
    def train_step(params, opt_state, x, y):
        loss, grads = fgrad.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    train_step = fgrad.jit(train_step, donate_argnums=(0, 1))
    history = {"loss": [], "test_accuracy": []}
    bar = _progress(epochs, name, progress)
    for epoch in range(epochs):
        key, perm_key = random.split(key)
        order = np.asarray(random.permutation(perm_key, len(x_train)))
        losses = []
        for start in range(0, len(x_train), batch_size):
            idx = order[start : start + batch_size]
            x, y = fnp.asarray(x_train[idx]), fnp.asarray(y_train[idx])
            params, opt_state, loss = train_step(params, opt_state, x, y)
            losses.append(float(loss))
        acc = accuracy(model, params, x_test, y_test)
        history["loss"].append(float(np.mean(losses)))
        history["test_accuracy"].append(acc)
        bar.set_postfix(loss=f"{history['loss'][-1]:.4f}", test_acc=f"{acc:.4f}")
        bar.update(1)
    bar.close()
    return params, history, history["test_accuracy"][-1]


def accuracy(model, params, x, y) -> float:
    """Fraction of ``x`` whose arg-max logit is the label."""
    logits = model.apply(params, fnp.asarray(x))
    return float(np.mean(np.asarray(fnp.argmax(logits, axis=-1)) == y))


def _progress(total: int, desc: str, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is an optional extra; fall back to a silent counter
        tqdm = None
    if tqdm is None or not enabled:
        return _Silent()
    return tqdm(total=total, desc=desc, unit="epoch")  # stderr, so printed results stay clean in logs


class _Silent:
    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        pass

    def close(self):
        pass


def save_plot(histories: dict, path: pathlib.Path) -> None:
    """Loss and test accuracy per epoch for each model, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    for name, hist in histories.items():
        epochs = np.arange(1, len(hist["loss"]) + 1)
        ax_loss.plot(epochs, hist["loss"], label=name)
        ax_acc.plot(epochs, hist["test_accuracy"], label=name)
    ax_loss.set(xlabel="epoch", ylabel="training loss (nats)", yscale="log")
    ax_acc.set(xlabel="epoch", ylabel="test accuracy")
    ax_acc.legend()
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)  # atomic: a reader never sees half a file


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
POSITIVE_FLOAT = _checked(float, lambda v: 0 < v < math.inf, "a positive number")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--epochs", type=POSITIVE_INT, default=30)
    parser.add_argument("--batch-size", type=POSITIVE_INT, default=64)
    parser.add_argument("--lr", type=POSITIVE_FLOAT, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/digits"))
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)

    data = load_data(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    histories, results = {}, {}
    for name in args.models:
        start = time.perf_counter()
        params, hist, acc = train(
            name, data, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
            seed=args.seed, progress=not args.no_progress,
        )
        seconds = time.perf_counter() - start
        fgrad.io.save(args.out / f"{name}.safetensors", params)
        histories[name] = hist
        results[name] = acc
        print(f"{name}: test accuracy {acc:.4f} ({len(data[1])} images) in {seconds:.1f} s")
    save_plot(histories, args.out / "digits.png")
    print(f"saved {args.out / 'digits.png'} and the checkpoints in {args.out}/")
    return results


if __name__ == "__main__":
    main()
