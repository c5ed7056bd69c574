#!/usr/bin/env bash
# Builds fully static ffmpeg and ffprobe (with libx264) from Debian 12's ffmpeg source package,
# for machines that have no ffmpeg (a GPU server image, say). They run on any x86-64 Linux.
# Output: .deps/ffmpeg-static/{ffmpeg,ffprobe} (about 4 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.deps/ffmpeg-static
if [[ -x $out/ffmpeg && -x $out/ffprobe ]]; then
  echo "static ffmpeg already built in $out"
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
if ! grep -rqs "^Types: deb-src" /etc/apt/sources.list.d/ && ! grep -qs "^deb-src" /etc/apt/sources.list; then
  $sudo tee /etc/apt/sources.list.d/framemill-deb-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  dpkg-dev nasm libx264-dev pkg-config
mkdir -p .deps/src
(cd .deps/src && [[ -d $(ls -d ffmpeg-*/ 2>/dev/null | head -1) ]] || apt-get source -qq ffmpeg)
src=$(ls -d .deps/src/ffmpeg-*/ | head -1)
(
  cd "$src"
  ./configure --disable-shared --enable-static --disable-debug --disable-doc --disable-ffplay \
    --disable-network --disable-autodetect --enable-gpl --enable-libx264 \
    --extra-ldflags=-static --pkg-config-flags=--static >/dev/null
  make -j"$(nproc)" ffmpeg ffprobe >/dev/null
)
mkdir -p "$out"
cp "$src/ffmpeg" "$src/ffprobe" "$out/"
strip "$out/ffmpeg" "$out/ffprobe"
ls -la "$out"
