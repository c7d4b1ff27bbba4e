#!/usr/bin/env bash
# CI: the test suite under the sanitizers.
#
#   scripts/ci-sanitizers.sh [asan|tsan|all]      (default: all)
#
# asan  AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer):
#       builds EVERYTHING with scripts/setup.sh and runs ALL of ctest.
# tsan  ThreadSanitizer: builds and runs the thread-heavy subset only:
#         core.*, cpu.*, forward.*, fusion.*, hardening.*, capture.* (stress included,
#         scaled to 5,000 windows per thread under TSan), and the
#         conformance suite on cpu, fusion and forward stacks over them,
#         and the Vulkan plugin's stream lock (vulkan.stream lock: *, no
#         device).
#       Left out, and why: the rest of vulkan.* and conformance.vulkan* (lavapipe is
#       uninstrumented, its worker threads are invisible to TSan, and it is
#       ~10x slower instrumented), cuda.* (no driver here; the fake-driver
#       tests are single-threaded logic already covered by asan), tools.*
#       and bench.* (no threads of their own beyond what the core tests
#       cover), hardening.validate_* (fork() from a TSan process).
#
# Budget: CI must finish in 60 minutes on 2 cores. Measured orders of
# magnitude on a 2-core VM: asan build ~15 min + suite ~8 min; tsan subset
# build ~8 min + run ~5 min. The fuzzers are scripts/ci-fuzz.sh.
#
# Environment: LAPSE_ASAN_DIR, LAPSE_TSAN_DIR (build folders, default
# build-asan / build-tsan), LAPSE_JOBS (build jobs), LAPSE_TEST_JOBS
# (ctest jobs, default 2).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
what=${1:-all}
asan_dir=${LAPSE_ASAN_DIR:-"$here/build-asan"}
tsan_dir=${LAPSE_TSAN_DIR:-"$here/build-tsan"}
test_jobs=${LAPSE_TEST_JOBS:-2}

# lavapipe without its worker pool (see scripts/test.sh).
export LP_NUM_THREADS=${LP_NUM_THREADS:-0}

lavapipe_via_core='^conformance\.vulkan|^vulkan\.lapse_run_gpu_phase$|^c_host\.window_rules\.vulkan'

# intercept_tls_get_addr=0: GCC 12's sanitizer runtime (Debian 12's)
# intercepts __tls_get_addr to record each thread's dynamic TLS blocks
# for LeakSanitizer to scan, and takes a block whose address is 16 bytes
# past a page boundary for one with a glibc 2.19 header: it reads the two
# words before the block as that block's start and size. No glibc since
# 2.25 writes that header, so when a malloc'd TLS block (Mesa's drivers
# and prometheus-cpp use dynamic TLS) lands at that offset by chance, the
# leak check at exit scans a made-up range ("DTLS 7 at
# 0x000000002101-0x002800003203") and its tracer dies ("Tracer caught
# signal 11 ... LeakSanitizer has encountered a fatal error") after every
# assertion passed. The heap's layout decides which tests hit it (two
# Vulkan device tests did, deterministically, once own mode mapped a
# buffer per stream). Newer runtimes dropped that header; here the
# interceptor is turned off. The leak check still sees what those blocks
# point to: glibc's vector of them is a heap block reached from the
# thread's static TLS, which is still scanned. Checked both ways: the
# suite shows no leak with the flag, and a 64-byte leak planted in the
# Vulkan plugin fails every device test that reaches it, with the flag as
# without it.
asan_options='detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:intercept_tls_get_addr=0'

run_asan() {
    echo "== lapse: AddressSanitizer + UndefinedBehaviorSanitizer: build everything =="
    LAPSE_SETUP_TESTS=1 "$here/scripts/setup.sh" "$asan_dir" -DLAPSE_SANITIZE="address;undefined" -DLAPSE_BUILD_BENCHMARKS=OFF
    echo "== lapse: AddressSanitizer + UndefinedBehaviorSanitizer: all of ctest =="
    # halt_on_error: the first report fails the test (the build also uses
    # -fno-sanitize-recover=all for UBSan). Leaks fail too, except the
    # third-party ones listed in lsan.supp.
    ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_options} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/tests/hardening/sanitizers/lsan.supp:print_suppressions=0} \
        ctest --test-dir "$asan_dir" --output-on-failure -j "$test_jobs" --timeout 900 -E "$lavapipe_via_core"
    # $lavapipe_via_core open lavapipe through the core, which unloads the
    # driver when the device closes: lavapipe's own per-instance leak then
    # has no module name for lsan.supp to match (tests/vulkan keeps the
    # driver loaded for that reason). Everything else about them stays
    # checked.
    ASAN_OPTIONS=${ASAN_OPTIONS:-${asan_options/detect_leaks=1/detect_leaks=0}} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        ctest --test-dir "$asan_dir" --output-on-failure -j "$test_jobs" --timeout 900 -R "$lavapipe_via_core"
}

tsan_targets=(lapse_cpu lapse_forward lapse_fusion core_tests cpu_tests forward_tests fusion_tests
              hardening_tests hardening_stress conformance_suite capture_tests capture_instructions
              capture_placement vulkan_unit_tests)
tsan_tests='^(core|cpu|forward|fusion|hardening|capture)\.|^conformance\.(cpu_|forward_cpu|forward_forward|forward_fusion|fusion_|forward_single)|^vulkan\.stream lock: '

# Left out of the subset as well: core.lapse_run_*, forward.lapse_run_* and
# capture's tools and report cases need the lapse executable (not in
# tsan_targets); capture's SIGKILL case forks (as validate does); forward's
# single-window split-thread case checks a
# 5% timing tolerance that TSan's 5-15x slowdown of the worker makes
# meaningless (its thread safety is covered by the other forward cases).
tsan_excluded='^hardening\.validate_|^core\.lapse_run_|^forward\.lapse_run_|^capture\.tools: |^capture\.report_|^capture\.a host SIGKILLed|^forward\.forward over single_window: a window may end on another thread$'

run_tsan() {
    echo "== lapse: ThreadSanitizer: build the thread-heavy subset =="
    # Not scripts/setup.sh: it builds every target, and half of them
    # (Vulkan, CUDA, tools, benchmarks) are not run under TSan.
    cmake -S "$here" -B "$tsan_dir" -G Ninja -DLAPSE_SANITIZE=thread -DLAPSE_BUILD_BENCHMARKS=OFF
    cmake --build "$tsan_dir" -j "${LAPSE_JOBS:-$(nproc)}" --target "${tsan_targets[@]}"
    echo "== lapse: ThreadSanitizer: $tsan_tests =="
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
        ctest --test-dir "$tsan_dir" --output-on-failure -j "$test_jobs" --timeout 900 \
              -R "$tsan_tests" -E "$tsan_excluded"
}

case "$what" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    all) run_asan; run_tsan ;;
    *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;;
esac
