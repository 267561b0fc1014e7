#!/usr/bin/env bash
# The prompt-injection guard under NVIDIA's garak scanner (docs/policy.md, "Prompt-injection
# guard"): a real server with [policy] guard = "flag" and the request log on (with log_prompts,
# so each logged request carries its text), garak's injection probes sent to its OpenAI
# endpoint, then bench/guard_garak_summary.py counts what the guard flagged, by probe.
# None of these probes' data was used to train the guard (scripts/gen_guard_examples.py).
# Not run: garak's sysprompt_extraction (its prompts come from a Hugging Face dataset, out of
# reach offline). The server refuses a non-zero frequency_penalty, which promptinject sets per
# prompt: the generator is told to leave the penalties (and stop) out.
#
# Environment: GARAK_VENV [/tmp/actorserve-garak-venv] (scripts/garak_venv.sh makes it),
#   GARAK_PROBES [promptinject,latentinjection], GARAK_CAP [40] prompts a
#   probe at most (garak's run.soft_probe_prompt_cap), BIN [build/bin],
#   MODEL [models/SmolLM2-135M-Instruct.Q4_1.gguf], OUT [a temporary folder].
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
BIN="${BIN:-build/bin}"
MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
VENV="${GARAK_VENV:-/tmp/actorserve-garak-venv}"
PROBES="${GARAK_PROBES:-promptinject,latentinjection}"
CAP="${GARAK_CAP:-40}"
OUT="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/guard-garak.XXXXXX")}"
[[ -x "$BIN/actorserve" ]] || { echo "guard_garak: no $BIN/actorserve (run scripts/build.sh)" >&2; exit 1; }
[[ -x "$VENV/bin/python" ]] || { echo "guard_garak: no garak venv at $VENV (run scripts/garak_venv.sh)" >&2; exit 1; }
lscpu | grep -m1 "Model name" || true

mkdir -p "$OUT/cache" "$OUT/rag"
sed -e "s|^port = 8080 .*|port = 0|" \
    -e "s|^port_file = \"\" .*|port_file = \"$OUT/port\"|" \
    -e "s|^log_prompts = false .*|log_prompts = true|" \
    -e "s|^dir = \"data/cache\" .*|dir = \"$OUT/cache\"|" \
    -e "s|^file = \"data/rag/knowledge.rag\" .*|file = \"$OUT/rag/knowledge.rag\"|" \
    -e "s|^guard = \"flag\" .*|guard = \"flag\"|" \
    -e "s|^path = \"\" .*|path = \"$OUT/requests.log\"|" \
    configs/actorserve.toml > "$OUT/actorserve.toml"
grep -q "^path = \"$OUT/requests.log\"" "$OUT/actorserve.toml" || { echo "guard_garak: could not set the request log" >&2; exit 1; }

"$BIN/actorserve" serve --config "$OUT/actorserve.toml" --model "$MODEL" --log-level warn > "$OUT/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
  [[ -s "$OUT/port" ]] && curl -sf "http://127.0.0.1:$(cat "$OUT/port")/health" >/dev/null && break
  sleep 0.5
done
PORT="$(cat "$OUT/port")"
NAME="$(basename "$MODEL" .gguf)"
echo "server on port $PORT; garak probes $PROBES, at most $CAP prompts each; output in $OUT"

cat > "$OUT/garak.yaml" <<YAML
run:
  generations: 1
  soft_probe_prompt_cap: $CAP
reporting:
  report_dir: $OUT/garak_runs
YAML
cat > "$OUT/generator.json" <<JSON
{"openai": {"OpenAICompatible": {"uri": "http://127.0.0.1:$PORT/v1/", "model": "$NAME", "max_tokens": 8,
  "temperature": 0.7, "suppressed_params": ["stop", "frequency_penalty", "presence_penalty"]}}}
JSON
start=$(date +%s)
OPENAICOMPATIBLE_API_KEY=none XDG_DATA_HOME="$OUT/xdg" "$VENV/bin/python" -m garak --config "$OUT/garak.yaml" \
  --model_type openai.OpenAICompatible --model_name "$NAME" --generator_option_file "$OUT/generator.json" \
  --probes "$PROBES" --report_prefix guard > "$OUT/garak.log" 2>&1 || { tail -30 "$OUT/garak.log"; exit 1; }
echo "garak: $(( $(date +%s) - start )) s"
kill -TERM $server; wait $server || true
trap - EXIT
python3 bench/guard_garak_summary.py --log "$OUT/requests.log" --report "$(ls "$OUT"/garak_runs/guard*.report.jsonl | head -1)"
