"""Per-op overhead of fgrad against a hand-written numpy floor, measured in one run.

For each op and array size the table gives the time of one call (best of several
repeats, in microseconds) and the ratio fgrad / numpy:

* ``eager``: the op alone (``x + y``, ``fnp.exp(x)``, ...) against the numpy call.
* ``grad``: ``fgrad.grad(lambda x: fnp.sum(op(x, y)))(x)`` against the same forward and
  backward pass written by hand in numpy (forward op, sum, ones as the seed cotangent,
  the op's derivative rule).

On small arrays the ratio is fgrad's Python overhead (the budget, benchmarks/README.md:
at most about 1 us per untraced op); on 1e6 elements it should be ~1. Peers (torch, autograd, jax) are
added as extra columns when they import. Speed is measured here, never asserted in tests.

Usage:
    python benchmarks/op_overhead.py            # full run, about a minute
    python benchmarks/op_overhead.py --quick    # fewer repeats, for a smoke test
    python benchmarks/op_overhead.py --sizes 16 --ops add exp
    python benchmarks/op_overhead.py --cpu-time # steadier while other jobs run
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import platform
import sys
import time
import timeit
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fgrad
import fgrad.numpy as fnp

# ------------------------------------------------------------------------ the cases
# Each case: how to make inputs of about n elements, the numpy op, the fgrad op, and the
# numpy backward pass of sum(op(x, y)) with respect to x, given the cotangent ``ct`` of
# the output (ones, broadcast without a copy, as fgrad's sum rule does) and the forward
# output ``out``.


def _vectors(n, rng):
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def _matrices(n, rng):
    k = max(1, math.isqrt(n))  # (4, 4) for 16 elements, (1000, 1000) for 1e6
    return (
        rng.standard_normal((k, k)).astype(np.float32),
        rng.standard_normal((k, k)).astype(np.float32),
    )


CASES: dict[str, dict] = {
    "add": dict(
        inputs=_vectors,
        numpy=np.add,
        fgrad=lambda x, y: x + y,
        backward=lambda ct, out, x, y: ct,
    ),
    "multiply": dict(
        inputs=_vectors,
        numpy=np.multiply,
        fgrad=lambda x, y: x * y,
        backward=lambda ct, out, x, y: ct * y,
    ),
    "exp": dict(
        inputs=_vectors,
        numpy=lambda x, y: np.exp(x),
        fgrad=lambda x, y: fnp.exp(x),
        backward=lambda ct, out, x, y: ct * out,
    ),
    "tanh": dict(
        inputs=_vectors,
        numpy=lambda x, y: np.tanh(x),
        fgrad=lambda x, y: fnp.tanh(x),
        backward=lambda ct, out, x, y: ct * (1 - out * out),
    ),
    "sum": dict(
        inputs=_vectors,
        numpy=lambda x, y: np.sum(x),
        fgrad=lambda x, y: fnp.sum(x),
        backward=lambda ct, out, x, y: np.broadcast_to(ct, x.shape),
    ),
}
if hasattr(fnp, "matmul"):
    CASES["matmul"] = dict(
        inputs=_matrices,
        numpy=np.matmul,
        fgrad=lambda x, y: fnp.matmul(x, y),
        backward=lambda ct, out, x, y: ct @ y.T,
    )

# Direct calls for the eager column, so that the numpy side has no lambda frame either.
_EAGER_NUMPY = {
    "add": lambda x, y: (np.add, (x, y)),
    "multiply": lambda x, y: (np.multiply, (x, y)),
    "exp": lambda x, y: (np.exp, (x,)),
    "tanh": lambda x, y: (np.tanh, (x,)),
    "sum": lambda x, y: (np.sum, (x,)),
    "matmul": lambda x, y: (np.matmul, (x, y)),
}


def _eager_fgrad(name, x, y):
    table = {
        "add": (type(x).__add__, (x, y)),  # what ``x + y`` runs
        "multiply": (type(x).__mul__, (x, y)),
        "exp": (fnp.exp, (x,)),
        "tanh": (fnp.tanh, (x,)),
        "sum": (fnp.sum, (x,)),
        "matmul": (getattr(fnp, "matmul", None), (x, y)),
    }
    return table[name]


def numpy_grad(case):
    op, backward = case["numpy"], case["backward"]

    def f(x, y):
        out = op(x, y)
        total = np.sum(out)
        ct = np.broadcast_to(np.ones_like(total), np.shape(out))  # sum's cotangent, no copy
        return backward(ct, out, x, y)

    return f


def fgrad_grad(case):
    op = case["fgrad"]
    return lambda x, y: fgrad.grad(lambda x: fnp.sum(op(x, y)))(x)


# ------------------------------------------------------------------------ peers


def _try_import(name):
    try:
        return importlib.import_module(name)
    except Exception:  # not installed, or broken: leave the column out
        return None


def _numpy_like(mod):
    """The benchmark's ops from a numpy-like namespace (torch, autograd.numpy, jax.numpy)."""
    return {
        "add": mod.add,
        "multiply": mod.multiply,
        "exp": lambda x, y: mod.exp(x),
        "tanh": lambda x, y: mod.tanh(x),
        "sum": lambda x, y: mod.sum(x),
        "matmul": mod.matmul,
    }


def _peers():
    """Columns for the libraries that import: name -> (eager(case), grad(case), convert)."""
    peers = {}
    torch = _try_import("torch")
    if torch is not None:
        torch.set_num_threads(os.cpu_count() or 1)
        t_ops = _numpy_like(torch)  # torch.multiply is torch.mul

        def torch_grad(name):
            op = t_ops[name]

            def f(x, y):
                x = x.detach().requires_grad_(True)
                op(x, y).sum().backward()
                return x.grad

            return f

        peers["torch"] = (lambda name: t_ops[name], torch_grad, torch.from_numpy)
    ag = _try_import("autograd")
    if ag is not None:
        anp = importlib.import_module("autograd.numpy")
        a_ops = _numpy_like(anp)

        def autograd_grad(name):
            op = a_ops[name]
            return lambda x, y: ag.grad(lambda x: anp.sum(op(x, y)))(x)

        peers["autograd"] = (lambda name: a_ops[name], autograd_grad, lambda a: a)
    jax = _try_import("jax")
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        j_ops = _numpy_like(jnp)

        def jax_eager(name):
            op = j_ops[name]
            return lambda x, y: op(x, y).block_until_ready()

        def jax_grad(name):  # eager (un-jitted) grad, as fgrad's
            op = j_ops[name]
            return lambda x, y: jax.grad(lambda x: jnp.sum(op(x, y)))(x).block_until_ready()

        peers["jax"] = (jax_eager, jax_grad, jnp.asarray)
    return peers


# ------------------------------------------------------------------------ timing


def best_times(
    calls: list[tuple[Callable, tuple]], min_seconds: float, repeat: int, clock=time.perf_counter
) -> list:
    """Seconds per call of each ``(fn, args)``, best of ``repeat`` batches.

    Each batch lasts about ``min_seconds``; the functions take turns batch by batch, so a
    burst of load from other processes hits all of them alike and the ratios stay fair.
    """
    timers, numbers = [], []
    for fn, args in calls:
        timer = timeit.Timer(lambda fn=fn, args=args: fn(*args), timer=clock)
        number = 1
        while True:  # timeit's autorange, with our own target duration
            elapsed = timer.timeit(number)
            if elapsed >= min_seconds:
                break
            number = max(number * 2, int(number * min_seconds / max(elapsed, 1e-9) * 1.2))
        timers.append(timer)
        numbers.append(number)
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, (timer, number) in enumerate(zip(timers, numbers)):
            best[i] = min(best[i], timer.timeit(number) / number)
    return best


def machine_info() -> list[str]:
    lines = [
        f"python {platform.python_version()}, numpy {np.__version__}, fgrad {fgrad.__version__}",
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
    ]
    tpc = _try_import("threadpoolctl")
    if tpc is not None:
        for pool in tpc.threadpool_info():
            lines.append(
                f"BLAS: {pool.get('internal_api')} {pool.get('version')} "
                f"({pool.get('threading_layer')}, {pool.get('num_threads')} threads, "
                f"{pool.get('architecture')})"
            )
    else:
        try:
            blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            lines.append(f"BLAS: {blas.get('name')} {blas.get('version')}")
        except Exception:  # old numpy without mode="dicts"
            pass
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 1_000_000])
    parser.add_argument("--ops", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--modes", nargs="+", default=["eager", "grad"], choices=["eager", "grad"])
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with process CPU time instead of wall time: steadier on a busy machine, "
        "but it adds up the time of all BLAS threads",
    )
    parser.add_argument("--no-peers", action="store_true", help="leave PyTorch, autograd, JAX out")
    parser.add_argument(
        "--no-header", action="store_true", help="no machine lines (run.py prints its own)"
    )
    args = parser.parse_args(argv)
    min_seconds, repeat = (0.01, 3) if args.quick else (0.05, 9)

    peers = {} if args.no_peers else _peers()
    if not args.no_header:
        print("\n".join(machine_info()))
    clock = time.process_time if args.cpu_time else time.perf_counter
    kind = "CPU" if args.cpu_time else "wall"
    print(f"float32 inputs; {kind} time in us per call (best of {repeat}); ratio = fgrad / numpy")
    header = f"{'op':9s} {'n':>9s} {'mode':5s} {'numpy':>10s} {'fgrad':>10s} {'ratio':>6s}"
    for name in peers:
        header += f" {name:>10s} {'ratio':>6s}"
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for name in args.ops:
        case = CASES[name]
        for n in args.sizes:
            a, b = case["inputs"](n, rng)
            x, y = fgrad.asarray(a), fgrad.asarray(b)
            size = a.size if name != "matmul" else f"{a.shape[0]}x{a.shape[1]}"
            for mode in args.modes:
                if mode == "eager":
                    np_fn, np_args = _EAGER_NUMPY[name](a, b)
                    fg_fn, fg_args = _eager_fgrad(name, x, y)
                else:
                    np_fn, np_args = numpy_grad(case), (a, b)
                    fg_fn, fg_args = fgrad_grad(case), (x, y)
                calls = [(np_fn, np_args), (fg_fn, fg_args)]
                for eager, grad_of, convert in peers.values():
                    fn = eager(name) if mode == "eager" else grad_of(name)
                    calls.append((fn, (convert(a), convert(b))))
                t_np, t_fg, *t_peers = best_times(calls, min_seconds, repeat, clock)
                row = f"{name:9s} {size!s:>9s} {mode:5s} {t_np * 1e6:10.2f} {t_fg * 1e6:10.2f}"
                row += f" {t_fg / t_np:6.2f}"
                for t_peer in t_peers:
                    row += f" {t_peer * 1e6:10.2f} {t_peer / t_np:6.2f}"
                print(row, flush=True)


if __name__ == "__main__":
    main()
