#!/usr/bin/env bash
# Instructions per window start+end, counted by callgrind: the stable
# evidence behind the window figures of `lapse bench`, whose wall-clock
# ratios move by 2x on a shared 2-core machine. Prints the instructions per
# window on each path and the ratios the issue's targets are stated in:
# C++ API over C ABI, one forward layer over the bare plugin, and two
# layers per layer (the square root of their ratio), through the C++ API
# (which calls past a layer that adds nothing: lapse/dispatch.h) and
# through the C ABI. Then the instructions per window of a resolve: the C
# ABI's full and compact resolves and Device::resolve over a span.
#
# Usage: scripts/bench-instructions.sh [BUILD_DIR]   (default: build-bench)
#
# Builds bench_window_instructions and bench_resolve_instructions there
# (RelWithDebInfo, benchmarks on) if the directory has no build yet. Needs
# valgrind (apt-get install valgrind).
# Exit codes: 0 printed, 1 a run failed, 4 valgrind is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-"$here/build-bench"}

if ! command -v valgrind >/dev/null; then
    echo "bench-instructions: valgrind not found (apt-get install valgrind)" >&2
    exit 4
fi
if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLAPSE_BUILD_BENCHMARKS=ON >/dev/null
fi
ninja -C "$build" bench_window_instructions bench_resolve_instructions >/dev/null

windows=60000  # 3 rounds of 20000 (window_instructions.cpp)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Instructions callgrind counted inside FUNCTION (a name its
# --toggle-collect matches) while PROGRAM ran PATH; exits the script when
# the run failed or counted nothing.
counted() {
    local program=$1 path=$2 function=$3 log="$out/$2.log" collected
    if ! valgrind --tool=callgrind --callgrind-out-file="$out/$path.out" \
        --toggle-collect="*$function*" "$build/bin/$program" "$path" >"$log" 2>&1; then
        echo "bench-instructions: $program $path failed:" >&2
        cat "$log" >&2
        exit 1
    fi
    collected=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log")
    if [[ -z "$collected" || "$collected" == 0 ]]; then
        echo "bench-instructions: $program $path: callgrind counted nothing (was $function inlined?)" >&2
        exit 1
    fi
    echo "$collected"
}

declare -A per_window
for path in c_abi cpp_api forward1 forward2 cpp_forward1 cpp_forward2; do
    collected=$(counted bench_window_instructions "$path" lapse_counted_windows)
    per_window[$path]=$((collected / windows))
done

awk -v c="${per_window[c_abi]}" -v cpp="${per_window[cpp_api]}" \
    -v f1="${per_window[forward1]}" -v f2="${per_window[forward2]}" \
    -v cf1="${per_window[cpp_forward1]}" -v cf2="${per_window[cpp_forward2]}" 'BEGIN {
    printf "instructions per window start+end (callgrind, %s)\n", "60000 windows each"
    printf "  %-28s %6d\n", "C ABI, cpu plugin", c
    printf "  %-28s %6d\n", "C++ API", cpp
    printf "  %-28s %6d\n", "C ABI, 1 forward layer", f1
    printf "  %-28s %6d\n", "C ABI, 2 forward layers", f2
    printf "  %-28s %6d\n", "C++ API, 1 forward layer", cf1
    printf "  %-28s %6d\n", "C++ API, 2 forward layers", cf2
    printf "ratios (targets are wall-clock; see docs/performance.md)\n"
    printf "  %-34s %6.3fx  (target <= 1.1x)\n", "C++ API / C ABI", cpp / c
    printf "  %-34s %6.3fx  (target <= 1.1x)\n", "C++ API: 1 forward layer / bare", cf1 / cpp
    printf "  %-34s %6.3fx  (target <= 1.1x)\n", "C++ API: 2 layers, per layer", sqrt(cf2 / cpp)
    printf "  %-34s %6.3fx  (reported)\n", "C ABI: 1 forward layer / bare", f1 / c
    printf "  %-34s %6.3fx  (reported)\n", "C ABI: 2 layers, per layer", sqrt(f2 / c)
}'

# Resolve: instructions per window of a synced batch (resolve_instructions.cpp:
# 40 rounds of 1,024), the C ABI's full and compact resolves and
# Device::resolve over a span (cpp_resolve_vs_c_resolve compares the last
# with the first).
resolve_windows=40960
echo "instructions per window resolved (callgrind, $resolve_windows windows each)"
for path in c_full c_compact cpp_span; do
    collected=$(counted bench_resolve_instructions "$path" lapse_counted_resolve)
    awk -v p="$path" -v n="$collected" -v w="$resolve_windows" 'BEGIN { printf "  %-28s %6.1f\n", p, n / w }'
done
