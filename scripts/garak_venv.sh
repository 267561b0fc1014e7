#!/usr/bin/env bash
# A throwaway virtual environment with NVIDIA's garak scanner (PyPI garak 0.17.1), outside the
# tracked tree, for bench/guard_garak.sh. It pulls torch and transformers: about 6.5 GB and a
# few minutes. Not part of the test command.
#
#   scripts/garak_venv.sh            # makes ${GARAK_VENV:-/tmp/actorserve-garak-venv}
set -euo pipefail
VENV="${GARAK_VENV:-/tmp/actorserve-garak-venv}"
if [[ -x "$VENV/bin/garak" ]] && "$VENV/bin/python" -m garak --version >/dev/null 2>&1; then
  echo "garak venv: $VENV (present)"
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "garak==0.17.1"
"$VENV/bin/python" -m garak --version | head -1
