"""RoBERTa, XLM-R and CamemBERT encoders: BERT's layers with RoBERTa's positions.

``roberta_reference.json`` holds transformers' ``RobertaModel`` outputs for the tiny folder
that ``make_roberta_reference.write_tiny_roberta`` writes (seeded numpy weights, so CI
builds the same folder without torch), for a right-padded batch and the same rows padded
on the left: positions count the real tokens from ``padding_idx + 1``, so left padding
moves them, and a BERT-style ``0, 1, ...`` numbering fails both checks.
"""

import importlib.util
import json
import os

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.llm import bert
from fgrad.llm.config import UnsupportedModelError

pytest.importorskip("safetensors.numpy")
pytest.importorskip("tokenizers")

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "make_roberta_reference", os.path.join(HERE, "data", "make_roberta_reference.py")
)
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)

with open(os.path.join(HERE, "data", "roberta_reference.json")) as _f:
    REFERENCE = json.load(_f)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make.write_tiny_roberta(str(tmp_path_factory.mktemp("roberta") / "tiny"),
                                   **REFERENCE["folder"])


@pytest.fixture(scope="module")
def encoder(folder):
    return bert.load_encoder(folder)


def test_config_reads_the_roberta_rules(folder, encoder):
    c = encoder.config
    assert (c.model_type, c.pad_token_id, c.max_positions, c.max_length, c.type_vocab_size) == (
        "roberta", 1, 66, 64, 1)
    assert c.roberta_positions and bert.BertConfig.from_hf(c.to_hf()) == c
    assert encoder.max_length == 64


def test_tokens_and_embeddings_match_transformers(encoder):
    ids, mask = encoder.tokenize(REFERENCE["texts"])
    assert np.asarray(ids).tolist() == REFERENCE["input_ids"]
    assert np.asarray(mask).astype(int).tolist() == REFERENCE["attention_mask"]
    hidden = encoder.model(ids, mask)
    np.testing.assert_allclose(np.asarray(bert.mean_pool(hidden, mask)),
                               REFERENCE["mean_pooled"], atol=2e-6)
    n = int(np.asarray(mask)[0].sum())
    np.testing.assert_allclose(np.asarray(hidden)[0, :n], REFERENCE["last_hidden_first"], atol=5e-6)


def test_left_padding_moves_positions_as_transformers(encoder):
    ids = fnp.asarray(np.array(REFERENCE["left_input_ids"]))
    mask = fnp.asarray(np.array(REFERENCE["left_attention_mask"]) == 1)
    pooled = bert.mean_pool(encoder.model(ids, mask), mask)
    np.testing.assert_allclose(np.asarray(pooled), REFERENCE["left_mean_pooled"], atol=2e-6)
    # the same texts right-padded give the same sentence embeddings
    np.testing.assert_allclose(np.asarray(pooled), REFERENCE["mean_pooled"], atol=2e-6)


def test_bert_positions_would_be_wrong(folder):
    # The reference catches the position rule: the same weights read as BERT differ.
    config = json.load(open(os.path.join(folder, "config.json")))
    model = bert.load(folder)
    as_bert = bert.BertEncoder(model.config.replace(model_type="bert")).bind(model.params)
    ids, mask = bert.load_encoder(folder).tokenize(REFERENCE["texts"])
    wrong = bert.mean_pool(as_bert(ids, mask), mask)
    assert np.abs(np.asarray(wrong) - np.array(REFERENCE["mean_pooled"])).max() > 1e-2
    assert config["pad_token_id"] == 1


@pytest.mark.parametrize("model_type", ["xlm-roberta", "camembert"])
def test_relatives_load_through_fgrad_llm_load(tmp_path, model_type):
    folder = make.write_tiny_roberta(str(tmp_path / model_type), model_type=model_type, seed=1)
    model, tokenizer = fgrad.llm.load(folder)
    assert isinstance(model, bert.BertModel) and model.config.model_type == model_type
    ids = fnp.asarray(np.array([tokenizer.encode("the cat sat", add_special_tokens=True)]))
    assert model(ids).shape == (1, ids.shape[1], 32)


def test_save_load_round_trip_and_grad_and_jit(tmp_path, encoder):
    model = encoder.model
    bert.save(model, str(tmp_path / "saved"))
    again = bert.load(str(tmp_path / "saved"))
    assert again.config == model.config
    ids, mask = encoder.tokenize(["the cat sat on the mat", "a dog"])
    np.testing.assert_array_equal(np.asarray(again(ids, mask)), np.asarray(model(ids, mask)))
    np.testing.assert_allclose(np.asarray(fgrad.jit(lambda m, i, k: m(i, k))(model, ids, mask)),
                               np.asarray(model(ids, mask)), atol=1e-6)

    def loss(m):
        e = bert.l2_normalize(bert.mean_pool(m(ids, mask), mask))
        return fnp.sum(e[0] * e[1])

    g = fgrad.grad(loss)(model)
    position_grad = np.asarray(g.params["embeddings"]["position"])
    # The real tokens sit at rows 2.. (the first text's 8 at rows 2..9); padding at row 1,
    # hidden by the mask, and row 0 is never used: no gradient there.
    assert np.abs(position_grad[2:10]).sum() > 0 and np.abs(position_grad[:2]).sum() == 0


def test_too_long_and_unknown_types_are_refused(encoder):
    with pytest.raises(fgrad.errors.ShapeError, match="65 tokens exceed the model's 64"):
        encoder.model(fnp.full((1, 65), 5, dtype=np.int64))
    with pytest.raises(UnsupportedModelError, match="model_type 'electra'"):
        bert.BertConfig(vocab_size=5, d_model=8, n_layers=1, n_heads=2, d_ff=8,
                        model_type="electra")
    with pytest.raises(ValueError, match="beyond its 4 positions"):
        bert.BertConfig(vocab_size=5, d_model=8, n_layers=1, n_heads=2, d_ff=8,
                        max_positions=4, pad_token_id=3, model_type="roberta")
