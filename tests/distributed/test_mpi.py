"""The distributed checks on 2 and 4 MPI ranks (``mpi_checks.py``), started by ``mpirun``.

Skipped when mpi4py or an MPI launcher is missing (``pip install "fgrad[distributed]"``
installs both: mpi4py and the Open MPI wheel, whose ``mpirun`` is on the PATH). Every run
is under a timeout, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]


def _launcher() -> list[str]:
    pytest.importorskip("mpi4py")
    exe = shutil.which("mpirun") or shutil.which("mpiexec")
    if exe is None:
        pytest.skip("no mpirun/mpiexec on the PATH")
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip(f"{exe} --version did not answer")
    cmd = [exe]
    if "Open MPI" in version:
        # Open MPI refuses root (containers, CI) and more ranks than cores without these.
        # (yielding when idle: ranks waiting in a collective leave the shared cores to others)
        cmd += ["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
        cmd += ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return cmd


def _run(n: int, script: pathlib.Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [*_launcher(), "-n", str(n), sys.executable, "-m", "mpi4py", str(script), *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{' '.join(cmd)} ran past {timeout} s (a hang?):\n{err.stdout}\n{err.stderr}")


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_named_axes_gradients_and_training_on_n_ranks(n):
    proc = _run(n, HERE / "mpi_checks.py", "--train", "--size", str(n))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for r in range(n):
        assert f"OK rank {r} of {n}" in proc.stdout, proc.stdout + proc.stderr


def test_an_exception_on_one_rank_ends_the_job(tmp_path):
    """Under ``python -m mpi4py`` an uncaught exception aborts every rank: rank 0, waiting
    in a collective that rank 1 never joins, does not hang."""
    script = tmp_path / "fail.py"
    script.write_text(
        "import numpy as np\n"
        "from fgrad import distributed as dist\n"
        "g = dist.init()\n"
        "if g.rank == 1:\n"
        "    raise RuntimeError('rank 1 fails')\n"
        "dist.all_sum(np.ones(3))\n"
    )
    proc = _run(2, script, timeout=60)
    assert proc.returncode != 0
    assert "rank 1 fails" in proc.stderr
