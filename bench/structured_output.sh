#!/usr/bin/env bash
# Structured output at scale and its cost (docs/benchmarks.md, "Structured output"):
#   1. the token mask's cost per decoding step beside feeding every token to the matcher
#      (build/bin/mask_bench), and
#   2. STRUCTURED_N (1000) random schemas answered by a real server, each whole answer validated
#      with Python's jsonschema (tests/net/structured_output_test.py, which ctest runs with 100).
# Environment: STRUCTURED_N [1000], BIN [build/bin], MODEL [models/SmolLM2-135M-Instruct.Q4_1.gguf].
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${BIN:-build/bin}"
MODEL="${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
for b in actorserve mask_bench; do
  [[ -x "$BIN/$b" ]] || { echo "structured_output: no $BIN/$b (run scripts/build.sh)" >&2; exit 1; }
done
[[ -x .venv-test/bin/python ]] || { echo "structured_output: no .venv-test (run scripts/test_venv.sh)" >&2; exit 1; }

lscpu | grep -m1 "Model name" || true
"$BIN/mask_bench" --model "$MODEL"
STRUCTURED_N="${STRUCTURED_N:-1000}" tests/net/run_server_test.sh "$BIN/actorserve" "$MODEL" tests/net/structured_output_test.py
