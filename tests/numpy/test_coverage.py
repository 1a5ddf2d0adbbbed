"""How much of the numpy ∩ jax.numpy function list fgrad.numpy has (issue: at least 95%).

The list is stored (tests/numpy/numpy_jax_shared.txt) because jax is not a test dependency;
numpy's side is checked at run time, so a name numpy drops stops counting.
"""

from pathlib import Path

import numpy as np

import fgrad.numpy as fnp

SHARED = [
    line.strip()
    for line in (Path(__file__).parent / "numpy_jax_shared.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
TARGET = 0.95  # the goal; 343 of 343 (100%) when set


def test_coverage_of_the_shared_list():
    shared = [n for n in SHARED if hasattr(np, n)]
    missing = [n for n in shared if not hasattr(fnp, n)]
    coverage = 1 - len(missing) / len(shared)
    print(f"fgrad.numpy has {len(shared) - len(missing)} of {len(shared)} ({coverage:.1%}); missing: {' '.join(missing)}")
    assert coverage >= TARGET, missing
