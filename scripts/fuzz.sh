#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/) with clang under ASan+UBSan and run each one, starting from
# its committed seed corpus (fuzz/corpus/<target>) and its reproducers (fuzz/regressions/<target>).
# Exits non-zero when any target finds a crash, a hang (-timeout), a leak or a sanitizer report;
# the input is kept as <out>/<target>/crash-* (or leak-*, timeout-*) and the log beside it.
#
#   scripts/fuzz.sh                          # every target for 60 s (the test command's stage)
#   scripts/fuzz.sh --seconds 1800 --targets "gguf tokenizer"   # long runs (docs/reliability.md)
#   scripts/fuzz.sh --seeds                  # rewrite the generated seeds (cache and KB files)
#
# Options: --build-only; --seconds N [60] per target; --runs N: stop each after N executions instead (with
# --seconds as a cap); --targets "a b" [all]; --jobs J [nproc] targets at once; --out DIR
# [build-fuzz/runs]. New inputs a run finds stay in <out>/<target>/corpus, never in the tree.
# Environment: BUILD_DIR [build-fuzz], CXX [clang++-14].
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

ALL_TARGETS="gguf safetensors tokenizer openai_request ws_message config rag_document cache_file kb_file json_schema"
SECONDS_EACH=60
RUNS=""
TARGETS="$ALL_TARGETS"
JOBS="$(nproc)"
BUILD_DIR="${BUILD_DIR:-build-fuzz}"
OUT=""
SEEDS=0
BUILD_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --targets) TARGETS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --seeds) SEEDS=1; shift ;;
    --build-only) BUILD_ONLY=1; shift ;;
    *) echo "fuzz: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$BUILD_DIR/runs}"
export CXX="${CXX:-clang++-14}"
command -v "$CXX" >/dev/null || { echo "fuzz: no $CXX (apt-get install clang-14 libfuzzer-14-dev; scripts/setup.sh does)" >&2; exit 1; }

env BUILD_DIR="$BUILD_DIR" TARGETS=fuzz_targets \
  CMAKE_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DACTORSERVE_FUZZ=ON -DACTORSERVE_SANITIZE=address,undefined -DACTORSERVE_CUDA=OFF" \
  scripts/build.sh

[[ "$BUILD_ONLY" == 1 ]] && exit 0
if [[ "$SEEDS" == 1 ]]; then
  ACTORSERVE_FUZZ_WRITE_SEEDS="$ROOT/fuzz/corpus/cache_file" "$BUILD_DIR/bin/fuzz_cache_file" || true
  ACTORSERVE_FUZZ_WRITE_SEEDS="$ROOT/fuzz/corpus/kb_file" "$BUILD_DIR/bin/fuzz_kb_file" || true
  ls -l fuzz/corpus/cache_file fuzz/corpus/kb_file
  exit 0
fi

# A malloc over -rss_limit_mb is reported (libFuzzer's malloc limit): a size taken from the input
# must be checked before it is allocated. tests/sanitizers/ubsan.supp: the one suppression inside
# CAF's headers that the test builds use.
export ASAN_OPTIONS="detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/tests/sanitizers/ubsan.supp"
lscpu | grep -m1 "Model name" || true

run_one() {
  local t="$1" dir="$OUT/$1"
  rm -rf "$dir"; mkdir -p "$dir/corpus"
  local args=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536
              -print_final_stats=1 -artifact_prefix="$dir/")
  [[ -n "$RUNS" ]] && args+=(-runs="$RUNS")
  local seeds=("fuzz/corpus/$t")
  [[ -d "fuzz/regressions/$t" ]] && seeds+=("fuzz/regressions/$t")
  local start=$(date +%s) rc=0
  "$BUILD_DIR/bin/fuzz_$t" "${args[@]}" "$dir/corpus" "${seeds[@]}" > "$dir/log" 2>&1 || rc=$?
  local execs secs
  execs="$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$dir/log" | grep -o '[0-9]*$' || echo 0)"
  secs=$(( $(date +%s) - start ))
  printf '%-16s %6d s %12s execs %8s exec/s %6s inputs  %s\n' "$t" "$secs" "$execs" \
    "$(( execs / (secs > 0 ? secs : 1) ))" "$(ls "$dir/corpus" | wc -l)" "$([[ $rc == 0 ]] && echo ok || echo "FAILED (rc $rc; $dir/log)")" \
    > "$dir/summary"
  return $rc
}

for t in $TARGETS; do
  [[ -x "$BUILD_DIR/bin/fuzz_$t" ]] || { echo "fuzz: no target $t (one of: $ALL_TARGETS)" >&2; exit 2; }
done
for t in $TARGETS; do
  while [[ $(jobs -rp | wc -l) -ge "$JOBS" ]]; do wait -n || true; done
  run_one "$t" &
done
wait || true
failed=0
for t in $TARGETS; do grep -q " ok$" "$OUT/$t/summary" 2>/dev/null || failed=1; done
echo "fuzz: target, wall time, executions, executions a second, corpus size, outcome"
for t in $TARGETS; do cat "$OUT/$t/summary"; done
if [[ "$failed" != 0 ]]; then
  for t in $TARGETS; do
    if ! grep -q " ok$" "$OUT/$t/summary"; then echo "--- $t"; grep -E "ERROR|SUMMARY|==[0-9]+==|fuzz[_a-z]*:|Test unit written" "$OUT/$t/log" | head -20; fi
  done
  exit 1
fi
