"""``make_graph`` and ``eval_shape``: look at what a function builds without running it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree
from fgrad.core.graph import Graph, Var
from fgrad.core.staging import STATIC_SCALARS, stage
from fgrad.tensor import ShapeDtype, Tensor
from fgrad.transforms.argnums import as_positions, check_function

__all__ = ["make_graph", "eval_shape"]



def make_graph(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., Graph]:
    """Make a function that traces ``f`` on its arguments' shapes and dtypes.

    No kernel runs: each op's shape rule gives its output's shape and dtype. Arguments
    are treated as ``jit`` treats them, so the graph is the one ``jit`` would compile:
    Python floats and complex numbers are traced, weakly typed (``float32 x * 0.5``
    stays float32); Python ints and bools are constants (shapes, axes, loop bounds), where
    JAX's ``make_jaxpr`` would trace them. Python control flow on traced values raises
    ``ConcretizationError``.

    Args:
        f: function of pytrees of Tensors.
        static_argnums: positional arguments passed to ``f`` as they are, not traced
            (shapes, flags, Python control flow), as in JAX's ``make_jaxpr``; they are not
            inputs of the graph.

    Returns:
        A function taking ``f``'s arguments (Tensors, arrays or ``ShapeDtype``) and returning
        the :class:`~fgrad.core.graph.Graph` (its ``evaluate`` takes ``f``'s positional
        arguments, or ``(args, kwargs)`` when there are keyword arguments, with None for
        the constants).

    Raises:
        ConcretizationError: ``f`` needs a concrete value (``if x > 0:`` on a traced ``x``).
        TypeError: ``static_argnums`` holds something other than ints.
        ValueError: a ``static_argnums`` position is beyond the arguments of a call.

    Example:
        >>> g = fgrad.make_graph(lambda x: fnp.sum(fnp.sin(x) * 2.0))(fnp.ones(3))
        >>> print(g)  # doctest: +ELLIPSIS
        graph(a:f64[3]) {
          b:f64[3] = sin a  # ...
          c:f64[3] = multiply b 2.0  # ...
          d:f64[] = sum c [axes=(0,) keepdims=False]  # ...
          return d
        }
    """
    check_function(f, "make_graph")

    nums = as_positions(static_argnums, "make_graph", "static_argnums", None)

    def make_graph_f(*args: Any, **kwargs: Any) -> Graph:
        fn = f
        if nums:
            bad = [n for n in nums if not -len(args) <= n < len(args)]
            if bad:
                raise ValueError(
                    f"make_graph: static_argnums {bad} out of range for a call with "
                    f"{len(args)} positional arguments"
                )
            static = {n % len(args): args[n] for n in nums}
            args = tuple(a for n, a in enumerate(args) if n not in static)

            def fn(*dyn: Any, **kw: Any) -> Any:
                it = iter(dyn)
                full = [static[n] if n in static else next(it) for n in range(len(dyn) + len(static))]
                return f(*full, **kw)

        return _trace_as_jit(fn, args, kwargs, "make_graph")

    return make_graph_f


def _trace_as_jit(f: Callable, args: tuple, kwargs: dict, name: str) -> Graph:
    """``f(*args, **kwargs)`` traced as jit traces it (:func:`fgrad.core.staging.stage`):
    Python ints and bools are constants (None in the graph's input structure, which is
    ``args``, or ``(args, kwargs)`` with keyword arguments)."""
    leaves, in_tree = tree.flatten((args, kwargs))
    a, k = tree.unflatten(in_tree, [None if type(x) in STATIC_SCALARS else x for x in leaves])

    def flat(*xs: Any) -> Any:
        a, k = tree.unflatten(in_tree, xs)
        return f(*a, **k)

    return stage(flat, leaves, tree.structure((a, k) if kwargs else a), name)


def eval_shape(f: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``f(*args, **kwargs)``, found without computing it.

    As JAX's ``eval_shape``: ``f`` is traced on its arguments' shapes and dtypes and no
    kernel runs, so it costs no FLOPs and no memory for the values (useful to size
    parameters or buffers, or to check a model's output shape).

    Args:
        f: a function of pytrees of Tensors.
        *args, **kwargs: its arguments: pytrees of Tensors, arrays or
            :class:`fgrad.ShapeDtype`; Python floats and complex numbers are traced
            (weakly typed) and ints and bools passed as constants, as under ``jit``.

    Returns:
        A pytree like ``f``'s result with a ``ShapeDtype`` for each array leaf.

    Raises:
        ConcretizationError: ``f`` needs a concrete value (``if x > 0:`` on a traced ``x``).

    Example:
        >>> def apply(w, x):
        ...     return {"logits": x @ w, "norm": fnp.sqrt(fnp.sum(w * w))}
        >>> fgrad.eval_shape(apply, fgrad.ShapeDtype((784, 10), np.float32), fnp.ones((32, 784), dtype="float32"))
        {'logits': ShapeDtype(shape=(32, 10), dtype=dtype('float32')), 'norm': ShapeDtype(shape=(), dtype=dtype('float32'))}
    """
    check_function(f, "eval_shape")
    graph = _trace_as_jit(f, args, kwargs, "eval_shape")
    return tree.unflatten(graph.out_tree, [_aval(v) for v in graph.outvars])


def _aval(v: Any) -> ShapeDtype:
    if isinstance(v, Var):
        return v.aval
    if isinstance(v, Tensor):  # a constant result (f ignored its inputs)
        return v.aval
    return ShapeDtype(tuple(np.shape(v)), np.result_type(v))
