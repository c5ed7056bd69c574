#!/usr/bin/env bash
# Runs every corpus entry (tests/integration/corpus.cpp) and writes a markdown table of what came
# out: the job's exit and error, the output's displayed size, aspect, frames and pixel format,
# luma / chroma PSNR against the source, and which checks failed.
#   scripts/corpus-report.sh REPORT.md [FRAMEMILL]
# FRAMEMILL: the framemill binary whose jobs to run (its framemill-worker beside it), e.g. an
# older build for a "before" table; default: this build's. Needs a built tree (build/ or
# $FRAMEMILL_BUILD_DIR).
set -euo pipefail
report=$(realpath -m "${1:?usage: corpus-report.sh REPORT.md [FRAMEMILL]}")
framemill=${2:-}
cd "$(dirname "$0")/.."
build_dir=${FRAMEMILL_BUILD_DIR:-build}
{
  echo "| entry | job | output (shown size, SAR, frames, pix_fmt, transfer) | PSNR y / chroma dB | checks |"
  echo "|---|---|---|---|---|"
} >"$report"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
# Entries fail on purpose in a "before" table: the exit status of the run is not this script's.
FRAMEMILL_CORPUS_REPORT=$rows FRAMEMILL_CORPUS_FRAMEMILL=${framemill:+$(realpath "$framemill")} \
  ctest --test-dir "$build_dir" -R '^integration: ?corpus: ' -E 'every entry' -j "$((4 * $(nproc)))" \
  >/dev/null 2>&1 || true
# Rows in the table's order (they arrive in the order the entries finish).
for name in $(grep -o 'CORPUS_CASE("[^"]*")' tests/integration/corpus_test.cpp | sed 's/.*("\(.*\)")/\1/'); do
  grep "^| $name |" "$rows" || echo "| $name | (did not run) | | | |"
done >>"$report"
echo "corpus report: $report"
