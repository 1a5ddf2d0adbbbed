"""The digits MLP trains in float16 parameters as well as in float32 (issue 12).

The model and data are those of ``examples/digits.py`` (the UCI digits in scikit-learn,
the same stratified 80/20 split), at reduced size: a 64-128-10 MLP, five epochs. The
float16 run keeps its parameters, activations and gradients in float16; its reductions
(the batch mean of the loss, log_softmax's row sums) accumulate in float32. The optimiser
is ``fgrad.optim.sgd`` with momentum, applied to the float16 parameters directly.
"""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim, random

pytest.importorskip("sklearn")

SIZES = (64, 128, 10)
EPOCHS = 5
BATCH = 64
LR = 0.1


def _data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)
    return train_test_split(
        images, labels.astype(np.int64), test_size=0.2, random_state=0, stratify=labels
    )


def _train(dtype, data):
    """Test accuracy, last batch loss and the trained parameters of one run; both dtypes
    start from the same float32 initialisation (rounded) and see the same batches."""
    x_train, x_test, y_train, y_test = data
    model = nn.MLP(SIZES, activation=nn.relu)
    params = fgrad.tree.map(lambda p: fnp.astype(p, dtype), model.init(random.key(0)))
    opt = optim.sgd(LR, momentum=0.9)
    opt_state = opt.init(params)

    def loss_fn(params, x, y):
        return fnp.mean(nn.softmax_cross_entropy(model.apply(params, x), y))

    @fgrad.jit
    def step(params, opt_state, x, y):
        loss, grads = fgrad.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    order_rng = np.random.default_rng(0)
    x_train = x_train.astype(dtype)
    for _ in range(EPOCHS):
        order = order_rng.permutation(len(x_train))
        for start in range(0, len(x_train), BATCH):
            idx = order[start : start + BATCH]
            params, opt_state, loss = step(
                params, opt_state, fnp.asarray(x_train[idx]), fnp.asarray(y_train[idx])
            )
    logits = model.apply(params, fnp.asarray(x_test.astype(dtype)))
    accuracy = float(np.mean(np.asarray(fnp.argmax(logits, axis=-1)) == y_test))
    return accuracy, float(loss), params


def test_issue_12_digits_mlp_trains_in_float16_within_1_percent_of_float32():
    data = _data()
    acc32, loss32, _ = _train(np.float32, data)
    acc16, loss16, params16 = _train(np.float16, data)
    assert all(p.dtype == np.float16 for p in fgrad.tree.leaves(params16))
    assert np.isfinite(loss16)
    assert acc32 >= 0.93  # the model learns (0.953 when written)
    assert abs(acc16 - acc32) <= 0.01, (acc16, acc32)
    assert abs(loss16 - loss32) <= 0.1 * loss32 + 0.01
