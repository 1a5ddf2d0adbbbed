"""One sweep over every op in the registry (docs/internals.md, "Tests").

For each op and each sampled case from its ``Check``: the shape rule agrees with the kernel;
VJP and JVP agree with float64 central finite differences at first and (for smooth ops)
second order; ``<v, J u>`` via jvp equals ``<J^T v, u>`` via vjp; the forward kernel runs
unchanged through ``array_api_strict``. ``FGRAD_TEST_CASES`` caps the cases per op.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import fgrad
from fgrad import tree
from fgrad.ops import REGISTRY
from fgrad.tensor import ShapeDtype
from fgrad.test_util import check_grads, op_args, op_cases

MAX_CASES = int(os.environ.get("FGRAD_TEST_CASES", "4"))


def _all_cases():
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if op.check is None:
            continue
        for k, (shapes, params) in enumerate(op_cases(op, MAX_CASES)):
            yield pytest.param(name, shapes, params, id=f"{name}-{k}")


def _diff_positions(op, args):
    if op.nondiff:
        return []
    out = []
    for i, a in enumerate(args):
        if not hasattr(a, "dtype") or a.dtype.kind not in "fc":
            continue
        if callable(op.vjp) or op.vjp[i] is not None:
            out.append(i)
    return out


@pytest.mark.parametrize("name,shapes,params", list(_all_cases()))
def test_op(name, shapes, params):
    op = REGISTRY[name]
    args = op_args(op, shapes, params, f"{name}{shapes}{params}")
    out = op(*args, **params)

    # 1. The shape rule agrees with the kernel.
    avals = [a.aval if isinstance(a, fgrad.Tensor) else a for a in args]
    want = op.abstract_eval(*avals, **params)
    outs = out if op.multiple_results else (out,)
    wants = want if op.multiple_results else (want,)
    for o, w in zip(outs, wants):
        assert ShapeDtype(tuple(o.shape), o.dtype) == w, f"{name}: aval rule {w} != kernel {o.aval}"

    # 2-3. Derivatives against finite differences, both modes (check_grads also compares
    # forward and reverse through the same finite differences, which ties jvp to vjp).
    diff = _diff_positions(op, args)
    if not diff or not op.check.modes:  # no modes: the op refuses derivatives (eig)
        return

    def f(*diff_args):
        full = list(args)
        for i, a in zip(diff, diff_args):
            full[i] = a
        return op(*full, **params)

    tol = op.check.tol
    check_grads(
        f,
        [args[i] for i in diff],
        order=op.check.order,
        modes=op.check.modes,
        atol=tol,
        rtol=tol,
    )
    if "fwd" in op.check.modes:
        _check_transpose(f, [args[i] for i in diff])


def _check_transpose(f, primals):
    """``<v, J u>`` (forward mode) equals ``<J^T v, u>`` (reverse mode) to rounding."""
    rng = np.random.default_rng(1)
    us = [fgrad.asarray(rng.standard_normal(p.shape).astype(p.dtype)) for p in primals]
    out, t_out = fgrad.jvp(f, primals, us)
    vs = tree.map(lambda o: fgrad.asarray(rng.standard_normal(o.shape).astype(o.dtype)), out)
    _, f_vjp = fgrad.vjp(f, *primals)
    cts = f_vjp(vs)
    # Bilinear products (no conjugation): the VJP is the transpose of the JVP.
    lhs = sum(np.sum(np.asarray(v) * np.asarray(t)) for v, t in zip(tree.leaves(vs), tree.leaves(t_out)))
    rhs = sum(np.sum(np.asarray(c) * np.asarray(u)) for c, u in zip(tree.leaves(cts), us))
    f64 = all(p.dtype in (np.float64, np.complex128) for p in primals)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9 if f64 else 1e-5, atol=1e-10 if f64 else 1e-6)


def test_registry_complete():
    """Every op declares its rules, a Check and a docstring with an example."""
    missing = []
    for name, op in sorted(REGISTRY.items()):
        if op.check is None:
            missing.append(f"{name}: no Check")
        if not op.doc or "Example" not in op.doc:
            missing.append(f"{name}: docstring without an Example")
        if not op.nondiff and (op.jvp is None or op.vjp is None):
            missing.append(f"{name}: missing jvp or vjp")
    assert not missing, "\n".join(missing)


if os.environ.get("CI"):
    # CI must run the strict sweep: a missing package fails here rather than skipping it.
    import array_api_strict  # noqa: F401


@pytest.mark.parametrize("name,shapes,params", [
    p for p in _all_cases() if REGISTRY[p.values[0]].check.strict
])
def test_kernel_uses_only_xp(name, shapes, params):
    """The forward kernel computes the same through a strict Array API namespace."""
    xps = pytest.importorskip("array_api_strict")
    op = REGISTRY[name]
    args = op_args(op, shapes, params, f"{name}{shapes}{params}")
    want = op(*args, **params)
    strict_args = [xps.asarray(np.asarray(a)) if isinstance(a, fgrad.Tensor) else a for a in args]
    strict_params = {
        k: getattr(xps, v.name) if isinstance(v, np.dtype) else v for k, v in params.items()
    }
    got = op.kernel(xps, *strict_args, **strict_params)
    for g, w in zip(got if op.multiple_results else (got,), want if op.multiple_results else (want,)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32"])
def test_shape_rules_follow_numpy_on_integer_and_bool_inputs(dtype):
    """jit and make_graph trust the shape rule: it must give numpy's dtype for non-floats too."""
    wrong = []
    for name, op in sorted(REGISTRY.items()):
        if op.check is None or op.check.make_args is not None:
            continue
        shapes, params = op_cases(op, 1)[0]
        args = [fgrad.asarray(np.ones(s, dtype=dtype)) for s in shapes]
        try:
            with np.errstate(all="ignore"):
                out = op(*args, **params)
        except (TypeError, ValueError):
            continue  # the op refuses this dtype eagerly; its rule is checked elsewhere
        try:
            want = op.abstract_eval(*[a.aval for a in args], **params)
        except (TypeError, ValueError):
            continue  # a rule may refuse what numpy accepts (conv on bools): stricter is fine
        outs = out if op.multiple_results else (out,)
        wants = want if op.multiple_results else (want,)
        for o, w in zip(outs, wants):
            if ShapeDtype(tuple(o.shape), o.dtype) != w:
                wrong.append(f"{name}: rule {w}, kernel {o.aval}")
    assert not wrong, "\n".join(wrong)
