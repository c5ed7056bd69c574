#!/usr/bin/env bash
# The input of face mode's throughput benchmark: a clip of WxH with K real faces in every frame,
# and (with --table) its face table made by real detection.
#
# usage: bench/face-input.sh OUT_DIR WxH K FRAMES [--table FACE_SIZE DETECTOR FRAMEMILL]
#
# Writes OUT_DIR/faces-WxH-kK-fFRAMES.mp4: K talking heads (tests/data/d0.mp4 and d20.mp4 taken
# in turn, each looped) scaled to a square of 0.45 H, over a plain background, one per cell of a
# grid (1, 2 side by side, or 2 by 2 for 3-4), each drifting slowly (a sine of 3% of W and 2% of
# H, period 8 s, each face in its own phase), 25 fps, FRAMES frames, H.264 (veryfast, crf 20), no
# audio. The static ffmpeg of the GPU machine (.deps/ffmpeg-static, 5.1.9) makes the same bytes as
# Debian 12's ffmpeg 5.1.9, so a table made here fits the clip made there.
#
# --table: also OUT_DIR/faces-WxH-kK-fFRAMES-sFACE_SIZE.table.json, by `FRAMEMILL faces CLIP
# --detector DETECTOR --table ... --face-size FACE_SIZE` (BlazeFace: needs a framemill built with
# OpenCV's dnn module). A GPU machine without OpenCV makes the clip alone and takes the table made
# elsewhere.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: bench/face-input.sh OUT_DIR WxH K FRAMES [--table FACE_SIZE DETECTOR FRAMEMILL]" >&2
  exit 2
fi
# Paths as given, from the caller's directory; the clips from the repository's tests/data.
out=$(realpath -m "$1") size=$2 k=$3 frames=$4
table_args=("${@:5}")
if [ ${#table_args[@]} -eq 4 ]; then
  table_args[2]=$(realpath "${table_args[2]}") table_args[3]=$(realpath "${table_args[3]}")
fi
cd "$(dirname "$0")/.."
w=${size%x*} h=${size#*x}
if [ "$k" -lt 1 ] || [ "$k" -gt 4 ]; then echo "K must be 1..4" >&2; exit 2; fi
mkdir -p "$out"
clip="$out/faces-$size-k$k-f$frames.mp4"
side=$(( h * 45 / 100 / 2 * 2 ))
cols=$(( k > 1 ? 2 : 1 )) rows=$(( k > 2 ? 2 : 1 ))
# Input 0 the background, 1 and 2 the heads; each head's copies split from one scaled stream.
n1=$(( (k + 1) / 2 )) n2=$(( k / 2 ))
labels() { for i in $(seq 1 "$2"); do printf '[%s%d]' "$1" "$i"; done; }
graph="[1:v]fps=25,scale=$side:$side,split=$n1$(labels a "$n1")"
if [ "$n2" -gt 0 ]; then graph+=";[2:v]fps=25,scale=$side:$side,split=$n2$(labels b "$n2")"; fi
last="0:v"
for i in $(seq 0 $((k - 1))); do
  cx=$(( (2 * (i % cols) + 1) * w / (2 * cols) )) cy=$(( (2 * (i / cols) + 1) * h / (2 * rows) ))
  if [ $((i % 2)) -eq 0 ]; then src="a$((i / 2 + 1))"; else src="b$((i / 2 + 1))"; fi
  x="$((cx - side / 2))+$((w * 3 / 100))*sin(2*PI*t/8+$i)"
  y="$((cy - side / 2))+$((h * 2 / 100))*cos(2*PI*t/8+$i)"
  graph+=";[$last][$src]overlay=x='$x':y='$y':eof_action=repeat[o$i]"
  last="o$i"
done
ffmpeg -nostdin -v error -y -f lavfi -i "color=c=0x36454f:s=${w}x${h}:r=25" \
  -stream_loop -1 -i tests/data/d0.mp4 -stream_loop -1 -i tests/data/d20.mp4 \
  -filter_complex "$graph" -map "[$last]" -frames:v "$frames" -an -c:v libx264 -preset veryfast \
  -crf 20 -pix_fmt yuv420p "$clip"
echo "$clip"
if [ "${table_args[0]:-}" = "--table" ]; then
  [ ${#table_args[@]} -eq 4 ] || { echo "--table needs FACE_SIZE DETECTOR FRAMEMILL" >&2; exit 2; }
  s=${table_args[1]}
  "${table_args[3]}" faces "$clip" --detector "${table_args[2]}" --face-size "$s" \
    --table "$out/faces-$size-k$k-f$frames-s$s.table.json"
fi
