"""fgrad.debug.print and fgrad.debug.callback: run with the values the program computes,
eagerly and under jit (at every call), vmap (once per example), grad (once, forward pass
only), their compositions and inside loop bodies; graph passes keep them, in order.

Expected lines are what JAX 0.10.2 prints for the same programs (checked by hand:
``jax.debug.print`` under vmap prints one line per example; under grad of a scan one line
per step, in the forward pass only). JAX leaves the order of a vmap's lines unspecified
(unordered effects); fgrad prints them in index order, which the tests pin."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import debug, lax
from fgrad.transforms import passes


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


def _show(fmt="{}"):
    def f(x):
        debug.print(fmt, x)
        return x * 2.0

    return f


def test_eager_print_formats_numpy_values(capsys):
    debug.print("x={x} y={}", fnp.array([1.0, 2.0]), x=3.0)
    assert _lines(capsys) == ["x=3.0 y=[1. 2.]"]


def test_jit_prints_at_every_call_with_that_calls_values(capsys):
    f = fgrad.jit(_show("x={}"))
    np.testing.assert_allclose(np.asarray(f(fnp.array([1.0, 2.0]))), [2.0, 4.0])
    f(fnp.array([5.0, 6.0]))
    f(fnp.array([7.0, 8.0]))
    assert _lines(capsys) == ["x=[1. 2.]", "x=[5. 6.]", "x=[7. 8.]"]
    assert f.cache_info().misses == 1  # traced once: the prints came from the program


def test_jit_keeps_a_print_whose_result_is_unused_and_keeps_order(capsys):
    def f(x):
        y = x + 1.0
        debug.print("first {}", y)
        debug.print("second {}", x)
        debug.print("first {}", y)  # the same print twice: not merged
        return x

    g = fgrad.jit(f)
    g(fnp.array(1.0))
    assert _lines(capsys) == ["first 2.0", "second 1.0", "first 2.0"]
    graph = fgrad.make_graph(f)(fnp.array(1.0))
    optimized = passes.optimize(graph)
    assert [n.op.name for n in optimized.nodes].count("debug_callback") == 3


def test_print_of_constants_runs_at_every_call(capsys):
    f = fgrad.jit(lambda x: (debug.print("hello {}", 2), x)[1])
    f(fnp.array(1.0))
    f(fnp.array(2.0))
    assert _lines(capsys) == ["hello 2", "hello 2"]


def test_vmap_prints_once_per_example(capsys):
    fgrad.vmap(_show("{}"))(fnp.array([1.0, 2.0, 3.0]))
    assert _lines(capsys) == ["1.0", "2.0", "3.0"]


def test_vmap_with_an_unmapped_argument(capsys):
    fgrad.vmap(lambda x, y: debug.print("{} {}", x, y), in_axes=(0, None))(
        fnp.array([1.0, 2.0]), fnp.array(5.0)
    )
    assert _lines(capsys) == ["1.0 5.0", "2.0 5.0"]


def test_nested_vmap_prints_examples_outer_major(capsys):
    x = fnp.reshape(fnp.arange(6.0), (2, 3))
    fgrad.vmap(fgrad.vmap(lambda v: debug.print("{}", v)))(x)
    assert _lines(capsys) == [str(float(v)) for v in range(6)]


def test_jit_of_vmap_prints_per_example_at_every_call(capsys):
    f = fgrad.jit(fgrad.vmap(_show("{}")))
    f(fnp.array([1.0, 2.0]))
    f(fnp.array([3.0, 4.0]))
    assert _lines(capsys) == ["1.0", "2.0", "3.0", "4.0"]


def test_grad_prints_forward_once_and_is_not_differentiated(capsys):
    def f(x):
        debug.print("x={}", x)
        debug.callback(lambda v: None, x * x)
        return x**3

    assert float(fgrad.grad(f)(2.0)) == 12.0  # 3 x^2, untouched by the callbacks
    assert _lines(capsys) == ["x=2.0"]


def test_grad_of_jit_and_jit_of_grad(capsys):
    f = lambda x: (debug.print("x={}", x), fnp.sin(x))[1]  # noqa: E731
    for g in (fgrad.grad(fgrad.jit(f)), fgrad.jit(fgrad.grad(f))):
        np.testing.assert_allclose(float(g(0.5)), np.cos(0.5), rtol=1e-15)
        np.testing.assert_allclose(float(g(1.5)), np.cos(1.5), rtol=1e-15)
    assert _lines(capsys) == ["x=0.5", "x=1.5"] * 2


def test_jvp_prints_primal(capsys):
    out, t = fgrad.jvp(_show("{}"), (fnp.array(3.0),), (fnp.array(1.0),))
    assert (float(out), float(t)) == (6.0, 2.0)
    assert _lines(capsys) == ["3.0"]


def test_vmap_of_grad(capsys):
    g = fgrad.vmap(fgrad.grad(lambda x: (debug.print("{}", x), x * x)[1]))
    np.testing.assert_allclose(np.asarray(g(fnp.array([1.0, 2.0]))), [2.0, 4.0])
    assert _lines(capsys) == ["1.0", "2.0"]


def _body(c, x):
    debug.print("c={c} x={x}", c=c, x=x)
    return c + x, c * x


_SCAN_LINES = ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]


@pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit], ids=["eager", "jit"])
def test_scan_body_prints_every_step(capsys, wrap):
    carry, ys = wrap(lambda xs: lax.scan(_body, 0.0, xs))(fnp.arange(3.0))
    assert float(carry) == 3.0
    np.testing.assert_allclose(np.asarray(ys), [0.0, 0.0, 2.0])
    assert _lines(capsys) == _SCAN_LINES


@pytest.mark.parametrize(
    "transform", [fgrad.grad, lambda f: fgrad.jit(fgrad.grad(f))], ids=["grad", "jit_grad"]
)
def test_grad_of_scan_prints_in_the_forward_pass_only(capsys, transform):
    def loss(xs):
        carry, ys = lax.scan(_body, 0.0, xs)
        return carry + fnp.sum(ys)

    # d/dx of c_3 + sum(c_k x_k), with c_k = x_0 + ... + x_{k-1}: 1 + sum_{k>j} x_k + c_j.
    xs = np.arange(3.0)
    want = [1 + xs[j + 1 :].sum() + xs[:j].sum() for j in range(3)]
    np.testing.assert_allclose(np.asarray(transform(loss)(fnp.asarray(xs))), want, rtol=1e-14)
    assert _lines(capsys) == _SCAN_LINES


def test_jvp_of_scan_prints_once_per_step(capsys):
    _, t = fgrad.jvp(lambda xs: lax.scan(_body, 0.0, xs)[0], (fnp.arange(3.0),), (fnp.ones(3),))
    assert float(t) == 3.0
    assert _lines(capsys) == _SCAN_LINES


def test_vmap_of_scan_prints_per_example_and_step(capsys):
    xs = fnp.array([[1.0, 2.0], [3.0, 4.0]])
    fgrad.vmap(lambda x: lax.scan(lambda c, v: (debug.print("{}", v), (c, c))[1], 0.0, x))(xs)
    # The batched scan runs each step for every example before the next step: step-major.
    assert _lines(capsys) == ["1.0", "3.0", "2.0", "4.0"]


@pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit], ids=["eager", "jit"])
def test_fori_loop_body_prints(capsys, wrap):
    def f(n):
        return lax.fori_loop(0, n, lambda i, c: (debug.print("i={} c={}", i, c), c + 1.0)[1], 0.0)

    assert float(wrap(f)(fnp.array(3))) == 3.0
    assert _lines(capsys) == ["i=0 c=0.0", "i=1 c=1.0", "i=2 c=2.0"]


def test_print_inside_cond_branch_under_jit_and_grad(capsys):
    def f(x):
        return lax.cond(x > 0, lambda v: (debug.print("pos {}", v), v * v)[1], lambda v: -v, x)

    g = fgrad.jit(fgrad.grad(f))
    assert float(g(3.0)) == 6.0 and float(g(-1.0)) == -1.0
    assert _lines(capsys) == ["pos 3.0"]


def test_print_of_an_enclosing_jits_value_runs_in_the_loop_body(capsys):
    """A body that prints a value it closes over prints at every step, not once."""

    def f(x):
        return lax.fori_loop(0, 2, lambda i, c: (debug.print("x={}", x), c + x)[1], 0.0)

    assert float(fgrad.jit(f)(fnp.array(1.5))) == 3.0
    assert _lines(capsys) == ["x=1.5", "x=1.5"]


def test_callback_gets_numpy_copies_of_pytrees():
    seen = []
    f = fgrad.jit(lambda p: (debug.callback(lambda t, tag: seen.append((t, tag)), p, "s"), p["w"] + 1.0)[1])
    for k in range(2):
        f({"w": fnp.full(3, float(k)), "b": fnp.array(2.0)})
    assert [tag for _, tag in seen] == ["s", "s"]
    assert all(type(t["w"]) is np.ndarray for t, _ in seen)
    # The program's buffers are reused between calls; what the callback kept is a copy.
    np.testing.assert_array_equal(seen[0][0]["w"], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(seen[1][0]["w"], [1.0, 1.0, 1.0])


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="debug.print: fmt must be a str"):
        debug.print(3)
    with pytest.raises(TypeError, match="debug.callback: callback must be callable"):
        debug.callback("print", 1.0)


def test_fusions_reordering_keeps_effects_in_program_order():
    """``fuse_graph`` reorders nodes where a group needs it (a group sits at its first
    node but waits for its inputs); two callbacks must still run in their order."""
    from fgrad.core.graph import Node, Var
    from fgrad.ops.callback import Host, debug_callback
    from fgrad.ops.elementwise import add, negative
    from fgrad.tensor import ShapeDtype
    from fgrad.transforms.fusion import _toposort

    f64, token = ShapeDtype((), np.float64), ShapeDtype((), np.bool_)
    x, v, g, t1, t2 = Var(f64), Var(f64), Var(f64), Var(token), Var(token)
    params = {"callback": Host(lambda *a: None, "noop"), "levels": ()}
    group = Node(add, [v, 1.0], {}, [g])  # waits for v, made after it in the list
    first = Node(debug_callback, [g], params, [t1])
    second = Node(debug_callback, [x], params, [t2])  # ready at once
    make_v = Node(negative, [x], {}, [v])
    order = _toposort([group, first, second, make_v])
    assert order.index(first) < order.index(second)
    assert order.index(make_v) < order.index(group) < order.index(first)
