"""vmap through the linalg and conv ops: the shared/mapped combinations and example ranks
the registry sweep (test_vmap_registry.py) does not reach, in_axes other than 0, and
vmap composed with grad and jit. Every check compares with the per-example loop."""

from __future__ import annotations

import re
from functools import partial

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import conv, linalg

B = 3


def _rng(seed=0):
    return np.random.default_rng(seed)


def _loop(f, args, in_axes):
    """Stack ``f`` over the examples: mapped args sliced along their axis, others shared."""
    outs = []
    for k in range(B):
        ex = [a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, in_axes)]
        outs.append(f(*[fnp.asarray(e) for e in ex]))
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def _batched(shape, axis, rng):
    """An array for one argument: a mapped axis of size B inserted at ``axis``."""
    if axis is None:
        return rng.standard_normal(shape)
    full = list(shape)
    full.insert(axis % (len(shape) + 1), B)
    return rng.standard_normal(full)


def _assert_vmap_matches(f, args, in_axes, rtol=1e-10, atol=1e-12):
    got = fgrad.vmap(f, in_axes=in_axes)(*[fnp.asarray(a) for a in args])
    want = _loop(f, args, in_axes)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert np.asarray(g).shape == w.shape
            np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=atol)
    else:
        assert np.asarray(got).shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------ matmul

# Example shapes of every rank pattern: vector/matrix/stack on either side, stacks that
# broadcast (a shared stack longer than the mapped one, and the other way round).
_MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 2)),
    ((3,), (4, 3, 2)),
    ((2, 3), (3,)),
    ((4, 2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((3, 2, 3), (2, 1, 3, 4)),
]
_PATTERNS = [(0, 0), (0, None), (None, 0), (-1, 0), (1, None), (None, -1)]


@pytest.mark.parametrize("shapes", _MATMUL_SHAPES, ids=str)
def test_matmul_every_rank_and_mapping(shapes):
    rng = _rng(1)
    for axes in _PATTERNS:
        args = [_batched(s, a, rng) for s, a in zip(shapes, axes)]
        _assert_vmap_matches(fnp.matmul, args, axes)
        _assert_vmap_matches(lambda x, y: x @ y, args, axes)


def test_shared_operands_give_one_product():
    # A mapped stack times a shared matrix folds the batch into the rows, and mapped
    # right-hand sides of a shared matrix are the columns of one solve: the traced graph
    # holds one 2-D matmul (one solve), not a stack of B small ones.
    rng = _rng(2)
    x, w = fnp.asarray(rng.standard_normal((B, 4, 2, 3))), fnp.asarray(rng.standard_normal((3, 5)))
    for f, args in [
        (fgrad.vmap(lambda a: a @ w), (x,)),
        (fgrad.vmap(lambda v: w.T @ v), (x[:, 0, 0],)),
        (fgrad.vmap(lambda v: fnp.linalg.solve(w @ w.T, v)), (x[:, 0, 0],)),
    ]:
        text = str(fgrad.make_graph(f)(*args))
        products = [line for line in text.splitlines() if re.search(r"= (matmul|solve) ", line)]
        assert len(products) == 1, text
        for line in products:  # results of rank 2: no stack of products
            assert re.search(r":f64\[\d+,\d+\] =", line), text


def test_matmul_complex_dot_does_not_conjugate():
    rng = _rng(3)
    x = rng.standard_normal((B, 3)) + 1j * rng.standard_normal((B, 3))
    y = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    _assert_vmap_matches(fnp.matmul, [y, x], (None, 0))
    _assert_vmap_matches(fnp.matmul, [x, y], (0, None))


def test_matmul_float32_stays_float32():
    rng = _rng(4)
    x = rng.standard_normal((B, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2)).astype(np.float32)
    out = fgrad.vmap(fnp.matmul, in_axes=(0, None))(fnp.asarray(x), fnp.asarray(w))
    assert out.dtype == np.float32 and out.shape == (B, 4, 2)


# ------------------------------------------------------------------------ einsum, norms, diagonals


@pytest.mark.parametrize(
    "spec, shapes",
    [
        ("ij,jk->ik", ((2, 3), (3, 4))),
        ("ii->", ((3, 3),)),
        ("i->i", ((3,),)),
        ("ai->aii", ((2, 3),)),
        ("ij,ij->i", ((2, 3), (2, 3))),
        ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
        ("ij,j", ((2, 3), (3,))),
        ("...ij,...jk", ((5, 2, 3), (5, 3, 4))),
    ],
)
def test_einsum_mapped_and_shared(spec, shapes):
    rng = _rng(5)
    n = len(shapes)
    for axes in {(0,) * n, (None,) * (n - 1) + (0,), (0,) + (None,) * (n - 1), (1,) * n}:
        if all(a is None for a in axes):
            continue
        args = [_batched(s, a, rng) for s, a in zip(shapes, axes)]
        out = spec.split("->")[-1] if "->" in spec else ""
        if len(set(out)) == len(out):  # fnp.einsum (numpy's) rejects repeated output indices
            _assert_vmap_matches(lambda *xs: fnp.einsum(spec, *xs), args, axes)
        if "->" in spec and "." not in spec:  # the op itself takes them ("a->aa")
            _assert_vmap_matches(lambda *xs: linalg.einsum(*xs, subscripts=spec), args, axes)


def test_vector_norm_axes_and_diagonals():
    rng = _rng(6)
    x = rng.standard_normal((3, B, 4))  # mapped axis 1
    for ord_ in (2, 1, np.inf, 0.5):
        for axis in (None, 0, -1, (0, 1)):
            f = partial(fnp.linalg.vector_norm, ord=ord_, axis=axis)
            _assert_vmap_matches(f, [x], (1,))
    m = rng.standard_normal((B, 3, 4))
    for k in (-1, 0, 2):
        _assert_vmap_matches(partial(fnp.tril, k=k), [m], (0,))
        _assert_vmap_matches(partial(fnp.linalg.diagonal, offset=k), [m], (0,))
    d = rng.standard_normal((3, B))
    _assert_vmap_matches(lambda v: linalg.diag_embed(v, offset=1, n=3, m=4), [d], (-1,))


# ------------------------------------------------------------------------ stacked linalg


def _spd(rng, shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize(
    "name, f",
    [
        ("inv", fnp.linalg.inv),
        ("det", fnp.linalg.det),
        ("slogdet", lambda a: tuple(fnp.linalg.slogdet(a))),
        ("cholesky", fnp.linalg.cholesky),
        ("eigh_w", lambda a: fnp.linalg.eigh(a)[0]),
        ("eigvalsh", fnp.linalg.eigvalsh),
        ("qr_r_abs", lambda a: fnp.abs(fnp.linalg.qr(a)[1])),
        ("svdvals", fnp.linalg.svdvals),
        ("svd_s", lambda a: fnp.linalg.svd(a)[1]),
        ("pinv", fnp.linalg.pinv),
    ],
)
def test_stacked_linalg_mapped_axis_anywhere(name, f):
    # Symmetric positive-definite examples, each a stack of 2; the mapped axis sits between
    # the matrix axes (in_axes=2) and in front.
    rng = _rng(7)
    a_front = _spd(rng, (B, 2, 3, 3))
    _assert_vmap_matches(f, [a_front], (0,), rtol=1e-8, atol=1e-10)
    _assert_vmap_matches(f, [np.moveaxis(a_front, 0, 2)], (2,), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((3, 3), (3,)), ((3, 3), (3, 2)), ((4, 3, 3), (3,)), ((4, 3, 3), (3, 2)), ((3, 3), (4, 3, 2))],
)
def test_solve_vector_and_matrix_right_hand_sides(a_shape, b_shape):
    # A mapped (n,) right-hand side stays one vector per example (never a stack of vectors),
    # and a shared matrix is solved once for all the examples' columns.
    rng = _rng(8)
    for axes in [(0, 0), (None, 0), (0, None), (-1, 1), (None, -1)]:
        a = _batched(a_shape, axes[0], rng)
        a = a + 4 * _eye_at(a.shape, axes[0])
        b = _batched(b_shape, axes[1], rng)
        _assert_vmap_matches(fnp.linalg.solve, [a, b], axes, rtol=1e-9, atol=1e-11)


def _eye_at(shape, axis):
    """An identity on the two matrix axes of a batched array (mapped axis ``axis``)."""
    ex = [d for i, d in enumerate(shape) if axis is None or i != axis % len(shape)]
    eye = np.broadcast_to(np.eye(ex[-1]), ex)
    return eye if axis is None else np.expand_dims(eye, axis % len(shape))


# ------------------------------------------------------------------------ conv and pooling

_CONV_PARAMS = [
    {"stride": (1, 1), "padding": ((1, 1), (0, 1)), "dilation": (1, 1), "groups": 1},
    {"stride": (2, 1), "padding": ((0, 0), (0, 0)), "dilation": (1, 2), "groups": 2},
]
_MAPPINGS = [(0, 0), (0, None), (None, 0), (1, -1)]


@pytest.mark.parametrize("p", _CONV_PARAMS, ids=["g1", "g2"])
def test_conv_family_every_mapping(p):
    rng = _rng(9)
    g = p["groups"]
    x_shape, w_shape = (2, 4, 5, 6), (6, 4 // g, 3, 2)
    out_shape = tuple(np.asarray(conv.conv2d(fnp.zeros(x_shape), fnp.zeros(w_shape), **p)).shape)
    for axes in _MAPPINGS:
        x, w = _batched(x_shape, axes[0], rng), _batched(w_shape, axes[1], rng)
        _assert_vmap_matches(lambda a, b: conv.conv2d(a, b, **p), [x, w], axes)
        ct = _batched(out_shape, axes[0], rng)
        _assert_vmap_matches(
            lambda c, b: conv.conv2d_backprop_input(c, b, input_size=x_shape[2:], **p),
            [ct, w],
            axes,
        )
        ct = _batched(out_shape, axes[1], rng)
        _assert_vmap_matches(
            lambda a, c: conv.conv2d_backprop_filter(a, c, kernel_size=w_shape[2:], **p),
            [x, ct],
            axes,
        )


def test_pooling_mapped_and_shared():
    rng = _rng(10)
    p = {"window": (3, 3), "stride": (1, 2), "padding": ((1, 1), (1, 0))}
    x = rng.permutation(B * 2 * 3 * 5 * 6).reshape(2, B, 3, 5, 6) * 0.1  # mapped axis 1, no ties
    _assert_vmap_matches(lambda a: conv.max_pool2d(a, **p), [x], (1,))
    _assert_vmap_matches(lambda a: conv.avg_pool2d(a, count_include_pad=False, **p), [x], (1,))
    x0 = x[:, 0]
    pooled = np.asarray(conv.max_pool2d(fnp.asarray(x0), **p)).shape
    t = rng.standard_normal((B, *x0.shape))
    for axes in [(0, 1), (0, None), (None, 1)]:
        args = [t if axes[0] is not None else t[0], x if axes[1] is not None else x0]
        _assert_vmap_matches(lambda a, b: conv.max_pool2d_gather(a, b, **p), args, axes)
    ct = rng.standard_normal((B, *pooled))
    for axes in [(0, 1), (0, None), (None, 1)]:
        args = [ct if axes[0] is not None else ct[0], x if axes[1] is not None else x0]
        _assert_vmap_matches(lambda a, b: conv.max_pool2d_scatter(a, b, **p), args, axes)
    _assert_vmap_matches(
        lambda c: conv.avg_pool2d_transpose(c, input_size=(5, 6), count_include_pad=True, **p),
        [ct],
        (0,),
    )


# ------------------------------------------------------------------------ composition


def _skip_if_missing_rule(fn):
    """Run ``fn``; skip (naming the op) when another family's op has no batching rule yet."""
    try:
        return fn()
    except NotImplementedError as e:
        if "no batching rule" in str(e):
            pytest.skip(f"waiting for another family's rule: {e}")
        raise


def _mlp_loss(params, x, y):
    w1, b1, w2 = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.sum((h @ w2 - y) ** 2)


def test_per_example_gradients_of_an_mlp():
    rng = _rng(11)
    params = tuple(fnp.asarray(rng.standard_normal(s)) for s in ((4, 5), (5,), (5, 2)))
    xs, ys = rng.standard_normal((B, 4)), rng.standard_normal((B, 2))
    got = _skip_if_missing_rule(
        lambda: fgrad.vmap(fgrad.grad(_mlp_loss), in_axes=(None, 0, 0))(
            params, fnp.asarray(xs), fnp.asarray(ys)
        )
    )
    for k in range(B):
        want = fgrad.grad(_mlp_loss)(params, fnp.asarray(xs[k]), fnp.asarray(ys[k]))
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g)[k], np.asarray(w), rtol=1e-10, atol=1e-12)


def test_per_example_gradients_of_a_convnet_and_jit():
    rng = _rng(12)
    p = {"stride": (1, 1), "padding": ((1, 1), (1, 1)), "dilation": (1, 1), "groups": 1}
    pool = {"window": (2, 2), "stride": (2, 2), "padding": ((0, 0), (0, 0))}

    def loss(w, x):
        h = conv.conv2d(x, w, **p)
        return fnp.sum(conv.max_pool2d(fnp.tanh(h), **pool) ** 2)

    w = fnp.asarray(rng.standard_normal((3, 2, 3, 3)))
    xs = fnp.asarray(rng.standard_normal((B, 1, 2, 4, 4)))  # one image per example
    per_example = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0))
    got = _skip_if_missing_rule(lambda: per_example(w, xs))
    jitted = fgrad.jit(per_example)(w, xs)
    for k in range(B):
        want = np.asarray(fgrad.grad(loss)(w, xs[k]))
        np.testing.assert_allclose(np.asarray(got)[k], want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(jitted)[k], want, rtol=1e-10, atol=1e-12)
    # Per-example filters too (a mapped filter runs as a grouped convolution).
    ws = fnp.asarray(rng.standard_normal((B, 3, 2, 3, 3)))
    got = _skip_if_missing_rule(lambda: fgrad.vmap(fgrad.grad(loss))(ws, xs))
    for k in range(B):
        want = np.asarray(fgrad.grad(loss)(ws[k], xs[k]))
        np.testing.assert_allclose(np.asarray(got)[k], want, rtol=1e-10, atol=1e-12)


def test_grad_of_vmap_and_vmap_of_jvp_through_linalg():
    rng = _rng(13)
    a = fnp.asarray(_spd(rng, (B, 3, 3)))
    b = fnp.asarray(rng.standard_normal((B, 3)))

    def f(a, b):
        x = fnp.linalg.solve(a, b)
        return fnp.sum(x * (a @ x)) + fnp.linalg.slogdet(a)[1]

    def total(a, b):
        return fnp.sum(fgrad.vmap(f)(a, b))

    ga, gb = _skip_if_missing_rule(lambda: fgrad.grad(total, argnums=(0, 1))(a, b))
    for k in range(B):
        wa, wb = fgrad.grad(f, argnums=(0, 1))(a[k], b[k])
        np.testing.assert_allclose(np.asarray(ga)[k], np.asarray(wa), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(np.asarray(gb)[k], np.asarray(wb), rtol=1e-9, atol=1e-11)
    # vmap of a JVP with a shared matrix and mapped tangents (the columns of a Jacobian).
    a0, b0 = a[0], b[0]
    tangents = fnp.asarray(rng.standard_normal((B, 3)))
    jv = _skip_if_missing_rule(
        lambda: fgrad.vmap(lambda t: fgrad.jvp(lambda v: fnp.linalg.solve(a0, v), (b0,), (t,))[1])(
            tangents
        )
    )
    want = np.linalg.solve(np.asarray(a0), np.asarray(tangents).T).T
    np.testing.assert_allclose(np.asarray(jv), want, rtol=1e-10, atol=1e-12)


def test_vmap_of_vmap_through_matmul():
    rng = _rng(14)
    x = fnp.asarray(rng.standard_normal((2, B, 3)))
    w = fnp.asarray(rng.standard_normal((B, 3, 4)))
    out = fgrad.vmap(fgrad.vmap(fnp.matmul, in_axes=(0, 0)), in_axes=(0, None))(x, w)
    want = np.einsum("abk,bkm->abm", np.asarray(x), np.asarray(w))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


def test_zero_examples():
    # A mapped axis of size 0 gives empty results of the right shape and dtype (the conv
    # rules cannot fold it: 0 * N hides N, and 0 groups are no convolution).
    p = {"stride": (1, 1), "padding": ((0, 0), (0, 0)), "dilation": (1, 1), "groups": 2}
    x, w = fnp.zeros((0, 1, 4, 4, 4)), fnp.zeros((0, 6, 2, 3, 3))
    ct = fnp.zeros((0, 1, 6, 2, 2))
    for axes in [(0, 0), (0, None), (None, 0)]:
        xa, wa, cta = (
            a if d is not None else fnp.zeros(a.shape[1:])
            for a, d in zip((x, w, ct), (axes[0], axes[1], axes[0]))
        )
        out = fgrad.vmap(lambda a, b: conv.conv2d(a, b, **p), in_axes=axes)(xa, wa)
        assert out.shape == (0, 1, 6, 2, 2)
        out = fgrad.vmap(
            lambda c, b: conv.conv2d_backprop_input(c, b, input_size=(4, 4), **p), in_axes=axes
        )(cta, wa)
        assert out.shape == (0, 1, 4, 4, 4)
    pool = {"window": (2, 2), "stride": (2, 2), "padding": ((0, 0), (0, 0))}
    assert fgrad.vmap(lambda a: conv.max_pool2d(a, **pool))(x).shape == (0, 1, 4, 2, 2)
    x32 = fnp.zeros((0, 2, 3), dtype=np.float32)
    out = fgrad.vmap(fnp.matmul, in_axes=(0, None))(x32, fnp.zeros((3, 4), dtype=np.float32))
    assert out.shape == (0, 2, 4) and out.dtype == np.float32
    solved = fgrad.vmap(fnp.linalg.solve, in_axes=(None, 0))(fnp.eye(3), fnp.zeros((0, 3)))
    assert solved.shape == (0, 3)
