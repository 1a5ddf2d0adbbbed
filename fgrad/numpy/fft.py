"""``fgrad.numpy.fft``: numpy's discrete Fourier transforms, differentiable.

Every transform is one of three registry ops (``fgrad/ops/fft.py``): the complex ``fft``
(forward or inverse), ``rfft`` and ``irfft``, each over several axes at once. What numpy
does around the transform is composed here from other ops: padding with zeros or cropping
to ``n``/``s``, the 2-d and n-d forms, ``hfft``/``ihfft`` (conjugates around the real
transforms), the frequency grids and the shifts (``roll``). Signatures, defaults, dtypes
and the axis and length rules are numpy 2's; ``out=`` does not exist (Tensors are
immutable), and a repeated axis is an error rather than a second transform (see
``docs/fft.md``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from fgrad import _args, dtypes
from fgrad._args import names_errors as _named
from fgrad.errors import DTypeError, ShapeError
from fgrad.numpy._creation import arange
from fgrad.numpy._shape import _tensor, roll
from fgrad.ops import fft as _f
from fgrad.ops.elementwise import astype as _astype
from fgrad.ops.elementwise import conj as _conj
from fgrad.ops.elementwise import divide as _divide
from fgrad.ops.elementwise import greater_equal as _ge
from fgrad.ops.elementwise import multiply as _mul
from fgrad.ops.elementwise import subtract as _sub
from fgrad.ops.elementwise import where as _where
from fgrad.ops.indexing import getitem as _getitem
from fgrad.ops.shape import pad as _pad
from fgrad.tensor import Tensor, device_arg

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]

_SOURCE = "Cooley and Tukey 1965 (the FFT); the kernels are numpy's pocketfft (cupy's cuFFT)"


# ------------------------------------------------------------------------ argument checks


def _norm(norm: Any, fn: str) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in _f.NORMS:
        kind = ValueError if isinstance(norm, str) else DTypeError
        raise kind(
            f"{fn}: norm must be 'backward', 'ortho', 'forward' or None (meaning "
            f"'backward'), got {_args.describe(norm)}"
        )
    return norm


def _input(a: Any, fn: str, *, real: bool = False, complex_fn: str = "") -> Tensor:
    x = _tensor(a, fn, "a")
    if real and dtypes.is_complex(x.dtype):
        raise DTypeError(
            f"{fn}: a must be real, got {_args.describe(x)}; use fgrad.numpy.fft."
            f"{complex_fn} for complex input, or pass fnp.real(a) if only the real part is meant"
        )
    return x


def _axis(axis: Any, fn: str, shape: tuple) -> int:
    nd = len(shape)
    a = _args._int_or_none(axis)
    if a is None:
        raise DTypeError(f"{fn}: axis must be an int, got {_args.describe(axis)}")
    if not -nd <= a < nd:
        if nd == 0:
            raise ShapeError(
                f"{fn}: a is 0-d (shape ()), it has no axis {a} to transform; pass an array "
                "of at least 1 dimension"
            )
        raise ShapeError(
            f"{fn}: axis {a} is out of range for a of shape {shape}; pass an axis in "
            f"[{-nd}, {nd})"
        )
    return a % nd


def _axes(axes: Any, fn: str, shape: tuple) -> list[int]:
    if isinstance(axes, (str, bytes, dict, set, frozenset)) or not (
        isinstance(axes, Iterable) or _args._int_or_none(axes) is not None
    ):
        raise DTypeError(f"{fn}: axes must be a sequence of ints, got {_args.describe(axes)}")
    items = [axes] if _args._int_or_none(axes) is not None else list(axes)
    out = [_axis(a, fn, shape) for a in items]
    if len(set(out)) != len(out):
        raise ShapeError(
            f"{fn}: axes {tuple(items)} repeat an axis of a with shape {shape}; pass each axis "
            "once (numpy would transform a repeated axis twice: apply the 1-d transform again "
            "for that)"
        )
    return out


def _length(n: Any, fn: str, arg: str, shape: tuple, axis: int) -> int:
    n = _args.index(n, fn, arg)
    if n < 1:
        raise ValueError(
            f"{fn}: {n} data points along axis {axis} of a with shape {shape}; an FFT needs "
            f"at least 1: pass {arg} >= 1"
        )
    return n


def _resized(x: Any, axis: int, n: int) -> Any:
    """``x`` cropped or zero-padded to length ``n`` along ``axis`` (numpy's ``n``/``s``)."""
    shape = x.shape
    m = shape[axis]
    if n == m:
        return x
    if n < m:
        index = tuple((0, shape[a], 1) for a in range(axis)) + ((0, n, 1),)
        return _getitem(x, index=index)
    widths = tuple((0, n - m) if a == axis else (0, 0) for a in range(len(shape)))
    return _pad(x, pad_width=widths, constant=0)


def _cook(a: Tensor, s: Any, axes: Any, fn: str, *, inverse_real: bool = False):
    """numpy's ``s``/``axes`` rules: the transformed axes (non-negative, in order) and the
    length of each; for ``irfftn`` the last length is the output's."""
    shape = tuple(a.shape)
    if axes is not None:
        axes = _axes(axes, fn, shape)
    if s is None:
        given = None
        lengths = list(shape) if axes is None else [shape[ax] for ax in axes]
    else:
        if isinstance(s, (str, bytes, dict, set, frozenset)) or not isinstance(s, Iterable):
            raise DTypeError(f"{fn}: s must be a sequence of ints, got {_args.describe(s)}")
        given = list(s)
        if None in given:
            warnings.warn(
                f"{fn}: None in s is deprecated (numpy 2.0); pass -1 or the length of the "
                "axis for its default, or omit s",
                DeprecationWarning,
                stacklevel=3,
            )
        lengths = given
    if axes is None:
        if given is not None:
            warnings.warn(
                f"{fn}: s without axes is deprecated (numpy 2.0); pass axes too, e.g. "
                f"axes={tuple(range(-len(given), 0))}",
                DeprecationWarning,
                stacklevel=3,
            )
        if len(lengths) > len(shape):
            raise ShapeError(
                f"{fn}: s={tuple(lengths)} has more entries than a of shape {shape} has "
                "dimensions; pass one length per transformed axis"
            )
        axes = list(range(len(shape) - len(lengths), len(shape)))
    if len(lengths) != len(axes):
        raise ValueError(
            f"{fn}: s={tuple(lengths)} and axes={tuple(axes)} have different lengths; pass "
            "one length per axis"
        )
    out = []
    for i, (n, ax) in enumerate(zip(lengths, axes)):
        last = i == len(axes) - 1
        if n is None or (given is None and last and inverse_real):
            # The 1-d transform's default: irfft's 2 (m - 1) on the last axis of irfftn.
            n = 2 * (shape[ax] - 1) if (inverse_real and last) else shape[ax]
        elif _args._int_or_none(n) == -1:
            n = shape[ax]  # numpy 2: -1 takes the whole axis
        out.append(_length(n, fn, "s", shape, ax))
    return out, axes


# ------------------------------------------------------------------------ transforms


def _c2c(a, s, axes, norm, fn, inverse):
    x = _input(a, fn)
    norm = _norm(norm, fn)
    lengths, axes = _cook(x, s, axes, fn)
    if not axes:
        return x  # numpy returns the input itself when no axis is transformed
    for ax, n in zip(axes, lengths):
        x = _resized(x, ax, n)
    return _f.fft(x, axes=tuple(sorted(axes)), norm=norm, inverse=inverse)


def _r2c(a, s, axes, norm, fn, complex_fn):
    x = _input(a, fn, real=True, complex_fn=complex_fn)
    norm = _norm(norm, fn)
    lengths, axes = _cook(x, s, axes, fn)
    if not axes:
        raise ShapeError(f"{fn}: needs at least one axis to transform, got axes=()")
    for ax, n in zip(axes, lengths):
        x = _resized(x, ax, n)
    return _f.rfft(x, axes=(*sorted(axes[:-1]), axes[-1]), norm=norm)


def _c2r(x, lengths, axes, norm):
    """irfft over ``axes`` with output lengths ``lengths`` (the input cropped or padded to
    them, and to ``n // 2 + 1`` along the last axis)."""
    *others, last = axes
    for ax, n in zip(others, lengths):
        x = _resized(x, ax, n)
    x = _resized(x, last, lengths[-1] // 2 + 1)
    return _f.irfft(x, axes=(*sorted(others), last), norm=norm, n=lengths[-1])


def _c2r_nd(a, s, axes, norm, fn):
    x = _input(a, fn)
    norm = _norm(norm, fn)
    lengths, axes = _cook(x, s, axes, fn, inverse_real=True)
    if not axes:
        raise ShapeError(f"{fn}: needs at least one axis to transform, got axes=()")
    return _c2r(x, lengths, axes, norm)


def _one(a, n, axis, fn, *, real=False, complex_fn="", half=False):
    """The input, axis and length of a 1-d transform (``half``: the default length is
    ``2 (m - 1)``, as for irfft and hfft)."""
    x = _input(a, fn, real=real, complex_fn=complex_fn)
    ax = _axis(axis, fn, tuple(x.shape))
    if n is None:
        m = x.shape[ax]
        n = 2 * (m - 1) if half else m
    return x, ax, _length(n, fn, "n", tuple(x.shape), ax)


@_named("fft")
def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """One-dimensional discrete Fourier transform (numpy's ``fft.fft``).

    ``A[k] = sum_j a[j] exp(-2 pi i j k / n)`` along ``axis``, scaled by 1, ``1/sqrt(n)``
    or ``1/n`` for ``norm`` ``"backward"``, ``"ortho"``, ``"forward"``. Holomorphic and
    linear: ``grad`` and ``vjp`` apply the same transform to the cotangent.

    Args:
        a: ``(..., m, ...)`` Tensor of any numeric dtype.
        n: length of the transform; ``a`` is cropped or zero-padded to it along ``axis``
            (default ``m``).
        axis: the axis to transform (negative counts from the end).
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor of ``a``'s shape with ``n`` along ``axis``: complex64 for float16, float32
        and complex64 input, complex128 otherwise (numpy 2's dtypes).

    Raises:
        ShapeError: ``axis`` is out of range (a ValueError).
        ValueError: ``n < 1`` (or an empty axis), or an unknown ``norm``.
        DTypeError: ``n`` or ``axis`` is not an int (a TypeError).

    Example:
        >>> fnp.fft.fft(fnp.array([1.0, 2.0, 3.0, 4.0]))
        Tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex128)
        >>> fgrad.grad(lambda x: fnp.sum(fnp.abs(fnp.fft.fft(x)) ** 2))(fnp.array([1.0, 2.0]))
        Tensor([4., 8.], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    x, ax, n = _one(a, n, axis, "fft")
    return _f.fft(_resized(x, ax, n), axes=(ax,), norm=_norm(norm, "fft"), inverse=False)


@_named("ifft")
def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """One-dimensional inverse discrete Fourier transform (numpy's ``fft.ifft``).

    ``a[j] = (1/n) sum_k A[k] exp(2 pi i j k / n)`` for ``norm="backward"``; ``"ortho"``
    scales by ``1/sqrt(n)`` and ``"forward"`` by 1. ``ifft(fft(a)) == a``.

    Args:
        a: ``(..., m, ...)`` Tensor of any numeric dtype.
        n: length of the transform; ``a`` is cropped or zero-padded to it (default ``m``).
        axis: the axis to transform.
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor of ``a``'s shape with ``n`` along ``axis``, complex as :func:`fft`'s.

    Raises:
        ShapeError: ``axis`` is out of range (a ValueError).
        ValueError: ``n < 1`` or an unknown ``norm``.
        DTypeError: ``n`` or ``axis`` is not an int.

    Example:
        >>> fnp.fft.ifft(fnp.array([10.0, -2 + 2j, -2.0, -2 - 2j]))
        Tensor([1.+0.j, 2.+0.j, 3.+0.j, 4.+0.j], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    x, ax, n = _one(a, n, axis, "ifft")
    return _f.fft(_resized(x, ax, n), axes=(ax,), norm=_norm(norm, "ifft"), inverse=True)


@_named("rfft")
def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """Discrete Fourier transform of real input, non-negative frequencies only (numpy's
    ``fft.rfft``).

    The first ``n // 2 + 1`` entries of ``fft(a, n)``; the rest are their conjugates. The
    gradient is the real part of the full transform of the cotangent zero-padded to ``n``.

    Args:
        a: ``(..., m, ...)`` real Tensor (bool, integer or real floating).
        n: length of the transform; ``a`` is cropped or zero-padded to it (default ``m``).
        axis: the axis to transform.
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor of ``a``'s shape with ``n // 2 + 1`` along ``axis``: complex64 for float16
        and float32 input, complex128 otherwise.

    Raises:
        DTypeError: ``a`` is complex (use :func:`fft`), or ``n``/``axis`` is not an int.
        ShapeError: ``axis`` is out of range (a ValueError).
        ValueError: ``n < 1`` or an unknown ``norm``.

    Example:
        >>> fnp.fft.rfft(fnp.array([1.0, 2.0, 3.0, 4.0]))
        Tensor([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft (real transform).
    """
    x, ax, n = _one(a, n, axis, "rfft", real=True, complex_fn="fft")
    return _f.rfft(_resized(x, ax, n), axes=(ax,), norm=_norm(norm, "rfft"))


@_named("irfft")
def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """Inverse of :func:`rfft`: a real signal of length ``n`` from its half spectrum
    (numpy's ``fft.irfft``).

    ``a`` is cropped or zero-padded to ``n // 2 + 1`` along ``axis`` and read as the
    non-negative half of a Hermitian spectrum: the imaginary parts at frequency 0 and (for
    even ``n``) ``n / 2`` do not matter, so their gradient is 0. The gradient of the other
    entries counts each twice (it stands for itself and its mirror): JAX's convention.

    Args:
        a: ``(..., m, ...)`` Tensor, complex or real.
        n: output length along ``axis`` (default ``2 (m - 1)``; pass ``2 m - 1`` to invert
            an odd-length ``rfft``).
        axis: the axis to transform.
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``.

    Returns:
        Real Tensor of ``a``'s shape with ``n`` along ``axis``: float32 for complex64 and
        float32 input, float16 for float16, float64 otherwise.

    Raises:
        ShapeError: ``axis`` is out of range (a ValueError).
        ValueError: ``n < 1`` (``m == 1`` without ``n``) or an unknown ``norm``.
        DTypeError: ``n`` or ``axis`` is not an int.

    Example:
        >>> fnp.fft.irfft(fnp.array([10.0, -2 + 2j, -2.0]))
        Tensor([1., 2., 3., 4.], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft (real transform).
    """
    x, ax, n = _one(a, n, axis, "irfft", half=True)
    return _c2r(x, [n], [ax], _norm(norm, "irfft"))


@_named("hfft")
def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """Transform of a signal with Hermitian symmetry, given by its first half: a real
    spectrum (numpy's ``fft.hfft``).

    ``hfft(a, n) = irfft(conj(a), n)`` under the opposite ``norm``, so with the default
    ``"backward"`` it is unscaled.

    Args:
        a: ``(..., m, ...)`` Tensor, complex or real.
        n: output length along ``axis`` (default ``2 (m - 1)``).
        axis: the axis to transform.
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``.

    Returns:
        Real Tensor of ``a``'s shape with ``n`` along ``axis``, dtypes as :func:`irfft`'s.

    Raises:
        ShapeError: ``axis`` is out of range (a ValueError).
        ValueError: ``n < 1`` or an unknown ``norm``.
        DTypeError: ``n`` or ``axis`` is not an int.

    Example:
        >>> fnp.fft.hfft(fnp.array([1.0, 2.0, 3.0]))
        Tensor([ 8., -2.,  0., -2.], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft (real transform).
    """
    x, ax, n = _one(a, n, axis, "hfft", half=True)
    norm = _f.swap_norm(_norm(norm, "hfft"))
    return _c2r(_conj(x) if dtypes.is_complex(x.dtype) else x, [n], [ax], norm)


@_named("ihfft")
def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Tensor:
    """Inverse of :func:`hfft`: the half spectrum of a real signal, conjugated and scaled
    (numpy's ``fft.ihfft``).

    ``ihfft(a, n) = conj(rfft(a, n))`` under the opposite ``norm`` (so ``1/n`` by default).

    Args:
        a: ``(..., m, ...)`` real Tensor.
        n: length of the transform; ``a`` is cropped or zero-padded to it (default ``m``).
        axis: the axis to transform.
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``.

    Returns:
        Tensor of ``a``'s shape with ``n // 2 + 1`` along ``axis``, complex as
        :func:`rfft`'s.

    Raises:
        DTypeError: ``a`` is complex, or ``n``/``axis`` is not an int.
        ShapeError: ``axis`` is out of range (a ValueError).
        ValueError: ``n < 1`` or an unknown ``norm``.

    Example:
        >>> fnp.fft.ihfft(fnp.array([8.0, -2.0, 0.0, -2.0]))
        Tensor([1.-0.j, 2.-0.j, 3.-0.j], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft (real transform).
    """
    x, ax, n = _one(a, n, axis, "ihfft", real=True, complex_fn="ifft")
    norm = _f.swap_norm(_norm(norm, "ihfft"))
    return _conj(_f.rfft(_resized(x, ax, n), axes=(ax,), norm=norm))


_ND_ARGS = """a: Tensor{kind} with at least ``len(axes)`` dimensions.
        s: lengths of the transform along ``axes``; the input is cropped or zero-padded
            to each (default: the input's lengths{default}; ``-1`` takes an axis whole).
        axes: the axes to transform, each once (default: the last ``len(s)``, or all).
        norm: ``"backward"`` (default, also None), ``"ortho"`` or ``"forward"``; the scale
            is that of the 1-d transform with ``n`` the product of the lengths."""

_ND_RAISES = """ShapeError: an axis is out of range or repeated, or ``s`` is longer than
            ``a.ndim`` (ShapeError is a ValueError).
        ValueError: ``s`` and ``axes`` differ in length, a length is below 1, or an
            unknown ``norm``.
        DTypeError: ``s`` or ``axes`` holds something other than ints."""


@_named("fftn")
def fftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None) -> Tensor:
    """N-dimensional discrete Fourier transform (numpy's ``fft.fftn``).

    The 1-d :func:`fft` along each of ``axes`` (in one call of the kernel).

    Args:
        {args}

    Returns:
        Tensor of ``a``'s shape with ``s[i]`` along ``axes[i]``, complex as :func:`fft`'s
        (no axes: ``a`` itself, as numpy).

    Raises:
        {raises}

    Example:
        >>> fnp.fft.fftn(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([[10.+0.j, -2.+0.j],
                [-4.+0.j,  0.+0.j]], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _c2c(a, s, axes, norm, "fftn", False)


@_named("ifftn")
def ifftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None) -> Tensor:
    """N-dimensional inverse discrete Fourier transform (numpy's ``fft.ifftn``).

    Args:
        {args}

    Returns:
        Tensor of ``a``'s shape with ``s[i]`` along ``axes[i]``, complex as :func:`fft`'s.

    Raises:
        {raises}

    Example:
        >>> fnp.fft.ifftn(fnp.array([[10.0, -2.0], [-4.0, 0.0]])).real
        Tensor([[1., 2.],
                [3., 4.]], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _c2c(a, s, axes, norm, "ifftn", True)


@_named("rfftn")
def rfftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None) -> Tensor:
    """N-dimensional discrete Fourier transform of real input (numpy's ``fft.rfftn``).

    :func:`rfft` along the last of ``axes``, then :func:`fft` along the others.

    Args:
        {args}

    Returns:
        Tensor of ``a``'s shape with ``s[i]`` along ``axes[i]``, except ``s[-1] // 2 + 1``
        along ``axes[-1]``; complex as :func:`rfft`'s.

    Raises:
        DTypeError: ``a`` is complex (use :func:`fftn`).
        {raises}

    Example:
        >>> fnp.fft.rfftn(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
        Tensor([[10.+0.j, -2.+0.j],
                [-4.+0.j,  0.+0.j]], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _r2c(a, s, axes, norm, "rfftn", "fftn")


@_named("irfftn")
def irfftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None) -> Tensor:
    """Inverse of :func:`rfftn` (numpy's ``fft.irfftn``).

    :func:`ifft` along all of ``axes`` but the last, then :func:`irfft` along the last,
    whose output length is ``s[-1]`` (default ``2 (m - 1)``).

    Args:
        {args}

    Returns:
        Real Tensor of ``a``'s shape with ``s[i]`` along ``axes[i]``; float32 for
        complex64, float32 and float16 input, float64 otherwise (float16 over one axis
        stays float16, as numpy).

    Raises:
        {raises}

    Example:
        >>> fnp.fft.irfftn(fnp.array([[10.0, -2.0], [-4.0, 0.0]]), s=(2, 2), axes=(0, 1))
        Tensor([[1., 2.],
                [3., 4.]], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _c2r_nd(a, s, axes, norm, "irfftn")


@_named("fft2")
def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """Two-dimensional discrete Fourier transform: :func:`fftn` over ``axes`` (numpy's
    ``fft.fft2``).

    Args:
        {args}

    Returns:
        As :func:`fftn`.

    Raises:
        {raises}

    Example:
        >>> fnp.fft.fft2(fnp.ones((2, 2)))
        Tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _c2c(a, s, axes, norm, "fft2", False)


@_named("ifft2")
def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """Two-dimensional inverse discrete Fourier transform: :func:`ifftn` over ``axes``
    (numpy's ``fft.ifft2``).

    Args:
        {args}

    Returns:
        As :func:`ifftn`.

    Raises:
        {raises}

    Example:
        >>> fnp.fft.ifft2(fnp.array([[4.0, 0.0], [0.0, 0.0]]))
        Tensor([[1.+0.j, 1.+0.j],
                [1.+0.j, 1.+0.j]], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _c2c(a, s, axes, norm, "ifft2", True)


@_named("rfft2")
def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """Two-dimensional transform of real input: :func:`rfftn` over ``axes`` (numpy's
    ``fft.rfft2``).

    Args:
        {args}

    Returns:
        As :func:`rfftn`.

    Raises:
        DTypeError: ``a`` is complex (use :func:`fft2`).
        {raises}

    Example:
        >>> fnp.fft.rfft2(fnp.ones((2, 4)))
        Tensor([[8.+0.j, 0.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j, 0.+0.j]], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _r2c(a, s, axes, norm, "rfft2", "fft2")


@_named("irfft2")
def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """Inverse of :func:`rfft2`: :func:`irfftn` over ``axes`` (numpy's ``fft.irfft2``).

    Args:
        {args}

    Returns:
        As :func:`irfftn`.

    Raises:
        {raises}

    Example:
        >>> fnp.fft.irfft2(fnp.array([[8.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
        Tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is numpy's pocketfft.
    """
    return _c2r_nd(a, s, axes, norm, "irfft2")


for _fn, _kind, _default in (
    (fftn, " of any numeric dtype", ""),
    (ifftn, " of any numeric dtype", ""),
    (rfftn, ", real", ""),
    (irfftn, ", complex or real", ", and ``2 (m - 1)`` on the last axis"),
    (fft2, " of any numeric dtype", ""),
    (ifft2, " of any numeric dtype", ""),
    (rfft2, ", real", ""),
    (irfft2, ", complex or real", ", and ``2 (m - 1)`` on the last axis"),
):
    _fn.__doc__ = _fn.__doc__.format(
        args=_ND_ARGS.format(kind=_kind, default=_default), raises=_ND_RAISES
    )
    _fn.__wrapped__.__doc__ = _fn.__doc__
del _fn, _kind, _default


# ------------------------------------------------------------------------ frequencies, shifts


def _spacing(n: Any, d: Any, fn: str) -> tuple[int, Any]:
    n = _args.index(n, fn, "n")
    if n < 1:
        raise ValueError(f"{fn}: n must be >= 1 (the number of samples), got {n}")
    if isinstance(d, Tensor) or hasattr(d, "shape"):
        d = _tensor(d, fn, "d")
        if d.shape != ():
            raise ShapeError(f"{fn}: d must be a scalar, got {_args.describe(d)}")
        return n, _divide(1.0, _mul(d, n))
    d = _args.real(d, fn, "d")
    if d == 0:
        raise ValueError(f"{fn}: d (the sample spacing) must not be 0")
    return n, 1.0 / (n * d)


@_named("fftfreq")
def fftfreq(n: int, d: Any = 1.0, device: Any = None, *, dtype: Any = None) -> Tensor:
    """Sample frequencies of :func:`fft`'s output, in cycles per unit of ``d`` (numpy's
    ``fft.fftfreq``).

    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n)``.

    Args:
        n: the window length, an int ``>= 1``.
        d: sample spacing, a nonzero number or a scalar Tensor (differentiable).
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.
        dtype: a real floating dtype of the result (the Array API's keyword), or None.

    Returns:
        ``(n,)`` float64 Tensor (a floating ``d`` Tensor promotes with int64, as numpy),
        or ``dtype``.

    Raises:
        ValueError: ``n < 1``, ``d == 0``, or an unknown device.
        DTypeError: ``n`` is not an int, or ``d`` not a real number.

    Example:
        >>> fnp.fft.fftfreq(4, d=0.5)
        Tensor([ 0. ,  0.5, -1. , -0.5], dtype=float64)

    References:
        numpy's ``fft.fftfreq``.
    """
    n, scale = _spacing(n, d, "fftfreq")
    k = arange(n, device=device_arg(device, "fftfreq"))
    k = _where(_ge(k, (n - 1) // 2 + 1), _sub(k, n), k)
    return _as_frequency_dtype(_mul(k, scale), dtype, "fftfreq")


@_named("rfftfreq")
def rfftfreq(n: int, d: Any = 1.0, device: Any = None, *, dtype: Any = None) -> Tensor:
    """Sample frequencies of :func:`rfft`'s output (numpy's ``fft.rfftfreq``).

    ``[0, 1, ..., n // 2] / (d n)``.

    Args:
        n: the window length, an int ``>= 1``.
        d: sample spacing, a nonzero number or a scalar Tensor (differentiable).
        device: ``"cpu"`` (default) or ``"cuda[:N]"``.
        dtype: a real floating dtype of the result (the Array API's keyword), or None.

    Returns:
        ``(n // 2 + 1,)`` float64 Tensor, or ``dtype``.

    Raises:
        ValueError: ``n < 1``, ``d == 0``, or an unknown device.
        DTypeError: ``n`` is not an int, or ``d`` not a real number.

    Example:
        >>> fnp.fft.rfftfreq(4, d=0.5)
        Tensor([0. , 0.5, 1. ], dtype=float64)

    References:
        numpy's ``fft.rfftfreq``.
    """
    n, scale = _spacing(n, d, "rfftfreq")
    freqs = _mul(arange(n // 2 + 1, device=device_arg(device, "rfftfreq")), scale)
    return _as_frequency_dtype(freqs, dtype, "rfftfreq")


def _as_frequency_dtype(freqs: Tensor, dtype: Any, fn: str) -> Tensor:
    if dtype is None:
        return freqs
    want = _args.dtype(dtype, fn)
    if not dtypes.is_floating(want):
        raise DTypeError(f"{fn}: dtype must be a real floating dtype, got {want}")
    return _astype(freqs, dtype=want)


def _shift(x: Any, axes: Any, fn: str, sign: int) -> Tensor:
    x = _tensor(x, fn, "x")
    shape = tuple(x.shape)
    axes = list(range(len(shape))) if axes is None else _axes(axes, fn, shape)
    if not axes:
        return x
    return roll(x, tuple(sign * (shape[a] // 2) for a in axes), tuple(axes))


@_named("fftshift")
def fftshift(x: Any, axes: Any = None) -> Tensor:
    """Move the zero frequency to the centre: roll each axis by half its length (numpy's
    ``fft.fftshift``).

    Args:
        x: Tensor of any shape and dtype.
        axes: int or sequence of ints, each once (default: every axis).

    Returns:
        Tensor of ``x``'s shape and dtype.

    Raises:
        ShapeError: an axis is out of range or repeated (a ValueError).
        DTypeError: ``axes`` holds something other than ints.

    Example:
        >>> fnp.fft.fftshift(fnp.fft.fftfreq(5))
        Tensor([-0.4, -0.2,  0. ,  0.2,  0.4], dtype=float64)

    References:
        numpy's ``fft.fftshift`` (a ``roll`` by ``n // 2``).
    """
    return _shift(x, axes, "fftshift", 1)


@_named("ifftshift")
def ifftshift(x: Any, axes: Any = None) -> Tensor:
    """Inverse of :func:`fftshift`: roll each axis back by half its length (numpy's
    ``fft.ifftshift``; the two differ for odd lengths).

    Args:
        x: Tensor of any shape and dtype.
        axes: int or sequence of ints, each once (default: every axis).

    Returns:
        Tensor of ``x``'s shape and dtype.

    Raises:
        ShapeError: an axis is out of range or repeated (a ValueError).
        DTypeError: ``axes`` holds something other than ints.

    Example:
        >>> fnp.fft.ifftshift(fnp.fft.fftshift(fnp.arange(5)))
        Tensor([0, 1, 2, 3, 4], dtype=int64)

    References:
        numpy's ``fft.ifftshift`` (a ``roll`` by ``-(n // 2)``).
    """
    return _shift(x, axes, "ifftshift", -1)
