"""A dynamic_update_slice whose operand dies at the step writes into the operand's array:
a donated KV cache is updated in place by a jitted decode step, not copied per token."""

import numpy as np

import fgrad
import fgrad.numpy as fnp


def _step(cache, u, pos):
    return fnp.dynamic_update_slice(cache, u, (0, pos, 0)), fnp.sum(u)


def test_a_donated_cache_is_updated_in_place_and_stays_right():
    step = fgrad.jit(_step, donate_argnums=0)
    cache = fnp.zeros((2, 64, 16), dtype="float32")
    want = np.zeros((2, 64, 16), dtype="float32")
    for p in range(5):
        u = fnp.full((2, 1, 16), float(p + 1), dtype="float32")
        cache, _ = step(cache, u, fnp.asarray(p))
        want[:, p] = p + 1
    np.testing.assert_array_equal(np.asarray(cache), want)
    assert "out=a0" in step.compile(cache, u, fnp.asarray(0)).source  # written into the input


def test_without_donation_the_input_is_not_changed():
    step = fgrad.jit(_step)
    cache = fnp.zeros((2, 64, 16), dtype="float32")
    out, _ = step(cache, fnp.ones((2, 1, 16), dtype="float32"), fnp.asarray(3))
    assert float(fnp.sum(cache)) == 0.0 and float(fnp.sum(out)) == 32.0


def test_an_intermediate_is_updated_in_its_own_buffer():
    def f(x, u, pos):
        y = x * 2.0
        z = fnp.dynamic_update_slice(y, u, (pos, 0))  # y dies here: z takes its buffer
        return z * 3.0 + y.shape[0]

    x = fnp.asarray(np.arange(4096.0).reshape(64, 64))
    u = fnp.ones((2, 64))
    jf = fgrad.jit(f)
    for pos in (0, 5, 63):  # 63: clamped to 62, as eagerly
        np.testing.assert_array_equal(np.asarray(jf(x, u, fnp.asarray(pos))), np.asarray(f(x, u, pos)))
    source = jf.compile(x, u, fnp.asarray(0)).source
    assert "dynamic_update_slice" in source and "out=b" in source
