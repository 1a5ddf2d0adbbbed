"""Sorting, searching and counting: sort, argsort, top_k, searchsorted, median, quantile,
nonzero and friends, unique.

Forward values are compared with numpy (the reference semantics; a stable descending order
is built from numpy's stable ascending one as the Array API specifies it); derivatives with
central finite differences through ``check_grads`` (order 2, both modes).
"""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError, ShapeError
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)
TIES = np.array(
    [[2.0, 1.0, 2.0, 0.0, 1.0], [3.0, 3.0, -1.0, 3.0, 0.0], [1.0, np.nan, 0.0, 1.0, 5.0]]
)


def _np_argsort(x, axis, descending):
    """Stable (descending) argsort by numpy, the Array API way."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(flipped, axis=axis)


def _distinct(shape, rng=RNG):
    """Values spaced 0.5 apart (in random order): no ties within a finite-difference step."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.5 + rng.uniform(-0.1, 0.1, n)).reshape(shape)


# ------------------------------------------------------------------------ sort, argsort


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort_match_numpy_with_ties_and_nan(axis, descending):
    x = fnp.array(TIES)
    ref = TIES if axis is not None else TIES.ravel()
    ax = axis if axis is not None else 0
    want_idx = _np_argsort(ref, ax, descending)
    got_idx = fnp.argsort(x, axis=axis, descending=descending)
    assert got_idx.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(got_idx), want_idx)
    want = np.take_along_axis(ref, want_idx, axis=ax)
    np.testing.assert_array_equal(np.asarray(fnp.sort(x, axis=axis, descending=descending)), want)


def test_sort_methods_and_dtypes():
    x = fnp.array([3.0, 1.0, 2.0], dtype="float32")
    assert x.sort().dtype == np.float32  # a new Tensor (JAX's Array.sort), not in place
    np.testing.assert_array_equal(np.asarray(x.sort()), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(x.argsort()), [1, 2, 0])
    np.testing.assert_array_equal(np.asarray(fnp.sort(fnp.array([3, 1, 2]))), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(fnp.sort([True, False])), [False, True])
    np.testing.assert_array_equal(np.asarray(x), [3.0, 1.0, 2.0])  # unchanged


def test_sort_errors():
    with pytest.raises(ShapeError, match="axis=None"):
        fnp.sort(fnp.array(1.0))
    with pytest.raises(ShapeError):
        fnp.sort(fnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="order"):
        fnp.sort(fnp.ones(3), order="f")


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_grads(axis, descending):
    x = fnp.array(_distinct((3, 4)))
    check_grads(
        lambda x: fnp.sort(x, axis=axis, descending=descending), (x,), order=2, modes=("rev", "fwd")
    )


def test_sort_grad_ties_follow_the_stable_order():
    # JAX's convention: tied inputs get the cotangents of the positions the stable order
    # sends them to (jnp.sort's VJP), not an average.
    w = fnp.array([1.0, 2.0, 3.0])
    f = lambda x: fnp.sum(fnp.sort(x) * w)
    np.testing.assert_array_equal(
        np.asarray(fgrad.grad(f)(fnp.array([5.0, 5.0, 0.0]))), [2.0, 3.0, 1.0]
    )
    g = lambda x: fnp.sum(fnp.sort(x, descending=True) * w)
    np.testing.assert_array_equal(
        np.asarray(fgrad.grad(g)(fnp.array([5.0, 5.0, 0.0]))), [1.0, 2.0, 3.0]
    )


def test_sort_under_jit_and_grad_of_jit():
    x = fnp.array(_distinct((2, 5)))
    f = lambda x: fnp.sum(fnp.sort(x, axis=1) * fnp.arange(5.0))
    np.testing.assert_allclose(np.asarray(fgrad.jit(f)(x)), np.asarray(f(x)))
    np.testing.assert_allclose(
        np.asarray(fgrad.jit(fgrad.grad(f))(x)), np.asarray(fgrad.grad(f)(x)), rtol=1e-15
    )
    idx = fgrad.jit(lambda x: fnp.argsort(x, axis=0, descending=True))(x)
    np.testing.assert_array_equal(np.asarray(idx), _np_argsort(np.asarray(x), 0, True))


# ------------------------------------------------------------------------ top_k


def test_top_k_matches_sorting_and_is_differentiable():
    x = fnp.array(_distinct((3, 6)))
    values, indices = fnp.top_k(x, 4)
    want_idx = _np_argsort(np.asarray(x), 1, True)[:, :4]
    np.testing.assert_array_equal(np.asarray(indices), want_idx)
    np.testing.assert_array_equal(
        np.asarray(values), np.take_along_axis(np.asarray(x), want_idx, 1)
    )
    check_grads(lambda x: fnp.top_k(x, 2)[0], (x,), order=2, modes=("rev", "fwd"))
    # Ties: the lower index first (jax.lax.top_k).
    np.testing.assert_array_equal(np.asarray(fnp.top_k(fnp.array([1.0, 3.0, 3.0]), 2)[1]), [1, 2])
    got = fgrad.jit(lambda x: fnp.top_k(x, 2))(x)
    np.testing.assert_array_equal(np.asarray(got[1]), want_idx[:, :2])


def test_top_k_errors():
    with pytest.raises(ShapeError, match="k=4"):
        fnp.top_k(fnp.ones(3), 4)
    with pytest.raises(ShapeError):
        fnp.top_k(fnp.array(1.0), 1)
    with pytest.raises(TypeError):
        fnp.top_k(fnp.ones(3), 1.5)


# ------------------------------------------------------------------------ searchsorted


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(side):
    a = np.array([-1.0, 0.0, 0.0, 0.5, 2.0])
    v = np.array([[-3.0, 0.0, 0.25], [0.5, 2.0, 9.0]])
    got = fnp.searchsorted(fnp.array(a), fnp.array(v), side=side)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, side=side))
    assert int(fnp.searchsorted(fnp.array(a), 0.0, side=side)) == np.searchsorted(a, 0.0, side=side)
    perm = np.array([3, 0, 4, 1, 2])
    shuffled = a[np.argsort(perm)]
    got = fnp.searchsorted(
        fnp.array(shuffled), fnp.array(v), side=side, sorter=np.argsort(shuffled)
    )
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, side=side))
    got = fgrad.jit(lambda a, v: fnp.searchsorted(a, v, side=side))(fnp.array(a), fnp.array(v))
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, side=side))
    assert int(fnp.array(a).searchsorted(0.1)) == 3


def test_searchsorted_errors():
    with pytest.raises(ValueError, match="side"):
        fnp.searchsorted(fnp.ones(3), 1.0, side="middle")
    with pytest.raises(ShapeError, match="1-D"):
        fnp.searchsorted(fnp.ones((2, 2)), 1.0)


# ------------------------------------------------------------------------ order statistics

Q_CASES = [0.3, 0.5, [0.0, 0.25, 1.0], [[0.1, 0.9], [0.5, 0.75]]]


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_quantile_matches_numpy(method, axis):
    a = RNG.standard_normal((3, 4, 5))
    for q in Q_CASES:
        for keepdims in (False, True):
            got = fnp.quantile(
                fnp.array(a), fnp.array(q), axis=axis, method=method, keepdims=keepdims
            )
            want = np.quantile(a, q, axis=axis, method=method, keepdims=keepdims)
            assert got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
            got = fnp.percentile(
                fnp.array(a), np.multiply(q, 100), axis=axis, method=method, keepdims=keepdims
            )
            want = np.percentile(
                a, np.multiply(q, 100), axis=axis, method=method, keepdims=keepdims
            )
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_median_matches_numpy(axis):
    for shape in [(4, 6), (3, 5)]:  # even and odd lengths
        a = RNG.standard_normal(shape)
        for keepdims in (False, True):
            got = fnp.median(fnp.array(a), axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(np.asarray(got), np.median(a, axis=axis, keepdims=keepdims))


def test_order_statistics_dtypes_nan_and_errors():
    assert fnp.median(fnp.array([1.0, 2.0], dtype="float32")).dtype == np.float32
    assert fnp.median(fnp.array([1, 2, 4])).dtype == np.float64  # ints give float64 (numpy)
    assert float(fnp.median(fnp.array([1, 2, 4, 5]))) == 3.0
    got = fnp.median(fnp.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]]), axis=1)
    np.testing.assert_array_equal(np.asarray(got), [np.nan, 2.0])  # as numpy: NaN propagates
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fnp.quantile(fnp.ones(3), 1.5)
    with pytest.raises(ValueError, match="method"):
        fnp.quantile(fnp.ones(3), 0.5, method="cubic")
    with pytest.raises(ShapeError, match="empty"):
        fnp.median(fnp.ones((0,)))


def test_order_statistics_grads():
    a = fnp.array(_distinct((4, 5)))
    check_grads(lambda a: fnp.median(a, axis=1), (a,), order=2, modes=("rev", "fwd"))
    check_grads(lambda a: fnp.median(a, axis=(0, 1)), (a,), order=2, modes=("rev", "fwd"))
    check_grads(
        lambda a, q: fnp.quantile(a, q, axis=0),
        (a, fnp.array([0.3, 0.6])),
        order=2,
        modes=("rev", "fwd"),
    )
    check_grads(lambda a: fnp.percentile(a, 40.0, axis=1), (a,), order=2, modes=("rev", "fwd"))
    # Even length: half the derivative to each middle element.
    got = fgrad.grad(fnp.median)(fnp.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(got), [0.0, 0.0, 0.5, 0.5])


def test_quantile_traced_q_under_jit():
    a = fnp.array(_distinct((6,)))
    q = fnp.array([0.2, 0.7])
    f = fgrad.jit(lambda a, q: fnp.quantile(a, q))
    np.testing.assert_allclose(np.asarray(f(a, q)), np.quantile(np.asarray(a), [0.2, 0.7]))


# ------------------------------------------------------------------------ nonzero and friends


def test_nonzero_where_argwhere_flatnonzero_match_numpy():
    a = np.array([[0.0, 1.5, 0.0], [np.nan, 0.0, -3.0]])
    x = fnp.array(a)
    for got, want in zip(fnp.nonzero(x), np.nonzero(a)):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(fnp.where(x > 0), np.where(a > 0)):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(fnp.argwhere(x)), np.argwhere(a))
    np.testing.assert_array_equal(np.asarray(fnp.flatnonzero(x)), np.flatnonzero(a))
    np.testing.assert_array_equal(np.asarray(x.nonzero()[1]), np.nonzero(a)[1])
    # Eager concrete values are enough, also under grad.
    fgrad.grad(lambda x: fnp.sum(x[fnp.nonzero(x > 0)]))(fnp.array([1.0, -1.0]))


@pytest.mark.parametrize("size,fill", [(2, None), (5, -1), (4, (7, 8))])
def test_nonzero_with_size_is_traceable(size, fill):
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    rows, cols = np.nonzero(a)
    fills = fill if isinstance(fill, tuple) else (fill or 0,) * 2
    want = [
        np.concatenate([r[:size], np.full(max(0, size - len(r)), f)])
        for r, f in zip((rows, cols), fills)
    ]
    for fn in (
        lambda x: fnp.nonzero(x, size=size, fill_value=fill),
        fgrad.jit(lambda x: fnp.nonzero(x, size=size, fill_value=fill)),
    ):
        got = fn(fnp.array(a))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
    got = fgrad.jit(lambda x: fnp.where(x != 0, size=size, fill_value=fill))(fnp.array(a))
    np.testing.assert_array_equal(np.asarray(got[0]), want[0])
    got = fgrad.jit(lambda x: fnp.argwhere(x, size=size, fill_value=fill))(fnp.array(a))
    np.testing.assert_array_equal(np.asarray(got), np.stack(want, axis=1))


def test_issue_where_one_argument_under_jit_says_what_to_do():
    # Was: DTypeError "<lambda>() missing 2 required positional arguments".
    mask = fnp.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(fnp.where(mask)[0]), [0, 2])
    for fn in (fnp.where, fnp.nonzero, fnp.argwhere, fnp.flatnonzero, fnp.unique):
        with pytest.raises(ConcretizationError, match="size="):
            fgrad.jit(fn)(mask)
        with pytest.raises(ConcretizationError, match="no values yet under jit"):
            fgrad.make_graph(fn)(mask)
    with pytest.raises(TypeError, match="both x and y"):
        fnp.where(mask, 1.0)
    with pytest.raises(ShapeError, match="0-d"):
        fnp.nonzero(fnp.array(1.0))


# ------------------------------------------------------------------------ unique


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_matches_numpy(axis):
    a = np.array([[3.0, 1.0, 3.0], [2.0, 1.0, 2.0], [3.0, 1.0, 3.0]])
    got = fnp.unique(fnp.array(a), True, True, True, axis=axis)
    want = np.unique(a, True, True, True, axis=axis)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
    np.testing.assert_array_equal(np.asarray(fnp.unique(fnp.array(a), axis=axis)), want[0])


def test_unique_nan_and_grad_to_first_occurrence():
    a = np.array([3.0, np.nan, 1.0, 3.0, np.nan])
    for equal_nan in (True, False):
        got = fnp.unique(fnp.array(a), equal_nan=equal_nan)
        np.testing.assert_array_equal(np.asarray(got), np.unique(a, equal_nan=equal_nan))
    g = fgrad.grad(lambda x: fnp.sum(fnp.unique(x) * fnp.array([1.0, 10.0])))(
        fnp.array([3.0, 1.0, 3.0])
    )
    np.testing.assert_array_equal(np.asarray(g), [10.0, 1.0, 0.0])


@pytest.mark.parametrize("size", [2, 4, 7])
def test_unique_with_size_is_traceable(size):
    a = np.array([3.0, np.nan, 1.0, 3.0, np.nan, 2.0])
    values, index, inverse, counts = np.unique(a, True, True, True)
    k = len(values)

    def pad(v, fill):
        return np.concatenate([v[:size], np.full(max(0, size - k), fill)])

    f = fgrad.jit(lambda x: fnp.unique(x, True, True, True, size=size, fill_value=-1.0))
    got = f(fnp.array(a))
    np.testing.assert_array_equal(np.asarray(got[0]), pad(values, -1.0))
    np.testing.assert_array_equal(np.asarray(got[1]), pad(index, 0))
    np.testing.assert_array_equal(np.asarray(got[2]), inverse)
    np.testing.assert_array_equal(np.asarray(got[3]), pad(counts, 0))
    default_fill = fnp.unique(fnp.array([2, 2, 5]), size=3)
    np.testing.assert_array_equal(np.asarray(default_fill), [2, 5, 2])  # JAX: the minimum
