#!/usr/bin/env bash
# `lapse bench`'s CUDA figure (cuda_window_vs_two_event_records), both ways:
#   check_cuda_figure.sh LAPSE unavailable
#       the CPU subject on a machine without libcuda.so.1: the figure is
#       reported unavailable with the driver's reason, and the bench still
#       succeeds (skips, 77, where a CUDA driver is installed);
#   check_cuda_figure.sh LAPSE double FAKE_DRIVER
#       the cuda plugin over the project's driver TEST DOUBLE: the figure is
#       measured (a number), reported rather than held to 1.5x.
set -euo pipefail
lapse=$1 mode=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
key=cuda_window_vs_two_event_records
args=(bench --quick --rounds 1 --filter "^${key}\$" --json "$work/out.json")

case $mode in
  unavailable)
    if (ldconfig -p 2>/dev/null || true) | grep -q 'libcuda\.so\.1 '; then
      echo "a CUDA driver is installed here: the figure may be measured; nothing to check"
      exit 77
    fi
    "$lapse" "${args[@]}" >"$work/log" 2>&1 || { cat "$work/log"; echo "FAIL: lapse bench failed"; exit 1; }
    ;;
  double)
    printf '[backend]\nplugin = "cuda"\ndriver = "%s"\nstreams = 2\n' "$3" >"$work/cuda.toml"
    "$lapse" "${args[@]}" --config "$work/cuda.toml" >"$work/log" 2>&1 ||
      { cat "$work/log"; echo "FAIL: lapse bench failed"; exit 1; }
    ;;
  *) echo "usage: $0 LAPSE unavailable|double [FAKE_DRIVER]" >&2; exit 2 ;;
esac
cat "$work/log"
python3 - "$work/out.json" "$mode" "$key" <<'PY'
import json, sys
path, mode, key = sys.argv[1:]
j = json.load(open(path))
d = j.get("details", {}).get(key)
if d is None:
    sys.exit(f"FAIL: the bench has no figure {key}")
if mode == "unavailable":
    note = d.get("note", "")
    if key in j or d.get("result") != "n/a":
        sys.exit(f"FAIL: {key} should be unavailable here, got {j.get(key)} ({d})")
    for part in ("no CUDA device to measure", "libcuda.so.1"):
        if part not in note:
            sys.exit(f"FAIL: the note does not say why ({part!r} missing): {note!r}")
    print(f"PASS: {key} unavailable: {note}")
else:
    v = j.get(key)
    if not isinstance(v, (int, float)) or v <= 0:
        sys.exit(f"FAIL: {key} was not measured over the test double: {d}")
    if d.get("target") != "report":
        sys.exit(f"FAIL: over the test double the figure must be reported, not held to a target: {d}")
    print(f"PASS: {key} measured over the driver test double: {v:.2f}x (reported)")
PY
