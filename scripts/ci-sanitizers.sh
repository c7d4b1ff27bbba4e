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
# tests/vulkan's vulkan_core_tests ('vulkan.core.*'), the one binary there
# that loads liblapse_core (prometheus-cpp's static TLS with it) beside
# Mesa's drivers: in CI, LeakSanitizer (GCC 12's, on Debian 12's glibc)
# misread an entry of the main thread's dynamic-TLS vector in such a
# process and its tracer crashed at exit ("Tracer caught signal 11 ...
# LeakSanitizer has encountered a fatal error") after every assertion
# passed, with use_tls=0 too. Not reproduced on a 2-core dev VM (these
# tests passed there with the leak check), so it stays off for them until
# CI shows it gone. The plugin-level binaries (vulkan_plugin_tests,
# vulkan_unit_tests: no core library) run with the leak check.
core_beside_lavapipe='^vulkan\.core\.'
lavapipe_no_leak_check="$lavapipe_via_core|$core_beside_lavapipe"
# The same tracer crash, at exit after every assertion passed, hit two of
# the plugin-level device tests (vulkan_plugin_tests, ctest label
# lavapipe_device) once own mode began allocating and mapping a
# host-visible buffer per stream for the queue's stamp copies: "DTLS 7 at
# 0x000000002101-0x002800003203", a dynamic-TLS entry of the main thread
# that is no TLS block. It is deterministic per test and moves with the
# heap's layout (allocating the buffer and freeing it crashes; allocating,
# binding and freeing does not), which points at this LeakSanitizer's
# handling of the TLS descriptors Mesa's drivers use rather than at a
# leak. So the device tests run without the exit-time leak check too;
# ASan and UBSan stay on for them, and vulkan_unit_tests (no device) keep
# the leak check.
lavapipe_device_label='lavapipe_device'

run_asan() {
    echo "== lapse: AddressSanitizer + UndefinedBehaviorSanitizer: build everything =="
    LAPSE_SETUP_TESTS=1 "$here/scripts/setup.sh" "$asan_dir" -DLAPSE_SANITIZE="address;undefined" -DLAPSE_BUILD_BENCHMARKS=OFF
    echo "== lapse: AddressSanitizer + UndefinedBehaviorSanitizer: all of ctest =="
    # halt_on_error: the first report fails the test (the build also uses
    # -fno-sanitize-recover=all for UBSan). Leaks fail too, except the
    # third-party ones listed in lsan.supp.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/tests/hardening/sanitizers/lsan.supp:print_suppressions=0} \
        ctest --test-dir "$asan_dir" --output-on-failure -j "$test_jobs" --timeout 900 -E "$lavapipe_no_leak_check" \
        -LE "$lavapipe_device_label"
    # $lavapipe_via_core open lavapipe through the core, which unloads the
    # driver when the device closes: lavapipe's own per-instance leak then
    # has no module name for lsan.supp to match (tests/vulkan keeps the
    # driver loaded for that reason). $core_beside_lavapipe: see above.
    # Everything else about them stays checked.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:detect_stack_use_after_return=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        ctest --test-dir "$asan_dir" --output-on-failure -j "$test_jobs" --timeout 900 -R "$lavapipe_no_leak_check"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:detect_stack_use_after_return=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        ctest --test-dir "$asan_dir" --output-on-failure -j "$test_jobs" --timeout 900 -L "$lavapipe_device_label"
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
