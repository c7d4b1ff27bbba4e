#!/usr/bin/env python3
"""python_window_ns: what a lapse window costs a Python host.

Times `with dev.window("step", stream=0): pass` on the builtin CPU device
against an empty `with` block (a context manager whose __enter__ and
__exit__ do nothing) in the same run, interleaved in rounds, and prints the
median per-window difference -- the figure -- with both raw times, as one
JSON line (`--json FILE` writes it there too). Windows are resolved in bulk
between timed batches, untimed, so the backend stays in its steady state.

Usage: PYTHONPATH=build/python python3 core/python/bench/python_window.py [--quick] [--json FILE]
Target: python_window_ns <= 500.
"""
import argparse
import json
import statistics
import sys
import time

import lapse


class Empty:
    """The baseline: a `with` block that does nothing."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def time_empty(n):
    e = Empty()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        with e:
            pass
    return (time.perf_counter_ns() - t0) / n


def time_windows(dev, n, ds):
    window = dev.window
    t0 = time.perf_counter_ns()
    for _ in range(n):
        with window("step", stream=0, into=ds):
            pass
    elapsed = (time.perf_counter_ns() - t0) / n
    dev.resolve(ds)
    ds.clear()
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few rounds: proves it runs, not for decisions")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--json", help="also write the JSON line to this file")
    args = ap.parse_args()
    rounds = args.rounds or (3 if args.quick else 15)
    n = 2000 if args.quick else 20000

    with lapse.Runtime().open(lapse.Config.builtin()) as dev:
        ds = lapse.Durations()
        ds.reserve(n)
        time_windows(dev, n, ds)  # warm up
        time_empty(n)
        windows, empties, diffs = [], [], []
        for _ in range(rounds):
            e1 = time_empty(n)
            w = time_windows(dev, n, ds)
            e2 = time_empty(n)
            windows.append(w)
            empties.append((e1 + e2) / 2)
            diffs.append(w - (e1 + e2) / 2)
    figure = statistics.median(diffs)
    result = {
        "python_window_ns": round(figure, 1),
        "details": {
            "python_window_ns": {
                "subject": 'with dev.window("step", stream=0, into=durations): pass (builtin cpu)',
                "baseline": "an empty with block (a no-op context manager)",
                "window_ns": round(statistics.median(windows), 1),
                "empty_with_ns": round(statistics.median(empties), 1),
                "min": round(min(diffs), 1),
                "max": round(max(diffs), 1),
                "rounds": rounds,
                "windows_per_round": n,
                "target": "<= 500",
                "met": figure <= 500,
            }
        },
    }
    line = json.dumps(result)
    print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
