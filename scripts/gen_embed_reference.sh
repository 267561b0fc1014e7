#!/usr/bin/env bash
# Regenerate tests/fixtures/embeddings_minilm.json (and engine/wordpiece_unicode_data.cpp,
# the tokenizer's tables) with sentence-transformers (PyTorch, CPU),
# installed from PyPI into a throwaway venv (.venv-embed-ref/), on the model folder that
# scripts/setup.sh fetches (models/all-MiniLM-L6-v2), read offline.
#
# The fixture is generated once and committed; CI does not run this script.
# Rerun it only when the sentence set changes, and review the diff.
#
# note: the default torch wheel on PyPI pulls in the CUDA libraries (nvidia-*, several GB)
# even though only the CPU is used here; PyPI has no CPU-only torch wheel for Linux.
set -euo pipefail

cd "$(dirname "$0")/.."

VENV="${EMBED_REFVENV:-.venv-embed-ref}"
SENTENCE_TRANSFORMERS_VERSION="6.2.0"
TORCH_VERSION="2.15.0"

scripts/setup.sh

if [[ ! -x "${VENV}/bin/python" ]]; then
  echo "gen_embed_reference: creating ${VENV}"
  python3 -m venv "$VENV"
fi
if ! "${VENV}/bin/python" -c "import sys, torch, sentence_transformers as st; sys.exit(st.__version__ != '${SENTENCE_TRANSFORMERS_VERSION}' or not torch.__version__.startswith('${TORCH_VERSION}'))" 2>/dev/null; then
  echo "gen_embed_reference: installing sentence-transformers==${SENTENCE_TRANSFORMERS_VERSION} torch==${TORCH_VERSION} into ${VENV}"
  "${VENV}/bin/python" -m pip install --disable-pip-version-check \
    "torch==${TORCH_VERSION}" "sentence-transformers==${SENTENCE_TRANSFORMERS_VERSION}"
fi

# The tokenizer's Unicode tables come from the same tokenizers library as the fixture.
"${VENV}/bin/python" scripts/gen_wordpiece_tables.py
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 exec "${VENV}/bin/python" scripts/gen_embed_reference.py "$@"
