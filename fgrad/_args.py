"""Argument normalisers: integers, sizes, shapes, axes, dtypes, flags, numbers and choices.

Every public function checks its static arguments here once, so that bad input raises an
error that names the function, the argument and the value, and says what to pass instead,
where Python would otherwise truncate a float (``int(2.9)``), iterate a float or raise
from deep inside a kernel. Integers follow numpy's rule for sizes: anything with
``__index__`` (Python and numpy integers, 0-d integer arrays) is an int; floats are not,
even ``2.0``; bools are not either (numpy refuses them as shapes and axes).

This module is layer 0: it imports only :mod:`fgrad.errors`, numpy and the standard
library, so every layer can use it.

Example:
    >>> from fgrad import _args
    >>> _args.shape((2, np.int64(3)), "reshape")
    (2, 3)
    >>> _args.shape((2.0, 3), "reshape")
    Traceback (most recent call last):
    ...
    fgrad.errors.DTypeError: reshape: shape must be an int or a tuple of ints, got (2.0, 3)
    (2.0 at position 0 is a float); pass ints, e.g. int(n) where n is integral
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from fgrad.errors import DTypeError, FgradError, ShapeError

__all__ = [
    "describe",
    "index",
    "size",
    "shape",
    "axis",
    "axes",
    "dtype",
    "flag",
    "real",
    "choice",
    "function",
    "names_errors",
    "renamed",
    "NUMERIC_KINDS",
]

# Values beyond int64 cannot be sizes, offsets or axes of any array (numpy would raise
# OverflowError from C, far from the call).
_INT64_MAX = 2**63 - 1


def describe(value: Any) -> str:
    """A short description of ``value`` for error messages (arrays by dtype and shape).

    Example:
        >>> describe(np.ones((2, 3)))
        'a float64 array of shape (2, 3)'
        >>> describe(1.5)
        '1.5 (a float)'
    """
    if _is_array(value):
        kind = "Tensor" if type(value).__name__ != "ndarray" else "array"
        return f"a {_dtype_name(value.dtype)} {kind} of shape {tuple(value.shape)}"
    if isinstance(value, (str, bytes)):
        text = repr(value)
        return (text if len(text) <= 40 else text[:37] + "...") + " (a str)"
    if value is None or isinstance(value, (bool, np.bool_)):
        return repr(value)
    if isinstance(value, (int, float, complex, np.number)):
        return f"{value!r} ({_a(type(value).__name__)})"
    if isinstance(value, type):
        return f"the type {value.__qualname__}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({_a(type(value).__qualname__)})"


def _is_array(value: Any) -> bool:
    """A Tensor or an array (numpy, cupy, Array API), not a numpy scalar or dtype."""
    return (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and not isinstance(value, (np.generic, np.dtype, type))
        and (hasattr(value, "__array__") or hasattr(value, "__array_namespace__"))
    )


def _dtype_name(dtype: Any) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:  # an Array API namespace's own dtype object
        return str(dtype)


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeio" else "a ") + noun


def _int_or_none(value: Any) -> int | None:
    """``operator.index(value)``, or None where ``value`` is no integer (a bool neither)."""
    if type(value) is int:  # the common case, first: these checks sit on eager hot paths
        return value
    if isinstance(value, (bool, np.bool_)):
        return None
    if _is_array(value) and _dtype_name(value.dtype) == "bool":
        return None  # a bool array or Tensor (its __index__ would give 0 or 1)
    try:
        return operator.index(value)
    except FgradError:
        raise  # a traced value: its ConcretizationError says what to do
    except (TypeError, ValueError):
        return None


def _why_not_int(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "a bool"
    if isinstance(value, (float, np.floating)):
        return "a float"
    if isinstance(value, (complex, np.complexfloating)):
        return "a complex number"
    if _is_array(value):
        if tuple(value.shape) != ():
            return f"an array of shape {tuple(value.shape)}"
        return f"a {_dtype_name(value.dtype)} array"
    if value is None:
        return "None"
    return _a(type(value).__qualname__)


def index(
    value: Any,
    fn: str,
    arg: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    none_ok: bool = False,
    bool_ok: bool = False,
    what: str = "an int",
) -> int | None:
    """``value`` as a Python int: ints, numpy integers and 0-d integer arrays; not floats.

    Args:
        value: the argument as given.
        fn: the public function's name (the message starts with it).
        arg: the argument's name.
        minimum, maximum: inclusive bounds (a ValueError names them).
        none_ok: None is allowed and returned as it is.
        bool_ok: bools are ints (as numpy's ``repeat`` or ``expand_dims`` take them).
        what: the description of what is expected, for the message.

    Raises:
        DTypeError: ``value`` is not an integer (a float, even ``2.0``, a bool, a string,
            an array of another shape or dtype).
        ValueError: ``value`` is outside ``[minimum, maximum]`` or beyond int64.

    Example:
        >>> index(np.int32(3), "tile", "reps")
        3
        >>> index(2.5, "repeat", "repeats")
        Traceback (most recent call last):
        ...
        fgrad.errors.DTypeError: repeat: repeats must be an int, got 2.5 (a float); pass an
        int, e.g. int(n) where n is integral
    """
    if value is None and none_ok:
        return None
    if bool_ok and isinstance(value, (bool, np.bool_)):
        return int(value)
    n = _int_or_none(value)
    if n is None:
        hint = "; pass an int, e.g. int(n) where n is integral"
        if value is None:
            hint = "; pass an int"
        raise DTypeError(f"{fn}: {arg} must be {what}, got {describe(value)}{hint}")
    if abs(n) > _INT64_MAX:
        raise ValueError(f"{fn}: {arg}={n} is beyond the int64 range of array sizes and indices")
    if minimum is not None and n < minimum:
        raise ValueError(f"{fn}: {arg} must be >= {minimum}, got {n}")
    if maximum is not None and n > maximum:
        raise ValueError(f"{fn}: {arg} must be <= {maximum}, got {n}")
    return n


def size(value: Any, fn: str, arg: str, *, minimum: int = 0, none_ok: bool = False) -> int | None:
    """A count or size: an int ``>= minimum`` (0 by default; 1 for features, channels...).

    Raises:
        DTypeError: ``value`` is not an integer.
        ValueError: ``value`` is below ``minimum``.

    Example:
        >>> size(3, "causal_mask", "seq_len")
        3
        >>> size(-1, "causal_mask", "seq_len")
        Traceback (most recent call last):
        ...
        ValueError: causal_mask: seq_len must be >= 0, got -1
    """
    return index(value, fn, arg, minimum=minimum, none_ok=none_ok)


def shape(value: Any, fn: str, arg: str = "shape", *, minus_one: bool = False) -> tuple[int, ...]:
    """A shape: an int or a sequence of ints, each ``>= 0`` (one ``-1`` if ``minus_one``).

    Raises:
        DTypeError: ``value`` or one of its entries is not an integer (floats, bools and
            strings are refused, as numpy refuses them as shapes).
        ShapeError: a negative size (other than one allowed ``-1``).

    Example:
        >>> shape(3, "zeros")
        (3,)
        >>> shape([2, -1], "reshape", minus_one=True)
        (2, -1)
    """
    if type(value) is tuple and all(type(d) is int and 0 <= d <= _INT64_MAX for d in value):
        return value  # the common case: a tuple of valid Python ints
    n = _int_or_none(value)
    if n is not None:
        dims = (n,)
    elif isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or (
        _is_array(value) and not _dtype_name(value.dtype).startswith(("int", "uint"))
    ):
        raise DTypeError(
            f"{fn}: {arg} must be an int or a tuple of ints, got {describe(value)}; pass "
            "ints, e.g. int(n) where n is integral"
        )
    else:
        dims = []
        for i, d in enumerate(value):
            m = _int_or_none(d)
            if m is None:
                raise DTypeError(
                    f"{fn}: {arg} must be an int or a tuple of ints, got {_short(value)} "
                    f"({_short(d)} at position {i} is {_why_not_int(d)}); pass ints, e.g. "
                    "int(n) where n is integral"
                )
            dims.append(m)
        dims = tuple(dims)
    for d in dims:
        if abs(d) > _INT64_MAX:
            raise ShapeError(f"{fn}: {arg} {_short(value)} has a size beyond the int64 range")
    negative = [d for d in dims if d < 0]
    if negative and not (minus_one and negative == [-1]):
        allowed = " (one -1 may stand for the inferred size)" if minus_one else ""
        raise ShapeError(
            f"{fn}: {arg} {_short(value)} has a negative size {negative[0]}; sizes must be "
            f">= 0{allowed}"
        )
    return dims


def _short(value: Any) -> str:
    if _is_array(value):
        return describe(value)
    text = repr(tuple(value)) if isinstance(value, list) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def axis(value: Any, fn: str, ndim: int, arg: str = "axis") -> int:
    """One axis of an array of ``ndim`` dimensions, made non-negative.

    Raises:
        DTypeError: ``value`` is not an integer.
        ShapeError: the axis is out of range.

    Example:
        >>> axis(-1, "cumsum", 2)
        1
    """
    if type(value) is int and -ndim <= value < ndim:  # the common case
        return value % ndim
    a = _int_or_none(value)
    if a is None:
        raise DTypeError(
            f"{fn}: {arg} must be an int, got {describe(value)}; pass an int in "
            f"[{-ndim}, {ndim}) or None where allowed"
        )
    if not -ndim <= a < ndim:
        raise ShapeError(
            f"{fn}: {arg} {a} is out of range for an array of {ndim} dimension"
            f"{'' if ndim == 1 else 's'}; pass an axis in [{-ndim}, {ndim})"
        )
    return a % ndim


def axes(
    value: Any, fn: str, ndim: int, arg: str = "axis", *, unique: bool = True
) -> tuple[int, ...]:
    """An int or a sequence of ints as non-negative axes, in the order given.

    Raises:
        DTypeError: ``value`` or an entry is not an integer.
        ShapeError: an axis is out of range, or repeated (with ``unique``).

    Example:
        >>> axes((0, -1), "sum", 3)
        (0, 2)
    """
    a = _int_or_none(value)
    if a is not None:
        return (axis(a, fn, ndim, arg),)
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable) or hasattr(
        value, "dtype"
    ):
        raise DTypeError(f"{fn}: {arg} must be an int or a tuple of ints, got {describe(value)}")
    items = list(value)
    out = []
    for item in items:
        if _int_or_none(item) is None:
            raise DTypeError(
                f"{fn}: {arg} must be an int or a tuple of ints, got {_short(value)} "
                f"({_short(item)} is {_why_not_int(item)})"
            )
        out.append(axis(item, fn, ndim, arg))
    if unique and len(set(out)) != len(out):
        raise ShapeError(f"{fn}: repeated axis in {arg}={_short(value)}")
    return tuple(out)


# dtype kinds a Tensor may have: bool, signed and unsigned integers, floats, complex.
NUMERIC_KINDS = frozenset("biufc")


def is_numeric(dt: np.dtype) -> bool:
    """Whether ``dt`` is a dtype a Tensor may have: bool, integers, floats, complex.

    bfloat16 (``ml_dtypes``, numpy kind ``V``) is not one yet: differentiation, promotion
    and the kernels know it as no floating type, so a bfloat16 Tensor would be treated as
    an integer (no tangent) and promote wrongly. ``fgrad.io`` reads bfloat16 files as
    float32 instead. (Checked by name, so ``ml_dtypes`` is never imported here: importing
    it costs about a second.)
    """
    return dt.kind in NUMERIC_KINDS


def dtype_hint(dt: Any) -> str:
    """What to do instead of a dtype no Tensor may have (empty when nothing special)."""
    if getattr(dt, "name", None) == "bfloat16":
        return "; bfloat16 is not a Tensor dtype yet: cast to float32 (fgrad.io loads bfloat16 files as float32)"
    return ""


def dtype(value: Any, fn: str, arg: str = "dtype", *, none_ok: bool = True) -> np.dtype | None:
    """A numeric numpy dtype from a name, a scalar type or a dtype; None stays None.

    Tensors hold numbers only (bool, integers, floats, complex): strings, objects, dates
    and raw bytes cannot be differentiated or computed with (nor, yet, bfloat16).

    Raises:
        DTypeError: ``value`` is no dtype, or a dtype that is not numeric.

    Example:
        >>> dtype("float32", "zeros")
        dtype('float32')
        >>> dtype(str, "zeros")
        Traceback (most recent call last):
        ...
        fgrad.errors.DTypeError: zeros: dtype str (<U0) is not numeric; Tensors hold bool,
        integer, floating or complex numbers
    """
    if value is None:
        if none_ok:
            return None
        raise DTypeError(f"{fn}: {arg} must be a dtype, got None; pass one such as 'float32'")
    if isinstance(value, (bool, int, float, complex, np.ndarray, np.generic)) or (
        not isinstance(value, (np.dtype, type))
        and (hasattr(value, "__array__") or hasattr(value, "__array_namespace__"))
    ):  # an array (a Tensor) is no dtype, though np.dtype would take its .dtype
        raise DTypeError(
            f"{fn}: {arg} must be a dtype (a name such as 'float32', a numpy dtype or scalar "
            f"type), got {describe(value)}"
        )
    try:
        dt = np.dtype(value)
    except (TypeError, ValueError):
        raise DTypeError(
            f"{fn}: {arg} must be a dtype (a name such as 'float32', a numpy dtype or scalar "
            f"type), got {describe(value)}"
        ) from None
    if not is_numeric(dt):
        name = getattr(value, "__name__", None) or str(value)
        raise DTypeError(
            f"{fn}: {arg} {name} ({dt.str}) is not numeric; Tensors hold bool, integer, "
            f"floating or complex numbers{dtype_hint(dt)}"
        )
    return dt


def flag(value: Any, fn: str, arg: str) -> bool:
    """A bool: Python and numpy bools (and the ints 0 and 1, as numpy takes them).

    Raises:
        DTypeError: anything else (a string, None, a float, an array).

    Example:
        >>> flag(np.True_, "sum", "keepdims")
        True
    """
    if value is False or value is True:  # the common case
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    n = _int_or_none(value) if not hasattr(value, "shape") else None
    if n in (0, 1):
        return bool(n)
    raise DTypeError(f"{fn}: {arg} must be True or False, got {describe(value)}")


def real(
    value: Any,
    fn: str,
    arg: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
    above: float | None = None,
    none_ok: bool = False,
) -> float | None:
    """A real Python number (int or float; not complex, not NaN) within the given bounds.

    ``minimum``/``maximum`` are inclusive, ``above``/``below`` exclusive.

    Raises:
        DTypeError: ``value`` is not a real number.
        ValueError: NaN, or outside the bounds.

    Example:
        >>> real(0.5, "dropout", "rate", minimum=0.0, below=1.0)
        0.5
    """
    if value is None and none_ok:
        return None
    ok_type = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    if not ok_type and _is_array(value):
        name = _dtype_name(value.dtype)
        ok_type = tuple(value.shape) == () and name.startswith(("int", "uint", "float"))
    if not ok_type:
        raise DTypeError(f"{fn}: {arg} must be a real number, got {describe(value)}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{fn}: {arg} must be a number, got nan")
    bounds = [
        (minimum, lambda: x >= minimum, ">="),
        (maximum, lambda: x <= maximum, "<="),
        (above, lambda: x > above, ">"),
        (below, lambda: x < below, "<"),
    ]
    for bound, holds, op in bounds:
        if bound is not None and not holds():
            raise ValueError(f"{fn}: {arg} must be {op} {bound}, got {value!r}")
    return x


def choice(value: Any, fn: str, arg: str, options: Iterable[Any], *, none_ok: bool = False) -> Any:
    """One of ``options`` (strings usually), compared by equality.

    Raises:
        ValueError: ``value`` is a string not among the options.
        DTypeError: ``value`` is not even of the options' type.

    Example:
        >>> choice("left", "searchsorted", "side", ("left", "right"))
        'left'
    """
    if value is None and none_ok:
        return None
    options = tuple(options)
    listed = ", ".join(repr(o) for o in options)
    if isinstance(value, (str, bytes)) or not all(isinstance(o, str) for o in options):
        try:
            if value in options:
                return value
        except (TypeError, ValueError):  # an array compares elementwise
            pass
        raise ValueError(f"{fn}: {arg} must be one of {listed}, got {describe(value)}")
    raise DTypeError(f"{fn}: {arg} must be one of {listed}, got {describe(value)}")


def function(value: Any, fn: str, arg: str, *, none_ok: bool = False) -> Callable | None:
    """A callable.

    Raises:
        DTypeError: ``value`` is not callable.

    Example:
        >>> function(abs, "map", "f") is abs
        True
    """
    if value is None and none_ok:
        return None
    if not callable(value):
        raise DTypeError(f"{fn}: {arg} must be a function, got {describe(value)}")
    return value


_PREFIXED = re.compile(r"^[A-Za-z_][\w.]*: ")


def renamed(e: BaseException, name: str) -> BaseException | None:
    """``e`` again with ``name: `` in front, for fgrad's own errors raised inside ``name``
    (its ShapeErrors and DTypeErrors, and messages in its ``fn: ...`` style): they come
    from the ops ``name`` is built of, and would name those only. None: leave ``e``."""
    msg = str(e)
    fgrad_style = isinstance(e, (ShapeError, DTypeError)) or _PREFIXED.match(msg)
    if not fgrad_style or msg.startswith(f"{name}:"):
        return None
    try:
        return type(e)(f"{name}: {msg}")
    except Exception:  # noqa: BLE001 - an error class with another signature
        return None


def names_errors(name: str) -> Callable:
    """Decorator: fgrad's errors raised inside the public function ``name`` name it
    (:func:`renamed`); the function is otherwise unchanged (``__wrapped__`` is the
    original, so ``inspect.unwrap`` finds where it is defined).

    Example:
        >>> @names_errors("trace")
        ... def f(x):
        ...     raise ShapeError("diagonal: needs 2 dimensions")
        >>> f(1)
        Traceback (most recent call last):
        ...
        fgrad.errors.ShapeError: trace: diagonal: needs 2 dimensions
    """

    def deco(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return f(*args, **kwargs)
            except (TypeError, ValueError) as e:
                new = renamed(e, name)
                if new is None:
                    raise
                raise new.with_traceback(e.__traceback__) from None

        return wrapper

    return deco
