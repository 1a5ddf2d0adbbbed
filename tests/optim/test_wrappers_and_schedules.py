"""lookahead, MultiSteps, masked, multi_transform, ema / incremental_update and the schedules
exponential_decay, polynomial_schedule, linear_schedule, piecewise_constant_schedule and
join_schedules.

Each wrapper is checked against a numpy transcription of the algorithm it implements
(Lookahead's Algorithm 1; the mean of k gradients then one inner step; an optimiser run on
the selected leaves alone), eagerly and under ``jit``; schedules against their closed forms
at Python and Tensor steps.
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad import optim, tree

RNG = np.random.default_rng(23)
A = RNG.uniform(0.5, 3.0, 4)
C = RNG.standard_normal(4)
P0 = RNG.standard_normal(4)
NOISE = RNG.standard_normal((9, 4))  # per-call gradient noise (the mini-batches)


def _loss(p):
    return 0.5 * fnp.sum(fnp.asarray(A) * p * p) - fnp.sum(fnp.asarray(C) * p)


def _np_grad(p):
    return A * p - C


def _np_adam_step(state, g, lr=0.1, b1=0.8, b2=0.9, eps=1e-3):
    # Kingma & Ba 2015, Algorithm 1.
    t, m, v = state
    t, m, v = t + 1, b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
    return (t, m, v), -lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)


def _adam():
    return optim.adam(0.1, b1=0.8, b2=0.9, eps=1e-3)


# --------------------------------------------------------------------------- lookahead


def _np_lookahead(steps, k, alpha, lr, mu, reset):
    # Zhang et al. 2019, Algorithm 1 with inner SGD + heavy-ball momentum (b = mu b + g,
    # theta -= lr b): k fast steps, then phi += alpha (theta - phi), theta = phi.
    theta, phi, b, out = P0.copy(), P0.copy(), np.zeros(4), []
    for step in range(1, steps + 1):
        b = mu * b + _np_grad(theta)
        theta = theta - lr * b
        if step % k == 0:
            phi = phi + alpha * (theta - phi)
            theta = phi.copy()
            if reset:
                b = np.zeros(4)
        out.append((theta.copy(), phi.copy()))
    return out


def _lookahead_run(opt, steps, step_fn=None):
    params = optim.LookaheadParams.init_synced(fnp.array(P0))
    state = opt.init(params)

    def step(params, state):
        updates, state = opt.update(fgrad.grad(_loss)(params.fast), state, params)
        return optim.apply_updates(params, updates), state

    step_fn = step_fn(step) if step_fn else step
    out = []
    for _ in range(steps):
        params, state = step_fn(params, state)
        out.append((np.asarray(params.fast), np.asarray(params.slow)))
    if step_fn is not step:  # jitted: one trace for every step, syncs included
        assert step_fn.cache_info().misses == 1
    return out, state


@pytest.mark.parametrize("reset", [False, True])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_lookahead_matches_algorithm_1(reset, jit):
    opt = optim.lookahead(optim.sgd(0.05, momentum=0.9), 3, 0.3, reset_state=reset)
    got, state = _lookahead_run(opt, 8, fgrad.jit if jit else None)
    expected = _np_lookahead(8, 3, 0.3, 0.05, 0.9, reset)
    for (fast, slow), (theta, phi) in zip(got, expected, strict=True):
        assert_allclose(fast, theta, rtol=1e-12, atol=1e-14)
        assert_allclose(slow, phi, rtol=1e-12, atol=1e-14)
    assert int(state.steps_since_sync) == 8 % 3
    assert type(state).__name__ == "LookaheadState"


def test_lookahead_float32_and_errors():
    opt = optim.lookahead(_adam(), 2, 0.5)
    params = optim.LookaheadParams.init_synced(fnp.array(P0, dtype="float32"))
    state = opt.init(params)
    for _ in range(3):
        updates, state = opt.update(fgrad.grad(_loss)(params.fast), state, params)
        params = optim.apply_updates(params, updates)
    assert params.fast.dtype == params.slow.dtype == np.float32
    assert {x.dtype for x in tree.leaves(state.fast_state.mu)} == {np.dtype("float32")}
    with pytest.raises(TypeError, match="lookahead.update: params must be LookaheadParams"):
        opt.update(fnp.ones(4), state, fnp.ones(4))
    with pytest.raises(ValueError, match="lookahead.update needs params"):
        opt.update(fnp.ones(4), state)
    with pytest.raises(ValueError, match="sync_period must be an int >= 1"):
        optim.lookahead(_adam(), 0, 0.5)
    with pytest.raises(ValueError, match="slow_step_size must be in"):
        optim.lookahead(_adam(), 2, 1.5)


# --------------------------------------------------------------------------- MultiSteps


def _np_multisteps(calls, k, use_mean):
    # Accumulate k gradients (at the same params, with per-call noise), then one Adam step on
    # their mean (or sum); the other calls leave the params alone.
    p, state, acc, out = P0.copy(), (0, np.zeros(4), np.zeros(4)), [], []
    for j in range(calls):
        acc.append(_np_grad(p) + NOISE[j])
        update = np.zeros(4)
        if len(acc) == k:
            g = np.mean(acc, axis=0) if use_mean else np.sum(acc, axis=0)
            state, update = _np_adam_step(state, g)
            acc = []
        p = p + update
        out.append((p.copy(), update))
    return out


def _multisteps_run(acc, calls, dtype="float64", jit=False):
    p = fnp.array(P0, dtype=dtype)
    state = acc.init(p)

    def step(p, state, noise):
        updates, state = acc.update(fgrad.grad(_loss)(p) + noise, state, p)
        return optim.apply_updates(p, updates), state, updates

    step = fgrad.jit(step) if jit else step
    out, emitted = [], []
    for j in range(calls):
        p, state, updates = step(p, state, fnp.array(NOISE[j], dtype=dtype))
        out.append((np.asarray(p), np.asarray(updates)))
        emitted.append(bool(acc.has_updated(state)))
    if jit:  # one trace for the accumulating and the stepping calls alike
        assert step.cache_info().misses == 1
    return out, state, emitted


@pytest.mark.parametrize("use_mean", [True, False])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_multisteps_applies_the_mean_gradient_every_k_calls(use_mean, jit):
    acc = optim.MultiSteps(_adam(), every_k_schedule=3, use_grad_mean=use_mean)
    got, state, emitted = _multisteps_run(acc, 8, jit=jit)
    for (p, u), (p_ref, u_ref) in zip(got, _np_multisteps(8, 3, use_mean), strict=True):
        assert_allclose(p, p_ref, rtol=1e-12, atol=1e-14)
        assert_allclose(u, u_ref, rtol=1e-12, atol=1e-14)
    assert emitted == [False, False, True] * 2 + [False, False]
    assert int(state.mini_step) == 2 and int(state.gradient_step) == 2
    assert int(state.inner_opt_state.count) == 2


def test_multisteps_float32_and_a_schedule_of_k():
    # k = 1 for the first inner step, then 2: updates at calls 1, 3, 5.
    acc = optim.MultiSteps(_adam(), lambda step: fnp.where(step < 1, 1, 2))
    got, state, emitted = _multisteps_run(acc, 6, dtype="float32")
    assert emitted == [True, False, True, False, True, False]
    assert {x.dtype for x in tree.leaves(state) if x.dtype.kind == "f"} == {np.dtype("float32")}
    assert all(p.dtype == u.dtype == np.float32 for p, u in got)
    transformation = acc.gradient_transformation()
    assert isinstance(transformation, optim.GradientTransformation)
    with pytest.raises(ValueError, match="every_k_schedule must be an int >= 1"):
        optim.MultiSteps(_adam(), 0)
    with pytest.raises(TypeError, match="MultiSteps: opt is"):
        optim.MultiSteps("adam", 2)


# --------------------------------------------------------------------------- masks


PARAMS = {"bias": np.array([0.5, -0.5]), "emb": P0.reshape(2, 2), "w": P0[::-1].copy()}


def _tree_loss(params):
    return sum(fnp.sum(fnp.sin(x) + 0.5 * x * x) for x in tree.leaves(params))


def _steps(opt, params, n=3, jit=False):
    params = tree.map(fnp.asarray, params)
    state = opt.init(params)

    def step(params, state):
        grads = fgrad.grad(_tree_loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, grads, updates

    step = fgrad.jit(step) if jit else step
    for _ in range(n):
        params, state, grads, updates = step(params, state)
    return params, state, grads, updates


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_masked_updates_the_selected_leaves_and_passes_the_others(jit):
    mask = {"bias": False, "emb": True, "w": True}
    _, state, grads, updates = _steps(optim.masked(_adam(), mask), PARAMS, jit=jit)
    # the unselected leaf's update is its gradient, unchanged (so params + grads)
    assert_allclose(np.asarray(updates["bias"]), np.asarray(grads["bias"]), rtol=0, atol=0)
    # the selected ones follow Adam run on them alone, where the bias is never touched
    selected = {k: v for k, v in PARAMS.items() if mask[k]}
    got = _steps(optim.masked(_adam(), mask), PARAMS, jit=jit)[0]
    alone = _steps(_adam(), selected)[0]
    for k in selected:
        assert_allclose(np.asarray(got[k]), np.asarray(alone[k]), rtol=1e-13, atol=1e-15)
    assert state.inner_state.mu["bias"] is None and state.inner_state.mu["w"].shape == (4,)


def test_masked_with_a_function_and_a_bad_mask():
    by_ndim = lambda params: tree.map(lambda p: p.ndim > 1, params)  # noqa: E731
    params, _, _, _ = _steps(optim.masked(optim.sgd(0.1), by_ndim), PARAMS, n=1)
    grads = fgrad.grad(_tree_loss)(tree.map(fnp.asarray, PARAMS))
    assert_allclose(np.asarray(params["emb"]), PARAMS["emb"] - 0.1 * np.asarray(grads["emb"]))
    assert_allclose(np.asarray(params["w"]), PARAMS["w"] + np.asarray(grads["w"]))
    opt = optim.masked(optim.sgd(0.1), {"bias": True})
    with pytest.raises(ValueError, match="masked: the mask has structure"):
        opt.init(tree.map(fnp.asarray, PARAMS))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_multi_transform_gives_each_label_its_optimiser(jit):
    labels = {"bias": "sgd", "emb": "adam", "w": "adam"}
    opt = optim.multi_transform({"adam": _adam(), "sgd": optim.sgd(0.2, momentum=0.5)}, labels)
    got, state, _, _ = _steps(opt, PARAMS, jit=jit)
    adam_alone = _steps(_adam(), {"emb": PARAMS["emb"], "w": PARAMS["w"]})[0]
    sgd_alone = _steps(optim.sgd(0.2, momentum=0.5), {"bias": PARAMS["bias"]})[0]
    for k, v in {**adam_alone, **sgd_alone}.items():
        assert_allclose(np.asarray(got[k]), np.asarray(v), rtol=1e-13, atol=1e-15)
    assert sorted(state.inner_states) == ["adam", "sgd"]
    assert state.inner_states["sgd"].inner_state.momentum["emb"] is None


def test_multi_transform_errors():
    params = tree.map(fnp.asarray, PARAMS)
    opt = optim.multi_transform({"adam": _adam()}, {"bias": "frozen", "emb": "adam", "w": "adam"})
    with pytest.raises(ValueError, match="no transformation for the labels 'frozen'"):
        opt.init(params)
    with pytest.raises(TypeError, match=r"transforms\['a'\] is str"):
        optim.multi_transform({"a": "adam"}, {})


# --------------------------------------------------------------------------- averages


def test_ema_of_updates_and_of_params():
    decay, xs = 0.7, [NOISE[j] for j in range(4)]
    for debias in (True, False):
        t = optim.ema(decay, debias=debias)
        state, e = t.init(fnp.zeros(4)), np.zeros(4)
        for step, x in enumerate(xs, start=1):
            out, state = t.update(fnp.array(x), state)
            e = decay * e + (1 - decay) * x  # optax's ema; debiased by 1 - decay**t
            expected = e / (1 - decay**step) if debias else e
            assert_allclose(np.asarray(out), expected, rtol=1e-13)
        assert_allclose(np.asarray(state.ema), e, rtol=1e-13)
    t = optim.ema(0.9, accumulator_dtype="float64")
    out, state = t.update(fnp.ones(2, dtype="float32"), t.init(fnp.zeros(2, dtype="float32")))
    assert state.ema.dtype == np.float64 and out.dtype == np.float32


def test_incremental_update_keeps_an_ema_of_params():
    params = {"w": fnp.array(P0, dtype="float32")}
    average = {"w": fnp.zeros(4, dtype="float32")}
    expected = np.zeros(4)
    for x in NOISE[:3]:
        params = {"w": params["w"] + fnp.array(x, dtype="float32")}
        average = optim.incremental_update(params, average, 0.1)
        expected = 0.1 * np.asarray(params["w"], dtype="float64") + 0.9 * expected
    assert average["w"].dtype == np.float32
    assert_allclose(np.asarray(average["w"]), expected, rtol=1e-5)
    with pytest.raises(ValueError, match="step_size must be in"):
        optim.incremental_update(params, average, 1.5)
    with pytest.raises(ValueError, match="incremental_update: new_tensors have structure"):
        optim.incremental_update(params, [average["w"]], 0.1)


# --------------------------------------------------------------------------- schedules


def _np_exponential(step, init, k, rate, begin=0, staircase=False, end=None):
    # optax's exponential_decay: init * rate ** ((step - begin) / k), floored when
    # staircase, init before begin, clipped at end.
    if step <= begin:
        value = init
    else:
        p = (step - begin) / k
        value = init * rate ** (math.floor(p) if staircase else p)
    if end is not None:
        value = max(value, end) if rate < 1 else min(value, end)
    return value


def _np_polynomial(step, init, end, power, k, begin=0):
    t = min(max(step - begin, 0), k)
    return (init - end) * (1 - t / k) ** power + end


def _np_piecewise(step, init, bounds):
    return init * math.prod(s for b, s in bounds.items() if step >= b)


SCHEDULES = {
    "exponential": (
        lambda: optim.exponential_decay(0.5, 7, 0.3),
        lambda t: _np_exponential(t, 0.5, 7, 0.3),
    ),
    "exponential_staircase_begin_end": (
        lambda: optim.exponential_decay(0.5, 7, 0.3, transition_begin=4, staircase=True,
                                        end_value=0.02),
        lambda t: _np_exponential(t, 0.5, 7, 0.3, 4, True, 0.02),
    ),
    "exponential_growth_capped": (
        lambda: optim.exponential_decay(0.1, 5, 2.0, end_value=1.0),
        lambda t: _np_exponential(t, 0.1, 5, 2.0, end=1.0),
    ),
    "polynomial": (
        lambda: optim.polynomial_schedule(1.0, 0.1, 2.5, 20, transition_begin=3),
        lambda t: _np_polynomial(t, 1.0, 0.1, 2.5, 20, 3),
    ),
    "linear": (
        lambda: optim.linear_schedule(0.0, 2.0, 16),
        lambda t: _np_polynomial(t, 0.0, 2.0, 1, 16),
    ),
    "piecewise": (
        lambda: optim.piecewise_constant_schedule(2.0, {25: 0.5, 5: 0.1, 12: 3.0}),
        lambda t: _np_piecewise(t, 2.0, {5: 0.1, 12: 3.0, 25: 0.5}),
    ),
    "join": (
        lambda: optim.join_schedules(
            [optim.linear_schedule(0.0, 1.0, 5), optim.cosine_decay_schedule(1.0, 10),
             optim.constant_schedule(0.05)],
            [5, 15],
        ),
        lambda t: (t / 5 if t < 5 else
                   0.5 * (1 + math.cos(math.pi * min(t - 5, 10) / 10)) if t < 15 else 0.05),
    ),
}
STEPS = list(range(40))


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_its_closed_form(name):
    make, expected = SCHEDULES[name]
    schedule = make()
    want = [expected(t) for t in STEPS]
    got = [schedule(t) for t in STEPS]
    assert all(type(v) is float for v in got)
    assert_allclose(got, want, rtol=1e-14, atol=1e-16)
    # an optimiser's int32 count, eagerly and traced by jit, gives the same values
    counts = [fnp.full((), t, dtype="int32") for t in STEPS]
    jitted = fgrad.jit(lambda c: schedule(c))
    assert_allclose([float(schedule(c)) for c in counts], want, rtol=1e-14, atol=1e-16)
    assert_allclose([float(jitted(c)) for c in counts], want, rtol=1e-14, atol=1e-16)
    assert jitted.cache_info().misses == 1


def test_a_schedule_drives_an_optimiser_under_jit():
    schedule = optim.exponential_decay(0.1, 2, 0.5, staircase=True)
    opt = optim.sgd(schedule)

    @fgrad.jit
    def step(p, state):
        updates, state = opt.update(fgrad.grad(_loss)(p), state)
        return optim.apply_updates(p, updates), state

    p, state, ref = fnp.array(P0), opt.init(fnp.array(P0)), P0.copy()
    for t in range(5):
        p, state = step(p, state)
        ref = ref - 0.1 * 0.5 ** (t // 2) * _np_grad(ref)
    assert_allclose(np.asarray(p), ref, rtol=1e-13)


def test_schedule_errors():
    with pytest.raises(ValueError, match="exponential_decay: transition_steps must be an int >= 1"):
        optim.exponential_decay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="exponential_decay: decay_rate must be > 0"):
        optim.exponential_decay(0.1, 10, 0.0)
    with pytest.raises(ValueError, match="polynomial_schedule: transition_begin must be"):
        optim.polynomial_schedule(1.0, 0.0, 1, 10, transition_begin=-1)
    with pytest.raises(ValueError, match="piecewise_constant_schedule: scales must be >= 0"):
        optim.piecewise_constant_schedule(1.0, {10: -0.5})
    with pytest.raises(TypeError, match="boundaries_and_scales must be a dict"):
        optim.piecewise_constant_schedule(1.0, [(10, 0.5)])
    with pytest.raises(ValueError, match=r"join_schedules: needs len\(boundaries\)"):
        optim.join_schedules([optim.constant_schedule(1.0)], [3])
    with pytest.raises(ValueError, match="boundaries must be increasing"):
        optim.join_schedules([optim.constant_schedule(1.0)] * 3, [5, 5])
