"""Forward and reverse mode refuse what they cannot honour, as JAX does, instead of
returning zeros, casting, or dropping an imaginary part."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def test_issue_12_jvp_refuses_integer_primals():
    """It returned zero tangents where grad, jacfwd and hvp raise."""
    with pytest.raises(TypeError, match="jvp: primal leaf 0 is i64.*no tangent"):
        fgrad.jvp(lambda n: n * 2.0, (fnp.array([1, 2]),), (fnp.array([1, 1]),))
    with pytest.raises(TypeError, match="jvp: primal leaf 1"):
        fgrad.jvp(lambda x, n: x * n, (fnp.ones(2), 3), (fnp.ones(2), 0))


def test_issue_12_jvp_refuses_a_tangent_of_another_dtype():
    x32 = fnp.ones(2, dtype="float32")
    with pytest.raises(TypeError, match="jvp: tangent leaf 0 is f64.*primal is f32"):
        fgrad.jvp(fnp.sin, (x32,), (fnp.ones(2),))
    # A Python number takes the primal's dtype, as a weakly typed value does in JAX.
    _, t = fgrad.jvp(lambda x: x * 3.0, (fnp.array(1.0, dtype="float32"),), (1.0,))
    assert t.dtype == np.float32 and float(t) == 3.0


def test_issue_12_jacfwd_of_a_custom_vjp_raises():
    f = fgrad.custom_vjp(lambda x: fnp.sin(x))
    f.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda c, ct: (10.0 * ct * c,))
    with pytest.raises(TypeError, match="forward-mode"):
        fgrad.jacfwd(f)(fnp.ones(2))
    np.testing.assert_allclose(np.asarray(fgrad.jacrev(f)(fnp.zeros(2))), 10.0 * np.eye(2))


def test_issue_12_vjp_refuses_complex_and_integer_cotangents_of_real_outputs():
    _, f_vjp = fgrad.vjp(fnp.sin, fnp.ones(2))
    with pytest.raises(TypeError, match="cotangent leaf 0 is c128"):
        f_vjp(fnp.array([1 + 1j, 1j]))
    with pytest.raises(TypeError, match="cotangent leaf 0 is i64"):
        f_vjp(fnp.array([1, 1]))
    # Precision may differ (the cotangent is cast to the output's dtype), and a complex
    # cotangent of a complex output is what holomorphic and complex reverse mode need.
    (ct,) = f_vjp(fnp.ones(2, dtype="float32"))
    assert ct.dtype == np.float64
    _, c_vjp = fgrad.vjp(lambda z: z * 2.0, fnp.array([1j]))
    (cz,) = c_vjp(fnp.array([1 + 1j]))
    np.testing.assert_allclose(np.asarray(cz), [2 + 2j])
