"""Traits: named sets of ops that graph passes and the program builder ask about.

Each set is defined once, in words, and holds Op objects, not names: a misspelt or
renamed op fails here at import instead of silently never matching (a table of names once
listed ``pow``, ``atan2``, ``copysign`` and ``nextafter``, none of them an op, so ``jit``
kept a ``broadcast_to`` before ``power`` that it removed before ``multiply``). Passes
compare ops by identity (``node.op is reshape``) for the same reason.

Reference: tinygrad's ``GroupOp`` (``tinygrad/uop/__init__.py``).
"""

from __future__ import annotations

from fgrad.core.op import REGISTRY, Op
from fgrad.ops import conv, elementwise, indexing, linalg, nn, random, reduction, shape, sorting  # noqa: F401  (every op registered)

__all__ = ["BROADCASTING", "COMMUTATIVE", "FRESH", "VIEWS", "ops_named"]


def ops_named(*names: str) -> frozenset[Op]:
    """The registered ops called ``names``.

    Raises:
        KeyError: a name is no registered op (the error lists every such name).
    """
    missing = [n for n in names if n not in REGISTRY]
    if missing:
        raise KeyError(f"traits: {missing} name no registered op")
    return frozenset(REGISTRY[n] for n in names)


# The same result, bit for bit, with the two inputs swapped (IEEE addition and
# multiplication commute; maximum and minimum do not, for signed zeros and NaN payloads).
COMMUTATIVE = ops_named(
    "add",
    "multiply",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
)

# Elementwise ops whose inputs broadcast against each other by numpy's rules.
BROADCASTING = COMMUTATIVE | ops_named(
    "subtract",
    "divide",
    "maximum",
    "minimum",
    "power",
    "where",
    "hypot",
    "logaddexp",
    "remainder",
    "floor_divide",
    "arctan2",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
)

# Where a weakly typed input of a broadcasting op takes the dtype of the others: all
# inputs, but ``where``'s condition.
for _op in BROADCASTING:
    _op.promotes = (1, 2) if _op is REGISTRY["where"] else (0, 1)

# Ops whose result may be a view of their input: folding one of a large constant costs
# no memory.
VIEWS = ops_named("reshape", "broadcast_to", "permute_dims")

# Ops whose kernels always return a new array, never a view of an input (the program may
# then give their result a buffer of its own).
FRESH = ops_named(
    "where",
    "softmax",
    "log_softmax",
    "matmul",
    "sum",
    "max",
    "min",
    "full_like",
    "scatter_add",
    "scatter_set",
    "concatenate",
    "logsumexp",
    # the fused ops of fgrad/ops/nn.py
    "softmax_jvp",
    "gelu_tanh_gate",
    "standardize",
    "standardize_grad",
    "scale_shift",
    "sum_rows",
)
