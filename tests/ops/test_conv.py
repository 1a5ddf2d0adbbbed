"""conv2d and pooling against direct numpy loops; their gradients (the registry sweep checks
one case per op; here every stride/padding/dilation/groups combination listed)."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.ops import conv as C
from fgrad.test_util import check_grads


def conv_reference(x, w, stride, padding, dilation, groups):
    """The textbook loop: out[n,o,i,j] = sum_{c,p,q} xpad[n, g*cg+c, i*s+p*d, j*s+q*d] w[o,c,p,q]."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (pt, pb), (pl, pr) = padding
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr), dtype=np.result_type(x, w))
    xp[:, :, pt : pt + h, pl : pl + wd] = x
    oh = (h + pt + pb - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pl + pr - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow), dtype=xp.dtype)
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ci in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                acc += (
                                    xp[
                                        b,
                                        g * cg + ci,
                                        i * stride[0] + p * dilation[0],
                                        j * stride[1] + q * dilation[1],
                                    ]
                                    * w[oc, ci, p, q]
                                )
                    out[b, oc, i, j] = acc
    return out


def pool_reference(x, window, stride, padding, how):
    n, c, h, w = x.shape
    (pt, pb), (pl, pr) = padding
    fill = -np.inf if how == "max" else 0.0
    xp = np.full((n, c, h + pt + pb, w + pl + pr), fill)
    xp[:, :, pt : pt + h, pl : pl + w] = x
    oh = (h + pt + pb - window[0]) // stride[0] + 1
    ow = (w + pl + pr - window[1]) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[
                :,
                :,
                i * stride[0] : i * stride[0] + window[0],
                j * stride[1] : j * stride[1] + window[1],
            ]
            out[:, :, i, j] = win.max(axis=(2, 3)) if how == "max" else win.mean(axis=(2, 3))
    return out


# (x shape, w shape, stride, padding, dilation, groups)
CONV_CASES = [
    ((2, 3, 5, 5), (4, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 3, 5, 5), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((1, 2, 7, 6), (3, 2, 3, 2), (2, 2), ((1, 0), (0, 2)), (1, 1), 1),
    ((1, 2, 8, 8), (2, 2, 3, 3), (1, 2), ((2, 2), (1, 1)), (2, 2), 1),
    ((2, 4, 6, 5), (6, 2, 2, 3), (2, 1), ((0, 1), (1, 1)), (1, 2), 2),
    ((1, 4, 5, 5), (4, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 4),  # depthwise
    ((1, 3, 4, 4), (2, 3, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # 1x1
    ((1, 1, 3, 9), (1, 1, 1, 4), (1, 3), ((0, 0), (0, 0)), (1, 1), 1),  # stride leaves a tail
    ((2, 2, 5, 7), (3, 2, 2, 3), (2, 3), ((1, 0), (0, 1)), (1, 1), 1),  # windows tile, with a tail
    ((1, 4, 4, 4), (2, 2, 2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), 2),  # windows tile exactly
]


def _params(stride, padding, dilation, groups):
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_matches_loop(xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    p = _params(stride, padding, dilation, groups)
    got = C.conv2d(fnp.array(x), fnp.array(w), **p)
    want = conv_reference(x, w, stride, padding, dilation, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    # the shape rule agrees with the kernel
    aval = C.conv2d.abstract_eval(fnp.array(x).aval, fnp.array(w).aval, **p)
    assert aval.shape == want.shape


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_grads(xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(1)
    x, w = fnp.array(rng.standard_normal(xs)), fnp.array(rng.standard_normal(ws))
    p = _params(stride, padding, dilation, groups)
    check_grads(lambda x, w: C.conv2d(x, w, **p), (x, w), order=2, modes=("rev", "fwd"))


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CONV_CASES[:5])
def test_conv2d_transposes_are_adjoints(xs, ws, stride, padding, dilation, groups):
    # <backprop_input(ct, w), u> == <ct, conv(u, w)> and <backprop_filter(x, ct), v> == <ct, conv(x, v)>
    rng = np.random.default_rng(2)
    p = _params(stride, padding, dilation, groups)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    y = conv_reference(x, w, stride, padding, dilation, groups)
    ct = rng.standard_normal(y.shape)
    dx = C.conv2d_backprop_input(fnp.array(ct), fnp.array(w), input_size=xs[2:], **p)
    dw = C.conv2d_backprop_filter(fnp.array(x), fnp.array(ct), kernel_size=ws[2:], **p)
    assert np.sum(np.asarray(dx) * x) == pytest.approx(np.sum(ct * y), rel=1e-10)
    assert np.sum(np.asarray(dw) * w) == pytest.approx(np.sum(ct * y), rel=1e-10)


def test_conv2d_float32_stays_float32():
    x = fnp.ones((1, 2, 4, 4), dtype="float32")
    w = fnp.ones((3, 2, 3, 3), dtype="float32")
    p = _params((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    y = C.conv2d(x, w, **p)
    assert y.dtype == np.float32
    gx, gw = fgrad.grad(lambda x, w: fnp.sum(C.conv2d(x, w, **p)), argnums=(0, 1))(x, w)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    # centre pixels see all 9 taps of each of 3 filters; a corner sees 4
    assert float(np.asarray(gx)[0, 0, 1, 1]) == 27.0 and float(np.asarray(gx)[0, 0, 0, 0]) == 12.0


def test_conv2d_shape_errors():
    p = _params((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    with pytest.raises(ShapeError, match="channels"):
        C.conv2d.abstract_eval(fnp.ones((1, 3, 5, 5)).aval, fnp.ones((2, 2, 3, 3)).aval, **p)
    with pytest.raises(ShapeError, match="does not fit"):
        C.conv2d.abstract_eval(fnp.ones((1, 2, 2, 2)).aval, fnp.ones((2, 2, 3, 3)).aval, **p)
    with pytest.raises(ShapeError, match="4-D"):
        C.conv2d.abstract_eval(fnp.ones((2, 5, 5)).aval, fnp.ones((2, 2, 3, 3)).aval, **p)
    with pytest.raises(ShapeError):  # the eager call reports the shape rule's message
        C.conv2d(fnp.ones((1, 3, 5, 5)), fnp.ones((2, 2, 3, 3)), **p)


# ------------------------------------------------------------------------ pooling

POOL_CASES = [
    ((2, 2), (2, 2), ((0, 0), (0, 0))),
    ((3, 3), (1, 1), ((1, 1), (1, 1))),
    ((3, 2), (2, 1), ((1, 0), (0, 1))),
    ((2, 2), (1, 1), ((0, 0), (0, 0))),  # overlapping windows
]


@pytest.mark.parametrize("window,stride,padding", POOL_CASES)
def test_max_pool2d_matches_loop_and_grads(window, stride, padding):
    rng = np.random.default_rng(3)
    x = (rng.permutation(2 * 3 * 6 * 5).reshape(2, 3, 6, 5) - 90) * 0.1  # distinct values
    p = {"window": window, "stride": stride, "padding": padding}
    got = C.max_pool2d(fnp.array(x), **p)
    np.testing.assert_allclose(np.asarray(got), pool_reference(x, window, stride, padding, "max"))
    check_grads(lambda x: C.max_pool2d(x, **p), (fnp.array(x),), order=2, modes=("rev", "fwd"))


def test_max_pool2d_ties_go_to_first_maximum():
    # PyTorch and JAX (select_and_scatter_add) send a window's gradient to one element: the
    # first maximum in row-major order. fnp.max's even split does not apply to pooling.
    x = fnp.array([[[[1.0, 1.0], [1.0, 0.0]]]])
    p = {"window": (2, 2), "stride": (2, 2), "padding": ((0, 0), (0, 0))}
    g = fgrad.grad(lambda x: fnp.sum(C.max_pool2d(x, **p)))(x)
    np.testing.assert_array_equal(np.asarray(g), [[[[1.0, 0.0], [0.0, 0.0]]]])


def test_max_pool2d_overlapping_windows_accumulate():
    x = fnp.array([[[[0.0, 9.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.2, 0.0]]]])
    p = {"window": (2, 2), "stride": (1, 1), "padding": ((0, 0), (0, 0))}
    g = fgrad.grad(lambda x: fnp.sum(C.max_pool2d(x, **p)))(x)
    # 9.0 is the max of both top windows, 0.5 of both bottom windows
    np.testing.assert_array_equal(np.asarray(g), [[[[0, 2, 0], [0, 2, 0], [0, 0, 0]]]])


def test_max_pool2d_padding_never_wins():
    x = -fnp.ones((1, 1, 2, 2))
    p = {"window": (3, 3), "stride": (1, 1), "padding": ((1, 1), (1, 1))}
    np.testing.assert_array_equal(np.asarray(C.max_pool2d(x, **p)), -np.ones((1, 1, 2, 2)))


def test_max_pool2d_errors():
    with pytest.raises(ShapeError, match="half the window"):
        C.max_pool2d.abstract_eval(
            fnp.ones((1, 1, 4, 4)).aval, window=(2, 2), stride=(1, 1), padding=((2, 0), (0, 0))
        )
    with pytest.raises(ShapeError, match="4-D"):
        C.max_pool2d.abstract_eval(
            fnp.ones((4, 4)).aval, window=(2, 2), stride=(1, 1), padding=((0, 0), (0, 0))
        )


def test_max_pool2d_float32_and_int():
    x = fnp.reshape(fnp.arange(16), (1, 1, 4, 4))
    p = {"window": (2, 2), "stride": (2, 2), "padding": ((1, 1), (1, 1))}
    y = C.max_pool2d(x, **p)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(
        np.asarray(y), pool_reference(np.asarray(x), (2, 2), (2, 2), ((1, 1), (1, 1)), "max")
    )
    xf = fnp.astype(x, "float32")
    g = fgrad.grad(lambda x: fnp.sum(C.max_pool2d(x, **p)))(xf)
    assert g.dtype == np.float32


@pytest.mark.parametrize("window,stride,padding", POOL_CASES)
def test_avg_pool2d_matches_loop_and_grads(window, stride, padding):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 5))
    p = {"window": window, "stride": stride, "padding": padding, "count_include_pad": True}
    got = C.avg_pool2d(fnp.array(x), **p)
    np.testing.assert_allclose(
        np.asarray(got), pool_reference(x, window, stride, padding, "avg"), rtol=1e-12
    )
    check_grads(lambda x: C.avg_pool2d(x, **p), (fnp.array(x),), order=2, modes=("rev", "fwd"))


def test_avg_pool2d_count_exclude_pad():
    x = fnp.ones((1, 1, 3, 3))
    p = {"window": (3, 3), "stride": (1, 1), "padding": ((1, 1), (1, 1))}
    # PyTorch's count_include_pad=False: a mean of ones is one even at the corners
    np.testing.assert_allclose(
        np.asarray(C.avg_pool2d(x, count_include_pad=False, **p)), np.ones((1, 1, 3, 3))
    )
    # count_include_pad=True: the corner window holds 4 ones out of 9
    assert float(
        np.asarray(C.avg_pool2d(x, count_include_pad=True, **p))[0, 0, 0, 0]
    ) == pytest.approx(4 / 9)
    check_grads(
        lambda x: C.avg_pool2d(x, count_include_pad=False, **p), (x,), order=1, modes=("rev", "fwd")
    )
