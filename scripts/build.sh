#!/usr/bin/env bash
# Configure and build actorserve.
#
# Environment:
#   BUILD_DIR    build directory (default: build)
#   CMAKE_ARGS   extra arguments for the configure step, e.g.
#                BUILD_DIR=build-asan CMAKE_ARGS="-DACTORSERVE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo" scripts/build.sh
#   JOBS         parallel build jobs (default: nproc)
#   TARGETS      build only these targets, space-separated (default: all)
#
# Ninja when it is installed (scripts/setup.sh installs it), Make otherwise. Compilations go
# through ccache when it is installed (CMakeLists.txt; docs/testing.md says where its cache lies).
set -euo pipefail

cd "$(dirname "$0")/.."

BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc)}"
# Word splitting of CMAKE_ARGS is intended: it holds several -D options.
read -r -a extra_args <<< "${CMAKE_ARGS:-}"

generator="Unix Makefiles"
command -v ninja >/dev/null && generator="Ninja"
# A build folder made with the other generator cannot be reconfigured with this one.
cache="${BUILD_DIR}/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=${generator}" "$cache"; then
  echo "build: ${BUILD_DIR} was made by another generator; starting it afresh with ${generator}"
  rm -rf "$BUILD_DIR"
fi

echo "build: configuring ${BUILD_DIR} (${generator}) ${CMAKE_ARGS:-}"
cmake -S . -B "$BUILD_DIR" -G "$generator" -DCMAKE_BUILD_TYPE=Release "${extra_args[@]}"
read -r -a targets <<< "${TARGETS:-}"
build_args=(-j"$JOBS")
if [[ ${#targets[@]} -gt 0 ]]; then build_args+=(--target "${targets[@]}"); fi
echo "build: compiling ${TARGETS:-all targets} with ${JOBS} jobs"
cmake --build "$BUILD_DIR" "${build_args[@]}"
