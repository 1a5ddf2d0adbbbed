"""``make_graph``: look at the Node graph a function builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fgrad.core.graph import Graph, trace_to_graph

__all__ = ["make_graph"]


def make_graph(f: Callable) -> Callable[..., Graph]:
    """Make a function that traces ``f`` on its arguments' shapes and dtypes.

    No kernel runs: each op's shape rule gives its output's shape and dtype. Python control
    flow on traced values raises ``ConcretizationError``.

    Args:
        f: function of pytrees of Tensors.

    Returns:
        A function taking ``f``'s arguments (Tensors, arrays or ``ShapeDtype``) and returning
        the :class:`~fgrad.core.graph.Graph`.

    Raises:
        ConcretizationError: ``f`` needs a concrete value (``if x > 0:`` on a traced ``x``).

    Example:
        >>> g = fgrad.make_graph(lambda x: fnp.sum(fnp.sin(x) * 2.0))(fnp.ones(3))
        >>> print(g)  # doctest: +ELLIPSIS
        graph(a:f64[3]) {
          b:f64[3] = sin a  # ...
          c:f64[3] = multiply b 2.0  # ...
          d:f64[] = sum c [axes=(0,) keepdims=False]  # ...
          return d
        }
    """

    def make_graph_f(*args: Any) -> Graph:
        return trace_to_graph(f, *args)

    return make_graph_f
