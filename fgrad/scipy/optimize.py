"""``fgrad.scipy.optimize``: unconstrained minimisation, as ``jax.scipy.optimize``.

:func:`minimize` runs BFGS or L-BFGS with a line search that satisfies the strong Wolfe
conditions, written with :func:`fgrad.lax.while_loop`: eagerly it is a Python loop, under
``jit`` one recorded loop, and under ``vmap`` it minimises a batch of starting points (or
of problems) at once, each example stopping when its own test holds. The result is
differentiable in the parameters ``args`` by implicit differentiation at the minimum.

Example:
    >>> from fgrad.scipy.optimize import minimize
    >>> res = minimize(lambda x: fnp.sum((x - 3.0) ** 2), fnp.zeros(2))
    >>> fnp.round(res.x, 6), bool(res.success)
    (Tensor([3., 3.], dtype=float64), True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import fgrad.numpy as _fnp
from fgrad import lax as _lax
from fgrad import tree as _tree
from fgrad._args import describe as _describe
from fgrad.errors import DTypeError as _DTypeError
from fgrad.errors import ShapeError as _ShapeError
from fgrad.flatten_util import ravel_pytree as _ravel_pytree
from fgrad.ops.elementwise import stop_gradient as _stop_gradient
from fgrad.tensor import Tensor as _Tensor
from fgrad.transforms.ad import JVPTracer as _JVPTracer
from fgrad.transforms.ad import ReverseTracer as _ReverseTracer
from fgrad.transforms.autodiff import grad as _grad
from fgrad.transforms.autodiff import value_and_grad as _value_and_grad
from fgrad.transforms.autodiff import vjp as _vjp
from fgrad.transforms.custom import custom_vjp as _custom_vjp
from fgrad.transforms.jacobians import jacfwd as _jacfwd

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """What :func:`minimize` returns (the fields of ``jax.scipy.optimize.OptimizeResults``).

    Attributes:
        x: the solution, a pytree of ``x0``'s structure.
        success: bool Tensor, True when the gradient test (or, for L-BFGS, the relative
            reduction test) held.
        status: int Tensor: 0 converged; 1 the iteration limit was reached; 3 the line
            search's zoom failed (its interval shrank to nothing); 4 the search direction
            was not a descent direction; 5 the line search reached its evaluation limit.
        fun: the objective at ``x``.
        jac: the gradient at ``x``, a pytree of ``x0``'s structure.
        hess_inv: BFGS's ``(n, n)`` inverse-Hessian estimate over the raveled ``x``
            (None for L-BFGS, as JAX's).
        nfev: int Tensor, objective evaluations (each evaluation also gives the gradient).
        njev: int Tensor, gradient evaluations (equal to ``nfev``).
        nit: int Tensor, iterations.

    Example:
        >>> from fgrad.scipy.optimize import OptimizeResults, minimize
        >>> res = minimize(lambda x: fnp.sum(x ** 2), fnp.ones(2))
        >>> isinstance(res, OptimizeResults), res._fields[:3]
        (True, ('x', 'success', 'status'))
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


_METHODS = {"bfgs": "bfgs", "l-bfgs": "l-bfgs", "l-bfgs-b": "l-bfgs", "lbfgs": "l-bfgs"}
_BFGS_OPTIONS = {"maxiter", "gtol", "norm", "c1", "c2", "maxls"}
_LBFGS_OPTIONS = _BFGS_OPTIONS | {"maxcor", "ftol"}


# ---------------------------------------------------------------------- raveling


def _ravel(x0: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``x0``'s leaves as one 1-d Tensor, and the function that undoes it (checked: some
    leaves, all real floating)."""
    leaves = _tree.leaves(x0)
    if not leaves:
        raise _ShapeError("minimize: x0 has no leaves; pass the starting point as an array or a pytree of them")
    for k, v in enumerate(leaves):
        v = _fnp.asarray(v)
        if v.dtype.kind != "f":
            raise _DTypeError(
                f"minimize: x0's leaf {k} is {_describe(v)}; the variables must be real floating "
                "(cast with fnp.asarray(x0, dtype=float))"
            )
    return _ravel_pytree(x0)


def _scalar_objective(fun: Callable, unravel: Callable, args: tuple) -> Callable:
    def f(x, *params):
        value = fun(unravel(x), *params)
        shape = getattr(value, "shape", ())
        if tuple(shape) != ():
            raise _ShapeError(f"minimize: fun must return a scalar, got shape {tuple(shape)}")
        return value

    return f


# ---------------------------------------------------------------------- line search


def _cubic_minimizer(lo, phi_lo, dphi_lo, hi, phi_hi, dphi_hi):
    """The minimiser of the cubic through two points with their slopes (Nocedal and
    Wright, *Numerical Optimization*, 2nd ed., eq. 3.59), or NaN where it has none."""
    # denominators guarded (a degenerate interval gives NaN, not a warning)
    width = _fnp.where(lo == hi, 1.0, lo - hi)
    d1 = dphi_lo + dphi_hi - 3.0 * (phi_lo - phi_hi) / width
    disc = d1 * d1 - dphi_lo * dphi_hi
    d2 = _fnp.sign(hi - lo) * _fnp.sqrt(_fnp.where(disc >= 0, disc, 0.0))
    den = dphi_hi - dphi_lo + 2.0 * d2
    ok = (disc >= 0) & (lo != hi) & (den != 0) & _fnp.isfinite(disc)
    step = hi - (hi - lo) * (dphi_hi + d2 - d1) / _fnp.where(ok, den, 1.0)
    return _fnp.where(ok, step, math.nan)


def _line_search(value_and_grad, x, f0, g0, p, alpha0, *, c1, c2, maxls):
    """A step ``alpha`` along ``p`` with the strong Wolfe conditions
    ``f(x + alpha p) <= f0 + c1 alpha g0.p`` and ``|g(x + alpha p).p| <= c2 |g0.p|``:
    Nocedal and Wright's algorithm 3.5 (bracketing, doubling the step) and 3.6 (zoom, by
    the safeguarded cubic interpolation of eq. 3.59, bisection as the fallback), as one
    ``while_loop`` with one objective evaluation per step.

    Returns ``(alpha, f, g, nfev, status)``: status 0 found, 3 zoom failed, 4 ``p`` is not
    a descent direction, 5 ``maxls`` evaluations reached."""
    dtype = x.dtype
    zero = _fnp.zeros((), dtype=dtype)
    dphi0 = _fnp.vdot(g0, p)
    count = _fnp.zeros((), dtype=np.int64)
    false = _fnp.asarray(False)
    descent = dphi0 < 0
    # (j, zoom, done, status, prev a/phi/dphi, trial a, lo a/phi/dphi, hi a/phi/dphi,
    #  star a/phi/g)
    init = (
        count, false, ~descent, _fnp.where(descent, 0, 4),
        zero, f0, dphi0, _fnp.asarray(alpha0, dtype=dtype),
        zero, f0, dphi0, zero, f0, dphi0,
        zero, f0, g0,
    )

    def cond(s):
        return ~s[2]

    def body(s):
        (j, zoom, done, status, a_prev, phi_prev, dphi_prev, a_try,
         lo, phi_lo, dphi_lo, hi, phi_hi, dphi_hi, a_star, phi_star, g_star) = s
        # the zoom's trial: the cubic's minimiser if it lies well inside the interval
        width = hi - lo
        cubic = _cubic_minimizer(lo, phi_lo, dphi_lo, hi, phi_hi, dphi_hi)
        low_end = _fnp.minimum(lo, hi) + 0.1 * _fnp.abs(width)
        high_end = _fnp.maximum(lo, hi) - 0.1 * _fnp.abs(width)
        inside = (cubic >= low_end) & (cubic <= high_end)
        a_zoom = _fnp.where(inside, cubic, lo + 0.5 * width)
        a = _fnp.where(zoom, a_zoom, a_try)
        phi, g = value_and_grad(x + a * p)
        dphi = _fnp.vdot(g, p)
        armijo_fails = (phi > f0 + c1 * a * dphi0) | ~_fnp.isfinite(phi)
        curvature = _fnp.abs(dphi) <= -c2 * dphi0
        # algorithm 3.5 (bracketing)
        b_hi_is_a = armijo_fails | ((j > 0) & (phi >= phi_prev))
        b_done = ~b_hi_is_a & curvature
        b_swap = ~b_hi_is_a & ~b_done & (dphi >= 0)
        b_zoom = b_hi_is_a | b_swap
        # algorithm 3.6 (zoom)
        z_hi_is_a = armijo_fails | (phi >= phi_lo)
        z_done = ~z_hi_is_a & curvature
        z_flip = ~z_hi_is_a & ~z_done & (dphi * width >= 0)
        found = _fnp.where(zoom, z_done, b_done)
        # the new interval
        new_lo = _fnp.where(zoom, _fnp.where(z_hi_is_a, lo, a), _fnp.where(b_hi_is_a, a_prev, a))
        new_phi_lo = _fnp.where(zoom, _fnp.where(z_hi_is_a, phi_lo, phi), _fnp.where(b_hi_is_a, phi_prev, phi))
        new_dphi_lo = _fnp.where(zoom, _fnp.where(z_hi_is_a, dphi_lo, dphi), _fnp.where(b_hi_is_a, dphi_prev, dphi))
        z_new_hi = _fnp.where(z_hi_is_a, a, _fnp.where(z_flip, lo, hi))
        z_new_phi_hi = _fnp.where(z_hi_is_a, phi, _fnp.where(z_flip, phi_lo, phi_hi))
        z_new_dphi_hi = _fnp.where(z_hi_is_a, dphi, _fnp.where(z_flip, dphi_lo, dphi_hi))
        new_hi = _fnp.where(zoom, z_new_hi, _fnp.where(b_hi_is_a, a, a_prev))
        new_phi_hi = _fnp.where(zoom, z_new_phi_hi, _fnp.where(b_hi_is_a, phi, phi_prev))
        new_dphi_hi = _fnp.where(zoom, z_new_dphi_hi, _fnp.where(b_hi_is_a, dphi, dphi_prev))
        new_zoom = zoom | b_zoom
        collapsed = new_zoom & ~found & (_fnp.abs(new_hi - new_lo) <= 1e-12 * _fnp.maximum(_fnp.abs(new_lo), 1e-12))
        j = j + 1
        exhausted = ~found & ~collapsed & (j >= maxls)
        status = _fnp.where(found, 0, _fnp.where(collapsed, 3, _fnp.where(exhausted, 5, status)))
        done = found | collapsed | exhausted
        keep = found
        return (
            j, new_zoom, done, status, a, phi, dphi, 2.0 * a,
            new_lo, new_phi_lo, new_dphi_lo, new_hi, new_phi_hi, new_dphi_hi,
            _fnp.where(keep, a, a_star), _fnp.where(keep, phi, phi_star), _fnp.where(keep, g, g_star),
        )

    out = _lax.while_loop(cond, body, init)
    return out[14], out[15], out[16], out[0], out[3]


# ---------------------------------------------------------------------- the methods


def _norm(g, order):
    return _fnp.max(_fnp.abs(g)) if order == math.inf else _fnp.sum(_fnp.abs(g) ** order) ** (1.0 / order)


def _first_step(f, f_old, dphi0):
    """The initial trial step: 1, except where the last decrease predicts a shorter one
    (``1.01 * 2 (f_k - f_(k-1)) / g.p``, scipy's rule); the first step is ``1 / |g|``-scaled
    through ``f_(-1) = f_0 + |g_0| / 2``."""
    guess = 1.01 * 2.0 * (f - f_old) / dphi0
    return _fnp.where((guess > 0) & _fnp.isfinite(guess), _fnp.minimum(1.0, guess), 1.0)


def _bfgs(value_and_grad, x0, opts):
    """Nocedal and Wright's algorithm 6.1 with the inverse-Hessian update (6.17)."""
    dtype = x0.dtype
    n = x0.shape[0]
    f0, g0 = value_and_grad(x0)
    eye = _fnp.eye(n, dtype=dtype)
    gnorm = _norm(g0, opts["norm"])
    int0 = _fnp.zeros((), dtype=np.int64)
    # (k, nfev, converged, failed, status, x, f, g, H, f_old)
    init = (int0, int0 + 1, gnorm <= opts["gtol"], _fnp.asarray(False), int0, x0, f0, g0, eye,
            f0 + _fnp.sqrt(_fnp.vdot(g0, g0)) / 2)

    def cond(s):
        k, _, converged, failed = s[:4]
        return ~converged & ~failed & (k < opts["maxiter"])

    def body(s):
        k, nfev, _, _, status, x, f, g, h, f_old = s
        p = -(h @ g)
        alpha0 = _first_step(f, f_old, _fnp.vdot(g, p))
        a, f1, g1, evals, ls_status = _line_search(
            value_and_grad, x, f, g, p, alpha0, c1=opts["c1"], c2=opts["c2"], maxls=opts["maxls"]
        )
        failed = ls_status != 0
        step = a * p
        y = g1 - g
        sy = _fnp.vdot(y, step)
        rho = _fnp.where(sy != 0, 1.0 / _fnp.where(sy != 0, sy, 1.0), 1000.0)  # as JAX's guard
        left = eye - rho * _fnp.outer(step, y)
        h1 = left @ h @ left.T + rho * _fnp.outer(step, step)
        keep = ~failed
        x1 = _fnp.where(keep, x + step, x)
        g1 = _fnp.where(keep, g1, g)
        return (
            k + 1, nfev + evals, _norm(g1, opts["norm"]) <= opts["gtol"], failed,
            _fnp.where(failed, ls_status, status), x1, _fnp.where(keep, f1, f), g1,
            _fnp.where(keep, h1, h), f,
        )

    k, nfev, converged, failed, status, x, f, g, h, _ = _lax.while_loop(cond, body, init)
    status = _fnp.where(converged, 0, _fnp.where(failed, status, 1))
    return x, converged, status, h, nfev, k


def _two_loop(g, s_hist, y_hist, rho_hist, gamma, m):
    """``H_k g`` by the L-BFGS two-loop recursion (Nocedal and Wright, algorithm 7.4);
    the rows hold the last ``m`` pairs, newest last, empty ones with ``rho = 0``."""
    q = g
    alphas = []
    for i in range(m - 1, -1, -1):
        alpha = rho_hist[i] * _fnp.vdot(s_hist[i], q)
        q = q - alpha * y_hist[i]
        alphas.append(alpha)
    r = gamma * q
    for i, alpha in zip(range(m), reversed(alphas)):
        beta = rho_hist[i] * _fnp.vdot(y_hist[i], r)
        r = r + (alpha - beta) * s_hist[i]
    return r


def _lbfgs(value_and_grad, x0, opts):
    """Nocedal and Wright's algorithm 7.5 (L-BFGS) with ``H_0 = (s.y / y.y) I`` (eq. 7.20)."""
    dtype = x0.dtype
    n = x0.shape[0]
    m = opts["maxcor"]
    f0, g0 = value_and_grad(x0)
    int0 = _fnp.zeros((), dtype=np.int64)
    hist = _fnp.zeros((m, n), dtype=dtype)
    init = (int0, int0 + 1, _norm(g0, opts["norm"]) <= opts["gtol"], _fnp.asarray(False), int0, x0, f0,
            g0, hist, hist, _fnp.zeros((m,), dtype=dtype), _fnp.ones((), dtype=dtype),
            f0 + _fnp.sqrt(_fnp.vdot(g0, g0)) / 2)

    def cond(s):
        k, _, converged, failed = s[:4]
        return ~converged & ~failed & (k < opts["maxiter"])

    def body(s):
        k, nfev, _, _, status, x, f, g, s_hist, y_hist, rho_hist, gamma, f_old = s
        p = -_two_loop(g, s_hist, y_hist, rho_hist, gamma, m)
        alpha0 = _fnp.where(k == 0, _first_step(f, f_old, _fnp.vdot(g, p)), 1.0)
        a, f1, g1, evals, ls_status = _line_search(
            value_and_grad, x, f, g, p, alpha0, c1=opts["c1"], c2=opts["c2"], maxls=opts["maxls"]
        )
        failed = ls_status != 0
        keep = ~failed
        step = a * p
        y = g1 - g
        sy = _fnp.vdot(step, y)
        usable = keep & (sy > 0)  # a pair with s.y <= 0 would make H_k indefinite: skip it
        push = lambda buf, row: _fnp.where(usable, _fnp.concatenate([buf[1:], row[None]]), buf)
        rho = _fnp.where(usable, 1.0 / _fnp.where(usable, sy, 1.0), 0.0)
        gamma1 = _fnp.where(usable, sy / _fnp.where(usable, _fnp.vdot(y, y), 1.0), gamma)
        f_new = _fnp.where(keep, f1, f)
        reduction = (f - f_new) / _fnp.maximum(_fnp.maximum(_fnp.abs(f), _fnp.abs(f_new)), 1.0)
        g_new = _fnp.where(keep, g1, g)
        converged = keep & ((_norm(g_new, opts["norm"]) <= opts["gtol"]) | (reduction <= opts["ftol"]))
        return (
            k + 1, nfev + evals, converged, failed, _fnp.where(failed, ls_status, status),
            _fnp.where(keep, x + step, x), f_new, g_new, push(s_hist, step), push(y_hist, y),
            push(rho_hist[:, None], rho[None])[:, 0], gamma1, f,
        )

    out = _lax.while_loop(cond, body, init)
    k, nfev, converged, failed, status, x = out[:6]
    status = _fnp.where(converged, 0, _fnp.where(failed, status, 1))
    return x, converged, status, None, nfev, k


# ---------------------------------------------------------------------- minimize


def _options(method: str, n: int, tol: Any, options: Any) -> dict:
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise TypeError(f"minimize: options must be a dict, got {_describe(options)}")
    allowed = _BFGS_OPTIONS if method == "bfgs" else _LBFGS_OPTIONS
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(
            f"minimize: unknown option(s) {unknown} for method {method!r}; the options are "
            f"{sorted(allowed)}"
        )
    opts = {"maxiter": 200 * n if method == "bfgs" else 15000, "gtol": 1e-5, "norm": math.inf,
            "c1": 1e-4, "c2": 0.9, "maxls": 30, "maxcor": 10, "ftol": 2.220446049250313e-09}
    if tol is not None:  # scipy: tol sets gtol (and, for L-BFGS-B, ftol)
        opts["gtol"] = float(tol)
        if method == "l-bfgs":
            opts["ftol"] = float(tol)
    opts.update(options)
    if not (0 < opts["c1"] < opts["c2"] < 1):
        raise ValueError(f"minimize: need 0 < c1 < c2 < 1, got c1={opts['c1']}, c2={opts['c2']}")
    for key in ("maxiter", "maxls", "maxcor"):
        if not isinstance(opts[key], (int, np.integer)) or isinstance(opts[key], bool) or opts[key] < 1:
            raise ValueError(f"minimize: option {key} must be a positive int, got {_describe(opts[key])}")
    return opts


def _refuse_differentiated_closure(fun: Callable) -> None:
    """Raise when ``fun`` closes over a value that ``grad``/``jvp`` differentiates: the
    implicit derivative covers ``args`` only. (Values reached otherwise, or traced by a
    ``jit`` inside ``grad``, meet the same refusal from the rule, when differentiated.)"""
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            leaves = _tree.leaves(cell.cell_contents)
        except (ValueError, TypeError):  # an empty cell, or not a pytree
            continue
        for leaf in leaves:
            if isinstance(leaf, (_ReverseTracer, _JVPTracer)):
                raise TypeError(
                    f"minimize: fun closes over a value that is being differentiated "
                    f"({leaf.aval}); minimize's result is differentiable only in args, by "
                    "implicit differentiation at the minimum: pass the value in args, as "
                    "minimize(lambda x, c: ..., x0, args=(c,))"
                )


def minimize(
    fun: Callable,
    x0: Any,
    args: tuple = (),
    *,
    method: str = "BFGS",
    tol: float | None = None,
    options: dict | None = None,
) -> OptimizeResults:
    """Minimise a scalar function of a pytree of variables, BFGS or L-BFGS.

    As ``jax.scipy.optimize.minimize`` (and ``scipy.optimize.minimize`` for these
    methods), with ``x0`` any pytree of floating Tensors (raveled into one vector inside;
    ``x`` and ``jac`` come back in its structure). Gradients come from
    :func:`fgrad.value_and_grad`. Runs under ``jit`` (one recorded loop) and ``vmap``
    (batched starting points or problems; each example stops on its own test).

    Differentiable in ``args`` by implicit differentiation: at a minimum
    ``grad_x f(x*, theta) = 0``, so ``dx*/dtheta = -H^-1 d^2 f / dx dtheta`` with the exact
    Hessian ``H`` at ``x*`` (a ``custom_vjp``: reverse mode, as JAX's ``custom_root``);
    ``fun`` and ``jac`` are recomputed at ``x*`` and differentiate through it. ``x0`` gets
    a zero derivative. A differentiated value that ``fun`` closes over gets none: it
    raises TypeError (eagerly, under ``jit`` and ``vmap`` alike) naming ``minimize`` and
    saying to pass it in ``args``.

    Args:
        fun: ``fun(x, *args) -> scalar``, ``x`` with ``x0``'s structure.
        x0: pytree of real floating Tensors, the starting point.
        args: tuple of extra arguments (pytrees of Tensors) passed to ``fun``.
        method: ``"BFGS"`` (Nocedal and Wright, algorithm 6.1) or ``"L-BFGS"``
            (``"l-bfgs"``, ``"L-BFGS-B"`` without bounds: algorithm 7.5), case-insensitive.
        tol: sets ``gtol`` (and, for L-BFGS, ``ftol``), as scipy's.
        options: dict; ``maxiter`` (default ``200 n`` for BFGS, 15000 for L-BFGS),
            ``gtol`` (1e-5: stop when the gradient's ``norm`` is below it), ``norm``
            (``inf``), ``c1``/``c2`` (1e-4, 0.9: the Wolfe constants), ``maxls`` (30:
            evaluations per line search); L-BFGS also ``maxcor`` (10 stored pairs) and
            ``ftol`` (2.2e-9: stop when the relative decrease is below it).

    Returns:
        :class:`OptimizeResults`.

    Raises:
        ValueError: an unknown method or option, or inconsistent Wolfe constants.
        ShapeError: ``fun`` does not return a scalar, or ``x0`` has no leaves.
        DTypeError: a leaf of ``x0`` is not real floating.
        TypeError: ``fun`` is not callable, or ``args`` is not a tuple; a value ``fun``
            closes over is differentiated (pass it in ``args``).

    Example:
        >>> from fgrad.scipy.optimize import minimize
        >>> rosen = lambda x: fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> res = minimize(rosen, fnp.zeros(3), method="BFGS")
        >>> fnp.round(res.x, 5), bool(res.success)
        (Tensor([1., 1., 1.], dtype=float64), True)
        >>> # the minimiser of sum((x - theta)^2) moves one for one with theta
        >>> f = lambda theta: minimize(lambda x, t: fnp.sum((x - t) ** 2), fnp.zeros(2), (theta,)).x[0]
        >>> fnp.round(fgrad.grad(f)(fnp.array([1.0, 2.0])), 6)
        Tensor([1., 0.], dtype=float64)

    References:
        J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., Springer 2006:
        algorithms 3.5 and 3.6 (strong Wolfe line search with zoom, eq. 3.59 for the
        cubic step), 6.1 (BFGS), 7.4 and 7.5 (L-BFGS); implicit differentiation of an
        argmin by the implicit function theorem (as in Blondel et al., "Efficient and
        modular implicit differentiation", NeurIPS 2022).
    """
    if not callable(fun):
        raise TypeError(f"minimize: fun must be callable, got {_describe(fun)}")
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple, got {_describe(args)}; wrap one argument as (arg,)")
    if not isinstance(method, str) or method.lower() not in _METHODS:
        raise ValueError(f"minimize: method must be 'BFGS' or 'L-BFGS' (or 'l-bfgs', 'L-BFGS-B'), got {method!r}")
    method = _METHODS[method.lower()]
    x0_flat, unravel = _ravel(x0)
    opts = _options(method, int(x0_flat.shape[0]), tol, options)
    objective = _scalar_objective(fun, unravel, args)
    run = _bfgs if method == "bfgs" else _lbfgs

    def solve(x_start, params):
        vg = _value_and_grad(lambda x: objective(x, *params))
        return run(vg, x_start, opts)

    def argmin(x_start, params):
        x, success, status, h, nfev, nit = solve(x_start, params)
        return (x, success, status, h, nfev, nit) if h is not None else (x, success, status, nfev, nit)

    def fwd(x_start, params):
        out = argmin(x_start, params)
        return out, (out[0], params)

    def bwd(res, cts):
        x_star, params = res
        ct_x = cts[0]
        grad_x = lambda x, p: _grad(lambda x_: objective(x_, *p))(x)
        hessian = _jacfwd(lambda x: grad_x(x, params))(x_star)
        v = _fnp.linalg.solve(hessian, ct_x)
        _, pull = _vjp(lambda p: grad_x(x_star, p), params)
        (params_ct,) = pull(v)
        return None, _tree.map(lambda c: -c, params_ct)

    _refuse_differentiated_closure(fun)
    # Always the implicit rule, also without args: the loops are never differentiated
    # (eagerly they would be unrolled, under jit they cannot be), so a value fun closes
    # over gets no derivative in every mode; the rule's error then names minimize.
    argmin.__name__ = argmin.__qualname__ = "minimize"
    implicit = _custom_vjp(argmin)
    implicit.defvjp(fwd, bwd)
    out = implicit(x0_flat, args)
    if len(out) == 6:
        x, success, status, h, nfev, nit = out
        h = _stop_gradient(h)
    else:
        (x, success, status, nfev, nit), h = out, None
    f, g = _value_and_grad(lambda x_: objective(x_, *args))(x)
    return OptimizeResults(
        x=unravel(x), success=success, status=status, fun=f, jac=unravel(g), hess_inv=h,
        nfev=nfev, njev=nfev, nit=nit,
    )


def __dir__() -> list[str]:
    return sorted(__all__)
