"""Reproducers of jit bugs found by differential fuzzing (jit against eager), one per bug."""

import numpy as np

import fgrad
import fgrad.numpy as fnp


def test_static_true_and_1_trace_apart():
    # True == 1 (and hash alike): the cache key took a static True for a 1 and returned
    # the bool trace's result (int8 instead of int64, and the other branch below).
    def f(x, n):
        return x + fnp.full((2,), n)

    jf = fgrad.jit(f, static_argnums=1)
    x = fnp.asarray(np.array([1, 2], dtype=np.int8))
    assert jf(x, True).dtype == f(x, True).dtype == np.int8
    assert jf(x, 1).dtype == f(x, 1).dtype == np.int64

    def g(x, flag):
        return x * 2.0 if flag is True else x * 3.0

    jg = fgrad.jit(g, static_argnames="flag")
    np.testing.assert_array_equal(np.asarray(jg(fnp.ones(2), flag=True)), [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(jg(fnp.ones(2), flag=1)), [3.0, 3.0])
    np.testing.assert_array_equal(np.asarray(jg(fnp.ones(2), flag=0)), [3.0, 3.0])
    np.testing.assert_array_equal(np.asarray(jg(fnp.ones(2), flag=False)), [3.0, 3.0])
    assert jg.cache_info().misses == 4


def test_graph_with_an_empty_constant_prints():
    # Printing called .item() on every constant of size <= 1, size 0 included.
    jf = fgrad.jit(lambda x: x * fnp.ones((0,)))
    x = fnp.ones((0,))
    assert jf(x).shape == (0,)
    text = str(jf.graph(x))
    assert "const:f64[0]" in text


def test_cse_tells_numpy_zero_from_negative_zero():
    # numpy's float64 subclasses float: its constants were keyed by ==, so CSE merged
    # x * np.float64(0.0) with x * np.float64(-0.0) (and static arguments collided).
    def f(x):
        return x * np.float64(0.0), x * np.float64(-0.0)

    x = fnp.asarray([-1.0, 2.0])
    for got, want in zip(fgrad.jit(f)(x), f(x)):
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(np.asarray(want)))

    jh = fgrad.jit(lambda x, s: x * s, static_argnums=1)
    np.testing.assert_array_equal(np.signbit(np.asarray(jh(x, np.float64(0.0)))), [True, False])
    np.testing.assert_array_equal(np.signbit(np.asarray(jh(x, np.float64(-0.0)))), [False, True])


def test_debug_nans_jit_allows_nan_from_a_constant_as_eager_does():
    # fnp.mean of an empty array divides by a NaN constant: eager ops see a NaN input and
    # do not raise; the jit check raised "no single op did ... rounds differently".
    prev = fgrad.config.debug_nans
    fgrad.config.debug_nans = True
    try:
        x = fnp.ones((0,))
        assert np.isnan(np.asarray(fnp.mean(x)))
        assert np.isnan(np.asarray(fgrad.jit(lambda a: fnp.mean(a))(x)))
        assert np.isnan(np.asarray(fgrad.jit(lambda a: a * fnp.nan)(fnp.ones(2)))).all()
    finally:
        fgrad.config.debug_nans = prev
