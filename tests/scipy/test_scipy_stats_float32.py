"""Python-number parameters (the defaults too) are weak in fgrad.scipy.stats: a float32
point gives a float32 result, eagerly and under jit with traced floats (a new-user trial
found logpdf(float32 x) returning float64 through log(scale) of the default scale)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy import stats

CASES = [
    ("norm.logpdf", lambda x, s: stats.norm.logpdf(x, 0.0, s)),
    ("norm.logpdf defaults", lambda x, s: stats.norm.logpdf(x)),
    ("gamma.logpdf", lambda x, s: stats.gamma.logpdf(x, 2.0, 0.0, s)),
    ("t.logpdf", lambda x, s: stats.t.logpdf(x, 3.0)),
    ("laplace.logpdf", lambda x, s: stats.laplace.logpdf(x, 0.5, s)),
    ("cauchy.logpdf", lambda x, s: stats.cauchy.logpdf(x, scale=s)),
    ("expon.logpdf", lambda x, s: stats.expon.logpdf(x, scale=s)),
    ("logistic.logpdf", lambda x, s: stats.logistic.logpdf(x, 0.0, s)),
]


@pytest.mark.parametrize("name, f", CASES, ids=[c[0] for c in CASES])
def test_float32_points_give_float32_results(name, f):
    x = fnp.asarray([0.5, 1.0, 2.0], dtype="float32")
    eager, jitted = f(x, 1.5), fgrad.jit(f)(x, 1.5)
    assert eager.dtype == jitted.dtype == np.float32
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-6)
    wide = f(x.astype("float64"), 1.5)
    np.testing.assert_allclose(np.asarray(eager), np.asarray(wide), rtol=1e-5)
