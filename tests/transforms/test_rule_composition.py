"""Custom rules and checkpoint under every pair and triple of transforms.

Each subject is elementwise with a known derivative *by its rule*: a custom_vjp whose
rule is 10x the true derivative of sin, a custom_jvp whose rule is 100x, and a
checkpointed sin (the true derivatives). Each transform keeps a function elementwise:
``grad`` (of the sum), ``jvp`` and ``vjp`` (along ones) move one derivative up, ``vmap``,
``jit`` and ``checkpoint`` keep the order. So every composition has a closed form, and a
rule dropped anywhere shows up as a factor of 10 or 100. Forward mode applied directly to
a custom_vjp raises, as in JAX; forward mode over reverse mode (hessian's order) works.
"""

import itertools

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


@fgrad.custom_vjp
def vjp_sin(x):
    return fnp.sin(x)


vjp_sin.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda cos_x, ct: (10.0 * ct * cos_x,))


@fgrad.custom_jvp
def jvp_sin(x):
    return fnp.sin(x)


@jvp_sin.defjvp
def _jvp_sin_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return jvp_sin(x), 100.0 * fnp.cos(x) * t


ckpt_sin = fgrad.checkpoint(lambda x: fnp.sin(x))

# Derivatives of order 0..3 by each subject's rule (rules written with ops are
# differentiated as written, so order 2 of the custom_vjp is d/dx 10 cos x).
SUBJECTS = {
    "custom_vjp": (vjp_sin, 10.0),
    "custom_jvp": (jvp_sin, 100.0),
    "checkpoint": (ckpt_sin, 1.0),
}


def _closed_form(order, scale, x):
    cycle = [np.sin, np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v)]
    return (1.0 if order == 0 else scale) * cycle[order](x)


def _grad(f):
    return fgrad.grad(lambda x: fnp.sum(f(x)))


def _jvp(f):
    return lambda x: fgrad.jvp(f, (x,), (fnp.ones_like(x),))[1]


def _vjp(f):
    return lambda x: fgrad.vjp(f, x)[1](fnp.ones_like(x))[0]


TRANSFORMS = {
    "grad": _grad,
    "jvp": _jvp,
    "vjp": _vjp,
    "vmap": fgrad.vmap,
    "jit": fgrad.jit,
    "checkpoint": fgrad.checkpoint,
}
DIFFERENTIATING = {"grad", "jvp", "vjp"}


def _chains():
    for n in (1, 2, 3):
        yield from itertools.product(sorted(TRANSFORMS), repeat=n)


@pytest.mark.parametrize("subject", sorted(SUBJECTS))
@pytest.mark.parametrize("chain", list(_chains()), ids="-".join)
def test_rule_survives_composition(subject, chain):
    """``chain`` lists transforms outermost first: ("grad", "jit") is grad(jit(f))."""
    f, scale = SUBJECTS[subject]
    fn = f
    for name in reversed(chain):
        fn = TRANSFORMS[name](fn)
    x = fnp.asarray(np.linspace(-1.3, 1.2, 12).reshape(2, 3, 2))  # room for three vmaps
    derivs = [t for t in chain if t in DIFFERENTIATING]
    if subject == "custom_vjp" and derivs and derivs[-1] == "jvp":
        # The innermost derivative is forward mode, applied to the custom_vjp itself.
        with pytest.raises(TypeError, match="custom_vjp vjp_sin: forward-mode"):
            fn(x)
        return
    want = _closed_form(len(derivs), scale, np.asarray(x))
    np.testing.assert_allclose(np.asarray(fn(x)), want, rtol=1e-12, atol=1e-14)


def test_issue_11_rules_kept_under_jit_and_vmap():
    """The reported cases: the rule was dropped under grad(jit), grad(vmap), jvp(jit)."""
    x = fnp.array(0.0)
    assert float(fgrad.grad(fgrad.jit(vjp_sin))(x)) == 10.0
    got = fgrad.grad(lambda x: fnp.sum(fgrad.vmap(vjp_sin)(x)))(fnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(got), [10.0, 10.0, 10.0])
    assert float(fgrad.grad(fgrad.jit(jvp_sin))(x)) == 100.0
    assert float(fgrad.jvp(fgrad.jit(jvp_sin), (x,), (fnp.array(1.0),))[1]) == 100.0


def test_hessian_of_custom_vjp_is_forward_over_reverse():
    """hessian (jacfwd of jacrev) differentiates the rule's backward pass as written."""
    x = fnp.array([0.3, -0.7])
    h = fgrad.hessian(lambda x: fnp.sum(vjp_sin(x)))(x)
    np.testing.assert_allclose(np.asarray(h), np.diag(-10.0 * np.sin(np.asarray(x))), rtol=1e-12)


def test_closure_over_a_differentiated_value_is_refused():
    """A rule gives no derivative for a value its function closes over: a clear error,
    not a silent zero (JAX raises too)."""

    def loss(w):
        @fgrad.custom_vjp
        def scaled(x):
            return x * w

        scaled.defvjp(lambda x: (x * w, None), lambda res, ct: (ct * w,))
        return fnp.sum(scaled(fnp.ones(2) * w))

    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        fgrad.grad(loss)(fnp.array(2.0))

    def loss_jvp(w):
        @fgrad.custom_jvp
        def scaled(x):
            return x * w

        scaled.defjvp(lambda p, t: (p[0] * w, t[0] * w))
        return fnp.sum(scaled(fnp.ones(2) * w))

    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        fgrad.grad(loss_jvp)(fnp.array(2.0))
    # Under jit or vmap alone, a closure is only an input of the node: no error.
    out = fgrad.jit(lambda w: loss(w))(fnp.array(2.0))
    assert float(out) == 8.0


def test_checkpoint_differentiates_its_closure():
    """checkpoint's rule is the function itself, so closed-over values get derivatives."""

    def loss(w):
        layer = fgrad.checkpoint(lambda x: fnp.sin(x * w))
        return fnp.sum(layer(fnp.array([1.0, 2.0])))

    w = 0.5
    want = np.cos(np.array([1.0, 2.0]) * w) @ np.array([1.0, 2.0])
    for g in (fgrad.grad(loss), fgrad.jit(fgrad.grad(loss)), fgrad.grad(fgrad.jit(loss))):
        np.testing.assert_allclose(float(g(fnp.array(w))), want, rtol=1e-12)
