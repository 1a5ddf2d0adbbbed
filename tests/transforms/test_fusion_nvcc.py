"""The CUDA text of elementwise fusion (fgrad/transforms/fusion.py), compiled by nvcc.

On a GPU, ``jit`` runs each fused group as a ``cupy.ElementwiseKernel`` made from
:func:`~fgrad.transforms.fusion.render_cuda`'s text. Without a GPU and cupy, that text is
otherwise only checked for its form (``test_fusion.py``), and its meaning only through
the numpy rendering of the same expressions, never as C++. Where the CUDA toolkit is
installed (``nvcc`` on PATH; no GPU needed), this module compiles the real text of every
case of ``test_fusion.py``'s CPU tests: each fusable op on the registry's inputs and on
special values (0, -0, inf, -inf, NaN, tiny, huge), float32 and float64; literals inf,
-inf, NaN, -NaN, -0.0 and the ends of each dtype's range; weak scalars; bool operands
and casts; the groups of a training step and of the GPU tests' functions. All kernels
go into one translation unit per purpose, compiled once (beside a trivial file: when
that fails too, the environment is at fault and the tests skip):

* **for the device**: each body wrapped as cupy wraps it (cupy/_core/_kernel.pyx: an
  ``extern "C" __global__`` function, a grid-stride loop, ``const T &in0 = ...`` for each
  input and ``T &out0 = ...`` for each output, then the body), compiled to PTX for sm_90
  with the options fusion gives NVRTC (``--fmad=false``). Any error or warning fails the
  case, and so does a double-precision instruction in a kernel without float64 params,
  unless the math functions it calls have it alone (an unsuffixed literal in float32
  code computes in double, many times slower on most GPUs).
* **for the host**: the same bodies as ``__host__ __device__`` functions taking the same
  references, in a shared library (``-ffp-contract=off`` as ``--fmad=false``;
  ``-Wall -Wextra -Wdouble-promotion -Wfloat-conversion``, whose warnings fail the
  case), run through ctypes on the cases' inputs (broadcast by numpy first) and compared
  with the eager numpy kernels: bit for bit (NaN, signed zeros, infinities) where IEEE
  arithmetic fixes the result (``+ - * /``, sqrt, maximum/minimum, sign, rounding,
  where, comparisons, logic, casts); otherwise with the same NaNs and infinities and to
  a few ulps (glibc's math functions are not numpy's loops), see :func:`_compare`. The
  only device-only functions the text calls, ``__int_as_float`` and
  ``__longlong_as_double`` (non-finite literals), get host definitions by their bits.

A kernel that does not compile fails its cases with nvcc's message; the others are
compiled again without it, so they are still checked.

What this cannot check: the results of CUDA's device math library (within its
documented ulps of glibc's), launches, cupy's indexing and broadcasting, memory, and
NVRTC itself (cupy compiles with NVRTC: the same front end and optimiser as nvcc, with
the CUDA math headers built in). Those need the GPU tests in ``test_fusion.py``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import itertools
import re
import shutil
import subprocess
from collections.abc import Callable

import numpy as np
import pytest
from test_fusion import (  # the CPU tests' cases, checked here on the CUDA text
    _BINARY,
    _FLOATS,
    _SPECIAL,
    _UNARY,
    _cupy_cases,
    _mlp_args,
    _mlp_loss,
    _registry_cases,
    _same_bits,
)

import fgrad
import fgrad.numpy as fnp
from fgrad.core.graph import Var
from fgrad.ops import REGISTRY
from fgrad.tensor import _wrap
from fgrad.test_util import op_args
from fgrad.transforms import fusion, passes
from fgrad.transforms.fusion import elementwise_groups, render_cuda

# cupy's C types for the param dtypes fusion writes.
_C_TYPES = {"float32": "float", "float64": "double", "bool": "bool"}
# Ops whose results IEEE arithmetic fixes exactly: the host build must match numpy's bits.
_EXACT = frozenset(
    {
        *("add", "bias_add", "subtract", "multiply", "divide", "negative", "maximum"),
        *("minimum", "relu", "abs", "sign", "stop_gradient", "round", "floor", "ceil"),
        *("trunc", "sqrt", "where", "less", "less_equal", "greater", "greater_equal"),
        *("equal", "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not"),
        *("isnan", "isinf", "isfinite", "astype"),
    }
)
# Ops that are one call of a C math function: within a few ulps of numpy's (measured:
# at most 1.5 ulps, glibc 2.36 against numpy 2.4's own loops, float32 and float64).
_ONE_CALL = (
    frozenset(
        {*fusion._SAME_NAME, "power", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"}
        | {"arctan2"}
    )
    - _EXACT
)
_ULPS = 4
# Any other group: within a few ulps of the output's largest magnitude, or of 1 where
# that is smaller (measured: at most 3.5). A function's ulp near 1 (tanh, sigmoid, exp
# near 0) survives a later cancellation (1 + tanh(z) for z << 0, in gelu_tanh_gate),
# so relative to the result it can be many ulps.
_SCALED_ULPS = 8
# Device-only functions the text may call, defined for the host by their bits.
_SHIMS = {"__int_as_float": ("float", "int"), "__longlong_as_double": ("double", "long long")}


# ------------------------------------------------------------------------ the cases


@dataclasses.dataclass
class _Kernel:
    """One fused group: its CUDA text, and its inputs and eager outputs on the CPU."""

    case: str
    in_params: str
    out_params: str
    body: str
    name: str
    shape: tuple
    inputs: list  # numpy arrays, one per in-param (they broadcast to shape)
    wants: list  # the eager values of the outputs
    tol: str  # "exact" (bit for bit), "ulps" (one math call) or "scaled" (see _compare)

    @property
    def float64(self) -> bool:
        return "float64" in f"{self.in_params}, {self.out_params}"


def _params(text: str) -> list[tuple[str, str]]:
    """``"float32 in0, bool in1"`` as ``[("float", "in0"), ("bool", "in1")]``."""
    return [(_C_TYPES[p.split()[0]], p.split()[1]) for p in text.split(", ")] if text else []


def _values(graph, leaves: list) -> dict:
    """Every Var of ``graph`` -> its eager value on ``leaves`` (the ops run one by one)."""
    env = {id(v): x for v, x in zip(graph.invars, leaves)}
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            out = node.op(
                *[env[id(v)] if isinstance(v, Var) else v for v in node.inputs], **node.params
            )
            for v, o in zip(node.outputs, out if node.op.multiple_results else (out,)):
                env[id(v)] = o
    return env


def _group_kernels(case: str, graph, leaves: list, min_size: int = 2, ops=None) -> list:
    """The kernels of ``graph``'s fused groups, with their inputs and eager outputs."""
    groups = elementwise_groups(graph, min_size=min_size)
    if ops is not None:
        assert [[n.op.name for n in g.nodes] for g in groups] == [ops], f"{case}: did not fuse"
    assert groups, f"{case}: nothing fused"
    env = _values(graph, leaves)
    kernels = []
    for group in groups:
        names = {n.op.name for n in group.nodes}
        kernels.append(
            _Kernel(
                case,
                *render_cuda(group),
                shape=tuple(group.shape),
                inputs=[np.asarray(env[id(x)] if isinstance(x, Var) else x) for x in group.inputs],
                wants=[np.asarray(env[id(v)]) for v in group.outputs],
                tol="exact" if names <= _EXACT else "ulps" if names <= _ONE_CALL else "scaled",
            )
        )
    return kernels


def _op_kernels(case: str, name: str, args: list, params: dict | None = None) -> list:
    """The kernel of ``REGISTRY[name](*args)`` alone (as ``test_fusion._fused_eval``)."""
    op = REGISTRY[name]
    scalars = (bool, int, float)
    arrays = [a for a in args if type(a) not in scalars]

    def f(*xs):
        it = iter(xs)
        return op(*[a if type(a) in scalars else next(it) for a in args], **(params or {}))

    graph = fgrad.make_graph(f)(*arrays)
    return _group_kernels(case, graph, arrays, min_size=1, ops=[name])


def _registry_specs() -> dict:
    specs = {}
    for p in _registry_cases():  # test_numpy_rendering_matches_the_kernel's cases
        name, shapes, params, dtype = p.values

        def make(name=name, shapes=shapes, params=params, dtype=dtype, case=f"registry-{p.id}"):
            args = [
                fgrad.asarray(np.asarray(a).astype(dtype))
                if getattr(a, "dtype", None) == np.float64
                else a
                for a in op_args(REGISTRY[name], shapes, params, "fusion")
            ]
            return _op_kernels(case, name, args, params)

        specs[f"registry-{p.id}"] = make
    return specs


def _special_specs() -> dict:
    specs = {}
    for dtype in _FLOATS:
        d = dtype.__name__
        x = np.array(_SPECIAL, dtype)
        pairs = np.array(list(itertools.product(_SPECIAL, repeat=2)), dtype)
        for name in _UNARY:
            if name != "logical_not":
                specs[f"special-{name}-{d}"] = functools.partial(
                    _op_kernels, f"special-{name}-{d}", name, [fgrad.asarray(x)]
                )
        for name in _BINARY:
            xy = [fgrad.asarray(pairs[:, 0].copy()), fgrad.asarray(pairs[:, 1].copy())]
            specs[f"special-{name}-{d}"] = functools.partial(
                _op_kernels, f"special-{name}-{d}", name, xy
            )
    return specs


def _semantics_specs() -> dict:
    """test_fusion's cases where C and numpy differ, weak scalars, casts and literals."""
    a = fgrad.asarray
    x = a(np.array([-0.0, 0.0, np.nan, 1.0, np.nan]))
    y = a(np.array([0.0, -0.0, 1.0, np.nan, np.nan]))
    c = a(np.array([0.0, np.nan, -0.0, 2.0]))
    b = a(np.array([True, False]))
    f32 = a(np.array([2.5, 2.5], np.float32))
    zero = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan])
    cases: dict = {
        "maximum-ties": ("maximum", [x, y], None),
        "minimum-ties": ("minimum", [x, y], None),
        "abs-zeros": ("abs", [a(zero)], None),
        "where-float-condition": ("where", [c, 1.0, 2.0], None),
        "multiply-bool-float32": ("multiply", [b, f32], None),
        "astype-float32-bool": ("astype", [a(zero.astype(np.float32))], {"dtype": np.dtype(bool)}),
        "astype-bool-float32": ("astype", [b], {"dtype": np.dtype(np.float32)}),
        "astype-float64-bool": ("astype", [a(zero)], {"dtype": np.dtype(bool)}),
        "astype-bool-float64": ("astype", [b], {"dtype": np.dtype(np.float64)}),
        "equal-bools": ("equal", [b, a(np.array([True, True]))], None),
        "logical_xor-bools": ("logical_xor", [b, a(np.array([True, True]))], None),
    }
    for dtype in _FLOATS:
        v = a(np.array([0.1, 16777217.0, -3.0, -0.0, np.inf, np.nan], dtype))
        d = dtype.__name__
        cases |= {  # test_weak_python_scalars_take_the_array_dtype
            f"weak-multiply-{d}": ("multiply", [v, 0.1], None),
            f"weak-less-{d}": ("less", [v, 0.1], None),
            f"weak-equal-{d}": ("equal", [v, 16777217], None),
            f"weak-maximum-{d}": ("maximum", [v, -1], None),
            f"weak-power-{d}": ("power", [v, 2], None),
            f"weak-subtract-{d}": ("subtract", [1e300, v], None),
            f"weak-where-{d}": (
                "where",
                [a(np.array([True, False, True, False, True, True])), v, -0.0],
                None,
            ),
        }
    specs = {
        case: functools.partial(_op_kernels, case, name, args, params)
        for case, (name, args, params) in cases.items()
    }

    for dtype in _FLOATS:
        specs |= _graph_specs(dtype)
    specs["bools-only"] = _graph_spec(  # a group of bools only
        "bools-only",
        lambda p, q: fnp.logical_xor(fnp.logical_not(p), p | q) == q,
        a(np.array([True, True, False, False])),
        a(np.array([True, False, True, False])),
    )
    return specs


def _graph_spec(case: str, f: Callable, *args, min_size: int = 2) -> Callable:
    """The kernels of ``f``'s groups, as ``fgrad.make_graph(f)(*args)`` gives them."""
    return lambda: _group_kernels(case, fgrad.make_graph(f)(*args), list(args), min_size)


def _graph_specs(dtype) -> dict:
    """Small graphs of test_fusion's CUDA text tests, and more literals and bools."""
    a, d = fgrad.asarray, dtype.__name__
    inf, nan = float("inf"), float("nan")
    v = a(np.array([-2.0, -0.0, 0.0, 1e-7, 3.0, np.inf, -np.inf, np.nan], dtype))
    w = a(np.array([1.0, -2.0, 3.0, 0.5], dtype))  # a constant array input
    half = _wrap(np.broadcast_to(dtype(0.5), (3, 4)))  # one value: a literal
    two = a(dtype(2.0))  # 0-d: a literal
    graphs = {
        # test_render_cuda_special_literals, with -inf, -0.0 and -NaN too
        "literals": (
            lambda x: (fnp.minimum(x + inf, 1e-7) * nan, fnp.maximum(x * -inf, -0.0) - (-nan)),
            v,
        ),
        # test_render_cuda_relu_backward_float32
        "relu-backward": (lambda x, ct: fnp.where(x > 0, ct, 0), v, a(np.arange(8, dtype=dtype))),
        # test_render_cuda_float64_with_an_output_used_outside, with broadcasting
        "shared-output": (
            _shared_output,
            a(np.array([0.5, -0.0, np.nan], dtype)),
            a(np.array([[0.0, 0.0, 1.0], [np.inf, -1.0, 2.0]], dtype)),
        ),
        # test_broadcast_and_constant_inputs
        "constants": (
            lambda x: fnp.maximum(x * w, 0.0) * two + half,
            a(np.linspace(-1, 1, 12).reshape(3, 4).astype(dtype)),
        ),
        # bool values in a float group, two outputs
        "mixed-bool": (
            lambda x, m: (fnp.logical_and(x > 0, ~m), fnp.where(m, fnp.isnan(x).astype(dtype), x)),
            v,
            a(np.array([True, False] * 4)),
        ),
    }
    specs = {f"{k}-{d}": _graph_spec(f"{k}-{d}", *fa) for k, fa in graphs.items()}
    # Literals at the ends of the dtype's range, each op its own kernel: 3.4028235e+38f
    # is above FLT_MAX (and rounds to it), 1e-45f below the smallest subnormal.
    specs[f"extreme-literals-{d}"] = _graph_spec(
        f"extreme-literals-{d}",
        lambda x: tuple(x * c for c in _extremes(dtype)) + (x + 16777217.0, x - 0.1),
        a(np.array([1.0, -1.0, 0.5, 0.0, -0.0, np.inf, np.nan], dtype)),
        min_size=1,
    )
    return specs


def _extremes(dtype) -> list[float]:
    fi = np.finfo(dtype)
    return [float(v) for v in (fi.max, -fi.max, fi.smallest_subnormal, fi.smallest_normal, fi.eps)]


def _shared_output(x, y):
    m = fnp.maximum(x, y)
    return fnp.sum(m), fnp.log1p(m * -0.5)


def _training_specs() -> dict:
    """The groups of test_cuda_of_a_training_graph_is_well_formed and of the GPU tests."""
    specs = {}
    for dtype in _FLOATS:
        d = dtype.__name__

        def training(dtype=dtype, case=f"training-{d}"):
            params, x = _mlp_args(dtype)
            g = passes.optimize(fgrad.make_graph(fgrad.value_and_grad(_mlp_loss))(params, x))
            return _group_kernels(case, g, fgrad.tree.leaves((params, x)))

        specs[f"training-{d}"] = training
        for k, f in enumerate(_cupy_cases()):

            def gpu_case(f=f, dtype=dtype, case=f"gpu-case-{k}-{d}"):
                rng = np.random.default_rng(0)
                x = fgrad.asarray(rng.standard_normal((6, 5)).astype(dtype))
                b = fgrad.asarray(rng.standard_normal(5).astype(dtype))
                return _group_kernels(case, fgrad.jit(f).graph(x, b), [x, b])

            specs[f"gpu-case-{k}-{d}"] = gpu_case
    return specs


_SPECS: dict[str, Callable[[], list]] = {
    **_registry_specs(),
    **_special_specs(),
    **_semantics_specs(),
    **_training_specs(),
}


def _all_kernels() -> dict:
    """case -> its kernels, or the exception building them raised (reported by its tests)."""
    kernels: dict = {}
    for case, make in _SPECS.items():
        try:
            kernels[case] = make()
        except Exception as e:  # noqa: BLE001 - shown by the case's own tests
            kernels[case] = e
    return kernels


# ------------------------------------------------------------------------ the sources

# cupy's CUPY_FOR: a grid-stride loop over the broadcast size.
_DEVICE_PRELUDE = """\
// Fused kernels as cupy.ElementwiseKernel wraps them, one per distinct source.
#define FGRAD_FOR(i, n) \\
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; \\
       i < (n); i += static_cast<long long>(blockDim.x) * gridDim.x)
"""
# CUDA's math functions, each alone in a kernel: the instructions of their own code,
# which a kernel calling them may have too (sinf's reduction of huge arguments uses
# doubles).
_MATH_CALLS = {  # C function -> (C type, arity)
    c: (t, 2 if name in ("atan2", "hypot", "pow") else 1)
    for name, fns in fusion._FUNCTIONS.items()
    if name not in ("isnan", "isinf", "isfinite")
    for c, t in zip(fns[:2], ("double", "float"))
}


def _reference_source(f: str) -> str:
    t, arity = _MATH_CALLS[f]
    args = ", ".join(f"x[{i}]" for i in range(arity))
    return (
        f'extern "C" __global__ void fgrad_reference_{f}(const {t} *x, {t} *y) {{\n'
        f"  y[0] = {f}({args});\n}}\n"
    )


_INSTRUCTION = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)", re.MULTILINE)


def _f64_instructions(ptx: str) -> set:
    """The PTX instructions (``mul.rn.f64`` ...) of ``ptx`` that work on doubles."""
    return {i for i in _INSTRUCTION.findall(ptx) if "f64" in i}


def _device_source(k: _Kernel) -> str:
    """``k``'s body as ``cupy.ElementwiseKernel`` wraps it (cupy/_core/_kernel.pyx): a
    grid-stride loop in which each input is ``const T &in0 = _raw_in0[i]``, each output
    ``T &out0 = _raw_out0[i]``, then the operation and a semicolon."""
    ins, outs = _params(k.in_params), _params(k.out_params)
    params = [f"const {t} *_raw_{n}" for t, n in ins] + [f"{t} *_raw_{n}" for t, n in outs]
    refs = [f"const {t} &{n} = _raw_{n}[i];" for t, n in ins]
    refs += [f"{t} &{n} = _raw_{n}[i];" for t, n in outs]
    return (
        f'extern "C" __global__ void {k.name}({", ".join([*params, "long long _n"])}) {{\n'
        "#pragma unroll 1\n"
        "FGRAD_FOR(i, _n) {\n" + "\n".join([*refs, k.body]) + ";\n}\n}\n"
    )


_HOST_PRELUDE = (
    "#include <cstring>\n// Host definitions of the device-only functions the text calls.\n"
    + "".join(
        f"""\
__host__ __device__ inline {r} fgrad_host{f}({a} x) {{
#ifdef __CUDA_ARCH__
  return {f}(x);
#else
  {r} y;
  std::memcpy(&y, &x, sizeof y);
  return y;
#endif
}}
#define {f} fgrad_host{f}
"""
        for f, (r, a) in _SHIMS.items()
    )
)


def _host_source(k: _Kernel) -> str:
    """``k``'s body as a ``__host__ __device__`` function of the kernel's parameters
    (inputs ``const T &``, outputs ``T &``), and an ``extern "C"`` loop calling it."""
    ins, outs = _params(k.in_params), _params(k.out_params)
    refs = [f"const {t} &{n}" for t, n in ins] + [f"{t} &{n}" for t, n in outs]
    ptrs = [f"const {t} *_raw_{n}" for t, n in ins] + [f"{t} *_raw_{n}" for t, n in outs]
    call = ", ".join(f"_raw_{n}[i]" for _, n in ins + outs)
    return (
        f"__host__ __device__ inline void {k.name}_op({', '.join(refs)}) {{\n{k.body};\n}}\n"
        f'extern "C" void {k.name}_host({", ".join(["long long _n", *ptrs])}) {{\n'
        f"  for (long long i = 0; i < _n; ++i) {k.name}_op({call});\n}}\n"
    )


def _unit(prelude: str, sources: dict) -> tuple[str, list]:
    """A translation unit of ``sources`` (kernel name -> text), and the kernel name owning
    each line (1-based line ``n`` at index ``n - 1``; None for the prelude)."""
    lines = prelude.splitlines()
    owner: list = [None] * len(lines)
    for name, text in sources.items():
        text = text.splitlines()
        lines += text
        owner += [name] * len(text)
    return "\n".join(lines) + "\n", owner


# ------------------------------------------------------------------------ compiling

# nvcc's front end: "x.cu(12): error: ..."; the host compiler: "x.cu:12:5: warning: ...".
_DIAGNOSTIC = re.compile(r"^(?P<file>\S+?)(?:\((?P<a>\d+)\)|:(?P<b>\d+):\d+):\s", re.MULTILINE)
_PROBE = """\
extern "C" __global__ void probe(const float *x, float *y) { y[threadIdx.x] = expf(x[threadIdx.x]); }
extern "C" int probe_host(void) { return 42; }
"""


@dataclasses.dataclass
class _Compile:
    """One nvcc run over a translation unit, its diagnostics sorted by kernel."""

    what: str
    path: str
    owner: list
    process: subprocess.Popen
    probe: subprocess.Popen
    rc: int = -1
    stderr: str = ""
    probe_error: str = ""  # why nvcc failed on the trivial file ("" when it did not)
    by_kernel: dict = dataclasses.field(default_factory=dict)  # name -> [messages]
    other: list = dataclasses.field(default_factory=list)  # diagnostics of no kernel

    def wait(self) -> _Compile:
        self.rc, err = _finish(self.process)
        probe_rc, probe_err = _finish(self.probe)
        if probe_rc:
            self.probe_error = probe_err.strip() or f"exit status {probe_rc}"
        # The host compiler's "x.cu: In function 'f':" lines name no line of the unit.
        err = re.sub(r"^\S+: (In function|At global scope).*\n", "", err, flags=re.MULTILINE)
        self.stderr, self.by_kernel, self.other = err, {}, []
        starts = list(_DIAGNOSTIC.finditer(err))
        for m, end in zip(starts, [s.start() for s in starts[1:]] + [len(err)]):
            line = int(m["a"] or m["b"])
            text = err[m.start() : end].strip()
            name = (
                self.owner[line - 1] if m["file"] == self.path and line <= len(self.owner) else None
            )
            (self.by_kernel.setdefault(name, []) if name else self.other).append(text)
        if self.rc and not starts:
            self.other.append(err.strip() or f"nvcc: exit status {self.rc}")
        return self

    def require(self) -> None:
        """Skip when nvcc cannot compile a trivial file this way (the environment, not us)."""
        if self.probe_error:
            pytest.skip(f"nvcc cannot compile a trivial {self.what} file: {self.probe_error}")


def _finish(process: subprocess.Popen) -> tuple[int, str]:
    """The exit status and stderr of an nvcc run (killed after ten minutes)."""
    try:
        _, err = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        err += "\nnvcc: killed after 600 s"
    return process.returncode, err


def _start(nvcc: str, what: str, tmp, args: list, prelude: str, sources: dict) -> _Compile:
    text, owner = _unit(prelude, sources)
    path, probe = tmp / f"{what}.cu", tmp / f"{what}_probe.cu"
    path.write_text(text)
    probe.write_text(_PROBE)
    ext = ".ptx" if "-ptx" in args else ".so"

    def run(src, out):
        cmd = [nvcc, *args, "-o", str(out), str(src)]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    return _Compile(
        what, str(path), owner, run(path, path.with_suffix(ext)), run(probe, probe.with_suffix(ext))
    )


def _device_arch(nvcc: str) -> str:
    """sm_90 (Hopper) when this nvcc knows it, else the newest architecture it lists."""
    cmd = [nvcc, "--list-gpu-arch"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    archs = re.findall(r"compute_(\d+)", out.stdout)
    if not archs or "90" in archs:
        return "sm_90"
    return "sm_" + max(archs, key=int)


@dataclasses.dataclass
class _Built:
    kernels: dict  # case -> [_Kernel] (or the exception building them raised)
    device: _Compile
    host: _Compile
    ptx: dict  # kernel name -> its PTX entry
    lib: ctypes.CDLL | None

    def case(self, case: str) -> list:
        kernels = self.kernels[case]
        if isinstance(kernels, Exception):
            raise kernels
        return kernels


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> _Built:
    """All kernels, compiled once for the device (PTX) and once for the host (a shared
    library), the two nvcc runs (and their probes) side by side."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc (the CUDA toolkit) is not on PATH")
    tmp = tmp_path_factory.mktemp("fusion_nvcc")
    kernels = _all_kernels()
    unique: dict = {}
    for ks in kernels.values():
        for k in ks if isinstance(ks, list) else ():
            same = unique.setdefault(k.name, k)
            assert (same.in_params, same.out_params, same.body) == (
                k.in_params,
                k.out_params,
                k.body,
            )
    args = {
        "device": ["-ptx", f"-arch={_device_arch(nvcc)}", *fusion._NVRTC_OPTIONS],
        "host": [
            *("-shared", "--fmad=false"),
            *(
                "-Xcompiler",
                "-fPIC,-ffp-contract=off,-Wall,-Wextra,-Wdouble-promotion,-Wfloat-conversion",
            ),
        ],
    }
    preludes = {"device": _DEVICE_PRELUDE, "host": _HOST_PRELUDE}
    sources = {
        "device": {f"fgrad_reference_{f}": _reference_source(f) for f in _MATH_CALLS}
        | {name: _device_source(k) for name, k in unique.items()},
        "host": {name: _host_source(k) for name, k in unique.items()},
    }
    units = {w: _start(nvcc, w, tmp, args[w], preludes[w], sources[w]) for w in args}
    for what, unit in units.items():
        unit.wait()
        if unit.rc and not unit.probe_error and unit.by_kernel:
            # Kernels that do not compile: compile the others, so that they are checked.
            rest = {n: text for n, text in sources[what].items() if n not in unit.by_kernel}
            again = _start(nvcc, what, tmp, args[what], preludes[what], rest).wait()
            again.by_kernel = {**unit.by_kernel, **again.by_kernel}
            units[what] = again
    device, host = units["device"], units["host"]
    ptx: dict = {}
    if not device.rc:
        with open(device.path[:-3] + ".ptx") as f:
            text = f.read()
        starts = list(re.finditer(r"\.entry\s+(\w+)\(", text))
        for m, end in zip(starts, [s.start() for s in starts[1:]] + [len(text)]):
            ptx[m[1]] = text[m.start() : end]
    lib = None
    if not host.probe_error:
        try:
            if ctypes.CDLL(host.path[:-3] + "_probe.so").probe_host() != 42:
                host.probe_error = "a trivial shared library returned a wrong value"
        except OSError as e:
            host.probe_error = f"a trivial shared library does not load: {e}"
    if not host.rc and not host.probe_error:
        try:
            lib = ctypes.CDLL(host.path[:-3] + ".so")
        except OSError as e:
            host.other.append(f"the shared library does not load: {e}")
    return _Built(kernels, device, host, ptx, lib)


# ------------------------------------------------------------------------ the tests

_CASES = list(_SPECS)


def _show(k: _Kernel, messages: list | None = None) -> str:
    text = f"case {k.case}, kernel {k.name}({k.in_params}; {k.out_params}):\n{k.body}"
    return text + ("\n--- nvcc:\n" + "\n".join(messages) if messages else "")


@pytest.mark.parametrize("case", _CASES)
def test_the_device_compile_is_clean(built, case):
    built.device.require()
    for k in built.case(case):
        if k.name in built.device.by_kernel:
            pytest.fail(_show(k, built.device.by_kernel[k.name]), pytrace=False)
        if k.name not in built.ptx:
            pytest.fail(_show(k, ["no PTX entry of this name", *built.device.other]), pytrace=False)
        ptx = built.ptx[k.name]
        calls = [built.ptx.get(f"fgrad_reference_{f}", "") for f in re.findall(r"(\w+)\(", k.body)]
        if not k.float64:  # no doubles but those of the math functions it calls
            found = _f64_instructions(ptx) - set().union(*map(_f64_instructions, calls))
            if found:
                why = f"double precision in a float32 kernel: {sorted(found)}"
                pytest.fail(_show(k, [why]), pytrace=False)


@pytest.mark.parametrize("case", _CASES)
def test_the_host_build_matches_eager(built, case):
    built.host.require()
    for k in built.case(case):
        if k.name in built.host.by_kernel:
            pytest.fail(_show(k, built.host.by_kernel[k.name]), pytrace=False)
        if built.lib is None:
            pytest.fail("\n".join(["no shared library", *built.host.other]), pytrace=False)
        for j, (got, want) in enumerate(zip(_run_host(built.lib, k), k.wants, strict=True)):
            try:
                _compare(got, want, k.tol)
                continue
            except AssertionError as e:
                why = f"out{j} differs ({k.tol}): {e}"
            inputs = [f"in{i} = {x!r}" for i, x in enumerate(k.inputs)]
            pytest.fail("\n".join([why, _show(k), *inputs]), pytrace=False)


def _compare(got: np.ndarray, want: np.ndarray, tol: str) -> None:
    """``got`` is ``want``: bit for bit ("exact"), to ``_ULPS`` ulps with the same NaNs,
    infinities and signed zeros ("ulps"), or with the same NaNs and infinities and
    within ``_SCALED_ULPS`` ulps of ``max(1, max |want|)`` ("scaled")."""
    if tol == "exact" or want.dtype.kind != "f":
        _same_bits(got, want)
        return
    eps = np.finfo(want.dtype).eps
    if tol == "ulps":
        _same_bits(got, want, _ULPS * eps)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    tol = _SCALED_ULPS * eps
    np.testing.assert_allclose(got[~nan], want[~nan], rtol=tol, atol=tol * scale)


def _run_host(lib: ctypes.CDLL, k: _Kernel) -> list:
    """Run ``k``'s host build on its inputs, broadcast to its shape by numpy."""
    dtypes = [np.dtype(p.split()[0]) for p in k.in_params.split(", ")] if k.in_params else []
    assert [x.dtype for x in k.inputs] == dtypes, (k.in_params, [x.dtype for x in k.inputs])
    ins = [np.ascontiguousarray(np.broadcast_to(x, k.shape)) for x in k.inputs]
    outs = [np.empty(k.shape, np.dtype(p.split()[0])) for p in k.out_params.split(", ")]
    fn = getattr(lib, k.name + "_host")
    fn.restype = None
    fn.argtypes = [ctypes.c_longlong] + [ctypes.c_void_p] * (len(ins) + len(outs))
    fn(int(np.prod(k.shape)), *[a.ctypes.data for a in ins + outs])
    return outs


def test_the_units_have_no_other_diagnostics(built):
    """Whatever nvcc says that is no kernel's (the preludes, the toolchain)."""
    for unit in (built.device, built.host):
        if not unit.probe_error:
            assert not unit.other, f"{unit.what}: " + "\n".join(unit.other)


def test_only_known_device_only_functions_are_called(built):
    """The host build defines these; a new one would need a definition (or a device-only case)."""
    called = {
        f
        for ks in built.kernels.values()
        if isinstance(ks, list)
        for k in ks
        for f in re.findall(r"\b(__\w+)\(", k.body)
    }
    assert called <= set(_SHIMS), called - set(_SHIMS)


def test_every_fusable_op_is_compiled():
    names = {s.split("-")[1] for s in _CASES if s.startswith("registry-")}
    assert names == {n for n in fusion._OPS if n != "astype"}
