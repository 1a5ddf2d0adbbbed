"""LoRA and QLoRA (fgrad.llm.lora): the adapted model at init equals the base bit for bit,
gradients w.r.t. A and B against finite differences with the base frozen, merge/unmerge,
PEFT's files both ways (adapters PEFT made, in tests/llm/data/lora/), and grad, vmap and
jit over LoRA-wrapped dense and kept-quantized bases."""

import json
import os

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, tree
from fgrad.errors import ShapeError
from fgrad.llm import gguf, lora
from fgrad.llm.config import ModelConfig
from fgrad.llm.loading import model_from_gguf
from fgrad.llm.model import Transformer
from fgrad.llm.quantized import QuantizedWeight

DATA = os.path.join(os.path.dirname(__file__), "data", "lora")
CFG = ModelConfig("llama", vocab_size=30, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2,
                  d_head=4, d_ff=32, rope_interleaved=True)
TOKENS = fnp.asarray([[1, 5, 9, 2, 7, 3]])
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _model(dtype=np.float64):
    module = Transformer(CFG)
    return module.bind(module.init(fgrad.random.key(0), scale=0.3, dtype=dtype))


def _loss(model, tokens=TOKENS):
    logits, _ = model(tokens[:, :-1])
    return fnp.mean(nn.softmax_cross_entropy(logits, tokens[:, 1:]))


def _randomize_b(adapters, seed=1, scale=0.3):
    """The same adapters with B random (at init B is zero, so A gets no gradient)."""
    rng = np.random.default_rng(seed)
    layers = tuple(
        {n: lora.LoraPair(p.a, fnp.asarray(scale * rng.standard_normal(p.b.shape).astype(p.b.dtype)))
         for n, p in layer.items()}
        for layer in adapters.layers
    )
    return lora.LoraAdapters(layers, adapters.rank, adapters.alpha, adapters.use_rslora)


# ----------------------------------------------------------------- init and apply


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adapted_model_at_init_equals_base_bit_for_bit(dtype):
    model = _model(dtype)
    adapters = lora.init(fgrad.random.key(1), model, 4, 16, targets=ALL)
    base = np.asarray(model(TOKENS)[0])
    adapted = np.asarray(lora.apply(model, adapters)(TOKENS)[0])
    assert adapted.dtype == dtype
    assert np.array_equal(adapted.view(np.uint8), base.view(np.uint8))  # the very bits


def test_init_shapes_distribution_and_scaling():
    model = _model(np.float32)
    ad = lora.init(fgrad.random.key(2), model, 8, 16, targets=("q_proj", "v_proj", "w_down"))
    assert ad.targets == ("q_proj", "v_proj", "down_proj")
    assert ad.scale == 2.0
    assert lora.LoraAdapters(ad.layers, 8, 16, use_rslora=True).scale == 16 / np.sqrt(8)
    pair = ad.layers[1]["w_down"]
    assert pair.a.shape == (8, 32) and pair.b.shape == (16, 8) and pair.a.dtype == np.float32
    assert not np.asarray(pair.b).any()
    # PEFT: kaiming_uniform_(a=sqrt(5)) on (r, in) is U(-1/sqrt(in), 1/sqrt(in)).
    a = np.concatenate([np.asarray(layer[n].a).ravel() for layer in ad.layers for n in ("wq", "wv")])
    bound = 1 / np.sqrt(16)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.9 * bound
    assert abs(a.std() - bound / np.sqrt(3)) < 0.1 * bound  # uniform's std
    assert ad.layers[0]["wq"].a is not ad.layers[1]["wq"].a
    assert not np.array_equal(np.asarray(ad.layers[0]["wq"].a), np.asarray(ad.layers[1]["wq"].a))
    assert lora.n_params(ad) == 2 * (8 * 16 + 16 * 8 + 8 * 16 + 8 * 8 + 8 * 32 + 16 * 8)


def test_apply_wraps_without_copying_and_computes_the_low_rank_product():
    model = _model()
    ad = _randomize_b(lora.init(fgrad.random.key(3), model, 2, 3.0, targets=("v_proj",)))
    wrapped = lora.apply(model, ad)
    w = wrapped.params["layers"][1]["wv"]
    assert isinstance(w, lora.LoraWeight) and w.base is model.params["layers"][1]["wv"]
    assert wrapped.params["layers"][1]["wq"] is model.params["layers"][1]["wq"]
    x = np.random.default_rng(0).standard_normal((5, 16))
    a, b, base = np.asarray(w.a), np.asarray(w.b), np.asarray(w.base)
    from fgrad.llm.quantized import linear

    got = np.asarray(linear(fnp.asarray(x), w))
    np.testing.assert_allclose(got, x @ base.T + 1.5 * (x @ a.T) @ b.T, rtol=1e-12)


def test_errors_are_clear():
    model = _model()
    with pytest.raises(ValueError, match="unknown target 'query'.*q_proj, k_proj.*wq"):
        lora.init(fgrad.random.key(0), model, 2, 4, targets=("query",))
    for rank in (0, -1, 2.5):
        with pytest.raises(ValueError, match="rank must be a positive int"):
            lora.init(fgrad.random.key(0), model, rank, 4)
    with pytest.raises(ValueError, match="rank 9 exceeds min"):
        lora.init(fgrad.random.key(0), model, 9, 4, targets=("v_proj",))
    with pytest.raises(ValueError, match="alpha must be a positive"):
        lora.init(fgrad.random.key(0), model, 2, 0)
    ad = lora.init(fgrad.random.key(0), model, 2, 4)
    bad = lora.LoraAdapters(ad.layers[:1], 2, 4)
    with pytest.raises(ShapeError, match="1 layers, the model 2"):
        lora.apply(model, bad)
    swapped = tuple({"wq": lora.LoraPair(p["wq"].b, p["wq"].a)} for p in ad.layers)
    with pytest.raises(ShapeError, match=r"A \(r, 16\) and B \(16, r\)"):
        lora.apply(model, lora.LoraAdapters(swapped, 2, 4))
    with pytest.raises(TypeError, match="parameter dict"):
        lora.init(fgrad.random.key(0), [1, 2], 2, 4)


# ----------------------------------------------------------------- gradients


def _fd(f, x, index, eps=1e-6):
    e = np.zeros(x.shape)
    e[index] = eps
    return (float(f(x + e)) - float(f(x - e))) / (2 * eps)


def test_grads_wrt_a_and_b_match_finite_differences_base_frozen():
    model = _model()
    ad = _randomize_b(lora.init(fgrad.random.key(4), model, 3, 6.0, targets=("q_proj", "v_proj", "down_proj")))

    def loss(adapters):
        return _loss(lora.apply(model, adapters))

    grads = fgrad.grad(loss)(ad)
    # Only the adapters are differentiated: the gradient has their structure, nothing else.
    assert type(grads) is lora.LoraAdapters
    assert tree.structure(grads) == tree.structure(ad)
    for layer, name, half, index in ((0, "wq", "a", (1, 5)), (1, "wv", "b", (6, 2)), (1, "w_down", "a", (2, 30)),
                                     (0, "w_down", "b", (15, 0))):
        g = np.asarray(getattr(grads.layers[layer][name], half))
        value = np.asarray(getattr(ad.layers[layer][name], half))

        def with_value(v, layer=layer, name=name, half=half):
            pairs = [dict(p) for p in ad.layers]
            pairs[layer][name] = pairs[layer][name]._replace(**{half: fnp.asarray(v)})
            return loss(lora.LoraAdapters(tuple(pairs), ad.rank, ad.alpha))

        np.testing.assert_allclose(g[index], _fd(with_value, value, index), rtol=1e-6, atol=1e-10)
    # At init (B = 0): A's gradient is zero, B's is not, as in LoRA.
    g0 = fgrad.grad(loss)(lora.init(fgrad.random.key(4), model, 3, 6.0))
    assert not np.asarray(g0.layers[0]["wq"].a).any() and np.asarray(g0.layers[0]["wq"].b).any()


def test_training_steps_lower_the_loss():
    from fgrad import optim

    model = _model(np.float32)
    ad = lora.init(fgrad.random.key(5), model, 4, 8.0, targets=ALL)
    opt = optim.adam(1e-2)
    state = opt.init(ad)
    step = fgrad.jit(fgrad.value_and_grad(lambda a: _loss(lora.apply(model, a))))
    first = None
    for _ in range(15):
        value, g = step(ad)
        first = float(value) if first is None else first
        updates, state = opt.update(g, state, ad)
        ad = optim.apply_updates(ad, updates)
    assert float(step(ad)[0]) < first - 0.05


# ----------------------------------------------------------------- merge


def test_merged_and_unmerged_give_the_same_logits():
    model = _model()
    ad = _randomize_b(lora.init(fgrad.random.key(6), model, 4, 8.0, targets=ALL), scale=0.5)
    adapted = np.asarray(lora.apply(model, ad)(TOKENS)[0])
    merged = lora.merge(model, ad)
    assert not any(isinstance(w, lora.LoraWeight) for w in merged.params["layers"][0].values())
    np.testing.assert_allclose(np.asarray(merged(TOKENS)[0]), adapted, rtol=1e-12, atol=1e-12)
    assert np.abs(adapted - np.asarray(model(TOKENS)[0])).max() > 0.1  # the adapter matters
    back = lora.unmerge(merged, ad)
    for name, w in model.params["layers"][1].items():
        np.testing.assert_allclose(np.asarray(back.params["layers"][1][name]), np.asarray(w), atol=1e-15)
    np.testing.assert_allclose(np.asarray(back(TOKENS)[0]), np.asarray(model(TOKENS)[0]), atol=1e-12)


# ----------------------------------------------------------------- PEFT's files


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(DATA, "reference.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def hf_base():
    pytest.importorskip("safetensors")
    from fgrad.llm.loading import model_from_hf

    return model_from_hf(os.path.join(DATA, "base"))


@pytest.mark.parametrize("name", ["plain", "rslora"])
def test_peft_made_adapters_give_pefts_logits(name, reference, hf_base):
    ad = lora.load(os.path.join(DATA, name), n_layers=2)
    with open(os.path.join(DATA, name, "adapter_config.json")) as f:
        config = json.load(f)
    assert ad.rank == config["r"] == 4 and ad.alpha == config["lora_alpha"] == 8
    assert ad.use_rslora is (name == "rslora")
    assert ad.scale == (8 / 2 if name == "rslora" else 8 / 4)
    assert sorted(ad.targets) == sorted(config["target_modules"])
    tokens = fnp.asarray(reference["tokens"])
    np.testing.assert_allclose(np.asarray(hf_base(tokens)[0]), reference["base"], atol=2e-6)
    got = np.asarray(lora.apply(hf_base, ad)(tokens)[0])
    want = np.asarray(reference[name])
    assert np.abs(want - np.asarray(reference["base"])).max() > 0.3  # B is not zero
    np.testing.assert_allclose(got, want, atol=1e-5)  # float32, values about 1
    np.testing.assert_allclose(np.asarray(lora.merge(hf_base, ad)(tokens)[0]), want, atol=1e-5)


@pytest.mark.parametrize("name", ["plain", "rslora"])
def test_fgrad_writes_pefts_names_shapes_and_config(name, tmp_path):
    from safetensors.numpy import load_file

    ad = lora.load(os.path.join(DATA, name))
    lora.save(tmp_path, ad, base_model_name_or_path="../base")
    ours = load_file(str(tmp_path / "adapter_model.safetensors"))
    theirs = load_file(os.path.join(DATA, name, "adapter_model.safetensors"))
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        assert ours[key].shape == value.shape and ours[key].dtype == value.dtype
        assert np.array_equal(ours[key], value)
    with open(tmp_path / "adapter_config.json") as f:
        config = json.load(f)
    with open(os.path.join(DATA, name, "adapter_config.json")) as f:
        peft_config = json.load(f)
    for key in ("peft_type", "r", "lora_alpha", "use_rslora", "lora_dropout", "bias",
                "fan_in_fan_out", "use_dora", "base_model_name_or_path"):
        assert config[key] == peft_config[key], key
    assert sorted(config["target_modules"]) == sorted(peft_config["target_modules"])
    assert set(config) <= set(peft_config) | {"task_type"}
    again = lora.load(tmp_path)
    assert tree.structure(again) == tree.structure(ad)
    for x, y in zip(tree.leaves(again), tree.leaves(ad)):
        assert np.array_equal(np.asarray(x), np.asarray(y))


def test_round_trip_of_fresh_adapters_names_layers(tmp_path):
    model = _model(np.float32)
    ad = lora.init(fgrad.random.key(7), model, 2, 4, targets=("k_proj", "gate_proj"))
    lora.save(tmp_path, ad)
    from safetensors.numpy import load_file

    names = sorted(load_file(str(tmp_path / "adapter_model.safetensors")))
    assert names[0] == "base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight"
    assert "base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight" in names
    assert len(names) == 8
    assert not [p for p in os.listdir(tmp_path) if p not in ("adapter_model.safetensors", "adapter_config.json")]
    back = lora.load(tmp_path)
    assert back.targets == ("k_proj", "gate_proj")
    assert np.array_equal(np.asarray(back.layers[1]["w_gate"].a), np.asarray(ad.layers[1]["w_gate"].a))


def test_load_refuses_what_it_does_not_implement(tmp_path):
    from safetensors.numpy import save_file

    with pytest.raises(FileNotFoundError, match="adapter_config.json is missing"):
        lora.load(tmp_path)
    save_file({"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": np.zeros((2, 4), np.float32)},
              str(tmp_path / "adapter_model.safetensors"))
    for extra, message in (({"peft_type": "IA3"}, "not 'LORA'"), ({"use_dora": True}, "use_dora"),
                           ({"rank_pattern": {"q_proj": 8}}, "rank_pattern")):
        (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4, **extra}))
        with pytest.raises(ValueError, match=message):
            lora.load(tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4}))
    with pytest.raises(ValueError, match="lacks lora_B"):
        lora.load(tmp_path)
    save_file({"base_model.model.model.layers.0.self_attn.qkv.lora_A.weight": np.zeros((2, 4), np.float32)},
              str(tmp_path / "adapter_model.safetensors"))
    with pytest.raises(ValueError, match="qkv.*not a llama projection"):
        lora.load(tmp_path)


# ----------------------------------------------------------------- QLoRA and transforms


@pytest.fixture(scope="module")
def tiny_pair(tiny_llama_gguf):
    """(dense, kept-quantized) models of the same tiny GGUF file."""
    return (model_from_gguf(gguf.read(tiny_llama_gguf)), model_from_gguf(gguf.read(tiny_llama_gguf, dtype=None)))


QTOKENS = fnp.asarray([[5, 100, 200, 17, 3, 9, 44]])


def test_qlora_over_kept_quantized_base(tiny_pair):
    dense, quantized = tiny_pair
    assert isinstance(quantized.params["layers"][0]["wq"], QuantizedWeight)
    ad = lora.init(fgrad.random.key(8), quantized, 4, 8.0, targets=ALL)
    # At init: the base's logits, bit for bit.
    base = np.asarray(quantized(QTOKENS)[0])
    assert np.array_equal(np.asarray(lora.apply(quantized, ad)(QTOKENS)[0]), base)
    ad = _randomize_b(ad, scale=0.05)

    def loss(adapters, model):
        return _loss(lora.apply(model, adapters), QTOKENS)

    g_q = fgrad.grad(loss)(ad, quantized)
    g_d = fgrad.grad(loss)(ad, dense)
    # The quantized product equals the dequantized one to float32 rounding: same gradients.
    for x, y in zip(tree.leaves(g_q), tree.leaves(g_d)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-3, atol=1e-6)
    assert np.abs(np.asarray(g_q.layers[0]["wq"].a)).max() > 0
    # Finite differences in float64 of the adapter, through the quantized products.
    ad64 = tree.map(lambda v: fnp.astype(v, np.float64), ad)
    g = np.asarray(fgrad.grad(loss)(ad64, quantized).layers[1]["w_up"].b)
    value = np.asarray(ad64.layers[1]["w_up"].b)

    def with_b(v):
        pairs = [dict(p) for p in ad64.layers]
        pairs[1]["w_up"] = pairs[1]["w_up"]._replace(b=fnp.asarray(v))
        return loss(lora.LoraAdapters(tuple(pairs), ad.rank, ad.alpha), quantized)

    for index in ((0, 0), (100, 3), (255, 1)):
        np.testing.assert_allclose(g[index], _fd(with_b, value, index), rtol=1e-5, atol=1e-9)
    # Merging dequantizes: dense weights, the adapted logits.
    merged = lora.merge(quantized, ad)
    assert not isinstance(merged.params["layers"][0]["wq"], (QuantizedWeight, lora.LoraWeight))
    np.testing.assert_allclose(np.asarray(merged(QTOKENS)[0]), np.asarray(lora.apply(quantized, ad)(QTOKENS)[0]),
                               atol=2e-5)


@pytest.mark.parametrize("which", ["dense", "quantized"])
def test_jit_and_vmap_over_lora_wrapped_params(which, tiny_pair):
    model = tiny_pair[which == "quantized"]
    ad = _randomize_b(lora.init(fgrad.random.key(9), model, 2, 4.0, targets=("q_proj", "v_proj", "up_proj")), scale=0.1)

    def logits(adapters, tokens):
        return lora.apply(model, adapters)(tokens)[0]

    eager = np.asarray(logits(ad, QTOKENS))
    np.testing.assert_allclose(np.asarray(fgrad.jit(logits)(ad, QTOKENS)), eager, rtol=1e-5, atol=1e-5)
    # jit of the gradient equals the eager gradient.
    loss = lambda a: _loss(lora.apply(model, a), QTOKENS)
    for x, y in zip(tree.leaves(fgrad.jit(fgrad.grad(loss))(ad)), tree.leaves(fgrad.grad(loss)(ad))):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-7)
    # vmap over a stack of adapters: one adapter per sequence (multi-adapter serving).
    others = [ad, _randomize_b(ad, seed=2, scale=0.1), _randomize_b(ad, seed=3, scale=0.1)]
    stacked = tree.map(lambda *xs: fnp.stack(xs), *others)
    batched = fgrad.vmap(logits, in_axes=(0, None))(stacked, QTOKENS)
    for k, one in enumerate(others):
        np.testing.assert_allclose(np.asarray(batched[k]), np.asarray(logits(one, QTOKENS)), rtol=1e-5, atol=1e-5)
    # vmap over sequences with shared adapters equals the batched call.
    seqs = fnp.asarray([[5, 100, 200, 17], [3, 9, 44, 1]])
    per = fgrad.vmap(lambda t: logits(ad, t[None])[0])(seqs)
    np.testing.assert_allclose(np.asarray(per), np.asarray(logits(ad, seqs)), rtol=1e-5, atol=1e-5)
