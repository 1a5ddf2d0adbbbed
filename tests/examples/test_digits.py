"""The main job at reduced size: both digits models learn, the outputs are written."""

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("safetensors")


def test_digits_mlp_and_cnn_learn(tmp_path, load_example):
    digits = load_example("digits")
    results = digits.main(
        ["--epochs", "4", "--out", str(tmp_path), "--no-progress", "--models", "mlp", "cnn"]
    )
    # Full runs reach >= 0.97 (README); 4 epochs already clear these bars.
    assert results["mlp"] >= 0.93
    assert results["cnn"] >= 0.80
    import fgrad

    params = fgrad.io.load(tmp_path / "mlp.safetensors")
    assert len(fgrad.tree.leaves(params)) == 6  # three Linear layers: w and b each
    assert (tmp_path / "digits.png").stat().st_size > 1000


def test_digits_split_is_fixed(load_example):
    digits = load_example("digits")
    a = digits.load_data(0)
    b = digits.load_data(0)
    assert a[0].shape == (1437, 64) and a[1].shape == (360, 64)
    np.testing.assert_array_equal(a[3], b[3])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--epochs", "0"], "argument --epochs: expected a positive integer, got '0'"),
        (["--batch-size", "x"], "argument --batch-size: expected a positive integer, got 'x'"),
        (["--lr", "-1"], "argument --lr: expected a positive number, got '-1'"),
    ],
)
def test_issue_3_digits_cli_rejects_bad_values(argv, message, load_example, capsys, tmp_path):
    # --epochs 0 used to end in a traceback from the learning-rate schedule.
    digits = load_example("digits")
    with pytest.raises(SystemExit) as info:
        digits.main(argv + ["--out", str(tmp_path)])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
