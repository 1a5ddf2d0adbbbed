"""conv1d/Conv1d and conv_transpose2d/ConvTranspose2d: against direct numpy loops of
PyTorch's definitions, the VJP of conv2d, float64 finite differences, jit and vmap."""

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


def conv1d_reference(x, w, stride, padding, dilation, groups):
    """PyTorch's conv1d: out[n, o, t] = sum_{c, k} xpad[n, g*cg + c, t*s + k*d] w[o, c, k]."""
    xp = np.pad(x, ((0, 0), (0, 0), padding))
    n, _, length = xp.shape
    o, cg, k = w.shape
    out_len = (length - dilation * (k - 1) - 1) // stride + 1
    og = o // groups
    out = np.zeros((n, o, out_len))
    for oc in range(o):
        g = oc // og
        for t in range(out_len):
            start = t * stride
            taps = xp[:, g * cg : (g + 1) * cg, start : start + dilation * (k - 1) + 1 : dilation]
            out[:, oc, t] = np.einsum("nck,ck->n", taps, w[oc])
    return out


def conv_transpose2d_reference(x, w, stride, padding, output_padding, groups, dilation):
    """PyTorch's conv_transpose2d as a scatter: input pixel (i, j) of channel c adds
    ``x * w[c, o]`` at output ``(i*s + a*d - p, j*s + b*d - p)``; the output is
    ``(h - 1) * s - 2 p + d (k - 1) + output_padding + 1`` rows."""
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = cin // groups
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    y = np.zeros((n, og * groups, oh, ow))
    for c in range(cin):
        g = c // cg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for b in range(kw):
                        r, q = i * sh + a * dh - ph, j * sw + b * dw - pw
                        if 0 <= r < oh and 0 <= q < ow:
                            contribution = x[:, c, i, j][:, None] * w[c, :, a, b]
                            y[:, g * og : (g + 1) * og, r, q] += contribution
    return y


# (stride, padding, dilation, groups) of conv1d; padding as (left, right)
CONV1D_CASES = [(1, (0, 0), 1, 1), (2, (1, 1), 1, 2), (1, (2, 1), 2, 1), (3, (0, 2), 1, 2)]


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV1D_CASES)
def test_conv1d_matches_loop(stride, padding, dilation, groups):
    x, w, b = _rand(0, 2, 4, 11), _rand(1, 6, 4 // groups, 3), _rand(2, 6)
    want = conv1d_reference(x, w, stride, padding, dilation, groups) + b[:, None]
    got = nn.conv1d(
        fnp.asarray(x), fnp.asarray(w), fnp.asarray(b),
        stride=stride, padding=padding, dilation=dilation, groups=groups,
    )
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    if padding[0] == padding[1]:  # an int padding is both sides
        got = nn.conv1d(fnp.asarray(x), fnp.asarray(w), fnp.asarray(b), stride=stride,
                        padding=padding[0], dilation=dilation, groups=groups)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_conv1d_same_padding_and_layer():
    x, w = _rand(3, 2, 3, 10), _rand(4, 5, 3, 4)
    # SAME, stride 1, k = 4: total padding 3, the odd element at the end (TF/JAX).
    got = nn.conv1d(fnp.asarray(x), fnp.asarray(w), padding="SAME")
    np.testing.assert_allclose(np.asarray(got), conv1d_reference(x, w, 1, (1, 2), 1, 1), rtol=1e-12)
    layer = nn.Conv1d(3, 5, 4, padding="SAME", param_dtype="float64")
    params = layer.init(random.key(0))
    assert params.weight.shape == (5, 3, 4) and params.bias.shape == (5,)
    out = layer.apply(params, fnp.asarray(x))
    np.testing.assert_allclose(
        np.asarray(out), conv1d_reference(x, np.asarray(params.weight), 1, (1, 2), 1, 1), rtol=1e-12
    )


# (stride, padding, output_padding, dilation, groups)
TRANSPOSE_CASES = [
    ((1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((3, 2), (1, 0), (2, 1), (1, 1), 2),
    ((2, 1), (0, 1), (1, 0), (2, 1), 1),
    ((1, 2), (2, 0), (2, 1), (3, 1), 2),  # output_padding >= stride, below the dilation
]


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", TRANSPOSE_CASES)
def test_conv_transpose2d_matches_loop(stride, padding, output_padding, dilation, groups):
    x, w, b = _rand(5, 2, 4, 4, 3), _rand(6, 4, 6 // groups, 3, 2), _rand(7, 6)
    want = conv_transpose2d_reference(x, w, stride, padding, output_padding, groups, dilation)
    want = want + b[:, None, None]
    kw = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups,
              dilation=dilation)
    got = nn.conv_transpose2d(fnp.asarray(x), fnp.asarray(w), fnp.asarray(b), **kw)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    jitted = fgrad.jit(lambda x, w, b: nn.conv_transpose2d(x, w, b, **kw))
    np.testing.assert_allclose(
        np.asarray(jitted(fnp.asarray(x), fnp.asarray(w), fnp.asarray(b))), want, rtol=1e-12,
        atol=1e-12,
    )


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", TRANSPOSE_CASES[:4])
def test_conv_transpose2d_is_the_vjp_of_conv2d(stride, padding, output_padding, dilation, groups):
    """conv_transpose2d(ct, w) == the VJP of x -> conv2d(x, w) at ct, for x of the
    transposed convolution's output size (output_padding picks that size)."""
    ct, w = _rand(8, 2, 4, 4, 3), _rand(9, 4, 6 // groups, 3, 2)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    y = nn.conv_transpose2d(fnp.asarray(ct), fnp.asarray(w), output_padding=output_padding, **kw)
    x = fnp.zeros(y.shape)
    _, vjp = fgrad.vjp(lambda x: nn.conv2d(x, fnp.asarray(w), **kw), x)
    (want,) = vjp(fnp.asarray(ct))
    np.testing.assert_allclose(np.asarray(y), np.asarray(want), rtol=1e-12, atol=1e-12)


def test_conv_grads_against_finite_differences_and_compositions():
    x1, w1 = fnp.asarray(_rand(10, 2, 2, 7)), fnp.asarray(_rand(11, 4, 1, 3))
    check_grads(
        lambda x, w: nn.conv1d(x, w, stride=2, padding=1, groups=2), (x1, w1), order=2,
        modes=("rev", "fwd"),
    )
    x2, w2, b2 = (fnp.asarray(_rand(12, 1, 2, 3, 3)), fnp.asarray(_rand(13, 2, 3, 2, 2)),
                  fnp.asarray(_rand(14, 3)))

    def f(x, w, b):
        return nn.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)

    check_grads(f, (x2, w2, b2), order=2, modes=("rev", "fwd"))
    loss = lambda x, w, b: fnp.sum(f(x, w, b) ** 2)  # noqa: E731
    g = fgrad.grad(loss, argnums=(0, 1, 2))(x2, w2, b2)
    gj = fgrad.grad(fgrad.jit(loss), argnums=(0, 1, 2))(x2, w2, b2)
    for a, b in zip(g, gj):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    # vmap over examples (each (1, c, h, w)) equals the batch.
    xs = fnp.asarray(_rand(15, 3, 1, 2, 3, 3))
    per = fgrad.vmap(lambda x: f(x, w2, b2))(xs)
    whole = f(fnp.reshape(xs, (3, 2, 3, 3)), w2, b2)
    np.testing.assert_allclose(np.asarray(per)[:, 0], np.asarray(whole), rtol=1e-12, atol=1e-12)
    xs1 = fnp.asarray(_rand(16, 3, 1, 2, 7))
    per1 = fgrad.jit(fgrad.vmap(lambda x: nn.conv1d(x, w1, groups=2)))(xs1)
    whole1 = nn.conv1d(fnp.reshape(xs1, (3, 2, 7)), w1, groups=2)
    np.testing.assert_allclose(np.asarray(per1)[:, 0], np.asarray(whole1), rtol=1e-12)


def test_conv_transpose2d_layer_inverts_conv2d_shapes():
    up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
    params = up.init(random.key(0))
    assert params.weight.shape == (8, 2, 3, 3) and params.bias.shape == (4,)
    y = up.apply(params, fnp.ones((2, 8, 5, 5), dtype="float32"))
    assert y.shape == (2, 4, 10, 10) and y.dtype == np.float32
    # A Conv2d with the same geometry maps 10x10 back to 5x5.
    down = nn.Conv2d(4, 8, 3, stride=2, padding=1)
    assert down.apply(down.init(random.key(1)), y).shape == (2, 8, 5, 5)
    assert tree.structure(params) == tree.structure(nn.ConvTranspose2dParams(bias=1, weight=1))


def test_conv_errors_name_the_function():
    with pytest.raises(ShapeError, match="conv1d: needs a 3-D x"):
        nn.conv1d(fnp.ones((1, 2, 3, 4)), fnp.ones((1, 2, 1)))
    with pytest.raises(ShapeError, match="conv1d: x .* has 3 channels"):
        nn.conv1d(fnp.ones((1, 3, 8)), fnp.ones((2, 2, 3)))
    with pytest.raises(DTypeError, match="conv1d: padding"):
        nn.conv1d(fnp.ones((1, 2, 8)), fnp.ones((2, 2, 3)), padding=1.5)
    with pytest.raises(ValueError, match="conv_transpose2d: output_padding"):
        nn.conv_transpose2d(fnp.ones((1, 2, 3, 3)), fnp.ones((2, 1, 3, 3)), stride=2,
                            output_padding=2)
    with pytest.raises(ShapeError, match="conv_transpose2d: x .* has 3 channels"):
        nn.conv_transpose2d(fnp.ones((1, 3, 3, 3)), fnp.ones((2, 1, 3, 3)))
    with pytest.raises(ShapeError, match="conv_transpose2d: the output would be empty"):
        nn.conv_transpose2d(fnp.ones((1, 2, 1, 1)), fnp.ones((2, 1, 1, 1)), padding=1)
    with pytest.raises(ValueError, match="ConvTranspose2d: output_padding"):
        nn.ConvTranspose2d(2, 2, 3, stride=1, output_padding=1)
    with pytest.raises(ValueError, match="Conv1d: groups=2 must divide"):
        nn.Conv1d(3, 4, 3, groups=2)
