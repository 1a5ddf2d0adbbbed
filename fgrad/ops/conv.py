"""Convolution and max pooling over NCHW images.

Two closed families of primitives, so every derivative (of any order) is again one of them:

* ``conv2d(x, w)`` with its two transposes ``conv2d_backprop_input(ct, w)`` (the adjoint of
  ``x -> conv2d(x, w)``) and ``conv2d_backprop_filter(x, ct)`` (the adjoint of
  ``w -> conv2d(x, w)``). All three are bilinear, so each one's JVP and VJP rules are
  applications of the three (the names follow TensorFlow's ``Conv2DBackpropInput`` /
  ``Conv2DBackpropFilter``).
* ``max_pool2d(x)`` with ``max_pool2d_gather(t, x)`` (pick ``t`` at each window's maximum of
  ``x``) and ``max_pool2d_scatter(ct, x)`` (its transpose). The gradient of a window goes to
  a single element: the first maximum in row-major window order, as in PyTorch's
  ``max_pool2d`` and JAX's ``reduce_window`` max (``select_and_scatter_add``). This differs
  on purpose from ``fnp.max``, which splits the gradient of tied elements evenly.

Kernels are im2col: the ``kh * kw`` strided window views of the padded input are stacked
and contracted with the filters in one batched matrix product per group. Only Array API
names are used (``stack``, ``reshape``, ``permute_dims``, ``matmul``, strided slicing and
slice assignment), so the kernels also run on cupy and ``array_api_strict``.

Parameters are canonical: ``stride`` and ``dilation`` are ``(sh, sw)``, ``padding`` is
``((top, bottom), (left, right))`` of non-negative ints, ``groups`` an int. The user-facing
wrappers that accept ints and ``"SAME"``/``"VALID"`` are ``fgrad.nn.conv2d``,
``fgrad.nn.max_pool2d`` and ``fgrad.nn.avg_pool2d``.
"""

from __future__ import annotations

import numpy as np

from fgrad import dtypes
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import batch_size, with_batch
from fgrad.ops._rules import dtype_of, shape_of
from fgrad.ops.elementwise import full_like
from fgrad.ops.shape import permute_dims, reshape
from fgrad.tensor import ShapeDtype

__all__ = [
    "avg_pool2d",
    "avg_pool2d_transpose",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv_out_size",
    "max_pool2d",
    "max_pool2d_gather",
    "max_pool2d_scatter",
]


# ------------------------------------------------------------------------ kernel helpers


def conv_out_size(size: int, k: int, stride: int, pad: tuple, dilation: int) -> int:
    """Output length of a 1-D window sweep (the usual ``floor((n + p - d(k-1) - 1)/s) + 1``)."""
    return (size + pad[0] + pad[1] - dilation * (k - 1) - 1) // stride + 1


def _pad(xp, x, padding, value):
    """``x`` (``(a, b, h, w)``) with ``padding`` on its last two axes filled with ``value``."""
    (pt, pb), (pl, pr) = padding
    if pt == pb == pl == pr == 0:
        return x
    a, b, h, w = x.shape
    out = xp.full((a, b, h + pt + pb, w + pl + pr), value, dtype=x.dtype)
    out[:, :, pt : pt + h, pl : pl + w] = x
    return out


def _window_slices(kh, kw, oh, ow, stride, dilation):
    """The ``kh * kw`` index tuples that pick one window offset at every output position."""
    (sh, sw), (dh, dw) = stride, dilation
    return [
        (
            slice(None),
            slice(None),
            slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
            slice(j * dw, j * dw + sw * (ow - 1) + 1, sw),
        )
        for i in range(kh)
        for j in range(kw)
    ]


def _tiles(stride, kh, kw, dilation):
    """True when the windows tile the image exactly (stride == window, no dilation): then
    windows are a reshape of the image instead of ``kh * kw`` strided copies."""
    return tuple(stride) == (kh, kw) and tuple(dilation) == (1, 1)


def _windows(xp, a, kh, kw, oh, ow, stride, dilation, axis):
    """The windows of ``a`` (``(p, q, hp, wp)``) stacked on ``axis`` (1 or 2) of
    ``(p, q, oh, ow)``: ``(p, k, q, oh, ow)`` or ``(p, q, k, oh, ow)``, ``k = kh * kw``."""
    if _tiles(stride, kh, kw, dilation):
        p, q = a.shape[0], a.shape[1]
        t = xp.reshape(a[:, :, : oh * kh, : ow * kw], (p, q, oh, kh, ow, kw))
        t = xp.permute_dims(t, (0, 3, 5, 1, 2, 4) if axis == 1 else (0, 1, 3, 5, 2, 4))
        return xp.reshape(t, (p, kh * kw, q, oh, ow) if axis == 1 else (p, q, kh * kw, oh, ow))
    return xp.stack([a[s] for s in _window_slices(kh, kw, oh, ow, stride, dilation)], axis=axis)


def _im2col(xp, x, kh, kw, oh, ow, stride, padding, dilation):
    """``(c, k, n, oh, ow)`` windows of ``x`` (``(n, c, h, w)``), ``k = kh * kw``.

    Channels lead so that a reshape gives ``(groups, c_per_group * k, n * oh * ow)`` and each
    group is one large matrix product rather than ``n`` small ones.
    """
    xt = xp.permute_dims(_pad(xp, x, padding, 0), (1, 0, 2, 3))
    return _windows(xp, xt, kh, kw, oh, ow, stride, dilation, axis=1)


def _col2im(xp, cols, n, c, h, w, kh, kw, stride, padding, dilation):
    """Transpose of :func:`_im2col`: add the ``(c, k, n, oh, ow)`` windows back into an image."""
    (pt, pb), (pl, pr) = padding
    oh, ow = cols.shape[3], cols.shape[4]
    hp, wp = h + pt + pb, w + pl + pr
    if _tiles(stride, kh, kw, dilation):
        t = xp.permute_dims(xp.reshape(cols, (c, kh, kw, n, oh, ow)), (0, 3, 4, 1, 5, 2))
        t = xp.reshape(t, (c, n, oh * kh, ow * kw))
        if (oh * kh, ow * kw) == (hp, wp):
            out = t
        else:
            out = xp.zeros((c, n, hp, wp), dtype=cols.dtype)
            out[:, :, : oh * kh, : ow * kw] = t
    else:
        out = xp.zeros((c, n, hp, wp), dtype=cols.dtype)
        for k, s in enumerate(_window_slices(kh, kw, oh, ow, stride, dilation)):
            out[s] += cols[:, k, ...]
    out = out[:, :, pt : pt + h, pl : pl + w]
    return xp.permute_dims(out, (1, 0, 2, 3))


def _conv_kernel(xp, x, w, *, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = conv_out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = conv_out_size(wd, kw, stride[1], padding[1], dilation[1])
    # Checked here, not only in the shape rule (which eager calls skip): a channel mismatch
    # with an empty output would otherwise reshape without complaint. The ValueError is
    # replaced by the shape rule's ShapeError (fgrad.core.op._explain).
    if c != cg * groups or o % groups or oh < 1 or ow < 1 or min(*stride, *dilation) < 1:
        # (a dilation of 0 gave every window the same pixel: a silent wrong result)
        raise ValueError("conv2d: inconsistent shapes or parameters")
    cols = _im2col(xp, x, kh, kw, oh, ow, stride, padding, dilation)
    cols = xp.reshape(cols, (groups, cg * kh * kw, n * oh * ow))
    wm = xp.reshape(w, (groups, o // groups, cg * kh * kw))
    out = xp.reshape(xp.matmul(wm, cols), (o, n, oh, ow))
    return xp.permute_dims(out, (1, 0, 2, 3))


def _backprop_input_kernel(xp, ct, w, *, input_size, stride, padding, dilation, groups):
    n, o, oh, ow = ct.shape
    _, cg, kh, kw = w.shape
    ctm = xp.reshape(xp.permute_dims(ct, (1, 0, 2, 3)), (groups, o // groups, n * oh * ow))
    wm = xp.reshape(w, (groups, o // groups, cg * kh * kw))
    cols = xp.matmul(xp.matrix_transpose(wm), ctm)  # (groups, cg * k, n * oh * ow)
    cols = xp.reshape(cols, (cg * groups, kh * kw, n, oh, ow))
    return _col2im(xp, cols, n, cg * groups, *input_size, kh, kw, stride, padding, dilation)


def _backprop_filter_kernel(xp, x, ct, *, kernel_size, stride, padding, dilation, groups):
    n, c, _, _ = x.shape
    _, o, oh, ow = ct.shape
    kh, kw = kernel_size
    cg = c // groups
    cols = _im2col(xp, x, kh, kw, oh, ow, stride, padding, dilation)
    cols = xp.reshape(cols, (groups, cg * kh * kw, n * oh * ow))
    ctm = xp.reshape(xp.permute_dims(ct, (1, 0, 2, 3)), (groups, o // groups, n * oh * ow))
    return xp.reshape(xp.matmul(ctm, xp.matrix_transpose(cols)), (o, cg, kh, kw))


# ------------------------------------------------------------------------ shape rules


def _check_params(name, stride, padding, dilation, groups=1):
    ok = (
        len(stride) == 2
        and len(dilation) == 2
        and len(padding) == 2
        and all(int(s) >= 1 for s in stride)
        and all(int(d) >= 1 for d in dilation)
        and all(len(p) == 2 and min(p) >= 0 for p in padding)
        and int(groups) >= 1
    )
    if not ok:
        raise ShapeError(
            f"{name}: bad parameters stride={stride}, padding={padding}, dilation={dilation}, "
            f"groups={groups}; strides, dilations and groups must be positive and padding a "
            "pair of non-negative (low, high) pairs"
        )


def _check_dtype(name, *avals):
    dtype = np.dtype(dtypes.result_type(*avals))
    if not (dtypes.is_inexact(dtype) or dtypes.is_integer(dtype)):
        got = ", ".join(str(ShapeDtype(shape_of(a), a.dtype)) for a in avals)
        raise DTypeError(f"{name}: needs numeric inputs, got {got}; cast with astype first")
    return dtype


def _conv_out_shape(name, x_shape, w_shape, stride, padding, dilation, groups, what="x"):
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ShapeError(
            f"{name}: needs a 4-D {what} (batch, channels, height, width) and a 4-D filter "
            f"(out_channels, in_channels // groups, kh, kw), got {x_shape} and {w_shape}"
        )
    n, c, h, wd = x_shape
    o, cg, kh, kw = w_shape
    # A channels-last (NHWC) image is the likeliest cause of both errors below.
    nhwc = (
        f" {what} is read as NCHW (batch, channels, height, width); a channels-last (NHWC) "
        f"{what} needs {what}.transpose(0, 3, 1, 2) first"
    )
    if c != cg * groups or o % groups:
        raise ShapeError(
            f"{name}: {what} {tuple(x_shape)} has {c} channels but the filter {w_shape} with "
            f"groups={groups} expects {cg * groups}; out_channels ({o}) must also be "
            f"divisible by groups.{nhwc}"
        )
    oh = conv_out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = conv_out_size(wd, kw, stride[1], padding[1], dilation[1])
    if oh < 1 or ow < 1:
        eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
        hp, wp = h + sum(padding[0]), wd + sum(padding[1])
        raise ShapeError(
            f"{name}: the {kh}x{kw} filter (dilation {tuple(dilation)}, spanning {eh}x{ew}) "
            f"does not fit in the {h}x{wd} image padded to {hp}x{wp} (padding "
            f"{tuple(padding)}); pad more or use a smaller kernel.{nhwc}"
        )
    return (n, o, oh, ow)


def _conv_aval(x, w, *, stride, padding, dilation, groups):
    _check_params("conv2d", stride, padding, dilation, groups)
    dtype = _check_dtype("conv2d", x, w)
    shape = _conv_out_shape("conv2d", shape_of(x), shape_of(w), stride, padding, dilation, groups)
    return ShapeDtype(shape, dtype)


def _backprop_input_aval(ct, w, *, input_size, stride, padding, dilation, groups):
    name = "conv2d_backprop_input"
    _check_params(name, stride, padding, dilation, groups)
    dtype = _check_dtype(name, ct, w)
    ws = shape_of(w)
    x_shape = (shape_of(ct)[0], ws[1] * groups, *input_size) if len(ws) == 4 else ()
    want = _conv_out_shape(name, x_shape, ws, stride, padding, dilation, groups)
    if tuple(shape_of(ct)) != want:
        raise ShapeError(f"{name}: cotangent shape {shape_of(ct)} is not conv2d's output {want}")
    return ShapeDtype(x_shape, dtype)


def _backprop_filter_aval(x, ct, *, kernel_size, stride, padding, dilation, groups):
    name = "conv2d_backprop_filter"
    _check_params(name, stride, padding, dilation, groups)
    dtype = _check_dtype(name, x, ct)
    xs, cs = shape_of(x), shape_of(ct)
    if len(xs) != 4 or len(cs) != 4 or xs[1] % groups:
        raise ShapeError(f"{name}: bad input {xs} or cotangent {cs} for groups={groups}")
    w_shape = (cs[1], xs[1] // groups, *kernel_size)
    want = _conv_out_shape(name, xs, w_shape, stride, padding, dilation, groups)
    if tuple(cs) != want:
        raise ShapeError(f"{name}: cotangent shape {cs} is not conv2d's output {want}")
    return ShapeDtype(w_shape, dtype)


# ------------------------------------------------------------------------ vmap rules
# The mapped axis B is in front of each batched value (fgrad/ops/_batch.py). No loops:
# mapped images fold into the image batch N. A mapped filter (or cotangent) becomes B
# times the channels: B * groups groups when both operands are mapped, or, when the other
# operand is shared, B times the channels within each group, so nothing shared is copied.


def _fold(x):
    """``(B, N, ...)`` as ``(B * N, ...)``."""
    s = shape_of(x)
    return reshape(x, shape=(s[0] * s[1], *s[2:]))


def _unfold(x, size: int):
    """``(B * N, ...)`` as ``(B, N, ...)``."""
    s = shape_of(x)
    return reshape(x, shape=(size, s[0] // size, *s[1:]))


def _channels_in(x):
    """Images ``(B, N, C, h, w)`` as ``(N, B * C, h, w)``, channels ordered ``(b, c)``: with
    ``B * groups`` groups, example ``b``'s channels form groups of their own."""
    b, n, c, h, w = shape_of(x)
    return reshape(permute_dims(x, axes=(1, 0, 2, 3, 4)), shape=(n, b * c, h, w))


def _channels_out(y, size: int):
    """Inverse of :func:`_channels_in`: ``(N, B * C, h, w)`` as ``(B, N, C, h, w)``."""
    n, bc, h, w = shape_of(y)
    return permute_dims(reshape(y, shape=(n, size, bc // size, h, w)), axes=(1, 0, 2, 3, 4))


def _group_major(a, groups: int, axis: int):
    """Batched ``a`` ``(B, ...)`` with its channel axis ``axis`` (counted without ``B``)
    merged with ``B``: ``B * C`` channels ordered ``(group, b, channel within the group)``,
    so that each of ``groups`` groups holds its channels of every example."""
    s = shape_of(a)
    size, c = s[0], s[axis + 1]
    before, after = s[1 : axis + 1], s[axis + 2 :]
    split = reshape(a, shape=(size, *before, groups, c // groups, *after))
    order = (*range(1, axis + 2), 0, *range(axis + 2, len(s) + 1))
    return reshape(permute_dims(split, axes=order), shape=(*before, size * c, *after))


def _group_major_out(y, size: int, groups: int, axis: int):
    """Inverse of :func:`_group_major`: axis ``axis`` of ``y`` (``(group, b, c)``) split
    into ``B`` (moved in front) and ``groups * c``."""
    s = shape_of(y)
    c = s[axis] // (groups * size)
    before, after = s[:axis], s[axis + 1 :]
    split = reshape(y, shape=(*before, groups, size, c, *after))
    order = (axis + 1, *range(axis + 1), *range(axis + 2, len(s) + 2))
    return reshape(permute_dims(split, axes=order), shape=(size, *before, groups * c, *after))


def _filters_in(w):
    """Mapped filters ``(B, O, C/G, kh, kw)`` as one ``(O, B * C/G, kh, kw)`` filter whose
    input channels within each group are ordered ``(b, c)`` (``_group_major``'s layout)."""
    b, o, cg, kh, kw = shape_of(w)
    return reshape(permute_dims(w, axes=(1, 0, 2, 3, 4)), shape=(o, b * cg, kh, kw))


def _filters_in_out(y, size: int):
    """Inverse of :func:`_filters_in`: ``(O, B * C/G, kh, kw)`` as ``(B, O, C/G, kh, kw)``."""
    o, bcg, kh, kw = shape_of(y)
    return permute_dims(reshape(y, shape=(o, size, bcg // size, kh, kw)), axes=(1, 0, 2, 3, 4))


def _no_examples(op, args, dims, params):
    """The (empty) result of a batch of zero examples, whose folded shapes would lose the
    other axes (``0 * N`` hides ``N``) and whose groups would number zero."""
    examples = [
        ShapeDtype(tuple(shape_of(a)[d is not None :]), dtype_of(a)) for a, d in zip(args, dims)
    ]
    out = op.abstract_eval(*examples, **params)
    mapped = next(a for a, d in zip(args, dims) if d is not None)
    empty = full_like(mapped, fill_value=0, dtype=out.dtype)
    return reshape(empty, shape=(0, *out.shape)), 0


def _batched_rule(rule):
    """``rule`` with the zero-example batch answered by :func:`_no_examples`."""

    def batch(op, args, dims, **params):
        if batch_size(args, dims) == 0:
            return _no_examples(op, args, dims, params)
        return rule(op, args, dims, **params)

    batch.__name__ = batch.__qualname__ = rule.__name__
    batch.__doc__ = rule.__doc__
    return batch


def _image_filter_rule(name: str, filters_for_shared_image, doc: str):
    """The vmap rule of an op of ``(image-like, filter)`` (conv2d, and conv2d_backprop_input
    with the cotangent as the image): a shared filter folds the mapped axis into the image
    batch N, a shared image takes the mapped filters as more output channels (laid out by
    ``filters_for_shared_image(w, groups)``), and both mapped become grouped convolutions."""

    def rule(op, args, dims, *, groups, **p):
        x, w = args
        dx, dw = dims
        size = batch_size(args, dims)
        if dw is None:
            return _unfold(op(_fold(x), w, groups=groups, **p), size), 0
        if dx is None:  # output channels (group, b, o)
            y = op(x, filters_for_shared_image(w, groups), groups=groups, **p)
            return _group_major_out(y, size, groups, 1), 0
        y = op(_channels_in(x), _fold(w), groups=size * groups, **p)
        return _channels_out(y, size), 0

    rule.__name__ = rule.__qualname__ = name
    rule.__doc__ = doc
    return _batched_rule(rule)


_conv_batch = _image_filter_rule(
    "_conv_batch", lambda w, groups: _group_major(w, groups, 0), "vmap rule of conv2d."
)
_backprop_input_batch = _image_filter_rule(
    "_backprop_input_batch",
    lambda w, groups: _filters_in(w),  # input channels (group, b, c)
    "vmap rule of conv2d_backprop_input (the adjoint of conv2d's rule in ``x``).",
)


@_batched_rule
def _backprop_filter_batch(op, args, dims, *, kernel_size, stride, padding, dilation, groups):
    """vmap rule of conv2d_backprop_filter (the adjoint of conv2d's rule in ``w``)."""
    x, ct = args
    dx, dct = dims
    size = batch_size(args, dims)
    p = {"kernel_size": kernel_size, "stride": stride, "padding": padding, "dilation": dilation}
    if dct is None:  # input channels (group, b, c)
        y = op(_group_major(x, groups, 1), ct, groups=groups, **p)
        return _filters_in_out(y, size), 0
    if dx is None:  # output channels (group, b, o)
        y = op(x, _group_major(ct, groups, 1), groups=groups, **p)
        return _group_major_out(y, size, groups, 0), 0
    y = op(_channels_in(x), _channels_in(ct), groups=size * groups, **p)
    return _unfold(y, size), 0


@_batched_rule
def _pool_batch(op, args, dims, **params):
    """vmap rule of the pooling ops: the examples' images are one larger image batch."""
    size = batch_size(args, dims)
    out = op(*[_fold(with_batch(a, d, size)) for a, d in zip(args, dims)], **params)
    return _unfold(out, size), 0


# ------------------------------------------------------------------------ the conv family


def _case(stride, padding, dilation, groups=2, **size):
    """One ``Check`` parameter case of the conv family (``size``: its ``input_size`` or
    ``kernel_size``); written once so each case fits on one line."""
    return {**size, "stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


def _conv_vjp_x(ct, out, x, w, **p):
    return conv2d_backprop_input(ct, w, input_size=tuple(x.shape[2:]), **p)


def _conv_vjp_w(ct, out, x, w, **p):
    return conv2d_backprop_filter(x, ct, kernel_size=tuple(w.shape[2:]), **p)


conv2d = defop(
    "conv2d",
    kernel=_conv_kernel,
    aval=_conv_aval,
    jvp=(
        lambda t, out, x, w, **p: conv2d(t, w, **p),
        lambda t, out, x, w, **p: conv2d(x, t, **p),
    ),
    batch=_conv_batch,
    vjp=(_conv_vjp_x, _conv_vjp_w),
    check=Check(
        shapes=(((2, 4, 5, 6), (6, 2, 3, 2)),),
        params=(
            _case(stride=(1, 1), padding=((1, 1), (0, 1)), dilation=(1, 1)),
            _case(stride=(2, 1), padding=((0, 0), (0, 0)), dilation=(1, 2)),
            _case(stride=(1, 2), padding=((2, 1), (1, 0)), dilation=(2, 1)),
        ),
    ),
    doc="""2-D cross-correlation of NCHW images with OIHW filters (a convolution layer).

    ``out[n, o, i, j] = sum_{c, p, q} x_pad[n, g*C_g + c, i*sh + p*dh, j*sw + q*dw] *
    w[o, c, p, q]`` where ``g = o // (out_channels // groups)``; no filter flip, as in
    PyTorch's ``conv2d`` and JAX's ``conv_general_dilated``.

    Args:
        x: ``(batch, in_channels, height, width)`` real or complex floating Tensor.
        w: ``(out_channels, in_channels // groups, kh, kw)`` Tensor.
        stride: ``(sh, sw)`` positive ints.
        padding: ``((top, bottom), (left, right))`` non-negative ints of zero padding.
        dilation: ``(dh, dw)`` positive ints; spacing between filter taps.
        groups: positive int dividing ``in_channels`` and ``out_channels``.

    Returns:
        ``(batch, out_channels, out_height, out_width)`` Tensor, dtype
        ``result_type(x, w)``, with ``out_height = (height + top + bottom - dh*(kh-1) - 1)
        // sh + 1`` (likewise ``out_width``).

    Raises:
        ShapeError: inputs are not 4-D, channel counts disagree with ``groups``, the filter
            does not fit, or a parameter is out of range.
        DTypeError: a bool input.

    Example:
        >>> x = fnp.reshape(fnp.arange(9.0), (1, 1, 3, 3))
        >>> p = dict(stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> fgrad.ops.conv.conv2d(x, fnp.ones((1, 1, 2, 2)), **p)
        Tensor([[[[ 8., 12.],
                  [20., 24.]]]], dtype=float64)

    References:
        Dumoulin and Visin, "A guide to convolution arithmetic for deep learning", 2016,
        arXiv:1603.07285 (output sizes, transposed convolution).
    """,
)

conv2d_backprop_input = defop(
    "conv2d_backprop_input",
    kernel=_backprop_input_kernel,
    aval=_backprop_input_aval,
    jvp=(
        lambda t, out, ct, w, **p: conv2d_backprop_input(t, w, **p),
        lambda t, out, ct, w, **p: conv2d_backprop_input(ct, t, **p),
    ),
    batch=_backprop_input_batch,
    vjp=(
        lambda g, out, ct, w, *, input_size, **p: conv2d(g, w, **p),
        lambda g, out, ct, w, *, input_size, **p: conv2d_backprop_filter(
            g, ct, kernel_size=tuple(w.shape[2:]), **p
        ),
    ),
    check=Check(
        shapes=(((2, 4, 3, 3), (4, 2, 3, 3)),),
        params=(
            _case(input_size=(5, 5), stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1)),
            _case(input_size=(6, 6), stride=(2, 2), padding=((1, 0), (0, 1)), dilation=(1, 1)),
            _case(input_size=(7, 5), stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(2, 1)),
            _case(input_size=(7, 9), stride=(2, 3), padding=((0, 0), (1, 0)), dilation=(1, 1)),
        ),
    ),
    doc="""Transposed convolution: the adjoint of ``x -> conv2d(x, w)`` (the gradient w.r.t. ``x``).

    ``<conv2d_backprop_input(ct, w), u> == <ct, conv2d(u, w)>`` for every ``u`` of the input
    shape. With ``stride > 1`` it is the "fractionally strided" (transposed) convolution.

    Args:
        ct: ``(batch, out_channels, out_height, out_width)`` Tensor (a conv2d output shape).
        w: ``(out_channels, in_channels // groups, kh, kw)`` Tensor.
        input_size: ``(height, width)`` of the convolution's input; needed because with
            strides several input sizes give the same output size.
        stride, padding, dilation, groups: as in :func:`conv2d`.

    Returns:
        ``(batch, in_channels, height, width)`` Tensor, dtype ``result_type(ct, w)``.

    Raises:
        ShapeError: ``ct`` is not the output shape of a conv2d with these parameters.
        DTypeError: a bool input.

    Example:
        >>> p = dict(stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> fgrad.ops.conv.conv2d_backprop_input(
        ...     fnp.ones((1, 1, 2, 2)), fnp.ones((1, 1, 2, 2)), input_size=(3, 3), **p)
        Tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]], dtype=float64)

    References:
        Dumoulin and Visin, "A guide to convolution arithmetic for deep learning", 2016,
        arXiv:1603.07285, section 4.
    """,
)

conv2d_backprop_filter = defop(
    "conv2d_backprop_filter",
    kernel=_backprop_filter_kernel,
    aval=_backprop_filter_aval,
    jvp=(
        lambda t, out, x, ct, **p: conv2d_backprop_filter(t, ct, **p),
        lambda t, out, x, ct, **p: conv2d_backprop_filter(x, t, **p),
    ),
    batch=_backprop_filter_batch,
    vjp=(
        lambda g, out, x, ct, *, kernel_size, **p: conv2d_backprop_input(
            ct, g, input_size=tuple(x.shape[2:]), **p
        ),
        lambda g, out, x, ct, *, kernel_size, **p: conv2d(x, g, **p),
    ),
    check=Check(
        shapes=(((2, 4, 6, 5), (2, 4, 4, 3)),),
        params=(
            _case(kernel_size=(3, 3), stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1)),
            _case(kernel_size=(2, 3), stride=(2, 2), padding=((1, 1), (1, 1)), dilation=(1, 1)),
            _case(kernel_size=(2, 2), stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(2, 2)),
        ),
    ),
    doc="""The adjoint of ``w -> conv2d(x, w)`` (the gradient of a convolution w.r.t. its filter).

    ``<conv2d_backprop_filter(x, ct), u> == <ct, conv2d(x, u)>`` for every ``u`` of the
    filter shape.

    Args:
        x: ``(batch, in_channels, height, width)`` Tensor, the convolution's input.
        ct: ``(batch, out_channels, out_height, out_width)`` Tensor (a conv2d output shape).
        kernel_size: ``(kh, kw)`` of the filter.
        stride, padding, dilation, groups: as in :func:`conv2d`.

    Returns:
        ``(out_channels, in_channels // groups, kh, kw)`` Tensor, dtype
        ``result_type(x, ct)``.

    Raises:
        ShapeError: ``ct`` is not the output shape of a conv2d with these parameters.
        DTypeError: a bool input.

    Example:
        >>> p = dict(stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1)
        >>> x = fnp.reshape(fnp.arange(9.0), (1, 1, 3, 3))
        >>> fgrad.ops.conv.conv2d_backprop_filter(x, fnp.ones((1, 1, 2, 2)), kernel_size=(2, 2), **p)
        Tensor([[[[ 8., 12.],
                  [20., 24.]]]], dtype=float64)
    """,
)


# ------------------------------------------------------------------------ max pooling


def _lowest(xp, dtype):
    # Padding never wins a window: -inf for floats, the smallest value for integers.
    # (xp.isdtype is the Array API test; namespaces without it use numpy dtypes.)
    isdtype = getattr(xp, "isdtype", None)
    floating = isdtype(dtype, "real floating") if isdtype else np.issubdtype(dtype, np.floating)
    return -float("inf") if floating else xp.iinfo(dtype).min


def _pool_geometry(x_shape, window, stride, padding):
    kh, kw = window
    oh = conv_out_size(x_shape[2], kh, stride[0], padding[0], 1)
    ow = conv_out_size(x_shape[3], kw, stride[1], padding[1], 1)
    return kh, kw, oh, ow


def _pool_windows(xp, x, fill, window, stride, padding):
    """``(n, c, kh*kw, oh, ow)`` windows of ``x`` with padding ``fill``."""
    kh, kw, oh, ow = _pool_geometry(x.shape, window, stride, padding)
    if oh < 1 or ow < 1:  # replaced by the shape rule's ShapeError (as in _conv_kernel)
        raise ValueError("pooling window does not fit")
    return _windows(xp, _pad(xp, x, padding, fill), kh, kw, oh, ow, stride, (1, 1), axis=2)


def _pool_choice(xp, x, window, stride, padding):
    """One-hot ``(n, c, kh*kw, oh, ow)`` mask of each window's first maximum."""
    wins = _pool_windows(xp, x, _lowest(xp, x.dtype), window, stride, padding)
    first = xp.argmax(wins, axis=2, keepdims=True)  # Array API: first occurrence on ties
    taps = xp.reshape(xp.arange(wins.shape[2], dtype=first.dtype), (1, 1, wins.shape[2], 1, 1))
    return taps == first


def _check_window(window, stride) -> None:
    """Eager kernels skip the shape rule: refuse windows and strides below 1 here too (the
    ValueError is replaced by the rule's ShapeError, fgrad.core.op._explain)."""
    if min(*window, *stride) < 1:
        raise ValueError("pool: windows and strides must be positive")


def _max_pool_kernel(xp, x, *, window, stride, padding):
    _check_window(window, stride)
    wins = _pool_windows(xp, x, _lowest(xp, x.dtype), window, stride, padding)
    return xp.max(wins, axis=2)


def _gather_kernel(xp, t, x, *, window, stride, padding):
    mask = xp.astype(_pool_choice(xp, x, window, stride, padding), t.dtype)
    return xp.sum(_pool_windows(xp, t, 0, window, stride, padding) * mask, axis=2)


def _scatter_kernel(xp, ct, x, *, window, stride, padding):
    mask = _pool_choice(xp, x, window, stride, padding)
    n, c, h, w = x.shape
    kh, kw = window
    cols = xp.astype(mask, ct.dtype) * xp.expand_dims(ct, axis=2)  # (n, c, k, oh, ow)
    cols = xp.permute_dims(cols, (1, 2, 0, 3, 4))  # the (c, k, n, oh, ow) layout of _col2im
    return _col2im(xp, cols, n, c, h, w, kh, kw, stride, padding, (1, 1))


def _pool_out_shape(name, x, window, stride, padding):
    xs = shape_of(x)
    if len(xs) != 4:
        raise ShapeError(f"{name}: needs a 4-D (batch, channels, height, width) input, got {xs}")
    _check_params(name, stride, padding, (1, 1))
    if min(window) < 1 or any(p > k // 2 for p, k in zip(map(max, padding), window)):
        raise ShapeError(
            f"{name}: window {window} with padding {padding}: windows must be positive and "
            "padding at most half the window on each side (so no window is all padding)"
        )
    _, _, oh, ow = _pool_geometry(xs, window, stride, padding)
    if oh < 1 or ow < 1:
        raise ShapeError(
            f"{name}: window {window} does not fit the {xs[2]}x{xs[3]} input (padding "
            f"{tuple(padding)}); the input is read as NCHW (batch, channels, height, width), "
            "so a channels-last (NHWC) input needs x.transpose(0, 3, 1, 2) first"
        )
    return (xs[0], xs[1], oh, ow)


def _max_pool_aval(x, *, window, stride, padding):
    dtype = np.dtype(x.dtype)
    if not (dtypes.is_floating(dtype) or dtypes.is_integer(dtype)):
        raise DTypeError(f"max_pool2d: needs a real input, got {ShapeDtype(shape_of(x), dtype)}")
    return ShapeDtype(_pool_out_shape("max_pool2d", x, window, stride, padding), dtype)


def _gather_aval(t, x, *, window, stride, padding):
    if shape_of(t) != shape_of(x):
        raise ShapeError(f"max_pool2d_gather: t {shape_of(t)} and x {shape_of(x)} differ in shape")
    shape = _pool_out_shape("max_pool2d_gather", x, window, stride, padding)
    return ShapeDtype(shape, np.dtype(t.dtype))


def _scatter_aval(ct, x, *, window, stride, padding):
    want = _pool_out_shape("max_pool2d_scatter", x, window, stride, padding)
    if shape_of(ct) != want:
        raise ShapeError(f"max_pool2d_scatter: cotangent {shape_of(ct)} is not the pooled {want}")
    return ShapeDtype(shape_of(x), np.dtype(ct.dtype))


def _distinct(rng, shapes):
    # Values 0.1 apart: no ties, and finite differences never move a window's maximum.
    out = []
    for s in shapes:
        size = int(np.prod(s))
        out.append((rng.permutation(size).reshape(s) - size / 2) * 0.1)
    return out


def _gather_args(rng, shapes):
    return [rng.uniform(-2, 2, shapes[0]), _distinct(rng, shapes[1:])[0]]


_POOL_PARAMS = (
    {"window": (2, 2), "stride": (2, 2), "padding": ((0, 0), (0, 0))},
    {"window": (3, 3), "stride": (1, 2), "padding": ((1, 1), (1, 0))},
    {"window": (2, 3), "stride": (1, 1), "padding": ((0, 1), (1, 1))},
)

_POOL_DOC_ARGS = """window: ``(kh, kw)`` positive ints.
        stride: ``(sh, sw)`` positive ints.
        padding: ``((top, bottom), (left, right))``, each at most half the window; padded
            positions never win a window."""

max_pool2d = defop(
    "max_pool2d",
    kernel=_max_pool_kernel,
    aval=_max_pool_aval,
    jvp=(lambda t, out, x, **p: max_pool2d_gather(t, x, **p),),
    batch=_pool_batch,
    vjp=(lambda ct, out, x, **p: max_pool2d_scatter(ct, x, **p),),
    check=Check(shapes=(((2, 3, 5, 6),),), params=_POOL_PARAMS, make_args=_distinct),
    doc=f"""Maximum over each ``kh x kw`` window of NCHW images.

    The derivative of a window goes to one element, its first maximum in row-major window
    order (PyTorch's ``max_pool2d`` and JAX's ``reduce_window`` max do the same); tied
    elements elsewhere in the window get zero.

    Args:
        x: ``(batch, channels, height, width)`` real Tensor.
        {_POOL_DOC_ARGS}

    Returns:
        ``(batch, channels, out_height, out_width)`` Tensor of ``x.dtype`` with
        ``out_height = (height + top + bottom - kh) // sh + 1`` (likewise the width).

    Raises:
        ShapeError: ``x`` is not 4-D, the window does not fit, or padding exceeds half the
            window.
        DTypeError: ``x`` is complex or bool.

    Example:
        >>> x = fnp.reshape(fnp.arange(16.0), (1, 1, 4, 4))
        >>> p = dict(window=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)))
        >>> fgrad.ops.conv.max_pool2d(x, **p)
        Tensor([[[[ 5.,  7.],
                  [13., 15.]]]], dtype=float64)
    """,
)

max_pool2d_gather = defop(
    "max_pool2d_gather",
    kernel=_gather_kernel,
    aval=_gather_aval,
    jvp=(lambda t, out, t0, x, **p: max_pool2d_gather(t, x, **p), None),
    batch=_pool_batch,
    vjp=(lambda ct, out, t, x, **p: max_pool2d_scatter(ct, x, **p), None),
    check=Check(
        shapes=(((2, 3, 5, 6), (2, 3, 5, 6)),), params=_POOL_PARAMS, make_args=_gather_args
    ),
    doc=f"""``t`` at each window's first maximum of ``x``: the JVP of :func:`max_pool2d`.

    Linear in ``t``; piecewise constant in ``x`` (so not differentiated in ``x``).

    Args:
        t: ``(batch, channels, height, width)`` Tensor (a tangent of ``x``).
        x: Tensor of the same shape whose windows' maxima choose the elements.
        {_POOL_DOC_ARGS}

    Returns:
        Pooled-shape Tensor of ``t.dtype``.

    Raises:
        ShapeError: ``t`` and ``x`` differ in shape, or the window does not fit.

    Example:
        >>> x = fnp.array([[[[1.0, 3.0], [2.0, 0.0]]]])
        >>> p = dict(window=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)))
        >>> fgrad.ops.conv.max_pool2d_gather(fnp.array([[[[10.0, 20.0], [30.0, 40.0]]]]), x, **p)
        Tensor([[[[20.]]]], dtype=float64)
    """,
)

max_pool2d_scatter = defop(
    "max_pool2d_scatter",
    kernel=_scatter_kernel,
    aval=_scatter_aval,
    jvp=(lambda t, out, ct, x, **p: max_pool2d_scatter(t, x, **p), None),
    batch=_pool_batch,
    vjp=(lambda g, out, ct, x, **p: max_pool2d_gather(g, x, **p), None),
    check=Check(
        shapes=(((2, 3, 5, 6), (2, 3, 5, 6)),),
        params=(_POOL_PARAMS[0],),
        make_args=lambda rng, shapes: [
            rng.uniform(-2, 2, (2, 3, 2, 3)),
            _distinct(rng, shapes[1:])[0],
        ],
    ),
    doc=f"""Add each pooled cotangent to its window's first maximum of ``x``: the VJP of :func:`max_pool2d`.

    The transpose of :func:`max_pool2d_gather` in its first argument. Overlapping windows
    that choose the same element add up.

    Args:
        ct: pooled-shape ``(batch, channels, out_height, out_width)`` Tensor.
        x: ``(batch, channels, height, width)`` Tensor whose windows' maxima choose.
        {_POOL_DOC_ARGS}

    Returns:
        Tensor of ``x.shape`` and ``ct.dtype``.

    Raises:
        ShapeError: ``ct`` is not the pooled shape of ``x``.

    Example:
        >>> x = fnp.array([[[[1.0, 3.0], [2.0, 0.0]]]])
        >>> p = dict(window=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)))
        >>> fgrad.ops.conv.max_pool2d_scatter(fnp.array([[[[5.0]]]]), x, **p)
        Tensor([[[[0., 5.],
                  [0., 0.]]]], dtype=float64)
    """,
)

# ------------------------------------------------------------------------ average pooling


def _avg_divisor(xp, shape, dtype, window, stride, padding, count_include_pad):
    """Elements per window: ``kh * kw``, or only the non-padding ones (``(1, 1, oh, ow)``)."""
    if count_include_pad or padding == ((0, 0), (0, 0)):
        return window[0] * window[1]
    ones = xp.ones((1, 1, shape[2], shape[3]), dtype=dtype)
    return xp.sum(_pool_windows(xp, ones, 0, window, stride, padding), axis=2)


def _avg_pool_kernel(xp, x, *, window, stride, padding, count_include_pad):
    _check_window(window, stride)
    wins = _pool_windows(xp, x, 0, window, stride, padding)
    div = _avg_divisor(xp, x.shape, x.dtype, window, stride, padding, count_include_pad)
    return xp.sum(wins, axis=2) / div


def _avg_pool_transpose_kernel(xp, ct, *, input_size, window, stride, padding, count_include_pad):
    n, c, oh, ow = ct.shape
    div = _avg_divisor(
        xp, (n, c, *input_size), ct.dtype, window, stride, padding, count_include_pad
    )
    k = window[0] * window[1]
    cols = xp.broadcast_to(xp.expand_dims(ct / div, axis=2), (n, c, k, oh, ow))
    cols = xp.permute_dims(cols, (1, 2, 0, 3, 4))
    return _col2im(xp, cols, n, c, *input_size, *window, stride, padding, (1, 1))


def _avg_pool_aval(x, *, window, stride, padding, count_include_pad):
    dtype = np.dtype(x.dtype)
    if not dtypes.is_inexact(dtype):
        raise DTypeError(
            f"avg_pool2d: needs a floating input, got {ShapeDtype(shape_of(x), dtype)}; "
            "cast with astype first"
        )
    return ShapeDtype(_pool_out_shape("avg_pool2d", x, window, stride, padding), dtype)


def _avg_pool_transpose_aval(ct, *, input_size, window, stride, padding, count_include_pad):
    cs = shape_of(ct)
    if np.dtype(ct.dtype).kind not in "fc":
        raise DTypeError(
            f"avg_pool2d_transpose: needs a floating cotangent, got {ShapeDtype(cs, ct.dtype)}"
        )
    x_shape = (*cs[:2], *input_size) if len(cs) == 4 else cs
    want = _pool_out_shape(
        "avg_pool2d_transpose", ShapeDtype(x_shape, ct.dtype), window, stride, padding
    )
    if cs != want:
        raise ShapeError(f"avg_pool2d_transpose: cotangent {cs} is not the pooled shape {want}")
    return ShapeDtype(x_shape, np.dtype(ct.dtype))


def _avg_pool_vjp(ct, out, x, **p):
    return avg_pool2d_transpose(ct, input_size=tuple(x.shape[2:]), **p)


avg_pool2d = defop(
    "avg_pool2d",
    kernel=_avg_pool_kernel,
    aval=_avg_pool_aval,
    jvp=LINEAR,
    batch=_pool_batch,
    vjp=(_avg_pool_vjp,),
    check=Check(
        shapes=(((2, 3, 5, 6),),),
        params=tuple(dict(p, count_include_pad=c) for p in _POOL_PARAMS for c in (True, False))[
            1:5
        ],
    ),
    doc=f"""Mean over each ``kh x kw`` window of NCHW images.

    Args:
        x: ``(batch, channels, height, width)`` real or complex floating Tensor.
        {_POOL_DOC_ARGS.replace("never win a window", "count as zeros")}
        count_include_pad: divide by ``kh * kw`` (True, PyTorch's default) or by the number
            of non-padding elements in the window (False).

    Returns:
        ``(batch, channels, out_height, out_width)`` Tensor of ``x.dtype`` with
        ``out_height = (height + top + bottom - kh) // sh + 1`` (likewise the width).

    Raises:
        ShapeError: ``x`` is not 4-D, the window does not fit, or padding exceeds half the
            window.
        DTypeError: ``x`` is not floating.

    Example:
        >>> x = fnp.reshape(fnp.arange(16.0), (1, 1, 4, 4))
        >>> p = dict(window=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)))
        >>> fgrad.ops.conv.avg_pool2d(x, count_include_pad=True, **p)
        Tensor([[[[ 2.5,  4.5],
                  [10.5, 12.5]]]], dtype=float64)
    """,
)

avg_pool2d_transpose = defop(
    "avg_pool2d_transpose",
    kernel=_avg_pool_transpose_kernel,
    aval=_avg_pool_transpose_aval,
    jvp=LINEAR,
    batch=_pool_batch,
    vjp=(lambda g, out, ct, *, input_size, **p: avg_pool2d(g, **p),),
    check=Check(
        shapes=(((2, 3, 3, 3),),),
        params=(
            {
                "input_size": (6, 6),
                "window": (2, 2),
                "stride": (2, 2),
                "padding": ((0, 0), (0, 0)),
                "count_include_pad": True,
            },
            {
                "input_size": (3, 6),
                "window": (3, 3),
                "stride": (1, 2),
                "padding": ((1, 1), (1, 0)),
                "count_include_pad": False,
            },
            {
                "input_size": (4, 3),
                "window": (2, 3),
                "stride": (1, 1),
                "padding": ((0, 0), (1, 1)),
                "count_include_pad": False,
            },
        ),
    ),
    doc=f"""The adjoint of :func:`avg_pool2d`: spread each pooled value evenly over its window.

    Args:
        ct: pooled-shape ``(batch, channels, out_height, out_width)`` floating Tensor.
        input_size: ``(height, width)`` of the pooling's input.
        {_POOL_DOC_ARGS.replace("never win a window", "count as zeros")}
        count_include_pad: as in :func:`avg_pool2d`.

    Returns:
        ``(batch, channels, height, width)`` Tensor of ``ct.dtype``.

    Raises:
        ShapeError: ``ct`` is not the pooled shape for ``input_size``.

    Example:
        >>> p = dict(window=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)))
        >>> fgrad.ops.conv.avg_pool2d_transpose(
        ...     fnp.array([[[[4.0]]]]), input_size=(2, 3), count_include_pad=True, **p)
        Tensor([[[[1., 1., 0.],
                  [1., 1., 0.]]]], dtype=float64)
    """,
)
