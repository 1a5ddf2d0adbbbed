"""Op families and the fgrad.numpy names generated from the registry.

fgrad.numpy exports each op that declares ``numpy=`` names as it is (no hand-kept import
list); these tests pin the public names so that generating them changes none, and check
what the families declare (one derivative serving as JVP and VJP, the fast eager path for
kernels given by name, signatures).
"""

import inspect

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core.op import LINEAR, REGISTRY, Op
from fgrad.numpy import _elementwise
from fgrad.ops import elementwise as ew
from fgrad.ops._families import binary_op, linear_op, nondiff_op, unary_op, xp_kernel

# dir(fgrad.numpy) without underscores, as it was before the names were generated: new
# names may join, none of these may go.
PUBLIC = """
abs absolute acos acosh add all allclose amax amin any arange arccos arccosh arcsin arcsinh
arctan arctan2 arctanh argmax argmin argsort argwhere array array_split asarray asin asinh
astype atan atan2 atanh atleast_1d atleast_2d atleast_3d bitwise_and bitwise_invert
bitwise_not bitwise_or bitwise_xor bool bool_ broadcast_arrays broadcast_to cbrt ceil clip
complex128 complex64 concat concatenate conj conjugate cos cosh count_nonzero cross cumprod
cumsum diag diagonal diff divide dot dynamic_slice dynamic_update_slice e einsum empty
empty_like equal erf erfc exp exp2 expand_dims expm1 eye fft flatnonzero flatten flip fliplr
flipud float16 float32 float64 floor floor_divide full full_like greater greater_equal hstack
hypot identity imag inf inner int16 int32 int64 int8 interp invert isclose isfinite isinf
isnan kron less less_equal linalg linspace log log10 log1p log2 logaddexp logical_and
logical_not logical_or logical_xor logsumexp matmul matrix_transpose max maximum mean median
meshgrid min minimum mod moveaxis multiply nan nan_to_num nanmean nansum ndarray negative
newaxis nonzero not_equal ones ones_like optimization_barrier outer pad percentile
permute_dims pi positive pow power prod quantile ravel real reciprocal remainder repeat
reshape roll round searchsorted sign sin sinh sort split sqrt square squeeze stack std
stop_gradient subtract sum swapaxes take take_along_axis tan tanh tensordot tile top_k trace
transpose tril triu true_divide trunc uint16 uint32 uint64 uint8 unique unstack var vdot
vecdot vstack where zeros zeros_like
""".split()

# The ops exported under other names too (numpy's and the Array API's spellings).
ALIASES = {
    "absolute": "abs",
    "acos": "arccos",
    "acosh": "arccosh",
    "asin": "arcsin",
    "asinh": "arcsinh",
    "atan": "arctan",
    "atanh": "arctanh",
    "atan2": "arctan2",
    "pow": "power",
    "mod": "remainder",
    "true_divide": "divide",
    "conjugate": "conj",
    "bitwise_not": "invert",
    "bitwise_invert": "invert",
}

EXPORTED = [(name, op) for op in REGISTRY.values() for name in op.numpy_names]


def test_public_names_kept():
    assert not set(PUBLIC) - set(dir(fnp))
    assert not hasattr(fnp, "__all__")  # a star import takes every public name, as before


def test_star_import_list_is_the_generated_ops_and_the_wrappers():
    ops = {name for name, _ in EXPORTED}
    assert set(_elementwise.__all__) == ops | set(_elementwise._WRAPPERS)
    assert not ops & set(_elementwise._WRAPPERS)  # a wrapper never hides an op's name


@pytest.mark.parametrize("name,op", EXPORTED, ids=[n for n, _ in EXPORTED])
def test_exported_op_is_the_registry_op(name, op):
    assert getattr(fnp, name) is op
    assert name in ALIASES or name == op.name
    assert op.doc and ">>>" in op.doc  # the user documentation lives on the op


def test_aliases():
    for alias, name in ALIASES.items():
        assert getattr(fnp, alias) is REGISTRY[name]


def test_wrapped_ops_are_not_exported_as_they_are():
    # fgrad.numpy's functions of these names handle arguments the op does not
    for name in ("astype", "where", "round", "full_like"):
        assert not REGISTRY[name].numpy_names
        assert not isinstance(getattr(fnp, name), Op)


def test_signatures():
    assert str(inspect.signature(fnp.tanh)) == "(x)"
    assert str(inspect.signature(fnp.add)) == "(x, y)"
    assert str(inspect.signature(fnp.arcsin)) == "(x)"
    for name, op in EXPORTED:
        params = list(inspect.signature(op).parameters)
        assert params == list(inspect.signature(op.kernel).parameters)[1:], name


@pytest.mark.parametrize("fn,arity", [("exp", 1), ("add", 2)])
def test_kernel_by_name_is_the_lambda(fn, arity):
    kernel = xp_kernel(fn, arity)
    written = {1: lambda xp, x: xp.exp(x), 2: lambda xp, x, y: xp.add(x, y)}[arity]
    assert kernel.__code__.co_code == written.__code__.co_code
    assert kernel.__code__.co_names == (fn,)
    assert kernel(np, *([np.array([0.0])] * arity)) == written(np, *([np.array([0.0])] * arity))
    with pytest.raises(ValueError, match="not a namespace function"):
        xp_kernel("exp(x); 1", 1)


def test_kernels_by_name_take_the_fast_eager_path():
    # the numpy function itself is the bound kernel: no Python frame in between
    assert ew.exp._kernels[np.ndarray] is np.exp
    assert ew.add._kernels[np.ndarray] is np.add
    assert ew.less._kernels[np.ndarray] is np.less
    assert type(ew.tanh).__mro__[1:] == (Op, object)


def test_families_declare_both_rules_from_one_derivative():
    assert ew.tanh.jvp == ew.tanh.vjp
    assert ew.hypot.jvp == ew.hypot.vjp and len(ew.hypot.jvp) == 2
    assert ew.negative.jvp == LINEAR and ew.real.jvp == LINEAR
    assert ew.floor.nondiff and ew.less.nondiff and ew.full_like.nondiff


def _declare(family, name, *args, **kwargs):
    try:
        return family(name, *args, **kwargs)
    except Exception:
        REGISTRY.pop(name, None)
        raise


def test_new_ops_by_family():
    # one declaration each; popped again so the registry sweep does not see them
    try:
        cube = _declare(unary_op, "t_cube", lambda xp, x: x * x * x,
                        lambda t, out, x: ew.multiply(t, ew.multiply(3.0, ew.multiply(x, x))))
        diff = _declare(binary_op, "t_diff", "subtract",
                        (lambda t, out, x, y: t, lambda t, out, x, y: ew.negative(t)))
        twice = _declare(linear_op, "t_twice", lambda xp, x: 2 * x,
                         lambda ct, out, x: ew.multiply(ct, 2))
        positive = _declare(nondiff_op, "t_pos", "greater", arity=2,
                            aval=ew.greater.aval_rule)
        assert fgrad.grad(cube)(2.0) == 12.0
        assert fgrad.grad(diff, argnums=(0, 1))(1.0, 5.0) == (1.0, -1.0)
        assert fgrad.jvp(twice, (1.0,), (3.0,))[1] == 6.0
        assert fgrad.grad(twice)(1.0) == 2.0
        assert bool(positive(2.0, 1.0)) and positive.nondiff
        assert str(inspect.signature(diff)) == "(x, y)"
        assert not cube.numpy_names and not hasattr(fnp, "t_cube")
    finally:
        for name in ("t_cube", "t_diff", "t_twice", "t_pos"):
            REGISTRY.pop(name, None)


def test_numpy_names_field():
    try:
        op = _declare(unary_op, "t_named", "exp", lambda t, out, x: t, numpy=("t_named", "t2"))
        assert op.numpy_names == ("t_named", "t2")
        op = _declare(unary_op, "t_own", "exp", lambda t, out, x: t, numpy=True)
        assert op.numpy_names == ("t_own",)
    finally:
        REGISTRY.pop("t_named", None)
        REGISTRY.pop("t_own", None)
