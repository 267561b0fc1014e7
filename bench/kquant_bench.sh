#!/usr/bin/env bash
# K-quant files of the default model beside llama.cpp: quality (perplexity, ours and llama.cpp's
# on the same file and text) and speed (bench/engine_bench.sh against llama-bench).
#
# The files are made from the default model by llama.cpp's own llama-quantize (built with the
# peers by scripts/build_llamacpp.sh, outside the repository) with --allow-requantize, since the
# default model ships as Q4_1. SmolLM2-135M's rows of 576 are not a multiple of 256, so
# llama-quantize falls back to Q5_0 (Q4_K_M), Q5_1 (Q5_K_M) or Q8_0 (Q6_K) for those matrices and
# keeps K-quants for the rows of 1536 (ffn_down) and the embedding: every format the engine
# reads appears in the three files.
#
# Perplexity: `actorserve perplexity` against scripts/ref_perplexity.py (llama-cpp-python 0.3.16,
# the fixtures' llama.cpp; needs .refvenv from scripts/gen_reference.sh), both on the GPL-3 text,
# 512-token chunks.
#
# Environment: TYPES ["Q4_K_M Q5_K_M Q6_K"], CHUNKS [8], THREADS [2], RUNS [3] (speed),
# SPEED [1] (0: quality only), OUT [$HOME/.cache/actorserve/kquants], REFVENV [.refvenv].
set -euo pipefail
cd "$(dirname "$0")/.."

TYPES="${TYPES:-Q4_K_M Q5_K_M Q6_K}"
CHUNKS="${CHUNKS:-8}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-3}"
SPEED="${SPEED:-1}"
OUT="${OUT:-$HOME/.cache/actorserve/kquants}"
REFVENV="${REFVENV:-.refvenv}"
SRC=models/SmolLM2-135M-Instruct.Q4_1.gguf
TEXT=/usr/share/common-licenses/GPL-3
BIN=build/bin/actorserve

[[ -f "$SRC" ]] || { echo "kquant_bench: no $SRC (run scripts/setup.sh)" >&2; exit 1; }
[[ -x "$BIN" ]] || { echo "kquant_bench: no $BIN (run scripts/build.sh)" >&2; exit 1; }
[[ -x "$REFVENV/bin/python" ]] || { echo "kquant_bench: no $REFVENV (run scripts/gen_reference.sh once)" >&2; exit 1; }
LLAMA_BIN="$(scripts/build_llamacpp.sh)"
mkdir -p "$OUT"
lscpu | sed -n 's/^Model name: *//p' | head -1

ppl() { grep -o 'PPL = [0-9.]*' | tail -1 | cut -d' ' -f3; }
printf '%-8s %10s %10s %8s\n' type ours llama.cpp diff%
for t in $TYPES; do
  f="$OUT/SmolLM2-135M-Instruct.$t.gguf"
  [[ -f "$f" ]] || "$LLAMA_BIN/llama-quantize" --allow-requantize "$SRC" "$f" "$t" >/dev/null 2>&1
  ours=$("$BIN" perplexity --model "$f" --file "$TEXT" --ctx 512 --chunks "$CHUNKS" --threads "$THREADS" 2>&1 | ppl)
  ref=$("$REFVENV/bin/python" scripts/ref_perplexity.py --model "$f" --file "$TEXT" --ctx 512 --chunks "$CHUNKS" \
        --threads "$THREADS" 2>/dev/null | ppl)
  printf '%-8s %10s %10s %8s\n' "$t" "$ours" "$ref" "$(python3 -c "print(f'{100 * ($ours - $ref) / $ref:+.3f}')")"
done

if [[ "$SPEED" == 1 ]]; then
  for t in $TYPES; do
    echo "== speed: $t"
    MODEL="$OUT/SmolLM2-135M-Instruct.$t.gguf" THREADS="$THREADS" RUNS="$RUNS" SEQS=1,16 bench/engine_bench.sh | tail -4
  done
fi
