#!/usr/bin/env python3
"""Decode speed of llama.cpp (through llama-cpp-python) on one prompt.

Evaluates the prompt, then times N greedy single-token steps (decode plus an
argmax over the logits). Prints one line in the same format as
`actorserve generate` reports on stderr:

  prompt: 5 tokens, 812.3 tok/s | generation: 128 tokens, 95.1 tok/s

Run with the venv from scripts/gen_reference.sh:
  .refvenv/bin/python bench/llamacpp_decode.py --model models/SmolLM2-135M-Instruct.Q4_1.gguf
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama


def last_logits(llm: Llama, n_vocab: int) -> np.ndarray:
    # llm.scores is only filled with logits_all=True; read the context directly.
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", default="Once upon a time,")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-ctx", type=int, default=2048)
    args = ap.parse_args()

    llm = Llama(model_path=args.model, n_ctx=args.n_ctx, n_threads=args.threads,
                n_threads_batch=args.threads, n_batch=512, seed=0, verbose=False, logits_all=False)
    n_vocab = llm.n_vocab()
    prompt_ids = llm.tokenize(args.prompt.encode("utf-8"), add_bos=False, special=True)
    if not prompt_ids:
        print("error: the prompt tokenizes to nothing", file=sys.stderr)
        return 2
    if len(prompt_ids) + args.max_tokens > args.n_ctx:
        print("error: prompt plus --max-tokens exceeds the context", file=sys.stderr)
        return 2

    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt_ids)
    t = int(np.argmax(last_logits(llm, n_vocab)))
    t1 = time.perf_counter()

    # The first token comes from the prompt pass; each further step is one
    # single-token decode plus argmax, as in actorserve's generation loop.
    for _ in range(args.max_tokens):
        llm.eval([t])
        t = int(np.argmax(last_logits(llm, n_vocab)))
    t2 = time.perf_counter()

    prompt_tps = len(prompt_ids) / (t1 - t0)
    gen_tps = args.max_tokens / (t2 - t1)
    print(f"prompt: {len(prompt_ids)} tokens, {prompt_tps:.1f} tok/s | "
          f"generation: {args.max_tokens} tokens, {gen_tps:.1f} tok/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
