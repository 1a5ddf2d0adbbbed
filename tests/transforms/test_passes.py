"""Each graph pass on small graphs: what it removes, and that results do not change."""

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad.transforms import passes


def _ops(graph):
    return [n.op.name for n in graph.nodes]


def _same_results(g1, g2, *args):
    for a, b in zip(fgrad.tree.leaves(g1.evaluate(*args)), fgrad.tree.leaves(g2.evaluate(*args))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_dce_drops_unused_nodes():
    def f(x):
        _unused = fnp.exp(x) * 3.0
        return fnp.sin(x)

    g = fgrad.make_graph(f)(fnp.ones(3))
    assert _ops(g) == ["exp", "multiply", "sin"]
    g2 = passes.dce(g)
    assert _ops(g2) == ["sin"]
    _same_results(g, g2, fnp.array([0.1, 0.2, 0.3]))


def test_cse_merges_repeated_subexpressions():
    g = fgrad.make_graph(lambda x: fnp.sin(x) * 2.0 + fnp.sin(x) * 2.0)(fnp.ones(2))
    assert _ops(g).count("sin") == 2
    g2 = passes.cse(g)
    assert _ops(g2) == ["sin", "multiply", "add"]
    _same_results(g, g2, fnp.array([0.5, 1.5]))


def test_simplify_removes_identity_plumbing_and_fuses_transposes():
    def f(x):
        y = fnp.reshape(x, (2, 3))  # same shape: identity
        y = fnp.permute_dims(fnp.permute_dims(y, (1, 0)), (1, 0))  # transpose of transpose
        return fnp.reshape(fnp.reshape(y, (3, 2)), (6,))  # reshape of reshape

    g = fgrad.make_graph(f)(fnp.ones((2, 3)))
    g2 = passes.simplify(g)
    assert _ops(g2) == ["reshape"]
    _same_results(g, g2, fnp.reshape(fnp.arange(6.0), (2, 3)))


def test_optimize_shrinks_a_backward_graph():
    f = fgrad.grad(lambda x: fnp.sum(fnp.tanh(x) ** 2))
    g = fgrad.make_graph(f)(fnp.ones(4))
    g2 = passes.optimize(g)
    assert len(g2.nodes) <= len(g.nodes)
    _same_results(g, g2, fnp.array([0.1, -0.5, 1.0, 2.0]))


def test_cost_and_dot():
    g = fgrad.make_graph(lambda a, b: fnp.tanh(a @ b))(fnp.ones((8, 4)), fnp.ones((4, 2)))
    cost = g.cost()
    assert cost.flops == 2 * 8 * 2 * 4 + 8 * 2
    assert cost.peak_bytes == 2 * 8 * 2 * 8  # matmul output and tanh output alive together
    assert cost.op_counts == {"matmul": 1, "tanh": 1}
    dot = g.to_dot()
    assert dot.startswith("digraph fgrad {") and "matmul" in dot and dot.rstrip().endswith("}")


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit for bit: NaN payloads and signed zeros too


def test_fold_constants_evaluates_constant_subgraphs():
    # grad's seed cotangent: full_like(loss, 1) / n, reshaped and broadcast: all constant.
    f = fgrad.grad(lambda x: fnp.mean(fnp.sin(x)))
    g = fgrad.make_graph(f)(fnp.ones(5))
    assert "full_like" in _ops(g)
    g2 = passes.fold_constants(passes.simplify(g))
    assert "full_like" not in _ops(g2)
    assert "broadcast_to" not in _ops(passes.simplify(g2))
    _same_results(g, g2, fnp.array([0.1, -0.5, 1.0, 2.0, 3.0]))


def test_fold_constants_keeps_output_nodes_and_large_results():
    def f(x):
        return x + fnp.ones_like(x) * 2.0, fnp.full_like(x, 3.0) * 3.0

    g = fgrad.make_graph(f)(fnp.ones(3))
    assert _ops(g) == ["full_like", "multiply", "add", "full_like", "multiply"]
    g2 = passes.fold_constants(g)
    # ones * 2.0 folds; full * 3.0 is an output: it stays a node (a new array each call).
    assert _ops(g2) == ["add", "multiply"]
    big = fnp.ones(1 << 17)
    g3 = passes.fold_constants(fgrad.make_graph(lambda x: x + fnp.exp(fnp.zeros_like(x)))(big))
    assert _ops(g3) == ["exp", "add"]  # 131,072 elements: not folded into the graph
    _same_results(g, g2, fnp.array([1.0, 2.0, 3.0]))


def test_simplify_drops_exact_identities_only():
    x = fnp.array([-0.0, 0.0, 1.5, np.inf, np.nan])

    def f(x):
        return ((x * 1.0) / 1.0 - 0.0) + -0.0

    g = passes.simplify(fgrad.make_graph(f)(x))
    assert _ops(g) == []
    _bits_equal(g.evaluate(x), x)
    # x + 0 turns -0.0 into +0.0, and x - (-0.0) too: both stay.
    for h in (lambda x: x + 0.0, lambda x: x - (-0.0), lambda x: 0.0 + x):
        g = passes.simplify(fgrad.make_graph(h)(x))
        assert len(_ops(g)) == 1
        _bits_equal(g.evaluate(x), h(x))
    # A dtype change is not an identity: int * 1.0 is float.
    g = passes.simplify(fgrad.make_graph(lambda i: i * 1.0)(fnp.arange(3)))
    assert _ops(g) == ["multiply"]


def test_simplify_reads_through_broadcast_to():
    def f(x, y):
        return fnp.broadcast_to(y, (4, 3)) * x  # numpy broadcasts y anyway

    x, y = fnp.reshape(fnp.arange(12.0), (4, 3)), fnp.array([1.0, 2.0, 3.0])
    g = fgrad.make_graph(f)(x, y)
    g2 = passes.simplify(g)
    assert _ops(g2) == ["multiply"]
    _same_results(g, g2, x, y)
    # Where the broadcast sets the output shape it stays.
    g3 = passes.simplify(fgrad.make_graph(lambda y: fnp.broadcast_to(y, (4, 3)) * 2.0)(y))
    assert _ops(g3) == ["broadcast_to", "multiply"]


def test_simplify_shares_reshapes_of_one_value():
    def f(x):
        t = fnp.permute_dims(x, (1, 0))  # not contiguous: each reshape of it copies
        return fnp.sum(fnp.reshape(t, (2, 6))) + fnp.sum(fnp.reshape(t, (12,)))

    x = fnp.reshape(fnp.arange(12.0), (3, 4))
    g = fgrad.make_graph(f)(x)
    g2 = passes.simplify(g)
    reshapes = [n for n in g2.nodes if n.op.name == "reshape"]
    assert len(reshapes) == 2 and reshapes[1].inputs[0] is reshapes[0].outputs[0]
    _same_results(g, g2, x)


def test_cse_merges_commutative_ops_in_either_order():
    g = fgrad.make_graph(lambda x, y: x * y + y * x + (x + y) * (y + x))(fnp.ones(2), fnp.ones(2))
    g2 = passes.cse(g)
    assert _ops(g2).count("multiply") == 2 and _ops(g2).count("add") == 3
    _same_results(g, g2, fnp.array([0.5, -2.0]), fnp.array([3.0, 0.25]))
    # maximum is not merged: maximum(-0.0, 0.0) and maximum(0.0, -0.0) differ in sign.
    g3 = passes.cse(
        fgrad.make_graph(lambda x, y: fnp.maximum(x, y) - fnp.maximum(y, x))(
            fnp.ones(2), fnp.ones(2)
        )
    )
    assert _ops(g3).count("maximum") == 2


def test_concat_scatters_turns_unpacking_gradients_into_one_concatenate():
    def loss(qkv):
        q, k, v = qkv[0], qkv[1], qkv[2]
        return fnp.sum(fnp.sin(q) * k + fnp.exp(v))

    qkv = fnp.reshape(fnp.linspace(-1.0, 1.0, 24), (3, 2, 4))
    g = fgrad.make_graph(fgrad.grad(loss))(qkv)
    assert _ops(g).count("scatter_set") == 3
    g2 = passes.concat_scatters(passes.fold_constants(passes.simplify(g)))
    assert "scatter_set" not in _ops(g2) and _ops(g2).count("concatenate") == 1
    _same_results(g, g2, qkv)
    # Pieces that do not cover every index stay scatters (the rest must be zeros).
    g3 = fgrad.make_graph(fgrad.grad(lambda a: fnp.sum(fnp.sin(a[0]) + a[2])))(qkv)
    g3b = passes.concat_scatters(passes.fold_constants(passes.simplify(g3)))
    assert "concatenate" not in _ops(g3b)
    _same_results(g3, g3b, qkv)


def test_optimize_results_match_on_a_transformer_block_gradient():
    from fgrad import nn

    block = nn.TransformerBlock(8, 2, mlp_ratio=2)
    params = block.init(fgrad.random.key(0))
    x = fgrad.random.normal(fgrad.random.key(1), (2, 3, 8))
    f = fgrad.grad(lambda p, x: fnp.mean(block.apply(p, x) ** 2))
    g = fgrad.make_graph(f)(params, x)
    g2 = passes.optimize(g)
    assert len(g2.nodes) < len(g.nodes)
    for a, b in zip(
        fgrad.tree.leaves(g.evaluate(params, x)), fgrad.tree.leaves(g2.evaluate(params, x))
    ):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
