"""BERT encoders from Hugging Face folders: a plain numpy forward pass, transformers' stored
numbers, padding, bfloat16 weights, the tokenizer's [CLS]/[SEP], errors, and grad / vmap / jit."""

import importlib.util
import json
import math
import os

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.errors import ShapeError
from fgrad.llm import bert
from fgrad.llm.config import UnsupportedModelError

pytest.importorskip("safetensors.numpy")
pytest.importorskip("tokenizers")

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "make_bert_reference", os.path.join(HERE, "data", "make_bert_reference.py")
)
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)

with open(os.path.join(HERE, "data", "bert_reference.json")) as _f:
    REFERENCE = json.load(_f)


# ---------------------------------------------------------------------- numpy reference

_erf = np.vectorize(math.erf)


def np_forward(config, tensors, ids, mask, token_types=None):
    """Last hidden states (batch, seq, d) in float64, from Devlin et al. 2019 written plainly."""
    t = {k.removeprefix("bert."): np.asarray(v, dtype=np.float64) for k, v in tensors.items()}
    d, n_heads = config["hidden_size"], config["num_attention_heads"]
    dh, eps = d // n_heads, config["layer_norm_eps"]
    act = config["hidden_act"]
    ids, mask = np.asarray(ids), np.asarray(mask, dtype=bool)
    batch, seq = ids.shape
    types = np.zeros_like(ids) if token_types is None else np.asarray(token_types)

    def ln(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * t[name + ".weight"] + t[name + ".bias"]

    def dense(x, name):
        return x @ t[name + ".weight"].T + t[name + ".bias"]

    def gelu(x):
        if act == "gelu":
            return 0.5 * x * (1 + _erf(x / math.sqrt(2)))
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    e = "embeddings."
    x = (t[e + "word_embeddings.weight"][ids] + t[e + "position_embeddings.weight"][:seq]
         + t[e + "token_type_embeddings.weight"][types])
    x = ln(x, "embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, p + f"attention.self.{n}").reshape(batch, seq, n_heads, dh)
                   for n in ("query", "key", "value"))
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
        scores = np.where(mask[:, None, None, :], scores, -np.inf)
        w = np.exp(scores - scores.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        ctx = np.einsum("bhqk,bkhd->bqhd", w, v).reshape(batch, seq, d)
        x = ln(x + dense(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = gelu(dense(x, p + "intermediate.dense"))
        x = ln(x + dense(h, p + "output.dense"), p + "output.LayerNorm")
    return x


def np_mean(hidden, mask):
    m = np.asarray(mask, dtype=np.float64)[..., None]
    return (hidden * m).sum(-2) / np.maximum(m.sum(-2), 1e-9)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The reference folder of bert_reference.json (seed 0, float32, with pooler)."""
    return make.write_tiny_bert(str(tmp_path_factory.mktemp("bert") / "tiny"), **make.REFERENCE)


@pytest.fixture(scope="module")
def encoder(folder):
    return bert.load_encoder(folder)


def _batch(rng, config, sizes=(7, 3, 5)):
    """Random ids of rows of ``sizes`` real tokens, right-padded with 0, and the mask."""
    seq = max(sizes)
    ids = rng.integers(5, config["vocab_size"], (len(sizes), seq))
    mask = np.arange(seq)[None, :] < np.array(sizes)[:, None]
    return np.where(mask, ids, 0), mask


# ---------------------------------------------------------------------- the forward pass


@pytest.mark.parametrize("act", ["gelu", "gelu_pytorch_tanh"])
def test_forward_equals_numpy_in_float64(act):
    config = make.tiny_config(hidden_act=act)
    tensors = {k: v.astype(np.float64) for k, v in make.tiny_tensors(config, seed=3).items()}
    model = bert.from_tensors(config, tensors)
    rng = np.random.default_rng(0)
    ids, mask = _batch(rng, config)
    types = rng.integers(0, 2, ids.shape)
    want = np_forward(config, tensors, ids, mask, types)
    got = np.asarray(model(fnp.asarray(ids), fnp.asarray(mask), fnp.asarray(types)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got[mask], want[mask], rtol=0, atol=1e-12)
    pooled = np.asarray(model.embed(fnp.asarray(ids), fnp.asarray(mask)))
    want_pooled = np_mean(np_forward(config, tensors, ids, mask), mask)
    np.testing.assert_allclose(pooled, want_pooled, atol=1e-12)
    # a 0/1 integer mask, as transformers' attention_mask, is the same mask
    mask01 = fnp.asarray(mask.astype(np.int64))
    got01 = np.asarray(model(fnp.asarray(ids), mask01, fnp.asarray(types)))
    np.testing.assert_array_equal(got01, got)


def test_each_row_of_a_padded_batch_equals_the_text_alone(encoder):
    texts = make.TEXTS
    tokens, mask = encoder.tokenize(texts)
    batched = np.asarray(encoder.model(tokens, mask))
    pooled = np.asarray(encoder.encode(texts))
    for i, text in enumerate(texts):
        t1, m1 = encoder.tokenize([text])
        alone = np.asarray(encoder.model(t1, m1))[0]
        n = int(np.asarray(m1).sum())
        assert int(np.asarray(mask)[i].sum()) == n
        np.testing.assert_allclose(batched[i, :n], alone, atol=2e-6)
        np.testing.assert_allclose(pooled[i], alone.mean(0), atol=2e-6)


def test_folder_matches_numpy_and_transformers_reference(folder, encoder):
    """The stored numbers are transformers' (BertModel, float32) on the seed-0 folder."""
    ref = REFERENCE
    assert ref["folder"] == make.REFERENCE and ref["texts"] == make.TEXTS
    tokens, mask = encoder.tokenize(ref["texts"])
    # transformers' tokenizer over the same tokenizer.json: the same ids and padding
    np.testing.assert_array_equal(np.asarray(tokens), ref["input_ids"])
    np.testing.assert_array_equal(np.asarray(mask), np.asarray(ref["attention_mask"], bool))
    hidden = encoder.model(tokens, mask)
    close = np.testing.assert_allclose
    close(np.asarray(bert.mean_pool(hidden, mask)), ref["mean_pooled"], atol=3e-6)
    close(np.asarray(encoder.encode(ref["texts"])), ref["mean_pooled"], atol=3e-6)
    close(np.asarray(encoder.model.pooler_output(hidden)), ref["pooler_output"], atol=3e-6)
    first = np.asarray(hidden)[0, : len(ref["last_hidden_first"])]
    np.testing.assert_allclose(first, ref["last_hidden_first"], atol=3e-6)
    # and the plain numpy forward on the float32 weights read back from the folder
    config = make.tiny_config(**{k: v for k, v in make.REFERENCE.items() if k != "seed"})
    real = np.asarray(mask)
    want = np_forward(config, make.tiny_tensors(config, seed=0), np.asarray(tokens), real)
    np.testing.assert_allclose(np.asarray(hidden)[real], want[real], atol=3e-6)


def test_bfloat16_folder_and_float16_mode(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    folder = make.write_tiny_bert(str(tmp_path / "bf16"), dtype="bfloat16", seed=4)
    model = bert.load(folder)
    config = make.tiny_config()
    widened = {k: v.astype(ml_dtypes.bfloat16).astype(np.float32)
               for k, v in make.tiny_tensors(config, seed=4).items()}
    np.testing.assert_array_equal(np.asarray(model.params["layers"][1]["wq"]),
                                  widened["encoder.layer.1.attention.self.query.weight"])  # exact
    assert np.asarray(model.params["embeddings"]["word"]).dtype == np.float32
    ids, mask = _batch(np.random.default_rng(1), config)
    want = np_forward(config, widened, ids, mask)
    got = np.asarray(model(fnp.asarray(ids), fnp.asarray(mask)))
    np.testing.assert_allclose(got[mask], want[mask], atol=3e-6)
    half = bert.load(folder, dtype="float16")
    assert np.asarray(half.params["layers"][0]["w_up"]).dtype == np.float16
    got16 = np.asarray(half(fnp.asarray(ids), fnp.asarray(mask)))
    assert got16.dtype == np.float16 and np.isfinite(got16).all()
    np.testing.assert_allclose(got16[mask], want[mask], atol=0.05)  # float16 activations


def test_prefixed_names_heads_and_old_layernorm_names(tmp_path):
    config = make.tiny_config()
    tensors = make.tiny_tensors(config, seed=5, pooler=False)
    plain = bert.from_tensors(config, tensors)
    old = {"LayerNorm.weight": "LayerNorm.gamma", "LayerNorm.bias": "LayerNorm.beta"}
    renamed = {}
    for k, v in tensors.items():
        for new_name, old_name in old.items():
            k = k.replace(new_name, old_name)
        renamed["bert." + k] = v
    renamed["cls.predictions.bias"] = np.zeros(config["vocab_size"], np.float32)
    renamed["bert.embeddings.position_ids"] = np.arange(config["max_position_embeddings"])[None]
    prefixed = bert.from_tensors(config, renamed)
    assert "pooler" not in prefixed.params
    ids, mask = _batch(np.random.default_rng(2), config)
    np.testing.assert_array_equal(np.asarray(prefixed(ids, mask)), np.asarray(plain(ids, mask)))
    with pytest.raises(ValueError, match="no pooler"):
        plain.pooler_output(plain(ids, mask))


# ---------------------------------------------------------------------- tokenizer and API


def test_tokenizer_adds_cls_sep_and_truncates(encoder):
    tok = encoder.tokenizer
    cls_id, sep_id = make.VOCAB.index("[CLS]"), make.VOCAB.index("[SEP]")
    ids = tok.encode("The cats sat.", add_special_tokens=True)
    assert [make.VOCAB[i] for i in ids] == ["[CLS]", "the", "cats", "sat", ".", "[SEP]"]
    assert tok.encode("The cats sat.") == ids[1:-1]  # the default is unchanged: no template
    long = "the cat " * 80
    cut = tok.encode(long, add_special_tokens=True, max_length=64)
    assert len(cut) == 64 and cut[0] == cls_id and cut[-1] == sep_id
    tokens, mask = encoder.tokenize([long, "a dog"])
    assert tuple(tokens.shape) == (2, 64) and int(np.asarray(mask)[1].sum()) == 4
    with pytest.raises(ValueError, match="no room"):
        tok.encode("a", add_special_tokens=True, max_length=2)


def test_encode_orders_batches_and_normalizes(encoder):
    texts = make.TEXTS + ["the dog", "a"]
    tokens, mask = encoder.tokenize(texts)
    whole = np.asarray(encoder.model.embed(tokens, mask))
    got = np.asarray(encoder.encode(texts, batch_size=2))  # sorted by length, 4 batches
    assert got.shape == (len(texts), encoder.config.d_model)
    np.testing.assert_allclose(got, whole, atol=2e-6)
    unit = np.asarray(encoder.encode(texts, normalize=True))
    want = whole / np.linalg.norm(whole, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, want, atol=2e-6)
    one = np.asarray(encoder.encode(texts[1]))
    assert one.shape == (encoder.config.d_model,)
    np.testing.assert_allclose(one, whole[1], atol=2e-6)
    empty = bert.mean_pool(fnp.zeros((1, 2, 3)), fnp.zeros((1, 2)) > 0)  # no real token: zeros
    np.testing.assert_array_equal(np.asarray(empty), 0)


def test_fgrad_llm_load_of_a_bert_folder(folder):
    import fgrad.llm

    model, tok = fgrad.llm.load(folder)
    assert isinstance(model, fgrad.llm.BertModel)
    assert tok.encode("a", add_special_tokens=True)[0] == make.VOCAB.index("[CLS]")
    enc = fgrad.llm.load_encoder(folder)
    assert isinstance(enc, fgrad.llm.SentenceEncoder) and "d_model=32" in repr(enc)
    tokens, mask = enc.tokenize(["a cat"])
    same = np.asarray(enc.model(tokens, mask))
    np.testing.assert_array_equal(np.asarray(model(tokens, mask)), same)
    assert model.nbytes == sum(np.asarray(a).nbytes for a in fgrad.tree.leaves(model.params))


# ---------------------------------------------------------------------- errors


def test_refused_configs_name_what_is_wrong():
    config = make.tiny_config()
    match = "'distilbert'.*q_lin.*supported: bert, roberta, xlm-roberta, camembert"
    with pytest.raises(UnsupportedModelError, match=match):
        bert.BertConfig.from_hf({**config, "model_type": "distilbert"})
    with pytest.raises(UnsupportedModelError, match="'llama'.*fgrad.llm.load"):
        bert.BertConfig.from_hf({**config, "model_type": "llama"})
    with pytest.raises(UnsupportedModelError, match="hidden_act 'swish'.*gelu, gelu_new"):
        bert.BertConfig.from_hf({**config, "hidden_act": "swish"})
    with pytest.raises(UnsupportedModelError, match="position_embedding_type 'relative_key'"):
        bert.BertConfig.from_hf({**config, "position_embedding_type": "relative_key"})
    with pytest.raises(UnsupportedModelError, match="decoder"):
        bert.BertConfig.from_hf({**config, "is_decoder": True})
    with pytest.raises(KeyError, match="'hidden_size' is missing"):
        bert.BertConfig.from_hf({k: v for k, v in config.items() if k != "hidden_size"})
    with pytest.raises(ValueError, match="not a multiple of n_heads"):
        bert.BertConfig(vocab_size=10, d_model=30, n_layers=1, n_heads=4, d_ff=8)


def test_refused_tensors_and_inputs_are_named(tmp_path):
    config = make.tiny_config()
    tensors = make.tiny_tensors(config)
    missing = {k: v for k, v in tensors.items() if k != "encoder.layer.1.output.dense.bias"}
    with pytest.raises(KeyError, match="'encoder.layer.1.output.dense.bias' is missing"):
        bert.from_tensors(config, missing)
    wrong = {**tensors, "encoder.layer.0.intermediate.dense.weight": np.zeros((8, 32), np.float32)}
    match = r"intermediate.dense.weight' has shape \(8, 32\).*\(64, 32\)"
    with pytest.raises(ShapeError, match=match):
        bert.from_tensors(config, wrong)
    with pytest.raises(ShapeError, match="more layers"):
        bert.from_tensors({**config, "num_hidden_layers": 1}, tensors)
    model = bert.from_tensors(config, tensors)
    with pytest.raises(ShapeError, match="65 tokens exceed the model's 64 positions"):
        model(fnp.zeros((1, 65), dtype=np.int64))
    with pytest.raises(ShapeError, match="tokens must be \\(batch, seq\\)"):
        model(fnp.zeros((5,), dtype=np.int64))
    with pytest.raises(ShapeError, match="mask must have the tokens' shape"):
        model(fnp.zeros((1, 5), dtype=np.int64), fnp.ones((1, 4)) > 0)
    folder = make.write_tiny_bert(str(tmp_path / "rob"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({**config, "model_type": "distilbert"}, f)
    with pytest.raises(ValueError, match="model_type is 'distilbert'"):
        bert.load(folder)
    folder = make.write_tiny_bert(str(tmp_path / "notok"))
    os.remove(os.path.join(folder, "tokenizer.json"))
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        bert.load_encoder(folder)
    from fgrad.llm.tokenizer import Tokenizer

    tok = Tokenizer.from_file(os.path.join(str(tmp_path / "rob"), "tokenizer.json"))
    with pytest.raises(ValueError, match="max_length must be in \\[1, 64\\]"):
        bert.SentenceEncoder(model, tok, max_length=65)
    tok.post_processor = None
    with pytest.raises(ValueError, match="no post-processor"):
        bert.SentenceEncoder(model, tok)


# ---------------------------------------------------------------------- under transforms


@pytest.fixture(scope="module")
def model64():
    config = make.tiny_config(d_model=16, n_layers=2, n_heads=2, d_ff=32, max_positions=16)
    tensors = {k: v.astype(np.float64) for k, v in make.tiny_tensors(config, seed=7).items()}
    return config, tensors, bert.from_tensors(config, tensors)


def test_grad_of_a_similarity_loss(model64):
    config, tensors, model = model64
    ids, mask = _batch(np.random.default_rng(3), config, sizes=(6, 4))
    ids, mask = fnp.asarray(ids), fnp.asarray(mask)

    def loss(m):
        e = m.embed(ids, mask, normalize=True)
        return 1.0 - fnp.sum(e[0] * e[1])  # one minus the cosine similarity

    grads = fgrad.grad(loss)(model)
    assert isinstance(grads, bert.BertModel)
    assert fgrad.tree.structure(grads) == fgrad.tree.structure(model)
    # central differences in one random direction over every parameter (float64)
    rng = np.random.default_rng(4)
    leaves, treedef = fgrad.tree.flatten(model)
    direction = [rng.standard_normal(tuple(x.shape)) for x in leaves]
    eps = 1e-6
    def shifted(step):
        moved = [fnp.asarray(np.asarray(x) + step * u) for x, u in zip(leaves, direction)]
        return fgrad.tree.unflatten(treedef, moved)

    plus, minus = shifted(eps), shifted(-eps)
    fd = (float(loss(plus)) - float(loss(minus))) / (2 * eps)
    pairs = zip(fgrad.tree.leaves(grads), direction)
    analytic = sum(float(np.sum(np.asarray(g) * u)) for g, u in pairs)
    assert abs(fd - analytic) <= 1e-6 * max(1.0, abs(fd))
    # padding tokens get no gradient through the word embeddings (only [PAD] = id 0 rows)
    word = np.asarray(grads.params["embeddings"]["word"])
    used = set(np.asarray(ids)[np.asarray(mask)].tolist())
    assert all(not word[i].any() for i in range(config["vocab_size"]) if i not in used)


def test_vmap_over_sentences_equals_the_batch(model64):
    config, tensors, model = model64
    ids, mask = _batch(np.random.default_rng(5), config, sizes=(5, 2, 7, 3))
    ids, mask = fnp.asarray(ids), fnp.asarray(mask)

    def one(tokens, valid):  # (seq,), (seq,) -> (d_model,)
        return model.embed(tokens[None], valid[None])[0]

    got = fgrad.vmap(one)(ids, mask)
    np.testing.assert_allclose(np.asarray(got), np.asarray(model.embed(ids, mask)), atol=1e-12)
    want = np_mean(np_forward(config, tensors, ids, mask), mask)
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)


def test_jit_of_the_encoder_equals_eager(model64):
    config, tensors, model = model64
    f = fgrad.jit(lambda m, tokens, valid: m.embed(tokens, valid, normalize=True))
    for seed in (6, 7):  # same shapes, other values: one trace
        ids, mask = _batch(np.random.default_rng(seed), config)
        ids, mask = fnp.asarray(ids), fnp.asarray(mask)
        np.testing.assert_allclose(np.asarray(f(model, ids, mask)),
                                   np.asarray(model.embed(ids, mask, normalize=True)), atol=1e-12)
    assert f.cache_info().misses == 1
    hidden = fgrad.jit(lambda m, tokens, valid: m(tokens, valid))(model, ids, mask)
    np.testing.assert_allclose(np.asarray(hidden)[np.asarray(mask)],
                               np_forward(config, tensors, ids, mask)[np.asarray(mask)], atol=1e-12)


def test_sentence_transformers_folder_length_and_pooling(tmp_path):
    folder = make.write_tiny_bert(str(tmp_path / "st"))
    with open(os.path.join(folder, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 16, "do_lower_case": False}, f)
    os.mkdir(os.path.join(folder, "1_Pooling"))
    pooling = os.path.join(folder, "1_Pooling", "config.json")
    with open(pooling, "w") as f:
        json.dump({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True,
                   "pooling_mode_cls_token": False}, f)
    enc = bert.load_encoder(folder)
    assert enc.max_length == 16 and tuple(enc.tokenize(["the cat " * 20])[0].shape) == (1, 16)
    assert bert.load_encoder(folder, max_length=40).max_length == 40
    with open(pooling, "w") as f:
        json.dump({"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}, f)
    with pytest.raises(UnsupportedModelError, match="pooling_mode_cls_token.*mean"):
        bert.load_encoder(folder)


def test_sharded_folder_reads_as_one(tmp_path):
    from safetensors.numpy import save_file

    folder = make.write_tiny_bert(str(tmp_path / "sharded"), seed=8)
    one = bert.load(folder)
    tensors = make.tiny_tensors(make.tiny_config(), seed=8)
    os.remove(os.path.join(folder, "model.safetensors"))
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2],
              "model-00002-of-00002.safetensors": names[1::2]}
    for file, part in shards.items():
        save_file({n: tensors[n] for n in part}, os.path.join(folder, file))
    index = {"weight_map": {n: file for file, part in shards.items() for n in part}}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    two = bert.load(folder)
    ids, mask = _batch(np.random.default_rng(9), make.tiny_config())
    np.testing.assert_array_equal(np.asarray(two(ids, mask)), np.asarray(one(ids, mask)))


def test_save_writes_a_folder_that_loads_back(tmp_path, model64):
    config, tensors, model = model64
    bert.save(model, tmp_path / "saved")
    from safetensors.numpy import load_file

    flat = load_file(str(tmp_path / "saved" / "model.safetensors"))
    assert sorted(flat) == sorted(tensors)  # Hugging Face names at the top level
    again = bert.load(tmp_path / "saved", dtype="float32")
    assert again.config == model.config
    ids, mask = _batch(np.random.default_rng(10), config)
    np.testing.assert_allclose(np.asarray(again(ids, mask)), np.asarray(model(ids, mask)), atol=1e-5)
