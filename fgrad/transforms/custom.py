"""User-defined derivative rules (``custom_vjp``, ``custom_jvp``) and ``checkpoint``.

All three work by recording, in the running reverse-mode trace, a single node for the
whole function whose VJP rule is supplied by the user (custom_vjp), derived from the
user's JVP rule by transposition (custom_jvp), or recomputed from the inputs
(checkpoint). Reference: the behaviour of ``jax.custom_vjp``, ``jax.custom_jvp`` and
``jax.checkpoint``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree
from fgrad.core.trace import Tracer, top_trace
from fgrad.errors import ShapeError
from fgrad.ops.elementwise import full_like, optimization_barrier
from fgrad.tensor import Tensor
from fgrad.transforms.ad import (
    JVPTrace,
    JVPTracer,
    ReverseTrace,
    ReverseTracer,
    _fit_tangent,
    _is_inexact,
    _Node,
    vjp,
)

__all__ = ["custom_vjp", "custom_jvp", "checkpoint"]


class _FnOp:
    """Stands in for an op in a reverse-mode node that covers a whole function."""

    __slots__ = ("name", "vjp")
    multiple_results = True
    nondiff = False

    def __init__(self, name: str, vjp_rule: Callable):
        self.name = name
        self.vjp = vjp_rule


def _record(trace, name, leaves, out_leaves, leaf_cts_fn):
    """Wrap ``out_leaves`` as tracers of one node whose VJP is ``leaf_cts_fn(cts)``."""
    parents = tuple(
        (i, leaf.node, leaf.index)
        for i, leaf in enumerate(leaves)
        if type(leaf) is ReverseTracer and leaf._trace is trace
    )
    if not parents:
        return list(out_leaves)
    lowered = [_lower(x, trace) for x in leaves]
    op = _FnOp(name, lambda cts, outs, *primals: leaf_cts_fn(list(cts)))
    node = _Node(op, lowered, {}, tuple(out_leaves), parents)
    return [
        ReverseTracer(trace, o, node, k) if _is_inexact(o) else o for k, o in enumerate(out_leaves)
    ]


def _is_array_leaf(x: Any) -> bool:
    return isinstance(x, (Tensor, bool, int, float, complex, np.ndarray, np.generic)) or hasattr(
        x, "__array_namespace__"
    )


def _positional(fn: Callable, name: str, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments bound to their positions, so rules see one flat argument list."""
    if not kwargs:
        return args
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{name}: {err}") from None
    if bound.kwargs:
        raise TypeError(
            f"{name}: keyword-only arguments {sorted(bound.kwargs)} cannot be passed to a "
            "function with custom derivative rules; make them positional parameters"
        )
    return bound.args


def _lower(x: Any, trace: Any) -> Any:
    return x.primal if type(x) in (ReverseTracer, JVPTracer) and x._trace is trace else x


def _check_like(what: str, values: list, like: list) -> None:
    """A user rule's cotangents/tangents must match the primals leaf by leaf, in shape."""
    if len(values) != len(like):
        raise TypeError(f"{what} has {len(values)} leaves; expected {len(like)} (one per primal leaf)")
    for v, p in zip(values, like):
        got, want = tuple(getattr(v, "shape", ())), tuple(getattr(p, "shape", ()))
        if got != want:
            raise ShapeError(
                f"{what} has shape {got} where the primal has shape {want}; return one value "
                "of the primal's shape for each primal leaf"
            )


class custom_vjp:
    """Give a function a hand-written reverse-mode derivative.

    Decorate ``f``, then call ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``
    and ``bwd(*nondiff_args, residuals, cotangent_out) -> tuple`` with one cotangent per
    differentiable argument (``None`` for zero). ``bwd`` written with fgrad ops is itself
    differentiable, so higher-order reverse mode works. Under forward mode (``jvp``) and
    ``make_graph`` the function is differentiated or traced as written.

    Args:
        fun: the function.
        nondiff_argnums: positions of arguments that are not differentiated; they are passed
            to ``bwd`` first.

    Raises:
        TypeError: the function is called before ``defvjp``, or ``bwd`` returns the wrong
            number of cotangents.

    Example:
        >>> @fgrad.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> def fwd(x):
        ...     return x, None
        >>> def bwd(res, ct):
        ...     return (fnp.clip(ct, -1.0, 1.0),)
        >>> clip_gradient.defvjp(fwd, bwd)
        >>> fgrad.grad(lambda x: 5.0 * clip_gradient(x))(2.0)
        Tensor(1., dtype=float64)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the forward function (returning residuals) and the backward function."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise TypeError(f"custom_vjp {self.__name__}: call defvjp(fwd, bwd) before using it")
        args = _positional(self.fun, f"custom_vjp {self.__name__}", args, kwargs)
        diff_pos = [i for i in range(len(args)) if i not in self.nondiff_argnums]
        leaves, in_tree = tree.flatten([args[i] for i in diff_pos])
        trace = top_trace(leaves, f"custom_vjp {self.__name__}")
        if not isinstance(trace, ReverseTrace):
            return self.fun(*args)
        lowered = [_lower(x, trace) for x in leaves]
        full = list(args)
        for i, a in zip(diff_pos, tree.unflatten(in_tree, lowered)):
            full[i] = a
        out, residuals = self.fwd(*full)
        out_leaves, out_tree = tree.flatten(out)
        nondiff_vals = [args[i] for i in self.nondiff_argnums]

        def leaf_cts(cts):
            in_cts = self.bwd(*nondiff_vals, residuals, tree.unflatten(out_tree, cts))
            if not isinstance(in_cts, (tuple, list)) or len(in_cts) != len(diff_pos):
                raise TypeError(
                    f"custom_vjp {self.__name__}: bwd must return a tuple of {len(diff_pos)} "
                    f"cotangents (one per differentiable argument), got {in_cts!r:.80}"
                )
            flat = []
            for i, ct in zip(diff_pos, in_cts):
                arg_leaves = tree.leaves(args[i])
                if ct is None:
                    flat.extend([None] * len(arg_leaves))
                    continue
                ct_leaves = tree.leaves(ct)
                _check_like(f"custom_vjp {self.__name__}: bwd's cotangent for argument {i}", ct_leaves, arg_leaves)
                flat.extend(ct_leaves)
            return flat

        wrapped = _record(trace, self.__name__, leaves, out_leaves, leaf_cts)
        return tree.unflatten(out_tree, wrapped)


class custom_jvp:
    """Give a function a hand-written forward-mode derivative.

    Decorate ``f``, then call ``f.defjvp(rule)`` with ``rule(primals, tangents) ->
    (primal_out, tangent_out)``, linear in ``tangents``. Reverse mode transposes the rule
    (as JAX does), so one rule serves ``jvp``, ``grad`` and their compositions.

    Args:
        fun: the function.

    Raises:
        TypeError: the function is called before ``defjvp``.

    Example:
        >>> @fgrad.custom_jvp
        ... def safe_log1pexp(x):
        ...     return fnp.log(1.0 + fnp.exp(x))
        >>> @safe_log1pexp.defjvp
        ... def _(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return safe_log1pexp(x), t / (1.0 + fnp.exp(-x))
        >>> fgrad.grad(safe_log1pexp)(100.0)
        Tensor(1., dtype=float64)
    """

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.rule: Callable | None = None

    def defjvp(self, rule: Callable) -> Callable:
        """Set the JVP rule; returns it, so it can be used as a decorator."""
        self.rule = rule
        return rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.rule is None:
            raise TypeError(f"custom_jvp {self.__name__}: call defjvp(rule) before using it")
        args = _positional(self.fun, f"custom_jvp {self.__name__}", args, kwargs)
        leaves, in_tree = tree.flatten(args)
        trace = top_trace(leaves, f"custom_jvp {self.__name__}")
        if isinstance(trace, JVPTrace):
            return self._jvp(trace, leaves, in_tree)
        if isinstance(trace, ReverseTrace):
            return self._vjp(trace, leaves, in_tree)
        return self.fun(*args)

    def _jvp(self, trace, leaves, in_tree):
        primals = [_lower(x, trace) for x in leaves]
        tangents = [
            x.tangent if type(x) is JVPTracer and x._trace is trace else full_like(p, fill_value=0, dtype=None)
            for x, p in zip(leaves, primals)
        ]
        out, t_out = self.rule(
            tuple(tree.unflatten(in_tree, primals)), tuple(tree.unflatten(in_tree, tangents))
        )
        out_leaves, out_tree = tree.flatten(out)
        t_leaves = tree.leaves(t_out)
        _check_like(f"custom_jvp {self.__name__}: the rule's tangent output", t_leaves, out_leaves)
        wrapped = [
            JVPTracer(trace, o, _fit_tangent(t, o)) if _is_inexact(o) else o
            for o, t in zip(out_leaves, t_leaves)
        ]
        return tree.unflatten(out_tree, wrapped)

    def _vjp(self, trace, leaves, in_tree):
        primals = [_lower(x, trace) for x in leaves]
        primal_args = tuple(tree.unflatten(in_tree, primals))
        out_leaves, out_tree = tree.flatten(self.fun(*primal_args))

        def leaf_cts(cts):
            # The rule is linear in the tangents, so the VJP of t -> rule(primals, t) at
            # t = 0 is its transpose: the reverse-mode derivative.
            def linear(*ts):
                return tree.leaves(self.rule(primal_args, tuple(tree.unflatten(in_tree, ts)))[1])

            zeros = [full_like(p, fill_value=0, dtype=None) for p in primals]
            return list(vjp(linear, *zeros)[1](cts))

        return tree.unflatten(out_tree, _record(trace, self.__name__, leaves, out_leaves, leaf_cts))


def checkpoint(f: Callable) -> Callable:
    """Rematerialise ``f`` in reverse mode: keep only its inputs, recompute inside on the way back.

    Under ``grad``/``vjp`` the intermediates of ``f`` are not stored for the backward pass;
    ``f`` runs again when its cotangents are needed. Saves memory on deep chains at the cost
    of one more forward pass of ``f``. Elsewhere ``f`` runs as written.

    Args:
        f: a pure function of pytrees of Tensors.

    Returns:
        A function with ``f``'s signature and results.

    Example:
        >>> layer = fgrad.checkpoint(lambda x: fnp.tanh(fnp.sin(x)))
        >>> fgrad.grad(lambda x: fnp.sum(layer(layer(x))))(fnp.array([0.5]))
        Tensor([0.52973197], dtype=float64)

    References:
        Griewank and Walther, "Algorithm 799: revolve", ACM TOMS 2000; Chen et al.,
        "Training deep nets with sublinear memory cost", 2016, arXiv:1604.06174.
    """

    @functools.wraps(f)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree = tree.flatten((args, kwargs))
        # Arrays are differentiated; other leaves (strings, flags, None) ride along as given.
        pos = [i for i, x in enumerate(leaves) if _is_array_leaf(x)]
        arrays = [leaves[i] for i in pos]
        trace = top_trace(arrays, f"checkpoint {getattr(f, '__name__', 'f')}")
        if not isinstance(trace, ReverseTrace):
            return f(*args, **kwargs)

        def call(xs):
            full = list(leaves)
            for i, x in zip(pos, xs):
                full[i] = x
            a, k = tree.unflatten(in_tree, full)
            return f(*a, **k)

        primals = [_lower(x, trace) for x in arrays]
        out_leaves, out_tree = tree.flatten(call(primals))

        def leaf_cts(cts):
            # Under jit the recomputation must stay a recomputation: a barrier keeps CSE
            # from merging it back into the forward pass.
            fresh = [
                optimization_barrier(p) if isinstance(p, Tracer) and _is_inexact(p) else p
                for p in primals
            ]
            return list(vjp(lambda *xs: tree.leaves(call(xs)), *fresh)[1](cts))

        name = f"checkpoint({getattr(f, '__name__', 'f')})"
        return tree.unflatten(out_tree, _record(trace, name, arrays, out_leaves, leaf_cts))

    return checkpointed
