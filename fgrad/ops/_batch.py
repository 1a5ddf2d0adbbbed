"""Shared ``vmap`` rules (the ``batch=`` of ``defop``) and the helpers they use.

A rule runs an op on a whole batch at once. It gets the op, the input values one level
below ``vmap`` and, for each, ``0`` when the value carries the mapped axis in front or
``None`` when every example shares it; it returns the result and where its mapped axis is
(``0``, ``None``, or a tuple of them for an op with several results). Keeping the mapped
axis always in front (JAX lets it move) costs a transpose now and then and keeps each
rule a few lines. Rules call registry ops, so what they compute is itself traced by any
transform around ``vmap``. Ops are looked up in the registry when a rule runs, so this
module imports none of the op families that use it.

Reference: JAX's batching interpreter (``jax/_src/interpreters/batching.py``) and its
per-primitive batch rules, in the plain form of ``docs/autodidax.py``.
"""

from __future__ import annotations

from typing import Any

from fgrad.core.op import REGISTRY, Op
from fgrad.ops._rules import ndim_of, shape_of

__all__ = [
    "aligned",
    "axes_batch",
    "batch_size",
    "elementwise_batch",
    "moved_to_front",
    "with_batch",
]


def batch_size(args: tuple, dims: tuple) -> int:
    """The mapped axis' size: the leading dimension of any batched input."""
    for a, d in zip(args, dims):
        if d is not None:
            return shape_of(a)[0]
    raise ValueError("a batch rule ran with no batched input")  # bind never does this


def with_batch(x: Any, dim: Any, size: int) -> Any:
    """``x`` with the mapped axis in front: shared values are broadcast to ``size``."""
    if dim is not None:
        return x
    shape = shape_of(x)
    return REGISTRY["broadcast_to"](_as_array(x), shape=(size, *shape))


def moved_to_front(x: Any, axis: int) -> Any:
    """``x`` with its axis ``axis`` moved to the front (a transpose, no copy)."""
    nd = ndim_of(x)
    axis %= nd
    if axis == 0:
        return x
    order = (axis, *(a for a in range(nd) if a != axis))
    return REGISTRY["permute_dims"](x, axes=order)


def _as_array(x: Any) -> Any:
    if type(x) in (bool, int, float, complex):
        return REGISTRY["full_like"](x, fill_value=x, dtype=None)
    return x


def aligned(x: Any, dim: Any, rank: int) -> Any:
    """A batched ``x`` reshaped so its example axes broadcast against ``rank``-d examples:
    ``(B, *shape)`` becomes ``(B, 1, ..., 1, *shape)``. Shared values broadcast already."""
    if dim is None:
        return x
    shape = shape_of(x)
    missing = rank - (len(shape) - 1)
    if missing <= 0:
        return x
    return REGISTRY["reshape"](x, shape=(shape[0], *([1] * missing), *shape[1:]))


def elementwise_batch(op: Op, args: tuple, dims: tuple, **params: Any) -> tuple[Any, Any]:
    """Rule of elementwise ops, whose inputs broadcast against each other (numpy's rules).

    A shared input already broadcasts from the right against the batch; a batched one of
    lower example rank gets unit axes after its mapped axis so that the mapped axes line up.
    """
    rank = max(ndim_of(a) - (d is not None) for a, d in zip(args, dims))
    out = op(*[aligned(a, d, rank) for a, d in zip(args, dims)], **params)
    return out, (tuple(0 for _ in out) if op.multiple_results else 0)


def _shifted(params: dict) -> dict:
    new = dict(params)
    if "axes" in new and new["axes"] is not None:
        new["axes"] = tuple(a + 1 for a in new["axes"])
    if "axis" in new and new["axis"] is not None:
        new["axis"] = new["axis"] + 1
    return new


def axes_batch(op: Op, args: tuple, dims: tuple, **params: Any) -> tuple[Any, Any]:
    """Rule of ops over axes of their inputs (reductions, scans, softmax, sorting): the
    ``axes``/``axis`` params move one place right, past the mapped axis. Every input
    gets the mapped axis (shared ones broadcast), so the params refer to the same axes."""
    size = batch_size(args, dims)
    out = op(*[with_batch(a, d, size) for a, d in zip(args, dims)], **_shifted(params))
    return out, (tuple(0 for _ in out) if op.multiple_results else 0)
