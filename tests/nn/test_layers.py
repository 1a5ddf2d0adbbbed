"""fgrad.nn layers, attention and initialisers: closed forms, shapes, dtypes, gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random, tree
from fgrad.errors import DTypeError, ShapeError
from fgrad.nn import attention
from fgrad.nn import initializers as init
from fgrad.test_util import check_grads

F64 = np.float64


def _np(x):
    return np.asarray(x)


def _rand(seed, *shape):
    return fnp.array(np.random.default_rng(seed).standard_normal(shape))


def conv_reference(x, w, stride, padding, groups):
    """Each output pixel as an explicit window-times-filter sum (PyTorch's conv2d definition)."""
    (pt, pb), (pl, pr) = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, _, h, wd = xp.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride[0] + 1, (wd - kw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                win = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride[0] : i * stride[0] + kh,
                    j * stride[1] : j * stride[1] + kw,
                ]
                out[:, oc, i, j] = np.sum(win * w[oc], axis=(1, 2, 3))
    return out


def _params_f64(params, seed=0):
    """Random float64 parameters with the structure of ``params`` (so biases are non-zero)."""
    rng = np.random.default_rng(seed)
    return tree.map(lambda p: fnp.array(0.5 * rng.standard_normal(p.shape)), params)


# ------------------------------------------------------------------------ initialisers


@pytest.mark.parametrize(
    "factory,shape,kwargs,var",
    [
        # Glorot & Bengio 2010 eq. 16: U[-a, a], a = sqrt(6 / (fan_in + fan_out)): var 2/(in+out)
        (init.glorot_uniform, (300, 200), {}, 2 / 500),
        (init.glorot_normal, (300, 200), {}, 2 / 500),
        # He et al. 2015 eq. 10: var 2 / fan_in
        (init.he_uniform, (300, 200), {}, 2 / 300),
        (init.he_normal, (300, 200), {}, 2 / 300),
        (init.lecun_normal, (300, 200), {}, 1 / 300),
        # OIHW filters: fan_in = in_channels * kh * kw = 16 * 9
        (init.he_normal, (64, 16, 3, 3), {"in_axis": 1, "out_axis": 0}, 2 / 144),
    ],
)
def test_variance_scaling_variances(factory, shape, kwargs, var):
    w = factory(**kwargs)(random.key(0), shape)
    assert w.shape == shape and w.dtype == np.float32
    assert float(np.var(_np(w))) == pytest.approx(var, rel=0.05)
    assert abs(float(np.mean(_np(w)))) < 0.05 * math.sqrt(var) * 10


def test_uniform_initialisers_respect_their_bounds():
    w = _np(init.glorot_uniform()(random.key(1), (30, 20), F64))
    assert w.dtype == F64 and np.abs(w).max() <= math.sqrt(6 / 50)
    w = _np(init.he_uniform()(random.key(1), (30, 20)))
    assert np.abs(w).max() <= math.sqrt(6 / 30)
    w = _np(init.truncated_normal(2.0)(random.key(1), (1000,)))
    assert np.abs(w).max() <= 4.0


def test_simple_initialisers():
    key = random.key(0)
    np.testing.assert_array_equal(_np(init.zeros(key, (2, 3))), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(_np(init.ones(key, 3, F64)), np.ones(3))
    np.testing.assert_array_equal(_np(init.constant(0.5)(key, (2,))), [0.5, 0.5])
    w = _np(init.normal(0.02)(key, (4000,)))
    assert float(w.std()) == pytest.approx(0.02, rel=0.05)
    # same key -> same numbers; another key -> different numbers
    np.testing.assert_array_equal(w, _np(init.normal(0.02)(random.key(0), (4000,))))
    assert not np.array_equal(w, _np(init.normal(0.02)(random.key(1), (4000,))))
    assert init.kaiming_normal is init.he_normal and init.xavier_uniform is init.glorot_uniform
    # a factory called with a key uses its defaults: glorot_uniform(key, shape) == glorot_uniform()(key, shape)
    np.testing.assert_array_equal(
        _np(init.glorot_uniform(key, (3, 4))), _np(init.glorot_uniform()(key, (3, 4)))
    )
    np.testing.assert_array_equal(
        _np(init.normal(key, (3,), F64)), _np(init.normal()(key, (3,), F64))
    )


def test_initialiser_errors():
    with pytest.raises(ShapeError, match="at least 2"):
        init.glorot_uniform()(random.key(0), (5,))
    with pytest.raises(DTypeError):
        init.normal()(random.key(0), (5,), np.int32)
    with pytest.raises(ValueError, match="mode"):
        init.variance_scaling(1.0, "fan_sideways", "normal")


# ------------------------------------------------------------------------ Linear, MLP


def test_linear_matches_numpy_and_dtypes():
    layer = nn.Linear(3, 2)
    params = layer.init(random.key(0))
    assert params.weight.shape == (3, 2) and params.weight.dtype == np.float32
    np.testing.assert_array_equal(_np(params.bias), np.zeros(2, np.float32))
    x = fnp.array(np.arange(12.0).reshape(4, 3), dtype="float32")
    y = layer.apply(params, x)
    assert y.shape == (4, 2) and y.dtype == np.float32
    np.testing.assert_allclose(_np(y), _np(x) @ _np(params.weight), rtol=1e-6)
    assert nn.Linear(3, 2, use_bias=False).init(random.key(0)).bias is None
    # batch axes of any rank
    assert layer.apply(params, fnp.ones((2, 5, 3), dtype="float32")).shape == (2, 5, 2)


def test_linear_grads():
    layer = nn.Linear(3, 2, param_dtype=F64)
    params = _params_f64(layer.init(random.key(0)))
    check_grads(
        lambda p, x: layer.apply(p, x), (params, _rand(1, 4, 3)), order=2, modes=("rev", "fwd")
    )


def test_linear_float32_grads_are_float32():
    layer = nn.Linear(3, 2)
    params = layer.init(random.key(0))
    x = fnp.ones((4, 3), dtype="float32")
    grads = fgrad.grad(lambda p: fnp.sum(layer.apply(p, x) ** 2))(params)
    assert all(g.dtype == np.float32 for g in tree.leaves(grads))


def test_apply_with_wrong_params_names_the_layer():
    with pytest.raises(TypeError, match=r"Linear.apply: params must be LinearParams .*Linear.init"):
        nn.Linear(3, 2).apply({"w": fnp.ones((3, 2))}, fnp.ones((1, 3)))


def test_mlp_shapes_and_grads():
    mlp = nn.MLP((64, 256, 256, 10))
    params = mlp.init(random.key(0))
    assert [p.weight.shape for p in params] == [(64, 256), (256, 256), (256, 10)]
    assert mlp.apply(params, fnp.ones((5, 64), dtype="float32")).shape == (5, 10)
    small = nn.MLP([3, 4, 2], activation=fnp.tanh, param_dtype=F64)
    p = _params_f64(small.init(random.key(1)))
    check_grads(lambda p, x: small.apply(p, x), (p, _rand(2, 5, 3)), order=2, modes=("rev", "fwd"))
    with pytest.raises(ValueError, match="sizes"):
        nn.MLP((3,))


def test_mlp_relu_grads_off_the_kinks():
    mlp = nn.MLP((3, 6, 2), param_dtype=F64)
    p = _params_f64(mlp.init(random.key(1)), seed=3)
    check_grads(lambda p: mlp.apply(p, _rand(4, 5, 3)), (p,), order=1, modes=("rev", "fwd"))


# ------------------------------------------------------------------------ convolution layers


def test_conv2d_layer_matches_functional_and_bias():
    conv = nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=1, dilation=1, groups=2)
    params = conv.init(random.key(0))
    assert params.weight.shape == (4, 1, 3, 2) and params.weight.dtype == np.float32
    params = _params_f64(params)
    x = _rand(1, 2, 2, 7, 6)
    y = conv.apply(params, x)
    want = conv_reference(_np(x), _np(params.weight), (2, 1), ((1, 1), (1, 1)), 2)
    want = want + _np(params.bias).reshape(1, -1, 1, 1)
    np.testing.assert_allclose(_np(y), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "size,k,stride,dil", [(8, 3, 1, 1), (8, 3, 2, 1), (7, 4, 2, 1), (9, 3, 3, 2), (5, 2, 1, 2)]
)
def test_conv2d_same_padding_gives_ceil_size(size, k, stride, dil):
    y = nn.conv2d(
        fnp.ones((1, 1, size, size)),
        fnp.ones((1, 1, k, k)),
        stride=stride,
        padding="SAME",
        dilation=dil,
    )
    assert y.shape == (1, 1, -(-size // stride), -(-size // stride))
    y = nn.conv2d(
        fnp.ones((1, 1, size, size)),
        fnp.ones((1, 1, k, k)),
        stride=stride,
        padding="valid",
        dilation=dil,
    )
    assert y.shape[2] == (size - dil * (k - 1) - 1) // stride + 1


def test_conv2d_same_puts_the_odd_pixel_at_the_end():
    # TensorFlow/JAX SAME, k=2 stride 1: pad 0 before, 1 after
    x = fnp.reshape(fnp.arange(3.0), (1, 1, 1, 3))
    y = nn.conv2d(x, fnp.ones((1, 1, 1, 2)), padding="SAME")
    np.testing.assert_array_equal(_np(y), [[[[1.0, 3.0, 2.0]]]])


def test_conv2d_layer_grads():
    conv = nn.Conv2d(2, 3, 3, padding="SAME", param_dtype=F64)
    params = _params_f64(conv.init(random.key(0)))
    check_grads(
        lambda p, x: conv.apply(p, x), (params, _rand(1, 2, 2, 5, 4)), order=2, modes=("rev", "fwd")
    )


def test_conv2d_layer_errors():
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding"):
        nn.conv2d(fnp.ones((1, 1, 4, 4)), fnp.ones((1, 1, 3, 3)), padding="full")
    with pytest.raises(ShapeError, match="4-D"):
        nn.conv2d(fnp.ones((1, 4, 4)), fnp.ones((1, 1, 3, 3)))


def test_pool_layers_shapes_and_grads():
    x = fnp.array(
        (np.random.default_rng(0).permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) - 100) * 0.1
    )
    for pool in (
        nn.MaxPool2d(2),
        nn.MaxPool2d(3, 1, 1),
        nn.AvgPool2d(2),
        nn.AvgPool2d(3, 2, "SAME", count_include_pad=False),
    ):
        params = pool.init(None)
        assert params == ()
        y = pool.apply(params, x)
        assert y.dtype == x.dtype
        check_grads(lambda x, pool=pool: pool.apply((), x), (x,), order=2, modes=("rev", "fwd"))
    assert nn.MaxPool2d(2).apply((), x).shape == (2, 3, 3, 3)
    assert nn.MaxPool2d(3, 1, 1).apply((), x).shape == (2, 3, 6, 6)
    assert nn.AvgPool2d(3, 2, "SAME").apply((), x).shape == (2, 3, 3, 3)
    np.testing.assert_allclose(
        _np(nn.avg_pool2d(x, 2)), _np(x).reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5))
    )
    np.testing.assert_allclose(
        _np(nn.max_pool2d(x, 2)), _np(x).reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    )


def test_flatten():
    assert nn.Flatten().apply((), fnp.ones((2, 3, 4, 5))).shape == (2, 60)
    check_grads(
        lambda x: nn.Flatten().apply((), x), (_rand(0, 2, 3, 2),), order=2, modes=("rev", "fwd")
    )
    assert nn.Flatten(2).apply((), fnp.ones((2, 3, 4, 5))).shape == (2, 3, 20)


# ------------------------------------------------------------------------ Embedding


def test_embedding_lookup_and_grads():
    emb = nn.Embedding(6, 4)
    params = emb.init(random.key(0))
    assert params.embedding.shape == (6, 4) and params.embedding.dtype == np.float32
    ids = fnp.array([[1, 5, 1], [0, 0, 2]])
    y = emb.apply(params, ids)
    assert y.shape == (2, 3, 4) and y.dtype == np.float32
    np.testing.assert_array_equal(_np(y), _np(params.embedding)[_np(ids)])
    np.testing.assert_array_equal(_np(emb.apply(params, [[1, 5, 1], [0, 0, 2]])), _np(y))
    # repeated ids accumulate their cotangents into one row
    g = fgrad.grad(lambda p: fnp.sum(emb.apply(p, ids)))(params).embedding
    np.testing.assert_array_equal(_np(g)[:, 0], [2, 2, 1, 0, 0, 1])
    p64 = _params_f64(params)
    check_grads(lambda p: emb.apply(p, ids), (p64,), order=2, modes=("rev", "fwd"))
    check_grads(lambda p, x: emb.attend(p, x), (p64, _rand(1, 3, 4)), order=2, modes=("rev", "fwd"))
    with pytest.raises(DTypeError, match="integer"):
        emb.apply(params, fnp.array([1.0]))


# ------------------------------------------------------------------------ normalisation


def test_layer_norm_closed_form():
    x = _rand(0, 3, 5) * 3.0 + 2.0
    ln = nn.LayerNorm(5, eps=1e-5, param_dtype=F64)
    params = ln.init(None)
    y = _np(ln.apply(params, x))
    xn = _np(x)
    want = (xn - xn.mean(-1, keepdims=True)) / np.sqrt(
        xn.var(-1, keepdims=True) + 1e-5
    )  # Ba et al. eq. 4
    np.testing.assert_allclose(y, want, rtol=1e-12)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1, rtol=1e-4)
    p = _params_f64(params)
    np.testing.assert_allclose(
        _np(ln.apply(p, x)), want * _np(p.scale) + _np(p.bias), rtol=1e-12
    )
    check_grads(lambda p, x: ln.apply(p, x), (p, x), order=2, modes=("rev", "fwd"))


def test_rms_norm_closed_form():
    x = _rand(1, 3, 5)
    norm = nn.RMSNorm(5, eps=1e-6, param_dtype=F64)
    p = _params_f64(norm.init(None))
    xn = _np(x)
    want = (
        xn / np.sqrt((xn**2).mean(-1, keepdims=True) + 1e-6) * _np(p.scale)
    )  # Zhang & Sennrich eq. 4
    np.testing.assert_allclose(_np(norm.apply(p, x)), want, rtol=1e-12)
    # unit scale: the root mean square of the output is 1 (up to eps)
    y1 = _np(norm.apply(norm.init(None), x))
    np.testing.assert_allclose(np.sqrt((y1**2).mean(-1)), 1, rtol=1e-5)
    check_grads(lambda p, x: norm.apply(p, x), (p, x), order=2, modes=("rev", "fwd"))


def test_norm_params_dtype():
    assert nn.LayerNorm(4).init(None).scale.dtype == np.float32
    y = nn.LayerNorm(4).apply(nn.LayerNorm(4).init(None), fnp.ones((2, 4), dtype="float32"))
    assert y.dtype == np.float32


# ------------------------------------------------------------------------ Dropout


def test_dropout_eval_is_identity():
    x = _rand(0, 10)
    drop = nn.Dropout(0.3)
    assert drop.apply((), x) is x
    assert drop.apply((), x, key=random.key(0), train=False) is x


def test_dropout_train_scales_kept_units():
    x = fnp.ones(20000)
    rate = 0.25
    y = _np(nn.Dropout(rate).apply((), x, key=random.key(0), train=True))
    assert set(np.unique(y).tolist()) == {
        0.0,
        1 / (1 - rate),
    }  # inverted dropout, Srivastava et al.
    assert (y == 0).mean() == pytest.approx(rate, abs=0.01)
    assert y.mean() == pytest.approx(1.0, abs=0.02)  # expectation preserved
    # same key -> same mask; gradient is the mask over (1 - rate)
    y2 = _np(nn.Dropout(rate).apply((), x, key=random.key(0), train=True))
    np.testing.assert_array_equal(y, y2)
    g = fgrad.grad(lambda x: fnp.sum(nn.Dropout(rate).apply((), x, key=random.key(0), train=True)))(
        x
    )
    np.testing.assert_array_equal(_np(g), y)


def test_dropout_with_a_traced_rate_names_dropout_and_rate():
    step = fgrad.jit(lambda x, key, rate: nn.dropout(x, rate, key=key))
    with pytest.raises(fgrad.errors.ConcretizationError, match="dropout: rate is a traced value"):
        step(fnp.ones(4), random.key(0), 0.5)
    static = fgrad.jit(lambda x, key, rate: nn.dropout(x, rate, key=key), static_argnums=2)
    np.testing.assert_array_equal(
        _np(static(fnp.ones(4), random.key(0), 0.5)),
        _np(nn.dropout(fnp.ones(4), 0.5, key=random.key(0))),
    )


def test_dropout_check_grads():
    drop = nn.Dropout(0.4)
    check_grads(
        lambda x: drop.apply((), x, key=random.key(3), train=True),
        (_rand(0, 3, 4),),
        order=2,
        modes=("rev", "fwd"),
    )


def test_dropout_edge_cases_and_errors():
    x = _rand(0, 5)
    np.testing.assert_array_equal(
        _np(nn.Dropout(1.0).apply((), x, key=random.key(0), train=True)), np.zeros(5)
    )
    assert nn.Dropout(0.0).apply((), x, train=True) is x
    with pytest.raises(ValueError, match="key"):
        nn.Dropout(0.5).apply((), x, train=True)
    with pytest.raises(ValueError, match="rate"):
        nn.Dropout(1.5)
    f32 = fnp.ones(4, dtype="float32")
    assert nn.Dropout(0.5).apply((), f32, key=random.key(0), train=True).dtype == np.float32


# ------------------------------------------------------------------------ Sequential


def test_sequential_cnn_shapes_grads_and_keys():
    cnn = nn.Sequential(
        [
            nn.Conv2d(1, 4, 3, padding=1),
            nn.relu,
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Dropout(0.5),
            nn.Linear(4 * 4 * 4, 3),
        ]
    )
    params = cnn.init(random.key(0))
    assert isinstance(params, tuple) and len(params) == 6 and params[1] == ()
    x = fnp.ones((2, 1, 8, 8), dtype="float32")
    assert cnn.apply(params, x).shape == (2, 3)
    # dropout in train mode needs and uses the key; different keys give different outputs
    a = cnn.apply(params, x, key=random.key(1), train=True)
    b = cnn.apply(params, x, key=random.key(2), train=True)
    assert not np.allclose(_np(a), _np(b))
    grads = fgrad.grad(lambda p: fnp.sum(cnn.apply(p, x)))(params)
    assert tree.structure(grads) == tree.structure(params)
    assert all(g.dtype == np.float32 for g in tree.leaves(grads))
    with pytest.raises(ValueError, match="one entry per layer"):
        cnn.apply(params[:-1], x)


def test_sequential_check_grads():
    model = nn.Sequential(
        [
            nn.Linear(3, 4, param_dtype=F64),
            fnp.tanh,
            nn.LayerNorm(4, param_dtype=F64),
            nn.Linear(4, 2, param_dtype=F64),
        ]
    )
    p = _params_f64(model.init(random.key(0)))
    check_grads(lambda p, x: model.apply(p, x), (p, _rand(1, 5, 3)), order=2, modes=("rev", "fwd"))


# ------------------------------------------------------------------------ attention


def _mha_reference(params, x, n_heads, mask=None):
    """Vaswani et al. 2017 eq. 1 and section 3.2.2, in numpy."""
    x = _np(x)
    b, s, d = x.shape
    dh = d // n_heads
    qkv = x @ _np(params.qkv.weight) + _np(params.qkv.bias)
    q, k, v = (
        qkv[..., i * d : (i + 1) * d].reshape(b, s, n_heads, dh).transpose(0, 2, 1, 3)
        for i in range(3)
    )
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    return out @ _np(params.out.weight) + _np(params.out.bias)


def test_mha_matches_reference():
    mha = nn.MultiHeadAttention(8, 2, param_dtype=F64)
    p = _params_f64(mha.init(random.key(0)))
    x = _rand(1, 2, 5, 8)
    np.testing.assert_allclose(
        _np(mha.apply(p, x)), _mha_reference(p, x, 2), rtol=1e-10, atol=1e-12
    )
    causal = nn.MultiHeadAttention(8, 2, causal=True, param_dtype=F64)
    want = _mha_reference(p, x, 2, np.tril(np.ones((5, 5), bool)))
    np.testing.assert_allclose(_np(causal.apply(p, x)), want, rtol=1e-10, atol=1e-12)


def test_mha_causal_output_independent_of_the_future():
    mha = nn.MultiHeadAttention(8, 2, causal=True, param_dtype=F64)
    p = _params_f64(mha.init(random.key(0)))
    x = _np(_rand(1, 2, 6, 8))
    y = _np(mha.apply(p, fnp.array(x)))
    for t in range(5):
        x2 = x.copy()
        x2[:, t + 1 :] = np.random.default_rng(t).standard_normal(x2[:, t + 1 :].shape) * 10
        y2 = _np(mha.apply(p, fnp.array(x2)))
        np.testing.assert_allclose(y2[:, : t + 1], y[:, : t + 1], rtol=1e-12, atol=1e-12)
        assert not np.allclose(y2[:, t + 1 :], y[:, t + 1 :])
    # and the Jacobian of output t w.r.t. inputs after t is exactly zero
    t = 2
    g = fgrad.grad(lambda x: fnp.sum(mha.apply(p, x)[:, t]))(fnp.array(x))
    assert np.all(_np(g)[:, t + 1 :] == 0) and np.any(_np(g)[:, : t + 1] != 0)


def test_mha_padding_mask():
    mha = nn.MultiHeadAttention(8, 2, param_dtype=F64)
    p = _params_f64(mha.init(random.key(0)))
    x = _np(_rand(1, 2, 5, 8))
    valid = np.array([[True] * 5, [True, True, True, False, False]])
    mask = attention.padding_mask(fnp.array(valid))
    assert mask.shape == (2, 1, 1, 5)
    y = _np(mha.apply(p, fnp.array(x), mask=mask))
    np.testing.assert_allclose(
        y, _mha_reference(p, x, 2, valid[:, None, None, :]), rtol=1e-10, atol=1e-12
    )
    x2 = x.copy()
    x2[1, 3:] = 100.0  # padded tokens change; the real tokens' outputs must not
    y2 = _np(mha.apply(p, fnp.array(x2), mask=mask))
    np.testing.assert_allclose(y2[1, :3], y[1, :3], rtol=1e-12)
    np.testing.assert_allclose(y2[0], y[0], rtol=1e-12)
    # causal and padding masks combine
    both = nn.MultiHeadAttention(8, 2, causal=True, param_dtype=F64)
    want = _mha_reference(p, x, 2, valid[:, None, None, :] & np.tril(np.ones((5, 5), bool)))
    np.testing.assert_allclose(
        _np(both.apply(p, fnp.array(x), mask=mask)), want, rtol=1e-10, atol=1e-12
    )


def test_mha_grads_and_errors():
    mha = nn.MultiHeadAttention(4, 2, causal=True, param_dtype=F64)
    p = _params_f64(mha.init(random.key(0)))
    check_grads(lambda p, x: mha.apply(p, x), (p, _rand(1, 2, 3, 4)), order=2, modes=("rev", "fwd"))
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(6, 4)
    with pytest.raises(ShapeError, match="batch, seq, d_model"):
        mha.apply(p, fnp.ones((3, 4)))
    with pytest.raises(ShapeError, match="padding_mask"):
        mha.apply(p, fnp.ones((2, 3, 4)), mask=fnp.ones((2, 1, 3, 2), dtype=bool))


def test_attention_fully_masked_row_is_uniform_not_nan():
    q = _rand(0, 2, 3)
    k = _rand(1, 4, 3)
    v = fnp.array(np.arange(8.0).reshape(4, 2))
    mask = fnp.array(np.array([[True, False, True, False], [False] * 4]))
    out = _np(attention.dot_product_attention(q, k, v, mask=mask))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[1], np.arange(8.0).reshape(4, 2).mean(0))
    g = fgrad.grad(lambda k: fnp.sum(attention.dot_product_attention(q, k, v, mask=mask)[0]))(k)
    # masked keys get exactly zero gradient from the unmasked row
    assert np.all(_np(g)[[1, 3]] == 0)


def test_causal_mask():
    np.testing.assert_array_equal(_np(attention.causal_mask(4)), np.tril(np.ones((4, 4), bool)))


def test_transformer_block():
    block = nn.TransformerBlock(8, 2, mlp_ratio=2, causal=True, param_dtype=F64)
    params = block.init(random.key(0))
    assert type(params) is nn.TransformerBlockParams
    assert params._fields == ("attn", "mlp_in", "mlp_out", "norm1", "norm2")
    assert params.mlp_in.weight.shape == (8, 16)
    p = _params_f64(params)
    x = _np(_rand(1, 2, 5, 8))
    y = _np(block.apply(p, fnp.array(x)))
    assert y.shape == (2, 5, 8)

    # pre-norm closed form: h = x + attn(ln(x)); y = h + mlp(ln(h))
    def ln(z, q):
        return (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5) * _np(
            q.scale
        ) + _np(q.bias)

    # GPT-2's tanh form of GELU (Hendrycks & Gimpel 2016), the block's default activation
    def gelu(z):
        return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))

    h = x + _mha_reference(p.attn, ln(x, p.norm1), 2, np.tril(np.ones((5, 5), bool)))
    m = gelu(ln(h, p.norm2) @ _np(p.mlp_in.weight) + _np(p.mlp_in.bias))
    want = h + m @ _np(p.mlp_out.weight) + _np(p.mlp_out.bias)
    np.testing.assert_allclose(y, want, rtol=1e-9, atol=1e-10)
    # causal: changing the last position leaves the others unchanged
    x2 = x.copy()
    x2[:, -1] += 5.0
    np.testing.assert_allclose(_np(block.apply(p, fnp.array(x2)))[:, :-1], y[:, :-1], rtol=1e-12)
    small = nn.TransformerBlock(4, 2, mlp_ratio=1, causal=True, param_dtype=F64)
    ps = _params_f64(small.init(random.key(1)))
    check_grads(
        lambda p, x: small.apply(p, x), (ps, _rand(2, 1, 3, 4)), order=1, modes=("rev", "fwd")
    )


def test_transformer_block_dropout_and_float32():
    block = nn.TransformerBlock(8, 2, dropout_rate=0.5)
    params = block.init(random.key(0))
    x = fnp.astype(_rand(0, 1, 3, 8), "float32")
    y = block.apply(params, x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(_np(block.apply(params, x, train=False)), _np(y))
    a = block.apply(params, x, key=random.key(1), train=True)
    assert not np.allclose(_np(a), _np(y))
    with pytest.raises(ValueError, match="key"):
        block.apply(params, x, train=True)
    grads = fgrad.grad(lambda p: fnp.sum(block.apply(p, x, key=random.key(1), train=True)))(params)
    assert all(g.dtype == np.float32 for g in tree.leaves(grads))


def test_models_under_jit_match_eager():
    cnn = nn.Sequential(
        [
            nn.Conv2d(1, 4, 3, padding="SAME"),
            nn.relu,
            nn.MaxPool2d(2),
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Dropout(0.5),
            nn.Linear(4 * 2 * 2, 3),
        ]
    )
    pc = cnn.init(random.key(0))
    xc = fnp.astype(_rand(0, 2, 1, 8, 8), "float32")
    labels = fnp.array([0, 2])

    def loss(p, x, key):  # evaluation mode: the key is passed but not split or used
        return fnp.mean(nn.softmax_cross_entropy(cnn.apply(p, x, key=key), labels))

    np.testing.assert_allclose(
        _np(fgrad.jit(loss)(pc, xc, random.key(1))), _np(loss(pc, xc, random.key(1))), rtol=1e-6
    )
    g_jit = fgrad.jit(fgrad.grad(loss))(pc, xc, random.key(1))
    for a, b in zip(tree.leaves(g_jit), tree.leaves(fgrad.grad(loss)(pc, xc, random.key(1)))):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-7)
    block = nn.TransformerBlock(8, 2, causal=True)
    pb = block.init(random.key(2))
    xb = fnp.astype(_rand(3, 2, 5, 8), "float32")
    np.testing.assert_allclose(
        _np(fgrad.jit(block.apply)(pb, xb)), _np(block.apply(pb, xb)), rtol=1e-5, atol=1e-6
    )
