#!/usr/bin/env bash
# Set up (packages, model), build, and start the server on the default model:
#   web chat page  http://127.0.0.1:8080/
#   WebSocket      ws://127.0.0.1:8080/v1/ws          (docs/protocol.md)
#   OpenAI API     http://127.0.0.1:8080/v1/chat/completions
# Extra arguments go to `actorserve serve`, e.g. scripts/run.sh --port 9000. Ctrl-C stops it.
set -euo pipefail

cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build.sh
exec build/bin/actorserve serve --config configs/actorserve.toml "$@"
