"""More named optimisers (Lion, LAMB, Adagrad, Adafactor, NAdam, RAdam): chains of blocks,
each behind one flat NamedTuple state, as :func:`fgrad.optim.adam` is."""

from __future__ import annotations

from typing import Any, NamedTuple

from fgrad.optim._base import (
    EmptyState,
    GradientTransformation,
    ScalarOrSchedule,
    check_lr,
    check_range,
)
from fgrad.optim._optimisers import AdamState, _adam_args, _named
from fgrad.optim._scalers import (
    _check_int,
    EmaState,
    FactoredState,
    ScaleByLionState,
    ScaleByRssState,
    clip_by_block_rms,
    ema,
    scale_by_factored_rms,
    scale_by_lion,
    scale_by_param_block_rms,
    scale_by_rss,
    scale_by_trust_ratio,
)
from fgrad.optim._transforms import (
    ScaleByAdamState,
    ScaleByLearningRateState,
    add_decayed_weights,
    chain,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_radam,
)
from fgrad.tensor import Tensor


class LionState(NamedTuple):
    """State of :func:`lion`: step ``count`` and the momentum ``mu``."""

    count: Tensor
    mu: Any


class AdagradState(NamedTuple):
    """State of :func:`adagrad`: step ``count`` and the ``sum_of_squares`` of gradients."""

    count: Tensor
    sum_of_squares: Any


class AdafactorState(NamedTuple):
    """State of :func:`adafactor`: step ``count``, the factored second moment (``v_row``,
    ``v_col``, ``v``, as in :class:`FactoredState`) and the ``momentum`` (None without)."""

    count: Tensor
    v_row: Any
    v_col: Any
    v: Any
    momentum: Any


def _adam_like(name: str, first: GradientTransformation, learning_rate) -> GradientTransformation:
    """``chain(first, scale_by_learning_rate)`` behind :class:`AdamState`, for a ``first``
    block whose state is a :class:`ScaleByAdamState` (NAdam, RAdam)."""
    return _named(
        name,
        chain(first, scale_by_learning_rate(learning_rate)),
        lambda s, count: (ScaleByAdamState(count, s.mu, s.nu), ScaleByLearningRateState(count)),
        lambda parts: AdamState(parts[1].count, parts[0].mu, parts[0].nu),
        state_type=AdamState,
    )


def nadam(
    learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> GradientTransformation:
    r"""NAdam: Adam with a Nesterov look-ahead first moment.

    Dozat (2016), Algorithm 2, with a constant momentum ``b1`` (optax's ``nadam``; PyTorch's
    ``NAdam`` also decays the momentum by a schedule, which this does not). With ``t = 1, 2,
    ...`` and ``m``, ``v`` as in :func:`adam`::

        m_t = b1 * m_{t-1} + (1 - b1) * g_t
        v_t = b2 * v_{t-1} + (1 - b2) * |g_t|**2
        m_hat = b1 * m_t / (1 - b1**(t + 1)) + (1 - b1) * g_t / (1 - b1**t)
        v_hat = v_t / (1 - b2**t)
        updates = -lr_t * m_hat / (sqrt(v_hat) + eps)

    It is ``chain(scale_by_adam(b1, b2, eps, nesterov=True), scale_by_learning_rate(lr))``.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_hat)``.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdamState` (dtypes as in
        :func:`adam`); updates keep the structure, shapes and dtypes of the gradients.

    Raises:
        ValueError: a hyper-parameter out of its range.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> opt = nadam(0.1, b1=0.5, eps=0.0)
        >>> updates, state = opt.update(fnp.array([2.0]), opt.init(fnp.zeros(1)))
        >>> updates  # m_hat = 0.5 * 1 / 0.75 + 0.5 * 2 / 0.5 = 8/3; v_hat = 4
        Tensor([-0.13333333], dtype=float64)

    References:
        Dozat, "Incorporating Nesterov Momentum into Adam", ICLR 2016 workshop,
        Algorithm 2.
    """
    learning_rate, b1, b2, eps = _adam_args("nadam", learning_rate, b1, b2, eps)
    return _adam_like("nadam", scale_by_adam(b1, b2, eps, nesterov=True), learning_rate)


def radam(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    threshold: float = 5.0,
) -> GradientTransformation:
    r"""RAdam: Adam whose adaptive step is rectified while its variance is intractable.

    Liu et al. (2019), Algorithm 2, with optax's ``threshold = 5`` (the paper's ``4``).
    With ``m_hat``, ``v_hat`` as in :func:`adam` and ``rho_inf = 2 / (1 - b2) - 1``::

        rho_t = rho_inf - 2 t b2**t / (1 - b2**t)
        r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        updates = -lr_t * r_t * m_hat / (sqrt(v_hat) + eps)   if rho_t >= threshold
                  -lr_t * m_hat                                otherwise

    It is ``chain(scale_by_radam(b1, b2, eps, threshold), scale_by_learning_rate(lr))``.
    With the default ``b2``, the first 5 steps are momentum SGD.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_hat)``.
        threshold: ``>= 4``, the ``rho_t`` from which the adaptive step is taken.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdamState` (dtypes as in
        :func:`adam`); updates keep the structure, shapes and dtypes of the gradients.

    Raises:
        ValueError: a hyper-parameter out of its range.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> opt = radam(0.1)
        >>> updates, state = opt.update(fnp.array([2.0, -1.0]), opt.init(fnp.zeros(2)))
        >>> updates  # rho_1 = 1: -lr * m_hat = -lr * g
        Tensor([-0.2,  0.1], dtype=float64)

    References:
        Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond", ICLR 2020,
        arXiv:1908.03265, Algorithm 2.
    """
    learning_rate, b1, b2, eps = _adam_args("radam", learning_rate, b1, b2, eps)
    threshold = check_range("radam", "threshold", threshold, 4.0, None)
    return _adam_like("radam", scale_by_radam(b1, b2, eps, threshold), learning_rate)


def lion(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.99,
    weight_decay: float = 1e-3,
    mask: Any = None,
) -> GradientTransformation:
    r"""Lion: the sign of an interpolated momentum, with decoupled weight decay.

    Chen et al. (2023), Algorithm 2; the momentum starts at ``m_0 = 0``::

        c_t = b1 * m_{t-1} + (1 - b1) * g_t
        updates = -lr_t * (sign(c_t) + weight_decay * params)
        m_t = b2 * m_{t-1} + (1 - b2) * g_t

    Every component moves by ``lr`` (plus the decay), so Lion's learning rate is usually
    3-10x smaller than AdamW's and its weight decay 3-10x larger (Sec. 5 of the paper). It
    is ``chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask),
    scale_by_learning_rate(lr))``, as optax's ``lion``.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        b1: interpolation factor of the update direction, in ``[0, 1)``.
        b2: decay of the momentum, in ``[0, 1)``.
        weight_decay: ``>= 0``, the decoupled decay coefficient ``lambda``.
        mask: as in :func:`adamw`: which leaves are decayed.

    Returns:
        A :class:`GradientTransformation` with state :class:`LionState`. ``update`` needs
        ``params``; updates keep the structure, shapes and dtypes of the gradients.

    Raises:
        ValueError: a hyper-parameter out of its range; ``update`` called without ``params``.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> params = fnp.array([1.0, -2.0, 3.0])
        >>> opt = lion(0.01, weight_decay=0.0)
        >>> updates, state = opt.update(fnp.array([0.5, -4.0, 0.0]), opt.init(params), params)
        >>> updates  # -lr * sign(g)
        Tensor([-0.01,  0.01, -0.  ], dtype=float64)

    References:
        Chen et al., "Symbolic Discovery of Optimization Algorithms", NeurIPS 2023,
        arXiv:2302.06675, Algorithm 2.
    """
    name = "lion"
    learning_rate = check_lr(name, learning_rate)
    b1 = check_range(name, "b1", b1, 0.0, 1.0)
    b2 = check_range(name, "b2", b2, 0.0, 1.0)
    return _named(
        name,
        chain(
            scale_by_lion(b1, b2),
            add_decayed_weights(_decay(name, weight_decay), mask),
            scale_by_learning_rate(learning_rate),
        ),
        lambda s, count: (ScaleByLionState(s.mu), EmptyState(), ScaleByLearningRateState(count)),
        lambda parts: LionState(parts[2].count, parts[0].mu),
        needs_params="the decoupled weight decay is proportional to them",
        state_type=LionState,
    )


def _decay(name: str, weight_decay: Any) -> Any:
    """``weight_decay`` checked under the optimiser's name (the block would name itself)."""
    return check_range(name, "weight_decay", weight_decay, 0.0, None)


def lamb(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-6,
    weight_decay: float = 0.0,
    mask: Any = None,
) -> GradientTransformation:
    r"""LAMB: AdamW's step rescaled per leaf by the trust ratio ``||params|| / ||step||``.

    You et al. (2019), Algorithm 2 with ``phi`` the identity (optax's ``lamb``). With
    ``m_hat``, ``v_hat`` as in :func:`adam` and norms taken per leaf::

        r_t = m_hat / (sqrt(v_hat) + eps) + weight_decay * params
        updates = -lr_t * (||params|| / ||r_t||) * r_t

    (the ratio is 1 where either norm is 0). It is ``chain(scale_by_adam(b1, b2, eps),
    add_decayed_weights(weight_decay, mask), scale_by_trust_ratio(),
    scale_by_learning_rate(lr))``.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_hat)`` (the paper's 1e-6).
        weight_decay: ``>= 0``, the decoupled decay coefficient.
        mask: as in :func:`adamw`: which leaves are decayed.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdamState`. ``update`` needs
        ``params``; updates keep the structure, shapes and dtypes of the gradients.

    Raises:
        ValueError: a hyper-parameter out of its range; ``update`` called without ``params``.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> params = fnp.array([3.0, 4.0])
        >>> opt = lamb(0.1, eps=0.0)
        >>> updates, state = opt.update(fnp.array([1.0, -1.0]), opt.init(params), params)
        >>> updates  # r = sign(g), ||r|| = sqrt(2), ||params|| = 5: -0.1 * 5 / sqrt(2) * r
        Tensor([-0.35355339,  0.35355339], dtype=float64)

    References:
        You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76
        minutes", ICLR 2020, arXiv:1904.00962, Algorithm 2.
    """
    learning_rate, b1, b2, eps = _adam_args("lamb", learning_rate, b1, b2, eps)
    return _named(
        "lamb",
        chain(
            scale_by_adam(b1, b2, eps),
            add_decayed_weights(_decay("lamb", weight_decay), mask),
            scale_by_trust_ratio(),
            scale_by_learning_rate(learning_rate),
        ),
        lambda s, count: (
            ScaleByAdamState(count, s.mu, s.nu),
            EmptyState(),
            EmptyState(),
            ScaleByLearningRateState(count),
        ),
        lambda parts: AdamState(parts[3].count, parts[0].mu, parts[0].nu),
        needs_params="the trust ratio is the norm of each leaf of params",
        state_type=AdamState,
    )


def adagrad(
    learning_rate: ScalarOrSchedule, initial_accumulator_value: float = 0.1, eps: float = 1e-7
) -> GradientTransformation:
    r"""Adagrad: steps divided by the root of each coordinate's sum of squared gradients.

    Duchi et al. (2011), diagonal version, in optax's form (the sum starts at
    ``initial_accumulator_value`` and ``eps`` is inside the root)::

        s_t = s_{t-1} + |g_t|**2
        updates = -lr_t * g_t / sqrt(s_t + eps)      (0 where s_t == 0)

    It is ``chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(lr))``.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        initial_accumulator_value: ``>= 0``, the sum's initial value.
        eps: ``>= 0``, added under the square root.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdagradState` (the sum in each
        leaf's real dtype, float32 for float16); updates keep the structure, shapes and
        dtypes of the gradients.

    Raises:
        ValueError: a hyper-parameter out of its range.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> opt = adagrad(1.0, initial_accumulator_value=0.0, eps=0.0)
        >>> state = opt.init(fnp.zeros(1))
        >>> _, state = opt.update(fnp.array([3.0]), state)
        >>> updates, state = opt.update(fnp.array([4.0]), state)
        >>> updates, state.sum_of_squares  # -4 / sqrt(9 + 16)
        (Tensor([-0.8], dtype=float64), Tensor([25.], dtype=float64))

    References:
        Duchi, Hazan & Singer, "Adaptive Subgradient Methods for Online Learning and
        Stochastic Optimization", JMLR 12, 2011, Sec. 1.1.
    """
    learning_rate = check_lr("adagrad", learning_rate)
    initial_accumulator_value = check_range(
        "adagrad", "initial_accumulator_value", initial_accumulator_value, 0.0, None
    )
    eps = check_range("adagrad", "eps", eps, 0.0, None)
    return _named(
        "adagrad",
        chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate)),
        lambda s, count: (ScaleByRssState(s.sum_of_squares), ScaleByLearningRateState(count)),
        lambda parts: AdagradState(parts[1].count, parts[0].sum_of_squares),
        state_type=AdagradState,
    )


def adafactor(
    learning_rate: ScalarOrSchedule | None = None,
    min_dim_size_to_factor: int = 128,
    decay_rate: float = 0.8,
    decay_offset: int = 0,
    multiply_by_parameter_scale: bool = True,
    clipping_threshold: float | None = 1.0,
    momentum: float | None = None,
    weight_decay_rate: float | None = None,
    eps: float = 1e-30,
    factored: bool = True,
    weight_decay_mask: Any = None,
) -> GradientTransformation:
    r"""Adafactor: a factored second moment, update clipping and relative step sizes.

    Shazeer & Stern (2018), Algorithms 4-5, with optax's defaults and order of blocks. With
    ``t = 1, 2, ...`` and ``u_t`` the direction of :func:`scale_by_factored_rms` (``g_t``
    over the root of the factored estimate of ``E[g**2]``, decay ``1 - t**-decay_rate``)::

        u_t = g_t / sqrt(V_hat_t)                            (scale_by_factored_rms)
        u_t = u_t / max(1, rms(u_t) / clipping_threshold)    (clip_by_block_rms, Eq. 9)
        u_t = lr_t * u_t                                     (if learning_rate is given)
        u_t = max(1e-3, rms(params)) * u_t                   (multiply_by_parameter_scale)
        u_t = momentum * u_{t-1} + (1 - momentum) * u_t      (if momentum is given)
        u_t = u_t + weight_decay_rate * params               (if weight_decay_rate is given)
        updates = -u_t

    ``rms(x) = sqrt(mean(|x|**2))`` per leaf. The paper's relative step ``rho_t = min(1e-2,
    1 / sqrt(t))`` is a schedule here, as in optax: ``learning_rate=lambda step:
    fnp.minimum(1e-2, 1 / fnp.sqrt(step + 1.0))``; without a ``learning_rate`` the step
    is the parameter scale alone. Leaves with fewer than 2 axes, or a second-largest axis
    below ``min_dim_size_to_factor``, keep their whole second moment.

    Args:
        learning_rate: optional float ``>= 0`` or schedule ``step -> float``.
        min_dim_size_to_factor: int ``>= 1`` (see above).
        decay_rate: ``> 0``, the exponent of the second moment's decay (the paper's 0.8).
        decay_offset: int ``>= 0``, a step offset for that decay (fine-tuning).
        multiply_by_parameter_scale: scale by the parameters' RMS (the relative step).
        clipping_threshold: optional ``d > 0`` of the update clipping (None: no clipping).
        momentum: optional ``beta_1`` in ``[0, 1)`` of a (non-debiased) EMA of updates.
        weight_decay_rate: optional ``>= 0`` decay, added after the scaling.
        eps: ``>= 0``, the paper's ``epsilon_1``, added to the squared gradients.
        factored: factor matrices' second moments (False keeps them whole).
        weight_decay_mask: as ``mask`` in :func:`adamw`.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdafactorState`. ``update``
        needs ``params`` when ``multiply_by_parameter_scale`` or ``weight_decay_rate``;
        updates keep the structure, shapes and dtypes of the gradients.

    Raises:
        ValueError: a hyper-parameter out of its range; ``update`` called without the
            ``params`` it needs.
        TypeError: ``learning_rate`` is neither None, a number nor callable.

    Example:
        >>> params = {"w": fnp.full((2, 3), 2.0)}
        >>> opt = adafactor(min_dim_size_to_factor=2)
        >>> grads = {"w": fnp.full((2, 3), 0.5)}
        >>> updates, state = opt.update(grads, opt.init(params), params)
        >>> updates["w"]  # t = 1: -rms(params) * sign(g), the clipping leaves rms 1
        Tensor([[-2., -2., -2.],
                [-2., -2., -2.]], dtype=float64)
        >>> state.v_row["w"].shape, state.v_col["w"].shape
        ((2,), (3,))

    References:
        Shazeer & Stern, "Adafactor: Adaptive Learning Rates with Sublinear Memory Cost",
        ICML 2018, arXiv:1804.04235, Algorithms 4-5.
    """
    name = "adafactor"
    min_dim_size_to_factor = _check_int(name, "min_dim_size_to_factor", min_dim_size_to_factor, 1)
    decay_offset = _check_int(name, "decay_offset", decay_offset, 0)
    decay_rate = check_range(name, "decay_rate", decay_rate, 0.0, None)
    eps = check_range(name, "eps", eps, 0.0, None)
    if clipping_threshold is not None:
        clipping_threshold = check_range(name, "clipping_threshold", clipping_threshold, 0.0, None)
    if momentum is not None:
        momentum = check_range(name, "momentum", momentum, 0.0, 1.0)
    blocks = [
        scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)
    ]
    kinds = ["factored"]
    if clipping_threshold is not None:
        blocks.append(clip_by_block_rms(clipping_threshold))
        kinds.append("empty")
    if learning_rate is not None:
        blocks.append(scale_by_learning_rate(check_lr("adafactor", learning_rate), flip_sign=False))
        kinds.append("lr")
    if multiply_by_parameter_scale:
        blocks.append(scale_by_param_block_rms())
        kinds.append("empty")
    if momentum is not None:
        blocks.append(ema(momentum, debias=False))
        kinds.append("ema")
    if weight_decay_rate is not None:
        decay = _decay("adafactor", weight_decay_rate)
        blocks.append(add_decayed_weights(decay, weight_decay_mask))
        kinds.append("empty")
    blocks.append(scale(-1.0))  # descent
    kinds.append("empty")

    def split(s: AdafactorState, count: Tensor) -> tuple:
        made = {
            "factored": lambda: FactoredState(count, s.v_row, s.v_col, s.v),
            "lr": lambda: ScaleByLearningRateState(count),
            "ema": lambda: EmaState(count, s.momentum),
            "empty": EmptyState,
        }
        return tuple(made[kind]() for kind in kinds)

    def join(parts: tuple) -> AdafactorState:
        f = parts[0]
        m = next((p.ema for p, kind in zip(parts, kinds) if kind == "ema"), None)
        return AdafactorState(f.count, f.v_row, f.v_col, f.v, m)

    needs = multiply_by_parameter_scale or weight_decay_rate is not None
    return _named(
        "adafactor",
        chain(*blocks),
        split,
        join,
        needs_params="the step is relative to their scale" if needs else None,
        state_type=AdafactorState,
    )
