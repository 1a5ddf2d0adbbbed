"""The building blocks optimisers are chained from, each a :class:`GradientTransformation`.

Each block maps incoming updates ``u`` (the gradients, for the first block of a chain) to
outgoing ones and keeps its own state; :func:`chain` feeds one block's output to the next.
The named optimisers (:func:`fgrad.optim.adam`, ...) are short chains of these.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.optim._base import (
    EmptyState,
    GradientTransformation,
    ScalarOrSchedule,
    abs_sq,
    accumulator_dtype,
    check_lr,
    check_range,
    get_count,
    hyper,
    increment,
    init_count,
    lr_at,
    narrow,
    per_dtype,
    real_dtype,
    require_params,
    traced_scalar,
    widen,
    zeros_like_tree,
)
from fgrad.tensor import Tensor


class ScaleByAdamState(NamedTuple):
    """State of :func:`scale_by_adam`: step ``count``, first moment ``mu``, second ``nu``."""

    count: Tensor
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    """State of :func:`scale_by_rms`: the running mean square ``nu``."""

    nu: Any


class TraceState(NamedTuple):
    """State of :func:`trace`: the momentum buffer ``trace``, shaped like the updates."""

    trace: Any


class ScaleByLearningRateState(NamedTuple):
    """State of :func:`scale_by_learning_rate`: the step ``count`` a schedule is read at."""

    count: Tensor


def _square_dtype(dtype: Any) -> Any:
    """Second moments of ``dtype`` gradients: real (``|g|**2``), float32 for float16."""
    return real_dtype(accumulator_dtype(dtype))


# --------------------------------------------------------------------------- scaling


def scale(step_size: float) -> GradientTransformation:
    """Multiply updates by a constant: ``updates = step_size * u``.

    Args:
        step_size: a float, of either sign (no sign is flipped: pass ``-lr`` for descent,
            or use :func:`scale_by_learning_rate`).

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`; updates keep the
        structure, shapes and dtypes of ``u`` (``step_size`` is a weak Python float).

    Raises:
        TypeError: ``step_size`` is not a number.

    Example:
        >>> t = scale(-0.5)
        >>> updates, _ = t.update(fnp.array([2.0, -4.0]), t.init(None))
        >>> updates
        Tensor([-1.,  2.], dtype=float64)
    """
    if not traced_scalar(step_size):
        try:
            step_size = float(step_size)
        except (TypeError, ValueError):
            raise TypeError(
                f"scale: step_size must be a float, got {type(step_size).__name__}"
            ) from None

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def update(updates: Any, state: EmptyState, params: Any = None):
        return tree.map(lambda u: step_size * u, updates), state

    return GradientTransformation(init, update)


def set_to_zero() -> GradientTransformation:
    """Replace every update by zeros: the params it is applied to stay as they are.

    As optax's ``set_to_zero``; with :func:`multi_transform` (or :func:`masked`) it
    freezes a group of params. It keeps no state (so a frozen group costs no optimiser
    buffers).

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`; updates are
        zeros of the structure, shapes and dtypes of ``u``.

    Example:
        >>> t = set_to_zero()
        >>> t.update({"w": fnp.array([2.0, -4.0])}, t.init(None))[0]
        {'w': Tensor([0., 0.], dtype=float64)}

    References:
        ``optax.set_to_zero``.
    """

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def update(updates: Any, state: EmptyState, params: Any = None):
        return tree.map(fnp.zeros_like, updates), state

    return GradientTransformation(init, update)


def identity() -> GradientTransformation:
    """Pass the updates through unchanged (a no-op stage, for example one label's
    transformation in :func:`multi_transform`).

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`; the updates are
        returned as given.

    Example:
        >>> t = identity()
        >>> t.update(fnp.array([2.0, -4.0]), t.init(None))[0]
        Tensor([ 2., -4.], dtype=float64)

    References:
        ``optax.identity``.
    """

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def update(updates: Any, state: EmptyState, params: Any = None):
        return updates, state

    return GradientTransformation(init, update)


def scale_by_learning_rate(
    learning_rate: ScalarOrSchedule, flip_sign: bool = True
) -> GradientTransformation:
    """Multiply updates by the learning rate, negated for descent: ``updates = -lr_t * u``.

    ``lr_t`` is ``learning_rate`` itself, or ``learning_rate(t)`` for a schedule, where
    ``t = 0, 1, ...`` counts the updates made before this one (the state's ``count``). A
    schedule's 0-d Tensor value is rounded once to each leaf's (real) dtype, so float32
    updates stay float32. This block is the last of every named optimiser's chain.

    Args:
        learning_rate: float ``>= 0`` or a schedule ``step -> float``.
        flip_sign: negate (the default: updates are added to the parameters, so a descent
            step is ``-lr * direction``); False gives ``lr_t * u``.

    Returns:
        A :class:`GradientTransformation` with state :class:`ScaleByLearningRateState`
        (a 0-d int32 ``count``, also for a constant rate, so that a checkpoint's layout does
        not depend on whether the rate is scheduled). Updates keep the structure, shapes and
        dtypes of ``u``.

    Raises:
        ValueError: negative ``learning_rate``.
        TypeError: ``learning_rate`` is neither a number nor callable.

    Example:
        >>> t = scale_by_learning_rate(lambda step: 0.1 * (step + 1))
        >>> state = t.init(fnp.zeros(2))
        >>> _, state = t.update(fnp.array([1.0, 2.0]), state)
        >>> updates, state = t.update(fnp.array([1.0, 2.0]), state)  # lr(1) = 0.2
        >>> updates, state.count
        (Tensor([-0.2, -0.4], dtype=float64), Tensor(2, dtype=int32))
    """
    learning_rate = check_lr("scale_by_learning_rate", learning_rate)

    def init(params: Any) -> ScaleByLearningRateState:
        return ScaleByLearningRateState(init_count(params))

    def update(updates: Any, state: ScaleByLearningRateState, params: Any = None):
        count = get_count("scale_by_learning_rate", state, updates)
        lr = lr_at(learning_rate, count)
        factor = per_dtype(-lr if flip_sign else lr)
        out = tree.map(lambda u: factor(u) * u, updates)
        return out, ScaleByLearningRateState(increment(count))

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- moments


def _adam_moments(name: str, b1: float, b2: float, nesterov: bool):
    """The moment updates Adam, NAdam and RAdam share: ``update(updates, state) -> (t,
    m_hat, v_hat, state)``, ``t`` the new count, hats the bias-corrected moments (NAdam's
    Nesterov ``m_hat`` with ``nesterov``), in the accumulator dtypes."""

    def update(updates: Any, state: ScaleByAdamState):
        count = increment(get_count(name, state, updates))  # t
        mu = tree.map(lambda m, u: b1 * m + (1.0 - b1) * widen(u), state.mu, updates)
        nu = tree.map(lambda v, u: b2 * v + (1.0 - b2) * abs_sq(widen(u)), state.nu, updates)
        # Bias corrections 1 - beta^t in float64 from the integer t (fgrad ops, so they can
        # be traced), each rounded once to the moment's dtype, as a Python float would be.
        c1 = per_dtype(1.0 - fnp.power(b1, count))
        c2 = per_dtype(1.0 - fnp.power(b2, count))
        if nesterov:
            c1_next = per_dtype(1.0 - fnp.power(b1, count + 1))
            m_hat = tree.map(
                lambda m, u: b1 * (m / c1_next(m)) + (1.0 - b1) * (widen(u) / c1(m)), mu, updates
            )
        else:
            m_hat = tree.map(lambda m: m / c1(m), mu)
        v_hat = tree.map(lambda v: v / c2(v), nu)
        return count, m_hat, v_hat, ScaleByAdamState(count, mu, nu)

    return update


def _init_adam(params: Any) -> ScaleByAdamState:
    return ScaleByAdamState(
        init_count(params),
        zeros_like_tree(params, accumulator_dtype),
        zeros_like_tree(params, _square_dtype),
    )


def scale_by_adam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, *, nesterov: bool = False
) -> GradientTransformation:
    r"""Adam's direction: the bias-corrected first moment over the root of the second.

    With ``t = 1, 2, ...`` counting updates and both moments starting at zero
    (Kingma & Ba 2015, Algorithm 1, without the learning rate)::

        m_t = b1 * m_{t-1} + (1 - b1) * u_t
        v_t = b2 * v_{t-1} + (1 - b2) * |u_t|**2
        updates = (m_t / (1 - b1**t)) / (sqrt(v_t / (1 - b2**t)) + eps)

    With ``nesterov=True`` the first moment is NAdam's look-ahead (Dozat 2016, Algorithm 2
    with a constant momentum ``b1``, as optax's ``scale_by_adam(nesterov=True)``)::

        m_hat = b1 * m_t / (1 - b1**(t + 1)) + (1 - b1) * u_t / (1 - b1**t)

    ``|u|**2 = u * conj(u)`` is real, so a complex parameter gets a real second moment and
    each of its components is scaled by the magnitude of its gradient (as optax does).

    Args:
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added outside the square root.
        nesterov: use NAdam's Nesterov first moment (see :func:`fgrad.optim.nadam`).

    Returns:
        A :class:`GradientTransformation` with state :class:`ScaleByAdamState`: ``mu`` in
        each leaf's dtype and ``nu`` in its real counterpart, except that float16 leaves
        keep both in float32 (their updates are cast back to float16). Updates keep the
        structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range.

    Example:
        >>> t = scale_by_adam()
        >>> updates, state = t.update(fnp.array([0.5, -4.0, 0.0]), t.init(fnp.zeros(3)))
        >>> np.round(np.asarray(updates), 6)  # t = 1: u / (|u| + eps)
        array([ 1., -1.,  0.])

    References:
        Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015,
        arXiv:1412.6980, Algorithm 1. Dozat, "Incorporating Nesterov Momentum into Adam",
        ICLR 2016 workshop, Algorithm 2 (``nesterov``).
    """
    b1 = check_range("scale_by_adam", "b1", b1, 0.0, 1.0)
    b2 = check_range("scale_by_adam", "b2", b2, 0.0, 1.0)
    eps = check_range("scale_by_adam", "eps", eps, 0.0, None)
    moments = _adam_moments("scale_by_adam", b1, b2, bool(nesterov))

    def update(updates: Any, state: ScaleByAdamState, params: Any = None):
        _, m_hat, v_hat, state = moments(updates, state)

        def direction(m: Tensor, v: Tensor, u: Tensor) -> Tensor:
            return narrow(m / (fnp.sqrt(v) + eps), u)

        return tree.map(direction, m_hat, v_hat, updates), state

    return GradientTransformation(_init_adam, update)


def scale_by_radam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, threshold: float = 5.0,
    *, nesterov: bool = False,
) -> GradientTransformation:
    r"""RAdam's direction: Adam's, rectified by the variance of its adaptive learning rate.

    With ``t = 1, 2, ...``, the moments and their bias corrections of
    :func:`scale_by_adam`, and ``rho_inf = 2 / (1 - b2) - 1`` (Liu et al. 2019,
    Algorithm 2)::

        rho_t = rho_inf - 2 t b2**t / (1 - b2**t)
        r_t = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t))
        updates = r_t * m_hat / (sqrt(v_hat) + eps)    if rho_t >= threshold
                  m_hat                                 otherwise (momentum SGD)

    The paper switches at ``rho_t > 4``; ``threshold = 5`` is optax's default (the first
    rectified steps of the paper's rule have ``r_t`` near 0 and a noisy ``v_hat``).

    Args:
        b1: decay of the first moment, in ``[0, 1)``.
        b2: decay of the second moment, in ``[0, 1)``.
        eps: ``>= 0``, added outside the square root.
        threshold: ``>= 4``; the rectified step is taken once ``rho_t >= threshold``
            (``r_t`` is real only for ``rho_t >= 4``).
        nesterov: NAdam's first moment (see :func:`scale_by_adam`).

    Returns:
        A :class:`GradientTransformation` with state :class:`ScaleByAdamState` (dtypes as
        in :func:`scale_by_adam`); updates keep the structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range.

    Example:
        >>> t = scale_by_radam()
        >>> updates, state = t.update(fnp.array([0.5, -4.0]), t.init(fnp.zeros(2)))
        >>> updates  # rho_1 = 1 < 5: the bias-corrected momentum, m_hat = u
        Tensor([ 0.5, -4. ], dtype=float64)

    References:
        Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond", ICLR 2020,
        arXiv:1908.03265, Algorithm 2.
    """
    b1 = check_range("scale_by_radam", "b1", b1, 0.0, 1.0)
    b2 = check_range("scale_by_radam", "b2", b2, 0.0, 1.0)
    eps = check_range("scale_by_radam", "eps", eps, 0.0, None)
    threshold = check_range("scale_by_radam", "threshold", threshold, 4.0, None)
    moments = _adam_moments("scale_by_radam", b1, b2, bool(nesterov))
    rho_inf = 2.0 / (1.0 - b2) - 1.0
    # rho_t < rho_inf, so with rho_inf <= 4 the rectified branch is never taken: any
    # non-zero denominator keeps its unused value finite.
    denominator = (rho_inf - 4.0) * (rho_inf - 2.0) or 1.0

    def update(updates: Any, state: ScaleByAdamState, params: Any = None):
        count, m_hat, v_hat, state = moments(updates, state)
        b2_t = fnp.power(b2, count)
        rho = rho_inf - 2.0 * fnp.astype(count, "float64") * b2_t / (1.0 - b2_t)
        rectify = rho >= threshold
        r_sq = (rho - 4.0) * (rho - 2.0) * rho_inf / (denominator * rho)
        r = per_dtype(fnp.sqrt(fnp.maximum(r_sq, 0.0)))  # r_sq < 0 only where unused

        def direction(m: Tensor, v: Tensor, u: Tensor) -> Tensor:
            return narrow(fnp.where(rectify, r(m) * m / (fnp.sqrt(v) + eps), m), u)

        return tree.map(direction, m_hat, v_hat, updates), state

    return GradientTransformation(_init_adam, update)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8) -> GradientTransformation:
    r"""Divide updates by their running root mean square (RMSProp's direction).

    The mean square starts at zero and ``eps`` is added outside the square root, as in
    PyTorch's ``torch.optim.RMSprop`` (optax's ``scale_by_rms`` adds it inside)::

        v_t = decay * v_{t-1} + (1 - decay) * |u_t|**2
        updates = u_t / (sqrt(v_t) + eps)

    Args:
        decay: decay of the mean square, in ``[0, 1)``.
        eps: ``>= 0``, added to ``sqrt(v_t)``.

    Returns:
        A :class:`GradientTransformation` with state :class:`ScaleByRmsState`: ``nu`` in
        each leaf's real dtype (float32 for float16 leaves, whose updates are computed in
        float32 and cast back). Updates keep the structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range.

    Example:
        >>> t = scale_by_rms(decay=0.75)
        >>> updates, state = t.update(fnp.array([2.0, -1.0]), t.init(fnp.zeros(2)))
        >>> updates  # u / sqrt(0.25 u**2) = 2 sign(u)
        Tensor([ 2., -2.], dtype=float64)

    References:
        Tieleman & Hinton, "Lecture 6.5 - rmsprop: Divide the gradient by a running average
        of its recent magnitude", COURSERA: Neural Networks for Machine Learning, 2012.
    """
    decay = check_range("scale_by_rms", "decay", decay, 0.0, 1.0)
    eps = check_range("scale_by_rms", "eps", eps, 0.0, None)

    def init(params: Any) -> ScaleByRmsState:
        return ScaleByRmsState(zeros_like_tree(params, _square_dtype))

    def update(updates: Any, state: ScaleByRmsState, params: Any = None):
        nu = tree.map(
            lambda v, u: decay * v + (1.0 - decay) * abs_sq(widen(u)), state.nu, updates
        )
        out = tree.map(lambda u, v: narrow(widen(u) / (fnp.sqrt(v) + eps), u), updates, nu)
        return out, ScaleByRmsState(nu)

    return GradientTransformation(init, update)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    r"""Momentum: a decaying sum of past updates (heavy ball, or Nesterov's variant).

    The buffer starts at ``b_0 = 0``; as PyTorch's ``torch.optim.SGD`` with
    ``dampening=0`` and optax's ``trace``::

        b_t = decay * b_{t-1} + u_t
        updates = u_t + decay * b_t     if nesterov else  b_t

    Args:
        decay: the momentum, ``>= 0`` (usually 0.9).
        nesterov: Nesterov momentum in the reformulation that evaluates the gradient at the
            current parameters.

    Returns:
        A :class:`GradientTransformation` with state :class:`TraceState` (a buffer in each
        leaf's dtype). Updates keep the structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: negative ``decay``.

    Example:
        >>> t = trace(0.5)
        >>> state = t.init(fnp.zeros(1))
        >>> _, state = t.update(fnp.array([2.0]), state)
        >>> updates, state = t.update(fnp.array([2.0]), state)  # 0.5 * 2 + 2
        >>> updates
        Tensor([3.], dtype=float64)

    References:
        Polyak, "Some methods of speeding up the convergence of iteration methods", 1964.
        Sutskever, Martens, Dahl & Hinton, "On the importance of initialization and momentum
        in deep learning", ICML 2013, Eq. (3)-(4).
    """
    decay = check_range("trace", "decay", decay, 0.0, None)

    def init(params: Any) -> TraceState:
        return TraceState(zeros_like_tree(params))

    def update(updates: Any, state: TraceState, params: Any = None):
        buf = tree.map(lambda b, u: decay * b + u, state.trace, updates)
        out = tree.map(lambda b, u: u + decay * b, buf, updates) if nesterov else buf
        return out, TraceState(buf)

    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay: float = 0.0, mask: Any = None) -> GradientTransformation:
    r"""Add decoupled weight decay: ``updates = u + weight_decay * params``.

    Placed after a scaling such as :func:`scale_by_adam` and before
    :func:`scale_by_learning_rate`, the decay is scaled by the learning rate but does not
    pass through the moment estimates (Loshchilov & Hutter 2019); placed first, it is L2
    regularisation folded into the gradient.

    Args:
        weight_decay: ``>= 0``, the coefficient.
        mask: optional pytree of bools with the structure of ``params`` (or a function
            ``params -> such a pytree``); leaves marked False (biases, norm scales) pass
            unchanged. Default: decay every leaf.

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`. ``update`` needs
        ``params``; updates keep the structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: negative ``weight_decay``; ``update`` called without ``params``; a
            ``mask`` whose structure differs from that of ``params``.

    Example:
        >>> t = add_decayed_weights(0.1, mask={"b": False, "w": True})
        >>> params = {"b": fnp.array([10.0]), "w": fnp.array([10.0])}
        >>> grads = {"b": fnp.array([1.0]), "w": fnp.array([1.0])}
        >>> updates, _ = t.update(grads, t.init(params), params)
        >>> updates  # b masked out; w: 1 + 0.1 * 10
        {'b': Tensor([1.], dtype=float64), 'w': Tensor([2.], dtype=float64)}

    References:
        Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019,
        arXiv:1711.05101, Algorithm 2.
    """
    weight_decay = check_range("add_decayed_weights", "weight_decay", weight_decay, 0.0, None)

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def update(updates: Any, state: EmptyState, params: Any = None):
        require_params("add_decayed_weights", "the decay is proportional to them", params)

        def step(u: Tensor, p: Tensor, decay: Any = True) -> Tensor:
            # ``decay`` is a Python bool from ``mask``: static, decided at trace time.
            return u + weight_decay * p if decay else u

        if mask is None:
            return tree.map(step, updates, params), state
        keep = mask(params) if callable(mask) else mask
        return tree.map(step, updates, params, keep), state

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- norms


def global_norm(tree_: Any) -> Tensor:
    r"""The Euclidean norm of all leaves of a pytree taken together.

    ``sqrt(sum over leaves of sum(|leaf|**2))``, where ``|x|**2 = x * conj(x)`` is real for
    complex leaves (``global_norm(3+4j)`` is 5). Float16 leaves are squared and summed in
    float32: a float16 square overflows above 256 and underflows below about 2.4e-4.

    Args:
        tree_: a pytree of real or complex Tensors (any shapes).

    Returns:
        A 0-d real Tensor in the promoted real dtype of the leaves (float32 at least, for
        float16 leaves; float64 for an empty tree).

    Example:
        >>> global_norm({"a": fnp.array([3.0]), "b": fnp.array([[4.0]])})
        Tensor(5., dtype=float64)
        >>> global_norm(fnp.array(3 + 4j))
        Tensor(5., dtype=float64)
    """
    leaves = tree.leaves(tree_)
    total = fnp.zeros(())
    if leaves:
        total = fnp.sum(abs_sq(widen(leaves[0])))
        for leaf in leaves[1:]:
            total = total + fnp.sum(abs_sq(widen(leaf)))
    return fnp.sqrt(total)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale updates so that their global norm is at most ``max_norm``.

    With ``n = global_norm(updates)``, updates pass unchanged when ``n < max_norm`` and are
    multiplied by ``max_norm / n`` otherwise (optax's ``clip_by_global_norm``; PyTorch's
    ``clip_grad_norm_`` adds 1e-6 to ``n``, this does not). The norm is taken across all
    leaves together (``|u|`` for complex leaves, float32 for float16 ones), so the direction
    of the update is kept. Use it first in a :func:`chain`, before the optimiser.

    There is no Python comparison: every update is multiplied by
    ``scale = max_norm / maximum(n, max_norm)``, which is exactly 1 when ``n <= max_norm``
    (``n = 0`` included), so ``update`` can be traced by :func:`fgrad.jit`. ``scale`` is
    computed in float64 and rounded once to each leaf's (real) dtype.

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
    max_norm = hyper(max_norm)
    if not traced_scalar(max_norm) and not max_norm > 0.0:
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
        factor = per_dtype(max_norm / fnp.maximum(norm, max_norm))
        return tree.map(lambda u: u * factor(u), updates), state

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- composition


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
        >>> opt = chain(clip_by_global_norm(1.0), scale_by_learning_rate(0.5))
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

    p_tree, u_tree = tree.structure(params), tree.structure(updates)
    if p_tree != u_tree:
        raise ValueError(
            f"apply_updates: updates have structure {u_tree} where params have {p_tree}; pass "
            "the updates an optimiser's update returned for these params (first argument: "
            "params, second: updates)"
        )
    return tree.map(add, params, updates)
