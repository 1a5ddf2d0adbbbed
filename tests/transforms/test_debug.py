"""config.debug_nans: the first op producing a NaN raises, naming op and user line."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


@pytest.fixture
def debug_nans():
    fgrad.config.debug_nans = True
    yield
    fgrad.config.debug_nans = False


def test_raises_at_first_nan_under_grad(debug_nans):
    def f(x):
        y = fnp.sqrt(x)  # NaN for x < 0: the op that should be named
        return fnp.sum(y * 2.0)

    with pytest.raises(fgrad.NaNError, match=r"'sqrt'.*test_debug.py:\d+"):
        fgrad.grad(f)(fnp.array([-1.0, 1.0]))


def test_operators_and_binary_ops_are_checked(debug_nans):
    inf = fnp.array([np.inf])
    with pytest.raises(fgrad.NaNError, match="subtract"):
        _ = inf - inf


def test_nan_inputs_do_not_blame_the_op(debug_nans):
    out = fnp.array([np.nan]) + 1.0
    assert np.isnan(float(out[0]))


def test_off_again_restores_plain_kernels():
    fgrad.config.debug_nans = True
    fgrad.config.debug_nans = False
    with np.errstate(invalid="ignore"):
        assert np.isnan(float(fnp.sqrt(fnp.array(-1.0))))


def test_unknown_flag_is_an_error():
    with pytest.raises(AttributeError, match="debug_nans"):
        fgrad.config.debug_nan = True
