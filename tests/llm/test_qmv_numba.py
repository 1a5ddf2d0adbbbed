"""Kept-quantized products read straight from the packed Q4_1 / Q8_0 blocks (numba): the
same values as dequantize-then-matmul to float32 rounding, used for few rows only."""

import numpy as np
import pytest

import fgrad
from fgrad.llm import _qmv_numba, quants
from fgrad.llm import quantized as q
from fgrad.transforms import numba_threads

pytest.importorskip("numba")


def _take_the_loop(parallel, monkeypatch):
    """Every call takes the loop asked for; the parallel one in 3 chunks (more than a small
    matrix's pairs of rows, too)."""
    import numba

    monkeypatch.setattr(numba_threads.LoopChoice, "parallel", lambda self: parallel)
    if parallel:
        monkeypatch.setattr(_qmv_numba, "PARALLEL_MIN", 0)
        if numba.config.NUMBA_NUM_THREADS < 2:
            pytest.skip("one numba thread")
        monkeypatch.setattr(numba_threads, "_thread_count", lambda: lambda: 3)


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("out_f", [40, 41])  # Q4_1 takes rows in pairs: an odd last one
@pytest.mark.parametrize("parallel", [False, True])
def test_the_block_product_equals_dequantize_then_matmul(qtype, rows, out_f, parallel, monkeypatch):
    rng = np.random.default_rng(1)
    in_f = 96
    _take_the_loop(parallel, monkeypatch)
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


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("parallel", [False, True])
def test_several_weights_in_one_loop_equal_one_product_each_to_the_bit(qtype, parallel, monkeypatch):
    # The rows of each weight are the same loop either way, whichever thread runs them.
    _take_the_loop(parallel, monkeypatch)
    rng = np.random.default_rng(4)
    blocks = tuple(quants.random_blocks(rng, qtype, o * 3).reshape(o, 3, -1) for o in (7, 2, 12))
    x = rng.standard_normal((2, 96)).astype(np.float32)
    mv = _qmv_numba.matvec(qtype)
    got = mv(x, blocks)
    assert got.shape == (2, 21)
    np.testing.assert_array_equal(got, np.concatenate([mv(x, (b,)) for b in blocks], axis=1))


def test_other_types_and_many_rows_take_the_chunked_path():
    assert _qmv_numba.matvec("Q4_K") is None
    assert _qmv_numba.MAX_ROWS < 200  # a prefill's rows go through BLAS


def test_python_threads_at_once_get_the_same_values(monkeypatch):
    # numba's workqueue layer must not run two parallel kernels at once: a call that finds
    # one running takes the serial loop. Either way the values are the same.
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(_qmv_numba, "PARALLEL_MIN", 0)
    monkeypatch.setattr(numba_threads.LoopChoice, "parallel", lambda self: True)
    rng = np.random.default_rng(2)
    blocks = quants.random_blocks(rng, "Q4_1", 64 * 8).reshape(64, 8, -1)
    xs = [rng.standard_normal((1, 256)).astype(np.float32) for _ in range(16)]
    mv = _qmv_numba.matvec("Q4_1")
    want = [mv(x, (blocks,)) for x in xs]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda x: mv(x, (blocks,)), xs * 4))
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g, want[i % 16])


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0"])
def test_the_numba_dequantizer_equals_the_numpy_kernel_to_the_bit(qtype):
    rng = np.random.default_rng(3)
    blocks = quants.random_blocks(rng, qtype, 37 * 5).reshape(37, 5, -1)
    want = quants.dequantize(blocks.reshape(-1, blocks.shape[-1]), qtype).reshape(37, 160)
    got = _qmv_numba.dequantize(qtype)(blocks)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert _qmv_numba.dequantize("Q4_K") is None


def test_the_compiled_products_load_from_numbas_disk_cache_in_a_second_process(tmp_path):
    # Defined inside functions, these loops kept the functions they call in closures that
    # numba's cache never matched: every process compiled them again (15-20 s).
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import numpy as np, fgrad
        from fgrad.llm import _q8_dot, _q8_kernels, _qmv_kernels, _qmv_numba, quants
        from fgrad.nn import dot_product_attention
        from fgrad.transforms import _attention_kernel
        fgrad.config.cpu_compile = True
        b = quants.random_blocks(np.random.default_rng(0), "Q4_1", 64 * 2).reshape(64, 2, 20)
        x = np.ones((1, 64), np.float32)
        _qmv_numba.matvec("Q4_1")(x, (b,))
        _qmv_numba.dequantize("Q4_1")(b)
        kernels = [_qmv_kernels.q4_1_serial, _qmv_kernels.dequantize_q4_1]
        if _q8_dot.available():
            _q8_dot.matvec("Q4_1")(x, (b,))
            kernels.append(_q8_kernels.serial)
        q = np.ones((1, 3, 16), np.float32)
        fgrad.jit(lambda q: dot_product_attention(q, q, q))(q)
        kernels.append(_attention_kernel.attend)
        print(sum(sum(k.stats.cache_hits.values()) for k in kernels), len(kernels))
    """)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.getcwd()}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    (hits0, n), (hits1, _) = (map(int, run.stdout.split()) for run in runs)
    assert hits0 == 0 and hits1 == n, [run.stdout for run in runs]
