// cpu plugin — how long a stream's worker dozes while a producer pushes
// markers faster than it looks.
//
// Through a burst of windows the worker takes the markers a few lines
// behind the one being written, then waits before its next look
// (MpscQueue::pop_markers, WorkerStream::run). Pausing through that wait
// costs the worker's core all of it; a timed futex wait costs the thread
// 10-16 µs of CPU time whatever its length (measured on the CI's VMs), so
// a doze pays once it is longer than that, and the longer it is the less
// the worker costs a window. What bounds it:
//   - the ring: a doze must end before the producer finds the ring full
//     and grows the queue on its own path, so it lasts as long as the
//     producer, at the rate markers arrived since the last such look,
//     takes to fill half the ring, less what dozes have been overrunning
//     what they asked for (wake-up latency, timer slack), but never less
//     than kMinDozeNs once the ring is worth a doze at all (a producer
//     that then fills the ring grows it, once);
//   - the stamps: a window whose markers a doze separates reads the doze,
//     so no doze asks for more than kMaxDozeNs less its overrun (nor less
//     than kMinDozeNs: see on_pushing);
//   - the wakers: a doze cut short by one (a resolver waiting for these
//     markers, work, a fence) cost it the worker's wake-up, tens of µs on
//     a VM, so for kQuietAfterHurryNs afterwards the worker pauses
//     instead: a host that resolves or submits close behind its windows
//     pays that at most once a millisecond, and a worker nobody waits for
//     still dozes.
// Shorter than kMinDozeNs, or without a rate yet (the first look of a
// burst), the worker pauses.
//
// Worker thread only; plain arithmetic, so it is tested on its own.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lapse::cpu {

class DozePolicy {
public:
    static constexpr int64_t kMinDozeNs = 20'000;
    static constexpr int64_t kMaxDozeNs = 500'000;
    static constexpr uint64_t kRingShare = 2;  // a doze fills at most 1/kRingShare of the ring
    // A rate is taken from two looks at most this far apart; a later look
    // starts a new burst.
    static constexpr int64_t kRateWindowNs = 2'000'000;
    static constexpr int64_t kQuietAfterHurryNs = 1'000'000;

    // [worker] It found a producer still pushing at `now_ns`
    // (CLOCK_MONOTONIC), having taken `cells_taken` cells in all so far,
    // from a ring of `ring_cells`. Returns how long to doze (0: pause).
    int64_t on_pushing(int64_t now_ns, uint64_t cells_taken, uint64_t ring_cells) noexcept
    {
        const uint64_t cells = cells_taken - seen_cells_;
        const int64_t elapsed = now_ns - seen_ns_;
        seen_cells_ = cells_taken;
        seen_ns_ = now_ns;
        if (cells == 0 || elapsed <= 0 || elapsed > kRateWindowNs) return 0;
        if (now_ns - hurried_ns_ < kQuietAfterHurryNs) return 0;
        const double ns_per_cell = static_cast<double>(elapsed) / static_cast<double>(cells);
        const double fill_ns = static_cast<double>(ring_cells / kRingShare) * ns_per_cell;
        const int64_t fill_bounded = static_cast<int64_t>(std::min(fill_ns, static_cast<double>(kMaxDozeNs)));
        if (fill_bounded < kMinDozeNs) return 0;
        // What it asks for; the doze lasts that and its overrun. Never less
        // than kMinDozeNs: a worker that paused instead would never measure
        // its overrun again, and one overrun too long would leave it
        // pausing for the rest of its device's life.
        return std::max(fill_bounded - overrun_ns_, kMinDozeNs);
    }

    // [worker] A doze that asked for `asked_ns` from `from_ns` ended at
    // `now_ns`; `hurried`: a waker ended it.
    void on_woke(int64_t from_ns, int64_t asked_ns, int64_t now_ns, bool hurried) noexcept
    {
        if (hurried) {
            hurried_ns_ = now_ns;
            return;
        }
        // A running mean over about the last four dozes, never negative
        // (a doze that returned early, spuriously, teaches nothing).
        // At most kMaxDozeNs: a doze the scheduler kept off a CPU for
        // milliseconds says nothing about the timer's overrun.
        const int64_t overrun = std::clamp<int64_t>(now_ns - from_ns - asked_ns, 0, kMaxDozeNs);
        overrun_ns_ += (overrun - overrun_ns_) / 4;
    }

    int64_t overrun_ns() const noexcept { return overrun_ns_; }

private:
    uint64_t seen_cells_ = 0;  // cells_taken at the last look that found a producer pushing
    int64_t seen_ns_ = INT64_MIN / 2;
    int64_t overrun_ns_ = 0;
    int64_t hurried_ns_ = INT64_MIN / 2;
};

}  // namespace lapse::cpu
