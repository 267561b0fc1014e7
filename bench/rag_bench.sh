#!/usr/bin/env bash
# The RAG figures of docs/rag.md and docs/benchmarks.md: retrieval quality on the evaluation
# corpus (rag_eval) and ingest throughput and search latency with 100,000 chunks (rag_bench).
#
#   bench/rag_bench.sh                       # BUILD_DIR=build, builds rag_eval and rag_bench there
#   BUILD_DIR=build-c JOBS=2 bench/rag_bench.sh
#
# Steps (each command is printed before it runs):
#   1. scripts/build.sh with TARGETS="rag_eval rag_bench" (Release)
#   2. the corpora, when missing: scripts/rag_corpus.py --eval and --all (python3.11-doc)
#   3. rag_eval --threads $THREADS --json $OUT/rag_eval.json
#        recall@1/5/10 and MRR@10 of bm25, dense, hybrid (RRF) and hybrid (weighted); embeds the
#        evaluation corpus (~2 minutes on 2 threads) unless KB_CACHE names a file built before
#   4. rag_bench --threads $THREADS --repeat $REPEAT
#        ingest throughput at 1 and 2 embedder threads (400 chunks each, ~4 minutes), then
#        search latency with 100,000 chunks (sample of 512 chunks embedded, ~2 minutes)
#
# Environment:
#   BUILD_DIR  build directory (default: build)       JOBS     build jobs (default: nproc)
#   THREADS    embedder threads (default: 2)          REPEAT   runs of the latency part (default: 3)
#   OUT        folder for the reports (default: a new temporary folder, printed)
#   KB_CACHE   rag_eval --kb-cache file (default: none: embed afresh and time it)
#   SKIP_BUILD 1: use the binaries already in BUILD_DIR
set -euo pipefail

say() { printf 'rag-bench: %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
THREADS="${THREADS:-2}"
REPEAT="${REPEAT:-3}"
OUT="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/rag-bench.XXXXXX")}"
mkdir -p "$OUT"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  run env BUILD_DIR="$BUILD_DIR" JOBS="${JOBS:-$(nproc)}" TARGETS="rag_eval rag_bench" scripts/build.sh
fi
BIN="${BUILD_DIR}/bin"

[[ -d data/rag-eval/python-docs ]] || run python3 scripts/rag_corpus.py --eval
[[ -d data/rag-bench/python-docs ]] || run python3 scripts/rag_corpus.py --all

eval_args=(--threads "$THREADS" --json "${OUT}/rag_eval.json")
[[ -n "${KB_CACHE:-}" ]] && eval_args+=(--kb-cache "$KB_CACHE")
run "${BIN}/rag_eval" "${eval_args[@]}" | tee "${OUT}/rag_eval.txt"
run "${BIN}/rag_bench" --threads "$THREADS" --repeat "$REPEAT" | tee "${OUT}/rag_bench.txt"
say "reports in ${OUT}"
