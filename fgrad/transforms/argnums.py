"""Normalising ``*_argnums`` / ``*_argnames`` arguments of every transform (grad, jacrev,
jit, make_graph, ...): one normaliser, so they accept and refuse the same values.

As JAX: one position or name, or a sequence of them; positions may be any integer type
(``operator.index``: numpy integers too) but not bools; None means none. A wrong type
raises a TypeError naming the transform and pointing to the other parameter (a name
given to ``static_argnums`` belongs in ``static_argnames``).
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["as_names", "as_positions", "is_single", "check_function"]


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
