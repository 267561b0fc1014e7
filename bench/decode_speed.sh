#!/usr/bin/env bash
# Decode speed: actorserve vs llama.cpp (llama-cpp-python in .refvenv/) on the
# same model, prompt, thread count and number of greedy tokens.
#
# Runs each side RUNS times, alternating, and prints the median generation
# tok/s of each and their ratio (actorserve / llama.cpp).
#
# Needs build/bin/actorserve (scripts/build.sh) and .refvenv/ (scripts/gen_reference.sh).
#
# Environment (defaults in brackets):
#   MODEL   [models/SmolLM2-135M-Instruct.Q4_1.gguf]
#   PROMPT  [Once upon a time,]
#   TOKENS  [128]   THREADS [2]   RUNS [5]
#   BIN     [build/bin/actorserve]   REFVENV [.refvenv]
#   SKIP_LLAMACPP=1  measure actorserve only
set -euo pipefail

cd "$(dirname "$0")/.."

MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
PROMPT="${PROMPT:-Once upon a time,}"
TOKENS="${TOKENS:-128}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-5}"
BIN="${BIN:-build/bin/actorserve}"
REFVENV="${REFVENV:-.refvenv}"
SKIP_LLAMACPP="${SKIP_LLAMACPP:-0}"
SKIP_ACTORSERVE="${SKIP_ACTORSERVE:-0}"

die() { printf 'decode_speed: error: %s\n' "$*" >&2; exit 1; }

[[ -f "$MODEL" ]] || die "no model at $MODEL (run scripts/setup.sh)"
if [[ "$SKIP_ACTORSERVE" != "1" ]]; then
  [[ -x "$BIN" ]] || die "no $BIN (run scripts/build.sh)"
fi
if [[ "$SKIP_LLAMACPP" != "1" ]]; then
  [[ -x "$REFVENV/bin/python" ]] || die "no $REFVENV (run scripts/gen_reference.sh, or set SKIP_LLAMACPP=1)"
fi

# Pulls Y out of "... generation: N tokens, Y tok/s" (last such line).
gen_tps() {
  sed -n 's/.*generation: *[0-9][0-9]* *tokens, *\([0-9][0-9.eE+-]*\) *tok\/s.*/\1/p' | tail -n1
}

median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

run_actorserve() {
  local log
  log="$("$BIN" generate --model "$MODEL" --prompt "$PROMPT" --max-tokens "$TOKENS" \
           --temperature 0 --threads "$THREADS" 2>&1 >/dev/null)" \
    || { printf '%s\n' "$log" >&2; die "actorserve generate failed"; }
  local v
  v="$(printf '%s\n' "$log" | gen_tps)"
  [[ -n "$v" ]] || { printf '%s\n' "$log" >&2; die "no 'generation: ... tok/s' line from actorserve"; }
  printf '%s\n' "$v"
}

run_llamacpp() {
  local log
  log="$("$REFVENV/bin/python" bench/llamacpp_decode.py --model "$MODEL" --prompt "$PROMPT" \
           --max-tokens "$TOKENS" --threads "$THREADS" 2>&1)" \
    || { printf '%s\n' "$log" >&2; die "bench/llamacpp_decode.py failed"; }
  local v
  v="$(printf '%s\n' "$log" | gen_tps)"
  [[ -n "$v" ]] || { printf '%s\n' "$log" >&2; die "no 'generation: ... tok/s' line from llama.cpp"; }
  printf '%s\n' "$v"
}

echo "decode_speed: model=$MODEL threads=$THREADS tokens=$TOKENS runs=$RUNS"
echo "decode_speed: prompt=$(printf '%q' "$PROMPT")"

ours=()
theirs=()
for ((i = 1; i <= RUNS; i++)); do
  line="run $i/$RUNS:"
  if [[ "$SKIP_ACTORSERVE" != "1" ]]; then
    v="$(run_actorserve)"; ours+=("$v"); line+="  actorserve ${v} tok/s"
  fi
  if [[ "$SKIP_LLAMACPP" != "1" ]]; then
    v="$(run_llamacpp)"; theirs+=("$v"); line+="  llama.cpp ${v} tok/s"
  fi
  echo "$line"
done

med_ours=""
med_theirs=""
if [[ ${#ours[@]} -gt 0 ]]; then
  med_ours="$(printf '%s\n' "${ours[@]}" | median)"
  echo "median actorserve: ${med_ours} tok/s"
fi
if [[ ${#theirs[@]} -gt 0 ]]; then
  med_theirs="$(printf '%s\n' "${theirs[@]}" | median)"
  echo "median llama.cpp:  ${med_theirs} tok/s"
fi
if [[ -n "$med_ours" && -n "$med_theirs" ]]; then
  awk -v a="$med_ours" -v b="$med_theirs" 'BEGIN { printf "ratio actorserve/llama.cpp: %.3f\n", a / b }'
fi
