"""A whole training step (loss, gradients, optimiser update) under one ``fgrad.jit`` trace.

The step count lives in the optimiser state as a 0-d int32 Tensor and everything that
depends on it (schedules, bias corrections, the clipping factor) is computed with fgrad ops,
so the jitted step is traced once and then replayed; its results must equal the eager
step's (the same ops run on the same numbers) and float32 training must stay float32.
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad import optim, tree

RNG = np.random.default_rng(5)
X = RNG.standard_normal((16, 3))
Y = RNG.standard_normal(16)
W1 = RNG.standard_normal((3, 8))
W2 = RNG.standard_normal(8)


def _params(dtype):
    return {
        "w1": fnp.array(W1, dtype=dtype),
        "b1": fnp.zeros(8, dtype=dtype),
        "w2": fnp.array(W2, dtype=dtype),
        "b2": fnp.zeros((), dtype=dtype),
    }


def _loss(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    err = h @ params["w2"] + params["b2"] - y
    return fnp.mean(err * err)


def _decay_mask(params):
    return {name: name.startswith("w") for name in params}


# Learning rates large enough that momentum, clipping and the schedules all matter in 5 steps.
OPTIMISERS = {
    "sgd_momentum": lambda: optim.sgd(0.05, momentum=0.9),
    "sgd_nesterov": lambda: optim.sgd(optim.cosine_decay_schedule(0.05, 4), 0.9, nesterov=True),
    "adam": lambda: optim.adam(0.05, b1=0.8, b2=0.99),
    "adamw_mask": lambda: optim.adamw(
        optim.linear_warmup(0.05, 3, init_value=0.01), weight_decay=0.1, mask=_decay_mask
    ),
    "rmsprop": lambda: optim.rmsprop(0.01, decay=0.9, momentum=0.5),
    "chain_clip_adam_warmup_cosine": lambda: optim.chain(
        optim.clip_by_global_norm(0.5),
        optim.adam(optim.warmup_cosine_decay_schedule(0.0, 0.05, 2, 6, end_value=0.005)),
    ),
}


def _make_step(opt):
    def step(params, opt_state, x, y):
        loss, grads = fgrad.value_and_grad(_loss)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    return step


def _run(opt, step, dtype, steps=5):
    params = _params(dtype)
    state = opt.init(params)
    x, y = fnp.array(X, dtype=dtype), fnp.array(Y, dtype=dtype)
    losses = []
    for _ in range(steps):
        params, state, loss = step(params, state, x, y)
        losses.append(float(loss))
    return params, state, losses


def _assert_trees_close(a, b, **tol):
    leaves_a, leaves_b = tree.leaves(a), tree.leaves(b)
    assert tree.structure(a) == tree.structure(b)
    for la, lb in zip(leaves_a, leaves_b):
        assert la.dtype == lb.dtype and la.shape == lb.shape
        assert_allclose(np.asarray(la), np.asarray(lb), **tol)


@pytest.mark.parametrize("name", sorted(OPTIMISERS))
def test_jitted_training_step_traces_once_and_matches_eager(name):
    opt = OPTIMISERS[name]()
    eager = _make_step(opt)
    jitted = fgrad.jit(eager)
    p_eager, s_eager, l_eager = _run(opt, eager, "float64")
    p_jit, s_jit, l_jit = _run(opt, jitted, "float64")
    assert jitted.cache_info().misses == 1 and jitted.cache_info().hits == 4
    assert_allclose(l_jit, l_eager, rtol=1e-12)
    assert l_jit[-1] < l_jit[0]  # it trains
    _assert_trees_close(p_jit, p_eager, rtol=1e-12, atol=1e-14)
    _assert_trees_close(s_jit, s_eager, rtol=1e-12, atol=1e-14)
    counts = [leaf for leaf in tree.leaves(s_jit) if leaf.dtype == np.int32]
    assert counts and all(int(c) == 5 for c in counts)


@pytest.mark.parametrize("name", sorted(OPTIMISERS))
def test_jitted_training_step_keeps_float32(name):
    opt = OPTIMISERS[name]()
    jitted = fgrad.jit(_make_step(opt))
    params, state, losses = _run(opt, jitted, "float32")
    p_eager, s_eager, _ = _run(opt, _make_step(opt), "float32")
    assert jitted.cache_info().misses == 1
    for leaf in tree.leaves((params, state)):
        if leaf.shape == () and leaf.dtype.kind == "i":
            assert leaf.dtype == np.int32  # the step count
        else:
            assert leaf.dtype == np.float32, name
    _assert_trees_close(params, p_eager, rtol=1e-5, atol=1e-6)
    _assert_trees_close(state, s_eager, rtol=1e-5, atol=1e-6)
    assert all(math.isfinite(v) for v in losses)


def test_jitted_update_alone_traces_once():
    # The update by itself, without the loss: the state's count is a traced input.
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(1e-2, weight_decay=0.1))
    update = fgrad.jit(opt.update)
    params = _params("float64")
    grads = tree.map(lambda p: fnp.full_like(p, 0.3), params)
    state_jit = state_eager = opt.init(params)
    for _ in range(4):
        u_jit, state_jit = update(grads, state_jit, params)
        u_eager, state_eager = opt.update(grads, state_eager, params)
        _assert_trees_close(u_jit, u_eager, rtol=1e-13, atol=0)
    assert update.cache_info().misses == 1


# --------------------------------------------------------------------------- schedules


SCHEDULES = {
    "constant": optim.constant_schedule(0.3),
    "cosine": optim.cosine_decay_schedule(2.0, decay_steps=10, alpha=0.1),
    "warmup": optim.linear_warmup(1e-3, warmup_steps=10, init_value=1e-4),
    "warmup0": optim.linear_warmup(0.5, warmup_steps=0),
    "warmup_cosine": optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 12, end_value=0.1),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_of_a_traced_count_equals_the_python_value(name):
    # Python int in -> Python float out (the documented values); an int32 count, eager or
    # traced by jit (one trace for every step), gives the same number.
    schedule = SCHEDULES[name]
    jitted = fgrad.jit(lambda count: fnp.asarray(schedule(count)))
    for step in [-2, 0, 1, 3, 4, 5, 8, 10, 12, 13, 1000]:
        expected = schedule(step)
        assert type(expected) is float
        count = fnp.asarray(step, dtype="int32")
        assert float(schedule(count)) == expected
        assert float(jitted(count)) == expected
    assert jitted.cache_info().misses == 1


def test_schedule_of_a_vector_of_steps():
    # Steps as a Tensor: the schedule is elementwise (handy for plotting a schedule).
    schedule = SCHEDULES["warmup_cosine"]
    steps = np.arange(-1, 15)
    got = schedule(fnp.asarray(steps))
    assert got.shape == steps.shape and got.dtype == np.float64
    assert_allclose(np.asarray(got), [schedule(int(s)) for s in steps], rtol=0, atol=0)


def test_user_schedule_gets_the_traced_count():
    # A schedule written with fgrad ops works under jit; its float64 value is cast to the
    # float32 parameters' dtype (a 0-d float64 Tensor is not weak under NEP 50).
    def schedule(count):
        return 0.1 / fnp.sqrt(count + 1.0)

    opt = optim.sgd(schedule)
    update = fgrad.jit(opt.update)
    params = fnp.ones(3, dtype="float32")
    state = opt.init(params)
    for t in range(3):
        updates, state = update(fnp.ones(3, dtype="float32"), state)
        assert updates.dtype == np.float32
        assert_allclose(np.asarray(updates), -0.1 / math.sqrt(t + 1), rtol=1e-6)
    assert update.cache_info().misses == 1 and int(state.count) == 3


# --------------------------------------------------------------------------- clip under jit


@pytest.mark.parametrize("values", [[0.0, 0.0], [0.3, 0.4], [0.6, 0.8], [30.0, 40.0]])
def test_clip_by_global_norm_under_jit(values):
    # Below, at and above the bound, and at norm 0 (no division by zero): optax's rule,
    # updates * max_norm / max(norm, max_norm), with the same numbers traced or not.
    clip = optim.clip_by_global_norm(1.0)
    update = fgrad.jit(clip.update)
    grads = {"a": fnp.array(values), "b": fnp.array(values, dtype="float32")}
    got, _ = update(grads, clip.init(grads))
    eager, _ = clip.update(grads, clip.init(grads))
    norm = math.sqrt(2 * sum(v * v for v in values))
    scale = 1.0 if norm <= 1.0 else 1.0 / norm
    assert got["b"].dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got["a"]), np.asarray(eager["a"]))
    np.testing.assert_array_equal(np.asarray(got["b"]), np.asarray(eager["b"]))
    assert_allclose(np.asarray(got["a"]), np.array(values) * scale, rtol=1e-15)


# --------------------------------------------------------------------------- counts


def test_count_starts_as_int32_tensor_and_saturates():
    state = optim.adam(0.1).init(fnp.zeros(2))
    assert isinstance(state.count, fgrad.Tensor)
    assert state.count.dtype == np.int32 and state.count.shape == ()
    top = np.iinfo(np.int32).max
    opt = optim.sgd(0.1)
    _, state = opt.update(fnp.ones(1), optim.SgdState(fnp.asarray(top - 1, dtype="int32"), None))
    assert int(state.count) == top
    _, state = opt.update(fnp.ones(1), state)
    assert int(state.count) == top  # no wrap-around to a negative step


def test_python_int_count_in_a_hand_built_state_still_works():
    # States built by older code held a Python int count: accepted, returned as a Tensor.
    opt = optim.adam(0.1)
    params = fnp.array([1.0, -2.0])
    state = optim.AdamState(0, fnp.zeros(2), fnp.zeros(2))
    updates, state = opt.update(fnp.array([0.5, -0.5]), state)
    assert int(state.count) == 1 and state.count.dtype == np.int32
    expected, _ = opt.update(fnp.array([0.5, -0.5]), opt.init(params))
    np.testing.assert_array_equal(np.asarray(updates), np.asarray(expected))
