#!/usr/bin/env bash
# Set up, build, and run the whole test suite twice, fuzz each parser, then the actor and network
# tests a third time:
#   1. Release build in build/: every target, every test; then the Debian package, built in
#      build-pkg/, installed into a scratch root and started (scripts/package_test.sh)
#   2. ASan + UBSan build (RelWithDebInfo) in build-asan/: the tests and what they run
#   3. the libFuzzer targets (clang, ASan+UBSan), each run for 60 s (scripts/fuzz.sh)
#   4. TSan build (RelWithDebInfo) of the actor and network tests only, in build-tsan/, against CAF's
#      core library built with TSan from Debian's source (scripts/caf_tsan.sh, kept in the build
#      cache outside the clone)
# Exits non-zero if any build or test fails. Prints each stage's wall time and the total at the
# end (also when a stage fails). Compiler output and CAF's TSan build are cached outside the clone
# (docs/testing.md): a second clone on the same machine rebuilds little.
set -euo pipefail

cd "$(dirname "$0")/.."

# Tests run two at a time (JOBS, default nproc): every test binds ephemeral ports and writes only
# temporary files of its own, and many wait on the network. The longest start first (COST in
# tests/CMakeLists.txt; later runs in the same folder use ctest's own record).
JOBS="${JOBS:-$(nproc)}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
# tests/sanitizers/ubsan.supp: one narrow suppression inside CAF's headers, explained there.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$PWD/tests/sanitizers/ubsan.supp}"

# ---------------------------------------------------------------- timing --
t_begin=$SECONDS
stage_lines=()
summary() {
  local rc=$? line
  echo
  echo "test: stage times (wall clock)"
  for line in "${stage_lines[@]}"; do echo "test:   ${line}"; done
  printf 'test:   %-34s %4d:%02d\n' "total" $(((SECONDS - t_begin) / 60)) $(((SECONDS - t_begin) % 60))
  if [[ $rc -eq 0 ]]; then echo "test: all passed"; else echo "test: FAILED (exit ${rc})"; fi
}
trap summary EXIT
# Stopped by a signal: the summary says FAILED, not "all passed".
trap 'exit 130' INT
trap 'exit 143' TERM

# stage NAME COMMAND...: runs COMMAND, records its wall time under NAME; a failure ends the run.
stage() {
  local name="$1" t0=$SECONDS rc=0
  shift
  echo "test: -- ${name}"
  "$@" || rc=$?
  local dt=$((SECONDS - t0)) mark=""
  [[ $rc -eq 0 ]] || mark="  FAILED"
  stage_lines+=("$(printf '%-34s %4d:%02d%s' "$name" $((dt / 60)) $((dt % 60)) "$mark")")
  return $rc
}

stage "set-up (packages, models, corpus)" scripts/setup.sh
stage "set-up (test venv)" scripts/test_venv.sh   # the openai client and Playwright, for the tests of the server process

echo "test: [1/4] Release"
stage "Release: build" env BUILD_DIR=build CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DACTORSERVE_SANITIZE=" scripts/build.sh
stage "Release: ctest" ctest --test-dir build --output-on-failure -j "$JOBS"
# The .deb: built from a CPU build in build-pkg/ (mostly compiler-cache hits after the Release
# build), inspected, installed into a scratch root with dpkg, its unit verified, the installed
# server started on the installed settings (docs/deploy.md).
stage "package: build, install, start" scripts/package_test.sh

echo "test: [2/4] ASan+UBSan"
# all_tests: every test binary and what the tests run (the actorserve tool); no benchmarks or examples.
stage "ASan+UBSan: build" env BUILD_DIR=build-asan TARGETS=all_tests \
  CMAKE_ARGS="-DACTORSERVE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
  scripts/build.sh
stage "ASan+UBSan: ctest" ctest --test-dir build-asan --output-on-failure -j "$JOBS"

echo "test: [3/4] libFuzzer targets"
# libFuzzer: every fuzz target (fuzz/) built with clang under ASan+UBSan and run 60 s from its
# seed corpus (docs/reliability.md); the ctest stages above replay the seeds and reproducers.
stage "fuzz: build (clang)" scripts/fuzz.sh --build-only
stage "fuzz: 60 s a target" scripts/fuzz.sh --seconds 60

echo "test: [4/4] TSan (actor and network tests)"
# Debian's libcaf_core.so is not instrumented: TSan would report CAF's own mailbox handoffs as
# races, and suppressing the library would hide races in our handlers too. So CAF is built with
# TSan from the same source (once per machine; .deps/caf-tsan links to the cached build), and
# every CAF header and the library come from there. No suppressions: any report fails the stage.
stage "TSan: CAF with TSan" scripts/caf_tsan.sh
caf_tsan="$PWD/.deps/caf-tsan"
stage "TSan: build" env BUILD_DIR=build-tsan TARGETS=actor_tests \
  CMAKE_ARGS="-DACTORSERVE_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAF_INCLUDE_DIR=${caf_tsan}/include -DCAF_CORE_LIB=${caf_tsan}/lib/libcaf_core_static.a" \
  scripts/build.sh
stage "TSan: ctest" env TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}" \
  ctest --test-dir build-tsan -R '^(actors|net)\.' --output-on-failure -j "$JOBS"
