#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its seed corpus, and fails on any finding: a
# crash, a sanitizer report, an input that runs over 10 s, or over 2 GiB of memory. Prints the
# executions run (libFuzzer's stat::number_of_executed_units). A failing input is kept, with the
# log, in FINDINGS_DIR; reproduce with `BINARY FINDINGS_DIR/crash-...`.
# Usage: run-fuzzer.sh BINARY SEED_DIR SECONDS FINDINGS_DIR [DICTIONARY]
set -uo pipefail
binary=$1
seeds=$2
seconds=$3
findings=$4
dict=${5:-}
name=$(basename "$binary")

[[ -x $binary ]] || { echo "FAIL: $binary was not built (see the test fuzz_build)"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rm -rf "$findings"
mkdir -p "$scratch/corpus" "$findings"
seed_dirs=()
if [[ -d $seeds ]] && [[ -n $(ls -A "$seeds") ]]; then
  seed_dirs=("$seeds")
else
  echo "WARNING: no seed corpus in $seeds; $name starts from nothing"
fi

dict_args=()
[[ -n $dict ]] && dict_args=(-dict="$dict")

# New inputs go to the scratch corpus (the first directory), never into the repository's seeds.
# Inputs up to 64 KiB: deep nesting beyond what that allows is covered by the unit tests of the
# nesting limit, not by the fuzzer.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 "${dict_args[@]}" -artifact_prefix="$findings/" \
  "$scratch/corpus" "${seed_dirs[@]}" >"$scratch/log" 2>&1
rc=$?

grep -E '^INFO: seed corpus|^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::' "$scratch/log"
executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/log")
if ((rc != 0)) || [[ -n $(ls -A "$findings") ]]; then
  cp "$scratch/log" "$findings/fuzz.log"
  echo "FAIL: $name found a problem (exit $rc); the log's end:"
  tail -60 "$scratch/log"
  for input in "$findings"/crash-* "$findings"/timeout-* "$findings"/oom-* "$findings"/leak-*; do
    [[ -e $input ]] || continue
    echo "input $input ($(stat -c %s "$input") bytes), its first 512 bytes:"
    head -c 512 "$input" | od -c | head -20
  done
  exit 1
fi
rm -rf "$findings"
echo "$name: ${executions:-?} executions in $seconds s, no findings"
