"""Tiny RoBERTa-family folders, and roberta_reference.json from Hugging Face transformers.

RoBERTa (and XLM-R, CamemBERT) has BERT's layers but its own position rule: the real
tokens count up from ``padding_idx + 1`` and a padding token sits at ``padding_idx``,
so a padded row (right or left) differs from BERT's ``0, 1, ...``. ``write_tiny_roberta``
writes such a folder with seeded numpy weights (``roberta.*`` names, one token type, 66
position rows for 64 tokens, ``<s>=0 <pad>=1 </s>=2``) and needs neither torch nor
transformers, so the tests build the same folder in CI.

Run with a Python that has torch and transformers (not dependencies of fgrad):

    python tests/llm/data/make_roberta_reference.py [--compare]

It reads the tiny folder with transformers (``RobertaModel``, eager attention, float32)
and stores, for a right-padded batch of the texts and the same batch padded on the left,
the ids, masks and mean-pooled embeddings, and the last hidden states of the first text.
``--compare`` also prints the max abs differences with fgrad for XLM-R and CamemBERT
configs and a model made and saved by transformers itself.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "make_bert_reference", os.path.join(HERE, "make_bert_reference.py")
)
_bert_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bert_ref)

SPECIAL = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
VOCAB = SPECIAL + _bert_ref.VOCAB[len(_bert_ref.SPECIAL):]
TEXTS = _bert_ref.TEXTS
REFERENCE = dict(d_model=32, n_layers=2, n_heads=4, d_ff=64, seed=0)


def tiny_config(*, model_type="roberta", d_model=32, n_layers=2, n_heads=4, d_ff=64,
                max_length=64) -> dict:
    """A RoBERTa-family ``config.json`` dict over :data:`VOCAB` (pad 1, ``max_length + 2``
    position rows, as ``roberta-base``'s 514 for 512 tokens)."""
    config = _bert_ref.tiny_config(d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                   d_ff=d_ff, max_positions=max_length + 2, type_vocab=1,
                                   eps=1e-5)
    arch = {"roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel",
            "camembert": "CamembertModel"}[model_type]
    config.update(model_type=model_type, architectures=[arch], vocab_size=len(VOCAB),
                  pad_token_id=1, bos_token_id=0, eos_token_id=2)
    return config


def tokenizer_json() -> str:
    """A WordPiece ``tokenizer.json`` over :data:`VOCAB` with RoBERTa's ``<s> $A </s>``
    post-processor (the model reads ids; how words split does not matter here)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers import processors

    vocab = {t: i for i, t in enumerate(VOCAB)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="<unk>", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    return tok.to_str()


def write_tiny_roberta(folder: str, *, model_type: str = "roberta", seed: int = 0,
                       pooler: bool = True, **sizes) -> str:
    """Write a tiny RoBERTa-family folder (``roberta.*`` names) at ``folder`` and return it."""
    config = tiny_config(model_type=model_type, **sizes)
    _bert_ref.write_tiny_bert(folder, seed=seed, prefix="roberta.", pooler=pooler, config=config)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        f.write(tokenizer_json())
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "RobertaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                   "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>"}, f)
    return folder


def left_padded(ids: np.ndarray, mask: np.ndarray, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """The same rows with their padding moved to the left."""
    out, out_mask = np.full_like(ids, pad), np.zeros_like(mask)
    for r in range(ids.shape[0]):
        n = int(mask[r].sum())
        out[r, ids.shape[1] - n:] = ids[r, :n]
        out_mask[r, ids.shape[1] - n:] = 1
    return out, out_mask


# ------------------------------------------------------------------ transformers' side


def _hf_hidden(folder, ids, mask):
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    return out.last_hidden_state.double().numpy()


def _mean(hidden, mask):
    m = mask[..., None].astype(np.float64)
    return (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)


def _fgrad_hidden(folder, ids, mask):
    sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))
    from fgrad.llm import bert

    model = bert.load(folder)
    return np.asarray(model(ids, mask == 1), dtype=np.float64)


def _ids(folder, texts):
    sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))
    from fgrad.llm import bert

    ids, mask = bert.load_encoder(folder).tokenize(texts)
    return np.asarray(ids), np.asarray(mask).astype(np.int64)


def _compare(folder, label, texts):
    ids, mask = _ids(folder, texts)
    worst = 0.0
    for i, m in (( ids, mask), left_padded(ids, mask, 1)):
        h, f = _hf_hidden(folder, i, m), _fgrad_hidden(folder, i, m)
        worst = max(worst, float(np.abs(h - f)[m == 1].max()))
    print(f"{label}: right and left padding, {len(texts)} texts; max abs diff of the hidden "
          f"states at real tokens {worst:.2e}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    import tempfile

    import torch
    import transformers

    torch.set_num_threads(2)
    tmp = tempfile.mkdtemp()
    folder = write_tiny_roberta(os.path.join(tmp, "tiny"), **REFERENCE)
    ids, mask = _ids(folder, TEXTS)
    left_ids, left_mask = left_padded(ids, mask, 1)
    hidden = _hf_hidden(folder, ids, mask)
    left_hidden = _hf_hidden(folder, left_ids, left_mask)
    out = {
        "reference": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                     "RobertaModel eager attention, float32",
        "folder": REFERENCE,
        "texts": TEXTS,
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "mean_pooled": np.round(_mean(hidden, mask), 7).tolist(),
        "left_input_ids": left_ids.tolist(),
        "left_attention_mask": left_mask.tolist(),
        "left_mean_pooled": np.round(_mean(left_hidden, left_mask), 7).tolist(),
        "last_hidden_first": np.round(hidden[0, : int(mask[0].sum())], 7).tolist(),
    }
    path = os.path.join(HERE, "roberta_reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    if not args.compare:
        return
    _compare(folder, "roberta (d 32, 2 layers, written by numpy)", TEXTS)
    for model_type in ("xlm-roberta", "camembert"):
        f = write_tiny_roberta(os.path.join(tmp, model_type), model_type=model_type, seed=2,
                               d_model=64, n_layers=3, n_heads=8, d_ff=128)
        _compare(f, f"{model_type} (d 64, 3 layers, written by numpy)", TEXTS)
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(0)
    sizes = tiny_config(d_model=64, n_layers=3, n_heads=4, d_ff=256)
    hf_model = RobertaModel(RobertaConfig(**{k: v for k, v in sizes.items()
                                            if k not in ("architectures", "model_type")}))
    hf_folder = os.path.join(tmp, "hf")
    hf_model.save_pretrained(hf_folder, safe_serialization=True)
    with open(os.path.join(hf_folder, "tokenizer.json"), "w") as f:
        f.write(tokenizer_json())
    _compare(hf_folder, "RobertaModel(RobertaConfig(d 64, 3 layers)) saved by transformers", TEXTS)


if __name__ == "__main__":
    main()
