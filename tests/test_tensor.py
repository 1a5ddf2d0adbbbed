"""The Tensor value: attributes, repr, conversions, immutability and the fast eager path."""

import math

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fgrad
import fgrad.numpy as fnp
from fgrad.core.op import Op
from fgrad.errors import MutationError
from fgrad.tensor import ShapeDtype, Tensor


def test_repr_shows_values_and_dtype():
    # Expected strings follow numpy's array repr with "array" replaced by "Tensor".
    assert repr(fgrad.asarray([1.0, 2.0], dtype="float32")) == "Tensor([1., 2.], dtype=float32)"
    assert repr(fgrad.asarray(3)) == "Tensor(3, dtype=int64)"
    assert repr(fgrad.asarray([[1, 2], [3, 4]], dtype="int32")) == (
        "Tensor([[1, 2],\n        [3, 4]], dtype=int32)"
    )
    assert repr(fgrad.asarray([True])) == "Tensor([ True], dtype=bool)"
    assert str(fgrad.asarray([1.5, 2.0])) == "[1.5 2. ]"  # like print(ndarray)


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 1, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "complex64"])
def test_shape_dtype_ndim_size_match_numpy(shape, dtype):
    a = np.zeros(shape, dtype=dtype)
    x = fgrad.asarray(a)
    assert x.shape == a.shape and isinstance(x.shape, tuple)
    assert x.dtype == a.dtype
    assert x.ndim == a.ndim
    assert x.size == a.size and isinstance(x.size, int)
    assert x.aval == ShapeDtype(a.shape, a.dtype)
    assert type(x.aval) is ShapeDtype and x.aval.ndim == a.ndim and x.aval.size == a.size


def test_aval_string_is_short_form():
    assert str(fgrad.asarray(np.zeros((2, 3), np.float32)).aval) == "f32[2,3]"
    assert str(ShapeDtype((), np.dtype(np.int64))) == "i64[]"


def test_item_assignment_raises_mutation_error_naming_at_set():
    x = fgrad.asarray([1.0, 2.0])
    with pytest.raises(MutationError, match=r"\.at\[idx\]\.set") as info:
        x[0] = 5.0
    assert isinstance(info.value, TypeError)  # catchable as the builtin
    with pytest.raises(MutationError):
        del x[0]
    assert_array_equal(np.asarray(x), [1.0, 2.0])


def test_tensor_has_no_instance_dict_and_no_hash():
    x = fgrad.asarray([1.0])
    with pytest.raises(AttributeError):
        x.foo = 1  # __slots__: no per-instance attributes
    with pytest.raises(TypeError):
        hash(x)  # equality is elementwise, as for numpy arrays


def test_array_protocol_gives_a_read_only_view():
    x = fgrad.asarray([1.0, 2.0, 3.0])
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 10.0
    assert np.shares_memory(view, np.asarray(x))  # no copy for the common case
    copy = np.array(x)  # numpy's copy=True
    assert copy.flags.writeable
    copy[0] = 10.0
    assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])


def test_array_protocol_with_dtype_and_copy_false():
    x = fgrad.asarray([1.0, 2.0])
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        np.asarray(x, dtype=np.float32, copy=False)  # numpy 2: a needed copy is an error
    assert not np.asarray(x, copy=False).flags.writeable


def test_asarray_copies_numpy_input():
    a = np.array([1.0, 2.0, 3.0])
    x = fgrad.asarray(a)
    a[0] = 100.0
    assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])
    y = fnp.array(a)
    a[1] = 100.0
    assert_array_equal(np.asarray(y), [100.0, 2.0, 3.0])


def test_asarray_of_a_tensor_is_the_same_tensor_unless_converted():
    x = fgrad.asarray([1.0, 2.0])
    assert fgrad.asarray(x) is x
    y = fgrad.asarray(x, dtype="float32")
    assert y.dtype == np.float32 and x.dtype == np.float64


def test_asarray_defaults_follow_numpy():
    assert fgrad.asarray(1.5).dtype == np.float64
    assert fgrad.asarray(2).dtype == np.int64
    assert fgrad.asarray([True, False]).dtype == np.bool_
    assert fgrad.asarray(1 + 2j).dtype == np.complex128


@pytest.mark.parametrize("value", ["abc", np.array(["a", "b"]), [object()]])
def test_asarray_rejects_non_numeric(value):
    with pytest.raises(TypeError):
        fgrad.asarray(value)


def test_python_scalar_conversions():
    x = fgrad.asarray(2.5)
    assert float(x) == 2.5 and type(float(x)) is float
    assert int(fgrad.asarray(7)) == 7
    assert complex(fgrad.asarray(1 + 2j)) == 1 + 2j
    assert bool(fgrad.asarray(1.0)) is True and bool(fgrad.asarray(0.0)) is False
    assert fgrad.asarray(3).item() == 3 and type(fgrad.asarray(3).item()) is int
    assert [0, 1, 2, 3][fgrad.asarray(2)] == 2  # __index__
    assert f"{fgrad.asarray(0.125):.2f}" == "0.12"
    assert fgrad.asarray([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_bool_of_many_elements_is_ambiguous_like_numpy():
    with pytest.raises(ValueError):
        bool(fgrad.asarray([1.0, 2.0]))


def test_len():
    assert len(fgrad.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])) == 3
    with pytest.raises(TypeError, match="0-d"):
        len(fgrad.asarray(1.0))


@pytest.mark.skipif(not hasattr(Tensor, "__getitem__"), reason="indexing ops not added yet")
def test_iter_yields_rows():
    rows = list(fgrad.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    assert len(rows) == 3 and all(isinstance(r, Tensor) for r in rows)
    assert_array_equal(np.asarray(rows[2]), [5.0, 6.0])


# ------------------------------------------------------------------------ the eager fast path
# fgrad.core.op gives ops of one or two inputs fast entry points that skip the general
# path. They must give exactly what the general path gives, for every kind of input.


def _general(op, *args, **params):
    return Op.__call__(op, *args, **params)


INPUTS = [
    lambda: fgrad.asarray(np.array([1.0, 2.0, 4.0], np.float32)),
    lambda: fgrad.asarray(np.array([3, 4, 5], np.int32)),
    lambda: fgrad.asarray(np.float64(2.5)),  # a Tensor holding a numpy scalar
    lambda: np.array([0.5, 1.5, 2.5]),
    lambda: 2.0,
    lambda: 3,
    lambda: True,
]


@pytest.mark.parametrize("i", range(len(INPUTS)))
@pytest.mark.parametrize("j", range(len(INPUTS)))
@pytest.mark.parametrize("name", ["add", "multiply", "subtract"])
def test_fast_binary_path_matches_general_path(name, i, j):
    op = getattr(fnp, name)
    x, y = INPUTS[i](), INPUTS[j]()
    try:
        general = _general(op, x, y)
    except TypeError as err:  # numpy refuses some (bool - bool): the fast path must too
        with pytest.raises(type(err)):
            op(x, y)
        return
    fast = op(x, y)
    assert isinstance(fast, Tensor)
    assert fast.dtype == general.dtype and fast.shape == general.shape
    assert_array_equal(np.asarray(fast), np.asarray(general))


@pytest.mark.parametrize("i", range(len(INPUTS)))
def test_operators_match_numpy_including_reflected(i):
    x = fgrad.asarray(np.array([1.0, 2.0, 4.0], np.float32))
    other = INPUTS[i]()
    o = np.asarray(other) if isinstance(other, Tensor) else other
    a = np.asarray(x)
    for got, want in [
        (x + other, a + o),
        (other + x, o + a),
        (x * other, a * o),
        (other * x, o * a),
        (x - other, a - o),
        (other - x, o - a),
        (-x, -a),
    ]:
        assert isinstance(got, Tensor)
        assert got.dtype == np.result_type(want), (got.dtype, np.result_type(want))
        assert_array_equal(np.asarray(got), want)


def test_fast_path_errors_name_the_op_and_shapes():
    x, y = fgrad.asarray(np.ones(3)), fgrad.asarray(np.ones(4))
    with pytest.raises(fgrad.ShapeError, match=r"add.*\(3,\).*\(4,\)|add.*f64\[3\].*f64\[4\]"):
        x + y
    with pytest.raises(ValueError):  # ShapeError is a ValueError
        fnp.multiply(x, y)


def test_unknown_inputs_raise_type_errors_naming_the_op():
    with pytest.raises(TypeError, match="cannot compute with a object"):
        fnp.add(object(), fgrad.asarray(1.0))
    with pytest.raises(TypeError, match="'add'"):
        fnp.add(fgrad.asarray(1.0), object())


def test_operators_defer_to_unknown_operand_types():
    # As JAX's operators: NotImplemented, so Python tries the other operand, then falls back
    # to identity for == and raises its usual TypeError for arithmetic.
    x = fgrad.asarray([1.0, 2.0])
    assert (x == None) is False
    assert (x != "auto") is True
    assert x not in [None, "auto"]
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "a"
    with pytest.raises(TypeError, match="unsupported operand"):
        object() * x

    class Scale:  # a user type that knows how to multiply Tensors
        def __rmul__(self, other):
            return "Scale.__rmul__"

    assert x * Scale() == "Scale.__rmul__"
    assert isinstance(x == x, Tensor)


def test_fast_path_does_not_accept_numpy_keywords():
    # Calling the numpy ufunc directly must not let ``out=`` write into user arrays.
    out = np.zeros(2)
    with pytest.raises(TypeError):
        fnp.add(fgrad.asarray([1.0, 2.0]), 1.0, out=out)
    with pytest.raises(TypeError, match="no keyword parameters"):
        _general(fnp.add, np.ones(2), 1.0, out=out)
    assert_array_equal(out, [0.0, 0.0])


def test_op_results_do_not_alias_inputs_numpy_can_change():
    a = np.array([1.0, 2.0])
    x = fnp.add(a, 0.0)  # a numpy input goes through the general path
    a[0] = 50.0
    assert_array_equal(np.asarray(x), [1.0, 2.0])


def test_many_elements_still_exact():
    a = np.linspace(-1, 1, 10**5, dtype=np.float32)
    x = fgrad.asarray(a)
    assert_array_equal(np.asarray(fnp.exp(x) * 2.0 + x), np.exp(a) * 2.0 + a)
    assert math.isclose(float(fnp.sum(x)), float(np.sum(a)), abs_tol=1e-3)


def test_formatting_traced_values():
    seen = []

    def f(x):
        seen.append(f"{fnp.sum(x)}")
        return fnp.sum(x)

    fgrad.jit(f)(fnp.ones(2))
    fgrad.vmap(f)(fnp.ones((2, 3)))
    assert seen == ["GraphTracer<f64[]>", "BatchTracer<f64[]>"]
    # Eager transforms have values: a format spec formats the value.
    fgrad.grad(lambda x: (seen.append(f"{x:.2f}"), x * x)[1])(fnp.asarray(1.5))
    assert seen[-1] == "1.50"
    with pytest.raises(fgrad.ConcretizationError, match="cannot format a traced value f64\\[\\] with '.3f'"):
        fgrad.jit(lambda x: (f"{x:.3f}", x)[1])(fnp.asarray(1.0))


def test_divmod_as_numpy_and_for_traced_floats_as_python():
    q, r = divmod(fnp.asarray([7.0, -7.0]), 3)
    nq, nr = np.divmod(np.asarray([7.0, -7.0]), 3)
    assert_array_equal(np.asarray(q), nq)
    assert_array_equal(np.asarray(r), nr)
    q, r = divmod(7, fnp.asarray(3))
    assert int(q) == 2 and int(r) == 1
    assert fgrad.jit(lambda s: divmod(s, 0.3))(1.0) == divmod(1.0, 0.3)
