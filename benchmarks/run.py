"""fgrad (eager and jit) against a hand-written numpy floor and, when installed, peers.

One process run times every variant of each workload and prints its time and its ratio to
the numpy floor measured in the same run (ratios, not absolute times, are what carry over
between machines):

1. ``op``: per-op overhead on 16-element float32 arrays (``op_overhead.py``'s table, plus
   the same ops under ``fgrad.jit``);
2. ``mlp``: digits MLP training step (64-256-256-10, batch 128, softmax cross-entropy, SGD);
3. ``transformer``: a transformer block forward + backward (batch 8, seq 64, d_model 128,
   4 heads, MLP 512);
4. ``hvp``: Hessian-vector product of a 1,000-dimensional function, against one gradient
   and against forming the full Hessian;
5. ``memory``: peak memory (tracemalloc) of ``grad`` through 200 layers of ``tanh(x W)``
   (d 512, batch 64), with and without ``fgrad.checkpoint``, against the bytes of the
   activations reverse mode must keep;
6. ``rk4``: a 200-step RK4 ``lax.scan`` (a 2-element state, and a 64-element one),
   forward and gradient, with ``jit``'s scans as numpy calls and compiled by numba
   (``config.cpu_compile``);
7. ``lstm``: an LSTM (``nn.RNN`` over ``nn.LSTMCell``) over 100 steps, batch 32, hidden
   128, forward and ``value_and_grad`` under ``jit`` (the scan as numpy calls, and
   compiled by numba), against a hand-written numpy LSTM (forward loop and
   backpropagation through time);
8. ``fused``: ``jit`` with its elementwise groups compiled by numba (``config.cpu_compile``
   on) and as numpy calls (off), against the numpy floor: exp and tanh of 1e6 float32,
   GELU and layer-norm of (4096, 1024) float32, the digits MLP step and the transformer
   block; rounds of interleaved timing give a range of ratios, and the first call's time
   (tracing plus compiling) is printed.

Peers (PyTorch eager, autograd, JAX jit) are added when they import, in every section
but ``memory``; only fgrad and numpy are needed, and the header says which peers were
left out. JAX runs the same maths under ``jax.jit`` (``jax.block_until_ready`` before the
clock stops), float32 or float64 as the fgrad variant. When the run asks for one thread
(``--threads 1``, or ``OPENBLAS_NUM_THREADS=1`` without ``--threads``) the runner sets
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`` before
importing jax, so XLA computes on one thread too. Times are the best of several repeats
(timeit-style), the variants of a workload measured in interleaved rounds so that a
change in machine load hits them alike. On a loaded machine use ``--cpu-time`` (process
CPU time) with one BLAS thread::

    OPENBLAS_NUM_THREADS=1 python benchmarks/run.py --cpu-time

``--cpu-compile on|off`` sets ``fgrad.config.cpu_compile`` for the whole run (the
``rk4``, ``lstm`` and ``fused`` sections time both settings whatever it says).

Usage:
    python benchmarks/run.py                  # everything, a few minutes
    python benchmarks/run.py --quick          # fewer, shorter repeats
    python benchmarks/run.py --only mlp transformer
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

try:
    import resource  # Unix only: page-fault counts
except ImportError:  # pragma: no cover
    resource = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import op_overhead
import workloads

import fgrad

SECTIONS = ("op", "mlp", "transformer", "hvp", "memory", "rk4", "lstm", "fused")

# Performance targets (ratios to the numpy floor in the same run; benchmarks/README.md).
TARGETS = {"mlp": 1.2, "transformer": 0.8}
MEMORY_TARGET = 1.3
# The compiled backend's (numba): jit with cpu_compile on, best round of the fused section,
# at most this ratio to the floor; the RK4 gradient within RK4_JAX of JAX's jit and
# RK4_SPEEDUP times faster than jit running the scan as numpy calls.
FUSED_TARGETS = {"mlp": 0.5, "transformer": 0.7, "exp": 0.45, "tanh": 0.45}
RK4_JAX, RK4_SPEEDUP = 2.0, 20.0


# ------------------------------------------------------------------------ timing


def best_times(fns: list[Callable], args) -> list[float]:
    """Seconds per call of each zero-argument ``fn``: op_overhead's interleaved best-of."""
    min_seconds, repeat = _budget(args)
    clock = time.process_time if args.cpu_time else time.perf_counter
    return op_overhead.best_times([(fn, ()) for fn in fns], min_seconds, repeat, clock)


def _fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:8.3f} s "
    if seconds >= 1e-3:
        return f"{seconds * 1e3:8.3f} ms"
    return f"{seconds * 1e6:8.2f} us"


def _check(variants: list, results: list, rtol: float) -> list[str]:
    """Each variant's results against its group's floor: the largest relative difference."""
    notes = []
    floors: dict[str, list] = {}
    for v, res in zip(variants, results):
        group = _group(v.name)
        if group not in floors:
            floors[group] = res
            notes.append("floor")
            continue
        ref = floors[group]
        err = max(
            float(np.max(np.abs(np.asarray(a, np.float64) - b)) / (np.max(np.abs(b)) + 1e-30))
            for a, b in zip(res, ref)
        )
        if not err <= rtol or len(res) != len(ref):
            raise AssertionError(
                f"{v.name}: results differ from the numpy floor (max rel {err:.2e})"
            )
        notes.append(f"max rel diff {err:.0e}")
    return notes


def _page_faults(fn: Callable, calls: int = 3) -> float:
    """Minor page faults per call: fresh pages the allocator asked the kernel for.

    Each costs about a microsecond of system time; numpy code that allocates a new array
    per operation can spend a large part of its time here, depending on how glibc's
    malloc has tuned itself so far in the process (see README.md)."""
    if resource is None:
        return float("nan")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def _group(name: str) -> str:
    return name.split(":")[0] if ":" in name else ""


# ------------------------------------------------------------------------ sections


def run_op(args, libs) -> dict:
    """Per-op overhead: op_overhead.py's table (eager and grad), then jit on the same ops."""
    argv = ["--sizes", "16", "--no-header"] + (["--quick"] if args.quick else [])
    argv += ["--cpu-time"] if args.cpu_time else []
    argv += ["--no-peers"] if args.no_peers else []
    if args.tiny:
        argv += ["--ops", "add", "exp"]
    op_overhead.main(argv)
    print()
    rng = np.random.default_rng(0)
    names = ["add", "exp"] if args.tiny else list(op_overhead.CASES)
    print("the same ops under fgrad.jit (one call of the jitted function):")
    print(f"{'op':9s} {'mode':8s} {'numpy':>11s} {'fgrad jit':>11s} {'ratio':>6s}")
    for name in names:
        for mode, f_np, f_fg in _jit_op_pairs(op_overhead.CASES[name], name, rng):
            f_fg()  # trace and compile outside the timing
            t_np, t_fg = best_times([f_np, f_fg], args)
            print(f"{name:9s} {mode:8s} {_fmt_time(t_np)} {_fmt_time(t_fg)} {t_fg / t_np:6.2f}")
    return {}


def _jit_op_pairs(case: dict, name: str, rng) -> list:
    """(mode, numpy call, jitted fgrad call) for the op alone and for its gradient."""
    a, b = case["inputs"](16, rng)
    x, y = fgrad.asarray(a), fgrad.asarray(b)
    np_fn, np_args = op_overhead._EAGER_NUMPY[name](a, b)
    jit_fwd = fgrad.jit(case["fgrad"])
    jit_grad = fgrad.jit(op_overhead.fgrad_grad(case))
    np_grad = op_overhead.numpy_grad(case)
    return [
        ("jit", lambda: np_fn(*np_args), lambda: jit_fwd(x, y)),
        ("jit grad", lambda: np_grad(a, b), lambda: jit_grad(x, y)),
    ]


def run_timed(name: str, args, libs) -> dict:
    """Time every variant of a workload; print times and ratios to its group's floor."""
    wl = workloads.WORKLOADS[name](args.tiny, libs)
    print(f"{wl.title}")
    timer = time.process_time if args.cpu_time else time.perf_counter
    # Too slow to repeat (a full Hessian, eagerly): timed by its one call here, and left
    # out of a --quick run (a smoke test, where it took most of the time).
    variants = [v for v in wl.variants if v.timed or not args.quick or args.tiny]
    results, times = [], {}
    for v in variants:  # warm-up: jit traces, BLAS spins up
        start = timer()
        results.append(v.run())
        if not v.timed:
            times[v.name] = timer() - start
    notes = _check(variants, results, wl.rtol)
    timed = [v for v in variants if v.timed]
    times.update(zip((v.name for v in timed), best_times([v.run for v in timed], args)))
    faults = {v.name: _page_faults(v.run) for v in timed}
    times.update({f"faults: {k}": n for k, n in faults.items()})  # for the summary
    floors = {}
    print(f"  {'variant':34s} {'time':>11s} {'/ floor':>8s} {'faults':>7s}  check")
    for v, note in zip(variants, notes):
        floors.setdefault(_group(v.name), times[v.name])
        ratio = times[v.name] / floors[_group(v.name)]
        extra = f"; {v.note}" if v.note else ""
        fault = f"{faults[v.name]:7.0f}" if v.name in faults else f"{'':7s}"
        print(f"  {v.name:34s} {_fmt_time(times[v.name])} {ratio:8.2f} {fault}  {note}{extra}")
    for v in wl.variants:
        if v not in variants:
            print(f"  {v.name:34s} {'':>11s} {'':>8s} {'':>7s}  left out of --quick")
    if name == "hvp":
        print("  hvp / grad, same library:")
        for lib in sorted({v.name.split(": ")[1] for v in wl.variants}):
            g, h = times.get(f"grad: {lib}"), times.get(f"hvp: {lib}")
            if g and h:
                print(f"    {lib:22s} {h / g:6.2f}")
        full, one = times.get("hessian: fgrad eager"), times.get("hvp: fgrad eager")
        if full and one:
            print(f"  full Hessian / hvp (fgrad eager): {full / one:.0f}")
    return times


# ------------------------------------------------------------------------ lstm


def _np_lstm_forward(x, wi, wh, b):
    """The numpy floor's LSTM forward over time-major ``x`` ``(T, B, D)``, PyTorch's gates
    ``(i, f, g, o)``: outputs ``(T, B, H)`` and what backpropagation through time reads."""
    t_len, batch, _ = x.shape
    hidden = wh.shape[0]
    xz = (x.reshape(t_len * batch, -1) @ wi + b).reshape(t_len, batch, 4 * hidden)
    h = np.zeros((batch, hidden), x.dtype)
    c = np.zeros_like(h)
    hs, cs, gates = np.empty((t_len + 1, batch, hidden), x.dtype), [], []
    hs[0] = h
    for t in range(t_len):
        z = xz[t] + h @ wh
        ifo = 1.0 / (1.0 + np.exp(-z[:, np.r_[0 : 2 * hidden, 3 * hidden : 4 * hidden]]))
        i, f, o = ifo[:, :hidden], ifo[:, hidden : 2 * hidden], ifo[:, 2 * hidden :]
        g = np.tanh(z[:, 2 * hidden : 3 * hidden])
        c_prev, c = c, f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        hs[t + 1] = h
        cs.append(c_prev)
        gates.append((i, f, g, o, tc))
    return hs[1:], (hs, cs, gates, xz)


def _np_lstm_value_and_grad(x, wi, wh, b):
    """``mean(ys ** 2)`` of the LSTM and its gradient in ``(wi, wh, b)``, by hand: the
    forward loop, then one reverse loop over time (BPTT); the weight gradients are one
    matrix product each over all steps."""
    ys, (hs, cs, gates, _) = _np_lstm_forward(x, wi, wh, b)
    t_len, batch, hidden = ys.shape
    dys = ys * (2.0 / ys.size)
    dz = np.empty((t_len, batch, 4 * hidden), x.dtype)
    dh_next = np.zeros((batch, hidden), x.dtype)
    dc_next = np.zeros_like(dh_next)
    for t in reversed(range(t_len)):
        i, f, g, o, tc = gates[t]
        dh = dys[t] + dh_next
        dc = dh * o * (1.0 - tc * tc) + dc_next
        dz[t, :, :hidden] = dc * g * i * (1.0 - i)
        dz[t, :, hidden : 2 * hidden] = dc * cs[t] * f * (1.0 - f)
        dz[t, :, 2 * hidden : 3 * hidden] = dc * i * (1.0 - g * g)
        dz[t, :, 3 * hidden :] = dh * tc * o * (1.0 - o)
        dc_next = dc * f
        dh_next = dz[t] @ wh.T
    dz2 = dz.reshape(t_len * batch, 4 * hidden)
    d_wi = x.reshape(t_len * batch, -1).T @ dz2
    d_wh = hs[:-1].reshape(t_len * batch, hidden).T @ dz2
    return [np.asarray(np.mean(ys**2)), d_wi, d_wh, dz2.sum(axis=0)]


def lstm_workload(tiny: bool = False, peer_libs: dict | None = None) -> workloads.Workload:
    """An LSTM over 100 steps, batch 32, input and hidden 128 (float32): the forward pass,
    and ``value_and_grad`` of ``mean(ys ** 2)`` in the cell's parameters; fgrad's jit with
    the scan as numpy calls and (numba installed) compiled, and JAX's jit of the same cell
    over ``jax.lax.scan``."""
    from fgrad import nn, random
    from fgrad.transforms import cpu_compile

    t_len, batch, d, hidden = (8, 4, 8, 8) if tiny else (100, 32, 128, 128)
    cell = nn.LSTMCell(d, hidden)
    rnn = nn.RNN(cell, time_major=True)
    params = cell.init(random.key(0))
    x_np = np.random.default_rng(0).standard_normal((t_len, batch, d)).astype(np.float32)
    wi, wh, b = (np.asarray(p) for p in (params.input_kernel, params.hidden_kernel, params.bias))
    x = fgrad.numpy.asarray(x_np)

    def loss(params, x):
        ys, _ = rnn.apply(params, x)
        return fgrad.numpy.mean(ys**2)

    def fgrad_variants(on: bool) -> tuple[Callable, Callable]:
        forward = fgrad.jit(lambda params, x: rnn.apply(params, x)[0])
        value_and_grad = fgrad.jit(fgrad.value_and_grad(loss))

        def vg():
            value, grads = value_and_grad(params, x)
            return [np.asarray(value)] + [
                np.asarray(g) for g in (grads.input_kernel, grads.hidden_kernel, grads.bias)
            ]

        return (workloads._with_cpu_compile(on, lambda: [np.asarray(forward(params, x))]),
                workloads._with_cpu_compile(on, vg))

    fwd_off, vg_off = fgrad_variants(False)
    fwds = [
        workloads.Variant("forward: numpy", lambda: [_np_lstm_forward(x_np, wi, wh, b)[0]],
                          note="a Python loop over time"),
        workloads.Variant("forward: fgrad jit", fwd_off, note="nn.RNN: one scan"),
    ]
    vgs = [
        workloads.Variant("value_and_grad: numpy", lambda: _np_lstm_value_and_grad(x_np, wi, wh, b),
                          note="BPTT by hand"),
        workloads.Variant("value_and_grad: fgrad jit", vg_off),
    ]
    if cpu_compile.available() and not tiny:
        fwd_on, vg_on = fgrad_variants(True)
        fwds.append(workloads.Variant("forward: fgrad jit + numba", fwd_on, note="cpu_compile"))
        vgs.append(workloads.Variant("value_and_grad: fgrad jit + numba", vg_on, note="cpu_compile"))
    jax = (peer_libs or {}).get("jax")
    if jax is not None:
        jax_fwd, jax_vg = _jax_lstm(jax, wi, wh, b, x_np)
        fwds.append(workloads.Variant("forward: jax jit", jax_fwd, note="jax.lax.scan"))
        vgs.append(workloads.Variant("value_and_grad: jax jit", jax_vg))
    return workloads.Workload(
        "lstm",
        f"LSTM (nn.RNN over nn.LSTMCell), {t_len} steps, batch {batch}, input {d}, hidden "
        f"{hidden}, float32 (groups: forward, value_and_grad)",
        fwds + vgs,
    )


def _jax_lstm(jax, wi, wh, b, x) -> tuple[Callable, Callable]:
    """The LSTM of :func:`lstm_workload` in JAX (the input projection of all steps as one
    product, then ``jax.lax.scan`` over ``h @ wh`` and the gates): forward and
    ``value_and_grad`` of ``mean(ys ** 2)`` in ``(wi, wh, b)``, jitted."""
    import jax.numpy as jnp

    def forward(wi, wh, b, x):
        t_len, batch, _ = x.shape
        hidden = wh.shape[0]
        xz = (x.reshape(t_len * batch, -1) @ wi + b).reshape(t_len, batch, 4 * hidden)

        def step(carry, z_t):
            h, c = carry
            z = z_t + h @ wh
            i, f, g, o = jnp.split(z, 4, axis=-1)  # PyTorch's gate order, as nn.LSTMCell
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        zeros = jnp.zeros((batch, hidden), x.dtype)
        return jax.lax.scan(step, (zeros, zeros), xz)[1]

    fwd = jax.jit(forward)
    vg = jax.jit(jax.value_and_grad(lambda w: jnp.mean(forward(*w, x) ** 2)))
    jw, jx = [jnp.asarray(a) for a in (wi, wh, b)], jnp.asarray(x)

    def run_vg():
        value, grads = jax.block_until_ready(vg(jw))
        return [np.asarray(value)] + [np.asarray(g) for g in grads]

    return lambda: [np.asarray(jax.block_until_ready(fwd(*jw, jx)))], run_vg


workloads.WORKLOADS.setdefault("lstm", lstm_workload)


def run_memory(args, libs) -> dict:
    """Peak traced bytes of each variant's ``grad``, against the activations it must keep."""
    case = workloads.memory(args.tiny, libs)
    kept = case.kept_bytes
    print(
        f"grad through {case.n_layers} layers of tanh(x @ W), d {case.d}, batch {case.batch}, "
        f"float32: activations to keep {kept / 2**20:.2f} MiB ({case.n_layers} x "
        f"{case.batch}x{case.d})"
    )
    results = [v.run() for v in case.variants]  # warm-up (jit compiles) and check
    notes = _check(case.variants, results, 1e-4)
    print(f"  {'variant':36s} {'peak MiB':>9s} {'/ kept':>7s} {'time':>11s}  check")
    peaks = {}
    for v, note in zip(case.variants, notes):
        if v.prepare is not None:
            v.prepare()
        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        v.run()
        elapsed = time.perf_counter() - start  # slowed by tracemalloc; for scale only
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        peaks[v.name] = peak
        extra = f"; {v.note}" if v.note else ""
        print(
            f"  {v.name:36s} {peak / 2**20:9.2f} {peak / kept:7.2f} {_fmt_time(elapsed)}  {note}{extra}"
        )
    print("  (time under tracemalloc, one call: for scale only)")
    return {"peaks": peaks, "kept": kept}


# ------------------------------------------------------------------------ fused


def _fused_cases(tiny: bool) -> list:
    """(name, function, args) of the elementwise rows of ``fused``: each function
    ``f(xp, *xs)`` is written once over a numpy-like namespace (numpy for the floor,
    fgrad.numpy, jax.numpy)."""
    rng = np.random.default_rng(0)
    n, shape = (4096, (64, 128)) if tiny else (1_000_000, (4096, 1024))
    v = rng.standard_normal(n).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    gain, bias = (rng.standard_normal(shape[-1]).astype(np.float32) for _ in range(2))
    c, a, eps = np.float32(np.sqrt(2.0 / np.pi)), np.float32(0.044715), np.float32(1e-5)

    def gelu(xp, x):  # the tanh form; Python floats are weak: float32 throughout
        return 0.5 * x * (1.0 + xp.tanh(c * (x + a * x * x * x)))

    def ln(xp, x, g, b):
        d = x - xp.mean(x, axis=-1, keepdims=True)
        return d / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + eps) * g + b

    return [
        (f"exp f32[{n}]", lambda xp, v: xp.exp(v), (v,)),
        (f"tanh f32[{n}]", lambda xp, v: xp.tanh(v), (v,)),
        (f"gelu f32{list(shape)}", gelu, (x,)),
        (f"layer-norm f32{list(shape)}", ln, (x, gain, bias)),
    ]


def _jax_case(jax, f: Callable, xs: tuple) -> Callable:
    """``f(jax.numpy, *xs)`` under ``jax.jit``, as a variant (results as numpy arrays)."""
    import jax.numpy as jnp

    jf, jxs = jax.jit(lambda *a: f(jnp, *a)), [jnp.asarray(x) for x in xs]
    return lambda: [np.asarray(jax.block_until_ready(jf(*jxs)))]


def _first_call(on: bool, fn: Callable) -> tuple[Callable, float, list]:
    """``fn`` run once with ``config.cpu_compile`` set to ``on`` (where jit traces and
    compiles); returns ``fn``, the seconds that call took and its results."""
    before = fgrad.config.cpu_compile
    fgrad.config.cpu_compile = on
    try:
        start = time.perf_counter()
        out = fn()
        return fn, time.perf_counter() - start, out
    finally:
        fgrad.config.cpu_compile = before


def run_fused(args, libs) -> dict:
    """jit with numba-fused elementwise groups (on) and without (off), against numpy, and
    JAX's jit when it imports."""
    from fgrad.transforms import cpu_compile

    if not cpu_compile.available():
        print("  numba is not installed: nothing to compare")
        return {}
    import llvmlite
    import numba

    import fgrad.numpy as fnp

    jax = libs.get("jax")
    print(f"  numba {numba.__version__}, llvmlite {llvmlite.__version__}; kernels cached in "
          f"{cpu_compile._cache_dir()}"
          + (f"; jax {jax.__version__}" if jax is not None else "; jax not installed: no JAX column"))
    rows = []
    for name, f, xs in _fused_cases(args.tiny):
        on = fgrad.jit(lambda *a, f=f: f(fnp, *a))
        off = fgrad.jit(lambda *a, f=f: f(fnp, *a))
        rows.append((name, lambda f=f, xs=xs: [f(np, *xs)],
                     lambda on=on, xs=xs: [np.asarray(on(*xs))],
                     lambda off=off, xs=xs: [np.asarray(off(*xs))],
                     None if jax is None else _jax_case(jax, f, xs), 1e-5))
    for name in ("mlp", "transformer"):
        wl_on, wl_off = (workloads.WORKLOADS[name](args.tiny, {}) for _ in range(2))
        pick = {v.name: v.run for v in wl_on.variants}, {v.name: v.run for v in wl_off.variants}
        jax_run = None
        if jax is not None:
            peers = workloads.WORKLOADS[name](args.tiny, {"jax": jax}).variants
            jax_run = next(v.run for v in peers if v.name == "jax jit")
        rows.append((name, pick[0]["numpy"], pick[0]["fgrad jit"], pick[1]["fgrad jit"], jax_run,
                     wl_on.rtol))
    found: dict = {}
    rounds = 2 if args.quick else 4
    print(f"  {'workload':28s} {'numpy':>11s} {'first call on / off / jax':>26s} "
          f"{'jit on / floor':>16s} {'jit off / floor':>16s} {'jax / floor':>14s}")
    for name, floor, on, off, jax_run, rtol in rows:
        want = floor()
        _, t_on, got_on = _first_call(True, on)
        _, t_off, got_off = _first_call(False, off)
        runs, results = [floor, on, off], [want, got_on, got_off]
        t_jax = float("nan")
        if jax_run is not None:
            start = time.perf_counter()
            results.append(jax_run())  # JAX traces and compiles on its first call
            t_jax = time.perf_counter() - start
            runs.append(jax_run)
        _check([workloads.Variant(k, r) for k, r in zip(("numpy", "on", "off", "jax"), runs)],
               results, rtol)
        ratios: dict = {"on": [], "off": [], "jax": []}
        floors = []
        for _ in range(rounds):
            times = best_times(runs, args)
            floors.append(times[0])
            for key, t in zip(("on", "off", "jax"), times[1:]):
                ratios[key].append(t / times[0])
        found[name] = {**ratios, "floor": min(floors), "first on": t_on, "first off": t_off,
                       "first jax": t_jax}

        def span(rs):
            return f"{min(rs):6.2f}-{max(rs):<6.2f}" if rs else f"{'-':>13s}"

        print(f"  {name:28s} {_fmt_time(min(floors))} {t_on:7.2f} / {t_off:5.2f} / {t_jax:5.2f} s"
              f"   {span(ratios['on'])}   {span(ratios['off'])}   {span(ratios['jax'])}")
    return found


def _tune_malloc() -> str:
    """Ask glibc's malloc to keep freed memory (no trimming, no mmap for big blocks).

    Then fresh arrays reuse pages already mapped instead of faulting new ones in, which
    takes page faults out of every variant's time alike (numpy floor included)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
        ok = libc.mallopt(m_trim_threshold, 1 << 30) and libc.mallopt(m_mmap_threshold, 1 << 25)
    except (OSError, AttributeError):
        ok = False
    return "malloc tuned (no trim, mmap threshold 32 MiB)" if ok else "malloc tuning unavailable"


def _budget(args) -> tuple[float, int]:
    if args.tiny:
        return 0.001, 2
    return (0.05, 3) if args.quick else (0.3, 7)


def _set_threads(n: int | None, libs: dict) -> str:
    """Limit BLAS (through threadpoolctl when present), numba's parallel loops (the
    compiled backend's) and torch to ``n`` threads."""
    said = []
    if n is not None:
        tpc = workloads._try_import("threadpoolctl")
        if tpc is not None:
            tpc.threadpool_limits(n)
            said.append(f"BLAS limited to {n} thread(s)")
        elif os.environ.get("OPENBLAS_NUM_THREADS") != str(n):
            said.append("threadpoolctl missing: set OPENBLAS_NUM_THREADS before starting instead")
        numba = workloads._try_import("numba")
        if numba is not None:  # else a one-thread run timed fused kernels on every core
            numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
            said.append(f"numba limited to {numba.get_num_threads()} thread(s)")
    torch = libs.get("torch")
    if torch is not None:
        torch.set_num_threads(n or os.cpu_count() or 1)
    return "; ".join(said)


# One thread for XLA's CPU client, as JAX was measured when those targets were set: no Eigen thread pool for its
# kernels, one intra-op thread. XLA reads XLA_FLAGS once, when jax is first imported.
_XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _pin_xla(threads: int | None) -> str:
    """Set ``XLA_FLAGS`` for one thread when the run asks for one (``--threads 1``, or
    ``OPENBLAS_NUM_THREADS=1`` without ``--threads``), before jax is imported; what was
    done, for the header line."""
    one = threads == 1 if threads is not None else os.environ.get("OPENBLAS_NUM_THREADS") == "1"
    if not one:
        return ""
    flags = os.environ.get("XLA_FLAGS", "")
    if _XLA_ONE_THREAD not in flags:
        if "jax" in sys.modules:
            return "XLA not pinned to one thread: jax was imported before the runner"
        os.environ["XLA_FLAGS"] = f"{flags} {_XLA_ONE_THREAD}".strip()
    return f"XLA_FLAGS={os.environ['XLA_FLAGS']}"


def _versus(label: str, ours: float, theirs: float) -> str:
    verdict = "faster (met)" if ours < theirs else "slower (NOT met)"
    return f"  {label} = {ours / theirs:.2f}: {verdict}"


def summary(found: dict) -> None:
    """Which of the performance targets (benchmarks/README.md, "Targets") this run meets."""
    lines = []
    for name, limit in TARGETS.items():
        times = found.get(name)
        if times:
            ratio = times["fgrad jit"] / times["numpy"]
            met = "met" if ratio <= limit else "NOT met"
            lines.append(f"  {name} jit / numpy floor = {ratio:.2f} (target <= {limit}): {met}")
            floor_faults = times.get("faults: numpy", 0)
            if floor_faults >= 100 and floor_faults > 10 * times.get("faults: fgrad jit", 0):
                lines.append(
                    f"    (the floor paid {floor_faults:.0f} page faults per call, jit "
                    f"{times.get('faults: fgrad jit', 0):.0f}: its fresh arrays cost it time that "
                    "jit's reused buffers do not; --tune-malloc compares without them)"
                )
    for name in ("mlp", "transformer"):
        times = found.get(name) or {}
        if "autograd" in times:
            lines.append(
                _versus(f"{name} fgrad eager / autograd", times["fgrad eager"], times["autograd"])
            )
        if "torch eager" in times and name == "mlp":
            lines.append(
                _versus(f"{name} fgrad jit / torch eager", times["fgrad jit"], times["torch eager"])
            )
    hv = found.get("hvp")
    if hv:
        lines.append(
            f"  hvp / grad (fgrad eager) = {hv['hvp: fgrad eager'] / hv['grad: fgrad eager']:.2f}, "
            f"(fgrad jit) = {hv['hvp: fgrad jit'] / hv['grad: fgrad jit']:.2f}"
        )
        for group in ("grad", "hvp"):
            if f"{group}: autograd" in hv:
                lines.append(
                    _versus(
                        f"{group} fgrad eager / autograd",
                        hv[f"{group}: fgrad eager"],
                        hv[f"{group}: autograd"],
                    )
                )
    mem = found.get("memory")
    if mem:
        for name, ratio in ((k, v / mem["kept"]) for k, v in mem["peaks"].items()):
            if name == "numpy":
                continue
            met = "met" if ratio <= MEMORY_TARGET else "NOT met"
            lines.append(
                f"  memory {name}: peak / kept = {ratio:.2f} (target <= {MEMORY_TARGET}): {met}"
            )
    lines += _backend_lines(found)
    if lines:
        print("== targets (benchmarks/README.md)")
        print("\n".join(lines))


def _backend_lines(found: dict) -> list[str]:
    """The compiled backend's targets (``FUSED_TARGETS``, ``RK4_JAX``, ``RK4_SPEEDUP``) this run meets."""
    lines = []
    for row, r in (found.get("fused") or {}).items():
        limit = FUSED_TARGETS.get(row.split()[0])
        if limit is not None and r["on"]:
            met = "met" if min(r["on"]) <= limit else "NOT met"
            jax = f"; jax jit {min(r['jax']):.2f}" if r["jax"] else ""
            lines.append(f"  {row} jit + numba / numpy floor = {min(r['on']):.2f} (target <= "
                         f"{limit}{jax}): {met}")
    rk = found.get("rk4") or {}
    for tag in ("", " (64)"):
        ours, jax = rk.get(f"grad{tag}: fgrad jit + numba"), rk.get(f"grad{tag}: jax jit")
        plain = rk.get(f"grad{tag}: fgrad jit")
        if ours and jax:
            met = "met" if ours <= RK4_JAX * jax else "NOT met"
            lines.append(f"  rk4 grad{tag} jit + numba / jax jit = {ours / jax:.2f} (target <= "
                         f"{RK4_JAX}): {met}")
        if ours and plain:
            met = "met" if plain >= RK4_SPEEDUP * ours else "NOT met"
            lines.append(f"  rk4 grad{tag} jit (numpy calls) / jit + numba = {plain / ours:.0f} "
                         f"(target >= {RK4_SPEEDUP:.0f}): {met}")
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer, shorter repeats (a smoke test)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SECTIONS,
        default=list(SECTIONS),
        metavar="NAME",
        help=f"sections to run, of {', '.join(SECTIONS)}",
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with process CPU time, not wall time: steadier on a busy machine, but it "
        "adds up the time of all BLAS threads (use with OPENBLAS_NUM_THREADS=1)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS and torch threads (needs threadpoolctl for numpy's BLAS)",
    )
    parser.add_argument(
        "--tune-malloc",
        action="store_true",
        help="glibc: keep freed memory mapped, so no variant pays page faults for new arrays",
    )
    parser.add_argument("--tiny", action="store_true", help="tiny problem sizes (the test suite)")
    parser.add_argument("--no-peers", action="store_true", help="leave PyTorch, autograd, JAX out")
    parser.add_argument(
        "--cpu-compile",
        choices=("on", "off"),
        default=None,
        help="fgrad.config.cpu_compile for the whole run (default: fgrad's, on); the rk4, "
        "lstm and fused sections time both settings side by side whatever this says",
    )
    args = parser.parse_args(argv)

    xla = "" if args.no_peers else _pin_xla(args.threads)
    libs = {} if args.no_peers else workloads.peers()
    threads = "; ".join(filter(None, [_set_threads(args.threads, libs), xla]))
    if args.tune_malloc:
        threads = "; ".join(filter(None, [threads, _tune_malloc()]))
    before = fgrad.config.cpu_compile
    if args.cpu_compile is not None:
        fgrad.config.cpu_compile = args.cpu_compile == "on"
    print("\n".join(op_overhead.machine_info()))
    versions = ", ".join(f"{k} {getattr(m, '__version__', '?')}" for k, m in libs.items())
    missing = [] if args.no_peers else [k for k in workloads.PEERS if k not in libs]
    print(
        f"peers: {versions or 'none'}"
        + (f" ({', '.join(missing)} not importable: left out)" if missing else "")
        + f"; clock: {'process CPU time' if args.cpu_time else 'wall time'}"
        f"; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
        f"; fgrad.config.cpu_compile={fgrad.config.cpu_compile}"
        + (f"; {threads}" if threads else "")
    )
    try:
        return _run_sections(args, libs)
    finally:
        fgrad.config.cpu_compile = before


def _run_sections(args, libs) -> dict:
    found = {}
    for name in args.only:
        print(f"\n== {name}")
        if name == "op":
            found[name] = run_op(args, libs)
            _set_threads(args.threads, libs)  # op_overhead sets torch's threads itself
        elif name == "memory":
            found[name] = run_memory(args, libs)
        elif name == "fused":
            found[name] = run_fused(args, libs)
        else:
            found[name] = run_timed(name, args, libs)
        sys.stdout.flush()
    print()
    summary(found)
    return found


if __name__ == "__main__":
    main()
