"""Optimisers as pure ``init`` / ``update`` pairs, in the style of optax.

An optimiser is a :class:`GradientTransformation`: ``state = opt.init(params)`` builds its
state from the parameter pytree, and ``updates, state = opt.update(grads, state, params)``
turns gradients into *updates* that :func:`apply_updates` adds to the parameters. Nothing is
mutated; states are NamedTuples of pytrees shaped like ``params`` plus a step ``count``, a
0-d int32 Tensor. The updates already carry the minus sign of descent: ``params + updates``.

Learning rates are a Python float or a *schedule*, a function ``step -> float`` of the
number of updates applied so far (0 for the first update), such as
:func:`cosine_decay_schedule`. Optimisers call it with their ``count`` Tensor, so a schedule
of your own should use fgrad ops (``fnp.minimum``, ``fnp.where`` ...) rather than Python
``if``, ``min`` or ``float()``, which need a concrete step and fail under ``jit``; the
built-in schedules do, and return a Tensor for a Tensor step.

Hyper-parameters enter the arithmetic as Python floats, which are weak scalars, so float32
parameters get float32 state and float32 updates; factors that depend on the step (a
scheduled learning rate, Adam's bias corrections) are 0-d float64 Tensors, cast to each
leaf's dtype before they meet it (rounded once, as a Python float would be).

Everything that depends on the step is computed with fgrad ops on ``count``, never in
Python, so a whole training step (loss, gradients, ``update`` and :func:`apply_updates`)
can run under :func:`fgrad.jit` and is traced once: the count is an ordinary input, not a
static Python number that would change the signature at every call.

Example:
    >>> params = {"w": fnp.array([1.0, -2.0])}
    >>> loss = lambda p: fnp.sum(p["w"] * p["w"])
    >>> opt = adam(0.1)
    >>> state = opt.init(params)
    >>> for _ in range(3):
    ...     grads = fgrad.grad(loss)(params)
    ...     updates, state = opt.update(grads, state, params)
    ...     params = apply_updates(params, updates)
    >>> params["w"]
    Tensor([ 0.7, -1.7], dtype=float64)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np  # integer limits only; arrays go through fgrad ops

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.core.weak import to_weak
from fgrad.tensor import Tensor

__all__ = [
    "AdamState",
    "EmptyState",
    "GradientTransformation",
    "RmsPropState",
    "Schedule",
    "SgdState",
    "adam",
    "adamw",
    "apply_updates",
    "chain",
    "clip_by_global_norm",
    "constant_schedule",
    "cosine_decay_schedule",
    "global_norm",
    "linear_warmup",
    "rmsprop",
    "sgd",
    "warmup_cosine_decay_schedule",
]

Schedule = Callable[[Any], Any]  # step (int or integer Tensor) -> float or 0-d Tensor
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    """A pure optimiser: ``init(params) -> state``, ``update(grads, state, params=None)``.

    ``update`` returns ``(updates, new_state)``; ``updates`` has the structure of ``grads``.
    """

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none (:func:`clip_by_global_norm`)."""


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


# --------------------------------------------------------------------------- helpers


def _traced_scalar(value: Any) -> bool:
    """A 0-d traced value (a Python float argument of ``jit`` is one): used as it is, since
    its value cannot be checked while tracing (as optax takes arrays)."""
    return isinstance(value, Tensor) and type(value) is not Tensor and value.ndim == 0


def _check_lr(name: str, learning_rate: Any) -> ScalarOrSchedule:
    if callable(learning_rate) or _traced_scalar(learning_rate):
        return learning_rate
    try:
        lr = float(learning_rate)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name}: learning_rate must be a float or a schedule (a function step -> float), "
            f"got {type(learning_rate).__name__}"
        ) from None
    if not lr >= 0.0:
        raise ValueError(f"{name}: learning_rate must be >= 0, got {lr}")
    return lr


def _check_range(name: str, what: str, value: Any, lo: float, hi: float | None) -> float:
    """A hyper-parameter as a Python float (weak, so it keeps the params' dtype), checked."""
    if _traced_scalar(value):
        return value
    value = float(value)
    if not (value >= lo and (hi is None or value < hi)):
        bound = f"[{lo}, {hi})" if hi is not None else f">= {lo}"
        raise ValueError(f"{name}: {what} must be in {bound}, got {value}")
    return value


def _lr_at(learning_rate: ScalarOrSchedule, count: Tensor) -> float | Tensor:
    """The learning rate at ``count``: a Python float (weak), or a 0-d Tensor from a schedule.

    A Tensor (traced under ``jit``) stays one, on ``count``'s device; :func:`_per_dtype`
    casts it to each leaf's dtype. Anything else a schedule returns (a numpy scalar, which
    is not weak under NEP 50) is concrete already and becomes a Python float.
    """
    if not callable(learning_rate):
        return learning_rate
    lr = learning_rate(count)
    return lr if isinstance(lr, Tensor) else float(lr)


def _per_dtype(factor: float | Tensor) -> Callable[[Tensor], float | Tensor]:
    """``leaf -> factor``, ready to multiply ``leaf`` without changing its dtype.

    A Python float is weak and passes as it is. A 0-d Tensor (a scheduled learning rate, a
    bias correction) is not weak under NEP 50, so it is cast to the leaf's dtype, once per
    dtype: rounding the float64 value once, as numpy does with a Python float.
    """
    if not isinstance(factor, Tensor) or factor.weak:  # weak: promotes as a Python float
        return lambda leaf: factor
    casts = {factor.dtype: factor}

    def like(leaf: Tensor) -> Tensor:
        cast = casts.get(leaf.dtype)
        if cast is None:
            cast = casts[leaf.dtype] = fnp.astype(factor, leaf.dtype)
        return cast

    return like


def _zeros_like_tree(params: Any) -> Any:
    return tree.map(fnp.zeros_like, params)


def _init_count(params: Any, count: int = 0) -> Tensor:
    """A 0-d int32 step count on the device of ``params`` (the factors computed from it meet
    the leaves in the same kernels, and cupy does not mix devices)."""
    leaves = tree.leaves(params)
    device = getattr(leaves[0], "device", None) if leaves else None
    return fnp.full((), count, dtype="int32", device=device)


def _count(name: str, state: Any, grads: Any) -> Tensor:
    """The state's step count as an integer Tensor (a Python int, as older states held, too)."""
    count = getattr(state, "count", None)
    if type(count) is int:
        return _init_count(grads, count)
    if not (isinstance(count, Tensor) and count.shape == () and count.dtype.kind in "iu"):
        raise TypeError(
            f"{name}.update: state must be the value returned by {name}.init or a previous "
            f"{name}.update, got {type(state).__name__}"
        )
    return count


def _increment(count: Tensor) -> Tensor:
    """``count + 1``, saturating at the dtype's largest value instead of wrapping around."""
    return fnp.minimum(count, np.iinfo(count.dtype).max - 1) + 1


# --------------------------------------------------------------------------- optimisers


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

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        momentum: ``mu >= 0`` (usually 0.9); 0 turns momentum off.
        nesterov: use Nesterov momentum in PyTorch's (and optax's) reformulation of
            Sutskever et al. (2013), the ``d_t`` line above.

    Returns:
        A :class:`GradientTransformation` with state :class:`SgdState`. ``update`` takes
        a pytree of real floating Tensors (any shapes) and returns updates of the same
        structure, shapes and dtypes; ``params`` is not needed.

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
    learning_rate = _check_lr("sgd", learning_rate)
    momentum = _check_range("sgd", "momentum", momentum, 0.0, None)
    has_momentum = _traced_scalar(momentum) or momentum != 0.0  # a traced one: a buffer
    if nesterov and not has_momentum:
        raise ValueError("sgd: nesterov=True needs momentum > 0")

    def init(params: Any) -> SgdState:
        return SgdState(_init_count(params), _zeros_like_tree(params) if has_momentum else None)

    def update(grads: Any, state: SgdState, params: Any = None) -> tuple[Any, SgdState]:
        count = _count("sgd", state, grads)
        neg_lr = _per_dtype(-_lr_at(learning_rate, count))
        buf = None
        direction = grads
        if has_momentum:
            buf = tree.map(lambda b, g: momentum * b + g, state.momentum, grads)
            direction = tree.map(lambda b, g: g + momentum * b, buf, grads) if nesterov else buf
        updates = tree.map(lambda d: neg_lr(d) * d, direction)
        return updates, SgdState(_increment(count), buf)

    return GradientTransformation(init, update)


def _adam_direction(b1, b2, eps, grads, state, name):
    """Algorithm 1 of Kingma & Ba: new moments and the bias-corrected step direction."""
    count = _increment(_count(name, state, grads))  # t
    mu = tree.map(lambda m, g: b1 * m + (1.0 - b1) * g, state.mu, grads)
    nu = tree.map(lambda v, g: b2 * v + (1.0 - b2) * (g * g), state.nu, grads)
    # Bias corrections 1 - beta^t in float64 from the integer t (fgrad ops, so they can be
    # traced), each rounded once to the leaf's dtype, as a Python float would have been.
    c1 = _per_dtype(1.0 - fnp.power(b1, count))
    c2 = _per_dtype(1.0 - fnp.power(b2, count))
    direction = tree.map(lambda m, v: (m / c1(m)) / (fnp.sqrt(v / c2(v)) + eps), mu, nu)
    return direction, AdamState(count, mu, nu)


def _adam_args(name, learning_rate, b1, b2, eps):
    return (
        _check_lr(name, learning_rate),
        _check_range(name, "b1", b1, 0.0, 1.0),
        _check_range(name, "b2", b2, 0.0, 1.0),
        _check_range(name, "eps", eps, 0.0, None),
    )


def adam(
    learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> GradientTransformation:
    r"""Adam: steps scaled by bias-corrected first and second moment estimates.

    Algorithm 1 of Kingma & Ba (2015), exactly; ``t = 1, 2, ...`` counts updates, moments
    start at zero, and ``eps`` is added outside the square root (as optax's ``adam`` and
    PyTorch's ``torch.optim.Adam``)::

        m_t = b1 * m_{t-1} + (1 - b1) * g_t
        v_t = b2 * v_{t-1} + (1 - b2) * g_t**2
        m_hat = m_t / (1 - b1**t),   v_hat = v_t / (1 - b2**t)
        updates = -lr_t * m_hat / (sqrt(v_hat) + eps)

    At ``t = 1`` the corrections make ``m_hat = g`` and ``v_hat = g**2``, so each component
    of the first update is ``-lr * g / (|g| + eps)``, about ``-lr * sign(g)``.

    Args:
        learning_rate: ``alpha``; float ``>= 0`` or a schedule ``step -> float``
            (called with ``t - 1``).
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_hat)`` for numerical stability.

    Returns:
        A :class:`GradientTransformation` with state :class:`AdamState` (moments with the
        shapes and dtypes of ``params``). ``update`` takes a pytree of real floating Tensors
        and returns updates of the same structure, shapes and dtypes.

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

    def init(params: Any) -> AdamState:
        return AdamState(_init_count(params), _zeros_like_tree(params), _zeros_like_tree(params))

    def update(grads: Any, state: AdamState, params: Any = None) -> tuple[Any, AdamState]:
        neg_lr = _per_dtype(-_lr_at(learning_rate, _count("adam", state, grads)))
        direction, state = _adam_direction(b1, b2, eps, grads, state, "adam")
        return tree.map(lambda d: neg_lr(d) * d, direction), state

    return GradientTransformation(init, update)


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

        updates = -lr_t * (m_hat / (sqrt(v_hat) + eps) + weight_decay * params)

    This is Algorithm 2 of Loshchilov & Hutter (2019) in the parametrisation of PyTorch's
    ``torch.optim.AdamW`` and optax's ``adamw``: the paper writes
    ``-eta_t * (alpha * adam_step + lambda * params)``; here ``lr_t = eta_t * alpha`` and
    ``weight_decay = lambda / alpha``.

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
        A :class:`GradientTransformation` with state :class:`AdamState`. ``update`` needs
        ``params`` (a pytree of real floating Tensors with the structure of ``grads``).

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
    weight_decay = _check_range("adamw", "weight_decay", weight_decay, 0.0, None)

    def init(params: Any) -> AdamState:
        return AdamState(_init_count(params), _zeros_like_tree(params), _zeros_like_tree(params))

    def update(grads: Any, state: AdamState, params: Any = None) -> tuple[Any, AdamState]:
        if params is None:
            raise ValueError(
                "adamw.update needs params: the decoupled weight decay is proportional to "
                "them; call update(grads, state, params)"
            )
        neg_lr = _per_dtype(-_lr_at(learning_rate, _count("adamw", state, grads)))
        direction, state = _adam_direction(b1, b2, eps, grads, state, "adamw")

        def step(d: Tensor, p: Tensor, decay: Any = True) -> Tensor:
            # ``decay`` is a Python bool from ``mask``: static, decided at trace time.
            return neg_lr(d) * (d + weight_decay * p if decay else d)

        if mask is None:
            updates = tree.map(step, direction, params)
        else:
            keep = mask(params) if callable(mask) else mask
            updates = tree.map(step, direction, params, keep)
        return updates, state

    return GradientTransformation(init, update)


def rmsprop(
    learning_rate: ScalarOrSchedule, decay: float = 0.9, eps: float = 1e-8, momentum: float = 0.0
) -> GradientTransformation:
    r"""RMSProp: gradients divided by a running root mean square.

    PyTorch's ``torch.optim.RMSprop`` (non-centred; ``decay`` is its ``alpha``), with the
    mean square starting at zero and ``eps`` added outside the square root (optax's
    ``rmsprop`` adds it inside; the two differ only in how ``eps`` enters)::

        v_t = decay * v_{t-1} + (1 - decay) * g_t**2
        s_t = g_t / (sqrt(v_t) + eps)
        b_t = momentum * b_{t-1} + s_t          (b_t = s_t when momentum == 0)
        updates = -lr_t * b_t

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        decay: decay of the mean square, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_t)``.
        momentum: ``>= 0``; momentum on the scaled gradient (no buffer when 0).

    Returns:
        A :class:`GradientTransformation` with state :class:`RmsPropState`. ``update`` takes
        a pytree of real floating Tensors and returns updates of the same structure, shapes
        and dtypes.

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
    learning_rate = _check_lr("rmsprop", learning_rate)
    decay = _check_range("rmsprop", "decay", decay, 0.0, 1.0)
    eps = _check_range("rmsprop", "eps", eps, 0.0, None)
    momentum = _check_range("rmsprop", "momentum", momentum, 0.0, None)
    has_momentum = _traced_scalar(momentum) or momentum != 0.0

    def init(params: Any) -> RmsPropState:
        buf = _zeros_like_tree(params) if has_momentum else None
        return RmsPropState(_init_count(params), _zeros_like_tree(params), buf)

    def update(grads: Any, state: RmsPropState, params: Any = None):
        count = _count("rmsprop", state, grads)
        neg_lr = _per_dtype(-_lr_at(learning_rate, count))
        nu = tree.map(lambda v, g: decay * v + (1.0 - decay) * (g * g), state.nu, grads)
        direction = tree.map(lambda g, v: g / (fnp.sqrt(v) + eps), grads, nu)
        buf = None
        if has_momentum:
            buf = tree.map(lambda b, s: momentum * b + s, state.momentum, direction)
            direction = buf
        updates = tree.map(lambda d: neg_lr(d) * d, direction)
        return updates, RmsPropState(_increment(count), nu, buf)

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- composition


def global_norm(tree_: Any) -> Tensor:
    """The Euclidean norm of all leaves of a pytree taken together.

    Args:
        tree_: a pytree of real floating Tensors (any shapes).

    Returns:
        A 0-d Tensor, ``sqrt(sum_leaves sum(leaf**2))``, in the leaves' promoted dtype
        (float64 for an empty tree).

    Example:
        >>> global_norm({"a": fnp.array([3.0]), "b": fnp.array([[4.0]])})
        Tensor(5., dtype=float64)
    """
    leaves = tree.leaves(tree_)
    total = fnp.zeros(())
    if leaves:
        total = fnp.sum(leaves[0] * leaves[0])
        for leaf in leaves[1:]:
            total = total + fnp.sum(leaf * leaf)
    return fnp.sqrt(total)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale updates so that their global norm is at most ``max_norm``.

    With ``n = global_norm(updates)``, updates pass unchanged when ``n < max_norm`` and are
    multiplied by ``max_norm / n`` otherwise (optax's ``clip_by_global_norm``; PyTorch's
    ``clip_grad_norm_`` adds 1e-6 to ``n``, this does not). The norm is taken across all
    leaves together, so the direction of the update is kept. Use it first in a
    :func:`chain`, before the optimiser.

    There is no Python comparison: every update is multiplied by
    ``scale = max_norm / maximum(n, max_norm)``, which is exactly 1 when ``n <= max_norm``
    (``n = 0`` included), so ``update`` can be traced by :func:`fgrad.jit`. ``scale`` is
    computed in float64 and rounded once to each leaf's dtype.

    Args:
        max_norm: ``> 0``, the largest global norm let through.

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`; updates keep the
        structure, shapes and dtypes of the input.

    Raises:
        ValueError: ``max_norm <= 0``.

    Example:
        >>> clip = clip_by_global_norm(1.0)
        >>> updates, _ = clip.update({"a": fnp.array([3.0, 4.0])}, clip.init(None))
        >>> updates["a"]
        Tensor([0.6, 0.8], dtype=float64)

    References:
        Pascanu, Mikolov & Bengio, "On the difficulty of training recurrent neural networks",
        ICML 2013, Algorithm 1.
    """
    max_norm = _hyper(max_norm)
    if not _traced_scalar(max_norm) and not max_norm > 0.0:
        raise ValueError(f"clip_by_global_norm: max_norm must be > 0, got {max_norm}")

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def update(updates: Any, state: EmptyState, params: Any = None):
        if not tree.leaves(updates):
            return updates, state
        norm = global_norm(updates)
        norm = norm if norm.dtype == "float64" else fnp.astype(norm, "float64")
        # 1.0 exactly below the bound, so small updates pass through bit for bit; a NaN norm
        # gives a NaN scale, as the Python comparison did.
        scale = _per_dtype(max_norm / fnp.maximum(norm, max_norm))
        return tree.map(lambda u: u * scale(u), updates), state

    return GradientTransformation(init, update)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Compose transformations: each ``update`` feeds its updates to the next.

    Args:
        *transforms: :class:`GradientTransformation` objects, applied left to right.

    Returns:
        A :class:`GradientTransformation` whose state is the tuple of the states.

    Raises:
        TypeError: an argument is not a :class:`GradientTransformation`.
        ValueError: ``update`` got a state with the wrong number of parts.

    Example:
        >>> opt = chain(clip_by_global_norm(1.0), sgd(0.5))
        >>> grads = fnp.array([30.0, 40.0])
        >>> updates, state = opt.update(grads, opt.init(grads))
        >>> updates  # clipped to norm 1, then times -0.5
        Tensor([-0.3, -0.4], dtype=float64)
    """
    for i, t in enumerate(transforms):
        if not isinstance(t, GradientTransformation):
            raise TypeError(
                f"chain: argument {i} is {type(t).__name__}, not a GradientTransformation"
            )

    def init(params: Any) -> tuple:
        return tuple(t.init(params) for t in transforms)

    def update(updates: Any, state: tuple, params: Any = None) -> tuple[Any, tuple]:
        if not isinstance(state, tuple) or len(state) != len(transforms):
            raise ValueError(
                f"chain.update: expected a tuple of {len(transforms)} states (from chain.init)"
            )
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def apply_updates(params: Any, updates: Any) -> Any:
    """Add updates to parameters: ``params + updates`` leaf by leaf, keeping dtypes.

    Args:
        params: a pytree of Tensors.
        updates: a pytree of Tensors with the same structure and shapes (as returned by an
            optimiser's ``update``).

    Returns:
        The new parameters; each leaf has the dtype of its ``params`` leaf (a float64 update
        to a float32 parameter is cast back to float32).

    Raises:
        ValueError: the two pytrees have different structures.

    Example:
        >>> apply_updates({"w": fnp.array([1.0], dtype="float32")}, {"w": fnp.array([0.5])})
        {'w': Tensor([1.5], dtype=float32)}
    """

    def add(p, u):
        out = p + u
        return out if out.dtype == p.dtype else fnp.astype(out, p.dtype)

    return tree.map(add, params, updates)


# --------------------------------------------------------------------------- schedules


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
    return to_weak(value) if _traced_scalar(value) else float(value)


def _hyper(value: Any) -> Any:
    """A schedule's hyper-parameter as a Python float, or as it is when traced (a Python
    float argument of ``jit``), as optax takes arrays."""
    return value if _traced_scalar(value) else float(value)


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
    value = _hyper(value)

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
    init_value, alpha = _hyper(init_value), _hyper(alpha)
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
    peak_value, init_value = _hyper(peak_value), _hyper(init_value)
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
    peak_value, end_value = _hyper(peak_value), _hyper(end_value)
    period = decay_steps - warmup_steps

    def schedule(step: Any) -> Any:
        step, python = _step_tensor(step)
        t = fnp.minimum(step - warmup_steps, period)  # negative during warm-up: not selected
        cosine = 0.5 * (1.0 + fnp.cos(math.pi * t / period))
        decayed = end_value + (peak_value - end_value) * cosine
        value = fnp.where(step < warmup_steps, warmup(step), decayed)
        return _schedule_value(value, python)

    return schedule
