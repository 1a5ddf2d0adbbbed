"""fgrad.numpy's array functions under jit (size= where the size depends on values), vmap
and grad: the same values as eagerly (numpy's), derivatives against finite differences."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ConcretizationError
from fgrad.test_util import check_grads

RNG = np.random.default_rng(1)
A = fnp.asarray(RNG.normal(size=(3, 4)))
V = fnp.asarray(RNG.normal(size=6))
W = fnp.asarray(RNG.normal(size=(4, 6)))
I1 = fnp.asarray(RNG.integers(0, 6, size=9))
I2 = fnp.asarray(RNG.integers(3, 9, size=7))


def _eq(got, want):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=0)
        assert np.asarray(g).shape == np.asarray(w).shape


def _padded(x, size, fill):
    x = np.asarray(x)
    return np.concatenate([x, np.full(size - x.size, fill, x.dtype)])


# ------------------------------------------------------------------------ gradients

GRADS = [
    ("append", lambda x: fnp.append(x, x[:2] * 3.0), (V,)),
    ("insert", lambda x, y: fnp.insert(x, [1, 3, 3], y[:3], axis=1), (A, V)),
    ("delete", lambda x: fnp.delete(x, [0, 2], axis=1), (A,)),
    ("block", lambda x, y: fnp.block([[x, x[:, :1]], [y[None, :5]]]), (A, V)),
    ("column_stack", lambda x: fnp.column_stack([x, x ** 2]), (V,)),
    ("dstack", lambda x: fnp.dstack([x, 2.0 * x]), (A,)),
    ("hsplit", lambda x: fnp.hsplit(x, [1])[1] ** 2, (A,)),
    ("vsplit", lambda x: fnp.vsplit(x, 3)[2] * 3.0, (A,)),
    ("rot90", lambda x: fnp.rot90(x, 3) ** 2, (A,)),
    ("rollaxis", lambda x: fnp.rollaxis(x[None], 2) * x.sum(), (A,)),
    ("resize", lambda x: fnp.resize(x, (4, 4)) ** 2, (V,)),
    ("trim_zeros", lambda x: fnp.trim_zeros(fnp.concatenate([fnp.zeros(2), x])) ** 2, (V,)),
    ("diagflat", lambda x: fnp.diagflat(x, 1) ** 2, (V,)),
    ("fill_diagonal",
     lambda x, v: fnp.fill_diagonal(x, v[:2], wrap=True, inplace=False) ** 2, (W.T, V)),
    ("select", lambda x: fnp.select([x > 0.5, x < -0.5], [x ** 2, fnp.sin(x)], default=x), (A,)),
    ("piecewise",
     lambda x: fnp.piecewise(x, [x < 0, x > 1], [fnp.exp, lambda v: v ** 3, lambda v: 2.0 * v]),
     (V,)),
    ("choose", lambda x, y: fnp.choose(fnp.array([0, 1, 1, 0]), [x[0], y[:4]]), (A, V)),
    ("compress", lambda x: fnp.compress(fnp.array([True, False, True]), x, axis=0) ** 2, (A,)),
    ("extract", lambda x: fnp.extract(fnp.array([1, 0, 1, 1, 0, 1]), x) ** 2, (V,)),
    ("extract_of_traced_mask", lambda x: fnp.extract(x > 0, x) ** 2, (V,)),
    ("place", lambda x, v: fnp.place(x, np.asarray(A) > 0, v[:2], inplace=False) ** 2, (A, V)),
    ("put", lambda x, v: fnp.put(x, [0, 5, 5], v[:3], inplace=False) ** 2, (A, V)),
    ("put_along_axis",
     lambda x, v: fnp.put_along_axis(
         x, fnp.array([[1], [0], [3]]), v[:3, None], 1, inplace=False) ** 2,
     (A, V)),
    ("partition", lambda x: fnp.partition(x, 2) * fnp.arange(6.0), (V,)),
    ("unique_values", lambda x: fnp.unique_values(fnp.concatenate([x, x[:2]])) ** 2, (V,)),
    ("union1d", lambda x, y: fnp.union1d(x, y[:3]) * fnp.arange(9.0), (V, V * 2.0)),
    ("intersect1d", lambda x: fnp.intersect1d(x, x[1:4]) ** 2, (V,)),
    ("setdiff1d", lambda x: fnp.setdiff1d(x, x[1:4]) ** 2, (V,)),
    ("setxor1d", lambda x, y: fnp.setxor1d(x, y) ** 2, (V, V[:2] + 10.0)),
    ("apply_along_axis", lambda x: fnp.apply_along_axis(lambda v: v * fnp.sum(v ** 2), 0, x), (A,)),
    ("apply_over_axes", lambda x: fnp.apply_over_axes(fnp.sum, x ** 2, [0, 1]), (A,)),
    ("frompyfunc",
     lambda x, y: fnp.frompyfunc(lambda a, b: fnp.sin(a) * b, 2, 1)(x, y[:4]), (A, V)),
    ("logspace",
     lambda a, b: fnp.logspace(a, b, 5, base=3.0), (fnp.asarray(0.3), fnp.asarray(1.2))),
    ("geomspace", lambda a, b: fnp.geomspace(a, b, 5), (fnp.asarray(0.3), fnp.asarray(4.0))),
    ("copy", lambda x: fnp.copy(x) ** 2, (A,)),
]


@pytest.mark.parametrize("name,f,args", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_match_finite_differences(name, f, args):
    check_grads(f, args, order=1, modes=("rev", "fwd"))


def test_second_order_through_gathers_and_scatters():
    check_grads(lambda x: fnp.insert(x, 2, x[0] ** 2) ** 3, (V,), order=2)
    check_grads(lambda x: fnp.put(x, [1], x[2:3] ** 2, inplace=False) ** 2, (V,), order=2)


def test_index_and_set_results_carry_no_gradient():
    def f(x):
        order = fnp.lexsort([x])
        hit = fnp.isin(x, x[:2])
        return fnp.sum(x * order) + fnp.sum(fnp.where(hit, x, 0.0))

    g = fgrad.grad(f)(V)
    want = np.asarray(fnp.lexsort([V]), float) + np.isin(np.asarray(V), np.asarray(V)[:2])
    np.testing.assert_allclose(np.asarray(g), want)


# ------------------------------------------------------------------------ jit with size=

SIZED = [  # (name, the sized call, its arguments, numpy's unpadded result, size, fill_value)
    ("compress", lambda c, x: fnp.compress(c, x, size=4, fill_value=-1.0), (V > 0, V),
     lambda c, x: x[c], 4, -1.0),
    ("extract", lambda c, x: fnp.extract(c, x, size=7), (V > 0, V), lambda c, x: x[c], 7, 0.0),
    ("unique_values", lambda x: fnp.unique_values(x, size=8, fill_value=-1), (I1,), np.unique,
     8, -1),
    ("union1d", lambda a, b: fnp.union1d(a, b, size=10, fill_value=99), (I1, I2), np.union1d,
     10, 99),
    ("intersect1d", lambda a, b: fnp.intersect1d(a, b, size=5, fill_value=-7), (I1, I2),
     np.intersect1d, 5, -7),
    ("setdiff1d", lambda a, b: fnp.setdiff1d(a, b, size=6, fill_value=0), (I1, I2),
     np.setdiff1d, 6, 0),
    ("setxor1d", lambda a, b: fnp.setxor1d(a, b, size=9, fill_value=-1), (I1, I2),
     np.setxor1d, 9, -1),
    ("delete", lambda x, i: fnp.delete(x, i, assume_unique_indices=True),
     (V, fnp.array([4, 1])), np.delete, 4, None),
]


@pytest.mark.parametrize("name,f,args,want,size,fill", SIZED, ids=[s[0] for s in SIZED])
def test_jit_with_static_size_matches_numpy(name, f, args, want, size, fill):
    expected = want(*[np.asarray(a) for a in args])
    _eq(fgrad.jit(f)(*args), expected if fill is None else _padded(expected, size, fill))


def test_sized_unique_all_and_intersect1d_indices_under_jit():
    r = fgrad.jit(lambda x: fnp.unique_all(x, size=7, fill_value=0))(I1)
    v, i, inv, c = np.unique(
        np.asarray(I1), return_index=True, return_inverse=True, return_counts=True
    )
    k = v.size
    _eq(r.values[:k], v)
    _eq(r.indices[:k], i)
    _eq(r.inverse_indices, inv)
    _eq(r.counts[:k], c)
    got = fgrad.jit(lambda a, b: fnp.intersect1d(a, b, return_indices=True, size=6))(I1, I2)
    want = np.intersect1d(np.asarray(I1), np.asarray(I2), return_indices=True)
    for g, w in zip(got, want):
        _eq(g[: w.size], w)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: fnp.compress(x > 0, x),
        lambda x: fnp.extract(x > 0, x),
        lambda x: fnp.unique_values(x),
        lambda x: fnp.unique_counts(x),
        lambda x: fnp.union1d(x, x),
        lambda x: fnp.setdiff1d(x, x[:2]),
        lambda x: fnp.delete(x, fnp.argmax(x)),
        lambda x: fnp.trim_zeros(x),
    ],
)
def test_data_dependent_sizes_under_jit_and_vmap_say_what_to_pass(f):
    with pytest.raises(ConcretizationError, match="size=|static"):
        fgrad.jit(f)(V)
    with pytest.raises(ConcretizationError, match="size=|static"):
        fgrad.vmap(f)(fnp.stack([V, V]))


def test_traceable_functions_under_jit_equal_eager():
    fns = [
        lambda x: fnp.select([x > 0], [x ** 2], default=-x),
        lambda x: fnp.place(x, x > 0, fnp.array([1.0, 2.0]), inplace=False),
        lambda x: fnp.isin(x, x[:2]),
        lambda x: fnp.lexsort([x, fnp.floor(x)]),
        lambda x: fnp.unravel_index(fnp.argsort(x), (2, 3)),
        lambda x: fnp.ravel_multi_index((fnp.argsort(x) % 2, fnp.argsort(x)), (2, 3), "clip"),
        lambda x: fnp.choose(fnp.argsort(x), [x, -x], mode="wrap"),
        lambda x: fnp.array_equal(x, fnp.sort(x)),
        lambda x: fnp.apply_along_axis(fnp.cumsum, 0, fnp.reshape(x, (3, 2))),
        lambda x: fnp.geomspace(fnp.abs(x[0]) + 1.0, 5.0, 4),
        lambda x: fnp.put(x, fnp.argsort(x)[:1], 0.0, inplace=False),
    ]
    for f in fns:
        _eq(fgrad.jit(f)(V), f(V))


# ------------------------------------------------------------------------ vmap and compositions


def test_vmap_equals_a_loop():
    X = fnp.asarray(RNG.normal(size=(5, 6)))
    fns = [
        lambda x: fnp.insert(x, 2, x[0]),
        lambda x: fnp.delete(x, [1, 4]),
        lambda x: fnp.rot90(fnp.reshape(x, (2, 3))),
        lambda x: fnp.resize(x, 8),
        lambda x: fnp.select([x > 0], [x], default=0.5),
        lambda x: fnp.isin(fnp.round(x), fnp.array([0.0, 1.0])),
        lambda x: fnp.place(x, x > 0, fnp.array([9.0]), inplace=False),
        lambda x: fnp.put_along_axis(x, fnp.argsort(x)[:2], 0.0, 0, inplace=False),
        lambda x: fnp.compress(x > 0, x, size=6),
        lambda x: fnp.unique_values(fnp.round(x), size=6, fill_value=9.0),
        lambda x: fnp.setdiff1d(fnp.round(x), fnp.array([0.0]), size=6, fill_value=9.0),
        lambda x: fnp.lexsort([x]),
        lambda x: fnp.sort_complex(x),
        lambda x: fnp.piecewise(x, [x > 0], [lambda v: v ** 2, lambda v: -v]),
        lambda x: fnp.fill_diagonal(fnp.reshape(x, (2, 3)), x[0], inplace=False),
    ]
    for f in fns:
        got = fgrad.vmap(f)(X)
        want = fnp.stack([f(X[i]) for i in range(5)])
        _eq(got, want)


def test_compositions_grad_jit_vmap():
    def f(x):
        kept = fnp.compress(x > 0, x, size=4, fill_value=0.0)
        return fnp.sum(fnp.insert(kept, 1, x[0]) ** 2)

    x = V
    g = fgrad.grad(f)(x)
    _eq(fgrad.grad(fgrad.jit(f))(x), g)
    _eq(fgrad.jit(fgrad.grad(f))(x), g)
    X = fnp.stack([V, -V, V * 2.0])
    _eq(fgrad.vmap(fgrad.grad(f))(X), fnp.stack([fgrad.grad(f)(r) for r in X]))
    _eq(fgrad.jit(fgrad.vmap(f))(X), fnp.stack([f(r) for r in X]))


# ------------------------------------------------------------------------ errors


@pytest.mark.parametrize("name,args", [
    ("fill_diagonal", (A, 1.0)),
    ("put", (A, [0], [1.0])),
    ("place", (A, A > 0, [1.0])),
    ("put_along_axis", (A, fnp.array([[0]] * 3), 1.0, 1)),
])
def test_in_place_functions_need_inplace_false(name, args):
    with pytest.raises(ValueError, match="inplace=False"):
        getattr(fnp, name)(*args)


def test_index_modes_under_jit_as_jax():
    with pytest.raises(ConcretizationError, match="mode='clip'"):
        fgrad.jit(lambda i: fnp.ravel_multi_index((i, i), (2, 3)))(fnp.array([0, 1]))
    with pytest.raises(ConcretizationError, match="mode='clip'"):
        fgrad.jit(lambda i: fnp.choose(i, [V, -V]))(fnp.zeros(6, dtype=int))
    # traced flat indices: negative ones count from the end, then clip (jax.numpy's values)
    rows, cols = fgrad.jit(lambda i: fnp.unravel_index(i, (2, 3)))(fnp.array([7, -1, 4]))
    _eq((rows, cols), ([1, 1, 1], [2, 2, 1]))


def test_errors_name_the_function():
    with pytest.raises(TypeError, match="choose: out="):
        fnp.choose(fnp.array([0]), [V], out=V)
    with pytest.raises(ValueError, match="unravel_index"):
        fnp.unravel_index(fnp.array([6]), (2, 3))
    with pytest.raises(ValueError, match="ravel_multi_index"):
        fnp.ravel_multi_index((fnp.array([2]), fnp.array([0])), (2, 3))
    with pytest.raises(IndexError, match="insert"):
        fnp.insert(V, 9, 1.0)
    with pytest.raises(ValueError, match="select"):
        fnp.select([V > 0], [])
    with pytest.raises(ValueError, match="piecewise"):
        fnp.piecewise(V, [V > 0], [1.0, 2.0, 3.0])
    with pytest.raises(ConcretizationError, match="delete: a traced boolean obj.*compress"):
        fgrad.jit(lambda x: fnp.delete(x, x > 0))(V)
    with pytest.raises(ConcretizationError, match="insert: obj"):
        fgrad.jit(lambda x, i: fnp.insert(x, i, 0.0))(V, fnp.array(1))
