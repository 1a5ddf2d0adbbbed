"""Smoke test of benchmarks/run.py: every section runs, on tiny sizes, and its variants
agree with the numpy floor. No timing is asserted (speed is a benchmark, never a unit test)."""

import importlib.util
import pathlib
import re
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
    if importlib.util.find_spec("jax") is not None:  # JAX's rows ran and matched the floor
        if section in ("mlp", "transformer", "lstm"):
            assert any(name.endswith("jax jit") for name in found[section])
        if section == "rk4":
            assert {"grad: jax jit", "grad (8): jax jit"} <= set(found[section])
        if section == "fused":
            assert all(row["jax"] for row in found[section].values())


def test_jax_rows_are_left_out_when_jax_does_not_import(run_module, monkeypatch, capsys):
    real = run_module.workloads._try_import
    monkeypatch.setattr(
        run_module.workloads, "_try_import", lambda name: None if name == "jax" else real(name)
    )
    found = run_module.main(["--quick", "--tiny", "--only", "rk4", "lstm", "fused"])
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("peers:"))
    assert re.search(r"\(([^)]*\b)?jax not importable: left out\)", header), header
    for section in ("rk4", "lstm"):
        assert {"numpy", "fgrad jit"} & {n.split(": ")[-1] for n in found[section]}
        assert not [name for name in found[section] if "jax" in name]
    assert found["fused"] and all(row["jax"] == [] for row in found["fused"].values())

