"""More building blocks: Lion's sign, LAMB's trust ratio, Adagrad's sum of squares,
Adafactor's factored second moment and block-RMS scalings, and moving averages (``ema``,
:func:`incremental_update`). Each is a :class:`GradientTransformation` to :func:`chain`."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np  # static shapes only (which axes Adafactor factors)

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.optim._base import (
    EmptyState,
    GradientTransformation,
    abs_sq,
    accumulator_dtype,
    check_range,
    get_count,
    increment,
    init_count,
    narrow,
    per_dtype,
    real_dtype,
    require_params,
    widen,
    zeros_like_tree,
)
from fgrad.optim._transforms import global_norm
from fgrad.tensor import Tensor


class ScaleByLionState(NamedTuple):
    """State of :func:`scale_by_lion`: the momentum ``mu``, shaped like the params."""

    mu: Any


class ScaleByRssState(NamedTuple):
    """State of :func:`scale_by_rss`: the running ``sum_of_squares`` of the updates."""

    sum_of_squares: Any


class FactoredState(NamedTuple):
    """State of :func:`scale_by_factored_rms`: step ``count`` and, per leaf, the row and
    column means ``v_row``, ``v_col`` of a factored second moment (shape ``(1,)`` for an
    unfactored leaf) or the full second moment ``v`` (shape ``(1,)`` for a factored one)."""

    count: Tensor
    v_row: Any
    v_col: Any
    v: Any


class EmaState(NamedTuple):
    """State of :func:`ema`: step ``count`` and the moving average ``ema``."""

    count: Tensor
    ema: Any


def _square_dtype(dtype: Any) -> np.dtype:
    """Second moments of ``dtype`` updates: real (``|u|**2``), float32 for float16."""
    return real_dtype(accumulator_dtype(dtype))


_leaf_accumulator_dtype = accumulator_dtype  # ema's argument of that name shadows the helper


def _rms(x: Tensor) -> Tensor:
    """``sqrt(mean(|x|**2))`` of one leaf, in its accumulator dtype."""
    return fnp.sqrt(fnp.mean(abs_sq(widen(x))))


def _leafwise(name: str, factor: Any, needs_params: str | None = None) -> GradientTransformation:
    """A stateless transformation that multiplies each leaf's update by a 0-d factor:
    ``factor(u)``, or ``factor(u, p)`` of the leaf's params when ``needs_params`` says why
    it reads them. The factor is cast to the leaf's (real accumulator) dtype."""

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def scaled(u: Tensor, *p: Tensor) -> Tensor:
        wide = widen(u)
        return narrow(wide * per_dtype(factor(u, *p))(wide), u)

    def update(updates: Any, state: EmptyState, params: Any = None):
        if needs_params is None:
            return tree.map(scaled, updates), state
        require_params(name, needs_params, params)
        return tree.map(scaled, updates, params), state

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- Lion


def scale_by_lion(b1: float = 0.9, b2: float = 0.99) -> GradientTransformation:
    r"""Lion's direction: the sign of an interpolation of the momentum and the update.

    With the momentum starting at ``m_0 = 0`` (Chen et al. 2023, Algorithm 2, without the
    learning rate and weight decay)::

        c_t = b1 * m_{t-1} + (1 - b1) * u_t
        updates = sign(c_t)
        m_t = b2 * m_{t-1} + (1 - b2) * u_t

    Every component of the update is -1, 0 or 1 (``c / |c|`` for complex leaves, as
    numpy's ``sign``).

    Args:
        b1: interpolation factor of the update direction, in ``[0, 1)``.
        b2: decay of the momentum, in ``[0, 1)``.

    Returns:
        A :class:`GradientTransformation` with state :class:`ScaleByLionState` (``mu`` in
        each leaf's dtype, float32 for float16); updates keep the structure, shapes and
        dtypes of ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range.

    Example:
        >>> t = scale_by_lion()
        >>> updates, state = t.update(fnp.array([0.5, -4.0, 0.0]), t.init(fnp.zeros(3)))
        >>> updates, state.mu  # sign(0.1 u); m = 0.01 u
        (Tensor([ 1., -1.,  0.], dtype=float64), Tensor([ 0.005, -0.04 ,  0.   ], dtype=float64))

    References:
        Chen et al., "Symbolic Discovery of Optimization Algorithms", NeurIPS 2023,
        arXiv:2302.06675, Algorithm 2.
    """
    b1 = check_range("scale_by_lion", "b1", b1, 0.0, 1.0)
    b2 = check_range("scale_by_lion", "b2", b2, 0.0, 1.0)

    def init(params: Any) -> ScaleByLionState:
        return ScaleByLionState(zeros_like_tree(params, accumulator_dtype))

    def update(updates: Any, state: ScaleByLionState, params: Any = None):
        out = tree.map(
            lambda m, u: narrow(fnp.sign(b1 * m + (1.0 - b1) * widen(u)), u), state.mu, updates
        )
        mu = tree.map(lambda m, u: b2 * m + (1.0 - b2) * widen(u), state.mu, updates)
        return out, ScaleByLionState(mu)

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- LAMB


def scale_by_trust_ratio(
    min_norm: float = 0.0, trust_coefficient: float = 1.0, eps: float = 0.0
) -> GradientTransformation:
    r"""Scale each leaf's update by its trust ratio ``||params|| / ||u||`` (LARS, LAMB).

    Per leaf, with Euclidean norms floored at ``min_norm`` (as optax's
    ``scale_by_trust_ratio``; You et al. 2019, Algorithm 2 with ``phi`` the identity)::

        p = max(||params||, min_norm),   n = max(||u||, min_norm)
        ratio = trust_coefficient * p / (n + eps),   or 1 if p == 0 or n == 0
        updates = ratio * u

    Args:
        min_norm: ``>= 0``, the floor of both norms.
        trust_coefficient: ``>= 0``, a constant factor (LARS's ``eta``).
        eps: ``>= 0``, added to the update's norm.

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`. ``update`` needs
        ``params``; updates keep the structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range; ``update`` called without ``params``.

    Example:
        >>> t = scale_by_trust_ratio()
        >>> params = {"w": fnp.array([3.0, 4.0]), "b": fnp.zeros(2)}
        >>> grads = {"w": fnp.array([0.1, 0.0]), "b": fnp.array([1.0, 1.0])}
        >>> updates, _ = t.update(grads, t.init(params), params)
        >>> updates  # w: times 5 / 0.1; b: ||params|| = 0, so unchanged
        {'b': Tensor([1., 1.], dtype=float64), 'w': Tensor([5., 0.], dtype=float64)}

    References:
        You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76
        minutes", ICLR 2020, arXiv:1904.00962, Algorithm 2. You, Gitman & Ginsburg, "Large
        Batch Training of Convolutional Networks", 2017, arXiv:1708.03888 (LARS).
    """
    name = "scale_by_trust_ratio"
    min_norm = check_range(name, "min_norm", min_norm, 0.0, None)
    trust_coefficient = check_range(name, "trust_coefficient", trust_coefficient, 0.0, None)
    eps = check_range(name, "eps", eps, 0.0, None)

    def ratio(u: Tensor, p: Tensor) -> Tensor:
        p_norm = fnp.maximum(global_norm(p), min_norm)
        u_norm = fnp.maximum(global_norm(u), min_norm)
        ratio = trust_coefficient * p_norm / (u_norm + eps)
        return fnp.where((p_norm == 0.0) | (u_norm == 0.0), 1.0, ratio)

    return _leafwise(name, ratio, "the trust ratio is the norm of each leaf of params")


# --------------------------------------------------------------------------- Adagrad


def scale_by_rss(
    initial_accumulator_value: float = 0.1, eps: float = 1e-7
) -> GradientTransformation:
    r"""Divide updates by the root of the sum of their squares so far (Adagrad's direction).

    The sum starts at ``initial_accumulator_value`` (Duchi et al. 2011, diagonal
    ``G_t``; optax's ``scale_by_rss``, with ``eps`` inside the root)::

        s_t = s_{t-1} + |u_t|**2
        updates = u_t / sqrt(s_t + eps)     (0 where s_t == 0)

    Args:
        initial_accumulator_value: ``>= 0``, the sum's initial value.
        eps: ``>= 0``, added under the square root.

    Returns:
        A :class:`GradientTransformation` with state :class:`ScaleByRssState` (the sum in
        each leaf's real dtype, float32 for float16); updates keep the structure, shapes
        and dtypes of ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range.

    Example:
        >>> t = scale_by_rss(initial_accumulator_value=0.0, eps=0.0)
        >>> state = t.init(fnp.zeros(2))
        >>> _, state = t.update(fnp.array([3.0, 0.0]), state)
        >>> updates, state = t.update(fnp.array([4.0, 0.0]), state)
        >>> updates  # 4 / sqrt(9 + 16); 0 where nothing was seen
        Tensor([0.8, 0. ], dtype=float64)

    References:
        Duchi, Hazan & Singer, "Adaptive Subgradient Methods for Online Learning and
        Stochastic Optimization", JMLR 12, 2011, Sec. 1.1 (diagonal Adagrad).
    """
    initial = check_range(
        "scale_by_rss", "initial_accumulator_value", initial_accumulator_value, 0.0, None
    )
    eps = check_range("scale_by_rss", "eps", eps, 0.0, None)

    def init(params: Any) -> ScaleByRssState:
        return ScaleByRssState(
            tree.map(lambda p: fnp.full_like(p, initial, dtype=_square_dtype(p.dtype)), params)
        )

    def update(updates: Any, state: ScaleByRssState, params: Any = None):
        sums = tree.map(lambda s, u: s + abs_sq(widen(u)), state.sum_of_squares, updates)

        def scaled(u: Tensor, s: Tensor) -> Tensor:
            # where(): a zero sum (a zero gradient and initial value) gives 0, not 0 / 0.
            safe = fnp.where(s > 0.0, s + eps, 1.0)
            return narrow(fnp.where(s > 0.0, widen(u) / fnp.sqrt(safe), 0.0), u)

        return tree.map(scaled, updates, sums), ScaleByRssState(sums)

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- Adafactor


def _factored_dims(shape: tuple, factored: bool, min_dim_size_to_factor: int):
    """The axes ``(d1, d0)`` whose means Adafactor keeps for a leaf of ``shape`` (the two
    largest, ``d0`` the largest), or None to keep the whole second moment: a leaf with
    fewer than 2 axes, or whose second largest axis is below ``min_dim_size_to_factor``."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape, kind="stable")
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


def scale_by_factored_rms(
    factored: bool = True,
    decay_rate: float = 0.8,
    step_offset: int = 0,
    min_dim_size_to_factor: int = 128,
    epsilon: float = 1e-30,
) -> GradientTransformation:
    r"""Adafactor's direction: updates over the root of a factored second moment.

    With ``t = 1, 2, ...`` counting updates and the decay ``b2_t = 1 - t**(-decay_rate)``
    (so the first step keeps ``g2`` itself; Shazeer & Stern 2018, Algorithm 4 and Eq. 16).
    For a leaf whose two largest axes are ``d1`` (rows) and ``d0`` (columns), each at
    least ``min_dim_size_to_factor``, only their means are kept::

        g2 = |u_t|**2 + epsilon
        R_t = b2_t * R_{t-1} + (1 - b2_t) * mean(g2, axis=d0)     (v_row)
        C_t = b2_t * C_{t-1} + (1 - b2_t) * mean(g2, axis=d1)     (v_col)
        V_hat = R_t C_t / mean(R_t, axis=d1)                      (never formed)
        updates = u_t / sqrt(V_hat)

    Other leaves keep the whole ``V_t = b2_t V_{t-1} + (1 - b2_t) g2`` and get
    ``u_t / sqrt(V_t)``. The paper's ``t`` is ``step - step_offset`` here, clamped at 1 (a
    restart of the decay for fine-tuning; optax's ``decay_offset``).

    Args:
        factored: factor matrices (False keeps every second moment whole).
        decay_rate: the exponent of ``b2_t``, ``> 0`` (the paper's 0.8).
        step_offset: int ``>= 0``, subtracted from the step in ``b2_t``.
        min_dim_size_to_factor: int ``>= 1``, the smallest second-largest axis factored.
        epsilon: ``>= 0``, the paper's ``epsilon_1``, added to the squares.

    Returns:
        A :class:`GradientTransformation` with state :class:`FactoredState` (in each leaf's
        real dtype, float32 for float16); updates keep the structure, shapes and dtypes of
        ``u``.

    Raises:
        ValueError: a hyper-parameter out of its range.

    Example:
        >>> t = scale_by_factored_rms(min_dim_size_to_factor=2, epsilon=0.0)
        >>> g = fnp.array([[1.0, 2.0, 2.0], [2.0, 4.0, 4.0]])  # rank 1: factoring is exact
        >>> updates, state = t.update(g, t.init(g))
        >>> updates  # t = 1: g / sqrt(g**2)
        Tensor([[1., 1., 1.],
                [1., 1., 1.]], dtype=float64)
        >>> state.v_row.shape, state.v_col.shape, state.v.shape
        ((2,), (3,), (1,))

    References:
        Shazeer & Stern, "Adafactor: Adaptive Learning Rates with Sublinear Memory Cost",
        ICML 2018, arXiv:1804.04235, Algorithms 4-5 and Eq. (16).
    """
    name = "scale_by_factored_rms"
    decay_rate = check_range(name, "decay_rate", decay_rate, 0.0, None)
    epsilon = check_range(name, "epsilon", epsilon, 0.0, None)
    step_offset = _check_int(name, "step_offset", step_offset, 0)
    min_dim_size_to_factor = _check_int(name, "min_dim_size_to_factor", min_dim_size_to_factor, 1)
    factored = bool(factored)

    def init(params: Any) -> FactoredState:
        def moments(p: Tensor) -> tuple:
            dtype = _square_dtype(p.dtype)
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            one = fnp.zeros((1,), dtype=dtype, device=p.device)
            if dims is None:
                return one, one, fnp.zeros(p.shape, dtype=dtype, device=p.device)
            d1, d0 = dims
            row = tuple(n for i, n in enumerate(p.shape) if i != d0)
            col = tuple(n for i, n in enumerate(p.shape) if i != d1)
            return (
                fnp.zeros(row, dtype=dtype, device=p.device),
                fnp.zeros(col, dtype=dtype, device=p.device),
                one,
            )

        leaves, treedef = tree.flatten(params)
        parts = [moments(p) for p in leaves]
        rows, cols, full = ([tree.unflatten(treedef, list(x)) for x in zip(*parts)]
                            if parts else (params, params, params))
        return FactoredState(init_count(params), rows, cols, full)

    def update(updates: Any, state: FactoredState, params: Any = None):
        count = get_count(name, state, updates)
        t = fnp.maximum(count - step_offset, 0) + 1
        b2 = 1.0 - fnp.power(fnp.astype(t, "float64"), -decay_rate)
        decay = per_dtype(b2)
        keep = per_dtype(1.0 - b2)

        def step(u: Tensor, r: Tensor, c: Tensor, v: Tensor) -> tuple:
            g2 = abs_sq(widen(u)) + epsilon
            dims = _factored_dims(u.shape, factored, min_dim_size_to_factor)
            if dims is None:
                v = decay(v) * v + keep(v) * g2
                return narrow(widen(u) / fnp.sqrt(v), u), r, c, v
            d1, d0 = dims
            r = decay(r) * r + keep(r) * fnp.mean(g2, axis=d0)
            c = decay(c) * c + keep(c) * fnp.mean(g2, axis=d1)
            row_axis = d1 - 1 if d1 > d0 else d1  # d1 in v_row, which lacks d0
            row_factor = 1.0 / fnp.sqrt(r / fnp.mean(r, axis=row_axis, keepdims=True))
            col_factor = 1.0 / fnp.sqrt(c)
            out = widen(u) * fnp.expand_dims(row_factor, d0) * fnp.expand_dims(col_factor, d1)
            return narrow(out, u), r, c, v

        leaves, treedef = tree.flatten(updates)
        moments = (tree.leaves(state.v_row), tree.leaves(state.v_col), tree.leaves(state.v))
        parts = [step(*x) for x in zip(leaves, *moments)]
        if not parts:
            return updates, FactoredState(increment(count), state.v_row, state.v_col, state.v)
        out, rows, cols, full = (tree.unflatten(treedef, list(x)) for x in zip(*parts))
        return out, FactoredState(increment(count), rows, cols, full)

    return GradientTransformation(init, update)


def _check_int(name: str, what: str, value: Any, minimum: int) -> int:
    """A static integer hyper-parameter (it decides shapes or Python branches)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: {what} must be an int >= {minimum}, got {value!r}")
    return int(value)


def clip_by_block_rms(threshold: float) -> GradientTransformation:
    r"""Clip each leaf's update to a root mean square of at most ``threshold``.

    Adafactor's update clipping (Shazeer & Stern 2018, Eq. 9, ``d = threshold``)::

        updates = u / max(1, rms(u) / threshold),    rms(u) = sqrt(mean(|u|**2))

    Args:
        threshold: ``> 0``, the largest RMS a leaf keeps.

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`; updates keep the
        structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: ``threshold <= 0``.

    Example:
        >>> t = clip_by_block_rms(1.0)
        >>> u = {"a": fnp.array([3.0, -3.0]), "b": fnp.array([0.5])}
        >>> updates, _ = t.update(u, t.init(None))
        >>> updates  # a: rms 3, divided by 3; b: rms 0.5, kept
        {'a': Tensor([ 1., -1.], dtype=float64), 'b': Tensor([0.5], dtype=float64)}

    References:
        Shazeer & Stern, ICML 2018, arXiv:1804.04235, Sec. 6, Eq. (9).
    """
    threshold = check_range("clip_by_block_rms", "threshold", threshold, 0.0, None)
    if threshold == 0.0:
        raise ValueError("clip_by_block_rms: threshold must be > 0, got 0.0")
    return _leafwise("clip_by_block_rms", lambda u: 1.0 / fnp.maximum(1.0, _rms(u) / threshold))


def scale_by_param_block_rms(min_scale: float = 1e-3) -> GradientTransformation:
    r"""Multiply each leaf's update by the root mean square of its parameters.

    Adafactor's relative step size (Shazeer & Stern 2018, Algorithm 4, line 7,
    ``epsilon_2 = min_scale``)::

        updates = max(min_scale, rms(params)) * u

    Args:
        min_scale: ``>= 0``, the floor of the scale (parameters at zero still move).

    Returns:
        A :class:`GradientTransformation` with state :class:`EmptyState`. ``update`` needs
        ``params``; updates keep the structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: negative ``min_scale``; ``update`` called without ``params``.

    Example:
        >>> t = scale_by_param_block_rms()
        >>> params = {"w": fnp.array([3.0, -3.0]), "b": fnp.zeros(1)}
        >>> updates, _ = t.update({"w": fnp.ones(2), "b": fnp.ones(1)}, t.init(params), params)
        >>> updates  # w: rms 3; b: the floor 1e-3
        {'b': Tensor([0.001], dtype=float64), 'w': Tensor([3., 3.], dtype=float64)}

    References:
        Shazeer & Stern, ICML 2018, arXiv:1804.04235, Sec. 8 and Algorithm 4.
    """
    name = "scale_by_param_block_rms"
    min_scale = check_range(name, "min_scale", min_scale, 0.0, None)
    return _leafwise(
        name,
        lambda u, p: fnp.maximum(min_scale, _rms(p)),
        "the scale is the RMS of each leaf of params",
    )


# --------------------------------------------------------------------------- averages


def ema(decay: float, debias: bool = True, accumulator_dtype: Any = None) -> GradientTransformation:
    r"""An exponential moving average of the updates, optionally bias-corrected.

    Starting at ``e_0 = 0``, with ``t = 1, 2, ...`` (optax's ``ema``)::

        e_t = decay * e_{t-1} + (1 - decay) * u_t
        updates = e_t / (1 - decay**t)     if debias else  e_t

    Fed the params instead of gradients (``ema(decay).update(params, state)``), its
    output is a (debiased) EMA of the params, as Polyak averaging keeps for evaluation; see
    also :func:`incremental_update` for an EMA kept beside the params.

    Args:
        decay: in ``[0, 1)``.
        debias: divide by ``1 - decay**t``, so early averages are not pulled to zero.
        accumulator_dtype: the dtype of ``e`` (a dtype or its name); None: each leaf's
            own dtype, float32 for float16 (optax keeps the leaf's dtype).

    Returns:
        A :class:`GradientTransformation` with state :class:`EmaState`; updates keep the
        structure, shapes and dtypes of ``u``.

    Raises:
        ValueError: ``decay`` out of its range.

    Example:
        >>> t = ema(0.5)
        >>> state = t.init(fnp.zeros(1))
        >>> _, state = t.update(fnp.array([2.0]), state)
        >>> updates, state = t.update(fnp.array([4.0]), state)
        >>> updates, state.ema  # e_2 = 0.5 * 1 + 0.5 * 4 = 2.5; / (1 - 0.25)
        (Tensor([3.33333333], dtype=float64), Tensor([2.5], dtype=float64))

    References:
        Polyak & Juditsky, "Acceleration of Stochastic Approximation by Averaging", SIAM J.
        Control Optim. 30(4), 1992. Kingma & Ba, ICLR 2015, Sec. 3 (the bias correction).
    """
    decay = check_range("ema", "decay", decay, 0.0, 1.0)
    debias = bool(debias)
    fixed = None if accumulator_dtype is None else np.dtype(accumulator_dtype)

    def dtype_of(dtype: Any) -> np.dtype:
        return fixed if fixed is not None else _leaf_accumulator_dtype(dtype)

    def init(params: Any) -> EmaState:
        return EmaState(init_count(params), zeros_like_tree(params, dtype_of))

    def update(updates: Any, state: EmaState, params: Any = None):
        count = increment(get_count("ema", state, updates))
        new = tree.map(
            lambda e, u: decay * e + (1.0 - decay) * fnp.astype(u, e.dtype), state.ema, updates
        )
        if debias:
            c = per_dtype(1.0 - fnp.power(decay, count))
            out = tree.map(lambda e, u: fnp.astype(e / c(e), u.dtype), new, updates)
        else:
            out = tree.map(lambda e, u: fnp.astype(e, u.dtype), new, updates)
        return out, EmaState(count, new)

    return GradientTransformation(init, update)


def incremental_update(new_tensors: Any, old_tensors: Any, step_size: float | Tensor) -> Any:
    r"""``step_size * new + (1 - step_size) * old`` leaf by leaf: one step of a moving average.

    Keeping an EMA of the params beside training, with ``decay = 1 - step_size``::

        ema_params = incremental_update(params, ema_params, 1 - decay)

    (optax's ``incremental_update``; Polyak averaging with an exponential window, the
    "target network" update of DQN and the EMA weights evaluated in many training recipes).

    Args:
        new_tensors: a pytree of Tensors (the params).
        old_tensors: a pytree with the same structure and shapes (the average so far).
        step_size: a float in ``[0, 1]`` or a 0-d Tensor (cast to each leaf's real dtype).

    Returns:
        A pytree like ``old_tensors``, each leaf in its dtype.

    Raises:
        ValueError: the pytrees' structures differ, or ``step_size`` outside ``[0, 1]``.

    Example:
        >>> ema_params = {"w": fnp.array([0.0, 10.0])}
        >>> params = {"w": fnp.array([1.0, 0.0])}
        >>> incremental_update(params, ema_params, 0.1)
        {'w': Tensor([0.1, 9. ], dtype=float64)}

    References:
        Polyak & Juditsky, SIAM J. Control Optim. 30(4), 1992. Mnih et al., "Human-level
        control through deep reinforcement learning", Nature 518, 2015 (target networks).
    """
    if not isinstance(step_size, Tensor):
        step_size = check_range("incremental_update", "step_size", step_size, 0.0, None)
        if step_size > 1.0:
            raise ValueError(f"incremental_update: step_size must be in [0, 1], got {step_size}")
    new_def, old_def = tree.structure(new_tensors), tree.structure(old_tensors)
    if new_def != old_def:
        raise ValueError(
            f"incremental_update: new_tensors have structure {new_def} where old_tensors have "
            f"{old_def}; pass two pytrees of the same structure (the params and their average)"
        )
    factor = per_dtype(step_size)
    rest = per_dtype(1.0 - step_size)

    def mix(n: Tensor, o: Tensor) -> Tensor:
        return fnp.astype(factor(o) * n + rest(o) * o, o.dtype)

    return tree.map(mix, new_tensors, old_tensors)
