"""The character-level transformer example at reduced size: it learns, samples and saves."""

import math

import numpy as np
import pytest

pytest.importorskip("safetensors")


def test_char_transformer_learns_and_samples(tmp_path, load_example):
    ct = load_example("char_transformer")
    out = tmp_path / "char.safetensors"
    # Reduced size: one block instead of two, 150 steps of 16 x 64 characters, a higher
    # learning rate; the full run (README) reaches ~2.3 bits/char held out.
    result = ct.main(
        ["--steps", "150", "--warmup", "30", "--lr", "1e-2", "--batch-size", "16"]
        + ["--seq-len", "64", "--d-model", "64", "--n-layers", "1", "--n-heads", "4"]
        + ["--n-chars", "200000", "--eval-batches", "4", "--eval-every", "0"]
        + ["--sample-length", "40", "--top-k", "5", "--out", str(out), "--no-progress"]
    )
    # The unigram entropy of Python source is ~4.5 bits/char; a context model that has
    # learned anything (indentation, keywords, identifiers) is well below it.
    assert result["unigram_bits"] > 4.0
    assert result["held_out_bits"] < result["unigram_bits"] - 1.0
    assert result["train_bits"] < result["unigram_bits"] - 1.0
    assert len(result["sample"]) == 40
    assert set(result["sample"]) <= set(result["vocab"])
    import fgrad

    saved = fgrad.io.load(out)  # without a template: the NamedTuples' fields as dicts
    assert len(saved["blocks"]) == 1
    assert saved["tokens"]["embedding"].shape == (len(result["vocab"]), 64)
    params = fgrad.io.load(out, like=result["params"])  # the typed params again
    assert fgrad.tree.structure(params) == fgrad.tree.structure(result["params"])
    assert params.tokens.embedding.shape == (len(result["vocab"]), 64)
    for got, want in zip(fgrad.tree.leaves(params), fgrad.tree.leaves(result["params"])):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_dataset_split_and_unigram_baseline(load_example):
    ct = load_example("char_transformer")
    data = ct.make_dataset("abcab" * 20, held_out_fraction=0.1)
    assert data.vocab == "abc"
    assert len(data.train) == 90 and len(data.held_out) == 10
    assert data.decode(data.train[:5]) == "abcab"
    np.testing.assert_array_equal(data.encode("cab"), [2, 0, 1])
    # "aab": H = -(2/3 log2 2/3 + 1/3 log2 1/3) (Shannon entropy of the frequencies).
    expected = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    assert ct.unigram_bits(np.array([0, 0, 1]), 2) == pytest.approx(expected, rel=1e-12)
    # The corpus is deterministic: the same files in the same order.
    assert ct.load_corpus(5000) == ct.load_corpus(5000)
    assert len(ct.load_corpus(5000)) == 5000


def test_batches_are_shifted_windows(load_example):
    ct = load_example("char_transformer")
    ids = np.arange(100)
    inputs, targets = ct.batch_windows(ids, np.array([0, 10]), 8)
    assert inputs.shape == targets.shape == (2, 8)
    np.testing.assert_array_equal(inputs[1], np.arange(10, 18))
    np.testing.assert_array_equal(targets[1], np.arange(11, 19))


def test_sampling_is_reproducible_and_respects_top_k(load_example):
    ct = load_example("char_transformer")
    from fgrad import random

    data = ct.make_dataset(ct.load_corpus(20_000))
    model = ct.CharTransformer(len(data.vocab), seq_len=16, d_model=32, n_layers=1, n_heads=2)
    params = model.init(random.key(0))
    a = ct.sample(model, params, data, random.key(1), prompt="import ", length=20, top_k=1)
    b = ct.sample(model, params, data, random.key(2), prompt="import ", length=20, top_k=1)
    assert a == b  # top-k = 1 is greedy decoding: the key does not matter
    c = ct.sample(
        model, params, data, random.key(3), prompt="", length=25, temperature=2.0, top_k=0
    )
    d = ct.sample(
        model, params, data, random.key(3), prompt="", length=25, temperature=2.0, top_k=0
    )
    assert c == d and len(c) == 25 and set(c) <= set(data.vocab)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "0"], "argument --steps: expected a positive integer, got '0'"),
        (["--temperature", "0"], "argument --temperature: expected a positive number, got '0'"),
        (["--lr", "nan"], "argument --lr: expected a positive number, got 'nan'"),
        (["--top-k", "-1"], "argument --top-k: expected an integer >= 0, got '-1'"),
        (["--d-model", "10", "--n-heads", "4"], "--d-model 10 must be a multiple of --n-heads 4"),
        (["--n-chars", "100"], "the held-out text (10 characters) needs more than --seq-len 64"),
        (["--n-chars", "5000", "--prompt", "ÿdef€"], "characters 'ÿ€' are not in the vocabulary"),
    ],
)
def test_issue_3_char_transformer_cli_rejects_bad_values(argv, message, load_example, capsys):
    # Each used to end in a traceback (a warmup_steps error for --steps 0, a bare KeyError
    # for the prompt, a ValueError after training for --temperature 0).
    ct = load_example("char_transformer")
    with pytest.raises(SystemExit) as info:
        ct.main(argv + ["--no-progress"])
    assert info.value.code == 2  # argparse's usage error, before any training
    assert message in capsys.readouterr().err


def test_issue_3_char_transformer_encode_names_unknown_characters(load_example):
    ct = load_example("char_transformer")
    data = ct.make_dataset("abcab" * 20)
    assert data.unknown("axbyx") == "xy"
    with pytest.raises(ValueError, match=r"characters 'xy' are not in the vocabulary of 3"):
        data.encode("axbyx")
