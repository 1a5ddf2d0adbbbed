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


def _log_of_shifted(x):
    y = fnp.exp(x)
    return fnp.sum(fnp.log(y - 2.0))  # NaN where exp(x) < 2: the op to be named


def test_jit_programs_are_checked_and_the_op_named(debug_nans):
    f = fgrad.jit(_log_of_shifted)
    assert np.isfinite(float(f(fnp.array([1.0, 2.0]))))  # no NaN: no error
    with pytest.raises(fgrad.NaNError, match=r"'log'.*jit\(_log_of_shifted\).*test_debug.py:\d+"):
        f(fnp.array([0.0, 1.0]))  # the compiled program (cache hit) runs first, then the hunt


def test_jit_of_grad_names_the_backward_op(debug_nans):
    # sqrt'(0) = inf, and inf * 0 = NaN in the backward pass's multiply.
    f = fgrad.jit(fgrad.grad(lambda x: fnp.sum(fnp.sqrt(x) * 0.0)))
    with pytest.raises(fgrad.NaNError, match=r"multiply|divide"):
        f(fnp.array([0.0, 1.0]))


def test_jit_checks_keep_donated_inputs_for_the_hunt(debug_nans):
    f = fgrad.jit(lambda x: fnp.log(x - 2.0), donate_argnums=0)
    with pytest.raises(fgrad.NaNError, match="'log'"):
        f(fnp.ones(1024))


def test_jit_nan_inputs_do_not_raise(debug_nans):
    out = fgrad.jit(lambda x: x * 2.0)(fnp.array([np.nan, 1.0]))
    assert np.isnan(float(out[0]))


def _norm_of_square(x):
    r = fnp.sqrt(x * x)  # at 0 the backward pass multiplies sqrt's inf by 0: NaN
    return fnp.sum(r)


_NORM_LINE = _norm_of_square.__code__.co_firstlineno + 1


@pytest.mark.parametrize(
    "transform",
    [fgrad.grad, lambda f: fgrad.jit(fgrad.grad(f)), lambda f: fgrad.grad(fgrad.jit(f))],
    ids=["grad", "jit(grad)", "grad(jit)"],
)
def test_backward_nans_name_the_forward_line(debug_nans, transform):
    # The NaN appears in the VJP of x * x; the message names that line and says it is in
    # the gradient, not the line that called grad.
    with pytest.raises(fgrad.NaNError, match=rf"test_debug.py:{_NORM_LINE} \(in the gradient of 'multiply'\)"):
        transform(_norm_of_square)(fnp.array([0.0, 1.0]))


def test_a_nan_inside_a_loop_body_under_jit_names_the_op_in_the_body():
    from fgrad import lax

    def body(c, x):
        y = fnp.log(x)  # the NaN's line
        return c + y, y

    f = fgrad.jit(lambda xs: lax.scan(body, 0.0, xs)[0])
    fgrad.config.debug_nans = True
    try:
        f(fnp.array([1.0, 2.0]))
        with pytest.raises(fgrad.NaNError, match=r"op 'log' produced NaN .* in the body 'body', traced at test_debug.py:\d+"):
            f(fnp.array([1.0, -1.0]))
    finally:
        fgrad.config.debug_nans = False
