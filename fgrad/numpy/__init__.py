"""numpy's names and signatures over fgrad's ops: ``import fgrad.numpy as fnp``.

Functions take Tensors, numpy arrays and Python scalars and return Tensors. Every function
is differentiable by fgrad's transforms wherever the maths is.
"""

import numpy as _np

from fgrad.dtypes import (  # noqa: F401
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int32,
    int64,
)
from fgrad.numpy import _methods
from fgrad.numpy._creation import *  # noqa: F401,F403
from fgrad.numpy._creation import __dict__ as _c
from fgrad.numpy._elementwise import *  # noqa: F401,F403
from fgrad.numpy._elementwise import (  # noqa: F401  (x & y, x | y, x ^ y)
    _logical_and_or_bitwise_and,
    _logical_or_or_bitwise_or,
    _logical_xor_or_bitwise_xor,
)
from fgrad.numpy._reductions import *  # noqa: F401,F403
from fgrad.numpy._indexing import *  # noqa: F401,F403
from fgrad.numpy._indexing import _at, _getitem  # noqa: F401  (x.at, x[idx])
from fgrad.numpy._shape import *  # noqa: F401,F403
from fgrad.numpy._shape import _T, _mT  # noqa: F401  (x.T, x.mT)
from fgrad.numpy._linalg_top import *  # noqa: F401,F403
from fgrad.numpy._sorting import *  # noqa: F401,F403
from fgrad.numpy._extras import *  # noqa: F401,F403
from fgrad.numpy._math_extra import *  # noqa: F401,F403
from fgrad.numpy._array_extra import *  # noqa: F401,F403
from fgrad.numpy._array_api import *  # noqa: F401,F403
from fgrad.numpy import linalg  # noqa: F401,E402
from fgrad.numpy import fft  # noqa: F401,E402
from fgrad.tensor import Tensor as ndarray  # noqa: F401

# numpy's dtype names beyond fgrad.dtypes' (``bool`` is numpy 2's alias of ``bool_``).
bool = bool_
int8 = _np.dtype("int8")
int16 = _np.dtype("int16")
uint8 = _np.dtype("uint8")
uint16 = _np.dtype("uint16")
uint32 = _np.dtype("uint32")
uint64 = _np.dtype("uint64")

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None

del _c
_methods.install(__import__("sys").modules[__name__])
