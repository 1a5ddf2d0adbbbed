"""Checkpoints of typed layer params: old dict checkpoints load into the NamedTuples, new ones
round-trip, optimiser states over typed params save and load, and templates that do not
match the file fail naming the tensor."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import io as fio
from fgrad import nn, optim, random, tree

pytest.importorskip("safetensors")


def _values(rng, shape):
    return fnp.asarray(rng.standard_normal(shape).astype(np.float32))


# The dict params the layers' init returned before the params were typed, built by hand with
# the keys, nesting and containers that code made (a list for Sequential and MLP, ``{}`` for
# a layer without parameters, no "bias" key without a bias).
def _old_linear(rng, n_in, n_out, use_bias=True):
    p = {"weight": _values(rng, (n_in, n_out))}
    if use_bias:
        p["bias"] = _values(rng, (n_out,))
    return p


def _old_norm(rng, d):
    return {"scale": _values(rng, (d,)), "bias": _values(rng, (d,))}


def _old_block(rng, d, hidden):
    return {
        "norm1": _old_norm(rng, d),
        "attn": {"qkv": _old_linear(rng, d, 3 * d), "out": _old_linear(rng, d, d)},
        "norm2": _old_norm(rng, d),
        "mlp_in": _old_linear(rng, d, hidden),
        "mlp_out": _old_linear(rng, hidden, d),
    }


def _models_and_old_params():
    rng = np.random.default_rng(0)
    return [
        (nn.Linear(3, 2), _old_linear(rng, 3, 2)),
        (nn.Linear(3, 2, use_bias=False), _old_linear(rng, 3, 2, use_bias=False)),
        (nn.MLP((4, 5, 2)), [_old_linear(rng, 4, 5), _old_linear(rng, 5, 2)]),
        (
            nn.Sequential([nn.Conv2d(1, 2, 3), nn.relu, nn.MaxPool2d(2), nn.Flatten(),
                           nn.Linear(2, 3)]),
            [
                {"weight": _values(rng, (2, 1, 3, 3)), "bias": _values(rng, (2,))},
                {},
                {},
                {},
                _old_linear(rng, 2, 3),
            ],
        ),
        (nn.Embedding(7, 4), {"embedding": _values(rng, (7, 4))}),
        (nn.LayerNorm(4), _old_norm(rng, 4)),
        (nn.RMSNorm(4), {"scale": _values(rng, (4,))}),
        (nn.RMSNorm(4, use_scale=False), {}),
        (nn.TransformerBlock(8, 2, mlp_ratio=2), _old_block(rng, 8, 16)),
    ]


def _get(old, path):
    """The old dict params' leaf at a ``fgrad.tree.leaf_paths`` path of the typed params:
    a field ``.name`` of the new params is the key ``name`` of the old dicts."""
    for key in path:
        old = old[key[1:]] if key.startswith(".") else old[int(key[1:-1])]
    return old


@pytest.mark.parametrize("model, old", _models_and_old_params(), ids=lambda m: type(m).__name__)
def test_old_dict_checkpoint_loads_into_the_typed_params(tmp_path, model, old):
    path = tmp_path / "old.safetensors"
    fio.save(path, old)  # the file the dict params gave
    template = model.init(random.key(1))
    params = fio.load(path, like=template)
    assert tree.structure(params) == tree.structure(template)
    paths = tree.leaf_paths(tree.structure(params))
    assert len(paths) == len(tree.leaves(old))
    for where, leaf in zip(paths, tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(leaf), np.asarray(_get(old, where)))
    # The loaded params run: the same numbers as the old layer's arithmetic on the dicts.
    if isinstance(model, nn.Linear):
        x = _values(np.random.default_rng(5), (2, 3))
        want = np.asarray(x) @ np.asarray(old["weight"]) + np.asarray(old.get("bias", 0.0))
        np.testing.assert_allclose(np.asarray(model.apply(params, x)), want, rtol=1e-6)


@pytest.mark.parametrize("model, old", _models_and_old_params(), ids=lambda m: type(m).__name__)
def test_typed_params_flatten_in_the_old_dicts_order(model, old):
    # Lists of leaves saved from the dict params (optimiser states, as docs/optim.md showed)
    # line up with the typed structure: each leaf lands on the field of its old key.
    typed = tree.unflatten(tree.structure(model.init(random.key(0))), tree.leaves(old))
    for where, leaf in zip(tree.leaf_paths(tree.structure(typed)), tree.leaves(typed)):
        assert leaf is _get(old, where)


def test_new_checkpoints_have_the_old_tensor_names(tmp_path):
    model, old = _models_and_old_params()[-1]  # the transformer block
    import safetensors

    fio.save(tmp_path / "old.safetensors", old)
    fio.save(tmp_path / "new.safetensors", model.init(random.key(0)))
    names = []
    for name in ("old", "new"):
        with safetensors.safe_open(tmp_path / f"{name}.safetensors", framework="np") as f:
            names.append(sorted(f.keys()))
    assert names[0] == names[1]
    assert "/attn/qkv/weight" in names[1] and "/norm1/scale" in names[1]


@pytest.mark.parametrize("model, old", _models_and_old_params(), ids=lambda m: type(m).__name__)
def test_typed_params_round_trip(tmp_path, model, old):
    params = tree.map(lambda x: x + 1.0, model.init(random.key(2)))
    path = tmp_path / "new.safetensors"
    fio.save(path, params)
    back = fio.load(path, like=model.init(random.key(3)))
    assert tree.structure(back) == tree.structure(params)
    for got, want in zip(tree.leaves(back), tree.leaves(params)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # Without a template, a NamedTuple comes back as the dict of its fields.
    plain = fio.load(path)
    assert tree.structure(plain) == tree.structure(_as_dicts(params))
    for got, want in zip(tree.leaves(plain), tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _as_dicts(params):
    """The typed params with each NamedTuple replaced by the dict of its fields."""
    if isinstance(params, tuple) and hasattr(params, "_fields"):
        return {k: _as_dicts(v) for k, v in zip(params._fields, params)}
    if isinstance(params, (tuple, list)):
        return type(params)(_as_dicts(v) for v in params)
    return params


def test_plain_load_gives_the_fields_as_dicts(tmp_path):
    fio.save(tmp_path / "p.safetensors", nn.Linear(3, 2, use_bias=False).init(random.key(0)))
    plain = fio.load(tmp_path / "p.safetensors")
    assert type(plain) is dict and list(plain) == ["bias", "weight"] and plain["bias"] is None


def test_adam_state_over_typed_params_saves_loads_and_resumes(tmp_path):
    model = nn.MLP((4, 6, 3))
    params = model.init(random.key(0))
    opt = optim.adam(1e-2)
    x = _values(np.random.default_rng(1), (5, 4))

    def step(params, state):
        grads = fgrad.grad(lambda p: fnp.sum(model.apply(p, x) ** 2))(params)
        updates, state = opt.update(grads, opt.init(params) if state is None else state, params)
        return optim.apply_updates(params, updates), state

    params, state = step(params, None)
    assert type(state.mu[0]) is nn.LinearParams
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, {"params": params, "opt_state": state})
    fresh = model.init(random.key(9))
    restored = fio.load(path, like={"params": fresh, "opt_state": opt.init(fresh)})
    assert tree.structure(restored["opt_state"]) == tree.structure(state)
    assert int(restored["opt_state"].count) == 1
    # One more step from the restored checkpoint equals one more step without saving.
    want = step(params, state)
    got = step(restored["params"], restored["opt_state"])
    for a, b in zip(tree.leaves(got), tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_old_adam_state_saved_as_leaves_resumes_on_typed_params(tmp_path):
    # docs/optim.md (before typed params): save the state's leaves, rebuild it with the
    # structure of a fresh init. LayerNorm's scale and bias have one shape, so a swapped
    # order would go unnoticed by shape checks; the values say which is which.
    norm = nn.LayerNorm(4)
    old = {"bias": fnp.array([0.1, 0.2, 0.3, 0.4], dtype="float32"),
           "scale": fnp.array([1.0, 2.0, 3.0, 4.0], dtype="float32")}
    opt = optim.adam(1e-2)
    grads = {"bias": fnp.ones(4, dtype="float32"), "scale": -fnp.ones(4, dtype="float32")}
    _, old_state = opt.update(grads, opt.init(old), old)
    path = tmp_path / "ckpt.safetensors"
    fio.save(path, {"params": old, "opt_state": tree.leaves(old_state)})
    params = norm.init(None)
    saved = fio.load(path, like={"params": params, "opt_state": tree.leaves(opt.init(params))})
    state = tree.unflatten(tree.structure(opt.init(params)), saved["opt_state"])
    np.testing.assert_array_equal(np.asarray(saved["params"].scale), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(state.mu.bias), np.asarray(old_state.mu["bias"]))
    np.testing.assert_array_equal(np.asarray(state.mu.scale), np.asarray(old_state.mu["scale"]))
    assert float(state.mu.bias[0]) > 0 > float(state.mu.scale[0])  # 0.1 * g: +0.1 and -0.1


def test_like_accepts_abstract_leaves(tmp_path):
    layer = nn.Linear(3, 2)
    params = layer.init(random.key(0))
    fio.save(tmp_path / "p.safetensors", params)
    shapes = fgrad.eval_shape(layer.init, random.key(0))
    back = fio.load(tmp_path / "p.safetensors", like=shapes)
    assert type(back) is nn.LinearParams
    np.testing.assert_array_equal(np.asarray(back.weight), np.asarray(params.weight))


def test_like_on_a_foreign_file_matches_by_name(tmp_path):
    import safetensors.numpy

    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    safetensors.numpy.save_file({"/weight": w, "/bias": np.zeros(2, np.float32)},
                                str(tmp_path / "f.safetensors"))
    back = fio.load(tmp_path / "f.safetensors", like=nn.Linear(3, 2).init(random.key(0)))
    np.testing.assert_array_equal(np.asarray(back.weight), w)


@pytest.mark.parametrize(
    "saved, like, match",
    [
        # The file has no bias, the template wants one.
        (nn.Linear(3, 2, use_bias=False), nn.Linear(3, 2), r"like has leaves at \['/bias'\]"),
        # The file has a bias no leaf takes.
        (nn.Linear(3, 2), nn.Linear(3, 2, use_bias=False), r"tensors \['/bias'\] that no leaf"),
        (nn.Linear(3, 2), nn.Linear(3, 4), r"tensor '/bias' has shape \(2,\).*shape \(4,\)"),
        (nn.Linear(3, 2), nn.Linear(3, 2, param_dtype="float64"),
         r"tensor '/bias' has dtype float32.*dtype float64"),
        (nn.MLP((3, 2)), nn.MLP((3, 2, 2)), r"like has leaves at \['/1/bias', '/1/weight'\]"),
    ],
)
def test_like_that_does_not_match_names_the_tensor(tmp_path, saved, like, match):
    path = tmp_path / "p.safetensors"
    fio.save(path, saved.init(random.key(0)))
    with pytest.raises(ValueError, match=match) as info:
        fio.load(path, like=like.init(random.key(0)))
    assert str(path) in str(info.value)


def test_like_with_a_dataclass_node_is_a_type_error(tmp_path):
    import dataclasses

    @tree.register_dataclass
    @dataclasses.dataclass
    class Box:
        w: object

    fio.save(tmp_path / "p.safetensors", {"w": fnp.ones(2)})
    with pytest.raises(TypeError, match=r"like has a pytree node .*Box at the root"):
        fio.load(tmp_path / "p.safetensors", like=Box(fnp.ones(2)))


def test_like_with_a_non_str_dict_key_is_a_type_error(tmp_path):
    fio.save(tmp_path / "p.safetensors", {"a": {"1": fnp.ones(2)}})
    with pytest.raises(TypeError, match=r"like has a dict at '/a' with key 1 of type int"):
        fio.load(tmp_path / "p.safetensors", like={"a": {1: fnp.ones(2)}})
