"""Quantizing SmolLM2-135M-Instruct: held-out perplexity, memory and decode speed per variant.

Variants, all of the same GGUF file (its Q4_1 weights are the source: "float32" is them
dequantized, and the int8 variants quantize those float32 values again):

* ``float32``: every weight dequantized at load;
* ``Q4_1 kept``: the file's own blocks kept packed (``load(dtype=None)``), and ``Q4_1
  kept, int8 act`` with their products' activations rounded to int8 blocks
  (:func:`fgrad.llm.quantized.int8_activations`, llama.cpp's arithmetic);
* ``int8``: weight-only, symmetric absmax per output channel (embedding/head too), and
  ``int8 g64`` per group of 64 inputs (:func:`fgrad.llm.int8.quantize`);
* ``W8A8``: the layers' weights int8 per channel, activations int8 per token, int32
  products (:func:`fgrad.llm.int8.w8a8`), embedding and head float;
* ``SmoothQuant a``: the same after smoothing with migration strength ``a``, calibrated on
  ``--calib`` training windows (:func:`fgrad.llm.int8.smoothquant`).

The text is Python's own documentation (``pydoc_data.topics``), split by topic as in
``examples/finetune_lora.py``: the perplexity is measured on held-out topics, calibration
uses training topics. For each variant: held-out perplexity, the largest and mean absolute
logit difference from float32 and top-1 agreement with it, bytes of parameters, and greedy
decode tokens/s. Prints a Markdown table.

Run ``python examples/quantize.py --help`` for the options; ``--quick`` is a run of a few
seconds (what the test runs, on a tiny model).

References:
    Dettmers et al., "LLM.int8()", 2022, arXiv:2208.07339; Xiao et al., "SmoothQuant",
    2023, arXiv:2211.10438 (Table of W8A8 perplexities; alpha 0.5 for OPT, 0.85 for Llama).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn
from fgrad.llm import int8, quantized

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from finetune_lora import split_topics, windows  # noqa: E402  (the same data split)


def evaluate(model, data: np.ndarray, batch: int, reference: list | None):
    """``(perplexity, logits per batch, max |dlogit|, mean |dlogit|, top-1 agreement)``."""
    forward = lambda m, t: m(t)[0]  # eager: the big products dominate, jit would only trace
    nll, n, out = 0.0, 0, []
    worst, diff_sum, diff_n, agree = 0.0, 0.0, 0, 0
    for k, i in enumerate(range(0, len(data), batch)):
        chunk = data[i : i + batch]
        logits = forward(model, fnp.asarray(chunk[:, :-1]))
        nll += float(fnp.sum(nn.softmax_cross_entropy(logits, fnp.asarray(chunk[:, 1:]))))
        n += chunk[:, 1:].size
        lg = np.asarray(logits)
        out.append(lg)
        if reference is not None:
            d = np.abs(lg - reference[k])
            worst = max(worst, float(d.max()))
            diff_sum += float(d.sum())
            diff_n += d.size
            agree += int((lg.argmax(-1) == reference[k].argmax(-1)).sum())
    total = sum(x.shape[0] * x.shape[1] for x in out)
    top1 = agree / total if reference is not None else 1.0
    return math.exp(nll / n), out, worst, diff_sum / max(diff_n, 1), top1


def decode_speed(model, tokenizer, prompt: str, n: int) -> float:
    from fgrad.llm import generate

    if n <= 0:
        return float("nan")
    list(generate(model, tokenizer, prompt, n, stop=()))  # traces the decode step once
    stats: dict = {}
    list(generate(model, tokenizer, prompt, n, stop=(), stats=stats))  # timed: no tracing
    return stats["decode_tokens"] / max(stats["decode_seconds"], 1e-9)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="GGUF file (default SmolLM2-135M-Instruct)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--eval-windows", type=int, default=8)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--calib", type=int, default=8, help="training windows for SmoothQuant's calibration")
    p.add_argument("--alphas", default="0.5,0.7,0.85")
    p.add_argument("--decode-tokens", type=int, default=16)
    p.add_argument("--prompt", default="The with statement is used to")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a short run (few steps and tokens; still loads the real model unless --model names a small file)")
    args = p.parse_args(argv)
    if args.quick:
        args.seq_len, args.eval_windows, args.batch, args.calib = 32, 2, 2, 2
        args.decode_tokens = min(args.decode_tokens, 2)
    from fgrad.llm import load

    dense, tokenizer = load(args.model, dtype="float32")
    kept, _ = load(args.model, dtype=None)
    train_texts, held_texts = split_topics()
    rng = np.random.default_rng(args.seed)
    held = windows(tokenizer, held_texts, args.seq_len)
    held = held[rng.permutation(len(held))[: args.eval_windows]]
    train = windows(tokenizer, train_texts, args.seq_len)
    calib = train[rng.permutation(len(train))[: args.calib]]
    t0 = time.perf_counter()
    stats = int8.calibrate(dense, [row[:-1] for row in calib])
    print(f"calibrated on {len(calib)} windows of {args.seq_len} tokens in {time.perf_counter() - t0:.1f} s")
    ratio = [float(st["wq"].max() / np.median(st["wq"])) for st in stats]
    print(f"activation outliers at q/k/v inputs: max/median channel absmax {min(ratio):.0f}-{max(ratio):.0f}x")

    variants = {
        "float32": lambda: dense,
        "Q4_1 kept": lambda: kept,
        "Q4_1 kept, int8 act": lambda: quantized.int8_activations(kept),
        "int8 per channel": lambda: int8.quantize(dense),
        "int8 g64": lambda: int8.quantize(dense, 64 if dense.config.d_model % 64 == 0 else None),
        "W8A8": lambda: int8.w8a8(dense),
    }
    for a in (float(s) for s in args.alphas.split(",") if s):
        variants[f"SmoothQuant {a:g}"] = lambda a=a: int8.smoothquant(dense, stats, a)
    rows, reference = {}, None
    for name, make in variants.items():
        model = make()
        t0 = time.perf_counter()
        ppl, logits, worst, mean, agree = evaluate(model, held, args.batch, reference)
        seconds = time.perf_counter() - t0
        if reference is None:
            reference = logits
        speed = decode_speed(model, tokenizer, args.prompt, args.decode_tokens)
        rows[name] = dict(ppl=ppl, max_diff=worst, mean_diff=mean, top1=agree, mb=model.nbytes / 2**20,
                          decode=speed, eval_seconds=seconds)
        print(f"{name}: perplexity {ppl:.3f}, max |dlogit| {worst:.3g}, {model.nbytes / 2**20:.0f} MiB, "
              f"{speed:.1f} tokens/s ({seconds:.0f} s)", flush=True)
    n_tokens = held[:, 1:].size
    print(f"\nheld-out perplexity on {len(held)} windows of {args.seq_len} tokens ({n_tokens} predictions)\n")
    print("| variant | perplexity | max abs logit diff | mean abs logit diff | top-1 = float32 | MiB | decode tokens/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | {r['ppl']:.3f} | {r['max_diff']:.3g} | {r['mean_diff']:.3g} | {100 * r['top1']:.1f}% "
              f"| {r['mb']:.1f} | {r['decode']:.1f} |")
    return rows


if __name__ == "__main__":
    main()
