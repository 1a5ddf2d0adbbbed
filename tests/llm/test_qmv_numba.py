"""Kept-quantized products read straight from the packed Q4_1 / Q8_0 blocks (numba): the
same values as dequantize-then-matmul to float32 rounding, used for few rows only."""

import numpy as np
import pytest

import fgrad
from fgrad.llm import _qmv_numba, quants
from fgrad.llm import quantized as q

pytest.importorskip("numba")


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("rows", [1, 3])
def test_the_block_product_equals_dequantize_then_matmul(qtype, rows, monkeypatch):
    rng = np.random.default_rng(1)
    out_f, in_f = 40, 96
    blocks = quants.random_blocks(rng, qtype, out_f * in_f // 32).reshape(out_f, in_f // 32, -1)
    x = rng.standard_normal((rows, in_f)).astype(np.float32)
    w = quants.dequantize(blocks.reshape(-1, blocks.shape[-1]), qtype).reshape(out_f, in_f)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    monkeypatch.setattr(fgrad.config, "cpu_compile", True)
    got = q._qmm_kernel(np, x, blocks, qtype=qtype, shape=(out_f, in_f))
    assert got.dtype == np.float32 and got.shape == (rows, out_f)
    scale = np.abs(x).sum(axis=1, keepdims=True) * np.abs(w).max()
    err = np.abs(got - want) / scale  # relative to the size of the sum's terms
    assert err.max() < 1e-6, err.max()
    assert _qmv_numba.matvec(qtype) is not None


def test_other_types_and_many_rows_take_the_chunked_path():
    assert _qmv_numba.matvec("Q4_K") is None
    assert _qmv_numba.MAX_ROWS < 200  # a prefill's rows go through BLAS
