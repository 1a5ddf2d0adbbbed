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
