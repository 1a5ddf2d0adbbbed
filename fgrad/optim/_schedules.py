"""Learning-rate schedules: functions ``step -> value`` of the number of updates made so far.

They compute with fgrad ops, so an optimiser's traced integer ``count`` flows through them
under ``jit``; for a Python int step the same ops run eagerly and give a Python float.
"""

from __future__ import annotations

import math
from typing import Any

import fgrad.numpy as fnp
from fgrad.core.staging import weak
from fgrad.optim._base import Schedule, hyper, traced_scalar
from fgrad.tensor import Tensor


def _check_steps(name: str, what: str, steps: Any, minimum: int) -> int:
    if isinstance(steps, bool) or int(steps) != steps or steps < minimum:
        raise ValueError(f"{name}: {what} must be an int >= {minimum}, got {steps!r}")
    return int(steps)


def _step_tensor(step: Any) -> tuple[Tensor, bool]:
    """``step`` as a Tensor, and whether it was a Python number (then a float is returned).

    Schedules compute with fgrad ops so that an optimiser's traced ``count`` flows through
    them under ``jit``; for a Python int the same ops run eagerly and give the same float.
    """
    if isinstance(step, Tensor):
        return step, False
    return fnp.asarray(int(step)), True


def _schedule_value(value: Any, python: bool) -> Any:
    """For a Python step, a Python float, as eager code gives (weakly typed when traced:
    a hyper-parameter was a Python float argument of ``jit``)."""
    if not python:
        return value
    return weak(value) if traced_scalar(value) else float(value)


def constant_schedule(value: float) -> Schedule:
    """The schedule that is ``value`` at every step.

    Args:
        value: the learning rate (float).

    Returns:
        A function ``step -> float`` that returns ``value`` itself, a Python float, also for
        a Tensor step.

    Example:
        >>> constant_schedule(0.1)(1000)
        0.1
    """
    value = hyper(value)

    def schedule(step: Any) -> float:
        return value

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0) -> Schedule:
    """Cosine decay from ``init_value`` to ``alpha * init_value`` over ``decay_steps``.

    ``value(step) = init_value * ((1 - alpha) * (1 + cos(pi * t / decay_steps)) / 2 + alpha)``
    with ``t = min(step, decay_steps)``; after ``decay_steps`` it stays at
    ``alpha * init_value`` (optax's ``cosine_decay_schedule``; one cycle of SGDR, no restarts).

    Args:
        init_value: the value at step 0.
        decay_steps: int ``>= 1``, the number of steps over which to decay.
        alpha: the final value as a fraction of ``init_value``.

    Returns:
        A function ``step -> value`` (steps count from 0): a Python float for a Python int
        step; for an integer Tensor step (an optimiser's ``count``, traced under ``jit``) a
        float64 Tensor of the step's shape, computed with the same fgrad ops.

    Raises:
        ValueError: ``decay_steps < 1``.

    Example:
        >>> s = cosine_decay_schedule(1.0, decay_steps=100, alpha=0.1)
        >>> s(0), s(50), s(100), s(500)
        (1.0, 0.55, 0.1, 0.1)

    References:
        Loshchilov & Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts",
        ICLR 2017, arXiv:1608.03983, Eq. (5).
    """
    init_value, alpha = hyper(init_value), hyper(alpha)
    decay_steps = _check_steps("cosine_decay_schedule", "decay_steps", decay_steps, 1)

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        t = fnp.minimum(fnp.maximum(step, 0), decay_steps)
        cosine = 0.5 * (1.0 + fnp.cos(math.pi * t / decay_steps))
        return _schedule_value(init_value * ((1.0 - alpha) * cosine + alpha), python)

    return schedule


def linear_warmup(peak_value: float, warmup_steps: int, init_value: float = 0.0) -> Schedule:
    """Linear ramp from ``init_value`` at step 0 to ``peak_value`` at ``warmup_steps``, then flat.

    ``value(step) = init_value + (peak_value - init_value) * min(step, warmup_steps) /
    warmup_steps`` (``peak_value`` throughout when ``warmup_steps == 0``).

    Args:
        peak_value: the value reached at ``warmup_steps`` and kept afterwards.
        warmup_steps: int ``>= 0``.
        init_value: the value at step 0.

    Returns:
        A function ``step -> value`` (steps count from 0): a Python float for a Python int
        step; for an integer Tensor step (an optimiser's ``count``, traced under ``jit``) a
        float64 Tensor of the step's shape, computed with the same fgrad ops
        (``peak_value`` itself, a float, when ``warmup_steps == 0``).

    Raises:
        ValueError: ``warmup_steps < 0``.

    Example:
        >>> s = linear_warmup(1.0, warmup_steps=4)
        >>> [s(t) for t in range(6)]
        [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]

    References:
        Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour", 2017,
        arXiv:1706.02677, Sec. 2.2 (gradual warm-up).
    """
    peak_value, init_value = hyper(peak_value), hyper(init_value)
    warmup_steps = _check_steps("linear_warmup", "warmup_steps", warmup_steps, 0)

    def schedule(step: Any) -> Any:
        if warmup_steps == 0:
            return peak_value
        step, python = _step_tensor(step)
        t = fnp.minimum(fnp.maximum(step, 0), warmup_steps)
        return _schedule_value(init_value + (peak_value - init_value) * t / warmup_steps, python)

    return schedule


def warmup_cosine_decay_schedule(
    init_value: float,
    peak_value: float,
    warmup_steps: int,
    decay_steps: int,
    end_value: float = 0.0,
) -> Schedule:
    """Linear warm-up to ``peak_value``, then cosine decay to ``end_value``.

    As optax's ``warmup_cosine_decay_schedule``: ``decay_steps`` is the *total* length,
    warm-up included. Steps ``[0, warmup_steps]`` ramp linearly from ``init_value`` to
    ``peak_value``; steps ``[warmup_steps, decay_steps]`` follow
    ``end_value + (peak_value - end_value) * (1 + cos(pi * t / (decay_steps - warmup_steps))) / 2``
    with ``t = step - warmup_steps``; later steps stay at ``end_value``.

    Args:
        init_value: the value at step 0.
        peak_value: the value at ``warmup_steps``.
        warmup_steps: int ``>= 0``.
        decay_steps: int ``> warmup_steps``, the step at which ``end_value`` is reached.
        end_value: the final value.

    Returns:
        A function ``step -> value`` (steps count from 0): a Python float for a Python int
        step; for an integer Tensor step (an optimiser's ``count``, traced under ``jit``) a
        float64 Tensor of the step's shape, computed with the same fgrad ops.

    Raises:
        ValueError: ``warmup_steps < 0`` or ``decay_steps <= warmup_steps``.

    Example:
        >>> s = warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=10, decay_steps=110)
        >>> s(0), s(5), s(10), s(60), s(110), s(200)
        (0.0, 0.5, 1.0, 0.5, 0.0, 0.0)

    References:
        Goyal et al. 2017, arXiv:1706.02677 (warm-up); Loshchilov & Hutter, ICLR 2017,
        arXiv:1608.03983 (cosine decay).
    """
    name = "warmup_cosine_decay_schedule"
    warmup_steps = _check_steps(name, "warmup_steps", warmup_steps, 0)
    decay_steps = _check_steps(name, "decay_steps", decay_steps, warmup_steps + 1)
    warmup = linear_warmup(peak_value, warmup_steps, init_value)
    peak_value, end_value = hyper(peak_value), hyper(end_value)
    period = decay_steps - warmup_steps

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        t = fnp.minimum(step - warmup_steps, period)  # negative during warm-up: not selected
        cosine = 0.5 * (1.0 + fnp.cos(math.pi * t / period))
        decayed = end_value + (peak_value - end_value) * cosine
        value = fnp.where(step < warmup_steps, warmup(step), decayed)
        return _schedule_value(value, python)

    return schedule
