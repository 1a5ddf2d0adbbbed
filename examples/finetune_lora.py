"""LoRA fine-tuning of SmolLM2-135M-Instruct on Python's own documentation.

The text ships with Python: ``pydoc_data.topics.topics``, the ~80 help topics that
``help("with")`` prints (the language reference's sections, in reST-like plain text). The
topics are sorted by name and every fifth one is held out, so held-out sections are never
seen in training. Each split is tokenized, joined with end-of-text tokens and cut into
windows of ``--seq-len`` + 1 tokens.

The base model stays frozen: :func:`fgrad.llm.lora.init` makes rank ``--rank`` adapters on
``--targets`` (default q_proj and v_proj, as in the LoRA paper), and each step is one
jitted call of ``value_and_grad`` with respect to the adapters only plus an AdamW update.
``--base quantized`` keeps the GGUF's Q4_1 weights packed (QLoRA). Prints the held-out
perplexity before and after (and a greedy continuation of a prompt before and after),
saves the adapters in PEFT's format (``--out``; every ``--save-every`` steps, with the
step count, so ``--resume`` continues; Adam's moments restart), and plots the loss when
matplotlib is installed.

Run ``python examples/finetune_lora.py --help`` for the options; ``--quick`` is a run of a
few seconds (what the test runs, on a tiny model).

References:
    Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", 2021,
    arXiv:2106.09685; Dettmers et al., "QLoRA", 2023, arXiv:2305.14314.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np

import fgrad
import fgrad.numpy as fnp
from fgrad import nn, optim
from fgrad.llm import lora


def split_topics(every: int = 5) -> tuple[list[str], list[str]]:
    """``(train, held_out)`` topic texts of ``pydoc_data.topics``: every ``every``-th held out."""
    from pydoc_data.topics import topics

    names = sorted(topics)
    train = [topics[n] for i, n in enumerate(names) if i % every]
    held = [topics[n] for i, n in enumerate(names) if not i % every]
    return train, held


def windows(tokenizer, texts: list[str], length: int) -> np.ndarray:
    """``(n, length + 1)`` int32 windows of the texts' tokens joined by end-of-text ids."""
    eos = tokenizer.eos_id if tokenizer.eos_id is not None else 0
    ids: list[int] = []
    for text in texts:
        ids.extend(tokenizer.encode(text, add_special_tokens=False))
        ids.append(eos)
    n = (len(ids) - 1) // length
    arr = np.asarray(ids[: n * length + 1], dtype=np.int32)
    return np.stack([arr[i * length : i * length + length + 1] for i in range(n)])


def loss_fn(adapters, model, batch):
    """Mean next-token cross-entropy of the adapted model on ``(batch, seq + 1)`` ids."""
    logits, _ = lora.apply(model, adapters)(batch[:, :-1])
    return fnp.mean(nn.softmax_cross_entropy(logits, batch[:, 1:]))


def perplexity(loss, adapters, model, data: np.ndarray, batch: int) -> float:
    """``exp`` of the mean loss over ``data`` (equal-length windows), ``batch`` at a time."""
    total = 0.0
    for i in range(0, len(data), batch):
        chunk = data[i : i + batch]
        total += float(loss(adapters, model, fnp.asarray(chunk))) * len(chunk)
    return math.exp(total / len(data))


def continuation(model, tokenizer, prompt: str, n: int) -> str:
    from fgrad.llm import generate

    ids = list(generate(model, tokenizer, prompt, n))
    return tokenizer.decode(ids)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="GGUF file or HF folder (default SmolLM2-135M-Instruct)")
    p.add_argument("--base", choices=("float32", "quantized"), default="float32",
                   help="dequantize the base to float32, or keep it quantized (QLoRA)")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--targets", default="q_proj,v_proj")
    p.add_argument("--rslora", action="store_true")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--eval-windows", type=int, default=8, help="held-out windows for the perplexity")
    p.add_argument("--gen-tokens", type=int, default=24)
    p.add_argument("--prompt", default="The with statement is used to")
    p.add_argument("--out", default=None, help="folder for the adapter checkpoints (PEFT format)")
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--resume", action="store_true", help="start from the adapters in --out")
    p.add_argument("--plot", default=None, help="write the loss curve to this PNG")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a short run (few steps and tokens; still loads the real model unless --model names a small file)")
    args = p.parse_args(argv)
    if args.quick:
        if args.steps > 4:
            print(f"--quick: {args.steps} steps capped at 4")
        args.steps, args.batch, args.seq_len = min(args.steps, 4), 2, 32
        args.eval_windows, args.gen_tokens, args.rank = 4, 4, 4
    from fgrad.llm import load

    model, tokenizer = load(args.model, dtype=None if args.base == "quantized" else "float32")
    train_texts, held_texts = split_topics()
    train = windows(tokenizer, train_texts, args.seq_len)
    held = windows(tokenizer, held_texts, args.seq_len)
    rng = np.random.default_rng(args.seed)
    held = held[rng.permutation(len(held))[: args.eval_windows]]
    print(f"train: {len(train_texts)} topics, {len(train)} windows of {args.seq_len}; "
          f"held out: {len(held_texts)} topics, {len(held)} windows evaluated")

    start = 0
    if args.resume and args.out and os.path.exists(os.path.join(args.out, lora.CONFIG_NAME)):
        adapters = lora.load(args.out, n_layers=model.config.n_layers)
        with open(os.path.join(args.out, "progress.json")) as f:
            start = json.load(f)["step"]
        asked = (args.rank, tuple(args.targets.split(",")))
        if p.get_default("rank") != args.rank or p.get_default("targets") != args.targets:
            if asked != (adapters.rank, tuple(adapters.targets)):
                p.error(
                    f"--resume: the adapters in {args.out} have rank {adapters.rank} on "
                    f"{','.join(adapters.targets)}; --rank/--targets ask for rank {asked[0]} on "
                    f"{','.join(asked[1])}: drop them, or use a new --out"
                )
        if start >= args.steps:
            print(f"resumed at step {start}: --steps {args.steps} leaves nothing to train")
        print(f"resumed from {args.out} at step {start}")
    else:
        adapters = lora.init(fgrad.random.key(args.seed), model, args.rank, args.alpha,
                             targets=tuple(args.targets.split(",")), use_rslora=args.rslora)
    print(f"LoRA rank {adapters.rank} on {', '.join(adapters.targets)}: {lora.n_params(adapters):,} "
          f"trainable values; base {model.nbytes / 2**20:.0f} MiB frozen")

    opt = optim.adamw(args.lr, weight_decay=0.0)
    state = opt.init(adapters)
    value_and_grad = fgrad.value_and_grad(loss_fn)

    def train_step(adapters, state, model, batch):
        value, grads = value_and_grad(adapters, model, batch)
        updates, state = opt.update(grads, state, adapters)
        return value, optim.apply_updates(adapters, updates), state

    step_fn = fgrad.jit(train_step)
    eval_loss = fgrad.jit(loss_fn)
    result = {}
    t0 = time.perf_counter()
    result["ppl_before"] = perplexity(eval_loss, adapters, model, held, args.batch)
    print(f"held-out perplexity before: {result['ppl_before']:.3f} ({time.perf_counter() - t0:.1f} s)")
    if args.gen_tokens:
        result["text_before"] = continuation(lora.apply(model, adapters), tokenizer, args.prompt, args.gen_tokens)
        print(f"before: {args.prompt!r} -> {result['text_before']!r}")

    try:
        from tqdm import tqdm
    except ImportError:  # optional
        tqdm = None
    steps = range(start, args.steps)
    bar = tqdm(steps, desc="LoRA", unit="step") if tqdm is not None else steps
    losses = []
    t0 = time.perf_counter()
    for step in bar:
        batch = fnp.asarray(train[rng.integers(0, len(train), args.batch)])
        value, adapters, state = step_fn(adapters, state, model, batch)
        losses.append(float(value))
        if tqdm is not None:
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
        elif step % 5 == 0:
            print(f"step {step}: loss {losses[-1]:.3f}")
        if args.out and ((step + 1) % args.save_every == 0 or step + 1 == args.steps):
            lora.save(args.out, adapters, base_model_name_or_path="HuggingFaceTB/SmolLM2-135M-Instruct")
            with open(os.path.join(args.out, "progress.json"), "w") as f:
                json.dump({"step": step + 1, "losses": losses}, f)
    train_seconds = time.perf_counter() - t0
    result["losses"] = losses
    result["ppl_after"] = perplexity(eval_loss, adapters, model, held, args.batch)
    print(f"held-out perplexity after {args.steps} steps: {result['ppl_after']:.3f} "
          f"(training {train_seconds:.0f} s, {train_seconds / max(len(losses), 1):.1f} s/step)")
    if args.gen_tokens:
        result["text_after"] = continuation(lora.apply(model, adapters), tokenizer, args.prompt, args.gen_tokens)
        print(f"after:  {args.prompt!r} -> {result['text_after']!r}")
    if args.plot and losses:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
        else:
            plt.figure(figsize=(5, 3))
            plt.plot(range(start + 1, start + len(losses) + 1), losses)
            plt.xlabel("step")
            plt.ylabel("training loss (nats/token)")
            plt.tight_layout()
            plt.savefig(args.plot)
            print(f"loss curve: {args.plot}")
    result["adapters"] = adapters
    return result


if __name__ == "__main__":
    main()
