"""fgrad.nn losses against hand-computed values; stability; gradients."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.errors import DTypeError, ShapeError
from fgrad.nn.losses import binary_cross_entropy_with_logits, mse, softmax_cross_entropy
from fgrad.test_util import check_grads


def _np(x):
    return np.asarray(x)


def _log_softmax(z, axis=-1):
    z = z - z.max(axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis, keepdims=True))


# ------------------------------------------------------------------------ softmax cross-entropy


def test_cross_entropy_hand_computed():
    # logits [2, 0, -1], label 0: -log(e^2 / (e^2 + 1 + e^-1)) = log(1 + e^-2 + e^-3) = 0.16984...
    loss = softmax_cross_entropy(fnp.array([[2.0, 0.0, -1.0]]), fnp.array([0]))
    assert loss.shape == (1,)
    assert float(_np(loss)[0]) == pytest.approx(np.log(1 + np.exp(-2) + np.exp(-3)), rel=1e-14)


def test_cross_entropy_label_smoothing_hand_computed():
    # Szegedy et al. 2016 section 7: q = (1 - s) onehot + s / K.
    # logits [2, 0, -1], label 0, s = 0.3, K = 3: q = [0.8, 0.1, 0.1];
    # log p = [2, 0, -1] - lse with lse = log(e^2 + 1 + e^-1) = 2.16984...
    lse = np.log(np.exp(2.0) + 1.0 + np.exp(-1.0))
    want = -(0.8 * (2.0 - lse) + 0.1 * (0.0 - lse) + 0.1 * (-1.0 - lse))
    got = softmax_cross_entropy(fnp.array([[2.0, 0.0, -1.0]]), fnp.array([0]), label_smoothing=0.3)
    assert float(_np(got)[0]) == pytest.approx(want, rel=1e-14)
    assert want == pytest.approx(lse - 1.5, rel=1e-14)  # the same value written out by hand


def test_cross_entropy_batch_axis_and_dtype():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 5, 3))
    labels = rng.integers(0, 3, (4, 5))
    got = _np(softmax_cross_entropy(fnp.array(logits), fnp.array(labels)))
    want = -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(got, want, rtol=1e-13)
    # classes on axis 0
    got0 = _np(
        softmax_cross_entropy(fnp.array(np.moveaxis(logits, -1, 0)), fnp.array(labels), axis=0)
    )
    np.testing.assert_allclose(got0, want, rtol=1e-13)
    f32 = softmax_cross_entropy(
        fnp.array(logits, dtype="float32"), fnp.array(labels, dtype="int32")
    )
    assert f32.dtype == np.float32 and f32.shape == (4, 5)


def test_cross_entropy_stable_for_huge_logits():
    logits = fnp.array([[1e4, 0.0, -1e4], [-1e4, 1e4, 1e4]])
    loss = _np(softmax_cross_entropy(logits, fnp.array([0, 0]), label_smoothing=0.1))
    assert np.all(np.isfinite(loss))
    # row 0: label is the max: -(0.9 * 0 + 0.1 * mean(0, -1e4, -2e4)) = 1000
    assert loss[0] == pytest.approx(1000.0)
    g = fgrad.grad(lambda z: fnp.sum(softmax_cross_entropy(z, fnp.array([0, 0]))))(logits)
    assert np.all(np.isfinite(_np(g)))


def test_cross_entropy_gradient_closed_form():
    # d/dz = softmax(z) - q
    rng = np.random.default_rng(1)
    z = rng.standard_normal((3, 4))
    y = np.array([0, 3, 1])
    s = 0.2
    g = fgrad.grad(lambda z: fnp.sum(softmax_cross_entropy(z, fnp.array(y), label_smoothing=s)))(
        fnp.array(z)
    )
    q = (1 - s) * np.eye(4)[y] + s / 4
    np.testing.assert_allclose(_np(g), np.exp(_log_softmax(z)) - q, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_check_grads(smoothing):
    z = fnp.array(np.random.default_rng(2).standard_normal((3, 4)))
    y = fnp.array([1, 0, 3])
    check_grads(
        lambda z: softmax_cross_entropy(z, y, label_smoothing=smoothing),
        (z,),
        order=2,
        modes=("rev", "fwd"),
    )


def test_cross_entropy_errors():
    z = fnp.zeros((2, 3))
    with pytest.raises(TypeError, match="integer"):
        softmax_cross_entropy(z, fnp.array([0.0, 1.0]))
    with pytest.raises(DTypeError):
        softmax_cross_entropy(z, fnp.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="without axis"):
        softmax_cross_entropy(z, fnp.array([0, 1, 2]))
    with pytest.raises(ShapeError):
        softmax_cross_entropy(z, fnp.array([[0, 1]]))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        softmax_cross_entropy(z, fnp.array([0, 3]))
    with pytest.raises(ValueError, match="label_smoothing"):
        softmax_cross_entropy(z, fnp.array([0, 1]), label_smoothing=1.0)


# ------------------------------------------------------------------------ mse


def test_mse():
    p, t = fnp.array([[1.0, 2.0], [3.0, 5.0]]), fnp.array([[0.0, 4.0], [3.0, 2.0]])
    assert float(mse(p, t)) == pytest.approx((1 + 4 + 0 + 9) / 4)
    np.testing.assert_allclose(_np(mse(p, t, axis=1)), [2.5, 4.5])
    check_grads(lambda p, t: mse(p, t), (p, t), order=2, modes=("rev", "fwd"))
    assert mse(fnp.ones(3, dtype="float32"), 0.0).dtype == np.float32


# ------------------------------------------------------------------------ binary cross-entropy


def test_bce_with_logits_matches_definition():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(10) * 3, rng.uniform(0, 1, 10)
    sig = 1 / (1 + np.exp(-x))
    want = -(y * np.log(sig) + (1 - y) * np.log(1 - sig))
    np.testing.assert_allclose(
        _np(binary_cross_entropy_with_logits(fnp.array(x), fnp.array(y))), want, rtol=1e-12
    )


def test_bce_with_logits_stable():
    x = fnp.array([1000.0, -1000.0, 1000.0, -1000.0, 40.0])
    y = fnp.array([1.0, 0.0, 0.0, 1.0, 1.0])
    loss = _np(binary_cross_entropy_with_logits(x, y))
    np.testing.assert_allclose(
        loss, [0.0, 0.0, 1000.0, 1000.0, np.log1p(np.exp(-40.0))], rtol=1e-12, atol=0
    )
    g = _np(fgrad.grad(lambda x: fnp.sum(binary_cross_entropy_with_logits(x, y)))(x))
    np.testing.assert_allclose(
        g, [0.0, 0.0, 1.0, -1.0, -np.exp(-40.0) / (1 + np.exp(-40.0))], atol=1e-15
    )


def test_bce_with_logits_gradient_at_zero():
    # sigmoid(0) - y = 0.5 - y; a max/abs formulation would give -y here (zero logits are common)
    y = fnp.array([0.0, 0.25, 1.0])
    g = fgrad.grad(lambda x: fnp.sum(binary_cross_entropy_with_logits(x, y)))(fnp.zeros(3))
    np.testing.assert_allclose(_np(g), [0.5, 0.25, -0.5])


def test_bce_with_logits_check_grads():
    x = fnp.array(np.random.default_rng(4).standard_normal((2, 3)) * 2)
    y = fnp.array(np.random.default_rng(5).uniform(0, 1, (2, 3)))
    check_grads(binary_cross_entropy_with_logits, (x, y), order=2, modes=("rev", "fwd"))


def test_losses_exported():
    assert nn.softmax_cross_entropy is softmax_cross_entropy
    assert nn.binary_cross_entropy_with_logits is binary_cross_entropy_with_logits
    assert nn.mse is mse


def test_bce_with_integer_targets_keeps_float32():
    loss = binary_cross_entropy_with_logits(fnp.zeros(2, dtype="float32"), fnp.array([0, 1]))
    assert loss.dtype == np.float32
    np.testing.assert_allclose(_np(loss), [np.log(2)] * 2, rtol=1e-6)
