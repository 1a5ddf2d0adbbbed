"""jit's fused elementwise kernels on the CPU (numba, issue 16): every op the emitter
lowers against its numpy kernel on the registry's sampled cases and special values (bit
for bit for exact ops, within a few ulp for math functions), the vectorisable exp, log
and tanh on dense grids, fused chains under jit against the unfused program, what stays
on numpy and why, and the disk cache across processes.

Kernels are compiled a few per test module (one group holding every op of a dtype), so
the module costs seconds, not a compile per op."""

import functools
import itertools
import logging
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.special

import fgrad
import fgrad.numpy as fnp
from fgrad.ops import REGISTRY
from fgrad.test_util import op_args, op_cases
from fgrad.transforms import fusion

numba = pytest.importorskip("numba")

from fgrad.transforms import fusion_numba  # noqa: E402  (needs numba to be useful)

_FLOATS = (np.float32, np.float64)
_SCALARS = (bool, int, float)
# Ops whose results are IEEE-exact (or a choice between exact values): bit for bit.
_EXACT = {
    "add", "bias_add", "subtract", "multiply", "divide", "negative", "maximum", "minimum",
    "relu", "abs", "sign", "stop_gradient", "round", "floor", "ceil", "trunc", "sqrt",
    "where", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite",
}
_ULPS = 4  # math functions: the emitter's and numba's libm against numpy's SIMD loops
# Ops whose result cancels terms of this size (0.5 (1 + tanh z) near tanh z = -1): an ulp
# of tanh is many ulps of a small result, in numpy's kernel as in the fused one.
_SCALE = {"gelu_tanh_gate": 0.5, "sigmoid": 1.0, "logaddexp": 1.0}
_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, 1e30]


pytestmark = pytest.mark.usefixtures("numba_backend")  # tests/conftest.py



def _one_group(f, *args):
    """Every node of ``make_graph(f)(*args)`` (all fusable) as one group, every output
    kept: one kernel for many independent ops."""
    graph = fgrad.make_graph(f)(*args)
    plans = [fusion._plan(node) for node in graph.nodes]
    assert all(p is not None for p in plans), [n.op.name for n in graph.nodes]
    dtypes = {p.dtype for p in plans} - {None}
    escaping = {id(v) for node in graph.nodes for v in node.outputs}
    return graph, fusion._make_group(list(graph.nodes), plans, dtypes.pop(), escaping)


def _ulp_distance(got, want):
    """|got - want| in units in the last place of the float dtype (NaN against NaN is 0)."""
    kind = {4: np.int32, 8: np.int64}[got.dtype.itemsize]
    a, b = got.view(kind).astype(np.int64), want.view(kind).astype(np.int64)
    top = np.int64(np.iinfo(kind).min)
    a = np.where(a < 0, top - a, a)  # order the bit patterns as the floats are ordered
    b = np.where(b < 0, top - b, b)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0, np.abs(a - b))


def _compare(name, got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, name
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
    if name in _EXACT:
        np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]), err_msg=name)
        np.testing.assert_array_equal(got[~nan], want[~nan], err_msg=name)
    else:
        # infinities and zeros (with their signs) exactly, finite values within _ULPS
        edge = ~nan & (np.isinf(want) | (want == 0))
        np.testing.assert_array_equal(got[edge], want[edge], err_msg=name)
        ulps = _ulp_distance(got, want)
        scale = _SCALE.get(name)
        if scale is not None:  # cancellation: ulps of the terms, not of the result
            with np.errstate(invalid="ignore"):
                err = np.abs(got.astype(np.float64) - want)
                close = err <= _ULPS * np.finfo(want.dtype).eps * scale
            ulps = np.where(close, 0, ulps)
        assert ulps.max() <= _ULPS, (name, int(ulps.max()), got[ulps > _ULPS], want[ulps > _ULPS])


# ------------------------------------------------------------------------ every op


def _arity(name):
    return len(op_cases(REGISTRY[name], 1)[0][0])


def _cases(dtype):
    """(op name, args) for each op the emitter lowers, all reading a few shared arrays:
    every unary op the sampled inputs of all unary ops' ``Check`` cases (out of an op's
    domain numpy gives NaN, and so must the kernel) and the special values; every binary
    op all binary ops' sampled pairs and all pairs of special values; the logical ops
    every pair of bools; ``where`` a condition over the binary pairs."""
    names = sorted(n for n in fusion._OPS if n != "astype")

    def sampled(n_in):
        parts = [[] for _ in range(n_in)]
        for name in names:
            op = REGISTRY[name]
            if _arity(name) != n_in or name.startswith("logical"):
                continue
            for shapes, params in op_cases(op, 2):
                args = [np.asarray(a) for a in op_args(op, shapes, params, "fusion_numba")]
                for part, a in zip(parts, np.broadcast_arrays(*args)):
                    part.append(a.ravel())
        return [np.concatenate(p) for p in parts]

    (x,) = sampled(1)
    x = np.concatenate([x, _SPECIAL]).astype(dtype)
    pairs = np.array(list(itertools.product(_SPECIAL, repeat=2)))
    x2, y2 = (np.concatenate([s, pairs[:, j]]).astype(dtype) for j, s in enumerate(sampled(2)))
    n = max(x.size, x2.size)
    x, x2, y2 = (np.resize(a, n) for a in (x, x2, y2))
    b1 = np.resize([True, False, True, False], n)
    b2 = np.resize([True, True, False, False], n)
    by_arity = {1: [x], 2: [x2, y2], 3: [b1, x2, y2]}
    return [
        (name, [b1, b2][: _arity(name)] if name.startswith("logical") else by_arity[_arity(name)])
        for name in names
    ]


def _run_group(graph, group, flat):
    by_var = {id(v): a for v, a in zip(graph.invars, flat)}
    with np.errstate(all="ignore"):
        return fusion_numba._make(group)(np, *[by_var[id(x)] for x in group.inputs])


def _independent(cases):
    """A function applying each case's op to its arguments (shared arrays are one input),
    and its inputs."""
    flat = list({id(a): a for _, args in cases for a in args}.values())
    position = {id(a): k for k, a in enumerate(flat)}

    def f(*xs):
        return tuple(REGISTRY[name](*[xs[position[id(a)]] for a in args]) for name, args in cases)

    return f, flat


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_every_lowered_op_against_its_numpy_kernel(dtype):
    cases = _cases(dtype)
    f, flat = _independent(cases)
    graph, group = _one_group(f, *flat)
    results = dict(zip((id(v) for v in group.outputs), _run_group(graph, group, flat)))
    names, failures = set(), []
    for (name, args), out in zip(cases, graph.outvars):
        with np.errstate(all="ignore"):
            want = np.asarray(REGISTRY[name](*args))
            if name in ("erf", "erfc") and dtype == np.float32:  # fgrad's float32 kernel
                # is ~5 ulp off, the fused one float64 libm rounded once: against scipy's
                # float64 values, rounded
                want = getattr(scipy.special, name)(args[0].astype(np.float64)).astype(dtype)
        try:
            _compare(name, results[id(out)], want)
        except AssertionError as err:
            failures.append(f"{name}: {str(err)[:300]}")
        names.add(name)
    assert not failures, "\n".join(failures)
    assert names == set(fusion._OPS) - {"astype"}


# ------------------------------------------------------------------------ exp, log, tanh


def _grids(dtype):
    fi = np.finfo(dtype)
    lo, hi = (-110.0, 90.0) if dtype == np.float32 else (-750.0, 712.0)
    edges = {  # around overflow, gradual underflow and zero
        np.float32: [88.72283, 88.7229, -87.33654, -103.97207, -103.9721, -104.0, -200.0],
        np.float64: [709.78271289, 709.7828, -708.39641853, -745.1332191, -745.14, -746.0],
    }[dtype]
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.max, -fi.max, fi.tiny, fi.smallest_subnormal,
               -fi.smallest_subnormal, 0.625, -0.625, *edges]
    with np.errstate(over="ignore"):
        geo = np.geomspace(fi.smallest_subnormal, fi.max, 200_001, dtype=dtype)
    return {
        "exp": np.concatenate([np.linspace(lo, hi, 200_001), special]).astype(dtype),
        "log": np.concatenate([
            geo,
            np.linspace(0.5, 2.0, 20_001), special]).astype(dtype),
        "tanh": np.concatenate([np.linspace(-12.0, 12.0, 200_001), np.geomspace(1e-30, 1.0, 2001),
                                -np.geomspace(1e-30, 1.0, 2001), special]).astype(dtype),
    }, len(special)


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_exp_log_tanh_within_a_few_ulp_on_dense_grids_and_exact_at_special_values(dtype):
    grids, n_special = _grids(dtype)
    n = max(g.size for g in grids.values())
    xs = {k: np.resize(g, n) for k, g in grids.items()}  # one length: one group
    args = [xs["exp"], xs["log"], xs["tanh"]]
    graph, group = _one_group(lambda a, b, c: (fnp.exp(a), fnp.log(b), fnp.tanh(c)), *args)
    outs = _run_group(graph, group, args)
    for (name, x), got in zip(xs.items(), outs):
        m = grids[name].size
        got, x = got[:m], x[:m]
        with np.errstate(all="ignore"):
            want = getattr(np, name)(x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        # zeros, infinities (in and out, overflow and underflow included) exactly, signs too
        edge = ~np.isnan(want) & (np.isinf(want) | (want == 0) | np.isinf(x) | (x == 0))
        np.testing.assert_array_equal(got[edge], want[edge], err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[edge]), np.signbit(want[edge]), err_msg=name)
        assert edge[m - n_special :].sum() >= 3
        assert _ulp_distance(got, want).max() <= 3, (name, _ulp_distance(got, want).max())
        if dtype == np.float32:  # against float64, rounded once: at most 2 ulp
            with np.errstate(all="ignore"):
                exact = getattr(np, name)(x.astype(np.float64)).astype(np.float32)
            assert _ulp_distance(got, exact).max() <= 2, name
    # the loop is vectorised: LLVM's vector loop, in vector registers on x86 with AVX2
    llvm = "".join(fusion_numba._make(group).dispatcher.inspect_llvm().values())
    assert "vector.body" in llvm


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 registers")
def test_a_fused_gelu_loop_runs_in_vector_registers():
    with open("/proc/cpuinfo") as fh:
        flags = fh.read()
    if "avx2" not in flags:
        pytest.skip("no AVX2")
    x = np.ones((256, 256), np.float32)
    graph = fgrad.make_graph(lambda x: x * REGISTRY["sigmoid"](1.702 * x))(x)
    (group,) = fusion.elementwise_groups(graph)
    asm = "".join(fusion_numba._make(group).dispatcher.inspect_asm().values())
    assert "%ymm" in asm or "%zmm" in asm


# ------------------------------------------------------------------------ under jit


def _gelu(x, b):
    u = x + b
    return 0.5 * u * (1.0 + fnp.tanh(0.7978845608 * (u + 0.044715 * u * u * u)))


def _layer_norm(x, g, b):
    d = x - fnp.mean(x, axis=-1, keepdims=True)
    return d / fnp.sqrt(fnp.mean(d * d, axis=-1, keepdims=True) + 1e-5) * g + b


def _softmax_xent(x, y):
    z = x - fnp.max(x, axis=-1, keepdims=True)
    return fnp.sum(fnp.exp(z) * y, axis=-1) - fnp.log(fnp.sum(fnp.exp(z), axis=-1))


def _on_and_off(f, *args):
    on = fgrad.jit(f)(*args)
    fgrad.config.cpu_compile = False
    try:
        off = fgrad.jit(lambda *a: f(*a))(*args)
    finally:
        fgrad.config.cpu_compile = True
    return fgrad.tree.leaves(on), fgrad.tree.leaves(off)


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_fused_chains_under_jit_equal_the_unfused_program(dtype, log, monkeypatch):
    # the elementwise groups only (row kernels: test_fusion_numba_rows.py)
    monkeypatch.setattr(fusion, "row_reduce_groups", lambda graph: [])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 192)).astype(dtype)
    b, g = (rng.standard_normal(192).astype(dtype) for _ in range(2))
    y = rng.random((256, 192)).astype(dtype)
    cases = [
        (_gelu, (x, b), 4),
        (_layer_norm, (x, g, b), 0),  # no math function: bit for bit
        (_softmax_xent, (x, y), 4),
        (fgrad.grad(lambda x, b: fnp.sum(_gelu(x, b) ** 2), argnums=(0, 1)), (x, b), 8),
        (fgrad.vmap(_layer_norm, in_axes=(0, None, None)), (x, g, b), 0),
    ]
    for f, args, ulps in cases:
        for got, want in zip(*_on_and_off(f, *args)):
            got, want = np.asarray(got), np.asarray(want)
            assert got.dtype == want.dtype == dtype and got.shape == want.shape
            if ulps == 0:
                np.testing.assert_array_equal(got, want)
            else:  # math functions a few ulp apart, relative to the result's scale
                tol = ulps * np.finfo(dtype).eps
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.max(np.abs(want)))
    messages = [r.getMessage() for r in log.records]
    compiled = [m for m in messages if "fused group" in m and "numpy calls" not in m]
    assert any("tanh" in m for m in compiled), compiled
    assert any("'subtract', 'multiply'" in m for m in compiled), compiled


def test_what_stays_on_numpy_and_why(log):
    x = np.ones((64, 8, 32), np.float32)
    odd_a, odd_b = np.ones((64, 1, 32), np.float32), np.ones((1, 8, 1), np.float32)
    (got,), (want,) = _on_and_off(lambda a, b: fnp.exp(a * 2.0 + b) * 3.0, odd_a, odd_b)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    fgrad.jit(lambda x: x[:2, :2, :2] * 2.0 + 1.0)(x)  # too few elements
    messages = " ".join(r.getMessage() for r in log.records)
    assert "do not broadcast to (64, 8, 32) as rows and columns" in messages
    assert "below MIN_WORK" in messages


def test_small_groups_fuse_from_min_calls_numpy_calls(log):
    # A decode step's SwiGLU gate: a sigmoid (several numpy calls) and two products on
    # one row; three plain ops on the same row stay numpy calls.
    rng = np.random.default_rng(3)
    gate, up = (rng.standard_normal((1, 1, 1536)).astype(np.float32) for _ in range(2))
    (got,), (want,) = _on_and_off(lambda g, u: fgrad.nn.silu(g) * u, gate, up)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=4 * 1.2e-7, atol=1e-30)
    (got,), (want,) = _on_and_off(lambda g, u: (g + u) * u - 1.0, gate, up)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    messages = [r.getMessage() for r in log.records]
    assert any("['sigmoid', 'multiply', 'multiply'] float32[1, 1, 1536]" in m and "numpy calls" not in m
               for m in messages), messages
    assert any("['add', 'multiply', 'subtract'] float32[1, 1, 1536] runs as numpy calls" in m
               and f"3 numpy calls below MIN_CALLS ({fusion_numba.MIN_CALLS})" in m
               for m in messages), messages


def _numpy_avx512(monkeypatch, has):
    monkeypatch.setattr(fusion_numba, "_numpy_has_avx512", lambda: has)
    fusion_numba._pays_alone.cache_clear()
    monkeypatch.setattr(fusion_numba, "_pays_alone", functools.cache(fusion_numba._pays_alone.__wrapped__))


def test_one_op_fuses_alone_only_where_its_numpy_kernel_is_several_passes(log, monkeypatch):
    _numpy_avx512(monkeypatch, True)
    x = np.linspace(-30.0, 30.0, 1 << 16).astype(np.float32)
    sigmoid, erf = REGISTRY["sigmoid"], REGISTRY["erf"]
    for f, ulps in ((sigmoid, 4), (erf, 8)):  # erf: Cody's float32 kernel against libm's
        (got,), (want,) = _on_and_off(f, x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=ulps * 1.2e-7,
                                   atol=1e-37)
    (got,), (want,) = _on_and_off(fnp.exp, x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    fgrad.jit(lambda x: fnp.tanh(x))(x[:100])  # small: nothing to say
    messages = [r.getMessage() for r in log.records]
    assert any("['sigmoid'] float32[65536] compiled" in m for m in messages), messages
    assert any("['erf'] float32[65536] compiled" in m for m in messages), messages
    assert any("['exp'] float32[65536] runs as numpy calls: one exp alone" in m
               for m in messages), messages
    assert not any("['tanh']" in m for m in messages), messages


@pytest.mark.parametrize("dtype, ulps", [(np.float32, 3), (np.float64, 2)])
def test_exp_log_tanh_fuse_alone_where_numpy_has_no_avx512_loops(dtype, ulps, log, monkeypatch):
    # There numpy's loops took 1.7-2.9x the fused kernel's time (an AVX2 machine).
    _numpy_avx512(monkeypatch, False)
    x = np.linspace(-30.0, 30.0, 1 << 16).astype(dtype)
    for f in (fnp.exp, fnp.tanh, lambda x: fnp.log(fnp.abs(x) + 0.5)):
        (got,), (want,) = _on_and_off(f, x)
        want = np.asarray(want)
        ulp = np.abs(np.asarray(got) - want) / np.spacing(np.abs(want))
        assert ulp.max() <= ulps, ulp.max()
    messages = [r.getMessage() for r in log.records]
    name = np.dtype(dtype).name
    for op in ("exp", "tanh"):
        assert any(f"['{op}'] {name}[65536] compiled" in m for m in messages), messages


def test_a_group_numba_cannot_compile_stays_on_numpy(log, monkeypatch):
    def broken(source):
        raise numba.core.errors.TypingError("no typing for this")

    monkeypatch.setattr(fusion_numba, "_compile", broken)
    x = np.linspace(-3.0, 3.0, 1 << 16).astype(np.float32)
    (got,), (want,) = _on_and_off(lambda x: fnp.tanh(x) * 2.0 + 1.0, x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    messages = " ".join(r.getMessage() for r in log.records)
    assert "numba could not compile it: TypingError" in messages


def test_without_numba_programs_are_not_fused(monkeypatch):
    from fgrad.transforms import cpu_compile

    monkeypatch.setattr(cpu_compile, "available", lambda: False)
    g = fgrad.make_graph(_gelu)(np.ones((256, 256), np.float32), np.ones(256, np.float32))
    assert fusion.fuse_for(g, np) is g


def test_the_disk_cache_serves_a_second_process(tmp_path):
    script = textwrap.dedent("""
        import logging, numpy as np, fgrad, fgrad.numpy as fnp
        logging.basicConfig()
        fgrad.config.cpu_compile = fgrad.config.log_compiles = True
        x = np.linspace(-2.0, 2.0, 1 << 16).astype(np.float32)
        y = fgrad.jit(lambda x: x * fnp.tanh(x * 0.5 + 0.25))(x)
        want = x * np.tanh(x * np.float32(0.5) + np.float32(0.25))
        print(float(np.max(np.abs(np.asarray(y) - want))))
    """)
    env = {**os.environ, "FGRAD_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.getcwd()}
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert float(run.stdout) <= 1e-6
    assert "compiled with numba" in runs[0].stderr, runs[0].stderr
    assert "loaded from numba's disk cache" in runs[1].stderr, runs[1].stderr


def test_a_program_with_donated_arguments_keeps_numpys_in_place_steps():
    step = fgrad.jit(lambda w, g: w - 0.5 * g * g, donate_argnums=0)
    w, g = fnp.ones(1 << 16, dtype="float32"), fnp.ones(1 << 16, dtype="float32")
    data = id(w._data)
    out = step(w, g)  # a fused kernel would write a fresh array
    assert id(out._data) == data
    np.testing.assert_array_equal(np.asarray(out)[:3], [0.5, 0.5, 0.5])


def test_a_half_power_fuses_as_numpys_sqrt():
    x = np.full(1 << 16, 4.0, np.float32)
    x[:3] = [-np.inf, -0.0, -1.0]
    got = np.asarray(fgrad.jit(lambda x: (x * 1.0) ** 0.5 + 0.0)(x))
    with np.errstate(invalid="ignore"):
        want = (x * 1.0) ** 0.5 + 0.0
    np.testing.assert_array_equal(got, want)


def test_a_fused_kernels_numpy_argument_is_read_in_place():
    # Fused kernels write new arrays, so jit need not copy a caller's array for them (a
    # 4 MB copy cost a third of tanh's time on a million float32).
    x = np.linspace(-2.0, 2.0, 1 << 16, dtype=np.float32)
    jf = fgrad.jit(lambda x: fnp.tanh(x * 2.0) + 1.0)
    program = jf.compile(x)
    assert "fused_elementwise" in program.source and program.viewed_inputs == frozenset()
    out = jf(x)
    want = np.tanh(x * 2.0) + 1.0
    x[...] = 7.0
    np.testing.assert_allclose(np.asarray(out), want, rtol=4 * 1.2e-7, atol=1e-7)
    viewing = fgrad.jit(lambda x: (fnp.tanh(x * 2.0) + 1.0, x[:3]))
    assert viewing.compile(x).viewed_inputs == {0}  # the slice still views it
