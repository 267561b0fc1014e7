#!/usr/bin/env python3
"""Perplexity of a GGUF model over a text file, from llama.cpp's logits.

The reference for `actorserve perplexity`: the same chunking and scoring as
llama.cpp's perplexity tool (and engine/perplexity.h), with the logits computed
by llama.cpp through llama-cpp-python. Run with the venv that
scripts/gen_reference.sh builds:

  .refvenv/bin/python scripts/ref_perplexity.py --file /usr/share/common-licenses/GPL-3

- the text is tokenized with BOS only when the model adds it, control-token
  text taken literally (as llama.cpp's tool does);
- it is cut into chunks of n_ctx tokens (a partial last chunk is dropped), each
  evaluated from an empty KV cache, its first token replaced by BOS when the
  model adds BOS;
- positions n_ctx/2 .. n_ctx-2 are scored: -log softmax(logits at i)[token i+1],
  the maximum subtracted in float32, the exponentials summed in float64;
- PPL = exp(mean), standard error PPL * sqrt((mean(v^2) - mean(v)^2) / (N - 1)).

Prints llama.cpp's "[k]ppl," line and "Final estimate: PPL = X +/- Y"; with
--json PATH also writes the running estimate per chunk (the test fixture).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def nll_of_chunk(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """-log softmax(logits[r])[targets[r]] per row, in llama.cpp's arithmetic."""
    mx = logits.max(axis=1, keepdims=True)
    shifted = logits - mx  # float32, as llama.cpp subtracts in float
    # note: llama.cpp sums expf() of each value; float64 exp of the same float32 argument
    # differs from expf by under an ulp of float32, far below the printed digits.
    sum_exp = np.exp(shifted.astype(np.float64)).sum(axis=1)
    picked = shifted[np.arange(len(targets)), targets].astype(np.float64)
    return -(picked - np.log(sum_exp))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=-1, help="chunks to score (default: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the result and the token ids scored here")
    args = ap.parse_args()

    n_ctx = args.ctx
    llm = Llama(model_path=str(args.model), n_ctx=n_ctx, n_batch=n_ctx, n_threads=args.threads,
                n_threads_batch=args.threads, seed=0, verbose=False, logits_all=True)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
    bos = llm.token_bos()

    text = args.file.read_bytes()
    # add_bos=True means "add the model's special prefix": BOS only when the vocabulary asks.
    tokens = llm.tokenize(text, add_bos=True, special=False)
    if len(tokens) < 2 * n_ctx:
        print(f"error: {len(tokens)} tokens; a context of {n_ctx} needs at least {2 * n_ctx}", file=sys.stderr)
        return 1
    n_max = len(tokens) // n_ctx
    n_chunks = n_max if args.chunks < 0 else min(args.chunks, n_max)
    first = n_ctx // 2
    print(f"ref_perplexity: {args.file}, {len(tokens)} tokens, {n_chunks} chunks of {n_ctx}, "
          f"add_bos={add_bos}, llama-cpp-python {llama_cpp.__version__}", file=sys.stderr)

    nll = nll2 = 0.0
    count = 0
    running = []
    t0 = time.perf_counter()
    for c in range(n_chunks):
        chunk = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        if add_bos:
            chunk[0] = bos
        llm.reset()  # the next eval starts from an empty KV cache
        llm.eval(chunk)
        logits = np.array(llm.scores[first:n_ctx - 1], dtype=np.float32)  # (n_ctx-1-first, n_vocab)
        targets = np.array(tokens[c * n_ctx + first + 1:(c + 1) * n_ctx])
        v = nll_of_chunk(logits, targets)
        nll += float(v.sum())
        nll2 += float((v * v).sum())
        count += len(v)
        running.append(math.exp(nll / count))
        print(f"[{c + 1}]{running[-1]:.4f},", end="", flush=True)
    seconds = time.perf_counter() - t0
    mean = nll / count
    ppl = math.exp(mean)
    var = nll2 / count - mean * mean
    err = ppl * math.sqrt(var / (count - 1)) if var > 0 and count > 1 else 0.0
    print(f"\nFinal estimate: PPL = {ppl:.4f} +/- {err:.5f}")
    print(f"ref_perplexity: {n_chunks * n_ctx} tokens evaluated in {seconds:.1f} s, "
          f"{n_chunks * n_ctx / seconds:.1f} tok/s", file=sys.stderr)

    if args.json:
        doc = {
            "command": " ".join([".refvenv/bin/python", "scripts/ref_perplexity.py"] + sys.argv[1:]),
            "llama_cpp_python": llama_cpp.__version__,
            "model": args.model.name,
            "model_sha256": sha256(args.model),
            "text": str(args.file),
            "text_sha256": sha256(args.file),
            "n_ctx": n_ctx,
            "add_bos": add_bos,
            "n_chunks": n_chunks,
            "ppl": round(ppl, 6),
            "ppl_err": round(err, 6),
            "running_ppl": [round(x, 6) for x in running],
            "tokens": [int(t) for t in tokens[:n_chunks * n_ctx]],
        }
        # one key per line, each array on its line
        body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in doc.items())
        args.json.write_text("{\n" + body + "\n}\n")
        print(f"ref_perplexity: wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
