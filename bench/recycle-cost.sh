#!/usr/bin/env bash
# What a worker recycle costs: the same job three times in one run, side by side:
#   baseline      no recycling
#   cold          recycle every N chunks, the replacement starts when the old worker retires
#   warm standby  recycle every N chunks, the replacement is loaded before the old one retires
# and the cost per recycle = (time - baseline time) / recycles.
#
# usage: bench/recycle-cost.sh [DEVICE] [SIZE] [FRAMES] [MODEL] [WORKERS] [MAX_CHUNKS]
#   defaults: cpu 160x120 480 heavy 1 4      (on a GPU: cuda 1280x720 3000 heavy 1 8)
# Needs a build in ./build (or $FRAMEMILL_BUILD_DIR) and ffmpeg on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-cpu} size=${2:-160x120} frames=${3:-480} model=${4:-heavy} workers=${5:-1} every=${6:-4}
bin=${FRAMEMILL_BUILD_DIR:-build}/framemill
work=${FRAMEMILL_BENCH_DIR:-$(mktemp -d /tmp/framemill-bench.XXXXXX)}
mkdir -p "$work"
"$bin" model export "$model" "$work/$model.pt" >/dev/null
fps=25
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=$fps" -frames:v "$frames" \
  -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p "$work/in.mp4"

run() {  # name recycle-json
  cat > "$work/$1.json" <<JSON
{"input": "$work/in.mp4", "output": "$work/$1.mp4", "model": "$work/$model.pt",
 "device": "$device", "workers": $workers, "chunk_frames": 32, "batch": 8, "overwrite": true,
 "encoder": {"preset": "veryfast"}, "recycle": $2}
JSON
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" run "$work/$1.json" > "$work/$1.stdout" 2> "$work/$1.stderr"
  t1=$(date +%s.%N)
  local recycles
  recycles=$(grep -c '"event":"recycle"' "$work/$1.mp4.timeline.jsonl" || true)
  echo "$1 $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') $recycles"
}

echo "recycle cost: device $device, $frames frames $size, model $model, $workers worker(s), recycle every $every chunks"
base=$(run baseline '{"max_chunks": 0}')
cold=$(run cold "{\"max_chunks\": $every, \"jitter\": 0, \"warm_standby\": false}")
warm=$(run warm "{\"max_chunks\": $every, \"jitter\": 0, \"warm_standby\": true}")
read -r _ tb _ <<<"$base"
printf "%-14s %9s %8s %9s %16s\n" mode seconds fps recycles "ms per recycle"
for line in "$base" "$cold" "$warm"; do
  read -r name t n <<<"$line"
  per="-"
  if [[ $n -gt 0 ]]; then per=$(awk -v t="$t" -v b="$tb" -v n="$n" 'BEGIN { printf "%.0f", (t - b) * 1000 / n }'); fi
  printf "%-14s %9.2f %8.1f %9d %16s\n" "$name" "$t" "$(awk -v f="$frames" -v t="$t" 'BEGIN { print f / t }')" "$n" "$per"
done
grep -h "ready on" "$work"/warm.stderr | sed -n '1,3p' | sed 's/^.*info: /  /'
