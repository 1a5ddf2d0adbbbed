"""Learning-rate schedules: functions ``step -> value`` of the number of updates made so far.

They compute with fgrad ops, so an optimiser's traced integer ``count`` flows through them
under ``jit``; for a Python int step the same ops run eagerly and give a Python float.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


def _check_begin(name: str, transition_begin: Any) -> int:
    return _check_steps(name, "transition_begin", transition_begin, 0)


def exponential_decay(
    init_value: float,
    transition_steps: int,
    decay_rate: float,
    transition_begin: int = 0,
    staircase: bool = False,
    end_value: float | None = None,
) -> Schedule:
    """Exponential decay: ``init_value * decay_rate ** ((step - begin) / transition_steps)``.

    As optax's ``exponential_decay``: ``init_value`` until ``transition_begin``, then with
    ``p = (step - transition_begin) / transition_steps`` (rounded down when ``staircase``,
    so the value drops once every ``transition_steps``)::

        value(step) = init_value * decay_rate ** p

    clipped at ``end_value`` when given (from below when ``decay_rate < 1``, from above
    when it grows). Optax warns and returns a constant schedule for ``transition_steps <=
    0`` or ``decay_rate == 0``; this raises instead.

    Args:
        init_value: the value up to ``transition_begin``.
        transition_steps: int ``>= 1``, the steps over which the value is multiplied by
            ``decay_rate``.
        decay_rate: ``> 0``; below 1 decays, above 1 grows.
        transition_begin: int ``>= 0``, the step the decay starts at.
        staircase: decay in discrete jumps every ``transition_steps``.
        end_value: optional bound the value never passes.

    Returns:
        A function ``step -> value`` (steps count from 0): a Python float for a Python int
        step; for an integer Tensor step (an optimiser's ``count``, traced under ``jit``) a
        float64 Tensor of the step's shape, computed with the same fgrad ops.

    Raises:
        ValueError: ``transition_steps < 1``, ``transition_begin < 0`` or ``decay_rate <= 0``.

    Example:
        >>> s = exponential_decay(1.0, transition_steps=10, decay_rate=0.5)
        >>> s(0), s(5), s(10), s(20)
        (1.0, 0.7071067811865476, 0.5, 0.25)
        >>> s = exponential_decay(1.0, 10, 0.5, transition_begin=5, staircase=True, end_value=0.3)
        >>> [s(t) for t in (0, 5, 14, 15, 25, 100)]
        [1.0, 1.0, 1.0, 0.5, 0.3, 0.3]

    References:
        The learning-rate decay of Krizhevsky, Sutskever & Hinton, "ImageNet Classification
        with Deep Convolutional Neural Networks", NeurIPS 2012, Sec. 5 (``staircase``);
        TensorFlow's ``tf.compat.v1.train.exponential_decay`` (the parametrisation).
    """
    name = "exponential_decay"
    transition_steps = _check_steps(name, "transition_steps", transition_steps, 1)
    transition_begin = _check_begin(name, transition_begin)
    init_value, decay_rate = hyper(init_value), hyper(decay_rate)
    if not traced_scalar(decay_rate) and not decay_rate > 0.0:
        raise ValueError(f"{name}: decay_rate must be > 0, got {decay_rate}")
    end_value = None if end_value is None else hyper(end_value)
    bound = fnp.maximum if traced_scalar(decay_rate) or decay_rate < 1.0 else fnp.minimum
    staircase = bool(staircase)

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        since = step - transition_begin
        p = since / transition_steps
        if staircase:
            p = fnp.floor(p)
        value = fnp.where(since <= 0, init_value, init_value * fnp.power(decay_rate, p))
        if end_value is not None:
            value = bound(value, end_value)
        return _schedule_value(value, python)

    return schedule


def polynomial_schedule(
    init_value: float,
    end_value: float,
    power: float,
    transition_steps: int,
    transition_begin: int = 0,
) -> Schedule:
    """Polynomial decay from ``init_value`` to ``end_value`` over ``transition_steps``.

    As optax's ``polynomial_schedule``: with ``t = clip(step - transition_begin, 0,
    transition_steps)``::

        value(step) = (init_value - end_value) * (1 - t / transition_steps) ** power + end_value

    so the value is ``init_value`` up to ``transition_begin`` and ``end_value`` from
    ``transition_begin + transition_steps`` on.

    Args:
        init_value: the value up to ``transition_begin``.
        end_value: the value at and after ``transition_begin + transition_steps``.
        power: the exponent (1 is linear).
        transition_steps: int ``>= 1``.
        transition_begin: int ``>= 0``.

    Returns:
        A function ``step -> value`` (steps count from 0): a Python float for a Python int
        step; for an integer Tensor step a float64 Tensor, computed with the same fgrad ops.

    Raises:
        ValueError: ``transition_steps < 1`` or ``transition_begin < 0``.

    Example:
        >>> s = polynomial_schedule(1.0, 0.0, power=2, transition_steps=10)
        >>> s(0), s(5), s(10), s(50)
        (1.0, 0.25, 0.0, 0.0)

    References:
        TensorFlow's ``tf.compat.v1.train.polynomial_decay`` (without ``cycle``); the
        ``power = 1`` case is the linear decay of BERT's fine-tuning schedule, Devlin et
        al. 2019, arXiv:1810.04805, App. A.2.
    """
    name = "polynomial_schedule"
    transition_steps = _check_steps(name, "transition_steps", transition_steps, 1)
    transition_begin = _check_begin(name, transition_begin)
    init_value, end_value, power = hyper(init_value), hyper(end_value), hyper(power)

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        t = fnp.minimum(fnp.maximum(step - transition_begin, 0), transition_steps)
        frac = 1.0 - t / transition_steps
        return _schedule_value((init_value - end_value) * frac**power + end_value, python)

    return schedule


def linear_schedule(
    init_value: float, end_value: float, transition_steps: int, transition_begin: int = 0
) -> Schedule:
    """Linear interpolation from ``init_value`` to ``end_value`` over ``transition_steps``.

    :func:`polynomial_schedule` with ``power = 1`` (optax's ``linear_schedule``)::

        value(step) = init_value + (end_value - init_value) * t / transition_steps

    with ``t = clip(step - transition_begin, 0, transition_steps)``.

    Args:
        init_value: the value up to ``transition_begin``.
        end_value: the value at and after ``transition_begin + transition_steps``.
        transition_steps: int ``>= 1``.
        transition_begin: int ``>= 0``.

    Returns:
        A function ``step -> value``, as :func:`polynomial_schedule`.

    Raises:
        ValueError: ``transition_steps < 1`` or ``transition_begin < 0``.

    Example:
        >>> s = linear_schedule(1.0, 0.5, transition_steps=4, transition_begin=2)
        >>> [s(t) for t in range(8)]
        [1.0, 1.0, 1.0, 0.875, 0.75, 0.625, 0.5, 0.5]
    """
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def piecewise_constant_schedule(
    init_value: float, boundaries_and_scales: dict[int, float] | None = None
) -> Schedule:
    """A constant schedule multiplied by ``scale`` from each boundary step on.

    As optax's ``piecewise_constant_schedule``: for the boundaries ``b_i`` in increasing
    order with scales ``s_i``::

        value(step) = init_value * product of s_i over all b_i <= step

    Args:
        init_value: the value before the first boundary.
        boundaries_and_scales: optional dict ``{boundary step (int >= 0): scale (>= 0)}``.

    Returns:
        A function ``step -> value``: a Python float for a Python int step; for an integer
        Tensor step a float64 Tensor, computed with fgrad ops.

    Raises:
        ValueError: a negative scale or boundary.
        TypeError: ``boundaries_and_scales`` is not a dict.

    Example:
        >>> s = piecewise_constant_schedule(1.0, {10: 0.1, 20: 0.5})
        >>> [s(t) for t in (0, 9, 10, 19, 20, 100)]
        [1.0, 1.0, 0.1, 0.1, 0.05, 0.05]

    References:
        The step schedule of He et al., "Deep Residual Learning for Image Recognition",
        CVPR 2016, Sec. 3.4 (the rate divided by 10 at fixed iterations).
    """
    name = "piecewise_constant_schedule"
    init_value = hyper(init_value)
    if boundaries_and_scales is None:
        boundaries_and_scales = {}
    if not isinstance(boundaries_and_scales, dict):
        raise TypeError(
            f"{name}: boundaries_and_scales must be a dict {{step: scale}}, got "
            f"{type(boundaries_and_scales).__name__}"
        )
    pieces = []
    for boundary, s in sorted(boundaries_and_scales.items()):
        boundary = _check_steps(name, "a boundary", boundary, 0)
        s = hyper(s)
        if not traced_scalar(s) and not s >= 0.0:
            raise ValueError(f"{name}: scales must be >= 0, got {s} at boundary {boundary}")
        pieces.append((boundary, s))

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        value = fnp.full(step.shape, init_value, dtype="float64", device=step.device)
        for boundary, s in pieces:
            value = fnp.where(step >= boundary, value * s, value)
        return _schedule_value(value, python)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """Run ``schedules[0]``, then from ``boundaries[0]`` on ``schedules[1]``, and so on.

    As optax's ``join_schedules``: each schedule after the first restarts its step at its
    boundary, so from ``boundaries[i - 1]`` on the value is
    ``schedules[i](step - boundaries[i - 1])``.

    Args:
        schedules: ``n >= 1`` schedules (functions ``step -> value``).
        boundaries: ``n - 1`` increasing int steps ``>= 0``.

    Returns:
        A function ``step -> value``: a Python float for a Python int step; for an integer
        Tensor step a float64 Tensor. The schedules are called with Tensor steps, so they
        should be written with fgrad ops (the built-in ones are).

    Raises:
        ValueError: ``len(boundaries) != len(schedules) - 1``, or boundaries not increasing.
        TypeError: a schedule is not callable.

    Example:
        >>> warmup = linear_schedule(0.0, 1.0, transition_steps=4)
        >>> decay = exponential_decay(1.0, transition_steps=2, decay_rate=0.5)
        >>> s = join_schedules([warmup, decay], boundaries=[4])
        >>> [s(t) for t in range(9)]
        [0.0, 0.25, 0.5, 0.75, 1.0, 0.7071067811865476, 0.5, 0.3535533905932738, 0.25]
    """
    name = "join_schedules"
    schedules = list(schedules)
    boundaries = [_check_steps(name, "a boundary", b, 0) for b in boundaries]
    if not schedules or len(boundaries) != len(schedules) - 1:
        raise ValueError(
            f"{name}: needs len(boundaries) == len(schedules) - 1 >= 0, got {len(schedules)} "
            f"schedules and {len(boundaries)} boundaries"
        )
    if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
        raise ValueError(f"{name}: boundaries must be increasing, got {boundaries}")
    for i, s in enumerate(schedules):
        if not callable(s):
            raise TypeError(
                f"{name}: schedules[{i}] is {type(s).__name__}, not a function step -> value"
            )

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        value = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            value = fnp.where(step < boundary, value, later(step - boundary))
        return _schedule_value(value, python)

    return schedule
