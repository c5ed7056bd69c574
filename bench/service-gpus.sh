#!/usr/bin/env bash
# A queue over a host's GPUs: JOBS jobs of SECONDS each through `framemill serve`, once with the
# service owning one GPU and once owning the GPUs listed, in one run. Prints each run's wall time
# (from the service's start to the last result.json), the GPUs each job got, and the ratio of the
# two times (issue: eight 2-minute jobs on two GPUs in at most 1/1.8 of their time on one).
#
# usage: bench/service-gpus.sh GPUS [JOBS] [SECONDS] [SIZE] [MODEL] [DEVICE] [PRECISION]
#   GPUS      the GPU set of the second run, comma-separated (the first run owns its first GPU)
#   defaults: 8 jobs, 120 s, 1920x1080, restore, cuda, fp16
# DEVICE cpu runs the queue with the test hook FRAMEMILL_TEST_GPU_LABELS=1 (the GPUs are labels,
# the workers run on the CPU): a check that the script and the queue work, not a figure.
# $RUNS picks the runs (default "one all"): a GPU machine's call limit may need them in two calls.
# Jobs use device colour conversion and 2 encoders ($ENCODERS), 1 worker per GPU; the inputs are
# testsrc2 with a tone. Needs a build in ./build (or $FRAMEMILL_BUILD_DIR) and ffmpeg on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
gpus=${1:?usage: bench/service-gpus.sh GPUS [JOBS] [SECONDS] [SIZE] [MODEL] [DEVICE] [PRECISION]}
jobs=${2:-8} seconds=${3:-120} size=${4:-1920x1080} model=${5:-restore} device=${6:-cuda}
precision=${7:-fp16} encoders=${ENCODERS:-2}
bin=$(realpath "${FRAMEMILL_BUILD_DIR:-build}/framemill")
work=$(realpath -m "${FRAMEMILL_BENCH_DIR:-$(mktemp -d /tmp/framemill-bench.XXXXXX)}")
mkdir -p "$work"
"$bin" model export "$model" "$work/$model.pt" >/dev/null
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=30" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" -c:v libx264 -preset veryfast \
  -crf 20 -pix_fmt yuv420p -c:a aac "$work/in.mp4"
labels=""
[[ $device == cpu ]] && labels="FRAMEMILL_TEST_GPU_LABELS=1" && precision=fp32
color=device
[[ $device == cpu ]] && color=auto

run() {  # run NAME GPU_LIST: prints "NAME: T s wall" and each job's GPUs
  local name=$1 list=$2 dir="$work/$1"
  rm -rf "$dir" && mkdir -p "$dir/spool/incoming" "$dir/out"
  cat > "$dir/config.json" <<JSON
{"spool_dir": "$dir/spool", "rescan_interval_s": 1, "allowed_input_roots": ["$work"],
 "allowed_output_roots": ["$work"], "allowed_model_roots": ["$work"], "service_gpus": [$list]}
JSON
  for i in $(seq 1 "$jobs"); do  # queued before the service starts: it finds them all
    cat > "$dir/job$i.tmp" <<JSON
{"input": "$work/in.mp4", "output": "$dir/out/job$i.mp4", "model": "$work/$model.pt",
 "device": "$device", "precision": "$precision", "color_conversion": "$color",
 "encoders": $encoders, "workers_per_gpu": 1, "overwrite": true}
JSON
    mv "$dir/job$i.tmp" "$dir/spool/incoming/job$i.json"
  done
  local t0 t1
  t0=$(date +%s.%N)
  env $labels "$bin" --config "$dir/config.json" serve > "$dir/serve.log" 2>&1 &
  local serve=$!
  until [[ $(ls "$dir/spool/done" "$dir/spool/failed" 2>/dev/null | grep -c '^job') -ge $jobs ]]; do
    sleep 0.2
  done
  t1=$(date +%s.%N)
  kill "$serve"
  wait "$serve" || true
  if ls "$dir/spool/failed" 2>/dev/null | grep -q '^job'; then
    echo "$name: jobs failed:" >&2
    cat "$dir"/spool/failed/*/result.json >&2
    exit 1
  fi
  local wall
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  echo "$name: $jobs jobs of $seconds s on GPUs [$list]: $wall s wall," \
    "$(awk -v w="$wall" -v j="$jobs" -v s="$seconds" 'BEGIN { printf "%.2f", j * s / w }') s of video a second"
  python3 - "$dir"/spool/done/*/result.json <<'PY'
import collections, json, sys
got = collections.Counter(str(json.load(open(p)).get("service_gpus")) for p in sys.argv[1:])
for gpus, n in sorted(got.items()):
    print(f"  {n} jobs on GPUs {gpus}")
PY
  eval "wall_$name=$wall"
}

echo "service over GPUs: $jobs jobs of $seconds s at $size, model $model, $device $precision," \
  "$encoders encoders a job, $(nproc) CPU threads"
runs=${RUNS:-one all}
[[ $runs == *one* ]] && run one "${gpus%%,*}"
[[ $runs == *all* ]] && run all "$gpus"
if [[ $runs == *one* && $runs == *all* ]]; then
  awk -v a="$wall_all" -v o="$wall_one" 'BEGIN {
    printf "ratio: GPUs [all] / GPUs [one] = %.3f (speed-up %.2fx)\n", a / o, o / a }'
fi
