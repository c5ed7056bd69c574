#!/usr/bin/env bash
# Quick start: installs dependencies, builds, exports the `sharpen` example model, makes a
# 20-second test video with audio, and runs it through framemill. Prints where the output is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
out=demo-output
mkdir -p "$out"
./build/framemill model export sharpen "$out/sharpen.pt"
if [[ ! -f $out/input.mp4 ]]; then
  ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=640x360:rate=25:duration=20 \
    -f lavfi -i sine=frequency=330:sample_rate=48000:duration=20 \
    -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 96k "$out/input.mp4"
fi
cat > "$out/job.json" <<JSON
{
  "input": "$PWD/$out/input.mp4",
  "output": "$PWD/$out/output.mp4",
  "model": "$PWD/$out/sharpen.pt",
  "workers": 2,
  "chunk_frames": 32,
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
echo "demo: input  $PWD/$out/input.mp4"
echo "demo: output $PWD/$out/output.mp4"
