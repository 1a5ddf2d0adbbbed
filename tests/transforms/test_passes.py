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
