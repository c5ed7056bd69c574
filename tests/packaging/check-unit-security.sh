#!/usr/bin/env bash
# Checks the systemd unit: `systemd-analyze verify` accepts it without a single warning, the
# NVIDIA devices stay reachable, and `systemd-analyze security --offline=yes` rates its exposure
# at or below the limit (default 2.5).
# Usage: check-unit-security.sh UNIT_FILE FRAMEMILL_BINARY [MAX_EXPOSURE]
# Exits 77 (skipped) where systemd-analyze is not installed or too old for --offline (< 252).
set -euo pipefail
unit=$1
binary=$2
max_exposure=${3:-2.5}

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed (Debian package systemd)"
  exit 77
fi
version=$(systemd-analyze --version | awk 'NR == 1 { print $2 }')
if ((version < 252)); then
  echo "SKIP: systemd $version has no 'systemd-analyze security --offline' (needs 252)"
  exit 77
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# verify checks that ExecStart's binary exists: point it at the one just built, under the
# unit's own name (verify derives the unit's type and name from the file name).
sed "s|^ExecStart=/usr/bin/framemill |ExecStart=$binary |" "$unit" >"$scratch/framemill.service"
grep -q "^ExecStart=$binary " "$scratch/framemill.service" ||
  { echo "FAIL: no 'ExecStart=/usr/bin/framemill ' line in $unit"; exit 1; }
# verify exits 0 on unknown keys and bad values (it only warns): any output is a failure.
if ! verify_out=$(systemd-analyze verify "$scratch/framemill.service" 2>&1) || [[ -n $verify_out ]]; then
  echo "FAIL: systemd-analyze verify complains about $unit:"
  echo "$verify_out"
  exit 1
fi
echo "verify: no complaints"

# The GPU must stay usable whatever the score: the NVIDIA device classes allowed (major 195 is
# "nvidia"/"nvidiactl" in current drivers, "nvidia-frontend" in older ones; CUDA opens the caps
# nodes read-only), and none of the settings that would hide the devices or /proc/driver/nvidia or
# forbid the W+X memory of LibTorch's and CUDA's JIT.
for line in "DeviceAllow=char-nvidia rw" "DeviceAllow=char-nvidiactl rw" \
            "DeviceAllow=char-nvidia-frontend rw" "DeviceAllow=char-nvidia-uvm rw" \
            "DeviceAllow=char-nvidia-caps r"; do
  grep -qx "$line" "$unit" || { echo "FAIL: the unit lacks '$line' (the GPU would be closed)"; exit 1; }
done
for bad in "PrivateDevices=yes" "ProcSubset=pid" "MemoryDenyWriteExecute=yes"; do
  if grep -qx "$bad" "$unit"; then
    echo "FAIL: the unit sets $bad, which breaks CUDA (see the unit's comments)"
    exit 1
  fi
done

report=$(systemd-analyze security --offline=yes "$unit" 2>&1) || true
line=$(grep 'Overall exposure level' <<<"$report" || true)
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\) .*/\1/p' <<<"$line")
if [[ -z $score ]]; then
  echo "FAIL: no exposure score in the output of systemd-analyze security:"
  echo "$report"
  exit 1
fi
# Every setting still counted against the unit, so a failure says what to look at.
grep '✗' <<<"$report" | sed 's/  */ /g' || true
echo "$line"
if awk -v s="$score" -v m="$max_exposure" 'BEGIN { exit !(s > m) }'; then
  echo "FAIL: exposure $score is above $max_exposure"
  exit 1
fi
echo "exposure $score <= $max_exposure"
