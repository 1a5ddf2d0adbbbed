"""Elementwise ops beyond the registry sweep: values against numpy and the math module,
erf's accuracy, the composites' derivatives, dtype rules and error messages."""

import math
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.test_util import check_grads

RNG = np.random.default_rng(0)
X = RNG.uniform(-0.9, 0.9, 7)
POS = RNG.uniform(1.1, 3.0, 7)


@pytest.mark.parametrize(
    "name,ref,x",
    [
        ("abs", np.abs, X),
        ("sign", np.sign, X),
        ("exp", np.exp, X),
        ("expm1", np.expm1, X),
        ("log", np.log, POS),
        ("log1p", np.log1p, X),
        ("log2", np.log2, POS),
        ("log10", np.log10, POS),
        ("sqrt", np.sqrt, POS),
        ("cbrt", np.cbrt, X),
        ("square", np.square, X),
        ("reciprocal", np.reciprocal, POS),
        ("exp2", np.exp2, X),
        ("sin", np.sin, X),
        ("cos", np.cos, X),
        ("tan", np.tan, X),
        ("arcsin", np.arcsin, X),
        ("arccos", np.arccos, X),
        ("arctan", np.arctan, X),
        ("asin", np.arcsin, X),
        ("sinh", np.sinh, X),
        ("cosh", np.cosh, X),
        ("tanh", np.tanh, X),
        ("arcsinh", np.arcsinh, X),
        ("arccosh", np.arccosh, POS),
        ("arctanh", np.arctanh, X),
        ("floor", np.floor, 3 * X),
        ("ceil", np.ceil, 3 * X),
        ("trunc", np.trunc, 3 * X),
        ("round", np.round, 3 * X),
        ("isfinite", np.isfinite, np.array([1.0, np.inf, np.nan])),
        ("isnan", np.isnan, np.array([1.0, np.inf, np.nan])),
        ("isinf", np.isinf, np.array([1.0, -np.inf, np.nan])),
        ("positive", np.positive, X),
        ("negative", np.negative, X),
        ("imag", np.imag, X + 2j * X[::-1]),
        ("real", np.real, X + 2j * X[::-1]),
    ],
)
def test_unary_matches_numpy(name, ref, x):
    got = getattr(fnp, name)(fnp.array(x))
    want = ref(x)
    assert got.dtype == want.dtype
    assert_allclose(np.asarray(got), want, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize(
    "name,ref",
    [
        ("power", np.power),
        ("pow", np.power),
        ("remainder", np.remainder),
        ("floor_divide", np.floor_divide),
        ("maximum", np.maximum),
        ("minimum", np.minimum),
        ("arctan2", np.arctan2),
        ("hypot", np.hypot),
        ("logaddexp", np.logaddexp),
        ("less", np.less),
        ("less_equal", np.less_equal),
        ("greater", np.greater),
        ("greater_equal", np.greater_equal),
        ("equal", np.equal),
        ("not_equal", np.not_equal),
    ],
)
def test_binary_matches_numpy_with_broadcasting(name, ref):
    x = RNG.uniform(0.5, 3.0, (2, 3))
    y = np.array([-1.5, 0.5, 2.0])  # nonzero: remainder and floor_divide by 0 warn
    got = getattr(fnp, name)(fnp.array(x), fnp.array(y))
    assert got.shape == (2, 3)
    assert_allclose(np.asarray(got), ref(x, y), rtol=1e-15)


def test_logical_and_bitwise_match_numpy():
    a = RNG.uniform(size=(2, 3)) < 0.5
    b = RNG.uniform(size=(3,)) < 0.5
    for name in (
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
    ):
        assert np.array_equal(
            np.asarray(getattr(fnp, name)(fnp.array(a), fnp.array(b))), getattr(np, name)(a, b)
        )
    assert np.array_equal(np.asarray(fnp.logical_not(fnp.array(a))), ~a)
    i = RNG.integers(-20, 20, (4,))
    assert np.array_equal(np.asarray(fnp.invert(fnp.array(i))), ~i)
    assert np.array_equal(np.asarray(fnp.bitwise_xor(fnp.array(i), 5)), i ^ 5)


def test_where_matches_numpy_and_broadcasts():
    cond = RNG.uniform(size=(2, 1)) < 0.5
    x, y = RNG.standard_normal((3,)), 7.0
    got = fnp.where(fnp.array(cond), fnp.array(x), y)
    assert_allclose(np.asarray(got), np.where(cond, x, y))
    gx = fgrad.grad(lambda x: fnp.sum(fnp.where(fnp.array([[True], [False]]), x, 0.0)))(
        fnp.array(x)
    )
    assert_allclose(np.asarray(gx), np.ones(3))  # summed over the broadcast rows: one True row


def test_erf_accuracy_float64():
    """Relative error against math.erf / math.erfc (correctly rounded to within an ulp or
    so) over all three of Cody's ranges, tails, and tiny arguments."""
    x = np.concatenate(
        [
            np.linspace(-27.0, 27.0, 20001),
            np.geomspace(1e-300, 1.0, 301),
            -np.geomspace(1e-300, 1.0, 301),
            [0.46875, 0.46875 + 1e-15, 4.0, 4.0 + 1e-14],
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        erf = np.asarray(fnp.erf(x))
        erfc = np.asarray(fnp.erfc(x))
    want_erf = np.array([math.erf(v) for v in x])
    want_erfc = np.array([math.erfc(v) for v in x])
    nz = want_erf != 0
    assert np.max(np.abs(erf - want_erf)[nz] / np.abs(want_erf[nz])) < 1e-15
    assert np.all(erf[~nz] == 0)
    normal = want_erfc > 1e-300  # subnormal results carry fewer significant bits
    assert np.max(np.abs(erfc - want_erfc)[normal] / want_erfc[normal]) < 2e-15


def test_erf_special_values_and_dtypes():
    got = np.asarray(fnp.erf(np.array([0.0, -0.0, np.inf, -np.inf, np.nan])))
    assert got[:4].tolist() == [0.0, 0.0, 1.0, -1.0] and math.isnan(got[4])
    assert math.copysign(1.0, got[1]) == -1.0  # erf is odd: erf(-0) = -0
    got = np.asarray(fnp.erfc(np.array([np.inf, -np.inf, 30.0])))
    assert got.tolist() == [0.0, 2.0, 0.0]
    assert fnp.erf(fnp.array([1, 2])).dtype == np.float64
    x32 = np.linspace(-6, 6, 101, dtype=np.float32)
    got32 = fnp.erf(fnp.array(x32))
    assert got32.dtype == np.float32
    assert_allclose(
        np.asarray(got32), [math.erf(v) for v in x32.astype(np.float64)], rtol=2e-7, atol=1e-7
    )


def test_gelu_matches_its_definitions():
    """Exact gelu is x * Phi(x), accurate in the negative tail; the tanh form is Hendrycks
    and Gimpel's approximation (as torch.nn.functional.gelu(approximate='tanh'))."""
    x = np.array([-30.0, -10.0, -1.0, 0.0, 0.5, 3.0])
    want = x * np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x])
    # Phi's relative condition number at x is about x**2 (900 at -30): one rounding of
    # x / sqrt(2) moves the true value by ~1e-13 there, so this is full accuracy.
    assert_allclose(np.asarray(nn.gelu(fnp.array(x))), want, rtol=1e-12)
    want_tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert_allclose(np.asarray(nn.gelu(fnp.array(x), approximate="tanh")), want_tanh, rtol=1e-14)
    assert_allclose(np.asarray(nn.gelu(fnp.array(x), approximate=True)), want_tanh, rtol=1e-14)
    with pytest.raises(ValueError, match="approximate"):
        nn.gelu(fnp.array(x), approximate="erf")


def test_silu_softplus_values():
    x = np.array([-3.0, 0.0, 2.0])
    assert_allclose(np.asarray(nn.silu(fnp.array(x))), x / (1 + np.exp(-x)), rtol=1e-15)
    assert nn.swish is nn.silu
    assert_allclose(np.asarray(nn.softplus(fnp.array(x))), np.log1p(np.exp(x)), rtol=1e-15)


def test_softmax_axis_argument():
    x = RNG.standard_normal((2, 3, 4))
    for axis in (-1, 0, 1, (0, 2), None):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        want = e / e.sum(axis=axis, keepdims=True)
        assert_allclose(np.asarray(nn.softmax(fnp.array(x), axis=axis)), want, rtol=1e-14)
        assert_allclose(
            np.asarray(nn.log_softmax(fnp.array(x), axis=axis)),
            np.log(want),
            rtol=1e-13,
            atol=1e-15,
        )
    with pytest.raises(fgrad.ShapeError, match="axis"):
        nn.softmax(fnp.array(x), axis=3)


# ------------------------------------------------------------------ composites' derivatives

COMPOSITES = [
    ("square", fnp.square, (RNG.uniform(-2, 2, (3,)),)),
    ("reciprocal", fnp.reciprocal, (RNG.uniform(0.5, 2, (3,)),)),
    ("exp2", fnp.exp2, (RNG.uniform(-2, 2, (3,)),)),
    ("positive", fnp.positive, (RNG.uniform(-2, 2, (3,)),)),
    ("clip_scalars", lambda x: fnp.clip(x, -0.5, 0.5), (np.array([-1.3, -0.2, 0.1, 0.9]),)),
    (
        "clip_tensors",
        lambda x, lo, hi: fnp.clip(x, lo, hi),
        (np.array([-1.3, 0.1, 0.9]), np.array([-1.0, -0.5, 0.0]), np.array(0.5)),
    ),
    ("clip_max_only", lambda x: fnp.clip(x, max=0.0), (np.array([-1.3, 0.1]),)),
    ("nan_to_num", fnp.nan_to_num, (RNG.uniform(-2, 2, (3,)),)),
    ("gelu", nn.gelu, (RNG.uniform(-3, 3, (4,)),)),
    ("gelu_tanh", lambda x: nn.gelu(x, approximate="tanh"), (RNG.uniform(-3, 3, (4,)),)),
    ("silu", nn.silu, (RNG.uniform(-3, 3, (4,)),)),
    ("softplus", nn.softplus, (RNG.uniform(-3, 3, (4,)),)),
    ("softmax_axis0", lambda x: nn.softmax(x, axis=0), (RNG.uniform(-3, 3, (2, 3)),)),
    ("log_softmax_none", lambda x: nn.log_softmax(x, axis=None), (RNG.uniform(-3, 3, (2, 3)),)),
]


@pytest.mark.parametrize("name,f,args", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_composite_derivatives(name, f, args):
    check_grads(f, [fnp.array(a) for a in args], order=2, modes=("rev", "fwd"))


def test_clip_values_and_bounds():
    x = fnp.array([-2.0, 0.5, 3.0])
    assert_allclose(np.asarray(fnp.clip(x, 0.0, 1.0)), [0.0, 0.5, 1.0])
    assert_allclose(np.asarray(fnp.clip(x, min=0.0)), [0.0, 0.5, 3.0])
    assert_allclose(np.asarray(fnp.clip(x, None, 1.0)), [-2.0, 0.5, 1.0])
    assert_allclose(np.asarray(x.clip(0.0, 1.0)), [0.0, 0.5, 1.0])
    assert_allclose(np.asarray(fnp.clip(x, 2.0, 1.0)), [1.0, 1.0, 1.0])  # numpy: max wins


def test_nan_to_num():
    x = fnp.array([np.nan, np.inf, -np.inf, 1.5])
    assert_allclose(np.asarray(fnp.nan_to_num(x)), np.nan_to_num(np.asarray(x)))
    assert_allclose(
        np.asarray(fnp.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0)), [-1.0, 9.0, -9.0, 1.5]
    )
    x32 = fnp.array([np.inf], dtype="float32")
    assert fnp.nan_to_num(x32).dtype == np.float32
    assert float(fnp.nan_to_num(x32)[0]) == float(np.finfo(np.float32).max)
    z = fnp.array([complex(np.nan, np.inf)])
    assert_allclose(np.asarray(fnp.nan_to_num(z)), np.nan_to_num(np.asarray(z)))
    g = fgrad.grad(lambda x: fnp.sum(fnp.nan_to_num(x)))(x)
    assert_allclose(np.asarray(g), [0.0, 0.0, 0.0, 1.0])


def test_round_decimals():
    x = np.array([2.5, 3.14159, -1.005, 1234.5])
    for d in (0, 2, -2):
        assert_allclose(np.asarray(fnp.round(fnp.array(x), d)), np.round(x, d))
    i = np.array([15, 25, -35])
    assert np.array_equal(np.asarray(fnp.round(fnp.array(i), -1)), np.round(i, -1))
    assert fnp.round(fnp.array(i), -1).dtype == i.dtype
    assert np.array_equal(np.asarray(fnp.round(fnp.array(i), 2)), i)


def test_piecewise_constant_ops_have_zero_gradient():
    """floor/ceil/round/trunc/sign are nondiff: their results are not traced (JAX gives
    zero derivatives for them too)."""
    x = fnp.array([0.3, 1.7])
    for f in (fnp.floor, fnp.ceil, fnp.round, fnp.trunc, fnp.sign, lambda x: x // 1.0):
        g = fgrad.grad(lambda x, f=f: fnp.sum(f(x) * x))(x)
        assert_allclose(np.asarray(g), np.asarray(f(x)))


def test_remainder_derivatives():
    """d(x mod y)/dx = 1 and d/dy = -floor(x / y), as JAX."""
    gx, gy = fgrad.grad(fnp.remainder, argnums=(0, 1))(7.5, 2.0)
    assert (float(gx), float(gy)) == (1.0, -3.0)
    gx, gy = fgrad.grad(fnp.remainder, argnums=(0, 1))(-7.5, 2.0)
    assert (float(gx), float(gy)) == (1.0, 4.0)


def test_imag_vjp_is_minus_i():
    """The transpose of Im is ct -> -i ct (JAX's convention, no conjugation)."""
    _, f_vjp = fgrad.vjp(fnp.imag, fnp.array([1.0 + 2.0j]))
    assert_allclose(np.asarray(f_vjp(fnp.array([1.0]))[0]), [-1j])
    assert float(fgrad.grad(lambda x: fnp.sum(fnp.imag(x) + x))(fnp.array([1.0]))[0]) == 1.0


# ------------------------------------------------------------------ shape rules and errors


def test_shape_rules_trace_without_running_kernels():
    def f(x, y):
        z = fnp.where(x > 0, x**2, fnp.sin(y))
        return fnp.logaddexp(z, nn.relu(y)) + fnp.erf(x) + nn.softmax(z) + (x < y)

    g = fgrad.make_graph(f)(fnp.ones((2, 3), dtype="float32"), fnp.ones(3, dtype="float32"))
    assert str(g).count("\n") > 8
    out = g.outvars[0].aval
    assert out.shape == (2, 3) and out.dtype == np.float32


def test_power_integer_base_negative_exponent_is_a_dtype_error():
    with pytest.raises(fgrad.DTypeError, match="negative integer power"):
        fnp.power(fnp.array([2, 3]), -1)
    assert_allclose(np.asarray(fnp.power(fnp.array([2.0, 4.0]), -1)), [0.5, 0.25])


def test_bitwise_on_floats_is_a_dtype_error():
    with pytest.raises(fgrad.DTypeError, match="integer or bool"):
        fnp.bitwise_and(fnp.array([1.0]), fnp.array([1.0]))


def test_shape_mismatch_names_the_op():
    with pytest.raises(fgrad.ShapeError, match="maximum"):
        fnp.maximum(fnp.ones((2, 3)), fnp.ones((4,)))


def test_full_like_of_a_numpy_scalar_keeps_its_dtype():
    # floor of a 0-d float64 is held as np.float64 (a subclass of Python float): zeros
    # like it are float64, not the int64 a Python-number fill would give.
    x = fnp.asarray(np.array(1.5))
    assert fnp.zeros_like(fnp.floor(x)).dtype == np.float64
    assert fgrad.jvp(fnp.floor, (x,), (fnp.ones_like(x),))[1].dtype == np.float64
    assert fgrad.jvp(lambda x: 2.0, (x,), (x,))[1].dtype == np.float64  # a Python float output
