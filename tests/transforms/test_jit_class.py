"""jit returns a small class (issue 11): call, signature, graph, compile, cache_info,
clear_cache; it binds as a method, as the function it wraps would."""

import functools

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.transforms.program import Program


def test_signature_is_the_cache_key():
    f = fgrad.jit(lambda x, n: x * n, static_argnums=1)
    a32, b32 = fnp.ones(3, dtype="float32"), fnp.zeros(3, dtype="float32")
    assert f.signature(a32, 2) == f.signature(b32, 2)  # values do not matter
    assert f.signature(a32, 2) != f.signature(a32, 3)  # a static value does
    assert f.signature(a32, 2) != f.signature(a32.astype("float64"), 2)
    assert f.cache_info().misses == 0  # asking traces nothing


def test_compile_builds_the_program_without_running_it():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(x) * 2.0

    jf = fgrad.jit(f)
    x = fnp.asarray([0.5, 1.0])
    program = jf.compile(x)
    assert isinstance(program, Program) and "sin" in program.source
    assert jf.cache_info().misses == 1 and len(calls) == 1
    np.testing.assert_allclose(np.asarray(jf(x)), 2 * np.sin([0.5, 1.0]))
    assert jf.cache_info().hits == 1 and len(calls) == 1  # the call used it
    assert jf.compile(x) is program
    jf.clear_cache()
    assert jf.cache_info() == (0, 0, 0)


def test_a_jitted_method_binds_its_instance():
    class Scale:
        def __init__(self, k):
            self.k = k

        @functools.partial(fgrad.jit, static_argnums=0)  # self: static, as in JAX
        def __call__(self, x):
            return x * self.k

    s = Scale(3)
    np.testing.assert_array_equal(np.asarray(s(fnp.ones(2))), [3.0, 3.0])
    assert Scale.__call__.__name__ == "__call__" and "Jitted" in type(Scale.__dict__["__call__"]).__name__


def test_refuses_what_it_refused_before():
    with pytest.raises(TypeError, match="expected a function"):
        fgrad.jit(3)
    with pytest.raises(ValueError, match="both donated"):
        fgrad.jit(lambda x: x, static_argnums=0, donate_argnums=0)
