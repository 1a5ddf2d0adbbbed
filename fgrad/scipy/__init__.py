"""``fgrad.scipy``: scipy's names over fgrad's ops, differentiable and transformable.

Four submodules, each loaded on first use (``fgrad.scipy.special``, or
``from fgrad.scipy import stats``), as ``jax.scipy`` is organised:

* :mod:`fgrad.scipy.special`: gamma-family functions, error functions and their
  inverses, the normal CDF in logarithms, the incomplete gamma function, Hurwitz zeta,
  scaled Bessel functions, ``xlogy``, ``logsumexp``, ``softmax`` and more;
* :mod:`fgrad.scipy.linalg`: triangular and Cholesky solves, LU, the matrix exponential
  (with its Frechet derivative), the matrix square root, ``lu``/``lu_factor``/``lu_solve``, ``schur``,
  ``block_diag``;
* :mod:`fgrad.scipy.stats`: log-densities, densities, CDFs and quantiles of the common
  distributions, differentiable in their parameters;
* :mod:`fgrad.scipy.optimize`: ``minimize`` (BFGS and L-BFGS over a pytree, under
  ``jit`` and ``vmap``, differentiable in its ``args``).

scipy itself is not needed: every kernel runs through the array namespace (numpy or
cupy). The accuracy against scipy is recorded in ``docs/scipy.md``.

Example:
    >>> from fgrad.scipy import special
    >>> special.gammaln(fnp.array([1.0, 5.0]))
    Tensor([0.        , 3.17805383], dtype=float64)
"""

from __future__ import annotations

import importlib

__all__ = ["linalg", "optimize", "special", "stats"]

_LAZY = frozenset(__all__)


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f"fgrad.scipy.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'fgrad.scipy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
