"""vmap through the shape and indexing ops: the user paths (``x[idx]``, ``x.at[idx]``,
dynamic slices, reshape/transpose/concatenate...) with every combination of mapped and
shared data, index arrays and values, in_axes other than 0, and composed with grad, jit
and an outer vmap. Each case is checked against the per-example loop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

B = 3
RNG = np.random.default_rng(0)


def _loop(f, args, in_axes):
    """The per-example loop ``vmap`` must match, stacked along a new leading axis."""
    outs = []
    for b in range(B):
        ex = [
            a if ax is None else np.take(np.asarray(a), b, axis=ax) for a, ax in zip(args, in_axes)
        ]
        outs.append(
            np.asarray(f(*[fnp.asarray(e) if isinstance(e, np.ndarray) else e for e in ex]))
        )
    return np.stack(outs)


def _check(f, args, in_axes):
    want = _loop(f, args, in_axes)
    got = np.asarray(fgrad.vmap(f, in_axes=in_axes)(*[fnp.asarray(a) for a in args]))
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _data(shape):
    return RNG.standard_normal(shape)


def _index(shape, high):
    return RNG.integers(0, high, size=shape)


def _maybe_batched(value, batched):
    """``value`` for one example, or B different values stacked (with in_axes 0)."""
    if not batched:
        return value, None
    return np.stack(
        [value] + [np.roll(value, k + 1) if value.ndim else value + k for k in range(B - 1)]
    ), 0


# ---------------------------------------------------------------------------- shape ops


@pytest.mark.parametrize(
    "f, shape",
    [
        (lambda x: fnp.reshape(x, (4, 3)), (3, 4)),
        (lambda x: fnp.reshape(x, (-1,)), (3, 4)),
        (lambda x: x.T, (3, 4)),
        (lambda x: fnp.transpose(x, (2, 0, 1)), (2, 3, 4)),
        (lambda x: fnp.broadcast_to(x, (2, 3, 4)), (4,)),
        (lambda x: fnp.broadcast_to(x, (2, 3, 4)), (3, 1)),
        (lambda x: fnp.flip(x, axis=1), (3, 4)),
        (lambda x: fnp.roll(x, (1, -2), axis=(0, 1)), (3, 4)),
        (lambda x: fnp.roll(x, 2), (3, 4)),  # flattened roll
        (lambda x: fnp.pad(x, ((1, 0), (2, 1)), constant_values=7.0), (3, 4)),
        (lambda x: fnp.concatenate([x, 2 * x], axis=-1), (3, 4)),
        (lambda x: fnp.split(x, [1, 3], axis=1)[1], (3, 4)),
        (lambda x: fnp.stack(fnp.split(x, 2, axis=0)), (4, 3)),
    ],
)
@pytest.mark.parametrize("axis", [0, 1])
def test_shape_ops_with_the_mapped_axis_anywhere(f, shape, axis):
    xs = _data(shape[:axis] + (B,) + shape[axis:])
    _check(f, [xs], (axis,))


def test_concatenate_mapped_with_shared():
    xs, y = _data((B, 2, 3)), _data((4, 3))
    _check(lambda x, y: fnp.concatenate([y, x, y]), [xs, y], (0, None))
    _check(lambda x, y: fnp.concatenate([y, x]), [np.moveaxis(xs, 0, 2), y], (2, None))


def test_vmap_of_grad_through_shape_ops():
    def f(x):
        y = fnp.concatenate([fnp.pad(x, 1), fnp.flip(x, 0)]).reshape(2, -1)
        return fnp.sum(fnp.roll(y, 1, axis=1).T ** 2 * fnp.arange(y.size).reshape(-1, 2))

    xs = _data((B, 4))
    got = fgrad.vmap(fgrad.grad(f))(fnp.asarray(xs))
    want = np.stack([np.asarray(fgrad.grad(f)(fnp.asarray(x))) for x in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


# ---------------------------------------------------------------------------- getitem

X_SHAPE = (4, 5, 6)

BASIC = [
    lambda x: x[1],
    lambda x: x[:, 0],
    lambda x: x[1:, ::-2, 3],
    lambda x: x[None, ..., 0],
    lambda x: x[..., None, 2:4],
    lambda x: x[-1, None, :, -2],
]


@pytest.mark.parametrize("f", BASIC)
@pytest.mark.parametrize("axis", [0, 2])
def test_basic_indexing(f, axis):
    xs = _data(X_SHAPE[:axis] + (B,) + X_SHAPE[axis:])
    _check(f, [xs], (axis,))


# (function of x and two index arrays, shapes of the two index arrays). The index
# placements cover numpy's two layouts: advanced indices adjacent (their dimensions stay
# in place, possibly after basic ones) and separated (their dimensions go first).
ADVANCED = [
    (lambda x, i, j: x[i], (2, 3), ()),
    (lambda x, i, j: x[i, j], (2, 3), (3,)),
    (lambda x, i, j: x[:, i], (2,), ()),
    (lambda x, i, j: x[None, 1:, i, j], (2, 1), (3,)),
    (lambda x, i, j: x[i, :, j], (3,), (2, 3)),  # separated
    (lambda x, i, j: x[i, 1], (2,), ()),  # an int joins the advanced indices
    (lambda x, i, j: x[0, :, i], (3, 2), ()),  # separated by a slice
    (lambda x, i, j: x[i, None, j], (3,), (3,)),  # separated by a new axis
    (lambda x, i, j: x[::-1, i, ..., j], (2, 1), (1, 3)),
]


@pytest.mark.parametrize("f, ishape, jshape", ADVANCED)
@pytest.mark.parametrize(
    "x_mapped, i_mapped, j_mapped",
    [m for m in itertools.product([False, True], repeat=3) if any(m)],
)
def test_advanced_indexing(f, ishape, jshape, x_mapped, i_mapped, j_mapped):
    xs, xa = _maybe_batched(_data(X_SHAPE), x_mapped)
    i, ia = _maybe_batched(_index(ishape, 4), i_mapped)
    j, ja = _maybe_batched(_index(jshape, 5), j_mapped)
    _check(f, [xs, i, j], (xa, ia, ja))


def test_batched_index_with_in_axes_not_zero():
    xs = _data((5, B, 6))
    idx = _index((2, B), 5)
    _check(lambda x, i: x[i, ::2], [xs, idx], (1, 1))
    _check(lambda x, i: fnp.take(x, i, axis=1), [_data((5, 6)), idx], (None, 1))


def test_argmax_gather():
    xs = _data((B, 4, 5))
    _check(lambda x: x[fnp.arange(4), fnp.argmax(x, axis=1)], [xs], (0,))
    _check(lambda x: fnp.take(x, fnp.argmin(x, axis=0), axis=1), [xs], (0,))


def test_list_and_numpy_index_under_vmap():
    # fnp places these index arrays and values on x.device (a BatchTracer's is its batch's)
    xs = _data((B, 4, 5))
    _check(lambda x: fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1), [xs], (0,))
    _check(lambda x: x[[0, 2]], [xs], (0,))
    _check(lambda x: x.at[0].set(np.ones(5)), [xs], (0,))
    # repeated concrete indices multiply in rounds, whose masks are placed on x.device
    _check(lambda x: x.at[fnp.asarray([0, 0, 2])].multiply(fnp.arange(2.0, 7.0)), [xs], (0,))


# ---------------------------------------------------------------------------- scatters

SCATTERS = [
    # (update, index shapes (i, j), values shape for one example)
    (lambda x, i, j, v: x.at[i].set(v), (3,), (), (3, 5, 6)),
    (lambda x, i, j, v: x.at[:, i].add(v), (2, 2), (), (6,)),  # values broadcast
    (lambda x, i, j, v: x.at[i, :, j].set(v), (3,), (3,), (3, 5)),  # separated
    (lambda x, i, j, v: x.at[None, 1:, i, j].add(v), (2, 1), (3,), (3, 1, 3)),
    (lambda x, i, j, v: x.at[1:3, ::2].set(v), (1,), (), (3, 6)),  # basic indices
    (lambda x, i, j, v: x.at[i, 2].multiply(v, unique_indices=True), (1,), (), (6,)),
    (lambda x, i, j, v: x.at[0, :, i].multiply(v, unique_indices=True), (2,), (), (2, 5)),
]


@pytest.mark.parametrize("f, ishape, jshape, vshape", SCATTERS)
@pytest.mark.parametrize(
    "mapped", [m for m in itertools.product([False, True], repeat=4) if any(m)]
)
def test_scatters(f, ishape, jshape, vshape, mapped):
    x_m, i_m, j_m, v_m = mapped
    xs, xa = _maybe_batched(_data(X_SHAPE), x_m)
    i, ia = _maybe_batched(_index(ishape, 4), i_m)
    j, ja = _maybe_batched(_index(jshape, 5), j_m)
    v, va = _maybe_batched(_data(vshape), v_m)
    _check(f, [xs, i, j, v], (xa, ia, ja, va))


def test_scatter_with_a_python_scalar_and_repeated_batched_indices():
    xs = _data((B, 5))
    idx = np.array([[0, 0, 3], [1, 4, 1], [2, 2, 2]])
    _check(lambda x, i: x.at[i].set(9.0), [xs, idx], (0, 0))
    _check(lambda x, i: x.at[i].add(1.0), [xs, idx], (0, 0))
    _check(lambda x, i: x.at[i].add(1.0), [xs[0], idx], (None, 0))


def test_vmap_of_grad_through_set_with_repeated_batched_indices():
    # Only the last write of each repeated position has a derivative, per example.
    idx = np.array([[0, 0, 3], [1, 4, 1], [2, 2, 2]])
    x, vs = fnp.asarray(_data(5)), _data((B, 3))

    def f(v, i):
        return fnp.sum(x.at[i].set(v) * fnp.arange(1.0, 6.0))

    got = fgrad.vmap(fgrad.grad(f))(fnp.asarray(vs), fnp.asarray(idx))
    want = np.stack(
        [np.asarray(fgrad.grad(f)(fnp.asarray(v), fnp.asarray(i))) for v, i in zip(vs, idx)]
    )
    np.testing.assert_allclose(np.asarray(got), want)
    assert want[2].tolist() == [0.0, 0.0, 3.0]


def test_vmap_of_grad_through_a_batched_gather():
    xs, idx = _data((B, 4, 3)), np.array([[0, 0, 2], [3, 1, 1], [2, 2, 2]])

    def f(x, i):
        return fnp.sum(fnp.sin(x[i, 1:]))

    got = fgrad.vmap(fgrad.grad(f))(fnp.asarray(xs), fnp.asarray(idx))
    want = np.stack(
        [np.asarray(fgrad.grad(f)(fnp.asarray(x), fnp.asarray(i))) for x, i in zip(xs, idx)]
    )
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_grad_of_vmap_and_jit_of_vmap_through_indexing():
    xs, idx = _data((B, 4, 3)), fnp.asarray(np.array([[0, 3], [1, 1], [2, 0]]))

    def f(x, i):
        return x.at[i, 0].add(x[i, 2] ** 2)[::-1, 1:]

    vf = fgrad.vmap(f)
    want = np.stack([np.asarray(f(fnp.asarray(x), i)) for x, i in zip(xs, idx)])
    np.testing.assert_allclose(np.asarray(fgrad.jit(vf)(fnp.asarray(xs), idx)), want, rtol=1e-12)
    g = fgrad.grad(lambda x: fnp.sum(vf(x, idx) ** 2))(fnp.asarray(xs))
    loss = fgrad.grad(lambda x, i: fnp.sum(f(x, i) ** 2))
    g_loop = np.stack([np.asarray(loss(fnp.asarray(x), i)) for x, i in zip(xs, idx)])
    np.testing.assert_allclose(np.asarray(g), g_loop, rtol=1e-12)


def test_nested_vmap_with_batched_indices():
    xs = _data((2, B, 5))
    idx = _index((2, B, 4), 4)
    got = fgrad.vmap(fgrad.vmap(lambda x, i: x[i].at[i[:2]].set(0.0)))(
        fnp.asarray(xs), fnp.asarray(idx)
    )
    want = np.array(
        [
            [
                np.asarray(fnp.asarray(xs[a, b])[idx[a, b]].at[idx[a, b, :2]].set(0.0))
                for b in range(B)
            ]
            for a in range(2)
        ]
    )
    np.testing.assert_array_equal(np.asarray(got), want)


# ---------------------------------------------------------------------------- dynamic slices


@pytest.mark.parametrize("x_mapped", [False, True])
def test_dynamic_slice_with_per_example_starts(x_mapped):
    xs, xa = _maybe_batched(_data((6, 5)), x_mapped)
    starts = np.array([-2, 1, 9])  # clamped per example, as lax.dynamic_slice
    _check(lambda x, i: fnp.dynamic_slice(x, (i, 2), (3, 2)), [xs, starts], (xa, 0))
    _check(lambda x, i: fnp.dynamic_slice(x, (1, i), (4, 3)), [xs, starts], (xa, 0))
    _check(
        lambda x, i, j: fnp.dynamic_slice(x, (i, j), (2, 2)), [xs, starts, starts[::-1]], (xa, 0, 0)
    )
    j = fnp.asarray(np.int32(4))  # a shared 0-d Tensor start
    _check(
        lambda x, i: fnp.dynamic_slice(x, (i, j), (2, 2)), [xs, starts.astype(np.int32)], (xa, 0)
    )
    if x_mapped:
        _check(lambda x: fnp.dynamic_slice(x, (2, j), (3, 1)), [xs], (0,))


@pytest.mark.parametrize(
    "mapped", [m for m in itertools.product([False, True], repeat=3) if any(m)]
)
def test_dynamic_update_slice(mapped):
    x_m, u_m, s_m = mapped
    xs, xa = _maybe_batched(_data((6, 5)), x_m)
    u, ua = _maybe_batched(_data((3, 2)), u_m)
    s, sa = (np.array([-1, 2, 8]), 0) if s_m else (np.int64(2), None)
    _check(lambda x, u, i: fnp.dynamic_update_slice(x, u, (i, 3)), [xs, u, s], (xa, ua, sa))


def test_vmap_of_grad_through_dynamic_slices():
    xs, us, starts = _data((B, 6)), _data((B, 2)), fnp.asarray(np.array([0, 3, 7]))

    def f(x, u, i):
        y = fnp.dynamic_update_slice(x, u * u, (i,))
        return fnp.sum(fnp.dynamic_slice(y, (i - 1,), (3,)) ** 3)

    got = fgrad.vmap(fgrad.grad(f, argnums=(0, 1)))(fnp.asarray(xs), fnp.asarray(us), starts)
    for b in range(B):
        want = fgrad.grad(f, argnums=(0, 1))(fnp.asarray(xs[b]), fnp.asarray(us[b]), starts[b])
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g)[b], np.asarray(w), rtol=1e-12)
