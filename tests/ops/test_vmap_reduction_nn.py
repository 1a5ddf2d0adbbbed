"""vmap through the reduction, sorting and nn ops, beyond the registry sweep: mapped axes
other than 0, shared and mapped inputs the sweep does not combine, argmax over the
flattened example, per-example parameters of the row ops, and vmap composed with grad,
jit and itself (a per-example gradient of a small model)."""

from __future__ import annotations

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.ops import REGISTRY
from fgrad.ops import nn as nn_ops
from fgrad.ops.reduction import linear_recurrence
from fgrad.ops.sorting import searchsorted
from fgrad.test_util import op_args, op_cases

RNG = np.random.default_rng(0)


def _loop(f, args, in_axes):
    """The per-example loop vmap must equal: f on each slice, results stacked."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [
        f(
            *[
                a if ax is None else np.take(np.asarray(a), k, axis=ax)
                for a, ax in zip(args, in_axes)
            ]
        )
        for k in range(size)
    ]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def _assert_vmap(f, *args, in_axes=0, rtol=1e-12, atol=1e-12):
    in_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    got = fgrad.vmap(f, in_axes=in_axes)(*args)
    want = _loop(f, args, in_axes)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    ):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: fnp.sum(x, axis=-1),
        lambda x: fnp.max(x, axis=0, keepdims=True),
        lambda x: fnp.min(x),
        lambda x: fnp.mean(x, axis=1),
        lambda x: fnp.var(x, axis=0),
        lambda x: fnp.prod(x, axis=(0, 1)),
        lambda x: fnp.logsumexp(x, axis=-1),
        lambda x: nn.softmax(x, axis=0),
        lambda x: nn.log_softmax(x),
        lambda x: fnp.cumsum(x, axis=1),
        lambda x: fnp.cumprod(x, axis=0),
        lambda x: fnp.sort(x, axis=0),
        lambda x: fnp.argsort(x, axis=-1),
        lambda x: fnp.argmax(x),
        lambda x: fnp.argmin(x, axis=None, keepdims=True),
        lambda x: fnp.argmax(x, axis=1, keepdims=True),
        lambda x: fnp.all(x > 0, axis=0),
        lambda x: fnp.any(x > 1),
    ],
)
@pytest.mark.parametrize("in_axis", [0, 1, -1])
def test_reductions_over_any_mapped_axis(f, in_axis):
    # Examples of shape (3, 4) mapped along each axis of a (2, 3, 4)-shaped stack.
    x = RNG.uniform(-2.0, 2.0, (2, 3, 4))
    x = np.moveaxis(x, 0, in_axis)
    _assert_vmap(f, fnp.asarray(x), in_axes=in_axis)


def test_argmax_of_a_flattened_scalar_example():
    x = fnp.array([3.0, 1.0, 2.0])
    assert np.asarray(fgrad.vmap(fnp.argmax)(x)).tolist() == [0, 0, 0]
    assert fgrad.vmap(lambda v: fnp.argmax(v, keepdims=True))(x).shape == (3,)


def test_max_ties_split_per_example_under_vmap_of_grad():
    x = fnp.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [5.0, 0.0, 1.0]])
    got = fgrad.vmap(fgrad.grad(fnp.max))(x)
    np.testing.assert_allclose(np.asarray(got), [[0, 0.5, 0.5], [1 / 3] * 3, [1, 0, 0]])


def test_logsumexp_all_neg_inf_row_under_vmap_of_grad():
    x = fnp.array([[0.0, -np.inf], [-np.inf, -np.inf]])
    out = fgrad.vmap(fnp.logsumexp)(x)
    np.testing.assert_array_equal(np.asarray(out), [0.0, -np.inf])
    got = fgrad.vmap(fgrad.grad(fnp.logsumexp))(x)
    np.testing.assert_array_equal(np.asarray(got), [[1.0, 0.0], [0.0, 0.0]])


def test_linear_recurrence_with_inputs_of_different_ranks():
    a = RNG.uniform(-1.0, 1.0, (4,))
    b = RNG.uniform(-1.0, 1.0, (5, 3, 4))
    a_mapped = RNG.uniform(-1.0, 1.0, (5, 4))

    def f(a, b):
        return linear_recurrence(a, b, axis=1, reverse=True)

    _assert_vmap(f, fnp.asarray(a), fnp.asarray(b), in_axes=(None, 0))
    _assert_vmap(f, fnp.asarray(a_mapped), fnp.asarray(b), in_axes=(0, 0))
    _assert_vmap(f, fnp.asarray(a_mapped), fnp.asarray(b[0]), in_axes=(0, None))


def test_searchsorted_with_a_sequence_per_example():
    seqs = np.sort(np.round(RNG.uniform(-2, 2, (4, 6)) * 2) / 2, axis=1)
    seqs[1, -2:] = np.nan  # NaN sorts last
    v = np.round(RNG.uniform(-2.5, 2.5, (4, 2, 3)) * 2) / 2
    v[1, 0, 0] = v[2, 1, 2] = np.nan
    for side in ("left", "right"):

        def f(a, v, side=side):
            return searchsorted(a, v, side=side)

        _assert_vmap(f, fnp.asarray(seqs), fnp.asarray(v), in_axes=(0, 0))
        _assert_vmap(f, fnp.asarray(seqs), fnp.asarray(v[0]), in_axes=(0, None))
        _assert_vmap(f, fnp.asarray(seqs), 0.5, in_axes=(0, None))
        _assert_vmap(f, fnp.asarray(seqs[0]), fnp.asarray(v), in_axes=(None, 0))


def test_standardize_grad_with_each_form_of_ct_rstd():
    x = RNG.uniform(-2.0, 2.0, (3, 2, 4))
    xhat, rstd = (np.asarray(o) for o in fgrad.vmap(lambda v: nn_ops.standardize(v, eps=1e-5))(x))
    g = RNG.uniform(-1.0, 1.0, x.shape)
    per_example_scalar = RNG.uniform(-1.0, 1.0, (3,))
    shared_rows = RNG.uniform(-1.0, 1.0, (2, 1))

    def f(g, ct_rstd, xhat, rstd):
        return nn_ops.standardize_grad(g, ct_rstd, xhat, rstd)

    args = [fnp.asarray(a) for a in (g, xhat, rstd)]
    _assert_vmap(f, args[0], 0.0, args[1], args[2], in_axes=(0, None, 0, 0))
    _assert_vmap(f, args[0], fnp.asarray(per_example_scalar), args[1], args[2])
    _assert_vmap(f, args[0], fnp.asarray(shared_rows), args[1], args[2], in_axes=(0, None, 0, 0))
    _assert_vmap(
        f, args[0][0], fnp.asarray(shared_rows), args[1], args[2], in_axes=(None, None, 0, 0)
    )


@pytest.mark.parametrize(
    "in_axes, scale, bias",
    [
        ((0, 0, 0), (5, 4), (5, 4)),
        ((None, 0, None), (5, 4), (4,)),
        ((None, None, 0), (4,), (5,)),  # a () bias per example
        ((0, None, 0), 2.0, (5, 4)),
        ((0, None, 0), 1.0, (5, 4)),
        ((0, 0, None), (5, 4), 0.0),
    ],
)
def test_scale_shift_with_parameters_per_example(in_axes, scale, bias):
    x = RNG.uniform(-1.0, 1.0, (5, 2, 3, 4) if in_axes[0] == 0 else (2, 3, 4))
    scale = RNG.uniform(0.5, 1.5, scale) if isinstance(scale, tuple) else scale
    bias = RNG.uniform(-1.0, 1.0, bias) if isinstance(bias, tuple) else bias
    wrap = lambda a: fnp.asarray(a) if isinstance(a, np.ndarray) else a
    _assert_vmap(nn_ops.scale_shift, wrap(x), wrap(scale), wrap(bias), in_axes=in_axes)


@pytest.mark.parametrize("shape", [(4,), (2, 4), (2, 3, 4)])
def test_sum_rows_and_bias_add(shape):
    x = fnp.asarray(RNG.uniform(-1.0, 1.0, (3, *shape)))
    bias = fnp.asarray(RNG.uniform(-1.0, 1.0, (3, 4)))
    _assert_vmap(nn_ops.sum_rows, x)
    _assert_vmap(nn_ops.bias_add, x, bias)
    _assert_vmap(nn_ops.bias_add, x, bias[0], in_axes=(0, None))
    _assert_vmap(nn_ops.bias_add, x[0], bias, in_axes=(None, 0))


def test_softmax_of_large_rows_under_vmap():
    # Big enough for softmax's one-shift kernel over the last axis (4096 elements or more),
    # with one example whose rows need the per-row maximum.
    x = RNG.uniform(-3.0, 3.0, (3, 64, 80)).astype(np.float32)
    x[1, 5, :] = -1000.0
    x[1, 5, 3] = 1000.0
    _assert_vmap(lambda v: nn.softmax(v, axis=-1), fnp.asarray(x), rtol=1e-6, atol=1e-7)


def _model(params, x, label):
    h = nn.layer_norm(x @ params["w1"], params["scale"], params["shift"])
    h = nn.gelu(nn_ops.bias_add(h, params["b1"]), approximate=True)
    h = nn.relu(h) + 0.1 * h
    logits = h @ params["w2"]
    return -fnp.sum(nn.log_softmax(logits) * label) + 0.01 * fnp.max(fnp.abs(logits))


def _params():
    return {
        "w1": fnp.asarray(RNG.normal(size=(4, 6)) / 2),
        "b1": fnp.asarray(RNG.normal(size=(6,)) / 5),
        "scale": fnp.asarray(RNG.uniform(0.5, 1.5, (6,))),
        "shift": fnp.asarray(RNG.normal(size=(6,)) / 5),
        "w2": fnp.asarray(RNG.normal(size=(6, 3)) / 2),
    }


def test_per_example_gradients_of_a_small_model():
    params = _params()
    xs = fnp.asarray(RNG.normal(size=(5, 2, 4)))
    labels = fnp.asarray(np.eye(3)[RNG.integers(0, 3, (5, 2))])
    per_example = fgrad.vmap(fgrad.grad(_model), in_axes=(None, 0, 0))(params, xs, labels)
    jitted = fgrad.jit(fgrad.vmap(fgrad.grad(_model), in_axes=(None, 0, 0)))(params, xs, labels)
    for k in range(5):
        want = fgrad.grad(_model)(params, xs[k], labels[k])
        for name in params:
            np.testing.assert_allclose(
                np.asarray(per_example[name])[k], np.asarray(want[name]), rtol=1e-10, atol=1e-12
            )
            np.testing.assert_allclose(
                np.asarray(jitted[name])[k], np.asarray(want[name]), rtol=1e-10, atol=1e-12
            )
    # Their sum is the gradient of the summed loss (grad of vmap).
    total = fgrad.grad(lambda p: fnp.sum(fgrad.vmap(_model, in_axes=(None, 0, 0))(p, xs, labels)))(
        params
    )
    for name in params:
        np.testing.assert_allclose(
            np.asarray(total[name]), np.asarray(per_example[name]).sum(0), rtol=1e-10, atol=1e-12
        )


def test_vmap_of_vmap_and_forward_mode_through_the_row_ops():
    x = fnp.asarray(RNG.uniform(-2.0, 2.0, (2, 3, 4, 5)))

    def f(v):
        xhat, rstd = nn_ops.standardize(v, eps=1e-5)
        return fnp.sum(nn.softmax(xhat, axis=-1) * rstd, axis=0)

    got = fgrad.vmap(fgrad.vmap(f))(x)
    want = np.stack([np.stack([np.asarray(f(x[i, j])) for j in range(3)]) for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    t = fnp.ones_like(x[0, 0])
    jvps = fgrad.vmap(lambda v: fgrad.jvp(f, (v,), (t,))[1])(x[0])
    for j in range(3):
        np.testing.assert_allclose(
            np.asarray(jvps[j]), np.asarray(fgrad.jvp(f, (x[0, j],), (t,))[1]), rtol=1e-10
        )


_OPS = {
    # reduction.py
    *("cumprod", "cumsum", "linear_recurrence", "logsumexp", "logsumexp_weights", "max"),
    *("min", "prod", "shift", "sum"),
    # nn.py
    *("bias_add", "gelu_tanh_gate", "log_softmax", "relu", "scale_shift", "softmax"),
    *("softmax_jvp", "standardize", "standardize_grad", "sum_rows"),
    # sorting.py
    "sort",
}
_DIFF_CASES = [
    pytest.param(op, shapes, params, id=f"{op.name}-{k}")
    for op in sorted(REGISTRY.values(), key=lambda o: o.name)
    if op.name in _OPS
    for k, (shapes, params) in enumerate(op_cases(op, 2))
]


@pytest.mark.parametrize("op, shapes, params", _DIFF_CASES)
def test_vmap_of_grad_and_jvp_through_each_op(op, shapes, params):
    # The derivative rules of each op, run on batched values: per-example gradients and
    # JVPs equal the loop's.
    examples = [op_args(op, shapes, params, f"vmap-grad{k}") for k in range(3)]
    floats = [i for i, a in enumerate(examples[0]) if np.asarray(a).dtype.kind == "f"]

    def loss(*args):
        outs = op(*args, **params)
        return sum(fnp.sum(fnp.sin(o)) for o in (outs if op.multiple_results else (outs,)))

    stacked = [fnp.stack([e[i] for e in examples]) for i in range(len(examples[0]))]
    grads = fgrad.vmap(fgrad.grad(loss, argnums=tuple(floats)))(*stacked)
    tangents = [fnp.ones_like(a) for a in examples[0]]

    def jvp_out(*args):
        return fgrad.jvp(loss, tuple(args), tuple(tangents))[1]

    jvps = fgrad.vmap(jvp_out)(*stacked)
    for k, e in enumerate(examples):
        want = fgrad.grad(loss, argnums=tuple(floats))(*e)
        for g, w in zip(grads, want):
            np.testing.assert_allclose(np.asarray(g)[k], np.asarray(w), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(jvps)[k], np.asarray(jvp_out(*e)), rtol=1e-10)
