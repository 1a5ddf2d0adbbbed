"""jit's donate_argnums: outputs written into donated arrays, donated Tensors consumed."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import optim
from fgrad.errors import DeletedError

RNG = np.random.default_rng(0)


def _t(*shape):
    return fnp.asarray(RNG.standard_normal(shape).astype(np.float32))


def _sgd_step(params, grads):
    return {k: params[k] - 0.1 * grads[k] for k in params}


def test_output_reuses_the_donated_array_and_the_values_are_unchanged():
    step = fgrad.jit(_sgd_step, donate_argnums=0)
    params, grads = {"w": _t(64, 64), "b": _t(64)}, {"w": _t(64, 64), "b": _t(64)}
    want = {k: np.asarray(v) for k, v in _sgd_step(params, grads).items()}
    w_id = id(params["w"]._data)  # an id only: holding the array would block donation
    new = step(params, grads)
    assert id(new["w"]._data) == w_id  # written in place
    for k in want:
        np.testing.assert_array_equal(np.asarray(new[k]), want[k])
    again = step(new, grads)  # the cached program (fast path) donates too
    np.testing.assert_allclose(np.asarray(again["w"]), want["w"] - 0.1 * np.asarray(grads["w"]), rtol=1e-6)


def test_donated_tensors_raise_when_used_again():
    step = fgrad.jit(_sgd_step, donate_argnums=0)
    params, grads = {"w": _t(64, 64)}, {"w": _t(64, 64)}
    step(params, grads)
    w = params["w"]
    assert repr(w) == "Tensor(<donated>)"
    assert w.is_deleted() and w.shape == (64, 64) and w.dtype == np.float32  # as JAX's
    for use in (lambda: w + 1, lambda: w.item(), lambda: np.asarray(w), lambda: fnp.exp(w)):
        with pytest.raises(DeletedError, match=r"donated to jit\(_sgd_step\)"):
            use()
    with pytest.raises(DeletedError):
        step(params, grads)  # passing it again
    assert np.isfinite(np.asarray(grads["w"])).all()  # the other argument is untouched


def test_a_view_of_the_donated_tensor_keeps_its_values():
    step = fgrad.jit(_sgd_step, donate_argnums=0)
    params, grads = {"w": _t(64, 64)}, {"w": _t(64, 64)}
    view = params["w"].T  # shares the buffer
    before = np.array(view)
    w_id = id(params["w"]._data)
    new = step(params, grads)
    assert id(new["w"]._data) != w_id  # copied, not written in place
    np.testing.assert_array_equal(np.asarray(view), before)
    np.testing.assert_allclose(np.asarray(new["w"]), before.T - 0.1 * np.asarray(grads["w"]))


def test_same_tensor_donated_and_read_elsewhere():
    f = fgrad.jit(lambda x, y: (x * 2.0, y + 1.0), donate_argnums=0)
    x = _t(32, 32)
    want = np.asarray(x)
    a, b = f(x, x)  # y is the same buffer: it must not be overwritten before it is read
    np.testing.assert_array_equal(np.asarray(a), want * 2.0)
    np.testing.assert_array_equal(np.asarray(b), want + 1.0)


def test_an_output_computed_before_the_last_read_does_not_clobber_the_input():
    def f(x):
        y = x * 2.0  # computed first ...
        z = fnp.exp(x) + y  # ... x read again afterwards
        return y, z

    x = _t(32, 32)
    want = [np.asarray(v) for v in f(x)]
    got = fgrad.jit(f, donate_argnums=0)(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


def test_an_output_that_views_the_input_blocks_reuse():
    f = fgrad.jit(lambda x: (x.T, x * 3.0), donate_argnums=0)
    x = _t(32, 32)
    want = np.asarray(x)
    t, y = f(x)
    np.testing.assert_array_equal(np.asarray(t), want.T)
    np.testing.assert_array_equal(np.asarray(y), want * 3.0)


def test_adam_training_step_with_donated_params_and_state():
    opt = optim.adam(1e-2)

    def loss(p, x):
        return fnp.mean((x @ p["w"] + p["b"]) ** 2)

    def step(p, state, x):
        g = fgrad.grad(loss)(p, x)
        updates, state = opt.update(g, state, p)
        return optim.apply_updates(p, updates), state

    x = _t(16, 48)
    plain, donating = fgrad.jit(step), fgrad.jit(step, donate_argnums=(0, 1))
    p_a = {"w": _t(48, 48), "b": _t(48)}
    p_b = {k: fnp.asarray(np.array(v)) for k, v in p_a.items()}
    s_a, s_b = opt.init(p_a), opt.init(p_b)
    reused = 0
    for _ in range(3):
        ids = {id(leaf._data) for leaf in fgrad.tree.leaves((p_b, s_b))}
        p_a, s_a = plain(p_a, s_a, x)
        p_b, s_b = donating(p_b, s_b, x)
        reused += sum(id(leaf._data) in ids for leaf in fgrad.tree.leaves((p_b, s_b)))
        for a, b in zip(fgrad.tree.leaves((p_a, s_a)), fgrad.tree.leaves((p_b, s_b))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert reused >= 3  # the weight matrix (and its moments) at least, every step


def test_inside_another_transform_nothing_is_donated():
    f = fgrad.jit(lambda x: fnp.sum(x * x), donate_argnums=0)
    x = _t(8)
    g = fgrad.grad(f)(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(x), rtol=1e-6)
    assert np.isfinite(np.asarray(x)).all()  # still usable


def test_donate_and_static_argnums_must_not_overlap():
    with pytest.raises(ValueError, match=r"\['n'\] are both donated .* and static"):
        fgrad.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=1)
    with pytest.raises(ValueError, match="both donated"):
        fgrad.jit(lambda x, n: x * n, static_argnames="n", donate_argnums=1)


def test_a_donated_argument_passed_by_keyword_is_donated():
    f = fgrad.jit(lambda a, b: a * 2.0 + b, donate_argnums=0)
    x, y = _t(32, 32), _t(32, 32)
    want = np.asarray(x) * 2.0 + np.asarray(y)
    x_id = id(x._data)
    out = f(a=x, b=y)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert id(out._data) == x_id
    with pytest.raises(DeletedError):
        x + 1


def test_donate_argnums_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="donate_argnums 3 is out of range"):
        fgrad.jit(lambda a: a * 2, donate_argnums=3)


@pytest.mark.parametrize("by", ["position", "keyword"])
def test_donate_argnames_as_in_jax(by):
    f = fgrad.jit(lambda a, b: a * 2.0 + b, donate_argnames="a")
    x, y = _t(32, 32), _t(32, 32)
    want = np.asarray(x) * 2.0 + np.asarray(y)
    x_id = id(x._data)
    out = f(x, y) if by == "position" else f(b=y, a=x)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert id(out._data) == x_id
    with pytest.raises(DeletedError):
        x + 1
    np.testing.assert_array_equal(np.asarray(y + 0), np.asarray(y))  # b is not donated


def test_donate_argnames_for_a_keyword_only_parameter():
    def f(a, *, state):
        return a + state * 2.0

    jf = fgrad.jit(f, donate_argnames="state")
    a, s = _t(32, 32), _t(32, 32)
    s_id = id(s._data)
    out = jf(a, state=s)
    assert id(out._data) == s_id
    with pytest.raises(DeletedError):
        s + 1


def test_donate_argnames_must_name_a_parameter():
    with pytest.raises(ValueError, match=r"donate_argnames \['c'\] name no parameter"):
        fgrad.jit(lambda a, b: a + b, donate_argnames="c")


def test_a_donated_cache_keeps_its_buffer_while_other_groups_fuse(monkeypatch):
    # A KV cache's new arrays come from dynamic_update_slice (in place, into the donated
    # buffer); an elementwise chain beside it may still run as a numba kernel.
    pytest.importorskip("numba")
    from fgrad.transforms import fusion_numba

    monkeypatch.setattr(fgrad.config, "cpu_compile", True)
    monkeypatch.setattr(fusion_numba, "MIN_WORK", 0)

    def step(cache, x):
        y = fnp.tanh(x) * 2.0 + 1.0
        return y, fnp.dynamic_update_slice(cache, y[:4], (3,))

    f = fgrad.jit(step, donate_argnums=0)
    cache, x = fnp.zeros(1 << 14, dtype="float32"), _t(4096)
    want_y = np.tanh(np.asarray(x)) * 2.0 + 1.0
    data = id(cache._data)
    y, new = f(cache, x)
    assert id(new._data) == data  # the cache was written in place
    np.testing.assert_allclose(np.asarray(y), want_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(new)[3:7], want_y[:4], rtol=1e-6, atol=1e-6)
    graph, program = next(iter(f._cache.values()))
    assert any(n.op.name.startswith("fused") for n in program.graph.nodes)
