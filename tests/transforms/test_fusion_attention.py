"""The fused attention of a few queries (a decode step's, issue 13) against the separate
ops: masks of each broadcast shape, rows with every key masked out, NaN scores attended
to or masked out, float32 and float64; what fuses (forward only, few queries) and what
keeps the separate ops (under grad, many queries, without numba)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.nn import dot_product_attention
from fgrad.transforms import fusion

pytest.importorskip("numba")

from fgrad.transforms import fusion_attention  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_backend")


def _attend(q, k, v, mask=None):
    return dot_product_attention(q, k, v, mask=mask)


def _jitted_and_separate(f, *args):
    """``f`` under jit with the compiled backend, and with ``cpu_compile`` off."""
    fused = fgrad.jit(f)(*args)
    fgrad.config.cpu_compile = False
    try:
        separate = fgrad.jit(f)(*args)
    finally:
        fgrad.config.cpu_compile = True
    return np.asarray(fused), np.asarray(separate)


def _fused_ops(f, *args):
    graph = fgrad.make_graph(f)(*args)
    return [n.op.name for n in fusion.fuse_for(graph, np).nodes]


def _inputs(dtype, lead=(2, 3), m=3, n=37, d=16, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((*lead, m, d)).astype(dtype)
    k = rng.standard_normal((*lead, n, d)).astype(dtype)
    v = rng.standard_normal((*lead, n, d + 3)).astype(dtype)
    return q, k, v


def _close(got, want, dtype):
    tol = {np.float32: 2e-6, np.float64: 1e-13}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.nanmax(np.abs(want)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("mask_shape", [None, (37,), (3, 37), (1, 1, 3, 37), (2, 1, 1, 37), (2, 3, 3, 37)])
def test_fused_attention_equals_the_separate_ops(dtype, mask_shape, log):
    q, k, v = _inputs(dtype)
    if mask_shape is None:
        args, f = (q, k, v), _attend
    else:
        mask = np.random.default_rng(1).random(mask_shape) > 0.3
        args, f = (q, k, v, mask), _attend
    assert "fused_attention" in _fused_ops(f, *args)
    got, want = _jitted_and_separate(f, *args)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape == (2, 3, 3, 19)
    _close(got, want, dtype)
    assert any("attention" in r.getMessage() and "one compiled loop" in r.getMessage() for r in log.records)


def test_rows_with_every_key_masked_out_attend_uniformly_as_before():
    q, k, v = _inputs(np.float32)
    mask = np.ones((2, 3, 3, 37), bool)
    mask[0, 1, 2] = False  # every key of one query row
    mask[1, :, :, 5:] = False
    got, want = _jitted_and_separate(_attend, q, k, v, mask)
    _close(got, want, np.float32)
    np.testing.assert_allclose(got[0, 1, 2], v[0, 1].mean(axis=0), rtol=1e-5)


def test_nan_in_an_attended_key_makes_its_rows_nan_and_a_masked_out_one_does_not():
    q, k, v = _inputs(np.float64)
    k[0, 0, 4] = np.nan
    mask = np.ones((3, 37), bool)
    mask[1, 4] = False  # query row 1 does not see the NaN key
    got, want = _jitted_and_separate(_attend, q, k, v, mask)
    assert np.isnan(got[0, 0, 0]).all() and np.isnan(got[0, 0, 2]).all()
    assert np.isfinite(got[0, 0, 1]).all() and np.isfinite(got[1]).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    _close(got, want, np.float64)


def test_under_grad_the_chain_keeps_its_separate_ops_and_gradients():
    q, k, v = _inputs(np.float64, lead=(2,))
    loss = lambda q, k, v: fnp.sum(_attend(q, k, v) ** 2)  # noqa: E731
    grad = fgrad.grad(loss, argnums=(0, 1, 2))
    assert "fused_attention" not in _fused_ops(grad, q, k, v)  # the backward reads the weights
    for got, want in zip(fgrad.jit(grad)(q, k, v), grad(q, k, v)):
        _close(np.asarray(got), np.asarray(want), np.float64)


def test_under_vmap_and_jit_the_mapped_chain_fuses():
    q, k, v = _inputs(np.float32, lead=(4,))
    f = fgrad.vmap(_attend)
    assert "fused_attention" in _fused_ops(f, q, k, v)
    got, want = _jitted_and_separate(f, q, k, v)
    _close(got, want, np.float32)


def test_many_queries_keep_blas():
    q, k, v = _inputs(np.float32, m=fusion_attention.MAX_QUERIES + 1)
    assert "fused_attention" not in _fused_ops(_attend, q, k, v)
    q, k, v = _inputs(np.float32, m=fusion_attention.MAX_QUERIES)
    assert "fused_attention" in _fused_ops(_attend, q, k, v)


def test_a_chain_whose_scores_are_read_elsewhere_does_not_fuse():
    q, k, v = _inputs(np.float32)

    def f(q, k, v):
        scores = fnp.matmul(q, fnp.swapaxes(k, -1, -2))
        return fnp.matmul(fgrad.nn.softmax(scores, axis=-1), v), scores

    assert "fused_attention" not in _fused_ops(f, q, k, v)
    assert "fused_attention" in _fused_ops(lambda q, k, v: f(q, k, v)[0], q, k, v)


def test_a_language_model_decode_step_runs_the_fused_attention():
    from fgrad.llm.config import ModelConfig
    from fgrad.llm.model import Transformer

    cfg = ModelConfig("llama", vocab_size=32, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2,
                      d_head=4, d_ff=32)
    module = Transformer(cfg)
    params = module.init(fgrad.random.key(0))
    cache = module.bind(params).new_cache(1, 8)
    _, cache = module.apply(params, fnp.asarray([[1, 2, 3]]), cache)
    step = lambda p, c, t: module.apply(p, t, c)[0]  # noqa: E731
    tokens = fnp.asarray([[4]])
    assert _fused_ops(step, params, cache, tokens).count("fused_attention") == 2
    got, want = _jitted_and_separate(step, params, cache, tokens)
    _close(got, want, np.float32)
