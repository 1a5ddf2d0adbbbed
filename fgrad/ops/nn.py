"""Neural-network ops with their own kernels or derivative conventions: relu, softmax,
log_softmax, and the fused ops of a transformer block (softmax_jvp, gelu_tanh_gate,
standardize with standardize_grad, scale_shift, bias_add with sum_rows). The smooth
activations built from other ops (gelu, silu, softplus) are composites in
:mod:`fgrad.nn`, and sigmoid lives with the elementwise ops.

softmax and log_softmax take canonical ``axes`` (a sorted tuple of non-negative ints);
:func:`fgrad.nn.softmax` and :func:`fgrad.nn.log_softmax` accept JAX's ``axis``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fgrad import dtypes
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import axes_batch, batch_size, elementwise_batch, with_batch
from fgrad.ops._rules import binary, floating, ndim_of, refuses_complex, same, shape_of, unary
from fgrad.ops.elementwise import add, divide, exp, greater, multiply, subtract, where
from fgrad.ops.reduction import broadcasting_axes_batch, narrow, widen
from fgrad.ops.reduction import sum as _sum
from fgrad.ops.shape import broadcast_to, reshape
from fgrad.tensor import ShapeDtype

# Kernel helpers. Kernels that chain several operations write into their own temporaries
# where the namespace allows (``_into``), and sum the rows of a matrix with one
# matrix-vector product or ``vecdot`` (BLAS): numpy's ``sum`` over short rows or down
# columns is several times slower (20 us against 4 us for (512, 128) float32 rows).


def _into(f: Any, *args: Any, out: Any) -> Any:
    """``f(*args)`` written into ``out`` where ``f`` takes ``out=`` (numpy's and cupy's
    ufuncs); a new array where it does not (array_api_strict) or cannot (numpy scalars,
    a dtype ``out`` does not hold)."""
    try:
        return f(*args, out=out)
    except TypeError:
        return f(*args)


def _keeps(a: Any, b: Any) -> bool:
    """``a op b`` has ``a``'s dtype, so it may be written into ``a`` (numpy would cast a
    wider result down into ``out`` without a word)."""
    return getattr(b, "dtype", a.dtype) == a.dtype


def _row_dot(xp, a, b):
    """Row-wise dot products of two 2-D arrays: one pass, no temporary (``vecdot``)."""
    vecdot = getattr(xp, "vecdot", None)
    if vecdot is None:
        return xp.sum(a * b, axis=-1)
    return vecdot(a, b)


def _column(xp, v):
    return xp.reshape(v, (-1, 1))


# float16 inputs of the kernels that sum (softmax and its derivative, log_softmax,
# standardize and its gradient) compute in float32 and round their results once, as the
# reductions do (see fgrad.ops.reduction): a float16 row sum stops growing at 2048 and a
# float16 mean of values near 200 is off by up to 0.06, which layer normalisation then
# divides by the row's standard deviation.
_HALF = dtypes.float16


def _all_half(*arrays: Any) -> bool:
    """Every array input is float16 (Python scalars are weak): the result is float16."""
    seen = False
    for a in arrays:
        dtype = getattr(a, "dtype", None)
        if dtype is None:
            continue
        if dtype is not _HALF:
            return False
        seen = True
    return seen


def _is_scalar(value: Any, number: float) -> bool:
    return type(value) in (int, float) and value == number


def _example(x: Any, dim: Any) -> Any:
    """What one example of a vmap rule's input looks like, for the op's aval checks: a
    batched value without its mapped axis; a shared one as it is."""
    return x if dim is None else ShapeDtype(shape_of(x)[1:], x.dtype)


def _real_floating(name: str, x: Any) -> np.dtype:
    dtype = np.dtype(dtypes.result_type(x))
    if dtype.kind != "f":
        raise DTypeError(
            f"{name}: needs a real floating input, got {ShapeDtype(shape_of(x), dtype)}; "
            "cast with astype first"
        )
    return dtype


def _relu_args(rng, shapes):
    # Off the kink at 0, where finite differences would straddle the two pieces.
    return [rng.uniform(0.2, 2.0, s) * rng.choice([-1.0, 1.0], s) for s in shapes]


relu = defop(
    "relu",
    kernel=lambda xp, x: xp.maximum(x, 0),
    aval=unary(same, name="relu", real_only=True),  # as its docstring says (PyTorch too)
    # where(x > 0, ., 0) and not maximum's rule: relu'(0) = 0 (JAX, PyTorch), not 0.5.
    batch=elementwise_batch,
    jvp=(lambda t, out, x: where(greater(x, 0), t, 0),),
    vjp=(lambda ct, out, x: where(greater(x, 0), ct, 0),),
    check=Check(make_args=_relu_args),
    doc="""Rectified linear unit, ``max(x, 0)``.

    Elementwise. The derivative is 1 for ``x > 0`` and 0 otherwise, including at
    ``x = 0`` (JAX's and PyTorch's convention). NaN stays NaN.

    Args:
        x: Tensor, array or Python scalar of any shape and real dtype.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import relu
        >>> relu(fnp.array([-1.0, 0.0, 2.0]))
        Tensor([0., 0., 2.], dtype=float64)
        >>> fgrad.grad(relu)(0.0)
        Tensor(0., dtype=float64)
    """,
)


def _axes_aval(name):
    elementwise = unary(floating, name=name, real_only=True)
    return lambda x, *, axes: elementwise(x)


# Softmax over the last axis without row maxima, which take numpy 1 ns per element over
# short rows (132 us for (2048, 64) float32 scores, more than exp). Any shift of the
# exponents gives the same values; this one uses none when the largest entry of the whole
# array is at most ``span`` (exp cannot overflow), else that largest entry, and keeps the
# result when every row's sum is at least ``n exp(-span)``: then each row's largest term
# is at least exp(-span) (8.8e-27 in float32), so every term that counts at the dtype's
# precision is a normal number (float32: tiny / eps = 1e-31; float64: exp(-671)).
# Otherwise (masked rows, NaN, inf) it falls back to the usual per-row maximum.
_SHIFT_SPAN = {"f": 60.0, "d": 600.0}  # by dtype character: float32, float64
_SHIFT_MIN_SIZE = 4096  # smaller arrays: the extra calls cost more than the row maxima


def _softmax_kernel(xp, x, *, axes, out=None):
    """``out``: optional array of ``x``'s shape and dtype to write the result into (jit's
    buffers)."""
    if x.dtype is _HALF:
        y = _softmax_kernel(xp, widen(xp, x), axes=axes)
        if out is None:
            return narrow(xp, y, _HALF)
        out[...] = y  # jit's buffers are numpy arrays
        return out
    shape = tuple(x.shape)
    n = shape[-1] if shape else 0
    span = _SHIFT_SPAN.get(getattr(x.dtype, "char", None))
    if axes == (len(shape) - 1,) and n > 1 and span is not None and x.size >= _SHIFT_MIN_SIZE:
        x2 = xp.reshape(x, (-1, n))
        e = None if out is None else xp.reshape(out, x2.shape)
        top = xp.max(x2)
        if bool(top <= span):
            e = _into(xp.exp, x2, out=e)
        else:
            e = _into(xp.subtract, x2, top, out=e)
            e = _into(xp.exp, e, out=e)
        total = xp.matmul(e, xp.ones((n,), dtype=e.dtype))
        if bool(xp.min(total) >= n * math.exp(-span)):  # False for NaN too
            e = _into(xp.divide, e, _column(xp, total), out=e)
            return out if out is not None else xp.reshape(e, shape)
    # Shift by the maximum over ``axes`` so exp never overflows (the largest exponent is 0).
    e = _into(xp.subtract, x, xp.max(x, axis=axes, keepdims=True), out=out)
    e = _into(xp.exp, e, out=e)
    return _into(xp.divide, e, xp.sum(e, axis=axes, keepdims=True), out=e)


def _softmax_rule(t, out, x, *, axes):
    # J = diag(s) - s s^T is symmetric, so the JVP and the VJP are the same map.
    return softmax_jvp(t, out, axes=axes)


_AXES_CHECK = Check(
    shapes=(((2, 3),),),
    params=({"axes": (1,)}, {"axes": (0,)}, {"axes": (0, 1)}),
    domain=(-3.0, 3.0),
)

softmax = defop(
    "softmax",
    kernel=_softmax_kernel,
    aval=_axes_aval("softmax"),
    batch=axes_batch,
    jvp=(_softmax_rule,),
    vjp=(_softmax_rule,),
    vjp_reads=("out",),
    check=_AXES_CHECK,
    doc="""Softmax over ``axes``: ``exp(x) / sum(exp(x), axes)``, computed without overflow.

    The kernel shifts the exponents so that they never overflow (by the maximum over
    ``axes``; over the last axis by one common value, or none, when every row allows it), and
    the derivative ``s * (t - sum(s * t))`` (:func:`softmax_jvp`) is formed from the output
    ``s``, so inputs like 1000 give finite values and derivatives. ``-inf`` entries get
    probability 0.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype (integers are promoted to float64).
        axes: sorted tuple of the axes to normalise over (``fgrad.nn.softmax`` takes
            ``axis``, default -1).

    Returns:
        Tensor of ``x.shape`` and floating dtype, non-negative, summing to 1 over ``axes``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import softmax
        >>> softmax(fnp.array([1000.0, 1000.0, -float("inf")]))
        Tensor([0.5, 0.5, 0. ], dtype=float64)
    """,
)


def _softmax_jvp_kernel(xp, t, s, *, axes):
    if _all_half(t, s):
        return narrow(xp, _softmax_jvp_kernel(xp, widen(xp, t), widen(xp, s), axes=axes), _HALF)
    shape = tuple(t.shape)
    n = shape[-1] if shape else 0
    if axes == (len(shape) - 1,) and n > 1 and tuple(s.shape) == shape:
        t2 = xp.reshape(t, (-1, n))
        s2 = xp.reshape(s, (-1, n))
        y = t2 - _column(xp, _row_dot(xp, t2, s2))
        y = _into(xp.multiply, y, s2, out=y) if _keeps(y, s2) else y * s2
        return xp.reshape(y, shape)
    return (t - xp.sum(t * s, axis=axes, keepdims=True)) * s


def _softmax_jvp_aval(t, s, *, axes):
    _real_floating("softmax_jvp", t)
    _real_floating("softmax_jvp", s)
    return binary("softmax_jvp")(t, s)


def _softmax_jvp_ds(ts, out, t, s, *, axes):
    # d/ds of s (t - <t, s>) along ts: ts (t - <t, s>) - s <t, ts>.
    inner = subtract(t, _sum(multiply(t, s), axes=axes, keepdims=True))
    return subtract(
        multiply(ts, inner), multiply(s, _sum(multiply(t, ts), axes=axes, keepdims=True))
    )


def _softmax_jvp_s_ct(ct, out, t, s, *, axes):
    # The transpose of the map above: ct (t - <t, s>) - t <ct, s>.
    inner = subtract(t, _sum(multiply(t, s), axes=axes, keepdims=True))
    return subtract(
        multiply(ct, inner), multiply(t, _sum(multiply(ct, s), axes=axes, keepdims=True))
    )


softmax_jvp = defop(
    "softmax_jvp",
    kernel=_softmax_jvp_kernel,
    aval=_softmax_jvp_aval,
    # Linear in t, with a symmetric matrix: the rule for t is the op itself, both ways.
    batch=broadcasting_axes_batch,
    jvp=(lambda tt, out, t, s, *, axes: softmax_jvp(tt, s, axes=axes), _softmax_jvp_ds),
    vjp=(lambda ct, out, t, s, *, axes: softmax_jvp(ct, s, axes=axes), _softmax_jvp_s_ct),
    vjp_reads=("inputs",),
    check=Check(
        shapes=(((2, 3), (2, 3)),),
        params=({"axes": (1,)}, {"axes": (0,)}, {"axes": (0, 1)}),
    ),
    doc="""The derivative of softmax at output ``s`` applied to ``t``: ``s * (t - sum(s * t, axes))``.

    The Jacobian ``diag(s) - s s^T`` of :func:`softmax` is symmetric, so this is both its
    JVP and its VJP. Over the last axis it takes one ``vecdot`` for the sums, two passes
    for the rest.

    Args:
        t: Tensor of ``s``'s shape, real floating: the tangent or cotangent.
        s: Tensor, the softmax output.
        axes: sorted tuple of the axes softmax normalised over.

    Returns:
        Tensor of the broadcast shape and promoted dtype.

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> from fgrad.ops.nn import softmax_jvp
        >>> softmax_jvp(fnp.array([1.0, 0.0]), fnp.array([0.5, 0.5]), axes=(0,))
        Tensor([ 0.25, -0.25], dtype=float64)
    """,
)


def _log_softmax_kernel(xp, x, *, axes):
    if getattr(x, "dtype", None) is _HALF:
        return narrow(xp, _log_softmax_kernel(xp, widen(xp, x), axes=axes), _HALF)
    shifted = x - xp.max(x, axis=axes, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axes, keepdims=True))


log_softmax = defop(
    "log_softmax",
    kernel=_log_softmax_kernel,
    aval=_axes_aval("log_softmax"),
    # d out = t - sum(softmax * t), with softmax = exp(out) <= 1: nothing overflows.
    batch=axes_batch,
    jvp=(
        lambda t, out, x, *, axes: subtract(
            t, _sum(multiply(exp(out), t), axes=axes, keepdims=True)
        ),
    ),
    vjp=(
        lambda ct, out, x, *, axes: subtract(
            ct, multiply(exp(out), _sum(ct, axes=axes, keepdims=True))
        ),
    ),
    check=_AXES_CHECK,
    doc="""Log of the softmax over ``axes``: ``x - logsumexp(x, axes)``, without overflow.

    The kernel subtracts the maximum over ``axes`` before exponentiating, and the
    derivative ``t - sum(exp(out) * t)`` uses ``exp(out) <= 1``, so inputs like 1000
    give finite values and derivatives.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype (integers are promoted to float64).
        axes: sorted tuple of the axes to normalise over (``fgrad.nn.log_softmax`` takes
            ``axis``, default -1).

    Returns:
        Tensor of ``x.shape`` and floating dtype; ``exp`` of it sums to 1 over ``axes``.

    Raises:
        DTypeError: complex input.

    Example:
        >>> from fgrad.nn import log_softmax
        >>> log_softmax(fnp.array([1000.0, 1000.0]))
        Tensor([-0.69314718, -0.69314718], dtype=float64)
    """,
)


# ------------------------------------------------------------------------ fused ops
# A transformer block spends most of its non-matmul time in short elementwise chains (the
# tanh GELU, layer normalisation and their derivatives) and in reductions that numpy runs
# slowly over short rows or down columns. Each op below is such a chain in one kernel: it
# makes fewer passes over memory than the composite it replaces (temporaries reused in
# place where the namespace allows), and it sums rows and columns with one matrix-vector
# product (BLAS), which for (512, 128) float32 rows is 4 us against 20 us for ``sum``.
# Their derivative rules are written with fgrad ops, so grad of grad still works.

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _gelu_tanh_gate_kernel(xp, x):
    # The operations of the composite 0.5 * x * (1 + tanh(C * (x + A * x**3))), in its
    # order, on one buffer: gelu_tanh(x) = x * gate(x) equals the composite bit for bit
    # (the factor 0.5 is exact).
    z = x * x
    z *= x
    z *= _GELU_A
    z += x
    z *= _GELU_C
    z = _into(xp.tanh, z, out=z)
    z += 1.0
    z *= 0.5
    return z


def _gelu_tanh_gate_derivative(out, x):
    # gate' = 0.5 C (1 - t^2)(1 + 3 A x^2) with t = 2 gate - 1, so 1 - t^2 = 4 gate (1 - gate):
    # no tanh to recompute.
    k = add(multiply(multiply(x, x), 6.0 * _GELU_C * _GELU_A), 2.0 * _GELU_C)
    return multiply(multiply(out, subtract(1.0, out)), k)


gelu_tanh_gate = defop(
    "gelu_tanh_gate",
    kernel=_gelu_tanh_gate_kernel,
    aval=refuses_complex(lambda x: ShapeDtype(shape_of(x), _real_floating("gelu_tanh_gate", x))),
    batch=elementwise_batch,
    jvp=(lambda t, out, x: multiply(t, _gelu_tanh_gate_derivative(out, x)),),
    vjp=(lambda ct, out, x: multiply(ct, _gelu_tanh_gate_derivative(out, x)),),
    check=Check(domain=(-3.0, 3.0)),
    doc="""The gate of the tanh GELU: ``0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``.

    ``fgrad.nn.gelu(x, approximate=True)`` is ``x * gelu_tanh_gate(x)``. One kernel
    replaces a chain of eight elementwise ops, and the derivative is formed from the
    output ``g`` as ``g (1 - g) sqrt(2/pi) (2 + 6 * 0.044715 x**2)``, without another tanh.

    Args:
        x: Tensor of any shape and real floating dtype.

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``, values in ``[0, 1]``.

    Raises:
        DTypeError: an integer, bool or complex input.

    Example:
        >>> from fgrad.ops.nn import gelu_tanh_gate
        >>> gelu_tanh_gate(fnp.array([-1.0, 0.0, 1.0]))
        Tensor([0.15880801, 0.5       , 0.84119199], dtype=float64)

    References:
        Hendrycks and Gimpel, "Gaussian error linear units (GELUs)", 2016,
        arXiv:1606.08415, section 2 (the tanh approximation).
    """,
)


# ---- layer normalisation over the last axis
# layer_norm(x) = scale_shift(standardize(x)), where standardize also returns the rows'
# inverse standard deviations (small): the backward then needs no second pass over x for
# its statistics, and when only the parameters' gradients are wanted (a block's first
# norm) the input's gradient, standardize_grad, is not computed at all.


def _standardize(xp, x, eps):
    """``(xhat, s)``: the rows of ``x`` (2-D, a new array) centred and divided by
    ``s = sqrt(var + eps)``, with the mean and variance from matrix-vector products."""
    n = x.shape[-1]
    x2 = xp.reshape(x, (-1, n))
    xhat = x2 - _column(xp, xp.matmul(x2, xp.full((n,), 1.0 / n, dtype=x2.dtype)))
    s = xp.sqrt(_row_dot(xp, xhat, xhat) / n + eps)
    xhat /= _column(xp, s)
    return xhat, s


def _standardize_kernel(xp, x, *, eps):
    if x.dtype is _HALF:
        xhat, rstd = _standardize_kernel(xp, widen(xp, x), eps=eps)
        return narrow(xp, xhat, _HALF), narrow(xp, rstd, _HALF)
    xhat, s = _standardize(xp, x, eps)
    shape = tuple(x.shape)
    return xp.reshape(xhat, shape), xp.reshape(1.0 / s, shape[:-1] + (1,))


def _standardize_grad_kernel(xp, g, ct_rstd, xhat, rstd):
    # a (g - mean(g) - xhat (mean(g xhat) + ct_rstd a / n)) with a = rstd, per row.
    if _all_half(g, ct_rstd, xhat, rstd):
        wide = (widen(xp, v) for v in (g, ct_rstd, xhat, rstd))
        return narrow(xp, _standardize_grad_kernel(xp, *wide), _HALF)
    n = xhat.shape[-1]
    g2 = xp.reshape(g, (-1, n))
    x2 = xp.reshape(xhat, (-1, n))
    a = xp.reshape(rstd, (-1,))
    m1 = xp.matmul(g2, xp.full((n,), 1.0 / n, dtype=g2.dtype))
    m2 = _row_dot(xp, g2, x2) / n
    if not _is_scalar(ct_rstd, 0):
        m2 = m2 + xp.reshape(ct_rstd, (-1,)) * a / n
    y = x2 * _column(xp, -m2)
    y = _into(xp.add, y, g2, out=y) if _keeps(y, g2) else y + g2
    y = _into(xp.subtract, y, _column(xp, m1), out=y)
    y = _into(xp.multiply, y, _column(xp, a), out=y)
    return xp.reshape(y, tuple(g.shape))


def _norm_input_aval(name, x):
    dtype = _real_floating(name, x)
    shape = shape_of(x)
    if not shape or shape[-1] == 0:
        raise ShapeError(f"{name}: needs an input whose last axis is not empty, got {shape}")
    return shape, dtype


def _standardize_aval(x, *, eps):
    shape, dtype = _norm_input_aval("standardize", x)
    return ShapeDtype(shape, dtype), ShapeDtype(shape[:-1] + (1,), dtype)


def _standardize_grad_aval(g, ct_rstd, xhat, rstd):
    shape, _ = _norm_input_aval("standardize_grad", xhat)
    rows = shape[:-1] + (1,)
    for name, value, want in (
        ("g", g, (shape,)),
        ("ct_rstd", ct_rstd, ((), rows)),
        ("rstd", rstd, (rows,)),
    ):
        if type(value) in (int, float) and () in want:
            continue
        if shape_of(value) not in want:
            raise ShapeError(
                f"standardize_grad: {name} has shape {shape_of(value)}, expected one of {want} "
                f"for xhat of shape {shape}"
            )
        _real_floating("standardize_grad", value)
    return ShapeDtype(shape, np.dtype(dtypes.result_type(g, ct_rstd, xhat, rstd)))


# vmap rules. The row ops work on the last axis of any number of leading ones, so the
# mapped axis in front is one more leading axis once every input carries it.


def _standardize_batch(op, args, dims, *, eps):
    return op(args[0], eps=eps), (0, 0)


def _standardize_grad_batch(op, args, dims):
    _standardize_grad_aval(*map(_example, args, dims))  # the op's errors, per example
    size = batch_size(args, dims)
    g, ct_rstd, xhat, rstd = (
        a if i == 1 else with_batch(a, d, size) for i, (a, d) in enumerate(zip(args, dims))
    )
    if dims[1] is not None and ndim_of(ct_rstd) == 1:
        # One number per example (a () ct_rstd, mapped): spread over that example's rows.
        ct_rstd = reshape(ct_rstd, shape=(size,) + (1,) * (ndim_of(rstd) - 1))
        ct_rstd = broadcast_to(ct_rstd, shape=shape_of(rstd))
    elif dims[1] is None and ndim_of(ct_rstd) > 0:  # shared rows: every example gets them
        ct_rstd = with_batch(ct_rstd, None, size)
    return op(g, ct_rstd, xhat, rstd), 0


def _scale_shift_batch(op, args, dims):
    x, scale, bias = args
    _scale_shift_aval(*map(_example, args, dims))
    if dims[1] is None and dims[2] is None:
        # Shared parameters broadcast over the mapped axis as over the rows.
        return op(with_batch(x, dims[0], batch_size(args, dims)), scale, bias), 0
    # Parameters per example: the op takes one (n,) vector, so do its arithmetic (the
    # same operations in the same order) with the elementwise ops.
    y, y_dim = x, dims[0]
    if not _is_scalar(scale, 1):
        if dims[0] is None and dims[1] is None:
            y = multiply(x, scale)  # the same for every example
        else:
            y, y_dim = elementwise_batch(multiply, (x, scale), dims[:2])
    if _is_scalar(bias, 0):
        return y, y_dim
    return elementwise_batch(add, (y, bias), (y_dim, dims[2]))


def _sum_rows_batch(op, args, dims):
    (x,) = args
    _sum_rows_aval(_example(x, 0))
    # Every axis of an example but its last: those between the mapped axis and the last.
    return _sum(x, axes=tuple(range(1, ndim_of(x) - 1)), keepdims=False), 0


# Helpers of the derivative rules, with fgrad ops; a "row" is the last axis.


def _row_sum(v):
    return _sum(v, axes=(len(v.shape) - 1,), keepdims=True)


def _row_mean(v):
    return divide(_row_sum(v), v.shape[-1])


def _standardize_jvp(t, out, x, *, eps):
    xhat, rstd = out
    # d xhat = J t (J symmetric: standardize_grad), d rstd = -rstd^2 mean(xhat t).
    t_rstd = multiply(multiply(rstd, rstd), multiply(-1.0, _row_mean(multiply(xhat, t))))
    return standardize_grad(t, 0.0, xhat, rstd), t_rstd


def _sg_parts(g, ct_rstd, xhat, rstd):
    """``(m, d)`` with m = mean(g xhat) + ct_rstd rstd / n and d = g - mean(g) - xhat m:
    standardize_grad is rstd * d."""
    m = add(_row_mean(multiply(g, xhat)), divide(multiply(ct_rstd, rstd), xhat.shape[-1]))
    return m, subtract(subtract(g, _row_mean(g)), multiply(xhat, m))


def _sg_jvp_xhat(t, out, g, ct_rstd, xhat, rstd):
    m, _ = _sg_parts(g, ct_rstd, xhat, rstd)
    return multiply(
        multiply(-1.0, rstd), add(multiply(t, m), multiply(xhat, _row_mean(multiply(g, t))))
    )


def _sg_jvp_rstd(t, out, g, ct_rstd, xhat, rstd):
    _, d = _sg_parts(g, ct_rstd, xhat, rstd)
    n = xhat.shape[-1]
    return subtract(multiply(t, d), multiply(multiply(rstd, xhat), divide(multiply(ct_rstd, t), n)))


def _sg_vjp(w, out, g, ct_rstd, xhat, rstd):
    m, d = _sg_parts(g, ct_rstd, xhat, rstd)
    n = xhat.shape[-1]
    wx = _row_sum(multiply(w, xhat))
    return (
        standardize_grad(w, 0.0, xhat, rstd),  # linear in g, symmetric
        multiply(multiply(multiply(rstd, rstd), wx), -1.0 / n),
        multiply(multiply(-1.0, rstd), add(multiply(w, m), divide(multiply(g, wx), n))),
        subtract(_row_sum(multiply(w, d)), divide(multiply(multiply(rstd, ct_rstd), wx), n)),
    )


def _norm_args(rng, shapes):
    # Rows of spread-out values, so that eps does not dominate the variance.
    return [rng.uniform(-2.0, 2.0, s) for s in shapes]


def _standardize_grad_args(rng, shapes):
    g, ct_rstd, xhat, rstd = shapes
    return [
        rng.uniform(-2.0, 2.0, g),
        rng.uniform(-2.0, 2.0, ct_rstd),
        rng.uniform(-2.0, 2.0, xhat),
        rng.uniform(0.5, 2.0, rstd),
    ]


standardize = defop(
    "standardize",
    kernel=_standardize_kernel,
    aval=_standardize_aval,
    batch=_standardize_batch,
    jvp=(_standardize_jvp,),
    vjp=(lambda cts, out, x, *, eps: standardize_grad(cts[0], cts[1], out[0], out[1]),),
    multiple_results=True,
    vjp_reads=("out",),
    check=Check(
        shapes=(((3,),), ((2, 4),), ((2, 3, 4),)),
        params=({"eps": 1e-5},),
        make_args=_norm_args,
    ),
    doc="""Rows standardised over the last axis, and their inverse standard deviations.

    ``xhat = (x - mean) / sqrt(var + eps)`` with the biased (``1/n``) variance, and
    ``rstd = 1 / sqrt(var + eps)`` with the last axis kept as 1: layer normalisation
    before its scale and shift (:func:`fgrad.nn.layer_norm` is ``scale_shift`` of
    ``xhat``). One kernel: the row means and variances are matrix-vector products and
    the normalisation runs in place. ``rstd`` lets the backward pass
    (:func:`standardize_grad`) skip recomputing the statistics.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype, ``n >= 1``.
        eps: added to the variance.

    Returns:
        ``(xhat, rstd)``: Tensors of shapes ``x.shape`` and ``x.shape[:-1] + (1,)``.

    Raises:
        ShapeError: ``x`` is 0-d or its last axis is empty.
        DTypeError: a non-floating or complex input.

    Example:
        >>> from fgrad.ops.nn import standardize
        >>> xhat, rstd = standardize(fnp.array([1.0, 2.0, 3.0]), eps=0.0)
        >>> xhat, rstd
        (Tensor([-1.22474487,  0.        ,  1.22474487], dtype=float64), Tensor([1.22474487], dtype=float64))

    References:
        Ba, Kiros and Hinton, "Layer Normalization", 2016, arXiv:1607.06450, eq. 4.
    """,
)

standardize_grad = defop(
    "standardize_grad",
    kernel=_standardize_grad_kernel,
    aval=_standardize_grad_aval,
    batch=_standardize_grad_batch,
    jvp=(
        lambda t, out, g, ct_rstd, xhat, rstd: standardize_grad(t, 0.0, xhat, rstd),
        lambda t, out, g, ct_rstd, xhat, rstd: multiply(
            multiply(multiply(rstd, rstd), xhat), divide(t, -xhat.shape[-1])
        ),
        _sg_jvp_xhat,
        _sg_jvp_rstd,
    ),
    vjp=_sg_vjp,
    vjp_reads=("inputs",),
    check=Check(
        shapes=(((3,), (1,), (3,), (1,)), ((2, 4), (2, 1), (2, 4), (2, 1))),
        make_args=_standardize_grad_args,
    ),
    doc="""The VJP of :func:`standardize`: the input's cotangent from those of its outputs.

    ``rstd * (g - mean(g) - xhat * (mean(g * xhat) + ct_rstd * rstd / n))`` over the last
    axis (the analytic layer-norm backward), in one kernel: two row sums (``matmul``,
    ``vecdot``) and four passes. Defined for any ``xhat`` and ``rstd``; its own
    derivatives are written with fgrad ops.

    Args:
        g: ``(..., n)`` cotangent of ``xhat``, real floating.
        ct_rstd: ``(..., 1)`` cotangent of ``rstd``, or 0.0.
        xhat: ``(..., n)`` Tensor, the standardised rows.
        rstd: ``(..., 1)`` Tensor, the rows' inverse standard deviations.

    Returns:
        Tensor of ``xhat.shape``, dtype promoted from the inputs.

    Raises:
        ShapeError: the shapes do not match.
        DTypeError: a non-floating or complex input.

    Example:
        >>> from fgrad.ops.nn import standardize, standardize_grad
        >>> x = fnp.array([1.0, 2.0, 3.0])
        >>> xhat, rstd = standardize(x, eps=0.0)
        >>> standardize_grad(fnp.array([1.0, 0.0, 0.0]), 0.0, xhat, rstd)
        Tensor([ 0.20412415, -0.40824829,  0.20412415], dtype=float64)

    References:
        Ba, Kiros and Hinton, "Layer Normalization", 2016, arXiv:1607.06450.
    """,
)


def _norm_params_aval(name, n, *params):
    for p in params:
        if type(p) in (int, float):
            continue
        if tuple(p.shape) not in ((), (n,)):
            raise ShapeError(
                f"{name}: scale and bias must have shape () or ({n},) to match the last axis "
                f"of the input, got {tuple(p.shape)}"
            )
        _real_floating(name, p)


def _scale_shift_aval(x, scale, bias):
    shape, _ = _norm_input_aval("scale_shift", x)
    _norm_params_aval("scale_shift", shape[-1], scale, bias)
    return ShapeDtype(shape, np.dtype(dtypes.result_type(x, scale, bias)))


def _scale_shift_kernel(xp, x, scale, bias):
    if _is_scalar(scale, 1):
        return x + bias
    y = x * scale
    if not _is_scalar(bias, 0):
        y = _into(xp.add, y, bias, out=y) if _keeps(y, bias) else y + bias
    return y


def _row_param_ct(ct, param):
    # The cotangent of a (n,) parameter broadcast over rows: one matrix-vector product.
    # Anything else: the framework sums the broadcast cotangent back.
    if len(ct.shape) >= 2 and tuple(getattr(param, "shape", ())) == tuple(ct.shape[-1:]):
        return sum_rows(ct)
    return ct


scale_shift = defop(
    "scale_shift",
    kernel=_scale_shift_kernel,
    aval=_scale_shift_aval,
    batch=_scale_shift_batch,
    jvp=(
        lambda t, out, x, scale, bias: multiply(t, scale),
        lambda t, out, x, scale, bias: multiply(x, t),
        lambda t, out, x, scale, bias: t,
    ),
    vjp=(
        lambda ct, out, x, scale, bias: multiply(ct, scale),
        lambda ct, out, x, scale, bias: _row_param_ct(multiply(ct, x), scale),
        lambda ct, out, x, scale, bias: _row_param_ct(ct, bias),
    ),
    vjp_reads=("inputs",),  # x and the parameters, not the output
    check=Check(shapes=(((3,), (3,), (3,)), ((2, 4), (4,), (4,)), ((2, 3, 4), (4,), ()))),
    doc="""``x * scale + bias`` with ``(n,)`` parameters along the last axis (layer norm's affine part).

    Two passes, and the parameters' gradients are matrix-vector products
    (:func:`sum_rows`) instead of ``sum`` over the rows.

    Args:
        x: ``(..., n)`` Tensor of real floating dtype.
        scale: ``(n,)`` or ``()`` Tensor, or a Python number (1.0 for none).
        bias: ``(n,)`` or ``()`` Tensor, or a Python number (0.0 for none).

    Returns:
        Tensor of ``x.shape``, dtype promoted from the inputs.

    Raises:
        ShapeError: ``x`` is 0-d, or ``scale`` or ``bias`` has another shape.
        DTypeError: a non-floating or complex input.

    Example:
        >>> from fgrad.ops.nn import scale_shift
        >>> scale_shift(fnp.array([[1.0, 2.0]]), fnp.array([2.0, 3.0]), 1.0)
        Tensor([[3., 7.]], dtype=float64)
    """,
)


# ---- bias addition, whose bias gradient is one vector-matrix product


def _sum_rows_aval(x):
    shape = shape_of(x)
    dtype = np.dtype(dtypes.result_type(x))
    if not shape or dtype.kind not in "fc":
        raise DTypeError(
            f"sum_rows: needs a floating input of at least one axis, got {ShapeDtype(shape, dtype)}"
        )
    return ShapeDtype(shape[-1:], dtype)


def _sum_rows_kernel(xp, x):
    x2 = xp.reshape(x, (-1, x.shape[-1]))
    return xp.matmul(xp.ones((x2.shape[0],), dtype=x2.dtype), x2)


sum_rows = defop(
    "sum_rows",
    kernel=_sum_rows_kernel,
    aval=_sum_rows_aval,
    batch=_sum_rows_batch,
    jvp=LINEAR,
    vjp=(lambda ct, out, x: broadcast_to(ct, shape=tuple(x.shape)),),
    vjp_reads=(),  # only the input's shape
    check=Check(shapes=(((3,),), ((2, 3),), ((2, 3, 4),))),
    doc="""Sum over every axis but the last, as one vector-matrix product.

    ``sum(x, axis=tuple(range(x.ndim - 1)))``, computed as ``ones @ x.reshape(-1, n)``:
    numpy's column sums walk the rows one by one, BLAS is 2-3x faster (a bias gradient).

    Args:
        x: ``(..., n)`` Tensor of floating dtype, at least 1-D.

    Returns:
        ``(n,)`` Tensor of ``x.dtype``.

    Raises:
        DTypeError: a 0-d, integer or bool input.

    Example:
        >>> from fgrad.ops.nn import sum_rows
        >>> sum_rows(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([4., 6.], dtype=float64)
    """,
)


def _bias_ct(ct, out, x, bias):
    # A bias along the last axis of a matrix or batch of them: one matrix-vector product.
    # Anything else: the framework sums the broadcast cotangent back.
    if len(ct.shape) >= 2 and tuple(bias.shape) == tuple(ct.shape[-1:]):
        return sum_rows(ct)
    return ct


bias_add = defop(
    "bias_add",
    kernel=lambda xp, x, bias: xp.add(x, bias),
    aval=binary("bias_add"),
    batch=elementwise_batch,
    jvp=(lambda t, out, x, bias: t, lambda t, out, x, bias: t),
    vjp=(lambda ct, out, x, bias: ct, _bias_ct),
    vjp_reads=(),  # only the shapes
    check=Check(shapes=(((2, 3), (3,)), ((2, 3, 4), (4,)), ((3,), (3,)), ((2, 3), (2, 3)))),
    doc="""``x + bias``, whose gradient for a ``(n,)`` bias is one vector-matrix product.

    The same values as ``add``; only the bias's cotangent differs in how it is computed:
    :func:`sum_rows` (BLAS) where ``add`` would reduce with ``sum``. :class:`fgrad.nn.Linear`
    adds its bias with it.

    Args:
        x: ``(..., n)`` Tensor.
        bias: Tensor broadcastable to ``x`` (typically ``(n,)``).

    Returns:
        Tensor of the broadcast shape and promoted dtype.

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> from fgrad.ops.nn import bias_add
        >>> bias_add(fnp.ones((2, 3)), fnp.array([1.0, 2.0, 3.0]))
        Tensor([[2., 3., 4.],
                [2., 3., 4.]], dtype=float64)
    """,
)
