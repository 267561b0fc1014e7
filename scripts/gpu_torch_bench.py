#!/usr/bin/env python3
"""Hugging Face transformers on the same model and prompt as bench/gpu_bench.cpp, measured the
same way, as the baseline for the CUDA backend (scripts/gpu-check.sh).

  gpu_torch_bench.py --hf DIR --prompts IDS [--batch 1,16,64] [--tokens 128] [--repeat 3]

DIR is `gpu_bench --export-hf DIR` (the engine's F16 weights under Hugging Face names). IDS is
a JSON list of token ids, "1,2,3", or a file holding gpu_bench's output (its "prompt_ids" line),
so both run the very same tokens; every sequence of a batch gets that prompt.

Per batch size N, after a warm-up run, --repeat runs of: one forward over the N prompts
(the prefill, timed apart), then --tokens steps of one token per sequence through the KV cache
(past_key_values), the next token the argmax of the last logits (on the device: this is how
transformers runs at its best). Decode tokens/s = N * steps / time of the steps, the median
printed as one JSON line per batch size with sequence 0's greedy tokens (prefill's, then one
per step, as gpu_bench prints them). No network: the checkpoint is read from DIR only.
"""
import argparse
import inspect
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import LlamaForCausalLM  # noqa: E402


def read_prompt(arg):
    if os.path.isfile(arg):
        for line in open(arg):
            line = line.strip()
            if line.startswith("{") and "prompt_ids" in line:
                return json.loads(line)["prompt_ids"]
        sys.exit(f"gpu_torch_bench: no prompt_ids line in {arg}")
    if arg.lstrip().startswith("["):
        return json.loads(arg)
    return [int(t) for t in arg.split(",") if t.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", required=True, help="checkpoint directory (gpu_bench --export-hf)")
    ap.add_argument("--prompts", required=True, help="prompt token ids: JSON list, comma-separated, or gpu_bench output file")
    ap.add_argument("--batch", default="1,16,64")
    ap.add_argument("--tokens", type=int, default=128, help="decode steps per run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dtype", default="float16", choices=["float16", "float32"], help="float32: a CPU check")
    a = ap.parse_args()

    prompt = read_prompt(a.prompts)
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("gpu_torch_bench: torch sees no CUDA device", file=sys.stderr)
        return 77
    # Loaded then cast, rather than a dtype argument whose name changed between versions.
    model = LlamaForCausalLM.from_pretrained(a.hf).to(device=dev, dtype=getattr(torch, a.dtype)).eval()
    # transformers 5 renamed forward()'s past_key_values to cache (and the output's field)
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"

    def run(n, steps):
        ids = torch.tensor([prompt] * n, device=dev)
        with torch.inference_mode():
            sync()
            t0 = time.perf_counter()
            r = model(input_ids=ids, use_cache=True)
            nxt = r.logits[:, -1].argmax(-1, keepdim=True)
            sync()
            t1 = time.perf_counter()
            out = [nxt]
            for _ in range(steps):
                cache = getattr(r, "cache", None)
                if cache is None:
                    cache = r.past_key_values
                r = model(input_ids=nxt, use_cache=True, **{cache_kw: cache})
                nxt = r.logits[:, -1].argmax(-1, keepdim=True)
                out.append(nxt)
            sync()
            t2 = time.perf_counter()
        return t1 - t0, t2 - t1, torch.cat(out, 1)[0].tolist()

    for n in [int(b) for b in a.batch.split(",")]:
        run(n, min(a.tokens, 8))  # warm-up: kernels, allocator
        tps, prefill_ms, seq0 = [], [], None
        for i in range(a.repeat):
            pre, dec, toks = run(n, a.tokens)
            tps.append(n * a.tokens / dec)
            prefill_ms.append(pre * 1e3)
            seq0 = seq0 or toks
        print(json.dumps({"what": "decode", "backend": "transformers", "transformers": transformers.__version__,
                          "torch": torch.__version__, "dtype": a.dtype, "device": name, "batch": n,
                          "prompt_tokens": len(prompt), "decode_steps": a.tokens,
                          "tok_per_s": round(statistics.median(tps), 1), "runs_tok_per_s": [round(t, 1) for t in tps],
                          "prefill_ms": round(statistics.median(prefill_ms), 2), "greedy_seq0": seq0}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
