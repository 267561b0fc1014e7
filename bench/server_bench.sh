#!/usr/bin/env bash
# actorserve's server beside llama.cpp's llama-server, the same actorserve-bench run against both:
# the OpenAI streaming API, greedy answers of MAX_TOKENS tokens, answer caches off, closed loop at
# each client count of CLIENTS (each client sends its next request when its last one ends).
# The servers take turns, one at a time, RUNS times; prints medians of output tokens/s and of
# TTFT P50, and the ratios.
#
# llama-server is built from source by scripts/build_llamacpp.sh (outside the repository) and
# started with -np set to the largest client count (one slot per client, n_ctx per slot as ours),
# the same threads, and --no-repack: on the Xeon VM measured its AMX path (on by default when the
# CPU reports AMX) crashed in ggml_backend_amx_mul_mat (SIGSEGV), and llama.cpp has no repacked
# Q4_1 layout for this CPU anyway, so the flag only turns AMX off.
#
# Environment: MODEL, THREADS [2], RUNS [3], CLIENTS ["1 16"], MAX_TOKENS [64], REQUESTS_PER_CLIENT
# [4] (at least 16 requests per run), N_CTX [2048], LLAMA_SERVER, BIN [build/bin], OUT [a temp dir].
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-3}"
read -r -a clients <<< "${CLIENTS:-1 16}"
MAX_TOKENS="${MAX_TOKENS:-64}"
PER_CLIENT="${REQUESTS_PER_CLIENT:-4}"
N_CTX="${N_CTX:-2048}"
BIN="${BIN:-build/bin}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
LLAMA_SERVER="${LLAMA_SERVER:-$(scripts/build_llamacpp.sh)/llama-server}"
[[ -f "$MODEL" ]] || { echo "server_bench: no model at $MODEL (run scripts/setup.sh)" >&2; exit 1; }
for b in actorserve actorserve-bench; do
  [[ -x "$BIN/$b" ]] || { echo "server_bench: no $BIN/$b (run scripts/build.sh)" >&2; exit 1; }
done
[[ -x "$LLAMA_SERVER" ]] || { echo "server_bench: no llama-server at $LLAMA_SERVER" >&2; exit 1; }
max_clients=1
for c in "${clients[@]}"; do ((c > max_clients)) && max_clients=$c; done

# our settings: the shipped file with the answer caches and retrieval off, max_seqs >= clients
sed -e '/^\[cache\]/,/^\[/ s/^enabled = true/enabled = false/' \
    -e '/^\[rag\]/,/^\[/ s/^enabled = true/enabled = false/' \
    -e "s/^max_seqs = [0-9]*/max_seqs = $((max_clients > 16 ? max_clients : 16))/" \
    configs/actorserve.toml > "$OUT/actorserve.toml"

pid=""
stop() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=""; }
trap stop EXIT
wait_ready() { # url
  for _ in $(seq 1 600); do
    curl -fs "$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "server_bench: the server exited; see $OUT/*.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "server_bench: $1 not ready after 60 s" >&2; exit 1
}
start_ours() {
  rm -f "$OUT/port"
  "$BIN/actorserve" serve --config "$OUT/actorserve.toml" --model "$MODEL" --port 0 --port-file "$OUT/port" \
    --threads "$THREADS" --ctx-size "$N_CTX" --log-level warn >"$OUT/actorserve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [[ -s "$OUT/port" ]] && break; sleep 0.1; done
  url="http://127.0.0.1:$(cat "$OUT/port")"
  wait_ready "$url"
}
start_llama() {
  local port=$((20000 + RANDOM % 20000))
  "$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$port" -t "$THREADS" -np "$max_clients" \
    -c $((N_CTX * max_clients)) --no-repack --no-webui >"$OUT/llama-server.log" 2>&1 &
  pid=$!
  url="http://127.0.0.1:$port"
  wait_ready "$url"
}

for ((r = 1; r <= RUNS; r++)); do
  for who in actorserve llama-server; do
    if [[ $who == actorserve ]]; then start_ours; else start_llama; fi
    for c in "${clients[@]}"; do
      n=$((c * PER_CLIENT)); ((n < 16)) && n=16
      "$BIN/actorserve-bench" --url "$url" --api openai --concurrency "$c" --requests "$n" \
        --max-tokens "$MAX_TOKENS" --temperature 0 --quiet --out "$OUT/$who-c$c-r$r.json" >/dev/null
    done
    stop
  done
done

python3 - "$OUT" "$RUNS" "$THREADS" "$MAX_TOKENS" "${clients[@]}" <<'PY'
import json, statistics, sys
out, runs, threads, max_tokens, clients = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def summ(who, c, r):
    j = json.load(open(f"{out}/{who}-c{c}-r{r}.json"))
    s = j["runs"][0]["summary"] if "runs" in j else j["summary"]
    return s
med = {}
for who in ("actorserve", "llama-server"):
    for c in clients:
        ss = [summ(who, c, r) for r in range(1, runs + 1)]
        bad = sum(s["requests"] - s["ok"] for s in ss)
        med[who, c] = (statistics.median(s["output_tok_per_s"] for s in ss),
                       statistics.median(s["ttft_ms"]["p50"] for s in ss), bad)
print(f"server_bench: threads={threads} max_tokens={max_tokens} runs={runs} (medians; results in {out})")
print(f"  {'clients':>7} {'actorserve tok/s':>17} {'llama-server tok/s':>19} {'ratio':>6}"
      f" {'TTFT P50 ms (ours)':>19} {'(llama-server)':>15} {'not ok':>7}")
for c in clients:
    a, l = med["actorserve", c], med["llama-server", c]
    print(f"  {c:>7} {a[0]:>17.1f} {l[0]:>19.1f} {a[0] / l[0]:>6.2f} {a[1]:>19.0f} {l[1]:>15.0f} {a[2] + l[2]:>7}")
if len(clients) > 1:
    lo, hi = clients[0], clients[-1]
    for who in ("actorserve", "llama-server"):
        print(f"  {who}: {hi} / {lo} clients = {med[who, hi][0] / med[who, lo][0]:.2f}x")
PY
