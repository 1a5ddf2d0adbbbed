"""Printing and host callbacks that work inside transformed functions, as ``jax.debug``.

``print`` and ``callback`` record one effectful op (``debug_callback``,
:mod:`fgrad.ops.callback`) that calls a Python function on numpy copies of the values:

* eagerly, and under ``grad``/``vjp``/``jvp``, it runs at once on the primal values; it has
  no effect on derivatives (its inputs get no cotangent from it) and the backward pass
  does not run it again (nor do the derivative rules of ``lax.scan``/``cond`` bodies);
* under ``jit`` it runs at every call with that call's values, in program order, even
  though nothing reads its result (no pass drops, merges or reorders it); Python's
  ``print`` would run once, at trace time, and show a tracer;
* under ``vmap`` it runs once per example with that example's values, as JAX's
  ``debug.print`` does, in index order (JAX leaves the order unspecified); unmapped
  arguments are the same for every example.

Reference: ``jax.debug`` (https://docs.jax.dev/en/latest/debugging.html).
"""

from __future__ import annotations

import builtins as _builtins
import string as _string
from collections.abc import Callable as _Callable
from typing import Any as _Any

from fgrad import tree as _tree
from fgrad.ops.callback import Host as _Host
from fgrad.ops.callback import debug_callback as _debug_callback
from fgrad.ops.callback import stage_or_bind as _stage_or_bind
from fgrad.tensor import Tensor as _Tensor

__all__ = ["callback", "print"]


def __dir__() -> list[str]:
    return sorted(__all__)

_SCALARS = (bool, int, float, complex)


def _is_value(x: _Any) -> bool:
    return isinstance(x, _Tensor) or type(x) in _SCALARS or (
        hasattr(x, "shape") and hasattr(x, "dtype")
    )


def _record(fn: _Callable, name: str, args: tuple, kwargs: dict) -> None:
    """One ``debug_callback`` node calling ``fn(*args, **kwargs)`` on host values; leaves
    that are not arrays or numbers (strings, say) are passed through as they are."""
    leaves, in_tree = _tree.flatten((args, kwargs))
    where = [k for k, x in enumerate(leaves) if _is_value(x)]

    def flat_fn(*host: _Any) -> None:
        full = list(leaves)
        for k, h in zip(where, host):
            full[k] = h
        a, kw = _tree.unflatten(in_tree, full)
        fn(*a, **kw)

    _stage_or_bind(
        _debug_callback, [leaves[k] for k in where], {"callback": _Host(flat_fn, name), "levels": ()}
    )


def callback(callback: _Callable, *args: _Any, ordered: bool = False, **kwargs: _Any) -> None:
    """Call ``callback(*args, **kwargs)`` on the host, from eager code or inside ``jit``,
    ``vmap``, ``grad`` and control-flow bodies (see the module's notes).

    The function receives the same pytrees with each Tensor leaf as a numpy array (a
    copy it may keep); its return value is ignored.

    Args:
        callback: a Python function.
        *args: pytrees of Tensors, arrays, Python numbers (and other leaves, passed as
            they are).
        ordered: accepted for JAX compatibility; callbacks always run in program order.
        **kwargs: pytrees passed by keyword.

    Raises:
        TypeError: ``callback`` is not callable.

    Example:
        >>> seen = []
        >>> f = fgrad.jit(lambda x: (fgrad.debug.callback(seen.append, x), x * 2)[1])
        >>> _ = f(fnp.array(1.0)), f(fnp.array(2.0))
        >>> seen
        [array(1.), array(2.)]
    """
    if not callable(callback):
        raise TypeError(
            f"debug.callback: callback must be callable, got {type(callback).__name__}"
        )
    _record(callback, getattr(callback, "__name__", "callback"), args, kwargs)


def _check_specs(fmt: str, args: tuple, kwargs: dict) -> None:
    """Refuse, before anything is recorded, a format spec on a non-scalar array: Python's
    ``format`` would raise TypeError inside the callback (numpy's ``ndarray.__format__``
    takes a spec only for 0-d arrays), where it would surface as the op's failure."""
    auto = 0
    for _, field, spec, conversion in _string.Formatter().parse(fmt):
        if field is None:
            continue
        name = field.split(".", 1)[0].split("[", 1)[0]
        head: _Any = name
        if name == "":
            head, auto = auto, auto + 1
        elif name.isdigit():
            head = int(name)
        if not spec or conversion or name != field or "{" in spec:
            continue  # no spec, a conversion (!r), an attribute or index, a nested spec
        value = (args[head] if head < len(args) else None) if isinstance(head, int) else kwargs.get(head)
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape) > 0:
            raise TypeError(
                f"debug.print: the field {{{field}:{spec}}} gets an array of shape "
                f"{tuple(shape)} ({value.dtype}), and a non-scalar array cannot take a format "
                f"spec such as {spec!r} (Python's format of a numpy array raises TypeError, "
                "as JAX's debug.print does): use {} to print the whole array, or pass a "
                "scalar (an element, or a reduction)"
            )


def print(fmt: str, *args: _Any, ordered: bool = False, **kwargs: _Any) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the values the program computes, from
    eager code or inside ``jit``, ``vmap``, ``grad`` and control-flow bodies.

    Under ``jit`` it prints at every call with that call's values; under ``vmap`` once per
    example with that example's values (as JAX); under ``grad`` once, in the forward pass.

    Args:
        fmt: a ``str.format`` template; ``{}``/``{0}`` name ``args``, ``{x}`` ``kwargs``.
        *args: pytrees of Tensors, arrays or Python numbers, formatted as numpy arrays.
        ordered: accepted for JAX compatibility; prints always run in program order.
        **kwargs: pytrees formatted by name.

    Raises:
        TypeError: ``fmt`` is not a str; a field with a format spec (``{:.2f}``) names an
            array that is not a scalar (as Python's ``format`` of a numpy array and JAX's
            ``debug.print``: use ``{}``, or print an element), raised where ``print`` is
            called (for ``jit``, when it traces).
        ValueError: ``fmt`` is not a valid template (as ``str.format``).

    Example:
        >>> f = fgrad.jit(lambda x: (fgrad.debug.print("x = {x}", x=x), x + 1.0)[1])
        >>> _ = f(fnp.array([1.0, 2.0]))
        x = [1. 2.]
        >>> _ = fgrad.vmap(lambda x: fgrad.debug.print("{}", x))(fnp.array([3.0, 4.0]))
        3.0
        4.0
        >>> fgrad.debug.print("{:.2f}", fnp.array(1.0))  # a format spec needs a scalar
        1.00
    """
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: fmt must be a str, got {type(fmt).__name__}")
    _check_specs(fmt, args, kwargs)

    def show(*a: _Any, **kw: _Any) -> None:
        _builtins.print(fmt.format(*a, **kw))

    _record(show, "print", args, kwargs)
