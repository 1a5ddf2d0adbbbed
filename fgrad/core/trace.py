"""Traces and tracers: how a transform sees the ops a user function runs.

Each running transform owns a Trace with a *level*; nested transforms get higher levels.
An op applied to tracers is handed to the highest-level trace among its inputs
(:func:`bind`), which computes the result on the values one level down and wraps it in its
own tracer. That nesting is what lets ``grad(grad(f))`` and ``jvp(grad(f))`` compose.
Reference: the interpreter design of JAX's ``core.py``, in the plain form of
``docs/autodidax.py``.
"""

from __future__ import annotations

import threading
from typing import Any

from fgrad import backend
from fgrad.errors import ConcretizationError, TracerLeakError
from fgrad.tensor import ShapeDtype, Tensor

__all__ = ["Trace", "Tracer", "bind", "top_trace", "new_trace", "concrete_value", "current_level", "active_traces"]


class _ThreadTraces(threading.local):
    """The running traces of one thread, outermost first.

    Per thread, as in JAX: a transform running in one thread never sees (or pops) another
    thread's traces. (One module-level stack once let two threads nesting grad with
    closures pop each other's traces and return wrong gradients.)
    """

    def __init__(self) -> None:
        self.stack: list[Trace] = []


_THREAD = _ThreadTraces()


class Trace:
    """One running transform. Subclasses implement :meth:`process`."""

    __slots__ = ("level", "alive")

    def __init__(self) -> None:
        self.level = 0
        self.alive = True

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        """Apply ``op`` to ``args`` (some of them this trace's tracers)."""
        raise NotImplementedError


def active_traces() -> tuple[Trace, ...]:
    """This thread's running traces, outermost first."""
    return tuple(_THREAD.stack)


def current_level() -> int:
    """The level of this thread's innermost running trace (0 when none runs)."""
    return len(_THREAD.stack)


class new_trace:
    """Run the body with ``trace`` pushed as the innermost trace; kill it on exit.

    A class rather than a generator context manager: every transform call enters one, and
    this costs a fraction of ``contextlib``'s overhead.
    """

    __slots__ = ("trace",)

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self) -> Trace:
        trace = self.trace
        stack = _THREAD.stack
        trace.level = len(stack) + 1
        stack.append(trace)
        return trace

    def __exit__(self, *exc: object) -> None:
        stack = _THREAD.stack
        if stack and stack[-1] is self.trace:
            stack.pop()
        else:  # exits out of order (a generator left suspended inside a transform)
            stack.remove(self.trace)
        self.trace.alive = False


class Tracer(Tensor):
    """A value seen by a running transform. Behaves like a Tensor inside the function."""

    __slots__ = ("_trace",)
    # True for the differentiating modes' tracers: a Python number made from one would
    # silently drop its derivative, so float() refuses (as JAX's ConcretizationTypeError).
    differentiated = False

    @property
    def aval(self) -> ShapeDtype:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def weak(self) -> bool:
        """Whether the traced value is weakly typed (see ShapeDtype.weak)."""
        return self.aval.weak

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def device(self):
        # One level down at a time: an abstract tracer below (jit's GraphTracer) knows its
        # device without a concrete value.
        value = self._concrete()
        return value.device if isinstance(value, Tensor) else backend.device_of(value)

    def _concrete(self) -> Any:
        """The value one level down; raise ConcretizationError when there is none."""
        raise ConcretizationError(
            f"a traced value {self.aval} has no concrete value under "
            f"{type(self._trace).__name__}; mark the argument static (static_argnums) or "
            "use fgrad.numpy.where / control-flow primitives instead of Python control flow"
        )

    def __bool__(self) -> bool:
        return bool(concrete_value(self))

    def __float__(self) -> float:
        return float(_undifferentiated(self, "float()"))

    def __int__(self) -> int:
        return int(concrete_value(self))

    def __complex__(self) -> complex:
        return complex(_undifferentiated(self, "complex()"))

    def __index__(self) -> int:
        return concrete_value(self).__index__()

    def block_until_ready(self) -> Tracer:
        return self  # a traced value: nothing is computing it yet

    def item(self) -> Any:
        return _undifferentiated(self, ".item()").item()

    def tolist(self) -> Any:
        return _undifferentiated(self, ".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        try:
            concrete_value(self)
        except ConcretizationError:  # traced abstractly (jit, make_graph): no value to give
            raise ConcretizationError(
                f"cannot convert a traced value {self.aval} to a numpy array: it has no single "
                "value here (under jit or make_graph none yet, under vmap one per example). "
                "Use fgrad.numpy functions on it; under jit, a Python value can instead be "
                "marked static (static_argnums / static_argnames)"
            ) from None
        raise TypeError(
            f"cannot convert a traced value {self.aval} to a numpy array: that would drop it "
            "from the trace. Use fgrad.numpy functions on it, or fgrad.stop_gradient and "
            "convert the result outside the transform"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.aval}>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        # f"{x}" shows the tracer, as JAX does; f"{x:.3f}" needs a value, which an eager
        # transform (grad, jvp) has and an abstract one (jit) does not.
        if not spec:
            return repr(self)
        try:
            value = concrete_value(self)
        except ConcretizationError:
            raise ConcretizationError(
                f"cannot format a traced value {self.aval} with {spec!r}: it has no single "
                "value here (under jit none yet, under vmap one per example). Format it with "
                "f'{x}' (which shows its shape and dtype), or return it and format the result "
                "outside the transform"
            ) from None
        if getattr(value, "ndim", 0) == 0:
            return format(value.item() if hasattr(value, "item") else value, spec)
        raise TypeError(f"unsupported format string {spec!r} for a traced value {self.aval}")


def _undifferentiated(x: Tracer, what: str) -> Any:
    """``concrete_value(x)``, refused when a transform differentiates ``x``.

    int(), bool() and comparisons stay allowed (piecewise constant: their derivative is 0,
    so Python control flow works under grad, as in JAX).
    """
    t = x
    while isinstance(t, Tracer):
        if t.differentiated:
            raise ConcretizationError(
                f"{what} of a value being differentiated ({type(t).__name__} {t.aval}) would "
                "drop its derivative and give a silently wrong gradient. Keep it a Tensor "
                "(compute with fgrad.numpy), or use fgrad.stop_gradient(x) first if a constant "
                "is meant"
            )
        t = t._concrete()
    return t._data if isinstance(t, Tensor) else t


def concrete_value(x: Any) -> Any:
    """The backend array under any number of eager tracers.

    Raises:
        ConcretizationError: ``x`` is traced abstractly (for example under ``make_graph``).
    """
    while isinstance(x, Tracer):
        x = x._concrete()
    return x._data if isinstance(x, Tensor) else x


def top_trace(args: Any, what: Any = "an op") -> Trace | None:
    """The innermost live trace owning one of ``args`` (None when none is traced).

    ``what`` names the caller in the error: a string, or an op (formatted only on error,
    since this runs for every traced op).

    Raises:
        TracerLeakError: one of ``args`` is a tracer of a transform that has returned.
    """
    top = None
    for a in args:
        if isinstance(a, Tracer):
            trace = a._trace
            if not trace.alive:
                if not isinstance(what, str):
                    what = f"op {what.name!r}"
                raise TracerLeakError(
                    f"{what} got a tracer {a.aval} whose transform "
                    f"({type(trace).__name__}) has already returned; return values out of the "
                    "transformed function instead of storing tracers in outer variables"
                )
            if top is None or trace.level > top.level:
                top = trace
    return top


def bind(op: Any, args: tuple, params: dict) -> Any:
    """Hand ``op(*args, **params)`` to the innermost trace that owns one of ``args``."""
    return top_trace(args, op).process(op, args, params)
