#!/usr/bin/env bash
# Set everything up and run the whole test suite through ctest.
# Usage: scripts/test.sh [BUILD_DIR] [cmake args...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-"$here/build"}
shift || true
LAPSE_SETUP_TESTS=1 "$here/scripts/setup.sh" "$build_dir" "$@"
# lavapipe runs its work on the calling thread with no worker pool: timestamp
# writes then cost microseconds instead of a pipeline flush (see ARCHITECTURE).
export LP_NUM_THREADS=${LP_NUM_THREADS:-0}
ctest --test-dir "$build_dir" --output-on-failure -j "${LAPSE_TEST_JOBS:-2}" --timeout 300
