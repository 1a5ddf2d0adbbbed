"""fgrad.lax: values and derivatives against Python control flow, under every transform.

Each primitive is checked eagerly and under ``jit`` against the same maths written with a
Python ``if``/``for``/``while`` (the reference), and its derivatives through ``grad``,
``jit(grad)``, ``grad(jit)`` and ``jvp`` against the reference's; ``check_grads`` compares
them with finite differences (second order for cond and scan).
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.test_util import check_grads

X = fnp.array([0.5, -1.2, 0.8])
W = fnp.array([[0.3, -0.5, 0.1], [0.2, 0.4, -0.3], [-0.6, 0.1, 0.5]])


def close(got, want, rtol=1e-12, atol=1e-12):
    for g, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def same_everywhere(f, ref, args, argnums=0, jvp_too=True):
    """``f`` (with lax) equals ``ref`` (Python control flow) eagerly and under jit, and so
    do grad, jit(grad), grad(jit), jit(grad(jit)) and jvp (eager and jitted)."""
    want = ref(*args)
    close(f(*args), want)
    close(fgrad.jit(f)(*args), want)
    g_want = fgrad.grad(ref, argnums)(*args)
    for g in (
        fgrad.grad(f, argnums),
        fgrad.jit(fgrad.grad(f, argnums)),
        fgrad.grad(fgrad.jit(f), argnums),
        fgrad.jit(fgrad.grad(fgrad.jit(f), argnums)),
    ):
        close(g(*args), g_want)
    if jvp_too:
        rng = np.random.default_rng(0)
        tangents = fgrad.tree.map(lambda a: fnp.asarray(rng.standard_normal(np.shape(a))), args)
        t_want = fgrad.jvp(ref, args, tangents)[1]
        close(fgrad.jvp(f, args, tangents)[1], t_want)
        close(fgrad.jvp(fgrad.jit(f), args, tangents)[1], t_want)


# ------------------------------------------------------------------------ cond / switch


def cond_f(w, x):
    # The branches close over w (a differentiated argument) and take x as an operand.
    y = lax.cond(fnp.sum(x) > 0, lambda v: fnp.sin(v) * w, lambda v: fnp.cos(v) + w * w, x)
    return fnp.sum(y**2)


def cond_ref(w, x):
    y = fnp.sin(x) * w if fnp.sum(x) > 0 else fnp.cos(x) + w * w
    return fnp.sum(y**2)


@pytest.mark.parametrize("x", [X, -X], ids=["true", "false"])
def test_cond_matches_python_if(x):
    w = fnp.array(1.3)
    same_everywhere(cond_f, cond_ref, (w, x), argnums=(0, 1))


def test_cond_second_order_under_jit():
    w = fnp.array(1.3)
    for x in (X, -X):
        check_grads(fgrad.jit(cond_f), (w, x), order=2, modes=("rev", "fwd"))
        want = fgrad.hessian(cond_ref)(w, x)
        close(fgrad.jit(fgrad.hessian(cond_f))(w, x), want, rtol=1e-10)
        close(fgrad.hessian(fgrad.jit(cond_f))(w, x), want, rtol=1e-10)


def test_cond_pytree_operands_and_outputs():
    def f(x, pair):
        a, b = pair
        out = lax.cond(
            x[0] > 0,
            lambda x, p: {"s": x * p[0], "t": p[1]},
            lambda x, p: {"s": x * p[1] * 2.0, "t": x[:1] * 0.5},
            x,
            (a, b),
        )
        return fnp.sum(out["s"]) + fnp.sum(out["t"] ** 3)

    def ref(x, pair):
        a, b = pair
        if x[0] > 0:
            out = {"s": x * a, "t": b}
        else:
            out = {"s": x * b * 2.0, "t": x[:1] * 0.5}
        return fnp.sum(out["s"]) + fnp.sum(out["t"] ** 3)

    pair = (fnp.array(0.7), fnp.array([1.5]))
    for x in (X, -X):
        same_everywhere(f, ref, (x, pair), argnums=(0, 1))


def test_cond_with_concrete_predicate_runs_one_branch_under_jit():
    calls = []

    def f(x):
        return lax.cond(
            True, lambda v: calls.append("t") or v * 2.0, lambda v: calls.append("f") or v, x
        )

    graph = fgrad.jit(f).graph(X)
    assert calls == ["t"]
    assert [n.op.name for n in graph.nodes] == ["multiply"]


def test_cond_integer_predicate_and_python_scalar_outputs():
    def f(n, x):
        return lax.cond(n, lambda v: fnp.sum(v), lambda v: 0.0, x)  # 0.0 takes f64

    assert float(fgrad.jit(f)(fnp.array(3), X)) == pytest.approx(float(fnp.sum(X)))
    assert float(fgrad.jit(f)(fnp.array(0), X)) == 0.0
    x32 = X.astype("float32")
    out = fgrad.jit(f)(fnp.array(0), x32)
    assert out.dtype == np.float32  # the Python number adopts the other branch's dtype


def test_cond_keeps_float32():
    x = X.astype("float32")
    w = fnp.array(1.3, dtype="float32")
    out = fgrad.jit(cond_f)(w, x)
    g = fgrad.jit(fgrad.grad(cond_f, (0, 1)))(w, x)
    assert out.dtype == np.float32
    assert g[0].dtype == np.float32 and g[1].dtype == np.float32
    close(g, fgrad.grad(cond_ref, (0, 1))(w, x), rtol=1e-5, atol=1e-6)


def switch_f(i, x):
    branches = [lambda v: fnp.sin(v), lambda v: v**3, lambda v: fnp.exp(-v) * v]
    return fnp.sum(lax.switch(i, branches, x))


def switch_ref(i, x):
    k = min(max(int(i), 0), 2)
    return fnp.sum([fnp.sin(x), x**3, fnp.exp(-x) * x][k])


@pytest.mark.parametrize("i", [-3, 0, 1, 2, 9])
def test_switch_matches_python_indexing_and_clamps(i):
    idx = fnp.array(i)
    want = switch_ref(idx, X)
    close(lax.switch(idx, [lambda v: v] * 2, X), X)
    close(fgrad.jit(switch_f)(idx, X), want)
    close(fgrad.grad(fgrad.jit(switch_f), 1)(idx, X), fgrad.grad(switch_ref, 1)(idx, X))
    close(fgrad.jit(fgrad.grad(switch_f, 1))(idx, X), fgrad.grad(switch_ref, 1)(idx, X))
    check_grads(lambda x: fgrad.jit(switch_f)(idx, x), (X,), order=2, modes=("rev", "fwd"))


def test_jit_with_cond_retraces_only_per_signature():
    f = fgrad.jit(cond_f)
    w = fnp.array(1.3)
    f(w, X)
    f(w, -X)  # the other branch: same signature, no retrace
    f(fnp.array(0.2), X)
    assert f.cache_info().misses == 1 and f.cache_info().hits == 2
    f(w, fnp.array([1.0, 2.0]))  # new shape
    assert f.cache_info().misses == 2


def test_make_graph_records_one_cond_node_with_closed_over_values_as_inputs():
    g = fgrad.make_graph(cond_f)(fnp.array(1.3), X)
    cond_nodes = [n for n in g.nodes if n.op.name == "cond"]
    assert len(cond_nodes) == 1
    node = cond_nodes[0]
    assert any(v is g.invars[0] for v in node.inputs[1:])  # w, closed over, is an input
    assert "cond" in str(g) and "true_fun" in str(g)


# ------------------------------------------------------------------------ scan


def rnn_f(w, h0, xs):
    def step(h, x):
        h = fnp.tanh(w @ h + x)
        return h, fnp.sum(h * x)

    h, ys = lax.scan(step, h0, xs)
    return fnp.sum(h**2) + fnp.sum(ys)


def rnn_ref(w, h0, xs):
    h, ys = h0, []
    for t in range(xs.shape[0]):
        h = fnp.tanh(w @ h + xs[t])
        ys.append(fnp.sum(h * xs[t]))
    return fnp.sum(h**2) + fnp.sum(fnp.stack(ys))


XS = fnp.asarray(np.random.default_rng(1).standard_normal((5, 3)))


def test_scan_matches_python_loop():
    same_everywhere(rnn_f, rnn_ref, (W, X, XS), argnums=(0, 1, 2))


def test_scan_second_order():
    check_grads(fgrad.jit(rnn_f), (W, X, XS), order=2, modes=("rev", "fwd"))
    hess = fgrad.hessian(lambda h: rnn_ref(W, h, XS))(X)
    close(fgrad.jit(fgrad.hessian(lambda h: rnn_f(W, h, XS)))(X), hess, rtol=1e-10)
    close(fgrad.hessian(fgrad.jit(lambda h: rnn_f(W, h, XS)))(X), hess, rtol=1e-10)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_pytrees_reverse_and_stacked_outputs(reverse):
    xs = {"a": XS, "b": fnp.arange(5.0)}

    def step(carry, x):
        s, n = carry
        s = s * 0.9 + x["a"] * x["b"]
        return (s, n + 1), {"s": s, "n": n}

    init = (fnp.zeros(3), fnp.array(0))
    carry, ys = fgrad.jit(lambda i, xs: lax.scan(step, i, xs, reverse=reverse))(init, xs)
    # Python reference
    s, ss, ns = init[0], [None] * 5, [None] * 5
    for n, t in enumerate(range(4, -1, -1) if reverse else range(5)):
        ns[t] = n
        s = s * 0.9 + xs["a"][t] * xs["b"][t]
        ss[t] = s
    close(carry[0], s)
    assert int(carry[1]) == 5 and carry[1].dtype == np.int64
    close(ys["s"], fnp.stack(ss))
    assert ys["n"].tolist() == ns
    eager = lax.scan(step, init, xs, reverse=reverse)
    close(eager, (carry, ys))

    def loss(xs):
        (s, _), ys = lax.scan(step, init, xs, reverse=reverse)
        return fnp.sum(s**2) + fnp.sum(ys["s"] * ys["s"])

    check_grads(fgrad.jit(loss), (xs,), order=2, modes=("rev", "fwd"))
    close(fgrad.grad(fgrad.jit(loss))(xs), fgrad.grad(loss)(xs))


def test_scan_without_xs_and_with_none_outputs():
    def f(x):
        c, ys = lax.scan(lambda c, _: (c * 1.5 + 1.0, None), x, None, length=4)
        assert ys is None
        return c

    want = X
    for _ in range(4):
        want = want * 1.5 + 1.0
    close(f(X), want)
    close(fgrad.jit(f)(X), want)


def test_scan_of_length_zero():
    xs = fnp.zeros((0, 3))
    for run in (lax.scan, lambda *a: fgrad.jit(lambda i, x: lax.scan(*a[:1], i, x))(*a[1:])):
        c, ys = run(lambda c, x: (c + x, c * 2.0), X, xs)
        close(c, X)
        assert ys.shape == (0, 3) and ys.dtype == np.float64
    g = fgrad.grad(fgrad.jit(lambda x: fnp.sum(lax.scan(lambda c, x: (c * x, c), x, xs)[0])))(X)
    close(g, fnp.ones(3))


def test_scan_nested_with_cond_in_the_body():
    # A traced cond inside a traced scan inside jit, differentiated.
    def f(w, xs):
        def step(c, x):
            c = lax.cond(fnp.sum(x) > 0, lambda c: fnp.sin(c * w), lambda c: c * x, c)
            return c, fnp.sum(c)

        c, ys = lax.scan(step, fnp.ones(3), xs)
        return fnp.sum(c) + fnp.sum(ys**2)

    def ref(w, xs):
        c, total = fnp.ones(3), 0.0
        for t in range(xs.shape[0]):
            c = fnp.sin(c * w) if fnp.sum(xs[t]) > 0 else c * xs[t]
            total = total + fnp.sum(c) ** 2
        return fnp.sum(c) + total

    same_everywhere(f, ref, (fnp.array(0.7), XS), argnums=(0, 1))
    check_grads(fgrad.jit(f), (fnp.array(0.7), XS), order=2, modes=("rev", "fwd"))


# ------------------------------------------------------------------------ fori_loop


def fori_f(w, x):
    return fnp.sum(lax.fori_loop(1, 6, lambda i, v: fnp.sin(v * w) + i * 0.1, x))


def fori_ref(w, x):
    for i in range(1, 6):
        x = fnp.sin(x * w) + i * 0.1
    return fnp.sum(x)


def test_fori_loop_matches_python_for():
    same_everywhere(fori_f, fori_ref, (fnp.array(1.1), X), argnums=(0, 1))
    check_grads(fgrad.jit(fori_f), (fnp.array(1.1), X), order=2, modes=("rev", "fwd"))


def test_fori_loop_of_1000_steps_is_one_node_under_jit():
    def f(x):
        return lax.fori_loop(0, 1000, lambda i, v: v * 0.999 + 0.001 * fnp.cos(v), x)

    jf = fgrad.jit(f)
    graph = jf.graph(X)
    assert len(graph.nodes) <= 3, str(graph)
    close(jf(X), f(X))
    g = fgrad.jit(fgrad.grad(lambda x: fnp.sum(f(x))))
    assert len(g.graph(X).nodes) < 20, str(g.graph(X))
    close(g(X), fgrad.grad(lambda x: fnp.sum(f(x)))(X), rtol=1e-10)


def test_fori_loop_index_is_an_integer_tensor():
    seen = []

    def body(i, v):
        seen.append((type(i).__name__, str(i.dtype)))
        return v + i

    out = lax.fori_loop(0, 3, body, fnp.array(0.0))
    assert float(out) == 3.0 and seen[0] == ("Tensor", "int64")
    out = fgrad.jit(lambda v: lax.fori_loop(fnp.array(0, dtype="int32"), 3, body, v))(
        fnp.array(0.0)
    )
    assert float(out) == 3.0 and seen[-1][1] == "int32"
    assert float(lax.fori_loop(5, 2, body, fnp.array(1.0))) == 1.0  # no iterations
    assert float(fgrad.jit(lambda v: lax.fori_loop(5, 2, body, v))(fnp.array(1.0))) == 1.0


def test_fori_loop_carry_errors_name_fori_loop_in_every_mode():
    # Under jit fori_loop runs as a scan (concrete bounds) or a while_loop (traced ones),
    # whose own messages would name themselves and count the index as leaf 0.
    def body(i, c):
        return c + 0.5  # int64 carry + float: float64

    calls = [
        lambda: lax.fori_loop(0, 3, body, fnp.asarray(0)),
        lambda: fgrad.jit(lambda: lax.fori_loop(0, 3, body, fnp.asarray(0)))(),
        lambda: fgrad.jit(lambda n: lax.fori_loop(0, n, body, fnp.asarray(0)))(fnp.asarray(3)),
    ]
    for call in calls:
        with pytest.raises(fgrad.errors.DTypeError, match=r"fori_loop: body_fun's output leaf 0 "):
            call()


def test_a_python_int_carry_made_a_float_by_the_body_starts_as_a_float():
    # JAX's weak-type promotion of the initial carry (and what eager Python computes).
    def body(i, c):
        return c + 0.5

    for loop in (
        lambda: lax.fori_loop(0, 3, body, 0),
        lambda: lax.while_loop(lambda c: c < 2, lambda c: c + 0.5, 0),
        lambda: lax.scan(lambda c, x: (c + 0.5, c), 0, None, length=3)[0],
    ):
        want = loop()
        got = fgrad.jit(loop)()  # jit returns a 0-d Tensor of the number's dtype
        assert type(want) is float and got.dtype == np.float64 and got.shape == () and float(got) == want


def test_a_fori_loop_body_may_return_a_traced_python_float():
    # Under jit a Python float argument is a weak scalar: a body returning it acts as a
    # body returning the literal (the carry's dtype), as scan and while_loop do.
    x = fnp.asarray(np.float32(1.0))
    want = fgrad.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: 0.5, x))(x)
    got = fgrad.jit(lambda x, s: lax.fori_loop(0, 3, lambda i, c: s, x))(x, 0.5)
    assert got.dtype == want.dtype == np.float32 and float(got) == float(want) == 0.5


def test_an_inner_loop_widens_an_outer_loops_number_carry_as_eagerly():
    # The outer carry c stays a weak int; the inner loop makes it a float (JAX: [1, 2, 3]).
    def scan_of_fori():
        return lax.scan(
            lambda c, _: (c + 1, lax.fori_loop(0, 2, lambda j, d: d + 0.5, c)), 0, None, length=3
        )[1]

    def fori_of_fori():
        return lax.fori_loop(0, 2, lambda i, c: lax.fori_loop(0, 2, lambda j, d: d + 0.5, c), 0)

    want = scan_of_fori()
    got = fgrad.jit(scan_of_fori)()
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(got), [1.0, 2.0, 3.0])
    assert fori_of_fori() == fgrad.jit(fori_of_fori)() == 2.0


def test_a_traced_float_carry_made_complex_as_eagerly():
    def f(c):
        return lax.fori_loop(0, 3, lambda i, c: c * 1j + 1, c)

    assert f(0.5) == fgrad.jit(f)(0.5) == 0.5j


def test_loops_that_run_no_step_give_the_widened_carry_type_in_every_mode():
    # JAX settles the initial carry's type before the loop runs: 0.0, not 0.
    loops = [
        lambda: lax.fori_loop(0, 0, lambda i, c: c + 0.5, 0),
        lambda: lax.while_loop(lambda c: c > 5, lambda c: c + 0.5, 0),
        lambda: lax.scan(lambda c, x: (c + 0.5, c), 0, None, length=0)[0],
        lambda: lax.fori_loop(0, 0, lambda i, c: c + 1, True),
    ]
    for loop, want in zip(loops, [0.0, 0.0, 0.0, 1]):
        got = loop()
        assert type(got) is type(want) and got == want
        jitted = fgrad.jit(loop)()  # a 0-d Tensor of numpy's dtype for the number
        assert jitted.shape == () and jitted.dtype == np.result_type(type(want)) and jitted.item() == want


def test_fori_loop_with_traced_bounds_is_a_forward_differentiable_while():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, v: v * x, fnp.ones_like(x))

    jf = fgrad.jit(f)
    assert [n.op.name for n in jf.graph(fnp.array(3), X).nodes][-1] == "while_loop"
    close(jf(fnp.array(3), X), X**3)
    close(fgrad.jvp(lambda x: jf(fnp.array(3), x), (X,), (fnp.ones(3),))[1], 3 * X**2)
    with pytest.raises(
        ValueError, match="Reverse-mode differentiation does not work for fgrad.lax.while_loop"
    ):
        fgrad.grad(lambda x: fnp.sum(jf(fnp.array(3), x)))(X)


# ------------------------------------------------------------------------ while_loop


def while_f(a, x):
    return lax.while_loop(lambda v: fnp.sum(v * v) < 10.0, lambda v: v * a + 0.1, x)


def while_ref(a, x):
    while fnp.sum(x * x) < 10.0:
        x = x * a + 0.1
    return x


def test_while_loop_matches_python_while():
    a = fnp.array(1.3)
    close(while_f(a, X), while_ref(a, X))
    close(fgrad.jit(while_f)(a, X), while_ref(a, X))
    # Eager grad runs the Python loop; forward mode works through the recorded loop too.
    close(
        fgrad.grad(lambda x: fnp.sum(while_f(a, x)))(X),
        fgrad.grad(lambda x: fnp.sum(while_ref(a, x)))(X),
    )
    rng = np.random.default_rng(0)
    tangents = (fnp.asarray(rng.standard_normal(())), fnp.asarray(rng.standard_normal(3)))
    want = fgrad.jvp(while_ref, (a, X), tangents)[1]
    close(fgrad.jvp(fgrad.jit(while_f), (a, X), tangents)[1], want)
    close(
        fgrad.jit(lambda a, x, ta, tx: fgrad.jvp(while_f, (a, x), (ta, tx))[1])(a, X, *tangents),
        want,
    )
    close(fgrad.jacfwd(fgrad.jit(while_f), 1)(a, X), fgrad.jacfwd(while_ref, 1)(a, X))
    check_grads(fgrad.jit(while_f), (a, X), order=2, modes=("fwd",))


def test_while_loop_reverse_mode_raises_a_clear_error():
    a = fnp.array(1.3)
    msg = "Reverse-mode differentiation does not work for fgrad.lax.while_loop.*fori_loop.*scan"
    with pytest.raises(ValueError, match=msg):
        fgrad.grad(lambda x: fnp.sum(fgrad.jit(while_f)(a, x)))(X)
    with pytest.raises(ValueError, match=msg):
        fgrad.jit(fgrad.grad(lambda x: fnp.sum(while_f(a, x))))(X)


def test_while_loop_integer_carry_and_closure():
    limit = fnp.array(7)

    def f(x):
        return lax.while_loop(
            lambda c: c[0] < limit, lambda c: (c[0] + 2, c[1] * x), (0, fnp.ones_like(x))
        )

    n, p = fgrad.jit(f)(X)
    # The counter stays a Python int eagerly; jit returns it as a 0-d int64 Tensor (weakly
    # typed while traced, as in JAX).
    assert f(X)[0] == 8 and type(f(X)[0]) is int
    assert isinstance(n, fgrad.Tensor) and n.dtype == np.int64 and int(n) == 8
    close(p, X**4)


# ------------------------------------------------------------------------ errors


def test_cond_branch_mismatch_errors_name_the_primitive_and_both_avals():
    x = fnp.ones(3)
    p = fnp.array(True)
    with pytest.raises(
        fgrad.ShapeError,
        match=r"cond: output leaf 0 is f64\[3\] in false_fun but f64\[2\] in true_fun",
    ):
        fgrad.jit(lambda p, x: lax.cond(p, lambda v: v[:2], lambda v: v, x))(p, x)
    with pytest.raises(fgrad.DTypeError, match=r"f64\[3\].*f32\[3\]"):
        fgrad.jit(lambda p, x: lax.cond(p, lambda v: v.astype("float32"), lambda v: v, x))(p, x)
    with pytest.raises(TypeError, match="same pytree structure"):
        fgrad.jit(lambda p, x: lax.cond(p, lambda v: (v, v), lambda v: v, x))(p, x)
    with pytest.raises(fgrad.ShapeError, match="pred must be a scalar"):
        lax.cond(fnp.array([True, False]), lambda v: v, lambda v: v, x)
    with pytest.raises(fgrad.DTypeError, match="switch: index must be an integer"):
        lax.switch(fnp.array(1.0), [lambda v: v], x)
    with pytest.raises(ValueError, match="non-empty"):
        lax.switch(0, [], x)


def test_loop_carry_errors():
    x = fnp.ones(3)
    with pytest.raises(
        fgrad.DTypeError,
        match=r"while_loop: body_fun's output leaf 0 has aval f32\[3\], but init_val has f64\[3\]",
    ):
        fgrad.jit(
            lambda x: lax.while_loop(lambda v: fnp.sum(v) < 5, lambda v: v.astype("float32"), x)
        )(x)
    with pytest.raises(fgrad.DTypeError, match="cond_fun must return a scalar bool"):
        fgrad.jit(lambda x: lax.while_loop(lambda v: fnp.sum(v), lambda v: v, x))(x)
    with pytest.raises(
        fgrad.ShapeError,
        match=r"scan: f's carry output leaf 0 has aval f64\[1\], but init has f64\[3\]",
    ):
        fgrad.jit(lambda x: lax.scan(lambda c, y: (c[:1], y), x, x))(x)
    with pytest.raises(TypeError, match="structure of init"):
        fgrad.jit(lambda x: lax.scan(lambda c, y: ((c, c), y), x, x))(x)
    with pytest.raises(TypeError, match="pair"):
        lax.scan(lambda c, y: c, x, x)
    with pytest.raises(fgrad.ShapeError, match="leading length"):
        lax.scan(lambda c, y: (c, y), x, (fnp.ones(3), fnp.ones(4)))
    with pytest.raises(ValueError, match="pass length="):
        lax.scan(lambda c, y: (c, y), x, None)


def test_python_control_flow_error_points_to_lax():
    with pytest.raises(
        fgrad.ConcretizationError, match="fgrad.lax.cond / while_loop / fori_loop / scan"
    ):
        fgrad.jit(lambda x: x if x > 0 else -x)(fnp.array(1.0))


def test_integer_operands_and_xs_are_held_constant():
    def f(x, n, ks):
        y = lax.cond(n > 2, lambda x, n: x * n, lambda x, n: x - n, x, n)
        c, ys = lax.scan(lambda c, k: (c * 1.1 + k * fnp.sum(x), c * k), fnp.array(1.0), ks)
        return fnp.sum(y) + c + fnp.sum(ys)

    def ref(x, n, ks):
        y = x * n if n > 2 else x - n
        c, ys = fnp.array(1.0), []
        for k in ks:
            ys.append(c * k)
            c = c * 1.1 + k * fnp.sum(x)
        return fnp.sum(y) + c + fnp.sum(fnp.stack(ys))

    ks = fnp.array([3, -1, 2])
    for n in (fnp.array(1), fnp.array(4)):
        same_everywhere(f, ref, (X, n, ks), argnums=0, jvp_too=False)
        t_want = fgrad.jvp(lambda x, n=n: ref(x, n, ks), (X,), (fnp.ones(3),))[1]
        t_got = fgrad.jvp(lambda x, n=n: fgrad.jit(f)(x, n, ks), (X,), (fnp.ones(3),))[1]
        close(t_got, t_want)


def test_public_functions_document_examples_and_references():
    for name in lax.__all__:
        doc = getattr(lax, name).__doc__
        assert "Example:" in doc and "References:" in doc and "Raises:" in doc, name


@pytest.mark.parametrize("loop", ["fori_loop", "while_loop", "scan"])
def test_eager_loops_check_carry_dtypes_as_jit_does(loop):
    # float32 carry + an int64 index widens to float64 under numpy's promotion: jit's
    # traced loop rejects that, and the eager loop now says the same.
    x = fnp.ones(3, dtype=fnp.float32)
    if loop == "fori_loop":
        f = lambda x: fgrad.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + i, x)  # noqa: E731
    elif loop == "while_loop":
        f = lambda x: fgrad.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + c[0]), (fnp.array(0), x))[1]  # noqa: E731
    else:
        f = lambda x: fgrad.lax.scan(lambda c, i: (c + i, None), x, fnp.arange(3))[0]  # noqa: E731
    for run in (f, fgrad.jit(f)):
        with pytest.raises(fgrad.DTypeError, match="f64\\[3\\], but .*f32\\[3\\]"):
            run(x)


@pytest.mark.parametrize("unroll", [1, 4, True, False])
def test_scan_accepts_jax_unroll_hint(unroll):
    xs = fnp.array([1.0, 2.0, 3.0])
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, xs, unroll=unroll)
    assert float(carry) == 6.0
    np.testing.assert_array_equal(np.asarray(ys), [0.0, 2.0, 9.0])


def test_scan_unroll_must_be_positive():
    with pytest.raises(TypeError, match="unroll must be a positive int"):
        lax.scan(lambda c, x: (c, x), 0.0, fnp.ones(2), unroll=0)


def test_loop_errors_suggest_a_cast_only_for_dtypes_and_name_index_promotion():
    x = fnp.ones(2, dtype="float32")
    with pytest.raises(fgrad.errors.ShapeError) as shape_error:
        lax.fori_loop(0, 3, lambda i, c: fnp.ones(4, dtype="float32"), x)
    assert "astype" not in str(shape_error.value)
    for run in (lambda f: f(), lambda f: fgrad.jit(f)()):
        with pytest.raises(fgrad.errors.DTypeError, match="fori_loop's int64 index"):
            run(lambda: lax.fori_loop(0, 3, lambda i, c: c + i * 0.1, x))
    fixed = lax.fori_loop(0, 3, lambda i, c: c + i.astype(c.dtype) * 0.1, x)
    assert fixed.dtype == np.float32


def test_cond_takes_a_float_predicate_and_names_what_it_takes():
    assert lax.cond(fnp.asarray(0.5), lambda: 1.0, lambda: 2.0) == 1.0
    with pytest.raises(fgrad.errors.DTypeError, match="a bool, an integer or a float"):
        lax.cond(fnp.asarray(1j), lambda: 1.0, lambda: 2.0)


@pytest.mark.parametrize(
    "loop",
    [
        lambda x: lax.fori_loop(0, 5, lambda i, c: c + x, 0.0),
        lambda x: lax.scan(lambda c, _: (c + x, None), 0.0, None, length=2)[0],
        lambda x: lax.while_loop(lambda c: fnp.sum(c) < 4, lambda c: c + x, 0.0),
    ],
    ids=["fori_loop", "scan", "while_loop"],
)
def test_a_python_number_carry_made_an_array_is_refused_eagerly_as_under_jit(loop):
    # Eagerly the carry silently became an f32[3] (a new-user trial); traced, it raises.
    x = fnp.ones(3, dtype="float32")
    for run in (loop, fgrad.jit(loop)):
        with pytest.raises(fgrad.errors.ShapeError, match=r"leaf 0 has aval f\d\d\[3\], but (the initial carry|init|init_val) has f\d\d\[\]"):
            run(x)
