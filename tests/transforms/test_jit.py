"""jit: same results as eager, cache hits and misses, nesting, errors."""

import logging

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import REGISTRY
from fgrad.test_util import op_args, op_cases
from fgrad.transforms.program import Program


def loss(w, x):
    return fnp.sum(fnp.tanh(x * w) ** 2) / 3.0


X = fnp.array([0.5, -1.0, 2.0])


def test_jit_matches_eager_and_caches():
    f = fgrad.jit(loss)
    np.testing.assert_allclose(np.asarray(f(1.5, X)), np.asarray(loss(1.5, X)))
    f(1.5, X)
    assert f.cache_info().misses == 1 and f.cache_info().hits == 1
    f(1.5, fnp.array([1.0, 2.0]))  # new shape: retrace
    f(1.5, fnp.array([1.0, 2.0, 3.0], dtype="float32"))  # new dtype: retrace
    np.testing.assert_allclose(np.asarray(f(2.5, X)), np.asarray(loss(2.5, X)))
    assert f.cache_info().misses == 3  # a new Python float is traced, not a new signature
    f(2, X)  # a Python int is a constant: retrace
    assert f.cache_info().misses == 4


def test_jit_of_grad_and_grad_of_jit_match_eager():
    w = fnp.array(1.5)
    want = fgrad.grad(loss)(w, X)
    np.testing.assert_allclose(np.asarray(fgrad.jit(fgrad.grad(loss))(w, X)), np.asarray(want))
    np.testing.assert_allclose(np.asarray(fgrad.grad(fgrad.jit(loss))(w, X)), np.asarray(want))
    second = fgrad.grad(fgrad.grad(loss))(w, X)
    np.testing.assert_allclose(
        np.asarray(fgrad.jit(fgrad.grad(fgrad.grad(loss)))(w, X)), np.asarray(second)
    )
    np.testing.assert_allclose(
        np.asarray(fgrad.grad(fgrad.grad(fgrad.jit(loss)))(w, X)), np.asarray(second)
    )
    t = fgrad.jvp(fgrad.jit(loss), (w, X), (fnp.array(1.0), fnp.zeros(3)))[1]
    np.testing.assert_allclose(np.asarray(t), np.asarray(want))


def test_value_and_grad_training_step_in_one_graph():
    def step(params, x, y):
        def mse(p):
            return fnp.mean((x * p["w"] + p["b"] - y) ** 2)

        value, grads = fgrad.value_and_grad(mse)(params)
        new = fgrad.tree.map(lambda p, g: p - 0.1 * g, params, grads)
        return value, new

    params = {"w": fnp.array(0.0), "b": fnp.array(0.0)}
    x = fnp.linspace(-1.0, 1.0, 20)
    y = 3.0 * x + 1.0
    fast = fgrad.jit(step)
    p_eager, p_jit = params, params
    for _ in range(50):
        v_eager, p_eager = step(p_eager, x, y)
        v_jit, p_jit = fast(p_jit, x, y)
    assert fast.cache_info().misses == 1
    for k in "wb":
        np.testing.assert_allclose(np.asarray(p_jit[k]), np.asarray(p_eager[k]), rtol=1e-12)
    assert float(v_jit) < 1e-2


def test_static_argnums_and_control_flow_error():
    def f(x, mode):
        return fnp.sin(x) if mode == "sin" else fnp.cos(x)

    g = fgrad.jit(f, static_argnums=1)
    assert np.isclose(float(g(fnp.array(0.0), "cos")), 1.0)
    assert np.isclose(float(g(fnp.array(0.0), "sin")), 0.0)
    with pytest.raises(fgrad.ConcretizationError, match="static_argnums") as err:
        fgrad.jit(lambda x: x if x > 0 else -x)(fnp.array(1.0))
    assert "test_jit.py" in str(err.value)  # names the user's line
    with pytest.raises(TypeError, match="hashable"):
        fgrad.jit(f, static_argnums=1)(fnp.array(0.0), ["not", "hashable"])


def test_log_compiles(caplog):
    fgrad.config.log_compiles = True
    try:
        with caplog.at_level(logging.WARNING, logger="fgrad"):
            f = fgrad.jit(lambda x: x * 2.0)
            f(fnp.ones(2))
            f(fnp.ones(2))
    finally:
        fgrad.config.log_compiles = False
    assert sum("tracing" in r.message for r in caplog.records) == 1


def test_intermediates_are_released_after_last_use():
    f = fgrad.jit(lambda x: fnp.sum(fnp.exp(fnp.sin(fnp.cos(x)))))
    graph = f.graph(fnp.ones(4))
    program = Program(graph, np)
    freed = [
        name
        for line in program.source.splitlines()
        if line.strip().startswith("del ")
        for name in line.strip()[4:].split(", ")
    ]
    # cos, sin and exp outputs are each freed once their consumer has run.
    assert len(freed) == 3


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if REGISTRY[n].check is not None))
def test_jit_equals_eager_on_every_op(name):
    """The registry sweep's first case of each op gives identical results under jit."""
    op = REGISTRY[name]
    shapes, params = op_cases(op, 1)[0]
    args = op_args(op, shapes, params)
    want = op(*args, **params)
    got = fgrad.jit(lambda *a: op(*a, **params))(*args)
    for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


# ------------------------------------------------------------------------ compiled programs
# Arrays of 1,024 float32 (4 KiB) or more get out= buffers from the program's arena.

N = 1024


def _rand(*shape, seed=0, dtype=np.float32):
    return fnp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def test_program_uses_buffers_and_returns_fresh_outputs():
    def f(x):
        y = fnp.tanh(x * 2.0) + 1.0
        return y * y, fnp.reshape(fnp.exp(y) * 3.0, (-1,))  # the second: a view of a product

    jf = fgrad.jit(f)
    x1, x2 = _rand(8, N // 8), _rand(8, N // 8, seed=1)
    program = Program(jf.graph(x1), np)
    assert "out=" in program.source and program.arena_bytes > 0
    r1 = jf(x1)
    kept = [np.array(r) for r in r1]
    r2 = jf(x2)
    for r, k in zip(r1, kept):  # the second call wrote nothing the first returned
        np.testing.assert_array_equal(np.asarray(r), k)
    for got, want in zip(r2, f(x2)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_program_repeated_calls_match_eager_on_a_training_gradient():
    # In-place steps, buffers shared between values of different shapes, views of
    # buffers (reshape, transpose, getitem) read after other steps wrote: every call
    # must give eager's numbers, whatever the previous call left in the arena.
    from fgrad import nn

    block = nn.TransformerBlock(16, 4, mlp_ratio=2)
    params = block.init(fgrad.random.key(0))
    f = fgrad.value_and_grad(lambda p, x: fnp.mean(block.apply(p, x) ** 2))
    jf = fgrad.jit(f)
    for seed in range(3):
        x = _rand(4, 16, 16, seed=seed)
        for got, want in zip(fgrad.tree.leaves(jf(params, x)), fgrad.tree.leaves(f(params, x))):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6)
    assert jf.cache_info().misses == 1


def test_where_with_a_zero_branch_is_exact():
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    x[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -1.0]
    c = np.random.default_rng(1).random(N) > 0.5
    c[:6] = [True, True, False, True, False, True]
    for keep in (True, False):

        def f(c, x, keep=keep):
            return fnp.where(c, x, 0) * 1.0 if keep else fnp.where(c, 0, x) * 1.0

        got = np.asarray(fgrad.jit(f)(fnp.asarray(c), fnp.asarray(x)))
        want = np.where(c, x, 0) if keep else np.where(c, 0, x)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_program_is_reentrant_across_threads():
    import threading

    jf = fgrad.jit(lambda x: fnp.sum(fnp.tanh(fnp.sin(x) * 2.0) ** 2))
    xs = [_rand(N, seed=s, dtype=np.float64) for s in range(8)]
    want = [float(np.sum(np.tanh(np.sin(np.asarray(x)) * 2.0) ** 2)) for x in xs]
    jf(xs[0])
    results = {}

    def work(i):
        for _ in range(20):
            results[i] = float(jf(xs[i]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, w in enumerate(want):
        assert np.isclose(results[i], w, rtol=1e-12)


def test_fast_call_path_and_general_path_agree():
    f = fgrad.jit(lambda d, s: d["a"] * s + fnp.sum(d["b"][0]))
    d = {"a": fnp.ones(3), "b": [fnp.arange(3.0), None]}
    assert float(fnp.sum(f(d, 2.0))) == 3 * (2.0 + 3.0)
    assert float(fnp.sum(f(d, 2.0))) == 3 * (2.0 + 3.0)  # cache hit through the quick walk
    assert float(fnp.sum(f(d, 3.0))) == 3 * (3.0 + 3.0)  # a new float: traced, a hit
    assert f.cache_info() == (2, 1, 1)
    assert float(fnp.sum(f(d, 3))) == 3 * (3.0 + 3.0)  # a Python int: a constant, retrace
    assert f.cache_info() == (2, 2, 2)
    np.testing.assert_array_equal(np.asarray(f(d, s=2.0)), np.full(3, 5.0))  # kwargs: general path


def test_outputs_never_view_the_arena():
    # A reshape of a permuted intermediate that escapes may be a view of that
    # intermediate (unit axes) or a copy: either way it must not live in reused buffers.
    def f(x):
        e = fnp.exp(x) * 2.0
        t = fnp.permute_dims(e, (1, 0))
        return fnp.reshape(t, (1, *t.shape)), fnp.reshape(t, (-1,)), fnp.sum(e)

    jf = fgrad.jit(f)
    x1, x2 = _rand(32, 64, dtype=np.float64), _rand(32, 64, seed=3, dtype=np.float64)
    first = jf(x1)
    kept = [np.array(r) for r in first]
    jf(x2)
    for r, k in zip(first, kept):
        np.testing.assert_array_equal(np.asarray(r), k)


def test_small_batched_matmul_gets_a_row_major_right_operand():
    # attention's q @ k^T: the transposed view of small matrices is copied into a buffer
    # (OpenBLAS is faster on row-major operands there); larger ones, and views that other
    # steps read too, stay views. Values are eager's either way.
    def scores(q, k):
        return fnp.tanh(q @ fnp.permute_dims(k, (0, 1, 3, 2)))

    def big(q, k):
        return fnp.tanh(q @ fnp.permute_dims(k, (0, 2, 1)))

    def shared(q, k):
        kt = fnp.permute_dims(k, (0, 2, 1))
        return q @ kt, fnp.exp(kt)

    cases = [
        (scores, (_rand(2, 3, 16, 8), _rand(2, 3, 16, 8, seed=1)), 1),
        (big, (_rand(2, 128, 64), _rand(2, 128, 64, seed=1)), 0),
        (shared, (_rand(4, 16, 8), _rand(4, 16, 8, seed=1)), 0),
    ]
    for f, args, copies in cases:
        jf = fgrad.jit(f)
        source = Program(jf.graph(*args), np).source
        lines = [line for line in source.splitlines() if line.endswith("# permute_dims")]
        assert sum("out=" in line for line in lines) == copies, source
        for _ in range(2):  # the second call reuses the buffers
            got, want = jf(*args), f(*args)
            for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_host_constants_move_to_the_programs_namespace(monkeypatch):
    # On cupy a numpy constant (a captured Tensor, a folded value) cannot meet device
    # arrays in one kernel: the program converts it once with its namespace's asarray.
    import types

    from fgrad.transforms import jit as jit_module

    class Moved(np.ndarray):
        pass

    xp = types.ModuleType("otherxp")
    xp.__getattr__ = lambda name: getattr(np, name)
    xp.asarray = lambda a: np.asarray(a).view(Moved)
    programs = []
    init = Program.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        programs.append(self)

    monkeypatch.setattr(Program, "__init__", spy)
    monkeypatch.setattr(jit_module, "_namespace", lambda leaves: xp)
    w = fnp.asarray(np.arange(4.0))  # captured: a constant of the graph
    out = fgrad.jit(lambda x: x * w)(fnp.ones(4))
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0))
    consts = [v for k, v in programs[0]._fn.__globals__.items() if k.startswith("c")]
    arrays = [c for c in consts if isinstance(c, np.ndarray)]
    assert arrays and all(type(c) is Moved for c in arrays)


@pytest.mark.parametrize("outer", ["vmap", "grad", "jvp"])
def test_jit_closing_over_an_outer_tracer(outer):
    # The closed-over value is a tracer of the transform around jit: it must be read as
    # the traced value it is (and a graph holding it must not be reused on later calls).
    x = fnp.asarray(np.arange(6.0).reshape(2, 3))
    y = fnp.asarray(np.linspace(1.0, 2.0, 6).reshape(2, 3))
    inner = lambda a, y: fgrad.jit(lambda a: a * y + a / y - y)(a)
    want = lambda a, y: a * y + a / y - y
    for scale in (1.0, 2.0):  # a second call: nothing stale from the first
        ys = y * scale
        if outer == "vmap":
            got, ref = fgrad.vmap(inner)(x, ys), want(x, ys)
        elif outer == "grad":
            got = fgrad.grad(lambda y: fnp.sum(inner(x, y)))(ys)
            ref = fgrad.grad(lambda y: fnp.sum(want(x, y)))(ys)
        else:
            got = fgrad.jvp(lambda y: inner(x, y), (ys,), (x,))[1]
            ref = fgrad.jvp(lambda y: want(x, y), (ys,), (x,))[1]
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-12)


def test_jit_of_a_wrapper_of_a_jitted_function_runs_the_wrapper():
    # update_wrapper must not copy the inner Jitted's state (its _f, its cache) into the
    # outer one: jit(vmap(jit(f))) ran jit(f) unmapped, a decorator around jit was dropped
    import functools

    x = fnp.asarray(np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(np.asarray(fgrad.jit(fgrad.vmap(fgrad.jit(fnp.sum)))(x)), [3, 12, 21, 30])
    inner = fgrad.jit(lambda x: x * 2.0)

    @functools.wraps(inner)
    def plus(x):
        return inner(x) + 100.0

    np.testing.assert_array_equal(np.asarray(fgrad.jit(plus)(fnp.arange(3.0))), [100.0, 102.0, 104.0])
