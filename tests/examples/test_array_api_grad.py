"""examples/array_api_grad.py as a user runs it: a fresh interpreter, SCIPY_ARRAY_API unset.

A subprocess because scikit-learn's Array API mode needs ``SCIPY_ARRAY_API=1`` before scipy
is imported, which the script sets and this test process (where scipy is loaded) cannot.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("array_api_compat")
pytest.importorskip("array_api_extra")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _number(pattern: str, text: str) -> list[float]:
    match = re.search(pattern, text)
    assert match, (pattern, text)
    return [float(g) for g in match.groups()]


def test_array_api_grad_example():
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    env.update(PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "array_api_grad.py")],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )
    out = run.stdout
    assert run.returncode == 0, run.stderr[-3000:]  # check_grads inside raises on a mismatch
    # scikit-learn on Tensors gives numpy's numbers (PCA scores, rbf_kernel).
    pca, kernel = _number(r"= ([\d.e+-]+) \(scores\), ([\d.e+-]+) \(rbf_kernel\)", out)
    assert pca < 1e-12 and kernel < 1e-14
    # The gradient through rbf_kernel: its directional derivative is the central
    # difference, and one step of size n / (2 gamma) is the mean-shift update.
    directional, fd = _number(r"<grad, u> = ([\d.e+-]+), finite difference ([\d.e+-]+)", out)
    assert abs(directional - fd) < 1e-6 and abs(directional) > 0.1
    (step,) = _number(r"mean-shift update in numpy\| = ([\d.e+-]+)", out)
    assert step < 1e-12
    start, end, own = _number(r"steps: ([\d.e+-]+) -> ([\d.e+-]+) \(versicolor's own points: ([\d.e+-]+)\)", out)
    assert start < -4.0 and end > own  # the points reached versicolor's modes
    (cov,) = _number(r"closed form\| = ([\d.e+-]+)", out)
    assert cov < 1e-10
