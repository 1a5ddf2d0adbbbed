"""Host callbacks: ops whose kernel calls a Python function on numpy arrays.

``debug_callback`` runs a function for its effect (``fgrad.debug.print`` and
``fgrad.debug.callback``): it is *effectful*, so graph passes never drop, merge, fold or
reorder it, and under ``jit`` it runs at every call with that call's values. It has no
derivative (its inputs get no cotangent from it, as in JAX). ``pure_callback`` computes a
value on the host from a declared result shape and dtype: it is pure (a pass may drop it
when its result is unused) and refuses differentiation unless wrapped in ``custom_jvp`` or
``custom_vjp``, as ``jax.pure_callback`` does.

Under ``vmap`` each op keeps the batch in its ``levels`` param: one ``(dims, size)`` per
``vmap``, outermost first, ``dims`` saying per input whether that level maps it (0, in
front of the levels inside it) or not (None). The kernel then calls the function once per
example ("sequential"), or, for ``pure_callback`` with ``vmap_method="expand_dims"`` or
``"broadcast_all"``, once on the whole batch, as JAX does.

Reference: JAX's ``jax.debug.callback`` and ``jax.pure_callback``
(https://docs.jax.dev/en/latest/external-callbacks.html).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import backend as _backend
from fgrad import tree as _tree
from fgrad.core.op import Check, defop
from fgrad.core.staging import GraphTrace
from fgrad.core.trace import active_traces, top_trace
from fgrad.errors import DTypeError, ShapeError
from fgrad.tensor import ShapeDtype

__all__ = ["debug_callback", "pure_callback", "VMAP_METHODS"]

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")
_SCALARS = (bool, int, float, complex)


class Host:
    """A host function held in an op's params: hashed by identity, shown by name (so a
    graph prints ``callback=<host print>`` and sample seeds do not hold addresses)."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable, name: str):
        self.fn = fn
        self.name = name

    def __repr__(self) -> str:
        return f"<host {self.name}>"


def _to_host(x: Any) -> Any:
    """A numpy copy of a kernel input (a copy: jit's buffers are reused after the call, and
    the function may keep what it is given)."""
    if type(x) in _SCALARS:
        return np.asarray(x)
    if not hasattr(x, "shape"):
        # jit asks each kernel whether it is one ufunc call by running it on placeholders:
        # refuse those before the user's function sees them.
        raise TypeError(f"host callback: kernel inputs must be arrays, got {type(x).__name__}")
    if type(x) is np.ndarray:
        return x.copy()
    return np.array(_backend.to_device(x, _backend.CPU), copy=True)


def _slice(host: list, dims: tuple, i: int) -> list:
    return [h[i] if d is not None else h for h, d in zip(host, dims)]


def stage_or_bind(op: Any, args: Sequence[Any], params: dict) -> Any:
    """``op(*args, **params)``, recorded in the innermost graph being traced when that is
    deeper than every traced argument: a callback whose arguments are constants, or values
    of an enclosing ``jit``, belongs in the ``jit`` or loop body being traced, to run each
    time that runs (an ordinary op would run once, at trace time, or be hoisted)."""
    staging = None
    for trace in reversed(active_traces()):
        if isinstance(trace, GraphTrace):
            staging = trace
            break
    top = top_trace(args, op)
    if staging is not None and (top is None or staging.level > top.level):
        return staging.process(op, tuple(args), params)
    return op(*args, **params)


# ------------------------------------------------------------------------ debug_callback


def _debug_run(callback: Host, host: list, levels: tuple) -> None:
    if not levels:
        callback.fn(*host)
        return
    dims, size = levels[0]
    for i in range(size):  # one call per example, in order, as JAX's debug callbacks
        _debug_run(callback, _slice(host, dims, i), levels[1:])


def _debug_kernel(xp, *arrays, callback, levels):
    _debug_run(callback, [_to_host(a) for a in arrays], levels)
    return xp.zeros((), dtype=bool)


def _debug_batch(op, args, dims, *, callback, levels):
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    return op(*args, callback=callback, levels=((tuple(dims), size), *levels)), None


def _quiet(*arrays: Any) -> None:
    """The registry sweep's callback: does nothing (the tests check real ones)."""


debug_callback = defop(
    "debug_callback",
    kernel=_debug_kernel,
    aval=lambda *avals, callback, levels: ShapeDtype((), np.dtype(np.bool_)),
    nondiff=True,
    effectful=True,
    batch=_debug_batch,
    check=Check(params=({"callback": Host(_quiet, "quiet"), "levels": ()},), strict=False),
    doc="""Call a host function on the inputs for its effect; returns a 0-d bool token.

    The op behind ``fgrad.debug.print`` and ``fgrad.debug.callback`` (use those): it is
    effectful, so ``jit`` keeps it, in order, and runs it at every call; under ``vmap`` it
    calls the function once per example; it has no derivative.

    Example:
        >>> seen = []
        >>> from fgrad.ops.callback import Host, debug_callback
        >>> _ = debug_callback(fnp.array([1.0, 2.0]), callback=Host(seen.append, "keep"),
        ...                    levels=())
        >>> seen
        [array([1., 2.])]
    """,
)


# ------------------------------------------------------------------------ pure_callback


def _batched(avals: Sequence[ShapeDtype], levels: tuple) -> list[ShapeDtype]:
    sizes = tuple(size for _, size in levels)
    return [ShapeDtype((*sizes, *a.shape), a.dtype) for a in avals]


def _checked(results: Any, avals: Sequence[ShapeDtype]) -> list:
    """The function's flat results as arrays, each checked against its declared aval."""
    results = [np.asarray(r) for r in results]
    for k, (r, a) in enumerate(zip(results, avals)):
        if tuple(r.shape) != tuple(a.shape):
            raise ShapeError(
                f"pure_callback: the callback's result {k} has shape {r.shape}, but "
                f"result_shape_dtypes declares {a}; return arrays of the declared shapes"
            )
        if r.dtype != np.dtype(a.dtype):
            raise DTypeError(
                f"pure_callback: the callback's result {k} has dtype {r.dtype}, but "
                f"result_shape_dtypes declares {a}; cast it in the callback "
                f"(.astype({np.dtype(a.dtype).name!r}))"
            )
    return results


def _pure_run(callback: Host, host: list, avals: tuple, levels: tuple, method: str) -> list:
    if not levels:
        return _checked(callback.fn(*host), avals)
    if method == "sequential":
        dims, size = levels[0]
        per = [
            _pure_run(callback, _slice(host, dims, i), avals, levels[1:], method)
            for i in range(size)
        ]
        return [
            np.stack([p[j] for p in per])
            if per
            else np.zeros(tuple(a.shape), a.dtype)
            for j, a in enumerate(_batched(avals, levels))
        ]
    # expand_dims / broadcast_all: one call on the whole batch, every input given an axis
    # per level (of size 1 where that level does not map it, or broadcast to the size).
    sizes = tuple(size for _, size in levels)
    full = []
    for k, h in enumerate(host):
        for i, (dims, _) in enumerate(levels):
            if dims[k] is None:
                h = np.expand_dims(h, i)
        if method == "broadcast_all":
            h = np.broadcast_to(h, (*sizes, *h.shape[len(sizes):])).copy()
        full.append(h)
    return _checked(callback.fn(*full), _batched(avals, levels))


def _pure_kernel(xp, *arrays, callback, result_avals, levels, vmap_method):
    outs = _pure_run(callback, [_to_host(a) for a in arrays], result_avals, levels, vmap_method)
    return tuple(o if xp is np else xp.asarray(o) for o in outs)


def _pure_aval(*avals, callback, result_avals, levels, vmap_method):
    return tuple(_batched(result_avals, levels))


def _pure_batch(op, args, dims, *, callback, result_avals, levels, vmap_method):
    if vmap_method is None:
        raise NotImplementedError(
            "vmap of pure_callback needs vmap_method: 'sequential' (call the function once "
            "per example), 'expand_dims' (once, unmapped inputs given a leading axis of size "
            "1) or 'broadcast_all' (once, every input broadcast to the batch), as in JAX"
        )
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    out = op(
        *args,
        callback=callback,
        result_avals=result_avals,
        levels=((tuple(dims), size), *levels),
        vmap_method=vmap_method,
    )
    return out, (0,) * len(result_avals)


def _no_derivative(what: str) -> Exception:
    return ValueError(
        f"pure_callback: a host function has no {what} rule (fgrad cannot see inside it); "
        "wrap the function that calls pure_callback in fgrad.custom_jvp or "
        "fgrad.custom_vjp and give its derivative there, as in JAX"
    )


def _pure_jvp(tangents, out, *primals, **params):
    raise _no_derivative("JVP")


def _pure_vjp(ct, out, *primals, **params):
    return tuple(_no_derivative("VJP") for _ in primals)


def _sample_sin(x: np.ndarray) -> list:
    """The registry sweep's callback: numpy's sin of an integer sample, in float64."""
    return [np.sin(x)]


def _sample_args(rng: np.random.Generator, shapes: tuple) -> list:
    # Integer samples: the op has no derivative to check against finite differences.
    return [rng.integers(-5, 5, s) for s in shapes]


pure_callback_p = defop(
    "pure_callback",
    kernel=_pure_kernel,
    aval=_pure_aval,
    jvp=_pure_jvp,
    vjp=_pure_vjp,
    multiple_results=True,
    batch=_pure_batch,
    check=Check(
        shapes=(((3,),),),
        make_args=_sample_args,
        params=(
            {
                "callback": Host(_sample_sin, "sin"),
                "result_avals": (ShapeDtype((3,), np.dtype(np.float64)),),
                "levels": (),
                "vmap_method": "sequential",
            },
        ),
        strict=False,
    ),
    doc="""Compute a value with a host function of declared result avals.

    The op behind ``fgrad.pure_callback`` (use that): ``callback`` takes and returns flat
    lists of numpy arrays, each result checked against ``result_avals``.

    Example:
        >>> from fgrad.ops.callback import Host, pure_callback_p
        >>> pure_callback_p(fnp.array([0.0, 1.0]), callback=Host(lambda x: [x * 2], "double"),
        ...                 result_avals=(fgrad.ShapeDtype((2,), "float64"),), levels=(),
        ...                 vmap_method="sequential")
        (Tensor([0., 2.], dtype=float64),)
    """,
)


def pure_callback(
    callback: Callable,
    result_shape_dtypes: Any,
    *args: Any,
    vmap_method: str | None = None,
    **kwargs: Any,
) -> Any:
    """Call a pure host function on numpy arrays, from eager code, ``jit`` or ``vmap``.

    ``callback(*args, **kwargs)`` runs on numpy copies of the arguments' leaves (the same
    pytrees) and returns a pytree of arrays that must match ``result_shape_dtypes``.
    Under ``jit`` it runs at every call; being pure, it may be skipped when its result is
    unused. It has no derivative of its own: under ``grad`` or ``jvp`` it raises, unless
    the function calling it is a ``custom_jvp``/``custom_vjp`` that gives one.

    Args:
        callback: a Python function of numpy arrays.
        result_shape_dtypes: a pytree of ``ShapeDtype`` (or anything with ``shape`` and
            ``dtype``): the results' structure, shapes and dtypes for one example.
        *args: pytrees of Tensors, arrays or Python numbers.
        vmap_method: how ``vmap`` calls it: ``"sequential"`` (once per example, results
            stacked), ``"expand_dims"`` (once, with the batch in front of the mapped
            inputs and a size-1 axis in front of the others) or ``"broadcast_all"`` (once,
            every input broadcast to the batch); the function must then return the batch
            of results. None (the default) makes ``vmap`` raise, as in JAX.
        **kwargs: pytrees passed to ``callback`` by keyword.

    Returns:
        A pytree of Tensors shaped as ``result_shape_dtypes``.

    Raises:
        ShapeError, DTypeError: a result's shape or dtype differs from its declaration.
        ValueError: ``vmap_method`` is not one of the above; differentiated without a
            custom rule.
        TypeError: ``callback`` is not callable; a result pytree's structure differs.
        NotImplementedError: under ``vmap`` with ``vmap_method=None``.

    Example:
        >>> import numpy as np
        >>> f = fgrad.jit(lambda x: fgrad.pure_callback(
        ...     np.cumsum, fgrad.ShapeDtype((3,), "float64"), x * 2.0))
        >>> f(fnp.array([1.0, 2.0, 3.0]))
        Tensor([ 2.,  6., 12.], dtype=float64)

    References:
        ``jax.pure_callback``
        (https://docs.jax.dev/en/latest/_autosummary/jax.pure_callback.html).
    """
    if not callable(callback):
        raise TypeError(f"pure_callback: callback must be callable, got {type(callback).__name__}")
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"pure_callback: vmap_method must be one of {VMAP_METHODS} or None, got "
            f"{vmap_method!r}"
        )
    declared, out_tree = _tree.flatten(result_shape_dtypes)
    avals = []
    for k, d in enumerate(declared):
        if not (hasattr(d, "shape") and hasattr(d, "dtype")):
            raise TypeError(
                f"pure_callback: result_shape_dtypes leaf {k} is a {type(d).__name__}; give "
                "fgrad.ShapeDtype(shape, dtype) leaves"
            )
        avals.append(ShapeDtype(tuple(d.shape), np.dtype(d.dtype)))
    leaves, in_tree = _tree.flatten((args, kwargs))
    name = getattr(callback, "__name__", type(callback).__name__)

    def flat_callback(*host: Any) -> list:
        a, kw = _tree.unflatten(in_tree, host)
        out_leaves, got_tree = _tree.flatten(callback(*a, **kw))
        if got_tree != out_tree:
            raise TypeError(
                f"pure_callback: {name} returned a pytree of structure {got_tree}, but "
                f"result_shape_dtypes has structure {out_tree}"
            )
        return out_leaves

    outs = stage_or_bind(
        pure_callback_p,
        leaves,
        {
            "callback": Host(flat_callback, name),
            "result_avals": tuple(avals),
            "levels": (),
            "vmap_method": vmap_method,
        },
    )
    return _tree.unflatten(out_tree, list(outs))
