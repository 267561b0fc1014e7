#!/usr/bin/env bash
# Weight formats side by side: for each --weights format, the perplexity over a text, the
# memory the weights take, the process's peak resident memory and the decode speed; and
# llama.cpp's perplexity on the native file beside ours. Prints a markdown table
# (docs/quantization.md holds one) and, above it, every command it ran.
#
#   perplexity   actorserve perplexity --ctx CTX [--chunks CHUNKS] --threads THREADS
#   weight MiB   "weight memory" of actorserve info (converted + used in place in the file)
#   max RSS      /usr/bin/time -v "Maximum resident set size" of the decode runs (median)
#   decode       actorserve generate, TOKENS greedy tokens, THREADS threads, median of RUNS
#
# Needs build/bin/actorserve (scripts/build.sh), /usr/bin/time, and for the llama.cpp
# figure .refvenv/ (scripts/gen_reference.sh).
#
# Environment (defaults in brackets):
#   MODEL   [models/SmolLM2-135M-Instruct.Q4_1.gguf]   TEXT [/usr/share/common-licenses/GPL-3]
#   CTX     [512]   CHUNKS [all]   THREADS [2]   RUNS [3]   TOKENS [128]
#   PROMPT  [Once upon a time,]   FORMATS [native f32 f16 q8_0 q4_0 q4_1]
#   BIN     [build/bin/actorserve]   REFVENV [.refvenv]
#   SKIP_LLAMACPP=1  leave out llama.cpp's perplexity
set -euo pipefail

cd "$(dirname "$0")/.."

MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
TEXT="${TEXT:-/usr/share/common-licenses/GPL-3}"
CTX="${CTX:-512}"
CHUNKS="${CHUNKS:-}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-3}"
TOKENS="${TOKENS:-128}"
PROMPT="${PROMPT:-Once upon a time,}"
FORMATS="${FORMATS:-native f32 f16 q8_0 q4_0 q4_1}"
BIN="${BIN:-build/bin/actorserve}"
REFVENV="${REFVENV:-.refvenv}"
SKIP_LLAMACPP="${SKIP_LLAMACPP:-0}"

die() { printf 'quantization: error: %s\n' "$*" >&2; exit 1; }

[[ -f "$MODEL" ]] || die "no model at $MODEL (run scripts/setup.sh)"
[[ -f "$TEXT" ]] || die "no text at $TEXT"
[[ -x "$BIN" ]] || die "no $BIN (run scripts/build.sh)"
[[ -x /usr/bin/time ]] || die "no /usr/bin/time (apt-get install time)"
if [[ "$SKIP_LLAMACPP" != "1" ]]; then
  [[ -x "$REFVENV/bin/python" ]] || die "no $REFVENV (run scripts/gen_reference.sh, or set SKIP_LLAMACPP=1)"
fi

chunk_args=()
[[ -n "$CHUNKS" ]] && chunk_args=(--chunks "$CHUNKS")

median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Prints a command as it is about to run (to stderr, so the table on stdout stays clean).
show() { printf '$ %s\n' "$(printf '%q ' "$@")" >&2; }

# "Final estimate: PPL = X +/- Y" -> "X +/- Y"
ppl_of() { sed -n 's/^Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 ± \2/p' | tail -n1; }

rows=()
for w in $FORMATS; do
  echo "quantization: --weights $w" >&2

  show "$BIN" info --model "$MODEL" --weights "$w"
  info="$("$BIN" info --model "$MODEL" --weights "$w")" || die "actorserve info --weights $w failed"
  mb="$(printf '%s\n' "$info" | sed -n 's/^weight memory: *\([0-9.]*\) MB.*/\1/p')"
  [[ -n "$mb" ]] || die "no 'weight memory' line from actorserve info"
  mib="$(awk -v m="$mb" 'BEGIN { printf "%.1f", m * 1e6 / 1048576 }')"

  ppl_cmd=("$BIN" perplexity --model "$MODEL" --weights "$w" --file "$TEXT" --ctx "$CTX" --threads "$THREADS" "${chunk_args[@]}")
  show "${ppl_cmd[@]}"
  out="$("${ppl_cmd[@]}" 2>&1)" || { printf '%s\n' "$out" >&2; die "perplexity failed"; }
  ppl="$(printf '%s\n' "$out" | ppl_of)"
  ppl_tps="$(printf '%s\n' "$out" | sed -n 's/^perplexity: .* \([0-9.]*\) tok\/s$/\1/p' | tail -n1)"
  chunks_done="$(printf '%s\n' "$out" | sed -n 's/^perplexity: \([0-9]*\) chunks, .*/\1/p' | tail -n1)"
  [[ -n "$ppl" ]] || { printf '%s\n' "$out" >&2; die "no 'Final estimate' from actorserve perplexity"; }

  speeds=()
  rss=()
  gen_cmd=(/usr/bin/time -v "$BIN" generate --model "$MODEL" --weights "$w" --prompt "$PROMPT"
           --max-tokens "$TOKENS" --temperature 0 --threads "$THREADS")
  show "${gen_cmd[@]}"
  for ((i = 1; i <= RUNS; i++)); do
    log="$("${gen_cmd[@]}" 2>&1 >/dev/null)" || { printf '%s\n' "$log" >&2; die "actorserve generate failed"; }
    speeds+=("$(printf '%s\n' "$log" | sed -n 's/.*generation: *[0-9]* *tokens, *\([0-9.]*\) *tok\/s.*/\1/p' | tail -n1)")
    rss+=("$(printf '%s\n' "$log" | sed -n 's/.*Maximum resident set size (kbytes): *\([0-9]*\).*/\1/p')")
  done
  tps="$(printf '%s\n' "${speeds[@]}" | median)"
  rss_mib="$(printf '%s\n' "${rss[@]}" | median | awk '{ printf "%.1f", $1 / 1024 }')"
  echo "quantization: $w: PPL $ppl ($chunks_done chunks), weights $mib MiB, max RSS $rss_mib MiB, decode $tps tok/s (${speeds[*]})" >&2
  rows+=("| $w | $ppl | $mib | $rss_mib | $tps | $ppl_tps |")
done

ref=""
if [[ "$SKIP_LLAMACPP" != "1" ]]; then
  ref_cmd=("$REFVENV/bin/python" scripts/ref_perplexity.py --model "$MODEL" --file "$TEXT" --ctx "$CTX"
           --threads "$THREADS" "${chunk_args[@]}")
  show "${ref_cmd[@]}"
  out="$("${ref_cmd[@]}" 2>&1)" || { printf '%s\n' "$out" >&2; die "ref_perplexity.py failed"; }
  ref="$(printf '%s\n' "$out" | ppl_of)"
  [[ -n "$ref" ]] || { printf '%s\n' "$out" >&2; die "no 'Final estimate' from ref_perplexity.py"; }
fi

echo "model $MODEL, text $TEXT, ctx $CTX, chunks ${CHUNKS:-all}, $THREADS threads, decode: $TOKENS tokens, median of $RUNS"
echo
echo "| --weights | perplexity | weight memory (MiB) | max RSS (MiB) | decode (tok/s) | perplexity eval (tok/s) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [[ -n "$ref" ]]; then
  echo
  echo "llama.cpp (llama-cpp-python, native file): PPL $ref"
fi
