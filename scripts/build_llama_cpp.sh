#!/usr/bin/env bash
# Build what the GGUF tests need from llama.cpp's source (idempotent: does nothing when built):
# the source as the llama-cpp-python sdist vendors it (its convert_hf_to_gguf.py and gguf-py), and
# llama.cpp's tokenizer: the static library (cmake target `llama`, Release, CPU only, no tools,
# tests, server or OpenMP) and tests/support/llama_tokenize_docs.cpp linked against it.
#   scripts/build_llama_cpp.sh [DIR]    DIR default: $HF_BBPE_LLAMA_CPP_DIR, else ~/.cache/hf_bbpe/llama.cpp-VERSION
# Prints DIR and then the program on success; DIR/llama.cpp is the source folder, the program is
# DIR/llama_tokenize_docs-HASH (HASH: the start of the driver source's sha256), one per driver version,
# so that checkouts with different drivers share DIR without rebuilding each other's.
set -euo pipefail
VERSION=0.3.36  # llama-cpp-python; its sdist carries llama.cpp (ggml 0.25.3)
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON=${PYTHON:-python3}
DIR=${1:-${HF_BBPE_LLAMA_CPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hf_bbpe/llama.cpp-$VERSION}}
DRIVER_SRC="$ROOT/tests/support/llama_tokenize_docs.cpp"
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9  # one build at a time (test sessions and setup.sh may start together)

STAMP="$DIR/.built-library"
PROGRAM="$DIR/llama_tokenize_docs-$(sha256sum "$DRIVER_SRC" | cut -c1-16)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VERSION" ] && [ -x "$PROGRAM" ]; then
  echo "$DIR"
  echo "$PROGRAM"
  exit 0
fi
missing=()
for tool in cmake cc c++; do
  command -v "$tool" > /dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build_llama_cpp.sh: ${missing[*]} not found: the GGUF tests build llama.cpp from source and need cmake and C and" \
    "C++ compilers (Debian/Ubuntu: apt-get install cmake gcc g++; .ci/run installs them)" >&2
  exit 1
fi
start=$(date +%s)
SRC="$DIR/llama.cpp"
if [ ! -f "$SRC/convert_hf_to_gguf.py" ]; then
  "$PYTHON" -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$DIR/sdist" >&2
  rm -rf "$DIR/unpack" && mkdir -p "$DIR/unpack"
  tar xzf "$DIR/sdist/llama_cpp_python-$VERSION.tar.gz" -C "$DIR/unpack"
  rm -rf "$SRC" && mv "$DIR/unpack/llama_cpp_python-$VERSION/vendor/llama.cpp" "$SRC" && rm -rf "$DIR/unpack"
  rm -f "$SRC/.git"  # a submodule pointer into the sdist's absent repository
fi
fetched=$(date +%s)
JOBS=$(nproc 2>/dev/null || echo 2)
GENERATOR=()
command -v ninja > /dev/null && GENERATOR=(-G Ninja)
cmake -S "$SRC" -B "$DIR/build" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DGGML_OPENMP=OFF -DGGML_NATIVE=OFF > "$DIR/cmake.log"
cmake --build "$DIR/build" --target llama -j "$JOBS" > "$DIR/build.log"
B="$DIR/build"
c++ -O2 -std=c++17 -I"$SRC/include" -I"$SRC/ggml/include" "$DRIVER_SRC" "$B/src/libllama.a" "$B/ggml/src/libggml.a" \
  "$B/ggml/src/libggml-cpu.a" "$B/ggml/src/libggml-base.a" -lpthread -ldl -lm -o "$PROGRAM.tmp"
mv "$PROGRAM.tmp" "$PROGRAM"
echo "$VERSION" > "$STAMP"
echo "llama.cpp built in $(( $(date +%s) - start )) s (source $(( fetched - start )) s, build $(( $(date +%s) - fetched )) s): $DIR" >&2
echo "$DIR"
echo "$PROGRAM"
