"""jit traces Python float and complex arguments as weakly typed scalars, as JAX does.

A new value reuses the compiled program, and every result (value, dtype, Python type)
is the one eager code gives with the same Python number. References: JAX's weak types
(https://docs.jax.dev/en/latest/type_promotion.html#weak-types) and numpy 2's NEP 50.
"""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax, nn, optim, random
from fgrad.core.op import REGISTRY
from fgrad.errors import ConcretizationError, DeletedError, NaNError

KEY = random.key(0)

EXPRESSIONS = {
    "x * s": lambda x, s: x * s,
    "x * (s * 2)": lambda x, s: x * (s * 2),
    "x * (1 - s)": lambda x, s: x * (1 - s),
    "x / s": lambda x, s: x / s,
    "abs(x) ** s": lambda x, s: fnp.abs(x) ** s,
    "s ** x": lambda x, s: s**x,
    "x * -s": lambda x, s: x * -s,
    "x * abs(s)": lambda x, s: x * abs(s),
    "x * (s // 1)": lambda x, s: x * (s // 1),
    "x * (s % 0.3)": lambda x, s: x * (s % 0.3),
    "x * round(s, 1)": lambda x, s: x * round(s, 1),
    "x * round(s)": lambda x, s: x * round(s),
    "x * (s * s / 3)": lambda x, s: x * (s * s / 3),
    "where": lambda x, s: fnp.where(x > 0, x, s),
    "maximum": lambda x, s: fnp.maximum(x, s),
    "clip": lambda x, s: fnp.clip(x, -s, s),
    "where(s > 0.5)": lambda x, s: fnp.where(s > 0.5, x, -x),
    "x * exp(s)": lambda x, s: x * fnp.exp(s),  # an op's result is an array (float64)
    "x * asarray(s)": lambda x, s: x * fnp.asarray(s),
    "x * asarray(s, f32)": lambda x, s: x * fnp.asarray(s, dtype="float32"),
    "x * array(s)": lambda x, s: x * fnp.array(s),
    "full": lambda x, s: fnp.full((3,), s),
    "full_like": lambda x, s: fnp.full_like(x, s),
    "pad": lambda x, s: fnp.pad(x, 1, constant_values=s),
    "at[].set": lambda x, s: x.at[0].set(s),
    "at[].add": lambda x, s: x.at[1].add(s * 2),
    "stack": lambda x, s: fnp.stack([x[0], s]),
    "array of list": lambda x, s: fnp.array([s, 1.0]),
    "sum * s": lambda x, s: fnp.sum(x) * s,
    "sqrt(s) * x": lambda x, s: fnp.sqrt(s) * x,
    "softmax(x / s)": lambda x, s: nn.softmax(x / s),
    "uniform(minval=s)": lambda x, s: random.uniform(KEY, (3,), minval=-s, maxval=s),
    "normal * s": lambda x, s: random.normal(KEY, (3,), dtype=x.dtype) * s,
    "rms_norm(eps=s)": lambda x, s: nn.rms_norm(x, eps=s * 1e-3),
    "complex": lambda x, s: x * (s * 1j),
    "outputs": lambda x, s: (x, s * 2, -s, s > 0.5),
    "cond": lambda x, s: lax.cond(s > 0.5, lambda v: v * s, lambda v: v - s, x),
    "fori_loop": lambda x, s: lax.fori_loop(0, 3, lambda i, v: v * s + 1, x),
    "scan carry s": lambda x, s: lax.scan(lambda c, xi: (c * s + xi, c), s, x),
    "grad inside": lambda x, s: fgrad.grad(lambda w: fnp.sum(w * w) * s)(x),
    "vmap inside": lambda x, s: fgrad.vmap(lambda v: v * s - s)(x),
}


def _same(eager, jitted, rtol=1e-6):
    e_leaves, e_tree = fgrad.tree.flatten(eager)
    j_leaves, j_tree = fgrad.tree.flatten(jitted)
    assert e_tree == j_tree
    for e, j in zip(e_leaves, j_leaves):
        if isinstance(e, fgrad.Tensor):
            assert isinstance(j, fgrad.Tensor)
            assert j.dtype == e.dtype and j.shape == e.shape
            np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=rtol)
        else:  # a Python number eagerly: a 0-d Tensor of numpy's dtype for it, as JAX's
            # jit returns a weakly typed 0-d array
            assert isinstance(j, fgrad.Tensor) and j.shape == ()
            assert j.dtype == np.result_type(type(e)), (j.dtype, type(e))
            assert j.item() == pytest.approx(e)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_same_results_as_eager_and_one_trace_for_all_values(name, dtype):
    f = EXPRESSIONS[name]
    jf = fgrad.jit(f)
    x = fnp.asarray([0.5, -1.0, 2.0], dtype=dtype)
    for s in (0.7, 0.3, 1.5):
        _same(f(x, s), jf(x, s))
    assert jf.cache_info().misses == 1


def test_the_graph_shows_the_weak_input_and_python_arithmetic():
    g = fgrad.jit(lambda x, lr: x - (lr * 2) * x).graph(fnp.ones(2, dtype="float32"), 0.1)
    text = str(g)
    assert "b:weak f64[]" in text
    # Python's operator on it records the op, its result weak; with the float32 array the
    # weak value is cast to float32 first, as promotion says.
    assert "c:weak f64[] = multiply b 2" in text and "d:f32[] = astype c" in text
    assert "f32[2] = multiply d a" in text


def test_optimisers_take_a_traced_learning_rate_bit_for_bit():
    params = {"w": fnp.asarray(np.linspace(-1, 1, 12).reshape(3, 4), dtype="float32")}
    grads = {"w": fnp.full((3, 4), 0.25, dtype="float32")}

    def step(params, grads, lr, b1):
        opt = optim.chain(optim.clip_by_global_norm(10 * lr), optim.adam(lr, b1=b1))
        updates, _ = opt.update(grads, opt.init(params), params)
        return optim.apply_updates(params, updates)

    jstep = fgrad.jit(step)
    for lr in (1e-3, 3e-3, 1e-2):
        eager, jitted = step(params, grads, lr, 0.9), jstep(params, grads, lr, 0.9)
        assert jitted["w"].dtype == np.float32
        np.testing.assert_array_equal(np.asarray(jitted["w"]), np.asarray(eager["w"]))
    assert jstep.cache_info().misses == 1


def test_python_control_flow_on_a_traced_float_names_its_origin():
    with pytest.raises(ConcretizationError, match="Python float or complex argument"):
        fgrad.jit(lambda x, s: x if s > 0 else -x)(fnp.ones(2), 0.5)
    with pytest.raises(ConcretizationError, match="Python float or complex argument"):
        fgrad.jit(lambda x, s: x * float(s))(fnp.ones(2), 0.5)
    # Marked static, it is a constant again.
    out = fgrad.jit(lambda x, s: x if s > 0 else -x, static_argnums=1)(fnp.ones(2), -0.5)
    np.testing.assert_array_equal(np.asarray(out), [-1.0, -1.0])


def test_an_op_parameter_must_not_be_traced():
    full_like = REGISTRY["full_like"]
    with pytest.raises(ConcretizationError, match=r"op 'full_like' takes 'fill_value' as a compile-time"):
        fgrad.jit(lambda x, s: full_like(x, fill_value=s, dtype=None))(fnp.ones(2), 0.5)
    with pytest.raises(ConcretizationError, match="norm: ord is a traced value"):
        fgrad.jit(lambda x, p: fnp.linalg.norm(x, ord=p))(fnp.ones(2), 3.0)


def test_ints_and_bools_stay_constants():
    f = fgrad.jit(lambda x, n, flag: fnp.zeros(n) + (x if flag else -x))
    assert f(fnp.ones(1), 3, True).shape == (3,)
    assert f(fnp.ones(1), 4, False).shape == (4,)
    assert f.cache_info().misses == 2


def test_compositions_with_float_arguments():
    x = fnp.asarray([0.5, -1.0, 2.0], dtype="float32")

    def loss(w, s):
        return fnp.sum(fnp.tanh(w * s) ** 2) * (1 - s)

    want = fgrad.grad(loss)(x, 0.3)
    for got in (
        fgrad.jit(fgrad.grad(loss))(x, 0.3),
        fgrad.grad(fgrad.jit(loss))(x, 0.3),
        fgrad.jit(fgrad.jit(fgrad.grad(loss)))(x, 0.3),
    ):
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    h = fgrad.hessian(lambda w: fgrad.jit(loss)(w, 0.3))(x)
    np.testing.assert_allclose(np.asarray(h), np.asarray(fgrad.hessian(lambda w: loss(w, 0.3))(x)), rtol=1e-5)
    xs = fnp.stack([x, 2 * x])
    per_row = fgrad.vmap(fgrad.jit(loss), in_axes=(0, None))(xs, 0.3)
    np.testing.assert_allclose(np.asarray(per_row), [float(loss(x, 0.3)), float(loss(2 * x, 0.3))], rtol=1e-6)
    assert per_row.dtype == np.float32


def test_donation_and_debug_nans_with_float_arguments():
    step = fgrad.jit(lambda w, lr, g: w - lr * g, donate_argnums=0)
    w = fnp.ones(1024, dtype="float32")
    data = id(w._data)
    out = step(w, 0.5, fnp.ones(1024, dtype="float32"))
    assert id(out._data) == data and out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out)[:2], [0.5, 0.5])
    with pytest.raises(DeletedError):
        w + 1
    fgrad.config.debug_nans = True
    try:
        f = fgrad.jit(lambda x, s: fnp.log(x * s))
        f(fnp.ones(2), 2.0)
        with pytest.raises(NaNError, match="log"):
            f(fnp.ones(2), -2.0)
    finally:
        fgrad.config.debug_nans = False


def test_keyword_and_positional_floats_share_the_fast_path_result():
    f = fgrad.jit(lambda x, s=1.0: x * s)
    x = fnp.ones(2, dtype="float32")
    np.testing.assert_array_equal(np.asarray(f(x, 0.5)), [0.5, 0.5])
    np.testing.assert_array_equal(np.asarray(f(x, s=0.25)), [0.25, 0.25])
    np.testing.assert_array_equal(np.asarray(f(x, 0.125)), [0.125, 0.125])
    assert f(x, s=2.0).dtype == np.float32


def test_loops_settle_a_weak_initial_carry_as_jax_does():
    x = fnp.ones(3, dtype="float32")
    scan_body = lambda c, xi: (c + xi, c * xi)
    cases = [
        lambda x: lax.scan(scan_body, 0.0, x),
        lambda x: lax.fori_loop(0, 3, lambda i, c: c + x[i], 0.0),
        lambda x: lax.while_loop(lambda c: c < 2.0, lambda c: c + x[0], 0.0),
    ]
    for f in cases:
        _same(f(x), fgrad.jit(f)(x))
        for leaf in fgrad.tree.leaves(fgrad.jit(f)(x)):
            assert leaf.dtype == np.float32


def test_a_real_power_that_python_makes_complex_is_nan_as_in_jax():
    f = fgrad.jit(lambda x, s: x * (s**0.5))
    x = fnp.ones(2, dtype="float32")
    out = f(x, -1.3)
    assert out.dtype == np.float32 and np.isnan(np.asarray(out)).all()
    np.testing.assert_array_equal(np.asarray(f(x, 4.0)), [2.0, 2.0])


def test_small_consistency_fixes_found_by_fuzzing():
    h = fnp.asarray([1.0, 2.0, 2.0], dtype="float16")
    assert float(fgrad.jit(fnp.linalg.norm)(h)) == float(fnp.linalg.norm(h)) == 3.0
    assert fnp.real(-1.3).shape == () and fnp.imag(2.0).dtype == np.float64
    assert complex(fnp.array([1 + 2j]).conjugate()[0]) == 1 - 2j


# ------------------------------------------------- regressions found by differential fuzzing


def _check(f, *args, values=(0.7, -1.3, 0.0)):
    jf = fgrad.jit(f)
    for s in values:
        _same(f(*args, s), jf(*args, s), rtol=1e-12)
    assert jf.cache_info().misses == 1


X = fnp.asarray([1.0, 2.0], dtype="float64")


def test_grad_and_jvp_with_respect_to_a_traced_float():
    # The traced float was differentiated as a weak scalar, whose Python arithmetic
    # records no derivative: the gradient came out 0.
    _check(lambda x, s: fgrad.grad(lambda c: c * c * 3.0)(s), X)
    _check(lambda x, s: fgrad.grad(lambda c: c * fnp.sum(x))(s), X)
    _check(lambda x, s: fgrad.jvp(lambda c: c * s, (s,), (s,)), X)
    _check(lambda x, s: fgrad.jvp(lambda c: c * 2.0, (s,), (1.0,)), X)
    _check(lambda x, s: fgrad.value_and_grad(lambda w, c: fnp.sum(w) * c, argnums=(0, 1))(x, s), X)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_through_a_loop_with_a_traced_float_initial_carry(dtype):
    # A float64 body output left the float64 weak carry weak, so `c * 0.5` in the body was
    # Python arithmetic without derivative: jit(grad) lost all but the last iteration.
    x = fnp.asarray([1.0, 2.0], dtype=dtype)

    def loss(x, s):
        return lax.fori_loop(0, 3, lambda i, c: c * 0.5 + fnp.sum(x), s)

    def scan_loss(x, s):
        return lax.scan(lambda c, v: (c * 0.5 + v, c), s, x)[0]

    for f in (loss, scan_loss):
        _check(lambda x, s, f=f: fgrad.grad(f)(x, s), x)
        _check(f, x)


def test_asarray_of_a_list_holding_a_traced_value():
    _check(lambda x, s: fnp.asarray([s, 2.0]), X)
    _check(lambda x, s: fnp.asarray((s,)), X)
    _check(lambda x, s: fnp.asarray([s, 1.0], dtype="float32"), X)
    _check(lambda x, s: fnp.asarray([x[0], s]), X)
    _check(lambda x, s: fnp.interp(x, fnp.asarray([0.0, 3.0]), fnp.asarray([s, 2.0])), X)
    x32 = fnp.asarray([1.0, 2.0], dtype="float32")
    _check(lambda x, s: fnp.asarray([[x[0], s], [1, 2]]), x32)


def test_real_and_imag_of_a_traced_float_are_python_numbers():
    x32 = fnp.asarray([1.0, 2.0], dtype="float32")
    _check(lambda x, s: (s.real, s.imag, x * s.imag, x * s.real), x32)
    _check(lambda x, s: (s.real, s.imag, x * s.imag, x * s.real), x32, values=(0.5 + 1j, -2j))
    # Of a Tensor they stay ops.
    assert isinstance(fgrad.jit(lambda x: x.imag)(x32), fgrad.Tensor)


# ------------------------------------------------------- found by the second new-user trial


FNP_OF_A_FLOAT = [
    "abs", "absolute", "negative", "positive", "real", "imag", "flip", "transpose", "conj",
    "squeeze", "ravel", "atleast_1d", "sum", "mean", "round", "sign", "square", "exp",
]


@pytest.mark.parametrize("name", FNP_OF_A_FLOAT + ["stop_gradient"])
def test_an_fnp_function_of_a_traced_float_is_an_array_as_eagerly(name):
    fn = getattr(fgrad, name) if name == "stop_gradient" else getattr(fnp, name)
    f = lambda x, s: (x * fn(s), fn(s))
    x = fnp.ones(2, dtype="float32")
    _same(f(x, 0.5), fgrad.jit(f)(x, 0.5))
    assert f(x, 0.5)[0].dtype == np.float64  # numpy's rule for an array made of a float


def test_python_unary_operators_on_a_traced_float_stay_weak():
    f = lambda x, s: (x * -s, x * +s, x * abs(s), -s, abs(s))
    x = fnp.ones(2, dtype="float32")
    _same(f(x, -0.5), fgrad.jit(f)(x, -0.5))
    assert fgrad.jit(f)(x, -0.5)[0].dtype == np.float32


def test_make_graph_and_eval_shape_trace_python_numbers_as_jit_does():
    x = fnp.ones(3, dtype="float32")
    g = fgrad.make_graph(lambda x, lr, n: x * (1 - lr) * n)(x, 0.1, 3)
    assert [str(v.aval) for v in g.invars] == ["f32[3]", "weak f64[]"]  # the int: a constant
    assert str(g.outvars[0].aval) == "f32[3]"
    np.testing.assert_allclose(np.asarray(g.evaluate(x, 0.5, None)), [1.5, 1.5, 1.5])
    # The loop jit would run: a scan for a constant bound, not a while_loop.
    pw = fgrad.make_graph(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, x))(x, 5)
    assert [node.op.name for node in pw.nodes] == ["scan"]
    assert fgrad.eval_shape(lambda x, lr: x * (1 - lr), x, 0.1) == fgrad.ShapeDtype((3,), np.dtype(np.float32))
    with pytest.raises(ConcretizationError):
        fgrad.eval_shape(lambda x, lr: x if lr > 0 else -x, x, 0.1)
    assert fgrad.eval_shape(lambda n: fnp.zeros(n), 4).shape == (4,)  # an int is a constant


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(lambda w, lr: w * lax.fori_loop(0, 3, lambda i, c: c * lr, 1.0), id="fori"),
        pytest.param(lambda w, lr: w * lax.scan(lambda c, x: (c * lr, c), 1.0, None, length=3)[0], id="scan"),
        pytest.param(lambda w, lr: w * lax.while_loop(lambda c: c < 10.0, lambda c: c / lr, 1.0), id="while"),
        pytest.param(lambda w, lr: w * lax.cond(fnp.sum(w) > 0, lambda: lr, lambda: 2.0), id="cond"),
    ],
)
def test_a_loop_or_cond_result_that_stays_a_python_number_stays_weak(f):
    w = fnp.ones(3, dtype="float32")
    _same(f(w, 0.5), fgrad.jit(f)(w, 0.5))
    assert fgrad.jit(f)(w, 0.5).dtype == np.float32
    g = fgrad.jit(fgrad.grad(lambda w, lr: fnp.sum(f(w, lr))))(w, 0.5)
    np.testing.assert_allclose(np.asarray(g), np.asarray(fgrad.grad(lambda w: fnp.sum(f(w, 0.5)))(w)))
    batched = fgrad.vmap(fgrad.jit(f), in_axes=(0, None))(fnp.ones((2, 3), dtype="float32"), 0.5)
    np.testing.assert_allclose(np.asarray(batched), np.stack([np.asarray(f(w, 0.5))] * 2))


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize(
    "other",
    [
        pytest.param(lambda w: 2.0, id="number"),
        pytest.param(lambda w: w[0], id="float32"),
        pytest.param(lambda w: fnp.asarray(2.0), id="float64"),
    ],
)
def test_cond_branches_mixing_a_traced_float_with_other_results(other, sign):
    def f(w, lr):
        return w * lax.cond(fnp.sum(w) > 0, lambda: lr, lambda: other(w))

    w = sign * fnp.ones(3, dtype="float32")
    jitted = fgrad.jit(f)(w, 0.5)
    eager = f(w, 0.5)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager))
    if isinstance(other(w), fgrad.Tensor) and other(w).dtype == np.float64:
        # Traced, the branches' results unify as in JAX (float64); eagerly only the branch
        # taken runs, so its result decides.
        assert jitted.dtype == np.float64
    else:
        assert jitted.dtype == eager.dtype == np.float32


def test_a_weak_carry_is_weak_inside_the_body_too():
    # The carry c[0] stays a Python number eagerly, so c[1] + c[0] stays float32 (fuzzing).
    def f(a0, s0):
        v0 = a0.at[0].add(s0)
        return lax.fori_loop(0, 2, lambda i, c: (c[0] * s0, c[1] + c[0]), (s0, v0))

    a0 = fnp.ones(1, dtype="float32")
    _same(f(a0, 0.7), fgrad.jit(f)(a0, 0.7))
    assert fgrad.jit(f)(a0, 0.7)[1].dtype == np.float32


def test_scan_outputs_stacked_from_a_weak_carry():
    xs = fnp.ones(4, dtype="float32")
    f = lambda xs, lr: lax.scan(lambda c, x: (c * lr, (c, x * c)), 1.0, xs)
    _same(f(xs, 0.5), fgrad.jit(f)(xs, 0.5))


@pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit], ids=["eager", "jit"])
def test_vmap_of_a_loop_whose_python_counter_runs_per_example(wrap):
    # The counter stays a Python number (weak); under vmap the predicate differs between
    # examples, so the counter is mapped too and its Python arithmetic runs on arrays.
    def f(x):
        return lax.while_loop(lambda c: fnp.sum(c[0]) < 5.0, lambda c: (c[0] * 2, c[1] + 1), (x, 0))

    xs = fnp.asarray([[0.5], [1.0], [3.0]])
    y, n = fgrad.vmap(wrap(f))(xs)
    np.testing.assert_array_equal(np.asarray(n), [4, 3, 1])
    np.testing.assert_array_equal(np.asarray(y), [[8.0], [8.0], [6.0]])


# --------------------------------------------------------- found by the third bug hunt


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(lambda x, a, b: x * (((a > 0) & (b > 0)) * 2.5 + 1.0), id="and"),
        pytest.param(lambda x, a, b: x * (((a > 0) | (b > 0)) * 2.5 + 1.0), id="or"),
        pytest.param(lambda x, a, b: x * (((a > 0) ^ (b > 0)) * 2.5 + 1.0), id="xor"),
        pytest.param(lambda x, a, b: x * ~(a > 0), id="invert"),
        pytest.param(lambda x, a, b: (x * a.conjugate(), b.conjugate()), id="conjugate"),
        pytest.param(lambda x, a, b: ((a > 0) & (b > 0), ~(a > 0)), id="python bools out"),
    ],
)
def test_logical_operators_and_conjugate_of_traced_floats_as_python(f):
    x = fnp.asarray([1.0, 2.0, 3.0], dtype="float32")
    for a, b in ((0.5, -0.25), (-1.0, 2.0)):
        _same(f(x, a, b), fgrad.jit(f)(x, a, b))


@pytest.mark.parametrize(
    "make, reference",
    [
        pytest.param(
            lambda a, b: fnp.linspace(a, b, 5, dtype="int32"),
            lambda a, b: np.linspace(a, b, 5, dtype="int32"),
            id="int dtype floors",
        ),
        pytest.param(
            lambda a, b: fnp.linspace(fnp.asarray(np.float32(-2.5)), b, 4),
            lambda a, b: np.linspace(np.float32(-2.5), b, 4),
            id="float32 end",
        ),
        pytest.param(
            lambda a, b: fnp.linspace(fnp.asarray([a, 1.0, 2.0]), b, 4),
            lambda a, b: np.linspace(np.asarray([a, 1.0, 2.0]), b, 4),
            id="array start",
        ),
        pytest.param(
            lambda a, b: fnp.linspace(0.0, b * 5e-324, 5),
            lambda a, b: np.linspace(0.0, b * 5e-324, 5),
            id="subnormal step",
        ),
    ],
)
def test_linspace_with_tensor_or_traced_ends_follows_numpy(make, reference):
    a, b = -2.5, 7.9
    want = reference(a, b)
    for got in (make(a, b), fgrad.jit(make)(a, b)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(lambda x, v: optim.apply_updates(x, optim.sgd(0.1, momentum=v).update(x, optim.sgd(0.1, momentum=v).init(x), x)[0]), id="sgd momentum"),
        pytest.param(lambda x, v: optim.apply_updates(x, optim.rmsprop(0.1, momentum=v).update(x, optim.rmsprop(0.1, momentum=v).init(x), x)[0]), id="rmsprop momentum"),
        pytest.param(lambda x, v: x * optim.constant_schedule(v)(3), id="constant"),
        pytest.param(lambda x, v: x * optim.cosine_decay_schedule(v, 10)(3), id="cosine"),
        pytest.param(lambda x, v: x * optim.linear_warmup(v, 10)(3), id="warmup"),
        pytest.param(lambda x, v: x * optim.warmup_cosine_decay_schedule(0.0, v, 2, 10)(5), id="warmup cosine"),
    ],
)
def test_optimiser_hyperparameters_and_schedules_take_traced_floats(f):
    x = fnp.ones((2, 3), dtype="float32")
    for v in (0.5, 0.25):
        _same(f(x, v), fgrad.jit(f)(x, v))
