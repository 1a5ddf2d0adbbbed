"""Kept-quantized weights: QuantizedWeight, the quantized_matmul op and linear, under every
transform, against dequantize-then-matmul; the op never dequantizes the whole matrix."""

import importlib.util
import pathlib

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import tree
from fgrad.errors import DTypeError, ShapeError
from fgrad.llm import quantized, quants
from fgrad.llm.quantized import QuantizedWeight, embedding, linear, quantized_matmul
from fgrad.ops import REGISTRY
from fgrad.test_util import check_grads, op_cases

TYPES = [t for t in quants.QUANT_TYPES.values() if t.block_size > 1]


def _weight(qtype, out_features, n_blocks, seed=0):
    t = quants.QUANT_TYPES[qtype]
    rng = np.random.default_rng(seed)
    blocks = quants.random_blocks(rng, qtype, out_features * n_blocks, scale=0.05)
    return QuantizedWeight(blocks.reshape(out_features, n_blocks, t.bytes_per_block), qtype, (out_features, n_blocks * t.block_size))


@pytest.mark.parametrize("qtype", [t.name for t in TYPES])
@pytest.mark.parametrize("x_lead", [(), (5,), (2, 3)])
def test_values_equal_dequantize_then_matmul(qtype, x_lead):
    w = _weight(qtype, 9, 2)
    dense = w.dequantize()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((*x_lead, w.shape[1])).astype(np.float32)
    got = linear(fnp.asarray(x), w)
    assert got.shape == (*x_lead, 9) and got.dtype == np.float32
    # float32 sums against float64 ones, to a bound on the size of their terms (the
    # transposed product's large terms cancel: BLAS's order of summation shows)
    d64 = dense.astype(np.float64)
    scale = np.abs(x) @ np.abs(d64).T
    np.testing.assert_array_less(np.abs(np.asarray(got) - x @ d64.T), 1e-6 * scale + 1e-30)
    ct = rng.standard_normal((*x_lead, 9)).astype(np.float32)
    back = quantized_matmul(fnp.asarray(ct), w.blocks, qtype=qtype, shape=w.shape, transpose=True)
    np.testing.assert_array_less(np.abs(np.asarray(back) - ct @ d64), 1e-6 * (np.abs(ct) @ np.abs(d64)) + 1e-30)


def test_float64_activations_compute_in_float64():
    w = _weight("Q4_1", 4, 2)
    x = np.random.default_rng(2).standard_normal((3, 64))
    got = linear(fnp.asarray(x), w)
    assert got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), x @ w.dequantize().astype(np.float64).T, rtol=1e-12)


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0", "Q6_K"])
def test_grad_and_jvp_wrt_x_against_finite_differences(qtype):
    w = _weight(qtype, 5, 1)
    x = fnp.asarray(np.random.default_rng(3).standard_normal((2, w.shape[1])))
    check_grads(lambda x: linear(x, w), (x,), order=2, modes=("rev", "fwd"))
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(linear(x, w))))(x)
    dense = w.dequantize().astype(np.float64)
    want = np.cos(np.asarray(x) @ dense.T) @ dense
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-10)


def test_vmap_over_activations_and_over_weights():
    w = _weight("Q4_1", 6, 2)
    xs = fnp.asarray(np.random.default_rng(4).standard_normal((4, 3, 64)).astype(np.float32))
    got = fgrad.vmap(lambda x: linear(x, w))(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(linear(xs, w)), rtol=1e-6)
    w2 = _weight("Q4_1", 6, 2, seed=9)
    stacked = QuantizedWeight(np.stack([w.blocks, w2.blocks]), "Q4_1", (2, 6, 64))
    both = fgrad.vmap(lambda blocks: quantized_matmul(xs[0], blocks, qtype="Q4_1", shape=(6, 64)))(
        fnp.asarray(stacked.blocks)
    )
    np.testing.assert_allclose(np.asarray(both[1]), np.asarray(linear(xs[0], w2)), rtol=1e-6)


def test_jit_takes_the_weight_as_a_traced_pytree_argument():
    w = _weight("Q4_K", 8, 1)
    x = fnp.asarray(np.random.default_rng(5).standard_normal((2, 256)).astype(np.float32))
    f = fgrad.jit(lambda x, w: linear(x, w))
    np.testing.assert_allclose(np.asarray(f(x, w)), np.asarray(linear(x, w)), rtol=1e-6)
    graph = fgrad.make_graph(lambda x, w: linear(x, w))(x, w)
    assert [n.op.name for n in graph.nodes] == ["quantized_matmul"]
    assert [str(v.aval) for v in graph.invars] == ["f32[2,256]", "u8[8,1,144]"]  # not a constant
    other = _weight("Q4_K", 8, 1, seed=1)  # same signature: no retrace, new values
    np.testing.assert_allclose(np.asarray(f(x, other)), np.asarray(linear(x, other)), rtol=1e-6)


def test_grad_of_jit():
    w = _weight("Q5_0", 4, 2)
    x = fnp.asarray(np.random.default_rng(6).standard_normal((3, 64)))
    loss = lambda x: fnp.sum(linear(x, w) ** 2)  # noqa: E731
    np.testing.assert_allclose(
        np.asarray(fgrad.grad(fgrad.jit(loss))(x)), np.asarray(fgrad.grad(loss)(x)), rtol=1e-12
    )
    np.testing.assert_allclose(
        np.asarray(fgrad.jit(fgrad.grad(loss))(x)), np.asarray(fgrad.grad(loss)(x)), rtol=1e-12
    )


@pytest.mark.parametrize("cpu_compile", [False, True])
@pytest.mark.parametrize("x_lead", [(1,), (2, 3), (40,)])  # decode rows, batch and prefill
def test_linear_many_equals_one_linear_each_under_transforms(x_lead, cpu_compile, monkeypatch):
    # One op for weights of one type; its values, gradient, tangents and batches are those
    # of one product per weight (to the bit where the compiled loop runs both).
    monkeypatch.setattr(fgrad.config, "cpu_compile", cpu_compile)
    ws = (_weight("Q4_1", 9, 2), _weight("Q4_1", 3, 2, seed=1), _weight("Q4_1", 4, 2, seed=2))
    rng = np.random.default_rng(7)
    x = fnp.asarray(rng.standard_normal((*x_lead, 64)).astype(np.float32))
    graph = fgrad.make_graph(lambda x: quantized.linear_many(x, ws))(x)
    assert [n.op.name for n in graph.nodes] == ["quantized_matmul_many"]
    got = quantized.linear_many(x, ws)
    want = tuple(linear(x, w) for w in ws)
    for g, w_ in zip(got, want):
        assert g.shape == w_.shape and g.dtype == np.float32
        np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-5, atol=1e-5)
    jitted = fgrad.jit(lambda x: quantized.linear_many(x, ws))(x)
    for g, w_ in zip(jitted, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w_))

    def loss(many):
        return lambda x: sum(fnp.sum(fnp.sin(y) * (i + 1)) for i, y in enumerate(many(x)))

    one_each = loss(lambda x: tuple(linear(x, w) for w in ws))
    together = loss(lambda x: quantized.linear_many(x, ws))
    x64 = fnp.astype(x, "float64")
    np.testing.assert_allclose(np.asarray(fgrad.grad(together)(x64)), np.asarray(fgrad.grad(one_each)(x64)), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(fgrad.jit(fgrad.grad(together))(x64)), np.asarray(fgrad.grad(one_each)(x64)), rtol=1e-12
    )
    t = fnp.ones_like(x64)
    _, tan = fgrad.jvp(together, (x64,), (t,))
    _, tan_want = fgrad.jvp(one_each, (x64,), (t,))
    np.testing.assert_allclose(float(tan), float(tan_want), rtol=1e-12)
    xs = fnp.stack([x, 2 * x])
    mapped = fgrad.vmap(lambda x: quantized.linear_many(x, ws))(xs)
    for k, w in enumerate(ws):
        np.testing.assert_allclose(np.asarray(mapped[k][1]), np.asarray(linear(2 * x, w)), rtol=1e-5, atol=1e-5)


def test_linear_many_of_other_weights_is_one_linear_each():
    x = fnp.asarray(np.random.default_rng(8).standard_normal((2, 64)).astype(np.float32))
    mixed = (_weight("Q4_1", 3, 2), _weight("Q8_0", 5, 2), fnp.ones((2, 64), dtype="float32"))
    graph = fgrad.make_graph(lambda x: quantized.linear_many(x, mixed))(x)
    assert [n.op.name for n in graph.nodes].count("quantized_matmul") == 2
    for got, w in zip(quantized.linear_many(x, mixed), mixed):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(linear(x, w)))
    narrow = (_weight("Q4_1", 3, 2), _weight("Q4_1", 3, 1))
    for run in (lambda f: f, fgrad.jit):  # the same error eagerly and while tracing
        with pytest.raises(ShapeError, match="quantized_matmul_many: x of shape \\(2, 64\\) cannot multiply a \\(3, 32\\)"):
            run(lambda x: quantized.linear_many(x, narrow))(x)
        with pytest.raises(ShapeError, match="quantized_matmul_many: shapes must be a tuple of one"):
            run(lambda x: quantized.quantized_matmul_many(x, mixed[0].blocks, qtype="Q4_1", shapes=((3, 64), (3, 64))))(x)


def test_never_dequantizes_the_whole_matrix(monkeypatch):
    """The product dequantizes chunks of rows: with a 64 KB budget, a 1024 x 256 weight
    (1 MB of float32) is dequantized 64 rows at a time, forward and backward."""
    seen = []
    real = quantized._dequantize_chunk

    def recording(xp, blocks, t):
        seen.append(blocks.shape[0])
        return real(xp, blocks, t)

    monkeypatch.setattr(quantized, "_dequantize_chunk", recording)
    monkeypatch.setattr(quantized, "CHUNK_BYTES", 64 << 10)
    w = _weight("Q4_K", 1024, 1)
    x = fnp.asarray(np.random.default_rng(7).standard_normal((2, 256)))
    y = linear(x, w)
    assert max(seen) == 64 and sum(seen) == 1024
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) @ w.dequantize().astype(np.float64).T, rtol=1e-12)
    seen.clear()
    fgrad.grad(lambda x: fnp.sum(linear(x, w)))(x)
    assert max(seen) == 64


def test_the_weight_gets_no_gradient():
    w = _weight("Q4_1", 3, 2)
    x = fnp.ones((2, 64), dtype="float32")
    with pytest.raises(TypeError, match="uint8"):
        fgrad.grad(lambda w: fnp.sum(linear(x, w)))(w)
    # Asked for explicitly, integer leaves get zero gradients, as everywhere in fgrad.
    g = fgrad.grad(lambda w: fnp.sum(linear(x, w)), allow_int=True)(w)
    assert isinstance(g, QuantizedWeight) and not np.asarray(g.blocks).any()


def test_dense_path_is_an_ordinary_matmul():
    rng = np.random.default_rng(8)
    x, w = fnp.asarray(rng.standard_normal((2, 3))), fnp.asarray(rng.standard_normal((4, 3)))
    np.testing.assert_allclose(np.asarray(linear(x, w)), np.asarray(x) @ np.asarray(w).T)
    gx, gw = fgrad.grad(lambda x, w: fnp.sum(linear(x, w) ** 2), argnums=(0, 1))(x, w)
    y = np.asarray(x) @ np.asarray(w).T
    np.testing.assert_allclose(np.asarray(gw), 2 * y.T @ np.asarray(x))
    np.testing.assert_allclose(np.asarray(gx), 2 * y @ np.asarray(w))


def test_bad_input_is_named():
    w = _weight("Q4_1", 3, 2)
    with pytest.raises(ShapeError, match="quantized_matmul: x of shape \\(2, 32\\) cannot multiply a \\(3, 64\\)"):
        linear(fnp.ones((2, 32)), w)
    with pytest.raises(ShapeError, match="quantized_matmul: x of shape"):
        fgrad.jit(lambda x: linear(x, w))(fnp.ones((2, 32)))
    with pytest.raises(DTypeError, match="quantized_matmul: x must be real floating"):
        linear(fnp.ones((2, 64), dtype="int32"), w)
    with pytest.raises(ShapeError, match="linear: x of shape \\(2, 5\\) and w of shape \\(4, 3\\)"):
        linear(fnp.ones((2, 5)), fnp.ones((4, 3)))
    with pytest.raises(ShapeError, match="must be uint8 of shape \\(3, 2, 20\\)"):
        quantized_matmul(fnp.ones((2, 64)), w.blocks[:, :1], qtype="Q4_1", shape=(3, 64))
    with pytest.raises(ValueError, match="QuantizedWeight: Q4_1 blocks of a \\(3, 64\\) weight must be uint8"):
        QuantizedWeight(np.zeros((3, 2, 18), np.uint8), "Q4_1", (3, 64))
    with pytest.raises(ValueError, match="'Q9_9' is not supported"):
        QuantizedWeight(np.zeros((3, 2, 18), np.uint8), "Q9_9", (3, 64))


def test_quantized_weight_is_one_pytree_leaf():
    w = _weight("Q8_0", 3, 2)
    leaves, treedef = tree.flatten({"w": w, "b": fnp.ones(3)})
    assert len(leaves) == 2 and any(leaf is w.blocks for leaf in leaves)
    back = tree.unflatten(treedef, leaves)["w"]
    assert isinstance(back, QuantizedWeight) and (back.qtype, back.shape) == ("Q8_0", (3, 64))
    assert (w.nbytes, w.dtype, w.ndim) == (3 * 2 * 34, np.float32, 2)
    assert repr(w) == "QuantizedWeight(Q8_0, shape=(3, 64), 204 bytes)"


def test_gpu_matches_cpu(xp):
    w = _weight("Q4_1", 8, 2)
    x = np.random.default_rng(10).standard_normal((3, 64)).astype(np.float32)
    got = quantized_matmul(xp.asarray(x), xp.asarray(w.blocks), qtype="Q4_1", shape=w.shape, transpose=False)
    got = np.asarray(got._data.get() if hasattr(got._data, "get") else got._data)
    np.testing.assert_allclose(got, x @ w.dequantize().T, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_1", "Q6_K"])
def test_embedding_dequantizes_only_the_rows_looked_up(qtype, monkeypatch):
    w = _weight(qtype, 50, 1)
    ids = np.array([[3, 49, 3], [0, 7, 1]])
    seen = []
    real = quantized._dequantize_chunk
    monkeypatch.setattr(quantized, "_dequantize_chunk", lambda xp, b, t: seen.append(b.shape[0]) or real(xp, b, t))
    got = embedding(w, fnp.asarray(ids))
    assert seen == [6] and got.shape == (2, 3, w.shape[1]) and got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), w.dequantize()[ids])
    jitted = fgrad.jit(lambda w, ids: embedding(w, ids))(w, fnp.asarray(ids))
    np.testing.assert_array_equal(np.asarray(jitted), w.dequantize()[ids])
    mapped = fgrad.vmap(lambda i: embedding(w, i))(fnp.asarray(ids))
    np.testing.assert_array_equal(np.asarray(mapped), w.dequantize()[ids])


def test_embedding_dense_path_and_errors():
    table = fnp.asarray(np.arange(6.0).reshape(3, 2))
    g = fgrad.grad(lambda t: fnp.sum(embedding(t, fnp.array([2, 2, 0]))))(table)
    np.testing.assert_array_equal(np.asarray(g), [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]])
    with pytest.raises(DTypeError, match="embedding: ids must be integers"):
        embedding(table, fnp.array([0.5]))
    with pytest.raises(DTypeError, match="quantized_take: ids must be integers"):
        embedding(_weight("Q8_0", 3, 1), fnp.array([0.5]))


# The registry-wide sweeps (tests/ops) on this op, whichever directories a run collects:
# quantized_matmul registers when fgrad.llm.quantized is imported, which a run of tests/ops
# alone does not do.


def _sweep(name):
    path = pathlib.Path(__file__).parents[1] / "ops" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_llm_sweep_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_OPS = ("quantized_matmul", "quantized_matmul_many", "quantized_take")
_CASES = [(name, *case) for name in _OPS for case in op_cases(REGISTRY[name])]


@pytest.mark.parametrize("name, shapes, params", _CASES)
def test_registry_sweep(name, shapes, params):
    _sweep("test_registry").test_op(name, shapes, params)


@pytest.mark.parametrize("name, shapes, params", _CASES)
def test_vmap_sweep(name, shapes, params):
    _sweep("test_vmap_registry").test_vmap_equals_the_per_example_loop(REGISTRY[name], shapes, params)


def test_a_quantized_weights_type_and_shape_cannot_be_reassigned():
    # They are the pytree node's static data, handed to jit as one tuple (keyed by identity).
    w = QuantizedWeight(np.zeros((3, 2, 20), np.uint8), "Q4_1", (3, 64))
    with pytest.raises(AttributeError):
        w.shape = (3, 32)
    with pytest.raises(AttributeError):
        w.qtype = "Q8_0"
    assert (w.qtype, w.shape) == ("Q4_1", (3, 64))
    leaves, treedef = fgrad.tree.flatten(w)
    assert fgrad.tree.unflatten(treedef, leaves).shape == (3, 64)
