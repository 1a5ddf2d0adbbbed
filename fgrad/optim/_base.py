"""What every transformation shares: the ``GradientTransformation`` pair, argument checks,
step counts, and the dtype rules (per-dtype factors, float32 accumulators, ``|g|**2``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np  # dtype and integer limits only; arrays go through fgrad ops

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.tensor import Tensor

Schedule = Callable[[Any], Any]  # step (int or integer Tensor) -> float or 0-d Tensor
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    """A pure optimiser: ``init(params) -> state``, ``update(grads, state, params=None)``.

    ``update`` returns ``(updates, new_state)``; ``updates`` has the structure of ``grads``.
    """

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none (:func:`clip_by_global_norm`, ...)."""


# --------------------------------------------------------------------------- arguments


def traced_scalar(value: Any) -> bool:
    """A 0-d traced value (a Python float argument of ``jit`` is one): used as it is, since
    its value cannot be checked while tracing (as optax takes arrays)."""
    return isinstance(value, Tensor) and type(value) is not Tensor and value.ndim == 0


def _as_float(name: str, what: str, value: Any, expected: str) -> float:
    """``float(value)`` of a real number (a numpy or 0-d array number too), never of a str
    or bool: ``float("0.001")`` would turn a typo'd config value into a silent number."""
    if isinstance(value, (str, bytes, bool)) or getattr(getattr(value, "dtype", None), "kind", "f") in "bUSO":
        raise TypeError(f"{name}: {what} must be {expected}, got {type(value).__name__} {value!r:.40}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: {what} must be {expected}, got {type(value).__name__}") from None


def check_lr(name: str, learning_rate: Any) -> ScalarOrSchedule:
    """A learning rate: a schedule or a traced scalar as it is, else a Python float >= 0."""
    if callable(learning_rate) or traced_scalar(learning_rate):
        return learning_rate
    lr = _as_float(
        name, "learning_rate", learning_rate, "a float or a schedule (a function step -> float)"
    )
    if not lr >= 0.0:
        raise ValueError(f"{name}: learning_rate must be >= 0, got {lr}")
    return lr


def check_range(name: str, what: str, value: Any, lo: float, hi: float | None) -> float:
    """A hyper-parameter as a Python float (weak, so it keeps the params' dtype), checked."""
    if traced_scalar(value):
        return value
    value = _as_float(name, what, value, "a float")
    if not (value >= lo and (hi is None or value < hi)):
        bound = f"[{lo}, {hi})" if hi is not None else f">= {lo}"
        raise ValueError(f"{name}: {what} must be in {bound}, got {value}")
    return value


def hyper(value: Any) -> Any:
    """A hyper-parameter as a Python float, or as it is when traced (a Python float argument
    of ``jit``), as optax takes arrays."""
    return value if traced_scalar(value) else float(value)


def require_params(name: str, why: str, params: Any) -> None:
    """Raise the error every transformation that reads ``params`` gives without them."""
    if params is None:
        raise ValueError(f"{name}.update needs params: {why}; call update(grads, state, params)")


# --------------------------------------------------------------------------- step counts


def init_count(params: Any, count: int = 0) -> Tensor:
    """A 0-d int32 step count on the device of ``params`` (the factors computed from it meet
    the leaves in the same kernels, and cupy does not mix devices)."""
    leaves = tree.leaves(params)
    device = getattr(leaves[0], "device", None) if leaves else None
    return fnp.full((), count, dtype="int32", device=device)


def get_count(name: str, state: Any, grads: Any) -> Tensor:
    """The state's step count as an integer Tensor (a Python int, as older states held, too)."""
    count = getattr(state, "count", None)
    if type(count) is int:
        return init_count(grads, count)
    if not (isinstance(count, Tensor) and count.shape == () and count.dtype.kind in "iu"):
        raise TypeError(
            f"{name}.update: state must be the value returned by {name}.init or a previous "
            f"{name}.update, got {type(state).__name__}"
        )
    return count


def increment(count: Tensor) -> Tensor:
    """``count + 1``, saturating at the dtype's largest value instead of wrapping around."""
    return fnp.minimum(count, np.iinfo(count.dtype).max - 1) + 1


def lr_at(learning_rate: ScalarOrSchedule, count: Tensor) -> float | Tensor:
    """The learning rate at ``count``: a Python float (weak), or a 0-d Tensor from a schedule.

    A Tensor (traced under ``jit``) stays one, on ``count``'s device; :func:`per_dtype`
    casts it to each leaf's dtype. Anything else a schedule returns (a numpy scalar, which
    is not weak under NEP 50) is concrete already and becomes a Python float.
    """
    if not callable(learning_rate):
        return learning_rate
    lr = learning_rate(count)
    return lr if isinstance(lr, Tensor) else float(lr)


# --------------------------------------------------------------------------- dtypes


def real_dtype(dtype: Any) -> np.dtype:
    """The real counterpart of a dtype: float32 for complex64, float64 for complex128."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def accumulator_dtype(dtype: Any) -> np.dtype:
    """The dtype running averages of ``dtype`` gradients are kept in.

    Floats narrower than 32 bits (float16) accumulate in float32, as mixed-precision
    training keeps its optimiser state: a float16 second moment underflows for gradients
    below about 2.4e-4 (their square is below float16's smallest subnormal), and ``eps =
    1e-8`` rounds to 0 in float16, so ``0 / (sqrt(0) + eps)`` would be NaN. Other dtypes
    accumulate as they are.
    """
    dtype = np.dtype(dtype)
    return np.dtype("float32") if dtype.kind == "f" and dtype.itemsize < 4 else dtype


def widen(x: Tensor) -> Tensor:
    """``x`` in its :func:`accumulator_dtype` (itself when that is its dtype)."""
    acc = accumulator_dtype(x.dtype)
    return x if x.dtype == acc else fnp.astype(x, acc)


def narrow(x: Tensor, like: Tensor) -> Tensor:
    """``x`` cast back to ``like``'s dtype where :func:`widen` widened ``like`` (float16);
    otherwise ``x`` as it is, so that other dtypes promote as they always have."""
    if accumulator_dtype(like.dtype) == like.dtype or x.dtype == like.dtype:
        return x
    return fnp.astype(x, like.dtype)


def abs_sq(x: Tensor) -> Tensor:
    """``|x|**2`` elementwise, real: ``x * x`` for real ``x``, ``real(x * conj(x))`` for
    complex ``x`` (``x * x`` would be complex and the wrong size: ``(3+4j)**2 = -7+24j``)."""
    if x.dtype.kind == "c":
        return fnp.real(x * fnp.conj(x))
    return x * x


def zeros_like_tree(params: Any, dtype: Callable[[np.dtype], np.dtype] | None = None) -> Any:
    """Zeros shaped like each leaf, in ``dtype(leaf.dtype)`` (the leaf's dtype by default)."""
    if dtype is None:
        return tree.map(fnp.zeros_like, params)
    return tree.map(lambda p: fnp.zeros_like(p, dtype=dtype(p.dtype)), params)


def per_dtype(factor: float | Tensor) -> Callable[[Tensor], float | Tensor]:
    """``leaf -> factor``, ready to multiply ``leaf`` without changing its dtype.

    A Python float is weak and passes as it is. A 0-d Tensor (a scheduled learning rate, a
    bias correction) is not weak under NEP 50, so it is cast to the leaf's real dtype, once
    per dtype: rounding the float64 value once, as numpy does with a Python float. (The real
    dtype, so that a complex64 leaf meets a float32 factor: the product stays complex64
    and a real factor scales both parts alike.)
    """
    if not isinstance(factor, Tensor) or factor.weak:  # weak: promotes as a Python float
        return lambda leaf: factor
    casts = {factor.dtype: factor}

    def like(leaf: Tensor) -> Tensor:
        target = real_dtype(leaf.dtype)
        cast = casts.get(target)
        if cast is None:
            cast = casts[target] = fnp.astype(factor, target)
        return cast

    return like
