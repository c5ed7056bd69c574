#!/usr/bin/env bash
# Puts framemill on PATH for the people of this machine: the Debian packages it needs
# (scripts/install-deps.sh), the face detector (scripts/fetch-face-detector.sh), a build
# (scripts/build.sh), then `cmake --install` of the programs, their bash completion, docs and the
# face detector under /usr/local ($PREFIX to change it). Safe to run again.
#
# The service (the config in /etc/framemill that confines it, the systemd unit) is not installed
# here: it comes with the .deb (docs/service.md), so that a person's own `framemill run` is not
# held to the service's folders.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-face-detector.sh
scripts/build.sh
prefix=${PREFIX:-/usr/local}
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
$sudo cmake --install "${FRAMEMILL_BUILD_DIR:-build}" --prefix "$prefix" --component runtime
echo "install: $prefix/bin/framemill ($("$prefix/bin/framemill" --version))"
