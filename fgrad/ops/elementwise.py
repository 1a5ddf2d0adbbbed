"""Elementwise ops: arithmetic, transcendental functions, comparisons, logic, casts.

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
from fgrad.core.op import LINEAR, Check, Op, defop
from fgrad.errors import DTypeError
from fgrad.ops._batch import elementwise_batch
from fgrad.ops._doc import binary_doc, unary_doc
from fgrad.ops._families import binary_op, unary_op
from fgrad.ops._rules import binary, broadcast_shapes, floating, same, shape_of, to_bool, unary
from fgrad.tensor import ShapeDtype

_BINARY_SHAPES = (((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)))


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


def _is_integral(xp, x) -> bool:
    isdtype = getattr(xp, "isdtype", None)
    if isdtype is not None:
        return bool(isdtype(x.dtype, ("integral", "bool")))
    return x.dtype.kind in "biu"


def _is_complex(xp, x) -> bool:
    if isinstance(x, (bool, int, float)):
        return False
    if isinstance(x, complex):
        return True
    isdtype = getattr(xp, "isdtype", None)
    if isdtype is not None:
        return bool(isdtype(x.dtype, "complex floating"))
    return x.dtype.kind == "c"




def _bool_as_int8(dtype: np.dtype) -> np.dtype:
    # numpy computes these on bools as int8 (np.conj(True), True // True)
    return np.dtype(np.int8) if dtype == np.bool_ else dtype


def _float64_unless_inexact(dtype: np.dtype) -> np.dtype:
    # true division of ints and bools is float64 in numpy; erf/erfc kernels do the same
    return dtype if np.dtype(dtype).kind in "fc" else np.dtype(np.float64)

# ---------------------------------------------------------------- arithmetic

neg = defop(
    "negative",
    batch=elementwise_batch,
    kernel=lambda xp, x: xp.negative(x),
    aval=unary(same),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: negative(ct),),
    check=Check(),
    doc=unary_doc(
        "Numerical negative, ``-x``.",
        ">>> fnp.negative(fnp.array([1.0, -2.0]))\nTensor([-1.,  2.], dtype=float64)",
        keeps_dtype=True,
    ),
    vjp_reads=(),
)
negative = neg

add = binary_op(
    "add",
    lambda xp, x, y: xp.add(x, y),
    (lambda t, out, x, y: t, lambda t, out, x, y: t),
    aval=binary("add"),
    check=Check(shapes=_BINARY_SHAPES),
    doc=binary_doc(
        "Sum ``x + y``.", ">>> fnp.add(fnp.array([1.0, 2.0]), 3.0)\nTensor([4., 5.], dtype=float64)"
    ),
    vjp_reads=(),
)

subtract = binary_op(
    "subtract",
    lambda xp, x, y: xp.subtract(x, y),
    (lambda t, out, x, y: t, lambda t, out, x, y: negative(t)),
    aval=binary("subtract"),
    check=Check(shapes=(((), ()), ((2, 3), (3,)), ((2, 1), (1, 3)))),
    doc=binary_doc(
        "Difference ``x - y``.",
        ">>> fnp.subtract(fnp.array([1.0, 2.0]), 3.0)\nTensor([-2., -1.], dtype=float64)",
    ),
    vjp_reads=(),
)

multiply = binary_op(
    "multiply",
    lambda xp, x, y: xp.multiply(x, y),
    (lambda t, out, x, y: multiply(t, y), lambda t, out, x, y: multiply(x, t)),
    aval=binary("multiply"),
    check=Check(shapes=_BINARY_SHAPES),
    doc=binary_doc(
        "Product ``x * y``.",
        ">>> fnp.multiply(fnp.array([1.0, 2.0]), 3.0)\nTensor([3., 6.], dtype=float64)",
    ),
    vjp_reads=("inputs",),
)

divide = defop(
    "divide",
    batch=elementwise_batch,
    kernel=lambda xp, x, y: xp.divide(x, y),
    aval=binary("divide", _float64_unless_inexact),  # numpy: ints and bools divide in float64,
    jvp=(
        lambda t, out, x, y: divide(t, y),
        lambda t, out, x, y: negative(multiply(t, divide(out, y))),
    ),
    vjp=(
        lambda ct, out, x, y: divide(ct, y),
        lambda ct, out, x, y: negative(multiply(ct, divide(out, y))),
    ),
    check=Check(
        shapes=(((), ()), ((2, 3), (3,)), ((2, 1), (1, 3))),
        make_args=lambda rng, shapes: [
            rng.uniform(-2, 2, shapes[0]),
            rng.uniform(0.5, 2, shapes[1]) * rng.choice([-1, 1], shapes[1]),
        ],
    ),
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


power = defop(
    "power",
    batch=elementwise_batch,
    kernel=lambda xp, x, y: _xp_fn(xp, "pow", "power")(x, y),
    aval=_power_aval,
    jvp=(_power_dx, _power_dy),
    vjp=(_power_dx, _power_dy),
    check=Check(
        shapes=_BINARY_SHAPES,
        make_args=lambda rng, shapes: [
            rng.uniform(0.3, 2.0, shapes[0]),
            rng.uniform(-2.0, 2.0, shapes[1]),
        ],
    ),
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
    "remainder",
    lambda xp, x, y: xp.remainder(x, y),
    (lambda t, out, x, y: t, _remainder_dy),
    aval=binary("remainder"),
    check=Check(shapes=_BINARY_SHAPES, make_args=_remainder_args),
    doc=binary_doc(
        "Remainder of floor division, ``x % y``, with the sign of ``y`` (Python's ``%``).",
        ">>> fnp.remainder(fnp.array([5.0, -5.0]), 3.0)\nTensor([2., 1.], dtype=float64)",
        extra="Differentiable almost everywhere: the derivative in ``x`` is 1 and in ``y`` "
        "is ``-floor(x / y)`` (as JAX), ignoring the jumps where ``x / y`` is an integer.",
    ),
)

floor_divide = defop(
    "floor_divide",
    batch=elementwise_batch,
    kernel=lambda xp, x, y: xp.floor_divide(x, y),
    aval=binary("floor_divide", _bool_as_int8),
    nondiff=True,
    check=Check(shapes=_BINARY_SHAPES, domain=(0.5, 4.0)),
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


maximum = binary_op(
    "maximum",
    lambda xp, x, y: xp.maximum(x, y),
    (lambda t, out, x, y: _balanced(t, x, y), lambda t, out, x, y: _balanced(t, y, x)),
    aval=binary("maximum"),
    check=Check(shapes=_BINARY_SHAPES, make_args=_tie_args),
    doc=binary_doc(
        "Elementwise maximum; NaN if either input is NaN.",
        ">>> fnp.maximum(fnp.array([1.0, 5.0]), 3.0)\nTensor([3., 5.], dtype=float64)",
        extra="At ties ``x == y`` the derivative is split evenly, 0.5 to each input (JAX).",
    ),
)

minimum = binary_op(
    "minimum",
    lambda xp, x, y: xp.minimum(x, y),
    (lambda t, out, x, y: _balanced(t, y, x), lambda t, out, x, y: _balanced(t, x, y)),
    aval=binary("minimum"),
    check=Check(shapes=_BINARY_SHAPES, make_args=_tie_args),
    doc=binary_doc(
        "Elementwise minimum; NaN if either input is NaN.",
        ">>> fnp.minimum(fnp.array([1.0, 5.0]), 3.0)\nTensor([1., 3.], dtype=float64)",
        extra="At ties ``x == y`` the derivative is split evenly, 0.5 to each input (JAX).",
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
    "exp",
    lambda xp, x: xp.exp(x),
    lambda t, out, x: multiply(t, out),
    doc=unary_doc(
        "Natural exponential ``e**x``.",
        ">>> fnp.exp(fnp.array([0.0, 1.0]))\nTensor([1.        , 2.71828183], dtype=float64)",
    ),
    vjp_reads=("out",),
)

expm1 = unary_op(
    "expm1",
    lambda xp, x: xp.expm1(x),
    lambda t, out, x: multiply(t, add(out, 1)),
    doc=unary_doc(
        "``exp(x) - 1``, accurate for small ``x``.",
        ">>> fnp.expm1(fnp.array([1e-10, 1.0]))\n"
        "Tensor([1.00000000e-10, 1.71828183e+00], dtype=float64)",
    ),
    vjp_reads=("out",),
)

log = unary_op(
    "log",
    lambda xp, x: xp.log(x),
    lambda t, out, x: divide(t, x),
    check=Check(domain=(0.2, 3.0)),
    doc=unary_doc(
        "Natural logarithm.",
        ">>> fnp.log(fnp.array([1.0, 100.0]))\nTensor([0.        , 4.60517019], dtype=float64)",
        domain="``x > 0`` (``log(0) = -inf``)",
    ),
)

log1p = unary_op(
    "log1p",
    lambda xp, x: xp.log1p(x),
    lambda t, out, x: divide(t, add(x, 1)),
    check=Check(domain=(-0.5, 3.0)),
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
    "log2",
    lambda xp, x: xp.log2(x),
    lambda t, out, x: divide(t, multiply(x, _LN2)),
    check=Check(domain=(0.2, 3.0)),
    doc=unary_doc(
        "Base-2 logarithm; exact at powers of two.",
        ">>> fnp.log2(fnp.array([8.0, 0.5]))\nTensor([ 3., -1.], dtype=float64)",
        domain="``x > 0``",
    ),
)

log10 = unary_op(
    "log10",
    lambda xp, x: xp.log10(x),
    lambda t, out, x: divide(t, multiply(x, _LN10)),
    check=Check(domain=(0.2, 3.0)),
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


logaddexp = defop(
    "logaddexp",
    batch=elementwise_batch,
    kernel=lambda xp, x, y: xp.logaddexp(x, y),
    aval=binary("logaddexp", floating, real_only=True),
    jvp=(
        lambda t, out, x, y: multiply(t, _logaddexp_weight(x, y)),
        lambda t, out, x, y: multiply(t, _logaddexp_weight(y, x)),
    ),
    vjp=(
        lambda ct, out, x, y: multiply(ct, _logaddexp_weight(x, y)),
        lambda ct, out, x, y: multiply(ct, _logaddexp_weight(y, x)),
    ),
    check=Check(shapes=_BINARY_SHAPES, domain=(-3.0, 3.0)),
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
    "sqrt",
    lambda xp, x: xp.sqrt(x),
    lambda t, out, x: divide(t, multiply(2, out)),
    check=Check(domain=(0.2, 3.0)),
    doc=unary_doc(
        "Non-negative square root.",
        ">>> fnp.sqrt(fnp.array([4.0, 2.0]))\nTensor([2.        , 1.41421356], dtype=float64)",
        domain="``x >= 0``",
        extra="The derivative at 0 is ``inf``, as in JAX and PyTorch.",
    ),
    vjp_reads=("out",),
)

cbrt = unary_op(
    "cbrt",
    lambda xp, x: xp.cbrt(x),
    lambda t, out, x: divide(t, multiply(3, multiply(out, out))),
    # cbrt is outside the Array API standard (numpy and cupy have it), hence strict=False.
    check=Check(make_args=_away_from_zero(), strict=False),
    doc=unary_doc(
        "Real cube root, negative for negative ``x``.",
        ">>> fnp.cbrt(fnp.array([27.0, -8.0]))\nTensor([ 3., -2.], dtype=float64)",
        extra="Real input only. The derivative at 0 is ``inf``, as for ``sqrt``.",
    ),
)

# ---------------------------------------------------------------- trigonometric and hyperbolic

sin = unary_op(
    "sin",
    lambda xp, x: xp.sin(x),
    lambda t, out, x: multiply(t, cos(x)),
    doc=unary_doc(
        "Sine of ``x`` in radians.",
        ">>> fnp.sin(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.84147098], dtype=float64)",
    ),
)

cos = unary_op(
    "cos",
    lambda xp, x: xp.cos(x),
    lambda t, out, x: negative(multiply(t, sin(x))),
    doc=unary_doc(
        "Cosine of ``x`` in radians.",
        ">>> fnp.cos(fnp.array([0.0, 1.0]))\nTensor([1.        , 0.54030231], dtype=float64)",
    ),
)

tan = unary_op(
    "tan",
    lambda xp, x: xp.tan(x),
    lambda t, out, x: multiply(t, add(1, multiply(out, out))),
    check=Check(domain=(-1.2, 1.2)),
    doc=unary_doc(
        "Tangent of ``x`` in radians.",
        ">>> fnp.tan(fnp.array([0.0, 1.0]))\nTensor([0.        , 1.55740772], dtype=float64)",
    ),
)


def _one_minus_sq(x):
    # (1 - x)(1 + x) rather than 1 - x*x: no cancellation near |x| = 1.
    return multiply(subtract(1, x), add(1, x))


arcsin = unary_op(
    "arcsin",
    lambda xp, x: _xp_fn(xp, "asin", "arcsin")(x),
    lambda t, out, x: divide(t, sqrt(_one_minus_sq(x))),
    check=Check(domain=(-0.8, 0.8)),
    doc=unary_doc(
        "Inverse sine, in radians in ``[-pi/2, pi/2]``.",
        ">>> fnp.arcsin(fnp.array([0.0, 1.0]))\nTensor([0.        , 1.57079633], dtype=float64)",
        domain="``[-1, 1]``",
    ),
)

arccos = unary_op(
    "arccos",
    lambda xp, x: _xp_fn(xp, "acos", "arccos")(x),
    lambda t, out, x: negative(divide(t, sqrt(_one_minus_sq(x)))),
    check=Check(domain=(-0.8, 0.8)),
    doc=unary_doc(
        "Inverse cosine, in radians in ``[0, pi]``.",
        ">>> fnp.arccos(fnp.array([1.0, 0.0]))\nTensor([0.        , 1.57079633], dtype=float64)",
        domain="``[-1, 1]``",
    ),
)

arctan = unary_op(
    "arctan",
    lambda xp, x: _xp_fn(xp, "atan", "arctan")(x),
    lambda t, out, x: divide(t, add(1, multiply(x, x))),
    doc=unary_doc(
        "Inverse tangent, in radians in ``(-pi/2, pi/2)``.",
        ">>> fnp.arctan(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.78539816], dtype=float64)",
    ),
)

sinh = unary_op(
    "sinh",
    lambda xp, x: xp.sinh(x),
    lambda t, out, x: multiply(t, cosh(x)),
    doc=unary_doc(
        "Hyperbolic sine.",
        ">>> fnp.sinh(fnp.array([0.0, 1.0]))\nTensor([0.        , 1.17520119], dtype=float64)",
    ),
)

cosh = unary_op(
    "cosh",
    lambda xp, x: xp.cosh(x),
    lambda t, out, x: multiply(t, sinh(x)),
    doc=unary_doc(
        "Hyperbolic cosine.",
        ">>> fnp.cosh(fnp.array([0.0, 1.0]))\nTensor([1.        , 1.54308063], dtype=float64)",
    ),
)

tanh = unary_op(
    "tanh",
    lambda xp, x: xp.tanh(x),
    lambda t, out, x: multiply(t, subtract(1, multiply(out, out))),
    doc=unary_doc(
        "Hyperbolic tangent.",
        ">>> fnp.tanh(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.76159416], dtype=float64)",
    ),
    vjp_reads=("out",),
)

arcsinh = unary_op(
    "arcsinh",
    lambda xp, x: _xp_fn(xp, "asinh", "arcsinh")(x),
    lambda t, out, x: divide(t, hypot(x, 1)),
    # hypot(x, 1) = sqrt(x**2 + 1) without overflow for large |x|.
    doc=unary_doc(
        "Inverse hyperbolic sine.",
        ">>> fnp.arcsinh(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.88137359], dtype=float64)",
    ),
)

arccosh = unary_op(
    "arccosh",
    lambda xp, x: _xp_fn(xp, "acosh", "arccosh")(x),
    lambda t, out, x: divide(t, sqrt(multiply(subtract(x, 1), add(x, 1)))),
    # sqrt((x - 1)(x + 1)) rather than sqrt(x*x - 1): no cancellation near x = 1.
    check=Check(domain=(1.2, 3.0)),
    doc=unary_doc(
        "Inverse hyperbolic cosine.",
        ">>> fnp.arccosh(fnp.array([1.0, 2.0]))\nTensor([0.        , 1.31695790], dtype=float64)",
        domain="``x >= 1``",
    ),
)

arctanh = unary_op(
    "arctanh",
    lambda xp, x: _xp_fn(xp, "atanh", "arctanh")(x),
    lambda t, out, x: divide(t, _one_minus_sq(x)),
    check=Check(domain=(-0.8, 0.8)),
    doc=unary_doc(
        "Inverse hyperbolic tangent.",
        ">>> fnp.arctanh(fnp.array([0.0, 0.5]))\nTensor([0.        , 0.54930614], dtype=float64)",
        domain="``(-1, 1)`` (``+-inf`` at ``+-1``)",
    ),
)


def _sum_sq(x, y):
    return add(multiply(x, x), multiply(y, y))


arctan2 = defop(
    "arctan2",
    batch=elementwise_batch,
    kernel=lambda xp, x, y: _xp_fn(xp, "atan2", "arctan2")(x, y),
    aval=binary("arctan2", floating),
    jvp=(
        lambda t, out, x, y: multiply(t, divide(y, _sum_sq(x, y))),
        lambda t, out, x, y: negative(multiply(t, divide(x, _sum_sq(x, y)))),
    ),
    vjp=(
        lambda ct, out, x, y: multiply(ct, divide(y, _sum_sq(x, y))),
        lambda ct, out, x, y: negative(multiply(ct, divide(x, _sum_sq(x, y)))),
    ),
    # x (the sine side) stays off 0: away from the origin and the branch cut x = 0, y < 0.
    check=Check(
        shapes=_BINARY_SHAPES,
        make_args=lambda rng, shapes: [
            rng.uniform(0.3, 2.0, shapes[0]) * rng.choice([-1.0, 1.0], shapes[0]),
            rng.uniform(-2.0, 2.0, shapes[1]),
        ],
    ),
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


def _safe_over(x, out):
    """``x / out``, and 0 where ``out == 0`` (the zero subgradient of a norm at 0)."""
    return divide(x, where(equal(out, 0), 1, out))


hypot = defop(
    "hypot",
    batch=elementwise_batch,
    kernel=lambda xp, x, y: xp.hypot(x, y),
    aval=binary("hypot", floating),
    jvp=(
        lambda t, out, x, y: multiply(t, _safe_over(x, out)),
        lambda t, out, x, y: multiply(t, _safe_over(y, out)),
    ),
    vjp=(
        lambda ct, out, x, y: multiply(ct, _safe_over(x, out)),
        lambda ct, out, x, y: multiply(ct, _safe_over(y, out)),
    ),
    check=Check(shapes=_BINARY_SHAPES, make_args=_away_from_zero(0.3, 2.0)),
    doc=binary_doc(
        "``sqrt(x**2 + y**2)`` without overflow or underflow.",
        ">>> fnp.hypot(fnp.array([3.0, 1e200]), fnp.array([4.0, 1e200]))\n"
        "Tensor([5.00000000e+000, 1.41421356e+200], dtype=float64)",
        extra="At ``x = y = 0`` the derivative is 0, the zero subgradient PyTorch uses for "
        "norms at 0.",
    ),
)

# ---------------------------------------------------------------- special functions

# erf and erfc: W. J. Cody's rational Chebyshev approximations, "Rational Chebyshev
# approximations for the error function", Math. Comp. 23 (1969) 631-637, in the three-range
# form of his SPECFUN routine CALERF (netlib specfun, 1990), which targets about 1e-18
# relative error. The coefficients are the published ones. Range 1, |x| <= 0.46875:
# erf(x) = x R1(x**2). Range 2, 0.46875 < |x| <= 4: erfc(|x|) = exp(-x**2) R2(|x|). Range 3,
# |x| > 4: erfc(|x|) = exp(-x**2) / |x| * (1/sqrt(pi) + R3(1/x**2) / x**2). exp(-x**2) is
# formed as exp(-s**2) exp(-(x - s)(x + s)) with s = x rounded down to 1/16, which keeps the
# rounding error of x**2 out of the exponent. Every range is evaluated on inputs clamped into
# it and the answer selected with where, so no range overflows on another's inputs.
_ERF_A = (
    3.1611237438705656,
    113.864154151050156,
    377.485237685302021,
    3209.37758913846947,
    0.185777706184603153,
)
_ERF_B = (23.6012909523441209, 244.024637934444173, 1282.61652607737228, 2844.23683343917062)
_ERF_C = (
    0.564188496988670089,
    8.88314979438837594,
    66.1191906371416295,
    298.635138197400131,
    881.95222124176909,
    1712.04761263407058,
    2051.07837782607147,
    1230.33935479799725,
    2.15311535474403846e-8,
)
_ERF_D = (
    15.7449261107098347,
    117.693950891312499,
    537.181101862009858,
    1621.38957456669019,
    3290.79923573345963,
    4362.61909014324716,
    3439.36767414372164,
    1230.33935480374942,
)
_ERF_P = (
    0.305326634961232344,
    0.360344899949804439,
    0.125781726111229246,
    0.0160837851487422766,
    6.58749161529837803e-4,
    0.0163153871373020978,
)
_ERF_Q = (
    2.56852019228982242,
    1.87295284992346047,
    0.527905102951428412,
    0.0605183413124413191,
    0.00233520497626869185,
)
_ERF_THRESH = 0.46875
_ERFC_XBIG = 27.3  # erfc(x) < 4.9e-324, the smallest float64 subnormal, beyond this
_INV_SQRT_PI = 0.56418958354775628695
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _cody_ratio(z, num_coef, den_coef, n):
    """CALERF's loop: ``(z (... (z (a_n z + a_0) + a_1) ...) + a_n-1) / (same with b, lead 1)``."""
    num = num_coef[-1] * z
    den = z
    for i in range(n):
        num = (num + num_coef[i]) * z
        den = (den + den_coef[i]) * z
    return (num + num_coef[n]) / (den + den_coef[n])


def _as_floating(xp, x):
    # Integer and bool inputs compute in float64, as numpy's transcendental functions do.
    if isinstance(x, (bool, int)):
        return float(x)
    if getattr(getattr(x, "dtype", None), "kind", "f") in "biu":
        cast = getattr(xp, "astype", None)  # the Array API function; older cupy: the method
        return cast(x, xp.float64) if cast is not None else x.astype(xp.float64)
    return x


def _erf_small(xp, x):
    """erf(x) for ``|x| <= 0.46875``: range 1."""
    return x * _cody_ratio(x * x, _ERF_A, _ERF_B, 3)


def _erfc_large(xp, y):
    """erfc(y) for ``y > 0.46875`` (ranges 2 and 3); 0 beyond ``_ERFC_XBIG`` (underflow)."""
    y2 = xp.clip(y, _ERF_THRESH, 4.0)
    r2 = _cody_ratio(y2, _ERF_C, _ERF_D, 7)
    y3 = xp.clip(y, 4.0, _ERFC_XBIG)
    z = 1.0 / (y3 * y3)
    r3 = (_INV_SQRT_PI - z * _cody_ratio(z, _ERF_P, _ERF_Q, 4)) / y3
    in2 = y <= 4.0
    yy = xp.where(in2, y2, y3)
    s = xp.floor(yy * 16.0) / 16.0
    r = xp.exp(-s * s) * xp.exp(-(yy - s) * (yy + s)) * xp.where(in2, r2, r3)
    return xp.where(y > _ERFC_XBIG, 0.0, r)


def _erf_kernel(xp, x):
    x = _as_floating(xp, x)
    y = xp.abs(x)
    small = _erf_small(xp, xp.clip(x, -_ERF_THRESH, _ERF_THRESH))
    big = (0.5 - _erfc_large(xp, y)) + 0.5
    return xp.where(y <= _ERF_THRESH, small, xp.where(x < 0, -big, big))


def _erfc_kernel(xp, x):
    x = _as_floating(xp, x)
    y = xp.abs(x)
    small = 1.0 - _erf_small(xp, xp.clip(x, -_ERF_THRESH, _ERF_THRESH))
    big = _erfc_large(xp, y)
    return xp.where(y <= _ERF_THRESH, small, xp.where(x < 0, 2.0 - big, big))


def _gauss(x):
    """``2/sqrt(pi) exp(-x**2)``, the derivative of erf."""
    return multiply(_TWO_OVER_SQRT_PI, exp(negative(multiply(x, x))))


erf = unary_op(
    "erf",
    _erf_kernel,
    lambda t, out, x: multiply(t, _gauss(x)),
    aval=unary(_float64_unless_inexact, name="erf", real_only=True),
    check=Check(domain=(-5.0, 5.0)),
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
    "erfc",
    _erfc_kernel,
    lambda t, out, x: negative(multiply(t, _gauss(x))),
    aval=unary(_float64_unless_inexact, name="erfc", real_only=True),
    check=Check(domain=(-5.0, 5.0)),
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


def _sigmoid_kernel(xp, x):
    if isinstance(x, (bool, int)):
        x = float(x)
    elif not isinstance(x, (float, complex)) and _is_integral(xp, x):  # numpy's promotion for transcendental functions
        x = xp.astype(x, getattr(xp, floating(np.dtype(x.dtype)).name))
    if _is_complex(xp, x):  # holomorphic: the formula itself (its poles are the maths')
        with np.errstate(over="ignore"):  # exp(-z) -> inf gives the limit 0
            return 1.0 / (1.0 + xp.exp(-x))
    # exp(-|x|) never overflows: 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


sigmoid = unary_op(
    "sigmoid",
    _sigmoid_kernel,
    lambda t, out, x: multiply(t, multiply(out, subtract(1, out))),
    aval=unary(floating, name="sigmoid"),
    check=Check(domain=(-4.0, 4.0)),
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
    vjp_reads=("out",),
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


where = defop(
    "where",
    batch=elementwise_batch,
    kernel=lambda xp, cond, x, y: xp.where(cond, x, y),
    aval=_where_aval,
    jvp=(None, lambda t, out, c, x, y: where(c, t, 0), lambda t, out, c, x, y: where(c, 0, t)),
    vjp=(None, lambda ct, out, c, x, y: where(c, ct, 0), lambda ct, out, c, x, y: where(c, 0, ct)),
    check=Check(
        shapes=(((), (), ()), ((3,), (3,), (3,)), ((2, 3), (3,), (2, 1)), ((2, 1), (), (1, 3))),
        make_args=_where_args,
    ),
    doc="""Elements of ``x`` where ``cond`` is true, else of ``y``.

    Elementwise with numpy broadcasting over all three inputs. The derivative flows to
    ``x`` where ``cond`` holds and to ``y`` elsewhere; ``cond`` carries none. The branch
    not taken gets a zero cotangent, so ``where(x > 0, log(x), 0.0)`` has gradient 0 at
    ``x = -1``. As in JAX, a branch whose own derivative is infinite still gives NaN
    (``0 * inf``): for ``where(x > 0, sqrt(x), 0.0)`` at 0, first make the input safe,
    ``sqrt(where(x > 0, x, 1.0))`` (the "double where" trick).

    Args:
        cond: bool Tensor, array or Python bool.
        x: Tensor, array or Python scalar.
        y: Tensor, array or Python scalar.

    Returns:
        Tensor of the broadcast shape of all three and the promoted dtype of ``x``, ``y``.

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> x = fnp.array([-1.0, 4.0])
        >>> fnp.where(x > 0, fnp.sqrt(fnp.abs(x)), 0.0)
        Tensor([0., 2.], dtype=float64)
        >>> safe_log = lambda x: fnp.log(fnp.where(x > 0, x, 1.0))  # no log(-1) warning
        >>> fgrad.grad(lambda x: fnp.where(x > 0, safe_log(x), 0.0))(-1.0)
        Tensor(0., dtype=float64)
    """,
)

# ---------------------------------------------------------------- complex parts and casts

real = defop(
    "real",
    batch=elementwise_batch,
    kernel=lambda xp, x: xp.real(x),
    aval=unary(_real_dtype),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: _real_ct(ct, x),),
    check=Check(),
    doc=unary_doc(
        "Real part; the identity on real input.",
        ">>> fnp.real(fnp.array([1 + 2j]))\nTensor([1.], dtype=float64)",
        extra="Complex input gives its real dtype (complex64 gives float32).",
        keeps_dtype=True,
    ),
)


def _real_ct(ct, x):
    # The transpose of Re(.) maps a real cotangent back into the input's (complex) type.
    return astype(ct, dtype=x.dtype) if np.issubdtype(x.dtype, np.complexfloating) else ct


def _imag_kernel(xp, x):
    # The Array API's imag takes complex input only; numpy's gives zeros for real input.
    return xp.imag(x) if _is_complex(xp, x) else xp.zeros_like(x)


imag = defop(
    "imag",
    batch=elementwise_batch,
    kernel=_imag_kernel,
    aval=unary(_real_dtype),
    jvp=LINEAR,
    # The transpose of Im(.) is ct -> -i ct (JAX's convention); a real input's imaginary
    # part is the constant 0, so it gets no cotangent.
    vjp=(
        lambda ct, out, x: multiply(ct, -1j) if dtypes.is_complex(dtypes.result_type(x)) else None,
    ),
    check=Check(),
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

conj = defop(
    "conj",
    batch=elementwise_batch,
    kernel=lambda xp, x: xp.conj(x),
    aval=unary(_bool_as_int8),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: conj(ct),),
    check=Check(),
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


astype = defop(
    "astype",
    batch=elementwise_batch,
    kernel=_astype_kernel,
    aval=lambda x, *, dtype: x._replace(dtype=np.dtype(dtype)),
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, dtype: astype(ct, dtype=x.dtype),),
    check=Check(params=({"dtype": np.dtype(np.float64)},), dtype=np.float32),
    doc="""Cast to ``dtype``; differentiable between floating dtypes.

    Args:
        x: Tensor of any shape.
        dtype: a numpy dtype (canonical: ``np.dtype``).

    Returns:
        Tensor of ``x.shape`` and ``dtype``. Casts to integer or bool dtypes carry no
        gradient (the result is not traced).

    Example:
        >>> fnp.astype(fnp.array([1.5, 2.5]), np.dtype("float32"))
        Tensor([1.5, 2.5], dtype=float32)
    """,
)

# ---------------------------------------------------------------- no derivative


def _nondiff_doc(
    summary: str, example: str, *, returns: str, nargs: int = 1, extra: str = ""
) -> str:
    """Docstring of a piecewise-constant or boolean elementwise op (no derivative)."""
    if nargs == 1:
        arg_text = "x: Tensor, array or Python scalar of any shape."
    else:
        arg_text = (
            "x: Tensor, array or Python scalar.\n"
            "        y: Tensor, array or Python scalar; shape broadcastable with ``x``."
        )
    example = example.strip().replace("\n", "\n        ")
    broadcasting = " with numpy broadcasting" if nargs > 1 else ""
    return f"""{summary}

    Elementwise{broadcasting}. It carries no derivative: the result is not traced, so
    gradients through it are zero.{(" " + extra) if extra else ""}

    Args:
        {arg_text}

    Returns:
        {returns}

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: a dtype the op does not accept.

    Example:
        {example}
    """


def _bool_args(rng, shapes):
    return [rng.uniform(0, 1, s) < 0.5 for s in shapes]


def _int_args(rng, shapes):
    return [rng.integers(-8, 8, s) for s in shapes]


def _nondiff(name, kernel, summary, example, *, aval, returns, nargs=1, make_args=None, extra=""):
    shapes = _BINARY_SHAPES if nargs == 2 else Check.shapes
    return defop(
        name,
        batch=elementwise_batch,
        kernel=kernel,
        aval=aval,
        nondiff=True,
        check=Check(shapes=shapes, make_args=make_args),
        doc=_nondiff_doc(summary, example, returns=returns, nargs=nargs, extra=extra),
    )


def _round_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float16) if dtype == np.bool_ else dtype  # numpy rounds bools to float16


_ROUNDED = {
    "aval": unary(same),
    "returns": "Tensor of ``x.shape`` and dtype (integers stay integers).",
}
_PREDICATE = {"aval": unary(to_bool), "returns": "bool Tensor of ``x.shape``."}
_nan_inf = ">>> x = fnp.array([1.0, -float('inf'), float('nan')])\n"

floor = _nondiff(
    "floor",
    lambda xp, x: xp.floor(x),
    "Largest integer not greater than ``x``.",
    ">>> fnp.floor(fnp.array([-1.5, 1.5]))\nTensor([-2.,  1.], dtype=float64)",
    **_ROUNDED,
)
ceil = _nondiff(
    "ceil",
    lambda xp, x: xp.ceil(x),
    "Smallest integer not less than ``x``.",
    ">>> fnp.ceil(fnp.array([-1.5, 1.5]))\nTensor([-1.,  2.], dtype=float64)",
    **_ROUNDED,
)
trunc = _nondiff(
    "trunc",
    lambda xp, x: xp.trunc(x),
    "``x`` rounded towards zero.",
    ">>> fnp.trunc(fnp.array([-1.5, 1.5]))\nTensor([-1.,  1.], dtype=float64)",
    **_ROUNDED,
)
round = _nondiff(
    "round",
    lambda xp, x: xp.round(x),
    "``x`` rounded to the nearest integer, halves to even (``fnp.round`` adds ``decimals``).",
    ">>> fnp.round(fnp.array([0.5, 1.5, 2.7]))\nTensor([0., 2., 3.], dtype=float64)",
    aval=unary(_round_dtype),
    returns="Tensor of ``x.shape`` and dtype (integers stay integers).",
)
sign = _nondiff(
    "sign",
    lambda xp, x: xp.sign(x),
    "Sign of ``x``: -1, 0 or 1 (``x / |x|`` for complex, 0 at 0).",
    ">>> fnp.sign(fnp.array([-2.0, 0.0, 3.0]))\nTensor([-1.,  0.,  1.], dtype=float64)",
    extra="Its derivative is 0 almost everywhere, as JAX's.",
    **_ROUNDED,
)
isfinite = _nondiff(
    "isfinite",
    lambda xp, x: xp.isfinite(x),
    "True where ``x`` is neither infinite nor NaN.",
    _nan_inf + ">>> fnp.isfinite(x)\nTensor([ True, False, False], dtype=bool)",
    **_PREDICATE,
)
isinf = _nondiff(
    "isinf",
    lambda xp, x: xp.isinf(x),
    "True where ``x`` is positive or negative infinity.",
    _nan_inf + ">>> fnp.isinf(x)\nTensor([False,  True, False], dtype=bool)",
    **_PREDICATE,
)
isnan = _nondiff(
    "isnan",
    lambda xp, x: xp.isnan(x),
    "True where ``x`` is NaN.",
    _nan_inf + ">>> fnp.isnan(x)\nTensor([False, False,  True], dtype=bool)",
    **_PREDICATE,
)
logical_not = _nondiff(
    "logical_not",
    lambda xp, x: xp.logical_not(x),
    "Logical NOT.",
    ">>> fnp.logical_not(fnp.array([True, False]))\nTensor([False,  True], dtype=bool)",
    make_args=_bool_args,
    **_PREDICATE,
)


def _compare(name, kernel, summary, example, make_args=None):
    return _nondiff(
        name,
        kernel,
        summary,
        example,
        aval=binary(name, to_bool),
        returns="bool Tensor of the broadcast shape.",
        nargs=2,
        make_args=make_args,
    )


_x = ">>> x = fnp.array([1.0, 2.0, 3.0])\n"
less = _compare(
    "less",
    lambda xp, x, y: xp.less(x, y),
    "``x < y``.",
    _x + ">>> fnp.less(x, 2.0)\nTensor([ True, False, False], dtype=bool)",
)
less_equal = _compare(
    "less_equal",
    lambda xp, x, y: xp.less_equal(x, y),
    "``x <= y``.",
    _x + ">>> fnp.less_equal(x, 2.0)\nTensor([ True,  True, False], dtype=bool)",
)
greater = _compare(
    "greater",
    lambda xp, x, y: xp.greater(x, y),
    "``x > y``.",
    _x + ">>> fnp.greater(x, 2.0)\nTensor([False, False,  True], dtype=bool)",
)
greater_equal = _compare(
    "greater_equal",
    lambda xp, x, y: xp.greater_equal(x, y),
    "``x >= y``.",
    _x + ">>> fnp.greater_equal(x, 2.0)\nTensor([False,  True,  True], dtype=bool)",
)
equal = _compare(
    "equal",
    lambda xp, x, y: xp.equal(x, y),
    "``x == y``.",
    _x + ">>> fnp.equal(x, 2.0)\nTensor([False,  True, False], dtype=bool)",
)
not_equal = _compare(
    "not_equal",
    lambda xp, x, y: xp.not_equal(x, y),
    "``x != y``.",
    _x + ">>> fnp.not_equal(x, 2.0)\nTensor([ True, False,  True], dtype=bool)",
)
_b = ">>> a, b = fnp.array([True, True, False]), fnp.array([True, False, False])\n"
logical_and = _compare(
    "logical_and",
    lambda xp, x, y: xp.logical_and(x, y),
    "Logical AND.",
    _b + ">>> fnp.logical_and(a, b)\nTensor([ True, False, False], dtype=bool)",
    _bool_args,
)
logical_or = _compare(
    "logical_or",
    lambda xp, x, y: xp.logical_or(x, y),
    "Logical OR.",
    _b + ">>> fnp.logical_or(a, b)\nTensor([ True,  True, False], dtype=bool)",
    _bool_args,
)
logical_xor = _compare(
    "logical_xor",
    lambda xp, x, y: xp.logical_xor(x, y),
    "Logical exclusive OR.",
    _b + ">>> fnp.logical_xor(a, b)\nTensor([False,  True, False], dtype=bool)",
    _bool_args,
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


def _bitwise(name, kernel, summary, example, nargs=2):
    return _nondiff(
        name,
        kernel,
        summary,
        example,
        aval=_bitwise_aval(name),
        returns="Tensor of the broadcast shape and promoted integer (or bool) dtype.",
        nargs=nargs,
        make_args=_int_args,
        extra="Integer and bool inputs only (on bools it is the logical operation).",
    )


bitwise_and = _bitwise(
    "bitwise_and",
    lambda xp, x, y: xp.bitwise_and(x, y),
    "Bitwise AND, ``x & y``.",
    ">>> fnp.bitwise_and(fnp.array([12, 10]), 6)\nTensor([4, 2], dtype=int64)",
)
bitwise_or = _bitwise(
    "bitwise_or",
    lambda xp, x, y: xp.bitwise_or(x, y),
    "Bitwise OR, ``x | y``.",
    ">>> fnp.bitwise_or(fnp.array([12, 10]), 6)\nTensor([14, 14], dtype=int64)",
)
bitwise_xor = _bitwise(
    "bitwise_xor",
    lambda xp, x, y: xp.bitwise_xor(x, y),
    "Bitwise exclusive OR, ``x ^ y``.",
    ">>> fnp.bitwise_xor(fnp.array([12, 10]), 6)\nTensor([10, 12], dtype=int64)",
)
invert = _bitwise(
    "invert",
    lambda xp, x: _xp_fn(xp, "bitwise_invert", "invert")(x),
    "Bitwise NOT, ``~x``; logical NOT on bools.",
    ">>> fnp.invert(fnp.array([True, False]))\nTensor([False,  True], dtype=bool)\n"
    ">>> fnp.invert(fnp.array([0, 5]))\nTensor([-1, -6], dtype=int64)",
    nargs=1,
)

optimization_barrier = defop(
    "optimization_barrier",
    batch=elementwise_batch,
    # A copy, not the input itself: jit's buffer planner may write in place into this
    # output once it is dead, which must never touch the (still live) input.
    kernel=lambda xp, x: xp.asarray(x, copy=True),
    aval=unary(same),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: ct,),
    check=Check(),
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

stop_gradient = defop(
    "stop_gradient",
    batch=elementwise_batch,
    kernel=lambda xp, x: x,
    aval=unary(same),
    nondiff=True,
    check=Check(),
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


full_like = defop(
    "full_like",
    batch=elementwise_batch,
    kernel=_full_like_kernel,
    aval=lambda x, *, fill_value, dtype: x._replace(dtype=np.dtype(dtype or x.dtype)),
    nondiff=True,
    check=Check(params=({"fill_value": 2.0, "dtype": None},)),
    doc="""A Tensor of ``x``'s shape (and dtype, unless ``dtype`` is given) filled with one value.

    Args:
        x: Tensor giving the shape, dtype and device.
        fill_value: Python scalar.
        dtype: optional dtype; None keeps ``x.dtype``.

    Returns:
        Tensor of ``x.shape``; it carries no derivative.

    Example:
        >>> fnp.full_like(fnp.array([1.0, 2.0]), 7.0)
        Tensor([7., 7.], dtype=float64)
    """,
)
