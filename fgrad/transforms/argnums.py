"""Normalising ``*_argnums`` / ``*_argnames`` arguments of every transform (grad, jacrev,
jit, make_graph, ...): one normaliser, so they accept and refuse the same values.

As JAX: one position or name, or a sequence of them; positions may be any integer type
(``operator.index``: numpy integers too) but not bools; None means none. A wrong type
raises a TypeError naming the transform and pointing to the other parameter (a name
given to ``static_argnums`` belongs in ``static_argnames``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree

__all__ = [
    "as_names",
    "as_positions",
    "check_diff_inputs",
    "check_function",
    "diff_positions",
    "is_single",
    "partial_args",
    "split_aux",
]


def as_positions(value: Any, where: str, what: str, other: str | None) -> tuple[int, ...]:
    """``value`` (an integer, a sequence of integers, or None) as a tuple of ints.

    Args:
        value: what the user passed as ``what``.
        where: the transform, for messages (``"jit(f)"``).
        what: the parameter (``"static_argnums"``).
        other: the parameter for names (``"static_argnames"``), or None without one.

    Raises:
        TypeError: an item is not an integer (or is a bool).

    Example:
        >>> from fgrad.transforms.argnums import as_positions
        >>> as_positions(np.int64(1), "jit(f)", "static_argnums", "static_argnames")
        (1,)
        >>> as_positions("n", "jit(f)", "static_argnums", "static_argnames")
        Traceback (most recent call last):
        ...
        TypeError: jit(f): static_argnums takes positions (an int or a sequence of ints), got 'n'; to name a parameter use static_argnames='n'
    """
    items = _items(value)
    out = []
    for x in items:
        try:
            if isinstance(x, (bool, str, bytes)):
                raise TypeError
            out.append(operator.index(x))
        except TypeError:
            named = isinstance(x, str) and other is not None
            hint = f"to name a parameter use {other}={x!r}" if named else "pass ints"
            raise TypeError(
                f"{where}: {what} takes positions (an int or a sequence of ints), got "
                f"{value!r}; {hint}"
            ) from None
    return tuple(out)


def as_names(value: Any, where: str, what: str, other: str) -> tuple[str, ...]:
    """``value`` (a str, a sequence of strs, or None) as a tuple of strs.

    Args and errors as :func:`as_positions`, with ``other`` the parameter for positions.

    Example:
        >>> from fgrad.transforms.argnums import as_names
        >>> as_names("mode", "jit(f)", "static_argnames", "static_argnums"), as_names(None, "", "", "")
        (('mode',), ())
    """
    items = _items(value)
    wrong = [x for x in items if not isinstance(x, str)]
    if wrong:
        x = wrong[0]
        positional = not isinstance(x, bool) and hasattr(x, "__index__")
        hint = f"to give a position use {other}={x!r}" if positional else "pass parameter names"
        raise TypeError(
            f"{where}: {what} takes parameter names (a str or a sequence of strs), got "
            f"{value!r}; {hint}"
        )
    return tuple(items)


def check_function(f: Any, where: str) -> None:
    """Raise a TypeError naming the transform ``where`` when ``f`` is not callable (as
    JAX does when the transform is made, not when it is first called).

    Example:
        >>> from fgrad.transforms.argnums import check_function
        >>> check_function(3, "grad")
        Traceback (most recent call last):
        ...
        TypeError: grad: expected a function to transform, got int 3
    """
    if not callable(f):
        raise TypeError(f"{where}: expected a function to transform, got {type(f).__name__} {f!r:.60}")


def is_single(value: Any) -> bool:
    """Whether ``value`` is one position or name (the transform then returns one result,
    not a tuple of them), as opposed to a sequence.

    Example:
        >>> from fgrad.transforms.argnums import is_single
        >>> is_single(np.int64(1)), is_single((0, 1))
        (True, False)
    """
    return isinstance(value, (str, bytes)) or not hasattr(value, "__iter__")


def _items(value: Any) -> tuple:
    if value is None:
        return ()
    return (value,) if is_single(value) else tuple(value)


def diff_positions(argnums: Any, nargs: int, name: str) -> tuple[int, ...]:
    """``argnums`` of a differentiating transform as non-negative positions, each once.

    Raises:
        TypeError: an item is not an integer.
        ValueError: a position is out of range for ``nargs`` arguments, or repeated.
    """
    # A plain int (the common call) skips the general normaliser.
    nums = (argnums,) if type(argnums) is int else as_positions(argnums, name, "argnums", None)
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(
                f"{name}: argnums {argnums} out of range for a function called with {nargs} "
                "positional arguments"
            )
    nums = tuple(n % nargs for n in nums)
    if len(set(nums)) != len(nums):
        raise ValueError(f"{name}: argnums {argnums} names an argument twice; list each position once")
    return nums


def partial_args(f: Callable, args: Sequence[Any], nums: Sequence[int], kwargs: dict) -> Callable:
    """``f`` as a function of the arguments at positions ``nums`` only; the rest are fixed."""

    def f_of_diff_args(*diff_args):
        full = list(args)
        for n, a in zip(nums, diff_args):
            full[n] = a
        return f(*full, **kwargs)

    return f_of_diff_args


def split_aux(result: Any) -> tuple[Any, Any]:
    """``(output, aux)`` from what a ``has_aux=True`` function returned.

    Raises:
        TypeError: it did not return a pair.
    """
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        aval = getattr(result, "aval", None)
        got = f"a Tensor {aval}" if aval is not None else type(result).__name__
        raise TypeError(
            f"has_aux=True requires the function to return a pair (output, aux); it returned {got}"
        )
    return result[0], result[1]


def check_diff_inputs(
    args: Sequence[Any], nums: Sequence[int], name: str, aval_of: Callable, holomorphic: bool = False
) -> None:
    """Raise a TypeError naming ``name`` and the argument when a differentiated leaf is not
    floating (or, with ``holomorphic``, not complex). ``aval_of(leaf, name)`` gives a leaf's
    aval (and explains a leaf that is no array).
    """
    for n, arg in zip(nums, args):
        for leaf in tree.leaves(arg):
            aval = aval_of(leaf, name)
            kind = np.dtype(aval.dtype).kind
            if holomorphic and kind != "c":
                raise TypeError(
                    f"{name} with holomorphic=True needs complex inputs; argument {n} has a leaf "
                    f"{aval}. Cast it with .astype('complex128') or drop holomorphic=True"
                )
            if kind not in "fc":
                raise TypeError(
                    f"{name}: argument {n} has a leaf {aval} of dtype {aval.dtype}; gradients are "
                    "only defined for floating or complex inputs. Pass floats (for example "
                    "x.astype('float32')), leave this argument out of argnums, or pass "
                    "allow_int=True for zero gradients on integer leaves"
                )
