"""``config.debug_nans``: swap every op's kernels for ones that check their outputs.

The eager fast paths look kernels up in each op's ``_kernels`` dict, so filling that same
dict with checking kernels makes every path check, at no cost when the flag is off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fgrad._config import watch
from fgrad.core.graph import Graph, Var, _user_source
from fgrad.core.op import REGISTRY, Op
from fgrad.errors import NaNError
from fgrad.tensor import ShapeDtype, Tensor

__all__ = ["set_debug_nans", "check_program", "check_step"]


def _has_nan(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return isinstance(x, (float, complex)) and x != x
    if np.dtype(dtype).kind not in "fc":
        return False
    return bool(x.__array_namespace__().any(x != x)) if hasattr(x, "__array_namespace__") else bool(np.isnan(x).any())


def _describe(arrays: Any) -> str:
    return ", ".join(
        str(ShapeDtype(tuple(a.shape), np.dtype(a.dtype))) if hasattr(a, "shape") else repr(a)
        for a in arrays
    )


def check_step(op_name: str, args: Any, outs: Any, where: str) -> None:
    """Raise NaNError when one step made NaN from NaN-free inputs; ``where`` ends the
    message (the traced line and the function it belongs to)."""
    if any(_has_nan(o) for o in outs) and not any(_has_nan(a) for a in args):
        raise NaNError(
            f"op {op_name!r} produced NaN from inputs without NaN ({_describe(args)}) {where}"
        )


def check_program(graph: Graph, inputs: list, outputs: list, name: str) -> None:
    """Raise NaNError when a compiled program returned NaN that its inputs did not hold.

    The program runs its kernels directly, so this looks only at its outputs and then, as
    JAX does, re-runs the graph op by op on the same inputs to name the first op that
    produced a NaN and the line that traced it.
    """
    if not any(_has_nan(o) for o in outputs) or any(_has_nan(x) for x in inputs):
        return
    env = {id(v): x for v, x in zip(graph.invars, inputs)}

    def read(v: Any) -> Any:
        if isinstance(v, Var):
            return env[id(v)]
        return v._data if isinstance(v, Tensor) else v

    with np.errstate(invalid="ignore", divide="ignore"):
        for node in graph.nodes:
            args = [read(v) for v in node.inputs]
            out = node.op.eval_arrays(*args, **node.params)
            outs = out if node.op.multiple_results else (out,)
            where = f"in {name}, traced at {node.source or 'an unknown line'}"
            check_step(node.op.name, args, outs, where)
            for v, o in zip(node.outputs, outs):
                env[id(v)] = o
    if any(_has_nan(read(v)) for v in graph.outvars):
        return  # from a NaN constant (fnp.mean of an empty array divides by one): no error eager
    raise NaNError(
        f"{name} returned NaN from inputs without NaN, but no single op did when re-run one "
        "by one (the compiled program rounds differently); run the function without jit "
        "to find it"
    )


def _checking(op: Op, kernel: Any) -> Any:
    def run(*arrays: Any, **params: Any) -> Any:
        with np.errstate(invalid="ignore", divide="ignore"):  # the check below says more
            out = kernel(*arrays, **params)
        outs = out if op.multiple_results else (out,)
        if any(_has_nan(o) for o in outs) and not any(_has_nan(a) for a in arrays):
            raise NaNError(
                f"op {op.name!r} produced NaN from inputs without NaN ({_describe(arrays)}) "
                f"at {_user_source()}"
            )
        return out

    return run


_ORIGINAL: dict[str, dict] = {}  # op name -> its kernels before checking was switched on


def set_debug_nans(enabled: bool) -> None:
    """Install (or remove) NaN-checking kernels on every registered op.

    Programs that ``jit`` compiled call kernels directly; ``jit`` checks their outputs
    instead (:func:`check_program`).
    """
    for op in REGISTRY.values():
        if enabled and op.name not in _ORIGINAL:
            _ORIGINAL[op.name] = dict(op._kernels)
            checked = {typ: _checking(op, k) for typ, k in op._kernels.items()}
            op._kernels.clear()  # the same dict: the fast paths hold its bound .get
            op._kernels.update(checked)
        elif not enabled and op.name in _ORIGINAL:
            op._kernels.clear()
            op._kernels.update(_ORIGINAL.pop(op.name))


watch("debug_nans", set_debug_nans)
