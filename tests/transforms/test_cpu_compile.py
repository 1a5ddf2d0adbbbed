"""jit's compiled CPU loops (issue 16): a scan whose body lowers to numba runs as one native
loop, forward and in its gradient's loops, with the numpy loop's results; what does not
lower falls back to numpy and says why."""

import logging

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.transforms import cpu_compile

pytest.importorskip("numba")


@pytest.fixture
def compiled(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("FGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fgrad.config, "cpu_compile", True)
    monkeypatch.setattr(fgrad.config, "log_compiles", True)
    caplog.set_level(logging.WARNING, logger="fgrad")
    return caplog


def _pendulum(y0, p, dt=0.01, n=50):
    def f(y):
        return fnp.stack([y[1], -p[0] * fnp.sin(y[0]) - p[1] * y[1]])

    def step(y, _):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        y = y + dt * (k1 + k2) / 2.0
        return y, y[0]

    y, ys = lax.scan(step, y0, None, length=n)
    return fnp.sum(ys**2) + fnp.sum(y)


def _both(f, *args):
    with_numba = f(*args)
    fgrad.config.cpu_compile = False
    try:
        plain = fgrad.jit(f.__wrapped__ if hasattr(f, "__wrapped__") else f)(*args)
    finally:
        fgrad.config.cpu_compile = True
    return with_numba, plain


def test_forward_and_gradient_loops_compile_with_the_numpy_results(compiled):
    y0, p = fnp.asarray([1.0, 0.0]), fnp.asarray([9.8, 0.1])
    grad = fgrad.grad(_pendulum, argnums=(0, 1))
    for f in (_pendulum, grad):
        got, want = _both(fgrad.jit(f), y0, p)
        for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=0)
    names = [r.getMessage() for r in compiled.records if "compiled loop body" in r.getMessage()]
    assert len(names) >= 3, names  # the forward loop, and the gradient's two loops


def test_float32_carry_reverse_scan_and_stacked_outputs(compiled):
    xs = fnp.asarray(np.linspace(-1.0, 1.0, 12).reshape(6, 2), dtype="float32")

    def f(c0, xs):
        return lax.scan(lambda c, x: (c * 0.9 + fnp.tanh(x), (c, fnp.sum(x))), c0, xs, reverse=True)

    c0 = fnp.zeros(2, dtype="float32")
    got, want = _both(fgrad.jit(f), c0, xs)
    for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        # the loop's tanh is the fused kernels' (a few ulp from numpy's), and the carry
        # sums terms of both signs near 1: its error is absolute, an ulp of 1
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-7, atol=3e-7)
    assert any("compiled loop body" in r.getMessage() for r in compiled.records)


def test_a_body_with_an_op_without_lowering_runs_numpy_and_says_why(compiled):
    def f(x):
        return lax.scan(lambda c, _: (fnp.sort(c * -1.0), None), x, None, length=3)[0]

    x = fnp.asarray([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(fgrad.jit(f)(x)), [-3.0, -2.0, -1.0])
    assert any("no CPU lowering for op 'sort'" in r.getMessage() for r in compiled.records)


def test_the_generated_module_is_kept_on_disk(compiled, tmp_path):
    f = fgrad.jit(lambda x: lax.fori_loop(0, 4, lambda i, c: c * 2.0 + 1.0, x))
    np.testing.assert_array_equal(np.asarray(f(fnp.asarray([0.0, 1.0]))), [15.0, 31.0])
    modules = list((tmp_path / "numba").glob("fgrad_loop_*.py"))
    assert modules and "numba.njit(cache=True" in modules[0].read_text()
    assert cpu_compile.available()


def _lstm(w, xs):
    def cell(carry, x):
        h, c = carry
        z = fnp.concatenate([x, h], axis=1) @ w
        i, f, g, o = fnp.split(z, 4, axis=1)
        c = fgrad.nn.sigmoid(f) * c + fgrad.nn.sigmoid(i) * fnp.tanh(g)
        h = fgrad.nn.sigmoid(o) * fnp.tanh(c)
        return (h, c), fgrad.nn.relu(h)

    h0 = fnp.zeros((3, 4))
    (h, c), hs = lax.scan(cell, (h0, h0), xs)
    return fnp.sum(hs) + fnp.sum(h * c)


def _windows(x):  # fori_loop over dynamic slices and updates
    def body(i, acc):
        return fnp.dynamic_update_slice(acc, fnp.dynamic_slice(x, (i,), (2,)) * 2.0, (i,))

    return lax.fori_loop(0, 5, body, fnp.zeros(6))


def _lstm_args():
    rng = np.random.default_rng(0)
    return fnp.asarray(rng.standard_normal((6, 16)) * 0.3), fnp.asarray(rng.standard_normal((5, 3, 2)))


def _compiled_as_numpy(compiled, cases):
    for f, args in cases:
        got, want = _both(fgrad.jit(f), *args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    falls = [r.getMessage() for r in compiled.records if "runs as numpy calls" in r.getMessage()]
    assert not falls, falls


def test_an_lstm_scan_with_matmuls_and_a_loop_over_slices(compiled):
    _compiled_as_numpy(compiled, [(_lstm, _lstm_args()), (_windows, (fnp.arange(6.0),))])


@pytest.mark.slow  # its two gradient loops take about a minute to compile
def test_the_lstm_gradient_loops(compiled):
    _compiled_as_numpy(compiled, [(fgrad.grad(_lstm), _lstm_args())])


def test_a_while_loop_compiles_with_the_numpy_results(compiled):
    def collatz_steps(n):  # a data-dependent trip count: a while_loop, not a scan
        def body(c):
            n, k = c
            return fnp.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1

        return lax.while_loop(lambda c: c[0] != 1, body, (n, fnp.asarray(0)))

    def newton_sqrt(a):
        return lax.while_loop(lambda x: fnp.abs(x * x - a) > 1e-12, lambda x: 0.5 * (x + a / x), a)

    for f, arg in ((collatz_steps, fnp.asarray(27)), (newton_sqrt, fnp.asarray(2.0))):
        got, want = _both(fgrad.jit(f), arg)
        for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert sum("compiled loop body" in r.getMessage() for r in compiled.records) == 2


def test_a_loop_numba_cannot_type_runs_numpy_from_then_on(compiled, monkeypatch):
    def untypable(source):
        def fn(*args):
            raise TypeError("Failed in nopython mode pipeline (step: nopython frontend)")

        return fn

    monkeypatch.setattr(cpu_compile, "_load", untypable)
    f = fgrad.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 3.0 - 1.0, x))
    for _ in range(2):  # the second call goes straight to numpy
        np.testing.assert_array_equal(np.asarray(f(fnp.asarray([1.0, 2.0]))), [14.0, 41.0])
    msgs = [r.getMessage() for r in compiled.records if "numba could not compile it" in r.getMessage()]
    assert len(msgs) == 1 and "nopython" in msgs[0]


def test_vmap_of_jit_of_grad_through_a_compiled_scan(compiled):
    def loss(p):  # a batched body (vmap) inside the gradient's loops (grad), compiled (jit)
        y, ys = lax.scan(lambda c, _: (c * p + fnp.sin(c), c), fnp.asarray(0.5), None, length=8)
        return fnp.sum(ys) + y

    ps = fnp.asarray([0.3, 0.7, 1.1])
    got = fgrad.vmap(fgrad.jit(fgrad.grad(loss)))(ps)
    fgrad.config.cpu_compile = False
    want = fgrad.vmap(fgrad.jit(fgrad.grad(loss)))(ps)
    fgrad.config.cpu_compile = True
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)
    assert sum("compiled loop body 'vmap(" in r.getMessage() for r in compiled.records) == 2
    np.testing.assert_allclose(
        np.asarray(got), [float(fgrad.grad(loss)(fnp.asarray(p))) for p in (0.3, 0.7, 1.1)], rtol=1e-13
    )


@pytest.mark.parametrize("sa, sb", [((3, 4), (4,)), ((4,), (4, 3)), ((3, 4), (4, 2)), ((4,), (4,))])
def test_tiny_matrix_products_in_a_loop_become_loops_with_blas_results(compiled, tmp_path, sa, sb):
    rng = np.random.default_rng(1)
    a, b = fnp.asarray(rng.standard_normal(sa)), fnp.asarray(rng.standard_normal(sb))

    def f(a, b):
        def body(c, _):
            y = a @ (b * c)
            return c * 0.9 + 0.1 * fnp.sum(y), y

        return lax.scan(body, 1.0, None, length=6)

    got, want = _both(fgrad.jit(f), a, b)
    for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-14, atol=1e-15)
    source = "".join(m.read_text() for m in (tmp_path / "numba").glob("fgrad_loop_*.py"))
    assert "np.dot" not in source and "for p_" in source, source  # loops, not a BLAS call


def test_a_larger_product_in_a_loop_stays_a_blas_call(compiled, tmp_path):
    a = fnp.asarray(np.random.default_rng(2).standard_normal((20, 20)))
    f = fgrad.jit(lambda a, x: lax.fori_loop(0, 3, lambda i, c: a @ c * 0.5, x))
    got, want = _both(f, a, fnp.ones(20))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14)
    source = "".join(m.read_text() for m in (tmp_path / "numba").glob("fgrad_loop_*.py"))
    assert "np.dot" in source


def test_a_body_of_large_arrays_stays_numpy_and_says_why(compiled):
    # past MAX_ARRAY elements numpy's loops amortise their calls; compiling would not pay
    f = fgrad.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: fnp.tanh(c) * 0.5, x))
    x = fnp.ones(cpu_compile.MAX_ARRAY + 1)
    np.testing.assert_allclose(np.asarray(f(x)), np.tanh(np.tanh(np.tanh(np.ones(x.shape[0])) * 0.5) * 0.5) * 0.5)
    text = compiled.text
    assert "runs as numpy calls" in text and "MAX_ARRAY" in text, text


def test_integer_floor_divide_remainder_and_power_in_a_loop_are_numpys(compiled):
    # numba's integer np.fmod is wrong for negative operands: integers take Python's // and %
    # (a new-user trial found -1 % 5 giving 0 in a compiled ring index)
    f = lambda x: lax.fori_loop(0, 5, lambda i, acc: acc + (i - 1) % 5 + (i - 3) // 2, x)
    assert int(fgrad.jit(f)(fnp.asarray(0))) == int(f(fnp.asarray(0))) == 10 + (-2 - 1 - 1 + 0 + 0)
    g = lambda c: lax.fori_loop(0, 1, lambda i, c: (c[0] % 5, c[1] // -2, c[2] // 7), c)
    x = fnp.asarray(np.int64(-4)), fnp.asarray(np.int64(7)), fnp.asarray(np.int64(2**62 + 1))
    got = [int(v) for v in fgrad.jit(g)(x)]
    assert got == [1, -4, (2**62 + 1) // 7]
    cases = [(-1, 5), (-11, 5), (7, -2), (-7, -2), (6, -2), (7, 0), (-(2**63), -1), (5, 1)]
    h = lambda c: lax.fori_loop(0, 1, lambda i, c: (c[0] // c[1], c[0] % c[1], c[1]), c)
    for a, b in cases:
        args = (fnp.asarray(np.int64(a)), fnp.asarray(np.int64(b)), fnp.asarray(np.int64(0)))
        with np.errstate(all="ignore"):
            want = (np.floor_divide(np.int64(a), np.int64(b)), np.remainder(np.int64(a), np.int64(b)))
        got = fgrad.jit(h)(args)
        assert (int(got[0]), int(got[1])) == (int(want[0]), int(want[1])), (a, b, got)
    assert "runs as numpy calls" not in compiled.text, compiled.text


def test_a_half_power_in_a_loop_is_numpys_sqrt(compiled):
    x = fnp.asarray(np.array([-np.inf, -0.0, 4.0, -1.0]))
    got = np.asarray(fgrad.jit(lambda x: lax.fori_loop(0, 1, lambda i, c: c**0.5, x))(x))
    with np.errstate(invalid="ignore"):
        want = np.asarray(x) ** 0.5
    np.testing.assert_array_equal(got, want)  # nan, -0.0, 2.0, nan
    assert np.signbit(got[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_bodys_elementwise_chains_are_loop_nests_with_numpys_values(compiled, tmp_path, dtype):
    # broadcast reads (a bias row, a column, a 0-d carry), a constant array, a comparison
    # feeding where, exp/tanh/sigmoid (the fused kernels' math) and a value read twice
    bias = fnp.asarray(np.linspace(-1.0, 1.0, 8), dtype=dtype)
    table = np.linspace(0.5, 1.5, 24).reshape(3, 8).astype(dtype)

    def step(carry, x):
        h, s = carry
        z = fnp.tanh(h * 0.9 + bias) + fnp.reshape(x, (3, 1)) * table
        g = fgrad.nn.sigmoid(z) * fnp.exp(-fnp.abs(z))
        h = fnp.where(z > 0.1, g, -g) + s
        return (h, s * 0.5 + fnp.sum(h) * 1e-3), fnp.sum(g, axis=1)

    h0 = fnp.asarray(np.linspace(-2.0, 2.0, 24).reshape(3, 8), dtype=dtype)
    xs = fnp.asarray(np.linspace(-1.0, 1.0, 15).reshape(5, 3), dtype=dtype)
    f = fgrad.jit(lambda h0, xs: lax.scan(step, (h0, fnp.asarray(0.25, dtype=dtype)), xs))
    got, want = _both(f, h0, xs)
    tol = 1e-5 if dtype == "float32" else 1e-13
    for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
    source = "".join(m.read_text() for m in (tmp_path / "numba").glob("fgrad_loop_*.py"))
    assert "for i1_" in source and "np.tanh(" not in source and "_math[('tanh'" in source
    # the group's intermediates are scalars: only the values read after it are arrays
    assert source.count("np.empty((3, 8)") <= 2, source


def test_a_group_the_emitter_cannot_write_is_lowered_op_by_op(compiled, monkeypatch):
    from fgrad.transforms import fusion_numba

    def refuse(self):
        raise ValueError("render_numba: no numba rendering for a test")

    monkeypatch.setattr(fusion_numba._Emitter, "steps", refuse)
    x = fnp.asarray(np.linspace(-1.0, 1.0, 6))
    f = fgrad.jit(lambda x: lax.fori_loop(0, 4, lambda i, c: fnp.tanh(c * 0.5 + 1.0) * 2.0, x))
    got, want = _both(f, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14)
    assert any("compiled loop body" in r.getMessage() for r in compiled.records)


def test_a_while_loop_over_arrays_writes_cond_and_body_chains_as_loop_nests(compiled, tmp_path):
    # Newton's square roots of a vector: chains over arrays in both the predicate and the body
    a = fnp.asarray(np.linspace(0.5, 9.0, 7))

    def roots(a):
        done = lambda x: fnp.sum(fnp.abs(fnp.exp(fnp.log(x * x)) - a) / a) > 1e-12
        return lax.while_loop(done, lambda x: 0.5 * (x + a / x) + 0.0 * fnp.tanh(x), a)

    got, want = _both(fgrad.jit(roots), a)
    np.testing.assert_allclose(np.asarray(got), np.sqrt(np.asarray(a)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    source = "".join(m.read_text() for m in (tmp_path / "numba").glob("fgrad_loop_*.py"))
    assert "for i0_u" in source and "for i0_v" in source, source
