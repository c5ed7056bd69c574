#!/usr/bin/env bash
# How close `framemill preview`'s estimate comes to the real job: the same job previewed, then
# run, figures side by side (estimate, real, estimate / real) for duration, output size and one
# worker's peak RSS, plus the preview's own time.
#
# usage: bench/preview-estimate.sh [DEVICE] [SECONDS] [MODEL] [WORKERS] [FRAMES]
#   defaults: cpu 60 sharpen 2 6
# The input is tests/data/d20.mp4 (real footage with speech, 480x480, 25 fps) looped to SECONDS
# and encoded with x264 defaults (a keyframe at least every 250 frames), AAC audio.
# Needs a build in ./build (or $FRAMEMILL_BUILD_DIR) and ffmpeg on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-cpu} seconds=${2:-60} model=${3:-sharpen} workers=${4:-2} frames=${5:-6}
bin=${FRAMEMILL_BUILD_DIR:-build}/framemill
work=${FRAMEMILL_BENCH_DIR:-$(mktemp -d /tmp/framemill-bench.XXXXXX)}
mkdir -p "$work"
"$bin" model export "$model" "$work/$model.pt" >/dev/null
ffmpeg -nostdin -v error -y -stream_loop -1 -i tests/data/d20.mp4 -t "$seconds" \
  -c:v libx264 -preset veryfast -crf 20 -c:a aac -b:a 128k "$work/in.mp4"
cat > "$work/job.json" <<JSON
{"input": "$work/in.mp4", "output": "$work/out.mp4", "model": "$work/$model.pt",
 "device": "$device", "workers": $workers, "overwrite": true}
JSON

now() { date +%s.%N; }
field() {  # field NAME FILE: the first number after "NAME": in the JSON file
  grep -o "\"$1\": [0-9.eE+-]*" "$2" | head -1 | awk '{ print $2 }'
}

t0=$(now)
"$bin" preview "$work/job.json" --frames "$frames" --json > "$work/preview.json" \
  2> "$work/preview.stderr"
t1=$(now)
"$bin" run "$work/job.json" > "$work/run.stdout" 2> "$work/run.stderr"
t2=$(now)

est_s=$(field duration_s "$work/preview.json")
est_bytes=$(field output_bytes "$work/preview.json")
est_rss=$(field peak_rss_bytes_per_worker "$work/preview.json")
stage=$(grep -o '"limiting_stage": "[a-z]*"' "$work/preview.json" | awk -F'"' '{ print $4 }')
real_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }')
real_bytes=$(stat -c %s "$work/out.mp4")
real_rss_mib=$(grep -o 'peak rss [0-9]* MiB' "$work/run.stdout" | awk '{ print $3 }' | sort -n |
  tail -1)

echo "preview estimate vs the real job: device $device, ${seconds} s of 480x480 at 25 fps," \
  "model $model, $workers workers, preview of $frames frames"
echo "preview took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s;" \
  "it names $stage as the limiting stage"
awk -v es="$est_s" -v rs="$real_s" -v eb="$est_bytes" -v rb="$real_bytes" -v er="$est_rss" \
  -v rr="$real_rss_mib" 'BEGIN {
  printf "%-22s %12s %12s %8s\n", "figure", "estimate", "real", "ratio"
  printf "%-22s %12.1f %12.1f %8.2f\n", "duration (s)", es, rs, es / rs
  printf "%-22s %12.2f %12.2f %8.2f\n", "output (MiB)", eb / 1048576, rb / 1048576, eb / rb
  printf "%-22s %12.0f %12.0f %8.2f\n", "peak rss/worker (MiB)", er / 1048576, rr,
    er / 1048576 / rr
}'
echo "files in $work"
