"""Smoke test of benchmarks/llm.py on a tiny GGUF file: both fgrad rows run, give the same
greedy tokens, and the bound columns are computed (peers left out)."""

import importlib.util
import pathlib

import pytest

BENCHMARK = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "llm.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("fgrad_benchmarks_llm", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_copy_bandwidth_is_measured_with_threads(bench):
    assert bench.bandwidth_gbs(1 << 22) > 0 and bench.bandwidth_gbs(1 << 22, threads=2) > 0


def test_the_fgrad_rows_run_on_a_tiny_file(bench, tiny_llama_gguf, capsys):
    rows = bench.main([tiny_llama_gguf, "--threads", "1", "--decode", "3", "--prompt-tokens", "8",
                       "--repeats", "1", "--no-torch"])
    assert [r[0] for r in rows] == ["fgrad float32", "fgrad quantized", "fgrad quantized, int8 act"]
    for name, prefill, decode, nbytes, pct, same in rows:
        assert prefill > 0 and decode > 0 and nbytes > 0 and pct > 0, name
        assert same or "int8" in name, name  # rounded activations may pick other tokens
    assert "% of f32 bound" in capsys.readouterr().out
