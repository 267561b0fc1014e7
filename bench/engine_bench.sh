#!/usr/bin/env bash
# Engine throughput beside llama.cpp, same model, threads and workloads, alternating runs:
#   pp512  prompt processing of a 512-token prompt (tokens/s)
#   tg128  generation of 128 tokens after a short prompt (tokens/s)
#   batch  aggregate generation with 1, 4, 8, 16, 32 sequences decoding together (ours only;
#          llama-cpp-python drives one sequence)
# Prints the median of RUNS runs of each and the ratios.
#
# Needs build/bin/engine_bench (scripts/build.sh) and .refvenv/ (scripts/gen_reference.sh).
# Environment: MODEL, THREADS [2], RUNS [5], SEQS [1,4,8,16,32], SKIP_LLAMACPP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-5}"
SEQS="${SEQS:-1,4,8,16,32}"
BIN="${BIN:-build/bin/engine_bench}"
REFVENV="${REFVENV:-.refvenv}"
SKIP_LLAMACPP="${SKIP_LLAMACPP:-0}"

[[ -f "$MODEL" ]] || { echo "engine_bench: no model at $MODEL (run scripts/setup.sh)" >&2; exit 1; }
[[ -x "$BIN" ]] || { echo "engine_bench: no $BIN (run scripts/build.sh)" >&2; exit 1; }
if [[ "$SKIP_LLAMACPP" != 1 && ! -x "$REFVENV/bin/python" ]]; then
  echo "engine_bench: no $REFVENV (run scripts/gen_reference.sh, or SKIP_LLAMACPP=1)" >&2; exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= RUNS; r++)); do
  echo "run $r/$RUNS" >&2
  "$BIN" --model "$MODEL" --threads "$THREADS" --what pp | sed 's/^/ours /' >>"$out"
  "$BIN" --model "$MODEL" --threads "$THREADS" --what tg | sed 's/^/ours /' >>"$out"
  if [[ "$SKIP_LLAMACPP" != 1 ]]; then
    "$REFVENV/bin/python" bench/llamacpp_bench.py --model "$MODEL" --threads "$THREADS" 2>/dev/null | sed 's/^/llama.cpp /' >>"$out"
  fi
  "$BIN" --model "$MODEL" --threads "$THREADS" --what batch --seqs "$SEQS" | sed 's/^/ours /' >>"$out"
done

python3 - "$out" "$THREADS" "$RUNS" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    who, js = line.split(" ", 1)
    r = json.loads(js)
    key = r["test"] if r["test"] != "batch" else f"batch{r['seqs']}"
    if key == "tg": key = "tg128"
    rows.setdefault((who, key), []).append(r["tok_s"])
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"engine_bench: threads={sys.argv[2]} runs={sys.argv[3]} (medians, tokens/s)")
for key in ("pp512", "tg128"):
    ours, ref = med.get(("ours", key)), med.get(("llama.cpp", key))
    line = f"  {key:8s} actorserve {ours:8.1f}"
    if ref: line += f"   llama.cpp {ref:8.1f}   ratio {ours / ref:5.2f}"
    print(line)
single = med.get(("ours", "tg128"))
for k in sorted((k for k in med if k[1].startswith("batch")), key=lambda k: int(k[1][5:])):
    print(f"  {k[1]:8s} actorserve {med[k]:8.1f}   x single-sequence {med[k] / single:5.2f}")
PY
