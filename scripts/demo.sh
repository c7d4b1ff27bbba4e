#!/usr/bin/env bash
# The main job: set everything up, then profile the built-in demo workload on
# the default backend (the CPU plugin). Extra arguments go to `lapse run`,
# e.g. scripts/demo.sh --config examples/vulkan.toml
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Only what the demo runs (the command and the plugins): the tests and
# benchmarks are built by scripts/test.sh.
LAPSE_TARGETS=lapse_product "$here/scripts/setup.sh" "$here/build" >&2
exec "$here/build/bin/lapse" run "$@"
