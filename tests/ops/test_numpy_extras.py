"""More numpy functions: diag/tril/triu, isclose/allclose, creation, meshgrid, diff, cross,
interp, dtype aliases, sum(where=), logsumexp(b=), round(x), linalg.lstsq/matrix_power, and
the error messages for conv2d shape mistakes and traced slice bounds.

Forward values are compared with numpy (the reference semantics); derivatives with central
finite differences through ``check_grads`` (order 2, both modes, unless stated).
"""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.errors import ConcretizationError, ShapeError
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)
BOTH = ("rev", "fwd")


# ------------------------------------------------------------------------ diagonals, triangles


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diag_tril_triu_match_numpy(k):
    v = RNG.standard_normal(3)
    m = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(np.asarray(fnp.diag(fnp.array(v), k)), np.diag(v, k))
    np.testing.assert_array_equal(np.asarray(fnp.diag(fnp.array(m), k)), np.diag(m, k))
    for fn, ref in ((fnp.tril, np.tril), (fnp.triu, np.triu)):
        np.testing.assert_array_equal(np.asarray(fn(fnp.array(m), k)), ref(m, k))
        np.testing.assert_array_equal(np.asarray(fn(fnp.array(v), k)), ref(v, k))  # 1-D: rows
        batch = RNG.standard_normal((2, 3, 3))
        np.testing.assert_array_equal(np.asarray(fn(fnp.array(batch), k)), ref(batch, k))


def test_diag_tril_triu_grads_and_errors():
    m = fnp.array(RNG.standard_normal((3, 4)))
    check_grads(lambda m: fnp.diag(m, 1), (m,), order=2, modes=BOTH)
    check_grads(lambda v: fnp.diag(v, -1), (fnp.array([1.0, 2.0]),), order=2, modes=BOTH)
    check_grads(lambda m: fnp.triu(m, 1) * fnp.tril(m, 1), (m,), order=2, modes=BOTH)
    # triu is not m - tril(m): infinities below the diagonal do not become NaN.
    inf = fnp.array([[1.0, 2.0], [np.inf, 4.0]])
    np.testing.assert_array_equal(np.asarray(fnp.triu(inf)), [[1.0, 2.0], [0.0, 4.0]])
    with pytest.raises(ShapeError):
        fnp.diag(fnp.ones((2, 2, 2)))
    with pytest.raises(ShapeError):
        fnp.tril(fnp.array(1.0))


# ------------------------------------------------------------------------ comparisons


def test_isclose_allclose_match_numpy():
    a = np.array([1.0, 1.0 + 1e-9, np.inf, np.inf, -np.inf, np.nan, 1.0, 0.0, 1e-9])
    b = np.array([1.0, 1.0, np.inf, -np.inf, 1.0, np.nan, np.inf, 1e-9, 0.0])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-10}):
        got = fnp.isclose(fnp.array(a), fnp.array(b), **kw)
        np.testing.assert_array_equal(np.asarray(got), np.isclose(a, b, **kw))
        assert bool(fnp.allclose(fnp.array(a[:2]), b[:2], **kw)) == np.allclose(a[:2], b[:2], **kw)
        assert bool(fnp.allclose(fnp.array(a), fnp.array(b), **kw)) == np.allclose(a, b, **kw)
    np.testing.assert_array_equal(
        np.asarray(fnp.isclose(fnp.array([1, 2]), fnp.array([1, 3]))), [True, False]
    )
    assert bool(fgrad.jit(fnp.allclose)(fnp.ones(2), fnp.ones(2)))


# ------------------------------------------------------------------------ creation


def test_identity_empty_empty_like_and_dtype_aliases():
    np.testing.assert_array_equal(np.asarray(fnp.identity(3)), np.identity(3))
    assert fnp.identity(2, dtype=fnp.int8).dtype == np.int8
    e = fnp.empty((2, 3), dtype="float32")
    assert e.shape == (2, 3) and e.dtype == np.float32
    like = fnp.empty_like(fnp.ones((2,), dtype="int16"))
    assert like.shape == (2,) and like.dtype == np.int16
    assert fnp.empty_like(fnp.ones(2), dtype=fnp.uint8, shape=(4, 1)).shape == (4, 1)
    for name in ("uint8", "int8", "int16", "uint16", "uint32", "uint64", "bool", "bool_"):
        assert getattr(fnp, name) == np.dtype(name)
    assert fnp.array([1, 0]).astype(fnp.bool).dtype == np.bool_


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid_matches_numpy(indexing, sparse):
    xs = [RNG.standard_normal(n) for n in (2, 3, 4)]
    for k in (1, 2, 3):
        got = fnp.meshgrid(*[fnp.array(x) for x in xs[:k]], indexing=indexing, sparse=sparse)
        want = np.meshgrid(*xs[:k], indexing=indexing, sparse=sparse)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
    x, y = fnp.array(xs[0]), fnp.array(xs[1])
    check_grads(
        lambda x, y: (
            fnp.meshgrid(x, y, indexing=indexing)[0] * fnp.meshgrid(x, y, indexing=indexing)[1]
        ),
        (x, y),
        order=2,
        modes=BOTH,
    )
    with pytest.raises(ValueError, match="indexing"):
        fnp.meshgrid(x, indexing="yx")


# ------------------------------------------------------------------------ diff, cross


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("axis", [0, -1])
def test_diff_matches_numpy(n, axis):
    a = RNG.standard_normal((4, 5))
    np.testing.assert_allclose(np.asarray(fnp.diff(fnp.array(a), n, axis)), np.diff(a, n, axis))
    got = fnp.diff(
        fnp.array(a), n, axis, prepend=0.0, append=fnp.full((1, 5), 2.0) if axis == 0 else 2.0
    )
    want = np.diff(a, n, axis, prepend=0.0, append=np.full((1, 5), 2.0) if axis == 0 else 2.0)
    np.testing.assert_allclose(np.asarray(got), want)
    b = np.array([True, True, False, True])
    np.testing.assert_array_equal(np.asarray(fnp.diff(fnp.array(b), 1)), np.diff(b, 1))
    check_grads(lambda a: fnp.diff(a, 2, axis, prepend=1.0), (fnp.array(a),), order=2, modes=BOTH)


def test_diff_errors():
    with pytest.raises(ValueError, match="non-negative"):
        fnp.diff(fnp.ones(3), -1)
    with pytest.raises(ShapeError):
        fnp.diff(fnp.array(1.0))


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize(
    "sa,sb,kw",
    [
        ((3,), (3,), {}),
        ((4, 3), (3,), {}),
        ((2, 1, 3), (4, 3), {}),
        ((3, 4), (4, 3), {"axisa": 0}),
        ((3, 4), (3, 4), {"axis": 0}),
        ((2, 3), (2, 3), {"axisc": 0}),
        ((4, 2), (4, 3), {}),
        ((3,), (2,), {}),
    ],
)
def test_cross_matches_numpy(sa, sb, kw):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    np.testing.assert_allclose(
        np.asarray(fnp.cross(fnp.array(a), fnp.array(b), **kw)), np.cross(a, b, **kw)
    )
    check_grads(
        lambda a, b: fnp.cross(a, b, **kw), (fnp.array(a), fnp.array(b)), order=2, modes=BOTH
    )


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
def test_cross_two_vectors_and_errors():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0], [7.0, 9.0]])
    want = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]  # numpy's (deprecated) 2-vector result
    np.testing.assert_allclose(np.asarray(fnp.cross(fnp.array(a), fnp.array(b))), want)
    with pytest.raises(ShapeError, match="2 or 3"):
        fnp.cross(fnp.ones(4), fnp.ones(3))


# ------------------------------------------------------------------------ interp


def test_interp_matches_numpy():
    xp = np.array([0.0, 1.0, 1.5, 3.0])
    fp = np.array([1.0, -1.0, 2.0, 0.5])
    x = np.array([[-1.0, 0.0, 0.3, 1.0], [1.2, 2.9, 3.0, 7.0]])
    for kw in ({}, {"left": -5.0}, {"right": 9.0, "left": 0.0}):
        got = fnp.interp(fnp.array(x), fnp.array(xp), fnp.array(fp), **kw)
        np.testing.assert_allclose(np.asarray(got), np.interp(x, xp, fp, **kw), rtol=1e-15)
    got = fnp.interp(
        fnp.array(x), fnp.array([2.0, 0.5, 1.5]), fnp.array([1.0, 2.0, 4.0]), period=2.5
    )
    np.testing.assert_allclose(
        np.asarray(got), np.interp(x, [2.0, 0.5, 1.5], [1.0, 2.0, 4.0], period=2.5)
    )
    np.testing.assert_allclose(
        np.asarray(fnp.interp(0.5, [1.0], [3.0])), np.interp(0.5, [1.0], [3.0])
    )
    got = fnp.interp(fnp.array([0.5]), fnp.array(xp), fnp.array(fp + 1j * fp))
    np.testing.assert_allclose(np.asarray(got), np.interp([0.5], xp, fp + 1j * fp))
    got = fgrad.jit(fnp.interp)(fnp.array(x), fnp.array(xp), fnp.array(fp))
    np.testing.assert_allclose(np.asarray(got), np.interp(x, xp, fp), rtol=1e-15)
    with pytest.raises(ShapeError):
        fnp.interp(fnp.ones(2), fnp.ones(3), fnp.ones(2))


def test_interp_grads_in_x_fp_and_xp():
    xp = fnp.array([0.0, 1.0, 1.5, 3.0])
    fp = fnp.array([1.0, -1.0, 2.0, 0.5])
    x = fnp.array([-0.5, 0.3, 1.2, 2.2, 3.5])  # away from the knots, two outside the range
    check_grads(fnp.interp, (x, xp, fp), order=2, modes=BOTH)
    # At a knot the slope is the right segment's; outside the range it is 0.
    g = fgrad.grad(lambda x: fnp.sum(fnp.interp(x, xp, fp)))(fnp.array([1.0, -1.0, 4.0]))
    np.testing.assert_allclose(np.asarray(g), [6.0, 0.0, 0.0])


# ------------------------------------------------------------------------ reductions, round


def test_sum_where():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.inf]])
    mask = np.isfinite(a)
    np.testing.assert_array_equal(
        np.asarray(fnp.sum(fnp.array(a), axis=1, where=fnp.array(mask))),
        np.sum(a, axis=1, where=mask),
    )
    g = fgrad.grad(lambda x: fnp.sum(x, where=fnp.isfinite(x)))(fnp.array(a))
    np.testing.assert_array_equal(np.asarray(g), mask.astype(float))  # no NaN leaks
    check_grads(
        lambda x: fnp.sum(x * x, axis=0, where=fnp.array(mask)),
        (fnp.array(np.where(mask, a, 0.0)),),
        order=2,
        modes=BOTH,
    )


def _np_logsumexp(x, axis, b):
    s = np.sum(b * np.exp(x), axis=axis)
    return np.log(np.abs(s)), np.sign(s)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_logsumexp_with_weights(axis):
    x = RNG.standard_normal((3, 4))
    b = RNG.uniform(0.1, 2.0, (3, 4))
    got = fnp.logsumexp(fnp.array(x), axis, b=fnp.array(b))
    np.testing.assert_allclose(np.asarray(got), _np_logsumexp(x, axis, b)[0], rtol=1e-13)
    got, sign = fnp.logsumexp(fnp.array(x), axis, b=fnp.array(b - 1.0), return_sign=True)
    want, want_sign = _np_logsumexp(x, axis, b - 1.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(sign), want_sign)
    check_grads(
        lambda x, b: fnp.logsumexp(x, axis, b=b), (fnp.array(x), fnp.array(b)), order=2, modes=BOTH
    )
    kept = fnp.logsumexp(fnp.array(x), axis, b=fnp.array(b), keepdims=True)
    assert kept.shape == np.sum(x, axis=axis, keepdims=True).shape


def test_logsumexp_with_weights_edge_cases():
    # Stable for large inputs; a zero weight drops its element (even +inf); an all -inf
    # slice gives -inf and a zero derivative, as the unweighted logsumexp.
    big = fnp.logsumexp(fnp.array([1000.0, 1000.0]), b=fnp.array([1.0, 3.0]))
    np.testing.assert_allclose(float(big), 1000.0 + np.log(4.0))
    assert float(fnp.logsumexp(fnp.array([np.inf, 0.0]), b=fnp.array([0.0, 2.0]))) == np.log(2.0)
    empty = fnp.array([-np.inf, -np.inf])
    assert float(fnp.logsumexp(empty, b=fnp.array([1.0, 2.0]))) == -np.inf
    g = fgrad.grad(lambda x: fnp.logsumexp(x, b=fnp.array([1.0, 2.0])))(empty)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0])
    g = fgrad.grad(lambda x: fnp.logsumexp(x, b=fnp.array([0.0, 2.0])))(fnp.array([np.inf, 1.0]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0])
    x = fnp.array([0.5, 1.0], dtype="float32")
    assert fnp.logsumexp(x, b=2.0).dtype == np.float32


def test_round_builtin():
    x = fnp.array([0.5, 1.5, 2.567])
    np.testing.assert_array_equal(np.asarray(round(x)), np.round([0.5, 1.5, 2.567]))
    np.testing.assert_array_equal(np.asarray(round(x, 1)), np.round([0.5, 1.5, 2.567], 1))
    assert isinstance(round(x), fgrad.Tensor)


# ------------------------------------------------------------------------ linalg


@pytest.mark.parametrize(
    "sa,sb", [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 5), (3,)), ((4, 4), (4, 2))]
)
def test_lstsq_matches_numpy_and_is_differentiable(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    got = fnp.linalg.lstsq(fnp.array(a), fnp.array(b), numpy_resid=True)
    want = np.linalg.lstsq(a, b)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), w, atol=1e-12)
    check_grads(
        lambda a, b: fnp.linalg.lstsq(a, b).x, (fnp.array(a), fnp.array(b)), order=2, modes=BOTH
    )
    check_grads(
        lambda a, b: fnp.linalg.lstsq(a, b)[1], (fnp.array(a), fnp.array(b)), order=1, modes=BOTH
    )
    jitted = fgrad.jit(lambda a, b: fnp.linalg.lstsq(a, b).x)(fnp.array(a), fnp.array(b))
    np.testing.assert_allclose(np.asarray(jitted), want[0], atol=1e-12)


def test_lstsq_rank_deficient_and_errors():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])  # rank 1
    b = np.array([1.0, 2.0, 2.0])
    got = fnp.linalg.lstsq(fnp.array(a), fnp.array(b), numpy_resid=True)
    want = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(np.asarray(got.x), want[0], atol=1e-12)
    assert int(got.rank) == want[2] and got.residuals.shape == want[1].shape == (0,)
    with pytest.raises(ShapeError):
        fnp.linalg.lstsq(fnp.ones((3, 2)), fnp.ones(2))
    with pytest.raises(ConcretizationError, match="numpy_resid"):
        fgrad.jit(lambda a, b: fnp.linalg.lstsq(a, b, numpy_resid=True))(fnp.array(a), fnp.array(b))


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5])
def test_matrix_power_matches_numpy_and_is_differentiable(n):
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    np.testing.assert_allclose(
        np.asarray(fnp.linalg.matrix_power(fnp.array(a), n)),
        np.linalg.matrix_power(a, n),
        rtol=1e-12,
    )
    check_grads(lambda a: fnp.linalg.matrix_power(a, n), (fnp.array(a),), order=2, modes=BOTH)


def test_matrix_power_integers_and_errors():
    m = np.array([[1, 1], [0, 1]])
    for n in (0, 3):
        got = fnp.linalg.matrix_power(fnp.array(m), n)
        np.testing.assert_array_equal(np.asarray(got), np.linalg.matrix_power(m, n))
        assert got.dtype == m.dtype
    with pytest.raises(TypeError, match="integer"):
        fnp.linalg.matrix_power(fnp.array(m), 1.5)
    with pytest.raises(ShapeError, match="square"):
        fnp.linalg.matrix_power(fnp.ones((2, 3)), 2)


# ------------------------------------------------------------------------ error messages


@pytest.mark.parametrize("x_shape", [(2, 2, 2, 3), (2, 2, 3, 3)])
def test_conv2d_channel_mismatch_raises_before_output_size(x_shape):
    # (2, 2, 2, 3) with a 3x3 filter used to give an empty (2, 4, 0, 1) result: the output
    # size was computed before the channels were checked.
    w = fnp.ones((4, 1, 3, 3))
    for fn in (nn.conv2d, fgrad.jit(nn.conv2d)):
        with pytest.raises(ShapeError, match="has 2 channels but the filter"):
            fn(fnp.ones(x_shape), w)


def test_conv2d_filter_larger_than_image_mentions_nchw():
    x_nhwc = fnp.ones((1, 2, 2, 3))  # a channels-last image with 3 channels
    w = fnp.ones((4, 3, 3, 3))
    with pytest.raises(ShapeError, match="channels-last"):
        nn.conv2d(x_nhwc, w)
    with pytest.raises(ShapeError, match=r"does not fit .* NCHW"):
        nn.conv2d(fnp.ones((1, 3, 2, 2)), w)
    with pytest.raises(ShapeError, match=r"spanning 5x5\).* NCHW"):
        fgrad.jit(lambda x, w: nn.conv2d(x, w, dilation=2))(fnp.ones((1, 3, 4, 4)), w)
    assert nn.conv2d(fnp.ones((1, 3, 2, 2)), w, padding=1).shape == (1, 4, 2, 2)


def test_traced_slice_bound_points_to_dynamic_slice():
    x = fnp.arange(10.0)
    with pytest.raises(ConcretizationError, match=r"fnp\.dynamic_slice\(x, \(i,\), \(2,\)\)"):
        fgrad.jit(lambda x, i: x[i : i + 2])(x, fnp.array(3))
    with pytest.raises(
        ConcretizationError, match=r"axis 1 .* fnp\.dynamic_slice\(x, \(0, i\), \(2, size\)\)"
    ):
        fgrad.jit(lambda x, i: x[:, i:])(x.reshape(2, 5), fnp.array(3))
    # Eager tracers are concrete, so grad of a value-dependent slice still works.
    g = fgrad.grad(lambda x, i: fnp.sum(x[i : i + 2]))(x, fnp.array(3))
    np.testing.assert_array_equal(np.asarray(g), [0, 0, 0, 1, 1, 0, 0, 0, 0, 0])
    got = fgrad.jit(lambda x, i: fnp.dynamic_slice(x, (i,), (2,)))(x, fnp.array(3))
    np.testing.assert_array_equal(np.asarray(got), [3.0, 4.0])


@pytest.mark.parametrize("pool", [nn.max_pool2d, nn.avg_pool2d])
def test_pool_window_larger_than_image_raises(pool):
    # Used to return an empty (1, 1, 0, 0) result.
    with pytest.raises(ShapeError, match="does not fit the 2x2 input.*NCHW"):
        pool(fnp.ones((1, 1, 2, 2)), 3)
    with pytest.raises(ShapeError, match="does not fit"):
        fgrad.jit(lambda x: pool(x, 3))(fnp.ones((1, 1, 2, 2)))
