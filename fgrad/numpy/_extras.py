"""More of numpy's functions, each a composition of ops (so derivatives come free).

Creation (``identity``, ``empty``, ``empty_like``, ``meshgrid``), triangles and diagonals
(``diag``, ``tril``, ``triu``, over the ``diagonal``/``diag_embed``/``tril`` ops),
comparisons with tolerance (``isclose``, ``allclose``), and ``diff``, ``cross``,
``interp``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad.errors import DTypeError, ShapeError
from fgrad.numpy._creation import _filled, _make, _static
from fgrad.numpy._indexing import take
from fgrad.numpy._shape import (
    _tensor,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    matrix_transpose,
    moveaxis,
    reshape,
    stack,
)
from fgrad.ops import elementwise as _e
from fgrad.ops import linalg as _la
from fgrad.ops import reduction as _r
from fgrad.ops import sorting as _so
from fgrad.ops._rules import broadcast_shapes, norm_axes
from fgrad.tensor import Tensor, _asarray, as_tensor, asarray, device_arg

__all__ = [
    "allclose",
    "cross",
    "diag",
    "diff",
    "empty",
    "empty_like",
    "identity",
    "interp",
    "isclose",
    "meshgrid",
    "tril",
    "triu",
]


def _floating(x: Any, fn: str = "asarray", arg: str = "x") -> Any:
    """``x`` as a Tensor of a floating (or complex) dtype; ints and bools become float64."""
    x = _tensor(x, fn, arg)
    return x if dtypes.is_inexact(x.dtype) else _e.astype(x, dtype=dtypes.float64)


# ------------------------------------------------------------------------ creation


def identity(n: int, dtype: Any = None, *, device: Any = None) -> Tensor:
    """The ``(n, n)`` identity matrix (float64 unless ``dtype`` is given).

    Raises:
        DTypeError: ``n`` is not an int, or ``dtype`` is not a numeric dtype.
        ValueError: ``n`` is negative.

    Example:
        >>> fnp.identity(2, dtype="int32")
        Tensor([[1, 0],
                [0, 1]], dtype=int32)
    """
    n = _args.size(_static(n, "identity", "n"), "identity", "n")
    dtype = _args.dtype(dtype, "identity") or np.dtype(np.float64)
    dev = device_arg(device, "identity")
    return _asarray(np.identity(n, dtype=dtype), None, dev, None, "identity")


def empty(shape: Any, dtype: Any = None, *, device: Any = None) -> Tensor:
    """A Tensor of ``shape`` to be filled by functional updates; its entries are zeros.

    Tensors are immutable, so uninitialised memory could never be written: as in JAX,
    ``empty`` is :func:`zeros`.

    Raises:
        DTypeError: ``shape`` holds something other than ints, or ``dtype`` is not a
            numeric dtype.
        ShapeError: a negative size.

    Example:
        >>> fnp.empty((2,), dtype="float32")
        Tensor([0., 0.], dtype=float32)
    """
    return _filled("empty", shape, dtype, device, make="zeros")


def empty_like(
    prototype: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None,
    *, device: Any = None,
) -> Tensor:
    """Zeros with ``prototype``'s shape, dtype and device (as JAX's ``empty_like``).

    Tensors are immutable, so "uninitialised" memory could never be written: the values
    are zeros, as JAX's are.

    Args:
        prototype: Tensor or array giving the defaults.
        dtype: optional dtype instead of ``prototype``'s.
        order, subok: numpy's layout arguments (only ``"K"``/``"C"``/``"A"`` and True).
        shape: optional shape instead of ``prototype``'s.
        device: optional device instead of ``prototype``'s (the Array API's keyword).

    Raises:
        DTypeError: ``prototype`` is not numeric, ``dtype`` is not a numeric dtype, or
            ``shape`` holds something other than ints.
        ShapeError: a negative size.

    Example:
        >>> fnp.empty_like(fnp.array([1, 2, 3]))
        Tensor([0, 0, 0], dtype=int64)
        >>> fnp.empty_like(fnp.ones(2), shape=(2, 1), device="cpu").shape
        (2, 1)
    """
    from fgrad.numpy._creation import _like

    return _like("empty_like", prototype, 0, dtype, order, subok, shape, device)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate grids from 1-D coordinate vectors (numpy's ``meshgrid``).

    Differentiable in every ``xi`` (each grid broadcasts its vector).

    Args:
        *xi: Tensors; each is flattened to 1-D.
        copy: ignored (Tensors are immutable).
        sparse: return grids with size-1 axes that broadcast, instead of full grids.
        indexing: ``"xy"`` (Cartesian: the first two output axes are swapped) or ``"ij"``
            (matrix indexing).

    Returns:
        List of ``len(xi)`` Tensors, each of shape ``(len(x1), len(x0), len(x2), ...)``
        for ``"xy"`` or ``(len(x0), len(x1), ...)`` for ``"ij"``.

    Raises:
        ValueError: ``indexing`` is not ``"xy"`` or ``"ij"``.
        DTypeError: an input is not numeric, or a flag is not a bool.

    Example:
        >>> xs, ys = fnp.meshgrid(fnp.array([1.0, 2.0, 3.0]), fnp.array([10.0, 20.0]))
        >>> xs
        Tensor([[1., 2., 3.],
                [1., 2., 3.]], dtype=float64)
        >>> ys
        Tensor([[10., 10., 10.],
                [20., 20., 20.]], dtype=float64)
    """
    _args.choice(indexing, "meshgrid", "indexing", ("xy", "ij"))
    _args.flag(copy, "meshgrid", "copy")
    sparse = _args.flag(sparse, "meshgrid", "sparse")
    vecs = [reshape(_tensor(x, "meshgrid", "xi"), (-1,)) for x in xi]
    ndim = len(vecs)
    sizes = [v.shape[0] for v in vecs]
    if indexing == "xy" and ndim > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vecs):
        axis = i
        if indexing == "xy" and ndim > 1 and i < 2:
            axis = 1 - i
        shape = [1] * ndim
        shape[axis] = v.shape[0]
        g = reshape(v, tuple(shape))
        out.append(g if sparse else broadcast_to(g, tuple(sizes)))
    return out


# ------------------------------------------------------------------------ diagonals, triangles


def diag(v: Any, k: int = 0) -> Any:
    """Diagonal ``k`` of a 2-D ``v``, or a square 2-D Tensor with 1-D ``v`` on diagonal ``k``.

    Args:
        v: 1-D or 2-D Tensor.
        k: diagonal offset; positive above the main diagonal, negative below.

    Returns:
        1-D Tensor (the diagonal) for 2-D ``v``; ``(n + |k|, n + |k|)`` Tensor for 1-D ``v``
        of length ``n``. Same dtype as ``v``.

    Raises:
        ShapeError: ``v`` is not 1-D or 2-D.
        DTypeError: ``v`` is not numeric, or ``k`` is not an int.

    Example:
        >>> fnp.diag(fnp.array([1.0, 2.0]))
        Tensor([[1., 0.],
                [0., 2.]], dtype=float64)
        >>> fnp.diag(fnp.array([[1.0, 2.0], [3.0, 4.0]]), k=1)
        Tensor([2.], dtype=float64)
    """
    v = _tensor(v, "diag", "v")
    k = _args.index(k, "diag", "k")
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        return _la.diag_embed(v, offset=k, n=n, m=n)
    if v.ndim == 2:
        return _la.diagonal(v, offset=k)
    raise ShapeError(f"diag: input must be 1-D or 2-D, got shape {tuple(v.shape)}")


def _matrices(name: str, m: Any) -> Any:
    m = _tensor(m, name, "m")
    if m.ndim == 0:
        raise ShapeError(f"{name}: input must be at least 1-D, got a 0-d Tensor")
    if m.ndim == 1:  # numpy treats a vector as the rows of a square matrix
        m = broadcast_to(m, (m.shape[0], m.shape[0]))
    return m


def tril(m: Any, k: int = 0) -> Any:
    """Lower triangle of ``m``: entries on and below diagonal ``k``, zeros above.

    Acts on the last two axes (a 1-D ``m`` is read as the rows of a square matrix, as in
    numpy); the derivative passes through on the kept entries.

    Raises:
        ShapeError: ``m`` is 0-d.
        DTypeError: ``m`` is not numeric, or ``k`` is not an int.

    Example:
        >>> fnp.tril(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([[1., 0.],
                [3., 4.]], dtype=float64)
    """
    return _la.tril(_matrices("tril", m), k=_args.index(k, "tril", "k"))


def triu(m: Any, k: int = 0) -> Any:
    """Upper triangle of ``m``: entries on and above diagonal ``k``, zeros below.

    The transpose of :func:`tril` of the transpose, so infinities below the diagonal do
    not leak in as NaN (as ``m - tril(m)`` would).

    Raises:
        ShapeError: ``m`` is 0-d.
        DTypeError: ``m`` is not numeric, or ``k`` is not an int.

    Example:
        >>> fnp.triu(fnp.array([[1.0, 2.0], [3.0, 4.0]]), k=1)
        Tensor([[0., 2.],
                [0., 0.]], dtype=float64)
    """
    m = _matrices("triu", m)
    return matrix_transpose(_la.tril(matrix_transpose(m), k=-_args.index(k, "triu", "k")))


# ------------------------------------------------------------------------ comparisons


def isclose(
    a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (numpy's ``isclose``; not symmetric).

    Infinities are close only to themselves; NaNs only when ``equal_nan``.

    Args:
        a: Tensor, array or Python scalar.
        b: Tensor, array or Python scalar broadcastable with ``a``; the reference value.
        rtol: relative tolerance.
        atol: absolute tolerance.
        equal_nan: count NaN as close to NaN.

    Returns:
        bool Tensor of the broadcast shape.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: an input is not numeric, a tolerance not a real number, or
            ``equal_nan`` not a bool.

    Example:
        >>> fnp.isclose(fnp.array([1.0, 1.1, fnp.inf]), fnp.array([1.0 + 1e-9, 1.0, fnp.inf]))
        Tensor([ True, False,  True], dtype=bool)
    """
    return _isclose(a, b, rtol, atol, equal_nan, "isclose")


def _isclose(a: Any, b: Any, rtol: Any, atol: Any, equal_nan: Any, name: str) -> Any:
    a, b = _tensor(a, name, "a"), _tensor(b, name, "b")
    broadcast_shapes(name, a, b)
    for arg, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, Tensor):
            broadcast_shapes(name, a, b, tol)
        else:
            _args.real(tol, name, arg)
    equal_nan = _args.flag(equal_nan, name, "equal_nan")
    if not dtypes.is_inexact(dtypes.result_type(a, b)):
        a, b = _floating(a), _floating(b)
    finite = _e.logical_and(_e.isfinite(a), _e.isfinite(b))
    a_f, b_f = _e.where(finite, a, 0), _e.where(finite, b, 0)  # no inf - inf warnings
    near = _e.less_equal(
        _e.abs(_e.subtract(a_f, b_f)), _e.add(atol, _e.multiply(rtol, _e.abs(b_f)))
    )
    out = _e.where(finite, near, _e.equal(a, b))
    if equal_nan:
        out = _e.logical_or(out, _e.logical_and(_e.isnan(a), _e.isnan(b)))
    return out


def allclose(
    a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    """True when every element of ``a`` is close to ``b`` (``all(isclose(...))``).

    Returns a 0-d bool Tensor (as JAX; numpy returns a Python bool), so it can be traced;
    ``bool(...)`` or ``if`` on it works on concrete values.

    Raises:
        As :func:`isclose`.

    Example:
        >>> bool(fnp.allclose(fnp.array([1.0, 2.0]), fnp.array([1.0, 2.0 + 1e-7])))
        True
    """
    close = _isclose(a, b, rtol, atol, equal_nan, "allclose")
    return _r.all(close, axes=tuple(range(close.ndim)), keepdims=False)


# ------------------------------------------------------------------------ diff, cross, interp


def _index_along(axis: int, ndim: int, s: slice) -> tuple:
    return (slice(None),) * axis + (s,) + (slice(None),) * (ndim - axis - 1)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th discrete difference along ``axis``: ``a[1:] - a[:-1]``, ``n`` times.

    Args:
        a: Tensor of at least one dimension.
        n: number of times to difference (0 returns ``a``).
        axis: the axis to difference along.
        prepend: values put before ``a`` along ``axis`` first (a scalar is broadcast).
        append: values put after ``a`` along ``axis`` first.

    Returns:
        Tensor with ``axis`` shorter by ``n``; bool inputs give ``a[1:] != a[:-1]``.

    Raises:
        ShapeError: ``a`` is 0-d, ``axis`` is out of range, or ``prepend``/``append`` do
            not fit ``a`` off ``axis``.
        ValueError: ``n`` is negative.
        DTypeError: ``a`` is not numeric, or ``n`` or ``axis`` is not an int.

    Example:
        >>> fnp.diff(fnp.array([1.0, 4.0, 9.0, 16.0]))
        Tensor([3., 5., 7.], dtype=float64)
        >>> fnp.diff(fnp.array([1.0, 4.0, 9.0, 16.0]), n=2, prepend=0.0)
        Tensor([2., 2., 2.], dtype=float64)
    """
    n = _args.index(n, "diff", "n", bool_ok=True)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    a = _tensor(a, "diff", "a")
    if n == 0:
        return a  # numpy returns the input itself, without prepend or append
    if a.ndim == 0:
        raise ShapeError("diff: needs an input of at least one dimension")
    axis = _args.axis(axis, "diff", a.ndim)
    if prepend is not None or append is not None:
        parts = []
        for name, extra in (("prepend", prepend), ("", None), ("append", append)):
            if extra is None:
                continue
            extra = _tensor(extra, "diff", name)
            if extra.ndim == 0:
                extra = broadcast_to(extra, a.shape[:axis] + (1,) + a.shape[axis + 1 :])
            if extra.ndim != a.ndim or any(
                e != d for i, (e, d) in enumerate(zip(extra.shape, a.shape)) if i != axis
            ):
                raise ShapeError(
                    f"diff: {name} of shape {tuple(extra.shape)} must be a scalar or match "
                    f"a's shape {tuple(a.shape)} off axis {axis}"
                )
            parts.append(extra)
        parts.insert(1 if prepend is not None else 0, a)
        a = concatenate(parts, axis=axis)
    n = min(n, a.shape[axis])  # numpy: more differences than elements leave an empty axis
    lo = _index_along(axis, a.ndim, slice(None, -1))
    hi = _index_along(axis, a.ndim, slice(1, None))
    for _ in range(int(n)):
        if dtypes.is_bool(a.dtype):
            a = _e.not_equal(a[hi], a[lo])
        else:
            a = _e.subtract(a[hi], a[lo])
    return a


def cross(
    a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None
) -> Any:
    """Cross product of 3-vectors (or 2-vectors) along ``axisa``/``axisb`` (numpy's ``cross``).

    Leading axes broadcast. For two 2-vectors the result is the scalar ``z`` component;
    a 2-vector with a 3-vector is read with ``z = 0``.

    Args:
        a: Tensor whose ``axisa`` has length 2 or 3.
        b: Tensor whose ``axisb`` has length 2 or 3.
        axisa: the vector axis of ``a``.
        axisb: the vector axis of ``b``.
        axisc: the vector axis of the result.
        axis: if given, overrides ``axisa``, ``axisb`` and ``axisc``.

    Returns:
        Tensor of the broadcast shape with the vector axis at ``axisc`` (none for two
        2-vectors), promoted dtype.

    Raises:
        ShapeError: a vector axis does not have length 2 or 3, or the rest do not broadcast.
        DTypeError: an input is not numeric, or an axis is not an int.

    Example:
        >>> fnp.cross(fnp.array([1.0, 0.0, 0.0]), fnp.array([0.0, 1.0, 0.0]))
        Tensor([0., 0., 1.], dtype=float64)
    """
    if axis is not None:
        axisa = axisb = axisc = _args.index(axis, "cross", "axis")
    a, b = _tensor(a, "cross", "a"), _tensor(b, "cross", "b")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("cross: inputs must have a vector axis of length 2 or 3, got a 0-d one")
    a = moveaxis(a, _args.axis(axisa, "cross", a.ndim, "axisa"), -1)
    b = moveaxis(b, _args.axis(axisb, "cross", b.ndim, "axisb"), -1)
    _args.index(axisc, "cross", "axisc")
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ShapeError(
            f"cross: incompatible vector lengths {a.shape[-1]} and {b.shape[-1]} (must be 2 or 3)"
        )
    broadcast_shapes("cross", a[..., 0], b[..., 0])
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    z = _e.subtract(_e.multiply(a0, b1), _e.multiply(a1, b0))
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return z
    a2 = a[..., 2] if a.shape[-1] == 3 else None
    b2 = b[..., 2] if b.shape[-1] == 3 else None
    if a2 is None:  # a = (a0, a1, 0)
        x, y = _e.multiply(a1, b2), _e.negative(_e.multiply(a0, b2))
    elif b2 is None:  # b = (b0, b1, 0)
        x, y = _e.negative(_e.multiply(a2, b1)), _e.multiply(a2, b0)
    else:
        x = _e.subtract(_e.multiply(a1, b2), _e.multiply(a2, b1))
        y = _e.subtract(_e.multiply(a2, b0), _e.multiply(a0, b2))
    out = stack(broadcast_arrays(x, y, z), axis=-1)
    return moveaxis(out, -1, _args.axis(axisc, "cross", out.ndim, "axisc"))


def interp(
    x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None
) -> Any:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x`` (numpy's ``interp``).

    Differentiable in ``x`` (the slope of the segment ``x`` falls in; at a knot, the
    segment to its right; 0 outside ``[xp[0], xp[-1]]``), in ``fp`` (the two interpolation
    weights) and in ``xp``.

    Args:
        x: Tensor of any shape: where to evaluate.
        xp: 1-D real Tensor of increasing x-coordinates (any order with ``period``).
        fp: 1-D Tensor of the values at ``xp``, same length; may be complex.
        left: value for ``x < xp[0]`` (default ``fp[0]``).
        right: value for ``x > xp[-1]`` (default ``fp[-1]``).
        period: optional period of the x-coordinates: ``x`` and ``xp`` are taken modulo it
            and ``left``/``right`` are ignored.

    Returns:
        Tensor of ``x``'s shape; floating dtype of ``x`` and ``fp`` (ints give float64).

    Raises:
        ShapeError: ``xp`` and ``fp`` are not 1-D of one non-zero length, or ``left``,
            ``right`` or ``period`` is not a scalar.
        DTypeError: an input is not numeric, ``x`` or ``xp`` is complex, or ``period`` is
            not a real number.
        ValueError: ``period`` is 0.

    Example:
        >>> fnp.interp(fnp.array([0.5, 1.5, 3.0]), fnp.array([0.0, 1.0, 2.0]), fnp.array([0.0, 10.0, 0.0]))
        Tensor([5., 5., 0.], dtype=float64)
        >>> fgrad.grad(lambda x: fnp.interp(x, fnp.array([0.0, 2.0]), fnp.array([1.0, 5.0])))(0.5)
        Tensor(2., dtype=float64)
    """
    x = _floating(x, "interp", "x")
    xp, fp = _floating(xp, "interp", "xp"), _floating(fp, "interp", "fp")
    for name, t in (("x", x), ("xp", xp)):
        if dtypes.is_complex(t.dtype):
            raise DTypeError(f"interp: {name} must be real (complex values have no order)")
    for name, value in (("left", left), ("right", right)):
        if value is not None:
            value = _tensor(value, "interp", name)
            if value.ndim:
                raise ShapeError(
                    f"interp: {name} must be a scalar (as numpy's), got shape {value.shape}"
                )
            if dtypes.is_complex(value.dtype) and not dtypes.is_complex(fp.dtype):
                raise DTypeError(f"interp: {name} is complex but fp is real ({fp.dtype})")
    if period is not None:
        if isinstance(period, Tensor):
            if period.ndim:
                raise ShapeError(f"interp: period must be a scalar, got shape {period.shape}")
        else:
            _args.real(period, "interp", "period")
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape or xp.shape[0] == 0:
        raise ShapeError(
            f"interp: xp and fp must be 1-D of one non-zero length, got {tuple(xp.shape)} and "
            f"{tuple(fp.shape)}"
        )
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be non-zero")
        period = abs(period)
        x = _e.remainder(x, period)
        xp = _e.remainder(xp, period)
        order = _so.argsort(xp, axis=0, descending=False)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([_e.subtract(xp[-1:], period), xp, _e.add(xp[:1], period)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
        left = right = None
    n = xp.shape[0]
    if n == 1:
        out = broadcast_to(_e.astype(fp[0], dtype=dtypes.result_type(x, fp)), tuple(x.shape))
    else:
        i = _e.minimum(_e.maximum(_so.searchsorted(xp, x, side="right"), 1), n - 1)
        i0 = _e.subtract(i, 1)
        x0, x1 = take(xp, i0), take(xp, i)
        f0, f1 = take(fp, i0), take(fp, i)
        dx = _e.subtract(x1, x0)
        t = _e.divide(_e.subtract(x, x0), _e.where(_e.equal(dx, 0), 1, dx))
        out = _e.add(f0, _e.multiply(t, _e.subtract(f1, f0)))
        out = _e.where(_e.equal(x, xp[-1]), fp[-1], out)  # exactly fp[-1], as numpy
    out = _e.where(_e.less(x, xp[0]), fp[0] if left is None else left, out)
    return _e.where(_e.greater(x, xp[-1]), fp[-1] if right is None else right, out)
