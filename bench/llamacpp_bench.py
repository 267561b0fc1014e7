#!/usr/bin/env python3
"""llama.cpp (through llama-cpp-python) on the workloads of build/bin/engine_bench.

Prints the same JSON lines: {"test":"pp512","tok_s":...} for prompt processing of
--n-prompt synthetic tokens in one batch, and {"test":"tg","seqs":1,"tok_s":...} for
--n-gen greedy single-token steps after an 8-token prompt. Token ids are the same
deterministic spread engine_bench uses.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama


def token_at(i: int, n_vocab: int) -> int:
    return (i * 7919 + 13) % n_vocab


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--what", choices=["pp", "tg", "all"], default="all")
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--n-gen", type=int, default=128)
    a = ap.parse_args()
    llm = Llama(model_path=a.model, n_ctx=a.n_prompt + a.n_gen + 64, n_threads=a.threads,
                n_threads_batch=a.threads, n_batch=512, verbose=False, logits_all=False)
    nv = llm.n_vocab()
    if a.what in ("pp", "all"):
        llm.reset()
        toks = [token_at(i, nv) for i in range(a.n_prompt)]
        t0 = time.perf_counter()
        llm.eval(toks)
        print(json.dumps({"test": f"pp{a.n_prompt}", "tok_s": round(a.n_prompt / (time.perf_counter() - t0), 2)}))
    if a.what in ("tg", "all"):
        llm.reset()
        llm.eval([token_at(i, nv) for i in range(8)])
        t0 = time.perf_counter()
        for _ in range(a.n_gen):
            ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
            logits = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(nv,))
            llm.eval([int(np.argmax(logits))])
        print(json.dumps({"test": "tg", "seqs": 1, "tok_s": round(a.n_gen / (time.perf_counter() - t0), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
