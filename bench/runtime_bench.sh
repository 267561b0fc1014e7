#!/usr/bin/env bash
# The actor runtime against concurrency: 1, 2, 4, 8, 16 and 32 in-process clients, each asking
# one question of at most 128 tokens, all at once. Beside it, in the same run, the engine alone
# decoding the same numbers of sequences in lock-step (engine_bench --what batch): the peer that
# shows what the actors, the scheduler and uneven answer lengths cost.
# Prints medians of RUNS runs: aggregate tokens/s, its ratio to one client, and the clients'
# time to first text and gaps between text deltas (P50/P90/P99).
#
# Needs build/bin/runtime_bench and build/bin/engine_bench (scripts/build.sh).
# Environment: MODEL, THREADS [2], RUNS [5], CLIENTS [1,2,4,8,16,32], MAX_TOKENS [128].
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-5}"
CLIENTS="${CLIENTS:-1,2,4,8,16,32}"
MAX_TOKENS="${MAX_TOKENS:-128}"
BIN_DIR="${BIN_DIR:-build/bin}"

[[ -f "$MODEL" ]] || { echo "runtime_bench: no model at $MODEL (run scripts/setup.sh)" >&2; exit 1; }
for b in runtime_bench engine_bench; do
  [[ -x "$BIN_DIR/$b" ]] || { echo "runtime_bench: no $BIN_DIR/$b (run scripts/build.sh)" >&2; exit 1; }
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 1; r <= RUNS; r++)); do
  echo "run $r/$RUNS" >&2
  "$BIN_DIR/runtime_bench" --model "$MODEL" --threads "$THREADS" --clients "$CLIENTS" \
    --max-tokens "$MAX_TOKENS" | sed 's/^/runtime /' >>"$out"
  "$BIN_DIR/engine_bench" --model "$MODEL" --threads "$THREADS" --what batch --seqs "$CLIENTS" \
    --n-gen "$MAX_TOKENS" | sed 's/^/engine /' >>"$out"
done

python3 - "$out" "$THREADS" "$RUNS" "$MAX_TOKENS" <<'PY'
import json, statistics, sys
rt, eng = {}, {}
for line in open(sys.argv[1]):
    who, js = line.split(" ", 1)
    r = json.loads(js)
    if who == "runtime":
        rt.setdefault(r["clients"], []).append(r)
    else:
        eng.setdefault(r["seqs"], []).append(r["tok_s"])
med = lambda xs: statistics.median(xs)
print(f"runtime_bench: threads={sys.argv[2]} runs={sys.argv[3]} max_tokens={sys.argv[4]} (medians)")
print(f"  {'clients':>7} {'tok/s':>8} {'x 1':>6} {'engine':>8} {'of eng':>6} {'tok/req':>7}"
      f" {'ttft p50':>9} {'p90':>7} {'p99':>7} {'itl p50':>8} {'p90':>6} {'p99':>6} {'errors':>6}")
base = med([r["tok_s"] for r in rt[min(rt)]])
for n in sorted(rt):
    rs = rt[n]
    tok_s = med([r["tok_s"] for r in rs])
    e = med(eng[n]) if n in eng else float("nan")
    q = lambda k, p: med([r[k][p] for r in rs])
    print(f"  {n:>7} {tok_s:>8.1f} {tok_s / base:>6.2f} {e:>8.1f} {tok_s / e:>6.2f} "
          f"{med([r['tokens'] / n for r in rs]):>7.1f} {q('ttft_ms', 'p50'):>9.1f} {q('ttft_ms', 'p90'):>7.1f} "
          f"{q('ttft_ms', 'p99'):>7.1f} {q('itl_ms', 'p50'):>8.2f} {q('itl_ms', 'p90'):>6.2f} "
          f"{q('itl_ms', 'p99'):>6.2f} {sum(r['errors'] for r in rs):>6}")
PY
