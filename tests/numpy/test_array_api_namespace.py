"""fgrad.numpy's Array API helpers against array_api_strict (the reference) and numpy.

``__array_namespace_info__``, ``finfo``/``iinfo``, promotion (``result_type``,
``can_cast``, ``promote_types``), ``isdtype``, DLPack both ways, the standard's ``astype``,
``to_device``, and what immutability means for in-place operators (JAX's behaviour).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import DTypeError, MutationError, ShapeError

xps = pytest.importorskip("array_api_strict")

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128"]
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric"]


def test_namespace_info_matches_the_reference():
    ours, theirs = fnp.__array_namespace_info__(), xps.__array_namespace_info__()
    assert set(ours.capabilities()) == set(theirs.capabilities())
    assert ours.capabilities()["max dimensions"] == theirs.capabilities()["max dimensions"]
    assert ours.default_device() == fgrad.backend.CPU == fnp.ones(1).device
    assert ours.devices()[0] == ours.default_device() and isinstance(ours.devices(), tuple)
    assert {k: str(v) for k, v in ours.default_dtypes().items()} == {
        k: str(v).split(".")[-1] for k, v in theirs.default_dtypes().items()
    }
    for kind in KINDS + [None, ("bool", "complex floating")]:
        assert set(ours.dtypes(kind=kind)) == set(theirs.dtypes(kind=kind)), kind
    assert ours.dtypes(device="cpu") == ours.dtypes(device=ours.default_device())
    with pytest.raises(ValueError, match="unknown kind 'floats'"):
        ours.dtypes(kind="floats")
    with pytest.raises(ValueError, match="default_dtypes: unknown device"):
        ours.default_dtypes(device="tpu")


def test_capabilities_hold_eagerly_and_data_dependent_shapes_refuse_under_jit():
    x = fnp.array([3.0, -1.0, 2.0])
    assert_allclose(x[x > 0], [3.0, 2.0])  # "boolean indexing": True
    with pytest.raises(TypeError, match="mask"):
        fgrad.jit(lambda v: v[v > 0])(x)


def test_finfo_iinfo():
    for name in ("float32", "float64", "complex64", "complex128"):
        ours, theirs = fnp.finfo(name), xps.finfo(getattr(xps, name))
        for attr in ("bits", "eps", "max", "min", "smallest_normal"):
            assert float(getattr(ours, attr)) == float(getattr(theirs, attr)), (name, attr)
    assert fnp.finfo(fnp.ones(2, dtype="float32")).bits == 32
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        ours, theirs = fnp.iinfo(name), xps.iinfo(getattr(xps, name))
        assert (ours.bits, ours.min, ours.max) == (theirs.bits, theirs.min, theirs.max)
    with pytest.raises(DTypeError, match="finfo: int32 is not a floating"):
        fnp.finfo("int32")
    with pytest.raises(DTypeError, match="iinfo: float32 is not an integer"):
        fnp.iinfo(fnp.ones(1, dtype="float32"))


def test_promotion_within_the_standards_table_matches_the_reference():
    # The standard's table promotes within a kind (and bool with itself); array_api_strict
    # raises for the mixed kinds, where fgrad follows numpy.
    for a, b in itertools.product(NAMES, repeat=2):
        try:
            expected = str(xps.result_type(getattr(xps, a), getattr(xps, b))).split(".")[-1]
        except TypeError:
            assert fnp.result_type(a, b) == np.result_type(a, b)
            continue
        assert str(fnp.result_type(a, fnp.zeros(2, dtype=b))) == expected, (a, b)
        assert str(fnp.promote_types(a, b)) == expected
        assert fnp.can_cast(a, b) == xps.can_cast(getattr(xps, a), getattr(xps, b)), (a, b)
    # Python scalars are weak, as in the standard and in JAX.
    assert fnp.result_type(fnp.ones(1, dtype="float32"), 1.0) == np.float32
    assert fnp.result_type("int8", 1, 2) == np.int8
    assert fnp.result_type("float32", 1j) == np.complex64
    with pytest.raises(TypeError, match="result_type: needs at least one"):
        fnp.result_type(1.0, 2)
    with pytest.raises(DTypeError, match="result_type"):
        fnp.result_type("float32", "not a dtype")


def test_isdtype_matches_the_reference():
    for name, kind in itertools.product(NAMES, KINDS + NAMES):
        ref_kind = getattr(xps, kind) if kind in NAMES else kind
        assert fnp.isdtype(name, kind) == xps.isdtype(getattr(xps, name), ref_kind), (name, kind)
    assert fnp.isdtype(fnp.float32, ("integral", fnp.float32))
    with pytest.raises(ValueError, match="isdtype: unknown kind 'floats'"):
        fnp.isdtype(fnp.float32, "floats")
    with pytest.raises(DTypeError, match="isdtype: dtype must be a dtype"):
        fnp.isdtype(fnp.ones(1), "numeric")


def test_dtype_and_shape_queries_as_numpy_and_jax():
    x = fnp.ones((2, 3), dtype="float32")
    assert fnp.issubdtype(x.dtype, fnp.floating) and not fnp.issubdtype(x.dtype, fnp.integer)
    assert fnp.issubdtype(fnp.int8, fnp.signedinteger) and fnp.issubdtype("uint8", fnp.number)
    assert fnp.iscomplexobj(fnp.ones(2, dtype="complex64")) and fnp.isrealobj(x)
    assert fnp.iscomplexobj([1j]) and not fnp.iscomplexobj(1.0)
    # isscalar is jax.numpy's: a 0-d Tensor is a scalar (numpy says False for 0-d arrays).
    assert [fnp.isscalar(v) for v in (1.0, np.float32(1), fnp.sum(x), x, [1.0])] == [
        True, True, True, False, False]
    assert [fnp.iterable(v) for v in (x, fnp.sum(x), [1], 1.0)] == [True, False, True, False]
    assert (fnp.ndim(x), fnp.shape(x), fnp.size(x), fnp.size(x, 1), fnp.size(x, (0, 1))) == (
        2, (2, 3), 6, 3, 6)
    assert (fnp.ndim([[1, 2]]), fnp.shape(1.0), fnp.size([[1, 2], [3, 4]], 0)) == (2, (), 2)
    with pytest.raises(ValueError, match="size"):
        fnp.size(x, 2)
    with pytest.raises(ShapeError, match="shape"):
        fnp.shape([[1, 2], [3]])


def test_broadcast_shapes():
    cases = [((2, 1), (3,)), ((), (4, 1, 5)), ((0, 1), (1, 7)), ()]
    for shapes in cases:
        assert fnp.broadcast_shapes(*shapes) == xps.broadcast_shapes(*shapes)
    assert fnp.broadcast_shapes(3, (2, 1)) == (2, 3)
    with pytest.raises(ShapeError, match=r"broadcast_shapes: the shapes \(2, 3\), \(4,\)"):
        fnp.broadcast_shapes((2, 3), (4,))
    with pytest.raises(DTypeError, match="broadcast_shapes"):
        fnp.broadcast_shapes((2.0, 3))


def test_dlpack_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    shared, copied = fnp.from_dlpack(a), fnp.from_dlpack(a, copy=True)
    assert_allclose(shared, a) and shared.dtype == a.dtype
    a[0, 0] = 10.0  # DLPack shares memory (copy=None): the producer's change shows
    assert float(shared[0, 0]) == 10.0 and float(copied[0, 0]) == 0.0
    assert not np.asarray(shared).flags.writeable  # but fgrad never writes through it
    # numpy reads a Tensor through Tensor.__dlpack__, read-only, without a copy.
    t = fnp.linspace(0.0, 1.0, 5)
    back = np.from_dlpack(t)
    assert_allclose(back, [0.0, 0.25, 0.5, 0.75, 1.0]) and not back.flags.writeable
    assert np.shares_memory(back, np.asarray(t))
    assert fnp.from_dlpack(t, device="cpu").dtype == t.dtype
    for dtype in ("bool", "int8", "uint16", "float32", "complex128"):
        assert fnp.from_dlpack(np.ones(2, dtype=dtype)).dtype == dtype
    # array_api_strict's arrays (another namespace) come through DLPack too.
    assert_allclose(fnp.from_dlpack(xps.asarray([1.0, 2.0])), [1.0, 2.0])
    with pytest.raises(TypeError, match="from_dlpack: .* supports no DLPack"):
        fnp.from_dlpack([1.0, 2.0])
    with pytest.raises(ValueError, match="from_dlpack: unknown device"):
        fnp.from_dlpack(a, device="tpu")


def test_from_dlpack_and_astype_under_transforms():
    def f(x):
        y = fnp.from_dlpack(x)  # a traced value stays traced
        return fnp.sum(fnp.astype(y, fnp.float32, copy=False) ** 2)

    x = fnp.array([1.0, -2.0, 3.0])
    assert_allclose(fgrad.grad(f)(x), 2 * np.asarray(x))
    assert_allclose(fgrad.jit(fgrad.grad(f))(x), 2 * np.asarray(x))
    assert_allclose(fgrad.vmap(fgrad.grad(f))(fnp.stack([x, -x])), [2 * np.asarray(x), -2 * np.asarray(x)])


def test_astype_is_the_standards():
    x = fnp.array([1.7, -2.5])
    assert fnp.astype(x, fnp.float64, copy=False) is x
    assert_allclose(fnp.astype(x, "int32"), np.asarray(x).astype("int32"))
    assert fnp.astype(x, "float32", copy=True, device="cpu").dtype == np.float32
    assert x.astype("complex64").dtype == np.complex64  # the method is the same function
    assert_allclose(fgrad.grad(lambda v: fnp.sum(fnp.astype(v, "float32") * 3.0))(x), [3.0, 3.0])
    with pytest.raises(DTypeError, match="astype: copy must be True or False"):
        fnp.astype(x, "float32", copy="yes")
    with pytest.raises(ValueError, match="astype: unknown device"):
        fnp.astype(x, "float32", device="tpu")


def test_to_device():
    x = fnp.ones(3)
    assert x.to_device("cpu") is x and x.to_device(x.device) is x
    with pytest.raises(ValueError, match="to_device: stream must be None"):
        x.to_device("cpu", stream=1)
    with pytest.raises(ValueError, match="Tensor.to_device: unknown device"):
        x.to_device("tpu")


def test_in_place_operators_rebind_as_in_jax():
    # jax.Array has no __iadd__, so ``x += 1`` makes a new array and rebinds the name; the
    # array the old name shared is unchanged. Item assignment raises a TypeError naming
    # the functional update.
    x = fnp.array([1.0, 2.0])
    y = x
    x += 1
    x *= 2
    assert_allclose(y, [1.0, 2.0])
    assert_allclose(x, [4.0, 6.0])
    assert not any(hasattr(fnp.ndarray, f"__i{op}__") for op in ("add", "sub", "mul", "truediv"))
    with pytest.raises(MutationError, match=r"x = x\.at\[idx\]\.set\(value\)") as err:
        x[0] = 1.0
    assert isinstance(err.value, TypeError)
    with pytest.raises(MutationError):
        del x[0]


def test_reflected_bitwise_operators():
    m = fnp.array([True, False])
    assert (True & m).tolist() == [True, False] and (False | m).tolist() == [True, False]
    assert (6 ^ fnp.array([3, 5])).tolist() == [5, 3]
    x = fnp.array([1, 8])
    assert (x << 2).tolist() == [4, 32] and (x >> 1).tolist() == [0, 4]
    assert (1 << x).tolist() == [2, 256] and (256 >> x).tolist() == [128, 1]
