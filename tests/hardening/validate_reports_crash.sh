#!/usr/bin/env bash
# ctest driver: `lapse validate` on a plugin that crashes (SIGSEGV) when a
# device is opened must report the crash from its child process and end
# normally itself with "a check failed" (exit 1), not die.
#   validate_reports_crash.sh LAPSE_EXECUTABLE CRASHING_PLUGIN
# Exits 77 (ctest: skipped) while `lapse` has no validate subcommand.
set -u
lapse=$1
plugin=$2
if ! "$lapse" --help 2>&1 | grep -Eq '^ +validate( |$)'; then
    echo "SKIP: this build's lapse has no 'validate' subcommand yet"
    exit 77
fi
# The sanitizers' SEGV handlers would turn the child's signal into an exit
# code; the kernel's verdict is what validate must report.
export ASAN_OPTIONS=handle_segv=0:detect_leaks=0 UBSAN_OPTIONS=handle_segv=0 TSAN_OPTIONS=handle_segv=0
out=$("$lapse" validate "$plugin" 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$status" -ne 1 ]; then
    echo "FAIL: lapse validate exited $status, expected 1 (a check failed) from a tool that survived the crash"
    exit 1
fi
if ! grep -q 'crashed: SIGSEGV' <<<"$out"; then
    echo "FAIL: no check reported 'crashed: SIGSEGV'"
    exit 1
fi
echo "PASS: the crash was reported and validate survived it"
