#!/usr/bin/env bash
# Configures and builds framemill into ./build (or $FRAMEMILL_BUILD_DIR). Extra arguments go to
# cmake's configure step, e.g. -DCMAKE_PREFIX_PATH=/path/to/libtorch for a CUDA LibTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${FRAMEMILL_BUILD_DIR:-build}
jobs=${FRAMEMILL_JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$build_dir" -j "$jobs"
