"""The Array API standard's special cases of the elementwise functions, on fgrad.numpy.

The tables below are the "Special cases" sections of the standard's elementwise
functions (version 2025.12, https://data-apis.org/array-api/2025.12/), written out case
by case: signed zeros, infinities and NaN for real floating input, and, for the functions
whose complex special cases the standard states (``abs``, ``exp``, ``expm1``, ``log``,
``log1p``, ``sqrt``, ``sinh``, ``cosh``, ``tanh``, ``sign``), complex input. The standard's text is the truth here, not numpy's results
(which array_api_strict follows): where fgrad (through numpy's kernels) gives another
answer, the case is listed in ``EXPECTED_DEVIATIONS`` with the value fgrad gives, so the
test fails if either changes.

Expected values: a float, ``"+0"``/``"-0"`` (the sign of zero matters), ``"0"`` (either
sign, where the standard leaves it unspecified), ``"+inf"``/``"-inf"``/``"inf"``,
``"nan"``, a bool, or for complex results a pair of these (real part, imaginary part).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp

inf, nan, pi = math.inf, math.nan, math.pi
NEG_NAN = -abs(np.float64("nan"))  # NaN with the sign bit set

# name -> [(x, expected), ...]
UNARY = {
    "abs": [(nan, "nan"), (-0.0, "+0"), (+0.0, "+0"), (-inf, "+inf"), (inf, "+inf")],
    "acos": [(nan, "nan"), (1.5, "nan"), (-1.5, "nan"), (1.0, "+0")],
    "acosh": [(nan, "nan"), (0.5, "nan"), (-inf, "nan"), (1.0, "+0"), (inf, "+inf")],
    "asin": [(nan, "nan"), (1.5, "nan"), (-1.5, "nan"), (0.0, "+0"), (-0.0, "-0")],
    "asinh": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, "+inf"), (-inf, "-inf")],
    "atan": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, pi / 2), (-inf, -pi / 2)],
    "atanh": [(nan, "nan"), (-1.5, "nan"), (1.5, "nan"), (-1.0, "-inf"), (1.0, "+inf"),
              (0.0, "+0"), (-0.0, "-0")],
    "ceil": [(nan, "nan"), (inf, "+inf"), (-inf, "-inf"), (0.0, "+0"), (-0.0, "-0"),
             (3.0, 3.0), (-2.5, -2.0)],
    "cos": [(nan, "nan"), (0.0, 1.0), (-0.0, 1.0), (inf, "nan"), (-inf, "nan")],
    "cosh": [(nan, "nan"), (0.0, 1.0), (-0.0, 1.0), (inf, "+inf"), (-inf, "+inf")],
    "exp": [(nan, "nan"), (0.0, 1.0), (-0.0, 1.0), (inf, "+inf"), (-inf, "+0")],
    "expm1": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, "+inf"), (-inf, -1.0)],
    "floor": [(nan, "nan"), (inf, "+inf"), (-inf, "-inf"), (0.0, "+0"), (-0.0, "-0"),
              (-3.0, -3.0), (2.5, 2.0)],
    "log": [(nan, "nan"), (-1.0, "nan"), (-inf, "nan"), (0.0, "-inf"), (-0.0, "-inf"),
            (1.0, "+0"), (inf, "+inf")],
    "log1p": [(nan, "nan"), (-2.0, "nan"), (-1.0, "-inf"), (0.0, "+0"), (-0.0, "-0"),
              (inf, "+inf")],
    "log2": [(nan, "nan"), (-1.0, "nan"), (0.0, "-inf"), (-0.0, "-inf"), (1.0, "+0"),
             (inf, "+inf")],
    "log10": [(nan, "nan"), (-1.0, "nan"), (0.0, "-inf"), (-0.0, "-inf"), (1.0, "+0"),
              (inf, "+inf")],
    "reciprocal": [(nan, "nan"), (0.0, "+inf"), (-0.0, "-inf"), (inf, "+0"), (-inf, "-0")],
    "round": [(nan, "nan"), (inf, "+inf"), (-inf, "-inf"), (0.0, "+0"), (-0.0, "-0"),
              (2.5, 2.0), (-0.5, "-0"), (1.5, 2.0)],  # halves to even
    "sign": [(nan, "nan"), (-0.0, "0"), (0.0, "0"), (-2.0, -1.0), (3.0, 1.0), (-inf, -1.0)],
    "signbit": [(0.0, False), (-0.0, True), (inf, False), (-inf, True), (nan, False),
                (NEG_NAN, True), (-1.0, True)],
    "sin": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, "nan"), (-inf, "nan")],
    "sinh": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, "+inf"), (-inf, "-inf")],
    "sqrt": [(nan, "nan"), (-1.0, "nan"), (-inf, "nan"), (0.0, "+0"), (-0.0, "-0"),
             (inf, "+inf")],
    "square": [(nan, "nan"), (-0.0, "+0"), (-inf, "+inf"), (inf, "+inf")],
    "tan": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, "nan"), (-inf, "nan")],
    "tanh": [(nan, "nan"), (0.0, "+0"), (-0.0, "-0"), (inf, 1.0), (-inf, -1.0)],
    "trunc": [(nan, "nan"), (inf, "+inf"), (-inf, "-inf"), (0.0, "+0"), (-0.0, "-0"),
              (-2.5, -2.0)],
}

# name -> [(x1, x2, expected), ...]
BINARY = {
    "add": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (inf, -inf, "nan"), (-inf, inf, "nan"),
            (inf, inf, "+inf"), (-inf, -inf, "-inf"), (inf, -3.0, "+inf"), (-inf, 3.0, "-inf"),
            (3.0, inf, "+inf"), (3.0, -inf, "-inf"), (-0.0, -0.0, "-0"), (-0.0, 0.0, "+0"),
            (0.0, -0.0, "+0"), (0.0, 0.0, "+0"), (-0.0, 2.5, 2.5), (2.5, -0.0, 2.5),
            (2.5, -2.5, "+0")],
    "subtract": [(nan, 1.0, "nan"), (inf, inf, "nan"), (-inf, -inf, "nan"),
                 (inf, -inf, "+inf"), (-inf, inf, "-inf"), (-0.0, 0.0, "-0"),
                 (0.0, 0.0, "+0"), (-0.0, -0.0, "+0"), (2.5, 2.5, "+0")],
    "multiply": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (inf, 0.0, "nan"), (-0.0, inf, "nan"),
                 (inf, inf, "+inf"), (-inf, inf, "-inf"), (-inf, -2.0, "+inf"),
                 (inf, -2.0, "-inf"), (-0.0, 2.0, "-0"), (-0.0, -0.0, "+0"),
                 (0.0, -3.0, "-0")],
    "divide": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (inf, -inf, "nan"), (0.0, -0.0, "nan"),
               (0.0, 2.0, "+0"), (-0.0, 2.0, "-0"), (0.0, -2.0, "-0"), (-0.0, -2.0, "+0"),
               (2.0, 0.0, "+inf"), (2.0, -0.0, "-inf"), (-2.0, 0.0, "-inf"),
               (-2.0, -0.0, "+inf"), (inf, 2.0, "+inf"), (inf, -2.0, "-inf"),
               (-inf, 2.0, "-inf"), (-inf, -2.0, "+inf"), (2.0, inf, "+0"), (2.0, -inf, "-0"),
               (-2.0, inf, "-0"), (-2.0, -inf, "+0")],
    "pow": [(nan, 2.0, "nan"), (nan, 0.0, 1.0), (nan, -0.0, 1.0), (1.0, nan, 1.0),
            (1.0, inf, 1.0), (2.0, nan, "nan"), (2.0, inf, "+inf"), (-2.0, inf, "+inf"),
            (2.0, -inf, "+0"), (-1.0, inf, 1.0), (-1.0, -inf, 1.0), (0.5, inf, "+0"),
            (-0.5, -inf, "+inf"), (inf, 2.0, "+inf"), (inf, -2.0, "+0"), (-inf, 3.0, "-inf"),
            (-inf, 2.5, "+inf"), (-inf, -3.0, "-0"), (-inf, -2.5, "+0"), (0.0, 2.0, "+0"),
            (0.0, -2.0, "+inf"), (-0.0, 3.0, "-0"), (-0.0, 2.5, "+0"), (-0.0, -3.0, "-inf"),
            (-0.0, -2.5, "+inf"), (-2.0, 0.5, "nan")],
    "atan2": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (2.0, 0.0, pi / 2), (2.0, -0.0, pi / 2),
              (0.0, 2.0, "+0"), (0.0, 0.0, "+0"), (0.0, -0.0, pi), (0.0, -2.0, pi),
              (-0.0, 2.0, "-0"), (-0.0, 0.0, "-0"), (-0.0, -0.0, -pi), (-0.0, -2.0, -pi),
              (-2.0, 0.0, -pi / 2), (-2.0, -0.0, -pi / 2), (2.0, inf, "+0"), (2.0, -inf, pi),
              (-2.0, inf, "-0"), (-2.0, -inf, -pi), (inf, 3.0, pi / 2), (-inf, 3.0, -pi / 2),
              (inf, inf, pi / 4), (inf, -inf, 3 * pi / 4), (-inf, inf, -pi / 4),
              (-inf, -inf, -3 * pi / 4)],
    "maximum": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (nan, nan, "nan")],
    "minimum": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (nan, nan, "nan")],
    "hypot": [(inf, nan, "+inf"), (nan, -inf, "+inf"), (-inf, 2.0, "+inf"), (nan, 2.0, "nan"),
              (-0.0, -3.0, 3.0), (-3.0, 0.0, 3.0), (-0.0, -0.0, "+0")],
    "copysign": [(2.0, -1.0, -2.0), (-2.0, 0.0, 2.0), (2.0, -0.0, -2.0), (inf, -0.0, "-inf"),
                 (0.0, -1.0, "-0")],
    "logaddexp": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (inf, 2.0, "+inf"), (2.0, inf, "+inf"),
                  (inf, -inf, "+inf"), (-inf, -inf, "-inf")],
    "floor_divide": [(nan, 1.0, "nan"), (inf, -inf, "nan"), (0.0, -0.0, "nan"),
                     (0.0, 2.0, "+0"), (-0.0, 2.0, "-0"), (2.0, 0.0, "+inf"),
                     (-2.0, 0.0, "-inf"), (inf, 2.0, "+inf"), (inf, -2.0, "-inf"),
                     (-inf, 2.0, "-inf"), (2.0, inf, "+0"), (-2.0, inf, -1.0),
                     (2.0, -inf, -1.0), (-2.0, -inf, "+0"), (7.0, 2.0, 3.0), (-7.0, 2.0, -4.0)],
    "remainder": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (inf, 2.0, "nan"), (-inf, 2.0, "nan"),
                  (2.0, 0.0, "nan"), (2.0, -0.0, "nan"), (0.0, 2.0, "+0"), (-0.0, 2.0, "+0"),
                  (0.0, -2.0, "-0"), (-0.0, -2.0, "-0"), (3.0, inf, 3.0), (3.0, -inf, "-inf"),
                  (-3.0, inf, "+inf"), (-3.0, -inf, -3.0), (-7.0, 2.0, 1.0), (7.0, -2.0, -1.0)],
    "nextafter": [(nan, 1.0, "nan"), (1.0, nan, "nan"), (-0.0, 0.0, "+0"), (0.0, -0.0, "-0"),
                  (2.0, 2.0, 2.0)],
    "equal": [(nan, nan, False), (0.0, -0.0, True), (inf, inf, True), (-inf, inf, False)],
    "not_equal": [(nan, nan, True), (0.0, -0.0, False), (nan, 1.0, True)],
    "less": [(nan, 1.0, False), (-0.0, 0.0, False), (-inf, 1.0, True)],
    "greater_equal": [(nan, nan, False), (0.0, -0.0, True), (inf, inf, True)],
}

C = complex
# name -> [(z, expected (re, im) or a real spec), ...]; the standard's complex cases.
COMPLEX = {
    "abs": [(C(inf, 2.0), "+inf"), (C(-inf, nan), "+inf"), (C(nan, -inf), "+inf"),
            (C(2.0, inf), "+inf"), (C(-0.0, 0.0), "+0"), (C(nan, 2.0), "nan"),
            (C(nan, nan), "nan"), (C(3.0, -4.0), 5.0)],
    "exp": [(C(0.0, 0.0), (1.0, "+0")), (C(-0.0, 0.0), (1.0, "+0")), (C(2.0, inf), ("nan", "nan")),
            (C(2.0, nan), ("nan", "nan")), (C(inf, 0.0), ("+inf", "+0")),
            (C(-inf, 1.0), ("+0", "+0")), (C(-inf, -1.0), ("+0", "-0")),
            (C(inf, 1.0), ("+inf", "+inf")), (C(inf, -2.0), ("-inf", "-inf")),
            (C(-inf, inf), ("0", "0")), (C(inf, inf), ("inf", "nan")),
            (C(-inf, nan), ("0", "0")), (C(inf, nan), ("inf", "nan")),
            (C(nan, 0.0), ("nan", "+0")), (C(nan, 2.0), ("nan", "nan")),
            (C(nan, nan), ("nan", "nan"))],
    "log": [(C(-0.0, 0.0), ("-inf", pi)), (C(0.0, 0.0), ("-inf", "+0")),
            (C(2.0, inf), ("+inf", pi / 2)), (C(2.0, nan), ("nan", "nan")),
            (C(-inf, 2.0), ("+inf", pi)), (C(inf, 2.0), ("+inf", "+0")),
            (C(-inf, inf), ("+inf", 3 * pi / 4)), (C(inf, inf), ("+inf", pi / 4)),
            (C(inf, nan), ("+inf", "nan")), (C(-inf, nan), ("+inf", "nan")),
            (C(nan, 2.0), ("nan", "nan")), (C(nan, inf), ("+inf", "nan")),
            (C(nan, nan), ("nan", "nan"))],
    "sqrt": [(C(0.0, 0.0), ("+0", "+0")), (C(-0.0, 0.0), ("+0", "+0")),
             (C(2.0, inf), ("+inf", "+inf")), (C(nan, inf), ("+inf", "+inf")),
             (C(2.0, nan), ("nan", "nan")), (C(-inf, 2.0), ("+0", "+inf")),
             (C(inf, 2.0), ("+inf", "+0")), (C(-inf, nan), ("nan", "inf")),
             (C(inf, nan), ("+inf", "nan")), (C(nan, 2.0), ("nan", "nan")),
             (C(nan, nan), ("nan", "nan")), (C(-4.0, 0.0), ("+0", 2.0))],
    "cosh": [(C(0.0, 0.0), (1.0, "+0")), (C(0.0, inf), ("nan", "0")), (C(0.0, nan), ("nan", "0")),
             (C(2.0, inf), ("nan", "nan")), (C(2.0, nan), ("nan", "nan")),
             (C(inf, 0.0), ("+inf", "+0")), (C(inf, 1.0), ("+inf", "+inf")),
             (C(inf, 2.0), ("-inf", "+inf")), (C(inf, inf), ("inf", "nan")),
             (C(inf, nan), ("+inf", "nan")), (C(nan, 0.0), ("nan", "0")),
             (C(nan, 2.0), ("nan", "nan")), (C(nan, nan), ("nan", "nan"))],
    "sinh": [(C(0.0, 0.0), ("+0", "+0")), (C(0.0, inf), ("0", "nan")), (C(0.0, nan), ("0", "nan")),
             (C(2.0, inf), ("nan", "nan")), (C(2.0, nan), ("nan", "nan")),
             (C(inf, 0.0), ("+inf", "+0")), (C(inf, 1.0), ("+inf", "+inf")),
             (C(inf, 2.0), ("-inf", "+inf")), (C(inf, inf), ("inf", "nan")),
             (C(inf, nan), ("inf", "nan")), (C(nan, 0.0), ("nan", "+0")),
             (C(nan, 2.0), ("nan", "nan")), (C(nan, nan), ("nan", "nan"))],
    "tanh": [(C(0.0, 0.0), ("+0", "+0")), (C(2.0, inf), ("nan", "nan")),
             (C(0.0, inf), ("+0", "nan")), (C(2.0, nan), ("nan", "nan")),
             (C(0.0, nan), ("+0", "nan")), (C(inf, 1.0), (1.0, "+0")),
             (C(inf, inf), (1.0, "0")), (C(inf, nan), (1.0, "0")), (C(nan, 0.0), ("nan", "+0")),
             (C(nan, 2.0), ("nan", "nan")), (C(nan, nan), ("nan", "nan"))],
    "expm1": [(C(0.0, 0.0), ("+0", "+0")), (C(2.0, inf), ("nan", "nan")),
              (C(2.0, nan), ("nan", "nan")), (C(inf, 0.0), ("+inf", "+0")),
              (C(-inf, 2.0), (-1.0, "0")), (C(inf, 1.0), ("+inf", "+inf")),
              (C(-inf, inf), (-1.0, "0")), (C(inf, inf), ("inf", "nan")),
              (C(-inf, nan), (-1.0, "0")), (C(inf, nan), ("inf", "nan")),
              (C(nan, 0.0), ("nan", "+0")), (C(nan, 2.0), ("nan", "nan")),
              (C(nan, nan), ("nan", "nan"))],
    "log1p": [(C(-1.0, 0.0), ("-inf", "+0")), (C(2.0, inf), ("+inf", pi / 2)),
              (C(2.0, nan), ("nan", "nan")), (C(-inf, 2.0), ("+inf", pi)),
              (C(inf, 2.0), ("+inf", "+0")), (C(-inf, inf), ("+inf", 3 * pi / 4)),
              (C(inf, inf), ("+inf", pi / 4)), (C(inf, nan), ("+inf", "nan")),
              (C(-inf, nan), ("+inf", "nan")), (C(nan, 2.0), ("nan", "nan")),
              (C(nan, inf), ("+inf", "nan")), (C(nan, nan), ("nan", "nan"))],
    "sign": [(C(0.0, 0.0), ("0", "0")), (C(-0.0, -0.0), ("0", "0")), (C(nan, 1.0), ("nan", "nan")),
             (C(1.0, nan), ("nan", "nan")), (C(3.0, -4.0), (0.6, -0.8))],
}

# (name, inputs) -> what fgrad gives instead of the standard's value. numpy's floor_divide
# computes floor(x1 / x2) through fmod, which is NaN for an infinite x1 (numpy and JAX give
# NaN; the standard says the infinity, as floor(inf / 2) is).
EXPECTED_DEVIATIONS: dict[tuple, object] = {
    ("floor_divide", "inf", "2.0"): "nan",
    ("floor_divide", "inf", "-2.0"): "nan",
    ("floor_divide", "-inf", "2.0"): "nan",
    # numpy's complex expm1 computes with the infinities' products (inf * 0, inf - inf) that
    # the standard's cases (C99's cexp, less 1) avoid; JAX shares two of these.
    ("expm1", "complex(inf, 0.0)"): ("+inf", "nan"),
    ("expm1", "complex(-inf, inf)"): ("nan", "nan"),
    ("expm1", "complex(inf, inf)"): ("nan", "nan"),
    ("expm1", "complex(-inf, nan)"): ("nan", "nan"),
    ("expm1", "complex(inf, nan)"): ("nan", "nan"),
    ("expm1", "complex(nan, 0.0)"): ("nan", "nan"),
}


def _matches(got, spec) -> bool:
    if isinstance(spec, tuple):
        return _matches(got.real, spec[0]) and _matches(got.imag, spec[1])
    if isinstance(spec, bool):
        return bool(got) is spec
    got = float(got)
    if spec == "nan":
        return math.isnan(got)
    if spec in ("+0", "-0", "0"):
        return got == 0 and (spec == "0" or math.copysign(1.0, got) == (1.0 if spec == "+0" else -1.0))
    if spec in ("+inf", "-inf", "inf"):
        return math.isinf(got) and (spec == "inf" or (got > 0) == (spec == "+inf"))
    return math.isclose(got, spec, rel_tol=4e-16, abs_tol=0.0)


def _text(value) -> str:
    if isinstance(value, complex):
        return f"complex({_text(value.real)}, {_text(value.imag)})"
    if isinstance(value, float) and value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if isinstance(value, float) and math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return repr(value)


def _check(name, cases, call):
    failures = []
    for case in cases:
        *args, expected = case
        key = (name, *map(_text, args))
        with np.errstate(all="ignore"):
            got = call(*args)
        ok = _matches(got, expected)
        deviation = EXPECTED_DEVIATIONS.get(key)
        if deviation is not None:
            if ok or not _matches(got, deviation):
                failures.append(f"{key}: expected deviation {deviation!r}, got {got!r}")
        elif not ok:
            failures.append(f"{name}({', '.join(map(_text, args))}) = {got!r}, the standard: {expected!r}")
    return failures


def _unary(name):
    fn = getattr(fnp, name)
    return lambda x: fn(fnp.asarray(x)).item()


def _binary(name):
    fn = getattr(fnp, name)
    return lambda x1, x2: fn(fnp.asarray(x1), fnp.asarray(x2)).item()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_real(name):
    assert not _check(name, UNARY[name], _unary(name))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_real(name):
    assert not _check(name, BINARY[name], _binary(name))


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex(name):
    assert not _check(name, COMPLEX[name], _unary(name))


def test_float32_and_jit_give_the_same_special_values():
    # The special cases hold in float32 too, and under jit (the same kernels on arrays).
    cases = [(name, x, e) for name in ("exp", "log", "sqrt", "atanh", "expm1", "tanh")
             for x, e in UNARY[name]]
    failures = []
    for name, x, expected in cases:
        fn = getattr(fnp, name)
        with np.errstate(all="ignore"):
            for got in (fn(fnp.asarray(x, dtype="float32")), fgrad.jit(fn)(fnp.asarray(x))):
                if not _matches(got.item(), expected):
                    failures.append((name, x, got, expected))
    with np.errstate(all="ignore"):
        for name, cases_ in (("divide", BINARY["divide"]), ("atan2", BINARY["atan2"])):
            fn = fgrad.jit(getattr(fnp, name))
            for x1, x2, expected in cases_:
                got = fn(fnp.asarray(x1), fnp.asarray(x2)).item()
                if not _matches(got, expected):
                    failures.append((name, x1, x2, got, expected))
    assert not failures, failures


def test_the_matcher_tells_signed_zeros_apart():
    assert _matches(-0.0, "-0") and not _matches(0.0, "-0") and _matches(-0.0, "0")
    assert not _matches(1.0, "nan") and _matches(-inf, "inf") and not _matches(-inf, "+inf")
    assert _matches(complex(0.0, -0.0), ("+0", "-0")) and not _matches(complex(0.0, 0.0), ("+0", "-0"))
