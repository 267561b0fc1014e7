#!/usr/bin/env bash
# Regenerate tests/fixtures/bm25_reference.json with rank-bm25 (BM25Okapi), installed from PyPI
# into a throwaway venv (.venv-bm25-ref/).
#
# The fixture is generated once and committed; CI does not run this script.
# Rerun it only when the corpus or the queries change, and review the diff.
set -euo pipefail

cd "$(dirname "$0")/.."

VENV="${BM25_REFVENV:-.venv-bm25-ref}"
RANK_BM25_VERSION="0.2.2"

if [[ ! -x "${VENV}/bin/python" ]]; then
  echo "gen_bm25_reference: creating ${VENV}"
  python3 -m venv "$VENV"
fi
if ! "${VENV}/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('rank-bm25') != '${RANK_BM25_VERSION}')" 2>/dev/null; then
  echo "gen_bm25_reference: installing rank-bm25==${RANK_BM25_VERSION} into ${VENV}"
  "${VENV}/bin/python" -m pip install --disable-pip-version-check "rank-bm25==${RANK_BM25_VERSION}"
fi

exec "${VENV}/bin/python" scripts/gen_bm25_reference.py "$@"
