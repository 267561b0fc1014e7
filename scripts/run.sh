#!/usr/bin/env bash
# Set up (packages, model), build, and start an interactive chat in the terminal.
# Extra arguments are passed to `actorserve chat`, e.g. scripts/run.sh --temperature 0
set -euo pipefail

cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build.sh
exec build/bin/actorserve chat --model models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"
