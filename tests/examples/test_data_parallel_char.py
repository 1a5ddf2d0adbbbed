"""examples/data_parallel.py --model char: the character transformer trained through the
data-parallel step (one process here; tests/distributed runs the step on 2 and 4 ranks)."""

import math


def test_the_char_transformer_trains_data_parallel(load_example, capsys):
    dp = load_example("data_parallel")
    out = dp.main(["--model", "char", "--steps", "6", "--chars", "20000", "--seq-len", "16",
                   "--batch-size", "8", "--lr", "1e-2"])
    text = capsys.readouterr().out
    assert "characters/s" in text and "bits per character" in text
    assert len(out["losses"]) == 6 and all(math.isfinite(v) for v in out["losses"])
    assert out["losses"][-1] < out["losses"][0]  # it learns
    assert 0 < out["bits_per_char"] < 8
