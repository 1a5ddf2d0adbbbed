"""Neural-network building blocks: activations and normalisers (``jax.nn``'s names).

Layers (stateless ``init``/``apply`` dataclasses), losses and initialisers join these.

Example:
    >>> import fgrad.nn as nn
    >>> nn.relu(fnp.array([-1.0, 2.0]))
    Tensor([0., 2.], dtype=float64)
"""

from fgrad.nn._activations import (
    gelu,
    log_softmax,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    swish,
)

__all__ = ["gelu", "log_softmax", "relu", "sigmoid", "silu", "softmax", "softplus", "swish"]
