"""jit's row kernels on the CPU (numba, issue 16): elementwise -> reduction over the last
axis -> elementwise reading the per-row value back (softmax, layer-norm, a softmax
cross-entropy) runs as one numba loop over rows, against the unfused program.

Tolerance: the row sums are reassociated by LLVM (vector lanes), so they differ from
numpy's pairwise sums in the last bits: softmax and the cross-entropy (sums of
like-signed terms) within 8 ulp of the unfused values; layer-norm, whose mean and
variance are divided into values that cancel, within 8 ulp of each row's largest output
(absolute). max/min are exact; inf, -inf and NaN rows give the unfused values."""


import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.transforms import fusion

numba = pytest.importorskip("numba")

from fgrad.transforms import fusion_numba  # noqa: E402  (needs numba to be useful)

_FLOATS = (np.float32, np.float64)
_ULPS = 8


pytestmark = pytest.mark.usefixtures("numba_backend")  # tests/conftest.py



def _softmax(x):
    e = fnp.exp(x - fnp.max(x, axis=-1, keepdims=True))
    return e / fnp.sum(e, axis=-1, keepdims=True)


def _layer_norm(x, g, b):
    d = x - fnp.mean(x, axis=-1, keepdims=True)
    return d / fnp.sqrt(fnp.mean(d * d, axis=-1, keepdims=True) + 1e-5) * g + b


def _xent(x, y):
    z = x * 0.5 - fnp.max(x * 0.5, axis=-1, keepdims=True)
    return fnp.sum(fnp.exp(z) * y, axis=-1) - fnp.log(fnp.sum(fnp.exp(z), axis=-1))


def _on_and_off(f, *args):
    with np.errstate(all="ignore"):
        on = np.asarray(fgrad.jit(f)(*args))
        fgrad.config.cpu_compile = False
        try:
            off = np.asarray(fgrad.jit(lambda *a: f(*a))(*args))
        finally:
            fgrad.config.cpu_compile = True
    return on, off


def _rows(dtype, shape=(64, 1000)):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    x[1, 5] = np.inf  # softmax: NaN (inf - inf), as numpy's
    x[2] = -np.inf  # every entry -inf: NaN
    x[3, 7] = np.nan
    x[4] = 0.0
    x[5, :3] = -np.inf  # masked entries: 0
    return x


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_softmax_and_cross_entropy_rows_equal_the_unfused_program(dtype, log):
    x = _rows(dtype)
    y = np.abs(_rows(dtype)[::-1].copy())
    eps = np.finfo(dtype).eps
    for f, args in ((_softmax, (x,)), (_xent, (x, y))):
        got, want = _on_and_off(f, *args)
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=_ULPS * eps, atol=0)
    assert np.isnan(got[1]) and np.isnan(got[2])
    sm, _ = _on_and_off(_softmax, x)
    assert np.all(np.isnan(sm[1])) and np.all(np.isnan(sm[2])) and np.all(np.isnan(sm[3]))
    np.testing.assert_array_equal(sm[5, :3], 0.0)
    compiled = [r.getMessage() for r in log.records if "fused row group" in r.getMessage()]
    assert any("['max', 'subtract', 'exp', 'sum', 'divide']" in m and "compiled" in m
               for m in compiled), compiled


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_layer_norm_rows_equal_the_unfused_program(dtype, log):
    x = _rows(dtype)
    rng = np.random.default_rng(1)
    g, b = (rng.standard_normal(1000).astype(dtype) for _ in range(2))
    got, want = _on_and_off(_layer_norm, x, g, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want).any(axis=1)
    scale = np.max(np.abs(want[ok]), axis=1, keepdims=True)
    err = np.abs(got[ok] - want[ok]) / scale
    assert err.max() <= _ULPS * np.finfo(dtype).eps, err.max()
    np.testing.assert_array_equal(got[4], want[4])  # a constant row: exactly b
    messages = [r.getMessage() for r in log.records]
    assert any("fused row group ['sum', 'divide', 'subtract'" in m and "compiled" in m
               for m in messages), messages


def test_the_groups_of_a_program():
    x = np.ones((4, 8, 16), np.float32)
    graph = fgrad.make_graph(lambda x: _softmax(x * 2.0))(x)
    (group,) = fusion.row_reduce_groups(graph)
    assert group.shape == (4, 8, 16)
    parts = [p[0] if p[0] == "reduce" else ([n.op.name for n in p[1].nodes], p[2])
             for p in group.parts]
    assert parts == [(["multiply"], "row"), "reduce", (["subtract", "exp"], "row"), "reduce",
                     (["divide"], "row")]
    assert len(group.nodes) == len(graph.nodes)
    # not over the last axis, or a part reading a value that varies over some row axes
    # only (it broadcasts as no row kernel reads): no row group
    assert not fusion.row_reduce_groups(fgrad.make_graph(
        lambda x: x - fnp.max(x, axis=1, keepdims=True))(x))
    odd = np.ones((1, 8, 1), np.float32)
    assert not fusion.row_reduce_groups(fgrad.make_graph(
        lambda x, m: x * m - fnp.max(x * m, axis=-1, keepdims=True))(x, odd))
    # a reduction alone is no row group (numpy's reduce is the kernel)
    assert not fusion.row_reduce_groups(fgrad.make_graph(lambda x: fnp.sum(x, axis=-1))(x))


def test_parallel_rows_equal_the_serial_ones(monkeypatch):
    monkeypatch.setattr(fusion_numba, "PARALLEL_SIZE", 1)
    x = _rows(np.float32, (37, 300))
    (group,) = fusion.row_reduce_groups(fgrad.make_graph(_softmax)(x))
    run = fusion_numba._make_rows(group)
    assert run.parallel is not None
    want = np.empty_like(x)
    with np.errstate(all="ignore"):
        run.dispatcher(x, want, 37, 300, 1)
        for nsplit in (2, 5, 37):
            got = np.full_like(x, 7.0)
            run.parallel(x, got, 37, 300, nsplit)
            np.testing.assert_array_equal(got, want)


def test_small_row_groups_stay_on_numpy_below_min_calls_and_fuse_from_it(log):
    x = np.linspace(-3.0, 3.0, 256, dtype=np.float32).reshape(4, 64)
    got, want = _on_and_off(_softmax, x)  # five numpy calls on 256 values: numpy's
    np.testing.assert_array_equal(got, want)

    def rms_norm(x):  # seven: fuses at any size
        return x / fnp.sqrt(fnp.mean(x * x, axis=-1, keepdims=True) + 1e-5) * 1.5

    got, want = _on_and_off(rms_norm, x)
    np.testing.assert_allclose(got, want, rtol=4 * 1.2e-7)
    messages = " ".join(r.getMessage() for r in log.records)
    assert "fused row group ['max', 'subtract', 'exp', 'sum', 'divide'] float32[4, 64] runs " \
           "as numpy calls: 256 elements x 5 ops is below MIN_WORK" in messages
    assert "5 numpy calls below MIN_CALLS" in messages
    fused = [r.getMessage() for r in log.records if "'sqrt'" in r.getMessage()]
    assert fused and all("numpy calls" not in m for m in fused), fused


def test_row_reductions_propagate_nan_and_sum_like_numpy():
    rows = fusion_numba._row_functions()
    rng = np.random.default_rng(2)
    for dtype in _FLOATS:
        dt = np.dtype(dtype)
        for n in (1, 7, 8, 9, 127, 128, 129, 1000):
            x = rng.random(n).astype(dtype)  # like-signed: sums agree to a few ulp
            for name, ref in (("max", np.max), ("min", np.min)):
                assert rows[(name, dt)](x) == ref(x)
                y = x.copy()
                y[n // 2] = np.nan
                assert np.isnan(rows[(name, dt)](y))
            np.testing.assert_allclose(rows[("sum", dt)](x), np.add.reduce(x),
                                       rtol=_ULPS * np.finfo(dtype).eps)
        assert np.signbit(rows[("sum", dt)](np.full(5, -0.0, dtype))) == np.signbit(
            np.add.reduce(np.full(5, -0.0, dtype)))
