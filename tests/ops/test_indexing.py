"""Indexing: ``x[idx]``, ``x.at[idx]``, take, take_along_axis, dynamic slices.

Forward values are compared with numpy's own indexing (the reference semantics); derivatives
with central finite differences through ``check_grads`` (order 2, both modes).
"""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError, ShapeError
from fgrad.ops import indexing as ix
from fgrad.tensor import ShapeDtype
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5, 3))
I2 = np.array([[0, 3], [3, 1]])

# numpy's indexing is the reference: each case is compared with X[idx].
INDEXES = [
    1,
    -1,
    (2, 3),
    (1, -2, 0),
    slice(None, None, -1),
    (slice(3, 0, -2), slice(None), 1),
    (Ellipsis, slice(None, None, -1)),
    (None, 1, Ellipsis, None),
    (slice(None), None, slice(1, 4)),
    np.array([0, 0, 3]),
    (np.array([1, 2]), np.array([0, 4])),
    (slice(None), np.array([4, 0, 4])),
    (np.array([0, 1]), slice(1, 3), np.array([2, 2])),  # separated: advanced dims go first
    (slice(None), I2, 1),  # array and int adjacent: in place
    (1, slice(None), I2 % 3),  # int and array separated
    (None, np.array([0, 2]), None, np.array([1, 1])),  # a None between separates them
    (slice(None), np.array([0, 2, 1]), np.array([1, 1, 0]), None),
    (Ellipsis, np.array([2, 0, 2])),
    [0, 3, 3],
    (slice(None), []),
    (slice(10, 20),),
    (slice(-100, 100, 3), slice(None), slice(None, None, -2)),
]


@pytest.mark.parametrize("idx", INDEXES, ids=[repr(i)[:40] for i in INDEXES])
def test_getitem_matches_numpy(idx):
    x = fnp.array(X)
    got = x[idx]
    want = X[idx]
    np.testing.assert_array_equal(np.asarray(got), want)
    # The shape rule, used when tracing abstractly, agrees with the kernel.
    graph = fgrad.make_graph(lambda t: t[idx])(x)
    assert graph.outvars[0].aval == ShapeDtype(want.shape, want.dtype)


def test_getitem_masks_match_numpy():
    x = fnp.array(X)
    m2 = X[:, :, 0] > 0
    np.testing.assert_array_equal(np.asarray(x[m2]), X[m2])
    np.testing.assert_array_equal(np.asarray(x[X > 0]), X[X > 0])
    np.testing.assert_array_equal(np.asarray(x[1, X[1, :, 0] > 0]), X[1, X[1, :, 0] > 0])
    np.testing.assert_array_equal(np.asarray(x[:, fnp.array(m2[0])]), X[:, m2[0]])


@pytest.mark.parametrize(
    "idx",
    [
        (1, slice(None, None, -1)),
        (slice(3, None, -2), None, Ellipsis, 2),
        np.array([0, 0, 3, 0]),  # repeated indices accumulate
        (slice(None), np.array([[4, 4], [0, 4]]), slice(2, 0, -1)),
        (np.array([1, 1]), slice(None), np.array([2, 2])),
    ],
)
def test_getitem_grads(idx):
    check_grads(lambda x: x[idx], (fnp.array(X),), order=2, modes=("rev", "fwd"))


def test_getitem_repeated_index_gradient_counts_uses():
    # d/dx sum(x[[0, 0, 2]]) = [2, 0, 1]: each use of an element adds its cotangent.
    g = fgrad.grad(lambda x: fnp.sum(x[np.array([0, 0, 2])]))(fnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 1.0])


def test_getitem_mask_grads_eager():
    mask = X[..., 0] > 0
    check_grads(lambda x: x[mask] * x[mask], (fnp.array(X),), order=2, modes=("rev", "fwd"))
    g = fgrad.grad(lambda x: fnp.sum(x[fnp.array(mask)]))(fnp.array(X))
    np.testing.assert_array_equal(np.asarray(g), np.broadcast_to(mask[..., None], X.shape) * 1.0)


def test_getitem_traced_integer_index():
    # Index arrays are op inputs, so they may be traced (here by make_graph).
    f = lambda x, i: x[i, ::-1]
    graph = fgrad.make_graph(f)(fnp.array(X), fnp.array([2, 0]))
    assert graph.outvars[0].aval == ShapeDtype((2, 5, 3), np.dtype(np.float64))
    out = graph.evaluate(fnp.array(X), fnp.array([2, 0]))
    np.testing.assert_array_equal(np.asarray(out), X[[2, 0], ::-1])


def test_getitem_errors():
    x = fnp.array(X)
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 5"):
        x[0, 5]
    with pytest.raises(IndexError, match="out of bounds"):
        x[4]
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.array([0, 7])]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="integer or boolean"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="boolean index of shape"):
        x[np.ones(3, bool)]
    with pytest.raises(IndexError, match="broadcast"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(ConcretizationError, match="fnp.where"):
        fgrad.make_graph(lambda x, m: x[m])(fnp.ones(3), fnp.array([True, False, True]))


def test_index_layout_matches_numpy_on_random_indexes():
    # The shape rule against numpy on many random mixed indexes.
    rng = np.random.default_rng(3)
    shape = (3, 4, 2, 5)
    x = np.zeros(shape)
    for _ in range(300):
        idx, arrays = [], []
        d = 0
        for _ in range(rng.integers(0, 6)):
            r = rng.integers(0, 5)
            if r == 0:
                idx.append(None)
                continue
            if d >= len(shape):
                break
            n = shape[d]
            d += 1
            if r == 1:
                idx.append(int(rng.integers(0, n)))
            elif r == 2:
                a = rng.integers(0, n, rng.integers(1, 3, rng.integers(0, 3)))
                idx.append(ix.ARRAY)
                arrays.append(a)
            else:
                s = slice(
                    *[int(v) if rng.random() < 0.7 else None for v in rng.integers(-6, 6, 2)],
                    int(rng.choice([-2, -1, 1, 3])),
                )
                r = s.indices(n)
                idx.append(r if len(range(*r)) else (0, 0, 1))  # fnp's spelling of "empty"
        try:
            want = x[ix.index_key(tuple(idx), tuple(arrays))].shape
        except IndexError:
            with pytest.raises(IndexError):
                ix.index_layout("t", shape, tuple(idx), tuple(arrays))
            continue
        assert ix.index_layout("t", shape, tuple(idx), tuple(arrays))[0] == want, idx


# ------------------------------------------------------------------------ x.at[idx]

V2 = RNG.standard_normal((2, 3))
V3 = RNG.standard_normal((3, 5, 3))

UPDATE_CASES = [
    ((1, slice(1, 3)), V2),  # basic
    ((slice(None, None, -1), 2), RNG.standard_normal((4, 3))),  # negative step
    (np.array([2, 0, 2]), V3),  # repeated advanced index
    ((np.array([1, 1]), slice(None), np.array([0, 0])), RNG.standard_normal((2, 5))),
    ((slice(None), np.array([4, 0])), RNG.standard_normal(3)),  # values broadcast
]


@pytest.mark.parametrize("idx,v", UPDATE_CASES)
def test_at_set_add_multiply_forward(idx, v):
    x = fnp.array(X)
    want = X.copy()
    want[idx] = v
    np.testing.assert_array_equal(np.asarray(x.at[idx].set(v)), want)
    want = X.copy()
    np.add.at(want, idx, v)
    np.testing.assert_allclose(np.asarray(x.at[idx].add(fnp.array(v))), want, rtol=1e-15)
    want = X.copy()
    np.multiply.at(want, idx, v)
    np.testing.assert_allclose(np.asarray(x.at[idx].multiply(fnp.array(v))), want, rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(x.at[idx].get()), X[idx])
    np.testing.assert_array_equal(np.asarray(x), X)  # x itself never changes


@pytest.mark.parametrize("method", ["set", "add", "multiply", "subtract", "divide"])
@pytest.mark.parametrize("idx,v", UPDATE_CASES)
def test_at_grads_in_x_and_values(method, idx, v):
    v = v + 2.0 * np.sign(v) if method == "divide" else v  # keep divisors away from 0

    def f(x, v):
        return getattr(x.at[idx], method)(v)

    check_grads(f, (fnp.array(X), fnp.array(v)), order=2, modes=("rev", "fwd"))


def test_at_set_repeated_index_last_write_gets_the_gradient():
    # numpy keeps the last write to a repeated position; only it reaches the output.
    x = fnp.zeros(3)
    v = fnp.array([1.0, 2.0, 3.0])
    out = x.at[np.array([0, 2, 0])].set(v)
    np.testing.assert_array_equal(np.asarray(out), [3.0, 0.0, 2.0])
    g = fgrad.grad(
        lambda v: fnp.sum(x.at[np.array([0, 2, 0])].set(v) * fnp.array([1.0, 2.0, 3.0]))
    )(v)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 3.0, 1.0])
    gx = fgrad.grad(lambda x: fnp.sum(x.at[np.array([0, 2, 0])].set(v)))(fnp.ones(3))
    np.testing.assert_array_equal(np.asarray(gx), [0.0, 1.0, 0.0])


def test_at_multiply_repeated_index_with_zero_factor():
    # out[0] = x0 * a * b * c; d/da = x0 * b * c, even when another factor is 0.
    idx = np.array([0, 1, 0, 0])
    v = fnp.array([2.0, 5.0, 0.0, 3.0])
    x = fnp.array([1.5, -1.0])
    out = x.at[idx].multiply(v)
    np.testing.assert_array_equal(np.asarray(out), [0.0, -5.0])
    g = fgrad.grad(lambda v: out_sum(x.at[idx].multiply(v)))(v)
    np.testing.assert_allclose(np.asarray(g), [0.0, -1.0, 1.5 * 2.0 * 3.0, 0.0])
    check_grads(lambda x, v: x.at[idx].multiply(v), (x, v), order=2, modes=("rev", "fwd"))


def out_sum(t):
    return fnp.sum(t)


def test_at_scalar_values_and_dtype():
    x = fnp.zeros((2, 2), dtype="float32")
    out = x.at[0, 1].set(2.5)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), [[0, 2.5], [0, 0]])
    g = fgrad.grad(lambda x: fnp.sum(x.at[:, 0].multiply(3.0)))(fnp.ones((2, 2), dtype="float32"))
    assert g.dtype == np.float32
    # values with extra leading 1-dims are accepted, as numpy does
    np.testing.assert_array_equal(
        np.asarray(fnp.zeros(3).at[1:].set(np.ones((1, 1, 2)))), [0, 1, 1]
    )


def test_at_mask_eager():
    x = fnp.array([1.0, -2.0, 3.0])
    mask = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(x.at[mask].set(0.0)), [0.0, -2.0, 0.0])
    g = fgrad.grad(lambda x: fnp.sum(x.at[mask].multiply(x[mask])))(x)
    np.testing.assert_array_equal(np.asarray(g), [2.0, 1.0, 6.0])


def test_at_errors():
    x = fnp.zeros((3, 2))
    with pytest.raises(ShapeError, match="scatter_set: values of shape \\(3,\\) do not broadcast"):
        x.at[0].set(fnp.ones(3))
    with pytest.raises(IndexError, match="out of bounds"):
        x.at[3].add(1.0)
    with pytest.raises(ConcretizationError, match="unique_indices=True"):
        fgrad.make_graph(lambda x, i: x.at[i].multiply(2.0))(x, fnp.array([0, 1]))
    graph = fgrad.make_graph(lambda x, i: x.at[i].multiply(2.0, unique_indices=True))(
        x, fnp.array([0, 1])
    )
    assert graph.outvars[0].aval == ShapeDtype((3, 2), np.dtype(np.float64))
    with pytest.raises(fgrad.MutationError, match="at\\[idx\\]"):
        x[0] = 1.0


def test_at_add_traced_indices_under_make_graph():
    graph = fgrad.make_graph(lambda x, i: x.at[i].add(1.0))(fnp.zeros(3), fnp.array([0, 0]))
    out = graph.evaluate(fnp.zeros(3), fnp.array([2, 2]))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 0.0, 2.0])


# ------------------------------------------------------------------------ take


def test_take_and_take_along_axis_match_numpy():
    x = fnp.array(X)
    idx = np.array([[2, 0], [2, 2]])
    np.testing.assert_array_equal(np.asarray(fnp.take(x, idx, axis=1)), np.take(X, idx, axis=1))
    np.testing.assert_array_equal(np.asarray(fnp.take(x, idx)), np.take(X, idx))
    np.testing.assert_array_equal(
        np.asarray(x.take(np.array([7]), axis=1, mode="wrap")), np.take(X, [7], axis=1, mode="wrap")
    )
    np.testing.assert_array_equal(
        np.asarray(fnp.take(x, [-9, 9], axis=0, mode="clip")),
        np.take(X, [-9, 9], axis=0, mode="clip"),
    )
    order = np.argsort(X, axis=1)
    np.testing.assert_array_equal(
        np.asarray(fnp.take_along_axis(x, order, axis=1)), np.take_along_axis(X, order, axis=1)
    )
    first = order[:, :1, :]
    np.testing.assert_array_equal(
        np.asarray(fnp.take_along_axis(x, fnp.array(first), 1)), np.take_along_axis(X, first, 1)
    )
    flat = np.array([5, 0, 5])
    np.testing.assert_array_equal(
        np.asarray(fnp.take_along_axis(x, flat, None)), np.take_along_axis(X, flat, None)
    )


def test_take_grads():
    idx = np.array([[2, 0], [2, 2]])
    check_grads(lambda x: fnp.take(x, idx, axis=2), (fnp.array(X),), order=2, modes=("rev", "fwd"))
    order = np.argsort(X, axis=0)[:2]
    check_grads(
        lambda x: fnp.take_along_axis(x, order, axis=0),
        (fnp.array(X),),
        order=2,
        modes=("rev", "fwd"),
    )


def test_take_errors():
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.take(fnp.ones(3), np.array([3]))
    with pytest.raises(ShapeError, match="take: axis 3 is out of range"):
        fnp.take(fnp.ones((2, 2)), np.array([0]), axis=3)
    with pytest.raises(ShapeError, match="as many dimensions"):
        fnp.take_along_axis(fnp.ones((2, 2)), np.array([0]), axis=1)


# ------------------------------------------------------------------------ dynamic slices


def test_dynamic_slice_clamps_like_lax():
    x = fnp.array(X)
    out = fnp.dynamic_slice(x, (3, -2, 1), (2, 2, 2))
    np.testing.assert_array_equal(np.asarray(out), X[2:4, 0:2, 1:3])
    out = fnp.dynamic_update_slice(x, fnp.ones((1, 2, 3)), (9, 4, 0))
    want = X.copy()
    want[3:4, 3:5, 0:3] = 1.0
    np.testing.assert_array_equal(np.asarray(out), want)


def test_dynamic_slice_grads():
    starts = (fnp.array(1), 2, fnp.array(0))
    check_grads(
        lambda x: fnp.dynamic_slice(x, starts, (2, 3, 3)),
        (fnp.array(X),),
        order=2,
        modes=("rev", "fwd"),
    )
    u = fnp.array(RNG.standard_normal((2, 2, 1)))
    check_grads(
        lambda x, u: fnp.dynamic_update_slice(x, u, (1, 3, 2)),
        (fnp.array(X), u),
        order=2,
        modes=("rev", "fwd"),
    )


def test_dynamic_slice_traced_starts():
    f = lambda x, i: fnp.dynamic_slice(x, (i, 0, 0), (2, 5, 3))
    graph = fgrad.make_graph(f)(fnp.array(X), fnp.array(0))
    assert graph.outvars[0].aval == ShapeDtype((2, 5, 3), np.dtype(np.float64))
    np.testing.assert_array_equal(np.asarray(graph.evaluate(fnp.array(X), fnp.array(1))), X[1:3])


def test_dynamic_slice_errors():
    with pytest.raises(ShapeError, match="dynamic_slice: .* needs 3 start indices"):
        fnp.dynamic_slice(fnp.array(X), (0, 0), (1, 1))
    with pytest.raises(ShapeError, match="do not fit"):
        fnp.dynamic_slice(fnp.array(X), (0, 0, 0), (5, 1, 1))
    with pytest.raises(ShapeError, match="as many dimensions"):
        fnp.dynamic_update_slice(fnp.array(X), fnp.ones(2), (0, 0, 0))
