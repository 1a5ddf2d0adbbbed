"""The building blocks of fgrad.optim, each against its equation, and the named optimisers
as chains of them.

Every block is checked once, against a numpy transcription of its update rule; the named
optimisers must equal their chains bit for bit, follow each paper's equations (numpy, in
float64) to 1e-12 on a coupled quadratic with two leaves, schedules and masks, and keep the
flat state layout that checkpoints are saved in.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad import io, optim, tree

# A coupled quadratic over two leaves: f(w, b) = 0.5 x^T H x - c^T x with x = (w, b),
# H symmetric positive definite, so the gradient H x - c mixes the leaves.
_RNG = np.random.default_rng(11)
_M = _RNG.standard_normal((5, 5))
H = _M @ _M.T / 5 + np.eye(5)
C = _RNG.standard_normal(5)
X0 = _RNG.standard_normal(5)
STEPS = 6


def _split(x):
    return {"b": x[3:], "w": x[:3].reshape(3, 1)}


def _join(p):
    return np.concatenate([np.ravel(np.asarray(p["w"])), np.ravel(np.asarray(p["b"]))])


def _loss(p):
    x = fnp.concatenate([fnp.reshape(p["w"], (3,)), p["b"]])
    return 0.5 * fnp.sum(x * (fnp.asarray(H) @ x)) - fnp.sum(fnp.asarray(C) * x)


def _np_grad(x):
    return H @ x - C


def _trajectory(opt, steps=STEPS, jit=False):
    def step(p, s):
        g = fgrad.grad(_loss)(p)
        u, s = opt.update(g, s, p)
        return optim.apply_updates(p, u), s

    step = fgrad.jit(step) if jit else step
    params = {k: fnp.array(v) for k, v in _split(X0).items()}
    state = opt.init(params)
    out = []
    for _ in range(steps):
        params, state = step(params, state)
        out.append(_join(params))
    return np.array(out), state


# --------------------------------------------------------------------------- the blocks


def test_scale_multiplies_by_a_constant():
    t = optim.scale(-0.25)
    u, state = t.update({"a": fnp.array([4.0, -8.0], dtype="float32")}, t.init(None))
    assert u["a"].dtype == np.float32
    assert_array_equal(np.asarray(u["a"]), [-1.0, 2.0])
    assert state == optim.EmptyState()
    with pytest.raises(TypeError, match="scale: step_size"):
        optim.scale("big")


def test_scale_by_learning_rate_constant_schedule_and_sign():
    u = fnp.array([1.0, -2.0], dtype="float32")
    t = optim.scale_by_learning_rate(0.5)
    out, state = t.update(u, t.init(u))
    assert_array_equal(np.asarray(out), [-0.5, 1.0])
    assert out.dtype == np.float32 and int(state.count) == 1
    t = optim.scale_by_learning_rate(0.5, flip_sign=False)
    out, _ = t.update(u, t.init(u))
    assert_array_equal(np.asarray(out), [0.5, -1.0])
    # A schedule is read at 0, 1, 2, ...: the number of updates made before this one; its
    # float64 value is rounded once to float32.
    t = optim.scale_by_learning_rate(optim.linear_warmup(0.3, warmup_steps=3))
    state = t.init(u)
    for step in range(5):
        out, state = t.update(u, state)
        lr = np.float32(0.3 * min(step, 3) / 3)
        assert out.dtype == np.float32
        assert_array_equal(np.asarray(out), -lr * np.asarray(u))
    with pytest.raises(ValueError, match="scale_by_learning_rate: learning_rate"):
        optim.scale_by_learning_rate(-1.0)


def _np_scale_by_adam(us, b1, b2, eps):
    m, v, out = 0.0, 0.0, []
    for t, u in enumerate(us, start=1):
        m = b1 * m + (1 - b1) * u
        v = b2 * v + (1 - b2) * np.abs(u) ** 2
        out.append((m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps))
    return np.array(out)


def test_scale_by_adam_matches_algorithm_1_without_the_learning_rate():
    us = _RNG.standard_normal((5, 4))
    t = optim.scale_by_adam(b1=0.7, b2=0.9, eps=1e-3)
    state = t.init(fnp.zeros(4))
    got = []
    for u in us:
        out, state = t.update(fnp.array(u), state)
        got.append(np.asarray(out))
    assert_allclose(got, _np_scale_by_adam(us, 0.7, 0.9, 1e-3), rtol=1e-13, atol=1e-15)
    assert int(state.count) == 5 and isinstance(state, optim.ScaleByAdamState)


def test_scale_by_rms_matches_its_equations():
    us = _RNG.standard_normal((5, 3))
    t = optim.scale_by_rms(decay=0.8, eps=1e-3)
    state = t.init(fnp.zeros(3))
    v = np.zeros(3)
    for u in us:
        out, state = t.update(fnp.array(u), state)
        v = 0.8 * v + 0.2 * u**2
        assert_allclose(np.asarray(out), u / (np.sqrt(v) + 1e-3), rtol=1e-14)
    assert_allclose(np.asarray(state.nu), v, rtol=1e-14)


@pytest.mark.parametrize("nesterov", [False, True])
def test_trace_is_heavy_ball_or_nesterov_momentum(nesterov):
    us = _RNG.standard_normal((4, 2))
    t = optim.trace(0.6, nesterov=nesterov)
    state = t.init(fnp.zeros(2))
    b = np.zeros(2)
    for u in us:
        out, state = t.update(fnp.array(u), state)
        b = 0.6 * b + u
        assert_allclose(np.asarray(out), u + 0.6 * b if nesterov else b, rtol=1e-15)
    assert_allclose(np.asarray(state.trace), b, rtol=1e-15)
    with pytest.raises(ValueError, match="trace: decay"):
        optim.trace(-0.1)


def test_add_decayed_weights_with_and_without_mask():
    params = {"b": fnp.array([2.0]), "w": fnp.array([[1.0, -3.0]])}
    grads = tree.map(fnp.ones_like, params)
    t = optim.add_decayed_weights(0.5)
    out, _ = t.update(grads, t.init(params), params)
    assert_array_equal(np.asarray(out["b"]), [2.0])
    assert_array_equal(np.asarray(out["w"]), [[1.5, -0.5]])
    masked = optim.add_decayed_weights(0.5, mask=lambda p: {"b": False, "w": True})
    out, _ = masked.update(grads, masked.init(params), params)
    assert_array_equal(np.asarray(out["b"]), [1.0])  # passes unchanged
    assert_array_equal(np.asarray(out["w"]), [[1.5, -0.5]])
    with pytest.raises(ValueError, match="add_decayed_weights.update needs params"):
        t.update(grads, t.init(params))
    with pytest.raises(ValueError, match="weight_decay"):
        optim.add_decayed_weights(-1.0)


def test_a_hand_built_chain_under_jit_traces_once_and_matches_eager():
    opt = optim.chain(
        optim.clip_by_global_norm(1.0),
        optim.scale_by_adam(b1=0.8),
        optim.add_decayed_weights(0.1),
        optim.scale_by_learning_rate(optim.cosine_decay_schedule(0.1, 4)),
    )
    eager, s_eager = _trajectory(opt)
    jitted, s_jit = _trajectory(opt, jit=True)
    assert_allclose(jitted, eager, rtol=1e-13, atol=1e-15)
    assert [int(s.count) for s in (s_jit[1], s_jit[3])] == [STEPS, STEPS]


# --------------------------------------------------------------------------- named = chain


def _chains():
    lr = optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 6, end_value=0.01)
    mask = {"b": False, "w": True}
    return {
        "sgd": (optim.sgd(0.1), optim.chain(optim.scale_by_learning_rate(0.1))),
        "sgd_nesterov": (
            optim.sgd(lr, momentum=0.8, nesterov=True),
            optim.chain(optim.trace(0.8, nesterov=True), optim.scale_by_learning_rate(lr)),
        ),
        "adam": (
            optim.adam(lr, b1=0.8, b2=0.95, eps=1e-6),
            optim.chain(optim.scale_by_adam(0.8, 0.95, 1e-6), optim.scale_by_learning_rate(lr)),
        ),
        "adamw": (
            optim.adamw(0.05, weight_decay=0.2, mask=mask),
            optim.chain(
                optim.scale_by_adam(),
                optim.add_decayed_weights(0.2, mask),
                optim.scale_by_learning_rate(0.05),
            ),
        ),
        "rmsprop": (
            optim.rmsprop(0.02, decay=0.8, eps=1e-4, momentum=0.5),
            optim.chain(
                optim.scale_by_rms(0.8, 1e-4), optim.trace(0.5), optim.scale_by_learning_rate(0.02)
            ),
        ),
    }


@pytest.mark.parametrize("name", sorted(_chains()))
def test_issue_11_named_optimisers_are_their_chains(name):
    named, chained = _chains()[name]
    got, _ = _trajectory(named)
    want, _ = _trajectory(chained)
    assert_array_equal(got, want)


def _np_reference(name):
    """Each paper's update rule on the coupled quadratic, in float64 numpy."""
    lr_sched = lambda t: (  # noqa: E731  (warmup_cosine_decay_schedule(0, 0.1, 2, 6, 0.01))
        0.1 * t / 2 if t < 2 else 0.01 + 0.09 * 0.5 * (1 + np.cos(np.pi * min(t - 2, 4) / 4))
    )
    x, out = X0.copy(), []
    m, v, b = np.zeros(5), np.zeros(5), np.zeros(5)
    decay_mask = np.array([1.0, 1.0, 1.0, 0.0, 0.0])  # w decayed, b not
    for t in range(1, STEPS + 1):
        g = _np_grad(x)
        if name == "sgd":  # plain gradient descent
            x = x - 0.1 * g
        elif name == "sgd_nesterov":  # torch.optim.SGD, dampening=0, nesterov=True
            b = 0.8 * b + g
            x = x - lr_sched(t - 1) * (g + 0.8 * b)
        elif name in ("adam", "adamw"):  # Kingma & Ba Alg. 1; Loshchilov & Hutter Alg. 2
            b1, b2, eps, lr, wd = (
                (0.8, 0.95, 1e-6, lr_sched(t - 1), 0.0)
                if name == "adam"
                else (0.9, 0.999, 1e-8, 0.05, 0.2)
            )
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g**2
            step = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
            x = x - lr * (step + wd * decay_mask * x)
        elif name == "rmsprop":  # torch.optim.RMSprop, centered=False
            v = 0.8 * v + 0.2 * g**2
            b = 0.5 * b + g / (np.sqrt(v) + 1e-4)
            x = x - 0.02 * b
        out.append(x)
    return np.array(out)


@pytest.mark.parametrize("name", sorted(_chains()))
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_issue_11_named_optimisers_follow_the_papers(name, jit):
    got, _ = _trajectory(_chains()[name][0], jit=jit)
    assert_allclose(got, _np_reference(name), rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- state layout


def test_issue_11_named_states_keep_their_flat_layout():
    params = {"b": fnp.zeros(2), "w": fnp.zeros((3, 1))}
    expected = {
        "sgd": (optim.sgd(0.1), optim.SgdState, 1),  # count; no buffer
        "sgd_momentum": (optim.sgd(0.1, momentum=0.9), optim.SgdState, 3),
        "adam": (optim.adam(0.1), optim.AdamState, 5),
        "adamw": (optim.adamw(0.1), optim.AdamState, 5),
        "rmsprop": (optim.rmsprop(0.1), optim.RmsPropState, 3),
        "rmsprop_momentum": (optim.rmsprop(0.1, momentum=0.5), optim.RmsPropState, 5),
    }
    for name, (opt, cls, n_leaves) in expected.items():
        state = opt.init(params)
        _, state = opt.update(tree.map(fnp.ones_like, params), state, params)
        assert type(state) is cls, name
        leaves = tree.leaves(state)
        assert len(leaves) == n_leaves, name
        assert leaves[0].dtype == np.int32 and int(leaves[0]) == 1, name


def test_issue_11_checkpointed_state_resumes_exactly(tmp_path):
    # Saved as the state's leaves (io.save takes no NamedTuples), restored through a fresh
    # init's structure: the resumed run equals the uninterrupted one bit for bit.
    opt = optim.adamw(optim.cosine_decay_schedule(0.1, 10), weight_decay=0.1)
    straight, _ = _trajectory(opt, steps=STEPS)
    params = {k: fnp.array(v) for k, v in _split(X0).items()}
    state = opt.init(params)
    for _ in range(3):
        updates, state = opt.update(fgrad.grad(_loss)(params), state, params)
        params = optim.apply_updates(params, updates)
    path = tmp_path / "ckpt.safetensors"
    io.save(str(path), {"params": params, "opt_state": tree.leaves(state)})
    saved = io.load(str(path))
    params = saved["params"]
    state = tree.unflatten(tree.structure(opt.init(params)), saved["opt_state"])
    assert type(state) is optim.AdamState and int(state.count) == 3
    resumed = []
    for _ in range(STEPS - 3):
        updates, state = opt.update(fgrad.grad(_loss)(params), state, params)
        params = optim.apply_updates(params, updates)
        resumed.append(_join(params))
    assert_array_equal(np.array(resumed), straight[3:])
