"""JAX features users asked for: ``x.at[idx].min/max/power/apply/mul``, ``nn.one_hot``,
``random.choice``. Values against numpy references, repeated indices, derivatives (JAX's
conventions), jit, vmap and errors.

JAX references: ``jax.Array.at`` (min/max are ``lax.scatter_min``/``scatter_max``; power is
``x ** ones.at[idx].multiply(y)``; apply is ``ufunc.at``: a repeated index applies the
function once per write), ``_scatter_extremal_jvp`` (ties share the derivative evenly),
``jax.nn.one_hot`` and ``jax.random.choice``.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, random
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.numpy._indexing import _IndexUpdateRef
from fgrad.test_util import check_grads


def a(x):
    return np.asarray(x)


REPEATS = np.array([0, 2, 0, 3, 0, 2])


# --------------------------------------------------------------------------- at[].min / max


def _numpy_at(ufunc, x, idx, v):
    out = np.array(x, copy=True)
    ufunc.at(out, idx, v)
    return out


INDEXES = [
    pytest.param(lambda: REPEATS, (6,), id="repeats"),
    pytest.param(lambda: np.array([-1, 1, -1]), (3,), id="negative"),
    pytest.param(lambda: 2, (), id="int"),
    pytest.param(lambda: slice(1, 4), (3,), id="slice"),
    pytest.param(lambda: (slice(None), np.array([1, 1, 0])), (5, 3), id="slice-array"),
    pytest.param(lambda: (np.array([[0], [4]]), np.array([1, 1, 2])), (2, 3), id="2d-arrays"),
]


@pytest.mark.parametrize("name, ufunc", [("min", np.minimum), ("max", np.maximum)])
@pytest.mark.parametrize("make_idx, vshape", INDEXES)
def test_min_max_match_numpy_ufunc_at(name, ufunc, make_idx, vshape):
    rng = np.random.default_rng(0)
    idx = make_idx()
    shape = (5, 4) if vshape in ((5, 3), (2, 3)) else (5,)
    x = rng.normal(size=shape)
    v = rng.normal(size=vshape)
    out = getattr(fnp.asarray(x).at[idx], name)(fnp.asarray(v))
    np.testing.assert_array_equal(a(out), _numpy_at(ufunc, x, idx, v))


def test_min_max_broadcast_values_dtypes_and_masks():
    x = fnp.array([[3.0, -1.0], [0.5, 2.0]], dtype="float32")
    out = x.at[fnp.array([1, 1])].max(fnp.array([1.0, -4.0]))  # values broadcast per row
    assert out.dtype == np.float32
    np.testing.assert_array_equal(a(out), [[3.0, -1.0], [1.0, 2.0]])
    xi = fnp.array([5, 1, 7])
    np.testing.assert_array_equal(
        a(xi.at[fnp.array([0, 0, 2])].min(fnp.array([4, 2, 9]))), [2, 1, 7]
    )
    mask = fnp.array([True, False, True])
    np.testing.assert_array_equal(a(xi.at[mask].max(6)), [6, 1, 7])
    nan = fnp.array([1.0, np.nan, 1.0])
    np.testing.assert_array_equal(
        a(nan.at[fnp.array([0, 1])].min(fnp.array([np.nan, 0.0]))), [np.nan, np.nan, 1.0]
    )


@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_gradients_without_ties(name):
    x = fnp.array([0.3, -1.2, 2.5, 0.8, -0.4])
    v = fnp.array([1.1, -0.7, -2.2, 0.05, 1.9, 2.7])

    def f(x, v):
        return getattr(x.at[fnp.asarray(REPEATS)], name)(v)

    check_grads(f, (x, v), order=2, modes=("rev", "fwd"))
    m = fnp.array([[0.2, -0.9, 1.4], [0.7, 1.6, -0.3]])
    w = fnp.array([[1.3, -0.1], [0.45, 2.2]])
    check_grads(
        lambda m, w: getattr(m.at[:, fnp.array([2, 0])], name)(w),
        (m, w),
        order=2,
        modes=("rev", "fwd"),
    )


def test_min_max_ties_share_the_derivative_evenly():
    """JAX's scatter min/max: the operand and every tied update each get 1/count."""
    idx = fnp.array([0, 0, 1, 2])
    weights = fnp.array([1.0, 10.0, 100.0, 1000.0])

    def f(x, v):
        return fnp.sum(x.at[idx].max(v) * weights)

    x = fnp.array([1.0, 3.0, 7.0, 9.0])
    v = fnp.array([1.0, 1.0, 2.0, 7.0])
    gx, gv = fgrad.grad(f, argnums=(0, 1))(x, v)
    # position 0: x and both updates tie (1/3 each); 1: x wins; 2: x and v tie (1/2);
    # 3: never written (all of it to x)
    np.testing.assert_allclose(a(gx), [1 / 3, 10.0, 50.0, 1000.0])
    np.testing.assert_allclose(a(gv), [1 / 3, 1 / 3, 0.0, 50.0])
    # forward mode agrees with reverse mode
    tx, tv = fnp.array([1.0, 2.0, 3.0, 4.0]), fnp.array([0.5, 0.25, 8.0, 16.0])
    _, jv = fgrad.jvp(f, (x, v), (tx, tv))
    assert float(jv) == pytest.approx(float(fnp.sum(gx * tx) + fnp.sum(gv * tv)))


def test_min_max_nan_derivative_as_jax():
    """A NaN result at a written position passes no derivative; an unwritten NaN passes
    the operand's (JAX's _scatter_extremal_jvp)."""
    x = fnp.array([np.nan, np.nan, 1.0])
    g = fgrad.grad(lambda x: fnp.sum(x.at[fnp.array([0, 2])].min(fnp.array([0.0, 5.0]))))(x)
    np.testing.assert_array_equal(a(g), [0.0, 1.0, 1.0])


def test_min_max_under_jit_with_traced_indices():
    f = fgrad.jit(lambda x, i, v: x.at[i].min(v))
    x, v = fnp.array([3.0, 3.0, 3.0]), fnp.array([1.0, 2.0, 0.5])
    i = fnp.array([0, 0, 2])
    np.testing.assert_array_equal(a(f(x, i, v)), [1.0, 3.0, 0.5])
    np.testing.assert_array_equal(a(f(x, fnp.array([1, 1, 1]), v)), [3.0, 0.5, 3.0])


def test_min_max_under_vmap():
    rng = np.random.default_rng(1)
    xs, vs = rng.normal(size=(4, 5)), rng.normal(size=(4, 6))
    ids = rng.integers(0, 5, size=(4, 6))
    f = lambda x, i, v: x.at[i].max(v)
    got = fgrad.vmap(f)(fnp.asarray(xs), fnp.asarray(ids), fnp.asarray(vs))
    want = np.stack([_numpy_at(np.maximum, xs[b], ids[b], vs[b]) for b in range(4)])
    np.testing.assert_array_equal(a(got), want)
    shared = fgrad.vmap(f, in_axes=(0, None, None))(
        fnp.asarray(xs), fnp.asarray(REPEATS), fnp.asarray(vs[0])
    )
    np.testing.assert_array_equal(
        a(shared), np.stack([_numpy_at(np.maximum, xs[b], REPEATS, vs[0]) for b in range(4)])
    )
    per_example = fgrad.vmap(fgrad.grad(lambda x, v: fnp.sum(f(x, fnp.asarray(REPEATS), v))))
    g = per_example(fnp.asarray(xs), fnp.asarray(vs))
    for b in range(4):
        ref = fgrad.grad(lambda x, v: fnp.sum(f(x, fnp.asarray(REPEATS), v)))
        np.testing.assert_allclose(a(g[b]), a(ref(fnp.asarray(xs[b]), fnp.asarray(vs[b]))))


# --------------------------------------------------------------------------- power / apply / mul


def test_power_repeated_indices_multiply_exponents():
    x = np.array([2.0, 3.0, 4.0, 5.0])
    e = np.array([2.0, 3.0, 0.5, 1.5])
    idx = np.array([0, 0, 2, 3])
    out = fnp.asarray(x).at[fnp.asarray(idx)].power(fnp.asarray(e))
    np.testing.assert_allclose(a(out), [2.0**6, 3.0, 2.0, 5.0**1.5])
    np.testing.assert_allclose(a(fnp.asarray(x).at[1:3].power(2.0)), [2.0, 9.0, 16.0, 5.0])
    check_grads(
        lambda x, e: x.at[fnp.asarray(idx)].power(e),
        (fnp.asarray(x), fnp.asarray(e)),
        order=2,
        modes=("rev", "fwd"),
    )


def test_power_and_apply_need_unique_indices_when_traced():
    x = fnp.array([2.0, 3.0, 4.0])
    i = fnp.array([0, 2])
    with pytest.raises(ConcretizationError, match=r"x.at\[idx\].power.*unique_indices"):
        fgrad.jit(lambda x, i: x.at[i].power(2.0))(x, i)
    with pytest.raises(ConcretizationError, match=r"x.at\[idx\].apply.*unique_indices"):
        fgrad.jit(lambda x, i: x.at[i].apply(fnp.exp))(x, i)
    jp = fgrad.jit(lambda x, i: x.at[i].power(2.0, unique_indices=True))
    np.testing.assert_allclose(a(jp(x, i)), [4.0, 3.0, 16.0])
    ja = fgrad.jit(lambda x, i: x.at[i].apply(fnp.negative, unique_indices=True))
    np.testing.assert_allclose(a(ja(x, i)), [-2.0, 3.0, -4.0])
    # one traced index scalar cannot repeat: no promise needed
    js = fgrad.jit(lambda x, k: x.at[k].apply(fnp.sqrt))
    np.testing.assert_allclose(a(js(x, fnp.array(2))), [2.0, 3.0, 2.0])


@pytest.mark.parametrize(
    "idx, shape",
    [
        pytest.param(np.array([0, 3, 0, 0, 1]), (5,), id="repeats"),
        pytest.param((np.array([1, 1]), slice(None)), (4, 3), id="rows"),
        pytest.param((slice(0, 2), np.array([[2], [2]])), (4, 3), id="slice-array"),
        pytest.param(np.array([[0, 1], [1, 0]]), (4, 3), id="2d"),
        pytest.param(1, (4, 3), id="int"),
        pytest.param(Ellipsis, (4, 3), id="ellipsis"),
    ],
)
def test_apply_matches_numpy_ufunc_at(idx, shape):
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    out = fnp.asarray(x).at[idx].apply(fnp.sin)
    want = np.array(x, copy=True)
    np.sin.at(want, idx)  # a repeated index applies sin once per write
    np.testing.assert_allclose(a(out), want, rtol=1e-15)


def test_apply_gradient_and_errors():
    x = fnp.array([0.3, -0.8, 1.1])
    idx = fnp.array([0, 0, 0, 2])  # sin applied three times at 0
    check_grads(lambda x: x.at[idx].apply(fnp.sin), (x,), order=2, modes=("rev", "fwd"))
    g = fgrad.grad(lambda x: fnp.sum(x.at[idx].apply(fnp.sin)))(x)
    s1, s2 = np.sin(0.3), np.sin(np.sin(0.3))
    np.testing.assert_allclose(a(g)[0], np.cos(s2) * np.cos(s1) * np.cos(0.3))
    assert float(fnp.array(2.0).at[...].apply(fnp.square)) == 4.0
    with pytest.raises(ShapeError, match="elementwise"):
        x.at[idx].apply(fnp.sum)


def test_apply_under_vmap_with_shared_indices():
    xs = fnp.asarray(np.arange(12.0).reshape(4, 3))
    got = fgrad.vmap(lambda x: x.at[fnp.array([1, 1])].apply(lambda v: v + 10.0))(xs)
    want = a(xs).copy()
    want[:, 1] += 20.0
    np.testing.assert_array_equal(a(got), want)


def test_apply_with_indices_mapped_by_vmap():
    xs = fnp.asarray(np.arange(8.0).reshape(2, 4))
    ids = fnp.array([[0, 3], [2, 1]])
    with pytest.raises(ConcretizationError, match="vmap.*unique_indices"):
        fgrad.vmap(lambda x, i: x.at[i].apply(fnp.negative))(xs, ids)
    got = fgrad.vmap(lambda x, i: x.at[i].apply(fnp.negative, unique_indices=True))(xs, ids)
    np.testing.assert_array_equal(a(got), [[-0.0, 1.0, 2.0, -3.0], [4.0, -5.0, -6.0, 7.0]])


def test_mul_is_multiply():
    assert _IndexUpdateRef.mul is _IndexUpdateRef.multiply
    x = fnp.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(
        a(x.at[fnp.array([0, 0])].mul(fnp.array([2.0, 5.0]))), [10.0, 2.0, 3.0]
    )


# --------------------------------------------------------------------------- one_hot


def _one_hot_ref(x, n, axis):
    x = np.asarray(x)
    out = (x[..., None] == np.arange(n)).astype(np.float64)
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
def test_one_hot_matches_reference(axis):
    x = np.array([[0, 3, -1], [2, 4, 7]])  # -1 and 4, 7 are out of range for 4 classes
    out = nn.one_hot(fnp.asarray(x), 4, axis=axis)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(a(out), _one_hot_ref(x, 4, axis))
    assert a(out).sum() == 3  # only the in-range labels are hot


def test_one_hot_dtypes_scalars_and_empty():
    assert nn.one_hot(fnp.array([1, 0]), 3, dtype=fnp.int32).dtype == np.int32
    np.testing.assert_array_equal(
        a(nn.one_hot(np.array([2], np.uint8), 3, dtype=bool)), [[0, 0, 1]]
    )
    np.testing.assert_array_equal(a(nn.one_hot(1, 3)), [0.0, 1.0, 0.0])
    assert nn.one_hot(fnp.array([1, 2]), 0).shape == (2, 0)
    assert nn.one_hot(fnp.zeros((0,), dtype=int), 5).shape == (0, 5)
    assert nn.one_hot(fnp.array([1]), 3, dtype="float32").dtype == np.float32


def test_one_hot_errors():
    with pytest.raises(DTypeError, match="integer class labels, got dtype float64"):
        nn.one_hot(fnp.array([1.0, 2.0]), 3)
    with pytest.raises(TypeError):
        nn.one_hot(fnp.array([True]), 3)
    with pytest.raises(ShapeError, match="axis 3 is out of range"):
        nn.one_hot(fnp.array([1, 2]), 3, axis=3)
    with pytest.raises(TypeError, match="num_classes must be an int"):
        nn.one_hot(fnp.array([1]), 3.0)
    with pytest.raises(ValueError, match=">= 0"):
        nn.one_hot(fnp.array([1]), -1)
    with pytest.raises(ConcretizationError, match="num_classes"):
        fgrad.jit(lambda x, n: nn.one_hot(x, n))(fnp.array([1]), fnp.array(3))


def test_one_hot_jit_vmap_and_as_a_loss_target():
    x = fnp.array([[0, 2], [1, 5]])
    np.testing.assert_array_equal(
        a(fgrad.jit(lambda x: nn.one_hot(x, 3))(x)), _one_hot_ref(a(x), 3, -1)
    )
    got = fgrad.vmap(lambda r: nn.one_hot(r, 3, axis=0))(x)
    np.testing.assert_array_equal(a(got), np.stack([_one_hot_ref(a(x)[b], 3, 0) for b in range(2)]))
    logits = fnp.array([[0.2, 1.0, -0.5], [0.3, 0.1, 0.9]])
    labels = fnp.array([1, 2])

    def loss(z):
        return -fnp.sum(nn.one_hot(labels, 3) * nn.log_softmax(z))

    check_grads(loss, (logits,), order=2, modes=("rev", "fwd"))


# --------------------------------------------------------------------------- random.choice


KEY = random.key(0)


def test_choice_int_uniform_with_and_without_replacement():
    draws = random.choice(KEY, 7, (3, 4))
    assert draws.shape == (3, 4) and draws.dtype == np.int64
    assert a(draws).min() >= 0 and a(draws).max() < 7
    np.testing.assert_array_equal(a(draws), a(random.choice(KEY, 7, (3, 4))))  # per key
    assert not np.array_equal(a(draws), a(random.choice(random.key(1), 7, (3, 4))))
    no_rep = random.choice(KEY, 7, (2, 3), replace=False)
    assert len(set(a(no_rep).ravel().tolist())) == 6
    # JAX's construction: the first draws of a permutation
    np.testing.assert_array_equal(a(no_rep).ravel(), a(random.permutation(KEY, 7))[:6])
    assert sorted(a(random.choice(KEY, 7, (7,), replace=False)).tolist()) == list(range(7))
    assert random.choice(KEY, 4).shape == ()


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("with_p", [False, True])
def test_choice_from_an_array_along_an_axis(replace, with_p):
    x = fnp.asarray(np.arange(24.0).reshape(2, 4, 3))
    p = fnp.array([0.1, 0.2, 0.3, 0.4]) if with_p else None
    out = random.choice(KEY, x, (3,), replace=replace, p=p, axis=1)
    assert out.shape == (2, 3, 3) and out.dtype == np.float64
    ind = random.choice(KEY, 4, (3,), replace=replace, p=p)
    np.testing.assert_array_equal(a(out), a(x)[:, a(ind), :])
    listed = random.choice(KEY, [5, 6, 7, 8], (2, 2), replace=replace, p=p)
    np.testing.assert_array_equal(
        a(listed), np.array([5, 6, 7, 8])[a(random.choice(KEY, 4, (2, 2), replace=replace, p=p))]
    )


def test_choice_with_p_frequencies():
    keys = random.split(KEY, 4000)
    p = fnp.array([0.1, 0.0, 0.6, 0.3])
    draws = a(fgrad.vmap(lambda k: random.choice(k, 4, (), p=p))(keys))
    freq = np.bincount(draws, minlength=4) / draws.size
    # binomial standard error <= sqrt(0.25 / 4000) = 0.0079: 4 SE
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.032)
    assert freq[1] == 0.0  # weight 0 is never drawn
    # weights need not sum to 1
    scaled = a(fgrad.vmap(lambda k: random.choice(k, 4, (), p=p * 5.0))(keys))
    np.testing.assert_array_equal(scaled, draws)


def test_choice_without_replacement_with_p_gumbel_top_k():
    keys = random.split(KEY, 4000)
    w = np.array([1.0, 2.0, 3.0, 4.0, 0.0])
    p = fnp.asarray(w)
    draws = a(fgrad.vmap(lambda k: random.choice(k, 5, (2,), replace=False, p=p))(keys))
    assert (draws[:, 0] != draws[:, 1]).all()
    assert not (draws == 4).any()  # weight 0 never drawn while others remain
    # sequential sampling proportional to p: P(first = i) = w_i / 10 and
    # P(second = j) = sum_i w_i / 10 * w_j / (10 - w_i)
    first = np.bincount(draws[:, 0], minlength=5) / len(draws)
    np.testing.assert_allclose(first, w / 10.0, atol=0.032)
    second_ref = [sum(w[i] / 10 * w[j] / (10 - w[i]) for i in range(4) if i != j) for j in range(5)]
    second = np.bincount(draws[:, 1], minlength=5) / len(draws)
    np.testing.assert_allclose(second, second_ref, atol=0.032)
    everything = a(random.choice(KEY, 5, (5,), replace=False, p=p))
    assert sorted(everything.tolist()) == [0, 1, 2, 3, 4] and everything[-1] == 4


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"replace": False},
        {"p": [0.2, 0.3, 0.5, 0.0, 1.0]},
        {"replace": False, "p": [0.2, 0.3, 0.5, 0.0, 1.0]},
    ],
    ids=["uniform", "no-replace", "p", "p-no-replace"],
)
def test_choice_jit_and_vmap_match_eager(kw):
    kw = {k: fnp.asarray(v) if k == "p" else v for k, v in kw.items()}
    f = lambda key: random.choice(key, 5, (2, 2), **kw)
    np.testing.assert_array_equal(a(fgrad.jit(f)(KEY)), a(f(KEY)))
    keys = random.split(random.key(3), 5)
    loop = np.stack([a(f(keys[i])) for i in range(5)])
    np.testing.assert_array_equal(a(fgrad.vmap(f)(keys)), loop)
    np.testing.assert_array_equal(a(fgrad.jit(fgrad.vmap(f))(keys)), loop)
    if "p" in kw:  # weights traced by jit, and mapped by vmap
        g = lambda key, p: random.choice(key, 5, (2,), replace=kw.get("replace", True), p=p)
        np.testing.assert_array_equal(a(fgrad.jit(g)(KEY, kw["p"])), a(g(KEY, kw["p"])))
        ps = fnp.asarray(np.abs(np.random.default_rng(0).normal(size=(5, 5))))
        looped = np.stack([a(g(keys[i], ps[i])) for i in range(5)])
        np.testing.assert_array_equal(a(fgrad.vmap(g)(keys, ps)), looped)


def test_choice_is_differentiable_in_the_array():
    x = fnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    check_grads(lambda x: random.choice(KEY, x, (4,), axis=1), (x,), order=2, modes=("rev", "fwd"))
    g = fgrad.grad(lambda x: fnp.sum(random.choice(KEY, x, (3,), replace=False, axis=1)))(x)
    np.testing.assert_array_equal(a(g), np.ones((2, 3)))


def test_choice_zero_draws_and_errors():
    assert random.choice(KEY, 3, (0,)).shape == (0,)
    empty = random.choice(KEY, fnp.ones((2, 3)), (0, 4), axis=1)
    assert empty.shape == (2, 0, 4) and empty.dtype == np.float64
    assert random.choice(KEY, 0, (0,), replace=False).shape == (0,)
    with pytest.raises(ValueError, match=r"larger sample \(size 6.*population \(size 5\)"):
        random.choice(KEY, 5, (2, 3), replace=False)
    with pytest.raises(ValueError, match=r"size 4.*size 3"):
        random.choice(KEY, fnp.ones((3, 2)), (4,), replace=False, p=fnp.ones(3))
    with pytest.raises(ValueError, match="greater than 0"):
        random.choice(KEY, 0, (2,))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        random.choice(KEY, 4, (2,), p=fnp.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        random.choice(KEY, 2, (2,), p=fnp.array([-0.5, 1.5]))
    with pytest.raises(ValueError, match="non-negative"):
        random.choice(KEY, 2, (2,), p=fnp.zeros(2))
    with pytest.raises(ValueError, match="0-d array"):
        random.choice(KEY, fnp.array(2.0), (2,))
    with pytest.raises(TypeError, match="int or an array"):
        random.choice(KEY, 2.5, (2,))
    with pytest.raises(ShapeError, match="no axis 2"):
        random.choice(KEY, fnp.ones((2, 2)), (1,), axis=2)
    with pytest.raises(TypeError, match="static"):
        fgrad.jit(lambda k, n: random.choice(k, n, (2,)))(KEY, fnp.array(3))
    with pytest.raises(TypeError, match="key"):
        random.choice(0, 3, (2,))


# ----------------------------------------------------------- traced fill values (as jnp's)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda x, s: fnp.full_like(x, s), id="full_like"),
        pytest.param(lambda x, s: fnp.full_like(x, s, dtype="float64"), id="full_like-dtype"),
        pytest.param(lambda x, s: fnp.pad(x, ((1, 0), (0, 2)), constant_values=s), id="pad"),
    ],
)
def test_a_0d_tensor_fill_value_works_eagerly_under_jit_and_grad(make):
    x = fnp.arange(6.0, dtype="float32").reshape(2, 3)
    s = fnp.asarray(7.0)
    eager = make(x, s)
    jitted = fgrad.jit(make)(x, s)
    assert jitted.dtype == eager.dtype and jitted.shape == eager.shape
    np.testing.assert_array_equal(a(jitted), a(eager))
    reference = make(x, 7.0)  # the Python-scalar path
    np.testing.assert_array_equal(a(eager), a(reference))
    assert eager.dtype == reference.dtype
    n_filled = int(np.sum(a(make(x, fnp.asarray(np.nan))) != a(make(x, fnp.asarray(-1.0)))))
    x64 = x.astype("float64")  # finite differences need float64 throughout
    check_grads(lambda v: fnp.sum(make(x64, v) ** 2), (fnp.asarray(0.5),), order=1)
    g = fgrad.jit(fgrad.grad(lambda v: fnp.sum(make(x, v))))(fnp.asarray(0.5))
    assert float(g) == n_filled


def test_fill_values_that_are_not_scalars_are_errors():
    with pytest.raises(ValueError, match="full_like: fill_value must be a scalar"):
        fnp.full_like(fnp.ones(3), fnp.ones(3))
    with pytest.raises(ValueError, match="pad: constant_values must be a scalar"):
        fnp.pad(fnp.ones(3), 1, constant_values=fnp.ones(2))


# ----------------------------------------------------------- linspace with traced ends


@pytest.mark.parametrize(
    "start, stop, num, endpoint",
    [(0.0, 1.0, 5, True), (0.1, 0.7, 7, True), (-2.5, 3.3, 4, False), (1.0, 1.0, 3, True), (0.3, 0.9, 1, True), (0.0, 1.0, 0, True)],
)
def test_linspace_with_traced_ends_equals_numpy(start, stop, num, endpoint):
    f = fgrad.jit(lambda a, b: fnp.linspace(a, b, num, endpoint=endpoint))
    got = f(start, stop)
    want = np.linspace(start, stop, num, endpoint=endpoint)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(a(got), want)  # bit for bit: the same formula


def test_linspace_is_differentiable_in_its_ends_and_keeps_float32():
    check_grads(lambda s, t: fnp.linspace(s, t, 5), (fnp.asarray(-1.0), fnp.asarray(2.0)), order=2)
    s32 = fnp.asarray(2.0, dtype="float32")
    assert fgrad.jit(lambda s: fnp.linspace(0.0, s, 3))(s32).dtype == np.float32
    rows = fgrad.vmap(lambda s: fnp.linspace(0.0, s, 3))(fnp.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(a(rows), [[0.0, 0.5, 1.0], [0.0, 1.0, 2.0]])


@pytest.mark.parametrize("start", [0.0, fnp.asarray(0.0)])
def test_linspace_negative_num_is_an_error(start):
    with pytest.raises(ValueError, match="num must be >= 0, got -1"):
        fnp.linspace(start, 1.0, -1)
