"""The real SmolLM2-135M-Instruct file against figures stored from Hugging Face
transformers reading the same file (tests/llm/data/make_reference.py writes them)."""

import json
import os

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad.llm import sampling
from fgrad.llm.generation import generate
from fgrad.llm.loading import load

with open(os.path.join(os.path.dirname(__file__), "data", "smollm2_reference.json")) as f:
    REFERENCE = json.load(f)


@pytest.fixture(scope="module")
def smollm2(smollm2_gguf):
    return load(smollm2_gguf)


def test_tokenizer_ids_match_the_reference(smollm2):
    _, tok = smollm2
    for p in REFERENCE["prompts"]:
        assert tok.encode(p["text"]) == p["ids"]


@pytest.mark.parametrize("index", range(len(REFERENCE["prompts"])))
def test_top10_logits_at_every_position(smollm2, index):
    model, _ = smollm2
    p = REFERENCE["prompts"][index]
    logits = np.asarray(model(fnp.asarray([p["ids"]]))[0][0], dtype=np.float64)
    top_ids = np.asarray(p["top_ids"])
    assert (logits.argmax(-1) == top_ids[:, 0]).all()  # top-1 at every position
    got = np.take_along_axis(logits, top_ids, -1)
    # the reference's values are rounded to 1e-4; float32 sums over 30 layers differ ~1e-4
    np.testing.assert_allclose(got, np.asarray(p["top_logits"]), atol=2e-3)


def test_greedy_continuation(smollm2):
    model, _ = smollm2
    p = REFERENCE["prompts"][0]
    got = list(generate(model, None, p["ids"], 20, sampling.greedy(), stop=()))
    assert got == p["greedy"]


def test_kept_quantized_agrees_on_a_short_prompt(smollm2_gguf):
    model, _ = load(smollm2_gguf, dtype=None)
    p = REFERENCE["prompts"][0]
    logits = np.asarray(model(fnp.asarray([p["ids"]]))[0][0])
    assert (logits.argmax(-1) == np.asarray(p["top_ids"])[:, 0]).all()
    np.testing.assert_allclose(logits[-1, p["top_ids"][-1]], p["top_logits"][-1], atol=2e-3)
