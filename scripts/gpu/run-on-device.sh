#!/usr/bin/env bash
# Builds framemill on a GPU machine against the CUDA LibTorch of its Python torch, runs the
# CUDA-relevant tests there, and measures recycling on the GPU. Expects the static ffmpeg from
# scripts/build-static-ffmpeg.sh in .deps/ffmpeg-static. Writes logs and timelines to $OUT
# (default ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export PATH=$PWD/.deps/ffmpeg-static:$PATH
log() { echo "== $*"; }

log "machine"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPUs")'
ffmpeg -version | head -1
nproc

log "build"
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
  > "$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log"; exit 1; }
grep -E "framemill:|CUDA" "$OUT/cmake.log" | head
cmake --build build-gpu -j "$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E "error|Error" "$OUT/build.log" | head -30; exit 1; }
echo "build took $(( $(date +%s) - t0 )) s"

log "unit tests"
./build-gpu/tests/framemill_unit_tests 2>&1 | tail -3

log "integration tests on cuda (those that need no shared test clips)"
FRAMEMILL_TEST_DEVICE=cuda ./build-gpu/tests/framemill_integration_tests -tc="${FRAMEMILL_GPU_TESTS:-frame-exact*,recovery*}" \
  2>&1 | tail -8
for t in leak crash hang sigkill_storm; do
  cp "build-gpu/tests/scratch/$t/out.mp4.timeline.jsonl" "$OUT/$t-cuda.timeline.jsonl" 2>/dev/null
done

log "recycle cost on the GPU"
FRAMEMILL_BUILD_DIR=build-gpu bench/recycle-cost.sh cuda 1280x720 3000 heavy 1 8
FRAMEMILL_BUILD_DIR=build-gpu bench/recycle-cost.sh cuda 1280x720 3000 heavy 2 8
nvidia-smi --query-gpu=memory.used,memory.total --format=csv
