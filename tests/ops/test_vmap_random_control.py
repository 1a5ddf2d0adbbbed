"""vmap through the random ops and the control-flow ops, each case checked against the
per-example loop: one key per example (a batch of keys hashed at once), a shared key with
mapped parameters, per-example dropout; ``fgrad.lax`` cond/switch/while_loop/fori_loop/
scan with mapped and shared predicates, carries, closures and ``xs``, eagerly and under
``jit`` (where they are single nodes), composed with grad/jvp and an outer vmap."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad import random as rnd
from fgrad.ops import REGISTRY

B = 4
KEY = rnd.key(7)
KEYS = rnd.split(KEY, B)


def _per_example(f, *args, in_axes=None):
    """The loop vmap must match: ``f`` on each example, each output leaf stacked."""
    in_axes = in_axes or (0,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = []
    for b in range(size):
        ex = [
            a if ax is None else fnp.asarray(np.take(np.asarray(a), b, axis=ax))
            for a, ax in zip(args, in_axes)
        ]
        outs.append(fgrad.tree.leaves(f(*ex)))
    return [np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0]))]


def _same(got, want, exact=False):
    got = [np.asarray(g) for g in fgrad.tree.leaves(got)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if exact or w.dtype.kind not in "fc":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _check(f, *args, in_axes=None, exact=False):
    want = _per_example(f, *args, in_axes=in_axes)
    axes = in_axes or 0
    _same(fgrad.vmap(f, in_axes=axes)(*args), want, exact)
    _same(fgrad.jit(fgrad.vmap(f, in_axes=axes))(*args), want, exact)
    _same(fgrad.vmap(fgrad.jit(f), in_axes=axes)(*args), want, exact)


# ---------------------------------------------------------------------------- random


SAMPLERS = {
    "normal": lambda k: rnd.normal(k, (3,)),
    "normal_c64": lambda k: rnd.normal(k, (2, 2), dtype="complex64"),
    "uniform_f32": lambda k: rnd.uniform(k, (5,), dtype="float32", minval=-2.0, maxval=3.0),
    "bits_u8": lambda k: rnd.bits(k, (2, 3), dtype="uint8"),
    "bits_u64": lambda k: rnd.bits(k, (3,), dtype="uint64"),
    "bernoulli": lambda k: rnd.bernoulli(k, 0.3, (6,)),
    "categorical": lambda k: rnd.categorical(k, fnp.log(fnp.array([0.2, 0.3, 0.5])), shape=(5,)),
    "randint": lambda k: rnd.randint(k, (40,), 0, 7),
    "permutation": lambda k: rnd.permutation(k, 6),
    "permutation_independent": lambda k: rnd.permutation(
        k, fnp.arange(12).reshape(3, 4), axis=1, independent=True
    ),
    "truncated_normal": lambda k: rnd.truncated_normal(k, 2.5, 3.0, (30,)),
    "split": lambda k: rnd.split(k, 3),
    "fold_in": lambda k: rnd.fold_in(k, 12),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_one_key_per_example_equals_the_loop(name):
    _check(SAMPLERS[name], KEYS, exact=True)


def test_the_brief_example():
    got = fgrad.vmap(lambda k: rnd.normal(k, (3,)))(rnd.split(KEY, 5))
    want = np.stack([np.asarray(rnd.normal(k, (3,))) for k in rnd.split(KEY, 5)])
    np.testing.assert_array_equal(np.asarray(got), want)


def test_keys_mapped_along_another_axis():
    keys_t = fnp.asarray(np.asarray(KEYS).T.copy())  # (2, B): the examples along axis 1
    f = SAMPLERS["uniform_f32"]
    _check(f, keys_t, in_axes=(1,), exact=True)


def test_shared_key_with_mapped_parameters():
    p = fnp.array([0.0, 0.25, 0.75, 1.0])
    _check(lambda p: rnd.bernoulli(KEY, p, (8,)), p, exact=True)
    logits = fnp.asarray(np.random.default_rng(1).normal(size=(B, 3, 2)))
    # class axis 0 of each example's (3, 2) logits; the other axis broadcasts to shape
    _check(lambda lg: rnd.categorical(KEY, lg, axis=0, shape=(5, 2)), logits, exact=True)
    lo = fnp.array([-1.0, 0.0, 1.0, 2.0])
    _check(lambda lo: rnd.uniform(KEY, (2, 3), minval=lo, maxval=lo + 1.0), lo, exact=True)
    _check(lambda lo: rnd.truncated_normal(KEY, lo, lo + 0.5, (7,)), lo, exact=True)
    hi = fnp.array([2, 5, 9, 100])
    _check(lambda hi: rnd.randint(KEY, (3, 2), 1, hi), hi, exact=True)
    _check(lambda d: rnd.fold_in(KEY, d), fnp.arange(B), exact=True)


def test_mapped_key_and_parameters_together():
    p = fnp.asarray(np.random.default_rng(2).uniform(size=(B, 3)))
    _check(lambda k, p: rnd.bernoulli(k, p, (2, 3)), KEYS, p, exact=True)
    _check(lambda k, p: rnd.bernoulli(k, p, (2, 3)), KEYS, p[:, 0], exact=True)
    logits = fnp.asarray(np.random.default_rng(3).normal(size=(B, 4)))
    _check(lambda k, lg: rnd.categorical(k, lg, shape=(3,)), KEYS, logits, exact=True)
    _check(lambda k, d: rnd.fold_in(k, d), KEYS, fnp.arange(B), exact=True)


def test_per_example_dropout_and_its_gradient():
    x = fnp.asarray(np.random.default_rng(4).normal(size=(B, 5)))

    def dropout_loss(key, x):
        keep = rnd.bernoulli(key, 0.5, x.shape)
        return fnp.sum(fnp.where(keep, fnp.sin(x) / 0.5, 0.0))

    _check(dropout_loss, KEYS, x)
    _check(fgrad.grad(dropout_loss, argnums=1), KEYS, x)
    # grad of the batched loss: each example's gradient uses its own mask
    g = fgrad.grad(lambda x: fnp.sum(fgrad.vmap(dropout_loss)(KEYS, x)))(x)
    _same(g, _per_example(fgrad.grad(dropout_loss, argnums=1), KEYS, x))


def test_nested_vmap_over_a_grid_of_keys():
    grid = rnd.split(KEY, (2, 3))
    got = fgrad.vmap(fgrad.vmap(lambda k: rnd.normal(k, (2,))))(grid)
    want = np.stack(
        [np.stack([np.asarray(rnd.normal(grid[i, j], (2,))) for j in range(3)]) for i in range(2)]
    )
    np.testing.assert_array_equal(np.asarray(got), want)


def test_the_ops_take_batches_of_keys_directly():
    grid = np.asarray(rnd.split(KEY, (2, 3)))
    op = REGISTRY["random_uniform"]
    f64 = np.dtype("float64")
    got = np.asarray(op(grid, -1.0, 1.0, shape=(4,), dtype=f64))
    assert got.shape == (2, 3, 4)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(
                got[i, j], np.asarray(op(grid[i, j], -1.0, 1.0, shape=(4,), dtype=f64))
            )


def test_the_public_samplers_still_want_one_key():
    with pytest.raises(fgrad.errors.ShapeError, match="split returns a batch of keys"):
        rnd.normal(KEYS, (3,))


# ---------------------------------------------------------------------------- cond / switch


XS = fnp.asarray(np.random.default_rng(5).normal(size=(B, 3)))


def _branchy(x):
    return lax.cond(
        fnp.sum(x) > 0, lambda v: (fnp.sin(v) * 2.0, v[0]), lambda v: (fnp.cos(v) + 1.0, -v[1]), x
    )


def _xs_both_signs():
    xs = np.asarray(XS).copy()
    xs[0] = np.abs(xs[0])
    xs[1] = -np.abs(xs[1])
    return fnp.asarray(xs)


def test_cond_with_a_mapped_predicate_selects_per_example():
    _check(_branchy, _xs_both_signs())


def test_cond_gradients_under_vmap_both_ways():
    xs = _xs_both_signs()
    loss = lambda x: fnp.sum(_branchy(x)[0]) + _branchy(x)[1]
    _check(fgrad.grad(loss), xs)
    g = fgrad.grad(lambda xs: fnp.sum(fgrad.vmap(loss)(xs)))(xs)
    _same(g, _per_example(fgrad.grad(loss), xs))
    g = fgrad.grad(lambda xs: fnp.sum(fgrad.jit(fgrad.vmap(loss))(xs)))(xs)
    _same(g, _per_example(fgrad.grad(loss), xs))


@pytest.mark.parametrize("p", [True, False])
def test_cond_with_a_shared_predicate_and_closed_over_mapped_values(p):
    xs = _xs_both_signs()
    ws = fnp.asarray(np.random.default_rng(6).normal(size=(B,)))
    pred = fnp.array(p)

    def f(p, w, x):
        # the true branch reads a mapped value from its closure, the false branch does not
        return lax.cond(p, lambda v: v * w, lambda v: v + 1.0, x)

    _check(lambda w, x: f(pred, w, x), ws, xs)
    want = _per_example(lambda x: f(pred, fnp.array(2.0), x), xs)
    _same(fgrad.jit(fgrad.vmap(f, in_axes=(None, None, 0)))(pred, fnp.array(2.0), xs), want)
    # only the weight mapped: the branches' output is mapped in one of them only
    got = fgrad.jit(fgrad.vmap(f, in_axes=(None, 0, None)))(pred, ws, xs[0])
    _same(got, _per_example(lambda w: f(pred, w, xs[0]), ws))


def test_switch_with_a_mapped_index_clamps_per_example():
    branches = [lambda x: x + 1.0, lambda x: 2.0 * x, lambda x: -x]
    idx = fnp.array([-3, 0, 1, 2, 9])
    xv = fnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    _check(lambda i, x: lax.switch(i, branches, x), idx, xv)
    _check(lambda i: lax.switch(i, branches, fnp.array(1.5)), idx)


def test_cond_op_with_a_mapped_boolean_index():
    f = lambda p, x: lax.cond(p, lambda v: v * 3.0, lambda v: v - 1.0, x)
    _check(f, fnp.array([True, False, True, False]), XS)


# ---------------------------------------------------------------------------- while_loop


def _collatz(n):
    return lax.while_loop(
        lambda c: c[0] != 1,
        lambda c: (fnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1),
        (n, fnp.array(0)),
    )


def test_while_loop_with_a_mapped_predicate_freezes_finished_examples():
    _check(_collatz, fnp.array([1, 2, 7, 27]))


def test_while_loop_with_a_shared_predicate_and_a_mapped_carry():
    def f(x):
        return lax.while_loop(
            lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5 + fnp.sin(c[1])), (fnp.array(0), x)
        )

    _check(f, XS)
    g = fgrad.jit(fgrad.vmap(f)).graph(XS)
    (node,) = [n for n in g.nodes if n.op.name == "while_loop"]
    assert node.outputs[0].aval.shape == ()  # the counter stays shared


def test_while_loop_with_mapped_closures_and_jvp():
    limits = fnp.array([2.0, 5.0, 10.0, 50.0])

    def f(lim, x):
        return lax.while_loop(lambda v: v < lim, lambda v: v * v + 1.0, x)

    xs = fnp.array([0.5, 1.0, 3.0, 0.1])
    _check(f, limits, xs)
    _check(lambda x: f(fnp.array(10.0), x), xs)
    tangent = lambda lim, x: fgrad.jvp(lambda x: f(lim, x), (x,), (fnp.ones_like(x),))
    _check(tangent, limits, xs)
    got = fgrad.jvp(lambda xs: fgrad.vmap(f)(limits, xs), (xs,), (fnp.ones(B),))
    _same(got, _per_example(tangent, limits, xs))


def test_fori_loop_with_mapped_or_shared_bounds():
    xs = fnp.array([2.0, 3.0, 1.5, -1.0])
    ns = fnp.array([0, 1, 3, 5])
    body = lambda x: lambda i, a: a * x + i
    _check(lambda n, x: lax.fori_loop(0, n, body(x), fnp.array(1.0)), ns, xs)
    _check(lambda x: lax.fori_loop(0, 3, body(x), fnp.array(1.0)), xs)
    _check(fgrad.grad(lambda x: lax.fori_loop(0, 3, body(x), fnp.array(1.0))), xs)


# ---------------------------------------------------------------------------- scan


def _cumulative(c0, xs):
    return lax.scan(lambda c, x: (c * 0.5 + fnp.sin(x), (c * x, fnp.sum(x))), c0, xs)


def test_scan_with_mapped_xs_carry_or_both():
    xs = fnp.asarray(np.random.default_rng(7).normal(size=(B, 5, 2)))
    c0 = fnp.asarray(np.random.default_rng(8).normal(size=(B, 2)))
    _check(_cumulative, c0, xs)
    _check(_cumulative, c0, xs[0], in_axes=(0, None))
    _check(_cumulative, c0[0], xs, in_axes=(None, 0))
    # the mapped axis of xs elsewhere: axis 1 of (steps, B, 2)
    xs_t = fnp.asarray(np.swapaxes(np.asarray(xs), 0, 1).copy())
    _check(_cumulative, c0, xs_t, in_axes=(0, 1))


def test_scan_reverse_with_a_mapped_closure_and_gradients():
    xs = fnp.asarray(np.random.default_rng(9).normal(size=(5, 2)))
    ws = fnp.asarray(np.random.default_rng(10).normal(size=(B, 2)))

    def f(w):
        return lax.scan(lambda c, x: (fnp.tanh(c * w + x), c), fnp.zeros(2), xs, reverse=True)

    _check(f, ws)
    loss = lambda w: fnp.sum(f(w)[0]) + fnp.sum(f(w)[1] ** 2)
    _check(fgrad.grad(loss), ws)
    g = fgrad.grad(lambda ws: fnp.sum(fgrad.jit(fgrad.vmap(loss))(ws)))(ws)
    _same(g, _per_example(fgrad.grad(loss), ws))


def test_scan_keeps_a_shared_counter_shared():
    xs = fnp.asarray(np.random.default_rng(11).normal(size=(B, 4)))

    def f(x):
        return lax.scan(lambda c, xi: ((c[0] + 1, c[1] + xi * c[0]), c[0]), (fnp.array(0), 0.0), x)

    _check(f, xs)
    g = fgrad.jit(fgrad.vmap(f)).graph(xs)
    (node,) = [n for n in g.nodes if n.op.name == "scan"]
    assert node.outputs[0].aval.shape == () and node.outputs[2].aval.shape == (4,)


def test_random_keys_carried_through_a_scan():
    def noise(key):
        def step(k, _):
            k, sub = rnd.split(k)
            return k, rnd.normal(sub, (2,))

        return lax.scan(step, key, None, length=3)

    _check(noise, KEYS, exact=True)


def test_control_flow_under_nested_vmap():
    grid = fnp.asarray(np.random.default_rng(12).normal(size=(2, 3, 4)))
    f = lambda x: lax.cond(fnp.sum(x) > 0, fnp.sin, fnp.cos, x)
    got = fgrad.jit(fgrad.vmap(fgrad.vmap(f)))(grid)
    want = np.stack([np.stack([np.asarray(f(grid[i, j])) for j in range(3)]) for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    got = fgrad.vmap(fgrad.vmap(_collatz))(fnp.array([[1, 6, 7], [27, 3, 2]]))
    want = [[_collatz(fnp.array(n)) for n in row] for row in ([1, 6, 7], [27, 3, 2])]
    np.testing.assert_array_equal(np.asarray(got[1]), [[int(w[1]) for w in r] for r in want])
