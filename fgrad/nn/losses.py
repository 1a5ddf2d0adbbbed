"""Loss functions: per-example losses as Tensors, differentiable by ``fgrad.grad``.

``softmax_cross_entropy`` and ``binary_cross_entropy_with_logits`` return one loss per
example (reduce with ``fnp.mean``), as optax does; :func:`mse` reduces over ``axis``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fgrad.numpy as fnp
from fgrad import _args, dtypes
from fgrad.core.trace import concrete_value
from fgrad.errors import ConcretizationError, DTypeError, ShapeError
from fgrad.nn._activations import log_softmax, softplus
from fgrad.ops._rules import broadcast_shapes, norm_axes
from fgrad.tensor import Tensor, as_tensor

__all__ = ["binary_cross_entropy_with_logits", "mse", "softmax_cross_entropy"]


def _check_label_range(labels: Any, n_classes: int) -> None:
    """Raise for out-of-range labels when their values are known (eager calls)."""
    try:
        values = concrete_value(labels)
    except ConcretizationError:  # abstract tracing: values unknown, nothing to check
        return
    if values is None or getattr(values, "size", 1) == 0:
        return
    lo, hi = int(values.min()), int(values.max())
    if lo < 0 or hi >= n_classes:
        raise ValueError(
            f"softmax_cross_entropy: labels must be in [0, {n_classes}), got values in [{lo}, {hi}]"
        )


def softmax_cross_entropy(
    logits: Any, labels: Any, *, axis: int = -1, label_smoothing: float = 0.0
) -> Tensor:
    """Cross-entropy of integer class labels under softmax(logits).

    Stable for large logits: uses ``log_softmax`` (a shifted logsumexp), never forms
    ``exp(logits)``. With label smoothing ``s`` the target distribution is ``(1 - s)`` on
    the label plus ``s / n_classes`` on every class, so the loss is ``-(1 - s) *
    log p[label] - s * mean(log p)``.

    Args:
        logits: ``(..., n_classes)`` real floating Tensor of unnormalised log-probabilities.
        labels: ``(...)`` integer Tensor, values in ``[0, n_classes)``.
        axis: axis of ``logits`` that indexes classes.
        label_smoothing: float in ``[0, 1)``; probability mass spread evenly over classes.

    Returns:
        ``(...)`` Tensor, dtype of ``logits``: the loss per example, in nats.

    Raises:
        ValueError: ``labels.shape`` is not ``logits.shape`` without ``axis`` (a
            ``ShapeError``), ``label_smoothing`` is outside ``[0, 1)``, or (when the labels
            are concrete) a label is outside ``[0, n_classes)``.
        TypeError: ``labels`` is not an integer Tensor, ``logits`` not real numbers,
            ``axis`` not an int or ``label_smoothing`` not a real number (``DTypeError``).

    Example:
        >>> logits = fnp.array([[2.0, 0.0, -1.0]])
        >>> print(fnp.round(softmax_cross_entropy(logits, fnp.array([0])), 4))
        [0.1698]

    References:
        Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
        2016, arXiv:1512.00567 (label smoothing, section 7).
    """
    logits = as_tensor(_real(logits, "softmax_cross_entropy", "logits", bool_ok=False))
    labels = as_tensor(labels, "softmax_cross_entropy", "labels")
    logits_shape, labels_shape = tuple(logits.shape), tuple(labels.shape)
    ndim = len(logits_shape)
    if ndim == 0:
        raise ShapeError("softmax_cross_entropy: logits must have a class axis, got a scalar")
    ax = _args.axis(axis, "softmax_cross_entropy", ndim)
    want = logits_shape[:ax] + logits_shape[ax + 1 :]
    if labels_shape != want:
        raise ShapeError(
            f"softmax_cross_entropy: labels shape {labels_shape} must be logits shape "
            f"{logits_shape} without axis {axis}, i.e. {want}"
        )
    if not np.issubdtype(np.dtype(getattr(labels, "dtype", np.float64)), np.integer):
        raise DTypeError(
            f"softmax_cross_entropy: labels must be an integer Tensor of class indices, got "
            f"dtype {getattr(labels, 'dtype', type(labels).__name__)}; for probabilities use "
            "-fnp.sum(p * fgrad.nn.log_softmax(logits), axis)"
        )
    s = _args.real(label_smoothing, "softmax_cross_entropy", "label_smoothing")
    if not 0.0 <= s < 1.0:
        raise ValueError(f"softmax_cross_entropy: label_smoothing must be in [0, 1), got {s}")
    n_classes = logits_shape[ax]
    _check_label_range(labels, n_classes)
    logp = log_softmax(logits, axis=ax)
    picked = fnp.take_along_axis(logp, fnp.expand_dims(labels, ax), axis=ax)
    loss = -fnp.squeeze(picked, axis=ax)
    if s:
        loss = (1.0 - s) * loss - s * fnp.mean(logp, axis=ax)
    return loss


def mse(predictions: Any, targets: Any, *, axis: Any = None) -> Tensor:
    """Mean squared error ``mean((predictions - targets)**2)`` over ``axis``.

    Args:
        predictions: floating Tensor.
        targets: Tensor broadcastable with ``predictions``.
        axis: axes to average over; None (default) averages everything to a scalar.

    Returns:
        Tensor with ``axis`` reduced, dtype of the promoted inputs.

    Raises:
        ShapeError: the shapes do not broadcast, or an axis is out of range.
        DTypeError: an input is not real numbers, or ``axis`` is not an int or a tuple of
            ints.

    Example:
        >>> mse(fnp.array([1.0, 2.0]), fnp.array([0.0, 4.0]))
        Tensor(2.5, dtype=float64)
    """
    predictions = _real(predictions, "mse", "predictions")
    targets = _real(targets, "mse", "targets")
    shape = broadcast_shapes("mse", predictions, targets)
    if axis is not None:
        norm_axes("mse", axis, len(shape))
    diff = predictions - targets
    return fnp.mean(diff * diff, axis=axis)


def _real(x: Any, fn: str, arg: str, *, bool_ok: bool = True) -> Any:
    """``x`` as a Tensor of real numbers (losses are real); Python ints and floats stay
    Python numbers, weakly typed (``mse(float32 x, 0.0)`` stays float32)."""
    if type(x) in (int, float) and -(2**63) <= x < 2**63:
        return x
    x = as_tensor(x, fn, arg)
    if dtypes.is_complex(x.dtype) or (not bool_ok and dtypes.is_bool(x.dtype)):
        raise DTypeError(
            f"{fn}: {arg} must be real numbers, got dtype {x.dtype}; losses of complex or "
            "bool values are not defined (take fnp.real, or cast with astype, first)"
        )
    return x


def binary_cross_entropy_with_logits(logits: Any, labels: Any) -> Tensor:
    """Binary cross-entropy of ``labels`` under ``sigmoid(logits)``, elementwise.

    ``-y log sigmoid(x) - (1 - y) log(1 - sigmoid(x))``, computed as ``y softplus(-x) +
    (1 - y) softplus(x)`` with a stable softplus: no ``exp`` overflows, and as both terms
    are non-negative nothing cancels, so even tiny losses at large ``|x|`` keep full
    relative precision (``softplus(x) - x y`` would round them to 0). The derivative is
    ``sigmoid(x) - y`` everywhere, ``x = 0`` included.

    Args:
        logits: floating Tensor of log-odds.
        labels: Tensor broadcastable with ``logits``; targets (probabilities) in ``[0, 1]``.
            Integer or bool targets are cast to the dtype of ``logits``.

    Returns:
        Tensor of the broadcast shape: the loss per element, in nats.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: an input is not real numbers.

    Example:
        >>> print(fnp.round(binary_cross_entropy_with_logits(fnp.array([0.0, 100.0]),
        ...                                                  fnp.array([1.0, 1.0])), 4))
        [0.6931 0.    ]
    """
    logits = _real(logits, "binary_cross_entropy_with_logits", "logits", bool_ok=False)
    labels = _real(labels, "binary_cross_entropy_with_logits", "labels")
    broadcast_shapes("binary_cross_entropy_with_logits", logits, labels)
    if hasattr(labels, "dtype") and not np.issubdtype(np.dtype(labels.dtype), np.inexact):
        # 0/1 integer or bool targets: keep the logits' float32
        labels = fnp.astype(labels, getattr(logits, "dtype", np.float64))
    return labels * softplus(-logits) + (1 - labels) * softplus(logits)
