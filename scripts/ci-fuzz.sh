#!/usr/bin/env bash
# CI: build the libFuzzer targets with clang (-fsanitize=fuzzer + ASan +
# UBSan, every library coverage-instrumented) and run each for a bounded
# time. Fails on any crash, sanitizer report, leak, timeout or OOM.
#
#   scripts/ci-fuzz.sh [TARGET...]      (default: fuzz_config fuzz_session fuzz_capture)
#
# Environment:
#   LAPSE_FUZZ_SECONDS  seconds per target (default 60)
#   LAPSE_FUZZ_DIR      build folder (default build-fuzz)
#   LAPSE_JOBS          build jobs (default: nproc)
# The seed corpus (tests/fuzz/corpus/<config|session|capture>) is copied into the
# build folder first, so new inputs never dirty the repository; crashing
# inputs are kept as $LAPSE_FUZZ_DIR/fuzz-artifacts/<target>-crash-*.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${LAPSE_FUZZ_DIR:-"$here/build-fuzz"}
seconds=${LAPSE_FUZZ_SECONDS:-60}
targets=("$@")
((${#targets[@]})) || targets=(fuzz_config fuzz_session fuzz_capture)

for tool in clang clang++; do
    command -v "$tool" >/dev/null || {
        echo "lapse fuzz: $tool not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
        exit 1
    }
done

echo "== lapse: fuzzers: build (clang, fuzzer + address + undefined) =="
cmake -S "$here" -B "$build_dir" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
    -DLAPSE_SANITIZE="address;undefined" -DLAPSE_BUILD_FUZZERS=ON -DLAPSE_BUILD_BENCHMARKS=OFF
cmake --build "$build_dir" -j "${LAPSE_JOBS:-$(nproc)}" --target "${targets[@]}" lapse_cpu

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
mkdir -p "$build_dir/fuzz-artifacts"
for target in "${targets[@]}"; do
    seeds="$here/tests/fuzz/corpus/${target#fuzz_}"
    work="$build_dir/fuzz-corpus/$target"
    mkdir -p "$work"
    [ -d "$seeds" ] && cp -n "$seeds"/* "$work"/ 2>/dev/null || true
    echo "== lapse: $target for ${seconds}s (seeds: ${seeds#$here/}) =="
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: an input
    # that makes the loader allocate 2 GiB is a bug (loading is bounded).
    if ! "$build_dir/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$build_dir/fuzz-artifacts/$target-" "$work"; then
        echo "lapse fuzz: $target FAILED; reproduce with: $build_dir/bin/$target <artifact>" >&2
        ls -1 "$build_dir/fuzz-artifacts/" | grep "^$target-" >&2 || true
        status=1
    fi
done
exit $status
