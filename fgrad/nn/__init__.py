"""Neural-network building blocks: activations and normalisers (``jax.nn``'s names).

Layers (stateless ``init``/``apply`` dataclasses), losses and initialisers join these.

Example:
    >>> import fgrad.nn as nn
    >>> nn.relu(fnp.array([-1.0, 2.0]))
    Tensor([0., 2.], dtype=float64)
"""

from fgrad.nn import (
    _activations,
    _encoding,
    attention,
    initializers,
    layers,
    losses,
    normalization,
    recurrent,
)
from fgrad.nn._activations import *
from fgrad.nn._encoding import *
from fgrad.nn.attention import *
from fgrad.nn.layers import *
from fgrad.nn.losses import *
from fgrad.nn.normalization import *
from fgrad.nn.recurrent import *

# Each submodule's own list, so a public name is listed once, where it is defined.
__all__ = (
    _activations.__all__ + _encoding.__all__ + attention.__all__
    + layers.__all__
    + losses.__all__
    + normalization.__all__
    + recurrent.__all__
)
__all__ += ["initializers"]
