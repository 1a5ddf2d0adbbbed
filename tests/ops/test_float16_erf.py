"""erf and erfc in float16 (found through BERT's exact GELU): the rational functions of
their kernel overflowed float16 for |x| near 3.5-4.5 and gave NaN; they now compute in
float32 and round once, eagerly and under jit."""

import math

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


@pytest.mark.parametrize("name, ref", [("erf", math.erf), ("erfc", math.erfc)])
def test_float16_erf_and_erfc_are_the_rounded_values(name, ref):
    x = np.linspace(-8.0, 8.0, 2001).astype(np.float16)
    want = np.array([ref(float(v)) for v in x]).astype(np.float16)
    for fn in (getattr(fnp, name), fgrad.jit(getattr(fnp, name))):
        got = np.asarray(fn(fnp.asarray(x)))
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)


def test_exact_gelu_in_float16_has_no_nan():
    x = fnp.asarray(np.array([-4.5, -4.0, -3.5, 3.5, 4.0], dtype=np.float16))
    out = np.asarray(fgrad.nn.gelu(x, approximate=False))
    want = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in np.asarray(x, dtype=float)])
    np.testing.assert_allclose(out.astype(float), want, rtol=2e-3, atol=1e-6)
