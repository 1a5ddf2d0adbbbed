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


def test_issue_12_vjp_refuses_cotangents_of_another_dtype():
    _, f_vjp = fgrad.vjp(fnp.sin, fnp.ones(2))
    with pytest.raises(TypeError, match="cotangent leaf 0 is c128"):
        f_vjp(fnp.array([1 + 1j, 1j]))
    with pytest.raises(TypeError, match="cotangent leaf 0 is i64"):
        f_vjp(fnp.array([1, 1]))
    with pytest.raises(TypeError, match="cotangent leaf 0 is f32.*has its output's dtype"):
        f_vjp(fnp.ones(2, dtype="float32"))
    # A Python number takes the output's dtype; a complex cotangent of a complex output is
    # what complex reverse mode needs.
    _, s_vjp = fgrad.vjp(fnp.sin, fnp.array(1.0, dtype="float32"))
    assert s_vjp(1.0)[0].dtype == np.float32
    _, c_vjp = fgrad.vjp(lambda z: z * 2.0, fnp.array([1j]))
    (cz,) = c_vjp(fnp.array([1 + 1j]))
    np.testing.assert_allclose(np.asarray(cz), [2 + 2j])


def test_issue_12_custom_rules_check_their_outputs_dtypes():
    """A bwd returning a complex cotangent for a real primal lost its imaginary part, and
    one of another precision was cast (JAX raises for both)."""
    f = fgrad.custom_vjp(lambda x: fnp.sin(x))
    f.defvjp(lambda x: (fnp.sin(x), None), lambda r, ct: (1j * ct,))
    with pytest.raises(TypeError, match="bwd's cotangent for argument 0 has dtype complex128"):
        fgrad.grad(f)(0.3)
    g = fgrad.custom_vjp(lambda x: fnp.sin(x))
    g.defvjp(lambda x: (fnp.sin(x), None), lambda r, ct: (ct.astype("float32"),))
    with pytest.raises(TypeError, match="has dtype float32 where the primal has dtype float64"):
        fgrad.grad(g)(0.3)


def test_issue_12_a_nonlinear_custom_jvp_rule_is_refused_by_reverse_mode():
    """grad transposes the rule; for t**2 or t*x + 1 that is not the derivative (it gave 0
    and 0.3 silently). Forward mode evaluates the rule as written, as JAX does."""
    sq = fgrad.custom_jvp(lambda x: fnp.sin(x))
    sq.defjvp(lambda p, t: (fnp.sin(p[0]), t[0] ** 2))
    affine = fgrad.custom_jvp(lambda x: fnp.sin(x))
    affine.defjvp(lambda p, t: (fnp.sin(p[0]), t[0] * p[0] + 1))
    for f in (sq, affine):
        with pytest.raises(TypeError, match="not linear in the tangents|not zero"):
            fgrad.grad(f)(0.3)
    assert float(fgrad.jvp(sq, (0.3,), (2.0,))[1]) == 4.0
    # Linear rules, zero tangents of untraced arguments included, are accepted.
    h = fgrad.custom_jvp(lambda x, y: x * y)
    h.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1] + p[0] * t[1]))
    assert float(fgrad.grad(lambda x: h(x, 4.0))(1.0)) == 4.0


def test_issue_12_closures_and_traced_nondiff_arguments_are_refused():
    """Staged whenever a transform runs, so a rule's closure over a differentiated value
    raises even when the arguments are constants (it silently differentiated as written)."""

    def outer(y):
        @fgrad.custom_vjp
        def h(z):
            return z * y

        h.defvjp(lambda z: (z * y, None), lambda r, ct: (10 * ct * y,))
        return h(fnp.array(0.3))

    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        fgrad.grad(outer)(fnp.array(2.0))
    powk = fgrad.custom_vjp(lambda x, k: x**k, nondiff_argnums=(1,))
    powk.defvjp(lambda x, k: (x**k, x), lambda k, x, ct: (ct * k * x ** (k - 1),))
    with pytest.raises(TypeError, match="argument 1.*nondiff_argnums but is being differentiated"):
        fgrad.grad(powk, argnums=1)(fnp.array(0.5), fnp.array(3.0))
    assert float(fgrad.grad(powk)(fnp.array(0.5), 3.0)) == 0.75


def test_custom_vjp_binds_defaults_so_bwd_sees_one_argument_list():
    @fgrad.custom_vjp
    def kw(x, scale=2.0):
        return x * scale

    kw.defvjp(lambda x, scale=2.0: (x * scale, scale), lambda s, ct: (ct * s, None))
    assert float(fgrad.grad(lambda x: kw(x))(1.0)) == 2.0
    assert float(fgrad.grad(lambda x: kw(x, scale=3.0))(1.0)) == 3.0
    with pytest.raises(TypeError, match="defvjp \\(fwd\\): expected a function"):
        kw.defvjp(1, 2)
