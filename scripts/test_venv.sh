#!/usr/bin/env bash
# Create the Python environment the network tests use: .venv-test/ with the
# official openai client and Playwright for Python, and the gguf package (with numpy) that
# writes the tiny models of tests/engine/test_arch.cpp, and jsonschema, which validates the
# structured outputs (tests/net/structured_output_test.py), at pinned versions.
#
# Playwright's own browser builds are not downloaded: the page test drives
# Debian's /usr/bin/chromium (package chromium, installed by scripts/setup.sh).
#
# Safe to run repeatedly: when .venv-test/ already holds exactly these pins it
# does nothing.
#
# Environment:
#   PYTHON   the interpreter that creates the venv (default: python3)
set -euo pipefail

cd "$(dirname "$0")/.."

VENV=".venv-test"
PINS=(
  "openai==3.51.0"
  "playwright==1.65.2"
  "gguf==0.19.0"
  "numpy==2.4.6"
  "jsonschema==4.26.0"
)
STAMP="${VENV}/.pins"
PYTHON="${PYTHON:-python3}"

say() { printf 'test-venv: %s\n' "$*"; }
die() { printf 'test-venv: error: %s\n' "$*" >&2; exit 1; }

wanted="$(printf '%s\n' "${PINS[@]}")"

if [[ -x "${VENV}/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$wanted" ]] \
   && "${VENV}/bin/python" -c 'import openai, playwright.sync_api, gguf, numpy, jsonschema' 2>/dev/null; then
  say "${VENV}: ${PINS[*]} present"
  exit 0
fi

if [[ ! -x "${VENV}/bin/python" ]] || ! "${VENV}/bin/python" -c 'import sys' 2>/dev/null; then
  command -v "$PYTHON" >/dev/null || die "no ${PYTHON} on this system (scripts/setup.sh installs python3 and python3-venv)"
  say "creating ${VENV} with $("$PYTHON" --version 2>&1)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" || die "${PYTHON} -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)"
fi

rm -f "$STAMP"
say "installing ${PINS[*]} from PyPI"
# Installing the playwright package fetches no browser (only `playwright
# install` would); the variable makes sure nothing else does either.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PINS[@]}" \
  || die "pip install of ${PINS[*]} failed"
"${VENV}/bin/python" -c 'import openai, playwright.sync_api, gguf, numpy, jsonschema' \
  || die "the installed packages do not import"
printf '%s\n' "$wanted" > "$STAMP"

if [[ ! -x /usr/bin/chromium ]]; then
  say "note: /usr/bin/chromium is missing; the web page test needs it (apt-get install chromium)"
fi
say "${VENV} ready"
