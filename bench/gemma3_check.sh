#!/usr/bin/env bash
# The gemma3 architecture on a real file beside llama.cpp: Gemma 3 270M as Q4_K_M
# (scripts/fetch_gemma3.sh; 18 layers, heads of 256, one K/V head, a 512-token window on five
# layers of six, a 262144-token SentencePiece vocabulary).
#   perplexity  `actorserve perplexity` against scripts/ref_perplexity.py (llama-cpp-python 0.3.16,
#               the fixtures' llama.cpp) on the GPL-3 text, at contexts of 512 and 1024 tokens:
#               at 1024 the window layers see only the last 512 positions
#   greedy      the same prompt continued greedily by both, the texts compared
#   speed       bench/engine_bench.sh on the file against llama-bench (SPEED=1)
# Needs build/bin/actorserve and build/bin/engine_bench (scripts/build.sh), .refvenv
# (scripts/gen_reference.sh) and, for speed, llama-bench (scripts/build_llamacpp.sh).
# Environment: CHUNKS [4], THREADS [2], RUNS [3], SPEED [1], REFVENV [.refvenv].
set -euo pipefail
cd "$(dirname "$0")/.."

CHUNKS="${CHUNKS:-4}"
THREADS="${THREADS:-2}"
RUNS="${RUNS:-3}"
SPEED="${SPEED:-1}"
REFVENV="${REFVENV:-.refvenv}"
MODEL=models/gemma-3-270m-q4_k_m.gguf
TEXT=/usr/share/common-licenses/GPL-3
BIN=build/bin/actorserve

scripts/fetch_gemma3.sh >&2
[[ -x "$BIN" ]] || { echo "gemma3_check: no $BIN (run scripts/build.sh)" >&2; exit 1; }
[[ -x "$REFVENV/bin/python" ]] || { echo "gemma3_check: no $REFVENV (run scripts/gen_reference.sh once)" >&2; exit 1; }
lscpu | sed -n 's/^Model name: *//p' | head -1

ppl() { grep -o 'PPL = [0-9.]*' | tail -1 | cut -d' ' -f3; }
printf '%-6s %10s %10s\n' ctx ours llama.cpp
for ctx in 512 1024; do
  ours=$("$BIN" perplexity --model "$MODEL" --file "$TEXT" --ctx "$ctx" --chunks "$CHUNKS" --threads "$THREADS" 2>&1 | ppl)
  ref=$("$REFVENV/bin/python" scripts/ref_perplexity.py --model "$MODEL" --file "$TEXT" --ctx "$ctx" \
        --chunks "$CHUNKS" --threads "$THREADS" 2>/dev/null | ppl)
  printf '%-6s %10s %10s\n' "$ctx" "$ours" "$ref"
done

PROMPT="The capital of France is"
ours=$("$BIN" generate --model "$MODEL" --ctx-size 512 --temperature 0 --max-tokens 32 --threads "$THREADS" \
       --prompt "$PROMPT" 2>/dev/null)
ref=$("$REFVENV/bin/python" - "$MODEL" "$PROMPT" 2>/dev/null <<'EOF'
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=512, n_threads=2, verbose=False)
out = llm.create_completion(sys.argv[2], max_tokens=32, temperature=0.0, top_k=1)
print(out["choices"][0]["text"], end="")
EOF
)
echo "greedy, ours:      ${PROMPT}${ours}"
echo "greedy, llama.cpp: ${PROMPT}${ref}"
[[ "$ours" == "$ref" ]] && echo "greedy: same text" || echo "greedy: the texts differ"

if [[ "$SPEED" == 1 ]]; then
  MODEL="$MODEL" THREADS="$THREADS" RUNS="$RUNS" SEQS=1,16 bench/engine_bench.sh | tail -5
fi
