"""Why jit traces again: cache-miss explanations, the Python-scalar warning, the cache bound."""

import logging
import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.transforms import jit as jit_module
from fgrad.transforms.retrace import WARN_AFTER


@pytest.fixture
def explain(caplog):
    fgrad.config.explain_cache_misses = True
    try:
        with caplog.at_level(logging.WARNING, logger="fgrad"):
            yield lambda: [r.getMessage() for r in caplog.records]
    finally:
        fgrad.config.explain_cache_misses = False


def step(params, x, lr, *, scale=1.0):
    return {k: v - lr * scale * x for k, v in params.items()}


def decay(x, step):
    return x * 0.9**step


def test_explains_each_kind_of_miss(explain):
    f = fgrad.jit(step)
    p = {"w": fnp.ones(3), "b": fnp.zeros(3)}
    f(p, fnp.ones(3), 0.1)
    assert explain() == []  # the first trace needs no reason
    f(p, fnp.ones(3), 0.1)  # a hit
    f(p, fnp.ones(3), 0.2)  # Python floats are traced: a hit too
    f(p, fnp.ones(3), 1)  # a Python int is a constant
    f(p, fnp.ones(1), 0.1)
    f(p, fnp.ones(3, dtype="float32"), 0.1)
    f({"w": fnp.ones(3)}, fnp.ones(3), 0.1)
    f(p, fnp.ones(3), 0.1, scale=2.0)
    assert explain() == [
        "jit(step) traces again: lr changed from a traced Python float to Python int 1",
        "jit(step) traces again: x changed from f64[3] to f64[1]",
        "jit(step) traces again: x changed from f64[3] to f32[3]",
        "jit(step) traces again: the structure of params changed from "
        "TreeDef({'b': *, 'w': *}) to TreeDef({'w': *})",
        "jit(step) traces again: the keyword arguments changed from TreeDef({}) to "
        "TreeDef({'scale': *})",
    ]


def test_names_leaves_inside_arguments_and_static_arguments(explain):
    def g(params, n):
        return params["layers"][1] * n

    f = fgrad.jit(g, static_argnums=1)
    layers = [fnp.ones(2), fnp.ones(2)]
    f({"layers": layers}, 3)
    f({"layers": [layers[0], fnp.ones(5)]}, 3)
    f({"layers": layers}, 4)
    assert explain() == [
        "jit(g) traces again: params['layers'][1] changed from f64[2] to f64[5]",
        "jit(g) traces again: static argument n changed from 3 to 4",
    ]


def test_compares_with_the_closest_signature_of_the_same_structure(explain):
    f = fgrad.jit(lambda p: p["a"])
    f({"a": fnp.ones(2)})
    f({"a": fnp.ones(2), "b": fnp.ones(2)})
    f({"a": fnp.ones(2, dtype="float32"), "b": fnp.ones(2)})  # the second, with f32 a
    assert explain()[-1] == "jit(<lambda>) traces again: p['a'] changed from f64[2] to f32[2]"


def test_compares_with_the_signature_differing_in_fewest_fields_then_the_latest(explain):
    f = fgrad.jit(lambda x, t: x * 0.5**t)
    for t in range(3):
        f(fnp.ones(2, dtype="float32"), t)
    f(fnp.ones(3, dtype="float32"), 2)
    f(fnp.ones(3), 2)  # only the dtype differs from the previous call
    assert explain() == [
        "jit(<lambda>) traces again: t changed from Python int 0 to Python int 1",
        "jit(<lambda>) traces again: t changed from Python int 1 to Python int 2",
        "jit(<lambda>) traces again: x changed from f32[2] to f32[3]",
        "jit(<lambda>) traces again: x changed from f32[3] to f64[3]",
    ]


def test_a_static_argument_not_passed_shows_its_default(explain):
    def reduce(x, mode="sum"):
        return fnp.sum(x) if mode == "sum" else fnp.mean(x)

    f = fgrad.jit(reduce, static_argnames="mode")
    f(fnp.ones(3))
    f(fnp.ones(3), mode="mean")
    f(fnp.ones(3), "max")  # positionally too
    assert explain() == [
        "jit(reduce) traces again: static argument mode changed from not passed "
        "(default 'sum') to 'mean'",
        "jit(reduce) traces again: static argument mode changed from not passed "
        "(default 'sum') to 'max'",
    ]


def test_no_explanation_unless_asked(caplog):
    f = fgrad.jit(step)
    with caplog.at_level(logging.WARNING, logger="fgrad"):
        f({"w": fnp.ones(3)}, fnp.ones(3), 0.1)
        f({"w": fnp.ones(3)}, fnp.ones(3), 1)
    assert caplog.records == []


def test_warns_once_when_python_ints_keep_retracing():
    f = fgrad.jit(decay)
    x = fnp.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(WARN_AFTER):  # the first trace and WARN_AFTER - 1 retraces
            f(x, i)
        assert caught == []
        f(x, 99)
        for i in range(5):
            f(x, 100 + i)
    warned = [w for w in caught if issubclass(w.category, fgrad.RetraceWarning)]
    assert len(warned) == 1
    message = str(warned[0].message)
    assert "jit(decay)" in message and "step" in message and "static_argnums" in message
    assert "fnp.asarray(step)" in message
    assert warned[0].filename == __file__  # points at the caller's line


@pytest.mark.parametrize(
    "calls",
    [
        pytest.param(lambda f, i: f(fnp.ones(i + 1), 5), id="new shapes"),
        pytest.param(lambda f, i: f(fnp.ones(2), 5 * (i % 2)), id="two values"),
        pytest.param(lambda f, i: f(fnp.ones(2), 0.5 * i), id="floats"),
    ],
)
def test_no_warning_for_new_shapes_or_repeated_values(calls):
    f = fgrad.jit(lambda x, s: x * s)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fgrad.RetraceWarning)
        for i in range(3 * WARN_AFTER):
            calls(f, i)


def test_no_warning_for_static_scalars():
    f = fgrad.jit(lambda x, s: x * s, static_argnums=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fgrad.RetraceWarning)
        for i in range(3 * WARN_AFTER):
            f(fnp.ones(2), i)


def test_cache_keeps_the_most_recent_signatures(monkeypatch):
    monkeypatch.setattr(jit_module, "_CACHE_SIZE", 4)
    f = fgrad.jit(lambda x: x * 2.0)
    xs = [fnp.arange(n, dtype="float32") for n in range(1, 7)]
    for x in xs:
        np.testing.assert_array_equal(f(x), np.asarray(x) * 2)
    assert f.cache_info().size == 4
    assert f.cache_info().misses == 6
    np.testing.assert_array_equal(f(xs[-1]), np.asarray(xs[-1]) * 2)  # kept: a hit
    assert f.cache_info().misses == 6
    np.testing.assert_array_equal(f(xs[0]), np.asarray(xs[0]) * 2)  # evicted: traced again
    assert f.cache_info().misses == 7
    assert f.cache_info().size == 4


def test_explains_a_retrace_of_a_signature_that_was_not_kept(explain):
    def f(x):
        return x if x > 0 else -x  # Python control flow: the trace raises

    jf = fgrad.jit(f)
    for _ in range(2):
        with pytest.raises(fgrad.ConcretizationError):
            jf(fnp.array(1.0))
    assert explain() == [
        "jit(f) traces again: its earlier trace for these arguments was not kept (it raised, "
        "closed over a value another transform traces, or made way for newer signatures)"
    ]


def test_log_compiles_names_each_argument(caplog):
    fgrad.config.log_compiles = True
    try:
        with caplog.at_level(logging.WARNING, logger="fgrad"):
            f = fgrad.jit(lambda p, x, lr, n: p["w"] * x * lr * n, static_argnums=3)
            f({"w": fnp.ones(2)}, fnp.ones(2, dtype="float32"), 0.1, 3)
    finally:
        fgrad.config.log_compiles = False
    assert [r.getMessage() for r in caplog.records] == [
        "jit: tracing <lambda> for (p['w']: f64[2], x: f32[2], lr: a traced Python float, "
        "n=3 (static))"
    ]
