"""Hugging Face folders: config.json with one or sharded safetensors files, bfloat16 weights,
and clear errors for what is missing or damaged."""

import json
import os

import numpy as np
import pytest

from fgrad.llm import hf

st = pytest.importorskip("safetensors.numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")

CONFIG = {"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2}


def _tensors(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "model.embed_tokens.weight": rng.standard_normal((5, 8)).astype(ml_dtypes.bfloat16),
        "model.layers.0.self_attn.q_proj.weight": rng.standard_normal((8, 8)).astype(ml_dtypes.bfloat16),
        "model.norm.weight": rng.standard_normal(8).astype(np.float32),
        "position_ids": np.arange(4, dtype=np.int64),
    }


def _folder(tmp_path, config=CONFIG, shards=None):
    """A folder with config.json and one model.safetensors, or ``shards`` (file -> names)."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    tensors = _tensors()
    if shards is None:
        st.save_file(tensors, str(folder / "model.safetensors"))
    else:
        weight_map = {}
        for file, names in shards.items():
            st.save_file({n: tensors[n] for n in names}, str(folder / file))
            weight_map.update({n: file for n in names})
        index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return str(folder), tensors


def test_single_file_bfloat16_to_float32_exactly(tmp_path):
    folder, tensors = _folder(tmp_path)
    ckpt = hf.read(folder)
    assert ckpt.arch == "llama" and ckpt.config == CONFIG
    assert sorted(ckpt.tensors) == sorted(tensors)
    for name, want in tensors.items():
        got = ckpt.tensors[name]
        if want.dtype == np.int64:
            assert got.dtype == np.int64
        else:
            assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want.astype(got.dtype))  # bf16 -> f32 is exact
    assert ckpt.nbytes == sum(a.nbytes for a in ckpt.tensors.values())


def test_float16_mode(tmp_path):
    folder, tensors = _folder(tmp_path)
    ckpt = hf.read(folder, dtype="float16")
    w = ckpt.tensors["model.layers.0.self_attn.q_proj.weight"]
    assert w.dtype == np.float16
    want = tensors["model.layers.0.self_attn.q_proj.weight"].astype(np.float32).astype(np.float16)
    np.testing.assert_array_equal(w, want)
    assert ckpt.tensors["position_ids"].dtype == np.int64


SHARDS = {
    "model-00001-of-00002.safetensors": ["model.embed_tokens.weight", "position_ids"],
    "model-00002-of-00002.safetensors": ["model.layers.0.self_attn.q_proj.weight", "model.norm.weight"],
}


def test_sharded_folder(tmp_path):
    folder, tensors = _folder(tmp_path, shards=SHARDS)
    ckpt = hf.read(folder)
    assert sorted(ckpt.tensors) == sorted(tensors)
    assert [os.path.basename(f) for f in ckpt.files] == sorted(SHARDS)


def test_missing_shard_is_named(tmp_path):
    folder, _ = _folder(tmp_path, shards=SHARDS)
    os.remove(os.path.join(folder, "model-00002-of-00002.safetensors"))
    with pytest.raises(ValueError, match="1 of the 2 shards .* missing: model-00002-of-00002.safetensors"):
        hf.read(folder)


def test_index_that_disagrees_with_its_shards(tmp_path):
    folder, _ = _folder(tmp_path, shards=SHARDS)
    index_path = os.path.join(folder, "model.safetensors.index.json")
    index = json.load(open(index_path))
    index["weight_map"]["lm_head.weight"] = "model-00001-of-00002.safetensors"
    json.dump(index, open(index_path, "w"))
    with pytest.raises(ValueError, match="lists 1 tensors that its shards do not hold: lm_head.weight"):
        hf.read(folder)
    index["weight_map"]["../escape.safetensors"] = "../x.safetensors"
    index["weight_map"]["lm_head.weight"] = "../x.safetensors"
    json.dump(index, open(index_path, "w"))
    with pytest.raises(ValueError, match="which is not a file name"):
        hf.read(folder)


def test_missing_config(tmp_path):
    folder, _ = _folder(tmp_path, config=None)
    with pytest.raises(ValueError, match="no config.json"):
        hf.read(folder)


def test_unknown_model_type_names_itself(tmp_path):
    folder, _ = _folder(tmp_path, config={"model_type": "mamba"})
    with pytest.raises(ValueError, match=r"model_type is 'mamba', .*\(supported: llama, qwen2, bert, roberta, xlm-roberta, camembert\)"):
        hf.read(folder)


def test_bert_relatives_say_why_they_are_not_read(tmp_path):
    from fgrad.llm.config import UnsupportedModelError

    folder, _ = _folder(tmp_path, config={"model_type": "distilbert"})
    with pytest.raises(UnsupportedModelError, match=r"'distilbert'.*\(distilbert names its layers"):
        hf.read(folder)


def test_config_that_is_not_json(tmp_path):
    folder, _ = _folder(tmp_path)
    open(os.path.join(folder, "config.json"), "w").write("{not json")
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        hf.read(folder)


def test_no_weights_and_pickles_refused(tmp_path):
    folder, _ = _folder(tmp_path)
    os.remove(os.path.join(folder, "model.safetensors"))
    open(os.path.join(folder, "pytorch_model.bin"), "wb").write(b"\x80\x04")
    with pytest.raises(ValueError, match="no model.safetensors .*pytorch_model.bin: PyTorch pickles"):
        hf.read(folder)


def test_truncated_safetensors_file_is_named(tmp_path):
    folder, _ = _folder(tmp_path)
    path = os.path.join(folder, "model.safetensors")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) - 50])
    with pytest.raises(ValueError, match="fgrad.llm.hf.read: .*model.safetensors: truncated"):
        hf.read(folder)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        hf.read(str(tmp_path / "absent"))
    folder, _ = _folder(tmp_path)
    with pytest.raises(ValueError, match="dtype must be 'float32' or 'float16'"):
        hf.read(folder, dtype="bfloat16")
