#!/usr/bin/env bash
# Narrows down what the worker sandbox takes away from CUDA on a GPU machine: the same short CUDA
# job with worker_sandbox "auto" and one layer at a time (FRAMEMILL_SANDBOX_LAYERS), then Landlock
# with extra read paths (FRAMEMILL_SANDBOX_EXTRA_READ). Prints each run's exit status, the
# sandbox the workers got and the error. Expects build-gpu (scripts/gpu/run-on-device.sh build)
# and the static ffmpeg. Logs in $OUT (default ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export PATH=$PWD/.deps/ffmpeg-static:$PATH
in=$OUT/diag.mp4
[ -f "$in" ] || ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=640x360:rate=30 -frames:v 60 \
  -c:v libx264 -pix_fmt yuv420p "$in"
./build-gpu/framemill model export sharpen "$OUT/diag-sharpen.pt" >/dev/null
printf '{"worker_sandbox": "auto"}\n' >"$OUT/diag.config.json"
run() {  # NAME LAYERS EXTRA_READ [EXTRA_WRITE [NO_SCOPES [EXTRA_ALL [EXTRA_TEMP]]]]
  printf '{"input": "%s", "output": "%s", "model": "%s", "device": "cuda", "workers": 1,
    "overwrite": true}\n' "$in" "$OUT/diag-$1.mp4" "$OUT/diag-sharpen.pt" >"$OUT/diag-$1.job.json"
  local env=(FRAMEMILL_SANDBOX_DEBUG=1)
  [ -n "$2" ] && env+=("FRAMEMILL_SANDBOX_LAYERS=$2")
  [ -n "$3" ] && env+=("FRAMEMILL_SANDBOX_EXTRA_READ=$3")
  [ -n "${4:-}" ] && env+=("FRAMEMILL_SANDBOX_EXTRA_WRITE=$4")
  [ -n "${5:-}" ] && env+=("FRAMEMILL_SANDBOX_NO_SCOPES=1")
  [ -n "${6:-}" ] && env+=("FRAMEMILL_SANDBOX_EXTRA_ALL=$6")
  [ -n "${7:-}" ] && env+=("FRAMEMILL_SANDBOX_EXTRA_TEMP=$7")
  env "${env[@]}" ./build-gpu/framemill run "$OUT/diag-$1.job.json" --config "$OUT/diag.config.json" \
    >"$OUT/diag-$1.log" 2>&1
  echo "== $1 (layers ${2:-all}${3:+, extra read $3}${4:+, extra write $4}${5:+, no scopes}${6:+, all rights on $6}${7:+, temp files in $7}): exit $?"
  grep -E "worker sandbox:|job failed|CUDA" "$OUT/diag-$1.log" | grep -v ' rule ' | head -3
}
steps=${DIAG_STEPS:-layers}
if [[ $steps == *layers* ]]; then
  run all "" ""
  run netns netns ""
  run rlimits rlimits ""
  run seccomp seccomp ""
  run landlock landlock ""
  run landlock-read-root landlock /
fi
if [[ $steps == *kinds* ]]; then
  echo "== landlock-all-no-net-no-scopes"; FRAMEMILL_SANDBOX_NO_NET=1 run x landlock "" "" 1 /
  echo "== landlock-default-no-net"; FRAMEMILL_SANDBOX_NO_NET=1 run y landlock ""
  echo "== landlock-net-only"; FRAMEMILL_SANDBOX_NO_FS=1 run z landlock "" "" 1
  echo "== landlock-scopes-only"; FRAMEMILL_SANDBOX_NO_FS=1 FRAMEMILL_SANDBOX_NO_NET=1 run w landlock ""
  echo "== landlock-nothing-handled"; FRAMEMILL_SANDBOX_NO_FS=1 FRAMEMILL_SANDBOX_NO_NET=1 run v landlock "" "" 1
fi
if [[ $steps == *rights* ]]; then
  run landlock-all-root landlock "" "" "" /
  run landlock-all-dev-shm landlock "" "" "" /dev/shm
  run landlock-temp-dev-shm landlock "" "" "" "" /dev/shm
  run landlock-all-dev landlock "" "" "" /dev
  run landlock-all-proc-sys landlock "" "" "" /proc:/sys
fi
if [[ $steps == *landlock* ]]; then
  run landlock-no-scopes landlock "" "" 1
  run landlock-write-root landlock "" / 1
  run landlock-write-root-scoped landlock "" /
  run landlock-write-dev-shm landlock "" /dev/shm
  run landlock-write-dev landlock "" /dev
  run landlock-write-tmp landlock "" /tmp
  run landlock-write-proc landlock "" /proc
  run landlock-write-sys landlock "" /sys
fi
