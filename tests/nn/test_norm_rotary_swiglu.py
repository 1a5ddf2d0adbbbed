"""GroupNorm, BatchNorm (running statistics in and out), RotaryEmbedding and SwiGLU against
hand-written numpy forwards, float64 finite differences, jit, vmap and grad of jit."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random, tree
from fgrad.errors import DTypeError, ShapeError
from fgrad.test_util import check_grads


def _rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def group_norm_np(x, groups, scale, bias, eps):
    """PyTorch's group_norm: each (example, group) standardised with the biased variance."""
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return g.reshape(x.shape) * scale.reshape(shape) + bias.reshape(shape)


@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 4), 3), ((3, 4, 5), 1), ((2, 4), 4)])
def test_group_norm_matches_numpy(shape, groups):
    x, s, b = _rand(0, *shape), _rand(1, shape[1]), _rand(2, shape[1])
    got = nn.group_norm(fnp.asarray(x), groups, fnp.asarray(s), fnp.asarray(b), eps=1e-3)
    want = group_norm_np(x, groups, s, b, 1e-3)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    layer = nn.GroupNorm(groups, shape[1], eps=1e-3, param_dtype="float64")
    params = nn.GroupNormParams(bias=fnp.asarray(b), scale=fnp.asarray(s))
    np.testing.assert_allclose(
        np.asarray(fgrad.jit(layer.apply)(params, fnp.asarray(x))),
        group_norm_np(x, groups, s, b, 1e-3), rtol=1e-12, atol=1e-12,
    )


def test_group_norm_grads_vmap_and_jit():
    x, s, b = fnp.asarray(_rand(3, 2, 4, 3)), fnp.asarray(_rand(4, 4)), fnp.asarray(_rand(5, 4))
    f = lambda x, s, b: nn.group_norm(x, 2, s, b)  # noqa: E731
    check_grads(f, (x, s, b), order=2, modes=("rev", "fwd"))
    loss = lambda x, s, b: fnp.sum(f(x, s, b) ** 3)  # noqa: E731
    for a, c in zip(fgrad.grad(loss, argnums=(0, 1, 2))(x, s, b),
                    fgrad.grad(fgrad.jit(loss), argnums=(0, 1, 2))(x, s, b)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-10, atol=1e-12)
    per = fgrad.vmap(lambda xi: f(xi[None], s, b)[0])(x)
    np.testing.assert_allclose(np.asarray(per), np.asarray(f(x, s, b)), rtol=1e-12, atol=1e-12)


def batch_norm_np(x, mean, var, scale, bias, train, momentum, eps, axis):
    """PyTorch's BatchNorm: batch statistics (biased) in training, running ones otherwise;
    the running variance moves towards the unbiased batch variance."""
    axis %= x.ndim
    axes = tuple(a for a in range(x.ndim) if a != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    if train:
        m, v = x.mean(axes), x.var(axes)
        n = x.size // x.shape[axis]
        unbiased = v * n / (n - 1)
        new = ((1 - momentum) * mean + momentum * m, (1 - momentum) * var + momentum * unbiased)
    else:
        m, v, new = mean, var, (mean, var)
    y = (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps)
    return y * scale.reshape(shape) + bias.reshape(shape), new


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("shape,axis", [((4, 3, 2, 2), 1), ((5, 3), 1), ((2, 3, 3), -1)])
def test_batch_norm_matches_pytorch_formulas(train, shape, axis):
    x = _rand(6, *shape) * 2 + 1
    c = shape[axis]
    mean, var, s, b = _rand(7, c), np.abs(_rand(8, c)) + 0.5, _rand(9, c), _rand(10, c)
    want, (m_want, v_want) = batch_norm_np(x, mean, var, s, b, train, 0.2, 1e-4, axis)
    bn = nn.BatchNorm(c, momentum=0.2, eps=1e-4, axis=axis, param_dtype="float64")
    params = nn.BatchNormParams(bias=fnp.asarray(b), scale=fnp.asarray(s))
    state = nn.BatchNormState(mean=fnp.asarray(mean), var=fnp.asarray(var))
    for apply in (bn.apply, fgrad.jit(bn.apply, static_argnames="train")):
        y, new = apply(params, state, fnp.asarray(x), train=train)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(new.mean), m_want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(new.var), v_want, rtol=1e-12, atol=1e-12)


def test_batch_norm_training_step_state_dtype_and_grads():
    bn = nn.BatchNorm(3)
    params, state = bn.init(random.key(0)), bn.init_state()
    x = fnp.asarray(_rand(11, 6, 3, 2), dtype="float32")

    def loss(params, state, x):
        y, state = bn.apply(params, state, x, train=True)
        return fnp.sum(y**2 * fnp.arange(3.0, dtype="float32")[:, None]), state

    (value, new), grads = fgrad.jit(fgrad.value_and_grad(loss, has_aux=True))(params, state, x)
    assert new.mean.dtype == new.var.dtype == np.float32  # the state keeps its dtype
    assert tree.structure(grads) == tree.structure(params)
    zeros, ones = np.zeros(3), np.ones(3)
    _, (m_want, v_want) = batch_norm_np(
        np.asarray(x, np.float64), zeros, ones, ones, zeros, True, 0.1, 1e-5, 1
    )
    np.testing.assert_allclose(np.asarray(new.mean), m_want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(new.var), v_want, rtol=1e-5)
    # float64 finite differences of the training forward (the state is not differentiated).
    x64 = fnp.asarray(_rand(12, 4, 3))
    s64, b64 = fnp.asarray(_rand(13, 3)), fnp.asarray(_rand(14, 3))
    st64 = nn.BatchNormState(mean=fnp.zeros(3), var=fnp.ones(3))
    check_grads(lambda x, s, b: nn.batch_norm(x, st64, s, b, train=True)[0], (x64, s64, b64),
                order=2, modes=("rev", "fwd"))
    check_grads(lambda x, s, b: nn.batch_norm(x, st64, s, b)[0], (x64, s64, b64), order=1)


def test_batch_norm_errors():
    bn = nn.BatchNorm(3)
    params, state = bn.init(None), bn.init_state()
    with pytest.raises(ValueError, match="more than one value per feature"):
        bn.apply(params, state, fnp.ones((1, 3)), train=True)
    with pytest.raises(TypeError, match="state must be a BatchNormState"):
        bn.apply(params, {"mean": 0}, fnp.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"state.mean must have shape \(4,\)"):
        nn.batch_norm(fnp.ones((2, 4)), state)
    with pytest.raises(ValueError, match="BatchNorm: momentum"):
        nn.BatchNorm(3, momentum=1.5)
    with pytest.raises(DTypeError, match="batch_norm: x must be real floating"):
        nn.batch_norm(fnp.ones((2, 3), dtype="int64"), state)
    with pytest.raises(ValueError, match="group_norm: num_groups=4 must divide"):
        nn.group_norm(fnp.ones((2, 6, 3)), 4)
    with pytest.raises(ValueError, match="GroupNorm: num_groups=4 must divide"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ShapeError, match="GroupNorm.apply: x .* has 5 channels"):
        nn.GroupNorm(2, 4).apply(nn.GroupNorm(2, 4).init(None), fnp.ones((2, 5, 3)))


def rope_np(x, positions, d_rot, base):
    """RoFormer's rotation of the halves (i, i + d_rot/2) by angle p * base**(-2i/d_rot)."""
    half = d_rot // 2
    ang = np.asarray(positions, np.float64)[..., None] * base ** (-np.arange(half) * 2.0 / d_rot)
    a, b = x[..., :half], x[..., half:d_rot]
    cos, sin = np.cos(ang), np.sin(ang)
    return np.concatenate([a * cos - b * sin, a * sin + b * cos, x[..., d_rot:]], -1)


def test_rotary_embedding_layer():
    x = _rand(15, 2, 3, 5, 6)  # (batch, heads, seq, d_head)
    rope = nn.RotaryEmbedding(4, base=100.0)
    assert rope.init(random.key(0)) == ()
    got = rope.apply((), fnp.asarray(x))
    want = rope_np(x, np.arange(5), 4, 100.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    # Per-example offsets, (batch, 1, seq), traced under jit.
    pos = np.arange(5)[None, None, :] + np.array([3, 7])[:, None, None]
    got = fgrad.jit(lambda x, p: rope.apply((), x, positions=p))(fnp.asarray(x), fnp.asarray(pos))
    np.testing.assert_allclose(np.asarray(got), rope_np(x, pos, 4, 100.0), rtol=1e-12, atol=1e-12)
    # Given positions 0..seq-1 give the tables' result, float32 included.
    x32 = fnp.asarray(x, dtype="float32")
    a = rope.apply((), x32)
    b = rope.apply((), x32, positions=fnp.arange(5))
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    check_grads(lambda x: rope.apply((), x), (fnp.asarray(x),), order=1, modes=("rev", "fwd"))
    with pytest.raises(DTypeError, match="positions must be an integer Tensor"):
        rope.apply((), x32, positions=fnp.arange(5.0))
    with pytest.raises(ValueError, match="RotaryEmbedding: d_rot must be even"):
        nn.RotaryEmbedding(3)


def test_swiglu_matches_shazeer_formula():
    mlp = nn.SwiGLU(4, 6, param_dtype="float64")
    params = mlp.init(random.key(1))
    assert params.gate.bias is None and params.down.weight.shape == (6, 4)
    x = _rand(16, 2, 3, 4)
    wg, wu, wd = (np.asarray(p.weight) for p in (params.gate, params.up, params.down))
    xg = x @ wg
    want = (xg / (1 + np.exp(-xg)) * (x @ wu)) @ wd  # (Swish_1(x W) * x V) W_2
    np.testing.assert_allclose(np.asarray(mlp.apply(params, fnp.asarray(x))), want, rtol=1e-12)
    check_grads(mlp.apply, (params, fnp.asarray(x)), order=2, modes=("rev", "fwd"))
    loss = lambda p, x: fnp.sum(mlp.apply(p, x) ** 2)  # noqa: E731
    for a, b in zip(tree.leaves(fgrad.grad(loss)(params, fnp.asarray(x))),
                    tree.leaves(fgrad.grad(fgrad.jit(loss))(params, fnp.asarray(x)))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    per = fgrad.vmap(lambda xi: mlp.apply(params, xi))(fnp.asarray(x))
    np.testing.assert_allclose(np.asarray(per), want, rtol=1e-12)
    with_bias = nn.SwiGLU(4, 6, use_bias=True).init(random.key(0))
    assert with_bias.up.bias.shape == (6,)
