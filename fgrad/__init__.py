"""fgrad: functional automatic differentiation over numpy and cupy, in the style of JAX.

Example:
    >>> import fgrad
    >>> import fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2))(fnp.array([0.5, 1.0]))
    Tensor([0.84147098, 0.90929743], dtype=float64)
"""

from fgrad import tree
from fgrad._config import config
from fgrad.backend import Device
from fgrad.errors import (
    ConcretizationError,
    DTypeError,
    DeletedError,
    FgradError,
    MutationError,
    NaNError,
    RetraceWarning,
    ShapeError,
    TracerLeakError,
)
from fgrad.ops.elementwise import stop_gradient
from fgrad.tensor import ShapeDtype, Tensor, asarray, block_until_ready, device_put
from fgrad.transforms.autodiff import grad, jvp, value_and_grad, vjp
from fgrad.transforms.graphs import eval_shape, make_graph
from fgrad.transforms.custom import checkpoint, custom_jvp, custom_vjp
from fgrad.transforms.jacobians import hessian, hvp, jacfwd, jacrev, linearize
from fgrad.transforms.jit import jit
from fgrad.transforms.batching import vmap
from fgrad.core import debug as _debug  # noqa: F401  (makes config.debug_nans work)
from fgrad import numpy  # noqa: E402  (installs Tensor's operators)
from fgrad import lax  # noqa: E402  (also registers the control-flow ops)
from fgrad import debug  # noqa: E402  (also registers the host-callback ops)
from fgrad.ops.callback import pure_callback  # noqa: E402

__version__ = "0.1.0"

# Loaded on first use (``fgrad.nn.Linear`` or ``from fgrad import nn``), so that
# ``import fgrad`` costs little more than numpy: the layers alone take longer to import
# than the whole core.
_LAZY = frozenset(
    {"distributed", "flatten_util", "io", "nn", "optim", "random", "scipy", "test_util"}
)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f"fgrad.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'fgrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

__all__ = [
    "ConcretizationError",
    "DTypeError",
    "DeletedError",
    "Device",
    "FgradError",
    "MutationError",
    "NaNError",
    "RetraceWarning",
    "ShapeDtype",
    "ShapeError",
    "Tensor",
    "TracerLeakError",
    "asarray",
    "block_until_ready",
    "checkpoint",
    "custom_jvp",
    "custom_vjp",
    "config",
    "debug",
    "device_put",
    "eval_shape",
    "flatten_util",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacrev",
    "linearize",
    "io",
    "jit",
    "jvp",
    "lax",
    "make_graph",
    "numpy",
    "nn",
    "optim",
    "pure_callback",
    "random",
    "scipy",
    "stop_gradient",
    "test_util",
    "tree",
    "value_and_grad",
    "vjp",
    "vmap",
]
