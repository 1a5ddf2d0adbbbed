"""fgrad.random inside fgrad.jit: traced keys and parameters give the eager numbers, bit for bit.

The expected values are the eager results for the same key (tests/test_random.py pins those
to Threefry known answers and distribution checks), so every comparison here is exact.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import random
from fgrad.nn import Dropout, Sequential, dropout


def a(x):
    return np.asarray(x)


def same(got, want):
    got, want = a(got), a(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


KEYS = [random.key(0), random.key(7), random.fold_in(random.key(3), 11)]

# Each sampler as a function of the key only (everything else static or a constant).
SAMPLERS = {
    "split": lambda k: random.split(k, 3),
    "split_batch": lambda k: random.split(k, (2, 2)),
    "fold_in": lambda k: random.fold_in(k, -5),
    "bits": lambda k: random.bits(k, (5, 3)),
    "bits_uint8": lambda k: random.bits(k, (7,), np.uint8),
    "bits_uint64": lambda k: random.bits(k, (3,), np.uint64),
    "uniform": lambda k: random.uniform(k, (6,)),
    "uniform_bounds": lambda k: random.uniform(
        k, (4, 3), "float32", -2.0, np.array([1.0, 2.0, 3.0])
    ),
    "normal": lambda k: random.normal(k, (9,)),
    "normal_float16": lambda k: random.normal(k, (5,), np.float16),
    "normal_complex": lambda k: random.normal(k, (4,), np.complex64),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (10,)),
    "bernoulli_array": lambda k: random.bernoulli(k, np.array([0.1, 0.9]), (3, 2)),
    "categorical": lambda k: random.categorical(k, np.log([0.2, 0.3, 0.5]), shape=(8,)),
    "categorical_axis": lambda k: random.categorical(k, np.zeros((3, 4)), axis=0, shape=(2, 4)),
    "randint": lambda k: random.randint(k, (8,), -3, 10),
    "randint_uint8": lambda k: random.randint(k, (6,), 0, 256, np.uint8),
    "randint_rejections": lambda k: random.randint(k, (200,), -(2**62) - 1, 2**62 + 1),
    "permutation": lambda k: random.permutation(k, 10),
    "permutation_x": lambda k: random.permutation(k, np.arange(12.0).reshape(3, 4), axis=1),
    "permutation_independent": lambda k: random.permutation(
        k, np.arange(12).reshape(3, 4), axis=1, independent=True
    ),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 2.0, (50,)),
    "truncated_normal_tail": lambda k: random.truncated_normal(k, 3.0, np.inf, (20,), "float32"),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_under_jit_equals_eager(name):
    f = SAMPLERS[name]
    jitted = fgrad.jit(f)
    for k in KEYS:
        same(jitted(k), f(k))
    # keys are data, not static: one trace serves every key
    assert jitted.cache_info().misses == 1 and jitted.cache_info().hits == len(KEYS) - 1


# Samplers whose array parameters are traced too (arguments of the jitted function).
TRACED_PARAMS = {
    "fold_in": (lambda k, d: random.fold_in(k, d), [fnp.array(7), fnp.array(-1)]),
    "uniform": (
        lambda k, lo: random.uniform(k, (3, 2), minval=lo, maxval=lo + 1.0),
        [fnp.array([0.0, -5.0]), fnp.array([1.5, 2.5])],
    ),
    "bernoulli": (lambda k, p: random.bernoulli(k, p), [fnp.array([0.1, 0.5, 0.9])]),
    "categorical": (
        lambda k, logits: random.categorical(k, logits, axis=-1),
        [fnp.log(fnp.array([[0.2, 0.8], [0.6, 0.4]]))],
    ),
    "randint": (
        lambda k, hi: random.randint(k, (4, 2), 0, hi),
        [fnp.array([5, 1000]), fnp.array([2, 3])],
    ),
    "permutation": (lambda k, x: random.permutation(k, x), [fnp.arange(6.0)]),
    "permutation_independent": (
        lambda k, x: random.permutation(k, x, axis=0, independent=True),
        [fnp.arange(12.0).reshape(4, 3)],
    ),
    "truncated_normal": (
        lambda k, lo: random.truncated_normal(k, lo, lo + 0.5, dtype="float32"),
        [fnp.array([-3.0, 0.0, 4.0])],
    ),
}


@pytest.mark.parametrize("name", sorted(TRACED_PARAMS))
def test_traced_parameters_under_jit_equal_eager(name):
    f, values = TRACED_PARAMS[name]
    jitted = fgrad.jit(f)
    for k in KEYS:
        for v in values:
            same(jitted(k, v), f(k, v))


def test_random_ops_are_recorded_in_the_graph():
    graph = fgrad.jit(lambda k: random.normal(random.split(k)[0], (3,))).graph(random.key(0))
    names = [node.op.name for node in graph.nodes]
    assert "random_split" in names and "random_normal" in names


def test_jitted_training_step_with_split_inside():
    def step(w, key):
        key, sub = random.split(key)

        def loss(w):
            noisy = w + 0.1 * random.normal(sub, w.shape)
            return fnp.sum(noisy**2)

        return w - 0.1 * fgrad.grad(loss)(w), key

    jitted = fgrad.jit(step)
    w_eager = w_jit = fnp.array([1.0, -2.0, 0.5])
    key_eager = key_jit = random.key(0)
    for _ in range(4):
        w_eager, key_eager = step(w_eager, key_eager)
        w_jit, key_jit = jitted(w_jit, key_jit)
        np.testing.assert_allclose(a(w_jit), a(w_eager), rtol=1e-15, atol=0)
        same(key_jit, key_eager)
    assert jitted.cache_info().misses == 1 and jitted.cache_info().hits == 3


def test_dropout_layer_under_jit_equals_eager():
    layer = Dropout(0.3)
    x = fnp.reshape(fnp.arange(1.0, 25.0), (4, 6))
    jitted = fgrad.jit(lambda x, k: layer.apply({}, x, key=k, train=True))
    for k in KEYS:
        same(jitted(x, k), layer.apply({}, x, key=k, train=True))
    assert jitted.cache_info().misses == 1
    assert set(np.unique(a(jitted(fnp.ones(100), KEYS[0])))) == {0.0, 1.0 / 0.7}


def test_dropout_in_a_jitted_gradient_equals_eager():
    model = Sequential((lambda x: x * 2.0, Dropout(0.5), lambda x: x**2))

    def loss(w, key):
        return fnp.sum(model.apply([{}, {}, {}], w, key=key, train=True))

    w = fnp.array([0.5, -1.0, 2.0, 3.0])
    for k in KEYS:
        same(fgrad.jit(fgrad.grad(loss))(w, k), fgrad.grad(loss)(w, k))
        same(fgrad.grad(fgrad.jit(loss))(w, k), fgrad.grad(loss)(w, k))


def test_dropout_function_under_jit():
    f = fgrad.jit(lambda x, k: dropout(x, 0.5, key=k))
    x = fnp.ones(1000)
    same(f(x, random.key(2)), dropout(x, 0.5, key=random.key(2)))


def test_permuting_a_traced_array_is_differentiable_through_jit():
    # jit records permutation(key, x) as a gather, so grad(jit(f)) differentiates it.
    k = random.key(5)

    def f(x):
        return fnp.sum(random.permutation(k, x) * fnp.arange(5.0))

    x = fnp.arange(5.0) * 0.5
    perm = a(random.permutation(k, 5))
    want = np.empty(5)
    want[perm] = np.arange(5.0)  # d/dx_j of sum_i x[perm[i]] * i
    same(fgrad.grad(fgrad.jit(f))(x), fgrad.asarray(want))


def test_differentiated_bounds_raise_even_through_jit():
    k = random.key(0)
    uniform = fgrad.jit(lambda m: fnp.sum(random.uniform(k, (2,), minval=m, maxval=m + 1.0)))
    trunc = fgrad.jit(lambda lo: fnp.sum(random.truncated_normal(k, lo, 1.0, (2,))))
    m = fnp.array(0.0)
    for f, match in ((uniform, "reparameterise"), (trunc, "no derivatives")):
        f(m)  # jit alone is fine
        with pytest.raises(TypeError, match=match):
            fgrad.grad(f)(m)
        with pytest.raises(TypeError, match=match):
            fgrad.jvp(f, (m,), (fnp.array(1.0),))
    with pytest.raises(TypeError, match="no derivatives"):
        fgrad.jit(fgrad.grad(lambda lo: fnp.sum(random.truncated_normal(k, lo, 1.0, (2,)))))(m)
    # held constant, the bounds are fine under grad(jit(f))
    g = fgrad.jit(lambda m: fnp.sum(m * random.uniform(k, (2,), minval=fgrad.stop_gradient(m))))
    same(fgrad.grad(g)(fnp.array(0.25)), fnp.sum(random.uniform(k, (2,), minval=0.25)))


def test_bad_values_under_jit_raise_when_run():
    k = random.key(0)
    uniform = fgrad.jit(lambda lo: random.uniform(k, (2,), minval=lo, maxval=1.0))
    with pytest.raises(ValueError, match="minval < maxval"):
        uniform(fnp.array(2.0))
    randint = fgrad.jit(lambda hi: random.randint(k, (2,), 0, hi))
    with pytest.raises(ValueError, match="minval < maxval"):
        randint(fnp.array(0))
    trunc = fgrad.jit(lambda lo: random.truncated_normal(k, lo, 0.0))
    with pytest.raises(ValueError, match="lower < upper"):
        trunc(fnp.array(1.0))


def test_static_checks_still_apply_to_traced_keys():
    f = fgrad.jit(lambda k: random.normal(k, (2,)))
    with pytest.raises(TypeError, match="uint32"):
        f(fnp.array([0, 1]))
    with pytest.raises(fgrad.errors.ShapeError, match="unpack"):
        f(random.split(random.key(0)))
    with pytest.raises(TypeError, match="static"):
        fgrad.jit(lambda k, n: random.permutation(k, n))(random.key(0), fnp.array(3))
    with pytest.raises(TypeError, match="integer scalar"):
        fgrad.jit(lambda k, d: random.fold_in(k, d))(random.key(0), fnp.array(1.5))


def test_raw_numpy_keys_work_eagerly_and_under_jit():
    raw = np.asarray(random.key(9))
    same(random.normal(raw, (3,)), random.normal(random.key(9), (3,)))
    same(fgrad.jit(lambda k: random.uniform(k, (3,)))(raw), random.uniform(random.key(9), (3,)))
