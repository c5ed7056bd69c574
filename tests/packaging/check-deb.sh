#!/usr/bin/env bash
# Builds the Debian package with cpack and checks what it installs and runs.
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
deb=$(ls "$out"/framemill_*.deb)
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/framemill ./usr/bin/framemill-worker ./usr/bin/framemill-face-detector \
            ./usr/bin/framemill-confine \
            ./etc/framemill/framemill.json \
            ./usr/lib/systemd/system/framemill.service ./usr/lib/tmpfiles.d/framemill.conf \
            ./usr/lib/sysusers.d/framemill.conf; do
  grep -q " $path\$" <<<"$contents" || { echo "missing from the package: $path"; exit 1; }
done
# The tests' programs stay out of the product (the fault worker: tests/faults/).
for program in framemill-faults framemill-worker-faults framemill-hostile-worker framemill-test-models; do
  ! grep -q "/$program\$" <<<"$contents" || { echo "a test program in the package: $program"; exit 1; }
done
depends=$(dpkg-deb -f "$deb" Depends)
grep -q "systemd (>= 248)" <<<"$depends" || { echo "Depends lacks systemd (>= 248): $depends"; exit 1; }
for dep in ffmpeg libtorch; do
  grep -q "$dep" <<<"$depends" || { echo "Depends lacks $dep: $depends"; exit 1; }
done
# The packaged unit is the hardened one from the source tree (check-unit-security.sh rates it).
dpkg-deb -x "$deb" "$out/root"
source_dir=$(dirname "$0")/../..
cmp -s "$out/root/usr/lib/systemd/system/framemill.service" "$source_dir/systemd/framemill.service" ||
  { echo "the packaged unit differs from systemd/framemill.service"; exit 1; }
dpkg-deb -e "$deb" "$out/control"
grep -q "systemctl enable framemill.service" "$out/control/postinst" || { echo "postinst does not enable the service"; exit 1; }
echo "package ok: $(basename "$deb"), Depends: $depends"
