"""Layer params are typed: a NamedTuple per layer, read by attribute; misspelt fields and
dict-style access fail where they are written, with messages naming the class and fields."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim, random, tree

LAYERS = [
    (nn.Linear(3, 2), nn.LinearParams, ("bias", "weight")),
    (nn.Conv2d(1, 2, 3), nn.Conv2dParams, ("bias", "weight")),
    (nn.Embedding(5, 3), nn.EmbeddingParams, ("embedding",)),
    (nn.LayerNorm(3), nn.LayerNormParams, ("bias", "scale")),
    (nn.RMSNorm(3), nn.RMSNormParams, ("scale",)),
    (nn.MultiHeadAttention(4, 2), nn.MultiHeadAttentionParams, ("out", "qkv")),
    (
        nn.TransformerBlock(4, 2),
        nn.TransformerBlockParams,
        ("attn", "mlp_in", "mlp_out", "norm1", "norm2"),
    ),
]
_IDS = [cls.__name__ for _, cls, _ in LAYERS]


@pytest.mark.parametrize("layer, cls, fields", LAYERS, ids=_IDS)
def test_init_gives_the_layers_namedtuple(layer, cls, fields):
    params = layer.init(random.key(0))
    assert type(params) is cls and cls._fields == fields
    # Fields in sorted order: the order the old dict keys flattened in.
    assert list(fields) == sorted(fields)


@pytest.mark.parametrize("layer, cls, fields", LAYERS, ids=_IDS)
def test_misspelt_field_fails_where_it_is_written(layer, cls, fields):
    params = layer.init(random.key(0))
    with pytest.raises(AttributeError, match=rf"^{cls.__name__} has no field 'wq' \(its fields: "):
        params.wq


@pytest.mark.parametrize("layer, cls, fields", LAYERS, ids=_IDS)
def test_indexing_by_name_says_to_use_the_attribute(layer, cls, fields):
    params = layer.init(random.key(0))
    name = fields[-1]
    with pytest.raises(
        TypeError, match=rf"{cls.__name__} is a NamedTuple, not a dict: read the field as "
        rf"params\.{name}, not params\['{name}'\]"
    ):
        params[name]
    with pytest.raises(TypeError, match=rf"{cls.__name__} has no field 'wq'"):
        params["wq"]
    with pytest.raises(TypeError, match=rf"params\.{name} is not None, not '{name}' in params"):
        name in params
    # Positions work as for any tuple (unpacking, tree code, optax-style states).
    assert params[0] is getattr(params, fields[0]) and params[-1] is getattr(params, name)


def test_flatten_order_and_key_paths_are_the_fields():
    model = nn.Sequential([nn.Linear(2, 3), nn.relu, nn.LayerNorm(3)])
    params = model.init(random.key(0))
    paths = ["".join(p) for p in tree.leaf_paths(tree.structure(params))]
    assert paths == ["[0].bias", "[0].weight", "[2].bias", "[2].scale"]
    # Deterministic: two inits have one treedef, which jit's cache and optimisers compare.
    assert tree.structure(model.init(random.key(1))) == tree.structure(params)
    assert str(tree.structure(params)) == (
        "TreeDef(tuple(LinearParams(*, *), tuple(), LayerNormParams(*, *)))"
    )


def test_absent_fields_are_none_and_hold_no_leaves():
    assert nn.Linear(2, 3, use_bias=False).init(random.key(0)).bias is None
    assert nn.Conv2d(1, 1, 1, use_bias=False).init(random.key(0)).bias is None
    ln = nn.LayerNorm(3, use_scale=False, use_bias=False).init(None)
    assert ln == nn.LayerNormParams(bias=None, scale=None) and tree.leaves(ln) == []
    assert tree.leaves(nn.RMSNorm(3, use_scale=False).init(None)) == []
    for layer in (nn.MaxPool2d(2), nn.AvgPool2d(2), nn.Flatten(), nn.Dropout(0.1)):
        assert layer.init(None) == ()


def test_init_values_are_those_of_the_dict_params():
    # The keys are split as before, so a seed gives the numbers it gave: Glorot-uniform
    # draws of Linear(3, 2) under key 0, recorded from the dict-params code.
    w = nn.Linear(3, 2).init(random.key(0)).weight
    np.testing.assert_allclose(
        np.asarray(w),
        [[-0.4367702, -0.75668204], [0.51823545, 0.27983046], [1.0795531, -0.30334896]],
        rtol=1e-6,
    )


@pytest.mark.parametrize(
    "layer, params, match",
    [
        (nn.Linear(3, 2), {"bias": 0, "weight": 1}, r"got a dict with keys \['bias', 'weight'\]"
         r".*LinearParams\(bias=\.\.\., weight=\.\.\.\).*like=Linear.init\(key\)"),
        (nn.LayerNorm(3), nn.LinearParams(None, None), r"LayerNorm.apply: params must be "
         r"LayerNormParams \(from LayerNorm.init\(key\)\), got LinearParams"),
        (nn.Embedding(5, 3), [1.0], r"Embedding.apply: params must be EmbeddingParams"),
        (nn.TransformerBlock(4, 2), {}, r"TransformerBlock.apply: params must be "
         r"TransformerBlockParams"),
    ],
)
def test_wrong_params_type_names_the_layer_and_class(layer, params, match):
    x = fnp.ones((1, 2, 4)) if isinstance(layer, nn.TransformerBlock) else fnp.ones((1, 3))
    if isinstance(layer, nn.Embedding):
        x = fnp.array([1])
    with pytest.raises(TypeError, match=match):
        layer.apply(params, x)


def test_fields_that_disagree_with_the_layer_are_refused():
    x = fnp.ones((1, 3))
    with pytest.raises(ValueError, match=r"Linear.apply: params.bias is None, but the layer "
                       r"has use_bias=True"):
        nn.Linear(3, 2).apply(nn.Linear(3, 2, use_bias=False).init(random.key(0)), x)
    with pytest.raises(ValueError, match=r"Linear.apply: params.bias is set, but the layer has "
                       r"use_bias=False"):
        nn.Linear(3, 2, use_bias=False).apply(nn.Linear(3, 2).init(random.key(0)), x)
    with pytest.raises(ValueError, match=r"RMSNorm.apply: params.scale is None"):
        nn.RMSNorm(3).apply(nn.RMSNormParams(scale=None), x)
    with pytest.raises(ValueError, match=r"MLP.apply: params must be a tuple with one entry "
                       r"per layer \(2 LinearParams\), got 1 entries"):
        nn.MLP((3, 4, 2)).apply(nn.MLP((3, 2)).init(random.key(0)), x)


def test_hand_built_params_by_keyword():
    p = nn.LinearParams(bias=fnp.array([1.0, 2.0]), weight=fnp.eye(2))
    np.testing.assert_array_equal(np.asarray(nn.Linear(2, 2).apply(p, fnp.ones((1, 2)))),
                                  [[2.0, 3.0]])
    assert p._replace(bias=None).bias is None and p._asdict()["bias"] is p.bias


def test_transforms_and_optimisers_keep_the_types():
    block = nn.TransformerBlock(4, 2, causal=True)
    params = block.init(random.key(0))
    x = fnp.asarray(np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32))

    def loss(p, x):
        return fnp.mean(block.apply(p, x) ** 2)

    grads = fgrad.grad(loss)(params, x)
    assert tree.structure(grads) == tree.structure(params)
    assert type(grads.attn.qkv) is nn.LinearParams
    jitted = fgrad.jit(fgrad.grad(loss))(params, x)
    for a, b in zip(tree.leaves(jitted), tree.leaves(grads)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-7)
    # vmap over the batch with the params broadcast: per-example grads keep the types.
    per = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0))(params, x[:, None])
    assert type(per.mlp_in) is nn.LinearParams and per.mlp_in.weight.shape == (2, 4, 16)
    opt = optim.adamw(1e-2)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    new = optim.apply_updates(params, updates)
    assert type(new) is nn.TransformerBlockParams and type(state.mu.norm1) is nn.LayerNormParams
    assert float(loss(new, x)) < float(loss(params, x))
