"""Discrete Fourier transform ops: a complex ``fft``, a real-to-complex ``rfft`` and a
complex-to-real ``irfft``, each over several axes at once.

Three primitives are enough for all of ``fgrad.numpy.fft``: the 1-d, 2-d and n-d functions,
``hfft``/``ihfft``, the ``n``/``s`` padding and cropping are compositions in the numpy
layer. ``norm`` is numpy's: the forward transform is scaled by 1 (``"backward"``),
``1/sqrt(N)`` (``"ortho"``) or ``1/N`` (``"forward"``), and the inverse by the opposite
factor, ``N`` being the product of the transformed lengths.

Every op is linear, so its JVP is the op applied to the tangent. Derivatives of complex
values follow JAX's convention (as the rest of fgrad): a VJP is the transpose of the JVP
under ``Re(sum(ct * t))``, without conjugation. The DFT matrix is symmetric, so

* the transpose of ``fft`` is the same ``fft`` (same direction, same ``norm``);
* the transpose of ``rfft`` (the first ``n//2 + 1`` rows of the DFT matrix) is the full
  DFT of the cotangent zero-padded to ``n``; for a real input the framework keeps its real
  part;
* ``irfft`` reads the half spectrum ``X`` as the Hermitian spectrum it stands for: entry
  ``k`` counts for itself and its mirror ``n - k`` except at 0 and at ``n/2`` (even ``n``),
  whose imaginary parts it discards. Its transpose is therefore
  ``conj(w * rfft(ct))`` with weights ``w = (1, 2, ..., 2, 1)`` (no final 1 for odd ``n``)
  and the scale of ``rfft`` under the opposite ``norm`` (JAX's ``irfft`` transpose).

References:
    J. W. Cooley and J. W. Tukey, "An algorithm for the machine calculation of complex
    Fourier series", Math. Comp. 19, 1965; the kernels are the array namespace's
    (numpy's pocketfft, cupy's cuFFT).
"""

from __future__ import annotations

import numpy as np

from fgrad import dtypes
from fgrad.core.op import LINEAR, Check, defop
from fgrad.errors import DTypeError, ShapeError
from fgrad.ops._batch import axes_batch
from fgrad.ops._rules import shape_of
from fgrad.ops.elementwise import conj, multiply
from fgrad.ops.indexing import getitem
from fgrad.ops.shape import concatenate, pad
from fgrad.tensor import ShapeDtype

__all__ = ["NORMS", "complex_dtype", "fft", "irfft", "rfft", "swap_norm"]

NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def swap_norm(norm: str) -> str:
    """The ``norm`` that gives the transposed direction the same scale factor."""
    return _SWAP[norm]


def complex_dtype(dtype) -> np.dtype:
    """numpy's ``result_type(dtype, 1j)``: complex64 for float16 and float32, complex128
    for float64, integers and bool; a complex dtype stays itself."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    if dtype in (np.float16, np.float32):
        return np.dtype(np.complex64)
    return np.dtype(np.complex128)


def _irfft_dtype(dtype, axes: tuple) -> np.dtype:
    # numpy's irfft returns result_type(real part, 1.0), which keeps float16; its irfftn
    # first runs complex transforms over the other axes, which make float16 complex64.
    dtype = np.dtype(dtype)
    if len(axes) == 1 and dtype == np.float16:
        return dtype
    return np.dtype(np.real(np.zeros((), complex_dtype(dtype))).dtype)


def _describe(x) -> str:
    return str(ShapeDtype(shape_of(x), np.dtype(dtypes.result_type(x))))


def _check(name: str, x, axes: tuple, norm: str) -> tuple:
    """The input's shape, once ``axes`` and ``norm`` are valid for it."""
    shape = shape_of(x)
    dtype = np.dtype(dtypes.result_type(x))
    if dtype.kind not in "biufc":
        raise DTypeError(f"{name}: input must be numeric, got {_describe(x)}")
    if norm not in NORMS:
        raise ValueError(f"{name}: norm must be one of {NORMS}, got {norm!r}")
    if not axes or len(set(axes)) != len(axes) or any(not 0 <= a < len(shape) for a in axes):
        raise ShapeError(
            f"{name}: axes {axes} must be distinct, non-negative and below the rank of "
            f"{_describe(x)}; fgrad.numpy.fft normalises numpy's axis arguments"
        )
    empty = [a for a in axes if shape[a] < 1]
    if empty:
        raise ShapeError(f"{name}: axis {empty[0]} of {_describe(x)} has no data points")
    return shape


def _kind(xp, x) -> str:
    """numpy's dtype kind of an array of any namespace: ``"c"``, ``"f"`` or other."""
    kind = getattr(x.dtype, "kind", None)  # numpy and cupy: an attribute read (isdtype: 4 us)
    if kind is not None:
        return kind
    if xp.isdtype(x.dtype, "complex floating"):
        return "c"
    return "f" if xp.isdtype(x.dtype, "real floating") else "i"


def _is_complex(xp, x) -> bool:
    return _kind(xp, x) == "c"


def _as_complex(xp, x):
    """``x`` in its complex dtype (the Array API's ``fftn`` takes complex input only)."""
    if _is_complex(xp, x):
        return x
    single = x.dtype in (xp.float32, getattr(xp, "float16", xp.float32))
    return xp.astype(x, xp.complex64 if single else xp.complex128)


def _guard(axes: tuple) -> None:
    """What numpy's kernels would accept silently and the shape rule refuses (a repeated
    axis is transformed twice, no axis returns the input): eagerly as under jit, the
    kernel's ValueError makes the op report the shape rule's error."""
    if not axes or len(set(axes)) != len(axes):
        raise ValueError(f"axes {axes} must be distinct and not empty")


def _taken(x, axis: int, start: int, stop: int):
    """``x`` restricted to ``[start, stop)`` along ``axis`` (a getitem op)."""
    shape = shape_of(x)
    index = tuple((0, shape[a], 1) for a in range(axis)) + ((start, stop, 1),)
    return getitem(x, index=index)


# ------------------------------------------------------------------------ fft


def _fft_aval(x, *, axes, norm, inverse):
    shape = _check("fft", x, axes, norm)
    return ShapeDtype(shape, complex_dtype(dtypes.result_type(x)))


def _fft_kernel(xp, x, *, axes, norm, inverse):
    _guard(axes)
    x = _as_complex(xp, x)
    if len(axes) == 1:  # the 1-d entry point skips fftn's argument handling (4 us)
        return (xp.fft.ifft if inverse else xp.fft.fft)(x, axis=axes[0], norm=norm)
    return (xp.fft.ifftn if inverse else xp.fft.fftn)(x, axes=axes, norm=norm)


def _complex_args(rng, shapes):
    return [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]


fft = defop(
    "fft",
    kernel=_fft_kernel,
    aval=_fft_aval,
    jvp=LINEAR,
    # The DFT matrix (and its inverse) is symmetric: the transpose is the same transform.
    vjp=(lambda ct, out, x, *, axes, norm, inverse: fft(ct, axes=axes, norm=norm, inverse=inverse),),
    batch=axes_batch,
    check=Check(
        shapes=(((2, 5),), ((3, 4, 2),)),
        params=(
            {"axes": (1,), "norm": "backward", "inverse": False},
            {"axes": (0, 1), "norm": "ortho", "inverse": True},
            {"axes": (0,), "norm": "forward", "inverse": False},
            {"axes": (0, 1), "norm": "backward", "inverse": True},
        ),
        make_args=_complex_args,
    ),
    doc="""Complex discrete Fourier transform over ``axes`` (numpy's ``fftn``/``ifftn``).

    ``out[k] = scale * sum_j x[j] exp(-+2 pi i j.k / N)`` over the multi-index of
    ``axes``, with ``-`` for the forward transform and ``+`` for ``inverse``. Linear and
    holomorphic: the VJP is the same transform of the cotangent (the DFT matrix is
    symmetric). ``fgrad.numpy.fft`` builds every complex transform from this op.

    Args:
        x: Tensor of any numeric dtype with at least ``max(axes) + 1`` dimensions.
        axes: tuple of distinct non-negative axes, each of length at least 1.
        norm: ``"backward"``, ``"ortho"`` or ``"forward"``, as numpy's.
        inverse: False for the forward transform, True for the inverse.

    Returns:
        Tensor of ``x.shape``, complex: complex64 for float16 and float32 input,
        complex128 for float64, integer and bool input, ``x.dtype`` for complex input.

    Raises:
        ShapeError: ``axes`` is empty, repeated or out of range, or an axis has length 0.
        ValueError: an unknown ``norm``.

    Example:
        >>> fnp.fft.fft(fnp.array([1.0, 2.0, 3.0, 4.0]))
        Tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is the namespace's ``fft.fftn`` (numpy's
        pocketfft).
    """,
)


# ------------------------------------------------------------------------ rfft


def _rfft_aval(x, *, axes, norm):
    shape = list(_check("rfft", x, axes, norm))
    shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    return ShapeDtype(tuple(shape), complex_dtype(dtypes.result_type(x)))


def _rfft_kernel(xp, x, *, axes, norm):
    _guard(axes)
    if _is_complex(xp, x):
        # The holomorphic extension: the non-negative-frequency half of the complex DFT.
        full = xp.fft.fftn(x, axes=axes, norm=norm)
        last = axes[-1]
        index = (slice(None),) * last + (slice(0, x.shape[last] // 2 + 1), Ellipsis)
        return full[index]
    if _kind(xp, x) != "f":  # integers and bool: numpy computes them in float64
        x = xp.astype(x, xp.float64)
    if len(axes) == 1:
        return xp.fft.rfft(x, axis=axes[0], norm=norm)
    return xp.fft.rfftn(x, axes=axes, norm=norm)


def _rfft_vjp(ct, out, x, *, axes, norm):
    # rfft keeps the first n//2 + 1 rows of the (symmetric) DFT matrix: its transpose is
    # the DFT of the cotangent padded with zeros to n. A real x keeps the real part.
    last = axes[-1]
    n, m = shape_of(x)[last], shape_of(ct)[last]
    widths = tuple((0, n - m) if a == last else (0, 0) for a in range(len(shape_of(ct))))
    padded = pad(ct, pad_width=widths, constant=0) if n > m else ct
    return fft(padded, axes=axes, norm=norm, inverse=False)


rfft = defop(
    "rfft",
    kernel=_rfft_kernel,
    aval=_rfft_aval,
    jvp=LINEAR,
    vjp=(_rfft_vjp,),
    batch=axes_batch,
    # Sampled complex: on complex input the op is the holomorphic half-spectrum DFT, so
    # the registry's bilinear checks (which compare complex values, not their real parts)
    # apply to it; tests/ops/test_fft.py checks real input against finite differences.
    check=Check(
        shapes=(((2, 5),), ((3, 4, 2),)),
        params=(
            {"axes": (1,), "norm": "backward"},
            {"axes": (0, 1), "norm": "ortho"},
            {"axes": (1, 0), "norm": "forward"},
            {"axes": (0,), "norm": "backward"},
        ),
        make_args=_complex_args,
    ),
    doc="""Real-input discrete Fourier transform over ``axes`` (numpy's ``rfftn``).

    The forward transform over ``axes``, keeping along the last of them only the
    ``n // 2 + 1`` non-negative frequencies (the others are their complex conjugates for
    real input). The derivative is the full DFT of the cotangent zero-padded to ``n``, real
    part taken for a real input. On complex input the op computes the same half of the
    complex DFT (its holomorphic extension); ``fgrad.numpy.fft.rfft`` refuses complex
    input, as numpy does.

    Args:
        x: Tensor of real (or complex) dtype with at least ``max(axes) + 1`` dimensions.
        axes: tuple of distinct non-negative axes; the real transform runs along the last.
        norm: ``"backward"``, ``"ortho"`` or ``"forward"``, as numpy's.

    Returns:
        Tensor of ``x.shape`` with ``n // 2 + 1`` along ``axes[-1]``, complex (complex64
        for float16 and float32 input, complex128 for float64, integer and bool input).

    Raises:
        ShapeError: ``axes`` is empty, repeated or out of range, or an axis has length 0.
        ValueError: an unknown ``norm``.

    Example:
        >>> fnp.fft.rfft(fnp.array([1.0, 2.0, 3.0, 4.0]))
        Tensor([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex128)

    References:
        Cooley and Tukey 1965; the kernel is the namespace's ``fft.rfftn`` (numpy's
        pocketfft).
    """,
)


# ------------------------------------------------------------------------ irfft


def _irfft_aval(x, *, axes, norm, n):
    shape = list(_check("irfft", x, axes, norm))
    last = axes[-1]
    if type(n) is not int or n < 1 or shape[last] != n // 2 + 1:
        raise ShapeError(
            f"irfft: output length n={n!r} needs n // 2 + 1 entries along axis {last} of "
            f"{_describe(x)}; pass a positive n with n // 2 + 1 = {shape[last]} (fgrad.numpy"
            ".fft.irfft pads or crops the input to it)"
        )
    shape[last] = n
    return ShapeDtype(tuple(shape), _irfft_dtype(dtypes.result_type(x), axes))


def _irfft_kernel(xp, x, *, axes, norm, n):
    _guard(axes)
    if x.shape[axes[-1]] != n // 2 + 1:  # numpy's kernel would crop or pad
        raise ValueError(f"irfft: {x.shape[axes[-1]]} entries for n={n}")
    if len(axes) > 1:
        lengths = tuple(n if a == axes[-1] else x.shape[a] for a in axes)
        return xp.fft.irfftn(_as_complex(xp, x), s=lengths, axes=axes, norm=norm)
    out = xp.fft.irfft(_as_complex(xp, x), n=n, axis=axes[0], norm=norm)
    if x.dtype == getattr(xp, "float16", None):
        out = xp.astype(out, xp.float16)  # numpy's irfft keeps float16
    return out


def _hermitian_weights(spectrum, axis: int, n: int):
    """``w * spectrum`` along ``axis``: weight 2 for entries standing for a mirrored pair
    (``1 <= k < (n + 1) // 2``), 1 at 0 and, for even ``n``, at ``n / 2``."""
    m = shape_of(spectrum)[axis]
    k = (n + 1) // 2
    parts = [_taken(spectrum, axis, 0, 1)]
    if k > 1:
        parts.append(multiply(_taken(spectrum, axis, 1, k), 2))
    if m > k:
        parts.append(_taken(spectrum, axis, k, m))
    return parts[0] if len(parts) == 1 else concatenate(*parts, axis=axis)


def _irfft_vjp(ct, out, x, *, axes, norm, n):
    # irfft(X)_j = scale * Re(sum_k w_k X_k e^{2 pi i jk/n}) (times the complex inverse
    # DFT over the other axes); under Re(sum(ct * t)) its transpose is
    # conj(w * rfft(ct)) with rfft's scale under the swapped norm.
    spectrum = rfft(ct, axes=axes, norm=swap_norm(norm))
    return conj(_hermitian_weights(spectrum, axes[-1], n))


def _irfft_params():
    return (
        {"axes": (1,), "norm": "backward", "n": 4},
        {"axes": (1,), "norm": "ortho", "n": 5},
        {"axes": (0, 1), "norm": "forward", "n": 4},
        {"axes": (0, 1), "norm": "backward", "n": 5},
    )


irfft = defop(
    "irfft",
    kernel=_irfft_kernel,
    aval=_irfft_aval,
    jvp=LINEAR,
    vjp=(_irfft_vjp,),
    batch=axes_batch,
    # Sampled real: irfft is not holomorphic (it discards imaginary parts), so the
    # registry's bilinear checks hold for real directions only; tests/ops/test_fft.py
    # differentiates complex inputs through their real and imaginary parts.
    check=Check(shapes=(((2, 3),), ((4, 3),)), params=_irfft_params),
    doc="""Inverse of :func:`rfft`: a real signal from its half spectrum (numpy's ``irfftn``).

    The inverse complex transform over ``axes`` except the last, then the complex-to-real
    transform of length ``n`` along ``axes[-1]``, reading the ``n // 2 + 1`` entries there
    as a Hermitian spectrum: the imaginary parts at frequency 0 and (for even ``n``) at
    ``n / 2`` are discarded, as numpy's pocketfft does. The derivative is
    ``conj(w * rfft(ct))`` with weights ``(1, 2, ..., 2, 1)``, JAX's ``irfft`` transpose.

    Args:
        x: Tensor of any numeric dtype, ``n // 2 + 1`` long along ``axes[-1]``.
        axes: tuple of distinct non-negative axes; the real transform runs along the last.
        norm: ``"backward"``, ``"ortho"`` or ``"forward"``, as numpy's.
        n: positive int, the output length along ``axes[-1]``.

    Returns:
        Tensor of ``x.shape`` with ``n`` along ``axes[-1]``, real: float32 for complex64
        and float32 input, float64 for complex128, float64, integer and bool input
        (float16 stays float16 over one axis and gives float32 over several, as numpy).

    Raises:
        ShapeError: ``axes`` is empty, repeated or out of range, or ``x`` is not
            ``n // 2 + 1`` long along ``axes[-1]``.
        ValueError: an unknown ``norm``.

    Example:
        >>> fnp.fft.irfft(fnp.array([10.0, -2 + 2j, -2.0]))
        Tensor([1., 2., 3., 4.], dtype=float64)

    References:
        Cooley and Tukey 1965; the kernel is the namespace's ``fft.irfftn`` (numpy's
        pocketfft); the transpose is that of JAX's ``jax.lax.fft``.
    """,
)
