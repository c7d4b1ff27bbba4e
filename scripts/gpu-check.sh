#!/usr/bin/env bash
# The proof on real hardware, in one command and under five minutes: builds
# what the CUDA plugin's checks need and runs them on the machine's NVIDIA
# driver, then prints one line per check (PASS / FAIL / SKIP and why):
#   - the driver library (libcuda.so.1 of this machine's architecture) and
#     the device the plugin opened (ordinal and name; CUDA numbers devices
#     fastest first, nvidia-smi by PCI bus: both are shown);
#   - the GPU program (tests/cuda/gpu_test.cpp): the window rules in both
#     submit modes, a kernel of known length read within 2 % and placed on
#     the host clock within 50 us, nested windows on two streams, a host-owned
#     stream, the anchor with 10 busy streams, two GPUs when present,
#     cuda_window_vs_two_event_records <= 1.5x, a real device fault;
#   - the plugin's suite over the driver test double (when Catch2 is there);
#   - with the full project: `lapse bench` on the CUDA config, the
#     conformance suite on configs/cuda*.toml, and the Vulkan plugin's tests
#     on the NVIDIA Vulkan driver. Each is skipped, with the reason, when
#     its dependencies are missing or the time budget is spent.
#
# Usage: scripts/gpu-check.sh [BUILD_DIR]        (default: build-gpu-check)
#
# Exit codes:
#   0  everything that ran passed
#   1  a check failed -- including a driver or GPU that is here and does not
#      work (a CUDA error while opening, nvidia-smi listing GPUs that CUDA
#      cannot see, a libcuda.so.1 of another architecture only)
#   3  no NVIDIA GPU/driver on this machine: no libcuda.so.1 and no GPU that
#      nvidia-smi lists, or the plugin's own verdict "unavailable" (no
#      device, the toolkit's stub library) with nvidia-smi listing none (an
#      nvidia-smi that is installed and fails is a FAIL: a broken driver)
#   4  a build dependency is missing (the message names the Debian package)
#   5  the build failed
#
# The machine may have no network: nothing is downloaded.
#
# LAPSE_CUDA_DRIVER=/path/to/libcuda.so.1 uses that driver instead of the
# system's (also how this script is tried without a GPU, over the driver
# test double: LAPSE_CUDA_DRIVER=<build>/tests/cuda/libfake_cuda_driver.so;
# the full-project checks are skipped then).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-"$here/build-gpu-check"}
case $build in /*) ;; *) build="$PWD/$build" ;; esac
t_begin=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 2)
results=()
overall=0
elapsed() { echo $(( $(date +%s) - t_begin )); }
# One line per check: result STATUS NAME [DETAIL]
result() {
  local status=$1 name=$2 detail=${3:-}
  results+=("$(printf '%-4s  %s%s' "$status" "$name" "${detail:+ -- $detail}")")
  if [ "$status" = FAIL ]; then overall=1; fi
}
summary() {
  echo
  echo "== lapse GPU check: $(elapsed) s =="
  printf '%s\n' "${results[@]}"
  echo "result: $1"
}
finish() {  # finish EXIT_CODE VERDICT
  summary "$2"
  exit "$1"
}

echo "== lapse GPU check ($(date -u +%FT%TZ), $(uname -n), $(uname -m)) =="

# --- what nvidia-smi says (context for every verdict; never a verdict alone) --
# An nvidia-smi that is installed and fails means a driver install that is
# broken, not a machine without a GPU.
smi_gpus=0
smi_failed=no
smi_text="nvidia-smi: not installed"
if command -v nvidia-smi >/dev/null 2>&1; then
  if smi_text=$(timeout 30 nvidia-smi -L 2>&1); then
    smi_gpus=$(printf '%s\n' "$smi_text" | grep -c '^GPU [0-9]')
  else
    smi_failed=yes
  fi
  smi_text="nvidia-smi -L: $(printf '%s' "$smi_text" | tr '\n' ';' | sed 's/;$//')"
fi
show_smi() {
  echo "  $smi_text"
  if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 30 nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_mode,mig.mode.current \
      --format=csv 2>&1 | sed 's/^/  nvidia-smi: /'
  fi
}
echo "$smi_text"

# --- 1. the driver library, of this machine's architecture ------------------
# ldconfig -p tags each library with its ABI, e.g. "(libc6,x86-64)"; a
# 32-bit or foreign libcuda.so.1 beside the right one must not be picked.
# The ELF header is checked as well (class 64, e_machine).
case $(uname -m) in
  x86_64) ld_tag="x86-64"; elf_machine=62 ;;
  aarch64) ld_tag="AArch64"; elf_machine=183 ;;
  ppc64le) ld_tag="64bit"; elf_machine=21 ;;
  *) ld_tag="$(uname -m)"; elf_machine="" ;;
esac
elf_ok() {  # elf_ok FILE: a 64-bit ELF shared object for this machine
  local f=$1 magic class machine
  [ -r "$f" ] || return 1
  magic=$(od -An -c -N4 "$f" 2>/dev/null | tr -d ' ')
  [ "$magic" = '177ELF' ] || return 1
  class=$(od -An -tu1 -j4 -N1 "$f" 2>/dev/null | tr -d ' ')
  [ "$class" = 2 ] || return 1
  [ -z "$elf_machine" ] && return 0
  machine=$(od -An -tu2 -j18 -N2 "$f" 2>/dev/null | tr -d ' ')
  [ "$machine" = "$elf_machine" ]
}
driver=${LAPSE_CUDA_DRIVER:-}
foreign=()
if [ -z "$driver" ]; then
  ld_list=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | grep 'libcuda\.so\.1 ')
  while read -r line; do
    [ -n "$line" ] || continue
    path=${line##*=> }
    if [[ $line == *"$ld_tag"* ]] && elf_ok "$path"; then driver=$path; break; fi
    foreign+=("$path (${line#*(}")
  done <<< "$ld_list"
  if [ -z "$driver" ]; then
    for candidate in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib/aarch64-linux-gnu/libcuda.so.1 \
        /usr/lib64/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1; do
      if [ -e "$candidate" ]; then
        if elf_ok "$candidate"; then driver=$candidate; break; fi
        foreign+=("$candidate (not a 64-bit ELF for $(uname -m))")
      fi
    done
  fi
fi
if [ -z "$driver" ] || [ ! -e "$driver" ]; then
  if [ "$smi_gpus" -gt 0 ] || [ "$smi_failed" = yes ] || [ ${#foreign[@]} -gt 0 ]; then
    echo "FAIL: a GPU or a driver is here, but no libcuda.so.1 for $(uname -m) ($ld_tag):"
    [ ${#foreign[@]} -gt 0 ] && printf '  found only: %s\n' "${foreign[@]}"
    show_smi
    result FAIL "driver library" "no usable libcuda.so.1 for $(uname -m); $smi_text${foreign:+; ${#foreign[@]} foreign libcuda.so.1 found}"
    finish 1 FAIL
  fi
  echo "no NVIDIA GPU/driver found: libcuda.so.1 is not installed${driver:+ (LAPSE_CUDA_DRIVER=$driver does not exist)} and nvidia-smi lists no GPU."
  echo "Run this on a machine with an NVIDIA GPU and its driver (nvidia-smi should list the GPU)."
  result SKIP "everything" "no NVIDIA GPU/driver on this machine"
  finish 3 "NO GPU"
fi
if [ -z "${LAPSE_CUDA_DRIVER:-}" ] || elf_ok "$driver"; then
  result PASS "driver library" "$driver (64-bit ELF for $(uname -m))"
else
  result FAIL "driver library" "$driver is not a 64-bit ELF for $(uname -m)"
  finish 1 FAIL
fi
export LAPSE_CUDA_DRIVER="$driver"
over_double=no
case $(basename "$driver") in *fake_cuda_driver*) over_double=yes ;; esac

# --- 2. build dependencies (no network: say what is missing, do not fetch) ---
missing=()
command -v cmake >/dev/null 2>&1 || missing+=("cmake (Debian: cmake)")
compiler=${CXX:-}
[ -n "$compiler" ] || for c in g++ c++ clang++; do command -v $c >/dev/null 2>&1 && { compiler=$c; break; }; done
[ -n "$compiler" ] || missing+=("a C++20 compiler (Debian: g++)")
generator="Unix Makefiles"
command -v ninja >/dev/null 2>&1 && generator=Ninja
command -v make >/dev/null 2>&1 || [ "$generator" = Ninja ] || missing+=("ninja or make (Debian: ninja-build)")
# What FindCUDAToolkit needs: the headers, the runtime library, and either
# bin/nvcc or a version file in the root to recognise it by.
cuda_root="" toolkit_why=""
for r in "${CUDAToolkit_ROOT:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/lib/cuda /usr; do
  [ -n "$r" ] && [ -d "$r" ] || continue
  lacks=()
  [ -e "$r/include/cuda.h" ] && [ -e "$r/include/cudaTypedefs.h" ] || lacks+=("include/cuda.h and cudaTypedefs.h")
  cudart=$(ls "$r"/lib64/libcudart.so* "$r"/lib/libcudart.so* "$r"/targets/*/lib/libcudart.so* \
              "$r"/lib/*-linux-gnu/libcudart.so* 2>/dev/null | head -n1)
  [ -n "$cudart" ] || lacks+=("the runtime library libcudart.so")
  [ -x "$r/bin/nvcc" ] || [ -e "$r/version.json" ] || [ -e "$r/version.txt" ] ||
    lacks+=("bin/nvcc (or version.json) by which FindCUDAToolkit recognises the root")
  if [ ${#lacks[@]} -eq 0 ]; then cuda_root=$r; break; fi
  [ -n "$toolkit_why" ] || toolkit_why="$r lacks: $(IFS=';'; echo "${lacks[*]}")"
done
[ -n "$cuda_root" ] || missing+=("the CUDA toolkit (Debian: nvidia-cuda-toolkit nvidia-cuda-dev; or /usr/local/cuda, or set CUDA_HOME)${toolkit_why:+: $toolkit_why}")
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing build dependencies:"
  printf '  - %s\n' "${missing[@]}"
  result FAIL "build dependencies" "missing: ${missing[*]}"
  finish 4 "MISSING DEPENDENCIES"
fi
result PASS "CUDA toolkit" "$cuda_root"

# --- 3. build only what the CUDA checks need -------------------------------
# A small CMake project over sdk/, plugins/cuda, tests/support and
# tests/cuda: no Boost, toml++, spdlog or Vulkan, which a bare GPU machine
# may lack. Catch2 is optional (it adds the test-double suite).
mkdir -p "$build/cuda-only"
cat > "$build/cuda-only/CMakeLists.txt" <<EOF
# generated by scripts/gpu-check.sh: the CUDA plugin and its tests only
cmake_minimum_required(VERSION 3.16)
project(lapse_gpu_check LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
include(GNUInstallDirs)
set(LAPSE_PLUGIN_OUTPUT_DIR \${CMAKE_BINARY_DIR}/lib/lapse)
set(LAPSE_PLUGIN_INSTALL_DIR \${CMAKE_INSTALL_LIBDIR}/lapse)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY \${CMAKE_BINARY_DIR}/bin)
add_subdirectory("$here/sdk" sdk)
add_subdirectory("$here/plugins/cuda" plugins/cuda)
enable_testing()
find_package(Catch2 2 QUIET)
if(Catch2_FOUND)
  include(Catch)
endif()
add_subdirectory("$here/tests/support" tests/support)
add_subdirectory("$here/tests/cuda" tests/cuda)
EOF
echo "-- building the CUDA plugin and the GPU program ($generator, $jobs jobs)"
log="$build/build.log"
if ! { timeout 120 cmake -S "$build/cuda-only" -B "$build/cuda-only/build" -G "$generator" \
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$compiler" -DCUDAToolkit_ROOT="$cuda_root" &&
       timeout 150 cmake --build "$build/cuda-only/build" -j "$jobs" --target lapse_cuda cuda_gpu_tests; } \
     >"$log" 2>&1; then
  tail -n 30 "$log"
  result FAIL "build" "the CUDA plugin or the GPU program did not build (full log: $log)"
  finish 5 "BUILD FAILED"
fi
bin="$build/cuda-only/build/bin"
if [ ! -x "$bin/cuda_gpu_tests" ]; then
  grep -i "cuda plugin is skipped" "$log"
  result FAIL "build" "the CUDA plugin was not built (full log: $log)"
  finish 5 "BUILD FAILED"
fi
result PASS "build" "cuda plugin + GPU program in $(elapsed) s"

# --- 4. the CUDA plugin on the driver: the GPU program ----------------------
echo "-- the GPU program on $driver"
gpu_log="$build/cuda_gpu_tests.log"
timeout 180 "$bin/cuda_gpu_tests" 2>&1 | tee "$gpu_log"
rc=${PIPESTATUS[0]}
if [ "$rc" = 77 ]; then
  reason=$(grep -m1 '^SKIP' "$gpu_log" | sed 's/^SKIP: no NVIDIA GPU\/driver found: //; s/^SKIP: //')
  # The plugin says "no usable device". That is "no GPU" only if nothing
  # else here says there is one.
  if [ "$smi_failed" = yes ]; then
    echo "FAIL: the plugin finds no usable GPU, and nvidia-smi is installed and fails: a broken driver, not \"no GPU\""
    show_smi
    result FAIL "cuda: open" "no usable GPU ($reason) and nvidia-smi fails: $smi_text"
    finish 1 FAIL
  fi
  if [ "$smi_gpus" -gt 0 ]; then
    echo "FAIL: nvidia-smi lists $smi_gpus GPU(s), but the plugin finds none usable: $reason"
    echo "  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-(unset)}"
    show_smi
    result FAIL "cuda: open" "nvidia-smi lists $smi_gpus GPU(s) but CUDA sees none usable: $reason"
    finish 1 FAIL
  fi
  echo "no NVIDIA GPU/driver found: $reason"
  result SKIP "cuda (GPU)" "no usable NVIDIA GPU: $reason"
  finish 3 "NO GPU"
fi
# Which device the plugin opened (ordinal and name), beside nvidia-smi's list.
while read -r line; do
  result PASS "cuda: opened" "${line#device: }"
done < <(grep '^device: ' "$gpu_log")
[ "$smi_gpus" -gt 0 ] && result PASS "nvidia-smi" "$smi_text (CUDA orders fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID)"
if grep -q '^FAIL: opening' "$gpu_log"; then
  show_smi
  result FAIL "cuda: open" "$(grep -m1 '^FAIL: opening' "$gpu_log" | sed 's/^FAIL: //')"
fi
while read -r line; do
  status=${line:1:4}
  text=${line:7}
  result "$status" "cuda: ${text%% — *}" "$([[ $text == *" — "* ]] && echo "${text#* — }")"
done < <(grep -oE '\[(PASS|FAIL|SKIP)\] .*' "$gpu_log")
case $rc in
  0) ;;
  124) result FAIL "cuda (GPU)" "timed out after 180 s (see $gpu_log)" ;;
  1) grep -q '\[FAIL\]\|^FAIL' "$gpu_log" || result FAIL "cuda (GPU)" "exit 1 (see $gpu_log)" ;;
  *) result FAIL "cuda (GPU)" "exit $rc: crashed? (see $gpu_log)" ;;
esac
program_ratio=$(grep -oE 'cuda_window_vs_two_event_records: [0-9.]+x' "$gpu_log" | head -n1)

# --- 5. the plugin's suite over the driver test double (needs Catch2) ------
budget=$(( 200 - $(elapsed) ))
if ! cmake --build "$build/cuda-only/build" --target help 2>/dev/null | grep -q cuda_tests; then
  result SKIP "cuda (test double)" "Catch2 not installed (Debian: catch2)"
elif [ "$budget" -lt 20 ]; then
  result SKIP "cuda (test double)" "not enough of the 5-minute budget left ($(elapsed) s used)"
else
  timeout "$budget" cmake --build "$build/cuda-only/build" -j "$jobs" --target cuda_tests \
    >"$build/build-double.log" 2>&1
  b=$?
  if [ $b -eq 124 ]; then
    result SKIP "cuda (test double)" "building the suite did not finish in the ${budget} s of the budget left"
  elif [ $b -ne 0 ]; then
    result FAIL "cuda (test double)" "building the suite failed (see $build/build-double.log)"
  elif timeout 120 "$bin/cuda_tests" >"$build/cuda_tests.log" 2>&1; then
    result PASS "cuda (test double)" "$(grep -oE 'All tests passed.*' "$build/cuda_tests.log" | tail -n1)"
  else
    result FAIL "cuda (test double)" "see $build/cuda_tests.log"
  fi
fi

# --- 6. with the full project: lapse bench, conformance, Vulkan -----------
icd=""
for f in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
         /usr/share/vulkan/icd.d/nvidia_icd.x86_64.json /etc/vulkan/icd.d/nvidia_icd.x86_64.json; do
  [ -e "$f" ] && { icd=$f; break; }
done
full="$build/full"
full_ok=no
if [ "$over_double" = yes ]; then
  full_why="over the driver test double: the full-project checks need the real driver"
elif [ "$(elapsed)" -gt 170 ]; then
  full_why="not enough of the 5-minute budget left ($(elapsed) s used)"
elif ! timeout 60 cmake -S "$here" -B "$full" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
       -DLAPSE_BUILD_BENCHMARKS=ON -DCMAKE_CXX_COMPILER="$compiler" -DCUDAToolkit_ROOT="$cuda_root" \
       >"$build/full-configure.log" 2>&1; then
  reason=$(grep -m1 -E "Could NOT find|Could not find|not found|CMake Error" "$build/full-configure.log")
  full_why="the full project does not configure here: ${reason:-see $build/full-configure.log}"
else
  full_ok=yes
fi
targets_of() { cmake --build "$full" --target help 2>/dev/null | grep -oE "$1" | sort -u | tr '\n' ' '; }
build_full() {  # build_full LOG TARGET...: within what is left of the budget
  local log=$1; shift
  local left=$(( 270 - $(elapsed) ))
  [ "$left" -ge 20 ] || return 2
  timeout "$left" cmake --build "$full" -j "$jobs" --target "$@" >"$log" 2>&1
}

# lapse bench on the CUDA config: the figure the issue sets (<= 1.5x).
if [ "$full_ok" != yes ]; then
  result SKIP "lapse bench (cuda)" "$full_why${program_ratio:+; the GPU program measured $program_ratio}"
elif [ -z "$(targets_of '\blapse_bench_suite\b')" ]; then
  result SKIP "lapse bench (cuda)" "lapse bench is not built here (Google Benchmark missing; Debian: libbenchmark-dev)${program_ratio:+; the GPU program measured $program_ratio}"
else
  build_full "$build/full-build-lapse.log" lapse lapse_cuda; b=$?
  if [ $b -eq 2 ] || [ $b -eq 124 ]; then
    result SKIP "lapse bench (cuda)" "the 5-minute budget ran out building lapse${program_ratio:+; the GPU program measured $program_ratio}"
  elif [ $b -ne 0 ]; then
    result FAIL "lapse bench (cuda)" "building lapse failed (see $build/full-build-lapse.log)"
  else
    cfg="$build/bench_cuda.toml"
    printf '# generated by scripts/gpu-check.sh\n[backend]\nplugin = "cuda"\ndriver = "%s"\nstreams = 2\n' "$driver" >"$cfg"
    lapse_bin=$(find "$full" -type f -name lapse -perm -u+x | head -n1)
    json="$build/bench_cuda.json"
    # Only the CUDA figure (tools/lapse/bench/bench_cuda.cpp): the rest of
    # the suite is the CPU's business and would spend the budget.
    if ! timeout 90 "$lapse_bin" bench --config "$cfg" --quick --filter '^cuda_window_vs_two_event_records$' \
           --json "$json" >"$build/bench.log" 2>&1; then
      result FAIL "lapse bench (cuda)" "lapse bench failed (see $build/bench.log)"
    else
      ratio=$(grep -oE '"cuda_window_vs_two_event_records": *[0-9.eE+-]+' "$json" | head -n1 | sed 's/.*: *//')
      # Unmeasured, the figure's details carry why (its "note"): on a
      # machine whose GPU program ran, that is a failure, not "no GPU".
      why=$(grep -oE '"note": *"[^"]*"' "$json" | head -n1 | sed 's/^"note": *"//; s/"$//')
      if [ -z "$ratio" ]; then
        result FAIL "lapse bench (cuda)" "cuda_window_vs_two_event_records was not measured: ${why:-no figure of that name in $json}${program_ratio:+; the GPU program measured $program_ratio}"
      elif awk -v r="$ratio" 'BEGIN { exit !(r <= 1.5) }'; then
        result PASS "lapse bench (cuda)" "cuda_window_vs_two_event_records ${ratio}x <= 1.5x"
      else
        result FAIL "lapse bench (cuda)" "cuda_window_vs_two_event_records ${ratio}x > 1.5x (see $build/bench.log)"
      fi
    fi
  fi
fi

# The conformance suite on the real driver (configs/cuda*.toml: host mode;
# launch mode is the GPU program's, with kernels).
b=0
[ "$full_ok" = yes ] && { build_full "$build/full-build-conformance.log" conformance_suite lapse_cuda lapse_forward; b=$?; }
if [ "$full_ok" != yes ]; then
  result SKIP "conformance (cuda)" "$full_why"
elif [ $b -eq 2 ] || [ $b -eq 124 ]; then
  result SKIP "conformance (cuda)" "the 5-minute budget ran out building the suite"
elif [ $b -ne 0 ]; then
  result FAIL "conformance (cuda)" "building the suite failed (see $build/full-build-conformance.log)"
elif timeout $(( 290 - $(elapsed) > 10 ? 290 - $(elapsed) : 10 )) \
       ctest --test-dir "$full" -R '^conformance\.cuda(_forward)?$' --output-on-failure >"$build/conformance.log" 2>&1; then
  if grep -q 'Skipped' "$build/conformance.log"; then
    result FAIL "conformance (cuda)" "skipped on a machine whose GPU program ran: see $build/conformance.log"
  else
    result PASS "conformance (cuda)" "$(grep -m1 'tests passed' "$build/conformance.log")"
  fi
else
  result FAIL "conformance (cuda)" "see $build/conformance.log"
fi

# Vulkan on the NVIDIA Vulkan driver.
if [ -z "$icd" ]; then
  result SKIP "vulkan" "no NVIDIA Vulkan driver (nvidia_icd.json) on this machine"
elif [ "$full_ok" != yes ]; then
  result SKIP "vulkan" "$full_why"
else
  targets=$(targets_of '[A-Za-z0-9_]*vulkan[A-Za-z0-9_]*')
  # shellcheck disable=SC2086 # one target per word
  b=0
  [ -n "$targets" ] && { build_full "$build/full-build-vulkan.log" $targets conformance_suite; b=$?; }
  if [ -z "$targets" ]; then
    result SKIP "vulkan" "no Vulkan targets in the build"
  elif [ $b -eq 2 ] || [ $b -eq 124 ]; then
    result SKIP "vulkan" "the 5-minute budget ran out building the Vulkan targets"
  elif [ $b -ne 0 ]; then
    result FAIL "vulkan" "building the Vulkan targets failed (see $build/full-build-vulkan.log)"
  elif VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd" timeout $(( 295 - $(elapsed) > 10 ? 295 - $(elapsed) : 10 )) \
         ctest --test-dir "$full" -R vulkan -j 2 --output-on-failure >"$build/vulkan.log" 2>&1; then
    result PASS "vulkan" "$(grep -m1 'tests passed' "$build/vulkan.log"); on $icd"
  else
    result FAIL "vulkan" "see $build/vulkan.log"
  fi
fi

finish $overall "$([ $overall -eq 0 ] && echo PASS || echo FAIL)"
