#!/usr/bin/env bash
# Set up, build, and run the whole test suite twice:
#   1. Release build in build/
#   2. ASan + UBSan build (RelWithDebInfo) in build-asan/
# Exits non-zero if any build or test fails.
set -euo pipefail

cd "$(dirname "$0")/.."

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

scripts/setup.sh

echo "test: [1/2] Release"
BUILD_DIR=build CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DACTORSERVE_SANITIZE=" scripts/build.sh
ctest --test-dir build --output-on-failure

echo "test: [2/2] ASan+UBSan"
BUILD_DIR=build-asan \
  CMAKE_ARGS="-DACTORSERVE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
  scripts/build.sh
ctest --test-dir build-asan --output-on-failure

echo "test: all passed"
