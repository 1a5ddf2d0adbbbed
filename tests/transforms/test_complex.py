"""Complex differentiation follows JAX's conventions; allow_int gives zero gradients."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def test_holomorphic_derivatives():
    """``grad(f, holomorphic=True)(z) == f'(z)`` (jax.grad's holomorphic mode)."""
    assert complex(fgrad.grad(lambda z: z * z, holomorphic=True)(3 + 4j)) == 6 + 8j
    z = 1 + 1j
    assert np.isclose(complex(fgrad.grad(fnp.sin, holomorphic=True)(z)), np.cos(z))
    assert np.isclose(complex(fgrad.grad(fnp.exp, holomorphic=True)(z)), np.exp(z))


def test_real_output_of_complex_input_is_conjugate_convention():
    """JAX: grad(lambda z: abs(z)**2)(3+4j) == 6-8j, i.e. df/dx - i df/dy."""
    assert np.isclose(complex(fgrad.grad(lambda z: fnp.real(z * fnp.conj(z)))(3 + 4j)), 6 - 8j)
    assert np.isclose(complex(fgrad.grad(lambda z: fnp.abs(z) ** 2)(3 + 4j)), 6 - 8j)


def test_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match="holomorphic"):
        fgrad.grad(lambda z: z * z)(1 + 1j)
    with pytest.raises(TypeError, match="complex inputs"):
        fgrad.grad(lambda x: x * x, holomorphic=True)(1.0)


def test_allow_int_gives_zero_gradients():
    gx, gn = fgrad.grad(lambda x, n: fnp.sum(x * n), argnums=(0, 1), allow_int=True)(
        fnp.array([1.0, 2.0]), fnp.array([3, 4])
    )
    np.testing.assert_array_equal(np.asarray(gx), [3.0, 4.0])
    assert gn.dtype == np.int64 and not np.asarray(gn).any()
    with pytest.raises(TypeError, match="floating or complex"):
        fgrad.grad(lambda n: fnp.sum(n * 1.0))(fnp.array([3, 4]))
