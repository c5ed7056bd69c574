#!/usr/bin/env bash
# What the start costs a short job in the service: the rate a job of SECONDS reaches against the
# steady-state rate, with cold workers (started for the job: a job of another model ran before)
# and with warm ones (kept loaded from the previous job of the same model), each from its
# result.json (seconds, frames, workers_warm, workers_spare, workers_wait_s, stages). A cold job
# takes the service's spare worker (config spare_workers, on by default: `spare` true) unless
# $FRAMEMILL_START_COST_CONFIG says '"spare_workers": false'.
#   steady state  frames / stages.pipeline_s of a job of LONG x SECONDS (start-up and mux left out;
#                 $FRAMEMILL_START_COST_LONG, default 5)
#   share         (frames / seconds) of the short job / steady state
#   own           the same against the short job's own pipeline rate (stages.pipeline_s /
#                 seconds): on a shared machine, where the load changes from job to job, the
#                 steadier of the two
#   tail s        stages.tail_s: from the workers' last chunk to the last segment written
#   mux           how the output was joined: live (beside the render) or after (result.json's mux)
#
# usage: bench/start-cost.sh [DEVICE] [SIZE] [SECONDS] [MODEL] [WORKERS] [ROUNDS]
#   defaults: cpu 320x240 60 sharpen 1 3
#   MODEL: an example model's name, or a model file (with its card beside it, if any)
#   $FRAMEMILL_START_COST_JOB: more job keys for every job, as JSON members, e.g.
#   '"precision": "fp16", "color_conversion": "device", "encoders": 2'
#   $FRAMEMILL_START_COST_VARIANTS: job keys that differ, variants separated by ';', e.g.
#   '"page_lock_arena": "off";"page_lock_arena": "on"': each round then runs a cold and a warm job
#   of each (the column `var` says which, from 1); the steady state is the first variant's
#   $FRAMEMILL_START_COST_CONFIG: more service config keys, as JSON members, e.g.
#   '"log_level": "debug"' (each segment's end in the service's log)
#   $FRAMEMILL_START_COST_LONG: the steady state's job, in times SECONDS (default 5)
#   $FRAMEMILL_START_COST_PAUSE: seconds to wait before each cold job (default 0: it follows
#   the other model's job at once), as when jobs do not come back to back
# Needs a build in ./build (or $FRAMEMILL_BUILD_DIR) and ffmpeg on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-cpu} size=${2:-320x240} seconds=${3:-60} model=${4:-sharpen} workers=${5:-1}
rounds=${6:-3}
bin=$(realpath "${FRAMEMILL_BUILD_DIR:-build}/framemill")
work=$(realpath -m "${FRAMEMILL_BENCH_DIR:-$(mktemp -d /tmp/framemill-bench.XXXXXX)}")
mkdir -p "$work/out"
if [[ -f $model ]]; then  # a model file: copied with its card, named by its extension
  mfile="$work/model.${model##*.}"
  cp "$model" "$mfile"
  if [[ -f $model.json ]]; then cp "$model.json" "$mfile.json"; fi
else
  mfile="$work/$model.pt"
  "$bin" model export "$model" "$mfile" >/dev/null
fi
"$bin" model export identity "$work/other.pt" >/dev/null
extra=${FRAMEMILL_START_COST_JOB:-}
fps=25
video() {  # video NAME SECONDS
  ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=$fps" -t "$2" \
    -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p "$work/$1.mp4"
}
video short "$seconds"
long_times=${FRAMEMILL_START_COST_LONG:-5}
video long $((long_times * seconds))
video tiny 1
config=${FRAMEMILL_START_COST_CONFIG:-}
cat > "$work/config.json" <<JSON
{"spool_dir": "$work/spool", "rescan_interval_s": 1, "allowed_input_roots": ["$work"],
 "allowed_output_roots": ["$work"], "allowed_model_roots": ["$work"]${config:+, $config}}
JSON
"$bin" --config "$work/config.json" serve > "$work/serve.log" 2>&1 &
serve=$!
trap 'kill "$serve" 2>/dev/null || true; wait "$serve" 2>/dev/null || true' EXIT

field() {  # field NAME FILE: the first value after "NAME": in the JSON file
  grep -o "\"$1\": *[0-9a-z.eE+-]*" "$2" | head -1 | sed 's/.*: *//'
}
sfield() {  # sfield NAME FILE: the first string value of "NAME" in the JSON file
  grep -o "\"$1\": *\"[a-z]*\"" "$2" | head -1 | sed 's/.*: *"//; s/"$//'
}
IFS=';' read -r -a variants <<< "${FRAMEMILL_START_COST_VARIANTS:-}"
if [[ ${#variants[@]} -eq 0 ]]; then variants=(""); fi
job() {  # job ID INPUT MODEL_FILE [KEYS]: runs it through the spool, waits for its result.json
  mkdir -p "$work/spool/incoming"
  local keys=$extra
  if [[ -n ${4:-} ]]; then keys="${keys:+$keys, }$4"; fi
  cat > "$work/$1.tmp" <<JSON
{"input": "$work/$2.mp4", "output": "$work/out/$1.mp4", "model": "$3",
 "device": "$device", "workers": $workers, "overwrite": true${keys:+, $keys}}
JSON
  mv "$work/$1.tmp" "$work/spool/incoming/$1.json"
  local result="$work/spool/done/$1/result.json"
  until [[ -f $result || -f $work/spool/failed/$1/result.json ]]; do sleep 0.2; done
  [[ -f $result ]] || { echo "job $1 failed: $(cat "$work/spool/failed/$1/result.json")" >&2; exit 1; }
}

job long long "$mfile" "${variants[0]}"
long="$work/spool/done/long/result.json"
steady=$(awk -v f="$(field frames "$long")" -v p="$(field pipeline_s "$long")" \
  'BEGIN { printf "%.1f", f / p }')
echo "start cost: device $device, $size at $fps fps, model $model, $workers worker(s);" \
  "steady state $steady fps (pipeline of a $((long_times * seconds)) s job; its mux" \
  "$(sfield mux "$long") $(field mux_s "$long") s)"
for v in "${!variants[@]}"; do
  if [[ -n ${variants[$v]} ]]; then echo "variant $((v + 1)): ${variants[$v]}"; fi
done
printf "%-8s %3s %6s %6s %6s %9s %8s %6s %5s %6s %8s %8s %9s %7s %7s\n" job var warm spare arena \
  "wait s" "start s" "tail s" mux "mux s" seconds fps "pipe fps" share own
for r in $(seq 1 "$rounds"); do
  for v in "${!variants[@]}"; do
    id=$r
    if [[ ${#variants[@]} -gt 1 ]]; then id=$r-$((v + 1)); fi
    # Another model first: the next job finds no warm workers of its own.
    job "other$id" tiny "$work/other.pt"
    for kind in cold warm; do
      if [[ $kind == cold ]]; then sleep "${FRAMEMILL_START_COST_PAUSE:-0}"; fi
      job "$kind$id" short "$mfile" "${variants[$v]}"
      f="$work/spool/done/$kind$id/result.json"
      awk -v id="$kind$id" -v var=$((v + 1)) -v warm="$(field workers_warm "$f")" \
        -v spare="$(field workers_spare "$f")" \
        -v w="$(field workers_wait_s "$f")" -v arena="$(sfield arena "$f")" \
        -v tail="$(field tail_s "$f")" -v mux="$(field mux_s "$f")" -v how="$(sfield mux "$f")" \
        -v st="$(field start_s "$f")" -v s="$(field seconds "$f")" \
        -v n="$(field frames "$f")" -v p="$(field pipeline_s "$f")" -v steady="$steady" 'BEGIN {
        printf "%-8s %3d %6s %6s %6s %9.3f %8.3f %6.2f %5s %6.2f %8.2f %8.1f %9.1f %7.3f %7.3f\n", id,
          var, warm, spare, arena, w, st, tail, how, mux, s, n / s, n / p, n / s / steady, p / s }'
    done
  done
done
echo "files in $work"
