"""python -m fgrad.llm generate: streams the text, ends with the speeds; errors exit 2."""

import subprocess
import sys

from fgrad.llm.__main__ import main


def test_generate_streams_and_reports_speed(tiny_llama_gguf, capsys):
    assert main(["generate", tiny_llama_gguf, "--prompt", " the cat", "--max-tokens", "5"]) == 0
    out, err = capsys.readouterr()
    assert out.endswith("\n") and len(out) > 1
    assert "prompt: 4 tokens" in err and "tokens/s" in err and "decode:" in err
    assert "(first run: includes tracing; steady state: benchmarks/llm.py)" in err


def test_speeds_only_where_measured(tiny_llama_gguf, capsys):
    # --max-tokens 0 prefills nothing: no rate (it was 4 / 1e-9 = 4000000000.0 tokens/s)
    assert main(["generate", tiny_llama_gguf, "--prompt", " the cat", "--max-tokens", "0"]) == 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == "prompt: 4 tokens; decode: 0 tokens"
    # one token comes from the prefill: the prompt is timed, no decode step ran
    assert main(["generate", tiny_llama_gguf, "--prompt", " the cat", "--max-tokens", "1"]) == 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("prompt: 4 tokens, ") and err.count("tokens/s") == 1
    assert "decode: 0 tokens (first run: includes tracing" in err


def test_help_explains_the_options_and_the_speeds(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for words in ("keep the K most likely", "sum to P", "at least M times", "CTRL's penalty",
                  "generated so far", "seed of the random key", "include tracing",
                  "benchmarks/llm.py"):
        assert words in out, words


def test_chat_and_sampling_options(tiny_llama_gguf, capsys):
    args = ["generate", tiny_llama_gguf, "--prompt", "hi", "--chat", "--max-tokens", "4",
            "--temperature", "0.8", "--top-p", "0.9", "--top-k", "40", "--seed", "1", "--dtype", "quantized"]
    assert main(args) == 0
    assert "decode:" in capsys.readouterr().err


def test_errors_exit_2(tiny_llama_gguf, capsys, tmp_path):
    assert main(["generate", str(tmp_path / "missing.gguf"), "--prompt", "x"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["generate", tiny_llama_gguf, "--prompt", "x", "--top-p", "0"]) == 2
    assert "top_p" in capsys.readouterr().err
    assert main(["generate", tiny_llama_gguf, "--prompt", "ab" * 300, "--max-tokens", "4"]) == 2
    assert "--truncate" in capsys.readouterr().err
    # bad arguments found while generating: one line too, not a traceback
    assert main(["generate", tiny_llama_gguf, "--prompt", ""]) == 2
    assert "error: generate: the prompt is empty" in capsys.readouterr().err
    assert main(["generate", tiny_llama_gguf, "--prompt", "x", "--max-tokens", "-1"]) == 2
    assert "max_tokens must be >= 0" in capsys.readouterr().err


def test_module_runs_as_a_program(tiny_llama_gguf):
    run = subprocess.run(
        [sys.executable, "-m", "fgrad.llm", "generate", tiny_llama_gguf, "--prompt", " a", "--max-tokens", "3"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "tokens/s" in run.stderr


def test_chat_example_replies_over_turns(tiny_llama_gguf, monkeypatch):
    import io
    import pathlib
    import importlib.util

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "chat.py"
    spec = importlib.util.spec_from_file_location("chat_example", path)
    chat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chat)
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\nagain\n\n"))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert chat.main([tiny_llama_gguf, "--max-tokens", "4"]) == 0
    assert out.getvalue().count("\n") >= 2  # one line per reply
