"""Tiny BERT checkpoint folders, and bert_reference.json from Hugging Face transformers.

``write_tiny_bert(folder, ...)`` writes a Hugging Face BERT folder (``config.json``,
``model.safetensors`` through ``safetensors.numpy``, a WordPiece ``tokenizer.json`` built
with the ``tokenizers`` package) with seeded numpy weights; it needs neither torch nor
transformers, so the tests call it to build the same folder in CI.

Run with a Python that has torch and transformers (not dependencies of fgrad):

    python tests/llm/data/make_bert_reference.py [--compare]

It writes the tiny folder of ``REFERENCE`` (seed 0), reads it with transformers
(``BertModel.from_pretrained``, eager attention, float32; ``PreTrainedTokenizerFast``
over the same tokenizer.json) and stores in ``bert_reference.json``: the ids of
``TEXTS`` (padded batch and attention mask), the mean-pooled sentence embeddings
(sentence-transformers' formula), the pooler output, and the last hidden states of the
first text. ``--compare`` also runs fgrad on larger random models (one written here, one
made and saved by transformers itself, also in bfloat16) over several padded batches and
prints the max abs differences that docs/llm.md records.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a an cat cats dog dogs sat sit on in mat rug is was very small big red blue "
    "and or of to with quick brown fox jumps over lazy cafe naive bert encoder sentence "
    "embedding mean pool token"
).split()
LETTERS = list("abcdefghijklmnopqrstuvwxyz0123456789")
SUFFIXES = ["##s", "##ed", "##ing", "##ly", "##er"] + ["##" + c for c in LETTERS]
PUNCT = list(".,!?;:'\"()-")
VOCAB = SPECIAL + WORDS + LETTERS + SUFFIXES + PUNCT

TEXTS = [
    "The cat sat on the mat.",
    "A quick brown fox jumps over the lazy dog!",
    "Café naïve, BERT encodes sentences; pooling means tokens.",
    "dogs",
    "zzz qqq unknown words: xylophones (2024)",
]
MORE = [
    ["the red cat", "a very small blue dog sat on a big rug in the cafe", "ok"],
    ["Sentence embedding with mean pooling.", "x", "The lazy dogs jumped, and the cats sat."],
    ["a " * 40 + "end", "short one", "Two words", "THE QUICK BROWN FOX"],
    ["the cat " * 80 + "is cut", "a dog"],  # longer than 64 and 128 positions: truncated
]
REFERENCE = dict(d_model=32, n_layers=2, n_heads=4, d_ff=64, max_positions=64, seed=0)


def tiny_config(*, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_positions=64,
                hidden_act="gelu", type_vocab=2, eps=1e-12) -> dict:
    """A BERT ``config.json`` (as a dict) of these sizes over :data:`VOCAB`."""
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": len(VOCAB),
        "hidden_size": d_model,
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "intermediate_size": d_ff,
        "hidden_act": hidden_act,
        "max_position_embeddings": max_positions,
        "type_vocab_size": type_vocab,
        "layer_norm_eps": eps,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
    }


def tiny_tensors(config: dict, *, seed: int = 0, scale: float = 0.1, pooler: bool = True) -> dict:
    """Seeded float32 weights by their Hugging Face names (no ``bert.`` prefix).

    Weights are normal with std ``scale`` (larger than BERT's 0.02, so that attention is
    far from uniform and layout mistakes show), LayerNorm scales ``1 + 0.1 N(0, 1)``,
    biases ``0.1 N(0, 1)``.
    """
    rng = np.random.default_rng(seed)
    d, ff = config["hidden_size"], config["intermediate_size"]

    def normal(*shape, s=scale):
        return (s * rng.standard_normal(shape)).astype(np.float32)

    t = {
        "embeddings.word_embeddings.weight": normal(config["vocab_size"], d, s=1.0),
        "embeddings.position_embeddings.weight": normal(
            config["max_position_embeddings"], d, s=0.5
        ),
        "embeddings.token_type_embeddings.weight": normal(config["type_vocab_size"], d, s=0.5),
        "embeddings.LayerNorm.weight": 1 + normal(d, s=0.1),
        "embeddings.LayerNorm.bias": normal(d, s=0.1),
    }
    shapes = {
        "attention.self.query": (d, d),
        "attention.self.key": (d, d),
        "attention.self.value": (d, d),
        "attention.output.dense": (d, d),
        "intermediate.dense": (ff, d),
        "output.dense": (d, ff),
    }
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name, (out, inp) in shapes.items():
            t[p + name + ".weight"] = normal(out, inp, s=0.8 / np.sqrt(inp))
            t[p + name + ".bias"] = normal(out, s=0.1)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + ln + ".weight"] = 1 + normal(d, s=0.1)
            t[p + ln + ".bias"] = normal(d, s=0.1)
    if pooler:
        t["pooler.dense.weight"] = normal(d, d)
        t["pooler.dense.bias"] = normal(d, s=0.1)
    return t


def tokenizer_json() -> str:
    """A BERT-style WordPiece ``tokenizer.json`` over :data:`VOCAB` (lower-casing, accents
    stripped, ``[CLS] $A [SEP]`` template), as the ``tokenizers`` package writes it."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(VOCAB)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    return tok.to_str()


def write_tiny_bert(folder: str, *, seed: int = 0, dtype: str = "float32", prefix: str = "",
                    pooler: bool = True, config: dict | None = None, **sizes) -> str:
    """Write a tiny BERT folder at ``folder`` (created) and return it.

    ``dtype="bfloat16"`` stores the floating weights rounded to bfloat16 (as many Hugging
    Face checkpoints are); ``prefix="bert."`` names them as ``BertForMaskedLM`` and
    friends save them. ``sizes``: keywords of :func:`tiny_config`.
    """
    from safetensors.numpy import save_file

    os.makedirs(folder, exist_ok=True)
    config = dict(config or tiny_config(**sizes))
    tensors = tiny_tensors(config, seed=seed, pooler=pooler)
    if dtype == "bfloat16":
        import ml_dtypes

        tensors = {k: v.astype(ml_dtypes.bfloat16) for k, v in tensors.items()}
    elif dtype != "float32":
        raise ValueError(f"write_tiny_bert: dtype {dtype!r}")
    path = os.path.join(folder, "model.safetensors")
    save_file({prefix + k: v for k, v in tensors.items()}, path, metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        f.write(tokenizer_json())
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "BertTokenizer", "cls_token": "[CLS]", "sep_token": "[SEP]",
                   "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]",
                   "do_lower_case": True, "model_max_length": config["max_position_embeddings"]},
                  f, indent=1)
    return folder


# ------------------------------------------------------------------ transformers' side


def _hf(folder):
    import torch
    from transformers import BertModel, PreTrainedTokenizerFast

    model = BertModel.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json"),
                                  pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
    return model, tok


def _hf_run(model, tok, texts):
    """``(ids, mask, last_hidden, mean_pooled, pooler)``, float64 (sentence-transformers' mean)."""
    import torch

    batch = tok(texts, padding=True, truncation=True,
                max_length=model.config.max_position_embeddings, return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    hidden = out.last_hidden_state
    m = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    # sentence_transformers.models.Pooling, pooling_mode_mean_tokens
    mean = (hidden * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
    f = lambda t: t.double().numpy()  # noqa: E731
    return (batch["input_ids"].numpy(), batch["attention_mask"].numpy(), f(hidden), f(mean),
            None if out.pooler_output is None else f(out.pooler_output))


def _fgrad_run(folder, texts):
    sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))
    from fgrad.llm import bert

    enc = bert.load_encoder(folder)
    ids, mask = enc.tokenize(texts)
    hidden = enc.model(ids, mask)
    mean = bert.mean_pool(hidden, mask)
    pooled = enc.model.pooler_output(hidden) if "pooler" in enc.model.params else None
    f = lambda t: np.asarray(t, dtype=np.float64)  # noqa: E731
    pooled = None if pooled is None else f(pooled)
    return np.asarray(ids), np.asarray(mask), f(hidden), f(mean), pooled


def _compare(folder, label, batches):
    model, tok = _hf(folder)
    worst = {"hidden": 0.0, "mean": 0.0, "pooler": 0.0, "embedding size": 0.0}
    for texts in batches:
        h_ids, h_mask, h_hidden, h_mean, h_pool = _hf_run(model, tok, texts)
        f_ids, f_mask, f_hidden, f_mean, f_pool = _fgrad_run(folder, texts)
        assert (h_ids == f_ids).all() and (h_mask == f_mask.astype(h_mask.dtype)).all(), texts
        real = h_mask.astype(bool)
        worst["hidden"] = max(worst["hidden"], float(np.abs(h_hidden - f_hidden)[real].max()))
        worst["mean"] = max(worst["mean"], float(np.abs(h_mean - f_mean).max()))
        worst["embedding size"] = max(worst["embedding size"], float(np.abs(h_mean).max()))
        if h_pool is not None:
            worst["pooler"] = max(worst["pooler"], float(np.abs(h_pool - f_pool).max()))
    n = sum(len(b) for b in batches)
    print(f"{label}: {len(batches)} padded batches, {n} texts, ids identical; max abs diff "
          + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    import tempfile

    import torch
    import transformers

    torch.set_num_threads(2)
    tmp = tempfile.mkdtemp()
    folder = write_tiny_bert(os.path.join(tmp, "tiny"), **REFERENCE)
    model, tok = _hf(folder)
    ids, mask, hidden, mean, pooled = _hf_run(model, tok, TEXTS)
    out = {
        "reference": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                     "BertModel eager attention, float32; mean pooling as sentence-transformers",
        "folder": {k: v for k, v in REFERENCE.items()},
        "texts": TEXTS,
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "mean_pooled": np.round(mean, 7).tolist(),
        "pooler_output": np.round(pooled, 7).tolist(),
        "last_hidden_first": np.round(hidden[0, : int(mask[0].sum())], 7).tolist(),
    }
    path = os.path.join(HERE, "bert_reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    if not args.compare:
        return
    _compare(folder, "tiny (d 32, 2 layers, written by numpy)", [TEXTS] + MORE)
    big = write_tiny_bert(os.path.join(tmp, "big"), d_model=128, n_layers=4, n_heads=8, d_ff=512,
                          max_positions=128, seed=1)
    _compare(big, "d 128, 4 layers, 8 heads (written by numpy)", [TEXTS] + MORE)
    # A model made and saved by transformers itself (its initialisation, its names).
    from transformers import BertConfig, BertModel

    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        sizes = tiny_config(d_model=64, n_layers=3, n_heads=4, d_ff=256, max_positions=128)
        drop = ("architectures", "model_type")
        cfg = BertConfig(**{k: v for k, v in sizes.items() if k not in drop})
        hf_model = BertModel(cfg).to(dtype)
        name = f"hf-{str(dtype).split('.')[-1]}"
        hf_folder = os.path.join(tmp, name)
        hf_model.save_pretrained(hf_folder, safe_serialization=True)
        with open(os.path.join(hf_folder, "tokenizer.json"), "w") as f:
            f.write(tokenizer_json())
        _compare(hf_folder, f"BertModel(BertConfig(d 64, 3 layers)) saved by transformers, {name}",
                 [TEXTS] + MORE)
    # And the other way: a model saved by fgrad (bert.save) read by transformers.
    import fgrad
    from fgrad.llm import bert

    fcfg = bert.BertConfig(vocab_size=len(VOCAB), d_model=48, n_layers=2, n_heads=6, d_ff=96,
                           max_positions=128, hidden_act="gelu_pytorch_tanh")
    fmodel = bert.BertEncoder(fcfg).bind(bert.BertEncoder(fcfg).init(fgrad.random.key(1), scale=0.2))
    ffolder = os.path.join(tmp, "saved-by-fgrad")
    bert.save(fmodel, ffolder)
    with open(os.path.join(ffolder, "tokenizer.json"), "w") as f:
        f.write(tokenizer_json())
    _compare(ffolder, "saved by fgrad (bert.save; d 48, gelu_pytorch_tanh)", [TEXTS] + MORE)


if __name__ == "__main__":
    main()
