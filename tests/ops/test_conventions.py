"""One test per derivative convention at an edge case, each naming the behaviour matched.

Expected values come from the maths, and from JAX's and PyTorch's documented rules where the
maths leaves a choice (a subgradient at a kink, 0 * inf in an unselected branch).
"""

import math
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad import nn

INF = float("inf")


@pytest.fixture
def strict_numerics():
    """Fail on any numpy RuntimeWarning (overflow, invalid value) in the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def test_abs_derivative_at_zero_is_zero():
    """abs'(0) = 0: the sign subgradient of PyTorch and autograd (JAX gives 1 via select)."""
    assert float(fgrad.grad(fnp.abs)(0.0)) == 0.0
    assert float(fgrad.grad(fnp.abs)(-2.0)) == -1.0
    _, t = fgrad.jvp(fnp.abs, (fnp.array(0.0),), (fnp.array(1.0),))
    assert float(t) == 0.0


def test_abs_complex_vjp_is_unit_conjugate():
    """|z| for complex z: the cotangent of 1 is conj(z) / |z|, as JAX's abs rule (no ct
    conjugation); 0 at z = 0 rather than NaN."""
    _, f_vjp = fgrad.vjp(fnp.abs, fnp.array(3.0 + 4.0j))
    assert_allclose(complex(f_vjp(fnp.array(1.0))[0]), 0.6 - 0.8j)
    _, f_vjp = fgrad.vjp(fnp.abs, fnp.array(0.0j))
    assert complex(f_vjp(fnp.array(1.0))[0]) == 0


def test_sqrt_derivative_at_zero_is_inf(strict_numerics):
    """sqrt'(0) = +inf, as JAX and PyTorch (1 / (2 * sqrt(0)))."""
    with np.errstate(divide="ignore"):
        assert float(fgrad.grad(fnp.sqrt)(0.0)) == INF


def test_relu_derivative_at_zero_is_zero():
    """relu'(0) = 0, as JAX's custom_jvp relu and PyTorch (not maximum's 0.5)."""
    assert float(fgrad.grad(nn.relu)(0.0)) == 0.0
    assert float(fgrad.grad(nn.relu)(1e-300)) == 1.0
    assert float(fgrad.grad(nn.relu)(-1.0)) == 0.0


def test_maximum_and_minimum_ties_split_evenly():
    """maximum/minimum at x == y give 0.5 to each input, JAX's balanced rule for lax.max.
    (PyTorch also splits ties evenly for torch.maximum.)"""
    for op in (fnp.maximum, fnp.minimum):
        gx, gy = fgrad.grad(op, argnums=(0, 1))(1.5, 1.5)
        assert (float(gx), float(gy)) == (0.5, 0.5)
    gx, gy = fgrad.grad(fnp.maximum, argnums=(0, 1))(2.0, 1.0)
    assert (float(gx), float(gy)) == (1.0, 0.0)
    gx, gy = fgrad.grad(fnp.minimum, argnums=(0, 1))(2.0, 1.0)
    assert (float(gx), float(gy)) == (0.0, 1.0)


def test_clip_at_the_bound_follows_jax():
    """jnp.clip is minimum(maximum(x, lo), hi), so at x == lo the gradient is 0.5 (the tie
    rule); 1 strictly inside and 0 outside. (torch.clamp would give 1 at the bound.)"""
    g = fgrad.grad(lambda x: fnp.sum(fnp.clip(x, 0.0, 1.0)))(fnp.array([-1.0, 0.0, 0.5, 1.0, 2.0]))
    assert_allclose(np.asarray(g), [0.0, 0.5, 1.0, 0.5, 0.0])


def test_where_masks_the_nan_branch_cotangent():
    """The gradient of where(x > 0, log(x), 0.) at x = -1 is 0: the unselected branch gets a
    zero cotangent, and log's rule ct / x is finite there (JAX gives 0 too)."""

    def f(x):
        return fnp.where(x > 0, fnp.log(x), 0.0)

    with np.errstate(invalid="ignore"):  # the forward log(-1) itself
        assert float(fgrad.grad(f)(-1.0)) == 0.0
        _, t = fgrad.jvp(f, (fnp.array(-1.0),), (fnp.array(1.0),))
    assert float(t) == 0.0
    assert float(fgrad.grad(f)(2.0)) == 0.5


def test_where_with_infinite_branch_derivative_is_nan_and_double_where_fixes_it():
    """where(x > 0, sqrt(x), 0.) at 0 has gradient NaN, as JAX documents (0 * inf in the
    unselected branch); the "double where" trick, sqrt(where(x > 0, x, 1.)), gives 0."""

    def naive(x):
        return fnp.where(x > 0, fnp.sqrt(x), 0.0)

    def double_where(x):
        safe = fnp.where(x > 0, x, 1.0)
        return fnp.where(x > 0, fnp.sqrt(safe), 0.0)

    with np.errstate(divide="ignore", invalid="ignore"):
        assert math.isnan(float(fgrad.grad(naive)(0.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert float(fgrad.grad(double_where)(0.0)) == 0.0
        assert float(fgrad.grad(double_where)(4.0)) == 0.25


def test_softmax_of_large_inputs_is_finite_and_correct(strict_numerics):
    """softmax([1000, 1000, 999]) equals softmax([1, 1, 0]) with finite gradients (JAX and
    PyTorch subtract the max; the naive form gives inf / inf = NaN)."""
    x = fnp.array([1000.0, 1000.0, 999.0])
    ref = np.exp([1.0, 1.0, 0.0]) / np.exp([1.0, 1.0, 0.0]).sum()
    assert_allclose(np.asarray(nn.softmax(x)), ref, rtol=1e-14)
    w = fnp.array([1.0, 2.0, 3.0])
    g = fgrad.grad(lambda x: fnp.sum(nn.softmax(x) * w))(x)
    want = ref * (np.array([1.0, 2.0, 3.0]) - np.dot(ref, [1.0, 2.0, 3.0]))  # s * (w - s.w)
    assert_allclose(np.asarray(g), want, rtol=1e-12)
    _, t = fgrad.jvp(nn.softmax, (x,), (w,))
    assert_allclose(np.asarray(t), want, rtol=1e-12)  # J is symmetric


def test_log_softmax_of_large_inputs_is_finite_and_correct(strict_numerics):
    """log_softmax([1000, 0]) = [0, -1000] exactly, with gradient ct - softmax * sum(ct)
    (JAX's and PyTorch's stable form; the naive log(exp(x) / sum) gives NaN)."""
    x = fnp.array([1000.0, 0.0])
    assert_allclose(np.asarray(nn.log_softmax(x)), [0.0, -1000.0])
    g = fgrad.grad(lambda x: fnp.sum(nn.log_softmax(x) * fnp.array([0.0, 1.0])))(x)
    assert_allclose(np.asarray(g), [-1.0, 1.0])
    h = fgrad.grad(lambda x: fnp.sum(nn.log_softmax(x) * fnp.array([1.0, 3.0])))(x)
    assert_allclose(np.asarray(h), [1.0 - 4.0, 3.0 - 0.0])


def test_softmax_masks_minus_inf_entries(strict_numerics):
    """-inf logits (attention masks) get probability 0 and gradient 0, as in JAX."""
    x = fnp.array([0.0, -INF, 0.0])
    assert_allclose(np.asarray(nn.softmax(x)), [0.5, 0.0, 0.5])
    g = fgrad.grad(lambda x: fnp.sum(nn.softmax(x) * fnp.array([1.0, 0.0, 0.0])))(x)
    assert_allclose(np.asarray(g), [0.25, 0.0, -0.25])


def test_logaddexp_of_minus_infinities(strict_numerics):
    """logaddexp(-inf, -inf) = -inf, and its gradient is 0.5 each, the limit along x == y,
    not the NaN of exp(-inf - -inf) (JAX and PyTorch give NaN here)."""
    assert float(fnp.logaddexp(-INF, -INF)) == -INF
    gx, gy = fgrad.grad(fnp.logaddexp, argnums=(0, 1))(-INF, -INF)
    assert (float(gx), float(gy)) == (0.5, 0.5)
    gx, gy = fgrad.grad(fnp.logaddexp, argnums=(0, 1))(-INF, 0.0)
    assert (float(gx), float(gy)) == (0.0, 1.0)
    gx, gy = fgrad.grad(fnp.logaddexp, argnums=(0, 1))(1000.0, 1000.0)
    assert (float(gx), float(gy)) == (0.5, 0.5)


def test_sigmoid_at_plus_minus_1000(strict_numerics):
    """sigmoid(1000) = 1, sigmoid(-1000) = 0, derivatives 0 with no overflow warning
    (jax.nn.sigmoid, torch.sigmoid)."""
    x = fnp.array([-1000.0, 1000.0])
    assert_allclose(np.asarray(nn.sigmoid(x)), [0.0, 1.0])
    g = fgrad.grad(lambda x: fnp.sum(nn.sigmoid(x)))(x)
    assert_allclose(np.asarray(g), [0.0, 0.0])
    assert float(nn.sigmoid(-40.0)) == pytest.approx(math.exp(-40.0), rel=1e-14)  # no 1 - 1


def test_softplus_at_1000(strict_numerics):
    """softplus(1000) = 1000 with derivative 1; softplus(-1000) = 0 with derivative 0
    (jax.nn.softplus = logaddexp(x, 0); torch.nn.functional.softplus)."""
    assert float(nn.softplus(1000.0)) == 1000.0
    assert float(fgrad.grad(nn.softplus)(1000.0)) == 1.0
    assert float(nn.softplus(-1000.0)) == 0.0
    assert float(fgrad.grad(nn.softplus)(-1000.0)) == 0.0


def test_power_at_zero_base(strict_numerics):
    """d/dx x**y at x = 0 is 0 for y = 2, 1 for y = 1, 0 for y = 0 (JAX's select(y == 0)),
    and d/dy at x = 0 is 0 (JAX replaces log(0) by log(1) there; PyTorch masks it)."""
    gx, gy = fgrad.grad(fnp.power, argnums=(0, 1))(0.0, 2.0)
    assert (float(gx), float(gy)) == (0.0, 0.0)
    assert float(fgrad.grad(fnp.power)(0.0, 1.0)) == 1.0
    assert float(fgrad.grad(fnp.power)(0.0, 0.0)) == 0.0
    assert float(fgrad.grad(lambda x: x**2)(0.0)) == 0.0
    assert float(fgrad.grad(lambda x: x**3.0)(0.0)) == 0.0
    assert float(fgrad.grad(fgrad.grad(lambda x: x**2.0))(0.0)) == 2.0
    assert float(fgrad.grad(fgrad.grad(lambda x: x**1.0))(0.0)) == 0.0


def test_power_negative_base_integer_exponent():
    """(-2)**3 = -8 with d/dx = 3 * 4 = 12 (real power at integer exponents), and d/dy is NaN
    there (log(-2)), as in JAX and PyTorch."""
    assert float(fgrad.grad(lambda x: x**3)(-2.0)) == 12.0
    with np.errstate(invalid="ignore"):
        gy = fgrad.grad(fnp.power, argnums=1)(-2.0, 3.0)
    assert math.isnan(float(gy))


def test_hypot_at_origin_has_zero_subgradient(strict_numerics):
    """hypot(0, 0) has gradient (0, 0), the zero subgradient PyTorch uses for norms at 0
    (JAX gives NaN for hypot at the origin)."""
    gx, gy = fgrad.grad(fnp.hypot, argnums=(0, 1))(0.0, 0.0)
    assert (float(gx), float(gy)) == (0.0, 0.0)


@pytest.mark.parametrize(
    "f",
    [
        fnp.sin,
        fnp.tanh,
        fnp.abs,
        fnp.erf,
        fnp.erfc,
        nn.sigmoid,
        nn.relu,
        nn.gelu,
        nn.silu,
        nn.softplus,
        nn.softmax,
        nn.log_softmax,
        lambda x: x**2,
        lambda x: 2.0**x,
        lambda x: fnp.maximum(x, 0.5),
        lambda x: fnp.logaddexp(x, 1.0),
        lambda x: fnp.where(x > 0, x, 2.0 * x),
        lambda x: fnp.arctan2(x, 2.0),
        lambda x: fnp.clip(x, -0.5, 0.5),
    ],
)
def test_float32_is_preserved(f):
    """float32 in gives float32 out and float32 gradients; Python scalars are weak (NEP 50,
    as JAX and PyTorch)."""
    x = fnp.array([-1.0, 0.25, 2.0], dtype="float32")
    assert f(x).dtype == np.float32
    g = fgrad.grad(lambda x: fnp.sum(f(x)))(x)
    assert g.dtype == np.float32


def test_operators_dispatch_to_the_elementwise_ops():
    """Tensor operators follow numpy: ``**``, reflected ``**``, comparisons, ``~``, ``&``,
    ``|``, ``^``, ``%``, ``//``, unary ``+``, ``-`` and ``abs()``."""
    x = fnp.array([1.0, 2.0, 3.0])
    y = fnp.array([3.0, 2.0, 1.0])
    assert_allclose(np.asarray(x**2), [1.0, 4.0, 9.0])
    assert_allclose(np.asarray(2**x), [2.0, 4.0, 8.0])
    assert np.asarray(x < y).tolist() == [True, False, False]
    assert np.asarray(x <= y).tolist() == [True, True, False]
    assert np.asarray(x > y).tolist() == [False, False, True]
    assert np.asarray(x >= y).tolist() == [False, True, True]
    assert np.asarray(x == y).tolist() == [False, True, False]
    assert np.asarray(x != y).tolist() == [True, False, True]
    mask = x > 1.5
    assert (~mask).dtype == np.bool_
    assert np.asarray(~mask).tolist() == [True, False, False]
    a, b = fnp.array([True, True, False]), fnp.array([True, False, False])
    assert np.asarray(a & b).tolist() == [True, False, False]
    assert np.asarray(a | b).tolist() == [True, True, False]
    assert np.asarray(a ^ b).tolist() == [False, True, False]
    assert np.asarray(a & True).tolist() == [True, True, False]
    i = fnp.array([12, 10])
    assert np.asarray(i & 6).tolist() == [4, 2]
    assert np.asarray(~i).tolist() == [-13, -11]
    assert_allclose(np.asarray(x % 2.0), [1.0, 0.0, 1.0])
    assert_allclose(np.asarray(7.0 // x), [7.0, 3.0, 2.0])
    assert_allclose(np.asarray(abs(-x)), [1.0, 2.0, 3.0])
    assert_allclose(np.asarray(+x), [1.0, 2.0, 3.0])
    assert float(fgrad.grad(lambda x: fnp.sum(x**2 + 2**x))(fnp.array(1.0))) == pytest.approx(
        2.0 + 2.0 * math.log(2.0)
    )


def test_bitwise_operators_reject_floats():
    """``&``/``|``/``^`` on floating Tensors raise TypeError, as numpy does."""
    x = fnp.array([1.0, 2.0])
    for op in (lambda: x & x, lambda: x | True, lambda: x ^ x):
        with pytest.raises(TypeError, match="bool or integer"):
            op()
    with pytest.raises(TypeError):
        _ = ~x
