"""Kernels too long for their op's declaration in ``elementwise.py``: numerics through the
array namespace ``xp`` only, so each runs on numpy, cupy and any Array API namespace."""

from __future__ import annotations

import numpy as np

from fgrad.ops._rules import floating

def is_integral(xp, x) -> bool:
    isdtype = getattr(xp, "isdtype", None)
    if isdtype is not None:
        return bool(isdtype(x.dtype, ("integral", "bool")))
    return x.dtype.kind in "biu"


def is_complex(xp, x) -> bool:
    if isinstance(x, (bool, int, float)):
        return False
    if isinstance(x, complex):
        return True
    isdtype = getattr(xp, "isdtype", None)
    if isdtype is not None:
        return bool(isdtype(x.dtype, "complex floating"))
    return x.dtype.kind == "c"



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
    3.1611237438705656, 113.864154151050156, 377.485237685302021, 3209.37758913846947,
    0.185777706184603153
)
_ERF_B = (23.6012909523441209, 244.024637934444173, 1282.61652607737228, 2844.23683343917062)
_ERF_C = (
    0.564188496988670089, 8.88314979438837594, 66.1191906371416295, 298.635138197400131,
    881.95222124176909, 1712.04761263407058, 2051.07837782607147, 1230.33935479799725,
    2.15311535474403846e-8
)
_ERF_D = (
    15.7449261107098347, 117.693950891312499, 537.181101862009858, 1621.38957456669019,
    3290.79923573345963, 4362.61909014324716, 3439.36767414372164, 1230.33935480374942
)
_ERF_P = (
    0.305326634961232344, 0.360344899949804439, 0.125781726111229246, 0.0160837851487422766,
    6.58749161529837803e-4, 0.0163153871373020978
)
_ERF_Q = (
    2.56852019228982242, 1.87295284992346047, 0.527905102951428412, 0.0605183413124413191,
    0.00233520497626869185
)
_ERF_THRESH = 0.46875
_ERFC_XBIG = 27.3  # erfc(x) < 4.9e-324, the smallest float64 subnormal, beyond this
_INV_SQRT_PI = 0.56418958354775628695


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


def _via_float32(kernel):
    """``kernel`` computed in float32 for float16 input, rounded once at the end: CALERF's
    rational functions overflow float16 for |x| near 3.5-4.5 (their powers of x pass
    65504), which made erf and erfc NaN there."""

    def run(xp, x):
        if getattr(getattr(x, "dtype", None), "name", "") == "float16":
            cast = getattr(xp, "astype", None)
            wide = cast(x, xp.float32) if cast is not None else x.astype(xp.float32)
            out = kernel(xp, wide)
            return cast(out, xp.float16) if cast is not None else out.astype(xp.float16)
        return kernel(xp, x)

    run.__name__ = kernel.__name__
    run.__doc__ = kernel.__doc__
    return run


@_via_float32
def erf_kernel(xp, x):
    x = _as_floating(xp, x)
    y = xp.abs(x)
    small = _erf_small(xp, xp.clip(x, -_ERF_THRESH, _ERF_THRESH))
    big = (0.5 - _erfc_large(xp, y)) + 0.5
    return xp.where(y <= _ERF_THRESH, small, xp.where(x < 0, -big, big))


@_via_float32
def erfc_kernel(xp, x):
    x = _as_floating(xp, x)
    y = xp.abs(x)
    small = 1.0 - _erf_small(xp, xp.clip(x, -_ERF_THRESH, _ERF_THRESH))
    big = _erfc_large(xp, y)
    return xp.where(y <= _ERF_THRESH, small, xp.where(x < 0, 2.0 - big, big))


def sigmoid_kernel(xp, x):
    if isinstance(x, (bool, int)):
        x = float(x)
    elif not isinstance(x, (float, complex)) and is_integral(xp, x):  # numpy's promotion
        x = xp.astype(x, getattr(xp, floating(np.dtype(x.dtype)).name))
    if is_complex(xp, x):  # holomorphic: the formula itself (its poles are the maths')
        with np.errstate(over="ignore"):  # exp(-z) -> inf gives the limit 0
            return 1.0 / (1.0 + xp.exp(-x))
    # exp(-|x|) never overflows: 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, the
    # numerator exp(min(x, 0)) (the same values); a where on the sign costs 3x as much
    # on random signs (branch mispredictions: 205 vs 70 us on 8192 float32).
    return xp.exp(xp.minimum(x, 0.0)) / (1.0 + xp.exp(-xp.abs(x)))
