#!/usr/bin/env bash
# A throwaway virtual environment for bench/soak.sh, outside the tracked tree: websocket-client
# (the chaos driver's WebSocket client) and matplotlib (the soak's SVG curves). Not part of the
# test command.
#
#   scripts/soak_venv.sh            # makes ${SOAK_VENV:-/tmp/actorserve-soak-venv}
set -euo pipefail
VENV="${SOAK_VENV:-/tmp/actorserve-soak-venv}"
pins=("websocket-client==1.9.2" "matplotlib==3.11.2")
stamp="$VENV/.actorserve-pins"
if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "${pins[*]}" ]]; then
  echo "soak venv: $VENV (present)"
  exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "${pins[@]}"
echo "${pins[*]}" > "$stamp"
echo "soak venv: $VENV ready"
