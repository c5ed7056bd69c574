#!/usr/bin/env bash
# Installs what framemill needs to build, run and test, from Debian 12's own packages.
# Safe to run again: apt-get skips what is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev            # LibTorch (CPU) for the worker; a CUDA LibTorch can replace it
  libopencv-dev           # job report stills, preview contact sheets; image checks in tests
  libjpeg-dev libpng-dev  # encoding the report's stills (JPEG) and the contact sheet (PNG)
  chromium                # headless: the report test renders a job report in a real browser
  libboost-dev libboost-filesystem-dev  # Boost.Process, Boost.Interprocess
  nlohmann-json3-dev libspdlog-dev doctest-dev libcli11-dev
  libsystemd-dev
  ffmpeg                  # ffmpeg and ffprobe: decoding, encoding, muxing
  opencv-doc              # real footage (examples/data/*.avi) for the demo and the tests
  mkvtoolnix              # mkvmerge: source timestamps for variable-frame-rate videos
  prometheus              # promtool: the metrics test checks the service's metrics file
  systemd                 # systemd-analyze: the unit's verify and security tests
  clang libclang-rt-14-dev  # clang++ and its libFuzzer/sanitizer runtimes: the fuzz tests
  nodejs                  # node: the TF.js reference test; npm: fetch-model-packages.sh
  munge slurmctld slurmd slurm-client  # scripts/slurm-local.sh: the Slurm tests' one-node cluster
)
# Debian's npm, unless the nodejs there already bundles one (NodeSource's does, and conflicts
# with Debian's npm package).
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
