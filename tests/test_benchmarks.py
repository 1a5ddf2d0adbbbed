"""Smoke test of benchmarks/run.py: every section runs, on tiny sizes, and its variants
agree with the numpy floor. No timing is asserted (speed is a benchmark, never a unit test)."""

import importlib.util
import pathlib
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def run_module():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("fgrad_benchmarks_run", BENCHMARKS / "run.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("section", ["op", "mlp", "transformer", "hvp", "memory", "rk4", "lstm", "fused"])
def test_runner_section_runs_on_tiny_sizes(run_module, section, capsys):
    found = run_module.main(["--quick", "--tiny", "--only", section])
    out = capsys.readouterr().out
    assert f"== {section}" in out
    if section in ("mlp", "transformer"):
        # Every variant ran and matched the floor (run.py raises when one does not).
        assert {"numpy", "fgrad eager", "fgrad jit"} <= set(found[section])
    if section == "hvp":
        assert "hvp / grad" in out
    if section == "memory":
        assert set(found["memory"]["peaks"]) >= {"numpy", "fgrad eager", "fgrad jit"}
