"""The character-level LSTM example at reduced size (--quick): the held-out loss falls."""

import math


def test_lstm_lm_learns_and_samples(load_example, capsys):
    lm = load_example("lstm_lm")
    result = lm.main(["--quick", "--seed", "0"])
    out = capsys.readouterr().out
    evals = [bits for _, bits in result["evals"]]
    # Untrained, the logits are near uniform: log2(vocabulary) ~ 6.5 bits per character.
    assert abs(evals[0] - math.log2(len(result["vocab"]))) < 0.3
    # The held-out loss falls at every evaluation (steps 20, 40, 60) and ends more than
    # 2 bits below the start, near the unigram entropy of Python source (~4.4 bits).
    assert all(b < a for a, b in zip(evals, evals[1:])), evals
    assert evals[-1] < evals[0] - 2.0
    assert evals[-1] < result["unigram_bits"] + 0.3
    assert "held-out" in out and "sample" in out
    assert len(result["sample"]) == 40 and set(result["sample"]) <= set(result["vocab"])
