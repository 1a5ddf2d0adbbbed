"""Optimisers as pure ``init`` / ``update`` pairs, in the style of optax.

An optimiser is a :class:`GradientTransformation`: ``state = opt.init(params)`` builds its
state from the parameter pytree, and ``updates, state = opt.update(grads, state, params)``
turns gradients into *updates* that :func:`apply_updates` adds to the parameters. Nothing is
mutated; states are NamedTuples of pytrees shaped like ``params`` plus a step ``count``, a
0-d int32 Tensor. The updates already carry the minus sign of descent: ``params + updates``.

Optimisers are built from small transformations, as in optax: :func:`scale_by_adam`,
:func:`scale_by_rms`, :func:`trace` (momentum), :func:`add_decayed_weights`,
:func:`clip_by_global_norm`, :func:`scale` and :func:`scale_by_learning_rate` (last: it
multiplies by ``-lr_t``), composed left to right by :func:`chain`; and more blocks:
:func:`scale_by_radam`, :func:`scale_by_lion`, :func:`scale_by_trust_ratio`,
:func:`scale_by_rss`, :func:`scale_by_factored_rms`, :func:`clip_by_block_rms`,
:func:`scale_by_param_block_rms` and :func:`ema`. The named optimisers (:func:`sgd`,
:func:`adam`, :func:`adamw`, :func:`rmsprop`, :func:`nadam`, :func:`radam`, :func:`lion`,
:func:`lamb`, :func:`adagrad`, :func:`adafactor`) are such chains; their states are flat
NamedTuples (:class:`AdamState`, ...), so checkpoints saved as a state's leaves load
unchanged. A chain built by hand has the tuple of its blocks' states.

Wrappers change how an inner optimiser is applied: :func:`masked` and
:func:`multi_transform` (per-leaf masks and labels), :func:`lookahead` (slow and fast
params, :class:`LookaheadParams`) and :class:`MultiSteps` (gradient accumulation).
:func:`incremental_update` keeps an EMA of the params beside training.

Complex parameters are supported as in optax: second moments and norms use
``|g|**2 = g * conj(g)``, which is real. ``fgrad.grad`` of a real loss of a complex ``z``
returns ``df/dx - i df/dy`` (JAX's convention), so descend along its conjugate: pass
``tree.map(fnp.conj, grads)`` to ``update``. Float16 parameters keep Adam's and RMSProp's
moments in float32 (``eps = 1e-8`` and small squared gradients vanish in float16), and
norms are summed in float32; updates come back in float16.

Learning rates are a Python float or a *schedule*, a function ``step -> float`` of the
number of updates applied so far (0 for the first update), such as
:func:`cosine_decay_schedule`, :func:`exponential_decay`, :func:`polynomial_schedule`,
:func:`linear_schedule`, :func:`piecewise_constant_schedule` or several joined by
:func:`join_schedules`. Optimisers call it with their ``count`` Tensor, so a schedule
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

from fgrad.optim._adaptive import (
    AdafactorState,
    AdagradState,
    LionState,
    adafactor,
    adagrad,
    lamb,
    lion,
    nadam,
    radam,
)
from fgrad.optim._base import EmptyState, GradientTransformation, Schedule
from fgrad.optim._optimisers import AdamState, RmsPropState, SgdState, adam, adamw, rmsprop, sgd
from fgrad.optim._scalers import (
    EmaState,
    FactoredState,
    ScaleByLionState,
    ScaleByRssState,
    clip_by_block_rms,
    ema,
    incremental_update,
    scale_by_factored_rms,
    scale_by_lion,
    scale_by_param_block_rms,
    scale_by_rss,
    scale_by_trust_ratio,
)
from fgrad.optim._schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    linear_warmup,
    piecewise_constant_schedule,
    polynomial_schedule,
    warmup_cosine_decay_schedule,
)
from fgrad.optim._transforms import (
    ScaleByAdamState,
    ScaleByLearningRateState,
    ScaleByRmsState,
    TraceState,
    add_decayed_weights,
    apply_updates,
    chain,
    clip_by_global_norm,
    global_norm,
    identity,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_radam,
    scale_by_rms,
    set_to_zero,
    trace,
)
from fgrad.optim._wrappers import (
    LookaheadParams,
    LookaheadState,
    MaskedState,
    MultiSteps,
    MultiStepsState,
    MultiTransformState,
    lookahead,
    masked,
    multi_transform,
)

__all__ = sorted(
    [
        "AdafactorState", "AdagradState", "AdamState", "EmaState", "EmptyState",
        "FactoredState", "GradientTransformation", "LionState", "LookaheadParams",
        "LookaheadState", "MaskedState", "MultiSteps", "MultiStepsState",
        "MultiTransformState", "RmsPropState", "ScaleByAdamState", "ScaleByLearningRateState",
        "ScaleByLionState", "ScaleByRmsState", "ScaleByRssState", "Schedule", "SgdState",
        "TraceState",
        "adafactor", "adagrad", "adam", "adamw", "add_decayed_weights", "apply_updates",
        "chain", "clip_by_block_rms", "clip_by_global_norm", "constant_schedule",
        "cosine_decay_schedule", "ema", "exponential_decay", "global_norm",
        "identity", "incremental_update", "join_schedules", "lamb", "linear_schedule", "linear_warmup",
        "lion", "lookahead", "masked", "multi_transform", "nadam", "piecewise_constant_schedule",
        "polynomial_schedule", "radam", "rmsprop", "scale", "scale_by_adam",
        "scale_by_factored_rms", "scale_by_learning_rate", "scale_by_lion",
        "scale_by_param_block_rms", "scale_by_radam", "scale_by_rms", "scale_by_rss",
        "scale_by_trust_ratio", "set_to_zero", "sgd", "trace", "warmup_cosine_decay_schedule",
    ]
)


def __dir__() -> list[str]:
    """Only the public names (not the private submodules ``_base``, ``_transforms``, ...)."""
    return list(__all__)
