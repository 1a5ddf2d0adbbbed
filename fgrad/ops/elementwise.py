"""Elementwise ops: arithmetic, transcendental functions, comparisons, logic, casts.

Each op is one family declaration (``fgrad/ops/_families.py``): its kernel, its derivative
(one per input; the same function serves as JVP and VJP) and its docstring, which is the
user documentation where ``numpy=`` exports the op itself from ``fgrad.numpy``.

Each VJP rule is the transpose of the op's linearisation (no conjugation), which is JAX's
convention for complex numbers; for real inputs it is the ordinary chain rule. Rules that
must not produce NaN where the maths has a finite answer (``abs`` at 0, ``power`` at
``x = 0``, ``maximum`` at ties, ``where`` with a NaN branch, ``logaddexp`` at ``-inf``)
say which convention they follow, and ``tests/ops/test_conventions.py`` pins each one.

Kernels prefer Array API names (``xp.asin``, ``xp.pow``); where an older namespace (cupy
before its numpy-2 aliases) only has numpy's name, :func:`_xp_fn` falls back to it.
"""

from __future__ import annotations

import math

import numpy as np

from fgrad import dtypes
from fgrad.core.op import Check, defop
from fgrad.errors import DTypeError
from fgrad.ops._batch import elementwise_batch
from fgrad.ops._doc import binary_doc, contract, nondiff_doc, unary_doc
from fgrad.ops._kernels import erf_kernel as _erf_kernel
from fgrad.ops._kernels import erfc_kernel as _erfc_kernel
from fgrad.ops._kernels import is_complex as _is_complex
from fgrad.ops._kernels import sigmoid_kernel as _sigmoid_kernel
from fgrad.ops._families import BINARY_SHAPES, binary_op, linear_op, nondiff_op, unary_op
from fgrad.ops._rules import binary, broadcast_shapes, floating, same, shape_of, to_bool, unary
from fgrad.tensor import ShapeDtype

_BINARY_SHAPES = BINARY_SHAPES


def _xp_fn(xp, name: str, legacy: str):
    """``xp.name`` (Array API spelling), else ``xp.legacy`` (numpy-1 spelling, older cupy)."""
    fn = getattr(xp, name, None)
    return fn if fn is not None else getattr(xp, legacy)


def _away_from_zero(lo: float = 0.2, hi: float = 2.0):
    """Check.make_args sampling ``|x|`` in ``[lo, hi]`` with random signs (off a kink at 0)."""

    def make(rng, shapes):
        return [rng.uniform(lo, hi, s) * rng.choice([-1.0, 1.0], s) for s in shapes]

    return make


def _real_dtype(dtype: np.dtype) -> np.dtype:
    """dtype rule of ``abs``/``real``/``imag``: complex64 -> float32, others unchanged."""
    return np.dtype(np.real(np.zeros((), dtype)).dtype)


def _bool_as_int8(dtype: np.dtype) -> np.dtype:
    # numpy computes these on bools as int8 (np.conj(True), True // True)
    return np.dtype(np.int8) if dtype == np.bool_ else dtype


def _float64_unless_inexact(dtype: np.dtype) -> np.dtype:
    # true division of ints and bools is float64 in numpy; erf/erfc kernels do the same
    return dtype if np.dtype(dtype).kind in "fc" else np.dtype(np.float64)


def _safe_over(x, out):
    """``x / out``, and 0 where ``out == 0`` (the zero subgradient of a norm at 0)."""
    return divide(x, where(equal(out, 0), 1, out))


# ---------------------------------------------------------------- arithmetic

neg = negative = linear_op(
    "negative", "negative", lambda ct, out, x: negative(ct), numpy=True,
    doc=unary_doc(
        "Numerical negative, ``-x``.",
        ">>> fnp.negative(fnp.array([1.0, -2.0]))\nTensor([-1.,  2.], dtype=float64)",
        keeps_dtype=True,
    ),
)

add = binary_op(
    "add", "add", (lambda t, out, x, y: t, lambda t, out, x, y: t), vjp_reads=(), numpy=True,
    doc=binary_doc(
        "Sum ``x + y``.", ">>> fnp.add(fnp.array([1.0, 2.0]), 3.0)\nTensor([4., 5.], dtype=float64)"
    ),
)

subtract = binary_op(
    "subtract", "subtract", (lambda t, out, x, y: t, lambda t, out, x, y: negative(t)),
    check=Check(shapes=(((), ()), ((2, 3), (3,)), ((2, 1), (1, 3)))), vjp_reads=(), numpy=True,
    doc=binary_doc(
        "Difference ``x - y``.",
        ">>> fnp.subtract(fnp.array([1.0, 2.0]), 3.0)\nTensor([-2., -1.], dtype=float64)",
    ),
)

multiply = binary_op(
    "multiply", "multiply",
    (lambda t, out, x, y: multiply(t, y), lambda t, out, x, y: multiply(x, t)),
    vjp_reads=("inputs",), numpy=True,
    doc=binary_doc(
        "Product ``x * y``.",
        ">>> fnp.multiply(fnp.array([1.0, 2.0]), 3.0)\nTensor([3., 6.], dtype=float64)",
    ),
)

divide = binary_op(
    "divide", "divide",
    (lambda t, out, x, y: divide(t, y), lambda t, out, x, y: negative(multiply(t, divide(out, y)))),
    aval=binary("divide", _float64_unless_inexact),  # numpy: ints and bools divide in float64
    check=Check(
        shapes=(((), ()), ((2, 3), (3,)), ((2, 1), (1, 3))),
        make_args=lambda rng, shapes: [
            rng.uniform(-2, 2, shapes[0]),
            rng.uniform(0.5, 2, shapes[1]) * rng.choice([-1, 1], shapes[1]),
        ],
    ),
    numpy=("divide", "true_divide"),
    doc=binary_doc(
        "True division ``x / y``; integer inputs give float64.",
        ">>> fnp.divide(fnp.array([1.0, 2.0]), 4.0)\nTensor([0.25, 0.5 ], dtype=float64)",
    ),
)


def _power_aval(x, y):
    shape = broadcast_shapes("power", x, y)
    dtype = np.dtype(dtypes.result_type(x, y))
    if dtypes.is_integer(dtype) and isinstance(y, int) and not isinstance(y, bool) and y < 0:
        raise DTypeError(
            f"power: integer {ShapeDtype(shape_of(x), dtype)} to the negative integer power {y} "
            "is not an integer; cast the base to a floating dtype first (x.astype('float64'))"
        )
    return ShapeDtype(shape, dtype)


def _power_dx(t, out, x, y):
    # d/dx x**y = y * x**(y - 1), and 0 where y == 0 (not 0 * x**-1, which is NaN at x = 0).
    # The inner power differentiates with this same rule, so the second derivative at
    # x = 0, y = 1 is 0 too (JAX's ``_pow_jvp_lhs``).
    if isinstance(y, (int, float)):
        if y == 0:
            return multiply(t, 0)
        if y == 1:
            return t
        if y == 2:
            return multiply(t, multiply(2, x))
        return multiply(t, multiply(y, power(x, y - 1)))
    jac = multiply(y, power(x, subtract(y, 1)))
    return multiply(t, where(equal(y, 0), 0, jac))


def _power_dy(t, out, x, y):
    # d/dy x**y = log(x) * x**y. At x = 0 the factor x**y is 0 (y > 0), so log(x) is replaced
    # by log(1) = 0 there instead of forming 0 * -inf = NaN (JAX's ``_pow_jvp_rhs``; PyTorch
    # likewise). For x < 0 log(x) is NaN: the real power has no derivative in y there.
    safe_x = where(equal(x, 0), 1, x)
    return multiply(t, multiply(log(safe_x), out))


power = binary_op(
    "power", lambda xp, x, y: _xp_fn(xp, "pow", "power")(x, y), (_power_dx, _power_dy),
    aval=_power_aval,
    check=Check(
        shapes=_BINARY_SHAPES,
        make_args=lambda rng, shapes: [
            rng.uniform(0.3, 2.0, shapes[0]),
            rng.uniform(-2.0, 2.0, shapes[1]),
        ],
    ),
    numpy=("power", "pow"),
    doc=binary_doc(
        "``x`` raised to the power ``y``, ``x ** y``.",
        ">>> fnp.power(fnp.array([2.0, 3.0]), 2)\nTensor([4., 9.], dtype=float64)\n"
        ">>> fgrad.grad(lambda x: x ** 2.0)(0.0)  # no NaN at x = 0 (as JAX)\n"
        "Tensor(0., dtype=float64)",
        extra="The derivative in ``x`` is ``y * x**(y-1)``, and 0 where ``y == 0`` (so "
        "integer-valued exponents give no NaN at ``x = 0``); the derivative in ``y`` is "
        "``log(x) * x**y``, taken as 0 at ``x = 0`` and NaN for ``x < 0``, as in JAX and "
        "PyTorch. An integer base with a negative Python-int exponent raises DTypeError.",
    ),
)


def _remainder_dy(t, out, x, y):
    # x mod y = x - y * floor(x / y), and floor(x / y) is locally constant.
    return negative(multiply(t, floor_divide(x, y)))


def _remainder_args(rng, shapes):
    # y in {+-1, +-2} and x = 2k + u, u in [0.2, 0.8]: x / y stays off the integers, where
    # the remainder jumps.
    x = 2.0 * rng.integers(-2, 2, shapes[0]) + rng.uniform(0.2, 0.8, shapes[0])
    y = rng.choice([-2.0, -1.0, 1.0, 2.0], shapes[1])
    return [x, y]


remainder = binary_op(
    "remainder", "remainder", (lambda t, out, x, y: t, _remainder_dy),
    check=Check(shapes=_BINARY_SHAPES, make_args=_remainder_args), numpy=("remainder", "mod"),
    doc=binary_doc(
        "Remainder of floor division, ``x % y``, with the sign of ``y`` (Python's ``%``).",
        ">>> fnp.remainder(fnp.array([5.0, -5.0]), 3.0)\nTensor([2., 1.], dtype=float64)",
        extra="Differentiable almost everywhere: the derivative in ``x`` is 1 and in ``y`` "
        "is ``-floor(x / y)`` (as JAX), ignoring the jumps where ``x / y`` is an integer.",
    ),
)

floor_divide = nondiff_op(
    "floor_divide", "floor_divide", arity=2, aval=binary("floor_divide", _bool_as_int8),
    check=Check(shapes=_BINARY_SHAPES, domain=(0.5, 4.0)), numpy=True,
    doc=binary_doc(
        "Floor division ``x // y``, rounding towards minus infinity.",
        ">>> fnp.floor_divide(fnp.array([7, -7]), 2)\nTensor([ 3, -4], dtype=int64)",
        extra="Piecewise constant: it carries no derivative (the result is not traced).",
    ),
)


def _balanced(ct, x, y):
    """``ct`` where ``x > y``, half of it where ``x == y``, else 0 (JAX's balanced ties)."""
    return where(greater(x, y), ct, where(equal(x, y), multiply(ct, 0.5), 0))


def _tie_args(rng, shapes):
    # Integer parts plus fractions from disjoint ranges keep |x - y| >= 0.2: no ties.
    x = rng.integers(-2, 2, shapes[0]) + rng.uniform(0.1, 0.4, shapes[0])
    y = rng.integers(-2, 2, shapes[1]) + rng.uniform(0.6, 0.9, shapes[1])
    return [x, y]


_TIES = "At ties ``x == y`` the derivative is split evenly, 0.5 to each input (JAX)."

maximum = binary_op(
    "maximum", "maximum",
    (lambda t, out, x, y: _balanced(t, x, y), lambda t, out, x, y: _balanced(t, y, x)),
    check=Check(shapes=_BINARY_SHAPES, make_args=_tie_args), numpy=True,
    doc=binary_doc(
        "Elementwise maximum; NaN if either input is NaN.",
        ">>> fnp.maximum(fnp.array([1.0, 5.0]), 3.0)\nTensor([3., 5.], dtype=float64)",
        extra=_TIES,
    ),
)

minimum = binary_op(
    "minimum", "minimum",
    (lambda t, out, x, y: _balanced(t, y, x), lambda t, out, x, y: _balanced(t, x, y)),
    check=Check(shapes=_BINARY_SHAPES, make_args=_tie_args), numpy=True,
    doc=binary_doc(
        "Elementwise minimum; NaN if either input is NaN.",
        ">>> fnp.minimum(fnp.array([1.0, 5.0]), 3.0)\nTensor([1., 3.], dtype=float64)",
        extra=_TIES,
    ),
)


def _abs_jvp(t, out, x):
    # Real: t * sign(x), so abs'(0) = 0 (PyTorch's and autograd's subgradient; sign is
    # nondiff, which makes the second derivative 0). Complex: Re(conj(x) t) / |x|, 0 at 0.
    if dtypes.is_complex(dtypes.result_type(x)):
        return real(multiply(_safe_over(conj(x), out), t))
    return multiply(t, sign(x))


def _abs_vjp(ct, out, x):
    # The transpose of the JVP: ct * conj(x) / |x| for complex x (no conjugation of ct).
    if dtypes.is_complex(dtypes.result_type(x)):
        return multiply(ct, _safe_over(conj(x), out))
    return multiply(ct, sign(x))


abs = defop(
    "abs",
    batch=elementwise_batch,
    kernel=lambda xp, x: xp.abs(x),
    aval=unary(_real_dtype),
    jvp=(_abs_jvp,),
    vjp=(_abs_vjp,),
    check=Check(make_args=_away_from_zero()),
    numpy=("abs", "absolute"),
    doc="""Absolute value ``|x|`` (the modulus for complex ``x``).

    Elementwise. The derivative at ``x = 0`` is 0 (PyTorch's and autograd's convention).

    Args:
        x: Tensor, array or Python scalar of any shape and numeric dtype.

    Returns:
        Tensor of ``x.shape``; the dtype of ``x``, or the matching real dtype for complex.

    Raises:
        DTypeError: ``x`` has a dtype the op does not accept (bool).

    Example:
        >>> fnp.abs(fnp.array([-1.5, 2.0]))
        Tensor([1.5, 2. ], dtype=float64)
        >>> fgrad.grad(fnp.abs)(0.0)
        Tensor(0., dtype=float64)
    """,
)

# ---------------------------------------------------------------- exponentials and logarithms

exp = unary_op(
    "exp", "exp", lambda t, out, x: multiply(t, out), vjp_reads=("out",), numpy=True,
    doc=unary_doc(
        "Natural exponential ``e**x``.",
        ">>> fnp.exp(fnp.array([0.0, 1.0]))\nTensor([1.        , 2.71828183], dtype=float64)",
    ),
)

expm1 = unary_op(
    "expm1", "expm1", lambda t, out, x: multiply(t, add(out, 1)), vjp_reads=("out",), numpy=True,
    doc=unary_doc(
        "``exp(x) - 1``, accurate for small ``x``.",
        ">>> fnp.expm1(fnp.array([1e-10, 1.0]))\n"
        "Tensor([1.00000000e-10, 1.71828183e+00], dtype=float64)",
    ),
)

log = unary_op(
    "log", "log", lambda t, out, x: divide(t, x), check=Check(domain=(0.2, 3.0)), numpy=True,
    doc=unary_doc(
        "Natural logarithm.",
        ">>> fnp.log(fnp.array([1.0, 100.0]))\nTensor([0.        , 4.60517019], dtype=float64)",
        domain="``x > 0`` (``log(0) = -inf``)",
    ),
)

log1p = unary_op(
    "log1p", "log1p", lambda t, out, x: divide(t, add(x, 1)), check=Check(domain=(-0.5, 3.0)),
    numpy=True,
    doc=unary_doc(
        "``log(1 + x)``, accurate for small ``x``.",
        ">>> fnp.log1p(fnp.array([1e-10, 1.0]))\n"
        "Tensor([1.00000000e-10, 6.93147181e-01], dtype=float64)",
        domain="``x > -1``",
    ),
)

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)

log2 = unary_op(
    "log2", "log2", lambda t, out, x: divide(t, multiply(x, _LN2)),
    check=Check(domain=(0.2, 3.0)), numpy=True,
    doc=unary_doc(
        "Base-2 logarithm; exact at powers of two.",
        ">>> fnp.log2(fnp.array([8.0, 0.5]))\nTensor([ 3., -1.], dtype=float64)",
        domain="``x > 0``",
    ),
)

log10 = unary_op(
    "log10", "log10", lambda t, out, x: divide(t, multiply(x, _LN10)),
    check=Check(domain=(0.2, 3.0)), numpy=True,
    doc=unary_doc(
        "Base-10 logarithm; exact at powers of ten.",
        ">>> fnp.log10(fnp.array([1000.0, 0.1]))\nTensor([ 3., -1.], dtype=float64)",
        domain="``x > 0``",
    ),
)


def _logaddexp_weight(x, y):
    """``exp(x - logaddexp(x, y)) = sigmoid(x - y)``; 0.5 where ``x == y`` (even at -inf)."""
    # Where x == y == +-inf, x - y is NaN; the true weight along the diagonal is 1/2. Both
    # inputs are set to 0 there before subtracting, so no NaN (or warning) is ever formed,
    # and the zero cotangent of the masked entries keeps it out of higher derivatives too.
    tie = equal(x, y)
    return sigmoid(subtract(where(tie, 0, x), where(tie, 0, y)))


logaddexp = binary_op(
    "logaddexp", "logaddexp",
    (
        lambda t, out, x, y: multiply(t, _logaddexp_weight(x, y)),
        lambda t, out, x, y: multiply(t, _logaddexp_weight(y, x)),
    ),
    aval=binary("logaddexp", floating, real_only=True),
    check=Check(shapes=_BINARY_SHAPES, domain=(-3.0, 3.0)), numpy=True,
    doc=binary_doc(
        "``log(exp(x) + exp(y))`` without overflow.",
        ">>> x = fnp.array([1000.0, -float('inf')])\n"
        ">>> fnp.logaddexp(x, x)\n"
        "Tensor([1000.69314718,         -inf], dtype=float64)",
        extra="Exact for ``-inf`` inputs: ``logaddexp(-inf, -inf) = -inf``, and the "
        "derivative there is 0.5 to each input (the limit along ``x == y``), never NaN.",
    ),
)

sqrt = unary_op(
    "sqrt", "sqrt", lambda t, out, x: divide(t, multiply(2, out)), vjp_reads=("out",),
    check=Check(domain=(0.2, 3.0)), numpy=True,
    doc=unary_doc(
        "Non-negative square root.",
        ">>> fnp.sqrt(fnp.array([4.0, 2.0]))\nTensor([2.        , 1.41421356], dtype=float64)",
        domain="``x >= 0``",
        extra="The derivative at 0 is ``inf``, as in JAX and PyTorch.",
    ),
)

cbrt = unary_op(
    "cbrt", "cbrt", lambda t, out, x: divide(t, multiply(3, multiply(out, out))),
    # cbrt is outside the Array API standard (numpy and cupy have it), hence strict=False.
    check=Check(make_args=_away_from_zero(), strict=False), numpy=True,
    doc=unary_doc(
        "Real cube root, negative for negative ``x``.",
        ">>> fnp.cbrt(fnp.array([27.0, -8.0]))\nTensor([ 3., -2.], dtype=float64)",
        extra="Real input only. The derivative at 0 is ``inf``, as for ``sqrt``.",
    ),
)

# ---------------------------------------------------------------- trigonometric and hyperbolic

sin = unary_op(
    "sin", "sin", lambda t, out, x: multiply(t, cos(x)), numpy=True,
    doc=unary_doc(
        "Sine of ``x`` in radians.",
        ">>> fnp.sin(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.84147098], dtype=float64)",
    ),
)

cos = unary_op(
    "cos", "cos", lambda t, out, x: negative(multiply(t, sin(x))), numpy=True,
    doc=unary_doc(
        "Cosine of ``x`` in radians.",
        ">>> fnp.cos(fnp.array([0.0, 1.0]))\nTensor([1.        , 0.54030231], dtype=float64)",
    ),
)

tan = unary_op(
    "tan", "tan", lambda t, out, x: multiply(t, add(1, multiply(out, out))),
    check=Check(domain=(-1.2, 1.2)), numpy=True,
    doc=unary_doc(
        "Tangent of ``x`` in radians.",
        ">>> fnp.tan(fnp.array([0.0, 1.0]))\nTensor([0.        , 1.55740772], dtype=float64)",
    ),
)


def _one_minus_sq(x):
    # (1 - x)(1 + x) rather than 1 - x*x: no cancellation near |x| = 1.
    return multiply(subtract(1, x), add(1, x))


arcsin = unary_op(
    "arcsin", lambda xp, x: _xp_fn(xp, "asin", "arcsin")(x),
    lambda t, out, x: divide(t, sqrt(_one_minus_sq(x))),
    check=Check(domain=(-0.8, 0.8)), numpy=("arcsin", "asin"),
    doc=unary_doc(
        "Inverse sine, in radians in ``[-pi/2, pi/2]``.",
        ">>> fnp.arcsin(fnp.array([0.0, 1.0]))\nTensor([0.        , 1.57079633], dtype=float64)",
        domain="``[-1, 1]``",
    ),
)

arccos = unary_op(
    "arccos", lambda xp, x: _xp_fn(xp, "acos", "arccos")(x),
    lambda t, out, x: negative(divide(t, sqrt(_one_minus_sq(x)))),
    check=Check(domain=(-0.8, 0.8)), numpy=("arccos", "acos"),
    doc=unary_doc(
        "Inverse cosine, in radians in ``[0, pi]``.",
        ">>> fnp.arccos(fnp.array([1.0, 0.0]))\nTensor([0.        , 1.57079633], dtype=float64)",
        domain="``[-1, 1]``",
    ),
)

arctan = unary_op(
    "arctan", lambda xp, x: _xp_fn(xp, "atan", "arctan")(x),
    lambda t, out, x: divide(t, add(1, multiply(x, x))), numpy=("arctan", "atan"),
    doc=unary_doc(
        "Inverse tangent, in radians in ``(-pi/2, pi/2)``.",
        ">>> fnp.arctan(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.78539816], dtype=float64)",
    ),
)

sinh = unary_op(
    "sinh", "sinh", lambda t, out, x: multiply(t, cosh(x)), numpy=True,
    doc=unary_doc(
        "Hyperbolic sine.",
        ">>> fnp.sinh(fnp.array([0.0, 1.0]))\nTensor([0.        , 1.17520119], dtype=float64)",
    ),
)

cosh = unary_op(
    "cosh", "cosh", lambda t, out, x: multiply(t, sinh(x)), numpy=True,
    doc=unary_doc(
        "Hyperbolic cosine.",
        ">>> fnp.cosh(fnp.array([0.0, 1.0]))\nTensor([1.        , 1.54308063], dtype=float64)",
    ),
)

tanh = unary_op(
    "tanh", "tanh", lambda t, out, x: multiply(t, subtract(1, multiply(out, out))),
    vjp_reads=("out",), numpy=True,
    doc=unary_doc(
        "Hyperbolic tangent.",
        ">>> fnp.tanh(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.76159416], dtype=float64)",
    ),
)

arcsinh = unary_op(
    "arcsinh", lambda xp, x: _xp_fn(xp, "asinh", "arcsinh")(x),
    # hypot(x, 1) = sqrt(x**2 + 1) without overflow for large |x|.
    lambda t, out, x: divide(t, hypot(x, 1)), numpy=("arcsinh", "asinh"),
    doc=unary_doc(
        "Inverse hyperbolic sine.",
        ">>> fnp.arcsinh(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.88137359], dtype=float64)",
    ),
)

arccosh = unary_op(
    "arccosh", lambda xp, x: _xp_fn(xp, "acosh", "arccosh")(x),
    # sqrt((x - 1)(x + 1)) rather than sqrt(x*x - 1): no cancellation near x = 1.
    lambda t, out, x: divide(t, sqrt(multiply(subtract(x, 1), add(x, 1)))),
    check=Check(domain=(1.2, 3.0)), numpy=("arccosh", "acosh"),
    doc=unary_doc(
        "Inverse hyperbolic cosine.",
        ">>> fnp.arccosh(fnp.array([1.0, 2.0]))\nTensor([0.        , 1.31695790], dtype=float64)",
        domain="``x >= 1``",
    ),
)

arctanh = unary_op(
    "arctanh", lambda xp, x: _xp_fn(xp, "atanh", "arctanh")(x),
    lambda t, out, x: divide(t, _one_minus_sq(x)),
    check=Check(domain=(-0.8, 0.8)), numpy=("arctanh", "atanh"),
    doc=unary_doc(
        "Inverse hyperbolic tangent.",
        ">>> fnp.arctanh(fnp.array([0.0, 0.5]))\nTensor([0.        , 0.54930614], dtype=float64)",
        domain="``(-1, 1)`` (``+-inf`` at ``+-1``)",
    ),
)


def _sum_sq(x, y):
    return add(multiply(x, x), multiply(y, y))


arctan2 = binary_op(
    "arctan2", lambda xp, x, y: _xp_fn(xp, "atan2", "arctan2")(x, y),
    (
        lambda t, out, x, y: multiply(t, divide(y, _sum_sq(x, y))),
        lambda t, out, x, y: negative(multiply(t, divide(x, _sum_sq(x, y)))),
    ),
    aval=binary("arctan2", floating),
    # x (the sine side) stays off 0: away from the origin and the branch cut x = 0, y < 0.
    check=Check(
        shapes=_BINARY_SHAPES,
        make_args=lambda rng, shapes: [
            rng.uniform(0.3, 2.0, shapes[0]) * rng.choice([-1.0, 1.0], shapes[0]),
            rng.uniform(-2.0, 2.0, shapes[1]),
        ],
    ),
    numpy=("arctan2", "atan2"),
    doc="""Quadrant-aware ``arctan(x1 / x2)``: the angle of the point ``(x2, x1)`` in radians.

    Elementwise with numpy broadcasting; the result is in ``[-pi, pi]``, and
    ``arctan2(x1, x2)`` is C's ``atan2(y=x1, x=x2)``. The derivatives are
    ``x2 / (x1**2 + x2**2)`` and
    ``-x1 / (x1**2 + x2**2)`` (NaN at the origin, as in JAX).

    Args:
        x: Tensor, array or Python scalar: the y-coordinate (``x1`` in numpy).
        y: Tensor, array or Python scalar: the x-coordinate (``x2``); shape broadcastable
            with ``x``.

    Returns:
        Tensor of the broadcast shape and floating promoted dtype.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: complex input.

    Example:
        >>> fnp.arctan2(fnp.array([1.0, 1.0]), fnp.array([1.0, -1.0]))
        Tensor([0.78539816, 2.35619449], dtype=float64)
    """,
)

hypot = binary_op(
    "hypot", "hypot",
    (
        lambda t, out, x, y: multiply(t, _safe_over(x, out)),
        lambda t, out, x, y: multiply(t, _safe_over(y, out)),
    ),
    aval=binary("hypot", floating),
    check=Check(shapes=_BINARY_SHAPES, make_args=_away_from_zero(0.3, 2.0)), numpy=True,
    doc=binary_doc(
        "``sqrt(x**2 + y**2)`` without overflow or underflow.",
        ">>> fnp.hypot(fnp.array([3.0, 1e200]), fnp.array([4.0, 1e200]))\n"
        "Tensor([5.00000000e+000, 1.41421356e+200], dtype=float64)",
        extra="At ``x = y = 0`` the derivative is 0, the zero subgradient PyTorch uses for "
        "norms at 0.",
    ),
)

# ---------------------------------------------------------------- special functions
# Their kernels (W. J. Cody's erf and erfc, the overflow-free sigmoid) are in _kernels.py.

_TWO_OVER_SQRT_PI = 1.1283791670955126


def _gauss(x):
    """``2/sqrt(pi) exp(-x**2)``, the derivative of erf."""
    return multiply(_TWO_OVER_SQRT_PI, exp(negative(multiply(x, x))))


erf = unary_op(
    "erf", _erf_kernel, lambda t, out, x: multiply(t, _gauss(x)),
    aval=unary(_float64_unless_inexact, name="erf", real_only=True),
    check=Check(domain=(-5.0, 5.0)), numpy=True,
    doc="""The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t**2) dt``.

    Elementwise, real input; float32 stays float32. Accurate to a few units in the last
    place in float64 (numpy has no erf; this kernel uses only the array namespace).

    Args:
        x: Tensor, array or Python scalar of any shape, real dtype. Integer and bool
            inputs are promoted to float64.

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``, values in ``[-1, 1]``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> fnp.erf(fnp.array([0.0, 0.5, 3.0]))
        Tensor([0.        , 0.52049988, 0.99997791], dtype=float64)

    References:
        W. J. Cody, "Rational Chebyshev approximations for the error function", Math.
        Comp. 23 (1969), 631-637, in the form of his SPECFUN routine ``CALERF``.
    """,
)

erfc = unary_op(
    "erfc", _erfc_kernel, lambda t, out, x: negative(multiply(t, _gauss(x))),
    aval=unary(_float64_unless_inexact, name="erfc", real_only=True),
    check=Check(domain=(-5.0, 5.0)), numpy=True,
    doc="""The complementary error function ``erfc(x) = 1 - erf(x)``, accurate in the tail.

    Elementwise, real input; keeps full relative accuracy for large ``x`` where
    ``1 - erf(x)`` would round to 0 (``erfc(10) = 2.1e-45``).

    Args:
        x: Tensor, array or Python scalar of any shape, real dtype. Integer and bool
            inputs are promoted to float64.

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``, values in ``[0, 2]``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> fnp.erfc(fnp.array([0.0, 10.0]))
        Tensor([1.00000000e+00, 2.08848758e-45], dtype=float64)

    References:
        W. J. Cody, "Rational Chebyshev approximations for the error function", Math.
        Comp. 23 (1969), 631-637, in the form of his SPECFUN routine ``CALERF``.
    """,
)


sigmoid = unary_op(
    "sigmoid", _sigmoid_kernel, lambda t, out, x: multiply(t, multiply(out, subtract(1, out))),
    check=Check(domain=(-4.0, 4.0)), vjp_reads=("out",),
    doc="""The logistic sigmoid ``1 / (1 + exp(-x))`` (scipy's ``expit``).

    Elementwise. Never overflows on real input: ``sigmoid(-1000) = 0`` and
    ``sigmoid(1000) = 1`` with derivative 0, no NaN or warning. The derivative is
    ``out * (1 - out)``, as in JAX and PyTorch. Complex input gives the holomorphic
    function ``1 / (1 + exp(-z))`` (as JAX's and PyTorch's sigmoid), with poles at
    ``z = i pi (2k + 1)``.

    Args:
        x: Tensor, array or Python scalar of any shape. Integer and bool inputs are
            promoted to the smallest float that holds them, as in numpy.

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``; real values in ``[0, 1]``.

    Example:
        >>> from fgrad.nn import sigmoid
        >>> sigmoid(fnp.array([-1000.0, 0.0, 2.0]))
        Tensor([0.        , 0.5       , 0.88079708], dtype=float64)
    """,
)

# ---------------------------------------------------------------- selection


def _where_aval(cond, x, y):
    return ShapeDtype(broadcast_shapes("where", cond, x, y), np.dtype(dtypes.result_type(x, y)))


def _where_args(rng, shapes):
    return [
        rng.uniform(0, 1, shapes[0]) < 0.5,
        rng.uniform(-2, 2, shapes[1]),
        rng.uniform(-2, 2, shapes[2]),
    ]


def _where_x(t, out, cond, x, y):
    return where(cond, t, 0)  # the branch not taken gets a zero derivative; cond none


def _where_y(t, out, cond, x, y):
    return where(cond, 0, t)


where = defop(
    "where",
    batch=elementwise_batch,
    kernel=lambda xp, cond, x, y: xp.where(cond, x, y),
    aval=_where_aval,
    jvp=(None, _where_x, _where_y),
    vjp=(None, _where_x, _where_y),
    check=Check(
        shapes=(((), (), ()), ((3,), (3,), (3,)), ((2, 3), (3,), (2, 1)), ((2, 1), (), (1, 3))),
        make_args=_where_args,
    ),
    doc=contract(
        "Elements of ``x`` where ``cond`` is true, else of ``y``; broadcasting all three.",
        ">>> from fgrad.ops.elementwise import where\n"
        ">>> fgrad.grad(lambda x: where(x > 0, x, 0.0))(-1.0)\nTensor(0., dtype=float64)",
        user="fgrad.numpy.where",
    ),
)

# ---------------------------------------------------------------- complex parts and casts


def _real_ct(ct, x):
    # The transpose of Re(.) maps a real cotangent back into the input's (complex) type.
    return astype(ct, dtype=x.dtype) if np.issubdtype(x.dtype, np.complexfloating) else ct


real = linear_op(
    "real", "real", lambda ct, out, x: _real_ct(ct, x), aval=unary(_real_dtype),
    vjp_reads=("inputs", "out"), numpy=True,
    doc=unary_doc(
        "Real part; the identity on real input.",
        ">>> fnp.real(fnp.array([1 + 2j]))\nTensor([1.], dtype=float64)",
        extra="Complex input gives its real dtype (complex64 gives float32).",
        keeps_dtype=True,
    ),
)


def _imag_kernel(xp, x):
    # The Array API's imag takes complex input only; numpy's gives zeros for real input.
    return xp.imag(x) if _is_complex(xp, x) else xp.zeros_like(x)


imag = linear_op(
    "imag", _imag_kernel,
    # The transpose of Im(.) is ct -> -i ct (JAX's convention); a real input's imaginary
    # part is the constant 0, so it gets no cotangent.
    lambda ct, out, x: multiply(ct, -1j) if dtypes.is_complex(dtypes.result_type(x)) else None,
    aval=unary(_real_dtype), vjp_reads=("inputs", "out"), numpy=True,
    doc="""Imaginary part; zeros for real input.

    Elementwise. Linear, so differentiable: the cotangent of a complex input is
    ``-1j * ct`` (JAX's convention, the transpose of the JVP without conjugation).

    Args:
        x: Tensor, array or Python scalar of any shape.

    Returns:
        Tensor of ``x.shape``, the real dtype matching ``x`` (complex64 -> float32).

    Example:
        >>> fnp.imag(fnp.array([1 + 2j, 3 - 1j]))
        Tensor([ 2., -1.], dtype=float64)
    """,
)

conj = linear_op(
    "conj", "conj", lambda ct, out, x: conj(ct), aval=unary(_bool_as_int8),
    vjp_reads=("inputs", "out"), numpy=("conj", "conjugate"),
    doc=unary_doc(
        "Complex conjugate; the identity on real input.",
        ">>> fnp.conj(fnp.array([1 + 2j]))\nTensor([1.-2.j], dtype=complex128)",
        extra="Bool input gives int8, as numpy.",
        keeps_dtype=True,
    ),
)


def _astype_kernel(xp, x, *, dtype):
    if isinstance(x, (bool, int, float, complex)):
        return xp.asarray(x, dtype=dtype)
    return xp.astype(x, dtype, copy=False)


def _astype_transpose(ct, out, x, *, dtype):
    # A real input's cotangent from a complex one is its real part (the transpose of the
    # embedding of the reals), taken explicitly: numpy's cast would warn that it drops it.
    if dtypes.is_complex(dtypes.result_type(ct)) and not dtypes.is_complex(x.dtype):
        ct = real(ct)
    return astype(ct, dtype=x.dtype)


astype = linear_op(
    "astype", _astype_kernel, _astype_transpose,
    aval=lambda x, *, dtype: x._replace(dtype=np.dtype(dtype)),
    check=Check(params=({"dtype": np.dtype(np.float64)},), dtype=np.float32),
    vjp_reads=("inputs", "out"),
    doc=contract(
        "Cast to ``dtype`` (canonical: an ``np.dtype``); casts between floating dtypes carry "
        "the derivative, casts to integer or bool dtypes none.",
        ">>> from fgrad.ops.elementwise import astype\n"
        ">>> astype(fnp.array([1.5, 2.5]), dtype=np.dtype('float32'))\n"
        "Tensor([1.5, 2.5], dtype=float32)",
        user="fgrad.numpy.astype",
    ),
)

optimization_barrier = linear_op(
    "optimization_barrier",
    # A copy, not the input itself: jit's buffer planner may write in place into this
    # output once it is dead, which must never touch the (still live) input.
    lambda xp, x: xp.asarray(x, copy=True),
    lambda ct, out, x: ct, vjp_reads=("inputs", "out"), numpy=True,
    doc="""The identity, as a value graph passes may not see through.

    ``jit``'s common-subexpression elimination would merge the recomputation that
    ``fgrad.checkpoint`` schedules for the backward pass with the forward pass (undoing the
    memory saving); routing the recomputation's inputs through this op keeps them apart, as
    ``jax.lax.optimization_barrier`` does.

    Args:
        x: Tensor of any shape and dtype.

    Returns:
        A copy of ``x``; derivatives pass through unchanged.

    Example:
        >>> fgrad.grad(lambda x: fnp.sum(fgrad.numpy.optimization_barrier(x) ** 2))(fnp.array([1.0, 2.0]))
        Tensor([2., 4.], dtype=float64)
    """,
)

# ---------------------------------------------------------------- no derivative


def _bool_args(rng, shapes):
    return [rng.uniform(0, 1, s) < 0.5 for s in shapes]


def _int_args(rng, shapes):
    return [rng.integers(-8, 8, s) for s in shapes]


def _round_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float16) if dtype == np.bool_ else dtype  # numpy rounds bools to float16


def _rounding(name, summary, example, *, aval=unary(same), extra="", numpy=True):
    returns = "Tensor of ``x.shape`` and dtype (integers stay integers)."
    doc = nondiff_doc(summary, example, returns=returns, extra=extra)
    return nondiff_op(name, name, aval=aval, doc=doc, numpy=numpy)


floor = _rounding(
    "floor", "Largest integer not greater than ``x``.",
    ">>> fnp.floor(fnp.array([-1.5, 1.5]))\nTensor([-2.,  1.], dtype=float64)",
)
ceil = _rounding(
    "ceil", "Smallest integer not less than ``x``.",
    ">>> fnp.ceil(fnp.array([-1.5, 1.5]))\nTensor([-1.,  2.], dtype=float64)",
)
trunc = _rounding(
    "trunc", "``x`` rounded towards zero.",
    ">>> fnp.trunc(fnp.array([-1.5, 1.5]))\nTensor([-1.,  1.], dtype=float64)",
)
round = _rounding(  # fgrad.numpy.round wraps it, adding ``decimals``
    "round",
    "``x`` rounded to the nearest integer, halves to even (``fnp.round`` adds ``decimals``).",
    ">>> fnp.round(fnp.array([0.5, 1.5, 2.7]))\nTensor([0., 2., 3.], dtype=float64)",
    aval=unary(_round_dtype), numpy=(),
)
sign = _rounding(
    "sign", "Sign of ``x``: -1, 0 or 1 (``x / |x|`` for complex, 0 at 0).",
    ">>> fnp.sign(fnp.array([-2.0, 0.0, 3.0]))\nTensor([-1.,  0.,  1.], dtype=float64)",
    extra="Its derivative is 0 almost everywhere, as JAX's.",
)


def _predicate(name, summary, example, *, arity=1, make_args=None):
    """A bool-valued op: a test of one input or a comparison of two (broadcasting)."""
    if arity == 1:
        aval, returns = unary(to_bool), "bool Tensor of ``x.shape``."
    else:
        aval, returns = binary(name, to_bool), "bool Tensor of the broadcast shape."
    shapes = _BINARY_SHAPES if arity == 2 else Check.shapes
    return nondiff_op(
        name, name, aval=aval, arity=arity, numpy=True,
        check=Check(shapes=shapes, make_args=make_args),
        doc=nondiff_doc(summary, example, returns=returns, nargs=arity),
    )


_nan_inf = ">>> x = fnp.array([1.0, -float('inf'), float('nan')])\n"
isfinite = _predicate(
    "isfinite", "True where ``x`` is neither infinite nor NaN.",
    _nan_inf + ">>> fnp.isfinite(x)\nTensor([ True, False, False], dtype=bool)",
)
isinf = _predicate(
    "isinf", "True where ``x`` is positive or negative infinity.",
    _nan_inf + ">>> fnp.isinf(x)\nTensor([False,  True, False], dtype=bool)",
)
isnan = _predicate(
    "isnan", "True where ``x`` is NaN.",
    _nan_inf + ">>> fnp.isnan(x)\nTensor([False, False,  True], dtype=bool)",
)
logical_not = _predicate(
    "logical_not", "Logical NOT.",
    ">>> fnp.logical_not(fnp.array([True, False]))\nTensor([False,  True], dtype=bool)",
    make_args=_bool_args,
)

_x = ">>> x = fnp.array([1.0, 2.0, 3.0])\n"
less = _predicate(
    "less", "``x < y``.",
    _x + ">>> fnp.less(x, 2.0)\nTensor([ True, False, False], dtype=bool)", arity=2,
)
less_equal = _predicate(
    "less_equal", "``x <= y``.",
    _x + ">>> fnp.less_equal(x, 2.0)\nTensor([ True,  True, False], dtype=bool)", arity=2,
)
greater = _predicate(
    "greater", "``x > y``.",
    _x + ">>> fnp.greater(x, 2.0)\nTensor([False, False,  True], dtype=bool)", arity=2,
)
greater_equal = _predicate(
    "greater_equal", "``x >= y``.",
    _x + ">>> fnp.greater_equal(x, 2.0)\nTensor([False,  True,  True], dtype=bool)", arity=2,
)
equal = _predicate(
    "equal", "``x == y``.",
    _x + ">>> fnp.equal(x, 2.0)\nTensor([False,  True, False], dtype=bool)", arity=2,
)
not_equal = _predicate(
    "not_equal", "``x != y``.",
    _x + ">>> fnp.not_equal(x, 2.0)\nTensor([ True, False,  True], dtype=bool)", arity=2,
)

_b = ">>> a, b = fnp.array([True, True, False]), fnp.array([True, False, False])\n"
logical_and = _predicate(
    "logical_and", "Logical AND.",
    _b + ">>> fnp.logical_and(a, b)\nTensor([ True, False, False], dtype=bool)",
    arity=2, make_args=_bool_args,
)
logical_or = _predicate(
    "logical_or", "Logical OR.",
    _b + ">>> fnp.logical_or(a, b)\nTensor([ True,  True, False], dtype=bool)",
    arity=2, make_args=_bool_args,
)
logical_xor = _predicate(
    "logical_xor", "Logical exclusive OR.",
    _b + ">>> fnp.logical_xor(a, b)\nTensor([False,  True, False], dtype=bool)",
    arity=2, make_args=_bool_args,
)


def _bitwise_aval(name: str):
    def rule(*xs):
        dtype = np.dtype(dtypes.result_type(*xs))
        if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
            described = ", ".join(
                str(ShapeDtype(shape_of(x), np.dtype(dtypes.result_type(x)))) for x in xs
            )
            raise DTypeError(
                f"{name}: needs integer or bool inputs, got {described}; compare floats "
                "(x > 0, fnp.less, ...) to get bool masks first"
            )
        return ShapeDtype(broadcast_shapes(name, *xs), dtype)

    return rule


def _bitwise(name, kernel, summary, example, arity=2, numpy=True):
    doc = nondiff_doc(
        summary, example, nargs=arity,
        returns="Tensor of the broadcast shape and promoted integer (or bool) dtype.",
        extra="Integer and bool inputs only (on bools it is the logical operation).",
    )
    shapes = _BINARY_SHAPES if arity == 2 else Check.shapes
    return nondiff_op(
        name, kernel, aval=_bitwise_aval(name), arity=arity, doc=doc, numpy=numpy,
        check=Check(shapes=shapes, make_args=_int_args),
    )


bitwise_and = _bitwise(
    "bitwise_and", "bitwise_and", "Bitwise AND, ``x & y``.",
    ">>> fnp.bitwise_and(fnp.array([12, 10]), 6)\nTensor([4, 2], dtype=int64)",
)
bitwise_or = _bitwise(
    "bitwise_or", "bitwise_or", "Bitwise OR, ``x | y``.",
    ">>> fnp.bitwise_or(fnp.array([12, 10]), 6)\nTensor([14, 14], dtype=int64)",
)
bitwise_xor = _bitwise(
    "bitwise_xor", "bitwise_xor", "Bitwise exclusive OR, ``x ^ y``.",
    ">>> fnp.bitwise_xor(fnp.array([12, 10]), 6)\nTensor([10, 12], dtype=int64)",
)
invert = _bitwise(
    "invert", lambda xp, x: _xp_fn(xp, "bitwise_invert", "invert")(x),
    "Bitwise NOT, ``~x``; logical NOT on bools.",
    ">>> fnp.invert(fnp.array([True, False]))\nTensor([False,  True], dtype=bool)\n"
    ">>> fnp.invert(fnp.array([0, 5]))\nTensor([-1, -6], dtype=int64)",
    arity=1, numpy=("invert", "bitwise_invert", "bitwise_not"),
)

stop_gradient = nondiff_op(
    "stop_gradient", lambda xp, x: x, aval=unary(same), numpy=True,
    doc="""The identity, with zero derivative: ``x`` is treated as a constant by transforms.

    Args:
        x: Tensor of any shape and dtype.

    Returns:
        ``x`` unchanged, outside every running trace.

    Example:
        >>> fgrad.grad(lambda x: x * fgrad.stop_gradient(x))(3.0)
        Tensor(3., dtype=float64)
    """,
)


def _full_like_kernel(xp, x, *, fill_value, dtype):
    # Python numbers only: numpy scalars (np.float64 subclasses float) have their dtype.
    if type(x) in (bool, int, float, complex):
        return xp.full((), fill_value, dtype=dtype or np.result_type(x))
    return xp.full(x.shape, fill_value, dtype=dtype or x.dtype)


full_like = nondiff_op(
    "full_like", _full_like_kernel,
    aval=lambda x, *, fill_value, dtype: x._replace(dtype=np.dtype(dtype or x.dtype)),
    check=Check(params=({"fill_value": 2.0, "dtype": None},)),
    doc=contract(
        "``x``'s shape (and dtype, unless ``dtype`` is given) filled with the Python scalar "
        "``fill_value``; no derivative.",
        ">>> from fgrad.ops.elementwise import full_like\n"
        ">>> full_like(fnp.array([1.0, 2.0]), fill_value=7.0, dtype=None)\n"
        "Tensor([7., 7.], dtype=float64)",
        user="fgrad.numpy.full_like",
    ),
)

# ---------------------------------------------------------------- numpy's further ufuncs
# Kernels outside the Array API standard (fabs, fmax, fmod, ldexp, gcd, ...) set
# ``strict=False``: array_api_strict has no such function.


def _numpy_dtype(name: str, fn: str, kinds: str, what: str):
    """Shape rule of a numpy ufunc restricted to inputs of dtype ``kinds`` (numpy's kind
    letters): broadcasting, and the dtype numpy's own loop gives for the promoted inputs
    (``gcd`` of bools is int8, ``bitwise_count`` is uint8)."""

    def rule(*xs):
        shape = broadcast_shapes(name, *xs)
        described = [ShapeDtype(shape_of(x), np.dtype(dtypes.result_type(x))) for x in xs]
        if np.dtype(dtypes.result_type(*xs)).kind not in kinds:
            raise DTypeError(
                f"{name}: needs {what} inputs, got {', '.join(map(str, described))}"
            )
        samples = [x if type(x) in (bool, int) else np.zeros((), d.dtype) for x, d in zip(xs, described)]
        return ShapeDtype(shape, np.dtype(getattr(np, fn)(*samples).dtype))

    return rule


def _nonneg_int_args(rng, shapes):
    return [rng.integers(0, 8, s) for s in shapes]


fabs = unary_op(
    "fabs", "fabs", lambda t, out, x: multiply(t, sign(x)),
    aval=unary(floating, name="fabs", real_only=True),
    check=Check(make_args=_away_from_zero(), strict=False), numpy=True,
    doc=unary_doc(
        "Absolute value of real ``x`` as a float (numpy's ``fabs``).",
        ">>> fnp.fabs(fnp.array([-1.5, 2]))\nTensor([1.5, 2. ], dtype=float64)",
        extra="Complex input is refused (``fnp.abs`` takes it). The derivative at 0 is 0, "
        "as ``abs``'s.",
    ),
)

_DEG = math.pi / 180.0

deg2rad = unary_op(
    "deg2rad", "deg2rad", lambda t, out, x: multiply(t, _DEG),
    aval=unary(floating, name="deg2rad", real_only=True), vjp_reads=(),
    check=Check(strict=False), numpy=True,
    doc=unary_doc(
        "Degrees to radians, ``x * pi / 180`` (``fnp.radians`` is the same op).",
        ">>> fnp.deg2rad(fnp.array([180.0, 90.0]))\nTensor([3.14159265, 1.57079633], dtype=float64)",
    ),
)

rad2deg = unary_op(
    "rad2deg", "rad2deg", lambda t, out, x: multiply(t, 1.0 / _DEG),
    aval=unary(floating, name="rad2deg", real_only=True), vjp_reads=(),
    check=Check(strict=False), numpy=True,
    doc=unary_doc(
        "Radians to degrees, ``x * 180 / pi`` (``fnp.degrees`` is the same op).",
        ">>> fnp.rad2deg(fnp.array([3.141592653589793, 1.0]))\n"
        "Tensor([180.        ,  57.29577951], dtype=float64)",
    ),
)


def _same_sign(x, y):
    """1 where ``x`` and ``y`` have the same sign bit, else -1 (``-0.0`` counts as negative)."""
    return where(equal(signbit(x), signbit(y)), 1.0, -1.0)


copysign = binary_op(
    "copysign", "copysign", (lambda t, out, x, y: multiply(t, _same_sign(x, y)), None),
    aval=binary("copysign", floating, real_only=True),
    check=Check(shapes=_BINARY_SHAPES, make_args=_away_from_zero()), numpy=True,
    doc=binary_doc(
        "The magnitude of ``x`` with the sign of ``y``.",
        ">>> fnp.copysign(fnp.array([1.0, -2.0]), fnp.array([-1.0, 3.0]))\n"
        "Tensor([-1.,  2.], dtype=float64)",
        extra="Differentiable in ``x`` (``+-1``, by the two sign bits, so ``+-1`` at "
        "``x = 0`` too, as JAX's ``where(signbit(y), -abs(x), abs(x))``); ``y`` gets none.",
    ),
)


def _fmax_takes_x(x, y):
    # JAX's fmax: x where x > y or y is NaN, else y (so ties and NaN x go to y).
    return logical_or(greater(x, y), isnan(y))


def _fmin_takes_x(x, y):
    return logical_or(less(x, y), isnan(y))


_FTIES = (
    "NaN is ignored: the other input is returned (NaN only if both are). The derivative "
    "goes to ``x`` where the result is ``x`` strictly (or ``y`` is NaN) and to ``y`` "
    "otherwise, ties included, as JAX's (``maximum`` splits ties evenly instead)."
)

fmax = binary_op(
    "fmax", "fmax",
    (
        lambda t, out, x, y: where(_fmax_takes_x(x, y), t, 0),
        lambda t, out, x, y: where(_fmax_takes_x(x, y), 0, t),
    ),
    aval=binary("fmax", real_only=True),
    check=Check(shapes=_BINARY_SHAPES, make_args=_tie_args, strict=False), numpy=True,
    doc=binary_doc(
        "Elementwise maximum ignoring NaN.",
        ">>> fnp.fmax(fnp.array([1.0, fnp.nan, 5.0]), fnp.array([3.0, 2.0, fnp.nan]))\n"
        "Tensor([3., 2., 5.], dtype=float64)",
        extra=_FTIES,
    ),
)

fmin = binary_op(
    "fmin", "fmin",
    (
        lambda t, out, x, y: where(_fmin_takes_x(x, y), t, 0),
        lambda t, out, x, y: where(_fmin_takes_x(x, y), 0, t),
    ),
    aval=binary("fmin", real_only=True),
    check=Check(shapes=_BINARY_SHAPES, make_args=_tie_args, strict=False), numpy=True,
    doc=binary_doc(
        "Elementwise minimum ignoring NaN.",
        ">>> fnp.fmin(fnp.array([1.0, fnp.nan, 5.0]), fnp.array([3.0, 2.0, fnp.nan]))\n"
        "Tensor([1., 2., 5.], dtype=float64)",
        extra=_FTIES.replace("maximum", "minimum"),
    ),
)

fmod = binary_op(
    "fmod", "fmod",
    # fmod(x, y) = x - y * trunc(x / y), and trunc(x / y) is locally constant (JAX's rule).
    (lambda t, out, x, y: t, lambda t, out, x, y: negative(multiply(t, trunc(divide(x, y))))),
    aval=binary("fmod", real_only=True),
    check=Check(shapes=_BINARY_SHAPES, make_args=_remainder_args, strict=False), numpy=True,
    doc=binary_doc(
        "Remainder of truncated division, with the sign of ``x`` (C's ``fmod``).",
        ">>> fnp.fmod(fnp.array([5.0, -5.0]), 3.0)\nTensor([ 2., -2.], dtype=float64)",
        extra="Differentiable almost everywhere: 1 in ``x`` and ``-trunc(x / y)`` in ``y`` "
        "(as JAX), ignoring the jumps where ``x / y`` is an integer. Integer ``y = 0`` gives "
        "0, as numpy.",
    ),
)


def _ldexp_aval(x, e):
    shape = broadcast_shapes("ldexp", x, e)
    dx, de = (np.dtype(dtypes.result_type(v)) for v in (x, e))
    if dx.kind not in "biuf" or de.kind not in "biu":
        raise DTypeError(
            f"ldexp: needs a real x and an integer exponent, got {ShapeDtype(shape_of(x), dx)} "
            f"and {ShapeDtype(shape_of(e), de)}; round the exponent first "
            "(fnp.round(e).astype(int))"
        )
    sample = x if type(x) is float else np.zeros((), dx)
    return ShapeDtype(shape, np.dtype(np.ldexp(sample, np.zeros((), de)).dtype))


ldexp = binary_op(
    "ldexp", "ldexp", (lambda t, out, x, e: ldexp(t, e), None),
    aval=_ldexp_aval,
    check=Check(
        shapes=_BINARY_SHAPES, strict=False,
        make_args=lambda rng, shapes: [rng.uniform(-2, 2, shapes[0]), rng.integers(-3, 4, shapes[1])],
    ),
    numpy=True,
    doc=binary_doc(
        "``x * 2**e`` for an integer exponent ``e``, exactly (numpy's ``ldexp``).",
        ">>> fnp.ldexp(fnp.array([1.5, -3.0]), fnp.array([2, -1]))\n"
        "Tensor([ 6. , -1.5], dtype=float64)",
        extra="Linear in ``x`` (derivative ``2**e``); the integer ``e`` has none.",
    ),
)

frexp_exponent = nondiff_op(
    "frexp_exponent", lambda xp, x: xp.frexp(x)[1],
    aval=unary(lambda dtype: np.dtype(np.int32), name="frexp_exponent", real_only=True),
    check=Check(strict=False),
    doc=contract(
        "The int32 exponent ``e`` of ``x = m * 2**e`` with ``0.5 <= |m| < 1`` (0 at 0, inf, "
        "NaN).",
        ">>> from fgrad.ops.elementwise import frexp_exponent\n"
        ">>> frexp_exponent(fnp.array([8.0, 0.3]))\nTensor([ 4, -1], dtype=int32)",
        user="fgrad.numpy.frexp",
    ),
)

signbit = nondiff_op(
    "signbit", "signbit", aval=unary(to_bool, name="signbit", real_only=True), numpy=True,
    doc=nondiff_doc(
        "True where the sign bit of ``x`` is set (negative numbers, ``-0.0``, ``-inf``).",
        ">>> fnp.signbit(fnp.array([-0.0, 0.0, -2.0]))\nTensor([ True, False,  True], dtype=bool)",
        returns="bool Tensor of ``x.shape``.",
    ),
)

rint = nondiff_op(
    # The Array API's round is numpy's rint: halves to even.
    "rint", "round", aval=unary(_round_dtype), numpy=True,
    doc=nondiff_doc(
        "``x`` rounded to the nearest integer, halves to even.",
        ">>> fnp.rint(fnp.array([0.5, 1.5, -2.7]))\nTensor([ 0.,  2., -3.], dtype=float64)",
        returns="Tensor of ``x.shape`` and dtype (integers stay integers).",
    ),
)

spacing = nondiff_op(
    "spacing", "spacing", aval=unary(floating, name="spacing", real_only=True),
    check=Check(strict=False), numpy=True,
    doc=nondiff_doc(
        "The distance from ``x`` to the next representable number away from zero (ulp).",
        ">>> fnp.spacing(fnp.array([1.0, -1.0]))\n"
        "Tensor([ 2.22044605e-16, -2.22044605e-16], dtype=float64)",
        returns="Tensor of ``x.shape``, floating dtype of ``x``.",
    ),
)

nextafter = nondiff_op(
    "nextafter", "nextafter", arity=2, aval=binary("nextafter", floating, real_only=True),
    numpy=True,
    doc=nondiff_doc(
        "The next representable number after ``x`` towards ``y``.",
        ">>> fnp.nextafter(fnp.array([1.0]), 2.0) - 1.0\n"
        "Tensor([2.22044605e-16], dtype=float64)",
        returns="Tensor of the broadcast shape and floating promoted dtype.", nargs=2,
    ),
)


def _integer_op(name, kernel, summary, example, *, arity=2, kinds="biu", numpy=True,
                make_args=_int_args, strict=False):
    """A nondiff op of numpy's integer ufuncs, dtype rule from numpy's loop."""
    shapes = _BINARY_SHAPES if arity == 2 else Check.shapes
    what = "integer or bool" if "b" in kinds else "integer"
    return nondiff_op(
        name, kernel, arity=arity, numpy=numpy,
        aval=_numpy_dtype(name, name, kinds, what),
        check=Check(shapes=shapes, make_args=make_args, strict=strict),
        doc=nondiff_doc(
            summary, example, nargs=arity,
            returns="Tensor of the broadcast shape; numpy's integer dtype for the inputs.",
        ),
    )


gcd = _integer_op(
    "gcd", "gcd", "Greatest common divisor of ``|x|`` and ``|y|`` (``gcd(0, 0) = 0``).",
    ">>> fnp.gcd(fnp.array([12, -18]), 8)\nTensor([4, 2], dtype=int64)", kinds="iu",
)
lcm = _integer_op(
    "lcm", "lcm", "Least common multiple of ``|x|`` and ``|y|`` (0 if either is 0).",
    ">>> fnp.lcm(fnp.array([4, -6]), 6)\nTensor([12,  6], dtype=int64)", kinds="iu",
)
bitwise_count = _integer_op(
    "bitwise_count", "bitwise_count",
    "The number of 1 bits in ``|x|`` (population count), as uint8.",
    ">>> fnp.bitwise_count(fnp.array([7, -1, 1024]))\nTensor([3, 1, 1], dtype=uint8)",
    arity=1,
)
left_shift = _integer_op(
    "left_shift", lambda xp, x, y: _xp_fn(xp, "bitwise_left_shift", "left_shift")(x, y),
    "``x << y``: the bits of ``x`` shifted left by ``y >= 0`` (also ``bitwise_left_shift``).",
    ">>> fnp.left_shift(fnp.array([1, 3]), 2)\nTensor([ 4, 12], dtype=int64)",
    make_args=_nonneg_int_args, strict=True,
)
right_shift = _integer_op(
    "right_shift", lambda xp, x, y: _xp_fn(xp, "bitwise_right_shift", "right_shift")(x, y),
    "``x >> y``: the bits of ``x`` shifted right by ``y >= 0``, arithmetic for signed "
    "``x`` (also ``bitwise_right_shift``).",
    ">>> fnp.right_shift(fnp.array([16, -16]), 2)\nTensor([ 4, -4], dtype=int64)",
    make_args=_nonneg_int_args, strict=True,
)
