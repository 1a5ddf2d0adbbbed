"""Install Tensor's operators and methods from the ``fgrad.numpy`` namespace.

Done here rather than in ``tensor.py`` so the Tensor layer does not import the ops
(JAX installs its array methods the same way). A method whose function a namespace does
not define yet is left out, so a missing op surfaces as AttributeError, not a wrong answer.
"""

from __future__ import annotations

from types import FunctionType, ModuleType

import numpy as np

from fgrad.core.trace import Tracer
from fgrad.core.staging import weak
from fgrad.core.op import bool_as_int
from fgrad.tensor import Tensor

_BINARY = {
    "__add__": "add",
    "__sub__": "subtract",
    "__mul__": "multiply",
    "__truediv__": "divide",
    "__floordiv__": "floor_divide",
    "__mod__": "remainder",
    "__pow__": "power",
    "__matmul__": "matmul",
    "__lt__": "less",
    "__le__": "less_equal",
    "__gt__": "greater",
    "__ge__": "greater_equal",
    "__eq__": "equal",
    "__ne__": "not_equal",
    "__and__": "_logical_and_or_bitwise_and",
    "__or__": "_logical_or_or_bitwise_or",
    "__xor__": "_logical_xor_or_bitwise_xor",
    "__lshift__": "left_shift",
    "__rshift__": "right_shift",
}
_REFLECTED = {
    "__radd__": "add",
    "__rsub__": "subtract",
    "__rmul__": "multiply",
    "__rtruediv__": "divide",
    "__rfloordiv__": "floor_divide",
    "__rmod__": "remainder",
    "__rpow__": "power",
    "__rmatmul__": "matmul",
    "__rand__": "_logical_and_or_bitwise_and",
    "__ror__": "_logical_or_or_bitwise_or",
    "__rxor__": "_logical_xor_or_bitwise_xor",
    "__rlshift__": "left_shift",
    "__rrshift__": "right_shift",
}
_UNARY = {
    "__neg__": "negative",
    "__pos__": "positive",
    "__abs__": "abs",
    "__invert__": "invert",
    "__getitem__": "_getitem",
}
_METHODS = (
    "reshape",
    "astype",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "var",
    "std",
    "argmax",
    "argmin",
    "all",
    "any",
    "cumsum",
    "cumprod",
    "transpose",
    "squeeze",
    "flatten",
    "ravel",
    "conj",
    "conjugate",
    "dot",
    "clip",
    "round",
    "repeat",
    "swapaxes",
    "diagonal",
    "trace",
    "take",
    "sort",
    "argsort",
    "nonzero",
    "searchsorted",
)
_PROPERTIES = {"T": "_T", "mT": "_mT", "real": "real", "imag": "imag", "at": "_at"}


def _entry(fn, kind: str):
    """The fastest faithful callable for a Tensor method backed by ``fn`` (or None).

    An op of one or two inputs provides closures made for this (fgrad.core.op._specialise),
    and a plain Python function can itself be the method, since ``x.method(*a)`` calls it as
    ``fn(x, *a)``; either way ``x + y`` costs no extra Python frame (the eager hot path, docs/internals.md).
    """
    fast = getattr(fn, "_fast", None)
    if fast:
        return fast.get("unary" if kind == "method" else kind)
    if kind != "reflected" and isinstance(fn, FunctionType):
        return fn
    return None


def _binary(fn):
    def method(self, other):
        return fn(self, other)

    return method


def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    return method


def _unary(fn):
    def method(self, *args):
        return fn(self, *args)

    return method


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__doc__ = fn.__doc__
    return method


def _round_method(fn):
    """``round(x)`` and ``round(x, n)``: a Tensor, as JAX's (not a Python number)."""

    def __round__(self, ndigits=None):
        out = fn(self, 0 if ndigits is None else ndigits)
        if self.weak:  # jit's traced Python float: Python's round, an int without ndigits
            return weak(out.astype(np.int64)) if ndigits is None else weak(out)
        return out

    return __round__


# numpy's own np.sum(t), np.mean(t), ... call these methods with ``out=None`` (and ``dtype``
# for some); accept that call, so numpy functions work on Tensors as on arrays.
_NUMPY_REDUCTIONS = frozenset(
    ("sum", "prod", "mean", "max", "min", "var", "std", "all", "any", "argmax", "argmin",
     "cumsum", "cumprod")
)


def _reduction_method(fn):
    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise TypeError(f"{fn.__name__}: Tensors are immutable, so out= is not supported")
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


# Python's unary operators, ``x.real``, ``x.imag`` and ``x.conjugate()`` of jit's traced
# Python floats are Python arithmetic, as on the float eagerly: the result stays weak (Python
# bools are ints to ``-``, ``+``, ``abs`` and ``~``). fnp.negative, fnp.real, ... are ops,
# whose results are arrays, as eagerly. So tracers get these methods of their own.
_PY_UNARY = {"__neg__": True, "__pos__": True, "__abs__": True, "__invert__": True, "conjugate": False}
_PY_PARTS = ("real", "imag")


def _python_unary(tensor_method, ints: bool):
    def method(self):
        if self.weak:
            return weak(tensor_method(bool_as_int(self) if ints else self))
        return tensor_method(self)

    method.__doc__ = getattr(tensor_method, "__doc__", None)
    return method


def _namespace_method(ns: ModuleType):
    """``x.__array_namespace__()``: the Array API's way to find the functions for ``x``."""
    from fgrad.numpy._array_api import _check_api_version

    def __array_namespace__(self, /, *, api_version=None):
        """The Array API namespace of Tensors: ``fgrad.numpy``.

        Args:
            api_version: None (the newest version fgrad.numpy follows, 2025.12) or a
                version string of the standard, such as ``"2024.12"``.

        Raises:
            ValueError: a version of the standard fgrad.numpy does not follow.
        """
        _check_api_version(api_version, "Tensor.__array_namespace__")
        return ns

    return __array_namespace__


def install(ns: ModuleType) -> None:
    """Set Tensor's operators and methods to the functions of namespace ``ns``."""
    Tensor.__array_namespace__ = _namespace_method(ns)
    tables = (
        (_BINARY, _binary, "operator"),
        (_REFLECTED, _reflected, "reflected"),
        (_UNARY, _unary, "unary"),
    )
    for table, make, kind in tables:
        for dunder, name in table.items():
            fn = getattr(ns, name, None)
            if fn is not None:
                setattr(Tensor, dunder, _entry(fn, kind) or make(fn))
    for name in _METHODS:
        fn = getattr(ns, name, None)
        if fn is not None:
            method = _reduction_method(fn) if name in _NUMPY_REDUCTIONS else None
            setattr(Tensor, name, method or _entry(fn, "method") or _method(fn))
    for attr, name in _PROPERTIES.items():
        fn = getattr(ns, name, None)
        if fn is not None:
            setattr(Tensor, attr, property(fn))
            if attr in _PY_PARTS:  # tracers only: plain Tensors skip the check
                setattr(Tracer, attr, property(_python_unary(fn, False)))
    if getattr(ns, "round", None) is not None:
        Tensor.__round__ = _round_method(ns.round)
    # divmod(x, y) is (x // y, x % y), as numpy's divmod: through the operators, so jit's
    # traced Python floats get Python's divmod.
    Tensor.__divmod__ = lambda self, other: (self // other, self % other)
    Tensor.__rdivmod__ = lambda self, other: (other // self, other % self)
    for dunder, ints in _PY_UNARY.items():  # ``-lr`` of jit's traced Python float
        if dunder in Tensor.__dict__:
            setattr(Tracer, dunder, _python_unary(Tensor.__dict__[dunder], ints))
    Tensor.__hash__ = None  # defining __eq__ must not make Tensors hashable
