"""Structured control flow that ``jit`` can record: cond, switch, while_loop, fori_loop, scan.

A Python ``if`` or ``while`` on a traced value cannot be recorded in a graph: the value is
not known while tracing. These functions take the branches and loop bodies as functions
instead, in JAX's ``lax`` style, so that the choice or the loop is part of the graph.

* Where the predicate, index or trip count is concrete and nothing is traced abstractly
  (eager code, eager ``grad``/``jvp``), they run plain Python control flow: the eager
  transforms differentiate what actually ran.
* Under ``jit`` or ``make_graph`` they record one node (``fgrad.lax._ops``) whose
  params hold the traced branches or body; a 1,000-step ``fori_loop`` is one node, not
  1,000 copies of its body. ``cond``/``switch`` with a concrete predicate pick the branch
  while tracing.

Derivatives: ``cond``, ``switch``, ``scan`` and ``fori_loop`` with concrete bounds work in
both modes and to any order; ``while_loop`` (and ``fori_loop`` with traced bounds) is
forward-mode only once recorded, as in JAX.

Reference: https://docs.jax.dev/en/latest/jax.lax.html#control-flow-operators
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import _args as _args
from fgrad import numpy as fnp
from fgrad import tree

# Internals under private names: ``fgrad.lax`` shows only its public API (``__all__``).
from fgrad.core.staging import GraphTrace as _GraphTrace
from fgrad.core.trace import active_traces as _active_traces
from fgrad.core.trace import concrete_value as _concrete_value
from fgrad.core.staging import GraphTracer as _GraphTracer
from fgrad.core.staging import weak as _weak
from fgrad.dtypes import WEAK_STAND_IN as _WEAK_STAND_IN
from fgrad.errors import ConcretizationError as _ConcretizationError
from fgrad.errors import DTypeError as _DTypeError
from fgrad.errors import ShapeError as _ShapeError
from fgrad.lax import _ops as _control
from fgrad.lax._collectives import all_gather, axis_index, pmax, pmean, pmin, psum
from fgrad.tensor import ShapeDtype as _ShapeDtype
from fgrad.tensor import Tensor as _Tensor
from fgrad.tensor import as_tensor as _as_named_tensor
from fgrad.tensor import asarray as _asarray
from fgrad.transforms import subgraph as _sub

__all__ = [
    "all_gather",
    "axis_index",
    "cond",
    "fori_loop",
    "pmax",
    "pmean",
    "pmin",
    "psum",
    "scan",
    "switch",
    "while_loop",
]


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)

_NUMBERS = (bool, int, float, complex)  # Python numbers: weakly typed, as in JAX


def _label(fun: Callable, parameter: str) -> str:
    """A body's name in graphs and logs: the user's function's name (``step``), else the
    parameter it was passed as (``f`` for a lambda)."""
    name = getattr(fun, "__name__", "")
    return name if name.isidentifier() else parameter


def _staging() -> bool:
    """A transform that traces abstractly (jit, make_graph) is running."""
    return any(isinstance(t, _GraphTrace) for t in _active_traces())


def _concrete(x: Any) -> tuple[bool, Any]:
    try:
        return True, _concrete_value(x)
    except _ConcretizationError:
        return False, None


def _as_tensor(x: Any) -> _Tensor:
    return x if isinstance(x, _Tensor) else _asarray(x)


def _aval(x: Any) -> _ShapeDtype:
    return x.aval if isinstance(x, _Tensor) else _ShapeDtype(tuple(np.shape(x)), np.result_type(x))


def _leaves(name: str, what: str, x: Any) -> None:
    """Refuse a pytree ``x`` with a leaf that is not an array or a number (a string, an
    object), as JAX does, before any function of the user's runs on it."""
    for leaf in tree.leaves(x):
        if isinstance(leaf, _Tensor):
            continue
        if type(leaf) not in _NUMBERS or (type(leaf) is int and not -(2**63) <= leaf < 2**64):
            _as_named_tensor(leaf, name, what)


def _functions(name: str, **fns: Any) -> None:
    for arg, fn in fns.items():
        _args.function(fn, name, arg)


def _scalar_operand(name: str, what: str, x: Any, kinds: str) -> _ShapeDtype:
    if not isinstance(x, _Tensor) and type(x) not in _NUMBERS:
        x = _as_named_tensor(x, name, what)
    aval = _aval(x)
    if aval.shape != ():
        raise _ShapeError(
            f"{name}: {what} must be a scalar, got {aval}; reduce it first (for example "
            "fnp.any / fnp.all for a predicate)"
        )
    if np.dtype(aval.dtype).kind not in kinds:
        allowed = [{"b": "a bool", "i": "an integer", "f": "a float"}[k] for k in kinds if k != "u"]
        text = " or ".join(filter(None, [", ".join(allowed[:-1]), allowed[-1]]))
        raise _DTypeError(f"{name}: {what} must be {text}, got {aval}")
    return aval


def _coerce(
    traced: _sub.Traced, want: Sequence[_ShapeDtype], name: str, what: str, ref: str
) -> None:
    """Make ``traced``'s outputs have the avals ``want``: Python numbers take the wanted
    dtype (weak, as in JAX); any other mismatch raises naming both avals."""
    for k, w in enumerate(want):
        got, weak = traced.out_aval(k)
        if got == w:
            continue
        if weak and got.shape == w.shape:
            traced.cast_output(k, w)
            continue
        _check_leaf(name, what, k, got, w, ref)


def _check_leaf(name: str, what: str, k: int, got: Any, w: Any, ref: str) -> None:
    """Raise when a loop or branch output leaf ``got`` does not have the aval ``w``."""
    if tuple(got.shape) != tuple(w.shape):
        raise _ShapeError(
            f"{name}: {what} leaf {k} has aval {got}, but {ref} has {w}; they must match in "
            "shape and dtype"
        )
    if np.dtype(got.dtype) != np.dtype(w.dtype):
        want = np.dtype(w.dtype)
        hint = f"cast with .astype('{want.name}')"
        if want.kind == "f" and np.dtype(got.dtype).kind == "f":
            hint = (
                f"in numpy's promotion {want.name} with a wider float or with an integer "
                "array, such as fori_loop's int64 index or fnp.arange(n), gives "
                f"{np.dtype(got.dtype).name}; cast that value (i.astype('{want.name}')) or "
                f"the result with .astype('{want.name}')"
            )
        raise _DTypeError(
            f"{name}: {what} leaf {k} has aval {got}, but {ref} has {w}; they must match in "
            f"shape and dtype ({hint})"
        )


def _settle_weak(leaves: list, trace: Callable) -> tuple[list, list[bool]]:
    """The initial carry leaves, the weakly typed ones cast as JAX casts them, and which
    leaves stay weak through the loop.

    A Python number (or jit's traced Python float) in the initial carry is weak: the body
    is traced once with it weak, and where the body's carry output is an array (``0.0 +
    float32 x`` is float32) the initial value is cast to its dtype, so a loop over float32
    data stays float32, eagerly and under jit alike. Where the output stays weak (Python
    arithmetic on the carry, as eagerly), the leaf stays weak: the body takes it weakly
    typed (:func:`_weakly`), and the caller marks the result weak (:func:`_weak_results`).
    ``trace(avals)`` traces the body on carry avals. Other leaves come back as they are.
    Reference: JAX's ``_promote_weak_typed_inputs``.
    """
    weak = [type(x) in _NUMBERS or getattr(x, "weak", False) for x in leaves]
    if not any(weak):
        return leaves, weak
    probe = [
        _ShapeDtype((), np.result_type(x) if type(x) in _NUMBERS else x.dtype, True) if w else _aval(x)
        for x, w in zip(leaves, weak)
    ]
    try:
        traced = trace(probe)
    except Exception:  # noqa: BLE001  (the loop itself reports it, or runs eagerly)
        return leaves, [False] * len(leaves)
    leaves = list(leaves)
    stays = [False] * len(leaves)
    for k, (x, w, p) in enumerate(zip(leaves, weak, probe)):
        if not w or k >= len(traced.outvars):
            continue
        got, number = traced.out_aval(k)
        if got.weak or number:
            same = np.dtype(got.dtype) == np.dtype(p.dtype)
            if not same and np.result_type(p.dtype, got.dtype) == got.dtype:
                # A number carry that the body makes wider (``c + 0.5`` of an int): the
                # loop starts from the wider number, as JAX's promotion and Python do.
                leaves[k] = _widen_number(x, np.dtype(got.dtype).kind)
                same = True
            stays[k] = same
        elif got.shape == ():  # strong, even of the same dtype, as JAX
            leaves[k] = _asarray(x, dtype=got.dtype)
    return leaves, stays


def _settle_eager(init: Any, body: Callable, extra: list = ()) -> Any:
    """An eager loop's initial carry with its Python numbers settled as a traced loop
    settles them (:func:`_settle_weak`), so that the result's type does not depend on
    whether the loop ran (a body that makes an int carry a float: 0.0 after no steps).
    ``body(extra_tracers, carry)`` is the loop body; ``extra`` the avals of the inputs
    it takes besides the carry (fori_loop's index)."""
    leaves, treedef = tree.flatten(init)
    if not any(type(x) in _NUMBERS for x in leaves):
        return init
    n = len(extra)

    def probe(avals):
        return _sub.trace_function(
            lambda ts: tree.leaves(body(ts[:n], tree.unflatten(treedef, ts[n:]))),
            list(extra) + avals,
        )

    return tree.unflatten(treedef, _settle_weak(leaves, probe)[0])


def _widen_number(x: Any, kind: str) -> Any:
    """The Python number (or weakly typed traced one) ``x`` as a number of ``kind``
    (``"i"``, ``"f"`` or ``"c"``): ``int(x)``, ``float(x)`` or ``complex(x)``."""
    if type(x) in _NUMBERS:
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind](x)
    # A traced one (an outer loop's weak carry, jit's float argument): Python arithmetic
    # with a zero of the kind gives the same value (an int or a float is exact in it).
    return x + {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[kind]


def _weakly(avals: list, stays: Sequence[bool]) -> list:
    """The body's input avals, the carry leaves that stay Python numbers weakly typed."""
    return [_ShapeDtype(a.shape, a.dtype, True) if s else a for a, s in zip(avals, stays)] + list(
        avals[len(stays):]
    )


def _weak_results(outs: list, stays: Sequence[bool]) -> list:
    """Loop and cond results that eager code has as Python numbers: weakly typed when
    traced, Python numbers when the op ran on concrete values."""
    return [
        (_weak(o) if type(o) is _GraphTracer else o.item() if type(o) is _Tensor else o) if s else o
        for o, s in zip(outs, stays)
    ]


def _carry_signature(carry: Any) -> tuple:
    """The structure of a carry and its array leaves' avals (None for Python numbers,
    which are weak and may change), for :func:`_check_carry`; computed once per loop."""
    leaves, treedef = tree.flatten(carry)
    return treedef, [
        None if type(x) in _NUMBERS or getattr(x, "weak", False) else _aval(x) for x in leaves
    ]


def _check_carry(name: str, what: str, new: Any, signature: tuple) -> None:
    """Eager loops: raise as the traced ones do (``_coerce``) when an array leaf of the
    carry changed shape or dtype (numpy promotion can widen it: float32 + an int64 index
    is float64), so eager and ``jit`` agree."""
    init_tree, avals = signature
    new_leaves, new_tree = tree.flatten(new)
    if new_tree != init_tree:
        raise TypeError(
            f"{name}: {what} must have the structure of the initial carry, {init_tree}; it "
            f"returned {new_tree}"
        )
    for k, (got, w) in enumerate(zip(new_leaves, avals)):
        if w is None and isinstance(got, _Tensor) and tuple(got.shape) != ():
            # A Python-number carry is a scalar: a body that makes it an array changes its
            # shape, which the traced loop refuses (it was accepted eagerly).
            _check_leaf(name, what, k, _aval(got), _ShapeDtype((), got.dtype), "the initial carry")
        if w is None or type(got) in _NUMBERS or getattr(got, "weak", False):
            continue  # a number takes the carry's type (the loops cast it)
        _check_leaf(name, what, k, _aval(got), w, "the initial carry")


# ------------------------------------------------------------------------ cond / switch


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """Apply ``true_fun`` or ``false_fun`` to ``operands``, as ``pred`` says.

    Equivalent to ``true_fun(*operands) if pred else false_fun(*operands)``, but ``pred``
    may be traced: under ``jit`` both branches are traced and one ``cond`` node records
    the choice. Differentiable in both modes and to any order; the derivative is the
    chosen branch's (JAX's semantics: the other branch does not run). Under ``vmap`` a
    ``pred`` that differs between examples runs both branches and selects per example.

    Args:
        pred: scalar bool, integer or float (non-zero is True, as in JAX): Python value
            or Tensor.
        true_fun: function of ``*operands`` returning a pytree of Tensors.
        false_fun: function of ``*operands`` returning a pytree with the same structure,
            shapes and dtypes as ``true_fun``'s (Python numbers adapt their dtype).
        *operands: pytrees of Tensors (or Python numbers) passed to the branch.

    Returns:
        The chosen branch's output.

    Raises:
        ShapeError: ``pred`` is not a scalar, or (when traced) the branches' outputs
            differ in shape.
        DTypeError: ``pred`` is complex or not a number (a string, None), a branch is not
            a function, an operand leaf is not an array or a number, or the branches'
            outputs differ in dtype.
        TypeError: the branches return different pytree structures.

    Example:
        >>> f = fgrad.jit(lambda x: fgrad.lax.cond(fnp.sum(x) > 0, fnp.sin, fnp.cos, x))
        >>> f(fnp.array([0.5, 1.0]))
        Tensor([0.47942554, 0.84147098], dtype=float64)
        >>> fgrad.grad(lambda x: fnp.sum(f(x)))(fnp.array([0.5, 1.0]))
        Tensor([0.87758256, 0.54030231], dtype=float64)

    References:
        ``jax.lax.cond`` (https://docs.jax.dev/en/latest/_autosummary/jax.lax.cond.html).
    """
    aval = _scalar_operand("cond", "pred", pred, "biuf")
    _functions("cond", true_fun=true_fun, false_fun=false_fun)
    _leaves("cond", "operands", operands)
    known, value = _concrete(pred)
    if known:
        return true_fun(*operands) if bool(value) else false_fun(*operands)
    index = pred if aval.dtype == np.bool_ else fnp.not_equal(pred, 0)
    return _switch_traced("cond", index, (false_fun, true_fun), operands, ("false_fun", "true_fun"))


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """Apply ``branches[index]`` to ``operands``; ``index`` is clamped into range.

    Equivalent to ``branches[min(max(index, 0), len(branches) - 1)](*operands)``, but
    ``index`` may be traced: under ``jit`` every branch is traced and one ``cond`` node
    records the choice. Differentiable in both modes and to any order.

    Args:
        index: scalar integer, Python value or Tensor.
        branches: non-empty sequence of functions of ``*operands``, each returning a pytree
            with the same structure, shapes and dtypes.
        *operands: pytrees of Tensors (or Python numbers) passed to the branch.

    Returns:
        The chosen branch's output.

    Raises:
        ValueError: ``branches`` is empty.
        ShapeError, DTypeError: ``index`` is not a scalar integer, or (when traced) the
            branches' outputs differ in shape or dtype; ``branches`` is not a sequence of
            functions, or an operand leaf is not an array or a number (``DTypeError``).
        TypeError: the branches return different pytree structures.

    Example:
        >>> branches = [lambda x: x + 1.0, lambda x: 2.0 * x, lambda x: -x]
        >>> f = fgrad.jit(lambda i, x: fgrad.lax.switch(i, branches, x))
        >>> [float(f(fnp.array(i), fnp.array(3.0))) for i in (-1, 1, 7)]
        [4.0, 6.0, -3.0]

    References:
        ``jax.lax.switch`` (https://docs.jax.dev/en/latest/_autosummary/jax.lax.switch.html).
    """
    if callable(branches) or isinstance(branches, (str, bytes)) or not hasattr(
        branches, "__iter__"
    ):
        hint = "; wrap a single function in a list" if callable(branches) else ""
        raise _DTypeError(
            f"switch: branches must be a sequence of functions, got "
            f"{_args.describe(branches)}{hint}"
        )
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: branches must be a non-empty sequence of functions")
    _functions("switch", **{f"branches[{k}]": br for k, br in enumerate(branches)})
    _scalar_operand("switch", "index", index, "iu")
    _leaves("switch", "operands", operands)
    known, value = _concrete(index)
    if known:
        return branches[min(max(int(value), 0), len(branches) - 1)](*operands)
    if len(branches) == 1:
        return branches[0](*operands)
    names = tuple(f"branches[{k}]" for k in range(len(branches)))
    return _switch_traced("switch", index, branches, operands, names)


def _switch_traced(name, index, branches, operands, names):
    leaves, in_tree = tree.flatten(operands)
    leaves = [_as_tensor(x) for x in leaves]
    avals = [x.aval for x in leaves]
    traced = [
        _sub.trace_function(lambda ts, br=br: br(*tree.unflatten(in_tree, ts)), avals)
        for br in branches
    ]
    first = traced[0]
    for k, t in enumerate(traced[1:], 1):
        if t.out_tree != first.out_tree:
            raise TypeError(
                f"{name}: {names[0]} returns {first.out_tree} but {names[k]} returns "
                f"{t.out_tree}; every branch must return the same pytree structure"
            )
    # Each output's aval: the branches that return arrays must agree; Python numbers in
    # the others take that dtype (weak, as in JAX).
    want, numbers = [], []
    for j in range(len(first.outvars)):
        outs = [(k, *t.out_aval(j)) for k, t in enumerate(traced)]
        strong = [(k, a) for k, a, weak in outs if not weak]
        if strong:
            k0, target = strong[0]
            for k, a in strong[1:]:
                if a != target:
                    err = _ShapeError if a.shape != target.shape else _DTypeError
                    raise err(
                        f"{name}: output leaf {j} is {target} in {names[k0]} but {a} in "
                        f"{names[k]}; every branch must return the same shapes and dtypes"
                    )
        else:  # numpy's type for the numbers (a weak Var counts as a number of its kind)
            target = _ShapeDtype((), np.result_type(*[_WEAK_STAND_IN[a.dtype.kind] for _, a, _ in outs]))
        want.append(target)
        numbers.append(not strong)  # a Python number from every branch: weak, as eagerly
    for k, t in enumerate(traced):
        _coerce(t, want, name, f"{names[k]}'s output", "another branch's output")
    consts: list = []
    seen: set[int] = set()
    for t in traced:
        for c in t.consts:
            if id(c) not in seen:
                seen.add(id(c))
                consts.append(c)
    subs = tuple(_sub.close(t, consts, n) for t, n in zip(traced, names))
    outs = _control.cond(index, *consts, *leaves, branches=subs)
    return tree.unflatten(first.out_tree, _weak_results(list(outs), numbers))


# ------------------------------------------------------------------------ loops


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)`` holds; return ``val``.

    Equivalent to ``val = init_val; while cond_fun(val): val = body_fun(val)``. Under
    ``jit`` the two functions are traced once and one ``while_loop`` node records the loop.
    Forward-mode differentiable (``jvp``); once recorded, reverse mode raises as in JAX,
    because the trip count is known only at run time: use :func:`fori_loop` with concrete
    bounds or :func:`scan`. (Eager ``grad`` runs the Python loop and differentiates it.)
    Under ``vmap`` a predicate that differs between examples records the node too: it
    loops while any example's predicate holds, and finished examples keep their carry.

    Args:
        cond_fun: function of the carry returning a scalar bool.
        body_fun: function of the carry returning the next carry: same structure, shapes
            and dtypes as ``init_val``.
        init_val: pytree of Tensors (Python numbers become Tensors of numpy's default
            dtype when traced).

    Returns:
        The final carry.

    Raises:
        TypeError: ``body_fun`` changes the carry's structure, or ``cond_fun`` returns
            more than one value.
        ShapeError, DTypeError: ``body_fun`` changes a carry leaf's shape or dtype, or
            ``cond_fun`` does not return a scalar bool; a function argument is not
            callable or an ``init_val`` leaf is not an array or a number (``DTypeError``).
        ValueError: reverse-mode differentiation of a recorded loop.

    Example:
        >>> collatz = lambda n: fgrad.lax.while_loop(
        ...     lambda c: c[0] != 1,
        ...     lambda c: (fnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1),
        ...     (n, 0))
        >>> collatz(fnp.array(27))  # the count stays a Python int
        (Tensor(1, dtype=int64), 111)
        >>> fgrad.jit(collatz)(fnp.array(27))  # jit returns arrays (weakly typed inside)
        (Tensor(1, dtype=int64), Tensor(111, dtype=int64))

    References:
        ``jax.lax.while_loop``
        (https://docs.jax.dev/en/latest/_autosummary/jax.lax.while_loop.html).
    """
    _functions("while_loop", cond_fun=cond_fun, body_fun=body_fun)
    _leaves("while_loop", "init_val", init_val)
    if not _staging():
        val = _settle_eager(init_val, lambda ts, t: body_fun(t))
        signature = _carry_signature(val)
        while True:
            known, more = _predicate(cond_fun(val))
            if not known:  # one answer per example (vmap): record the loop from here on
                init_val = val
                break
            if not more:
                return val
            new = body_fun(val)
            _check_carry("while_loop", "body_fun's output", new, signature)
            val = new
    leaves, in_tree = tree.flatten(init_val)

    def trace_body(avals):
        return _sub.trace_function(lambda ts: body_fun(tree.unflatten(in_tree, ts)), avals)

    leaves, stays = _settle_weak(leaves, trace_body)
    leaves = [_as_tensor(x) for x in leaves]
    avals = _weakly([x.aval for x in leaves], stays)
    body = trace_body(avals)
    if body.out_tree != in_tree:
        raise TypeError(
            f"while_loop: body_fun must return a carry with the structure of init_val, "
            f"{in_tree}; it returned {body.out_tree}"
        )
    _coerce(body, avals, "while_loop", "body_fun's output", "init_val")
    pred = _sub.trace_function(lambda ts: cond_fun(tree.unflatten(in_tree, ts)), avals)
    if len(pred.outvars) != 1:
        raise TypeError(f"while_loop: cond_fun must return one scalar bool, got {pred.out_tree}")
    got, weak = pred.out_aval(0)
    if weak and got.dtype == np.bool_:
        pred.cast_output(0, _ShapeDtype((), got.dtype))
    elif got.shape != () or got.dtype != np.bool_:
        err = _ShapeError if got.shape != () else _DTypeError
        raise err(f"while_loop: cond_fun must return a scalar bool, got {got}")
    outs = _control.while_loop(
        *pred.consts,
        *body.consts,
        *leaves,
        cond=_sub.close(pred, pred.consts, _label(cond_fun, "cond_fun")),
        body=_sub.close(body, body.consts, _label(body_fun, "body_fun")),
        n_cond_consts=len(pred.consts),
        n_body_consts=len(body.consts),
    )
    return tree.unflatten(in_tree, _weak_results(list(outs), stays))


def _predicate(x: Any) -> tuple[bool, bool]:
    """Whether the predicate ``x`` has a value (not so when ``vmap`` maps it), and it."""
    _scalar_operand("while_loop", "cond_fun's result", x, "b")
    known, value = _concrete(x)
    return known, known and bool(value)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    """Run ``val = body_fun(i, val)`` for ``i`` from ``lower`` to ``upper - 1``.

    Equivalent to ``for i in range(lower, upper): val = body_fun(i, val)``, with ``i`` a
    scalar integer Tensor (dtype of the bounds; int64 for Python ints). With concrete
    bounds it is a :func:`scan` under ``jit`` (one node, reverse-differentiable); with
    traced bounds a :func:`while_loop` (forward mode only).

    Args:
        lower: scalar integer, Python int or Tensor: the first index.
        upper: scalar integer: one past the last index (no iterations when
            ``upper <= lower``).
        body_fun: function ``(i, val) -> val`` keeping the carry's structure, shapes and
            dtypes.
        init_val: pytree of Tensors, the initial carry.

    Returns:
        The final carry.

    Raises:
        ShapeError, DTypeError: a bound is not a scalar integer, or ``body_fun`` changes
            the carry; ``body_fun`` is not callable or an ``init_val`` leaf is not an array
            or a number (``DTypeError``).
        TypeError: ``body_fun`` changes the carry's structure.

    Example:
        >>> def power(x, n):
        ...     return fgrad.lax.fori_loop(0, n, lambda i, acc: acc * x, fnp.ones_like(x))
        >>> f = fgrad.jit(power, static_argnums=1)
        >>> fnp.round(f(fnp.array(1.001), 1000), 6)
        Tensor(2.716924, dtype=float64)
        >>> len(f.graph(fnp.array(1.001), 1000).nodes)  # one scan node, not 1,000 products
        1
        >>> fgrad.grad(f)(fnp.array(2.0), 3)
        Tensor(12., dtype=float64)

    References:
        ``jax.lax.fori_loop``
        (https://docs.jax.dev/en/latest/_autosummary/jax.lax.fori_loop.html).
    """
    lo_aval = _scalar_operand("fori_loop", "lower", lower, "iu")
    hi_aval = _scalar_operand("fori_loop", "upper", upper, "iu")
    _functions("fori_loop", body_fun=body_fun)
    _leaves("fori_loop", "init_val", init_val)
    # Python ints are weak (as in JAX): the index takes a Tensor bound's dtype.
    strong = [a.dtype for b, a in ((lower, lo_aval), (upper, hi_aval)) if isinstance(b, _Tensor)]
    dtype = np.result_type(*strong) if strong else np.dtype(np.int64)
    lo_known, lo = _concrete(lower)
    hi_known, hi = _concrete(upper)
    if lo_known and hi_known:
        lo, hi = int(lo), int(hi)
        if not _staging():
            val = _settle_eager(
                init_val, lambda ts, t: body_fun(ts[0], t), [_ShapeDtype((), dtype)]
            )
            signature = _carry_signature(val)
            for i in range(lo, hi):
                new = body_fun(_asarray(i, dtype=dtype), val)
                _check_carry("fori_loop", "body_fun's output", new, signature)
                val = new
            return val

        def step(carry, _):
            i, val = carry
            return (i + 1, _fori_body(body_fun, i, val)), None

        start = (_asarray(lo, dtype=dtype), init_val)
        (_, val), _ = scan(step, start, None, length=max(hi - lo, 0))
        return val
    i0 = _asarray(lower, dtype=dtype)
    hi = _asarray(upper, dtype=dtype)
    _, val = while_loop(
        lambda c: c[0] < hi, lambda c: (c[0] + 1, _fori_body(body_fun, c[0], c[1])), (i0, init_val)
    )
    return val


def _fori_body(body_fun: Callable, i: Any, val: Any) -> Any:
    """``body_fun(i, val)``, its carry checked here: the scan or while_loop that runs a
    traced fori_loop would name itself and count the index among the carry's leaves."""
    new = body_fun(i, val)
    _check_carry("fori_loop", "body_fun's output", new, _carry_signature(val))
    return new


def scan(
    f: Callable,
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
) -> tuple[Any, Any]:
    """Loop ``f`` over the leading axis of ``xs``, carrying state; stack the outputs.

    Equivalent to::

        carry, ys = init, []
        for x in xs:              # each leaf of xs sliced along axis 0
            carry, y = f(carry, x)
            ys.append(y)
        return carry, stack(ys)   # each leaf of y stacked along a new axis 0

    Under ``jit`` ``f`` is traced once and one ``scan`` node records the loop. Reverse
    mode recomputes each step's intermediates from stored carries (memory ``length``
    carries, not ``length`` bodies); forward and reverse mode work to any order.

    Args:
        f: function ``(carry, x) -> (carry, y)``; the new carry keeps ``init``'s
            structure, shapes and dtypes; ``y`` is any pytree of Tensors (or None).
        init: pytree of Tensors, the initial carry.
        xs: pytree of Tensors, each ``(length, ...)``, or None (then ``f`` gets
            ``x=None``).
        length: number of steps; needed when ``xs`` is None, else must match.
        reverse: run from the last step to the first; ``ys[i]`` still belongs to
            ``xs[i]``.
        unroll: JAX's hint for how many steps XLA fuses per loop iteration; accepted so
            that JAX code runs unchanged (a positive int or a bool). fgrad runs one body
            per step either way, so results do not depend on it.

    Returns:
        ``(carry, ys)``: the final carry and the stacked ``y`` leaves, each
        ``(length, ...)``.

    Raises:
        ValueError: ``xs`` is None and ``length`` is not given.
        ShapeError: ``xs`` leaves differ in leading length (or from ``length``), or
            ``f`` changes a carry leaf's shape.
        DTypeError: ``f`` changes a carry leaf's dtype.
        TypeError: ``f`` does not return a pair, or changes the carry's structure, or
            ``unroll`` is not a positive int or a bool.
        DTypeError: ``f`` is not callable, a leaf of ``init`` or ``xs`` is not an array
            or a number, ``length`` is not an int or ``reverse`` not a bool.

    Example:
        >>> def cumsum(xs):
        ...     return fgrad.lax.scan(lambda c, x: (c + x, c + x), fnp.array(0.0), xs)[1]
        >>> fgrad.jit(cumsum)(fnp.array([1.0, 2.0, 3.0]))
        Tensor([1., 3., 6.], dtype=float64)
        >>> fgrad.grad(lambda xs: fnp.sum(cumsum(xs)))(fnp.array([1.0, 2.0, 3.0]))
        Tensor([3., 2., 1.], dtype=float64)

    References:
        ``jax.lax.scan`` (https://docs.jax.dev/en/latest/_autosummary/jax.lax.scan.html).
    """
    if not (type(unroll) is bool or (type(unroll) is int and unroll >= 1)):
        raise TypeError(f"scan: unroll must be a positive int or a bool, got {unroll!r}")
    _functions("scan", f=f)
    _leaves("scan", "init", init)
    length = _args.size(length, "scan", "length", none_ok=True)
    reverse = _args.flag(reverse, "scan", "reverse")
    x_leaves, x_tree = tree.flatten(xs)
    x_leaves = [_as_named_tensor(x, "scan", "xs") for x in x_leaves]
    lengths = []
    for x in x_leaves:
        if not x.shape:
            raise _ShapeError(
                f"scan: every xs leaf needs a leading axis to scan over; got {x.aval}"
            )
        lengths.append(x.shape[0])
    if length is None:
        if not lengths:
            raise ValueError("scan: xs is None (or has no leaves), so pass length=")
        length = lengths[0]
    length = int(length)
    if any(n != length for n in lengths):
        raise _ShapeError(
            f"scan: xs leaves must all have leading length {length}; got shapes "
            f"{[tuple(x.shape) for x in x_leaves]}"
        )
    if not _staging():
        return _scan_eager(f, init, x_leaves, x_tree, length, reverse)
    c_leaves, c_tree = tree.flatten(init)
    n = len(c_leaves)
    x_avals = [_ShapeDtype(x.shape[1:], x.dtype) for x in x_leaves]
    trees: dict[str, Any] = {}

    def body(ts):
        carry, y = _pair(f(tree.unflatten(c_tree, ts[:n]), tree.unflatten(x_tree, ts[n:])))
        carry_leaves, trees["carry"] = tree.flatten(carry)
        y_leaves, trees["y"] = tree.flatten(y)
        return carry_leaves + y_leaves

    c_leaves, stays = _settle_weak(
        c_leaves, lambda avals: _sub.trace_function(body, avals + x_avals)
    )
    c_leaves = [_as_tensor(c) for c in c_leaves]
    c_avals = _weakly([c.aval for c in c_leaves], stays)
    traced = _sub.trace_function(body, c_avals + x_avals)
    if trees["carry"] != c_tree:
        raise TypeError(
            f"scan: f must return a carry with the structure of init, {c_tree}; it returned "
            f"{trees['carry']}"
        )
    _coerce(traced, c_avals, "scan", "f's carry output", "init")
    outs = _control.scan(
        *traced.consts,
        *c_leaves,
        *x_leaves,
        body=_sub.close(traced, traced.consts, _label(f, "f")),
        n_consts=len(traced.consts),
        n_carry=len(c_leaves),
        length=length,
        reverse=bool(reverse),
    )
    n = len(c_leaves)
    carry = _weak_results(list(outs[:n]), stays)
    return tree.unflatten(c_tree, carry), tree.unflatten(trees["y"], list(outs[n:]))


def _pair(out: Any) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"scan: f must return a pair (carry, y); it returned {type(out).__name__}")
    return out[0], out[1]


def _scan_eager(f, init, x_leaves, x_tree, length, reverse):
    c_leaves, c_tree = tree.flatten(init)
    x_avals = [_ShapeDtype(x.shape[1:], x.dtype) for x in x_leaves]

    def probe(avals):
        n = len(c_leaves)
        return _sub.trace_function(
            lambda ts: tree.leaves(
                _pair(f(tree.unflatten(c_tree, ts[:n]), tree.unflatten(x_tree, ts[n:])))[0]
            ),
            avals + x_avals,
        )

    init = tree.unflatten(c_tree, _settle_weak(c_leaves, probe)[0])
    carry = init
    signature = _carry_signature(init)
    ys: list = [None] * length
    y_tree = None
    for i in range(length - 1, -1, -1) if reverse else range(length):
        new, y = _pair(f(carry, tree.unflatten(x_tree, [x[i] for x in x_leaves])))
        _check_carry("scan", "f's carry output", new, signature)
        carry = new
        y_leaves, t = tree.flatten(y)
        if y_tree is not None and t != y_tree:
            raise TypeError(f"scan: f returned y of structure {t} after {y_tree}")
        y_tree, ys[i] = t, y_leaves
    if length == 0:  # no step ran: trace one for the shapes of y
        c_leaves, _ = tree.flatten(init)
        avals = [_as_tensor(c).aval for c in c_leaves] + [
            _ShapeDtype(x.shape[1:], x.dtype) for x in x_leaves
        ]
        trees: dict[str, Any] = {}

        def body(ts):
            n = len(c_leaves)
            _, y = _pair(f(tree.unflatten(c_tree, ts[:n]), tree.unflatten(x_tree, ts[n:])))
            y_leaves, trees["y"] = tree.flatten(y)
            return y_leaves

        traced = _sub.trace_function(body, avals)
        empty = [
            fnp.zeros((0, *a.shape), dtype=a.dtype)
            for a in (traced.out_aval(k)[0] for k in range(len(traced.outvars)))
        ]
        return carry, tree.unflatten(trees["y"], empty)
    stacked = []
    for j in range(len(ys[0])):
        shapes = sorted({tuple(np.shape(y[j])) for y in ys})
        if len(shapes) > 1:
            raise _ShapeError(
                f"scan: f returned y leaf {j} with different shapes at different steps "
                f"({shapes}); every step's y must have one shape (a Python-number carry "
                "that becomes an array changes it: start from an array of the final shape)"
            )
        stacked.append(fnp.stack([y[j] for y in ys]))
    return carry, tree.unflatten(y_tree, stacked)
