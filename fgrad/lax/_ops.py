"""The control-flow ops: ``cond`` (also ``switch``), ``while_loop`` and ``scan`` as single nodes.

When ``jit`` or ``make_graph`` traces a branch or loop whose predicate or trip count is
not known yet, ``fgrad.lax`` records one node of these ops. Its static params hold the
branches or the loop body as traced sub-graphs (:class:`SubGraph`); the kernel runs the
chosen sub-graph, kernel by kernel, on the arrays. Values a branch or body closes over
that are tracers of an outer transform are explicit inputs of the node (never constants
of the sub-graph), so every transform sees them.

The derivative rules are written with the same ops, so they compose (``grad(grad)``,
``jit(grad)``): the JVP of ``cond`` is a ``cond`` of the branches' JVPs and its VJP a
``cond`` of their VJPs, selected by the same index; the JVP of a loop is a loop that
carries tangents beside the carry; the VJP of ``scan`` is a forward ``scan`` that stacks
the carry of every step followed by a reverse ``scan`` that applies the body's VJP step by
step (the body's intermediates are recomputed there, not stored). ``while_loop`` is
forward-differentiable only, as in JAX: its trip count is known only at run time, so
reverse mode has nothing to walk back along.

Under ``vmap`` each op runs once for the whole batch (JAX's batching of control flow): a
``cond`` with a mapped predicate runs every branch and selects per example, with a shared
one the batched branches; a loop runs its batched body, and a ``while_loop`` whose
predicate is mapped runs until every example is done, finished examples keeping their carry.

Reference: the semantics of ``jax.lax.cond``, ``switch``, ``while_loop`` and ``scan``
(https://docs.jax.dev/en/latest/jax.lax.html#control-flow-operators).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from fgrad._config import config
from fgrad.core.op import REGISTRY, Check, defop
from fgrad.errors import ShapeError
from fgrad.ops._batch import batch_size, with_batch
from fgrad.ops._rules import PerInput
from fgrad.ops.elementwise import (
    add,
    cos,
    equal,
    exp,
    full_like,
    greater_equal,
    less,
    multiply,
    sin,
    subtract,
    where,
)
from fgrad.core.graph import Graph, Node
from fgrad.tensor import ShapeDtype
from fgrad.transforms import passes
from fgrad.transforms.cpu_compile import compile_scan, compile_while
from fgrad.transforms.subgraph import (
    _example_graph,
    SubGraph,
    _aval,
    _batch_eval,
    _batched_avals,
    _check_arrays,
    _chunks,
    _derive,
    _graph_of,
    _inexact,
    _jvp_call,
    _mapped_carry,
    _match,
    _per_example,
    _split,
    _swap01,
    _vjp_call,
    _vmapped,
    _xp_dtype,
)

__all__ = ["cond", "scan", "while_loop"]


def _quiet(sub: SubGraph) -> SubGraph:
    """``sub`` without its host callbacks (``debug.print``), for the graphs derivative
    rules derive from it: the op itself has run the forward pass, printing once (as JAX
    does); the rules' recomputation of the forward (a VJP's, a JVP's primal) must not
    print again. Memoised on ``sub``."""
    if not any(passes.has_effects(n) for n in sub.graph.nodes):
        return sub
    hit = sub.derived.get(("quiet",))
    if hit is None:
        g = sub.graph
        nodes = [
            Node(n.op, n.inputs, _quiet_params(n.params), n.outputs, n.source)
            for n in g.nodes
            if not n.op.effectful
        ]
        names = [(v, v.name) for v in (*g.invars, *(v for n in g.nodes for v in n.outputs))]
        quiet = passes.dce(Graph(g.invars, nodes, g.outvars, g.in_tree, g.out_tree))
        for v, name in names:  # Graph() renames Vars; the original keeps its names
            v.name = name
        hit = sub.derived[("quiet",)] = SubGraph(quiet, f"quiet({sub.name})")
    return hit


def _quiet_params(params: dict) -> dict:
    def q(v: Any) -> Any:
        if isinstance(v, SubGraph):
            return _quiet(v)
        if type(v) is tuple and any(isinstance(b, SubGraph) for b in v):
            return tuple(_quiet(b) if isinstance(b, SubGraph) else b for b in v)
        return v

    return {k: q(v) for k, v in params.items()}


def _cond_batch(op, args, dims, *, branches):
    """``cond`` under vmap. A shared index runs one ``cond`` of the batched branches; a
    mapped index runs every branch on every example and selects per example (``where``),
    as JAX does (so both branches' costs are paid)."""
    size = batch_size(args, dims)
    index, *operands = args
    in_dims = tuple(dims[1:])
    if dims[0] is None:
        per_branch = [_vmapped(b, in_dims, size)[1] for b in branches]
        force = tuple(any(d is not None for d in ds) for ds in zip(*per_branch))
        subs = tuple(_vmapped(b, in_dims, size, force)[0] for b in branches)
        out = cond(index, *operands, branches=subs)
        return out, tuple(0 if f else None for f in force)
    results = [_batch_eval(b.graph, operands, in_dims) for b in branches]
    n = len(branches)
    boolean = np.dtype(index.dtype) == np.bool_
    outs = []
    for j, aval in enumerate(branches[0].out_avals):
        rank = len(aval.shape)
        out = results[0][j][0]
        for k in range(1, 2 if boolean else n):
            # the clamped index: k for k < n - 1, and the last branch for index >= n - 1
            mask = index if boolean else (equal if k < n - 1 else greater_equal)(index, k)
            out = where(_per_example(mask, rank), results[k][j][0], out)
        outs.append(out)
    return tuple(outs), (0,) * len(outs)


# ------------------------------------------------------------------------ cond / switch


def _branch_index(index: Any, n: int) -> int:
    try:
        k = int(index)
    except TypeError:  # a boolean array in a strict namespace
        k = int(bool(index))
    return min(max(k, 0), n - 1)


def _cond_kernel(xp, index, *operands, branches):
    _check_arrays("cond", (index, *operands))
    return tuple(branches[_branch_index(index, len(branches))].run(xp, operands))


def _cond_aval(index, *operands, branches):
    index = _aval(index)
    if index.shape != () or np.dtype(index.dtype).kind not in "biu":
        raise TypeError(
            f"cond: the branch index (or predicate) must be a scalar integer or bool, got "
            f"{index}; reduce a predicate array with fnp.any / fnp.all"
        )
    _match("cond", "operand", operands, branches[0].in_avals)
    return branches[0].out_avals


def _cond_jvp(i: int) -> Callable | None:
    if i == 0:
        return None  # the index: piecewise constant
    j = i - 1

    def rule(t, out, index, *operands, branches):
        branches = tuple(_quiet(b) for b in branches)
        out_avals = branches[0].out_avals
        diff_out = [k for k, a in enumerate(out_avals) if _inexact(a)]

        def make(b):
            def fun(leaves):
                tangents = [None] * len(operands)
                tangents[j] = leaves[-1]
                _, t_outs = _jvp_call(b, leaves[:-1], tangents)
                return [t_outs[k] for k in diff_out]

            return _derive(b, ("jvp", j), (*b.in_avals, b.in_avals[j]), fun)

        t_outs = cond(index, *operands, t, branches=tuple(make(b) for b in branches))
        res: list = [None] * len(out_avals)
        for k, tk in zip(diff_out, t_outs):
            res[k] = tk
        return tuple(res)

    return rule


def _cond_vjp(cts, out, index, *operands, branches):
    branches = tuple(_quiet(b) for b in branches)
    b0 = branches[0]
    diff_in = [k for k, a in enumerate(b0.in_avals) if _inexact(a)]
    diff_out = [k for k, a in enumerate(b0.out_avals) if _inexact(a)]
    if not diff_in or not diff_out:
        return (None,) * (1 + len(operands))
    n = len(operands)

    def make(b):
        def fun(leaves):
            out_cts = [None] * len(b.out_avals)
            for k, c in zip(diff_out, leaves[n:]):
                out_cts[k] = c
            return _vjp_call(b, leaves[:n], diff_in, out_cts)

        return _derive(b, ("vjp",), (*b.in_avals, *[b.out_avals[k] for k in diff_out]), fun)

    in_cts = cond(
        index, *operands, *[cts[k] for k in diff_out], branches=tuple(make(b) for b in branches)
    )
    res: list = [None] * (1 + n)
    for k, c in zip(diff_in, in_cts):
        res[1 + k] = c
    return tuple(res)


_F3 = ShapeDtype((3,), np.dtype(np.float64))
_I3 = ShapeDtype((3,), np.dtype(np.int64))
_I0 = ShapeDtype((), np.dtype(np.int64))
# Two branches of two outputs each: smooth, so the sweep checks derivatives at order 2.
@functools.cache
def _branches() -> tuple[SubGraph, SubGraph]:
    return (
        _example_graph(lambda x, y: (multiply(sin(x), y), multiply(x, x)), (_F3, _F3), "a"),
        _example_graph(lambda x, y: (subtract(x, multiply(y, y)), cos(y)), (_F3, _F3), "b"),
    )


def _cond_args(rng, shapes):
    return [np.asarray(1, np.int64), rng.uniform(-2, 2, shapes[1]), rng.uniform(-2, 2, shapes[2])]


cond = defop(
    "cond",
    kernel=_cond_kernel,
    aval=_cond_aval,
    batch=_cond_batch,
    jvp=PerInput(_cond_jvp),
    vjp=_cond_vjp,
    multiple_results=True,
    # Index 1 runs the second branch; the two params cases swap the branches, so both are
    # checked. The branches are fixed graphs on f64[3] inputs (params cannot be sampled).
    check=Check(
        shapes=(((), (3,), (3,)),),
        make_args=_cond_args,
        params=lambda: ({"branches": _branches()}, {"branches": _branches()[::-1]}),
    ),
    doc="""Run one of several traced branches on the operands: the node ``fgrad.lax.cond``
    and ``fgrad.lax.switch`` record under ``jit``.

    Args:
        index: scalar integer or bool Tensor; clamped to ``[0, len(branches) - 1]``
            (``cond`` passes its predicate: False runs ``branches[0]``, True ``branches[1]``).
        *operands: Tensors, the flattened operands, after the branches' closed-over values.
        branches: tuple of :class:`SubGraph`, each taking every operand and returning
            outputs of the same avals.

    Returns:
        A tuple of Tensors: the chosen branch's outputs.

    Raises:
        TypeError: ``index`` is not a scalar integer or bool.
        ShapeError, DTypeError: an operand's aval differs from the branches' inputs.

    Example:
        >>> f = fgrad.jit(lambda p, x: fgrad.lax.cond(p, fnp.sin, fnp.cos, x))
        >>> f(fnp.array(False), fnp.array(0.0))
        Tensor(1., dtype=float64)
        >>> [node.op.name for node in f.graph(fnp.array(False), fnp.array(0.0)).nodes]
        ['cond']

    References:
        ``jax.lax.switch`` (https://docs.jax.dev/en/latest/_autosummary/jax.lax.switch.html).
    """,
)


# ------------------------------------------------------------------------ while_loop


def _truth(x: Any) -> bool:
    return bool(x)


def _while_kernel(xp, *args, cond, body, n_cond_consts, n_body_consts):
    _check_arrays("while_loop", args)
    if xp is np and config.cpu_compile and not config.debug_nans:
        compiled = compile_while(cond, body, n_cond_consts, n_body_consts)
        outs = compiled(list(args)) if compiled is not None else None
        if outs is not None:
            return outs
    cond_consts, body_consts, carry = _split(args, n_cond_consts, n_body_consts)
    while _truth(cond.run(xp, cond_consts + carry)[0]):
        carry = body.run(xp, body_consts + carry)
    return tuple(carry)


def _while_aval(*args, cond, body, n_cond_consts, n_body_consts):
    cond_consts, body_consts, carry = _split(args, n_cond_consts, n_body_consts)
    _match("while_loop", "cond_fun input", cond_consts + carry, cond.in_avals)
    _match("while_loop", "body_fun input", body_consts + carry, body.in_avals)
    return body.out_avals


def _while_jvp(i: int) -> Callable:
    def rule(t, out, *args, cond, body, n_cond_consts, n_body_consts):
        cond, body = _quiet(cond), _quiet(body)
        n_carry = len(out)
        if i < n_cond_consts:  # the predicate's inputs change only the trip count
            return (None,) * n_carry
        cond_consts, body_consts, init = _split(args, n_cond_consts, n_body_consts)
        n_bc = n_body_consts
        carry_avals = body.out_avals
        diff = [k for k, a in enumerate(carry_avals) if _inexact(a)]
        const_pos = i - n_cond_consts if i < n_cond_consts + n_bc else None
        n_extra = 1 if const_pos is not None else 0

        def body_fun(leaves):
            consts = leaves[:n_bc]
            extra = leaves[n_bc : n_bc + n_extra]
            carry = leaves[n_bc + n_extra : n_bc + n_extra + n_carry]
            t_carry = leaves[n_bc + n_extra + n_carry :]
            tangents: list = [None] * (n_bc + n_carry)
            if extra:
                tangents[const_pos] = extra[0]
            for k, tk in zip(diff, t_carry):
                tangents[n_bc + k] = tk
            outs, t_outs = _jvp_call(body, consts + carry, tangents)
            return outs + [t_outs[k] for k in diff]

        b_avals = body.in_avals
        extra_avals = (b_avals[const_pos],) if n_extra else ()
        t_avals = tuple(carry_avals[k] for k in diff)
        new_body = _derive(
            body,
            ("jvp", const_pos),
            (*b_avals[:n_bc], *extra_avals, *b_avals[n_bc:], *t_avals),
            body_fun,
        )
        n_cc = n_cond_consts
        new_cond = _derive(
            cond,
            ("pad", t_avals),
            (*cond.in_avals, *t_avals),
            lambda leaves: cond.call(leaves[: n_cc + n_carry]),
        )
        init_pos = i - n_cond_consts - n_bc
        t_init = [
            t if k == init_pos else full_like(init[k], fill_value=0, dtype=None) for k in diff
        ]
        extra = [t] if const_pos is not None else []
        res = while_loop(
            *cond_consts,
            *body_consts,
            *extra,
            *init,
            *t_init,
            cond=new_cond,
            body=new_body,
            n_cond_consts=n_cc,
            n_body_consts=n_bc + len(extra),
        )
        tangents_out: list = [None] * n_carry
        for k, tk in zip(diff, res[n_carry:]):
            tangents_out[k] = tk
        return tuple(tangents_out)

    return rule


def _while_vjp(cts, out, *args, **params):
    raise ValueError(
        "Reverse-mode differentiation does not work for fgrad.lax.while_loop: its trip count "
        "is known only at run time, so there is nothing to walk back along. Use "
        "fgrad.lax.fori_loop with concrete (Python int) bounds or fgrad.lax.scan, which "
        "are reverse-differentiable, or forward mode (fgrad.jvp, fgrad.jacfwd)"
    )


def _while_batch(op, args, dims, *, cond, body, n_cond_consts, n_body_consts):
    """``while_loop`` under vmap. A shared predicate loops the batched body. A mapped one
    loops while any example's predicate holds; an example whose predicate is False keeps
    its carry (``where``), so each ends with the carry of its own last iteration."""
    size = batch_size(args, dims)
    cc, bc, carry = _split(args, n_cond_consts, n_body_consts)
    ccd, bcd, cd = (tuple(d) for d in _split(dims, n_cond_consts, n_body_consts))
    mapped = _mapped_carry(body, bcd, [d is not None for d in cd], (), size)
    carry_dims = tuple(0 if b else None for b in mapped)
    new_cond, (pred_dim,) = _vmapped(cond, ccd + carry_dims, size)
    if pred_dim is None:
        new_body, _ = _vmapped(body, bcd + carry_dims, size, tuple(mapped))
        init = [with_batch(c, d, size) if b else c for c, d, b in zip(carry, cd, mapped)]
        out = while_loop(
            *cc,
            *bc,
            *init,
            cond=new_cond,
            body=new_body,
            n_cond_consts=n_cond_consts,
            n_body_consts=n_body_consts,
        )
        return out, carry_dims
    n_carry = len(carry)
    all_dims = (0,) * n_carry
    key = ("vmap-while", cond, ccd, bcd, size)
    graphs = body.derived.get(key)
    if graphs is None:
        avals = _batched_avals(body.out_avals, all_dims, size)
        cc_avals = _batched_avals(cond.in_avals[:n_cond_consts], ccd, size)
        bc_avals = _batched_avals(body.in_avals[:n_body_consts], bcd, size)

        def any_running(leaves: list) -> list:
            pred = _batch_eval(cond.graph, leaves, ccd + all_dims)[0][0]
            return [REGISTRY["any"](pred, axes=(0,), keepdims=False)]

        def step(leaves: list) -> list:
            c, b, old = _chunks(leaves, n_cond_consts, n_body_consts, n_carry)
            pred = _batch_eval(cond.graph, c + old, ccd + all_dims)[0][0]
            new = _batch_eval(body.graph, b + old, bcd + all_dims)
            return [
                where(_per_example(pred, len(a.shape) - 1), n, o)
                for (n, _), o, a in zip(new, old, avals)
            ]

        graphs = body.derived[key] = (
            _graph_of(any_running, [*cc_avals, *avals], f"vmap_any({cond.name})"),
            _graph_of(step, [*cc_avals, *bc_avals, *avals], f"vmap_masked({body.name})"),
        )
    out = while_loop(
        *cc,
        *cc,
        *bc,
        *[with_batch(c, d, size) for c, d in zip(carry, cd)],
        cond=graphs[0],
        body=graphs[1],
        n_cond_consts=n_cond_consts,
        n_body_consts=n_cond_consts + n_body_consts,
    )
    return out, all_dims


def _while_params() -> tuple[dict]:
    cond = _example_graph(lambda i, x: less(i, 4), (_I0, _I3), "cond_fun")
    body = _example_graph(lambda i, x: (add(i, 1), add(multiply(x, 2), i)), (_I0, _I3), "body_fun")
    return ({"cond": cond, "body": body, "n_cond_consts": 0, "n_body_consts": 0},)

while_loop = defop(
    "while_loop",
    kernel=_while_kernel,
    aval=_while_aval,
    batch=_while_batch,
    jvp=PerInput(_while_jvp),
    vjp=_while_vjp,
    multiple_results=True,
    # Integer carries only: reverse mode raises by design, and the sweep checks both modes
    # on every floating input. Forward mode is checked in tests/test_lax.py.
    check=Check(
        shapes=(((), (3,)),),
        make_args=lambda rng, shapes: [np.asarray(0, np.int64), rng.integers(-5, 5, shapes[1])],
        params=functools.cache(_while_params),
    ),
    doc="""Repeat a traced body while a traced predicate holds: the node
    ``fgrad.lax.while_loop`` (and ``fori_loop`` with traced bounds) records under ``jit``.

    Args:
        *args: the predicate's closed-over values, the body's closed-over values, then the
            initial carry (Tensors).
        cond: :class:`SubGraph` from (cond consts, carry) to a scalar bool.
        body: :class:`SubGraph` from (body consts, carry) to the next carry (same avals).
        n_cond_consts: how many of ``args`` are the predicate's closed-over values.
        n_body_consts: how many follow for the body.

    Returns:
        A tuple of Tensors: the final carry.

    Raises:
        ShapeError, DTypeError: the carry's avals differ from the sub-graphs' inputs.
        ValueError: reverse-mode differentiation (use ``fori_loop`` or ``scan``).

    Example:
        >>> f = fgrad.jit(lambda x: fgrad.lax.while_loop(lambda v: v < 10.0, lambda v: 2.0 * v, x))
        >>> f(fnp.array(1.5))
        Tensor(12., dtype=float64)

    References:
        ``jax.lax.while_loop``
        (https://docs.jax.dev/en/latest/_autosummary/jax.lax.while_loop.html).
    """,
)


# ------------------------------------------------------------------------ scan


def _scan_kernel(xp, *args, body, n_consts, n_carry, length, reverse):
    _check_arrays("scan", args)
    if xp is np and length and config.cpu_compile and not config.debug_nans:
        compiled = compile_scan(body, n_consts, n_carry, length, reverse)
        outs = compiled(list(args)) if compiled is not None else None
        if outs is not None:
            return outs
    consts, carry, xs = _split(args, n_consts, n_carry)
    n_ys = len(body.out_avals) - n_carry
    ys: list = [None] * length
    for i in range(length - 1, -1, -1) if reverse else range(length):
        out = body.run(xp, consts + carry + [x[i, ...] for x in xs])
        carry, ys[i] = out[:n_carry], out[n_carry:]
    if length:
        stacked = [xp.stack([xp.asarray(y[j]) for y in ys], axis=0) for j in range(n_ys)]
    else:
        stacked = [
            xp.zeros((0, *a.shape), dtype=_xp_dtype(xp, a.dtype)) for a in body.out_avals[n_carry:]
        ]
    return (*carry, *stacked)


def _scan_aval(*args, body, n_consts, n_carry, length, reverse):
    consts, carry, xs = _split(args, n_consts, n_carry)
    avals = [_aval(a) for a in xs]
    for a in avals:
        if not a.shape or a.shape[0] != length:
            raise ShapeError(
                f"scan: every xs leaf needs a leading axis of length {length}; got {a}"
            )
    x_avals = [ShapeDtype(a.shape[1:], a.dtype) for a in avals]
    _match("scan", "input (consts, carry, x)", consts + carry + x_avals, body.in_avals)
    ys = [ShapeDtype((length, *a.shape), a.dtype) for a in body.out_avals[n_carry:]]
    return (*body.out_avals[:n_carry], *ys)


def _scan_layout(body, n_consts, n_carry):
    n_in = len(body.in_avals)
    n_x = n_in - n_consts - n_carry
    n_y = len(body.out_avals) - n_carry
    return n_x, n_y


def _scan_jvp(p: int) -> Callable:
    def rule(t, out, *args, body, n_consts, n_carry, length, reverse):
        body = _quiet(body)
        consts, init, xs = _split(args, n_consts, n_carry)
        n_x, n_y = _scan_layout(body, n_consts, n_carry)
        avals = body.in_avals
        t_carry = [k for k in range(n_carry) if _inexact(avals[n_consts + k])]
        t_ys = [k for k in range(n_y) if _inexact(body.out_avals[n_carry + k])]
        kind = "const" if p < n_consts else "carry" if p < n_consts + n_carry else "x"
        n_tc = 1 if kind == "const" else 0
        n_tx = 1 if kind == "x" else 0
        x_pos = p - n_consts - n_carry

        def fun(leaves):
            c, tc, carry, tcarry, x, tx = _chunks(
                leaves, n_consts, n_tc, n_carry, len(t_carry), n_x, n_tx
            )
            tangents: list = [None] * len(avals)
            if tc:
                tangents[p] = tc[0]
            for k, tk in zip(t_carry, tcarry):
                tangents[n_consts + k] = tk
            if tx:
                tangents[n_consts + n_carry + x_pos] = tx[0]
            outs, t_outs = _jvp_call(body, c + carry + x, tangents)
            return (
                outs[:n_carry]
                + [t_outs[k] for k in t_carry]
                + outs[n_carry:]
                + [t_outs[n_carry + k] for k in t_ys]
            )

        in_avals = (
            *avals[:n_consts],
            *avals[p : p + n_tc],
            *avals[n_consts : n_consts + n_carry],
            *[avals[n_consts + k] for k in t_carry],
            *avals[n_consts + n_carry :],
            *(avals[p : p + 1] if n_tx else ()),
        )
        new_body = _derive(body, ("jvp", kind, p), in_avals, fun)
        t_init = [
            t
            if kind == "carry" and n_consts + k == p
            else full_like(init[k], fill_value=0, dtype=None)
            for k in t_carry
        ]
        res = scan(
            *consts,
            *([t] if n_tc else []),
            *init,
            *t_init,
            *xs,
            *([t] if n_tx else []),
            body=new_body,
            n_consts=n_consts + n_tc,
            n_carry=n_carry + len(t_carry),
            length=length,
            reverse=reverse,
        )
        tangents_out: list = [None] * (n_carry + n_y)
        for k, tk in zip(t_carry, res[n_carry : n_carry + len(t_carry)]):
            tangents_out[k] = tk
        ys_start = n_carry + len(t_carry) + n_y
        for k, tk in zip(t_ys, res[ys_start:]):
            tangents_out[n_carry + k] = tk
        return tuple(tangents_out)

    return rule


def _scan_vjp(cts, out, *args, body, n_consts, n_carry, length, reverse):
    body = _quiet(body)
    consts, _, xs = _split(args, n_consts, n_carry)
    n_x, n_y = _scan_layout(body, n_consts, n_carry)
    avals = body.in_avals
    d_consts = [k for k in range(n_consts) if _inexact(avals[k])]
    d_carry = [k for k in range(n_carry) if _inexact(avals[n_consts + k])]
    d_xs = [k for k in range(n_x) if _inexact(avals[n_consts + n_carry + k])]
    d_ys = [k for k in range(n_y) if _inexact(body.out_avals[n_carry + k])]
    res: list = [None] * len(args)
    if not (d_consts or d_carry or d_xs) or not (d_carry or d_ys):
        return tuple(res)

    # 1. The carry entering every step, stacked (the body's own intermediates are
    #    recomputed step by step in 2, not stored).
    carries: list = []
    if n_carry:
        stack_carries = _derive(
            body,
            ("carries",),
            avals,
            lambda leaves: body.call(leaves)[:n_carry] + leaves[n_consts : n_consts + n_carry],
        )
        fwd = scan(
            *args,
            body=stack_carries,
            n_consts=n_consts,
            n_carry=n_carry,
            length=length,
            reverse=reverse,
        )
        carries = list(fwd[n_carry:])

    # 2. Walk back: carry the cotangents of the consts (summed over steps) and of the
    #    carry; each step's x gets its cotangent as a stacked output.
    pos = d_consts + [n_consts + k for k in d_carry] + [n_consts + n_carry + k for k in d_xs]

    def fun(leaves):
        c, acc, ct_carry, carry, x, ct_y = _chunks(
            leaves, n_consts, len(d_consts), len(d_carry), n_carry, n_x, len(d_ys)
        )
        out_cts: list = [None] * (n_carry + n_y)
        for k, ct in zip(d_carry, ct_carry):
            out_cts[k] = ct
        for k, ct in zip(d_ys, ct_y):
            out_cts[n_carry + k] = ct
        in_cts = _vjp_call(body, c + carry + x, pos, out_cts)
        nc, ncar = len(d_consts), len(d_carry)
        return (
            [add(a, d) for a, d in zip(acc, in_cts[:nc])]
            + in_cts[nc : nc + ncar]
            + in_cts[nc + ncar :]
        )

    back_avals = (
        *avals[:n_consts],
        *[avals[k] for k in d_consts],
        *[avals[n_consts + k] for k in d_carry],
        *avals[n_consts : n_consts + n_carry],
        *avals[n_consts + n_carry :],
        *[body.out_avals[n_carry + k] for k in d_ys],
    )
    back = _derive(body, ("vjp",), back_avals, fun)
    back_out = scan(
        *consts,
        *[full_like(consts[k], fill_value=0, dtype=None) for k in d_consts],
        *[cts[k] for k in d_carry],
        *carries,
        *xs,
        *[cts[n_carry + k] for k in d_ys],
        body=back,
        n_consts=n_consts,
        n_carry=len(d_consts) + len(d_carry),
        length=length,
        reverse=not reverse,
    )
    nc, ncar = len(d_consts), len(d_carry)
    for k, ct in zip(d_consts, back_out[:nc]):
        res[k] = ct
    for k, ct in zip(d_carry, back_out[nc : nc + ncar]):
        res[n_consts + k] = ct
    for k, ct in zip(d_xs, back_out[nc + ncar :]):
        res[n_consts + n_carry + k] = ct
    return tuple(res)


def _scan_batch(op, args, dims, *, body, n_consts, n_carry, length, reverse):
    """``scan`` under vmap: one scan of the batched body. A mapped ``xs`` leaf ``(B, L,
    ...)`` is scanned as ``(L, B, ...)`` (the mapped axis second, so each step's slice is
    mapped in front), and mapped ``ys`` come back ``(B, L, ...)``."""
    size = batch_size(args, dims)
    consts, carry, xs = _split(args, n_consts, n_carry)
    kd, cd, xd = (tuple(d) for d in _split(dims, n_consts, n_carry))
    mapped = _mapped_carry(body, kd, [d is not None for d in cd], xd, size)
    carry_dims = tuple(0 if b else None for b in mapped)
    force = (*mapped, *(False,) * (len(body.out_avals) - n_carry))
    new_body, out_dims = _vmapped(body, kd + carry_dims + xd, size, force)
    out = scan(
        *consts,
        *[with_batch(c, d, size) if b else c for c, d, b in zip(carry, cd, mapped)],
        *[x if d is None else _swap01(x) for x, d in zip(xs, xd)],
        body=new_body,
        n_consts=n_consts,
        n_carry=n_carry,
        length=length,
        reverse=reverse,
    )
    ys = [y if d is None else _swap01(y) for y, d in zip(out[n_carry:], out_dims[n_carry:])]
    return (*out[:n_carry], *ys), out_dims


# c' = sin(c) * w + x, y = c * x: smooth, one const, one carry, one x, one y.
@functools.cache
def _scan_params() -> tuple[dict, dict]:
    body = _example_graph(
        lambda w, c, x: (add(multiply(sin(c), w), x), multiply(c, exp(x))), (_F3, _F3, _F3), "f"
    )
    return tuple(
        {"body": body, "n_consts": 1, "n_carry": 1, "length": 4, "reverse": r} for r in (False, True)
    )


scan = defop(
    "scan",
    kernel=_scan_kernel,
    aval=_scan_aval,
    batch=_scan_batch,
    jvp=PerInput(_scan_jvp),
    vjp=_scan_vjp,
    multiple_results=True,
    # The body is a fixed graph on f64[3] values (params cannot be sampled); xs has 4 steps.
    check=Check(
        shapes=(((3,), (3,), (4, 3)),),
        domain=(-1.0, 1.0),
        params=_scan_params,
    ),
    doc="""Loop a traced body over the leading axis of ``xs``, carrying state: the node
    ``fgrad.lax.scan`` (and ``fori_loop`` with concrete bounds) records under ``jit``.

    Args:
        *args: the body's closed-over values (``n_consts``), the initial carry
            (``n_carry``), then the ``xs`` leaves, each ``(length, ...)``.
        body: :class:`SubGraph` from (consts, carry, x) to (next carry, y).
        n_consts: how many of ``args`` are closed-over values.
        n_carry: how many carry leaves follow.
        length: the number of steps.
        reverse: run from the last step to the first (``ys`` stay in step order).

    Returns:
        A tuple of Tensors: the final carry, then each ``y`` leaf stacked to
        ``(length, ...)``.

    Raises:
        ShapeError, DTypeError: an input's aval differs from the body's, or an ``xs``
            leaf's leading axis is not ``length``.

    Example:
        >>> f = fgrad.jit(lambda xs: fgrad.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs))
        >>> f(fnp.array([1.0, 2.0, 3.0]))
        (Tensor(6., dtype=float64), Tensor([0., 2., 9.], dtype=float64))

    References:
        ``jax.lax.scan`` (https://docs.jax.dev/en/latest/_autosummary/jax.lax.scan.html).
    """,
)
