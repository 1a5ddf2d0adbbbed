"""fgrad.distributed on 2 MPI ranks: all_sum bandwidth, data-parallel step time, bucket overhead.

``python benchmarks/distributed.py`` starts the workers itself (``mpirun -n 2`` and one
process alone, one BLAS thread each) and prints, in one run:

* ``all_sum`` of float32 numpy buffers from 8 B to 16 MiB: time per call and bandwidth
  (algorithm bandwidth ``bytes / t``; bus bandwidth ``2 (n - 1) / n * bytes / t``, NCCL's
  measure), with the shape/dtype check on and off, and a bare in-place ``Allreduce``;
* the digits MLP's jitted data-parallel step: 1 process with batch 2B against 2 ranks with
  batch B each (the same global batch), as a ratio;
* ``average_gradients`` of the MLP's gradients (6 leaves, 335 KiB) against one bare
  ``Allreduce`` of the same bytes.

``--quick`` runs fewer repetitions. ``--mpirun "mpirun -n 2 ..."`` replaces the launcher
(the default, for Open MPI, adds ``--oversubscribe``, ``--mca mpi_yield_when_idle 1`` and,
as root, ``--allow-run-as-root``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SIZES = [8, 64, 512, 4096, 32768, 262144, 2097152, 16777216]  # bytes


def _median_time(fn, reps: int, barrier) -> float:
    times = []
    for _ in range(reps):
        barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def worker(quick: bool) -> dict:
    sys.path.insert(0, str(ROOT / "examples"))
    import fgrad
    from fgrad import distributed as dist
    from fgrad import optim

    g = dist.init()
    out: dict = {"size": g.size}
    if g.size > 1:
        from mpi4py import MPI

        comm = g.comm
        rows = []
        for nbytes in SIZES:
            buf = np.ones(nbytes // 4, dtype=np.float32)
            reps = max(5, min(200, (20 if quick else 100) * 4096 // max(nbytes, 4096)))
            bare = _median_time(lambda: comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM), reps, g.barrier)
            checked = _median_time(lambda: g.all_sum(buf, inplace=True), reps, g.barrier)
            g.check = False
            unchecked = _median_time(lambda: g.all_sum(buf, inplace=True), reps, g.barrier)
            fresh = _median_time(lambda: g.all_sum(buf), reps, g.barrier)
            g.check = True
            rows.append({"bytes": nbytes, "bare": bare, "checked": checked, "unchecked": unchecked, "fresh": fresh})
        out["allreduce"] = rows

    # The digits MLP step: global batch 128 on every configuration.
    import data_parallel
    import digits

    x_train, _, y_train, _ = digits.load_data(0)
    model = digits.make_model("mlp")
    steps = 40 if quick else 150
    _, _, seconds = data_parallel.train(
        model, optim.adamw(1e-3), (x_train, y_train), batch_size=128 // g.size, steps=steps, group=g
    )
    out["step_s"] = seconds / (steps - 1)

    # average_gradients against one bare Allreduce of the same bytes.
    params = model.init(fgrad.random.key(0))
    leaves = fgrad.tree.leaves(params)
    nbytes = sum(leaf.size * 4 for leaf in leaves)
    buf = np.ones(nbytes // 4, dtype=np.float32)
    reps = 30 if quick else 200
    if g.size > 1:
        bare = _median_time(lambda: g.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM), reps, g.barrier)
    else:
        bare = _median_time(lambda: g.all_sum(buf, inplace=True), reps, g.barrier)
    avg = _median_time(lambda: dist.average_gradients(params), reps, g.barrier)
    g.check = False
    avg_unchecked = _median_time(lambda: dist.average_gradients(params), reps, g.barrier)
    g.check = True
    out["average"] = {"bytes": nbytes, "leaves": len(leaves), "bare": bare, "checked": avg, "unchecked": avg_unchecked}
    if g.rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    return out


def _launcher(n: int, given: str | None) -> list[str]:
    if given:
        return shlex.split(given)
    exe = shutil.which("mpirun") or shutil.which("mpiexec")
    if exe is None:
        raise SystemExit("no mpirun/mpiexec on the PATH: pip install 'fgrad[distributed]'")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    cmd = [exe, "-n", str(n)]
    if "Open MPI" in version:
        # Ranks that busy-poll share the cores with each other (and anything else running):
        # yielding when idle keeps a waiting rank from holding a core it does not use.
        cmd += ["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
        cmd += ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return cmd


def _run(cmd: list[str]) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mpirun", default=None)
    args = parser.parse_args(argv)
    flags = ["--quick"] if args.quick else []
    if args.worker:
        return worker(args.quick)
    me = [sys.executable, "-m", "mpi4py", str(pathlib.Path(__file__).resolve()), "--worker", *flags]
    one = _run([sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", *flags])
    two = _run(_launcher(2, args.mpirun) + me)

    print("== all_sum of float32 numpy buffers, 2 ranks (median us per call; GB/s)")
    print(f"{'bytes':>10} {'bare Allreduce':>15} {'all_sum':>9} {'no check':>9} {'new array':>10} {'algbw':>7} {'busbw':>7}")
    for r in two["allreduce"]:
        t = r["unchecked"]
        print(
            f"{r['bytes']:>10} {r['bare'] * 1e6:>15.1f} {r['checked'] * 1e6:>9.1f} {t * 1e6:>9.1f} "
            f"{r['fresh'] * 1e6:>10.1f} {r['bytes'] / t / 1e9:>7.3f} {r['bytes'] / t / 1e9:>7.3f}"
        )  # busbw = 2 (n-1)/n * algbw = algbw for n = 2
    print("\n== digits MLP (64-256-256-10), jitted AdamW step, global batch 128")
    print(f"1 process, batch 128: {one['step_s'] * 1e3:.2f} ms/step")
    print(f"2 ranks, batch 64 each: {two['step_s'] * 1e3:.2f} ms/step")
    print(f"speed-up (1-process time / 2-rank time): {one['step_s'] / two['step_s']:.2f}x")
    a = two["average"]
    print(f"\n== average_gradients of the MLP's gradients ({a['leaves']} leaves, {a['bytes']} bytes), 2 ranks")
    print(f"bare Allreduce of {a['bytes']} bytes: {a['bare'] * 1e6:.1f} us")
    print(f"average_gradients: {a['checked'] * 1e6:.1f} us ({a['checked'] / a['bare']:.2f}x), without the check "
          f"{a['unchecked'] * 1e6:.1f} us ({a['unchecked'] / a['bare']:.2f}x)")
    return {"one": one, "two": two}


if __name__ == "__main__":
    main()
