"""Docstring templates shared by op families, so each op states shapes, dtypes and errors."""

from __future__ import annotations


_PROMOTES = """Integer and bool inputs are
            promoted to the smallest float that holds them, as in numpy: bool and 8-bit
            integers give float16, 16-bit integers float32, wider integers float64."""


def unary_doc(
    summary: str, example: str, *, domain: str = "", extra: str = "", keeps_dtype: bool = False
) -> str:
    """Docstring of an elementwise op with one input (``keeps_dtype``: the result has the
    input's dtype, integers included, instead of a floating one)."""
    dom = f" Defined on {domain}; outside it the result is NaN, as in numpy." if domain else ""
    promotes = "Any dtype." if keeps_dtype else _PROMOTES
    result = "the dtype of ``x``" if keeps_dtype else "floating dtype of ``x``"
    return f"""{summary}

    Elementwise.{dom}{(' ' + extra) if extra else ''}

    Args:
        x: Tensor, array or Python scalar of any shape. {promotes}

    Returns:
        Tensor of ``x.shape``, {result}.

    Raises:
        DTypeError: ``x`` has a dtype the op does not accept.

    Example:
{_indent(example)}
    """


def binary_doc(summary: str, example: str, *, extra: str = "") -> str:
    """Docstring of a broadcasting elementwise op with two inputs."""
    return f"""{summary}

    Elementwise with numpy broadcasting; Python scalars are weakly typed, so
    ``float32_tensor OP 2.0`` stays float32.{(' ' + extra) if extra else ''}

    Args:
        x: Tensor, array or Python scalar.
        y: Tensor, array or Python scalar; shape broadcastable with ``x``.

    Returns:
        Tensor of the broadcast shape and the promoted dtype.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: the dtypes cannot be combined by this op.

    Example:
{_indent(example)}
    """


def nondiff_doc(
    summary: str, example: str, *, returns: str, nargs: int = 1, extra: str = ""
) -> str:
    """Docstring of a piecewise-constant or boolean elementwise op (no derivative)."""
    if nargs == 1:
        arg_text = "x: Tensor, array or Python scalar of any shape."
    else:
        arg_text = (
            "x: Tensor, array or Python scalar.\n"
            "        y: Tensor, array or Python scalar; shape broadcastable with ``x``."
        )
    broadcasting = " with numpy broadcasting" if nargs > 1 else ""
    return f"""{summary}

    Elementwise{broadcasting}. It carries no derivative: the result is not traced, so
    gradients through it are zero.{(" " + extra) if extra else ""}

    Args:
        {arg_text}

    Returns:
        {returns}

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: a dtype the op does not accept.

    Example:
{_indent(example)}
    """


def contract(summary: str, example: str, *, user: str = "") -> str:
    """The short developer docstring of an op that users reach through a wrapper
    (``user``: the function they call, which carries the user documentation)."""
    see = f"\n\n    Users call ``{user}``, whose docstring documents it." if user else ""
    return f"""{summary}{see}

    Example:
{_indent(example)}
    """


def _indent(example: str) -> str:
    return "\n".join("        " + line for line in example.strip("\n").splitlines())
