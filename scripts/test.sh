#!/usr/bin/env bash
# Set up, build, and run the whole test suite twice, then the actor tests a third time:
#   1. Release build in build/
#   2. ASan + UBSan build (RelWithDebInfo) in build-asan/
#   3. TSan build (RelWithDebInfo) of the actor and network tests only, in build-tsan/, against CAF's core
#      library built with TSan from Debian's source (scripts/caf_tsan.sh, into .deps/caf-tsan/)
# Exits non-zero if any build or test fails.
set -euo pipefail

cd "$(dirname "$0")/.."

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
# tests/sanitizers/ubsan.supp: one narrow suppression inside CAF's headers, explained there.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$PWD/tests/sanitizers/ubsan.supp}"

scripts/setup.sh
scripts/test_venv.sh   # the openai client and Playwright, for the tests of the server process

echo "test: [1/3] Release"
BUILD_DIR=build CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DACTORSERVE_SANITIZE=" scripts/build.sh
ctest --test-dir build --output-on-failure

echo "test: [2/3] ASan+UBSan"
BUILD_DIR=build-asan \
  CMAKE_ARGS="-DACTORSERVE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
  scripts/build.sh
ctest --test-dir build-asan --output-on-failure

echo "test: [3/3] TSan (actor and network tests)"
# Debian's libcaf_core.so is not instrumented: TSan would report CAF's own mailbox handoffs as
# races, and suppressing the library would hide races in our handlers too. So CAF is built with
# TSan from the same source (once; later runs reuse .deps/caf-tsan/), and every CAF header and
# the library come from there. No suppressions: any report fails the stage.
scripts/caf_tsan.sh
caf_tsan="$PWD/.deps/caf-tsan"
BUILD_DIR=build-tsan TARGETS=actor_tests \
  CMAKE_ARGS="-DACTORSERVE_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAF_INCLUDE_DIR=${caf_tsan}/include -DCAF_CORE_LIB=${caf_tsan}/lib/libcaf_core_static.a" \
  scripts/build.sh
TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}" \
  ctest --test-dir build-tsan -R '^(actors|net)\.' --output-on-failure

echo "test: all passed"
