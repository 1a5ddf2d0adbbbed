"""Transformations that wrap others: per-leaf masks (``masked``, ``multi_transform``),
Lookahead's slow and fast params, and gradient accumulation (``MultiSteps``).

Whatever depends on a step count is chosen with ``fnp.where`` on Tensors, never a Python
``if``, so that a wrapped optimiser's ``update`` can still be traced once by ``fgrad.jit``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import fgrad.numpy as fnp
from fgrad import tree
from fgrad.optim._base import (
    GradientTransformation,
    check_range,
    increment,
    init_count,
    per_dtype,
    require_params,
)
from fgrad.tensor import Tensor


def _check_transformation(name: str, what: str, t: Any) -> GradientTransformation:
    if not isinstance(t, GradientTransformation):
        raise TypeError(f"{name}: {what} is {type(t).__name__}, not a GradientTransformation")
    return t


def _select(pick: Tensor, on_true: Any, on_false: Any) -> Any:
    """``where(pick, a, b)`` leaf by leaf over two pytrees of one structure (optimiser
    states: the branch ``pick`` chooses, decided by a traced Tensor, not by Python)."""
    return tree.map(lambda a, b: fnp.where(pick, a, b), on_true, on_false)


# --------------------------------------------------------------------------- masks


class MaskedState(NamedTuple):
    """State of :func:`masked`: the ``inner_state`` of the wrapped transformation, kept for
    the leaves the mask selects (the others are None in it)."""

    inner_state: Any


def _per_leaf(name: str, what: str, spec: Any, tree_: Any) -> list:
    """The leaves of ``spec`` broadcast to the leaves of ``tree_``, in its leaf order.

    ``spec`` is a pytree with the structure of ``tree_`` or a *prefix* of it (a leaf of
    ``spec`` at an inner node applies to every leaf below, as optax's masks and labels),
    or a function ``tree_ -> such a pytree``. Checked, so that a wrong mask or label
    pytree is an error naming ``what``, not a silent misalignment."""
    spec_tree = spec(tree_) if callable(spec) else spec
    pairs, want = tree.flatten_with_path(tree_)
    spec_pairs, got = tree.flatten_with_path(spec_tree)
    if want == got:
        return [leaf for _, leaf in spec_pairs]
    by_path = dict(spec_pairs)
    out, used = [], set()
    for path, _ in pairs:
        prefix = next((path[:k] for k in range(len(path) + 1) if path[:k] in by_path), None)
        if prefix is None:
            break
        used.add(prefix)
        out.append(by_path[prefix])
    if len(out) != len(pairs) or len(used) != len(by_path):
        raise ValueError(
            f"{name}: {what} has structure {got}, which is neither the structure of the "
            f"params, {want}, nor a prefix of it; give one entry per leaf of params, or one "
            f"per subtree (a prefix), or a function params -> such a pytree"
        )
    return out


def _mask_leaves(name: str, mask: Any, tree_: Any) -> list[bool]:
    """The mask's bools in the leaf order of ``tree_`` (a callable mask called on it)."""
    return [bool(m) for m in _per_leaf(name, "the mask", mask, tree_)]


def _keep(tree_: Any, keep: list[bool]) -> Any:
    """``tree_`` with the leaves not kept replaced by None (an empty subtree)."""
    leaves, treedef = tree.flatten(tree_)
    return tree.unflatten(treedef, [x if k else None for x, k in zip(leaves, keep)])


def masked(inner: GradientTransformation, mask: Any) -> GradientTransformation:
    """Apply ``inner`` to the leaves ``mask`` selects; the other updates pass unchanged.

    As optax's ``masked``: ``inner`` sees the pytree with the leaves not selected replaced
    by None (an empty subtree), so its state holds buffers for the selected leaves only,
    and each unselected leaf's update is returned as it came in. A function ``mask`` is
    called with ``params`` (or with the updates when ``update`` gets no params).

    Args:
        inner: the :class:`GradientTransformation` to apply to the selected leaves.
        mask: a pytree of bools with the structure of ``params`` or a prefix of it (a
            bool at an inner node, ``{"encoder": False, "head": True}`` over nested params,
            applies to every leaf below it, as optax's), or a function ``params -> such a
            pytree``. The bools are static: which leaves ``inner`` sees is decided in
            Python, also under ``jit``.

    Returns:
        A :class:`GradientTransformation` with state :class:`MaskedState`; updates keep the
        structure, shapes and dtypes of ``u``.

    Raises:
        TypeError: ``inner`` is not a :class:`GradientTransformation`.
        ValueError: the mask's structure is neither that of the params nor a prefix of it.

    Example:
        >>> t = masked(fgrad.optim.scale(-0.5), {"frozen": False, "w": True})
        >>> grads = {"frozen": fnp.array([1.0]), "w": fnp.array([2.0])}
        >>> updates, state = t.update(grads, t.init(grads))
        >>> updates
        {'frozen': Tensor([1.], dtype=float64), 'w': Tensor([-1.], dtype=float64)}
    """
    inner = _check_transformation("masked", "inner", inner)

    def init(params: Any) -> MaskedState:
        return MaskedState(inner.init(_keep(params, _mask_leaves("masked", mask, params))))

    def update(updates: Any, state: MaskedState, params: Any = None):
        keep = _mask_leaves("masked", mask, updates if params is None else params)
        inner_params = None if params is None else _keep(params, keep)
        inner_updates, inner_state = inner.update(
            _keep(updates, keep), state.inner_state, inner_params
        )
        leaves, treedef = tree.flatten(updates)
        new = iter(tree.leaves(inner_updates))
        merged = [next(new) if k else u for u, k in zip(leaves, keep)]
        return tree.unflatten(treedef, merged), MaskedState(inner_state)

    return GradientTransformation(init, update)


class MultiTransformState(NamedTuple):
    """State of :func:`multi_transform`: ``inner_states``, a dict label ->
    :class:`MaskedState` of that label's transformation."""

    inner_states: Any


def multi_transform(
    transforms: Mapping[Any, GradientTransformation], param_labels: Any
) -> GradientTransformation:
    """A different transformation for each group of leaves, chosen by a label per leaf.

    As optax's ``multi_transform``: ``param_labels`` gives each leaf of ``params`` a label
    (a pytree of labels with the structure of ``params``, or a function ``params -> such a
    pytree``), and the leaves labelled ``k`` are updated by ``transforms[k]`` alone, as by
    :func:`masked` with the mask ``label == k``. Transformations with no leaves get empty
    pytrees.

    Args:
        transforms: a dict ``label -> GradientTransformation``.
        param_labels: a pytree of labels (hashable, usually str) with the structure of
            ``params`` or a prefix of it (a label at an inner node applies to every leaf
            below it, as optax's), or a function ``params -> such a pytree``.

    Returns:
        A :class:`GradientTransformation` with state :class:`MultiTransformState`; updates
        keep the structure, shapes and dtypes of ``u``.

    Raises:
        TypeError: ``transforms`` is not a dict of :class:`GradientTransformation`.
        ValueError: a leaf's label has no transformation; the labels' structure is
            neither that of the params nor a prefix of it.

    Example:
        >>> sgd = fgrad.optim.sgd
        >>> opt = multi_transform({"fast": sgd(1.0), "slow": sgd(0.1)}, {"b": "fast", "w": "slow"})
        >>> grads = {"b": fnp.array([1.0]), "w": fnp.array([1.0])}
        >>> updates, state = opt.update(grads, opt.init(grads))
        >>> updates
        {'b': Tensor([-1.], dtype=float64), 'w': Tensor([-0.1], dtype=float64)}
        >>> # labels as a prefix of nested params; set_to_zero freezes a group
        >>> params = {"conv": {"w": fnp.ones(2), "b": fnp.ones(1)}, "head": {"w": fnp.ones(2)}}
        >>> opt = multi_transform({"frozen": fgrad.optim.set_to_zero(), "train": sgd(0.1)},
        ...                       {"conv": "frozen", "head": "train"})
        >>> updates, _ = opt.update(params, opt.init(params), params)
        >>> updates["conv"]["w"], updates["head"]["w"]
        (Tensor([0., 0.], dtype=float64), Tensor([-0.1, -0.1], dtype=float64))
    """
    name = "multi_transform"
    if not isinstance(transforms, Mapping):
        raise TypeError(
            f"{name}: transforms must be a dict label -> GradientTransformation, got "
            f"{type(transforms).__name__}"
        )
    for label, t in transforms.items():
        _check_transformation(name, f"transforms[{label!r}]", t)

    def labels_of(tree_: Any) -> list:
        labels = _per_leaf(name, "param_labels", param_labels, tree_)
        missing = sorted({repr(x) for x in labels if x not in transforms})
        if missing:
            raise ValueError(
                f"{name}: no transformation for the labels {', '.join(missing)}; transforms "
                f"has {sorted(map(repr, transforms))}"
            )
        return labels

    def masks(tree_: Any) -> dict:
        labels = labels_of(tree_)
        _, treedef = tree.flatten(tree_)
        return {k: tree.unflatten(treedef, [x == k for x in labels]) for k in transforms}

    def init(params: Any) -> MultiTransformState:
        by_label = masks(params)
        return MultiTransformState(
            {k: masked(t, by_label[k]).init(params) for k, t in transforms.items()}
        )

    def update(updates: Any, state: MultiTransformState, params: Any = None):
        by_label = masks(updates if params is None else params)
        new_states = {}
        for k, t in transforms.items():
            updates, new_states[k] = masked(t, by_label[k]).update(
                updates, state.inner_states[k], params
            )
        return updates, MultiTransformState(new_states)

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- Lookahead


class LookaheadParams(NamedTuple):
    """The params :func:`lookahead` optimises: the ``fast`` ones (where gradients are
    taken) and the ``slow`` ones (the result to evaluate), two pytrees of one structure."""

    fast: Any
    slow: Any

    @classmethod
    def init_synced(cls, params: Any) -> LookaheadParams:
        """Fast and slow params both equal to ``params``, as Lookahead starts.

        Example:
            >>> LookaheadParams.init_synced(fnp.array([1.0]))
            LookaheadParams(fast=Tensor([1.], dtype=float64), slow=Tensor([1.], dtype=float64))
        """
        return cls(params, params)


class LookaheadState(NamedTuple):
    """State of :func:`lookahead`: the ``fast_state`` of the inner optimiser and
    ``steps_since_sync``, a 0-d int32 Tensor in ``[0, sync_period)``."""

    fast_state: Any
    steps_since_sync: Tensor


def lookahead(
    fast_optimizer: GradientTransformation,
    sync_period: int,
    slow_step_size: float,
    reset_state: bool = False,
) -> GradientTransformation:
    r"""Lookahead: ``k`` steps of an inner optimiser, then the slow params move toward them.

    The params are :class:`LookaheadParams` ``(fast, slow)``; gradients are taken at the
    fast params. Every update applies the inner optimiser's update to the fast params; on
    every ``sync_period``-th update the slow params then move (Zhang et al. 2019,
    Algorithm 1, with ``k = sync_period`` and ``alpha = slow_step_size``) and the fast ones
    restart from them::

        fast_{t+1} = fast_t + inner_update_t
        at a sync:   slow <- slow + alpha * (fast_{t+1} - slow),   fast_{t+1} <- slow

    ``update`` returns :class:`LookaheadParams` of updates that :func:`apply_updates` adds
    to the params (optax's ``lookahead``); do not transform them further, or the fast and
    slow params fall out of step.

    Args:
        fast_optimizer: the inner :class:`GradientTransformation`.
        sync_period: int ``>= 1``, the ``k`` inner steps between synchronisations.
        slow_step_size: ``alpha`` in ``[0, 1]``.
        reset_state: reset the inner optimiser's state to its ``init`` at each sync.

    Returns:
        A :class:`GradientTransformation` with state :class:`LookaheadState`. ``init``
        takes :class:`LookaheadParams` (or the fast params alone); ``update(grads, state,
        params)`` takes the gradients at ``params.fast`` and needs ``params``.

    Raises:
        TypeError: ``fast_optimizer`` is not a :class:`GradientTransformation`; ``params``
            is not :class:`LookaheadParams`.
        ValueError: ``sync_period < 1``, ``slow_step_size`` outside ``[0, 1]``, or
            ``update`` called without ``params``.

    Example:
        >>> opt = lookahead(fgrad.optim.sgd(0.5), sync_period=2, slow_step_size=0.5)
        >>> params = LookaheadParams.init_synced(fnp.array([1.0]))
        >>> state = opt.init(params)
        >>> for _ in range(2):  # gradient 1: fast 1 -> 0.5 -> 0, then slow 1 -> 0.5
        ...     updates, state = opt.update(fnp.array([1.0]), state, params)
        ...     params = fgrad.optim.apply_updates(params, updates)
        >>> params
        LookaheadParams(fast=Tensor([0.5], dtype=float64), slow=Tensor([0.5], dtype=float64))

    References:
        Zhang, Lucas, Hinton & Ba, "Lookahead Optimizer: k steps forward, 1 step back",
        NeurIPS 2019, arXiv:1907.08610, Algorithm 1.
    """
    name = "lookahead"
    fast_optimizer = _check_transformation(name, "fast_optimizer", fast_optimizer)
    if isinstance(sync_period, bool) or int(sync_period) != sync_period or sync_period < 1:
        raise ValueError(f"{name}: sync_period must be an int >= 1, got {sync_period!r}")
    sync_period = int(sync_period)
    alpha = check_range(name, "slow_step_size", slow_step_size, 0.0, None)
    if not isinstance(alpha, Tensor) and alpha > 1.0:
        raise ValueError(f"{name}: slow_step_size must be in [0, 1], got {alpha}")

    def init(params: Any) -> LookaheadState:
        fast = params.fast if isinstance(params, LookaheadParams) else params
        return LookaheadState(fast_optimizer.init(fast), init_count(fast))

    def update(updates: Any, state: LookaheadState, params: Any = None):
        require_params(name, "the slow params move toward the fast ones", params)
        if not isinstance(params, LookaheadParams):
            raise TypeError(
                f"{name}.update: params must be LookaheadParams(fast, slow), got "
                f"{type(params).__name__}; start from LookaheadParams.init_synced(params)"
            )
        fast_updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync = state.steps_since_sync == sync_period - 1
        # At a sync, diff = fast + u - slow is how far the fast params got: slow moves by
        # alpha * diff and fast lands on the new slow params, u - (1 - alpha) * diff.
        diff = tree.map(lambda f, u, s: f + u - s, params.fast, fast_updates, params.slow)
        a = per_dtype(alpha)
        slow_out = tree.map(lambda d: fnp.where(sync, a(d) * d, fnp.zeros_like(d)), diff)
        fast_out = tree.map(
            lambda u, d: fnp.where(sync, u - (1.0 - a(d)) * d, u), fast_updates, diff
        )
        if reset_state:
            fast_state = _select(sync, fast_optimizer.init(params.fast), fast_state)
        steps = fnp.where(sync, 0, state.steps_since_sync + 1)
        return LookaheadParams(fast_out, slow_out), LookaheadState(fast_state, steps)

    return GradientTransformation(init, update)


# --------------------------------------------------------------------------- accumulation


class MultiStepsState(NamedTuple):
    """State of :class:`MultiSteps`: ``mini_step`` (gradients accumulated so far in this
    round), ``gradient_step`` (inner updates made), the ``inner_opt_state`` and the
    accumulated gradients ``acc_grads`` (their mean so far, or their sum)."""

    mini_step: Tensor
    gradient_step: Tensor
    inner_opt_state: Any
    acc_grads: Any


class MultiSteps:
    r"""Gradient accumulation: the inner optimiser steps once every ``k`` calls.

    As optax's ``MultiSteps``: each call adds the gradients to an accumulator; the
    ``k``-th call of a round passes their mean (or sum) to the inner optimiser and returns
    its updates, the others return zero updates and leave the inner state unchanged. With
    ``k`` mini-batches of one batch, ``k`` calls equal one inner step on the whole batch's
    mean gradient::

        a_j = a_{j-1} + (g_j - a_{j-1}) / j          (j = 1..k; a_k = mean of g_1..g_k)
        updates = inner.update(a_k) at j = k, else 0

    Both branches are computed and one is chosen with ``fnp.where``, so ``update`` can be
    traced once by ``fgrad.jit``.

    Args:
        opt: the inner :class:`GradientTransformation`.
        every_k_schedule: int ``k >= 1``, or a function ``gradient_step -> k`` (called
            with a 0-d int32 Tensor; write it with fgrad ops).
        use_grad_mean: accumulate the mean (True) or the sum of the gradients.

    Raises:
        TypeError: ``opt`` is not a :class:`GradientTransformation`.
        ValueError: an int ``every_k_schedule < 1``.

    Example:
        >>> acc = MultiSteps(fgrad.optim.sgd(1.0), every_k_schedule=2)
        >>> state = acc.init(fnp.zeros(1))
        >>> u1, state = acc.update(fnp.array([1.0]), state)
        >>> u2, state = acc.update(fnp.array([3.0]), state)
        >>> u1, u2  # nothing, then -1.0 * mean(1, 3)
        (Tensor([0.], dtype=float64), Tensor([-2.], dtype=float64))

    References:
        Goyal et al. 2017, arXiv:1706.02677 (a large batch's mean gradient from several
        workers' or steps' gradients); optax's ``MultiSteps``.
    """

    def __init__(
        self,
        opt: GradientTransformation,
        every_k_schedule: int | Callable[[Tensor], Any],
        use_grad_mean: bool = True,
    ):
        self._opt = _check_transformation("MultiSteps", "opt", opt)
        if not callable(every_k_schedule):
            k = every_k_schedule
            if isinstance(k, bool) or int(k) != k or k < 1:
                raise ValueError(f"MultiSteps: every_k_schedule must be an int >= 1, got {k!r}")
            k = int(k)
            every_k_schedule = lambda step: k  # noqa: E731
        self._every_k = every_k_schedule
        self._mean = bool(use_grad_mean)

    def init(self, params: Any) -> MultiStepsState:
        """The initial :class:`MultiStepsState`: counters at 0, zero accumulators.

        Example:
            >>> MultiSteps(fgrad.optim.sgd(0.1), 4).init(fnp.ones(2)).acc_grads
            Tensor([0., 0.], dtype=float64)
        """
        count = init_count(params)
        zeros = tree.map(fnp.zeros_like, params)
        return MultiStepsState(count, count, self._opt.init(params), zeros)

    def update(self, updates: Any, state: MultiStepsState, params: Any = None):
        """Accumulate ``updates``; on the ``k``-th call, the inner optimiser's updates.

        Returns ``(updates, new_state)``: zero updates of the structure, shapes and dtypes
        of ``updates`` except on the last call of a round.

        Example:
            >>> acc = MultiSteps(fgrad.optim.sgd(0.1), 3)
            >>> u, state = acc.update(fnp.array([1.0]), acc.init(fnp.zeros(1)))
            >>> u, state.mini_step
            (Tensor([0.], dtype=float64), Tensor(1, dtype=int32))
        """
        if not isinstance(state, MultiStepsState):
            raise TypeError(
                f"MultiSteps.update: state must be the MultiStepsState from MultiSteps.init, "
                f"got {type(state).__name__}"
            )
        j = increment(state.mini_step)  # the gradients accumulated after this one
        if self._mean:
            inv = per_dtype(1.0 / fnp.astype(j, "float64"))
            acc = tree.map(lambda a, g: a + (g - a) * inv(a), state.acc_grads, updates)
        else:
            acc = tree.map(lambda a, g: a + g, state.acc_grads, updates)
        emit = j >= self._every_k(state.gradient_step)
        inner_updates, inner_state = self._opt.update(acc, state.inner_opt_state, params)
        out = tree.map(lambda u: fnp.where(emit, u, fnp.zeros_like(u)), inner_updates)
        new_state = MultiStepsState(
            fnp.where(emit, 0, j),
            fnp.where(emit, increment(state.gradient_step), state.gradient_step),
            _select(emit, inner_state, state.inner_opt_state),
            tree.map(lambda a: fnp.where(emit, fnp.zeros_like(a), a), acc),
        )
        return out, new_state

    def has_updated(self, state: MultiStepsState) -> Tensor:
        """Whether the last ``update`` stepped the inner optimiser (a 0-d bool Tensor).

        Example:
            >>> acc = MultiSteps(fgrad.optim.sgd(0.1), 1)
            >>> _, state = acc.update(fnp.array([1.0]), acc.init(fnp.zeros(1)))
            >>> acc.has_updated(state)
            Tensor(True, dtype=bool)
        """
        return (state.mini_step == 0) & (state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        """This accumulation as a :class:`GradientTransformation` (to :func:`chain` it).

        Example:
            >>> t = MultiSteps(fgrad.optim.sgd(0.1), 2).gradient_transformation()
            >>> type(t).__name__
            'GradientTransformation'
        """
        return GradientTransformation(self.init, self.update)
