#!/usr/bin/env bash
# Builds framemill on a GPU machine against the CUDA LibTorch of its Python torch and runs the
# CUDA-relevant tests, then prints a summary. The experiments run afterwards: scripts/gpu/run-case.py.
#
# usage: scripts/gpu/build-and-test.sh [--dry-run] [--no-build] [--no-tests] [--tests REGEX]
#                                       [--targets "T1 T2"]
#   --dry-run   print the commands instead of running them (works on a machine without a GPU)
#   --no-build  test what build-gpu already holds
#   --no-tests  build only
#   --tests     a ctest regex instead of the default set below
#   --targets   build only these targets, no tests (e.g. "framemill framemill-worker framemill-bench")
#
# Expects, carried to the machine: the static ffmpeg of scripts/build-static-ffmpeg.sh in
# .deps/ffmpeg-static, and the CLI11 headers in .deps/include/CLI (the GPU image has no
# libcli11-dev; CMakeLists.txt looks there): `mkdir -p .deps/include && cp -r /usr/include/CLI
# .deps/include/` before the call. Logs go to $OUT (default ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# The integration tests that need no shared clips and no OpenCV, each its own ctest process: a
# test that cannot run on a GPU ends as skipped (exit 77) without ending the others.
default_tests='integration:(frame-exact|recovery|precision|gpus|encoders|fast colour|device colour|sandbox|shm security)'
dry=0 build=1 tests=1 regex=$default_tests targets=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1 ;;
    --no-build) build=0 ;;
    --no-tests) tests=0 ;;
    --tests) regex=$2; shift ;;
    --targets) targets=$2; tests=0; shift ;;
    *) echo "build-and-test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-$PWD/gpu-out}
export PATH=$PWD/.deps/ffmpeg-static:$PATH

# run CMD...: runs a command, or prints it under --dry-run (an argument with spaces in quotes).
run() {
  [ $dry = 1 ] || { "$@"; return; }
  local a line=+
  for a in "$@"; do
    case $a in *[[:space:]\|\(]*) line+=" '$a'" ;; *) line+=" $a" ;; esac
  done
  echo "$line"
}
# step NAME LOG CMD...: runs a command with its output in $OUT/LOG; records NAME ok or FAILED.
summary=()
step() {
  local name=$1 log=$OUT/$2
  shift 2
  if [ $dry = 1 ]; then run "$@"; summary+=("$name: (dry run)"); return 0; fi
  local t0=$SECONDS
  if "$@" >"$log" 2>&1; then
    summary+=("$name: ok in $((SECONDS - t0)) s")
  else
    summary+=("$name: FAILED in $((SECONDS - t0)) s (log: $log)")
    return 1
  fi
}

run mkdir -p "$OUT"
if [ $dry = 0 ]; then
  echo "== machine"
  nvidia-smi -L
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPUs")'
  ffmpeg -version | head -1
  echo "$(nproc) cores"
fi
gpu_count=$( { nvidia-smi -L 2>/dev/null || true; } | wc -l)
[ "$gpu_count" -gt 0 ] || gpu_count=1

if [ $build = 1 ]; then
  # The Python torch's LibTorch has CUDA; Debian's is CPU-only.
  prefix='<torch.utils.cmake_prefix_path>'
  [ $dry = 0 ] && prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  # Fuzzing runs on the Debian CI (clang + libFuzzer), not here: the image may have no clang.
  # The image lacks OpenCV, mkvmerge, promtool and node, each a configure error in
  # tests/CMakeLists.txt: the real-footage tests are off, and the programs' find_program caches
  # are set to /bin/true (the tests that need them are not in the set run here).
  step configure cmake.log cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$prefix" -DFRAMEMILL_FUZZ=OFF -DFRAMEMILL_REAL_FOOTAGE_TESTS=OFF \
    -DFRAMEMILL_TEST_MKVMERGE=/bin/true -DFRAMEMILL_TEST_PROMTOOL=/bin/true \
    -DFRAMEMILL_TEST_NODE=/bin/true || { tail -40 "$OUT/cmake.log"; exit 1; }
  # CMake says here whether it found LibTorch with CUDA.
  [ $dry = 1 ] || grep -E "framemill:|CUDA" "$OUT/cmake.log" | head
  # shellcheck disable=SC2086  # $targets holds several names
  step build build.log cmake --build build-gpu -j "$(nproc)" ${targets:+--target $targets} -- -k 0 ||
    { grep -E ": error|Error [0-9]" -A2 "$OUT/build.log" | head -80; printf '%s\n' "${summary[@]}"; exit 1; }
fi

failed=0
if [ $tests = 1 ]; then
  # Every unit test on CUDA: the supervisor's a process per case, the worker's a process per file
  # (tests/CMakeLists.txt). The importers' files read the npm model packages, 315 MB, more than a
  # device call carries: they are left out here and run on the Debian CI.
  step "unit tests (cuda)" unit-tests.log env FRAMEMILL_TEST_DEVICE=cuda \
    ctest --test-dir build-gpu --output-on-failure -j "$((4 * $(nproc)))" -R '^unit:' \
    -E '^unit:worker:(tfjs|ncnn)_' || failed=1
  [ $dry = 1 ] || grep -E "tests passed|\(Skipped\)|\(Failed\)" "$OUT/unit-tests.log"
  # Every GPU of the machine for the `gpus` test.
  step "integration tests (cuda)" ctest.log env FRAMEMILL_TEST_DEVICE=cuda \
    FRAMEMILL_TEST_GPUS="$(seq -s, 0 $((gpu_count - 1)))" \
    ctest --test-dir build-gpu --output-on-failure -R "$regex" || failed=1
  [ $dry = 1 ] || grep -E "tests passed|\(Failed|\(Skipped|Timeout" "$OUT/ctest.log" | cut -c1-160
fi

echo "== summary"
printf '%s\n' "${summary[@]}"
[ $dry = 1 ] || nvidia-smi --query-gpu=memory.used,memory.total --format=csv
exit $failed
