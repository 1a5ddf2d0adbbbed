"""A learning rate or hyper-parameter given as a str or a bool is refused naming the
optimiser (float("0.001") had turned a config typo into a number; a new-user trial)."""

import numpy as np
import pytest

from fgrad import optim


@pytest.mark.parametrize("bad", ["0.001", True, b"1", np.array("0.1")])
def test_a_str_or_bool_learning_rate_is_refused(bad):
    with pytest.raises(TypeError, match="adamw: learning_rate must be a float"):
        optim.adamw(bad)


def test_a_str_hyper_parameter_is_refused_and_numbers_pass():
    with pytest.raises(TypeError, match="adam: b1 must be a float, got str"):
        optim.adam(1e-3, b1="0.9")
    for lr in (0.1, 1, np.float32(0.1), np.array(0.1)):
        optim.sgd(lr)
