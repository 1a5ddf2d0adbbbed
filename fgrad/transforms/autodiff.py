"""The differentiation API: ``vjp``, ``grad``, ``value_and_grad`` and ``jvp``.

Argument handling (argnums, aux outputs, integer inputs), seeds and the checks on
cotangents and tangents, over the two modes of :mod:`fgrad.transforms.ad`: a function is
run once under a reverse trace (:class:`~fgrad.transforms.ad.ReverseTrace`), or under a
forward one carrying tangents (:class:`~fgrad.transforms.ad.JVPTrace`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import dtypes, tree
from fgrad.core.trace import concrete_value, new_trace
from fgrad.errors import ConcretizationError, ShapeError
from fgrad.ops.elementwise import full_like
from fgrad.tensor import ShapeDtype, Tensor, _wrap, asarray
from fgrad.transforms.ad import (
    JVPTrace,
    JVPTracer,
    ReverseTracer,
    _aval,
    _as_input,
    _LEAF_TREE,
    _fit,
    _fit_tangent,
    _is_inexact,
    _lower,
    _lower_tree,
    _Recording,
)
from fgrad.transforms.argnums import (
    check_diff_inputs,
    check_function,
    diff_positions,
    is_single,
    partial_args,
    split_aux,
)

__all__ = ["vjp", "grad", "value_and_grad", "jvp"]


def vjp(f: Callable, *primals: Any, has_aux: bool = False):
    """Evaluate ``f`` and return a function for its vector-Jacobian product.

    Args:
        f: function of pytrees of Tensors, returning a pytree of Tensors (or
            ``(output, aux)`` when ``has_aux``).
        *primals: the arguments of ``f``; floating and complex leaves are differentiated,
            integer and bool leaves are held constant.
        has_aux: ``f`` returns ``(output, aux)``; ``aux`` is returned untouched.

    Returns:
        ``(primals_out, vjp_fn)`` or ``(primals_out, vjp_fn, aux)``. ``vjp_fn(cotangents)``
        takes a pytree like ``primals_out`` and returns a tuple with one cotangent pytree
        per primal, each leaf of the primal's shape and dtype.

    Raises:
        ShapeError: ``vjp_fn`` got cotangents of a different structure or shape.
        TypeError: ``vjp_fn`` got a cotangent of another dtype than its output (a Python
            number is taken in the output's dtype).

    Example:
        >>> y, f_vjp = fgrad.vjp(fnp.sin, fnp.array([0.0, 1.0]))
        >>> f_vjp(fnp.ones(2))
        (Tensor([1.        , 0.54030231], dtype=float64),)
    """
    check_function(f, "vjp")
    rec = _Recording(f, primals, has_aux, "vjp")
    out_tree, out_leaves, trace = rec.out_tree, rec.out_leaves, rec.trace
    primals_out = tree.unflatten(out_tree, [_lower(o, trace) for o in out_leaves])

    def vjp_fn(cotangents: Any) -> tuple:
        ct_leaves, ct_tree = tree.flatten(cotangents)
        if ct_tree != out_tree:
            raise ShapeError(
                f"vjp_fn: cotangent structure {ct_tree} differs from the output's {out_tree}"
            )
        seeds = []
        for k, (o, ct) in enumerate(zip(out_leaves, ct_leaves)):
            weak = type(ct) in (int, float, complex)
            ct = asarray(ct) if not isinstance(ct, Tensor) else ct
            aval = _aval(_lower(o, trace))
            if tuple(ct.shape) != aval.shape:
                raise ShapeError(
                    f"vjp_fn: cotangent {ct.aval} does not match the output {aval}; pass one "
                    "cotangent of the output's shape for each output"
                )
            if dtypes.is_inexact(aval.dtype) and not weak and not _cotangent_fits(ct, aval):
                raise TypeError(
                    f"vjp_fn: cotangent leaf {k} is {ct.aval} for the output {aval}; a "
                    "cotangent has its output's dtype (nothing is dropped or cast silently): "
                    f"pass .astype({str(aval.dtype)!r})"
                )
            if type(o) is ReverseTracer and o._trace is trace:
                seeds.append((o.node, o.index, _fit(ct, aval)))
        return rec.pull(seeds)

    return (primals_out, vjp_fn, rec.aux) if has_aux else (primals_out, vjp_fn)


def _cotangent_fits(ct: Tensor, aval: ShapeDtype) -> bool:
    """A cotangent has its output's dtype, as in JAX: an integer one, a complex one for a
    real output (its imaginary part would be dropped) or one of another precision (it
    would be cast) is refused, as jvp refuses such tangents."""
    return ct.dtype == aval.dtype


def _one_like(x: Any) -> Any:
    """The seed cotangent 1 for a scalar output: on numpy without an op call (part of the
    eager fixed cost), under jit an op on the tracer."""
    try:
        data = concrete_value(x)
    except ConcretizationError:  # abstract (jit): no value yet
        data = None
    if isinstance(data, (np.ndarray, np.generic)):
        return _wrap(np.ones((), dtype=data.dtype))
    return full_like(x, fill_value=1, dtype=None)


def _input_aval(leaf: Any, name: str) -> ShapeDtype:
    return _aval(_as_input(leaf, name))


def value_and_grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """Make a function that returns ``f``'s value and its gradient.

    For complex inputs and a real output the gradient follows JAX's convention: the
    cotangent is the transpose of the derivative, ``df/dx - i df/dy`` for ``z = x + iy``
    (so ``grad(lambda z: abs(z)**2)(3+4j) == 6-8j``; take ``conj`` for the steepest-ascent
    direction).

    Args:
        f: function returning a scalar real floating Tensor (or ``(scalar, aux)``); with
            ``holomorphic=True`` a scalar complex one.
        argnums: which positional argument(s) to differentiate; an int or a tuple.
        has_aux: ``f`` returns ``(scalar, aux)``.
        holomorphic: ``f`` is complex-differentiable; inputs must be complex and the result
            is the complex derivative ``f'(z)``.
        allow_int: allow integer and bool inputs; their gradients are zeros of their dtype.

    Returns:
        A function with ``f``'s signature returning ``(value, gradient)`` or
        ``((value, aux), gradient)``. The gradient has the structure, shapes and dtypes of
        the argument (a tuple of them when ``argnums`` is a tuple).

    Raises:
        TypeError: ``f``'s output is not a scalar real floating value, or a differentiated
            argument has integer or bool leaves.
        ValueError: ``argnums`` is out of range.

    Example:
        >>> value, g = fgrad.value_and_grad(lambda x: fnp.sum(x ** 2))(fnp.array([1.0, 2.0]))
        >>> value, g
        (Tensor(5., dtype=float64), Tensor([2., 4.], dtype=float64))
    """
    check_function(f, "value_and_grad")

    def value_and_grad_f(*args: Any, **kwargs: Any):
        nums = diff_positions(argnums, len(args), "grad")
        diff_args = tuple(args[n] for n in nums)
        if holomorphic:
            check_diff_inputs(diff_args, nums, "grad", _input_aval, holomorphic)
        on_int = None if allow_int else lambda: check_diff_inputs(diff_args, nums, "grad", _input_aval)
        if not kwargs and len(nums) == len(args) and nums == tuple(range(len(args))):
            f_diff = f  # every argument differentiated, in order: no wrapper needed
        else:
            f_diff = partial_args(f, args, nums, kwargs)
        rec = _Recording(f_diff, diff_args, has_aux, "grad", on_int)
        traced = rec.out_leaves[0] if rec.out_tree.num_leaves == 1 else None
        out = _lower(traced, rec.trace) if traced is not None else None
        if out is not None and not isinstance(out, Tensor):
            out = asarray(out) if isinstance(out, (int, float, np.ndarray, np.generic)) else out
        aval = _aval(out) if isinstance(out, Tensor) and rec.out_tree == _LEAF_TREE else None
        ok_dtype = dtypes.is_inexact if holomorphic else dtypes.is_floating
        if aval is None or aval.shape != () or not ok_dtype(aval.dtype):
            got = aval if aval is not None else type(tree.unflatten(rec.out_tree, rec.out_leaves)).__name__
            pair = (
                not has_aux
                and rec.out_tree.num_leaves >= 2
                and isinstance(tree.unflatten(rec.out_tree, rec.out_leaves), (tuple, list))
            )
            hint = (
                " If it returns (loss, aux), pass has_aux=True to grad / value_and_grad."
                if pair
                else ""
            )
            raise TypeError(
                f"grad requires a function with a scalar real floating output; it returned "
                f"{got}. Use fgrad.vjp or fgrad.jacrev for non-scalar outputs, and take the real "
                f"part (or use holomorphic differentiation) for complex ones.{hint}"
            )
        seeds = []
        if type(traced) is ReverseTracer and traced._trace is rec.trace:
            seeds.append((traced.node, traced.index, _one_like(out)))
        grads = rec.pull(seeds)
        grads = grads[0] if type(argnums) is int or is_single(argnums) else grads
        return ((out, rec.aux), grads) if has_aux else (out, grads)

    value_and_grad_f.__name__ = f"value_and_grad({getattr(f, '__name__', 'f')})"
    value_and_grad_f.__wrapped__ = f
    return value_and_grad_f


def grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """Make a function that returns the gradient of scalar-valued ``f``.

    Args:
        f: function returning a scalar real floating Tensor (or ``(scalar, aux)``).
        argnums: which positional argument(s) to differentiate; an int or a tuple.
        has_aux: ``f`` returns ``(scalar, aux)``; the new function returns ``(grad, aux)``.
        holomorphic: see :func:`value_and_grad`: complex-differentiable ``f``.
        allow_int: see :func:`value_and_grad`: integer inputs get zero gradients.

    Returns:
        A function with ``f``'s signature returning the gradient, a pytree with the
        structure, shapes and dtypes of the differentiated argument(s).

    Raises:
        TypeError: non-scalar or non-real output (use ``vjp``/``jacrev``), or integer inputs.
        ValueError: ``argnums`` is out of range.

    Example:
        >>> fgrad.grad(fnp.tanh)(0.5)
        Tensor(0.78644773, dtype=float64)
        >>> fgrad.grad(fgrad.grad(fnp.sin))(0.0)
        Tensor(-0., dtype=float64)
    """
    check_function(f, "grad")
    vg = value_and_grad(f, argnums, has_aux, holomorphic, allow_int)

    def grad_f(*args: Any, **kwargs: Any):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    grad_f.__name__ = f"grad({getattr(f, '__name__', 'f')})"
    grad_f.__wrapped__ = f
    return grad_f


def _check_tangent(k: int, p: Tensor, t: Tensor, weak: bool) -> None:
    """A tangent has its primal's dtype, as in JAX: nothing is cast silently."""
    if not _is_inexact(p):
        raise TypeError(
            f"jvp: primal leaf {k} is {p.aval}, an integer or bool value, which has no "
            "tangent; pass it as a float (x.astype('float32')) to differentiate it, or close "
            "over it (functools.partial) to hold it fixed"
        )
    if t.dtype != p.dtype and not weak:
        raise TypeError(
            f"jvp: tangent leaf {k} is {t.aval} where the primal is {p.aval}; a tangent has "
            f"its primal's dtype: cast it with .astype({str(p.dtype)!r})"
        )


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """Evaluate ``f`` and its Jacobian-vector product at ``primals`` along ``tangents``.

    Args:
        f: function of pytrees of Tensors returning a pytree of Tensors.
        primals: tuple or list of the arguments of ``f``.
        tangents: tuple or list with the same structure; each leaf of its primal's shape.
        has_aux: ``f`` returns ``(output, aux)``.

    Returns:
        ``(primals_out, tangents_out)`` (plus ``aux``), ``tangents_out`` shaped like the
        output; outputs that do not depend on the inputs get zero tangents.

    Raises:
        TypeError: ``primals`` or ``tangents`` is not a tuple or list; a primal leaf is an
            integer or bool (it has no tangent: close over it); a tangent's dtype differs
            from its primal's (a Python number tangent takes the primal's dtype).
        ShapeError: a tangent's structure or shape differs from its primal's.

    Example:
        >>> fgrad.jvp(fnp.sin, (fnp.array([0.0, 1.0]),), (fnp.array([1.0, 1.0]),))
        (Tensor([0.        , 0.84147098], dtype=float64), Tensor([1.        , 0.54030231], dtype=float64))
    """
    check_function(f, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists of arguments")
    p_leaves, p_tree = tree.flatten(tuple(primals))
    t_leaves, t_tree = tree.flatten(tuple(tangents))
    if p_tree != t_tree:
        raise ShapeError(f"jvp: tangents structure {t_tree} differs from primals {p_tree}")
    with new_trace(JVPTrace()) as trace:
        inputs = []
        for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            weak_t = type(t) in (float, complex, int)  # a Python number takes p's dtype
            p = _as_input(p, "jvp")
            t = _as_input(t, "jvp")
            if tuple(t.shape) != tuple(p.shape):
                raise ShapeError(f"jvp: tangent {t.aval} does not match primal {p.aval}")
            _check_tangent(k, p, t, weak_t)
            inputs.append(JVPTracer(trace, p, _fit_tangent(t, p)) if _is_inexact(p) else p)
        result = f(*tree.unflatten(p_tree, inputs))
        if has_aux:
            result, aux = split_aux(result)
        out_leaves, out_tree = tree.flatten(result)
    outs, out_tangents = [], []
    for o in out_leaves:
        if type(o) is JVPTracer and o._trace is trace:
            outs.append(o.primal)
            out_tangents.append(o.tangent)
        else:
            outs.append(o)
            out_tangents.append(full_like(o, fill_value=0, dtype=None))
    res = (tree.unflatten(out_tree, outs), tree.unflatten(out_tree, out_tangents))
    return (*res, _lower_tree(aux, trace)) if has_aux else res
