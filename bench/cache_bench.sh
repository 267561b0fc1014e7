#!/usr/bin/env bash
# End-to-end latency over WebSocket of an exact-cache hit and a semantic-cache hit with caches of
# 10,000 and 100,000 entries, beside a cache miss (docs/cache.md, "Latency").
#
#   bench/cache_bench.sh                      # BUILD_DIR=build, N in 10000 100000
#   BUILD_DIR=build-d ENTRIES="10000" bench/cache_bench.sh
#
# For each N: cache_fill writes N entries into a temporary folder (40 real probe questions with
# their embeddings, the rest synthetic), `actorserve serve` starts on it with the shipped config
# (configs/actorserve.toml; [cache] dir pointed at the folder), and actorserve-bench sends, one
# request at a time, each over its own WebSocket connection:
#   exact      the probe questions again               -> exact hits
#   semantic   paraphrases of the probe questions      -> semantic hits
#   miss       questions in neither cache, generated   -> misses
# all with temperature 0 and the same max_tokens, which the fill used in its keys. The table gives
# P50/P99 of the time to first token and of the whole request (connect to done), nearest rank,
# over the requests of each kind that were answered as that kind ("cached" in the done event),
# and the server's own count of hits and misses for the run (/metrics), which must match.
#
# Environment:
#   BUILD_DIR        where bin/{actorserve,actorserve-bench,cache_fill} are (default: build);
#                    BUILD=1 builds them there first with scripts/build.sh
#   ENTRIES          cache sizes (default: "10000 100000")
#   HIT_REQUESTS     requests per hit kind (default: 100)
#   MISS_REQUESTS    requests of the miss kind (default: 30)
#   MAX_TOKENS       max_tokens of every request (default: 32)
#   SEMANTIC_INDEX   flat or hnsw (default: flat, as shipped)
#   EMBED_THREADS    [cache] embed_threads (default: as shipped, 1)
#   MODEL            the GGUF (default: the one in configs/actorserve.toml)
#   KEEP             1: keep the temporary folder (fills, server logs, reports)
set -euo pipefail

say() { printf 'cache-bench: %s\n' "$*"; }
die() { printf 'cache-bench: error: %s\n' "$*" >&2; exit 1; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
ENTRIES="${ENTRIES:-10000 100000}"
HIT_REQUESTS="${HIT_REQUESTS:-100}"
MISS_REQUESTS="${MISS_REQUESTS:-30}"
MAX_TOKENS="${MAX_TOKENS:-32}"
SEMANTIC_INDEX="${SEMANTIC_INDEX:-flat}"
EMBED_THREADS="${EMBED_THREADS:-$(sed -n 's/^embed_threads = \([0-9]*\).*/\1/p' configs/actorserve.toml)}"
[[ "$EMBED_THREADS" =~ ^[0-9]+$ ]] || die "EMBED_THREADS must be a number (configs/actorserve.toml has no embed_threads line?)"
MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"

if [[ "${BUILD:-0}" == 1 ]]; then
  BUILD_DIR="$BUILD_DIR" TARGETS="actorserve actorserve-bench cache_fill" scripts/build.sh
fi
BIN="${ROOT}/${BUILD_DIR}/bin"
for b in actorserve actorserve-bench cache_fill; do
  [[ -x "${BIN}/${b}" ]] || die "no ${BIN}/${b}: build it (BUILD=1 $0)"
done
[[ -f "$MODEL" ]] || die "model not found: $MODEL"
command -v curl >/dev/null || die "curl is needed"
command -v python3 >/dev/null || die "python3 is needed (for the table)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/cache-bench.XXXXXX")"
server_pid=""
cleanup() {
  local rc=$?
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ "${KEEP:-0}" == 1 ]]; then say "kept ${TMP}"; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Sums a /metrics counter over its labels, for one label value (e.g. cache="exact") or all.
metric() {
  curl -s --max-time 5 "http://127.0.0.1:${port}/metrics" |
    awk -v name="$1" -v label="${2:-}" '(index($1, name "{") == 1 || $1 == name) && (label == "" || index($1, label)) { s += $2 } END { printf "%d\n", s }'
}

start_server() { # $1: cache folder, $2: log
  local config="${TMP}/actorserve.toml" port_file="${TMP}/port"
  # The shipped settings, with: the caches in $1; room for the misses without evicting; the
  # periodic save off during the run (a save of 100,000 entries would stall lookups behind it).
  sed -e "s|^dir = \"data/cache\"|dir = \"$1\"|" \
      -e "s|^save_interval_s = [0-9]*|save_interval_s = 86400|" \
      -e "s|^max_entries = [0-9]*|max_entries = 200000|" \
      -e "s|^semantic_max_entries = [0-9]*|semantic_max_entries = 200000|" \
      -e "s|^semantic_index = \"[a-z]*\"|semantic_index = \"${SEMANTIC_INDEX}\"|" \
      -e "s|^embed_threads = [0-9]*|embed_threads = ${EMBED_THREADS}|" \
      "${ROOT}/configs/actorserve.toml" > "$config"
  grep -q "^dir = \"$1\"" "$config" || die "configs/actorserve.toml has no [cache] dir = \"data/cache\" line"
  rm -f "$port_file"
  "${BIN}/actorserve" serve --config "$config" --model "$MODEL" --host 127.0.0.1 --port 0 \
    --port-file "$port_file" >"$2" 2>&1 &
  server_pid=$!
  port=""
  local deadline=$((SECONDS + 300)) code=""
  while :; do
    kill -0 "$server_pid" 2>/dev/null || { tail -n 50 "$2" >&2; die "the server exited before it was ready"; }
    [[ -z "$port" && -s "$port_file" ]] && port="$(tr -d '[:space:]' < "$port_file")"
    if [[ -n "$port" ]]; then
      code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${port}/health" || true)"
      [[ "$code" == "200" ]] && break
    fi
    (( SECONDS < deadline )) || die "the server was not ready within 300 s"
    sleep 0.2
  done
}

stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  local deadline=$((SECONDS + 120))
  while kill -0 "$server_pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
  kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# $1 kind, $2 prompts, $3 requests, $4 N: one actorserve-bench run, with the server's counters
# before and after it written beside the report.
run_kind() {
  local out="${TMP}/n$4-$1.json" e0 s0 m0
  e0="$(metric actorserve_cache_hits_total 'cache="exact"')"
  s0="$(metric actorserve_cache_hits_total 'cache="semantic"')"
  m0="$(metric actorserve_cache_misses_total)"
  "${BIN}/actorserve-bench" --url "ws://127.0.0.1:${port}/v1/ws" --prompts "$2" --concurrency 1 \
    --requests "$3" --max-tokens "$MAX_TOKENS" --temperature 0 --repeat-fraction 0 --seed 7 \
    --out "$out" --quiet >/dev/null
  printf '{"n": %s, "kind": "%s", "exact_hits": %d, "semantic_hits": %d, "misses": %d, "report": "%s"}\n' \
    "$4" "$1" $(( $(metric actorserve_cache_hits_total 'cache="exact"') - e0 )) \
    $(( $(metric actorserve_cache_hits_total 'cache="semantic"') - s0 )) \
    $(( $(metric actorserve_cache_misses_total) - m0 )) "$out" >> "${TMP}/runs.jsonl"
}

say "$(nproc) cores; model ${MODEL}; max_tokens ${MAX_TOKENS}; semantic_index ${SEMANTIC_INDEX}; embed_threads ${EMBED_THREADS}"
for n in $ENTRIES; do
  dir="${TMP}/cache-${n}"
  say "N=${n}: filling ${dir}"
  "${BIN}/cache_fill" --entries "$n" --dir "$dir" --model "$MODEL" --max-tokens "$MAX_TOKENS" --seed 1 | sed 's/^/  /'
  t0=$SECONDS
  start_server "$dir" "${TMP}/server-${n}.log"
  say "N=${n}: server ready on port ${port} after $((SECONDS - t0)) s; $(grep -m2 -i 'entries' "${TMP}/server-${n}.log" | tr '\n' ' ')"
  # Warm-up, not measured: a few exact hits (first connections, first embedder call).
  "${BIN}/actorserve-bench" --url "ws://127.0.0.1:${port}/v1/ws" --prompts "${dir}/probes_exact.jsonl" \
    --concurrency 1 --requests 5 --max-tokens "$MAX_TOKENS" --temperature 0 --quiet >/dev/null
  run_kind exact "${dir}/probes_exact.jsonl" "$HIT_REQUESTS" "$n"
  run_kind semantic "${dir}/probes_paraphrase.jsonl" "$HIT_REQUESTS" "$n"
  run_kind miss "${dir}/fresh.jsonl" "$MISS_REQUESTS" "$n"
  stop_server
done

python3 - "${TMP}/runs.jsonl" <<'EOF'
import json, math, sys

def rank(xs, p):  # nearest rank, as actorserve-bench reports
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)] if xs else float("nan")

print()
print("| N | kind | requests | answered as kind | TTFT P50 ms | TTFT P99 ms | e2e P50 ms | e2e P99 ms | server: exact / semantic hits, misses |")
print("|---|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    recs = json.load(open(r["report"]))["runs"][0]["records"]
    ok = [x for x in recs if x["outcome"] == "ok"]
    mine = [x for x in ok if x["cached"] == (r["kind"] != "miss")]
    ttft = [x["ttft_ms"] for x in mine if x["ttft_ms"] is not None]
    e2e = [x["e2e_ms"] for x in mine]
    print(f"| {r['n']:,} | {r['kind']} | {len(recs)} | {len(mine)} | {rank(ttft, 50):.2f} | {rank(ttft, 99):.2f} | "
          f"{rank(e2e, 50):.2f} | {rank(e2e, 99):.2f} | {r['exact_hits']} / {r['semantic_hits']}, {r['misses']} |")
EOF
