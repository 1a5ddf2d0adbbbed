"""Elementwise ops: arithmetic, transcendental functions, comparisons, logic, casts.

Each VJP rule is the transpose of the op's linearisation (no conjugation), which is JAX's
convention for complex numbers; for real inputs it is the ordinary chain rule.
"""

from __future__ import annotations

import numpy as np

from fgrad.core.op import LINEAR, Check, defop
from fgrad.ops._doc import binary_doc, unary_doc
from fgrad.ops._rules import binary, floating, same, unary

# ---------------------------------------------------------------- arithmetic

neg = defop(
    "negative",
    kernel=lambda xp, x: xp.negative(x),
    aval=unary(same),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: negative(ct),),
    check=Check(),
    doc=unary_doc("Numerical negative, ``-x``.", ">>> fnp.negative(fnp.array([1.0, -2.0]))\nTensor([-1.,  2.], dtype=float64)"),
)
negative = neg

add = defop(
    "add",
    kernel=lambda xp, x, y: xp.add(x, y),
    aval=binary("add"),
    jvp=(lambda t, out, x, y: t, lambda t, out, x, y: t),
    vjp=(lambda ct, out, x, y: ct, lambda ct, out, x, y: ct),
    check=Check(shapes=(((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)))),
    doc=binary_doc("Sum ``x + y``.", ">>> fnp.add(fnp.array([1.0, 2.0]), 3.0)\nTensor([4., 5.], dtype=float64)"),
)

subtract = defop(
    "subtract",
    kernel=lambda xp, x, y: xp.subtract(x, y),
    aval=binary("subtract"),
    jvp=(lambda t, out, x, y: t, lambda t, out, x, y: negative(t)),
    vjp=(lambda ct, out, x, y: ct, lambda ct, out, x, y: negative(ct)),
    check=Check(shapes=(((), ()), ((2, 3), (3,)), ((2, 1), (1, 3)))),
    doc=binary_doc("Difference ``x - y``.", ">>> fnp.subtract(fnp.array([1.0, 2.0]), 3.0)\nTensor([-2., -1.], dtype=float64)"),
)

multiply = defop(
    "multiply",
    kernel=lambda xp, x, y: xp.multiply(x, y),
    aval=binary("multiply"),
    jvp=(lambda t, out, x, y: multiply(t, y), lambda t, out, x, y: multiply(x, t)),
    vjp=(lambda ct, out, x, y: multiply(ct, y), lambda ct, out, x, y: multiply(x, ct)),
    check=Check(shapes=(((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)))),
    doc=binary_doc("Product ``x * y``.", ">>> fnp.multiply(fnp.array([1.0, 2.0]), 3.0)\nTensor([3., 6.], dtype=float64)"),
)

divide = defop(
    "divide",
    kernel=lambda xp, x, y: xp.divide(x, y),
    aval=binary("divide", floating),
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
        make_args=lambda rng, shapes: [rng.uniform(-2, 2, shapes[0]), rng.uniform(0.5, 2, shapes[1]) * rng.choice([-1, 1], shapes[1])],
    ),
    doc=binary_doc("True division ``x / y``; integer inputs give float64.", ">>> fnp.divide(fnp.array([1.0, 2.0]), 4.0)\nTensor([0.25, 0.5 ], dtype=float64)"),
)

# ---------------------------------------------------------------- transcendental

exp = defop(
    "exp",
    kernel=lambda xp, x: xp.exp(x),
    aval=unary(floating),
    jvp=(lambda t, out, x: multiply(t, out),),
    vjp=(lambda ct, out, x: multiply(ct, out),),
    check=Check(),
    doc=unary_doc("Natural exponential ``e**x``.", ">>> fnp.exp(fnp.array([0.0, 1.0]))\nTensor([1.        , 2.71828183], dtype=float64)"),
)

log = defop(
    "log",
    kernel=lambda xp, x: xp.log(x),
    aval=unary(floating),
    jvp=(lambda t, out, x: divide(t, x),),
    vjp=(lambda ct, out, x: divide(ct, x),),
    check=Check(domain=(0.2, 3.0)),
    doc=unary_doc("Natural logarithm.", ">>> fnp.log(fnp.array([1.0, 100.0]))\nTensor([0.        , 4.60517019], dtype=float64)", domain="``x > 0`` (``log(0) = -inf``)"),
)

sin = defop(
    "sin",
    kernel=lambda xp, x: xp.sin(x),
    aval=unary(floating),
    jvp=(lambda t, out, x: multiply(t, cos(x)),),
    vjp=(lambda ct, out, x: multiply(ct, cos(x)),),
    check=Check(),
    doc=unary_doc("Sine of ``x`` in radians.", ">>> fnp.sin(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.84147098], dtype=float64)"),
)

cos = defop(
    "cos",
    kernel=lambda xp, x: xp.cos(x),
    aval=unary(floating),
    jvp=(lambda t, out, x: negative(multiply(t, sin(x))),),
    vjp=(lambda ct, out, x: negative(multiply(ct, sin(x))),),
    check=Check(),
    doc=unary_doc("Cosine of ``x`` in radians.", ">>> fnp.cos(fnp.array([0.0, 1.0]))\nTensor([1.        , 0.54030231], dtype=float64)"),
)

tanh = defop(
    "tanh",
    kernel=lambda xp, x: xp.tanh(x),
    aval=unary(floating),
    jvp=(lambda t, out, x: multiply(t, subtract(1, multiply(out, out))),),
    vjp=(lambda ct, out, x: multiply(ct, subtract(1, multiply(out, out))),),
    check=Check(),
    doc=unary_doc("Hyperbolic tangent.", ">>> fnp.tanh(fnp.array([0.0, 1.0]))\nTensor([0.        , 0.76159416], dtype=float64)"),
)

sqrt = defop(
    "sqrt",
    kernel=lambda xp, x: xp.sqrt(x),
    aval=unary(floating),
    jvp=(lambda t, out, x: divide(t, multiply(2, out)),),
    vjp=(lambda ct, out, x: divide(ct, multiply(2, out)),),
    check=Check(domain=(0.2, 3.0)),
    doc=unary_doc(
        "Non-negative square root.",
        ">>> fnp.sqrt(fnp.array([4.0, 2.0]))\nTensor([2.        , 1.41421356], dtype=float64)",
        domain="``x >= 0``",
        extra="The derivative at 0 is ``inf``, as in JAX and PyTorch.",
    ),
)

# ---------------------------------------------------------------- complex parts and casts

real = defop(
    "real",
    kernel=lambda xp, x: xp.real(x),
    aval=unary(lambda d: np.dtype(np.real(np.zeros((), d)).dtype)),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: _real_ct(ct, x),),
    check=Check(),
    doc=unary_doc("Real part; the identity on real input.", ">>> fnp.real(fnp.array([1 + 2j]))\nTensor([1.], dtype=float64)"),
)


def _real_ct(ct, x):
    # The transpose of Re(.) maps a real cotangent back into the input's (complex) type.
    return astype(ct, dtype=x.dtype) if np.issubdtype(x.dtype, np.complexfloating) else ct


conj = defop(
    "conj",
    kernel=lambda xp, x: xp.conj(x),
    aval=unary(same),
    jvp=LINEAR,
    vjp=(lambda ct, out, x: conj(ct),),
    check=Check(),
    doc=unary_doc("Complex conjugate; the identity on real input.", ">>> fnp.conj(fnp.array([1 + 2j]))\nTensor([1.-2.j], dtype=complex128)"),
)


def _astype_kernel(xp, x, *, dtype):
    if isinstance(x, (bool, int, float, complex)):
        return xp.asarray(x, dtype=dtype)
    return xp.astype(x, dtype, copy=False)


astype = defop(
    "astype",
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

stop_gradient = defop(
    "stop_gradient",
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
    if isinstance(x, (bool, int, float, complex)):
        return xp.full((), fill_value, dtype=dtype)
    return xp.full(x.shape, fill_value, dtype=dtype or x.dtype)


full_like = defop(
    "full_like",
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
