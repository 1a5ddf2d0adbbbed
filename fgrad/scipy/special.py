"""``fgrad.scipy.special``: scipy's special functions, differentiable.

Each function takes scipy's arguments (names, order and defaults) and returns a Tensor;
``out=``, ``where=`` and the other ufunc keywords do not exist (Tensors are immutable).
The functions with kernels of their own are registry ops (``fgrad/ops/special.py``: the
gamma family, ``erfinv``/``ndtri``/``log_ndtr``, the incomplete gamma and beta functions, Hurwitz
zeta, ``i0e``/``i1e``, ``logit``, ``entr``, ``xlogy``/``xlog1py``); the others reuse
fgrad's ops: ``erf``/``erfc`` (Cody's kernels), ``expit`` (``sigmoid``), ``ndtr``
(``erfc``), ``logsumexp``, ``softmax`` and ``log_softmax`` (the fused nn ops), and
``multigammaln`` (a sum of ``gammaln``). Inputs are computed in float64 and rounded to
their own floating dtype; integers and bools give float64. Accuracy against scipy, per
function and dtype, is in ``docs/scipy.md``.

Derivatives that have no closed form raise ``NoDerivativeError`` (a ValueError) naming
the argument: ``gammainc``/``gammaincc`` in ``a``, ``betainc`` in ``a`` and ``b``, ``zeta`` in ``x``, ``polygamma`` in
``n``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fgrad import _args, dtypes
from fgrad._args import names_errors as _named
from fgrad.errors import DTypeError
from fgrad.numpy._linalg_top import _arr
from fgrad.numpy._reductions import logsumexp as _fnp_logsumexp
from fgrad.ops import elementwise as _e
from fgrad.ops import nn as _nn
from fgrad.ops import special as _s
from fgrad.ops._rules import ndim_of, norm_axes
from fgrad.ops.special import NoDerivativeError

__all__ = [
    "NoDerivativeError",
    "betainc",
    "betaln",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0e",
    "i1e",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]


def _real(x: Any, fn: str, arg: str) -> Any:
    """``x`` checked: a real Tensor, array, Python number or nested list (made a Tensor)."""
    x = _arr(x, fn, arg)
    if isinstance(x, complex) or (hasattr(x, "dtype") and dtypes.is_complex(x.dtype)):
        raise DTypeError(
            f"{fn}: {arg} must be real, got {_args.describe(x)}; scipy.special's complex "
            "versions are not provided: pass fnp.real(...) if only the real part is meant"
        )
    return x


def _doc(op) -> str:
    return op.doc


def gammaln(x: Any) -> Any:
    return _s.gammaln(_real(x, "gammaln", "x"))


def digamma(x: Any) -> Any:
    return _s.digamma(_real(x, "digamma", "x"))


def psi(x: Any) -> Any:
    return _s.digamma(_real(x, "psi", "x"))


def polygamma(n: Any, x: Any) -> Any:
    n = _real(n, "polygamma", "n")
    if not _int_like(n) or isinstance(n, bool):
        raise DTypeError(
            f"polygamma: n must be a non-negative integer (a Python int or an integer "
            f"array), got {_args.describe(n)}; pass fnp.astype(n, int) for integral floats"
        )
    if isinstance(n, int) and n < 0:
        raise ValueError(f"polygamma: n must be >= 0, got {n}")
    return _s.polygamma(n, _real(x, "polygamma", "x"))


def betaln(a: Any, b: Any) -> Any:
    return _s.betaln(_real(a, "betaln", "a"), _real(b, "betaln", "b"))


def betainc(a: Any, b: Any, x: Any) -> Any:
    return _s.betainc(_real(a, "betainc", "a"), _real(b, "betainc", "b"), _real(x, "betainc", "x"))


def gammainc(a: Any, x: Any) -> Any:
    return _s.gammainc(_real(a, "gammainc", "a"), _real(x, "gammainc", "x"))


def gammaincc(a: Any, x: Any) -> Any:
    return _s.gammaincc(_real(a, "gammaincc", "a"), _real(x, "gammaincc", "x"))


def erfinv(y: Any) -> Any:
    return _s.erfinv(_real(y, "erfinv", "y"))


def ndtri(y: Any) -> Any:
    return _s.ndtri(_real(y, "ndtri", "y"))


def log_ndtr(x: Any) -> Any:
    return _s.log_ndtr(_real(x, "log_ndtr", "x"))


def logit(x: Any) -> Any:
    return _s.logit(_real(x, "logit", "x"))


def entr(x: Any) -> Any:
    return _s.entr(_real(x, "entr", "x"))


def i0e(x: Any) -> Any:
    return _s.i0e(_real(x, "i0e", "x"))


def i1e(x: Any) -> Any:
    return _s.i1e(_real(x, "i1e", "x"))


def xlogy(x: Any, y: Any) -> Any:
    return _s.xlogy(_real(x, "xlogy", "x"), _real(y, "xlogy", "y"))


def xlog1py(x: Any, y: Any) -> Any:
    return _s.xlog1py(_real(x, "xlog1py", "x"), _real(y, "xlog1py", "y"))


for _f, _op in [
    (gammaln, _s.gammaln), (digamma, _s.digamma), (polygamma, _s.polygamma),
    (betaln, _s.betaln), (betainc, _s.betainc), (gammainc, _s.gammainc), (gammaincc, _s.gammaincc),
    (erfinv, _s.erfinv), (ndtri, _s.ndtri), (log_ndtr, _s.log_ndtr), (logit, _s.logit),
    (entr, _s.entr), (i0e, _s.i0e), (i1e, _s.i1e), (xlogy, _s.xlogy), (xlog1py, _s.xlog1py),
]:
    _f.__doc__ = _doc(_op)
psi.__doc__ = """The digamma function (scipy's alias ``psi``); see :func:`digamma`.

    Example:
        >>> from fgrad.scipy.special import psi
        >>> psi(1.0)
        Tensor(-0.57721566, dtype=float64)
    """
del _f, _op


def zeta(x: Any, q: Any = None) -> Any:
    """The Riemann zeta function (``q=None``) or the Hurwitz zeta function ``zeta(x, q)``.

    ``zeta(x, q) = sum_{k>=0} (q + k)^-x``, elementwise with broadcasting (scipy's
    ``zeta``). The Riemann function (``q`` omitted, the same as ``q=1``) is defined for
    every ``x`` (``+inf`` at the pole 1, continued analytically below it); the Hurwitz
    function for ``x > 1``, and for ``q <= 0`` only at integer ``x``. Differentiable in
    ``q`` (``-x zeta(x + 1, q)``); the derivative in ``x`` has no closed form and raises
    ``NoDerivativeError``.

    Args:
        x: Tensor, array or Python scalar, real (the exponent).
        q: None, or a Tensor, array or Python scalar, real, broadcastable with ``x``.

    Returns:
        Tensor of the broadcast shape, floating dtype of the inputs.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: complex or non-numeric input.
        NoDerivativeError: a derivative in ``x`` was asked for.

    Example:
        >>> from fgrad.scipy.special import zeta
        >>> zeta(fnp.array([2.0, -1.0, 0.5]))
        Tensor([ 1.64493407, -0.08333333, -1.46035451], dtype=float64)
        >>> fgrad.grad(zeta, argnums=1)(3.0, 2.0)
        Tensor(-0.2469697, dtype=float64)

    References:
        Euler-Maclaurin summation (Abramowitz and Stegun 23.2, DLMF 25.11.5), as Cephes'
        ``zeta.c`` arranges it; the functional equation DLMF 25.4.1 below 0.
    """
    x = _real(x, "zeta", "x")
    q = 1.0 if q is None else _real(q, "zeta", "q")
    return _s.zeta(x, q)


def erf(z: Any) -> Any:
    return _e.erf(_real(z, "erf", "z"))


def erfc(x: Any) -> Any:
    return _e.erfc(_real(x, "erfc", "x"))


erf.__doc__ = _e.erf.doc.replace(">>> fnp.erf(", ">>> fgrad.scipy.special.erf(").replace(
    "        x: Tensor", "        z: Tensor"
)
erfc.__doc__ = _e.erfc.doc.replace(">>> fnp.erfc(", ">>> fgrad.scipy.special.erfc(")


def expit(x: Any) -> Any:
    """The logistic sigmoid ``1 / (1 + exp(-x))``, the inverse of :func:`logit`.

    Elementwise (scipy's ``expit``; fgrad's ``sigmoid`` op): never overflows,
    ``expit(-1000) = 0`` and ``expit(1000) = 1``. The derivative is ``out * (1 - out)``.

    Args:
        x: Tensor, array or Python scalar, real dtype (integers and bools are promoted to
            the smallest float holding them, as numpy's).

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``, values in ``[0, 1]``.

    Raises:
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.special import expit
        >>> expit(fnp.array([-1000.0, 0.0, 2.0]))
        Tensor([0.        , 0.5       , 0.88079708], dtype=float64)

    References:
        ``exp(-|x|)`` in both branches, so nothing overflows (as scipy's ``expit``).
    """
    return _e.sigmoid(_real(x, "expit", "x"))


_INV_SQRT2 = 1 / math.sqrt(2)


@_named("ndtr")
def ndtr(x: Any) -> Any:
    """The standard normal CDF, ``ndtr(x) = erfc(-x / sqrt(2)) / 2``.

    Elementwise (scipy's ``ndtr``), accurate to full relative precision in the lower
    tail (``ndtr(-30) = 4.9e-198``); the derivative is the normal density.

    Args:
        x: Tensor, array or Python scalar, real dtype (integers and bools give float64).

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``, values in ``[0, 1]``.

    Raises:
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.special import ndtr
        >>> ndtr(fnp.array([0.0, 1.96, -30.0]))
        Tensor([5.00000000e-001, 9.75002105e-001, 4.90671393e-198], dtype=float64)

    References:
        Cody's erfc (Math. Comp. 23, 1969), the kernel of fgrad's ``erfc`` op.
    """
    x = _real(x, "ndtr", "x")
    narrow = hasattr(x, "dtype") and np.dtype(x.dtype) in (np.float16, np.float32)
    wide = _e.astype(x, dtype=np.dtype(np.float64)) if narrow else x
    # in float64 for float32 input too: the tail's relative error grows as x**2 times
    # the rounding of x / sqrt(2), which float32 would make 1e-5 at x = -13
    out = _e.multiply(0.5, _e.erfc(_e.multiply(wide, -_INV_SQRT2)))
    return _e.astype(out, dtype=np.dtype(x.dtype)) if narrow else out


def _int_axis(axis: Any, x: Any, fn: str) -> tuple:
    return norm_axes(fn, axis, ndim_of(x))


def logsumexp(
    a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False
) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis``, stable for large inputs (scipy's signature).

    As ``scipy.special.logsumexp``: a slice that is all ``-inf`` gives ``-inf`` (and a
    zero derivative); ``b`` weights the terms (a zero weight drops its element, even an
    infinite one); with ``return_sign`` the result is ``log|sum|`` and the sign, else a
    negative sum gives NaN. The derivative is ``b * exp(a - out)`` (the softmax).

    Args:
        a: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes).
        b: optional weights broadcastable to ``a``; differentiable.
        keepdims: keep reduced axes with size 1.
        return_sign: also return the sign of the sum.

    Returns:
        Tensor of the reduced shape, floating dtype of ``a``; with ``return_sign`` a pair
        ``(result, sign)``.

    Raises:
        ShapeError: an axis is out of range or repeated, or ``b`` does not broadcast.
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.special import logsumexp
        >>> logsumexp(fnp.array([[0.0, 0.0], [1000.0, -fnp.inf]]), axis=1)
        Tensor([6.93147181e-01, 1.00000000e+03], dtype=float64)
        >>> logsumexp(fnp.array([-fnp.inf, -fnp.inf]))
        Tensor(-inf, dtype=float64)
        >>> logsumexp(fnp.array([0.0, 0.0]), b=fnp.array([1.0, -3.0]), return_sign=True)
        (Tensor(0.69314718, dtype=float64), Tensor(-1., dtype=float64))

    References:
        The shifted sum ``max + log(sum(exp(a - max)))``, fgrad's ``logsumexp`` op.
    """
    a = _real(a, "logsumexp", "a")
    if b is not None:
        b = _real(b, "logsumexp", "b")
    return _fnp_logsumexp(a, axis, keepdims=keepdims, b=b, return_sign=return_sign)


def softmax(x: Any, axis: Any = None) -> Any:
    """Softmax ``exp(x) / sum(exp(x))`` over ``axis`` (scipy's default: all axes).

    Stable for large inputs (fgrad's fused ``softmax`` op); ``-inf`` entries get 0.

    Args:
        x: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes, scipy's default).

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``, summing to 1 over ``axis``.

    Raises:
        ShapeError: an axis is out of range or repeated.
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.special import softmax
        >>> softmax(fnp.array([[1.0, 1.0], [1.0, 1.0]]))
        Tensor([[0.25, 0.25],
                [0.25, 0.25]], dtype=float64)
        >>> softmax(fnp.array([[0.0, 1000.0], [1.0, 1.0]]), axis=1)
        Tensor([[0. , 1. ],
                [0.5, 0.5]], dtype=float64)

    References:
        ``exp(x - max) / sum(exp(x - max))``, as scipy's.
    """
    x = _real(x, "softmax", "x")
    x = _e.astype(x, dtype=np.dtype(np.float64)) if _int_like(x) else x
    return _nn.softmax(x, axes=_int_axis(axis, x, "softmax"))


def log_softmax(x: Any, axis: Any = None) -> Any:
    """Log-softmax ``x - logsumexp(x)`` over ``axis`` (scipy's default: all axes).

    Stable for large inputs (fgrad's fused ``log_softmax`` op).

    Args:
        x: real Tensor of any shape.
        axis: int, tuple of ints, or None (all axes, scipy's default).

    Returns:
        Tensor of ``x.shape``, floating dtype of ``x``.

    Raises:
        ShapeError: an axis is out of range or repeated.
        DTypeError: complex or non-numeric input.

    Example:
        >>> from fgrad.scipy.special import log_softmax
        >>> log_softmax(fnp.array([0.0, 1000.0]))
        Tensor([-1000.,     0.], dtype=float64)

    References:
        ``x - max - log(sum(exp(x - max)))``, as scipy's.
    """
    x = _real(x, "log_softmax", "x")
    x = _e.astype(x, dtype=np.dtype(np.float64)) if _int_like(x) else x
    return _nn.log_softmax(x, axes=_int_axis(axis, x, "log_softmax"))


def _int_like(x: Any) -> bool:
    if isinstance(x, (bool, int)):
        return True
    if isinstance(x, float):
        return False
    return np.dtype(x.dtype).kind in "biu"


@_named("multigammaln")
def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension ``d``.

    ``log Gamma_d(a) = d (d - 1) / 4 log(pi) + sum_{j=1}^{d} log Gamma(a + (1 - j) / 2)``
    (scipy's ``multigammaln``), elementwise in ``a``. scipy raises for
    ``a <= (d - 1) / 2``; here the result is NaN there (the check would need the values,
    which ``jit`` does not have). Differentiable in ``a``.

    Args:
        a: Tensor, array or Python scalar, real.
        d: positive int, the dimension.

    Returns:
        Tensor of ``a.shape``, floating dtype of ``a``.

    Raises:
        DTypeError: ``d`` is not an int, or ``a`` is complex or not numeric.
        ValueError: ``d < 1``.

    Example:
        >>> from fgrad.scipy.special import multigammaln
        >>> multigammaln(fnp.array([2.5, 4.0]), 3)
        Tensor([1.88099546, 5.40297508], dtype=float64)

    References:
        The product formula of the multivariate gamma function (A. T. James, "Distributions
        of matrix variates and latent roots derived from normal samples", Ann. Math.
        Statist. 35, 1964).
    """
    d = _args.size(d, "multigammaln", "d", minimum=1)
    a = _real(a, "multigammaln", "a")
    total = d * (d - 1) / 4 * math.log(math.pi)
    out = None
    for j in range(1, d + 1):
        term = _s.gammaln(_e.add(a, (1 - j) / 2) if j > 1 else a)
        out = term if out is None else _e.add(out, term)
    out = _e.add(out, total)
    return _e.where(_e.greater(a, (d - 1) / 2), out, math.nan)


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
