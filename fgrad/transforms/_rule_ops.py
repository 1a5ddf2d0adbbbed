"""The ops behind ``custom_vjp``, ``custom_jvp`` and ``checkpoint``: one node carrying its rule.

A call of a function with a custom rule on traced values records one node of these ops,
whose params hold the function (and the rule) as traced sub-graphs, as the control-flow
ops hold their branches and bodies. Every interpreter then meets the same node: reverse
mode applies the rule, forward mode applies or refuses it, ``vmap`` batches the
sub-graphs and keeps the rule, ``jit`` stages the node and replays it under an outer
transform. (Intercepting the call in reverse mode only, as fgrad once did, lost the rule
under ``grad(jit(f))`` and ``grad(vmap(f))``.) Values the function closes over that are
tracers of an outer transform are inputs of the node, in front of the arguments.

* ``custom_vjp_call``: the kernel runs ``fun``; reverse mode runs ``fwd`` one level down
  instead (its residuals become extra outputs that only the VJP reads) and the VJP runs
  ``bwd``. Forward mode raises, as in JAX: the rule says nothing about tangents.
* ``custom_jvp_call``: the JVP runs the user's rule; the VJP is the rule's transpose (the
  VJP of its linear map from tangents to output tangents, at zero tangents).
* ``checkpoint``: both derivatives differentiate ``fun`` as written; the VJP recomputes
  ``fun`` from the inputs instead of reading stored intermediates.

A closed-over value that a transform differentiates has no derivative in a user's rule,
so the rule refuses it (a clear error) rather than treat it as a constant.

Reference: ``custom_vjp_call``, ``custom_jvp_call`` and ``remat`` in JAX
(``jax/_src/custom_derivatives.py``, ``jax/_src/ad_checkpoint.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad.core.op import Check, defop
from fgrad.core.trace import Tracer, active_traces
from fgrad.ops._batch import batch_size
from fgrad.core.graph import Var
from fgrad.transforms.subgraph import SubGraph, _example_graph, _match, _vmapped
from fgrad.ops.traits import ops_named
from fgrad.ops.elementwise import add, cos, full_like, multiply, optimization_barrier, sin, tanh
from fgrad.tensor import ShapeDtype
from fgrad.transforms.ad import JVPTrace, ReverseTrace
from fgrad.transforms.autodiff import jvp, vjp

__all__ = ["RULE_OPS", "checkpoint_call", "custom_jvp_call", "custom_vjp_call"]


def _inexact(x: Any) -> bool:
    return np.dtype(x.dtype).kind in "fc"


def _closure_error(kind: str, name: str, role: str = "") -> TypeError:
    if role:  # a traced nondiff_argnums argument
        return TypeError(
            f"{kind} {name}: {role} is in nondiff_argnums but is being differentiated; its "
            "rule gives no derivative for it (JAX refuses it too). Make it a differentiable "
            "argument, or wrap it in fgrad.stop_gradient where it is passed"
        )
    return TypeError(
        f"{kind} {name}: the function closes over a value that is being differentiated; "
        "its rule gives no derivative for it. Pass that value as an argument instead"
    )


def _at(sub: SubGraph, primals: Sequence[Any], pos: Sequence[int]) -> Callable:
    """``sub.call`` as a function of its inputs at ``pos``; the others fixed to ``primals``."""

    def f(*diff: Any) -> list:
        full = list(primals)
        for k, x in zip(pos, diff):
            full[k] = x
        return sub.call(full)

    return f


def _all_mapped(sub: SubGraph, dims: tuple, size: int) -> SubGraph:
    """``sub`` batched with every output mapped (so a call's outputs share one layout)."""
    return _vmapped(sub, dims, size, (True,) * len(sub.out_avals))[0]


def _check_inputs(name: str, args: Sequence[Any], sub: SubGraph) -> tuple:
    _match(name, "input", [a.aval if hasattr(a, "aval") else a for a in args], sub.in_avals)
    return sub.out_avals


def _run(xp: Any, *args: Any, fun: SubGraph, **params: Any) -> tuple:
    return tuple(fun.run(xp, args))


# ------------------------------------------------------------------------ custom_vjp_call


def _vjp_call_aval(*args, fun, fwd, bwd, n_consts, name, roles=()):
    return _check_inputs(f"custom_vjp {name}", args, fun)


def _vjp_call_forward(*args, fun, fwd, bwd, n_consts, name, roles=()):
    outs = fwd.call(list(args))
    n_out = len(fun.out_avals)
    return tuple(outs[:n_out]), tuple(outs[n_out:])


def _under_reverse() -> bool:
    """Whether a reverse-mode trace runs inside the innermost forward-mode one.

    Then forward mode is differentiating what reverse mode computes (hessian's
    forward-over-reverse, ``jvp(grad(f))``), and it differentiates ``fwd`` as written, as
    JAX does; applied to the call itself, forward mode has no rule to use.
    """
    for trace in reversed(active_traces()):
        if isinstance(trace, ReverseTrace):
            return True
        if isinstance(trace, JVPTrace):
            return False
    return False


def _vjp_call_jvp(tangents, out, *args, fun, fwd, bwd, n_consts, name, roles=()):
    if not _under_reverse():
        raise TypeError(
            f"custom_vjp {name}: forward-mode differentiation (jvp, jacfwd, linearize) of a "
            "function with a custom VJP is not defined, as in JAX; use reverse mode (grad, "
            "vjp, jacrev), or give the function a custom_jvp rule instead"
        )
    pos = [k for k, t in enumerate(tangents) if t is not None]
    t_outs = jvp(_at(fwd, args, pos), [args[k] for k in pos], [tangents[k] for k in pos])[1]
    return tuple(t_outs[: len(fun.out_avals)])


def _vjp_call_vjp(ct, out, *args, fun, fwd, bwd, n_consts, name, roles=()):
    n_out = len(fun.out_avals)
    residuals = list(out[n_out:])
    in_cts = bwd.call([*args[:n_consts], *residuals, *ct[:n_out]])
    roles = roles or ("",) * n_consts
    return tuple(_closure_error("custom_vjp", name, r) for r in roles) + tuple(in_cts)


def _vjp_call_batch(op, args, dims, *, fun, fwd, bwd, n_consts, name, roles=()):
    size = batch_size(args, dims)
    n_out, n_res = len(fun.out_avals), len(fwd.out_avals) - len(fun.out_avals)
    bwd_dims = (*dims[:n_consts], *(0,) * (n_res + n_out))
    out = op(
        *args,
        fun=_all_mapped(fun, dims, size),
        fwd=_all_mapped(fwd, dims, size),
        bwd=_all_mapped(bwd, bwd_dims, size),
        n_consts=n_consts,
        name=name,
        roles=roles,
    )
    return out, (0,) * n_out


_F3 = ShapeDtype((3,), np.dtype(np.float64))


@functools.cache
def _vjp_call_params() -> tuple[dict]:
    # The sweep's example: f(x, y) = (sin(x) y, x^2) with residuals (cos x, sin x, y, x).
    fun = _example_graph(lambda x, y: (multiply(sin(x), y), multiply(x, x)), (_F3, _F3), "f")
    fwd = _example_graph(
        lambda x, y: (multiply(sin(x), y), multiply(x, x), cos(x), sin(x), y, x),
        (_F3, _F3),
        "f_fwd",
    )
    bwd = _example_graph(
        lambda c, s, y, x, ct0, ct1: (
            add(multiply(ct0, multiply(c, y)), multiply(ct1, multiply(x, 2.0))),
            multiply(ct0, s),
        ),
        (_F3,) * 6,
        "f_bwd",
    )
    return ({"fun": fun, "fwd": fwd, "bwd": bwd, "n_consts": 0, "name": "f"},)

custom_vjp_call = defop(
    "custom_vjp_call",
    kernel=_run,
    aval=_vjp_call_aval,
    jvp=_vjp_call_jvp,
    vjp=_vjp_call_vjp,
    batch=_vjp_call_batch,
    reverse_forward=_vjp_call_forward,
    multiple_results=True,
    # Forward mode refuses by design (JAX's behaviour), so only reverse mode is checked;
    # the rule is the true derivative, so finite differences agree with it.
    check=Check(
        shapes=(((3,), (3,)),),
        params=_vjp_call_params,
        modes=("rev",),
    ),
    doc="""A call of a ``fgrad.custom_vjp`` function on traced values, as one node.

    Inputs are the values the function closes over (``n_consts`` of them) then its traced
    argument leaves. ``fun`` computes the outputs; ``fwd`` the outputs and the residuals;
    ``bwd`` maps the closed-over values, residuals and output cotangents to the
    arguments' cotangents. Users call it through ``fgrad.custom_vjp``.

    Example:
        >>> @fgrad.custom_vjp
        ... def f(x):
        ...     return fnp.sin(x)
        >>> f.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda cos_x, ct: (ct * cos_x,))
        >>> [n.op.name for n in fgrad.make_graph(f)(fnp.ones(2)).nodes]
        ['custom_vjp_call']
    """,
)


# ------------------------------------------------------------------------ custom_jvp_call


def _jvp_call_aval(*args, fun, rule, n_consts, name):
    return _check_inputs(f"custom_jvp {name}", args, fun)


def _tangent_inputs(args: Sequence[Any], n_consts: int) -> list[int]:
    """Positions of the arguments the rule takes tangents for (the inexact ones)."""
    return [k for k in range(n_consts, len(args)) if _inexact(args[k])]


def _jvp_call_jvp(tangents, out, *args, fun, rule, n_consts, name):
    if any(t is not None for t in tangents[:n_consts]):
        raise _closure_error("custom_jvp", name)
    ts = [
        full_like(args[k], fill_value=0, dtype=None) if tangents[k] is None else tangents[k]
        for k in _tangent_inputs(args, n_consts)
    ]
    return tuple(rule.call([*args, *ts])[len(fun.out_avals) :])


def _jvp_call_vjp(ct, out, *args, fun, rule, n_consts, name):
    _check_linear(rule, len(args), len(fun.out_avals), name)
    pos = _tangent_inputs(args, n_consts)
    n_out = len(fun.out_avals)
    n_args = len(args)

    def tangent_map(*ts: Any) -> list:  # linear in ts: its VJP at zero is its transpose
        return rule.call([*args, *ts])[n_out:]

    zeros = [full_like(args[k], fill_value=0, dtype=None) for k in pos]
    t_out_cts = vjp(tangent_map, *zeros)[1](list(ct))
    res: list = [_closure_error("custom_jvp", name)] * n_consts + [None] * (n_args - n_consts)
    for k, c in zip(pos, t_out_cts):
        res[k] = c
    return tuple(res)


# Which ops a JVP rule may apply to tangents, by how they are linear: in their first
# input only (the others must not depend on the tangents), in all inputs jointly (each
# depends on them or is zero), in exactly one input, or as ``where`` (a branch select).
_LINEAR_FIRST = ops_named(
    "negative", "reshape", "broadcast_to", "permute_dims", "sum", "real", "imag", "conj",
    "astype", "optimization_barrier", "getitem", "dynamic_slice", "cumsum", "flip", "roll",
    "pad", "diagonal", "diag_embed", "tril", "split", "sum_rows", "avg_pool2d",
    "avg_pool2d_transpose", "divide",
)
_LINEAR_JOINT = ops_named("add", "subtract", "concatenate", "bias_add")
_LINEAR_ONE = ops_named("multiply", "matmul", "einsum", "conv2d")
_WHERE, _FULL_LIKE, _STOP = ops_named("where"), ops_named("full_like"), ops_named("stop_gradient")


def _is_zero(x: Any) -> bool:
    data = getattr(x, "_data", x)
    return hasattr(data, "shape") and not np.any(np.asarray(data)) or (
        type(x) in (int, float, complex) and x == 0
    )


def _check_linear(rule: SubGraph, n_args: int, n_out: int, name: str) -> None:
    """Raise unless ``rule``'s tangent outputs are linear in its tangent inputs.

    Reverse mode transposes the rule, which is only its derivative when the rule is linear
    in the tangents (``t ** 2`` or ``t * x + 1`` would give a silently wrong gradient).
    Checked on the graph's structure, once per rule; JAX also refuses to transpose such a
    rule.
    """
    if rule.derived.get(("linear",)):
        return
    graph = rule.graph
    dep = {id(v) for v in graph.invars[n_args:]}  # the tangent inputs
    zero: set[int] = set()

    def dependent(v: Any) -> bool:
        return isinstance(v, Var) and id(v) in dep

    def zero_or_dependent(v: Any) -> bool:
        return dependent(v) or (id(v) in zero if isinstance(v, Var) else _is_zero(v))

    for node in graph.nodes:
        flags = [dependent(v) for v in node.inputs]
        op = node.op
        if op in _FULL_LIKE and node.params.get("fill_value") == 0:
            zero.update(id(v) for v in node.outputs)
            continue
        if not any(flags) or op in _STOP or op in _FULL_LIKE:
            zeros = [id(v) in zero if isinstance(v, Var) else _is_zero(v) for v in node.inputs]
            if (  # zero tangents of untraced arguments stay zero through linear maps
                (op in _LINEAR_ONE and any(zeros))
                or (op in _LINEAR_FIRST and zeros and zeros[0])
                or (op in _LINEAR_JOINT and zeros and all(zeros))
            ):
                zero.update(id(v) for v in node.outputs)
            continue
        ok = (
            (op in _LINEAR_FIRST and not any(flags[1:]))
            or (op in _LINEAR_JOINT and all(zero_or_dependent(v) for v in node.inputs))
            or (op in _LINEAR_ONE and sum(flags) == 1)
            or (op in _WHERE and not flags[0] and all(map(zero_or_dependent, node.inputs[1:])))
        )
        if not ok:
            raise TypeError(
                f"custom_jvp {name}: the rule's tangent output is not linear in the tangents "
                f"(it applies {op.name!r} to them as no linear map does); reverse mode "
                "transposes the rule, which then is not the derivative. Write the rule's "
                "tangent as a linear function of the tangents (t * f'(x)), as JAX requires"
            )
        dep.update(id(v) for v in node.outputs)
    for o in graph.outvars[n_out:]:
        if not zero_or_dependent(o) and not _is_zero(o) and isinstance(o, Var):
            raise TypeError(
                f"custom_jvp {name}: a tangent output does not depend on the tangents and is "
                "not zero (an affine rule such as t * x + 1 is not a derivative); write the "
                "tangent as a linear function of the tangents"
            )
    rule.derived[("linear",)] = True


def _jvp_call_batch(op, args, dims, *, fun, rule, n_consts, name):
    size = batch_size(args, dims)
    t_dims = tuple(dims[k] for k in _tangent_inputs(args, n_consts))
    out = op(
        *args,
        fun=_all_mapped(fun, dims, size),
        rule=_all_mapped(rule, (*dims, *t_dims), size),
        n_consts=n_consts,
        name=name,
    )
    return tuple(out), (0,) * len(out)


@functools.cache
def _jvp_call_params() -> tuple[dict]:
    rule = _example_graph(
        lambda x, y, tx, ty: (
            multiply(sin(x), y),
            add(multiply(tx, multiply(cos(x), y)), multiply(ty, sin(x))),
        ),
        (_F3,) * 4,
        "g_jvp",
    )
    fun = _example_graph(lambda x, y: (multiply(sin(x), y),), (_F3, _F3), "g")
    return ({"fun": fun, "rule": rule, "n_consts": 0, "name": "g"},)

custom_jvp_call = defop(
    "custom_jvp_call",
    kernel=_run,
    aval=_jvp_call_aval,
    jvp=_jvp_call_jvp,
    vjp=_jvp_call_vjp,
    batch=_jvp_call_batch,
    multiple_results=True,
    # The rule is the true derivative of sin(x) y, so finite differences agree with it.
    check=Check(
        shapes=(((3,), (3,)),),
        params=_jvp_call_params,
    ),
    doc="""A call of a ``fgrad.custom_jvp`` function on traced values, as one node.

    Inputs are the values the function closes over (``n_consts`` of them) then its traced
    argument leaves. ``fun`` computes the outputs; ``rule`` maps the inputs and the
    tangents of the inexact arguments to the outputs and their tangents. Users call it
    through ``fgrad.custom_jvp``.

    Example:
        >>> @fgrad.custom_jvp
        ... def g(x):
        ...     return fnp.sin(x)
        >>> _ = g.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * t[0]))
        >>> [n.op.name for n in fgrad.make_graph(g)(fnp.ones(2)).nodes]
        ['custom_jvp_call']
    """,
)


# ------------------------------------------------------------------------ checkpoint


def _ckpt_aval(*args, fun, name):
    return _check_inputs(f"checkpoint {name}", args, fun)


def _ckpt_forward(*args, fun, name):
    # Reverse mode keeps only the inputs, so the forward computation may as well run op by
    # op one level down: a forward-mode trace there then meets any custom_vjp inside as
    # forward-over-reverse, as it would without the checkpoint.
    return tuple(fun.call(list(args))), ()


def _ckpt_jvp(tangents, out, *args, fun, name):
    pos = [k for k, t in enumerate(tangents) if t is not None]
    return tuple(jvp(_at(fun, args, pos), [args[k] for k in pos], [tangents[k] for k in pos])[1])


def _ckpt_vjp(ct, out, *args, fun, name):
    pos = [k for k, a in enumerate(args) if _inexact(a)]
    # Under jit the recomputation must stay a recomputation: a barrier keeps CSE from
    # merging it back into the forward pass.
    fresh = [
        optimization_barrier(a) if isinstance(a, Tracer) and _inexact(a) else a for a in args
    ]
    in_cts = vjp(_at(fun, fresh, pos), *[fresh[k] for k in pos])[1](list(ct))
    res: list = [None] * len(args)
    for k, c in zip(pos, in_cts):
        res[k] = c
    return tuple(res)


def _ckpt_batch(op, args, dims, *, fun, name):
    sub, out_dims = _vmapped(fun, tuple(dims), batch_size(args, dims))
    return op(*args, fun=sub, name=name), out_dims


@functools.cache
def _ckpt_params() -> tuple[dict]:
    layer = _example_graph(lambda x, y: (multiply(tanh(x), y), sin(y)), (_F3, _F3), "layer")
    return ({"fun": layer, "name": "layer"},)


checkpoint_call = defop(
    "checkpoint",
    kernel=_run,
    aval=_ckpt_aval,
    jvp=_ckpt_jvp,
    vjp=_ckpt_vjp,
    batch=_ckpt_batch,
    reverse_forward=_ckpt_forward,
    multiple_results=True,
    check=Check(shapes=(((3,), (3,)),), params=_ckpt_params),
    doc="""A call of a ``fgrad.checkpoint`` function on traced values, as one node.

    Inputs are the values the function closes over, then its traced argument leaves;
    ``fun`` computes the outputs. Reverse mode keeps the inputs only and runs ``fun``
    again when the cotangents arrive. Users call it through ``fgrad.checkpoint``.

    Example:
        >>> layer = fgrad.checkpoint(lambda x: fnp.tanh(fnp.sin(x)))
        >>> [n.op.name for n in fgrad.make_graph(layer)(fnp.ones(2)).nodes]
        ['checkpoint']
    """,
)

# The ops whose node jit's program replaces by the function they call (passes.inline_rules).
RULE_OPS = frozenset({custom_vjp_call, custom_jvp_call, checkpoint_call})
