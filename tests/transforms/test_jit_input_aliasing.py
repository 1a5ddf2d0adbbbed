"""jit reads a caller's numpy arrays in place where no output can alias them, and copies
them where one may: a caller that changes its array after a call never changes a Tensor
the call returned (as ``fgrad.asarray``, which copies, guarantees eagerly)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax

# Functions whose output is, or may be, the input itself or a view of it.
VIEWING = {
    "identity": lambda x: x,
    "reshape": lambda x: fnp.reshape(x, (-1,)),
    "transpose": lambda x: x.T,
    "slice": lambda x: x[1:],
    "row": lambda x: x[0],
    "astype to its own dtype": lambda x: x.astype(x.dtype),
    "stop_gradient": lambda x: fgrad.stop_gradient(x),
    "broadcast_to": lambda x: fnp.broadcast_to(x, (2, *x.shape)),
    "expand_dims": lambda x: fnp.expand_dims(x, 0),
    "squeeze": lambda x: fnp.squeeze(x[None]),
    "an output among others": lambda x: (fnp.exp(x), x),
    "in a dict": lambda x: {"y": x * 2.0, "x": x},
    "cond": lambda x: lax.cond(True, lambda v: v, lambda v: v * 2.0, x),
    "while_loop without a step": lambda x: lax.while_loop(lambda v: False, lambda v: v + 1.0, x),
    "fori_loop of no steps": lambda x: lax.fori_loop(0, 0, lambda i, v: v + 1.0, x),
    "scan passing the carry through":
        lambda x: lax.scan(lambda c, _: (c, None), x, None, length=3)[0],
}
FRESH = {
    "exp": fnp.exp,
    "add": lambda x: x + 1.0,
    "matmul": lambda x: x @ x.T,
    "sum": lambda x: fnp.sum(x, axis=0),
    "where": lambda x: fnp.where(x > 0, x, 0.0),
    "softmax": lambda x: fgrad.nn.softmax(x),
}


def _snapshot(out):
    return [np.array(leaf, copy=True) for leaf in fgrad.tree.leaves(out)]


@pytest.mark.parametrize("name", list(VIEWING) + list(FRESH))
def test_a_callers_later_write_never_changes_a_returned_tensor(name):
    f = {**VIEWING, **FRESH}[name]
    g = lambda x: f(x)  # noqa: E731  (a named parameter for the keyword call)
    jf = fgrad.jit(g)
    base = np.arange(12.0).reshape(3, 4) - 5.0
    # the first call (tracing), the cached positional fast path, the general path
    for how in ("first call", "cached call", "keyword call"):
        x = base.copy()
        out = jf(x=x) if how == "keyword call" else jf(x)
        want = _snapshot(out)
        np.testing.assert_array_equal(_snapshot(g(fgrad.asarray(base))), want)  # eager agrees
        x[...] = 1e6  # the caller reuses its buffer
        for got, w in zip(_snapshot(out), want):
            np.testing.assert_array_equal(got, w, err_msg=f"{name}, {how}")


@pytest.mark.parametrize("name", list(VIEWING))
def test_inputs_an_output_may_view_are_copied(name):
    program = fgrad.jit(VIEWING[name]).compile(np.ones((3, 4)))
    assert program.viewed_inputs == {0}, program.source


@pytest.mark.parametrize("name", list(FRESH))
def test_inputs_no_output_can_view_are_read_in_place(name):
    program = fgrad.jit(FRESH[name]).compile(np.ones((3, 4)))
    assert program.viewed_inputs == frozenset(), program.source


def test_only_the_argument_an_output_views_is_copied():
    jf = fgrad.jit(lambda a, b: (a + b, b.T))
    assert jf.compile(np.ones((2, 2)), np.ones((2, 2))).viewed_inputs == {1}
    a, b = np.ones((2, 2)), np.arange(4.0).reshape(2, 2)
    s, t = jf(a, b)
    a[...] = b[...] = -1.0
    np.testing.assert_array_equal(np.asarray(s), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(t), [[0.0, 2.0], [1.0, 3.0]])


def test_a_program_that_writes_into_a_donated_input_copies_a_callers_array():
    # Traced with a donated Tensor, the program writes its result into that input's array;
    # a numpy array of the same signature, served by the same program, is copied first.
    jf = fgrad.jit(lambda x: x * 2.0 + 1.0, donate_argnums=0)
    jf(fnp.arange(4.0))
    assert jf.compile(fnp.arange(4.0)).viewed_inputs == {0}
    x = np.arange(4.0)
    out = jf(x)
    np.testing.assert_array_equal(x, np.arange(4.0))
    x[...] = 7.0
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2.0 + 1.0)
    assert jf.cache_info().misses == 1


def test_results_do_not_share_memory_with_the_callers_array():
    x = np.random.default_rng(0).standard_normal(1 << 12).astype(np.float32)
    for f in (*VIEWING.values(), *FRESH.values()):
        jf = fgrad.jit(f)
        args = x.reshape(64, 64)
        for _ in range(2):  # the first call and the cached one
            for leaf in fgrad.tree.leaves(jf(args)):
                assert not np.shares_memory(np.asarray(leaf), args)
