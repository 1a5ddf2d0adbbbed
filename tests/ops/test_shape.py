"""Shape functions: forward values against numpy, derivatives against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.tensor import ShapeDtype
from fgrad.test_util import check_grads

RNG = np.random.default_rng(1)
A = RNG.standard_normal((2, 3, 4))
B = RNG.standard_normal((2, 1, 4))


def _same(got, want):
    got = tuple(got) if isinstance(got, (list, tuple)) else (got,)
    want = tuple(want) if isinstance(want, (list, tuple)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == np.shape(w)
        np.testing.assert_array_equal(np.asarray(g), w)


# numpy is the reference for every forward value.
CASES = [
    ("transpose", lambda m, x: m.transpose(x, (2, 0, 1))),
    ("transpose-default", lambda m, x: m.transpose(x)),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1)),
    ("moveaxis-many", lambda m, x: m.moveaxis(x, (0, 2), (2, 0))),
    ("moveaxis-many2", lambda m, x: m.moveaxis(x, (2, 1), (0, 1))),
    ("swapaxes", lambda m, x: m.swapaxes(x, -1, 0)),
    ("expand_dims", lambda m, x: m.expand_dims(x, (0, -1))),
    ("expand_dims-mid", lambda m, x: m.expand_dims(x, 2)),
    ("squeeze", lambda m, x: m.squeeze(m.expand_dims(x, (0, 3)))),
    ("squeeze-axis", lambda m, x: m.squeeze(m.expand_dims(x, (0, 3)), axis=3)),
    ("ravel", lambda m, x: m.ravel(x)),
    ("reshape", lambda m, x: m.reshape(x, (4, -1))),
    ("concatenate", lambda m, x: m.concatenate([x, x[:, :1]], axis=1)),
    ("concatenate-neg", lambda m, x: m.concatenate([x, x], axis=-1)),
    ("concatenate-none", lambda m, x: m.concatenate([x, x[0]], axis=None)),
    ("stack", lambda m, x: m.stack([x, x, x], axis=1)),
    ("stack-last", lambda m, x: m.stack([x, x], axis=-1)),
    ("hstack", lambda m, x: m.hstack([x, x])),
    ("vstack", lambda m, x: m.vstack([x[0, 0], x[1, 1]])),
    ("split", lambda m, x: m.split(x, 2, axis=2)),
    ("split-indices", lambda m, x: m.split(x, [1, 5, -1], axis=2)),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=2)),
    ("flip", lambda m, x: m.flip(x, (0, 2))),
    ("flip-all", lambda m, x: m.flip(x)),
    ("roll", lambda m, x: m.roll(x, 2, axis=2)),
    ("roll-many", lambda m, x: m.roll(x, (1, -5), axis=(0, 1))),
    ("roll-flat", lambda m, x: m.roll(x, 7)),
    ("roll-same-axis", lambda m, x: m.roll(x, (1, 1), axis=(2, -1))),
    ("tile", lambda m, x: m.tile(x, (2, 1, 3))),
    ("tile-short", lambda m, x: m.tile(x, 2)),
    ("tile-long", lambda m, x: m.tile(x, (2, 1, 1, 2))),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=1)),
    ("repeat-flat", lambda m, x: m.repeat(x, 3)),
    ("repeat-counts", lambda m, x: m.repeat(x, [0, 2, 1], axis=1)),
    ("pad-constant", lambda m, x: m.pad(x, ((1, 0), (0, 2), (3, 1)), constant_values=1.5)),
    ("pad-int", lambda m, x: m.pad(x, 1)),
    ("pad-edge", lambda m, x: m.pad(x, ((0, 0), (2, 3), (1, 0)), mode="edge")),
    ("pad-reflect", lambda m, x: m.pad(x, ((3, 2), (1, 5), (0, 7)), mode="reflect")),
    ("pad-symmetric", lambda m, x: m.pad(x, ((3, 2), (1, 5), (0, 9)), mode="symmetric")),
    ("pad-wrap", lambda m, x: m.pad(x, ((3, 2), (1, 5), (0, 9)), mode="wrap")),
    ("atleast_3d", lambda m, x: m.atleast_3d(x[0, 0], x[0], x)),
    ("atleast_2d", lambda m, x: m.atleast_2d(x[0, 0, 0], x[0, 0])),
    ("broadcast_arrays", lambda m, x: m.broadcast_arrays(x, x[0, :, :1])),
]


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(name, f):
    _same(f(fnp, fnp.array(A)), f(np, A))


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_grads(name, f):
    check_grads(lambda x: f(fnp, x), (fnp.array(A),), order=2, modes=("rev", "fwd"))


def test_methods_and_properties():
    x = fnp.array(A)
    _same(x.reshape(4, 6), A.reshape(4, 6))
    _same(x.transpose(1, 0, 2), A.transpose(1, 0, 2))
    _same(x.T, A.T)
    _same(x.mT, np.swapaxes(A, -1, -2))
    _same(fnp.matrix_transpose(x), np.swapaxes(A, -1, -2))
    _same(x.flatten(), A.flatten())
    _same(x.ravel(), A.ravel())
    _same(x[:, :1].squeeze(), A[:, :1].squeeze())
    _same(x.swapaxes(0, 1), A.swapaxes(0, 1))
    _same(x.repeat(2, axis=0), A.repeat(2, axis=0))
    _same(x.take(np.array([0, 0]), axis=2), A.take([0, 0], axis=2))
    _same(fnp.unstack(x, axis=1), tuple(np.moveaxis(A, 1, 0)))
    _same(fnp.fliplr(x), np.fliplr(A))
    _same(fnp.flipud(x), np.flipud(A))
    _same(fnp.concat([x, x], axis=0), np.concatenate([A, A]))
    _same(fnp.atleast_1d(2.0), np.atleast_1d(2.0))
    with pytest.raises(ShapeError, match="at least 2 dimensions"):
        _ = fnp.ones(3).mT


def test_concatenate_mixed_dtypes_and_many_inputs():
    parts = [fnp.ones(2, dtype="float32"), fnp.arange(3), fnp.zeros(1)]
    out = fnp.concatenate(parts)
    assert out.dtype == np.float64  # numpy's promotion
    _same(out, np.concatenate([np.ones(2, np.float32), np.arange(3), np.zeros(1)]))
    xs = [fnp.array(RNG.standard_normal((k, 2))) for k in (1, 3, 2)]
    check_grads(lambda *xs: fnp.concatenate(xs), xs, order=2, modes=("rev", "fwd"))
    g = fgrad.grad(lambda a: fnp.sum(fnp.concatenate([a, fnp.ones(2)]) ** 2))(
        fnp.ones(2, dtype="float32")
    )
    assert g.dtype == np.float32


def test_split_and_concatenate_round_trip():
    x = fnp.array(A)
    for k in (1, 2, 4):
        _same(fnp.concatenate(fnp.split(x, k, axis=2), axis=2), A)
    pieces = fnp.split(x, [0, 2, 2, 3], axis=1)
    assert [p.shape for p in pieces] == [(2, 0, 4), (2, 2, 4), (2, 0, 4), (2, 1, 4), (2, 0, 4)]
    _same(fnp.concatenate(pieces, axis=1), A)
    _same(fnp.stack(fnp.unstack(x, axis=2), axis=2), A)
    # The derivative of one piece only reaches its own positions.
    g = fgrad.grad(lambda x: fnp.sum(fnp.split(x, [1], axis=1)[1] ** 2))(x)
    want = 2 * A
    want[:, :1] = 0
    np.testing.assert_allclose(np.asarray(g), want)
    check_grads(lambda x: fnp.split(x, [1, 3], axis=2), (x,), order=2, modes=("rev", "fwd"))


def test_stack_and_broadcast_grads():
    xs = (fnp.array(A), fnp.array(RNG.standard_normal(A.shape)))
    check_grads(lambda a, b: fnp.stack([a, b], axis=2), xs, order=2, modes=("rev", "fwd"))
    ys = (fnp.array(A), fnp.array(B))
    check_grads(lambda a, b: fnp.broadcast_arrays(a, b), ys, order=2, modes=("rev", "fwd"))


def test_shape_ops_trace_abstractly():
    f = lambda x: fnp.concatenate(fnp.split(fnp.pad(x, 1), [2], axis=0), axis=1)
    graph = fgrad.make_graph(f)(fnp.array(A))
    want = f(fnp.array(A))
    assert graph.outvars[0].aval == ShapeDtype(want.shape, want.dtype)
    np.testing.assert_array_equal(np.asarray(graph.evaluate(fnp.array(A))), np.asarray(want))


def test_errors_name_the_op():
    with pytest.raises(
        ShapeError, match="concatenate: inputs f64\\[2,3\\], f64\\[2,4\\] must have"
    ):
        fnp.concatenate([fnp.ones((2, 3)), fnp.ones((2, 4))], axis=0)
    with pytest.raises(ShapeError, match="concatenate: zero-dimensional"):
        fnp.concatenate([fnp.ones(()), fnp.ones(())])
    with pytest.raises(ShapeError, match="concatenate: axis 2 is out of range"):
        fnp.concatenate([fnp.ones((2, 3))], axis=2)
    with pytest.raises(ShapeError, match="stack: all inputs must have the same shape"):
        fnp.stack([fnp.ones(2), fnp.ones(3)])
    with pytest.raises(ShapeError, match="split: an axis of length 4 does not split into 3"):
        fnp.split(fnp.ones(4), 3)
    with pytest.raises(ShapeError, match="split: split points \\(5,\\) must lie in \\[0, 4\\]"):
        fgrad.make_graph(lambda x: fgrad.ops.shape.split(x, axis=0, bounds=(5,)))(fnp.ones(4))
    with pytest.raises(ShapeError, match="squeeze: cannot remove axis 0"):
        fnp.squeeze(fnp.ones((2, 1)), axis=0)
    with pytest.raises(ShapeError, match="expand_dims: axis 3 is out of range"):
        fnp.expand_dims(fnp.ones(2), 3)
    with pytest.raises(ShapeError, match="moveaxis: repeated axis"):
        fnp.moveaxis(fnp.ones((2, 3)), (0, 0), (0, 1))
    with pytest.raises(ShapeError, match="pad: pad_width"):
        fnp.pad(fnp.ones((2, 3)), ((1, 1), (1, 1), (1, 1)))
    with pytest.raises(ValueError, match="mode 'empty' is not supported"):
        fnp.pad(fnp.ones(3), 1, mode="empty")
    with pytest.raises(ShapeError, match="repeat: repeats must hold one"):
        fnp.repeat(fnp.ones(3), [1, 2])
    with pytest.raises(ShapeError, match="broadcast_arrays: input shapes do not broadcast"):
        fnp.broadcast_arrays(fnp.ones(2), fnp.ones(3))
    with pytest.raises(ShapeError, match="roll: axis 2 is out of range"):
        fnp.roll(fnp.ones((2, 2)), 1, axis=2)


def test_pad_reflect_single_element_and_empty_widths():
    for mode in ("edge", "reflect", "symmetric", "wrap"):
        _same(fnp.pad(fnp.array([2.0]), 3, mode=mode), np.pad([2.0], 3, mode=mode))
    x = fnp.ones((2, 2))
    assert fnp.pad(x, 0) is x


@pytest.mark.parametrize(
    "x",
    [
        np.float32(2.0),  # a numpy scalar (what a full reduction returns)
        np.array(1.5),
        np.arange(3.0),
        np.ones((2, 1), np.float32),
        np.asfortranarray(RNG.standard_normal((3, 1))),
        np.arange(6.0)[::2],  # not contiguous: falls back to np.broadcast_to
        np.ones((2, 0)),
    ],
    ids=lambda x: f"{type(x).__name__}{np.shape(x)}",
)
@pytest.mark.parametrize("shape", [(4, 2, 3), (2, 3), (3,), (2, 1), (5, 2, 0)])
def test_broadcast_kernel_is_numpys_broadcast_to(x, shape):
    # The numpy kernel builds the view itself (faster than np.broadcast_to); it must give
    # the same values, shape and dtype, stay read-only, and reject what numpy rejects.
    try:
        want = np.broadcast_to(x, shape)
    except ValueError:
        with pytest.raises(ShapeError, match="broadcast_to"):
            fnp.broadcast_to(fnp.asarray(x), shape)
        return
    from fgrad.ops.shape import _broadcast_kernel

    got = _broadcast_kernel(np, x, shape=shape)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert not got.flags.writeable
    if isinstance(x, np.ndarray) and got.size:
        assert np.shares_memory(got, x)  # a view, not a copy
