"""LSTMCell, GRUCell and RNN: PyTorch's equations written out in numpy, float64 finite
differences, and the same values under jit, vmap and grad."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random, tree
from fgrad.errors import DTypeError, ShapeError
from fgrad.test_util import check_grads

F64 = np.float64


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_step_np(p, h, c, x):
    """PyTorch's nn.LSTMCell: gates i, f, g, o side by side in the weight's columns."""
    z = x @ p.input_kernel + h @ p.hidden_kernel + p.bias
    i, f, g, o = np.split(z, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def gru_step_np(p, h, x):
    """PyTorch's nn.GRUCell: gates r, z, n; the reset gate multiplies W_hn h + b_hn."""
    a = x @ p.input_kernel + p.input_bias
    b = h @ p.hidden_kernel + p.hidden_bias
    (ar, az, an), (br, bz, bn) = np.split(a, 3, axis=-1), np.split(b, 3, axis=-1)
    r, z = _sigmoid(ar + br), _sigmoid(az + bz)
    n = np.tanh(an + r * bn)
    return (1 - z) * n + z * h


def _np_params(params):
    return tree.map(lambda t: np.asarray(t, dtype=F64), params)


def _xs(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


CELLS = {
    "lstm": nn.LSTMCell(3, 4, param_dtype=F64),
    "gru": nn.GRUCell(3, 4, param_dtype=F64),
}


def _run_np(kind, p, xs, reverse=False):
    """The cell over ``xs`` (seq, batch, in) step by step in numpy: outputs and final carry."""
    h = np.zeros((*xs.shape[1:-1], 4))
    c = h.copy()
    ys = [None] * len(xs)
    for t in reversed(range(len(xs))) if reverse else range(len(xs)):
        if kind == "lstm":
            h, c = lstm_step_np(p, h, c, xs[t])
        else:
            h = gru_step_np(p, h, xs[t])
        ys[t] = h
    return np.stack(ys), ((h, c) if kind == "lstm" else h)


@pytest.mark.parametrize("kind", sorted(CELLS))
def test_cell_step_matches_pytorch_equations(kind):
    cell = CELLS[kind]
    params = cell.init(random.key(1))
    p = _np_params(params)
    x = _xs(0, 5, 3)
    carry = cell.initial_carry((5,), F64)
    if kind == "lstm":
        carry = (fnp.asarray(_xs(2, 5, 4)), fnp.asarray(_xs(3, 5, 4)))
        (h, c), y = cell.apply(params, carry, fnp.asarray(x))
        h_np, c_np = lstm_step_np(p, np.asarray(carry[0]), np.asarray(carry[1]), x)
        np.testing.assert_allclose(np.asarray(c), c_np, rtol=1e-12, atol=1e-12)
    else:
        carry = fnp.asarray(_xs(2, 5, 4))
        h, y = cell.apply(params, carry, fnp.asarray(x))
        h_np = gru_step_np(p, np.asarray(carry), x)
    np.testing.assert_allclose(np.asarray(h), h_np, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(h))


def test_cell_init_shapes_range_and_forget_bias():
    cell = nn.LSTMCell(3, 16, forget_bias=1.0)
    p = cell.init(random.key(0))
    assert p.input_kernel.shape == (3, 64) and p.hidden_kernel.shape == (16, 64)
    assert p.input_kernel.dtype == np.float32
    # PyTorch's default: U(-1/sqrt(hidden), 1/sqrt(hidden)) everywhere.
    bound = 1 / np.sqrt(16)
    for w in (p.input_kernel, p.hidden_kernel):
        assert np.abs(np.asarray(w)).max() <= bound
    bias = np.asarray(p.bias)
    np.testing.assert_array_equal(bias[16:32], 1.0)  # the forget gate's block
    assert np.abs(bias[:16]).max() <= bound and np.abs(bias[32:]).max() <= bound
    assert nn.LSTMCell(3, 4, use_bias=False).init(random.key(0)).bias is None
    g = nn.GRUCell(3, 4, use_bias=False).init(random.key(0))
    assert g.input_bias is None and g.hidden_bias is None and g.hidden_kernel.shape == (4, 12)


@pytest.mark.parametrize("kind", sorted(CELLS))
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_rnn_matches_the_step_loop(kind, time_major, reverse):
    cell = CELLS[kind]
    rnn = nn.RNN(cell, time_major=time_major, reverse=reverse)
    params = rnn.init(random.key(2))
    xs = _xs(4, 6, 2, 3)  # (seq, batch, in)
    ys_np, carry_np = _run_np(kind, _np_params(params), xs, reverse)
    x = xs if time_major else np.swapaxes(xs, 0, 1)
    ys, carry = rnn.apply(params, fnp.asarray(x))
    want = ys_np if time_major else np.swapaxes(ys_np, 0, 1)
    np.testing.assert_allclose(np.asarray(ys), want, rtol=1e-12, atol=1e-12)
    for got, ref in zip(tree.leaves(carry), tree.leaves(carry_np)):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)
    # jit gives the same values.
    ys_j, carry_j = fgrad.jit(rnn.apply)(params, fnp.asarray(x))
    np.testing.assert_allclose(np.asarray(ys_j), want, rtol=1e-12, atol=1e-12)


def test_rnn_initial_carry_and_unbatched_sequence():
    rnn = nn.RNN(CELLS["lstm"])
    params = rnn.init(random.key(3))
    p = _np_params(params)
    xs = _xs(5, 4, 3)  # one sequence (seq, in)
    h0, c0 = _xs(6, 4), _xs(7, 4)
    carry = (fnp.asarray(h0), fnp.asarray(c0))
    ys, (h, c) = rnn.apply(params, fnp.asarray(xs), initial_carry=carry)
    hn, cn = h0, c0
    for t in range(4):
        hn, cn = lstm_step_np(p, hn, cn, xs[t])
    np.testing.assert_allclose(np.asarray(h), hn, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ys[-1]), hn, rtol=1e-12)
    assert ys.shape == (4, 4)


@pytest.mark.parametrize("kind", sorted(CELLS))
def test_rnn_grads_against_finite_differences(kind):
    rnn = nn.RNN(CELLS[kind])
    params = rnn.init(random.key(4))
    x = fnp.asarray(_xs(8, 2, 3, 3))

    def loss(params, x):
        ys, carry = rnn.apply(params, x)
        return fnp.sum(ys**2) + fnp.sum(tree.leaves(carry)[0])

    check_grads(loss, (params, x), order=1, modes=("rev", "fwd"))
    # grad of jit equals eager grad.
    g = fgrad.grad(loss)(params, x)
    gj = fgrad.grad(fgrad.jit(loss))(params, x)
    for a, b in zip(tree.leaves(g), tree.leaves(gj)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def test_vmap_over_sequences_equals_the_batched_rnn():
    rnn = nn.RNN(CELLS["gru"])
    params = rnn.init(random.key(5))
    x = fnp.asarray(_xs(9, 3, 5, 3))  # (batch, seq, in)
    ys, h = rnn.apply(params, x)
    ys_v, h_v = fgrad.vmap(lambda s: rnn.apply(params, s))(x)
    np.testing.assert_allclose(np.asarray(ys_v), np.asarray(ys), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(h_v), np.asarray(h), rtol=1e-12)
    # Per-example gradients (vmap of grad) against a loop of grads.
    loss = lambda p, s: fnp.sum(rnn.apply(p, s)[0])  # noqa: E731
    per = fgrad.jit(fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0)))(params, x)
    for i in range(3):
        one = fgrad.grad(loss)(params, x[i])
        for a, b in zip(tree.leaves(per), tree.leaves(one)):
            np.testing.assert_allclose(np.asarray(a)[i], np.asarray(b), rtol=1e-10, atol=1e-12)


def test_float32_stays_float32():
    rnn = nn.RNN(nn.LSTMCell(3, 4))
    params = rnn.init(random.key(0))
    ys, (h, c) = rnn.apply(params, fnp.ones((2, 5, 3), dtype="float32"))
    assert ys.dtype == h.dtype == c.dtype == np.float32


def test_errors_name_the_layer():
    with pytest.raises(DTypeError, match="LSTMCell"):
        nn.LSTMCell(2.5, 3)
    with pytest.raises(ValueError, match="GRUCell"):
        nn.GRUCell(3, 0)
    with pytest.raises(TypeError, match="RNN: cell must have"):
        nn.RNN(nn.Linear(2, 3))
    rnn = nn.RNN(nn.LSTMCell(3, 4))
    params = rnn.init(random.key(0))
    with pytest.raises(ShapeError, match=r"RNN.apply: x must be \(\.\.\., in_features\)"):
        rnn.apply(params, fnp.ones((2, 5, 2)))
    with pytest.raises(ShapeError, match="RNN.apply"):
        rnn.apply(params, fnp.ones((5, 3, 2, 3)))
    with pytest.raises(DTypeError, match="must be floating"):
        rnn.apply(params, fnp.ones((2, 5, 3), dtype="int64"))
    with pytest.raises(TypeError, match="params must be LSTMCellParams"):
        rnn.apply(nn.GRUCell(3, 4).init(random.key(0)), fnp.ones((2, 5, 3)))
