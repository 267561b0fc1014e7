#!/usr/bin/env bash
# The soak: the real server on the default model, with the answer caches and retrieval on, driven
# for DURATION seconds by
#   - actorserve-bench over WebSocket (closed loop, WS_CLIENTS users, a third of the prompts repeated
#     or paraphrased, so the caches hit),
#   - actorserve-bench over the OpenAI streaming API (OPENAI_CLIENTS users),
#   - bench/soak_chaos.py: cancels, drops and resumes, dropped SSE streams, RAG chats and bad
#     inputs (malformed JSON, bad UTF-8, oversized bodies, fields of the wrong type, too-long prompts),
# while every SAMPLE_S seconds the server's RSS, open descriptors, threads, retained streams and
# generated tokens are sampled. bench/soak_report.py then checks the targets (no error but the
# documented refusals, RSS growth under 5% over the last 20 minutes, no descriptor or thread
# growth) and draws RSS and throughput over time as SVG. Exit 1 when a target is missed.
#
#   bench/soak.sh                         # 30 minutes
#   DURATION=300 bench/soak.sh            # a short trial (the RSS target then spans the run's second half)
#
# Environment: DURATION [1800], SAMPLE_S [10], WS_CLIENTS [3], OPENAI_CLIENTS [3], MAX_TOKENS [32],
# CACHE_ENTRIES [2000] (each answer cache's cap),
# PORT [18080], BIN [build/bin], OUT [bench/out/soak-<time>], SOAK_VENV (scripts/soak_venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION="${DURATION:-1800}"
SAMPLE_S="${SAMPLE_S:-10}"
WS_CLIENTS="${WS_CLIENTS:-3}"
OPENAI_CLIENTS="${OPENAI_CLIENTS:-3}"
MAX_TOKENS="${MAX_TOKENS:-32}"
CACHE_ENTRIES="${CACHE_ENTRIES:-2000}"
PORT="${PORT:-18080}"
BIN="${BIN:-build/bin}"
OUT="${OUT:-bench/out/soak-$(date +%Y%m%d-%H%M%S)}"
for b in actorserve actorserve-bench; do
  [[ -x "$BIN/$b" ]] || { echo "soak: no $BIN/$b (run scripts/build.sh)" >&2; exit 1; }
done
scripts/soak_venv.sh
VENV="${SOAK_VENV:-/tmp/actorserve-soak-venv}"
mkdir -p "$OUT"
echo "soak: ${DURATION} s, results in $OUT"

# the shipped settings, on their own port, with the cache and knowledge base in $OUT, and the
# answer caches capped at CACHE_ENTRIES each: two thirds of the soak's prompts are new, so caches
# at the shipped caps (100,000 entries, 512 MiB each) would still be filling at the end, and their
# growth, bounded and meant, would hide a leak. Capped, they are full within the warm-up.
sed -e "s|^port = [0-9]*|port = ${PORT}|" \
    -e "s|^max_entries = [0-9]*|max_entries = ${CACHE_ENTRIES}|" \
    -e "s|^semantic_max_entries = [0-9]*|semantic_max_entries = ${CACHE_ENTRIES}|" \
    -e "s|^dir = \"data/cache\"|dir = \"${OUT}/cache\"|" \
    -e "s|^file = \"data/rag/knowledge.rag\"|file = \"${OUT}/knowledge.rag\"|" \
    configs/actorserve.toml > "$OUT/actorserve.toml"
max_message_bytes=$(sed -n 's/^max_message_bytes = \([0-9]*\).*/\1/p' "$OUT/actorserve.toml")
max_message_bytes="${max_message_bytes:-1048576}"
url="http://127.0.0.1:${PORT}"

"$BIN/actorserve" serve -c "$OUT/actorserve.toml" > "$OUT/server.log" 2>&1 &
pid=$!
bg=()
cleanup() {
  for p in "${bg[@]}" "$pid"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 600); do
  curl -fs "$url/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "soak: the server exited; see $OUT/server.log" >&2; exit 1; }
  sleep 0.2
done
curl -fs "$url/health" >/dev/null || { echo "soak: the server never became ready" >&2; exit 1; }

# documents for the RAG chats (the chaos driver asks about cats)
curl -fs -X POST "$url/v1/rag/documents" -H 'Content-Type: application/json' -d '{"documents": [
  {"id": "cats", "text": "Cats are small domesticated carnivores. A house cat sleeps for about fifteen hours a day.", "source": "cats.md"},
  {"id": "etna", "text": "Mount Etna is an active stratovolcano on the east coast of Sicily.", "source": "etna.md"}]}' > "$OUT/ingest.json"

metric() { # name: the first sample of a metric in /metrics, 0 when absent
  awk -v n="$1" '$1 == n || index($1, n "{") == 1 { print $2; found = 1; exit } END { if (!found) print 0 }' "$OUT/metrics.txt"
}
sample() {
  curl -fs "$url/metrics" > "$OUT/metrics.txt" 2>/dev/null || : > "$OUT/metrics.txt"
  local rss fds threads
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
  threads=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  echo "$((SECONDS - t0)),${rss},${fds},${threads},$(metric actorserve_retained_requests),$(metric actorserve_generation_tokens_total),$(metric actorserve_open_connections),$(metric actorserve_cache_hits_total)" >> "$OUT/samples.csv"
}

# distinct prompts, so that most requests generate (a third repeat or paraphrase one: cache hits)
python3 - "$OUT/prompts.jsonl" <<'PY'
import itertools, json, sys
subjects = ["rivers", "bridges", "owls", "volcanoes", "libraries", "trains", "glaciers", "markets", "lighthouses",
            "bees", "deserts", "violins", "harbours", "comets", "orchards", "castles", "coral reefs", "windmills",
            "bakeries", "caves", "tides", "maps", "kites", "forests", "clocks"]
asks = ["Write one sentence about {}.", "Give two facts about {}.", "Why do people like {}?", "Describe {} to a child.",
        "Name a famous place known for {}.", "Write a haiku about {}.", "What is surprising about {}?",
        "Explain how {} change over a year.", "List three words that go with {}.", "Tell a short joke about {}."]
with open(sys.argv[1], "w") as f:
    for n, (a, s) in enumerate(itertools.product(asks, subjects)):
        for k in range(8):
            f.write(json.dumps({"prompt": a.format(s) + ("" if k == 0 else f" (variant {k})")}) + "\n")
PY

echo "t_s,rss_kib,fds,threads,retained,generation_tokens,open_connections,cache_hits" > "$OUT/samples.csv"
t0=$SECONDS
sample
# --timeout: the run's hard limit (900 s by default) past the duration, so that the load runs for
# all of it and what is in flight at the end finishes.
"$BIN/actorserve-bench" --url "ws://127.0.0.1:${PORT}/v1/ws" --concurrency "$WS_CLIENTS" --duration "$DURATION" --timeout "$((DURATION + 300))" \
  --max-tokens "$MAX_TOKENS" --prompts "$OUT/prompts.jsonl" --repeat-fraction 0.33 --seed 1 --quiet --out "$OUT/bench_ws.json" > "$OUT/bench_ws.txt" 2>&1 &
ws_pid=$!
bg+=("$ws_pid")
"$BIN/actorserve-bench" --url "$url" --api openai --concurrency "$OPENAI_CLIENTS" --duration "$DURATION" --timeout "$((DURATION + 300))" \
  --max-tokens "$MAX_TOKENS" --prompts "$OUT/prompts.jsonl" --repeat-fraction 0.33 --seed 2 --quiet --out "$OUT/bench_openai.json" > "$OUT/bench_openai.txt" 2>&1 &
oa_pid=$!
bg+=("$oa_pid")
"$VENV/bin/python" bench/soak_chaos.py --url "$url" --duration "$DURATION" --max-message-bytes "$max_message_bytes" \
  > "$OUT/chaos.json" 2> "$OUT/chaos.err" &
chaos_pid=$!
bg+=("$chaos_pid")

while kill -0 "$ws_pid" 2>/dev/null || kill -0 "$oa_pid" 2>/dev/null || kill -0 "$chaos_pid" 2>/dev/null; do
  sleep "$SAMPLE_S"
  kill -0 "$pid" 2>/dev/null || { echo "soak: the server died; see $OUT/server.log" >&2; exit 1; }
  sample
done
rc_ws=0 rc_oa=0 rc_chaos=0
wait "$ws_pid" || rc_ws=$?
wait "$oa_pid" || rc_oa=$?
wait "$chaos_pid" || rc_chaos=$?
sleep "$SAMPLE_S"
sample # idle again: what the load left behind
echo "soak: actorserve-bench exit ${rc_ws} (WebSocket), ${rc_oa} (OpenAI); chaos exit ${rc_chaos}"

"$VENV/bin/python" bench/soak_report.py --out "$OUT" --duration "$DURATION"
