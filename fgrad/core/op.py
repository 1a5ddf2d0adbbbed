"""Op declaration: each op is declared once, with every rule the library needs.

``defop`` takes the forward kernel (written against the array namespace ``xp``), the
shape/dtype rule, the JVP and VJP rules (written with fgrad ops, so they are differentiable
again), and a :class:`Check` that tells the registry-wide gradient test how to sample inputs.
See STYLE.md section 2.2 for the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fgrad import backend
from fgrad.core.trace import Tracer, bind
from fgrad.tensor import ShapeDtype, Tensor

__all__ = ["Op", "Check", "defop", "REGISTRY", "LINEAR"]

REGISTRY: dict[str, Op] = {}
LINEAR = "linear"

_XP_BY_TYPE = backend._XP_BY_TYPE
_SCALARS = frozenset((int, float, complex, bool))


@dataclass(frozen=True)
class Check:
    """How the registry-wide test samples an op's inputs.

    Attributes:
        shapes: candidate input shape tuples, one shape per positional input.
        domain: ``(low, high)`` of uniform samples, chosen to avoid kinks and poles.
        params: candidate keyword-parameter dicts.
        make_args: optional ``(rng, shapes) -> args`` for inputs that need structure
            (positive-definite matrices, integer indices); overrides ``domain``.
        order: highest derivative order checked against finite differences.
        tol: tolerance override; a comment at the call site must say why.
        dtype: sample dtype (float64 unless the op needs another).
        strict: run the forward kernel through ``array_api_strict`` too (False when the
            op uses a name outside the Array API standard).
    """

    shapes: tuple = (((),), ((3,),), ((2, 3),))
    domain: tuple[float, float] = (-2.0, 2.0)
    params: tuple = ({},)
    make_args: Callable | None = None
    order: int = 2
    tol: float | None = None
    dtype: Any = np.float64
    strict: bool = True


class Op:
    """A primitive: forward kernel plus shape, JVP and VJP rules.

    Calling an op on Tensors, arrays and Python scalars runs the kernel eagerly; on tracers
    it hands the call to the innermost running transform.
    """

    __slots__ = (
        "name",
        "kernel",
        "aval_rule",
        "jvp",
        "vjp",
        "nondiff",
        "multiple_results",
        "check",
        "doc",
    )

    def __init__(self, name, kernel, aval_rule, jvp, vjp, nondiff, multiple_results, check):
        self.name = name
        self.kernel = kernel
        self.aval_rule = aval_rule
        self.jvp = jvp
        self.vjp = vjp
        self.nondiff = nondiff
        self.multiple_results = multiple_results
        self.check = check
        self.doc = None

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.doc

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __call__(self, *args: Any, **params: Any) -> Any:
        # The eager hot path: one pass over the inputs, a dict lookup for xp, one kernel call.
        datas = []
        xp = None
        for a in args:
            t = type(a)
            if t is Tensor:
                a = a._data
            elif t in _SCALARS:
                datas.append(a)
                continue
            elif isinstance(a, Tracer):
                return bind(self, args, params)
            elif isinstance(a, Tensor):
                a = a._data
            if xp is None:
                xp = _XP_BY_TYPE.get(type(a)) or backend.namespace_of(a)
            datas.append(a)
        try:
            out = self.kernel(xp or np, *datas, **params)
        except Exception as err:  # try is free until it raises (CPython 3.11)
            raise _explain(self, args, params, err) from err
        if self.multiple_results:
            return tuple(_wrap(o) for o in out)
        t = object.__new__(Tensor)
        t._data = out
        return t

    def eval_arrays(self, *datas: Any, **params: Any) -> Any:
        """Run the kernel on backend arrays and Python scalars; returns arrays."""
        xp = np
        for d in datas:
            if type(d) not in _SCALARS:
                xp = backend.namespace_of(d)
                break
        return self.kernel(xp, *datas, **params)

    def abstract_eval(self, *avals: Any, **params: Any) -> Any:
        """The output aval(s) from input avals (ShapeDtype or Python scalars)."""
        if self.aval_rule is not None:
            return self.aval_rule(*avals, **params)
        return _aval_by_running(self, avals, params)


def _describe(x: Any) -> str:
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        return str(ShapeDtype(tuple(x.shape), np.dtype(x.dtype)))
    return repr(x)


def _explain(op: Op, args: tuple, params: dict, err: Exception) -> Exception:
    """Turn a kernel's exception into one that names the op, shapes and dtypes."""
    from fgrad.errors import DTypeError, FgradError, ShapeError

    if isinstance(err, FgradError):
        return err
    if op.aval_rule is not None:  # the shape rule usually says more than the kernel
        try:
            op.aval_rule(*[a.aval if isinstance(a, Tensor) else a for a in args], **params)
        except FgradError as rule_err:
            return rule_err
        except Exception:
            pass
    inputs = ", ".join(_describe(a) for a in args)
    extra = f" with {params}" if params else ""
    msg = f"op {op.name!r} failed on inputs ({inputs}){extra}: {err}"
    if isinstance(err, TypeError):
        return DTypeError(msg)
    if isinstance(err, ValueError) and not isinstance(err, np.linalg.LinAlgError):
        return ShapeError(msg)
    return type(err)(msg) if isinstance(err, (ArithmeticError, np.linalg.LinAlgError)) else err


def _wrap(data: Any) -> Tensor:
    t = object.__new__(Tensor)
    t._data = data
    return t


def _aval_by_running(op: Op, avals: tuple, params: dict) -> Any:
    """Fallback shape rule: run the kernel on zero-strided dummies (no real memory)."""
    dummies = [
        np.broadcast_to(np.ones((), a.dtype), a.shape) if isinstance(a, ShapeDtype) else a
        for a in avals
    ]
    with np.errstate(all="ignore"):
        out = op.kernel(np, *dummies, **params)
    if op.multiple_results:
        return tuple(ShapeDtype(np.shape(o), np.result_type(o)) for o in out)
    return ShapeDtype(np.shape(out), np.result_type(out))


def defop(
    name: str,
    *,
    kernel: Callable,
    aval: Callable | None = None,
    jvp: Any = None,
    vjp: Any = None,
    nondiff: bool = False,
    multiple_results: bool = False,
    check: Check | None = None,
    doc: str | None = None,
) -> Op:
    """Declare an op and add it to :data:`REGISTRY`.

    Args:
        name: the numpy / Array API name, lower_snake.
        kernel: ``kernel(xp, *arrays, **params) -> array``; uses only ``xp``.
        aval: ``aval(*avals, **params) -> ShapeDtype``; when None the kernel is run on
            zero-strided dummies to find the output shape (fine for cheap shape ops).
        jvp: tuple with one rule ``(t, out, *primals, **params) -> tangent_out`` per input
            (None where not differentiable), or ``LINEAR`` for an op linear in its only
            differentiable input (the first).
        vjp: tuple with one rule ``(ct, out, *primals, **params) -> cotangent`` per input,
            or one callable returning a tuple of cotangents (when inputs share work).
        nondiff: True for ops with no derivative (comparisons, argmax, floor).
        multiple_results: the kernel returns a tuple of arrays.
        check: how the registry test samples inputs.
        doc: the public docstring.

    Raises:
        ValueError: ``name`` is already registered, or a differentiable op lacks rules.
    """
    if name in REGISTRY:
        raise ValueError(f"defop: op {name!r} is already registered")
    if not nondiff and (jvp is None or vjp is None):
        raise ValueError(f"defop: op {name!r} needs jvp and vjp rules, or nondiff=True")
    op = Op(name, kernel, aval, jvp, vjp, nondiff, multiple_results, check)
    op.doc = doc
    REGISTRY[name] = op
    return op
