"""fgrad.optim against hand-written numpy transcriptions of each paper's update equations.

The quadratic ``f(w) = 0.5 * sum(a * w**2) - sum(c * w)`` has gradient ``a * w - c``; every
reference below runs a few steps of the published update rule on it in float64 numpy and
the optimiser must agree to rounding (it is fed gradients from ``fgrad.grad``).
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad import optim, tree

A = np.array([1.0, 4.0, 0.5])
C = np.array([1.0, -2.0, 0.3])
W0 = np.array([0.5, -1.0, 2.0])
STEPS = 4


def _loss(params):
    w = params["w"]
    return 0.5 * fnp.sum(fnp.asarray(A) * w * w) - fnp.sum(fnp.asarray(C) * w)


def _np_grad(w):
    return A * w - C


def _run(opt, steps=STEPS, dtype="float64"):
    """Optimise the quadratic with ``opt``; return the iterates w_1..w_steps."""
    params = {"w": fnp.array(W0, dtype=dtype)}
    state = opt.init(params)
    out = []
    for _ in range(steps):
        grads = fgrad.grad(_loss)(params)
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
        out.append(np.asarray(params["w"]))
    return np.array(out), state


# --------------------------------------------------------------------------- SGD


def test_sgd_plain_matches_gradient_descent():
    # w_{t+1} = w_t - lr * grad(w_t); for this diagonal quadratic also the closed form
    # w_t = w* + (1 - lr a)^t (w_0 - w*) with w* = c / a.
    lr = 0.1
    got, state = _run(optim.sgd(lr))
    w_star = C / A
    expected = [w_star + (1 - lr * A) ** t * (W0 - w_star) for t in range(1, STEPS + 1)]
    assert_allclose(got, expected, rtol=1e-13, atol=1e-14)
    assert state.count == STEPS and state.momentum is None


def _np_sgd_momentum(lr, mu, nesterov):
    # torch.optim.SGD docs (dampening=0): b_t = mu b_{t-1} + g_t (b_1 = g_1);
    # nesterov: g_t + mu b_t, else b_t; w -= lr * that.
    w, b, out = W0.copy(), np.zeros(3), []
    for _ in range(STEPS):
        g = _np_grad(w)
        b = mu * b + g
        w = w - lr * (g + mu * b if nesterov else b)
        out.append(w)
    return np.array(out)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_and_nesterov(nesterov):
    got, state = _run(optim.sgd(0.05, momentum=0.9, nesterov=nesterov))
    assert_allclose(got, _np_sgd_momentum(0.05, 0.9, nesterov), rtol=1e-13, atol=1e-14)
    assert state.count == STEPS


def test_sgd_first_two_updates_by_hand():
    # Source: the equations in the sgd docstring, evaluated by hand.
    opt = optim.sgd(0.1, momentum=0.5, nesterov=True)
    g = fnp.array([2.0])
    state = opt.init(g)
    u1, state = opt.update(g, state)  # b1 = 2, d1 = 2 + 0.5 * 2 = 3
    u2, state = opt.update(g, state)  # b2 = 0.5 * 2 + 2 = 3, d2 = 2 + 1.5 = 3.5
    assert_allclose(np.asarray(u1), [-0.3])
    assert_allclose(np.asarray(u2), [-0.35])


# --------------------------------------------------------------------------- Adam


def _np_adam(lr, b1, b2, eps, weight_decay=0.0):
    # Kingma & Ba 2015, Algorithm 1; AdamW (Loshchilov & Hutter 2019, Algorithm 2) adds
    # lr * weight_decay * w_{t-1} outside the moments, as torch.optim.AdamW.
    w, m, v, out = W0.copy(), np.zeros(3), np.zeros(3), []
    for t in range(1, STEPS + 1):
        g = _np_grad(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        m_hat = m / (1 - b1**t)
        v_hat = v / (1 - b2**t)
        w = w - lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * w)
        out.append(w)
    return np.array(out)


def test_adam_matches_algorithm_1():
    got, state = _run(optim.adam(0.1, b1=0.8, b2=0.99, eps=1e-3))
    assert_allclose(got, _np_adam(0.1, 0.8, 0.99, 1e-3), rtol=1e-13, atol=1e-14)
    assert state.count == STEPS


def test_adam_first_step_bias_correction_gives_lr_sign():
    # t = 1: m_hat = g and v_hat = g**2 exactly, so the update is -lr * g / (|g| + eps).
    g = np.array([1e-3, -5.0, 300.0, 0.0])
    opt = optim.adam(0.01, eps=1e-8)
    updates, _ = opt.update(fnp.array(g), opt.init(fnp.zeros(4)))
    assert_allclose(np.asarray(updates), -0.01 * g / (np.abs(g) + 1e-8), rtol=1e-12)
    assert_allclose(np.asarray(updates)[:3], -0.01 * np.sign(g[:3]), rtol=1e-5)


def test_adamw_matches_decoupled_weight_decay():
    got, _ = _run(optim.adamw(0.1, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.3))
    assert_allclose(got, _np_adam(0.1, 0.9, 0.999, 1e-8, 0.3), rtol=1e-13, atol=1e-14)


def test_adamw_decay_is_decoupled_from_the_moments():
    # Zero gradients: the Adam part is 0 / (0 + eps) = 0 and only -lr * wd * w remains; with
    # L2 regularisation folded into the gradient it would be -lr * sign(w) instead.
    params = {"w": fnp.array([10.0, -4.0]), "b": fnp.array([1.0])}
    opt = optim.adamw(0.1, weight_decay=0.5, mask={"w": True, "b": False})
    grads = tree.map(fnp.zeros_like, params)
    updates, state = opt.update(grads, opt.init(params), params)
    assert_allclose(np.asarray(updates["w"]), [-0.5, 0.2])
    assert_allclose(np.asarray(updates["b"]), [0.0])  # masked out: no decay
    assert_allclose(np.asarray(state.nu["w"]), [0.0, 0.0])


def test_adamw_needs_params():
    opt = optim.adamw(0.1)
    with pytest.raises(ValueError, match="needs params"):
        opt.update(fnp.ones(2), opt.init(fnp.ones(2)))


# --------------------------------------------------------------------------- RMSProp


def _np_rmsprop(lr, decay, eps, momentum):
    # torch.optim.RMSprop docs (centered=False, alpha=decay): v = a v + (1-a) g^2;
    # s = g / (sqrt(v) + eps); b = mu b + s (or s); w -= lr * b.
    w, v, b, out = W0.copy(), np.zeros(3), np.zeros(3), []
    for _ in range(STEPS):
        g = _np_grad(w)
        v = decay * v + (1 - decay) * g**2
        s = g / (np.sqrt(v) + eps)
        b = momentum * b + s if momentum else s
        w = w - lr * b
        out.append(w)
    return np.array(out)


@pytest.mark.parametrize("momentum", [0.0, 0.7])
def test_rmsprop_matches_reference(momentum):
    got, state = _run(optim.rmsprop(0.01, decay=0.9, eps=1e-4, momentum=momentum))
    assert_allclose(got, _np_rmsprop(0.01, 0.9, 1e-4, momentum), rtol=1e-13, atol=1e-14)
    assert (state.momentum is None) == (momentum == 0.0)


# --------------------------------------------------------------------------- clip, chain


def test_clip_by_global_norm_scales_across_leaves():
    grads = {"a": fnp.array([3.0, 0.0]), "b": [fnp.array([[4.0]])]}  # global norm 5
    clip = optim.clip_by_global_norm(2.5)
    clipped, state = clip.update(grads, clip.init(grads))
    assert_allclose(np.asarray(clipped["a"]), [1.5, 0.0])
    assert_allclose(np.asarray(clipped["b"][0]), [[2.0]])
    assert float(optim.global_norm(clipped)) == pytest.approx(2.5)
    assert state == optim.EmptyState()


def test_clip_by_global_norm_passes_small_updates_unchanged():
    # The scale is max_norm / max(norm, max_norm): exactly 1 at and below the bound (norm 0
    # included), so the values come through bit for bit (a new Tensor: there is no Python
    # branch on the norm, which would not trace under jit).
    clip = optim.clip_by_global_norm(1.0)
    for values, dtype in [
        ([0.3, 0.4], "float64"),
        ([0.6, 0.8], "float32"),
        ([0.0, -0.0], "float32"),
    ]:
        grads = {"a": fnp.array(values, dtype=dtype)}
        same, _ = clip.update(grads, clip.init(grads))
        assert same["a"].dtype == dtype
        np.testing.assert_array_equal(np.asarray(same["a"]), np.asarray(grads["a"]))
        assert np.array_equal(np.signbit(np.asarray(same["a"])), np.signbit(values))
    empty, _ = clip.update({}, clip.init({}))
    assert empty == {}


def test_chain_applies_in_order():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(0.5, momentum=0.9))
    params = {"w": fnp.array([0.0, 0.0])}
    state = opt.init(params)
    assert isinstance(state, tuple) and len(state) == 2
    g = {"w": fnp.array([6.0, 8.0])}  # clipped to [0.6, 0.8]
    u1, state = opt.update(g, state, params)
    u2, state = opt.update(g, state, params)  # buffer 0.9 * c + c = 1.9 c
    assert_allclose(np.asarray(u1["w"]), [-0.3, -0.4])
    assert_allclose(np.asarray(u2["w"]), [-0.57, -0.76])
    assert state[1].count == 2


def test_chain_rejects_non_transformations():
    with pytest.raises(TypeError, match="argument 1"):
        optim.chain(optim.sgd(0.1), lambda g: g)
    with pytest.raises(ValueError, match="tuple of 1 states"):
        optim.chain(optim.sgd(0.1)).update(fnp.ones(1), optim.sgd(0.1).init(fnp.ones(1)))


# --------------------------------------------------------------------------- schedules


def test_schedule_values_at_chosen_steps():
    # Source: the formulas in each docstring (optax's definitions), evaluated with math.
    assert optim.constant_schedule(0.3)(0) == 0.3
    assert optim.constant_schedule(0.3)(10**6) == 0.3

    cos = optim.cosine_decay_schedule(2.0, decay_steps=10, alpha=0.1)
    for step in (0, 3, 5, 10):
        expected = 2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * step / 10)) + 0.1)
        assert cos(step) == pytest.approx(expected, rel=1e-15)
    assert cos(25) == pytest.approx(0.2)
    assert cos(5) == pytest.approx(1.1)

    warm = optim.linear_warmup(1e-3, warmup_steps=10, init_value=1e-4)
    assert [warm(s) for s in (0, 5, 10, 99)] == pytest.approx([1e-4, 5.5e-4, 1e-3, 1e-3])
    assert optim.linear_warmup(0.5, warmup_steps=0)(0) == 0.5

    wc = optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=4, decay_steps=12, end_value=0.1)
    expected = {0: 0.0, 2: 0.5, 4: 1.0, 8: 0.1 + 0.9 * 0.5, 12: 0.1, 40: 0.1}
    for step, value in expected.items():
        assert wc(step) == pytest.approx(value, abs=1e-15)
    assert wc(6) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 2 / 8)))


def test_optimiser_reads_schedule_at_the_step_count():
    seen = []

    def schedule(step):
        seen.append(step)
        return np.float64(0.1 * (step + 1))  # a numpy scalar must not promote float32

    opt = optim.sgd(schedule)
    params = fnp.ones(2, dtype="float32")
    state = opt.init(params)
    for expected_lr in (0.1, 0.2, 0.3):
        updates, state = opt.update(fnp.ones(2, dtype="float32"), state)
        assert_allclose(np.asarray(updates), [-expected_lr] * 2, rtol=1e-6)
        assert updates.dtype == np.float32
    assert seen == [0, 1, 2] and state.count == 3


def test_schedule_argument_errors():
    with pytest.raises(ValueError, match="decay_steps"):
        optim.cosine_decay_schedule(1.0, decay_steps=0)
    with pytest.raises(ValueError, match="warmup_steps"):
        optim.linear_warmup(1.0, warmup_steps=-1)
    with pytest.raises(ValueError, match="decay_steps"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=5, decay_steps=5)


# --------------------------------------------------------------------------- dtypes, errors

OPTIMISERS = {
    "sgd": lambda: optim.sgd(0.1),
    "sgd_nesterov": lambda: optim.sgd(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: optim.adam(optim.cosine_decay_schedule(0.1, 10)),
    "adamw": lambda: optim.adamw(0.1, weight_decay=0.1),
    "rmsprop": lambda: optim.rmsprop(0.1, momentum=0.5),
    "chain": lambda: optim.chain(optim.clip_by_global_norm(0.1), optim.adam(0.1)),
}


@pytest.mark.parametrize("name", sorted(OPTIMISERS))
def test_float32_params_stay_float32(name):
    opt = OPTIMISERS[name]()
    params = {"w": fnp.array([[1.0, -2.0]], dtype="float32"), "b": [fnp.zeros(3, "float32")]}
    state = opt.init(params)
    for _ in range(2):
        grads = fgrad.grad(lambda p: fnp.sum(p["w"] * p["w"]) + fnp.sum(p["b"][0]))(params)
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
    for leaf in tree.leaves((updates, params, state)):
        assert isinstance(leaf, fgrad.Tensor), name
        if leaf.shape == () and leaf.dtype.kind == "i":  # the step count
            assert leaf.dtype == np.int32 and int(leaf) == 2, name
        else:
            assert leaf.dtype == np.float32, name
    assert params["w"].shape == (1, 2) and params["b"][0].shape == (3,)


def test_apply_updates_casts_back_to_param_dtype():
    out = optim.apply_updates([fnp.array([1.0], "float32")], [fnp.array([1e-3])])
    assert out[0].dtype == np.float32
    assert_allclose(np.asarray(out[0]), [1.001], rtol=1e-7)
    with pytest.raises(ValueError, match="apply_updates: updates have structure"):
        optim.apply_updates({"w": fnp.ones(1)}, {"v": fnp.ones(1)})


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: optim.sgd(-0.1), "learning_rate"),
        (lambda: optim.sgd(0.1, momentum=-1.0), "momentum"),
        (lambda: optim.sgd(0.1, nesterov=True), "nesterov"),
        (lambda: optim.adam(0.1, b1=1.0), "b1"),
        (lambda: optim.adam(0.1, b2=-0.1), "b2"),
        (lambda: optim.adamw(0.1, eps=-1.0), "eps"),
        (lambda: optim.adamw(0.1, weight_decay=-1.0), "weight_decay"),
        (lambda: optim.rmsprop(0.1, decay=1.0), "decay"),
        (lambda: optim.clip_by_global_norm(0.0), "max_norm"),
    ],
)
def test_bad_hyperparameters_raise_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_learning_rate_type_and_state():
    with pytest.raises(TypeError, match="learning_rate"):
        optim.adam("fast")
    opt = optim.adam(0.1)
    with pytest.raises(TypeError, match="adam.init"):
        opt.update(fnp.ones(1), None)


# --------------------------------------------------------------------------- training


def test_linear_regression_with_adam_converges():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    w_true, b_true = np.array([1.5, -2.0, 0.5]), 0.7
    y = x @ w_true + b_true
    xs, ys = fnp.array(x), fnp.array(y)

    def loss(params):
        pred = fnp.sum(xs * params["w"], axis=1) + params["b"]
        err = pred - ys
        return fnp.sum(err * err) / 64.0

    params = {"w": fnp.zeros(3), "b": fnp.zeros(())}
    opt = optim.chain(optim.clip_by_global_norm(10.0), optim.adam(0.1))
    state = opt.init(params)
    first = float(loss(params))
    for _ in range(300):
        _, grads = fgrad.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
    assert float(loss(params)) < 1e-6 * first
    assert_allclose(np.asarray(params["w"]), w_true, atol=1e-3)
    assert_allclose(float(params["b"]), b_true, atol=1e-3)


def test_adam_and_clip_on_each_backend(xp):
    # Same numbers on every device: the rules use fgrad ops only (cupy runs where a GPU is).
    device = "cpu" if xp is np else "cuda"
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adam(0.1))
    params = {"w": fnp.array(W0, dtype="float32", device=device)}
    state = opt.init(params)
    for _ in range(3):
        grads = fgrad.grad(_loss_on(device))(params)
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
    assert params["w"].device == fgrad.backend.get_device(device)
    assert params["w"].dtype == np.float32
    cpu = {"w": fnp.array(W0, dtype="float32")}
    state = opt.init(cpu)
    for _ in range(3):
        grads = fgrad.grad(_loss_on("cpu"))(cpu)
        updates, state = opt.update(grads, state, cpu)
        cpu = optim.apply_updates(cpu, updates)
    assert_allclose(np.asarray(params["w"]), np.asarray(cpu["w"]), rtol=1e-6)


def _loss_on(device):
    a = fnp.array(A, dtype="float32", device=device)
    c = fnp.array(C, dtype="float32", device=device)
    return lambda p: 0.5 * fnp.sum(a * p["w"] * p["w"]) - fnp.sum(c * p["w"])


def test_issue_12_another_optimisers_state_is_named():
    import pytest

    params = {"w": fnp.ones(2)}
    with pytest.raises(TypeError, match="adam.update: state is a SgdState"):
        optim.adam(0.1).update(params, optim.sgd(0.1).init(params), params)


def test_issue_12_apply_updates_names_the_mismatch():
    import pytest

    with pytest.raises(ValueError, match="apply_updates: updates have structure"):
        optim.apply_updates({"w": fnp.ones(2)}, {"v": fnp.ones(2)})
