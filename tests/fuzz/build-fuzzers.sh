#!/usr/bin/env bash
# Configures and builds the fuzz targets (tests/fuzz/CMakeLists.txt) with clang++.
# Usage: build-fuzzers.sh SOURCE_DIR BUILD_DIR CLANGXX JOBS [COMPILER_LAUNCHER]
set -euo pipefail
source_dir=$1
build_dir=$2
clangxx=$3
jobs=$4
launcher=${5:-}
start=$SECONDS
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" -DCMAKE_CXX_COMPILER="$clangxx" \
  ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} >/dev/null
cmake --build "$build_dir" -j "$jobs"
echo "fuzz targets built in $((SECONDS - start)) s"
