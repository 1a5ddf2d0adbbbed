"""``fgrad.scipy.stats``: log-densities, densities, CDFs and quantiles of common
distributions, with scipy's argument names, differentiable in their parameters.

One module per distribution, as ``jax.scipy.stats``: ``norm``, ``multivariate_normal``,
``t``, ``gamma``, ``beta``, ``dirichlet``, ``expon``, ``laplace``, ``logistic``,
``cauchy``, ``uniform`` (continuous: ``logpdf``, ``pdf`` and, where closed-form or a
special function gives it, ``cdf``, ``sf``, ``ppf``), ``poisson``, ``bernoulli``,
``binom``, ``categorical`` (discrete: ``logpmf``, ``pmf``, ``cdf``). Each is a
composition of fgrad's ops and ``fgrad.scipy.special``.

Example:
    >>> from fgrad.scipy.stats import norm
    >>> fgrad.grad(norm.logpdf, argnums=1)(1.0, 0.0, 2.0)
    Tensor(0.25, dtype=float64)
"""

from fgrad.scipy.stats import (  # noqa: F401
    bernoulli,
    beta,
    binom,
    categorical,
    cauchy,
    dirichlet,
    expon,
    gamma,
    laplace,
    logistic,
    multivariate_normal,
    norm,
    poisson,
    t,
    uniform,
)

__all__ = [
    "bernoulli",
    "beta",
    "binom",
    "categorical",
    "cauchy",
    "dirichlet",
    "expon",
    "gamma",
    "laplace",
    "logistic",
    "multivariate_normal",
    "norm",
    "poisson",
    "t",
    "uniform",
]


def __dir__() -> list[str]:
    # Only the public names: the imports this module uses stay reachable, not listed.
    return sorted(__all__)
