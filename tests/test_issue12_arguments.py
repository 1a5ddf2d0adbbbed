"""Regression tests for issue 12 ("No silent wrong answers"): bad static arguments raise
errors that name the function and the argument, where fgrad gave wrong results or
messages that said nothing about the call."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import _args
from fgrad.errors import DTypeError, ShapeError

# --------------------------------------------------------------------------- fgrad._args


def test_issue_12_index_accepts_numpy_integers_and_refuses_floats_and_bools():
    assert _args.index(np.int32(3), "f", "n") == 3
    assert _args.index(np.array(4), "f", "n") == 4
    for bad in (2.0, 2.5, True, np.True_, "2", None, np.array([1]), np.array(2.0)):
        with pytest.raises(DTypeError, match=r"^f: n must be an int"):
            _args.index(bad, "f", "n")
    with pytest.raises(ValueError, match="int64"):
        _args.index(2**64, "f", "n")


def test_issue_12_shape_refuses_float_sizes_even_integral_ones():
    assert _args.shape((np.int64(2), 3), "f") == (2, 3)
    assert _args.shape(np.array([2, 3]), "f") == (2, 3)
    with pytest.raises(DTypeError, match=r"f: shape must be an int or a tuple of ints, got \(2.0"):
        _args.shape((2.0, 3), "f")
    with pytest.raises(DTypeError, match="a bool"):
        _args.shape((True, 3), "f")
    with pytest.raises(ShapeError, match="negative size -1"):
        _args.shape((-1, 3), "f")
    assert _args.shape((-1, 3), "f", minus_one=True) == (-1, 3)
    with pytest.raises(ShapeError):
        _args.shape((-1, -1), "f", minus_one=True)


def test_issue_12_dtype_is_numeric_only():
    assert _args.dtype("float32", "f") == np.float32
    assert _args.dtype(None, "f") is None
    for bad in (str, object, "U3", "datetime64[s]", "timedelta64", np.dtype("V8"), "S2"):
        with pytest.raises(DTypeError, match=r"^f: dtype .* is not numeric"):
            _args.dtype(bad, "f")
    for bad in (1.5, "abc", object(), fnp.ones(2)):
        with pytest.raises(DTypeError, match=r"^f: dtype must be a dtype"):
            _args.dtype(bad, "f")


def test_bfloat16_tensors_are_refused_with_a_cast_to_suggest():
    """Differentiation and promotion know bfloat16 (numpy kind V) as no floating type, so a
    bfloat16 Tensor would have no tangent (jvp called it an integer): refused until it is
    supported, pointing to float32 (fgrad.io reads bfloat16 files as float32)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(fgrad.DTypeError, match="bfloat16 is not a Tensor dtype yet"):
        _args.dtype(ml_dtypes.bfloat16, "f")
    with pytest.raises(fgrad.DTypeError, match="bfloat16 is not a Tensor dtype yet"):
        fgrad.asarray(np.ones(2, ml_dtypes.bfloat16))


# --------------------------------------------------------------------------- creation


@pytest.mark.parametrize("dtype", [str, object, "U3", "datetime64[s]", "m8[s]", "V8"])
@pytest.mark.parametrize(
    "make",
    [
        lambda d: fnp.ones(3, dtype=d),
        lambda d: fnp.zeros(3, dtype=d),
        lambda d: fnp.empty(3, dtype=d),
        lambda d: fnp.full(3, 1, dtype=d),
        lambda d: fnp.eye(2, dtype=d),
        lambda d: fnp.identity(2, dtype=d),
        lambda d: fnp.arange(3, dtype=d),
        lambda d: fnp.linspace(0, 1, 3, dtype=d),
        lambda d: fnp.array([1, 2], dtype=d),
        lambda d: fnp.asarray([1, 2], dtype=d),
        lambda d: fgrad.asarray([1, 2], dtype=d),
        lambda d: fnp.zeros_like(fnp.ones(2), dtype=d),
        lambda d: fnp.full_like(fnp.ones(2), 1.0, dtype=d),
        lambda d: fnp.empty_like(fnp.ones(2), dtype=d),
    ],
)
def test_issue_12_creation_refuses_non_numeric_dtypes(make, dtype):
    with pytest.raises(DTypeError, match="is not numeric"):
        make(dtype)


def test_issue_12_non_numeric_values_make_no_tensor():
    with pytest.raises(DTypeError, match=r"^full: fill_value must be numeric.*got None"):
        fnp.full(3, None)
    with pytest.raises(DTypeError, match="^full: fill_value"):
        fnp.full(3, "a")
    with pytest.raises(DTypeError, match=r"^array: object must be numeric.*datetime64"):
        fnp.array(np.array(["2020-01-01"], dtype="datetime64[D]"))
    with pytest.raises(DTypeError, match="^asarray: a must be numeric"):
        fnp.asarray(["a", "b"])
    with pytest.raises(DTypeError, match="^full_like: fill_value must be a number"):
        fnp.full_like(fnp.ones(2), None)


def test_issue_12_creation_sizes_are_ints():
    with pytest.raises(DTypeError, match=r"^ones: shape must be an int or a tuple of ints, got 2"):
        fnp.ones(2.0)
    with pytest.raises(DTypeError, match=r"^full: shape .*2.5 at position 0 is a float"):
        fnp.full((2.5,), 1.0)
    with pytest.raises(DTypeError, match="^eye: N must be an int, got 2.5"):
        fnp.eye(2.5)
    with pytest.raises(DTypeError, match="^linspace: num must be an int, got 2.5"):
        fnp.linspace(0, 1, 2.5)
    with pytest.raises(ValueError, match="^linspace: num must be >= 0"):
        fnp.linspace(0, 1, -1)
    with pytest.raises(ShapeError, match="^zeros: shape .* negative size"):
        fnp.zeros((2, -3))
    with pytest.raises(ValueError, match="^arange: step must not be 0"):
        fnp.arange(0, 3, 0)
    assert fnp.ones(np.int64(2)).shape == (2,)
    assert fnp.zeros((np.int32(2), 3)).shape == (2, 3)
    assert fnp.eye(np.int64(2)).shape == (2, 2)


def test_issue_12_unknown_device_names_the_function():
    with pytest.raises(ValueError, match="^zeros: unknown device 'tpu'"):
        fnp.zeros(2, device="tpu")
    with pytest.raises(DTypeError, match="^arange: device must be"):
        fnp.arange(3, device=0)


# --------------------------------------------------------------------------- shape functions


def test_issue_12_reshape_does_not_truncate_float_sizes():
    x = fnp.ones(6)
    with pytest.raises(DTypeError, match=r"^reshape: shape must be .*got \(2.9, 3\)"):
        fnp.reshape(x, (2.9, 3))
    with pytest.raises(DTypeError, match="^reshape: shape"):
        x.reshape(2.0, 3)
    with pytest.raises(DTypeError, match="^reshape: shape"):
        fnp.reshape(x, (True, 6))
    assert fnp.reshape(x, (np.int64(2), -1)).shape == (2, 3)
    assert fnp.reshape(x, np.array([3, 2])).shape == (3, 2)


def test_issue_12_broadcast_to_refuses_float_sizes():
    with pytest.raises(DTypeError, match=r"^broadcast_to: shape must be .*got \(2.0, 3\)"):
        fnp.broadcast_to(fnp.ones(3), (2.0, 3))
    with pytest.raises(ShapeError, match="^broadcast_to: shape .* negative size"):
        fnp.broadcast_to(fnp.ones(3), (-2, 3))


def test_issue_12_repeat_tile_split_and_pad_counts_are_ints():
    x = fnp.array([1.0, 2.0])
    with pytest.raises(DTypeError, match="^repeat: repeats must be an int"):
        fnp.repeat(x, 2.5)
    with pytest.raises(DTypeError, match="^repeat: repeats"):
        fnp.repeat(x, [1.0, 2.0])
    np.testing.assert_array_equal(fnp.repeat(x, np.int64(2)), np.repeat([1.0, 2.0], 2))
    with pytest.raises(DTypeError, match="^tile: reps must be an int or a tuple of ints"):
        fnp.tile(x, 2.5)
    with pytest.raises(DTypeError, match="^split: indices_or_sections"):
        fnp.split(x, 1.5)
    with pytest.raises(DTypeError, match="^array_split: indices_or_sections"):
        fnp.array_split(x, [0.5])
    with pytest.raises(DTypeError, match="^pad: pad_width"):
        fnp.pad(x, 1.5)
    with pytest.raises(DTypeError, match="^expand_dims: axis must be an int or a tuple of ints"):
        fnp.expand_dims(x, 0.0)


def test_issue_12_shape_functions_name_themselves_for_bad_arrays():
    for call, name in [
        (lambda: fnp.concatenate(1.5), "concatenate"),
        (lambda: fnp.concat([fnp.ones(()), fnp.ones(())]), "concat"),
        (lambda: fnp.stack(None), "stack"),
        (lambda: fnp.hstack(object()), "hstack"),
        (lambda: fnp.transpose("abc"), "transpose"),
        (lambda: fnp.fliplr(fnp.ones(3)), "fliplr"),
        (lambda: fnp.swapaxes(fnp.ones((2, 3)), 0, 1.0), "swapaxes"),
        (lambda: fnp.moveaxis(fnp.ones((2, 3)), 0, 5), "moveaxis"),
        (lambda: fnp.roll(fnp.ones(3), 1.5), "roll"),
    ]:
        with pytest.raises((TypeError, ValueError), match=f"^{name}: "):
            call()


# --------------------------------------------------------------------------- elementwise


def test_issue_12_round_decimals_is_an_int():
    x = fnp.array([1.234, 5.678])
    with pytest.raises(DTypeError, match="^round: decimals must be an int, got 1.5"):
        fnp.round(x, decimals=1.5)
    with pytest.raises(DTypeError, match="^round: decimals"):
        x.round(2.0)
    np.testing.assert_allclose(fnp.round(x, np.int64(1)), [1.2, 5.7])


def test_issue_12_clip_bound_given_twice_is_refused():
    x = fnp.array([-1.0, 0.5, 2.0])
    with pytest.raises(ValueError, match="^clip: the min bound is given twice"):
        fnp.clip(x, 0.0, 1.0, min=0.5)
    with pytest.raises(ShapeError, match="^clip: input shapes do not broadcast"):
        fnp.clip(x, fnp.zeros(2), 1.0)
    np.testing.assert_array_equal(fnp.clip(x, min=0.0, max=1.0), [0.0, 0.5, 1.0])


def test_issue_12_astype_and_nan_to_num_check_their_arguments():
    with pytest.raises(DTypeError, match="^astype: dtype must be a dtype"):
        fnp.astype(fnp.ones(2), 1.5)
    with pytest.raises(DTypeError, match="^astype: dtype str .* is not numeric"):
        fnp.ones(2).astype(str)
    with pytest.raises(DTypeError, match="^nan_to_num: nan must be a real number, got None"):
        fnp.nan_to_num(fnp.ones(2), nan=None)
    with pytest.raises(DTypeError, match="^positive: not defined for bool"):
        fnp.positive(True)


# --------------------------------------------------------------------------- random


def test_issue_12_prngkey_is_jax_name_for_key():
    from fgrad import random

    np.testing.assert_array_equal(random.PRNGKey(42), random.key(42))
    assert random.PRNGKey is random.key
    assert "PRNGKey" in random.__all__


def test_issue_12_random_arguments_name_the_sampler():
    from fgrad import random

    k = random.key(0)
    with pytest.raises(DTypeError, match="^random.normal: dtype must be a dtype"):
        random.normal(k, (2,), dtype=1.5)
    with pytest.raises(DTypeError, match="^random.uniform: shape must be an int or a tuple"):
        random.uniform(k, (2.0,))
    with pytest.raises(DTypeError, match="^random.categorical: axis must be an int"):
        random.categorical(k, fnp.zeros((2, 3)), axis=1.0)
    with pytest.raises(DTypeError, match="^random.choice: replace must be True or False"):
        random.choice(k, 5, (2,), replace="no")
    with pytest.raises(DTypeError, match="^random.permutation: axis must be an int"):
        random.permutation(k, 5, axis=0.5)
    with pytest.raises(ValueError, match="^random.key: unknown device"):
        random.key(0, device="tpu")
    with pytest.raises(TypeError, match="^dropout: key: expected a key"):
        fgrad.nn.dropout(fnp.ones(3), 0.5, key=1.5)


# --------------------------------------------------------------------------- nn


def test_issue_12_conv2d_refuses_zero_dilation():
    x = fnp.ones((1, 1, 4, 4))
    w = fnp.ones((1, 1, 1, 1))
    with pytest.raises(ValueError, match=r"^conv2d: dilation must be >= 1, got 0"):
        fgrad.nn.conv2d(x, w, dilation=0)
    with pytest.raises(ValueError, match=r"^conv2d: stride must be >= 1"):
        fgrad.nn.conv2d(x, w, stride=(1, 0))
    with pytest.raises(DTypeError, match=r"^conv2d: stride must be an int or a pair of ints"):
        fgrad.nn.conv2d(x, w, stride=1.5)
    with pytest.raises(ValueError, match=r"^conv2d: groups must be >= 1"):
        fgrad.nn.conv2d(x, w, groups=0)
    with pytest.raises(ValueError, match=r"^conv2d: padding must be >= 0"):
        fgrad.nn.conv2d(x, w, padding=-1)
    with pytest.raises(ValueError, match=r"^Conv2d: dilation must be >= 1"):
        fgrad.nn.Conv2d(1, 1, 3, dilation=0)


def test_issue_12_pools_take_int_windows():
    x = fnp.ones((1, 1, 4, 4))
    with pytest.raises(DTypeError, match=r"^max_pool2d: window must be an int or a pair of ints"):
        fgrad.nn.max_pool2d(x, 2.5)
    with pytest.raises(ValueError, match=r"^avg_pool2d: window must be >= 1"):
        fgrad.nn.avg_pool2d(x, 0)
    with pytest.raises(DTypeError, match="^MaxPool2d: window"):
        fgrad.nn.MaxPool2d(2.0)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: fgrad.nn.Linear(2.5, 3), "^Linear: in_features must be an int, got 2.5"),
        (lambda: fgrad.nn.Linear(2, 0), "^Linear: out_features must be >= 1"),
        (lambda: fgrad.nn.Linear(2, 3, param_dtype="int32"), "^Linear: param_dtype must be a"),
        (lambda: fgrad.nn.Linear(2, 3, kernel_init=1.0), "^Linear: kernel_init must be a function"),
        (lambda: fgrad.nn.Embedding(10.0, 4), "^Embedding: vocab_size must be an int"),
        (lambda: fgrad.nn.MLP([2, 3.5]), "^MLP: sizes must be an int"),
        (lambda: fgrad.nn.LayerNorm(3, eps=-1.0), "^LayerNorm: eps must be >= 0"),
        (lambda: fgrad.nn.RMSNorm(3.0), "^RMSNorm: d_model must be an int"),
        (lambda: fgrad.nn.Dropout("0.5"), "^Dropout: rate must be a real number"),
        (lambda: fgrad.nn.Flatten(1.0), "^Flatten: start_axis must be an int"),
        (lambda: fgrad.nn.Sequential(None), "^Sequential: layers must be a sequence"),
        (lambda: fgrad.nn.MultiHeadAttention(8, 2.0), "^MultiHeadAttention: n_heads must be"),
        (lambda: fgrad.nn.TransformerBlock(8, 3), "^TransformerBlock: d_model=8 is not divisible"),
        (lambda: fgrad.nn.TransformerBlock(8, 2, dropout_rate=1.5), "^TransformerBlock: dropout"),
    ],
)
def test_issue_12_layer_constructors_check_their_fields(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


def test_issue_12_causal_mask_size_is_an_int():
    with pytest.raises(DTypeError, match="^causal_mask: seq_len must be an int, got 2.5"):
        fgrad.nn.causal_mask(2.5)
    assert fgrad.nn.causal_mask(np.int64(2)).shape == (2, 2)


def test_issue_12_dot_product_attention_needs_sequences():
    with pytest.raises(ShapeError, match="^dot_product_attention: q must be .* at least 2"):
        fgrad.nn.dot_product_attention(fnp.ones(4), fnp.ones((3, 4)), fnp.ones((3, 2)))
    q = fnp.ones((2, 4))
    with pytest.raises(DTypeError, match="^dot_product_attention: mask must be a bool"):
        fgrad.nn.dot_product_attention(q, q, q, mask=fnp.ones((2, 2)))
    with pytest.raises(ShapeError, match="^dot_product_attention: mask of shape"):
        fgrad.nn.dot_product_attention(q, q, q, mask=fnp.ones((3, 3), dtype=bool))


def test_issue_12_initializers_check_their_arguments():
    init = fgrad.nn.initializers
    key = fgrad.random.key(0)
    with pytest.raises(DTypeError, match=r"^glorot_uniform: in_axis must be an int"):
        init.glorot_uniform(in_axis=1.5)
    with pytest.raises(ValueError, match=r"^normal: stddev must be >= 0"):
        init.normal(-1.0)
    with pytest.raises(DTypeError, match=r"^zeros: shape must be an int or a tuple of ints"):
        init.zeros(key, (2.0, 3))
    with pytest.raises(DTypeError, match=r"^he_normal: parameters must be real floating"):
        init.he_normal()(key, (2, 3), "int32")


def test_issue_12_losses_and_one_hot_name_themselves():
    nn = fgrad.nn
    x = fnp.ones((2, 3))
    with pytest.raises(DTypeError, match="^mse: axis must be an int or a tuple of ints"):
        nn.mse(x, x, axis=1.0)
    with pytest.raises(ShapeError, match="^mse: input shapes do not broadcast"):
        nn.mse(x, fnp.ones(4))
    with pytest.raises(DTypeError, match="^mse: predictions must be numeric"):
        nn.mse("abc", x)
    with pytest.raises(DTypeError, match="^softmax_cross_entropy: axis must be an int"):
        nn.softmax_cross_entropy(x, fnp.array([0, 1]), axis=1.5)
    with pytest.raises(DTypeError, match="^binary_cross_entropy_with_logits: logits must be real"):
        nn.binary_cross_entropy_with_logits(x + 1j, x)
    with pytest.raises(DTypeError, match="^one_hot: dtype str .* is not numeric"):
        nn.one_hot(fnp.array([0, 1]), 2, dtype=str)
    with pytest.raises(DTypeError, match="^one_hot: num_classes must be an int, got 2.0"):
        nn.one_hot(fnp.array([0, 1]), 2.0)
    assert nn.mse(fnp.ones(3, dtype="float32"), 0.0).dtype == np.float32


# --------------------------------------------------------------------------- lax


def test_issue_12_lax_refuses_string_predicates_and_non_functions():
    lax = fgrad.lax
    x = fnp.ones(2)
    with pytest.raises(DTypeError, match="^cond: pred must be numeric.*'yes'"):
        lax.cond("yes", lambda x: x, lambda x: -x, x)
    with pytest.raises(DTypeError, match="^cond: pred"):
        lax.cond(None, lambda x: x, lambda x: -x, x)
    with pytest.raises(DTypeError, match="^cond: false_fun must be a function"):
        lax.cond(True, lambda x: x, None, x)
    with pytest.raises(DTypeError, match="^while_loop: cond_fun must be a function"):
        lax.while_loop("c < 3", lambda c: c + 1, 0)
    with pytest.raises(DTypeError, match="^fori_loop: lower must be numeric"):
        lax.fori_loop("0", 3, lambda i, c: c, x)
    with pytest.raises(DTypeError, match="^fori_loop: init_val must be numeric"):
        lax.fori_loop(0, 3, lambda i, c: c, {"a": "abc"})
    with pytest.raises(DTypeError, match="^switch: branches must be a sequence of functions"):
        lax.switch(0, lambda x: x, x)
    with pytest.raises(DTypeError, match="^scan: length must be an int"):
        lax.scan(lambda c, _: (c, c), 0.0, None, length=2.5)


# --------------------------------------------------------------------------- tree


def test_issue_12_tree_functions_check_their_arguments():
    from fgrad import tree

    params = {"w": 1, "b": [2, 3]}
    with pytest.raises(DTypeError, match=r"^tree.leaf_paths: treedef must be a TreeDef.*"
                       r"tree.structure\(tree\)"):
        tree.leaf_paths(params)
    assert tree.leaf_paths(tree.structure(params)) == [("['b']", "[0]"), ("['b']", "[1]"),
                                                       ("['w']",)]
    with pytest.raises(DTypeError, match="^tree.unflatten: treedef must be a TreeDef"):
        tree.unflatten(params, [1, 2, 3])
    with pytest.raises(DTypeError, match="^tree.map: f must be a function"):
        tree.map(params, params)
    with pytest.raises(DTypeError, match="^tree.flatten: is_leaf must be a function"):
        tree.flatten(params, is_leaf=True)
    with pytest.raises(ValueError, match="^register_dataclass: meta_fields .* are not fields"):
        import dataclasses

        @tree.register_dataclass(meta_fields=("c",))
        @dataclasses.dataclass
        class P:
            a: int


# --------------------------------------------------------------------------- sorting


def test_issue_12_percentile_of_nan_is_refused():
    x = fnp.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"^percentile: percentiles must be in \[0, 100\], got na"):
        fnp.percentile(x, float("nan"))
    with pytest.raises(ValueError, match=r"^percentile: percentiles must be in \[0, 100\]"):
        fnp.percentile(x, 150)
    with pytest.raises(ValueError, match=r"^quantile: quantiles must be in \[0, 1\]"):
        fnp.quantile(x, fnp.array([0.5, float("nan")]))
    assert float(fnp.percentile(x, 50)) == 2.0


def test_issue_12_sorting_arguments_name_the_function():
    x = fnp.array([3.0, 1.0, 2.0])
    with pytest.raises(DTypeError, match="^sort: axis must be an int"):
        fnp.sort(x, axis=0.0)
    with pytest.raises(DTypeError, match="^argsort: complex values have no order"):
        fnp.argsort(x + 1j)
    with pytest.raises(DTypeError, match="^top_k: k must be a static int, got 2.0"):
        fnp.top_k(x, 2.0)
    with pytest.raises(ValueError, match="^searchsorted: side must be one of"):
        fnp.searchsorted(x, 1.0, side="middle")
    with pytest.raises(DTypeError, match="^nonzero: size must be an int"):
        fnp.nonzero(x, size=1.5)
    with pytest.raises(DTypeError, match="^unique: return_counts must be True or False"):
        fnp.unique(x, return_counts="yes")
    with pytest.raises(ValueError, match="^median: method|^quantile: method must be one of"):
        fnp.quantile(x, 0.5, method="cubic")


# --------------------------------------------------------------------------- extras


def test_issue_12_diff_with_many_differences_does_not_loop():
    x = fnp.array([1.0, 4.0, 9.0])
    assert fnp.diff(x, n=10**12).shape == np.diff(np.array([1.0, 4.0, 9.0]), n=5).shape == (0,)
    with pytest.raises(DTypeError, match="^diff: n must be an int, got 1.5"):
        fnp.diff(x, n=1.5)
    with pytest.raises(ValueError, match="^diff: n=18446744073709551616 is beyond"):
        fnp.diff(x, n=2**64)


def test_issue_12_extras_check_their_arguments():
    m = fnp.ones((2, 2))
    with pytest.raises(DTypeError, match="^tril: k must be an int, got 1.5"):
        fnp.tril(m, 1.5)
    with pytest.raises(DTypeError, match="^diag: k must be an int"):
        fnp.diag(m, k=(1,))
    with pytest.raises(DTypeError, match="^isclose: rtol must be a real number"):
        fnp.isclose(m, m, rtol="1e-5")
    with pytest.raises(ShapeError, match="^allclose: input shapes do not broadcast"):
        fnp.allclose(m, fnp.ones(3))
    with pytest.raises(ShapeError, match="^cross: incompatible vector lengths 0"):
        fnp.cross(fnp.ones(0), fnp.ones(3))
    with pytest.raises(ShapeError, match="^interp: left must be a scalar"):
        fnp.interp(fnp.ones(2), fnp.array([0.0, 1.0]), fnp.array([0.0, 1.0]), left=fnp.ones(2))
    with pytest.raises(ValueError, match="^meshgrid: indexing must be one of"):
        fnp.meshgrid(fnp.ones(2), indexing="ji")


# --------------------------------------------------------------------------- indexing


def test_issue_12_take_and_dynamic_slices_check_their_arguments():
    x = fnp.arange(6.0).reshape(2, 3)
    with pytest.raises(DTypeError, match="^take: indices must be integers, got 1.5"):
        fnp.take(x, 1.5)
    with pytest.raises(IndexError, match="^take: index 5 is out of bounds"):
        fnp.take(x, 5, axis=1)
    with pytest.raises(DTypeError, match="^take_along_axis: indices must be integers"):
        fnp.take_along_axis(x, fnp.ones((2, 1)), axis=1)
    with pytest.raises(DTypeError, match="^dynamic_slice: slice_sizes must be an int or a tuple"):
        fnp.dynamic_slice(x, (0, 0), (1.0, 2))
    with pytest.raises(DTypeError, match="^dynamic_slice: start_indices must be a sequence"):
        fnp.dynamic_slice(x, 0, (1, 2))
    with pytest.raises(DTypeError, match="^dynamic_update_slice: start_indices must be integer"):
        fnp.dynamic_update_slice(x, fnp.ones((1, 1)), (0.5, 0))


# --------------------------------------------------------------------------- dtype names


@pytest.mark.parametrize("name", ["bool_", "bool", "int32", "int64", "float16", "float32",
                                  "float64", "complex64", "complex128"])
def test_issue_12_numpy_dtype_names_are_callable(name):
    t = getattr(fnp, name)
    want = np.dtype(getattr(np, name))
    x = t(1)
    assert isinstance(x, fgrad.Tensor) and x.shape == () and x.dtype == want
    assert t([1, 0]).dtype == want and t([1, 0]).shape == (2,)
    assert np.dtype(t) == want and t == want and want == t and t == getattr(np, name)
    assert fnp.zeros(2, dtype=t).dtype == want
    assert t.kind == want.kind and t.itemsize == want.itemsize
    assert {want: 1}[t] == 1


def test_issue_12_dtype_names_refuse_strings_and_trace():
    with pytest.raises(DTypeError, match="^float32: value must be numeric"):
        fnp.float32("1.5")
    assert fgrad.jit(lambda v: fnp.float32(v))(2.0).dtype == np.float32
    assert fgrad.grad(lambda v: fnp.float64(v) * 3.0)(2.0) == 3.0


def test_issue_12_calling_the_tensor_class_is_refused():
    for make in (lambda: fgrad.Tensor(), lambda: fnp.ndarray((2, 3))):
        with pytest.raises(TypeError, match="^Tensor: Tensors are not made by calling"):
            make()


def test_issue_12_conv_op_refuses_zero_dilation_eagerly():
    from fgrad.ops import conv

    x, w = fnp.ones((1, 1, 4, 4)), fnp.ones((1, 1, 1, 1))
    pad = ((0, 0), (0, 0))
    with pytest.raises(ShapeError, match="^conv2d: bad parameters"):
        conv.conv2d(x, w, stride=(1, 1), padding=pad, dilation=(0, 1), groups=1)
    with pytest.raises(ShapeError, match="^max_pool2d: window"):
        conv.max_pool2d(x, window=(0, 2), stride=(1, 1), padding=pad)


def test_issue_12_asarray_refuses_objects_even_as_bool():
    for make in (lambda: fgrad.asarray(object(), dtype=bool), lambda: fnp.bool_(object())):
        with pytest.raises(DTypeError, match="must be numeric"):
            make()
    np.testing.assert_array_equal(fgrad.asarray(range(3)), [0, 1, 2])


def test_issue_12_check_grads_checks_its_arguments():
    from fgrad.test_util import check_grads

    x = fnp.array([0.3, 1.2])
    with pytest.raises(DTypeError, match="^check_grads: order must be an int, got 1.5"):
        check_grads(fnp.sin, (x,), order=1.5)  # it checked nothing of order 1.5
    with pytest.raises(ValueError, match="^check_grads: order must be >= 1"):
        check_grads(fnp.sin, (x,), order=0)
    with pytest.raises(TypeError, match=r"^check_grads: args must be a tuple .* pass \(x,\)"):
        check_grads(fnp.sin, x)
    check_grads(fnp.sin, (x,), order=1, modes="fwd")  # one mode as a string


# ------------------------------------- linalg, reductions, norms and activations (sweep)


def test_issue_12_trace_and_diagonal_check_offset_and_axes():
    x = fnp.ones((2, 3))
    with pytest.raises(DTypeError, match=r"^trace: offset must be an int, got 1.5"):
        fnp.trace(x, offset=1.5)
    with pytest.raises(DTypeError, match=r"^diagonal: axis2 must be an int"):
        fnp.diagonal(x, axis2=1.5)
    with pytest.raises(ValueError, match=r"^diagonal: offset=.* int64"):
        fnp.diagonal(x, offset=2**64)
    with pytest.raises(ShapeError, match=r"^trace: axis1 and axis2 are the same axis"):
        x.trace(axis1=-1)
    np.testing.assert_array_equal(
        np.asarray(fnp.diagonal(fnp.arange(6.0).reshape(2, 3), 1)),
        np.diagonal(np.arange(6.0).reshape(2, 3), 1),
    )


def test_issue_12_products_name_themselves_for_bad_inputs():
    with pytest.raises(ValueError, match=r"^vdot: a=.* int64"):
        fnp.vdot(2**64, fnp.ones(1))
    with pytest.raises(DTypeError, match=r"^dot: a must be"):
        fnp.dot("abc", fnp.ones(3))
    with pytest.raises(ShapeError, match=r"^dot: shapes"):
        fnp.dot(fnp.ones((2, 3)), fnp.ones(2))
    with pytest.raises(ShapeError, match=r"^vecdot: the summed axis"):
        fnp.vecdot(fnp.ones((2, 3)), fnp.ones(3), axis=0)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12.0).reshape(2, 3)
    np.testing.assert_allclose(
        np.asarray(fnp.vecdot(fnp.asarray(a), fnp.asarray(b), axis=0)), np.vecdot(a, b, axis=0)
    )


def test_issue_12_linalg_checks_flags_orders_and_tolerances():
    x = fnp.eye(2)
    with pytest.raises(DTypeError, match=r"^norm: keepdims must be True or False"):
        fnp.linalg.norm(x, keepdims="abc")
    with pytest.raises(ValueError, match=r"^matrix_norm: invalid norm order 1.5"):
        fnp.linalg.matrix_norm(x, ord=1.5)
    with pytest.raises(DTypeError, match=r"^pinv: rcond must be a real number"):
        fnp.linalg.pinv(x, rcond="abc")
    with pytest.raises(DTypeError, match=r"^pinv: hermitian must be True or False"):
        fnp.linalg.pinv(x, hermitian="yes")
    with pytest.raises(ValueError, match=r"^eigh: UPLO must be one of 'L', 'U'"):
        fnp.linalg.eigh(x, UPLO="X")
    with pytest.raises(DTypeError, match=r"^cholesky: a must be"):
        fnp.linalg.cholesky(None)


def test_issue_12_reductions_check_ddof_keepdims_and_where():
    x = fnp.ones((2, 3))
    with pytest.raises(DTypeError, match=r"^std: ddof must be a real number"):
        fnp.std(x, ddof="abc")
    with pytest.raises(DTypeError, match=r"^var: correction must be a real number"):
        fnp.var(x, correction=(1,))
    with pytest.raises(DTypeError, match=r"^mean: keepdims must be True or False"):
        fnp.mean(x, keepdims=None)
    with pytest.raises(DTypeError, match=r"^sum: where must be a bool"):
        fnp.sum(x, where=fnp.ones(3))
    with pytest.raises(DTypeError, match=r"^nansum: x must be"):
        fnp.nansum(None)
    np.testing.assert_allclose(
        np.asarray(fnp.var(x, ddof=1.5, axis=0)), np.var(np.ones((2, 3)), ddof=1.5, axis=0)
    )


def test_issue_12_layer_norm_rms_norm_and_activations_check_arguments():
    x = fnp.ones((2, 3))
    with pytest.raises(DTypeError, match=r"^layer_norm: x must be"):
        fgrad.nn.layer_norm("abc")
    with pytest.raises(DTypeError, match=r"^layer_norm: axis must be an int"):
        fgrad.nn.layer_norm(x, axis=1.5)
    with pytest.raises(ValueError, match=r"^rms_norm: eps must be >= 0"):
        fgrad.nn.rms_norm(x, eps=-1)
    with pytest.raises(ShapeError, match=r"^rms_norm: scale of shape \(2,\)"):
        fgrad.nn.rms_norm(x, fnp.ones(2))
    with pytest.raises(ValueError, match=r"^gelu: approximate must be one of"):
        fgrad.nn.gelu(x, approximate="fast")
    with pytest.raises(DTypeError, match=r"^silu: x must be a Tensor"):
        fgrad.nn.silu([1.0])
    with pytest.raises(DTypeError, match=r"^softplus: defined for real input only"):
        fgrad.nn.softplus(1j)
