"""Complex input to ops defined on real input raises, eagerly as under jit; ops with a
complex path compute the complex function."""

import numpy as np
import pytest

import fgrad
import fgrad.nn as nn
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

Z = np.array([1 + 1j, 0.5 - 2j, -0.3 + 0.2j])


@pytest.mark.parametrize(
    "name,f",
    [
        ("erf", fnp.erf),
        ("erfc", fnp.erfc),
        ("logaddexp", lambda z: fnp.logaddexp(z, 1.0)),
        ("relu", nn.relu),
        ("gelu", nn.gelu),
    ],
)
@pytest.mark.parametrize("wrap", [lambda f: f, fgrad.jit, fgrad.vmap], ids=["eager", "jit", "vmap"])
def test_issue_12_real_only_ops_refuse_complex(name, f, wrap):
    """They returned erf(|z|) and the like eagerly (nn.sigmoid even a float64 result)."""
    with pytest.raises(fgrad.DTypeError, match=name):
        wrap(f)(fnp.asarray(Z))


def test_issue_12_sigmoid_and_silu_are_holomorphic_on_complex_input():
    want = 1 / (1 + np.exp(-Z))
    for f in (nn.sigmoid, fgrad.jit(nn.sigmoid)):
        got = f(fnp.asarray(Z))
        assert got.dtype == np.complex128
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(nn.silu(fnp.asarray(Z))), Z * want, rtol=1e-14)
    # d sigmoid / dz = s (1 - s), holomorphically
    g = fgrad.grad(lambda z: nn.sigmoid(z), holomorphic=True)(fnp.asarray(Z[0]))
    np.testing.assert_allclose(complex(g), want[0] * (1 - want[0]), rtol=1e-13)
    check_grads(nn.sigmoid, (fnp.asarray(Z),), order=2, modes=("fwd", "rev"))


def test_gelu_tanh_form_takes_complex_input():
    x = fnp.asarray(Z)
    cube = Z**3
    want = 0.5 * Z * (1 + np.tanh(np.sqrt(2 / np.pi) * (Z + 0.044715 * cube)))
    np.testing.assert_allclose(np.asarray(nn.gelu(x, approximate="tanh")), want, rtol=1e-13)


def test_real_input_is_unchanged_by_the_complex_check():
    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(np.asarray(nn.sigmoid(fnp.asarray(x))), 1 / (1 + np.exp(-x)), rtol=1e-15)
    assert fnp.erf(fnp.asarray(x, dtype=np.float32)).dtype == np.float32
