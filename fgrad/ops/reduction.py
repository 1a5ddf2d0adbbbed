"""Reductions over ``axes`` (canonical: a sorted tuple of non-negative ints) and scans.

Derivative conventions (JAX's unless noted):

* ``prod``: exact with zeros, to every order. The derivative uses the product of the *other*
  elements of each slice, formed from exclusive cumulative products from both ends (a
  polynomial in ``x``, never ``out / x``).
* ``max`` / ``min``: the cotangent is split evenly among tied extrema
  (``grad(max)([1, 3, 3]) == [0, .5, .5]``). The tie weights come from a non-differentiable
  op, so higher derivatives are zero there, as they are almost everywhere.
* ``logsumexp``: stable for large inputs; ``-inf`` entries get weight 0, and a slice that is
  all ``-inf`` gives ``-inf`` with a zero gradient (no NaN).
* ``cumprod``: exact with zeros, to every order, through ``linear_recurrence``
  (``h[i] = a[i] * h[i-1] + b[i]``), whose derivatives are again linear recurrences.

float16 accumulates in float32. A float16 running sum loses up to half a unit in the last
place per addition (at 2048 adding 1 changes nothing) and overflows past 65504, so
``sum``, ``logsumexp`` and ``logsumexp_weights`` of float16 inputs compute in float32 and
round the result to float16 once, as JAX and PyTorch do and as numpy's own ``mean`` does.
numpy's float16 ``sum`` widens only inside one inner loop: a sum along a contiguous last
axis agrees with the float32 one, but a sum down columns accumulates in float16
(``np.sum(np.ones((4096, 3), np.float16), axis=0)`` is 2048). float32 and float64 run the
same code as before.
"""

from __future__ import annotations

import builtins

import numpy as np

from fgrad import dtypes
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import ShapeError
from fgrad.ops._batch import axes_batch, batch_size, elementwise_batch, with_batch
from fgrad.ops._rules import binary, floating, same, shape_of, to_bool
from fgrad.ops.elementwise import multiply, subtract
from fgrad.tensor import ShapeDtype

_AXES_PARAMS = (
    {"axes": (), "keepdims": False},
    {"axes": (0,), "keepdims": False},
    {"axes": (0,), "keepdims": True},
)


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    """The shape left after reducing ``axes`` of ``shape``."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduction_aval(dtype_rule=same, name: str = "reduction"):
    """aval rule of a reduction."""

    def rule(x, *, axes, keepdims):
        shape = shape_of(x)
        if builtins.any(a >= len(shape) for a in axes):
            raise ShapeError(f"{name}: axes {axes} out of range for {ShapeDtype(shape, x.dtype)}")
        return ShapeDtype(reduced_shape(shape, axes, keepdims), np.dtype(dtype_rule(x.dtype)))

    return rule


def expand_reduced(ct, x_shape: tuple, axes: tuple, keepdims: bool):
    """Broadcast a reduction's cotangent back to the input shape."""
    return broadcast_to(_keep(ct, x_shape, axes, keepdims), shape=tuple(x_shape))


def _keep(y, x_shape: tuple, axes: tuple, keepdims: bool):
    # A reduction's output (or cotangent) with the reduced axes kept as size 1, so that it
    # broadcasts against the input; a reshape, never a copy.
    if keepdims or not axes or not y.shape:  # a 0-d value broadcasts as it is
        return y
    return reshape(y, shape=reduced_shape(tuple(x_shape), axes, True))


def broadcasting_axes_batch(op, args, dims, **params):
    """vmap rule of an op over ``axes`` whose inputs broadcast against each other, such as
    ``tie_weights(x, m)`` with ``m`` 0-d when every axis is reduced: each input gets the
    mapped axis in front of its example axes lined up from the right (unit axes between
    them), and ``axes`` moves one place right."""
    size = batch_size(args, dims)
    rank = builtins.max(len(shape_of(a)) - (d is not None) for a, d in zip(args, dims))
    lined_up = []
    for a, d in zip(args, dims):
        shape = shape_of(a)[d is not None :]
        if len(shape) < rank:
            ones = (1,) * (rank - len(shape))
            a = reshape(a, shape=(shape_of(a)[:1] if d is not None else ()) + ones + shape)
        lined_up.append(with_batch(a, d, size))
    return op(*lined_up, axes=tuple(a + 1 for a in params.pop("axes")), **params), 0


_HALF = dtypes.float16  # a singleton: an ``is`` test costs 30-50 ns, ``==`` 150


def widen(xp, x):
    """``x`` as float32 when it is a float16 array (the dtype it accumulates in), else ``x``."""
    if getattr(x, "dtype", None) is not _HALF:
        return x
    return x.astype(np.float32) if xp is np else xp.astype(x, xp.float32)


def narrow(xp, y, dtype):
    """``y`` cast to ``dtype``, the result dtype of a kernel that computed in float32."""
    return y.astype(dtype) if xp is np else xp.astype(y, dtype)


def _sum_dtype(dtype):
    # numpy sums bools and small ints into the default int; keep that rule visible here.
    return np.sum(np.zeros((), dtype)).dtype


def _sum_kernel(xp, x, *, axes, keepdims):
    if xp is np:  # the ufunc method skips np.sum's Python wrapper: 0.9 us instead of 2.1
        # float16 accumulates in float32 (buffered: no float32 copy of x). x may be a
        # Python number (jit's weakly typed scalars).
        if getattr(x, "dtype", None) is _HALF:
            return np.add.reduce(x, axis=axes, dtype=np.float32, keepdims=keepdims).astype(_HALF)
        return np.add.reduce(x, axis=axes, keepdims=keepdims)
    if x.dtype == getattr(xp, "float16", None):  # the Array API has no float16: no-op there
        return xp.astype(xp.sum(x, axis=axes, dtype=xp.float32, keepdims=keepdims), x.dtype)
    return xp.sum(x, axis=axes, keepdims=keepdims)


def _prod_dtype(dtype):
    return np.prod(np.zeros((), dtype)).dtype


def _index_dtype(dtype):
    return np.dtype(np.intp)


def _sl(x, axis: int, start: int, stop: int):
    # x[..., start:stop, ...] along ``axis``: basic slicing, which every Array API namespace has.
    return x[(slice(None),) * axis + (slice(start, stop), ...)]


def _concat(xp, arrays, axis: int):
    fn = getattr(xp, "concat", None) or xp.concatenate  # older cupy lacks the Array API name
    return fn(arrays, axis=axis)


def _cumulative(xp, name: str, x, axis: int, reverse: bool):
    # numpy >= 2.1 and array_api_strict name these cumulative_sum / cumulative_prod; older
    # cupy only has cumsum / cumprod. Same numbers either way.
    fn = getattr(xp, f"cumulative_{name}", None) or getattr(xp, f"cum{name}")
    if reverse:
        return xp.flip(fn(xp.flip(x, axis=axis), axis=axis), axis=axis)
    return fn(x, axis=axis)


_REDUCE_DOC = """{summary}

    Args:
        x: Tensor of shape ``(d_0, ..., d_{{n-1}})``{xdesc}.
        axes: sorted tuple of non-negative axes to reduce (``fnp.{fnp}`` accepts numpy's
            ``axis``: an int, a tuple, or None for all).
        keepdims: keep reduced axes with size 1.

    Returns:
        Tensor of the reduced shape; {dtype}.{extra}

    Raises:
        ShapeError: an axis is out of range{raises}.

    Example:
        {example}
    """

# ---------------------------------------------------------------- sum, prod

sum = defop(
    "sum",
    kernel=_sum_kernel,
    aval=reduction_aval(_sum_dtype, "sum"),
    batch=axes_batch,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, axes, keepdims: expand_reduced(ct, x.shape, axes, keepdims),),
    check=Check(
        shapes=(((2, 3),),),
        params=_AXES_PARAMS
        + ({"axes": (0, 1), "keepdims": False}, {"axes": (1,), "keepdims": False}),
    ),
    doc=_REDUCE_DOC.format(
        summary="Sum of elements over ``axes``.",
        xdesc="",
        fnp="sum",
        dtype="bools and small ints sum into the default int, as numpy",
        extra="\n\n    float16 input accumulates in float32 and the sum is rounded to float16 once "
        "(JAX's\n    and PyTorch's rule). numpy does the same only along a contiguous last "
        "axis; down\n    columns it adds in float16, where ``2048 + 1`` is 2048.",
        raises="",
        example=">>> fnp.sum(fnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)\n"
        "        Tensor([4., 6.], dtype=float64)\n"
        "        >>> fnp.sum(fnp.ones((4096, 2), dtype=fnp.float16), axis=0)\n"
        "        Tensor([4.096e+03, 4.096e+03], dtype=float16)",
    ),
    vjp_reads=(),  # the rule reads only the input shape
)


def _prod_others(x, axes: tuple):
    """For each element, the product of the *other* elements of its reduced slice.

    A polynomial in ``x`` (exclusive cumulative products from both ends), so it is exact
    with any number of zeros and its own derivatives are too.
    """
    shape = tuple(x.shape)
    nd = len(shape)
    if len(axes) == 1:
        return _others_along(x, axes[0])
    if axes == tuple(range(axes[0], axes[-1] + 1)):  # contiguous: one reshape, no transpose
        n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        flat = reshape(x, shape=shape[: axes[0]] + (n,) + shape[axes[-1] + 1 :])
        return reshape(_others_along(flat, axes[0]), shape=shape)
    kept = tuple(a for a in range(nd) if a not in axes)
    perm = kept + axes
    moved = permute_dims(x, axes=perm)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    flat = reshape(moved, shape=tuple(shape[a] for a in kept) + (n,))
    others = reshape(_others_along(flat, len(kept)), shape=tuple(moved.shape))
    return permute_dims(others, axes=tuple(np.argsort(perm).tolist()))


def _others_along(x, axis: int):
    before = cumprod(shift(x, axis=axis, offset=1, fill=1.0), axis=axis, reverse=False)
    after = cumprod(shift(x, axis=axis, offset=-1, fill=1.0), axis=axis, reverse=True)
    return multiply(before, after)


def _prod_jvp(t, out, x, *, axes, keepdims):
    if not axes:
        return t
    return sum(multiply(t, _prod_others(x, axes)), axes=axes, keepdims=keepdims)


def _prod_vjp(ct, out, x, *, axes, keepdims):
    if not axes:
        return ct
    return multiply(_keep(ct, x.shape, axes, keepdims), _prod_others(x, axes))


def _zeros_in_slices(rng, shapes):
    # Entries (0, 1) and (1, 1) of a (2, 3) sample are exact zeros: column 1 holds two
    # zeros, each row one, the whole array two. Other shapes get no zeros (the generic case).
    out = []
    for s in shapes:
        x = rng.uniform(0.5, 1.5, s) * rng.choice([-1.0, 1.0], s)
        if s == (2, 3):
            x[0, 1] = x[1, 1] = 0.0
        out.append(x)
    return out


prod = defop(
    "prod",
    kernel=lambda xp, x, *, axes, keepdims: xp.prod(x, axis=axes, keepdims=keepdims),
    aval=reduction_aval(_prod_dtype, "prod"),
    batch=axes_batch,
    jvp=(_prod_jvp,),
    vjp=(_prod_vjp,),
    check=Check(
        shapes=(((2, 3),), ((3, 4),)),
        params=(
            {"axes": (0,), "keepdims": False},
            {"axes": (1,), "keepdims": True},
            {"axes": (0, 1), "keepdims": False},
        ),
        make_args=_zeros_in_slices,
    ),
    doc=_REDUCE_DOC.format(
        summary="Product of elements over ``axes``.",
        xdesc="",
        fnp="prod",
        dtype="bools and small ints multiply into the default int, as numpy",
        extra="\n\n    The derivative is exact when ``x`` has zeros (one or several per slice), at "
        "every\n    order: it uses the product of the other elements, never ``out / x``.",
        raises="",
        example=">>> fgrad.grad(lambda x: fnp.prod(x))(fnp.array([2.0, 0.0, 3.0]))\n"
        "        Tensor([0., 6., 0.], dtype=float64)",
    ),
)

# ---------------------------------------------------------------- max, min


def _tie_weights_kernel(xp, x, m, *, axes):
    hit = xp.astype(x == m, x.dtype)
    return hit / xp.sum(hit, axis=axes, keepdims=True)


tie_weights = defop(
    "tie_weights",
    kernel=_tie_weights_kernel,
    aval=lambda x, m, *, axes: ShapeDtype(shape_of(x), x.dtype),
    batch=broadcasting_axes_batch,
    nondiff=True,
    check=Check(
        shapes=(((2, 3), (1, 3)),),
        params=({"axes": (0,)},),
        make_args=lambda rng, shapes: [
            np.array([[1.0, 3.0, 2.0], [1.0, 2.0, 5.0]]),
            np.array([[1.0, 3.0, 5.0]]),
        ],
    ),
    doc="""Where ``x`` attains ``m`` along ``axes``, split evenly among ties: the weights of a
    ``max`` or ``min`` derivative. Carries no derivative itself.

    Args:
        x: real Tensor of shape ``(d_0, ..., d_{n-1})``.
        m: the extremum of ``x`` over ``axes`` with the reduced axes kept as size 1.
        axes: sorted tuple of the reduced axes.

    Returns:
        Tensor of ``x.shape`` and dtype: ``1 / count`` where ``x == m``, else 0; each reduced
        slice sums to 1 (NaN in a slice whose extremum is NaN).

    Example:
        >>> x = fnp.array([1.0, 3.0, 3.0])
        >>> fgrad.ops.reduction.tie_weights(x, fnp.array([3.0]), axes=(0,))
        Tensor([0. , 0.5, 0.5], dtype=float64)
    """,
)


def _extremum_jvp(t, out, x, *, axes, keepdims):
    if not axes:
        return t
    w = tie_weights(x, _keep(out, x.shape, axes, keepdims), axes=axes)
    return sum(multiply(t, w), axes=axes, keepdims=keepdims)


def _extremum_vjp(ct, out, x, *, axes, keepdims):
    if not axes:
        return ct
    w = tie_weights(x, _keep(out, x.shape, axes, keepdims), axes=axes)
    return multiply(_keep(ct, x.shape, axes, keepdims), w)


def _extremum_check():
    # Uniform samples have no ties (ties have their own tests in tests/ops/test_reductions.py).
    return Check(
        shapes=(((2, 3),),),
        params=_AXES_PARAMS
        + ({"axes": (0, 1), "keepdims": False}, {"axes": (1,), "keepdims": True}),
    )


max = defop(
    "max",
    kernel=lambda xp, x, *, axes, keepdims: xp.max(x, axis=axes, keepdims=keepdims),
    aval=reduction_aval(same, "max"),
    batch=axes_batch,
    jvp=(_extremum_jvp,),
    vjp=(_extremum_vjp,),
    check=_extremum_check(),
    doc=_REDUCE_DOC.format(
        summary="Largest element over ``axes`` (numpy's ``amax``); NaN propagates.",
        xdesc=", real dtype, no zero-size reduced axis",
        fnp="max",
        dtype="``x.dtype``",
        extra="\n\n    Ties split the derivative evenly among the tied elements, as JAX does.",
        raises="; a reduced axis has size 0",
        example=">>> fgrad.grad(lambda x: fnp.max(x))(fnp.array([1.0, 3.0, 3.0]))\n"
        "        Tensor([0. , 0.5, 0.5], dtype=float64)",
    ),
)

min = defop(
    "min",
    kernel=lambda xp, x, *, axes, keepdims: xp.min(x, axis=axes, keepdims=keepdims),
    aval=reduction_aval(same, "min"),
    batch=axes_batch,
    jvp=(_extremum_jvp,),
    vjp=(_extremum_vjp,),
    check=_extremum_check(),
    doc=_REDUCE_DOC.format(
        summary="Smallest element over ``axes`` (numpy's ``amin``); NaN propagates.",
        xdesc=", real dtype, no zero-size reduced axis",
        fnp="min",
        dtype="``x.dtype``",
        extra="\n\n    Ties split the derivative evenly among the tied elements, as JAX does.",
        raises="; a reduced axis has size 0",
        example=">>> fnp.min(fnp.array([[1.0, 5.0], [3.0, 2.0]]), axis=1)\n"
        "        Tensor([1., 2.], dtype=float64)",
    ),
)

# ---------------------------------------------------------------- logsumexp


def _logsumexp_kernel(xp, x, *, axes, keepdims):
    if x.dtype is _HALF:  # the sum of exponentials in float32, rounded once
        return narrow(xp, _logsumexp_kernel(xp, widen(xp, x), axes=axes, keepdims=keepdims), _HALF)
    if builtins.any(x.shape[a] == 0 for a in axes):  # an empty sum: log(0) = -inf, as scipy
        s = xp.sum(xp.exp(x), axis=axes, keepdims=True)
        m = xp.zeros_like(s)
    else:
        m = xp.max(x, axis=axes, keepdims=True)
        # Shift by the max for stability; an infinite max (all -inf, or a +inf) shifts by 0.
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
        s = xp.sum(xp.exp(x - m), axis=axes, keepdims=True)
    empty = s == 0  # every entry -inf: log(0) = -inf, without numpy's divide warning
    out = xp.where(empty, xp.full_like(s, -np.inf), xp.log(xp.where(empty, xp.ones_like(s), s)))
    out = out + m
    return xp.squeeze(out, axis=axes) if axes and not keepdims else out


def _logsumexp_jvp(t, out, x, *, axes, keepdims):
    if not axes:
        return t
    w = logsumexp_weights(x, _keep(out, x.shape, axes, keepdims), axes=axes)
    return sum(multiply(t, w), axes=axes, keepdims=keepdims)


def _logsumexp_vjp(ct, out, x, *, axes, keepdims):
    if not axes:
        return ct
    w = logsumexp_weights(x, _keep(out, x.shape, axes, keepdims), axes=axes)
    return multiply(_keep(ct, x.shape, axes, keepdims), w)


logsumexp = defop(
    "logsumexp",
    kernel=_logsumexp_kernel,
    aval=reduction_aval(floating, "logsumexp"),
    batch=axes_batch,
    jvp=(_logsumexp_jvp,),
    vjp=(_logsumexp_vjp,),
    check=Check(
        shapes=(((2, 3),),),
        params=_AXES_PARAMS
        + ({"axes": (0, 1), "keepdims": False}, {"axes": (1,), "keepdims": True}),
    ),
    doc=_REDUCE_DOC.format(
        summary="``log(sum(exp(x)))`` over ``axes``, computed stably.",
        xdesc=", real",
        fnp="logsumexp",
        dtype="floating dtype of ``x`` (ints give float64)",
        extra="\n\n    Shifts by the maximum, so large inputs do not overflow. ``-inf`` entries "
        "add\n    nothing and get a zero derivative; a slice that is all ``-inf`` gives "
        "``-inf`` and\n    a zero derivative (not NaN). The derivative is ``softmax(x)``. "
        "float16 input\n    computes in float32 and rounds the result once.",
        raises="",
        example=">>> fnp.logsumexp(fnp.array([1000.0, 1000.0]))\n"
        "        Tensor(1000.69314718, dtype=float64)",
    ),
)


def _logsumexp_weights_kernel(xp, x, y, *, axes):
    # y (the logsumexp) is only a shift that keeps exp from overflowing; the result does not
    # depend on it. Normalising again cancels y's rounding error (|y| * eps), which would
    # otherwise reach the weights. A -inf shift belongs to an all -inf slice: shift by 0, and
    # 0 / 0 becomes 0.
    if x.dtype is _HALF and y.dtype is _HALF:  # the normalising sum in float32
        w = _logsumexp_weights_kernel(xp, widen(xp, x), widen(xp, y), axes=axes)
        return narrow(xp, w, _HALF)
    y = xp.where(y == -np.inf, xp.zeros_like(y), y)
    e = xp.exp(x - y)
    s = xp.sum(e, axis=axes, keepdims=True)
    empty = s == 0
    return xp.where(empty, xp.zeros_like(e), e / xp.where(empty, xp.ones_like(s), s))


def _softmax_rule(t, out, x, y, *, axes):
    # J = diag(w) - w w^T is symmetric: the JVP and the VJP are the same map.
    return multiply(out, subtract(t, sum(multiply(t, out), axes=axes, keepdims=True)))


def _logsumexp_weights_aval(x, y, *, axes):
    return ShapeDtype(shape_of(x), np.dtype(floating(np.result_type(x.dtype, y.dtype))))


logsumexp_weights = defop(
    "logsumexp_weights",
    kernel=_logsumexp_weights_kernel,
    aval=_logsumexp_weights_aval,
    # Constant in y: y only shifts the exponent, and the weights are normalised.
    batch=broadcasting_axes_batch,
    jvp=(_softmax_rule, None),
    vjp=(_softmax_rule, None),
    check=Check(
        shapes=(((2, 3), (1, 3)),),
        params=({"axes": (0,)},),
        make_args=lambda rng, shapes: [
            x := rng.uniform(-2.0, 2.0, shapes[0]),
            np.log(np.sum(np.exp(x), axis=0, keepdims=True)),
        ],
    ),
    doc="""The derivative of ``logsumexp``: ``softmax(x)`` over ``axes``, given ``y = logsumexp(x)``.

    ``exp(x - y)``, normalised again over ``axes`` so the weights sum to 1 to rounding even
    when ``y`` is large (``y`` only shifts the exponent; the result, and its derivative,
    do not depend on it). A slice that is all ``-inf`` (``y == -inf``) gets weights 0
    rather than NaN, so ``logsumexp``'s derivative there is 0.

    Args:
        x: real floating Tensor of shape ``(d_0, ..., d_{n-1})``.
        y: ``logsumexp(x, axes)`` with the reduced axes kept as size 1.
        axes: sorted tuple of the axes to normalise over.

    Returns:
        Tensor of ``x.shape``, floating; non-negative, summing to 1 over ``axes`` (0 in an
        all ``-inf`` slice).

    Example:
        >>> x = fnp.array([[0.0, -fnp.inf], [-fnp.inf, -fnp.inf]])
        >>> y = fnp.logsumexp(x, axis=1, keepdims=True)
        >>> fgrad.ops.reduction.logsumexp_weights(x, y, axes=(1,))
        Tensor([[1., 0.],
                [0., 0.]], dtype=float64)
    """,
)

# ---------------------------------------------------------------- argmax, argmin, all, any


def _arg_aval(name):
    def rule(x, *, axis, keepdims):
        shape = shape_of(x)
        if axis is not None and not 0 <= axis < len(shape):
            raise ShapeError(f"{name}: axis {axis} out of range for {ShapeDtype(shape, x.dtype)}")
        axes = tuple(range(len(shape))) if axis is None else (axis,)
        return ShapeDtype(reduced_shape(shape, axes, keepdims), np.dtype(np.intp))

    return rule


def _arg_batch(op, args, dims, *, axis, keepdims):
    # vmap rule: a given axis moves past the mapped one; axis=None (the flattened example)
    # flattens each example on its own, then restores keepdims' unit axes.
    (x,) = args
    if axis is not None:
        return op(x, axis=axis + 1, keepdims=keepdims), 0
    shape = shape_of(x)
    flat = reshape(x, shape=(shape[0], int(np.prod(shape[1:], dtype=np.int64))))
    out = op(flat, axis=1, keepdims=False)
    if keepdims:
        out = reshape(out, shape=(shape[0],) + (1,) * (len(shape) - 1))
    return out, 0


_ARG_DOC = """Index of the {which} element along ``axis`` (the first one among ties).

    Args:
        x: real Tensor, no zero-size ``axis``.
        axis: a non-negative int, or None for the index into the flattened ``x``.
        keepdims: keep the reduced axis (all axes when ``axis`` is None) with size 1.

    Returns:
        int64 Tensor of the reduced shape. Carries no derivative.

    Raises:
        ShapeError: ``axis`` is out of range, or the reduced axis has size 0.

    Example:
        {example}
    """

_ARG_CHECK = Check(
    shapes=(((2, 3),),),
    params=(
        {"axis": None, "keepdims": False},
        {"axis": 1, "keepdims": False},
        {"axis": 0, "keepdims": True},
        {"axis": None, "keepdims": True},
    ),
)

argmax = defop(
    "argmax",
    kernel=lambda xp, x, *, axis, keepdims: xp.argmax(x, axis=axis, keepdims=keepdims),
    aval=_arg_aval("argmax"),
    batch=_arg_batch,
    nondiff=True,
    check=_ARG_CHECK,
    doc=_ARG_DOC.format(
        which="largest",
        example=">>> fnp.argmax(fnp.array([[1.0, 5.0], [3.0, 2.0]]), axis=1)\n"
        "        Tensor([1, 0], dtype=int64)",
    ),
)

argmin = defop(
    "argmin",
    kernel=lambda xp, x, *, axis, keepdims: xp.argmin(x, axis=axis, keepdims=keepdims),
    aval=_arg_aval("argmin"),
    batch=_arg_batch,
    nondiff=True,
    check=_ARG_CHECK,
    doc=_ARG_DOC.format(
        which="smallest",
        example=">>> fnp.argmin(fnp.array([3.0, 1.0, 1.0]))\n        Tensor(1, dtype=int64)",
    ),
)

_BOOL_CHECK = Check(
    shapes=(((2, 3),),),
    params=({"axes": (0, 1), "keepdims": False}, {"axes": (1,), "keepdims": True}),
    make_args=lambda rng, shapes: [rng.uniform(-1, 1, s) > 0 for s in shapes],
)

all = defop(
    "all",
    kernel=lambda xp, x, *, axes, keepdims: xp.all(x, axis=axes, keepdims=keepdims),
    aval=reduction_aval(to_bool, "all"),
    batch=axes_batch,
    nondiff=True,
    check=_BOOL_CHECK,
    doc=_REDUCE_DOC.format(
        summary="Whether every element over ``axes`` is true (nonzero); logical AND.",
        xdesc=", any dtype",
        fnp="all",
        dtype="bool. Carries no derivative",
        extra="",
        raises="",
        example=">>> fnp.all(fnp.array([[True, False], [True, True]]), axis=1)\n"
        "        Tensor([False,  True], dtype=bool)",
    ),
)

any = defop(
    "any",
    kernel=lambda xp, x, *, axes, keepdims: xp.any(x, axis=axes, keepdims=keepdims),
    aval=reduction_aval(to_bool, "any"),
    batch=axes_batch,
    nondiff=True,
    check=_BOOL_CHECK,
    doc=_REDUCE_DOC.format(
        summary="Whether some element over ``axes`` is true (nonzero); logical OR.",
        xdesc=", any dtype",
        fnp="any",
        dtype="bool. Carries no derivative",
        extra="",
        raises="",
        example=">>> fnp.any(fnp.array([0.0, 2.0]))\n        Tensor(True, dtype=bool)",
    ),
)

# ---------------------------------------------------------------- scans


def _scan_aval(name, dtype_rule):
    def rule(x, *, axis, reverse):
        shape = shape_of(x)
        if not 0 <= axis < len(shape):
            raise ShapeError(f"{name}: axis {axis} out of range for {ShapeDtype(shape, x.dtype)}")
        return ShapeDtype(shape, np.dtype(dtype_rule(x.dtype)))

    return rule


_SCAN_DOC = """{summary}

    Args:
        x: Tensor with at least one dimension{xdesc}.
        axis: non-negative int (``fnp.{fnp}`` also takes a negative axis, or None to scan
            the flattened ``x``).
        reverse: scan from the last element to the first: ``out[i]`` combines
            ``x[i:]`` instead of ``x[:i + 1]``.

    Returns:
        Tensor of ``x.shape``; {dtype}.{extra}

    Raises:
        ShapeError: ``axis`` is out of range.

    Example:
        {example}
    """

_SCAN_PARAMS = (
    {"axis": 0, "reverse": False},
    {"axis": 1, "reverse": False},
    {"axis": 1, "reverse": True},
    {"axis": 0, "reverse": True},
)

cumsum = defop(
    "cumsum",
    kernel=lambda xp, x, *, axis, reverse: _cumulative(xp, "sum", x, axis, reverse),
    aval=_scan_aval("cumsum", _sum_dtype),
    batch=axes_batch,
    jvp=LINEAR,
    vjp=(lambda ct, out, x, *, axis, reverse: cumsum(ct, axis=axis, reverse=not reverse),),
    check=Check(shapes=(((2, 3),),), params=_SCAN_PARAMS),
    doc=_SCAN_DOC.format(
        summary="Cumulative sum along ``axis``.",
        xdesc="",
        fnp="cumsum",
        dtype="bools and small ints sum into the default int, as numpy",
        extra="",
        example=">>> fnp.cumsum(fnp.array([1.0, 2.0, 3.0]))\n"
        "        Tensor([1., 3., 6.], dtype=float64)",
    ),
)


def _cumprod_jvp(t, out, x, *, axis, reverse):
    d = -1 if reverse else 1
    excl = shift(out, axis=axis, offset=d, fill=1.0)  # product of the elements before each
    return linear_recurrence(x, multiply(t, excl), axis=axis, reverse=reverse)


def _cumprod_vjp(ct, out, x, *, axis, reverse):
    d = -1 if reverse else 1
    excl = shift(out, axis=axis, offset=d, fill=1.0)
    # Transpose of t -> linear_recurrence(x, t * excl): a recurrence run the other way.
    back = linear_recurrence(
        shift(x, axis=axis, offset=-d, fill=0.0), ct, axis=axis, reverse=not reverse
    )
    return multiply(excl, back)


cumprod = defop(
    "cumprod",
    kernel=lambda xp, x, *, axis, reverse: _cumulative(xp, "prod", x, axis, reverse),
    aval=_scan_aval("cumprod", _prod_dtype),
    batch=axes_batch,
    jvp=(_cumprod_jvp,),
    vjp=(_cumprod_vjp,),
    check=Check(shapes=(((2, 3),), ((3, 4),)), params=_SCAN_PARAMS, make_args=_zeros_in_slices),
    doc=_SCAN_DOC.format(
        summary="Cumulative product along ``axis``.",
        xdesc="",
        fnp="cumprod",
        dtype="bools and small ints multiply into the default int, as numpy",
        extra="\n\n    The derivative is exact with zeros in ``x``, at every order: it is a "
        "linear\n    recurrence (``linear_recurrence``), never a division by ``x``.",
        example=">>> fgrad.grad(lambda x: fnp.sum(fnp.cumprod(x)))(fnp.array([2.0, 0.0, 3.0]))\n"
        "        Tensor([1., 8., 0.], dtype=float64)",
    ),
)


def _shift_kernel(xp, x, *, axis, offset, fill):
    n = x.shape[axis]
    k = builtins.min(abs(offset), n)
    if k == 0:
        return x
    if offset > 0:
        return _concat(xp, [xp.full_like(_sl(x, axis, 0, k), fill), _sl(x, axis, 0, n - k)], axis)
    return _concat(xp, [_sl(x, axis, k, n), xp.full_like(_sl(x, axis, n - k, n), fill)], axis)


shift = defop(
    "shift",
    kernel=_shift_kernel,
    aval=lambda x, *, axis, offset, fill: _scan_aval("shift", same)(x, axis=axis, reverse=False),
    batch=axes_batch,
    jvp=(lambda t, out, x, *, axis, offset, fill: shift(t, axis=axis, offset=offset, fill=0.0),),
    vjp=(lambda ct, out, x, *, axis, offset, fill: shift(ct, axis=axis, offset=-offset, fill=0.0),),
    check=Check(
        shapes=(((2, 3),),),
        params=(
            {"axis": 1, "offset": 1, "fill": 1.0},
            {"axis": 1, "offset": -2, "fill": 0.0},
            {"axis": 0, "offset": 3, "fill": 0.0},
        ),
    ),
    doc="""Shift ``x`` along ``axis`` by ``offset`` places, filling the vacated places.

    ``out[i] = x[i - offset]`` where ``0 <= i - offset < n``, else ``fill``. The building
    block of exclusive scans (the derivatives of ``prod`` and ``cumprod``).

    Args:
        x: Tensor with at least one dimension.
        axis: non-negative int.
        offset: int; positive shifts toward higher indices.
        fill: Python float for the vacated places (it carries no derivative).

    Returns:
        Tensor of ``x.shape`` and ``x.dtype``.

    Example:
        >>> fgrad.ops.reduction.shift(fnp.array([1.0, 2.0, 3.0]), axis=0, offset=1, fill=1.0)
        Tensor([1., 1., 2.], dtype=float64)
    """,
)


def _linear_recurrence_kernel(xp, a, b, *, axis, reverse):
    a, b = xp.asarray(a), xp.asarray(b)
    dtype = xp.result_type(a, b)
    a, b = xp.broadcast_arrays(xp.astype(a, dtype), xp.astype(b, dtype))
    if reverse:
        a, b = xp.flip(a, axis=axis), xp.flip(b, axis=axis)
    # Hillis-Steele scan over the affine maps h -> a * h + b: after the step with stride d,
    # (a[i], b[i]) is the composition of the maps at i - 2d + 1 ... i, so log2(n) steps.
    n = a.shape[axis]
    d = 1
    while d < n:
        b_prev = _concat(xp, [xp.zeros_like(_sl(b, axis, 0, d)), _sl(b, axis, 0, n - d)], axis)
        # 0 * (overflowed product) must stay 0, as in the sequential recurrence.
        carry = xp.where(b_prev == 0, xp.zeros_like(b_prev), a * b_prev)
        if 2 * d < n:
            a = a * _concat(xp, [xp.ones_like(_sl(a, axis, 0, d)), _sl(a, axis, 0, n - d)], axis)
        b = b + carry
        d *= 2
    return xp.flip(b, axis=axis) if reverse else b


def _linear_recurrence_vjp(ct, out, a, b, *, axis, reverse):
    d = -1 if reverse else 1
    # h = L(a) b with L lower-triangular (upper when reverse); L(a)^T is the recurrence
    # the other way with the coefficients moved one place.
    ct_b = linear_recurrence(
        shift(a, axis=axis, offset=-d, fill=0.0), ct, axis=axis, reverse=not reverse
    )
    ct_a = multiply(shift(out, axis=axis, offset=d, fill=0.0), ct_b)
    return ct_a, ct_b


def _linear_recurrence_batch(op, args, dims, *, axis, reverse):
    # vmap rule: a and b broadcast against each other as elementwise inputs do, so the
    # elementwise rule lines up their mapped axes; ``axis`` (of the broadcast shape) moves
    # past the mapped one.
    return elementwise_batch(op, args, dims, axis=axis + 1, reverse=reverse)


def _lr_args(rng, shapes):
    return [rng.uniform(-1.5, 1.5, s) for s in shapes]


linear_recurrence = defop(
    "linear_recurrence",
    kernel=_linear_recurrence_kernel,
    aval=lambda a, b, *, axis, reverse: _scan_aval("linear_recurrence", same)(
        binary("linear_recurrence")(a, b), axis=axis, reverse=reverse
    ),
    batch=_linear_recurrence_batch,
    jvp=(
        lambda t, out, a, b, *, axis, reverse: linear_recurrence(
            a,
            multiply(t, shift(out, axis=axis, offset=-1 if reverse else 1, fill=0.0)),
            axis=axis,
            reverse=reverse,
        ),
        lambda t, out, a, b, *, axis, reverse: linear_recurrence(a, t, axis=axis, reverse=reverse),
    ),
    vjp=_linear_recurrence_vjp,
    check=Check(
        shapes=(((2, 5), (2, 5)), ((3, 4), (1, 4))),
        params=({"axis": 0, "reverse": False}, {"axis": 1, "reverse": True}),
        make_args=_lr_args,
    ),
    doc="""The first-order linear recurrence ``h[i] = a[i] * h[i - 1] + b[i]`` along ``axis``.

    With ``h[-1] = 0``; when ``reverse``, ``h[i] = a[i] * h[i + 1] + b[i]`` with
    ``h[n] = 0``. Exact with zeros in ``a`` (no division), and its derivatives are again
    linear recurrences, so ``cumprod``'s derivatives built on it are exact at every order.
    ``cumprod(x) == linear_recurrence(x, [x[0], 0, ..., 0])``; ``a = 1`` gives ``cumsum``.

    Args:
        a: Tensor of coefficients.
        b: Tensor of inputs, broadcastable with ``a``.
        axis: non-negative int, the axis to run along.
        reverse: run from the last element to the first.

    Returns:
        Tensor of the broadcast shape and promoted dtype.

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> a, b = fnp.array([2.0, 0.0, 3.0]), fnp.array([1.0, 1.0, 1.0])
        >>> fgrad.ops.reduction.linear_recurrence(a, b, axis=0, reverse=False)
        Tensor([1., 1., 4.], dtype=float64)

    References:
        Hillis and Steele, "Data parallel algorithms", CACM 1986 (the log-depth scan);
        Blelloch, "Prefix sums and their applications", 1990 (scans of affine maps).
    """,
)

from fgrad.ops.shape import broadcast_to, permute_dims, reshape
