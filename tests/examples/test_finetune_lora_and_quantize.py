"""The LoRA fine-tuning and quantization examples at reduced size, on a tiny GGUF model
(the real SmolLM2 figures are in docs/llm.md, with the commands that made them)."""

import importlib.util
import os
import pathlib

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path = pathlib.Path(__file__).resolve().parents[1] / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("llm_fixtures_for_examples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_tiny_gguf(str(tmp_path_factory.mktemp("tiny") / "tiny.gguf"))


def test_finetune_lora_quick_saves_resumes_and_plots(load_example, tiny_gguf, tmp_path):
    ft = load_example("finetune_lora")
    train, held = ft.split_topics()
    from pydoc_data.topics import topics

    assert len(train) > 3 * len(held) > 0 and len(train) + len(held) == len(topics)
    out = tmp_path / "adapters"
    result = ft.main(["--model", tiny_gguf, "--quick", "--steps", "3", "--lr", "1e-2", "--out", str(out),
                      "--save-every", "2", "--plot", str(tmp_path / "loss.png")])
    assert len(result["losses"]) == 3 and all(np.isfinite(result["losses"]))
    assert np.isfinite(result["ppl_before"]) and np.isfinite(result["ppl_after"])
    assert result["ppl_after"] != result["ppl_before"]  # the adapters changed the model
    assert sorted(os.listdir(out)) == ["adapter_config.json", "adapter_model.safetensors", "progress.json"]
    from fgrad.llm import lora

    saved = lora.load(out, n_layers=2)
    assert saved.targets == ("q_proj", "v_proj") and saved.rank == 4
    for x, y in zip(saved.layers[1].values(), result["adapters"].layers[1].values()):
        assert np.array_equal(np.asarray(x.b), np.asarray(y.b))
    # Resume: continues at step 3 from the saved adapters.
    again = ft.main(["--model", tiny_gguf, "--quick", "--steps", "4", "--out", str(out), "--resume",
                     "--gen-tokens", "0"])
    assert len(again["losses"]) == 1
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "loss.png").stat().st_size > 1000


def test_quantize_quick_prints_every_variant(load_example, tiny_gguf, capsys):
    qz = load_example("quantize")
    rows = qz.main(["--model", tiny_gguf, "--quick", "--alphas", "0.5,0.85", "--decode-tokens", "0"])
    assert list(rows) == ["float32", "Q4_1 kept", "Q4_1 kept, int8 act", "int8 per channel",
                          "int8 g64", "W8A8", "SmoothQuant 0.5", "SmoothQuant 0.85"]
    ref = rows["float32"]["ppl"]
    for name, r in rows.items():
        assert abs(r["ppl"] / ref - 1) < 0.01, name  # the tiny model: all within 1%
        assert np.isnan(r["decode"])  # not measured here (each variant's decode traces once)
    assert rows["Q4_1 kept"]["max_diff"] < 1e-4 and rows["int8 per channel"]["max_diff"] > 1e-4
    assert rows["int8 per channel"]["mb"] < 0.3 * rows["float32"]["mb"]
    assert "| SmoothQuant 0.85 |" in capsys.readouterr().out
