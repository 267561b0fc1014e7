#!/usr/bin/env bash
# Run a Python test against a real `actorserve serve` process.
#
#   tests/net/run_server_test.sh SERVER_BIN MODEL TEST_SCRIPT [extra serve args...]
#
# Starts SERVER_BIN serve with configs/actorserve.toml (its caches and knowledge base kept in a
# temporary folder)
# on 127.0.0.1 with an ephemeral port (it writes the
# port it bound to a port file), waits until GET /health answers 200, runs
# TEST_SCRIPT with the Python of .venv-test/ (scripts/test_venv.sh makes it)
# and the environment
#
#   ACTORSERVE_URL        http://127.0.0.1:<port>
#   ACTORSERVE_BUILD_DIR  the build directory (two levels above SERVER_BIN),
#                         where tests leave screenshots and the like
#
# then stops the server with SIGTERM and requires it to exit with status 0
# within 60 s (a sanitizer report makes it exit non-zero). Fails when the test
# fails or the server does not stop cleanly; the server's output is printed on
# any failure. The server is killed on every way out.
#
# Environment:
#   ACTORSERVE_START_TIMEOUT   seconds to wait for /health (default 120)
#   ACTORSERVE_STOP_TIMEOUT    seconds to wait for the exit after SIGTERM (default 60)
#   ACTORSERVE_TEST_PYTHON     the interpreter for TEST_SCRIPT (default .venv-test/bin/python)
set -euo pipefail

say() { printf 'run-server-test: %s\n' "$*"; }
die() { printf 'run-server-test: error: %s\n' "$*" >&2; exit 1; }

[[ $# -ge 3 ]] || die "usage: $0 SERVER_BIN MODEL TEST_SCRIPT [extra serve args...]"

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }

[[ -x "$1" ]] || die "server binary not found or not executable: $1"
[[ -f "$2" ]] || die "model not found: $2"
[[ -f "$3" ]] || die "test script not found: $3"
SERVER_BIN="$(abspath "$1")"
MODEL="$(abspath "$2")"
TEST_SCRIPT="$(abspath "$3")"
shift 3
BUILD_DIR="$(cd "$(dirname "$SERVER_BIN")/.." && pwd)"

PY="${ACTORSERVE_TEST_PYTHON:-${ROOT}/.venv-test/bin/python}"
[[ -x "$PY" ]] || die "no ${PY}: run scripts/test_venv.sh first"
command -v curl >/dev/null || die "curl is needed (scripts/setup.sh installs it)"

START_TIMEOUT="${ACTORSERVE_START_TIMEOUT:-120}"
STOP_TIMEOUT="${ACTORSERVE_STOP_TIMEOUT:-60}"
TEST_NAME="$(basename "$TEST_SCRIPT")"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/actorserve-test.XXXXXX")"
PORT_FILE="${TMP}/port"
LOG="${TMP}/server.log"
server_pid=""

show_log() {
  if [[ -s "$LOG" ]]; then
    say "server output (last 200 lines of ${LOG}):"
    tail -n 200 "$LOG" | sed 's/^/  | /'
  fi
}

cleanup() {
  local rc=$?
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    say "killing the server (pid ${server_pid})"
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 ]]; then show_log; fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The shipped settings, with the answer caches and the knowledge base kept in this run's
# temporary folder: a test never sees answers cached, or documents ingested, by an earlier run.
CONFIG="${TMP}/actorserve.toml"
sed -e "s|^dir = \"data/cache\"|dir = \"${TMP}/cache\"|" \
    -e "s|^file = \"data/rag/knowledge.rag\"|file = \"${TMP}/rag/knowledge.rag\"|" \
    "${ROOT}/configs/actorserve.toml" > "$CONFIG"
grep -q "^dir = \"${TMP}/cache\"" "$CONFIG" || die "configs/actorserve.toml has no [cache] dir = \"data/cache\" line to redirect"
grep -q "^file = \"${TMP}/rag/knowledge.rag\"" "$CONFIG" ||
  die "configs/actorserve.toml has no [rag] file = \"data/rag/knowledge.rag\" line to redirect"

say "starting ${SERVER_BIN} serve --config ${CONFIG} --model ${MODEL} $*"
(cd "$ROOT" && exec "$SERVER_BIN" serve --config "$CONFIG" --model "$MODEL" --host 127.0.0.1 --port 0 \
   --port-file "$PORT_FILE" "$@") >"$LOG" 2>&1 &
server_pid=$!

# Wait for the port file, then for /health to answer 200.
port=""
deadline=$((SECONDS + START_TIMEOUT))
while :; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    rc=0; wait "$server_pid" || rc=$?
    server_pid=""
    die "the server exited with status ${rc} before it was ready"
  fi
  if [[ -z "$port" && -s "$PORT_FILE" ]]; then
    candidate="$(tr -d '[:space:]' < "$PORT_FILE")"
    if [[ "$candidate" =~ ^[0-9]+$ ]] && (( candidate > 0 && candidate < 65536 )); then
      port="$candidate"
    fi
  fi
  if [[ -n "$port" ]]; then
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${port}/health" || true)"
    [[ "$code" == "200" ]] && break
  fi
  (( SECONDS < deadline )) || die "the server was not ready within ${START_TIMEOUT} s (port: ${port:-none}, last /health status: ${code:-none})"
  sleep 0.2
done
URL="http://127.0.0.1:${port}"
say "server ready at ${URL} (pid ${server_pid})"

say "running ${TEST_NAME}"
test_rc=0
ACTORSERVE_URL="$URL" ACTORSERVE_BUILD_DIR="$BUILD_DIR" PYTHONUNBUFFERED=1 \
  "$PY" "$TEST_SCRIPT" || test_rc=$?
if [[ $test_rc -ne 0 ]]; then
  say "${TEST_NAME} failed (exit status ${test_rc})"
fi

# Stop the server and require a clean exit.
say "stopping the server (SIGTERM)"
kill -TERM "$server_pid" 2>/dev/null || true
deadline=$((SECONDS + STOP_TIMEOUT))
while kill -0 "$server_pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
if kill -0 "$server_pid" 2>/dev/null; then
  say "the server did not exit within ${STOP_TIMEOUT} s of SIGTERM"
  exit 1    # cleanup kills it and prints its output
fi
server_rc=0
wait "$server_pid" || server_rc=$?
server_pid=""
if [[ $server_rc -ne 0 ]]; then
  say "the server exited with status ${server_rc} after SIGTERM (expected 0)"
  exit 1
fi
say "server exited with status 0"

if [[ $test_rc -ne 0 ]]; then exit "$test_rc"; fi
say "${TEST_NAME}: passed"
