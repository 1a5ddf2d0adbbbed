"""custom_vjp, custom_jvp and checkpoint: values, derivatives, nesting."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from fgrad.transforms.passes import inline_rules


def _f(x):
    return fnp.tanh(fnp.sin(x) * x)


def test_checkpoint_matches_plain_gradients_to_third_order():
    g = fgrad.checkpoint(_f)
    x = fnp.array([0.3, -1.1, 2.0])
    for order_fn_plain, order_fn_ckpt in [
        (lambda x: fnp.sum(_f(_f(x))), lambda x: fnp.sum(g(g(x)))),
    ]:
        d_plain, d_ckpt = order_fn_plain, order_fn_ckpt
        for _ in range(3):
            d_plain = fgrad.grad(lambda x, d=d_plain: fnp.sum(d(x)))
            d_ckpt = fgrad.grad(lambda x, d=d_ckpt: fnp.sum(d(x)))
            np.testing.assert_allclose(np.asarray(d_ckpt(x)), np.asarray(d_plain(x)), rtol=1e-12)


def test_checkpoint_records_one_node_per_call():
    """Only inputs and outputs are kept: the reverse trace holds one node per checkpoint."""
    from fgrad.transforms import ad

    seen = []
    real_backward = ad._backward

    def spy(seeds):
        seen.append(len(ad._toposort([n for n, _, _ in seeds])))
        return real_backward(seeds)

    ad._backward = spy
    try:
        deep = fgrad.checkpoint(lambda x: fnp.tanh(fnp.tanh(fnp.tanh(fnp.tanh(x)))))
        fgrad.grad(lambda x: fnp.sum(deep(x)))(fnp.ones(3))
        fgrad.grad(lambda x: fnp.sum(fnp.tanh(fnp.tanh(fnp.tanh(fnp.tanh(x))))))(fnp.ones(3))
    finally:
        ad._backward = real_backward
    # outer pass: sum, checkpoint node, leaf = 3 nodes; plain: sum, 4 tanh, leaf = 6 nodes.
    assert seen[0] == 3 and seen[-1] == 6


def test_custom_vjp_uses_the_rule_and_nests():
    @fgrad.custom_vjp
    def f(x, y):
        return fnp.sin(x) * y

    def fwd(x, y):
        return f(x, y), (x, y)

    def bwd(res, ct):
        x, y = res
        return ct * fnp.cos(x) * y, ct * fnp.sin(x)

    f.defvjp(fwd, bwd)
    x, y = fnp.array([0.4, 1.3]), fnp.array([2.0, -1.0])
    check_grads(f, (x, y), order=2, modes=("rev",))
    # Forward mode has no rule to apply: it raises, as JAX does (it used to differentiate
    # f as written, silently ignoring the rule).
    with pytest.raises(TypeError, match="custom_vjp f: forward-mode"):
        fgrad.jvp(f, (x, y), (x, y))


def test_custom_vjp_rule_is_really_used():
    @fgrad.custom_vjp
    def scaled_identity(x):
        return x

    scaled_identity.defvjp(lambda x: (x, None), lambda res, ct: (3.0 * ct,))
    assert float(fgrad.grad(scaled_identity)(1.0)) == 3.0


def test_custom_vjp_nondiff_argnums_and_errors():
    def g(n, x):
        return x**n if hasattr(fnp, "power") else x * x

    f = fgrad.custom_vjp(lambda n, x: x * x, nondiff_argnums=(0,))
    f.defvjp(lambda n, x: (x * x, x), lambda n, res, ct: (2.0 * res * ct,))
    assert float(fgrad.grad(f, argnums=1)(2, 3.0)) == 6.0
    bad = fgrad.custom_vjp(lambda x: x)
    with pytest.raises(TypeError, match="defvjp"):
        bad(1.0)
    bad.defvjp(lambda x: (x, None), lambda res, ct: (ct, ct))
    with pytest.raises(TypeError, match="1 cotangents"):
        fgrad.grad(bad)(1.0)
    del g


def test_custom_jvp_forward_reverse_and_second_order():
    @fgrad.custom_jvp
    def f(x):
        return fnp.sin(x) * x

    @f.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * (fnp.cos(x) * x + fnp.sin(x))

    x = fnp.array([0.2, 0.9, -1.4])
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_custom_jvp_rule_is_really_used():
    @fgrad.custom_jvp
    def f(x):
        return x

    f.defjvp(lambda p, t: (p[0], 5.0 * t[0]))
    assert float(fgrad.grad(f)(1.0)) == 5.0
    assert float(fgrad.jvp(f, (1.0,), (1.0,))[1]) == 5.0


def test_issue_3_rules_returning_wrong_shapes_are_named():
    """A custom rule's wrong-shaped output names the rule and both shapes (was summed silently)."""
    @fgrad.custom_vjp
    def f(x):
        return 2.0 * x

    f.defvjp(lambda x: (2.0 * x, None), lambda res, ct: (fnp.ones(3),))
    with pytest.raises(fgrad.ShapeError, match=r"custom_vjp f: bwd's cotangent.*\(3,\).*\(\)"):
        fgrad.grad(f)(2.0)

    @fgrad.custom_jvp
    def g(x):
        return 2.0 * x

    g.defjvp(lambda p, t: (2.0 * p[0], fnp.ones(2)))
    with pytest.raises(fgrad.ShapeError, match="custom_jvp g"):
        fgrad.jvp(g, (fnp.ones(3),), (fnp.ones(3),))


def _count(graph, name):
    """Nodes of op ``name`` in ``graph`` and in the sub-graphs its nodes hold."""
    total = 0
    for node in graph.nodes:
        total += node.op.name == name
        for value in node.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "graph") and hasattr(sub, "in_avals"):
                    total += _count(sub.graph, name)
    return total


def test_checkpoint_recomputes_under_jit():
    """CSE must not merge the backward recomputation into the forward pass (barrier)."""
    w = fnp.asarray(np.random.default_rng(0).standard_normal((16, 16)) * 0.2)

    def make(layer):
        def f(x):
            for _ in range(6):
                x = layer(x)
            return fnp.sum(x)

        return f

    plain = lambda x: fnp.tanh(x @ w)  # noqa: E731
    x = fnp.ones((4, 16))
    g_plain = fgrad.jit(fgrad.grad(make(plain)))
    g_ckpt = fgrad.jit(fgrad.grad(make(fgrad.checkpoint(plain))))
    # Plain: 6 forward tanh. Checkpointed: each layer again on the way back (6), and the
    # forward pass keeps 5 (the last layer's forward output feeds only the unreturned loss).
    # Reverse mode runs a checkpoint's forward pass op by op, so no checkpoint node stays.
    graph = g_ckpt.graph(x)
    assert _count(g_plain.graph(x), "tanh") == 6 and _count(graph, "tanh") == 11
    assert _count(graph, "checkpoint") == 0
    np.testing.assert_allclose(np.asarray(g_ckpt(x)), np.asarray(g_plain(x)), rtol=1e-12)


def test_jit_program_inlines_rule_nodes():
    """Undifferentiated, a rule node runs its function; the program jit compiles has the
    function's nodes (which fuse and share buffers), the replayed graph keeps the rule."""
    layer = fgrad.checkpoint(lambda x: fnp.tanh(fnp.sin(x)))
    f = fgrad.jit(lambda x: layer(layer(x)))
    x = fnp.ones(3)
    graph = f.graph(x)
    assert [n.op.name for n in graph.nodes] == ["checkpoint", "checkpoint"]
    inlined = inline_rules(graph)
    assert [n.op.name for n in inlined.nodes] == ["sin", "tanh", "sin", "tanh"]
    np.testing.assert_allclose(np.asarray(f(x)), np.tanh(np.sin(np.tanh(np.sin(1.0)))) * np.ones(3))


def test_issue_4_keyword_arguments_reach_wrapped_functions():
    def f(x, s=1.0, mode="scale"):
        return x * s if mode == "scale" else x

    c = fgrad.checkpoint(f)
    assert float(c(fnp.array(2.0), s=3.0)) == 6.0
    assert float(fgrad.grad(lambda x: c(x, s=3.0, mode="scale"))(2.0)) == 3.0
    assert float(fgrad.jit(fgrad.grad(lambda x: c(x, s=3.0)))(fnp.array(2.0))) == 3.0

    @fgrad.custom_vjp
    def g(x, y=2.0):
        return x * y

    g.defvjp(lambda x, y=2.0: (x * y, (x, y)), lambda res, ct: (ct * res[1], ct * res[0]))
    assert float(fgrad.grad(lambda x: g(x, y=5.0))(1.0)) == 5.0

    @fgrad.custom_jvp
    def h(x, y=2.0):
        return x * y

    h.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1] + p[0] * t[1]))
    assert float(fgrad.grad(lambda x: h(x, y=4.0))(1.0)) == 4.0
