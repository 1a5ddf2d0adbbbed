"""Elementwise fusion (fgrad/transforms/fusion.py).

On the CPU: every fusable op's expression, rendered to numpy, against the op's own kernel
(registry Check inputs and special values, float32 and float64); the groups a graph
splits into (shapes, dtypes, outputs used outside, no cycles); the CUDA text (pinned for
small groups, checked for well-formedness on a training graph); and the whole jit path
through a stand-in ``cupy`` whose ElementwiseKernel runs the numpy rendering of the very
source it is given. On a GPU (skipped without cupy): jit on cupy against eager, and the
number of kernels launched.
"""

from __future__ import annotations

import itertools
import re
import types
from typing import ClassVar

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import backend, nn
from fgrad.core.debug import check_program
from fgrad.errors import NaNError
from fgrad.ops import REGISTRY
from fgrad.ops.nn import gelu_tanh_gate
from fgrad.tensor import _wrap
from fgrad.test_util import op_args, op_cases
from fgrad.transforms import fusion, passes
from fgrad.transforms import jit as jit_module
from fgrad.transforms.fusion import elementwise_groups, fuse_graph, render_cuda, render_numpy
from fgrad.transforms.program import Program

GPU = backend.cupy_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs cupy and an NVIDIA GPU")

_FLOATS = (np.float32, np.float64)
_SCALARS = (bool, int, float)


def _ops(nodes):
    return [n.op.name for n in nodes]


def _fused_eval(name, args, params=None):
    """``REGISTRY[name](*args)`` through fusion: the op alone as a group, its numpy rendering."""
    op = REGISTRY[name]
    arrays = [a for a in args if type(a) not in _SCALARS]

    def f(*xs):
        it = iter(xs)
        return op(*[a if type(a) in _SCALARS else next(it) for a in args], **(params or {}))

    graph = fgrad.make_graph(f)(*arrays)
    groups = elementwise_groups(graph, min_size=1)
    assert len(groups) == 1 and _ops(groups[0].nodes) == [name], f"{name} did not fuse"
    with np.errstate(all="ignore"):
        (out,) = render_numpy(groups[0])(*[np.asarray(a) for a in arrays])
    return out


def _eager(name, args, params=None):
    with np.errstate(all="ignore"):
        return np.asarray(REGISTRY[name](*args, **(params or {})))


def _same_bits(got, want, rtol=0.0):
    """Equal dtype and shape; NaN where ``want`` is NaN; equal sign bits (so -0.0 != 0.0)
    and values (to ``rtol``) elsewhere."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))
    np.testing.assert_allclose(got[~nan], want[~nan], rtol=rtol, atol=0)


# ------------------------------------------------------------------------ every op


_FUSABLE = sorted(n for n in fusion._OPS if n != "astype")


def test_every_fusable_op_is_a_registry_op():
    assert set(fusion._OPS) <= set(REGISTRY)


def _registry_cases():
    for name in _FUSABLE:
        for k, (shapes, params) in enumerate(op_cases(REGISTRY[name], 4)):
            for dtype in _FLOATS:
                yield pytest.param(name, shapes, params, dtype, id=f"{name}-{k}-{dtype.__name__}")


@pytest.mark.parametrize("name,shapes,params,dtype", list(_registry_cases()))
def test_numpy_rendering_matches_the_kernel(name, shapes, params, dtype):
    op = REGISTRY[name]
    args = [
        fgrad.asarray(np.asarray(a).astype(dtype)) if getattr(a, "dtype", None) == np.float64 else a
        for a in op_args(op, shapes, params, "fusion")
    ]
    want = _eager(name, args, params)
    assert want.dtype in (np.dtype(dtype), np.dtype(bool))
    # Two ulps: the expressions are numpy's own operations, in the kernels' order.
    # numpy's float32 logaddexp loop and its float32 exp and log1p differ by an ulp, which
    # its cancellation (x + log1p(exp(y - x)) near 0) makes a larger relative error.
    eps = np.finfo(dtype).eps
    rtol = 8 * eps if (name, dtype) == ("logaddexp", np.float32) else 2 * eps
    _same_bits(_fused_eval(name, args, params), want, rtol=rtol)


_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, 1e30]
_UNARY = [n for n in _FUSABLE if len(op_cases(REGISTRY[n], 1)[0][0]) == 1]
_BINARY = [n for n in _FUSABLE if len(op_cases(REGISTRY[n], 1)[0][0]) == 2 and "logical" not in n]


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", [n for n in _UNARY if n != "logical_not"])
def test_unary_special_values_bit_for_bit(name, dtype):
    x = fgrad.asarray(np.array(_SPECIAL, dtype))
    _same_bits(_fused_eval(name, [x]), _eager(name, [x]))


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", _BINARY)
def test_binary_special_values_bit_for_bit(name, dtype):
    pairs = np.array(list(itertools.product(_SPECIAL, repeat=2)), dtype)
    x, y = fgrad.asarray(pairs[:, 0].copy()), fgrad.asarray(pairs[:, 1].copy())
    # numpy's float32 logaddexp loop and its float32 exp and log1p differ by an ulp.
    rtol = 2 * np.finfo(dtype).eps if (name, dtype) == ("logaddexp", np.float32) else 0.0
    _same_bits(_fused_eval(name, [x, y]), _eager(name, [x, y]), rtol)


def test_numpy_semantics_where_c_differs():
    x = fgrad.asarray(np.array([-0.0, 0.0, np.nan, 1.0, np.nan]))
    y = fgrad.asarray(np.array([0.0, -0.0, 1.0, np.nan, np.nan]))
    for name in ("maximum", "minimum"):  # NaN propagates; equal inputs give the second
        _same_bits(_fused_eval(name, [x, y]), _eager(name, [x, y]))
    assert not np.signbit(_fused_eval("abs", [fgrad.asarray(np.array([-0.0]))])[0])
    assert not np.signbit(_fused_eval("sign", [fgrad.asarray(np.array([-0.0]))])[0])
    # where on a float condition: nonzero is true, NaN included.
    c = fgrad.asarray(np.array([0.0, np.nan, -0.0, 2.0]))
    _same_bits(_fused_eval("where", [c, 1.0, 2.0]), _eager("where", [c, 1.0, 2.0]))
    # bool arrays promote to the float: True is 1.0.
    b = fgrad.asarray(np.array([True, False]))
    f32 = fgrad.asarray(np.array([2.5, 2.5], np.float32))
    _same_bits(_fused_eval("multiply", [b, f32]), _eager("multiply", [b, f32]))


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_weak_python_scalars_take_the_array_dtype(dtype):
    x = fgrad.asarray(np.array([0.1, 16777217.0, -3.0], dtype))
    for name, args in [
        ("multiply", [x, 0.1]),
        ("less", [x, 0.1]),  # compared in the array's dtype, as numpy 2 does
        ("equal", [x, 16777217]),
        ("maximum", [x, -1]),
        ("power", [x, 2]),
        ("subtract", [1e300, x]),  # overflows to inf in float32, as numpy's cast does
    ]:
        _same_bits(_fused_eval(name, args), _eager(name, args))


def test_casts_between_the_float_and_bool():
    x = fgrad.asarray(np.array([0.0, -0.0, np.nan, 2.0], np.float32))
    to_bool = {"dtype": np.dtype(bool)}
    _same_bits(_fused_eval("astype", [x], to_bool), _eager("astype", [x], to_bool))
    b = fgrad.asarray(np.array([True, False]))
    to_f32 = {"dtype": np.dtype(np.float32)}
    _same_bits(_fused_eval("astype", [b], to_f32), _eager("astype", [b], to_f32))


@pytest.mark.parametrize(
    "f,args",
    [
        (lambda x: fnp.exp(x).astype("float64") * 2.0, [np.ones(3, np.float32)]),  # 2 floats
        (lambda x: (x + 1) * 2, [np.arange(3)]),  # integers
        (lambda x: fnp.exp(x) * 2.0, [np.ones(3, np.float16)]),
        (lambda x: x * 1j + 1.0, [np.ones(3)]),  # complex
        (lambda x: fnp.sum(x) * 2.0, [np.ones(3)]),  # a reduction
    ],
)
def test_what_does_not_fuse(f, args):
    assert elementwise_groups(fgrad.make_graph(f)(*args)) == []


# ------------------------------------------------------------------------ groups


def test_a_chain_is_one_group_and_a_reduction_splits_it():
    def f(x, b):
        y = fnp.tanh(x * 2.0 + b)  # b (4,) broadcasts to x's (3, 4)
        s = fnp.sum(y, axis=0)
        return fnp.exp(s) - 1.0

    g = fgrad.make_graph(f)(np.ones((3, 4)), np.ones(4))
    groups = elementwise_groups(g)
    assert [_ops(gr.nodes) for gr in groups] == [["multiply", "add", "tanh"], ["exp", "subtract"]]
    assert [gr.shape for gr in groups] == [(3, 4), (4,)]
    assert groups[0].inputs == (g.invars[0], g.invars[1])
    assert groups[0].outputs == (g.nodes[2].outputs[0],)


def test_intermediates_used_outside_become_outputs():
    def f(x):
        a = fnp.exp(x)
        b = a * 2.0
        return b + 1.0, fnp.sum(a)

    g = fgrad.make_graph(f)(np.ones(3))
    (group,) = elementwise_groups(g)
    assert _ops(group.nodes) == ["exp", "multiply", "add"]
    a, c = g.nodes[0].outputs[0], g.nodes[2].outputs[0]
    assert group.outputs == (a, c)
    outs = render_numpy(group)(np.array([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(outs[0], np.exp([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(outs[1], np.exp([0.0, 1.0, 2.0]) * 2 + 1)


def test_no_group_runs_around_an_outside_node():
    # b feeds cumsum, whose result feeds c: {b, c} in one kernel would need cumsum's
    # result before it could produce cumsum's input.
    def f(x):
        a = fnp.exp(x)
        b = a * 2.0
        t = fnp.cumsum(b)
        c = b * t
        return c + 1.0

    g = passes.optimize(fgrad.make_graph(f)(np.ones(4)))
    groups = elementwise_groups(g)
    assert [_ops(gr.nodes) for gr in groups] == [["exp", "multiply"], ["multiply", "add"]]
    fused = fuse_graph(g)
    assert _ops(fused.nodes) == ["fused_elementwise", "cumsum", "fused_elementwise"]
    _run_same(g, fused, np.array([0.1, -0.2, 0.3, 0.4]))


def test_groups_keep_one_float_dtype_and_take_in_bool_values():
    def f(x32, x64):
        mask = x32 > 0
        y32 = fnp.where(mask, x32 * 3.0, 0.0)  # bool and float32 in one group
        y64 = fnp.sqrt(x64) + 1.0  # float64: another group
        return y32, y64

    g = fgrad.make_graph(f)(np.ones(3, np.float32), np.ones(3))
    groups = elementwise_groups(g)
    assert [_ops(gr.nodes) for gr in groups] == [["greater", "multiply", "where"], ["sqrt", "add"]]
    assert [gr.dtype for gr in groups] == [np.dtype(np.float32), np.dtype(np.float64)]


def test_fusing_reorders_nodes_only_where_a_group_needs_it():
    def f(x, y):
        a = fnp.exp(x)
        s = fnp.cumsum(y)  # read by the group's second node, produced after its first
        return a * s

    g = passes.optimize(fgrad.make_graph(f)(np.ones(3), np.ones(3)))
    text = str(g)
    fused = fuse_graph(g)
    assert _ops(fused.nodes) == ["cumsum", "fused_elementwise"]
    _run_same(g, fused, np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]))
    assert str(g) == text  # the graph itself is untouched (its names too)


def test_broadcast_and_constant_inputs():
    w = fgrad.asarray(np.array([1.0, -2.0, 3.0, 0.5]))  # a constant array input
    half = _wrap(np.broadcast_to(np.float64(0.5), (3, 4)))  # one value: a literal
    two = fgrad.asarray(np.float64(2.0))  # 0-d: a literal

    def f(x):
        return fnp.maximum(x * w, 0.0) * two + half

    g = fgrad.make_graph(f)(np.ones((3, 4)))
    (group,) = elementwise_groups(g)
    assert len(group.inputs) == 2 and group.inputs[1] is w
    _, _, body, _ = render_cuda(group)
    assert "+ 0.5)" in body and "* 2.0)" in body and "in2" not in body
    _run_same(g, fuse_graph(g), np.linspace(-1, 1, 12).reshape(3, 4))


def _run_same(graph, fused, *args):
    """The fused graph, run as jit runs it (a program), equals the graph op by op."""
    want = graph.evaluate_flat([fgrad.asarray(a) for a in args])
    got = Program(fused, np).run([np.asarray(a) for a in args])
    for w, o in zip(want, got):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(w))


def _mlp_loss(params, x):
    h = nn.gelu(x @ params["w1"] + params["b1"], approximate=True)
    h = fnp.where(h > 0.1, h, 0.1 * h) * nn.sigmoid(h)
    return fnp.mean((h @ params["w2"]) ** 2)


def _mlp_args(dtype):
    rng = np.random.default_rng(0)
    params = {
        "w1": fgrad.asarray(rng.standard_normal((5, 8)).astype(dtype)),
        "b1": fgrad.asarray(rng.standard_normal(8).astype(dtype)),
        "w2": fgrad.asarray(rng.standard_normal((8, 2)).astype(dtype)),
    }
    return params, fgrad.asarray(rng.standard_normal((4, 5)).astype(dtype))


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_a_training_graph_fuses_and_gives_the_same_gradients(dtype):
    params, x = _mlp_args(dtype)
    g = passes.optimize(fgrad.make_graph(fgrad.value_and_grad(_mlp_loss))(params, x))
    fused = fuse_graph(g)
    assert len(fused.nodes) < len(g.nodes) - 5
    leaves = fgrad.tree.leaves((params, x))
    want = g.evaluate_flat(leaves)
    got = Program(fused, np).run([np.asarray(a) for a in leaves])
    for w, o in zip(want, got):
        np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=4 * np.finfo(dtype).eps)


# ------------------------------------------------------------------------ CUDA text


def test_render_cuda_relu_backward_float32():
    g = fgrad.make_graph(lambda x, ct: fnp.where(x > 0, ct, 0))(
        np.ones(3, np.float32), np.ones(3, np.float32)
    )
    in_params, out_params, body, name = render_cuda(elementwise_groups(g)[0])
    assert in_params == "float32 in0, float32 in1"
    assert out_params == "float32 out0"
    assert body == (
        "bool v0 = (in0 > 0.0f);\n"  # the weak int 0 is a float32 literal
        "float v1 = (v0 ? in1 : 0.0f);\n"
        "out0 = v1;"
    )
    assert name == "fgrad_greater_where_" + name[-8:] and re.fullmatch(r"[0-9a-f]{8}", name[-8:])


def test_render_cuda_float64_with_an_output_used_outside():
    def f(x, y):
        m = fnp.maximum(x, y)
        return fnp.sum(m), fnp.log1p(m * -0.5)

    g = fgrad.make_graph(f)(np.ones(3), np.ones((2, 3)))
    (group,) = elementwise_groups(g)
    in_params, out_params, body, name = render_cuda(group)
    assert (in_params, out_params) == ("float64 in0, float64 in1", "float64 out0, float64 out1")
    assert body == (
        "double v0 = ((isnan(in0) || (in0 > in1)) ? in0 : in1);\n"
        "double v1 = (v0 * (-0.5));\n"
        "double v2 = log1p(v1);\n"
        "out0 = v0;\n"
        "out1 = v2;"
    )
    assert name.startswith("fgrad_maximum_multiply_log1p_")


def test_render_cuda_special_literals():
    x = np.ones(2, np.float32)
    g = fgrad.make_graph(lambda x: fnp.minimum(x + float("inf"), 1e-7) * float("nan"))(x)
    _, _, body, _ = render_cuda(elementwise_groups(g)[0])
    assert "__int_as_float(0x7f800000)" in body and "1e-07f" in body
    assert "__int_as_float(0x7fc00000)" in body


def _check_cuda(in_params, out_params, body, name, dtype):
    """Plausible CUDA: balanced parentheses, every line a statement, every input read,
    every output written once, literals typed for the float dtype."""
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
    depth = 0
    for ch in body:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    for line in body.splitlines():
        assert re.fullmatch(r"((float|double|bool) v\d+|out\d+) = .+;", line), line
    n_in = len(in_params.split(", ")) if in_params else 0
    for i in range(n_in):
        assert re.search(rf"\bin{i}\b", body), f"in{i} unread"
    for j in range(len(out_params.split(", "))):
        assert len(re.findall(rf"^out{j} = ", body, re.MULTILINE)) == 1
    for p in (in_params + ", " + out_params).split(", "):
        assert p.split()[0] in ("float32", "float64", "bool")
    numbers = re.findall(r"(?<![\w.])(\d+\.\d*(?:e[-+]?\d+)?f?|\d+e[-+]?\d+f?)", body)
    assert all(n.endswith("f") == (dtype == np.float32) for n in numbers), numbers
    if dtype == np.float64:
        assert not re.search(r"\b(expf|logf|tanhf|sqrtf|fabsf|powf)\(", body)


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_cuda_of_a_training_graph_is_well_formed(dtype):
    params, x = _mlp_args(dtype)
    g = passes.optimize(fgrad.make_graph(fgrad.value_and_grad(_mlp_loss))(params, x))
    groups = elementwise_groups(g)
    assert len(groups) >= 3
    for group in groups:
        _check_cuda(*render_cuda(group), dtype)


# ------------------------------------------------------------------------ the jit hook


class _FakeKernel:
    """cupy.ElementwiseKernel's interface; runs the numpy rendering of its source."""

    bodies: ClassVar[dict] = {}
    made: ClassVar[list] = []

    def __init__(self, in_params, out_params, operation, name, options=()):
        self.n_in = len(in_params.split(", ")) if in_params else 0
        self.fn = self.bodies[operation]
        self.calls = 0
        assert options == ("--fmad=false",)
        self.made.append(self)

    def __call__(self, *args):
        self.calls += 1
        inputs, outputs = args[: self.n_in], args[self.n_in :]
        for out, value in zip(outputs, self.fn(*inputs)):
            out[...] = value


def _fake_cupy():
    xp = types.ModuleType("cupy")  # jit's hook looks for a namespace named cupy
    xp.__getattr__ = lambda name: getattr(np, name)  # the unfused kernels run numpy
    xp.ElementwiseKernel = _FakeKernel
    return xp


def _jit_on_fake_cupy(monkeypatch, f, *args):
    """``fgrad.jit(f)`` compiled as for cupy: each group an ElementwiseKernel of its CUDA
    source, run here by the numpy rendering of that source; other ops run numpy."""
    monkeypatch.undo()  # the graph below is numpy's
    groups = elementwise_groups(fgrad.jit(f).graph(*args))
    _FakeKernel.bodies = {render_cuda(gr)[2]: render_numpy(gr) for gr in groups}
    _FakeKernel.made = []
    fusion._elementwise_kernel.cache_clear()
    xp = _fake_cupy()
    monkeypatch.setattr(jit_module, "_namespace", lambda leaves: xp)
    return fgrad.jit(f), groups


def test_jit_on_cupy_runs_groups_as_elementwise_kernels(monkeypatch):
    def f(x, b):
        h = x * gelu_tanh_gate(x) + b
        return fnp.sum(h * h, axis=-1), fnp.where(h > 0, h, 0.01 * h)

    x = fgrad.asarray(np.linspace(-2, 2, 12).reshape(3, 4).astype(np.float32))
    b = fgrad.asarray(np.float32([0.5, -0.5, 1.0, 0.0]))
    jitted, groups = _jit_on_fake_cupy(monkeypatch, f, x, b)
    for _ in range(2):
        got = jitted(x, b)
        for o, w in zip(fgrad.tree.leaves(got), fgrad.tree.leaves(f(x, b))):
            np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=1e-6)
    # One group (all but the sum), made once, launched once per call.
    assert len(groups) == 1 and len(groups[0].nodes) == 7
    assert [k.calls for k in _FakeKernel.made] == [2]
    fusion._elementwise_kernel.cache_clear()


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
def test_the_gpu_cases_through_a_stand_in_cupy(monkeypatch, dtype):
    rng = np.random.default_rng(0)
    x = fgrad.asarray(rng.standard_normal((6, 5)).astype(dtype))
    b = fgrad.asarray(rng.standard_normal(5).astype(dtype))
    for f in _cupy_cases():
        jitted, groups = _jit_on_fake_cupy(monkeypatch, f, x, b)
        for o, w in zip(fgrad.tree.leaves(jitted(x, b)), fgrad.tree.leaves(f(x, b))):
            np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=4 * np.finfo(dtype).eps)
        assert len(_FakeKernel.made) == len(groups) == 1
    params, x = _mlp_args(dtype)
    f = fgrad.value_and_grad(_mlp_loss)
    jitted, groups = _jit_on_fake_cupy(monkeypatch, f, params, x)
    for o, w in zip(fgrad.tree.leaves(jitted(params, x)), fgrad.tree.leaves(f(params, x))):
        np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=1e-4, atol=1e-6)
    assert len(_FakeKernel.made) == len(groups) >= 3
    fusion._elementwise_kernel.cache_clear()


def test_debug_nans_reruns_a_fused_graph():
    g = fgrad.make_graph(lambda x: fnp.log(x - 1.0) * 2.0)(np.ones(2))
    fused = fuse_graph(g)
    x = np.array([0.5, 2.0])
    with np.errstate(invalid="ignore"):
        outs = Program(fused, np).run([x])
    with pytest.raises(NaNError, match="fused_elementwise"):
        check_program(fused, [x], outs, "f")


def test_numpy_programs_are_not_fused():
    g = fgrad.make_graph(lambda x: fnp.exp(x) * 2.0)(np.ones(3))
    assert fusion.fuse_for(g, np) is g


# ------------------------------------------------------------------------ on a GPU


def _cupy_cases():
    def gelu_chain(x, b):
        y = x + b
        return 0.5 * y * (1.0 + fnp.tanh(0.7978845608 * (y + 0.044715 * y**3)))

    def activations(x, b):
        y = fnp.maximum(x, b) - fnp.minimum(x, 0.0)
        return nn.sigmoid(y) * fnp.logaddexp(y, b) + fnp.where(y > 0.5, fnp.abs(y), -y)

    def shared(x, b):
        a = fnp.exp(-x * x)  # used by the group and by the reduction
        return fnp.sum(a), fnp.sqrt(a + b * b) / (1.0 + a)

    return [gelu_chain, activations, shared, lambda x, b: x * gelu_tanh_gate(x) + b]


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("f", _cupy_cases())
def test_jit_on_cupy_matches_eager(f, dtype):
    import cupy

    rng = np.random.default_rng(0)
    x = fgrad.asarray(cupy.asarray(rng.standard_normal((64, 33)).astype(dtype)))
    b = fgrad.asarray(cupy.asarray(rng.standard_normal(33).astype(dtype)))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for o, w in zip(fgrad.tree.leaves(fgrad.jit(f)(x, b)), fgrad.tree.leaves(f(x, b))):
        assert isinstance(o._data, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(o._data), cupy.asnumpy(w._data), rtol=tol, atol=tol)


@needs_gpu
@pytest.mark.gpu
def test_jit_grad_on_cupy_matches_eager():
    import cupy

    params, x = _mlp_args(np.float32)
    params, x = fgrad.tree.map(lambda t: fgrad.asarray(cupy.asarray(np.asarray(t))), (params, x))
    f = fgrad.value_and_grad(_mlp_loss)
    for o, w in zip(fgrad.tree.leaves(fgrad.jit(f)(params, x)), fgrad.tree.leaves(f(params, x))):
        np.testing.assert_allclose(
            cupy.asnumpy(o._data), cupy.asnumpy(w._data), rtol=1e-4, atol=1e-6
        )


@needs_gpu
@pytest.mark.gpu
def test_special_values_on_cupy_follow_numpy():
    import cupy

    pairs = np.array(list(itertools.product(_SPECIAL, repeat=2)), np.float32)
    x, y = pairs[:, 0].copy(), pairs[:, 1].copy()

    def f(x, y):
        return fnp.maximum(x, y), fnp.minimum(x, y), fnp.sign(x * y), fnp.abs(x - y)

    got = fgrad.jit(f)(fgrad.asarray(cupy.asarray(x)), fgrad.asarray(cupy.asarray(y)))
    want = f(fgrad.asarray(x), fgrad.asarray(y))
    for o, w in zip(got, want):
        _same_bits(cupy.asnumpy(o._data), np.asarray(w))


@needs_gpu
@pytest.mark.gpu
def test_a_fused_program_launches_fewer_kernels(monkeypatch):
    import cupy

    made = []
    real = cupy.ElementwiseKernel

    class Counting:
        def __init__(self, *args, **kwargs):
            self.kernel = real(*args, **kwargs)
            self.calls = 0
            made.append(self)

        def __call__(self, *args, **kwargs):
            self.calls += 1
            return self.kernel(*args, **kwargs)

    monkeypatch.setattr(cupy, "ElementwiseKernel", Counting)
    fusion._elementwise_kernel.cache_clear()
    f = _cupy_cases()[0]  # nine elementwise ops
    x = fgrad.asarray(cupy.ones((8, 5), np.float32))
    b = fgrad.asarray(cupy.ones(5, np.float32))
    jitted = fgrad.jit(f)
    jitted(x, b)
    jitted(x, b)
    n_nodes = len(jitted.graph(x, b).nodes)
    assert n_nodes >= 8 and len(made) == 1 and made[0].calls == 2
    fusion._elementwise_kernel.cache_clear()
