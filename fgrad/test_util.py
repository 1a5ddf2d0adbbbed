"""Testing helpers for users and for fgrad's own suite."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import _args, tree
from fgrad.tensor import Tensor, asarray
from fgrad.transforms.autodiff import jvp, vjp

__all__ = ["check_grads", "op_args", "op_cases"]


def __dir__() -> list[str]:
    """Only the public names (the imports above are implementation details)."""
    return sorted(__all__)


def _np(x: Any) -> np.ndarray:
    return np.asarray(x.tolist() if isinstance(x, Tensor) and x.dtype.kind == "V" else x)


def _inner(xs: Sequence[Any], ys: Sequence[Any]) -> complex:
    # Bilinear (no conjugation): the VJP is the transpose of the JVP, JAX's convention.
    return sum(np.sum(_np(x) * _np(y)) for x, y in zip(xs, ys))


def _random_like(rng: np.random.Generator, x: Any) -> Tensor:
    x = _np(x)
    u = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
        u = u + 1j * rng.standard_normal(x.shape)
    return asarray(u.astype(x.dtype))


def check_grads(
    f: Callable,
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = ("rev",),
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
) -> None:
    """Check ``f``'s derivatives against central finite differences, up to ``order``.

    In one random direction ``u`` (and output direction ``v``): reverse mode checks
    ``<vjp(v), u>`` against ``<v, (f(x + eps u) - f(x - eps u)) / (2 eps)>``; forward mode
    checks ``jvp(u)`` against the same difference quotient. Higher orders repeat the check
    on the derivative functions. Use float64 inputs: float32 differences are too coarse.

    Args:
        f: function of the positional ``args`` (pytrees of floating Tensors) returning a
            pytree of floating Tensors.
        args: tuple of arguments.
        order: highest derivative order to check (1 to 3).
        modes: any of ``"rev"`` and ``"fwd"``.
        eps: finite-difference step (default ``1e-6`` for float64, ``1e-3`` otherwise).
        atol: absolute tolerance (default ``1e-6`` for float64, ``1e-2`` otherwise).
        rtol: relative tolerance (default as ``atol``).
        seed: seed of the random directions.

    Raises:
        AssertionError: a derivative disagrees with finite differences; the message gives
            the order, the mode and both values.
        ValueError: an unknown mode, an ``order`` outside 1 to 3, a step ``eps`` that is
            not positive or a negative tolerance.
        TypeError: ``f`` is not callable, ``args`` is not a tuple or list of arguments
            (a Tensor is one argument: pass ``(x,)``), or ``order``, ``eps``, the
            tolerances or ``seed`` are not numbers of the right kind (a ``DTypeError``).

    Example:
        >>> check_grads(fnp.sin, (fnp.array([0.3, 1.2]),), order=2, modes=("rev", "fwd"))

    References:
        The random-direction check of autograd's ``check_grads`` and JAX's
        ``jax.test_util.check_grads``.
    """
    _args.function(f, "check_grads", "f")
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            f"check_grads: args must be a tuple (or list) of f's arguments, got "
            f"{_args.describe(args)}; for one argument x pass (x,)"
        )
    order = _args.index(order, "check_grads", "order", minimum=1, maximum=3)
    modes = (modes,) if isinstance(modes, str) else modes
    if not isinstance(modes, (tuple, list)) or not modes:
        raise TypeError(
            f"check_grads: modes must be 'rev', 'fwd' or a tuple of them, got {modes!r}"
        )
    for mode in modes:
        if mode not in ("rev", "fwd"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; use 'rev' or 'fwd'")
    eps = _args.real(eps, "check_grads", "eps", above=0.0, none_ok=True)
    atol = _args.real(atol, "check_grads", "atol", minimum=0.0, none_ok=True)
    rtol = _args.real(rtol, "check_grads", "rtol", minimum=0.0, none_ok=True)
    seed = _args.index(seed, "check_grads", "seed", minimum=0)
    args = tuple(tree.map(lambda x: asarray(x) if not isinstance(x, Tensor) else x, tuple(args)))
    leaves = tree.leaves(args)
    f64 = all(np.dtype(x.dtype) in (np.float64, np.complex128) for x in leaves)
    eps = eps if eps is not None else (1e-6 if f64 else 1e-3)
    atol = atol if atol is not None else (1e-6 if f64 else 1e-2)
    rtol = rtol if rtol is not None else atol
    rng = np.random.default_rng(seed)
    _check(f, args, order, tuple(modes), eps, atol, rtol, rng, 1)


def _shift(args: tuple, us: tuple, scale: float) -> tuple:
    return tree.map(lambda x, u: x + scale * u, args, us)


def _fd(f: Callable, args: tuple, us: tuple, eps: float) -> list:
    plus = tree.leaves(f(*_shift(args, us, eps)))
    minus = tree.leaves(f(*_shift(args, us, -eps)))
    return [(_np(p) - _np(m)) / (2 * eps) for p, m in zip(plus, minus)]


def _close(name: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if not np.allclose(got, want, atol=atol, rtol=rtol, equal_nan=False):
        err = np.max(np.abs(got - want)) if got.size else 0.0
        raise AssertionError(
            f"check_grads: {name} disagrees with finite differences (max abs error {err:.3g}, "
            f"atol={atol}, rtol={rtol}):\n  derivative:          {got}\n  finite differences:  {want}"
        )


def _check(f, args, order, modes, eps, atol, rtol, rng, level) -> None:
    us = tree.map(lambda x: _random_like(rng, x), args)
    fd = _fd(f, args, us, eps)
    out = f(*args)
    vs = tree.map(lambda o: _random_like(rng, o), out)
    if "fwd" in modes:
        _, t_out = jvp(f, args, us)
        for t, want in zip(tree.leaves(t_out), fd):
            _close(f"order-{level} jvp", _np(t), want, atol, rtol)
        if order > 1:
            _check(lambda *a: jvp(f, a, us)[1], args, order - 1, modes, eps, atol, rtol, rng, level + 1)
    if "rev" in modes:
        _, f_vjp = vjp(f, *args)
        cts = f_vjp(vs)
        got = _inner(tree.leaves(cts), tree.leaves(us))
        want = _inner(tree.leaves(vs), fd)
        _close(f"order-{level} vjp", got, want, atol, rtol)
        if order > 1:
            _check(lambda *a: vjp(f, *a)[1](vs), args, order - 1, modes, eps, atol, rtol, rng, level + 1)


def op_cases(op: Any, max_cases: int | None = None) -> list[tuple[tuple, dict]]:
    """The ``(shapes, params)`` cases that an op's ``Check`` describes.

    Args:
        op: a registry op with a ``check``.
        max_cases: keep at most this many, spread evenly over the full product (fixed, so
            every machine runs the same cases).

    Returns:
        A list of ``(shapes, params)`` pairs.

    Example:
        >>> from fgrad.ops import REGISTRY
        >>> op_cases(REGISTRY["sin"], 2)
        [(((),), {}), (((2, 3),), {})]
    """
    chk = op.check
    combos = list(itertools.product(chk.shapes, chk.param_sets()))
    if max_cases is not None and len(combos) > max_cases:
        idx = np.linspace(0, len(combos) - 1, max_cases).round().astype(int)
        combos = [combos[i] for i in sorted(set(idx.tolist()))]
    return combos


def op_args(op: Any, shapes: tuple, params: dict, seed_text: str = "") -> list[Any]:
    """Sample an op's inputs for one case, reproducibly (seeded by op, case and ``seed_text``).

    Floating samples come from ``check.domain`` (or ``check.make_args``) in ``check.dtype``;
    integer and bool inputs that ``make_args`` returns are kept as they are.

    Example:
        >>> from fgrad.ops import REGISTRY
        >>> [a.shape for a in op_args(REGISTRY["add"], ((2, 3), (3,)), {})]
        [(2, 3), (3,)]
    """
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{shapes}{params}{seed_text}".encode()))
    chk = op.check
    if chk.make_args is not None:
        raw = chk.make_args(rng, shapes)
    else:
        lo, hi = chk.domain
        raw = [rng.uniform(lo, hi, s) for s in shapes]
    out = []
    for a in raw:
        if isinstance(a, (int, bool)):
            out.append(a)
        elif isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
            out.append(asarray(np.asarray(a, dtype=chk.dtype)))
        else:
            out.append(asarray(a))
    return out
