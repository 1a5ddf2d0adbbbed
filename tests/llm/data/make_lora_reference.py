"""Write the PEFT-made LoRA references under tests/llm/data/lora/ (PEFT and torch needed).

Run with a Python that has torch, transformers and peft (not dependencies of fgrad):

    python tests/llm/data/make_lora_reference.py [--check FGRAD_ADAPTER_FOLDER]

Writes ``lora/base/`` (a tiny random llama saved by transformers' ``save_pretrained``:
``config.json`` + ``model.safetensors``), two PEFT adapters saved by PEFT's own
``save_pretrained`` (``lora/plain/``: r 4, lora_alpha 8 on q_proj, v_proj and down_proj;
``lora/rslora/``: r 4, lora_alpha 8, use_rslora, on all seven projections), each with
``init_lora_weights=False`` so that B is not zero and the adapter changes the logits, and
``lora/reference.json``: the token ids and the logits of the base and of each adapted
model, as PEFT computes them. ``tests/llm/test_lora.py`` loads these adapters with
``fgrad.llm.lora.load`` and compares fgrad's logits with PEFT's.

``--check FOLDER`` loads an adapter folder that fgrad wrote (``fgrad.llm.lora.save``) into
PEFT over the same base and prints the largest logit difference from the logits that
fgrad stored in ``FOLDER/fgrad_logits.json``.
"""

import argparse
import json
import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lora")
TOKENS = [[1, 5, 9, 33, 2, 60, 17, 4], [7, 7, 3, 40, 12, 0, 63, 8]]
ADAPTERS = {
    "plain": dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"]),
    "rslora": dict(r=4, lora_alpha=8, use_rslora=True, target_modules=[
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", default=None)
    args = parser.parse_args()
    import peft  # not dependencies of fgrad: only this script needs them
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    base_dir = os.path.join(HERE, "base")
    if args.check:
        base = LlamaForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
        model = peft.PeftModel.from_pretrained(base, args.check).eval()
        with open(os.path.join(args.check, "fgrad_logits.json")) as f:
            want = np.asarray(json.load(f)["logits"])
        with torch.no_grad():
            got = model(torch.tensor(TOKENS)).logits.numpy()
        print(f"PEFT over fgrad's adapter: max |logit difference| {np.abs(got - want).max():.3g}")
        return
    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
    )
    base = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # visible norms: not all ones
        for name, p in base.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    base.save_pretrained(base_dir, safe_serialization=True)
    os.remove(os.path.join(base_dir, "generation_config.json"))
    out = {
        "made_by": f"transformers {transformers.__version__}, peft {peft.__version__}, "
                   f"torch {torch.__version__}, float32",
        "tokens": TOKENS,
    }
    with torch.no_grad():
        out["base"] = base(torch.tensor(TOKENS)).logits.numpy().round(7).tolist()
    for name, options in ADAPTERS.items():
        fresh = LlamaForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
        cfg = peft.LoraConfig(lora_dropout=0.0, init_lora_weights=False, **options)
        model = peft.get_peft_model(fresh, cfg).eval()
        folder = os.path.join(HERE, name)
        model.save_pretrained(folder)
        os.remove(os.path.join(folder, "README.md"))  # PEFT's model card: not needed
        with open(os.path.join(folder, "adapter_config.json")) as f:
            saved = json.load(f)
        saved["base_model_name_or_path"] = "../base"  # not this machine's absolute path
        with open(os.path.join(folder, "adapter_config.json"), "w") as f:
            json.dump(saved, f, indent=2, sort_keys=True)
        with torch.no_grad():
            out[name] = model(torch.tensor(TOKENS)).logits.numpy().round(7).tolist()
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(out, f)
    print("wrote", HERE)


if __name__ == "__main__":
    main()
