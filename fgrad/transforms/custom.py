"""User-defined derivative rules (``custom_vjp``, ``custom_jvp``) and ``checkpoint``.

Called on plain values, each runs the function as written. Called on traced values (under
any transform: grad, jvp, vmap, jit, make_graph), it traces the function and its rule into
sub-graphs and records one node of an op from ``fgrad.transforms._rule_ops``, so every
transform sees the rule, in any composition. Reference: the behaviour of
``jax.custom_vjp``, ``jax.custom_jvp`` and ``jax.checkpoint``.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree
from fgrad.core.trace import Tracer, active_traces, top_trace
from fgrad.errors import ShapeError
from fgrad.transforms.subgraph import Traced, close, trace_function
from fgrad.ops.elementwise import full_like
from fgrad.tensor import Tensor, _wrap
from fgrad.transforms._rule_ops import checkpoint_call, custom_jvp_call, custom_vjp_call
from fgrad.transforms.argnums import as_positions, check_function

__all__ = ["custom_vjp", "custom_jvp", "checkpoint"]


def _is_array_leaf(x: Any) -> bool:
    return isinstance(x, (Tensor, bool, int, float, complex, np.ndarray, np.generic)) or hasattr(
        x, "__array_namespace__"
    )


@functools.lru_cache(maxsize=256)
def _signature(fn: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C function: positional arguments only
        return None


def _positional(fn: Callable, name: str, args: tuple, kwargs: dict) -> tuple:
    """Every argument bound to its position, defaults included (as JAX binds them), so the
    rules see one flat argument list of the same length however the function was called."""
    sig = _signature(fn)
    if sig is None:
        if kwargs:
            raise TypeError(f"{name}: keyword arguments need a function with a signature")
        return args
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{name}: {err}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            f"{name}: keyword-only arguments {sorted(bound.kwargs)} cannot be passed to a "
            "function with custom derivative rules; make them positional parameters"
        )
    return bound.args


class _Staged:
    """Argument leaves, of which the traced ones become the inputs of a rule's node."""

    __slots__ = ("avals", "in_tree", "leaves", "pos", "tracers")

    def __init__(self, values: Any, name: str):
        self.leaves, self.in_tree = tree.flatten(values)
        for x in self.leaves:
            if not _is_array_leaf(x):
                raise TypeError(
                    f"{name}: an argument leaf of type {type(x).__qualname__} is not an array; "
                    "pass Tensors, arrays or Python numbers (non-array arguments of a custom_vjp "
                    "go in nondiff_argnums)"
                )
        self.pos = [k for k, x in enumerate(self.leaves) if isinstance(x, Tracer)]
        self.tracers = [self.leaves[k] for k in self.pos]
        self.avals = [x.aval for x in self.tracers]

    def rebuild(self, traced: Sequence[Any]) -> Any:
        """The values with the traced leaves replaced by ``traced``."""
        full = list(self.leaves)
        for k, x in zip(self.pos, traced):
            full[k] = x
        return tree.unflatten(self.in_tree, full)


def _consts(*traced: Traced) -> list[Tracer]:
    """The outer tracers any of ``traced`` closes over, each once, in order of first use."""
    seen: dict[int, Tracer] = {}
    for t in traced:
        for c in t.consts:
            seen.setdefault(id(c), c)
    return list(seen.values())


class _RuleTracing(threading.local):
    """The custom functions whose rules this thread is tracing now.

    A rule usually calls its own function (``fwd`` returns ``f(x)``; a JVP rule ``f(x)``):
    there the function runs as written, where staging it again would trace the rule again,
    without end. (JAX traces ``fwd`` only when differentiating, one level up, so there the
    inner call keeps the rule; the two differ only in a derivative of order two or more
    through ``fwd``'s own call of ``f``, where fgrad differentiates ``f`` as written.)
    """

    def __init__(self) -> None:
        self.ids: set[int] = set()


_RULES = _RuleTracing()


class _tracing_rule:
    __slots__ = ("key",)

    def __init__(self, fn: Any):
        self.key = id(fn)

    def __enter__(self) -> None:
        _RULES.ids.add(self.key)

    def __exit__(self, *exc: object) -> None:
        _RULES.ids.discard(self.key)


def _roles(consts: list, nondiff: dict) -> tuple[str, ...]:
    """What each closed-over value of a custom_vjp node is, for its refusal message: a
    traced nondiff argument, or (where there are such) possibly a value computed from one
    (bwd's ``k - 1`` is computed outside, on the traced ``k``)."""
    if not nondiff:
        return ()
    named = ", ".join(sorted(set(nondiff.values())))
    return tuple(nondiff.get(id(c), f"{named} (or a value computed from it)") for c in consts)


def _zeros(aval: Any) -> Tensor:
    return _wrap(np.zeros(tuple(aval.shape), dtype=aval.dtype))


def _check_like(what: str, values: list, like: list) -> None:
    """A user rule's cotangents/tangents must match the primals leaf by leaf, in shape and
    (for arrays; a Python number takes the primal's dtype) in dtype, as JAX requires:
    nothing is cast silently, no imaginary part dropped."""
    if len(values) != len(like):
        raise TypeError(f"{what} has {len(values)} leaves; expected {len(like)} (one per primal leaf)")
    for v, p in zip(values, like):
        got, want = tuple(getattr(v, "shape", ())), tuple(getattr(p, "shape", ()))
        if got != want:
            raise ShapeError(
                f"{what} has shape {got} where the primal has shape {want}; return one value "
                "of the primal's shape for each primal leaf"
            )
        v_dtype, p_dtype = getattr(v, "dtype", None), getattr(p, "dtype", None)
        if v_dtype is None or p_dtype is None or np.dtype(p_dtype).kind not in "fc":
            continue  # a Python number, or an integer primal (its derivative is unused)
        if np.dtype(v_dtype) != np.dtype(p_dtype):
            raise TypeError(
                f"{what} has dtype {np.dtype(v_dtype)} where the primal has dtype "
                f"{np.dtype(p_dtype)}; return values of the primal's dtype (cast with "
                f".astype({np.dtype(p_dtype).name!r}))"
            )


class custom_vjp:
    """Give a function a hand-written reverse-mode derivative.

    Decorate ``f``, then call ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``
    and ``bwd(*nondiff_args, residuals, cotangent_out) -> tuple`` with one cotangent per
    differentiable argument (``None`` for zero). ``bwd`` written with fgrad ops is itself
    differentiable, so higher-order reverse mode works. The rule holds under every
    transform and composition (``grad(jit(f))``, ``grad(vmap(f))``, inside ``lax`` loops):
    on traced values the call is one ``custom_vjp_call`` node. Forward mode (``jvp``,
    ``jacfwd``) applied to the function raises, as in JAX; forward over reverse
    (``hessian``, ``jvp(grad(f))``) differentiates ``fwd`` and ``bwd`` as written. A value
    the function closes over gets no derivative from the rule: differentiating through
    one raises (pass it as an argument).

    Args:
        fun: the function.
        nondiff_argnums: positions of arguments that are not differentiated; they are passed
            to ``bwd`` first.

    Raises:
        TypeError: the function is called before ``defvjp``, forward mode is applied to
            it, or ``bwd`` returns the wrong number of cotangents.

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
        check_function(fun, "custom_vjp")
        functools.update_wrapper(self, fun, updated=())  # not f.__dict__: a wrapped transform's state
        self.fun = fun
        self.nondiff_argnums = as_positions(
            nondiff_argnums, f"custom_vjp {self.__name__}", "nondiff_argnums", None
        )
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the forward function (returning residuals) and the backward function.

        Raises:
            TypeError: ``fwd`` or ``bwd`` is not callable.
        """
        check_function(fwd, f"custom_vjp {self.__name__}.defvjp (fwd)")
        check_function(bwd, f"custom_vjp {self.__name__}.defvjp (bwd)")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise TypeError(f"custom_vjp {self.__name__}: call defvjp(fwd, bwd) before using it")
        name = f"custom_vjp {self.__name__}"
        args = _positional(self.fun, name, args, kwargs)
        diff_pos = [i for i in range(len(args)) if i not in self.nondiff_argnums]
        staged = _Staged([args[i] for i in diff_pos], name)
        if id(self) in _RULES.ids or not active_traces():
            return self.fun(*args)
        top_trace(staged.tracers, name)  # a leaked tracer is named here, not in a rule

        def full_args(traced):
            full = list(args)
            for i, a in zip(diff_pos, staged.rebuild(traced)):
                full[i] = a
            return full

        fun = trace_function(lambda ts: self.fun(*full_args(ts)), staged.avals)
        if not staged.tracers and not fun.consts:  # nothing traced reaches it: no node
            return self.fun(*args)
        n_out = len(fun.outvars)
        res: dict = {}

        def fwd_flat(ts):
            result = self.fwd(*full_args(ts))
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"{name}: fwd must return a pair (output, residuals)")
            out_leaves, out_tree = tree.flatten(result[0])
            res["leaves"], res["tree"] = tree.flatten(result[1])
            # Residuals that are not arrays (shapes, flags) stay Python values for bwd.
            res["arrays"] = [k for k, r in enumerate(res["leaves"]) if _is_array_leaf(r)]
            if out_tree != fun.out_tree:
                raise TypeError(
                    f"{name}: fwd's output has structure {out_tree}, the function's "
                    f"{fun.out_tree}; fwd must return (the function's output, residuals)"
                )
            return out_leaves + [res["leaves"][k] for k in res["arrays"]]

        with _tracing_rule(self):
            fwd = trace_function(fwd_flat, staged.avals)
        for k in range(n_out):
            got, want = fwd.out_aval(k)[0], fun.out_aval(k)[0]
            if (got.shape, got.dtype) != (want.shape, want.dtype):
                raise TypeError(
                    f"{name}: fwd's output leaf {k} is {got} where the function gives {want}"
                )
        res_avals = [fwd.out_aval(k)[0] for k in range(n_out, len(fwd.outvars))]
        out_avals = [fun.out_aval(k)[0] for k in range(n_out)]
        nondiff_vals = [args[i] for i in self.nondiff_argnums]

        def bwd_flat(vals):
            leaves = list(res["leaves"])
            for k, v in zip(res["arrays"], vals[: len(res_avals)]):
                leaves[k] = v
            ct = tree.unflatten(fun.out_tree, vals[len(res_avals) :])
            in_cts = self.bwd(*nondiff_vals, tree.unflatten(res["tree"], leaves), ct)
            if not isinstance(in_cts, (tuple, list)) or len(in_cts) != len(diff_pos):
                raise TypeError(
                    f"{name}: bwd must return a tuple of {len(diff_pos)} cotangents (one per "
                    f"differentiable argument), got {in_cts!r:.80}"
                )
            flat = []
            for i, c in zip(diff_pos, in_cts):
                arg_leaves = tree.leaves(args[i])
                if c is None:
                    flat.extend([None] * len(arg_leaves))
                    continue
                ct_leaves = tree.leaves(c)
                _check_like(f"{name}: bwd's cotangent for argument {i}", ct_leaves, arg_leaves)
                flat.extend(ct_leaves)
            return [
                _zeros(aval) if flat[k] is None else flat[k]
                for k, aval in zip(staged.pos, staged.avals)
            ]

        with _tracing_rule(self):
            bwd = trace_function(bwd_flat, [*res_avals, *out_avals])
        consts = _consts(fun, fwd, bwd)
        # A traced nondiff argument reaches the node as a closed-over value; say which.
        nondiff = {
            id(leaf): f"argument {i}"
            for i in self.nondiff_argnums
            for leaf in tree.leaves(args[i])
            if isinstance(leaf, Tracer)
        }
        outs = custom_vjp_call(
            *consts,
            *staged.tracers,
            fun=close(fun, consts, self.__name__),
            fwd=close(fwd, consts, f"{self.__name__}_fwd"),
            bwd=close(bwd, consts, f"{self.__name__}_bwd"),
            n_consts=len(consts),
            name=self.__name__,
            roles=_roles(consts, nondiff),
        )
        return tree.unflatten(fun.out_tree, list(outs))


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
        check_function(fun, "custom_jvp")
        functools.update_wrapper(self, fun, updated=())  # not f.__dict__: a wrapped transform's state
        self.fun = fun
        self.rule: Callable | None = None

    def defjvp(self, rule: Callable) -> Callable:
        """Set the JVP rule; returns it, so it can be used as a decorator.

        Raises:
            TypeError: ``rule`` is not callable.
        """
        check_function(rule, f"custom_jvp {self.__name__}.defjvp")
        self.rule = rule
        return rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.rule is None:
            raise TypeError(f"custom_jvp {self.__name__}: call defjvp(rule) before using it")
        name = f"custom_jvp {self.__name__}"
        args = _positional(self.fun, name, args, kwargs)
        staged = _Staged(list(args), name)
        if id(self) in _RULES.ids or not active_traces():
            return self.fun(*args)
        top_trace(staged.tracers, name)
        fun = trace_function(lambda ts: self.fun(*staged.rebuild(ts)), staged.avals)
        if not staged.tracers and not fun.consts:  # nothing traced reaches it: no node
            return self.fun(*args)
        n_out, n_in = len(fun.outvars), len(staged.tracers)
        t_pos = [j for j, a in enumerate(staged.avals) if np.dtype(a.dtype).kind in "fc"]

        def rule_flat(vals):
            xs = vals[:n_in]
            tangents = dict(zip(t_pos, vals[n_in:]))
            # Leaves that are not traced, and traced integer leaves, have zero tangents.
            t_leaves = [
                full_like(x, fill_value=0, dtype=None) if not isinstance(x, Tracer) else None
                for x in staged.leaves
            ]
            for j, x in enumerate(xs):
                t = tangents.get(j)
                t_leaves[staged.pos[j]] = full_like(x, fill_value=0, dtype=None) if t is None else t
            result = self.rule(
                tuple(staged.rebuild(xs)), tuple(tree.unflatten(staged.in_tree, t_leaves))
            )
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(
                    f"{name}: the rule must return a pair (primal output, tangent output), "
                    f"got {type(result).__name__}"
                )
            out, t_out = result
            out_leaves = tree.leaves(out)
            if len(out_leaves) != n_out:
                raise TypeError(
                    f"{name}: the rule's primal output has {len(out_leaves)} leaves where the "
                    f"function returns {n_out}; return (the function's output, its tangent)"
                )
            t_out_leaves = tree.leaves(t_out)
            _check_like(f"{name}: the rule's tangent output", t_out_leaves, out_leaves)
            return out_leaves + t_out_leaves

        with _tracing_rule(self):
            rule = trace_function(rule_flat, [*staged.avals, *[staged.avals[j] for j in t_pos]])
        consts = _consts(fun, rule)
        outs = custom_jvp_call(
            *consts,
            *staged.tracers,
            fun=close(fun, consts, self.__name__),
            rule=close(rule, consts, f"{self.__name__}_jvp"),
            n_consts=len(consts),
            name=self.__name__,
        )
        return tree.unflatten(fun.out_tree, list(outs))


def checkpoint(f: Callable) -> Callable:
    """Rematerialise ``f`` in reverse mode: keep only its inputs, recompute inside on the way back.

    Under ``grad``/``vjp`` the intermediates of ``f`` are not stored for the backward pass;
    ``f`` runs again when its cotangents are needed. Saves memory on deep chains at the cost
    of one more forward pass of ``f``. On traced values the call is one ``checkpoint``
    node, so this holds under ``jit``, ``vmap`` and in loops too; forward mode
    differentiates ``f`` as written.

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
    check_function(f, "checkpoint")

    name = getattr(f, "__name__", "f")

    @functools.wraps(f)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree = tree.flatten((args, kwargs))
        # Traced arrays are inputs of the node; other leaves (strings, flags, None, plain
        # arrays) are fixed in the traced function as given.
        pos = [i for i, x in enumerate(leaves) if isinstance(x, Tracer)]
        if not active_traces():
            return f(*args, **kwargs)
        tracers = [leaves[i] for i in pos]
        top_trace(tracers, f"checkpoint {name}")

        def call(xs):
            full = list(leaves)
            for i, x in zip(pos, xs):
                full[i] = x
            a, k = tree.unflatten(in_tree, full)
            return f(*a, **k)

        fun = trace_function(call, [x.aval for x in tracers])
        if not pos and not fun.consts:  # nothing traced reaches it: no node
            return f(*args, **kwargs)
        consts = _consts(fun)
        outs = checkpoint_call(*consts, *tracers, fun=close(fun, consts, name), name=name)
        return tree.unflatten(fun.out_tree, list(outs))

    return checkpointed
