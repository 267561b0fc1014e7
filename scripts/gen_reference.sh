#!/usr/bin/env bash
# Regenerate the reference fixtures in tests/fixtures/ with llama.cpp, through
# the PyPI package llama-cpp-python, installed into a throwaway venv (.refvenv/).
#
# The fixtures are generated once and committed; CI does not run this script.
# Rerun it only when the fixture set changes, and review the diff.
#
# Building llama-cpp-python compiles llama.cpp from source and takes a while
# on a small machine. The build flags pin a portable x86-64 AVX2 build so the
# reference numbers do not depend on the generating machine's newest ISA, and
# turn off ggml's run-time weight repacking (GGML_CPU_REPACK), so that every
# matrix goes through the plain AVX2 dot kernels whose order ours follow.
#
# Usage: scripts/gen_reference.sh [ARGS]             the model fixtures (gen_reference.py)
#        scripts/gen_reference.sh scripts/X.py [ARGS] another generator in the same venv:
#          gen_quant_reference.py (quant_blocks.json), gen_tiny_reference.py (tiny models),
#          gen_quantizer_reference.py (quantizer_reference.json)
set -euo pipefail

cd "$(dirname "$0")/.."

VENV="${REFVENV:-.refvenv}"
LLAMA_CPP_PYTHON_VERSION="0.3.16"
GGUF_VERSION="0.19.0"
NUMPY_VERSION="2.4.6"

scripts/setup.sh

if [[ ! -x "${VENV}/bin/python" ]]; then
  echo "gen_reference: creating ${VENV}"
  python3 -m venv "$VENV"
fi
if ! "${VENV}/bin/python" -c "import sys, numpy, gguf, llama_cpp; sys.exit(llama_cpp.__version__ != '${LLAMA_CPP_PYTHON_VERSION}')" 2>/dev/null; then
  echo "gen_reference: installing llama-cpp-python==${LLAMA_CPP_PYTHON_VERSION} into ${VENV} (compiles llama.cpp)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF -DGGML_CPU_REPACK=OFF" \
    "${VENV}/bin/python" -m pip install --disable-pip-version-check "llama-cpp-python==${LLAMA_CPP_PYTHON_VERSION}" \
    "numpy==${NUMPY_VERSION}" "gguf==${GGUF_VERSION}"
fi

script=scripts/gen_reference.py
if [[ "${1:-}" == scripts/*.py ]]; then script="$1"; shift; fi
exec "${VENV}/bin/python" "$script" "$@"
