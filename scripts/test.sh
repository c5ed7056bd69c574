#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (unit and integration) with ctest.
# Tests run one at a time: several of them check that no framemill shared memory or worker
# process is left on the machine, which a concurrent test would disturb.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir "${FRAMEMILL_BUILD_DIR:-build}" --output-on-failure
