#!/usr/bin/env bash
# Installs what lapse needs on Debian 12 (only the packages that are missing),
# then configures and builds it. Usage: scripts/setup.sh [BUILD_DIR] [cmake args...]
# Environment: LAPSE_SETUP_TESTS=1 (also install what the tests run against);
# LAPSE_JOBS (parallel build jobs, default: nproc);
# LAPSE_TARGETS (what to build, default: everything; scripts/demo.sh builds
# only lapse_product, the command and the plugins).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-"$here/build"}
shift || true

packages=(
  g++ cmake ninja-build pkg-config git libssl-dev
  libboost-dev libboost-serialization-dev
  libspdlog-dev libfmt-dev catch2 libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
  libbenchmark-dev
  libvulkan-dev glslc spirv-tools vulkan-validationlayers vulkan-tools mesa-vulkan-drivers
  clang libclang-rt-14-dev
  libprotobuf-dev protobuf-compiler prometheus-cpp-dev
  libjs-d3 libjs-chart.js
  python3-dev pybind11-dev python3-numpy
)
# What only the test suite runs against (real servers and browsers, never
# doubles): installed when scripts/test.sh asks (LAPSE_SETUP_TESTS=1), so
# the demo's first run stays quick.
if [ "${LAPSE_SETUP_TESTS:-0}" = 1 ]; then
  packages+=(valgrind python3-pytest prometheus chromium)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "lapse setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "lapse setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S "$here" -B "$build_dir" -G Ninja "$@"
targets=()
for t in ${LAPSE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "${LAPSE_JOBS:-$(nproc)}" "${targets[@]}"
