"""Complex and float16 parameters in fgrad.optim.

Complex: second moments and norms use ``|g|**2 = g * conj(g)`` (real), as optax does; with
``g * g`` the moments were complex and Adam converged to the wrong point. ``fgrad.grad``
follows JAX's convention (the gradient of a real ``f`` of ``z = x + iy`` is
``df/dx - i df/dy``), so descent feeds the optimisers its conjugate, as with optax.

Float16: Adam's and RMSProp's moments live in float32 (``eps = 1e-8`` rounds to 0 in
float16, so a zero gradient gave 0 / 0), and norms are summed in float32 (a float16 square
overflows above 256).
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad import optim, tree

TARGET = 1 + 2j


def _complex_loss(z):
    d = z - TARGET
    return fnp.real(d * fnp.conj(d))  # |z - (1+2j)|^2


def _descend(opt, z, steps):
    state = opt.init(z)
    for _ in range(steps):
        grads = fnp.conj(fgrad.grad(_complex_loss)(z))  # 2 (z - target): the descent direction
        updates, state = opt.update(grads, state, z)
        z = optim.apply_updates(z, updates)
    return z, state


# --------------------------------------------------------------------------- complex


def test_issue_12_global_norm_of_complex_is_the_modulus():
    norm = optim.global_norm(fnp.array(3 + 4j))
    assert norm.dtype == np.float64 and float(norm) == 5.0
    norm = optim.global_norm({"a": fnp.array([3 + 4j], dtype="complex64"), "b": fnp.array([12.0])})
    assert float(norm) == 13.0  # sqrt(25 + 144)
    single = optim.global_norm([fnp.array([3 + 4j, 0j], dtype="complex64")])
    assert single.dtype == np.float32 and float(single) == 5.0


def test_issue_12_clip_by_global_norm_of_complex_keeps_the_phase():
    clip = optim.clip_by_global_norm(1.0)
    grads = {"z": fnp.array([3 + 4j], dtype="complex64")}
    out, _ = clip.update(grads, clip.init(grads))
    assert out["z"].dtype == np.complex64
    assert_allclose(np.asarray(out["z"]), [0.6 + 0.8j], rtol=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: optim.adam(0.05), id="adam"),
        pytest.param(lambda: optim.adamw(0.05, weight_decay=0.0), id="adamw"),
        pytest.param(lambda: optim.rmsprop(0.01), id="rmsprop"),
        pytest.param(lambda: optim.chain(optim.clip_by_global_norm(1.0), optim.adam(0.05)),
                     id="clip_adam"),
    ],
)
@pytest.mark.parametrize("dtype, tol", [("complex128", 1e-9), ("complex64", 1e-5)])
def test_issue_12_complex_least_squares_reaches_the_minimum(make, dtype, tol):
    # On main, Adam stopped near 1.17-3.56j (complex g*g moments); now every one of them
    # reaches 1+2j, in the parameters' dtype, with a real second moment.
    z, state = _descend(make(), fnp.array(0j, dtype=dtype), steps=600)
    assert z.dtype == dtype
    assert abs(complex(z) - TARGET) < tol
    real = "float64" if dtype == "complex128" else "float32"
    nu = state.nu if hasattr(state, "nu") else state[1].nu
    assert nu.dtype == real


def test_issue_12_complex_adam_two_steps_by_hand():
    # g1 = 3+4j: m1 = 0.1 g1, v1 = 0.001 * 25; m_hat = g1, v_hat = 25, so the first update
    # is -lr * g1 / 5. g2 = 1-1j: m2 = 0.9 m1 + 0.1 g2 = 0.37+0.26j,
    # v2 = 0.999 * 0.025 + 0.001 * 2 = 0.026975; corrections 1 - 0.9^2 = 0.19 and
    # 1 - 0.999^2 = 0.001999.
    opt = optim.adam(0.1, eps=0.0)
    z = fnp.array([0j])
    state = opt.init(z)
    u1, state = opt.update(fnp.array([3 + 4j]), state, z)
    assert_allclose(np.asarray(u1), [-0.1 * (0.6 + 0.8j)], rtol=1e-13)
    u2, state = opt.update(fnp.array([1 - 1j]), state, z)
    m2, v2 = 0.37 + 0.26j, 0.026975
    expected = -0.1 * (m2 / 0.19) / math.sqrt(v2 / 0.001999)
    assert_allclose(np.asarray(u2), [expected], rtol=1e-12)
    assert_allclose(np.asarray(state.mu), [m2], rtol=1e-13)
    assert state.nu.dtype == np.float64 and float(state.nu[0]) == pytest.approx(v2, rel=1e-13)


def test_issue_12_complex_adamw_and_rmsprop_one_step_by_hand():
    z = fnp.array([1 + 1j])
    g = fnp.array([3 + 4j])
    opt = optim.adamw(0.1, eps=0.0, weight_decay=0.5)
    u, _ = opt.update(g, opt.init(z), z)  # -lr * (g / |g| + wd * z)
    assert_allclose(np.asarray(u), [-0.1 * ((0.6 + 0.8j) + 0.5 * (1 + 1j))], rtol=1e-13)
    opt = optim.rmsprop(0.01, decay=0.9, eps=0.0)
    u, state = opt.update(g, opt.init(z), z)  # -lr * g / sqrt(0.1 * 25)
    assert_allclose(np.asarray(u), [-0.01 * (3 + 4j) / math.sqrt(2.5)], rtol=1e-13)
    assert state.nu.dtype == np.float64


# --------------------------------------------------------------------------- float16


HALF_OPTIMISERS = {
    "adam": lambda: optim.adam(0.05),
    "adamw": lambda: optim.adamw(0.05, weight_decay=0.01),
    "rmsprop": lambda: optim.rmsprop(0.01),
    "rmsprop_momentum": lambda: optim.rmsprop(0.01, momentum=0.5),
    "clip_adam": lambda: optim.chain(optim.clip_by_global_norm(1.0), optim.adam(0.05)),
}


@pytest.mark.parametrize("name", sorted(HALF_OPTIMISERS))
def test_issue_12_float16_step_with_zero_gradients_is_finite(name):
    # On main: 0 / (sqrt(0) + 1e-8) with 1e-8 rounded to 0 in float16, so NaN.
    opt = HALF_OPTIMISERS[name]()
    params = {"w": fnp.array([1.0, -2.0, 3.0], dtype="float16")}
    updates, state = opt.update(tree.map(fnp.zeros_like, params), opt.init(params), params)
    u = np.asarray(updates["w"])
    assert updates["w"].dtype == np.float16 and np.all(np.isfinite(u))
    if name == "adamw":  # only the decay: -lr * wd * w
        assert_allclose(u, -0.05 * 0.01 * np.array([1.0, -2.0, 3.0]), rtol=1e-3)
    else:
        assert_array_equal(u, 0.0)
    inner = state[1] if name == "clip_adam" else state
    moments = [inner.nu] + ([inner.mu] if hasattr(inner, "mu") else [])
    assert all(m["w"].dtype == np.float32 for m in moments)


def test_issue_12_float16_small_gradients_keep_their_size():
    # |g| = 1e-4: g**2 = 1e-8 underflows to 0 in float16 (smallest subnormal 6e-8), which
    # made the first Adam update g / (0 + eps) enormous; in float32 it is -lr * sign(g).
    opt = optim.adam(0.01)
    params = fnp.array([1.0, 1.0], dtype="float16")
    updates, _ = opt.update(fnp.array([1e-4, -1e-4], dtype="float16"), opt.init(params), params)
    assert_allclose(np.asarray(updates, dtype=np.float64), [-0.01, 0.01], rtol=1e-3)


# The last coordinate starts at its minimum (gradient exactly 0), the case that gave NaN.
A = np.array([1.0, 4.0, 0.5, 2.0])
C = np.array([1.0, -2.0, 0.3, 1.0])
W0 = np.array([0.5, -1.0, 2.0, 0.5])


def _quadratic_run(opt, dtype, steps):
    a, c = fnp.array(A, dtype=dtype), fnp.array(C, dtype=dtype)
    loss = lambda w: 0.5 * fnp.sum(a * w * w) - fnp.sum(c * w)  # noqa: E731
    w = fnp.array(W0, dtype=dtype)
    state = opt.init(w)
    for _ in range(steps):
        updates, state = opt.update(fgrad.grad(loss)(w), state, w)
        w = optim.apply_updates(w, updates)
    assert w.dtype == dtype
    return np.asarray(w, dtype=np.float64)


@pytest.mark.parametrize("name", sorted(HALF_OPTIMISERS))
def test_issue_12_float16_quadratic_converges_like_float32(name):
    # The minimum is c / a = [1, -0.5, 0.6, 0.5]; float16 lands within a few float16 ulps of
    # the float32 run (on main its last coordinate was NaN from the first step).
    half = _quadratic_run(HALF_OPTIMISERS[name](), "float16", 200)
    single = _quadratic_run(HALF_OPTIMISERS[name](), "float32", 200)
    assert np.all(np.isfinite(half))
    assert_allclose(half, single, atol=3e-3)
    assert_allclose(half, C / A, atol=5e-3)


def test_issue_12_float16_training_step_under_jit():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(0.05, weight_decay=0.01))
    a, c = fnp.array(A, dtype="float16"), fnp.array(C, dtype="float16")

    @fgrad.jit
    def step(w, state):
        grads = fgrad.grad(lambda w: 0.5 * fnp.sum(a * w * w) - fnp.sum(c * w))(w)
        updates, state = opt.update(grads, state, w)
        return optim.apply_updates(w, updates), state

    w = fnp.array(W0, dtype="float16")
    state = opt.init(w)
    for _ in range(200):
        w, state = step(w, state)
    assert step.cache_info().misses == 1 and w.dtype == np.float16
    assert_allclose(np.asarray(w, dtype=np.float64), C / A, atol=5e-3)


def test_issue_12_float16_norm_is_summed_in_float32():
    # 300**2 + 400**2 overflows float16 (max 65504): the norm was inf and clipping gave 0.
    grads = {"a": fnp.array([300.0, 400.0], dtype="float16")}
    norm = optim.global_norm(grads)
    assert norm.dtype == np.float32 and float(norm) == 500.0
    tiny = optim.global_norm(fnp.array([3e-4, 4e-4], dtype="float16"))  # squares underflow
    assert float(tiny) == pytest.approx(5e-4, rel=1e-3)
    clip = optim.clip_by_global_norm(1.0)
    out, _ = clip.update(grads, clip.init(grads))
    assert out["a"].dtype == np.float16
    assert_allclose(np.asarray(out["a"], dtype=np.float64), [0.6, 0.8], rtol=1e-3)


def test_issue_12_float16_state_from_an_older_checkpoint_is_widened():
    # A state saved before this change holds float16 moments: they promote to float32.
    opt = optim.adam(0.05)
    params = fnp.array([1.0, 2.0], dtype="float16")
    old = optim.AdamState(fnp.asarray(0, dtype="int32"), fnp.zeros(2, "float16"),
                          fnp.zeros(2, "float16"))
    updates, state = opt.update(fnp.zeros(2, dtype="float16"), old, params)
    assert updates.dtype == np.float16 and np.all(np.asarray(updates) == 0)
    assert state.mu.dtype == np.float32 and state.nu.dtype == np.float32
