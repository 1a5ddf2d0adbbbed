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

# Layers, attention, losses and initialisers (imported after the activations they use).
from fgrad.nn import initializers
from fgrad.nn.attention import (
    MultiHeadAttention,
    TransformerBlock,
    causal_mask,
    dot_product_attention,
    gelu_tanh,
    padding_mask,
)
from fgrad.nn.layers import (
    MLP,
    AvgPool2d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    Linear,
    MaxPool2d,
    RMSNorm,
    Sequential,
    avg_pool2d,
    conv2d,
    dropout,
    layer_norm,
    max_pool2d,
    rms_norm,
)
from fgrad.nn.losses import (
    binary_cross_entropy_with_logits,
    mse,
    softmax_cross_entropy,
)

__all__ += [
    "MLP",
    "AvgPool2d",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "LayerNorm",
    "Linear",
    "MaxPool2d",
    "MultiHeadAttention",
    "RMSNorm",
    "Sequential",
    "TransformerBlock",
    "avg_pool2d",
    "binary_cross_entropy_with_logits",
    "causal_mask",
    "conv2d",
    "dot_product_attention",
    "dropout",
    "gelu_tanh",
    "initializers",
    "layer_norm",
    "max_pool2d",
    "mse",
    "padding_mask",
    "rms_norm",
    "softmax_cross_entropy",
]
