"""Jacobians and Hessians built from vjp and jvp: jacrev, jacfwd, hessian, hvp, linearize.

``jacrev`` runs one backward pass per output element, ``jacfwd`` one forward pass per
input element; pick the one whose count is smaller (JAX's advice). A batched version over
``vmap`` will replace the Python loops without changing results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fgrad import tree
from fgrad.ops import shape as _shape_ops
from fgrad.ops.elementwise import full_like
from fgrad.tensor import Tensor, asarray
from fgrad.transforms.argnums import (
    check_diff_inputs,
    check_function,
    diff_positions,
    is_single,
    partial_args,
    split_aux,
)
from fgrad.transforms.ad import _as_input
from fgrad.transforms.autodiff import _input_aval, grad, jvp, vjp

__all__ = ["jacrev", "jacfwd", "hessian", "hvp", "linearize"]


def _basis(aval_shape: tuple, dtype: Any, k: int, like: Any) -> Tensor:
    # One-hot constants on the device of ``like``.
    e = np.zeros(int(np.prod(aval_shape, dtype=np.int64)), dtype=dtype)
    e[k] = 1
    return asarray(e.reshape(aval_shape), device=_device(like))


def _device(x: Any) -> Any:
    try:
        return x.device
    except Exception:  # an abstract tracer has no device of its own; use the default
        return None


def _stack_rows(rows: list, lead_shape: tuple, trail_shape: tuple, trailing: bool) -> Any:
    """Stack per-element derivatives into a Jacobian block of shape out.shape + in.shape."""
    if trailing:
        cols = [_shape_ops.reshape(r, shape=(int(np.prod(r.shape, dtype=np.int64)), 1)) for r in rows]
        stacked = _shape_ops.concatenate(*cols, axis=1)  # (out.size, in.size)
    else:
        flat = [_shape_ops.reshape(r, shape=(1, int(np.prod(r.shape, dtype=np.int64)))) for r in rows]
        stacked = _shape_ops.concatenate(*flat, axis=0)  # (out.size, in.size)
    return _shape_ops.reshape(stacked, shape=tuple(lead_shape) + tuple(trail_shape))


def _setup(f, argnums, args, kwargs, name, allow_int, holomorphic):
    nums = diff_positions(argnums, len(args), name)
    if not allow_int or holomorphic:
        check_diff_inputs([args[n] for n in nums], nums, name, _input_aval, holomorphic)
    diff_args = tuple(tree.map(lambda x: _as_input(x, name), args[n]) for n in nums)
    return nums, diff_args, partial_args(f, args, nums, kwargs)


def jacrev(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    """Jacobian of ``f`` by reverse mode: one VJP per output element.

    Args:
        f: function of pytrees of Tensors returning a pytree of Tensors.
        argnums: argument(s) to differentiate, an int or a tuple.
        has_aux: ``f`` returns ``(output, aux)``.
        holomorphic: ``f`` is complex-differentiable; complex inputs and outputs allowed.
        allow_int: allow integer inputs (their Jacobian blocks are zero).

    Returns:
        A function returning, for each output leaf, the Jacobian with respect to the
        argument(s): leaf shapes ``out.shape + in.shape``, structured as the output with
        the argument's structure inside (a tuple over arguments when ``argnums`` is a tuple).

    Raises:
        TypeError: integer inputs without ``allow_int``.

    Example:
        >>> fgrad.jacrev(lambda x: x * fnp.array([1.0, 2.0]))(fnp.array([3.0, 4.0]))
        Tensor([[1., 0.],
                [0., 2.]], dtype=float64)
    """
    check_function(f, "jacrev")

    def jac_f(*args: Any, **kwargs: Any) -> Any:
        nums, diff_args, f_diff = _setup(f, argnums, args, kwargs, "jacrev", allow_int, holomorphic)
        res = vjp(f_diff, *diff_args, has_aux=has_aux)
        out, f_vjp = res[0], res[1]
        out_leaves, out_tree = tree.flatten(out)
        in_leaves, in_tree = tree.flatten(diff_args)
        blocks = []
        for j, o in enumerate(out_leaves):
            rows: list[list] = [[] for _ in in_leaves]
            for k in range(int(np.prod(o.shape, dtype=np.int64))):
                cts = [
                    _basis(tuple(o.shape), o.dtype, k, o) if i == j else _zeros_like(p)
                    for i, p in enumerate(out_leaves)
                ]
                in_cts = tree.leaves(f_vjp(tree.unflatten(out_tree, cts)))
                for r, c in zip(rows, in_cts):
                    r.append(c)
            per_input = [
                _stack_rows(r, tuple(o.shape), tuple(x.shape), trailing=False)
                if r
                else _empty_block(o, x)
                for r, x in zip(rows, in_leaves)
            ]
            block = tree.unflatten(in_tree, per_input)
            blocks.append(block[0] if is_single(argnums) else block)
        jac = tree.unflatten(out_tree, blocks)
        return (jac, res[2]) if has_aux else jac

    return jac_f


def _zeros_like(x: Any) -> Any:
    return full_like(x, fill_value=0, dtype=None)


def _empty_block(o, x):
    return asarray(np.zeros(tuple(o.shape) + tuple(x.shape), dtype=np.result_type(o.dtype, x.dtype)))


def jacfwd(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    """Jacobian of ``f`` by forward mode: one JVP per input element.

    Args and Returns are as for :func:`jacrev`; the two agree to rounding.

    Raises:
        TypeError: integer inputs without ``allow_int``.

    Example:
        >>> fgrad.jacfwd(lambda x: fnp.sin(x))(fnp.array([0.0, 1.0]))
        Tensor([[1.        , 0.        ],
                [0.        , 0.54030231]], dtype=float64)
    """
    check_function(f, "jacfwd")

    def jac_f(*args: Any, **kwargs: Any) -> Any:
        nums, diff_args, f_diff = _setup(f, argnums, args, kwargs, "jacfwd", allow_int, holomorphic)
        in_leaves, in_tree = tree.flatten(diff_args)
        per_input_cols: list[list] = []
        out_tree = aux = out_leaves = None
        for i, x in enumerate(in_leaves):
            cols = []
            for k in range(int(np.prod(x.shape, dtype=np.int64))):
                ts = [
                    _basis(tuple(x.shape), x.dtype, k, x) if m == i else _zeros_like(p)
                    for m, p in enumerate(in_leaves)
                ]
                res = jvp(f_diff, diff_args, tuple(tree.unflatten(in_tree, ts)), has_aux=has_aux)
                out_leaves, out_tree = tree.flatten(res[0])
                aux = res[2] if has_aux else None
                cols.append(tree.leaves(res[1]))
            per_input_cols.append(cols)
        if out_tree is None:  # no input elements: evaluate once for the output structure
            res = f_diff(*diff_args)
            out = split_aux(res)[0] if has_aux else res
            aux = split_aux(res)[1] if has_aux else None
            out_leaves, out_tree = tree.flatten(out)
        blocks = []
        for j, o in enumerate(out_leaves):
            per_input = [
                _stack_rows([c[j] for c in cols], tuple(o.shape), tuple(x.shape), trailing=True)
                if cols
                else _empty_block(o, x)
                for cols, x in zip(per_input_cols, in_leaves)
            ]
            block = tree.unflatten(in_tree, per_input)
            blocks.append(block[0] if is_single(argnums) else block)
        jac = tree.unflatten(out_tree, blocks)
        return (jac, aux) if has_aux else jac

    return jac_f


def hessian(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Hessian of scalar ``f``: ``jacfwd(jacrev(f))`` (forward-over-reverse).

    Returns:
        A function returning blocks of shape ``in.shape + in.shape``.

    Example:
        >>> fgrad.hessian(lambda x: fnp.sum(x ** 3))(fnp.array([1.0, 2.0]))
        Tensor([[ 6.,  0.],
                [ 0., 12.]], dtype=float64)
    """
    check_function(f, "hessian")
    return jacfwd(jacrev(f, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


def hvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """Hessian-vector product of scalar ``f`` by forward-over-reverse: ``jvp(grad(f))``.

    Costs a small constant multiple of one gradient; the Hessian is never formed.

    Args:
        f: scalar-output function of the positional ``primals``.
        primals: tuple of arguments.
        tangents: tuple like ``primals``: the vector ``v``.

    Returns:
        ``H v``: a tuple like ``primals`` (one entry per argument).

    Example:
        >>> fgrad.hvp(lambda x: fnp.sum(x ** 3), (fnp.array([1.0, 2.0]),), (fnp.array([1.0, 1.0]),))
        (Tensor([ 6., 12.], dtype=float64),)

    References:
        Pearlmutter, "Fast exact multiplication by the Hessian", Neural Computation 1994.
    """
    check_function(f, "hvp")
    nums = tuple(range(len(primals)))
    return jvp(grad(f, argnums=nums), tuple(primals), tuple(tangents))[1]


def linearize(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``f``'s value at ``primals`` and its Jacobian-vector product as a function.

    ``f_jvp(*tangents)`` re-runs forward mode at ``primals`` on each call.

    Returns:
        ``(primals_out, f_jvp)``.

    Example:
        >>> y, f_jvp = fgrad.linearize(fnp.sin, fnp.array([0.0]))
        >>> f_jvp(fnp.array([2.0]))
        Tensor([2.], dtype=float64)
    """
    check_function(f, "linearize")
    out = f(*primals)

    def f_jvp(*tangents: Any) -> Any:
        return jvp(f, primals, tangents)[1]

    return out, f_jvp
