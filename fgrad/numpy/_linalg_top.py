"""numpy's top-level linear algebra: matmul, dot, einsum, tensordot, trace, kron, ...

``matmul`` and ``einsum``'s core are registry ops; the rest are compositions of them (and
of ``diagonal``, ``reshape``, ``sum``), so their derivatives come from those ops' rules.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad._args import names_errors as _named
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops import linalg as _la
from fgrad.ops._rules import shape_of
from fgrad.ops.elementwise import astype as _astype
from fgrad.ops.elementwise import conj as _conj
from fgrad.ops.elementwise import multiply as _multiply
from fgrad.ops.linalg import matmul
from fgrad.ops.reduction import sum as _sum
from fgrad.ops.shape import permute_dims as _permute_dims
from fgrad.ops.shape import reshape as _reshape
from fgrad.tensor import Tensor, asarray

__all__ = [
    "diagonal",
    "dot",
    "einsum",
    "inner",
    "kron",
    "matmul",
    "outer",
    "tensordot",
    "trace",
    "vdot",
    "vecdot",
]

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SCALARS = (bool, int, float, complex)


def _arr(x: Any, fn: str | None = None, arg: str = "the input") -> Any:
    """Tensors, arrays and Python scalars pass; lists and tuples become Tensors.

    With ``fn`` (the public function's name), a non-numeric input (a str, None, an object,
    a str array) or a Python int beyond int64 raises an error naming ``fn`` and ``arg``.
    """
    if type(x) is Tensor:  # the common case, on every reduction's path
        return x
    if fn is None:
        if isinstance(x, (Tensor, *_SCALARS)) or hasattr(x, "shape"):
            return x
        return asarray(x)
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 2**63 - 1:
        raise ValueError(f"{fn}: {arg}={x} is beyond the int64 range; pass an array or a float")
    if isinstance(x, (Tensor, *_SCALARS)):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        try:
            ok = _args.is_numeric(np.dtype(x.dtype))
        except TypeError:
            ok = True  # an Array API namespace's own dtype
        if not ok:
            raise DTypeError(
                f"{fn}: {arg} must be numeric, got {_args.describe(x)}; Tensors hold bool, "
                "integer, floating or complex numbers"
            )
        return x
    try:
        return asarray(x)
    except (TypeError, ValueError) as e:
        raise DTypeError(
            f"{fn}: {arg} must be a Tensor, an array or nested lists of numbers, got "
            f"{_args.describe(x)}"
        ) from e


def _is_complex(x: Any) -> bool:
    return dtypes.is_complex(dtypes.result_type(x))


def _ravel(x: Any) -> Any:
    if isinstance(x, complex):
        x = asarray(x)
    return _reshape(x, shape=(int(np.prod(shape_of(x), dtype=np.int64)),))


def _norm_axis(name: str, axis: Any, ndim: int, arg: str = "axis") -> int:
    return _args.axis(axis, name, ndim, arg)


# ------------------------------------------------------------------------ einsum


def _parse_einsum(subscripts: str, shapes: list) -> str:
    """numpy's subscripts (implicit output, ellipses, spaces) -> the op's explicit form."""
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    ins_s, arrow, out = s.partition("->")
    ins = ins_s.split(",")
    if len(ins) != len(shapes):
        raise ShapeError(
            f"einsum: subscripts {subscripts!r} name {len(ins)} operands but {len(shapes)} "
            "were given"
        )
    for term in ins + [out]:
        bad = set(term.replace("...", "")) - set(_LETTERS)
        if bad or term.count("...") > 1:
            raise ValueError(
                f"einsum: invalid subscripts {subscripts!r}: use letters, at most one '...' "
                "per term, ',' between operands and '->' before the output"
            )
    n_ell = 0
    for term, shape in zip(ins, shapes):
        if "..." in term:
            k = len(shape) - (len(term) - 3)
            if k < 0:
                raise ShapeError(
                    f"einsum: operand subscripts {term!r} have more letters than the operand's "
                    f"{len(shape)} dimensions (shape {shape})"
                )
            n_ell = max(n_ell, k)
    free = [c for c in _LETTERS if c not in s]
    if n_ell > len(free):
        raise ValueError(f"einsum: too many dimensions for subscripts {subscripts!r}")
    ell = "".join(free[:n_ell])
    ins = [
        t.replace("...", ell[n_ell - (len(shape) - (len(t) - 3)) :]) if "..." in t else t
        for t, shape in zip(ins, shapes)
    ]
    if not arrow:
        counts = Counter("".join(ins))
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    elif "..." in out:
        out = out.replace("...", ell)
    elif n_ell:
        raise ShapeError(
            f"einsum: the inputs of {subscripts!r} have '...' dimensions but the output does "
            "not; write '...' in the output (or sum them explicitly)"
        )
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscripts of {subscripts!r} repeat an index")
    _la._einsum_sizes("einsum", f"{','.join(ins)}->{out}", tuple(shapes))  # user's letters
    # Canonical letters (in order of appearance) so equal contractions share one param.
    rename = {c: _LETTERS[i] for i, c in enumerate(dict.fromkeys("".join(ins) + out))}
    canon = lambda term: "".join(rename.get(c, c) for c in term)
    return f"{','.join(canon(t) for t in ins)}->{canon(out)}"


def einsum(subscripts: str, *operands: Any, optimize: Any = None) -> Any:
    """Einstein summation, with numpy's subscripts (implicit output and ``...`` allowed).

    Implicit mode (no ``->``) outputs the indices that appear once, in alphabetical order
    (uppercase first), after any ``...`` dimensions, as numpy. Indices repeated in an
    operand take its diagonal (``"ii"`` is the trace). The derivative with respect to each
    operand is again an einsum.

    Args:
        subscripts: numpy's subscripts, for example ``"ij,jk->ik"``, ``"ii"``, ``"...ij,...jk"``.
        *operands: Tensors, arrays or Python scalars, one per term.
        optimize: accepted for numpy compatibility; the kernel picks numpy's contraction
            path itself (optimised for three or more operands or non-tiny arrays).

    Returns:
        Tensor with one axis per output index, promoted dtype.

    Raises:
        ShapeError: the terms do not match the operands' dimensions, or an index has two
            sizes.
        ValueError: malformed subscripts (a repeated or unknown output index).

    Example:
        >>> a = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> fnp.einsum("ii", a), fnp.einsum("ij->j", a)
        (Tensor(5., dtype=float64), Tensor([4., 6.], dtype=float64))
        >>> fnp.einsum("...ij,...j", a, fnp.array([1.0, 1.0]))
        Tensor([3., 7.], dtype=float64)
    """
    if not isinstance(subscripts, str):
        raise TypeError(
            "einsum: pass the subscripts as a string first (the interleaved operand/sublist "
            "form is not supported)"
        )
    path = isinstance(optimize, (list, tuple)) and list(optimize[:1]) == ["einsum_path"]
    named = isinstance(optimize, str) and optimize in ("greedy", "optimal")
    if not (optimize is None or isinstance(optimize, (bool, np.bool_)) or named or path):
        raise ValueError(
            "einsum: optimize must be None, True, False, 'greedy', 'optimal' or an einsum_path "
            f"list, got {_args.describe(optimize)}"
        )
    operands = tuple(_arr(x, "einsum", "operands") for x in operands)
    spec = _parse_einsum(subscripts, [shape_of(x) for x in operands])
    return _la.einsum(*operands, subscripts=spec)


# ------------------------------------------------------------------------ products


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """Sum products over ``axes`` of ``a`` and ``b`` (numpy's ``tensordot``).

    Args:
        a: Tensor.
        b: Tensor.
        axes: int ``N`` (the last ``N`` axes of ``a`` with the first ``N`` of ``b``) or a
            pair of axis sequences ``(axes_a, axes_b)`` of equal length.

    Returns:
        Tensor with ``a``'s free axes then ``b``'s.

    Raises:
        ShapeError: the summed axes differ in size or are out of range.

    Example:
        >>> a = fnp.ones((2, 3, 4))
        >>> fnp.tensordot(a, fnp.ones((3, 4, 5))).shape
        (2, 5)
        >>> fnp.tensordot(a, fnp.ones((4, 2)), axes=([0, 2], [1, 0])).shape
        (3,)
    """
    a, b = _arr(a, "tensordot", "a"), _arr(b, "tensordot", "b")
    sa, sb = shape_of(a), shape_of(b)
    if not isinstance(axes, (list, tuple)):
        n = _args.index(axes, "tensordot", "axes", what="an int or a pair of axis sequences")
        if n < 0 or n > min(len(sa), len(sb)):
            raise ShapeError(f"tensordot: axes={n} is out of range for shapes {sa} and {sb}")
        ax_a, ax_b = list(range(len(sa) - n, len(sa))), list(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(
                f"tensordot: axes must be an int or a pair (axes_a, axes_b), got {axes!r}"
            )
        ax_a, ax_b = axes
        for part in (ax_a, ax_b):
            if _args._int_or_none(part) is None and not isinstance(part, (list, tuple, np.ndarray)):
                raise DTypeError(
                    "tensordot: axes must be an int or a pair of ints or axis sequences, got "
                    f"{axes!r} ({_args.describe(part)} is neither)"
                )
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ShapeError(f"tensordot: axes {axes} name different numbers of axes")
        ax_a = [_norm_axis("tensordot", i, len(sa), "axes") for i in ax_a]
        ax_b = [_norm_axis("tensordot", i, len(sb), "axes") for i in ax_b]
    for i, j in zip(ax_a, ax_b):
        if sa[i] != sb[j]:
            raise ShapeError(
                f"tensordot: shape mismatch for sum: a.shape[{i}] = {sa[i]} but b.shape[{j}] = "
                f"{sb[j]} (shapes {sa} and {sb})"
            )
    if len(sa) + len(sb) - len(ax_a) > len(_LETTERS):
        raise ShapeError("tensordot: too many dimensions")
    la = _LETTERS[: len(sa)]
    fresh = iter(_LETTERS[len(sa) :])
    lb = [None] * len(sb)
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    lb = "".join(c if c is not None else next(fresh) for c in lb)
    out = "".join(c for i, c in enumerate(la) if i not in ax_a) + "".join(
        c for j, c in enumerate(lb) if j not in ax_b
    )
    return _la.einsum(a, b, subscripts=f"{la},{lb}->{out}")


def dot(a: Any, b: Any) -> Any:
    """numpy's ``dot``: inner product of vectors, matrix product, or a sum over the last
    axis of ``a`` and the second-to-last of ``b``.

    Args:
        a: Tensor or scalar.
        b: Tensor or scalar.

    Returns:
        Tensor: ``a * b`` if either is 0-d; ``a @ b`` for 1-D and 2-D operands; otherwise
        ``tensordot(a, b, axes=([-1], [-2]))`` (``[-1], [0]`` for 1-D ``b``).

    Raises:
        ShapeError: the summed dimensions differ.

    Example:
        >>> fnp.dot(fnp.array([1.0, 2.0]), fnp.array([3.0, 4.0]))
        Tensor(11., dtype=float64)
        >>> fnp.array([[1.0, 2.0]]).dot(fnp.array([[3.0], [4.0]]))
        Tensor([[11.]], dtype=float64)
    """
    a, b = _arr(a, "dot", "a"), _arr(b, "dot", "b")
    na, nb = len(shape_of(a)), len(shape_of(b))
    if na == 0 or nb == 0:
        return _multiply(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if sa[-1] != sb[0 if nb == 1 else -2]:
        raise ShapeError(
            f"dot: shapes {sa} and {sb} are not aligned: {sa[-1]} (dim {na - 1}) != "
            f"{sb[0 if nb == 1 else -2]} (dim {0 if nb == 1 else nb - 2})"
        )
    if na <= 2 and nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([na - 1], [0 if nb == 1 else nb - 2]))


def inner(a: Any, b: Any) -> Any:
    """Sum of products over the last axes of ``a`` and ``b`` (numpy's ``inner``).

    Args:
        a: Tensor ``(..., n)`` or scalar.
        b: Tensor ``(..., n)`` or scalar.

    Returns:
        Tensor of shape ``a.shape[:-1] + b.shape[:-1]`` (``a * b`` for a scalar).

    Raises:
        ShapeError: the last dimensions differ.

    Example:
        >>> fnp.inner(fnp.array([[1.0, 2.0], [3.0, 4.0]]), fnp.array([1.0, 1.0]))
        Tensor([3., 7.], dtype=float64)
    """
    a, b = _arr(a, "inner", "a"), _arr(b, "inner", "b")
    na, nb = len(shape_of(a)), len(shape_of(b))
    if na == 0 or nb == 0:
        return _multiply(a, b)
    if shape_of(a)[-1] != shape_of(b)[-1]:
        raise ShapeError(
            f"inner: the last dimensions differ: shapes {shape_of(a)} and {shape_of(b)}"
        )
    return tensordot(a, b, axes=([na - 1], [nb - 1]))


def outer(a: Any, b: Any) -> Any:
    """Outer product of ``a`` and ``b``, each flattened first (numpy's ``outer``).

    Args:
        a: Tensor of any shape (flattened to ``(m,)``).
        b: Tensor of any shape (flattened to ``(n,)``).

    Returns:
        ``(m, n)`` Tensor ``a[i] * b[j]``.

    Example:
        >>> fnp.outer(fnp.array([1.0, 2.0]), fnp.array([1.0, 10.0, 100.0]))
        Tensor([[  1.,  10., 100.],
                [  2.,  20., 200.]], dtype=float64)
    """
    a, b = _arr(a, "outer", "a"), _arr(b, "outer", "b")
    return _la.einsum(_ravel(a), _ravel(b), subscripts="a,b->ab")


def vdot(a: Any, b: Any) -> Any:
    """Dot product of the flattened inputs, conjugating ``a`` (numpy's ``vdot``).

    Args:
        a: Tensor; complex values are conjugated.
        b: Tensor with as many elements as ``a``.

    Returns:
        0-d Tensor ``sum(conj(a) * b)``.

    Raises:
        ShapeError: the sizes differ.

    Example:
        >>> fnp.vdot(fnp.array([1 + 1j, 2]), fnp.array([1, 1j]))
        Tensor(1.+1.j, dtype=complex128)
    """
    a, b = _ravel(_arr(a, "vdot", "a")), _ravel(_arr(b, "vdot", "b"))
    if shape_of(a) != shape_of(b):
        raise ShapeError(
            f"vdot: a and b must have as many elements, got {shape_of(a)[0]} and "
            f"{shape_of(b)[0]}"
        )
    if _is_complex(a):
        a = _conj(a)
    return _la.einsum(a, b, subscripts="a,a->")


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Vector dot product ``sum(conj(x1) * x2)`` over ``axis``, broadcasting the rest.

    Args:
        x1: Tensor ``(..., n)``; complex values are conjugated.
        x2: Tensor broadcastable with ``x1``.
        axis: the axis summed (of the broadcast shape).

    Returns:
        Tensor of the broadcast shape without ``axis``.

    Raises:
        ShapeError: the shapes do not broadcast or the axis is out of range.

    Example:
        >>> fnp.vecdot(fnp.array([[1.0, 2.0], [3.0, 4.0]]), fnp.array([1.0, 1.0]))
        Tensor([3., 7.], dtype=float64)
    """
    x1, x2 = _arr(x1, "vecdot", "x1"), _arr(x2, "vecdot", "x2")
    s1, s2 = shape_of(x1), shape_of(x2)
    if not s1 or not s2:
        raise ShapeError(
            f"vecdot: x1 and x2 need at least one dimension, got shapes {s1} and {s2}"
        )
    ax1 = _norm_axis("vecdot", axis, len(s1))
    ax2 = _norm_axis("vecdot", axis, len(s2))
    if s1[ax1] != s2[ax2]:
        raise ShapeError(
            f"vecdot: the summed axis {axis} differs in size: {s1[ax1]} (x1 of shape {s1}) and "
            f"{s2[ax2]} (x2 of shape {s2})"
        )
    if ax1 != len(s1) - 1:
        x1 = _permute_dims(x1, axes=tuple(i for i in range(len(s1)) if i != ax1) + (ax1,))
    if ax2 != len(s2) - 1:
        x2 = _permute_dims(x2, axes=tuple(i for i in range(len(s2)) if i != ax2) + (ax2,))
    try:
        np.broadcast_shapes(shape_of(x1), shape_of(x2))
    except ValueError:
        raise ShapeError(f"vecdot: x1 and x2 do not broadcast: shapes {s1} and {s2}") from None
    if _is_complex(x1):
        x1 = _conj(x1)
    prod = _multiply(x1, x2)
    out = _sum(prod, axes=(len(shape_of(prod)) - 1,), keepdims=False)
    # numpy's vecdot keeps the product's dtype (sum would widen int32 and bool to int64)
    return out if out.dtype == prod.dtype else _astype(out, dtype=prod.dtype)


def kron(a: Any, b: Any) -> Any:
    """Kronecker product: blocks ``a[i, j] * b`` (numpy's ``kron``, any dimensions).

    Args:
        a: Tensor.
        b: Tensor; the shorter shape is padded with leading 1s.

    Returns:
        Tensor of shape ``a.shape * b.shape`` (elementwise, after padding).

    Example:
        >>> fnp.kron(fnp.eye(2), fnp.array([[1.0, 2.0]]))
        Tensor([[1., 2., 0., 0.],
                [0., 0., 1., 2.]], dtype=float64)
    """
    a, b = _arr(a, "kron", "a"), _arr(b, "kron", "b")
    a, b = (asarray(v) if isinstance(v, complex) else v for v in (a, b))
    sa, sb = shape_of(a), shape_of(b)
    nd = max(len(sa), len(sb))
    if 2 * nd > len(_LETTERS):
        raise ShapeError("kron: too many dimensions")
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    la, lb = _LETTERS[:nd], _LETTERS[nd : 2 * nd]
    out = "".join(x + y for x, y in zip(la, lb))
    prod = _la.einsum(_reshape(a, shape=sa), _reshape(b, shape=sb), subscripts=f"{la},{lb}->{out}")
    return _reshape(prod, shape=tuple(x * y for x, y in zip(sa, sb)))


# ------------------------------------------------------------------------ diagonals


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """Diagonal ``offset`` of the matrices formed by ``axis1`` and ``axis2`` (numpy's).

    Args:
        a: Tensor with at least two dimensions.
        offset: 0 the main diagonal, positive above it, negative below.
        axis1: axis of the rows.
        axis2: axis of the columns.

    Returns:
        Tensor with ``axis1`` and ``axis2`` removed and the diagonal appended last.

    Raises:
        ShapeError: fewer than two dimensions, an axis out of range, or
            ``axis1 == axis2``.

    Example:
        >>> x = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> fnp.diagonal(x), x.diagonal(offset=-1)
        (Tensor([1., 4.], dtype=float64), Tensor([3.], dtype=float64))
    """
    return _diagonal(a, offset, axis1, axis2, "diagonal")


def _diagonal(a: Any, offset: Any, axis1: Any, axis2: Any, fn: str) -> Any:
    a = _arr(a, fn, "a")
    offset = _args.index(offset, fn, "offset")
    nd = len(shape_of(a))
    if nd < 2:
        raise ShapeError(f"{fn}: needs at least two dimensions; got shape {shape_of(a)}")
    ax1, ax2 = _norm_axis(fn, axis1, nd, "axis1"), _norm_axis(fn, axis2, nd, "axis2")
    if ax1 == ax2:
        raise ShapeError(f"{fn}: axis1 and axis2 are the same axis ({axis1}, {axis2})")
    if (ax1, ax2) != (nd - 2, nd - 1):
        perm = tuple(i for i in range(nd) if i not in (ax1, ax2)) + (ax1, ax2)
        a = _permute_dims(a, axes=perm)
    return _la.diagonal(a, offset=offset)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    """Sum along diagonal ``offset`` of the matrices formed by ``axis1`` and ``axis2``.

    Args:
        a: Tensor with at least two dimensions.
        offset: 0 the main diagonal, positive above it, negative below.
        axis1: axis of the rows.
        axis2: axis of the columns.
        dtype: optional dtype of the result.

    Returns:
        Tensor with ``axis1`` and ``axis2`` removed.

    Raises:
        ShapeError: as :func:`diagonal`.

    Example:
        >>> x = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> fnp.trace(x), fgrad.grad(fnp.trace)(x)
        (Tensor(5., dtype=float64), Tensor([[1., 0.],
                [0., 1.]], dtype=float64))
    """
    dtype = _args.dtype(dtype, "trace")
    d = _diagonal(a, offset, axis1, axis2, "trace")
    out = _sum(d, axes=(len(shape_of(d)) - 1,), keepdims=False)
    return out if dtype is None else _astype(out, dtype=dtype)
