"""lion, lamb, adagrad, adafactor, nadam and radam against numpy transcriptions of their papers.

Each reference below is written from the paper's update equations (the algorithm named in
its comment), in float64 numpy, over a pytree of a vector, a matrix and a 3-d leaf. The
loss is the separable quadratic ``f(p) = sum over leaves of 0.5 * sum(a * p**2) - sum(c *
p)``, whose gradient ``a * p - c`` the references compute by hand and fgrad takes with
``fgrad.grad``; iterates must agree to 1e-12. Then: float32 params keep float32 state and
updates, a jitted step equals the eager one, a pytree of mixed shapes and dtypes equals
per-leaf runs (every optimiser here acts leaf by leaf), and each converges on a quadratic.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad import optim, tree
from fgrad.test_util import check_grads

RNG = np.random.default_rng(17)
SHAPES = {"m": (2, 3), "t": (2, 3, 4), "w": (3,)}
A = {k: RNG.uniform(0.5, 3.0, s) for k, s in SHAPES.items()}
C = {k: RNG.standard_normal(s) for k, s in SHAPES.items()}
P0 = {k: RNG.standard_normal(s) for k, s in SHAPES.items()}
STEPS = 6


def _loss(params):
    total = 0.0
    for k in sorted(params):
        p = params[k]
        total = total + 0.5 * fnp.sum(fnp.asarray(A[k]) * p * p) - fnp.sum(fnp.asarray(C[k]) * p)
    return total


def _np_grad(params):
    return {k: A[k] * p - C[k] for k, p in params.items()}


def _run(opt, steps=STEPS, dtype="float64", params=None):
    """Iterates of ``opt`` on the quadratic (a list of dicts of numpy arrays) and the state."""
    params = {k: fnp.array(v, dtype=dtype) for k, v in (params or P0).items()}
    state = opt.init(params)
    out = []
    for _ in range(steps):
        grads = fgrad.grad(_loss)(params)
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
        out.append({k: np.asarray(v) for k, v in params.items()})
    return out, state


def _reference(step_fn, steps=STEPS):
    """Iterates of a numpy update rule ``step_fn(t, params, grads) -> params`` (t from 1)."""
    params, out = {k: v.copy() for k, v in P0.items()}, []
    for t in range(1, steps + 1):
        params = step_fn(t, params, _np_grad(params))
        out.append(params)
    return out


def _assert_iterates(got, expected, rtol=1e-12, atol=1e-12):
    for g, e in zip(got, expected, strict=True):
        for k in SHAPES:
            assert_allclose(g[k], e[k], rtol=rtol, atol=atol, err_msg=k)


def _rms(x):
    return np.sqrt(np.mean(x * x))


# --------------------------------------------------------------------------- references


def _np_lion(lr, b1, b2, wd):
    # Chen et al. 2023, Algorithm 2: c = b1 m + (1 - b1) g; p -= lr (sign(c) + wd p);
    # m = b2 m + (1 - b2) g.
    m = {k: np.zeros(s) for k, s in SHAPES.items()}

    def step(t, p, g):
        new = {}
        for k in p:
            c = b1 * m[k] + (1 - b1) * g[k]
            new[k] = p[k] - lr * (np.sign(c) + wd * p[k])
            m[k] = b2 * m[k] + (1 - b2) * g[k]
        return new

    return step


def _np_adam_moments(b1, b2):
    m = {k: np.zeros(s) for k, s in SHAPES.items()}
    v = {k: np.zeros(s) for k, s in SHAPES.items()}

    def moments(k, g):
        m[k] = b1 * m[k] + (1 - b1) * g
        v[k] = b2 * v[k] + (1 - b2) * g * g
        return m[k], v[k]

    return moments


def _np_lamb(lr, b1, b2, eps, wd):
    # You et al. 2019, Algorithm 2 (phi = identity): r = m_hat / (sqrt(v_hat) + eps) + wd p;
    # p -= lr * ||p|| / ||r|| * r per leaf (ratio 1 where a norm is 0).
    moments = _np_adam_moments(b1, b2)

    def step(t, p, g):
        new = {}
        for k in p:
            m, v = moments(k, g[k])
            r = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps) + wd * p[k]
            pn, rn = np.linalg.norm(p[k]), np.linalg.norm(r)
            ratio = pn / rn if pn > 0 and rn > 0 else 1.0
            new[k] = p[k] - lr * ratio * r
        return new

    return step


def _np_adagrad(lr, initial, eps):
    # Duchi et al. 2011, diagonal: s += g^2; p -= lr g / sqrt(s + eps).
    s = {k: np.full(sh, initial) for k, sh in SHAPES.items()}

    def step(t, p, g):
        new = {}
        for k in p:
            s[k] = s[k] + g[k] ** 2
            new[k] = p[k] - lr * g[k] / np.sqrt(s[k] + eps)
        return new

    return step


def _np_nadam(lr, b1, b2, eps):
    # Dozat 2016, Algorithm 2 with constant mu_t = b1:
    # m_hat = b1 m_t / (1 - b1^(t+1)) + (1 - b1) g_t / (1 - b1^t).
    moments = _np_adam_moments(b1, b2)

    def step(t, p, g):
        new = {}
        for k in p:
            m, v = moments(k, g[k])
            m_hat = b1 * m / (1 - b1 ** (t + 1)) + (1 - b1) * g[k] / (1 - b1**t)
            new[k] = p[k] - lr * m_hat / (np.sqrt(v / (1 - b2**t)) + eps)
        return new

    return step


def _np_radam(lr, b1, b2, eps, threshold):
    # Liu et al. 2019, Algorithm 2 (switching at rho_t >= threshold).
    moments = _np_adam_moments(b1, b2)
    rho_inf = 2 / (1 - b2) - 1

    def step(t, p, g):
        rho = rho_inf - 2 * t * b2**t / (1 - b2**t)
        new = {}
        for k in p:
            m, v = moments(k, g[k])
            m_hat = m / (1 - b1**t)
            if rho >= threshold:
                r = np.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
                new[k] = p[k] - lr * r * m_hat / (np.sqrt(v / (1 - b2**t)) + eps)
            else:
                new[k] = p[k] - lr * m_hat
        return new

    return step


def _np_adafactor(lr, eps1, d, min_scale, momentum, wd, min_dim):
    # Shazeer & Stern 2018, Algorithms 4-5: beta2_t = 1 - t^-0.8; for a factored leaf the
    # row and column means R, C of G^2 + eps1 over its two largest axes, and
    # V_hat = R C / mean(R) (formed here as the outer product); otherwise V = full average.
    # Then clip by rms / d, times lr, times max(eps2, rms(p)), momentum, decay, descend.
    state = {}
    ema = {k: np.zeros(s) for k, s in SHAPES.items()}

    def step(t, p, g):
        beta = 1 - t**-0.8
        new = {}
        for k in p:
            g2 = g[k] ** 2 + eps1
            shape = g[k].shape
            order = np.argsort(shape, kind="stable")
            if len(shape) >= 2 and shape[order[-2]] >= min_dim:
                d1, d0 = int(order[-2]), int(order[-1])
                r_old, c_old = state.get(k, (0.0, 0.0))
                r = beta * r_old + (1 - beta) * g2.mean(axis=d0, keepdims=True)
                c = beta * c_old + (1 - beta) * g2.mean(axis=d1, keepdims=True)
                state[k] = (r, c)
                v_hat = r * c / r.mean(axis=d1, keepdims=True)
            else:
                v_hat = state[k] = beta * state.get(k, 0.0) + (1 - beta) * g2
            u = g[k] / np.sqrt(v_hat)
            u = u / max(1.0, _rms(u) / d)
            u = lr * u * max(min_scale, _rms(p[k]))
            if momentum is not None:
                u = ema[k] = momentum * ema[k] + (1 - momentum) * u
            new[k] = p[k] - (u + wd * p[k])
        return new

    return step


# name -> (fgrad optimiser, numpy reference); hyper-parameters large enough to matter in
# 6 steps (radam's b2 = 0.9 gives rho_t >= 5 from t = 6 on, so both branches run).
CASES = {
    "lion": (
        lambda: optim.lion(0.05, b1=0.8, b2=0.95, weight_decay=0.1),
        lambda: _np_lion(0.05, 0.8, 0.95, 0.1),
    ),
    "lamb": (
        lambda: optim.lamb(0.1, b1=0.8, b2=0.9, eps=1e-3, weight_decay=0.05),
        lambda: _np_lamb(0.1, 0.8, 0.9, 1e-3, 0.05),
    ),
    "adagrad": (
        lambda: optim.adagrad(0.3, initial_accumulator_value=0.2, eps=1e-4),
        lambda: _np_adagrad(0.3, 0.2, 1e-4),
    ),
    "nadam": (
        lambda: optim.nadam(0.1, b1=0.8, b2=0.9, eps=1e-3),
        lambda: _np_nadam(0.1, 0.8, 0.9, 1e-3),
    ),
    "radam": (
        lambda: optim.radam(0.1, b1=0.8, b2=0.9, eps=1e-3),
        lambda: _np_radam(0.1, 0.8, 0.9, 1e-3, 5.0),
    ),
    "adafactor_defaults": (
        lambda: optim.adafactor(min_dim_size_to_factor=3),
        lambda: _np_adafactor(1.0, 1e-30, 1.0, 1e-3, None, 0.0, 3),
    ),
    "adafactor_all_blocks": (
        lambda: optim.adafactor(
            0.5, min_dim_size_to_factor=2, clipping_threshold=0.7, momentum=0.6,
            weight_decay_rate=0.01, eps=1e-6,
        ),
        lambda: _np_adafactor(0.5, 1e-6, 0.7, 1e-3, 0.6, 0.01, 2),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_papers_equations(name):
    make, reference = CASES[name]
    got, state = _run(make())
    _assert_iterates(got, _reference(reference()))
    assert int(state.count) == STEPS


def test_radam_takes_both_branches_in_the_reference_run():
    # The reference case above covers momentum SGD (t < 6) and the rectified step (t = 6).
    b2 = 0.9
    rho_inf = 2 / (1 - b2) - 1
    rho = [rho_inf - 2 * t * b2**t / (1 - b2**t) for t in range(1, STEPS + 1)]
    assert rho[-2] < 5.0 <= rho[-1]


def test_adafactor_factors_the_two_largest_axes():
    opt = optim.adafactor(min_dim_size_to_factor=3)
    params = {k: fnp.array(v) for k, v in P0.items()}
    state = opt.init(params)
    # m (2, 3): second largest axis 2 < 3, kept whole; t (2, 3, 4): means over axes 2 and 1.
    assert state.v["m"].shape == (2, 3) and state.v_row["m"].shape == (1,)
    assert state.v_row["t"].shape == (2, 3) and state.v_col["t"].shape == (2, 4)
    assert state.v["t"].shape == (1,) and state.v["w"].shape == (3,)
    assert state.momentum is None
    assert type(state).__name__ == "AdafactorState"


def test_adafactor_with_the_papers_relative_step_schedule():
    # rho_t = min(1e-2, 1 / sqrt(t)) as a schedule of the step (t - 1).
    schedule = lambda step: fnp.minimum(1e-2, 1.0 / fnp.sqrt(step + 1.0))  # noqa: E731
    got, _ = _run(optim.adafactor(schedule, min_dim_size_to_factor=3), steps=3)
    expected = _reference(_np_adafactor(1e-2, 1e-30, 1.0, 1e-3, None, 0.0, 3), steps=3)
    _assert_iterates(got, expected)


def test_nadam_is_scale_by_adam_nesterov_and_adam_is_unchanged():
    params = {k: fnp.array(v) for k, v in P0.items()}
    grads = fgrad.grad(_loss)(params)
    mine = optim.chain(optim.scale_by_adam(0.8, 0.9, 1e-3, nesterov=True), optim.scale(-0.1))
    got, _ = mine.update(grads, mine.init(params))
    named, _ = optim.nadam(0.1, 0.8, 0.9, 1e-3).update(grads, optim.nadam(0.1).init(params))
    for k in SHAPES:
        assert_allclose(np.asarray(got[k]), np.asarray(named[k]), rtol=1e-15)
    adam_got, _ = _run(optim.adam(0.1, b1=0.8, b2=0.9, eps=1e-3), steps=2)
    nadam_got, _ = _run(optim.nadam(0.1, b1=0.8, b2=0.9, eps=1e-3), steps=2)
    assert not np.allclose(adam_got[1]["w"], nadam_got[1]["w"])


# --------------------------------------------------------------------------- dtypes, jit


def _floating_leaves(state):
    return [x for x in tree.leaves(state) if x.dtype.kind in "fc"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_params_keep_float32_state_and_updates(name):
    opt = CASES[name][0]()
    params = {k: fnp.array(v, dtype="float32") for k, v in P0.items()}
    state = opt.init(params)
    for _ in range(2):
        grads = fgrad.grad(_loss)(params)
        updates, state = opt.update(grads, state, params)
        assert {u.dtype for u in tree.leaves(updates)} == {np.dtype("float32")}
        params = optim.apply_updates(params, updates)
    assert {x.dtype for x in _floating_leaves(state)} == {np.dtype("float32")}
    assert state.count.dtype == np.int32
    got64, _ = _run(opt, steps=2)
    for k in SHAPES:  # the same maths, rounded to float32
        assert_allclose(np.asarray(params[k]), got64[1][k], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float16_params_keep_float32_state_and_a_zero_gradient_is_finite(name):
    # As adam's: eps (1e-3 .. 1e-30) and small squares vanish in float16, so the moments
    # live in float32 and a zero gradient gives a finite update (not 0 / 0), cast to float16.
    opt = CASES[name][0]()
    params = {k: fnp.array(v, dtype="float16") for k, v in P0.items()}
    state = opt.init(params)
    for grads in (tree.map(fnp.zeros_like, params), fgrad.grad(_loss)(params)):
        updates, state = opt.update(grads, state, params)
        assert {u.dtype for u in tree.leaves(updates)} == {np.dtype("float16")}
        assert all(bool(fnp.all(fnp.isfinite(u))) for u in tree.leaves(updates))
    assert {x.dtype for x in _floating_leaves(state)} == {np.dtype("float32")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jitted_step_equals_eager(name):
    opt = CASES[name][0]()

    def step(params, state):
        grads = fgrad.grad(_loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    jitted = fgrad.jit(step)
    eager_params = jit_params = {k: fnp.array(v) for k, v in P0.items()}
    eager_state = jit_state = opt.init(eager_params)
    for _ in range(3):
        eager_params, eager_state = step(eager_params, eager_state)
        jit_params, jit_state = jitted(jit_params, jit_state)
    for k in SHAPES:
        assert_allclose(
            np.asarray(jit_params[k]), np.asarray(eager_params[k]), rtol=1e-13, atol=1e-14
        )
    for a, b in zip(tree.leaves(jit_state), tree.leaves(eager_state), strict=True):
        assert a.dtype == b.dtype
        assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=1e-14)
    assert jitted.cache_info().misses == 1


# --------------------------------------------------------------------------- mixed pytrees


MIXED = {
    "emb": np.linspace(-1.0, 2.0, 12).reshape(4, 3).astype("float32"),
    "layers": [(np.array(0.7), np.array([1.5, -0.5, 0.25]))],
    "scale": np.array([[2.0, -1.0], [0.5, 1.0], [1.0, 3.0]]),
}


def _mixed_loss_leaf(p):
    return 0.5 * fnp.sum(p * p) - fnp.sum(fnp.sin(p))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_mixed_pytree_equals_each_leaf_alone(name):
    # Every optimiser here is separable over leaves, so one run on the mixed pytree must
    # equal independent runs on each leaf (its own shape, dtype and factoring).
    make = CASES[name][0]
    params = tree.map(fnp.asarray, MIXED)
    loss = lambda p: sum(_mixed_loss_leaf(x) for x in tree.leaves(p))  # noqa: E731
    opt = make()
    state = opt.init(params)
    for _ in range(3):
        updates, state = opt.update(fgrad.grad(loss)(params), state, params)
        params = optim.apply_updates(params, updates)
    assert tree.structure(params) == tree.structure(tree.map(fnp.asarray, MIXED))
    for leaf, start in zip(tree.leaves(params), tree.leaves(MIXED), strict=True):
        single = fnp.asarray(start)
        opt = make()
        s = opt.init(single)
        for _ in range(3):
            u, s = opt.update(fgrad.grad(_mixed_loss_leaf)(single), s, single)
            single = optim.apply_updates(single, u)
        assert leaf.dtype == start.dtype and leaf.shape == start.shape
        assert_allclose(np.asarray(leaf), np.asarray(single), rtol=1e-12, atol=1e-12)


# Lion, LAMB and Adafactor take steps of a size set by the learning rate (and the
# parameter norm), not by the gradient, so they converge with a decaying rate. Measured
# final / initial squared distances: 7e-5, 4e-6, 2e-8, 4e-9, 4e-6, 2e-17.
CONVERGE = {
    "lion": lambda: optim.lion(optim.exponential_decay(0.2, 40, 0.5), weight_decay=0.0),
    "lamb": lambda: optim.lamb(optim.exponential_decay(0.1, 30, 0.5), b1=0.8, b2=0.9),
    "adagrad": lambda: optim.adagrad(0.5),
    "nadam": lambda: optim.nadam(optim.exponential_decay(0.3, 40, 0.5)),
    "radam": lambda: optim.radam(0.3, b1=0.8, b2=0.99),
    "adafactor": lambda: optim.adafactor(
        optim.exponential_decay(0.3, 30, 0.5), min_dim_size_to_factor=2
    ),
}


@pytest.mark.parametrize("name", sorted(CONVERGE))
def test_converges_on_a_quadratic(name):
    # The minimiser of the quadratic is p* = c / a; 150 steps bring every optimiser close.
    got, _ = _run(CONVERGE[name](), steps=150)
    start = sum(np.sum((P0[k] - C[k] / A[k]) ** 2) for k in SHAPES)
    final = sum(np.sum((got[-1][k] - C[k] / A[k]) ** 2) for k in SHAPES)
    assert final < 1e-3 * start, (name, final, start)


# --------------------------------------------------------------------------- compositions


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_and_jit_of_vmap_over_an_ensemble_equal_the_loop(name):
    # Two updates of each member of a (3, 4, 5) ensemble of params (a (4, 5) matrix each,
    # factored by adafactor_all_blocks) batched by vmap, and by jit(vmap), as a loop would.
    opt = CASES[name][0]()
    p, g = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((3, 4, 5))

    def two_updates(p, g):
        state = opt.init(p)
        u, state = opt.update(g, state, p)
        u, state = opt.update(g, state, p)
        return u

    loop = np.stack([np.asarray(two_updates(fnp.array(p[i]), fnp.array(g[i]))) for i in range(3)])
    batched = fgrad.vmap(two_updates)(fnp.array(p), fnp.array(g))
    assert_allclose(np.asarray(batched), loop, rtol=1e-13, atol=1e-15)
    compiled = fgrad.jit(fgrad.vmap(two_updates))(fnp.array(p), fnp.array(g))
    assert_allclose(np.asarray(compiled), loop, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["adagrad", "lamb", "nadam", "radam", "adafactor_all_blocks"])
def test_grad_through_a_jitted_step_matches_finite_differences(name):
    # d/dp of the loss after two optimiser steps from p (as meta-learning differentiates an
    # unrolled inner loop), through jit: float64 central differences in a random direction.
    # (Lion's sign has a zero derivative almost everywhere, so it is left out.)
    opt = CASES[name][0]()

    @fgrad.jit
    def after_two_steps(params):
        state = opt.init(params)
        for _ in range(2):
            updates, state = opt.update(fgrad.grad(_loss)(params), state, params)
            params = optim.apply_updates(params, updates)
        return _loss(params)

    params = {k: fnp.array(v) for k, v in P0.items()}
    check_grads(after_two_steps, (params,), order=1)


# --------------------------------------------------------------------------- errors


def test_errors_name_the_optimiser():
    with pytest.raises(ValueError, match="^lion: b1 must be in"):
        optim.lion(0.1, b1=1.5)
    with pytest.raises(ValueError, match="^adagrad: initial_accumulator_value must be"):
        optim.adagrad(0.1, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="^adafactor: momentum must be in"):
        optim.adafactor(momentum=1.0)
    with pytest.raises(ValueError, match="lamb.update needs params"):
        opt = optim.lamb(0.1)
        opt.update(fnp.ones(2), opt.init(fnp.ones(2)))
    with pytest.raises(ValueError, match="^radam: threshold must be in"):
        optim.radam(0.1, threshold=3.0)
    with pytest.raises(TypeError, match="adagrad.update: state is a AdamState"):
        opt = optim.adagrad(0.1)
        opt.update(fnp.ones(2), optim.adam(0.1).init(fnp.ones(2)))
    with pytest.raises(ValueError, match="^adafactor: min_dim_size_to_factor must be an int >= 1"):
        optim.adafactor(min_dim_size_to_factor=0)
    with pytest.raises(ValueError, match="adafactor: weight_decay must be"):
        optim.adafactor(weight_decay_rate=-1.0)
