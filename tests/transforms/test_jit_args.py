"""jit argument handling: static names by position, bad static positions, non-array leaves."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def _scale(x, mode="plain"):
    return x * 2.0 if mode == "double" else x


def test_static_argnames_passed_positionally():
    """JAX maps a static name to its position: jit(f, static_argnames='mode')(x, 'double')."""
    f = fgrad.jit(_scale, static_argnames="mode")
    x = fnp.array([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(f(x, "double")), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(x, mode="double")), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(x)), [1.0, 2.0])


def test_static_argnums_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="static_argnums 3 is out of range"):
        fgrad.jit(_scale, static_argnums=3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"static_argnums": "mode"}, "static_argnums takes positions .* use static_argnames='mode'"),
        ({"donate_argnums": "x"}, "donate_argnums takes positions .* use donate_argnames='x'"),
        ({"static_argnames": 1}, "static_argnames takes parameter names .* use static_argnums=1"),
        ({"static_argnums": 1.5}, "static_argnums takes positions"),
    ],
)
def test_argnums_and_argnames_of_the_wrong_type_are_named(kwargs, match):
    with pytest.raises(TypeError, match=rf"jit\(_scale\): {match}"):
        fgrad.jit(_scale, **kwargs)


@pytest.mark.parametrize("nums", [np.int64(1), [np.int64(1)], (np.int32(1),), np.array([1])])
def test_static_argnums_take_numpy_integers(nums):
    f = fgrad.jit(_scale, static_argnums=nums)
    np.testing.assert_array_equal(np.asarray(f(fnp.ones(2), "double")), [2.0, 2.0])
    g = fgrad.make_graph(_scale, static_argnums=nums)(fnp.ones(2), "double")
    assert len(g.invars) == 1


def test_none_means_no_static_arguments():
    f = fgrad.jit(_scale, static_argnums=None, static_argnames=None)
    np.testing.assert_array_equal(np.asarray(f(fnp.ones(2))), [1.0, 1.0])


def test_non_array_arguments_need_static():
    with pytest.raises(TypeError, match="static_argnums / static_argnames"):
        fgrad.jit(lambda x, s: x)(fnp.ones(2), "a")
    f = fgrad.jit(lambda x, fn: fn(x), static_argnums=1)
    np.testing.assert_allclose(np.asarray(f(fnp.array([0.0]), fnp.cos)), [1.0])


def test_issue_5_signed_zero_scalars_compile_separately():
    """0.0 == -0.0 in Python, but x / -0.0 is -inf: the cache key and CSE use the bits."""
    x = fnp.array([1.0, 2.0])
    f = fgrad.jit(lambda x, s: x / s)
    with np.errstate(divide="ignore"):
        assert np.all(np.asarray(f(x, 0.0)) == np.inf)
        assert np.all(np.asarray(f(x, -0.0)) == -np.inf)
    g = fgrad.jit(lambda x, s: x * s, static_argnums=1)
    g(x, 0.0)
    assert np.signbit(np.asarray(g(x, -0.0))).all()
    plus, minus = fgrad.jit(lambda x: (x * 0.0, x * -0.0))(x)
    assert not np.signbit(np.asarray(plus)).any() and np.signbit(np.asarray(minus)).all()


def test_issue_5_batched_matmul_with_empty_inner_dimension():
    out = fgrad.jit(lambda a, b: a @ b)(fnp.ones((2, 3, 0)), fnp.ones((0, 4)))
    assert out.shape == (2, 3, 4) and not np.asarray(out).any()


def test_jit_of_something_not_callable_is_an_error_at_once():
    with pytest.raises(TypeError, match="jit: expected a function to compile, got int 3"):
        fgrad.jit(3)


def test_an_output_that_is_not_an_array_or_number_is_named():
    with pytest.raises(TypeError, match="output leaf 1 is a str"):
        fgrad.jit(lambda a: (a, "hello"))(fnp.ones(2))


def test_graph_takes_shape_dtypes_and_the_program_serves_later_calls():
    f = fgrad.jit(lambda p, x: p["w"] @ x)
    spec = {"w": fgrad.ShapeDtype((3, 4), "float32")}
    g = f.graph(spec, fgrad.ShapeDtype((4,), np.float32))
    assert [str(v.aval) for v in g.invars] == ["f32[3,4]", "f32[4]"]
    assert f.cache_info() == (0, 1, 1)
    w = fnp.ones((3, 4), dtype="float32")
    np.testing.assert_array_equal(np.asarray(f({"w": w}, fnp.ones(4, dtype="float32"))), [4, 4, 4])
    assert f.cache_info() == (1, 1, 1)  # compiled already
    with pytest.raises(TypeError, match="called with a ShapeDtype"):
        f(spec, fnp.ones(4, dtype="float32"))
    assert f.cache_info() == (1, 1, 1)  # the refused call compiled nothing


def test_clear_cache_resets_the_counters():
    f = fgrad.jit(lambda x: x + 1.0)
    f(fnp.ones(2))
    f(fnp.ones(2))
    f.clear_cache()
    assert f.cache_info() == (0, 0, 0)


def test_make_graph_traces_keyword_arguments():
    g = fgrad.make_graph(lambda w, *, b: w * b)(fnp.ones(2), b=fnp.ones(2))
    assert len(g.invars) == 2
    out = g.evaluate((fnp.full(2, 3.0),), {"b": fnp.full(2, 2.0)})
    np.testing.assert_array_equal(np.asarray(out), [6.0, 6.0])


def test_jit_returning_a_value_it_closed_over_from_an_outer_transform():
    # As JAX: jit(lambda x: y) inside grad(y) returns y (replayed under grad, not cached).
    assert float(fgrad.grad(lambda y: fgrad.jit(lambda x: y)(1.0))(2.0)) == 1.0
    g = fgrad.grad(lambda y: fnp.sum(fgrad.jit(lambda x: (y, x * y))(fnp.asarray(3.0))[0]))(2.0)
    assert float(g) == 1.0
    out = fgrad.vmap(lambda y: fgrad.jit(lambda x: y * 2)(1.0))(fnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])


def test_jit_returning_a_leaked_tracer_is_an_error():
    leak = []
    fgrad.grad(lambda y: (leak.append(y), y * 1.0)[1])(2.0)
    with pytest.raises(fgrad.TracerLeakError, match="output leaf 0 is a tracer"):
        fgrad.jit(lambda x: leak[0])(1.0)


def test_a_traced_value_for_an_inner_jits_static_argument_says_so():
    def scale(x, rate):
        return x * rate

    inner = fgrad.jit(scale, static_argnums=1)
    with pytest.raises(
        fgrad.errors.ConcretizationError, match="static argument rate is a traced value"
    ):
        fgrad.jit(lambda x, r: inner(x, r))(fnp.ones(2), 0.7)
    outer = fgrad.jit(lambda x, r: inner(x, r), static_argnums=1)
    np.testing.assert_array_equal(np.asarray(outer(fnp.ones(2), 0.7)), [0.7, 0.7])
