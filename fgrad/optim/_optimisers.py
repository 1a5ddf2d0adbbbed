"""The named optimisers: short chains of the blocks in ``_transforms``, each behind the one
flat NamedTuple state it has always had."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from fgrad.optim._base import (
    EmptyState,
    GradientTransformation,
    ScalarOrSchedule,
    check_lr,
    check_range,
    get_count,
    require_params,
    traced_scalar,
)
from fgrad.optim._transforms import (
    ScaleByAdamState,
    ScaleByLearningRateState,
    ScaleByRmsState,
    TraceState,
    add_decayed_weights,
    chain,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    trace,
)
from fgrad.tensor import Tensor


class SgdState(NamedTuple):
    """State of :func:`sgd`: step ``count`` and the ``momentum`` buffer (None without)."""

    count: Tensor
    momentum: Any


class AdamState(NamedTuple):
    """State of :func:`adam` / :func:`adamw`: step ``count``, first and second moments."""

    count: Tensor
    mu: Any
    nu: Any


class RmsPropState(NamedTuple):
    """State of :func:`rmsprop`: step ``count``, mean square ``nu``, ``momentum`` buffer."""

    count: Tensor
    nu: Any
    momentum: Any


def _named(
    name: str,
    inner: GradientTransformation,
    split: Callable[[Any, Tensor], tuple],
    join: Callable[[tuple], Any],
    needs_params: str | None = None,
    state_type: type | None = None,
) -> GradientTransformation:
    """``inner`` (a :func:`chain` of blocks) behind the named optimiser's flat state.

    A chain's state is the tuple of its blocks' states, several of which hold a step count.
    A named optimiser keeps the one NamedTuple it always had instead (one ``count``, the
    buffers by name), so that code reading ``state.mu`` and checkpoints saved as the
    state's leaves keep working: ``split(state, count)`` rebuilds the blocks' states from
    it, ``join(block_states)`` folds them back. The state is checked here (against
    ``state_type``, by default the named optimiser's own), so that errors name the
    optimiser the user called.
    """

    def init(params: Any) -> Any:
        return join(inner.init(params))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        if needs_params:
            require_params(name, needs_params, params)
        want = state_type or _STATE_TYPES.get(name)
        if want is not None and hasattr(state, "_fields") and not isinstance(state, want):
            raise TypeError(
                f"{name}.update: state is a {type(state).__name__}, the state of another "
                f"optimiser; pass the {want.__name__} that {name}(...).init(params) returned"
            )
        count = get_count(name, state, grads)
        updates, parts = inner.update(grads, split(state, count), params)
        return updates, join(parts)

    return GradientTransformation(init, update)


_STATE_TYPES = {"sgd": SgdState, "adam": AdamState, "adamw": AdamState, "rmsprop": RmsPropState}


def _has_momentum(momentum: Any) -> bool:
    return traced_scalar(momentum) or momentum != 0.0  # a traced one: keep a buffer


def sgd(
    learning_rate: ScalarOrSchedule, momentum: float = 0.0, nesterov: bool = False
) -> GradientTransformation:
    r"""Stochastic gradient descent, optionally with heavy-ball or Nesterov momentum.

    With gradient ``g_t``, momentum ``mu`` and learning rate ``lr_t``, the buffer starts at
    ``b_0 = 0`` and each update is (PyTorch's ``torch.optim.SGD`` with ``dampening=0``, which
    equals optax's ``sgd``; the learning rate multiplies the buffer, it is not inside it)::

        b_t = mu * b_{t-1} + g_t
        d_t = g_t + mu * b_t     if nesterov else  b_t
        updates = -lr_t * d_t

    Without momentum (``mu = 0``) this is plain ``-lr_t * g_t`` and no buffer is kept.
    It is ``chain(trace(mu, nesterov), scale_by_learning_rate(lr))`` (without the
    :func:`trace` when ``mu = 0``).

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        momentum: ``mu >= 0`` (usually 0.9); 0 turns momentum off.
        nesterov: use Nesterov momentum in PyTorch's (and optax's) reformulation of
            Sutskever et al. (2013), the ``d_t`` line above.

    Returns:
        A :class:`GradientTransformation` with state :class:`SgdState`. ``update`` takes
        a pytree of floating Tensors (any shapes; complex ones too) and returns updates of
        the same structure, shapes and dtypes; ``params`` is not needed.

    Raises:
        ValueError: negative ``learning_rate`` or ``momentum``; ``nesterov`` without momentum.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> params = {"w": fnp.array([1.0, -2.0])}
        >>> opt = sgd(0.1, momentum=0.9)
        >>> state = opt.init(params)
        >>> grads = {"w": fnp.array([0.5, 0.5])}
        >>> updates, state = opt.update(grads, state)
        >>> updates, state = opt.update(grads, state)  # buffer 0.5 -> 0.9 * 0.5 + 0.5
        >>> updates["w"]
        Tensor([-0.095, -0.095], dtype=float64)

    References:
        Polyak, "Some methods of speeding up the convergence of iteration methods", 1964.
        Sutskever, Martens, Dahl & Hinton, "On the importance of initialization and momentum
        in deep learning", ICML 2013, Eq. (3)-(4) (Nesterov momentum, reformulated above so
        that the gradient is taken at the current parameters).
    """
    learning_rate = check_lr("sgd", learning_rate)
    momentum = check_range("sgd", "momentum", momentum, 0.0, None)
    if nesterov and not _has_momentum(momentum):
        raise ValueError("sgd: nesterov=True needs momentum > 0")

    if not _has_momentum(momentum):
        return _named(
            "sgd",
            chain(scale_by_learning_rate(learning_rate)),
            lambda s, count: (ScaleByLearningRateState(count),),
            lambda parts: SgdState(parts[0].count, None),
        )
    return _named(
        "sgd",
        chain(trace(momentum, nesterov), scale_by_learning_rate(learning_rate)),
        lambda s, count: (TraceState(s.momentum), ScaleByLearningRateState(count)),
        lambda parts: SgdState(parts[1].count, parts[0].trace),
    )


def _adam_args(name, learning_rate, b1, b2, eps):
    return (
        check_lr(name, learning_rate),
        check_range(name, "b1", b1, 0.0, 1.0),
        check_range(name, "b2", b2, 0.0, 1.0),
        check_range(name, "eps", eps, 0.0, None),
    )


def adam(
    learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> GradientTransformation:
    r"""Adam: steps scaled by bias-corrected first and second moment estimates.

    Algorithm 1 of Kingma & Ba (2015), exactly; ``t = 1, 2, ...`` counts updates, moments
    start at zero, and ``eps`` is added outside the square root (as optax's ``adam`` and
    PyTorch's ``torch.optim.Adam``)::

        m_t = b1 * m_{t-1} + (1 - b1) * g_t
        v_t = b2 * v_{t-1} + (1 - b2) * |g_t|**2
        m_hat = m_t / (1 - b1**t),   v_hat = v_t / (1 - b2**t)
        updates = -lr_t * m_hat / (sqrt(v_hat) + eps)

    At ``t = 1`` the corrections make ``m_hat = g`` and ``v_hat = |g|**2``, so each
    component of the first update is ``-lr * g / (|g| + eps)``, about ``-lr * sign(g)``.
    It is ``chain(scale_by_adam(b1, b2, eps), scale_by_learning_rate(lr))``.

    ``|g|**2 = g * conj(g)`` is real, so complex parameters work as in optax (pass the
    conjugate of ``fgrad.grad``'s gradient, which follows JAX's convention). Float16
    parameters keep their moments in float32, where ``eps`` and small squares do not
    vanish; the updates are cast back to float16.

    Args:
        learning_rate: ``alpha``; float ``>= 0`` or a schedule ``step -> float``
            (called with ``t - 1``).
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_hat)`` for numerical stability.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdamState`: ``mu`` with the
        shapes and dtypes of ``params``, ``nu`` in their real counterparts (float32 for
        both with float16 params). ``update`` takes a pytree of floating Tensors and
        returns updates of the same structure, shapes and dtypes.

    Raises:
        ValueError: a hyper-parameter out of its range.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> params = fnp.array([1.0, -2.0, 3.0])
        >>> opt = adam(0.01)
        >>> updates, state = opt.update(fnp.array([0.5, -4.0, 0.0]), opt.init(params))
        >>> np.round(np.asarray(updates), 6)  # -lr * g / (|g| + eps): about -lr * sign(g)
        array([-0.01,  0.01,  0.  ])

    References:
        Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015,
        arXiv:1412.6980, Algorithm 1.
    """
    learning_rate, b1, b2, eps = _adam_args("adam", learning_rate, b1, b2, eps)
    return _named(
        "adam",
        chain(scale_by_adam(b1, b2, eps), scale_by_learning_rate(learning_rate)),
        lambda s, count: (ScaleByAdamState(count, s.mu, s.nu), ScaleByLearningRateState(count)),
        lambda parts: AdamState(parts[1].count, parts[0].mu, parts[0].nu),
    )


def adamw(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 1e-4,
    mask: Any = None,
) -> GradientTransformation:
    r"""Adam with decoupled weight decay (AdamW).

    The Adam direction of :func:`adam` plus ``weight_decay * params``, both scaled by the
    learning rate; the decay does not pass through the moment estimates::

        m_t, v_t, m_hat, v_hat  as in adam  (with |g_t|**2)
        updates = -lr_t * (m_hat / (sqrt(v_hat) + eps) + weight_decay * params)

    This is Algorithm 2 of Loshchilov & Hutter (2019) in the parametrisation of PyTorch's
    ``torch.optim.AdamW`` and optax's ``adamw``: the paper writes
    ``-eta_t * (alpha * adam_step + lambda * params)``; here ``lr_t = eta_t * alpha`` and
    ``weight_decay = lambda / alpha``. It is ``chain(scale_by_adam(b1, b2, eps),
    add_decayed_weights(weight_decay, mask), scale_by_learning_rate(lr))``. Complex and
    float16 parameters are handled as in :func:`adam`.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_hat)``.
        weight_decay: ``>= 0``, the decoupled decay coefficient.
        mask: optional pytree of bools with the structure of ``params`` (or a function
            ``params -> such a pytree``); leaves marked False (biases, norm scales) get no
            weight decay. Default: decay every leaf.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdamState` (dtypes as in
        :func:`adam`). ``update`` needs ``params`` (a pytree of floating Tensors with the
        structure of ``grads``).

    Raises:
        ValueError: a hyper-parameter out of its range; ``update`` called without ``params``.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> params = fnp.array([10.0])
        >>> opt = adamw(0.1, weight_decay=0.5)
        >>> updates, state = opt.update(fnp.array([0.0]), opt.init(params), params)
        >>> updates  # zero gradient: only the decay, -0.1 * 0.5 * 10
        Tensor([-0.5], dtype=float64)

    References:
        Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019,
        arXiv:1711.05101, Algorithm 2. Kingma & Ba, ICLR 2015, Algorithm 1.
    """
    learning_rate, b1, b2, eps = _adam_args("adamw", learning_rate, b1, b2, eps)
    weight_decay = check_range("adamw", "weight_decay", weight_decay, 0.0, None)
    return _named(
        "adamw",
        chain(
            scale_by_adam(b1, b2, eps),
            add_decayed_weights(weight_decay, mask),
            scale_by_learning_rate(learning_rate),
        ),
        lambda s, count: (
            ScaleByAdamState(count, s.mu, s.nu),
            EmptyState(),
            ScaleByLearningRateState(count),
        ),
        lambda parts: AdamState(parts[2].count, parts[0].mu, parts[0].nu),
        needs_params="the decoupled weight decay is proportional to them",
    )


def rmsprop(
    learning_rate: ScalarOrSchedule, decay: float = 0.9, eps: float = 1e-8, momentum: float = 0.0
) -> GradientTransformation:
    r"""RMSProp: gradients divided by a running root mean square.

    PyTorch's ``torch.optim.RMSprop`` (non-centred; ``decay`` is its ``alpha``), with the
    mean square starting at zero and ``eps`` added outside the square root (optax's
    ``rmsprop`` adds it inside; the two differ only in how ``eps`` enters)::

        v_t = decay * v_{t-1} + (1 - decay) * |g_t|**2
        s_t = g_t / (sqrt(v_t) + eps)
        b_t = momentum * b_{t-1} + s_t          (b_t = s_t when momentum == 0)
        updates = -lr_t * b_t

    It is ``chain(scale_by_rms(decay, eps), trace(momentum), scale_by_learning_rate(lr))``
    (without the :func:`trace` when ``momentum == 0``). Complex parameters get a real mean
    square; float16 parameters keep it in float32 (the momentum buffer keeps their dtype).

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        decay: decay of the mean square, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_t)``.
        momentum: ``>= 0``; momentum on the scaled gradient (no buffer when 0).

    Returns:
        A :class:`GradientTransformation` with state :class:`RmsPropState`. ``update`` takes
        a pytree of floating Tensors and returns updates of the same structure, shapes and
        dtypes.

    Raises:
        ValueError: a hyper-parameter out of its range.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> opt = rmsprop(0.01, decay=0.9)
        >>> params = fnp.array([1.0, 1.0])
        >>> updates, state = opt.update(fnp.array([2.0, -0.5]), opt.init(params))
        >>> np.round(np.asarray(updates), 6)  # -lr * g / sqrt(0.1 g**2) = -lr sign(g) / sqrt(0.1)
        array([-0.031623,  0.031623])

    References:
        Tieleman & Hinton, "Lecture 6.5 - rmsprop: Divide the gradient by a running average
        of its recent magnitude", COURSERA: Neural Networks for Machine Learning, 2012.
    """
    learning_rate = check_lr("rmsprop", learning_rate)
    decay = check_range("rmsprop", "decay", decay, 0.0, 1.0)
    eps = check_range("rmsprop", "eps", eps, 0.0, None)
    momentum = check_range("rmsprop", "momentum", momentum, 0.0, None)

    if not _has_momentum(momentum):
        return _named(
            "rmsprop",
            chain(scale_by_rms(decay, eps), scale_by_learning_rate(learning_rate)),
            lambda s, count: (ScaleByRmsState(s.nu), ScaleByLearningRateState(count)),
            lambda parts: RmsPropState(parts[1].count, parts[0].nu, None),
        )
    return _named(
        "rmsprop",
        chain(scale_by_rms(decay, eps), trace(momentum), scale_by_learning_rate(learning_rate)),
        lambda s, count: (
            ScaleByRmsState(s.nu),
            TraceState(s.momentum),
            ScaleByLearningRateState(count),
        ),
        lambda parts: RmsPropState(parts[2].count, parts[0].nu, parts[1].trace),
    )
