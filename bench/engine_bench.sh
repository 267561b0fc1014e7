#!/usr/bin/env bash
# Engine throughput beside llama.cpp, same model, threads and workloads, alternating runs:
#   pp512  prompt processing of a 512-token prompt (tokens/s)
#   tg128  generation of 128 tokens (tokens/s; ours after an 8-token prompt, llama-bench's from
#          an empty context)
#   batch  aggregate generation with 1, 4, 8, 16, 32 sequences decoding together (ours only)
# Prints the median of RUNS runs of each and the ratios.
#
# The peer is llama.cpp's own llama-bench, built from source for this CPU by
# scripts/build_llamacpp.sh (outside the repository; the script prints where). PEER=python
# measures llama-cpp-python from .refvenv/ instead (scripts/gen_reference.sh), as before
# 2026-12-02.
#
# ISAS="avx2 avx512vnni" measures ours once per kernel level in every run (ACTORSERVE_SIMD,
# see docs/engine.md; a level above the CPU's runs as the CPU's, and the table says which
# ran), so the levels are compared on the same machine state; the default is the CPU's own.
# BASE_BIN=path/to/an/earlier/engine_bench adds that build to every run, as "before", so a
# change is measured against the code it replaces on the same machine state.
#
# Needs build/bin/engine_bench (scripts/build.sh).
# Environment: MODEL, THREADS [2], RUNS [5], SEQS [1,4,8,16,32], ISAS [""], BASE_BIN [""],
# PEER [llama-bench|python|none], LLAMA_BENCH [from scripts/build_llamacpp.sh], BIN, REFVENV.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-5}"
SEQS="${SEQS:-1,4,8,16,32}"
BIN="${BIN:-build/bin/engine_bench}"
BASE_BIN="${BASE_BIN:-}"
REFVENV="${REFVENV:-.refvenv}"
PEER="${PEER:-llama-bench}"
read -r -a isas <<< "${ISAS:-default}"

[[ -f "$MODEL" ]] || { echo "engine_bench: no model at $MODEL (run scripts/setup.sh)" >&2; exit 1; }
[[ -x "$BIN" ]] || { echo "engine_bench: no $BIN (run scripts/build.sh)" >&2; exit 1; }
[[ -z "$BASE_BIN" || -x "$BASE_BIN" ]] || { echo "engine_bench: BASE_BIN $BASE_BIN is not a program" >&2; exit 1; }
case "$PEER" in
  llama-bench)
    LLAMA_BENCH="${LLAMA_BENCH:-$(scripts/build_llamacpp.sh)/llama-bench}"
    [[ -x "$LLAMA_BENCH" ]] || { echo "engine_bench: no llama-bench at $LLAMA_BENCH" >&2; exit 1; } ;;
  python)
    [[ -x "$REFVENV/bin/python" ]] || { echo "engine_bench: no $REFVENV (run scripts/gen_reference.sh)" >&2; exit 1; } ;;
  none) ;;
  *) echo "engine_bench: PEER must be llama-bench, python or none" >&2; exit 1 ;;
esac

# llama-bench's JSON (one object per test) -> our JSON lines.
# --repack 0: on the Xeon VM measured llama.cpp's AMX path (on by default where the CPU reports
# AMX) crashed in ggml_backend_amx_mul_mat (SIGSEGV); llama.cpp has no repacked Q4_1 layout for
# this CPU, so the flag turns AMX off and nothing else.
peer_llama_bench() {
  "$LLAMA_BENCH" -m "$MODEL" -t "$THREADS" -p 512 -n 128 -r 1 --repack 0 -o json 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    name = "pp%d" % t["n_prompt"] if t["n_prompt"] else "tg"
    print(json.dumps({"test": name, "tok_s": t["avg_ts"]}))'
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# ours at one kernel level ("default": whatever the CPU gives)
ours() {
  local isa="$1"; shift
  if [[ "$isa" == default ]]; then "$BIN" "$@"; else ACTORSERVE_SIMD="$isa" "$BIN" "$@"; fi
}
for ((r = 1; r <= RUNS; r++)); do
  echo "run $r/$RUNS" >&2
  for isa in "${isas[@]}"; do
    ours "$isa" --model "$MODEL" --threads "$THREADS" --what pp | sed 's/^/ours /' >>"$out"
    ours "$isa" --model "$MODEL" --threads "$THREADS" --what tg | sed 's/^/ours /' >>"$out"
  done
  if [[ -n "$BASE_BIN" ]]; then
    "$BASE_BIN" --model "$MODEL" --threads "$THREADS" --what pp | sed 's/^/before /' >>"$out"
    "$BASE_BIN" --model "$MODEL" --threads "$THREADS" --what tg | sed 's/^/before /' >>"$out"
  fi
  case "$PEER" in
    llama-bench) peer_llama_bench | sed 's/^/llama.cpp /' >>"$out" ;;
    python) "$REFVENV/bin/python" bench/llamacpp_bench.py --model "$MODEL" --threads "$THREADS" 2>/dev/null | sed 's/^/llama.cpp /' >>"$out" ;;
  esac
  for isa in "${isas[@]}"; do
    ours "$isa" --model "$MODEL" --threads "$THREADS" --what batch --seqs "$SEQS" | sed 's/^/ours /' >>"$out"
  done
  if [[ -n "$BASE_BIN" ]]; then
    "$BASE_BIN" --model "$MODEL" --threads "$THREADS" --what batch --seqs "$SEQS" | sed 's/^/before /' >>"$out"
  fi
done

python3 - "$out" "$THREADS" "$RUNS" "$PEER" <<'PY'
import json, statistics, sys
rows, isas = {}, []
for line in open(sys.argv[1]):
    who, js = line.split(" ", 1)
    r = json.loads(js)
    if who in ("ours", "before"):
        who = f"actorserve[{r['isa']}]" if who == "ours" else f"before[{r['isa']}]"
        if who not in isas: isas.append(who)
    key = r["test"] if r["test"] != "batch" else f"batch{r['seqs']}"
    if key == "tg": key = "tg128"
    rows.setdefault((who, key), []).append(r["tok_s"])
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"engine_bench: threads={sys.argv[2]} runs={sys.argv[3]} peer={sys.argv[4]} (medians, tokens/s)")
for key in ("pp512", "tg128"):
    ref = med.get(("llama.cpp", key))
    for who in isas:
        if (who, key) not in med: continue
        ours = med[(who, key)]
        line = f"  {key:8s} {who:24s} {ours:8.1f}"
        if ref: line += f"   llama.cpp {ref:8.1f}   ratio {ours / ref:5.2f}"
        if who != isas[0]: line += f"   x {isas[0]} {ours / med[(isas[0], key)]:5.2f}"
        print(line)
for who in isas:
    single = med.get((who, "tg128"))
    for k in sorted((k for k in med if k[0] == who and k[1].startswith("batch")), key=lambda k: int(k[1][5:])):
        line = f"  {k[1]:8s} {who:24s} {med[k]:8.1f}   x single-sequence {med[k] / single:5.2f}"
        if who != isas[0]: line += f"   x {isas[0]} {med[k] / med[(isas[0], k[1])]:5.2f}"
        print(line)
PY
