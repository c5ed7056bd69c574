#!/usr/bin/env bash
# What `framemill run` costs a short job besides its frames, with the programs' answers about
# themselves (ffprobe -demuxers, -devices, ffmpeg -h encoder=X) asked before the job, as every
# run did before they were kept (an empty answers directory each run: `asked`), and read back from
# the answers directory (`kept`, supervisor/process/program_answers.h). Rounds alternate the two.
#   prepare s   the stage before the workers start: probing the input, planning (stderr "stages")
#   start s     until a worker was ready;  mux s: joining and verifying the output
#   wall s      the whole `framemill run`;  cpu s: user + system time of it and its children
#
# usage: bench/run-fixed-cost.sh [ROUNDS] [SIZE] [FRAMES]     defaults: 5 320x240 50
# Needs a build in ./build (or $FRAMEMILL_BUILD_DIR) and ffmpeg on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} size=${2:-320x240} frames=${3:-50}
bin=$(realpath "${FRAMEMILL_BUILD_DIR:-build}/framemill")
work=$(mktemp -d /tmp/framemill-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=25" -frames:v "$frames" \
  -c:v libx264 -pix_fmt yuv420p "$work/in.mp4"
"$bin" model export identity "$work/identity.pt" > /dev/null
job() {  # job OUTPUT: writes the job file for OUTPUT
  printf '{"input": "%s", "output": "%s", "model": "%s", "workers": 1, "device": "cpu"}\n' \
    "$work/in.mp4" "$1" "$work/identity.pt" > "$work/job.json"
}
mkdir -p "$work/kept"
job "$work/warm-up.mp4"  # fills kept/
CACHE_DIRECTORY=$work/kept "$bin" run "$work/job.json" > /dev/null 2>&1
printf '%-6s %-7s %9s %8s %6s %7s %6s\n' round answers prepare_s start_s mux_s wall_s cpu_s
for ((r = 1; r <= rounds; ++r)); do
  for answers in asked kept; do
    if [[ $answers == asked ]]; then
      cache=$(mktemp -d "$work/asked.XXXXXX")
    else
      cache=$work/kept
    fi
    job "$work/out-$r-$answers.mp4"
    CACHE_DIRECTORY=$cache /usr/bin/time -f '%e %U %S' -o "$work/time" \
      "$bin" run "$work/job.json" > "$work/err" 2>&1 ||
      { cat "$work/err" >&2; exit 1; }
    stages=$(grep -m1 'framemill: stages:' "$work/err")
    prepare=$(sed -E 's/.*prepare ([0-9.]+) s.*/\1/' <<< "$stages")
    start=$(sed -E 's/.*start ([0-9.]+) s.*/\1/' <<< "$stages")
    mux=$(sed -E 's/.*mux ([0-9.]+) s.*/\1/' <<< "$stages")
    read -r wall user sys < "$work/time"
    printf '%-6s %-7s %9s %8s %6s %7s %6s\n' "$r" "$answers" "$prepare" "$start" "$mux" \
      "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
  done
done
